/* omp-scaling-check: how many CPUs' worth of work an OpenMP team really gets
 * on this machine right now.  The device runs of NBODY6 behaved as if their
 * threads shared one or a few CPUs; this separates "the machine (or its
 * host) gives less than it shows" from "something in the NBODY6 process".
 *
 * Every thread runs the same fixed arithmetic loop; the program prints the
 * wall time with 1 thread and with T threads (argument, default all) and the
 * speed-up, which is T where every thread has a CPU of its own; then the
 * cores' clock, alone and with every thread busy, as cycles per second of
 * wall time, so that time the host takes from a thread lowers it too.  The
 * lent machines' cores gave 2.3-2.9 GHz alone (the development machine's
 * 4.1), and 1.7-2.8 GHz each with all 16 busy, varying within one call.
 *   gcc -O2 -fopenmp omp-scaling-check.c -o omp-scaling-check && ./omp-scaling-check 16
 */
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The monotonic clock, not omp_get_wtime: LLVM's libomp (which can stand in
 * for libgomp under LD_PRELOAD) ticks it in whole microseconds, too coarse
 * for the team costs below. */
static double wall_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double busy_loop(long n)
{
    double x = 1.0;
    for (long k = 0; k < n; k++)
        x = x * 1.0000001 + 1e-9; /* a dependent chain: no vectorisation, no memory */
    return x;
}

static double team_time(int threads, long n, volatile double *sink)
{
    double t0 = wall_clock(), s = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : s)
    s += busy_loop(n);
    *sink += s;
    return wall_clock() - t0;
}

/* The clock of the core running the caller, in GHz, from a chain of dependent
 * integer adds: one per cycle on every x86-64 core, whatever its turbo
 * state, so no model-specific register or frequency file is needed.  Time
 * the thread spends preempted counts as cycles it did not get. */
static double core_ghz(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    const long iters = 50000000L;
    long x = 0;
    double t0 = wall_clock();
    for (long k = 0; k < iters; k++)
        __asm__ volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
                         "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
                         : "+r"(x)
                         : "r"(k));
    return 8.0 * (double)iters / (wall_clock() - t0) / 1e9;
#else
    return 0.0; /* not measured on this architecture */
#endif
}

/* Integer adds per wall nanosecond from eight independent chains: as many
 * per cycle as the core has ALUs (4-6 on current x86-64), where the chain
 * above gets one.  A thread whose hardware sibling (SMT) is busy gets about
 * half as many, at the same clock: with every thread busy, this falls by
 * more than the clock where the lent vCPUs share cores. */
static double core_adds_per_ns(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    const long iters = 25000000L;
    long a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0;
    double t0 = wall_clock();
    for (long k = 0; k < iters; k++)
        __asm__ volatile("add %8, %0\n\tadd %8, %1\n\tadd %8, %2\n\tadd %8, %3\n\t"
                         "add %8, %4\n\tadd %8, %5\n\tadd %8, %6\n\tadd %8, %7\n\t"
                         "add %8, %0\n\tadd %8, %1\n\tadd %8, %2\n\tadd %8, %3\n\t"
                         "add %8, %4\n\tadd %8, %5\n\tadd %8, %6\n\tadd %8, %7"
                         : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f), "+r"(g), "+r"(h)
                         : "r"(k));
    return 16.0 * (double)iters / (wall_clock() - t0) / 1e9;
#else
    return 0.0;
#endif
}

/* Mean delay, over reps regions, from opening a parallel region to the
 * start of its last thread, when the master has worked alone for gap_s
 * before each (NBODY6's serial Fortran between two parallel regions).
 * Idle libgomp threads spin for a while and then sleep; waking a sleeping
 * thread on a virtual machine can cost far more than on bare metal. */
static double wake_delay(double gap_s, int reps)
{
    double sum = 0.0;
    for (int r = 0; r < reps; r++) {
        double until = wall_clock() + gap_s, lag = 0.0;
        while (wall_clock() < until)
            ;
        double t0 = wall_clock();
#pragma omp parallel reduction(max : lag)
        lag = wall_clock() - t0;
        sum += lag;
    }
    return sum / reps;
}

/* Mean wall time, on the master, of a parallel loop over `items` trivial
 * iterations (open, static split, join), after gap_s of serial work each
 * time: what a small block's parallel loop costs against the same loop on
 * one thread, which sets the size below which NBODY6's loops should run in
 * serial. */
static double region_cost(int items, double gap_s, int reps, volatile double *sink)
{
    double sum = 0.0;
    for (int r = 0; r < reps; r++) {
        double until = wall_clock() + gap_s;
        while (wall_clock() < until)
            ;
        double t0 = wall_clock(), s = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : s)
        for (int k = 0; k < items; k++)
            s += k;
        sum += wall_clock() - t0;
        *sink += s;
    }
    return sum / reps;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : omp_get_num_procs();
    long n = 200000000L;
    volatile double sink = 0.0; /* keeps the loops from being optimised away */
    if (threads < 1) {
        fprintf(stderr, "omp-scaling-check: threads must be >= 1, got '%s'\n", argv[1]);
        return 2;
    }
    team_time(threads, n / 20, &sink); /* start the team */
    double t1 = team_time(1, n, &sink);
    double tn = team_time(threads, n, &sink);
    printf("omp-scaling-check: %d CPUs online; same work per thread: 1 thread %.3f s, %d threads %.3f s;"
           " %.1f CPUs' worth (ideal %d)\n",
           omp_get_num_procs(), t1, threads, tn, threads * t1 / tn, threads);
    double alone = core_ghz(), least = 1e30, most = 0.0, sum = 0.0;
#pragma omp parallel num_threads(threads) reduction(min : least) reduction(max : most) reduction(+ : sum)
    {
        double ghz = core_ghz();
        least = most = sum = ghz;
    }
    if (alone > 0.0)
        printf("omp-scaling-check: core clock (cycles per wall second) 1 thread %.2f GHz; %d threads %.2f-%.2f GHz "
               "(mean %.2f)\n",
               alone, threads, least, most, sum / threads);
    double width1 = core_adds_per_ns(), wsum = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : wsum)
    wsum = core_adds_per_ns();
    if (width1 > 0.0 && alone > 0.0)
        printf("omp-scaling-check: independent adds per cycle 1 thread %.2f; %d threads %.2f each at their mean "
               "clock (about half of 1 thread's where two vCPUs share a core)\n",
               width1 / alone, threads, (wsum / threads) / (sum / threads));
    if (argc > 2) { /* second argument: also a team's start-up delay and a small loop's cost */
        omp_set_num_threads(threads);
        printf("omp-scaling-check: last of %d threads starts, after a serial gap of", threads);
        const double gaps[] = {0.0, 1e-4, 1e-3, 1e-2, 5e-2};
        for (int k = 0; k < 5; k++)
            printf(" %g ms: %.1f us%s", 1e3 * gaps[k], 1e6 * wake_delay(gaps[k], k < 3 ? 200 : 20),
                   k < 4 ? ";" : "\n");
        printf("omp-scaling-check: a parallel loop of n trivial iterations on %d threads, after a serial gap of"
               " 0.02 ms, costs the master",
               threads);
        const int items[] = {1, 16, 256};
        for (int k = 0; k < 3; k++)
            printf(" n = %d: %.2f us%s", items[k], 1e6 * region_cost(items[k], 2e-5, 5000, &sink),
                   k < 2 ? ";" : "\n");
    }
    return 0;
}
