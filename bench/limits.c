/* bench/limits.c: this machine's limits, the yardsticks of bench/run's
 * ratio rows.  Prints two lines:
 *   xxh3_16_tokens_ns T   one XXH3-64 (seed 1337) of a 16-token block (64
 *                         bytes of u32 little-endian tokens), the hash
 *                         kvquery computes per block of a /query line,
 *                         averaged over many different blocks
 *   random_read_ns T      one random 8-byte read from a 256 MiB table with
 *                         the addresses known ahead in batches of 32, as a
 *                         batched probe knows those of one 32-block event:
 *                         the reads of a batch overlap, and a batch waits
 *                         for the one before (its addresses depend on it).
 *                         Unbatched, the processor overlaps about 45 reads
 *                         (3.7 ns a read here); one at a time, 166 ns.
 * With a FILE, prints instead this machine's speed on that file's bytes
 * held in memory (the yardsticks of the query MB/s rows):
 *   memchr_mib_s R        memchr for a byte that is not there, MiB/s
 *   memcpy_mib_s R        memcpy to another buffer, MiB/s
 * Usage: limits [FILE]  (about a second) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#define BLOCKS (1u << 16)        /* 4 MiB of blocks: the token stream is not all in L1 */
#define HASH_ROUNDS 32
#define TABLE_WORDS (1u << 25)   /* 256 MiB of u64 */
#define READS (1u << 24)
#define READ_ROUNDS 3
#define READ_BATCH 32

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* xorshift64: enough for tokens and addresses, and the same on every run */
static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double hash_ns(uint64_t *seed)
{
	uint32_t *tok = malloc((size_t)BLOCKS * 16 * sizeof *tok);
	if (!tok) return -1;
	for (size_t i = 0; i < (size_t)BLOCKS * 16; i++) {
		/* token ids below 2^17, stored little-endian as kvquery hashes them */
		uint32_t v = (uint32_t)(next(seed) & 0x1ffff);
		unsigned char *p = (unsigned char *)&tok[i];
		p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8);
		p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
	}
	/* the sum keeps the compiler from dropping the hashes; feeding it back
	 * into the seed would serialise them, which kvquery's are not */
	uint64_t sum = 0;
	double best = -1;
	for (int r = 0; r < HASH_ROUNDS; r++) {
		double t0 = now_ns();
		for (size_t b = 0; b < BLOCKS; b++)
			sum += XXH3_64bits_withSeed(tok + b * 16, 64, 1337);
		double t = (now_ns() - t0) / BLOCKS;
		if (best < 0 || t < best) best = t;
	}
	free(tok);
	if (sum == 42) fputc(' ', stderr);
	return best;
}

static double read_ns(uint64_t *seed)
{
	uint64_t *table = malloc((size_t)TABLE_WORDS * sizeof *table);
	uint32_t *idx = malloc((size_t)READS * sizeof *idx);
	if (!table || !idx) { free(table); free(idx); return -1; }
	/* every page written first: no page fault is timed */
	for (size_t i = 0; i < TABLE_WORDS; i++) table[i] = i;
	for (size_t i = 0; i < READS; i++) idx[i] = (uint32_t)(next(seed) % TABLE_WORDS);
	uint64_t sum = 0;
	double best = -1;
	for (int r = 0; r < READ_ROUNDS; r++) {
		double t0 = now_ns();
		uint64_t dep = 0;
		for (size_t i = 0; i < READS; i += READ_BATCH) {
			uint64_t x = 0;
			for (size_t j = 0; j < READ_BATCH; j++)
				x += table[(idx[i + j] ^ dep) % TABLE_WORDS];
			dep = x & 1;
			sum += x;
		}
		double t = (now_ns() - t0) / READS;
		if (best < 0 || t < best) best = t;
	}
	free(table);
	free(idx);
	if (sum == 42) fputc(' ', stderr);
	return best;
}

/* FILE's bytes read into memory; NULL when it cannot be read. */
static char *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 20, n = 0, got;
	char *b = malloc(cap);
	while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			char *nb = realloc(b, cap *= 2);
			if (!nb) {
				free(b);
				b = NULL;
			}
			b = nb;
		}
	}
	if (ferror(f)) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = n;
	return b;
}

/* memchr and memcpy over FILE's bytes in memory, the best of some passes. */
static int file_speeds(const char *path)
{
	size_t len;
	char *b = read_whole(path, &len), *d = b ? malloc(len ? len : 1) : NULL;
	if (!b || !d || !len) {
		fprintf(stderr, "limits: %s: cannot read it, or empty\n", path);
		free(b);
		free(d);
		return 66;
	}
	double best_chr = -1, best_cpy = -1;
	size_t found = 0;
	for (int r = 0; r < 5; r++) {
		double t0 = now_ns();
		found += memchr(b, '\v', len) != NULL;
		double t1 = now_ns();
		memcpy(d, b, len);
		double t2 = now_ns();
		if (best_chr < 0 || t1 - t0 < best_chr) best_chr = t1 - t0;
		if (best_cpy < 0 || t2 - t1 < best_cpy) best_cpy = t2 - t1;
	}
	if (found == 42 || d[len / 2] != b[len / 2]) fputc(' ', stderr);
	printf("memchr_mib_s %.0f\nmemcpy_mib_s %.0f\n", len / 1048576.0 / (best_chr / 1e9),
	       len / 1048576.0 / (best_cpy / 1e9));
	free(b);
	free(d);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2) {
		fputs("usage: limits [FILE] (prints xxh3_16_tokens_ns and random_read_ns, or FILE's memchr_mib_s and memcpy_mib_s)\n",
		      stderr);
		return 64;
	}
	if (argc == 2)
		return file_speeds(argv[1]);
	uint64_t seed = 0x9e3779b97f4a7c15u;
	double h = hash_ns(&seed), r = read_ns(&seed);
	if (h < 0 || r < 0) {
		fputs("limits: out of memory\n", stderr);
		return 70;
	}
	/* the best round of each: the machine's limit, not its noise */
	printf("xxh3_16_tokens_ns %.2f\nrandom_read_ns %.2f\n", h, r);
	return 0;
}
