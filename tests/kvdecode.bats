#!/usr/bin/env bats
# kvdecode: every publisher's wire format to event JSON lines.
load helper

# decode_lines [KVDECODE OPTIONS] <<< 'payload JSON lines': the capture j2mp
# makes of them, decoded; output and status in $output/$status, stderr apart.
decode_lines() {
	j2mp > in.kvcap
	run --separate-stderr kvdecode "$@" in.kvcap
}

# Field of line N (0-based) of the output, with jq.
field() { sed -n "$(($1 + 1))p" <<<"$output" | jq -c "$2"; }

fixture_test() {
	run --separate-stderr kvdecode "$FIX/$1.kvcap"
	assert_success
	[ -z "$stderr" ]
	printf '%s\n' "$output" > out.jsonl
	run jsonsub "$FIX/$1.jsonl" out.jsonl
	assert_success
}

@test "fixture vllm-0.9-array decodes to its expected lines" { fixture_test vllm-0.9-array; }
@test "fixture vllm-array-dp1 decodes to its expected lines" { fixture_test vllm-array-dp1; }
@test "fixture vllm-0.26-map decodes to its expected lines" { fixture_test vllm-0.26-map; }
@test "fixture memcache decodes to its expected lines" { fixture_test memcache; }
@test "fixture mooncake decodes to its expected lines" { fixture_test mooncake; }

@test "every line carries the batch fields" {
	run kvdecode "$FIX/vllm-array-dp1.kvcap"
	assert_success
	for i in 0 1 2 3; do
		assert_equal "$(field $i '[.src, .topic, .replayed, .format, .dp_rank] | tostring')" \
			'"[\"tcp://10.0.0.5:5558\",\"kv@10.0.0.5\",false,\"vllm\",1]"'
	done
	assert_equal "$(field 2 .seq)" 8
	assert_equal "$(grep -c '"recv_ns":1764500000000002000,' <<<"$output")" 2
}

@test "a 2-element batch [ts, events] (vLLM 0.9.0) has dp_rank null" {
	decode_lines <<< '[1.5, [["BlockRemoved", [7]]]]'
	assert_success
	assert_equal "$(field 0 '[.dp_rank, .ts, .type, .medium, .block_hashes[0]]|tostring')" '"[null,1.5,\"removed\",\"xpu\",\"0x0000000000000007\"]"'
}

@test "a [ts, dp_rank, events] batch is tolerated" {
	decode_lines <<< '[1.5, 3, [["AllBlocksCleared"]]]'
	assert_success
	assert_equal "$(field 0 '[.dp_rank, .type]|tostring')" '"[3,\"cleared\"]"'
}

@test "a vLLM batch written as a map" {
	decode_lines <<< '{"ts": 2.25, "events": [{"type": "BlockRemoved", "block_hashes": [9], "medium": "CPU"}], "data_parallel_rank": 2}'
	assert_success
	assert_equal "$(field 0 '[.format, .ts, .dp_rank, .medium, .medium_raw]|tostring')" '"[\"vllm\",2.25,2,\"cpu\",\"CPU\"]"'
}

@test "a 13-field BlockStored array, and one longer still" {
	decode_lines <<-'EOF'
	[1.0, [["BlockStored", [1], 5, [1,2,3,4], 4, 7, "GPU", "adapter", [["salt"]], 1, "sliding_window", 128, "local", "owned"]], 0]
	[1.0, [["BlockStored", [1], null, [], 0, null, "CPU", null, null, 0, null, null, "local", "owned", "future", 42]], 0]
	EOF
	assert_success
	assert_equal "$(field 0 'del(.src,.recv_ns,.seq,.topic,.replayed,.ts,.dp_rank,.format)|tostring')" \
		'"{\"type\":\"stored\",\"medium\":\"xpu\",\"block_hashes\":[\"0x0000000000000001\"],\"parent\":\"0x0000000000000005\",\"token_ids\":[1,2,3,4],\"block_size\":4,\"lora_id\":7,\"lora_name\":\"adapter\",\"extra_keys\":[[\"salt\"]],\"group_idx\":1,\"kv_cache_spec_kind\":\"sliding_window\",\"kv_cache_spec_sliding_window\":128,\"locality\":\"local\",\"ownership\":\"owned\",\"medium_raw\":\"GPU\"}"'
	assert_equal "$(field 1 '[.medium, .parent, .token_ids, .block_size, .group_idx, .locality, .ownership, has("future")]|tostring')" '"[\"cpu\",null,[],0,0,\"local\",\"owned\",false]"'
}

# The event fields after the batch fields, as one JSON text per line
# (no_events lines, of records that gave no event, left out).
event_fields() { jq -c 'select(.type != "no_events") | del(.src, .recv_ns, .seq, .topic, .replayed)' <<<"$output"; }

