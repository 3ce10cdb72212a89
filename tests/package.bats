#!/usr/bin/env bats
# make deb: the Debian package, built into this suite's temporary directory,
# checked by lintian, installed into a scratch root by dpkg (its own admin
# directory there: the machine's dpkg database and /usr are never touched),
# run from there, and purged.  make deb builds the programs it packages
# itself, with Debian's build flags, into the directory it is given, whatever
# SAN says: under SAN=1 this suite packages and runs those release programs
# just the same, and compares their answers with the sanitizer build's.
load helper

VERSION=$(sed -n 's/^VERSION *= *//p' "$ROOT/Makefile")
ARCH=$(dpkg --print-architecture)

# One package for the whole suite (building it is most of the suite's time),
# in the suite's temporary directory.
setup_file() {
	local out=$BATS_FILE_TMPDIR
	cd "$ROOT" || return 1
	make -s -j2 deb DEBDIR="$out" DEBBUILD="$out/build" > "$out/make.log" 2>&1 || {
		cat "$out/make.log" >&3
		return 1
	}
}

deb() { echo "$BATS_FILE_TMPDIR/kvtools_${VERSION}_$ARCH.deb"; }

# What the package must hold, from the source tree: every program of bin/,
# every page of man/ (gzipped), both completions of each program, the share
# files make install ships, and the copyright and changelog.
expected_files() {
	local f p m
	for f in "$ROOT"/bin/*.c; do
		p=$(basename "$f" .c)
		echo "./usr/bin/$p"
		echo "./usr/share/bash-completion/completions/$p"
		echo "./usr/share/zsh/vendor-completions/_$p"
	done
	for m in "$ROOT"/man/*.[1-8]; do
		echo "./usr/share/man/man${m##*.}/${m##*/}.gz"
	done
	for f in sample.kvcap registrations.jsonl queries.jsonl "$ROOT"/share/traces/* "$ROOT"/share/examples/*; do
		echo "./usr/share/kvtools/${f#"$ROOT"/share/}"
	done
	echo ./usr/share/doc/kvtools/copyright
	echo ./usr/share/doc/kvtools/changelog.gz
}

@test "make deb: kvtools_VERSION_ARCH.deb with every program, page, completion and share file, owned by root" {
	run dpkg-deb -f "$(deb)" Package Version Architecture Section Priority
	assert_success
	assert_output "Package: kvtools
Version: $VERSION
Architecture: $ARCH
Section: net
Priority: optional"
	assert_equal "$(dpkg-deb --fsys-tarfile "$(deb)" | tar -t | grep -v '/$' | sort)" "$(expected_files | LC_ALL=C sort)"
	# owned by root, directories 755, programs and the example script 755, the rest 644
	run bash -c "dpkg-deb -c '$(deb)' | awk '\$2 != \"root/root\" || (\$1 ~ /^d/ && \$1 != \"drwxr-xr-x\") ||
		(\$1 ~ /^-/ && \$1 != (\$6 ~ /^\\.\\/usr\\/bin\\/|\\.sh\$/ ? \"-rwxr-xr-x\" : \"-rw-r--r--\"))'"
	assert_success
	assert_output ""
	# the programs stripped and no sanitizer builds (whatever SAN says), the
	# changelog's latest entry this version, the copyright file
	# machine-readable (DEP-5)
	dpkg-deb -x "$(deb)" x
	for p in x/usr/bin/*; do
		run objdump -h -p "$p"
		refute_output --partial .debug_info
		refute_output --partial .comment
		refute_output --regexp 'NEEDED +lib(a|ub|t|l)san'
		run nm "$p"
		assert_output --partial "no symbols"
	done
	assert_equal "$(zcat x/usr/share/doc/kvtools/changelog.gz | dpkg-parsechangelog -l- -SVersion)" "$VERSION"
	assert_equal "$(head -1 x/usr/share/doc/kvtools/copyright)" \
		"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
}

# Depends comes from dpkg-shlibdeps; here, independently, the package that
# owns each shared library a program needs (its NEEDED entries, found where
# the dynamic linker finds them) must be in it.
@test "make deb: Depends names the package of every shared library the programs need" {
	local depends prog soname lib pkg libs=0
	depends=" $(dpkg-deb -f "$(deb)" Depends | sed 's/([^)]*)//g; s/[,|]/ /g' | tr -s ' ') "
	dpkg-deb -x "$(deb)" x
	for prog in x/usr/bin/*; do
		for soname in $(objdump -p "$prog" | awk '$1 == "NEEDED" { print $2 }'); do
			lib=$(ldd "$prog" | awk -v s="$soname" '$1 == s && $2 == "=>" { print $3 }')
			[ -n "$lib" ] || fail "$prog: $soname not found"
			pkg=$(dpkg-query -S "$lib" 2>/dev/null || dpkg-query -S "/usr$lib" 2>/dev/null || dpkg-query -S "$(readlink -f "$lib")")
			pkg=${pkg%%:*}
			[[ $depends == *" $pkg "* ]] || fail "$prog: $lib: its package $pkg is not in Depends:$depends"
			libs=$((libs + 1))
		done
	done
	[ "$libs" -ge 8 ]
}

# lintian, every tag at every level (pedantic and experimental too): its
# output must be exactly the lines doc/install.md quotes (each explained there),
# so a new tag fails here and so does an explanation that no longer applies.
@test "make deb: lintian reports only the tags doc/install.md explains" {
	run --separate-stderr timeout 300 lintian --display-level '>=pedantic' --display-experimental \
		--tag-display-limit 0 "$(deb)"
	assert_success
	assert_equal "$(grep -v '^running with root privileges is not recommended!$' <<<"$stderr")" ""
	assert_equal "$(LC_ALL=C sort <<<"$output")" "$(sed -n 's/^    \([EWIPXO]: kvtools: \)/\1/p' "$ROOT/doc/install.md" | LC_ALL=C sort)"
}

# dpkg in a scratch root: its admin directory holds only the packages the
# Depends line names, copied from this machine's status (read, never
# written), so that dpkg checks the dependencies for real.
@test "the package installs into a scratch root, runs from there as the tree's programs do, and purges to nothing" {
	local R=$T/root D=$T/root/var/lib/dpkg p f m n=0
	mkdir -p "$D/info" "$D/updates"
	: > "$D/status"
	for p in $(dpkg-deb -f "$(deb)" Depends | sed 's/([^)]*)//g; s/[,|]/ /g'); do
		dpkg-query -s "$p" >> "$D/status" || continue
		echo >> "$D/status"
		: > "$D/info/$(dpkg-query -W -f='${binary:Package}' "$p").list"
	done
	(cd "$R" && find . | LC_ALL=C sort) > before
	run dpkg --root="$R" --log="$T/dpkg.log" -i "$(deb)"
	assert_success
	assert_output --partial "Setting up kvtools ($VERSION) ..."
	refute_output --partial warning
	# every program of bin/ is installed, and says its name and version
	for f in "$ROOT"/bin/*.c; do
		p=$(basename "$f" .c)
		run "$R/usr/bin/$p" --version
		assert_success
		assert_output "$p $VERSION"
		n=$((n + 1))
	done
	assert_equal "$(ls "$R/usr/bin" | wc -l)" "$n"
	# the shipped sample through the installed programs answers as through the tree's
	"$R/usr/bin/kvmatch" -q -r "$R/usr/share/kvtools/registrations.jsonl" --log none -o installed.kvsnap \
		"$R/usr/share/kvtools/sample.kvcap"
	"$R/usr/bin/kvquery" -s installed.kvsnap --route --format table "$R/usr/share/kvtools/queries.jsonl" > installed.txt
	kvmatch -q -r "$ROOT/share/registrations.jsonl" --log none -o tree.kvsnap "$ROOT/share/sample.kvcap"
	kvquery -s tree.kvsnap --route --format table "$ROOT/share/queries.jsonl" > tree.txt
	assert_equal "$(cat installed.txt)" "$(cat tree.txt)"
	assert_equal "$(wc -l < installed.txt)" 6
	cmp installed.kvsnap tree.kvsnap
	# man finds every page by name in the installed tree, and renders it
	for m in "$ROOT"/man/*.[1-8]; do
		f=${m##*/}
		run man -M "$R/usr/share/man" -w "${f##*.}" "${f%.*}"
		assert_output "$R/usr/share/man/man${f##*.}/$f.gz"
		run man -l "$R/usr/share/man/man${f##*.}/$f.gz"
		assert_success
		[ "${#output}" -gt 500 ]
	done
	# the completions are the tree's, where bash-completion and Debian's zsh look
	for f in "$ROOT"/bin/*.c; do
		p=$(basename "$f" .c)
		cmp "$R/usr/share/bash-completion/completions/$p" "$ROOT/completions/bash/kvtools"
		cmp "$R/usr/share/zsh/vendor-completions/_$p" "$ROOT/completions/zsh/_$p"
		run bash -c "source '$R/usr/share/bash-completion/completions/$p' && complete -p $p"
		assert_success
	done
	run zsh -fc "fpath=($R/usr/share/zsh/vendor-completions \$fpath) && autoload -Uz compinit && compinit -D && print -r -- \$_comps[kvquery]"
	assert_output _kvquery
	# purged, the scratch root is what it was before; dpkg's own files aside,
	# its database knows nothing of kvtools
	run dpkg --root="$R" --log="$T/dpkg.log" --purge kvtools
	assert_success
	assert_output --partial "Removing kvtools ($VERSION) ..."
	assert_equal "$(cd "$R" && find . | LC_ALL=C sort | grep -Ev '^\./var/lib/dpkg/(info/format|lock|lock-frontend|status-old|triggers|triggers/.*)$')" "$(cat before)"
	run grep -c '^Package: kvtools$' "$D/status"
	assert_output 0
}
