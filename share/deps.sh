#!/bin/sh
# make deps: installs the Debian packages kvtools builds, tests and
# benchmarks with.  Nothing to do when all are present; as root, apt-get
# installs what is missing; otherwise a clear message and exit status 1.
set -eu

# build: compiler, pkg-config and the libraries (libcurl: kvstat's HTTP
# scrapes and kvquery --against's requests, and only those two link it;
# libnats: kvnats alone, JetStream);
# test: bats, mandoc, script(1), nats-server (kvnats tests), objdump (the
# matcher's prefetch hints kept by the compiler), strace (how often an
# input is opened);
# package: dpkg-dev (dpkg-shlibdeps, dpkg-gencontrol, dpkg-buildflags for
# make deb), lintian (tests/package.bats holds the package to its report);
# bench and experiments: Python baselines, gnuplot; lint and fuzz: clang tools.
packages="gcc make pkg-config libc6-dev
libzmq3-dev libmsgpack-dev libjansson-dev libyajl-dev libxxhash-dev libcurl4-openssl-dev
libnats-dev nats-server
bats bats-support bats-assert mandoc man-db bsdutils bash-completion zsh jq binutils strace
dpkg-dev lintian
python3 python3-msgpack python3-xxhash gnuplot-nox
clang libclang-rt-14-dev cppcheck clang-tidy valgrind"

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "kvtools: not a Debian system; install the equivalents of: $(echo $packages)" >&2
	exit 1
fi

missing=
for p in $packages; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "kvtools: missing Debian packages:$missing" >&2
	echo "kvtools: run 'sudo make deps' (or: sudo apt-get install$missing)" >&2
	exit 1
fi
echo "kvtools: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
