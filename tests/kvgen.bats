#!/usr/bin/env bats
# kvgen: a simulated cluster's traffic, which kvdecode and kvmatch must take as it is.
load helper

TRACE=$ROOT/share/traces/conversation-300.jsonl

# The holdings of a snapshot's blocks, for comparing indexes.
blocks() { kvmatch --dump "$1" | grep '"kind":"block"'; }

agrees() { # kvgen options...: kvmatch rebuilds exactly kvgen's own index
	kvgen -q --limit 120 --workers 4 --dp 2 --capacity 600 --registrations regs.jsonl --snapshot truth.kvsnap \
		-o cap.kvcap "$@" "$TRACE"
	run --separate-stderr kvmatch -r regs.jsonl --log dropped,pending_expired -o idx.kvsnap cap.kvcap
	assert_success
	assert_output ''
	[ "$(blocks truth.kvsnap | wc -l)" -gt 1000 ]
	assert_equal "$(blocks idx.kvsnap)" "$(blocks truth.kvsnap)"
}

@test "kvmatch's index after the stream is kvgen's: engines only" {
	agrees --policy random
}

@test "... with a memcache pool (two-phase matching), vLLM array events, int hashes" {
	agrees --pool memcache --pool-capacity 3000
}

@test "... with a Mooncake pool and a disk tier, vLLM map events, sha256 bytes hashes" {
	agrees --pool mooncake --pool-capacity 1500 --disk-capacity 4000 --vllm-format map --hash-format bytes
}

@test "... with pool events arriving before the engine's offload events" {
	agrees --pool memcache --pool-capacity 3000 --pool-lag -5
	run --separate-stderr kvmatch -r regs.jsonl --log queued,matched cap.kvcap
	[ "$(grep -c '"state":"matched"' <<<"$output")" -gt 100 ]
	# in time order: 15 request times, each with its engine batches 5 ms later
	kvdecode cap.kvcap | jq .recv_ns > ns
	sort -c -n ns
	assert_equal "$(sort -u ns | wc -l)" 30
}

# The records of a capture: recv_ns, src, seq.
records() { kvdecode "$1" | jq -c '[.recv_ns, .src, .seq]' | uniq | tr '\n' ' '; }

@test "--pool-lag: the pool's batches after the engine's, or before them, recv_ns never going back" {
	sed -n '1p;11p' "$TRACE" > two.jsonl     # at 0 and 3 s of trace time
	kvgen -q --workers 1 --dp 1 --pool memcache --pool-lag 5 -o after.kvcap two.jsonl
	assert_equal "$(records after.kvcap)" '[1764547200000000000,"tcp://10.0.0.1:5557",0] [1764547200005000000,"tcp://kvs-master:5557",1] [1764547203000000000,"tcp://10.0.0.1:5557",1] [1764547203005000000,"tcp://kvs-master:5557",2] '
	# negative: the engine's batches are the ones delayed
	kvgen -q --workers 1 --dp 1 --pool memcache --pool-lag -5 -o before.kvcap two.jsonl
	assert_equal "$(records before.kvcap)" '[1764547200000000000,"tcp://kvs-master:5557",1] [1764547200005000000,"tcp://10.0.0.1:5557",0] [1764547203000000000,"tcp://kvs-master:5557",2] [1764547203005000000,"tcp://10.0.0.1:5557",1] '
	# a lag longer than the gap between requests interleaves them, still in time order
	kvgen -q --workers 1 --dp 1 --pool memcache --pool-lag -5000 -o long.kvcap two.jsonl
	assert_equal "$(records long.kvcap)" '[1764547200000000000,"tcp://kvs-master:5557",1] [1764547203000000000,"tcp://kvs-master:5557",2] [1764547205000000000,"tcp://10.0.0.1:5557",0] [1764547208000000000,"tcp://10.0.0.1:5557",1] '
	# 0: the same time, the pool's first
	kvgen -q --workers 1 --dp 1 --pool memcache --pool-lag 0 -o zero.kvcap two.jsonl
	assert_equal "$(records zero.kvcap)" '[1764547200000000000,"tcp://kvs-master:5557",1] [1764547200000000000,"tcp://10.0.0.1:5557",0] [1764547203000000000,"tcp://kvs-master:5557",2] [1764547203000000000,"tcp://10.0.0.1:5557",1] '
	# kvmatch confirms every pool block on arrival after, matches each one waiting before
	kvgen -n -q --workers 1 --dp 1 --pool memcache --registrations regs.jsonl two.jsonl
	assert_equal "$(kvmatch -q -r regs.jsonl --log queued,matched,confirmed after.kvcap | jq -r .state | uniq -c | tr -s ' \n' ' ')" ' 1236 confirmed '
	assert_equal "$(kvmatch -q -r regs.jsonl --log queued,matched,confirmed before.kvcap | jq -r .state | uniq -c | tr -s ' \n' ' ')" ' 422 queued 422 matched 814 queued 814 matched '
	assert_equal "$(kvmatch -q -r regs.jsonl --log queued,matched,confirmed long.kvcap | jq -r .state | uniq -c | tr -s ' \n' ' ')" ' 1236 queued 1236 matched '
}

