/* gpuirr_legacy.c -- NBODY6's GPUIRR_*, CXVPRED, CNBINT, WTIME and DBLTIM
 * entry points: thin wrappers over one default gpuirr handle and the host
 * helpers of gpuirr.h.  A failure is printed and stops the program. */
#include "config.h"
#include "gpuirr.h"
#include "nb6_common.h"

#include <stdio.h>
#include <stdlib.h>

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
#include "nb6accel_legacy.h"
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

static gpuirr *default_handle;

static NB6_NORETURN void stop(void) { nb6_legacy_stop(gpuirr_last_error()); }

static void require_open(const char *routine)
{
    nb6_legacy_require_open(default_handle, routine, "GPUIRR_OPEN", "GPUIRR_CLOSE");
}

void NB6_F_GPUIRR_OPEN(int *nmax, int *lmax)
{
    int min_ni = GPUIRR_DEVICE_DEFAULT;
    NB6_F_GPUIRR_OPEN_DEVICE(nmax, lmax, &min_ni);
}

void NB6_F_GPUIRR_OPEN_DEVICE(int *nmax, int *lmax, int *min_ni)
{
    if (default_handle) {
        fprintf(stderr, "gpuirr: it is already open (capacity kept)\n");
        return;
    }
    int on_device;
    if (gpuirr_open(&default_handle, *nmax, *lmax) != GPUIRR_OK ||
        gpuirr_use_device(default_handle, *min_ni, &on_device) != GPUIRR_OK)
        stop();
    fprintf(stderr, "Opened GPUIRR library: nb6accel, kernel %s, nmax = %d, lmax = %d\n",
            gpuirr_kernel_name(default_handle), *nmax, *lmax);
    if (on_device)
        fprintf(stderr, "GPUIRR: large blocks' irregular force on the GPU (NB6ACCEL_GPUIRR_DEVICE)\n");
    else
        fprintf(stderr, "GPUIRR: irregular force on the host only: %s\n", gpuirr_device_note(default_handle));
}

void NB6_F_GPUIRR_SET_JP(int *addr, double *x0, double *v0, double *f_half, double *fdot_sixth,
                         double *mass, double *t0)
{
    require_open("GPUIRR_SET_JP");
    if (gpuirr_set_particle(default_handle, *addr, x0, v0, f_half, fdot_sixth, *mass, *t0) !=
        GPUIRR_OK)
        stop();
}

void NB6_F_GPUIRR_SET_LIST(int *addr, int *list)
{
    require_open("GPUIRR_SET_LIST");
    if (gpuirr_set_list(default_handle, *addr, list[0], list + 1) != GPUIRR_OK)
        stop();
}

void NB6_F_GPUIRR_PRED_ALL(int *js, int *je, double *time)
{
    require_open("GPUIRR_PRED_ALL");
    if (gpuirr_predict_all(default_handle, *js, *je, *time) != GPUIRR_OK)
        stop();
}

void NB6_F_GPUIRR_PRED_ACT(int *ni, int *addr, double *time)
{
    require_open("GPUIRR_PRED_ACT");
    if (gpuirr_predict_active(default_handle, *ni, addr, *time) != GPUIRR_OK)
        stop();
}

void NB6_F_GPUIRR_FIRR_VEC(int *ni, int *addr, double (*acc)[3], double (*jrk)[3])
{
    require_open("GPUIRR_FIRR_VEC");
    if (gpuirr_force(default_handle, *ni, addr, acc, jrk) != GPUIRR_OK)
        stop();
}

void NB6_F_GPUIRR_FIRR(int *addr, double *acc, double *jrk)
{
    require_open("GPUIRR_FIRR");
    if (gpuirr_force(default_handle, 1, addr, (double(*)[3])acc, (double(*)[3])jrk) != GPUIRR_OK)
        stop();
}

void NB6_F_GPUIRR_CLOSE(void)
{
    gpuirr_stats st;
    if (!default_handle) {
        fprintf(stderr, "gpuirr: it is already closed\n");
        return;
    }
    gpuirr_get_stats(default_handle, &st);
    fprintf(stderr, "Closing GPUIRR library (nb6accel, kernel %s)\n", gpuirr_kernel_name(default_handle));
    fprintf(stderr, "time pred  : %f sec\n", st.time_predict_all);
    fprintf(stderr, "time pact  : %f sec\n", st.time_predict_active);
    fprintf(stderr, "time grav  : %f sec\n", st.time_force);
    if (st.time_force > 0.0 && st.force_calls > 0)
        fprintf(stderr, "perf grav  : %f Gflops, %.3e interactions/s, %f usec/call\n",
                60.0 * st.interactions / st.time_force * 1e-9, st.interactions / st.time_force,
                1e6 * st.time_force / (double)st.force_calls);
    if (st.device_calls > 0)
        fprintf(stderr, "grav GPU   : %lld of %lld calls, %lld of %lld particles, %f sec; %lld early copies\n",
                st.device_calls, st.force_calls, st.device_particles, st.particles_forced, st.time_device,
                st.device_pushes);
    if (st.particles_forced > 0)
        fprintf(stderr, "<#NB>      : %f\n", st.interactions / (double)st.particles_forced);
    /* Where a call's time goes besides summing: the team's start-up, and
     * threads that are slow (e.g. sharing a CPU) show as a low busy share. */
    const long long host_calls = st.force_calls - st.device_calls;
    if (host_calls > 0 && st.time_force_thread_held > 0.0)
        fprintf(stderr, "team grav  : %.1f threads, last one starts %.1f usec into a call, busy %.0f %% of threads x time\n",
                (double)st.force_team_threads / (double)host_calls,
                1e6 * st.time_force_start_lag / (double)host_calls,
                100.0 * st.time_force_thread_busy / st.time_force_thread_held);
    gpuirr_close(default_handle);
    default_handle = NULL;
}

void NB6_F_CXVPRED(int *js, int *je, double *time, double *t0, double (*x0)[3], double (*x0dot)[3],
                   double (*f)[3], double (*fdot)[3], double (*x)[3], double (*xdot)[3],
                   double *tpred)
{
    gpuirr_host_predict(*js, *je, *time, t0, (const double(*)[3])x0, (const double(*)[3])x0dot,
                        (const double(*)[3])f, (const double(*)[3])fdot, x, xdot, tpred);
}

void NB6_F_CNBINT(int *i, double (*x)[3], double (*xdot)[3], double *mass, int *nnb, int *list,
                  double *f, double *fdot)
{
    int n = *nnb - 1; /* NBODY6 passes the LIST row of the last member */
    gpuirr_host_neighbour_force(*i, (const double(*)[3])x, (const double(*)[3])xdot, mass,
                                n > 0 ? n : 0, list, f, fdot);
}

void NB6_F_WTIME(int *ihour, int *imin, int *isec)
{
    long s = (long)gpuirr_wall_time();
    *ihour = (int)(s / 3600);
    *imin = (int)(s / 60 % 60);
    *isec = (int)(s % 60);
}

double NB6_F_DBLTIM(void) { return gpuirr_wall_time(); }
