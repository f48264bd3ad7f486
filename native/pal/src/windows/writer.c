/*
 * Data writer on Windows: overlapped WriteFile calls, issued and awaited by the
 * calling thread (no worker thread: the kernel queues the overlapped writes,
 * which is what the Linux ring and worker provide there).
 *
 * Adjacent refs are merged into one write by the rule the Linux ring uses
 * (pal_starts_write), up to PAL_WIN_RUN_BYTES a write. WriteFileGather would
 * write a run from the refs' own memory, but it needs a handle opened with
 * FILE_FLAG_NO_BUFFERING, whose writes bypass the cache that the engine's
 * readers see the file through (a mapped view): Windows does not keep a
 * user-mapped view coherent with non-cached writes. So a run of several refs is
 * copied into the slot's staging buffer and written as one buffered write,
 * coherent with the view like every cached write; a run of one ref (a page or
 * an overflow run) is written from its own memory.
 *
 * Up to PAL_WIN_MAX_PENDING writes of a call are in flight at once (on a handle
 * opened with FILE_FLAG_OVERLAPPED; on another handle each WriteFile completes
 * before it returns); a sync item waits for every earlier write of its call,
 * like on Linux. A call's slots, their events and staging buffers come from the
 * writer's cache (made once, on first need, and reused by later calls; one set
 * per concurrent caller, at most PAL_WIN_MAX_PENDING * PAL_WIN_RUN_BYTES of
 * staging each).
 */
#include <stdlib.h>
#include <string.h>

#include "win_util.h"

/* Overlapped writes in flight per pal_writer_submit call. */
#define PAL_WIN_MAX_PENDING 16u

/* Bytes of a merged write: the size of a slot's staging buffer. */
#define PAL_WIN_RUN_BYTES (1u << 20)

typedef struct call_state call_state;

struct pal_writer {
    uint32_t flags;
    SRWLOCK cache_lock;
    call_state *cache; /* idle call states, their events made; linked by next_free */
    volatile LONG64 submits;
    volatile LONG64 writes;
    volatile LONG64 syncs;
    volatile LONG64 short_writes;
};

typedef struct pending_write {
    OVERLAPPED ov;
    HANDLE event;
    HANDLE file;
    pal_write_item *item;
    const uint8_t *data;
    DWORD length;
    uint64_t offset;
    uint8_t *stage; /* PAL_WIN_RUN_BYTES, made on the slot's first merged write */
    BOOL busy;
} pending_write;

struct call_state {
    pal_writer *writer;
    call_state *next_free;
    pending_write slots[PAL_WIN_MAX_PENDING];
    uint32_t next_slot;
    int32_t first_error;
};

static void free_call(call_state *call)
{
    for (uint32_t i = 0; i < PAL_WIN_MAX_PENDING; i++) {
        if (call->slots[i].event != NULL)
            CloseHandle(call->slots[i].event);
        if (call->slots[i].stage != NULL)
            VirtualFree(call->slots[i].stage, 0, MEM_RELEASE);
    }
    free(call);
}

/* A call state from the writer's cache, or a new one with its events made;
 * NULL with the error in *error. */
static call_state *take_call(pal_writer *w, DWORD *error)
{
    AcquireSRWLockExclusive(&w->cache_lock);
    call_state *call = w->cache;
    if (call != NULL)
        w->cache = call->next_free;
    ReleaseSRWLockExclusive(&w->cache_lock);
    if (call == NULL) {
        call = calloc(1, sizeof(*call));
        if (call == NULL) {
            *error = ERROR_NOT_ENOUGH_MEMORY;
            return NULL;
        }
        for (uint32_t i = 0; i < PAL_WIN_MAX_PENDING; i++) {
            /* Manual-reset, as GetOverlappedResult expects. */
            call->slots[i].event = CreateEventW(NULL, TRUE, FALSE, NULL);
            if (call->slots[i].event == NULL) {
                *error = GetLastError();
                free_call(call);
                return NULL;
            }
        }
    }
    call->writer = w;
    call->next_free = NULL;
    call->next_slot = 0;
    call->first_error = 0;
    return call;
}

/* Returns a drained call state (no slot busy) to the writer's cache. */
static void give_back_call(pal_writer *w, call_state *call)
{
    AcquireSRWLockExclusive(&w->cache_lock);
    call->next_free = w->cache;
    w->cache = call;
    ReleaseSRWLockExclusive(&w->cache_lock);
}

static void record_error(call_state *call, pal_write_item *item, DWORD error)
{
    if (item->result == 0)
        item->result = (int32_t)error;
    if (call->first_error == 0)
        call->first_error = (int32_t)error;
}

