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

# A unix socket file at $1 (no one listening).
make_socket() { python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$1"; }

@test "a device or a fifo named as an output is written to directly, never renamed over; a link's target is replaced, the link kept" {
	# as root, a twin of /dev/null in the test's directory: renamed over, it would become a file
	mknod null c 1 3
	kvmatch -q --log none -r "$REGS" -o want.kvsnap "$CAP"
	run --separate-stderr kvmatch -q --log none -r "$REGS" -o null --metrics null "$CAP"
	assert_success
	[ -c null ]
	run --separate-stderr kvgen -q --limit 5 -o null --snapshot null --report null "$TRACE"
	assert_success
	[ -c null ]
	run --separate-stderr kvsub -q -W 0.2 -o null --metrics null "tcp://127.0.0.1:$(port)"
	assert_success
	[ -c null ]
	run --separate-stderr kvdecode -o null "$CAP"
	assert_success
	[ -c null ]
	[ -z "$(ls | grep tmp)" ]
	# a fifo gets the bytes a file would, and stays a fifo
	mkfifo fifo
	cat fifo > got.kvsnap & reader=$!
	run --separate-stderr timeout 20 kvmatch -q --log none -r "$REGS" -o fifo "$CAP"
	assert_success
	wait_for $reader
	[ -p fifo ]
	cmp got.kvsnap want.kvsnap
	kvgen -q -n --limit 5 --snapshot gen.kvsnap "$TRACE"
	cat fifo > got.kvsnap & reader=$!
	run --separate-stderr timeout 20 kvgen -q -n --limit 5 --snapshot fifo "$TRACE"
	assert_success
	wait_for $reader
	[ -p fifo ]
	cmp got.kvsnap gen.kvsnap
	# a symbolic link, to a file or to none yet: its target is written, the link stays
	mkdir d
	echo yesterday > d/real.kvsnap
	ln -s d/real.kvsnap link.kvsnap
	ln -s d/new.prom link.prom
	kvmatch -q --log none -r "$REGS" -o link.kvsnap --metrics link.prom "$CAP"
	[ -L link.kvsnap ] && [ -L link.prom ]
	cmp d/real.kvsnap want.kvsnap
	grep -q '^kvtools_match_records_total 60$' d/new.prom
	[ "$(ls d)" = "$(printf 'new.prom\nreal.kvsnap')" ]
	# a link to the /dev/null twin: the device decides
	ln -s null link-null
	run --separate-stderr kvmatch -q --log none -r "$REGS" -o link-null "$CAP"
	assert_success
	[ -L link-null ] && [ -c null ]
}

@test "a socket named as a file product is refused at once (74), with a message, and left as it was" {
	make_socket sock
	run --separate-stderr kvmatch -q --log none -o sock "$CAP"
	assert_equal "$status" 74
	assert_equal "$stderr" "kvmatch: sock: a socket: no file can be written there"
	run --separate-stderr kvgen -q -n --snapshot sock "$TRACE"
	assert_equal "$status" 74
	assert_equal "$stderr" "kvgen: sock: a socket: no file can be written there"
	run --separate-stderr kvdecode -o sock "$CAP"
	assert_equal "$status" 74
	assert_equal "$stderr" "kvdecode: sock: a socket: no file can be written there"
	[ -S sock ]
}

@test "two outputs of one command naming the same file are refused (64) before anything is written" {
	echo yesterday > x
	keeps x 64 timeout 10 kvsub -o x --metrics x tcp://127.0.0.1:1
	assert_equal "${stderr_lines[0]}" "kvsub: --metrics x: the same file as -o x"
	assert_equal "${stderr_lines[1]}" "Try 'kvsub --help'."
	keeps x 64 kvmatch -o x --metrics ./x "$CAP"
	assert_equal "${stderr_lines[0]}" "kvmatch: --metrics ./x: the same file as -o x"
	keeps x 64 kvgen -q -o x --snapshot x "$TRACE"
	assert_equal "${stderr_lines[0]}" "kvgen: --snapshot x: the same file as -o x"
	keeps x 64 kvgen -q -n --report x --snapshot x "$TRACE"
	assert_equal "${stderr_lines[0]}" "kvgen: --report x: the same file as --snapshot x"
	keeps x 64 kvgen -q -o x --registrations x "$TRACE"
	assert_equal "${stderr_lines[0]}" "kvgen: --registrations x: the same file as -o x"
	keeps x 64 kvgen -q -n --queries-by-hash x --registrations "$T/x" "$TRACE"
	assert_equal "${stderr_lines[0]}" "kvgen: --queries-by-hash x: the same file as --registrations $T/x"
	# by device and inode: a hard link, a symbolic link
	ln x hard
	ln -s x soft
	keeps x 64 kvmatch -o hard --metrics soft "$CAP"
	assert_equal "${stderr_lines[0]}" "kvmatch: --metrics soft: the same file as -o hard"
	# standard output is an output too (kvgen's capture, kvsub's, kvmatch's state lines)
	keeps x 64 bash -c "kvgen -q --report x '$TRACE' >> x"
	assert_equal "${stderr_lines[0]}" "kvgen: --report x: the same file as standard output"
	keeps x 64 bash -c "timeout 10 kvsub --metrics x tcp://127.0.0.1:1 >> x"
	assert_equal "${stderr_lines[0]}" "kvsub: --metrics x: the same file as standard output"
	keeps x 64 bash -c "kvmatch -o soft '$CAP' >> x"
	assert_equal "${stderr_lines[0]}" "kvmatch: -o soft: the same file as standard output"
	# not there yet: the same place, however spelt, and nothing is made
	mkdir d
	ln -s d/new.json to-new
	for pair in "new.json ./new.json" "d/../new.json new.json" "to-new d/new.json"; do
		set -- $pair
		run --separate-stderr kvgen -q -n --report "$1" --snapshot "$2" "$TRACE"
		assert_equal "$status" 64
		assert_equal "${stderr_lines[0]}" "kvgen: --report $1: the same file as --snapshot $2"
	done
	[ ! -e new.json ] && [ ! -e d/new.json ]
	# no regular file: a device named twice is no file to overwrite
	mknod null c 1 3
	run --separate-stderr kvgen -q --limit 5 -o null --report null --registrations null "$TRACE"
	assert_success
	# outputs that differ are fine
	run --separate-stderr kvgen -q -n --limit 5 --report r.json --snapshot s.kvsnap "$TRACE"
	assert_success
}

# fed: waits (at most 10 s) until the program at the other end of feed's
# fifo has read all that feed's command wrote (the command has ended and
# nothing waits in the fifo): what it loads first (registrations, a
# snapshot, a connection) is behind it, and a signal cuts the run, not the
# load ("loading stopped by a signal", which the sanitizers' slower start
# once met).
fed() {
	local i
	for ((i = 0; i < 200; i++)); do
		if ! kill -0 "$FEEDER" 2>/dev/null &&
			[ "$(/usr/bin/python3 -c 'import fcntl, struct, termios; print(struct.unpack("i", fcntl.ioctl(5, termios.FIONREAD, b"0000"))[0])')" = 0 ]; then
			return 0
		fi
		sleep 0.05
	done
	return 1
}

# stop_run SIG PID [fed]: sends SIG once PID can take it (and, with fed,
# has read what feed gave it), waits (status in $status).
stop_run() {
	signals_ready "$2" || echo "# $2 took no signal handler in 10 s" >&3
	[ -z "${3:-}" ] || fed || echo "# $2 did not read its fifo in 10 s" >&3
	kill -"$1" "$2"
	wait_for "$2" 20
}

# feed NAME CMD...: a fifo NAME that gets what CMD writes and never ends
# (it stays open for writing on fd 5 until `exec 5>&-`).
feed() {
	local fifo=$1
	shift
	mkfifo "$fifo"
	exec 5<> "$fifo"
	# opened for writing only: once fd 5 is closed, nothing reads and CMD ends
	"$@" > "$fifo" 2>/dev/null 3>&- 5>&- &
	FEEDER=$!
}

@test "a signal that cuts kvmatch or kvgen short says so in one line, before the snapshot and the outputs are written; -q says nothing" {
	for q in "" -q; do
		feed "in$q" cat "$CAP"
		kvmatch $q --log none -r "$REGS" -o s.kvsnap "in$q" 2> err & pid=$!
		stop_run TERM $pid fed
		exec 5>&-
		assert_equal "$status" 0
		if [ -z "$q" ]; then
			assert_equal "$(head -1 err)" "kvmatch: stopped by SIGTERM before the end; what came before it goes to s.kvsnap"
			grep -q '^kvmatch: [0-9]* records, ' err
		else
			[ ! -s err ]
		fi
		kvmatch --dump s.kvsnap > /dev/null
	done
	feed trace head -40 "$TRACE"
	kvgen --workers 2 --limit 100 -o c.kvcap --snapshot s.kvsnap --report r.json trace 2> err & pid=$!
	stop_run TERM $pid fed
	exec 5>&-
	assert_equal "$status" 0
	assert_equal "$(head -1 err)" "kvgen: stopped by SIGTERM before the end; what came before it goes to c.kvcap, s.kvsnap, r.json"
	grep -q '^kvgen: policy kv: ' err
	kvmatch --dump s.kvsnap > /dev/null
	jq -e .requests r.json > /dev/null
	# the end of the trace or --limit is no stop, whatever comes after
	kvgen --limit 10 -n "$TRACE" 2> err
	[ "$(grep -c stopped err)" = 0 ]
}

@test "a signal that cuts kvdecode, kvquery, kvpub, kvsub -W or kvstat -c short says so in the same line; one that ends an endless run does not" {
	feed in1 cat "$CAP"
	kvdecode in1 > out.jsonl 2> err & pid=$!
	stop_run INT $pid fed
	exec 5>&-
	assert_equal "$status" 0
	assert_equal "$(cat err)" "kvdecode: stopped by SIGINT before the end; what came before it goes to standard output"
	kvmatch -q --log none -r "$REGS" -o s.kvsnap "$CAP"
	feed in2 head -3 "$ROOT/share/queries.jsonl"
	kvquery -s s.kvsnap -o a.jsonl in2 2> err & pid=$!
	stop_run TERM $pid fed
	exec 5>&-
	assert_equal "$status" 0
	assert_equal "$(cat err)" "kvquery: stopped by SIGTERM before the end; what came before it goes to a.jsonl"
	# the sample spans 9 s at its own pace
	kvpub --single "ipc://$T/pub" "$CAP" 2> err & pid=$!
	stop_run TERM $pid
	assert_equal "$status" 0
	assert_equal "$(head -1 err)" "kvpub: stopped by SIGTERM before the end"
	kvsub -W 60 -o c.kvcap "tcp://127.0.0.1:$(port)" 2> err & pid=$!
	stop_run TERM $pid
	assert_equal "$status" 0
	assert_equal "$(head -1 err)" "kvsub: stopped by SIGTERM before the end; what came before it goes to c.kvcap"
	kvstat -c 1000 -i 0.1 -o s.jsonl "127.0.0.1:$(port)" 2> err & pid=$!
	stop_run TERM $pid
	assert_equal "$status" 0
	assert_equal "$(grep stopped err)" "kvstat: stopped by SIGTERM before the end; what came before it goes to s.jsonl"
	# with neither -W nor -c, a signal is how kvsub and kvstat end
	kvsub -o c.kvcap "tcp://127.0.0.1:$(port)" 2> err & pid=$!
	stop_run TERM $pid
	assert_equal "$status" 0
	[ "$(grep -c stopped err)" = 0 ]
	kvstat -i 0.1 -o s.jsonl "127.0.0.1:$(port)" 2> err & pid=$!
	stop_run TERM $pid
	assert_equal "$status" 0
	[ "$(grep -c stopped err)" = 0 ]
}

@test "a closed standard descriptor stays closed: what a program opens later never takes its number" {
	# stdout closed: kvgen's capture went into the file of --queries
	head -5 "$TRACE" > t.jsonl
	run --separate-stderr bash -c 'kvgen -q --queries q.jsonl < t.jsonl >&-'
	assert_equal "$status" 74
	assert_equal "$stderr" "kvgen: stdout: Bad file descriptor"
	[ "$(grep -c kvcap q.jsonl)" = 0 ]
	[ "$(wc -l < q.jsonl)" = 5 ]
	# ... and kvsub's into ZeroMQ's own descriptor ("Invalid argument")
	run --separate-stderr bash -c "kvsub -q -W 0.2 tcp://127.0.0.1:$(port) >&-"
	assert_equal "$status" 74
	assert_equal "$stderr" "kvsub: stdout: Bad file descriptor"
	# stdin closed: kvpub read its first file again as "-"
	run --separate-stderr bash -c "kvpub -q --single 'ipc://$T/pub' -s max --slow-joiner-wait 0 '$CAP' - <&-"
	assert_equal "$status" 65
	assert_equal "$stderr" "kvpub: stdin: byte 0: Bad file descriptor"
	# stderr closed: kvdecode's message about a bad input went into -o
	echo garbage > bad.kvcap
	run bash -c "kvdecode -o out.jsonl '$CAP' bad.kvcap 2>&-"
	assert_equal "$status" 65
	[ "$(grep -vc '^{' out.jsonl)" = 0 ]
}

@test "counts in messages are those written: a capture that failed part way is not said to hold what it lost" {
	# a file may not grow past 40 KiB (or 400): the write that crosses it
	# fails (EFBIG, SIGXFSZ ignored) and the file is cut back to its last
	# whole flush
	p=$(port)
	bash -c "trap '' XFSZ; ulimit -f 40; exec kvsub -c 400 -W 20 -o c.kvcap --metrics m.prom tcp://127.0.0.1:$p" 2> err & sub=$!
	fakepub -n 400 -T 1000 "tcp://127.0.0.1:$p"
	wait_for $sub 30 || true
	assert_equal "$status" 74
	assert_equal "$(head -1 err)" "kvsub: c.kvcap: File too large"
	written=$(capdump c.kvcap 2> /dev/null | wc -l)
	assert_equal "$(awk '$1 == "kvtools_sub_records_total" { print $2 }' m.prom)" "$written"
	run --separate-stderr bash -c "trap '' XFSZ; ulimit -f 400; exec kvgen --workers 2 --dp 2 --block-size 64 -o g.kvcap '$TRACE'"
	assert_equal "$status" 74
	assert_equal "${stderr_lines[0]}" "kvgen: g.kvcap: File too large"
	written=$(capdump g.kvcap 2> /dev/null | wc -l)
	[ "$written" -gt 0 ]
	[[ ${stderr_lines[1]} =~ \ ([0-9]+)\ records\ \(([0-9]+)\ written\), ]]
	[ "${BASH_REMATCH[1]}" -gt "$written" ]
	assert_equal "${BASH_REMATCH[2]}" "$written"
	# a capture that was written whole says nothing more
	run --separate-stderr kvgen --workers 2 --dp 2 --block-size 64 --limit 5 -o g.kvcap "$TRACE"
	assert_success
	[[ $stderr =~ \ [0-9]+\ records,\  ]]
	[[ $stderr != *written* ]]
	# kvquery --timing: the queries answered, and how many answers the output
	# holds (about 556 KB of them: the second flush crosses 400 KiB)
	kvmatch -q --log none -r "$REGS" -o s.kvsnap "$CAP"
	jq -c '.token_ids[:128]' "$ROOT/share/queries.jsonl" > short.jsonl
	for i in $(seq 200); do cat short.jsonl; done > q.jsonl
	run --separate-stderr bash -c "trap '' XFSZ; ulimit -f 400; exec kvquery --timing -s s.kvsnap -o a.jsonl q.jsonl"
	assert_equal "$status" 74
	assert_equal "${stderr_lines[0]}" "kvquery: a.jsonl: File too large"
	[[ ${stderr_lines[1]} =~ ^kvquery:\ ([0-9]+)\ queries\ answered\ \(([0-9]+)\ written\):\  ]]
	[ "${BASH_REMATCH[2]}" -gt 0 ]
	[ "${BASH_REMATCH[1]}" -gt "${BASH_REMATCH[2]}" ]
	assert_equal "${BASH_REMATCH[2]}" "$(wc -l < a.jsonl)"
	run --separate-stderr kvquery --timing -s s.kvsnap -o a.jsonl short.jsonl
	assert_success
	[[ $stderr =~ ^kvquery:\ 5\ queries\ answered:\  ]]
}

# A JetStream server of the test's own on a free port (as tests/kvnats.bats
# starts them), ready within 10 s: its pid in $server, its port in $p, its
# log in nats.log.  Stopped by the test, or by teardown when it fails first.
nats_server() {
	local i=0
	p=$(port)
	nats-server -a 127.0.0.1 -p "$p" -js -sd "$T/js" > nats.log 2>&1 & server=$!
	until grep -qs 'Server is ready' nats.log; do
		sleep 0.05
		i=$((i + 1))
		[ $i -lt 200 ] || { stop_bg $server; return 1; }
	done
}

teardown() {
	[ -z "${server:-}" ] || stop_bg "$server"
}

@test "kvnats -C with stdout closed says so (74) and writes nothing into its NATS connection" {
	nats_server
	kvnats -q -P -s "nats://127.0.0.1:$p" "$CAP"
	run --separate-stderr bash -c "timeout 20 kvnats -C -s nats://127.0.0.1:$p >&-"
	logged=$(cat nats.log)
	stop_bg $server
	assert_equal "$status" 74
	assert_equal "${stderr_lines[0]}" "kvnats: stdout: Bad file descriptor"
	# the records had gone to the server as protocol, which it refused
	[[ $logged != *"parser ERROR"* ]]
	[[ $logged != *kvcap* ]]
}

@test "a signal that cuts kvnats -P or -C -c short says so in the same line; one that ends kvnats -C -f does not" {
	nats_server
	# -P: the records of a capture that is not at its end yet go to the stream
	feed in cat "$CAP"
	kvnats -P -s "nats://127.0.0.1:$p" in 2> err & pid=$!
	stop_run TERM $pid fed
	exec 5>&-
	assert_equal "$status" 0
	assert_equal "$(grep stopped err)" "kvnats: stopped by SIGTERM before the end; what came before it goes to stream KVTOOLS"
	# -C -f -c: the stream holds fewer records than -c asks for
	kvnats -C -f -c 100000 -s "nats://127.0.0.1:$p" -o c.kvcap 2> err & pid=$!
	stop_run TERM $pid
	assert_equal "$status" 0
	assert_equal "$(head -1 err)" "kvnats: stopped by SIGTERM before the end; what came before it goes to c.kvcap"
	# -C -f alone ends by a signal only; -c reached, or the end of the stream, is no stop
	kvnats -C -f -s "nats://127.0.0.1:$p" -o c.kvcap 2> err & pid=$!
	stop_run TERM $pid
	assert_equal "$status" 0
	kvnats -C -c 3 -s "nats://127.0.0.1:$p" -o c.kvcap 2>> err
	kvnats -C -s "nats://127.0.0.1:$p" -o c.kvcap 2>> err
	stop_bg $server
	[ "$(grep -c stopped err)" = 0 ]
}
