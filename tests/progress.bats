#!/usr/bin/env bats
# The progress line of long runs (kvtools(7) "Conventions"): drawn on a
# terminal (a pseudo-terminal of script(1) here), erased before other
# messages and the final statistics; whole lines into a file with
# --progress; nothing elsewhere unless asked; never a change in what the
# programs write.
load helper

TRACE=$ROOT/share/traces/conversation-300.jsonl
ESC=$'\e'
CR=$'\r'
RATE='(-|[0-9]+(\.[0-9]+)?[kMGT]?)'
SIZE='[0-9]+(\.[0-9])? (B|KiB|MiB|GiB)'
TIME='[0-9]+:[0-9]{2}(:[0-9]{2})?'

# tty CMD: CMD (a shell command line) run on a pseudo-terminal, its
# standard output and error both the terminal: what the terminal was sent
# in $output, its status in $status.
tty() {
	run timeout 60 script -qfec "$1" /dev/null
}

# The lines drawn over each other on the terminal: each piece between two
# carriage returns that ends in "clear to the end of the line", without it.
drawn() {
	tr '\r' '\n' <<<"$1" | sed -n "s/${ESC}\[K\$//p" | grep .
}

# A capture of N records of 8 single-block events each.
capture() {
	synthcap -n "${1:-2000}" -e 8 -t 16 > cap.kvcap
}

@test "kvdecode on a terminal: the line has the bytes of their total, the rates and the times, erased before the statistics" {
	capture
	tty "kvdecode --stats -o out.jsonl cap.kvcap"
	assert_success
	screen=$output
	run drawn "$screen"
	assert_success
	# the first drawing comes with the first record: no rates yet
	[[ ${lines[0]} =~ ^kvdecode:\ $SIZE\ of\ $SIZE\ \([0-9]+%\)\ -\ records/s\ -\ events/s\ 0:00\ ETA\ -$ ]]
	for l in "${lines[@]}"; do
		[[ $l =~ ^kvdecode:\ $SIZE\ of\ $SIZE\ \([0-9]+%\)\ $RATE\ records/s\ $RATE\ events/s\ $TIME\ ETA\ (-|$TIME)$ ]]
	done
	# erased (carriage return, clear to the end of the line), then the
	# statistics alone, and nothing of the line after them
	grep -q "${CR}${ESC}\[Kkvdecode: tcp://10.0.0.0:5557: 500 batches, 4000 events" <<<"$screen"
	printf '%s' "$screen" | tr '\r' '\n' | sed '1,/batches/d' > after
	grep -q 'batches' after
	! grep -q -e 'records/s' -e "$ESC" after
}

