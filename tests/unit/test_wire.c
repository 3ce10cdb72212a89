/* kv_wire_is_mooncake_batch, the shape kvsub counts a Mooncake master's
 * gaps by (kvsub(1) "Sequence numbers"): an array of two or more elements whose first
 * is an integer (its millisecond stamp), where vLLM's starts with a float;
 * at each of its boundaries. */
#include <stdint.h>

#include "decode/wire.h"
#include "unit.h"

static bool sniff(const uint8_t *p, size_t n)
{
	return kv_wire_is_mooncake_batch(p, n);
}

static void arrays_of_two_to_fifteen(void)
{
	static const uint8_t two[] = { 0x92, 0x01, 0x90 }, three[] = { 0x93, 0x01, 0x90, 0x00 },
			     fifteen[] = { 0x9f, 0x01 }, one[] = { 0x91, 0x01 }, empty[] = { 0x90 },
			     array16[] = { 0xdc, 0x00, 0x02, 0x01, 0x90 }, map[] = { 0x82, 0x01, 0x90 };
	ASSERT(sniff(two, sizeof two));
	ASSERT(sniff(three, sizeof three));
	ASSERT(sniff(fifteen, sizeof fifteen));
	ASSERT(!sniff(one, sizeof one));
	ASSERT(!sniff(empty, sizeof empty));
	ASSERT(!sniff(array16, sizeof array16));
	ASSERT(!sniff(map, sizeof map));
	ASSERT(!sniff(two, 1));
}

static void stamped_by_any_integer(void)
{
	/* positive fixint, u8..u64, i8..i64, negative fixint */
	static const uint8_t first[] = { 0x00, 0x7f, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3, 0xe0, 0xff };
	/* float32, float64, nil, false, a fixstr, a fixmap, an array */
	static const uint8_t not_int[] = { 0xca, 0xcb, 0xc0, 0xc2, 0xa1, 0x80, 0x90 };
	for (size_t i = 0; i < sizeof first; i++)
		ASSERT(sniff((const uint8_t[]){ 0x93, first[i] }, 2));
	for (size_t i = 0; i < sizeof not_int; i++)
		ASSERT(!sniff((const uint8_t[]){ 0x93, not_int[i] }, 2));
}

int main(void)
{
	RUN(arrays_of_two_to_fifteen);
	RUN(stamped_by_any_integer);
	return unit_done();
}
