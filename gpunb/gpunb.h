/* gpunb.h -- regular force, jerk, potential and neighbour lists for NBODY6's
 * Ahmad-Cohen scheme (the "GPUNB" part of NBODY6-GPU), native C API.
 *
 * Units: NBODY6 scaled units, G = 1, no softening.  Every force and jerk that
 * comes out is the FULL acceleration / jerk (not NBODY6's F/2, FDOT/6).
 * Sign: acc_i = sum_j m_j (x_j - x_i) / r^3.
 *
 * A handle holds one j-particle set.  Calls on one handle are not thread-safe
 * (NBODY6 calls GPUNB from its master thread); distinct handles are independent.
 * Every function that can fail returns GPUNB_OK (0) or a status code; the
 * reason is then in gpunb_last_error() of the calling thread.
 */
#ifndef GPUNB_H
#define GPUNB_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GPUNB_API __attribute__((visibility("default")))
#else
#define GPUNB_API
#endif

/* Status codes: 0 is success; the others separate whose fault it was. */
enum gpunb_status {
    GPUNB_OK = 0,
    GPUNB_EUSAGE = 1,     /* bad argument or call order: the caller's fault   */
    GPUNB_ERESOURCE = 2,  /* out of host or device memory                     */
    GPUNB_EDEVICE = 3     /* GPU missing, failed launch, failed transfer       */
};

/* Which implementation computes the regular force. */
enum gpunb_backend_kind {
    GPUNB_BACKEND_DEFAULT = 0, /* NB6ACCEL_GPUNB=cpu|cuda|reference if set; else a build
                                  with CUDA needs a usable GPU (or NB6ACCEL_CPU_FALLBACK=1
                                  to allow the CPU), a build without uses the CPU */
    GPUNB_BACKEND_CPU = 1,     /* the fastest host back-end (SIMD + OpenMP)        */
    GPUNB_BACKEND_CUDA = 2,    /* one or more GPUs (GPU_LIST / CUDA_VISIBLE_DEVICES) */
    GPUNB_BACKEND_REFERENCE = 3 /* plain C in double precision, OpenMP: the yardstick */
};

typedef struct gpunb gpunb;

/* Counters since open, for the statistics NBODY6 users read at close. */
typedef struct gpunb_stats {
    double time_send;        /* s in gpunb_send (copy and upload of the j-set)  */
    double time_force;       /* s in the force kernels (CUDA, calls of up to 256
                              * i: by the GPU's clock from the first force block
                              * to the last gathering block, so with gathering) */
    double time_gather;      /* s in reduction, list gathering and download     */
    double time_total;       /* s in gpunb_send + gpunb_regf altogether         */
    double interactions;     /* sum over regf calls of ni * nj                  */
    long long regf_calls;
    long long send_calls;
    long long i_forced;      /* sum over regf calls of ni                       */
    long long i_redone;      /* of those, recomputed with two-float coordinates
                              * after the float kernel's error bound (CUDA)     */
    double time_irregular;   /* s in gpunb_firr_start + gpunb_firr_finish       */
    double irr_pairs;        /* sum of list lengths over irregular forces       */
    long long firr_calls;
    long long firr_on_device; /* of those, computed on the GPU                  */
    long long pushes;        /* gpunb_push calls that started a copy            */
    double time_push;        /* s in those calls (the copy itself runs apart)   */
} gpunb_stats;

/* Version of the nb6accel package, e.g. "0.1.0". */
GPUNB_API const char *gpunb_version(void);

/* Message of the last failed call in this thread ("" if none): names the
 * routine, the argument, its value and the limit. */
GPUNB_API const char *gpunb_last_error(void);

/* 1 if gpunb_open(..., kind) can run that back-end here; 0 if not, with the
 * reason in gpunb_last_error() (e.g. "no CUDA device is visible").  For
 * GPUNB_BACKEND_DEFAULT: whether the default choice would succeed. */
GPUNB_API int gpunb_backend_usable(enum gpunb_backend_kind kind);

/* Open a handle for up to `capacity` j-particles (NBODY6 passes NTOT+100). */
GPUNB_API int gpunb_open(gpunb **out, int capacity, enum gpunb_backend_kind kind);

/* Free everything; NULL is accepted and ignored. */
GPUNB_API void gpunb_close(gpunb *nb);

/* Name of the back-end in use ("cpu", "cuda") and a one-line description of the
 * hardware it runs on (threads, GPU names). */
GPUNB_API const char *gpunb_backend_name(const gpunb *nb);
GPUNB_API const char *gpunb_backend_description(const gpunb *nb);

/* Replace the j-set by nj particles: masses m[k], positions x[k][0..2],
 * velocities v[k][0..2], k = 0..nj-1.  Copied: the caller may reuse its arrays.
 * Masses may be 0 (merger ghosts); 1 <= nj <= capacity; no NaN/Inf. */
