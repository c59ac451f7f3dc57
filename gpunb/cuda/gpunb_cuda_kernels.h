/* gpunb_cuda_kernels.h -- the plain-C launch API of GPUNB's CUDA kernels.
 * Only the .cu files see nvcc; the host code (gpunb_cuda*.c) calls these.
 * Each launcher enqueues on `stream` of the current device and returns
 * cudaGetLastError() after the launch (cudaSuccess or the launch error). */
#ifndef GPUNB_CUDA_KERNELS_H
#define GPUNB_CUDA_KERNELS_H

#include <cuda_runtime_api.h>

#include "gpunb_cuda_const.h"
#include "nb6_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One force launch on one GPU.  j data: jpos[k] = (x, y, z, m) relative to
 * the send's origin, jvel[k] = (vx, vy, vz, 0), k < ntiles * TILE_J (zero
 * padding past the real j).  i data: ipos[i] = (x, y, z, h2), ivel[i] =
 * (vx, vy, vz, dtr), i < ni_tiles * BLOCK_I (padding has h2 < 0).
 * jlo/ilo = (lo_x, lo_y, lo_z, 0) are read only when precise is set.
 * Outputs: partial[(slice * NPARTIAL + c) * ni_pad + i] for nslices slices
 * (or, with slices_inner set, partial[(c * ni_pad + i) * nslices + slice]);
 * the neighbours of i as word records, each 32 consecutive j of one thread's
 * part of a tile: (first j / 32, bit k set where j = 32 * first + k is a
 * neighbour), with j = j0 + local index; nbcount[i] (zero on entry) +=
 * (records << 32) + neighbours, and the first `cap` records, unordered, in
 * nblist[i * cap + ...].  One record where a word holds several neighbours
 * (a spatially ordered j-set holds them together) keeps the recording from
 * stalling a block's warps at its tile barrier.
 * With single set (one launch for the whole call, slices_inner layout), the
 * blocks then wait for each other at a grid-wide barrier (sync: two ints,
 * zero on entry and on return) and do what gpunb_cuda_launch_gather does with
 * partial set, for i < ni, into result and compact; the launch is then a
 * cooperative one (every block resident at once, or cudaErrorCooperativeLaunchTooLarge):
 * the grid must not exceed gpunb_cuda_single_occupancy's blocks per SM times the SMs. */
typedef struct gpunb_cuda_force_args {
    int precise;    /* also use jlo/ilo: (x - origin) = hi + lo per coordinate */
    int min_blocks; /* GPUNB_CUDA_FORCE_MIN_BLOCKS or _ALT: which compiled variant */
    const float4 *jpos, *jvel, *jlo;
    long long ntiles;
    int j0;
    const float4 *ipos, *ivel, *ilo;
    /* When set, the i are j-set members instead: iidx[i] = (local j index or
     * -1 for padding, h2 and dtr as float bits, 0), read from mpos, mvel,
     * mlo (the j-set in its own order); ipos/ivel/ilo unused. */
    const int4 *iidx;
    const float4 *mpos, *mvel, *mlo;
    int ni_tiles;
    int nslices;
    int granule; /* a slice is a whole number of this many quarter tiles (1 or JWAYS) */
    /* ntiles * JWAYS / granule units split over the slices: slice s gets
     * slice_units, plus one where s < slice_extra */
    int slice_units, slice_extra;
    float *partial;
    int slices_inner; /* the partial layout the fused gathering kernel reads coalesced */
    unsigned long long *nbcount;
    int2 *nblist;
    int cap;
    /* single launch: also reduce and gather (see above) */
    int single;
    int *sync;
    int ni, limit;
    gpunb_cuda_result *result;
    int *compact;
    /* where set, block (0, 0) stores the GPU clock (%globaltimer, ns) here at its start */
    unsigned long long *stamp_start;
    /* where set (fast kernel only), the quarter tiles' boxes of
     * gpunb_cuda_launch_sorted_boxes for the far test */
    const float4 *box;
    /* where set, jpos/jvel/jlo are the j-set in spatial order: entry k is
     * local j perm[k], the word records are of entries, and the gathering
     * maps them to j (see gpunb_cuda_launch_spatial_sort) */
    const int *perm;
    /* where set (single launch), the i are in spatial order: place k's
     * results go to the caller's i = iorder[k] (gpunb_cuda_launch_order_i) */
    const int *iorder;
} gpunb_cuda_force_args;

