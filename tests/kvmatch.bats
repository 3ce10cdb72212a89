#!/usr/bin/env bats
# kvmatch: two-phase matching, the index, snapshots.
load helper

# Event lines as kvdecode writes them.  T is in seconds of event time.
#   store SRC T DP MEDIUM HASHES PARENT TOKENS [BLOCK_SIZE] [EXTRA]
store() {
	printf '{"src":"%s","recv_ns":%s000000000,"seq":%s,"format":"vllm","dp_rank":%s,"type":"stored","medium":"%s","block_hashes":[%s],"parent":%s,"token_ids":[%s],"block_size":%s%s}\n' \
		"$1" "$2" "$2" "$3" "$4" "$5" "$6" "$7" "${8:-4}" "${9:-}"
}
#   removed SRC T DP MEDIUM HASHES ; cleared SRC T DP
removed() {
	printf '{"src":"%s","recv_ns":%s000000000,"seq":%s,"format":"vllm","dp_rank":%s,"type":"removed","medium":"%s","block_hashes":[%s]}\n' "$1" "$2" "$2" "$3" "$4" "$5"
}
cleared() {
	printf '{"src":"%s","recv_ns":%s000000000,"seq":%s,"format":"vllm","dp_rank":%s,"type":"cleared","medium":"xpu","block_hashes":[]}\n' "$1" "$2" "$2" "$3"
}
#   pool TYPE T MEDIUM HASHES BACKEND [FORMAT]
pool() {
	printf '{"src":"tcp://kvs:5557","recv_ns":%s000000000,"seq":%s,"format":"%s","dp_rank":null,"type":"%s","medium":"%s","block_hashes":[%s],"backend_id":"%s","model_name":"m"}\n' \
		"$2" "$2" "${6:-memcache}" "$1" "$3" "$4" "$5"
}

E0=tcp://10.0.0.5:5557
E1=tcp://10.0.0.5:5558
E2=tcp://10.0.0.6:5557

setup() {
	T=$BATS_TEST_TMPDIR
	cd "$T" || return 1
	cat > regs.jsonl <<-EOF
	{"instance_id": "a", "type": "vLLM", "dp_rank": 0, "block_size": 4, "modelname": "m", "medium_endpoints": {"npu": "$E0"}}
	{"instance_id": "a", "type": "vLLM", "dp_rank": 1, "block_size": 4, "modelname": "m", "medium_endpoints": {"npu": "$E1"}}
	{"instance_id": "b", "type": "vLLM", "dp_rank": 0, "block_size": 4, "modelname": "m", "medium_endpoints": {"npu": "$E2"}}
	{"instance_id": "kvs", "type": "Memcache", "dp_rank": 0, "block_size": 4, "endpoint": "tcp://kvs:5557", "store_backend": "Memcache", "modelname": "m"}
	EOF
}

# The index of a snapshot, one line per (block, holder): "chain-local instance/dp media".
holdings() {
	kvmatch --dump "$1" | jq -r 'select(.kind == "block") | .local as $l | .holders[] | "\($l) \(if .pool then "pool:\(.pool)" else "\(.instance_id)/\(.dp_rank)" end) \(.media | join("+"))"'
}
# The local hash of tokens, as kvmatch computes it, to name blocks in expectations.
states() { jq -r '[.state, (.reason // "-"), (.hash // "-"), (.medium // "-"), ([.workers[] | if .pool then "pool:\(.pool)" else "\(.instance_id)/\(.dp_rank)" end] | join(","))] | join(" ")'; }

@test "an xpu store is applied to its worker, chained block after block" {
	store $E0 1 0 xpu '"0xa","0xb"' null 1,2,3,4,5,6,7,8 > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log applied -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "applied - 0x000000000000000a xpu a/0
applied - 0x000000000000000b xpu a/0"
	run kvmatch --dump s.kvsnap
	assert_equal "$(jq -r 'select(.kind == "block") | [.chain, .parent, .local] | join(" ")' <<<"$output" | sort)" "$(printf '%s\n' \
		'0x2dc7ea16c30034aa 0x0000000000000539 0xcb38e4d7fb2dca5c' '0xfee6c4eeca05566f 0x2dc7ea16c30034aa 0xe8d3ec39b907b74c' | sort)"
}

@test "local hash and chain are XXH3-64 seed 1337 over u32 tokens (kv-conductor's rule)" {
	store $E0 1 0 xpu '"0x1","0x2"' null "$(seq -s, 0 31)" 16 > ev.jsonl
	kvmatch -q --log none -o s.kvsnap ev.jsonl
	run kvmatch --dump s.kvsnap
	# values computed independently with python3-xxhash
	assert_line --partial '"chain":"0x4220ff8ad7a1a5a2","parent":"0x0000000000000539","local":"0xd47a8f41c833328a"'
	assert_line --partial '"chain":"0x57e58ada70ce72c9","parent":"0x4220ff8ad7a1a5a2","local":"0xd43939178abd00db"'
}

@test "pool stored after the engine offload: confirmed, to every DP rank on the node" {
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4; store $E0 2 0 cpu '"0xa"' null '' 0; pool stored 3 cpu '"0xa"' 10.0.0.5; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log all -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(states <<<"$output" | grep -v -e ^received -e ^parsed)" "applied - 0x000000000000000a xpu a/0
offload_cached - 0x000000000000000a cpu 
confirmed - 0x000000000000000a cpu a/0,a/1"
	run holdings s.kvsnap
	assert_output "0xcb38e4d7fb2dca5c a/0 xpu+cpu
0xcb38e4d7fb2dca5c a/1 cpu"
}

@test "pool stored before the engine offload: queued, then matched; the same index" {
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4; pool stored 3 cpu '"0xb"' 10.0.0.5; store $E0 4 0 cpu '"0xb"' '"0xa"' 5,6,7,8; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log queued,matched,confirmed -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "queued - 0x000000000000000b cpu a/0,a/1
matched - 0x000000000000000b cpu a/0,a/1"
	run holdings s.kvsnap
	assert_output "0xcb38e4d7fb2dca5c a/0 xpu
0xe8d3ec39b907b74c a/0 cpu
0xe8d3ec39b907b74c a/1 cpu"
	# the other order ends in the same index, byte for byte
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4; store $E0 3 0 cpu '"0xb"' '"0xa"' 5,6,7,8; pool stored 4 cpu '"0xb"' 10.0.0.5; } > other.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log queued,matched,confirmed -o other.kvsnap other.jsonl
	assert_equal "$(states <<<"$output")" "confirmed - 0x000000000000000b cpu a/0,a/1"
	assert_equal "$(kvmatch --dump other.kvsnap | grep -v -e meta -e source)" "$(kvmatch --dump s.kvsnap | grep -v -e meta -e source)"
}

@test "a pending entry expires after --pending-ttl, with a count" {
	{ pool stored 1 disk '"0xc"' 10.0.0.5; pool stored 30 disk '"0xd"' 10.0.0.6; store $E2 62 0 xpu '"0xe"' null 1,2,3,4; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log queued,pending_expired ev.jsonl
	assert_success
	assert_equal "$(jq -c '[.state, .hash, .count, .recv_ns]' <<<"$output")" '["queued","0x000000000000000c",null,1000000000]
["queued","0x000000000000000d",null,30000000000]
["pending_expired","0x000000000000000c",2,62000000000]'
	run --separate-stderr kvmatch -r regs.jsonl --pending-ttl 20 --log pending_expired ev.jsonl
	assert_equal "$(jq -c '[.hash, .count, .recv_ns]' <<<"$output")" '["0x000000000000000c",2,30000000000]
["0x000000000000000d",1,62000000000]'
}

@test "a recv_ns near or at 2^64-1 does not wrap the TTL arithmetic" {
	# t + ttl wrapped: an entry stamped there expired at once
	max=18446744073709551615
	{ store $E0 18446744070 0 xpu '"0xa"' null 1,2,3,4
	  pool stored 18446744071 cpu '"0xb"' 10.0.0.5
	  removed $E2 18446744072 0 xpu '"0x9"' | sed "s/\"recv_ns\":[0-9]*/\"recv_ns\":$max/"
	  store $E0 18446744073 0 cpu '"0xb"' '"0xa"' 5,6,7,8 | sed "s/\"recv_ns\":[0-9]*/\"recv_ns\":$max/"; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log queued,matched,pending_expired -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "queued - 0x000000000000000b cpu a/0,a/1
matched - 0x000000000000000b cpu a/0,a/1"
	assert_equal "$(kvmatch --dump s.kvsnap | grep -o '"now_ns":[0-9]*')" "\"now_ns\":$max"
}

@test "a recv_ns far beyond the event time is suspect: counted, diagnosed, and it does not move event time" {
	# one record 10^9 s ahead (a flipped bit): taken at the event time reached
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4
	  pool stored 3 cpu '"0xb"' 10.0.0.5
	  pool removed 1000000003 cpu '"0xf"' 10.0.0.5 | sed 's/"seq":[0-9]*/"seq":4/'
	  store $E0 4 0 cpu '"0xb"' '"0xa"' 5,6,7,8; } > ev.jsonl
	run --separate-stderr kvmatch -q -r regs.jsonl --log queued,matched,pending_expired --diagnose=json -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "queued - 0x000000000000000b cpu a/0,a/1
matched - 0x000000000000000b cpu a/0,a/1"
	assert_equal "$(jq -c '.findings[] | select(.finding == "time_jump") | [.finding, .source, .evidence]' <<<"$stderr")" '["time_jump","tcp://kvs:5557",{"records":1}]'
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "meta") | .now_ns')" 4000000000
	run --separate-stderr kvmatch -r regs.jsonl --log none ev.jsonl
	assert_equal "${stderr_lines[0]}" "kvmatch: 4 records, 4 events; 1 queued, 0 offload_cached, 1 matched, 0 confirmed, 1 applied, 0 dropped, 0 pending_expired; 1 records stamped far ahead, taken at the event time reached"
	# the next record from that far (all sources moved on) confirms the jump
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4
	  pool stored 3 cpu '"0xb"' 10.0.0.5
	  pool removed 1000000003 cpu '"0xf"' 10.0.0.5 | sed 's/"seq":[0-9]*/"seq":4/'
	  store $E0 1000000004 0 cpu '"0xb"' '"0xa"' 5,6,7,8 | sed 's/"seq":[0-9]*/"seq":2/'; } > moved.jsonl
	run --separate-stderr kvmatch -q -r regs.jsonl --log queued,matched,pending_expired -o s.kvsnap moved.jsonl
	assert_equal "$(states <<<"$output")" "queued - 0x000000000000000b cpu a/0,a/1
pending_expired - 0x000000000000000b cpu a/0,a/1"
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "meta") | .now_ns')" 1000000004000000000
}

@test "--max-pending expires the oldest entries first" {
	{ pool stored 1 cpu '"0x1"' 10.0.0.6; pool stored 2 cpu '"0x2"' 10.0.0.6; pool stored 3 cpu '"0x3"' 10.0.0.6; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --max-pending 2 --log pending_expired -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(jq -c '[.hash, .count]' <<<"$output")" '["0x0000000000000001",1]'
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "pending") | .hash' | tr '\n' ' ')" "0x0000000000000002 0x0000000000000003 "
}

@test "--max-pending bounds the pending pool over all partitions: the oldest of all tenants expire first" {
	# one hash waiting in each of three tenants' partitions
	for t in 1 2 3; do pool stored $t cpu "\"0x$t\"" 10.0.0.6 | sed "s/}\$/,\"tenant_id\":\"t$t\"}/"; done > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --max-pending 2 --log pending_expired -o s.kvsnap ev.jsonl
	assert_success
	assert_output '{"recv_ns":3000000000,"state":"pending_expired","reason":"max_pending","hash":"0x0000000000000001","medium":"cpu","workers":[{"instance_id":"b","dp_rank":0}],"model":"m","tenant":"t1","count":1}'
	assert_equal "${stderr_lines[0]}" "kvmatch: 3 records, 3 events; 3 queued, 0 offload_cached, 0 matched, 0 confirmed, 0 applied, 0 dropped, 1 pending_expired (1 entries by --max-pending)"
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "partition") | .tenant' | tr '\n' ' ')" "default t1 t2 t3 "
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "pending") | "\(.partition) \(.hash)"')" "2 0x0000000000000002
3 0x0000000000000003"
	# resumed between the tenants' stores, the bound and the order hold
	head -2 ev.jsonl > A.jsonl
	tail -1 ev.jsonl > B.jsonl
	kvmatch -q -r regs.jsonl --max-pending 2 --log none -o a.kvsnap A.jsonl
	kvmatch -q -r regs.jsonl --max-pending 2 --log none -i a.kvsnap -o b.kvsnap B.jsonl
	cmp s.kvsnap b.kvsnap
}

