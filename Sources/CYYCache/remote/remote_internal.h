/*
 * remote_internal.h - the remote tier's parts (private; not API): the URL (remote_url.c), the
 * value header (remote_value.c), one connection (remote_conn.c), the pool (remote_pool.c), the
 * invalidation thread (remote_listener.c) and the object (remote.c).
 */
#ifndef YYCACHE_REMOTE_INTERNAL_H
#define YYCACHE_REMOTE_INTERNAL_H

#include "platform/internal.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <yycache/remote.h>

/* ---- URL (remote_url.c) ---- */

/* A parsed URL. Invariant: exactly one of host / unix_path is set; strings owned. */
typedef struct yyc__remote_url {
    char *host;      /* TCP host (brackets of an IPv6 address removed), or NULL */
    int port;        /* TCP port, 1..65535 */
    char *unix_path; /* socket path, or NULL */
    char *user;      /* ACL user, or NULL (the default user) */
    char *password;  /* password, or NULL (no AUTH) */
    int db;          /* SELECT db when not 0 */
} yyc__remote_url;

/* Returns YYC_OK, YYC_EINVAL (with a message naming what is wrong; the password never appears
 * in it), YYC_ENOMEM. On error *out is all NULL/0. */
int yyc__remote_url_parse(const char *url, yyc__remote_url *out);
void yyc__remote_url_free(yyc__remote_url *u);

/* ---- the value header (remote_value.c) ----
 *
 * 16 bytes, little-endian: "yyRV" magic, format version (1), flags (0: none defined; others are
 * refused as a format this version cannot read), 2 bytes zero, the value's length (u32), the
 * CRC-32C of the value's bytes (u32). */
#define YYC__REMOTE_HEADER 16

/* Writes header + value into a new buffer (*out, malloc; *out_len). Returns YYC_OK, YYC_ENOMEM,
 * YYC_ETOOBIG. */
int yyc__remote_value_encode(const void *value, size_t len, char **out, size_t *out_len);
/* Checks a stored value; on success *value points into stored (len bytes). Returns YYC_OK or
 * YYC_ECORRUPT (with the reason in *why, a static string). */
int yyc__remote_value_decode(const char *stored, size_t stored_len, const char **value, size_t *len,
                             const char **why);

/* Reads the replies of GET and PTTL (ttl NULL when not asked) as yyc_remote_get_with_ttl
 * returns them: YYC_OK (*value malloc'd, *len, *ttl_seconds when the PTTL says), YYC_NOTFOUND,
 * YYC_ECORRUPT (not a value this library wrote), YYC_EIO (an error reply), YYC_ENOMEM; errors
 * recorded by yyc__error. Any reply, of any type and contents, is safe to pass (remote.c). */
int yyc__remote_get_reply(const redisReply *got, const redisReply *ttl, void **value, size_t *len,
                          double *ttl_seconds);

/* ---- one connection (remote_conn.c) ---- */

/* Opens a connection (connect within connect_s, then AUTH and SELECT within command_s, all
 * before deadline, a CLOCK_MONOTONIC time). Returns the context, or NULL with the status
 * (YYC_EIO, YYC_ENOMEM) recorded by yyc__error. */
redisContext *yyc__remote_connect(const yyc__remote_url *url, double connect_s, double command_s,
                                  double deadline);
/* Sets the context's socket timeouts to `seconds` (skipped when *current already says so). */
void yyc__remote_conn_timeout(redisContext *c, double seconds, double *current);
/* Sends the commands (pipelined) and reads one reply for each into replies[], with SIGPIPE
 * blocked in this thread (see remote.h). Returns REDIS_OK, or REDIS_ERR (c->err set: the
 * connection must be dropped; replies already read are freed and NULL). */
int yyc__remote_conn_run(redisContext *c, int count, const int *argc, const char **const *argv,
                         const size_t *const *argvlen, redisReply **replies);
/* Writes the buffered output of c with SIGPIPE blocked (the listener's PING). */
int yyc__remote_conn_flush(redisContext *c);

/* ---- the object (remote.c, remote_pool.c, remote_listener.c) ---- */

