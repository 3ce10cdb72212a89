#!/usr/bin/env bats
# kvsub: live capture from local publishers (tests/helpers/fakepub.c).
load helper

# Capture fields that must equal what the publisher sent: topic, seq, payload.
frames() { capdump "$1" 2>/dev/null | cut -f3-5; }
published() { grep -v skipped "$1" | cut -f1-3; }

@test "kvsub --help prints usage on stdout and exits 0" {
	run --separate-stderr kvsub --help
	assert_success
	assert_line --index 0 'Usage: kvsub [OPTION]... [ENDPOINT]...'
	assert_output --partial '--replay SRC=ENDPOINT'
	[ -z "$stderr" ]
}

@test "kvsub --version names the program and version" {
	run kvsub --version
	assert_success
	assert_output --regexp '^kvsub [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "a bad option exits 64 with one line and Try 'kvsub --help'." {
	run --separate-stderr kvsub --no-such-option
	assert_equal "$status" 64
	assert_equal "${#stderr_lines[@]}" 2
	assert_equal "${stderr_lines[1]}" "Try 'kvsub --help'."
}

@test "a bad option value names the option" {
	run --separate-stderr kvsub -c 0 ipc://x
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: -c: '0' is not a count of 1 or more"
	run --separate-stderr kvsub -W soon ipc://x
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: -W: 'soon' is not a positive number of seconds"
	run --separate-stderr kvsub --max-message 67108865 ipc://x
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: --max-message: '67108865' is not a size from 1 to 67108864 bytes"
	run --separate-stderr kvsub --replay-retries -1 ipc://x
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: --replay-retries: '-1' is not a count from 0 to 1000"
}

@test "no endpoint at all is a usage error" {
	run --separate-stderr kvsub -o x.kvcap
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: no endpoints to capture from"
}

@test "an endpoint ZMQ rejects exits 64 naming it" {
	run --separate-stderr kvsub -o x.kvcap 'bogus://nowhere'
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: bogus://nowhere: cannot connect: Protocol not supported"
}

# kvsub PRECIOUS-FILE ARGS...: runs kvsub -o on a file that holds a capture
# of yesterday; set-up errors must come before -o truncates it.
kvsub_keeps() {
	local file=$1
	shift
	echo precious > "$file"
	run --separate-stderr kvsub -o "$file" "$@"
	assert_equal "$(cat "$file")" precious
}

@test "a set-up error leaves an existing -o file untouched" {
	kvsub_keeps day1.kvcap 'bogus://x'
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: bogus://x: cannot connect: Protocol not supported"
	kvsub_keeps day1.kvcap
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: no endpoints to capture from"
	echo '{"instance_id": 7}' > regs.jsonl
	kvsub_keeps day1.kvcap -r regs.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvsub: regs.jsonl: line 1: instance_id: expected a non-empty string"
	kvsub_keeps day1.kvcap -r missing.jsonl
	assert_equal "$status" 66
	assert_equal "$stderr" "kvsub: missing.jsonl: No such file or directory"
	kvsub_keeps day1.kvcap --replay "ipc://$T/other=ipc://$T/r" "ipc://$T/e"
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: ipc://$T/other: --replay names an endpoint that is not captured"
	kvsub_keeps day1.kvcap --replay "ipc://$T/e=bogus://r" "ipc://$T/e"
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: bogus://r: invalid replay endpoint (Protocol not supported)"
}

@test "endpoints ZMQ accepts but nothing could ever publish to exit 64" {
	run --separate-stderr kvsub -o x.kvcap 'tcp://127.0.0.1:99999'
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: tcp://127.0.0.1:99999: a tcp endpoint to connect to needs a host and a port from 1 to 65535"
	run --separate-stderr kvsub -o x.kvcap 'tcp://127.0.0.1'
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: tcp://127.0.0.1: a tcp endpoint to connect to needs a host and a port from 1 to 65535"
}

