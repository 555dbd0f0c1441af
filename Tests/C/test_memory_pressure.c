/* test_memory_pressure.c - the system memory-pressure watcher, end to end: a pressure source
 * the test controls ($MEMORY_PRESSURE_WATCH naming a FIFO or an AF_UNIX socket the test writes
 * to), real caches, the real watcher thread, fork(). Each case sets the variables before its
 * first opt-in (the watcher reads them when it starts) and ends with no cache opted in. */
#include "test_support.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "platform/internal.h"
#include "memory/memory_pressure.h"

#include "tsan_fork_children.h"

/* Generous bounds for waits on the watcher's thread (never reached when the code works). */
#define WAIT_SECONDS 30.0

/* A FIFO in a fresh folder, named by $MEMORY_PRESSURE_WATCH. */
typedef struct fifo_source {
    char *dir;
    char path[4096];
    int writer;
} fifo_source;

static void fifo_source_open(fifo_source *f, const char *tag) {
    f->dir = test_temp_dir(tag);
    snprintf(f->path, sizeof f->path, "%s/pressure.fifo", f->dir);
    assert_int_equal(mkfifo(f->path, 0600), 0);
    f->writer = open(f->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    assert_true(f->writer >= 0);
    assert_int_equal(setenv("MEMORY_PRESSURE_WATCH", f->path, 1), 0);
    unsetenv("MEMORY_PRESSURE_WRITE");
}

/* One pressure event: writes to the FIFO, waits until the watcher has handled every cache. */
static void fifo_source_signal(fifo_source *f) {
    unsigned long before = yyc__memory_pressure_testing_events();
    assert_int_equal(write(f->writer, "x", 1), 1);
    assert_true(yyc__memory_pressure_testing_wait_events(before + 1, WAIT_SECONDS));
}

static void fifo_source_close(fifo_source *f) {
    close(f->writer);
    test_rm_rf(f->dir);
    free(f->dir);
    unsetenv("MEMORY_PRESSURE_WATCH");
}

static yyc_memcache *filled_cache(int entries) {
    yyc_memcache *c = NULL;
    assert_int_equal(yyc_memcache_new(NULL, &c), YYC_OK);
    yyc_memcache_set_release_asynchronously(c, false);
    for (int i = 0; i < entries; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(yyc_memcache_set(c, key, strlen(key), NULL, 1), YYC_OK);
    }
    return c;
}

static atomic_int warnings;
static void count_warning(yyc_memcache *c, void *ctx) {
    (void)c;
    (void)ctx;
    atomic_fetch_add(&warnings, 1);
}

/* --- cases --- */

static void pressure_watcher_is_not_started_without_an_opt_in(void **state) {
    (void)state;
    fifo_source f;
    fifo_source_open(&f, "mp-none");
    yyc_memcache *c = filled_cache(3);
    assert_false(yyc_memcache_responds_to_system_memory_pressure(c));
    assert_int_equal(yyc__memory_pressure_testing_threads(), 0);
    assert_int_equal(yyc_memory_pressure_watcher_source(), YYC_MEMORY_PRESSURE_NONE);
    /* Nothing reads the FIFO: the byte stays there, the cache keeps its entries. */
    assert_int_equal(write(f.writer, "x", 1), 1);
    char byte;
    int reader = open(f.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    assert_int_equal(read(reader, &byte, 1), 1);
    close(reader);
    assert_int_equal(yyc_memcache_total_count(c), 3);
    yyc_memcache_free(c);
    assert_int_equal(yyc__memory_pressure_testing_threads(), 0);
    fifo_source_close(&f);
}

static void pressure_empties_opted_in_caches_and_leaves_the_others(void **state) {
    (void)state;
    fifo_source f;
    fifo_source_open(&f, "mp-fifo");
    yyc_memcache *in = filled_cache(5), *out = filled_cache(5), *kept = filled_cache(5);
    atomic_store(&warnings, 0);
    yyc_memcache_set_memory_warning_handler(in, count_warning, NULL);
    yyc_memcache_set_memory_warning_handler(kept, count_warning, NULL);
    yyc_memcache_set_remove_all_on_memory_warning(kept, false); /* its flag says no */
    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(in, true), YYC_OK);
    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(in, true), YYC_OK);
    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(kept, true), YYC_OK);
    assert_true(yyc_memcache_responds_to_system_memory_pressure(in));
    assert_false(yyc_memcache_responds_to_system_memory_pressure(out));
    assert_int_equal(yyc_memory_pressure_watcher_source(), YYC_MEMORY_PRESSURE_SERVICE_MANAGER);
    assert_int_equal(yyc__memory_pressure_testing_threads(), 1);

    fifo_source_signal(&f);
    assert_int_equal(yyc_memcache_total_count(in), 0);
    assert_int_equal(yyc_memcache_total_count(kept), 5);
    assert_int_equal(yyc_memcache_total_count(out), 5);
    assert_int_equal(atomic_load(&warnings), 2); /* once each, opted in twice or not */

    /* Several writes before the watcher wakes are at least one event, each a full pass. */
    assert_int_equal(yyc_memcache_set(in, "again", 5, NULL, 1), YYC_OK);
    fifo_source_signal(&f);
    assert_int_equal(yyc_memcache_total_count(in), 0);

    yyc_memcache_free(in);
    yyc_memcache_free(kept);
    assert_true(yyc__memory_pressure_testing_wait_threads(0, WAIT_SECONDS));
    assert_int_equal(yyc_memcache_total_count(out), 5);
    yyc_memcache_free(out);
    fifo_source_close(&f);
}

