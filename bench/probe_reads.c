/* The machine's floor for what the probe reads, from a bare C loop.
 *
 * probe_reads PID INTERVAL_MS ROUNDS: one probe tick between full reads: the same four reads the
 * probe makes (fstat of /proc/PID/task, pread of statm, the process CPU clock, fstat of
 * /proc/PID/fd), in the same order, sleeping `interval_ms` between rounds as the probe does, so
 * that each round starts from the caches a real tick finds. Prints one JSON object: the median
 * wall time of each read and the median thread CPU of a round, in microseconds.
 *
 * probe_reads --schedule PID INTERVAL_MS SECONDS: the probe's whole schedule on one process, its
 * reads and nothing else, for SECONDS: a tick every INTERVAL_MS at absolute times (those four
 * reads; every 100 ms a full read instead: stat, io, statm, the CPU clock, fstat of fd, the main
 * thread's children, the host's stat, pressure/cpu, meminfo, loadavg and net/sockstat, the CPU
 * controller of the process's cgroup (v2: cpu.stat, cpu.max, cpu.pressure; v1: cpu.stat,
 * cpu.cfs_quota_us, cpu.cfs_period_us), and its own statm and CPU clock); every second the slow
 * figures (status, every thread's status, schedstat and stat, limits, a readlink of every FD, a
 * netlink sock_diag dump of TCP sockets, IPv4 and IPv6); every five seconds the scan of every
 * process's parent (/proc/N/stat). Prints the CPU each kind of read took, in seconds, as JSON;
 * its whole CPU, wake-ups included, is what wait4 measures from outside.
 *
 * bench/probe.py compiles it with `cc -O2` and runs it pinned to the probe's CPU.
 *
 *     cc -O2 -o probe_reads bench/probe_reads.c && taskset -c 0 ./probe_reads PID 10 300
 *     taskset -c 0 ./probe_reads --schedule PID 10 20
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

static char big[1 << 16];

static void pread_all(int fd) {
    if (fd >= 0) pread(fd, big, sizeof big, 0);
}

static void read_file_at(int dir, const char *name) {
    int fd = openat(dir, name, O_RDONLY);
    if (fd >= 0) {
        read(fd, big, sizeof big);
        close(fd);
    }
}

/* Every thread's status, schedstat and stat, read whole, in that order, as the probe sums their
 * context switches, run delay (schedstat field 2) and states (stat field 3)
 * (Watched::peak_rss_and_threads, crates/probe/src/collect/process.rs); like the probe's
 * ThreadFiles, each file is kept open from one pass to the next and read again from its start,
 * opened again by name if that read fails, and closed when its thread is gone. */
#define MAX_THREADS 4096
static const char *const thread_file_names[3] = {"status", "schedstat", "stat"};
static struct {
    long tid;
    int fd[3];
    int seen;
} kept[MAX_THREADS];
static int kept_n;

static void thread_files(int proc_dir) {
    int task = openat(proc_dir, "task", O_RDONLY | O_DIRECTORY);
    DIR *d = task < 0 ? NULL : fdopendir(task);
    if (!d) return;
    char name[300];
    for (int i = 0; i < kept_n; i++) kept[i].seen = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        long tid = strtol(e->d_name, NULL, 10);
        int at = 0;
        while (at < kept_n && kept[at].tid != tid) at++;
        if (at == kept_n) {
            if (kept_n == MAX_THREADS) continue;
            kept[kept_n].tid = tid;
            for (int f = 0; f < 3; f++) kept[kept_n].fd[f] = -1;
            kept_n++;
        }
        kept[at].seen = 1;
        for (int f = 0; f < 3; f++) {
            int *fd = &kept[at].fd[f];
            if (*fd >= 0 && pread(*fd, big, sizeof big, 0) >= 0) continue;
            if (*fd >= 0) close(*fd);
            snprintf(name, sizeof name, "%s/%s", e->d_name, thread_file_names[f]);
            *fd = openat(task, name, O_RDONLY);
            if (*fd >= 0) pread(*fd, big, sizeof big, 0);
        }
    }
    closedir(d);
    for (int i = 0; i < kept_n;) {
        if (kept[i].seen) {
            i++;
            continue;
        }
        for (int f = 0; f < 3; f++)
            if (kept[i].fd[f] >= 0) close(kept[i].fd[f]);
        kept[i] = kept[--kept_n];
    }
}

/* The directory of the cgroup that holds a process's CPU controller, from the text of its
 * /proc/PID/cgroup, as the probe finds it (cpu_cgroup, crates/probe/src/collect/cgroup.rs): a
 * v1 `cpu` controller where there is one (under cpu,cpuacct or cpu), else v2's `0::` line, each
 * only if its cpu.stat exists. Returns 1 for v1, 0 for v2, -1 for none. */
