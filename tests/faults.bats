#!/usr/bin/env bats
# Fault injection: publishers that die, readers that stall or go away, full
# disks, signals at random moments, kvmatch killed while writing a snapshot,
# corrupt and foreign snapshots, queries no client should send.
load helper

# Capture fields that must equal what fakepub sent: topic, seq, payload.
frames() { capdump "$1" 2>/dev/null | cut -f3-5; }
published() { grep -v skipped "$1" | cut -f1-3; }
# The seqs of a capture, one a line.
seqs() { capdump "$1" 2>/dev/null | cut -f4; }
nrecords() { capdump "$1" 2>/dev/null | wc -l; }

# Waits (at most $3 seconds) until capture $1 holds $2 records or more.
wait_records() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		[ "$(nrecords "$1")" -ge "$2" ] && return 0
		sleep 0.05
	done
	echo "# $1: fewer than $2 records after $3 s" >&3
	return 1
}

# A small file system that fills up: the tests run as root.
MNT=
mount_small() {
	MNT=$T/full
	mkdir -p "$MNT"
	mount -t tmpfs -o size=256k tmpfs "$MNT"
}

teardown() {
	if [ -n "$MNT" ] && mountpoint -q "$MNT"; then
		umount "$MNT" || umount -l "$MNT"
	fi
}

# ---- kvsub ------------------------------------------------------------------

@test "kvsub: a publisher killed and restarted mid-capture: 1 restart, the capture goes on and decodes" {
	p=$(port)
	kvsub -o cap.kvcap "tcp://127.0.0.1:$p" 2>err & sub=$!
	fakepub -n 100000 -i 1000 "tcp://127.0.0.1:$p" & pub=$!
	wait_records cap.kvcap 50 20
	kill -KILL $pub
	wait $pub || true
	# the same endpoint, a new process: its seq begins again at 0; fakepub
	# waits until kvsub has reconnected and subscribed
	fakepub -n 30 -w 20000 -L second.log "tcp://127.0.0.1:$p"
	for ((i = 0; i < 200; i++)); do
		[ "$(seqs cap.kvcap | tail -1)" = 29 ] && break
		sleep 0.05
	done
	kill -INT $sub
	wait_for $sub 10
	assert_equal "$status" 0
	n=$(nrecords cap.kvcap)
	k=$((n - 30))
	[ "$k" -ge 50 ]
	# the first publisher's batches 0..k-1 without a hole, then the second's 0..29
	assert_equal "$(seqs cap.kvcap)" "$(seq 0 $((k - 1)); seq 0 29)"
	assert_equal "$(frames cap.kvcap | tail -30)" "$(published second.log)"
	# fakepub's batches depend on the seq only: the same k batches again, to compare with
	fakepub -n $k -w 0 -l 0 -L first.log "ipc://$T/nobody"
	assert_equal "$(frames cap.kvcap | head -$k)" "$(published first.log)"
	run cat err
	assert_output --regexp "^kvsub: tcp://127.0.0.1:$p: $n messages, [0-9]+ bytes, 0 gaps, 0 missing, 0 replayed, 1 restarts, 0 bad seq$"
	run --separate-stderr kvdecode --stats cap.kvcap
	assert_success
	assert_equal "${#lines[@]}" "$n"
	assert_equal "$stderr" "kvdecode: tcp://127.0.0.1:$p: $n batches, $n events (vllm: $n stored, 0 removed, 0 cleared), 0 gaps, 0 missing, 1 restarts, 0 replayed, 0 ignored, 0 errors"
}