static void opting_out_stops_the_handling_and_the_last_opt_out_the_watcher(void **state) {
    (void)state;
    fifo_source f;
    fifo_source_open(&f, "mp-out");
    yyc_memcache *a = filled_cache(4), *b = filled_cache(4);
    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(a, true), YYC_OK);
    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(b, true), YYC_OK);
    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(a, false), YYC_OK);
    assert_false(yyc_memcache_responds_to_system_memory_pressure(a));
    fifo_source_signal(&f);
    assert_int_equal(yyc_memcache_total_count(a), 4);
    assert_int_equal(yyc_memcache_total_count(b), 0);

    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(b, false), YYC_OK);
    assert_true(yyc__memory_pressure_testing_wait_threads(0, WAIT_SECONDS));
    assert_int_equal(yyc_memory_pressure_watcher_source(), YYC_MEMORY_PRESSURE_NONE);

    /* Back in: a new watcher, which reads the variables again. */
    assert_int_equal(yyc_memcache_set(b, "k", 1, NULL, 1), YYC_OK);
    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(b, true), YYC_OK);
    assert_int_equal(yyc__memory_pressure_testing_threads(), 1);
    fifo_source_signal(&f);
    assert_int_equal(yyc_memcache_total_count(b), 0);
    assert_int_equal(yyc_memcache_total_count(a), 4);
    yyc_memcache_free(b); /* the last opted-in cache: freeing it ends the watcher */
    assert_true(yyc__memory_pressure_testing_wait_threads(0, WAIT_SECONDS));
    yyc_memcache_free(a);
    fifo_source_close(&f);
}

/* A handler that frees its own cache, on the watcher's thread (the free is deferred to the end
 * of the handling), and so ends the watcher from inside it. */
static void free_in_handler(yyc_memcache *c, void *ctx) {
    (void)ctx;
    yyc_memcache_free(c);
}

static atomic_int freed;
static void note_freed(void *ctx) {
    (void)ctx;
    atomic_fetch_add(&freed, 1);
}

static void a_handler_may_free_its_cache_on_the_watcher_thread(void **state) {
    (void)state;
    fifo_source f;
    fifo_source_open(&f, "mp-selffree");
    yyc_memcache *c = filled_cache(8);
    atomic_store(&freed, 0);
    yyc_memcache_set_free_handler(c, note_freed, NULL);
    yyc_memcache_set_memory_warning_handler(c, free_in_handler, NULL);
    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(c, true), YYC_OK);
    fifo_source_signal(&f);
    assert_int_equal(atomic_load(&freed), 1);
    assert_true(yyc__memory_pressure_testing_wait_threads(0, WAIT_SECONDS));
    fifo_source_close(&f);
}

