#!/bin/sh
# make demo: a small live capture from a publisher the demo starts itself.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s check-build >/dev/null
build/release/tests/fakepub -n 5 "ipc://$tmp/pub" &
bin/kvsub -c 5 -W 10 -o "$tmp/demo.kvcap" "ipc://$tmp/pub"
wait
build/release/tests/capdump "$tmp/demo.kvcap"
