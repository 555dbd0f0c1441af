/*
 * kv_folder.c - the KV storage's multi-process folder protocol and its files: the folder lock
 * (an flock on the storage folder, bounded by the busy timeout), data/ and its revalidation,
 * moving data/ to trash/, captured file references (file_ref), value file names (validation,
 * the MD5 name, fresh names), opening and reading value files, placing a saved value's file,
 * and the space reserve.
 *
 * Owner: the caller's thread (the caller serialises a yyc_kv). Across processes, the folder
 * flock guards every change of a row together with its file (yyc__kv_folder_lock, held while
 * kv->lock_depth > 0): data/ is only replaced under it, so data_fd checked once per hold stays
 * valid until the release; `*_locked` functions assert it. Reads outside the lock open their
 * file through the current data/ (yyc__fs_open_read_in) and are retried under the lock on a miss.
 */
#include "kv/kv_internal.h"

#include "platform/name_random.h"
#include <errno.h>
#include <fcntl.h>
#include <md5.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* --- data/ and trash/ --- */
/* (Re)opens data/ and remembers its identity. Counts as a new hold of the folder lock for the
 * file references captured so far (file_ref: their names belonged to the data/ of before). */
int yyc__kv_open_data_dir(yyc_kv *kv) {
    if (kv->data_fd >= 0 && kv->data_fd != kv->save_dir_fd) close(kv->data_fd);
    kv->data_fd = -1;
    kv->lock_hold++;
    kv->data_checked = false;
    int err = yyc__fs_open_subdir(kv->root_fd, DATA_DIR, &kv->data_fd);
    if (err) return err;
    struct stat st;
    if (fstat(kv->data_fd, &st) == 0) {
        kv->data_dev = st.st_dev;
        kv->data_ino = st.st_ino;
        kv->data_checked = kv->lock_depth > 0;
    }
    return 0;
}

/* The descriptor of the current data/ folder, reopened when data/ was replaced since (by
 * another process's remove-all, or by anything else: a file or a link in its place), so a
 * value is never written into a folder that went to the trash. -1 if it cannot be opened.
 * Checked once per hold of the folder lock (data/ is only replaced under it), else every time. */
int yyc__kv_data_dir(yyc_kv *kv) {
    if (kv->data_fd >= 0 && kv->data_checked) return kv->data_fd;
    struct stat st;
    if (kv->data_fd >= 0 && fstatat(kv->root_fd, DATA_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode) && st.st_dev == kv->data_dev && st.st_ino == kv->data_ino) {
        kv->data_checked = kv->lock_depth > 0;
        return kv->data_fd;
    }
    yyc__kv_open_data_dir(kv);
    return kv->data_fd;
}

/* Moves data/ to trash/<UUID> and recreates it; if the move fails, empties data/ in place.
 * With delete_now the moved folder is also emptied and removed before returning (a full disk:
 * the space is needed now), else the trash job does it later. Always under the folder lock
 * (taken here; it nests), so that data/ is never replaced while a save holding the lock moves
 * its file in (save_locked relies on it). */
void yyc__kv_move_data_to_trash(yyc_kv *kv, bool delete_now) {
    if (yyc__kv_folder_lock(kv) != YYC_OK) return; /* (reported): data/ stays */
    int tfd = -1;
    bool moved = false;
    if (yyc__fs_open_subdir(kv->root_fd, TRASH_DIR, &tfd) == 0) {
        char uuid[37];
        yyc__fs_uuid(uuid);
        moved = renameat(kv->root_fd, DATA_DIR, tfd, uuid) == 0;
        if (moved && delete_now) yyc__fs_remove_tree_at(tfd, uuid);
        close(tfd);
    }
    if (!moved && kv->data_fd >= 0) yyc__fs_empty_dir(kv->data_fd);
    yyc__kv_open_data_dir(kv);
    yyc__kv_folder_unlock(kv);
}

/* --- names --- */

bool yyc_kv_filename_is_valid(const char *name) {
    if (!name) return false;
    size_t len = strnlen(name, 256);
    if (len == 0 || len > 255) return false;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return false;
    /* Reserved: the library's temporary files, which the sweeps delete by this prefix. */
    if (strncmp(name, YYC__FS_TEMP_PREFIX, strlen(YYC__FS_TEMP_PREFIX)) == 0) return false;
    return memchr(name, '/', len) == NULL;
}

