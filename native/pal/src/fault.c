/*
 * Fault seam: rules that make the nth call of a kind fail, fail after a
 * partial write, or come back short (see pal.h). Portable: the call sites are
 * in the platform sources, which ask pal_fault_take() once per call.
 *
 * Disarmed, the seam is one relaxed load of `pal_fault_armed` per call site.
 * Armed, calls take a spinlock: the critical section is a counter increment
 * and a scan of at most PAL_FAULT_MAX_RULES rules, and only tests arm it, so
 * a lock-free design would buy nothing but risk.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "pal_internal.h"

#if defined(_WIN32)
#  define PAL_FAULT_EINVAL 87 /* ERROR_INVALID_PARAMETER */
#  define PAL_FAULT_ENOTSUP 50 /* ERROR_NOT_SUPPORTED */
#else
#  include <errno.h>
#  define PAL_FAULT_EINVAL EINVAL
#  define PAL_FAULT_ENOTSUP ENOTSUP
#endif

_Static_assert(PAL_FAULT_KIND_COUNT <= PAL_FAULT_MAX_KINDS,
               "pal_fault_stats has a slot for every kind");

atomic_uint pal_fault_armed;

static atomic_flag lock = ATOMIC_FLAG_INIT;
/* Guarded by `lock`. */
static pal_fault_rule rules[PAL_FAULT_MAX_RULES];
static uint32_t rule_count;
static uint64_t calls[PAL_FAULT_MAX_KINDS];
static uint64_t fired[PAL_FAULT_MAX_KINDS];

static void lock_take(void)
{
    while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire)) {
    }
}

static void lock_release(void)
{
    atomic_flag_clear_explicit(&lock, memory_order_release);
}

static bool is_write_kind(uint32_t kind)
{
    return kind == PAL_FAULT_JOURNAL_WRITE || kind == PAL_FAULT_JOURNAL_PRESIZE ||
           kind == PAL_FAULT_DATA_WRITE;
}

static pal_status check_rule(const pal_fault_rule *rule, int32_t *code)
{
    *code = PAL_FAULT_EINVAL;
    if (rule->kind >= PAL_FAULT_KIND_COUNT || rule->nth == 0 || rule->times == 0)
        return PAL_E_INVALID;
    switch (rule->mode) {
    case PAL_FAULT_ERROR:
        return rule->error > 0 ? PAL_OK : PAL_E_INVALID;
    case PAL_FAULT_PARTIAL:
    case PAL_FAULT_SHORT:
        if (!is_write_kind(rule->kind) || (rule->mode == PAL_FAULT_PARTIAL && rule->error <= 0))
            return PAL_E_INVALID;
#if defined(_WIN32)
        /* The Windows sources honour ERROR only. */
        *code = PAL_FAULT_ENOTSUP;
        return PAL_E_UNSUPPORTED;
#else
        return PAL_OK;
#endif
    default:
        return PAL_E_INVALID;
    }
}

PAL_API pal_status pal_fault_arm(const pal_fault_rule *new_rules, uint32_t new_count,
                                 int32_t *err)
{
    if (new_count > PAL_FAULT_MAX_RULES || (new_count > 0 && new_rules == NULL))
        return pal_result(err, PAL_E_INVALID, PAL_FAULT_EINVAL);
    for (uint32_t i = 0; i < new_count; i++) {
        int32_t code;
        pal_status status = check_rule(&new_rules[i], &code);
        if (status != PAL_OK)
            return pal_result(err, status, code);
    }
    lock_take();
    memcpy(rules, new_rules, (size_t)new_count * sizeof(rules[0]));
    rule_count = new_count;
    memset(calls, 0, sizeof(calls));
    memset(fired, 0, sizeof(fired));
    atomic_store_explicit(&pal_fault_armed, 1u, memory_order_relaxed);
    lock_release();
    return pal_ok(err);
}

PAL_API pal_status pal_fault_disarm(int32_t *err)
{
    lock_take();
    atomic_store_explicit(&pal_fault_armed, 0u, memory_order_relaxed);
    rule_count = 0;
    lock_release();
    return pal_ok(err);
}

PAL_API pal_status pal_fault_get_stats(pal_fault_stats *out, int32_t *err)
{
    if (out == NULL)
        return pal_result(err, PAL_E_INVALID, PAL_FAULT_EINVAL);
    lock_take();
    memcpy(out->calls, calls, sizeof(out->calls));
    memcpy(out->fired, fired, sizeof(out->fired));
    out->armed = atomic_load_explicit(&pal_fault_armed, memory_order_relaxed);
    out->reserved = 0;
    lock_release();
    return pal_ok(err);
}

pal_fault pal_fault_take_armed(uint32_t kind)
{
    pal_fault fault = { 0, 0, 0 };
    if (kind >= PAL_FAULT_KIND_COUNT)
        return fault;
    lock_take();
    /* Disarmed between the caller's load and the lock: count nothing. */
    if (atomic_load_explicit(&pal_fault_armed, memory_order_relaxed) != 0) {
        uint64_t n = ++calls[kind];
        for (uint32_t i = 0; i < rule_count; i++) {
            const pal_fault_rule *rule = &rules[i];
            if (rule->kind == kind && n >= rule->nth && n - rule->nth < rule->times) {
                fault = (pal_fault){ rule->mode, rule->error, rule->bytes };
                fired[kind]++;
                break;
            }
        }
    }
    lock_release();
    return fault;
}
