/* ac_prefetch.c -- software prefetch for the driver's loops over the members
 * of a block.  The members are scattered over all N bodies, and the step of
 * one touches some fifteen per-body arrays in NBODY6's layout (X0(3,N),
 * F(3,N), T0(N), ...), a cache line each.  At 64k they all sit in the H100
 * box's L3, but its Xeon's L3 answers in some 40-50 ns, and a loop that
 * waits for one member's lines before it asks for the next one's spends
 * most of its time waiting (the irregular corrector took about 400 ns per
 * step on each of 16 threads there, a third of that on the dev VM's EPYC
 * with its nearer L3).  So the loops ask for the lines of the member a few
 * places ahead while they work on this one.
 *
 * Off by default since the blocks that hold most steps run in index order
 * (ac_blocks.f90): there the hardware prefetchers follow the arrays, and
 * the 15-30 prefetches per member only queued behind them (the H100 box,
 * 64k, t = 2..4: irregular corrector 1.76-1.89 s without against
 * 2.08-2.10 s with, in alternating rounds).
 *
 * The driver registers its arrays once (base address and bytes per body);
 * ac_prefetch_body(i) then issues a prefetch for write of body i's line in
 * each, two where a body's element straddles a line. */
#include <stddef.h>
#include <stdint.h>

#define AC_PREFETCH_STREAMS 32

static const char *stream_base[AC_PREFETCH_STREAMS];
static size_t stream_bytes[AC_PREFETCH_STREAMS];
static int nstreams;

void ac_prefetch_clear(void) { nstreams = 0; }

/* Returns 1 when the table is full (the stream is then not prefetched). */
int ac_prefetch_add(const void *base, int bytes_per_body)
{
    if (nstreams == AC_PREFETCH_STREAMS || bytes_per_body <= 0)
        return 1;
    stream_base[nstreams] = base;
    stream_bytes[nstreams] = (size_t)bytes_per_body;
    nstreams++;
    return 0;
}

/* Body i (1-based, as the Fortran indexes it). */
void ac_prefetch_body(int i)
{
#if defined(__GNUC__)
    for (int s = 0; s < nstreams; s++) {
        const size_t bytes = stream_bytes[s];
        const char *p = stream_base[s] + (size_t)(i - 1) * bytes;
        __builtin_prefetch(p, 1, 3);
        if (((uintptr_t)p & 63) + bytes > 64)
            __builtin_prefetch(p + bytes - 1, 1, 3);
    }
#else
    (void)i;
#endif
}
