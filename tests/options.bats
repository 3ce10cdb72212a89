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
