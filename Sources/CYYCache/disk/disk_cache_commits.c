/*
 * disk_cache_commits.c - how a disk cache's sets reach the manifest: the group commit of immediate
 * writes and the queue of the deferred write mode.
 *
 * Fields, lock order and invariants: disk_cache_internal.h.
 */
#include "disk/disk_cache_internal.h"

/* --- private prototypes --- */

static int commit_write(yyc_diskcache *dc, write_req *req);

/* --- writes --- */

/* Group commit. A set pushes its request onto `incoming` (no lock) and takes the committer's
 * baton if no other set holds it. The committer takes the core's lock, takes every request
 * pushed so far, commits them in one transaction (yyc__kv_save_each: each succeeds or fails by
 * itself), marks them done, and gives the baton back.
 * The sets that found the baton taken wait (spinning a moment, then asleep on commit_done)
 * until their request is done, or until the baton is free again, and then take it: so the sets
 * that arrive during a commit join the next one instead of each waiting for one of its own.
 * They wait for the baton, not for the core's lock: a thread that sets again at once would
 * otherwise take that lock before a sleeping one woke, and keep it from learning for a long
 * time that its set was committed long ago. The commit itself runs under the core's lock, as
 * every other use of the storage does. */

/* Takes every request pushed so far, oldest first. */
static write_req *take_incoming(yyc_diskcache *dc) {
    write_req *newest = atomic_exchange_explicit(&dc->incoming, NULL, memory_order_acquire);
    write_req *oldest = NULL;
    while (newest) {
        write_req *next = newest->next;
        newest->next = oldest;
        oldest = newest;
        newest = next;
    }
    return oldest;
}

/* Caller holds the lock; reqs[0..n) are the next requests to commit, oldest first. A loaded
 * value (if_absent) is stored only if its key has no value: a set (or a queued one) of the key
 * since the load's miss - committed before, or earlier in this batch - is newer than what the
 * load read, and must not be written over. Such a request is marked skipped, status YYC_OK. */
static void skip_loaded_values_written_over_locked(yyc_diskcache *dc, write_req **reqs, size_t n) {
    yyc__assert_held(&dc->lock);
    for (size_t i = 0; i < n; i++) {
        write_req *r = reqs[i];
        if (!r->if_absent) continue;
        bool taken = false;
        for (size_t j = 0; j < i && !taken; j++)
            taken = !reqs[j]->skipped && !strcmp(reqs[j]->w.key, r->w.key);
        int rc = YYC_NOTFOUND;
        if (!taken && !yyc__dc_queued_read_locked(dc, r->w.key, false, NULL, NULL, &rc))
            rc = yyc_kv_exists(dc->kv, r->w.key);
        if (taken || rc == YYC_OK) {
            r->skipped = true;
            r->w.status = YYC_OK;
        }
    }
}

/* Wakes the sets asleep on commit_done (to find their request done, or the baton free). */
static void wake_waiters(yyc_diskcache *dc) {
    yyc__dc_lock(&dc->commit_lock);
    if (dc->commit_sleepers) pthread_cond_broadcast(&dc->commit_done);
    yyc__dc_unlock(&dc->commit_lock);
}

/* Caller holds the lock. Commits every waiting request (at most 64 per transaction), or fails
 * them with YYC_ECLOSED after close, and marks them done; each transaction's sets are woken
 * as soon as it ends. */
