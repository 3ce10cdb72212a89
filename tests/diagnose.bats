#!/usr/bin/env bats
# kvmatch --diagnose: each finding from a capture made to show it, and none
# from a healthy one.  The base is a kvgen cluster (two engines and a
# memcache pool, 150 s of traffic) decoded to event lines; each test breaks
# it the way a deployment breaks.
load helper

A=tcp://10.0.0.1:5557
B=tcp://10.0.0.2:5557
POOL=tcp://kvs-master:5557

setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	head -60 "$ROOT/share/traces/conversation-300.jsonl" > trace.jsonl
	kvgen -q --limit 60 --workers 2 --dp 1 --capacity 100 --pool memcache --pool-capacity 200 \
		--pool-lag 3000 --policy round-robin --speed 0.1 --registrations regs.jsonl -o healthy.kvcap trace.jsonl
	kvdecode healthy.kvcap > healthy.jsonl
}

# diagnose [KVMATCH OPTION]... < event lines: the JSON report in report.json,
# kvmatch's status in $status.  Short TTLs, so that 150 s show expiries.
diagnose() {
	run --separate-stderr kvmatch -q -r "$BATS_FILE_TMPDIR/regs.jsonl" --log none --pending-ttl 1 \
		--content-ttl 1 --diagnose=json "$@"
	printf '%s\n' "$stderr" > report.json
}

# One line per finding: "finding severity source worker".
findings() {
	jq -r '.findings[] | [.finding, .severity, (.source // "-"), (.worker // "-")] | join(" ")' report.json
}

evidence() { jq -c ".findings[0].evidence" report.json; }

events() { cat "$BATS_FILE_TMPDIR/healthy.jsonl"; }

@test "a healthy capture has no findings, as kvcap and as event lines" {
	diagnose "$BATS_FILE_TMPDIR/healthy.kvcap"
	assert_success
	assert_equal "$(jq -c '[.findings, .sources, .events]' report.json)" '[[],3,303]'
	diagnose "$BATS_FILE_TMPDIR/healthy.jsonl"
	assert_success
	assert_equal "$(jq -c '[.findings, .sources, .events]' report.json)" '[[],3,303]'
	run --separate-stderr kvmatch -r "$BATS_FILE_TMPDIR/regs.jsonl" --log none --diagnose "$BATS_FILE_TMPDIR/healthy.kvcap"
	assert_success
	assert_equal "${stderr_lines[-1]}" "kvmatch: diagnose: 0 findings (3 sources, 303 events)"
}

@test "no_offload_events: pool entries expire while an engine sends no offload stores" {
	events | jq -c --arg b "$B" 'select(.src != $b or .medium == "xpu")' > in.jsonl
	diagnose in.jsonl
	assert_success
	assert_equal "$(findings)" "no_offload_events warning $B node1"
	assert_equal "$(evidence)" '{"expired":500,"xpu_blocks":27067,"offload_blocks":0}'
	assert_equal "$(jq -r '.findings[0].cause' report.json)" \
		"vLLM's MultiConnector does not forward the KV events of the connectors it wraps (unless patched), or the offloading connector is off: pool stores never meet an engine offload"
}

@test "no_offload_events, as text: the finding, its evidence and its cause" {
	events | jq -c --arg b "$B" 'select(.src != $b or .medium == "xpu")' > in.jsonl
	run --separate-stderr kvmatch -q -r "$BATS_FILE_TMPDIR/regs.jsonl" --log none --pending-ttl 1 --content-ttl 1 --diagnose in.jsonl
	assert_success
	assert_equal "$stderr" "kvmatch: diagnose: 1 finding (3 sources, 273 events)
kvmatch: warning: no_offload_events: $B (worker node1): 500 pool entries for its worker expired unmatched, and it sent 27067 accelerator blocks and no offload (cpu/disk) store
kvmatch:   likely cause: vLLM's MultiConnector does not forward the KV events of the connectors it wraps (unless patched), or the offloading connector is off: pool stores never meet an engine offload"
}

