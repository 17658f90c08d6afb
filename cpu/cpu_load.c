/*
 * cpu_load.c: how many threads a CPU call can use right now.
 *
 * A call that forks K threads is only as fast as its slowest thread: when
 * another process keeps a core busy, one of our threads shares that core,
 * every barrier waits for it to be scheduled again, and OpenMP's spin-waiting
 * burns the time slices it would have had. A 2-thread call then runs several
 * times slower than a 1-thread call. The OpenMP wait policy is read once at
 * start-up from the environment, which a library cannot set for its user, so
 * instead every parallel call asks here how many cores are free and forks no
 * more threads than that.
 *
 * Free cores = the cores this process may run on minus the CPU time other
 * processes used over a recent window: the busy time of those cores in
 * /proc/stat minus this process's own CPU time (which includes our own
 * spinning workers, so they do not count as load). The window is refreshed
 * at most every RL_WINDOW seconds, so the file is read a few times a second
 * at most, whatever the call rate. When the last sample is older than
 * RL_STALE, the mean over the whole gap since it stands in until a window
 * has passed; when it is older than RL_LONG, or there is none, the count
 * of runnable threads in /proc/loadavg less this process's own (rl_runnable_
 * others) does. The first window then replaces the stand-in: an average
 * with it would keep a wrong guess for several windows, a benchmark's first
 * tenths of a second or a whole short program (a 2-thread sort ran on one
 * thread for its first reps when the reader of its output was runnable at
 * the first call). Without /proc, calls keep the requested thread count.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"

#define RL_WINDOW 0.1 /* seconds between samples */
#define RL_STALE 1.0  /* a sample older than this is no base for a window */
#define RL_READINGS 4 /* readings of the runnable count when there is no window */
#define RL_GAP_NS 250000L /* and the time between them */
#define RL_LONG 30.0  /* an older sample is no base for an estimate at all */

static pthread_mutex_t rl_lock = PTHREAD_MUTEX_INITIALIZER;
static int rl_valid;              /* a previous sample exists */
static double rl_wall, rl_busy, rl_own; /* that sample: wall, busy and own seconds */
static double rl_others;          /* estimate: cores busy with other processes */
static int rl_guess;              /* rl_others is a count of runnable threads, not a window */
/* What calls read without the lock: the estimate in thousandths of a core,
 * and whether /proc proved unusable (then nobody looks again). */
static atomic_int rl_others_milli, rl_broken;

static double rl_seconds(clockid_t id) {
  struct timespec ts;
  if (clock_gettime(id, &ts) != 0) return 0.0;
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Busy seconds of the CPUs in set (all time but idle and iowait), summed from
 * the per-CPU lines of /proc/stat. Returns -1 when unreadable. */
static double rl_busy_seconds(const cpu_set_t *set) {
  char line[512];
  double ticks = 0.0, hz = (double)sysconf(_SC_CLK_TCK);
  FILE *f = fopen("/proc/stat", "r");
  int seen = 0;
  if (!f) return -1.0;
  if (hz <= 0) hz = 100.0;
  while (fgets(line, sizeof line, f)) {
    unsigned long long user, nice, sys, idle, iow, irq, sirq, steal;
    int cpu;
    if (strncmp(line, "cpu", 3) != 0) break; /* the cpu lines come first */
    if (line[3] == ' ') continue;           /* the aggregate line */
    if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &user, &nice, &sys, &idle, &iow, &irq,
               &sirq, &steal) != 9)
      continue;
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, set)) continue;
    ticks += (double)(user + nice + sys + irq + sirq + steal);
    seen = 1;
  }
  fclose(f);
  return seen ? ticks / hz : -1.0;
}

/* Runnable threads of this process (the caller at least): state R in
 * /proc/self/task/TID/stat. At least 1, also when unreadable. */
