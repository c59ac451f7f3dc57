/* gpunb_cuda_state.h -- the state of the CUDA back-end of GPUNB that its
 * host files share, and the functions one of them calls in another:
 * gpunb_cuda.c (open, close, send, the table of operations),
 * gpunb_cuda_regf.c (the REGF call, the precision check and redo),
 * gpunb_cuda_resident.c (resident j-particles, the asynchronous force),
 * gpunb_cuda_irr.c (the irregular force).  Internal: every function here is
 * hidden (NB6_INTERNAL), so the split exports nothing from libgpunb. */
#ifndef GPUNB_CUDA_STATE_H
#define GPUNB_CUDA_STATE_H

#include <cuda_runtime_api.h>
#include <stdatomic.h>
#include <stddef.h>

#include "gpunb_backend.h"
#include "gpunb_profile.h"

#include "gpunb_cuda_const.h"
#include "gpunb_cuda_devices.h"
#include "gpunb_cuda_kernels.h"

/* Up to this NI one kernel does the reduction and the list gathering (the
 * call's latency counts there); larger blocks run the two side by side. */
#define FUSED_REDUCE_NI 256

/* From this NI the host's per-i loops of a call (filling the i, copying
 * results and lists out of the pinned buffer, choosing what to redo) run
 * on the OpenMP threads.  They read what the GPU wrote into host memory,
 * i.e. from DRAM, about 0.5 KiB per i with its list: on one thread about
 * 80 ns per i, most of the 100 us a call of 1024 i spent beside its
 * kernels; a team costs a few us to wake. */
#define HOST_PARALLEL_NI 256

enum precise_mode { PRECISE_AUTO, PRECISE_ALWAYS, PRECISE_NEVER };

/* Lanes: what one force launch in flight on a GPU writes.  Lanes 0 and 1
 * take the two regular forces gpunb_regf_start may keep in flight: both on
 * the GPU's streams, so the second one's force kernel runs right after the
 * first one's reduction, while the first one's gathering (some 0.2 ms of
 * a 16k-i call, bound by the writes into host memory) still runs on the
 * side stream, and each starts after the prediction it reads.  The redo
 * lane has streams of its own, of the highest priority: the PRECISE redo of
 * a collected force runs there while the other lane's force is in flight,
 * instead of behind it. */
enum { LANE_REDO = 2, GPUNB_CUDA_LANES = 3 };

typedef struct cuda_lane {
    cudaStream_t stream, side; /* side: the gathering kernel, beside the reduction */
    int own_streams;           /* the redo lane; lanes 0 and 1 use the GPU's */
    cudaEvent_t ev_force0, ev_force1; /* timing of the force kernel */
    cudaEvent_t ev_reduced;           /* stream: the reduction (fused: everything) done */
    cudaEvent_t ev_join;              /* side: the gathering done (where `gathered_aside`) */
    int gathered_aside;
    /* i, partial sums, the single launch's barrier: lane 1 uses lane 0's
     * (one stream orders them), the redo lane its own (own_scratch) */
    int own_scratch;
    float4 *d_ibuf;          /* 3 * NI_CHUNK: positions, velocities, remainders;
                              * then the same in spatial order (3 * NI_CHUNK) */
    int4 *d_iidx; /* i as j-set members (gpunb_regf_start), NI_CHUNK entries; then in spatial order */
    float *d_partial;        /* per slice and i: NPARTIAL floats               */
    int *d_sync;             /* the single launch's grid barrier: 2 ints, zero between calls */
    unsigned long long *d_nbcount; /* NI_CHUNK, zero between calls: (records << 32) + neighbours */
    int2 *d_nblist;          /* chunk * cap unordered word records (see the force kernel) */
    /* A call's i order found on this GPU (gpunb_cuda_launch_order_i): the
     * caller's i at each place (NI_CHUNK); the results go to the caller's
     * places on the GPU, so the host never needs it. */
    int *d_iorder;
    /* results: NI_CHUNK records, then the sorted lists (list_ints ints): i's at i * cap */
    unsigned char *h_out, *d_hout; /* pinned host memory, and its address on the GPU */
    long list_ints;
    /* GPU clock stamps (ns) of a small call, mapped: [0] the force kernel's
     * start, [1 + i] the end of i's gathering; stamped_ni: this call's ni,
     * 0 where the call is timed by the events */
    unsigned long long *h_stamp, *d_stamp;
    int stamped_ni;
    int busy;           /* has work in the lane's current call */
} cuda_lane;

