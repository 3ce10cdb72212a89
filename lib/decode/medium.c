#include "decode/medium.h"

#include <stdbool.h>
#include <strings.h>

static const char *const xpu_names[] = { "npu", "gpu", "xpu", "hbm", "device", NULL };
static const char *const cpu_names[] = { "cpu", "cpu_pinned", "cpu_tier1", "host", "memory", "dram", NULL };
static const char *const disk_names[] = { "disk", "ssd", "nvme", "nof_ssd", "local_disk", "dfs",
					  "storage", "fs", "obj", "external", NULL };

static bool listed(const char *const *names, const char *s, size_t n)
{
	for (; *names; names++) {
		size_t i = 0;
		while ((*names)[i] && i < n && (*names)[i] == (s[i] | ((s[i] >= 'A' && s[i] <= 'Z') ? 0x20 : 0)))
			i++;
		if (i == n && (*names)[i] == 0)
			return true;
	}
	return false;
}

enum kv_medium kv_medium_parse(const char *s, size_t n)
{
	if (listed(xpu_names, s, n))
		return KV_XPU;
	if (listed(cpu_names, s, n))
		return KV_CPU;
	if (listed(disk_names, s, n))
		return KV_DISK;
	return KV_UNKNOWN;
}

const char *kv_medium_name(enum kv_medium m)
{
	static const char *const names[] = { "xpu", "cpu", "disk", "unknown" };
	return names[m <= KV_UNKNOWN ? m : KV_UNKNOWN];
}
