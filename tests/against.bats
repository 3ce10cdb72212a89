#!/usr/bin/env bats
# kvquery --against: a running router asked each query too, every difference
# classified and shown with its evidence.  The router is routerd
# (tests/helpers/routerd.py): an index of its own, fed by the same event
# lines, answering in kv-conductor's (or RFC #1403's) exact serialisation,
# with one switch per kv-conductor mechanism.  Every router is started on a
# free port of 127.0.0.1, waited for at most 30 s, and lives at most 60 s.
load helper

teardown() { stop_routers; }

# scenario NAME: tests/helpers/scenario.py's events, registrations and
# queries in $T/NAME, and the snapshot kvmatch makes of the events.
scenario() {
	/usr/bin/python3 "$ROOT/tests/helpers/scenario.py" "$1" "$T/$1"
	kvmatch -q --log none -r "$T/$1/regs.jsonl" -o "$T/$1/snap.kvsnap" "$T/$1/events.jsonl"
	S=$T/$1
}

# The primary differences of kvquery's lines: "instance dp field router kvtools class".
primary() {
	jq -r '.differences[]? | select(.follows == null) | "\(.instance) \(.dp) \(.field) \(.router) \(.kvtools) \(.class)"' "$@"
}

# The evidence of the first difference: "role type medium src seq" a line.
evidence() {
	jq -r 'first(.differences[]? | select(.follows == null)) | .evidence[] | "\(.role) \(.type) \(.medium) \(.src) \(.seq)"' "$@"
}

# kvgen clusters with a memcache pool and with a Mooncake pool (24 requests
# of the short trace, 4 nodes of 2 ranks, block size 32), made once for the
# file: their capture, event lines, registrations, queries and snapshot.
setup_file() {
	local d=$BATS_FILE_TMPDIR pool
	for pool in memcache mooncake; do
		set -- -q --workers 4 --dp 2 --block-size 32 --capacity 120 --pool $pool --pool-capacity 500 --limit 24
		kvgen "$@" --registrations "$d/$pool.regs" --queries "$d/$pool.q" -o "$d/$pool.kvcap" \
			"$ROOT/share/traces/conversation-300.jsonl"
		kvgen "$@" -n --queries-by-hash "$d/$pool.qh" "$ROOT/share/traces/conversation-300.jsonl"
		kvdecode "$d/$pool.kvcap" > "$d/$pool.jsonl"
		kvmatch -q --log none -r "$d/$pool.regs" -o "$d/$pool.kvsnap" "$d/$pool.kvcap"
	done
	kvdecode "$ROOT/share/sample.kvcap" > "$d/sample.jsonl"
	kvmatch -q --log none -r "$ROOT/share/registrations.jsonl" -o "$d/sample.kvsnap" "$ROOT/share/sample.kvcap"
}

# ---- agreement and the shipped sample ------------------------------------

@test "the sample: a router fed the same events agrees on every query (exit 0)" {
	D=$BATS_FILE_TMPDIR
	start_router -r "$ROOT/share/registrations.jsonl" --events "$D/sample.jsonl"
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against "$URL" --events "$D/sample.jsonl" \
		"$ROOT/share/queries.jsonl"
	assert_equal "$status" 0
	assert_output "$(for i in 1 2 3 4 5; do echo "{\"query\":$i,\"status\":\"agree\"}"; done)"
	assert_equal "$stderr" "kvquery: $URL: 5 queries: 5 agree, 0 differ, 0 not answered by the router"
}

@test "the sample against kv-conductor's behaviour: 5 differences, all offload placeholders (exit 1)" {
	D=$BATS_FILE_TMPDIR
	start_router --conductor -r "$ROOT/share/registrations.jsonl" --events "$D/sample.jsonl"
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against "$URL" --events "$ROOT/share/sample.kvcap" \
		"$ROOT/share/queries.jsonl"
	assert_equal "$status" 1
	assert_equal "${#lines[@]}" 5
	assert_equal "${stderr_lines[0]}" "kvquery: $URL: 5 queries: 0 agree, 5 differ, 0 not answered by the router"
	assert_equal "${stderr_lines[1]}" "kvquery: 5 differences: offload_placeholder 5"
	# query 1: node0/0's 24 pool blocks, the placeholder and the pool's store named
	first=${lines[0]}
	assert_equal "$(primary <<<"$first")" 'node0 0 cpu_blocks 0 24 offload_placeholder'
	assert_equal "$(evidence <<<"$first")" "offload_placeholder stored cpu tcp://10.0.0.1:5558 6
pool_store stored cpu tcp://kvs-master:5557 26"
	assert_equal "$(jq -c '.differences[0].blocks[0] | [.position, .engine_hashes, .held]' <<<"$first")" \
		'[8,["0x16daeebb9452be36"],["node0/0 cpu","node0/1 xpu+cpu"]]'
}