@test "--speed maps trace time to recv_ns: 15 s of trace at --speed 10 span 1.5 s; reports keep trace time" {
	{ sed -n '1p;11p' "$TRACE"; sed -n 12p "$TRACE" | jq -c '.timestamp = 15000'; } > at.jsonl   # 0, 3 and 15 s
	kvgen -q --workers 1 --dp 1 --speed 10 --window 10 --report at.json -o fast.kvcap at.jsonl
	assert_equal "$(kvdecode fast.kvcap | jq -c '[.recv_ns, .seq, .ts]' | uniq | tr '\n' ' ')" \
		'[1764547200000000000,0,1764547200] [1764547200300000000,1,1764547200.3] [1764547201500000000,2,1764547201.5] '
	assert_equal "$(jq -c '[.windows[] | [.start_s, .requests]]' at.json)" '[[0,2],[10,1]]'
	# slower than the trace: 15 s become 30 s
	kvgen -q --workers 1 --dp 1 --speed 0.5 -o slow.kvcap at.jsonl
	assert_equal "$(kvdecode slow.kvcap | jq -c '.recv_ns' | uniq | tr '\n' ' ')" '1764547200000000000 1764547206000000000 1764547230000000000 '
}

@test "the capture decodes without a single error, every format on the wire" {
	kvgen -q --limit 40 --workers 2 --dp 2 --policy round-robin --pool mooncake --vllm-format map --hash-format bytes -o cap.kvcap "$TRACE"
	run --separate-stderr kvdecode --stats cap.kvcap
	assert_success
	assert_equal "$(jq -r '.format' <<<"$output" | sort -u | tr '\n' ' ')" "mooncake vllm "
	assert_equal "$(jq -r 'select(.format == "vllm") | .medium' <<<"$output" | sort -u | tr '\n' ' ')" "cpu xpu "
	grep -Eq '^kvdecode: tcp://10.0.0.1:5557: [0-9]+ batches, [0-9]+ events \(vllm: [0-9]+ stored, [0-9]+ removed, 0 cleared\), 0 gaps, 0 missing, 0 restarts, 0 replayed, 0 ignored, 0 errors$' <<<"$stderr"
	grep -Eq '^kvdecode: tcp://kvs-master:5557: [0-9]+ batches, [0-9]+ events \(mooncake: [0-9]+ stored, [0-9]+ removed, 0 cleared\), 0 gaps, 0 missing events, 0 restarts, 0 replayed, 0 ignored, 0 errors$' <<<"$stderr"
	assert_equal "$(grep -c '^kvdecode: tcp://' <<<"$stderr")" 5
}

# A capture's Mooncake batches in mp2j's notation (its vLLM batches start with a float).
mooncake_batches() { mp2j "$1" | jq -c 'select(.[0] | startswith("u:"))'; }
# The shape of each Mooncake event: its type, its keys in order, those that are nil.
shapes() { mooncake_batches "$1" | jq -c '.[1][] | [.event_type, keys_unsorted, [to_entries[] | select(.value == null) | .key]]' | sort -u; }