typedef struct remote_listener_entry {
    uint64_t id;
    yyc_remote_listener_fn fn;
    void *ctx;
} remote_listener_entry;

/* Invariants (under lock): 0 <= idle_count <= open_count <= YYC_REMOTE_POOL_SIZE; idle[0 ..
 * idle_count) are connected contexts nobody uses, each with its timeout in idle_timeout[];
 * listener_calls counts listener calls running (the thread runs them unlocked). */
struct yyc_remote {
    atomic_int refs;
    yyc__remote_url url;
    char *prefix; /* namespace ":" */
    size_t prefix_len;

    pthread_mutex_t lock;
    pthread_cond_t pool_cond; /* signalled when a connection goes idle or open_count drops */
    redisContext *idle[YYC_REMOTE_POOL_SIZE];
    double idle_timeout[YYC_REMOTE_POOL_SIZE];
    int idle_count, open_count;
    double connect_timeout, command_timeout;
    double backoff;       /* seconds; 0 after a successful connect */
    double backoff_until; /* no connect before this monotonic time */
    yyc_error_hook hook;
    void *hook_ctx;
    int hook_calls;        /* hook calls running (a replaced hook waits for them) */
    int thread_hook_calls; /* the same, on the invalidation thread (0 or 1) */
    pthread_cond_t calls_cond;

    /* The listeners and the thread (remote_listener.c). */
    remote_listener_entry *listeners;
    int listener_count, listener_capacity;
    uint64_t next_listener_id;
    int listener_calls;
    pthread_t thread;
    bool thread_started, stopping, link_tried;
    /* The last reference went on the thread itself (a listener or the hook closed r): the
     * thread, detached, finishes the close when its loop ends (it cannot join itself). */
    bool destroy_on_exit;
    int wake[2]; /* pipe: the thread's poll wakes on a write to wake[1] */

    atomic_uint_fast64_t epoch;
    atomic_uint_fast64_t hits, misses, corrupt, errors, connects, invalidations, link_downs;
};

/* The object's one mutex, with the lock notes of platform/internal.h. */
static inline void yyc__remote_lock(yyc_remote *r) {
    pthread_mutex_lock(&r->lock);
    yyc__lock_note_acquired(&r->lock);
}
static inline void yyc__remote_unlock(yyc_remote *r) {
    yyc__lock_note_released(&r->lock);
    pthread_mutex_unlock(&r->lock);
}
/* Waits on cond (a CLOCK_MONOTONIC condition of r, r's lock held) until the monotonic time
 * deadline; false, without waiting, once it passed. */
bool yyc__remote_wait_until_locked(yyc_remote *r, pthread_cond_t *cond, double deadline);

/* A connection for one call, taken before deadline: an idle one (*reused true) or a new one.
 * Returns NULL with the error recorded (YYC_EIO: back-off, timeout, refused). */
redisContext *yyc__remote_pool_take(yyc_remote *r, double deadline, bool *reused, double *timeout);
/* Gives it back (broken: closed instead). */
void yyc__remote_pool_give(yyc_remote *r, redisContext *c, double timeout, bool broken);
/* Closes every idle connection (the last reference). */
void yyc__remote_pool_close(yyc_remote *r);

/* Reports an error to the hook (no lock held on entry). */
void yyc__remote_report(yyc_remote *r, const yyc_error *e);

/* Starts the thread and waits for its first connection attempt (within deadline). */
int yyc__remote_listener_start(yyc_remote *r, double deadline);
/* Stops and joins it. Called on the thread itself (the last reference dropped by a listener
 * or the hook), it asks the thread to stop and returns false: the thread then calls
 * yyc__remote_free when its loop ends. Otherwise returns true (joined, or never started). */
bool yyc__remote_listener_stop(yyc_remote *r);

/* Frees what is left of r once the thread is gone (the last step of yyc_remote_close). */
void yyc__remote_free(yyc_remote *r);

/* Retains a reference (yyc_cache keeps one). */
void yyc__remote_retain(yyc_remote *r);

#endif /* YYCACHE_REMOTE_INTERNAL_H */
