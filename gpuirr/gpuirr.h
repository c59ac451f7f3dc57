/* gpuirr.h -- irregular (neighbour) force of NBODY6's Ahmad-Cohen scheme on
 * the host (the "GPUIRR" part of NBODY6-GPU), native C API; plus the host
 * helpers NBODY6 calls beside it (prediction of X, KS perturber force, clock).
 *
 * Indices are NBODY6's absolute particle indices, 1-based, 1..nmax.
 * Units: G = 1, no softening.  Particle records are stored with NBODY6's
 * Taylor coefficients F = acc/2 and FDOT = jerk/6; forces and jerks that come
 * out are FULL values.  Sign: acc_i = sum_j m_j (x_j - x_i) / r^3.
 *
 * Thread safety: gpuirr_set_particle and gpuirr_set_list may be called
 * concurrently from several threads for distinct indices (NBODY6 does so from
 * OpenMP loops).  Every other call on a handle must come from one thread at a
 * time; those may use OpenMP inside.  gpuirr_set_particle writes with
 * streaming stores, which x86 orders before what other threads see only at a
 * locked instruction or a fence: the thread that calls gpuirr_force after
 * other threads set particles must synchronise with them through the end of
 * an OpenMP parallel region or a barrier, a mutex, or an atomic
 * read-modify-write, not through a plain release store alone.
 * Every function that can fail returns GPUIRR_OK (0) or a status code; the
 * reason is then in gpuirr_last_error() of the calling thread.
 */
#ifndef GPUIRR_H
#define GPUIRR_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GPUIRR_API __attribute__((visibility("default")))
#else
#define GPUIRR_API
#endif

enum gpuirr_status {
    GPUIRR_OK = 0,
    GPUIRR_EUSAGE = 1,    /* bad argument or call order                         */
    GPUIRR_ERESOURCE = 2, /* out of memory                                      */
    GPUIRR_EDEVICE = 3    /* the GPU (gpuirr_use_device) failed                  */
};

typedef struct gpuirr gpuirr;

typedef struct gpuirr_stats {
    double time_predict_all;    /* s in gpuirr_predict_all (checks only)      */
    double time_predict_active; /* s in gpuirr_predict_active (checks only)   */
    double time_force;          /* s in gpuirr_force, predictions included    */
    double interactions;        /* sum of list lengths over forced particles  */
    long long particles_forced; /* i-particles evaluated                      */
    long long particles_predicted; /* predict calls' first..last, or ni      */
    long long force_calls;
    /* How gpuirr_force's thread team spent the calls, to tell slow work from
     * slow threads (a team that wakes late, threads sharing CPUs): summed
     * over calls, the delay until the team's last thread started, the
     * thread-seconds of work, the thread-seconds the teams were held for
     * (team size x call time), and the team sizes. */
    double time_force_start_lag;
    double time_force_thread_busy;
    double time_force_thread_held;
    long long force_team_threads;
    /* Of force_calls, those computed on the GPU (gpuirr_use_device), their
     * i-particles and their seconds (also in time_force). */
    long long device_calls;
    long long device_particles;
    double time_device;
    /* Copies to the GPU started early, at the first call of a host block
     * after many particles were set (see gpuirr_use_device). */
    long long device_pushes;
} gpuirr_stats;

/* Message of the last failed call in this thread ("" if none). */
GPUIRR_API const char *gpuirr_last_error(void);

/* Open for absolute indices 1..nmax and lists of up to lmax-1 members
 * (NBODY6's LMAX: list[0] is the count).  Any lmax >= 1. */
GPUIRR_API int gpuirr_open(gpuirr **out, int nmax, int lmax);
GPUIRR_API void gpuirr_close(gpuirr *g);

GPUIRR_API int gpuirr_capacity(const gpuirr *g);

/* Name of the kernel in use ("scalar", "avx2", ...). */
GPUIRR_API const char *gpuirr_kernel_name(const gpuirr *g);

/* Store particle `addr`: position x0, velocity v0, f_half = acc/2,
 * fdot_sixth = jerk/6 at epoch t0, and its mass.  1 <= addr <= capacity. */
GPUIRR_API int gpuirr_set_particle(gpuirr *g, int addr, const double x0[3],
                                   const double v0[3], const double f_half[3],
                                   const double fdot_sixth[3], double mass,
                                   double t0);

/* Store the neighbour list of `addr`: n members, absolute 1-based indices,
 * never addr itself; 0 <= n <= lmax-1.  Copied. */
GPUIRR_API int gpuirr_set_list(gpuirr *g, int addr, int n, const int *members);

/* Predict particles first..last (inclusive, 1-based) to time t:
 * x = x0 + dt (v0 + dt (f_half + dt fdot_sixth)), v = v0 + 2 dt (f_half + 1.5 dt fdot_sixth).
 * The prediction itself happens inside gpuirr_force, for the particles it
 * needs, from their records as they are then (NBODY6 sets the records of a
 * block after its forces, so this is the same thing); this call sets t. */