@test "--expect-blocks: the same state lines, statistics and snapshot as tables that grow, resumed or not" {
	synthcap -n 3000 -e 4 -b 2 -s 8 > all.kvcap
	kvmatch -r regs.jsonl --log all -o grown.kvsnap all.kvcap > grown.log 2> grown.err
	for n in 0 1 100 1000000; do
		kvmatch -r regs.jsonl --log all --expect-blocks $n -o ahead.kvsnap all.kvcap > ahead.log 2> ahead.err
		cmp grown.log ahead.log
		cmp grown.kvsnap ahead.kvsnap
		# the statistics less the memory line (peak RSS moves from run to run)
		diff <(grep -v 'memory:' grown.err) <(grep -v 'memory:' ahead.err)
		kvmatch -q -r regs.jsonl --log none --expect-blocks $n -i grown.kvsnap -o resumed.kvsnap /dev/null
		cmp grown.kvsnap resumed.kvsnap
	done
}

@test "--expect-blocks takes a count from 0 to 4294967295" {
	for bad in -1 x 1.5 '' 4294967296; do
		run --separate-stderr kvmatch --expect-blocks "$bad" /dev/null
		assert_equal "$status" 64
		assert_equal "${stderr_lines[0]}" "kvmatch: --expect-blocks: '$bad' is not a count from 0 to 4294967295"
	done
	run --separate-stderr kvmatch -q --expect-blocks 4294967295 /dev/null
	assert_success
}

