#!/usr/bin/env bats
# The rules the man pages state, pinned through the programs: the partition
# a pool event lands in, a backend's second name beside its host, identifiers
# present but empty, partial blocks in every answer dialect, enumerated names
# matched whole, and kvgen's event boundaries.  Each test names the page and
# section that states its rule; tests/faultplant plants one-line faults in
# the code of these rules, and these tests are what catches them.
load helper

# Event lines as kvdecode writes them (kvdecode(1) "JSON FIELDS").
#   store SRC T MEDIUM HASHES TOKENS [EXTRA]   (dp_rank 0, block size 4, no parent)
store() {
	printf '{"src":"%s","recv_ns":%s000000000,"seq":%s,"format":"vllm","dp_rank":0,"type":"stored","medium":"%s","block_hashes":[%s],"parent":null,"token_ids":[%s],"block_size":4%s}\n' \
		"$1" "$2" "$2" "$3" "$4" "$5" "${6:-}"
}
#   pool T HASHES BACKEND [EXTRA]   (a memcache store in cpu, from tcp://kvs:5557)
pool() {
	printf '{"src":"tcp://kvs:5557","recv_ns":%s000000000,"seq":%s,"format":"memcache","dp_rank":null,"type":"stored","medium":"cpu","block_hashes":[%s],"backend_id":"%s"%s}\n' \
		"$1" "$1" "$2" "$3" "${4:-}"
}
# state lines as "state model workers" (kvmatch(1) "State lines")
states() { jq -r '[.state, (.reason // "-"), (.model // "-"), ([(.workers // [])[] | if .pool then "pool:\(.pool)" else "\(.instance_id)/\(.dp_rank)" end] | join(","))] | join(" ")'; }
partitions() { kvmatch --dump "$1" | jq -r 'select(.kind == "partition") | "\(.model) \(.tenant) \(.blocks)"'; }

E0=tcp://10.0.0.5:5557
E2=tcp://10.0.0.6:5557

# ---- a. the partition of an event that names an adapter or a salt ----------

@test "rule: a pool event's adapter is its partition, salted by its subscriber's registration; so is its model (kvmatch(1) \"Partitions and block identity\")" {
	cat > r.jsonl <<-EOF
	{"endpoint": "$E0", "type": "vLLM", "modelname": "m", "instance_id": "a", "block_size": 4, "dp_rank": 0, "additionalsalt": "y"}
	{"endpoint": "tcp://kvs:5557", "type": "Memcache", "modelname": "m", "instance_id": "kvs", "block_size": 4, "dp_rank": 0, "additionalsalt": "y"}
	EOF
	{ store $E0 1 xpu '"0xa"' 1,2,3,4 ',"lora_name":"ad"'; store $E0 2 xpu '"0xb"' 5,6,7,8
	  pool 3 '"0xa"' 10.0.0.5 ',"lora_name":"ad"'; pool 4 '"0xb"' 10.0.0.5 ',"model_name":"m"'; } > ev.jsonl
	run --separate-stderr kvmatch -r r.jsonl --log applied,confirmed -o s.kvsnap ev.jsonl
	assert_success
	# a one-character salt, after the adapter's name and after the model's
	assert_equal "$(states <<<"$output")" "applied - ad#y a/0
applied - m#y a/0
confirmed - ad#y a/0
confirmed - m#y a/0"
	assert_equal "$(partitions s.kvsnap)" "ad#y default 1
m#y default 1"
}

@test "rule: an engine's adapter event takes its registration's salt; without registrations a pool event's model is 'default' (kvmatch(1) \"Pool events\")" {
	cat > r.jsonl <<-EOF
	{"endpoint": "$E0", "type": "vLLM", "modelname": "m", "instance_id": "a", "block_size": 4, "dp_rank": 0, "additionalsalt": "q"}
	EOF
	store $E0 1 xpu '"0xa"' 1,2,3,4 ',"lora_name":"ad"' > ev.jsonl
	run --separate-stderr kvmatch -r r.jsonl --log applied ev.jsonl
	assert_equal "$(states <<<"$output")" "applied - ad#q a/0"
	# no registrations: every engine is in model default, and pools meet them there
	{ store $E0 1 xpu '"0xa"' 1,2,3,4; pool 2 '"0xa"' 10.0.0.5 ',"model_name":"llama"'; } > ev2.jsonl
	run --separate-stderr kvmatch --log applied,confirmed ev2.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "applied - default 10.0.0.5:5557/0
confirmed - default 10.0.0.5:5557/0"
}

