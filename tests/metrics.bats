#!/usr/bin/env bats
# --metrics of kvsub and kvmatch: Prometheus text files for node_exporter's
# textfile collector, checked with the strict exposition parser (promcheck)
# and by exact lines.
load helper

setup_file() {
	cd "$BATS_FILE_TMPDIR" || return 1
	head -60 "$ROOT/share/traces/conversation-300.jsonl" > trace.jsonl
	kvgen -q --limit 60 --workers 2 --dp 1 --capacity 100 --pool memcache --pool-capacity 200 \
		--pool-lag 3000 --policy round-robin --speed 0.1 --registrations regs.jsonl -o cluster.kvcap trace.jsonl
}

# The samples of a metrics file, without comments.
samples() { grep -v '^#' "$1"; }

@test "kvmatch --metrics: a valid exposition with the run's counts, and no temporary file left" {
	mkdir out
	run --separate-stderr kvmatch -q -r "$BATS_FILE_TMPDIR/regs.jsonl" --log none --metrics out/kvmatch.prom \
		"$BATS_FILE_TMPDIR/cluster.kvcap"
	assert_success
	assert_equal "$(ls -A out)" kvmatch.prom
	promcheck out/kvmatch.prom
	run samples out/kvmatch.prom
	assert_line 'kvtools_match_records_total 120'
	assert_line 'kvtools_match_events_total 303'
	assert_line 'kvtools_match_states_total{state="confirmed"} 46062'
	assert_line 'kvtools_match_states_total{state="pending_expired"} 0'
	assert_line 'kvtools_match_drops_total{reason="parent_not_found"} 0'
	assert_line 'kvtools_match_pending 0'
	assert_line 'kvtools_match_content_cache 44364'
	assert_line 'kvtools_match_blocks{model="llama",tenant="default"} 368'
	assert_line 'kvtools_match_held_blocks{worker="node1",dp_rank="0",medium="xpu"} 100'
	assert_line 'kvtools_match_held_blocks{worker="node1",dp_rank="0",medium="cpu"} 200'
	assert_line 'kvtools_match_held_blocks{worker="node1",dp_rank="0",medium="disk"} 0'
	assert_line 'kvtools_match_source_batches_total{src="tcp://kvs-master:5557"} 60'
	assert_line 'kvtools_match_source_last_batch_seconds{src="tcp://kvs-master:5557"} 1764547353'
	assert_line 'kvtools_match_event_time_seconds 1764547353'
	assert_equal "$(grep -c '^# TYPE' out/kvmatch.prom)" 18
}

@test "kvmatch --metrics counts drops by reason and expiries per worker" {
	kvdecode "$BATS_FILE_TMPDIR/cluster.kvcap" | jq -c 'select(.src != "tcp://10.0.0.2:5557")' > in.jsonl
	run --separate-stderr kvmatch -q -r "$BATS_FILE_TMPDIR/regs.jsonl" --log none --pending-ttl 1 --content-ttl 1 \
		--metrics m.prom in.jsonl
	assert_success
	promcheck m.prom
	run samples m.prom
	assert_line 'kvtools_match_pending_expired_total{worker="node1",dp_rank="0"} 968'
	assert_line 'kvtools_match_pending_expired_total{worker="node0",dp_rank="0"} 0'
	assert_line 'kvtools_match_states_total{state="pending_expired"} 968'
}

@test "kvmatch --metrics is written while input is still coming" {
	mkfifo in
	kvmatch -q --log none --metrics m.prom --metrics-interval 0.1 in 2>err & pid=$!
	exec 7>in
	printf '{"src":"tcp://e:1","recv_ns":1000000000,"seq":0,"format":"vllm","dp_rank":0,"type":"stored","medium":"xpu","block_hashes":[1],"parent":null,"token_ids":[1,2,3,4],"block_size":4}\n' >&7
	for _ in $(seq 50); do grep -q '^kvtools_match_events_total 1$' m.prom 2>/dev/null && break; sleep 0.1; done
	run samples m.prom
	assert_line 'kvtools_match_events_total 1'
	assert_line 'kvtools_match_held_blocks{worker="e:1",dp_rank="0",medium="xpu"} 1'
	exec 7>&-
	wait_for $pid
	assert_equal "$status" 0
	promcheck m.prom
}

