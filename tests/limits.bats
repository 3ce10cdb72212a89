#!/usr/bin/env bats
# Limits on outside input (the LIMITS sections of the man pages): each is
# met just below and just above its bound, with the message, the counted
# skip, and the rest of the input still processed.  Inputs are generated.
load helper

unset http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

MiB=$((1 << 20))
SRC=tcp://10.0.0.5:5557

# Python with Debian's msgpack module (not a virtualenv's python3).
PY=/usr/bin/python3

# pycap SNIPPET: runs SNIPPET with kvcap helpers defined and writes what it
# returns (bytes) to standard output.
#   header()                       a kvcap header
#   record(payload, src, seq, frames)  one record [recv_ns, src, 0, frames]
#   removal(h, extra)              a vLLM batch removing hash h, with an extra 4th element
#   record_of_size(n, h)           a record of exactly n bytes (padding in that element)
#   stored_objects(n, h)           a batch of exactly n MessagePack objects
#   nested(depth, inner)           a batch nested depth levels deep, inner innermost
pycap() {
	"$PY" - "$@" <<-'EOF'
	import msgpack, sys
	RECV = 1764500000000000000
	def header():
	    return msgpack.packb({"kvcap": 1, "tool": "limits", "start_ns": 0})
	def record(payload=b"", src="tcp://10.0.0.5:5557", seq=0, frames=None, recv=RECV):
	    if frames is None:
	        frames = [b"", seq.to_bytes(8, "big"), payload]
	    return msgpack.packb([recv + seq, src, 0, frames], use_bin_type=True)
	def removal(h, extra=None):
	    b = [1.0, [["BlockRemoved", [h]]], 0]
	    if extra is not None:
	        b.append(extra)
	    return msgpack.packb(b, use_bin_type=True)
	def record_of_size(size, h=1):
	    pad = size - 200
	    while True:
	        r = record(removal(h, b"\0" * pad))
	        if len(r) == size:
	            return r
	        pad += size - len(r)
	def stored_objects(n, h=7):
	    # root, ts, events, event, tag, hashes, hash, parent, tokens, block_size, lora, medium, dp: 13
	    return msgpack.packb([1.0, [["BlockStored", [h], None, [0] * (n - 13), 16, None, "GPU"]], 0])
	def nested(depth, inner):
	    x = inner
	    for _ in range(depth - 2):
	        x = [x]
	    return removal(3, x)
	sys.stdout.buffer.write(eval(sys.argv[1]))
	EOF
}

# Hashes of the events kvdecode decoded, one line each.
hashes() { jq -r '.block_hashes | join(",")'; }

# ---- captures: kvdecode (and every reader of kvcap) ----------------------

@test "a record of 64 MiB is decoded; one byte more ends that input, the next file is read" {
	pycap "header() + record_of_size(64 << 20, 1) + record(removal(2), seq=1)" > at.kvcap
	pycap "header() + record_of_size((64 << 20) + 1, 1) + record(removal(2), seq=1)" > over.kvcap
	pycap "header() + record(removal(3))" > next.kvcap
	run --separate-stderr kvdecode at.kvcap next.kvcap
	assert_success
	assert_equal "$(hashes <<<"$output")" "0x0000000000000001
0x0000000000000002
0x0000000000000003"
	run --separate-stderr kvdecode over.kvcap next.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvdecode: over.kvcap: record 1: byte 30: object larger than the record limit"
	assert_equal "$(hashes <<<"$output")" "0x0000000000000003"
}

@test "a payload of 4 Mi MessagePack objects is decoded; one more is reported and skipped" {
	pycap "header() + record(stored_objects(4 << 20)) + record(removal(2), seq=1)" > at.kvcap
	pycap "header() + record(stored_objects((4 << 20) + 1)) + record(removal(2), seq=1)" > over.kvcap
	run --separate-stderr kvdecode at.kvcap
	assert_success
	assert_equal "$(jq -c '[.type, (.token_ids | length)]' <<<"$output")" '["stored",4194291]
["removed",0]'
	run --separate-stderr kvdecode over.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvdecode: over.kvcap: record 1 ($SRC, seq 0): MessagePack object over the size limits"
	assert_equal "$(hashes <<<"$output")" "0x0000000000000002"
}

@test "a payload nested 32 deep is decoded; 33 deep (an empty container too) is reported and skipped" {
	for inner in '[1]' '[]' '{}'; do
		pycap "header() + record(nested(32, $inner)) + record(removal(2), seq=1)" > at.kvcap
		run --separate-stderr kvdecode at.kvcap
		assert_success
		assert_equal "$(hashes <<<"$output")" "0x0000000000000003
0x0000000000000002"
		pycap "header() + record(nested(33, $inner)) + record(removal(2), seq=1)" > over.kvcap
		run --separate-stderr kvdecode over.kvcap
		assert_equal "$status" 65
		assert_equal "$stderr" "kvdecode: over.kvcap: record 1 ($SRC, seq 0): MessagePack nesting deeper than 32"
		assert_equal "$(hashes <<<"$output")" "0x0000000000000002"
	done
}