# ---- kvgen clusters --------------------------------------------------------

# cluster POOL ROUTERD-ARGS... -- KVQUERY-ARGS...: every query of the cluster
# compared; the JSON lines in out.jsonl, the summary in err.
cluster() {
	local pool=$1 D=$BATS_FILE_TMPDIR
	shift
	local r=()
	while [ "$1" != -- ]; do r+=("$1"); shift; done
	shift
	start_router -r "$D/$pool.regs" --events "$D/$pool.jsonl" "${r[@]}"
	kvquery -s "$D/$pool.kvsnap" --against "$URL" --events "$D/$pool.kvcap" "$@" "$D/$pool.q" > out.jsonl 2> err &&
		status=0 || status=$?
	# every query compared, one line each, and the summary is what the lines say
	assert_equal "$(wc -l < out.jsonl)" 24
	assert_equal "$(jq -r .query out.jsonl | tr '\n' ' ')" "$(seq -s ' ' 1 24) "
	local lines summary
	lines=$(jq -r '.differences[]? | select(.follows == null) | .class' out.jsonl | sort | uniq -c |
		awk '{ print $2, $1 }')
	summary=$(sed -n 's/^kvquery: [0-9]* differences: //p' err | tr ' ' '\n' | paste -d' ' - - | sort)
	assert_equal "$summary" "$lines"
}

@test "a memcache cluster: a router with kvmatch's rules agrees on all 24 queries" {
	cluster memcache --
	assert_equal "$status" 0
	assert_equal "$(cat err)" "kvquery: $URL: 24 queries: 24 agree, 0 differ, 0 not answered by the router"
}

@test "a memcache cluster against kv-conductor 5246d49: every difference explained, counts exact" {
	cluster memcache --conductor --
	assert_equal "$status" 1
	assert_equal "$(sed -n 1p err)" "kvquery: $URL: 24 queries: 0 agree, 24 differ, 0 not answered by the router"
	assert_equal "$(sed -n 2p err)" "kvquery: 148 differences: offload_placeholder 52 gpu_removal_swallowed 96"
	# compared with --shared-pool, as 5246d49 walks: more pool blocks, the same classes
	cluster memcache --conductor -- --shared-pool
	assert_equal "$status" 1
	assert_equal "$(sed -n 2p err)" "kvquery: 204 differences: offload_placeholder 108 gpu_removal_swallowed 96"
}

@test "a Mooncake cluster against kv-conductor 5246d49: batches with a hash >= 2^63 lost, counts exact" {
	cluster mooncake --conductor --
	assert_equal "$status" 1
	assert_equal "$(sed -n 2p err)" "kvquery: 148 differences: gpu_removal_swallowed 96 mooncake_signed_hash 52"
	# the dropped batch's event is the evidence
	run jq -r '.differences[] | select(.class == "mooncake_signed_hash" and .follows == null) | .evidence[0] |
		"\(.role) \(.format) \(.type) \(.signed_batch)"' out.jsonl
	assert_equal "$(sort -u <<<"$output")" 'pool_store_dropped mooncake stored true'
}

@test "the walk: a router walking ownership-blind is named, and kvquery says which mode to choose" {
	cluster memcache --walk shared --
	assert_equal "$status" 1
	assert_equal "$(sed -n 2p err)" "kvquery: 60 differences: walk_mode 60"
	assert_equal "$(sed -n 3p err)" "kvquery: 60 of 60 differences are what kvquery answers with --shared-pool: the router walks the lower tiers as kv-conductor does from 5246d49 on (ownership-blind); compare with --shared-pool"
	cluster memcache --walk shared -- --shared-pool
	assert_equal "$status" 0
	# and the other way: kv-conductor before 5246d49 (4 fields a rank) against --shared-pool
	class_case walk --walk own -- --shared-pool
	assert_equal "$status" 1
	assert_equal "$(primary <<<"$out")" 'nodeB 0 cpu_blocks 0 2 walk_mode'
	run --separate-stderr kvquery -s "$S/snap.kvsnap" --against "$URL" --events "$S/events.jsonl" --shared-pool \
		"$S/query.jsonl"
	assert_equal "${stderr_lines[2]}" "kvquery: 1 of 1 differences are what kvquery answers without --shared-pool: the router walks the lower tiers as kv-conductor did before 5246d49 (each worker's own copies); compare without --shared-pool"
}