@test "IpOnly: a backend_id that is no engine's host is held by the pool itself; no backend_id is dropped unknown_backend" {
	{ pool stored 1 cpu '"0xa"' 10.9.9.9; pool stored 2 cpu '"0xb"' 10.9.9.9 | jq -c 'del(.backend_id)'; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log queued,dropped -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "queued - 0x000000000000000a cpu pool:10.9.9.9
dropped unknown_backend 0x000000000000000b cpu "
	assert_equal "$(kvmatch --dump s.kvsnap | jq -c 'select(.kind == "pending") | del(.t)')" '{"kind":"pending","partition":0,"hash":"0x000000000000000a","pool":"10.9.9.9","medium":"cpu"}'
}

@test "a store whose parent is unknown is dropped parent_not_found" {
	store $E0 1 0 xpu '"0xb"' '"0xa"' 5,6,7,8 > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "dropped parent_not_found 0x000000000000000b xpu a/0"
	assert_equal "$(holdings s.kvsnap)" ""
}

@test "non-full-attention groups are dropped, full and unknown kinds kept" {
	{ store $E0 1 0 xpu '"0x1"' null 1,2,3,4 4 ',"kv_cache_spec_kind":"sliding_window"'
	  store $E0 2 0 xpu '"0x2"' null 1,2,3,5 4 ',"kv_cache_spec_kind":"Mamba"'
	  store $E0 3 0 xpu '"0x3"' null 1,2,3,6 4 ',"kv_cache_spec_kind":"ChunkedLocalAttention"'
	  store $E0 4 0 xpu '"0x4"' null 1,2,3,7 4 ',"kv_cache_spec_kind":"full_attention"'
	  store $E0 5 0 xpu '"0x5"' null 1,2,3,8 4 ',"kv_cache_spec_kind":"MLA_attention"'
	  store $E0 6 0 xpu '"0x6"' null 1,2,3,9 4 ',"kv_cache_spec_kind":"new_kind"'
	  store $E0 7 0 xpu '"0x7"' null 1,2,4,1 4 ',"kv_cache_spec_kind":"cross_attention"'
	  store $E0 8 0 xpu '"0x8"' null 1,2,4,2 4 ',"kv_cache_spec_kind":"EncoderOnlyAttention"'
	  store $E0 9 0 xpu '"0x9"' null 1,2,4,3 4 ',"kv_cache_spec_kind":"sink_full_attention"'
	  # in kvmatch(1) "Engine events"'s list: a sliding window, MLA or not
	  store $E0 10 0 xpu '"0x10"' null 1,2,4,4 4 ',"kv_cache_spec_kind":"sliding_window_mla"'
	  store $E0 11 0 cpu '"0x11"' null 1,2,4,5 4 ',"kv_cache_spec_kind":"SlidingWindowMLA"'; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log dropped,applied,offload_cached ev.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "dropped non_full_attention 0x0000000000000001 xpu a/0
dropped non_full_attention 0x0000000000000002 xpu a/0
dropped non_full_attention 0x0000000000000003 xpu a/0
applied - 0x0000000000000004 xpu a/0
applied - 0x0000000000000005 xpu a/0
applied - 0x0000000000000006 xpu a/0
dropped non_full_attention 0x0000000000000007 xpu a/0
dropped non_full_attention 0x0000000000000008 xpu a/0
applied - 0x0000000000000009 xpu a/0
dropped non_full_attention 0x0000000000000010 xpu a/0
dropped non_full_attention 0x0000000000000011 cpu a/0"
	assert_equal "${stderr_lines[1]}" "kvmatch: dropped: 7 non_full_attention"
}

@test "a block size other than the registration's is dropped; placeholders are not" {
	{ store $E0 1 0 xpu '"0x1"' null 1,2,3,4,5,6,7,8 8; store $E0 2 0 cpu '"0x1"' null '' 0; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log all ev.jsonl
	assert_equal "$(states <<<"$output" | grep -v -e ^received -e ^parsed)" "dropped block_size_mismatch 0x0000000000000001 xpu a/0
dropped unknown_hash 0x0000000000000001 cpu a/0"
}

@test "without registrations the first block size seen is the partition's" {
	{ store $E0 1 0 xpu '"0x1"' null 1,2,3,4 4; store $E2 2 0 xpu '"0x2"' null 1,2,3,4,5,6,7,8 8; } > ev.jsonl
	run --separate-stderr kvmatch ev.jsonl
	assert_equal "$(states <<<"$output")" "dropped block_size_mismatch 0x0000000000000002 xpu 10.0.0.6:5557/0"
}

@test "a store with block_size 0, or more hashes than token blocks, is a counted drop with a reason" {
	{ store $E0 1 0 xpu '"0xa","0xb","0xc"' null 1,2,3,4,5,6,7,8
	  store $E0 2 0 xpu '"0xd"' null 1,2,3,4 0
	  store $E0 3 0 xpu '"0xe","0xf"' null 1,2,3,4,5 4
	  store $E2 4 0 xpu '"0x1","0x2"' null 1,2,3 0; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log applied,dropped ev.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "applied - 0x000000000000000a xpu a/0
applied - 0x000000000000000b xpu a/0
dropped hashes_beyond_tokens 0x000000000000000c xpu a/0
dropped bad_block_size 0x000000000000000d xpu a/0
applied - 0x000000000000000e xpu a/0
applied - 0x000000000000000f xpu a/0
dropped bad_block_size 0x0000000000000001 xpu b/0
dropped bad_block_size 0x0000000000000002 xpu b/0"
	assert_equal "${stderr_lines[1]}" "kvmatch: dropped: 3 bad_block_size, 1 hashes_beyond_tokens"
	# without registrations, tokens that do not divide among the hashes give no size
	store $E0 1 0 xpu '"0x1","0x2"' null 1,2,3 | sed 's/,"block_size":4}/}/' > nosize.jsonl
	run --separate-stderr kvmatch --log dropped nosize.jsonl
	assert_equal "$(states <<<"$output")" "dropped bad_block_size 0x0000000000000001 xpu 10.0.0.5:5557/0
dropped bad_block_size 0x0000000000000002 xpu 10.0.0.5:5557/0"
}

@test "events without hashes are dropped no_hashes" {
	{ store $E0 1 0 xpu '' null 1,2,3,4; pool stored 2 cpu '' 10.0.0.5; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl ev.jsonl
	assert_equal "$(states <<<"$output")" "dropped no_hashes - xpu a/0
dropped no_hashes - cpu a/0,a/1"
}

@test "removals in every medium, by engine and pool" {
	{ store $E0 1 0 xpu '"0xa","0xb"' null 1,2,3,4,5,6,7,8
	  pool stored 2 cpu '"0xa","0xb"' 10.0.0.5
	  pool stored 3 disk '"0xa"' 10.0.0.5
	  removed $E0 4 0 xpu '"0xa"'
	  pool removed 5 cpu '"0xb"' 10.0.0.5
	  pool removed 6 disk '"0xa"' 10.0.0.5; } > ev.jsonl
	kvmatch -q -r regs.jsonl --log none -o s.kvsnap ev.jsonl
	run holdings s.kvsnap
	assert_output "0xcb38e4d7fb2dca5c a/0 cpu
0xcb38e4d7fb2dca5c a/1 cpu
0xe8d3ec39b907b74c a/0 xpu"
}

@test "cleared: an engine drops its xpu holdings, a pool its holdings in a medium" {
	{ store $E0 1 0 xpu '"0xa","0xb"' null 1,2,3,4,5,6,7,8
	  store $E2 1 0 xpu '"0xc"' null 1,2,3,4
	  pool stored 2 cpu '"0xa"' 10.0.0.5
	  pool stored 2 disk '"0xa"' 10.0.0.5
	  cleared $E0 3 0; } > ev.jsonl
	kvmatch -q -r regs.jsonl --log none -o s.kvsnap ev.jsonl
	run holdings s.kvsnap
	assert_output "0xcb38e4d7fb2dca5c a/0 cpu+disk
0xcb38e4d7fb2dca5c a/1 cpu+disk
0xcb38e4d7fb2dca5c b/0 xpu"
	pool cleared 4 cpu '' 10.0.0.5 >> ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log applied -o s.kvsnap ev.jsonl
	assert_equal "$(tail -1 <<<"$output" | jq -c '[.state, .medium, .count]')" '["applied","cpu",2]'
	run holdings s.kvsnap
	assert_output "0xcb38e4d7fb2dca5c a/0 disk
0xcb38e4d7fb2dca5c a/1 disk
0xcb38e4d7fb2dca5c b/0 xpu"
}

# A clear names no partition: the worker's holdings in every model and
# tenant go (the line named the first partition's model, whoever's it was).
@test "cleared: an engine's clear line names its worker and no model or tenant, since it clears every partition" {
	sed -i 's/"instance_id": "b", \(.*\)"modelname": "m"/"instance_id": "b", \1"modelname": "l"/' regs.jsonl
	{ store $E2 1 0 xpu '"0xc"' null 1,2,3,4
	  store $E0 2 0 xpu '"0xa","0xb"' null 1,2,3,4,5,6,7,8
	  cleared $E0 3 0; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log applied ev.jsonl
	assert_success
	assert_equal "$(jq -c '[.model, .tenant]' <<<"${lines[0]}")" '["l","default"]'
	assert_equal "$(tail -1 <<<"$output" | jq -c '[.state, .count, .model, .tenant, [.workers[] | "\(.instance_id)/\(.dp_rank)"]]')" \
		'["applied",2,null,null,["a/0"]]'
}

@test "engine removals in cpu and disk: its worker stops holding there; an unconfirmed offload is forgotten" {
	{ store $E0 1 0 xpu '"0xa","0xb"' null 1,2,3,4,5,6,7,8
	  store $E0 2 0 cpu '"0xa"' null '' 0
	  pool stored 3 cpu '"0xa"' 10.0.0.5
	  pool stored 3 disk '"0xb"' 10.0.0.5
	  removed $E0 4 0 cpu '"0xa"'
	  removed $E0 5 0 disk '"0xb"'
	  store $E0 6 0 cpu '"0xc"' '"0xb"' 9,9,9,9
	  removed $E0 7 0 cpu '"0xc"'
	  pool stored 8 cpu '"0xc"' 10.0.0.5; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log offload_cached,queued,confirmed,applied -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(states <<<"$output" | grep -v 'xpu a/0$')" "offload_cached - 0x000000000000000a cpu 
confirmed - 0x000000000000000a cpu a/0,a/1
confirmed - 0x000000000000000b disk a/0,a/1
applied - 0x000000000000000a cpu a/0
applied - 0x000000000000000b disk a/0
offload_cached - 0x000000000000000c cpu 
queued - 0x000000000000000c cpu a/0,a/1"
	run holdings s.kvsnap
	assert_output "0xcb38e4d7fb2dca5c a/0 xpu
0xcb38e4d7fb2dca5c a/1 cpu
0xe8d3ec39b907b74c a/0 xpu
0xe8d3ec39b907b74c a/1 disk"
	assert_equal "$(kvmatch --dump s.kvsnap | jq -c 'select(.kind == "offload" or .kind == "pending") | [.kind, .hash, .medium]')" '["pending","0x000000000000000c","cpu"]
["pending","0x000000000000000c","cpu"]'
}

@test "a pool removal drops the pending entries of its hash" {
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4
	  pool stored 2 cpu '"0xd"' 10.0.0.5
	  pool stored 2 cpu '"0xe"' 10.0.0.5
	  pool removed 3 cpu '"0xd"' 10.0.0.5
	  store $E0 4 0 cpu '"0xd","0xe"' '"0xa"' 5,6,7,8,9,9,9,9; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log queued,matched,offload_cached,applied -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "applied - 0x000000000000000a xpu a/0
queued - 0x000000000000000d cpu a/0,a/1
queued - 0x000000000000000e cpu a/0,a/1
applied - 0x000000000000000d cpu a/0,a/1
offload_cached - 0x000000000000000d cpu 
matched - 0x000000000000000e cpu a/0,a/1"
	assert_equal "$(kvmatch --dump s.kvsnap | jq -c 'select(.kind == "offload" or .kind == "pending") | [.kind, .hash]')" '["offload","0x000000000000000d"]'
}

@test "a pool clear in disk drops the targets' disk holdings and their disk pending entries" {
	{ store $E0 1 0 xpu '"0xa","0xb"' null 1,2,3,4,5,6,7,8
	  pool stored 2 cpu '"0xa"' 10.0.0.5
	  pool stored 2 disk '"0xa","0xb"' 10.0.0.5
	  pool stored 2 disk '"0xb"' 10.0.0.6
	  pool stored 3 cpu '"0xc"' 10.0.0.5
	  pool stored 3 disk '"0xd"' 10.0.0.5
	  pool stored 3 disk '"0xd"' 10.0.0.6
	  pool cleared 4 disk '' 10.0.0.5; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log applied -o s.kvsnap ev.jsonl
	assert_success
	# 4 holdings and 2 pending entries of a/0 and a/1 in disk
	assert_equal "$(tail -1 <<<"$output" | jq -c '[.state, .medium, .count, [.workers[] | "\(.instance_id)/\(.dp_rank)"]]')" '["applied","disk",6,["a/0","a/1"]]'
	run holdings s.kvsnap
	assert_output "0xcb38e4d7fb2dca5c a/0 xpu+cpu
0xcb38e4d7fb2dca5c a/1 cpu
0xe8d3ec39b907b74c a/0 xpu
0xe8d3ec39b907b74c b/0 disk"
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "pending") | "\(.hash) \(.instance_id)/\(.dp_rank) \(.medium)"')" "0x000000000000000c a/0 cpu
0x000000000000000c a/1 cpu
0x000000000000000d b/0 disk"
	# the entries a clear dropped wait no more: the engine's offload finds only b/0's
	store $E0 5 0 disk '"0xd"' '"0xb"' 9,9,9,9 >> ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log matched ev.jsonl
	assert_equal "$(states <<<"$output")" "matched - 0x000000000000000d disk b/0"
}

@test "a removed block's content is kept: a later disk store still confirms" {
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4; removed $E0 2 0 xpu '"0xa"'; pool stored 100 disk '"0xa"' 10.0.0.6; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl ev.jsonl
	assert_equal "$(states <<<"$output")" "confirmed - 0x000000000000000a disk b/0"
	run --separate-stderr kvmatch -r regs.jsonl --content-ttl 50 ev.jsonl
	assert_equal "$(states <<<"$output")" ""
}

@test "YuanRong and --match none target the pool subscriber's own worker" {
	cat > yr.jsonl <<-EOF
	{"instance_id": "a", "type": "vLLM", "dp_rank": 0, "block_size": 4, "modelname": "m", "medium_endpoints": {"npu": "$E0"}}
	{"instance_id": "a", "type": "YuanRong", "dp_rank": 0, "block_size": 4, "endpoint": "tcp://kvs:5557", "store_backend": "yuanrong", "modelname": "m"}
	EOF
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4; pool stored 2 cpu '"0xa"' 10.9.9.9 mooncake; } > ev.jsonl
	run --separate-stderr kvmatch -r yr.jsonl ev.jsonl
	assert_equal "$(states <<<"$output")" "confirmed - 0x000000000000000a cpu a/0"
	# the pool's own registered worker (kv-conductor requires its instance_id)
	run --separate-stderr kvmatch -r regs.jsonl --match none ev.jsonl
	assert_equal "$(states <<<"$output")" "confirmed - 0x000000000000000a cpu kvs/0"
}

@test "LoRA blocks live in the adapter's partition" {
	store $E0 1 0 xpu '"0xa"' null 1,2,3,4 4 ',"lora_name":"sql-adapter"' > ev.jsonl
	kvmatch -q -r regs.jsonl --log none -o s.kvsnap ev.jsonl
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "partition") | "\(.model) \(.tenant) \(.blocks)"')" "m default 0
sql-adapter default 1"
}

@test "workers are inferred from the source: port minus dp_rank" {
	{ store $E1 1 1 xpu '"0xa"' null 1,2,3,4; store tcp://10.0.0.7:6000 2 null xpu '"0xb"' null 1,2,3,5; } | sed 's/"dp_rank":null/"dp_rank":null/' > ev.jsonl
	kvmatch -q --log none -o s.kvsnap ev.jsonl
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "worker") | "\(.instance_id) \(.dp_rank) \(.host) \(.inferred)"')" "10.0.0.5:5557 1 10.0.0.5 true
10.0.0.7:6000 0 10.0.0.7 true"
}

@test "the state line has the documented shape" {
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4; store $E0 2 0 cpu '"0xa"' null '' 0; pool stored 3 cpu '"0xa"' 10.0.0.5; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl ev.jsonl
	assert_output '{"recv_ns":3000000000,"state":"confirmed","hash":"0x000000000000000a","medium":"cpu","workers":[{"instance_id":"a","dp_rank":0},{"instance_id":"a","dp_rank":1}],"src":"tcp://kvs:5557","seq":3,"model":"m","tenant":"default"}'
	assert_equal "${stderr_lines[0]}" "kvmatch: 3 records, 3 events; 0 queued, 1 offload_cached, 0 matched, 1 confirmed, 1 applied, 0 dropped, 0 pending_expired"
	assert_equal "${stderr_lines[1]}" "kvmatch: index: 1 partitions, 3 workers, 1 blocks, 2 holdings; 0 pending, 0 offload cached, 0 content cached; 0 removals of unknown blocks"
}

@test "fixtures: kvdecode | kvmatch and kvmatch on the capture give the same snapshot bytes" {
	# A pool capture alone names no known worker (all held by the pool itself): each
	# pool follows the engine whose blocks it holds.  memcache's batch stores
	# cpu and disk replicas, removes the cpu one and clears another node.
	cat "$FIX/vllm-0.9-array.kvcap" "$FIX/memcache.kvcap" > vllm-memcache.kvcap
	cat "$FIX/vllm-0.9-array.kvcap" "$FIX/mooncake.kvcap" > vllm-mooncake.kvcap
	# an engine that released its blocks (removed, cleared): content kept confirms
	cat "$FIX/vllm-array-dp1.kvcap" "$FIX/memcache.kvcap" > released-memcache.kvcap
	for f in "$FIX"/*.kvcap vllm-memcache.kvcap vllm-mooncake.kvcap released-memcache.kvcap; do
		kvdecode "$f" | kvmatch -q --log none -o a.kvsnap
		kvmatch -q --log none -o b.kvsnap "$f"
		cmp a.kvsnap b.kvsnap
	done
	kvdecode "$FIX/vllm-0.9-array.kvcap" | kvmatch -q --log none -o s.kvsnap
	assert_equal "$(holdings s.kvsnap)" "0xd47a8f41c833328a 10.0.0.5:5557/0 xpu
0xd43939178abd00db 10.0.0.5:5557/0 xpu"
	run --separate-stderr kvmatch --log confirmed,applied,dropped -o s.kvsnap vllm-memcache.kvcap
	assert_success
	assert_equal "$(states <<<"$output")" "applied - 0xb0147556276afc9c xpu 10.0.0.5:5557/0
applied - 0x192dd62904fcccac xpu 10.0.0.5:5557/0
confirmed - 0xb0147556276afc9c cpu 10.0.0.5:5557/0
confirmed - 0x192dd62904fcccac disk 10.0.0.5:5557/0
applied - 0xb0147556276afc9c cpu 10.0.0.5:5557/0
applied - - xpu pool:10.0.0.6"
	assert_equal "$(holdings s.kvsnap)" "0xd47a8f41c833328a 10.0.0.5:5557/0 xpu
0xd43939178abd00db 10.0.0.5:5557/0 xpu+disk"
	# Mooncake's hash >= 2^63 (int64 on the wire) meets the engine's
	run --separate-stderr kvmatch --log confirmed,applied,dropped -o s.kvsnap vllm-mooncake.kvcap
	assert_success
	assert_equal "$(states <<<"$output" | tail -2)" "confirmed - 0xb0147556276afc9c cpu 10.0.0.5:5557/0
applied - 0xb0147556276afc9c cpu 10.0.0.5:5557/0"
	assert_equal "${stderr_lines[0]}" "kvmatch: 2 records, 3 events; 0 queued, 0 offload_cached, 0 matched, 1 confirmed, 3 applied, 0 dropped, 0 pending_expired"
	run --separate-stderr kvmatch --log confirmed -o s.kvsnap released-memcache.kvcap
	assert_success
	assert_equal "$(states <<<"$output")" "confirmed - 0xb0147556276afc9c cpu 10.0.0.5:5557/1
confirmed - 0x192dd62904fcccac disk 10.0.0.5:5557/1"
	assert_equal "$(holdings s.kvsnap)" "0xd43939178abd00db 10.0.0.5:5557/1 disk"
	# the other node's clear: a pool holder for 10.0.0.6, holding nothing
	assert_equal "${stderr_lines[1]}" "kvmatch: index: 1 partitions, 2 workers, 1 blocks, 1 holdings; 0 pending, 0 offload cached, 2 content cached; 0 removals of unknown blocks"
}

@test "an undecodable record is a decode_error drop, and its seq no gap (capture and -e lines alike)" {
	printf '%s\n' '[1.0, [["BlockRemoved", [1]]]]' 'raw:c1' '[1.0, [["BlockRemoved", [2]]]]' | j2mp > in.kvcap
	run --separate-stderr kvmatch -o a.kvsnap in.kvcap
	assert_equal "$status" 65
	assert_equal "$output" '{"recv_ns":1764500000001000000,"state":"dropped","reason":"decode_error","hash":null,"workers":[],"src":"tcp://10.0.0.5:5557","seq":1}'
	assert_equal "$(kvmatch --dump a.kvsnap | grep '"kind":"source"')" '{"kind":"source","src":"tcp://10.0.0.5:5557","last_seq":2,"batches":2,"last_recv_ns":1764500000002000000,"gaps":0,"restarts":0}'
	run bash -c 'kvdecode -q -e in.kvcap | kvmatch -q --log none -o b.kvsnap'
	assert_equal "$status" 65
	cmp a.kvsnap b.kvsnap
}

@test "the same input twice gives identical snapshot bytes" {
	# a simulated cluster with a memcache pool and disk whose events come
	# before the engines': evictions, offloads, pending, released content
	kvgen -q --workers 2 --dp 2 --pool memcache --pool-lag -2 --capacity 300 --pool-capacity 400 \
		--disk-capacity 200 --limit 100 --registrations gen.jsonl -o gen.kvcap "$ROOT/share/traces/conversation-300.jsonl"
	kvmatch -q -r gen.jsonl --log none -o a.kvsnap gen.kvcap
	kvmatch -q -r gen.jsonl --log none -o b.kvsnap gen.kvcap
	cmp a.kvsnap b.kvsnap
	# cut while pool entries wait for their engine events: every table holds some
	kvdecode gen.kvcap | head -351 > cut.jsonl
	run --separate-stderr kvmatch -r gen.jsonl --log none -o c.kvsnap cut.jsonl
	assert_success
	kvmatch -q -r gen.jsonl --log none -o d.kvsnap cut.jsonl
	cmp c.kvsnap d.kvsnap
	assert_equal "$(kvmatch --dump c.kvsnap | jq -r .kind | sort -u | tr '\n' ' ')" "block content engine_hash meta offload partition pending source worker "
	# stores were removed, pool events queued, then matched or confirmed
	read -r queued matched confirmed <<<"$(sed -n 's/.*; \([0-9]*\) queued, [0-9]* offload_cached, \([0-9]*\) matched, \([0-9]*\) confirmed,.*/\1 \2 \3/p' <<<"${stderr_lines[0]}")"
	[ "$queued" -gt 1000 ] && [ "$matched" -gt 1000 ] && [ "$confirmed" -gt 1000 ]
	[ "$(kvmatch --dump c.kvsnap | jq -r 'select(.kind == "content") | .chain' | grep -c .)" -gt 1000 ]
}

@test "A, then B resumed from A's snapshot, equals A+B in one run" {
	{ store $E0 1 0 xpu '"0xa","0xb"' null 1,2,3,4,5,6,7,8
	  pool stored 2 cpu '"0xc"' 10.0.0.5
	  store $E2 3 0 cpu '"0xd"' null 9,9,9,9
	  removed $E0 4 0 xpu '"0xb"'; } > A.jsonl
	{ store $E0 10 0 cpu '"0xc"' '"0xa"' 5,5,5,5
	  pool stored 11 disk '"0xd"' 10.0.0.6
	  store $E1 12 1 xpu '"0xe"' '"0xa"' 6,6,6,6
	  pool stored 400 disk '"0xf"' 10.0.0.6; } > B.jsonl
	cat A.jsonl B.jsonl | kvmatch -q -r regs.jsonl --log none -o ab.kvsnap
	kvmatch -q -r regs.jsonl --log none -o a.kvsnap A.jsonl
	kvmatch -q -r regs.jsonl --log none -i a.kvsnap -o b.kvsnap B.jsonl
	cmp ab.kvsnap b.kvsnap
	# and the same with captures, across a sweep interval
	synthcap -n 3000 -e 4 -b 2 -s 8 > all.kvcap
	kvmatch -q --log none -o all.kvsnap all.kvcap
	kvdecode all.kvcap > all.jsonl
	# lines 6001 to 6004 are one batch (one line per event)
	batch=$(sed -n 6001p all.jsonl | grep -o '^{"src":"[^"]*","recv_ns":[0-9]*,"seq":[0-9]*,')
	assert_equal "$(grep -n -F "$batch" all.jsonl | cut -d: -f1 | tr '\n' ' ')" "6001 6002 6003 6004 "
	# the same batch replayed (kvsub fills a gap so): applied, as it is new
	sed "/^$(sed 's|[/.]|\\&|g' <<<"$batch")/s/\"replayed\":false/\"replayed\":true/" all.jsonl > replayed.jsonl
	assert_equal "$(grep -c '"replayed":true' replayed.jsonl)" 4
	kvmatch -q --log none -o replayed.kvsnap replayed.jsonl
	cmp all.kvsnap replayed.kvsnap
	# split between batches, inside the batch, inside the replayed batch
	for cut in all:6000 all:6002 replayed:6002; do
		head -${cut#*:} ${cut%:*}.jsonl > a.jsonl
		tail -n +$((${cut#*:} + 1)) ${cut%:*}.jsonl > b.jsonl
		kvmatch -q --log none -o part.kvsnap a.jsonl
		run --separate-stderr kvmatch --log dropped -i part.kvsnap -o resumed.kvsnap b.jsonl
		assert_success
		assert_equal "$output" ""
		cmp all.kvsnap resumed.kvsnap
	done
	assert_equal "$(kvmatch --dump resumed.kvsnap | jq -r 'select(.kind == "source") | "\(.batches) \(.restarts)"' | sort -u)" "375 0"
}

@test "resuming names IpOnly targets as one run does: inferred workers first seen out of name order" {
	# ids follow first appearance (6000, then 5000); a resumed run's follow the
	# snapshot's name order: targets, state lines and the pending pool must not care
	{ store tcp://10.0.0.1:6000 1 0 xpu '"0xa"' null 1,2,3,4
	  store tcp://10.0.0.1:5000 2 0 xpu '"0xb"' null 5,6,7,8; } > A.jsonl
	{ pool stored 3 cpu '"0xc"' 10.0.0.1
	  store tcp://10.0.0.1:5000 100 0 xpu '"0xd"' null 9,9,9,9; } > B.jsonl
	cat A.jsonl B.jsonl | kvmatch -q --log all -o ab.kvsnap > ab.log
	kvmatch -q --log all -o a.kvsnap A.jsonl > a.log
	kvmatch -q --log all -i a.kvsnap -o b.kvsnap B.jsonl > b.log
	cmp ab.kvsnap b.kvsnap
	assert_equal "$(cat a.log b.log)" "$(cat ab.log)"
	assert_equal "$(states < b.log | grep -e ^queued -e ^pending_expired)" "queued - 0x000000000000000c cpu 10.0.0.1:5000/0,10.0.0.1:6000/0
pending_expired - 0x000000000000000c cpu 10.0.0.1:5000/0,10.0.0.1:6000/0"
}

@test "-i without the registrations of the run that wrote the snapshot: events go to inferred workers" {
	store $E0 1 0 xpu '"0xa"' null 1,2,3,4 > A.jsonl
	{ removed $E0 2 0 xpu '"0xa"'; store $E0 3 0 xpu '"0xb"' '"0xa"' 5,6,7,8; } > B.jsonl
	kvmatch -q -r regs.jsonl --log none -o a.kvsnap A.jsonl
	# with them: the removal reaches a/0, the store finds its parent
	run --separate-stderr kvmatch -r regs.jsonl --log applied,dropped -i a.kvsnap -o b.kvsnap B.jsonl
	assert_equal "$(states <<<"$output")" "applied - 0x000000000000000a xpu a/0
applied - 0x000000000000000b xpu a/0"
	# without (kvmatch(1), Snapshots): an inferred worker in model default
	run --separate-stderr kvmatch --log applied,dropped -i a.kvsnap -o b.kvsnap B.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "dropped parent_not_found 0x000000000000000b xpu 10.0.0.5:5557/0"
	assert_equal "${stderr_lines[2]}" "kvmatch: index: 2 partitions, 4 workers, 1 blocks, 1 holdings; 0 pending, 0 offload cached, 0 content cached; 1 removals of unknown blocks"
	assert_equal "$(holdings b.kvsnap)" "0xcb38e4d7fb2dca5c a/0 xpu"
}

@test "a replayed batch that was already applied is dropped as a duplicate" {
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4; store $E0 2 0 xpu '"0xb"' '"0xa"' 5,6,7,8 | sed 's/"seq":2/"seq":2,"replayed":true/' | sed 's/"seq":2,/"seq":1,/'; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl ev.jsonl
	assert_equal "$(jq -c '[.state, .reason, .count]' <<<"$output")" '["dropped","duplicate",1]'
}

@test "-o writes atomically: no temporary file is left, the old snapshot survives a bad path" {
	store $E0 1 0 xpu '"0xa"' null 1,2,3,4 > ev.jsonl
	kvmatch -q --log none -o s.kvsnap ev.jsonl
	assert_equal "$(ls)" "ev.jsonl
regs.jsonl
s.kvsnap"
	run --separate-stderr kvmatch -q --log none -o nodir/s.kvsnap ev.jsonl
	assert_equal "$status" 74
	assert_equal "$stderr" "kvmatch: nodir/s.kvsnap: No such file or directory"
}

# A rename is durable once the directory holding the name is synced: the
# file is synced, renamed, then its directory opened and synced (strace),
# with a path in another directory and with a bare name (the directory ".").
# after_rename OUT: the three calls from the rename to OUT on, the
# temporary name's random part and descriptors made constant.
after_rename() {
	grep -A2 "^rename(\".*\", \"$1\")" tr | sed -E 's/\(AT_FDCWD, /(/; s/O_RDONLY\|O_CLOEXEC\|O_DIRECTORY/DIR/;
		s/tmp\.[A-Za-z0-9]{6}"/tmp.X"/; s/ +/ /g; s/DIR\) = [0-9]+$/DIR) = FD/; s/^fsync\([0-9]+\)/fsync(FD)/'
}

@test "-o syncs the snapshot, renames it into place, then syncs its directory" {
	store $E0 1 0 xpu '"0xa"' null 1,2,3,4 > ev.jsonl
	mkdir d
	local out
	for out in d/s.kvsnap s.kvsnap; do
		# (LeakSanitizer cannot work under ptrace: off for a SAN=1 build)
		ASAN_OPTIONS=detect_leaks=0 strace -qq -e trace=openat,fsync,rename -o tr \
			kvmatch -q --log none -o "$out" ev.jsonl
		run after_rename "$out"
		assert_output "rename(\"$out.tmp.X\", \"$out\") = 0
openat(\"$(dirname "$out")\", DIR) = FD
fsync(FD) = 0"
	done
}

@test "--snapshot-every writes snapshots as event time passes" {
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4; store $E0 12 0 xpu '"0xb"' '"0xa"' 5,6,7,8; } > ev.jsonl
	mkfifo fifo
	(cat ev.jsonl; sleep 1; store $E0 13 0 xpu '"0xc"' '"0xb"' 5,6,7,9) > fifo &
	kvmatch -q --log none --snapshot-every 10 -o s.kvsnap fifo & pid=$!
	sleep 0.5
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind=="meta") | .blocks')" 1
	wait_for $pid
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind=="meta") | .blocks')" 3
}

@test "--snapshot-every follows event time as kvmatch takes it: a suspect far-future record moves no boundary" {
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4
	  store $E0 1000000002 0 xpu '"0xb"' '"0xa"' 5,6,7,8 | sed 's/"seq":[0-9]*/"seq":2/'
	  store $E0 12 0 xpu '"0xc"' '"0xb"' 5,6,7,9 | sed 's/"seq":[0-9]*/"seq":3/'; } > ev.jsonl
	mkfifo fifo
	(cat ev.jsonl; sleep 1; store $E0 13 0 xpu '"0xd"' '"0xc"' 5,6,7,10 | sed 's/"seq":[0-9]*/"seq":4/') > fifo &
	kvmatch -q --log none --snapshot-every 10 -o s.kvsnap fifo & pid=$!
	sleep 0.5
	# written before the record at 12 s, the boundary of 10 s: 0xa and 0xb
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind=="meta") | [.blocks, .now_ns] | join(" ")')" "2 1000000000"
	wait_for $pid
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind=="meta") | .blocks')" 4
}

@test "--snapshot-every without -o is a usage error" {
	store $E0 1 0 xpu '"0xa"' null 1,2,3,4 > ev.jsonl
	run --separate-stderr kvmatch --snapshot-every 10 ev.jsonl
	assert_equal "$status" 64
	assert_equal "$output" ""
	assert_equal "$stderr" "kvmatch: --snapshot-every: no snapshot to write (-o FILE.kvsnap)
Try 'kvmatch --help'."
}

@test "SIGUSR1 writes the snapshot at once" {
	store $E0 1 0 xpu '"0xa"' null 1,2,3,4 > ev.jsonl
	mkfifo fifo
	(cat ev.jsonl; sleep 2) > fifo &
	kvmatch -q --log none -o s.kvsnap fifo & pid=$!
	signals_ready $pid
	[ ! -e s.kvsnap ]
	kill -USR1 $pid
	wait_nonempty s.kvsnap 5
	kill -TERM $pid
	wait_for $pid
	assert_equal "$status" 0
}

@test "-i, -r and --dump of a device or of \`yes\` are refused at their first bytes; SIGTERM while they wait for a pipe ends kvmatch, status 0, nothing written" {
	# they were read to their end before anything was checked (4 GB of
	# /dev/zero), and SIGTERM did not stop it; a stopped -r load went on
	# with some of the registrations and wrote a snapshot of them
	mknod zero c 1 5
	store $E0 1 0 xpu '"0xa"' null 1,2,3,4 > ev.jsonl
	kvmatch -q -r regs.jsonl --log none -o s.kvsnap ev.jsonl
	cp s.kvsnap keep.kvsnap
	run --separate-stderr timeout 10 kvmatch -q -i zero -o s.kvsnap ev.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvmatch: zero: not a kvsnap snapshot"
	run --separate-stderr timeout 10 kvmatch --dump <(yes)
	assert_equal "$status" 65
	assert_equal "$stderr" "kvmatch: /dev/fd/63: not a kvsnap snapshot"
	cmp s.kvsnap keep.kvsnap
	# a writer that stalls: the header and table of a snapshot, or one registration
	mkfifo slow
	for what in "-i slow" "-r slow"; do
		if [ "$what" = "-i slow" ]; then
			{ head -c 1000 keep.kvsnap; sleep 30; } > slow & writer=$!
		else
			{ head -1 regs.jsonl; sleep 30; } > slow & writer=$!
		fi
		kvmatch -q $what -o s.kvsnap ev.jsonl > out 2> err & pid=$!
		signals_ready $pid
		has_open $pid slow
		kill -TERM $pid
		wait_for $pid 5
		stop_bg $writer
		assert_equal "$status" 0
		assert_equal "$(cat err)" "kvmatch: slow: loading stopped by a signal"
		[ ! -s out ]
		cmp s.kvsnap keep.kvsnap
	done
}

@test "corrupt snapshots are refused with exit 65 and a message" {
	store $E0 1 0 xpu '"0xa","0xb"' null 1,2,3,4,5,6,7,8 > ev.jsonl
	kvmatch -q --log none -o s.kvsnap ev.jsonl
	size=$(stat -c %s s.kvsnap)
	head -c $((size - 1)) s.kvsnap > cut.kvsnap
	run --separate-stderr kvmatch --dump cut.kvsnap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvmatch: cut.kvsnap: truncated or padded: $((size - 1)) bytes, header says $size"
	cp s.kvsnap flip.kvsnap
	# a byte of the section table (19 entries of 32 bytes after the header),
	# then one of META, the first section after it
	printf '\xff' | dd of=flip.kvsnap bs=1 seek=200 conv=notrunc 2>/dev/null
	run --separate-stderr kvmatch --dump flip.kvsnap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvmatch: flip.kvsnap: header checksum mismatch (corrupt file)"
	cp s.kvsnap flip.kvsnap
	printf '\xff' | dd of=flip.kvsnap bs=1 seek=$((32 + 19 * 32 + 8)) conv=notrunc 2>/dev/null
	run --separate-stderr kvmatch --dump flip.kvsnap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvmatch: flip.kvsnap: section 1 checksum mismatch (corrupt file)"
	run --separate-stderr kvquery -s flip.kvsnap /dev/null
	assert_equal "$status" 65
	assert_equal "$stderr" "kvquery: flip.kvsnap: section 1 checksum mismatch (corrupt file)"
	run --separate-stderr kvmatch -i ev.jsonl ev.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvmatch: ev.jsonl: not a kvsnap snapshot"
	run --separate-stderr kvmatch -i missing.kvsnap ev.jsonl
	assert_equal "$status" 66
}

# set_meta FILE OFFSET VALUE: a u64 of a snapshot's META record set (now_ns at
# 0, next_sweep_ns at 8, the TTLs at 16, 24, 32), its checksums made again
# (python3-xxhash), as a file not written by kvtools could have it.
set_meta() {
	/usr/bin/python3 - "$@" <<-'EOF'
	import struct, sys, xxhash
	path, field, value = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
	d = bytearray(open(path, "rb").read())
	nsec = struct.unpack_from("<I", d, 8)[0]
	sec, rs, off, count = struct.unpack_from("<IIQQ", d, 32)
	assert sec == 1
	struct.pack_into("<Q", d, off + field, value)
	struct.pack_into("<Q", d, 32 + 24, xxhash.xxh3_64_intdigest(bytes(d[off:off + rs * count])))
	struct.pack_into("<Q", d, 24, xxhash.xxh3_64_intdigest(bytes(d[:24] + d[32:32 + 32 * nsec])))
	open(path, "wb").write(d)
	EOF
}

@test "-i and --dump refuse a snapshot whose times its state does not vouch for: now_ns or next_sweep_ns of 2^64-1, or far beyond" {
	# they were taken as they were: sweeps stopped for good, or all that was
	# pending expired at once, and the value went into every later snapshot
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4
	  pool stored 2 cpu '"0xc"' 10.0.0.5; } > A.jsonl
	store $E0 3 0 xpu '"0xb"' '"0xa"' 5,6,7,8 > B.jsonl
	kvmatch -q -r regs.jsonl --log none -o a.kvsnap A.jsonl
	assert_equal "$(kvmatch --dump a.kvsnap | jq -c 'select(.kind == "meta") | [.now_ns, .pending]')" "[2000000000,2]"
	max=18446744073709551615 now=2000000000 s=1000000000
	# the latest time held is the pending entry's and the memcache source's, 2 s: now_ns as it is
	for c in "8 $max next_sweep_ns $max is more than 30 s after the event time reached (now_ns $now)" \
		 "8 $((now + 30 * s + 1)) next_sweep_ns $((now + 30 * s + 1)) is more than 30 s after the event time reached (now_ns $now)" \
		 "0 $max now_ns $max is a suspect time: more than the longest TTL (600 s) after the latest time the snapshot holds ($now)" \
		 "0 $((now + 600 * s + 1)) now_ns $((now + 600 * s + 1)) is a suspect time: more than the longest TTL (600 s) after the latest time the snapshot holds ($now)" \
		 "24 $((1000000000 * s + 1)) offload_ttl_ns $((1000000000 * s + 1)) is beyond $((1000000000 * s)) (10^9 s, the longest TTL kvmatch takes)"; do
		read -r at value why <<<"$c"
		cp a.kvsnap bad.kvsnap
		set_meta bad.kvsnap "$at" "$value"
		run --separate-stderr kvmatch -q -r regs.jsonl -i bad.kvsnap -o out.kvsnap B.jsonl
		assert_equal "$status" 65
		assert_equal "$stderr" "kvmatch: bad.kvsnap: META: $why"
		[ ! -e out.kvsnap ]
		run --separate-stderr kvmatch --dump bad.kvsnap
		assert_equal "$status" 65
		assert_equal "$stderr" "kvmatch: bad.kvsnap: META: $why"
	done
	# at the bounds: a sweep one interval ahead, an event time the longest TTL past the latest held
	cp a.kvsnap ok.kvsnap
	set_meta ok.kvsnap 8 $((now + 30 * s))
	set_meta ok.kvsnap 0 $((now + 600 * s))
	run --separate-stderr kvmatch -q -r regs.jsonl --log none -i ok.kvsnap -o out.kvsnap B.jsonl
	assert_success
	assert_equal "$(kvmatch --dump out.kvsnap | jq -c 'select(.kind == "meta") | [.now_ns, .pending]')" "[$((now + 600 * s)),2]"
}

@test "a snapshot of more partitions than an index holds (4096) is refused at load" {
	# kvmatch never writes one; restoring it would find each partition among
	# all before it, quadratic in their number
	snapparts 4097 over.kvsnap
	run --separate-stderr kvmatch --log none -i over.kvsnap -o out.kvsnap /dev/null
	assert_equal "$status" 65
	assert_equal "$stderr" "kvmatch: over.kvsnap: more than 4096 partitions"
	[ ! -e out.kvsnap ]
	run --separate-stderr kvquery -s over.kvsnap /dev/null
	assert_equal "$status" 65
	assert_equal "$stderr" "kvquery: over.kvsnap: more than 4096 partitions"
	# the bound itself resumes, to the same bytes
	snapparts 4096 max.kvsnap
	run --separate-stderr kvmatch -q --log none -i max.kvsnap -o out.kvsnap /dev/null
	assert_success
	cmp max.kvsnap out.kvsnap
	assert_equal "$(kvmatch --dump out.kvsnap | jq -r 'select(.kind == "meta") | .partitions')" 4096
}

@test "bad event lines are reported with their line numbers, the rest applied" {
	{ echo 'not json'; store $E0 1 0 xpu '"0xa"' null 1,2,3,4; echo '{"type": "sideways"}'; echo '{"src": "x"}'; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log applied ev.jsonl
	assert_equal "$status" 65
	assert_equal "$(states <<<"$output")" "applied - 0x000000000000000a xpu a/0"
	assert_equal "${stderr_lines[0]}" "kvmatch: ev.jsonl: line 1: lexical error: invalid string in json text."
	assert_equal "${stderr_lines[1]}" "kvmatch: ev.jsonl: line 3: type: expected stored, removed or cleared"
	assert_equal "${stderr_lines[2]}" "kvmatch: ev.jsonl: line 4: no \"type\" key"
}

@test "event lines and query lines: a key given twice is an error, not its last value" {
	head='"src":"'$E0'","recv_ns":1,"format":"vllm","type":"removed","medium":"xpu"'
	printf '%s\n' "{$head,\"seq\":1,\"seq\":7,\"block_hashes\":[\"0xa\"]}" "{$head,\"seq\":2,\"block_hashes\":[\"0xa\"],\"block_hashes\":[\"0xb\"]}" \
		"{$head,\"seq\":3,\"block_hashes\":[\"0xa\"],\"x\":1,\"x\":2}" > ev.jsonl
	run --separate-stderr kvmatch --log received,dropped ev.jsonl
	assert_equal "$status" 65
	assert_equal "$(printf '%s\n' "${stderr_lines[@]:0:2}")" "kvmatch: ev.jsonl: line 1: seq: given twice
kvmatch: ev.jsonl: line 2: block_hashes: given twice"
	# a key kvmatch does not read may repeat: it changes nothing
	assert_equal "$(jq -r '"\(.state) \(.reason // "-") \(.seq)"' <<<"$output")" "dropped decode_error null
dropped decode_error null
received - 3"
	kvmatch -q -r regs.jsonl --log none -o s.kvsnap /dev/null
	printf '%s\n' '{"model": "m", "token_ids": [1,2,3,4], "token_ids": [5]}' '{"model": "m", "seq_hashes": [1], "block_hash": [2]}' \
		'{"model": "m", "model": "other", "token_ids": [1]}' '{"model": "m", "token_ids": [1], "note": 1, "note": 2}' > q.jsonl
	run --separate-stderr kvquery -s s.kvsnap --api mooncake q.jsonl
	assert_equal "$status" 65
	assert_equal "$output" "null
null
null
{\"default\":{}}"
	assert_equal "$stderr" "kvquery: q.jsonl: line 1: token_ids: given twice
kvquery: q.jsonl: line 2: block_hash: given twice
kvquery: q.jsonl: line 3: model: given twice"
}

@test "event lines: a hash beyond 2^64-1 is refused in hex as in decimal, never cut to its low 64 bits" {
	# kvdecode writes "0x" and 16 digits: "0x1e9b66bae2ed2488d" was taken as 0xe9b66bae2ed2488d
	head='"src":"'$E0'","format":"vllm","dp_rank":0,"medium":"xpu"'
	cat > ev.jsonl <<-EOF
	{$head,"recv_ns":1,"seq":1,"type":"stored","block_hashes":["0x1e9b66bae2ed2488d"],"parent":null,"token_ids":[1,2,3,4],"block_size":4}
	{$head,"recv_ns":2,"seq":2,"type":"stored","block_hashes":[35237465438406353549],"parent":null,"token_ids":[1,2,3,4],"block_size":4}
	{$head,"recv_ns":3,"seq":3,"type":"stored","block_hashes":["0xa"],"parent":"0x1e9b66bae2ed2488d","token_ids":[1,2,3,4],"block_size":4}
	{$head,"recv_ns":4,"seq":4,"type":"stored","block_hashes":["0xb"],"parent":35237465438406353549,"token_ids":[1,2,3,4],"block_size":4}
	{$head,"recv_ns":5,"seq":5,"type":"stored","block_hashes":["0x0000000000000000e9b66bae2ed2488d"],"parent":null,"token_ids":[1,2,3,4],"block_size":4}
	{$head,"recv_ns":6,"seq":6,"type":"removed","block_hashes":["0xffffffffffffffff"],"ts":1e999}
	{$head,"recv_ns":7,"seq":7,"type":"stored","block_hashes":["0xc"],"parent":null,"tokens_hashes":["0x1e9b66bae2ed2488d"],"block_size":4}
	EOF
	run --separate-stderr kvmatch --log applied,dropped ev.jsonl
	assert_equal "$status" 65
	assert_equal "$(jq -r '"\(.state) \(.reason // "-") \(.hash // "-")"' <<<"$output")" "dropped decode_error -
dropped decode_error -
dropped decode_error -
dropped decode_error -
applied - 0xe9b66bae2ed2488d
dropped decode_error -
dropped decode_error -"
	assert_equal "$(printf '%s\n' "${stderr_lines[@]:0:6}")" "kvmatch: ev.jsonl: line 1: block_hashes: hex string beyond 64 bits
kvmatch: ev.jsonl: line 2: block_hashes: a hash number must be an integer from 0 to 2^64-1
kvmatch: ev.jsonl: line 3: parent: hex string beyond 64 bits
kvmatch: ev.jsonl: line 4: parent: a hash number must be an integer from 0 to 2^64-1
kvmatch: ev.jsonl: line 6: ts: beyond the range of a number
kvmatch: ev.jsonl: line 7: tokens_hashes: hex string beyond 64 bits"
}

@test "event lines: a field of the wrong JSON type or a dp_rank beyond 2^32-1 is an error, never 0 or absent" {
	head='"src":"'$E0'","seq":1,"format":"vllm","type":"removed"'
	cat > ev.jsonl <<-EOF
	{$head,"recv_ns":"1764500000000000000","dp_rank":0,"medium":"xpu","block_hashes":["0xa"]}
	{$head,"recv_ns":1,"dp_rank":4294967296,"medium":"xpu","block_hashes":["0xa"]}
	{$head,"recv_ns":1,"dp_rank":"0","medium":"xpu","block_hashes":["0xa"]}
	{$head,"recv_ns":1,"dp_rank":0,"medium":"xpu","block_hashes":"0xa"}
	{"src":"$E0","recv_ns":1,"seq":1,"type":"stored","medium":"xpu","block_hashes":["0xa"],"parent":null,"token_ids":[1,"2",3,4],"block_size":4}
	{$head,"recv_ns":1,"dp_rank":0,"medium":"xpu","block_hashes":["0xa"],"replayed":"false"}
	{"src":5,"recv_ns":1,"type":"removed","medium":"xpu","block_hashes":["0xa"]}
	{"src":"$E0","recv_ns":1,"type":"stored","medium":"xpu","block_hashes":["0xa"],"token_ids":[1,2,3,4],"block_size":"4"}
	{$head,"recv_ns":1,"dp_rank":0,"medium":"xpu","block_hashes":[true]}
	{$head,"recv_ns":1,"dp_rank":0,"medium":null,"block_hashes":["0xa"]}
	{$head,"recv_ns":1,"dp_rank":0,"medium":"xpu","block_hashes":["0xa"],"backend_id":{"a":1}}
	{$head,"recv_ns":1,"dp_rank":4294967295,"medium":"xpu","block_hashes":["0xa"],"lora_name":null,"raw_hashes":[10],"extra_keys":[[1,"x"]]}
	EOF
	run --separate-stderr kvmatch --log dropped ev.jsonl
	assert_equal "$status" 65
	assert_equal "$(jq -r .reason <<<"$output" | sort | uniq -c | tr -s ' ')" " 11 decode_error"
	assert_equal "$(printf '%s\n' "${stderr_lines[@]:0:11}")" "kvmatch: ev.jsonl: line 1: recv_ns: expected a number, not a string
kvmatch: ev.jsonl: line 2: dp_rank: expected a rank from 0 to 4294967295
kvmatch: ev.jsonl: line 3: dp_rank: expected a number or null, not a string
kvmatch: ev.jsonl: line 4: block_hashes: expected an array, not a string
kvmatch: ev.jsonl: line 5: token_ids[]: expected a number, not a string
kvmatch: ev.jsonl: line 6: replayed: expected a boolean, not a string
kvmatch: ev.jsonl: line 7: src: expected a string, not a number
kvmatch: ev.jsonl: line 8: block_size: expected a number or null, not a string
kvmatch: ev.jsonl: line 9: block_hashes[]: expected a number or a string, not a boolean
kvmatch: ev.jsonl: line 10: medium: expected a string, not null
kvmatch: ev.jsonl: line 11: backend_id: expected a string or null, not an object"
}

@test "kvmatch --help, --version, bad options" {
	run kvmatch --help
	assert_success
	assert_line --index 0 'Usage: kvmatch [OPTION]... [FILE]...'
	run --separate-stderr kvmatch --log sometimes
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvmatch: --log: 'sometimes' is not all, none or a list of states: a name that is no state"
	assert_equal "${stderr_lines[1]}" "Try 'kvmatch --help'."
	run --separate-stderr kvmatch --pending-ttl 0
	assert_equal "$status" 64
	run --separate-stderr kvmatch --match maybe
	assert_equal "$status" 64
}

# ---- counts that agree across the pipe ----------------------------------------

# Runs CAPTURE through kvdecode | kvmatch, kvdecode -e | kvmatch and kvmatch
# CAPTURE (kvmatch options after it); each leaves NAME.kvsnap, NAME.err
# (statistics and --diagnose) and NAME.out (state lines).
three_pipes() {
	local cap=$1
	shift
	kvdecode -q "$cap" | kvmatch --diagnose -o plain.kvsnap "$@" > plain.out 2> plain.err || true
	kvdecode -q -e "$cap" | kvmatch --diagnose -o errors.kvsnap "$@" > errors.out 2> errors.err || true
	kvmatch --diagnose -o direct.kvsnap "$@" "$cap" > direct.out 2> direct.err || true
}

# Statistics and findings of a run, without the messages about bad input
# (which name a line of JSON or a record of a capture).
stats_of() { grep -v -e ': line [0-9]' -e ': record [0-9]' "$1.err"; }

@test "the same capture through kvdecode | kvmatch, kvdecode -e | kvmatch and kvmatch CAPTURE: same statistics, findings and snapshot bytes, every fixture" {
	for cap in "$FIX"/*.kvcap "$FIX"/mooncake-master/*.kvcap; do
		three_pipes "$cap"
		cmp direct.kvsnap plain.kvsnap
		cmp direct.kvsnap errors.kvsnap
		diff <(stats_of direct) <(stats_of plain)
		diff <(stats_of direct) <(stats_of errors)
		# a record is counted once, however many event lines it became
		assert_equal "$(head -1 direct.err | cut -d' ' -f2)" "$(kvdecode --stats "$cap" 2>&1 >/dev/null | awk '{ n += $3 } END { print n }')"
	done
}

@test "kvdecode -e | kvmatch: a record that gives an error line and event lines is one record, no restart" {
	printf '%s\n' '[1764500000.0, [["BlockRemoved", [1]], ["BlockRemoved", "zz"], ["BlockRemoved", [2]]], 0]' \
		'[1764500000.0, [["BlockRemoved", [3]]], 0]' | j2mp > in.kvcap
	three_pipes in.kvcap --diagnose=json --log none
	for run in direct errors; do
		assert_equal "$(grep "^kvmatch: [0-9]* records" $run.err)" "kvmatch: 2 records, 3 events; 0 queued, 0 offload_cached, 0 matched, 0 confirmed, 0 applied, 1 dropped, 0 pending_expired"
		assert_equal "$(tail -1 $run.err | jq -c '[.findings[] | [.finding, .evidence]]')" '[["decode_errors",{"problems":1}]]'
		assert_equal "$(kvmatch --dump $run.kvsnap | grep '"kind":"source"')" '{"kind":"source","src":"tcp://10.0.0.5:5557","last_seq":1,"batches":2,"last_recv_ns":1764500000001000000,"gaps":0,"restarts":0}'
	done
	cmp direct.kvsnap errors.kvsnap
	cmp direct.kvsnap plain.kvsnap
}

@test "kvdecode | kvmatch: a record whose only event was dropped (or that did not decode) is no seq gap" {
	printf '%s\n' '[1764500000.0, [["BlockRemoved", [1]]], 0]' '[1764500000.0, [["BlockRemoved", "zz"]], 0]' 'raw:c1' \
		'[1764500000.0, [["Unknown", 1]], 0]' '[1764500000.0, [["BlockRemoved", [3]]], 0]' | j2mp > in.kvcap
	three_pipes in.kvcap --diagnose=json --log none
	for run in plain errors direct; do
		assert_equal "$(kvmatch --dump $run.kvsnap | grep '"kind":"source"')" '{"kind":"source","src":"tcp://10.0.0.5:5557","last_seq":4,"batches":4,"last_recv_ns":1764500000004000000,"gaps":0,"restarts":0}'
		assert_equal "$(tail -1 $run.err | jq -c '[.findings[].finding | select(. == "missed_batches" or . == "restarted")]')" '[]'
	done
	cmp direct.kvsnap plain.kvsnap
	cmp direct.kvsnap errors.kvsnap
	# what the plain pipe cannot know (kvdecode without -e), the others count
	assert_equal "$(tail -1 direct.err | jq -c '.findings[0].evidence')" '{"problems":2}'
	assert_equal "$(tail -1 errors.err | jq -c '.findings[0].evidence')" '{"problems":2}'
}

@test "kvmatch CAPTURE reports the events it could not decode: state lines, counts, --diagnose, as the JSON path does" {
	printf '%s\n' '[1764500000.0, [["BlockStored", [1], "f:2.5", [1,2,3,4], 4], ["BlockRemoved", [2]]], 0]' | j2mp > in.kvcap
	run --separate-stderr kvmatch --log dropped --diagnose in.kvcap
	assert_equal "$status" 65
	assert_equal "$output" '{"recv_ns":1764500000000000000,"state":"dropped","reason":"decode_error","hash":null,"workers":[],"src":"tcp://10.0.0.5:5557","seq":0}'
	assert_equal "${stderr_lines[0]}" "kvmatch: in.kvcap: record 1 (tcp://10.0.0.5:5557, seq 0): event 0: parent_block_hash: a float is not a hash"
	assert_equal "${stderr_lines[1]}" "kvmatch: 1 records, 1 events; 0 queued, 0 offload_cached, 0 matched, 0 confirmed, 0 applied, 1 dropped, 0 pending_expired"
	assert_equal "${stderr_lines[2]}" "kvmatch: dropped: 1 decode_error"
	assert_equal "${stderr_lines[5]}" "kvmatch: warning: decode_errors: tcp://10.0.0.5:5557: 1 record or event could not be decoded"
	run --separate-stderr bash -c 'kvdecode -q -e in.kvcap | kvmatch --log dropped'
	assert_equal "$output" '{"recv_ns":1764500000000000000,"state":"dropped","reason":"decode_error","hash":null,"workers":[],"src":"tcp://10.0.0.5:5557","seq":0}'
}

# ---- a Mooncake master pool, end to end ---------------------------------------

M0=tcp://mooncake-master:50001
# A record of the capture: rec SRC SEQ T PAYLOAD (T in seconds).
rec() { j2mp --src "$1" --seq "$2" --recv "$3"000000000 <<<"$4"; }
# A Mooncake master batch of one event, as its publisher packs it (RFC #1527
# keys, nil where the master has no model context):
#   mc SEQ T TYPE SEQ_HASHES MEDIUM TENANT BACKEND OBJECT_KEY
mc() {
	local type=BlockStored base=0
	[ "$3" = removed ] && type=BlockRemoved base=null
	rec "$M0" "$1" "$2" "[$2000, [{\"event_id\": $1, \"timestamp\": $2000, \"event_type\": \"$3\", \"type\": \"$type\", \"model_name\": null, \"block_size\": null, \"additional_salt\": null, \"lora_name\": null, \"tenant_id\": \"$6\", \"backend_id\": \"$7\", \"group_id\": \"sglang-hicache:abc\", \"medium\": \"$5\", \"dp_rank\": null, \"seq_hashes\": [$4], \"block_hashes\": [$4], \"base_block_idx\": $base, \"parent_hash\": null, \"token_ids\": null, \"object_key\": \"$8\", \"parent_block_hash\": null}], 0]"
}
# vLLM array events: vs SRC SEQ T HASH PARENT TOKENS BLOCK_SIZE MEDIUM ; vr SRC SEQ T HASH MEDIUM
vs() { rec "$1" "$2" "$3" "[$3.0, [[\"BlockStored\", [$4], $5, [$6], $7, null, \"$8\"]], 0]"; }
vr() { rec "$1" "$2" "$3" "[$3.0, [[\"BlockRemoved\", [$4], \"$5\"]], 0]"; }

mooncake_cluster() {
	cat > mc-regs.jsonl <<-EOF
	{"instance_id": "a", "dp_rank": 0, "block_size": 4, "modelname": "m", "type": "vLLM", "medium_endpoints": {"npu": "$E0"}}
	{"instance_id": "b", "dp_rank": 0, "block_size": 4, "modelname": "m", "type": "vLLM", "medium_endpoints": {"npu": "$E2"}}
	{"instance_id": "kvs", "dp_rank": 0, "block_size": 4, "modelname": "m", "type": "Mooncake", "endpoint": "$M0", "store_backend": "Mooncake"}
	EOF
	{
		rec $E0 1 1 '[1.0, [["BlockStored", [11, 12], null, [1,2,3,4,5,6,7,8], 4, null, "GPU"]], 0]'
		vs $E2 0 1 11 null 1,2,3,4 4 GPU                          # b: block 11 in xpu
		vs $E0 2 2 11 null '' 0 CPU                               # a offloads 11 (placeholder, no tokens)
		mc 1 3 stored 11 cpu default 10.0.0.5 11                  # ... the pool's store confirms it
		mc 2 4 stored 13 cpu default 10.0.0.5 13                  # the pool's store first: queued ...
		vs $E0 3 5 13 12 9,10,11,12 4 CPU                         # ... matched by a's offload
		mc 3 6 stored 12 cpu tenant-b 10.0.0.5 12                 # another tenant: its own partition
		mc 4 7 stored '' disk default 10.0.0.5 my-object          # a key that is no hash
		mc 5 8 removed 11 cpu default 10.0.0.5 11                 # Remove
		mc 6 9 removed 13 cpu default 10.0.0.5 13                 # eviction
		rec $M0 7 10 '[10000, [{"event_type": "stored", "tenant_id": "default", "backend_id": "'"${1:-mooncake-daemon-0}"'", "medium": "cpu", "seq_hashes": [12], "object_key": "12"}], 0]'
		vr $E0 4 11 12 GPU                                        # a drops 12 from xpu: only the pool holds it
	} > mc.kvcap
}

@test "a Mooncake master pool, end to end: confirmed, queued then matched, other tenant, no hash, removal and eviction, a named daemon" {
	mooncake_cluster
	run --separate-stderr kvmatch -r mc-regs.jsonl --log queued,matched,confirmed,dropped,applied -o s.kvsnap --metrics m.prom mc.kvcap
	assert_success
	# the key that is no hash: a no_hashes drop in the statistics and the metrics, no decode error
	assert_equal "${stderr_lines[1]}" "kvmatch: dropped: 1 no_hashes"
	assert_equal "$(grep -c 'reason="decode_error"} [1-9]' m.prom)" 0
	grep -qx 'kvtools_match_drops_total{reason="no_hashes"} 1' m.prom
	assert_equal "$(states <<<"$output" | grep -v '^applied - 0x000000000000000[bc] xpu [ab]/0$')" "confirmed - 0x000000000000000b cpu a/0
queued - 0x000000000000000d cpu a/0
matched - 0x000000000000000d cpu a/0
queued - 0x000000000000000c cpu a/0
dropped no_hashes - disk a/0
applied - 0x000000000000000b cpu a/0
applied - 0x000000000000000d cpu a/0
confirmed - 0x000000000000000c cpu pool:mooncake-daemon-0"
	# the other tenant's entry waits in its own partition
	assert_equal "$(jq -r 'select(.state == "queued") | .tenant' <<<"$output")" "default
tenant-b"
	assert_equal "$(holdings s.kvsnap)" "0xcb38e4d7fb2dca5c a/0 xpu
0xcb38e4d7fb2dca5c b/0 xpu
0xe8d3ec39b907b74c pool:mooncake-daemon-0 cpu"
	assert_equal "$(kvmatch --dump s.kvsnap | jq -c 'select(.kind == "worker" and .pool)')" '{"kind":"worker","instance_id":"mooncake-daemon-0","pool":true,"dp_rank":null,"host":"","inferred":false}'
	# the three pipelines agree on it too
	three_pipes mc.kvcap -r mc-regs.jsonl --log none
	cmp direct.kvsnap plain.kvsnap
	cmp direct.kvsnap errors.kvsnap
	diff <(stats_of direct) <(stats_of errors)
	diff <(stats_of direct) <(stats_of plain)
}

@test "a Mooncake master's missing seqs are events in --diagnose, as kvsub and kvdecode --stats say; an engine's are batches" {
	mooncake_cluster
	{ mc 1 3 stored 11 cpu default 10.0.0.5 11; mc 4 4 stored 13 cpu default 10.0.0.5 13
	  vs $E0 1 5 21 null 1,2,3,4 4 GPU; vs $E0 3 6 22 21 5,6,7,8 4 GPU; } > gap.kvcap
	run --separate-stderr kvmatch -q -r mc-regs.jsonl --log none --diagnose gap.kvcap
	assert_equal "$(grep -o 'missed_batches: .*' <<<"$stderr")" "missed_batches: $M0: 2 events lost in 1 seq gap, 0 replayed
missed_batches: tcp://10.0.0.5:5557 (worker a): 1 batch lost in 1 seq gap, 0 replayed"
	assert_equal "$(kvdecode --stats gap.kvcap 2>&1 >/dev/null | grep -o '[0-9]* missing[a-z ]*,' | tr '\n' ' ')" "2 missing events, 1 missing, "
}

@test "a named daemon's blocks count under kvquery --shared-pool for every worker, not per worker; --explain says where only the pool holds" {
	mooncake_cluster
	kvmatch -q -r mc-regs.jsonl --log none -o s.kvsnap mc.kvcap
	echo '{"model": "m", "tenant_id": "default", "block_size": 4, "token_ids": [1,2,3,4,5,6,7,8]}' > q.jsonl
	run --separate-stderr kvquery -s s.kvsnap q.jsonl
	assert_success
	assert_equal "$output" '{"default":{"a":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":4,"npu_blocks":1}},"longest_matched":4},"b":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":4,"npu_blocks":1}},"longest_matched":4}}}'
	run --separate-stderr kvquery --shared-pool -s s.kvsnap q.jsonl
	assert_success
	assert_equal "$output" '{"default":{"a":{"DP":{"0":{"cpu_blocks":1,"cpu_local_blocks":0,"cpu_remote_blocks":1,"disk_blocks":0,"matched_tokens":8,"npu_blocks":1}},"longest_matched":8},"b":{"DP":{"0":{"cpu_blocks":1,"cpu_local_blocks":0,"cpu_remote_blocks":1,"disk_blocks":0,"matched_tokens":8,"npu_blocks":1}},"longest_matched":8}}}'
	run --separate-stderr kvquery --explain -s s.kvsnap q.jsonl
	assert_success
	assert_equal "$(jq -r '.workers[] | "\(.instance_id) \(.stopped_at) \(.reason)"' <<<"$output")" "a 1 held_by_pool_only
b 1 held_by_pool_only"
}

@test "kvmatch --backend-serves: the instances a named daemon serves are its targets, and per-worker answers credit them" {
	mooncake_cluster
	kvmatch -q -r mc-regs.jsonl --backend-serves mooncake-daemon-0=b,c --log none -o s.kvsnap mc.kvcap
	assert_equal "$(holdings s.kvsnap | grep 0xe8d3ec39b907b74c)" "0xe8d3ec39b907b74c b/0 cpu"
	echo '{"model": "m", "tenant_id": "default", "block_size": 4, "token_ids": [1,2,3,4,5,6,7,8]}' > q.jsonl
	run --separate-stderr kvquery -s s.kvsnap q.jsonl
	assert_equal "$output" '{"default":{"a":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":4,"npu_blocks":1}},"longest_matched":4},"b":{"DP":{"0":{"cpu_blocks":1,"cpu_local_blocks":1,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":8,"npu_blocks":1}},"longest_matched":8}}}'
	for bad in mooncake-daemon-0 =b mooncake-daemon-0= mooncake-daemon-0=b, 'x=a,,b'; do
		run --separate-stderr kvmatch --backend-serves "$bad" /dev/null
		assert_equal "$status" 64
		assert_equal "${stderr_lines[0]%%...: *}" "kvmatch: --backend-serves: '$bad' is not BACKEND_ID=INSTANCE[,INSTANCE]"
	done
}

@test "a snapshot of an older format (before pool holders, holder sets, section checksums, block columns) gets a clear message, one of the next format another" {
	kvmatch -q --log none -o s.kvsnap /dev/null
	# versions 2 to 5 in the header: the rest is checked after the version
	for v in 2 3 4 5; do
		cp s.kvsnap old.kvsnap
		printf "\\00$v\\000" | dd of=old.kvsnap bs=1 seek=6 conv=notrunc status=none
		run --separate-stderr kvquery -s old.kvsnap /dev/null
		assert_equal "$status" 65
		assert_equal "$stderr" "kvquery: old.kvsnap: snapshot version $v is an older format (this kvtools reads versions 6 and 7): build it again with kvmatch from the captures"
		run --separate-stderr kvmatch -i old.kvsnap /dev/null
		assert_equal "$status" 65
		assert_equal "$stderr" "kvmatch: old.kvsnap: snapshot version $v is an older format (this kvtools reads versions 6 and 7): build it again with kvmatch from the captures"
	done
	# the next version, one past what this kvtools reads, is refused too
	cp s.kvsnap new.kvsnap
	printf '\010\000' | dd of=new.kvsnap bs=1 seek=6 conv=notrunc status=none
	run --separate-stderr kvquery -s new.kvsnap /dev/null
	assert_equal "$status" 65
	assert_equal "$stderr" "kvquery: new.kvsnap: snapshot version 8 (this kvtools reads versions 6 and 7)"
}

@test "a named daemon called as an instance is: its pool holder and the instance are two workers, and the snapshot loads" {
	mooncake_cluster b
	kvmatch -q -r mc-regs.jsonl --log none -o s.kvsnap mc.kvcap
	assert_equal "$(kvmatch --dump s.kvsnap | jq -c 'select(.kind == "worker" and .instance_id == "b")')" '{"kind":"worker","instance_id":"b","pool":true,"dp_rank":null,"host":"","inferred":false}
{"kind":"worker","instance_id":"b","dp_rank":0,"host":"10.0.0.6","partition":0,"inferred":false}'
	echo '{"model": "m", "tenant_id": "default", "block_size": 4, "token_ids": [1,2,3,4,5,6,7,8]}' > q.jsonl
	run --separate-stderr kvquery --shared-pool -s s.kvsnap q.jsonl
	assert_success
	assert_equal "$(jq -c '.default | keys' <<<"$output")" '["a","b"]'
}

# ---- registrations: kv-conductor's and RFC #1403's /register bodies ----------

@test "every registration file shipped, written by kvgen or used by the tests is one kv-conductor accepts" {
	check="/usr/bin/python3 $ROOT/tests/helpers/regcheck.py"
	# the checker itself refuses what kv-conductor refuses
	printf '%s\n' '{"instance_id": "a", "dp_rank": 0, "block_size": 4, "modelname": "m", "medium_endpoints": {"npu": "tcp://h:1"}}' > bad.jsonl
	run $check bad.jsonl
	assert_failure
	assert_output "bad.jsonl:1: missing field \`type\`"
	printf '%s\n' '{"instance_id": "p", "type": "Memcache", "modelname": "m", "endpoint": "tcp://h:1", "dp_rank": 0}' > bad.jsonl
	run $check bad.jsonl
	assert_output "bad.jsonl:1: missing field \`block_size\`"
	run $check "$ROOT/share/registrations.jsonl"
	assert_success
	for pool in none memcache mooncake; do
		kvgen -n -q --workers 2 --dp 2 --pool $pool --limit 1 --registrations gen-$pool.jsonl "$ROOT/share/traces/conversation-300.jsonl"
		run $check gen-$pool.jsonl
		assert_success
	done
	# and the decoupled pool's (make sample-decoupled)
	kvgen -n -q --workers 2 --dp 2 --pool mooncake --pool-backend mooncake-daemon-0 --limit 1 \
		--registrations gen-decoupled.jsonl "$ROOT/share/traces/conversation-300.jsonl"
	run $check gen-decoupled.jsonl
	assert_success
	# the registrations in the tests' here-documents, the endpoints filled in
	sed -n 's/^\t\({"\(instance_id\|endpoint\)".*\)$/\1/p' "$ROOT"/tests/*.bats | sed 's/\$[A-Za-z0-9_]*/x/g' > tests.jsonl
	[ "$(grep -c . tests.jsonl)" -ge 20 ]
	run $check tests.jsonl
	assert_success
}

@test "the registrations fuzz corpus is kv-conductor's: every file passes regcheck, valid-* ones both shapes kvtools takes too, conflict-* lines it takes one by one that contradict each other" {
	check="/usr/bin/python3 $ROOT/tests/helpers/regcheck.py"
	corpus=$ROOT/fuzz/corpus/regs
	n=0
	for f in "$corpus"/*; do
		name=${f##*/}
		run $check "$f"
		assert_success
		case $name in
		valid-*) want=0 ;;
		conflict-*) want=65 ;;
		*) fail "$name: a corpus file named neither valid- nor conflict-" ;;
		esac
		run --separate-stderr kvmatch -q -r "$f" --log none /dev/null
		[ "$status" -eq "$want" ] || fail "$name: kvmatch exit $status"
		n=$((n + 1))
	done
	[ "$n" -ge 10 ]
	# both shapes: kv-conductor's medium_endpoints, RFC #1403's endpoint with lora_name and additionalsalt
	grep -qh '"medium_endpoints"' "$corpus"/valid-*
	grep -h '"lora_name": "[^"]' "$corpus"/valid-* | grep -q '"additionalsalt": "[^"]'
	grep -qh '"store_backend": "Memcache"' "$corpus"/valid-*
	# what kvgen writes for each pool, as it writes it now
	for pool in none memcache mooncake; do
		kvgen -n -q --workers 2 --dp 2 --pool $pool --limit 1 --registrations gen.jsonl "$ROOT/share/traces/conversation-300.jsonl"
		cmp gen.jsonl "$corpus/valid-kvgen-$pool"
	done
}

@test "registrations kvtools refuses (tests/fixtures/regs-refused) are refused, each line with its number, the good first line kept" {
	n=0
	for f in "$FIX"/regs-refused/*; do
		# kv-conductor's serde refuses them too (422), but for the values regcheck does not look into
		run /usr/bin/python3 "$ROOT/tests/helpers/regcheck.py" "$f"
		[ "$status" -eq "$([ "${f##*/}" = values ] && echo 0 || echo 1)" ] || fail "${f##*/}: regcheck exit $status"
		run --separate-stderr kvmatch -r "$f" --log none /dev/null
		assert_equal "$status" 65
		# the first line is good, every other one refused with its line number
		assert_equal "$(grep -c ': line [0-9]*: ' <<<"$stderr")" "$(($(awk 'END { print NR }' "$f") - 1))"
		n=$((n + 1))
	done
	[ "$n" -ge 5 ]
}

@test "registrations: null for a field kv-conductor requires is refused as it refuses it, not taken for absent (a null modelname crashed kvmatch)" {
	for key in instance_id type modelname block_size dp_rank; do
		jq -nc --arg k "$key" '{"instance_id": "a", "type": "vLLM", "dp_rank": 0, "modelname": "m", "block_size": 4,
			"medium_endpoints": {"npu": "tcp://10.0.0.1:5557"}} | .[$k] = null' > r.jsonl
		run --separate-stderr kvmatch -r r.jsonl --log none /dev/null
		assert_equal "$status" 65
		assert_equal "$stderr" "kvmatch: r.jsonl: line 1: $key: null, where kv-conductor requires a value (it answers 422)"
	done
}

