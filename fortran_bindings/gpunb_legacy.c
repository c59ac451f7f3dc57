/* gpunb_legacy.c -- NBODY6's GPUNB_* and GPUPOT entry points: thin wrappers
 * over one default gpunb handle.  They have no status argument, so a failure
 * is printed and stops the program: a wrong answer is worse than a stop. */
#include "config.h"
#include "gpunb.h"
#include "nb6_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#include "nb6accel_legacy.h"
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

static gpunb *default_handle;

static NB6_NORETURN void stop(void) { nb6_legacy_stop(gpunb_last_error()); }

static void require_open(const char *routine)
{
    nb6_legacy_require_open(default_handle, routine, "GPUNB_OPEN", "GPUNB_CLOSE");
}

void NB6_F_GPUNB_OPEN(int *capacity)
{
    if (default_handle) {
        fprintf(stderr, "gpunb: it is already open (capacity kept)\n");
        return;
    }
    if (gpunb_open(&default_handle, *capacity, GPUNB_BACKEND_DEFAULT) != GPUNB_OK)
        stop();
    fprintf(stderr, "Opened NBODY6/GPU library: nb6accel %s, GPUNB back-end %s, nbmax = %d\n",
            gpunb_version(), gpunb_backend_name(default_handle), *capacity);
    fprintf(stderr, "  %s\n", gpunb_backend_description(default_handle));
}

void NB6_F_GPUNB_SEND(int *nj, double *m, double (*x)[3], double (*v)[3])
{
    require_open("GPUNB_SEND");
    if (gpunb_send(default_handle, *nj, m, (const double(*)[3])x, (const double(*)[3])v) != GPUNB_OK)
        stop();
}

void NB6_F_GPUNB_REGF(int *ni, double *h2, double *dtr, double (*xi)[3], double (*vi)[3],
                      double (*acc)[3], double (*jrk)[3], double *pot, int *lmax, int *nbmax,
                      int *list)
{
    require_open("GPUNB_REGF");
    if (gpunb_regf(default_handle, *ni, h2, dtr, (const double(*)[3])xi, (const double(*)[3])vi,
                   acc, jrk, pot, *lmax, *nbmax, list) != GPUNB_OK)
        stop();
}

void NB6_F_GPUNB_CLOSE(void)
{
    gpunb_stats st;
    if (!default_handle) {
        fprintf(stderr, "gpunb: it is already closed\n");
        return;
    }
    gpunb_get_stats(default_handle, &st);
    fprintf(stderr, "Closed NBODY6/GPU library (nb6accel, %s back-end)\n",
            gpunb_backend_name(default_handle));
    fprintf(stderr, "time send   : %f sec\n", st.time_send);
    fprintf(stderr, "time grav   : %f sec\n", st.time_force);
    fprintf(stderr, "time reduce : %f sec\n", st.time_gather);
    fprintf(stderr, "time regtot : %f sec\n", st.time_total);
    if (st.time_force > 0.0)
        fprintf(stderr, "%f Gflops (gravity part only), %.3e interactions/s, %lld calls\n",
                60.0 * st.interactions / st.time_force * 1e-9, st.interactions / st.time_force,
                st.regf_calls);
    if (st.i_redone > 0)
        fprintf(stderr, "two-float redo: %lld of %lld i-particles\n", st.i_redone, st.i_forced);
    if (st.firr_calls > 0)
        fprintf(stderr, "time irr    : %f sec, %lld calls (%lld on the GPU), %.3e pairs\n", st.time_irregular,
                st.firr_calls, st.firr_on_device, st.irr_pairs);
    if (st.pushes > 0)
        fprintf(stderr, "time push   : %f sec, %lld calls\n", st.time_push, st.pushes);
    gpunb_close(default_handle);
    default_handle = NULL;
}

void NB6_F_GPUPOT(int *n, double *m, double (*x)[3], double *pot)
{
    if (gpunb_potential(*n, m, (const double(*)[3])x, pot) != GPUNB_OK)
        stop();
}

void NB6_F_GPUNB_SET_JP(int *j, double *x0, double *v0, double *f_half, double *fdot_sixth,
                        double *mass, double *t0)
{
    require_open("GPUNB_SET_JP");
    if (gpunb_set_jparticle(default_handle, *j - 1, x0, v0, f_half, fdot_sixth, *mass, *t0) != GPUNB_OK)
        stop();
}

