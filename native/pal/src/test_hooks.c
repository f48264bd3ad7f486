/* Test seams, compiled into the test build of the library only. */
#ifdef PAL_TEST_HOOKS
#include <stdatomic.h>

#include "pal_internal.h"

static atomic_uint truncations_left;
static atomic_int refuse_direct;

void pal_test_truncate_next_writes(uint32_t count)
{
    atomic_store(&truncations_left, count);
}

int pal_test_take_truncation(void)
{
    unsigned left = atomic_load(&truncations_left);
    while (left > 0) {
        if (atomic_compare_exchange_weak(&truncations_left, &left, left - 1))
            return 1;
    }
    return 0;
}

void pal_test_refuse_direct_io(int refuse)
{
    atomic_store(&refuse_direct, refuse);
}

int pal_test_direct_io_refused(void)
{
    return atomic_load(&refuse_direct);
}
#else
/* ISO C forbids an empty translation unit. */
typedef int pal_test_hooks_disabled;
#endif
