/* The runtime fault seam (src/fault.c and its call sites): counting calls per
 * kind, failing the nth, partial writes that report an error, short writes the
 * layer must continue byte-exact, and syncs that fail once. */
#include "test_posix_util.h"

#include <stdint.h>
#include <stdlib.h>

#include "pal_internal.h"

#define ALIGN PAL_JOURNAL_ALIGNMENT
#define PAGE 4096u

static pal_fault_rule rule(uint32_t kind, uint32_t mode, uint64_t nth, int32_t error,
                           uint64_t bytes)
{
    return (pal_fault_rule){ .kind = kind, .mode = mode, .nth = nth, .times = 1,
                             .error = error, .bytes = bytes };
}

static void arm(const pal_fault_rule *rules, uint32_t count)
{
    int32_t err;
    CHECK_OK(pal_fault_arm(rules, count, &err));
}

static pal_fault_stats disarm(void)
{
    int32_t err;
    pal_fault_stats stats;
    CHECK_OK(pal_fault_get_stats(&stats, &err));
    CHECK_OK(pal_fault_disarm(&err));
    return stats;
}

/* Byte i of block `seed`: varies within a block and between blocks. */
static uint8_t pattern(uint32_t seed, uint64_t i)
{
    return (uint8_t)(seed * 37u + i * 13u + (i >> 9) + 1u);
}

static uint8_t *patterned(size_t size, uint32_t seed)
{
    uint8_t *p = NULL;
    CHECK(posix_memalign((void **)&p, ALIGN, size) == 0);
    for (size_t i = 0; i < size; i++)
        p[i] = pattern(seed, i);
    return p;
}

static uint8_t *read_file(const char *path, uint64_t offset, size_t length)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    uint8_t *buffer = malloc(length);
    CHECK(buffer != NULL);
    CHECK(pread(fd, buffer, length, (off_t)offset) == (ssize_t)length);
    CHECK(close(fd) == 0);
    return buffer;
}

/* [offset, offset + length) of the file holds the pattern `seed` from byte `from` of it. */
static void check_pattern(const char *path, uint64_t offset, size_t length, uint32_t seed,
                          uint64_t from)
{
    uint8_t *back = read_file(path, offset, length);
    for (size_t i = 0; i < length; i++)
        CHECK(back[i] == pattern(seed, from + i));
    free(back);
}

static void check_zeros(const char *path, uint64_t offset, size_t length)
{
    uint8_t *back = read_file(path, offset, length);
    for (size_t i = 0; i < length; i++)
        CHECK(back[i] == 0);
    free(back);
}

static off_t file_size(const char *path)
{
    struct stat st;
    CHECK(stat(path, &st) == 0);
    return st.st_size;
}

static pal_journal *open_journal(const char *name, char *path, uint32_t *mode)
{
    scratch_path(path, name);
    int32_t err;
    pal_journal *j;
    CHECK_OK(pal_journal_open(path, PAL_JOURNAL_CREATE, &j, mode, &err));
    CHECK_OK(pal_journal_presize(j, 64 * ALIGN, &err));
    return j;
}

/* ---- arming -------------------------------------------------------------- */

