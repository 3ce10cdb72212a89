#!/usr/bin/env bats
# Man pages, their examples, completions and the README, as users meet them.
load helper

PROGRAMS="kvsub kvdecode kvmatch kvquery kvgen kvpub kvstat kvnats"

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

# The sections every page has.  The format pages (kvcap.5, kvsnap.5) and the
# overview (kvtools.7) have no OPTIONS and no EXIT STATUS: they describe no
# command (the README says so where it lists the pages).
# FILES is required where a program creates or reads files beyond its arguments and
# -o (temporaries renamed into place, snapshots, registrations, metrics) and
# in the overview (installed paths).
@test "every program has its page, and every page the sections users look for" {
	for p in $PROGRAMS; do
		f=$ROOT/man/$p.1
		[ -f "$f" ]
		for sec in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" EXAMPLES "SEE ALSO"; do
			grep -q "^\.Sh $sec\$" "$f" || { echo "$p.1 lacks $sec" >&3; false; }
		done
	done
	for f in "$ROOT"/man/*.5 "$ROOT"/man/*.7; do
		for sec in NAME SYNOPSIS DESCRIPTION EXAMPLES "SEE ALSO"; do
			grep -q "^\.Sh $sec\$" "$f" || { echo "$f lacks $sec" >&3; false; }
		done
	done
	for page in kvsub.1 kvmatch.1 kvquery.1 kvgen.1 kvsnap.5 kvtools.7; do
		grep -q '^\.Sh FILES$' "$ROOT/man/$page" || { echo "$page lacks FILES" >&3; false; }
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

# An option is written three times in its main: usage text, struct option
# table, parse loop (doc/layout.md "Options in one table per program: measured, not adopted").
@test "every long option a program accepts (its struct option table) is in its --help" {
	local p o n
	for p in $PROGRAMS; do
		n=0
		while read -r o; do
			n=$((n + 1))
			"$p" --help | grep -qE -- "--$o([^a-z0-9-]|\$)" || { echo "$p --help lacks --$o" >&3; false; }
		done < <(awk '/struct option .*\[\] = \{/ { t = 1; next } t && /^\};/ { t = 0 } t && /^\t\{ "/' "$ROOT/bin/$p.c" |
			sed -E 's/^\t\{ "([^"]+)".*/\1/')
		[ "$n" -ge 5 ] || { echo "bin/$p.c: only $n options read from its table" >&3; false; }
	done
}

@test "every option of --help is in the SYNOPSIS of its page" {
	for p in $PROGRAMS; do
		syn=$(awk '/^\.Sh SYNOPSIS/ { s = 1; next } /^\.Sh / { s = 0 } s' "$ROOT/man/$p.1")
		while read -r long short; do
			[ "$long" = --help ] || [ "$long" = --version ] && continue
			# as the long option, or its letter in a group of flags (Fl bqv)
			grep -qE -- "Fl ${long#-}( |\$)" <<<"$syn" && continue
			[ -n "$short" ] && grep -qE "Fl [a-zA-Z]*${short#-}[a-zA-Z]*( |\$)" <<<"$syn" && continue
			echo "$p.1 SYNOPSIS lacks $long" >&3
			false
		done < <("$p" --help | sed -nE 's/^ +(-[a-zA-Z], )?(--[a-z][a-z0-9-]+).*/\2 \1/p' | tr -d ,)
	done
}

@test "every exit status of --help is in EXIT STATUS of its page, and 70 in all" {
	for p in $PROGRAMS; do
		st=$(awk '/^\.Sh EXIT STATUS/ { s = 1; next } /^\.Sh / { s = 0 } s && /^\.It [0-9]+$/ { print $2 }' "$ROOT/man/$p.1")
		# 70: kv_xmalloc and friends end every program that way when memory runs out
		for code in $("$p" --help | sed -n '/^Exit status/,$p' | sed 's/([0-9])//g' | grep -oE '\b(0|[1-9][0-9]?)\b') 70; do
			grep -qx "$code" <<<"$st" || { echo "$p.1 EXIT STATUS lacks $code" >&3; false; }
		done
	done
}

