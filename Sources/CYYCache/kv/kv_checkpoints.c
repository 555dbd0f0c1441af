/*
 * kv_checkpoints.c - the manifest's WAL checkpoints, off the callers' threads.
 *
 * SQLite's auto-checkpoint (a PASSIVE checkpoint inside the commit that leaves 1,000 pages in the
 * WAL) is off. After each commit SQLite calls wal_committed on the committing thread, and a WAL of
 * YYC__KV_CHECKPOINT_PAGES pages or more queues one PASSIVE checkpoint on the checkpoint queue,
 * through the checkpointer's own connection. The WAL restarts (and journal_size_limit truncates it)
 * in the first commit that begins after a checkpoint copied all of it. A writer that never pauses
 * keeps appending while the job copies, so the job copies only what was there when it began; the
 * commit that finds the last job done and at most YYC__KV_CHECKPOINT_TAIL_PAGES pages beyond what
 * it copied copies the rest itself (a short passive checkpoint: only those pages), and a commit
 * that leaves YYC__KV_WAL_CAP_PAGES pages or more runs the queued job itself (or waits for the
 * running one) and then does the same. A disk cache has both done outside its lock
 * (yyc__kv_set_tail_checkpoint_outside): the commit queues the job (or finds one queued or
 * running), and the committing thread runs it or waits for it once the core's lock is released,
 * so that the fsyncs (15-60 ms on ext4) keep no other caller of the cache waiting; the writer
 * still pays for them before its next write, so the WAL stays under the cap plus the
 * transactions other threads commit meanwhile.
 * So the WAL stays under the cap plus one transaction, as with SQLite's own auto-checkpoint, while
 * the bulk of the copying (and its fsyncs) runs on the queue's thread. Measured (disk-latency
 * bench): a cycle of about 256 pages, not 1,000, also makes the restarts cheap, because the WAL
 * then barely outgrows journal_size_limit and the truncation frees little.
 *
 * Threads and locks: the checkpointer is created and freed with the manifest connection, on the
 * caller's thread (the kv's serialisation). Its fields marked [lock] are guarded by its mutex; db
 * belongs to the one job (queued is true from its queueing to its end) and, once the job is
 * drained, to the closer. A job touches only the checkpointer, never the kv. Around its SQLite
 * calls the job holds fork_lock, which a pthread_atfork handler takes before a fork: a fork never
 * happens while a checkpoint thread is inside SQLite, so a child that opens caches of its own
 * never finds one of SQLite's mutexes held by a thread it does not have. The child inherits no
 * job (worker.c: its queues start empty); the parent's checkpointers are the parent's, which the
 * child must not use, as it must not use the parent's caches.
 */
#include "kv/kv_internal.h"
#include "kv/kv_private.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The checkpoints of one manifest connection. Invariants (under lock): at most one job exists,
 * and exists exactly while queued is true (a commit past the cap, a wait and the close run a
 * queued job on their own thread through yyc__worker_drain, or wait for the running one); caught_up
 * is -1 or the WAL's frame count that the last job found and copied completely; 0 < trigger <= cap.
 */
struct yyc__kv_checkpointer {
    pthread_mutex_t lock;
    /* [lock] The owner runs or waits for the checkpoint a commit would copy or wait for
     * (tail_outside, as kv->tail_outside); the queued job was queued so (tail_job: the testing
     * hook). tail_due: one is due since the owner last took it (written under the lock, read
     * and cleared without it by yyc__kv_take_due_checkpoint, which every call of the owner runs).
     */
    bool tail_outside, tail_job;
    atomic_bool tail_due;
    bool queued;      /* [lock] */
    int caught_up;    /* [lock] */
    int trigger, cap; /* [lock] pages: queue a job / wait for it (testing: adjustable) */
    bool truncate;  /* [lock] the next job truncates the WAL (yyc__kv_checkpoints_truncate_soon) */
    sqlite3 *db;    /* [job] the job's connection, opened by the first job */
    char db_path[]; /* [open] a copy of kv->db_path */
};

static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void) { pthread_mutex_lock(&fork_lock); }
static void fork_release(void) { pthread_mutex_unlock(&fork_lock); }
static void install_fork_handlers(void) {
    pthread_atfork(fork_prepare, fork_release, fork_release);
}

#ifdef YYC_TESTING
static atomic_int checkpoints_on_worker, checkpoints_on_caller, jobs_in_sqlite;

int yyc__kv_checkpoint_jobs_in_sqlite(void) { return atomic_load(&jobs_in_sqlite); }

void yyc__kv_checkpoint_counts(int *on_worker, int *on_caller) {
    *on_worker = atomic_load(&checkpoints_on_worker);
    *on_caller = atomic_load(&checkpoints_on_caller);
}

