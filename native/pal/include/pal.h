/*
 * pal.h - native platform layer of the Storage engine.
 *
 * Contract shared with the managed side (Platform/ in .NET):
 *  - every function returns a pal_status (PAL_OK = 0 on success);
 *  - the platform error code is written to the `err` out parameter (errno on
 *    Linux, GetLastError() on Windows; 0 on success). `err` may be NULL;
 *  - handles are opaque and are released by the function that matches the one
 *    that created them (pal_writer_close, pal_journal_close): memory is freed
 *    on the side that allocated it, never by the caller's allocator;
 *  - strings are NUL-terminated UTF-8;
 *  - a pal_fd is the OS file handle as .NET exposes it through
 *    SafeFileHandle.DangerousGetHandle(): a file descriptor on Linux, a
 *    HANDLE on Windows;
 *  - the managed side compares pal_version() with the PAL_VERSION it was
 *    built against and refuses to load on mismatch. Bump PAL_VERSION on any
 *    change of a signature or of a struct below.
 *
 * Struct layouts are fixed (explicit padding, sizes checked with
 * _Static_assert) because the managed side declares them with
 * StructLayout(Sequential) and the same sizes.
 */
#ifndef STORAGE_PAL_H
#define STORAGE_PAL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  if defined(PAL_BUILDING)
#    define PAL_API __declspec(dllexport)
#  else
#    define PAL_API __declspec(dllimport)
#  endif
#elif defined(PAL_BUILDING)
#  define PAL_API __attribute__((visibility("default")))
#else
#  define PAL_API
#endif

#define PAL_VERSION 3

/* ---- status codes ------------------------------------------------------ */

typedef int32_t pal_status;

enum {
    PAL_OK = 0,
    PAL_E_SYSTEM = 1,      /* an OS call failed; *err holds its error code */
    PAL_E_INVALID = 2,     /* bad argument (unsorted pages, misalignment...) */
    PAL_E_NOMEM = 3,       /* allocation failed */
    PAL_E_UNSUPPORTED = 4, /* not available on this platform / kernel */
    PAL_E_CLOSED = 5,      /* the writer is shutting down */
};

typedef intptr_t pal_fd;

/* ---- version ------------------------------------------------------------ */

PAL_API int32_t pal_version(void);

/* ---- data writer (Linux: io_uring + worker thread) ---------------------- */

typedef struct pal_writer pal_writer;

/* Dirty pages that follow each other in the file and in memory (one page, or
 * an overflow run): the first one's number, the memory holding them, and how
 * many there are (at least 1). */
typedef struct pal_page_ref {
    uint64_t page_number;
    const void *data;
    uint32_t page_count;
    uint32_t reserved;
} pal_page_ref;

enum {
    PAL_ITEM_WRITE = 0,     /* write `refs` (sorted ascending, not overlapping) */
    PAL_ITEM_FSYNC = 1,     /* fsync(fd): data and metadata */
    PAL_ITEM_FDATASYNC = 2, /* fdatasync(fd) */
};

/*
 * One work item. Items of one pal_writer_submit call are ordered only by
 * sync items: a sync starts after every earlier item of the same call has
 * completed, and later items start after the sync. Writes between syncs run
 * concurrently.
 */
typedef struct pal_write_item {
    pal_fd fd;
    const pal_page_ref *refs;  /* PAL_ITEM_WRITE only */
    uint32_t ref_count;
    uint32_t page_size;        /* bytes per page, > 0 */
    uint32_t kind;             /* PAL_ITEM_* */
    int32_t result;            /* out: 0 or the error code of this item */
    uint64_t bytes_written;    /* out */
    uint32_t runs;             /* out: write calls after merging adjacent refs */
    uint32_t reserved;
} pal_write_item;

enum {
    /* Run the writer's I/O at best-effort priority 7 (lowest) so background
     * page flushing yields to foreground reads and journal writes. */
    PAL_WRITER_LOW_PRIORITY = 1u << 0,
};

typedef struct pal_writer_stats {
    uint64_t submits;        /* pal_writer_submit calls accepted */
    uint64_t writes;         /* writev operations issued, re-issues included */
    uint64_t syncs;          /* fsync operations issued */
    uint64_t short_writes;   /* writes that completed partially and were re-queued */
    uint64_t ring_full_waits;/* times the worker waited for ring space */
    int32_t priority_error;  /* 0, or the error of setting the I/O priority */
    uint32_t flags;          /* the flags the writer was opened with */
} pal_writer_stats;

/* queue_depth: submission queue entries (0 = default); flags: PAL_WRITER_*. */
PAL_API pal_status pal_writer_open(uint32_t queue_depth, uint32_t flags,
                                   pal_writer **out, int32_t *err);