@test "every exit status of a page's EXIT STATUS is in --help too, 70 included" {
	# kvdecode, kvmatch and kvquery (and kvgen, kvstat, kvsub) left 70 out of --help
	for p in $PROGRAMS; do
		help=$("$p" --help | sed -n '/^Exit status/,$p' | sed 's/([0-9])//g' | grep -oE '\b(0|[1-9][0-9]?)\b')
		for code in $(awk '/^\.Sh EXIT STATUS/ { s = 1; next } /^\.Sh / { s = 0 } s && /^\.It [0-9]+$/ { print $2 }' "$ROOT/man/$p.1"); do
			grep -qx "$code" <<<"$help" || { echo "$p --help lacks exit status $code" >&3; false; }
		done
	done
}

# The literal blocks of EXAMPLES, NUL-separated, but for those that cannot
# run offline, each left out by a rule of its own:
#   kvsub, kvpub, kvstat  subscribe to live publishers, bind fixed TCP ports
#                         or scrape a cluster's HTTP endpoints;
#   kvnats                talks to NATS servers (tests/kvnats.bats runs them);
#   pkill                 signals a process such a pipeline started;
#   --watch               runs until it is interrupted;
#   --against             asks a running router (tests/against.bats runs one);
#   conversation_trace, routing-experiment
#                         the full trace: minutes of run time.
offline_examples() {
	awk '/^\.Sh EXAMPLES/ { ex = 1; next } /^\.Sh / { ex = 0 }
	     ex && /^\.Bd -literal/ { blk = ""; inb = 1; next }
	     inb && /^\.Ed/ { inb = 0
		if (blk ~ /(^|[^a-z])(kvsub|kvpub|kvstat|kvnats) /) next
		if (blk ~ /(^|[^a-z])pkill /) next
		if (blk ~ /--watch/) next
		if (blk ~ /--against/) next
		if (blk ~ /conversation_trace|routing-experiment/) next
		printf "%s%c", blk, 0
		next }
	     inb { gsub(/\\e/, "\\"); blk = blk $0 "\n" }' "$1"
}

# The files the examples name, made of the shipped samples: a day's capture
# (and the next day's, a pool's, an engine's) is share/sample.kvcap, its
# snapshot is what kvmatch makes of it, workers.jsonl and requests.jsonl are
# share/registrations.jsonl and share/queries.jsonl.
example_files() {
	ln -sfn "$ROOT/share" share
	for f in day1.kvcap day2.kvcap pool.kvcap engine.kvcap; do cp share/sample.kvcap "$f"; done
	cp share/registrations.jsonl workers.jsonl
	cp share/queries.jsonl requests.jsonl
	kvmatch -q -r workers.jsonl --log none -o day1.kvsnap day1.kvcap
	mkdir tmp
}

@test "the examples of the man pages that run offline work on the shipped samples" {
	example_files
	n=0
	for f in "$ROOT"/man/*.[157]; do
		offline_examples "$f" > examples
		while IFS= read -r -d '' ex; do
			n=$((n + 1))
			# what an example writes to /tmp goes to this test's own directory
			ex=${ex//\/tmp\//$T/tmp/}
			if [[ $ex == import* ]]; then
				run /usr/bin/python3 -c "$ex"
			else
				run bash -c "set -eo pipefail; $ex"
			fi
			# 141: a stage ended by SIGPIPE when a later one (head) stopped
			# reading, as it is, silently, in a shell without pipefail
			[ "$status" -eq 0 ] || [ "$status" -eq 141 ] || { printf '%s: example failed (%s):\n%s\n%s\n' "${f##*/}" "$status" "$ex" "$output" >&3; false; }
		done < examples
	done
	# 20 run now: fewer means a rule above leaves out more than it should
	[ "$n" -ge 20 ]
}

@test "the README names every program, the set-up commands and the test command" {
	for p in $PROGRAMS; do grep -q "\`$p\`" "$ROOT/README.md"; done
	grep -q 'make demo' "$ROOT/README.md"
	grep -q 'make check' "$ROOT/README.md"
	# the package, first, under the name make deb gives it for this VERSION
	local version
	version=$(sed -n 's/^VERSION *= *//p' "$ROOT/Makefile")
	assert_equal "$(sed -n '/^## Set-up/,/^## /s/^    \(make .*\)/\1/p' "$ROOT/README.md" | head -1)" \
		"make deb && apt install ./kvtools_${version}_amd64.deb"
}

