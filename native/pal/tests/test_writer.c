#include "test_posix_util.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "pal_internal.h"

#define PAGE 4096u

/* Content of page `page` of file `file` in round `round`: every byte depends
 * on all three, so a page landing at the wrong offset, in the wrong file or
 * from a stale round is caught. */
static uint8_t pattern(uint32_t file, uint64_t page, uint32_t round, uint32_t i)
{
    return (uint8_t)(file * 131u + page * 31u + round * 17u + i * 7u + (i >> 8));
}

static uint8_t *make_pages(uint32_t file, const uint64_t *numbers, uint32_t count,
                           uint32_t page_size, uint32_t round, pal_page_ref *refs)
{
    uint8_t *memory = malloc((size_t)count * page_size);
    CHECK(memory != NULL);
    for (uint32_t p = 0; p < count; p++) {
        uint8_t *data = memory + (size_t)p * page_size;
        for (uint32_t i = 0; i < page_size; i++)
            data[i] = pattern(file, numbers[p], round, i);
        refs[p] = (pal_page_ref){ .page_number = numbers[p], .data = data, .page_count = 1 };
    }
    return memory;
}

static void verify_page(int fd, uint32_t file, uint64_t page, uint32_t page_size, uint32_t round)
{
    uint8_t buffer[PAGE];
    CHECK(page_size <= sizeof(buffer));
    CHECK(pread(fd, buffer, page_size, (off_t)(page * page_size)) == (ssize_t)page_size);
    for (uint32_t i = 0; i < page_size; i++)
        CHECK(buffer[i] == pattern(file, page, round, i));
}

static void verify_zero_page(int fd, uint64_t page, uint32_t page_size)
{
    uint8_t buffer[PAGE];
    CHECK(pread(fd, buffer, page_size, (off_t)(page * page_size)) == (ssize_t)page_size);
    for (uint32_t i = 0; i < page_size; i++)
        CHECK(buffer[i] == 0);
}

static pal_write_item write_item(int fd, const pal_page_ref *refs, uint32_t count,
                                 uint32_t page_size)
{
    return (pal_write_item){ .fd = fd, .refs = refs, .ref_count = count,
                             .page_size = page_size, .kind = PAL_ITEM_WRITE };
}

static void scattered_and_clustered_pages_land_at_their_offsets(void)
{
    int32_t err;
    pal_writer *w;
    CHECK_OK(pal_writer_open(0, 0, &w, &err));
    int fd = open_scratch("scattered", O_RDWR | O_CREAT | O_TRUNC);

    static const uint64_t numbers[] = { 0, 1, 2, 5, 7, 8, 100, 101, 102, 103, 104, 105, 200 };
    const uint32_t count = sizeof(numbers) / sizeof(numbers[0]);
    pal_page_ref refs[sizeof(numbers) / sizeof(numbers[0])];
    uint8_t *memory = make_pages(0, numbers, count, PAGE, 0, refs);

    pal_write_item item = write_item(fd, refs, count, PAGE);
    CHECK_OK(pal_writer_submit(w, &item, 1, &err));
    CHECK(item.result == 0);
    CHECK(item.runs == 5); /* 0-2, 5, 7-8, 100-105, 200 */
    CHECK(item.bytes_written == (uint64_t)count * PAGE);

    for (uint32_t p = 0; p < count; p++)
        verify_page(fd, 0, numbers[p], PAGE, 0);
    static const uint64_t gaps[] = { 3, 4, 6, 9, 99, 106, 199 };
    for (size_t g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++)
        verify_zero_page(fd, gaps[g], PAGE);
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == 201 * (off_t)PAGE);

    pal_writer_stats stats;
    CHECK_OK(pal_writer_get_stats(w, &stats, &err));
    CHECK(stats.submits == 1 && stats.writes == 5 && stats.short_writes == 0);

    free(memory);
    CHECK(close(fd) == 0);
    CHECK_OK(pal_writer_close(w, &err));
}

