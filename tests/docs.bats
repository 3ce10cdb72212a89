#!/usr/bin/env bats
# Man pages, their examples, completions and the README, as users meet them.
load helper

PROGRAMS="kvsub kvdecode kvmatch kvquery kvgen kvpub kvstat"

# The man pages in a tree of their own, indexed, so that cross references resolve.
mantree() {
	mkdir -p "$T/man/man1" "$T/man/man5" "$T/man/man7"
	cp "$ROOT"/man/*.1 "$T/man/man1"; cp "$ROOT"/man/*.5 "$T/man/man5"; cp "$ROOT"/man/*.7 "$T/man/man7"
	makewhatis "$T/man" 2>/dev/null || true
}

@test "every man page is mandoc -Tlint clean, cross references included" {
	mantree
	run env MANPATH="$T/man:/usr/share/man" mandoc -Tlint -Wstyle "$ROOT"/man/*
	# notes about the system's own man index are not about these pages
	assert_equal "$(grep -v 'mandoc.db' <<<"$output" || true)" ""
}

@test "every program has its page, and every page the sections users look for" {
	for p in $PROGRAMS; do
		f=$ROOT/man/$p.1
		[ -f "$f" ]
		for sec in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" EXAMPLES "SEE ALSO"; do
			grep -q "^\.Sh $sec\$" "$f" || { echo "$p.1 lacks $sec" >&3; false; }
		done
	done
	for f in "$ROOT"/man/*.5 "$ROOT"/man/*.7; do
		for sec in NAME DESCRIPTION EXAMPLES "SEE ALSO"; do
			grep -q "^\.Sh $sec\$" "$f" || { echo "$f lacks $sec" >&3; false; }
		done
	done
}

@test "every option of every program is in its man page, its help and both completions" {
	for p in $PROGRAMS; do
		opts=$("$p" --help | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u)
		for o in $opts; do
			grep -qE -- "(Fl|,) -${o#--}([ ,]|\$)" "$ROOT/man/$p.1" || { echo "$p.1: $o" >&3; false; }
			grep -q -- "$o" "$ROOT/completions/zsh/_$p" || { echo "_$p: $o" >&3; false; }
			sed -n "/^_$p()/,/^complete/p" "$ROOT/completions/bash/kvtools" | grep -q -- "$o" || { echo "bash $p: $o" >&3; false; }
		done
	done
}

# The examples that run offline: literal blocks of EXAMPLES that use the
# shipped share/ files and need no network, no capture of a day and no long
# run (the full trace's experiments take minutes): one per line, NUL-separated.
offline_examples() {
	awk '/^\.Sh EXAMPLES/ { ex = 1; next } /^\.Sh / { ex = 0 }
	     ex && /^\.Bd -literal/ { blk = ""; inb = 1; next }
	     inb && /^\.Ed/ { inb = 0
		if (blk ~ /share\// && blk !~ /tcp:|day1|conversation_trace|routing-experiment/) printf "%s%c", blk, 0
		next }
	     inb { gsub(/\\e/, "\\"); blk = blk $0 "\n" }' "$1"
}

@test "the examples of the man pages that run offline work on the shipped samples" {
	cd "$ROOT"
	n=0
	for f in man/*.[157]; do
		offline_examples "$f" > "$T/examples"
		while IFS= read -r -d '' ex; do
			n=$((n + 1))
			run bash -c "set -eo pipefail; cd '$T'; ln -sfn '$ROOT/share' share; $ex"
			[ "$status" -eq 0 ] || { printf '%s: example failed (%s):\n%s\n%s\n' "$f" "$status" "$ex" "$output" >&3; false; }
		done < "$T/examples"
	done
	[ "$n" -ge 8 ]
}

@test "the README names every program, the set-up commands and the test command" {
	for p in $PROGRAMS; do grep -q "\`$p\`" "$ROOT/README.md"; done
	grep -q 'make demo' "$ROOT/README.md"
	grep -q 'make check' "$ROOT/README.md"
}

@test "make demo runs the whole chain and prints a routing table" {
	cd "$ROOT"
	run --separate-stderr share/demo.sh
	assert_success
	assert_line --regexp '^QUERY  ROUTE +DP +TOKENS +SCORE +NPU +CPU +DISK$'
	assert_line --regexp '^1 +node[01] +[01] +[0-9]+ '
}

# bash completion: the words offered for a command line
complete_words() {
	local line=$1
	source "$ROOT/completions/bash/kvtools"
	COMP_WORDS=($line)
	[[ $line == *" " ]] && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	"_${COMP_WORDS[0]}"
	printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}

@test "bash completion: options, their values, and files by suffix" {
	cd "$T"
	touch a.kvcap b.kvsnap c.jsonl d.txt e.jsonl.gz
	assert_equal "$(complete_words 'kvmatch --log mat')" "matched "
	assert_equal "$(complete_words 'kvmatch --log matched,dro')" "matched,dropped "
	assert_equal "$(complete_words 'kvquery --format ')" "json table "
	assert_equal "$(complete_words 'kvgen --policy ')" "kv random round-robin "
	assert_equal "$(complete_words 'kvgen --vllm-format ')" "array map "
	assert_equal "$(complete_words 'kvquery -s ')" "b.kvsnap "
	assert_equal "$(complete_words 'kvdecode ')" "a.kvcap "
	assert_equal "$(complete_words 'kvmatch -r ')" "c.jsonl "
	# kvgen reads no gzip: the trace is piped through zcat
	assert_equal "$(complete_words 'kvgen ')" "c.jsonl "
	assert_equal "$(complete_words 'kvsub --rep')" "--replay --replay-from --replay-timeout "
}

@test "zsh completions parse" {
	for p in $PROGRAMS; do zsh -n "$ROOT/completions/zsh/_$p"; done
}
