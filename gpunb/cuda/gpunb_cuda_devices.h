/* gpunb_cuda_devices.h -- which GPUs the CUDA back-end uses, and the one
 * error path of every CUDA runtime call (GPUNB_CUDA_CHECK).  Internal. */
#ifndef GPUNB_CUDA_DEVICES_H
#define GPUNB_CUDA_DEVICES_H

#include <cuda_runtime_api.h>

#include "nb6_common.h"

/* The devices to use, as CUDA numbers them (after CUDA_VISIBLE_DEVICES has
 * hidden some): the ids in GPU_LIST (space- or comma-separated, NBODY6 users'
 * habit), else every device.  A device named twice gets two shares of the
 * j-set (this is how the tests run the several-GPU path on one GPU).  Returns how many (ids[] gets a malloc'ed array
 * the caller frees) or 0 with the reason in why (NB6_ERRMSG_LEN bytes). */
NB6_INTERNAL int gpunb_cuda_devices_select(int **ids, char *why);

/* Records a failed CUDA call for gpunb_last_error(): the expression, where,
 * the error's name and text, and the device (id and name); returns
 * GPUNB_ERESOURCE for an out-of-memory error, else GPUNB_EDEVICE. */
NB6_INTERNAL int gpunb_cuda_error(int device, const char *expr, const char *file, int line,
                                  cudaError_t err);

/* Evaluates a CUDA runtime call; on failure returns (from the enclosing
 * function) the status of gpunb_cuda_error for that device. */
#define GPUNB_CUDA_CHECK(device, expr)                                                 \
    do {                                                                               \
        cudaError_t gpunb_cuda_err_ = (expr);                                          \
        if (gpunb_cuda_err_ != cudaSuccess)                                            \
            return gpunb_cuda_error((device), #expr, __FILE__, __LINE__, gpunb_cuda_err_); \
    } while (0)

#endif
