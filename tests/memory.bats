#!/usr/bin/env bats
# Memory bounds (kvmatch(1) "Time, expiry and memory", kvsub(1) "LIMITS",
# kvquery(1) "Comparing with a router"):
# peak resident memory does not grow with the length of the input.  Peaks
# are compared between a short and a long run of the same traffic, with
# generous margins, since the machine may be shared; inputs come from
# tests/helpers/churncap.c and fakepub.
load helper

# AddressSanitizer's shadow memory and quarantine say nothing about ours.
no_san() {
	if [ "${KVTOOLS_SAN:-}" = 1 ]; then skip "peak RSS is meaningless under AddressSanitizer"; fi
}

# peak FILE COMMAND...: runs COMMAND, writes its peak RSS in KiB to FILE.
# GNU time when installed, else the peakrss helper (wait4's ru_maxrss).
peak() {
	local f=$1; shift
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -o "$f" -f %M "$@"
	else
		peakrss "$f" "$@"
	fi
}

MiB=1024  # in KiB, as peak reports

# A busy loop a test started, stopped whatever the test's outcome.
HOG=
stop_hog() {
	if [ -n "$HOG" ]; then
		kill "$HOG" 2> /dev/null || true
		wait "$HOG" 2> /dev/null || true
	fi
	HOG=
}

# bats runs the last teardown defined: one, for all that tests start
teardown() {
	stop_hog
	stop_routers
}

# Store/remove churn: each record stores a block and removes the one stored
# LIVE records before, so LIVE blocks are held whatever the length.
LIVE=20000

@test "kvmatch: a store/remove churn of 1M events peaks within 4 MiB of 250k events, and ends holding the live set" {
	no_san
	# events = 2 * records - LIVE: 250k and 1M events
	churncap churn -n 135000 -l $LIVE > short.kvcap
	churncap churn -n 510000 -l $LIVE > long.kvcap
	for run in short long; do
		peak $run.kb kvmatch --log none --content-ttl 10 -o $run.kvsnap $run.kvcap 2> $run.err
	done
	short=$(cat short.kb) long=$(cat long.kb)
	echo "# kvmatch churn: 250k events $short KiB, 1M events $long KiB" >&3
	assert_equal "$(head -1 short.err)" "kvmatch: 135000 records, 250000 events; 0 queued, 0 offload_cached, 0 matched, 0 confirmed, 250000 applied, 0 dropped, 0 pending_expired"
	assert_equal "$(head -1 long.err)" "kvmatch: 510000 records, 1000000 events; 0 queued, 0 offload_cached, 0 matched, 0 confirmed, 1000000 applied, 0 dropped, 0 pending_expired"
	# the index holds the live set and nothing else
	assert_equal "$(sed -n 2p long.err | cut -d';' -f1)" "kvmatch: index: 1 partitions, 1 workers, 20000 blocks, 20000 holdings"
	assert_equal "$(kvmatch --dump long.kvsnap | jq -r 'select(.kind == "block") | .chain' | grep -c .)" $LIVE
	# not growing with the events, and within 8 MiB plus 1 KiB per live block
	[ "$long" -le $((short + 4 * MiB)) ]
	[ "$long" -le $((8 * MiB + LIVE)) ]
}

@test "kvmatch: a flood of 2M pool hashes that never meet an engine stays within --max-pending 100000 and 32 MiB" {
	no_san
	churncap flood -n 500000 -b 100 > short.kvcap
	churncap flood -n 2000000 -b 100 > long.kvcap
	for run in short long; do
		peak $run.kb kvmatch --log none --max-pending 100000 -o $run.kvsnap $run.kvcap 2> $run.err
	done
	short=$(cat short.kb) long=$(cat long.kb)
	echo "# kvmatch flood, --max-pending 100000: 500k hashes $short KiB, 2M hashes $long KiB" >&3
	assert_equal "$(head -1 long.err)" "kvmatch: 20001 records, 20001 events; 2000000 queued, 0 offload_cached, 0 matched, 0 confirmed, 1 applied, 0 dropped, 1900000 pending_expired (1900000 entries by --max-pending)"
	assert_equal "$(sed -n 2p long.err | cut -d';' -f2)" " 100000 pending, 0 offload cached, 0 content cached"
	assert_equal "$(kvmatch --dump long.kvsnap | jq -r 'select(.kind == "pending") | .hash' | grep -c .)" 100000
	[ "$long" -le $((short + 4 * MiB)) ]
	[ "$long" -le $((32 * MiB)) ]
}

