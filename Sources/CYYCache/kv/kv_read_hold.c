/*
 * kv_read_hold.c - one read transaction held across consecutive reads, strictly bounded.
 *
 * Every statement is reset after use, so each lookup used to open and close its own WAL read
 * transaction (a few lock and unlock calls: most of a miss). YYKVStorage kept one open without
 * bound (a statement left pending), which made the WAL grow without bound (YYCache #115). Here,
 * when the owner turns it on (yyc__kv_set_read_hold; the disk cache does), the pure reads (the
 * first pass of a get, item infos, exists, get-many) share one read transaction that ends at
 * the first of:
 *   - YYC__KV_READ_HOLD_USES reads, or a read YYC__KV_READ_HOLD_SECONDS after it began;
 *   - a read that finds the manifest changed by any other connection since the transaction
 *     began (so a read never sees a value older than a set that returned, in this process or
 *     another; and then nothing is held for YYC__KV_READ_HOLD_SECONDS, so that a reader among
 *     busy writers is not always inside a read transaction, which would keep their checkpoints
 *     from ever restarting the WAL; YYC__KV_READ_HOLD_QUIET_SECONDS): the WAL-index header in the
 * -shm file (the documented WAL-index format: every commit rewrites it, after the commit, before
 * the writer returns) is compared with a copy taken before the transaction began, read through
 * SQLite's own map of it;
 *   - any other operation of this storage (every write, access-time update, trim, count,
 *     checkpoint, close: yyc__kv_db_check ends it unless the call is a pure read, keep_read;
 *     the folder lock ends it before it is awaited);
 *   - the owner's timer (yyc__kv_end_read; the disk cache's fires YYC__KV_READ_HOLD_SECONDS
 *     after the transaction began), so an idle cache never keeps a checkpoint waiting.
 * Without the map (a VFS without shared memory, say) nothing is held.
 *
 * Owner: the caller's thread, like the rest of yyc_kv (kv_internal.h).
 */
#include "kv/kv_internal.h"

#include <string.h>

/* The first copy of the WAL-index header: the first 48 bytes of the -shm file. */
#define WAL_HEADER_BYTES 48

/* Copies it word by word with acquire loads (the map is page-aligned; another process writes
 * it). A copy torn by a commit in progress only differs from the last one: the hold ends, which
 * is always safe. */
static void copy_header(const yyc_kv *kv, unsigned char out[WAL_HEADER_BYTES]) {
    const uint32_t *p = (const uint32_t *)(const void *)kv->shm;
    for (size_t i = 0; i < WAL_HEADER_BYTES / 4; i++) {
        uint32_t w = __atomic_load_n(p + i, __ATOMIC_ACQUIRE);
        memcpy(out + 4 * i, &w, 4);
    }
}

/* SQLite's own map of the WAL index (region 0, 32 KB), through the connection's file
 * (xShmMap without extending: nothing new is mapped or opened). Never a descriptor of our own
 * on the -shm file: closing one would drop every fcntl lock this process holds on it, SQLite's
 * included (POSIX locks are per process and file). Valid while the connection is open. */
void yyc__kv_read_hold_attach(yyc_kv *kv) {
    kv->shm = NULL;
    if (!kv->hold_reads || !kv->db) return;
    sqlite3_file *f = NULL;
    if (sqlite3_file_control(kv->db, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f ||
        !f->pMethods || f->pMethods->iVersion < 2 || !f->pMethods->xShmMap)
        return;
    void volatile *p = NULL;
    if (f->pMethods->xShmMap(f, 0, 32768, 0, &p) == SQLITE_OK && p)
        kv->shm = (const unsigned char *)p;
}

void yyc__kv_read_hold_detach(yyc_kv *kv) {
    yyc__kv_end_read(kv);
    kv->shm = NULL; /* (SQLite's map: it unmaps it) */
}

/* Runs a cached "begin;" or "commit;". */
static int exec_cached(yyc_kv *kv, const char *sql) {
    sqlite3_stmt *s;
    if (yyc__stmt_cache_get_literal(&kv->stmts, sql, &s) != SQLITE_OK) return SQLITE_ERROR;
    int rc = sqlite3_step(s);
    yyc__stmt_done(s);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

void yyc__kv_read_begin(yyc_kv *kv) {
    if (!kv->shm || !kv->db) return;
    double now = yyc__monotonic_coarse_now(); /* (the bounds are 5 and 50 ms: a tick is fine) */
    if (kv->read_held) {
        unsigned char now_header[WAL_HEADER_BYTES];
        copy_header(kv, now_header);
        bool changed = memcmp(now_header, kv->read_header, WAL_HEADER_BYTES) != 0;
        if (!changed && kv->read_uses < YYC__KV_READ_HOLD_USES &&
            now - kv->read_began < YYC__KV_READ_HOLD_SECONDS) {
            kv->read_uses++;
            return;
        }
        yyc__kv_end_read(kv);
        /* Someone else writes: hold nothing for a while (a reader that is always inside a
         * read transaction would keep the writers' checkpoints from ever restarting the WAL). */
        if (changed) kv->hold_quiet_until = now + YYC__KV_READ_HOLD_QUIET_SECONDS;
    }
    if (now < kv->hold_quiet_until) return;
    if (!sqlite3_get_autocommit(kv->db)) return; /* (some transaction is open: not ours) */
    /* The header before the snapshot is taken (at the first step): a commit in between only
     * makes the next read begin again. */
    copy_header(kv, kv->read_header);
    if (exec_cached(kv, "begin;") != SQLITE_OK) return;
    kv->read_held = true;
    kv->read_uses = 1;
    kv->read_began = now;
}

void yyc__kv_end_read(yyc_kv *kv) {
    if (!kv->read_held) return;
    kv->read_held = false;
    if (!kv->db || sqlite3_get_autocommit(kv->db)) return;
    if (exec_cached(kv, "commit;") != SQLITE_OK && !sqlite3_get_autocommit(kv->db))
        sqlite3_exec(kv->db, "rollback;", NULL, NULL, NULL);
}

bool yyc__kv_read_is_held(const yyc_kv *kv) { return kv->read_held; }

void yyc__kv_set_read_hold(yyc_kv *kv, bool on) {
    if (!on) yyc__kv_read_hold_detach(kv);
    kv->hold_reads = on;
    if (on && kv->db && !kv->shm) yyc__kv_read_hold_attach(kv);
}