@test "rule: a worker registered again with another salt or adapter is refused, the earlier line wins (kvmatch(1) \"Workers\")" {
	cat > r.jsonl <<-EOF
	{"endpoint": "$E0", "type": "vLLM", "modelname": "m", "instance_id": "a", "block_size": 4, "dp_rank": 0, "additionalsalt": "y"}
	{"endpoint": "$E0", "type": "vLLM", "modelname": "m", "instance_id": "a", "block_size": 4, "dp_rank": 0, "additionalsalt": "z"}
	{"endpoint": "$E0", "type": "vLLM", "modelname": "m", "instance_id": "a", "block_size": 4, "dp_rank": 0, "additionalsalt": "y", "lora_name": "ad"}
	EOF
	run --separate-stderr kvmatch -r r.jsonl /dev/null
	assert_equal "$status" 65
	assert_equal "${stderr_lines[0]}" "kvmatch: r.jsonl: line 2: instance_id a dp_rank 0 registered again with another modelname (line 1 wins)"
	assert_equal "${stderr_lines[1]}" "kvmatch: r.jsonl: line 3: instance_id a dp_rank 0 registered again with another modelname (line 1 wins)"
}

# ---- b. a backend's second name beside its host ----------------------------

@test "rule: --backend-serves adds a name beside the host, and names instances whole (kvmatch(1) \"Pool events\")" {
	cat > r.jsonl <<-EOF
	{"endpoint": "$E0", "type": "vLLM", "modelname": "m", "instance_id": "a", "block_size": 4, "dp_rank": 0}
	{"endpoint": "$E2", "type": "vLLM", "modelname": "m", "instance_id": "ab", "block_size": 4, "dp_rank": 0}
	{"endpoint": "tcp://kvs:5557", "type": "Memcache", "modelname": "m", "instance_id": "kvs", "block_size": 4, "dp_rank": 0}
	EOF
	{ store $E0 1 xpu '"0xa"' 1,2,3,4; pool 2 '"0xa"' daemon; pool 3 '"0xa"' 10.0.0.5; pool 4 '"0xa"' 10.0.0.6; } > ev.jsonl
	run --separate-stderr kvmatch -r r.jsonl --backend-serves daemon=a --log confirmed ev.jsonl
	assert_success
	# daemon serves a, not ab; a keeps its own host; ab's host is ab's
	assert_equal "$(states <<<"$output")" "confirmed - m a/0
confirmed - m a/0
confirmed - m ab/0"
	# a host may be named a second time: 10.0.0.6 also serves a
	run --separate-stderr kvmatch -r r.jsonl --backend-serves 10.0.0.6=a --log confirmed ev.jsonl
	assert_equal "$(states <<<"$output" | tail -1)" "confirmed - m a/0,ab/0"
}

@test "rule: store_backend is one of three names whole, in any case (kvmatch(1) \"Workers\")" {
	for b in MemCache yuanrong MOONCAKE; do
		echo "{\"endpoint\": \"$E0\", \"type\": \"vLLM\", \"modelname\": \"m\", \"instance_id\": \"a\", \"block_size\": 4, \"dp_rank\": 0, \"store_backend\": \"$b\"}" > r.jsonl
		run --separate-stderr kvmatch -r r.jsonl /dev/null
		assert_success
	done
	for b in memcachex yr moon ''; do
		echo "{\"endpoint\": \"$E0\", \"type\": \"vLLM\", \"modelname\": \"m\", \"instance_id\": \"a\", \"block_size\": 4, \"dp_rank\": 0, \"store_backend\": \"$b\"}" > r.jsonl
		run --separate-stderr kvmatch -r r.jsonl /dev/null
		assert_equal "$status" 65
		assert_equal "$(grep -c 'line 1: store_backend' <<<"$stderr")" 1
	done
}

# ---- c. identifiers present but empty --------------------------------------