static int rl_own_runnable(void) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  int n = 0;
  if (!d) return 1;
  while ((e = readdir(d)) != NULL) {
    char path[64], line[512], *close;
    FILE *f;
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/self/task/%.20s/stat", e->d_name);
    if (!(f = fopen(path, "r"))) continue;
    /* "tid (comm) S ...": the comm may hold spaces and parentheses. */
    if (fgets(line, sizeof line, f) && (close = strrchr(line, ')')) != NULL && close[1] == ' ' && close[2] == 'R') n++;
    fclose(f);
  }
  closedir(d);
  return n < 1 ? 1 : n;
}

/* Runnable threads of other processes, from /proc/loadavg's fourth field
 * ("running/total", every runnable thread of the system) less this
 * process's own (its workers still spinning after the previous parallel
 * call are no load). One reading is a snapshot that a passing thread
 * inflates (the reader of our own output, woken by our last write; a
 * kernel worker), so when it is not 0 a few more follow RL_GAP_NS apart
 * and the least counts: a process that keeps a core busy is runnable in
 * every one. So the wait, RL_READINGS - 1 gaps at most, falls only on a
 * first call that sees other threads. Returns -1 when unreadable. */
static double rl_runnable_others(void) {
  int round, least = -1;
  for (round = 0; round < RL_READINGS && least != 0; round++) {
    double l1, l5, l15;
    int running = 0, total = 0, own, ok, others;
    FILE *f;
    if (round > 0) {
      struct timespec gap = {0, RL_GAP_NS};
      nanosleep(&gap, NULL);
    }
    if (!(f = fopen("/proc/loadavg", "r"))) return -1.0;
    ok = fscanf(f, "%lf %lf %lf %d/%d", &l1, &l5, &l15, &running, &total) == 5;
    fclose(f);
    if (!ok) return -1.0;
    own = rl_own_runnable();
    others = running > own ? running - own : 0;
    if (least < 0 || others < least) least = others;
  }
  return (double)least;
}

int tdm__cpu_threads_avail(int want) {
  cpu_set_t set;
  int cores, avail;
  double others, free_cores;
  if (want <= 1 || atomic_load(&rl_broken)) return want;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return want;
  cores = CPU_COUNT(&set);
  if (cores < 1) return want;

  if (pthread_mutex_trylock(&rl_lock) == 0) {
    double now = rl_seconds(CLOCK_MONOTONIC), dt = now - rl_wall;
    if (!rl_valid || dt >= RL_WINDOW) {
      double busy = rl_busy_seconds(&set), own = rl_seconds(CLOCK_PROCESS_CPUTIME_ID);
      if (busy < 0) {
        atomic_store(&rl_broken, 1);
      } else if (rl_valid && dt < RL_LONG) {
        double sample = ((busy - rl_busy) - (own - rl_own)) / dt;
        if (sample < 0) sample = 0;
        /* Ticks are coarse: a window averages with the previous one, when
         * that was a window too; a stand-in (a count of runnable threads,
         * or the mean over a long gap, which this sample is when dt is
         * past RL_STALE) is replaced by the first window. */
        rl_others = dt >= RL_STALE || rl_guess ? sample : 0.5 * rl_others + 0.5 * sample;
        rl_guess = dt >= RL_STALE;
      } else {
        double r = rl_runnable_others();
        rl_others = r >= 0 ? r : 0.0;
        rl_guess = 1;
      }
      rl_wall = now;
      rl_busy = busy;
      rl_own = own;
      rl_valid = !atomic_load(&rl_broken);
    }
    atomic_store(&rl_others_milli, (int)(rl_others * 1000.0));
    pthread_mutex_unlock(&rl_lock);
  }
  /* (When another thread holds the lock, its last estimate serves.) */
  if (atomic_load(&rl_broken)) return want;
  others = 0.001 * (double)atomic_load(&rl_others_milli);
  /* A core counts as free when at most a quarter of it is taken. */
  free_cores = (double)cores - others + 0.25;
  avail = free_cores < 1.0 ? 1 : (int)free_cores;
  return avail < want ? avail : want;
}