@test "binding a port in use exits 69 naming the endpoint" {
	p=$(port)
	fakepub -n 1 -w 0 -l 3000 "tcp://127.0.0.1:$p" & pub=$!
	sleep 0.3
	kvsub_keeps x.kvcap --bind "tcp://127.0.0.1:$p"
	stop_bg $pub
	assert_equal "$status" 69
	assert_equal "${stderr_lines[0]}" "kvsub: tcp://127.0.0.1:$p: cannot bind: Address already in use"
}

@test "kvsub refuses to write a capture to a terminal" {
	run script -qec "$BIN/kvsub ipc://$T/x" /dev/null
	assert_equal "$status" 64
	assert_output --partial 'refusing to write a binary capture to a terminal'
}

@test "N messages are captured byte for byte and read back" {
	p=$(port)
	kvsub -c 50 -W 10 -o cap.kvcap "tcp://127.0.0.1:$p" 2>err & sub=$!
	fakepub -n 50 -t kv@10.0.0.5 -L pub.log "tcp://127.0.0.1:$p"
	wait_for $sub 20
	assert_equal "$status" 0
	run frames cap.kvcap
	assert_output "$(published pub.log)"
	run --separate-stderr capdump cap.kvcap
	assert_line --index 0 --regexp "^tcp://127.0.0.1:$p	0	6b764031302e302e302e35	0	"
	assert_equal "$(grep -c . <<<"$output")" 50
	run cat err
	assert_output "kvsub: tcp://127.0.0.1:$p: 50 messages, $(( $(cut -f3 pub.log | tr -d '\n' | wc -c) / 2 + 50 * 19 )) bytes, 0 gaps, 0 missing, 0 replayed, 0 restarts, 0 bad seq"
}

@test "two publishers: every record names its own src" {
	p1=$(port 2); p2=$((p1 + 1))
	kvsub -c 40 -W 10 -o cap.kvcap "tcp://127.0.0.1:$p1" "ipc://$T/b" 2>/dev/null & sub=$!
	fakepub -n 20 -L a.log "tcp://127.0.0.1:$p1" & a=$!
	fakepub -n 20 -t other -L b.log "ipc://$T/b"
	wait_for $a
	wait_for $sub 20
	assert_equal "$status" 0
	run bash -c "capdump cap.kvcap 2>/dev/null | grep -c '^tcp://127.0.0.1:$p1	'"
	assert_output 20
	assert_equal "$(capdump cap.kvcap 2>/dev/null | grep "^ipc://$T/b	" | cut -f3-5)" "$(published b.log)"
	assert_equal "$(capdump cap.kvcap 2>/dev/null | grep "^tcp://127.0.0.1:$p1	" | cut -f3-5)" "$(published a.log)"
}

replay_fills_gap() {
	local shape=$1 p r
	p=$(port 2); r=$((p + 1))
	kvsub -c 30 -W 10 --replay "tcp://127.0.0.1:$p=tcp://127.0.0.1:$r" -o cap.kvcap "tcp://127.0.0.1:$p" 2>err & sub=$!
	fakepub -n 30 -t kv --skip 10-14 --replay "tcp://127.0.0.1:$r" --shape "$shape" -L pub.log "tcp://127.0.0.1:$p"
	wait_for $sub 20
	assert_equal "$status" 0
	# every batch, in seq order, the five replayed ones flagged
	assert_equal "$(frames cap.kvcap)" "$(cut -f1-3 pub.log)"
	assert_equal "$(capdump cap.kvcap 2>/dev/null | cut -f2 | tr -d '\n')" "000000000011111000000000000000"
	# a gap all the same, though a replay filled it
	run cat err
	assert_output --regexp ' 25 messages, [0-9]+ bytes, 1 gaps, 0 missing, 5 replayed, 0 restarts, 0 bad seq$'
}

@test "a seq gap is filled from the replay socket, vLLM 0.25 reply shape" {
	replay_fills_gap 25
}

@test "a seq gap is filled from the replay socket, vLLM 0.26 reply shape" {
	replay_fills_gap 26
}