@test "kvsub: a stalled reader: what is dropped beyond --hwm shows as gaps and missing batches, and the numbers add up" {
	p=$(port)
	# 20000 batches of about 720 bytes (14 MB: more than the socket buffers
	# and both high-water marks hold), 1 ms apart in recorded time, then 5
	# more 1000 s later; kvpub --speed 125 sends the burst in 0.16 s, 2 s
	# after binding (kvsub connects meanwhile), and the tail 8 s after it,
	# when the reader has long caught up, so that the last drops are
	# revealed by a later batch.
	synthcap -n 20000 -e 4 -b 2 -s 1 > burst.kvcap
	ev='["BlockStored", [HASH], null, [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16], 16, null]'
	for h in 900000 900004 900008 900012 900016; do
		# four events a batch, as in the burst
		echo "[\"f:1717000100.0\", [${ev/HASH/$h}, ${ev/HASH/$((h + 1))}, ${ev/HASH/$((h + 2))}, ${ev/HASH/$((h + 3))}], 0]"
	done | j2mp --src tcp://10.0.0.0:5557 --seq 20000 --recv $((1764500000000000000 + 1000000000000)) > tail.kvcap
	# one capture, not two concatenated (a second header restarts kvpub's clock)
	hdr=$(j2mp < /dev/null | wc -c)
	{ cat burst.kvcap; tail -c +$((hdr + 1)) tail.kvcap; } > pub.kvcap
	mkfifo pipe
	# the reader opens the pipe at once, then reads nothing for 5 s
	(exec 3< pipe; sleep 5; exec cat <&3 > out.kvcap) & rd=$!
	kvsub --hwm 1000 "tcp://127.0.0.1:$p" > pipe 2> err & sub=$!
	run --separate-stderr timeout 60 kvpub --hwm 1000 --speed 125 --slow-joiner-wait 2 --single "tcp://127.0.0.1:$p" pub.kvcap
	assert_success
	assert_equal "${stderr_lines[1]}" "kvpub: tcp://127.0.0.1:$p: 20005 messages, $(capdump pub.kvcap 2>/dev/null | awk -F'\t' '{ n += length($3) / 2 + 8 + length($5) / 2 } END { print n }') bytes"
	kill -INT $sub
	wait_for $sub 20
	assert_equal "$status" 0
	wait_for $rd 20
	run cat err
	# what ZeroMQ drops beyond --hwm shows as gaps and missing; what kvsub
	# itself drops beyond --hwm records waiting for the reader (it goes on
	# receiving: tests/memory.bats) as "dropped (output behind)", which the
	# capture shows as gaps too
	assert_output --regexp "^kvsub: tcp://127.0.0.1:$p: [0-9]+ messages, [0-9]+ bytes, [0-9]+ gaps, [0-9]+ missing, 0 replayed, 0 restarts, 0 bad seq(, [0-9]+ dropped \(output behind\))?$"
	read -r messages gaps missing < <(sed -E 's/.*: ([0-9]+) messages, [0-9]+ bytes, ([0-9]+) gaps, ([0-9]+) missing.*/\1 \2 \3/' err)
	behind=$(grep -oE '[0-9]+ dropped \(output behind\)' err | cut -d' ' -f1)
	behind=${behind:-0}
	echo "# 20005 published, $messages received, $gaps gaps, $missing missing, $behind dropped by kvsub" >&3
	# drops did happen, each one counted: received + missing = published,
	# and the capture holds what was received less what kvsub dropped
	[ $((missing + behind)) -gt 0 ]
	assert_equal $((messages + missing)) 20005
	assert_equal "$(nrecords out.kvcap)" "$((messages - behind))"
	assert_equal "$(seqs out.kvcap | head -1) $(seqs out.kvcap | tail -1)" "0 20004"
	run --separate-stderr kvdecode --stats out.kvcap
	assert_success
	# kvdecode sees kvsub's own drops as gaps too
	kept=$((messages - behind))
	[[ $stderr =~ ^kvdecode:\ tcp://127.0.0.1:$p:\ $kept\ batches,\ $((kept * 4))\ events\ \(vllm:\ $((kept * 4))\ stored,\ 0\ removed,\ 0\ cleared\),\ ([0-9]+)\ gaps,\ $((missing + behind))\ missing,\ 0\ restarts,\ 0\ replayed,\ 0\ ignored,\ 0\ errors$ ]]
	# (its gaps: kvsub's drops can join two of ZeroMQ's into one, or split none)
	[ "${BASH_REMATCH[1]}" -ge $(( (missing + behind) > 0 ? 1 : 0 )) ]
	# what arrived is what was published under that seq, in order
	capdump pub.kvcap 2>/dev/null | cut -f4,5 > pub.txt
	capdump out.kvcap 2>/dev/null | cut -f4,5 > got.txt
	run awk -F'\t' 'NR == FNR { p[$1] = $2; next } (FNR > 1 && $1 + 0 <= last) || p[$1] != $2 { bad++ } { last = $1 + 0 } END { print bad + 0 }' pub.txt got.txt
	assert_output 0
}

@test "kvsub: SIGTERM while the reader stalls ends the capture once the write is done, nothing lost" {
	p=$(port)
	mkfifo pipe
	# the reader opens the pipe, then reads nothing until told to
	(exec 3< pipe; while [ ! -e go ]; do sleep 0.05; done; exec cat <&3 > out.kvcap) & rd=$!
	kvsub "tcp://127.0.0.1:$p" > pipe 2> err & sub=$!
	# kvsub goes on receiving while the reader stalls (up to 64 MiB wait
	# for it: tests/memory.bats), so the publisher gets to its end
	fakepub -n 100000 -l 1000 "tcp://127.0.0.1:$p"
	kill -TERM $sub
	# until kvsub is blocked writing what waits into the full pipe
	for ((k = 0; k < 400; k++)); do
		[[ $(cat /proc/$sub/wchan 2> /dev/null) == *pipe_write ]] && break
		sleep 0.05
	done
	assert_regex "$(cat /proc/$sub/wchan)" 'pipe_write$'
	touch go
	wait_for $sub 20
	assert_equal "$status" 0
	wait_for $rd 20
	run cat err
	assert_output --regexp "^kvsub: tcp://127.0.0.1:$p: [0-9]+ messages, [0-9]+ bytes, 0 gaps, 0 missing, 0 replayed, 0 restarts, 0 bad seq$"
	n=$(sed -E 's/.*: ([0-9]+) messages.*/\1/' err)
	[ "$n" -gt 500 ]
	# every message it took is in the capture, in order
	assert_equal "$(seqs out.kvcap)" "$(seq 0 $((n - 1)))"
	run --separate-stderr kvdecode out.kvcap
	assert_success
	assert_equal "${#lines[@]}" "$n"
}

@test "kvsub: disk full: exit 74 with a message, every record before the failure intact" {
	mount_small
	p=$(port)
	kvsub -o "$MNT/cap.kvcap" "tcp://127.0.0.1:$p" 2> err & sub=$!
	# 5000 batches of about 110 bytes: twice what the file system holds
	fakepub -n 5000 -l 0 -L pub.log "tcp://127.0.0.1:$p" & pub=$!
	wait_for $sub 30 || true  # its status is 74: keep bats from failing on it
	assert_equal "$status" 74
	wait_for $pub 30
	run cat err
	assert_line --index 0 "kvsub: $MNT/cap.kvcap: No space left on device"
	assert_line --index 1 --regexp "^kvsub: tcp://127.0.0.1:$p: [0-9]+ messages"
	n=$(nrecords "$MNT/cap.kvcap")
	echo "# $n records kept" >&3
	[ "$n" -gt 1000 ]
	run --separate-stderr kvdecode "$MNT/cap.kvcap"
	assert_success
	assert_equal "${#lines[@]}" "$n"
	assert_equal "$(frames "$MNT/cap.kvcap")" "$(published pub.log | head -$n)"
}

@test "kvsub: disk full while writing records larger than its buffer's slack (150 kB): the capture still ends on a record" {
	mount_small
	p=$(port 2); r=$((p + 1))
	# four batches of 50000 tokens, kept by fakepub for replay; kvsub gets
	# them from the replay socket and writes them back to back
	fakepub -n 4 -T 50000 -w 0 -l 30000 --replay "tcp://127.0.0.1:$r" -L pub.log "tcp://127.0.0.1:$p" & pub=$!
	for ((i = 0; i < 400; i++)); do
		[ "$(grep -c . pub.log 2>/dev/null)" = 4 ] && break
		sleep 0.05
	done
	run --separate-stderr timeout 20 kvsub -W 10 --replay-from 0 --replay "tcp://127.0.0.1:$p=tcp://127.0.0.1:$r" -o "$MNT/cap.kvcap" "tcp://127.0.0.1:$p"
	stop_bg $pub
	assert_equal "$status" 74
	assert_equal "${stderr_lines[0]}" "kvsub: $MNT/cap.kvcap: No space left on device"
	n=$(nrecords "$MNT/cap.kvcap")
	[ "$n" -ge 1 ]
	# (the lines are 150 kB each: not through run, which would print them)
	kvdecode "$MNT/cap.kvcap" > dec.jsonl 2> dec.err && st=0 || st=$?
	assert_equal "$st $(cat dec.err)" "0 "
	assert_equal "$(wc -l < dec.jsonl)" "$n"
	[ "$(frames "$MNT/cap.kvcap")" = "$(published pub.log | head -$n)" ]
}

# One run: kvsub capturing a streaming publisher, hit by $1 after a random
# delay.  PIPE is sent by kill too (kvsub must not die of it, and is then
# stopped with TERM); READER kills the reader of kvsub's standard output.
# Every run must exit 0 (kvsub(1), EXIT STATUS) and leave a capture every
# record of which decodes, with every message received written.
signal_run() {
	local what=$1 id=$2 p sub pub rd delay
	p=$(port)
	delay=$((RANDOM % 700))
	echo "# run $id: $what after ${delay} ms"
	if [ "$what" = READER ]; then
		mkfifo pipe$id
		cat < pipe$id > cap$id.kvcap & rd=$!
		kvsub "tcp://127.0.0.1:$p" > pipe$id 2> err$id & sub=$!
	else
		kvsub -o cap$id.kvcap "tcp://127.0.0.1:$p" 2> err$id & sub=$!
	fi
	fakepub -n 20000 -i 200 -l 0 "tcp://127.0.0.1:$p" & pub=$!
	# the capture header is written once the handlers are in place
	wait_nonempty cap$id.kvcap 10
	sleep "$(printf '0.%03d' $delay)"
	case $what in
	READER) kill -KILL $rd ;;
	PIPE)
		kill -PIPE $sub
		sleep 0.2
		kill -0 $sub
		before=$(nrecords cap$id.kvcap)
		kill -TERM $sub ;;
	*) kill -$what $sub ;;
	esac
	wait_for $sub 20
	assert_equal "$status" 0
	stop_bg $pub
	run cat err$id
	assert_output --regexp "^kvsub: tcp://127.0.0.1:$p: [0-9]+ messages, [0-9]+ bytes, 0 gaps, 0 missing, 0 replayed, 0 restarts, 0 bad seq$"
	n=$(sed -E 's/.*: ([0-9]+) messages.*/\1/' err$id)
	if [ "$what" = READER ]; then
		# what the killed reader had read is a prefix of the stream: whole
		# records, then at most a part of one
		wait $rd || true
		run --separate-stderr kvdecode cap$id.kvcap
		[ "$status" -eq 0 ] || assert_regex "$stderr" "^kvdecode: cap$id.kvcap: record $((${#lines[@]} + 1)): truncated record at byte [0-9]+\$"
		[ "${#lines[@]}" -le "$n" ]
		return
	fi
	run --separate-stderr kvdecode cap$id.kvcap
	assert_success
	assert_equal "$stderr" ""
	assert_equal "${#lines[@]}" "$n"
	if [ "$n" -gt 0 ]; then assert_equal "$(seqs cap$id.kvcap)" "$(seq 0 $((n - 1)))"; fi
	if [ "$what" = PIPE ]; then echo "# $before records at SIGPIPE, $n at the end"; fi
}

