#!/usr/bin/env bats
# What every program does to the files it writes (kvtools(7) "Conventions"): an
# output naming an input is refused, a set-up error leaves an existing output
# as it was, and a reader leaving standard output does not cut a file
# product short.
load helper

CAP=$ROOT/share/sample.kvcap
REGS=$ROOT/share/registrations.jsonl
TRACE=$ROOT/share/traces/conversation-300.jsonl

# keeps FILE STATUS COMMAND...: runs COMMAND, expects STATUS and FILE unchanged.
keeps() {
	local f=$1 want=$2
	shift 2
	cp "$f" "$f.before"
	run --separate-stderr "$@"
	assert_equal "$status" "$want"
	cmp "$f" "$f.before"
}

@test "-o naming an input is refused (64), by device and inode, in every program that reads files" {
	cp "$CAP" c.kvcap
	ln c.kvcap link.kvcap
	keeps c.kvcap 64 kvdecode -o c.kvcap c.kvcap
	assert_equal "${stderr_lines[0]}" "kvdecode: -o c.kvcap: the same file as the input c.kvcap"
	assert_equal "${stderr_lines[1]}" "Try 'kvdecode --help'."
	keeps c.kvcap 64 kvdecode -o link.kvcap "$CAP" c.kvcap
	assert_equal "${stderr_lines[0]}" "kvdecode: -o link.kvcap: the same file as the input c.kvcap"
	keeps c.kvcap 64 kvdecode -o link.kvcap < c.kvcap
	assert_equal "${stderr_lines[0]}" "kvdecode: -o link.kvcap: the same file as the input (standard input)"
	keeps c.kvcap 64 kvmatch -o c.kvcap c.kvcap
	keeps c.kvcap 64 kvmatch --metrics link.kvcap c.kvcap
	cp "$REGS" regs.jsonl
	keeps regs.jsonl 64 kvmatch -r regs.jsonl -o regs.jsonl c.kvcap
	keeps regs.jsonl 64 kvsub -r regs.jsonl -o regs.jsonl
	keeps regs.jsonl 64 kvsub -r regs.jsonl --metrics regs.jsonl -o x.kvcap
	keeps c.kvcap 64 kvpub --single "ipc://$T/pub" -o link.kvcap c.kvcap
	[ ! -e "$T/pub" ]
	kvmatch -q --log none -r regs.jsonl -o s.kvsnap c.kvcap
	cp "$ROOT/share/queries.jsonl" q.jsonl
	keeps q.jsonl 64 kvquery -s s.kvsnap -o q.jsonl q.jsonl
	keeps s.kvsnap 64 kvquery -s s.kvsnap -o s.kvsnap q.jsonl
	head -5 "$TRACE" > t.jsonl
	for opt in -o --registrations --snapshot --report --queries --queries-by-hash; do
		keeps t.jsonl 64 kvgen -q $opt t.jsonl t.jsonl
		assert_equal "${stderr_lines[0]}" "kvgen: $opt t.jsonl: the same file as the input t.jsonl"
	done
	# resuming a snapshot and writing it back is no mistake: it is written by rename
	run --separate-stderr kvmatch -q --log none -i s.kvsnap -o s.kvsnap /dev/null
	assert_success
	# and outputs that are no regular files are never refused
	run --separate-stderr kvdecode -o /dev/null /dev/null
	assert_success
}

@test "a set-up error leaves an existing output untouched, in every program" {
	cp "$CAP" c.kvcap
	kvmatch -q --log none -r "$REGS" -o good.kvsnap c.kvcap
	# an input that cannot be opened, or a glob that matched nothing: not
	# even the inputs that open are read into a snapshot of part of them
	keeps good.kvsnap 66 kvmatch -o good.kvsnap typo.kvcap
	assert_equal "$stderr" "kvmatch: typo.kvcap: No such file or directory"
	keeps good.kvsnap 66 kvmatch -o good.kvsnap c.kvcap '*.kvcpa' "$T"
	assert_equal "${stderr_lines[0]}" "kvmatch: *.kvcpa: No such file or directory"
	assert_equal "${stderr_lines[1]}" "kvmatch: $T: Is a directory"
	echo yesterday > out.jsonl
	keeps out.jsonl 66 kvdecode -o out.jsonl typo.kvcap
	keeps out.jsonl 66 kvquery -s good.kvsnap -o out.jsonl typo.jsonl
	keeps out.jsonl 66 kvpub --single "ipc://$T/pub" -o out.jsonl typo.kvcap
	keeps out.jsonl 64 kvpub --single "bogus://x" -o out.jsonl c.kvcap
	keeps out.jsonl 64 kvstat -c 1 -o out.jsonl h:0
	keeps out.jsonl 74 kvgen -q -o out.jsonl --queries "$T/no/such/dir" "$TRACE"
	keeps out.jsonl 66 kvgen -q -o out.jsonl typo.jsonl
	# an output that did not exist is not left behind empty either
	run --separate-stderr kvdecode -o new.jsonl typo.kvcap
	assert_equal "$status" 66
	[ ! -e new.jsonl ]
	# an input that opens, even one of several, makes a run: -o is its result
	run --separate-stderr kvdecode -o out.jsonl typo.kvcap /dev/null
	assert_equal "$status" 66
	[ -e out.jsonl ] && [ ! -s out.jsonl ]
}

@test "a closed stdout does not cut kvmatch's snapshot short" {
	kvmatch -q --log all -r "$REGS" -o full.kvsnap "$CAP" > /dev/null
	for q in "" -q; do
		rm -f cut.kvsnap
		run bash -c "kvmatch $q --log all -r '$REGS' -o cut.kvsnap '$CAP' 2> err | head -1 > /dev/null; echo \${PIPESTATUS[0]}"
		assert_output 0
		cmp cut.kvsnap full.kvsnap
	done
}

@test "a closed stdout does not cut kvgen's snapshot, report, registrations or queries short" {
	opts=(-q --workers 2 --dp 2 --block-size 64 --limit 30)
	kvgen "${opts[@]}" --snapshot full.kvsnap --report full.json --registrations full.regs --queries full.q "$TRACE" > /dev/null
	run bash -c "kvgen ${opts[*]} --snapshot cut.kvsnap --report cut.json --registrations cut.regs --queries cut.q '$TRACE' | head -c 10 > /dev/null; echo \${PIPESTATUS[0]}"
	assert_output 0
	cmp cut.kvsnap full.kvsnap
	cmp cut.json full.json
	cmp cut.regs full.regs
	cmp cut.q full.q
}

@test "a file product that cannot be made fails at once (74), before any input is read, not after it" {
	# the input is a fifo nobody writes: reading it would wait for ever
	mkfifo in.fifo
	mkdir dir.kvsnap
	for out in /nonexistent/x.kvsnap dir.kvsnap; do
		run --separate-stderr timeout 10 kvmatch -q --log none -o "$out" in.fifo
		assert_equal "$status" 74
		assert_equal "$stderr" "kvmatch: $out: $([ "$out" = dir.kvsnap ] && echo 'Is a directory' || echo 'No such file or directory')"
	done
	# the metrics are a side output: a run goes on without them (metrics.bats)
	for opt in --snapshot --report --registrations --queries; do
		run --separate-stderr timeout 10 kvgen -n "$opt" /nonexistent/f in.fifo
		assert_equal "$status" 74
		assert_equal "$stderr" "kvgen: /nonexistent/f: No such file or directory"
	done
	# a writable place is no error
	run --separate-stderr kvmatch -q --log none -o ok.kvsnap "$CAP"
	assert_success
}