# The seqs of a capture as runs, "FIRST-LAST:FLAG" (flag 1: replayed).
runs() {
	capdump "$1" 2>/dev/null | awk -F'\t' '
		NR == 1 || $4 != last + 1 || $2 != flag { if (NR > 1) printf "%s-%s:%s ", first, last, flag; first = $4; flag = $2 }
		{ last = $4 } END { if (NR) printf "%s-%s:%s\n", first, last, flag }'
}

@test "a replay socket that drops replies beyond its send HWM, as vLLM's does: kvsub asks again and recovers all it holds" {
	p=$(port 2); r=$((p + 1))
	# 2800 batches lost on the way; each answer of the publisher's replay
	# socket lets 500 replies through, then drops 300, and so on (its end
	# marker among them): kvsub got 500 of them and asked no more
	kvsub -c 3000 -W 20 --metrics m.prom --replay "tcp://127.0.0.1:$p=tcp://127.0.0.1:$r" -o cap.kvcap \
		"tcp://127.0.0.1:$p" 2>err & sub=$!
	fakepub -n 3000 -t kv --skip 100-2899 --replay "tcp://127.0.0.1:$r" --replay-drop 500/300 -l 10000 \
		-L pub.log "tcp://127.0.0.1:$p" & pub=$!
	wait_for $sub 30
	assert_equal "$status" 0
	stop_bg $pub
	# every batch once, in seq order, the 2800 that were lost flagged replayed
	assert_equal "$(runs cap.kvcap)" "0-99:0 100-2899:1 2900-2999:0"
	assert_equal "$(frames cap.kvcap)" "$(cut -f1-3 pub.log)"
	# one gap, filled: nothing missing
	run cat err
	assert_output --regexp "^kvsub: tcp://127.0.0.1:$p: 200 messages, [0-9]+ bytes, 1 gaps, 0 missing, 2800 replayed, 0 restarts, 0 bad seq$"
	run grep -v '^#' m.prom
	assert_line "kvtools_sub_messages_total{src=\"tcp://127.0.0.1:$p\"} 200"
	assert_line "kvtools_sub_gaps_total{src=\"tcp://127.0.0.1:$p\"} 1"
	assert_line "kvtools_sub_missing_batches_total{src=\"tcp://127.0.0.1:$p\"} 0"
	assert_line "kvtools_sub_replayed_total{src=\"tcp://127.0.0.1:$p\"} 2800"
	assert_line "kvtools_sub_records_total 3000"
	# the capture has no gap left
	run --separate-stderr kvdecode --stats cap.kvcap
	assert_success
	assert_equal "$stderr" "kvdecode: tcp://127.0.0.1:$p: 3000 batches, 3000 events (vllm: 3000 stored, 0 removed, 0 cleared), 0 gaps, 0 missing, 0 restarts, 2800 replayed, 0 ignored, 0 errors"
}

# replay_lossy RETRIES: a gap of 2899 batches (100..2998, revealed by the
# last one), the publisher holding its last 2000 (1000..2999), its replay
# socket letting 400 replies of each answer through and dropping the rest,
# end marker included; -c 101 + replayed stops kvsub once it is done.
replay_lossy() {
	p=$(port 2); r=$((p + 1))
	kvsub -c $((101 + $2)) -W 20 --metrics m.prom --replay-timeout 0.3 --replay-retries "$1" \
		--replay "tcp://127.0.0.1:$p=tcp://127.0.0.1:$r" -o cap.kvcap "tcp://127.0.0.1:$p" 2>err & sub=$!
	fakepub -n 3000 -S 26 -t kv --skip 100-2998 --buffer 2000 --replay "tcp://127.0.0.1:$r" \
		--replay-drop 400/100000 -l 15000 "tcp://127.0.0.1:$p" & pub=$!
	wait_for $sub 30
	end=$(date +%s%N)
	assert_equal "$status" 0
	stop_bg $pub
}