@test "hashes_never_meet: pool hashes and engine hashes have nothing in common" {
	# The pool names every block with another first hex digit.
	events | jq -c 'if .format == "memcache" then .block_hashes |= map("0x" + (if .[2:3] == "f" then "e" else "f" end) + .[3:]) else . end' > in.jsonl
	diagnose in.jsonl
	assert_success
	assert_equal "$(findings)" "hashes_never_meet warning - -"
	assert_equal "$(jq -c '.findings[0].evidence | [.pool_blocks, .offload_blocks, .met, .engine_sample, .pool_sample]' report.json)" \
		'[46062,46062,0,"0x6013a47c7f8796a2","0xf013a47c7f8796a2"]'
}

@test "hashes_never_meet names the wire forms of both sides from a capture" {
	# An engine offload in sha256 bytes mode; a pool that reports another hash as a string.
	echo '[100.0, [["BlockStored", ["b:00000000000000000000000000000000000000000000000000000000000000aa"], null, [1,2,3,4], 4, null, "cpu"]]]' |
		j2mp --src "$A" --recv 100000000000 > engine.kvcap
	echo '{"events":[{"type":"BlockStored","block_hashes":["0xbb"],"backend_id":"10.0.0.1","medium":"cpu"}]}' |
		j2mp --src "$POOL" --recv 101000000000 > pool.kvcap
	run --separate-stderr kvmatch -q --log none --diagnose engine.kvcap pool.kvcap
	assert_success
	assert_equal "${stderr_lines[1]}" "kvmatch: warning: hashes_never_meet: 1 pool block and 1 engine offload, and no hash in common (engine hashes: bytes > 8, e.g. 0x00000000000000aa; pool hashes: string, e.g. 0x00000000000000bb)"
	assert_equal "${#stderr_lines[@]}" 3
}

@test "engine_hashes_differ: one engine's offloads never meet the pool, the other's do" {
	events | jq -c --arg b "$B" 'if .src == $b then .block_hashes |= map("0x" + (if .[2:3] == "f" then "e" else "f" end) + .[3:]) else . end' > in.jsonl
	diagnose in.jsonl
	assert_success
	assert_equal "$(findings)" "engine_hashes_differ warning $B node1"
	assert_equal "$(jq -c '.findings[0].evidence | [.offload_blocks, .met]' report.json)" '[26983,0]'
}

@test "block_size_mismatch: an engine publishes another block size than registered" {
	events | jq -c --arg b "$B" 'if .src == $b and .type == "stored" then .block_size = 32 else . end' > in.jsonl
	diagnose in.jsonl
	assert_success
	assert_equal "$(findings)" "block_size_mismatch warning $B node1"
	assert_equal "$(evidence)" '{"blocks":27067,"block_size":32,"expected":16}'
}

@test "non_full_attention: blocks of sliding-window groups are skipped, as a notice" {
	events | jq -c --arg b "$B" 'if .src == $b and .medium == "xpu" and .type == "stored" then .kv_cache_spec_kind = "sliding_window" else . end' > in.jsonl
	diagnose in.jsonl
	assert_success
	assert_equal "$(findings)" "non_full_attention notice $B node1"
	assert_equal "$(evidence)" '{"blocks":27067,"kind":"sliding_window"}'
}

# Event lines of one engine: store T SEQ HASH PARENT TOKENS
store() {
	printf '{"src":"%s","recv_ns":%s000000000,"seq":%s,"format":"vllm","ts":%s,"dp_rank":0,"type":"stored","medium":"xpu","block_hashes":[%s],"parent":%s,"token_ids":[%s],"block_size":4}\n' \
		"$A" "$1" "$2" "$1" "$3" "$4" "$5"
}

diagnose_lines() { # kvmatch --diagnose=json on in.jsonl, without registrations
	run --separate-stderr kvmatch -q --log none --diagnose=json in.jsonl
	printf '%s\n' "$stderr" > report.json
}

