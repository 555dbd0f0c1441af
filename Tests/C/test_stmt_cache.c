/*
 * test_stmt_cache.c - the prepared-statement cache (stmt_cache.c): a statement per SQL text,
 * and the fast path that finds a string literal's statement by the literal's address.
 */
#include "test_support.h"

#include "kv/stmt_cache.h"

/* Static text that never changes: literals as far as the cache is concerned. More of them
 * than the fast path has slots, so that several share a slot. */
#define NTEXTS (3 * YYC__STMT_FAST_SLOTS + 7)
static char texts[NTEXTS][32];

static sqlite3 *open_memory_db(void) {
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    return db;
}

/* Steps s (a "select N;") and checks that it returns n. */
static void expect_selects(sqlite3_stmt *s, int n) {
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(s, 0), n);
    yyc__stmt_done(s);
}

static void a_literal_gets_the_statement_of_its_text(void **state) {
    (void)state;
    sqlite3 *db = open_memory_db();
    yyc__stmt_cache c;
    yyc__stmt_cache_init(&c, db);
    static const char sql[] = "select 42;";
    char copy[sizeof sql];
    memcpy(copy, sql, sizeof sql);
    sqlite3_stmt *by_text = NULL, *by_literal = NULL, *again = NULL;
    assert_int_equal(yyc__stmt_cache_get(&c, copy, &by_text), SQLITE_OK);
    assert_int_equal(yyc__stmt_cache_get_literal(&c, sql, &by_literal), SQLITE_OK);
    assert_int_equal(yyc__stmt_cache_get_literal(&c, sql, &again), SQLITE_OK);
    assert_ptr_equal(by_text, by_literal); /* one statement per text */
    assert_ptr_equal(by_literal, again);
    expect_selects(again, 42);
    yyc__stmt_cache_clear(&c);
    sqlite3_close(db);
}

static void literals_that_share_a_slot_each_get_their_own_statement(void **state) {
    (void)state;
    sqlite3 *db = open_memory_db();
    yyc__stmt_cache c;
    yyc__stmt_cache_init(&c, db);
    for (int i = 0; i < NTEXTS; i++) snprintf(texts[i], sizeof texts[i], "select %d;", i);
    for (int round = 0; round < 3; round++) { /* in turn: every slot is taken over many times */
        for (int k = 0; k < NTEXTS; k++) {
            int i = (k * 37 + round * 11) % NTEXTS;
            sqlite3_stmt *s = NULL;
            assert_int_equal(yyc__stmt_cache_get_literal(&c, texts[i], &s), SQLITE_OK);
            assert_string_equal(sqlite3_sql(s), texts[i]);
            expect_selects(s, i);
        }
    }
    assert_int_equal(c.map.count, NTEXTS); /* each text prepared once */
    yyc__stmt_cache_clear(&c);
    sqlite3_close(db);
}

static void a_cleared_cache_prepares_a_literal_again_on_its_new_connection(void **state) {
    (void)state;
    static const char sql[] = "select 7;";
    sqlite3 *db = open_memory_db();
    yyc__stmt_cache c;
    yyc__stmt_cache_init(&c, db);
    sqlite3_stmt *first = NULL;
    assert_int_equal(yyc__stmt_cache_get_literal(&c, sql, &first), SQLITE_OK);
    expect_selects(first, 7);
    yyc__stmt_cache_clear(&c); /* finalizes it: the fast slot must not keep it */
    sqlite3_close(db);

    db = open_memory_db(); /* as a reopened manifest does */
    yyc__stmt_cache_init(&c, db);
    sqlite3_stmt *second = NULL;
    assert_int_equal(yyc__stmt_cache_get_literal(&c, sql, &second), SQLITE_OK);
    assert_ptr_equal(sqlite3_db_handle(second), db);
    expect_selects(second, 7);
    yyc__stmt_cache_clear(&c);
    for (size_t i = 0; i < YYC__STMT_FAST_SLOTS; i++) assert_null(c.fast[i].sql);
    sqlite3_close(db);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(a_literal_gets_the_statement_of_its_text),
    cmocka_unit_test(literals_that_share_a_slot_each_get_their_own_statement),
    cmocka_unit_test(a_cleared_cache_prepares_a_literal_again_on_its_new_connection),
};

YYC_TEST_MAIN(tests)