@test "locality and ownership of stores and removals, array and map form, as on the wire" {
	decode_lines <<-'EOF'
	[1.0, [["BlockRemoved", [1], "CPU", 2, "REMOTE", "kvcr"], ["BlockRemoved", [2], null, null, "LOCAL"]], 0]
	[1.0, [{"type": "BlockStored", "block_hashes": [3], "parent_block_hash": null, "token_ids": [1], "block_size": 1, "locality": "LOCAL", "ownership": "kvcr"}, {"type": "BlockRemoved", "block_hashes": [3], "ownership": null, "locality": "REMOTE"}], 0]
	[1.0, [["BlockRemoved", [4], null, null, 5]], 0]
	EOF
	assert_equal "$status" 65
	assert_equal "$(event_fields)" '{"format":"vllm","ts":1,"dp_rank":0,"type":"removed","medium":"cpu","block_hashes":["0x0000000000000001"],"group_idx":2,"locality":"REMOTE","ownership":"kvcr","medium_raw":"CPU"}
{"format":"vllm","ts":1,"dp_rank":0,"type":"removed","medium":"xpu","block_hashes":["0x0000000000000002"],"locality":"LOCAL"}
{"format":"vllm","ts":1,"dp_rank":0,"type":"stored","medium":"xpu","block_hashes":["0x0000000000000003"],"parent":null,"token_ids":[1],"block_size":1,"locality":"LOCAL","ownership":"kvcr"}
{"format":"vllm","ts":1,"dp_rank":0,"type":"removed","medium":"xpu","block_hashes":["0x0000000000000003"],"locality":"REMOTE"}'
	assert_equal "$stderr" "kvdecode: in.kvcap: record 3 (tcp://10.0.0.5:5557, seq 2): event 0: locality is not a string"
}

@test "pool events: group_id is kept as it came (an object group's name or a number), never a reason to drop" {
	# A Mooncake master batch as its publisher packs it (group_id a string,
	# optional fields nil, a key that is no hash: seq_hashes empty), and
	# memcache events with the same keys.
	decode_lines <<-'EOF'
	[1717000005000, [{"event_id": 1, "timestamp": 1717000005000, "event_type": "stored", "type": "BlockStored", "model_name": "llama", "block_size": 16, "additional_salt": "salt-a", "lora_name": null, "tenant_id": "default", "backend_id": "10.0.0.5", "medium": "cpu", "dp_rank": 0, "group_id": "0", "object_key": "llama@default@00ff", "seq_hashes": [], "block_hashes": [], "base_block_idx": null, "parent_hash": null, "token_ids": null, "parent_block_hash": null}], 0]
	{"events": [{"event_type": "removed", "seq_hashes": [7], "group_id": 3, "base_block_idx": 12, "additional_salt": null}, {"event_type": "stored", "seq_hashes": [8], "group_id": "-1"}]}
	{"events": [{"event_type": "stored", "seq_hashes": [9], "group_id": "sglang-hicache:e3b0"}, {"event_type": "stored", "seq_hashes": [9], "group_id": 1.5}, {"event_type": "stored", "seq_hashes": [9], "base_block_idx": "1"}, {"event_type": "stored", "seq_hashes": [9], "additional_salt": 1}]}
	EOF
	assert_equal "$status" 65
	assert_equal "$(event_fields)" '{"format":"mooncake","ts":1717000005,"dp_rank":0,"type":"stored","medium":"cpu","block_hashes":[],"block_size":16,"medium_raw":"cpu","backend_id":"10.0.0.5","model_name":"llama","tenant_id":"default","event_id":1,"group_id":"0","object_key":"llama@default@00ff","additional_salt":"salt-a"}
{"format":"memcache","ts":null,"dp_rank":null,"type":"removed","medium":"unknown","block_hashes":["0x0000000000000007"],"group_id":3,"base_block_idx":12}
{"format":"memcache","ts":null,"dp_rank":null,"type":"stored","medium":"unknown","block_hashes":["0x0000000000000008"],"group_id":"-1"}
{"format":"memcache","ts":null,"dp_rank":null,"type":"stored","medium":"unknown","block_hashes":["0x0000000000000009"],"group_id":"sglang-hicache:e3b0"}
{"format":"memcache","ts":null,"dp_rank":null,"type":"stored","medium":"unknown","block_hashes":["0x0000000000000009"]}'
	assert_equal "${#stderr_lines[@]}" 2
	assert_equal "${stderr_lines[0]}" "kvdecode: in.kvcap: record 3 (tcp://10.0.0.5:5557, seq 2): event 2: base_block_idx is not an integer"
	assert_equal "${stderr_lines[1]}" "kvdecode: in.kvcap: record 3 (tcp://10.0.0.5:5557, seq 2): event 3: additional_salt is not a string"
}

@test "object_key: a hash only without seq_hashes and block_hashes; '@' for memcache only; never truncated" {
	decode_lines <<-'EOF'
	[1, [{"event_type": "stored", "object_key": "12345"}, {"event_type": "stored", "object_key": "0x00000000000000000000002a"}, {"event_type": "stored", "object_key": "18446744073709551616"}, {"event_type": "stored", "object_key": "0x1ffffffffffffffff"}, {"event_type": "stored", "object_key": "host@0xabc"}, {"event_type": "stored", "object_key": "77", "seq_hashes": []}, {"event_type": "stored", "object_key": "77", "seq_hashes": null}], 0]
	{"events": [{"event_type": "stored", "object_key": "llama@default@00ff"}, {"event_type": "stored", "object_key": "llama@default@00ff", "block_hashes": []}]}
	EOF
	assert_success
	[ -z "$stderr" ]
	assert_equal "$(jq -c '[.object_key, .block_hashes]' <<<"$output")" '["12345",["0x0000000000003039"]]
["0x00000000000000000000002a",["0x000000000000002a"]]
["18446744073709551616",[]]
["0x1ffffffffffffffff",[]]
["host@0xabc",[]]
["77",[]]
["77",["0x000000000000004d"]]
["llama@default@00ff",["0x00000000000000ff"]]
["llama@default@00ff",[]]'
}

