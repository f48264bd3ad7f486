/* Parser for /proc/self/smaps_rollup. Kept apart from the reader so the tests
 * can feed it fixed text, and free of Linux headers so it builds everywhere. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pal_internal.h"

#define PAL_KIB 1024u

typedef struct smaps_field {
    const char *key;
    uint32_t flag;
    size_t offset;
} smaps_field;

/* Keys are matched whole: "Pss" must not take "Pss_Anon" or "SwapPss". */
static const smaps_field smaps_fields[] = {
    { "Rss", PAL_MEM_RSS, offsetof(pal_memory_stats, rss) },
    { "Pss", PAL_MEM_PSS, offsetof(pal_memory_stats, pss) },
    { "Private_Dirty", PAL_MEM_PRIVATE_DIRTY, offsetof(pal_memory_stats, private_dirty) },
    { "Anonymous", PAL_MEM_ANONYMOUS, offsetof(pal_memory_stats, anonymous) },
    { "Swap", PAL_MEM_SWAP, offsetof(pal_memory_stats, swap) },
};

static const smaps_field *find_field(const char *key, size_t key_length)
{
    for (size_t i = 0; i < sizeof(smaps_fields) / sizeof(smaps_fields[0]); i++) {
        const char *name = smaps_fields[i].key;
        if (strlen(name) == key_length && memcmp(name, key, key_length) == 0)
            return &smaps_fields[i];
    }
    return NULL;
}

/* Parses "   1234 kB" into bytes; 0 on success, -1 if malformed or too large. */
static int parse_kib(const char *p, const char *end, uint64_t *bytes)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end || *p < '0' || *p > '9')
        return -1;
    uint64_t value = 0;
    while (p < end && *p >= '0' && *p <= '9') {
        uint64_t digit = (uint64_t)(*p - '0');
        if (value > (UINT64_MAX - digit) / 10u)
            return -1;
        value = value * 10u + digit;
        p++;
    }
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if ((size_t)(end - p) < 2 || memcmp(p, "kB", 2) != 0)
        return -1;
    if (value > UINT64_MAX / PAL_KIB)
        return -1;
    *bytes = value * PAL_KIB;
    return 0;
}

pal_status pal_parse_smaps_rollup(const char *text, size_t length, pal_memory_stats *out,
                                  int32_t *err)
{
    if (text == NULL || out == NULL)
        return pal_result(err, PAL_E_INVALID, EINVAL);
    memset(out, 0, sizeof(*out));

    const char *end = text + length;
    const char *line = text;
    while (line < end) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (eol == NULL)
            eol = end;
        const char *colon = memchr(line, ':', (size_t)(eol - line));
        /* The header line ("addr-addr ---p ... [rollup]") has colons too; its
         * text before the first one is no known key, so it is skipped. */
        if (colon != NULL) {
            const smaps_field *field = find_field(line, (size_t)(colon - line));
            if (field != NULL) {
                uint64_t bytes;
                if (parse_kib(colon + 1, eol, &bytes) != 0)
                    return pal_result(err, PAL_E_INVALID, EINVAL);
                memcpy((char *)out + field->offset, &bytes, sizeof(bytes));
                out->valid |= field->flag;
            }
        }
        line = eol + 1;
    }
    return pal_ok(err);
}