GPUNB_API int gpunb_send(gpunb *nb, int nj, const double *m,
                         const double (*x)[3], const double (*v)[3]);

/* Regular force on ni i-particles from the j-set of the last gpunb_send.
 *
 * j is a neighbour of i iff min(|dx|^2, |dx + dtr[i] dv|^2) < m_j h2[i]
 * (dx = x_j - x_i, dv = v_j - v_i; strict <).  Neighbours are left out of
 * acc, jrk and pot; r = 0 pairs contribute nothing.
 *   acc[i] = sum m_j dx / r^3;  jrk[i] = sum m_j (dv/r^3 - 3 (dx.dv) dx / r^5);
 *   pot[i] = +sum m_j / r   (positive, regular part only).  pot may be NULL.
 * list: ni columns of lmax ints; column i is list[i*lmax + 0 .. lmax-1]:
 *   list[i*lmax] = count c (self included, since x_i is bit-equal to its j entry),
 *   list[i*lmax + 1 .. c] = 0-based j indices in ascending order.
 *   If c > min(nbmax, lmax-1) the count is negative (-c) and the rest of the
 *   column and the forces of that i are unspecified; nothing is ever written
 *   past row lmax of a column.
 * No limit on ni. */
GPUNB_API int gpunb_regf(gpunb *nb, int ni, const double *h2, const double *dtr,
                         const double (*xi)[3], const double (*vi)[3],
                         double (*acc)[3], double (*jrk)[3], double *pot,
                         int lmax, int nbmax, int *list);

/* Counters since open. */
GPUNB_API void gpunb_get_stats(const gpunb *nb, gpunb_stats *out);

/* ---- Resident j-particles and an asynchronous regular force ----------------
 * In the spirit of GPUIRR: instead of predicting all j on the host and sending
 * them every block (gpunb_send), keep each j-particle's predictor state in the
 * handle (on the GPU with the CUDA back-end), update only the particles that
 * were corrected, and let the handle predict all j itself.  Then start the
 * regular force, do other work (irregular forces, correctors), and collect it.
 * Order: gpunb_set_jparticle* -> gpunb_predict -> gpunb_regf_start ->
 * gpunb_regf_finish; calling out of that order is a usage error, and while a
 * force is in flight nothing may change the j-set (send, predict), so
 * results can never be read early or computed from moved data.  Up to two
 * forces may be in flight at once (a second gpunb_regf_start before the
 * first gpunb_regf_finish; a third is refused); gpunb_regf_finish collects
 * them in the order they were started.  A large block split in chunks
 * keeps the next chunk in flight while it collects one: with the CUDA
 * back-end the GPU then computes it while the host unpacks the last. */

/* Store the predictor state of j-particle j (0-based, < capacity): position
 * x0, velocity v0, f_half = acc/2, fdot_sixth = jerk/6 at epoch t0, and mass
 * m >= 0.  Takes effect at the next gpunb_predict.  May be called from several
 * threads at once for distinct j.  The records are the memory the GPUs copy
 * or read from (pinned), so the first call after a gpunb_predict waits until
 * the GPUs have read them (usually long done).  They are written with streaming
 * stores, which x86 orders before what other threads see only at a locked
 * instruction or a fence: a thread that calls the handle's other routines
 * after other threads set records must synchronise with them through the
 * end of an OpenMP parallel region or a barrier, a mutex, or an atomic
 * read-modify-write, not through a plain release store alone. */
GPUNB_API int gpunb_set_jparticle(gpunb *nb, int j, const double x0[3], const double v0[3],
                                  const double f_half[3], const double fdot_sixth[3],
                                  double m, double t0);

/* Predict the resident j-particles 0..nj-1 (all set at least once) to time t,
 * in double precision, x = x0 + dt (v0 + dt (f_half + dt fdot_sixth)),
 * v = v0 + 2 dt (f_half + 1.5 dt fdot_sixth), and make them the j-set. */
GPUNB_API int gpunb_predict(gpunb *nb, int nj, double t);

/* Start the regular force on the ni j-set members j_index[0..ni-1] (0-based)
 * as i-particles, at their predicted positions; returns without waiting. */
GPUNB_API int gpunb_regf_start(gpunb *nb, int ni, const int *j_index, const double *h2,
                               const double *dtr, int lmax, int nbmax);

/* Wait for the oldest force in flight (of the earliest gpunb_regf_start not
 * collected yet) and write it exactly as gpunb_regf does (its ni rows of
 * acc, jrk, pot; ni columns of lmax ints). */
GPUNB_API int gpunb_regf_finish(gpunb *nb, double (*acc)[3], double (*jrk)[3], double *pot,
                                int *list);

