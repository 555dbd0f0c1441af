/*
 * yycache/remote.h - the remote tier: a cache shared by processes and machines, on Redis.
 *
 * A yyc_remote talks to one Redis server (7.x; hiredis 0.14 or 1.x) and keeps every key it
 * writes under a namespace: the Redis key is namespace ":" key, so no key can address a Redis
 * key outside its namespace (two namespaces overlap only when one is the other followed by ":";
 * pick namespaces without ":" to rule that out). Keys are byte strings (no NUL; anything else is
 * sent as is: commands are argument vectors, never formatted text).
 *
 * Values: each stored value carries a 16-byte header (magic, format version, flags, length,
 * CRC-32C of the bytes). A value this library did not write (or one damaged in Redis) is a miss:
 * yyc_remote_get returns YYC_NOTFOUND, counts it in corrupt_values and reports YYC_ECORRUPT
 * through the error hook; it is never returned and never removed. Values are limited to
 * YYC_REMOTE_MAX_VALUE bytes (YYC_ETOOBIG above).
 *
 * Connections: a pool of up to YYC_REMOTE_POOL_SIZE connections, opened when needed and kept;
 * a call takes one (waiting while all are busy), runs its command and gives it back. A
 * connection that fails is closed; the next call opens a new one. After a failed connect,
 * new connects are refused for a back-off that starts at 50 ms and doubles up to 1 s (calls in
 * that time fail at once with YYC_EIO); a successful connect resets it. Every call returns
 * within the connect timeout + the command timeout (plus scheduling), with YYC_EIO when the
 * server is unreachable, slow, refused authentication or answered with an error (a full Redis:
 * "OOM command not allowed"). A connection that failed after it had been idle in the pool is
 * retried once on a new connection (every command here can be repeated safely).
 * Host names are resolved by getaddrinfo, which has no timeout of its own: use addresses or
 * unix sockets where that matters.
 *
 * Signals: a server that closes connections never raises SIGPIPE in the host process. Every
 * write to a socket runs with SIGPIPE blocked in the calling thread; a SIGPIPE it raised is
 * taken back before the thread's mask is restored (a SIGPIPE already pending is left alone).
 *
 * Invalidation (coherence of near tiers): each yyc_remote has a thread with two connections of
 * its own: one subscribed to __redis__:invalidate (RESP2), one with CLIENT TRACKING ON BCAST
 * PREFIX "namespace:" REDIRECT to the first, so that every change of a key under the namespace
 * (a set or remove by any client, an expiry, an eviction by Redis, FLUSHALL) reaches the
 * listeners (yyc_remote_add_listener). When either connection fails, or a heartbeat PING sent
 * after 1 s of silence gets no answer within another second, the invalidation link is down:
 * listeners are told to drop everything (YYC_REMOTE_FLUSH), the thread reconnects with the
 * back-off above, and when the link is up again they are told to drop everything once more
 * (invalidations may have been missed meanwhile). yyc_remote_invalidation_epoch tells a near
 * tier whether it may trust what it holds. A yyc_cache's listener drops the key from memory, then
 * from disk: another process holding the disk folder's write lock delays it (and the
 * invalidations behind it) up to the disk's busy timeout (5 s); a removal that gives up makes the
 * cache serve nothing from its near tiers until a later invalidation (at most every 5 s) empties
 * the disk, so the invalidation still counts only once no near tier can serve the old value.
 *
 * Thread safety: every function is thread-safe. Blocking: every call but yyc_remote_close's
 * last reference, the statistics and the epoch may wait for the network (bounded as above).
 * fork(): a child must not use a yyc_remote opened before the fork (open a new one).
 */
#ifndef YYCACHE_REMOTE_H
#define YYCACHE_REMOTE_H

#include "kv_storage.h" /* yyc_error_hook */
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct yyc_remote yyc_remote;

/* Connections kept per yyc_remote (not counting the two of the invalidation thread). */
#define YYC_REMOTE_POOL_SIZE 8
/* The largest value stored, in bytes (the header not counted): 64 MiB. */
#define YYC_REMOTE_MAX_VALUE (64u * 1024u * 1024u)

/* Opens a remote tier. url: "redis://[user[:password]@]host[:port][/db]" (port 6379, db 0 by
 * default; user and password percent-decoded; an IPv6 host in brackets) or
 * "unix://[user[:password]@]/path/to/redis.sock[?db=N]". namespace_: non-empty, no NUL.
 * Connects once (connect timeout 1 s, command timeout 0.5 s: yyc_remote_set_timeouts) to check
 * the server and the credentials, and starts the invalidation thread (waiting for its first
 * connection, within the same bounds). Returns: YYC_OK, YYC_EINVAL (NULL argument, bad url or
 * namespace), YYC_ENOMEM, YYC_EIO (unreachable, timeout, refused authentication, no such db).
 * Ownership: url and namespace_ copied; *out transferred (yyc_remote_close; NULL on error). */
YYC_API int yyc_remote_open(const char *url, const char *namespace_, yyc_remote **out);

/* Seconds for a connect (default 1) and for each command (default 0.5); both > 0 and finite.
 * Applies to connections opened after the call and to the next command of every kept one.
 * Returns: YYC_OK, YYC_EINVAL. */
YYC_API int yyc_remote_set_timeouts(yyc_remote *r, double connect_seconds, double command_seconds);

/* Returns: YYC_OK (*value transferred, yyc_free; NULL when *len is 0), YYC_NOTFOUND (a miss,
 * also for a value this library did not write: see above), YYC_EINVAL (NULL argument, empty
 * key), YYC_ENOMEM, YYC_EIO. *value / *len are NULL / 0 on anything but YYC_OK. */
