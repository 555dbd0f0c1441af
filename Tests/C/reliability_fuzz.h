/*
 * reliability_fuzz.h - a byte-string-driven interpreter of yyc_kv operations checked against a
 * model (issue 7, fuzzing).
 *
 * rel_fuzz_kv_one(data, size) reads the bytes as a sequence of operations on a YYC_KV_MIXED
 * storage in a fresh temporary folder - saves (inline, to md5(key), to custom names, with
 * invalid names, empty keys, empty values, extended data), reads, item reads, batch reads,
 * removals, size and time removals, LRU fits, remove-all (fast and slow) and reopens - and
 * compares every result with a simple in-memory model: statuses, bytes, file names, sizes,
 * extended data, count and total size after every operation. It returns 0 and aborts (after
 * printing the operation) on the first disagreement, so it is ready to be the body of a
 * libFuzzer target:
 *
 *     #include "reliability_fuzz.h"
 *     int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return rel_fuzz_kv_one(d, n); }
 *
 * (built with clang -fsanitize=fuzzer,address from the Swift toolchain; `make fuzz` is the build
 * engineer's). rel_fuzz_disk_one does the same for yyc_diskcache. test_bad_input.c runs both on
 * fixed-seed random inputs as a smoke test.
 */
#ifndef YYCACHE_RELIABILITY_FUZZ_H
#define YYCACHE_RELIABILITY_FUZZ_H

#include "reliability_support.h"

#include "kv/kv_private.h" /* yyc__kv_testing_* (test builds) */

#include <math.h>

#define FZ_KEYS 8

typedef struct fz_entry {
    bool present;
    unsigned char *val;
    size_t len;
    char filename[400]; /* "" = inline */
    unsigned char ext[8];
    size_t ext_len;
    int64_t expires; /* the disk fuzz's model clock (ms) at which it expires; INT64_MAX: never */
    bool queued;     /* the disk fuzz: written in deferred mode, not committed yet */
} fz_entry;

typedef struct fz_state {
    const uint8_t *data;
    size_t size, pos;
    char dir[4096];
    yyc_kv *kv;
    fz_entry model[FZ_KEYS];
    const char *keys[FZ_KEYS];
    char long_key[301];
    long op_index;
    const char *op_name;
} fz_state;

static inline uint8_t fz_byte(fz_state *s) { return s->pos < s->size ? s->data[s->pos++] : 0; }

#define FZ_CHECK(s, cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz: operation %ld (%s): %s: ", (s)->op_index, (s)->op_name, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " [%s]\n", rel_last_error());                                          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static inline void fz_entry_clear(fz_entry *e) {
    free(e->val);
    memset(e, 0, sizeof *e);
}

static inline void fz_open(fz_state *s) {
    int st = yyc_kv_open(s->dir, YYC_KV_MIXED, &s->kv);
    FZ_CHECK(s, st == YYC_OK, "open %s", yyc_status_name(st));
}

/* Whether actual is a data file name that a save asking for `requested` may use: requested
 * itself, or a fresh variant of it - requested (cut to fit 255 bytes) + "~" + 8 hex digits -
 * when a file of that name existed (kv_storage.h, yyc_kv_save). */
static inline bool fz_file_name_matches(const char *actual, const char *requested) {
    if (strcmp(actual, requested) == 0) return true;
    size_t base = strnlen(requested, 255 - 9), len = strlen(actual);
    if (len != base + 9 || strncmp(actual, requested, base) != 0 || actual[base] != '~')
        return false;
    for (size_t i = base + 1; i < len; i++)
        if (!strchr("0123456789abcdef", actual[i])) return false;
    return true;
}

/* Compares a returned item (value included when with_value) with the model entry. */
static inline void fz_check_item(fz_state *s, int k, const yyc_kv_item *it, bool with_value) {
    const fz_entry *e = &s->model[k];
    FZ_CHECK(s, it && e->present, "item for key %d (model present %d)", k, e->present);
    FZ_CHECK(s, strcmp(it->key, s->keys[k]) == 0, "item key");
    FZ_CHECK(s, it->size == (int64_t)e->len, "size %lld, model %zu", (long long)it->size, e->len);
    if (e->filename[0])
        FZ_CHECK(s, it->filename && fz_file_name_matches(it->filename, e->filename),
                 "file name %s, model %s", it->filename ? it->filename : "(inline)", e->filename);
    else FZ_CHECK(s, it->filename == NULL, "file name %s for an inline value", it->filename);
    FZ_CHECK(s,
             it->extended_len == e->ext_len &&
                 (e->ext_len == 0 || memcmp(it->extended_data, e->ext, e->ext_len) == 0),
             "extended data (%zu bytes, model %zu)", it->extended_len, e->ext_len);
    if (with_value)
        FZ_CHECK(s,
                 it->value_len == e->len && (e->len == 0 || memcmp(it->value, e->val, e->len) == 0),
                 "value (%zu bytes, model %zu)", it->value_len, e->len);
    else FZ_CHECK(s, it->value == NULL, "info item with a value");
}

