/*
 * fs_util.c - symlink-safe, atomic file helpers for the disk storage.
 */
#include "platform/fs_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef __linux__
#include <sys/syscall.h>
#if defined(SYS_openat2)
#include <linux/openat2.h> /* struct open_how, RESOLVE_* */
#endif
#endif

#include <bsd/stdlib.h> /* arc4random_buf */

#include "platform/name_random.h"

/* --- private prototypes --- */

static int remove_tree(int dirfd, const char *name, int depth);
static int empty_dir(int fd, int depth);

/* Deeper trees than this in trash/ are not ours: stop instead of exhausting descriptors. */
#define MAX_TREE_DEPTH 64

/* --- folders --- */

int yyc__fs_mkdirs(const char *path) {
    size_t len = strlen(path);
    if (len == 0) return EINVAL;
    char *buf = malloc(len + 1);
    if (!buf) return ENOMEM;
    memcpy(buf, path, len + 1);
    int err = 0;
    for (size_t i = 1; i <= len && !err; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        if (buf[i - 1] == '/') continue; /* "//" */
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) err = errno;
        buf[i] = saved;
    }
    if (!err) {
        struct stat st;
        if (stat(path, &st) != 0) err = errno;
        else if (!S_ISDIR(st.st_mode)) err = ENOTDIR;
    }
    free(buf);
    return err;
}

int yyc__fs_open_subdir(int dirfd, const char *name, int *out_fd) {
    *out_fd = -1;
    for (int attempt = 0; attempt < 3; attempt++) {
        if (mkdirat(dirfd, name, 0700) != 0 && errno != EEXIST) return errno;
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            *out_fd = fd;
            return 0;
        }
        int err = errno;
        if (err != ELOOP && err != ENOTDIR) return err;
        /* A link or a file took the folder's name: drop it (never its target) and retry. */
        if (unlinkat(dirfd, name, 0) != 0 && errno != ENOENT) return errno;
    }
    return ENOTDIR;
}

/* --- files --- */

static int write_full(int fd, const unsigned char *p, size_t len) {
    while (len > 0) {
        size_t chunk = len > (1u << 30) ? (1u << 30) : len;
        ssize_t n = write(fd, p, chunk);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int yyc__fs_write_temp(int dirfd, const void *buf, size_t len, char tmp[64]) {
    int fd = -1;
    for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {
        snprintf(tmp, 64, YYC__FS_TEMP_PREFIX "%016" PRIx64, yyc__name_random());
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) return errno;
    }
    if (fd < 0) return EEXIST;
    int err = write_full(fd, buf, len);
    if (close(fd) != 0 && !err && errno != EINTR) err = errno;
    if (err) unlinkat(dirfd, tmp, 0);
    return err;
}

int yyc__fs_write_atomic(int dirfd, const char *name, const void *buf, size_t len) {
    char tmp[64];
    int err = yyc__fs_write_temp(dirfd, buf, len, tmp);
    if (err) return err;
    if (renameat(dirfd, tmp, dirfd, name) != 0) {
        err = errno;
        unlinkat(dirfd, tmp, 0);
    }
    return err;
}

int yyc__fs_rename_noreplace(int olddirfd, const char *oldname, int newdirfd, const char *newname) {
#ifdef RENAME_NOREPLACE
    if (renameat2(olddirfd, oldname, newdirfd, newname, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return errno;
#endif
    /* No renameat2 here: a hard link never replaces an existing name either. */
    if (linkat(olddirfd, oldname, newdirfd, newname, 0) != 0) return errno;
    unlinkat(olddirfd, oldname, 0);
    return 0;
}

/* Finishes an open for reading: a regular file (else ENOENT) and its size. Closes fd on failure. */
static int opened_for_read(int fd, int *out_fd, uint64_t *out_size) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return err;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ENOENT;
    }
    *out_fd = fd;
    *out_size = (uint64_t)st.st_size;
    return 0;
}

/* O_NONBLOCK: a FIFO planted under a value's name must not block the reader. */
#define READ_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)

int yyc__fs_open_read(int dirfd, const char *name, int *out_fd, uint64_t *out_size) {
    *out_fd = -1;
    *out_size = 0;
    int fd = openat(dirfd, name, READ_FLAGS);
    if (fd < 0) return (errno == ELOOP || errno == ENOTDIR || errno == ENXIO) ? ENOENT : errno;
    return opened_for_read(fd, out_fd, out_size);
}

#if defined(__linux__) && defined(SYS_openat2)
/* openat2 is missing (ENOSYS: kernel before 5.6), refused (EPERM: a seccomp filter that
 * predates it) or does not take our arguments (EINVAL, E2BIG): every later call falls back at
 * once. */
static atomic_bool openat2_unusable;
#endif

bool yyc__fs_set_openat2(bool on) {
#if defined(__linux__) && defined(SYS_openat2)
    atomic_store_explicit(&openat2_unusable, !on, memory_order_relaxed);
    return on;
#else
    (void)on;
    return false;
#endif
}

int yyc__fs_open_read_in(int rootfd, const char *dir, const char *name, int *out_fd,
                         uint64_t *out_size) {
    *out_fd = -1;
    *out_size = 0;
#if defined(__linux__) && defined(SYS_openat2)
    if (atomic_load_explicit(&openat2_unusable, memory_order_relaxed)) return ENOSYS;
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof path) return ENAMETOOLONG;
    struct open_how how = {
        .flags = READ_FLAGS,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH,
    };
    int fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof how);
    if (fd < 0) {
        int err = errno;
        if (err == ENOSYS || err == EPERM || err == EINVAL || err == E2BIG) {
            atomic_store_explicit(&openat2_unusable, true, memory_order_relaxed);
            return ENOSYS;
        }
        /* A link (the folder's or the file's), a non-folder in place of the folder, a socket,
         * or a path that would leave rootfd: no value. */
        if (err == ELOOP || err == ENOTDIR || err == ENXIO || err == EXDEV) return ENOENT;
        return err;
    }
    return opened_for_read(fd, out_fd, out_size);