GPUIRR_API int gpuirr_predict_all(gpuirr *g, int first, int last, double t);

/* Predict the ni particles addr[0..ni-1] and every member of their lists to
 * t: as gpuirr_predict_all, this sets the time of the next forces. */
GPUIRR_API int gpuirr_predict_active(gpuirr *g, int ni, const int *addr, double t);

/* Irregular force from the stored lists, every i and member predicted to the
 * time of the last predict call (an error before the first one): for
 * n = 0..ni-1 and i = addr[n],
 *   acc[n] = sum_{j in L_i} m_j dx / r^3,
 *   jrk[n] = sum_{j in L_i} m_j (dv/r^3 - 3 (dx.dv) dx / r^5).
 * Output row n belongs to addr[n].  An empty list gives exactly 0; r = 0
 * pairs contribute nothing.  Precision: the reference kernel ("scalar")
 * predicts and sums in double; the SIMD kernels store x0 and t0 to 2^-40 of
 * themselves (a float and 16 bits more; t0 exactly where t0 < 128 is a
 * multiple of 2^-33), the rest in float, predict the displacement in float
 * and sum pairs in float, lanes in double. */
GPUIRR_API int gpuirr_force(gpuirr *g, int ni, const int *addr,
                            double (*acc)[3], double (*jrk)[3]);

GPUIRR_API void gpuirr_get_stats(const gpuirr *g, gpuirr_stats *out);

/* ---- the irregular force of large calls on a GPU --------------------------
 * In a large block the host's cores sum some 10^6 pairs from scattered
 * records; one GPU launch does that several times faster.  With this on, the
 * handle keeps a copy of every record and list on the GPU (a GPUNB handle of
 * its own, see gpunb_irr_open: each gpuirr_set_particle and gpuirr_set_list
 * is stored there too), and gpuirr_force computes there, in double, the
 * calls of a block whose first call has at least min_ni particles.  Every
 * call between two predict calls goes the same way as the first: NBODY6
 * takes the difference of two irregular forces of one block (the old and the
 * new list at a regular step), which must come from the same arithmetic.
 * The GPU reads the records set since its last block at its next one; where
 * a block goes to the host after some GPUIRR_DEVICE_PUSH_MIN particles were
 * set (the members of a large block, set after its force), the handle
 * starts that copy at the host block's first call, so that it runs while
 * the host computes instead of delaying the next GPU block (starting it
 * costs the caller some 20-30 us, the GPU's reading about 5 ns per record:
 * worth it from some 4000 records, NBODY6 at 64k on the H100 box).
 *
 * min_ni > 0: use the GPU for such blocks where one is usable (the CUDA
 * back-end of GPUNB with one GPU; NB6ACCEL_GPUNB=cpu or a build without CUDA
 * gives none); 0: never.  GPUIRR_DEVICE_DEFAULT: NB6ACCEL_GPUIRR_DEVICE if
 * set ("off" or 0: never; a number: min_ni), else GPUIRR_DEVICE_MIN_NI.
 * *on_device (may be NULL) = 1 if the GPU will be used.  Once per handle,
 * before the first gpuirr_set_particle.  No GPU usable is not an error. */
enum { GPUIRR_DEVICE_DEFAULT = -1, GPUIRR_DEVICE_MIN_NI = 512, GPUIRR_DEVICE_PUSH_MIN = 4096 };
GPUIRR_API int gpuirr_use_device(gpuirr *g, int min_ni, int *on_device);

/* Why the last gpuirr_use_device of this handle left the GPU unused ("" if
 * it uses one), for the caller's log. */
GPUIRR_API const char *gpuirr_device_note(const gpuirr *g);

/* ---- host helpers (no handle) -------------------------------------------- */

/* Predict x, xdot of particles js..je (1-based, inclusive) of NBODY6's arrays
 * to `time`, skipping those with tpred == time; arrays are the whole NBODY6
 * arrays (element [k-1] is particle k).  f, fdot are F = acc/2, FDOT = jerk/6.
 * Writes nothing outside js..je. */
GPUIRR_API void gpuirr_host_predict(int js, int je, double time, const double *t0,
                                    const double (*x0)[3], const double (*x0dot)[3],
                                    const double (*f)[3], const double (*fdot)[3],
                                    double (*x)[3], double (*xdot)[3], double *tpred);

/* Full force and jerk on particle i from the n particles members[0..n-1]
 * (absolute 1-based; whole NBODY6 arrays as above), from x, xdot as stored. */
GPUIRR_API void gpuirr_host_neighbour_force(int i, const double (*x)[3],
                                            const double (*xdot)[3], const double *mass,
                                            int n, const int *members,
                                            double f[3], double fdot[3]);

/* Wall-clock seconds since the process started (since the library loaded). */
GPUIRR_API double gpuirr_wall_time(void);

#ifdef __cplusplus
}
#endif
#endif /* GPUIRR_H */