/* A force between regf_start and regf_finish. */
typedef struct cuda_pending {
    enum { PENDING_NONE, PENDING_LAUNCHED, PENDING_DEFERRED } mode;
    int ni, lmax, limit, direct, cap;
    /* xi, vi: not filled; predicted on the host from the records
     * (absolute; only for the precision bound); fetched from the j-set
     * (about the origin, exactly what the force read). */
    enum { PX_NONE, PX_HOST, PX_FETCHED } x;
    int *jidx;
    double *h2, *dtr, (*xi)[3], (*vi)[3];
} cuda_pending;

typedef struct cuda_gpu {
    int device;
    char name[256];
    int sms;          /* multiprocessors                                  */
    int force_blocks; /* force blocks resident at once on the whole GPU   */
    int single_blocks; /* the same for the single-launch kernels; 0: no single launch */
    int pdl;           /* gathering kernel of small calls as a dependent launch */
    gpunb_cuda_inline_i inl; /* the i of a one-tile launch, passed with it */
    cudaStream_t stream, side;     /* side: the gathering kernel, beside the reduction */
    /* ev_records: the last prediction has read the host's records, the
     * bitmap and the GPU's records (predict).  records_read: a host thread
     * has seen it pass since it was recorded (records_wait), so the next
     * predict need not ask the driver again (some 2.5 us a call on the H100
     * box).  Atomic: records_wait runs on a corrector's thread. */
    cudaEvent_t ev_records;
    atomic_int records_read;
    cuda_lane lane[GPUNB_CUDA_LANES];
    /* this GPU's part of the current j-set: j0 .. j0 + nj - 1 */
    int j0, nj;
    long long ntiles;
    float4 *d_jpos, *d_jvel, *d_jlo, *h_jpos, *h_jvel, *h_jlo; /* capacity rounded to a tile */
    /* The j-set in spatial order for the fast force kernel (spatial set:
     * this j-set; sorted copies, perm: entry -> local j), the sort's keys
     * and indices (2 x capacity each) and CUB's scratch, the j-sets since
     * the last sort and the size it was for; the far test's box of each
     * quarter tile of the sorted copies (4 float4). */
    int spatial, sort_age, sort_npad;
    float4 *d_spos, *d_svel, *d_slo, *d_box;
    int *d_perm, *d_sort_idx;
    unsigned *d_sort_keys;
    void *d_sort_temp;
    size_t sort_temp_bytes;
    /* A new order as one graph (gpunb_cuda.c, launch_new_order), for a
     * j-set of order_npad and keys at order_scale cells per unit. */
    cudaGraphExec_t order;
    int order_npad;
    float order_scale;
    /* Resident j-particles (gpunb_predict): the records of this GPU's j range
     * (rec_cap records, allocated at the first predict).  Many changed: the
     * range is copied from the host's records.  A few: the prediction
     * kernel reads those from the host's mapped array, as the bitmap
     * pull_bits (mapped, a bit per record) marks them; pull_idx holds the
     * pull_n local indices it marked, to unmark them at the next predict. */
    gpunb_cuda_jrec *d_rec;
    unsigned *h_pull_bits, *d_pull_bits;
    int *pull_idx;
    int pull_n;
    long rec_cap;
    /* The moments of its records (GPUNB_CUDA_MOMENT_BLOCKS parts, mapped),
     * made a predict before the origin is chosen again; ev_moments: made. */
    gpunb_cuda_moments *h_moments, *d_moments;
    cudaEvent_t ev_moments;
    /* Irregular force (one GPU): its own stream, of the highest priority so
     * that its small launches pass a regular force in flight; the list rows
     * (capacity x lmax ints); the indices of changed records and lists, the
     * i and the results in mapped pinned memory (the kernels read and write
     * them there: no copies to order), and the device addresses of the
     * host's records and lists, which the GPU reads the changed ones from.
     * The irregular stream may overwrite the GPU's records once the last
     * prediction has read them (ev_records; records_unwaited: recorded
     * since that stream last waited for it).  ev_irr_records: its own full
     * copy of the host's records is done; ev_irr: its force is done;
     * ev_push: the copies of the last gpunb_push are done (push_pending:
     * not waited for yet, its kernels read the index arrays;
     * push_unpredicted: the regular stream has not waited for them yet). */
    cudaStream_t irr;
    cudaEvent_t ev_irr_records, ev_irr, ev_push;
    int push_pending, push_unpredicted;
    int records_unwaited;
    int *d_lists;
    int *h_rec_changed, *d_rec_changed, *h_list_changed, *d_list_changed; /* capacity each */
    const void *host_rec, *host_lists, *host_rec_dev, *host_lists_dev;
    int *h_irr_idx, *d_irr_idx;
    double *h_irr_out, *d_irr_out;
    int irr_cap;
    double2 *d_irr_pred; /* every record predicted, for large blocks (rec_cap x 4) */
    /* d_irr_pred holds records 0..irr_pred_n-1 predicted to irr_pred_t from
     * d_rec as it is now (0: nothing valid).  Whatever writes d_rec sets it
     * to 0: a call at the same time with no record changed since reuses
     * the prediction. */
    int irr_pred_n;
    double irr_pred_t;
    /* The pending i's j-set entries read back (gpunb_cuda_resident_fetch_jset_entries), mapped:
     * their local indices, and jpos, jvel, jlo of each. */
    int *h_fetch_idx, *d_fetch_idx;
    float4 *h_fetch, *d_fetch;
    int fetch_cap, fetch_n;
} cuda_gpu;