@test "RFC #1403 routers: --api mooncake compares GPU, CPU, DISK and DP tokens" {
	cluster memcache --api rfc -- --api mooncake
	assert_equal "$status" 0
	cluster memcache --api rfc --conductor -- --api mooncake
	assert_equal "$status" 1
	assert_equal "$(sed -n 2p err)" "kvquery: 129 differences: offload_placeholder 55 gpu_removal_swallowed 74"
	run primary out.jsonl
	assert_line --index 0 'node0 null GPU 512 0 gpu_removal_swallowed'
	assert_line --index 1 'node2 1 DP 0 512 offload_placeholder'
}

@test "/query_by_hash: kv-conductor's matched_tokens in blocks is one class, not a difference on every line" {
	D=$BATS_FILE_TMPDIR
	start_router -r "$D/memcache.regs" --events "$D/memcache.jsonl" --by-hash-blocks
	kvquery -s "$D/memcache.kvsnap" --against "$URL" --events "$D/memcache.kvcap" "$D/memcache.qh" > out.jsonl 2> err || status=$?
	assert_equal "${status:-0}" 1
	# every rank with hits: its matched_tokens, and each instance's longest_matched, which follows it
	assert_equal "$(jq -r '.differences[] | .class' out.jsonl | sort -u)" by_hash_tokens
	assert_equal "$(jq -r '.differences[] | select(.follows == null) | .field' out.jsonl | sort -u)" matched_tokens
	run jq -r '.differences[] | select(.follows == null) | "\(.router * 32 == .kvtools)"' out.jsonl
	assert_equal "$(sort -u <<<"$output")" true
}

# ---- each class from its own events ------------------------------------------

# class_case NAME ROUTERD-SWITCHES [-- KVQUERY-ARGS]: the scenario's query
# against a router with those switches; the JSON line in $out.
class_case() {
	local name=$1
	shift
	local r=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do r+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	scenario "$name"
	start_router -r "$S/regs.jsonl" --events "$S/events.jsonl" "${r[@]}"
	out=$(kvquery -s "$S/snap.kvsnap" --against "$URL" --events "$S/events.jsonl" "$@" "$S/query.jsonl" 2>/dev/null) &&
		status=0 || status=$?
}

@test "class 1: an offload placeholder's pool copy, with the placeholder and the pool's store" {
	for sw in --placeholder-key --conductor; do
		class_case placeholder $sw
		assert_equal "$status" 1
		assert_equal "$(primary <<<"$out")" 'nodeA 0 cpu_blocks 0 2 offload_placeholder'
		assert_equal "$(evidence <<<"$out")" "offload_placeholder stored cpu tcp://10.0.0.1:5557 1
pool_store stored cpu tcp://pool:5557 1"
		assert_equal "$(jq -c '.differences[0].evidence[0].placeholder' <<<"$out")" true
	done
}

@test "class 2: an xpu removal swallowed by the offload still waiting for its pool" {
	for sw in --swallow-gpu-removal --conductor; do
		class_case gpu_removal $sw
		assert_equal "$status" 1
		assert_equal "$(primary <<<"$out")" 'nodeA 0 npu_blocks 2 0 gpu_removal_swallowed'
		assert_equal "$(evidence <<<"$out")" "offload stored cpu tcp://10.0.0.1:5557 1
removal_swallowed removed xpu tcp://10.0.0.1:5557 1"
		# the cpu blocks kvquery counts where the router still has xpu follow from it
		assert_equal "$(jq -r '.differences[1] | "\(.field) \(.follows) \(.class)"' <<<"$out")" \
			'cpu_blocks npu_blocks gpu_removal_swallowed'
	done
}