static void invalid_rules_are_refused_and_leave_the_seam_disarmed(void)
{
    int32_t err = 0;
    const pal_fault_rule bad[] = {
        rule(PAL_FAULT_KIND_COUNT, PAL_FAULT_ERROR, 1, EIO, 0),     /* no such kind */
        rule(PAL_FAULT_JOURNAL_WRITE, 0, 1, EIO, 0),                /* no mode */
        rule(PAL_FAULT_JOURNAL_WRITE, 9, 1, EIO, 0),                /* unknown mode */
        rule(PAL_FAULT_JOURNAL_WRITE, PAL_FAULT_ERROR, 0, EIO, 0),  /* nth is 1-based */
        rule(PAL_FAULT_JOURNAL_WRITE, PAL_FAULT_ERROR, 1, 0, 0),    /* no error */
        rule(PAL_FAULT_DATA_SYNC, PAL_FAULT_PARTIAL, 1, EIO, 10),   /* a sync writes nothing */
        rule(PAL_FAULT_DIRECTORY_SYNC, PAL_FAULT_SHORT, 1, 0, 10),
        rule(PAL_FAULT_DATA_WRITE, PAL_FAULT_PARTIAL, 1, 0, 10),    /* partial needs an error */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err = 0;
        CHECK(pal_fault_arm(&bad[i], 1, &err) == PAL_E_INVALID && err == EINVAL);
    }
    pal_fault_rule no_times = rule(PAL_FAULT_JOURNAL_WRITE, PAL_FAULT_ERROR, 1, EIO, 0);
    no_times.times = 0;
    CHECK(pal_fault_arm(&no_times, 1, &err) == PAL_E_INVALID);
    pal_fault_rule many[PAL_FAULT_MAX_RULES + 1];
    for (uint32_t i = 0; i <= PAL_FAULT_MAX_RULES; i++)
        many[i] = rule(PAL_FAULT_JOURNAL_WRITE, PAL_FAULT_ERROR, i + 1, EIO, 0);
    CHECK(pal_fault_arm(many, PAL_FAULT_MAX_RULES + 1, &err) == PAL_E_INVALID);
    CHECK(pal_fault_arm(NULL, 1, &err) == PAL_E_INVALID);
    CHECK(pal_fault_get_stats(NULL, &err) == PAL_E_INVALID);

    pal_fault_stats stats;
    CHECK_OK(pal_fault_get_stats(&stats, &err));
    CHECK(stats.armed == 0);
    CHECK_OK(pal_fault_arm(many, PAL_FAULT_MAX_RULES, &err)); /* the limit itself is fine */
    CHECK(disarm().armed == 1);
}

static void calls_are_counted_per_kind_only_while_armed(void)
{
    char path[TEST_PATH_MAX], renamed[TEST_PATH_MAX], linked[TEST_PATH_MAX];
    uint32_t mode;
    int32_t err;
    pal_journal *j = open_journal("count", path, &mode); /* before arming: not counted */
    uint8_t *block = patterned(2 * ALIGN, 1);
    pal_buffer buffer = { block, 2 * ALIGN };

    arm(NULL, 0);
    for (int i = 0; i < 3; i++)
        CHECK_OK(pal_journal_write(j, (uint64_t)i * 2 * ALIGN, &buffer, 1, &err));
    CHECK_OK(pal_journal_write(j, 0, &buffer, 0, &err)); /* nothing to write: no call */
    CHECK_OK(pal_journal_presize(j, 16 * ALIGN, &err));
    CHECK_OK(pal_journal_close(j, &err));
    scratch_path(renamed, "count-renamed");
    CHECK_OK(pal_journal_recycle(path, renamed, &err)); /* a rename and one directory sync */
    CHECK_OK(pal_fsync_directory(scratch_dir, &err));
    scratch_path(linked, "count-linked");
    CHECK_OK(pal_hard_link(renamed, linked, &err));
    int fd = open_scratch("count-data", O_RDWR | O_CREAT | O_TRUNC);
    CHECK_OK(pal_file_allocate(fd, 0, 8 * PAGE, &err));
    CHECK_OK(pal_file_allocate(fd, 0, 0, &err)); /* empty range: no call */
    CHECK_OK(pal_file_punch_hole(fd, 0, PAGE, &err));

    pal_writer *w;
    CHECK_OK(pal_writer_open(0, 0, &w, &err));
    uint8_t *pages = patterned(4 * PAGE, 2);
    pal_page_ref refs[] = { { 0, pages, 1, 0 }, { 1, pages + PAGE, 1, 0 }, { 5, pages + 2 * PAGE, 1, 0 },
                            { 7, pages + 3 * PAGE, 1, 0 } };
    pal_write_item items[] = {
        { .fd = fd, .refs = refs, .ref_count = 4, .page_size = PAGE, .kind = PAL_ITEM_WRITE },
        { .fd = fd, .kind = PAL_ITEM_FDATASYNC },
        { .fd = fd, .kind = PAL_ITEM_FSYNC },
    };
    CHECK_OK(pal_writer_submit(w, items, 3, &err));
    pal_fault_stats stats = disarm();

    CHECK(stats.armed == 1);
    CHECK(stats.calls[PAL_FAULT_JOURNAL_WRITE] == 3);
    CHECK(stats.calls[PAL_FAULT_JOURNAL_PRESIZE] == 1);
    CHECK(stats.calls[PAL_FAULT_JOURNAL_SYNC] == 1);
    CHECK(stats.calls[PAL_FAULT_RENAME] == 1);
    CHECK(stats.calls[PAL_FAULT_DIRECTORY_SYNC] == 2);
    CHECK(stats.calls[PAL_FAULT_HARD_LINK] == 1);
    CHECK(stats.calls[PAL_FAULT_FILE_ALLOCATE] == 1);
    CHECK(stats.calls[PAL_FAULT_PUNCH_HOLE] == 1);
    CHECK(stats.calls[PAL_FAULT_DATA_WRITE] == 3); /* runs 0-1, 5, 7 */
    CHECK(stats.calls[PAL_FAULT_DATA_SYNC] == 2);
    for (uint32_t k = 0; k < PAL_FAULT_MAX_KINDS; k++)
        CHECK(stats.fired[k] == 0);

    /* Disarmed: calls go through uncounted, and the counters keep their values. */
    CHECK_OK(pal_writer_submit(w, items, 3, &err));
    CHECK_OK(pal_fsync_directory(scratch_dir, &err));
    pal_fault_stats after;
    CHECK_OK(pal_fault_get_stats(&after, &err));
    CHECK(after.armed == 0);
    CHECK(after.calls[PAL_FAULT_DATA_WRITE] == 3 && after.calls[PAL_FAULT_DIRECTORY_SYNC] == 2);

    /* Arming again starts from zero. */
    arm(NULL, 0);
    CHECK_OK(pal_fsync_directory(scratch_dir, &err));
    stats = disarm();
    CHECK(stats.calls[PAL_FAULT_DIRECTORY_SYNC] == 1 && stats.calls[PAL_FAULT_DATA_WRITE] == 0);

    CHECK_OK(pal_writer_close(w, &err));
    CHECK(close(fd) == 0);
    free(pages);
    free(block);
}

