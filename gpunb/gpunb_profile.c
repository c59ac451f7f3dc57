/* gpunb_profile.c -- phase times of the irregular-force calls by size
 * (gpunb_profile.h). */
#include "gpunb_profile.h"

#include <string.h>

int gpunb_profile_enabled(void)
{
    const char *env = nb6_getenv("NB6ACCEL_PROFILE_IRR");
    return env && strcmp(env, "0") != 0;
}

void gpunb_profile_init(gpunb_profile *p)
{
    memset(p, 0, sizeof *p);
    p->on = gpunb_profile_enabled();
}

int gpunb_profile_bucket(long size)
{
    int b = 0;
    while (size > 0 && b < GPUNB_PROF_BUCKETS - 1) {
        size >>= 1;
        b++;
    }
    return b;
}

void gpunb_profile_bucket_sizes(int b, long *lo, long *hi)
{
    *lo = b ? 1L << (b - 1) : 0;
    *hi = b ? (1L << b) - 1 : 0;
}

void gpunb_profile_add(gpunb_profile *p, enum gpunb_profile_call call, long size, int records, int lists,
                       const double *t)
{
    const int b = gpunb_profile_bucket(size);
    p->calls[call][b]++;
    for (int ph = 0; ph < GPUNB_PROF_PHASES; ph++)
        p->seconds[call][b][ph] += t[ph + 1] - t[ph];
    p->records[call][b] += records;
    p->lists[call][b] += lists;
    if (call == GPUNB_PROF_FIRR)
        p->open_bucket = b;
}

void gpunb_profile_finish(gpunb_profile *p, double seconds)
{
    p->seconds[GPUNB_PROF_FIRR][p->open_bucket][GPUNB_PROF_FINISH] += seconds;
}

void gpunb_profile_print(const gpunb_profile *p, FILE *out)
{
    static const char *const call_name[GPUNB_PROF_CALLS] = {"gpunb_push (size: changed records)",
                                                            "gpunb_firr_start + finish (size: particles)"};
    if (!p->on)
        return;
    for (int c = 0; c < GPUNB_PROF_CALLS; c++) {
        int any = 0;
        for (int b = 0; b < GPUNB_PROF_BUCKETS; b++)
            any |= p->calls[c][b] > 0;
        if (!any)
            continue;
        fprintf(out, "profile %s: us per call\n", call_name[c]);
        fprintf(out, "%21s %9s %9s %9s %9s %9s %9s %9s %9s\n", "size", "calls", "records", "lists", "check",
                "take", "back-end", "clear", "finish");
        for (int b = 0; b < GPUNB_PROF_BUCKETS; b++) {
            const long long n = p->calls[c][b];
            if (n == 0)
                continue;
            long lo, hi;
            gpunb_profile_bucket_sizes(b, &lo, &hi);
            fprintf(out, "%10ld..%10ld %9lld %9.0f %9.0f", lo, hi, n, p->records[c][b] / n, p->lists[c][b] / n);
            for (int ph = 0; ph < GPUNB_PROF_PHASES; ph++)
                fprintf(out, " %9.1f", 1e6 * p->seconds[c][b][ph] / n);
            fprintf(out, "\n");
        }
    }
}
