#!/usr/bin/env bats
# NVIDIA Dynamo's KV events (kvdecode(1) "Dynamo's event plane"): messages
# written by tests/helpers/dynamo_events.py as Dynamo's serde derives write
# them, decoded from a capture, through a ZMQ socket, through core NATS and
# through a JetStream stream of a real nats-server (started and stopped
# here, on free ports, every wait bounded), and indexed by kvmatch.
load helper

SUBJECT=namespace.dynamo.component.backend.kv-events
QUEUE=namespace-dynamo-component-backend-kv-events

setup() {
	T=$BATS_TEST_TMPDIR
	cd "$T" || return 1
	/usr/bin/python3 "$ROOT/tests/helpers/dynamo_events.py" "$T"
}

teardown() {
	[ -f "$T/ns.pid" ] || return 0
	kill "$(cat "$T/ns.pid")" 2>/dev/null || true
	wait "$(cat "$T/ns.pid")" 2>/dev/null || true
}

# The fields Dynamo's events carry, sorted, one event a line.
fields() {
	jq -S -c '{format, type, worker_id, dp_rank, event_id, medium, block_hashes}
		+ (if .type == "stored" then {parent, tokens_hashes} else {} end)'
}

# A JetStream server on a free port, ready when this returns (at most 10 s).
nats_server() {
	local i=0
	P=$(port)
	nats-server -a 127.0.0.1 -p "$P" -js -sd "$T/jsstore" > ns.log 2>&1 &
	echo $! > ns.pid
	until grep -qs 'Server is ready' ns.log; do
		sleep 0.05
		i=$((i + 1))
		[ $i -lt 200 ] || { cat ns.log >&3; return 1; }
	done
}

@test "a capture of Dynamo's event plane on ZMQ decodes event for event" {
	run --separate-stderr kvdecode zmq.kvcap
	assert_success
	[ -z "$stderr" ]
	assert_equal "$(echo "$output" | fields)" "$(cat expected.jsonl)"
	# the seq is the sequence frame, per publisher; the envelope's time is ts
	assert_equal "$(echo "$output" | jq -r '[.src, .seq, .publisher_seq, .ts] | @tsv' | head -3)" \
"tcp://127.0.0.1:6000	0	0	1700000000
tcp://127.0.0.1:6000	1	1	1700000000.001
tcp://127.0.0.1:6001	0	0	1700000000.002"
	# worker ids past 2^53 survive: a string of their digits
	assert_equal "$(echo "$output" | jq -r '.worker_id' | sort -u)" "12
7587888800123456789"
}

@test "Dynamo's ZMQ messages through a socket (kvpub to kvsub) decode event for event, seq from the sequence frame" {
	kvsub -q -c 6 -W 10 "ipc://$T/dyn" > got.kvcap & sub=$!
	sleep 0.2
	kvpub -q --single "ipc://$T/dyn" --speed max --slow-joiner-wait 2 --linger 1 zmq.kvcap
	wait_for $sub 10
	assert_equal "$status" 0
	run --separate-stderr kvdecode --stats got.kvcap
	assert_success
	assert_equal "$(echo "$output" | fields)" "$(cat expected.jsonl)"
	# one socket carried the three publishers: their own sequences, kept
	assert_equal "$(echo "$output" | jq -r '"\(.publisher_id) \(.seq)"' | tr '\n' ' ')" \
		"9007199254740737 0 9007199254740737 1 9007199254740738 0 77 0 9007199254740737 2 77 1 "
}