@test "parent_not_found after lost batches: blames the missed events" {
	{ store 1 1 11 null 1,2,3,4; store 3 3 13 12 9,10,11,12; } > in.jsonl
	diagnose_lines
	assert_success
	assert_equal "$(findings)" "missed_batches warning $A 10.0.0.1:5557
parent_not_found warning $A 10.0.0.1:5557"
	assert_equal "$(jq -c '.findings[1].evidence' report.json)" '{"blocks":1,"at_start":1,"missing_batches":1,"replayed":0}'
	assert_equal "$(jq -r '.findings[1].cause' report.json)" "events were missed: stores whose parents were in the lost batches cannot be placed; capture with kvsub --replay SRC=ENDPOINT"
}

@test "parent_not_found at the start of a stream is a notice about where the capture began" {
	{ store 1 1 13 12 9,10,11,12; store 30 2 14 null 1,2,3,4; } > in.jsonl
	diagnose_lines
	assert_success
	assert_equal "$(findings)" "parent_not_found notice $A 10.0.0.1:5557"
	assert_equal "$(jq -r '.findings[0].message' report.json)" "1 block dropped because the parent is unknown (1 in the first 10 s of the stream); 0 batches missing, 0 replayed"
}

@test "parent_not_found later, without gaps, points at expired content" {
	{ store 1 1 11 null 1,2,3,4; store 30 2 13 12 9,10,11,12; } > in.jsonl
	diagnose_lines
	assert_success
	assert_equal "$(findings)" "parent_not_found warning $A 10.0.0.1:5557"
	assert_equal "$(jq -r '.findings[0].cause' report.json)" "parents were released and their content expired before the store arrived (raise --content-ttl), or the engine publishes stores out of order"
}

@test "unknown_backend: a backend_id that is no engine's host is listed with the hosts known" {
	events | jq -c 'if .format == "memcache" and .backend_id == "10.0.0.2" then .backend_id = "10.0.9.9" else . end' > in.jsonl
	diagnose in.jsonl
	assert_success
	assert_equal "$(findings)" "unknown_backend warning $POOL -"
	assert_equal "$(evidence)" '{"blocks":53766,"backend_ids":["10.0.9.9"],"worker_hosts":"10.0.0.1, 10.0.0.2"}'
	assert_equal "$(jq -r '.findings[0].message' report.json)" "53766 pool blocks held by the pool itself: backend_id 10.0.9.9 names no worker (worker hosts: 10.0.0.1, 10.0.0.2)"
	assert_equal "$(jq -r '.findings[0].cause' report.json)" "backend_id is not the Pod IP of an engine: set the KV store client's address to the Pod IP, or the registrations name other hosts; a decoupled pool (a cache daemon) holds its blocks itself: they count under kvquery --shared-pool, or name the instances it serves with kvmatch --backend-serves"
}

@test "unknown_backend: a backend_id from the network is shown by the one printable rule" {
	# controls become '?', other UTF-8 is kept (kv_printable, as every message)
	events | jq -c 'if .format == "memcache" and .backend_id == "10.0.0.2" then .backend_id = "10.0.9.9\u0001\u007f\u0085\u00e9" else . end' > in.jsonl
	diagnose in.jsonl
	assert_success
	assert_equal "$(jq -r '.findings[0].evidence.backend_ids[0]' report.json)" "10.0.9.9???é"
	assert_equal "$(jq -r '.findings[0].message' report.json)" "53766 pool blocks held by the pool itself: backend_id 10.0.9.9???é names no worker (worker hosts: 10.0.0.1, 10.0.0.2)"
}

@test "unknown_backend: pool events without backend_id say so" {
	events | jq -c 'if .format == "memcache" then del(.backend_id) else . end' > in.jsonl
	diagnose in.jsonl
	assert_success
	assert_equal "$(jq -c '.findings[0] | [.finding, .evidence.backend_ids, .cause]' report.json)" \
		'["unknown_backend",[null],"the pool'"'"'s events carry no backend_id: the KV store client does not report its address"]'
}

@test "no_engine_events: pool entries expire for a registered worker that never published" {
	events | jq -c --arg b "$B" 'select(.src != $b)' > in.jsonl
	diagnose in.jsonl
	assert_success
	assert_equal "$(findings)" "no_engine_events warning - -"
	assert_equal "$(evidence)" '{"expired":968,"workers":["node1"]}'
}

