/* test_concurrency.c -- GPUIRR_SET_JP and GPUIRR_SET_LIST called from many
 * threads at once with distinct indices, as NBODY6's INTGRT does from OpenMP
 * loops: the forces must equal those of the same data set serially.  The
 * threads are POSIX threads so that ThreadSanitizer, which cannot see inside
 * an uninstrumented OpenMP runtime, checks this test without false alarms
 * (.ci/run builds it with -fsanitize=thread). */
#include "nb6accel_legacy.h"
#include "testlib.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { N = 4000, LMAX = 120, THREADS = 16 };

static double rec[N][4][3], mass[N], t0[N];
static int lists[N][LMAX];

static void set_one(int k)
{
    int a = k + 1;
    NB6_F_GPUIRR_SET_JP(&a, rec[k][0], rec[k][1], rec[k][2], rec[k][3], &mass[k], &t0[k]);
    NB6_F_GPUIRR_SET_LIST(&a, lists[k]);
}

/* Thread t sets particles t, t+THREADS, ...: neighbouring slots are written
 * by different threads at the same time, as with schedule(dynamic, 1). */
static void *set_interleaved(void *arg)
{
    for (int k = (int)(size_t)arg; k < N; k += THREADS)
        set_one(k);
    return NULL;
}

static void set_all(int parallel)
{
    pthread_t tid[THREADS];
    if (!parallel) {
        for (int k = 0; k < N; k++)
            set_one(k);
        return;
    }
    for (int t = 0; t < THREADS; t++)
        pthread_create(&tid[t], NULL, set_interleaved, (void *)(size_t)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(tid[t], NULL);
}

static void forces(double (*acc)[3], double (*jrk)[3])
{
    int first = 1, last = N, n = N, *addr = malloc(sizeof(int) * N);
    double t = 0.01;
    for (int k = 0; k < N; k++)
        addr[k] = k + 1;
    NB6_F_GPUIRR_PRED_ALL(&first, &last, &t);
    NB6_F_GPUIRR_FIRR_VEC(&n, addr, acc, jrk);
    free(addr);
}

int main(void)
{
    static double acc_serial[N][3], jrk_serial[N][3], acc_par[N][3], jrk_par[N][3];
    tl_cluster c;
    int nmax = N, lmax = LMAX;
    tl_seed_from_env();
    tl_cluster_make(&c, N, 0, 0.0, 0.2);
    for (int k = 0; k < N; k++) {
        memcpy(rec[k][0], c.x[k], sizeof rec[k][0]);
        memcpy(rec[k][1], c.v[k], sizeof rec[k][1]);
        for (int d = 0; d < 3; d++) {
            rec[k][2][d] = 0.5 * tl_normal();
            rec[k][3][d] = tl_normal() / 6.0;
        }
        mass[k] = c.m[k];
        t0[k] = 0.005 * tl_uniform();
        int len = tl_int(0, LMAX - 1), e = 0;
        for (int j = 1; j <= N && e < len; j++)
            if (j != k + 1 && tl_uniform() < 2.0 * len / N)
                lists[k][1 + e++] = j;
        lists[k][0] = e;
    }
    NB6_F_GPUIRR_OPEN(&nmax, &lmax);
    set_all(0);
    forces(acc_serial, jrk_serial);
    for (int round = 0; round < 5; round++) {
        /* Scramble every slot serially first, so the parallel pass must
         * really rewrite each one. */
        double junk[3] = {9, 9, 9}, jm = 1.0, jt = 0.0;
        int empty[1] = {0};
        for (int a = 1; a <= N; a++) {
            NB6_F_GPUIRR_SET_JP(&a, junk, junk, junk, junk, &jm, &jt);
            NB6_F_GPUIRR_SET_LIST(&a, empty);
        }
        set_all(1);
        forces(acc_par, jrk_par);
        TL_CHECK(memcmp(acc_serial, acc_par, sizeof acc_par) == 0 &&
                     memcmp(jrk_serial, jrk_par, sizeof jrk_par) == 0,
                 "round %d: forces after concurrent SET_JP/SET_LIST differ from the serial ones", round);
    }
    NB6_F_GPUIRR_CLOSE();
    printf("%d particles set from %d threads at once, 5 rounds\n", N, THREADS);
    tl_cluster_free(&c);
    return tl_finish("test_concurrency");
}
