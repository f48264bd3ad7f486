/*
 * Data writer: one io_uring serviced by one worker thread.
 *
 * Callers turn their work items into ops in their own thread (validation and
 * run merging cost the caller, not the worker), queue the batch under a mutex,
 * poke the worker through an eventfd and wait on the batch's condition variable
 * (no kernel object is made per call). The
 * worker keeps a read armed on its wake eventfd inside the ring, so a single
 * io_uring_submit_and_wait() sleeps until either new work or a completion
 * arrives. Completions are routed back to their batch through user_data.
 * The fault seam (fault.c) sees each op once, when it is first prepared; a
 * fault it assigns is applied to the SQE and settled by the op's completion.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux_util.h"

#define PAL_WRITER_DEFAULT_QUEUE_DEPTH 256u
#define PAL_WRITER_MAX_QUEUE_DEPTH 4096u
/* writev() accepts at most IOV_MAX iovecs; longer runs are split. */
#define PAL_MAX_IOV_PER_WRITE ((uint32_t)IOV_MAX)

/* ioprio encoding (linux/ioprio.h varies between kernel header versions). */
#define PAL_IOPRIO_CLASS_SHIFT 13
#define PAL_IOPRIO_CLASS_BE 2
#define PAL_IOPRIO_WHO_PROCESS 1 /* with who = 0: the calling thread */
#define PAL_IOPRIO_LOWEST_BE_LEVEL 7
#define PAL_IOPRIO_BACKGROUND \
    ((PAL_IOPRIO_CLASS_BE << PAL_IOPRIO_CLASS_SHIFT) | PAL_IOPRIO_LOWEST_BE_LEVEL)

/* user_data of the read armed on the wake eventfd; ops use their address. */
#define PAL_WAKE_TAG 0u

struct pal_batch;

/* One ring operation: a run of consecutive pages (writev) or a sync. */
typedef struct pal_op {
    struct pal_op *next; /* ready list link */
    struct pal_batch *batch;
    pal_write_item *item;
    int fd;
    uint32_t kind;
    struct iovec *iov; /* first iovec not yet written */
    uint32_t iovcnt;
    uint64_t offset;    /* file offset of iov[0] */
    uint64_t remaining; /* bytes still to write */
    pal_fault fault;    /* the fault seam's verdict, pending until a completion uses it */
    pal_iov_trim trim;  /* the iovec a fault cut for the issue in flight */
    bool counted;       /* the fault seam has seen this op (its first issue) */
} pal_op;

/* The ops of one pal_writer_submit call; lives on the caller's stack. */
typedef struct pal_batch {
    struct pal_batch *next; /* submit queue link */
    pal_op *ops;
    uint32_t op_count;
    uint32_t next_op;     /* first op not yet issued */
    uint32_t outstanding; /* issued, not completed */
    uint32_t completed;
    int32_t first_error;
    bool done;                /* guarded by the writer's lock */
    pthread_cond_t done_cond; /* signalled under the writer's lock when done */
} pal_batch;

struct pal_writer {
    struct io_uring ring;
    pthread_t worker;
    int wake_fd;
    uint32_t flags;

    pthread_mutex_t lock; /* guards queue_*, stopping and each batch's done */
    pal_batch *queue_head;
    pal_batch *queue_tail;
    bool stopping;

    /* Worker-only state. */
    uint64_t wake_value; /* target of the armed eventfd read */
    bool wake_armed;
    pal_op *ready_head;
    pal_op *ready_tail;
    uint32_t active_batches;
    uint32_t in_ring;    /* SQEs prepared or submitted and not reaped */
    uint32_t ring_limit; /* CQ size: in_ring never exceeds it, so no CQE overflow */

    atomic_uint_fast64_t submits;
    atomic_uint_fast64_t writes;
    atomic_uint_fast64_t syncs;
    atomic_uint_fast64_t short_writes;
    atomic_uint_fast64_t ring_full_waits;
    atomic_int priority_error;
};