@test "a record of 64 frames is decoded (the last is the payload); 65 are reported and skipped" {
	pycap "header() + record(frames=[b''] * 63 + [removal(1)]) + record(frames=[b''] * 64 + [removal(2)], seq=1) + record(removal(3), seq=2)" > in.kvcap
	run --separate-stderr kvdecode in.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvdecode: in.kvcap: record 2: more than 64 frames"
	assert_equal "$(hashes <<<"$output")" "0x0000000000000001
0x0000000000000003"
}

@test "a src of 1024 bytes is decoded; 1025 are reported and skipped" {
	pycap "header() + record(removal(1), src='tcp://' + 'h' * 1018) + record(removal(2), src='tcp://' + 'h' * 1019, seq=1) + record(removal(3), seq=2)" > in.kvcap
	run --separate-stderr kvdecode in.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvdecode: in.kvcap: record 2: src longer than 1024 bytes"
	assert_equal "$(hashes <<<"$output")" "0x0000000000000001
0x0000000000000003"
	assert_equal "$(head -1 <<<"$output" | jq -r '.src | length')" 1024
}

# 65536 sources, then a 65537th, then the first again.
many_sources() {
	pycap "header() + b''.join(record(removal(i + 1), src='tcp://10.%d.%d.%d:5557' % (i >> 16, (i >> 8) & 255, i & 255)) for i in range(65537)) + record(removal(9), src='tcp://10.0.0.0:5557', seq=1)"
}

@test "kvdecode --stats counts 65536 sources; the records of others are decoded, not counted" {
	many_sources > in.kvcap
	run --separate-stderr kvdecode --stats in.kvcap
	assert_success
	assert_equal "$(grep -c . <<<"$output")" 65538
	assert_equal "${#stderr_lines[@]}" 65537
	assert_equal "${stderr_lines[0]}" "kvdecode: tcp://10.0.0.0:5557: 2 batches, 2 events (vllm: 0 stored, 2 removed, 0 cleared), 0 gaps, 0 missing, 0 restarts, 0 replayed, 0 ignored, 0 errors"
	assert_equal "${stderr_lines[65535]}" "kvdecode: tcp://10.0.255.255:5557: 1 batches, 1 events (vllm: 0 stored, 1 removed, 0 cleared), 0 gaps, 0 missing, 0 restarts, 0 replayed, 0 ignored, 0 errors"
	assert_equal "${stderr_lines[65536]}" "kvdecode: 1 records of sources beyond the first 65536 not counted"
}

# ---- kvmatch ---------------------------------------------------------------

# An event line of exactly N bytes (blanks before the closing brace).
#   event_line N HASH SEQ
event_line() {
	"$PY" -c '
import sys
n, h, seq = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ev = ("{\"src\":\"tcp://10.0.0.5:5557\",\"recv_ns\":%s000000000,\"seq\":%s,\"format\":\"vllm\",\"type\":\"stored\",\"medium\":\"xpu\",\"block_hashes\":[\"%s\"],\"parent\":null,\"token_ids\":[%s,2,3,4],\"block_size\":4}" % (seq, seq, h, seq))
sys.stdout.write(ev[:-1] + " " * (n - len(ev)) + "}")' "$@"
}

@test "kvmatch: an event line of 64 MiB is applied; one byte more is skipped with its line number, a last line too" {
	{ event_line $((64 * MiB)) 0x1 1; echo; event_line 200 0x2 2; echo; } > at.jsonl
	run --separate-stderr kvmatch --log applied at.jsonl
	assert_success
	assert_equal "$(jq -r .hash <<<"$output")" "0x0000000000000001
0x0000000000000002"
	{ event_line $((64 * MiB + 1)) 0x1 1; echo; event_line 200 0x2 2; echo; event_line $((64 * MiB + 1)) 0x3 3; } > over.jsonl
	run --separate-stderr kvmatch --log applied,dropped over.jsonl
	assert_equal "$status" 65
	assert_equal "${stderr_lines[0]}" "kvmatch: over.jsonl: line 1: line longer than 67108864 bytes skipped"
	assert_equal "${stderr_lines[1]}" "kvmatch: over.jsonl: line 3: line longer than 67108864 bytes skipped"
	assert_equal "${stderr_lines[3]}" "kvmatch: dropped: 2 decode_error"
	assert_equal "$(jq -r '[.state, .reason // "-", .hash // "-"] | join(" ")' <<<"$output")" "dropped decode_error -
applied - 0x0000000000000002
dropped decode_error -"
}