@test "Dynamo's event plane on core NATS: kvnats --core | kvdecode decodes event for event" {
	nats_server
	kvnats -q -C -s "nats://127.0.0.1:$P" --core "$SUBJECT" -c 6 -o core.kvcap & sub=$!
	# the subscription is made before the first message: a message sent
	# before it would be lost, as on core NATS it is
	sleep 0.5
	/usr/bin/python3 "$ROOT/tests/helpers/natspub.py" "$P" "$SUBJECT" nats/*
	wait_for $sub 10
	assert_equal "$status" 0
	run --separate-stderr kvdecode core.kvcap
	assert_success
	assert_equal "$(echo "$output" | fields)" "$(cat expected.jsonl)"
	assert_equal "$(echo "$output" | jq -r '.src' | sort -u)" "$SUBJECT"
	assert_equal "$(echo "$output" | jq -c '[.seq, .publisher_id, .publisher_seq]' | head -2)" '[null,9007199254740737,0]
[null,9007199254740737,1]'
}

@test "kvnats --core: a signal before -c says so; an output that fails is 74, nothing said written" {
	# --core counts and stops as -C does, kvnats(1) "EXIT STATUS"; it used to
	# count records taken, written or not
	nats_server
	kvnats -C -s "nats://127.0.0.1:$P" --core "$SUBJECT" -c 10 -o core.kvcap 2> err & sub=$!
	sleep 0.5
	/usr/bin/python3 "$ROOT/tests/helpers/natspub.py" "$P" "$SUBJECT" nats/*
	sleep 0.5
	kill -TERM $sub
	wait_for $sub 10
	assert_equal "$status" 0
	assert_equal "$(cat err)" "kvnats: stopped by SIGTERM before the end; what came before it goes to core.kvcap
kvnats: subject $SUBJECT: 6 records written"
	mknod full c 1 7
	kvnats -C -s "nats://127.0.0.1:$P" --core "$SUBJECT" -c 6 -o full 2> err & sub=$!
	sleep 0.5
	/usr/bin/python3 "$ROOT/tests/helpers/natspub.py" "$P" "$SUBJECT" nats/*
	wait_for $sub 10 || true  # its status is 74: keep bats from failing on it
	assert_equal "$status" 74
	assert_equal "$(tail -n 1 err)" "kvnats: subject $SUBJECT: 0 records written"
}

@test "Dynamo's JetStream queue: kvnats --wrap | kvdecode decodes event for event, with stream positions" {
	nats_server
	run /usr/bin/python3 "$ROOT/tests/helpers/natspub.py" --stream "$QUEUE" "$P" "$QUEUE.kv-events" js/*
	assert_success
	kvnats -q -C -s "nats://127.0.0.1:$P" --stream "$QUEUE" --wrap > q.kvcap
	run --separate-stderr kvdecode q.kvcap
	assert_success
	assert_equal "$(echo "$output" | fields)" "$(cat expected.jsonl)"
	assert_equal "$(capdump q.kvcap | wc -l)" 6
	# the same as kvmatch reads it: positions 1 to 6
	run kvmatch -q -r regs.jsonl -o q.kvsnap q.kvcap
	assert_success
	run kvnats -q -C -s "nats://127.0.0.1:$P" --stream "$QUEUE" --wrap --after q.kvsnap
	assert_success
	assert_equal "$(printf '%s' "$output" | capdump 2>/dev/null | wc -l)" 0
}

@test "kvmatch's index of Dynamo's events equals the one of the same blocks published as vLLM batches" {
	kvmatch -q -r regs.jsonl -o v.kvsnap vllm.kvcap
	kvmatch -q -r regs.jsonl -o d.kvsnap zmq.kvcap
	# every prefix of both prompts, and of one never stored
	for n in 4 8 12; do
		printf '{"model":"m","token_ids":[%s]}\n' "$(seq -s, 100 $((99 + n)))"
		printf '{"model":"m","token_ids":[%s]}\n' "$(seq -s, 100 103)$(seq -f ,%g 500 $((495 + n)) | tr -d '\n')"
	done > q.jsonl
	echo '{"model":"m","token_ids":[1,2,3,4]}' >> q.jsonl
	kvquery -s v.kvsnap q.jsonl > v.out
	run kvquery -s d.kvsnap q.jsonl
	assert_success
	assert_equal "$output" "$(cat v.out)"
	# not a vacuous match: w1 holds 3 blocks of the first prompt on DP 1
	assert_equal "$(sed -n 5p v.out | jq -c '.default.w1.DP."1".npu_blocks')" 3
	assert_equal "$(jq -c '.default.w2 // "none"' v.out | sort -u)" '"none"'
}

@test "without a registration, a Dynamo worker is named by its worker_id" {
	run kvmatch -q -o d.kvsnap zmq.kvcap
	assert_success
	run kvquery -s d.kvsnap --model default --block-size 4 <<< '[100,101,102,103,104,105,106,107,108,109,110,111]'
	assert_success
	assert_equal "$(echo "$output" | jq -c '.default | keys')" '["7587888800123456789"]'
	assert_equal "$(echo "$output" | jq -c '.default."7587888800123456789".longest_matched')" 12
}

@test "kvdecode | kvmatch gives the snapshot kvmatch gives from the capture: worker_id and tokens_hashes read back" {
	kvmatch -q -r regs.jsonl -o direct.kvsnap zmq.kvcap
	kvdecode zmq.kvcap | kvmatch -q -r regs.jsonl -o piped.kvsnap -
	cmp direct.kvsnap piped.kvsnap
	# unregistered too: the worker named by its worker_id either way
	kvmatch -q -o direct2.kvsnap zmq.kvcap
	kvdecode zmq.kvcap | kvmatch -q -o piped2.kvsnap -
	cmp direct2.kvsnap piped2.kvsnap
	# a worker_id written as a number, and a bad one
	kvdecode zmq.kvcap | jq -c '.worker_id |= tonumber' | sed -n 4p > num.jsonl
	run kvmatch -q -o n.kvsnap num.jsonl
	assert_success
	run kvquery -s n.kvsnap --model default --block-size 4 <<< '[100,101,102,103]'
	assert_equal "$(echo "$output" | jq -c '.default | keys')" '["12"]'
	kvdecode zmq.kvcap | sed -n 4p | jq -c '.worker_id = "-1"' > bad.jsonl
	run --separate-stderr kvmatch -q -o n.kvsnap bad.jsonl
	assert_equal "$status" 65
	assert_equal "$(echo "$output" | jq -r .reason)" decode_error
}

@test "kvquery --hash dynamo: lora_name and cache_namespace seed the local hashes as Dynamo's router does" {
	# salted.kvcap: workers 201, 202 and 203 store the same 12 tokens under an
	# adapter, a namespace and both, their tokens_hash computed by
	# python3-xxhash in dynamo_events.py (1337 + xxh3(lora, 0) + xxh3(ns, 1))
	kvmatch -q -o s.kvsnap salted.kvcap
	toks=$(seq -s, 100 111)
	{
		echo "{\"token_ids\":[$toks]}"
		echo "{\"token_ids\":[$toks],\"lora_name\":\"sql-adapter\"}"
		echo "{\"token_ids\":[$toks],\"cache_namespace\":\"tenant-a\"}"
		echo "{\"token_ids\":[$toks],\"lora_name\":\"sql-adapter\",\"cache_namespace\":\"tenant-a\"}"
		# an empty name is none, as Dynamo filters it; a trailing partial
		# block is not hashed (9 tokens: 2 blocks)
		echo "{\"token_ids\":[$(seq -s, 100 108)],\"lora_name\":\"sql-adapter\",\"cache_namespace\":\"\"}"
		echo "{\"token_ids\":[$toks],\"lora_name\":\"other\"}"
	} > q.jsonl
	run kvquery -s s.kvsnap --block-size 4 --hash dynamo q.jsonl
	assert_success
	assert_equal "$(echo "$output" | jq -c '.default | map_values(.longest_matched)')" '{}
{"201":12}
{"202":12}
{"203":12}
{"201":8}
{}'
	# kv-conductor's hashing (seed 1337 alone) finds none of them
	run kvquery -s s.kvsnap --block-size 4 q.jsonl
	assert_success
	assert_equal "$(echo "$output" | jq -c '.default' | sort -u)" '{}'
}

@test "kvquery --hash dynamo answers unsalted queries as kv-conductor's hashing, complete blocks only" {
	kvmatch -q -r regs.jsonl -o d.kvsnap zmq.kvcap
	for n in 4 8 12; do
		printf '{"model":"m","token_ids":[%s]}\n' "$(seq -s, 100 $((99 + n)))"
	done > q.jsonl
	kvquery -s d.kvsnap q.jsonl > conductor.out
	run kvquery -s d.kvsnap --hash dynamo q.jsonl
	assert_success
	assert_equal "$output" "$(cat conductor.out)"
	run kvquery -s d.kvsnap --hash dynamo:1 q.jsonl
	assert_equal "$status" 64
	assert_output --partial "--hash: 'dynamo:1' is not conductor, dynamo, rfc1403 or rfc1403:SEED"
}

@test "a Dynamo event line without a medium is xpu, as a vLLM one is (kvdecode(1) \"Media\")" {
	kvdecode zmq.kvcap > with.jsonl
	assert_equal "$(jq -r '.medium' with.jsonl | sort -u)" xpu
	# sed, not jq: jq reads recv_ns as a double
	sed 's/"medium":"xpu",//; s/"medium_raw":"[a-z]*",//' with.jsonl > without.jsonl
	refute grep -q medium without.jsonl
	kvmatch -q --log all -o with.kvsnap with.jsonl > with.log
	run --separate-stderr kvmatch -q --log all -o without.kvsnap without.jsonl
	assert_success
	assert_equal "$(grep -c '"state":"applied","hash":"0x[0-9a-f]*","medium":"xpu"' with.log)" 11
	assert_equal "$output" "$(cat with.log)"
	cmp with.kvsnap without.kvsnap
}
