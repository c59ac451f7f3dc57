/* gpunb_handle.h -- struct gpunb, the state behind a GPUNB handle, and what
 * the three files of the API share: gpunb_api.c (open/close, back-end
 * choice, errors, gpunb_send, gpunb_regf, statistics), gpunb_resident.c
 * (resident j-particles, the asynchronous regular force) and
 * gpunb_irregular.c (the irregular force over neighbour lists).  All three
 * read and write one handle, so its layout lives here.  Internal: not
 * installed, and every function declared here is hidden (NB6_INTERNAL). */
#ifndef GPUNB_HANDLE_H
#define GPUNB_HANDLE_H

#include <stdatomic.h>

#include "gpunb_backend.h"
#include "gpunb_dirty.h"
#include "gpunb_profile.h"

struct gpunb {
    const gpunb_backend_ops *ops;
    void *state;
    int capacity;
    int nj; /* size of the current j-set; 0 before the first send */
    char description[NB6_ERRMSG_LEN];
    gpunb_stats stats;

    /* Resident j-particles: per-record writes and flags only, so that
     * gpunb_set_jparticle is safe from concurrent threads.  rec is the
     * back-end's memory (pinned with CUDA): its predict copies the records
     * from there, so when many changed a set is the whole host cost of
     * sending a particle. */
    gpunb_jrecord *rec;
    unsigned char *known;
    /* The records changed since a back-end last took them (gpunb_dirty.h:
     * NBODY6 sets every corrected particle, ~10^8 calls per run at 64k,
     * from all its threads); dirty_list: their indices, for a back-end to
     * send just those when few changed.  known_prefix: how many of the
     * first records are known to be set. */
    gpunb_dirty *dirty;
    int *dirty_list;
    int known_prefix;
    /* The back-end may still be reading rec for the last predict: a set
     * waits first (records_wait), so that no record changes under a copy. */
    atomic_int records_busy;
    _Atomic double lightest; /* smallest non-zero mass set (0: none) */
    int predicted;          /* the j-set is the prediction of the records */
    double (*xp)[3], (*vp)[3], *mp; /* host prediction, when the back-end has none */

    /* The forces between gpunb_regf_start and gpunb_regf_finish: in_flight
     * of them, the oldest at pending[pending_head] (a ring).  h2, dtr, x, v:
     * the host emulation's copy of the block, computed at finish. */
    int in_flight, pending_head;
    struct gpunb_pending {
        int ni, lmax, limit, cap;
        double *h2, *dtr, (*x)[3], (*v)[3];
    } pending[GPUNB_REGF_IN_FLIGHT];

    /* Irregular force (gpunb_irr_open): list rows of irr_lmax ints (count,
     * then members) in the back-end's memory, like rec; list_dirty: the rows
     * changed since the device last took the lists.  The records' dirty
     * flags serve both gpunb_predict and gpunb_firr_start: whichever comes
     * first uploads a record, and both read the device's one copy. */
    int irr_lmax, irr_on_device, irr_predicted;
    int *lists;
    /* list_count[j] = row j's count: the statistics of a call read this
     * compact array, not one cache line per particle of the rows (a serial
     * pass of DRAM misses that cost ~0.3 ms in a block of 3k at 64k). */
    int *list_count;
    gpunb_dirty *list_dirty;
    int *list_dirty_index;
    /* The irregular force between gpunb_firr_start and gpunb_firr_finish;
     * the host path computes it at start into firr_acc, firr_jrk. */
    int firr_in_flight, firr_ni, firr_cap;
    double firr_pairs;
    int pushed; /* a gpunb_push started a copy: close waits for it */
    double (*firr_acc)[3], (*firr_jrk)[3];
    gpunb_profile profile; /* NB6ACCEL_PROFILE_IRR */
};

/* The host's predictions must be bit-identical to the GPU's (no FMA there,
 * gpunb_cuda_predict.cu): an i-particle then converts to exactly the floats
 * of its j entry.  Every function that predicts, and so may inline
 * gpunb_predict_record, is compiled without contraction. */
#if defined(__GNUC__) && !defined(__clang__)
#define NO_CONTRACTION __attribute__((optimize("fp-contract=off")))
#else
#define NO_CONTRACTION
#endif

/* gpunb_set_jparticle writes the records with streaming stores
 * (gpunb_resident.c), which later stores and copies may overtake.  The
 * routines that read records, or start copies of them, fence this
 * thread's own first (nb6_stream_fence); other threads' are ordered by the
 * synchronisation gpunb.h asks of the caller. */

/* Same Horner form as NBODY6's JPRED and gpuirr_host_predict.  Static
 * inline here rather than a hidden function of one file: gpunb_resident.c
 * and gpunb_irregular.c call it per particle and per list member, and a
 * call across files cannot be inlined, where GCC -O3 inlined it while both
 * callers lived in gpunb_api.c. */
NO_CONTRACTION static inline void gpunb_predict_record(const gpunb_jrecord *r, double t, double x[3],
                                                      double v[3])
{
    const double dt = t - r->t0;
    for (int k = 0; k < 3; k++) {
        const double a2 = r->f_half[k], j6 = r->fdot_sixth[k];
        x[k] = r->x0[k] + dt * (r->v0[k] + dt * (a2 + dt * j6));
        v[k] = r->v0[k] + 2.0 * dt * (a2 + 1.5 * dt * j6);
    }
}

/* Fail with GPUNB_EUSAGE: routine may not run while a regular force of
 * gpunb_regf_start is in flight (gpunb_api.c). */
NB6_INTERNAL int gpunb_refuse_in_flight(const char *routine);

/* The same for an irregular force of gpunb_firr_start (gpunb_irregular.c). */
NB6_INTERNAL int gpunb_refuse_irregular_in_flight(const char *routine);

/* Free everything gpunb_irr_open made, before the back-end's state goes
 * (gpunb_irregular.c). */
NB6_INTERNAL void gpunb_free_lists(gpunb *nb);

/* The changed records among 0..n-1 (their count in *ndirty; returns whether
 * they are listed in nb->dirty_list), and the clearing of those marks once
 * a back-end took them (gpunb_resident.c). */
NB6_INTERNAL int gpunb_take_dirty_records(gpunb *nb, int n, int *ndirty);
NB6_INTERNAL void gpunb_clear_dirty_records(gpunb *nb, int n);

#endif