@test "replies and end marker dropped: each ask ends after --replay-timeout, and what the publisher no longer holds stays missing" {
	# asks from 100 (the first reply, 1000, says 100..999 are no longer
	# held), 1400, 1800, 2200, 2600 (whose 400th reply, 2999, ends it)
	replay_lossy 10 1999
	assert_equal "$(runs cap.kvcap)" "0-99:0 1000-2998:1 2999-2999:0"
	run cat err
	assert_output --regexp "^kvsub: tcp://127.0.0.1:$p: 101 messages, [0-9]+ bytes, 1 gaps, 900 missing, 1999 replayed, 0 restarts, 0 bad seq$"
	run grep -v '^#' m.prom
	assert_line "kvtools_sub_gaps_total{src=\"tcp://127.0.0.1:$p\"} 1"
	assert_line "kvtools_sub_missing_batches_total{src=\"tcp://127.0.0.1:$p\"} 900"
	assert_line "kvtools_sub_replayed_total{src=\"tcp://127.0.0.1:$p\"} 1999"
	run --separate-stderr kvdecode --stats cap.kvcap
	assert_equal "$stderr" "kvdecode: tcp://127.0.0.1:$p: 2100 batches, 2100 events (vllm: 2100 stored, 0 removed, 0 cleared), 1 gaps, 900 missing, 0 restarts, 1999 replayed, 0 ignored, 0 errors"
}

@test "--replay-retries bounds the asks for a gap, and so its time" {
	# three asks of 400 batches, each ended by its time; then 2999, held
	# behind them, is written, and the rest counted missing
	replay_lossy 2 1200
	assert_equal "$(runs cap.kvcap)" "0-99:0 1000-2199:1 2999-2999:0"
	run cat err
	assert_output --regexp "^kvsub: tcp://127.0.0.1:$p: 101 messages, [0-9]+ bytes, 1 gaps, 1699 missing, 1200 replayed, 0 restarts, 0 bad seq$"
	run grep -v '^#' m.prom
	assert_line "kvtools_sub_gaps_total{src=\"tcp://127.0.0.1:$p\"} 1"
	assert_line "kvtools_sub_missing_batches_total{src=\"tcp://127.0.0.1:$p\"} 1699"
	assert_line "kvtools_sub_replayed_total{src=\"tcp://127.0.0.1:$p\"} 1200"
	# 2999 waited for the three asks, each ended by 0.3 s without a
	# reply, and at most 2 x 3 x 0.3 s in all
	held=$(kvdecode cap.kvcap | jq 'select(.seq == 2999) | .recv_ns')
	waited=$(( (end - held) / 1000000 ))
	echo "# 2999 waited $waited ms behind the replay" >&3
	[ "$waited" -ge 900 ]
	[ "$waited" -lt 2800 ]
}

@test "a frame over --max-message: ZeroMQ drops the connection, kvsub connects again and counts the message oversized" {
	p=$(port)
	ep=tcp://127.0.0.1:$p
	kvsub -c 3 -W 15 --max-message 1000 --metrics m.prom -o cap.kvcap "$ep" 2>err & sub=$!
	framepub -l 300 "$ep" 2,seq,10 2,seq,1001 2,seq,10
	# a publisher again on the same endpoint: ZeroMQ itself would never
	# have connected to it (it gives up on a connection it dropped for a
	# protocol error), and kvsub's capture would have stopped there
	framepub -w 10000 -l 300 "$ep" 2,seq,1000 2,seq,10
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "$(capdump cap.kvcap 2>/dev/null | cut -f4 | tr '\n' ' ')" "0 0 1 "
	run cat err
	assert_output "kvsub: $ep: 3 messages, 1050 bytes, 0 gaps, 0 missing, 0 replayed, 1 restarts, 0 bad seq, 1 oversized"
	run grep -v '^#' m.prom
	assert_line "kvtools_sub_oversized_total{src=\"$ep\"} 1"
}

@test "a gap without a replay endpoint is counted with its missing batches" {
	p=$(port)
	kvsub -c 25 -W 10 -o cap.kvcap "tcp://127.0.0.1:$p" 2>err & sub=$!
	fakepub -n 30 --skip 10-14 "tcp://127.0.0.1:$p"
	wait_for $sub 20
	run cat err
	assert_output --regexp ' 25 messages, [0-9]+ bytes, 1 gaps, 5 missing, 0 replayed, 0 restarts, 0 bad seq$'
}

