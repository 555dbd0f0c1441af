/*
 * memory_pressure.c - the system memory-pressure watcher (yycache/memory_pressure.h): a
 * registry of subscribers (opaque pointers, each with its handler: the opted-in memory caches,
 * whose handler is their memory-warning handling) and one thread per process that polls a
 * pressure-stall source and runs every subscriber's handler. It knows nothing of the memory
 * cache: memory_cache.c subscribes (headers go one way, cache -> watcher).
 *
 * A watcher is a heap object owned by its thread, which is detached: the last opt-out may run
 * on the watcher's own thread (a memory-warning handler that frees its cache), where a join
 * would wait for itself. Stopping a watcher marks it and wakes its thread through an eventfd;
 * the thread unlinks and frees it on its way out. A watcher that was just stopped may still be
 * finishing the cache it was handling while a new one starts, so the registry tracks every
 * live watcher, and forgetting a cache waits for each of them.
 *
 * One mutex (state.lock) guards everything below; it is never held while a handler runs, while
 * a source is opened (a connect() may block: open_watcher), or around another lock (the caches'
 * mutexes are taken only with it released).
 *
 * Invariants (under state.lock):
 *   - table is an open-addressing hash set (linear probing, no tombstones: a removal shifts the
 *     entries after it back) of the opted-in caches, each once: count entries in mask + 1
 *     slots, at most half full; NULL (mask 0) when count is 0. layout changes whenever an entry
 *     moves to another slot (growth, removal), so that a pass over the table can restart.
 *   - watchers lists every watcher whose thread is alive; active is one of them or NULL, and
 *     active->stop is false. Every other listed watcher has stop set (it is leaving), or lost
 *     its source (it is leaving too).
 *   - A watcher's delivering is the cache whose handling runs on its thread now, or NULL; a
 *     listed cache's handling runs only with delivering set to it, so a cache that is no longer
 *     listed and no watcher's delivering is never touched again.
 *   - Each subscriber's round is at most state.round; a handling pass gives every subscriber
 *     whose round is below the pass's number its turn.
 */
#include "memory/memory_pressure.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef __linux__
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <unistd.h>
#endif

/* The trigger written to PSI files we choose (and to a $MEMORY_PRESSURE_WATCH PSI file given
 * without $MEMORY_PRESSURE_WRITE): an event when some task stalled on memory for 200 ms of a
 * 2 s window. The kernel lets processes without CAP_SYS_RESOURCE create triggers only with
 * windows that are multiples of 2 s (it refuses "some 100000 1000000" with EINVAL), and it
 * overwrites the last byte written with a NUL: the terminator is part of the write. */
#define DEFAULT_TRIGGER "some 200000 2000000"

typedef struct subscriber {
    void *cache;              /* the subscriber (a memory cache); NULL: an empty slot */
    yyc__pressure_handler fn; /* what a pressure event runs on it */
    unsigned long round;      /* the last handling pass that gave this cache its turn */
} subscriber;

typedef struct watcher {
    struct watcher *next;
    int fd;                            /* the source */
    short events;                      /* POLLPRI (a PSI file) or POLLIN (the others) */
    int wake_fd;                       /* eventfd: written when stop is set */
    yyc_memory_pressure_source source; /* what fd is */
    bool stop;                         /* the thread leaves at its next wake-up */
    void *delivering;                  /* the cache being handled on the thread, or NULL */
} watcher;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* CLOCK_MONOTONIC: a handling ended, an event ended, a thread ended */
    subscriber *table;
    size_t mask;
    unsigned long layout;
    size_t count;
    watcher *watchers;
    bool opening; /* an opt-in is opening a source with the lock released (open_watcher) */
    watcher *active;
    unsigned long round;  /* handling passes started */
    unsigned long events; /* handling passes finished */
} state = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The watcher whose thread this is (NULL on every other thread). */
static _Thread_local watcher *current_watcher;

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

