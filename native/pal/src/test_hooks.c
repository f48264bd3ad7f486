/* Test seams, compiled into the test build of the library only. Faults at
 * I/O calls are not here: they are a runtime seam of the shipped library
 * (fault.c). */
#ifdef PAL_TEST_HOOKS
#include <stdatomic.h>

#include "pal_internal.h"

static atomic_int refuse_direct;

void pal_test_refuse_direct_io(int refuse)
{
    atomic_store(&refuse_direct, refuse);
}

int pal_test_direct_io_refused(void)
{
    return atomic_load(&refuse_direct);
}

static atomic_int lack_renameat2;

void pal_test_lack_renameat2(int lack)
{
    atomic_store(&lack_renameat2, lack);
}

int pal_test_renameat2_lacking(void)
{
    return atomic_load(&lack_renameat2);
}
#else
/* ISO C forbids an empty translation unit. */
typedef int pal_test_hooks_disabled;
#endif