void yyc__kv_set_checkpoint_pages(yyc_kv *kv, int trigger, int cap) {
    yyc__kv_checkpointer *c = kv->checkpointer;
    assert(c && trigger > 0 && trigger <= cap);
    pthread_mutex_lock(&c->lock);
    c->trigger = trigger;
    c->cap = cap;
    pthread_mutex_unlock(&c->lock);
}

/* Counts a checkpoint after which the WAL had copied frames (backfilled, its pnCkpt), by the
 * thread that ran it. */
static void count_checkpoint(int copied_now) {
    if (copied_now <= 0) return;
    atomic_fetch_add(yyc__worker_is_current() ? &checkpoints_on_worker : &checkpoints_on_caller, 1);
}
#define NOTE_IN_SQLITE(delta) atomic_fetch_add(&jobs_in_sqlite, (delta))

static void (*_Atomic tail_copy_hook)(void *);
static void *_Atomic tail_copy_ctx;

void yyc__kv_testing_set_tail_copy_hook(void (*fn)(void *ctx), void *ctx) {
    atomic_store(&tail_copy_ctx, ctx);
    atomic_store(&tail_copy_hook, fn);
}

static void tail_copy_begins(void) {
    void (*fn)(void *) = atomic_load(&tail_copy_hook);
    if (fn) fn(atomic_load(&tail_copy_ctx));
}
#else
#define tail_copy_begins() ((void)0)
#define count_checkpoint(copied_now) ((void)(copied_now))
#define NOTE_IN_SQLITE(delta) ((void)0)
#endif

/* On the checkpoint queue's thread (or the closer's, when a close drains it). */
static void checkpoint_job(void *arg) {
    yyc__kv_checkpointer *c = arg;
    int frames = -1, copied = -1, counted = -1;
    pthread_mutex_lock(&c->lock);
    int mode = c->truncate ? SQLITE_CHECKPOINT_TRUNCATE : SQLITE_CHECKPOINT_PASSIVE;
    c->truncate = false;
    bool tail = c->tail_job;
    c->tail_job = false;
    pthread_mutex_unlock(&c->lock);
    if (tail) tail_copy_begins();
    pthread_mutex_lock(&fork_lock);
    NOTE_IN_SQLITE(1);
    if (!c->db) {
        int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
#ifdef SQLITE_OPEN_NOFOLLOW
        flags |= SQLITE_OPEN_NOFOLLOW;
#endif
        if (sqlite3_open_v2(c->db_path, &c->db, flags, NULL) != SQLITE_OK) {
            sqlite3_close(c->db); /* (no memory, or the folder went away: the next job retries) */
            c->db = NULL;
        }
    }
    /* A connection sees the WAL only from its first read on; with no busy handler, the job waits
     * for nobody (a busy or failing checkpoint is skipped: the next commit queues another). */
    if (c->db && sqlite3_exec(c->db, "pragma schema_version;", NULL, NULL, NULL) == SQLITE_OK &&
        sqlite3_wal_checkpoint_v2(c->db, NULL, mode, &frames, &copied) == SQLITE_OK) {
        counted = copied;
    }
    NOTE_IN_SQLITE(-1);
    pthread_mutex_unlock(&fork_lock);
    count_checkpoint(counted);
    pthread_mutex_lock(&c->lock);
    c->caught_up = frames > 0 && frames == copied ? frames : -1;
    c->queued = false;
    pthread_mutex_unlock(&c->lock);
}

/* SQLite's WAL hook: after each commit on the manifest connection, on the committing thread,
 * with no SQLite lock held; pages is the WAL's frame count. */