@test "--pool mooncake publishes as the Mooncake master does: its keys in its order, nil model, u64 seq_hashes and int64 block_hashes, one object key an event" {
	kvgen -q --limit 40 --workers 2 --dp 2 --pool mooncake --pool-capacity 200 --disk-capacity 400 -o cap.kvcap "$TRACE"
	shapes "$FIX/mooncake-master/L1K1.kvcap" > real
	shapes cap.kvcap > ours
	# stored and removed, each in a shape the real master sends
	assert_equal "$(jq -r '.[0]' ours | tr '\n' ' ')" "removed stored "
	assert_equal "$(comm -23 ours real)" ""
	mooncake_batches cap.kvcap > batches
	[ "$(wc -l < batches)" -gt 100 ]
	# every value as the master writes it, event ids counting from 1 over the batches
	run python3 -c '
import json, sys
want = 1
for n, line in enumerate(open("batches"), 1):
    ts, events, trailer = json.loads(line)
    assert trailer == "u:0" and 1 <= len(events) <= 64, n
    for e in events:
        h = int(e["object_key"])
        assert e["seq_hashes"] == ["u:%d" % h], (n, e)
        assert e["block_hashes"] == ["u:%d" % h if h < 2**63 else "i:%d" % (h - 2**64)], (n, e)
        assert e["event_id"] == "u:%d" % want and e["timestamp"] == ts, (n, e)
        assert e["tenant_id"] == "default" and e["medium"] in ("cpu", "disk"), (n, e)
        want += 1
assert any(e.startswith("[\"u") and "\"i:-" in e for e in open("batches")), "no hash above 2^63"
print(want - 1)'
	assert_success
	# kvdecode reads one hash an event, no model: the pool's registration names it
	assert_equal "$(kvdecode cap.kvcap | jq -c 'select(.format == "mooncake") | [(.block_hashes | length), has("model_name")]' | sort -u)" "[1,false]"
	assert_equal "$(kvdecode cap.kvcap | jq -c 'select(.format == "mooncake")' | wc -l)" "$output"
}

@test "make sample-decoupled: a decoupled Mooncake pool (kvgen --pool-backend) is held by a pool holder, counted under --shared-pool" {
	run make -s -C "$ROOT" sample-decoupled SAMPLEDIR="$T/made"
	assert_success
	assert_equal "$(ls "$T/made" | tr '\n' ' ')" "registrations-decoupled.jsonl sample-decoupled.kvcap "
	cd "$T/made"
	assert_equal "$(kvdecode sample-decoupled.kvcap | jq -r 'select(.format == "mooncake") | .backend_id' | sort -u)" "mooncake-daemon-0"
	kvmatch -q -r registrations-decoupled.jsonl --log none -o d.kvsnap sample-decoupled.kvcap
	assert_equal "$(kvmatch --dump d.kvsnap | jq -r 'select(.kind == "worker" and .pool) | .instance_id')" "mooncake-daemon-0"
	tail -1 "$ROOT/share/queries.jsonl" | jq -c '.token_ids |= .[:2048]' > q.jsonl
	# per worker, the pool's cpu blocks count for nobody; pool-wide, for every worker
	assert_equal "$(kvquery -s d.kvsnap q.jsonl | jq '[.. | .cpu_blocks? // empty] | add')" 0
	assert_equal "$(kvquery --shared-pool -s d.kvsnap q.jsonl | jq -c '[.. | .cpu_remote_blocks? // empty]')" "[0,24,24,24]"
	# named as the instances it serves, its blocks are theirs
	kvmatch -q -r registrations-decoupled.jsonl --backend-serves mooncake-daemon-0=node0,node1 --log none -o s.kvsnap sample-decoupled.kvcap
	assert_equal "$(kvquery -s s.kvsnap q.jsonl | jq -c '[.. | .cpu_blocks? // empty]')" "[0,24,24,24]"
	run --separate-stderr kvgen --pool-backend mooncake-daemon-0 -n /dev/null
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvgen: --pool-backend: no pool (--pool memcache or mooncake)"
}

@test "the same seed gives the same capture, byte for byte" {
	kvgen -q --limit 50 --workers 2 --pool memcache -o a.kvcap "$TRACE"
	kvgen -q --limit 50 --workers 2 --pool memcache -o b.kvcap "$TRACE"
	cmp a.kvcap b.kvcap
	kvgen -q --limit 50 --workers 2 --pool memcache --seed 7 -o c.kvcap "$TRACE"
	! cmp -s a.kvcap c.kvcap
}

@test "the summary and the report count hits per medium" {
	run --separate-stderr kvgen -n --limit 300 --pool memcache --report report.json "$TRACE"
	assert_success
	assert_equal "$output" ""
	assert_equal "$(sed -E 's/[0-9.]+/N/g' <<<"$stderr")" "kvgen: policy kv: N requests, N prompt tokens, N% served from cache (xpu N%, cpu N%, disk N%); requests per worker N to N; N records, N blocks stored, N removed, N pool events"
	assert_equal "$(jq -c '[.policy, .requests, .cluster.instances, .cluster.dp, (.requests_per_worker | length), (.windows | length)]' report.json)" '["kv",300,16,4,64,2]'
	assert_equal "$(jq '.hits.total_tokens == .hits.xpu_tokens + .hits.cpu_tokens + .hits.disk_tokens' report.json)" true
	assert_equal "$(jq '[.windows[].requests] | add' report.json)" 300
	assert_equal "$(jq '.prompt_tokens' report.json)" "$(jq -s 'map(.input_length) | add' "$TRACE")"
}

