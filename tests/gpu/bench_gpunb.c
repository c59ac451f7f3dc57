/* bench_gpunb.c -- speed of the CUDA back-end of GPUNB per (NI, NJ):
 *   call_us    wall time of one whole gpunb_regf (upload, kernels, gather,
 *              download, host combination), median over the repetitions;
 *   kernel_us  time of the force kernel alone (CUDA events, from gpunb_stats);
 *   gather_us  the library's time in reduction, list gathering and download
 *              (gpunb_stats' time_gather per call);
 *   inter/s    NI * NJ / kernel time;  Gflops = 60 * inter/s (the 60-flop
 *              convention of NBODY6's GPU library);
 *   issue%     inter/s as a fraction of the issue-bound limit
 *              SMs * 4 schedulers * 32 lanes * clock / (SASS instructions
 *              per interaction), the count given by --sass (cuobjdump, see
 *              sass_per_interaction.sh) or else an assumed 42.
 * Usage: bench_gpunb [--ni "64 1024"] [--nj "16384 131072 1048576"]
 *                    [--sass 42.0] [--seconds 0.5] [--resident 0|1]
 *                    [--order random|morton|spatial|quarters]
 * --order morton: the j-set and each call's i in Morton order (NBODY6 keeps
 * neither); spatial: the same, with the j-set's tiles (256 j) spread apart
 * so that each force slice holds some of every region; quarters: the same
 * with quarter tiles (64 j).
 * --resident 1: instead, per (NI, NJ), the extended path against the legacy
 * one: host prediction of all j + gpunb_send vs gpunb_set_jparticle of 1 % of
 * the records + gpunb_predict (GPU prediction), each until the j-set is on
 * the GPU; a whole block each way (predict, send/start, regf/finish); and
 * the overlap: how long gpunb_regf_finish still waits after host work of
 * about the force's duration between start and finish.
 * --irregular 1: instead, per (NI, NJ), the irregular force from the
 * resident records (gpunb_firr_start/finish) on NI particles in ascending
 * order, each with a list of 40..120 random members (a Plummer model in its
 * generated order has neighbours at random indices), 1 % of the records and
 * lists changed before each call: host time in start, time waited in
 * finish, the whole call, and pairs per second.
 * Exits 77 with "SKIP: ..." where no CUDA device is usable. */
#include "config.h"
#include "gpunb.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef NB6ACCEL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, n, sizeof *t, cmp_double);
    return t[n / 2];
}

#ifdef NB6ACCEL_HAVE_CUDA
static volatile double spin_sink;

/* Host work of about `us` microseconds. */
static void spin(double us)
{
    double t0 = now(), x = 1.0;
    while (now() - t0 < 1e-6 * us)
        for (int k = 0; k < 100; k++)
            x = x * 1.0000001 + 1e-9;
    spin_sink = x;
}

static void host_predict(int nj, double t, const double *t0, const double (*x0)[3], const double (*v0)[3],
                         const double (*a2)[3], const double (*j6)[3], double (*xp)[3], double (*vp)[3])
{
#pragma omp parallel for schedule(static) if (nj > 4096)
    for (int j = 0; j < nj; j++) {
        double dt = t - t0[j];
        for (int k = 0; k < 3; k++) {
            xp[j][k] = x0[j][k] + dt * (v0[j][k] + dt * (a2[j][k] + dt * j6[j][k]));
            vp[j][k] = v0[j][k] + 2.0 * dt * (a2[j][k] + 1.5 * dt * j6[j][k]);
        }
    }
}