typedef struct cuda_state {
    int ngpu;
    cuda_gpu *gpu;
    int capacity_pad;
    int nj;
    int dirty; /* a call failed half-way: the counters need a reset */
    enum precise_mode precise_mode;
    /* irregular force: predict every record first (NB6ACCEL_CUDA_IRR_PREDICT) */
    enum { IRR_PREDICT_AUTO, IRR_PREDICT_ALWAYS, IRR_PREDICT_NEVER } irr_predict;
    int min_blocks; /* which compiled force variant (GPUNB_CUDA_FORCE_MIN_BLOCKS[_ALT]) */
    int waves;      /* force blocks of a large-NI call, in units of what the GPU holds at once;
                     * 0: by the GPU's j range (waves_of) */
    int single;     /* one launch for a small call (NB6ACCEL_CUDA_SINGLE_LAUNCH) */
    int pdl;        /* else the gathering kernel as a dependent launch (NB6ACCEL_CUDA_PDL):
                     * 1 or 0 as asked, -1 where each GPU that can (9.0) */
    int inline_i;   /* a one-tile launch takes its i with it (NB6ACCEL_CUDA_INLINE_I) */
    /* The j-set and each large call's i in spatial order
     * (NB6ACCEL_CUDA_SPATIAL: 1, 0, or -1 = from SPATIAL_MIN_J j and
     * SPATIAL_MIN_PAIRS interactions per GPU); the cube of the Morton keys
     * (cells per unit). */
    int spatial_mode;
    float spatial_scale;
    double origin[3], vorigin[3];
    double min_mass; /* smallest non-zero j mass (error bound of the fast kernel) */
    float4 *h_ibuf[GPUNB_CUDA_LANES]; /* pinned, 3 * NI_CHUNK per lane, shared by the GPUs */
    /* the i that the fast kernel may have served short (flags per i of a
     * chunk, then packed for a redo) */
    unsigned char *short_flag;
    double *least_a2; /* precision_bounds of a chunk */
    int *redo, *redo_j; /* redo_j: their j-set indices (resident path) */
    long long redone; /* i redone so far */
    double *r_h2, *r_dtr, (*r_xi)[3], (*r_vi)[3], (*r_acc)[3], (*r_jrk)[3], *r_pot;
    int *r_list;
    long r_list_ints;
    /* Resident j-particles: the nj the GPUs' records were laid out for (-1:
     * none yet, or a failed predict), predicts since the origin was chosen,
     * whether the GPUs are making their records' moments for the next
     * choice, and the host records and time of the last predict. */
    int rec_nj, origin_age, moments_made;
    const gpunb_jrecord *rec;
    double t_pred;
    int4 *h_iidx[GPUNB_CUDA_LANES]; /* pinned, NI_CHUNK per lane */
    int irr_lmax, irr_ni; /* irregular force: list row length; i of the launch */
    /* The forces between regf_start and regf_finish, oldest first from
     * pend_head; pend[q] runs in lane q. */
    cuda_pending pend[GPUNB_REGF_IN_FLIGHT];
    int pend_head, pend_count;
    /* NB6ACCEL_PROFILE_IRR: the host's seconds in the pieces of the
     * irregular path's copies and launches, and the GPU's time in the
     * copies and the force of each irregular call by its size (bucket b:
     * 2^(b-1) .. 2^b - 1 particles), from timing events on its stream. */
    struct {
        int on;
        double wait_push, records, lists, launch;
        long long pulls, launches;
        cudaEvent_t ev[3]; /* before the copies, after them, after the force */
        long long calls[GPUNB_PROF_BUCKETS];
        double gpu_copy_ms[GPUNB_PROF_BUCKETS], gpu_force_ms[GPUNB_PROF_BUCKETS];
        int bucket;
    } prof;
} cuda_state;