/* Freeing a cache while the watcher runs its handler: the free waits for the handling, so the
 * handler (and the remove-all after it) never touch freed memory. */
typedef struct handler_gate {
    atomic_bool entered;
    atomic_bool freeing; /* the main thread is about to call yyc_memcache_free */
    atomic_bool freed_while_inside;
} handler_gate;

static handler_gate gate_state;

static void slow_handler(yyc_memcache *c, void *ctx) {
    (void)c;
    (void)ctx;
    atomic_store(&gate_state.entered, true);
    while (!atomic_load(&gate_state.freeing)) usleep(1000);
    /* Give a free that does not wait every chance to finish first. */
    if (WAIT_UNTIL(atomic_load(&freed) != 0, 1.0))
        atomic_store(&gate_state.freed_while_inside, true);
}

static void freeing_a_cache_waits_for_its_pressure_handling(void **state) {
    (void)state;
    fifo_source f;
    fifo_source_open(&f, "mp-freewait");
    yyc_memcache *c = filled_cache(8);
    atomic_store(&freed, 0);
    gate_state = (handler_gate){0};
    yyc_memcache_set_free_handler(c, note_freed, NULL);
    yyc_memcache_set_memory_warning_handler(c, slow_handler, NULL);
    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(c, true), YYC_OK);
    assert_int_equal(write(f.writer, "x", 1), 1);
    assert_true(WAIT_UNTIL(atomic_load(&gate_state.entered), WAIT_SECONDS));
    atomic_store(&gate_state.freeing, true);
    yyc_memcache_free(c);
    assert_int_equal(atomic_load(&freed), 1);
    assert_false(atomic_load(&gate_state.freed_while_inside));
    assert_true(yyc__memory_pressure_testing_wait_threads(0, WAIT_SECONDS));
    fifo_source_close(&f);
}

/* The service manager's socket: the watcher connects, sends the decoded $MEMORY_PRESSURE_WRITE,
 * and treats what the server sends as events; the server hanging up ends the watcher. */
/* An AF_UNIX stream socket <dir>/pressure.sock listening with `backlog`; *addr its address. */
static int listening_socket(const char *dir, int backlog, struct sockaddr_un *addr) {
    *addr = (struct sockaddr_un){.sun_family = AF_UNIX};
    snprintf(addr->sun_path, sizeof addr->sun_path, "%s/pressure.sock", dir);
    int server = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(server >= 0);
    assert_int_equal(bind(server, (struct sockaddr *)addr, sizeof *addr), 0);
    assert_int_equal(listen(server, backlog), 0);
    return server;
}

static void a_socket_source_gets_the_decoded_trigger_and_its_messages_are_events(void **state) {
    (void)state;
    char *dir = test_temp_dir("mp-sock");
    struct sockaddr_un addr;
    int server = listening_socket(dir, 1, &addr);
    assert_int_equal(setenv("MEMORY_PRESSURE_WATCH", addr.sun_path, 1), 0);
    /* base64 of "some 150000 2000000" and its NUL */
    assert_int_equal(setenv("MEMORY_PRESSURE_WRITE", "c29tZSAxNTAwMDAgMjAwMDAwMAA=", 1), 0);

    yyc_memcache *c = filled_cache(3);
    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(c, true), YYC_OK);
    assert_int_equal(yyc_memory_pressure_watcher_source(), YYC_MEMORY_PRESSURE_SERVICE_MANAGER);
    int conn = accept(server, NULL, NULL);
    assert_true(conn >= 0);
    char got[64] = {0};
    size_t want = sizeof "some 150000 2000000", have = 0;
    while (have < want) {
        ssize_t n = read(conn, got + have, want - have);
        assert_true(n > 0);
        have += (size_t)n;
    }
    assert_memory_equal(got, "some 150000 2000000", want);

    unsigned long before = yyc__memory_pressure_testing_events();
    assert_int_equal(write(conn, "pressure", 8), 8);
    assert_true(yyc__memory_pressure_testing_wait_events(before + 1, WAIT_SECONDS));
    assert_int_equal(yyc_memcache_total_count(c), 0);

    close(conn); /* the source goes away: the watcher ends, the cache stays opted in */
    assert_true(yyc__memory_pressure_testing_wait_threads(0, WAIT_SECONDS));
    assert_true(yyc_memcache_responds_to_system_memory_pressure(c));
    assert_int_equal(yyc_memory_pressure_watcher_source(), YYC_MEMORY_PRESSURE_NONE);
    yyc_memcache_free(c);
    close(server);
    unsetenv("MEMORY_PRESSURE_WATCH");
    unsetenv("MEMORY_PRESSURE_WRITE");
    test_rm_rf(dir);
    free(dir);
}