@test "kvsub: SIGINT, SIGTERM, SIGPIPE and a vanishing reader at random moments: exit 0, every record decodes" {
	for r in 1 2 3 4 5; do signal_run INT $r; done
	for r in 6 7 8 9 10; do signal_run TERM $r; done
	for r in 11 12 13; do signal_run PIPE $r; done
	for r in 14 15 16; do signal_run READER $r; done
}

# ---- kvmatch ----------------------------------------------------------------

@test "kvmatch: SIGKILL while writing a large snapshot leaves the previous one byte for byte" {
	# 800000 blocks: a 48 MB snapshot, written in some tens of milliseconds
	synthcap -n 50000 -e 16 -t 4 -s 4 > big.kvcap
	synthcap -n 100 -s 2 > small.kvcap
	kvmatch -q --log none -o s.kvsnap small.kvcap
	cp s.kvsnap before.kvsnap
	kvmatch -q --log none -o complete.kvsnap big.kvcap
	landed=0
	for attempt in 1 2 3 4 5 6; do
		kvmatch -q --log none -o s.kvsnap big.kvcap & pid=$!
		# the temporary file appears when the write begins: kill once
		# it holds something
		end=$((SECONDS + 60))
		until compgen -G 's.kvsnap.tmp.*' > /dev/null || ! kill -0 $pid 2> /dev/null || [ $SECONDS -ge $end ]; do :; done
		tmp=$(compgen -G 's.kvsnap.tmp.*') || true
		until [ -z "$tmp" ] || [ -s "$tmp" ] || ! kill -0 $pid 2> /dev/null || [ $SECONDS -ge $end ]; do :; done
		kill -KILL $pid 2> /dev/null || true
		wait $pid || true
		# whenever the kill came, the snapshot is the old one or the new one, whole
		if cmp -s s.kvsnap complete.kvsnap; then
			echo "# attempt $attempt: killed after the rename"
			cp before.kvsnap s.kvsnap
			continue
		fi
		cmp s.kvsnap before.kvsnap
		if compgen -G 's.kvsnap.tmp.*' > /dev/null; then
			echo "# attempt $attempt: killed with $(stat -c %s s.kvsnap.tmp.*) of $(stat -c %s complete.kvsnap) bytes written" >&3
			landed=1
			break
		fi
		echo "# attempt $attempt: killed before the write"
	done
	assert_equal "$landed" 1
	cmp s.kvsnap before.kvsnap
	run --separate-stderr kvmatch --dump s.kvsnap
	assert_success
	assert_equal "$output" "$(kvmatch --dump before.kvsnap)"
	# the temporary file is left behind: cut short, it is refused; whole
	# (killed while syncing it), it is the new snapshot
	tmp=$(compgen -G 's.kvsnap.tmp.*')
	size=$(stat -c %s "$tmp")
	if [ "$size" = "$(stat -c %s complete.kvsnap)" ]; then
		cmp "$tmp" complete.kvsnap
	else
		case $size in
		0) want="empty file" ;;
		[1-9] | [12][0-9] | 3[01]) want="not a kvsnap snapshot" ;;
		*) want="truncated or padded: $size bytes, header says $(stat -c %s complete.kvsnap)" ;;
		esac
		run --separate-stderr kvmatch --dump "$tmp"
		assert_equal "$status" 65
		assert_equal "$stderr" "kvmatch: $tmp: $want"
	fi
	echo '[1]' > q.txt
	run --separate-stderr kvquery -s s.kvsnap q.txt
	assert_success
	run --separate-stderr kvmatch -q --log none -i s.kvsnap -o again.kvsnap /dev/null
	assert_success
	cmp again.kvsnap before.kvsnap
}