static void runs_longer_than_iov_max_are_split(void)
{
    enum { SMALL_PAGE = 512, COUNT = 2 * IOV_MAX + 100 };
    int32_t err;
    pal_writer *w;
    CHECK_OK(pal_writer_open(0, 0, &w, &err));
    int fd = open_scratch("long-run", O_RDWR | O_CREAT | O_TRUNC);

    static uint64_t numbers[COUNT];
    static pal_page_ref refs[COUNT];
    for (uint32_t p = 0; p < COUNT; p++)
        numbers[p] = 10 + p;
    uint8_t *memory = make_pages(1, numbers, COUNT, SMALL_PAGE, 0, refs);

    pal_write_item item = write_item(fd, refs, COUNT, SMALL_PAGE);
    CHECK_OK(pal_writer_submit(w, &item, 1, &err));
    CHECK(item.runs == 3);
    CHECK(item.bytes_written == (uint64_t)COUNT * SMALL_PAGE);
    for (uint32_t p = 0; p < COUNT; p++)
        verify_page(fd, 1, numbers[p], SMALL_PAGE, 0);

    free(memory);
    CHECK(close(fd) == 0);
    CHECK_OK(pal_writer_close(w, &err));
}

/* The rule that cuts items into runs sizes the ops array and fills it: items
 * at its edges (runs of exactly IOV_MAX pages, one page more, a full run then a
 * gap, hundreds of one-page runs) in one call give the runs the rule says, one
 * write each, and every page lands where it belongs. */
static void runs_at_the_split_rule_edges_are_sized_and_filled_alike(void)
{
    enum { SMALL_PAGE = 512, SINGLES = 500 };
    int32_t err;
    pal_writer *w;
    CHECK_OK(pal_writer_open(0, 0, &w, &err));
    int fd = open_scratch("split-edges", O_RDWR | O_CREAT | O_TRUNC);

    static uint64_t exact[IOV_MAX], over[IOV_MAX + 1], full_then_gap[2 * IOV_MAX + 2], singles[SINGLES];
    static pal_page_ref exact_refs[IOV_MAX], over_refs[IOV_MAX + 1], gap_refs[2 * IOV_MAX + 2],
        single_refs[SINGLES];
    for (uint32_t p = 0; p < IOV_MAX; p++)
        exact[p] = p;
    for (uint32_t p = 0; p < IOV_MAX + 1; p++)
        over[p] = 10000 + p;
    for (uint32_t p = 0; p < 2 * IOV_MAX + 2; p++) /* IOV_MAX pages, a gap, IOV_MAX + 2 pages */
        full_then_gap[p] = 20000 + p + (p >= IOV_MAX ? 1 : 0);
    for (uint32_t p = 0; p < SINGLES; p++)
        singles[p] = 30000 + 2u * p;
    uint8_t *m1 = make_pages(1, exact, IOV_MAX, SMALL_PAGE, 0, exact_refs);
    uint8_t *m2 = make_pages(1, over, IOV_MAX + 1, SMALL_PAGE, 0, over_refs);
    uint8_t *m3 = make_pages(1, full_then_gap, 2 * IOV_MAX + 2, SMALL_PAGE, 0, gap_refs);
    uint8_t *m4 = make_pages(1, singles, SINGLES, SMALL_PAGE, 0, single_refs);

    pal_write_item items[4] = {
        write_item(fd, exact_refs, IOV_MAX, SMALL_PAGE),
        write_item(fd, over_refs, IOV_MAX + 1, SMALL_PAGE),
        write_item(fd, gap_refs, 2 * IOV_MAX + 2, SMALL_PAGE),
        write_item(fd, single_refs, SINGLES, SMALL_PAGE),
    };
    CHECK_OK(pal_writer_submit(w, items, 4, &err));
    CHECK(items[0].runs == 1);
    CHECK(items[1].runs == 2);
    CHECK(items[2].runs == 3); /* IOV_MAX | IOV_MAX | 2 */
    CHECK(items[3].runs == SINGLES);
    pal_writer_stats stats;
    CHECK_OK(pal_writer_get_stats(w, &stats, &err));
    CHECK(stats.writes == 1 + 2 + 3 + SINGLES);
    for (uint32_t p = 0; p < IOV_MAX; p++)
        verify_page(fd, 1, exact[p], SMALL_PAGE, 0);
    for (uint32_t p = 0; p < IOV_MAX + 1; p++)
        verify_page(fd, 1, over[p], SMALL_PAGE, 0);
    for (uint32_t p = 0; p < 2 * IOV_MAX + 2; p++)
        verify_page(fd, 1, full_then_gap[p], SMALL_PAGE, 0);
    for (uint32_t p = 0; p < SINGLES; p++)
        verify_page(fd, 1, singles[p], SMALL_PAGE, 0);

    free(m1);
    free(m2);
    free(m3);
    free(m4);
    CHECK(close(fd) == 0);
    CHECK_OK(pal_writer_close(w, &err));
}

