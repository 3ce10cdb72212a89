#!/usr/bin/env bats
# kvquery: answers in kv-conductor's /query shape, routing, explanations.
load helper

E0=tcp://10.0.0.5:5557
E1=tcp://10.0.0.5:5558

store() { # SRC T DP MEDIUM HASHES PARENT TOKENS BLOCK_SIZE [EXTRA]
	printf '{"src":"%s","recv_ns":%s000000000,"seq":%s,"format":"vllm","dp_rank":%s,"type":"stored","medium":"%s","block_hashes":[%s],"parent":%s,"token_ids":[%s],"block_size":%s%s}\n' \
		"$1" "$2" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "${9:-}"
}
pool() { # T MEDIUM HASHES BACKEND
	printf '{"src":"tcp://kvs:5557","recv_ns":%s000000000,"seq":%s,"format":"memcache","type":"stored","medium":"%s","block_hashes":[%s],"backend_id":"%s","model_name":"m"}\n' "$1" "$1" "$2" "$3" "$4"
}

setup() {
	T=$BATS_TEST_TMPDIR
	cd "$T" || return 1
	cat > regs.jsonl <<-EOF
	{"instance_id": "a", "type": "vLLM", "dp_rank": 0, "block_size": 128, "modelname": "m", "medium_endpoints": {"npu": "$E0"}}
	{"instance_id": "a", "type": "vLLM", "dp_rank": 1, "block_size": 128, "modelname": "m", "medium_endpoints": {"npu": "$E1"}}
	{"instance_id": "kvs", "type": "Memcache", "dp_rank": 0, "block_size": 128, "endpoint": "tcp://kvs:5557", "store_backend": "memcache", "modelname": "m"}
	EOF
	# kv-conductor's README example: npu 3, cpu 2, disk 0 at block size 128
	{ store $E0 1 0 xpu '"0x1","0x2","0x3"' null "$(seq -s, 1 384)" 128
	  store $E0 2 0 cpu '"0x4","0x5"' '"0x3"' "$(seq -s, 385 640)" 128
	  pool 3 cpu '"0x4","0x5"' 10.0.0.5; } > ev.jsonl
	kvmatch -q -r regs.jsonl --log none -o s.kvsnap ev.jsonl
}

@test "kv-conductor's README example, from events: npu 3, cpu 2, 640 tokens" {
	echo "{\"model\": \"m\", \"block_size\": 128, \"token_ids\": [$(seq -s, 1 700)], \"tenant_id\": \"default\"}" > q.jsonl
	run --separate-stderr kvquery -s s.kvsnap q.jsonl
	assert_success
	assert_output '{"default":{"a":{"DP":{"0":{"cpu_blocks":2,"cpu_local_blocks":2,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":640,"npu_blocks":3}},"longest_matched":640}}}'
}

@test "defaults come from the snapshot's only partition; bare token lists work" {
	printf '[%s]\n%s\n' "$(seq -s, 1 256)" "$(seq -s ' ' 1 128)" > q.txt
	run --separate-stderr kvquery -s s.kvsnap q.txt
	assert_success
	assert_line --index 0 '{"default":{"a":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":256,"npu_blocks":2}},"longest_matched":256}}}'
	assert_line --index 1 '{"default":{"a":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":128,"npu_blocks":1}},"longest_matched":128}}}'
}

@test "no hit at all is {tenant: {}}; one output line per input line, in order" {
	printf '[1]\n[999]\n[%s]\n' "$(seq -s, 1 128)" > q.txt
	run --separate-stderr kvquery -s s.kvsnap q.txt
	assert_success
	assert_equal "${lines[0]}" '{"default":{}}'
	assert_equal "${lines[1]}" '{"default":{}}'
	assert_equal "$(echo "${lines[2]}" | jq -c '.default.a.longest_matched')" 128
}

@test "several DP ranks: longest_matched is the largest of them" {
	# DP 0 as set up (npu 3, cpu 2), DP 1 six blocks, DP 2 two: the largest
	# is neither the first nor the last rank
	E2=tcp://10.0.0.5:5559
	{ cat regs.jsonl; echo "{\"instance_id\": \"a\", \"type\": \"vLLM\", \"dp_rank\": 2, \"block_size\": 128, \"modelname\": \"m\", \"medium_endpoints\": {\"npu\": \"$E2\"}}"; } > regs3.jsonl
	{ cat ev.jsonl
	  store $E1 4 1 xpu '"0x11","0x12","0x13","0x14","0x15","0x16"' null "$(seq -s, 1 768)" 128
	  store $E2 5 2 xpu '"0x21","0x22"' null "$(seq -s, 1 256)" 128; } > ev2.jsonl
	kvmatch -q -r regs3.jsonl --log none -o s2.kvsnap ev2.jsonl
	echo "[$(seq -s, 1 800)]" > q.txt
	run --separate-stderr kvquery -s s2.kvsnap q.txt
	assert_success
	assert_output '{"default":{"a":{"DP":{"0":{"cpu_blocks":2,"cpu_local_blocks":2,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":640,"npu_blocks":3},"1":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":768,"npu_blocks":6},"2":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":256,"npu_blocks":2}},"longest_matched":768}}}'
}

@test "/query_by_hash: local hashes, as numbers above 2^63 or hex strings" {
	kvmatch --dump s.kvsnap | jq -r 'select(.kind == "block") | [.parent, .chain, .local] | @tsv' > blocks.tsv
	# the first two blocks' local hashes, in prefix order
	first=$(awk -F'\t' '$1 == "0x0000000000000539" { print $3 }' blocks.tsv)
	c1=$(awk -F'\t' '$1 == "0x0000000000000539" { print $2 }' blocks.tsv)
	second=$(awk -F'\t' -v p="$c1" '$1 == p { print $3 }' blocks.tsv)
	dec=$(printf '%u' "$second")
	echo "{\"model\": \"m\", \"block_hashes\": [\"$first\", $dec]}" > q.jsonl
	run --separate-stderr kvquery -s s.kvsnap q.jsonl
	assert_success
	assert_output '{"default":{"a":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":256,"npu_blocks":2}},"longest_matched":256}}}'
}

@test "a hash's range is checked in hex as in decimal: 2^64 and beyond refused in both, never cut to 64 bits" {
	# "0x1e9b66bae2ed2488d" was read as 0xe9b66bae2ed2488d, its decimal twin refused
	kvmatch --dump s.kvsnap | jq -r 'select(.kind == "block") | [.parent, .chain, .local] | @tsv' > blocks.tsv
	first=$(awk -F'\t' '$1 == "0x0000000000000539" { print $3 }' blocks.tsv)
	over="0x1${first#0x}"                                             # 17 significant digits
	dec=$(python3 -c "print(int('$over', 16))")
	r=$(seq -s, 1 200)                                                # a long list: read by kv_intscan_array
	printf '%s\n' "{\"model\":\"m\",\"block_hashes\":[\"$over\"]}" "{\"model\":\"m\",\"block_hashes\":[$dec]}" \
		"{\"model\":\"m\",\"block_hashes\":[$r,\"$over\"]}" "{\"model\":\"m\",\"block_hashes\":[$r,$dec]}" \
		"{\"model\":\"m\",\"seq_hashes\":[\"${over#0x}\"]}" \
		"{\"model\":\"m\",\"block_hashes\":[\"0x00000000${first#0x}\"]}" "{\"model\":\"m\",\"block_hashes\":[\"$first\"]}" > q.jsonl
	run --separate-stderr kvquery -s s.kvsnap q.jsonl
	assert_equal "$status" 65
	assert_equal "$(sed -n 1,5p <<<"$output" | sort -u)" null
	assert_equal "$(sed -n 6p <<<"$output")" "$(sed -n 7p <<<"$output")"
	assert_equal "$(jq -c '.default.a.longest_matched' <<<"${lines[5]}")" 128
	u64="block_hashes: hashes are integers from 0 to 2^64-1 or hex strings"
	assert_equal "$stderr" "kvquery: q.jsonl: line 1: block_hashes: hex string beyond 64 bits
kvquery: q.jsonl: line 2: $u64
kvquery: q.jsonl: line 3: block_hashes: hex string beyond 64 bits
kvquery: q.jsonl: line 4: $u64
kvquery: q.jsonl: line 5: block_hashes: hex string beyond 64 bits"
}