static inline void fz_check_totals(fz_state *s) {
    int64_t count = -1, size = -1, mc = 0, ms = 0;
    for (int k = 0; k < FZ_KEYS; k++)
        if (s->model[k].present) {
            mc++;
            ms += (int64_t)s->model[k].len;
        }
    FZ_CHECK(s, yyc_kv_count(s->kv, &count) == YYC_OK && count == mc, "count %lld, model %lld",
             (long long)count, (long long)mc);
    FZ_CHECK(s, yyc_kv_size(s->kv, &size) == YYC_OK && size == ms, "size %lld, model %lld",
             (long long)size, (long long)ms);
}

/* After an operation whose victims the model cannot predict (LRU fits), adopt the storage's
 * answer for presence - every remaining entry must still match the model. */
static inline void fz_sync_presence(fz_state *s) {
    for (int k = 0; k < FZ_KEYS; k++) {
        if (!s->model[k].present) continue;
        int st = yyc_kv_exists(s->kv, s->keys[k]);
        FZ_CHECK(s, st == YYC_OK || st == YYC_NOTFOUND, "exists %s", yyc_status_name(st));
        if (st == YYC_NOTFOUND) fz_entry_clear(&s->model[k]);
    }
}

static inline void fz_op(fz_state *s) {
    uint8_t op = fz_byte(s) % 16;
    int k = fz_byte(s) % FZ_KEYS;
    const char *key = s->keys[k];
    fz_entry *e = &s->model[k];
    int st;
    switch (op) {
    case 0:
    case 1:
    case 2: { /* save */
        s->op_name = "save";
        uint8_t how = fz_byte(s) % 10;
        uint8_t lb = fz_byte(s), seed = fz_byte(s), extb = fz_byte(s);
        size_t len = lb < 8 ? 0 : lb < 128 ? (size_t)lb * 3 : (size_t)(lb - 120) * 377;
        unsigned char *v = len ? malloc(len) : NULL;
        for (size_t i = 0; i < len; i++) v[i] = (unsigned char)(seed + i * 7);
        char name[400];
        const char *fname = NULL;
        bool bad_name = false;
        switch (how) {
        case 0:
        case 1:
        case 2: break;             /* inline */
        case 3: fname = ""; break; /* empty: inline */
        case 4:
        case 5:
            yyc_kv_md5_filename(key, name);
            fname = name;
            break;
        case 6:
            snprintf(name, sizeof name, "f%d", k);
            fname = name;
            break;
        case 7:
            snprintf(name, sizeof name, "g%d.bin", k);
            fname = name;
            break;
        case 8:
            fname = seed % 2 ? "a/b" : "..";
            bad_name = true;
            break;
        default:
            memset(name, 'n', 300);
            name[300] = '\0';
            fname = name;
            bad_name = true;
        }
        unsigned char ext[8];
        for (int i = 0; i < 8; i++) ext[i] = (unsigned char)(extb + i);
        size_t ext_len = extb % 3 == 0 ? 0 : extb % 3 == 1 ? 8 : 3;
        st = yyc_kv_save(s->kv, key, v, len, fname, ext_len ? ext : NULL, ext_len);
        int want = (!key[0] || bad_name) ? YYC_EINVAL : YYC_OK;
        FZ_CHECK(s, st == want, "save status %s, expected %s", yyc_status_name(st),
                 yyc_status_name(want));
        if (st == YYC_OK) {
            fz_entry_clear(e);
            e->present = true;
            e->val = v;
            v = NULL;
            e->len = len;
            snprintf(e->filename, sizeof e->filename, "%s", fname ? fname : "");
            memcpy(e->ext, ext, ext_len);
            e->ext_len = ext_len;
        }
        free(v);
        break;
    }
    case 3: { /* get value */
        s->op_name = "get_value";
        void *v = NULL;
        size_t n = 0;
        st = yyc_kv_get_value(s->kv, key, &v, &n);
        FZ_CHECK(s, st == (e->present ? YYC_OK : YYC_NOTFOUND), "status %s, model present %d",
                 yyc_status_name(st), e->present);
        if (st == YYC_OK)
            FZ_CHECK(s, n == e->len && (n == 0 || memcmp(v, e->val, n) == 0), "value %zu/%zu", n,
                     e->len);
        yyc_free(v);
        break;
    }
    case 4:
    case 5: { /* get item / info */
        bool with_value = op == 4;
        s->op_name = with_value ? "get_item" : "get_item_info";
        yyc_kv_item *it = NULL;
        st = with_value ? yyc_kv_get_item(s->kv, key, &it) : yyc_kv_get_item_info(s->kv, key, &it);
        FZ_CHECK(s, st == (e->present ? YYC_OK : YYC_NOTFOUND), "status %s, model present %d",
                 yyc_status_name(st), e->present);
        if (st == YYC_OK) fz_check_item(s, k, it, with_value);
        yyc_kv_item_free(it);
        break;
    }
    case 6: { /* batch get */
        s->op_name = "get_items";
        uint8_t mask = fz_byte(s);
        const char *list[FZ_KEYS + 1];
        size_t n = 0, expect = 0;
        for (int i = 0; i < FZ_KEYS; i++)
            if (mask & (1u << i)) {
                list[n++] = s->keys[i];
                expect += s->model[i].present;
            }
        if (mask & 1) list[n++] = s->keys[0]; /* a duplicate */
        bool with_value = fz_byte(s) % 2;
        yyc_kv_item **items = NULL;
        size_t count = 0;
        st = with_value ? yyc_kv_get_items(s->kv, list, n, &items, &count)
                        : yyc_kv_get_item_infos(s->kv, list, n, &items, &count);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        FZ_CHECK(s, count == expect, "%zu items, model %zu", count, expect);
        for (size_t i = 0; i < count; i++) {
            int found = -1;
            for (int j = 0; j < FZ_KEYS; j++)
                if (strcmp(items[i]->key, s->keys[j]) == 0) found = j;
            FZ_CHECK(s, found >= 0, "unknown key in a batch");
            fz_check_item(s, found, items[i], with_value);
        }
        yyc_kv_items_free(items, count);
        break;
    }
    case 7: { /* remove */
        s->op_name = "remove";
        st = yyc_kv_remove(s->kv, key);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        fz_entry_clear(e);
        break;
    }
    case 8: { /* remove keys */
        s->op_name = "remove_keys";
        uint8_t mask = fz_byte(s);
        const char *list[FZ_KEYS];
        size_t n = 0;
        for (int i = 0; i < FZ_KEYS; i++)
            if (mask & (1u << i)) list[n++] = s->keys[i];
        st = yyc_kv_remove_keys(s->kv, list, n);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        for (int i = 0; i < FZ_KEYS; i++)
            if (mask & (1u << i)) fz_entry_clear(&s->model[i]);
        break;
    }
    case 9: { /* remove larger than */
        s->op_name = "remove_larger_than";
        static const int64_t sizes[] = {INT64_MIN, -1, 0, 100, 5000, 20480, INT64_MAX};
        int64_t limit = sizes[fz_byte(s) % 7];
        st = yyc_kv_remove_larger_than(s->kv, limit);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        for (int i = 0; i < FZ_KEYS; i++)
            if (limit != INT64_MAX && (limit <= 0 || (int64_t)s->model[i].len > limit))
                fz_entry_clear(&s->model[i]);
        break;
    }
    case 10: { /* remove earlier than */
        s->op_name = "remove_earlier_than";
        int64_t now = (int64_t)time(NULL);
        const int64_t times[] = {INT64_MIN, 0, 1, now + 10, INT64_MAX};
        int which = fz_byte(s) % 5;
        st = yyc_kv_remove_earlier_than(s->kv, times[which]);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        if (which >= 3)
            for (int i = 0; i < FZ_KEYS; i++) fz_entry_clear(&s->model[i]);
        break;
    }
    case 11: { /* LRU fits */
        bool by_size = fz_byte(s) % 2;
        s->op_name = by_size ? "remove_to_fit_size" : "remove_to_fit_count";
        int64_t limit = by_size ? (int64_t)fz_byte(s) * 300 : fz_byte(s) % 6;
        st = by_size ? yyc_kv_remove_to_fit_size(s->kv, limit)
                     : yyc_kv_remove_to_fit_count(s->kv, limit);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        fz_sync_presence(s);
        int64_t total = -1;
        FZ_CHECK(s,
                 (by_size ? yyc_kv_size(s->kv, &total) : yyc_kv_count(s->kv, &total)) == YYC_OK &&
                     total <= (limit <= 0 ? 0 : limit),
                 "total %lld above the limit %lld", (long long)total, (long long)limit);
        break;
    }
    case 12: { /* remove all */
        bool slow = fz_byte(s) % 2;
        s->op_name = slow ? "remove_all_progress" : "remove_all";
        st = slow ? yyc_kv_remove_all_progress(s->kv, NULL, NULL) : yyc_kv_remove_all(s->kv);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        for (int i = 0; i < FZ_KEYS; i++) fz_entry_clear(&s->model[i]);
        break;
    }
    case 13: { /* exists */
        s->op_name = "exists";
        st = yyc_kv_exists(s->kv, key);
        FZ_CHECK(s, st == (e->present ? YYC_OK : YYC_NOTFOUND), "status %s, model %d",
                 yyc_status_name(st), e->present);
        break;
    }
    case 14: { /* reopen */
        s->op_name = "reopen";
        yyc_kv_close(s->kv);
        s->kv = NULL;
        fz_open(s);
        break;
    }
    default: { /* every key */
        s->op_name = "read all";
        for (int i = 0; i < FZ_KEYS; i++) {
            yyc_kv_item *it = NULL;
            st = yyc_kv_get_item(s->kv, s->keys[i], &it);
            FZ_CHECK(s, st == (s->model[i].present ? YYC_OK : YYC_NOTFOUND),
                     "key %d: status %s, model %d", i, yyc_status_name(st), s->model[i].present);
            if (st == YYC_OK) fz_check_item(s, i, it, true);
            yyc_kv_item_free(it);
        }
    }
    }
    fz_check_totals(s);
}