/* A ref of several pages (an overflow run) is one iovec, and adjacent refs
 * merge into one write whatever their sizes. */
static void multi_page_refs_merge_with_their_neighbours(void)
{
    int32_t err;
    pal_writer *w;
    CHECK_OK(pal_writer_open(0, 0, &w, &err));
    int fd = open_scratch("multi-page", O_RDWR | O_CREAT | O_TRUNC);
    uint64_t numbers[] = { 10, 11, 12, 13, 14, 20, 21, 22, 23, 24 };
    pal_page_ref pages[10];
    uint8_t *memory = make_pages(4, numbers, 10, PAGE, 0, pages);
    pal_page_ref refs[] = {
        { 10, memory, 3, 0 },
        { 13, memory + 3 * PAGE, 2, 0 },
        { 20, memory + 5 * PAGE, 4, 0 },
        { 24, memory + 9 * PAGE, 1, 0 },
    };
    pal_write_item item = write_item(fd, refs, 4, PAGE);
    CHECK_OK(pal_writer_submit(w, &item, 1, &err));
    CHECK(item.result == 0 && item.runs == 2);
    CHECK(item.bytes_written == 10u * PAGE);
    for (uint32_t p = 0; p < 10; p++)
        verify_page(fd, 4, numbers[p], PAGE, 0);
    for (uint64_t gap = 15; gap < 20; gap++)
        verify_zero_page(fd, gap, PAGE);
    pal_writer_stats stats;
    CHECK_OK(pal_writer_get_stats(w, &stats, &err));
    CHECK(stats.writes == 2);
    free(memory);
    CHECK(close(fd) == 0);
    CHECK_OK(pal_writer_close(w, &err));
}

static void short_writes_are_requeued_for_the_remainder(void)
{
    int32_t err;
    pal_writer *w;
    CHECK_OK(pal_writer_open(0, 0, &w, &err));
    int fd = open_scratch("short", O_RDWR | O_CREAT | O_TRUNC);

    /* One long run and some single pages: cuts land mid-iovec and mid-page. */
    static const uint64_t numbers[] = { 3, 4, 5, 6, 7, 8, 9, 20, 40, 41 };
    const uint32_t count = sizeof(numbers) / sizeof(numbers[0]);
    pal_page_ref refs[sizeof(numbers) / sizeof(numbers[0])];
    uint8_t *memory = make_pages(2, numbers, count, PAGE, 0, refs);

    /* The fault seam cuts the first issue of each of the three runs short:
     * mid-iovec in the long run, mid-page in the others. */
    const pal_fault_rule rules[] = {
        { .kind = PAL_FAULT_DATA_WRITE, .mode = PAL_FAULT_SHORT, .nth = 1, .times = 1,
          .bytes = 3 * PAGE + 100 },
        { .kind = PAL_FAULT_DATA_WRITE, .mode = PAL_FAULT_SHORT, .nth = 2, .times = 1,
          .bytes = PAGE / 2 + 1 },
        { .kind = PAL_FAULT_DATA_WRITE, .mode = PAL_FAULT_SHORT, .nth = 3, .times = 1,
          .bytes = PAGE + 7 },
    };
    CHECK_OK(pal_fault_arm(rules, 3, &err));
    pal_write_item item = write_item(fd, refs, count, PAGE);
    CHECK_OK(pal_writer_submit(w, &item, 1, &err));
    pal_fault_stats faults;
    CHECK_OK(pal_fault_get_stats(&faults, &err));
    CHECK_OK(pal_fault_disarm(&err));
    CHECK(item.result == 0 && item.runs == 3);
    CHECK(item.bytes_written == (uint64_t)count * PAGE);
    for (uint32_t p = 0; p < count; p++)
        verify_page(fd, 2, numbers[p], PAGE, 0);

    /* Re-issues of the remainders are the same calls: three, all cut once. */
    CHECK(faults.calls[PAL_FAULT_DATA_WRITE] == 3 && faults.fired[PAL_FAULT_DATA_WRITE] == 3);
    pal_writer_stats stats;
    CHECK_OK(pal_writer_get_stats(w, &stats, &err));
    CHECK(stats.short_writes == 3);
    CHECK(stats.writes == 3 + 3);

    free(memory);
    CHECK(close(fd) == 0);
    CHECK_OK(pal_writer_close(w, &err));
}