static void commit_incoming_locked(yyc_diskcache *dc) {
    yyc__assert_held(&dc->lock);
    write_req *r = take_incoming(dc);
    while (r) {
        yyc__kv_write *batch[64];
        write_req *reqs[64];
        size_t n = 0;
        for (; r && n < 64; r = r->next) {
            reqs[n] = r;
            batch[n++] = &r->w;
        }
        if (dc->closed) {
            for (size_t i = 0; i < n; i++) {
                reqs[i]->w.status = yyc__dc_fail_locked(dc, YYC_ECLOSED, 0, "disk cache is closed");
                yyc_last_error(reqs[i]->w.error);
            }
            for (size_t i = 0; i < n; i++)
                atomic_store_explicit(&reqs[i]->done, true, memory_order_release);
            wake_waiters(dc);
            continue;
        }
        skip_loaded_values_written_over_locked(dc, reqs, n);
        size_t kept = 0; /* the batch without the skipped loaded values */
        for (size_t i = 0; i < n; i++)
            if (!reqs[i]->skipped) batch[kept++] = &reqs[i]->w;
        for (size_t i = 0; i < n; i++) { /* (default_ttl is [lock]: read here, not in set_impl) */
            double ttl = isnan(reqs[i]->ttl) ? dc->default_ttl : reqs[i]->ttl;
            reqs[i]->w.expiry_ms = yyc__kv_expiry_from_ttl(ttl);
        }
        if (dc->mode == YYC_WRITE_DEFERRED) {
            for (size_t i = 0; i < n; i++)
                if (!reqs[i]->skipped && yyc__dc_deferred_put_locked(dc, &reqs[i]->w) == YYC_OK)
                    dc->stats.insertions++;
        } else {
            yyc__kv_save_each(dc->kv, batch, kept);
            for (size_t i = 0; i < n; i++)
                if (!reqs[i]->skipped && reqs[i]->w.status == YYC_OK)
                    yyc__dc_note_saved_locked(dc, &reqs[i]->w);
            dc->last_batch = n;
        }
        for (size_t i = 0; i < n; i++)
            atomic_store_explicit(&reqs[i]->done, true, memory_order_release);
        wake_waiters(dc); /* (those sets return now, while later ones still commit) */
    }
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Whether req is done or the baton is free. */
static bool commit_wait_over(yyc_diskcache *dc, write_req *req) {
    return atomic_load_explicit(&req->done, memory_order_acquire) ||
           !atomic_load_explicit(&dc->committer, memory_order_acquire);
}

/* Waits until req is done or the baton is free: spins for COMMIT_SPIN_SECONDS, then yields the
 * processor until COMMIT_YIELD_SECONDS (a commit of small values takes tens of microseconds; a
 * thread woken from sleep would come back later than that), then sleeps on commit_done. */
#define COMMIT_SPIN_SECONDS 20e-6
#define COMMIT_YIELD_SECONDS 500e-6
static void await_commit(yyc_diskcache *dc, write_req *req) {
    double start = yyc__monotonic_now();
    while (!commit_wait_over(dc, req)) {
        double t = yyc__monotonic_now() - start;
        if (t < COMMIT_SPIN_SECONDS) {
            for (int i = 0; i < 32; i++) cpu_relax();
            continue;
        }
        if (t < COMMIT_YIELD_SECONDS) {
            sched_yield();
            continue;
        }
        yyc__dc_lock(&dc->commit_lock);
        dc->commit_sleepers++;
        while (!commit_wait_over(dc, req)) {
            int rc = pthread_cond_wait(&dc->commit_done, &dc->commit_lock);
            assert(rc == 0);
            (void)rc;
        }
        dc->commit_sleepers--;
        yyc__dc_unlock(&dc->commit_lock);
    }
}

/* The committer, before it commits, when other threads are writing too (it waited for another
 * set's commit, or the last commit took several requests) and only its own request is waiting:
 * waits up to GATHER_SECONDS for another one. The thread whose set the last commit returned
 * needs a moment to come back with its next one, and sharing the commit with it saves far more
 * than that moment. A single writer never waits here (it never waits for another commit, and
 * its commits take one request each); a writer whose company stopped waits once. */
#define GATHER_SECONDS 50e-6
static void gather(yyc_diskcache *dc, write_req *own) {
    double deadline = yyc__monotonic_now() + GATHER_SECONDS;
    while (atomic_load_explicit(&dc->incoming, memory_order_acquire) == own && !own->next) {
        for (int i = 0; i < 32; i++) cpu_relax();
        if (yyc__monotonic_now() >= deadline) return;
    }
}

/* The committer's part: commits every request pushed so far (own among them), gives the baton
 * back and wakes the sets asleep on commit_done, and only then hands the events to the hook and
 * the listener: they may set again, which needs the baton. */
static void commit_as_committer(yyc_diskcache *dc, write_req *own, bool waited) {
    if (waited || dc->last_batch >= 2) gather(dc, own);
    yyc__dc_lock_as_caller(dc);
    commit_incoming_locked(dc);
    event_batch events;
    yyc__dc_take_events_locked(dc, &events);
    const void *checkpoint = dc->kv ? yyc__kv_take_due_checkpoint(dc->kv) : NULL;
    yyc__dc_unlock(&dc->lock);
    /* (the checkpoint a commit left due, with the baton: the writers wait, not the readers) */
    yyc__kv_run_due_checkpoint(checkpoint);
    atomic_store_explicit(&dc->committer, false, memory_order_release);
    wake_waiters(dc);
    yyc__dc_deliver(&events);
}

/* A set's commit: returns once req is committed (possibly by another set's thread, in a shared
 * transaction) with its own status; the thread's last error is its own failure's. */
static int commit_write(yyc_diskcache *dc, write_req *req) {
    write_req *head = atomic_load_explicit(&dc->incoming, memory_order_relaxed);
    do {
        req->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&dc->incoming, &head, req, memory_order_release,
                                                    memory_order_relaxed));
    bool waited = false; /* for another set's commit: other threads are writing */
    while (!atomic_load_explicit(&req->done, memory_order_acquire)) {
        if (!atomic_exchange_explicit(&dc->committer, true, memory_order_acq_rel)) {
            commit_as_committer(dc, req, waited); /* (req was pushed before: committed now) */
            assert(atomic_load_explicit(&req->done, memory_order_relaxed));
            break;
        }
        await_commit(dc, req);
        waited = true;
    }
    if (req->w.status != YYC_OK) yyc__error_restore(&req->error);
    return req->w.status;
}