@test "kvmatch --metrics gives each source's receive lag behind its publisher's clock" {
	# Event lines carry ts in seconds (kvdecode converts the pools' ms): the lag of
	# the last event is recv time minus that, per source.
	cat > in.jsonl <<-'EOF'
	{"src":"tcp://e:1","recv_ns":1000500000000,"seq":0,"ts":1000.25,"format":"vllm","dp_rank":0,"type":"stored","medium":"xpu","block_hashes":[1],"parent":null,"token_ids":[1,2,3,4],"block_size":4}
	{"src":"tcp://e:1","recv_ns":1001000000000,"seq":1,"ts":1000.5,"format":"vllm","dp_rank":0,"type":"stored","medium":"xpu","block_hashes":[2],"parent":1,"token_ids":[5,6,7,8],"block_size":4}
	{"src":"tcp://m:2","recv_ns":1002000000000,"seq":0,"ts":999.75,"format":"mooncake","type":"stored","medium":"cpu","block_hashes":[9],"backend_id":"10.9.9.9"}
	{"src":"tcp://q:3","recv_ns":1003000000000,"seq":0,"format":"vllm","dp_rank":0,"type":"cleared","medium":"xpu"}
	EOF
	run --separate-stderr kvmatch -q --log none --metrics m.prom in.jsonl
	assert_success
	promcheck m.prom
	run samples m.prom
	assert_line 'kvtools_match_source_lag_seconds{src="tcp://e:1"} 0.5'
	assert_line 'kvtools_match_source_lag_seconds{src="tcp://m:2"} 2.25'
	# a source whose batches carry no timestamp has no lag sample
	refute_line --partial 'kvtools_match_source_lag_seconds{src="tcp://q:3"}'
	assert_line 'kvtools_match_source_last_batch_seconds{src="tcp://q:3"} 1003'
}

@test "kvmatch --metrics into a directory that does not exist: the run completes, exit 74" {
	echo '{"src":"tcp://e:1","recv_ns":1,"seq":0,"format":"vllm","dp_rank":0,"type":"stored","medium":"xpu","block_hashes":[1],"parent":null,"token_ids":[1,2,3,4],"block_size":4}' > in.jsonl
	run --separate-stderr kvmatch -q --log all --metrics nowhere/m.prom -o snap.kvsnap in.jsonl
	assert_equal "$status" 74
	assert_equal "$stderr" "kvmatch: nowhere/m.prom: No such file or directory"
	assert_equal "${#lines[@]}" 3
	[ -s snap.kvsnap ]
}

@test "kvsub --metrics: messages, gaps and missing batches per endpoint" {
	p=$(port)
	mkdir out
	kvsub -q -c 25 -W 10 --metrics out/kvsub.prom -o cap.kvcap "tcp://127.0.0.1:$p" & sub=$!
	fakepub -n 30 --skip 10-14 "tcp://127.0.0.1:$p"
	wait_for $sub 20
	assert_equal "$status" 0
	assert_equal "$(ls -A out)" kvsub.prom
	promcheck out/kvsub.prom
	run samples out/kvsub.prom
	assert_line "kvtools_sub_messages_total{src=\"tcp://127.0.0.1:$p\"} 25"
	assert_line "kvtools_sub_gaps_total{src=\"tcp://127.0.0.1:$p\"} 1"
	assert_line "kvtools_sub_missing_batches_total{src=\"tcp://127.0.0.1:$p\"} 5"
	assert_line "kvtools_sub_replayed_total{src=\"tcp://127.0.0.1:$p\"} 0"
	assert_line "kvtools_sub_restarts_total{src=\"tcp://127.0.0.1:$p\"} 0"
	assert_line "kvtools_sub_records_total 25"
	assert_line --regexp "^kvtools_sub_last_message_seconds\{src=\"tcp://127.0.0.1:$p\"\} [0-9]{10}"
}

@test "kvsub --metrics: a gap that replay filled is still a gap, with nothing missing" {
	# kvtools_sub_gaps_total counted only the gaps left in what was
	# written: 0 here, which hid that the publisher's messages were lost
	p=$(port 2); r=$((p + 1))
	kvsub -q -c 30 -W 10 --metrics m.prom --replay "tcp://127.0.0.1:$p=tcp://127.0.0.1:$r" -o cap.kvcap \
		"tcp://127.0.0.1:$p" & sub=$!
	fakepub -n 30 --skip 10-14 --replay "tcp://127.0.0.1:$r" "tcp://127.0.0.1:$p"
	wait_for $sub 20
	assert_equal "$status" 0
	promcheck m.prom
	run samples m.prom
	assert_line "kvtools_sub_messages_total{src=\"tcp://127.0.0.1:$p\"} 25"
	assert_line "kvtools_sub_gaps_total{src=\"tcp://127.0.0.1:$p\"} 1"
	assert_line "kvtools_sub_missing_batches_total{src=\"tcp://127.0.0.1:$p\"} 0"
	assert_line "kvtools_sub_replayed_total{src=\"tcp://127.0.0.1:$p\"} 5"
	assert_line "kvtools_sub_records_total 30"
}