static void syncs_complete_after_the_writes_of_their_call(void)
{
    int32_t err;
    pal_writer *w;
    CHECK_OK(pal_writer_open(0, 0, &w, &err));
    int fd = open_scratch("sync", O_RDWR | O_CREAT | O_TRUNC);

    static const uint64_t numbers[] = { 0, 2, 4 };
    pal_page_ref refs[3];
    uint8_t *memory = make_pages(3, numbers, 3, PAGE, 0, refs);
    pal_write_item items[] = {
        write_item(fd, refs, 3, PAGE),
        { .fd = fd, .kind = PAL_ITEM_FDATASYNC },
        write_item(fd, refs, 1, PAGE),
        { .fd = fd, .kind = PAL_ITEM_FSYNC },
    };
    CHECK_OK(pal_writer_submit(w, items, 4, &err));
    for (int i = 0; i < 4; i++)
        CHECK(items[i].result == 0);
    for (uint32_t p = 0; p < 3; p++)
        verify_page(fd, 3, numbers[p], PAGE, 0);

    pal_writer_stats stats;
    CHECK_OK(pal_writer_get_stats(w, &stats, &err));
    CHECK(stats.syncs == 2 && stats.writes == 4);

    free(memory);
    CHECK(close(fd) == 0);
    CHECK_OK(pal_writer_close(w, &err));
}

static void item_errors_are_reported_per_item(void)
{
    int32_t err;
    pal_writer *w;
    CHECK_OK(pal_writer_open(0, 0, &w, &err));
    int good = open_scratch("errors", O_RDWR | O_CREAT | O_TRUNC);
    int read_only = open_scratch("errors", O_RDONLY);
    int pipe_fds[2];
    CHECK(pipe(pipe_fds) == 0);

    static const uint64_t numbers[] = { 1 };
    pal_page_ref refs[1];
    uint8_t *memory = make_pages(4, numbers, 1, PAGE, 0, refs);
    pal_write_item items[] = {
        write_item(read_only, refs, 1, PAGE),
        write_item(good, refs, 1, PAGE),
        { .fd = pipe_fds[0], .kind = PAL_ITEM_FSYNC },
    };
    err = 0;
    CHECK(pal_writer_submit(w, items, 3, &err) == PAL_E_SYSTEM);
    CHECK(items[0].result == EBADF && err == EBADF);
    CHECK(items[1].result == 0 && items[1].bytes_written == PAGE);
    CHECK(items[2].result == EINVAL); /* fsync on a pipe */
    verify_page(good, 4, 1, PAGE, 0);

    free(memory);
    CHECK(close(pipe_fds[0]) == 0 && close(pipe_fds[1]) == 0);
    CHECK(close(good) == 0 && close(read_only) == 0);
    CHECK_OK(pal_writer_close(w, &err));
}