static int set_impl(yyc_diskcache *dc, const char *key, const void *value, size_t len,
                    const void *extended, size_t extended_len, const char *explicit_name,
                    bool use_fn, double ttl, bool if_absent, bool *stored) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc;
    if (yyc__dc_key_is_empty(key) || (!value && len)) {
        rc = yyc__dc_lock_open(dc);
        if (rc != YYC_OK) return rc;
        rc = yyc__dc_fail_locked(dc, YYC_EINVAL, 0,
                                 yyc__dc_key_is_empty(key) ? "empty key"
                                                           : "NULL value with a length");
        yyc__dc_unlock_and_deliver(dc);
        return rc;
    }
    /* (type and threshold are fixed at the open: the lock is taken here only for a file value's
     * name function, so that a set of a small value takes it once, in commit_write) */
    yyc_kv_type type = dc->type;
    size_t threshold = dc->threshold;
    /* YYDiskCache: a file when the value is strictly larger than the threshold. The FILE type
     * (threshold 0) needs a file for every value, the empty one included. */
    bool to_file = type == YYC_KV_FILE || (type == YYC_KV_MIXED && len > threshold);
    yyc_filename_fn fn = NULL;
    void *fn_ctx = NULL;
    if (to_file && use_fn && !(explicit_name && *explicit_name) &&
        atomic_load_explicit(&dc->has_filename_fn, memory_order_relaxed)) {
        rc = yyc__dc_lock_open(dc);
        if (rc != YYC_OK) return rc;
        fn = dc->filename_fn;
        fn_ctx = dc->filename_ctx;
        yyc__dc_unlock_and_deliver(dc);
    }
    char name[256];
    const char *filename = NULL;
    bool bad_name = false;
    if (to_file) {
        if (explicit_name && *explicit_name) {
            filename = explicit_name;
        } else if (fn) {
            name[0] = '\0';
            if (fn(fn_ctx, key, name)) { /* called without the lock */
                if (!memchr(name, '\0', sizeof name)) bad_name = true;
                else if (name[0]) filename = name;
            }
        }
        if (!filename && !bad_name) {
            yyc_kv_md5_filename(key, name);
            filename = name;
        }
        if (!bad_name && !yyc_kv_filename_is_valid(filename)) bad_name = true;
    }
    if (bad_name) {
        rc = yyc__dc_lock_open(dc);
        if (rc != YYC_OK) return rc;
        rc = yyc__dc_fail_locked(dc, YYC_EINVAL, 0, "invalid file name");
        yyc__dc_unlock_and_deliver(dc);
        return rc;
    }
    write_req req = {.w = {.key = key,
                           .error = &req.error,
                           .value = value,
                           .len = len,
                           .filename = filename,
                           .extended = extended,
                           .extended_len = extended_len},
                     .ttl = ttl,
                     .if_absent = if_absent};
    rc = commit_write(dc, &req);
    if (stored) *stored = rc == YYC_OK && !req.skipped;
    return rc;
}

