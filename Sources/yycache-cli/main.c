/*
 * main.c - `yycache`, an inspector for YYCache disk cache folders.
 *
 * One function per subcommand, cmd_<name>(argc, argv) with argv[0] the subcommand's name, each
 * parsing its own options with getopt_long and returning the exit status (see cli.h).
 * Read-only commands (stats, ls, verify without --repair) go through manifest.c, which opens
 * manifest.sqlite read-only; get, set, rm, trim and clear go through the library
 * (yyc_diskcache_* for get and set, yyc_kv_* for the rest), so the semantics are the library's;
 * verify --repair and vacuum work under the library's folder lock (folder.c). Every command but
 * set first identifies the folder as a cache (cli_identify_cache), so that the library never
 * opens - and never rebuilds or clears - a folder that is not one.
 *
 * Testing only: with YYCACHE_TESTING_PAUSE_BEFORE_REPAIR=1 in the environment, verify --repair
 * stops between its scan and its repairs, says "yycache: testing: paused before repair" on
 * standard error and waits for a line on standard input (Tests/cli/test_cli.py uses it to change
 * the folder at that moment). It changes nothing else.
 */
#include "cli.h"

#include <yycache/yycache.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- help ---- */

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
    const char *help;
} command;

static const char general_help[] =
    "usage: yycache COMMAND PATH [ARGS] [OPTIONS]\n"
    "\n"
    "Inspects and maintains a YYCache disk cache folder (manifest.sqlite, data/, trash/),\n"
    "including folders written by YYKVStorage (Objective-C).\n"
    "\n"
    "Read-only commands (manifest.sqlite opened read-only; the folder is never changed):\n"
    "  stats PATH                  entries, sizes, inline/file split, access times, expired\n"
    "                              entries, manifest and WAL sizes\n"
    "  ls PATH                     list the entries (--limit N, --sort access|size|key, --json)\n"
    "  verify PATH                 check rows against data/ (with --repair it fixes them)\n"
    "Commands that change the folder (through the library, like DiskCache, or under the\n"
    "folder lock it takes around its changes):\n"
    "  get PATH KEY [-o FILE]      write a value's bytes (refreshes its access time)\n"
    "  set PATH KEY [FILE|-]       store a value read from FILE or standard input\n"
    "  rm PATH KEY...              remove keys\n"
    "  trim PATH [--expired] [--count N] [--size BYTES] [--age SECS]\n"
    "                              remove expired entries, evict least recently used ones\n"
    "  clear PATH                  remove every entry\n"
    "  vacuum PATH                 compact manifest.sqlite and empty its WAL\n"
    "\n"
    "Only 'set' creates a cache (in a missing or empty folder). Every other command first\n"
    "checks, read-only, that PATH is a cache (manifest.sqlite with YYKVStorage's table and\n"
    "index) and changes nothing otherwise.\n"
    "\n"
    "With --remote URL (stats, get, set, rm), PATH is a namespace on that Redis server\n"
    "(redis://[user[:password]@]host[:port][/db] or unix://[user[:password]@]/path.sock):\n"
    "the commands read and write the remote tier that caches with that namespace share.\n"
    "\n"
    "Options: --bytes (exact sizes), --json (stats, ls, verify, vacuum), -h/--help, --version.\n"
    "Put -- before a key that begins with '-'.\n"
    "\n"
    "Exit status: 0 success; 1 no (get: no such key; verify: problems left unrepaired);\n"
    "2 error (bad usage, no such folder, not a cache folder, I/O or library error).\n"
    "Errors go to standard error as 'yycache: PATH: REASON'.\n"
    "\n"
    "Run 'yycache help COMMAND' or 'yycache COMMAND --help' for a command's details.\n";

static const command *find_command(const char *name);

/* Prints "yycache CMD: <reason>" and a hint to standard error; returns EXIT_ERROR. */
static int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "yycache %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'yycache help %s'.\n", cmd);
    va_end(ap);
    return EXIT_ERROR;
}

static int print_command_help(const command *c) {
    printf("usage: yycache %s\n\n%s", c->usage, c->help);
    return EXIT_OK;
}

/* getopt_long over a subcommand's arguments; unknown options and missing arguments become a
 * usage error (returned as '?'); -h/--help prints the command's help (returned as 'h'). */
static int next_option(int argc, char **argv, const char *shortopts,
                       const struct option *longopts) {
    opterr = 0;
    int c = getopt_long(argc, argv, shortopts, longopts, NULL);
    if (c == '?' || c == ':') {
        const char *arg = argv[optind - 1];
        usage_error(argv[0], c == ':' ? "option '%s' needs a value" : "unknown option '%s'", arg);
        return '?';
    }
    if (c == 'h') print_command_help(find_command(argv[0]));
    return c;
}

/* ---- shared helpers ---- */

/* Reports a library failure: "yycache: PATH: WHAT: message (details)". */
static int library_error(const char *path, const char *what, int status) {
    yyc_error e;
    yyc_last_error(&e);
    if (e.code == status && e.message[0])
        cli_error(path, "%s: %s (%s)", what, yyc_strerror(status), e.message);
    else cli_error(path, "%s: %s", what, yyc_strerror(status));
    return EXIT_ERROR;
}

/* The library rebuilds a corrupt manifest on open and records YYC_ECORRUPT: say so. */
static void warn_if_rebuilt(const char *path) {
    yyc_error e;
    yyc_last_error(&e);
    if (e.code == YYC_ECORRUPT)
        cli_error(path, "warning: manifest.sqlite was corrupt: the library replaced it with an "
                        "empty one");
}

static bool open_kv(const char *path, yyc_kv **out) {
    if (!cli_identify_cache(path)) return false;
    int st = yyc_kv_open(path, YYC_KV_MIXED, out);
    if (st != YYC_OK) {
        library_error(path, "cannot open", st);
        return false;
    }
    warn_if_rebuilt(path);
    return true;
}