@test "SGLang's media: GPU, CPU_PINNED, DISK and EXTERNAL are xpu, cpu, disk and disk" {
	decode_lines <<< '[1, [{"event_type": "stored", "seq_hashes": [1], "medium": "GPU"}, {"event_type": "stored", "seq_hashes": [1], "medium": "CPU_PINNED"}, {"event_type": "stored", "seq_hashes": [1], "medium": "DISK"}, {"event_type": "stored", "seq_hashes": [1], "medium": "EXTERNAL"}], 0]'
	assert_success
	assert_equal "$(jq -r '.medium + " " + .medium_raw' <<<"$output" | tr '\n' ,)" "xpu GPU,cpu CPU_PINNED,disk DISK,disk EXTERNAL,"
}

@test "the Mooncake master's captures decode event for event as their manifests say (default flags, and both off)" {
	for f in L1K1 L0K0; do
		run --separate-stderr kvdecode -e "$FIX/mooncake-master/$f.kvcap"
		assert_success
		[ -z "$stderr" ]
		# what the driver asked for, where the publisher sent an event
		jq -c --arg f "$f" 'select(.sent) | [.type, .tenant, (if .medium == "" then "unknown" else .medium end),
			(if .group_id == "" then null else .group_id end), (if $f == "L1K1" then .key else null end),
			(if .seq_hash then [.seq_hash] else [] end)]' "$FIX/mooncake-master/$f.manifest.jsonl" > want
		jq -c '[.type, .tenant_id, .medium, .group_id, .object_key, .block_hashes]' <<<"$output" > got
		diff want got
		assert_equal "$(jq -r '[.format, .backend_id, (.dp_rank|tostring), (.base_block_idx // "-"|tostring)] | join(" ")' <<<"$output" | sort | uniq -c | sed 's/^ *//')" \
			"$([ $f = L1K1 ] && echo "9 mooncake 127.0.0.1 0 -
24 mooncake 127.0.0.1 0 0" || echo "6 mooncake 127.0.0.1 0 -
16 mooncake 127.0.0.1 0 0")"
	done
	# the seq of every batch is there, one after the other: no gap, no restart
	run --separate-stderr kvdecode --stats "$FIX/mooncake-master/L1K1.kvcap"
	assert_success
	assert_equal "$stderr" "kvdecode: tcp://127.0.0.1:55711: 33 batches, 33 events (mooncake: 24 stored, 9 removed, 0 cleared), 0 gaps, 0 missing events, 0 restarts, 0 replayed, 0 ignored, 0 errors"
}

@test "pool events in a map batch with ts are memcache events, and that ts is in seconds" {
	decode_lines <<-'EOF'
	{"ts": 1717000000, "events": [{"event_type": "stored", "seq_hashes": [1]}, {"event_type": "stored", "seq_hashes": [2], "timestamp": 1717000000250}], "data_parallel_rank": 1}
	{"ts": 1717000000.5, "events": [{"event_type": "removed", "seq_hashes": [1]}, {"type": "BlockRemoved", "block_hashes": [3]}]}
	[1717000001000, [{"event_type": "removed", "seq_hashes": [2]}], 0]
	EOF
	assert_success
	assert_equal "$(jq -c '[.format, .ts, .dp_rank]' <<<"$output" | tr '\n' ' ')" \
		'["memcache",1717000000,1] ["memcache",1717000000.25,1] ["memcache",1717000000.5,null] ["vllm",1717000000.5,null] ["mooncake",1717000001,0] '
}

@test "short arrays: fields that are not there are not written" {
	decode_lines <<< '[1.0, [["BlockStored", [1, 2]], ["BlockRemoved", [3]]]]'
	assert_success
	assert_equal "$(field 0 'keys|tostring')" '"[\"block_hashes\",\"dp_rank\",\"format\",\"medium\",\"parent\",\"recv_ns\",\"replayed\",\"seq\",\"src\",\"topic\",\"ts\",\"type\"]"'
	assert_equal "$(field 1 '.block_hashes|tostring')" '"[\"0x0000000000000003\"]"'
}

@test "a map event with unknown keys keeps what it knows" {
	decode_lines <<< '[1.0, [{"type": "BlockStored", "block_hashes": [1], "token_ids": [5], "block_size": 1, "event_version": 2, "novel": {"x": [1]}, "locality": "remote"}], 0]'
	assert_success
	assert_equal "$(field 0 '[.type, .token_ids, .block_size, .parent, has("novel"), has("event_version")]|tostring')" '"[\"stored\",[5],1,null,false,false]"'
}