@test "a Mooncake master's gap is counted as missing events: it skips one seq per event it dropped" {
	p=$(port)
	kvsub -c 25 -W 10 -o cap.kvcap "tcp://127.0.0.1:$p" 2>err & sub=$!
	fakepub --mooncake -n 30 --skip 10-14 "tcp://127.0.0.1:$p"
	wait_for $sub 20
	run cat err
	assert_output --regexp ' 25 messages, [0-9]+ bytes, 1 gaps, 5 missing events, 0 replayed, 0 restarts, 0 bad seq$'
	run --separate-stderr kvdecode --stats cap.kvcap
	assert_success
	assert_equal "$stderr" "kvdecode: tcp://127.0.0.1:$p: 25 batches, 25 events (mooncake: 25 stored, 0 removed, 0 cleared), 1 gaps, 5 missing events, 0 restarts, 0 replayed, 0 ignored, 0 errors"
}

@test "--replay-from asks for the publisher's buffer at start" {
	p=$(port 2); r=$((p + 1))
	# The publisher has sent 0..9 before kvsub exists; kvsub recovers them.
	fakepub -n 20 -w 0 -i 100000 --replay "tcp://127.0.0.1:$r" -L pub.log "tcp://127.0.0.1:$p" & pub=$!
	sleep 1.2
	kvsub -c 20 -W 10 --replay-from 0 --replay "tcp://127.0.0.1:$p=tcp://127.0.0.1:$r" -o cap.kvcap "tcp://127.0.0.1:$p" 2>err
	wait_for $pub
	assert_equal "$(capdump cap.kvcap 2>/dev/null | cut -f4 | tr '\n' ' ')" "$(seq 0 19 | tr '\n' ' ')"
	run cat err
	assert_output --regexp ' 0 gaps, 0 missing, [0-9]+ replayed, 0 restarts'
}

@test "a replay peer that answers beyond what it was asked drops no later live message" {
	p=$(port 2); r=$((p + 1))
	# It answers --replay-from 0 with its buffer and then a batch of seq
	# 1000000: trusted, that made every later live batch a "duplicate".
	fakepub -n 20 -w 0 -i 100000 --replay "tcp://127.0.0.1:$r" --replay-bogus 1000000 -L pub.log "tcp://127.0.0.1:$p" & pub=$!
	sleep 1.2
	kvsub -c 20 -W 6 --replay-from 0 --replay "tcp://127.0.0.1:$p=tcp://127.0.0.1:$r" -o cap.kvcap "tcp://127.0.0.1:$p" 2>err
	wait_for $pub
	assert_equal "$(capdump cap.kvcap 2>/dev/null | cut -f4 | tr '\n' ' ')" "$(seq 0 19 | tr '\n' ' ')"
	run cat err
	assert_output --regexp ' 0 gaps, 0 missing, [0-9]+ replayed, 0 restarts'
}

@test "a publisher restart (seq back to 0) is counted" {
	p=$(port)
	kvsub -c 20 -W 10 -o cap.kvcap "tcp://127.0.0.1:$p" 2>err & sub=$!
	fakepub -n 20 --start-seq 100 --restart-at 12 "tcp://127.0.0.1:$p"
	wait_for $sub 20
	assert_equal "$(capdump cap.kvcap 2>/dev/null | cut -f4 | tr '\n' ' ')" "100 101 102 103 104 105 106 107 108 109 110 111 0 1 2 3 4 5 6 7 "
	run cat err
	assert_output --regexp ' 20 messages, [0-9]+ bytes, 0 gaps, 0 missing, 0 replayed, 1 restarts, 0 bad seq$'
}

@test "SIGINT mid-stream leaves a capture whose every record decodes" {
	p=$(port)
	kvsub -o cap.kvcap "tcp://127.0.0.1:$p" 2>err & sub=$!
	fakepub -n 100000 -l 0 "tcp://127.0.0.1:$p" & pub=$!
	sleep 1
	kill -INT $sub
	wait_for $sub 20
	assert_equal "$status" 0
	stop_bg $pub
	run capdump cap.kvcap
	assert_success
	[ "$(grep -c . <<<"$output")" -gt 10 ]
	run cat err
	assert_output --regexp "^kvsub: tcp://127.0.0.1:$p: [0-9]+ messages"
}