#else
    (void)rootfd;
    (void)dir;
    (void)name;
    return ENOSYS;
#endif
}

int yyc__fs_read_full(int fd, void *buf, size_t len) {
    unsigned char *p = buf;
    while (len > 0) {
        size_t chunk = len > (1u << 30) ? (1u << 30) : len;
        ssize_t n = read(fd, p, chunk);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return EIO; /* shorter than its recorded size */
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* --- recursive removal --- */

/* A new open file description of the same folder (a dup would share the directory stream
 * position with the original descriptor, which another thread may be reading). */
static int reopen_dir(int fd) { return openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); }

static int empty_dir(int fd, int depth) {
    int dfd = reopen_dir(fd);
    if (dfd < 0) return errno;
    DIR *d = fdopendir(dfd);
    if (!d) {
        int err = errno;
        close(dfd);
        return err;
    }
    int first_err = 0;
    struct dirent *e;
    while ((errno = 0, e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        int err = remove_tree(fd, e->d_name, depth);
        if (err && !first_err) first_err = err;
    }
    if (errno && !first_err) first_err = errno;
    closedir(d);
    return first_err;
}

static int remove_tree(int dirfd, const char *name, int depth) {
    if (unlinkat(dirfd, name, 0) == 0) return 0;
    int err = errno;
    if (err == ENOENT) return 0;
    if (err != EISDIR && err != EPERM) return err; /* EPERM: POSIX's answer for a folder */
    if (depth >= MAX_TREE_DEPTH) return ELOOP;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        return (errno == ENOTDIR || errno == ELOOP) ? err : errno;
    }
    int first_err = empty_dir(fd, depth + 1);
    close(fd);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT && !first_err)
        first_err = errno;
    return first_err;
}

int yyc__fs_remove_tree_at(int dirfd, const char *name) { return remove_tree(dirfd, name, 0); }

int yyc__fs_empty_dir(int dirfd) { return empty_dir(dirfd, 0); }

void yyc__fs_remove_stale_temps(int dirfd, long max_age_seconds) {
    int dfd = reopen_dir(dirfd);
    if (dfd < 0) return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    time_t now = time(NULL);
    size_t plen = strlen(YYC__FS_TEMP_PREFIX);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, YYC__FS_TEMP_PREFIX, plen) != 0) continue;
        struct stat st;
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (now - st.st_mtime > max_age_seconds) unlinkat(dirfd, e->d_name, 0);
    }
    closedir(d);
}

/* --- names --- */

void yyc__fs_uuid(char out[37]) {
    unsigned char b[16];
    arc4random_buf(b, sizeof b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(out, 37, "%02X%02X%02X%02X-%02X%02X-%02X%02X-%02X%02X-%02X%02X%02X%02X%02X%02X", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}
