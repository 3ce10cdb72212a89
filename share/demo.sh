#!/bin/sh
# make demo: the whole chain on the shipped sample capture (kvgen's traffic
# of 2 nodes x 2 DP ranks with a memcache pool): decode it, match engine and
# pool events into an index, and ask the index where five requests should go.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
export PATH="$PWD/bin:$PATH"

step() { printf '\n$ %s\n' "$*"; }

step "kvdecode share/sample.kvcap | head -3 | cut -c1-150"
kvdecode share/sample.kvcap | head -3 | cut -c1-150
step "kvdecode --stats share/sample.kvcap >/dev/null"
kvdecode --stats share/sample.kvcap >/dev/null
step "kvmatch -r share/registrations.jsonl -o sample.kvsnap share/sample.kvcap | tail -2"
kvmatch -r share/registrations.jsonl -o "$tmp/sample.kvsnap" share/sample.kvcap 2>"$tmp/stats" | tail -2
cat "$tmp/stats"
step "kvquery -s sample.kvsnap share/queries.jsonl | head -2"
kvquery -s "$tmp/sample.kvsnap" share/queries.jsonl | head -2
step "kvquery -s sample.kvsnap --route --format table share/queries.jsonl"
kvquery -s "$tmp/sample.kvsnap" --route --format table share/queries.jsonl