@test "kvsub into a pipe that closes (head -c 100) exits 0" {
	p=$(port)
	fakepub -n 100000 -l 0 "tcp://127.0.0.1:$p" & pub=$!
	run bash -c "set -o pipefail; timeout 10 $BIN/kvsub tcp://127.0.0.1:$p 2>/dev/null | head -c 100 | wc -c"
	stop_bg $pub
	assert_success
	assert_output 100
}

@test "-o /dev/full exits 74 with a message" {
	p=$(port)
	fakepub -n 100000 -l 0 "tcp://127.0.0.1:$p" & pub=$!
	run --separate-stderr timeout 10 kvsub -o /dev/full "tcp://127.0.0.1:$p"
	stop_bg $pub
	assert_equal "$status" 74
	assert_equal "${stderr_lines[0]}" "kvsub: /dev/full: No space left on device"
}

@test "-W stops the capture after the given time with statistics" {
	start=$(date +%s%N)
	run --separate-stderr kvsub -W 0.5 -o cap.kvcap "ipc://$T/nobody"
	end=$(date +%s%N)
	assert_success
	assert_equal "$stderr" "kvsub: ipc://$T/nobody: 0 messages, 0 bytes, 0 gaps, 0 missing, 0 replayed, 0 restarts, 0 bad seq"
	[ $(( (end - start) / 1000000 )) -lt 3000 ]
	run --separate-stderr capdump cap.kvcap
	assert_success
	assert_output ''
}

@test "a publisher that starts late is captured (ZMQ reconnects)" {
	p=$(port)
	kvsub -c 5 -W 10 -o cap.kvcap "tcp://127.0.0.1:$p" 2>/dev/null & sub=$!
	sleep 1
	fakepub -n 5 "tcp://127.0.0.1:$p"
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "$(capdump cap.kvcap 2>/dev/null | wc -l)" 5
}

@test "-r subscribes to every registered endpoint, with its replay socket" {
	p=$(port 2); r=$((p + 1))
	cat > regs.jsonl <<-JSON
	{"instance_id": "w1", "type": "vLLM", "dp_rank": 0, "block_size": 16, "modelname": "m", "medium_endpoints": {"npu": "tcp://127.0.0.1:$p"}, "replay_endpoint": "tcp://127.0.0.1:$r"}
	{"instance_id": "pool", "type": "Memcache", "dp_rank": 0, "block_size": 16, "modelname": "m", "endpoint": "ipc://$T/pool", "store_backend": "memcache"}
	JSON
	kvsub -r regs.jsonl -c 40 -W 10 -o cap.kvcap 2>err & sub=$!
	fakepub -n 20 --skip 3-4 --replay "tcp://127.0.0.1:$r" "tcp://127.0.0.1:$p" & a=$!
	fakepub -n 20 "ipc://$T/pool"
	wait_for $a
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "$(capdump cap.kvcap 2>/dev/null | grep -c "^tcp://127.0.0.1:$p	")" 20
	assert_equal "$(capdump cap.kvcap 2>/dev/null | grep -c "^ipc://$T/pool	")" 20
	run cat err
	assert_line --regexp "^kvsub: tcp://127.0.0.1:$p: 18 messages, [0-9]+ bytes, 1 gaps, 0 missing, 2 replayed"
}

@test "-r: an engine registered in RFC #1403's shape is subscribed at its endpoint, with its replay socket" {
	p=$(port 2); r=$((p + 1))
	cat > regs.jsonl <<-JSON
	{"endpoint": "tcp://127.0.0.1:$p", "replay_endpoint": "tcp://127.0.0.1:$r", "type": "SGLang", "modelname": "m", "lora_name": "sql", "tenant_id": "default", "instance_id": "w1", "block_size": 16, "dp_rank": 0, "additionalsalt": "w8a8"}
	JSON
	kvsub -r regs.jsonl -c 20 -W 10 -o cap.kvcap 2>err & sub=$!
	fakepub -n 20 --skip 3-4 --replay "tcp://127.0.0.1:$r" "tcp://127.0.0.1:$p"
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "$(capdump cap.kvcap 2>/dev/null | grep -c "^tcp://127.0.0.1:$p	")" 20
	run cat err
	assert_line --regexp "^kvsub: tcp://127.0.0.1:$p: 18 messages, [0-9]+ bytes, 1 gaps, 0 missing, 2 replayed"
}

