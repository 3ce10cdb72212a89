#include "base/intscan.h"
#include "base/util.h"

#include <stdbool.h>
#if defined(__SSE2__) && !defined(KV_INTSCAN_PORTABLE)
#include <emmintrin.h>
#endif

/* JSON's whitespace (RFC 8259); yajl also takes \v and \f, which JSON does
 * not: those are left to the caller's parser, as anything unusual is. */
static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && is_blank(*p))
		p++;
	return p;
}

#define BYTES(b) (0x0101010101010101u * (b))

/* The 8 bytes at p as a little-endian word, whatever the host's order
 * (compilers make it one load where that order is little-endian). */
static inline uint64_t load_le64(const char *p)
{
	const unsigned char *b = (const unsigned char *)p;
	return (uint64_t)b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 | (uint64_t)b[3] << 24 |
	       (uint64_t)b[4] << 32 | (uint64_t)b[5] << 40 | (uint64_t)b[6] << 48 | (uint64_t)b[7] << 56;
}

/* The index of the lowest set bit of m, which is not 0. */
static unsigned lowest_bit(uint64_t m)
{
#if defined(__GNUC__)
	return (unsigned)__builtin_ctzll(m);
#else
	unsigned i = 0;
	for (; !(m & 1); m >>= 1)
		i++;
	return i;
#endif
}

/* Bit 7 of each byte of w set where that byte is not a digit: w ^ '0' is
 * below 10 there, which (byte & 0x7f) + 0x76 tells in its top bit with no
 * carry between bytes. */
static uint64_t nondigit_bytes(uint64_t w)
{
	uint64_t t = w ^ BYTES('0');
	return (((t & BYTES(0x7f)) + BYTES(0x76)) | t) & BYTES(0x80);
}

/* How many of the 8 characters of w are digits before the first that is not. */
static unsigned leading_digits(uint64_t w)
{
	uint64_t nondigit = nondigit_bytes(w);
	return nondigit ? lowest_bit(nondigit) / 8 : 8;
}

/* The value of 8 digits (0 to 9, one a byte, the first the most
 * significant, in the lowest byte): pairs of bytes, then of 16-bit lanes,
 * then of 32-bit lanes, each step one multiply that adds 10, 100, 10^4
 * times the first of each pair to the second in the upper lane, moved down
 * (2561 = 10 * 2^8 + 1, and so on: exact for every 8 digits, all checked). */
static uint64_t eight_digits(uint64_t d)
{
	d = (d * 2561) >> 8;
	d = ((d & 0x00ff00ff00ff00ffu) * 6553601) >> 16;
	return ((d & 0x0000ffff0000ffffu) * 42949672960001u) >> 32;
}

/* The value of the k digits (1 to 8) that w starts with. */
static uint64_t value_of_digits(uint64_t w, unsigned k)
{
	/* the k digits moved to the top bytes, zeros (leading ones) below;
	 * 8 * (8 - k) is -8k modulo 64, one operation fewer */
	return eight_digits((w ^ BYTES('0')) << ((0u - 8u * k) & 63u));
}

/* Up to 8 digits at p: how many, and their value in *chunk.  8 bytes at a
 * time while the line has them, which is most of what a query line is. */
static unsigned digit_chunk(const char *p, const char *end, uint64_t *chunk)
{
	unsigned k = 0;
	if (end - p >= 8) {
		uint64_t w = load_le64(p);
		k = leading_digits(w);
		*chunk = k ? value_of_digits(w, k) : 0;
		return k;
	}
	uint64_t x = 0;
	for (; k < 8 && p + k < end && is_digit(p[k]); k++)
		x = x * 10 + (uint64_t)(p[k] - '0');
	*chunk = x;
	return k;
}

/* The decimal digits at p as JSON writes an integer ("0", or no leading
 * zero), at most 20 of them and their value below 2^64: the end of the
 * digits, or NULL. */
