/* test_intscan.c's tests on the portable lane of kv_intscan_array: its
 * source is built here without SSE2 (KV_INTSCAN_PORTABLE), in place of the
 * library's, which takes SSE2 wherever the compiler has it (every x86-64),
 * so that the lane other machines take is tested on this one too. */
#define KV_INTSCAN_PORTABLE 1
#include "../../lib/base/intscan.c" /* NOLINT(bugprone-suspicious-include) */
#include "test_intscan.c"           /* NOLINT(bugprone-suspicious-include) */