/* A loaded value (get_or_load, and loaders outside it): stored as yyc_diskcache_set, with the
 * default time to live, unless the key has a value by the time it commits (written since the
 * load's miss): that write stays. *stored: whether it was stored. */
int yyc_diskcache_set_if_absent(yyc_diskcache *dc, const char *key, const void *value, size_t len,
                                const char *filename, bool *stored) {
    if (stored) *stored = false;
    return set_impl(dc, key, value, len, NULL, 0, filename, true, NAN, true, stored);
}

int yyc_diskcache_set(yyc_diskcache *dc, const char *key, const void *value, size_t len,
                      const void *extended, size_t extended_len) {
    return set_impl(dc, key, value, len, extended, extended_len, NULL, true, NAN, false, NULL);
}

int yyc_diskcache_set_with_ttl(yyc_diskcache *dc, const char *key, const void *value, size_t len,
                               const void *extended, size_t extended_len, double ttl_seconds) {
    if (isnan(ttl_seconds) || ttl_seconds < 0)
        return yyc__error(YYC_EINVAL, 0, 0, "time to live is negative or NaN");
    return set_impl(dc, key, value, len, extended, extended_len, NULL, true, ttl_seconds, false,
                    NULL);
}

int yyc_diskcache_set_with_filename_and_ttl(yyc_diskcache *dc, const char *key, const void *value,
                                            size_t len, const void *extended, size_t extended_len,
                                            const char *filename, double ttl_seconds) {
    if (isnan(ttl_seconds) || ttl_seconds < 0)
        return yyc__error(YYC_EINVAL, 0, 0, "time to live is negative or NaN");
    return set_impl(dc, key, value, len, extended, extended_len, filename, false, ttl_seconds,
                    false, NULL);
}

int yyc_diskcache_set_with_filename(yyc_diskcache *dc, const char *key, const void *value,
                                    size_t len, const void *extended, size_t extended_len,
                                    const char *filename) {
    return set_impl(dc, key, value, len, extended, extended_len, filename, false, NAN, false, NULL);
}

void yyc_diskcache_set_filename_fn(yyc_diskcache *dc, yyc_filename_fn fn, void *ctx) {
    if (!dc) return;
    yyc__dc_lock(&dc->lock);
    dc->filename_fn = fn;
    dc->filename_ctx = ctx;
    atomic_store_explicit(&dc->has_filename_fn, fn != NULL, memory_order_relaxed);
    yyc__dc_unlock(&dc->lock);
}

/* --- deferred writes --- */

/* The queue's bounds: a set that would grow it beyond them commits it first (the bytes are the
 * memory the queue holds, the room of replaced writes included). */
#define DEFERRED_MAX_WRITES 10000
#define DEFERRED_MAX_BYTES ((size_t)64 << 20)

/* A queued write on its way into the batch, with its sort key: the key's first 16 bytes as a
 * big-endian number (hi, lo; zero after the key's end), so that the sort reads no key but for
 * ties. The batch's writes are built once the items are sorted, in key order: the commit then
 * reads them front to back (built in the queue's hash order and visited in key order, each was
 * a cache miss). */
typedef struct batch_item {
    uint64_t hi, lo;
    const yyc__deferred_entry *e;
} batch_item;

typedef struct batch_builder {
    batch_item *items;
    size_t n;
} batch_builder;

