/* plummer_gpu_usable.c -- `make plummer` asks this which N to run by
 * default: exit 0 when GPUNB's CUDA back-end can run here (N = 16384), 1
 * when not (N = 4096 on the host's cores), saying which and why.  The Fortran
 * driver cannot ask: NBODY6's legacy routines have no such query. */
#include "config.h"
#include "gpunb.h"

#include <stdio.h>

int main(void)
{
    if (gpunb_backend_usable(GPUNB_BACKEND_CUDA)) {
        printf("plummer: a GPU is usable (GPUNB CUDA back-end)\n");
        return 0;
    }
    printf("plummer: no usable GPU (%s)\n", gpunb_last_error());
    return 1;
}
