/*
 * fs_util.h - file-system helpers of the disk storage (private; not API).
 *
 * Every helper works relative to a directory file descriptor and never follows a symbolic link
 * in the last path component (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW, unlinkat on links), so a link
 * planted in data/ or trash/ can neither redirect a write nor make a delete escape the folder.
 * New folders are created 0700 and new files 0600.
 *
 * Return convention: 0 on success, else an errno value (errno itself is left unspecified).
 * Thread safety: every helper is reentrant; the caller serialises access to one folder.
 */
#ifndef YYCACHE_FS_UTIL_H
#define YYCACHE_FS_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Creates path and any missing parent with mode 0700 (existing folders are fine). */
int yyc__fs_mkdirs(const char *path);

/* Opens the folder `name` inside dirfd (O_DIRECTORY|O_NOFOLLOW), creating it 0700 when missing.
 * A non-folder in its place (a symlink or a file) is unlinked (the link itself, never its
 * target) and replaced by a new folder. *out_fd is the folder's descriptor (O_CLOEXEC). */
int yyc__fs_open_subdir(int dirfd, const char *name, int *out_fd);

/* Writes len bytes of buf to dirfd/name atomically: a temporary file in the same folder
 * (O_CREAT|O_EXCL|O_NOFOLLOW, 0600), a full write loop (EINTR and short writes handled), then
 * renameat over name. On failure the temporary file is removed and name is untouched. */
int yyc__fs_write_atomic(int dirfd, const char *name, const void *buf, size_t len);

/* The first half of yyc__fs_write_atomic: writes len bytes of buf to a new temporary file in
 * dirfd (O_CREAT|O_EXCL|O_NOFOLLOW, 0600) whose name is stored in tmp_name. The caller renames
 * it into place (renameat) or unlinks it. On failure nothing is left behind. */
int yyc__fs_write_temp(int dirfd, const void *buf, size_t len, char tmp_name[64]);

/* Renames olddirfd/oldname to newdirfd/newname only if newname does not exist (EEXIST if it
 * does): an existing file is never replaced. renameat2(RENAME_NOREPLACE) where the file system
 * has it, else linkat + unlinkat of oldname (then a crash in between leaves oldname as well).
 * Both folders must be on the same file system. */
int yyc__fs_rename_noreplace(int olddirfd, const char *oldname, int newdirfd, const char *newname);

/* Opens dirfd/name for reading without following a link. A missing file, a link or anything
 * but a regular file gives ENOENT. *out_size is the file's size. */
int yyc__fs_open_read(int dirfd, const char *name, int *out_fd, uint64_t *out_size);

/* yyc__fs_open_read of rootfd/dir/name resolved in one system call (Linux openat2): neither dir
 * nor name may be a link or leave rootfd, so the file is the one in the folder named dir at this
 * instant, however long a descriptor of that folder has been kept. Anything else in place of
 * either (missing, a link, a non-folder, not a regular file) gives ENOENT. ENOSYS when the
 * system cannot do it (no openat2, or a filter refuses it): use yyc__fs_open_read. */
int yyc__fs_open_read_in(int rootfd, const char *dir, const char *name, int *out_fd,
                         uint64_t *out_size);

/* Testing: whether yyc__fs_open_read_in may try openat2 (on: until it finds it missing) or
 * always gives ENOSYS (off). Process-wide. Returns whether it may try now. */
bool yyc__fs_set_openat2(bool on);

/* Reads exactly len bytes from fd (EINTR handled); a file shorter than len gives EIO. */
int yyc__fs_read_full(int fd, void *buf, size_t len);

/* Removes dirfd/name: a file or a link is unlinked, a folder is emptied recursively (links
 * inside are unlinked, never followed) and removed. A missing entry is success. */
int yyc__fs_remove_tree_at(int dirfd, const char *name);

/* Removes every entry inside the folder dirfd (the folder itself stays). Best effort: returns
 * the first error but keeps going. */
int yyc__fs_empty_dir(int dirfd);

/* Prefix of the temporary files yyc__fs_write_atomic creates (never a valid md5 name). A data
 * file name starting with it is reserved (yyc_kv_filename_is_valid refuses it): the sweeps
 * delete such files by name. */
#define YYC__FS_TEMP_PREFIX ".yyc-tmp-"

/* Removes the temporary files (YYC__FS_TEMP_PREFIX) in the folder dirfd that were last
 * modified more than max_age_seconds ago. Best effort. */
void yyc__fs_remove_stale_temps(int dirfd, long max_age_seconds);

/* Writes a random (version 4) UUID in canonical uppercase 8-4-4-4-12 form plus NUL. */
void yyc__fs_uuid(char out[37]);

#endif /* YYCACHE_FS_UTIL_H */
