#!/usr/bin/env bats
# What every program says about a bad option (kvtools(7) "Conventions"): `PROG: message`,
# then `Try 'PROG --help'.`, exit 64.  Each program is run by its path, as
# $BIN/PROG: run through PATH, argv[0] would already be the bare name and
# getopt's messages would start with it whether or not the program fixes it.
load helper

# bad_options PROG: getopt's four kinds of complaint, each exactly.
bad_options() {
	local p=$1 args want
	while IFS='|' read -r args want; do
		run --separate-stderr "$BIN/$p" $args < /dev/null
		assert_equal "$status" 64
		assert_equal "${#stderr_lines[@]}" 2
		assert_equal "${stderr_lines[0]}" "$p: $want"
		assert_equal "${stderr_lines[1]}" "Try '$p --help'."
		assert_equal "$output" ""
	done <<-EOT
	--nope|unrecognized option '--nope'
	-Z|invalid option -- 'Z'
	-o|option requires an argument -- 'o'
	--output|option '--output' requires an argument
	EOT
}

@test "kvsub: a bad option is reported as kvsub: ..." { bad_options kvsub; }
@test "kvdecode: a bad option is reported as kvdecode: ..." { bad_options kvdecode; }
@test "kvmatch: a bad option is reported as kvmatch: ..." { bad_options kvmatch; }
@test "kvquery: a bad option is reported as kvquery: ..." { bad_options kvquery; }
@test "kvgen: a bad option is reported as kvgen: ..." { bad_options kvgen; }
@test "kvpub: a bad option is reported as kvpub: ..." { bad_options kvpub; }
@test "kvstat: a bad option is reported as kvstat: ..." { bad_options kvstat; }
@test "kvnats: a bad option is reported as kvnats: ..." { bad_options kvnats; }

@test "a program run by a relative path names itself without the directory" {
	cd "$ROOT"
	run --separate-stderr "${BIN#"$ROOT"/}/kvsub" --nope
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvsub: unrecognized option '--nope'"
}

# refused PROG OPTION VALUE 'MESSAGE' [ARG...]: the value is refused before
# anything is read or opened, with one line and `Try`, exit 64.
refused() {
	local p=$1 opt=$2 value=$3 want=$4
	shift 4
	run --separate-stderr "$BIN/$p" "$opt" "$value" "$@" < /dev/null
	assert_equal "$status" 64
	assert_equal "${#stderr_lines[@]}" 2
	assert_equal "${stderr_lines[0]}" "$p: $want"
	assert_equal "${stderr_lines[1]}" "Try '$p --help'."
	assert_equal "$output" ""
}

@test "lists: an empty element, a padded one, a control character or too many are refused the same way by every program" {
	refused kvquery --weights 1,,1,0 "--weights: '1,,1,0' is not three non-negative numbers N,C,D: an empty element" -s x.kvsnap
	refused kvgen --weights 1,,1,0 "--weights: '1,,1,0' is not three non-negative numbers N,C,D: an empty element" -n
	refused kvquery --weights 1,1,0, "--weights: '1,1,0,' is not three non-negative numbers N,C,D: an empty element" -s x.kvsnap
	refused kvgen --weights ' 1,1,0' "--weights: ' 1,1,0' is not three non-negative numbers N,C,D: padded with spaces" -n
	refused kvquery --weights 1,1,0,0 "--weights: '1,1,0,0' is not three non-negative numbers N,C,D: too many elements" -s x.kvsnap
	refused kvgen --weights 1,1 "--weights: '1,1' is not three non-negative numbers N,C,D: too few elements" -n
	refused kvmatch --log matched,,dropped "--log: 'matched,,dropped' is not all, none or a list of states: an empty element"
	refused kvmatch --log matched, "--log: 'matched,' is not all, none or a list of states: an empty element"
	refused kvmatch --log 'matched, dropped' "--log: 'matched, dropped' is not all, none or a list of states: padded with spaces"
	refused kvmatch --log matched,nope "--log: 'matched,nope' is not all, none or a list of states: a name that is no state"
	refused kvnats -s nats://127.0.0.1:1,,nats://127.0.0.1:2 "--server: 'nats://127.0.0.1:1,,nats://127.0.0.1:2' is not URL[,URL]... (at most 64): an empty element" -L
	refused kvnats --server '' "--server: '' is not URL[,URL]... (at most 64): an empty element" -L
	# the servers of the environment, read as --server reads them (and only when it is not given)
	NATS_URL=nats://127.0.0.1:1, run --separate-stderr "$BIN/kvnats" -L
	assert_equal "$status" 64
	assert_equal "$stderr" "kvnats: NATS_URL: 'nats://127.0.0.1:1,' is not URL[,URL]... (at most 64): an empty element
Try 'kvnats --help'."
	NATS_URL=nats://127.0.0.1:1, run --separate-stderr "$BIN/kvnats" -L -s "nats://127.0.0.1:$(port)"
	assert_equal "$status" 69
	refused kvmatch --backend-serves daemon=a,,b "--backend-serves: 'daemon=a,,b' is not BACKEND_ID=INSTANCE[,INSTANCE]...: an empty element"
	refused kvmatch --backend-serves daemon=a, "--backend-serves: 'daemon=a,' is not BACKEND_ID=INSTANCE[,INSTANCE]...: an empty element"
	# what is taken is taken whole: the good forms still work
	run --separate-stderr "$BIN/kvmatch" -q --log matched,dropped --backend-serves daemon=a,b /dev/null
	assert_success
}