YYC_API int yyc_remote_get(yyc_remote *r, const char *key, void **value, size_t *len);
/* yyc_remote_get that also gives the value's remaining time to live in seconds (INFINITY:
 * none), read in the same round trip. */
YYC_API int yyc_remote_get_with_ttl(yyc_remote *r, const char *key, void **value, size_t *len,
                                    double *ttl_seconds);
/* Stores the value (copied) with a time to live in seconds (0: none; else rounded up to whole
 * milliseconds). Returns: YYC_OK, YYC_EINVAL (NULL argument, empty key, NULL value with a
 * length, negative or NaN ttl), YYC_ETOOBIG (len > YYC_REMOTE_MAX_VALUE), YYC_ENOMEM, YYC_EIO. */
YYC_API int yyc_remote_set(yyc_remote *r, const char *key, const void *value, size_t len,
                           double ttl_seconds);
/* yyc_remote_set that stores only when the key has no value in Redis (one SET NX: atomic in
 * Redis, so of two processes racing only one stores): for a value loaded after a miss, which
 * must never replace a value another client wrote since. *stored (may be NULL): whether this
 * call stored it (false when the key kept its value, and on error). Blocking, timeouts and
 * errors as yyc_remote_set. Returns: YYC_OK (also when the key kept its value), YYC_EINVAL,
 * YYC_ETOOBIG, YYC_ENOMEM, YYC_EIO. Ownership: value copied. */
YYC_API int yyc_remote_set_if_absent(yyc_remote *r, const char *key, const void *value, size_t len,
                                     double ttl_seconds, bool *stored);
/* Returns: YYC_OK (also when absent), YYC_EINVAL (NULL argument, empty key), YYC_EIO. */
YYC_API int yyc_remote_remove(yyc_remote *r, const char *key);
/* *out: whether Redis has the key (its value is not read or checked). Returns: YYC_OK,
 * YYC_EINVAL, YYC_EIO. */
YYC_API int yyc_remote_contains(yyc_remote *r, const char *key, bool *out);
/* Removes every key of the namespace (SCAN and UNLINK in batches of 512; keys written during
 * the call may stay). Returns: YYC_OK, YYC_EINVAL, YYC_EIO. */
YYC_API int yyc_remote_remove_all(yyc_remote *r);

/* Drops the caller's reference. The last one (a yyc_cache keeps its own) stops the
 * invalidation thread and closes every connection. NULL is fine. A listener or the error hook
 * may drop the last reference, also on the invalidation thread: the thread then finishes the
 * close itself when the call returns (it never waits for itself). No call of r may be running
 * on another thread when the last reference goes. */
YYC_API void yyc_remote_close(yyc_remote *r);

/* The counters of one yyc_remote, relaxed atomics (exact, no lock). */
typedef struct yyc_remote_statistics {
    uint64_t hits;           /* gets that found a value */
    uint64_t misses;         /* gets that found none (corrupt values included) */
    uint64_t corrupt_values; /* values found with a bad header or checksum */
    uint64_t errors;         /* calls that failed with YYC_EIO */
    uint64_t connects;       /* connections opened (the invalidation thread's not counted) */
    uint64_t invalidations;  /* keys invalidated by the listener thread, counted once every
                              * listener (a cache's near tiers) has dropped the key */
    uint64_t link_downs;     /* times the invalidation link went down */
    bool invalidation_up;    /* whether the invalidation link is up now */
} yyc_remote_statistics;
/* Returns: YYC_OK, YYC_EINVAL. Never blocks. */
YYC_API int yyc_remote_get_statistics(yyc_remote *r, yyc_remote_statistics *out);

/* The error hook (yyc_error_hook of disk_cache.h): called with every YYC_EIO a call returns and
 * every corrupt value found (YYC_ECORRUPT), on the calling thread, no lock held; the link's
 * failures are reported from the invalidation thread. ctx is borrowed until the hook is
 * replaced: the call returns once no call of the old hook is running (so it must not be called
 * from the hook). NULL removes it. */
YYC_API void yyc_remote_set_error_hook(yyc_remote *r, yyc_error_hook hook, void *ctx);

/* What a listener is told. */
typedef enum yyc_remote_event {
    YYC_REMOTE_INVALIDATE = 0, /* key (key_len bytes, without the namespace) changed in Redis */
    YYC_REMOTE_FLUSH = 1       /* drop everything that came from Redis (key NULL) */
} yyc_remote_event;
/* epoch: yyc_remote_invalidation_epoch at the time of the event (see there). */
typedef void (*yyc_remote_listener_fn)(void *ctx, yyc_remote_event event, const char *key,
                                       size_t key_len, uint64_t epoch);

/* Adds a listener, called on the invalidation thread (no lock held; a slow listener delays the
 * invalidations after it). Returns: YYC_OK (*out_id for yyc_remote_remove_listener), YYC_EINVAL,
 * YYC_ENOMEM. */
YYC_API int yyc_remote_add_listener(yyc_remote *r, yyc_remote_listener_fn fn, void *ctx,
                                    uint64_t *out_id);
/* Removes it; returns once no call of it is running (unless called from the listener itself).
 * Unknown ids are ignored. */
YYC_API void yyc_remote_remove_listener(yyc_remote *r, uint64_t id);

/* The invalidation link's epoch: it grows by one each time the link goes up or down; odd while
 * it is up. A near tier may keep a value read from Redis only if the epoch was odd before the
 * read and is the same after the value was stored (then any invalidation of the key after the
 * read reaches its listener), and must drop what it holds on YYC_REMOTE_FLUSH. 0 for NULL. */
YYC_API uint64_t yyc_remote_invalidation_epoch(yyc_remote *r);

#ifdef __cplusplus
}
#endif

#endif /* YYCACHE_REMOTE_H */