static const char *read_digits(const char *p, const char *end, uint64_t *v)
{
	static const uint64_t pow10[9] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000 };
	const char *start = p;
	uint64_t x = 0, chunk;
	unsigned k;
	do {
		k = digit_chunk(p, end, &chunk);
		size_t ndigits = (size_t)(p - start) + k;
		/* 19 digits never overflow (10^19 - 1 < 2^64); 20 are 16 + 4.  (k
		 * is at most 8: its test is for static analysers, which lose it.) */
		if (k > 8 || ndigits > 20 || (ndigits == 20 && x > (UINT64_MAX - chunk) / 10000))
			return NULL;
		x = x * pow10[k] + chunk;
		p += k;
	} while (k == 8);
	if (p == start || (*start == '0' && p - start > 1))
		return NULL;
	*v = x;
	return p;
}

/* An integer, signed (i64, as its two's complement) or not (u64). */
static const char *read_integer(const char *p, const char *end, bool is_signed, uint64_t *v)
{
	bool neg = *p == '-';
	if (neg && !is_signed)
		return NULL;
	p = read_digits(p + neg, end, v);
	if (!p || (is_signed && *v > (uint64_t)INT64_MAX + neg))
		return NULL;
	if (neg)
		*v = 0 - *v;
	return p;
}

static int hex_digit(char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A string of hex digits at p (its opening quote), as kv_hash_value_str
 * reads one: 0x or 0X optional, then digits whose value fits in 64 bits
 * (leading zeros, then at most 16 more).  An escape, a 17th significant
 * digit or any other character is for the caller's parser. */
static const char *read_hex_string(const char *p, const char *end, uint64_t *v)
{
	p++;
	if (end - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	const char *start = p;
	while (p < end && *p == '0')
		p++;
	const char *significant = p;
	uint64_t x = 0;
	int d;
	while (p < end && p - significant < 16 && (d = hex_digit(*p)) >= 0) {
		x = x << 4 | (uint64_t)d;
		p++;
	}
	if (p == start || p == end || *p != '"')
		return NULL;
	*v = x;
	return p + 1;
}

/* Where the values go: kv_intscan_array's u64s, or (narrow)
 * kv_intscan_tokens' u32s, each value's low 32 bits; n and cap count
 * values either way. */
struct sink {
	bool narrow;
	uint64_t *v64;
	uint32_t *v32;
	size_t n, cap;
};

/* Room for `more` values after the n there. */
static void sink_reserve(struct sink *k, size_t more)
{
	if (k->cap - k->n >= more)
		return;
	if (k->narrow)
		k->v32 = kv_xgrow(k->v32, &k->cap, k->n + more, sizeof *k->v32);
	else
		k->v64 = kv_xgrow(k->v64, &k->cap, k->n + more, sizeof *k->v64);
}

static const char *read_element(const char *p, const char *end, enum kv_intscan_kind kind, uint64_t *v)
{
	if (kind == KV_INTSCAN_U64_HEX && *p == '"')
		return read_hex_string(p, end, v);
	return read_integer(p, end, kind == KV_INTSCAN_I64, v);
}

#if defined(__SSE2__) && !defined(KV_INTSCAN_PORTABLE)
/* The value of the 16 digits at p, the first the most significant: in
 * 16-bit lanes each pair of digits (the first times 10 plus the second),
 * then pairs of pairs and pairs of those by multiply-adds of neighbouring
 * lanes, two values of 8 digits in the low 64 bits; 10 operations where
 * two words of 8 digits took twice as many (block hashes are 19 and 20
 * digits, a by-hash line 750 of them). */
static uint64_t sixteen_digits(const char *p)
{
	__m128i d = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)p), _mm_set1_epi8('0'));
	__m128i pairs = _mm_add_epi16(_mm_mullo_epi16(_mm_and_si128(d, _mm_set1_epi16(0xff)), _mm_set1_epi16(10)),
				      _mm_srli_epi16(d, 8));
	__m128i fours = _mm_madd_epi16(pairs, _mm_set1_epi32(1 << 16 | 100));
	__m128i eights = _mm_madd_epi16(_mm_packs_epi32(fours, fours), _mm_set1_epi32(1 << 16 | 10000));
	uint64_t two = (uint64_t)_mm_cvtsi128_si64(eights);
	return (two & 0xffffffffu) * 100000000 + (two >> 32);
}
#else
/* The value of the 16 digits at p, the first the most significant. */
static uint64_t sixteen_digits(const char *p)
{
	return value_of_digits(load_le64(p), 8) * 100000000 + value_of_digits(load_le64(p + 8), 8);
}
#endif

