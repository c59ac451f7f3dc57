/* gpunb_backend.h -- the seam between the GPUNB API (gpunb_api.c,
 * gpunb_resident.c, gpunb_irregular.c: argument checks, statistics, the
 * j-set's bookkeeping) and the implementations that compute the regular
 * force (gpunb_cpu.c, cuda/...).  Internal.
 *
 * The API has validated every argument before a back-end sees it: counts are
 * within capacity, values finite, lmax >= 1.  A back-end reports failure by
 * returning gpunb_fail(status, ...). */
#ifndef GPUNB_BACKEND_H
#define GPUNB_BACKEND_H

#include "gpunb.h"
#include "nb6_common.h"

/* A resident j-particle's predictor state as the host keeps it: position,
 * velocity, acc/2 and jerk/6 at epoch t0, and mass.  One array of these is
 * both what gpunb_set_jparticle writes and what a back-end's predict copies
 * to its device as is (no packing), so a record is two whole cache lines:
 * a write touches only its own lines, and the layout is the device's. */
typedef struct gpunb_jrecord {
    double x0[3], v0[3], f_half[3], fdot_sixth[3];
    double m, t0;
    double unused[2];
} gpunb_jrecord;

/* Regular forces that gpunb_regf_start may keep in flight at once: two,
 * so that the next chunk of a large block runs on the device while the
 * host collects the last one (one in flight left the device idle for that
 * collection, some 0.4-0.6 ms per 16k-i chunk on the H100 box). */
#define GPUNB_REGF_IN_FLIGHT 2

typedef struct gpunb_backend_ops {
    const char *name; /* "reference", "cpu", "cuda" */

    /* Make the state for up to `capacity` j-particles; write a one-line
     * description of the hardware into desc (NB6_ERRMSG_LEN bytes). */
    int (*open)(void **state, int capacity, char *desc);
    void (*close)(void *state);

    /* Take a new j-set (the API already checked it). */
    int (*send)(void *state, int nj, const double *m, const double (*x)[3],
                const double (*v)[3]);

    /* Regular force exactly as gpunb_regf documents, for 1 <= ni, on the
     * j-set of the last send; `limit` = min(nbmax, lmax-1) is the largest
     * count that may be stored.  *t_force and *t_gather receive the seconds
     * spent in the kernels and in reduction/gather/download. */
    int (*regf)(void *state, int ni, const double *h2, const double *dtr,
                const double (*xi)[3], const double (*vi)[3], double (*acc)[3],
                double (*jrk)[3], double *pot, int lmax, int limit, int *list,
                double *t_force, double *t_gather);

    /* Resident j-particles and the asynchronous force (optional: when NULL,
     * gpunb_resident.c predicts on the host, sends, and computes at finish). */
    /* Host memory for the records (gpunb_jrecord, 64-byte aligned) that
     * predict may read after it returns, e.g. pinned for DMA; optional,
     * else nb6_alloc_aligned. */
    void *(*alloc_records)(void *state, size_t bytes);
    void (*free_records)(void *state, void *records);
    /* Predict records 0..nj-1 to t and make them the j-set; the ndirty
     * records dirty[] (distinct, in no order) changed since the last call;
     * dirty = NULL: any of 0..nj-1 may have changed.  lightest: the
     * smallest non-zero mass ever set (0 if none).  May go on reading rec
     * after it returns, until records_wait. */
    int (*predict)(void *state, int nj, double t, const gpunb_jrecord *rec, int ndirty,
                   const int *dirty, double lightest);
    /* Wait until predict has read the records (required with predict).
     * Called from any thread, several at once. */
    int (*records_wait)(void *state);
    /* Launch the force on j-set members j_index[0..ni-1]; do not wait.
     * Called with up to GPUNB_REGF_IN_FLIGHT - 1 forces in flight already. */
    int (*regf_start)(void *state, int ni, const int *j_index, const double *h2,
                      const double *dtr, int lmax, int limit);
    /* Wait for the oldest force in flight and write it as regf does. */
    int (*regf_finish)(void *state, double (*acc)[3], double (*jrk)[3], double *pot, int *list,
                       double *t_force, double *t_gather);
    /* The irregular force over neighbour lists (optional: when NULL, or
     * when irr_open says the host is to compute it, gpunb_irregular.c
     * computes it on the host from rec and the lists).  irr_open: the lists are rows of
     * lmax ints (count, then members) for j-particles 0..capacity-1; sets
     * *on_device to 1 when firr_start runs on the device. */
    int (*irr_open)(void *state, int capacity, int lmax, int *on_device);
    /* Bring the device's records and lists up to date (records: the ndirty
     * of 0..nrec-1 listed in dirty, or all of them when dirty is NULL;
     * lists: rows list_index[0..nlists-1] of lists; both lists distinct, in
     * no order), then launch the force on i_index[0..ni-1] at t; do not
     * wait.  A full copy of the records may go on reading rec until
     * records_wait. */
    int (*firr_start)(void *state, int ni, const int *i_index, double t, const gpunb_jrecord *rec,
                      int nrec, int ndirty, const int *dirty, const int *lists, int nlists,
                      const int *list_index);
    /* Start bringing the device's records and lists up to date as
     * firr_start does, and return.  rec and the rows may change while the
     * copy runs: a set marks them again, and the next call copies them
     * again.  Later predict and firr_start calls order their own copies
     * after this one.  Optional: when NULL, gpunb_push does nothing. */
    int (*push)(void *state, const gpunb_jrecord *rec, int nrec, int ndirty, const int *dirty,
                const int *lists, int nlists, const int *list_index);
    /* Whether the launched irregular force is complete (*done), without
     * waiting.  Optional: when NULL, gpunb_firr_done says it is. */
    int (*firr_query)(void *state, int *done);
    /* Wait for the launched irregular force and write acc, jrk (ni rows). */
    int (*firr_finish)(void *state, double (*acc)[3], double (*jrk)[3]);
    /* i-particles recomputed by a more precise kernel so far (optional). */
    long long (*i_redone)(const void *state);
} gpunb_backend_ops;

/* Back-ends compiled into this build. */
NB6_INTERNAL extern const gpunb_backend_ops gpunb_backend_cpu; /* reference, double */
#ifdef NB6ACCEL_HAVE_GPUNB_SIMD
NB6_INTERNAL extern const gpunb_backend_ops gpunb_backend_simd; /* SIMD + OpenMP */
/* Host potential in double on the SIMD units (gpunb/simd/). */
NB6_INTERNAL int gpunb_simd_potential(int n, const double *m, const double (*x)[3], double *pot);
#endif
#ifdef NB6ACCEL_HAVE_CUDA
NB6_INTERNAL extern const gpunb_backend_ops gpunb_backend_cuda;
/* Non-zero when at least one CUDA device can be used; else a reason in why. */
NB6_INTERNAL int gpunb_cuda_usable(char *why);
/* Double-precision potential on the GPU(s). */
NB6_INTERNAL int gpunb_cuda_potential(int n, const double *m, const double (*x)[3],
                                      double *pot);
#endif

/* Host potential (OpenMP, double). */
NB6_INTERNAL int gpunb_cpu_potential(int n, const double *m, const double (*x)[3],
                                     double *pot);

/* Record the message of a failure for gpunb_last_error() and return status. */
NB6_INTERNAL int gpunb_fail(int status, const char *fmt, ...) NB6_PRINTF(2, 3);

#endif