@test "kvsub --metrics is rewritten during a capture, not only at exit" {
	p=$(port)
	kvsub -q --metrics m.prom --metrics-interval 0.1 -o cap.kvcap "tcp://127.0.0.1:$p" & sub=$!
	fakepub -n 7 "tcp://127.0.0.1:$p"
	for _ in $(seq 100); do
		grep -q "^kvtools_sub_messages_total{src=\"tcp://127.0.0.1:$p\"} 7\$" m.prom 2>/dev/null && break
		sleep 0.05
	done
	# kvsub is still capturing: the figures come from the periodic rewrite
	kill -0 $sub
	promcheck m.prom
	run samples m.prom
	assert_line "kvtools_sub_messages_total{src=\"tcp://127.0.0.1:$p\"} 7"
	assert_line "kvtools_sub_records_total 7"
	kill -INT $sub
	wait_for $sub
	assert_equal "$status" 0
}

@test "kvsub --metrics counts a publisher restart" {
	p=$(port)
	kvsub -q -c 20 -W 10 --metrics m.prom -o cap.kvcap "tcp://127.0.0.1:$p" & sub=$!
	fakepub -n 20 --start-seq 100 --restart-at 12 "tcp://127.0.0.1:$p"
	wait_for $sub 20
	assert_equal "$status" 0
	promcheck m.prom
	run samples m.prom
	assert_line "kvtools_sub_restarts_total{src=\"tcp://127.0.0.1:$p\"} 1"
}

@test "kvsub --metrics into a directory that does not exist exits 74 after the capture" {
	p=$(port)
	run --separate-stderr timeout 10 kvsub -q -W 0.2 --metrics nowhere/m.prom -o cap.kvcap "tcp://127.0.0.1:$p"
	assert_equal "$status" 74
	assert_equal "${stderr_lines[0]}" "kvsub: nowhere/m.prom: No such file or directory"
	[ -s cap.kvcap ]
}

@test "a metrics write that failed on the way makes the exit status 74, in kvsub as in kvmatch, though the last one succeeds" {
	# until_file FILE: waits (at most 10 s) until FILE is not empty
	until_file() { local i=0; until [ -s "$1" ]; do sleep 0.05; i=$((i + 1)); [ $i -lt 200 ] || return 1; done; }
	p=$(port)
	kvsub -q -W 20 --metrics-interval 0.1 --metrics later/m.prom -o cap.kvcap "tcp://127.0.0.1:$p" 2> err.txt & sub=$!
	until_file err.txt
	mkdir later
	until_file later/m.prom
	kill -TERM $sub
	wait_for $sub 10 || true  # its status is 74: keep bats from failing on it
	assert_equal "$status" 74
	assert_equal "$(cat err.txt)" "kvsub: later/m.prom: No such file or directory"
	promcheck later/m.prom
	# kvmatch, reading a pipe that stays open until the directory is there
	mkfifo in.fifo
	kvmatch -q --log none --metrics-interval 0.1 --metrics late/m.prom in.fifo 2> err2.txt & m=$!
	exec 5> in.fifo
	until_file err2.txt
	mkdir late
	until_file late/m.prom
	exec 5>&-
	wait_for $m 10 || true
	assert_equal "$status" 74
	assert_equal "$(cat err2.txt)" "kvmatch: late/m.prom: No such file or directory"
	promcheck late/m.prom
}

@test "kvmatch: metrics written well until the last write fails: exit 74" {
	mkfifo in.fifo
	mkdir gone
	kvmatch -q --log none --metrics-interval 0.1 --metrics gone/m.prom in.fifo 2> err.txt & m=$!
	exec 5> in.fifo
	i=0
	until [ -s gone/m.prom ]; do sleep 0.05; i=$((i + 1)); [ $i -lt 200 ] || false; done
	rm -r gone
	exec 5>&-
	wait_for $m 10 || true  # its status is 74: keep bats from failing on it
	assert_equal "$status" 74
	assert_equal "$(cat err.txt)" "kvmatch: gone/m.prom: No such file or directory"
}

@test "promcheck rejects what Prometheus would reject" {
	printf '# HELP kvtools_x A.\n# TYPE kvtools_x counter\nkvtools_x{a="1"} 1\nkvtools_x{a="1"} 2\n' > dup.prom
	run promcheck dup.prom
	assert_failure
	printf 'kvtools_y 1\n' > untyped.prom
	run promcheck untyped.prom
	assert_failure
	assert_output "promcheck: untyped.prom: kvtools_y: needs # HELP, # TYPE and a kvtools_ name"
}