@test "rule: an empty lora_name or additionalsalt in a registration is the base model, no salt (kvmatch(1) \"Workers\")" {
	cat > r.jsonl <<-EOF
	{"endpoint": "$E0", "type": "vLLM", "modelname": "m", "instance_id": "a", "block_size": 4, "dp_rank": 0, "lora_name": "", "additionalsalt": ""}
	EOF
	store $E0 1 xpu '"0xa"' 1,2,3,4 > ev.jsonl
	run --separate-stderr kvmatch -r r.jsonl --log applied ev.jsonl
	assert_equal "$(states <<<"$output")" "applied - m a/0"
}

@test "rule: --hash dynamo adds an adapter or namespace only when given and not empty (kvquery(1) \"Queries\")" {
	store $E0 1 xpu '"0xa","0xb"' 1,2,3,4,5,6,7,8 > ev.jsonl
	kvmatch -q --log none -o s.kvsnap ev.jsonl
	for extra in '' ',"lora_name":""' ',"cache_namespace":""' ',"lora_name":"","cache_namespace":""'; do
		run --separate-stderr kvquery -s s.kvsnap --hash dynamo --api mooncake <<<"{\"token_ids\":[1,2,3,4,5,6,7,8]$extra}"
		assert_success
		assert_output '{"default":{"10.0.0.5:5557":{"CPU":8,"DISK":8,"DP":{"0":8},"GPU":8,"longest_matched":8}}}'
	done
	# a named adapter salts the hash: blocks stored without it are not found
	# (kv-conductor's /query shape, where lora_name names no partition)
	run --separate-stderr kvquery -s s.kvsnap --hash dynamo <<<'{"token_ids":[1,2,3,4,5,6,7,8],"lora_name":"x"}'
	assert_output '{"default":{}}'
}

@test "rule: a query's empty lora_name, cache_salt or instance_id is as if absent; an empty model or tenant_id is a name no partition has (kvquery(1) \"Queries\")" {
	kvmatch -q -r "$ROOT/share/registrations.jsonl" --log none -o s.kvsnap "$ROOT/share/sample.kvcap"
	head -n 1 "$ROOT/share/queries.jsonl" > q.jsonl
	for api in conductor mooncake; do
		kvquery -s s.kvsnap --api $api q.jsonl > absent
		assert_equal "$(jq -c '[.default | keys[]]' absent)" '["node0","node1"]'
		for f in lora_name cache_salt instance_id; do
			run --separate-stderr kvquery -s s.kvsnap --api $api <(jq -c --arg f "$f" '.[$f] = ""' q.jsonl)
			assert_success
			assert_equal "$output" "$(cat absent)"
		done
	done
	for f in model tenant_id; do
		run --separate-stderr kvquery -s s.kvsnap <(jq -c --arg f "$f" '.[$f] = ""' q.jsonl)
		assert_equal "$status" 65
		assert_output 'null'
		assert_regex "$stderr" ': line 1: no such model and tenant in the snapshot'
	done
}

@test "rule: a pool event with an empty backend_id names no target and no pool holder (kvmatch(1) \"Pool events\")" {
	cat > r.jsonl <<-EOF
	{"endpoint": "$E0", "type": "vLLM", "modelname": "m", "instance_id": "a", "block_size": 4, "dp_rank": 0}
	{"endpoint": "tcp://kvs:5557", "type": "Memcache", "modelname": "m", "instance_id": "kvs", "block_size": 4, "dp_rank": 0}
	EOF
	{ store $E0 1 xpu '"0xa"' 1,2,3,4; pool 2 '"0xa"' ''; } > ev.jsonl
	run --separate-stderr kvmatch -r r.jsonl --log applied,dropped -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "applied - m a/0
dropped unknown_backend m "
	assert_equal "$(kvmatch --dump s.kvsnap | jq -c 'select(.kind == "worker") | .instance_id // .pool')" '"a"'
}

# ---- d. partial blocks in each answer dialect ------------------------------

