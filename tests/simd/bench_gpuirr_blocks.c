/* bench_gpuirr_blocks.c -- GPUIRR as NBODY6 drives it, block by block: the
 * cost per block of prediction + irregular force, where most blocks have few
 * actives (~100,000 blocks per time unit at N = 64k).
 *
 *   bench_gpuirr_blocks [-n N] [-b blocks] [-l level] [threads ...]
 *                                  (default N = 65536, 20000 blocks, threads 1 and all)
 *
 * Each block: ni actives drawn at random (ni = 10 + 190 u^3, u uniform: mostly
 * small, mean ~57); a "regular" block (one in eight, or ni > NPACT = 150)
 * calls PRED_ALL(1, N, t), FIRR_VEC on the actives, SET_LIST with new random
 * lists for half of them and a second FIRR_VEC on those (intgrt.omp.f:357,
 * 392, 522, 527); any other block calls PRED_ACT(ni, actives, t) and FIRR_VEC.
 * After the block the actives get new records at t (SET_JP, intgrt.omp.f:591).
 * Lists: 60..90 members drawn at random from all N.  Prints the time per
 * block and its split (prediction calls, FIRR_VEC with the predictions it
 * makes, SET_JP/SET_LIST), and the
 * FIRR_VEC rate in neighbour interactions per second.  The same seed
 * (NB6_TEST_SEED) gives the same block sequence. */
#include "simd_testutil.h"
#include "gpuirr.h"

enum { LMAX = 131, LIST_MIN = 60, LIST_MAX = 90, NPACT = 150 };

static void random_list(int n, int s, int *members, int *len)
{
    *len = LIST_MIN + rng_int(LIST_MAX - LIST_MIN + 1);
    for (int e = 0; e < *len; e++) {
        int j;
        do
            j = 1 + rng_int(n);
        while (j == s);
        members[e] = j;
    }
}

static void random_record(double x[3], double v[3], double f[3], double fd[3])
{
    for (int k = 0; k < 3; k++) {
        x[k] = rng_uniform();
        v[k] = rng_normal();
        f[k] = rng_normal();
        fd[k] = rng_normal();
    }
}