static void add_to_batch(void *ctx, const yyc__deferred_entry *e) {
    batch_builder *b = ctx;
    unsigned char head[16] = {0};
    memcpy(head, e->key, strnlen(e->key, sizeof head)); /* (never past the key's NUL) */
    uint64_t hi, lo;
    memcpy(&hi, head, 8);
    memcpy(&lo, head + 8, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    hi = __builtin_bswap64(hi);
    lo = __builtin_bswap64(lo);
#endif
    b->items[b->n++] = (batch_item){hi, lo, e};
}

/* Byte k (0: the last) of an item's 16-byte sort key. */
static inline unsigned key_byte(const batch_item *it, int k) {
    return (unsigned)((k < 8 ? it->lo >> (8 * k) : it->hi >> (8 * (k - 8))) & 0xff);
}

/* qsort order of items: by prefix, then by key (strcmp: bytes as unsigned). */
static int by_key(const void *pa, const void *pb) {
    const batch_item *a = pa, *b = pb;
    if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
    if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
    return strcmp(a->e->key, b->e->key);
}

/* Sorts items[0..n) by key, in the manifest's own order (BINARY collation: the bytes as unsigned
 * numbers, as strcmp and the big-endian prefixes compare them): a radix sort of the prefixes
 * (least significant byte first, skipping the bytes all keys share), then each run of equal
 * prefixes by strcmp; linear but for the ties. tmp has room for n items. (Without memory for
 * the counts: qsort.) */
static void sort_batch(batch_item *items, batch_item *tmp, size_t n) {
    size_t(*count)[256] = calloc(16, sizeof *count);
    if (!count) {
        qsort(items, n, sizeof *items, by_key);
        return;
    }
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 16; k++) count[k][key_byte(&items[i], k)]++;
    batch_item *from = items, *to = tmp;
    for (int k = 0; k < 16; k++) {
        if (count[k][key_byte(&items[0], k)] == n) continue; /* every key has that byte */
        size_t at = 0;
        for (unsigned v = 0; v < 256; v++) {
            size_t c = count[k][v];
            count[k][v] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++) to[count[k][key_byte(&from[i], k)]++] = from[i];
        batch_item *t = from;
        from = to;
        to = t;
    }
    free(count);
    if (from != items) memcpy(items, from, n * sizeof *items);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && items[j].hi == items[i].hi && items[j].lo == items[i].lo) j++;
        if (j - i > 1) qsort(&items[i], j - i, sizeof *items, by_key);
        i = j;
    }
}

/* Caller holds the lock (no removal watch on). Commits the queue in one transaction
 * (yyc__kv_apply_batch) in key order, and empties it; on failure the queue is kept whole (the
 * error is recorded and reported). The queue holds one write per key, so the order changes
 * nothing but the cost: in key order the key index is walked forwards, each of its pages touched
 * once, instead of at random (the rowids of the new rows, which break ties of equal access times
 * in the LRU order, follow the keys instead of the queue's hash order: as arbitrary as before).
 * Removal events: the rows the queued removals deleted (YYC_REMOVED_EXPLICIT, under a removal
 * watch) and the rows the queued saves replaced (YYC_REMOVED_REPLACED), once the batch
 * committed; nothing for a batch rolled back (its retry reports them). The queued sets were
 * counted as insertions when queued. */
int yyc__dc_deferred_commit_locked(yyc_diskcache *dc) {
    yyc__assert_held(&dc->lock);
#ifdef YYC_TESTING
    yyc__deferred_check(&dc->queue);
#endif
    if (dc->queue.count == 0) return YYC_OK;
    if (!dc->kv) return yyc__dc_fail_locked(dc, YYC_ECLOSED, 0, "disk cache is closed");
    size_t n = dc->queue.count;
    yyc__kv_write *writes = malloc(n * sizeof *writes);
    batch_builder b = {.items = malloc(2 * n * sizeof *b.items)}; /* (and the sort's room) */
    yyc__kv_write **ptrs = malloc(n * sizeof *ptrs);
    int rc;
    if (!writes || !b.items || !ptrs) {
        rc = yyc__dc_fail_locked(dc, YYC_ENOMEM, ENOMEM, "commit deferred writes");
    } else {
        yyc__deferred_each(&dc->queue, add_to_batch, &b);
        assert(b.n == dc->queue.count);
        sort_batch(b.items, b.items + n, n);
        for (size_t i = 0; i < n; i++) {
            const yyc__deferred_entry *e = b.items[i].e;
            writes[i] = (yyc__kv_write){.key = e->key,
                                        .remove = e->remove,
                                        .value = e->value,
                                        .len = e->len,
                                        .filename = e->filename,
                                        .extended = e->extended,
                                        .extended_len = e->extended_len,
                                        .expiry_ms = e->expiry_ms};
            ptrs[i] = &writes[i];
        }
        yyc__dc_watch_locked(dc);
        rc = yyc__kv_apply_batch(dc->kv, ptrs, b.n);
        yyc__dc_unwatch_locked(dc, YYC_REMOVED_EXPLICIT);
        for (size_t i = 0; rc == YYC_OK && i < b.n; i++)
            if (!writes[i].remove && writes[i].replaced)
                yyc__dc_note_replaced_locked(dc, writes[i].key);
    }
    free(writes);
    free(b.items);
    free(ptrs);
    if (rc == YYC_OK) yyc__deferred_clear(&dc->queue);
    return rc;
}

