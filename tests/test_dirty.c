/* test_dirty.c -- GPUNB's set of changed indices (gpunb/gpunb_dirty.h),
 * built into this test from its source: threads mark at once, the take lists
 * every marked index exactly once, a bound keeps the indices above it, and a
 * thread that marks several sets in turn (more than it caches) or that
 * follows a finished thread finds its log again.  POSIX threads, so that
 * .ci/run's ThreadSanitizer build checks it. */
#include "gpunb_dirty.h"
#include "testlib.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { N = 50000, THREADS = 12, SETS = 6 };

typedef struct job {
    gpunb_dirty **sets;
    int nsets;
    const unsigned char *want; /* want[j]: mark j */
    int t;                     /* this thread marks j = t, t + THREADS, ... */
    int failed;
} job;

static void *mark_some(void *arg)
{
    job *b = arg;
    for (int j = b->t; j < N; j += THREADS)
        if (b->want[j])
            for (int s = 0; s < b->nsets; s++) /* the sets in turn, each index twice */
                for (int twice = 0; twice < 2; twice++)
                    b->failed |= gpunb_dirty_mark(b->sets[s], j) != 0;
    return NULL;
}

/* THREADS threads mark want[] in every set at once. */
static int mark_parallel(gpunb_dirty **sets, int nsets, const unsigned char *want)
{
    pthread_t tid[THREADS];
    job jobs[THREADS];
    int failed = 0;
    for (int t = 0; t < THREADS; t++) {
        jobs[t] = (job){sets, nsets, want, t, 0};
        pthread_create(&tid[t], NULL, mark_some, &jobs[t]);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(tid[t], NULL);
        failed |= jobs[t].failed;
    }
    return failed;
}

/* The listed indices below `below` are exactly those of want[], each once. */
static int listed_exactly(const int *list, int count, const unsigned char *want, int below, const char *what)
{
    unsigned char *seen = calloc(N, 1);
    int expected = 0, bad = 0;
    for (int j = 0; j < below; j++)
        expected += want[j];
    for (int k = 0; k < count && !bad; k++) {
        const int j = list[k];
        if (j < 0 || j >= below || !want[j] || seen[j]) {
            printf("  %s: listed %d (%s)\n", what, j,
                   j < 0 || j >= below ? "out of range" : seen[j] ? "twice" : "never marked");
            bad = 1;
        } else {
            seen[j] = 1;
        }
    }
    free(seen);
    if (!bad && count != expected) {
        printf("  %s: %d listed, %d marked\n", what, count, expected);
        bad = 1;
    }
    return !bad;
}

static void random_marks(unsigned char *want, double fraction)
{
    for (int j = 0; j < N; j++)
        want[j] = tl_uniform() < fraction;
}