@test "silent: an engine stops publishing 90 s before the end" {
	events | jq -c --arg b "$B" 'select(.src != $b or .recv_ns < 1764547260000000000)' > in.jsonl
	diagnose in.jsonl
	assert_success
	assert_equal "$(findings)" "silent notice $B node1"
	assert_equal "$(jq -c '.findings[0].evidence | [(.silent_seconds | floor), .batches]' report.json)" '[93,14]'
}

@test "restarted: an engine's seq begins again" {
	events | jq -c --arg a "$A" 'if .src == $a and .seq >= 15 then .seq -= 15 else . end' > in.jsonl
	diagnose in.jsonl
	assert_success
	assert_equal "$(findings)" "restarted warning $A node0"
	assert_equal "$(evidence)" '{"restarts":1}'
}

@test "lag: an engine's events arrive 30 s after their timestamps" {
	events | jq -c --arg b "$B" 'if .src == $b then .ts -= 30 else . end' > in.jsonl
	diagnose in.jsonl
	assert_success
	assert_equal "$(findings)" "lag warning $B node1"
	assert_equal "$(jq -c '.findings[0].evidence | [.mean_seconds, .max_seconds]' report.json)" '[30,30]'
}

@test "decode_errors: records that do not decode are counted against their source" {
	printf '%s\n' '[5.0, [["BlockStored", [1], null, [1,2,3,4], 4]]]' 'raw:c1' | j2mp --src "$A" --recv 5000000000 > bad.kvcap
	run --separate-stderr kvmatch -q --log none --diagnose=json bad.kvcap
	assert_equal "$status" 65
	printf '%s\n' "$stderr" > report.json
	assert_equal "$(findings)" "decode_errors warning $A -"
	assert_equal "$(evidence)" '{"problems":1}'
}

@test "limit_reached: events dropped at kvmatch's bounds are counted by bound" {
	{ store 1 1 11 null 1,2,3,4; store 2 2 12 null 5,6,7,8 | jq -c --arg l "$(printf 'l%.0s' $(seq 1025))" '.lora_name = $l'; } > in.jsonl
	diagnose_lines
	assert_success
	assert_equal "$(findings)" "limit_reached warning - -"
	assert_equal "$(evidence)" '{"partition_limit":1}'
	assert_equal "$(jq -r '.findings[0].message' report.json)" "events or blocks dropped at kvmatch's bounds: 1 partition_limit"
}

@test "SIGUSR2 writes a report while kvmatch runs, and --diagnose one more at the end" {
	mkfifo in
	kvmatch -q --log none --diagnose=json in 2>err & pid=$!
	exec 7>in
	store 1 1 11 null 1,2,3,4 >&7
	sleep 0.3
	kill -USR2 $pid
	for _ in $(seq 50); do [ -s err ] && break; sleep 0.1; done
	assert_equal "$(jq -c '[.findings, .events]' err)" '[[],1]'
	store 3 3 13 12 9,10,11,12 >&7
	exec 7>&-
	wait_for $pid
	assert_equal "$status" 0
	assert_equal "$(wc -l < err)" 2
	assert_equal "$(tail -1 err | jq -r '[.findings[].finding] | join(" ")')" "missed_batches parent_not_found"
}

@test "without --diagnose, SIGUSR2 still reports, as text, and nothing comes at the end" {
	mkfifo in
	kvmatch -q --log none in 2>err & pid=$!
	exec 7>in
	store 1 1 11 null 1,2,3,4 >&7
	sleep 0.3
	kill -USR2 $pid
	for _ in $(seq 50); do [ -s err ] && break; sleep 0.1; done
	exec 7>&-
	wait_for $pid
	assert_equal "$status" 0
	assert_equal "$(cat err)" "kvmatch: diagnose: 0 findings (1 source, 1 event)"
}

@test "--diagnose takes text or json, nothing else" {
	run --separate-stderr kvmatch --diagnose=yaml
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvmatch: --diagnose: 'yaml' is not text or json"
}