static void lock(void) {
    int rc = pthread_mutex_lock(&state.lock);
    assert(rc == 0);
    (void)rc;
    yyc__lock_note_acquired(&state.lock);
}

static void unlock(void) {
    yyc__lock_note_released(&state.lock);
    int rc = pthread_mutex_unlock(&state.lock);
    assert(rc == 0);
    (void)rc;
}

static void init_cond(void) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&state.changed, &attr);
    pthread_condattr_destroy(&attr);
}

/* --- fork --- */

static void fork_prepare(void) { lock(); }

static void fork_parent(void) { unlock(); }

/* In the child (one thread, holding state.lock): no watcher thread exists here, and the
 * parent's caches are not the child's to handle. Close the copies of the parent's descriptors
 * and forget everything; the child's first opt-in starts its own watcher. */
static void fork_child(void) {
    for (watcher *w = state.watchers; w;) {
        watcher *next = w->next;
#ifdef __linux__
        if (w != current_watcher) { /* a handler that forked: see memory_pressure.h */
            close(w->fd);
            close(w->wake_fd);
            free(w);
        }
#endif
        w = next;
    }
    state.watchers = NULL;
    state.active = NULL;
    state.opening = false; /* (the parent's opener is not in the child) */
    free(state.table);
    state.table = NULL;
    state.mask = 0;
    state.count = 0;
    current_watcher = NULL;
    init_cond(); /* a waiter of the parent's may have left it mid-wait */
    unlock();
}

static void setup(void) {
    init_cond();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* --- sources --- */

#ifdef __linux__

/* Decodes standard base64 (padding optional, nothing else allowed) into a new buffer.
 * Returns its length, or -1 (invalid input, or no memory). */
static ssize_t base64_decode(const char *text, unsigned char **out) {
    size_t len = strlen(text);
    while (len > 0 && text[len - 1] == '=') len--;
    unsigned char *buf = malloc(len * 3 / 4 + 1);
    if (!buf) return -1;
    size_t n = 0;
    unsigned bits = 0, nbits = 0;
    for (size_t i = 0; i < len; i++) {
        const char c = text[i];
        unsigned v;
        if (c >= 'A' && c <= 'Z') v = (unsigned)(c - 'A');
        else if (c >= 'a' && c <= 'z') v = (unsigned)(c - 'a') + 26;
        else if (c >= '0' && c <= '9') v = (unsigned)(c - '0') + 52;
        else if (c == '+') v = 62;
        else if (c == '/') v = 63;
        else {
            free(buf);
            return -1;
        }
        bits = (bits << 6) | v;
        nbits += 6;
        if (nbits >= 8) {
            nbits -= 8;
            buf[n++] = (unsigned char)(bits >> nbits);
            bits &= (1u << nbits) - 1;
        }
    }
    if (nbits >= 6) { /* a lone trailing character carries no whole byte */
        free(buf);
        return -1;
    }
    *out = buf;
    return (ssize_t)n;
}

static bool write_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

#define PROC_SUPER_MAGIC_ 0x9fa0
#define CGROUP2_SUPER_MAGIC_ 0x63677270

/* Opens path as a pressure source, the way its kind asks (memory_pressure.h): a PSI file gets
 * `trigger` (len bytes) written, a socket gets it sent if len > 0, a FIFO or a character device
 * gets nothing. Returns the descriptor (non-blocking, close-on-exec) and sets *events, or -1. */
static int open_source(const char *path, const void *trigger, size_t len, short *events) {
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    int fd = -1;
    if (S_ISSOCK(st.st_mode)) {
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof addr.sun_path) return -1;
        strcpy(addr.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return -1;
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
            (len > 0 && !write_all(fd, trigger, len)) ||
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
            close(fd);
            return -1;
        }
        *events = POLLIN;
    } else if (S_ISREG(st.st_mode)) {
        fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) return -1;
        struct statfs sfs;
        bool psi = fstatfs(fd, &sfs) == 0 &&
                   (sfs.f_type == PROC_SUPER_MAGIC_ || sfs.f_type == CGROUP2_SUPER_MAGIC_);
        /* One write: the kernel takes a trigger per write call. */
        if (!psi || write(fd, trigger, len) != (ssize_t)len) {
            close(fd);
            return -1;
        }
        *events = POLLPRI;
    } else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
        /* Read and write: the watcher is then a writer itself, so writers that come and go
         * never leave the FIFO hung up (POLLHUP would wake poll() for ever). */
        fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) return -1;
        *events = POLLIN;
    } else {
        return -1;
    }
    return fd;
}

