#!/usr/bin/env bats
# tests/run, the runner of make check: what it counts, and that no test can
# hang it.  Each test gives it a directory of stand-in unit tests.
load helper

# unit NAME BODY: a stand-in unit test, a shell script.
unit() {
	mkdir -p units
	printf '#!/bin/sh\n%s\n' "$2" > "units/$1"
	chmod +x "units/$1"
}

# TIMES=1: the run's KVTOOLS_TIMES (none else, whatever the caller exported:
# .ci/run exports KVTOOLS_TIMES=1)
runner() { run env KVTOOLS_TESTBIN="$T/units" KVTOOLS_VALGRIND= KVTOOLS_TIMES="${TIMES:-}" timeout 60 "$ROOT/tests/run" "$@"; }

@test "tests/run: a unit test running past KVTOOLS_UNIT_TIMEOUT is killed with its children and counted failed" {
	unit test_fine 'echo "ok 1 - fine"'
	unit test_hangs 'echo "ok 1 - first"; sleep 50 & wait'
	SECONDS=0
	KVTOOLS_UNIT_TIMEOUT=1 runner unit
	assert_failure 1
	assert_output "# unit: test_fine
ok 1 - fine
# unit: test_hangs
ok 1 - first
not ok - test_hangs did not finish in 1 s (KVTOOLS_UNIT_TIMEOUT)
2 passed, 1 failed"
	# the sleep went with it: the output ended when it was killed
	[ "$SECONDS" -lt 20 ] || fail "the run took $SECONDS s: the stand-in's child held its output open"
}

@test "tests/run: a skip is neither passed nor failed, and a test that exits non-zero without a 'not ok' fails" {
	unit test_skips 'echo "ok 1 - done"; echo "ok 2 - later # SKIP not here"'
	unit test_dies 'echo "ok 1 - before"; exit 3'
	runner unit
	assert_failure 1
	assert_output "# unit: test_dies
ok 1 - before
not ok - test_dies exited with status 3
# unit: test_skips
ok 1 - done
ok 2 - later # SKIP not here
1 skipped
2 passed, 1 failed"
}

@test "no suite defines a function twice: bash keeps the last, and the first is lost without a word" {
	# memory.bats had two teardown functions: the second, which stops the
	# routers, replaced the first, which stops a busy loop, and three loops
	# were left running after the suite on a machine of two cores
	local f dup found=
	for f in "$ROOT"/tests/*.bats "$ROOT"/tests/helper.bash; do
		dup=$(grep -oE '^[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(\)' "$f" | tr -d ' \t' | sort | uniq -d)
		[ -z "$dup" ] || found+="${f#"$ROOT"/}: ${dup//$'\n'/ }"$'\n'
	done
	assert_equal "$found" ""
}

@test "tests/run: KVTOOLS_JOBS=2 runs two at once, and prints each whole in its order; KVTOOLS_JOBS=1 one at a time" {
	# test_a waits up to 3 s for test_b, which starts after it: only a run
	# of both at once meets it; test_b ends first and is printed second
	unit test_a "for i in \$(seq 30); do [ -e '$T/b' ] && break; sleep 0.1; done
[ -e '$T/b' ] && echo 'ok 1 - a met b' || echo 'not ok 1 - a ran alone'"
	unit test_b "touch '$T/b'; echo 'ok 1 - b'"
	KVTOOLS_JOBS=2 runner unit
	assert_success
	assert_output "# unit: test_a
ok 1 - a met b
# unit: test_b
ok 1 - b
2 passed, 0 failed"
	rm "$T/b"
	KVTOOLS_JOBS=1 runner unit
	assert_failure 1
	assert_output "# unit: test_a
not ok 1 - a ran alone
# unit: test_b
ok 1 - b
1 passed, 1 failed"
}

@test "tests/run: KVTOOLS_TIMES=1 ends with each suite's wall time, longest first, before the counts" {
	unit test_quick 'echo "ok 1 - quick"'
	unit test_slow 'sleep 1.2; echo "ok 1 - slow"'
	TIMES=1 runner unit
	assert_success
	assert_equal "${lines[4]%% *}" '#'
	assert_regex "${lines[4]}" '^# time: test_slow [1-9][0-9]*\.[0-9] s$'
	assert_regex "${lines[5]}" '^# time: test_quick 0\.[0-9] s$'
	assert_equal "${lines[6]}" '2 passed, 0 failed'
	runner unit
	refute_output --partial '# time:'
}