@test "registrations: a line without a field kv-conductor requires is refused with the reason, exit 65" {
	printf '%s\n' '{"instance_id": "a", "dp_rank": 0, "block_size": 4, "modelname": "m", "medium_endpoints": {"npu": "tcp://h:1"}}' \
		'{"instance_id": "p", "type": "Memcache", "modelname": "m", "endpoint": "tcp://h:2", "dp_rank": 0}' \
		"{\"instance_id\": \"b\", \"type\": \"vLLM\", \"dp_rank\": 0, \"block_size\": 4, \"modelname\": \"m\", \"medium_endpoints\": {\"npu\": \"$E2\"}}" > r.jsonl
	store $E2 1 0 xpu '"0xa"' null 1,2,3,4 > ev.jsonl
	run --separate-stderr kvmatch -r r.jsonl --log none -o s.kvsnap ev.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvmatch: r.jsonl: line 1: missing field \`type\` (kv-conductor answers 422)
kvmatch: r.jsonl: line 2: missing field \`block_size\` (kv-conductor answers 422)"
}

# Conflicting registrations: each reported with its line, the first line wins, exit 65.
conflicts() {
	reg() { printf '{"instance_id": "%s", "type": "vLLM", "dp_rank": %s, "block_size": %s, "modelname": "%s", "medium_endpoints": {"npu": "%s"}}\n' "$@"; }
	{
		reg a 0 4 m "$E0"
		reg a 0 8 m "$E0"              # the same worker, another block size
		reg a 0 4 m tcp://10.0.0.9:1   # the same worker, another endpoint
		reg b 0 4 m "$E0"              # another worker on a's endpoint
		reg c 0 8 m "$E1"              # another block size in partition m/default
		reg a 0 4 m "$E0"              # a repeat: accepted quietly
		reg d 0 8 n "$E2"              # another partition may have its own
	} > r.jsonl
}
conflict_messages() {
	printf '%s\n' \
		"$1: r.jsonl: line 2: instance_id a dp_rank 0 registered again with another block_size (line 1 wins)" \
		"$1: r.jsonl: line 3: instance_id a dp_rank 0 registered again with another medium_endpoints (line 1 wins)" \
		"$1: r.jsonl: line 4: endpoint $E0 is already instance_id a dp_rank 0's at line 1 (line 1 wins)" \
		"$1: r.jsonl: line 5: block_size 8 in partition m/default, where line 1 has 4 (line 1 wins)"
}

@test "registrations that contradict each other are reported with their lines; the first wins" {
	conflicts
	store $E0 1 0 xpu '"0xa"' null 1,2,3,4 > ev.jsonl
	run --separate-stderr kvmatch -r r.jsonl --log dropped -o s.kvsnap ev.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "$(conflict_messages kvmatch)"
	assert_output ''
	[ ! -e s.kvsnap ] # a set-up error: nothing is written
	# what the first lines say is what is registered
	sed -i '2,5d' r.jsonl
	run --separate-stderr kvmatch -r r.jsonl --log dropped -o s.kvsnap ev.jsonl
	assert_success
	assert_output '' # a's store of block size 4 is no block_size_mismatch
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "worker") | "\(.instance_id)/\(.dp_rank)"')" "a/0
d/0"
}

@test "kvsub reports the same conflicts the same way, and a bad endpoint with its file and line" {
	conflicts
	run --separate-stderr kvsub -W 1 -r r.jsonl -o x.kvcap # -W: ends even if the file were taken
	assert_equal "$status" 65
	assert_equal "$stderr" "$(conflict_messages kvsub)"
	[ ! -e x.kvcap ]
	printf '%s\n' '{"instance_id": "a", "type": "vLLM", "dp_rank": 0, "block_size": 4, "modelname": "m", "medium_endpoints": {"npu": "not an endpoint"}}' > bad.jsonl
	for prog in kvsub kvmatch; do
		run --separate-stderr $prog -r bad.jsonl -o x.out $([ $prog = kvsub ] && echo -W 1 || echo /dev/null)
		assert_equal "$status" 65
		assert_equal "$stderr" "$prog: bad.jsonl: line 1: medium_endpoints: not a ZMQ endpoint (tcp://HOST:PORT, ipc://PATH, inproc://NAME)"
	done
	printf '%s\n' '{"instance_id": "p", "type": "Memcache", "dp_rank": 0, "block_size": 4, "modelname": "m", "endpoint": "bogus://x"}' \
		'{"instance_id": "a", "type": "vLLM", "dp_rank": 0, "block_size": 4, "modelname": "m", "medium_endpoints": {"npu": "ipc://a"}, "replay_endpoint": "tcp://h"}' > bad.jsonl
	run --separate-stderr kvsub -W 1 -r bad.jsonl -o x.out
	assert_equal "$status" 65
	assert_equal "$stderr" "kvsub: bad.jsonl: line 1: endpoint: not a ZMQ transport (tcp://, ipc://, inproc://, ...)
kvsub: bad.jsonl: line 2: replay_endpoint: a tcp endpoint to connect to needs a host and a port from 1 to 65535"
}

@test "RFC #1403 registrations: an engine's endpoint is its publisher; LoRA and salt name the partition" {
	cat > rfc.jsonl <<-EOF
	{"endpoint": "$E0", "replay_endpoint": "tcp://10.0.0.5:6557", "type": "vLLM", "modelname": "m", "lora_name": "sql", "tenant_id": "default", "instance_id": "a", "block_size": 4, "dp_rank": 0, "additionalsalt": "w8a8"}
	{"endpoint": "$E2", "type": "SGLang", "modelname": "m", "lora_name": "", "instance_id": "b", "block_size": 4, "dp_rank": 0, "additionalsalt": ""}
	{"endpoint": "tcp://kvs:5557", "type": "Mooncake", "modelname": "m", "instance_id": "master", "block_size": 4, "dp_rank": 0}
	EOF
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4; store $E2 2 0 xpu '"0xb"' null 1,2,3,4; } > ev.jsonl
	run --separate-stderr kvmatch -r rfc.jsonl --log dropped -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "partition") | "\(.model) \(.tenant) \(.blocks)"')" "m default 1
sql#w8a8 default 1"
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "worker") | "\(.instance_id)/\(.dp_rank) \(.host)"')" "a/0 10.0.0.5
b/0 10.0.0.6"
}

@test "partition names are injective: adapter x#y and adapter x with salt y are two partitions, and a query for one is answered with its own workers" {
	cat > rfc.jsonl <<-EOF
	{"endpoint": "$E0", "type": "vLLM", "modelname": "m", "lora_name": "x#y", "instance_id": "a", "block_size": 4, "dp_rank": 0}
	{"endpoint": "$E2", "type": "vLLM", "modelname": "m", "lora_name": "x", "additionalsalt": "y", "instance_id": "b", "block_size": 4, "dp_rank": 0}
	{"endpoint": "tcp://10.0.0.7:5557", "type": "vLLM", "modelname": "x\\\\#y", "instance_id": "c", "block_size": 4, "dp_rank": 0}
	EOF
	{ store $E0 1 0 xpu '"0xa"' null 1,2,3,4; store $E2 2 0 xpu '"0xb"' null 1,2,3,4; store tcp://10.0.0.7:5557 3 0 xpu '"0xc"' null 1,2,3,4; } > ev.jsonl
	run --separate-stderr kvmatch -r rfc.jsonl --log applied --metrics m.prom -o s.kvsnap ev.jsonl
	assert_success
	# each name escaped so that none is another's: a backslash, '#' (and NUL) get a backslash
	assert_equal "$(jq -r .model <<<"$output")" 'x\#y
x#y
x\\\#y'
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "partition") | "\(.model) \(.blocks)"')" 'x#y 1
x\#y 1
x\\\#y 1'
	grep -qxF 'kvtools_match_blocks{model="x\\#y",tenant="default"} 1' m.prom
	grep -qxF 'kvtools_match_blocks{model="x#y",tenant="default"} 1' m.prom
	# each query finds its own partition's worker, and only it
	ask() { kvquery -s s.kvsnap --api mooncake <<<"$1" | jq -c '.default | keys'; }
	assert_equal "$(ask '{"model": "m", "lora_name": "x#y", "token_ids": [1,2,3,4], "block_size": 4}')" '["a"]'
	assert_equal "$(ask '{"model": "m", "lora_name": "x", "cache_salt": "y", "token_ids": [1,2,3,4], "block_size": 4}')" '["b"]'
	assert_equal "$(ask '{"model": "x\\#y", "token_ids": [1,2,3,4], "block_size": 4}')" '["c"]'
	# a kv-conductor /query names a model, never a salt: "x#y" is the model x#y, a's adapter partition
	assert_equal "$(kvquery -s s.kvsnap <<<'{"model": "x#y", "token_ids": [1,2,3,4], "block_size": 4}' | jq -c '.default | keys')" '["a"]'
	assert_equal "$(kvquery -s s.kvsnap --model 'x#y' <<<'[1,2,3,4]' | jq -c '.default | keys')" '["a"]'
}

@test "a version 6 snapshot (names joined with '#', nothing escaped) is read where its names mean the same, refused where one holds '#' or a backslash" {
	kvmatch -q -r regs.jsonl --log none -o plain.kvsnap <(store $E0 1 0 xpu '"0xa"' null 1,2,3,4)
	kvquery -s plain.kvsnap <<<'{"model": "m", "token_ids": [1,2,3,4], "block_size": 4}' > want
	assert_equal "$(od -A n -t u2 -j 6 -N 2 plain.kvsnap | tr -d ' ')" 7
	snapver 6 plain.kvsnap
	run --separate-stderr kvquery -s plain.kvsnap <<<'{"model": "m", "token_ids": [1,2,3,4], "block_size": 4}'
	assert_success
	assert_equal "$output" "$(cat want)"
	# resumed and written again: version 7, the same state
	kvmatch -q --log none -i plain.kvsnap -o again.kvsnap /dev/null
	assert_equal "$(kvmatch --dump again.kvsnap | grep -v '"kind":"meta"')" "$(kvmatch --dump plain.kvsnap | grep -v '"kind":"meta"')"
	cat > rfc.jsonl <<-EOF
	{"endpoint": "$E0", "type": "vLLM", "modelname": "m", "lora_name": "x", "additionalsalt": "y", "instance_id": "a", "block_size": 4, "dp_rank": 0}
	EOF
	kvmatch -q -r rfc.jsonl --log none -o salted.kvsnap <(store $E0 1 0 xpu '"0xa"' null 1,2,3,4)
	snapver 6 salted.kvsnap
	for prog in kvquery kvmatch; do
		if [ $prog = kvquery ]; then run --separate-stderr kvquery -s salted.kvsnap /dev/null; else run --separate-stderr kvmatch -i salted.kvsnap /dev/null; fi
		assert_equal "$status" 65
		assert_equal "$stderr" "$prog: salted.kvsnap: partition 0: version 6 wrote the name 'x#y', which this version reads otherwise: build it again with kvmatch from the captures"
	done
}

# GCC took a function that only prefetches for one without effects and
# deleted the calls before inlining them: the matcher ran with no prefetch
# at all, about a quarter slower (doc/benchmarks.md "What the misses are").  In the
# release build the event loop must keep its hints.
@test "the matcher's event loop keeps its prefetch hints after compiling" {
	run objdump -d --no-show-raw-insn --disassemble=kv_match_event "$(command -v kvmatch)"
	assert_success
	local n
	n=$(grep -c 'prefetch' <<<"$output" || true)
	[ "$n" -ge 1 ] || fail "kv_match_event has no prefetch instruction"
}

# make bench's matcher-alone row (bench/applyonly.c) times the same work as
# kvmatch, or its figure compares nothing: the same index from the same
# capture, and what it cannot replay refused rather than timed.
@test "bench's applyonly builds kvmatch's index from a kvgen capture with a pool; a record with a problem is refused" {
	kvgen -q --limit 300 --workers 4 --dp 2 --capacity 600 --pool memcache --registrations regs.jsonl \
		-o gen.kvcap "$ROOT/share/traces/conversation-300.jsonl"
	run --separate-stderr applyonly gen.kvcap regs.jsonl
	assert_success
	[[ ${lines[0]} =~ ^apply_ns\ [0-9]+$ ]]
	index=$(kvmatch -v -r regs.jsonl --log none gen.kvcap 2>&1 >/dev/null | sed -n 's/.* workers, \([0-9]*\) blocks, \([0-9]*\) holdings.*/blocks \1 holdings \2/p')
	[[ $index =~ ^blocks\ [1-9][0-9]*\ holdings\ [1-9][0-9]*$ ]]
	assert_equal "${lines[1]} ${lines[2]}" "$index"
	printf '%s\n' '[1764500000.0, [["BlockRemoved", [1]], ["BlockRemoved", "zz"]], 0]' | j2mp > bad.kvcap
	run --separate-stderr applyonly bad.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "applyonly: bad.kvcap: record 1 failed, was lost or has problems"
	run --separate-stderr applyonly
	assert_equal "$status" 64
	assert_equal "$stderr" "usage: applyonly CAPTURE [REGISTRATIONS]"
}
