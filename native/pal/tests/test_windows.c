/* Smoke test of the Windows implementation, run under Wine when cross-compiled. */
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "test_util.h"

#define PAGE 4096u

static char root[MAX_PATH];

static void path_of(char *out, const char *name)
{
    int n = snprintf(out, MAX_PATH, "%s\\%s", root, name);
    CHECK(n > 0 && n < MAX_PATH);
}

static HANDLE open_data(const char *path)
{
    HANDLE h = CreateFileA(path, GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ, NULL,
                           CREATE_ALWAYS, FILE_FLAG_OVERLAPPED, NULL);
    CHECK(h != INVALID_HANDLE_VALUE);
    return h;
}

static void read_back(const char *path, uint64_t offset, void *buffer, DWORD length)
{
    HANDLE h = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
                           OPEN_EXISTING, 0, NULL);
    CHECK(h != INVALID_HANDLE_VALUE);
    OVERLAPPED ov = { .Offset = (DWORD)offset, .OffsetHigh = (DWORD)(offset >> 32) };
    DWORD done = 0;
    CHECK(ReadFile(h, buffer, length, &done, &ov) && done == length);
    CHECK(CloseHandle(h));
}

static void pages_and_syncs_are_written(void)
{
    char path[MAX_PATH];
    path_of(path, "data");
    HANDLE h = open_data(path);
    static uint8_t pages[3][PAGE];
    for (int p = 0; p < 3; p++)
        memset(pages[p], 'a' + p, PAGE);
    pal_page_ref refs[] = { { 0, pages[0], 1, 0 }, { 1, pages[1], 1, 0 }, { 5, pages[2], 1, 0 } };
    pal_write_item items[] = {
        { .fd = (pal_fd)h, .refs = refs, .ref_count = 3, .page_size = PAGE,
          .kind = PAL_ITEM_WRITE },
        { .fd = (pal_fd)h, .kind = PAL_ITEM_FSYNC },
    };
    int32_t err;
    pal_writer *w;
    CHECK_OK(pal_writer_open(0, 0, &w, &err));
    CHECK_OK(pal_writer_submit(w, items, 2, &err));
    CHECK(items[0].bytes_written == 3 * PAGE && items[1].result == 0);
    CHECK_OK(pal_writer_close(w, &err));
    CHECK(CloseHandle(h));
    uint8_t back[PAGE];
    read_back(path, 5 * PAGE, back, PAGE);
    CHECK(back[0] == 'c' && back[PAGE - 1] == 'c');
    read_back(path, 1 * PAGE, back, PAGE);
    CHECK(back[0] == 'b');
}