/* ---- journal ------------------------------------------------------------- */

static void the_nth_journal_write_fails_once_and_the_others_land(void)
{
    char path[TEST_PATH_MAX];
    uint32_t mode;
    int32_t err;
    pal_journal *j = open_journal("nth", path, &mode);
    uint8_t *blocks[4];
    for (uint32_t i = 0; i < 4; i++)
        blocks[i] = patterned(ALIGN, 10 + i);

    const pal_fault_rule rules[] = { rule(PAL_FAULT_JOURNAL_WRITE, PAL_FAULT_ERROR, 3, ENOSPC, 0) };
    arm(rules, 1);
    for (uint32_t i = 0; i < 4; i++) {
        pal_buffer buffer = { blocks[i], ALIGN };
        err = 0;
        pal_status status = pal_journal_write(j, (uint64_t)i * ALIGN, &buffer, 1, &err);
        if (i == 2)
            CHECK(status == PAL_E_SYSTEM && err == ENOSPC);
        else
            CHECK(status == PAL_OK && err == 0);
    }
    pal_fault_stats stats = disarm();
    CHECK(stats.calls[PAL_FAULT_JOURNAL_WRITE] == 4 && stats.fired[PAL_FAULT_JOURNAL_WRITE] == 1);
    check_pattern(path, 0, ALIGN, 10, 0);
    check_pattern(path, ALIGN, ALIGN, 11, 0);
    check_zeros(path, 2 * ALIGN, ALIGN); /* the failed call wrote nothing */
    check_pattern(path, 3 * ALIGN, ALIGN, 13, 0);

    /* times: every call from the nth on fails. */
    pal_fault_rule always = rule(PAL_FAULT_JOURNAL_WRITE, PAL_FAULT_ERROR, 2, EIO, 0);
    always.times = UINT32_MAX;
    arm(&always, 1);
    pal_buffer buffer = { blocks[0], ALIGN };
    CHECK_OK(pal_journal_write(j, 8 * ALIGN, &buffer, 1, &err));
    for (int i = 0; i < 5; i++)
        CHECK(pal_journal_write(j, 8 * ALIGN, &buffer, 1, &err) == PAL_E_SYSTEM && err == EIO);
    stats = disarm();
    CHECK(stats.calls[PAL_FAULT_JOURNAL_WRITE] == 6 && stats.fired[PAL_FAULT_JOURNAL_WRITE] == 5);

    CHECK_OK(pal_journal_close(j, &err));
    for (uint32_t i = 0; i < 4; i++)
        free(blocks[i]);
}