static bool open_disk_cache(const char *path, yyc_diskcache **out) {
    int st = yyc_diskcache_open(path, CLI_INLINE_THRESHOLD, out);
    if (st != YYC_OK) {
        library_error(path, "cannot open", st);
        return false;
    }
    warn_if_rebuilt(path);
    yyc_diskcache_set_auto_trim_interval(*out, 0); /* no background trims in a short-lived tool */
    return true;
}

static const char *entries(int64_t n) { return plural(n, "entry", "entries"); }

static void print_json_key_fields(FILE *out, const char *key, size_t len) {
    fputs("\"key\": ", out);
    if (!key) {
        fputs("null", out);
        return;
    }
    print_json_string(out, key, len);
    if (needs_hex(key, len)) {
        fputs(", \"key_hex\": ", out);
        print_json_hex(out, key, len);
    }
}

static void print_json_int_or_null(FILE *out, bool present, int64_t v) {
    if (present) fprintf(out, "%lld", (long long)v);
    else fputs("null", out);
}

/* Reads a whole stream into memory. Returns false with errno set on failure. */
static bool read_all(FILE *in, char **out, size_t *out_len) {
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    if (!buf) return false;
    for (;;) {
        if (len == cap) {
            char *n = realloc(buf, cap * 2);
            if (!n) {
                free(buf);
                return false;
            }
            buf = n;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, in);
        len += got;
        if (got == 0) break;
    }
    if (ferror(in)) {
        int err = errno;
        free(buf);
        errno = err ? err : EIO;
        return false;
    }
    *out = buf;
    *out_len = len;
    return true;
}

/* ---- the remote tier (--remote URL: PATH is then a namespace on that Redis) ---- */

/* The URL as messages show it: a password replaced by "***". */
static const char *shown_url(const char *url) {
    static char shown[512];
    const char *scheme = strstr(url, "://");
    const char *at = scheme ? strrchr(scheme, '@') : NULL;
    const char *colon = at ? memchr(scheme + 3, ':', (size_t)(at - scheme - 3)) : NULL;
    if (!colon) return url;
    snprintf(shown, sizeof shown, "%.*s:***%s", (int)(colon - url), url, at);
    return shown;
}

static bool open_remote(const char *url, const char *ns, yyc_remote **out) {
    int st = yyc_remote_open(url, ns, out);
    if (st != YYC_OK) {
        library_error(shown_url(url), "cannot reach Redis", st);
        return false;
    }
    return true;
}

/* Reports a corrupt value the remote found (a miss with YYC_ECORRUPT recorded). */
static void warn_if_corrupt(const char *url) {
    yyc_error e;
    yyc_last_error(&e);
    if (e.code == YYC_ECORRUPT)
        cli_error(shown_url(url), "warning: the value was not written by this library (%s)",
                  e.message);
}

static int remote_stats(const char *url, const char *ns, bool json) {
    yyc_remote *r;
    if (!open_remote(url, ns, &r)) return EXIT_ERROR;
    yyc_remote_statistics st;
    yyc_remote_get_statistics(r, &st);
    yyc_remote_close(r);
    if (json) {
        printf("{\"url\": ");
        print_json_string(stdout, shown_url(url), strlen(shown_url(url)));
        printf(", \"namespace\": ");
        print_json_string(stdout, ns, strlen(ns));
        printf(", \"reachable\": true, \"invalidation_up\": %s}\n",
               st.invalidation_up ? "true" : "false");
        return EXIT_OK;
    }
    printf("redis:          reachable (credentials accepted)\n");
    printf("namespace:      ");
    print_key(stdout, ns, strlen(ns), false);
    printf(" (keys \"");
    print_key(stdout, ns, strlen(ns), false);
    printf(":KEY\")\n");
    printf("invalidation:   %s\n", st.invalidation_up ? "up (CLIENT TRACKING BCAST accepted)"
                                                      : "down (CLIENT TRACKING refused?)");
    return EXIT_OK;
}

static int remote_get(const char *url, const char *ns, const char *key, const char *output) {
    yyc_remote *r;
    if (!open_remote(url, ns, &r)) return EXIT_ERROR;
    void *value = NULL;
    size_t len = 0;
    int st = yyc_remote_get(r, key, &value, &len);
    if (st == YYC_NOTFOUND) warn_if_corrupt(url);
    yyc_remote_close(r);
    if (st == YYC_NOTFOUND) {
        fprintf(stderr, "yycache: %s: no such key: ", ns);
        print_key(stderr, key, strlen(key), true);
        fputc('\n', stderr);
        return EXIT_NO;
    }
    if (st != YYC_OK) return library_error(shown_url(url), "cannot read the value", st);
    int status = EXIT_OK;
    FILE *out = output ? fopen(output, "wb") : stdout;
    bool ok = out && (len == 0 || fwrite(value, 1, len, out) == len);
    if (out) ok = (output ? fclose(out) == 0 : fflush(out) == 0) && ok;
    if (!ok) {
        cli_error(output ? output : "standard output", "%s", strerror(errno));
        status = EXIT_ERROR;
    }
    yyc_free(value);
    return status;
}

/* ---- stats ---- */