static BOOL start_write(pending_write *slot)
{
    pal_overlapped_at(&slot->ov, slot->event, slot->offset);
    return WriteFile(slot->file, slot->data, slot->length, NULL, &slot->ov);
}

/* Waits for a slot's write, re-issuing the remainder after a short write. */
static void finish_slot(call_state *call, pending_write *slot, BOOL started)
{
    for (;;) {
        DWORD done;
        DWORD error = pal_wait_overlapped(slot->file, &slot->ov, started, &done);
        if (error != 0) {
            record_error(call, slot->item, error);
            break;
        }
        slot->item->bytes_written += done;
        if (done >= slot->length)
            break;
        if (done == 0) {
            record_error(call, slot->item, ERROR_WRITE_FAULT); /* no progress */
            break;
        }
        InterlockedIncrement64(&call->writer->short_writes);
        slot->data += done;
        slot->offset += done;
        slot->length -= done;
        InterlockedIncrement64(&call->writer->writes);
        started = start_write(slot);
    }
    slot->busy = FALSE;
}

static void drain(call_state *call)
{
    for (uint32_t i = 0; i < PAL_WIN_MAX_PENDING; i++)
        if (call->slots[i].busy)
            finish_slot(call, &call->slots[i], TRUE);
}

/* The next slot, its earlier write finished. */
static pending_write *next_slot(call_state *call)
{
    pending_write *slot = &call->slots[call->next_slot];
    call->next_slot = (call->next_slot + 1) % PAL_WIN_MAX_PENDING;
    if (slot->busy)
        finish_slot(call, slot, TRUE);
    return slot;
}

static void start_slot(call_state *call, pending_write *slot, HANDLE file, pal_write_item *item,
                       const uint8_t *data, uint64_t offset, DWORD length)
{
    slot->file = file;
    slot->item = item;
    slot->data = data;
    slot->length = length;
    slot->offset = offset;
    slot->busy = TRUE;
    InterlockedIncrement64(&call->writer->writes);
    BOOL started = start_write(slot);
    if (!started && GetLastError() != ERROR_IO_PENDING)
        finish_slot(call, slot, FALSE);
}

/* Writes refs [first, first + count) of `item`, adjacent in the file and
 * `bytes` long together, as one write (one per ref when no staging buffer can
 * be had). Returns the number of writes issued. */
