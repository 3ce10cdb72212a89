#!/usr/bin/env bats
# kvpub: captures published again, checked with kvsub (the subscriber) and
# capdump (tests/helpers/capdump.c).  Every network test runs on 127.0.0.1
# or ipc://, with kvsub bounded by -c and -W and every wait bounded.
load helper

# The fields of a record that must survive a round trip: topic, seq,
# payload and the number of frames (capdump columns 3-6).  Flags and
# recv_ns are the subscriber's own.
frames() { capdump "$1" 2>/dev/null | cut -f3-6; }
frames_of() { capdump "$1" 2>/dev/null | grep "^$2	" | cut -f3-6; }
seqs() { capdump "$1" 2>/dev/null | cut -f4 | tr '\n' ' '; }

# N records 1 ms apart (--step NS to change), one event each, from one src.
gen() {
	local n=$1; shift
	for ((i = 0; i < n; i++)); do echo '[1.5, [["AllBlocksCleared"]], 0]'; done | j2mp --topic kv "$@"
}

@test "kvpub --help prints usage on stdout and exits 0" {
	run --separate-stderr kvpub --help
	assert_success
	assert_line --index 0 'Usage: kvpub [OPTION]... [FILE]...'
	assert_output --partial '--replay-shape v0.25|v0.26'
	assert_output --partial '--slow-joiner-wait SECS'
	[ -z "$stderr" ]
}

@test "kvpub --version names the program and version" {
	run kvpub --version
	assert_success
	assert_output --regexp '^kvpub [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "a bad option exits 64 with one line and Try 'kvpub --help'." {
	run --separate-stderr kvpub --no-such-option
	assert_equal "$status" 64
	assert_equal "${#stderr_lines[@]}" 2
	assert_equal "${stderr_lines[1]}" "Try 'kvpub --help'."
}

@test "bad option values name the option" {
	run --separate-stderr kvpub --speed fast --single ipc://x
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvpub: --speed: 'fast' is not a positive number or max"
	assert_equal "${stderr_lines[1]}" "Try 'kvpub --help'."
	run --separate-stderr kvpub --replay-shape v0.27 --single ipc://x
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvpub: --replay-shape: 'v0.27' is not v0.25 or v0.26"
	run --separate-stderr kvpub --map tcp://a:1 --single ipc://x
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvpub: --map: 'tcp://a:1' is not SRC=ENDPOINT: no '='"
	run --separate-stderr kvpub --port-base 70000
	assert_equal "${stderr_lines[0]}" "kvpub: --port-base: '70000' is not a port number"
	run --separate-stderr kvpub --drop 5-2 --single ipc://x
	assert_equal "${stderr_lines[0]}" "kvpub: --drop: '5-2' is not N or N-M (record numbers from 1)"
	run --separate-stderr kvpub --start soon --single ipc://x
	assert_equal "${stderr_lines[0]}" "kvpub: --start: 'soon' is not seconds after the first record or @NS"
	run --separate-stderr kvpub --start 5 --end 2 --single ipc://x
	assert_equal "${stderr_lines[0]}" "kvpub: --end must come after --start"
	run --separate-stderr kvpub -c 0 --single ipc://x
	assert_equal "${stderr_lines[0]}" "kvpub: -c: '0' is not a count of 1 or more"
}

@test "nowhere to publish, or --single with --map, is a usage error" {
	run --separate-stderr kvpub x.kvcap
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvpub: nowhere to publish: give --map, --port-base or --single"
	run --separate-stderr kvpub --single ipc://a --map s=ipc://b x.kvcap
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvpub: --single publishes everything on one socket: no --map or --port-base with it"
}

@test "an input that cannot be opened exits 66 before anything is bound" {
	run --separate-stderr kvpub --single "ipc://$T/pub" missing.kvcap
	assert_equal "$status" 66
	assert_equal "$stderr" "kvpub: missing.kvcap: No such file or directory"
	[ ! -e "$T/pub" ]
}

@test "--loop refuses an input that cannot be read again" {
	gen 3 > g.kvcap
	run --separate-stderr bash -c "cat g.kvcap | kvpub --loop --single ipc://$T/pub"
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvpub: --loop: stdin cannot be read again (not a file)"
}

@test "an endpoint ZMQ rejects exits 64 naming it" {
	gen 3 > g.kvcap
	run --separate-stderr kvpub --single 'bogus://nowhere' g.kvcap
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvpub: bogus://nowhere: cannot bind: Protocol not supported"
}