@test "kvmatch: entries pushed out of the pending pool by --max-pending are state lines with reason max_pending" {
	churncap flood -n 300000 -b 100 > flood.kvcap
	kvmatch --log pending_expired --max-pending 100000 flood.kvcap 2> err | jq -r '[.state, .reason, .count] | join(" ")' | sort | uniq -c > states
	assert_equal "$(cat states)" " 200000 pending_expired max_pending 1"
	assert_equal "$(head -1 err)" "kvmatch: 3001 records, 3001 events; 300000 queued, 0 offload_cached, 0 matched, 0 confirmed, 1 applied, 0 dropped, 200000 pending_expired (200000 entries by --max-pending)"
}

@test "kvmatch: engine offloads no pool confirms: the engine-hash map stays within twice the offload cache plus 1024" {
	# one offload per 0.1 s of event time: 600 s of --offload-ttl hold about
	# 6000; a name whose offload expired unconfirmed names nothing and goes
	# at the sweep after the map has doubled (kvmatch(1), memory)
	for n in 50000 200000; do
		churncap offload -n $n -S 100000000 > off.kvcap
		kvmatch --log none -o off.kvsnap off.kvcap 2> err
		assert_equal "$(sed -n 1p err)" "kvmatch: $n records, $n events; 0 queued, $n offload_cached, 0 matched, 0 confirmed, 0 applied, 0 dropped, 0 pending_expired"
		assert_equal "$(sed -n 2p err)" "kvmatch: index: 1 partitions, 1 workers, 0 blocks, 0 holdings; 0 pending, 6099 offload cached, 0 content cached; 0 removals of unknown blocks"
		names=$(kvmatch --dump off.kvsnap | jq -r 'select(.kind == "meta") | .engine_hashes')
		echo "# $n offloads over $((n / 10)) s: $names engine hashes" >&3
		# twice the 6099 names in use, 1024, and 30 s (a sweep interval) of offloads
		[ "$names" -le $((2 * 6099 + 1024 + 300)) ]
	done
	assert_equal "$names" 12699
}

# capture N: kvsub capturing N messages of fakepub, published as fast as it
# can, into /dev/null; peak RSS to N.kb.  --hwm bounds what ZeroMQ may queue
# when kvsub falls behind on a busy machine, so that only kvsub's own memory
# is compared.
capture() {
	local ep=tcp://127.0.0.1:$(port)
	peak "$1.kb" kvsub --hwm 1000 -c "$1" -o /dev/null "$ep" 2> "$1.err" & sub=$!
	fakepub -n "$1" -w 5000 -l 0 "$ep"
	wait_for $sub 60
	assert_equal "$status" 0
}

@test "kvquery --against: 1M more events in the captures read for the evidence peak within 4 MiB" {
	no_san
	kvmatch -q --log none -r "$ROOT/share/registrations.jsonl" -o sample.kvsnap "$ROOT/share/sample.kvcap"
	# 100 MB of another engine's churn after the sample: only the blocks in question are kept
	churncap churn -n 510000 -l $LIVE > churn.kvcap
	# a router that saw no event: every hit of kvquery's is a difference, explained from the captures
	start_router -r "$ROOT/share/registrations.jsonl"
	# exit 2: a router that saw nothing is not explained
	peak short.kb kvquery -s sample.kvsnap --against "$URL" --events "$ROOT/share/sample.kvcap" \
		"$ROOT/share/queries.jsonl" > short.jsonl 2> short.err && status=0 || status=$?
	assert_equal "$status" 2
	peak long.kb kvquery -s sample.kvsnap --against "$URL" --events "$ROOT/share/sample.kvcap" \
		--events churn.kvcap "$ROOT/share/queries.jsonl" > long.jsonl 2> long.err && status=0 || status=$?
	assert_equal "$status" 2
	# GNU time puts "Command exited with non-zero status 2" before the figure
	short=$(tail -n 1 short.kb) long=$(tail -n 1 long.kb)
	echo "# kvquery --against: sample.kvcap $short KiB, and 1M events more $long KiB" >&3
	assert_equal "$(sed -n 2p long.err)" "kvquery: 25 differences: offload_placeholder 5 unexplained 20"
	assert_equal "$(sed -n 2p short.err)" "$(sed -n 2p long.err)"
	assert_equal "$(jq -r .status long.jsonl | sort | uniq -c)" "      5 differ"
	[ "$long" -le $((short + 4 * MiB)) ]
}