@test "kvmatch: disk full while writing the snapshot: exit 74, the previous snapshot intact, no temporary file left" {
	mount_small
	synthcap -n 10 -s 1 > small.kvcap
	synthcap -n 10000 -e 1 -s 1 > more.kvcap
	kvmatch -q --log none -o "$MNT/s.kvsnap" small.kvcap
	cp "$MNT/s.kvsnap" before.kvsnap
	run --separate-stderr kvmatch --log none -o "$MNT/s.kvsnap" more.kvcap
	assert_equal "$status" 74
	assert_equal "${stderr_lines[0]}" "kvmatch: $MNT/s.kvsnap: No space left on device"
	assert_equal "${stderr_lines[1]}" "kvmatch: 10000 records, 10000 events; 0 queued, 0 offload_cached, 0 matched, 0 confirmed, 10000 applied, 0 dropped, 0 pending_expired"
	cmp "$MNT/s.kvsnap" before.kvsnap
	assert_equal "$(ls "$MNT")" s.kvsnap
}

@test "kvmatch -i: corrupt, truncated and foreign files are refused with exit 65 and what is wrong" {
	synthcap -n 20 -s 2 > in.kvcap
	kvmatch -q --log none -o s.kvsnap in.kvcap
	size=$(stat -c %s s.kvsnap)
	cp s.kvsnap flip.kvsnap
	b=$(od -An -tu1 -j $((size / 2)) -N1 s.kvsnap)
	printf "\\x$(printf %02x $((255 - b)))" | dd of=flip.kvsnap bs=1 seek=$((size / 2)) conv=notrunc 2> /dev/null
	run cmp -s flip.kvsnap s.kvsnap
	assert_equal "$status" 1
	head -c $((size - 8)) s.kvsnap > cut.kvsnap
	: > empty.kvsnap
	echo 'just some text' > text.kvsnap
	mkdir dir.kvsnap
	check() { # FILE MESSAGE [STATUS]
		rm -f out.kvsnap
		run --separate-stderr kvmatch --log all -i "$1" -o out.kvsnap in.kvcap
		assert_equal "$status" "${3:-65}"
		assert_equal "$stderr" "kvmatch: $1: $2"
		assert_equal "$output" ""
		[ ! -e out.kvsnap ]
	}
	check flip.kvsnap "section 10 checksum mismatch (corrupt file)"  # a byte of PARENTS
	check cut.kvsnap "truncated or padded: $((size - 8)) bytes, header says $size"
	check in.kvcap "not a kvsnap snapshot"
	check text.kvsnap "not a kvsnap snapshot"
	check empty.kvsnap "empty file"
	# a directory cannot be opened as a snapshot (66); a device is read
	# like a pipe, and /dev/null holds nothing
	check dir.kvsnap "Is a directory" 66
	check /dev/null "empty file"
	# and the good one resumes
	run --separate-stderr kvmatch -q --log none -i s.kvsnap -o out.kvsnap /dev/null
	assert_success
	cmp out.kvsnap s.kvsnap
}