void yyc_kv_md5_filename(const char *key, char out[33]) {
    MD5_CTX ctx;
    uint8_t digest[MD5_DIGEST_LENGTH];
    static const char hex[] = "0123456789abcdef";
    MD5Init(&ctx);
    if (key) MD5Update(&ctx, (const uint8_t *)key, strlen(key));
    MD5Final(digest, &ctx);
    for (int i = 0; i < MD5_DIGEST_LENGTH; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[32] = '\0';
}

void yyc__kv_file_ref_capture(yyc_kv *kv, const char *filename, file_ref *r) {
    *r = (file_ref){0};
    if (!filename || !yyc_kv_filename_is_valid(filename)) return;
    int dfd = yyc__kv_data_dir(kv);
    struct stat st;
    if (dfd < 0 || fstatat(dfd, filename, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    r->name = strdup(filename);
    r->dev = st.st_dev;
    r->ino = st.st_ino;
    r->hold = kv->lock_depth > 0 ? kv->lock_hold : 0;
}

/* Deletes the captured file if it is still there under its name; forgets the reference. */
void yyc__kv_file_ref_delete(yyc_kv *kv, file_ref *r) {
    if (r->name) {
        int dfd = yyc__kv_data_dir(kv);
        bool same_hold = r->hold != 0 && kv->lock_depth > 0 && r->hold == kv->lock_hold;
        struct stat st;
        if (dfd >= 0 && (same_hold || (fstatat(dfd, r->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                                       st.st_dev == r->dev && st.st_ino == r->ino)))
            unlinkat(dfd, r->name, 0); /* (a replacement in this instant is not detected) */
    }
    free(r->name);
    r->name = NULL;
}

void yyc__kv_file_ref_forget(file_ref *r) {
    free(r->name);
    r->name = NULL;
}

/* The folder lock: an exclusive flock on the storage folder, held around every sequence that
 * changes both a row and a data file (rename + upsert, row delete + unlink, remove-all), so
 * that processes sharing the folder never interleave inside one: a row cannot end up naming a
 * file another process just deleted or replaced. Within a process the owner's mutex already
 * serialises calls; the lock is held for file renames and unlinks, not for a value's write
 * (temporary files are written before it is taken) - except in the rare save whose temporary
 * file another process's remove-all trashed in between: that one is written again under the
 * lock (save_locked). data/ itself is only ever replaced under the lock. Nests. Waits at most the
 * busy timeout for another process, then fails with YYC_EBUSY; any other failure is reported
 * too: nothing proceeds unlocked. */
/* Takes an exclusive flock on fd, waiting at most timeout_ms for another holder: flock has no
 * timed wait, so it polls (LOCK_NB) with sleeps growing from 50 us to 5 ms. Returns 0,
 * EWOULDBLOCK when another open file description still holds it at the deadline, or the errno
 * of a failure (EINTR is retried). */
#ifdef YYC_TESTING
static atomic_long folder_waits; /* folder-lock waits begun (another process held it) */
long yyc__kv_testing_folder_waits(void);
long yyc__kv_testing_folder_waits(void) { return atomic_load(&folder_waits); }
#endif

int yyc__kv_flock_bounded(int fd, int timeout_ms) {
    double deadline = yyc__monotonic_now() + (timeout_ms > 0 ? timeout_ms : 0) / 1000.0;
    for (unsigned attempt = 0;; attempt++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
        int err = errno;
        if (err == EINTR) continue;
        if (err != EWOULDBLOCK) return err;
#ifdef YYC_TESTING
        if (attempt == 0) atomic_fetch_add(&folder_waits, 1);
#endif
        if (yyc__monotonic_now() >= deadline) return EWOULDBLOCK;
        usleep(attempt < 7 ? 50u << attempt : 5000u);
    }
}

int yyc__kv_folder_lock(yyc_kv *kv) {
    if (kv->lock_depth > 0) {
        kv->lock_depth++;
        return YYC_OK;
    }
    /* Never wait for the folder while holding a read transaction: the lock's holder may be
     * waiting for the WAL writer lock of a checkpoint that waits for our reader. */
    yyc__kv_end_read(kv);
    int err = yyc__kv_flock_bounded(kv->root_fd, kv->busy_timeout_ms);
#ifdef YYC_TESTING
    if (!err && kv->fail_flock) {
        flock(kv->root_fd, LOCK_UN);
        err = kv->fail_flock;
        kv->fail_flock = 0;
    }
#endif
    if (err == EWOULDBLOCK)
        return yyc__kv_report(kv, true, YYC_EBUSY, 0, err,
                              "folder lock held by another process beyond the busy timeout");
    if (err) return yyc__kv_errno_fail(kv, err, "lock folder");
    kv->lock_depth = 1;
    kv->lock_hold++;
    kv->data_checked = false; /* another process may have replaced data/ before we got it */
    return YYC_OK;
}

void yyc__kv_folder_unlock(yyc_kv *kv) {
    assert(kv->lock_depth > 0);
    if (--kv->lock_depth > 0) return;
    kv->data_checked = false;
    flock(kv->root_fd, LOCK_UN); /* (cannot fail on our own open descriptor) */
}

#ifdef YYC_TESTING
void yyc__kv_fail_next_folder_lock(yyc_kv *kv, int err) { kv->fail_flock = err; }
#endif

/* --- files of values --- */

/* Opens the data file of a row for reading. Returns YYC_OK (*fd, *len), YYC_NOTFOUND when the
 * value is gone (missing, a link, not a regular file, or of another size than recorded: the
 * caller deletes the row, and the file too when *drop_file), or a recorded error. */
int yyc__kv_open_value_file(yyc_kv *kv, const char *filename, int64_t size, int *fd, size_t *len,
                            bool *drop_file) {
    *fd = -1;
    *len = 0;
    *drop_file = false;
    if (!filename) return YYC_NOTFOUND;
    uint64_t fsize;
    /* Outside the folder lock, data/ may have been replaced since data_fd was checked (another
     * process's remove-all): the file is opened through the current data/, resolved in the same
     * system call where the system can (no fstatat of data/ first). A miss there is retried
     * under the lock, where data_dir also repairs data/. */
    int err = kv->lock_depth == 0
                  ? yyc__fs_open_read_in(kv->root_fd, DATA_DIR, filename, fd, &fsize)
                  : ENOSYS;
    if (err == ENOSYS) {
        int dfd = yyc__kv_data_dir(kv);
        if (dfd < 0) return YYC_NOTFOUND;
        err = yyc__fs_open_read(dfd, filename, fd, &fsize);
    }
    if (err == ENOENT) return YYC_NOTFOUND;
    if (err) return yyc__kv_errno_fail(kv, err, "open data file");
    if (size < 0 || fsize != (uint64_t)size || fsize > SIZE_MAX) {
        close(*fd);
        *fd = -1;
        *drop_file = true;
        yyc__kv_report(kv, false, YYC_ECORRUPT, 0, 0, "data file size differs from the manifest");
        return YYC_NOTFOUND;
    }
    *len = (size_t)fsize;
    return YYC_OK;
}

/* Reads an opened value file into buf and closes it. YYC_NOTFOUND if it shrank meanwhile. */
int yyc__kv_read_value_file(yyc_kv *kv, int fd, void *buf, size_t len) {
    int err = yyc__fs_read_full(fd, buf, len);
    close(fd);
    if (err == EIO) return YYC_NOTFOUND;
    if (err) return yyc__kv_errno_fail(kv, err, "read data file");
    return YYC_OK;
}

/* A fresh name for a new version of the file `name` (caller-owned, 256 bytes): name itself on
 * the first attempt, then name (cut to fit 255 bytes) + "~" + 8 random hex digits. */
static void fresh_name(const char *name, int attempt, char out[256]) {
    if (attempt == 0) {
        snprintf(out, 256, "%s", name);
        return;
    }
    uint32_t r = (uint32_t)yyc__name_random();
    int base = (int)strnlen(name, 255 - 9);
    snprintf(out, 256, "%.*s~%08x", base, name, r);
}

/* Moves the temporary file tdfd/tmp into dfd under a name no file has yet (fresh_name; never
 * over an existing file, so neither the key's previous version nor another key's file is ever
 * replaced). *placed gets the name. Returns 0 or an errno value (ENOENT: tmp is gone). */
static int link_fresh(int tdfd, const char *tmp, int dfd, const char *name, char placed[256]) {
    for (int attempt = 0; attempt < 16; attempt++) {
        fresh_name(name, attempt, placed);
        int err = yyc__fs_rename_noreplace(tdfd, tmp, dfd, placed);
        if (err != EEXIST) return err;
    }
    return EEXIST;
}

/* Puts a file value into data/ under a fresh name (link_fresh: `name` when no file has it, else
 * a variant of it), under the folder lock: moves the temporary file tdfd/tmp written before the
 * lock was taken (tmp empty: none could be written). When that file is gone - data/ went to
 * another process's trash, and was emptied, between its write and the lock; or it was never
 * written because data/ was already gone - the value is written again, into the current data/,
 * under the lock this time: data/ is only replaced under the lock, so it cannot go away again
 * before the move and once is enough. No existing file is touched; the temporary file never
 * survives a failure. *placed gets the name. Returns YYC_OK or a recorded error. */
int yyc__kv_place_file_locked(yyc_kv *kv, const void *value, size_t value_len, const char *name,
                              int tdfd, const char *tmp, char placed[256]) {
    assert(kv->lock_depth > 0);
    int dfd = yyc__kv_data_dir(kv);
    if (dfd < 0) {
        if (*tmp) unlinkat(tdfd, tmp, 0);
        return yyc__kv_errno_fail(kv, EIO, "open data folder");
    }
    if (*tmp) {
        int err = link_fresh(tdfd, tmp, dfd, name, placed);
        if (err == 0) return YYC_OK;
        unlinkat(tdfd, tmp, 0);
        if (err != ENOENT) return yyc__kv_errno_fail(kv, err, "move data file into place");
    }
    char again[64];
    int err = yyc__fs_write_temp(dfd, value, value_len, again);
    if (err) return yyc__kv_errno_fail(kv, err, "write data file");
    err = link_fresh(dfd, again, dfd, name, placed);
    if (err) {
        unlinkat(dfd, again, 0);
        return yyc__kv_errno_fail(kv, err, "move data file into place");
    }
    return YYC_OK;
}

#define RESERVE_NAME "space.reserve"
#define RESERVE_BYTES (256 * 1024)

/* Makes the space reserve if it is missing and the file system has room for it twice over
 * (best effort: a full disk simply leaves it missing). Another process may do the same at
 * the same time: O_EXCL lets one of them make it. */
void yyc__kv_reserve_make(yyc_kv *kv) {
    kv->reserve_gone = true;
    struct statvfs sv;
    if (fstatvfs(kv->root_fd, &sv) != 0 ||
        (uint64_t)sv.f_bavail * sv.f_frsize < 2u * (uint64_t)RESERVE_BYTES)
        return;
    int fd = openat(kv->root_fd, RESERVE_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0600);
    if (fd < 0) {
        if (errno == EEXIST) kv->reserve_gone = false;
        return;
    }
    int err = posix_fallocate(fd, 0, RESERVE_BYTES);
    close(fd);
    if (err) unlinkat(kv->root_fd, RESERVE_NAME, 0); /* no half reserve */
    else kv->reserve_gone = false;
}

bool yyc__kv_space_is_short(yyc_kv *kv) {
    struct statvfs sv;
    return fstatvfs(kv->root_fd, &sv) != 0 ||
           (uint64_t)sv.f_bavail * sv.f_frsize < (uint64_t)YYC__KV_SHORT_OF_SPACE_BYTES;
}

/* Releases the space reserve. Returns whether there was one (a regular file, never a link). */
bool yyc__kv_reserve_release(yyc_kv *kv) {
    struct stat st;
    kv->reserve_gone = true;
    if (fstatat(kv->root_fd, RESERVE_NAME, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
        return false;
    return unlinkat(kv->root_fd, RESERVE_NAME, 0) == 0 && st.st_blocks > 0;
}