@test "rule: a trailing partial block counts in kv-conductor's answer, not in RFC #1403's or Dynamo's (kvquery(1) \"Queries\")" {
	# six tokens in blocks of 4: a store's partial block is a block of its own
	store $E0 1 xpu '"0xa","0xb"' 1,2,3,4,5,6 > ev.jsonl
	run --separate-stderr kvmatch -q --log applied -o s.kvsnap ev.jsonl
	assert_equal "$(wc -l <<<"$output")" 2
	q='{"token_ids":[1,2,3,4,5,6],"block_size":4}'
	assert_equal "$(kvquery -s s.kvsnap <<<"$q")" '{"default":{"10.0.0.5:5557":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":8,"npu_blocks":2}},"longest_matched":8}}}'
	assert_equal "$(kvquery -s s.kvsnap --api mooncake <<<"$q")" '{"default":{"10.0.0.5:5557":{"CPU":4,"DISK":4,"DP":{"0":4},"GPU":4,"longest_matched":4}}}'
	assert_equal "$(kvquery -s s.kvsnap --hash dynamo --api mooncake <<<"$q")" '{"default":{"10.0.0.5:5557":{"CPU":4,"DISK":4,"DP":{"0":4},"GPU":4,"longest_matched":4}}}'
	assert_equal "$(kvquery -s s.kvsnap --hash dynamo <<<"$q" | jq -c '.default[].longest_matched')" 4
	# a multiple of the block size: every block counts, in every dialect
	q8='{"token_ids":[1,2,3,4],"block_size":4}'
	assert_equal "$(kvquery -s s.kvsnap <<<"$q8" | jq -c '.default[].longest_matched')" 4
	assert_equal "$(kvquery -s s.kvsnap --api mooncake <<<"$q8" | jq -c '.default[].longest_matched')" 4
	assert_equal "$(kvquery -s s.kvsnap --hash dynamo <<<"$q8" | jq -c '.default[].longest_matched')" 4
}

@test "rule: --hash rfc1403 hashes complete blocks only, the last one too when the tokens fill it (kvquery(1) \"Queries\")" {
	/usr/bin/python3 -c '
import json, struct, xxhash
def rfc(tokens, bs, seed):
    out = []
    for i in range(0, len(tokens) - len(tokens) % bs, bs):
        local = xxhash.xxh3_64_intdigest(struct.pack("<%dI" % bs, *tokens[i:i + bs]), seed)
        out.append(local if not out else xxhash.xxh3_64_intdigest(struct.pack("<QQ", out[-1], local), seed))
    return out
tokens = list(range(1, 9))
print(json.dumps({"src": "tcp://10.0.0.5:5557", "recv_ns": 1000000000, "seq": 1, "format": "vllm", "dp_rank": 0,
                  "type": "stored", "medium": "xpu", "block_hashes": ["0x%016x" % h for h in rfc(tokens, 4, 1337)],
                  "parent": None, "token_ids": tokens, "block_size": 4}))' > rfc.jsonl
	kvmatch -q --log none -o s.kvsnap rfc.jsonl
	for n in 8 9 11; do
		run --separate-stderr kvquery -s s.kvsnap --hash rfc1403 --api mooncake <<<"[$(seq -s, 1 $n)]"
		assert_success
		assert_output '{"default":{"10.0.0.5:5557":{"CPU":8,"DISK":8,"DP":{"0":8},"GPU":8,"longest_matched":8}}}'
	done
	run --separate-stderr kvquery -s s.kvsnap --hash rfc1403 <<<"[$(seq -s, 1 7)]"
	assert_equal "$(jq -c '.default[].longest_matched' <<<"$output")" 4
}

