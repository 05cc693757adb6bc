/* The machine's floor for one probe tick between full reads: the same four reads the probe makes
 * (fstat of /proc/PID/task, pread of statm, the process CPU clock, fstat of /proc/PID/fd), in the
 * same order, from a bare C loop that sleeps `interval_ms` between rounds as the probe does, so
 * that each round starts from the caches a real tick finds. Prints one JSON object: the median
 * wall time of each read and the median thread CPU of a round, in microseconds.
 * bench/probe.py compiles it with `cc -O2` and runs it pinned to the probe's CPU.
 *
 *     cc -O2 -o probe_reads bench/probe_reads.c && taskset -c 0 ./probe_reads PID 10 300
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long clock_ns(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static double median_us(long *v, int n) {
    qsort(v, n, sizeof *v, by_value);
    return v[n / 2] / 1e3;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: probe_reads PID INTERVAL_MS ROUNDS\n");
        return 2;
    }
    int pid = atoi(argv[1]), rounds = atoi(argv[3]);
    long interval_ns = atol(argv[2]) * 1000000L;
    if (rounds < 1 || rounds > 100000 || interval_ns <= 0) {
        fprintf(stderr, "probe_reads: ROUNDS must be 1 to 100000 and INTERVAL_MS positive\n");
        return 2;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d", pid);
    int dir = open(path, O_RDONLY | O_DIRECTORY);
    int statm = dir < 0 ? -1 : openat(dir, "statm", O_RDONLY);
    int fds = dir < 0 ? -1 : openat(dir, "fd", O_PATH | O_DIRECTORY);
    int task = dir < 0 ? -1 : openat(dir, "task", O_PATH | O_DIRECTORY);
    if (statm < 0 || fds < 0 || task < 0) {
        fprintf(stderr, "probe_reads: cannot open %s (is PID %d running?)\n", path, pid);
        return 1;
    }
    /* The process CPU clock of PID: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED). */
    clockid_t cpu_clock = ((~(clockid_t)pid) << 3) | 2;
    /* As the probe does for a process with 16 threads or more: a timer on that clock that will
     * not fire, so that the kernel keeps the process's total and a read does not walk every
     * thread (crates/probe/src/collect.rs, CpuTotal). */
    struct sigevent notify = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGURG};
    struct itimerspec far = {.it_value = {100L * 365 * 86400, 0}};
    timer_t timer;
    if (timer_create(cpu_clock, &notify, &timer) != 0 || timer_settime(timer, 0, &far, NULL) != 0) {
        fprintf(stderr, "probe_reads: cannot arm a timer on the CPU clock of PID %d\n", pid);
        return 1;
    }
    long *t = calloc((size_t)rounds * 5, sizeof *t);
    if (!t) return 1;
    char buf[256];
    struct stat st;
    struct timespec ts, nap = {interval_ns / 1000000000L, interval_ns % 1000000000L};
    for (int i = 0; i < rounds; i++) {
        nanosleep(&nap, NULL);
        long cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), a = clock_ns(CLOCK_MONOTONIC), b;
        fstat(task, &st);
        b = clock_ns(CLOCK_MONOTONIC), t[i] = b - a, a = b;
        if (pread(statm, buf, sizeof buf, 0) < 0) return 1;
        b = clock_ns(CLOCK_MONOTONIC), t[rounds + i] = b - a, a = b;
        if (clock_gettime(cpu_clock, &ts) != 0) return 1;
        b = clock_ns(CLOCK_MONOTONIC), t[2 * rounds + i] = b - a, a = b;
        fstat(fds, &st);
        b = clock_ns(CLOCK_MONOTONIC), t[3 * rounds + i] = b - a;
        t[4 * rounds + i] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    }
    printf("{\"fstat_task_us\": %.1f, \"statm_us\": %.1f, \"cpu_clock_us\": %.1f, "
           "\"fstat_fd_us\": %.1f, \"round_cpu_us\": %.1f}\n",
           median_us(t, rounds), median_us(t + rounds, rounds), median_us(t + 2 * rounds, rounds),
           median_us(t + 3 * rounds, rounds), median_us(t + 4 * rounds, rounds));
    free(t);
    return 0;
}