/* Runs one input. Returns 0 (libFuzzer's convention); aborts on a disagreement. */
static inline int rel_fuzz_kv_one(const uint8_t *data, size_t size) {
    fz_state *s = calloc(1, sizeof *s);
    if (!s) abort();
    s->data = data;
    s->size = size;
    memset(s->long_key, 'L', 300);
    const char *keys[FZ_KEYS] = {"a",         "b", "", "\xff\xfe\x80", "../../x", "key with spaces",
                                 s->long_key, "c"};
    memcpy(s->keys, keys, sizeof keys);
    const char *base = getenv("TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/yyc-fuzz-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(s->dir)) abort();
    s->op_name = "open";
    fz_open(s);
    while (s->pos < s->size) {
        s->op_index++;
        fz_op(s);
    }
    yyc_kv_close(s->kv);
    test_rm_rf(s->dir);
    for (int k = 0; k < FZ_KEYS; k++) fz_entry_clear(&s->model[k]);
    free(s);
    return 0;
}

/* ---------------------------------------------------------------- the disk cache */

/* The same for yyc_diskcache: the inline threshold comes from the first byte (0 = every value
 * in a file, 20480, SIZE_MAX = every value inline); sets with the file-name function on or off,
 * explicit file names (valid and invalid), extended data, gets, removes, trims by count, cost
 * and age, remove-all (fast, and slow with its progress checked), reopens and a second handle
 * on the shared core. After every step: totals, and data/ holds exactly the files of the
 * values stored in files (no leak, no loss). */

typedef struct fzd_state {
    fz_state base; /* keys, model (filename = the data file's name, "" when inline), input */
    yyc_diskcache *dc;
    size_t threshold;
    bool fn_on;
    int64_t last_removed;
    bool progress_ok;
    int64_t clock; /* ms the expiry clock (frozen for the input) was moved forward */
    bool deferred; /* YYC_WRITE_DEFERRED: data/ is checked once the queue is committed */
} fzd_state;

/* Whether the model's entry k is stored but past its time to live: every read of it misses and
 * removes it, every trim removes it, enumeration leaves it out. */
static inline bool fzd_expired(const fzd_state *d, int k) {
    const fz_entry *e = &d->base.model[k];
    return e->present && d->clock >= e->expires;
}

/* A read of key k: true when the model has a live entry; an expired one is removed by it,
 * unless it is still queued (deferred mode: its row is committed with its expiry and removed
 * by whatever finds it on disk later). */
static inline bool fzd_read_hits(fzd_state *d, int k) {
    fz_entry *e = &d->base.model[k];
    if (fzd_expired(d, k) && e->queued) return false;
    if (fzd_expired(d, k)) fz_entry_clear(e);
    return e->present;
}

/* The deferred queue was committed (every call but the reads and writes of one key commits it
 * first, as do a switch to immediate mode and the last release). */
static inline void fzd_queue_committed(fzd_state *d) {
    for (int k = 0; k < FZ_KEYS; k++) d->base.model[k].queued = false;
}

static inline void fzd_drop_expired(fzd_state *d) {
    for (int k = 0; k < FZ_KEYS; k++)
        if (fzd_expired(d, k)) fz_entry_clear(&d->base.model[k]);
}

typedef struct fzd_walk {
    fzd_state *d;
    int seen;
} fzd_walk;

static int fzd_walk_entry(void *ctx, const yyc_diskcache_entry *entry) {
    fzd_walk *w = ctx;
    fz_state *s = &w->d->base;
    int k = 0;
    while (k < FZ_KEYS && strcmp(s->keys[k], entry->key) != 0) k++;
    FZ_CHECK(s, k < FZ_KEYS && s->model[k].present && !fzd_expired(w->d, k),
             "enumeration gave key %d, which the model has no live entry for", k);
    FZ_CHECK(s, entry->size == (int64_t)s->model[k].len, "enumerated size");
    FZ_CHECK(s, (entry->expiry_ms == 0) == (s->model[k].expires == INT64_MAX), "enumerated expiry");
    w->seen++;
    return 0;
}

/* key 0 -> "fn-a"; key 1 -> false (md5); key 7 -> an invalid name; others -> "" (md5). */
static bool fzd_name_fn(void *ctx, const char *key, char out[256]) {
    fzd_state *d = ctx;
    if (strcmp(key, d->base.keys[0]) == 0) {
        strcpy(out, "fn-a");
        return true;
    }
    if (strcmp(key, d->base.keys[1]) == 0) return false;
    if (strcmp(key, d->base.keys[7]) == 0) {
        strcpy(out, "bad/name");
        return true;
    }
    out[0] = '\0';
    return true;
}

static void fzd_progress(void *ctx, int64_t removed, int64_t total) {
    fzd_state *d = ctx;
    if (removed < d->last_removed || removed > total) d->progress_ok = false;
    d->last_removed = removed;
}

static inline void fzd_open(fzd_state *d) {
    int st = yyc_diskcache_open(d->base.dir, d->threshold, &d->dc);
    FZ_CHECK(&d->base, st == YYC_OK, "open %s", yyc_status_name(st));
    yyc_diskcache_set_auto_trim_interval(d->dc, 0);
    if (d->fn_on) yyc_diskcache_set_filename_fn(d->dc, fzd_name_fn, d);
}

static inline void fzd_check_files(fzd_state *d) {
    fz_state *s = &d->base;
    if (d->deferred) return; /* (queued writes place their files when they commit) */
    char *data = rel_path(s->dir, "data");
    DIR *dir = opendir(data);
    FZ_CHECK(s, dir != NULL, "data/ missing");
    int found = 0, expected = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        bool known = false;
        for (int k = 0; k < FZ_KEYS && !known; k++)
            known = s->model[k].present && s->model[k].filename[0] &&
                    fz_file_name_matches(e->d_name, s->model[k].filename);
        FZ_CHECK(s, known, "data/%s belongs to no stored value", e->d_name);
        found++;
    }
    closedir(dir);
    for (int k = 0; k < FZ_KEYS; k++) expected += s->model[k].present && s->model[k].filename[0];
    FZ_CHECK(s, found == expected, "data/ holds %d files, model %d", found, expected);
    free(data);
    int64_t count = -1, cost = -1, mc = 0, ms = 0;
    for (int k = 0; k < FZ_KEYS; k++)
        if (s->model[k].present) {
            mc++;
            ms += (int64_t)s->model[k].len;
        }
    FZ_CHECK(s, yyc_diskcache_total_count(d->dc, &count) == YYC_OK && count == mc,
             "count %lld, model %lld", (long long)count, (long long)mc);
    FZ_CHECK(s, yyc_diskcache_total_cost(d->dc, &cost) == YYC_OK && cost == ms,
             "cost %lld, model %lld", (long long)cost, (long long)ms);
}