@test "round trip: every frame of every source arrives identical, one port per source in order of first appearance" {
	# Five publishers' fixtures concatenated: three sources, headers in
	# mid-stream, a seq that goes back (41 then 0 on 10.0.0.5:5557).
	cat "$FIX"/memcache.kvcap "$FIX"/mooncake.kvcap "$FIX"/vllm-0.26-map.kvcap \
	    "$FIX"/vllm-0.9-array.kvcap "$FIX"/vllm-array-dp1.kvcap > in.kvcap
	p=$(port 8)
	kvsub -c 6 -W 10 -o got.kvcap "tcp://127.0.0.1:$p" "tcp://127.0.0.1:$((p + 1))" "tcp://127.0.0.1:$((p + 2))" 2>/dev/null & sub=$!
	run --separate-stderr kvpub --port-base "$p" --speed max --linger 0 in.kvcap
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "${stderr_lines[0]}" "kvpub: tcp://kvs-master.default.svc:5557 -> tcp://127.0.0.1:$p"
	assert_equal "${stderr_lines[1]}" "kvpub: tcp://10.0.0.5:5557 -> tcp://127.0.0.1:$((p + 1))"
	assert_equal "${stderr_lines[2]}" "kvpub: tcp://10.0.0.5:5558 -> tcp://127.0.0.1:$((p + 2))"
	assert_equal "${stderr_lines[3]}" "kvpub: tcp://127.0.0.1:$p: 2 messages, $(capdump in.kvcap 2>/dev/null | grep '^tcp://kvs' | awk -F'\t' '{n += (length($3) + length($5)) / 2 + 8} END {print n}') bytes"
	assert_equal "${#stderr_lines[@]}" 6
	# each source's records, in their order, byte for byte
	assert_equal "$(frames_of got.kvcap "tcp://127.0.0.1:$p")" "$(frames_of in.kvcap tcp://kvs-master.default.svc:5557)"
	assert_equal "$(frames_of got.kvcap "tcp://127.0.0.1:$((p + 1))")" "$(frames_of in.kvcap tcp://10.0.0.5:5557)"
	assert_equal "$(frames_of got.kvcap "tcp://127.0.0.1:$((p + 2))")" "$(frames_of in.kvcap tcp://10.0.0.5:5558)"
	assert_equal "$(frames_of got.kvcap "tcp://127.0.0.1:$((p + 1))" | cut -f2 | tr '\n' ' ')" "41 0 "
}

@test "round trip of a large capture from stdin: sockets bound as sources appear" {
	synthcap -n 600 -s 3 -e 2 > in.kvcap
	p=$(port 8)
	kvsub -c 600 -W 20 -o got.kvcap "tcp://127.0.0.1:$p" "tcp://127.0.0.1:$((p + 1))" "tcp://127.0.0.1:$((p + 2))" 2>/dev/null & sub=$!
	run --separate-stderr bash -c "cat in.kvcap | kvpub --port-base $p --speed max --linger 0"
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "${stderr_lines[0]}" "kvpub: tcp://10.0.0.0:5557 -> tcp://127.0.0.1:$p"
	assert_equal "${stderr_lines[2]}" "kvpub: tcp://10.0.0.2:5557 -> tcp://127.0.0.1:$((p + 2))"
	for k in 0 1 2; do
		assert_equal "$(frames_of got.kvcap "tcp://127.0.0.1:$((p + k))")" "$(frames_of in.kvcap "tcp://10.0.0.$k:5557")"
	done
	assert_equal "$(capdump got.kvcap 2>/dev/null | wc -l)" 600
}

@test "--single publishes every source on one socket, in input order" {
	cat "$FIX"/memcache.kvcap "$FIX"/vllm-array-dp1.kvcap "$FIX"/mooncake.kvcap > in.kvcap
	kvsub -c 4 -W 10 -o got.kvcap "ipc://$T/all" 2>/dev/null & sub=$!
	run --separate-stderr kvpub --single "ipc://$T/all" --speed max --linger 0 in.kvcap
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "$(frames got.kvcap)" "$(frames in.kvcap)"
	assert_equal "${stderr_lines[0]}" "kvpub: tcp://kvs-master.default.svc:5557 -> ipc://$T/all"
	assert_equal "${stderr_lines[1]}" "kvpub: tcp://10.0.0.5:5558 -> ipc://$T/all"
	assert_equal "${#stderr_lines[@]}" 3
}

@test "-o writes the mapping as JSON lines, with replay endpoints" {
	gen 2 --src tcp://10.0.0.5:5557 > a.kvcap
	gen 2 --src tcp://10.0.0.6:5557 > b.kvcap
	p=$(port 16); q=$((p + 8))
	run --separate-stderr kvpub -q --port-base "$p" --replay-port-base "$q" --speed max --slow-joiner-wait 0 --linger 0 -o map.jsonl a.kvcap b.kvcap
	assert_success
	[ -z "$stderr" ]
	run jq -c . map.jsonl
	assert_line --index 0 "{\"src\":\"tcp://10.0.0.5:5557\",\"endpoint\":\"tcp://127.0.0.1:$p\",\"replay_endpoint\":\"tcp://127.0.0.1:$q\"}"
	assert_line --index 1 "{\"src\":\"tcp://10.0.0.6:5557\",\"endpoint\":\"tcp://127.0.0.1:$((p + 1))\",\"replay_endpoint\":\"tcp://127.0.0.1:$((q + 1))\"}"
}