/* The process's cgroup v2 memory.pressure path, or false. */
static bool cgroup_pressure_path(char *out, size_t size) {
    char mount[4096] = "", group[4096] = "";
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f) return false;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        /* id parent major:minor root mount-point options... - fstype source super-options */
        const char *sep = strstr(line, " - ");
        if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0) continue;
        if (sscanf(line, "%*s %*s %*s %*s %4095s", mount) == 1) break;
        mount[0] = '\0';
    }
    fclose(f);
    if (!mount[0]) return false;
    f = fopen("/proc/self/cgroup", "re");
    if (!f) return false;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) != 0) continue;
        line[strcspn(line, "\n")] = '\0';
        int n = snprintf(group, sizeof group, "%s", line + 3);
        if (n < 0 || (size_t)n >= sizeof group) group[0] = '\0'; /* too long: not used */
        break;
    }
    fclose(f);
    if (group[0] != '/') return false;
    int n = snprintf(out, size, "%s%s%smemory.pressure", mount, group,
                     group[strlen(group) - 1] == '/' ? "" : "/");
    return n > 0 && (size_t)n < size;
}

/* Opens the source for a new watcher (memory_pressure.h: the variables, the cgroup, the
 * system). Returns the descriptor and sets *events and *source, or -1. */
static int choose_source(short *events, yyc_memory_pressure_source *source) {
    const char *watch = secure_getenv("MEMORY_PRESSURE_WATCH");
    if (watch) {
        if (!*watch || strcmp(watch, "/dev/null") == 0 || watch[0] != '/') return -1;
        const char *encoded = secure_getenv("MEMORY_PRESSURE_WRITE");
        unsigned char *trigger = NULL;
        ssize_t len = 0;
        if (encoded && (len = base64_decode(encoded, &trigger)) < 0) return -1;
        int fd;
        if (trigger) {
            fd = open_source(watch, trigger, (size_t)len, events);
            free(trigger);
        } else {
            /* No write given: a PSI file still needs a trigger (without one, poll() reports it
             * ready at once, for ever); a socket or a FIFO gets nothing. */
            struct stat st;
            bool regular = stat(watch, &st) == 0 && S_ISREG(st.st_mode);
            fd = regular ? open_source(watch, DEFAULT_TRIGGER, sizeof DEFAULT_TRIGGER, events)
                         : open_source(watch, "", 0, events);
        }
        *source = YYC_MEMORY_PRESSURE_SERVICE_MANAGER;
        return fd;
    }
    char path[8192];
    if (cgroup_pressure_path(path, sizeof path)) {
        int fd = open_source(path, DEFAULT_TRIGGER, sizeof DEFAULT_TRIGGER, events);
        if (fd >= 0) {
            *source = YYC_MEMORY_PRESSURE_CGROUP;
            return fd;
        }
    }
    int fd = open_source("/proc/pressure/memory", DEFAULT_TRIGGER, sizeof DEFAULT_TRIGGER, events);
    if (fd >= 0) *source = YYC_MEMORY_PRESSURE_SYSTEM;
    return fd;
}

#endif /* __linux__ */

/* --- the watcher's thread --- */

/* Whether some watcher other than the calling thread's is handling c (under the lock). */
static bool handled_elsewhere_locked(const void *c) {
    yyc__assert_held(&state.lock);
    for (watcher *w = state.watchers; w; w = w->next)
        if (w->delivering == c && w != current_watcher) return true;
    return false;
}