/* --- an opt-in blocked in connect() --- */

typedef struct opt_in {
    yyc_memcache *cache;
    atomic_long tid;
    atomic_bool done;
} opt_in;

static void *opt_in_thread(void *arg) {
    opt_in *o = arg;
    atomic_store(&o->tid, (long)syscall(SYS_gettid));
    yyc_memcache_set_responds_to_system_memory_pressure(o->cache, true);
    atomic_store(&o->done, true);
    return NULL;
}

/* Whether thread tid of this process is inside connect() now. */
static bool in_connect(long tid) {
    char path[64], buf[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", tid);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    bool got = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    return got && atol(buf) == SYS_connect;
}

typedef struct freer {
    yyc_memcache *cache;
    atomic_bool done;
} freer;

static void *free_thread(void *arg) {
    freer *f = arg;
    yyc_memcache_free(f->cache);
    atomic_store(&f->done, true);
    return NULL;
}

/* A socket source whose backlog is full blocks the opt-in's connect(); meanwhile another cache
 * is freed (every free passes through the watcher's registry): it must not wait for that
 * connect (the source used to be opened under the registry's mutex). */
static void an_opt_in_blocked_in_connect_does_not_hold_up_a_free(void **state) {
    (void)state;
    char *dir = test_temp_dir("mp-full");
    struct sockaddr_un addr;
    int server = listening_socket(dir, 0, &addr);
    int fillers[64], nfill = 0; /* connections nobody accepts, until the backlog is full */
    for (; nfill < 64; nfill++) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        assert_true(fd >= 0);
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
            assert_int_equal(errno, EAGAIN);
            close(fd);
            break;
        }
        fillers[nfill] = fd;
    }
    assert_true(nfill < 64);
    assert_int_equal(setenv("MEMORY_PRESSURE_WATCH", addr.sun_path, 1), 0);
    unsetenv("MEMORY_PRESSURE_WRITE");

    opt_in o = {.cache = filled_cache(1)};
    pthread_t opener;
    assert_int_equal(pthread_create(&opener, NULL, opt_in_thread, &o), 0);
    assert_true(
        WAIT_UNTIL(atomic_load(&o.tid) != 0 && in_connect(atomic_load(&o.tid)), WAIT_SECONDS));
    freer f = {.cache = filled_cache(1)};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, free_thread, &f), 0);
    bool freed = WAIT_UNTIL(atomic_load(&f.done), WAIT_SECONDS);
    assert_false(atomic_load(&o.done)); /* the opt-in still waits in connect() */

    /* Let the connect through: accept everything queued (the fillers and the opt-in). */
    for (int i = 0; i < nfill + 1; i++) {
        int conn = accept(server, NULL, NULL);
        assert_true(conn >= 0);
        close(conn);
    }
    pthread_join(opener, NULL);
    pthread_join(t, NULL);
    assert_true(freed);
    yyc_memcache_free(o.cache);
    assert_true(yyc__memory_pressure_testing_wait_threads(0, WAIT_SECONDS));
    for (int i = 0; i < nfill; i++) close(fillers[i]);
    close(server);
    unsetenv("MEMORY_PRESSURE_WATCH");
    test_rm_rf(dir);
    free(dir);
}