@test "two tenants and a LoRA adapter are separate partitions" {
	cat > regs2.jsonl <<-EOF
	{"instance_id": "a", "type": "vLLM", "dp_rank": 0, "block_size": 2, "modelname": "m", "tenant_id": "t1", "medium_endpoints": {"npu": "$E0"}}
	{"instance_id": "b", "type": "vLLM", "dp_rank": 0, "block_size": 2, "modelname": "m", "tenant_id": "t2", "medium_endpoints": {"npu": "$E1"}}
	EOF
	{ store $E0 1 0 xpu '"0x1"' null 1,2 2; store $E1 2 0 xpu '"0x2"' null 1,2 2; store $E0 3 0 xpu '"0x3","0x4"' null 1,2,3,4 2 ',"lora_name":"sql"'; } > ev2.jsonl
	kvmatch -q -r regs2.jsonl --log none -o s2.kvsnap ev2.jsonl
	printf '%s\n' '{"model": "m", "tenant_id": "t1", "token_ids": [1,2,3,4]}' '{"model": "m", "tenant_id": "t2", "token_ids": [1,2]}' \
		'{"model": "sql", "tenant_id": "t1", "token_ids": [1,2,3,4]}' '{"model": "m", "token_ids": [1,2]}' > q.jsonl
	run --separate-stderr kvquery -s s2.kvsnap q.jsonl
	assert_equal "$status" 65
	assert_equal "${lines[0]}" '{"t1":{"a":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":2,"npu_blocks":1}},"longest_matched":2}}}'
	assert_equal "${lines[1]}" '{"t2":{"b":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":2,"npu_blocks":1}},"longest_matched":2}}}'
	assert_equal "${lines[2]}" '{"t1":{"a":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":4,"npu_blocks":2}},"longest_matched":4}}}'
	assert_equal "${lines[3]}" 'null'
	assert_equal "$stderr" "kvquery: q.jsonl: line 4: no such model and tenant in the snapshot (kv-conductor: 404 \"no indexer for model=M tenant=T\")"
}

@test "a tenant of 300 bytes is answered whole, in answers, routes and explanations" {
	tenant=$(printf 't%.0s' $(seq 300))
	cat > regs2.jsonl <<-EOF
	{"instance_id": "a", "type": "vLLM", "dp_rank": 0, "block_size": 2, "modelname": "m", "tenant_id": "$tenant", "medium_endpoints": {"npu": "$E0"}}
	EOF
	store $E0 1 0 xpu '"0x1"' null 1,2 2 > ev2.jsonl
	kvmatch -q -r regs2.jsonl --log none -o s2.kvsnap ev2.jsonl
	echo "{\"model\": \"m\", \"tenant_id\": \"$tenant\", \"token_ids\": [1,2]}" > q.jsonl
	for how in "" --route --explain; do
		kvquery -s s2.kvsnap $how q.jsonl > "out$how.json" 2> "out$how.err"
	done
	assert_equal "$(cat out.json)" "{\"$tenant\":{\"a\":{\"DP\":{\"0\":{\"cpu_blocks\":0,\"cpu_local_blocks\":0,\"cpu_remote_blocks\":0,\"disk_blocks\":0,\"matched_tokens\":2,\"npu_blocks\":1}},\"longest_matched\":2}}}"
	assert_equal "$(cat out--route.json)" "{\"tenant\":\"$tenant\",\"instance_id\":\"a\",\"dp_rank\":0,\"score\":1,\"matched_tokens\":2,\"npu_blocks\":1,\"cpu_blocks\":0,\"disk_blocks\":0}"
	assert_equal "$(jq -r '.tenant | length' out--explain.json)" 300
	assert_equal "$(jq -r .tenant out--explain.json)" "$tenant"
	assert_equal "$(cat out*.err)" ""
}

@test "--route names the chosen worker with its score" {
	echo "[$(seq -s, 1 700)]" > q.txt
	run --separate-stderr kvquery -s s.kvsnap --route q.txt
	assert_success
	assert_output '{"tenant":"default","instance_id":"a","dp_rank":0,"score":5,"matched_tokens":640,"npu_blocks":3,"cpu_blocks":2,"disk_blocks":0}'
	run --separate-stderr kvquery -s s.kvsnap --route --weights 1,0,0 q.txt
	assert_output --partial '"score":3,'
	run --separate-stderr kvquery -s s.kvsnap --route --weights 1,x,0 q.txt
	assert_equal "$status" 64
}

@test "--explain tells where each worker stopped and why" {
	echo "[$(seq -s, 1 700)]" > q.txt
	run --separate-stderr kvquery -s s.kvsnap --explain q.txt
	assert_success
	assert_equal "$(jq -c '.workers[] | [.instance_id, .dp_rank, .matched_blocks, .stopped_at, .reason]' <<<"$output")" '["a",0,5,5,"not_in_index"]
["a",1,0,0,"held_elsewhere"]'
}

@test "--shared-pool walks cpu blocks anyone holds, split local and remote" {
	echo "[$(seq -s, 1 640)]" > q.txt
	run --separate-stderr kvquery -s s.kvsnap --shared-pool q.txt
	assert_success
	assert_output '{"default":{"a":{"DP":{"0":{"cpu_blocks":2,"cpu_local_blocks":2,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":640,"npu_blocks":3}},"longest_matched":640}}}'
}