/* One pressure event: every opted-in cache's memory-warning handling, one after another, each
 * with no lock held. Caches opted in meanwhile may or may not get their turn. */
static void handle_event(watcher *w) {
    lock();
    unsigned long round = ++state.round;
    size_t next = 0; /* the slot to look at next, in the table's current layout */
    unsigned long layout = state.layout;
    while (!w->stop && state.table) {
        if (state.layout != layout) { /* entries moved: look again from the start */
            next = 0;
            layout = state.layout;
        }
        while (next <= state.mask && (!state.table[next].cache || state.table[next].round >= round))
            next++;
        if (next > state.mask) break;
        subscriber *s = &state.table[next++];
        s->round = round;
        void *c = s->cache;
        yyc__pressure_handler fn = s->fn;
        w->delivering = c; /* c cannot be freed or forgotten until this is cleared */
        unlock();
        fn(c);
        lock();
        w->delivering = NULL;
        pthread_cond_broadcast(&state.changed);
    }
    state.events++;
    pthread_cond_broadcast(&state.changed);
    unlock();
}

#ifdef __linux__

/* Reads everything that arrived on a POLLIN source. Returns false if the source closed (end of
 * file on a socket) or failed. */
static bool drain(int fd) {
    char buf[512];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) continue;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        return false;
    }
}

static void *watcher_main(void *arg) {
    watcher *w = arg;
    current_watcher = w;
    struct pollfd fds[2] = {{.fd = w->fd, .events = w->events},
                            {.fd = w->wake_fd, .events = POLLIN}};
    for (;;) {
        fds[0].revents = fds[1].revents = 0;
        int n = poll(fds, 2, -1);
        if (n < 0 && errno == EINTR) continue;
        lock();
        bool stop = w->stop;
        unlock();
        if (stop) break;
        bool lost = n < 0, event = false;
        short got = fds[0].revents;
        if (w->events == POLLPRI) {
            /* The kernel reports a destroyed trigger (a removed cgroup) as POLLERR. */
            event = (got & POLLPRI) && !(got & POLLERR);
            lost = lost || (got & (POLLERR | POLLNVAL));
        } else if (got) {
            event = (got & POLLIN) != 0;
            if (!drain(w->fd) || (got & (POLLERR | POLLHUP | POLLNVAL))) lost = true;
        }
        if (event) handle_event(w);
        if (lost) {
            lock();
            if (state.active == w) state.active = NULL;
            unlock();
            break;
        }
    }
    lock();
    for (watcher **p = &state.watchers; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    pthread_cond_broadcast(&state.changed);
    unlock();
    close(w->fd);
    close(w->wake_fd);
    free(w);
    return NULL;
}

/* Opens a source for a new watcher, with no lock held: opening can block for as long as the
 * source likes (connect() to a socket whose backlog is full), and the registry's mutex is taken
 * by every yyc_memcache_free. NULL if there is no usable source. */
static watcher *open_watcher(void) {
    watcher *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->fd = choose_source(&w->events, &w->source);
    if (w->fd < 0) {
        free(w);
        return NULL;
    }
    w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->wake_fd < 0) {
        close(w->fd);
        free(w);
        return NULL;
    }
    return w;
}

static void close_watcher(watcher *w) {
    if (!w) return;
    close(w->fd);
    close(w->wake_fd);
    free(w);
}

/* Starts a watcher thread on w, opened by open_watcher (under the lock). NULL if the thread
 * could not be started (w is freed). */
static watcher *start_locked(watcher *w) {
    yyc__assert_held(&state.lock);
    if (!w) return NULL;
    /* Signals stay with the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    w->next = state.watchers; /* listed before it runs: it unlinks itself under the lock */
    state.watchers = w;
    int rc = pthread_create(&thread, &attr, watcher_main, w);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        state.watchers = w->next;
        close_watcher(w);
        return NULL;
    }
    return w;
}