@test "class 3: the other walk, named with the blocks' holders" {
	class_case walk --walk shared
	assert_equal "$status" 1
	assert_equal "$(primary <<<"$out")" 'nodeB 0 cpu_blocks 2 0 walk_mode'
	assert_equal "$(jq -c '.differences[0].blocks[0].held' <<<"$out")" '["nodeA/0 cpu"]'
	# with --shared-pool they agree
	class_case walk --walk shared -- --shared-pool
	assert_equal "$status" 0
}

@test "class 4: a pool's store left waiting after a removal took the offload it needed" {
	for sw in --lose-confirmation --conductor; do
		class_case lost $sw
		assert_equal "$status" 1
		assert_equal "$(primary <<<"$out")" 'nodeA 0 cpu_blocks 0 2 pool_confirmation_lost'
		assert_equal "$(evidence <<<"$out")" "offload stored cpu tcp://10.0.0.1:5557 1
removal_took_offload removed xpu tcp://10.0.0.2:5557 0
pool_store_left_pending stored cpu tcp://pool:5557 1"
	done
}

@test "class 5: a pool removal swallowed by another engine's waiting offload" {
	for sw in --swallow-pool-removal --conductor; do
		class_case pool_removal $sw
		assert_equal "$status" 1
		assert_equal "$(primary <<<"$out")" 'nodeA 0 cpu_blocks 2 0 pool_removal_swallowed'
		assert_equal "$(evidence <<<"$out")" "offload stored cpu tcp://10.0.0.2:5557 0
pool_removal_swallowed removed cpu tcp://pool:5557 2"
	done
}

@test "class 6: the stale copy as another cpu_local/cpu_remote split only" {
	class_case stale --swallow-pool-removal --walk shared -- --shared-pool
	assert_equal "$status" 1
	assert_equal "$(primary <<<"$out")" 'nodeA 0 cpu_local_blocks 2 0 stale_ownership'
	assert_equal "$(jq -r '.differences[1] | "\(.field) \(.router) \(.kvtools) \(.follows)"' <<<"$out")" \
		'cpu_remote_blocks 0 2 cpu_local_blocks'
	assert_equal "$(evidence <<<"$out")" "offload stored cpu tcp://10.0.0.2:5557 0
pool_removal_swallowed removed cpu tcp://pool:5557 2"
}

@test "class 7: a Mooncake batch with a hash >= 2^63, which kv-conductor drops whole" {
	for sw in --signed-mooncake --conductor; do
		class_case signed $sw
		assert_equal "$status" 1
		assert_equal "$(primary <<<"$out")" 'nodeA 0 cpu_blocks 0 2 mooncake_signed_hash'
		assert_equal "$(jq -r '.differences[0].evidence[] | "\(.role) \(.format) \(.seq) \(.signed_batch)"' <<<"$out")" \
			'pool_store_dropped mooncake 1 true'
	done
}

@test "class 8: /query_by_hash's matched_tokens in blocks" {
	scenario clean
	start_router -r "$S/regs.jsonl" --events "$S/events.jsonl" --by-hash-blocks
	run --separate-stderr kvquery -s "$S/snap.kvsnap" --against "$URL" --events "$S/events.jsonl" "$S/by_hash.jsonl"
	assert_equal "$status" 1
	assert_equal "$(primary <<<"$output")" 'nodeA 0 matched_tokens 2 8 by_hash_tokens'
	assert_equal "${stderr_lines[1]}" "kvquery: 1 differences: by_hash_tokens 1"
}

@test "a difference of no known kind is unexplained, with the events all the same (exit 2)" {
	# the router never applied the pool's store (seq 1): nothing kv-conductor does explains that
	scenario walk
	start_router -r "$S/regs.jsonl" --events "$S/events.jsonl" --drop tcp://pool:5557:1
	run --separate-stderr kvquery -s "$S/snap.kvsnap" --against "$URL" --events "$S/events.jsonl" "$S/query.jsonl"
	assert_equal "$status" 2
	assert_equal "$(primary <<<"$output")" 'nodeA 0 cpu_blocks 0 2 unexplained'
	assert_equal "$(jq -r '.differences[0].events[] | "\(.type) \(.medium) \(.src) \(.seq)"' <<<"$output")" \
		"stored xpu tcp://10.0.0.1:5557 0
stored cpu tcp://10.0.0.1:5557 1
stored cpu tcp://pool:5557 1
removed xpu tcp://10.0.0.1:5557 2"
	assert_equal "${stderr_lines[1]}" "kvquery: 1 differences: unexplained 1"
	# without captures nothing is explained from events
	run --separate-stderr kvquery -s "$S/snap.kvsnap" --against "$URL" "$S/query.jsonl"
	assert_equal "$status" 2
	assert_equal "$(jq -r '.differences[0].note' <<<"$output")" "no captures to read the events from (--events)"
}