/* Predicts after which the origin is chosen again from the records (an
 * O(N) pass: the GPU's moments kernel, a launch, and the host's sum of its
 * parts, so not every block; the centre of mass moves little in that
 * time, and any origin near the cluster keeps the digits). */
#define ORIGIN_REFRESH 64

/* The spatial order: j-sets after which it is found again (the bodies move
 * little in that time, and any order is correct: only the far test's yield
 * depends on it); the j per GPU from which NB6ACCEL_CUDA_SPATIAL=auto keeps
 * it, and the interactions per GPU (NI x j) from which a call uses it.
 * H100 box, session 28, whole call in us, without / with the order:
 * NJ = 128k: NI = 128 59-62 / 68-70, 256 100-101 / 117-120, 512 169-176 /
 * 174-177, 1024 297-306 / 288-292, 2048 537-546 / 496-545; NJ = 256k:
 * NI = 128 93-94 / 94-99, 256 158-161 / 159, 512 280-284 / 261; NJ = 1M:
 * NI = 128 261-264 / 231-233.  So calls from about 2^26 interactions per
 * GPU gain.  Below 128k j the order did not pay even then (NJ = 64k, NI =
 * 1024: 183-187 / 184-192), and the Plummer run at 128k spent 0.94-0.97 s
 * in the regular force with it against 1.51 s without. */
#define SPATIAL_REFRESH 16
#define SPATIAL_MIN_J 131072
#define SPATIAL_MIN_PAIRS (1LL << 26)

#define CHECK(g, expr) GPUNB_CUDA_CHECK((g)->device, expr)

static inline long long tiles_of(long long n) { return (n + GPUNB_CUDA_TILE_J - 1) / GPUNB_CUDA_TILE_J; }

/* ---- gpunb_cuda.c ---------------------------------------------------- */

