#!/usr/bin/env bats
# kvnats against real nats-server processes: each test starts its own on
# 127.0.0.1 (free ports, JetStream store in the test's directory) and
# stops them afterwards; every wait is bounded.
load helper

TRACE=$ROOT/share/traces/conversation-300.jsonl

# nats_server NAME PORT [ARG]...: a JetStream server in the background,
# ready when this returns (at most 10 s).
nats_server() {
	local name=$1 p=$2 i=0
	shift 2
	nats-server -a 127.0.0.1 -p "$p" -n "$name" -js -sd "$T/js-$name" "$@" > "$T/$name.log" 2>&1 &
	echo $! > "$T/$name.pid"
	echo $! >> "$T/servers"
	until grep -qs 'Server is ready' "$T/$name.log"; do
		sleep 0.05
		i=$((i + 1))
		[ $i -lt 200 ] || { echo "# $name not ready after 10 s" >&3; cat "$T/$name.log" >&3; return 1; }
	done
}

# A three-server JetStream cluster; URLS is its client URLs, comma-separated.
nats_cluster() {
	local p c i routes=
	p=$(port 3)
	c=$(port 3)
	for i in 0 1 2; do routes=$routes${routes:+,}nats://127.0.0.1:$((c + i)); done
	for i in 0 1 2; do
		CLUSTER_ARGS[i]="--cluster_name kv --cluster nats://127.0.0.1:$((c + i)) --routes $routes"
		# shellcheck disable=SC2086
		nats_server "s$i" $((p + i)) ${CLUSTER_ARGS[i]}
	done
	URLS=nats://127.0.0.1:$p,nats://127.0.0.1:$((p + 1)),nats://127.0.0.1:$((p + 2))
	PORT0=$p
}

# A small file system that fills up (the tests run as root); MNT is where.
MNT=
mount_small() {
	MNT=$T/full
	mkdir -p "$MNT"
	mount -t tmpfs -o size=256k tmpfs "$MNT"
}

teardown() {
	local pid
	if [ -n "$MNT" ] && mountpoint -q "$MNT"; then
		umount "$MNT" || umount -l "$MNT"
	fi
	[ -f "$T/servers" ] || return 0
	while read -r pid; do kill "$pid" 2>/dev/null || true; done < "$T/servers"
	while read -r pid; do wait "$pid" 2>/dev/null || true; done < "$T/servers"
}

# One server; URL is its client URL.
one_server() {
	local p
	p=$(port)
	nats_server s "$p"
	URL=nats://127.0.0.1:$p
}

# A kvgen cluster capture (2 nodes x 2 ranks and a memcache pool) of N
# requests, its registrations and its queries.
capture() {
	kvgen -q --workers 2 --dp 2 --block-size 64 --capacity 1500 --pool memcache --limit "${1:-40}" \
		--registrations regs.jsonl --queries queries.jsonl -o in.kvcap "$TRACE"
}

# nats_request URL SUBJECT BODY: a request by the NATS protocol itself (as
# another program would make it), its reply on stdout (waited for 10 s at most).
nats_request() {
	exec 4<> "/dev/tcp/127.0.0.1/${1##*:}"
	printf 'CONNECT {"verbose":false,"headers":true}\r\nSUB _INBOX.t 1\r\nPUB %s _INBOX.t %d\r\n%s\r\n' \
		"$2" "${#3}" "$3" >&4
	timeout 10 bash -c 'while read -r l <&4; do case $l in MSG*) read -r l <&4; echo "$l"; exit 0 ;; PING*) printf "PONG\r\n" >&4 ;; esac; done'
	exec 4>&-
}

# The server that leads stream $2 of the cluster, asked of the server at $1.
stream_leader() { nats_request "$1" "\$JS.API.STREAM.INFO.$2" '' | jq -r '.cluster.leader'; }

# Messages in stream $2 of servers $1.
messages() { kvnats -L -s "$1" --stream "$2" --format json | jq -s '.[0].messages'; }