/* Completes all queued work, stops the worker and frees the writer. */
PAL_API pal_status pal_writer_close(pal_writer *writer, int32_t *err);
/* Thread-safe; blocks until every item has completed. Returns PAL_E_SYSTEM
 * with *err = the first item error if any item failed (see item->result). */
PAL_API pal_status pal_writer_submit(pal_writer *writer, pal_write_item *items,
                                     uint32_t item_count, int32_t *err);
PAL_API pal_status pal_writer_get_stats(pal_writer *writer, pal_writer_stats *out,
                                        int32_t *err);

/* ---- journal (critical lane: synchronous, never queued) ----------------- */

typedef struct pal_journal pal_journal;

/* Buffers and offsets of journal writes on a PAL_JOURNAL_DIRECT handle must be
 * aligned to this many bytes (covers 4Kn devices and the Windows page size). */
#define PAL_JOURNAL_ALIGNMENT 4096u

enum {
    PAL_JOURNAL_CREATE = 1u << 0, /* create the file if missing */
};

enum {
    PAL_JOURNAL_DIRECT = 1,     /* O_DIRECT|O_DSYNC / NO_BUFFERING|WRITE_THROUGH */
    PAL_JOURNAL_DSYNC_ONLY = 2, /* O_DSYNC only: the file system refused O_DIRECT */
};

typedef struct pal_buffer {
    const void *data;
    uint64_t length;
} pal_buffer;

/* *mode_out receives PAL_JOURNAL_DIRECT or PAL_JOURNAL_DSYNC_ONLY. */
PAL_API pal_status pal_journal_open(const char *path, uint32_t flags, pal_journal **out,
                                    uint32_t *mode_out, int32_t *err);
PAL_API pal_status pal_journal_close(pal_journal *journal, int32_t *err);
/* Writes the buffers back to back at `offset`; durable when it returns. */
PAL_API pal_status pal_journal_write(pal_journal *journal, uint64_t offset,
                                     const pal_buffer *buffers, uint32_t buffer_count,
                                     int32_t *err);
/* Sizes the file to `size` (a multiple of PAL_JOURNAL_ALIGNMENT), writes
 * zeros over all of it and syncs. */
PAL_API pal_status pal_journal_presize(pal_journal *journal, uint64_t size, int32_t *err);
/* Renames a journal file to a new name in the same or another directory and
 * makes the rename durable (the directory syncs on Linux, MOVEFILE_WRITE_THROUGH
 * on Windows). Never replaces a file at new_path: fails with EEXIST
 * (ERROR_ALREADY_EXISTS) instead. When a directory sync fails the file may
 * already be under its new name. */
PAL_API pal_status pal_journal_recycle(const char *old_path, const char *new_path,
                                       int32_t *err);

/* ---- files and directories ---------------------------------------------- */

PAL_API pal_status pal_file_allocate(pal_fd fd, uint64_t offset, uint64_t length,
                                     int32_t *err);
/* Frees the blocks of the range; the file size does not change. */
PAL_API pal_status pal_file_punch_hole(pal_fd fd, uint64_t offset, uint64_t length,
                                       int32_t *err);
PAL_API pal_status pal_hard_link(const char *existing_path, const char *new_path,
                                 int32_t *err);
/* *same = 1 when both paths name the same file (device and inode), else 0. */
PAL_API pal_status pal_same_file(const char *path_a, const char *path_b, int32_t *same,
                                 int32_t *err);
/* Makes creations, renames and deletions inside the directory durable
 * (a no-op on Windows, where NTFS journals them). */
PAL_API pal_status pal_fsync_directory(const char *path, int32_t *err);

/* ---- memory -------------------------------------------------------------- */

/* Asks the kernel to read pages [first_page, first_page + page_count) of the
 * mapping at `base` ahead of use. Advisory: returns before the reads finish. */
PAL_API pal_status pal_prefetch(void *base, uint64_t first_page, uint64_t page_count,
                                uint32_t page_size, int32_t *err);

enum {
    PAL_MEM_RSS = 1u << 0,
    PAL_MEM_PSS = 1u << 1,
    PAL_MEM_PRIVATE_DIRTY = 1u << 2,
    PAL_MEM_ANONYMOUS = 1u << 3,
    PAL_MEM_SWAP = 1u << 4,
};

/* Process memory in bytes; `valid` says which fields the platform filled. */
typedef struct pal_memory_stats {
    uint64_t rss;
    uint64_t pss;
    uint64_t private_dirty;
    uint64_t anonymous;
    uint64_t swap;
    uint32_t valid; /* PAL_MEM_* */
    uint32_t reserved;
} pal_memory_stats;

/* Linux: /proc/self/smaps_rollup. Windows: working set and private bytes. */
PAL_API pal_status pal_read_memory_stats(pal_memory_stats *out, int32_t *err);

/* ---- fault injection (test seam) ---------------------------------------- */

