/* snapparts: a kvsnap snapshot of N empty partitions (models p0, p1, ...,
 * tenant "default"), for tests of the loader's bound on partitions: kvmatch
 * itself never writes more than KV_MAX_PARTITIONS.
 *   snapparts N FILE.kvsnap */
#include <stdio.h>
#include <string.h>

#include "arg.h"
#include "index/index.h"
#include "index/matchstate.h"
#include "index/snap.h"
#include "index/snapstate.h"
#include "base/util.h"
#include "index/workers.h"

int main(int argc, char **argv)
{
	kv_set_prog(argv);
	if (argc != 3)
		kv_die(KV_EX_USAGE, "usage: snapparts N FILE.kvsnap");
	uint64_t n = arg_u64(argv[1]);
	struct kv_index ix;
	kv_index_init(&ix);
	for (uint64_t i = 0; i < n; i++) {
		char model[32];
		int len = snprintf(model, sizeof model, "p%llu", (unsigned long long)i);
		kv_index_partition(&ix, model, (size_t)len, "default", 7);
	}
	/* nothing else: no workers, an idle matcher */
	struct kv_workers ws;
	kv_workers_init(&ws);
	struct kv_match m;
	struct kv_match_opts o = kv_match_opts_default();
	o.log_mask = 0;
	kv_match_init(&m, &ix, &ws, &o);
	struct kv_err e = { 0 };
	bool ok = kv_snapstate_save(argv[2], &ix, &ws, &m, &e);
	if (!ok)
		kv_err_print(&e);
	kv_match_free(&m);
	kv_workers_free(&ws);
	kv_index_free(&ix);
	return ok ? 0 : KV_EX_IOERR;
}
