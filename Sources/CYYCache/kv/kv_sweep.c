/*
 * kv_sweep.c - the KV storage's background sweeps (spec 2.7): emptying trash/ and, after an open,
 * removing stale temporary files and files of data/ that no manifest row names.
 *
 * Owner: the worker thread (worker.c; queued per yyc_kv, drained by yyc_kv_close). A job owns
 * its own descriptors of the folder, data/ and trash/ and a copy of the manifest path, and opens
 * its own read-only SQLite connection: it reads nothing of the yyc_kv, which the caller's thread
 * keeps using meanwhile. Only yyc__kv_schedule_trash_empty runs on the caller's thread (it reads
 * kv's descriptors to duplicate them). The orphan sweep takes the folder flock through its own
 * open file description before each unlink.
 */
#include "kv/kv_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
/* --- trash (spec 2.7) --- */

/* Temporary value files older than this, left in data/ by a process that died mid-write, are
 * removed in the background after an open. Younger ones may belong to a write in progress (in
 * another process sharing the folder). */
#define STALE_TEMP_SECONDS (15 * 60)

/* Files in data/ that no row names and that are older than this (a crash between a file write
 * and its row, or between a row delete and its file delete) are removed after an open. Younger
 * ones may belong to a save in progress (in another process sharing the folder). */
#define ORPHAN_GRACE_SECONDS 60

typedef struct trash_job {
    int trash_fd;
    int root_fd;   /* the folder, for the folder lock (-1: none) */
    int data_fd;   /* -1: no sweep of data/ */
    char *db_path; /* for the orphan sweep (NULL: none) */
} trash_job;

/* Removes the files of data/ that no manifest row names. Runs on the worker thread with its
 * own read-only connection; every candidate is checked once more against the live manifest
 * just before it is unlinked. Best effort: any failure just stops the sweep. */
static void remove_orphans(int root_fd, int data_fd, const char *db_path) {
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX;
#ifdef SQLITE_OPEN_NOFOLLOW
    flags |= SQLITE_OPEN_NOFOLLOW;
#endif
    if (sqlite3_open_v2(db_path, &db, flags, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return;
    }
    sqlite3_busy_timeout(db, 1000);
    time_t cutoff = time(NULL) - ORPHAN_GRACE_SECONDS;
    yyc__lru_map names;
    yyc__lru_map_init(&names);
    sqlite3_stmt *all = NULL, *one = NULL;
    bool ok = sqlite3_prepare_v2(db, "select filename from manifest where filename is not null;",
                                 -1, &all, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(db, "select 1 from manifest where filename = ?1 limit 1;", -1,
                                 &one, NULL) == SQLITE_OK;
    int rc = SQLITE_DONE;
    while (ok && (rc = sqlite3_step(all)) == SQLITE_ROW) {
        const void *name = sqlite3_column_text(all, 0);
        bool inserted;
        if (name && !yyc__lru_map_find_or_insert(&names, name, (size_t)sqlite3_column_bytes(all, 0),
                                                 &inserted))
            ok = false;
    }
    if (rc != SQLITE_DONE) ok = false;
    sqlite3_reset(all);
    int dfd = ok ? openat(data_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d && dfd >= 0) close(dfd);
    struct dirent *e;
    size_t plen = strlen(YYC__FS_TEMP_PREFIX);
    while (d && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (!strcmp(name, ".") || !strcmp(name, "..") || !strncmp(name, YYC__FS_TEMP_PREFIX, plen))
            continue;
        struct stat st;
        if (fstatat(data_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISDIR(st.st_mode) || st.st_mtime >= cutoff) continue;
        if (yyc__lru_map_find(&names, name, strlen(name))) continue;
        /* The final check and the unlink under the folder lock (our own open file description
         * of the folder, so it excludes this process's storage too): no save can rename a new
         * file into place under this name in between. */
        if (root_fd >= 0 && yyc__kv_flock_bounded(root_fd, 1000) != 0)
            break; /* (busy: next open) */
        struct stat now;
        sqlite3_bind_text(one, 1, name, -1, SQLITE_STATIC);
        rc = sqlite3_step(one);
        sqlite3_reset(one);
        sqlite3_clear_bindings(one);
        if (rc == SQLITE_DONE && fstatat(data_fd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
            now.st_dev == st.st_dev && now.st_ino == st.st_ino)
            unlinkat(data_fd, name, 0); /* a link is removed, not followed */
        if (root_fd >= 0) flock(root_fd, LOCK_UN);
        if (rc != SQLITE_DONE && rc != SQLITE_ROW) break;
    }
    if (d) closedir(d);
    sqlite3_finalize(all);
    sqlite3_finalize(one);
    yyc__lru_map_destroy(&names);
    sqlite3_close(db);
}

static void empty_trash_job(void *arg) {
    trash_job *job = arg;
    yyc__fs_empty_dir(job->trash_fd);
    close(job->trash_fd);
    if (job->data_fd >= 0) {
        yyc__fs_remove_stale_temps(job->data_fd, STALE_TEMP_SECONDS);
        if (job->db_path) remove_orphans(job->root_fd, job->data_fd, job->db_path);
        close(job->data_fd);
    }
    if (job->root_fd >= 0) close(job->root_fd);
    free(job->db_path);
    free(job);
}

/* Empties trash/ on the worker thread (inline if the job cannot be queued). With sweep_data
 * (after an open) it also removes stale temporary files and unreferenced files from data/.
 * The job holds its own descriptors, so it never follows a link and needs nothing from kv. */
void yyc__kv_schedule_trash_empty(yyc_kv *kv, bool sweep_data) {
    int tfd;
    if (yyc__fs_open_subdir(kv->root_fd, TRASH_DIR, &tfd) != 0) return;
    trash_job *job = calloc(1, sizeof *job);
    if (!job) {
        yyc__fs_empty_dir(tfd);
        close(tfd);
        return;
    }
    job->trash_fd = tfd;
    job->data_fd = -1;
    job->root_fd = -1;
    if (sweep_data && kv->data_fd >= 0) {
        job->data_fd = openat(kv->data_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        job->root_fd = openat(kv->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        job->db_path = strdup(kv->db_path); /* NULL (out of memory): no orphan sweep */
    }
    if (yyc__worker_async(YYC__QUEUE_DISK, kv, empty_trash_job, job) != YYC_OK)
        empty_trash_job(job);
}
