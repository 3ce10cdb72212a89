#include "table.h"

#include <sys/mman.h>

#define MAP_LIMIT (1u << 20)

void *kv_slots_alloc(size_t bytes)
{
	if (bytes < MAP_LIMIT)
		return kv_xcalloc(1, bytes);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		kv_die(KV_EX_SOFTWARE, "out of memory (%zu bytes)", bytes);
	/* Probes land anywhere in a big table: huge pages save a TLB miss each. */
	madvise(p, bytes, MADV_HUGEPAGE);
	return p;
}

void kv_slots_free(void *p, size_t bytes)
{
	if (!p)
		return;
	if (bytes < MAP_LIMIT)
		free(p);
	else
		munmap(p, bytes);
}
