/* gpuirr_dispatch.h -- which GPUIRR kernel runs on this CPU.  Internal. */
#ifndef GPUIRR_DISPATCH_H
#define GPUIRR_DISPATCH_H

#include "gpuirr_internal.h"

/* The best kernel compiled in and supported by this CPU, or the one that
 * NB6ACCEL_SIMD names (an error if that one cannot run here). */
NB6_INTERNAL int gpuirr_choose_kernel(const gpuirr_kernel **out);

#endif