@test "KEY=VALUE pairs: a second '=', an empty, padded or control-character side are refused the same way by every program" {
	refused kvmatch --backend-serves a=b=c "--backend-serves: 'a=b=c' is not BACKEND_ID=INSTANCE[,INSTANCE]...: more than one '='"
	refused kvmatch --backend-serves ' a=b' "--backend-serves: ' a=b' is not BACKEND_ID=INSTANCE[,INSTANCE]...: a key padded with spaces"
	refused kvmatch --backend-serves =b "--backend-serves: '=b' is not BACKEND_ID=INSTANCE[,INSTANCE]...: an empty key"
	refused kvsub --replay tcp://127.0.0.1:1=tcp://127.0.0.1:2=x "--replay: 'tcp://127.0.0.1:1=tcp://127.0.0.1:2=x' is not SRC=ENDPOINT: more than one '='"
	refused kvsub --replay 'tcp://127.0.0.1:1= tcp://127.0.0.1:2' "--replay: 'tcp://127.0.0.1:1= tcp://127.0.0.1:2' is not SRC=ENDPOINT: a value padded with spaces"
	refused kvsub --replay tcp://127.0.0.1:1= "--replay: 'tcp://127.0.0.1:1=' is not SRC=ENDPOINT: an empty value"
	refused kvpub --map a=b=c "--map: 'a=b=c' is not SRC=ENDPOINT: more than one '='"
	refused kvpub --map $'a\x1b=b' "--map: 'a?=b' is not SRC=ENDPOINT: a control character in its key"
	refused kvpub --replay-map a "--replay-map: 'a' is not SRC=ENDPOINT: no '='"
	refused kvpub --replay-map 'a=tcp://h:1 ' "--replay-map: 'a=tcp://h:1 ' is not SRC=ENDPOINT: a value padded with spaces"
}

@test "names: an empty, padded or control-character value is refused the same way by every program" {
	refused kvquery --model ' llama' "--model: ' llama' is not a model name: padded with spaces" -s x.kvsnap
	refused kvquery --model $'llama\x1b[2J' "--model: 'llama?[2J' is not a model name: a control character" -s x.kvsnap
	refused kvquery --tenant '' "--tenant: '' is not a tenant name: empty" -s x.kvsnap
	refused kvquery --tenant $'\xff' "--tenant: '?' is not a tenant name: not UTF-8" -s x.kvsnap
	refused kvgen --model $'llama\t' "--model: 'llama?' is not a model name: a control character" -n
	refused kvgen --model 'llama ' "--model: 'llama ' is not a model name: padded with spaces" -n
	refused kvgen --pool-backend '' "--pool-backend: '' is not a backend_id: empty" -n --pool mooncake
	refused kvgen --pool-backend ' d' "--pool-backend: ' d' is not a backend_id: padded with spaces" -n --pool mooncake
	refused kvsub --topic '' "--topic: '' is not a topic prefix: empty" tcp://127.0.0.1:1
	refused kvsub -t $'kv\n' "--topic: 'kv?' is not a topic prefix: a control character" tcp://127.0.0.1:1
	refused kvpub --single ' tcp://127.0.0.1:1' "--single: ' tcp://127.0.0.1:1' is not an endpoint: padded with spaces"
	refused kvpub --host '' "--host: '' is not a host: empty" -p 5000
	refused kvpub --host $'h\x7f' "--host: 'h?' is not a host: a control character" -p 5000
	refused kvstat --match ' ^kv_' "--match: ' ^kv_' is not an extended regular expression: padded with spaces" 127.0.0.1
	refused kvstat -m $'^kv\t' "--match: '^kv?' is not an extended regular expression: a control character" 127.0.0.1
	refused kvnats --filter $'KVTOOLS.\t>' "--filter: 'KVTOOLS.?>' is not a subject: a control character" -C
	refused kvnats --filter 'KVTOOLS. >' "--filter: 'KVTOOLS. >' is not a subject: a space" -C
	# a name may hold inner spaces, '#', quotes and any UTF-8
	run --separate-stderr "$BIN/kvgen" -n -q --limit 1 --model $'my "model" #2 \xc3\xa9' "$ROOT/share/traces/conversation-300.jsonl"
	assert_success
}

@test "numbers: one decimal form for every program, an exponent, hexadecimal or inf refused where counts refuse them too" {
	# strtod read these (0x10 was 16, 1e1 was 10) where the integer options refused them
	refused kvgen --speed 0x10 "--speed: '0x10' is not a positive number" -n
	refused kvgen --weights 1e0,1,1 "--weights: '1e0,1,1' is not three non-negative numbers N,C,D: not a number in range" -n
	refused kvquery --weights 1,0x1p0,1 "--weights: '1,0x1p0,1' is not three non-negative numbers N,C,D: not a number in range" -s x.kvsnap
	refused kvpub --speed 1e3 "--speed: '1e3' is not a positive number or max" --single ipc://x
	refused kvstat -i 1e1 "-i: '1e1' is not a number of seconds from 0.01 to 86400" 127.0.0.1
	refused kvsub -W 0x1 "-W: '0x1' is not a positive number of seconds" tcp://127.0.0.1:1
	refused kvmatch --pending-ttl 0x1 "--pending-ttl: '0x1' is not a positive number of seconds"
	refused kvsub -c 0x10 "-c: '0x10' is not a count of 1 or more" tcp://127.0.0.1:1
	# the decimal forms are taken: digits, a point with or without digits on either side
	run --separate-stderr "$BIN/kvgen" -n -q --limit 1 --speed .5 --weights 1.,0.5,2 "$ROOT/share/traces/conversation-300.jsonl"
	assert_success
}