static int bench_resident(const int *nis, int nni, const int *njs, int nnj, int reps)
{
    printf("extended (resident) path vs legacy path; times in us, medians of %d; 1%% of the records "
           "changed per block\n", reps);
    printf("%7s %8s %12s %12s %12s %12s %12s %12s %10s %10s\n", "NI", "NJ", "hpred+send", "set1%+pred",
           "legacy_blk", "resid_blk", "start+fin", "host_work", "fin_wait", "overlap%");
    for (int q = 0; q < nnj; q++) {
        const int nj = njs[q], ndirty = nj / 100 > 0 ? nj / 100 : 1;
        tl_cluster c;
        tl_cluster_make(&c, nj, nj / 200, 0.0, 0.1);
        double bodym = tl_cluster_mean_mass(&c);
        double *t0 = malloc(sizeof(double) * nj), (*a2)[3] = malloc(sizeof(double[3]) * nj);
        double(*j6)[3] = malloc(sizeof(double[3]) * nj), (*xp)[3] = malloc(sizeof(double[3]) * nj);
        double(*vp)[3] = malloc(sizeof(double[3]) * nj);
        for (int j = 0; j < nj; j++) {
            for (int k = 0; k < 3; k++) {
                a2[j][k] = c.m[j] > 0 ? 0.5 * tl_normal() : 0.0;
                j6[j][k] = c.m[j] > 0 ? tl_normal() / 6.0 : 0.0;
            }
            t0[j] = 0.0;
        }
        gpunb *leg = NULL, *res = NULL;
        if (gpunb_open(&leg, nj, GPUNB_BACKEND_CUDA) != GPUNB_OK ||
            gpunb_open(&res, nj, GPUNB_BACKEND_CUDA) != GPUNB_OK) {
            printf("FAIL: %s\n", gpunb_last_error());
            return 1;
        }
        for (int j = 0; j < nj; j++)
            gpunb_set_jparticle(res, j, c.x[j], c.v[j], a2[j], j6[j], c.m[j], t0[j]);
        gpunb_predict(res, nj, 1e-4);
        for (int k = 0; k < nni; k++) {
            const int ni = nis[k], lmax = 500, nbmax = 450;
            int *ji = malloc(sizeof(int) * ni), *list = malloc(sizeof(int) * (size_t)ni * lmax);
            double *h2 = malloc(sizeof(double) * ni), *dtr = malloc(sizeof(double) * ni);
            double(*xi)[3] = malloc(sizeof(double[3]) * ni), (*vi)[3] = malloc(sizeof(double[3]) * ni);
            double(*acc)[3] = malloc(sizeof(double[3]) * ni), (*jrk)[3] = malloc(sizeof(double[3]) * ni);
            double *pot = malloc(sizeof(double) * ni);
            double *ta = malloc(sizeof(double) * reps), *tb = malloc(sizeof(double) * reps);
            double *tc = malloc(sizeof(double) * reps), *td = malloc(sizeof(double) * reps);
            double *te = malloc(sizeof(double) * reps), *tf = malloc(sizeof(double) * reps);
            for (int i = 0; i < ni; i++) {
                do
                    ji[i] = tl_int(0, nj - 1);
                while (c.m[ji[i]] == 0.0);
                double r = cbrt(50.0 / nj) * pow(1.0 + c.x[ji[i]][0] * c.x[ji[i]][0], 5.0 / 6.0);
                h2[i] = r * r / bodym;
                dtr[i] = 1e-3;
            }
            double t = 1e-4;
            for (int rep = 0; rep < reps; rep++, t += 1e-5) {
                /* legacy: predict all on the host, send, regf */
                double s0 = now();
                host_predict(nj, t, t0, (const double(*)[3])c.x, (const double(*)[3])c.v,
                             (const double(*)[3])a2, (const double(*)[3])j6, xp, vp);
                gpunb_send(leg, nj, c.m, (const double(*)[3])xp, (const double(*)[3])vp);
                cudaDeviceSynchronize();
                double s1 = now();
                for (int i = 0; i < ni; i++) {
                    memcpy(xi[i], xp[ji[i]], sizeof xi[i]);
                    memcpy(vi[i], vp[ji[i]], sizeof vi[i]);
                }
                gpunb_regf(leg, ni, h2, dtr, (const double(*)[3])xi, (const double(*)[3])vi, acc, jrk, pot,
                           lmax, nbmax, list);
                double s2 = now();
                /* resident: 1 % of the records change, the GPU predicts */
                for (int d = 0; d < ndirty; d++) {
                    int j = tl_int(0, nj - 1);
                    gpunb_set_jparticle(res, j, c.x[j], c.v[j], a2[j], j6[j], c.m[j], t0[j]);
                }
                gpunb_predict(res, nj, t);
                cudaDeviceSynchronize();
                double s3 = now();
                gpunb_regf_start(res, ni, ji, h2, dtr, lmax, nbmax);
                gpunb_regf_finish(res, acc, jrk, pot, list);
                double s4 = now();
                ta[rep] = s1 - s0;
                tb[rep] = s3 - s2;
                tc[rep] = s2 - s0;
                td[rep] = s4 - s2;
                te[rep] = s4 - s3;
            }
            double start_finish = median(te, reps), work = start_finish;
            /* overlap: host work of the force's duration between start and finish */
            for (int rep = 0; rep < reps; rep++, t += 1e-5) {
                gpunb_predict(res, nj, t);
                cudaDeviceSynchronize();
                gpunb_regf_start(res, ni, ji, h2, dtr, lmax, nbmax);
                spin(1e6 * work);
                double s0 = now();
                gpunb_regf_finish(res, acc, jrk, pot, list);
                tf[rep] = now() - s0;
            }
            double wait = median(tf, reps);
            printf("%7d %8d %12.1f %12.1f %12.1f %12.1f %12.1f %12.1f %10.1f %9.0f%%\n", ni, nj, 1e6 * median(ta, reps),
                   1e6 * median(tb, reps), 1e6 * median(tc, reps), 1e6 * median(td, reps), 1e6 * start_finish,
                   1e6 * work, 1e6 * wait, 100.0 * (1.0 - wait / start_finish));
            fflush(stdout);
            free(ji), free(list), free(h2), free(dtr), free(xi), free(vi), free(acc), free(jrk), free(pot);
            free(ta), free(tb), free(tc), free(td), free(te), free(tf);
        }
        gpunb_close(leg);
        gpunb_close(res);
        free(t0), free(a2), free(j6), free(xp), free(vp);
        tl_cluster_free(&c);
    }
    return 0;
}