static int cmd_stats(int argc, char **argv) {
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"bytes", no_argument, NULL, 'b'},
        {"remote", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, exact = false;
    const char *remote = NULL;
    int c;
    while ((c = next_option(argc, argv, ":h", opts)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'b': exact = true; break;
        case 'r': remote = optarg; break;
        default: return c == 'h' ? EXIT_OK : EXIT_ERROR;
        }
    }
    if (argc - optind != 1) return usage_error(argv[0], "expected exactly one PATH");
    const char *path = argv[optind];
    if (remote) return remote_stats(remote, path, json);
    if (!cli_identify_cache(path)) return EXIT_ERROR;

    cli_stats s;
    if (!manifest_read_stats(path, &s)) return EXIT_ERROR;
    int root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        cli_error(path, "%s", strerror(errno));
        return EXIT_ERROR;
    }
    int64_t manifest = cli_file_size_at(root_fd, "manifest.sqlite");
    int64_t wal = cli_file_size_at(root_fd, "manifest.sqlite-wal");
    int64_t trash = cli_count_entries_at(root_fd, "trash");
    close(root_fd);

    if (json) {
        printf("{\"path\": ");
        print_json_string(stdout, path, strlen(path));
        printf(", \"count\": %lld, \"total_size\": %lld, \"inline_count\": %lld, "
               "\"inline_size\": %lld, \"file_count\": %lld, \"file_size\": %lld, ",
               (long long)s.count, (long long)s.total_size, (long long)s.inline_count,
               (long long)s.inline_size, (long long)s.file_count, (long long)s.file_size);
        printf("\"oldest_access\": ");
        print_json_int_or_null(stdout, s.has_access, s.oldest_access);
        printf(", \"newest_access\": ");
        print_json_int_or_null(stdout, s.has_access, s.newest_access);
        printf(", \"expired_count\": %lld", (long long)s.expired_count);
        printf(", \"manifest_size\": %lld, \"wal_size\": %lld, \"trash_entries\": %lld}\n",
               (long long)manifest, (long long)wal, (long long)trash);
        return EXIT_OK;
    }
    char b1[32], b2[32];
    printf("path:           ");
    print_key(stdout, path, strlen(path), false);
    printf("\nentries:        %lld\n", (long long)s.count);
    printf("expired:        %lld %s past %s time to live (the next read or trim removes %s)\n",
           (long long)s.expired_count, entries(s.expired_count),
           s.expired_count == 1 ? "its" : "their", s.expired_count == 1 ? "it" : "them");
    printf("total size:     %s\n", fmt_size(s.total_size, exact, b1));
    printf("  inline:       %lld %s, %s\n", (long long)s.inline_count, entries(s.inline_count),
           fmt_size(s.inline_size, exact, b1));
    printf("  in data/:     %lld %s, %s\n", (long long)s.file_count, entries(s.file_count),
           fmt_size(s.file_size, exact, b1));
    if (s.has_access) {
        printf("oldest access:  %s (%lld)\n", fmt_time(s.oldest_access, b1),
               (long long)s.oldest_access);
        printf("newest access:  %s (%lld)\n", fmt_time(s.newest_access, b1),
               (long long)s.newest_access);
    } else {
        printf("oldest access:  -\nnewest access:  -\n");
    }
    printf("manifest:       %s (manifest.sqlite)\n", fmt_size(manifest, exact, b1));
    printf("WAL:            %s (manifest.sqlite-wal%s)\n", fmt_size(wal, exact, b2),
           wal > 0 ? "; 'yycache vacuum' empties it" : "");
    printf("trash:          %lld %s waiting for deletion\n", (long long)trash, entries(trash));
    return EXIT_OK;
}

/* ---- ls ---- */