static int wal_committed(void *ctx, sqlite3 *db, const char *name, int pages) {
    yyc__kv_checkpointer *c = ctx;
    pthread_mutex_lock(&c->lock);
    if (pages < c->trigger) {
        pthread_mutex_unlock(&c->lock);
        return SQLITE_OK;
    }
    bool tail = c->caught_up > 0 && pages - c->caught_up <= YYC__KV_CHECKPOINT_TAIL_PAGES;
    if (c->tail_outside && (pages >= c->cap || (tail && !c->queued))) {
        /* The copy of the rest (or, past the cap, the wait for the job) is the owner's once its
         * own lock is released (yyc__kv_run_due_checkpoint): the fsyncs keep no other caller
         * waiting, and the writer still waits before its next write. */
        if (!c->queued &&
            yyc__worker_async(YYC__QUEUE_CHECKPOINT, c, checkpoint_job, c) == YYC_OK) {
            c->queued = c->tail_job = true;
            c->caught_up = -1;
        }
        if (c->queued) {
            atomic_store_explicit(&c->tail_due, true, memory_order_relaxed);
            pthread_mutex_unlock(&c->lock);
            return SQLITE_OK;
        }
        /* (no job could be queued: here and now, as without the owner) */
    }
    if (pages >= c->cap && c->queued) {
        /* Past the cap: the queued job runs here (or the running one is waited for). */
        pthread_mutex_unlock(&c->lock);
        yyc__worker_drain(c);
        pthread_mutex_lock(&c->lock);
    }
    bool copy_rest = false;
    if (!c->queued) {
        if (pages >= c->cap ||
            (c->caught_up > 0 && pages - c->caught_up <= YYC__KV_CHECKPOINT_TAIL_PAGES)) {
            copy_rest = true;
            c->caught_up = -1;
        } else if (yyc__worker_async(YYC__QUEUE_CHECKPOINT, c, checkpoint_job, c) == YYC_OK) {
            c->queued = true; /* (not queued: no memory or no thread; the next commit retries) */
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (copy_rest) {
        tail_copy_begins();
        int frames = -1, copied = -1;
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, &frames, &copied);
        count_checkpoint(copied);
    }
    return SQLITE_OK; /* (a checkpoint's failure is not the commit's) */
}

int yyc__kv_checkpoints_start(yyc_kv *kv, sqlite3 *db) {
    assert(!kv->checkpointer);
    pthread_once(&fork_handlers_once, install_fork_handlers);
    size_t len = strlen(kv->db_path) + 1;
    yyc__kv_checkpointer *c = calloc(1, sizeof *c + len);
    if (!c) return YYC_ENOMEM;
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        return YYC_ENOMEM;
    }
    c->caught_up = -1;
    c->tail_outside = kv->tail_outside;
    c->trigger = YYC__KV_CHECKPOINT_PAGES;
    c->cap = YYC__KV_WAL_CAP_PAGES;
    memcpy(c->db_path, kv->db_path, len);
    kv->checkpointer = c;
    /* The hook replaces the auto-checkpoint's own: turn that off first. */
    sqlite3_wal_autocheckpoint(db, 0);
    sqlite3_wal_hook(db, wal_committed, c);
    return YYC_OK;
}

void yyc__kv_set_tail_checkpoint_outside(yyc_kv *kv, bool on) {
    kv->tail_outside = on;
    yyc__kv_checkpointer *c = kv->checkpointer;
    if (!c) return;
    pthread_mutex_lock(&c->lock);
    c->tail_outside = on;
    pthread_mutex_unlock(&c->lock);
}

const void *yyc__kv_take_due_checkpoint(yyc_kv *kv) {
    yyc__kv_checkpointer *c = kv->checkpointer;
    if (!c) return NULL;
    if (!atomic_load_explicit(&c->tail_due, memory_order_relaxed)) return NULL;
    return atomic_exchange_explicit(&c->tail_due, false, memory_order_relaxed) ? c : NULL;
}

/* (token is only compared with the jobs' owners, never followed: the checkpointer may be gone.) */
void yyc__kv_run_due_checkpoint(const void *token) {
    if (token) yyc__worker_drain(token);
}

void yyc__kv_checkpoints_truncate_soon(yyc_kv *kv) {
    yyc__kv_checkpointer *c = kv->checkpointer;
    bool queued = false;
    if (c) {
        pthread_mutex_lock(&c->lock);
        c->truncate = true;
        /* (a queued copy truncates too: on the queue, not the caller) */
        atomic_store_explicit(&c->tail_due, false, memory_order_relaxed);
        if (!c->queued && yyc__worker_async(YYC__QUEUE_CHECKPOINT, c, checkpoint_job, c) == YYC_OK)
            c->queued = true;
        queued = c->queued;
        pthread_mutex_unlock(&c->lock);
    }
    if (!queued) yyc__kv_checkpoint(kv); /* (no job could be queued: here and now) */
}

void yyc__kv_checkpoints_wait(yyc_kv *kv) {
    if (kv->checkpointer) yyc__worker_drain(kv->checkpointer);
}

void yyc__kv_checkpoints_stop(yyc_kv *kv) {
    yyc__kv_checkpointer *c = kv->checkpointer;
    if (!c) return;
    if (kv->db) sqlite3_wal_hook(kv->db, NULL, NULL);
    /* A queued job runs here, on this thread; a running one is waited for. */
    yyc__worker_drain(c);
    sqlite3_close(c->db); /* (never the last connection: the manifest's closes after it) */
    pthread_mutex_destroy(&c->lock);
    free(c);
    kv->checkpointer = NULL;
}

/* A TRUNCATE checkpoint that waits for nobody: busy readers or writers of other processes
 * leave it a passive one (best effort; errors ignored). */
void yyc__kv_checkpoint(yyc_kv *kv) {
    if (!kv->db) return;
    yyc__kv_end_read(kv);
    yyc__kv_checkpoints_wait(kv); /* (ours would make it fail at once) */
    sqlite3_busy_timeout(kv->db, 0);
    sqlite3_wal_checkpoint_v2(kv->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_busy_timeout(kv->db, kv->busy_timeout_ms);
}