static void a_partial_journal_write_lands_its_prefix_and_reports_the_error(void)
{
    char path[TEST_PATH_MAX];
    uint32_t mode;
    int32_t err;
    pal_journal *j = open_journal("partial", path, &mode);
    uint8_t *a = patterned(2 * ALIGN, 20), *b = patterned(2 * ALIGN, 21);
    pal_buffer buffers[] = { { a, 2 * ALIGN }, { b, 2 * ALIGN } };

    /* Three blocks of four reach the file: all of a, half of b. */
    const pal_fault_rule partial[] = {
        rule(PAL_FAULT_JOURNAL_WRITE, PAL_FAULT_PARTIAL, 1, EIO, 3 * ALIGN)
    };
    arm(partial, 1);
    CHECK(pal_journal_write(j, 4 * ALIGN, buffers, 2, &err) == PAL_E_SYSTEM && err == EIO);
    CHECK(disarm().fired[PAL_FAULT_JOURNAL_WRITE] == 1);
    check_pattern(path, 4 * ALIGN, 2 * ALIGN, 20, 0);
    check_pattern(path, 6 * ALIGN, ALIGN, 21, 0);
    check_zeros(path, 7 * ALIGN, ALIGN);

    /* With O_DIRECT a partial count is whole blocks: 5000 bytes write one. */
    const pal_fault_rule unaligned[] = {
        rule(PAL_FAULT_JOURNAL_WRITE, PAL_FAULT_PARTIAL, 1, EIO, ALIGN + 904)
    };
    arm(unaligned, 1);
    CHECK(pal_journal_write(j, 16 * ALIGN, buffers, 1, &err) == PAL_E_SYSTEM && err == EIO);
    disarm();
    check_pattern(path, 16 * ALIGN, mode == PAL_JOURNAL_DIRECT ? ALIGN : ALIGN + 904, 20, 0);
    if (mode == PAL_JOURNAL_DIRECT)
        check_zeros(path, 17 * ALIGN, ALIGN);

    /* More bytes than asked: the write lands whole and still reports the error,
     * as a device that wrote the data but failed the request would. */
    const pal_fault_rule landed[] = {
        rule(PAL_FAULT_JOURNAL_WRITE, PAL_FAULT_PARTIAL, 1, EIO, UINT64_MAX)
    };
    arm(landed, 1);
    CHECK(pal_journal_write(j, 24 * ALIGN, buffers, 2, &err) == PAL_E_SYSTEM && err == EIO);
    disarm();
    check_pattern(path, 24 * ALIGN, 2 * ALIGN, 20, 0);
    check_pattern(path, 26 * ALIGN, 2 * ALIGN, 21, 0);

    CHECK_OK(pal_journal_close(j, &err));
    free(a);
    free(b);
}

