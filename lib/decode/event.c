#include "decode/event.h"

const char *kv_format_name(enum kv_format f)
{
	static const char *const names[] = { "vllm", "memcache", "mooncake", "dynamo" };
	return names[f <= KV_FMT_DYNAMO ? f : 0];
}

const char *kv_evtype_name(enum kv_evtype t)
{
	static const char *const names[] = { "stored", "removed", "cleared" };
	return names[t <= KV_EV_CLEARED ? t : 0];
}

bool kv_dp_rank_valid(int64_t dp_rank)
{
	return dp_rank >= 0 && dp_rank <= (int64_t)UINT32_MAX;
}