static uint32_t issue_run(call_state *call, HANDLE file, pal_write_item *item, uint32_t first,
                          uint32_t count, uint64_t bytes)
{
    const pal_page_ref *refs = &item->refs[first];
    pal_fault fault = pal_fault_take(PAL_FAULT_DATA_WRITE);
    if (fault.mode != 0) {
        record_error(call, item, (DWORD)fault.error); /* ERROR: the only mode here */
        return 0;
    }
    pending_write *slot = next_slot(call);
    uint64_t offset = refs[0].page_number * item->page_size;
    if (count == 1) {
        start_slot(call, slot, file, item, refs[0].data, offset, (DWORD)bytes); /* checked to fit */
        return 1;
    }
    if (slot->stage == NULL)
        slot->stage = VirtualAlloc(NULL, PAL_WIN_RUN_BYTES, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
    if (slot->stage == NULL) {
        /* No memory to merge in: the run goes out a ref at a time, as written. */
        for (uint32_t r = 0; r < count; r++) {
            pending_write *own = r == 0 ? slot : next_slot(call);
            start_slot(call, own, file, item, refs[r].data, refs[r].page_number * item->page_size,
                       refs[r].page_count * item->page_size);
        }
        return count;
    }
    uint8_t *at = slot->stage;
    for (uint32_t r = 0; r < count; r++) {
        size_t length = (size_t)refs[r].page_count * item->page_size;
        memcpy(at, refs[r].data, length);
        at += length;
    }
    start_slot(call, slot, file, item, slot->stage, offset, (DWORD)bytes);
    return 1;
}

/* Issues an item's writes: its refs merged into runs by the shared rule. */
static void issue_item(call_state *call, HANDLE file, pal_write_item *item)
{
    uint32_t writes = 0;
    for (uint32_t first = 0; first < item->ref_count;) {
        uint64_t bytes = (uint64_t)item->refs[first].page_count * item->page_size;
        uint32_t end = first + 1;
        while (end < item->ref_count &&
               !pal_starts_write(item, end, end - first, bytes, UINT32_MAX, PAL_WIN_RUN_BYTES)) {
            bytes += (uint64_t)item->refs[end].page_count * item->page_size;
            end++;
        }
        writes += issue_run(call, file, item, first, end - first, bytes);
        first = end;
    }
    item->runs = writes;
}

PAL_API pal_status pal_writer_open(uint32_t queue_depth, uint32_t flags, pal_writer **out,
                                   int32_t *err)
{
    (void)queue_depth; /* no ring on Windows */
    if (out == NULL || (flags & ~(uint32_t)PAL_WRITER_LOW_PRIORITY) != 0)
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    pal_writer *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return pal_result(err, PAL_E_NOMEM, ERROR_NOT_ENOUGH_MEMORY);
    w->flags = flags;
    InitializeSRWLock(&w->cache_lock);
    *out = w;
    return pal_ok(err);
}

PAL_API pal_status pal_writer_close(pal_writer *w, int32_t *err)
{
    if (w == NULL)
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    /* Closing while calls are in flight is misuse; every cached state is idle. */
    while (w->cache != NULL) {
        call_state *next = w->cache->next_free;
        free_call(w->cache);
        w->cache = next;
    }
    free(w);
    return pal_ok(err);
}

static BOOL check_item(const pal_write_item *item)
{
    HANDLE h;
    if (!pal_handle_valid(item->fd, &h))
        return FALSE;
    if (item->kind == PAL_ITEM_FSYNC || item->kind == PAL_ITEM_FDATASYNC)
        return TRUE;
    if (item->kind != PAL_ITEM_WRITE || item->page_size == 0 ||
        (item->ref_count > 0 && item->refs == NULL))
        return FALSE;
    uint64_t max_page = (uint64_t)INT64_MAX / item->page_size - 1;
    for (uint32_t i = 0; i < item->ref_count; i++) {
        const pal_page_ref *ref = &item->refs[i];
        if (ref->data == NULL || ref->page_count == 0 || ref->page_number > max_page ||
            ref->page_count - 1 > max_page - ref->page_number ||
            (uint64_t)ref->page_count * item->page_size > MAXDWORD)
            return FALSE;
        if (i > 0 && ref->page_number < item->refs[i - 1].page_number + item->refs[i - 1].page_count)
            return FALSE; /* unsorted or overlapping */
    }
    return TRUE;
}

PAL_API pal_status pal_writer_submit(pal_writer *w, pal_write_item *items, uint32_t item_count,
                                     int32_t *err)
{
    if (w == NULL || (item_count > 0 && items == NULL))
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    for (uint32_t i = 0; i < item_count; i++) {
        items[i].result = 0;
        items[i].bytes_written = 0;
        items[i].runs = 0;
        if (!check_item(&items[i]))
            return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    }
    if (item_count == 0)
        return pal_ok(err);

    DWORD take_error = 0;
    call_state *call = take_call(w, &take_error);
    if (call == NULL)
        return pal_result(err, take_error == ERROR_NOT_ENOUGH_MEMORY ? PAL_E_NOMEM : PAL_E_SYSTEM,
                          (int32_t)take_error);
    pal_status status = PAL_OK;
    int32_t error = 0;
    InterlockedIncrement64(&w->submits);

    for (uint32_t i = 0; i < item_count; i++) {
        pal_write_item *item = &items[i];
        HANDLE file = (HANDLE)item->fd;
        if (item->kind == PAL_ITEM_WRITE) {
            issue_item(call, file, item);
        } else {
            drain(call); /* a sync covers the writes before it */
            pal_fault fault = pal_fault_take(PAL_FAULT_DATA_SYNC);
            if (fault.mode != 0) {
                record_error(call, item, (DWORD)fault.error);
                continue;
            }
            InterlockedIncrement64(&w->syncs);
            if (!FlushFileBuffers(file))
                record_error(call, item, GetLastError());
        }
    }
    drain(call);
    if (call->first_error != 0) {
        status = PAL_E_SYSTEM;
        error = call->first_error;
    }
    give_back_call(w, call);
    return pal_result(err, status, error);
}

PAL_API pal_status pal_writer_get_stats(pal_writer *w, pal_writer_stats *out, int32_t *err)
{
    if (w == NULL || out == NULL)
        return pal_result(err, PAL_E_INVALID, ERROR_INVALID_PARAMETER);
    *out = (pal_writer_stats){
        .submits = (uint64_t)InterlockedCompareExchange64(&w->submits, 0, 0),
        .writes = (uint64_t)InterlockedCompareExchange64(&w->writes, 0, 0),
        .syncs = (uint64_t)InterlockedCompareExchange64(&w->syncs, 0, 0),
        .short_writes = (uint64_t)InterlockedCompareExchange64(&w->short_writes, 0, 0),
        .flags = w->flags,
    };
    return pal_ok(err);
}