# Event lines (T in seconds of event time, SEQ its own):
#   ev SRC T SEQ TYPE MEDIUM HASHES PARENT TOKENS [EXTRA]
ev() {
	printf '{"src":"%s","recv_ns":%s000000000,"seq":%s,"format":"vllm","dp_rank":0,"type":"%s","medium":"%s","block_hashes":[%s],"parent":%s,"token_ids":[%s],"block_size":4%s}\n' "$@"
}
#   pool T HASHES BACKEND
pool() {
	printf '{"src":"tcp://kvs:5557","recv_ns":%s000000000,"seq":%s,"format":"memcache","dp_rank":null,"type":"stored","medium":"cpu","block_hashes":[%s],"backend_id":"%s","model_name":"m"}\n' "$1" "$1" "$2" "$3"
}
E0=tcp://10.0.0.5:5557
E2=tcp://10.0.0.6:5557
regs() {
	cat > regs.jsonl <<-EOF
	{"instance_id": "a", "type": "vLLM", "dp_rank": 0, "block_size": 4, "modelname": "m", "medium_endpoints": {"npu": "$E0"}}
	{"instance_id": "b", "type": "vLLM", "dp_rank": 0, "block_size": 4, "modelname": "m", "medium_endpoints": {"npu": "$E2"}}
	{"instance_id": "kvs", "type": "Memcache", "dp_rank": 0, "block_size": 4, "endpoint": "tcp://kvs:5557", "store_backend": "Memcache", "modelname": "m"}
	EOF
}
states() { jq -r '[(.recv_ns / 1000000000), (.seq // "-"), .state, (.reason // "-"), (.hash // "-"), (.count // "-")] | join(" ")'; }
sources() { kvmatch --dump "$1" | jq -r 'select(.kind == "source") | "\(.src) last \(.last_seq) batches \(.batches) gaps \(.gaps) restarts \(.restarts)"'; }

@test "kvmatch: replayed batches are applied before the live batch that revealed the gap, dropped after it" {
	regs
	# kvsub's order: the replayed batches 2 and 3, then the held live batch 4
	{ ev $E0 1 0 stored xpu '"0xa"' null 1,2,3,4
	  ev $E0 2 1 stored xpu '"0xb"' '"0xa"' 5,6,7,8
	  ev $E0 4 2 stored xpu '"0xc"' '"0xb"' 5,5,5,5 ',"replayed":true'
	  ev $E0 4 3 stored xpu '"0xd"' '"0xc"' 6,6,6,6 ',"replayed":true'
	  ev $E0 3 4 stored xpu '"0xe"' '"0xb"' 9,9,9,9; } > filled.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log applied,dropped -o filled.kvsnap filled.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "1 0 applied - 0x000000000000000a -
2 1 applied - 0x000000000000000b -
4 2 applied - 0x000000000000000c -
4 3 applied - 0x000000000000000d -
3 4 applied - 0x000000000000000e -"
	assert_equal "$(sources filled.kvsnap)" "$E0 last 4 batches 5 gaps 0 restarts 0"
	# the same replayed batches after batch 4: not beyond the last seq
	# applied, they are dropped as duplicates, and the gap stays counted
	{ ev $E0 1 0 stored xpu '"0xa"' null 1,2,3,4
	  ev $E0 2 1 stored xpu '"0xb"' '"0xa"' 5,6,7,8
	  ev $E0 3 4 stored xpu '"0xe"' '"0xb"' 9,9,9,9
	  ev $E0 4 2 stored xpu '"0xc"' '"0xb"' 5,5,5,5 ',"replayed":true'
	  ev $E0 4 3 stored xpu '"0xd"' '"0xc"' 6,6,6,6 ',"replayed":true'
	  ev $E0 5 5 stored xpu '"0xf"' '"0xe"' 7,7,7,7; } > late.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log applied,dropped -o late.kvsnap late.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "1 0 applied - 0x000000000000000a -
2 1 applied - 0x000000000000000b -
3 4 applied - 0x000000000000000e -
4 2 dropped duplicate - 1
4 3 dropped duplicate - 1
5 5 applied - 0x000000000000000f -"
	assert_equal "$(sources late.kvsnap)" "$E0 last 5 batches 4 gaps 1 restarts 0"
	assert_equal "${stderr_lines[1]}" "kvmatch: dropped: 2 duplicate"
}

@test "kvmatch: a seq that steps back or repeats is a restart: applied, counted, earlier holdings kept" {
	regs
	{ ev $E0 1 7 stored xpu '"0xa"' null 1,2,3,4
	  ev $E0 2 8 stored xpu '"0xb"' '"0xa"' 5,6,7,8
	  ev $E0 3 0 stored xpu '"0x1a"' null 11,12,13,14
	  ev $E0 4 1 stored xpu '"0x1b"' '"0x1a"' 15,16,17,18
	  ev $E0 4 1 stored xpu '"0x1c"' '"0x1a"' 25,26,27,28
	  ev $E0 5 1 stored xpu '"0x1b"' '"0x1a"' 15,16,17,18; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log applied --diagnose=json -o s.kvsnap ev.jsonl
	assert_success
	# batch 1 at 4 s is one batch of two event lines; batch 1 again at 5 s is a repeat
	assert_equal "$(states <<<"$output")" "1 7 applied - 0x000000000000000a -
2 8 applied - 0x000000000000000b -
3 0 applied - 0x000000000000001a -
4 1 applied - 0x000000000000001b -
4 1 applied - 0x000000000000001c -
5 1 applied - 0x000000000000001b -"
	assert_equal "$(sources s.kvsnap)" "$E0 last 1 batches 5 gaps 0 restarts 2"
	# what the publisher held before it restarted stays (no AllBlocksCleared)
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r 'select(.kind == "block") | .holders[] | "\(.instance_id) \(.media[])"' | sort | uniq -c | tr -s ' ')" " 5 a xpu"
	assert_equal "$(jq -c '.findings[] | [.finding, .source, .evidence.restarts]' <<<"${stderr_lines[2]}")" "[\"restarted\",\"$E0\",2]"
}

@test "kvmatch: every event line twice in a row (duplicate batches): no restart, the same index" {
	# a simulated cluster's traffic: stores, evictions, pool write-through
	kvgen -q --pool memcache --limit 300 --capacity 200 --registrations gen.jsonl -o gen.kvcap "$ROOT/share/traces/conversation-300.jsonl"
	kvdecode gen.kvcap > ev.jsonl
	kvmatch -q -r gen.jsonl --log none -o once.kvsnap ev.jsonl
	sed p ev.jsonl | kvmatch -q -r gen.jsonl --log none -o twice.kvsnap
	# a repeated line is part of its batch: batches, gaps and restarts as
	# before, and the stores and removals it repeats leave the same holdings
	kvmatch --dump once.kvsnap | grep -e '"kind":"source"' -e '"kind":"block"' > once.txt
	kvmatch --dump twice.kvsnap | grep -e '"kind":"source"' -e '"kind":"block"' > twice.txt
	cmp once.txt twice.txt
	[ "$(grep -c '"kind":"block"' once.txt)" -gt 100000 ]
	assert_equal "$(grep '"kind":"source"' twice.txt | jq -r .restarts | sort -u)" 0
}