@test "kvsub: capturing 200k messages peaks within 2 MiB of capturing 20k" {
	no_san
	capture 20000
	capture 200000
	short=$(cat 20000.kb) long=$(cat 200000.kb)
	echo "# kvsub: 20k messages $short KiB, 200k messages $long KiB" >&3
	[[ $(cat 200000.err) == "kvsub: tcp://127.0.0.1:"*": 200000 messages, "* ]]
	[ "$long" -le $((short + 2 * MiB)) ]
}

@test "kvgen --window 1: a trace that jumps 4294967 s ahead costs two windows, not millions" {
	# every window up to the last was allocated and reported: 6.8 GB of
	# memory and a report of 1 GB for one line at timestamp 4294967295
	head -1 "$ROOT/share/traces/conversation-300.jsonl" > t.jsonl
	sed 's/"timestamp": 0/"timestamp": 4294967295/' t.jsonl >> t.jsonl
	peak gen.kb kvgen -q -n --window 1 --workers 2 --dp 1 --report r.json t.jsonl
	assert_equal "$(jq -c '[.requests, [.windows[] | [(.start_s > 4e6), .requests]]]' r.json)" '[2,[[false,1],[true,1]]]'
	[ "$(stat -c %s r.json)" -le 4096 ]
	echo "# kvgen, a 4294967 s gap in 1 s windows: $(cat gen.kb) KiB" >&3
	# AddressSanitizer's shadow memory says nothing about ours
	[ "${KVTOOLS_SAN:-}" = 1 ] || [ "$(cat gen.kb)" -le $((32 * MiB)) ]
}