static void invalid_items_are_rejected_before_any_io(void)
{
    int32_t err;
    pal_writer *w;
    CHECK_OK(pal_writer_open(0, 0, &w, &err));
    int fd = open_scratch("invalid", O_RDWR | O_CREAT | O_TRUNC);
    uint8_t page[PAGE] = { 1 };
    pal_page_ref unsorted[] = { { 5, page, 1, 0 }, { 4, page, 1, 0 } };
    pal_page_ref duplicate[] = { { 5, page, 1, 0 }, { 5, page, 1, 0 } };
    pal_page_ref overlapping[] = { { 5, page, 2, 0 }, { 6, page, 1, 0 } };
    pal_page_ref empty_run[] = { { 5, page, 0, 0 } };
    pal_page_ref null_data[] = { { 5, NULL, 1, 0 } };
    pal_page_ref too_far[] = { { UINT64_MAX / 2, page, 1, 0 } };
    pal_page_ref run_too_far[] = { { (uint64_t)INT64_MAX / PAGE - 1, page, 2, 0 } };
    pal_write_item bad[] = {
        write_item(fd, unsorted, 2, PAGE),
        write_item(fd, duplicate, 2, PAGE),
        write_item(fd, overlapping, 2, PAGE),
        write_item(fd, empty_run, 1, PAGE),
        write_item(fd, null_data, 1, PAGE),
        write_item(fd, too_far, 1, PAGE),
        write_item(fd, run_too_far, 1, PAGE),
        write_item(fd, unsorted, 1, 0),
        write_item(-1, unsorted, 1, PAGE),
        { .fd = fd, .kind = 99 },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err = 0;
        CHECK(pal_writer_submit(w, &bad[i], 1, &err) == PAL_E_INVALID);
        CHECK(err == EINVAL);
    }
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == 0);
    CHECK_OK(pal_writer_submit(w, NULL, 0, &err)); /* nothing to do */
    pal_writer *unopened = NULL;
    CHECK(pal_writer_open(0, 0x80, &unopened, &err) == PAL_E_INVALID && unopened == NULL);
    CHECK(close(fd) == 0);
    CHECK_OK(pal_writer_close(w, &err));
}

static void a_full_ring_waits_for_completions(void)
{
    enum { COUNT = 300 };
    int32_t err;
    pal_writer *w;
    /* Depth 2: the wake read plus one op fill the SQ, so 150 runs must wait. */
    CHECK_OK(pal_writer_open(2, 0, &w, &err));
    int fd = open_scratch("full-ring", O_RDWR | O_CREAT | O_TRUNC);
    static uint64_t numbers[COUNT];
    static pal_page_ref refs[COUNT];
    for (uint32_t p = 0; p < COUNT; p++)
        numbers[p] = 2u * p; /* every other page: one run each */
    uint8_t *memory = make_pages(5, numbers, COUNT, PAGE, 0, refs);
    pal_write_item item = write_item(fd, refs, COUNT, PAGE);
    CHECK_OK(pal_writer_submit(w, &item, 1, &err));
    CHECK(item.runs == COUNT);
    for (uint32_t p = 0; p < COUNT; p++)
        verify_page(fd, 5, numbers[p], PAGE, 0);
    pal_writer_stats stats;
    CHECK_OK(pal_writer_get_stats(w, &stats, &err));
    CHECK(stats.ring_full_waits > 0);
    free(memory);
    CHECK(close(fd) == 0);
    CHECK_OK(pal_writer_close(w, &err));
}

static void low_priority_is_applied_by_the_worker(void)
{
    int32_t err;
    pal_writer *w;
    CHECK_OK(pal_writer_open(0, PAL_WRITER_LOW_PRIORITY, &w, &err));
    int fd = open_scratch("priority", O_RDWR | O_CREAT | O_TRUNC);
    static const uint64_t numbers[] = { 0, 1 };
    pal_page_ref refs[2];
    uint8_t *memory = make_pages(6, numbers, 2, PAGE, 0, refs);
    pal_write_item item = write_item(fd, refs, 2, PAGE);
    CHECK_OK(pal_writer_submit(w, &item, 1, &err));
    verify_page(fd, 6, 1, PAGE, 0);
    pal_writer_stats stats;
    CHECK_OK(pal_writer_get_stats(w, &stats, &err));
    CHECK(stats.flags == PAL_WRITER_LOW_PRIORITY);
    CHECK(stats.priority_error == 0);
    free(memory);
    CHECK(close(fd) == 0);
    CHECK_OK(pal_writer_close(w, &err));
}

/* ---- many threads, many files ------------------------------------------------ */

enum { THREADS = 8, FILES_PER_THREAD = 4, ROUNDS = 12, FILE_PAGES = 64 };

typedef struct worker_arg {
    pal_writer *writer;
    uint32_t index;
    int fds[FILES_PER_THREAD];
    /* Round that last wrote each page, or -1. */
    int last_round[FILES_PER_THREAD][FILE_PAGES];
} worker_arg;