@test "kvmatch: a record stamped before the event time does not turn the clock back" {
	regs
	# the pool entry for 0xb expires at 100 s; the engine offload stamped
	# 50 s that arrives next finds nothing waiting, is cached, and the pool
	# store at 60 s confirms it
	{ ev $E0 1 1 stored xpu '"0xa"' null 1,2,3,4
	  pool 2 '"0xb"' 10.0.0.5
	  ev $E2 100 1 stored xpu '"0xc"' null 1,2,3,5
	  ev $E0 50 2 stored cpu '"0xb"' '"0xa"' 5,6,7,8
	  pool 60 '"0xb"' 10.0.0.5; } > ev.jsonl
	run --separate-stderr kvmatch -r regs.jsonl --log queued,pending_expired,offload_cached,confirmed,matched -o s.kvsnap ev.jsonl
	assert_success
	assert_equal "$(states <<<"$output")" "2 2 queued - 0x000000000000000b -
100 - pending_expired - 0x000000000000000b 1
50 2 offload_cached - 0x000000000000000b -
60 60 confirmed - 0x000000000000000b -"
	assert_equal "$(kvmatch --dump s.kvsnap | jq -c 'select(.kind == "meta") | [.now_ns, .pending]')" '[100000000000,0]'
}

# ---- kvquery ----------------------------------------------------------------

# A small snapshot with something in every section: blocks in xpu and cpu,
# engine hashes, released content, an unconfirmed offload, pending pool
# entries, sources.
small_snapshot() {
	regs
	{ ev $E0 1 1 stored xpu '"0x1","0x2","0x3"' null "$(seq -s, 1 12)"
	  ev $E0 2 2 stored cpu '"0x4","0x5"' '"0x3"' "$(seq -s, 13 20)"
	  pool 3 '"0x4","0x5"' 10.0.0.5
	  ev $E2 4 1 stored xpu '"0x6"' null 2,3,4,5
	  printf '{"src":"%s","recv_ns":5000000000,"seq":2,"format":"vllm","dp_rank":0,"type":"removed","medium":"xpu","block_hashes":["0x6"]}\n' $E2
	  ev $E0 6 3 stored cpu '"0x7"' '"0x5"' 21,22,23,24
	  pool 7 '"0x8"' 10.0.0.5; } > ev.jsonl
	kvmatch -q -r regs.jsonl --log none -o s.kvsnap ev.jsonl
}

@test "kvquery: single-byte corruptions and truncations of a snapshot are refused with exit 65 and the loader's words" {
	small_snapshot
	assert_equal "$(kvmatch --dump s.kvsnap | jq -r .kind | sort -u | tr '\n' ' ')" "block content engine_hash meta offload partition pending source worker "
	echo "[$(seq -s, 1 24)]" > q.txt
	run --separate-stderr kvquery -s s.kvsnap q.txt
	assert_success
	assert_output '{"default":{"a":{"DP":{"0":{"cpu_blocks":2,"cpu_local_blocks":2,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":20,"npu_blocks":3}},"longest_matched":20}}}'
	size=$(stat -c %s s.kvsnap)
	mkdir flip cut want
	# each byte complemented, one file per byte; each length from 0 to size-1
	perl -e 'local $/; binmode STDIN; my $d = <STDIN>;
		for my $i (0 .. length($d) - 1) {
			my $c = $d; substr($c, $i, 1) = chr(ord(substr($d, $i, 1)) ^ 0xff);
			open my $f, ">:raw", "flip/$i" or die; print $f $c; close $f;
			open $f, ">:raw", "cut/$i" or die; print $f substr($d, 0, $i); close $f;
		}' < s.kvsnap
	# The checksums (kvsnap(5): the header's over itself and the table, each
	# section's in its table entry) and zero padding cover every byte,
	# reserved fields too: no byte can change unnoticed.  The header's
	# fields are checked first; a file this small is read and checked whole.
	perl -e 'local $/; binmode STDIN; my $d = <STDIN>;
		my $nsec = unpack("V", substr($d, 8, 4));
		for my $k (0 .. $nsec - 1) {
			my ($id, $rs, $off, $cnt) = unpack("V V Q< Q<", substr($d, 32 + 32 * $k, 24));
			my $end = $off + $cnt * $rs;
			for my $i ($off .. (($end + 7) & ~7) - 1) {
				open my $f, ">", "want/$i" or die;
				print $f $i < $end ? "section $id checksum mismatch (corrupt file)" : "section $id: padding not zero";
				close $f;
			}
		}' < s.kvsnap
	# test_snap (every_byte_and_cut_named) tries every byte and every cut
	# in process, with these words; through the program (one process each,
	# slow under the sanitizers), the header and a stride of the rest
	sample=$(seq 0 31; seq 32 29 $((size - 1)))
	bad=0 tried=0
	for i in $sample; do
		case $i in
		[0-5]) want="not a kvsnap snapshot" ;;
		6) want="snapshot version $((0x07 ^ 0xff)) (this kvtools reads versions 6 and 7)" ;;
		7) want="snapshot version $((0xff07)) (this kvtools reads versions 6 and 7)" ;;
		8) want="bad section count $((19 ^ 0xff))" ;;
		9 | 1[01]) want="bad section count $(perl -e 'local $/; open my $f, "<:raw", $ARGV[0]; my $d = <$f>; print unpack("V", substr($d, 8, 4))' flip/$i)" ;;
		1[6-9] | 2[0-3]) want="truncated or padded: $size bytes, header says $(perl -e 'local $/; open my $f, "<:raw", $ARGV[0]; my $d = <$f>; print unpack("Q<", substr($d, 16, 8))' flip/$i)" ;;
		*) if [ -f want/$i ]; then want=$(cat want/$i); else want="header checksum mismatch (corrupt file)"; fi ;;
		esac
		kvquery -s flip/$i q.txt > out 2> err && st=0 || st=$?
		mapfile -t msg < err
		tried=$((tried + 1))
		if [ "$st" != 65 ] || [ -s out ] || [ "${#msg[@]}" != 1 ] || [ "${msg[0]}" != "kvquery: flip/$i: $want" ]; then
			echo "# flip at byte $i: status $st, '${msg[*]}', expected '$want'" >&3
			bad=$((bad + 1))
		fi
		case $i in
		0) want="empty file" ;;
		[1-9] | [12][0-9] | 3[01]) want="not a kvsnap snapshot" ;;
		*) want="truncated or padded: $i bytes, header says $size" ;;
		esac
		kvquery -s cut/$i q.txt > out 2> err && st=0 || st=$?
		mapfile -t msg < err
		tried=$((tried + 1))
		if [ "$st" != 65 ] || [ -s out ] || [ "${#msg[@]}" != 1 ] || [ "${msg[0]}" != "kvquery: cut/$i: $want" ]; then
			echo "# cut at $i: status $st, '${msg[*]}', expected '$want'" >&3
			bad=$((bad + 1))
		fi
	done
	echo "# $tried corrupt snapshots tried, $bad not refused as expected" >&3
	assert_equal "$tried" $((2 * $(wc -w <<<"$sample")))
	assert_equal "$bad" 0
	# one byte more is refused as well
	{ cat s.kvsnap; printf '\0'; } > padded.kvsnap
	run --separate-stderr kvquery -s padded.kvsnap q.txt
	assert_equal "$status" 65
	assert_equal "$stderr" "kvquery: padded.kvsnap: truncated or padded: $((size + 1)) bytes, header says $size"
}

