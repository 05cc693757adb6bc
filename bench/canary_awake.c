/* A canary that times work done awake, for comparison with `probe canary` (which times the
 * wake-up): every 100 ms it wakes, then times (CLOCK_THREAD_CPUTIME_ID) a fixed chunk of
 * arithmetic, random touches of 4 MiB and getppid(2) calls, its sleep not counted. It prints one
 * JSON line a chunk in `probe canary`'s format (one "exchange" a chunk), so that
 * scripts/canary_ref.py reads either:
 *
 *     cc -O2 -o /tmp/awake bench/canary_awake.c
 *     taskset -c 1 /tmp/awake 200 > /tmp/awake.jsonl &
 *     KEEP=/tmp/gate ROUNDS=10 scripts/bench-gate-auto.sh 1 identical
 *     python3 scripts/canary_ref.py /tmp/gate/identical-1.json /tmp/gate/runs.db /tmp/awake.jsonl 0 4000000000 4s
 *
 * On the project's VM (2026-12-08) the Go server's per-round spread read 16.4 % as read and
 * 13.5 % divided by this canary, against 3.4–5.3 % divided by `probe canary`'s in three other
 * sittings (docs/benchmarks/gate.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 60;
  size_t size = 1 << 22;
  char *memory = calloc(size, 1);
  if (seconds <= 0 || memory == NULL) {
    fprintf(stderr, "usage: canary_awake SECONDS (a positive whole number)\n");
    return 2;
  }
  unsigned x = 1;
  double start = now(CLOCK_MONOTONIC);
  while (now(CLOCK_MONOTONIC) - start < seconds) {
    double before = now(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < 500000; i++) x = x * 1103515245 + 12345;
    for (int i = 0; i < 100000; i++) {
      x = x * 1103515245 + 12345;
      memory[(x >> 4) % size] += 1;
    }
    for (int i = 0; i < 5000; i++) syscall(SYS_getppid);
    double after = now(CLOCK_THREAD_CPUTIME_ID);
    printf("{\"wall_ns\": %.0f, \"exchanges\": 1, \"cpu_ns_per_exchange\": %.0f}\n",
           now(CLOCK_REALTIME) * 1e9, (after - before) * 1e9);
    fflush(stdout);
    usleep(100000);
  }
  return x == 0;
}
