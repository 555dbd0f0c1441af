/*
 * disk_cache_entries.c - enumeration of a disk cache's entries, a page at a time.
 *
 * Fields, lock order and invariants: disk_cache_internal.h.
 */
#include "disk/disk_cache_internal.h"

/* --- enumeration (kv_entries.c) ---
 *
 * An iterator holds a reference to the core and one page of entries (ENTRIES_PAGE at most);
 * each page is read under the core's lock in one indexed query and handed out after unlocking,
 * so a walk of any size holds the lock for one page at a time and writers proceed between
 * pages. The access times that reads noted (kv_access_times.c) are written before the first
 * page, so that the walk sees them, as the trims do. */

#define ENTRIES_PAGE 256

/* Invariant: next <= n <= ENTRIES_PAGE; page[next..n) are the entries not handed out yet;
 * `current` points into page[next - 1] after a successful next. */
struct yyc_diskcache_iter {
    yyc_diskcache *dc; /* one reference */
    yyc__kv_cursor cursor;
    yyc__kv_entry page[ENTRIES_PAGE];
    size_t n, next;
    bool more;           /* the last page was full: entries may follow */
    bool started;        /* the first page was read */
    size_t max_buffered; /* [testing] the most entries held at once */
    yyc_diskcache_entry current;
};

int yyc_diskcache_iter_open(yyc_diskcache *dc, yyc_diskcache_iter **out) {
    if (YYC__MISUSE(dc == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = NULL;
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    yyc__dc_unlock_and_deliver(dc);
    yyc_diskcache_iter *it = calloc(1, sizeof *it);
    if (!it) return yyc__error(YYC_ENOMEM, 0, ENOMEM, "allocate iterator");
    it->dc = yyc_diskcache_retain(dc);
    it->more = true;
    *out = it;
    return YYC_OK;
}

/* Reads the next page (no lock held by the caller). */
static int iter_fill(yyc_diskcache_iter *it) {
    yyc__kv_entries_clear(it->page, it->n);
    it->n = it->next = 0;
    while (it->n == 0 && it->more) {
        int rc = yyc__dc_lock_open(it->dc);
        if (rc != YYC_OK) return rc;
        yyc__dc_deferred_commit_locked(it->dc); /* (a failed commit does not stop the walk) */
        /* The walk's order is the access times': the ones reads have noted so far first (a
         * failed write does not stop the walk; the times stay noted). */
        if (!it->started) yyc__kv_write_access_times(it->dc->kv, SIZE_MAX);
        it->started = true;
        rc = yyc__kv_entries_page(it->dc->kv, &it->cursor, ENTRIES_PAGE, it->page, &it->n,
                                  &it->more);
        yyc__dc_unlock_and_deliver(it->dc);
        if (rc != YYC_OK) return rc;
        if (it->n > it->max_buffered) it->max_buffered = it->n;
    }
    return YYC_OK;
}

int yyc_diskcache_iter_next(yyc_diskcache_iter *it, const yyc_diskcache_entry **out) {
    if (YYC__MISUSE(it == NULL || out == NULL))
        return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    *out = NULL;
    for (;;) {
        if (it->next == it->n) {
            int rc = iter_fill(it);
            if (rc != YYC_OK) return rc;
            if (it->n == 0) return YYC_NOTFOUND;
        }
        const yyc__kv_entry *e = &it->page[it->next++];
        if (yyc__kv_expired(e->expiry_ms, yyc__kv_now_ms())) continue; /* expired meanwhile */
        it->current = (yyc_diskcache_entry){.key = e->key,
                                            .filename = e->filename,
                                            .size = e->size,
                                            .modification_time = e->modification_time,
                                            .last_access_time = e->last_access_time,
                                            .expiry_ms = e->expiry_ms};
        *out = &it->current;
        return YYC_OK;
    }
}

void yyc_diskcache_iter_free(yyc_diskcache_iter *it) {
    if (!it) return;
    yyc__kv_entries_clear(it->page, it->n);
    yyc__kv_cursor_clear(&it->cursor);
    yyc_diskcache_release(it->dc);
    free(it);
}

int yyc_diskcache_for_each_entry(yyc_diskcache *dc, yyc_diskcache_entry_fn fn, void *ctx) {
    if (YYC__MISUSE(dc == NULL || fn == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "NULL argument");
    yyc_diskcache_iter *it;
    int rc = yyc_diskcache_iter_open(dc, &it);
    if (rc != YYC_OK) return rc;
    const yyc_diskcache_entry *e;
    while ((rc = yyc_diskcache_iter_next(it, &e)) == YYC_OK) {
        int stop = fn(ctx, e); /* no lock held */
        if (stop) {
            rc = stop;
            break;
        }
    }
    yyc_diskcache_iter_free(it);
    return rc == YYC_NOTFOUND ? YYC_OK : rc;
}

#ifdef YYC_TESTING
/* Testing: the most entries the iterator held at once. */
size_t yyc__diskcache_iter_max_buffered(const yyc_diskcache_iter *it);
size_t yyc__diskcache_iter_max_buffered(const yyc_diskcache_iter *it) { return it->max_buffered; }
#endif