/*
 * A runtime seam, compiled into the shipped library and inert until armed:
 * while disarmed each call site below costs one relaxed atomic load. Tests arm
 * rules through these functions; a rule hits the nth call of its kind (counted
 * from arming, 1-based) and the `times - 1` calls after it. While armed, the
 * calls of every kind are counted, so a test can first count the calls a
 * workload makes (arm with no rules), then fail each of them in turn.
 *
 * The seam is process-wide: arm it only while the process does no I/O through
 * this layer that the test does not mean to count or fail.
 */
enum {
    PAL_FAULT_JOURNAL_WRITE = 0,    /* pal_journal_write */
    PAL_FAULT_JOURNAL_PRESIZE = 1,  /* pal_journal_presize: its zero fill (ERROR: before anything) */
    PAL_FAULT_JOURNAL_SYNC = 2,     /* the fdatasync that ends pal_journal_presize */
    PAL_FAULT_DATA_WRITE = 3,       /* one writev op of pal_writer_submit (its re-issues after a
                                     * short write belong to the same call) */
    PAL_FAULT_DATA_SYNC = 4,        /* one fsync/fdatasync op of pal_writer_submit */
    PAL_FAULT_FILE_ALLOCATE = 5,    /* pal_file_allocate */
    PAL_FAULT_PUNCH_HOLE = 6,       /* pal_file_punch_hole */
    PAL_FAULT_DIRECTORY_SYNC = 7,   /* pal_fsync_directory, each directory sync of pal_journal_recycle */
    PAL_FAULT_RENAME = 8,           /* the rename of pal_journal_recycle */
    PAL_FAULT_HARD_LINK = 9,        /* pal_hard_link */
    PAL_FAULT_KIND_COUNT = 10,
};

/* Capacity of the per-kind arrays of pal_fault_stats (room for new kinds). */
#define PAL_FAULT_MAX_KINDS 16u
/* Rules one pal_fault_arm call may install. */
#define PAL_FAULT_MAX_RULES 8u

enum {
    /* The call fails with `error` and does nothing. Every kind. */
    PAL_FAULT_ERROR = 1,
    /* The first `bytes` bytes are written for real, then the call fails with
     * `error`; `bytes` at least the request writes it all and still fails.
     * Write kinds (JOURNAL_WRITE, JOURNAL_PRESIZE, DATA_WRITE); Linux only. */
    PAL_FAULT_PARTIAL = 2,
    /* The first write syscall of the call transfers only `bytes` bytes and
     * reports that; the layer must write the rest itself. The cut leaves at
     * least one byte for the rest, so a one-byte request passes whole. Zero
     * bytes is a write that makes no progress, which the layer reports as
     * EIO. Write kinds; Linux only. */
    PAL_FAULT_SHORT = 3,
};

/* On an O_DIRECT journal, PARTIAL and SHORT byte counts are whole blocks of
 * PAL_JOURNAL_ALIGNMENT (the device writes whole blocks or nothing): PARTIAL
 * rounds down; SHORT rounds down to at least one block and leaves at least
 * one, so a one-block request passes whole. */
typedef struct pal_fault_rule {
    uint32_t kind;  /* PAL_FAULT_JOURNAL_WRITE... */
    uint32_t mode;  /* PAL_FAULT_ERROR, _PARTIAL or _SHORT */
    uint64_t nth;   /* the first call hit, counted from arming; >= 1 */
    uint64_t bytes; /* PARTIAL and SHORT */
    int32_t error;  /* ERROR and PARTIAL: the errno (Windows: Win32 error) reported; > 0 */
    uint32_t times; /* consecutive calls hit from nth on; >= 1 (UINT32_MAX: all of them) */
} pal_fault_rule;

typedef struct pal_fault_stats {
    uint64_t calls[PAL_FAULT_MAX_KINDS]; /* calls of each kind while armed */
    uint64_t fired[PAL_FAULT_MAX_KINDS]; /* of those, the calls a rule hit */
    uint32_t armed;                      /* 1 while armed */
    uint32_t reserved;
} pal_fault_stats;

/* Replaces the rules (rule_count may be 0: count only), zeroes the counters
 * and arms the seam. Invalid rules are refused with PAL_E_INVALID and leave
 * the seam as it was; PARTIAL and SHORT are PAL_E_UNSUPPORTED on Windows. */
PAL_API pal_status pal_fault_arm(const pal_fault_rule *rules, uint32_t rule_count, int32_t *err);
/* Stops counting and failing; the counters keep their values. */
PAL_API pal_status pal_fault_disarm(int32_t *err);
PAL_API pal_status pal_fault_get_stats(pal_fault_stats *out, int32_t *err);

#ifdef __cplusplus
}
#endif

#endif /* STORAGE_PAL_H */