/* Pinned host memory that the GPU reads or writes in place: *host, and its
 * address on GPU g in *device. */
NB6_INTERNAL int gpunb_cuda_mapped_alloc(cuda_gpu *g, void **host, void **device, size_t bytes);

/* The address on GPU g of pinned mapped host memory at `host` (the
 * host's records or lists), asked once per array: *cached_host, *cached_dev
 * remember the last answer. */
NB6_INTERNAL int gpunb_cuda_device_address(cuda_gpu *g, const void *host, const void **cached_host,
                                           const void **cached_dev);

/* The origin of the float coordinates (s->origin, s->vorigin) and the
 * smallest non-zero mass (s->min_mass) of nj j: m[j * mstride],
 * x[j * stride + c], v[j * stride + c]. */
NB6_INTERNAL void gpunb_cuda_choose_origin(cuda_state *s, int nj, const double *m, const double *x, const double *v,
                                           size_t mstride, size_t stride);
/* The same from the set's moments (mo->w > 0). */
NB6_INTERNAL void gpunb_cuda_origin_from_moments(cuda_state *s, const gpunb_cuda_moments *mo);

/* Whether GPU g's next j-set goes to the force kernel in spatial order by
 * the order it has (no new one due): then the prediction may make the
 * sorted copies and the boxes itself. */
NB6_INTERNAL int gpunb_cuda_spatial_order_current(const cuda_state *s, const cuda_gpu *g);

/* After a new j-set on GPU g (in its stream), where it goes in spatial
 * order: the order (found again every SPATIAL_REFRESH j-sets), and unless
 * sorted_made (the prediction made them in the order that stays) the
 * sorted copies and the far test's boxes. */
NB6_INTERNAL int gpunb_cuda_jset_ready(cuda_state *s, cuda_gpu *g, int sorted_made);

/* The j-set of nj split over the GPUs in contiguous whole tiles (j0, nj, ntiles of each). */
NB6_INTERNAL void gpunb_cuda_split_jset(cuda_state *s, int nj);

/* ---- gpunb_cuda_regf.c ----------------------------------------------- */

/* A zero origin, for coordinates about the state's origin already. */
NB6_INTERNAL extern const double gpunb_cuda_zero3[3];

/* The i of a chunk as float coordinates about o, vo, in s->h_ibuf[lane]. */
NB6_INTERNAL void gpunb_cuda_regf_fill_ibuf(cuda_state *s, int lane, int ni, const double *h2, const double *dtr,
                                            const double (*xi)[3], const double (*vi)[3], const double *o,
                                            const double *vo);

/* The i of a chunk as j-set members j_index[0..ni-1], in s->h_iidx[lane]. */
NB6_INTERNAL void gpunb_cuda_regf_fill_iidx(cuda_state *s, int lane, int ni, const int *j_index, const double *h2,
                                            const double *dtr);

/* Enqueue a chunk of ni i (from h_ibuf, or with members from h_iidx) in
 * `lane` of every GPU that holds j; returns without waiting. */
NB6_INTERNAL int gpunb_cuda_regf_chunk_launch(cuda_state *s, int lane, int ni, int limit, int precise, int members);

/* Wait for the chunk of gpunb_cuda_regf_chunk_launch in `lane` and write
 * it as gpunb_regf does; with flag, also the redo flags. */
NB6_INTERNAL int gpunb_cuda_regf_chunk_collect(cuda_state *s, int lane, int ni, double (*acc)[3], double (*jrk)[3],
                                               double *pot, int lmax, int limit, int *list, int flag,
                                               double *t_force);

/* Redo with the PRECISE kernel, in `lane`, the i of a chunk that the fast
 * kernel may have served short (with j_index, as j-set members). */
NB6_INTERNAL int gpunb_cuda_regf_redo_precise(cuda_state *s, int lane, int ni, const double *h2, const double *dtr,
                                              const double (*xi)[3], const double (*vi)[3], const double *o,
                                              const double *vo, const int *j_index, double (*acc)[3],
                                              double (*jrk)[3], double *pot, int lmax, int limit, int *list,
                                              int flags_ready, double *t_force);