static void short_journal_writes_are_continued_byte_exact(void)
{
    char path[TEST_PATH_MAX];
    uint32_t mode;
    int32_t err;
    pal_journal *j = open_journal("short", path, &mode);
    uint8_t *a = patterned(3 * ALIGN, 30), *b = patterned(ALIGN, 31);
    pal_buffer buffers[] = { { a, 3 * ALIGN }, { b, ALIGN } };

    /* Cut inside the first buffer, then exactly at the buffer boundary. */
    const uint64_t cuts[] = { ALIGN, 3 * ALIGN };
    for (size_t c = 0; c < 2; c++) {
        const pal_fault_rule rules[] = {
            rule(PAL_FAULT_JOURNAL_WRITE, PAL_FAULT_SHORT, 1, 0, cuts[c])
        };
        arm(rules, 1);
        uint64_t offset = (8 + 8 * c) * ALIGN;
        CHECK_OK(pal_journal_write(j, offset, buffers, 2, &err));
        CHECK(disarm().fired[PAL_FAULT_JOURNAL_WRITE] == 1);
        check_pattern(path, offset, 3 * ALIGN, 30, 0);
        check_pattern(path, offset + 3 * ALIGN, ALIGN, 31, 0);
    }

    /* On O_DIRECT a cut is whole blocks and leaves one: a one-block write
     * cannot be cut and lands whole; a cut under a block still cuts one. */
    const pal_fault_rule tiny[] = { rule(PAL_FAULT_JOURNAL_WRITE, PAL_FAULT_SHORT, 1, 0, 100) };
    arm(tiny, 1);
    CHECK_OK(pal_journal_write(j, 40 * ALIGN, buffers, 1, &err));
    CHECK(disarm().fired[PAL_FAULT_JOURNAL_WRITE] == 1);
    check_pattern(path, 40 * ALIGN, 3 * ALIGN, 30, 0);
    pal_buffer one = { b, ALIGN };
    arm(tiny, 1);
    CHECK_OK(pal_journal_write(j, 44 * ALIGN, &one, 1, &err));
    disarm();
    check_pattern(path, 44 * ALIGN, ALIGN, 31, 0);

    /* A first syscall that writes nothing is an error, not a spin. */
    const pal_fault_rule nothing[] = { rule(PAL_FAULT_JOURNAL_WRITE, PAL_FAULT_SHORT, 1, 0, 0) };
    arm(nothing, 1);
    CHECK(pal_journal_write(j, 32 * ALIGN, buffers, 2, &err) == PAL_E_SYSTEM && err == EIO);
    disarm();
    check_zeros(path, 32 * ALIGN, 4 * ALIGN);
    CHECK_OK(pal_journal_close(j, &err));

    /* Without O_DIRECT, a cut can fall anywhere, mid-byte-run. */
    char plain[TEST_PATH_MAX];
    scratch_path(plain, "short-dsync");
    pal_test_refuse_direct_io(1);
    pal_status status = pal_journal_open(plain, PAL_JOURNAL_CREATE, &j, &mode, &err);
    pal_test_refuse_direct_io(0);
    CHECK_OK(status);
    CHECK(mode == PAL_JOURNAL_DSYNC_ONLY);
    const pal_fault_rule odd[] = { rule(PAL_FAULT_JOURNAL_WRITE, PAL_FAULT_SHORT, 1, 0, 1234) };
    arm(odd, 1);
    CHECK_OK(pal_journal_write(j, 7, buffers, 2, &err));
    disarm();
    check_pattern(plain, 7, 3 * ALIGN, 30, 0);
    check_pattern(plain, 7 + 3 * ALIGN, ALIGN, 31, 0);
    CHECK_OK(pal_journal_close(j, &err));
    free(a);
    free(b);
}

static void presize_faults_fail_short_write_and_sync_once(void)
{
    char path[TEST_PATH_MAX];
    scratch_path(path, "presize");
    int32_t err;
    uint32_t mode;
    pal_journal *j;
    CHECK_OK(pal_journal_open(path, PAL_JOURNAL_CREATE, &j, &mode, &err));
    const uint64_t size = 2u * 1024u * 1024u + 4u * ALIGN; /* three zero-fill chunks */

    /* ERROR: nothing happens, not even the sizing. */
    const pal_fault_rule error[] = { rule(PAL_FAULT_JOURNAL_PRESIZE, PAL_FAULT_ERROR, 1, ENOSPC, 0) };
    arm(error, 1);
    CHECK(pal_journal_presize(j, size, &err) == PAL_E_SYSTEM && err == ENOSPC);
    pal_fault_stats stats = disarm();
    CHECK(stats.calls[PAL_FAULT_JOURNAL_SYNC] == 0);
    CHECK(file_size(path) == 0);

    /* Leave old bytes in the file, so that zeros written can be told apart. */
    uint8_t *old = patterned(size, 40);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    CHECK(fd >= 0 && pwrite(fd, old, size, 0) == (ssize_t)size && close(fd) == 0);

    /* PARTIAL: zeros reach the first bytes only, and the call fails. */
    const pal_fault_rule partial[] = {
        rule(PAL_FAULT_JOURNAL_PRESIZE, PAL_FAULT_PARTIAL, 1, EIO, 1024u * 1024u + ALIGN)
    };
    arm(partial, 1);
    CHECK(pal_journal_presize(j, size, &err) == PAL_E_SYSTEM && err == EIO);
    stats = disarm();
    CHECK(stats.fired[PAL_FAULT_JOURNAL_PRESIZE] == 1 && stats.calls[PAL_FAULT_JOURNAL_SYNC] == 0);
    check_zeros(path, 0, 1024u * 1024u + ALIGN);
    check_pattern(path, 1024u * 1024u + ALIGN, ALIGN, 40, 1024u * 1024u + ALIGN);

    /* SHORT: the first zero-fill syscall is cut; the rest is still written. */
    const pal_fault_rule cut[] = { rule(PAL_FAULT_JOURNAL_PRESIZE, PAL_FAULT_SHORT, 1, 0, 5 * ALIGN) };
    arm(cut, 1);
    CHECK_OK(pal_journal_presize(j, size, &err));
    stats = disarm();
    CHECK(stats.fired[PAL_FAULT_JOURNAL_PRESIZE] == 1 && stats.calls[PAL_FAULT_JOURNAL_SYNC] == 1);
    CHECK(file_size(path) == (off_t)size);
    check_zeros(path, 0, size);

    /* The sync fails once; the next presize syncs for real. */
    const pal_fault_rule sync[] = { rule(PAL_FAULT_JOURNAL_SYNC, PAL_FAULT_ERROR, 1, EIO, 0) };
    arm(sync, 1);
    CHECK(pal_journal_presize(j, size, &err) == PAL_E_SYSTEM && err == EIO);
    CHECK_OK(pal_journal_presize(j, size, &err));
    stats = disarm();
    CHECK(stats.calls[PAL_FAULT_JOURNAL_SYNC] == 2 && stats.fired[PAL_FAULT_JOURNAL_SYNC] == 1);

    CHECK_OK(pal_journal_close(j, &err));
    free(old);
}