@test "kvmatch: an event line whose src is longer than 1024 bytes is skipped" {
	long=tcp://$(printf 'h%.0s' $(seq 1 1019))
	{ event_line 300 0x1 1 | sed "s|tcp://10.0.0.5:5557|${long:0:1024}|"; echo
	  event_line 300 0x2 2 | sed "s|tcp://10.0.0.5:5557|$long|"; echo
	  event_line 300 0x3 3; echo; } > in.jsonl
	run --separate-stderr kvmatch --log applied in.jsonl
	assert_equal "$status" 65
	assert_equal "${stderr_lines[0]}" "kvmatch: in.jsonl: line 2: src longer than 1024 bytes"
	assert_equal "$(jq -r .hash <<<"$output")" "0x0000000000000001
0x0000000000000003"
}

# A registration line of exactly N bytes.
reg_line() {
	"$PY" -c '
import sys
n, i = int(sys.argv[1]), sys.argv[2]
r = "{\"instance_id\":\"w%s\",\"type\":\"vLLM\",\"modelname\":\"m\",\"block_size\":4,\"dp_rank\":0,\"medium_endpoints\":{\"npu\":\"tcp://10.0.0.5:%s\"}}" % (i, 5557 + int(i))
sys.stdout.write(r[:-1] + " " * (n - len(r)) + "}\n")' "$@"
}

@test "registrations: a line of 1 MiB is read; one byte more is refused, even a line that never ends" {
	{ reg_line $MiB 1; reg_line 100 2; } > at.jsonl
	: > ev.jsonl
	run --separate-stderr kvmatch -r at.jsonl -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "worker") | .instance_id' | tr '\n' ' ')" "w1 w2 "
	{ reg_line $((MiB + 1)) 1; reg_line 100 2; } > over.jsonl
	run --separate-stderr kvmatch -r over.jsonl ev.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvmatch: over.jsonl: line 1: longer than 1048576 bytes"
	# 256 MiB without a newline: streamed past, never held (a few MiB of
	# memory), and no further than the 64 MiB a registrations file may be
	run --separate-stderr bash -c "head -c $((256 * MiB)) /dev/zero | tr '\\0' ' ' | /usr/bin/time -f %M kvmatch -r - ev.jsonl"
	assert_equal "${stderr_lines[0]}" "kvmatch: -: line 1: longer than 1048576 bytes"
	assert_equal "${stderr_lines[1]}" "kvmatch: -: line 2: beyond the first 67108864 bytes: a registrations file is at most 64 MiB"
	# the buffer of the line skipped grows to twice the longest line it may
	# return, no further (it grew to 8 MiB, 5.9 MB of memory, for a while)
	if [ "${KVTOOLS_SAN:-}" = 1 ]; then limit=32000; else limit=5000; fi
	[ "${stderr_lines[-1]}" -lt "$limit" ] || fail "peak ${stderr_lines[-1]} KiB"
}

@test "registrations: 64 MiB are read, one byte more is refused; after 100 bad lines the rest is not read; a device or \`yes\` ends there" {
	# a pipe or a device that never ends was read to its end (never), each
	# bad line's message kept: \`kvmatch -r <(yes)\` grew without bound
	: > ev.jsonl
	reg_line 200 1 > at.jsonl
	head -c $((64 * MiB - 201)) /dev/zero | tr '\0' '\n' >> at.jsonl
	run --separate-stderr kvmatch -q -r at.jsonl -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "worker") | .instance_id')" w1
	{ cat at.jsonl; echo; } > over.jsonl
	run --separate-stderr kvmatch -r over.jsonl ev.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvmatch: over.jsonl: line $((64 * MiB - 200 + 1)): beyond the first 67108864 bytes: a registrations file is at most 64 MiB"
	# the 101st bad line: not reported, and nothing after it read
	{ for i in $(seq 101); do echo "{\"instance_id\":\"w$i\"}"; done; reg_line 200 2; } > bad.jsonl
	run --separate-stderr kvmatch -r bad.jsonl ev.jsonl
	assert_equal "$status" 65
	assert_equal "${#stderr_lines[@]}" 101
	assert_equal "${stderr_lines[99]}" "kvmatch: bad.jsonl: line 100: missing field \`type\` (kv-conductor answers 422)"
	assert_equal "${stderr_lines[100]}" "kvmatch: bad.jsonl: line 101: more than 100 bad lines: the rest is not read"
	mknod zero c 1 5
	run --separate-stderr timeout 20 kvmatch -r zero ev.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvmatch: zero: line 1: longer than 1048576 bytes
kvmatch: zero: line 2: beyond the first 67108864 bytes: a registrations file is at most 64 MiB"
	run --separate-stderr timeout 20 kvmatch -r <(yes) ev.jsonl
	assert_equal "$status" 65
	assert_equal "${stderr_lines[100]}" "kvmatch: /dev/fd/63: line 101: more than 100 bad lines: the rest is not read"
	run --separate-stderr timeout 20 kvsub -r <(yes '') -o c.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvsub: /dev/fd/63: line 67108865: beyond the first 67108864 bytes: a registrations file is at most 64 MiB"
	[ ! -e c.kvcap ]
}