/* Variables that disable the watcher or name nothing usable: no thread, no fallback, and the
 * opt-in still succeeds and is remembered. */
static void unusable_or_disabling_variables_leave_no_watcher(void **state) {
    (void)state;
    char *dir = test_temp_dir("mp-bad");
    char fifo[4096], plain[4096];
    snprintf(fifo, sizeof fifo, "%s/pressure.fifo", dir);
    snprintf(plain, sizeof plain, "%s/plain-file", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    FILE *p = fopen(plain, "w");
    assert_non_null(p);
    fclose(p);
    struct {
        const char *watch, *write;
    } cases[] = {
        {"/dev/null", NULL},     /* systemd: explicitly disabled */
        {"", NULL},              /* likewise */
        {"relative/path", NULL}, /* not absolute */
        {dir, NULL},             /* a folder */
        {plain, NULL},           /* a regular file that is not a PSI file */
        {"/nonexistent/pressure", NULL},
        {fifo, "not base64!"}, /* an invalid write value */
        {fifo, "QQ=Q"},        /* padding inside */
        /* A trigger the kernel refuses (or no PSI at all): no fallback to another source. */
        {"/proc/pressure/memory", "Ym9ndXMA"}, /* "bogus\0" */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(setenv("MEMORY_PRESSURE_WATCH", cases[i].watch, 1), 0);
        if (cases[i].write) assert_int_equal(setenv("MEMORY_PRESSURE_WRITE", cases[i].write, 1), 0);
        else unsetenv("MEMORY_PRESSURE_WRITE");
        yyc_memcache *c = filled_cache(2);
        assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(c, true), YYC_OK);
        assert_true(yyc_memcache_responds_to_system_memory_pressure(c));
        if (yyc_memory_pressure_watcher_source() != YYC_MEMORY_PRESSURE_NONE)
            fail_msg("case %zu (%s): a watcher started", i, cases[i].watch);
        assert_int_equal(yyc__memory_pressure_testing_threads(), 0);
        yyc_memcache_free(c);
    }
    unsetenv("MEMORY_PRESSURE_WATCH");
    unsetenv("MEMORY_PRESSURE_WRITE");
    test_rm_rf(dir);
    free(dir);
}

/* Without the variables: the cgroup's or the system's PSI file with a trigger unprivileged
 * processes may create. Skipped where the kernel has no PSI. */
static void without_variables_the_kernel_psi_file_is_watched(void **state) {
    (void)state;
    if (access("/proc/pressure/memory", R_OK) != 0) skip();
    unsetenv("MEMORY_PRESSURE_WATCH");
    unsetenv("MEMORY_PRESSURE_WRITE");
    yyc_memcache *c = filled_cache(2);
    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(c, true), YYC_OK);
    yyc_memory_pressure_source source = yyc_memory_pressure_watcher_source();
    assert_true(source == YYC_MEMORY_PRESSURE_CGROUP || source == YYC_MEMORY_PRESSURE_SYSTEM);
    assert_int_equal(yyc__memory_pressure_testing_threads(), 1);
    yyc_memcache_free(c);
    assert_true(yyc__memory_pressure_testing_wait_threads(0, WAIT_SECONDS));
}

/* fork(): the child has neither the parent's watcher nor its opted-in caches; its own opt-in
 * starts its own watcher on its own source. The parent's watcher keeps working. */
