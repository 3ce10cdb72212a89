#!/usr/bin/env bats
# make install and make uninstall, into a scratch DESTDIR.
load helper

@test "make install puts exactly the programs, pages, completions and samples; uninstall removes them" {
	cd "$ROOT"
	run make -s install DESTDIR="$T/dest" PREFIX=/usr/local
	assert_success
	cd "$T/dest"
	run bash -c "find . -type f | sort"
	assert_output "./usr/local/bin/kvdecode
./usr/local/bin/kvgen
./usr/local/bin/kvmatch
./usr/local/bin/kvnats
./usr/local/bin/kvpub
./usr/local/bin/kvquery
./usr/local/bin/kvstat
./usr/local/bin/kvsub
./usr/local/share/bash-completion/completions/kvdecode
./usr/local/share/bash-completion/completions/kvgen
./usr/local/share/bash-completion/completions/kvmatch
./usr/local/share/bash-completion/completions/kvnats
./usr/local/share/bash-completion/completions/kvpub
./usr/local/share/bash-completion/completions/kvquery
./usr/local/share/bash-completion/completions/kvstat
./usr/local/share/bash-completion/completions/kvsub
./usr/local/share/kvtools/examples/routing-experiment.png
./usr/local/share/kvtools/examples/routing-experiment.sh
./usr/local/share/kvtools/queries.jsonl
./usr/local/share/kvtools/registrations.jsonl
./usr/local/share/kvtools/sample.kvcap
./usr/local/share/kvtools/traces/README.md
./usr/local/share/kvtools/traces/conversation-300.jsonl
./usr/local/share/kvtools/traces/conversation_trace.jsonl.gz
./usr/local/share/man/man1/kvdecode.1
./usr/local/share/man/man1/kvgen.1
./usr/local/share/man/man1/kvmatch.1
./usr/local/share/man/man1/kvnats.1
./usr/local/share/man/man1/kvpub.1
./usr/local/share/man/man1/kvquery.1
./usr/local/share/man/man1/kvstat.1
./usr/local/share/man/man1/kvsub.1
./usr/local/share/man/man5/kvcap.5
./usr/local/share/man/man5/kvsnap.5
./usr/local/share/man/man7/kvtools.7
./usr/local/share/zsh/site-functions/_kvdecode
./usr/local/share/zsh/site-functions/_kvgen
./usr/local/share/zsh/site-functions/_kvmatch
./usr/local/share/zsh/site-functions/_kvnats
./usr/local/share/zsh/site-functions/_kvpub
./usr/local/share/zsh/site-functions/_kvquery
./usr/local/share/zsh/site-functions/_kvstat
./usr/local/share/zsh/site-functions/_kvsub"
	# the installed programs run, the installed pages render
	for p in kvsub kvdecode kvmatch kvquery kvgen kvpub kvstat kvnats; do
		run usr/local/bin/$p --version
		assert_success
		assert_output --regexp "^$p [0-9.]+$"
	done
	for page in usr/local/share/man/man*/*; do
		run man -l "$page"
		assert_success
		[ "${#output}" -gt 500 ]
	done
	# the installed samples work with the installed programs
	usr/local/bin/kvmatch -q -r usr/local/share/kvtools/registrations.jsonl --log none -o s.kvsnap usr/local/share/kvtools/sample.kvcap
	run usr/local/bin/kvquery -s s.kvsnap usr/local/share/kvtools/queries.jsonl
	assert_success
	rm s.kvsnap
	cd "$ROOT"
	run make -s uninstall DESTDIR="$T/dest" PREFIX=/usr/local
	assert_success
	assert_equal "$(find "$T/dest" -type f | wc -l)" 0
}

# The routing experiment, run where make install put it: it must find the
# installed trace and kvgen with no checkout on PATH.
@test "the installed routing experiment finds its trace and kvgen; TRACE, KVGEN and GNUPLOT override them" {
	cd "$ROOT"
	make -s install DESTDIR="$T/dest" PREFIX=/usr/local
	cd "$T"
	local share=$T/dest/usr/local/share/kvtools bin=$T/dest/usr/local/bin
	local script=$share/examples/routing-experiment.sh files
	files="affinity.dat affinity.json kv-xpu.dat kv-xpu.json kv-xpu2.dat kv-xpu2.json kv.dat kv.json random.dat random.json round-robin.dat round-robin.json"
	# TRACE: every 8th of the first 300 requests, 38 over 102 s; no gnuplot
	zcat "$share/traces/conversation_trace.jsonl.gz" | head -300 | awk 'NR % 8 == 1' > t38.jsonl
	run --separate-stderr env PATH=/usr/bin:/bin TRACE="$T/t38.jsonl" GNUPLOT=no-gnuplot "$script" a
	assert_success
	assert_output "| policy | weights | served from cache | from xpu | from cpu (pool) | requests per worker |
|---|---|---:|---:|---:|---|
| random | - | 2.6% | 1.2% | 1.4% | 0 to 3 |
| round-robin | - | 3.3% | 0% | 3.3% | 0 to 1 |
| affinity (cache affinity only) | 1,1,0 | 4.3% | 4.3% | 0% | 0 to 38 |
| kv (affinity + load) | 1,0,0 | 4.1% | 3.3% | 0.8% | 0 to 5 |
| kv (affinity + load) | 2,1,0 | 4.1% | 3.4% | 0.7% | 0 to 6 |
| kv (affinity + load) | 1,1,0 | 4.1% | 3.3% | 0.8% | 0 to 5 |"
	assert_equal "$stderr" "routing-experiment.sh: no-gnuplot not found: plot skipped (the data is in a/*.dat)"
	assert_equal "$(cat a/table.md)" "$output"
	assert_equal "$(ls a | tr '\n' ' ')" "$files runs.txt table.md "
	assert_equal "$(jq -c '[.requests, (.windows | length)]' a/kv.json)" "[38,2]"
	assert_equal "$(cat a/kv.dat | wc -l)" 2
	# the installed trace, through a KVGEN that serves its first 40 requests
	printf '#!/bin/sh\nexec "%s" "$@" --limit 40 --window 5\n' "$bin/kvgen" > kvgen40
	chmod +x kvgen40
	run --separate-stderr env PATH=/usr/bin:/bin KVGEN="$T/kvgen40" "$script" b
	assert_success
	assert_equal "$stderr" "routing-experiment.sh: plot: b/routing-experiment.png"
	# what the trace's first 40 lines give: the default was the installed trace
	zcat "$share/traces/conversation_trace.jsonl.gz" | head -40 > t40.jsonl
	assert_equal "$(env PATH=/usr/bin:/bin TRACE="$T/t40.jsonl" GNUPLOT=no-gnuplot "$script" c 2>/dev/null)" "$output"
	assert_equal "$(sed -n 5p c/table.md)" "| affinity (cache affinity only) | 1,1,0 | 3.9% | 3.9% | 0% | 0 to 40 |"
	assert_equal "$(ls b | tr '\n' ' ')" "$files routing-experiment.png runs.txt table.md "
	assert_equal "$(head -c 8 b/routing-experiment.png | od -An -tx1 | tr -d ' ')" 89504e470d0a1a0a
}

@test "make CI=true after a plain build rebuilds with -Werror: a change of flags remakes what it built" {
	# a copy of the Makefile and lib/ in the temp dir: one object built plain,
	# then with CI's flags
	mkdir "$T/tree"
	cp -r "$ROOT/Makefile" "$ROOT/lib" "$T/tree/"
	cd "$T/tree"
	run make -s CI= build/release/lib/base/err.o
	assert_success
	refute grep -q -- -Werror build/release/.flags
	before=$(date -r build/release/lib/base/err.o +%s%N)
	run make -s CI=true build/release/lib/base/err.o
	assert_success
	grep -q -- -Werror build/release/.flags
	[ "$(date -r build/release/lib/base/err.o +%s%N)" -gt "$before" ]
}