static void *submitter(void *p)
{
    worker_arg *arg = p;
    unsigned seed = 1234u + arg->index;
    for (uint32_t round = 0; round < ROUNDS; round++) {
        pal_write_item items[FILES_PER_THREAD * 2];
        pal_page_ref refs[FILES_PER_THREAD][FILE_PAGES];
        uint64_t numbers[FILES_PER_THREAD][FILE_PAGES];
        uint8_t *memory[FILES_PER_THREAD];
        uint32_t item_count = 0;
        for (uint32_t f = 0; f < FILES_PER_THREAD; f++) {
            uint32_t count = 0;
            for (uint32_t page = 0; page < FILE_PAGES; page++)
                if (rand_r(&seed) % 3 != 0) /* mixes runs and gaps */
                    numbers[f][count++] = page;
            uint32_t file = arg->index * FILES_PER_THREAD + f;
            memory[f] = make_pages(file, numbers[f], count, PAGE, round, refs[f]);
            for (uint32_t i = 0; i < count; i++)
                arg->last_round[f][numbers[f][i]] = (int)round;
            items[item_count++] = write_item(arg->fds[f], refs[f], count, PAGE);
            if (round % 4 == 3)
                items[item_count++] = (pal_write_item){ .fd = arg->fds[f],
                                                        .kind = PAL_ITEM_FDATASYNC };
        }
        int32_t err;
        CHECK_OK(pal_writer_submit(arg->writer, items, item_count, &err));
        for (uint32_t f = 0; f < FILES_PER_THREAD; f++)
            free(memory[f]);
    }
    return NULL;
}

static void many_threads_and_files_share_the_ring(void)
{
    int32_t err;
    pal_writer *w;
    /* A small ring so that concurrent submitters also contend for space. */
    CHECK_OK(pal_writer_open(16, PAL_WRITER_LOW_PRIORITY, &w, &err));
    static worker_arg args[THREADS];
    pthread_t threads[THREADS];
    for (uint32_t t = 0; t < THREADS; t++) {
        args[t].writer = w;
        args[t].index = t;
        memset(args[t].last_round, -1, sizeof(args[t].last_round));
        for (uint32_t f = 0; f < FILES_PER_THREAD; f++) {
            char name[64];
            snprintf(name, sizeof(name), "mt-%u-%u", t, f);
            args[t].fds[f] = open_scratch(name, O_RDWR | O_CREAT | O_TRUNC);
        }
    }
    for (uint32_t t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, submitter, &args[t]) == 0);
    for (uint32_t t = 0; t < THREADS; t++)
        CHECK(pthread_join(threads[t], NULL) == 0);

    for (uint32_t t = 0; t < THREADS; t++) {
        for (uint32_t f = 0; f < FILES_PER_THREAD; f++) {
            uint32_t file = t * FILES_PER_THREAD + f;
            for (uint32_t page = 0; page < FILE_PAGES; page++) {
                int round = args[t].last_round[f][page];
                if (round >= 0)
                    verify_page(args[t].fds[f], file, page, PAGE, (uint32_t)round);
            }
            CHECK(close(args[t].fds[f]) == 0);
        }
    }
    pal_writer_stats stats;
    CHECK_OK(pal_writer_get_stats(w, &stats, &err));
    CHECK(stats.submits == THREADS * ROUNDS);
    printf("     writes %llu, syncs %llu, ring-full waits %llu\n",
           (unsigned long long)stats.writes, (unsigned long long)stats.syncs,
           (unsigned long long)stats.ring_full_waits);
    CHECK_OK(pal_writer_close(w, &err));
}

int main(int argc, char **argv)
{
    scratch_init(argc, argv, "writer");
    RUN(scattered_and_clustered_pages_land_at_their_offsets);
    RUN(runs_longer_than_iov_max_are_split);
    RUN(runs_at_the_split_rule_edges_are_sized_and_filled_alike);
    RUN(multi_page_refs_merge_with_their_neighbours);
    RUN(short_writes_are_requeued_for_the_remainder);
    RUN(syncs_complete_after_the_writes_of_their_call);
    RUN(item_errors_are_reported_per_item);
    RUN(invalid_items_are_rejected_before_any_io);
    RUN(a_full_ring_waits_for_completions);
    RUN(low_priority_is_applied_by_the_worker);
    RUN(many_threads_and_files_share_the_ring);
    scratch_cleanup();
    return 0;
}
