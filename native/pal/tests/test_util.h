/* Minimal test support: checks that abort the test with a location, and a
 * per-run scratch directory under the root given on the command line. */
#ifndef STORAGE_PAL_TEST_UTIL_H
#define STORAGE_PAL_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "pal.h"

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

/* Expects a pal call to succeed; needs an `int32_t err` in scope. */
#define CHECK_OK(call)                                                                \
    do {                                                                              \
        pal_status status_ = (call);                                                  \
        if (status_ != PAL_OK) {                                                      \
            fprintf(stderr, "%s:%d: %s -> status %d, err %d\n", __FILE__, __LINE__,   \
                    #call, (int)status_, (int)err);                                   \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define RUN(test)                                                                     \
    do {                                                                              \
        printf("RUN  %s\n", #test);                                                   \
        fflush(stdout);                                                               \
        test();                                                                       \
        printf("  OK %s\n", #test);                                                   \
    } while (0)

#endif /* STORAGE_PAL_TEST_UTIL_H */