static inline void fzd_adopt_presence(fzd_state *d) {
    for (int k = 0; k < FZ_KEYS; k++)
        if (d->base.model[k].present && !yyc_diskcache_contains(d->dc, d->base.keys[k]))
            fz_entry_clear(&d->base.model[k]);
}

static inline void fzd_op(fzd_state *d) {
    fz_state *s = &d->base;
    uint8_t op = fz_byte(s) % 22;
    int k = fz_byte(s) % FZ_KEYS;
    const char *key = s->keys[k];
    fz_entry *e = &s->model[k];
    int st;
    switch (op) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 16: { /* set / set_with_filename / set_with_ttl */
        bool explicit_call = op == 3, with_ttl = op == 16;
        s->op_name = explicit_call ? "set_with_filename" : with_ttl ? "set_with_ttl" : "set";
        uint8_t lb = fz_byte(s), seed = fz_byte(s), extb = fz_byte(s), nb = fz_byte(s);
        static const double ttls[] = {0, 0.001, 0.5, 2.0, INFINITY};
        double ttl = with_ttl ? ttls[fz_byte(s) % 5] : INFINITY;
        size_t len = lb < 8 ? 0 : lb < 128 ? (size_t)lb * 3 : (size_t)(lb - 120) * 277;
        unsigned char *v = len ? malloc(len) : NULL;
        for (size_t i = 0; i < len; i++) v[i] = (unsigned char)(seed + i * 11);
        unsigned char ext[8];
        for (int i = 0; i < 8; i++) ext[i] = (unsigned char)(extb * 3 + i);
        size_t ext_len = extb % 3 == 0 ? 0 : extb % 3 == 1 ? 8 : 5;
        char given[400], md5[33];
        yyc_kv_md5_filename(key, md5);
        const char *name = NULL;
        switch (nb % 7) {
        case 0: name = NULL; break;
        case 1: name = ""; break;
        case 2: name = md5; break;
        case 3:
            snprintf(given, sizeof given, "n%d", k);
            name = given;
            break;
        case 4: name = "a/b"; break;
        case 5: name = ".."; break;
        default:
            memset(given, 'x', 300);
            given[300] = '\0';
            name = given;
        }
        if (explicit_call)
            st = yyc_diskcache_set_with_filename(d->dc, key, v, len, ext_len ? ext : NULL, ext_len,
                                                 name);
        else if (with_ttl)
            st = yyc_diskcache_set_with_ttl(d->dc, key, v, len, ext_len ? ext : NULL, ext_len, ttl);
        else st = yyc_diskcache_set(d->dc, key, v, len, ext_len ? ext : NULL, ext_len);
        bool to_file = d->threshold == 0 || (d->threshold != SIZE_MAX && len > d->threshold);
        const char *file = NULL; /* the expected data file name */
        bool bad = false;
        if (to_file) {
            if (explicit_call && name && *name) file = name;
            else if (!explicit_call && d->fn_on && k == 0) file = "fn-a";
            else if (!explicit_call && d->fn_on && k == 7) bad = true;
            if (!file && !bad) file = md5;
            if (file && !yyc_kv_filename_is_valid(file)) bad = true;
        }
        int want = !key[0] || bad ? YYC_EINVAL : YYC_OK;
        FZ_CHECK(s, st == want, "set status %s, expected %s (len %zu, to file %d)",
                 yyc_status_name(st), yyc_status_name(want), len, to_file);
        if (st == YYC_OK) {
            fz_entry_clear(e);
            e->present = true;
            e->val = v;
            v = NULL;
            e->len = len;
            snprintf(e->filename, sizeof e->filename, "%s", to_file ? file : "");
            memcpy(e->ext, ext, ext_len);
            e->ext_len = ext_len;
            /* (the library's own rounding: a time to live is never shortened) */
            e->expires = ttl < INFINITY ? d->clock + (int64_t)ceil(ttl * 1000.0) : INT64_MAX;
            e->queued = d->deferred;
        }
        free(v);
        break;
    }
    case 20: { /* set_if_absent: a loader's store, never over a live value */
        s->op_name = "set_if_absent";
        uint8_t lb = fz_byte(s), seed = fz_byte(s), nb = fz_byte(s);
        size_t len = lb < 8 ? 0 : lb < 128 ? (size_t)lb * 3 : (size_t)(lb - 120) * 277;
        unsigned char *v = len ? malloc(len) : NULL;
        for (size_t i = 0; i < len; i++) v[i] = (unsigned char)(seed + i * 7);
        char given[32], md5[33];
        yyc_kv_md5_filename(key, md5);
        const char *name = nb % 4 == 0 ? NULL : nb % 4 == 1 ? "" : nb % 4 == 2 ? md5 : given;
        snprintf(given, sizeof given, "n%d", k);
        if (d->fn_on && k == 7 && (!name || !*name)) name = md5; /* (k 7's name is invalid) */
        bool live = fzd_read_hits(d, k);
        bool stored = !live;
        st = yyc_diskcache_set_if_absent(d->dc, key, v, len, name, &stored);
        int want = key[0] ? YYC_OK : YYC_EINVAL;
        FZ_CHECK(s, st == want, "status %s, expected %s", yyc_status_name(st),
                 yyc_status_name(want));
        if (st == YYC_OK) {
            FZ_CHECK(s, stored == !live, "stored %d over a model entry present %d", stored, live);
            bool to_file = d->threshold == 0 || (d->threshold != SIZE_MAX && len > d->threshold);
            if (stored) {
                fz_entry_clear(e);
                e->present = true;
                e->val = v;
                v = NULL;
                e->len = len;
                const char *file = name && *name ? name : d->fn_on && k == 0 ? "fn-a" : md5;
                snprintf(e->filename, sizeof e->filename, "%s", to_file ? file : "");
                e->expires = INT64_MAX;
                e->queued = d->deferred;
            }
        }
        free(v);
        break;
    }
    case 21: { /* the write mode: deferred (a queue committed by deadline) or immediate */
        /* (Deadlines far enough that no background commit lands inside an input: when a queued
         * expired write is committed decides whether a read removes it, which the model cannot
         * know. The deadline thread is tested by test_deferred_writes and test_worker.) */
        static const double delays[] = {60, 600, 3600};
        uint8_t b = fz_byte(s);
        bool deferred = b % 4 != 0;
        s->op_name = deferred ? "write mode deferred" : "write mode immediate";
        st = yyc_diskcache_set_write_mode(
            d->dc, deferred ? YYC_WRITE_DEFERRED : YYC_WRITE_IMMEDIATE, delays[b % 3]);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        d->deferred = deferred;
        fzd_queue_committed(d); /* (a switch to immediate commits it; to deferred: empty) */
        break;
    }
    case 17: {
        s->op_name = "advance the expiry clock";
        static const int64_t steps[] = {1, 499, 500, 1500, 10000};
        int64_t ms = steps[fz_byte(s) % 5];
        yyc__kv_testing_advance_clock(ms);
        d->clock += ms;
        break;
    }
    case 18: {
        s->op_name = "for_each_entry";
        fzd_walk w = {.d = d};
        st = yyc_diskcache_for_each_entry(d->dc, fzd_walk_entry, &w);
        fzd_queue_committed(d);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        int live = 0;
        for (int i = 0; i < FZ_KEYS; i++) live += s->model[i].present && !fzd_expired(d, i);
        FZ_CHECK(s, w.seen == live, "enumerated %d entries, model %d live", w.seen, live);
        break;
    }
    case 19:
        s->op_name = "trim_expired";
        st = yyc_diskcache_trim_expired(d->dc);
        fzd_queue_committed(d);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        fzd_drop_expired(d);
        break;
    case 4: {
        s->op_name = "get";
        void *v = NULL;
        size_t n = 0;
        bool hit = fzd_read_hits(d, k);
        st = yyc_diskcache_get(d->dc, key, &v, &n);
        FZ_CHECK(s, st == (hit ? YYC_OK : YYC_NOTFOUND), "status %s, model %d", yyc_status_name(st),
                 hit);
        if (st == YYC_OK)
            FZ_CHECK(s, n == e->len && (n == 0 || memcmp(v, e->val, n) == 0), "value %zu/%zu", n,
                     e->len);
        yyc_free(v);
        break;
    }
    case 5: {
        s->op_name = "get_extended_data";
        void *x = NULL;
        size_t n = 0;
        bool hit = fzd_read_hits(d, k);
        st = yyc_diskcache_get_extended_data(d->dc, key, &x, &n);
        FZ_CHECK(s, st == (hit ? YYC_OK : YYC_NOTFOUND), "status %s", yyc_status_name(st));
        if (st == YYC_OK)
            FZ_CHECK(s, n == e->ext_len && (n == 0 || memcmp(x, e->ext, n) == 0),
                     "extended %zu/%zu", n, e->ext_len);
        yyc_free(x);
        break;
    }
    case 6:
        s->op_name = "remove";
        st = yyc_diskcache_remove(d->dc, key);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        fz_entry_clear(e);
        break;
    case 7:
        s->op_name = "contains";
        bool hit = fzd_read_hits(d, k);
        FZ_CHECK(s, yyc_diskcache_contains(d->dc, key) == hit, "contains != %d", hit);
        break;
    case 8:
    case 9: {
        bool by_cost = op == 9;
        s->op_name = by_cost ? "trim_to_cost" : "trim_to_count";
        int64_t limit = by_cost ? (int64_t)fz_byte(s) * 200 : fz_byte(s) % 6;
        st = by_cost ? yyc_diskcache_trim_to_cost(d->dc, limit)
                     : yyc_diskcache_trim_to_count(d->dc, limit);
        fzd_queue_committed(d);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        fzd_drop_expired(d);
        fzd_adopt_presence(d);
        int64_t total = -1;
        FZ_CHECK(s,
                 (by_cost ? yyc_diskcache_total_cost(d->dc, &total)
                          : yyc_diskcache_total_count(d->dc, &total)) == YYC_OK &&
                     total <= limit,
                 "total %lld above %lld", (long long)total, (long long)limit);
        break;
    }
    case 10: {
        s->op_name = "trim_to_age";
        static const double ages[] = {-1.0, 0.0, 1e9, NAN, INFINITY};
        int which = fz_byte(s) % 5;
        st = yyc_diskcache_trim_to_age(d->dc, ages[which]);
        fzd_queue_committed(d);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        fzd_drop_expired(d);
        if (which < 2)
            for (int i = 0; i < FZ_KEYS; i++) fz_entry_clear(&s->model[i]);
        break;
    }
    case 11: {
        bool slow = fz_byte(s) % 2;
        s->op_name = slow ? "remove_all_progress" : "remove_all";
        d->last_removed = 0;
        d->progress_ok = true;
        st = slow ? yyc_diskcache_remove_all_progress(d->dc, fzd_progress, d)
                  : yyc_diskcache_remove_all(d->dc);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        FZ_CHECK(s, d->progress_ok, "progress went backwards or past the total");
        for (int i = 0; i < FZ_KEYS; i++) fz_entry_clear(&s->model[i]);
        break;
    }
    case 12:
        s->op_name = "reopen";
        yyc_diskcache_release(d->dc); /* (the last reference: commits a deferred queue) */
        d->dc = NULL;
        d->deferred = false;
        fzd_queue_committed(d);
        fzd_open(d);
        break;
    case 13:
        s->op_name = "toggle file-name function";
        d->fn_on = !d->fn_on;
        yyc_diskcache_set_filename_fn(d->dc, d->fn_on ? fzd_name_fn : NULL, d);
        break;
    case 14: {
        s->op_name = "second handle";
        yyc_diskcache *other = NULL;
        st = yyc_diskcache_open(s->dir, d->threshold == 0 ? 1 : 0, &other);
        FZ_CHECK(s, st == YYC_OK && other == d->dc, "a second open is not the shared core");
        FZ_CHECK(s, yyc_diskcache_inline_threshold(other) == d->threshold, "threshold changed");
        bool hit = fzd_read_hits(d, k);
        FZ_CHECK(s, yyc_diskcache_contains(other, key) == hit, "contains via second");
        yyc_diskcache_release(other);
        break;
    }
    default:
        s->op_name = "read all";
        for (int i = 0; i < FZ_KEYS; i++) {
            void *v = NULL;
            size_t n = 0;
            bool hit = fzd_read_hits(d, i);
            st = yyc_diskcache_get(d->dc, s->keys[i], &v, &n);
            FZ_CHECK(s, st == (hit ? YYC_OK : YYC_NOTFOUND), "key %d: %s", i, yyc_status_name(st));
            if (st == YYC_OK)
                FZ_CHECK(s, n == s->model[i].len && (n == 0 || memcmp(v, s->model[i].val, n) == 0),
                         "key %d value", i);
            yyc_free(v);
        }
    }
    if (getenv("YYC_FUZZ_TRACE")) /* (replaying a saved failure by hand) */
        fprintf(stderr, "op %ld: %s, key %d: model %s \"%s\"\n", (long)s->op_index, s->op_name, k,
                e->present ? "present" : "absent", e->filename);
    fzd_check_files(d);
}