static int bench_irregular(const int *nis, int nni, const int *njs, int nnj, int reps)
{
    printf("irregular force from the resident records; times in us, medians of %d; 1%% of the records "
           "and lists changed before each call\n", reps);
    printf("%7s %8s %10s %10s %10s %10s %12s\n", "NI", "NJ", "pairs", "start", "finish", "call", "pairs/s");
    const int lmax = 200;
    for (int q = 0; q < nnj; q++) {
        const int nj = njs[q], ndirty = nj / 100 > 0 ? nj / 100 : 1;
        tl_cluster c;
        tl_cluster_make(&c, nj, 0, 0.0, 0.1);
        double(*a2)[3] = malloc(sizeof(double[3]) * nj), (*j6)[3] = malloc(sizeof(double[3]) * nj);
        int *lists = malloc(sizeof(int) * (size_t)nj * lmax), *len = malloc(sizeof(int) * nj);
        gpunb *nb = NULL;
        if (gpunb_open(&nb, nj, GPUNB_BACKEND_CUDA) != GPUNB_OK || gpunb_irr_open(nb, lmax) != GPUNB_OK) {
            printf("FAIL: %s\n", gpunb_last_error());
            return 1;
        }
        for (int j = 0; j < nj; j++) {
            for (int k = 0; k < 3; k++) {
                a2[j][k] = 0.5 * tl_normal();
                j6[j][k] = tl_normal() / 6.0;
            }
            gpunb_set_jparticle(nb, j, c.x[j], c.v[j], a2[j], j6[j], c.m[j], 0.0);
        }
        for (int j = 0; j < nj; j++) {
            int *row = lists + (size_t)j * lmax;
            len[j] = tl_int(40, 120);
            for (int l = 0; l < len[j]; l++) {
                do
                    row[l] = tl_int(0, nj - 1);
                while (row[l] == j);
            }
            gpunb_set_list(nb, j, len[j], row);
        }
        gpunb_predict(nb, nj, 1e-4);
        for (int k = 0; k < nni; k++) {
            const int ni = nis[k] < nj ? nis[k] : nj;
            int *ji = malloc(sizeof(int) * ni);
            double(*acc)[3] = malloc(sizeof(double[3]) * ni), (*jrk)[3] = malloc(sizeof(double[3]) * ni);
            double *ta = malloc(sizeof(double) * reps), *tb = malloc(sizeof(double) * reps);
            double *tc = malloc(sizeof(double) * reps);
            /* ni of the nj, ascending (a large block in index order) */
            for (int i = 0, picked = 0; i < nj && picked < ni; i++)
                if (tl_int(0, nj - i - 1) < ni - picked)
                    ji[picked++] = i;
            double pairs = 0.0, t = 2e-4;
            for (int i = 0; i < ni; i++)
                pairs += len[ji[i]];
            for (int rep = 0; rep < reps; rep++, t += 1e-5) {
                for (int d = 0; d < ndirty; d++) {
                    int j = tl_int(0, nj - 1);
                    gpunb_set_jparticle(nb, j, c.x[j], c.v[j], a2[j], j6[j], c.m[j], 0.0);
                    gpunb_set_list(nb, j, len[j], lists + (size_t)j * lmax);
                }
                double s0 = now();
                if (gpunb_firr_start(nb, ni, ji, t) != GPUNB_OK) {
                    printf("FAIL: %s\n", gpunb_last_error());
                    return 1;
                }
                double s1 = now();
                gpunb_firr_finish(nb, acc, jrk);
                double s2 = now();
                ta[rep] = s1 - s0;
                tb[rep] = s2 - s1;
                tc[rep] = s2 - s0;
            }
            const double call = median(tc, reps);
            printf("%7d %8d %10.0f %10.1f %10.1f %10.1f %12.3e\n", ni, nj, pairs, 1e6 * median(ta, reps),
                   1e6 * median(tb, reps), 1e6 * call, pairs / call);
            fflush(stdout);
            free(ji), free(acc), free(jrk), free(ta), free(tb), free(tc);
        }
        gpunb_close(nb);
        free(a2), free(j6), free(lists), free(len);
        tl_cluster_free(&c);
    }
    return 0;
}
#endif