/* The value of the k digits (1 to 20) at p, which has 8 bytes more than
 * the shorter ones: in parts of 8 or 16 digits from the end; false beyond
 * 2^64 - 1. */
static bool value_of_run(const char *p, unsigned k, uint64_t *v)
{
	if (k <= 8) {
		*v = value_of_digits(load_le64(p), k);
		return true;
	}
	if (k <= 16) {
		*v = value_of_digits(load_le64(p), k - 8) * 100000000 + value_of_digits(load_le64(p + k - 8), 8);
		return true;
	}
	/* the first k - 16 digits, at most 4, and the 16 after them */
	uint64_t high = value_of_digits(load_le64(p), k - 16), low = sixteen_digits(p + k - 16);
	/* 2^64 - 1 is 1844 * 10^16 + 6744073709551615 */
	if (high >= 1844 && (high > 1844 || low > 6744073709551615u))
		return false;
	*v = high * 10000000000000000u + low;
	return true;
}

/* A block of the fast lane, and the bytes that must follow it in the
 * line: the 8 loaded at an element's start. */
enum { BLOCK = 64, BLOCK_TAIL = 8 };

#if defined(__SSE2__) && !defined(KV_INTSCAN_PORTABLE)
/* A 64-byte block at p as two bit sets, bit i for byte i: its commas, and
 * what is neither a comma nor a digit.  16 bytes a step (SSE2, in every
 * x86-64): a comparison a class and a byte mask, where the words of the
 * portable version below took some 25 operations for 8 bytes, most of a
 * token's time. */
static void block_masks(const char *p, uint64_t *commas, uint64_t *others)
{
	const __m128i comma = _mm_set1_epi8(','), zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9);
	uint64_t c = 0, o = 0;
	for (unsigned i = 0; i < BLOCK / 16; i++) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
		__m128i d = _mm_sub_epi8(x, zero); /* a digit's value, below 10 unsigned only for digits */
		__m128i digit = _mm_cmpeq_epi8(_mm_min_epu8(d, nine), d), is_comma = _mm_cmpeq_epi8(x, comma);
		c |= (uint64_t)(unsigned)_mm_movemask_epi8(is_comma) << (16 * i);
		o |= (uint64_t)(~(unsigned)_mm_movemask_epi8(_mm_or_si128(digit, is_comma)) & 0xffffu) << (16 * i);
	}
	*commas = c;
	*others = o;
}
#else
/* Bit 7 of each byte of w set where that byte is c. */
static uint64_t bytes_equal(uint64_t w, char c)
{
	uint64_t x = w ^ BYTES((unsigned char)c);
	return ~(((x & BYTES(0x7f)) + BYTES(0x7f)) | x) & BYTES(0x80);
}

/* Bit 7 of each byte gathered into the byte's index: bit i of the result
 * is bit 7 of byte i (the multiply puts each in the top byte, no two alike). */
static uint64_t gather_bytes(uint64_t m)
{
	return ((m >> 7) * 0x0102040810204080u) >> 56;
}

/* A 64-byte block at p as two bit sets, bit i for byte i: its commas, and
 * what is neither a comma nor a digit. */
static void block_masks(const char *p, uint64_t *commas, uint64_t *others)
{
	uint64_t c = 0, o = 0;
	for (unsigned i = 0; i < BLOCK / 8; i++) {
		uint64_t w = load_le64(p + 8 * i), comma = bytes_equal(w, ','), other = nondigit_bytes(w) & ~comma;
		c |= gather_bytes(comma) << (8 * i);
		if (other) /* rare where the lane pays */
			o |= gather_bytes(other) << (8 * i);
	}
	*commas = c;
	*others = o;
}
#endif

/* The elements of a block that its commas end, each converted knowing its
 * length, from *start (the first element's first digit, which may be in a
 * block before) on: appended to out (room made), *start moved past the
 * last comma.  False when the array is not ours (",,", a leading zero,
 * beyond the range). */