static void journal_links_and_memory_work(void)
{
    char path[MAX_PATH], recycled[MAX_PATH], link[MAX_PATH];
    path_of(path, "journal");
    path_of(recycled, "journal-2");
    path_of(link, "journal-link");
    int32_t err;
    pal_journal *j;
    uint32_t mode;
    CHECK_OK(pal_journal_open(path, PAL_JOURNAL_CREATE, &j, &mode, &err));
    CHECK_OK(pal_journal_presize(j, 4 * PAGE, &err));
    uint8_t *block = VirtualAlloc(NULL, 2 * PAGE, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
    CHECK(block != NULL);
    memset(block, 'j', 2 * PAGE);
    pal_buffer buffer = { block, 2 * PAGE };
    CHECK_OK(pal_journal_write(j, PAGE, &buffer, 1, &err));
    CHECK_OK(pal_journal_close(j, &err));
    uint8_t back[PAGE];
    read_back(path, 2 * PAGE, back, PAGE);
    CHECK(back[0] == 'j');
    read_back(path, 3 * PAGE, back, PAGE);
    CHECK(back[0] == 0);
    CHECK(VirtualFree(block, 0, MEM_RELEASE));

    /* A file at the new name is never replaced. */
    HANDLE existing = CreateFileA(recycled, GENERIC_WRITE, 0, NULL, CREATE_NEW, 0, NULL);
    CHECK(existing != INVALID_HANDLE_VALUE && CloseHandle(existing));
    CHECK(pal_journal_recycle(path, recycled, &err) == PAL_E_SYSTEM && err == ERROR_ALREADY_EXISTS);
    CHECK(DeleteFileA(recycled));
    CHECK_OK(pal_journal_recycle(path, recycled, &err));
    CHECK_OK(pal_hard_link(recycled, link, &err));
    int32_t same = 0;
    CHECK_OK(pal_same_file(recycled, link, &same, &err));
    CHECK(same == 1);
    char other[MAX_PATH];
    path_of(other, "data");
    CHECK_OK(pal_same_file(recycled, other, &same, &err));
    CHECK(same == 0);
    CHECK_OK(pal_fsync_directory(root, &err));

    pal_memory_stats stats;
    CHECK_OK(pal_read_memory_stats(&stats, &err));
    CHECK(stats.valid == PAL_MEM_RSS && stats.rss > 0);
}

static void the_fault_seam_fails_calls_with_the_error_asked_for(void)
{
    char path[MAX_PATH];
    path_of(path, "faults");
    HANDLE h = open_data(path);
    static uint8_t page[PAGE];
    pal_page_ref refs[] = { { 0, page, 1, 0 }, { 2, page, 1, 0 } };
    pal_write_item items[] = {
        { .fd = (pal_fd)h, .refs = refs, .ref_count = 2, .page_size = PAGE,
          .kind = PAL_ITEM_WRITE },
        { .fd = (pal_fd)h, .kind = PAL_ITEM_FSYNC },
    };
    const pal_fault_rule rules[] = {
        { .kind = PAL_FAULT_DATA_WRITE, .mode = PAL_FAULT_ERROR, .nth = 2, .times = 1,
          .error = ERROR_DISK_FULL },
        { .kind = PAL_FAULT_DATA_SYNC, .mode = PAL_FAULT_ERROR, .nth = 1, .times = 1,
          .error = ERROR_IO_DEVICE },
    };
    int32_t err;
    CHECK_OK(pal_fault_arm(rules, 2, &err));
    pal_writer *w;
    CHECK_OK(pal_writer_open(0, 0, &w, &err));
    CHECK(pal_writer_submit(w, items, 2, &err) == PAL_E_SYSTEM);
    CHECK(items[0].result == ERROR_DISK_FULL && items[0].bytes_written == PAGE);
    CHECK(items[1].result == ERROR_IO_DEVICE);
    pal_fault_stats stats;
    CHECK_OK(pal_fault_get_stats(&stats, &err));
    CHECK(stats.calls[PAL_FAULT_DATA_WRITE] == 2 && stats.fired[PAL_FAULT_DATA_WRITE] == 1);
    CHECK(stats.calls[PAL_FAULT_DATA_SYNC] == 1 && stats.fired[PAL_FAULT_DATA_SYNC] == 1);
    CHECK_OK(pal_fault_disarm(&err));
    CHECK_OK(pal_writer_submit(w, items, 2, &err));
    CHECK_OK(pal_writer_close(w, &err));
    CHECK(CloseHandle(h));

    /* Partial and short writes are the Linux sources' only. */
    const pal_fault_rule partial = { .kind = PAL_FAULT_JOURNAL_WRITE, .mode = PAL_FAULT_PARTIAL,
                                     .nth = 1, .times = 1, .error = ERROR_IO_DEVICE, .bytes = 1 };
    CHECK(pal_fault_arm(&partial, 1, &err) == PAL_E_UNSUPPORTED);
}

/* An overflow run is one ref and one write; the writer's cached call states
 * serve call after call. */
static void runs_are_one_write_and_calls_reuse_their_state(void)
{
    char path[MAX_PATH];
    path_of(path, "runs");
    HANDLE h = open_data(path);
    static uint8_t run[3 * PAGE], single[PAGE];
    for (int p = 0; p < 3; p++)
        memset(run + p * PAGE, 'x' + p, PAGE);
    memset(single, 'q', PAGE);
    int32_t err;
    pal_writer *w;
    CHECK_OK(pal_writer_open(0, 0, &w, &err));
    for (int call = 0; call < 5; call++) {
        pal_page_ref refs[] = { { 2, run, 3, 0 }, { 9, single, 1, 0 } };
        pal_write_item item = { .fd = (pal_fd)h, .refs = refs, .ref_count = 2, .page_size = PAGE,
                                .kind = PAL_ITEM_WRITE };
        CHECK_OK(pal_writer_submit(w, &item, 1, &err));
        CHECK(item.result == 0 && item.runs == 2 && item.bytes_written == 4 * PAGE);
    }
    pal_writer_stats stats;
    CHECK_OK(pal_writer_get_stats(w, &stats, &err));
    CHECK(stats.submits == 5 && stats.writes == 10);
    CHECK_OK(pal_writer_close(w, &err));
    CHECK(CloseHandle(h));
    uint8_t back[PAGE];
    read_back(path, 4 * PAGE, back, PAGE);
    CHECK(back[0] == 'z' && back[PAGE - 1] == 'z');
    read_back(path, 9 * PAGE, back, PAGE);
    CHECK(back[0] == 'q');
}

/* A flush of 10,000 clustered pages, each in its own buffer as scratch pages
 * are: one write per run of adjacent pages (200 runs of 50), every page where
 * it belongs. A run longer than a merged write's cap is cut where the shared
 * rule says; a single ref longer than the cap (an overflow run) stays one. */
static void clustered_pages_go_out_as_one_write_per_run(void)
{
    enum { SIZE = 8192, RUNS = 200, PER_RUN = 50, STRIDE = 60, PAGES = RUNS * PER_RUN };
    char path[MAX_PATH];
    path_of(path, "clustered");
    HANDLE h = open_data(path);
    uint8_t *memory = VirtualAlloc(NULL, (SIZE_T)PAGES * SIZE, MEM_COMMIT | MEM_RESERVE,
                                   PAGE_READWRITE);
    pal_page_ref *refs = calloc(PAGES, sizeof(*refs));
    CHECK(memory != NULL && refs != NULL);
    for (uint32_t i = 0; i < PAGES; i++) {
        /* Buffers in the reverse order of their pages: no two refs of a run
         * are neighbours in memory. */
        uint8_t *page = memory + (size_t)(PAGES - 1 - i) * SIZE;
        uint64_t number = (uint64_t)(i / PER_RUN) * STRIDE + i % PER_RUN;
        memset(page, (int)(number % 251), SIZE);
        memcpy(page, &number, sizeof(number));
        refs[i] = (pal_page_ref){ number, page, 1, 0 };
    }
    int32_t err;
    pal_writer *w;
    CHECK_OK(pal_writer_open(0, 0, &w, &err));
    pal_write_item items[] = {
        { .fd = (pal_fd)h, .refs = refs, .ref_count = PAGES, .page_size = SIZE,
          .kind = PAL_ITEM_WRITE },
        { .fd = (pal_fd)h, .kind = PAL_ITEM_FDATASYNC },
    };
    CHECK_OK(pal_writer_submit(w, items, 2, &err));
    CHECK(items[0].result == 0 && items[0].runs == RUNS);
    CHECK(items[0].bytes_written == (uint64_t)PAGES * SIZE);
    pal_writer_stats stats;
    CHECK_OK(pal_writer_get_stats(w, &stats, &err));
    CHECK(stats.writes == RUNS && stats.syncs == 1 && stats.short_writes == 0);

    uint8_t *back = malloc((size_t)PER_RUN * SIZE);
    CHECK(back != NULL);
    for (uint32_t run = 0; run < RUNS; run++) {
        read_back(path, (uint64_t)run * STRIDE * SIZE, back, PER_RUN * SIZE);
        for (uint32_t p = 0; p < PER_RUN; p++)
            CHECK(memcmp(back + (size_t)p * SIZE, refs[run * PER_RUN + p].data, SIZE) == 0);
    }

    /* 300 adjacent pages: 1 MiB (128 pages) a write, so 128 + 128 + 44. */
    for (uint32_t i = 0; i < 300; i++)
        refs[i] = (pal_page_ref){ 20000 + i, memory + (size_t)(299 - i) * SIZE, 1, 0 };
    pal_write_item long_run = { .fd = (pal_fd)h, .refs = refs, .ref_count = 300,
                                .page_size = SIZE, .kind = PAL_ITEM_WRITE };
    CHECK_OK(pal_writer_submit(w, &long_run, 1, &err));
    CHECK(long_run.runs == 3 && long_run.bytes_written == 300u * SIZE);
    read_back(path, (20000 + 200) * (uint64_t)SIZE, back, SIZE);
    CHECK(memcmp(back, memory + (size_t)99 * SIZE, SIZE) == 0);
    /* One ref of 300 pages (contiguous memory): one write, from its own memory. */
    pal_page_ref overflow = { 30000, memory, 300, 0 };
    pal_write_item one = { .fd = (pal_fd)h, .refs = &overflow, .ref_count = 1, .page_size = SIZE,
                           .kind = PAL_ITEM_WRITE };
    CHECK_OK(pal_writer_submit(w, &one, 1, &err));
    CHECK(one.runs == 1 && one.bytes_written == 300u * SIZE);
    read_back(path, (30000 + 299) * (uint64_t)SIZE, back, SIZE);
    CHECK(memcmp(back, memory + (size_t)299 * SIZE, SIZE) == 0);
    CHECK_OK(pal_writer_get_stats(w, &stats, &err));
    CHECK(stats.writes == RUNS + 3 + 1);

    CHECK_OK(pal_writer_close(w, &err));
    CHECK(CloseHandle(h));
    free(back);
    free(refs);
    CHECK(VirtualFree(memory, 0, MEM_RELEASE));
}

int main(int argc, char **argv)
{
    CHECK(argc >= 2);
    CreateDirectoryA(argv[1], NULL); /* may exist already */
    /* Wine reuses process ids from run to run: a fresh folder per run, whatever earlier runs left. */
    BOOL created = FALSE;
    for (unsigned attempt = 0; !created && attempt < 1000; attempt++) {
        int n = snprintf(root, sizeof(root), "%s\\windows.%lu.%u", argv[1], GetCurrentProcessId(), attempt);
        CHECK(n > 0 && (size_t)n < sizeof(root));
        created = CreateDirectoryA(root, NULL);
        CHECK(created || GetLastError() == ERROR_ALREADY_EXISTS);
    }
    CHECK(created);
    RUN(pages_and_syncs_are_written);
    RUN(runs_are_one_write_and_calls_reuse_their_state);
    RUN(clustered_pages_go_out_as_one_write_per_run);
    RUN(journal_links_and_memory_work);
    RUN(the_fault_seam_fails_calls_with_the_error_asked_for);
    return 0;
}