@test "a wildcard port is shown as the port that was bound" {
	gen 1 > g.kvcap
	run --separate-stderr kvpub --single 'tcp://127.0.0.1:*' --slow-joiner-wait 0 --linger 0 g.kvcap
	assert_success
	[[ ${stderr_lines[0]} =~ ^kvpub:\ tcp://10\.0\.0\.5:5557\ -\>\ tcp://127\.0\.0\.1:([0-9]+)$ ]]
	assert_equal "${stderr_lines[1]}" "kvpub: tcp://127.0.0.1:${BASH_REMATCH[1]}: 1 messages, 40 bytes"
}

# Inter-arrival times at kvsub, in ms with two decimals, from kvdecode's recv_ns.
arrival_gaps() {
	kvdecode "$1" | jq -r .recv_ns | awk 'NR > 1 {printf "%.2f\n", ($1 - p) / 1e6} {p = $1}'
}

# Tolerance: every gap within 25 ms of the recorded one divided by the
# speed, and the whole span within 25 ms (the pace does not drift).
gaps_ok() {
	local want=$1 n=$2 g total
	mapfile -t gaps < <(arrival_gaps got.kvcap)
	[ "${#gaps[@]}" -eq "$n" ] || { echo "# ${#gaps[@]} gaps, expected $n" >&3; return 1; }
	for g in "${gaps[@]}"; do
		awk -v g="$g" -v w="$want" 'BEGIN {exit !(g > w - 25 && g < w + 25)}' ||
			{ echo "# gap $g ms, expected $want: ${gaps[*]}" >&3; return 1; }
	done
	total=$(printf '%s\n' "${gaps[@]}" | awk '{s += $1} END {print s}')
	awk -v s="$total" -v w="$((want * n))" 'BEGIN {exit !(s > w - 25 && s < w + 25)}' ||
		{ echo "# span $total ms, expected $((want * n))" >&3; return 1; }
}

# Plays in.kvcap at the given speed into kvsub and checks the gaps; a busy
# machine can stall a process for longer than the tolerance, so a failed
# measurement is taken once more before it counts.
timed_round_trip() {
	local speed=$1 want=$2 p try
	for try in 1 2; do
		p=$(port 8)
		kvsub -c 11 -W 10 -o got.kvcap "tcp://127.0.0.1:$p" 2>/dev/null & sub=$!
		kvpub -q --single "tcp://127.0.0.1:$p" --speed "$speed" --linger 0 in.kvcap
		wait_for $sub 20
		[ "$status" -eq 0 ] && gaps_ok "$want" 10 && return 0
	done
	return 1
}

@test "--speed 1 keeps the recorded gaps (each within 25 ms, no drift)" {
	gen 11 --step 100000000 > in.kvcap
	start=$(date +%s%N)
	timed_round_trip 1 100
	end=$(date +%s%N)
	# at least the 0.5 s slow-joiner wait and 1 s of recorded time
	[ $(( (end - start) / 1000000 )) -ge 1450 ]
}

@test "--speed 4 divides the gaps by four; --speed max does not wait" {
	gen 11 --step 100000000 > in.kvcap
	timed_round_trip 4 25
	start=$(date +%s%N)
	run kvpub -q --single "ipc://$T/p" --speed max --slow-joiner-wait 0 --linger 0 in.kvcap
	end=$(date +%s%N)
	assert_success
	[ $(( (end - start) / 1000000 )) -lt 800 ]
}

@test "--start and --end cut a time window; -c stops after N records" {
	gen 30 > in.kvcap
	kvsub -c 10 -W 10 -o got.kvcap "ipc://$T/p" 2>/dev/null & sub=$!
	# 1 ms apart: seconds after the first record, and an absolute recv_ns
	run --separate-stderr kvpub -v --single "ipc://$T/p" --speed max --linger 0 --start 0.005 --end @1764500000015000000 in.kvcap
	wait_for $sub 20
	assert_equal "$(seqs got.kvcap)" "5 6 7 8 9 10 11 12 13 14 "
	assert_equal "${stderr_lines[-1]}" "kvpub: 30 records read, 10 published, 20 outside the time window, 0 bad"
	kvsub -c 4 -W 10 -o got.kvcap "ipc://$T/p" 2>/dev/null & sub=$!
	run --separate-stderr kvpub --single "ipc://$T/p" --speed max --linger 0 --start 0.020 -c 4 in.kvcap
	wait_for $sub 20
	assert_equal "$(seqs got.kvcap)" "20 21 22 23 "
	assert_equal "${stderr_lines[1]}" "kvpub: ipc://$T/p: 4 messages, 160 bytes"
}

@test "--loop plays the input again (the subscriber sees restarts) until -c" {
	gen 10 > in.kvcap
	kvsub -c 25 -W 10 -o got.kvcap "ipc://$T/p" 2>err & sub=$!
	run --separate-stderr kvpub --single "ipc://$T/p" --speed max --linger 0 --loop -c 25 in.kvcap
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "$(seqs got.kvcap)" "0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 "
	run cat err
	assert_output --regexp ' 25 messages, [0-9]+ bytes, 0 gaps, 0 missing, 0 replayed, 2 restarts, 0 bad seq$'
}

@test "--loop at --speed 1 goes on with the next pass without a pause" {
	gen 3 --step 100000000 > in.kvcap
	kvsub -c 7 -W 10 -o got.kvcap "ipc://$T/p" 2>/dev/null & sub=$!
	kvpub -q --single "ipc://$T/p" --linger 0 --loop -c 7 in.kvcap
	wait_for $sub 20
	assert_equal "$(seqs got.kvcap)" "0 1 2 0 1 2 0 "
	run arrival_gaps got.kvcap
	# 100, 100, ~0 (end of a pass to the start of the next), 100, 100, ~0
	awk -v g="${lines[2]}" 'BEGIN {exit !(g < 50)}'
	awk -v g="${lines[3]}" 'BEGIN {exit !(g > 50)}'
}

# kvsub's gap replay against kvpub's replay socket.  The scenario: kvpub
# --drop 11-15 leaves out the 11th to 15th records (seqs 10-14) on the way,
# as a network that lost them would, while its replay buffer holds them as
# vLLM's does; kvsub sees seq 15 after 9, asks kvpub's ROUTER for 10.. and
# writes the five it gets back flagged as replayed, in seq order.
gap_replay() {
	local shape=$1 p q
	gen 30 --step 10000000 > in.kvcap
	p=$(port 16); q=$((p + 8))
	kvsub -c 30 -W 10 --replay "tcp://127.0.0.1:$p=tcp://127.0.0.1:$q" -o got.kvcap "tcp://127.0.0.1:$p" 2>err & sub=$!
	run --separate-stderr kvpub --map "tcp://10.0.0.5:5557=tcp://127.0.0.1:$p" --replay-port-base "$q" \
		--replay-shape "$shape" --drop 11-15 in.kvcap
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "${stderr_lines[0]}" "kvpub: tcp://10.0.0.5:5557 -> tcp://127.0.0.1:$p, replay tcp://127.0.0.1:$q"
	assert_equal "${stderr_lines[1]%, [0-9]* replayed}" "kvpub: tcp://127.0.0.1:$p: 25 messages, 1000 bytes, 5 dropped, 1 replay requests"
	assert_equal "$(frames got.kvcap)" "$(frames in.kvcap)"
	assert_equal "$(capdump got.kvcap 2>/dev/null | cut -f2 | tr -d '\n')" "000000000011111000000000000000"
	# one gap, which the replay filled
	run cat err
	assert_output --regexp ' 25 messages, [0-9]+ bytes, 1 gaps, 0 missing, 5 replayed, 0 restarts, 0 bad seq$'
}

@test "kvsub fills a gap from kvpub's replay socket, vLLM 0.25 reply shape" {
	gap_replay v0.25
}

@test "kvsub fills a gap from kvpub's replay socket, vLLM 0.26 reply shape" {
	gap_replay v0.26
}

# The exact frames of kvpub's replies, as a DEALER that sends vLLM's
# request sees them (tests/helpers/replayreq.c, independent of lib/net/replay.c):
# kvpub publishes three batches and lingers; the request is repeated until
# the three have gone out (a reply then has them all), at most ~10 s.
# Prints replayreq's lines for the request from seq $2.
replay_lines() {
	local shape=$1 from=$2 i
	printf '%s\n' '[1.5, [["BlockRemoved", [1]]], 0]' '[1.5, [["BlockRemoved", [2]]], 0]' '[1.5, [["BlockRemoved", [3]]], 0]' |
		j2mp --topic kv > in.kvcap
	kvpub -q --single "ipc://$T/p" --replay-map "tcp://10.0.0.5:5557=ipc://$T/r" --replay-shape "$shape" \
		--speed max --slow-joiner-wait 0 --linger 15 in.kvcap & pub=$!
	for i in $(seq 1 20); do
		replayreq -t 500 "ipc://$T/r" 0 > all.txt 2>/dev/null && [ "$(wc -l < all.txt)" -eq 4 ] && break
		sleep 0.05
	done
	replayreq -t 2000 "ipc://$T/r" "$from"
	kill -TERM $pub
	wait_for $pub 5
}

# Payload of record N (1-based) of in.kvcap, in hex.
payload_hex() { capdump in.kvcap 2>/dev/null | sed -n "$1p" | cut -f5; }

@test "replay replies in the vLLM 0.25 shape: ['', seq, payload], end ['', ff x 8, '']" {
	run --separate-stderr replay_lines v0.25 0
	assert_success
	assert_equal "$output" "3 - 0000000000000000 $(payload_hex 1)
3 - 0000000000000001 $(payload_hex 2)
3 - 0000000000000002 $(payload_hex 3)
3 - ffffffffffffffff -"
	run --separate-stderr replay_lines v0.25 2
	assert_success
	assert_equal "$output" "3 - 0000000000000002 $(payload_hex 3)
3 - ffffffffffffffff -"
}

@test "replay replies in the vLLM 0.26 shape: ['', topic, seq, payload], end ['', '', ff x 8, '']" {
	run --separate-stderr replay_lines v0.26 1
	assert_success
	assert_equal "$output" "4 - 6b76 0000000000000001 $(payload_hex 2)
4 - 6b76 0000000000000002 $(payload_hex 3)
4 - - ffffffffffffffff -"
	run --separate-stderr replay_lines v0.26 3
	assert_success
	assert_equal "$output" "4 - - ffffffffffffffff -"
}

@test "records flagged as replayed are published like the others" {
	gap_replay v0.26
	cp got.kvcap in2.kvcap
	kvsub -c 30 -W 10 -o again.kvcap "ipc://$T/p" 2>/dev/null & sub=$!
	kvpub -q --single "ipc://$T/p" --speed max --linger 0 in2.kvcap
	wait_for $sub 20
	assert_equal "$(frames again.kvcap)" "$(frames in.kvcap)"
	assert_equal "$(capdump again.kvcap 2>/dev/null | cut -f2 | tr -d '\n')" "000000000000000000000000000000"
}

@test "a late subscriber recovers what kvpub published before it with --replay-from 0" {
	gen 20 --step 100000000 > in.kvcap
	p=$(port 16); q=$((p + 8))
	kvpub -q --single "tcp://127.0.0.1:$p" --replay-port-base "$q" --slow-joiner-wait 0 in.kvcap & pub=$!
	sleep 0.7
	kvsub -c 20 -W 10 --replay-from 0 --replay "tcp://127.0.0.1:$p=tcp://127.0.0.1:$q" -o got.kvcap "tcp://127.0.0.1:$p" 2>err
	wait_for $pub 20
	assert_equal "$status" 0
	assert_equal "$(seqs got.kvcap)" "$(seq 0 19 | tr '\n' ' ')"
	assert_equal "$(frames got.kvcap)" "$(frames in.kvcap)"
	run cat err
	assert_output --regexp ' 0 gaps, 0 missing, [1-9][0-9]* replayed, 0 restarts'
}

@test "--buffer-steps bounds what a replay can bring back" {
	gen 20 --step 100000000 > in.kvcap
	p=$(port 16); q=$((p + 8))
	kvpub -q --single "tcp://127.0.0.1:$p" --replay-port-base "$q" --buffer-steps 3 --slow-joiner-wait 0 in.kvcap & pub=$!
	sleep 1
	kvsub -W 2 --replay-from 0 --replay "tcp://127.0.0.1:$p=tcp://127.0.0.1:$q" -o got.kvcap "tcp://127.0.0.1:$p" 2>err
	wait_for $pub 20
	# The replay starts later than asked (the buffer holds the last three),
	# then the live stream follows without a gap up to the end.
	run seqs got.kvcap
	first=${output%% *}
	[ "$first" -gt 0 ]
	assert_equal "$output" "$(seq "$first" 19 | tr '\n' ' ')"
	run cat err
	assert_output --regexp ' 0 gaps, 0 missing, [1-3] replayed, 0 restarts'
}

@test "a truncated capture: the complete records are published, then exit 65" {
	gen 20 > full.kvcap
	head -c -5 full.kvcap > cut.kvcap
	kvsub -c 19 -W 10 -o got.kvcap "ipc://$T/p" 2>/dev/null & sub=$!
	run --separate-stderr kvpub --single "ipc://$T/p" --speed max --linger 0 cut.kvcap
	wait_for $sub 20
	assert_equal "$status" 0
	run --separate-stderr kvpub --single "ipc://$T/q" --speed max --slow-joiner-wait 0 --linger 0 cut.kvcap
	assert_equal "$status" 65
	assert_equal "${stderr_lines[1]}" "kvpub: cut.kvcap: $(capdump cut.kvcap 2>&1 >/dev/null | head -1 | sed 's/^capdump: //')"
	assert_equal "${stderr_lines[2]}" "kvpub: ipc://$T/q: 19 messages, 760 bytes"
	assert_equal "$(frames got.kvcap)" "$(frames full.kvcap | head -19)"
}

@test "an input that is not a capture is reported, exit 65" {
	echo '{"not": "a capture"}' > notcap.json
	run --separate-stderr kvpub --single "ipc://$T/p" --slow-joiner-wait 0 --linger 0 notcap.json
	assert_equal "$status" 65
	assert_equal "${stderr_lines[0]}" "kvpub: notcap.json: not a kvcap capture (it does not start with a kvcap header)"
}

@test "a first object that is a map but no kvcap header: nothing of that input is published, exit 65" {
	# A bare payload map, then a whole capture: its records must not go out.
	{ j2mp --payload <<< '{"events": []}'; gen 3; } > bad.kvcap
	gen 3 > good.kvcap
	kvsub -c 3 -W 10 -o got.kvcap "ipc://$T/p" 2>/dev/null & sub=$!
	run --separate-stderr kvpub --single "ipc://$T/p" --speed max --linger 0 bad.kvcap good.kvcap
	wait_for $sub 20
	assert_equal "$status" 0
	run --separate-stderr kvpub --single "ipc://$T/q" --speed max --slow-joiner-wait 0 --linger 0 bad.kvcap good.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvpub: bad.kvcap: not a kvcap capture (it does not start with a kvcap header)
kvpub: tcp://10.0.0.5:5557 -> ipc://$T/q
kvpub: ipc://$T/q: 3 messages, 120 bytes"
	assert_equal "$(frames got.kvcap)" "$(frames good.kvcap)"
	run --separate-stderr kvpub --single "ipc://$T/q" --slow-joiner-wait 0 --linger 0 bad.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvpub: bad.kvcap: not a kvcap capture (it does not start with a kvcap header)
kvpub: ipc://$T/q: 0 messages, 0 bytes"
	# kvdecode refuses it with the same rule
	run --separate-stderr kvdecode bad.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvdecode: bad.kvcap: record 1: not a kvcap capture (it does not start with a kvcap header); --payload reads bare payloads"
}

@test "records of a source not in --map are skipped with one warning and a count" {
	{ gen 5 --src tcp://10.0.0.5:5557; gen 3 --src tcp://10.0.0.9:5557; } > in.kvcap
	kvsub -c 5 -W 10 -o got.kvcap "ipc://$T/p" 2>/dev/null & sub=$!
	run --separate-stderr kvpub --map "tcp://10.0.0.5:5557=ipc://$T/p" --speed max --linger 0 in.kvcap
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "$stderr" "kvpub: tcp://10.0.0.5:5557 -> ipc://$T/p
kvpub: tcp://10.0.0.9:5557: not in --map; its records are skipped
kvpub: ipc://$T/p: 5 messages, 200 bytes
kvpub: 3 records of sources not in --map skipped"
	assert_equal "$(frames got.kvcap)" "$(frames_of in.kvcap tcp://10.0.0.5:5557)"
}

@test "a mapped source the files do not have is a usage error before anything is published" {
	gen 3 > in.kvcap
	run --separate-stderr kvpub --map "tcp://10.0.0.5:5557=ipc://$T/p" --map "tcp://10.0.0.7:5557=ipc://$T/q" \
		--map "tcp://10.0.0.8:5557=ipc://$T/q" --slow-joiner-wait 0 --linger 0 in.kvcap
	assert_equal "$status" 64
	# the files are read first (the mapping line), nothing goes out (no statistics)
	assert_equal "$stderr" "kvpub: tcp://10.0.0.5:5557 -> ipc://$T/p
kvpub: --map tcp://10.0.0.7:5557: no record of this source in the input
kvpub: --map tcp://10.0.0.8:5557: no record of this source in the input
Try 'kvpub --help'."
	run --separate-stderr kvpub -q --single "ipc://$T/s" --replay-map "tcp://10.0.0.9:1=ipc://$T/r" --slow-joiner-wait 0 --linger 0 in.kvcap
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvpub: --replay-map tcp://10.0.0.9:1: no record of this source in the input"
}

@test "a mapped source a pipe never brought is named at the end, exit 65" {
	gen 3 > in.kvcap
	kvsub -c 3 -W 10 -o got.kvcap "ipc://$T/p" 2>/dev/null & sub=$!
	run --separate-stderr bash -c "cat in.kvcap | kvpub --map tcp://10.0.0.5:5557=ipc://$T/p --map tcp://10.0.0.7:5557=ipc://$T/q --speed max --linger 0"
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "$(frames got.kvcap)" "$(frames in.kvcap)"
	run --separate-stderr bash -c "cat in.kvcap | kvpub --map tcp://10.0.0.5:5557=ipc://$T/p --map tcp://10.0.0.7:5557=ipc://$T/q --speed max --slow-joiner-wait 0 --linger 0"
	assert_equal "$status" 65
	assert_equal "$stderr" "kvpub: tcp://10.0.0.5:5557 -> ipc://$T/p
kvpub: --map tcp://10.0.0.7:5557: no record of this source in the input
kvpub: ipc://$T/p: 3 messages, 120 bytes
kvpub: ipc://$T/q: 0 messages, 0 bytes"
	# -c ends the run before the input does: nothing is known about the rest
	run --separate-stderr bash -c "cat in.kvcap | kvpub -q -c 1 --map tcp://10.0.0.5:5557=ipc://$T/p --map tcp://10.0.0.7:5557=ipc://$T/q --speed max --slow-joiner-wait 0 --linger 0"
	assert_success
	[ -z "$stderr" ]
}

@test "--map and --port-base combine: mapped sources first, the rest on ports" {
	{ gen 2 --src tcp://10.0.0.5:5557; gen 2 --src tcp://10.0.0.9:5557; } > in.kvcap
	p=$(port 8)
	run --separate-stderr kvpub --map "tcp://10.0.0.9:5557=ipc://$T/nine" --port-base "$p" --speed max --slow-joiner-wait 0 --linger 0 in.kvcap
	assert_success
	assert_equal "${stderr_lines[0]}" "kvpub: tcp://10.0.0.5:5557 -> tcp://127.0.0.1:$p"
	assert_equal "${stderr_lines[1]}" "kvpub: tcp://10.0.0.9:5557 -> ipc://$T/nine"
}

@test "binding a port in use exits 69 naming the endpoint" {
	gen 3 > in.kvcap
	p=$(port 16); q=$((p + 8))
	fakepub -n 1 -w 0 -l 4000 "tcp://127.0.0.1:$p" & busy=$!
	sleep 0.3
	run --separate-stderr kvpub --map "tcp://10.0.0.5:5557=tcp://127.0.0.1:$p" in.kvcap
	assert_equal "$status" 69
	assert_equal "$stderr" "kvpub: tcp://127.0.0.1:$p: cannot bind: Address already in use"
	run --separate-stderr kvpub --port-base "$p" in.kvcap
	assert_equal "$status" 69
	assert_equal "$stderr" "kvpub: tcp://127.0.0.1:$p: cannot bind: Address already in use"
	run --separate-stderr kvpub --single "tcp://127.0.0.1:$q" --replay-port-base "$p" in.kvcap
	assert_equal "$status" 69
	assert_equal "$stderr" "kvpub: tcp://127.0.0.1:$p: cannot bind: Address already in use"
	stop_bg $busy
}

@test "two replay sockets for one publishing socket is a usage error" {
	gen 3 > in.kvcap
	run --separate-stderr kvpub --single "ipc://$T/p" --replay-map "a=ipc://$T/r1" --replay-map "b=ipc://$T/r2" in.kvcap
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvpub: ipc://$T/p: already served by the replay socket ipc://$T/r1"
}

@test "SIGINT while waiting for the next record's time exits 0 at once, with statistics" {
	gen 3 --step 100000000000 > in.kvcap
	kvpub --single "ipc://$T/p" --slow-joiner-wait 0 in.kvcap 2>err & pub=$!
	sleep 0.5
	start=$(date +%s%N)
	kill -INT $pub
	wait_for $pub 5
	end=$(date +%s%N)
	assert_equal "$status" 0
	[ $(( (end - start) / 1000000 )) -lt 500 ]
	run cat err
	assert_line --index 1 "kvpub: stopped by SIGINT before the end"
	assert_line --index 2 "kvpub: ipc://$T/p: 1 messages, 40 bytes"
}

@test "SIGTERM while waiting for input on a pipe exits 0, replay still served meanwhile" {
	gen 5 > in.kvcap
	p=$(port 16); q=$((p + 8))
	mkfifo in.fifo
	kvpub --single "tcp://127.0.0.1:$p" --replay-port-base "$q" --speed max --slow-joiner-wait 0 in.fifo 2>err & pub=$!
	exec 4>in.fifo
	cat in.kvcap >&4
	sleep 0.5
	# kvpub is blocked on its input; its replay socket still answers.
	kvsub -c 5 -W 5 --replay-from 0 --replay "tcp://127.0.0.1:$p=tcp://127.0.0.1:$q" -o got.kvcap "tcp://127.0.0.1:$p" 2>/dev/null
	assert_equal "$(seqs got.kvcap)" "0 1 2 3 4 "
	start=$(date +%s%N)
	kill -TERM $pub
	wait_for $pub 5
	end=$(date +%s%N)
	exec 4>&-
	assert_equal "$status" 0
	[ $(( (end - start) / 1000000 )) -lt 500 ]
	run cat err
	assert_line --index 1 "kvpub: stopped by SIGTERM before the end"
	assert_line --index 2 "kvpub: tcp://127.0.0.1:$p: 5 messages, 200 bytes, 1 replay requests, 5 replayed"
}

# A kvgen capture (2 nodes x 2 DP ranks behind a memcache pool, caches
# small enough that blocks are evicted: engine and pool removals) goes
# through kvpub | kvsub | kvdecode | kvmatch, and must give exactly the
# index kvmatch builds from the capture itself.  What must differ is
# normalised away: the sources are named by kvpub's endpoints (mapped back
# with kvpub -o's mapping) and stamped with kvsub's recv_ns (the snapshot's
# now_ns, content times and sources' last receive times).  The registrations are rewritten from that
# mapping as doc/examples.md "Replaying traffic into another router" says: each
# worker keeps its original engine endpoint, whose host is what the pool's
# backend_id names, and gets kvpub's socket as its other endpoint.
# kvsub orders messages of different sockets as they come, so the pool
# events trail the engines' by --pool-lag 300 ms, played at the recorded
# pace (the ten requests of the trace all start at once): about 1 s.
@test "a kvgen capture through kvpub | kvsub | kvdecode | kvmatch gives the snapshot kvmatch gets from the capture" {
	head -10 "$ROOT/share/traces/conversation-300.jsonl" |
		kvgen -q --workers 2 --dp 2 --policy round-robin --pool memcache --capacity 200 --pool-capacity 400 \
			--pool-lag 300 --registrations regs.jsonl -o in.kvcap
	n=$(capdump in.kvcap 2>/dev/null | wc -l)
	assert_equal "$n" 20
	kvmatch -q --log none -r regs.jsonl -o direct.kvsnap in.kvcap
	p=$(port 8)
	# the mapping, from a pass that publishes one record to nobody
	kvpub -q --port-base "$p" --speed max --slow-joiner-wait 0 --linger 0 -c 1 -o map.jsonl in.kvcap
	jq -c --slurpfile m map.jsonl '($m | map({key: .src, value: .endpoint}) | from_entries) as $to
		| if .medium_endpoints then .medium_endpoints.cpu = $to[.medium_endpoints.npu]
		  else .endpoint = $to[.endpoint] end' regs.jsonl > wire.jsonl
	bash -c "kvsub -c $n -W 30 $(jq -r .endpoint map.jsonl | tr '\n' ' ') 2>/dev/null | tee got.kvcap |
		kvdecode | kvmatch -q --log none -r wire.jsonl -o wire.kvsnap" & sub=$!
	kvpub -q --port-base "$p" --linger 0 in.kvcap
	wait_for $sub 30
	assert_equal "$status" 0
	index() {
		kvmatch --dump "$1" | jq -c 'del(.now_ns, .t, .last_recv_ns)' |
			sed -f <(jq -r '"s|\"" + .endpoint + "\"|\"" + .src + "\"|"' map.jsonl)
	}
	run index direct.kvsnap
	# pool events were matched: 800 blocks are held in cpu, by the pool
	assert_equal "$(jq -c 'select(.kind == "block" and any(.holders[].media[]; . == "cpu"))' <<<"$output" | wc -l)" 800
	assert_equal "$(index wire.kvsnap)" "$output"
	# Registrations that only point the workers at kvpub's sockets lose
	# the pool events for the workers: their backend_id names hosts no
	# worker is on, so each pool holds its blocks itself (kvmatch(1)).
	jq -c 'if .medium_endpoints then .medium_endpoints = {npu: .medium_endpoints.cpu} else . end' wire.jsonl > naive.jsonl
	run --separate-stderr kvmatch --log none -r naive.jsonl -o naive.kvsnap got.kvcap
	assert_success
	assert_equal "${stderr_lines[0]}" 'kvmatch: 20 records, 49 events; 0 queued, 6986 offload_cached, 0 matched, 6986 confirmed, 19462 applied, 0 dropped, 0 pending_expired'
	assert_equal "$(kvmatch --dump naive.kvsnap | jq -r 'select(.kind == "block") | .holders[] | select(.pool) | .media[]' | sort | uniq -c | sed 's/^ *//')" "800 cpu"
}
