/* gpunb_cuda_devices.c -- GPU selection (GPU_LIST, CUDA_VISIBLE_DEVICES) and
 * the error messages of failed CUDA calls. */
#include "config.h"
#include "gpunb_cuda_devices.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpunb_backend.h"

int gpunb_cuda_error(int device, const char *expr, const char *file, int line, cudaError_t err)
{
    char name[256] = "unknown";
    struct cudaDeviceProp prop;
    if (device >= 0 && err != cudaErrorNoDevice && err != cudaErrorInsufficientDriver &&
        cudaGetDeviceProperties(&prop, device) == cudaSuccess)
        snprintf(name, sizeof name, "%s", prop.name);
    return gpunb_fail(err == cudaErrorMemoryAllocation ? GPUNB_ERESOURCE : GPUNB_EDEVICE,
                      "gpunb (CUDA back-end): %s failed on device %d (%s) at %s:%d: %s: %s", expr,
                      device, name, file, line, cudaGetErrorName(err), cudaGetErrorString(err));
}

int gpunb_cuda_devices_select(int **ids, char *why)
{
    const char *list = nb6_getenv("GPU_LIST");
    const char *visible = nb6_getenv("CUDA_VISIBLE_DEVICES");
    int count = 0, n = 0, cap;
    cudaError_t err = cudaGetDeviceCount(&count);

    *ids = NULL;
    if (err != cudaSuccess) {
        nb6_format(why, "no usable CUDA device (cudaGetDeviceCount: %s: %s)", cudaGetErrorName(err),
                   cudaGetErrorString(err));
        cudaGetLastError(); /* not sticky: clear it */
        return 0;
    }
    if (count < 1) {
        nb6_format(why, "no CUDA device is visible (CUDA_VISIBLE_DEVICES=%s)",
                   visible ? visible : "unset");
        return 0;
    }
    cap = count;
    *ids = malloc(sizeof(int) * (size_t)cap);
    if (!*ids) {
        nb6_format(why, "out of host memory");
        return 0;
    }
    if (!list) {
        for (n = 0; n < count; n++)
            (*ids)[n] = n;
        return n;
    }
    for (const char *p = list; *p;) {
        char *end;
        long id;
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (!*p)
            break;
        errno = 0;
        id = strtol(p, &end, 10);
        if (end == p || errno || id < 0 || id >= count || (*end && *end != ' ' && *end != ',' &&
                                                           *end != '\t')) {
            nb6_format(why, "GPU_LIST=\"%s\" names a device that is not one of 0..%d "
                            "(CUDA_VISIBLE_DEVICES=%s)", list, count - 1, visible ? visible : "unset");
            goto fail;
        }
        if (n == cap) { /* a device may be named more than once: grow */
            int *more = realloc(*ids, sizeof(int) * (size_t)(2 * cap));
            if (!more) {
                nb6_format(why, "out of host memory");
                goto fail;
            }
            *ids = more;
            cap *= 2;
        }
        (*ids)[n++] = (int)id;
        p = end;
    }
    if (n == 0) {
        nb6_format(why, "GPU_LIST=\"%s\" names no device", list);
        goto fail;
    }
    return n;
fail:
    free(*ids);
    *ids = NULL;
    return 0;
}