@test "rule: RFC #1403's answer is cumulative through the tiers, kv-conductor's per tier (kvquery(1) \"RFC #1403 answers\")" {
	cat > r.jsonl <<-EOF
	{"endpoint": "$E0", "type": "vLLM", "modelname": "m", "instance_id": "a", "block_size": 4, "dp_rank": 0}
	{"endpoint": "tcp://kvs:5557", "type": "Memcache", "modelname": "m", "instance_id": "kvs", "block_size": 4, "dp_rank": 0}
	EOF
	# block 0 in xpu, block 1 in cpu (offload confirmed by the pool), block 2 in disk
	{ store $E0 1 xpu '"0xa"' 1,2,3,4; store $E0 2 xpu '"0xb","0xc"' 5,6,7,8,9,10,11,12 ',"parent":"0xa"'
	  printf '{"src":"%s","recv_ns":3000000000,"seq":3,"format":"vllm","dp_rank":0,"type":"removed","medium":"xpu","block_hashes":["0xb","0xc"]}\n' $E0
	  store $E0 4 cpu '"0xb"' '' ; pool 5 '"0xb"' 10.0.0.5
	  store $E0 6 disk '"0xc"' '' ; pool 7 '"0xc"' 10.0.0.5 | sed 's/"medium":"cpu"/"medium":"disk"/'; } | sed 's/"parent":null,\(.*\),"parent":"0xa"/"parent":"0xa",\1/' > ev.jsonl
	run --separate-stderr kvmatch -r r.jsonl --log dropped -o s.kvsnap ev.jsonl
	assert_success
	assert_output ''
	q='{"model":"m","token_ids":[1,2,3,4,5,6,7,8,9,10,11,12],"block_size":4}'
	assert_equal "$(kvquery -s s.kvsnap <<<"$q")" '{"default":{"a":{"DP":{"0":{"cpu_blocks":1,"cpu_local_blocks":1,"cpu_remote_blocks":0,"disk_blocks":1,"matched_tokens":12,"npu_blocks":1}},"longest_matched":12}}}'
	assert_equal "$(kvquery -s s.kvsnap --api mooncake <<<"$q")" '{"default":{"a":{"CPU":8,"DISK":12,"DP":{"0":12},"GPU":4,"longest_matched":12}}}'
}

# ---- e. enumerated names matched whole -------------------------------------

@test "rule: event types and formats of event lines are matched whole (kvdecode(1) \"JSON FIELDS\")" {
	store $E0 1 xpu '"0xa"' 1,2,3,4 > good.jsonl
	run --separate-stderr kvmatch -q --log none good.jsonl
	assert_success
	for bad in 's/"stored"/"storedx"/' 's/"stored"/"store"/' 's/"vllm"/"vllmx"/' 's/"vllm"/"vll"/'; do
		sed "$bad" good.jsonl > bad.jsonl
		run --separate-stderr kvmatch --log none bad.jsonl
		assert_equal "$status" 65
		assert_equal "$(grep -c '^kvmatch: bad.jsonl: line 1: \(type\|format\): expected ' <<<"$stderr")" 1
	done
}

@test "rule: kvquery's --api and --hash take their names whole (kvquery(1) \"OPTIONS\")" {
	store $E0 1 xpu '"0xa"' 1,2,3,4 > ev.jsonl
	kvmatch -q --log none -o s.kvsnap ev.jsonl
	for opt in '--api moon' '--api mooncakex' '--api Mooncake' '--hash dyn' '--hash dynamox' '--hash rfc' '--hash conductor:1'; do
		run --separate-stderr kvquery -s s.kvsnap $opt /dev/null
		assert_equal "$status" 64
		assert_equal "$(grep -c "^kvquery: ${opt%% *}: '${opt#* }' is not" <<<"$stderr")" 1
	done
}

@test "rule: a medium is one of its names whole, in any case; anything else is unknown (kvdecode(1) \"Media\")" {
	for m in GPU npu Cpu_Pinned host nvme EXTERNAL gpux cpu_ hbm0 dis ''; do
		store $E0 1 "$m" '"0xa"' 1,2,3,4
	done | awk '{ sub(/"seq":1,/, "\"seq\":" NR ","); sub(/"recv_ns":1000000000/, "\"recv_ns\":" NR "000000000"); print }' > ev.jsonl
	# kvmatch(1) "Engine events": a store in an unknown medium is a store in xpu
	run --separate-stderr kvmatch --log applied,offload_cached,dropped ev.jsonl
	assert_success
	assert_equal "$(jq -r '[.state, .medium // "-"] | join(" ")' <<<"$output" | tr '\n' ' ')" \
		"applied xpu applied xpu offload_cached cpu offload_cached cpu offload_cached disk offload_cached disk applied xpu applied xpu applied xpu applied xpu applied xpu "
}

# ---- f. kvgen's event boundaries -------------------------------------------

