#!/bin/sh
# The routing experiment: does cache-aware routing serve more prompt tokens
# from cache than random or round-robin routing, on real traffic?
#
# kvgen serves the Mooncake conversation trace (12,031 requests, one hour)
# on a simulated cluster of 16 instances x 4 DP ranks with a memcache pool,
# once per routing policy and, for the kv policy (cache affinity and load,
# kvgen's default), per weight setting (--weights 1,0,0 counts xpu blocks
# alone, 2,1,0 an xpu block as two of the pool's cpu blocks, 1,1,0,
# kvquery's default, both alike).  It
# reports the share of prompt tokens served from cache per medium and per
# minute.
#   routing-experiment.sh [OUTDIR]      (default: .)
#
# Prints a Markdown table and writes, in OUTDIR: table.md (the same table),
# NAME.json (kvgen's --report) and NAME.dat (hit rate per minute) for each
# run, runs.txt (the runs' names and titles) and routing-experiment.png, the
# hit rate over time (gnuplot; without it the plot is skipped, with a word
# on stderr).  Takes about a minute on the whole trace.
#
# It runs from the source tree (share/examples/) and from an installed one
# (SHAREDIR/examples/, after make install): the trace is ../traces/ next to
# it, kvgen the checkout's bin/kvgen, else PREFIX/bin/kvgen, else the one on
# PATH.  The environment overrides each:
#   TRACE    the request trace, JSONL, plain or gzipped (always wins)
#   KVGEN    the kvgen program
#   GNUPLOT  the gnuplot program (default: gnuplot)
# Exit status: 0, also without gnuplot; 66 no trace; 69 no kvgen; else kvgen's.
set -eu
prog=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)

# the checkout's bin/, PREFIX/bin (SHAREDIR is PREFIX/share/kvtools), PATH
find_kvgen() {
	for k in "$here/../../bin/kvgen" "$here/../../../bin/kvgen"; do
		[ -x "$k" ] && { echo "$k"; return; }
	done
	echo kvgen
}
kvgen=${KVGEN:-$(find_kvgen)}
command -v "$kvgen" >/dev/null 2>&1 || { echo "$prog: $kvgen: not found (set KVGEN or PATH)" >&2; exit 69; }
trace=${TRACE:-$here/../traces/conversation_trace.jsonl.gz}
about=${TRACE:+${TRACE##*/}}
[ -r "$trace" ] || { echo "$prog: $trace: cannot read the trace (set TRACE)" >&2; exit 66; }
gnuplot=${GNUPLOT:-gnuplot}
out=${1:-.}
mkdir -p "$out"

# name|title|kvgen options
runs='random|random|--policy random
round-robin|round-robin|--policy round-robin
affinity|affinity (cache affinity only)|--policy affinity
kv-xpu|kv (affinity + load)|--policy kv --weights 1,0,0
kv-xpu2|kv (affinity + load)|--policy kv --weights 2,1,0
kv|kv (affinity + load)|--policy kv --weights 1,1,0'

echo "$runs" | while IFS='|' read -r name title opts; do
	# zcat -f: a plain trace passes through as it is
	# shellcheck disable=SC2086
	zcat -f "$trace" | "$kvgen" -n -q --pool memcache $opts --window 60 --report "$out/$name.json"
	echo "$name|$title"
done > "$out/runs.txt"

# weights only mean something to the kv and affinity policies
{
	echo "| policy | weights | served from cache | from xpu | from cpu (pool) | requests per worker |"
	echo "|---|---|---:|---:|---:|---|"
	while IFS='|' read -r name title; do
		jq -r --arg t "$title" '"| \($t) | \(if .policy == "kv" or .policy == "affinity" then (.weights | map(tostring) | join(",")) else "-" end) | \(.hits.hit_rate * 1000 | round / 10)% | \(.hits.xpu_rate * 1000 | round / 10)% | \(.hits.cpu_rate * 1000 | round / 10)% | \(.requests_per_worker | min) to \(.requests_per_worker | max) |"' "$out/$name.json"
	done < "$out/runs.txt"
} | tee "$out/table.md"

# hit rate per minute, one line per run
plot=
while IFS='|' read -r name title; do
	jq -r '.windows[] | "\(.start_s / 60) \(.hit_rate * 100)"' "$out/$name.json" > "$out/$name.dat"
	w=$(jq -r 'if .policy == "kv" then ", weights " + (.weights | map(tostring) | join(",")) else "" end' "$out/$name.json")
	plot="$plot${plot:+, }'$out/$name.dat' using 1:2 with lines lw 2 title '$title$w'"
done < "$out/runs.txt"
if ! command -v "$gnuplot" >/dev/null 2>&1; then
	echo "$prog: $gnuplot not found: plot skipped (the data is in $out/*.dat)" >&2
	exit 0
fi
"$gnuplot" <<-GP
set terminal pngcairo size 900,480 font ',10'
set output '$out/routing-experiment.png'
set title 'Prompt tokens served from cache, ${about:-Mooncake conversation trace}, 16 x 4 ranks, memcache pool' noenhanced
set xlabel 'minute of the trace'
set ylabel '% of prompt tokens'
set yrange [0:*]
set key top left
set grid
plot $plot
GP
echo "$prog: plot: $out/routing-experiment.png" >&2