@test "kvdecode on a quiet pipe: the rates and the time elapsed, no total and no time left" {
	capture 500
	tty "(cat cap.kvcap; sleep 1.3) | kvdecode -o out.jsonl"
	assert_success
	run drawn "$output"
	assert_success
	# before half a second, no rates; after it, rates and a second elapsed
	[[ ${lines[0]} =~ ^kvdecode:\ $SIZE\ -\ records/s\ -\ events/s\ 0:00$ ]]
	last=${lines[${#lines[@]} - 1]}
	[[ $last =~ ^kvdecode:\ $SIZE\ [0-9.]+[kM]?\ records/s\ [0-9.]+[kM]?\ events/s\ 0:01$ ]]
	# all of it taken: the size of the capture
	[[ $last == "kvdecode: $(kvdecode --progress cap.kvcap 2>&1 >/dev/null | tail -1 | cut -d' ' -f2,3) "* ]]
}

@test "nothing on standard error that is a file or a pipe, unless asked" {
	capture
	kvdecode --stats --no-progress cap.kvcap > want.jsonl 2> want.err
	kvdecode --stats cap.kvcap > out.jsonl 2> err
	cmp want.err err
	cmp want.jsonl out.jsonl
	kvdecode --stats cap.kvcap 2>&1 >/dev/null | cat > piped.err
	cmp want.err piped.err
	kvmatch --log none cap.kvcap 2> match.err
	! grep -q 'records/s' match.err
	kvgen -n "$TRACE" 2> gen.err
	! grep -q 'requests/s' gen.err
	grep -q '^kvgen: policy kv: 300 requests' gen.err
}

@test "--progress into a file: whole lines with the fields, the last with the totals, then the statistics" {
	capture
	size=$(stat -c %s cap.kvcap)
	kvdecode --stats --progress cap.kvcap > out.jsonl 2> err
	# no carriage return, no escape: lines a log can hold
	! grep -q "[$CR$ESC]" err
	[ "$(tail -c 1 err | od -An -c | tr -d ' ')" = '\n' ]
	run grep 'records/s' err
	[ "${#lines[@]}" -ge 2 ]
	[[ ${lines[0]} =~ ^kvdecode:\ $SIZE\ of\ $SIZE\ \([0-9]+%\)\ $RATE\ records/s\ $RATE\ events/s\ $TIME\ ETA\ (-|$TIME)$ ]]
	total=$(kvdecode --progress cap.kvcap 2>&1 >/dev/null | tail -1 | cut -d' ' -f2,3)
	[[ ${lines[-1]} =~ ^kvdecode:\ $total\ of\ $total\ \(100%\)\ [0-9.]+[kMG]?\ records/s\ [0-9.]+[kMG]?\ events/s\ $TIME$ ]]
	# the statistics after the last line, as without it
	kvdecode --stats cap.kvcap 2> want.err > /dev/null
	diff <(grep -v 'records/s' err) want.err
	[ "$(grep -n 'records/s' err | tail -1 | cut -d: -f1)" -lt "$(grep -n 'batches' err | head -1 | cut -d: -f1)" ]
	# -q does not stop what was asked for; the last of the two options counts
	kvdecode -q --progress cap.kvcap 2> q.err > /dev/null
	grep -q 'records/s' q.err
	kvdecode --progress --no-progress cap.kvcap 2> off.err > /dev/null
	[ ! -s off.err ]
	[ "$size" -gt 0 ]
}

@test "-q and --no-progress leave the line out on a terminal; the last of --progress and --no-progress counts" {
	capture
	tty "kvdecode -q -o out.jsonl cap.kvcap"
	assert_success
	refute_output --partial 'records/s'
	tty "kvdecode --no-progress -o out.jsonl cap.kvcap"
	assert_success
	refute_output --partial 'records/s'
	tty "kvdecode --progress --no-progress -o out.jsonl cap.kvcap"
	refute_output --partial 'records/s'
	tty "kvdecode --no-progress --progress -o out.jsonl cap.kvcap"
	assert_output --partial 'records/s'
	tty "kvdecode -o out.jsonl cap.kvcap"
	assert_output --partial 'records/s'
}

@test "the output is the same, byte for byte, with the line and without it" {
	capture
	tty "kvdecode -e -o on.jsonl cap.kvcap"
	assert_output --partial 'records/s'
	kvdecode -e --no-progress -o off.jsonl cap.kvcap
	cmp on.jsonl off.jsonl
	tty "kvmatch --log all -o on.kvsnap cap.kvcap > on.states"
	assert_output --partial 'records/s'
	kvmatch --log all --no-progress -o off.kvsnap cap.kvcap > off.states 2>/dev/null
	cmp on.kvsnap off.kvsnap
	cmp on.states off.states
	[ -s on.states ]
	tty "kvgen -o on.kvcap --report on.json $TRACE"
	assert_output --partial 'requests/s'
	kvgen -o off.kvcap --report off.json --no-progress "$TRACE" 2>/dev/null
	cmp on.kvcap off.kvcap
	cmp on.json off.json
}

@test "kvmatch on a terminal: records and events a second, erased before its statistics; none while its state lines share the terminal" {
	capture
	tty "kvmatch --log none cap.kvcap"
	assert_success
	run drawn "$output"
	assert_success
	[[ ${lines[0]} =~ ^kvmatch:\ $SIZE\ of\ $SIZE\ \([0-9]+%\)\ $RATE\ records/s\ $RATE\ events/s\ $TIME\ ETA\ (-|$TIME)$ ]]
	tty "kvmatch --log none cap.kvcap"
	grep -q "${CR}${ESC}\[Kkvmatch: 2000 records, 16000 events;" <<<"$output"
	# the state lines go to the terminal: no line to mix with them ...
	tty "kvmatch cap.kvcap"
	assert_success
	refute_output --partial 'records/s'
	# ... unless asked, and then as whole lines
	tty "kvmatch --log all --progress cap.kvcap"
	assert_success
	assert_output --partial 'records/s'
	refute_output --partial "${ESC}[K"
	printf '%s' "$output" | tr -d '\r' | grep 'records/s' > drawn
	[[ $(head -1 drawn) =~ ^kvmatch:\ $SIZE\ of\ $SIZE\ \([0-9]+%\)\ $RATE\ records/s ]]
	[[ $(tail -1 drawn) =~ ^kvmatch:\ 1\.7\ MiB\ of\ 1\.7\ MiB\ \(100%\)\ [0-9.]+[kM]?\ records/s ]]
}

@test "kvgen on a terminal: the trace taken of its size, requests a second, no events; no total with --limit" {
	tty "kvgen -o cap.kvcap $TRACE"
	assert_success
	run drawn "$output"
	assert_success
	for l in "${lines[@]}"; do
		[[ $l =~ ^kvgen:\ $SIZE\ of\ 70\.8\ KiB\ \([0-9]+%\)\ $RATE\ requests/s\ $TIME\ ETA\ (-|$TIME)$ ]]
	done
	tty "kvgen -o cap.kvcap $TRACE"
	grep -q "${CR}${ESC}\[Kkvgen: policy kv: 300 requests" <<<"$output"
	tty "kvgen --limit 100 -o cap.kvcap $TRACE"
	run drawn "$output"
	assert_success
	[[ ${lines[0]} =~ ^kvgen:\ $SIZE\ $RATE\ requests/s\ $TIME$ ]]
}

@test "a message in mid-run erases the line first: it stands alone" {
	capture 500
	printf '\xc1' > bad
	tty "(cat cap.kvcap; sleep 0.7; cat bad) | kvdecode -o out.jsonl"
	[ "$status" -eq 65 ]
	# the line was there while the input was quiet ...
	run drawn "$output"
	[[ ${lines[-1]} =~ records/s ]]
	tty "(cat cap.kvcap; sleep 0.7; cat bad) | kvdecode -o out.jsonl"
	# ... and is erased before the message, which starts its own line
	grep -q "${CR}${ESC}\[Kkvdecode: stdin: record 501: " <<<"$output"
}

@test "a narrow terminal: the line is cut to its width, the last column left free" {
	capture
	tty "stty cols 40; kvdecode -o out.jsonl cap.kvcap"
	assert_success
	run drawn "$output"
	assert_success
	for l in "${lines[@]}"; do
		[ "${#l}" -le 39 ]
	done
	[ "${#lines[0]}" -eq 39 ]
	tty "stty cols 200; kvdecode -o out.jsonl cap.kvcap"
	run drawn "$output"
	[ "${#lines[0]}" -gt 60 ]
}

@test "kvnats -P: records a second of the captures' size; --progress goes with -P alone" {
	run --separate-stderr kvnats -C --progress -o x.kvcap
	assert_failure 64
	assert_equal "${stderr_lines[0]}" "kvnats: --progress and --no-progress go with -P"
	run --separate-stderr kvnats -L --no-progress
	assert_failure 64
	p=$(port)
	nats-server -a 127.0.0.1 -p "$p" -js -sd "$T/js" > nats.log 2>&1 &
	echo $! > nats.pid
	i=0
	until grep -qs 'Server is ready' nats.log; do
		sleep 0.05
		i=$((i + 1))
		[ $i -lt 200 ] || fail "nats-server not ready after 10 s"
	done
	capture 300
	run --separate-stderr kvnats -P --progress -s "nats://127.0.0.1:$p" cap.kvcap
	assert_success
	size=$(kvdecode --progress cap.kvcap 2>&1 >/dev/null | tail -1 | cut -d' ' -f2,3)
	progress=$(grep 'records/s' <<<"$stderr")
	[[ $(head -1 <<<"$progress") =~ ^kvnats:\ $SIZE\ of\ $size\ \([0-9]+%\)\ $RATE\ records/s\ $TIME\ ETA\ (-|$TIME)$ ]]
	[[ $(tail -1 <<<"$progress") =~ ^kvnats:\ $size\ of\ $size\ \(100%\)\ [0-9.]+[kM]?\ records/s\ $TIME$ ]]
	[[ ${stderr_lines[-1]} == "kvnats: stream KVTOOLS: records: 300 published, 300 stored, "* ]]
	run --separate-stderr kvnats -P -q -s "nats://127.0.0.1:$p" --stream OTHER cap.kvcap
	assert_success
	[ -z "$stderr" ]
}

@test "kvpub on a terminal: the captures played of their size, records a second, erased before the mapping and the statistics" {
	capture 300
	tty "kvpub --speed max --slow-joiner-wait 0 --linger 0 --single ipc://$T/p cap.kvcap"
	assert_success
	screen=$output
	run drawn "$screen"
	assert_success
	[[ ${lines[0]} =~ ^kvpub:\ $SIZE\ of\ 256\.5\ KiB\ \([0-9]+%\)\ $RATE\ records/s\ $TIME\ ETA\ (-|$TIME)$ ]]
	# each message stands alone: the line is erased before it
	grep -q "${CR}${ESC}\[Kkvpub: tcp://10.0.0.0:5557 -> ipc://$T/p" <<<"$screen"
	# the statistics start a line of their own, nothing of the line after them
	tr '\r' '\n' <<<"$screen" | grep -E "^(${ESC}\[K)?kvpub: ipc://$T/p: 300 messages, [0-9]+ bytes\$"
	tr '\r' '\n' <<<"$screen" | sed '1,/300 messages/d' > after
	! grep -q -e 'records/s' -e "$ESC" after
	run --separate-stderr kvpub --progress --speed max --slow-joiner-wait 0 --linger 0 --single "ipc://$T/p" cap.kvcap
	assert_success

	[[ ${stderr_lines[-2]} =~ ^kvpub:\ 256\.5\ KiB\ of\ 256\.5\ KiB\ \(100%\)\ [0-9.]+[kM]?\ records/s\ $TIME$ ]]
	# --loop: no end to measure against
	tty "kvpub --loop -c 200 --speed max --slow-joiner-wait 0 --linger 0 --single ipc://$T/p cap.kvcap"
	run drawn "$output"
	[[ ${lines[0]} =~ ^kvpub:\ $SIZE\ $RATE\ records/s\ $TIME$ ]]
	# -q: none, and the mapping to stdout is the same with the line as without it
	run --separate-stderr kvpub -q --speed max --slow-joiner-wait 0 --linger 0 --single "ipc://$T/p" cap.kvcap
	[ -z "$stderr" ]
	kvpub --progress -o on.jsonl --speed max --slow-joiner-wait 0 --linger 0 --single "ipc://$T/p" cap.kvcap 2>/dev/null
	kvpub --no-progress -o off.jsonl --speed max --slow-joiner-wait 0 --linger 0 --single "ipc://$T/p" cap.kvcap 2>/dev/null
	cmp on.jsonl off.jsonl
}

teardown() {
	if [ -f "$T/nats.pid" ]; then
		kill "$(cat "$T/nats.pid")" 2>/dev/null || true
		wait "$(cat "$T/nats.pid")" 2>/dev/null || true
	fi
}
