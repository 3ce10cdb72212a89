#!/usr/bin/env bats
# kvstat: scraping Prometheus text from local servers (tests/helpers/metricsd.c).
load helper

M=$FIX/metrics
# Only 127.0.0.1 is ever contacted: no proxy in between.
unset http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

# serve ACTION...: metricsd on a fresh port; sets $p (port), $url and $srv (pid).
serve() {
	p=$(port)
	url=http://127.0.0.1:$p/metrics
	metricsd -p "$p" -r "$T/ready.$p" -L "$T/requests.$p" "$@" & srv=$!
	local i=0
	while [ ! -e "$T/ready.$p" ] && [ $i -lt 200 ]; do sleep 0.02; i=$((i + 1)); done
}

# An expected-lines fixture with this test's endpoint in it.
expected() { sed "s|@ENDPOINT@|$url|" "$M/$1"; }
# JSON lines without ts, which is the scrape time when the exposition has none.
no_ts() { sed 's/,"ts":[0-9.]*}$/}/'; }
# stderr_is N REGEX: line N of the separate stderr matches the extended regex.
stderr_is() {
	[[ ${stderr_lines[$1]-} =~ $2 ]] || { echo "stderr line $1: '${stderr_lines[$1]-}' does not match '$2'"; return 1; }
}
# Milliseconds since the epoch.
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

@test "kvstat --help prints usage on stdout and exits 0" {
	run --separate-stderr kvstat --help
	assert_success
	assert_line --index 0 'Usage: kvstat [OPTION]... ENDPOINT...'
	assert_output --partial '--format FORMAT'
	[ -z "$stderr" ]
}

@test "kvstat --version names the program and version" {
	run kvstat --version
	assert_success
	assert_output --regexp '^kvstat [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "a bad option exits 64 with one line and Try 'kvstat --help'." {
	run --separate-stderr kvstat --no-such-option localhost
	assert_equal "$status" 64
	assert_equal "${#stderr_lines[@]}" 2
	assert_equal "${stderr_lines[1]}" "Try 'kvstat --help'."
}

@test "bad option values name the option" {
	run --separate-stderr kvstat -c 0 h
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvstat: -c: '0' is not a count of 1 or more"
	run --separate-stderr kvstat -W soon h
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvstat: -W: 'soon' is not a positive number of seconds"
	run --separate-stderr kvstat -i 0 h
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvstat: -i: '0' is not a number of seconds from 0.01 to 86400"
	run --separate-stderr kvstat --timeout=-1 h
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvstat: -t: '-1' is not a number of seconds from 0.001 to 3600"
	run --separate-stderr kvstat --format xml h
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvstat: -f: 'xml' is not json or table"
	run --separate-stderr kvstat -m '(' h
	assert_equal "$status" 64
	stderr_is 0 "^kvstat: -m: '\\(': .+"
	assert_equal "${stderr_lines[1]}" "Try 'kvstat --help'."
}

@test "no endpoint, or a malformed one, is a usage error" {
	run --separate-stderr kvstat -c 1
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvstat: no endpoints to scrape"
	run --separate-stderr kvstat h:0
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvstat: h:0: bad port"
	run --separate-stderr kvstat ftp://h/metrics
	assert_equal "$status" 64
	assert_equal "${stderr_lines[0]}" "kvstat: ftp://h/metrics: only http:// and https:// URLs can be scraped"
}

@test "--dry-run: a bare host means port 50090 and /metrics, host:port means /metrics" {
	run --separate-stderr kvstat --dry-run kvs-master 10.0.0.5:9003 '[fe80::1]' 10.0.0.6/stats \
		http://kvs-master:50090/metrics https://m.example:8443/x kvs-master
	assert_success
	[ -z "$stderr" ]
	assert_output "http://kvs-master:50090/metrics
http://10.0.0.5:9003/metrics
http://[fe80::1]:50090/metrics
http://10.0.0.6:50090/stats
https://m.example:8443/x"
}

@test "a Mooncake-like exposition with timestamps gives exact JSON lines and rates" {
	serve "$M/mooncake-1.prom" "$M/mooncake-2.prom"
	run --separate-stderr kvstat -c 2 -i 0.2 "127.0.0.1:$p"
	stop_bg $srv
	assert_success
	[ -z "$stderr" ]
	assert_output "$(expected mooncake-12.jsonl)"
	# the two scrapes asked for /metrics, as the Prometheus text format
	assert_equal "$(cat requests.$p)" "GET /metrics HTTP/1.1
GET /metrics HTTP/1.1"
}

