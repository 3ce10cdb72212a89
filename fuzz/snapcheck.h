/* snapcheck: kvmatch's state written as a snapshot (kvmatch -o) must load
 * again (kvquery -s, kvmatch -i), whatever input built it.  The file is
 * named by the process, in TMPDIR or /tmp, and removed at once; a snapshot
 * that does not load traps, so that libFuzzer reports the input. */
#ifndef FUZZ_SNAPCHECK_H
#define FUZZ_SNAPCHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "index/index.h"
#include "index/matchstate.h"
#include "index/snap.h"
#include "index/snapload.h"
#include "index/snapstate.h"
#include "index/workers.h"

static void snapcheck(const struct kv_index *ix, const struct kv_workers *ws, const struct kv_match *m)
{
	const char *dir = getenv("TMPDIR");
	char path[512];
	struct kv_err e = { 0 };
	snprintf(path, sizeof path, "%s/kvtools-fuzz-%ld.kvsnap", dir && *dir ? dir : "/tmp", (long)getpid());
	if (!kv_snapstate_save(path, ix, ws, m, &e)) {
		fprintf(stderr, "%s\n", kv_err_msg(&e));
		abort();
	}
	struct kv_snap s;
	bool ok = kv_snapr_load(path, &s, &e);
	unlink(path);
	if (!ok) {
		fprintf(stderr, "a snapshot kvmatch wrote does not load: %s\n", kv_err_msg(&e));
		__builtin_trap();
	}
	kv_snapr_close(&s);
}

#endif