@test "gaps: a difference on a block whose pool skipped a seq in the capture" {
	# kvtools saw the events without the pool's batch 2; the router saw it
	scenario gap
	grep -v '"src":"tcp://pool:5557","recv_ns":[0-9]*,"seq":2,' "$S/events.jsonl" > "$S/seen.jsonl"
	kvmatch -q --log none -r "$S/regs.jsonl" -o "$S/snap.kvsnap" "$S/seen.jsonl"
	start_router -r "$S/regs.jsonl" --events "$S/events.jsonl"
	run --separate-stderr kvquery -s "$S/snap.kvsnap" --against "$URL" --events "$S/seen.jsonl" "$S/query.jsonl"
	assert_equal "$status" 1
	assert_equal "$(primary <<<"$output")" 'nodeA 0 cpu_blocks 2 0 gap'
	assert_equal "$(jq -c '.differences[0].gaps' <<<"$output")" \
		'[{"src":"tcp://pool:5557","gaps":1,"missing":1,"last_gap":{"after_seq":1,"seq":3,"recv_ns":1764547200006000000}}]'
}

# ---- lag ---------------------------------------------------------------------------

@test "lag: events newer than the snapshot the router has already applied" {
	scenario walk
	# the snapshot saw the events before nodeA freed its xpu copy
	head -n 3 "$S/events.jsonl" > "$S/early.jsonl"
	kvmatch -q --log none -r "$S/regs.jsonl" -o "$S/snap.kvsnap" "$S/early.jsonl"
	start_router -r "$S/regs.jsonl" --events "$S/events.jsonl"
	run --separate-stderr kvquery -s "$S/snap.kvsnap" --against "$URL" --events "$S/events.jsonl" "$S/query.jsonl"
	assert_equal "$status" 1
	assert_equal "$(primary <<<"$output")" 'nodeA 0 npu_blocks 0 2 lag'
	assert_equal "$(evidence <<<"$output")" 'newer_than_snapshot removed xpu tcp://10.0.0.1:5557 2'
	assert_equal "$(jq -c '.differences[0].evidence[0].newer_than_snapshot' <<<"$output")" true
}

@test "lag: events within --lag-window that the router has not applied yet" {
	scenario walk
	# the events of a live cluster: the last two (nodeA frees its xpu copy,
	# nodeB stores) a second ago, the others 100 s ago
	now=$(date +%s%N)
	jq -c --arg now "$now" --argjson n "$(wc -l < "$S/events.jsonl")" \
		'. + {recv_ns: (($now | tonumber) - (if input_line_number >= $n - 1 then 1 else 100 end) * 1000000000)}' \
		"$S/events.jsonl" > "$S/live.jsonl"
	kvmatch -q --log none -r "$S/regs.jsonl" -o "$S/snap.kvsnap" "$S/live.jsonl"
	# a router 10 s behind its stream
	start_router -r "$S/regs.jsonl" --events "$S/live.jsonl" --lag 10
	run --separate-stderr kvquery -s "$S/snap.kvsnap" --against "$URL" --events "$S/live.jsonl" --lag-window 20 \
		"$S/query.jsonl"
	assert_equal "$status" 1
	assert_equal "$(primary <<<"$output")" 'nodeA 0 npu_blocks 2 0 lag'
	assert_equal "$(evidence <<<"$output")" 'within_lag_window removed xpu tcp://10.0.0.1:5557 2'
	# a router that far behind is no lag with a window of 0
	run --separate-stderr kvquery -s "$S/snap.kvsnap" --against "$URL" --events "$S/live.jsonl" --lag-window 0 \
		"$S/query.jsonl"
	assert_equal "$status" 2
	assert_equal "$(primary <<<"$output")" 'nodeA 0 npu_blocks 2 0 unexplained'
}