@test "a memcache-like exposition gives one JSON line per sample, ts the scrape time" {
	serve "$M/memcache-1.prom"
	before=$(now_ms)
	run --separate-stderr kvstat -c 1 "$url"
	after=$(now_ms)
	stop_bg $srv
	assert_success
	[ -z "$stderr" ]
	assert_equal "$(no_ts <<<"$output")" "$(expected memcache-1.jsonl)"
	for ts in $(jq '.ts * 1000 | floor' <<<"$output"); do
		[ "$ts" -ge $((before - 1)) ] && [ "$ts" -le "$after" ]
	done
}

@test "counter rates without timestamps use the time between scrapes" {
	serve "$M/memcache-1.prom" "$M/memcache-2.prom"
	run --separate-stderr kvstat -c 2 -i 0.5 "$url"
	stop_bg $srv
	assert_success
	first=$(sed -n 1,15p <<<"$output" | jq -c .rate | sort -u)
	assert_equal "$first" null
	second=$(sed -n '16,$p' <<<"$output")
	# get hit: +5000 in about half a second
	rate=$(jq -r 'select(.labels.result == "hit") | .rate' <<<"$second")
	jq -e "$rate > 2500 and $rate < 20000" <<<null
	# unchanged counters and histogram parts: 0; the put counter went down (a reset): null; gauges: null
	assert_equal "$(jq -c 'select(.labels.result == "miss") | .rate' <<<"$second")" 0
	assert_equal "$(jq -c 'select(.labels.result == "ok") | .rate' <<<"$second")" null
	assert_equal "$(jq -c 'select(.metric | endswith("_bucket")) | .rate' <<<"$second" | sort -u)" 0
	assert_equal "$(jq -c 'select(.type == "gauge") | .rate' <<<"$second" | sort -u)" null
	assert_equal "$(jq -c 'select(.metric == "kv_store_keys") | .value' <<<"$second")" 48900
}

@test "--match keeps the metrics whose name matches the extended regex" {
	serve "$M/mooncake-1.prom"
	run --separate-stderr kvstat -c 1 --match '^kv_store_(put|batch_size)_(total|count)$' "$url"
	stop_bg $srv
	assert_success
	assert_equal "$(jq -r '[.metric, .labels.result // "-"] | join(" ")' <<<"$output")" "kv_store_put_total ok
kv_store_put_total fail
kv_store_batch_size_count -"
}

@test "--format table: kv_store_* metrics by default, rates from the second round" {
	serve "$M/memcache-1.prom" "$M/memcache-2.prom"
	down=$(port)
	run --separate-stderr kvstat -f table -c 2 -i 0.3 "$url" "127.0.0.1:$down"
	stop_bg $srv
	assert_success
	assert_line --regexp "^http://127.0.0.1:$down/metrics  \(scrape failed: .+\)$"
	refute_output --partial $'\033'
	refute_output --partial process_resident_memory_bytes
	assert_line --regexp "^kvstat [0-9:]{8}  round 1  every 0.3s$"
	assert_line --regexp "^kvstat [0-9:]{8}  round 2  every 0.3s$"
	assert_line "$url  (15 samples, 14 shown)"
	assert_line --regexp '^  SERIES +VALUE  RATE/s$'
	assert_line --regexp '^  kv_store_keys\{backend="memcache"\} +48213$'
	assert_line --regexp '^  kv_store_requests_total\{backend="memcache",op="get",result="hit"\} +91200  -$'
	assert_line --regexp '^  kv_store_requests_total\{backend="memcache",op="get",result="hit"\} +96200  [0-9.]+$'
	assert_line --regexp '^  kv_store_requests_total\{backend="memcache",op="put",result="ok"\} +50000  -$'
}

@test "on a terminal the table is the default and redraws the screen" {
	serve "$M/mooncake-1.prom"
	run script -qec "$BIN/kvstat -c 1 -m 'hit_ratio|info' $url" /dev/null
	stop_bg $srv
	assert_success
	assert_output --partial $'\033[H\033[2J'
	assert_output --partial "$url  (13 samples, 2 shown)"
	assert_output --regexp 'kv_store_hit_ratio\{backend="mooncake"\} +NaN'
	# control characters of label values never reach the terminal raw
	assert_output --partial 'path="C:\\mooncake\nsecond line"'
	refute_output --partial '"endpoint"'
}