@test "-r: an engine's endpoint is its HTTP address, not subscribed" {
	cat > regs.jsonl <<-JSON
	{"instance_id": "w1", "type": "vLLM", "dp_rank": 0, "block_size": 16, "modelname": "m", "endpoint": "http://10.0.0.5:8000", "medium_endpoints": {"npu": "ipc://$T/engine"}}
	JSON
	run --separate-stderr kvsub -r regs.jsonl -W 0.2 -o x.kvcap
	assert_success
	assert_equal "$stderr" "kvsub: ipc://$T/engine: 0 messages, 0 bytes, 0 gaps, 0 missing, 0 replayed, 0 restarts, 0 bad seq"
}

@test "a bad registrations line is reported with its line number, exit 65" {
	printf '%s\n' '{"instance_id": "w1", "type": "vLLM", "modelname": "m", "block_size": 16, "dp_rank": 0, "medium_endpoints": {"npu": "tcp://127.0.0.1:1"}}' '{"instance_id": 7}' > regs.jsonl
	run --separate-stderr kvsub -r regs.jsonl -o x.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvsub: regs.jsonl: line 2: instance_id: expected a non-empty string"
}

@test "a wildcard pool endpoint needs KVS_MASTER_SERVICE" {
	echo '{"instance_id": "kvs", "type": "Memcache", "dp_rank": 0, "block_size": 16, "modelname": "m", "endpoint": "tcp://*:5557", "store_backend": "Memcache"}' > regs.jsonl
	run --separate-stderr env -u KVS_MASTER_SERVICE kvsub -r regs.jsonl -o x.kvcap
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: tcp://*:5557: wildcard host and KVS_MASTER_SERVICE is unset; skipped"
	assert_equal "${stderr_lines[1]}" "kvsub: no endpoints to capture from"
	run --separate-stderr env KVS_MASTER_SERVICE=127.0.0.1 kvsub -r regs.jsonl -W 0.2 -o x.kvcap
	assert_success
	assert_equal "$stderr" "kvsub: tcp://127.0.0.1:5557: 0 messages, 0 bytes, 0 gaps, 0 missing, 0 replayed, 0 restarts, 0 bad seq"
}

@test "--bind receives from a publisher that connects" {
	kvsub --bind -c 10 -W 10 -o cap.kvcap "ipc://$T/sink" 2>/dev/null & sub=$!
	sleep 0.3
	fakepub --connect -n 10 -L pub.log "ipc://$T/sink"
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "$(frames cap.kvcap)" "$(published pub.log)"
}

@test "--topic subscribes to matching topics only" {
	kvsub -t kv@a -c 10 -W 10 -o cap.kvcap "ipc://$T/a" "ipc://$T/b" 2>err & sub=$!
	# the other topic first: had it been subscribed, it would fill the count
	fakepub -n 10 -t other@b -w 3000 "ipc://$T/b"
	fakepub -n 10 -t kv@a -L a.log "ipc://$T/a"
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "$(frames cap.kvcap)" "$(published a.log)"
	run cat err
	assert_line --index 1 "kvsub: ipc://$T/b: 0 messages, 0 bytes, 0 gaps, 0 missing, 0 replayed, 0 restarts, 0 bad seq"
}

