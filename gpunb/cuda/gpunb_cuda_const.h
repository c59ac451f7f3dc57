/* gpunb_cuda_const.h -- sizes and record layouts shared by the host code
 * (gpunb_cuda*.c, plain C) and the kernels (*.cu).  Plain C, no CUDA types. */
#ifndef GPUNB_CUDA_CONST_H
#define GPUNB_CUDA_CONST_H

/* Force kernel: a block holds BLOCK_I i-particles, each served by JWAYS
 * threads that share the block's j-tile (TILE_J = BLOCK_I * JWAYS j, one
 * loaded per thread); the JWAYS partial sums of an i are added in the block,
 * so a slice of the j range per block suffices even where NI is small.  The
 * j-set on the device is padded with zero-mass particles to a multiple of the
 * tile, so the inner loop never tests a bound. */
#ifndef GPUNB_CUDA_BLOCK_I /* (overridable for the A/B of tests/gpu/ab-flags.sh) */
#define GPUNB_CUDA_BLOCK_I 64
#endif
#ifndef GPUNB_CUDA_JWAYS
#define GPUNB_CUDA_JWAYS 4
#endif
#define GPUNB_CUDA_FORCE_THREADS (GPUNB_CUDA_BLOCK_I * GPUNB_CUDA_JWAYS)
#define GPUNB_CUDA_TILE_J GPUNB_CUDA_FORCE_THREADS

/* A launch of one i-tile (NI <= BLOCK_I) takes its i in the kernel's
 * parameters instead of a copy to the GPU before it: one CUDA call less on
 * the small call's critical path (NB6ACCEL_CUDA_INLINE_I=0 turns it off). */
#ifndef GPUNB_CUDA_INLINE_I
#define GPUNB_CUDA_INLINE_I 1
#endif

/* Neighbours a force thread keeps in shared memory before it appends them
 * to its i's list in global memory (one atomic per flush). */
#ifndef GPUNB_CUDA_NB_BUFFER
#define GPUNB_CUDA_NB_BUFFER 8
#endif

/* Force blocks the compiler must fit on one SM, which caps the registers per
 * thread: 5 gives 48 registers and 40 warps per SM, the alternative 4 gives
 * 64 registers and 32 warps (NB6ACCEL_CUDA_FORCE_BLOCKS=4 picks it, for
 * comparing the two on a new GPU). */
#define GPUNB_CUDA_FORCE_MIN_BLOCKS 5
#define GPUNB_CUDA_FORCE_MIN_BLOCKS_ALT 4

/* Force blocks per SM, about, of a call with NI <= BLOCK_I (each block a
 * whole, equal number of j-tiles; see launch_gpu). */
#ifndef GPUNB_CUDA_ONE_TILE_BLOCKS_PER_SM
#define GPUNB_CUDA_ONE_TILE_BLOCKS_PER_SM 2
#endif

