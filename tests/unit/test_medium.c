/* kv_medium_parse: every name of every medium, in any case, and nothing
 * else: a name is matched whole, never as a prefix of a longer word nor by
 * a prefix of its own (kvdecode(1) "Media"). */
#include <string.h>

#include "decode/medium.h"
#include "unit.h"

static enum kv_medium parse(const char *s)
{
	return kv_medium_parse(s, strlen(s));
}

static void every_name_in_any_case(void)
{
	static const char *const xpu[] = { "npu", "GPU", "Xpu", "hbm", "DEVICE" };
	static const char *const cpu[] = { "cpu", "CPU_PINNED", "cpu_tier1", "Host", "memory", "DRAM" };
	static const char *const disk[] = { "disk", "SSD", "nvme", "nof_ssd", "LOCAL_DISK", "dfs",
					    "storage", "FS", "obj", "External" };
	for (size_t i = 0; i < sizeof xpu / sizeof xpu[0]; i++)
		ASSERT(parse(xpu[i]) == KV_XPU);
	for (size_t i = 0; i < sizeof cpu / sizeof cpu[0]; i++)
		ASSERT(parse(cpu[i]) == KV_CPU);
	for (size_t i = 0; i < sizeof disk / sizeof disk[0]; i++)
		ASSERT(parse(disk[i]) == KV_DISK);
}

static void names_are_matched_whole(void)
{
	static const char *const unknown[] = { "", "GPUX", "gpu ", " gpu", "gp", "cpu_", "cpu_pinnedx", "cpu_tier",
					       "CPU_TIER12", "hostx", "dis", "disks", "nvme0", "ssd_", "f", "objs",
					       "externals", "xpu\n" };
	for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
		if (parse(unknown[i]) != KV_UNKNOWN)
			printf("# '%s' is not unknown\n", unknown[i]);
		ASSERT(parse(unknown[i]) == KV_UNKNOWN);
	}
	/* the length given is the name: a longer buffer's tail is not read */
	ASSERT(kv_medium_parse("cpu_pinned", 3) == KV_CPU);
	ASSERT(kv_medium_parse("gpux", 3) == KV_XPU);
	ASSERT(kv_medium_parse("disk", 3) == KV_UNKNOWN);
	ASSERT(kv_medium_parse("cpu", 0) == KV_UNKNOWN);
}

static void normal_names(void)
{
	ASSERT_EQ_STR(kv_medium_name(KV_XPU), "xpu");
	ASSERT_EQ_STR(kv_medium_name(KV_CPU), "cpu");
	ASSERT_EQ_STR(kv_medium_name(KV_DISK), "disk");
	ASSERT_EQ_STR(kv_medium_name(KV_UNKNOWN), "unknown");
	ASSERT_EQ_STR(kv_medium_name(parse(kv_medium_name(KV_DISK))), "disk");
}

int main(void)
{
	RUN(every_name_in_any_case);
	RUN(names_are_matched_whole);
	RUN(normal_names);
	return unit_done();
}