@test "--replay-timeout: a replay socket nobody serves is given up, the held records written" {
	p=$(port)
	kvsub -c 15 -W 10 --replay-timeout 0.5 --replay "tcp://127.0.0.1:$p=ipc://$T/nobody" \
		-o cap.kvcap "tcp://127.0.0.1:$p" 2>err & sub=$!
	fakepub -n 20 --skip 10-14 -l 0 -L pub.log "tcp://127.0.0.1:$p" & pub=$!
	wait_for $sub 20
	end=$(date +%s%N)
	assert_equal "$status" 0
	wait_for $pub
	assert_equal "$(frames cap.kvcap)" "$(published pub.log | head -15)"
	assert_equal "$(capdump cap.kvcap 2>/dev/null | cut -f2 | tr -d '\n')" "000000000000000"
	run cat err
	assert_output --regexp "^kvsub: tcp://127.0.0.1:$p: 15 messages, [0-9]+ bytes, 1 gaps, 5 missing, 0 replayed, 0 restarts, 0 bad seq$"
	# seq 15 revealed the gap and was held until the replay was given up:
	# 0.5 s, not the default 2 s, nor until -W
	held=$(kvdecode cap.kvcap | jq 'select(.seq == 15) | .recv_ns')
	waited=$(( (end - held) / 1000000 ))
	[ "$waited" -ge 500 ]
	[ "$waited" -lt 1900 ]
}

@test "a seq frame that is not 8 bytes counts as bad seq; messages of 2 frames or 1 have no seq and do not" {
	# kvcap(5): a seq exists only as the second frame of 3 or more
	kvsub -c 5 -W 10 -o cap.kvcap "ipc://$T/p" 2>err & sub=$!
	framepub "ipc://$T/p" "3,seq,10" "3,seq,10" "3,4,10" "3,10" "10"
	wait_for $sub 20
	assert_equal "$status" 0
	# still captured, every frame: seq "-" where there is none
	assert_equal "$(capdump cap.kvcap 2>/dev/null | cut -f4,6 | tr '\t\n' ', ')" "0,3 1,3 -,3 -,2 -,1 "
	run cat err
	assert_output "kvsub: ipc://$T/p: 5 messages, 82 bytes, 0 gaps, 0 missing, 0 replayed, 0 restarts, 1 bad seq"
}

@test "-v shows the totals every second on a terminal, and nothing elsewhere" {
	( sleep 0.3; fakepub -n 20 -L pub.log "ipc://$T/p" ) & pub=$!
	run timeout 20 script -qec "$BIN/kvsub -v -W 2.5 -o cap.kvcap ipc://$T/p" /dev/null
	wait_for $pub
	assert_success
	# \r starts each progress line; the last one, then the statistics
	lines=$(tr '\r' '\n' <<<"$output" | grep .)
	grep -q '^kvsub: [0-9]* records, ' <<<"$lines"
	bytes=$(( $(cut -f3 pub.log | tr -d '\n' | wc -c) / 2 + 20 * 8 ))
	assert_equal "$(tail -2 <<<"$lines")" "kvsub: 20 records, 20 messages, $bytes bytes, 0 missing 
kvsub: ipc://$T/p: 20 messages, $bytes bytes, 0 gaps, 0 missing, 0 replayed, 0 restarts, 0 bad seq"
	run --separate-stderr kvsub -v -W 0.3 -o cap.kvcap "ipc://$T/q"
	assert_success
	assert_equal "$stderr" "kvsub: ipc://$T/q: 0 messages, 0 bytes, 0 gaps, 0 missing, 0 replayed, 0 restarts, 0 bad seq"
}

@test "an endpoint whose host cannot be resolved is warned about, not waited on in silence" {
	run --separate-stderr kvsub -W 0.2 -o /dev/null tcp://256.1.1.1:5557 "tcp://127.0.0.1:$(port)"
	assert_success
	[[ ${stderr_lines[0]} == "kvsub: tcp://256.1.1.1:5557: cannot resolve the host ("*"); ZeroMQ keeps trying" ]]
	[[ ${stderr_lines[1]} == "kvsub: tcp://256.1.1.1:5557: 0 messages, "* ]]
	assert_equal "${#stderr_lines[@]}" 3
	run --separate-stderr kvsub -q -W 0.2 -o /dev/null tcp://256.1.1.1:5557
	assert_success
	[ -z "$stderr" ]
}