@test "sha256 block hashes: a 32-byte hash keeps its last 8 bytes (vLLM's check values)" {
	decode_lines <<-'EOF'
	[1.0, [["BlockStored", ["b:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "b:fedd9e4abebebbe6f6cf96b682f08d316063fe2f22a5c552192dd62904fcccac"], "b:00000000000000000000000000000000000000000000000000b0147556276afc9c", [], 0]]]
	[1.0, [["BlockStored", ["u:12687895063098490012", "u:1814341696565857452"], null, [], 0]]]
	EOF
	assert_success
	assert_equal "$(field 0 '[.block_hashes, .parent]|tostring')" '"[[\"0x18191a1b1c1d1e1f\",\"0x192dd62904fcccac\"],\"0xb0147556276afc9c\"]"'
	assert_equal "$(field 1 '.block_hashes|tostring')" '"[\"0xb0147556276afc9c\",\"0x192dd62904fcccac\"]"'
}

@test "a Mooncake hash >= 2^63 arrives as a negative int64 and is read back" {
	decode_lines <<< '[1717000005000, [{"event_type": "stored", "block_hashes": ["i:-5758849010611061604", "i:-1"], "backend_id": "10.0.0.5"}], 0]'
	assert_success
	assert_equal "$(field 0 '[.format, .ts, .block_hashes]|tostring')" '"[\"mooncake\",1717000005,[\"0xb0147556276afc9c\",\"0xffffffffffffffff\"]]"'
}

@test "hex strings up to 64 digits keep their last 16, longer ones are dropped" {
	decode_lines --raw-hashes <<< '{"events": [{"event_type": "stored", "seq_hashes": ["000000000000000000000000000000000000000000000000192dd62904fcccac", "0xFF", "10000000000000000000000000000000000000000000000000000000000000001", "zz"]}]}'
	assert_equal "$status" 65
	assert_equal "$(field 0 '[.block_hashes, .raw_hashes]|tostring')" '"[[\"0x192dd62904fcccac\",\"0x00000000000000ff\"],[\"000000000000000000000000000000000000000000000000192dd62904fcccac\",\"0xFF\"]]"'
	assert_equal "${stderr_lines[0]}" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): event 0: seq_hashes[2]: hex string longer than 64 digits"
	assert_equal "${stderr_lines[1]}" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): event 0: seq_hashes[3]: not a hex string"
}

@test "--decimal-strings reads hash strings without 0x as decimal" {
	decode_lines --decimal-strings <<< '{"events": [{"event_type": "stored", "seq_hashes": ["12687895063098490012", "0x10"]}]}'
	assert_success
	assert_equal "$(field 0 '.block_hashes|tostring')" '"[\"0xb0147556276afc9c\",\"0x0000000000000010\"]"'
}

@test "--raw-hashes shows each hash as it came: ints as numbers, bytes as hex" {
	decode_lines --raw-hashes <<< '[1.0, [["BlockRemoved", ["u:18446744073709551615", "i:-2", "b:0102", "beef"]]]]'
	assert_success
	assert_equal "$(sed -n 1p <<<"$output" | grep -o '"raw_hashes":.*')" '"raw_hashes":[18446744073709551615,-2,"0102","beef"]}'
}

@test "one bad hash drops that hash only; the event and batch survive; exit 65" {
	decode_lines <<< '[1.0, [["BlockRemoved", [1, "f:2.5", true, 4]], ["AllBlocksCleared"]]]'
	assert_equal "$status" 65
	assert_equal "$(field 0 '.block_hashes|tostring')" '"[\"0x0000000000000001\",\"0x0000000000000004\"]"'
	assert_equal "$(field 1 .type)" '"cleared"'
	assert_equal "${stderr_lines[0]}" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): event 0: block_hashes[1]: a float is not a hash"
	assert_equal "${stderr_lines[1]}" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): event 0: block_hashes[2]: a boolean is not a hash"
}

@test "a bad parent hash drops its whole event, not just the parent, in vLLM and pool events" {
	decode_lines --stats <<-'EOF'
	[1.0, [["BlockStored", [1], "f:2.5", [1], 1], ["BlockStored", [2], 1, [2], 1]], 0]
	[1.0, [{"type": "BlockStored", "block_hashes": [3], "parent_block_hash": true, "token_ids": [3], "block_size": 1}], 0]
	{"events": [{"event_type": "stored", "seq_hashes": [4], "parent_hash": "f:1.5"}, {"event_type": "stored", "seq_hashes": [5], "parent_block_hash": "zz"}, {"event_type": "stored", "seq_hashes": [6], "parent_hash": 4}]}
	EOF
	assert_equal "$status" 65
	assert_equal "$(jq -c '[.format, .block_hashes, .parent]' <<<"$output")" '["vllm",["0x0000000000000002"],"0x0000000000000001"]
[null,null,null]
["memcache",["0x0000000000000006"],"0x0000000000000004"]'
	assert_equal "$(sed -n 2p <<<"$output")" '{"type":"no_events","src":"tcp://10.0.0.5:5557","seq":1,"recv_ns":1764500000001000000,"record":2,"decoded":true}'
	assert_equal "$stderr" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): event 0: parent_block_hash: a float is not a hash