/* The i per launch (*chunk_out) and list buffers for that many in `lane`
 * of every GPU. */
NB6_INTERNAL int gpunb_cuda_regf_prepare_lists(cuda_state *s, int lane, int limit, int *chunk_out);

/* Whether a chunk of n i goes to the PRECISE kernel directly. */
NB6_INTERNAL int gpunb_cuda_regf_precise_directly(const cuda_state *s, int n, const double *h2);

/* The regular force of ni i with coordinates about o, vo, chunk after
 * chunk in `lane`. */
NB6_INTERNAL int gpunb_cuda_regf_all(cuda_state *s, int lane, int ni, const double *h2, const double *dtr,
                                     const double (*xi)[3], const double (*vi)[3], const double *o,
                                     const double *vo, double (*acc)[3], double (*jrk)[3], double *pot, int lmax,
                                     int limit, int *list, double *t_force, double *t_gather);

/* gpunb_backend_ops.regf. */
NB6_INTERNAL int gpunb_cuda_regf(void *state, int ni, const double *h2, const double *dtr, const double (*xi)[3],
                                 const double (*vi)[3], double (*acc)[3], double (*jrk)[3], double *pot, int lmax,
                                 int limit, int *list, double *t_force, double *t_gather);

/* ---- gpunb_cuda_resident.c ------------------------------------------- */

/* Records, pull bitmap and index list for GPU g's largest share of the capacity. */
NB6_INTERNAL int gpunb_cuda_resident_ensure_records(cuda_state *s, cuda_gpu *g);

/* Entries j[0..n-1] of the j-set as the last gpunb_predict made them, into
 * x, v about the origin. */
NB6_INTERNAL int gpunb_cuda_resident_fetch_jset_entries(cuda_state *s, int n, const int *j, double (*x)[3],
                                                        double (*v)[3]);

/* gpunb_backend_ops.alloc_records, free_records, records_wait, predict,
 * regf_start, regf_finish. */
NB6_INTERNAL void *gpunb_cuda_resident_alloc_records(void *state, size_t bytes);
NB6_INTERNAL void gpunb_cuda_resident_free_records(void *state, void *records);
NB6_INTERNAL int gpunb_cuda_resident_records_wait(void *state);
NB6_INTERNAL int gpunb_cuda_resident_predict(void *state, int nj, double t, const gpunb_jrecord *rec, int ndirty,
                                             const int *dirty, double lightest);
NB6_INTERNAL int gpunb_cuda_resident_regf_start(void *state, int ni, const int *j_index, const double *h2,
                                                const double *dtr, int lmax, int limit);
NB6_INTERNAL int gpunb_cuda_resident_regf_finish(void *state, double (*acc)[3], double (*jrk)[3], double *pot,
                                                 int *list, double *t_force, double *t_gather);

/* ---- gpunb_cuda_irr.c ------------------------------------------------ */

/* gpunb_backend_ops.irr_open, push, firr_start, firr_query, firr_finish. */
NB6_INTERNAL int gpunb_cuda_irr_open(void *state, int capacity, int lmax, int *on_device);
NB6_INTERNAL int gpunb_cuda_irr_push(void *state, const gpunb_jrecord *rec, int nrec, int ndirty, const int *dirty,
                                     const int *lists, int nlists, const int *list_index);
NB6_INTERNAL int gpunb_cuda_irr_start(void *state, int ni, const int *i_index, double t, const gpunb_jrecord *rec,
                                      int nrec, int ndirty, const int *dirty, const int *lists, int nlists,
                                      const int *list_index);
NB6_INTERNAL int gpunb_cuda_irr_query(void *state, int *done);
NB6_INTERNAL int gpunb_cuda_irr_finish(void *state, double (*acc)[3], double (*jrk)[3]);

#endif
