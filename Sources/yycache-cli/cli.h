/*
 * cli.h - declarations shared by the files of the `yycache` inspector (not library API).
 *
 *   main.c      argument parsing, help texts and one cmd_<name> function per subcommand
 *   manifest.c  read-only access to a cache folder: the cache check, stats, ls, verify's scan
 *   folder.c    the changes made outside the library, under its folder lock: verify --repair
 *               and vacuum
 *   output.c    formatting: sizes, times, plurals, keys for humans, JSON strings; parsing
 *
 * Exit statuses: EXIT_OK 0, EXIT_NO 1 (get: no such key; verify: problems left unrepaired),
 * EXIT_ERROR 2 (bad usage, unreadable or non-cache folder, library or I/O error).
 *
 * No command changes a folder it has not identified as a cache first (cli_identify_cache:
 * read-only, schema checked); only `set` may create a cache, and only in a missing or empty
 * folder. Nothing follows a symbolic link inside the folder.
 */
#ifndef YYCACHE_CLI_H
#define YYCACHE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { EXIT_OK = 0, EXIT_NO = 1, EXIT_ERROR = 2 };

/* The inline threshold of `set`: DiskCache's usual 20 KiB. */
#define CLI_INLINE_THRESHOLD 20480

/* ---- errors (output.c) ---- */