@test "--shared-pool: every engine registered in the partition is a candidate, holding nothing yet too: a decoupled pool's blocks are credited to it" {
	cat > regs2.jsonl <<-EOF
	{"instance_id": "a", "type": "vLLM", "dp_rank": 0, "block_size": 128, "modelname": "m", "medium_endpoints": {"npu": "$E0"}}
	{"instance_id": "c", "type": "vLLM", "dp_rank": 0, "block_size": 128, "modelname": "m", "medium_endpoints": {"npu": "tcp://10.0.0.9:5557"}}
	{"instance_id": "c", "type": "vLLM", "dp_rank": 1, "block_size": 128, "modelname": "m", "medium_endpoints": {"npu": "tcp://10.0.0.9:5558"}}
	{"instance_id": "d", "type": "vLLM", "dp_rank": 0, "block_size": 128, "modelname": "other", "medium_endpoints": {"npu": "tcp://10.0.0.8:5557"}}
	{"instance_id": "kvs", "type": "Memcache", "dp_rank": 0, "block_size": 128, "endpoint": "tcp://kvs:5557", "store_backend": "memcache", "modelname": "m"}
	EOF
	# a holds three blocks in xpu and offloads them; the pool that confirms
	# them names no worker (a decoupled daemon): its own pool holder holds them
	{ store $E0 1 0 xpu '"0x1","0x2","0x3"' null "$(seq -s, 1 384)" 128
	  store $E0 2 0 cpu '"0x1","0x2","0x3"' null "$(seq -s, 1 384)" 128
	  pool 3 cpu '"0x1","0x2","0x3"' mooncake-daemon-0; } > ev2.jsonl
	kvmatch -q -r regs2.jsonl --log none -o d.kvsnap ev2.jsonl
	echo "[$(seq -s, 1 384)]" > q.txt
	run --separate-stderr kvquery -s d.kvsnap --model m --shared-pool q.txt
	assert_success
	# c holds nothing, both its ranks are credited the pool's three blocks, as remote cpu; d is another model's
	assert_output '{"default":{"a":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":384,"npu_blocks":3}},"longest_matched":384},"c":{"DP":{"0":{"cpu_blocks":3,"cpu_local_blocks":0,"cpu_remote_blocks":3,"disk_blocks":0,"matched_tokens":384,"npu_blocks":0},"1":{"cpu_blocks":3,"cpu_local_blocks":0,"cpu_remote_blocks":3,"disk_blocks":0,"matched_tokens":384,"npu_blocks":0}},"longest_matched":384}}}'
	# per worker, without --shared-pool, only what a holds counts
	assert_equal "$(kvquery -s d.kvsnap --model m q.txt | jq -c '.default | keys')" '["a"]'
	# routing and explaining weigh the same candidates
	assert_equal "$(kvquery -s d.kvsnap --model m --shared-pool --explain q.txt | jq -c '[.workers[] | "\(.instance_id)/\(.dp_rank)"]')" '["a/0","c/0","c/1"]'
	# the snapshot says whose partition each registered engine is
	assert_equal "$(kvmatch --dump d.kvsnap | jq -c 'select(.kind == "worker") | [.instance_id, .dp_rank, .partition]' | tr -d '\n')" '["a",0,0]["c",0,0]["c",1,0]["d",0,1]["mooncake-daemon-0",null,null]'
}

@test "--format table prints aligned rows for people" {
	printf '[%s]\n[1]\n' "$(seq -s, 1 640)" > q.txt
	run --separate-stderr kvquery -s s.kvsnap --format table q.txt
	assert_success
	assert_output "QUERY  INSTANCE   DP   TOKENS   NPU   CPU  DISK
1      a           0      640     3     2     0"
}

@test "bad queries: null on their line, a message with the line number, exit 65" {
	printf '%s\n' '{"model": "m", "token_ids": [1, 9223372036854775808]}' '{"token_ids": [-9223372036854775809]}' '{"token_ids": "1 2"}' \
		'{"block_size": 0, "token_ids": [1]}' '{"model": 5, "token_ids": [1]}' 'garbage' '' '{"tenant_id": "x"}' \
		'[1.5]' "$(head -c 100 /dev/urandom | tr -d '\n\0')" "[$(seq -s, 1 128)]" > q.txt
	run --separate-stderr kvquery -s s.kvsnap q.txt
	assert_equal "$status" 65
	assert_equal "${#lines[@]}" 11
	assert_equal "${#stderr_lines[@]}" 10
	for i in 0 1 2 3 4 5 6 7 8 9; do assert_equal "${lines[$i]}" null; done
	assert_equal "$(jq -c '.default.a.longest_matched' <<<"${lines[10]}")" 128
	assert_equal "${stderr_lines[0]}" "kvquery: q.txt: line 1: token_ids: token ids are integers from -2^63 to 2^63-1 (i64)"
	assert_equal "${stderr_lines[1]}" "kvquery: q.txt: line 2: token_ids: token ids are integers from -2^63 to 2^63-1 (i64)"
	assert_equal "${stderr_lines[3]}" "kvquery: q.txt: line 4: block_size: expected an integer from 1 to 1048576"
	assert_equal "${stderr_lines[2]}" "kvquery: q.txt: line 3: token_ids: expected an array"
	assert_equal "${stderr_lines[4]}" "kvquery: q.txt: line 5: model: expected a string"
	assert_equal "${stderr_lines[5]}" "kvquery: q.txt: line 6: lexical error: invalid char in json text."
	assert_equal "${stderr_lines[6]}" "kvquery: q.txt: line 7: empty query"
	assert_equal "${stderr_lines[7]}" "kvquery: q.txt: line 8: no token_ids or block_hashes"
}

@test "-j: lines parsed on threads ahead give the answers, messages and status of lines parsed in turn; a pipe is parsed in turn" {
	# lines of every length, bad ones among them, two files and a missing
	# one between them: chunks of the threads end anywhere in them
	awk 'BEGIN {
		for (i = 1; i <= 1500; i++) {
			if (i % 37 == 0) { print "{\"token_ids\": [1, 2"; continue }
			if (i % 101 == 0) { print ""; continue }
			l = "{\"model\": \"m\", \"block_size\": 128, \"token_ids\": [1"
			for (t = 2; t <= i % 7 * 100 + 1; t++) l = l "," t
			print l "]}"
		}
	}' > q1.jsonl
	printf '%s\n' "[$(seq -s, 1 20000)]" garbage "$(seq -s ' ' 1 700)" > q2.jsonl
	kvquery -j 0 -s s.kvsnap q1.jsonl missing.jsonl q2.jsonl > want.out 2> want.err && want=0 || want=$?
	assert_equal "$want" 66
	assert_equal "$(wc -l < want.out)" 1503
	assert_equal "$(grep -c null want.out)" 55
	assert_equal "$(sed -n 1p want.err)" "kvquery: q1.jsonl: line 37: parse error: premature EOF"
	assert_equal "$(grep -c . want.err)" 56
	assert_equal "$(sed -n 55p want.err)" "kvquery: missing.jsonl: No such file or directory"
	assert_equal "$(sed -n 56p want.err)" "kvquery: q2.jsonl: line 2: lexical error: invalid char in json text."
	for j in 1 2 3 8; do
		run --separate-stderr kvquery -j $j -vv -s s.kvsnap q1.jsonl missing.jsonl q2.jsonl
		assert_equal "$status" 66
		assert_equal "$output" "$(cat want.out)"
		threads=threads; [ $j = 1 ] && threads=thread
		assert_equal "${stderr_lines[1]}" "kvquery: query lines parsed ahead on $j $threads"
		assert_equal "$(printf '%s\n' "${stderr_lines[@]:2}")" "$(cat want.err)"
	done
	run --separate-stderr kvquery -j 0 -vv -s s.kvsnap q2.jsonl
	assert_equal "${stderr_lines[1]}" "kvquery: query lines parsed in turn"
	# --timing times answers to lines parsed in turn unless -j says
	run --separate-stderr kvquery --timing -vv -s s.kvsnap q2.jsonl
	assert_equal "${stderr_lines[1]}" "kvquery: query lines parsed in turn"
	run --separate-stderr kvquery --timing -j 2 -vv -s s.kvsnap q2.jsonl
	assert_equal "${stderr_lines[1]}" "kvquery: query lines parsed ahead on 2 threads"
	# a pipe is read as it comes, each line answered as soon as it is read
	run --separate-stderr bash -c 'cat q1.jsonl | kvquery -j 2 -vv -s s.kvsnap'
	assert_equal "$status" 65
	assert_equal "${stderr_lines[1]}" "kvquery: query lines parsed in turn"
	assert_equal "$output" "$(head -1500 want.out)"
}

@test "-j: a number from 0 to 64; not with --against, whose batches hold their queries" {
	for bad in -1 65 x ''; do
		run --separate-stderr kvquery -s s.kvsnap -j "$bad" /dev/null
		assert_equal "$status" 64
		assert_equal "${stderr_lines[0]}" "kvquery: --jobs: '$bad' is not a number from 0 to 64"
	done
	run --separate-stderr kvquery -s s.kvsnap -j 2 --against http://127.0.0.1:9/ /dev/null
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvquery: --jobs: --against parses each line in its turn (its batches hold the queries)"
	run --separate-stderr kvquery -s s.kvsnap --jobs 64 /dev/null
	assert_success
}