@test "--model goes into queries and registrations escaped: a quote, a backslash, a # and UTF-8 come back whole" {
	model=$'a"b\\c#d-\xc3\xa9'
	kvgen -q --limit 3 --workers 1 --dp 2 --pool memcache --model "$model" --registrations regs.jsonl \
		--queries q.jsonl -o cap.kvcap "$TRACE"
	kvgen -n -q --limit 3 --workers 1 --dp 2 --model "$model" --queries-by-hash qh.jsonl "$TRACE"
	assert_equal "$(jq -r .model q.jsonl | sort -u)" "$model"
	assert_equal "$(jq -r .model qh.jsonl | sort -u)" "$model"
	assert_equal "$(jq -r .modelname regs.jsonl | sort -u)" "$model"
	assert_equal "$(jq -c '.token_ids | length > 0' q.jsonl | sort -u)" true
	assert_equal "$(jq -c '.block_hashes | length > 0' qh.jsonl | sort -u)" true
	# the chain takes the name as it is: kvmatch's partition answers kvquery's queries
	kvmatch -q -r regs.jsonl -o idx.kvsnap cap.kvcap
	run --separate-stderr kvquery -s idx.kvsnap q.jsonl
	assert_success
	assert_equal "${#lines[@]}" 3
	refute_line null
}

@test "--policy kv (the default) weighs load beside affinity: more from cache than random, as evenly spread" {
	# 3000 requests on 8 x 2 ranks: affinity alone sent all of them to one
	# rank and served less from cache than random routing (3.9% against 4.9%; kv: 10.8%)
	zcat "$ROOT/share/traces/conversation_trace.jsonl.gz" | head -3000 > t.jsonl
	for p in random round-robin affinity kv; do
		kvgen -n -q --workers 8 --dp 2 --policy $p --report $p.json t.jsonl
	done
	kvgen -n -q --workers 8 --dp 2 --report default.json t.jsonl
	assert_equal "$(jq -c '[.policy, .load_weight]' default.json)" '["kv",1]'
	assert_equal "$(jq -c '[.policy, .load_weight]' affinity.json)" '["affinity",0]'
	assert_equal "$(jq -c '.requests_per_worker | max' affinity.json)" 3000
	rate() { jq ".hits.hit_rate * 1000 | round" "$1.json"; }
	assert_equal "$(rate default)" "$(rate kv)"
	assert_equal "$(rate affinity) $(rate random) $(rate kv)" "39 49 108"
	# as evenly spread as random routing: at most 20% above the mean of 187.5
	[ "$(jq '.requests_per_worker | max' kv.json)" -le 225 ]
	[ "$(jq '.requests_per_worker | min' kv.json)" -ge 150 ]
	# --load-weight 0 is affinity alone; affinity with a load weight is refused
	kvgen -n -q --workers 8 --dp 2 --load-weight 0 --report lw0.json t.jsonl
	assert_equal "$(jq '.requests_per_worker | max' lw0.json)" 3000
	run --separate-stderr kvgen -n --policy affinity --load-weight 2 t.jsonl
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvgen: --load-weight: --policy affinity weighs cache affinity alone (use --policy kv)"
}

@test "bad trace lines are reported with their numbers; the rest is served" {
	{ head -3 "$TRACE"; echo 'nonsense'; echo '{"timestamp": 1, "input_length": 2000, "hash_ids": [1]}'
	  echo '{"timestamp": 2, "input_length": 10, "hash_ids": [1], "input_length": 9000}'; head -5 "$TRACE" | tail -2; } > t.jsonl
	run --separate-stderr kvgen -n t.jsonl
	assert_equal "$status" 65
	# a key twice would be read as one of its values without a word
	assert_equal "$(sed -n 1,3p <<<"$stderr")" "kvgen: t.jsonl: line 4: '[' or '{' expected near 'nonsense'
kvgen: t.jsonl: line 5: hash_ids: fewer blocks than input_length needs
kvgen: t.jsonl: line 6: duplicate object key near '\"input_length\"'"
	grep -q '^kvgen: policy kv: 5 requests,' <<<"$stderr"
}

