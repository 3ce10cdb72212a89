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
./usr/local/bin/kvpub
./usr/local/bin/kvquery
./usr/local/bin/kvstat
./usr/local/bin/kvsub
./usr/local/share/bash-completion/completions/kvdecode
./usr/local/share/bash-completion/completions/kvgen
./usr/local/share/bash-completion/completions/kvmatch
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
./usr/local/share/zsh/site-functions/_kvpub
./usr/local/share/zsh/site-functions/_kvquery
./usr/local/share/zsh/site-functions/_kvstat
./usr/local/share/zsh/site-functions/_kvsub"
	# the installed programs run, the installed pages render
	for p in kvsub kvdecode kvmatch kvquery kvgen kvpub kvstat; do
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