# ---- a router that does not answer --------------------------------------------------

@test "a router that is down: each query says so, exit 69" {
	D=$BATS_FILE_TMPDIR
	p=$(port)
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against "http://127.0.0.1:$p" "$ROOT/share/queries.jsonl"
	assert_equal "$status" 69
	assert_equal "${#lines[@]}" 5
	assert_equal "$(jq -r '"\(.query) \(.status) \(.kind)"' <<<"$output" | sort -u | wc -l)" 5
	assert_equal "$(jq -r '"\(.status) \(.kind)"' <<<"$output" | sort -u)" 'router_error unavailable'
	assert_line --index 0 --partial '"error":"Failed to connect to 127.0.0.1 port '"$p"
	assert_equal "$stderr" "kvquery: http://127.0.0.1:$p: 5 queries: 0 agree, 0 differ, 5 not answered by the router"
}

@test "libcurl is loaded for --against only: without it, kvquery starts none of its libraries" {
	D=$BATS_FILE_TMPDIR
	p=$(port)
	LD_DEBUG=files kvquery -s "$D/sample.kvsnap" "$ROOT/share/queries.jsonl" > answers 2> loads
	run grep -c 'file=libcurl' loads
	assert_output 0
	LD_DEBUG=files kvquery -s "$D/sample.kvsnap" --against "http://127.0.0.1:$p" "$ROOT/share/queries.jsonl" \
		> differences 2> loads || true
	run grep -c 'file=libcurl.so.4 .*dynamically loaded by' loads
	assert_output 1
	assert_equal "$(jq -r .kind differences | sort -u)" unavailable
}

@test "a libcurl that cannot be loaded: --against stops before any query (70), the answers alone still work" {
	D=$BATS_FILE_TMPDIR
	mkdir lib
	: > lib/libcurl.so.4
	LD_LIBRARY_PATH=$PWD/lib run --separate-stderr kvquery -s "$D/sample.kvsnap" --against http://127.0.0.1:1 \
		"$ROOT/share/queries.jsonl"
	assert_equal "$status" 70
	assert_output ''
	assert_equal "$stderr" "kvquery: cannot load libcurl: $PWD/lib/libcurl.so.4: file too short"
	LD_LIBRARY_PATH=$PWD/lib run --separate-stderr kvquery -s "$D/sample.kvsnap" "$ROOT/share/queries.jsonl"
	assert_success
	assert_equal "${#lines[@]}" 5
}

@test "HTTP 404, 422 and 500: reported with the router's body, never taken as an answer" {
	D=$BATS_FILE_TMPDIR
	start_router -r "$ROOT/share/registrations.jsonl" --events "$D/sample.jsonl"
	for code in 404 422 500; do
		run --separate-stderr kvquery -s "$D/sample.kvsnap" --against "$URL/status/$code" "$ROOT/share/queries.jsonl"
		assert_equal "$status" 69
		assert_equal "$(jq -c -s 'map([.status, .kind, .http_status]) | unique' <<<"$output")" \
			"[[\"router_error\",\"http_status\",$code]]"
		assert_line --index 0 "{\"query\":1,\"status\":\"router_error\",\"kind\":\"http_status\",\"http_status\":$code,\"error\":\"HTTP $code: {\\\"error\\\":\\\"routerd told to answer $code\\\"}\"}"
	done
}

@test "garbage, a body cut inside its JSON, a transfer cut short: each its own error" {
	D=$BATS_FILE_TMPDIR
	start_router -r "$ROOT/share/registrations.jsonl" --events "$D/sample.jsonl"
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against "$URL/garbage" "$ROOT/share/queries.jsonl"
	assert_equal "$status" 69
	assert_line --index 0 '{"query":1,"status":"router_error","kind":"not_an_answer","http_status":200,"error":"not an answer: not JSON ('"'"'['"'"' or '"'"'{'"'"' expected near '"'"'<'"'"' at byte 1)"}'
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against "$URL/cut" "$ROOT/share/queries.jsonl"
	assert_equal "$status" 69
	assert_equal "$(jq -r '.kind' <<<"$output" | sort -u)" not_an_answer
	assert_line --index 0 --partial '"error":"not an answer: not JSON ('
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against "$URL/truncate" "$ROOT/share/queries.jsonl"
	assert_equal "$status" 69
	assert_equal "$(jq -r '.kind' <<<"$output" | sort -u)" broken
	# and the same router, asked without a failure, answers
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against "$URL" "$ROOT/share/queries.jsonl"
	assert_equal "$status" 0
}