@test "a server that answers HTML: the line and reason on stderr, 69 when every scrape failed" {
	serve "$M/garbage.html"
	run --separate-stderr kvstat -c 1 "$url"
	stop_bg $srv
	assert_equal "$status" 69
	assert_output ''
	assert_equal "$stderr" "kvstat: $url: line 1: expected a metric name, a comment or an empty line, not '<'
kvstat: no scrape succeeded"
}

@test "a malformed line rejects the whole scrape, naming the line" {
	serve "$M/bad-line.prom"
	run --separate-stderr kvstat -c 1 "$url"
	stop_bg $srv
	assert_equal "$status" 69
	assert_output ''
	assert_equal "${stderr_lines[0]}" "kvstat: $url: line 4: expected ',' or '}' after the value of label backend"
}

@test "a server that answers something that is not HTTP is reported" {
	serve nohttp
	run --separate-stderr kvstat -c 1 "$url"
	stop_bg $srv
	assert_equal "$status" 69
	stderr_is 0 "^kvstat: $url: .+"
	assert_equal "${#stderr_lines[@]}" 2
}

@test "an HTTP error status is a failed scrape" {
	serve status=503 "$M/mooncake-1.prom"
	run --separate-stderr kvstat -c 2 -i 0.1 "$url"
	stop_bg $srv
	assert_success
	assert_equal "$stderr" "kvstat: $url: HTTP status 503
kvstat: $url: scraped again after 1 failed scrape"
	assert_equal "$(grep -c . <<<"$output")" 13
}

@test "a server that hangs: the timeout is honoured and the next round is scraped" {
	serve hang "$M/mooncake-1.prom"
	start=$(now_ms)
	run --separate-stderr timeout 10 kvstat -c 2 -i 0.2 -t 0.5 "$url"
	end=$(now_ms)
	stop_bg $srv
	assert_success
	stderr_is 0 "^kvstat: $url: .*[Tt]imed? ?out"
	assert_equal "$(grep -c . <<<"$output")" 13
	[ $((end - start)) -ge 500 ] && [ $((end - start)) -lt 3000 ]
}

@test "a hanging server alone: exit 69 once the timeouts have passed, reported once" {
	serve hang
	start=$(now_ms)
	run --separate-stderr timeout 10 kvstat -c 2 -i 0.1 -t 0.3 "$url"
	end=$(now_ms)
	stop_bg $srv
	assert_equal "$status" 69
	[ $((end - start)) -ge 600 ] && [ $((end - start)) -lt 3000 ]
	# the two messages differ in the milliseconds; the kind of failure is the same
	assert_equal "${#stderr_lines[@]}" 2
	stderr_is 0 "^kvstat: $url: .*[Tt]imed? ?out"
	assert_equal "${stderr_lines[1]}" "kvstat: no scrape succeeded"
}

@test "an endpoint that is down is reported once, retried, and not fatal" {
	p=$(port)
	run --separate-stderr kvstat -c 3 -i 0.1 "127.0.0.1:$p"
	assert_equal "$status" 69
	assert_equal "${#stderr_lines[@]}" 2
	stderr_is 0 "^kvstat: http://127.0.0.1:$p/metrics: .+"
	assert_equal "${stderr_lines[1]}" "kvstat: no scrape succeeded"
	# with -v every failure, and statistics at the end
	run --separate-stderr kvstat -v -c 3 -i 0.1 "127.0.0.1:$p"
	assert_equal "$status" 69
	assert_equal "$(grep -c "^kvstat: http://127.0.0.1:$p/metrics: .*onnect" <<<"$stderr")" 3
	assert_equal "${stderr_lines[3]}" "kvstat: http://127.0.0.1:$p/metrics: 3 scrapes, 3 failed, 0 samples in the last"
}

@test "an endpoint that comes up later is scraped from then on" {
	p=$(port)
	url=http://127.0.0.1:$p/metrics
	kvstat -c 8 -i 0.2 "127.0.0.1:$p" > out 2> err & st=$!
	sleep 0.5
	metricsd -p "$p" "$M/mooncake-1.prom" & srv=$!
	wait_for $st 10
	stop_bg $srv
	assert_equal "$status" 0
	run cat err
	assert_line --index 0 --regexp "^kvstat: $url: .+"
	assert_line --index 1 --regexp "^kvstat: $url: scraped again after [0-9]+ failed scrapes?$"
	[ "$(grep -c . out)" -ge 13 ]
}

