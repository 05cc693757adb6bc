/* The machine's floor for releasing one request at its own time.
 *
 * A bare loop that does nothing but what a precise open-loop generator must do for each request:
 * sleep until the request's time and wake up. Deadlines are absolute, on CLOCK_MONOTONIC, at
 * `rate` per second for `seconds` (deadline i = start + i / rate, so no error accumulates); each
 * is armed on a timerfd with TFD_TIMER_ABSTIME (timerfds take no timer slack) and waited for with
 * read(2). On each wake-up it records its lateness, now - deadline. A deadline already past fires
 * at once, as a generator behind schedule would send at once.
 *
 * It prints one JSON object: wake-ups, CPU (user + system, getrusage(2), the loop only) per
 * wake-up in microseconds, lateness p50/p99/max in nanoseconds, and context switches.
 * bench/loadgen.py compiles it with `cc -O2` and runs it pinned to the generator's CPU.
 *
 *     cc -O2 -o floor bench/floor.c && taskset -c 0 ./floor 20000 10
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static double cpu_us(const struct rusage *r) {
    return (r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1e6 + r->ru_utime.tv_usec + r->ru_stime.tv_usec;
}

static int by_value(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The nearest-rank percentile of sorted values: the smallest value with p % of them at or below it. */
static int64_t percentile(const int64_t *sorted, size_t n, size_t p) {
    size_t rank = (p * n + 99) / 100;
    return sorted[rank == 0 ? 0 : rank - 1];
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s RATE SECONDS\n", argv[0]);
        return 2;
    }
    double rate = atof(argv[1]), seconds = atof(argv[2]);
    size_t n = (size_t)(rate * seconds);
    if (rate <= 0 || n == 0) {
        fprintf(stderr, "floor: RATE and SECONDS must be positive\n");
        return 2;
    }
    int64_t *lateness = malloc(n * sizeof *lateness);
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (!lateness || fd < 0) {
        perror("floor");
        return 1;
    }
    memset(lateness, 0, n * sizeof *lateness); /* fault the pages in before the loop */

    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    int64_t start = now_ns() + 10000000; /* 10 ms from now */
    for (size_t i = 0; i < n; i++) {
        int64_t deadline = start + (int64_t)((double)i * 1e9 / rate);
        struct itimerspec due = {.it_value = {deadline / 1000000000, deadline % 1000000000}};
        uint64_t expirations;
        ssize_t got = -1;
        if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &due, NULL) == 0)
            do got = read(fd, &expirations, sizeof expirations); while (got < 0 && errno == EINTR);
        if (got < 0) {
            perror("floor");
            return 1;
        }
        lateness[i] = now_ns() - deadline;
    }
    getrusage(RUSAGE_SELF, &after);

    qsort(lateness, n, sizeof *lateness, by_value);
    printf("{\"rate\": %.0f, \"seconds\": %g, \"wakeups\": %zu, \"cpu_us_per_wakeup\": %.3f, "
           "\"lateness_ns\": {\"p50\": %lld, \"p99\": %lld, \"max\": %lld}, "
           "\"voluntary_switches\": %ld, \"involuntary_switches\": %ld}\n",
           rate, seconds, n, (cpu_us(&after) - cpu_us(&before)) / (double)n,
           (long long)percentile(lateness, n, 50), (long long)percentile(lateness, n, 99),
           (long long)lateness[n - 1], after.ru_nvcsw - before.ru_nvcsw,
           after.ru_nivcsw - before.ru_nivcsw);
    return 0;
}
