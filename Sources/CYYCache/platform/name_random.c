/* name_random.c - random bits for file names, one arc4random per process (see name_random.h). */
#include "platform/name_random.h"

#include <bsd/stdlib.h> /* arc4random_buf */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

/* The process's secret key and its counter. key_ready is false until the key is drawn, and again
 * in a fork() child (its first call draws a new key). Invariant: once key_ready is true, key
 * holds this process's key (release/acquire on key_ready publishes it). Two threads may both
 * draw a key the first time: either is a good key, and the counter keeps their names apart. */
static _Atomic uint64_t key;
static _Atomic uint64_t counter;
static atomic_bool key_ready;
static pthread_once_t fork_handler_once = PTHREAD_ONCE_INIT;

static void forget_key_in_child(void) {
    atomic_store_explicit(&key_ready, false, memory_order_relaxed);
}

static void install_fork_handler(void) { pthread_atfork(NULL, NULL, forget_key_in_child); }

static uint64_t current_key(void) {
    if (atomic_load_explicit(&key_ready, memory_order_acquire))
        return atomic_load_explicit(&key, memory_order_relaxed);
    pthread_once(&fork_handler_once, install_fork_handler);
    uint64_t k;
    arc4random_buf(&k, sizeof k);
    atomic_store_explicit(&key, k, memory_order_relaxed);
    atomic_store_explicit(&key_ready, true, memory_order_release);
    return k;
}

uint64_t yyc__name_random(void) {
    uint64_t k = current_key();
    uint64_t z = k + 0x9e3779b97f4a7c15u *
                         (atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed) + 1);
    /* splitmix64's finalizer (a bijection: distinct counters give distinct outputs) */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}