static void run(int level, int n, int nblocks, int threads, uint64_t seed)
{
    gpuirr *g;
    setenv("NB6ACCEL_SIMD", level_name[level], 1);
    if (gpuirr_open(&g, n, LMAX) != GPUIRR_OK) {
        printf("gpuirr_open: %s\n", gpuirr_last_error());
        exit(1);
    }
    set_threads(threads);
    rng_state = seed ? seed : 1;
    int members[LMAX], len;
    double x[3], v[3], f[3], fd[3];
    for (int s = 1; s <= n; s++) {
        random_record(x, v, f, fd);
        gpuirr_set_particle(g, s, x, v, f, fd, 1.0 / n, 0.0);
        random_list(n, s, members, &len);
        gpuirr_set_list(g, s, len, members);
    }
    int *perm = malloc(sizeof(int) * n), *act = malloc(sizeof(int) * 200);
    double (*acc)[3] = malloc(sizeof *acc * 200), (*jrk)[3] = malloc(sizeof *jrk * 200);
    for (int s = 0; s < n; s++)
        perm[s] = s + 1;
    double t = 0.0, t_pred = 0.0, t_force = 0.0, t_set = 0.0;
    long long regular = 0, actives = 0;
    gpuirr_stats st0, st1;
    /* One warm-up PRED_ALL + FIRR_VEC of everybody's first block. */
    gpuirr_predict_all(g, 1, n, t);
    gpuirr_get_stats(g, &st0);
    double t_begin = now_s();
    for (int b = 0; b < nblocks; b++) {
        double u = rng_uniform();
        int ni = 10 + (int)(190.0 * u * u * u);
        for (int k = 0; k < ni; k++) { /* partial Fisher-Yates: distinct actives */
            int r = k + rng_int(n - k), tmp = perm[k];
            perm[k] = perm[r];
            perm[r] = tmp;
            act[k] = perm[k];
        }
        int is_regular = ni > NPACT || rng_int(8) == 0;
        t += 1e-6;
        double c0 = now_s();
        if (is_regular)
            gpuirr_predict_all(g, 1, n, t);
        else
            gpuirr_predict_active(g, ni, act, t);
        double c1 = now_s();
        gpuirr_force(g, ni, act, acc, jrk);
        double c2 = now_s(), c3 = c2, c4 = c2;
        if (is_regular) {
            int nreg = ni / 2;
            for (int k = 0; k < nreg; k++) {
                random_list(n, act[k], members, &len);
                gpuirr_set_list(g, act[k], len, members);
            }
            c3 = now_s();
            gpuirr_force(g, nreg, act, acc, jrk);
            c4 = now_s();
            regular++;
        }
        for (int k = 0; k < ni; k++) {
            random_record(x, v, f, fd);
            gpuirr_set_particle(g, act[k], x, v, f, fd, 1.0 / n, t);
        }
        double c5 = now_s();
        t_pred += c1 - c0;
        t_force += (c2 - c1) + (c4 - c3);
        t_set += (c3 - c2) + (c5 - c4);
        actives += ni;
    }
    double wall = now_s() - t_begin;
    gpuirr_get_stats(g, &st1);
    double inter = st1.interactions - st0.interactions;
    printf("blocks %-6s threads %3d  N %7d  %d blocks (%lld regular, <ni> %.1f)  %7.2f us/block: "
           "pred %6.2f  firr %6.2f  set %5.2f us;  %.0f named in predict calls/block;  firr %.3e interactions/s\n",
           level_name[level], threads, n, nblocks, regular, (double)actives / nblocks,
           wall / nblocks * 1e6, t_pred / nblocks * 1e6, t_force / nblocks * 1e6,
           t_set / nblocks * 1e6,
           (double)(st1.particles_predicted - st0.particles_predicted) / nblocks, inter / t_force);
    fflush(stdout);
    free(perm);
    free(act);
    free(acc);
    free(jrk);
    gpuirr_close(g);
}

int main(int argc, char **argv)
{
    int threads[64], nthreads = 0, n = 65536, nblocks = 20000;
    const char *only = NULL;
    for (int a = 1; a < argc && nthreads < 64; a++) {
        if (strcmp(argv[a], "-n") == 0 && a + 1 < argc)
            n = atoi(argv[++a]);
        else if (strcmp(argv[a], "-b") == 0 && a + 1 < argc)
            nblocks = atoi(argv[++a]);
        else if (strcmp(argv[a], "-l") == 0 && a + 1 < argc)
            only = argv[++a];
        else if (atoi(argv[a]) > 0)
            threads[nthreads++] = atoi(argv[a]);
    }
    if (n < 400) {
        printf("bench_gpuirr_blocks: -n %d is too small (at least 400)\n", n);
        return 1;
    }
    if (nthreads == 0) {
        threads[nthreads++] = 1;
        if (max_threads() > 1)
            threads[nthreads++] = max_threads();
    }
    uint64_t seed = rng_seed_fresh();
    printf("bench_gpuirr_blocks: CPU %s, %d hardware threads available to OpenMP, seed %llu\n",
           cpu_model(), max_threads(), (unsigned long long)seed);
    int best = -1;
    for (int l = 0; l < NLEVELS; l++)
        if (level_compiled(l) && level_cpu_has(l) && (!only || strcmp(only, level_name[l]) == 0))
            best = l;
    if (best < 0) {
        printf("bench_gpuirr_blocks: no usable level%s%s\n", only ? " named " : "", only ? only : "");
        return 1;
    }
    for (int t = 0; t < nthreads; t++)
        run(best, n, nblocks, threads[t], seed);
    return 0;
}
