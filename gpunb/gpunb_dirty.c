/* gpunb_dirty.c -- marked indices as a flag each plus a log per marking
 * thread (gpunb_dirty.h). */
#include "gpunb_dirty.h"

#include <limits.h>
#include <stdatomic.h>
#include <string.h>

typedef struct dirty_log {
    const void *owner; /* the marking thread's token: the address of its cache */
    int *index;        /* the indices it marked since they were last cleared */
    int count, cap;
} dirty_log;

/* A clear starts a new epoch instead of unmarking each index: flag[j] ==
 * epoch says that j is in some log.  Unmarking the listed indices one by
 * one cost the caller ~10 us per GPU block of NBODY6's irregular force at
 * 64k (~6000 changed records: a store into a line another core last wrote
 * for each).  Epochs run 1..255; where they would wrap, every flag is reset
 * to 0 once, so a flag left from an earlier round never equals the epoch. */
struct gpunb_dirty {
    unsigned char *flag; /* flag[j] == epoch: j is in some log */
    unsigned char epoch;
    int n;
    unsigned long long id; /* never reused: a thread's cached log of a freed set never matches */
    atomic_flag lock;      /* held while a thread registers its log */
    dirty_log **logs;
    int nlogs, logs_cap;
};

/* Each thread remembers its logs of the last few sets it marked, so that a
 * mark finds its log with a compare or two; a thread that marks more sets
 * in turn (two handles) finds its log again in the set's registry.  A log
 * outlives its thread (its marks wait for the next take); a later thread
 * with the same cache address takes it over.  glibc gives a new thread a
 * finished one's memory, so the registry grows with the threads alive at
 * once, not with every thread ever made (12 logs after 50 rounds of 12
 * new threads). */
enum { CACHE_SLOTS = 4, FIRST_LOG_CAP = 1024 };

typedef struct cache_slot {
    unsigned long long id;
    dirty_log *log;
} cache_slot;

/* A shared library's thread-local variables cost a call per access in the
 * general model; initial-exec makes them a load (a mark per corrected
 * particle, 10^8 per run). */
#if defined(__GNUC__)
#define INITIAL_EXEC __attribute__((tls_model("initial-exec")))
#else
#define INITIAL_EXEC
#endif
static _Thread_local cache_slot cache[CACHE_SLOTS] INITIAL_EXEC;
static _Thread_local unsigned cache_next INITIAL_EXEC;
static atomic_ullong next_id = 1; /* 0 is an empty cache slot */

gpunb_dirty *gpunb_dirty_new(int n)
{
    gpunb_dirty *d = nb6_alloc(sizeof *d);
    if (!d)
        return NULL;
    d->n = n;
    d->flag = nb6_alloc(n > 0 ? (size_t)n : 1);
    d->epoch = 1;
    d->id = atomic_fetch_add(&next_id, 1);
    atomic_flag_clear(&d->lock);
    if (!d->flag) {
        gpunb_dirty_free(d);
        return NULL;
    }
    return d;
}

void gpunb_dirty_free(gpunb_dirty *d)
{
    if (!d)
        return;
    for (int k = 0; k < d->nlogs; k++) {
        nb6_free(d->logs[k]->index);
        nb6_free(d->logs[k]);
    }
    nb6_free(d->logs);
    nb6_free(d->flag);
    nb6_free(d);
}

static void lock(gpunb_dirty *d)
{
    while (atomic_flag_test_and_set_explicit(&d->lock, memory_order_acquire))
        ;
}

static void unlock(gpunb_dirty *d) { atomic_flag_clear_explicit(&d->lock, memory_order_release); }

/* This thread's log in d's registry, made on its first mark. */
static dirty_log *register_log(gpunb_dirty *d, const void *owner)
{
    dirty_log *log = NULL;
    lock(d);
    for (int k = 0; k < d->nlogs && !log; k++)
        if (d->logs[k]->owner == owner)
            log = d->logs[k];
    if (!log && d->nlogs == d->logs_cap) {
        const int cap = d->logs_cap ? 2 * d->logs_cap : 32;
        dirty_log **logs = nb6_alloc(sizeof *logs * (size_t)cap);
        if (logs) {
            if (d->nlogs)
                memcpy(logs, d->logs, sizeof *logs * (size_t)d->nlogs);
            nb6_free(d->logs);
            d->logs = logs;
            d->logs_cap = cap;
        }
    }
    if (!log && d->nlogs < d->logs_cap && (log = nb6_alloc(sizeof *log))) {
        log->owner = owner;
        log->cap = d->n < FIRST_LOG_CAP ? d->n : FIRST_LOG_CAP;
        log->index = nb6_alloc(sizeof(int) * (size_t)(log->cap > 0 ? log->cap : 1));
        if (log->index) {
            d->logs[d->nlogs++] = log;
        } else {
            nb6_free(log);
            log = NULL;
        }
    }
    unlock(d);
    return log;
}

static dirty_log *thread_log(gpunb_dirty *d)
{
    for (int s = 0; s < CACHE_SLOTS; s++)
        if (cache[s].id == d->id)
            return cache[s].log;
    dirty_log *log = register_log(d, cache);
    if (log) {
        cache_slot *slot = &cache[cache_next++ % CACHE_SLOTS];
        slot->id = d->id;
        slot->log = log;
    }
    return log;
}

/* Room for one more index; a log never holds more than n. */
static int grow(dirty_log *log, int n)
{
    const int cap = log->cap > n / 2 ? n : 2 * log->cap;
    int *index = nb6_alloc(sizeof(int) * (size_t)cap);
    if (!index)
        return -1;
    memcpy(index, log->index, sizeof(int) * (size_t)log->count);
    nb6_free(log->index);
    log->index = index;
    log->cap = cap;
    return 0;
}

int gpunb_dirty_mark(gpunb_dirty *d, int j)
{
    if (d->flag[j] == d->epoch)
        return 0;
    dirty_log *log = thread_log(d);
    if (!log || (log->count == log->cap && grow(log, d->n)))
        return -1;
    log->index[log->count++] = j;
    d->flag[j] = d->epoch;
    return 0;
}

int gpunb_dirty_count(gpunb_dirty *d)
{
    long long marked = 0;
    lock(d);
    for (int k = 0; k < d->nlogs; k++)
        marked += d->logs[k]->count;
    unlock(d);
    return (int)marked; /* each index once: at most n */
}

int gpunb_dirty_list(gpunb_dirty *d, int below, int *list)
{
    int count = 0;
    lock(d); /* orders this after any registration, for thread checkers */
    for (int k = 0; k < d->nlogs; k++) {
        const dirty_log *log = d->logs[k];
        if (below >= d->n) {
            memcpy(list + count, log->index, sizeof(int) * (size_t)log->count);
            count += log->count;
        } else {
            for (int q = 0; q < log->count; q++)
                if (log->index[q] < below)
                    list[count++] = log->index[q];
        }
    }
    unlock(d);
    return count;
}

void gpunb_dirty_clear(gpunb_dirty *d, int below)
{
    lock(d);
    if (d->epoch == UCHAR_MAX) {
        memset(d->flag, 0, (size_t)d->n);
        d->epoch = 0;
    }
    d->epoch++;
    /* Those at or above the bound stay in their logs, flagged anew. */
    for (int k = 0; k < d->nlogs; k++) {
        dirty_log *log = d->logs[k];
        int kept = 0;
        for (int q = 0; q < log->count && below < d->n; q++) {
            const int j = log->index[q];
            if (j >= below) {
                log->index[kept++] = j;
                d->flag[j] = d->epoch;
            }
        }
        log->count = kept;
    }
    unlock(d);
}