kvdecode: in.kvcap: record 2 (tcp://10.0.0.5:5557, seq 1): event 0: parent_block_hash: a boolean is not a hash
kvdecode: in.kvcap: record 3 (tcp://10.0.0.5:5557, seq 2): event 0: parent_hash: a float is not a hash
kvdecode: in.kvcap: record 3 (tcp://10.0.0.5:5557, seq 2): event 1: parent_block_hash: not a hex string
kvdecode: tcp://10.0.0.5:5557: 3 batches, 2 events (vllm: 1 stored, 0 removed, 0 cleared; memcache: 1 stored, 0 removed, 0 cleared), 0 gaps, 0 missing, 0 restarts, 0 replayed, 0 ignored, 4 errors"
}

@test "pool events: seq_hashes and block_hashes merged without repeats, in order" {
	decode_lines <<< '[1717000005000, [{"event_type": "BlockStored", "seq_hashes": [3, 1], "block_hashes": [1, 2, "i:3"], "medium": "local_disk", "dp_rank": 2, "timestamp": 1717000005123}], 0]'
	assert_success
	assert_equal "$(field 0 '[.block_hashes, .medium, .medium_raw, .dp_rank, .ts]|tostring')" '"[[\"0x0000000000000003\",\"0x0000000000000001\",\"0x0000000000000002\"],\"disk\",\"local_disk\",2,1717000005.123]"'
}

@test "pool events without hashes take them from object_key" {
	decode_lines <<-'EOF'
	{"events": [{"event_type": "stored", "object_key": "llama@default@00000000000000000000000000000000000000000000000000000000000000ff"}, {"event_type": "removed", "object_key": "12687895063098490012"}, {"event_type": "removed", "object_key": "0x10"}, {"event_type": "stored"}]}
	EOF
	assert_success
	assert_equal "$(jq -c '.block_hashes' <<<"$output" | tr '\n' ' ')" '["0x00000000000000ff"] ["0xb0147556276afc9c"] ["0x0000000000000010"] [] '
}

@test "event_type is matched as a substring, type is its fallback, unknown types are ignored" {
	decode_lines -v <<< '{"events": [{"event_type": "AllBlocksCleared"}, {"type": "BlockRemoved", "backend_id": "x", "seq_hashes": [1]}, {"event_type": "Updated"}]}'
	assert_success
	assert_equal "$(jq -c '[.format, .type, .medium]' <<<"$output" | tr '\n' ' ')" '["memcache","cleared","unknown"] ["memcache","removed","unknown"] '
	assert_equal "$stderr" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): 1 events of unknown types ignored"
}

@test "medium names are normalised, the original kept in medium_raw" {
	decode_lines <<< '[1.0, [["BlockRemoved", [1], "NPU"], ["BlockRemoved", [1], "cpu_pinned"], ["BlockRemoved", [1], "STORAGE"], ["BlockRemoved", [1], "tape"], ["BlockRemoved", [1]]]]'
	assert_success
	assert_equal "$(jq -c '[.medium, .medium_raw]' <<<"$output" | tr '\n' ' ')" '["xpu","NPU"] ["cpu","cpu_pinned"] ["disk","STORAGE"] ["unknown","tape"] ["xpu",null] '
}

@test "offload placeholder events (token_ids [], block_size 0) decode as they are" {
	decode_lines <<< '[1.0, [["BlockStored", [1], null, [], 0, null, "CPU"]], 0]'
	assert_success
	assert_equal "$(field 0 '[.medium, .token_ids, .block_size]|tostring')" '"[\"cpu\",[],0]"'
}

@test "a bad event is skipped with a message; the rest of the batch survives" {
	decode_lines <<< '[1.0, [["BlockStored", [1], null, [1, -2], 2], ["BlockStored", "nope"], ["BlockStored", [2], null, [3], "x"], 5, ["BlockRemoved", [9]]]]'
	assert_equal "$status" 65
	assert_equal "$(jq -c '.block_hashes' <<<"$output")" '["0x0000000000000009"]'
	assert_equal "${#stderr_lines[@]}" 4
	assert_equal "${stderr_lines[0]}" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): event 0: token_ids[1] is not a token id (0 to 4294967295)"
	assert_equal "${stderr_lines[1]}" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): event 1: block_hashes is not an array"
	assert_equal "${stderr_lines[2]}" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): event 2: block_size is not an integer"
	assert_equal "${stderr_lines[3]}" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): event 3: neither a vLLM event nor a pool event map"
}

@test "a dp_rank beyond 2^32-1 or negative is refused in array and map batches and pool events" {
	# the snapshot stores ranks as u32: 2^32 would become rank 0 there
	decode_lines <<-'EOF'
	[1.5, [["BlockRemoved", [7]]], 4294967296]
	[1.5, [["BlockRemoved", [7]]], -1]
	{"ts": 2.25, "events": [{"type": "BlockRemoved", "block_hashes": [9]}], "data_parallel_rank": 4294967296}
	[1, [{"event_type": "BlockStored", "seq_hashes": [5], "dp_rank": 4294967296}, {"event_type": "BlockStored", "seq_hashes": [6], "dp_rank": 4294967295}], 0]
	[1.5, 4294967295, [["BlockRemoved", [8]]]]
	EOF
	assert_equal "$status" 65
	assert_equal "$(jq -c 'select(.type != "no_events") | [.dp_rank, .block_hashes[0]]' <<<"$output" | tr '\n' ' ')" '[4294967295,"0x0000000000000006"] [4294967295,"0x0000000000000008"] '
	assert_equal "${#stderr_lines[@]}" 4
	assert_equal "${stderr_lines[0]}" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): data_parallel_rank 4294967296 is not a rank from 0 to 4294967295"
	assert_equal "${stderr_lines[1]}" "kvdecode: in.kvcap: record 2 (tcp://10.0.0.5:5557, seq 1): data_parallel_rank -1 is not a rank from 0 to 4294967295"
	assert_equal "${stderr_lines[2]}" "kvdecode: in.kvcap: record 3 (tcp://10.0.0.5:5557, seq 2): data_parallel_rank 4294967296 is not a rank from 0 to 4294967295"
	assert_equal "${stderr_lines[3]}" "kvdecode: in.kvcap: record 4 (tcp://10.0.0.5:5557, seq 3): event 0: dp_rank 4294967296 is not a rank from 0 to 4294967295"
}

