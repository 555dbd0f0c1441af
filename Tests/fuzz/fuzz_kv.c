/*
 * fuzz_kv.c - libFuzzer target: random operation sequences against yyc_kv (YYC_KV_MIXED, a
 * fresh folder under $TMPDIR per input) checked against a model. The interpreter and the model
 * are rel_fuzz_kv_one in Tests/C/reliability_fuzz.h (shared with test_bad_input.c's fixed-seed
 * smoke); it aborts with the failing operation on the first disagreement. Built and run by
 * `make fuzz` / `make fuzz-smoke`.
 */
#include "reliability_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return rel_fuzz_kv_one(data, size); }