@test "one endpoint down, one up: exit 0" {
	serve "$M/mooncake-1.prom"
	down=$(port)
	run --separate-stderr kvstat -c 1 "$url" "127.0.0.1:$down"
	stop_bg $srv
	assert_success
	assert_equal "$(grep -c . <<<"$output")" 13
	stderr_is 0 "^kvstat: http://127.0.0.1:$down/metrics: "
}

@test "-q: no messages about failed scrapes, the status still tells" {
	p=$(port)
	run --separate-stderr kvstat -q -c 2 -i 0.1 "127.0.0.1:$p"
	assert_equal "$status" 69
	[ -z "$stderr" ]
}

@test "responses above 16 MiB fail, with and without Content-Length" {
	serve big=17000000 stream=17000000 "$M/mooncake-1.prom"
	# the timeout is not the interval's 0.1 s: 16 MiB took longer on a busy
	# machine, and a timeout is not what this test is about
	run --separate-stderr timeout 20 kvstat -v -c 3 -i 0.1 -t 5 "$url"
	stop_bg $srv
	assert_success
	assert_equal "${stderr_lines[0]}" "kvstat: $url: response larger than 16777216 bytes"
	assert_equal "${stderr_lines[1]}" "kvstat: $url: response larger than 16777216 bytes"
	assert_equal "${stderr_lines[2]}" "kvstat: $url: scraped again after 2 failed scrapes"
	assert_equal "$(grep -c . <<<"$output")" 13
}

@test "-W stops after the given time; 69 when nothing was scraped" {
	serve "$M/mooncake-1.prom"
	start=$(now_ms)
	run --separate-stderr kvstat -W 0.7 -i 0.2 "$url"
	end=$(now_ms)
	stop_bg $srv
	assert_success
	n=$(grep -c . <<<"$output")
	[ "$n" -ge 26 ] && [ $((n % 13)) -eq 0 ]
	[ $((end - start)) -ge 700 ] && [ $((end - start)) -lt 2500 ]
	p=$(port)
	run --separate-stderr kvstat -W 0.3 -i 0.1 "127.0.0.1:$p"
	assert_equal "$status" 69
}

@test "SIGINT between rounds and SIGTERM during a scrape exit 0 at once" {
	serve "$M/mooncake-1.prom"
	kvstat -i 30 "$url" > out 2> err & st=$!
	sleep 0.5
	t0=$(now_ms)
	kill -INT $st
	wait_for $st 5
	t1=$(now_ms)
	assert_equal "$status" 0
	[ $((t1 - t0)) -lt 500 ]
	assert_equal "$(grep -c . out)" 13
	stop_bg $srv
	serve hang
	kvstat -t 60 "$url" > out 2> err & st=$!
	sleep 0.5
	t0=$(now_ms)
	kill -TERM $st
	wait_for $st 5
	t1=$(now_ms)
	stop_bg $srv
	assert_equal "$status" 0
	[ $((t1 - t0)) -lt 500 ]
	[ ! -s err ]
}

@test "kvstat into a pipe that closes exits 0" {
	serve "$M/mooncake-1.prom"
	run bash -c "set -o pipefail; timeout 10 $BIN/kvstat -i 0.05 $url | head -1 | wc -l"
	stop_bg $srv
	assert_success
	assert_output 1
}

@test "-o writes the lines to a file; -o /dev/full exits 74" {
	serve "$M/mooncake-1.prom"
	run --separate-stderr kvstat -c 1 -o lines.jsonl "$url"
	assert_success
	assert_equal "$(grep -c . lines.jsonl)" 13
	run --separate-stderr kvstat -c 1 -o /dev/full "$url"
	stop_bg $srv
	assert_equal "$status" 74
	assert_equal "$stderr" "kvstat: /dev/full: No space left on device"
}

@test "a fleet of 300 endpoints is scraped in one round, every one of them" {
	# the transfers once lived in an array that grew under curl's pointers
	# into it: 9 endpoints or more were a use-after-free
	serve "$M/mooncake-1.prom"
	run --separate-stderr kvstat -c 1 -t 10 $(seq -f "127.0.0.1:$p/m%g" 1 300)
	stop_bg $srv
	assert_success
	assert_equal "$(grep -c . <<<"$output")" 3900
	assert_equal "$(jq -r .endpoint <<<"$output" | sort -u | grep -c .)" 300
	[ -z "$stderr" ]
}