@test "a slow router: --timeout bounds each request, reported as a timeout" {
	D=$BATS_FILE_TMPDIR
	start_router -r "$ROOT/share/registrations.jsonl" --events "$D/sample.jsonl"
	head -n 2 "$ROOT/share/queries.jsonl" > q.jsonl
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against "$URL/slow/3" --timeout 0.3 q.jsonl
	assert_equal "$status" 69
	assert_equal "$(jq -r '.kind' <<<"$output" | sort -u)" timeout
	assert_line --index 0 --partial '"error":"Operation timed out after'
}

# router_stats: what the router at $URL served ("requests max_in_flight").
router_stats() {
	/usr/bin/python3 -c 'import json, sys, urllib.request
s = json.load(urllib.request.urlopen(sys.argv[1] + "/stats", timeout=10))
print(s["requests"], s["max_in_flight"])' "$URL"
}

@test "--concurrency: at most that many requests in flight (default 4)" {
	D=$BATS_FILE_TMPDIR
	start_router -r "$ROOT/share/registrations.jsonl" --events "$D/sample.jsonl"
	cat "$ROOT/share/queries.jsonl" "$ROOT/share/queries.jsonl" > q.jsonl
	# each answer takes 0.3 s, so that requests allowed at once overlap
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against "$URL/slow/0.3" --concurrency 2 q.jsonl
	assert_equal "$status" 0
	assert_equal "${#lines[@]}" 10
	assert_equal "$(router_stats)" "10 2"
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against "$URL/slow/0.3" q.jsonl
	assert_equal "$status" 0
	assert_equal "$(router_stats)" "20 4"
}

@test "--rate: requests go no faster than asked" {
	D=$BATS_FILE_TMPDIR
	start_router -r "$ROOT/share/registrations.jsonl" --events "$D/sample.jsonl"
	t0=$(date +%s%N)
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against "$URL" --rate 10 --concurrency 1 \
		"$ROOT/share/queries.jsonl" "$ROOT/share/queries.jsonl"
	t1=$(date +%s%N)
	assert_equal "$status" 0
	assert_equal "${#lines[@]}" 10
	# ten requests at 10 a second: the last starts 0.9 s after the first
	[ $(((t1 - t0) / 1000000)) -ge 900 ] || fail "10 requests at --rate 10 took $(((t1 - t0) / 1000000)) ms"
}

# ---- the run ----------------------------------------------------------------------

@test "--format table: a row per difference, the evidence in words" {
	scenario gpu_removal
	start_router -r "$S/regs.jsonl" --events "$S/events.jsonl" --conductor
	run --separate-stderr kvquery -s "$S/snap.kvsnap" --against "$URL" --events "$S/events.jsonl" --format table \
		"$S/query.jsonl"
	assert_equal "$status" 1
	assert_line --index 0 'QUERY  INSTANCE           DP FIELD                  ROUTER    KVTOOLS CLASS                  EVIDENCE'
	assert_line --index 1 '1      nodeA               0 npu_blocks                  2          0 gpu_removal_swallowed  block 0; offload: stored cpu seq 1 (tcp://10.0.0.1:5557); removal_swallowed: removed xpu seq 1 (tcp://10.0.0.1:5557)'
	assert_line --index 2 '1      nodeA               0 cpu_blocks                  0          2 gpu_removal_swallowed  follows npu_blocks'
}

@test "queries kvquery cannot answer are not sent, and say why (exit 65)" {
	scenario clean
	start_router -r "$S/regs.jsonl" --events "$S/events.jsonl"
	{ echo 'not json'; cat "$S/query.jsonl"; } > q.jsonl
	run --separate-stderr kvquery -s "$S/snap.kvsnap" --against "$URL" q.jsonl
	assert_equal "$status" 65
	assert_line --index 0 --regexp '^\{"query":1,"status":"bad_query","error":".+"\}$'
	assert_line --index 1 '{"query":2,"status":"agree"}'
	assert_equal "${stderr_lines[1]}" "kvquery: $URL: 1 queries: 1 agree, 0 differ, 0 not answered by the router, 1 not asked (bad queries)"
}