static void a_fork_child_starts_its_own_watcher_and_never_handles_the_parents_caches(void **state) {
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    /* Not under ASan: there the child, which starts threads of its own (its watcher, a worker),
     * saw no event within 30 s in 2 of 5 clean-clone runs on 2026-12-01 (one on a loaded
     * machine), also with every worker queue idle at the fork; gcc 12's ASan runtime is not
     * fork-safe for a child that starts threads (see test_fork.c). The plain and TSan runs keep
     * this case. */
    skip();
#endif
    fifo_source f;
    fifo_source_open(&f, "mp-fork");
    yyc_memcache *parent_cache = filled_cache(6);
    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(parent_cache, true),
                     YYC_OK);
    assert_int_equal(yyc__memory_pressure_testing_threads(), 1);
    char child_fifo[4096];
    snprintf(child_fifo, sizeof child_fifo, "%s/child.fifo", f.dir);
    assert_int_equal(mkfifo(child_fifo, 0600), 0);
    /* No worker thread of ours is inside the allocator at the fork (a release job frees a
     * value): AddressSanitizer's allocator has no fork handlers, and under it a child once saw
     * no event in 30 s (on a loaded machine; a fork inside a worker's free is the likely
     * cause, as in test_checkpoints' fork test). */
    yyc__worker_wait_idle(YYC__QUEUE_MEMORY);
    yyc__worker_wait_idle(YYC__QUEUE_DISK);
    yyc__worker_wait_idle(YYC__QUEUE_DEADLINE);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(60); /* a deadlock ends the child with SIGALRM */
        int code = 0;
        if (yyc__memory_pressure_testing_threads() != 0) code = 10;
        else if (yyc_memory_pressure_watcher_source() != YYC_MEMORY_PRESSURE_NONE) code = 11;
        else if (yyc_memcache_responds_to_system_memory_pressure(parent_cache)) code = 12;
        if (code) _exit(code);
        setenv("MEMORY_PRESSURE_WATCH", child_fifo, 1);
        int writer = open(child_fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        yyc_memcache *mine = NULL;
        if (writer < 0 || yyc_memcache_new(NULL, &mine) != YYC_OK) _exit(13);
        yyc_memcache_set(mine, "k", 1, NULL, 1);
        yyc_memcache_set_release_asynchronously(mine, false);
        if (yyc_memcache_set_responds_to_system_memory_pressure(mine, true) != YYC_OK) _exit(14);
        if (yyc__memory_pressure_testing_threads() != 1) _exit(15);
        unsigned long before = yyc__memory_pressure_testing_events();
        if (write(writer, "x", 1) != 1) _exit(16);
        if (!yyc__memory_pressure_testing_wait_events(before + 1, WAIT_SECONDS)) _exit(17);
        if (yyc_memcache_total_count(mine) != 0) _exit(18);
        if (yyc_memcache_total_count(parent_cache) != 6) _exit(19); /* the child's copy */
        yyc_memcache_free(mine);
        if (!yyc__memory_pressure_testing_wait_threads(0, WAIT_SECONDS)) _exit(20);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    assert_int_equal(yyc_memcache_total_count(parent_cache), 6); /* the child's event was its own */
    fifo_source_signal(&f);
    assert_int_equal(yyc_memcache_total_count(parent_cache), 0);
    yyc_memcache_free(parent_cache);
    assert_true(yyc__memory_pressure_testing_wait_threads(0, WAIT_SECONDS));
    fifo_source_close(&f);
}

/* Many caches opted in, some out again in a scrambled order (the registry grows and moves
 * entries back on removal): one event handles each opted-in cache exactly once, no other. */
static void count_into(yyc_memcache *c, void *ctx) {
    (void)c;
    atomic_fetch_add((atomic_int *)ctx, 1);
}

