/* sort: sorting u64 keys with a u32 payload, by least-significant-digit
 * radix sort (linear time; the snapshot writer sorts millions of chains). */
#ifndef KV_SORT_H
#define KV_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Sorts keys ascending, moving vals along. */
void kv_sort_keys(uint64_t *keys, uint32_t *vals, size_t n);

#endif