/* Asks the active watcher to leave (under the lock). */
static void stop_locked(void) {
    yyc__assert_held(&state.lock);
    watcher *w = state.active;
    if (!w) return;
    state.active = NULL;
    w->stop = true;
    uint64_t one = 1;
    /* Under the lock: the thread frees w only after it has seen stop. */
    ssize_t n = write(w->wake_fd, &one, sizeof one);
    (void)n;
}

#else /* not Linux: no pressure-stall information, no watcher */

static watcher *open_watcher(void) { return NULL; }
static void close_watcher(watcher *w) { (void)w; }
static watcher *start_locked(watcher *w) { return w; }
static void stop_locked(void) {}

#endif

/* --- the registry --- */

/* The home slot of c in a table of mask + 1 slots. */
static size_t home_of(const void *c, size_t mask) {
    uint64_t h = (uint64_t)(uintptr_t)c;
    h ^= h >> 29;
    h *= 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) & mask;
}

/* c's entry, or NULL (under the lock). */
static subscriber *find_locked(const void *c) {
    yyc__assert_held(&state.lock);
    if (!state.table) return NULL;
    for (size_t i = home_of(c, state.mask);; i = (i + 1) & state.mask) {
        if (state.table[i].cache == c) return &state.table[i];
        if (!state.table[i].cache) return NULL;
    }
}

#ifdef YYC_TESTING
/* Test builds: asserts the invariants at the top of the file (under the lock). O(slots). */
static void check_locked(void) {
    yyc__assert_held(&state.lock);
    assert((state.table == NULL) == (state.count == 0));
    size_t n = 0;
    for (size_t i = 0; state.table && i <= state.mask; i++) {
        if (!state.table[i].cache) continue;
        n++;
        assert(find_locked(state.table[i].cache) == &state.table[i]); /* reachable, once */
        assert(state.table[i].round <= state.round);
    }
    assert(n == state.count);
    assert(!state.table || state.count * 2 <= state.mask + 1);
    bool active_listed = state.active == NULL;
    for (watcher *w = state.watchers; w; w = w->next)
        if (w == state.active) active_listed = true;
    assert(active_listed && (!state.active || !state.active->stop));
    (void)n;
    (void)active_listed;
}
#else
static void check_locked(void) {}
#endif

/* Adds c (not present) with the given round (under the lock). Returns false without memory. */
static bool insert_locked(void *c, yyc__pressure_handler fn, unsigned long round) {
    yyc__assert_held(&state.lock);
    if ((state.count + 1) * 2 > (state.table ? state.mask + 1 : 0)) {
        size_t cap = state.table ? (state.mask + 1) * 2 : 16;
        subscriber *table = calloc(cap, sizeof *table);
        if (!table) return false;
        for (size_t i = 0; state.table && i <= state.mask; i++) {
            if (!state.table[i].cache) continue;
            size_t j = home_of(state.table[i].cache, cap - 1);
            while (table[j].cache) j = (j + 1) & (cap - 1);
            table[j] = state.table[i];
        }
        free(state.table);
        state.table = table;
        state.mask = cap - 1;
        state.layout++;
    }
    size_t i = home_of(c, state.mask);
    while (state.table[i].cache) i = (i + 1) & state.mask;
    state.table[i] = (subscriber){.cache = c, .fn = fn, .round = round};
    state.count++;
    check_locked();
    return true;
}

/* Removes the entry s (under the lock): the entries after it that may fill its slot move back,
 * so that every entry stays reachable from its home slot without tombstones. */
static void remove_locked(subscriber *s) {
    yyc__assert_held(&state.lock);
    size_t hole = (size_t)(s - state.table);
    state.table[hole].cache = NULL;
    for (size_t j = (hole + 1) & state.mask; state.table[j].cache; j = (j + 1) & state.mask) {
        size_t home = home_of(state.table[j].cache, state.mask);
        /* j may move to the hole if its home is not after the hole (cyclically, up to j) */
        if (((j - home) & state.mask) >= ((j - hole) & state.mask)) {
            state.table[hole] = state.table[j];
            state.table[j].cache = NULL;
            hole = j;
        }
    }
    state.layout++;
    if (--state.count == 0) {
        free(state.table);
        state.table = NULL;
        state.mask = 0;
    }
    check_locked();
}