/* Force blocks of a call with NI > 256, in units of the blocks the GPU holds
 * at once: WAVES, or WAVES_SHORT where the GPU's j range is at most
 * WAVES_SHORT_TILES tiles, or WAVES_SPATIAL where the call uses the spatial
 * order (NB6ACCEL_CUDA_WAVES overrides all, up to the maximum).  On the
 * H100, NI = 512-2048 (session 22, three calls): 3 waves took 5 % less than
 * 2 at NJ = 32k-64k (NBODY6's 64k run), 0-3 % more at 128k-256k, the same
 * at 1M.  In spatial order the blocks' work differs (slices near the i
 * take the full path, far ones the far test's short one), and smaller
 * slices even it out (session 28, force kernel in us, rounds of one call
 * each): NJ = 128k, NI = 1024: 8 waves 203.5, 208.1, 210.3; 12 waves
 * 205.3, 206.5, 213.0; 4 waves 224.3, 219.2, 219.5 (another call: 2 waves
 * 216.4-220.7, 4 waves 208.7-213.8, 5-6 no better); NI = 2048 the same
 * with 4, 8 or 12; NJ = 1M, NI = 2048: 8 waves 2709-2711, 4 waves
 * 2733-2734, NI = 4096 (4 waves against 2) 5418-5424 against 5592-5637.
 * Up to 64k j, 8 waves rather than 3 (session 51, two rounds, force kernel
 * in us, 3 / 8 waves): NJ = 64k, NI = 1024 131.5, 129.4 / 125.4, 124.3;
 * NI = 4096 503.6, 488.5 / 481.1, 479.3; NJ = 32k, NI = 4096 278.9, 276.4 /
 * 242.0, 244.9 (12 and 16 waves about as fast as 8; 16: 463.4, 463.1 at
 * NI = 4096, NJ = 64k; in NBODY6's patched loop at 64k, three rounds in
 * alternating order, t = 2..4 took 8.95, 8.92, 7.30 s against 8 waves'
 * 7.35, 7.77, 7.91 s, session 62).  In spatial order 16 waves were no
 * better than 8 overall (session 54, four
 * alternating rounds, NI = 512-4096 x NJ = 128k-1M, means of the force
 * kernel: 16 faster by 4.6 % at 2048 x 128k, where 8's rounds spread over
 * 377-400 us, 2.7 % at 512 x 128k and 1.2 % at 1024 x 256k; slower by
 * 1.2-2.0 % at 512 x 256k, 1024 x 1M and 4096 x 256k; the rest within
 * 0.5 %).  Shorter blocks also free SMs
 * sooner for the irregular force on the priority stream, which in NBODY6's
 * patched loop runs beside the next chunk's regular force: there its GPU
 * time fell by 0.4 s of t = 0..4 at 64k, and t = 2..4 by 5 %. */
#define GPUNB_CUDA_WAVES 2
#define GPUNB_CUDA_WAVES_SHORT 8
#define GPUNB_CUDA_WAVES_SHORT_TILES 256
#define GPUNB_CUDA_WAVES_SPATIAL 8
#define GPUNB_CUDA_MAX2(a, b) ((a) > (b) ? (a) : (b))
#define GPUNB_CUDA_WAVES_MOST \
    GPUNB_CUDA_MAX2(GPUNB_CUDA_MAX2(GPUNB_CUDA_WAVES, GPUNB_CUDA_WAVES_SHORT), GPUNB_CUDA_WAVES_SPATIAL)
#define GPUNB_CUDA_MAX_WAVES 16

/* The fast kernel's floor on r^2 (see gpunb_cuda_force.cu); the host sends
 * an i to the PRECISE kernel where min_mass * h2 <= GPUNB_CUDA_H2M_SAFE. */
#define GPUNB_CUDA_R2_FLOOR 1e-24f
#define GPUNB_CUDA_H2M_SAFE 1e-20

/* The far test (gpunb_cuda_boxes.cu, gpunb_cuda_spatial.cu): where a GPU's
 * j-set is in spatial order (see SPATIAL_MIN_J in gpunb_cuda_state.h), the
 * fast force kernel reads a bounding box of each quarter tile's massive j
 * (positions, velocities, largest mass), and a warp none of whose i can
 * have a neighbour among those j computes them without the neighbour
 * criterion (Nsight Compute, NI = 1024, NJ = 128k: 35.3 instead of 44.1
 * instructions per interaction). */
#define GPUNB_CUDA_QUARTER_J (GPUNB_CUDA_TILE_J / GPUNB_CUDA_JWAYS)
#define GPUNB_CUDA_BOX_THREADS 256
/* Threads of each block that ranks a call's i in spatial order (a warp
 * per eighth of the keys). */
#define GPUNB_CUDA_ORDER_THREADS 256

/* Partial sums a force block writes per i: acc x,y,z, jerk x,y,z, potential. */
#define GPUNB_CUDA_NPARTIAL 7

/* Largest number of i-particles one launch takes; larger NI are split.  The
 * buffers for the neighbour lists scale with it (chunk * limit ints). */
#define GPUNB_CUDA_NI_CHUNK 16384