@test "usage: --against with --route, a URL that is not http, --events alone; a capture that cannot be opened" {
	D=$BATS_FILE_TMPDIR
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against http://127.0.0.1:1 --route
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvquery: --against compares answers: not with --route or --explain"
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against tcp://127.0.0.1:1
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvquery: --against: 'tcp://127.0.0.1:1' is not an http:// or https:// URL"
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --events "$D/sample.jsonl"
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvquery: --events and --registrations go with --against"
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against http://127.0.0.1:1 --events nothing.kvcap < /dev/null
	assert_equal "$status" 66
	assert_equal "${stderr_lines[0]}" "kvquery: nothing.kvcap: No such file or directory"
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against http://127.0.0.1:1 --concurrency 0
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvquery: --concurrency: '0' is not a number from 1 to 64"
}

@test "a write error is 74, whatever the router said" {
	[ -w /dev/full ] || fail "no /dev/full"
	D=$BATS_FILE_TMPDIR
	start_router -r "$ROOT/share/registrations.jsonl" --events "$D/sample.jsonl"
	run --separate-stderr kvquery -s "$D/sample.kvsnap" --against "$URL" -o /dev/full "$ROOT/share/queries.jsonl"
	assert_equal "$status" 74
}

# ---- live: kvpub | kvsub | kvdecode | kvmatch --snapshot-every, kvquery --watch -----------

@test "live: differences while a capture is replayed are lag, none after it" {
	p=$(port 5)
	kvpub -q --port-base "$p" --slow-joiner-wait 2 --speed 2 -o map.jsonl "$ROOT/share/sample.kvcap" 3>&- &
	RPIDS=$!
	i=0
	until [ -f map.jsonl ] && [ "$(wc -l < map.jsonl)" = 5 ]; do
		sleep 0.05; i=$((i + 1)); [ $i -lt 200 ] || fail "kvpub gave no mapping"
	done
	# the workers as kvpub's sockets publish them (kvpub(1), "Pool events and routers that match by IP")
	jq -c --slurpfile m map.jsonl '($m | map({key: .src, value: .endpoint}) | from_entries) as $to
		| if .medium_endpoints then .medium_endpoints.cpu = $to[.medium_endpoints.npu]
		  else .endpoint = $to[.endpoint] end' "$ROOT/share/registrations.jsonl" > regs.jsonl
	: > events.jsonl
	# shellcheck disable=SC2046
	(kvsub -q -c 60 -W 30 $(jq -r .endpoint map.jsonl) | kvdecode | tee -a events.jsonl |
		kvmatch -q --log none -r regs.jsonl --snapshot-every 2 -o live.kvsnap) 3>&- &
	pipeline=$!
	start_router --follow --events events.jsonl -r regs.jsonl
	i=0
	until [ -f live.kvsnap ]; do
		sleep 0.05; i=$((i + 1)); [ $i -lt 400 ] || fail "no snapshot after 20 s"
	done
	mkfifo q
	kvquery --watch -s live.kvsnap --against "$URL" --events events.jsonl -r regs.jsonl < q > out.jsonl 2> err 3>&- &
	kq=$!
	exec 4> q
	during=0
	while kill -0 "$pipeline" 2>/dev/null && [ $during -lt 60 ]; do
		cat "$ROOT/share/queries.jsonl" >&4
		during=$((during + 1))
		sleep 0.3
	done
	wait_for "$pipeline" 30 || fail "the capture's pipeline ended with $status"
	sleep 0.5 # the router's last read of the events
	cat "$ROOT/share/queries.jsonl" >&4
	exec 4>&-
	wait_for "$kq" 30 || true
	# differences, every one explained
	assert_equal "$status" 1
	assert_equal "$(wc -l < out.jsonl)" $(((during + 1) * 5))
	# while the replay ran: agreement or lag, and some lag
	run jq -r '.differences[]? | .class' out.jsonl
	refute_output --regexp '^(unexplained|gap|walk_mode|offload_placeholder)'
	assert_output --partial lag
	# after it: every query agrees
	run bash -c "tail -n 5 out.jsonl | jq -r .status | sort -u"
	assert_output agree
}