@test "a line longer than 256 MiB is skipped with its number: the queries after it keep theirs, parsed in turn or ahead" {
	{ echo "[$(seq -s, 1 640)]"; head -c 268435457 /dev/zero | tr '\0' 7; echo; echo "[$(seq -s, 1 640)]"; } > q.txt
	for j in 0 2; do
		run --separate-stderr kvquery -j $j -s s.kvsnap --format table q.txt
		assert_equal "$status" 65
		assert_equal "$stderr" "kvquery: q.txt: line 2: line longer than 256 MiB"
		assert_output "QUERY  INSTANCE   DP   TOKENS   NPU   CPU  DISK
1      a           0      640     3     2     0
3      a           0      640     3     2     0"
	done
	run --separate-stderr kvquery -s s.kvsnap q.txt
	assert_equal "${lines[1]}" null
	assert_equal "${#lines[@]}" 3
}

@test "a query of a million tokens is answered" {
	seq -s ' ' 1 1000000 > big.txt
	run --separate-stderr kvquery -s s.kvsnap big.txt
	assert_success
	assert_equal "$(jq -c '.default.a.longest_matched' <<<"$output")" 640
}

@test "a missing or corrupt snapshot: clear message, exit 66 or 65" {
	run --separate-stderr kvquery -s nothing.kvsnap
	assert_equal "$status" 66
	assert_equal "$stderr" "kvquery: nothing.kvsnap: No such file or directory"
	head -c 100 s.kvsnap > cut.kvsnap
	run --separate-stderr kvquery -s cut.kvsnap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvquery: cut.kvsnap: truncated or padded: 100 bytes, header says $(stat -c %s s.kvsnap)"
	run --separate-stderr kvquery -s ev.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvquery: ev.jsonl: not a kvsnap snapshot"
	run --separate-stderr kvquery
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvquery: no snapshot (-s FILE.kvsnap)"
	# yesterday's answers in -o survive a snapshot that cannot be read
	echo yesterday > answers.jsonl
	run --separate-stderr kvquery -s cut.kvsnap -o answers.jsonl
	assert_equal "$status" 65
	assert_equal "$(cat answers.jsonl)" yesterday
	run --separate-stderr kvquery -s nothing.kvsnap -o answers.jsonl
	assert_equal "$status" 66
	assert_equal "$(cat answers.jsonl)" yesterday
}

@test "the full pipeline from a fixture: kvdecode | kvmatch, then kvquery" {
	kvdecode "$FIX/vllm-0.9-array.kvcap" | kvmatch -q --log none -o fx.kvsnap
	run --separate-stderr kvquery -s fx.kvsnap <<< "[$(seq -s, 0 40)]"
	assert_success
	assert_output '{"default":{"10.0.0.5:5557":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":32,"npu_blocks":2}},"longest_matched":32}}}'
	kvdecode "$FIX/vllm-array-dp1.kvcap" | kvmatch -q --log none -o fx2.kvsnap
	run --separate-stderr kvquery -s fx2.kvsnap --block-size 16 <<< "[$(seq -s, 0 40)]"
	assert_success
	assert_output '{"default":{}}'
	# both engines' captures and the memcache pool's, which confirms the
	# second block on disk for both DP ranks of 10.0.0.5 (DP 1 from the
	# content it released): a prefix walk of DP 1 stops at block 0, held
	# by DP 0 only, and its disk block in the middle does not count
	cat "$FIX/vllm-0.9-array.kvcap" "$FIX/vllm-array-dp1.kvcap" "$FIX/memcache.kvcap" | kvdecode |
		kvmatch -q --log none -o fx3.kvsnap
	assert_equal "$(kvmatch --dump fx3.kvsnap | jq -c 'select(.kind == "block") | [.local, [.holders[] | "\(.dp_rank) \(.media | join("+"))"]]')" '["0xd47a8f41c833328a",["0 xpu"]]
["0xd43939178abd00db",["0 xpu+disk","1 disk"]]'
	echo "[$(seq -s, 0 40)]" > q.txt
	run --separate-stderr kvquery -s fx3.kvsnap q.txt
	assert_success
	assert_output '{"default":{"10.0.0.5:5557":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":32,"npu_blocks":2}},"longest_matched":32}}}'
	run --separate-stderr kvquery -s fx3.kvsnap --explain q.txt
	assert_success
	assert_output '{"tenant":"default","blocks":3,"block_size":16,"workers":[{"instance_id":"10.0.0.5:5557","dp_rank":0,"npu_blocks":2,"cpu_blocks":0,"disk_blocks":0,"matched_blocks":2,"stopped_at":2,"reason":"not_in_index"},{"instance_id":"10.0.0.5:5557","dp_rank":1,"npu_blocks":0,"cpu_blocks":0,"disk_blocks":0,"matched_blocks":0,"stopped_at":0,"reason":"held_elsewhere"}]}'
}

@test "--watch reloads the snapshot when kvmatch replaces it" {
	mkfifo qin
	(echo '[1]'; sleep 1; echo "[$(seq -s, 1 128)]"; sleep 0.5) > qin &
	kvquery -s s.kvsnap --watch --block-size 1 < qin > out.txt 2>&1 & pid=$!
	sleep 0.4
	{ store $E0 9 0 xpu '"0x9"' null 1 1; } > ev3.jsonl
	cat > regs3.jsonl <<-EOF
	{"instance_id": "a", "type": "vLLM", "dp_rank": 0, "block_size": 1, "modelname": "m", "medium_endpoints": {"npu": "$E0"}}
	EOF
	kvmatch -q -r regs3.jsonl --log none -o s.kvsnap ev3.jsonl
	wait_for $pid
	assert_equal "$(sed -n 1p out.txt)" '{"default":{}}'
	assert_equal "$(sed -n 2p out.txt)" '{"default":{"a":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":1,"npu_blocks":1}},"longest_matched":1}}}'
}

@test "--timing reports answer times" {
	echo "[$(seq -s, 1 640)]" > q.txt
	run --separate-stderr kvquery -s s.kvsnap --timing q.txt
	assert_success
	assert_equal "$(sed 's/[0-9.]* us/X us/g' <<<"$stderr")" "kvquery: 1 queries answered: p50 X us, p99 X us, max X us (hashing and walks)"
}

@test "kvquery --help, --version" {
	run kvquery --help
	assert_success
	assert_line --index 0 'Usage: kvquery -s FILE.kvsnap [OPTION]... [FILE]...'
	run kvquery --version
	assert_output --regexp '^kvquery [0-9.]+$'
	run --separate-stderr kvquery -s s.kvsnap --format xml
	assert_equal "$status" 64
}

# ---- the routers' own APIs: kv-conductor's serialisation, Mooncake RFC #1403 ----