int main(void)
{
    tl_seed_from_env();
    gpunb_dirty *sets[SETS];
    unsigned char *want = malloc(N), *rest = malloc(N);
    int *list = malloc(sizeof(int) * N);
    for (int s = 0; s < SETS; s++)
        sets[s] = gpunb_dirty_new(N);

    /* Rounds of few and of most marked (the logs grow past their first
     * size), each set listed and cleared in full, by new threads each round. */
    const double fractions[] = {0.02, 0.9, 0.3, 0.0, 1.0};
    for (int r = 0; r < 5; r++) {
        random_marks(want, fractions[r]);
        TL_CHECK(!mark_parallel(sets, SETS, want), "round %d: every mark succeeded", r);
        int marked = 0;
        for (int j = 0; j < N; j++)
            marked += want[j];
        for (int s = 0; s < SETS; s++) {
            char what[64];
            snprintf(what, sizeof what, "round %d (%.0f %% marked), set %d", r, 100 * fractions[r], s);
            TL_CHECK(gpunb_dirty_count(sets[s]) == marked, "%s: %d counted, %d marked", what,
                     gpunb_dirty_count(sets[s]), marked);
            const int count = gpunb_dirty_list(sets[s], N, list);
            TL_CHECK(listed_exactly(list, count, want, N, what), "%s: each marked index listed once", what);
            gpunb_dirty_clear(sets[s], N);
            TL_CHECK(gpunb_dirty_list(sets[s], N, list) == 0, "%s: none left after clear", what);
        }
    }

    /* A bound: the indices below it are listed and cleared, those above
     * stay marked, and marks made after the take are listed next time. */
    random_marks(want, 0.1);
    TL_CHECK(!mark_parallel(sets, 1, want), "bounded: every mark succeeded");
    const int below = N / 3;
    int count = gpunb_dirty_list(sets[0], below, list);
    TL_CHECK(listed_exactly(list, count, want, below, "below N/3"), "below N/3: exactly the marked ones");
    gpunb_dirty_clear(sets[0], below);
    int above = 0;
    for (int j = below; j < N; j++)
        above += want[j];
    TL_CHECK(gpunb_dirty_count(sets[0]) == above, "below N/3: %d stay marked above it, %d counted", above,
             gpunb_dirty_count(sets[0]));
    for (int j = 0; j < below; j++)
        rest[j] = 0;
    for (int j = below; j < N; j++)
        rest[j] = want[j];
    random_marks(want, 0.05);
    TL_CHECK(!mark_parallel(sets, 1, want), "bounded: the second marks succeeded");
    for (int j = 0; j < N; j++)
        rest[j] |= want[j];
    count = gpunb_dirty_list(sets[0], N, list);
    TL_CHECK(listed_exactly(list, count, rest, N, "after the bound"),
             "after the bound: the kept ones and the new ones, each once");
    gpunb_dirty_clear(sets[0], N);

    /* Many takes in a row (clears start a new epoch, and the epochs wrap
     * after 255): an index marked once after any clear is listed, one
     * kept above a bound stays listed across a wrap, and none comes back.
     * Few marks per round, so most flags were last set many rounds ago. */
    unsigned char *expect = calloc(N, 1);
    int rounds_exact = 1, rounds_counted = 1;
    for (int r = 0; r < 700; r++) {
        random_marks(want, r % 50 == 0 ? 0.5 : 0.002);
        if (r % 100 == 7) {
            TL_CHECK(!mark_parallel(sets, 1, want), "round %d of 700: every mark succeeded", r);
        } else {
            for (int j = 0; j < N; j++)
                if (want[j])
                    rounds_exact &= gpunb_dirty_mark(sets[0], j) == 0;
        }
        int marked = 0;
        for (int j = 0; j < N; j++) {
            expect[j] |= want[j];
            marked += expect[j];
        }
        rounds_counted &= gpunb_dirty_count(sets[0]) == marked;
        const int bound = r % 3 == 0 ? N / 2 + r : N; /* every third a bounded take */
        count = gpunb_dirty_list(sets[0], bound, list);
        if (!listed_exactly(list, count, expect, bound, "epochs")) {
            printf("  round %d, bound %d\n", r, bound);
            rounds_exact = 0;
        }
        gpunb_dirty_clear(sets[0], bound);
        for (int j = 0; j < bound; j++)
            expect[j] = 0;
    }
    TL_CHECK(rounds_counted, "700 takes: the count is the marks since each index's last clear");
    TL_CHECK(rounds_exact, "700 takes (the epochs wrap twice): each list exactly the marks since the last "
                           "take, with those kept above a bound");
    gpunb_dirty_clear(sets[0], N);
    free(expect);

    /* A set made after others were freed never takes their logs. */
    gpunb_dirty_free(sets[1]);
    sets[1] = gpunb_dirty_new(N);
    TL_CHECK(gpunb_dirty_list(sets[1], N, list) == 0, "a new set starts empty");
    for (int j = 0; j < N; j++)
        want[j] = j % 7 == 0;
    TL_CHECK(!mark_parallel(sets, 2, want), "new set: every mark succeeded");
    count = gpunb_dirty_list(sets[1], N, list);
    TL_CHECK(listed_exactly(list, count, want, N, "new set"), "new set: exactly the marked ones");

    for (int s = 0; s < SETS; s++)
        gpunb_dirty_free(sets[s]);
    free(want);
    free(rest);
    free(list);
    return tl_finish("test_dirty");
}
