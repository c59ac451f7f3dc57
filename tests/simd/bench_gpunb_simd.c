/* bench_gpunb_simd.c -- speed of the GPUNB host back-ends: regular force,
 * jerk, potential and neighbour lists (gpunb_regf) in pair interactions per
 * second, per SIMD level of the "cpu" back-end (NB6ACCEL_SIMD) and OpenMP
 * thread count, beside the double-precision reference back-end.
 *
 *   bench_gpunb_simd [threads ...]     (default threads: 1 and all)
 *
 * j-set: N = 65536 particles of a Plummer sphere; i: NI of them, with h2 that
 * gives ~100 neighbours each.  Flops in the 60-flop convention.  Each figure
 * is the best of repeated calls over at least 0.3 s (after one warm-up).
 * Also gpunb_potential (GPUPOT, double precision) of N = NPOT particles. */
#include "simd_testutil.h"
#include "gpunb.h"

enum { NJ = 65536, NI = 2048, NI_REF = 256, LMAX = 256, NPOT = 32768 };

typedef struct jset {
    double *m, (*x)[3], (*v)[3], *h2, *dtr;
} jset;

static void run(const jset *js, enum gpunb_backend_kind kind, int level, int ni,
                const int *threads, int nthreads)
{
    double (*acc)[3] = malloc(sizeof *acc * ni), (*jrk)[3] = malloc(sizeof *jrk * ni);
    double *pot = malloc(sizeof(double) * ni);
    int *list = malloc(sizeof(int) * (size_t)ni * LMAX);
    for (int t = 0; t < nthreads; t++) {
        gpunb *nb;
        set_threads(threads[t]);
        if (level >= 0)
            setenv("NB6ACCEL_SIMD", level_name[level], 1);
        else
            unsetenv("NB6ACCEL_SIMD");
        if (gpunb_open(&nb, NJ, kind) != GPUNB_OK) {
            printf("gpunb_open: %s\n", gpunb_last_error());
            exit(1);
        }
        gpunb_send(nb, NJ, js->m, (const double(*)[3])js->x, (const double(*)[3])js->v);
#define REGF gpunb_regf(nb, ni, js->h2, js->dtr, (const double(*)[3])js->x, (const double(*)[3])js->v, \
                        acc, jrk, pot, LMAX, LMAX - 1, list)
        REGF;
        double t_start = now_s(), best = INFINITY;
        int reps = 0;
        do {
            double t0 = now_s();
            REGF;
            double dt = now_s() - t0;
            best = dt < best ? dt : best;
            reps++;
        } while (now_s() - t_start < 0.3 || reps < 3);
        long nbsum = 0;
        for (int i = 0; i < ni; i++)
            nbsum += abs(list[(size_t)i * LMAX]);
        double inter = (double)ni * NJ;
        printf("REGF      %-9s %-6s threads %3d  NJ %6d  NI %5d  <NB> %5.1f  %8.3f ms  %.3e interactions/s  %7.1f Gflops\n",
               gpunb_backend_name(nb), level >= 0 ? level_name[level] : "double", threads[t], NJ,
               ni, (double)nbsum / ni, best * 1e3, inter / best, 60.0 * inter / best * 1e-9);
        fflush(stdout);
        gpunb_close(nb);
    }
    free(acc);
    free(jrk);
    free(pot);
    free(list);
}

int main(int argc, char **argv)
{
    int threads[64], nthreads = 0;
    for (int a = 1; a < argc && nthreads < 64; a++)
        if (atoi(argv[a]) > 0)
            threads[nthreads++] = atoi(argv[a]);
    if (nthreads == 0) {
        threads[nthreads++] = 1;
        if (max_threads() > 1)
            threads[nthreads++] = max_threads();
    }
    rng_seed_fresh();
    printf("bench_gpunb_simd: CPU %s, %d hardware threads available to OpenMP\n", cpu_model(),
           max_threads());
    jset js;
    js.m = malloc(sizeof(double) * NJ);
    js.x = malloc(sizeof *js.x * NJ);
    js.v = malloc(sizeof *js.v * NJ);
    js.h2 = malloc(sizeof(double) * NJ);
    js.dtr = malloc(sizeof(double) * NJ);
    for (int j = 0; j < NJ; j++) {
        rng_plummer(js.x[j]);
        for (int k = 0; k < 3; k++)
            js.v[j][k] = 0.5 * rng_normal();
        js.m[j] = 1.0 / NJ;
        double r2 = js.x[j][0] * js.x[j][0] + js.x[j][1] * js.x[j][1] + js.x[j][2] * js.x[j][2];
        double rho = 3.0 / (4.0 * M_PI) * pow(1.0 + r2, -2.5) * NJ;
        double rs = cbrt(100.0 / (4.0 / 3.0 * M_PI * rho));
        js.h2[j] = rs * rs * NJ;
        js.dtr[j] = 0.01;
    }
    for (int l = 0; l < NLEVELS; l++) {
        if (!level_compiled(l) || !level_cpu_has(l)) {
            printf("skip %s: %s\n", level_name[l],
                   level_compiled(l) ? "this CPU lacks it" : "not compiled into this build");
            continue;
        }
        run(&js, GPUNB_BACKEND_CPU, l, NI, threads, nthreads);
    }
    run(&js, GPUNB_BACKEND_REFERENCE, -1, NI_REF, threads + nthreads - 1, 1);

    unsetenv("NB6ACCEL_SIMD");
    double *pot = malloc(sizeof(double) * NPOT);
    for (int t = 0; t < nthreads; t++) {
        set_threads(threads[t]);
        gpunb_potential(NPOT, js.m, (const double(*)[3])js.x, pot);
        double t0 = now_s();
        gpunb_potential(NPOT, js.m, (const double(*)[3])js.x, pot);
        double dt = now_s() - t0;
        printf("GPUPOT    threads %3d  N %6d  %8.3f ms  %.3e pairs/s (double)\n", threads[t], NPOT,
               dt * 1e3, (double)NPOT * NPOT / dt);
        fflush(stdout);
    }
    free(pot);
    return 0;
}