/* Reduction kernel: a block sums the components of 32 i (one per lane);
 * this many warps share the slices of those i (the warps' share and their
 * fixed order make the sums' bits: changing it changes trajectories). */
#define GPUNB_CUDA_REDUCE_WARPS 32

/* List-gathering kernel: threads per i, and the longest list it sorts in
 * shared memory (longer ones are ranked straight from global memory). */
#define GPUNB_CUDA_GATHER_THREADS 256
#define GPUNB_CUDA_GATHER_SMEM_LIST 4096

/* Single launch for a small call (NI <= 256): the force kernel also reduces
 * and gathers, after a grid-wide barrier, instead of a second kernel
 * (NB6ACCEL_CUDA_SINGLE_LAUNCH=0|1 overrides this default); and the longest
 * list it sorts in shared memory (the force's j-tile buffers).  Off: on the
 * H100 the NI = 64, NJ = 128k call took 47-51 us with it against 42-44 us
 * without (the barrier wait and the few blocks that gather, session 4). */
#define GPUNB_CUDA_SINGLE_LAUNCH 0
#define GPUNB_CUDA_SINGLE_SMEM_LIST 2044

/* Without the single launch, the small call's gathering kernel as a
 * programmatic dependent launch on the force kernel, on GPUs of compute
 * capability 9.0 and later (NB6ACCEL_CUDA_PDL=0|1 overrides this default;
 * 1 is an error on older GPUs).  On: its blocks are placed while the force
 * kernel runs; the NI = 64, NJ = 128k call on the H100 took 40.7-41.0 us
 * with it, 41.9-44.2 us without (session 4). */
#define GPUNB_CUDA_PDL 1

/* Threads per block of the double-precision potential kernel. */
#define GPUNB_CUDA_POT_THREADS 128

/* What the reduction and gathering kernels leave for the host, per i; one
 * download of ni records.  off is where i's sorted list starts in the
 * compact list array; count is negative when the list overflowed `limit`. */
typedef struct gpunb_cuda_result {
    double acc[3];
    double jrk[3];
    double pot;
    int count;
    int off;
} gpunb_cuda_result;

/* A resident j-particle's predictor state on the GPU: position, velocity,
 * acc/2, jerk/6 at epoch t0, mass.  The layout of the host's gpunb_jrecord
 * (gpunb_cuda_resident.c checks it), so records are copied without packing. */
typedef struct gpunb_cuda_jrec {
    double x0[3], v0[3], f_half[3], fdot_sixth[3];
    double m, t0;
    double unused[2];
} gpunb_cuda_jrec;

/* The origin of the float coordinates (position and velocity). */
typedef struct gpunb_cuda_origin {
    double x[3], v[3];
} gpunb_cuda_origin;

/* What the origin is chosen from (gpunb_cuda_choose_origin): of a set's j
 * with weight w (its mass, or 1 in a massless set), the sums of w, w x,
 * w v, w |x|^2 and w |v|^2, and the smallest mass, INFINITY if none. */
typedef struct gpunb_cuda_moments {
    double w, x[3], v[3], x2, v2, min_mass;
} gpunb_cuda_moments;

/* Blocks (each writes its part of the sums) and threads per block of the
 * records' moments kernel: a fixed grid, so the same records always give
 * the same sums. */
#define GPUNB_CUDA_MOMENT_BLOCKS 128
#define GPUNB_CUDA_MOMENT_THREADS 256

/* Threads per block of the prediction and record-pull kernels. */
#define GPUNB_CUDA_PREDICT_THREADS 256

/* Threads per block of the irregular-force and list-scatter kernels (a
 * warp per particle or list). */
#define GPUNB_CUDA_IRR_THREADS 128
/* A block of ni i predicts all nrec records first when ni * RATIO >= nrec. */
#define GPUNB_CUDA_IRR_PREDICT_RATIO 16

/* A particle for the double-precision potential kernel. */
typedef struct gpunb_cuda_xm {
    double x, y, z, m;
} gpunb_cuda_xm;

#endif
