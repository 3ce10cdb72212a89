bats_require_minimum_version 1.5.0
# Shared set-up for the bats suites: paths, assertions, scratch space, ports.
load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

BIN=${KVTOOLS_BIN:?run the tests with make check}
TB=${KVTOOLS_TESTBIN:?run the tests with make check}
ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
FIX=$ROOT/tests/fixtures
PATH=$BIN:$TB:$PATH
export LC_ALL=C

setup() {
	T=$BATS_TEST_TMPDIR
	cd "$T" || return 1
}

# A TCP port on 127.0.0.1 that was free a moment ago.
# With N, the first of N consecutive free ports (for --port-base and the like).
port() { "$TB/freeport" "${1:-1}"; }

# Waits (at most $2 seconds, default 10) for background job $1 to end; its
# exit status becomes $status.
wait_for() {
	local pid=$1 limit=${2:-10} i=0
	while kill -0 "$pid" 2>/dev/null; do
		sleep 0.05
		i=$((i + 1))
		if [ $i -ge $((limit * 20)) ]; then
			kill -9 "$pid" 2>/dev/null
			# its 137 is no failure of ours: the line below says what is
			wait "$pid" 2>/dev/null || true
			echo "# $pid still running after ${limit}s" >&3
			status=124
			return 1
		fi
	done
	wait "$pid"
	status=$?
}

# Runs a command as a user who does not own the test's files, when the
# tests run as root (who reads a file of mode 000 all the same): the test's
# directory is opened to that user (give paths relative to it), its files
# stay readable.
unprivileged() {
	if [ "$(id -u)" = 0 ]; then
		chmod 711 "$T"
		setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
	else
		"$@"
	fi
}

# Stops a background job if it still runs, and reaps it.
stop_bg() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# start_router ARG...: tests/helpers/routerd.py, a router for kvquery
# --against, as ARGs say, on a free port of 127.0.0.1: its URL in $URL.
# Waited for at most 30 s; it lives at most 60 s; stop_routers (in a
# teardown) stops those a test started.
start_router() {
	local p i=0
	p=$(port)
	/usr/bin/python3 "$ROOT/tests/helpers/routerd.py" --port "$p" --ready "$T/ready.$p" --lifetime 60 "$@" 3>&- &
	RPIDS="${RPIDS:-} $!"
	until [ -f "$T/ready.$p" ]; do
		kill -0 "$!" 2>/dev/null || fail "routerd $* exited before it was ready"
		sleep 0.05
		i=$((i + 1))
		[ $i -lt 600 ] || fail "routerd $* not ready after 30 s"
	done
	URL=http://127.0.0.1:$p
}

stop_routers() {
	local pid
	for pid in ${RPIDS:-}; do stop_bg "$pid"; done
}

# two_models N: kvgen's traffic of two clusters, 2 nodes each, serving the
# first N requests of the short trace: model alpha (alpha.kvcap), and model
# beta on other hosts with its nodes named apart (b.kvcap); their
# registrations (regs.jsonl) and queries (queries.jsonl), for sharding.
two_models() {
	local m
	for m in alpha beta; do
		kvgen -q --workers 2 --dp 1 --block-size 64 --capacity 400 --limit "$1" --model $m --seed ${#m} \
			--registrations $m.jsonl --queries q-$m.jsonl -o $m.kvcap "$ROOT/share/traces/conversation-300.jsonl"
	done
	LC_ALL=C sed 's#tcp://10\.0\.0\.#tcp://10.0.9.#g' beta.kvcap > b.kvcap
	sed 's#tcp://10\.0\.0\.#tcp://10.0.9.#g; s#"node#"beta#' beta.jsonl > b.jsonl
	cat alpha.jsonl b.jsonl > regs.jsonl
	cat q-alpha.jsonl q-beta.jsonl > queries.jsonl
}

# Waits (at most $2 seconds) until file $1 is not empty.
wait_nonempty() {
	local i
	for ((i = 0; i < $2 * 100; i++)); do
		[ -s "$1" ] && return 0
		sleep 0.01
	done
	echo "# $1 still empty after $2 s" >&3
	return 1
}

# Waits (at most 10 s) until process $1 runs the program (no more the
# shell that started it, whose traps it has) and has its SIGTERM handler:
# a signal sent before would kill it rather than stop it.
signals_ready() {
	local i=0 comm mask
	for (( ; ; )); do
		# in this order: the mask of the program, once it is one
		comm=$(cat "/proc/$1/comm" 2>/dev/null)
		mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
		[ -n "$comm" ] && [ "$comm" != bash ] && [ -n "$mask" ] && (( (16#$mask >> 14) & 1 )) && return 0
		i=$((i + 1))
		[ $i -lt 200 ] || return 1
		sleep 0.05
	done
}

# Waits (at most 10 s) until process $1 has file $2 open: it is past what
# it does before (options, signal handlers) and reading it.
has_open() {
	local i fd want
	want=$(readlink -f "$2")
	for ((i = 0; i < 200; i++)); do
		for fd in /proc/"$1"/fd/*; do
			[ "$(readlink "$fd" 2>/dev/null)" = "$want" ] && return 0
		done
		sleep 0.05
	done
	echo "# $1 did not open $2 in 10 s" >&3
	return 1
}