static int cpu_cgroup(const char *text, char *dir, size_t size) {
    static const char *const v1_dirs[] = {"cpu,cpuacct", "cpu"};
    char file[PATH_MAX + 16];
    struct stat st;
    for (const char *line = text; *line;) {
        const char *end = strchrnul(line, '\n');
        const char *c1 = memchr(line, ':', end - line);
        const char *c2 = c1 ? memchr(c1 + 1, ':', end - (c1 + 1)) : NULL;
        for (const char *c = c2 ? c1 + 1 : end; c2 && c < c2;) {
            const char *stop = memchr(c, ',', c2 - c);
            if (!stop) stop = c2;
            if (stop - c == 3 && memcmp(c, "cpu", 3) == 0) {
                const char *rel = c2 + 1;
                while (rel < end && *rel == '/') rel++;
                for (int i = 0; i < 2; i++) {
                    snprintf(dir, size, "/sys/fs/cgroup/%s/%.*s", v1_dirs[i], (int)(end - rel),
                             rel);
                    snprintf(file, sizeof file, "%s/cpu.stat", dir);
                    if (stat(file, &st) == 0) return 1;
                }
                break;
            }
            c = stop + 1;
        }
        line = *end ? end + 1 : end;
    }
    for (const char *line = text; *line;) {
        const char *end = strchrnul(line, '\n');
        if (strncmp(line, "0::", 3) == 0) {
            const char *rel = line + 3;
            while (rel < end && *rel == '/') rel++;
            snprintf(dir, size, "/sys/fs/cgroup/%.*s", (int)(end - rel), rel);
            snprintf(file, sizeof file, "%s/cpu.stat", dir);
            return stat(file, &st) == 0 ? 0 : -1;
        }
        line = *end ? end + 1 : end;
    }
    return -1;
}

/* The files of a process's cgroup CPU controller, opened once and kept open to be pread at each
 * full tick in this order, as the probe's CgroupFiles::open and read: cpu.stat; then cpu.max
 * (v2) or cpu.cfs_quota_us and cpu.cfs_period_us (v1, both or neither); then cpu.pressure (v2).
 * -1 where a file is not there (and all -1 without cpu.stat). */
static void cgroup_open(int proc_dir, int cg[4]) {
    char text[8192], dir[PATH_MAX], file[PATH_MAX + 32];
    cg[0] = cg[1] = cg[2] = cg[3] = -1;
    int fd = openat(proc_dir, "cgroup", O_RDONLY);
    long n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
    if (fd >= 0) close(fd);
    if (n <= 0) return;
    text[n] = 0;
    int v1 = cpu_cgroup(text, dir, sizeof dir);
    if (v1 < 0) return;
    snprintf(file, sizeof file, "%s/cpu.stat", dir);
    if ((cg[0] = open(file, O_RDONLY)) < 0) return;
    if (v1) {
        snprintf(file, sizeof file, "%s/cpu.cfs_quota_us", dir);
        cg[1] = open(file, O_RDONLY);
        snprintf(file, sizeof file, "%s/cpu.cfs_period_us", dir);
        cg[2] = open(file, O_RDONLY);
        if (cg[1] < 0 || cg[2] < 0) {
            if (cg[1] >= 0) close(cg[1]);
            if (cg[2] >= 0) close(cg[2]);
            cg[1] = cg[2] = -1;
        }
    } else {
        snprintf(file, sizeof file, "%s/cpu.max", dir);
        cg[1] = open(file, O_RDONLY);
        snprintf(file, sizeof file, "%s/cpu.pressure", dir);
        cg[3] = open(file, O_RDONLY);
    }
}

/* A readlink of every FD, as the probe classifies them. */
static void fd_links(int proc_dir) {
    int fds = openat(proc_dir, "fd", O_RDONLY | O_DIRECTORY);
    DIR *d = fds < 0 ? NULL : fdopendir(fds);
    if (!d) return;
    char link[256];
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        readlinkat(fds, e->d_name, link, sizeof link);
    }
    closedir(d);
}

/* A sock_diag dump of the TCP sockets a process can hold, in one family. */
static void tcp_dump(int nl, int family) {
    struct {
        struct nlmsghdr h;
        struct inet_diag_req_v2 r;
    } req = {
        .h = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY,
              .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
        .r = {.sdiag_family = family, .sdiag_protocol = IPPROTO_TCP,
              .idiag_states = 0xfff & ~((1 << 6) | (1 << 3))},
    };
    if (send(nl, &req, sizeof req, 0) < 0) return;
    for (;;) {
        long n = recv(nl, big, sizeof big, 0);
        if (n <= 0) return;
        for (struct nlmsghdr *h = (struct nlmsghdr *)big; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n))
            if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) return;
    }
}