/* Runs one input against the disk cache. Returns 0; aborts on a disagreement. */
static inline int rel_fuzz_disk_one(const uint8_t *data, size_t size) {
    fzd_state *d = calloc(1, sizeof *d);
    if (!d) abort();
    fz_state *s = &d->base;
    s->data = data;
    s->size = size;
    memset(s->long_key, 'L', 300);
    const char *keys[FZ_KEYS] = {"a",         "b", "", "\xff\xfe\x80", "../../x", "key with spaces",
                                 s->long_key, "c"};
    memcpy(s->keys, keys, sizeof keys);
    const char *base = getenv("TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/yyc-fuzzd-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(s->dir)) abort();
    static const size_t thresholds[] = {0, REL_THRESHOLD, SIZE_MAX, 100};
    d->threshold = thresholds[fz_byte(s) % 4];
    s->op_name = "open";
    yyc__kv_testing_freeze_clock(true); /* only the "advance" operation moves it */
    fzd_open(d);
    while (s->pos < s->size) {
        s->op_index++;
        fzd_op(d);
    }
    if (d->deferred) { /* what the queue held reaches data/ and the manifest as modelled */
        s->op_name = "final flush";
        int st = yyc_diskcache_flush(d->dc);
        FZ_CHECK(s, st == YYC_OK, "status %s", yyc_status_name(st));
        d->deferred = false;
        fzd_queue_committed(d);
        fzd_check_files(d);
    }
    yyc_diskcache_release(d->dc);
    yyc__kv_testing_freeze_clock(false);
    test_rm_rf(s->dir);
    for (int k = 0; k < FZ_KEYS; k++) fz_entry_clear(&s->model[k]);
    free(d);
    return 0;
}

#endif /* YYCACHE_RELIABILITY_FUZZ_H */