@test "a negative block_size is refused in vLLM and pool events alike, with a message; 0 is taken" {
	decode_lines <<-'EOF'
	[1.0, [["BlockStored", [1], null, [1, 2], -1], ["BlockRemoved", [9]]]]
	{"events": [{"type": "BlockStored", "block_hashes": ["0xbb"], "backend_id": "10.0.0.1", "block_size": -1}, {"type": "BlockRemoved", "block_hashes": ["0xcc"]}]}
	EOF
	assert_equal "$status" 65
	assert_equal "$(jq -c '.block_hashes' <<<"$output" | tr '\n' ' ')" '["0x0000000000000009"] ["0x00000000000000cc"] '
	assert_equal "${stderr_lines[0]}" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): event 0: block_size is negative"
	assert_equal "${stderr_lines[1]}" "kvdecode: in.kvcap: record 2 (tcp://10.0.0.5:5557, seq 1): event 0: block_size is negative"
	# 0, the boundary, is a block size as the engines' offload placeholders have it
	decode_lines <<-'EOF'
	[1.0, [["BlockStored", [1], null, [], 0]]]
	{"events": [{"type": "BlockStored", "block_hashes": ["0xbb"], "backend_id": "10.0.0.1", "block_size": 0}]}
	EOF
	assert_success
	assert_equal "$(jq -c '[.block_hashes, .block_size]' <<<"$output" | tr '\n' ' ')" '[["0x0000000000000001"],0] [["0x00000000000000bb"],0] '
}

@test "an undecodable payload is reported, counted and skipped; decoding goes on" {
	decode_lines <<-'EOF'
	[1.0, [["BlockRemoved", [1]]]]
	"just a string"
	raw:c1
	[1.0]
	{"no": "events"}
	[1.0, [["BlockRemoved", [2]]]]
	EOF
	assert_equal "$status" 65
	# each undecodable record leaves a no_events line, so that its seq is no gap for kvmatch
	assert_equal "$(jq -c '.block_hashes[0] // [.type, .seq, .record, .decoded]' <<<"$output" | tr '\n' ' ')" \
		'"0x0000000000000001" ["no_events",1,2,false] ["no_events",2,3,false] ["no_events",3,4,false] ["no_events",4,5,false] "0x0000000000000002" '
	assert_equal "${stderr_lines[0]}" "kvdecode: in.kvcap: record 2 (tcp://10.0.0.5:5557, seq 1): payload is neither a map nor an array"
	assert_equal "${stderr_lines[1]}" "kvdecode: in.kvcap: record 3 (tcp://10.0.0.5:5557, seq 2): invalid MessagePack byte 0xc1"
	assert_equal "${stderr_lines[2]}" "kvdecode: in.kvcap: record 4 (tcp://10.0.0.5:5557, seq 3): batch array has 1 elements (expected [ts, events, ...])"
	assert_equal "${stderr_lines[3]}" "kvdecode: in.kvcap: record 5 (tcp://10.0.0.5:5557, seq 4): map batch without an events array"
}

@test "-e also writes each error as a JSON line" {
	decode_lines -e <<-'EOF'
	raw:c1
	[1.0, [["BlockRemoved", [2]]]]
	EOF
	assert_equal "$status" 65
	assert_equal "$(field 0 'tostring')" '"{\"type\":\"error\",\"src\":\"tcp://10.0.0.5:5557\",\"seq\":0,\"recv_ns\":1764500000000000000,\"record\":1,\"error\":\"invalid MessagePack byte 0xc1\"}"'
	assert_equal "$(field 1 .type)" '"removed"'
}

@test "a depth bomb is refused cleanly" {
	bomb=$(printf '91%.0s' $(seq 1 100000))
	echo "raw:$bomb" | j2mp > in.kvcap
	run --separate-stderr kvdecode in.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): MessagePack nesting deeper than 32"
}

# Under AddressSanitizer (make check SAN=1) the shadow memory needs more
# address space than any limit: there the message alone tells that
# msgpack-c never saw the claim.
limited() {
	if [ "${KVTOOLS_SAN:-}" = 1 ]; then "$@"; else (ulimit -v 200000; "$@"); fi
}

@test "a 4 GiB length claim in a 50-byte payload is refused without allocating it" {
	# [1.0, <array32 of 2^32-1 elements>, ...padding]
	echo "raw:93cb3ff0000000000000ddffffffff$(printf '00%.0s' $(seq 1 36))" | j2mp > in.kvcap
	run --separate-stderr limited kvdecode in.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): MessagePack object over the size limits"
	echo "raw:92cb3ff0000000000000dbffffffff00" | j2mp > in.kvcap
	run --separate-stderr limited kvdecode in.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): MessagePack object over the size limits"
}

@test "random bytes as payloads never crash the decoder" {
	for i in $(seq 1 300); do
		echo "raw:$(head -c $((RANDOM % 64 + 1)) /dev/urandom | od -An -tx1 | tr -d ' \n')"
	done | j2mp > in.kvcap
	run kvdecode -q in.kvcap
	[ "$status" -eq 0 ] || [ "$status" -eq 65 ]
}

@test "a capture cut at every byte of its last record: complete records decoded, then the error" {
	cat "$FIX/vllm-array-dp1.kvcap" > cap.kvcap
	size=$(stat -c %s cap.kvcap)
	head -c $((size - 1)) cap.kvcap > cut.kvcap
	start=$(kvdecode cut.kvcap 2>&1 >/dev/null | sed -n 's/.*truncated record at byte \([0-9]*\)$/\1/p')
	[ "$start" -gt 100 ]
	full=$(kvdecode cap.kvcap | head -2)
	for cut in $(seq $((start + 1)) $((size - 1))); do
		head -c "$cut" cap.kvcap > cut.kvcap
		run --separate-stderr kvdecode cut.kvcap
		assert_equal "$status" 65
		assert_equal "$output" "$full"
		assert_equal "$stderr" "kvdecode: cut.kvcap: record 2: truncated record at byte $start"
	done
}