/* Every process's stat, as the probe scans for members of the tree. */
static void parents_scan(void) {
    DIR *d = opendir("/proc");
    if (!d) return;
    char name[300];
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        snprintf(name, sizeof name, "%s/stat", e->d_name);
        read_file_at(dirfd(d), name);
    }
    closedir(d);
}

static int schedule(int pid, long interval_ns, int seconds) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d", pid);
    int dir = open(path, O_RDONLY | O_DIRECTORY);
    if (dir < 0) {
        fprintf(stderr, "probe_reads: cannot open %s (is PID %d running?)\n", path, pid);
        return 1;
    }
    int statm = openat(dir, "statm", O_RDONLY), stat = openat(dir, "stat", O_RDONLY);
    int io = openat(dir, "io", O_RDONLY), fds = openat(dir, "fd", O_PATH | O_DIRECTORY);
    int task = openat(dir, "task", O_PATH | O_DIRECTORY);
    snprintf(path, sizeof path, "task/%d/children", pid);
    int children = openat(dir, path, O_RDONLY);
    /* The host's files in the order HostFiles::sample reads them (crates/probe/src/collect/
     * host.rs): stat (steal is a column of the same read), pressure/cpu (-1 without PSI), meminfo,
     * loadavg, net/sockstat. */
    int host[5] = {open("/proc/stat", O_RDONLY), open("/proc/pressure/cpu", O_RDONLY),
                   open("/proc/meminfo", O_RDONLY), open("/proc/loadavg", O_RDONLY),
                   open("/proc/net/sockstat", O_RDONLY)};
    int cgroup[4];
    cgroup_open(dir, cgroup);
    int own_statm = open("/proc/self/statm", O_RDONLY);
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    clockid_t cpu_clock = ((~(clockid_t)pid) << 3) | 2;
    struct sigevent notify = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGURG};
    struct itimerspec far = {.it_value = {100L * 365 * 86400, 0}};
    timer_t timer;
    signal(SIGURG, SIG_IGN);
    if (timer_create(cpu_clock, &notify, &timer) != 0 || timer_settime(timer, 0, &far, NULL) != 0)
        return 1;
    struct stat st;
    struct timespec ts;
    long start = clock_ns(CLOCK_MONOTONIC), end = start + seconds * 1000000000L;
    long next_full = 0, next_slow = 0, next_scan = 0;
    long ticks_ns = 0, slow_ns = 0, scan_ns = 0, rounds = 0;
    for (long due = start; due < end; due += interval_ns) {
        struct timespec at = {due / 1000000000L, due % 1000000000L};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        long now = clock_ns(CLOCK_MONOTONIC), cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        if (now >= next_full) {
            next_full = now + 100000000L - interval_ns / 2;
            pread_all(stat);
            clock_gettime(cpu_clock, &ts);
            pread_all(io);
            pread_all(statm);
            fstat(fds, &st);
            pread_all(children);
            for (int i = 0; i < 5; i++) pread_all(host[i]);
            /* The target's cgroup CPU controller, after the host's as the sampler reads them
             * (read_cgroup in crates/probe/src/sampler.rs, CgroupFiles::read). */
            for (int i = 0; i < 4; i++) pread_all(cgroup[i]);
            pread_all(own_statm);
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        } else {
            fstat(task, &st);
            pread_all(statm);
            clock_gettime(cpu_clock, &ts);
            fstat(fds, &st);
        }
        long cpu1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        ticks_ns += cpu1 - cpu0;
        rounds++;
        if (now >= next_slow) {
            next_slow = now + 1000000000L;
            /* status: VmHWM and Cpus_allowed_list from the one read (peak_rss_and_threads). */
            read_file_at(dir, "status");
            thread_files(dir);
            read_file_at(dir, "limits");
            fd_links(dir);
            tcp_dump(nl, AF_INET);
            tcp_dump(nl, AF_INET6);
            long cpu2 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
            slow_ns += cpu2 - cpu1;
            cpu1 = cpu2;
        }
        if (now >= next_scan) {
            next_scan = now + 5000000000L;
            parents_scan();
            scan_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu1;
        }
    }
    printf("{\"rounds\": %ld, \"ticks_s\": %.4f, \"slow_s\": %.4f, \"scan_s\": %.4f}\n", rounds,
           ticks_ns / 1e9, slow_ns / 1e9, scan_ns / 1e9);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "--schedule") == 0) {
        int pid = atoi(argv[2]), seconds = atoi(argv[4]);
        long interval_ns = atol(argv[3]) * 1000000L;
        if (seconds < 1 || seconds > 3600 || interval_ns <= 0) {
            fprintf(stderr, "probe_reads: SECONDS must be 1 to 3600 and INTERVAL_MS positive\n");
            return 2;
        }
        return schedule(pid, interval_ns, seconds);
    }
    if (argc != 4) {
        fprintf(stderr, "usage: probe_reads PID INTERVAL_MS ROUNDS | --schedule PID INTERVAL_MS SECONDS\n");
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
