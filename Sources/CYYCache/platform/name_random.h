/*
 * name_random.h - random bits for file names, without a system call per name (private; not API).
 *
 * The disk storage names its temporary files and the alternate names of a value file with
 * random hex digits. arc4random_buf (libbsd) asks the kernel for the process id on every call
 * to notice a fork: one getpid per name, one or two per write. Here the process draws one secret
 * 64-bit key from arc4random once, and a name's bits are a keyed mix (splitmix64's finalizer) of
 * it and a process-wide counter: distinct for every call in the process (the mix is a bijection
 * of the counter), and not guessable in advance by another process (it does not know the key; the
 * folders are 0700, so only the same user can list the names made so far).
 * A fork() child draws a new key before its first name (pthread_atfork), so a parent and child
 * never walk the same sequence. Collisions with files already there are still possible - a
 * hostile or foreign file of that name - and the callers handle them as before (O_EXCL,
 * RENAME_NOREPLACE, a new name per attempt).
 *
 * Not for secrets: the mix is not a cryptographic function.
 * Thread safety: any thread, lock-free (one atomic add per call).
 */
#ifndef YYCACHE_NAME_RANDOM_H
#define YYCACHE_NAME_RANDOM_H

#include <stdint.h>

/* 64 random bits for a file name (see the top of the file). Never fails, never blocks after the
 * first call of the process (which takes the key from arc4random). */
uint64_t yyc__name_random(void);

#endif