/* Caller holds the lock. Queues w (a copy), committing the queue first when it is full; arms the
 * flush timer when the queue was empty. Sets and returns w->status. */
int yyc__dc_deferred_put_locked(yyc_diskcache *dc, yyc__kv_write *w) {
    yyc__assert_held(&dc->lock);
    int rc = YYC_OK;
    if (dc->queue.count >= DEFERRED_MAX_WRITES ||
        dc->queue.held + w->len + w->extended_len > DEFERRED_MAX_BYTES)
        rc = yyc__dc_deferred_commit_locked(dc);
    bool was_empty = dc->queue.count == 0;
    if (rc == YYC_OK && !yyc__deferred_put(&dc->queue, w->key, w->remove, w->value, w->len,
                                           w->extended, w->extended_len, w->filename, w->expiry_ms))
        rc = yyc__dc_fail_locked(dc, YYC_ENOMEM, ENOMEM, "queue a deferred write");
    if (rc == YYC_OK && was_empty) yyc__timer_set_interval(dc->flush_timer, dc->max_delay);
    w->status = rc;
    if (rc != YYC_OK && w->error) yyc_last_error(w->error);
    return rc;
}

/* Caller holds the lock. When key has a queued write: true, with *rc YYC_NOTFOUND for a queued
 * removal or an expired queued save, else YYC_OK and (out non-NULL) a copy of its value, or of its
 * extended data with want_ext, in *out / *out_len (NULL / 0 when empty). */
bool yyc__dc_queued_read_locked(yyc_diskcache *dc, const char *key, bool want_ext, void **out,
                                size_t *out_len, int *rc) {
    yyc__assert_held(&dc->lock);
    if (dc->queue.count == 0 || yyc__dc_key_is_empty(key)) return false;
    const yyc__deferred_entry *e = yyc__deferred_find(&dc->queue, key);
    if (!e) return false;
    /* An expired queued save is a miss (its row, committed with its expiry, is then removed
     * and reported as YYC_REMOVED_EXPIRED by whatever finds it on disk, as for any row). */
    bool gone = e->remove || yyc__kv_expired(e->expiry_ms, yyc__kv_now_ms());
    *rc = gone ? YYC_NOTFOUND : YYC_OK;
    if (gone || !out) return true;
    const void *src = want_ext ? e->extended : e->value;
    size_t n = want_ext ? e->extended_len : e->len;
    if (n == 0) return true; /* (*out and *out_len were cleared by the caller) */
    void *copy = malloc(n);
    if (!copy) {
        *rc = yyc__dc_fail_locked(dc, YYC_ENOMEM, ENOMEM, "copy a queued value");
        return true;
    }
    memcpy(copy, src, n);
    *out = copy;
    *out_len = n;
    return true;
}

/* Caller holds the lock; the core is closing. Commits the queue; what cannot be committed is
 * reported and dropped. */
void yyc__dc_deferred_close_locked(yyc_diskcache *dc) {
    yyc__assert_held(&dc->lock);
    if (dc->queue.count && yyc__dc_deferred_commit_locked(dc) != YYC_OK) {
        char what[96];
        snprintf(what, sizeof what, "closing: %zu queued writes could not be committed",
                 dc->queue.count);
        yyc__dc_fail_locked(dc, YYC_EIO, 0, what);
    }
    yyc__deferred_clear(&dc->queue);
}

/* The flush timer (deadline queue): commits the queue; pauses itself once the queue is empty. A
 * failed commit is tried again after max_delay, but at most once a second (each failure is
 * reported: a full disk must not flood the hook). When the core's lock is held it comes back in
 * YYC__DEADLINE_RETRY, never waiting behind another thread's work on the core. */