/* The i of a one-tile launch in the kernel's parameters: v[0, BLOCK_I) as
 * ipos, v[BLOCK_I, 2 BLOCK_I) as ivel, then ilo; or, for j-set members
 * (iidx set, its address unused), the iidx records as int4 bits in
 * v[0, BLOCK_I). */
typedef struct gpunb_cuda_inline_i {
    float4 v[3 * GPUNB_CUDA_BLOCK_I];
} gpunb_cuda_inline_i;

/* With inl set (a->ni_tiles must be 1, and a->single 0), the i are read from
 * *inl, passed with the launch, instead of ipos/ivel/ilo or iidx. */
NB6_INTERNAL cudaError_t gpunb_cuda_launch_force(const gpunb_cuda_force_args *a,
                                                 const gpunb_cuda_inline_i *inl, cudaStream_t stream);

/* Sum the nslices partial records of each i < ni in double into
 * result[i].acc/jrk/pot (ni_pad = ni_tiles * BLOCK_I, the partial stride);
 * with iorder set, place i's into result[iorder[i]]. */
NB6_INTERNAL cudaError_t gpunb_cuda_launch_reduce(const float *partial, int nslices, int ni,
                                                  int ni_pad, const int *iorder, gpunb_cuda_result *result,
                                                  cudaStream_t stream);

/* For each place i < ni: read and reset nbcount[i]; if its neighbours
 * exceed limit store -neighbours, else expand its word records into the
 * sorted list at compact[out * cap ...] and store count and offset (out *
 * cap) in result[out], where out = iorder[i] with iorder set (the i in
 * spatial order, gpunb_cuda_launch_order_i), else i.  With perm set (the
 * force read the j-set in spatial order), the records are of entries, j =
 * j0 + perm[entry - j0], and limit must not exceed
 * GPUNB_CUDA_GATHER_SMEM_LIST.  With partial set (in the slices_inner layout
 * of the force kernel), also do what gpunb_cuda_launch_reduce does (one
 * launch for small ni).  With stamp_done set, stamp_done[out] = the GPU
 * clock (%globaltimer, ns) at the end of i's block, written after its
 * results are visible to the host (a host that sees the stamp may read
 * them).  With pdl set (compute capability 9.0 and later), a programmatic
 * dependent launch on the force kernel just before it in the stream
 * (nothing in between). */
NB6_INTERNAL cudaError_t gpunb_cuda_launch_gather(unsigned long long *nbcount, const int2 *nblist, int cap,
                                                  const int *perm, const int *iorder, int j0, int ni, int limit,
                                                  int *compact, gpunb_cuda_result *result, const float *partial,
                                                  int nslices, int ni_pad, unsigned long long *stamp_done,
                                                  int pdl, cudaStream_t stream);

/* The sorted copies spos[k] = jpos[perm[k]] (the same for jvel, jlo into
 * svel, slo), k < nquarters * QUARTER_J, and the bounding box of quarter
 * tile q's massive j into box[4q .. 4q + 3]: (lo x, y, z, largest mass),
 * (hi x, y, z, largest |coordinate|), (velocity lo, 0), (velocity hi,
 * largest |velocity|); a quarter without massive j gets lo = +inf,
 * hi = -inf, mass 0. */
NB6_INTERNAL cudaError_t gpunb_cuda_launch_sorted_boxes(const int *perm, const float4 *jpos, const float4 *jvel,
                                                        const float4 *jlo, int nquarters, float4 *spos,
                                                        float4 *svel, float4 *slo, float4 *box,
                                                        cudaStream_t stream);