static inline bool convert_block(const char *block, uint64_t commas, const char **start, bool is_signed,
				 struct sink *out)
{
	const char *s = *start;
	/* values stored through locals: a store through out->v64 could change
	 * out->n (both are u64), which was read again each time */
	size_t n = out->n;
	uint64_t *v64 = out->v64;
	uint32_t *v32 = out->v32;
	for (; commas; commas &= commas - 1) {
		const char *comma = block + lowest_bit(commas);
		size_t k = (size_t)(comma - s);
		uint64_t w = load_le64(s), x;
		if (k == 0 || k > 20 || (k > 1 && (w & 0xff) == '0'))
			return false; /* ",,", a leading zero, beyond the range */
		if (k <= 8) /* as tokens are: below 10^8, in every range */
			x = value_of_digits(w, (unsigned)k);
		else if (!value_of_run(s, (unsigned)k, &x) || (is_signed && x > INT64_MAX))
			return false;
		if (out->narrow)
			v32[n++] = (uint32_t)x;
		else
			v64[n++] = x;
		s = comma + 1;
	}
	out->n = n;
	*start = s;
	return true;
}

/* The fast lane, for the run of elements that starts at p when they are
 * bare digits and bare commas, as serde_json and kvgen write them: a block
 * of 64 bytes is classified at once, then each element between two commas
 * is converted knowing its length, so no element waits for the one before.
 * Appends every element of the run that a comma ends and returns where the
 * next begins (p itself if none), or NULL when the array is not ours. */
static const char *append_digit_run(const char *p, const char *end, bool is_signed, struct sink *out, size_t max)
{
	const char *start = p, *block = p;
	while (end - block >= BLOCK + BLOCK_TAIL && out->n + BLOCK <= max) {
		uint64_t commas, others;
		block_masks(block, &commas, &others);
		if (others)
			commas &= (others & (0 - others)) - 1; /* the commas before the first other byte */
		sink_reserve(out, BLOCK);
		if (!convert_block(block, commas, &start, is_signed, out))
			return NULL;
		if (others)
			break;
		block += BLOCK;
	}
	return start;
}

/* The next element the slow lane, byte by byte: anything but bare digits
 * (signs, blanks, strings), and the last element. */
static const char *append_element(const char *p, const char *end, enum kv_intscan_kind kind, struct sink *out,
				  size_t max)
{
	uint64_t v;
	if (p == end || out->n >= max || !(p = read_element(p, end, kind, &v)))
		return NULL;
	sink_reserve(out, 1);
	if (out->narrow)
		out->v32[out->n++] = (uint32_t)v;
	else
		out->v64[out->n++] = v;
	return p;
}

/* Appends the elements up to the ']' to out: the offset of the ']', or
 * KV_INTSCAN_DECLINED with out->n past its first value. */
static size_t append_elements(const char *s, const char *end, enum kv_intscan_kind kind, struct sink *out,
			      size_t max)
{
	const char *p = skip_blanks(s, end);
	if (p < end && *p == ']')
		return (size_t)(p - s);
	for (;;) {
		/* the fast lane where an element follows a comma or '[' directly */
		if (p < end && is_digit(*p) && (p == s || p[-1] == ',')) {
			if (!(p = append_digit_run(p, end, kind == KV_INTSCAN_I64, out, max)))
				return KV_INTSCAN_DECLINED;
			p = skip_blanks(p, end);
		}
		if (!(p = append_element(p, end, kind, out, max)))
			return KV_INTSCAN_DECLINED;
		p = skip_blanks(p, end);
		if (p < end && *p == ']')
			return (size_t)(p - s);
		if (p == end || *p != ',')
			return KV_INTSCAN_DECLINED;
		p = skip_blanks(p + 1, end);
	}
}

size_t kv_intscan_array(const char *s, size_t len, enum kv_intscan_kind kind, struct kv_u64s *out, size_t max)
{
	struct sink k = { false, out->v, NULL, out->n, out->cap };
	size_t at = append_elements(s, s + len, kind, &k, max);
	out->v = k.v64, out->cap = k.cap;
	if (at != KV_INTSCAN_DECLINED)
		out->n = k.n;
	return at;
}

size_t kv_intscan_tokens(const char *s, size_t len, struct kv_u32s *out, size_t max)
{
	struct sink k = { true, NULL, out->v, out->n, out->cap };
	size_t at = append_elements(s, s + len, KV_INTSCAN_I64, &k, max);
	out->v = k.v32, out->cap = k.cap;
	if (at != KV_INTSCAN_DECLINED)
		out->n = k.n;
	return at;
}