@test "registrations: 65536 are read; a 65537th is refused" {
	"$PY" -c '
for i in range(65536):
    print("{\"instance_id\":\"w%d\",\"type\":\"vLLM\",\"modelname\":\"m\",\"block_size\":4,\"dp_rank\":0,\"medium_endpoints\":{\"npu\":\"tcp://10.0.%d.%d:5557\"}}" % (i, i // 256, i % 256))' > at.jsonl
	: > ev.jsonl
	run --separate-stderr kvmatch -q -r at.jsonl -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(kvmatch --dump s.kvsnap | jq -c 'select(.kind == "worker")' | grep -c .)" 65536
	{ cat at.jsonl; echo '{"instance_id":"x","type":"vLLM","modelname":"m","block_size":4,"dp_rank":0,"medium_endpoints":{"npu":"tcp://10.1.0.6:5557"}}'; } > over.jsonl
	run --separate-stderr kvmatch -r over.jsonl ev.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvmatch: over.jsonl: line 65537: more than 65536 registrations"
}

@test "kvmatch: 65536 sources are kept; records of a 65537th are dropped source_limit, the rest applied" {
	many_sources > in.kvcap
	run --separate-stderr kvmatch --log dropped,applied in.kvcap
	assert_success
	assert_equal "$(jq -c 'select(.state == "dropped")' <<<"$output")" '{"recv_ns":1764500000000000000,"state":"dropped","reason":"source_limit","hash":null,"workers":[],"src":"tcp://10.1.0.0:5557","seq":0,"count":1}'
	assert_equal "${stderr_lines[0]}" "kvmatch: 65538 records, 65537 events; 0 queued, 0 offload_cached, 0 matched, 0 confirmed, 0 applied, 1 dropped, 0 pending_expired"
	assert_equal "${stderr_lines[1]}" "kvmatch: dropped: 1 source_limit"
	# the record after it (the first source again) was applied: its removal met nothing
	assert_equal "${stderr_lines[2]}" "kvmatch: index: 1 partitions, 65536 workers, 0 blocks, 0 holdings; 0 pending, 0 offload cached, 0 content cached; 65537 removals of unknown blocks"
}

@test "kvmatch: 65536 workers are inferred; events of a 65537th are dropped worker_limit, the rest applied" {
	"$PY" -c '
import json
for dp in list(range(65537)) + [0]:
    print(json.dumps({"src": "tcp://10.0.0.5:5557", "recv_ns": 1000000000, "seq": dp, "format": "vllm", "dp_rank": dp,
        "type": "stored", "medium": "xpu", "block_hashes": ["0x%x" % (dp + 1)], "parent": None,
        "token_ids": [dp, 1, 2, 3], "block_size": 4}))' > in.jsonl
	run --separate-stderr kvmatch --log dropped in.jsonl
	assert_success
	assert_equal "$output" '{"recv_ns":1000000000,"state":"dropped","reason":"worker_limit","hash":"0x0000000000010001","medium":"xpu","workers":[],"src":"tcp://10.0.0.5:5557","seq":65536}'
	assert_equal "${stderr_lines[0]}" "kvmatch: 65538 records, 65538 events; 0 queued, 0 offload_cached, 0 matched, 0 confirmed, 65537 applied, 1 dropped, 0 pending_expired"
	assert_equal "${stderr_lines[1]}" "kvmatch: dropped: 1 worker_limit"
	assert_equal "${stderr_lines[2]}" "kvmatch: index: 1 partitions, 65536 workers, 65536 blocks, 65536 holdings; 0 pending, 0 offload cached, 0 content cached; 0 removals of unknown blocks"
}

@test "kvmatch: 4096 partitions; a 4097th, or a name longer than 1024 bytes, is dropped partition_limit" {
	"$PY" -c '
import json
def ev(seq, lora):
    return json.dumps({"src": "tcp://10.0.0.5:5557", "recv_ns": 1000000000, "seq": seq, "format": "vllm",
        "type": "stored", "medium": "xpu", "block_hashes": ["0x%x" % (seq + 1)], "parent": None,
        "token_ids": [seq, 2, 3, 4], "block_size": 4, "lora_name": lora})
for i in range(4095):
    print(ev(i, "lora-%d" % i))
print(ev(4095, "l" * 1024))
print(ev(4096, "lora-4096"))
print(ev(4097, "lora-0"))' > at.jsonl
	run --separate-stderr kvmatch --log dropped at.jsonl
	assert_success
	assert_equal "$(jq -c '[.reason, .hash, .model]' <<<"$output")" '["partition_limit","0x0000000000001001",null]'
	# the event after it, for the first partition again, was applied
	assert_equal "${stderr_lines[2]}" "kvmatch: index: 4096 partitions, 1 workers, 4097 blocks, 4097 holdings; 0 pending, 0 offload cached, 0 content cached; 0 removals of unknown blocks"
	"$PY" -c '
import json
print(json.dumps({"src": "tcp://10.0.0.5:5557", "recv_ns": 1000000000, "seq": 1, "format": "vllm",
    "type": "stored", "medium": "xpu", "block_hashes": ["0x1"], "parent": None,
    "token_ids": [1, 2, 3, 4], "block_size": 4, "lora_name": "l" * 1025}))
print(json.dumps({"src": "tcp://kvs:5557", "recv_ns": 1000000000, "seq": 1, "format": "memcache",
    "type": "stored", "medium": "cpu", "block_hashes": ["0x2"], "backend_id": "10.0.0.5", "tenant_id": "t" * 1025}))' > over.jsonl
	run --separate-stderr kvmatch --log dropped over.jsonl
	assert_success
	assert_equal "$(jq -r '[.reason, .hash] | join(" ")' <<<"$output")" "partition_limit 0x0000000000000001
partition_limit 0x0000000000000002"
}

# N registered workers on host 10.0.0.1 and one inferred there (registrations
# stop at 65536), an offload of one block by the first, then a pool store of
# it for that host: every one of the N + 1 workers is a target.
holders_case() {
	"$PY" -c '
import json, sys
n = int(sys.argv[1])
with open("regs.jsonl", "w") as f:
    for i in range(n):
        # one endpoint each (a shared one is a registration conflict), all on host 10.0.0.1
        ep = "tcp://10.0.0.1:5557" if i == 0 else "tcp://if%d;10.0.0.1:5557" % i
        f.write(json.dumps({"instance_id": "w%05d" % i, "type": "vLLM", "dp_rank": 0, "block_size": 4, "modelname": "m",
            "medium_endpoints": {"npu": ep}}) + "\n")
    f.write(json.dumps({"instance_id": "kvs", "type": "Memcache", "dp_rank": 0, "block_size": 4, "endpoint": "tcp://kvs:5557", "store_backend": "Memcache", "modelname": "m"}) + "\n")
def ev(src, t, medium, h, tokens, fmt="vllm"):
    e = {"src": src, "recv_ns": t * 1000000000, "seq": t, "format": fmt, "type": "stored", "medium": medium,
         "block_hashes": [h]}
    if tokens:
        e.update({"parent": None, "token_ids": tokens, "block_size": 4})
    else:
        e["backend_id"] = "10.0.0.1"
    print(json.dumps(e))
ev("tcp://10.0.0.1:5558", 1, "xpu", "0xc", [9, 10, 11, 12])
ev("tcp://10.0.0.1:5557", 2, "cpu", "0xa", [1, 2, 3, 4])
ev("tcp://kvs:5557", 3, "cpu", "0xa", None, "memcache")
ev("tcp://10.0.0.1:5557", 4, "xpu", "0xb", [5, 6, 7, 8])' "$1" > ev.jsonl
}

@test "kvmatch: a block holds 65535 holders; one more is dropped holder_limit, the rest applied" {
	holders_case 65534
	run --separate-stderr kvmatch -r regs.jsonl --log dropped,applied ev.jsonl
	assert_success
	assert_equal "$(jq -c '[.state, .hash]' <<<"$output")" '["applied","0x000000000000000c"]
["applied","0x000000000000000b"]'
	assert_equal "${stderr_lines[1]}" "kvmatch: index: 2 partitions, 65535 workers, 3 blocks, 65537 holdings; 0 pending, 0 offload cached, 0 content cached; 0 removals of unknown blocks"
	holders_case 65535
	run --separate-stderr kvmatch -r regs.jsonl --log dropped,applied ev.jsonl
	assert_success
	assert_equal "$(jq -c '[.state, .reason, .hash, .count]' <<<"$output")" '["applied",null,"0x000000000000000c",null]
["dropped","holder_limit","0x000000000000000a",1]
["applied",null,"0x000000000000000b",null]'
	assert_equal "${stderr_lines[1]}" "kvmatch: dropped: 1 holder_limit"
	assert_equal "${stderr_lines[2]}" "kvmatch: index: 2 partitions, 65536 workers, 3 blocks, 65537 holdings; 0 pending, 0 offload cached, 0 content cached; 0 removals of unknown blocks"
}

# ---- kvquery ---------------------------------------------------------------

# A snapshot of one partition with block size 16, for queries.
snapshot() {
	printf '{"src":"%s","recv_ns":1000000000,"seq":1,"format":"vllm","type":"stored","medium":"xpu","block_hashes":["0x1"],"parent":null,"token_ids":[%s],"block_size":16}\n' \
		"$SRC" "$(seq -s, 1 16)" | kvmatch -q --log none -o s.kvsnap
}

@test "kvquery: a query of 2^24 tokens or hashes is answered; one more is null with a message" {
	snapshot
	"$PY" -c '
import sys
n = 1 << 24
sys.stdout.write(" ".join(["1"] * n) + "\n")
sys.stdout.write(" ".join(["1"] * (n + 1)) + "\n")
sys.stdout.write("{\"block_hashes\":[" + ",".join(["1"] * n) + "]}\n")
sys.stdout.write("{\"block_hashes\":[" + ",".join(["1"] * (n + 1)) + "]}\n")
sys.stdout.write("[" + ",".join(map(str, range(1, 17))) + "]\n")' > q.txt
	run --separate-stderr kvquery -s s.kvsnap q.txt
	assert_equal "$status" 65
	assert_equal "$output" '{"default":{}}
null
{"default":{}}
null
{"default":{"10.0.0.5:5557":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":16,"npu_blocks":1}},"longest_matched":16}}}'
	assert_equal "${stderr_lines[0]}" "kvquery: q.txt: line 2: token_ids: more than 16777216 token ids"
	assert_equal "${stderr_lines[1]}" "kvquery: q.txt: line 4: block_hashes: more than 16777216 hashes"
}

@test "kvquery: a query line of 256 MiB is answered; one byte more is null with a message" {
	snapshot
	# "[1,...,16" is 39 bytes, then blanks, then "]"
	{ printf '[%s' "$(seq -s, 1 16)"; head -c $((256 * MiB - 40)) /dev/zero | tr '\0' ' '; echo ']'
	  printf '[%s' "$(seq -s, 1 16)"; head -c $((256 * MiB - 39)) /dev/zero | tr '\0' ' '; echo ']'
	  echo '[1,2,3]'; } > q.txt
	run --separate-stderr kvquery -s s.kvsnap --route q.txt
	assert_equal "$status" 65
	assert_equal "${lines[1]}" null
	assert_equal "$(jq -c '[.instance_id, .matched_tokens]' <<<"$output")" '["10.0.0.5:5557",16]
[null,null]
["10.0.0.5:5557",0]'
	assert_equal "$stderr" "kvquery: q.txt: line 2: line longer than 256 MiB"
}

# ---- kvsub -----------------------------------------------------------------

@test "kvsub: a message that makes a 64 MiB record is captured; one byte more, or 65 frames, is counted oversized" {
	p=$(port)
	ep=tcp://127.0.0.1:$p
	# a record: array, recv_ns (9), src, flags (1), frames array, bins: 30 + len(src) + payload
	room=$((64 * MiB - 30 - ${#ep}))
	kvsub -c 2 --max-message $((64 * MiB)) -o cap.kvcap "$ep" 2> err & sub=$!
	sleep 0.2
	# ZeroMQ queues one such message for kvsub at a time: framepub waits
	# until all have left
	framepub -l 20000 "$ep" "0,seq,$room" "0,seq,$((room + 1))" "1*65" "0,seq,10"
	wait_for $sub 20
	assert_equal "$status" 0
	# seq and payload size of each record (capdump's hex of 64 MiB is slow to measure)
	assert_equal "$("$PY" -c '
import msgpack, sys
for o in msgpack.Unpacker(open(sys.argv[1], "rb"), max_buffer_size=1 << 28):
    if isinstance(o, list):
        print(int.from_bytes(o[3][1], "big"), len(o[3][2]))' cap.kvcap)" "0 $room
3 10"
	assert_equal "$(cat err)" "kvsub: $ep: 3 messages, $((2 * room + 8 * 3 + 11)) bytes, 1 gaps, 1 missing, 0 replayed, 0 restarts, 0 bad seq, 2 oversized"
}

@test "kvsub: an endpoint of 1024 bytes is captured from; 1025 are a usage error" {
	# inproc names may be that long (ipc paths may not), and connect before any bind
	name=$(printf 'x%.0s' $(seq 1 1015))
	run --separate-stderr kvsub -W 0.1 -o cap.kvcap "inproc://$name"
	assert_success
	run --separate-stderr kvsub -W 0.1 -o cap.kvcap "inproc://x$name"
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: inproc://x${name:0:54}...: endpoint longer than 1024 bytes"
}

@test "kvsub: more endpoints than ZeroMQ's default 1023 sockets; past the open-files limit, exit 69" {
	eps=$(for i in $(seq 1 1100); do printf 'inproc://e%d ' "$i"; done)
	run --separate-stderr bash -c "ulimit -n \$(ulimit -Hn) 2>/dev/null; [ \$(ulimit -n) -ge 2000 ] || exit 99; kvsub -q -W 0.1 -o /dev/null $eps"
	[ "$status" -ne 99 ] || skip "the open-files limit is below 2000"
	assert_success
	# (LeakSanitizer, under make check SAN=1, needs descriptors at exit)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		run --separate-stderr bash -c "ulimit -n 128; kvsub -W 0.1 -o /dev/null $eps"
	assert_equal "$status" 69
	[[ $stderr =~ ^kvsub:\ inproc://e([0-9]+):\ cannot\ open\ a\ socket\ after\ ([0-9]+)\ endpoints:\ Too\ many\ open\ files$ ]]
	[ "${BASH_REMATCH[1]}" -eq $((BASH_REMATCH[2] + 1)) ] && [ "${BASH_REMATCH[2]}" -gt 50 ]
}

# ---- kvpub -----------------------------------------------------------------

@test "kvpub: 65536 sources are published; the records of others are skipped and counted" {
	many_sources > in.kvcap
	run --separate-stderr kvpub --speed max --slow-joiner-wait 0 --linger 0 --single "ipc://$T/p" in.kvcap
	assert_success
	assert_equal "$(grep -c ' -> ipc://' <<<"$stderr")" 65536
	assert_equal "$(grep -v ' -> ' <<<"$stderr")" "kvpub: more than 65536 sources: the records of the others are skipped
kvpub: ipc://$T/p: 65537 messages, 2490024 bytes
kvpub: 1 records of sources beyond the first 65536 skipped"
}

@test "kvpub: a record over 64 MiB ends that input with its offset; the next file is played" {
	pycap "header() + record_of_size((64 << 20) + 1, 1)" > over.kvcap
	pycap "header() + record(removal(2))" > next.kvcap
	run --separate-stderr kvpub --speed max --slow-joiner-wait 0 --linger 0 --single "ipc://$T/p" over.kvcap next.kvcap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvpub: over.kvcap: byte 30: object larger than the record limit
kvpub: tcp://10.0.0.5:5557 -> ipc://$T/p
kvpub: ipc://$T/p: 1 messages, 36 bytes"
}

# ---- kvgen -----------------------------------------------------------------

# A trace line of exactly N bytes.
trace_line() {
	"$PY" -c '
import sys
n = int(sys.argv[1])
r = "{\"timestamp\":%s,\"input_length\":512,\"output_length\":1,\"hash_ids\":[%s]}" % (sys.argv[2], sys.argv[3])
sys.stdout.write(r[:-1] + " " * (n - len(r)) + "}\n")' "$@"
}

@test "kvgen: a trace line of 1 MiB is served; one byte more is skipped with its line number" {
	{ trace_line $MiB 0 1; trace_line $((MiB + 1)) 1 2; trace_line 100 2 3; } > trace.jsonl
	run --separate-stderr kvgen -n --workers 1 --dp 1 trace.jsonl
	assert_equal "$status" 65
	assert_equal "${stderr_lines[0]}" "kvgen: trace.jsonl: line 2: longer than 1 MiB"
	[[ ${stderr_lines[1]} == "kvgen: policy kv: 2 requests, 1024 prompt tokens, "* ]]
}

@test "kvgen: input_length up to 2^24 is served; more is refused with its line number" {
	"$PY" -c '
ids = ",".join(str(i) for i in range(1, 32769))
for ts, n in ((0, 1 << 24), (1, (1 << 24) + 1)):
    print("{\"timestamp\":%d,\"input_length\":%d,\"output_length\":1,\"hash_ids\":[%s]}" % (ts, n, ids))' > trace.jsonl
	trace_line 200 2 1 >> trace.jsonl
	run --separate-stderr kvgen -n --workers 1 --dp 1 --block-size 512 --capacity 40000 trace.jsonl
	assert_equal "$status" 65
	assert_equal "${stderr_lines[0]}" "kvgen: trace.jsonl: line 2: input_length: expected an integer from 0 to 16777216"
	[[ ${stderr_lines[1]} == "kvgen: policy kv: 2 requests, 16777728 prompt tokens, "* ]]
}

@test "kvgen: a timestamp up to 2^32-1 ms is served; later is refused with its line number" {
	{ trace_line 200 4294967295 1; trace_line 200 4294967296 2; trace_line 200 0 3; } > trace.jsonl
	run --separate-stderr kvgen -n --workers 1 --dp 1 trace.jsonl
	assert_equal "$status" 65
	assert_equal "${stderr_lines[0]}" "kvgen: trace.jsonl: line 2: timestamp: expected milliseconds from 0 to 4294967295"
	# line 3 goes back to 0: served at 2^32-1 ms, said once
	assert_equal "${stderr_lines[1]}" "kvgen: trace.jsonl: line 3: timestamp 0 ms goes back before the previous request's: served at the time reached instead, as is every later one that goes back (said once)"
	[[ ${stderr_lines[2]} == "kvgen: policy kv: 2 requests, 1024 prompt tokens, "* ]]
}

# ---- kvstat ----------------------------------------------------------------

# Serves this test's directory over HTTP on a fresh port (files of any
# size): sets $base and $srv.
serve_dir() {
	local p i=0
	p=$(port)
	base=http://127.0.0.1:$p
	"$PY" -m http.server --bind 127.0.0.1 "$p" > /dev/null 2>&1 & srv=$!
	until (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || [ $i -ge 250 ]; do sleep 0.02; i=$((i + 1)); done
}

@test "kvstat: every bound of the exposition holds at its value and fails one past it" {
	"$PY" - <<-'EOF'
	def put(name, text):
	    open(name, "w").write(text)
	labels = lambda n: ",".join('l%d="v"' % i for i in range(n))
	put("labels-at", "a{%s} 1\n" % labels(64))
	put("labels-over", "a{%s} 1\n" % labels(65))
	put("name-at", "%s 1\n" % ("a" * 256))
	put("name-over", "%s 1\n" % ("a" * 257))
	put("value-at", 'a{l="%s"} 1\n' % ("v" * 4096))
	put("value-over", 'a{l="%s"} 1\n' % ("v" * 4097))
	put("line-at", "# %s\na 1\n" % ("c" * 65534))
	put("line-over", "# %s\na 1\n" % ("c" * 65535))
	put("samples-at", "".join('a{i="%d"} 1\n' % i for i in range(200000)))
	put("samples-over", "".join('a{i="%d"} 1\n' % i for i in range(200001)))
	put("families-at", "".join("# TYPE f%d counter\n" % i for i in range(20000)) + "a 1\n")
	put("families-over", "".join("# TYPE f%d counter\n" % i for i in range(20001)) + "a 1\n")
	EOF
	serve_dir
	for kind in labels name value line samples families; do
		run --separate-stderr kvstat -f json -c 1 "$base/$kind-at"
		[ "$status" -eq 0 ] && [ -z "$stderr" ] || { echo "$kind-at: $status $stderr"; stop_bg $srv; false; }
		run --separate-stderr kvstat -f json -c 1 "$base/$kind-over"
		[ "$status" -eq 69 ] || { echo "$kind-over: $status"; stop_bg $srv; false; }
		echo "${stderr_lines[0]#"kvstat: $base/$kind-over: "}" >> messages
	done
	stop_bg $srv
	assert_equal "$(cat messages)" "line 1: more than 64 labels
line 1: metric name longer than 256 bytes
line 1: value of label l longer than 4096 bytes
line 1: longer than 65536 bytes
line 200001: more than 200000 samples
line 20001: more than 20000 metric families"
}

@test "kvmatch: a snapshot of 65536 sources that arrived in reverse order is written, sorted (no insertion sort)" {
	# sorting the sources by insertion ("sources are few") took 41 s for
	# these, and every --snapshot-every write paid it; the bound is generous
	pycap "header() + b''.join(record(removal(i + 1), src='tcp://10.%d.%d.%d:5557' % (i >> 16, (i >> 8) & 255, i & 255)) for i in reversed(range(65536)))" > in.kvcap
	run --separate-stderr timeout 30 kvmatch -q --log none -o s.kvsnap in.kvcap
	assert_success
	kvmatch --dump s.kvsnap | jq -r 'select(.kind == "source") | .src' > srcs
	assert_equal "$(grep -c . srcs)" 65536
	sort -c srcs
	assert_equal "$(head -1 srcs)" "tcp://10.0.0.0:5557"
}

@test "kvmatch: pool events on a cluster of 30000 workers cost a lookup each, not a scan of every worker (no quadratic step)" {
	# each pool event scanned every worker for its backend_id's host: 30000
	# workers x 200000 events took 21 s here, a lookup each takes 0.4 s
	"$PY" - <<-'PYEOF'
	import json
	with open("regs.jsonl", "w") as f:
	    for i in range(30000):
	        f.write(json.dumps({"instance_id": "w%05d" % i, "type": "vLLM", "dp_rank": 0, "block_size": 4, "modelname": "m",
	                            "medium_endpoints": {"npu": "tcp://10.%d.%d.%d:5557" % (i >> 16, (i >> 8) & 255, i & 255)}}) + "\n")
	    f.write(json.dumps({"instance_id": "kvs", "type": "Memcache", "dp_rank": 0, "block_size": 4, "modelname": "m",
	                        "endpoint": "tcp://kvs:5557", "store_backend": "memcache"}) + "\n")
	with open("ev.jsonl", "w") as f:
	    for i in range(200000):
	        w = i % 30000
	        f.write('{"src":"tcp://kvs:5557","recv_ns":%d,"seq":%d,"format":"memcache","dp_rank":null,"type":"stored","medium":"cpu","block_hashes":["0x%x"],"backend_id":"10.0.%d.%d","model_name":"m"}\n'
	                % (1764500000000000000 + i, i, i + 1, w >> 8, w & 255))
	PYEOF
	run --separate-stderr timeout 10 kvmatch -r regs.jsonl --log none --max-pending 1000000 ev.jsonl
	assert_success
	assert_equal "${stderr_lines[1]}" "kvmatch: index: 1 partitions, 30000 workers, 0 blocks, 0 holdings; 200000 pending, 0 offload cached, 0 content cached; 0 removals of unknown blocks"
	assert_equal "${stderr_lines[0]}" "kvmatch: 200000 records, 200000 events; 200000 queued, 0 offload_cached, 0 matched, 0 confirmed, 0 applied, 0 dropped, 0 pending_expired"
}
