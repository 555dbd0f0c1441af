/*
 * cli.h - declarations shared by the files of the `yycache` inspector (not library API).
 *
 *   main.c      argument parsing, help texts and one cmd_<name> function per subcommand
 *   manifest.c  read-only access to manifest.sqlite (stats, ls, verify's scan)
 *   output.c    formatting: sizes, times, keys for humans, JSON strings; parsing of sizes
 *
 * Exit statuses: EXIT_OK 0, EXIT_NO 1 (get: no such key; verify: problems left unrepaired),
 * EXIT_ERROR 2 (bad usage, unreadable or non-cache folder, library or I/O error).
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

/* One manifest row as the inspector sees it. key may be NULL (a NULL key column). filename is
 * NULL for inline rows (NULL or empty column, as YYKVStorage reads it). inline_len is the
 * length in bytes of inline_data (0 when NULL). */
typedef struct cli_row {
    char *key;
    size_t key_len;
    char *filename;
    size_t filename_len;
    int64_t size;
    int64_t inline_len;
    int64_t modification_time;
    int64_t last_access_time;
    int64_t extended_len;
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
} cli_stats;

/* Checks that path is a cache folder (a folder holding manifest.sqlite). On failure prints the
 * error and returns false. */
bool cli_check_cache_folder(const char *path);

/* Reads with a read-only connection; each prints its own error and returns false on failure.
 * limit < 0 means no limit. */
bool manifest_read_stats(const char *path, cli_stats *out);
bool manifest_read_rows(const char *path, cli_sort sort, int64_t limit, cli_rows *out);

/* ---- verify's scan (manifest.c) ---- */

typedef enum cli_problem_kind {
    PROBLEM_MISSING_FILE,     /* a row whose data/<filename> is absent (or not a regular file) */
    PROBLEM_SIZE_MISMATCH,    /* file length or inline length differs from the size column */
    PROBLEM_STRAY_FILE,       /* an entry of data/ that no row names */
    PROBLEM_INVALID_FILENAME, /* a row whose filename is not one path component: never touched */
} cli_problem_kind;

typedef struct cli_problem {
    cli_problem_kind kind;
    const cli_row *row; /* the row (NULL for a stray file) */
    char *stray_name;   /* the stray entry's name in data/ (NULL otherwise) */
    bool stray_is_dir;
    int64_t actual_size; /* size mismatch: the length found; stray: the file's length */
    bool fixed;          /* set by verify --repair */
    const char *not_fixed_reason;
} cli_problem;

typedef struct cli_verify {
    cli_rows rows;
    cli_problem *problems;
    size_t problem_count;
    size_t files_checked;     /* entries of data/ looked at */
    size_t recent_temp_files; /* .yyc-tmp-* files younger than the grace: writes in progress */
} cli_verify;

/* Compares the manifest (read-only) with data/. Prints its own error and returns false on
 * failure. Nothing is modified. */
bool verify_scan(const char *path, cli_verify *out);
void verify_free(cli_verify *v);

/* Name prefix and minimum age of the library's temporary files that verify reports as stray. */
#define CLI_TEMP_PREFIX ".yyc-tmp-"
/* The library sweeps temporary files older than 15 minutes when it opens a folder. */
#define CLI_TEMP_GRACE_SECONDS (15 * 60)

#endif /* YYCACHE_CLI_H */
