#define _GNU_SOURCE /* mremap */
#include "base/table.h"

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

void *kv_slots_grow(void *p, size_t oldbytes, size_t bytes)
{
	if (!p)
		return kv_slots_alloc(bytes);
	if (bytes < MAP_LIMIT) {
		p = kv_xrealloc(p, bytes);
		memset((char *)p + oldbytes, 0, bytes - oldbytes);
		return p;
	}
	if (oldbytes < MAP_LIMIT) {
		void *q = kv_slots_alloc(bytes);
		memcpy(q, p, oldbytes);
		free(p);
		return q;
	}
#ifdef MREMAP_MAYMOVE
	/* The pages move, not the bytes: no copy, and only the added half is
	 * new memory for the kernel to clear. */
	void *q = mremap(p, oldbytes, bytes, MREMAP_MAYMOVE);
	if (q == MAP_FAILED)
		kv_die(KV_EX_SOFTWARE, "out of memory (%zu bytes)", bytes);
	madvise(q, bytes, MADV_HUGEPAGE);
	return q;
#else
	void *q = kv_slots_alloc(bytes);
	memcpy(q, p, oldbytes);
	munmap(p, oldbytes);
	return q;
#endif
}