@test "rule: in kvgen, a hit inside a request ends a BlockStored run; the next run's parent is the hit (kvgen(1) \"A request\")" {
	# one rank of 2 blocks of 512 tokens (one hash_id each): request 1 stores
	# 1,2,3 and evicts its oldest (1); request 2 (1,2,4) misses 1, hits 2, misses 4: two runs
	printf '%s\n' '{"timestamp": 0, "input_length": 1536, "hash_ids": [1, 2, 3]}' \
		'{"timestamp": 1, "input_length": 1536, "hash_ids": [1, 2, 4]}' > t.jsonl
	run --separate-stderr kvgen -q --workers 1 --dp 1 --block-size 512 --capacity 2 -o cap.kvcap t.jsonl
	assert_success
	kvdecode cap.kvcap | jq -c 'select(.type == "stored") | [.block_hashes, .parent, (.token_ids | length)]' > stored
	assert_equal "$(wc -l < stored)" 3
	# the stores of request 2: block 1 from the root, block 4 from block 2's hash
	b2=$(sed -n 1p stored | jq -r '.[0][1]')
	assert_equal "$(sed -n 2p stored | jq -c '[(.[0] | length), .[1], .[2]]')" '[1,null,512]'
	assert_equal "$(sed -n 3p stored | jq -c '[(.[0] | length), .[1], .[2]]')" "[1,\"$b2\",512]"
	# and kvmatch rebuilds kvgen's own index from it
	kvgen -q --workers 1 --dp 1 --block-size 512 --capacity 2 --registrations r.jsonl --snapshot truth.kvsnap -o cap.kvcap t.jsonl
	run --separate-stderr kvmatch -r r.jsonl --log dropped -o idx.kvsnap cap.kvcap
	assert_success
	assert_output ''
	assert_equal "$(kvmatch --dump idx.kvsnap | grep '"kind":"block"')" "$(kvmatch --dump truth.kvsnap | grep '"kind":"block"')"
}

@test "rule: in kvgen, a run that starts after a request's first block hits has that block as its parent (kvgen(1) \"A request\")" {
	# request 2 hits block 1 (hash_id 1) and stores its block 2 (hash_id 3) from there
	printf '%s\n' '{"timestamp": 0, "input_length": 1024, "hash_ids": [1, 2]}' \
		'{"timestamp": 1, "input_length": 1024, "hash_ids": [1, 3]}' > t.jsonl
	run --separate-stderr kvgen -q --workers 1 --dp 1 --block-size 512 --capacity 8 -o cap.kvcap t.jsonl
	assert_success
	kvdecode cap.kvcap | jq -c 'select(.type == "stored") | [.block_hashes, .parent]' > stored
	assert_equal "$(wc -l < stored)" 2
	b1=$(sed -n 1p stored | jq -r '.[0][0]')
	assert_equal "$(sed -n 2p stored | jq -c '[(.[0] | length), .[1]]')" "[1,\"$b1\"]"
}

@test "rule: vLLM's event tags are matched whole; a pool event's type is a word its event_type contains (kvdecode(1) \"Publishers\")" {
	j2mp > in.kvcap <<<'[1.0, [["AllBlocks"], ["BlockStoredX", [1], null, [1,2], 2], ["blockremoved", [1]], ["BlockRemoved", [2]], ["AllBlocksCleared"]]]'
	run --separate-stderr kvdecode -v in.kvcap
	assert_success
	assert_equal "$(jq -c '[.type, .block_hashes]' <<<"$output" | tr '\n' ' ')" '["removed",["0x0000000000000002"]] ["cleared",[]] '
	assert_equal "$stderr" "kvdecode: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): 3 events of unknown types ignored"
	j2mp > in2.kvcap <<<'{"events": [{"event_type": "BlockRemove", "backend_id": "x", "seq_hashes": [1]}, {"event_type": "KEY_REMOVED", "backend_id": "x", "seq_hashes": [2]}, {"event_type": "Store", "backend_id": "x", "seq_hashes": [3]}, {"type": "blockstored", "backend_id": "x", "seq_hashes": [4]}]}'
	run --separate-stderr kvdecode -v in2.kvcap
	assert_success
	assert_equal "$(jq -c '[.type, .block_hashes]' <<<"$output" | tr '\n' ' ')" '["removed",["0x0000000000000002"]] ["stored",["0x0000000000000004"]] '
	assert_equal "$stderr" "kvdecode: in2.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): 2 events of unknown types ignored"
}