@test "kvquery: huge, empty and binary lines: one answer or null per line, exit 65 when any is null" {
	small_snapshot
	t=$(seq -s, 1 1000000)
	{ printf '{"model":"m","block_size":4,"token_ids":[%s]}\n' "$t"                # 1: answered
	  printf '{"model":"m","block_hashes":[%s]}\n' "$(seq -s, 1 1000000)"          # 2: answered, no hit
	  printf '{"model":"m","token_ids":[%s,-9223372036854775809]}\n' "$t"            # 3: bad last token (not i64)
	  printf '[%s\n' "$t"                                                            # 4: cut short
	  printf '\n'                                                                    # 5: empty
	  printf ' \t \r\n'                                                              # 6: blank
	  printf 'abc\0def\n'                                                            # 7: NUL
	  printf '[1,2,3,4]\0\n'                                                         # 8: NUL after JSON
	  printf '\xff\xfe\x00\x01\n'                                                    # 9: binary
	  printf '{"model":"m\xc3\x28","token_ids":[1,2,3,4]}\n'                         # 10: invalid UTF-8
	  printf '{"model":"m\\u0000x","token_ids":[1,2,3,4]}\n'                         # 11: NUL in the model
	  printf '{"model":"m","tenant_id":"default\\u0000x","token_ids":[1,2,3,4]}\n'   # 12: and in the tenant
	  printf '[1,2,3,4]\r\n'                                                         # 13: CRLF: answered
	  head -c 3000000 /dev/urandom | tr -d '\n'; printf '\n'                         # 14: 3 MB of noise
	  printf '[1,2,3,4]'; } > q.txt                                                  # 15: no final newline
	run --separate-stderr timeout 60 kvquery -s s.kvsnap q.txt
	assert_equal "$status" 65
	assert_equal "${#lines[@]}" 15
	hit='{"default":{"a":{"DP":{"0":{"cpu_blocks":2,"cpu_local_blocks":2,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":20,"npu_blocks":3}},"longest_matched":20}}}'
	one='{"default":{"a":{"DP":{"0":{"cpu_blocks":0,"cpu_local_blocks":0,"cpu_remote_blocks":0,"disk_blocks":0,"matched_tokens":4,"npu_blocks":1}},"longest_matched":4}}}'
	assert_equal "${lines[0]}" "$hit"
	assert_equal "${lines[1]}" '{"default":{}}'
	for i in 2 3 4 5 6 7 8 9 10 11 13; do assert_equal "${lines[$i]}" null; done
	assert_equal "${lines[12]}" "$one"
	assert_equal "${lines[14]}" "$one"
	assert_equal "${#stderr_lines[@]}" 11
	assert_equal "${stderr_lines[0]}" "kvquery: q.txt: line 3: token_ids: token ids are integers from -2^63 to 2^63-1 (i64)"
	assert_equal "${stderr_lines[1]}" "kvquery: q.txt: line 4: parse error: premature EOF"
	assert_equal "${stderr_lines[2]}" "kvquery: q.txt: line 5: empty query"
	assert_equal "${stderr_lines[3]}" "kvquery: q.txt: line 6: empty query"
	assert_equal "${stderr_lines[4]}" "kvquery: q.txt: line 7: lexical error: invalid char in json text."
	assert_equal "${stderr_lines[5]}" "kvquery: q.txt: line 8: parse error: trailing garbage"
	assert_equal "${stderr_lines[6]}" "kvquery: q.txt: line 9: lexical error: invalid char in json text."
	assert_equal "${stderr_lines[7]}" "kvquery: q.txt: line 10: lexical error: invalid bytes in UTF8 string."
	assert_equal "${stderr_lines[8]}" "kvquery: q.txt: line 11: model: contains a NUL character"
	assert_equal "${stderr_lines[9]}" "kvquery: q.txt: line 12: tenant_id: contains a NUL character"
	assert_regex "${stderr_lines[10]}" '^kvquery: q.txt: line 14: '
	# the same lines routed and explained: one line each as well
	run --separate-stderr timeout 60 kvquery -s s.kvsnap --route --explain q.txt
	assert_equal "$status" 65
	assert_equal "${#lines[@]}" 15
	assert_equal "${#stderr_lines[@]}" 11
}