# serde_json through a Value, as kv-conductor answers: compact, keys sorted
serde() { /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    print(json.dumps(json.loads(line), separators=(",", ":"), sort_keys=True))'; }

@test "the shipped sample: answers byte for byte as kv-conductor serialises them, and in RFC #1403's shape" {
	kvmatch -q --log none -r "$ROOT/share/registrations.jsonl" -o sample.kvsnap "$ROOT/share/sample.kvcap"
	for api in conductor mooncake; do
		run --separate-stderr kvquery -s sample.kvsnap --api $api "$ROOT/share/queries.jsonl"
		assert_success
		assert_equal "$output" "$(cat "$ROOT/tests/fixtures/answers/sample.$api.jsonl")"
		assert_equal "$output" "$(serde <<<"$output")"
	done
	# the benchmark's Python baseline, another implementation of the walks, agrees byte for byte
	kvmatch --dump sample.kvsnap > dump.jsonl
	/usr/bin/python3 "$ROOT/bench/baseline_query.py" dump.jsonl "$ROOT/share/queries.jsonl" base.jsonl > /dev/null
	cmp base.jsonl "$ROOT/tests/fixtures/answers/sample.conductor.jsonl"
	run --separate-stderr kvquery -s sample.kvsnap --shared-pool "$ROOT/share/queries.jsonl"
	assert_equal "$output" "$(cat "$ROOT/tests/fixtures/answers/sample.shared-pool.jsonl")"
	# the RFC answer follows from kv-conductor's by the RFC's and Dynamo's rule:
	# media cumulative (GPU <= CPU <= DISK, the largest rank), DP the rank's tokens
	/usr/bin/python3 -c '
import json, sys
bs = 64
for line in open(sys.argv[1]):
    out = {}
    for t, insts in json.loads(line).items():
        out[t] = {}
        for i, v in insts.items():
            dp = v["DP"]
            out[t][i] = {"GPU": max(d["npu_blocks"] for d in dp.values()) * bs,
                         "CPU": max(d["npu_blocks"] + d["cpu_blocks"] for d in dp.values()) * bs,
                         "DISK": max(d["matched_tokens"] for d in dp.values()),
                         "DP": {r: d["matched_tokens"] for r, d in dp.items()},
                         "longest_matched": v["longest_matched"]}
    print(json.dumps(out, separators=(",", ":"), sort_keys=True))' "$ROOT/tests/fixtures/answers/sample.conductor.jsonl" > derived.jsonl
	run cat derived.jsonl
	assert_output "$(cat "$ROOT/tests/fixtures/answers/sample.mooncake.jsonl")"
}

@test "a fixture's snapshot: golden answers in both shapes; a registered model with no hits is {\"<tenant>\": {}}, exit 0" {
	cat > fx.jsonl <<-EOF
	{"instance_id": "w", "type": "vLLM", "dp_rank": 0, "block_size": 16, "modelname": "m", "medium_endpoints": {"npu": "tcp://10.0.0.5:5557"}}
	{"instance_id": "idle", "type": "vLLM", "dp_rank": 0, "block_size": 16, "modelname": "quiet", "medium_endpoints": {"npu": "tcp://10.0.0.9:5557"}}
	EOF
	kvmatch -q --log none -r fx.jsonl -o fx.kvsnap "$ROOT/tests/fixtures/vllm-0.9-array.kvcap"
	printf '%s\n' "{\"model\": \"m\", \"token_ids\": [$(seq -s, 0 40)]}" \
		"{\"model\": \"quiet\", \"token_ids\": [$(seq -s, 0 40)]}" > q.jsonl
	run --separate-stderr kvquery -s fx.kvsnap q.jsonl
	assert_success
	assert_output '{"default":{"w":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":32,"npu_blocks":2}},"longest_matched":32}}}
{"default":{}}'
	run --separate-stderr kvquery -s fx.kvsnap --api mooncake q.jsonl
	assert_success
	assert_output '{"default":{"w":{"CPU":32,"DISK":32,"DP":{"0":32},"GPU":32,"longest_matched":32}}}
{"default":{}}'
	# never registered nor seen: kv-conductor's 404 has no JSON-lines form
	echo '{"model": "nobody", "token_ids": [1]}' > q.jsonl
	run --separate-stderr kvquery -s fx.kvsnap q.jsonl
	assert_equal "$status" 65
	assert_output null
}

@test "DP keys are in serde's string order: \"10\" before \"2\"" {
	for dp in 2 10; do store "tcp://10.0.0.7:$((6000 + dp))" 1 $dp xpu '"0x1"' null "$(seq -s, 1 128)" 128; done > ev2.jsonl
	kvmatch -q --log none -o dp.kvsnap ev2.jsonl
	run --separate-stderr kvquery -s dp.kvsnap <<<"[$(seq -s, 1 128)]"
	assert_success
	assert_output '{"default":{"10.0.0.7:6000":{"DP":{"10":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":128,"npu_blocks":1},"2":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":128,"npu_blocks":1}},"longest_matched":128}}}'
}

@test "DP keys in serde's string order for instances of many ranks: 12 (sorted in place) and 20 (qsort)" {
	for n in 12 20; do
		for dp in $(seq 0 $((n - 1))); do store "tcp://10.0.0.7:$((6000 + dp))" 1 $dp xpu '"0x1"' null "$(seq -s, 1 128)" 128; done > ev$n.jsonl
		kvmatch -q --log none -o dp$n.kvsnap ev$n.jsonl
		dp='{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":128,"npu_blocks":1}'
		keys=$(seq 0 $((n - 1)) | LC_ALL=C sort)
		want=$(for k in $keys; do printf ',"%s":%s' "$k" "$dp"; done)
		run --separate-stderr kvquery -s dp$n.kvsnap <<<"[$(seq -s, 1 128)]"
		assert_success
		assert_output "{\"default\":{\"10.0.0.7:6000\":{\"DP\":{${want#,}},\"longest_matched\":128}}}"
		want=$(for k in $keys; do printf ',"%s":128' "$k"; done)
		run --separate-stderr kvquery -s dp$n.kvsnap --api mooncake <<<"[$(seq -s, 1 128)]"
		assert_success
		assert_output "{\"default\":{\"10.0.0.7:6000\":{\"CPU\":128,\"DISK\":128,\"DP\":{${want#,}},\"GPU\":128,\"longest_matched\":128}}}"
	done
}

@test "token ids are kv-conductor's i64, hashed as u32 as it casts them" {
	printf '{"token_ids": [%s]}\n{"token_ids": [%s]}\n' "$(seq -s, 1 128)" "$(seq -s, 4294967297 4294967424)" > q.jsonl
	run --separate-stderr kvquery -s s.kvsnap q.jsonl
	assert_success
	assert_equal "${lines[0]}" "${lines[1]}"
	assert_equal "$(jq -c '.default.a.longest_matched' <<<"${lines[1]}")" 128
}

@test "token and hash lists, short or long: each bad element refused with its message, wherever it stands" {
	# 200 elements first: a long list is read 64 bytes at a time (kv_intscan_array),
	# and must still be refused as yajl and the callbacks refuse it
	r=$(seq -s, 1 200)
	printf '%s\n' '[01]' '[1,]' '[1e3]' '[-0,1]' "{\"token_ids\":[$r,01]}" "{\"token_ids\":[$r,9223372036854775808]}" \
		"{\"token_ids\":[$r,1.0]}" "{\"token_ids\":[$r,,1]}" "{\"token_ids\":[$r,\"1\"]}" "{\"token_ids\":[$r,[1]]}" \
		"{\"token_ids\":[$r" "{\"block_hashes\":[$r,18446744073709551616]}" "{\"block_hashes\":[$r,-1]}" \
		"{\"block_hashes\":[$r,\"0x\"]}" "{\"block_hashes\":[$r,\"0x$(printf 'f%.0s' $(seq 65))\"]}" \
		"{\"block_hashes\":[$r,\"0x1\\u0030\"]}" "{\"token_ids\":[1],\"token_ids\":[$r]}" \
		"{\"block_hashes\":[$r],\"seq_hashes\":[1]}" "[$(seq -s ', ' 1 200)]" "[ $r ]" > q.txt
	run --separate-stderr kvquery -s s.kvsnap q.txt
	assert_equal "$status" 65
	assert_equal "${#lines[@]}" 20
	for i in 0 1 2 4 5 6 7 8 9 10 11 12 13 14 16 17; do assert_equal "${lines[$i]}" null; done
	assert_equal "${lines[3]}" '{"default":{}}'
	assert_equal "${lines[15]}" '{"default":{}}'
	assert_equal "$(jq -c '.default.a.longest_matched' <<<"${lines[18]}")" 128
	assert_equal "${lines[19]}" "${lines[18]}"
	i64="token_ids: token ids are integers from -2^63 to 2^63-1 (i64)"
	u64="block_hashes: hashes are integers from 0 to 2^64-1 or hex strings"
	assert_equal "$stderr" "kvquery: q.txt: line 1: parse error: after array element, I expect ',' or ']'
kvquery: q.txt: line 2: parse error: unallowed token at this point in JSON text
kvquery: q.txt: line 3: $i64
kvquery: q.txt: line 5: parse error: after array element, I expect ',' or ']'
kvquery: q.txt: line 6: $i64
kvquery: q.txt: line 7: $i64
kvquery: q.txt: line 8: parse error: unallowed token at this point in JSON text
kvquery: q.txt: line 9: $i64
kvquery: q.txt: line 10: token_ids: nested values
kvquery: q.txt: line 11: parse error: premature EOF
kvquery: q.txt: line 12: $u64
kvquery: q.txt: line 13: $u64
kvquery: q.txt: line 14: block_hashes: empty hex string
kvquery: q.txt: line 15: block_hashes: hex string beyond 64 bits
kvquery: q.txt: line 17: token_ids: given twice
kvquery: q.txt: line 18: seq_hashes: given twice"
}

@test "a string full of '[' is read once: a 1 MB model name of them is answered at once" {
	# yajl is fed the line in pieces cut at '[' (for the token lists); a cut
	# inside a string would have it read the string again from its start
	printf '{"model":"%s","token_ids":[1]}\n' "$(head -c 1000000 /dev/zero | tr '\0' '[')" > q.txt
	run --separate-stderr timeout -s KILL 30 kvquery -s s.kvsnap q.txt
	assert_equal "$status" 65
	assert_output null
	assert_regex "$stderr" '^kvquery: q.txt: line 1: no such model and tenant in the snapshot'
}

@test "\v and \f are no JSON blanks: refused outside strings as any stray control character (yajl took them)" {
	printf '{"token_ids":\v[1]}\n{"token_ids":[1,\f2]}\n[1]\f\n{"model":"a\\\\"\v,"token_ids":[1]}\n{"model":"a\vb","token_ids":[1]}\n{"model":"m",\t"token_ids":[1, 2]\r}\n' > q.txt
	run --separate-stderr kvquery -s s.kvsnap q.txt
	assert_equal "$status" 65
	assert_equal "$output" 'null
null
null
null
null
{"default":{}}'
	assert_equal "$stderr" "kvquery: q.txt: line 1: lexical error: invalid char in json text.
kvquery: q.txt: line 2: lexical error: invalid char in json text.
kvquery: q.txt: line 3: parse error: trailing garbage
kvquery: q.txt: line 4: lexical error: invalid char in json text.
kvquery: q.txt: line 5: lexical error: invalid character inside string."
}

@test "RFC #1403 queries: instance_id answers one instance; seq_hashes (alias block_hash) are the engines' hashes" {
	printf '%s\n' "{\"model\": \"m\", \"block_size\": 128, \"token_ids\": [$(seq -s, 1 700)], \"instance_id\": \"a\"}" \
		"{\"model\": \"m\", \"token_ids\": [$(seq -s, 1 700)], \"instance_id\": \"zz\"}" \
		'{"model": "m", "seq_hashes": [1, 2, 3, 4, 5, 99]}' '{"model": "m", "block_hash": ["0x1", "0x2"]}' \
		'{"model": "m", "seq_hashes": [2, 3]}' > q.jsonl
	run --separate-stderr kvquery -s s.kvsnap --api mooncake q.jsonl
	assert_success
	assert_output '{"default":{"a":{"CPU":640,"DISK":640,"DP":{"0":640},"GPU":384,"longest_matched":640}}}
{"default":{}}
{"default":{"a":{"CPU":640,"DISK":640,"DP":{"0":640},"GPU":384,"longest_matched":640}}}
{"default":{"a":{"CPU":256,"DISK":256,"DP":{"0":256},"GPU":256,"longest_matched":256}}}
{"default":{}}'
}

@test "a partition that differs only in LoRA or salt is not matched" {
	cat > lora.jsonl <<-EOF
	{"endpoint": "$E0", "type": "vLLM", "modelname": "m", "lora_name": "sql", "instance_id": "a", "block_size": 4, "dp_rank": 0}
	{"endpoint": "$E1", "type": "vLLM", "modelname": "m", "lora_name": "sql", "instance_id": "b", "block_size": 4, "dp_rank": 0, "additionalsalt": "w8a8"}
	{"endpoint": "tcp://10.0.0.6:5557", "type": "vLLM", "modelname": "m", "instance_id": "c", "block_size": 4, "dp_rank": 0}
	EOF
	{ store $E0 1 0 xpu '"0x1"' null 1,2,3,4 4; store $E1 2 0 xpu '"0x2"' null 1,2,3,4 4; store tcp://10.0.0.6:5557 3 0 xpu '"0x3"' null 1,2,3,4 4; } > ev3.jsonl
	kvmatch -q --log none -r lora.jsonl -o lora.kvsnap ev3.jsonl
	printf '{"model": "m", "token_ids": [1, 2, 3, 4]%s}\n' ', "lora_name": "sql"' ', "lora_name": "sql", "cache_salt": "w8a8"' '' \
		', "lora_name": "sql", "cache_salt": "int4"' ', "lora_name": "other"' > q.jsonl
	run --separate-stderr kvquery -s lora.kvsnap --api mooncake q.jsonl
	assert_equal "$status" 65
	assert_equal "${lines[0]}" '{"default":{"a":{"CPU":4,"DISK":4,"DP":{"0":4},"GPU":4,"longest_matched":4}}}'
	assert_equal "${lines[1]}" '{"default":{"b":{"CPU":4,"DISK":4,"DP":{"0":4},"GPU":4,"longest_matched":4}}}'
	assert_equal "${lines[2]}" '{"default":{"c":{"CPU":4,"DISK":4,"DP":{"0":4},"GPU":4,"longest_matched":4}}}'
	assert_equal "${lines[3]}" null
	assert_equal "${lines[4]}" null
}

@test "--api: a bad value is a usage error" {
	run --separate-stderr kvquery -s s.kvsnap --api dynamo
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvquery: --api: 'dynamo' is not conductor or mooncake"
}

@test "--hash rfc1403[:SEED]: token queries hashed by RFC #1403's standard, checked against python3-xxhash" {
	# the engines of partition m publish the RFC's sequence hashes (computed
	# here by python3-xxhash, an independent implementation), seed 1337
	/usr/bin/python3 -c '
import json, struct, xxhash
def rfc(tokens, bs, seed):
    out = []
    for i in range(0, len(tokens) - len(tokens) % bs, bs):
        local = xxhash.xxh3_64_intdigest(struct.pack("<%dI" % bs, *tokens[i:i + bs]), seed)
        out.append(local if not out else xxhash.xxh3_64_intdigest(struct.pack("<QQ", out[-1], local), seed))
    return out
tokens = list(range(1, 13))
print(json.dumps({"src": "tcp://10.0.0.5:5557", "recv_ns": 1000000000, "seq": 1, "format": "vllm", "dp_rank": 0,
                  "type": "stored", "medium": "xpu", "block_hashes": ["0x%016x" % h for h in rfc(tokens, 4, 1337)],
                  "parent": None, "token_ids": tokens, "block_size": 4}))' > rfc.jsonl
	kvmatch -q --log none -o rfc.kvsnap rfc.jsonl
	echo "[$(seq -s, 1 14)]" > q.txt
	run --separate-stderr kvquery -s rfc.kvsnap --hash rfc1403 --api mooncake q.txt
	assert_success
	assert_output '{"default":{"10.0.0.5:5557":{"CPU":12,"DISK":12,"DP":{"0":12},"GPU":12,"longest_matched":12}}}'
	run --separate-stderr kvquery -s rfc.kvsnap --hash rfc1403:1337 q.txt
	assert_equal "$(jq -c '.default."10.0.0.5:5557".longest_matched' <<<"$output")" 12
	# another seed names other hashes: nothing the engines published
	run --separate-stderr kvquery -s rfc.kvsnap --hash rfc1403:7 q.txt
	assert_success
	assert_output '{"default":{}}'
	# engines that do not follow the standard (the setup's): only kv-conductor's chain finds them
	echo "[$(seq -s, 1 256)]" > q2.txt
	run --separate-stderr kvquery -s s.kvsnap --hash rfc1403 q2.txt
	assert_output '{"default":{}}'
	run --separate-stderr kvquery -s s.kvsnap --hash conductor q2.txt
	assert_equal "$(jq -c '.default.a.longest_matched' <<<"$output")" 256
	run --separate-stderr kvquery -s s.kvsnap --hash rfc1403:x q2.txt
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvquery: --hash: 'rfc1403:x' is not conductor, dynamo, rfc1403 or rfc1403:SEED"
}

# live OPTION...: kvquery -s s.kvsnap OPTION... in the background ($pid),
# its queries written by ask through the fifo qin, answers in out.txt.
live() {
	mkfifo qin
	kvquery -s s.kvsnap "$@" < qin > out.txt 2> err.txt & pid=$!
	exec 5> qin
}
# ask QUERY N: sends a query and waits (at most 10 s) for the Nth answer.
ask() {
	echo "$1" >&5
	local i=0
	while [ "$(grep -c . out.txt)" -lt "$2" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
}
# A snapshot of the same shape and size as s.kvsnap, of other tokens.
other_snapshot() {
	{ store $E0 1 0 xpu '"0x7","0x8","0x9"' null "$(seq -s, 1001 1384)" 128
	  store $E0 2 0 cpu '"0xa","0xb"' '"0x9"' "$(seq -s, 1385 1640)" 128
	  pool 3 cpu '"0xa","0xb"' 10.0.0.5; } > ev2.jsonl
	kvmatch -q -r regs.jsonl --log none -o "$1" ev2.jsonl
	assert_equal "$(stat -c %s "$1")" "$(stat -c %s s.kvsnap)"
}
A='{"default":{"a":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":384,"npu_blocks":3}},"longest_matched":384}}}'

@test "a snapshot emptied or rewritten in place under kvquery: answers go on from the copy it loaded" {
	# it was mapped: SIGBUS, or other bytes under checks already passed
	other_snapshot b.kvsnap
	live --block-size 128
	ask "[$(seq -s, 1 384)]" 1
	: > s.kvsnap
	ask "[$(seq -s, 1 384)]" 2
	cp b.kvsnap s.kvsnap
	ask "[$(seq -s, 1 384)]" 3
	exec 5>&-
	wait_for $pid
	assert_equal "$status" 0
	assert_equal "$(sort -u out.txt)" "$A"
	assert_equal "$(grep -c . out.txt)" 3
	[ ! -s err.txt ]
}

@test "--watch: an emptied snapshot is refused and the copy loaded kept; a same-size rewrite in place is seen" {
	other_snapshot b.kvsnap
	touch -r s.kvsnap stamp
	live --block-size 128 --watch
	ask "[$(seq -s, 1 384)]" 1
	: > s.kvsnap
	ask "[$(seq -s, 1 384)]" 2
	# the same size, the same inode, and the old mtime put back: only ctime tells
	cp b.kvsnap s.kvsnap
	touch -r stamp s.kvsnap
	ask "[$(seq -s, 1001 1384)]" 3
	exec 5>&-
	wait_for $pid
	assert_equal "$status" 0
	assert_equal "$(sed -n 1p out.txt)" "$A"
	assert_equal "$(sed -n 2p out.txt)" "$A"
	assert_equal "$(sed -n 3p out.txt)" "$A"
	assert_equal "$(cat err.txt)" "kvquery: s.kvsnap: empty file (keeping the snapshot loaded before)"
}

@test "--watch: a fifo or a link to a device put in the snapshot's place is refused at once, the copy loaded kept" {
	# the reload opened a fifo and waited for a writer that never came, or
	# read /dev/zero until memory ran out
	other_snapshot b.kvsnap
	mknod zero c 1 5
	live --block-size 128 --watch
	ask "[$(seq -s, 1 384)]" 1
	mv s.kvsnap a.kvsnap
	mkfifo s.kvsnap
	ask "[$(seq -s, 1 384)]" 2
	rm s.kvsnap
	ln -s zero s.kvsnap
	ask "[$(seq -s, 1 384)]" 3
	# a snapshot renamed over it, as kvmatch does, is taken again
	cp b.kvsnap new.kvsnap
	mv new.kvsnap s.kvsnap
	ask "[$(seq -s, 1001 1384)]" 4
	exec 5>&-
	wait_for $pid
	assert_equal "$status" 0
	assert_equal "$(sed -n 1,3p out.txt | sort -u)" "$A"
	assert_equal "$(sed -n 4p out.txt)" "$A"
	assert_equal "$(grep -c . out.txt)" 4
	assert_equal "$(cat err.txt)" "kvquery: s.kvsnap: not a regular file (a watched snapshot is replaced by renaming one over it) (keeping the snapshot loaded before)
kvquery: s.kvsnap: not a regular file (a watched snapshot is replaced by renaming one over it) (keeping the snapshot loaded before)"
}

@test "-s of a device, of \`yes\` or of a pipe that never ends: refused at the header, at once; SIGTERM ends a load that waits" {
	# they were read whole before the header was looked at: without bound
	mknod zero c 1 5
	echo "[$(seq -s, 1 384)]" > q.jsonl
	run --separate-stderr timeout 10 kvquery -s zero q.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvquery: zero: not a kvsnap snapshot"
	run --separate-stderr timeout 10 kvquery -s <(yes) q.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvquery: /dev/fd/63: not a kvsnap snapshot"
	# the header and table of a good snapshot, then nothing: a writer that
	# stalls; SIGTERM ends the load (status 0, as after any SIGTERM)
	mkfifo slow
	{ head -c 1000 s.kvsnap; sleep 30; } > slow & writer=$!
	kvquery -s slow q.jsonl > out 2> err & pid=$!
	signals_ready $pid
	has_open $pid slow
	kill -TERM $pid
	wait_for $pid 5
	stop_bg $writer
	assert_equal "$status" 0
	assert_equal "$(cat err)" "kvquery: slow: loading stopped by a signal"
	[ ! -s out ]
}

@test "-s reads a pipe into memory; a directory cannot be opened (66)" {
	echo "[$(seq -s, 1 384)]" > q.jsonl
	run --separate-stderr kvquery --block-size 128 -s <(cat s.kvsnap) q.jsonl
	assert_success
	assert_output "$A"
	run --separate-stderr kvquery --block-size 128 -s /dev/stdin q.jsonl < s.kvsnap
	assert_success
	assert_output "$A"
	run --separate-stderr kvquery -s "$T" q.jsonl
	assert_equal "$status" 66
	assert_equal "$stderr" "kvquery: $T: Is a directory"
	run --separate-stderr kvquery -s <(head -c 100 s.kvsnap) q.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvquery: /dev/fd/63: truncated or padded: 100 bytes, header says $(stat -c %s s.kvsnap)"
}

@test "an input that is a directory cannot be opened (66), as in every program; the other inputs are answered" {
	# it was read as an empty file with a message, and the exit status 0
	echo "[$(seq -s, 1 384)]" > q.jsonl
	mkdir d
	run --separate-stderr kvquery --block-size 128 -s s.kvsnap q.jsonl d q.jsonl
	assert_equal "$status" 66
	assert_equal "$stderr" "kvquery: d: Is a directory"
	assert_equal "${#lines[@]}" 2
	assert_equal "${lines[0]}" "$A"
	assert_equal "${lines[1]}" "$A"
	# alone, it leaves -o as it was, as a missing input does (outputs.bats)
	echo yesterday > out.jsonl
	run --separate-stderr kvquery -s s.kvsnap -o out.jsonl d
	assert_equal "$status" 66
	assert_equal "$(cat out.jsonl)" yesterday
}

@test "--format table: a 700-byte instance id with terminal escapes is shown whole, its controls as '?'" {
	# rows were formatted into 512 bytes and snprintf's would-be length
	# written: stack bytes on stdout; and ESC, BEL reached the terminal
	id="$(printf 'x\033]0;pwned\007%.0s' $(seq 1 70))"
	shown="$(printf 'x?]0;pwned?%.0s' $(seq 1 70))"
	jq -nc --arg id "$id" --arg e "$E0" '{instance_id: $id, type: "vLLM", dp_rank: 0, block_size: 128, modelname: "m", medium_endpoints: {npu: $e}}' > long.jsonl
	store $E0 1 0 xpu '"0x1","0x2","0x3"' null "$(seq -s, 1 384)" 128 > ev1.jsonl
	kvmatch -q -r long.jsonl --log none -o long.kvsnap ev1.jsonl
	echo "[$(seq -s, 1 384)]" > q.jsonl
	for opts in "" --route --explain --shared-pool; do
		run --separate-stderr kvquery -s long.kvsnap --format table $opts q.jsonl
		assert_success
		assert_equal "${#lines[@]}" 2
		[[ ${lines[1]} == "1      $shown "* ]]
		[ "$(printf '%s' "$output" | tr -d '\n' | LC_ALL=C tr -d ' -~' | wc -c)" = 0 ]
	done
	assert_equal "${lines[1]}" "1      $shown    0      384     3     0     0     0     0"
}

@test "several -s: shards with disjoint partitions answer as one snapshot of everything; shared partitions refused" {
	two_models 20
	kvmatch -q -r regs.jsonl --log none -o a.kvsnap alpha.kvcap
	kvmatch -q -r regs.jsonl --log none -o b.kvsnap b.kvcap
	kvmatch -q -r regs.jsonl --log none -o all.kvsnap alpha.kvcap b.kvcap
	# both registered partitions in each shard: only one holds blocks, and it answers
	assert_equal "$(kvmatch --dump a.kvsnap | jq -r 'select(.kind == "partition") | "\(.model) \(.blocks > 0)"')" "alpha true
beta false"
	kvquery -s all.kvsnap queries.jsonl > one.out
	assert_equal "$(grep -c longest_matched one.out)" 40
	run kvquery -s b.kvsnap -s a.kvsnap queries.jsonl
	assert_success
	assert_equal "$output" "$(cat one.out)"
	run kvquery -s a.kvsnap -s b.kvsnap --route --format table queries.jsonl
	assert_equal "$output" "$(kvquery -s all.kvsnap --route --format table queries.jsonl)"
	# a query that names no model: only a single partition over all the shards would do
	run --separate-stderr kvquery -s a.kvsnap -s b.kvsnap <<<'[1,2,3]'
	assert_equal "$status" 65
	assert_equal "$stderr" "kvquery: stdin: line 1: no model in the query, no --model, and the snapshot holds several partitions"
	run --separate-stderr kvquery -s a.kvsnap -s all.kvsnap queries.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvquery: all.kvsnap: partition alpha/default is in a.kvsnap too: shards must hold disjoint partitions"
	assert_equal "$output" ""
}

@test "a snapshot of 1 MiB and more: the engine hashes are read at the first line that needs them, from the file opened at load" {
	synthcap -n 1000 -e 1 -b 32 -s 4 > big.kvcap
	kvmatch -q --log none -o big.kvsnap big.kvcap
	[ "$(stat -c %s big.kvsnap)" -ge 1048576 ] # read in parts (kvsnap(5))
	root=$(kvmatch --dump big.kvsnap | jq -r 'select(.kind == "block" and .parent == "0x0000000000000539") | .chain' | head -1)
	eh=$(kvmatch --dump big.kvsnap | jq -r --arg c "$root" 'select(.kind == "engine_hash" and .chain == $c) | .hash')
	echo "{\"model\": \"default\", \"seq_hashes\": [\"$eh\"]}" > seq.jsonl
	echo "{\"model\": \"default\", \"token_ids\": [1, 2, 3, 4]}" > tok.jsonl
	want='{"default":{"10.0.0.0:5557":{"CPU":16,"DISK":16,"DP":{"0":16},"GPU":16,"longest_matched":16}}}'
	run --separate-stderr kvquery -s big.kvsnap --api mooncake seq.jsonl
	assert_success
	assert_output "$want"
	run --separate-stderr kvquery -s /dev/stdin --api mooncake seq.jsonl < big.kvsnap
	assert_success
	assert_output "$want"
	# EHASHES (section 13) damaged in place after the load: the line that
	# needs it is refused, 65, and the others answered from what was read
	off=$(od -An -tu8 -j $((32 + 12 * 32 + 8)) -N8 big.kvsnap | tr -d ' ')
	mkfifo in
	kvquery -v -s big.kvsnap --api mooncake in > out 2> err &
	pid=$!
	exec 4> in
	for ((i = 0; i < 200; i++)); do grep -q 'loaded and checked' err && break; sleep 0.05; done
	printf '\xff' | dd of=big.kvsnap bs=1 seek=$((off + 8)) conv=notrunc status=none
	cat tok.jsonl seq.jsonl tok.jsonl >&4
	exec 4>&-
	wait $pid && status=0 || status=$?
	assert_equal "$status" 65
	assert_equal "$(sed -n 2p err)" "kvquery: in: line 2: big.kvsnap: changed since it was loaded: section 13 checksum mismatch (corrupt file)"
	assert_equal "$(sed -n 2p out)" null
	assert_equal "$(sed -n 1p out)" "$(sed -n 3p out)"
	assert_equal "$(wc -l < out)" 3
	# a new file renamed over the path: the one opened is read
	kvmatch -q --log none -o big2.kvsnap big.kvcap
	kvquery -v -s big2.kvsnap --api mooncake in > out 2> err &
	pid=$!
	exec 4> in
	for ((i = 0; i < 200; i++)); do grep -q 'loaded and checked' err && break; sleep 0.05; done
	mv big.kvsnap big2.kvsnap
	cat seq.jsonl >&4
	exec 4>&-
	wait $pid && status=0 || status=$?
	assert_equal "$status" 0
	assert_equal "$(cat out)" "$want"
}