static int parse_list(const char *s, int *out, int max)
{
    int n = 0;
    char *end;
    while (n < max) {
        long v = strtol(s, &end, 10);
        if (end == s)
            break;
        out[n++] = (int)v;
        s = end;
    }
    return n;
}

int main(int argc, char **argv)
{
    int nis[16] = {64, 1024}, njs[16] = {16384, 131072, 1048576};
    int nni = 2, nnj = 3;
    double sass = 0.0, seconds = 0.5;
    int resident = 0, irregular = 0, spatial = 0;
    for (int a = 1; a + 1 < argc; a += 2) {
        if (strcmp(argv[a], "--ni") == 0)
            nni = parse_list(argv[a + 1], nis, 16);
        else if (strcmp(argv[a], "--nj") == 0)
            nnj = parse_list(argv[a + 1], njs, 16);
        else if (strcmp(argv[a], "--sass") == 0)
            sass = atof(argv[a + 1]);
        else if (strcmp(argv[a], "--seconds") == 0)
            seconds = atof(argv[a + 1]);
        else if (strcmp(argv[a], "--resident") == 0)
            resident = atoi(argv[a + 1]);
        else if (strcmp(argv[a], "--irregular") == 0)
            irregular = atoi(argv[a + 1]);
        else if (strcmp(argv[a], "--order") == 0 &&
                 (!strcmp(argv[a + 1], "random") || !strcmp(argv[a + 1], "morton") ||
                  !strcmp(argv[a + 1], "spatial") || !strcmp(argv[a + 1], "quarters")))
            spatial = !strcmp(argv[a + 1], "morton")     ? 1
                      : !strcmp(argv[a + 1], "spatial")  ? 2
                      : !strcmp(argv[a + 1], "quarters") ? 3
                                                         : 0;
        else {
            fprintf(stderr, "bench_gpunb: unknown option %s\n", argv[a]);
            return 2;
        }
    }
    unsetenv("NB6ACCEL_GPUNB");
#ifndef NB6ACCEL_HAVE_CUDA
    tl_skip("no usable CUDA device (this build has no CUDA back-end)");
#else
    gpunb *h = NULL;
    if (gpunb_open(&h, 16, GPUNB_BACKEND_CUDA) != GPUNB_OK)
        tl_skip("no usable CUDA device (%s)", gpunb_last_error());
    printf("back-end: %s\n", gpunb_backend_description(h));
    gpunb_close(h);
    if (resident) {
        tl_seed_from_env();
        return bench_resident(nis, nni, njs, nnj, 30);
    }
    if (irregular) {
        tl_seed_from_env();
        return bench_irregular(nis, nni, njs, nnj, 30);
    }

    int dev = 0, sms = 0, khz = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev);
    const char *sass_note = "counted with cuobjdump";
    if (sass <= 0.0) {
        sass = 42.0;
        sass_note = "ASSUMED (no --sass given)";
    }
    double limit = (double)sms * 4 * 32 * khz * 1e3 / sass;
    printf("issue-bound limit: %d SMs x 4 schedulers x 32 lanes x %.0f MHz / %.1f SASS instructions "
           "per interaction (%s) = %.3e interactions/s\n",
           sms, khz * 1e-3, sass, sass_note, limit);
    printf("%7s %8s %10s %10s %10s %11s %8s %7s %6s\n", "NI", "NJ", "call_us", "kernel_us",
           "gather_us", "inter/s", "Gflops", "issue%", "nb/i");
    tl_seed_from_env();
    for (int q = 0; q < nnj; q++) {
        tl_cluster c;
        int nj = njs[q];
        tl_cluster_make(&c, nj, nj / 200, 5.0, 0.1);
        double bodym = tl_cluster_mean_mass(&c);
        const double centre[3] = {5.0, 5.0, 5.0}; /* tl_cluster_make's offset */
        if (spatial) {
            int *perm = malloc(sizeof(int) * (size_t)nj);
            tl_spatial_order(nj, (const double(*)[3])c.x, centre, 4.0, spatial == 1 ? 1 : spatial == 2 ? 256 : 64,
                             perm);
            tl_permute_rows(&c.x[0][0], nj, 3, perm);
            tl_permute_rows(&c.v[0][0], nj, 3, perm);
            tl_permute_rows(c.m, nj, 1, perm);
            free(perm);
        }
        if (gpunb_open(&h, nj, GPUNB_BACKEND_CUDA) != GPUNB_OK ||
            gpunb_send(h, nj, c.m, (const double(*)[3])c.x, (const double(*)[3])c.v) != GPUNB_OK) {
            printf("FAIL: %s\n", gpunb_last_error());
            return 1;
        }
        for (int k = 0; k < nni; k++) {
            int ni = nis[k], lmax = 500, nbmax = 450;
            double *h2 = malloc(sizeof(double) * ni), *dtr = malloc(sizeof(double) * ni);
            double(*xi)[3] = malloc(sizeof(double[3]) * ni), (*vi)[3] = malloc(sizeof(double[3]) * ni);
            double(*acc)[3] = malloc(sizeof(double[3]) * ni), (*jrk)[3] = malloc(sizeof(double[3]) * ni);
            double *pot = malloc(sizeof(double) * ni);
            int *list = malloc(sizeof(int) * (size_t)ni * lmax);
            for (int i = 0; i < ni; i++) {
                int j;
                do
                    j = tl_int(0, nj - 1);
                while (c.m[j] == 0.0);
                memcpy(xi[i], c.x[j], sizeof xi[i]);
                memcpy(vi[i], c.v[j], sizeof vi[i]);
                double rr2 = 0;
                for (int d = 0; d < 3; d++)
                    rr2 += (c.x[j][d] - 5.0) * (c.x[j][d] - 5.0);
                double r = cbrt(50.0 / nj) * pow(1.0 + rr2, 5.0 / 6.0);
                h2[i] = r * r / bodym;
                dtr[i] = 1e-3;
            }
            if (spatial) {
                int *perm = malloc(sizeof(int) * (size_t)ni);
                tl_spatial_order(ni, (const double(*)[3])xi, centre, 4.0, 1, perm);
                tl_permute_rows(&xi[0][0], ni, 3, perm);
                tl_permute_rows(&vi[0][0], ni, 3, perm);
                tl_permute_rows(h2, ni, 1, perm);
                free(perm);
            }
            gpunb_stats s0, s1;
            int reps = 0, cap = 10000;
            double *t = malloc(sizeof(double) * cap), start;
            for (int w = 0; w < 3; w++)
                gpunb_regf(h, ni, h2, dtr, (const double(*)[3])xi, (const double(*)[3])vi, acc, jrk,
                           pot, lmax, nbmax, list);
            gpunb_get_stats(h, &s0);
            start = now();
            while (reps < cap && (reps < 10 || now() - start < seconds)) {
                double t0 = now();
                if (gpunb_regf(h, ni, h2, dtr, (const double(*)[3])xi, (const double(*)[3])vi, acc,
                               jrk, pot, lmax, nbmax, list) != GPUNB_OK) {
                    printf("FAIL: %s\n", gpunb_last_error());
                    return 1;
                }
                t[reps++] = now() - t0;
            }
            gpunb_get_stats(h, &s1);
            qsort(t, reps, sizeof *t, cmp_double);
            double kern = (s1.time_force - s0.time_force) / reps;
            double gath = (s1.time_gather - s0.time_gather) / reps;
            double ips = (double)ni * nj / kern;
            long nbsum = 0;
            for (int i = 0; i < ni; i++)
                nbsum += abs(list[(size_t)i * lmax]);
            printf("%7d %8d %10.1f %10.1f %10.1f %11.3e %8.1f %6.1f%% %6.1f\n", ni, nj, 1e6 * t[reps / 2],
                   1e6 * kern, 1e6 * gath, ips, 60e-9 * ips, 100.0 * ips / limit, (double)nbsum / ni);
            fflush(stdout);
            free(t);
            free(h2);
            free(dtr);
            free(xi);
            free(vi);
            free(acc);
            free(jrk);
            free(pot);
            free(list);
        }
        gpunb_close(h);
        tl_cluster_free(&c);
    }
    return 0;
#endif
}