@test "kvpub: a replay client that sends 2000 requests and reads nothing is refused, and kvpub stays within 64 MiB" {
	# every reply was queued for it: 1.3 GB for 2000 requests
	for i in $(seq 1 200); do printf 'raw:%0131072d\n' 0; done | j2mp --topic kv > big.kvcap
	mkfifo in
	peak pub.kb kvpub --single "ipc://$T/p" --replay-map "tcp://10.0.0.5:5557=ipc://$T/r" --speed max \
		--slow-joiner-wait 0 --linger 2 < in 2> pub.err & pub=$!
	exec 5> in
	cat big.kvcap >&5
	replayreq -n 2000 -t 3000 "ipc://$T/r" 0 & client=$!
	exec 5>&-
	wait_for $pub 20
	assert_equal "$status" 0
	wait_for $client 10
	line=$(sed -n 2p pub.err)
	echo "# kvpub, 2000 unread replay requests of 13 MB each: $(cat pub.kb) KiB; $line" >&3
	[[ $line =~ ^kvpub:\ ipc://.*/p:\ 200\ messages,\ 13109200\ bytes,\ 2000\ replay\ requests,\ [0-9]+\ replayed,\ ([0-9]+)\ replay\ requests\ refused\ \(replies\ not\ read\)$ ]]
	[ "${BASH_REMATCH[1]}" -ge 1900 ]
	[ "${KVTOOLS_SAN:-}" = 1 ] || [ "$(cat pub.kb)" -le $((64 * MiB)) ]
}

# The process id of the kvsub that job $1 started (`peak` runs it under
# GNU time or peakrss), once ZeroMQ's threads run.
kvsub_of() {
	local k pid
	for ((k = 0; k < 200; k++)); do
		pid=$(kvsub_below "$1") && [ "$(ls "/proc/$pid/task" | wc -l)" -ge 3 ] && { echo "$pid"; return; }
		sleep 0.05
	done
	return 1
}

kvsub_below() {
	local child
	for child in $(pgrep -P "$1"); do
		if [ "$(cat "/proc/$child/comm")" = kvsub ]; then echo "$child"; return; fi
		kvsub_below "$child" && return
	done
	return 1
}

@test "kvsub: 24 messages of 16 MiB to a reader that does not read: 64 MiB wait for it, the rest is dropped and counted" {
	# --hwm counts messages: ZeroMQ queued all 384 MiB (and 100000 x 64 MiB
	# by default); kvsub now keeps reading and holds at most 64 MiB itself,
	# and ZeroMQ at most 64 MiB of messages of --max-message (4 here) and
	# the one it receives
	local ep=tcp://127.0.0.1:$(port)
	mkfifo out gate
	{ read -r _ < gate; cat > /dev/null; } < out & reader=$!
	peak sub.kb kvsub -W 60 --max-message 16777216 --metrics m.prom --metrics-interval 0.1 -o out "$ep" \
		2> sub.err & sub=$!
	# framepub ends once all it sent has left
	framepub -w 5000 -l 30000 "$ep" $(for i in $(seq 24); do printf '2,seq,16777216 '; done)
	echo go > gate
	for ((i = 0; i < 300; i++)); do
		grep -q '^kvtools_sub_messages_total{.*} 24$' m.prom 2> /dev/null && break
		sleep 0.1
	done
	kill -INT "$(kvsub_of $sub)"
	wait_for $sub 30
	assert_equal "$status" 0
	wait_for $reader 10
	echo "# kvsub, 24 x 16 MiB to a stalled reader: $(cat sub.kb) KiB; $(cat sub.err)" >&3
	# SIGINT came before -W's end: the stop line, then the statistics
	assert_equal "$(sed -n 1p sub.err)" "kvsub: stopped by SIGINT before the end; what came before it goes to out"
	[[ $(sed -n 2p sub.err) =~ ^kvsub:\ tcp://.*:\ 24\ messages,\ 402653424\ bytes,\ .*,\ ([0-9]+)\ dropped\ \(output\ behind\)$ ]]
	[ "${BASH_REMATCH[1]}" -ge 16 ]
	# 64 MiB held, 64 MiB queued, 16 MiB each being received and read
	[ "${KVTOOLS_SAN:-}" = 1 ] || [ "$(cat sub.kb)" -le $((180 * MiB)) ]
}


# Waits until the resident memory of process $1 has grown past $2 KiB
# and then not grown for 1 s, at most 15 s in all.
rss_settles() {
	local k rss last=0 still=0
	for ((k = 0; k < 150 && still < 10; k++)); do
		rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$1/status" 2> /dev/null) || return 0
		if [ "$rss" -gt "$2" ] && [ "$rss" -le $((last + 1024)) ]; then still=$((still + 1)); else still=0; fi
		[ "$rss" -gt "$last" ] && last=$rss
		sleep 0.1
	done
}

@test "kvsub: 10 messages of 48 MiB while it falls behind: ZeroMQ queues one, not all 480 MiB" {
	# kvsub's byte bounds held for what it had read; below it, ZeroMQ
	# queued up to --hwm messages of any size while kvsub fell behind
	# (peak 535 MiB here).  Now its receive high-water mark is what 64 MiB
	# of frames of --max-message make: 1 for messages of 48 MiB.  kvsub
	# falls behind for sure: its main thread is idle-scheduled on one CPU
	# with a busy loop, while ZeroMQ's I/O thread goes on receiving.
	no_san
	local ep=tcp://127.0.0.1:$(port) cpu pid
	cpu=$(taskset -pc $$ | sed 's/.*: //; s/[-,].*//')
	peak sub.kb taskset -c "$cpu" kvsub -c 10 -W 60 --max-message 50331648 -o /dev/null "$ep" 2> sub.err & sub=$!
	pid=$(kvsub_of $sub)
	chrt --idle -p 0 "$pid"
	taskset -c "$cpu" sh -c 'while :; do :; done' & HOG=$!
	framepub -w 5000 -l 30000 "$ep" $(for i in $(seq 10); do printf '2,seq,50331648 '; done) & pub=$!
	# until ZeroMQ has taken what it may
	rss_settles "$pid" $((48 * MiB))
	stop_hog
	wait_for $sub 60
	assert_equal "$status" 0
	stop_bg $pub
	echo "# kvsub, 10 x 48 MiB while it falls behind: $(cat sub.kb) KiB; $(cat sub.err)" >&3
	assert_equal "$(cat sub.err)" "kvsub: $ep: 10 messages, 503316580 bytes, 0 gaps, 0 missing, 0 replayed, 0 restarts, 0 bad seq"
	# 48 MiB each: queued, being received, being read, being written
	[ "$(cat sub.kb)" -le $((4 * 48 * MiB + 40 * MiB)) ]
}

@test "kvsub: messages of 48 MiB over --max-message are refused before they are read, and counted" {
	# ZeroMQ took any frame up to 64 MiB: each of these was read whole.
	# With --max-message (1 MiB by default) it refuses one on its length,
	# before it allocates; each publisher's connection is dropped for it,
	# kvsub connects again (ZeroMQ would not) and counts it oversized.
	local ep=tcp://127.0.0.1:$(port) i
	peak sub.kb kvsub -c 4 -W 30 --metrics m.prom -o /dev/null "$ep" 2> sub.err & sub=$!
	for i in 1 2 3; do
		framepub -w 10000 -l 5000 "$ep" 2,seq,10 2,seq,50331648
	done
	framepub -w 10000 -l 5000 "$ep" 2,seq,10
	wait_for $sub 30
	assert_equal "$status" 0
	echo "# kvsub, 3 refused messages of 48 MiB: $(cat sub.kb) KiB; $(cat sub.err)" >&3
	# each publisher's first message (seq 0 each time: 3 restarts), and the
	# 3 refused
	assert_equal "$(cat sub.err)" "kvsub: $ep: 4 messages, 80 bytes, 0 gaps, 0 missing, 0 replayed, 3 restarts, 0 bad seq, 3 oversized"
	run grep -v '^#' m.prom
	assert_line "kvtools_sub_oversized_total{src=\"$ep\"} 3"
	[ "${KVTOOLS_SAN:-}" = 1 ] || [ "$(cat sub.kb)" -le $((24 * MiB)) ]
}

@test "snapshots and registrations of a device, of \`yes\` or of a link to a device put under --watch: refused at their first bytes, within 16 MiB" {
	# each was read whole before it was looked at: kvmatch -i read 4 GB of
	# /dev/zero, kvquery -s grew without bound, --watch ran out of memory
	# when the snapshot's path became a link to /dev/zero, and every bad
	# line of \`kvmatch -r <(yes)\` was kept for its message
	mknod zero c 1 5
	echo '{"src":"tcp://10.0.0.5:5557","recv_ns":1,"seq":1,"format":"vllm","dp_rank":0,"type":"stored","medium":"xpu","block_hashes":["0xa"],"parent":null,"token_ids":[1,2,3,4],"block_size":4}' > ev.jsonl
	kvmatch -q --log none -o s.kvsnap ev.jsonl
	echo '[1,2,3,4]' > q.jsonl
	peak 1.kb timeout 20 kvquery -s zero q.jsonl 2> 1.err || true
	peak 2.kb timeout 20 kvquery -s <(yes) q.jsonl 2> 2.err || true
	peak 3.kb timeout 20 kvmatch -i zero ev.jsonl 2> 3.err || true
	peak 4.kb timeout 20 kvmatch -r <(yes) ev.jsonl 2> 4.err || true
	peak 5.kb timeout 20 kvmatch -r zero ev.jsonl 2> 5.err || true
	assert_equal "$(cat 1.err)" "kvquery: zero: not a kvsnap snapshot"
	assert_equal "$(cat 2.err)" "kvquery: /dev/fd/63: not a kvsnap snapshot"
	assert_equal "$(cat 3.err)" "kvmatch: zero: not a kvsnap snapshot"
	assert_equal "$(tail -1 4.err)" "kvmatch: /dev/fd/63: line 101: more than 100 bad lines: the rest is not read"
	assert_equal "$(tail -1 5.err)" "kvmatch: zero: line 2: beyond the first 67108864 bytes: a registrations file is at most 64 MiB"
	# --watch: the path made a link to the device between two queries
	mkfifo qin
	peak 6.kb timeout 20 kvquery --watch -s s.kvsnap qin > 6.out 2> 6.err & pid=$!
	exec 5> qin
	echo '[1,2,3,4]' >&5
	i=0; while [ "$(grep -c . 6.out)" -lt 1 ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
	ln -sf zero s.kvsnap
	echo '[1,2,3,4]' >&5
	exec 5>&-
	wait_for $pid 30
	assert_equal "$status" 0
	assert_equal "$(grep -c . 6.out)" 2
	assert_equal "$(cat 6.err)" "kvquery: s.kvsnap: not a regular file (a watched snapshot is replaced by renaming one over it) (keeping the snapshot loaded before)"
	# (GNU time writes "Command exited with non-zero status 65" first)
	for i in 1 2 3 4 5 6; do
		echo "# run $i: $(tail -1 $i.kb) KiB" >&3
		[ "${KVTOOLS_SAN:-}" = 1 ] || [ "$(tail -1 $i.kb)" -le $((16 * MiB)) ]
	done
}