/* ---- data writer ------------------------------------------------------------ */

enum { RUN_PAGES = 6 };

typedef struct ring_case {
    pal_writer *w;
    int fd;
    char path[TEST_PATH_MAX];
    uint8_t *memory;
    pal_page_ref refs[RUN_PAGES + 2];
} ring_case;

/* Pages 0-5 (one run), 9 and 12: three writev calls. */
static void ring_case_open(ring_case *c, const char *name, uint32_t seed)
{
    int32_t err;
    CHECK_OK(pal_writer_open(0, 0, &c->w, &err));
    scratch_path(c->path, name);
    c->fd = open_scratch(name, O_RDWR | O_CREAT | O_TRUNC);
    c->memory = patterned((RUN_PAGES + 2) * PAGE, seed);
    for (uint32_t p = 0; p < RUN_PAGES; p++)
        c->refs[p] = (pal_page_ref){ p, c->memory + (size_t)p * PAGE, 1, 0 };
    c->refs[RUN_PAGES] = (pal_page_ref){ 9, c->memory + (size_t)RUN_PAGES * PAGE, 1, 0 };
    c->refs[RUN_PAGES + 1] = (pal_page_ref){ 12, c->memory + (size_t)(RUN_PAGES + 1) * PAGE, 1, 0 };
}

static pal_write_item ring_case_item(ring_case *c)
{
    return (pal_write_item){ .fd = c->fd, .refs = c->refs, .ref_count = RUN_PAGES + 2,
                             .page_size = PAGE, .kind = PAL_ITEM_WRITE };
}

static void ring_case_close(ring_case *c)
{
    int32_t err;
    CHECK_OK(pal_writer_close(c->w, &err));
    CHECK(close(c->fd) == 0);
    free(c->memory);
}

static void short_ring_writes_are_continued_byte_exact(void)
{
    ring_case c;
    ring_case_open(&c, "ring-short", 50);
    /* Every run is cut on its first issue: mid-page, at a page boundary, and
     * to a single byte. */
    const pal_fault_rule rules[] = {
        rule(PAL_FAULT_DATA_WRITE, PAL_FAULT_SHORT, 1, 0, 2 * PAGE + 333),
        rule(PAL_FAULT_DATA_WRITE, PAL_FAULT_SHORT, 2, 0, PAGE / 2),
        rule(PAL_FAULT_DATA_WRITE, PAL_FAULT_SHORT, 3, 0, 1),
    };
    arm(rules, 3);
    int32_t err;
    pal_write_item item = ring_case_item(&c);
    CHECK_OK(pal_writer_submit(c.w, &item, 1, &err));
    pal_fault_stats faults = disarm();
    CHECK(faults.fired[PAL_FAULT_DATA_WRITE] == 3);
    CHECK(item.result == 0 && item.bytes_written == (RUN_PAGES + 2) * PAGE);
    check_pattern(c.path, 0, RUN_PAGES * PAGE, 50, 0);
    check_pattern(c.path, 9 * PAGE, PAGE, 50, RUN_PAGES * PAGE);
    check_pattern(c.path, 12 * PAGE, PAGE, 50, (RUN_PAGES + 1) * PAGE);
    check_zeros(c.path, RUN_PAGES * PAGE, 3 * PAGE);
    pal_writer_stats stats;
    CHECK_OK(pal_writer_get_stats(c.w, &stats, &err));
    CHECK(stats.short_writes == 3 && stats.writes == 6);

    /* A cut to zero bytes is a write without progress: EIO, no spin. */
    const pal_fault_rule nothing[] = { rule(PAL_FAULT_DATA_WRITE, PAL_FAULT_SHORT, 2, 0, 0) };
    arm(nothing, 1);
    item = ring_case_item(&c);
    CHECK(pal_writer_submit(c.w, &item, 1, &err) == PAL_E_SYSTEM && err == EIO);
    disarm();
    CHECK(item.result == EIO && item.bytes_written == (RUN_PAGES + 1) * PAGE);
    ring_case_close(&c);
}