# The README's first screen (60 lines) is the front door: what kvtools is, the
# two set-up commands, the three uses, the eight programs a line each, and
# where to go next, every page of doc/ among them.  The rest is in doc/.
@test "the README's first screen says what kvtools is, how to set it up, its three uses, its programs and where to go next" {
	local version screen what uses p f
	version=$(sed -n 's/^VERSION *= *//p' "$ROOT/Makefile")
	screen=$(head -60 "$ROOT/README.md")
	assert_equal "$(head -1 <<<"$screen")" "# kvtools"
	# what it is: one paragraph of 2 to 4 lines before the first section
	what=$(sed -n '2,/^## /p' <<<"$screen" | sed '$d' | grep -c .)
	[ "$what" -ge 2 ] && [ "$what" -le 4 ] || { echo "the first paragraph has $what lines" >&3; false; }
	grep -q 'KV-cache-aware routing' <<<"$screen"
	for h in "## Set-up" "## Three uses" "## The programs" "## Where to go next"; do
		grep -qx "$h" <<<"$screen" || { echo "the first screen lacks $h" >&3; false; }
	done
	grep -qxF "    make deb && apt install ./kvtools_${version}_amd64.deb" <<<"$screen"
	grep -qxF "    make deps && make && make check" <<<"$screen"
	# the three uses, as commands: debugging, replaying and indexing, simulating
	uses=$(sed -n '/^## Three uses$/,/^## /p' <<<"$screen" | grep '^    ')
	grep -qE '^    kvsub .*\| kvdecode \| jq ' <<<"$uses"
	grep -qE '^    kvmatch .*-o [^ ]+\.kvsnap' <<<"$uses"
	grep -qE '^    kvquery -s ' <<<"$uses"
	grep -qE '\| kvgen ' <<<"$uses"
	# each program on a line of its own in the list of programs
	for p in $PROGRAMS; do
		assert_equal "$(sed -n '/^## The programs$/,/^## /p' <<<"$screen" | grep -c "^| \`$p\` |")" 1
	done
	grep -q '^- `man 7 kvtools`' <<<"$screen"
	for f in "$ROOT"/doc/*.md; do
		f=doc/${f##*/}
		grep -qF "]($f)" <<<"$(sed -n '/^## Where to go next$/,$p' <<<"$screen")" ||
			{ echo "where to go next does not link $f" >&3; false; }
	done
}

# bench/run's sections are its section_ functions; --help, doc/benchmarks.md
# and the default run must not drift from them.  Nothing is measured here.
@test "every section of bench/run is in its --help and doc/benchmarks.md, unknown ones are refused" {
	cd "$ROOT"
	run bench/run --help
	assert_success
	local help=$output s
	for s in $(sed -n 's/^section_\([a-z]*\)() {.*/\1/p' bench/run); do
		grep -q "\b$s\b" <<<"$help" || { echo "bench/run --help lacks $s" >&3; false; }
		grep -q "\`$s\`\|BENCH=$s\b" doc/benchmarks.md || { echo "doc/benchmarks.md lacks the bench section $s" >&3; false; }
	done
	grep -q '^\[ ${#sections\[@\]} -gt 0 \] || sections=(limits decode match query sub nats scaling)$' bench/run
	run bench/run no-such-section
	assert_failure 64
	assert_output --partial "no section 'no-such-section'"
}

@test "bench/limits prints the machine's two yardsticks as numbers" {
	run "$TB/limits"
	assert_success
	assert_line --regexp '^xxh3_16_tokens_ns [0-9]+\.[0-9]+$'
	assert_line --regexp '^random_read_ns [0-9]+\.[0-9]+$'
	[ "${#lines[@]}" -eq 2 ]
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
	assert_equal "$(complete_words 'kvgen --policy ')" "affinity kv random round-robin "
	assert_equal "$(complete_words 'kvgen --vllm-format ')" "array map "
	assert_equal "$(complete_words 'kvquery -s ')" "b.kvsnap "
	assert_equal "$(complete_words 'kvdecode ')" "a.kvcap "
	assert_equal "$(complete_words 'kvmatch -r ')" "c.jsonl "
	# kvgen reads no gzip: the trace is piped through zcat
	assert_equal "$(complete_words 'kvgen ')" "c.jsonl "
	assert_equal "$(complete_words 'kvsub --rep')" "--replay --replay-from --replay-retries --replay-timeout "
	assert_equal "$(complete_words 'kvnats --after ')" "b.kvsnap "
	assert_equal "$(complete_words 'kvnats --format ')" "json table "
}

@test "zsh completions parse" {
	for p in $PROGRAMS; do zsh -n "$ROOT/completions/zsh/_$p"; done
}

@test "where make SAN=1 puts the programs is in doc/install.md and make help" {
	run make -s -C "$ROOT" help
	assert_success
	assert_line 'make SAN=1           build them with AddressSanitizer and UBSan into build/san/bin/'
	grep -q '`make SAN=1` builds those programs into$' "$ROOT/doc/install.md"
	grep -q '^`build/san/bin`' "$ROOT/doc/install.md"
}

@test "doc/examples.md's kvpub-to-kvsub registrations use the shipped sample's block size" {
	want=$(jq -r "select(.block_size) | .block_size" "$ROOT/share/registrations.jsonl" | sort -u)
	assert_equal "$want" 64
	got=$(grep -o 'dp_rank: 0, block_size: [0-9]*' "$ROOT/doc/examples.md" | grep -o '[0-9]*$')
	assert_equal "$got" "$want"
}

# The contract the code cites lives in the repository: PAGE(N) "Section".
@test "every citation in the code, tests, Makefile, README and doc/ resolves to a man page section" {
	run "$ROOT/tests/citations" "$ROOT"
	assert_success
	assert_output "citations: every citation resolves"
}

@test "a citation of a missing section, a missing page or a text outside the repository is refused" {
	# built from pieces, so that this file holds no such citation itself
	m=kvmatch f=kvfoo s=SPEC i=issue
	mkdir -p "$T/tree/lib/base" "$T/tree/man"
	cp "$ROOT/man/kvmatch.1" "$T/tree/man/"
	printf '%s\n' "/* ok: $m(1) \"Pool events\", \"State lines\" */" \
	    "/* $m(1) \"Pool events\", \"No such thing\" */" "/* $f(1) */" \
	    "/* as $s sec. 6.3 says */" "/* see $i 16 */" >"$T/tree/lib/base/a.h"
	: >"$T/tree/Makefile"; : >"$T/tree/README.md"
	run "$ROOT/tests/citations" "$T/tree"
	assert_failure 1
	assert_output - <<-OUT
	lib/base/a.h:4: "$s sec. 6.3" cites a text outside the repository (cite a man page section)
	lib/base/a.h:5: "$i 16" cites a text outside the repository (cite a man page section)
	lib/base/a.h:2: $m(1) "No such thing": no such section in man/kvmatch.1
	lib/base/a.h:3: $f(1): no man/kvfoo.1
	citations: 4 citation(s) that do not resolve
	OUT
}

# The README and doc/ are read on GitHub and in a checkout: a link that leads
# nowhere, or a page the code names that is not there, is a dead end.
@test "every link of the README and doc/, and every doc/ page the tree names, resolves" {
	run "$ROOT/tests/doclinks" "$ROOT"
	assert_success
	assert_output "doclinks: every link resolves"
}

@test "a link to a missing file or heading, or out of the tree, and a missing page named in the code are refused" {
	# built from pieces, so that this file names no missing page itself
	d=doc m=.md
	mkdir -p "$T/tree/$d" "$T/tree/lib/base" "$T/tree/share"
	: >"$T/tree/share/a.png"
	printf '%s\n' '# T' '' '## Where to `go`' '' \
	    "[a]($d/a$m#no-such) [b]($d/b$m) [ok]($d/a$m#the-a-page) \`[code]($d/c$m)\`" '' \
	    "    [code]($d/d$m)" >"$T/tree/README.md"
	printf '%s\n' '# The a page' '' \
	    "[up](../README.md#where-to-go) [no](../README.md#nowhere) [out](../../x$m) ![p](../share/a.png)" \
	    '' "[ref]: ../share/b.png" >"$T/tree/$d/a$m"
	printf '%s\n' "/* $d/a$m \"The a page\", $d/a$m \"No such\" */" "/* $d/e$m */" >"$T/tree/lib/base/a.h"
	run "$ROOT/tests/doclinks" "$T/tree"
	assert_failure 1
	assert_output - <<-OUT
	README.md:5: $d/a$m#no-such: no heading #no-such in $d/a$m
	README.md:5: $d/b$m: no such file
	$d/a$m:3: ../README.md#nowhere: no heading #nowhere in README.md
	$d/a$m:3: ../../x$m: outside the repository
	$d/a$m:5: ../share/b.png: no such file
	lib/base/a.h:1: $d/a$m "No such": no such heading
	lib/base/a.h:2: $d/e$m: no such page
	doclinks: 7 link(s) that do not resolve
	OUT
}

# lib/ by stage: includes run down only (doc/layout.md "lib/, by stage"); make lint runs it.
@test "the include layers of lib/ hold, and an upward or sibling include is refused" {
	run "$ROOT/tests/layers" "$ROOT"
	assert_success
	assert_output "layers: lib/ includes run downward only
layers: lib/ dies only with KV_EX_SOFTWARE"
	# lib/ may kv_die only with KV_EX_SOFTWARE (lib/base/err.h)
	mkdir -p "$T/dies/lib/net"
	printf 'void f(void)\n{\n\tkv_die(KV_EX_IOERR, "x");\n\tkv_die(KV_EX_SOFTWARE, "y");\n}\n' >"$T/dies/lib/net/d.c"
	run --separate-stderr "$ROOT/tests/layers" "$T/dies"
	assert_failure 1
	assert_output 'layers: lib/ includes run downward only
lib/net/d.c:3:	kv_die(KV_EX_IOERR, "x");  <- lib/ may kv_die only with KV_EX_SOFTWARE (lib/base/err.h)'
	assert_equal "$stderr" "layers: 1 kv_die(s) in lib/ with another status"
	mkdir -p "$T/tree/lib/base" "$T/tree/lib/index" "$T/tree/lib/prom"
	printf '#include "index/match.h"\n' >"$T/tree/lib/base/a.c"
	printf '#include "base/util.h"\n#include "decode/event.h"\n#include "query/query.h"\n' >"$T/tree/lib/index/b.c"
	printf '#include "decode/kvcap.h"\n#include "util.h"\n' >"$T/tree/lib/prom/c.h"
	run "$ROOT/tests/layers" "$T/tree"
	assert_failure 1
	assert_output - <<-'OUT'
	lib/base/a.c:1: "index/match.h": lib/base/ may include only base
	lib/index/b.c:3: "query/query.h": lib/index/ may include only base decode index
	lib/prom/c.h:1: "decode/kvcap.h": lib/prom/ may include only base prom
	lib/prom/c.h:2: "util.h" names no folder (write "prom/util.h" or the folder it lives in)
	layers: 4 include(s) against the layer order
	OUT
}

# kvquery resolves its queries in query/snapset: no program but kvmatch and kvnats reads the snapshot layer.
@test "layers refuses the snapshot layer in a program other than kvmatch and kvnats" {
	mkdir -p "$T/tree/bin"
	printf '#include "index/snap.h"\n#include "index/snapstate.h"\n' >"$T/tree/bin/kvmatch.c"
	printf '#include "index/snap.h"\n' >"$T/tree/bin/kvnats.c"
	printf '#include "query/snapset.h"\n#include "index/snap.h"\n' >"$T/tree/bin/kvquery.c"
	printf '#include "index/snapstate.h"\n#include "index/index.h"\n' >"$T/tree/bin/kvgen.c"
	run "$ROOT/tests/layers" "$T/tree"
	assert_failure 1
	assert_output - <<-'OUT'
	bin/kvgen.c:1: "index/snapstate.h": bin/ reads snapshots through query/snapset (only kvmatch and kvnats use the snapshot layer)
	bin/kvquery.c:2: "index/snap.h": bin/ reads snapshots through query/snapset (only kvmatch and kvnats use the snapshot layer)
	layers: 2 include(s) against the layer order
	OUT
}
