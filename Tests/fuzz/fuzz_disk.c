/*
 * fuzz_disk.c - libFuzzer target: random operation sequences against yyc_diskcache (a fresh
 * folder under $TMPDIR per input; the first byte picks the inline threshold) checked against a
 * model, data/ included (no leaked or lost file). The interpreter and the model are
 * rel_fuzz_disk_one in Tests/C/reliability_fuzz.h (shared with test_bad_input.c's fixed-seed
 * smoke). Built and run by `make fuzz` / `make fuzz-smoke`.
 */
#include "reliability_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return rel_fuzz_disk_one(data, size);
}
