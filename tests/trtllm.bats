#!/usr/bin/env bats
# TensorRT-LLM's own ZMQ publisher (kvdecode(1) "TensorRT-LLM"): batches
# written by tests/helpers/trtllm_events.py as each attention-DP rank's
# publisher sends them, decoded from a capture, and captured from per-rank
# ports (the configured port plus the rank) with kvsub's registrations,
# a gap on one rank filled from that rank's replay socket.
load helper

setup() {
	T=$BATS_TEST_TMPDIR
	cd "$T" || return 1
	P=$(port 4)
	R=$((P + 2))
	/usr/bin/python3 "$ROOT/tests/helpers/trtllm_events.py" "$T" "$P" "$R"
}

# The fields TensorRT-LLM's events carry, sorted, one event a line.
fields() {
	jq -S -c '{format, type, dp_rank, medium, block_hashes}
		+ (if .type == "stored" then {parent, block_size, lora_name}
			+ if .tokens_hashes then {tokens_hashes} else {token_ids} end else {} end)'
}

@test "TensorRT-LLM's batches decode event for event: signed hashes, map events, token_ids or tokens_hashes" {
	run --separate-stderr kvdecode tokens.kvcap
	assert_success
	[ -z "$stderr" ]
	assert_equal "$(echo "$output" | fields)" "$(cat expected.jsonl)"
	# each publisher's own seq, from 0
	assert_equal "$(echo "$output" | jq -r '"\(.dp_rank):\(.seq)"' | tr '\n' ' ')" "0:0 1:0 0:1 1:1 0:2 1:2 "
	run --separate-stderr kvdecode hashes.kvcap
	assert_success
	[ -z "$stderr" ]
	assert_equal "$(echo "$output" | fields)" "$(cat expected-hashes.jsonl)"
}

@test "kvmatch indexes TensorRT-LLM's tokens_hashes as its token_ids; --hash dynamo finds its LoRA blocks" {
	kvmatch -q -r regs.jsonl -o t.kvsnap tokens.kvcap
	kvmatch -q -r regs.jsonl -o h.kvsnap hashes.kvcap
	for n in 4 8 12; do
		printf '{"model":"m","token_ids":[%s]}\n' "$(seq -s, 100 $((99 + n)))"
	done > q.jsonl
	printf '{"model":"m","token_ids":[100,101,102,103,104,105,106,107,300,301,302,303]}\n' >> q.jsonl
	kvquery -s t.kvsnap q.jsonl > t.out
	run kvquery -s h.kvsnap q.jsonl
	assert_success
	assert_equal "$output" "$(cat t.out)"
	# rank 0 lost A's last block, rank 1 holds A whole; C was removed
	assert_equal "$(sed -n 3p t.out | jq -c '.default.trt1.DP | map_values(.matched_tokens)')" '{"0":8,"1":12}'
	assert_equal "$(sed -n 4p t.out | jq -c '.default.trt1.DP | map_values(.matched_tokens)')" '{"0":8,"1":8}'
	# the adapter's blocks: their partition is the adapter's (lora_name);
	# their tokens_hash has the adapter in its seed, as Dynamo's router hashes
	q='{"model":"m","lora_name":"sql-adapter","block_size":4,"token_ids":[7,7,7,7,8,8,8,8]}'
	run kvquery -s h.kvsnap --api mooncake --hash dynamo <<< "$q"
	assert_success
	assert_equal "$(echo "$output" | jq -c '[.. | .longest_matched? // empty]')" '[8]'
	run kvquery -s h.kvsnap --api mooncake <<< "$q"
	assert_equal "$(echo "$output" | jq -c '[.. | .longest_matched? // empty]')" '[]'
	run kvquery -s t.kvsnap --api mooncake <<< "$q"
	assert_equal "$(echo "$output" | jq -c '[.. | .longest_matched? // empty]')" '[8]'
}