/* The spatial order of a GPU's j-set (n a multiple of TILE_J): Morton keys of jpos[0..n-1] (scale cells per unit,
 * 1024 per axis about the origin), sorted with CUB (keys and idx hold 2n
 * each; temp: gpunb_cuda_spatial_temp_bytes(n)), then perm[k] = the local j
 * at entry k, the sorted order's j-tiles spread apart (run r to tile
 * r * stride mod n / TILE_J; stride coprime to that). */
NB6_INTERNAL cudaError_t gpunb_cuda_spatial_temp_bytes(int n, size_t *bytes);
NB6_INTERNAL cudaError_t gpunb_cuda_launch_spatial_sort(const float4 *jpos, int n, float scale, int stride,
                                                        unsigned *keys, int *idx, void *temp, size_t temp_bytes,
                                                        int *perm, cudaStream_t stream);

/* A call's ni i (1 <= ni <= NI_CHUNK, padded to ni_pad) in spatial order,
 * on the cube of the j-set's order: from ibuf (nbuf <= 3 arrays of ni_pad
 * float4, positions first) into ibuf_sorted, or where iidx is set (i as
 * j-set members, positions mpos[iidx[k].x]) from iidx into iidx_sorted;
 * iorder[k] = the caller's i at place k (device memory, ni entries).  After
 * gpunb_cuda_order_i_prepare on the device. */
NB6_INTERNAL cudaError_t gpunb_cuda_order_i_prepare(void);
NB6_INTERNAL cudaError_t gpunb_cuda_launch_order_i(int ni, int ni_pad, float scale, const float4 *ibuf,
                                                   float4 *ibuf_sorted, int nbuf, const int4 *iidx,
                                                   int4 *iidx_sorted, const float4 *mpos, int *iorder,
                                                   cudaStream_t stream);

/* Where a prediction also makes the sorted copies and boxes of
 * gpunb_cuda_launch_sorted_boxes (the spatial order perm still current). */
typedef struct gpunb_cuda_sorted_out {
    const int *perm;
    float4 *spos, *svel, *slo, *box;
} gpunb_cuda_sorted_out;

/* Predict records 0..nj-1 to time t in double and write the float j-set
 * (jpos, jvel, jlo as documented for the force kernel) relative to *o;
 * entries nj..npad-1 become zero padding.  Where pull_bits is set (device
 * address of mapped memory), record q with bit q % 32 of word q / 32 set is
 * first read from host_rec[q] (the device address of the host's records)
 * into rec[q].  Where sorted is set, also what
 * gpunb_cuda_launch_sorted_boxes(sorted->perm, jpos, jvel, jlo,
 * npad / QUARTER_J, ...) would make. */
NB6_INTERNAL cudaError_t gpunb_cuda_launch_predict(gpunb_cuda_jrec *rec, const gpunb_cuda_jrec *host_rec,
                                                   const unsigned *pull_bits, int nj, int npad, double t,
                                                   const gpunb_cuda_origin *o, float4 *jpos, float4 *jvel,
                                                   float4 *jlo, const gpunb_cuda_sorted_out *sorted,
                                                   cudaStream_t stream);

/* part[b] for b < GPUNB_CUDA_MOMENT_BLOCKS: the moments (mass-weighted) of
 * block b's share of records 0..nj-1; their sum in order of b is the set's. */
NB6_INTERNAL cudaError_t gpunb_cuda_launch_moments(const gpunb_cuda_jrec *rec, int nj, gpunb_cuda_moments *part,
                                                   cudaStream_t stream);

/* out[3k], out[3k + 1], out[3k + 2] = jpos, jvel, jlo of entry index[k] for
 * k < n: what the last prediction made of those members (the host's records
 * may have changed since). */
NB6_INTERNAL cudaError_t gpunb_cuda_launch_fetch(const float4 *jpos, const float4 *jvel, const float4 *jlo,
                                                 const int *index, int n, float4 *out, cudaStream_t stream);

/* Changed records and lists pulled by the GPU straight from the host's
 * pinned arrays (host_rec, host_lists: their device addresses): for k < n,
 * rec[index[k]] = host_rec[index[k]]; list row index[k] (lmax ints: count,
 * members) copied from host_lists. */