# Waits (at most $3 seconds) until stream $2 holds at least $4 messages
# (none while the servers do not answer: a server killed, a leader elected).
wait_messages() {
	local i=0 n
	for (( ; ; )); do
		n=$(messages "$1" "$2" 2> /dev/null)
		[[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge "$4" ] && return 0
		sleep 0.1
		i=$((i + 1))
		[ $i -lt $(($3 * 10)) ] || { echo "# stream $2: fewer than $4 messages after $3 s" >&3; return 1; }
	done
}

# Stream R3, three replicas, on the cluster: JetStream needs its cluster's
# leader, elected in a few seconds (tried for at most 100 times 0.2 s).
r3_stream() {
	local i=0
	until kvnats -P -q -s "$URLS" --stream R3 --replicas 3 --max-bytes 67108864 < /dev/null 2> create.err; do
		sleep 0.2
		i=$((i + 1))
		[ $i -lt 100 ] || { cat create.err >&3; return 1; }
	done
}

@test "kvnats: a capture produced and consumed back is byte-identical; -L counts it" {
	one_server
	capture
	run --separate-stderr kvnats -P -s "$URL" -r regs.jsonl in.kvcap
	assert_success
	n=$(capdump in.kvcap 2>/dev/null | wc -l)
	assert_equal "${stderr_lines[0]}" "kvnats: $URL: created stream KVTOOLS (1 replicas)"
	# records and headers counted apart: n records, as the consumer gives them back
	assert_equal "${stderr_lines[1]}" "kvnats: stream KVTOOLS: records: $n published, $n stored, 0 duplicates, 0 retried, 0 lost; headers: 1 published, 1 stored, 0 duplicates, 0 retried, 0 lost"
	run --separate-stderr kvnats -C -s "$URL" --bare -o out.kvcap
	assert_success
	assert_equal "$stderr" "kvnats: stream KVTOOLS: $n records written, 0 messages skipped"
	cmp in.kvcap out.kvcap
	# with positions: the same records for every reader, each with its stream sequence
	kvnats -C -q -s "$URL" > pos.kvcap
	cmp <(kvdecode in.kvcap) <(kvdecode pos.kvcap)
	run kvnats -L -s "$URL" --format json
	assert_success
	assert_line --index 0 --regexp "^\{\"stream\":\"KVTOOLS\",\"subjects\":\[\"KVTOOLS.>\"\],\"messages\":$((n + 1)),\"bytes\":[0-9]+,\"first_seq\":1,\"last_seq\":$((n + 1)),\"replicas\":1,\"consumers\":0\}$"
	# such a capture published again travels as the records were first published
	kvnats -P -q -s "$URL" --stream AGAIN pos.kvcap
	kvnats -C -q -s "$URL" --stream AGAIN --bare | cmp - in.kvcap
	# the subjects carry the partition: every source is registered for llama/default
	assert_equal "$(kvnats -C -q -s "$URL" --filter 'KVTOOLS.llama.default.>' | capdump 2>/dev/null | wc -l)" "$n"
	assert_equal "$(kvnats -C -q -s "$URL" --filter 'KVTOOLS._._.>' | capdump 2>/dev/null | wc -l)" 0
	# without registrations, "_" for both; the source escaped into one token
	kvnats -P -q -s "$URL" --stream NOREG in.kvcap
	pool=$(capdump in.kvcap 2>/dev/null | grep -c '^tcp://kvs-master:5557')
	assert_equal "$(kvnats -C -q -s "$URL" --stream NOREG --filter 'NOREG._._.tcp%3A%2F%2Fkvs-master%3A5557' | capdump 2>/dev/null | wc -l)" "$pool"
}

@test "kvnats: a wildcard pool registration gives the subject the registration kvmatch finds for the source" {
	# the pool registered as tcp://*:5557 (kvmatch(1) "Workers"): kvmatch
	# gives the source tcp://kvs-master:5557 that registration's instance;
	# kvnats compared sources character for character and published its
	# records under _._
	one_server
	capture
	jq -c '.tenant_id = "t1" | if .endpoint then .endpoint = "tcp://*:5557" | .type = "YuanRong" | .store_backend = "YuanRong" else . end' \
		regs.jsonl > wild.jsonl
	kvmatch -q -r wild.jsonl --log none -o wild.kvsnap in.kvcap
	assert_equal "$(kvmatch --dump wild.kvsnap | jq -r 'select(.kind == "worker") | .instance_id' | sort -u | paste -sd' ')" "kvs-master node0 node1"
	kvnats -P -q -s "$URL" -r wild.jsonl in.kvcap
	n=$(capdump in.kvcap 2>/dev/null | wc -l)
	pool=$(capdump in.kvcap 2>/dev/null | grep -c '^tcp://kvs-master:5557')
	assert_equal "$(kvnats -C -q -s "$URL" --filter 'KVTOOLS.llama.t1.tcp%3A%2F%2Fkvs-master%3A5557' | capdump 2>/dev/null | wc -l)" "$pool"
	assert_equal "$(kvnats -C -q -s "$URL" --filter 'KVTOOLS.llama.t1.>' | capdump 2>/dev/null | wc -l)" "$n"
}

@test "kvnats: names too long for a NATS subject travel as their digest, and the records arrive whole" {
	# escaped, a 1000-byte model and tenant passed NATS's 4096-byte PUB line: the
	# server closed the connection and every record was lost (exit 69)
	one_server
	model=$(printf '%%%.0s' $(seq 1000)) tenant=$(printf '.%.0s' $(seq 300)) host=$(printf 'h%.0s' $(seq 200))
	jq -nc --arg m "$model" --arg t "$tenant" --arg e "tcp://$host:5557" \
		'{instance_id: "a", type: "vLLM", dp_rank: 0, block_size: 4, modelname: $m, tenant_id: $t, medium_endpoints: {npu: $e}}' > long.jsonl
	j2mp --src "tcp://$host:5557" <<<'[1.0, [["BlockRemoved", [1]]], 0]' > long.kvcap
	run --separate-stderr kvnats -P -s "$URL" -r long.jsonl long.kvcap
	assert_success
	assert_equal "${stderr_lines[1]}" "kvnats: stream KVTOOLS: records: 1 published, 1 stored, 0 duplicates, 0 retried, 0 lost; headers: 1 published, 1 stored, 0 duplicates, 0 retried, 0 lost"
	kvnats -C -q -s "$URL" --bare | cmp - long.kvcap
	# the tokens: ~ and python3-xxhash's xxh3_128_hexdigest of each long name; the
	# source, 222 bytes escaped, as it is
	digest() { /usr/bin/python3 -c 'import sys, xxhash; print("~" + xxhash.xxh3_128_hexdigest(sys.argv[1].encode()))' "$1"; }
	subject="KVTOOLS.$(digest "$model").$(digest "$tenant").tcp%3A%2F%2F$host%3A5557"
	assert_equal "$(kvnats -C -q -s "$URL" --bare --filter "$subject" | capdump 2>/dev/null | wc -l)" 1
}

@test "kvnats -L: a table row is written whole however long the names in it" {
	# rows were cut at 1023 bytes, their newline with them
	one_server
	kvnats -P -q -s "$URL" "$ROOT/share/sample.kvcap"
	long=$(printf 'm%.0s' $(seq 1100))
	kvnats -C -q -s "$URL" --durable longf --filter "KVTOOLS.$long.>" -o /dev/null
	run --separate-stderr kvnats -L -s "$URL"
	assert_success
	assert_equal "${#lines[@]}" 3
	assert_regex "${lines[2]}" "^KVTOOLS +longf +KVTOOLS\.$long\.> +- +[0-9]+ +0\$"
}

@test "kvnats: two producers publishing the same capture at once store each record once" {
	one_server
	capture
	kvnats -P -q -s "$URL" < /dev/null
	kvnats -P -s "$URL" in.kvcap 2> a.err & a=$!
	kvnats -P -s "$URL" in.kvcap 2> b.err & b=$!
	wait_for $a 60
	assert_equal "$status" 0
	wait_for $b 60
	assert_equal "$status" 0
	n=$(capdump in.kvcap 2>/dev/null | wc -l)
	assert_equal "$(messages "$URL" KVTOOLS)" $((n + 1))
	# every publish acknowledged: as stored by one producer, as a duplicate by the other
	stored=$(cat a.err b.err | sed -nE 's/.* records: [0-9]+ published, ([0-9]+) stored, ([0-9]+) duplicates.*; headers: [0-9]+ published, ([0-9]+) stored, ([0-9]+) duplicates.*/\1 \2 \3 \4/p' |
		awk '{ s += $1; d += $2; hs += $3; hd += $4 } END { print s, d, hs, hd }')
	assert_equal "$stored" "$n $n 1 1"
	kvnats -C -q -s "$URL" --bare | cmp - in.kvcap
}

@test "kvnats: a publisher that restarted and sent the same batch with the same seq again is a record, not a duplicate" {
	# the message id was the digest of (src, seq, payload): JetStream dropped
	# the batch sent again as a duplicate, which kvmatch applies from the file
	one_server
	printf '%s\n' '[1764500000.0, [["BlockStored", [1], null, [1,2,3,4], 4]], 0]' \
		'[1764500001.0, [["BlockStored", [2], 1, [5,6,7,8], 4]], 0]' | j2mp --recv 1764500000000000000 > run1.kvcap
	# restarted: seq 0 again, byte for byte the same first batch, received later
	printf '%s\n' '[1764500000.0, [["BlockStored", [1], null, [1,2,3,4], 4]], 0]' | j2mp --recv 1764500005000000000 > run2.kvcap
	# (its record only: j2mp's headers are all the same bytes)
	cat run1.kvcap <(tail -c +$(($(j2mp < /dev/null | wc -c) + 1)) run2.kvcap) > in.kvcap
	run --separate-stderr kvnats -P -s "$URL" in.kvcap
	assert_success
	assert_equal "${stderr_lines[1]}" "kvnats: stream KVTOOLS: records: 3 published, 3 stored, 0 duplicates, 0 retried, 0 lost; headers: 1 published, 1 stored, 0 duplicates, 0 retried, 0 lost"
	kvnats -C -q -s "$URL" --bare | cmp - in.kvcap
	# from the stream as from the file: the batch sent again is a restart, applied
	kvnats -C -q -s "$URL" | kvmatch -q --log none -o stream.kvsnap
	kvmatch -q --log none -o file.kvsnap in.kvcap
	cmp <(kvmatch --dump stream.kvsnap | grep -v '"kind":"stream"') <(kvmatch --dump file.kvsnap)
	assert_equal "$(kvmatch --dump file.kvsnap | jq -r 'select(.kind == "source") | .restarts')" 1
	# the same capture published again is stored once: every message a duplicate
	run --separate-stderr kvnats -P -s "$URL" in.kvcap
	assert_success
	assert_equal "$stderr" "kvnats: stream KVTOOLS: records: 3 published, 0 stored, 3 duplicates, 0 retried, 0 lost; headers: 1 published, 0 stored, 1 duplicates, 0 retried, 0 lost"
}

@test "kvnats: a consumer killed mid-stream and restarted with its durable name gives the uninterrupted snapshot" {
	one_server
	capture 60
	kvnats -P -q -s "$URL" -r regs.jsonl in.kvcap
	kvnats -C -q -s "$URL" | kvmatch -q -r regs.jsonl --log none -o whole.kvsnap
	# the consumer blocks on a full pipe after 1 MB is read, and is killed
	# there, with some batches of 5 acknowledged and one written in part
	mkfifo pipe
	kvnats -C -q -s "$URL" --durable d1 --batch 5 > pipe & c=$!
	exec 5< pipe
	head -c 1000000 <&5 > part.kvcap
	kill -9 $c
	wait_for $c 10 || true
	assert_equal "$status" 137
	cat <&5 >> part.kvcap
	exec 5<&-
	# what it wrote ends inside a record: kvmatch keeps the records before it
	run kvmatch -q -r regs.jsonl --log none -o part.kvsnap part.kvcap
	assert_equal "$status" 65
	run kvnats -L -s "$URL" --format json
	assert_line --regexp '"consumer":"d1","durable":true,.*"unacked":[1-9]'
	run --separate-stderr bash -c "set -o pipefail; kvnats -C -s '$URL' --durable d1 | kvmatch -q -r regs.jsonl --log none -i part.kvsnap -o resumed.kvsnap"
	assert_success
	assert_regex "${stderr_lines[0]}" '^kvnats: stream KVTOOLS: durable d1 resumes after message [1-9][0-9]*, the last it acknowledged$'
	cmp resumed.kvsnap whole.kvsnap
	# a durable that finished resumes after its last record: nothing more
	run --separate-stderr kvnats -C -s "$URL" --durable d1 --bare -o rest.kvcap
	assert_success
	assert_equal "$stderr" "kvnats: stream KVTOOLS: 0 records written, 0 messages skipped"
}

# Waits (at most $3 seconds) until capture $1 holds at least $2 records.
wait_records() {
	local i=0
	until [ "$(capdump "$1" 2>/dev/null | wc -l)" -ge "$2" ]; do
		sleep 0.05
		i=$((i + 1))
		[ $i -lt $(($3 * 20)) ] || { echo "# $1: fewer than $2 records after $3 s" >&3; return 1; }
	done
}

@test "kvnats -C: one consumer on a durable at a time: another is refused while it runs, and of two started at once one takes it" {
	# two kvnats -C on one durable shared its messages: records duplicated,
	# exit 69 at random, or a hang; a second one started while the first
	# waited at the end bound the durable too and ended with nothing (exit 0)
	one_server
	capture 20
	kvnats -P -q -s "$URL" in.kvcap
	kvgen -q --workers 2 --dp 2 --block-size 64 --capacity 1500 --pool memcache --limit 10 --seed 9 -o more.kvcap "$TRACE"
	n=$(capdump in.kvcap 2>/dev/null | wc -l)
	m=$(capdump more.kvcap 2>/dev/null | wc -l)
	kvnats -C -q -s "$URL" --durable d1 -f --bare -o first.kvcap & first=$!
	wait_records first.kvcap "$n" 20
	run --separate-stderr kvnats -C -s "$URL" --durable d1 --bare -o second.kvcap
	assert_equal "$status" 69
	assert_equal "$stderr" "kvnats: stream KVTOOLS: durable d1 is in use by another kvnats -C (one consumer per durable at a time)"
	[ ! -e second.kvcap ]
	# the first goes on undisturbed, and has every record once
	kvnats -P -q -s "$URL" more.kvcap
	wait_records first.kvcap $((n + m)) 20
	kill -TERM $first
	wait_for $first 10
	assert_equal "$status" 0
	assert_equal "$(capdump first.kvcap 2>/dev/null)" "$(cat <(capdump in.kvcap 2>/dev/null) <(capdump more.kvcap 2>/dev/null))"
	# once it ended, the durable is free: the next goes on after it
	run --separate-stderr kvnats -C -s "$URL" --durable d1 --bare -o third.kvcap
	assert_success
	assert_equal "$stderr" "kvnats: stream KVTOOLS: 0 records written, 0 messages skipped"
	# two started at once: one takes the durable, the other is refused
	kvnats -C -q -s "$URL" --durable d2 -f --bare -o a.kvcap 2> a.err & a=$!
	kvnats -C -q -s "$URL" --durable d2 -f --bare -o b.kvcap 2> b.err & b=$!
	i=0
	while kill -0 $a 2>/dev/null && kill -0 $b 2>/dev/null; do
		sleep 0.05
		i=$((i + 1))
		[ $i -lt 400 ] || { echo "# both still run after 20 s" >&3; false; }
	done
	if kill -0 $a 2>/dev/null; then won=a lost=$b; else won=b lost=$a; fi
	wait_for $lost 10 || true
	assert_equal "$status" 69
	assert_equal "$(cat a.err b.err)" "kvnats: stream KVTOOLS: durable d2 is in use by another kvnats -C (one consumer per durable at a time)"
	wait_records $won.kvcap $((n + m)) 20
	kill -TERM "$(if [ $won = a ]; then echo $a; else echo $b; fi)"
	wait_for "$(if [ $won = a ]; then echo $a; else echo $b; fi)" 10
	assert_equal "$status" 0
	assert_equal "$(capdump $won.kvcap 2>/dev/null)" "$(capdump first.kvcap 2>/dev/null)"
}

@test "kvnats -C: a durable asked to start elsewhere than where it is is moved there, and says so; a start beyond the stream's end is refused" {
	# --start-seq, --start-time and --after were ignored for a durable that
	# existed: it went on where it was, and the records asked for were never
	# written (exit 0); --start-seq beyond the end started at the end, silently
	one_server
	capture 20
	kvnats -P -q -s "$URL" in.kvcap
	n=$(capdump in.kvcap 2>/dev/null | wc -l)
	# the header is message 1, the records 2 to n + 1
	kvnats -C -q -s "$URL" --durable d1 -c 5 --bare -o a.kvcap
	run --separate-stderr kvnats -C -s "$URL" --durable d1 --start-seq 3 --bare -o b.kvcap
	assert_success
	assert_equal "${stderr_lines[0]}" "kvnats: stream KVTOOLS: durable d1 moved to start after message 2 as --start-seq 3 asks; it would have gone on after message 6"
	assert_equal "${stderr_lines[1]}" "kvnats: stream KVTOOLS: $((n - 1)) records written, 0 messages skipped"
	assert_equal "$(capdump b.kvcap 2>/dev/null)" "$(capdump in.kvcap 2>/dev/null | tail -n +2)"
	# asked to start where it is: bound as it is, nothing said
	run --separate-stderr kvnats -C -s "$URL" --durable d1 --start-seq $((n + 2)) --bare -o c.kvcap
	assert_success
	assert_equal "$stderr" "kvnats: stream KVTOOLS: 0 records written, 0 messages skipped"
	run --separate-stderr kvnats -C -s "$URL" --durable d1 --start-time 1 --bare -o d.kvcap
	assert_success
	assert_equal "${stderr_lines[0]}" "kvnats: stream KVTOOLS: durable d1 moved to start after message 0 as --start-time 1 asks; it would have gone on after message $((n + 1))"
	cmp d.kvcap in.kvcap
	# --after a snapshot: where the snapshot's input ended
	kvnats -C -q -s "$URL" -c 10 | kvmatch -q --log none -o x.kvsnap
	run --separate-stderr kvnats -C -s "$URL" --durable d1 --after x.kvsnap --bare -o e.kvcap
	assert_success
	assert_equal "${stderr_lines[0]}" "kvnats: stream KVTOOLS: durable d1 moved to start after message 11 as --after x.kvsnap asks; it would have gone on after message $((n + 1))"
	assert_equal "$(capdump e.kvcap 2>/dev/null)" "$(capdump in.kvcap 2>/dev/null | tail -n +11)"
	# beyond the next message: refused, the durable left where it is
	for d in "" "--durable d1"; do
		# shellcheck disable=SC2086
		run --separate-stderr kvnats -C -s "$URL" $d --start-seq $((n + 3)) --bare -o f.kvcap
		assert_equal "$status" 65
		assert_equal "$stderr" "kvnats: stream KVTOOLS: --start-seq $((n + 3)) is beyond its last message, $((n + 1)) (the next one is $((n + 2)))"
		[ ! -e f.kvcap ]
	done
	# a start time still to come: JetStream would start at the next message, whenever stored
	later=$(($(date +%s) + 3600))000000000
	run --separate-stderr kvnats -C -s "$URL" --durable d1 --start-time "$later" --bare -o f.kvcap
	assert_equal "$status" 65
	assert_regex "$stderr" "^kvnats: stream KVTOOLS: --start-time $later \(20[0-9-]+T[0-9:]+\.000000000Z\) is still to come: the next message stored would be read, before that time or not\$"
	[ ! -e f.kvcap ]
	run kvnats -L -s "$URL" --format json
	assert_line --regexp "\"consumer\":\"d1\",.*\"delivered_seq\":$((n + 1)),\"ack_floor_seq\":$((n + 1))\}"
}

@test "kvnats: --after a snapshot continues where its input ended, byte for byte" {
	one_server
	capture 60
	kvnats -P -q -s "$URL" -r regs.jsonl in.kvcap
	kvnats -C -q -s "$URL" | kvmatch -q -r regs.jsonl --log none -o whole.kvsnap
	kvnats -C -q -s "$URL" -c 50 | kvmatch -q -r regs.jsonl --log none -o x.kvsnap
	run kvmatch --dump x.kvsnap
	assert_line --regexp '^\{"kind":"stream","last_seq":51,"stream":"KVTOOLS","created_ns":[1-9][0-9]*\}$'
	kvnats -C -q -s "$URL" --after x.kvsnap | kvmatch -q -r regs.jsonl --log none -i x.kvsnap -o y.kvsnap
	cmp y.kvsnap whole.kvsnap
	# records delivered twice change nothing: kvmatch drops what is at or before its position
	kvnats -C -q -s "$URL" | kvmatch -q -r regs.jsonl --log none -i x.kvsnap -o z.kvsnap
	cmp z.kvsnap whole.kvsnap
	# a snapshot of a file has no stream position
	kvmatch -q -r regs.jsonl --log none -o file.kvsnap in.kvcap
	run --separate-stderr kvnats -C -s "$URL" --after file.kvsnap
	assert_equal "$status" 65
	assert_equal "$stderr" "kvnats: file.kvsnap: the snapshot records no stream position (its input was not kvnats -C, or an older kvmatch wrote it); rebuild it: kvnats -C | kvmatch -o file.kvsnap"
	run --separate-stderr kvnats -C -s "$URL" --after x.kvsnap -o x.kvsnap
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvnats: -o x.kvsnap: the same file as the input x.kvsnap"
}

@test "kvnats: --after a device, \`yes\` or a pipe that stalls: refused at the header, or ended by SIGTERM with status 0" {
	# they were read whole before the header was looked at, and SIGTERM
	# did not end the read
	one_server
	mknod zero c 1 5
	run --separate-stderr timeout 10 kvnats -C -s "$URL" --after zero
	assert_equal "$status" 65
	assert_equal "$stderr" "kvnats: zero: not a kvsnap snapshot"
	run --separate-stderr timeout 10 kvnats -C -s "$URL" --after <(yes)
	assert_equal "$status" 65
	assert_equal "$stderr" "kvnats: /dev/fd/63: not a kvsnap snapshot"
	printf '%s\n' '{"src":"tcp://10.0.0.5:5557","recv_ns":1,"seq":1,"format":"vllm","dp_rank":0,"type":"removed","medium":"xpu","block_hashes":["0xa"]}' |
		kvmatch -q --log none -o s.kvsnap
	mkfifo slow
	{ head -c 1000 s.kvsnap; sleep 30; } > slow & writer=$!
	kvnats -C -s "$URL" --after slow > out 2> err & pid=$!
	sleep 0.5
	kill -TERM $pid
	wait_for $pid 5
	stop_bg $writer
	assert_equal "$status" 0
	assert_equal "$(cat err)" "kvnats: slow: loading stopped by a signal"
	[ ! -s out ]
}

@test "kvnats --after, kvmatch -i: a position belongs to one stream; another stream's records, or those of one deleted and made again under its name, are refused" {
	# --after a snapshot of another stream started at its position there, and
	# kvmatch dropped that stream's records up to it as duplicates: records
	# skipped, exit 0
	one_server
	capture 30
	kvnats -P -q -s "$URL" -r regs.jsonl in.kvcap
	kvnats -P -q -s "$URL" -r regs.jsonl --stream OTHER in.kvcap
	kvnats -C -q -s "$URL" -c 20 | kvmatch -q -r regs.jsonl --log none -o x.kvsnap
	t='20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9]{9}Z'
	run --separate-stderr kvnats -C -s "$URL" --stream OTHER --after x.kvsnap -o y.kvcap
	assert_equal "$status" 65
	assert_regex "$stderr" "^kvnats: x.kvsnap: its position is in stream KVTOOLS created $t, not in stream OTHER created $t: the positions of two streams are not comparable\$"
	[ ! -e y.kvcap ]
	run --separate-stderr bash -c "kvnats -C -q -s '$URL' --stream OTHER | kvmatch -r regs.jsonl --log none -i x.kvsnap -o z.kvsnap"
	assert_equal "$status" 65
	assert_regex "${stderr_lines[0]}" "^kvmatch: stdin: stream OTHER created $t is not stream KVTOOLS created $t, of x.kvsnap's position, message 21: the positions of two streams are not comparable; the rest of this input is not read\$"
	cmp <(kvmatch --dump z.kvsnap) <(kvmatch --dump x.kvsnap)
	# KVTOOLS deleted and made again: its sequences begin anew
	nats_request "$URL" '$JS.API.STREAM.DELETE.KVTOOLS' '' > /dev/null
	kvnats -P -q -s "$URL" -r regs.jsonl in.kvcap
	run --separate-stderr kvnats -C -s "$URL" --after x.kvsnap -o y.kvcap
	assert_equal "$status" 65
	assert_regex "$stderr" "^kvnats: x.kvsnap: its position is in stream KVTOOLS created $t, not in stream KVTOOLS created $t: the positions of two streams are not comparable\$"
	run --separate-stderr bash -c "kvnats -C -q -s '$URL' | kvmatch -r regs.jsonl --log none -i x.kvsnap -o z.kvsnap"
	assert_equal "$status" 65
	assert_regex "${stderr_lines[0]}" "^kvmatch: stdin: stream KVTOOLS created $t is not stream KVTOOLS created $t, of x.kvsnap's position, message 21: "
	# the snapshot names its stream: kvmatch --dump shows it
	assert_equal "$(kvmatch --dump x.kvsnap | jq -c 'select(.kind == "stream") | [.last_seq, .stream, (.created_ns > 0)]')" '[21,"KVTOOLS",true]'
}

@test "kvmatch -i: a stream resumed after a later position than the snapshot's is said (65), a durable that acknowledged more than the snapshot holds too" {
	# records between the snapshot's position and where the consumer started
	# were missing from the index without a word (exit 0)
	one_server
	capture 30
	kvnats -P -q -s "$URL" -r regs.jsonl in.kvcap
	kvnats -C -q -s "$URL" | kvmatch -q -r regs.jsonl --log none -o whole.kvsnap
	kvnats -C -q -s "$URL" -c 10 | kvmatch -q -r regs.jsonl --log none -o x.kvsnap
	run --separate-stderr bash -c "kvnats -C -q -s '$URL' --start-seq 20 | kvmatch -r regs.jsonl --log none -i x.kvsnap -o y.kvsnap"
	assert_equal "$status" 65
	assert_equal "${stderr_lines[0]}" "kvmatch: stdin: stream KVTOOLS: this input starts after message 19, not after x.kvsnap's position, message 11: messages 12 to 19 are missing (kvnats -C --after SNAPSHOT starts right after a snapshot's position)"
	# a durable: its kvmatch wrote a snapshot, then the durable went on (that
	# kvmatch killed before its next one)
	kvnats -C -q -s "$URL" --durable d1 -c 10 | kvmatch -q -r regs.jsonl --log none -o d.kvsnap
	kvnats -C -q -s "$URL" --durable d1 -c 5 > /dev/null
	run --separate-stderr bash -c "kvnats -C -q -s '$URL' --durable d1 | kvmatch -r regs.jsonl --log none -i d.kvsnap -o e.kvsnap"
	assert_equal "$status" 65
	assert_equal "${stderr_lines[0]}" "kvmatch: stdin: stream KVTOOLS: this input starts after message 16, not after d.kvsnap's position, message 11: messages 12 to 16 are missing (kvnats -C --after SNAPSHOT starts right after a snapshot's position)"
	# --after the snapshot moves the durable back to it: exact, nothing said
	run --separate-stderr bash -c "set -o pipefail; kvnats -C -q -s '$URL' --durable d1 --after d.kvsnap | kvmatch -q -r regs.jsonl --log none -i d.kvsnap -o f.kvsnap"
	assert_success
	assert_equal "$stderr" ""
	cmp f.kvsnap whole.kvsnap
	# from before the position: what was applied is dropped again, nothing said
	run --separate-stderr bash -c "set -o pipefail; kvnats -C -q -s '$URL' | kvmatch -q -r regs.jsonl --log none -i x.kvsnap -o g.kvsnap"
	assert_success
	cmp g.kvsnap whole.kvsnap
	# messages after the position gone by the stream's limits: said by both
	kvgen -q --workers 2 --dp 2 --block-size 64 --capacity 1500 --pool memcache --limit 3 --seed 9 -o few.kvcap "$TRACE"
	kvnats -P -q -s "$URL" --stream SMALL --max-bytes 400000 few.kvcap
	kvnats -C -q -s "$URL" --stream SMALL -c 2 | kvmatch -q --log none -o s.kvsnap
	kvnats -P -q -s "$URL" --stream SMALL in.kvcap
	first=$(kvnats -L -s "$URL" --stream SMALL --format json | jq -s '.[0].first_seq')
	[ "$first" -gt 4 ]
	run --separate-stderr bash -c "kvnats -C -s '$URL' --stream SMALL --after s.kvsnap | kvmatch --log none -i s.kvsnap -o t.kvsnap"
	assert_equal "$status" 65
	assert_equal "${stderr_lines[0]}" "kvnats: stream SMALL: messages 4 to $((first - 1)) are gone (the stream's limits): --after s.kvsnap starts at message $first, its first"
	assert_equal "${stderr_lines[1]}" "kvmatch: stdin: stream SMALL: this input starts after message $((first - 1)), not after s.kvsnap's position, message 3: messages 4 to $((first - 1)) are missing (kvnats -C --after SNAPSHOT starts right after a snapshot's position)"
	run --separate-stderr kvnats -C -s "$URL" --stream SMALL --start-seq 2 --bare -o u.kvcap
	assert_success
	assert_equal "${stderr_lines[0]}" "kvnats: stream SMALL: messages 2 to $((first - 1)) are gone (the stream's limits): --start-seq 2 starts at message $first, its first"
}

@test "kvnats: a record with a bad event and good ones, read from the stream, is applied as from the file" {
	# its lines share one stream position: the second is no redelivery of the first
	one_server
	printf '%s\n' '[1764500000.0, [["BlockStored", [1], null, [1,2,3,4], 4], ["BlockRemoved", "zz"], ["BlockStored", [2], 1, [5,6,7,8], 4]], 0]' \
		'[1764500001.0, [["BlockStored", [3], 2, [9,10,11,12], 4]], 1]' | j2mp > in.kvcap
	kvnats -P -q -s "$URL" in.kvcap
	run --separate-stderr bash -c "kvnats -C -q -s '$URL' | kvmatch --log applied,dropped -o s.kvsnap"
	assert_equal "$status" 65
	assert_equal "$(jq -r '[.state, .reason // "-", .hash // "-"] | join(" ")' <<<"$output")" "dropped decode_error -
applied - 0x0000000000000001
applied - 0x0000000000000002
applied - 0x0000000000000003"
	kvmatch -q --log none -o file.kvsnap in.kvcap || true
	cmp <(kvmatch --dump s.kvsnap | grep -v '"kind":"stream"') <(kvmatch --dump file.kvsnap)
}

@test "kvnats: two router replicas consuming one stream write identical snapshots" {
	one_server
	capture 60
	kvnats -P -q -s "$URL" -r regs.jsonl in.kvcap
	kvnats -C -q -s "$URL" --durable r1 | kvmatch -q -r regs.jsonl --log none -o r1.kvsnap & a=$!
	kvnats -C -q -s "$URL" --durable r2 | kvmatch -q -r regs.jsonl --log none -o r2.kvsnap & b=$!
	wait_for $a 60
	assert_equal "$status" 0
	wait_for $b 60
	assert_equal "$status" 0
	cmp r1.kvsnap r2.kvsnap
	kvmatch -q -r regs.jsonl --log none -o file.kvsnap in.kvcap
	# the same state as from the file; only the stream position is more
	cmp <(kvmatch --dump r1.kvsnap | grep -v '"kind":"stream"') <(kvmatch --dump file.kvsnap)
}

@test "kvnats: two shards filtered by model, and kvquery -s a -s b answers as one kvmatch over everything" {
	one_server
	two_models 30
	kvnats -P -q -s "$URL" -r regs.jsonl alpha.kvcap b.kvcap
	kvnats -C -q -s "$URL" --filter 'KVTOOLS.alpha.>' | kvmatch -q -r regs.jsonl --log none -o a.kvsnap
	kvnats -C -q -s "$URL" --filter 'KVTOOLS.beta.>' | kvmatch -q -r regs.jsonl --log none -o b.kvsnap
	kvnats -C -q -s "$URL" | kvmatch -q -r regs.jsonl --log none -o all.kvsnap
	# each shard has both registered partitions, and blocks in its own only
	assert_equal "$(kvmatch --dump a.kvsnap | jq -r 'select(.kind == "partition") | "\(.model) \(.blocks > 0)"')" "alpha true
beta false"
	assert_equal "$(kvmatch --dump b.kvsnap | jq -r 'select(.kind == "partition") | "\(.model) \(.blocks > 0)"')" "alpha false
beta true"
	kvquery -s all.kvsnap queries.jsonl > one.out
	run kvquery -s a.kvsnap -s b.kvsnap queries.jsonl
	assert_success
	assert_equal "$output" "$(cat one.out)"
	assert_equal "$(grep -c longest_matched one.out)" 60
	# shards must not share a partition
	run --separate-stderr kvquery -s a.kvsnap -s all.kvsnap queries.jsonl
	assert_equal "$status" 65
	assert_equal "$stderr" "kvquery: all.kvsnap: partition alpha/default is in a.kvsnap too: shards must hold disjoint partitions"
}

@test "kvnats: an unreachable server, a wrong stream, a message that is no record" {
	one_server
	capture 5
	p=$(port)
	run --separate-stderr kvnats -P -s "nats://127.0.0.1:$p" in.kvcap
	assert_equal "$status" 69
	assert_equal "$stderr" "kvnats: nats://127.0.0.1:$p: cannot connect: no server answers"
	run --separate-stderr kvnats -C -s "nats://127.0.0.1:$p"
	assert_equal "$status" 69
	run --separate-stderr kvnats -C -s "$URL" --stream NOPE
	assert_equal "$status" 66
	assert_equal "$stderr" "kvnats: $URL: no stream NOPE"
	run --separate-stderr kvnats -L -s "$URL" --stream NOPE
	assert_equal "$status" 66
	kvnats -P -q -s "$URL" in.kvcap
	# a foreign publisher's message in the stream, by the NATS protocol itself
	exec 4<> "/dev/tcp/127.0.0.1/${URL##*:}"
	printf 'CONNECT {"verbose":false}\r\nPUB KVTOOLS.x.y.z 5\r\nhello\r\nPING\r\n' >&4
	timeout 10 bash -c 'while read -r l <&4; do case $l in PONG*) exit 0 ;; esac; done'
	exec 4>&-
	kvnats -P -q -s "$URL" in.kvcap /dev/null
	n=$(capdump in.kvcap 2>/dev/null | wc -l)
	run --separate-stderr kvnats -C -s "$URL" --bare -o out.kvcap
	assert_equal "$status" 65
	assert_equal "${stderr_lines[0]}" "kvnats: stream KVTOOLS: message $((n + 2)): not a kvcap record (bytes after the object); skipped"
	assert_equal "${stderr_lines[1]}" "kvnats: stream KVTOOLS: $n records written, 1 messages skipped"
	cmp out.kvcap in.kvcap
	# a stream whose subjects are not NAME.>: every publish refused, for --retry, then counted
	nats_request "$URL" '$JS.API.STREAM.CREATE.ELSE' '{"name":"ELSE","subjects":["elsewhere.>"],"storage":"memory"}' > /dev/null
	run --separate-stderr kvnats -P -s "$URL" --stream ELSE --retry 0.5 in.kvcap
	assert_equal "$status" 69
	assert_regex "${stderr_lines[0]}" '^kvnats: stream ELSE: records: ([0-9]+) published, 0 stored, 0 duplicates, [0-9]+ retried, \1 lost; headers: 1 published, 0 stored, 0 duplicates, [0-9]+ retried, 1 lost$'
	lost=$(sed -nE 's/.*records: ([0-9]+) published.*/\1/p' <<<"${stderr_lines[0]}")
	assert_equal "${stderr_lines[1]}" "kvnats: $URL: stream ELSE: $lost records and 1 headers not stored (No responders available for request); the rest of the input was not read"
	# a file that is no capture is reported, and nothing of it published
	echo '{"a":1}' > bad.json
	run --separate-stderr kvnats -P -s "$URL" bad.json
	assert_equal "$status" 65
	assert_equal "$stderr" "kvnats: bad.json: not a kvcap capture (it does not start with a kvcap header)
kvnats: stream KVTOOLS: records: 0 published, 0 stored, 0 duplicates, 0 retried, 0 lost; headers: 0 published, 0 stored, 0 duplicates, 0 retried, 0 lost"
}

@test "kvnats: an input that is a directory, missing or unreadable cannot be opened (66), as in every program" {
	one_server
	capture 5
	mkdir dir
	echo secret > closed
	chmod 000 closed
	local f why as
	while IFS='|' read -r f why as; do
		# the captures: the others are published
		run --separate-stderr $as kvnats -P -q -s "$URL" "$f" in.kvcap
		assert_equal "$status" 66
		assert_equal "$stderr" "kvnats: $f: $why"
		run --separate-stderr $as kvnats -P -q -s "$URL" -r "$f" in.kvcap
		assert_equal "$status" 66
		assert_equal "$stderr" "kvnats: $f: $why"
		run --separate-stderr $as kvnats -C -q -s "$URL" --after "$f"
		assert_equal "$status" 66
		assert_equal "$stderr" "kvnats: $f: $why"
		assert_equal "$output" ""
	done <<-EOT
	dir|Is a directory|
	missing|No such file or directory|
	closed|Permission denied|unprivileged
	EOT
	assert_equal "$(kvnats -C -q -s "$URL" --bare | capdump 2>/dev/null)" "$(capdump in.kvcap 2>/dev/null)"
}

@test "kvnats -C: a write that failed is not counted as written" {
	# the records of a batch were counted as written before its flush failed:
	# "80 records written" into /dev/full, then exit 74
	one_server
	capture 20
	kvnats -P -q -s "$URL" in.kvcap
	run --separate-stderr kvnats -C -s "$URL" -o /dev/full
	assert_equal "$status" 74
	assert_equal "$stderr" "kvnats: /dev/full: No space left on device
kvnats: stream KVTOOLS: 0 records written, 0 messages skipped"
	# a disk that fills up: the count is what the file holds, cut back to
	# the last batch written whole
	mount_small
	run --separate-stderr kvnats -C -s "$URL" --batch 2 -o "$MNT/out.kvcap"
	assert_equal "$status" 74
	assert_equal "${stderr_lines[0]}" "kvnats: $MNT/out.kvcap: No space left on device"
	n=$(capdump "$MNT/out.kvcap" 2>/dev/null | wc -l)
	[ "$n" -gt 0 ]
	assert_equal "${stderr_lines[1]}" "kvnats: stream KVTOOLS: $n records written, 0 messages skipped"
}

@test "kvnats: -f follows the stream as it grows; --start-seq starts where asked" {
	one_server
	capture 10
	kvnats -P -q -s "$URL" in.kvcap
	n=$(capdump in.kvcap 2>/dev/null | wc -l)
	kvnats -C -q -s "$URL" -f --bare -o live.kvcap & c=$!
	# written and flushed as it comes: the whole stream, then the same again
	i=0
	until [ "$(capdump live.kvcap 2>/dev/null | wc -l)" -ge "$n" ]; do
		sleep 0.05; i=$((i + 1)); [ $i -lt 200 ] || false
	done
	kvgen -q --workers 2 --dp 2 --block-size 64 --capacity 1500 --pool memcache --limit 10 --seed 9 -o more.kvcap "$TRACE"
	kvnats -P -q -s "$URL" more.kvcap
	m=$(capdump more.kvcap 2>/dev/null | wc -l)
	i=0
	until [ "$(capdump live.kvcap 2>/dev/null | wc -l)" -ge $((n + m)) ]; do
		sleep 0.05; i=$((i + 1)); [ $i -lt 200 ] || false
	done
	kill -TERM $c
	wait_for $c 10
	assert_equal "$status" 0
	assert_equal "$(capdump live.kvcap 2>/dev/null)" "$(cat <(capdump in.kvcap 2>/dev/null) <(capdump more.kvcap 2>/dev/null))"
	# the last record alone: its stream sequence is n + 1, after the header
	assert_equal "$(kvnats -C -q -s "$URL" --start-seq $((n + 1)) -c 1 --bare | capdump 2>/dev/null)" "$(capdump in.kvcap 2>/dev/null | tail -1)"
	assert_equal "$(kvnats -C -q -s "$URL" --start-time 1 --bare | capdump 2>/dev/null | wc -l)" $((n + m))
}

@test "kvnats: usage errors" {
	run --separate-stderr kvnats
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvnats: no mode: -P (produce), -C (consume) or -L (list)"
	run --separate-stderr kvnats -P -C
	assert_equal "${stderr_lines[0]}" "kvnats: -P and -C: choose one of -P, -C and -L"
	run --separate-stderr kvnats -C --dup-window 3
	assert_equal "${stderr_lines[0]}" "kvnats: -r, --replicas, --max-age, --max-bytes and --dup-window go with -P"
	run --separate-stderr kvnats -P --durable d
	assert_equal "${stderr_lines[0]}" "kvnats: --durable, --filter, --after, --start-seq, --start-time, -c, --batch, -f, --bare and -o go with -C"
	run --separate-stderr kvnats -C --start-seq 3 --after x.kvsnap
	assert_equal "${stderr_lines[0]}" "kvnats: --after, --start-seq and --start-time: choose one"
	run --separate-stderr kvnats -C --stream a.b
	assert_equal "${stderr_lines[0]}" "kvnats: --stream: 'a.b' is not 1 to 255 of A-Z a-z 0-9 _ -"
	run --separate-stderr kvnats -C x.kvcap
	assert_equal "${stderr_lines[0]}" "kvnats: files to read go with -P"
	assert_equal "$status" 64
	# no server is asked: the terminal is refused first
	run script -qec "$BIN/kvnats -C -s nats://127.0.0.1:1" /dev/null
	assert_equal "$status" 64
	assert_line --index 0 --partial "kvnats: refusing to write a binary capture to a terminal (use -o FILE or a pipe)"
}

@test "kvnats: an R3 stream on a three-server cluster keeps every record kvsub captured once, through a SIGKILL and a restart" {
	nats_cluster
	capture 100
	# the stream first
	r3_stream
	zp=$(port)
	n=$(capdump in.kvcap 2>/dev/null | wc -l)
	mkfifo live
	kvsub -c "$n" "tcp://127.0.0.1:$zp" > live 2> sub.err & sub=$!
	tee cap.kvcap < live | kvnats -P -s "$URLS" --stream R3 2> pub.err & prod=$!
	kvpub -q --speed 12 --slow-joiner-wait 1 --single "tcp://127.0.0.1:$zp" in.kvcap & pub=$!
	# the producer's own server dies a third of the way through, and comes back at two thirds
	wait_messages "$URLS" R3 30 $((n / 3))
	kill -9 "$(cat "$T/s0.pid")"
	wait_messages "${URLS#*,}" R3 30 $((2 * n / 3))
	# shellcheck disable=SC2086
	nats_server s0 "$PORT0" ${CLUSTER_ARGS[0]}
	wait_for $pub 60
	assert_equal "$status" 0
	# kvsub stops after the n records (-c); had ZeroMQ dropped any, SIGINT ends it
	wait_for $sub 10 || kill -INT $sub
	wait_for $prod 60
	assert_equal "$status" 0
	run cat pub.err
	echo "# producer through the SIGKILL: ${lines[-1]#kvnats: }" >&3
	assert_output --regexp "records: $n published, [0-9]+ stored, [0-9]+ duplicates, [0-9]+ retried, 0 lost; headers: 1 published, [0-9]+ stored, [0-9]+ duplicates, [0-9]+ retried, 0 lost$"
	# kvsub got every record, and the stream holds each of them once
	assert_equal "$(capdump cap.kvcap 2>/dev/null | wc -l)" "$n"
	kvnats -C -s "$URLS" --stream R3 --bare -o got.kvcap 2> con.err
	echo "# consumer: $(paste -sd" " con.err)" >&3
	assert_equal "$(capdump got.kvcap 2>/dev/null | sort)" "$(capdump cap.kvcap 2>/dev/null | sort)"
}

@test "kvnats -C: a consumer on a server still catching up with the stream reads it to the end" {
	# kvnats -C ended when its consumer had nothing pending; a consumer counts
	# what its own server holds, and one placed on a replica back from a
	# restart ended with what that replica held (records lost, exit 0)
	nats_cluster
	capture 100
	r3_stream
	# s0 is down while the stream is written: it has none of it
	kill -9 "$(cat "$T/s0.pid")"
	others=${URLS#*,}
	i=0
	until kvnats -L -s "$others" --stream R3 > /dev/null 2>&1; do
		sleep 0.2
		i=$((i + 1))
		[ $i -lt 150 ] || { echo "# stream R3 unavailable without s0" >&3; false; }
	done
	kvnats -P -q -s "$others" --stream R3 in.kvcap
	# and back: at once, while it catches up, six consumers, each placed on
	# any of the three servers; one placed on s0 before it is ready cannot be
	# created (exit 69) and is started again
	# shellcheck disable=SC2086
	nats_server s0 "$PORT0" ${CLUSTER_ARGS[0]}
	pids=()
	for k in 1 2 3 4 5 6; do
		(
			for j in 1 2 3 4 5 6 7 8 9 10; do
				r=0
				timeout 60 kvnats -C -s "$others" --stream R3 --bare -o "got$k.kvcap" 2> "con$k.err" || r=$?
				[ $r -eq 69 ] || exit $r
				sleep 0.5
			done
			exit $r
		) &
		pids+=($!)
	done
	for k in 1 2 3 4 5 6; do
		wait "${pids[k - 1]}" || { echo "# consumer $k: status $?: $(cat "con$k.err")" >&3; false; }
		cmp "got$k.kvcap" in.kvcap || { echo "# consumer $k: $(cat "con$k.err")" >&3; false; }
	done
}

@test "kvnats: right after the leader of an R3 stream is killed, -C and -P wait for the cluster to elect another" {
	# kvnats -C exited 69 with "cannot create a consumer: Timeout" or
	# "stream R3: Timeout" while the others elected new leaders
	nats_cluster
	capture 20
	r3_stream
	kvnats -P -q -s "$URLS" --stream R3 -r regs.jsonl in.kvcap
	leader=$(stream_leader "$URLS" R3)
	[[ $leader =~ ^s[012]$ ]]
	others=$(tr , '\n' <<<"$URLS" | sed "$((${leader#s} + 1))d" | paste -sd,)
	kvgen -q --workers 2 --dp 2 --block-size 64 --capacity 1500 --pool memcache --limit 10 --seed 9 -o more.kvcap "$TRACE"
	kill -9 "$(cat "$T/$leader.pid")"
	# at once: a durable consumer of the first capture, and another capture published
	kvnats -P -s "$others" --stream R3 more.kvcap 2> pub.err & pub=$!
	run --separate-stderr timeout 60 kvnats -C -s "$others" --stream R3 --durable d1 --filter 'R3.llama.>' --bare -o got.kvcap
	assert_success
	assert_equal "$stderr" "kvnats: stream R3: $(capdump in.kvcap 2>/dev/null | wc -l) records written, 0 messages skipped"
	assert_equal "$(capdump got.kvcap 2>/dev/null)" "$(capdump in.kvcap 2>/dev/null)"
	wait_for $pub 60
	assert_equal "$status" 0
	m=$(capdump more.kvcap 2>/dev/null | wc -l)
	assert_regex "$(cat pub.err)" "^kvnats: stream R3: records: $m published, $m stored, 0 duplicates, [0-9]+ retried, 0 lost; headers: 1 published, [01] stored, [01] duplicates, [0-9]+ retried, 0 lost\$"
}

@test "kvnats -C: the server of its consumer killed mid-stream, it goes on with another and writes every record once, in order" {
	# an ephemeral consumer lived on one server: killed with it, the run
	# ended with 69 ("consumer: Timeout") halfway through the stream
	nats_cluster
	capture 60
	r3_stream
	kvnats -P -q -s "$URLS" --stream R3 in.kvcap
	mkfifo pipe
	kvnats -C -s "$URLS" --stream R3 --batch 5 --bare > pipe 2> con.err & c=$!
	exec 5< pipe
	# blocked on the pipe after 1 MB: halfway
	head -c 1000000 <&5 > got.kvcap
	consumer=$(kvnats -L -s "$URLS" --stream R3 --format json | jq -r 'select(.consumer) | .consumer')
	leader=$(nats_request "$URLS" "\$JS.API.CONSUMER.INFO.R3.$consumer" '' | jq -r '.cluster.leader')
	[[ $leader =~ ^s[012]$ ]]
	kill -9 "$(cat "$T/$leader.pid")"
	timeout 60 cat <&5 >> got.kvcap
	exec 5<&-
	wait_for $c 10
	assert_equal "$status" 0
	cmp got.kvcap in.kvcap
}

