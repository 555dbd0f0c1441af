/*
 * lock_notes.c - the mutexes each thread holds, for the `*_locked` functions' assertions
 * (debug and test builds; see internal.h "lock checks").
 */
#include "platform/internal.h"

#ifdef YYC__LOCK_CHECKS
const void **yyc__lock_notes(int **count) {
    static _Thread_local const void *held[YYC__HELD_MAX];
    static _Thread_local int n;
    *count = &n;
    return held;
}
#else
/* ISO C forbids an empty translation unit. */
typedef int yyc__lock_notes_unused;
#endif