void NB6_F_GPUNB_PREDICT(int *nj, double *time)
{
    require_open("GPUNB_PREDICT");
    if (gpunb_predict(default_handle, *nj, *time) != GPUNB_OK)
        stop();
}

/* Fortran's 1-based j indices, made 0-based once per call in a buffer that
 * only grows (no allocation once NI has been seen). */
static int *zero_based;
static int zero_based_cap;

static int grow_zero_based(int ni)
{
    if (ni > zero_based_cap) {
        free(zero_based);
        zero_based = malloc(sizeof(int) * (size_t)(ni > 0 ? ni : 1));
        zero_based_cap = zero_based ? ni : 0;
    }
    return zero_based != NULL;
}

void NB6_F_GPUNB_REGF_START(int *ni, int *ji, double *h2, double *dtr, int *lmax, int *nbmax)
{
    require_open("GPUNB_REGF_START");
    if (!grow_zero_based(*ni))
        nb6_legacy_stop("GPUNB_REGF_START: out of host memory for the index list");
    for (int i = 0; i < *ni; i++)
        zero_based[i] = ji[i] - 1;
    if (gpunb_regf_start(default_handle, *ni, zero_based, h2, dtr, *lmax, *nbmax) != GPUNB_OK)
        stop();
}

void NB6_F_GPUNB_IRR_OPEN(int *lmax)
{
    require_open("GPUNB_IRR_OPEN");
    if (gpunb_irr_open(default_handle, *lmax) != GPUNB_OK)
        stop();
}

void NB6_F_GPUNB_IRR_ON_DEVICE(int *on_device)
{
    require_open("GPUNB_IRR_ON_DEVICE");
    if (gpunb_irr_on_device(default_handle, on_device) != GPUNB_OK)
        stop();
}

/* Members made 0-based in a buffer of the call (SET_LIST comes from OpenMP
 * loops): on the stack up to lists of SET_LIST_STACK, which covers NBODY6's
 * LMAX; longer ones in memory of the call. */
#define SET_LIST_STACK 1024

void NB6_F_GPUNB_SET_LIST(int *j, int *list)
{
    int stack[SET_LIST_STACK];
    const int n = list[0];
    require_open("GPUNB_SET_LIST");
    int *members = n <= SET_LIST_STACK ? stack : malloc(sizeof(int) * (size_t)n);
    if (!members)
        nb6_legacy_stop("GPUNB_SET_LIST: out of host memory for the list");
    for (int k = 0; k < n; k++)
        members[k] = list[1 + k] - 1;
    const int st = gpunb_set_list(default_handle, *j - 1, n, members);
    if (members != stack)
        free(members);
    if (st != GPUNB_OK)
        stop();
}

void NB6_F_GPUNB_FIRR_START(int *ni, int *ji, double *time)
{
    require_open("GPUNB_FIRR_START");
    if (!grow_zero_based(*ni))
        nb6_legacy_stop("GPUNB_FIRR_START: out of host memory for the index list");
    for (int i = 0; i < *ni; i++)
        zero_based[i] = ji[i] - 1;
    if (gpunb_firr_start(default_handle, *ni, zero_based, *time) != GPUNB_OK)
        stop();
}

void NB6_F_GPUNB_PUSH(void)
{
    require_open("GPUNB_PUSH");
    if (gpunb_push(default_handle) != GPUNB_OK)
        stop();
}

void NB6_F_GPUNB_FIRR_DONE(int *done)
{
    require_open("GPUNB_FIRR_DONE");
    if (gpunb_firr_done(default_handle, done) != GPUNB_OK)
        stop();
}

void NB6_F_GPUNB_FIRR_FINISH(double (*acc)[3], double (*jrk)[3])
{
    require_open("GPUNB_FIRR_FINISH");
    if (gpunb_firr_finish(default_handle, acc, jrk) != GPUNB_OK)
        stop();
}

void NB6_F_GPUNB_REGF_FINISH(double (*acc)[3], double (*jrk)[3], double *pot, int *list)
{
    require_open("GPUNB_REGF_FINISH");
    if (gpunb_regf_finish(default_handle, acc, jrk, pot, list) != GPUNB_OK)
        stop();
}