static void a_failed_or_partial_ring_write_fails_its_item_only_there(void)
{
    ring_case c;
    ring_case_open(&c, "ring-partial", 60);
    int32_t err;

    /* The first run writes two and a half pages, then reports EIO; the other
     * runs of the item are written. */
    const pal_fault_rule partial[] = {
        rule(PAL_FAULT_DATA_WRITE, PAL_FAULT_PARTIAL, 1, EIO, 2 * PAGE + PAGE / 2)
    };
    arm(partial, 1);
    pal_write_item item = ring_case_item(&c);
    CHECK(pal_writer_submit(c.w, &item, 1, &err) == PAL_E_SYSTEM && err == EIO);
    CHECK(disarm().fired[PAL_FAULT_DATA_WRITE] == 1);
    CHECK(item.result == EIO);
    CHECK(item.bytes_written == 2 * PAGE + PAGE / 2 + 2 * PAGE);
    check_pattern(c.path, 0, 2 * PAGE + PAGE / 2, 60, 0);
    check_zeros(c.path, 2 * PAGE + PAGE / 2, RUN_PAGES * PAGE - (2 * PAGE + PAGE / 2));
    check_pattern(c.path, 9 * PAGE, PAGE, 60, RUN_PAGES * PAGE);
    check_pattern(c.path, 12 * PAGE, PAGE, 60, (RUN_PAGES + 1) * PAGE);

    /* ERROR on the second run: nothing of it is written; the error code is the
     * one asked for; a sync item later in the call still runs. */
    ring_case d;
    ring_case_open(&d, "ring-error", 61);
    const pal_fault_rule error[] = { rule(PAL_FAULT_DATA_WRITE, PAL_FAULT_ERROR, 2, ENOSPC, 0) };
    arm(error, 1);
    pal_write_item items[] = { ring_case_item(&d), { .fd = d.fd, .kind = PAL_ITEM_FDATASYNC } };
    CHECK(pal_writer_submit(d.w, items, 2, &err) == PAL_E_SYSTEM && err == ENOSPC);
    pal_fault_stats stats = disarm();
    CHECK(stats.calls[PAL_FAULT_DATA_WRITE] == 3 && stats.calls[PAL_FAULT_DATA_SYNC] == 1);
    CHECK(items[0].result == ENOSPC && items[1].result == 0);
    CHECK(items[0].bytes_written == (RUN_PAGES + 1) * PAGE);
    check_pattern(d.path, 0, RUN_PAGES * PAGE, 61, 0);
    check_pattern(d.path, 12 * PAGE, PAGE, 61, (RUN_PAGES + 1) * PAGE);
    check_zeros(d.path, 9 * PAGE, PAGE);

    ring_case_close(&d);
    ring_case_close(&c);
}

static void a_ring_fdatasync_fails_once_then_succeeds(void)
{
    ring_case c;
    ring_case_open(&c, "ring-sync", 70);
    int32_t err;
    const pal_fault_rule rules[] = { rule(PAL_FAULT_DATA_SYNC, PAL_FAULT_ERROR, 1, EIO, 0) };
    arm(rules, 1);
    pal_write_item items[] = { ring_case_item(&c), { .fd = c.fd, .kind = PAL_ITEM_FDATASYNC } };
    CHECK(pal_writer_submit(c.w, items, 2, &err) == PAL_E_SYSTEM && err == EIO);
    CHECK(items[0].result == 0 && items[1].result == EIO);
    pal_write_item again = { .fd = c.fd, .kind = PAL_ITEM_FDATASYNC };
    CHECK_OK(pal_writer_submit(c.w, &again, 1, &err));
    pal_fault_stats stats = disarm();
    CHECK(stats.calls[PAL_FAULT_DATA_SYNC] == 2 && stats.fired[PAL_FAULT_DATA_SYNC] == 1);
    pal_writer_stats writer;
    CHECK_OK(pal_writer_get_stats(c.w, &writer, &err));
    CHECK(writer.syncs == 1); /* the failed one never reached the kernel */
    ring_case_close(&c);
}

