/* gpunb_profile.h -- where the host's time in the irregular-force calls goes
 * (gpunb_push, gpunb_firr_start, gpunb_firr_finish), phase by phase and by
 * the size of the call, for NB6ACCEL_PROFILE_IRR=1.  Off by default (it
 * reads the clock between phases); printed to stderr at gpunb_close.  The
 * figures say which part of a small GPU block's ~50 us a change could cut:
 * the checks, the gathering of the changed records, the back-end's copies
 * and launches, or the wait for the GPU.  Internal. */
#ifndef GPUNB_PROFILE_H
#define GPUNB_PROFILE_H

#include <stdio.h>

#include "nb6_common.h"

enum gpunb_profile_call { GPUNB_PROF_PUSH, GPUNB_PROF_FIRR, GPUNB_PROF_CALLS };

/* Phases of a call, in order.  A push has take, back-end and clear; an
 * irregular force all five (finish: gpunb_firr_finish, waiting included). */
enum gpunb_profile_phase {
    GPUNB_PROF_CHECK,
    GPUNB_PROF_TAKE,
    GPUNB_PROF_BACKEND,
    GPUNB_PROF_CLEAR,
    GPUNB_PROF_FINISH,
    GPUNB_PROF_PHASES
};

/* Calls by size: bucket b holds sizes 2^(b-1) .. 2^b - 1 (b = 0: size 0). */
enum { GPUNB_PROF_BUCKETS = 32 };

typedef struct gpunb_profile {
    int on;
    long long calls[GPUNB_PROF_CALLS][GPUNB_PROF_BUCKETS];
    double seconds[GPUNB_PROF_CALLS][GPUNB_PROF_BUCKETS][GPUNB_PROF_PHASES];
    double records[GPUNB_PROF_CALLS][GPUNB_PROF_BUCKETS]; /* changed records sent */
    double lists[GPUNB_PROF_CALLS][GPUNB_PROF_BUCKETS];   /* changed lists sent */
    int open_bucket;                                      /* of the irregular force in flight */
} gpunb_profile;

/* The bucket of a call of `size`, and the sizes bucket b holds. */
NB6_INTERNAL int gpunb_profile_bucket(long size);
NB6_INTERNAL void gpunb_profile_bucket_sizes(int b, long *lo, long *hi);

/* Whether NB6ACCEL_PROFILE_IRR is set to something other than 0. */
NB6_INTERNAL int gpunb_profile_enabled(void);

/* Zero p; on as gpunb_profile_enabled says. */
NB6_INTERNAL void gpunb_profile_init(gpunb_profile *p);

/* One call of `size` (changed records for a push, particles for an
 * irregular force), which sent `records` records and `lists` lists; t[] the
 * clock at the phases' ends, t[0] at its start (GPUNB_PROF_PHASES + 1
 * values, unused phases repeat the last clock).  An irregular force's finish
 * comes later, with gpunb_profile_finish. */
NB6_INTERNAL void gpunb_profile_add(gpunb_profile *p, enum gpunb_profile_call call, long size, int records,
                                    int lists, const double *t);

/* The finish of the irregular force last added: `seconds` in it. */
NB6_INTERNAL void gpunb_profile_finish(gpunb_profile *p, double seconds);

/* The table, when p is on and saw a call. */
NB6_INTERNAL void gpunb_profile_print(const gpunb_profile *p, FILE *out);

#endif