static int cmd_ls(int argc, char **argv) {
    static const struct option opts[] = {
        {"limit", required_argument, NULL, 'n'}, {"sort", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},        {"bytes", no_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    bool json = false, exact = false;
    int64_t limit = -1;
    cli_sort sort = SORT_KEY;
    int c;
    while ((c = next_option(argc, argv, ":hn:", opts)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'b': exact = true; break;
        case 'n':
            if (!parse_count(optarg, &limit))
                return usage_error(argv[0], "bad --limit '%s' (a count expected)", optarg);
            break;
        case 's':
            if (strcmp(optarg, "key") == 0) sort = SORT_KEY;
            else if (strcmp(optarg, "access") == 0) sort = SORT_ACCESS;
            else if (strcmp(optarg, "size") == 0) sort = SORT_SIZE;
            else return usage_error(argv[0], "bad --sort '%s' (access, size or key)", optarg);
            break;
        default: return c == 'h' ? EXIT_OK : EXIT_ERROR;
        }
    }
    if (argc - optind != 1) return usage_error(argv[0], "expected exactly one PATH");
    const char *path = argv[optind];
    if (!cli_identify_cache(path)) return EXIT_ERROR;

    cli_rows rows;
    if (!manifest_read_rows(path, sort, limit, &rows)) return EXIT_ERROR;
    int64_t now = now_ms();
    if (json) fputs("[", stdout);
    for (size_t i = 0; i < rows.count; i++) {
        const cli_row *r = &rows.items[i];
        if (json) {
            fputs(i ? ",\n {" : "\n {", stdout);
            print_json_key_fields(stdout, r->key, r->key_len);
            printf(", \"size\": %lld, \"storage\": \"%s\", \"filename\": ", (long long)r->size,
                   r->filename ? "file" : "inline");
            if (r->filename) print_json_string(stdout, r->filename, r->filename_len);
            else fputs("null", stdout);
            printf(", \"modification_time\": %lld, \"last_access_time\": %lld, "
                   "\"extended_data_size\": %lld, \"expiry_time_ms\": ",
                   (long long)r->modification_time, (long long)r->last_access_time,
                   (long long)r->extended_len);
            print_json_int_or_null(stdout, r->expiry_ms != 0, r->expiry_ms);
            printf(", \"expired\": %s}", r->expiry_ms && r->expiry_ms <= now ? "true" : "false");
        } else {
            char b1[32], b2[32], b3[32];
            const char *expiry = !r->expiry_ms         ? "never"
                                 : r->expiry_ms <= now ? "expired"
                                                       : fmt_time(r->expiry_ms / 1000, b3);
            printf("%10s  %s  %-19s  %-6s  ", fmt_size(r->size, exact, b1),
                   fmt_time(r->last_access_time, b2), expiry, r->filename ? "file" : "inline");
            if (r->key) print_key(stdout, r->key, r->key_len, false);
            else fputs("(null key)", stdout);
            fputc('\n', stdout);
        }
    }
    if (json) fputs(rows.count ? "\n]\n" : "]\n", stdout);
    cli_rows_free(&rows);
    return EXIT_OK;
}

/* ---- get ---- */

static int cmd_get(int argc, char **argv) {
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"remote", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL, *remote = NULL;
    int c;
    while ((c = next_option(argc, argv, ":ho:", opts)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'r': remote = optarg; break;
        default: return c == 'h' ? EXIT_OK : EXIT_ERROR;
        }
    }
    if (argc - optind != 2) return usage_error(argv[0], "expected PATH and KEY");
    const char *path = argv[optind], *key = argv[optind + 1];
    if (remote) return remote_get(remote, path, key, output);
    if (!cli_identify_cache(path)) return EXIT_ERROR;

    yyc_diskcache *dc;
    if (!open_disk_cache(path, &dc)) return EXIT_ERROR;
    void *value = NULL;
    size_t len = 0;
    int st = yyc_diskcache_get(dc, key, &value, &len);
    yyc_diskcache_release(dc);
    if (st == YYC_NOTFOUND) {
        fprintf(stderr, "yycache: %s: no such key: ", path);
        print_key(stderr, key, strlen(key), true);
        fputc('\n', stderr);
        return EXIT_NO;
    }
    if (st != YYC_OK) return library_error(path, "cannot read the value", st);

    int status = EXIT_OK;
    FILE *out = output ? fopen(output, "wb") : stdout;
    if (!out) {
        cli_error(output, "%s", strerror(errno));
        status = EXIT_ERROR;
    } else {
        bool ok = len == 0 || fwrite(value, 1, len, out) == len; /* value is NULL when empty */
        ok = (output ? fclose(out) == 0 : fflush(out) == 0) && ok;
        if (!ok) {
            cli_error(output ? output : "standard output", "%s", strerror(errno));
            status = EXIT_ERROR;
        }
    }
    yyc_free(value);
    return status;
}

/* ---- set ---- */

/* set may create a cache: a missing folder, or an existing empty one. Anything else must
 * already be a cache folder, so that a mistyped path never fills a random folder. */
static bool may_become_cache(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return errno == ENOENT;
    if (!S_ISDIR(st.st_mode)) return false;
    DIR *d = opendir(path);
    if (!d) return false;
    bool empty = true;
    struct dirent *e;
    while (empty && (e = readdir(d)) != NULL)
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    closedir(d);
    return empty;
}

static int cmd_set(int argc, char **argv) {
    static const struct option opts[] = {
        {"remote", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *remote = NULL;
    int c;
    while ((c = next_option(argc, argv, ":h", opts)) != -1) {
        if (c == 'r') remote = optarg;
        else return c == 'h' ? EXIT_OK : EXIT_ERROR;
    }
    if (argc - optind != 2 && argc - optind != 3)
        return usage_error(argv[0], "expected PATH, KEY and optionally FILE");
    const char *path = argv[optind], *key = argv[optind + 1];
    const char *input = argc - optind == 3 ? argv[optind + 2] : "-";
    if (key[0] == '\0') return usage_error(argv[0], "the key is empty");
    if (!remote && !may_become_cache(path) && !cli_identify_cache(path)) return EXIT_ERROR;

    bool from_stdin = strcmp(input, "-") == 0;
    FILE *in = from_stdin ? stdin : fopen(input, "rb");
    char *value = NULL;
    size_t len = 0;
    if (!in || !read_all(in, &value, &len)) {
        cli_error(from_stdin ? "standard input" : input, "%s", strerror(errno));
        if (in && !from_stdin) fclose(in);
        return EXIT_ERROR;
    }
    if (!from_stdin) fclose(in);

    yyc_diskcache *dc;
    yyc_remote *r;
    int status = EXIT_OK;
    if (remote) {
        if (!open_remote(remote, path, &r)) {
            status = EXIT_ERROR;
        } else {
            int st = yyc_remote_set(r, key, value, len, 0);
            if (st != YYC_OK)
                status = library_error(shown_url(remote), "cannot store the value", st);
            yyc_remote_close(r);
        }
    } else if (!open_disk_cache(path, &dc)) {
        status = EXIT_ERROR;
    } else {
        int st = yyc_diskcache_set(dc, key, value, len, NULL, 0);
        if (st != YYC_OK) status = library_error(path, "cannot store the value", st);
        yyc_diskcache_release(dc);
    }
    free(value);
    return status;
}

/* ---- rm ---- */

static int cmd_rm(int argc, char **argv) {
    static const struct option opts[] = {
        {"remote", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *remote = NULL;
    int c;
    while ((c = next_option(argc, argv, ":h", opts)) != -1) {
        if (c == 'r') remote = optarg;
        else return c == 'h' ? EXIT_OK : EXIT_ERROR;
    }
    if (argc - optind < 2) return usage_error(argv[0], "expected PATH and at least one KEY");
    const char *path = argv[optind];
    if (remote) {
        yyc_remote *r;
        if (!open_remote(remote, path, &r)) return EXIT_ERROR;
        int st = YYC_OK;
        for (int i = optind + 1; i < argc && st == YYC_OK; i++)
            if (argv[i][0]) st = yyc_remote_remove(r, argv[i]);
        yyc_remote_close(r);
        return st == YYC_OK ? EXIT_OK : library_error(shown_url(remote), "cannot remove", st);
    }

    yyc_kv *kv;
    if (!open_kv(path, &kv)) return EXIT_ERROR;
    int st =
        yyc_kv_remove_keys(kv, (const char *const *)&argv[optind + 1], (size_t)(argc - optind - 1));
    yyc_kv_close(kv);
    return st == YYC_OK ? EXIT_OK : library_error(path, "cannot remove", st);
}

/* ---- trim ---- */

static int cmd_trim(int argc, char **argv) {
    static const struct option opts[] = {
        {"count", required_argument, NULL, 'c'},
        {"size", required_argument, NULL, 's'},
        {"age", required_argument, NULL, 'a'},
        {"bytes", no_argument, NULL, 'b'},
        {"expired", no_argument, NULL, 'e'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int64_t count = -1, size = -1, age = -1;
    bool exact = false, expired = false;
    int c;
    while ((c = next_option(argc, argv, ":h", opts)) != -1) {
        switch (c) {
        case 'b': exact = true; break;
        case 'e': expired = true; break;
        case 'c':
            if (!parse_count(optarg, &count))
                return usage_error(argv[0], "bad --count '%s' (a count expected)", optarg);
            break;
        case 's':
            if (!parse_size(optarg, &size))
                return usage_error(argv[0], "bad --size '%s' (for example 500K, 10M, 2G)", optarg);
            break;
        case 'a':
            if (!parse_duration(optarg, &age))
                return usage_error(argv[0], "bad --age '%s' (seconds, or 30m, 12h, 7d)", optarg);
            break;
        default: return c == 'h' ? EXIT_OK : EXIT_ERROR;
        }
    }
    if (argc - optind != 1) return usage_error(argv[0], "expected exactly one PATH");
    if (count < 0 && size < 0 && age < 0 && !expired)
        return usage_error(argv[0], "give at least one of --expired, --count, --size, --age");
    const char *path = argv[optind];

    yyc_kv *kv;
    if (!open_kv(path, &kv)) return EXIT_ERROR;
    int64_t count_before = 0, size_before = 0, count_after = 0, size_after = 0;
    int st = yyc_kv_count(kv, &count_before);
    if (st == YYC_OK) st = yyc_kv_size(kv, &size_before);
    if (st == YYC_OK && expired) { /* first, as every trim of the library */
        yyc_diskcache *dc;
        if (!open_disk_cache(path, &dc)) {
            yyc_kv_close(kv);
            return EXIT_ERROR;
        }
        st = yyc_diskcache_trim_expired(dc);
        yyc_diskcache_release(dc);
    }
    /* The order of DiskCache's auto-trim: size, count, age. */
    if (st == YYC_OK && size >= 0) st = yyc_kv_remove_to_fit_size(kv, size);
    if (st == YYC_OK && count >= 0) st = yyc_kv_remove_to_fit_count(kv, count);
    if (st == YYC_OK && age >= 0) /* like DiskCache's trim to age: 0 removes everything */
        st = yyc_kv_remove_earlier_than(kv, age == 0 ? INT64_MAX : (int64_t)time(NULL) - age);
    if (st == YYC_OK) st = yyc_kv_count(kv, &count_after);
    if (st == YYC_OK) st = yyc_kv_size(kv, &size_after);
    yyc_kv_close(kv);
    if (st != YYC_OK) return library_error(path, "cannot trim", st);
    char b1[32], b2[32];
    printf("removed %lld %s (%s); %lld %s (%s) left\n", (long long)(count_before - count_after),
           entries(count_before - count_after), fmt_size(size_before - size_after, exact, b1),
           (long long)count_after, entries(count_after), fmt_size(size_after, exact, b2));
    return EXIT_OK;
}

/* ---- clear ---- */

static int cmd_clear(int argc, char **argv) {
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    if ((c = next_option(argc, argv, ":h", opts)) != -1) return c == 'h' ? EXIT_OK : EXIT_ERROR;
    if (argc - optind != 1) return usage_error(argv[0], "expected exactly one PATH");
    const char *path = argv[optind];

    yyc_kv *kv;
    if (!open_kv(path, &kv)) return EXIT_ERROR;
    int64_t count = 0;
    int st = yyc_kv_count(kv, &count);
    /* The synchronous remove-all: every file is gone when the command returns (the fast one
     * would leave data/ in trash/ for a background thread that dies with this process). */
    if (st == YYC_OK) st = yyc_kv_remove_all_progress(kv, NULL, NULL);
    yyc_kv_close(kv);
    if (st != YYC_OK) return library_error(path, "cannot clear", st);
    printf("removed %lld %s\n", (long long)count, entries(count));
    return EXIT_OK;
}

/* ---- verify ---- */

static const char *const problem_names[] = {
    [PROBLEM_DATA_NOT_FOLDER] = "data_not_a_folder", [PROBLEM_MISSING_FILE] = "missing_file",
    [PROBLEM_SIZE_MISMATCH] = "size_mismatch",       [PROBLEM_STRAY_FILE] = "stray_file",
    [PROBLEM_INVALID_FILENAME] = "invalid_filename",
};

static const char *const outcome_names[] = {
    [REPAIR_NONE] = NULL,
    [REPAIR_DELETED] = "deleted",
    [REPAIR_ROW_REMOVED] = "row_removed",
    [REPAIR_REPLACED] = "replaced",
    [REPAIR_RESOLVED] = "resolved",
    [REPAIR_NOT_FIXED] = "not_fixed",
};

/* Whether verify --repair changed something to fix the problem. */
static bool was_fixed(const cli_problem *p) {
    return p->outcome == REPAIR_DELETED || p->outcome == REPAIR_ROW_REMOVED ||
           p->outcome == REPAIR_REPLACED;
}

/* Whether the problem is still there: not repaired (read-only verify, or not fixed). */
static bool is_left(const cli_problem *p) { return !was_fixed(p) && p->outcome != REPAIR_RESOLVED; }

static void print_problem_json(const cli_problem *p) {
    printf("{\"kind\": \"%s\", ", problem_names[p->kind]);
    const cli_row *r = p->row;
    if (r) {
        print_json_key_fields(stdout, r->key, r->key_len);
        fputs(", \"filename\": ", stdout);
        if (r->filename) print_json_string(stdout, r->filename, r->filename_len);
        else fputs("null", stdout);
        printf(", \"size\": %lld", (long long)r->size);
        if (p->kind == PROBLEM_SIZE_MISMATCH)
            printf(", \"actual_size\": %lld", (long long)p->actual_size);
    } else if (p->stray_name) {
        fputs("\"filename\": ", stdout);
        print_json_string(stdout, p->stray_name, strlen(p->stray_name));
        printf(", \"is_dir\": %s, \"actual_size\": %lld", p->stray_is_dir ? "true" : "false",
               (long long)p->actual_size);
    } else {
        fputs("\"filename\": \"data\"", stdout);
    }
    printf(", \"fixed\": %s", was_fixed(p) ? "true" : "false");
    if (p->outcome != REPAIR_NONE) printf(", \"outcome\": \"%s\"", outcome_names[p->outcome]);
    if (p->reason) {
        fputs(p->outcome == REPAIR_NOT_FIXED ? ", \"error\": " : ", \"note\": ", stdout);
        print_json_string(stdout, p->reason, strlen(p->reason));
    }
    fputs("}", stdout);
}

static void print_problem_human(const cli_problem *p, bool exact) {
    char b[32];
    const cli_row *r = p->row;
    switch (p->kind) {
    case PROBLEM_DATA_NOT_FOLDER:
        printf("data/ is not a folder (a link or a file: not followed; its rows' files are "
               "missing)");
        break;
    case PROBLEM_STRAY_FILE:
        printf("stray %s: data/", p->stray_is_dir ? "folder" : "file");
        print_key(stdout, p->stray_name, strlen(p->stray_name), false);
        if (!p->stray_is_dir) printf(" (%s)", fmt_size(p->actual_size, exact, b));
        printf(" has no row");
        break;
    case PROBLEM_MISSING_FILE: printf("missing file: "); break;
    case PROBLEM_SIZE_MISMATCH: printf("size mismatch: "); break;
    case PROBLEM_INVALID_FILENAME: printf("invalid file name: "); break;
    }
    if (r) {
        if (r->key) print_key(stdout, r->key, r->key_len, true);
        else fputs("(null key)", stdout);
        if (r->filename) {
            printf(" -> data/");
            print_key(stdout, r->filename, r->filename_len, false);
        } else {
            printf(" (inline)");
        }
        if (p->kind == PROBLEM_SIZE_MISMATCH)
            printf(": the manifest says %lld %s, the %s has %lld", (long long)r->size,
                   plural(r->size, "byte", "bytes"), r->filename ? "file" : "inline data",
                   (long long)p->actual_size);
        else if (p->kind == PROBLEM_MISSING_FILE) printf(" (%s)", fmt_size(r->size, exact, b));
    }
    switch (p->outcome) {
    case REPAIR_NONE: printf("\n"); break;
    case REPAIR_DELETED: printf(": fixed (deleted)\n"); break;
    case REPAIR_ROW_REMOVED: printf(": fixed (row removed)\n"); break;
    case REPAIR_REPLACED: printf(": fixed (replaced by an empty folder)\n"); break;
    case REPAIR_RESOLVED: printf(": left alone (%s)\n", p->reason); break;
    case REPAIR_NOT_FIXED: printf(": NOT fixed (%s)\n", p->reason ? p->reason : "?"); break;
    }
}

/* The testing-only pause of verify --repair between its scan and its repairs (see the top of
 * this file). */
static void testing_pause_before_repair(void) {
    const char *v = getenv("YYCACHE_TESTING_PAUSE_BEFORE_REPAIR");
    if (!v || strcmp(v, "1") != 0) return;
    fputs("yycache: testing: paused before repair\n", stderr);
    fflush(stderr);
    int c;
    while ((c = getchar()) != EOF && c != '\n') {
    }
}

static int cmd_verify(int argc, char **argv) {
    static const struct option opts[] = {
        {"repair", no_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {"bytes", no_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool repair_mode = false, json = false, exact = false;
    int c;
    while ((c = next_option(argc, argv, ":h", opts)) != -1) {
        switch (c) {
        case 'r': repair_mode = true; break;
        case 'j': json = true; break;
        case 'b': exact = true; break;
        default: return c == 'h' ? EXIT_OK : EXIT_ERROR;
        }
    }
    if (argc - optind != 1) return usage_error(argv[0], "expected exactly one PATH");
    const char *path = argv[optind];
    if (!cli_identify_cache(path)) return EXIT_ERROR;

    cli_verify v;
    if (!verify_scan(path, &v)) return EXIT_ERROR;
    if (repair_mode && v.problem_count > 0) {
        testing_pause_before_repair();
        if (!repair_problems(path, &v)) {
            verify_free(&v);
            return EXIT_ERROR;
        }
    }
    size_t left = 0, fixed = 0;
    for (size_t i = 0; i < v.problem_count; i++) {
        left += is_left(&v.problems[i]);
        fixed += was_fixed(&v.problems[i]);
    }

    if (json) {
        printf("{\"path\": ");
        print_json_string(stdout, path, strlen(path));
        printf(", \"rows\": %zu, \"files\": %zu, \"recent_temp_files\": %zu, \"repair\": %s, "
               "\"ok\": %s, \"problems\": [",
               v.rows.count, v.files_checked, v.recent_temp_files, repair_mode ? "true" : "false",
               left == 0 ? "true" : "false");
        for (size_t i = 0; i < v.problem_count; i++) {
            fputs(i ? ",\n  " : "\n  ", stdout);
            print_problem_json(&v.problems[i]);
        }
        fputs(v.problem_count ? "\n]}\n" : "]}\n", stdout);
    } else {
        for (size_t i = 0; i < v.problem_count; i++) print_problem_human(&v.problems[i], exact);
        size_t n = v.problem_count, resolved = n - left - fixed;
        printf("%zu %s, %zu %s in data/: ", v.rows.count,
               plural((int64_t)v.rows.count, "row", "rows"), v.files_checked,
               entries((int64_t)v.files_checked));
        if (n == 0) printf("no problems\n");
        else if (repair_mode)
            printf("%zu %s: %zu fixed, %zu left alone (no longer a problem), %zu not fixed\n", n,
                   plural((int64_t)n, "problem", "problems"), fixed, resolved, left);
        else
            printf("%zu %s (run with --repair to fix %s)\n", n,
                   plural((int64_t)n, "problem", "problems"), n == 1 ? "it" : "them");
        if (v.recent_temp_files)
            printf("(%zu recent temporary %s skipped: %s in progress)\n", v.recent_temp_files,
                   plural((int64_t)v.recent_temp_files, "file", "files"),
                   v.recent_temp_files == 1 ? "a write" : "writes");
    }
    verify_free(&v);
    return left == 0 ? EXIT_OK : EXIT_NO;
}

/* ---- vacuum ---- */

static int cmd_vacuum(int argc, char **argv) {
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"bytes", no_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, exact = false;
    int c;
    while ((c = next_option(argc, argv, ":h", opts)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'b': exact = true; break;
        default: return c == 'h' ? EXIT_OK : EXIT_ERROR;
        }
    }
    if (argc - optind != 1) return usage_error(argv[0], "expected exactly one PATH");
    const char *path = argv[optind];
    if (!cli_identify_cache(path)) return EXIT_ERROR;

    cli_vacuum_sizes z;
    if (!vacuum_manifest(path, &z)) return EXIT_ERROR;
    if (json) {
        printf("{\"path\": ");
        print_json_string(stdout, path, strlen(path));
        printf(", \"manifest_size_before\": %lld, \"manifest_size_after\": %lld, "
               "\"wal_size_before\": %lld, \"wal_size_after\": %lld, \"wal_kept\": %s}\n",
               (long long)z.manifest_before, (long long)z.manifest_after, (long long)z.wal_before,
               (long long)z.wal_after, z.wal_kept ? "true" : "false");
        return EXIT_OK;
    }
    char b1[32], b2[32];
    printf("manifest.sqlite:      %s -> %s\n", fmt_size(z.manifest_before, exact, b1),
           fmt_size(z.manifest_after, exact, b2));
    printf("manifest.sqlite-wal:  %s -> %s\n", fmt_size(z.wal_before, exact, b1),
           fmt_size(z.wal_after, exact, b2));
    if (z.wal_kept)
        printf("(another process was reading: the rest of the WAL is emptied at a later "
               "checkpoint)\n");
    return EXIT_OK;
}

/* ---- help and dispatch ---- */

static int cmd_help(int argc, char **argv);

static const command commands[] = {
    {"stats", cmd_stats, "stats PATH [--json] [--bytes] [--remote URL]",
     "Prints the number of entries, their total size, the split between inline values (in\n"
     "manifest.sqlite) and files (in data/) by count and bytes, the oldest and newest access\n"
     "times, the sizes of manifest.sqlite and of its WAL (manifest.sqlite-wal: writes not yet\n"
     "copied into the manifest; 'yycache vacuum' empties it), the entries in trash/, and how\n"
     "many entries are past their time to live (the library's expiry column; the next read or\n"
     "trim removes them).\n"
     "\n"
     "Read-only: manifest.sqlite is opened with SQLITE_OPEN_READONLY, never through the\n"
     "library; nothing is written, rebuilt, trimmed or deleted (not even trash/).\n"
     "\n"
     "  --json    one JSON object: path, count, total_size, inline_count, inline_size,\n"
     "            file_count, file_size, oldest_access, newest_access (unix seconds or null),\n"
     "            expired_count, manifest_size, wal_size, trash_entries\n"
     "  --bytes   exact byte counts instead of 1.5 KiB\n"
     "  --remote URL  PATH is a namespace on the Redis server at URL: checks that the server\n"
     "            answers, accepts the credentials and the invalidation link (CLIENT\n"
     "            TRACKING) comes up\n"},
    {"ls", cmd_ls, "ls PATH [--limit N] [--sort access|size|key] [--json] [--bytes]",
     "Lists the entries, one per line: size, last access time, expiry (the time to live's end,\n"
     "'never', or 'expired': the next read or trim removes it), storage (inline or file), key.\n"
     "Keys are printed safely: control characters, backslashes and bytes that are not UTF-8\n"
     "appear as \\n, \\t, \\\\, \\xHH.\n"
     "\n"
     "Read-only: manifest.sqlite is opened with SQLITE_OPEN_READONLY; listing does not\n"
     "refresh access times and never changes the folder.\n"
     "\n"
     "  --sort key      by key, bytewise (the default)\n"
     "  --sort access   least recently used first: the order in which trims evict\n"
     "  --sort size     largest first\n"
     "  --limit N       at most N entries (after sorting)\n"
     "  --json          a JSON array of {key, size, storage (\"inline\" or \"file\"), filename\n"
     "                  (null when inline), modification_time, last_access_time,\n"
     "                  extended_data_size, expiry_time_ms (unix milliseconds or null),\n"
     "                  expired}. Strings are UTF-8; control characters are\n"
     "                  escaped; each byte of a key that is not valid UTF-8 is written as\n"
     "                  \\u00XX and the exact key is added as key_hex (lowercase hex).\n"
     "  --bytes         exact byte counts instead of 1.5 KiB\n"},
    {"get", cmd_get, "get PATH KEY [-o FILE] [--remote URL]",
     "Writes the value's raw bytes to standard output, or to FILE with -o/--output.\n"
     "Like any read through the library (DiskCache), this refreshes the entry's access time,\n"
     "and a row whose data file is missing is removed and reported as missing.\n"
     "\n"
     "An entry past its time to live has no value: it is removed and reported as missing.\n"
     "\n"
     "Exit status 1, with a message on standard error, when the key has no value (FILE is\n"
     "then not created).\n"
     "\n"
     "  --remote URL  read the value from the Redis server at URL, PATH being the namespace\n"
     "                (a value this library did not write is reported and is a miss)\n"},
    {"set", cmd_set, "set PATH KEY [FILE|-] [--remote URL]",
     "Stores the bytes of FILE (standard input when FILE is - or absent) under KEY, replacing\n"
     "any previous value, as DiskCache does: values up to 20480 bytes inline in\n"
     "manifest.sqlite, larger ones in data/<md5(KEY)>.\n"
     "\n"
     "PATH must be a cache folder, a missing folder or an empty folder (the last two become a\n"
     "new cache).\n"
     "\n"
     "  --remote URL  store the value in the Redis server at URL, PATH being the namespace\n"
     "                (caches on that namespace drop their near copies of KEY)\n"},
    {"rm", cmd_rm, "rm PATH KEY... [--remote URL]",
     "Removes each KEY (its row and its file) through the library. A key that has no value is\n"
     "not an error (exit status 0), as in the library.\n"
     "\n"
     "  --remote URL  remove the keys from the Redis server at URL, PATH being the namespace\n"},
    {"trim", cmd_trim, "trim PATH [--expired] [--count N] [--size BYTES] [--age SECS]",
     "Evicts entries through the library, least recently used first, in DiskCache's order:\n"
     "\n"
     "  --expired       first, the entries past their time to live\n"
     "  --size BYTES    until the total size is at most BYTES (suffixes: K, M, G, T and\n"
     "                  KiB... are powers of 1024; KB, MB, GB, TB powers of 1000; 1.5M works)\n"
     "  --count N       until at most N entries are left\n"
     "  --age SECS      remove entries not accessed in the last SECS seconds (suffixes s,\n"
     "                  m, h, d, w); 0 removes everything\n"
     "  --bytes         exact byte counts instead of 1.5 KiB\n"
     "\n"
     "Prints how many entries and bytes were removed and what is left.\n"},
    {"clear", cmd_clear, "clear PATH",
     "Removes every entry (rows and files) through the library, synchronously: when it\n"
     "returns, data/ holds no entry's file. Entries of data/ that no row names are left for\n"
     "'verify --repair'.\n"
     "\n"
     "Like get, rm and trim, it first checks read-only that PATH is a cache folder; a folder\n"
     "that is not one is left exactly as it is (exit status 2).\n"},
    {"vacuum", cmd_vacuum, "vacuum PATH [--json] [--bytes]",
     "Compacts manifest.sqlite (SQLite's VACUUM: the space of removed rows is given back to\n"
     "the file system) and empties its WAL (a truncating checkpoint), under the folder lock\n"
     "the library takes around its changes, so processes using the cache wait for it (up to\n"
     "their busy timeout) and lose nothing. Prints the sizes of manifest.sqlite and\n"
     "manifest.sqlite-wal before and after. Needs free space for a copy of the manifest.\n"
     "\n"
     "  --json    one JSON object: path, manifest_size_before, manifest_size_after,\n"
     "            wal_size_before, wal_size_after, wal_kept (another process's read kept part\n"
     "            of the WAL)\n"
     "  --bytes   exact byte counts instead of 1.5 KiB\n"},
    {"verify", cmd_verify, "verify PATH [--repair] [--json] [--bytes]",
     "Compares manifest.sqlite with data/ and reports:\n"
     "  data_not_a_folder a link or a file in place of data/ (never followed)\n"
     "  missing_file      a row whose file in data/ is absent (or not a regular file)\n"
     "  size_mismatch     the file's length, or the inline data's length, differs from the\n"
     "                    row's size\n"
     "  stray_file        an entry of data/ that no row names (library temporary files\n"
     "                    younger than 15 minutes are skipped: writes in progress)\n"
     "  invalid_filename  a row whose file name is not a single path component\n"
     "\n"
     "Without --repair it is read-only (manifest.sqlite opened with SQLITE_OPEN_READONLY;\n"
     "nothing changes; no link is followed). On a cache in use the report may include changes\n"
     "in progress.\n"
     "\n"
     "With --repair, each problem is fixed in its own hold of the folder lock the library\n"
     "takes around its changes, after checking it again there: a stray entry is deleted only\n"
     "if no row names it by then (and it is not a temporary file younger than 15 minutes); a\n"
     "row with a missing file or a size mismatch is removed (with a file of the wrong size)\n"
     "only if it is still the same row and still broken; data/ that is a link or a file is\n"
     "replaced by an empty folder (the link itself is removed, never what it points to).\n"
     "Everything happens inside data/ as it is under the lock, never through a link, so it is\n"
     "safe while programs use the cache. A problem that went away meanwhile is left alone.\n"
     "Invalid file names are only reported.\n"
     "\n"
     "  --json    one JSON object: path, rows, files, recent_temp_files, repair, ok, and\n"
     "            problems: [{kind, key, key_hex?, filename, size, actual_size?, is_dir?,\n"
     "            fixed, outcome? (deleted, row_removed, replaced, resolved, not_fixed),\n"
     "            note? or error?}]\n"
     "\n"
     "Exit status 0 when no problem is left (none found, or all fixed), 1 when problems are\n"
     "left, 2 on errors.\n"},
    {"help", cmd_help, "help [COMMAND]", "Prints the general help, or a command's help.\n"},
};

static const command *find_command(const char *name) {
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static int cmd_help(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        fputs(general_help, stdout);
        return EXIT_OK;
    }
    const command *c = find_command(argv[1]);
    if (!c) return usage_error("help", "unknown command '%s'", argv[1]);
    return print_command_help(c);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(general_help, stderr);
        return EXIT_ERROR;
    }
    const char *first = argv[1];
    if (strcmp(first, "-h") == 0 || strcmp(first, "--help") == 0) {
        fputs(general_help, stdout);
        return EXIT_OK;
    }
    if (strcmp(first, "-V") == 0 || strcmp(first, "--version") == 0) {
        printf("yycache %s\n", yyc_version());
        return EXIT_OK;
    }
    const command *c = find_command(first);
    if (!c) {
        fprintf(stderr, "yycache: unknown command '%s'\nTry 'yycache --help'.\n", first);
        return EXIT_ERROR;
    }
    return c->run(argc - 1, argv + 1);
}