# Each rank's publisher on the port of its registration, its replay socket
# on the registration's replay_endpoint (kvpub, vLLM 0.25's reply shape,
# which TensorRT-LLM's replay socket answers in); the 4th record (rank 1's
# seq 1) is lost on the way: kvsub sees rank 1's seq 2 after 0 and asks
# rank 1's replay socket for it.
@test "kvsub -r: per-rank ports and replay endpoints of TensorRT-LLM's registrations, a gap filled, event for event" {
	kvsub -q -r regs.jsonl -c 6 -W 10 -o got.kvcap 2> err & sub=$!
	run --separate-stderr kvpub --map "tcp://127.0.0.1:$P=tcp://127.0.0.1:$P" \
		--map "tcp://127.0.0.1:$((P + 1))=tcp://127.0.0.1:$((P + 1))" \
		--replay-map "tcp://127.0.0.1:$P=tcp://127.0.0.1:$R" \
		--replay-map "tcp://127.0.0.1:$((P + 1))=tcp://127.0.0.1:$((R + 1))" \
		--replay-shape v0.25 --slow-joiner-wait 1 --drop 4 tokens.kvcap
	assert_success
	wait_for $sub 20
	assert_equal "$status" 0
	run --separate-stderr kvdecode got.kvcap
	assert_success
	# per rank in seq order, as published
	assert_equal "$(echo "$output" | jq -s -c 'sort_by(.dp_rank, .seq) | .[]' | fields)" \
		"$(jq -s -c 'sort_by(.dp_rank) | .[]' expected.jsonl)"
	assert_equal "$(echo "$output" | jq -r 'select(.replayed) | "\(.src) \(.seq)"')" "tcp://127.0.0.1:$((P + 1)) 1"
	# and kvmatch puts each rank's events on its registered worker
	kvmatch -q -r regs.jsonl -o got.kvsnap got.kvcap
	kvmatch -q -r regs.jsonl -o all.kvsnap tokens.kvcap
	printf '{"model":"m","token_ids":[%s]}\n' "$(seq -s, 100 111)" > q.jsonl
	assert_equal "$(kvquery -s got.kvsnap q.jsonl)" "$(kvquery -s all.kvsnap q.jsonl)"
}

# TensorRT-LLM's replay socket, asked for batches it no longer holds,
# answers with a snapshot: a header of seq -2, then every batch numbered
# with one seq, its last (tests/helpers/fakepub.c --replay-snapshot).
# That is no replay of the gap: kvsub ends the replay at the header, uses
# none of it, counts the reply, and the gap stays missing.
@test "kvsub: a replay answered with TensorRT-LLM's snapshot is not used, the gap counted missing" {
	p=$(port 2); r=$((p + 1))
	kvsub -c 25 -W 10 --replay "tcp://127.0.0.1:$p=tcp://127.0.0.1:$r" -o cap.kvcap "tcp://127.0.0.1:$p" 2>err & sub=$!
	fakepub -n 30 --skip 10-14 --replay "tcp://127.0.0.1:$r" --shape 25 --replay-snapshot -l 1000 \
		-L pub.log "tcp://127.0.0.1:$p"
	wait_for $sub 20
	assert_equal "$status" 0
	# the live batches alone, none replayed
	assert_equal "$(capdump cap.kvcap 2>/dev/null | cut -f2 | tr -d '\n')" "0000000000000000000000000"
	assert_equal "$(capdump cap.kvcap 2>/dev/null | cut -f4 | tr '\n' ' ')" "$(seq 0 9 | tr '\n' ' ')$(seq 15 29 | tr '\n' ' ')"
	run cat err
	assert_output --regexp ' 25 messages, [0-9]+ bytes, 1 gaps, 5 missing, 0 replayed, 0 restarts, 0 bad seq, 1 snapshot replies not used$'
}

# The publisher read sends every attention-DP rank of a server on one
# socket: one registration names the server's endpoint; each event belongs
# to that instance at the event's rank, in the registration's partition.
@test "kvmatch: one registered endpoint carrying every rank gives each rank's events to that instance at its rank" {
	run --separate-stderr kvdecode shared.kvcap
	assert_success
	assert_equal "$(echo "$output" | fields)" "$(cat expected.jsonl)"
	assert_equal "$(echo "$output" | jq -r '"\(.dp_rank):\(.seq)"' | tr '\n' ' ')" "0:0 1:1 0:2 1:3 0:4 1:5 "
	kvmatch -q -r shared-regs.jsonl -o s.kvsnap shared.kvcap
	kvmatch -q -r regs.jsonl -o r.kvsnap tokens.kvcap
	for n in 4 8 12; do
		printf '{"model":"m","token_ids":[%s]}\n' "$(seq -s, 100 $((99 + n)))"
	done > q.jsonl
	printf '{"model":"m","token_ids":[100,101,102,103,104,105,106,107,300,301,302,303]}\n' >> q.jsonl
	run kvquery -s s.kvsnap q.jsonl
	assert_success
	assert_equal "$output" "$(kvquery -s r.kvsnap q.jsonl)"
	assert_equal "$(sed -n 3p <<< "$output" | jq -c '.default.trt1.DP | map_values(.matched_tokens)')" '{"0":8,"1":12}'
}
