#!/bin/sh
# The routing experiment: does cache-aware routing serve more prompt tokens
# from cache than random or round-robin routing, on real traffic?
#
# kvgen serves the Mooncake conversation trace (12,031 requests, one hour)
# on a simulated cluster of 16 instances x 4 DP ranks with a memcache pool,
# once per routing policy, and reports the share of prompt tokens served
# from cache per medium and per minute.  Prints a Markdown table and writes
# a plot of the hit rate over time (gnuplot, PNG).
#   share/examples/routing-experiment.sh [OUTDIR]      (default: .)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
kvgen=${KVGEN:-$top/bin/kvgen}
[ -x "$kvgen" ] || kvgen=kvgen
trace=$top/share/traces/conversation_trace.jsonl.gz
[ -r "$trace" ] || trace=${TRACE:?set TRACE to the conversation trace (JSONL, gzipped)}
out=${1:-.}
mkdir -p "$out"

# name|kvgen options
policies='random|--policy random
round-robin|--policy round-robin
kv (cache affinity only)|--policy kv
kv + load (weight 8)|--policy kv --load-weight 8'

echo "$policies" | while IFS='|' read -r name opts; do
	file=$(echo "$name" | tr -c 'a-z0-9\n' '-' | sed 's/-*$//')
	# shellcheck disable=SC2086
	zcat "$trace" | "$kvgen" -n -q --pool memcache $opts --window 60 --report "$out/$file.json"
	echo "$file|$name"
done > "$out/policies.txt"

echo "| policy | served from cache | from xpu | from cpu (pool) | requests per worker |"
echo "|---|---:|---:|---:|---|"
while IFS='|' read -r file name; do
	jq -r --arg n "$name" '"| \($n) | \(.hits.hit_rate * 1000 | round / 10)% | \(.hits.xpu_rate * 1000 | round / 10)% | \(.hits.cpu_rate * 1000 | round / 10)% | \(.requests_per_worker | min) to \(.requests_per_worker | max) |"' "$out/$file.json"
done < "$out/policies.txt"

# hit rate per minute, one column per policy
plot=
while IFS='|' read -r file name; do
	jq -r '.windows[] | "\(.start_s / 60) \(.hit_rate * 100)"' "$out/$file.json" > "$out/$file.dat"
	plot="$plot${plot:+, }'$out/$file.dat' using 1:2 with lines lw 2 title '$name'"
done < "$out/policies.txt"
if command -v gnuplot >/dev/null 2>&1; then
	gnuplot <<-GP
	set terminal pngcairo size 900,480 font ',10'
	set output '$out/routing-experiment.png'
	set title 'Prompt tokens served from cache, Mooncake conversation trace, 16 x 4 ranks, memcache pool'
	set xlabel 'minute of the trace'
	set ylabel '% of prompt tokens'
	set yrange [0:*]
	set key top left
	set grid
	plot $plot
	GP
	echo
	echo "plot: $out/routing-experiment.png" >&2
fi