/* ---- Irregular force over neighbour lists, from the resident records -----
 * The Ahmad-Cohen irregular force (what GPUIRR computes on the host) from
 * the same resident records, with lists the handle keeps: on the GPU with
 * the CUDA back-end and one GPU, so that the irregular force of a large
 * block costs one launch instead of a pass of the host's cores over
 * scattered memory.  Elsewhere (CPU back-ends, several GPUs) the handle
 * computes it on the host at gpunb_firr_start.  Everything in double.
 * Order: gpunb_irr_open once; gpunb_set_jparticle / gpunb_set_list as
 * particles and lists change (gpunb_push between them starts their copy to
 * the GPU early); gpunb_firr_start -> (gpunb_firr_done) -> gpunb_firr_finish.
 * Only one irregular force is in flight at a time, and it may be in flight
 * together with a regular force (gpunb_regf_start); while it is,
 * gpunb_predict, gpunb_set_jparticle and gpunb_set_list are refused (the GPU
 * reads the changed records and lists straight from the handle's memory).
 * With the CUDA back-end the irregular force runs on a stream of the highest
 * priority, so that it passes a regular force in flight. */

/* Keep neighbour lists of up to lmax - 1 members (NBODY6's LMAX; row 0 is
 * the count) for every j-particle 0..capacity-1.  Once per handle. */
GPUNB_API int gpunb_irr_open(gpunb *nb, int lmax);

/* *on_device = 1 where gpunb_firr_start computes on the GPU (the CUDA
 * back-end with one GPU), 0 where the handle computes it on the host (the
 * CPU back-ends, several GPUs), after gpunb_irr_open.  The host path is
 * plain double-precision C, several times slower than GPUIRR's SIMD
 * kernels: a caller with GPUIRR at hand asks, and keeps the irregular force
 * there where the answer is 0. */
GPUNB_API int gpunb_irr_on_device(const gpunb *nb, int *on_device);

/* Store the neighbour list of j-particle j: n members, 0-based j-particle
 * indices, each set before with gpunb_set_jparticle, never j itself; any
 * order; 0 <= n <= lmax - 1.  Copied.  May be called from several threads
 * at once for distinct j.  A particle whose list was never set has none. */
GPUNB_API int gpunb_set_list(gpunb *nb, int j, int n, const int *members);

/* Start copying the records and lists changed since the device last took
 * them, and return at once: the copy then runs while the host works, not
 * inside the next gpunb_predict or gpunb_firr_start, which find them there.
 * gpunb_set_jparticle and gpunb_set_list may go on while it runs (what they
 * change is copied again by the next call that needs it); not concurrently
 * with them, nor while an irregular force is in flight.  Does nothing where
 * the irregular force is computed on the host, and before the first
 * gpunb_predict after gpunb_irr_open.  Its host cost, like that of the
 * uploads in gpunb_predict and gpunb_firr_start, grows with what changed,
 * not with the capacity. */
GPUNB_API int gpunb_push(gpunb *nb);

/* Start the irregular force on the ni >= 1 particles j_index[0..ni-1]
 * (0-based, each set with gpunb_set_jparticle) at time t: every particle and list
 * member predicted from its record as gpunb_predict does, then
 *   acc[n] = sum_{k in L_i} m_k dx / r^3,
 *   jrk[n] = sum_{k in L_i} m_k (dv/r^3 - 3 (dx.dv) dx / r^5),
 * i = j_index[n], dx = x_k - x_i; r = 0 pairs contribute nothing.  Returns
 * without waiting on the GPU path.  Needs at least one gpunb_predict since
 * gpunb_irr_open (the GPU's records are laid out there). */
GPUNB_API int gpunb_firr_start(gpunb *nb, int ni, const int *j_index, double t);

/* Whether the irregular force of the last gpunb_firr_start is complete,
 * without waiting: *done = 1 when gpunb_firr_finish would not wait for the
 * GPU (always on the host path).  A caller that shares a block between the
 * GPU and its own host force (GPUIRR) asks after its share, to balance the
 * two.  The results are still collected by gpunb_firr_finish. */
GPUNB_API int gpunb_firr_done(gpunb *nb, int *done);

/* Wait for the irregular force of the last gpunb_firr_start; row n of acc
 * and jrk belongs to j_index[n]. */
GPUNB_API int gpunb_firr_finish(gpunb *nb, double (*acc)[3], double (*jrk)[3]);

/* Potential of every particle from all others, in double precision:
 * pot[k] = +sum_{l != k, r_kl > 0} m_l / r_kl, k = 0..n-1.  Needs no handle
 * (NBODY6 calls GPUPOT while GPUNB is closed); uses a GPU when one is usable
 * and the build has CUDA, else the host's cores. */
GPUNB_API int gpunb_potential(int n, const double *m, const double (*x)[3],
                              double *pot);

#ifdef __cplusplus
}
#endif
#endif /* GPUNB_H */