# bad_input WHY FILE [unprivileged]: every program given FILE, in each
# place a program reads a file, refuses it as an input that cannot be
# opened: exit 66 and one line, `PROG: FILE: WHY`, and writes nothing
# (outputs go to o/, which anyone may write).  kvnats: kvnats.bats.
bad_input() {
	local why=$1 f=$2 as=$3 cmd wrong=0
	mkdir -m 777 o
	while IFS= read -r cmd; do
		# shellcheck disable=SC2086
		run --separate-stderr $as $cmd < /dev/null
		[ "$status" = 66 ] && [ "$stderr" = "${cmd%% *}: $f: $why" ] && [ "$output" = "" ] ||
			{ echo "# $cmd: exit $status, stderr '$stderr', stdout '$output'" >&3; wrong=1; }
	done <<-EOT
	kvdecode $f
	kvdecode --payload $f
	kvmatch $f
	kvmatch -o o/out.kvsnap $f
	kvmatch -r $f in.kvcap
	kvmatch -i $f in.kvcap
	kvmatch --dump $f
	kvquery -s s.kvsnap $f
	kvquery -s $f q.jsonl
	kvgen -n $f
	kvgen -o o/out.kvcap $f
	kvpub --single ipc://$T/pub $f
	kvsub -r $f
	EOT
	[ "$wrong" = 0 ] && [ -z "$(ls o)" ]
}

inputs() {
	kvgen -q --workers 2 --dp 1 --block-size 64 --capacity 400 --limit 10 --registrations regs.jsonl \
		--queries q.jsonl -o in.kvcap "$ROOT/share/traces/conversation-300.jsonl"
	kvmatch -q --log none -r regs.jsonl -o s.kvsnap in.kvcap
}

@test "every program: an input that is a directory cannot be opened: exit 66, PROG: DIR: Is a directory" {
	inputs
	mkdir dir
	bad_input "Is a directory" dir
}

@test "every program: an input that does not exist cannot be opened: exit 66, PROG: FILE: No such file or directory" {
	inputs
	bad_input "No such file or directory" missing
}

@test "every program: an input it may not read cannot be opened: exit 66, PROG: FILE: Permission denied" {
	inputs
	echo secret > closed
	chmod 000 closed
	bad_input "Permission denied" closed unprivileged
}

@test "every program: a read error in an input: 65 for a stream of records (the rest is lost), 66 for registrations and snapshots" {
	inputs
	# reading address 0 of a process fails (EIO) after the file opened
	mem=/proc/self/mem
	local cmd want wrong=0
	while IFS='|' read -r cmd want; do
		# shellcheck disable=SC2086
		run --separate-stderr $cmd < /dev/null
		[ "$status" = "${want%% *}" ] && [ "${stderr_lines[0]}" = "${cmd%% *}: $mem: ${want#* }" ] ||
			{ echo "# $cmd: exit $status, stderr '$stderr'" >&3; wrong=1; }
	done <<-EOT
	kvdecode $mem|65 record 1: byte 0: Input/output error
	kvmatch $mem|65 record 1: byte 0: Input/output error
	kvquery -s s.kvsnap $mem|65 Input/output error
	kvgen -n $mem|65 Input/output error
	kvpub --single ipc://$T/pub $mem|65 byte 0: Input/output error
	kvmatch -r $mem in.kvcap|66 Input/output error
	kvsub -r $mem|66 Input/output error
	kvmatch -i $mem in.kvcap|66 Input/output error
	kvquery -s $mem q.jsonl|66 Input/output error
	EOT
	[ "$wrong" = 0 ]
}

# A program that opened an input to check it, closed it and opened it again
# to read it left a named pipe without a reader for a moment: a writer that
# wrote then got EPIPE (a shell, SIGPIPE), and a writer that had written and
# closed by then took its bytes away with it.  The window is microseconds,
# so the opens are counted (strace) rather than raced.
@test "every program: a named pipe given as an input is opened once, so its writer never finds it closed" {
	inputs
	cp "$ROOT/share/traces/conversation-300.jsonl" trace.jsonl
	local cmd src opens wrong=0
	while IFS='|' read -r cmd src; do
		rm -f p tr
		mkfifo p
		(timeout 20 cat "$src" > p 2>/dev/null &)
		# shellcheck disable=SC2086
		timeout 20 strace -f -qq -e trace=open,openat -o tr $cmd > /dev/null 2>&1 < /dev/null || true
		opens=$(grep -c '"p"' tr || true)
		[ "$opens" = 1 ] || { echo "# $cmd: the pipe was opened $opens times" >&3; wrong=1; }
	done <<-EOT
	kvdecode p|in.kvcap
	kvmatch -q --log none p|in.kvcap
	kvmatch -q --log none -o o.kvsnap p|in.kvcap
	kvmatch -q --log none -r p in.kvcap|regs.jsonl
	kvmatch -q --log none -i p in.kvcap|s.kvsnap
	kvmatch --dump p|s.kvsnap
	kvquery -s s.kvsnap p|q.jsonl
	kvquery -s p q.jsonl|s.kvsnap
	kvgen -q -n p|trace.jsonl
	kvpub -q --single ipc://$T/pub --slow-joiner-wait 0 --linger 0 -s max p|in.kvcap
	EOT
	[ "$wrong" = 0 ]
}