static void counter_add(atomic_uint_fast64_t *counter)
{
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

/* eventfd signalling. A write of 1 to an eventfd only fails on counter
 * overflow (2^64 - 2 pending), which a wake-up counter cannot reach. */
static void eventfd_signal(int fd)
{
    uint64_t one = 1;
    while (write(fd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
}

/* ---- worker ---------------------------------------------------------------- */

static void push_ready(pal_writer *w, pal_op *op)
{
    op->next = NULL;
    if (w->ready_tail != NULL)
        w->ready_tail->next = op;
    else
        w->ready_head = op;
    w->ready_tail = op;
}

static pal_op *pop_ready(pal_writer *w)
{
    pal_op *op = w->ready_head;
    w->ready_head = op->next;
    if (w->ready_head == NULL)
        w->ready_tail = NULL;
    return op;
}

/* Moves the batch's next ops to the ready list. A sync is a barrier: it waits
 * for every earlier op of its batch, and nothing after it starts before it
 * completes, so "write pages, then fsync" in one call means what it says. */
static void advance_batch(pal_writer *w, pal_batch *b)
{
    while (b->next_op < b->op_count) {
        pal_op *op = &b->ops[b->next_op];
        bool barrier = op->kind != PAL_ITEM_WRITE;
        if (barrier && b->outstanding > 0)
            return;
        b->next_op++;
        b->outstanding++;
        push_ready(w, op);
        if (barrier)
            return;
    }
}

static void finish_op(pal_writer *w, pal_op *op, int32_t error)
{
    pal_batch *b = op->batch;
    if (error != 0) {
        if (op->item->result == 0)
            op->item->result = error;
        if (b->first_error == 0)
            b->first_error = error;
    }
    b->outstanding--;
    b->completed++;
    if (b->completed == b->op_count) {
        w->active_batches--;
        /* The caller frees the batch once it holds the lock again and sees it
         * done, so nothing here touches the batch after the unlock. */
        (void)pthread_mutex_lock(&w->lock);
        b->done = true;
        (void)pthread_cond_signal(&b->done_cond);
        (void)pthread_mutex_unlock(&w->lock);
    } else {
        advance_batch(w, b);
    }
}

static void complete_op(pal_writer *w, pal_op *op, int res)
{
    pal_iov_untrim(&op->trim);
    if (res == -EAGAIN || res == -EINTR) {
        push_ready(w, op); /* a pending fault applies to the re-issue */
        return;
    }
    pal_fault fault = op->fault;
    op->fault.mode = 0;
    if (res < 0) {
        finish_op(w, op, -res); /* a real error wins over an injected one */
        return;
    }
    if (fault.mode == PAL_FAULT_ERROR || fault.mode == PAL_FAULT_PARTIAL) {
        if (op->kind == PAL_ITEM_WRITE)
            op->item->bytes_written += (uint64_t)res;
        finish_op(w, op, fault.error);
        return;
    }
    if (op->kind != PAL_ITEM_WRITE) {
        finish_op(w, op, 0);
        return;
    }
    uint64_t written = (uint64_t)res;
    op->item->bytes_written += written;
    if (written >= op->remaining) {
        finish_op(w, op, 0);
        return;
    }
    if (written == 0) {
        /* No progress on a regular file: re-queuing would spin forever. */
        finish_op(w, op, EIO);
        return;
    }
    counter_add(&w->short_writes);
    op->remaining -= written;
    op->offset += written;
    pal_iov_advance(&op->iov, &op->iovcnt, (size_t)written);
    push_ready(w, op);
}

/* An SQE, flushing prepared ones to the kernel first if the SQ is full. */
static struct io_uring_sqe *next_sqe(pal_writer *w)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
    if (sqe == NULL) {
        (void)io_uring_submit(&w->ring);
        sqe = io_uring_get_sqe(&w->ring);
    }
    return sqe;
}

static void prepare_op(pal_writer *w, struct io_uring_sqe *sqe, pal_op *op)
{
    if (!op->counted) {
        op->counted = true;
        op->fault = pal_fault_take(op->kind == PAL_ITEM_WRITE ? PAL_FAULT_DATA_WRITE
                                                              : PAL_FAULT_DATA_SYNC);
    }
    if (op->kind == PAL_ITEM_WRITE && op->fault.mode != PAL_FAULT_ERROR) {
        uint32_t count = op->iovcnt;
        if (op->fault.mode != 0) {
            /* PARTIAL: this issue writes the prefix and the completion fails
             * the op; SHORT: the completion sees a short write and re-queues
             * the rest like any other. */
            size_t limit = (size_t)pal_fault_limit(&op->fault, op->remaining, 1);
            count = pal_iov_clip(op->iov, count, limit, &op->trim);
        }
        if (count > 0) {
            io_uring_prep_writev(sqe, op->fd, op->iov, count, op->offset);
            if (w->flags & PAL_WRITER_LOW_PRIORITY)
                sqe->ioprio = PAL_IOPRIO_BACKGROUND;
            counter_add(&w->writes);
        } else {
            io_uring_prep_nop(sqe); /* a zero-byte write: completes with 0 */
        }
    } else if (op->fault.mode == PAL_FAULT_ERROR) {
        /* Nothing reaches the file; the completion reports the error. */
        io_uring_prep_nop(sqe);
    } else {
        /* IORING_OP_FSYNC rejects a non-zero ioprio, so none is set here. */
        io_uring_prep_fsync(sqe, op->fd,
                            op->kind == PAL_ITEM_FDATASYNC ? IORING_FSYNC_DATASYNC : 0);
        counter_add(&w->syncs);
    }
    io_uring_sqe_set_data(sqe, op);
}

/* Prepares SQEs: the wake read first (the worker must never sleep deaf), then
 * ready ops until the ring is full. */
static void fill_ring(pal_writer *w)
{
    if (!w->wake_armed) {
        struct io_uring_sqe *sqe = next_sqe(w);
        if (sqe == NULL)
            return;
        io_uring_prep_read(sqe, w->wake_fd, &w->wake_value, sizeof(w->wake_value), 0);
        io_uring_sqe_set_data64(sqe, PAL_WAKE_TAG);
        w->wake_armed = true;
        w->in_ring++;
    }
    while (w->ready_head != NULL) {
        struct io_uring_sqe *sqe = w->in_ring < w->ring_limit ? next_sqe(w) : NULL;
        if (sqe == NULL) {
            /* Ring full: the caller's submit-and-wait reaps a completion
             * before the rest of the ready list is tried again. */
            counter_add(&w->ring_full_waits);
            return;
        }
        prepare_op(w, sqe, pop_ready(w));
        w->in_ring++;
    }
}

static void reap(pal_writer *w)
{
    struct io_uring_cqe *cqe;
    while (io_uring_peek_cqe(&w->ring, &cqe) == 0) {
        uint64_t tag = io_uring_cqe_get_data64(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&w->ring, cqe);
        w->in_ring--;
        if (tag == PAL_WAKE_TAG)
            w->wake_armed = false; /* re-armed by the next fill_ring */
        else
            complete_op(w, (pal_op *)(uintptr_t)tag, res);
    }
}

/* Takes the queued batches; returns true once the writer is stopping. */
static bool take_queue(pal_writer *w)
{
    /* pthread_mutex_lock only fails on misuse (not initialised, deadlock),
     * which this file rules out. */
    (void)pthread_mutex_lock(&w->lock);
    pal_batch *b = w->queue_head;
    w->queue_head = w->queue_tail = NULL;
    bool stopping = w->stopping;
    (void)pthread_mutex_unlock(&w->lock);

    while (b != NULL) {
        pal_batch *next = b->next; /* read first: b may complete below */
        w->active_batches++;
        advance_batch(w, b);
        b = next;
    }
    return stopping;
}

static void *worker_main(void *arg)
{
    pal_writer *w = arg;
    if (w->flags & PAL_WRITER_LOW_PRIORITY) {
        /* Thread-level priority covers I/O the kernel issues inline from this
         * thread; the per-SQE ioprio covers requests punted to io-wq. Both are
         * best effort: buffered writes are mostly written back by the flusher
         * threads later, which no priority set here can reach. */
        if (syscall(SYS_ioprio_set, PAL_IOPRIO_WHO_PROCESS, 0, PAL_IOPRIO_BACKGROUND) != 0)
            atomic_store(&w->priority_error, errno);
    }
    for (;;) {
        bool stopping = take_queue(w);
        fill_ring(w);
        /* Stopping and drained: every accepted batch has been answered. */
        if (stopping && w->active_batches == 0)
            break;
        int rc = io_uring_submit_and_wait(&w->ring, 1);
        /* Errors here (EINTR, EAGAIN, EBUSY) are transient: SQEs left
         * unsubmitted stay in the SQ and go with the next call. */
        (void)rc;
        reap(w);
    }
    return NULL;
}

/* ---- API ------------------------------------------------------------------- */

PAL_API pal_status pal_writer_open(uint32_t queue_depth, uint32_t flags, pal_writer **out,
                                   int32_t *err)
{
    if (out == NULL || queue_depth > PAL_WRITER_MAX_QUEUE_DEPTH ||
        (flags & ~(uint32_t)PAL_WRITER_LOW_PRIORITY) != 0)
        return pal_result(err, PAL_E_INVALID, EINVAL);
    *out = NULL;
    if (queue_depth == 0)
        queue_depth = PAL_WRITER_DEFAULT_QUEUE_DEPTH;
    /* The wake read plus at least one op must fit. */
    if (queue_depth < 2)
        queue_depth = 2;

    pal_writer *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return pal_result(err, PAL_E_NOMEM, ENOMEM);
    w->flags = flags;

    int rc = io_uring_queue_init(queue_depth, &w->ring, 0);
    if (rc < 0) {
        free(w);
        return pal_result(err, rc == -ENOSYS ? PAL_E_UNSUPPORTED : PAL_E_SYSTEM, -rc);
    }
    w->ring_limit = w->ring.cq.ring_entries;

    int error = 0;
    w->wake_fd = eventfd(0, EFD_CLOEXEC);
    if (w->wake_fd < 0) {
        error = errno;
        goto fail_ring;
    }
    error = pthread_mutex_init(&w->lock, NULL);
    if (error != 0)
        goto fail_eventfd;

    /* The worker starts with every signal blocked: signals meant for the
     * managed runtime's threads must never land on it. */
    sigset_t all, previous;
    sigfillset(&all);
    error = pthread_sigmask(SIG_SETMASK, &all, &previous);
    if (error != 0)
        goto fail_mutex;
    error = pthread_create(&w->worker, NULL, worker_main, w);
    /* Restoring a mask obtained from pthread_sigmask itself cannot fail. */
    (void)pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (error != 0)
        goto fail_mutex;
    /* Naming the thread is diagnostics only; a failure changes nothing. */
    (void)pthread_setname_np(w->worker, "storage-pal-io");

    *out = w;
    return pal_ok(err);

fail_mutex:
    (void)pthread_mutex_destroy(&w->lock);
fail_eventfd:
    (void)close(w->wake_fd);
fail_ring:
    io_uring_queue_exit(&w->ring);
    free(w);
    return pal_result(err, PAL_E_SYSTEM, error);
}

PAL_API pal_status pal_writer_close(pal_writer *w, int32_t *err)
{
    if (w == NULL)
        return pal_result(err, PAL_E_INVALID, EINVAL);
    (void)pthread_mutex_lock(&w->lock);
    w->stopping = true;
    (void)pthread_mutex_unlock(&w->lock);
    eventfd_signal(w->wake_fd);

    int error = pthread_join(w->worker, NULL);
    /* Cancels the still-armed wake read; wake_value stays valid until free. */
    io_uring_queue_exit(&w->ring);
    if (close(w->wake_fd) != 0 && error == 0)
        error = errno;
    (void)pthread_mutex_destroy(&w->lock);
    free(w);
    return error == 0 ? pal_ok(err) : pal_result(err, PAL_E_SYSTEM, error);
}

/* Checks an item's own fields and bounds its ops and iovecs (at most one of
 * each per ref), without walking its refs. */
static pal_status check_item(const pal_write_item *item, uint64_t *ops, uint64_t *iovs)
{
    int fd;
    if (!pal_fd_valid(item->fd, &fd))
        return PAL_E_INVALID;
    if (item->kind == PAL_ITEM_FSYNC || item->kind == PAL_ITEM_FDATASYNC) {
        *ops += 1;
        return PAL_OK;
    }
    if (item->kind != PAL_ITEM_WRITE || item->page_size == 0 ||
        (item->ref_count > 0 && item->refs == NULL))
        return PAL_E_INVALID;
    *ops += item->ref_count;
    *iovs += item->ref_count;
    return PAL_OK;
}

/* Checks an item's refs and splits it into ops in one walk: one writev per
 * run of adjacent refs. Returns the number of ops, or UINT32_MAX when a ref is
 * invalid (nothing of the call has been issued then). */
static uint32_t build_item_ops(pal_batch *b, pal_write_item *item, pal_op *ops,
                               struct iovec *iovs)
{
    int fd = (int)item->fd;
    if (item->kind != PAL_ITEM_WRITE) {
        ops[0] = (pal_op){ .batch = b, .item = item, .fd = fd, .kind = item->kind };
        return 1;
    }
    /* Highest page number whose end offset still fits in off_t. */
    uint64_t max_page = (uint64_t)INT64_MAX / item->page_size - 1;
    uint32_t op_count = 0;
    pal_op *op = NULL;
    for (uint32_t i = 0; i < item->ref_count; i++) {
        const pal_page_ref *ref = &item->refs[i];
        if (ref->data == NULL || ref->page_count == 0 || ref->page_number > max_page ||
            ref->page_count - 1 > max_page - ref->page_number)
            return UINT32_MAX;
        if (i > 0 && ref->page_number < item->refs[i - 1].page_number + item->refs[i - 1].page_count)
            return UINT32_MAX; /* unsorted or overlapping */
        /* No byte cap: a writev longer than the kernel takes at once completes
         * short and is re-issued for the rest. */
        if (pal_starts_write(item, i, op == NULL ? 0 : op->iovcnt, op == NULL ? 0 : op->remaining,
                             PAL_MAX_IOV_PER_WRITE, UINT64_MAX)) {
            op = &ops[op_count++];
            *op = (pal_op){ .batch = b,
                            .item = item,
                            .fd = fd,
                            .kind = PAL_ITEM_WRITE,
                            .iov = &iovs[i],
                            .offset = ref->page_number * item->page_size };
        }
        size_t length = (size_t)ref->page_count * item->page_size;
        iovs[i].iov_base = (void *)ref->data; /* writev never writes to it */
        iovs[i].iov_len = length;
        op->iovcnt++;
        op->remaining += length;
    }
    item->runs = op_count;
    return op_count;
}

PAL_API pal_status pal_writer_submit(pal_writer *w, pal_write_item *items, uint32_t item_count,
                                     int32_t *err)
{
    if (w == NULL || (item_count > 0 && items == NULL))
        return pal_result(err, PAL_E_INVALID, EINVAL);

    uint64_t op_total = 0, iov_total = 0;
    for (uint32_t i = 0; i < item_count; i++) {
        pal_write_item *item = &items[i];
        item->result = 0;
        item->bytes_written = 0;
        item->runs = 0;
        if (check_item(item, &op_total, &iov_total) != PAL_OK)
            return pal_result(err, PAL_E_INVALID, EINVAL);
    }
    if (op_total == 0)
        return pal_ok(err);
    if (op_total > UINT32_MAX ||
        op_total > (SIZE_MAX - iov_total * sizeof(struct iovec)) / sizeof(pal_op))
        return pal_result(err, PAL_E_NOMEM, ENOMEM);

    /* One block: ops first (pointer-aligned), then the iovecs they point to. */
    size_t op_bytes = (size_t)op_total * sizeof(pal_op);
    void *block = malloc(op_bytes + (size_t)iov_total * sizeof(struct iovec));
    if (block == NULL)
        return pal_result(err, PAL_E_NOMEM, ENOMEM);
    pal_op *ops = block;
    struct iovec *iovs = (struct iovec *)((char *)block + op_bytes);

    pal_batch batch = { .ops = ops };
    uint32_t op_index = 0;
    size_t iov_index = 0;
    for (uint32_t i = 0; i < item_count; i++) {
        uint32_t built = build_item_ops(&batch, &items[i], &ops[op_index], &iovs[iov_index]);
        if (built == UINT32_MAX) {
            free(block);
            return pal_result(err, PAL_E_INVALID, EINVAL);
        }
        op_index += built;
        if (items[i].kind == PAL_ITEM_WRITE)
            iov_index += items[i].ref_count;
    }
    batch.op_count = op_index; /* at least one: every item with a bound above holds an op */

    /* A condition variable with default attributes is plain memory: making it
     * cannot fail and asks nothing of the kernel. */
    (void)pthread_cond_init(&batch.done_cond, NULL);

    (void)pthread_mutex_lock(&w->lock);
    bool stopping = w->stopping;
    if (!stopping) {
        if (w->queue_tail != NULL)
            w->queue_tail->next = &batch;
        else
            w->queue_head = &batch;
        w->queue_tail = &batch;
    }
    (void)pthread_mutex_unlock(&w->lock);

    pal_status status = PAL_OK;
    int32_t error = 0;
    if (stopping) {
        status = PAL_E_CLOSED;
    } else {
        counter_add(&w->submits);
        eventfd_signal(w->wake_fd);
        /* The batch is in the worker's hands: it must not be freed before the
         * worker marks it done. */
        (void)pthread_mutex_lock(&w->lock);
        while (!batch.done)
            (void)pthread_cond_wait(&batch.done_cond, &w->lock);
        (void)pthread_mutex_unlock(&w->lock);
        if (batch.first_error != 0) {
            status = PAL_E_SYSTEM;
            error = batch.first_error;
        }
    }
    (void)pthread_cond_destroy(&batch.done_cond);
    free(block);
    return pal_result(err, status, error);
}

PAL_API pal_status pal_writer_get_stats(pal_writer *w, pal_writer_stats *out, int32_t *err)
{
    if (w == NULL || out == NULL)
        return pal_result(err, PAL_E_INVALID, EINVAL);
    *out = (pal_writer_stats){
        .submits = atomic_load_explicit(&w->submits, memory_order_relaxed),
        .writes = atomic_load_explicit(&w->writes, memory_order_relaxed),
        .syncs = atomic_load_explicit(&w->syncs, memory_order_relaxed),
        .short_writes = atomic_load_explicit(&w->short_writes, memory_order_relaxed),
        .ring_full_waits = atomic_load_explicit(&w->ring_full_waits, memory_order_relaxed),
        .priority_error = atomic_load(&w->priority_error),
        .flags = w->flags,
    };
    return pal_ok(err);
}