/* ---- files and directories ------------------------------------------------- */

static void file_and_directory_calls_fail_with_the_error_asked_for(void)
{
    int32_t err;
    int fd = open_scratch("file-faults", O_RDWR | O_CREAT | O_TRUNC);
    const pal_fault_rule rules[] = {
        rule(PAL_FAULT_FILE_ALLOCATE, PAL_FAULT_ERROR, 1, ENOSPC, 0),
        rule(PAL_FAULT_FILE_ALLOCATE, PAL_FAULT_ERROR, 2, EOPNOTSUPP, 0),
        rule(PAL_FAULT_PUNCH_HOLE, PAL_FAULT_ERROR, 1, EIO, 0),
        rule(PAL_FAULT_DIRECTORY_SYNC, PAL_FAULT_ERROR, 2, EIO, 0),
        rule(PAL_FAULT_HARD_LINK, PAL_FAULT_ERROR, 1, EMLINK, 0),
        rule(PAL_FAULT_RENAME, PAL_FAULT_ERROR, 1, EXDEV, 0),
    };
    arm(rules, 6);
    CHECK(pal_file_allocate(fd, 0, PAGE, &err) == PAL_E_SYSTEM && err == ENOSPC);
    CHECK(pal_file_allocate(fd, 0, PAGE, &err) == PAL_E_UNSUPPORTED && err == EOPNOTSUPP);
    CHECK_OK(pal_file_allocate(fd, 0, PAGE, &err));
    CHECK(pal_file_punch_hole(fd, 0, PAGE, &err) == PAL_E_SYSTEM && err == EIO);
    CHECK_OK(pal_file_punch_hole(fd, 0, PAGE, &err));

    char a[TEST_PATH_MAX], b[TEST_PATH_MAX];
    scratch_path(a, "file-faults");
    scratch_path(b, "file-faults-2");
    CHECK(pal_hard_link(a, b, &err) == PAL_E_SYSTEM && err == EMLINK);
    CHECK(access(b, F_OK) != 0);
    CHECK(pal_journal_recycle(a, b, &err) == PAL_E_SYSTEM && err == EXDEV);
    CHECK(access(a, F_OK) == 0 && access(b, F_OK) != 0);
    /* The rename happens; its directory sync (the second of the seam's) fails. */
    CHECK_OK(pal_fsync_directory(scratch_dir, &err));
    CHECK(pal_journal_recycle(a, b, &err) == PAL_E_SYSTEM && err == EIO);
    CHECK(access(b, F_OK) == 0);
    pal_fault_stats stats = disarm();
    CHECK(stats.fired[PAL_FAULT_FILE_ALLOCATE] == 2 && stats.fired[PAL_FAULT_PUNCH_HOLE] == 1);
    CHECK(stats.fired[PAL_FAULT_HARD_LINK] == 1 && stats.fired[PAL_FAULT_RENAME] == 1);
    CHECK(stats.calls[PAL_FAULT_DIRECTORY_SYNC] == 2 && stats.fired[PAL_FAULT_DIRECTORY_SYNC] == 1);
    CHECK(close(fd) == 0);
}

int main(int argc, char **argv)
{
    scratch_init(argc, argv, "faults");
    RUN(invalid_rules_are_refused_and_leave_the_seam_disarmed);
    RUN(calls_are_counted_per_kind_only_while_armed);
    RUN(the_nth_journal_write_fails_once_and_the_others_land);
    RUN(a_partial_journal_write_lands_its_prefix_and_reports_the_error);
    RUN(short_journal_writes_are_continued_byte_exact);
    RUN(presize_faults_fail_short_write_and_sync_once);
    RUN(short_ring_writes_are_continued_byte_exact);
    RUN(a_failed_or_partial_ring_write_fails_its_item_only_there);
    RUN(a_ring_fdatasync_fails_once_then_succeeds);
    RUN(file_and_directory_calls_fail_with_the_error_asked_for);
    scratch_cleanup();
    return 0;
}