@test "--stats counts per source: batches, events by type and format, gaps, restarts" {
	j2mp --seq 5 > a.kvcap <<-'EOF'
	[1.0, [["BlockStored", [1], null, [1], 1], ["BlockRemoved", [1]]]]
	[1.0, [["AllBlocksCleared"]]]
	EOF
	j2mp --seq 9 > b.kvcap <<-'EOF'
	[1.0, [["BlockRemoved", [1]]]]
	EOF
	j2mp --seq 1 --src tcp://pool:5557 > c.kvcap <<-'EOF'
	{"events": [{"event_type": "stored", "seq_hashes": [1]}, {"event_type": "bogus"}]}
	EOF
	run --separate-stderr kvdecode --stats a.kvcap b.kvcap c.kvcap a.kvcap
	assert_success
	assert_equal "${stderr_lines[0]}" "kvdecode: tcp://10.0.0.5:5557: 5 batches, 7 events (vllm: 2 stored, 3 removed, 2 cleared), 1 gaps, 2 missing, 1 restarts, 0 replayed, 0 ignored, 0 errors"
	assert_equal "${stderr_lines[1]}" "kvdecode: tcp://pool:5557: 1 batches, 1 events (memcache: 1 stored, 0 removed, 0 cleared), 0 gaps, 0 missing, 0 restarts, 0 replayed, 1 ignored, 0 errors"
}

@test "--stats: an undecodable record counts as an error, not as a gap in seq" {
	decode_lines --stats <<-'EOF'
	[1.0, [["BlockRemoved", [1]]]]
	raw:c1
	[1.0, [["BlockRemoved", [2]]]]
	EOF
	assert_equal "$status" 65
	assert_equal "${#stderr_lines[@]}" 2
	assert_equal "${stderr_lines[0]}" "kvdecode: in.kvcap: record 2 (tcp://10.0.0.5:5557, seq 1): invalid MessagePack byte 0xc1"
	assert_equal "${stderr_lines[1]}" "kvdecode: tcp://10.0.0.5:5557: 2 batches, 2 events (vllm: 0 stored, 2 removed, 0 cleared), 0 gaps, 0 missing, 0 restarts, 0 replayed, 0 ignored, 1 errors"
}

@test "--payload decodes a stream of bare payloads" {
	j2mp --payload > p.bin <<-'EOF'
	[1.0, [["BlockRemoved", [1]]], 0]
	{"events": [{"event_type": "removed", "seq_hashes": [2]}]}
	EOF
	run --separate-stderr kvdecode --payload p.bin
	assert_success
	assert_equal "$(jq -c '[.src, .seq, .format, .block_hashes[0]]' <<<"$output" | tr '\n' ' ')" '["",null,"vllm","0x0000000000000001"] ["",null,"memcache","0x0000000000000002"] '
}

@test "without --payload, a stream that is not a capture is refused" {
	j2mp --payload > p.bin <<< '{"events": []}'
	run --separate-stderr kvdecode p.bin
	assert_equal "$status" 65
	assert_equal "$stderr" "kvdecode: p.bin: record 1: not a kvcap capture (it does not start with a kvcap header); --payload reads bare payloads"
}

@test "a kvcap header of another version is refused, first or later, by every reader" {
	j2mp <<< '[1.5, [["BlockRemoved", [7]]]]' > ok.kvcap
	for v in '\x02' '\xa11' '\xff'; do
		printf "\x83\xa5kvcap$v\xa4tool\xa1x\xa8start_ns\x00" > h.kvcap
		cat h.kvcap ok.kvcap > first.kvcap
		cat ok.kvcap h.kvcap ok.kvcap > later.kvcap
		run --separate-stderr kvdecode first.kvcap
		assert_equal "$status" 65
		assert_equal "$output" ""
		case $v in
		'\x02') what='version 2' ;;
		'\xff') what='version -1' ;;
		*) what='a version that is not an integer' ;;
		esac
		assert_equal "$stderr" "kvdecode: first.kvcap: record 1: byte 0: kvcap header with $what (this kvtools reads version 1)"
		run --separate-stderr kvdecode later.kvcap
		assert_equal "$status" 65
		assert_equal "${#lines[@]}" 1
		assert_equal "$stderr" "kvdecode: later.kvcap: record 2: byte $(stat -c %s ok.kvcap): kvcap header with $what (this kvtools reads version 1)"
		run --separate-stderr kvmatch --log none first.kvcap
		assert_equal "$status" 65
		assert_equal "${stderr_lines[0]}" "kvmatch: first.kvcap: record 1: byte 0: kvcap header with $what (this kvtools reads version 1)"
		run --separate-stderr kvpub -q --single "ipc://$T/p" --slow-joiner-wait 0 --linger 0 first.kvcap
		assert_equal "$status" 65
		assert_equal "$stderr" "kvpub: first.kvcap: byte 0: kvcap header with $what (this kvtools reads version 1)"
	done
}

@test "concatenated captures decode as one, from stdin" {
	run bash -c "cat '$FIX/vllm-0.9-array.kvcap' '$FIX/mooncake.kvcap' | kvdecode | jq -r .format"
	assert_success
	assert_equal "$(tr '\n' ' ' <<<"$output")" "vllm mooncake mooncake "
}

