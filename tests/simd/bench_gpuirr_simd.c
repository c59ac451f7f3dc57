/* bench_gpuirr_simd.c -- speed of the GPUIRR kernels: FIRR_VEC (gpuirr_force,
 * which predicts each i and member as it sums) in neighbour interactions per
 * second, per SIMD level and OpenMP thread count.
 *
 *   bench_gpuirr_simd [-q] [-s] [-n N] [-l level] [threads ...]
 *                                        (default: every level; threads 1 and all)
 *
 * FIRR_VEC: N = 64k, 256k, 1M particles (-q: 64k only), every i forced, list
 * lengths uniform in 50..130 (mean 90, NBODY6's typical <NB>), members drawn
 * at random from all N (the worst case for the caches).  Every level runs at
 * N = 64k (or -n N); the larger N, and N = 8k (records in cache: the
 * arithmetic alone), run the best level only.  Flops are counted in the
 * 60-flop convention of the original NBODY6 libraries.  Each figure is the
 * best of repeated calls over at least 0.3 s (after one warm-up call).
 * -s: the particles forced in a shuffled order (as NBODY6 passes its block
 * of actives) instead of 1..N, so that no hardware prefetcher finds the
 * lists and own records. */
#include "simd_testutil.h"
#include "gpuirr.h"

enum { LMAX = 131, LIST_MIN = 50, LIST_MAX = 130 };

static gpuirr *setup(int level, int n, int with_lists)
{
    gpuirr *g;
    setenv("NB6ACCEL_SIMD", level_name[level], 1);
    if (gpuirr_open(&g, n, LMAX) != GPUIRR_OK) {
        printf("gpuirr_open: %s\n", gpuirr_last_error());
        exit(1);
    }
    int *members = malloc(sizeof(int) * LMAX);
    for (int s = 1; s <= n; s++) {
        double x[3], v[3], f[3], fd[3];
        for (int k = 0; k < 3; k++) {
            x[k] = rng_uniform();
            v[k] = rng_normal();
            f[k] = rng_normal();
            fd[k] = rng_normal();
        }
        gpuirr_set_particle(g, s, x, v, f, fd, 1.0 / n, 0.0);
        if (!with_lists)
            continue;
        int len = LIST_MIN + rng_int(LIST_MAX - LIST_MIN + 1);
        for (int e = 0; e < len; e++) {
            int j;
            do
                j = 1 + rng_int(n);
            while (j == s);
            members[e] = j;
        }
        gpuirr_set_list(g, s, len, members);
    }
    free(members);
    return g;
}

/* Best seconds per call of fn over >= 0.3 s. */
#define BEST_TIME(best, call)                                          \
    do {                                                               \
        call;                                                          \
        double t_start = now_s(), t_a;                                 \
        best = INFINITY;                                               \
        int reps_ = 0;                                                 \
        do {                                                           \
            t_a = now_s();                                             \
            call;                                                      \
            double dt_ = now_s() - t_a;                                \
            best = dt_ < best ? dt_ : best;                            \
            reps_++;                                                   \
        } while (now_s() - t_start < 0.3 || reps_ < 3);                \
    } while (0)

static int shuffled;

static void bench_force(int level, int n, const int *threads, int nthreads)
{
    gpuirr *g = setup(level, n, 1);
    int *addr = malloc(sizeof(int) * n);
    double (*acc)[3] = malloc(sizeof *acc * n), (*jrk)[3] = malloc(sizeof *jrk * n);
    for (int s = 0; s < n; s++)
        addr[s] = s + 1;
    for (int s = n - 1; shuffled && s > 0; s--) {
        int r = rng_int(s + 1), t = addr[s];
        addr[s] = addr[r];
        addr[r] = t;
    }
    gpuirr_predict_all(g, 1, n, 0.01);
    gpuirr_stats st;
    gpuirr_force(g, n, addr, acc, jrk);
    gpuirr_get_stats(g, &st);
    double inter = st.interactions; /* of one call */
    for (int t = 0; t < nthreads; t++) {
        double best;
        set_threads(threads[t]);
        BEST_TIME(best, gpuirr_force(g, n, addr, acc, jrk));
        printf("FIRR_VEC  %-6s threads %3d  N %8d  <NB> %5.1f  %8.3f ms  %.3e interactions/s  %7.1f Gflops%s\n",
               level_name[level], threads[t], n, inter / n, best * 1e3, inter / best,
               60.0 * inter / best * 1e-9, shuffled ? "  [shuffled i]" : "");
        fflush(stdout);
    }
    free(addr);
    free(acc);
    free(jrk);
    gpuirr_close(g);
}

int main(int argc, char **argv)
{
    int threads[64], nthreads = 0, quick = 0, n_first = 65536;
    const char *only = NULL;
    for (int a = 1; a < argc && nthreads < 64; a++) {
        if (strcmp(argv[a], "-q") == 0)
            quick = 1;
        else if (strcmp(argv[a], "-s") == 0)
            shuffled = 1;
        else if (strcmp(argv[a], "-n") == 0 && a + 1 < argc)
            n_first = atoi(argv[++a]);
        else if (strcmp(argv[a], "-l") == 0 && a + 1 < argc)
            only = argv[++a];
        else if (atoi(argv[a]) > 0)
            threads[nthreads++] = atoi(argv[a]);
    }
    if (nthreads == 0) {
        threads[nthreads++] = 1;
        if (max_threads() > 1)
            threads[nthreads++] = max_threads();
    }
    rng_seed_fresh();
    printf("bench_gpuirr_simd: CPU %s, %d hardware threads available to OpenMP\n", cpu_model(),
           max_threads());
    int best = 0;
    for (int l = 0; l < NLEVELS; l++) {
        if (only && strcmp(only, level_name[l]) != 0)
            continue;
        if (!level_compiled(l) || !level_cpu_has(l)) {
            printf("skip %s: %s\n", level_name[l],
                   level_compiled(l) ? "this CPU lacks it" : "not compiled into this build");
            continue;
        }
        best = l;
        bench_force(l, n_first, threads, nthreads);
    }
    if (!quick) {
        bench_force(best, 8192, threads, nthreads);
        bench_force(best, 262144, threads, nthreads);
        bench_force(best, 1048576, threads, nthreads);
    }
    return 0;
}