static void flush(yyc_diskcache *dc) {
    if (!yyc__dc_trylock(&dc->lock)) {
        yyc__timer_set_interval(yyc__timer_current(), YYC__DEADLINE_RETRY);
        return;
    }
    if (dc->closed) {
        yyc__dc_unlock(&dc->lock);
        return;
    }
    int rc = yyc__dc_deferred_commit_locked(dc);
    if (dc->queue.count == 0) yyc__timer_set_interval(dc->flush_timer, 0);
    else if (rc != YYC_OK) yyc__timer_set_interval(dc->flush_timer, fmax(dc->max_delay, 1.0));
    yyc__dc_unlock_and_deliver(dc);
}

static void flush_fire(void *arg) { yyc__dc_run(arg, flush); }

/* exit(): commits the queue of every open core (each retained meanwhile; no lock held while
 * flushing, so error hooks run as usual). */
static void flush_all_at_exit(void) {
    yyc__dc_lock(&yyc__dc_registry.lock);
    size_t n = 0, i = 0;
    for (yyc_diskcache *dc = yyc__dc_registry.head; dc; dc = dc->next) n += dc->state == READY;
    yyc_diskcache **all = n ? malloc(n * sizeof *all) : NULL;
    for (yyc_diskcache *dc = yyc__dc_registry.head; all && dc; dc = dc->next) {
        if (dc->state != READY) continue;
        dc->refcount++;
        all[i++] = dc;
    }
    yyc__dc_unlock(&yyc__dc_registry.lock);
    for (size_t k = 0; k < i; k++) {
        yyc_diskcache_flush(all[k]);
        yyc_diskcache_release(all[k]);
    }
    free(all);
}

static pthread_once_t at_exit_once = PTHREAD_ONCE_INIT;
static void install_flush_at_exit(void) { atexit(flush_all_at_exit); }

int yyc_diskcache_set_write_mode(yyc_diskcache *dc, yyc_write_mode mode, double max_delay) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    if (mode != YYC_WRITE_IMMEDIATE && mode != YYC_WRITE_DEFERRED)
        return yyc__error(YYC_EINVAL, 0, 0, "unknown write mode");
    if (mode == YYC_WRITE_DEFERRED) pthread_once(&at_exit_once, install_flush_at_exit);
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    if (mode == YYC_WRITE_DEFERRED) {
        if (isnan(max_delay)) max_delay = 1;
        max_delay = max_delay < 0.001 ? 0.001 : max_delay > 3600 ? 3600 : max_delay;
        if (!dc->flush_timer)
            rc = yyc__timer_new(YYC__QUEUE_DEADLINE, flush_fire, dc, 0, &dc->flush_timer);
        if (rc != YYC_OK) {
            rc = yyc__dc_fail_locked(dc, rc, ENOMEM, "create the deferred writes' timer");
        } else {
            dc->mode = YYC_WRITE_DEFERRED;
            dc->max_delay = max_delay;
            if (dc->queue.count) yyc__timer_set_interval(dc->flush_timer, max_delay);
        }
    } else {
        rc = yyc__dc_deferred_commit_locked(dc);
        if (rc == YYC_OK) {
            dc->mode = YYC_WRITE_IMMEDIATE;
            dc->max_delay = 0;
            yyc__timer_set_interval(dc->flush_timer, 0);
        }
    }
    yyc__dc_unlock_and_deliver(dc);
    return rc;
}

yyc_write_mode yyc_diskcache_write_mode(yyc_diskcache *dc, double *out_max_delay) {
    if (out_max_delay) *out_max_delay = 0;
    if (!dc) return YYC_WRITE_IMMEDIATE;
    yyc__dc_lock(&dc->lock);
    yyc_write_mode mode = dc->mode;
    if (out_max_delay) *out_max_delay = dc->max_delay;
    yyc__dc_unlock(&dc->lock);
    return mode;
}

int yyc_diskcache_flush(yyc_diskcache *dc) {
    if (YYC__MISUSE(dc == NULL)) return yyc__error(YYC_EINVAL, 0, 0, "disk cache is NULL");
    int rc = yyc__dc_lock_open(dc);
    if (rc != YYC_OK) return rc;
    rc = yyc__dc_deferred_commit_locked(dc);
    yyc__dc_unlock_and_deliver(dc);
    return rc;
}