@test "a seq frame that is not 8 bytes gives seq null" {
	j2mp --seq-bytes 4 > in.kvcap <<< '[1.0, [["BlockRemoved", [1]]]]'
	run kvdecode in.kvcap
	assert_success
	assert_equal "$(field 0 .seq)" null
}

@test "topics and ids with quotes, control bytes and bad UTF-8 stay valid JSON" {
	printf '%s\n' '{"events": [{"event_type": "removed", "seq_hashes": [1], "backend_id": "a\"b\\c\nd\u0001", "model_name": "x:41ff42"}]}' | j2mp --topic "$(printf 'k\tv\xff')" > in.kvcap
	run kvdecode in.kvcap
	assert_success
	assert_equal "$(field 0 '[.topic, .backend_id, .model_name]|tostring')" '"[\"k\\tv�\",\"a\\\"b\\\\c\\nd\\u0001\",\"A�B\"]"'
}

@test "a file that cannot be opened: exit 66 after decoding the others" {
	run --separate-stderr kvdecode nonexistent.kvcap "$FIX/vllm-0.9-array.kvcap"
	assert_equal "$status" 66
	assert_equal "$stderr" "kvdecode: nonexistent.kvcap: No such file or directory"
	assert_equal "$(grep -c . <<<"$output")" 1
}

@test "kvdecode into a closed pipe exits 0" {
	for i in $(seq 1 20000); do echo '[1.0, [["BlockRemoved", [1, 2, 3]]]]'; done | j2mp > big.kvcap
	run bash -c "set -o pipefail; kvdecode big.kvcap | head -1 | wc -l"
	assert_success
	assert_output 1
}

@test "kvdecode -o /dev/full exits 74" {
	run --separate-stderr kvdecode -o /dev/full "$FIX/vllm-0.9-array.kvcap"
	assert_equal "$status" 74
	assert_equal "$stderr" "kvdecode: /dev/full: No space left on device"
}

@test "kvdecode --help, --version and a bad option" {
	run --separate-stderr kvdecode --help
	assert_success
	assert_line --index 0 'Usage: kvdecode [OPTION]... [FILE]...'
	run kvdecode -V
	assert_output --regexp '^kvdecode [0-9.]+$'
	run --separate-stderr kvdecode --bogus
	assert_equal "$status" 64
	assert_equal "${stderr_lines[1]}" "Try 'kvdecode --help'."
}

# Lines reach the file while kvsub and kvdecode still run: kvsub has no -c
# and its publisher stays quiet after five messages, so a kvdecode that
# wrote only at exit (or when its buffer filled) would leave the file empty
# until the processes are stopped, and the bounded poll would fail.
@test "kvsub | kvdecode shows events live, while both still run" {
	p=$(port)
	mkfifo pipe
	kvsub -W 30 "tcp://127.0.0.1:$p" 2>/dev/null > pipe & sub=$!
	kvdecode < pipe > live.jsonl & dec=$!
	fakepub -n 5 "tcp://127.0.0.1:$p"
	for i in $(seq 1 200); do
		[ "$(wc -l < live.jsonl)" -ge 5 ] && break
		sleep 0.05
	done
	# what was there while both ran, before anything stops them
	lines_live=$(wc -l < live.jsonl)
	alive_sub=0 alive_dec=0
	kill -0 $sub 2>/dev/null && alive_sub=1
	kill -0 $dec 2>/dev/null && alive_dec=1
	kill -TERM $sub
	wait_for $sub 5
	assert_equal "$status" 0
	wait_for $dec 5
	assert_equal "$status" 0
	assert_equal "$alive_sub $alive_dec $lines_live" "1 1 5"
	assert_equal "$(jq -r '.seq' live.jsonl | tr '\n' ' ')" "0 1 2 3 4 "
	assert_equal "$(jq -r '.block_hashes[0]' live.jsonl | head -1)" "0x0000000000001000"
}

@test "terminal escapes in a source reach neither the messages nor --stats; a cut stdin is 'stdin' in both" {
	printf '%s\n' '[1.0, [["BlockRemoved", [1]]]]' '[1.0, "not events"]' | j2mp --src "$(printf 'tcp://h\033]0;x\007:1')" > esc.kvcap
	run --separate-stderr kvdecode --stats esc.kvcap
	assert_equal "$status" 65
	[ "$(printf '%s' "$stderr" | LC_ALL=C tr -d '\n -~' | wc -c)" = 0 ]
	assert_equal "${stderr_lines[1]}" "kvdecode: tcp://h?]0;x?:1: 1 batches, 1 events (vllm: 0 stored, 1 removed, 0 cleared), 0 gaps, 0 missing, 0 restarts, 0 replayed, 0 ignored, 1 errors"
	[[ ${stderr_lines[0]} == "kvdecode: esc.kvcap: record 2 (tcp://h?]0;x?:1, seq "* ]]
	head -c 20 "$FIX/vllm-0.9-array.kvcap" > cut.kvcap
	run --separate-stderr kvdecode --stats < cut.kvcap
	assert_equal "$status" 65
	assert_equal "${stderr_lines[0]}" "kvdecode: stdin: record 1: truncated record at byte 0"
	assert_equal "${stderr_lines[1]}" "kvdecode: stdin: 0 batches, 0 events, 0 gaps, 0 missing, 0 restarts, 0 replayed, 0 ignored, 1 errors"
}