@test "timestamps that go back are served at the time reached, and said so once" {
	{ head -3 "$TRACE"; echo '{"timestamp": 900, "input_length": 500, "hash_ids": [1]}'; echo '{"timestamp": 1, "input_length": 500, "hash_ids": [3]}'; echo '{"timestamp": 2, "input_length": 500, "hash_ids": [2]}'; } > t.jsonl
	run --separate-stderr kvgen --workers 1 --dp 1 -o cap.kvcap t.jsonl
	assert_success
	assert_equal "${stderr_lines[0]}" "kvgen: t.jsonl: line 5: timestamp 1 ms goes back before the previous request's: served at the time reached instead, as is every later one that goes back (said once)"
	assert_equal "${#stderr_lines[@]}" 2
	# recv_ns never goes back in the capture
	run bash -c "kvdecode cap.kvcap | grep -o '\"recv_ns\":[0-9]*' | cut -d: -f2 | sort -c -n"
	assert_success
	# in order, not a word
	run --separate-stderr kvgen -n -q "$TRACE"
	assert_equal "$stderr" ""
}

@test "every --workers count has valid, distinct node addresses; small clusters keep theirs" {
	kvgen -n -q --workers 65536 --dp 1 --capacity 1 --limit 1 --registrations regs.jsonl "$TRACE"
	jq -r '.medium_endpoints.npu' regs.jsonl > eps
	assert_equal "$(wc -l < eps)" 65536
	assert_equal "$(sort -u eps | wc -l)" 65536
	# four octets of 0..255, the last never 0 or 255
	assert_equal "$(grep -Evc '^tcp://10\.([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\.([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])\.([1-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-4]):5557$' eps)" 0
	assert_equal "$(sed -n '1p;250p;251p;64000p;64001p;65536p' eps | tr '\n' ' ')" \
		"tcp://10.0.0.1:5557 tcp://10.0.0.250:5557 tcp://10.0.1.1:5557 tcp://10.0.255.250:5557 tcp://10.1.0.1:5557 tcp://10.1.6.36:5557 "
	# kvmatch takes them all as distinct hosts
	kvmatch -q -r regs.jsonl -o all.kvsnap </dev/null
	assert_equal "$(kvmatch --dump all.kvsnap | jq -r 'select(.kind == "worker") | .host' | sort -u | wc -l)" 65536
}

@test "a gzip-compressed trace is refused once, from a file or stdin, before any output" {
	gzip -c "$TRACE" > t.jsonl.gz
	run --separate-stderr kvgen -o out.kvcap t.jsonl.gz
	assert_equal "$status" 65
	assert_equal "$stderr" "kvgen: t.jsonl.gz: gzip-compressed; decompress it first: zcat t.jsonl.gz | kvgen [OPTION]..."
	[ ! -e out.kvcap ]
	run --separate-stderr kvgen -n - < t.jsonl.gz
	assert_equal "$status" 65
	assert_output ''
	assert_equal "$stderr" "kvgen: stdin: gzip-compressed; decompress it first: zcat FILE | kvgen [OPTION]..."
	# the same bytes uncompressed are served, a lone 0x1f is only a bad line
	run --separate-stderr bash -c "zcat t.jsonl.gz | kvgen -n --limit 3"
	assert_success
	[[ $stderr == "kvgen: policy kv: 3 requests, "* ]]
	printf '\037' > one.jsonl
	run --separate-stderr kvgen -n -q one.jsonl
	assert_equal "$status" 65
	assert_equal "${stderr_lines[0]:0:25}" "kvgen: one.jsonl: line 1:"
}

@test "kvgen refuses a terminal, and bad options" {
	run script -qec "$BIN/kvgen --limit 1 $TRACE" /dev/null
	assert_equal "$status" 64
	assert_output --partial 'refusing to write a binary capture to a terminal'
	run --separate-stderr kvgen --block-size 48 -n "$TRACE"
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvgen: --block-size: 48 does not divide the trace's 512-token blocks"
	run --separate-stderr kvgen --policy smart -n "$TRACE"
	assert_equal "$status" 64
	run kvgen --help
	assert_success
	assert_line --index 0 'Usage: kvgen [OPTION]... [TRACE]'
}

@test "make samples makes the shipped sample, registrations and queries again, byte for byte" {
	run make -s -C "$ROOT" samples SAMPLEDIR="$T/made"
	assert_success
	assert_equal "$(ls "$T/made" | tr '\n' ' ')" "queries.jsonl registrations.jsonl sample.kvcap "
	for f in sample.kvcap registrations.jsonl queries.jsonl; do
		cmp "$T/made/$f" "$ROOT/share/$f"
	done
}
