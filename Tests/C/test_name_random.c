/*
 * test_name_random.c - the random bits of temporary and alternate file names
 * (yyc__name_random): never the same twice in a process, and a fork() child does not repeat its
 * parent's sequence (if it did, a parent and child writing into one folder would pick the same
 * temporary names, and every retry too).
 */
#include "test_support.h"

#include <stdlib.h>
#include <sys/wait.h>

#include "platform/name_random.h"

#define DRAWS 4096

static int compare_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void names_drawn_in_a_process_are_all_different(void **state) {
    (void)state;
    uint64_t *v = malloc(DRAWS * sizeof *v);
    assert_non_null(v);
    for (int i = 0; i < DRAWS; i++) v[i] = yyc__name_random();
    qsort(v, DRAWS, sizeof *v, compare_u64);
    for (int i = 1; i < DRAWS; i++) assert_true(v[i] != v[i - 1]);
    free(v);
}

/* The parent draws one name, forks; the child reports its next draws through a pipe; the parent
 * draws as many of its own. No value may appear in both. */
static void a_forked_child_does_not_repeat_its_parents_names(void **state) {
    (void)state;
    (void)yyc__name_random(); /* the parent's key exists before the fork */
    enum { N = 64 };
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        uint64_t mine[N];
        for (int i = 0; i < N; i++) mine[i] = yyc__name_random();
        _exit(write(fds[1], mine, sizeof mine) == (ssize_t)sizeof mine ? 0 : 1);
    }
    close(fds[1]);
    uint64_t child[N], parent[N];
    size_t got = 0;
    while (got < sizeof child) {
        ssize_t r = read(fds[0], (char *)child + got, sizeof child - got);
        assert_true(r > 0);
        got += (size_t)r;
    }
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < N; i++) parent[i] = yyc__name_random();
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) assert_true(child[i] != parent[j]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_drawn_in_a_process_are_all_different),
        cmocka_unit_test(a_forked_child_does_not_repeat_its_parents_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
