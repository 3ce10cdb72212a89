/* sort: sorting u64 keys with a u32 payload, and plain u64 or u32 numbers,
 * by least-significant-digit radix sort (linear time; the snapshot writer
 * sorts millions of chains).  Numbers are sorted here, not by qsort with a
 * comparator of each file's own; qsort stays for comparators that are
 * really specific (names, structs). */
#ifndef KV_SORT_H
#define KV_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Sorts keys ascending, moving vals along. */
void kv_sort_keys(uint64_t *keys, uint32_t *vals, size_t n);

/* Sort ascending. */
void kv_sort_u64(uint64_t *v, size_t n);
void kv_sort_u32(uint32_t *v, size_t n);

#endif
