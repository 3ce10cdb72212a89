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
	/* Small pages, not huge ones: the bench's VM hands out memory a
	 * process never had slowly the first time in huge pages (a 512 MiB
	 * mapping: 1,411 ms to touch, then 24 ms each time after; in 4 KiB
	 * pages 198-254 ms every time), and kvmatch's tables are such memory.
	 * The cluster capture without them (6 + 6 interleaved runs): 5.09-5.84
	 * s where it took 5.41-6.08, system time 0.30-0.75 s where it was
	 * 0.73-1.19; user time 1-4% more (the TLB misses huge pages save),
	 * which is what a machine without that first-touch cost gives up. */
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
	return q;
#else
	void *q = kv_slots_alloc(bytes);
	memcpy(q, p, oldbytes);
	munmap(p, oldbytes);
	return q;
#endif
}