/* Prints "yycache: <path>: <formatted reason>\n" to stderr. */
void cli_error(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- formatting (output.c) ---- */

/* "512 B", "1.5 KiB", "20.0 MiB"; the exact number of bytes when exact is true. Returns buf. */
const char *fmt_size(int64_t bytes, bool exact, char buf[32]);

/* one when n is 1, else many: plural(n, "entry", "entries"). */
const char *plural(int64_t n, const char *one, const char *many);

/* Local time as "YYYY-MM-DD HH:MM:SS". Returns buf. */
const char *fmt_time(int64_t unix_seconds, char buf[32]);

/* Writes bytes for a terminal: printable ASCII and valid UTF-8 (except C1 controls) as they
 * are, backslash as \\, a double quote as \" when quoted, \n \r \t, anything else as \xHH.
 * With quoted, the result is surrounded by double quotes. */
void print_key(FILE *out, const char *bytes, size_t len, bool quoted);

/* Writes bytes as a JSON string (with the quotes). Valid UTF-8 passes through; '"', '\\' and
 * control characters are escaped; each byte of an invalid UTF-8 sequence becomes \u00XX (the
 * Latin-1 code point of that byte: lossy, so callers add a "..._hex" field, see needs_hex). */
void print_json_string(FILE *out, const char *bytes, size_t len);

/* Writes bytes as lowercase hex inside JSON quotes. */
void print_json_hex(FILE *out, const char *bytes, size_t len);

/* Whether bytes is not valid UTF-8 (so JSON output adds the exact bytes in hex). */
bool needs_hex(const char *bytes, size_t len);

/* ---- parsing (output.c) ---- */

/* A non-negative decimal integer. Returns false on anything else (empty, sign, junk, overflow). */
bool parse_count(const char *s, int64_t *out);

/* A size: a number with an optional suffix. K, M, G, T (also KiB ... TiB, k) are powers of
 * 1024; KB, MB, GB, TB are powers of 1000; B or no suffix is bytes. "1.5M" is accepted. */
bool parse_size(const char *s, int64_t *out);

/* A duration in seconds with an optional suffix s, m, h, d or w. */
bool parse_duration(const char *s, int64_t *out);

/* ---- read-only manifest access (manifest.c) ---- */

/* One manifest row as the inspector sees it. rowid identifies it for verify --repair. key may
 * be NULL (a NULL key column). filename is NULL for inline rows (NULL or empty column, as
 * YYKVStorage reads it). inline_len is the length in bytes of inline_data (0 when NULL). */
typedef struct cli_row {
    int64_t rowid;
    char *key;
    size_t key_len;
    char *filename;
    size_t filename_len;
    int64_t size;
    int64_t inline_len;
    int64_t modification_time;
    int64_t last_access_time;
    int64_t extended_len;
    int64_t expiry_ms; /* the library's yyc_expiry_ms column: unix ms; 0 when none (or no column) */
} cli_row;

typedef struct cli_rows {
    cli_row *items;
    size_t count;
} cli_rows;

void cli_rows_free(cli_rows *rows);

typedef enum cli_sort { SORT_KEY, SORT_ACCESS, SORT_SIZE } cli_sort;

typedef struct cli_stats {
    int64_t count, total_size;
    int64_t inline_count, inline_size;
    int64_t file_count, file_size;
    bool has_access; /* false when the manifest is empty */
    int64_t oldest_access, newest_access;
    int64_t expired_count; /* rows whose time to live has passed (0 without the column) */
} cli_stats;

/* Whether path is a cache folder, decided without changing anything: a folder (the path itself
 * may be a link to one) holding a regular file manifest.sqlite (not a link) that SQLite opens
 * read-only (SQLITE_OPEN_READONLY, immutable when no -wal exists, so no companion file is
 * created) and whose schema is YYKVStorage's: a table `manifest` with the columns key (the
 * primary key), filename, size, inline_data, modification_time, last_access_time and
 * extended_data (more columns are fine), and the index last_access_time_idx on it. A missing,
 * empty, foreign or unreadable manifest is not a cache. On failure prints why and returns
 * false. Only `set` may go on without it (into a missing or empty folder). */
bool cli_identify_cache(const char *path);

/* Size of the regular file root_fd/name (not following a link), 0 when it is missing or is not
 * a regular file. */
int64_t cli_file_size_at(int root_fd, const char *name);

/* Number of entries of the folder root_fd/name (not following a link), 0 when missing. */
int64_t cli_count_entries_at(int root_fd, const char *name);

/* Reads with a read-only connection; each prints its own error and returns false on failure.
 * limit < 0 means no limit. */
bool manifest_read_stats(const char *path, cli_stats *out);
bool manifest_read_rows(const char *path, cli_sort sort, int64_t limit, cli_rows *out);
/* Now in unix milliseconds (the clock of the library's expiry column). */
int64_t now_ms(void);

/* ---- verify's scan (manifest.c) ---- */

typedef enum cli_problem_kind {
    PROBLEM_DATA_NOT_FOLDER,  /* data/ is a link or a file: not followed, its rows are missing */
    PROBLEM_MISSING_FILE,     /* a row whose data/<filename> is absent (or not a regular file) */
    PROBLEM_SIZE_MISMATCH,    /* file length or inline length differs from the size column */
    PROBLEM_STRAY_FILE,       /* an entry of data/ that no row names */
    PROBLEM_INVALID_FILENAME, /* a row whose filename is not one path component: never touched */
} cli_problem_kind;

/* What verify --repair did about a problem (REPAIR_NONE: not attempted). */
typedef enum cli_outcome {
    REPAIR_NONE,
    REPAIR_DELETED,     /* the stray entry was deleted */
    REPAIR_ROW_REMOVED, /* the row was removed (and a file of the wrong size with it) */
    REPAIR_REPLACED,    /* data/ (a link or a file) was removed and made an empty folder */
    REPAIR_RESOLVED,    /* rechecked under the folder lock: no longer a problem, left alone */
    REPAIR_NOT_FIXED,   /* see reason */
} cli_outcome;

typedef struct cli_problem {
    cli_problem_kind kind;
    const cli_row *row; /* the row (NULL for a stray file and for data/) */
    char *stray_name;   /* the stray entry's name in data/ (NULL otherwise) */
    bool stray_is_dir;
    int64_t actual_size; /* size mismatch: the length found; stray: the file's length */
    cli_outcome outcome; /* set by verify --repair */
    const char *reason;  /* RESOLVED, NOT_FIXED: why (static text) */
} cli_problem;

typedef struct cli_verify {
    cli_rows rows;
    cli_problem *problems;
    size_t problem_count;
    size_t files_checked;     /* entries of data/ looked at */
    size_t recent_temp_files; /* .yyc-tmp-* files younger than the grace: writes in progress */
} cli_verify;

/* Compares the manifest (read-only) with data/, never following a link (data/ itself is opened
 * with O_NOFOLLOW; entries are looked at with AT_SYMLINK_NOFOLLOW). Prints its own error and
 * returns false on failure. Nothing is modified. Problems come in this order: data/, rows (by
 * key), stray entries (by name). */
bool verify_scan(const char *path, cli_verify *out);
void verify_free(cli_verify *v);

/* Name prefix and minimum age of the library's temporary files that verify reports as stray. */
#define CLI_TEMP_PREFIX ".yyc-tmp-"
/* The library sweeps temporary files older than 15 minutes when it opens a folder. */
#define CLI_TEMP_GRACE_SECONDS (15 * 60)

/* ---- changes under the folder lock (folder.c) ---- */

/* How long the folder lock and SQLite's busy handler wait for other processes: the library's
 * busy timeout (YYC__KV_BUSY_TIMEOUT_MS). */
#define CLI_LOCK_TIMEOUT_MS 5000

/* verify --repair: fixes v's problems one by one, each in its own hold of the folder lock (the
 * library's flock on the folder), rechecking it there against the live manifest and the
 * current data/ (opened O_DIRECTORY|O_NOFOLLOW under the lock; every file operation is an
 * *at() call relative to it, never following a link): a stray entry is deleted only if no row
 * names it and it is not a temporary file younger than CLI_TEMP_GRACE_SECONDS; a row is removed
 * (by rowid, in one write transaction that reads it again) only if it is unchanged and still
 * broken. Sets each problem's outcome. Returns false (error printed) when the folder cannot be
 * opened at all; a problem that cannot be fixed is only marked REPAIR_NOT_FIXED. */
bool repair_problems(const char *path, cli_verify *v);

/* The sizes vacuum reports. */
typedef struct cli_vacuum_sizes {
    int64_t manifest_before, wal_before, manifest_after, wal_after;
    bool wal_kept; /* another connection kept the checkpoint from emptying the WAL */
} cli_vacuum_sizes;

/* vacuum: VACUUM of the manifest and a truncating WAL checkpoint, under the folder lock.
 * The caller has identified path as a cache. Returns false (error printed) on failure. */
bool vacuum_manifest(const char *path, cli_vacuum_sizes *out);

#endif /* YYCACHE_CLI_H */