static void each_of_many_opted_in_caches_is_handled_once_per_event(void **state) {
    (void)state;
    enum { N = 1000 };
    fifo_source f;
    fifo_source_open(&f, "mp-many");
    static yyc_memcache *caches[N];
    static atomic_int counts[N];
    for (int i = 0; i < N; i++) {
        caches[i] = filled_cache(1);
        atomic_store(&counts[i], 0);
        yyc_memcache_set_memory_warning_handler(caches[i], count_into, &counts[i]);
        assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(caches[i], true),
                         YYC_OK);
    }
    /* Out: every third, visited in a scrambled order (7919 is prime, coprime with N). */
    for (int k = 0; k < N; k++) {
        int i = (int)(((long)k * 7919) % N);
        if (i % 3 == 0)
            assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(caches[i], false),
                             YYC_OK);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(yyc_memcache_responds_to_system_memory_pressure(caches[i]), i % 3 != 0);
    fifo_source_signal(&f);
    for (int i = 0; i < N; i++) {
        if (atomic_load(&counts[i]) != (i % 3 != 0))
            fail_msg("cache %d handled %d times", i, atomic_load(&counts[i]));
        assert_int_equal(yyc_memcache_total_count(caches[i]), i % 3 == 0 ? 1 : 0);
    }
    for (int i = N - 1; i >= 0; i--) yyc_memcache_free(caches[i]);
    assert_true(yyc__memory_pressure_testing_wait_threads(0, WAIT_SECONDS));
    fifo_source_close(&f);
}

/* Caches opting in and out and being freed on several threads while events arrive: every
 * handling runs on a live cache (ASan/TSan watch), and the end state is no watcher. */
typedef struct churn_arg {
    int rounds;
} churn_arg;

static void *churn_thread(void *arg) {
    churn_arg *a = arg;
    for (int i = 0; i < a->rounds; i++) {
        yyc_memcache *c = NULL;
        if (yyc_memcache_new(NULL, &c) != YYC_OK) return (void *)1;
        yyc_memcache_set_memory_warning_handler(c, count_warning, NULL);
        yyc_memcache_set(c, "k", 1, NULL, 1);
        yyc_memcache_set_responds_to_system_memory_pressure(c, true);
        yyc_memcache_set(c, "j", 1, NULL, 1);
        if (i % 3 == 0) yyc_memcache_set_responds_to_system_memory_pressure(c, false);
        yyc_memcache_free(c);
    }
    return NULL;
}

static void caches_come_and_go_on_many_threads_while_pressure_arrives(void **state) {
    (void)state;
    fifo_source f;
    fifo_source_open(&f, "mp-churn");
    yyc_memcache *anchor = filled_cache(1); /* keeps one watcher for most of the test */
    assert_int_equal(yyc_memcache_set_responds_to_system_memory_pressure(anchor, true), YYC_OK);
    pthread_t threads[3];
    churn_arg arg = {.rounds = 300};
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, churn_thread, &arg), 0);
    for (int i = 0; i < 50; i++) fifo_source_signal(&f);
    yyc_memcache_free(anchor); /* the watcher may now stop and start again with the churn */
    for (int i = 0; i < 3; i++) {
        void *rc = NULL;
        pthread_join(threads[i], &rc);
        assert_null(rc);
    }
    assert_true(yyc__memory_pressure_testing_wait_threads(0, WAIT_SECONDS));
    fifo_source_close(&f);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pressure_watcher_is_not_started_without_an_opt_in),
        cmocka_unit_test(pressure_empties_opted_in_caches_and_leaves_the_others),
        cmocka_unit_test(opting_out_stops_the_handling_and_the_last_opt_out_the_watcher),
        cmocka_unit_test(a_handler_may_free_its_cache_on_the_watcher_thread),
        cmocka_unit_test(freeing_a_cache_waits_for_its_pressure_handling),
        cmocka_unit_test(a_socket_source_gets_the_decoded_trigger_and_its_messages_are_events),
        cmocka_unit_test(an_opt_in_blocked_in_connect_does_not_hold_up_a_free),
        cmocka_unit_test(unusable_or_disabling_variables_leave_no_watcher),
        cmocka_unit_test(without_variables_the_kernel_psi_file_is_watched),
        cmocka_unit_test(a_fork_child_starts_its_own_watcher_and_never_handles_the_parents_caches),
        cmocka_unit_test(each_of_many_opted_in_caches_is_handled_once_per_event),
        cmocka_unit_test(caches_come_and_go_on_many_threads_while_pressure_arrives),
    };
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