/* Takes c out of the registry (under the lock; ends the watcher with the last cache), then
 * waits until no other thread's watcher is handling c. */
static void forget_locked(const void *c) {
    yyc__assert_held(&state.lock);
    subscriber *s = find_locked(c);
    if (s) {
        remove_locked(s);
        if (state.count == 0) stop_locked();
    }
    while (handled_elsewhere_locked(c)) pthread_cond_wait(&state.changed, &state.lock);
}

int yyc__memory_pressure_subscribe(void *c, yyc__pressure_handler fn) {
    pthread_once(&setup_once, setup);
    lock();
    int rc = YYC_OK;
    if (!find_locked(c)) {
        if (!insert_locked(c, fn, state.round)) rc = YYC_ENOMEM;
        /* The first opt-in opens the source with the lock released (open_watcher), then
         * starts the watcher unless every cache opted out meanwhile. Opt-ins meanwhile find
         * `opening` set and leave it to this one. */
        if (rc == YYC_OK && state.count > 0 && !state.active && !state.opening) {
            state.opening = true;
            unlock();
            watcher *w = open_watcher();
            lock();
            state.opening = false;
            if (state.count > 0 && !state.active) state.active = start_locked(w);
            else close_watcher(w);
        }
    }
    check_locked();
    unlock();
    return rc;
}

bool yyc__memory_pressure_subscribed(const void *c) {
    pthread_once(&setup_once, setup);
    lock();
    bool in = find_locked(c) != NULL;
    unlock();
    return in;
}

yyc_memory_pressure_source yyc_memory_pressure_watcher_source(void) {
    pthread_once(&setup_once, setup);
    lock();
    yyc_memory_pressure_source source = YYC_MEMORY_PRESSURE_NONE;
#ifdef __linux__
    if (state.active) source = state.active->source;
#endif
    unlock();
    return source;
}

void yyc__memory_pressure_forget(const void *c) {
    pthread_once(&setup_once, setup);
    lock();
    forget_locked(c);
    check_locked();
    unlock();
}

/* --- test hooks --- */

#ifdef YYC_TESTING
int yyc__memory_pressure_testing_threads(void) {
    pthread_once(&setup_once, setup);
    lock();
    int n = 0;
    for (watcher *w = state.watchers; w; w = w->next) n++;
    unlock();
    return n;
}

unsigned long yyc__memory_pressure_testing_events(void) {
    pthread_once(&setup_once, setup);
    lock();
    unsigned long n = state.events;
    unlock();
    return n;
}

/* Waits on state.changed until done() holds or `seconds` pass (under the lock). */
static bool wait_until_locked(bool (*done)(long), long arg, double seconds) {
    double deadline = yyc__monotonic_now() + seconds;
    while (!done(arg)) {
        double now = yyc__monotonic_now();
        if (now >= deadline) return false;
        struct timespec ts;
        ts.tv_sec = (time_t)deadline;
        ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&state.changed, &state.lock, &ts);
    }
    return true;
}

static bool threads_are(long n) {
    long count = 0;
    for (watcher *w = state.watchers; w; w = w->next) count++;
    return count == n;
}

static bool events_reach(long n) { return state.events >= (unsigned long)n; }

bool yyc__memory_pressure_testing_wait_threads(int threads, double seconds) {
    pthread_once(&setup_once, setup);
    lock();
    bool ok = wait_until_locked(threads_are, threads, seconds);
    unlock();
    return ok;
}

bool yyc__memory_pressure_testing_wait_events(unsigned long events, double seconds) {
    pthread_once(&setup_once, setup);
    lock();
    bool ok = wait_until_locked(events_reach, (long)events, seconds);
    unlock();
    return ok;
}
#endif