NB6_INTERNAL cudaError_t gpunb_cuda_launch_record_pull(const gpunb_cuda_jrec *host_rec, const int *index, int n,
                                                       gpunb_cuda_jrec *rec, cudaStream_t stream);
NB6_INTERNAL cudaError_t gpunb_cuda_launch_list_pull(const int *host_lists, int lmax, const int *index, int n,
                                                     int *lists, cudaStream_t stream);

/* The irregular force in double on i = idx[q], q < ni, at time t: i and the
 * members of its row of lists (lmax ints: count, members) predicted from
 * rec; out[6 q ..] = acc x, y, z, jerk x, y, z.  pred non-NULL (room for
 * 4 nrec double2): the force reads the records 0..nrec-1 predicted there
 * (same bits); with predict_first they are predicted there first, once
 * each, else they must already be, to t, from the records as they are. */
NB6_INTERNAL cudaError_t gpunb_cuda_launch_irregular(const gpunb_cuda_jrec *rec, int nrec, double2 *pred,
                                                     int predict_first, const int *lists, int lmax, const int *idx,
                                                     int ni, double t, double *out, cudaStream_t stream);

/* Resident force blocks per multiprocessor of the variant min_blocks (for
 * sizing the j split). */
NB6_INTERNAL cudaError_t gpunb_cuda_force_occupancy(int min_blocks, int *blocks_per_sm);

/* Resident blocks per multiprocessor of the single-launch force kernels of
 * variant min_blocks (the fewer of the fast and the PRECISE one). */
NB6_INTERNAL cudaError_t gpunb_cuda_single_occupancy(int min_blocks, int *blocks_per_sm);

/* cudaSuccess when the current device has machine code or PTX for the kernels
 * (else e.g. cudaErrorNoKernelImageForDevice). */
NB6_INTERNAL cudaError_t gpunb_cuda_probe_kernels(void);

/* Double-precision potential: pot[k - k0] = sum over l < n, r_kl > 0, of
 * m_l / r_kl for k0 <= k < k1. */
NB6_INTERNAL cudaError_t gpunb_cuda_launch_potential(const gpunb_cuda_xm *xm, int n, int k0,
                                                     int k1, double *pot, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
/* Predict record r to time t in double, NBODY6's Horner form with no
 * contraction into FMA (__dmul_rn/__dadd_rn): bit-identical to the host's
 * prediction in gpunb_handle.h and gpunb_cuda_resident.c (fp-contract off). */
static __device__ __forceinline__ void gpunb_cuda_predict_record(const gpunb_cuda_jrec *r, double t, double x[3],
                                                                 double v[3])
{
    const double dt = __dadd_rn(t, -r->t0);
#pragma unroll
    for (int k = 0; k < 3; k++) {
        const double a2 = r->f_half[k], j6 = r->fdot_sixth[k];
        /* x0 + dt (v0 + dt (a2 + dt j6)) */
        double s = __dadd_rn(a2, __dmul_rn(dt, j6));
        s = __dadd_rn(r->v0[k], __dmul_rn(dt, s));
        x[k] = __dadd_rn(r->x0[k], __dmul_rn(dt, s));
        /* v0 + (2 dt) (a2 + (1.5 dt) j6) */
        const double w = __dadd_rn(a2, __dmul_rn(__dmul_rn(1.5, dt), j6));
        v[k] = __dadd_rn(r->v0[k], __dmul_rn(__dmul_rn(2.0, dt), w));
    }
}

/* Partial-sum component c (GPUNB_CUDA_NPARTIAL order: acc x,y,z, jerk
 * x,y,z, potential) of i's total into its result: the reduction and the
 * fused gathering kernel store through this one mapping. */
static __device__ __forceinline__ void gpunb_cuda_store_component(gpunb_cuda_result *r, int c, double total)
{
    if (c < 3)
        r->acc[c] = total;
    else if (c < 6)
        r->jrk[c - 3] = total;
    else
        r->pot = total;
}
#endif
#endif
