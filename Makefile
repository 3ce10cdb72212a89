# kvtools: see README.md.  `make` builds bin/PROG, `make check` runs the tests.

VERSION    = 0.1.0
PROGS      = $(sort $(basename $(notdir $(wildcard bin/*.c))))
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
MANDIR    ?= $(PREFIX)/share/man
SHAREDIR  ?= $(PREFIX)/share/kvtools
ZSHDIR    ?= $(PREFIX)/share/zsh/site-functions
# bash-completion's completionsdir from pkg-config, but under PREFIX; when
# pkg-config knows no bash-completion, $(PREFIX)/share/bash-completion/completions.
# Deliberately not /usr/share/bash-completion/completions whatever PREFIX is
# (an earlier fallback): `make install PREFIX=/usr/local` must write nothing
# under /usr/share, which belongs to the package manager, and bash-completion
# also looks in /usr/local/share ($XDG_DATA_DIRS).  With PREFIX=/usr both are
# /usr/share/bash-completion/completions.  BASHCOMPDIR=... overrides.
BASHCOMPDIR ?= $(shell pkg-config --define-variable=prefix=$(PREFIX) --define-variable=datadir=$(PREFIX)/share --variable=completionsdir bash-completion 2>/dev/null || echo $(PREFIX)/share/bash-completion/completions)

CC        ?= cc
PKGS       = libzmq $(MSGPACK_PC) jansson yajl libxxhash
MSGPACK_PC = $(shell pkg-config --exists msgpack-c 2>/dev/null && echo msgpack-c || echo msgpack)
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN       = -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes
ifeq ($(CI),true)
WARN      += -Werror
endif
CFLAGS    ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) $(CFLAGS) \
             -DKV_VERSION='"$(VERSION)"' -Ilib $(PKG_CFLAGS)
LDLIBS     = $(PKG_LIBS) -lm -pthread

# SAN=1: the same tree built with AddressSanitizer and UBSan into build/san,
# so that a sanitizer run never mixes objects with the normal build.
ifeq ($(SAN),1)
BUILD      = build/san
ALL_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS   += -fsanitize=address,undefined
PROGDIR    = build/san/bin
else
BUILD      = build/release
PROGDIR    = bin
endif

# lib/ by stage, lowest first; tests/layers (make lint) checks that a file
# includes headers of its own folder or of folders before it only (doc/layout.md "lib/, by stage").
LAYERS     = base decode net index query sim prom
LIB_SRC    = $(wildcard $(LAYERS:%=lib/%/*.c))
LIB_HDR    = $(wildcard $(LAYERS:%=lib/%/*.h))
LIB_OBJ    = $(LIB_SRC:lib/%.c=$(BUILD)/lib/%.o)
LIBA       = $(BUILD)/libkvtools.a
BINS       = $(PROGS:%=$(PROGDIR)/%)
UNIT_SRC   = $(wildcard tests/unit/test_*.c)
UNITS      = $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
HELPER_SRC = $(wildcard tests/helpers/*.c)
HELPERS    = $(HELPER_SRC:tests/helpers/%.c=$(BUILD)/tests/%)
FUZZ_SRC   = $(wildcard fuzz/fuzz_*.c)
FUZZ_NAMES = $(FUZZ_SRC:fuzz/fuzz_%.c=%)
REPLAYS    = $(FUZZ_NAMES:%=$(BUILD)/tests/fuzzreplay_%)
# bench/limits.c: the machine's limits (hashing, random reads) that bench/run
# states its ratio rows in, and bench/applyonly.c, kvmatch's matcher timed on
# events decoded ahead; built with the tests so that CI's -Werror sees them
BENCH_PROBES = $(BUILD)/tests/limits $(BUILD)/tests/applyonly
FUZZERS    = $(FUZZ_NAMES:%=build/fuzz/fuzz_%)

.PHONY: all help check check-build deps install uninstall deb clean demo bench fuzz lint samples sample-decoupled
.SUFFIXES:
.SECONDARY:

all: $(BINS)

help:
	@echo 'make                 build the programs into bin/'
	@echo 'make SAN=1           build them with AddressSanitizer and UBSan into build/san/bin/'
	@echo 'make check           build and run every test (TESTS="kvsub unit" picks suites)'
	@echo 'make check SAN=1     the same tests against build/san/bin/'
	@echo 'make check VALGRIND=1 TESTS=unit  the C unit tests under valgrind'
	@echo 'make demo            install what is missing, build, run the chain on a sample'
	@echo 'make deb             build kvtools_VERSION_ARCH.deb (apt install ./kvtools_*.deb)'
	@echo 'make lint | fuzz | bench | samples | sample-decoupled | install | uninstall | clean'
	@echo 'See README.md.'

$(BUILD)/lib/%.o: lib/%.c $(LIB_HDR) $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/bin/%.o: bin/%.c $(LIB_HDR) $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(LIBA): $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(PROGDIR)/%: $(BUILD)/bin/%.o $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(LIBA) $(LDLIBS)

# kvstat and kvquery alone speak HTTP, through libcurl.  Their HTTP modules
# are in lib/http/ (fetch.c: kvstat's GETs; post.c: kvquery --against's
# POSTs; easy.c: how both set up a transfer; curlapi.h: the libcurl
# functions they call), outside LIB_SRC, so that libkvtools.a, the other
# programs, the unit tests and the fuzz harnesses never depend on curl.
# kvstat links libcurl (curllinked.c); kvquery loads libcurl.so.4 only when
# --against asks for it (curlload.c), so that its other runs do not start
# libcurl and the 30 libraries it needs (about 15 ms of CPU a run).
CURL_CFLAGS   = $(shell pkg-config --cflags libcurl 2>/dev/null)
LDLIBS_curl   = $(shell pkg-config --libs libcurl 2>/dev/null)
$(BUILD)/lib/http/%.o: lib/http/%.c $(wildcard lib/http/*.h) $(LIB_HDR) $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(CURL_CFLAGS) -c -o $@ $<
$(BUILD)/bin/kvstat.o: lib/http/fetch.h
$(PROGDIR)/kvstat: $(BUILD)/bin/kvstat.o $(BUILD)/lib/http/fetch.o $(BUILD)/lib/http/easy.o \
		   $(BUILD)/lib/http/curllinked.o $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LIBA) $(LDLIBS) $(LDLIBS_curl)
$(BUILD)/bin/kvquery.o: lib/http/post.h
$(PROGDIR)/kvquery: $(BUILD)/bin/kvquery.o $(BUILD)/lib/http/post.o $(BUILD)/lib/http/easy.o \
		    $(BUILD)/lib/http/curlload.o $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LIBA) $(LDLIBS) -ldl

# kvnats alone links libnats (NATS JetStream), the same way: its module is
# lib/nats/js.c, outside LIB_SRC.
NATS_CFLAGS   = $(shell pkg-config --cflags libnats 2>/dev/null)
LDLIBS_kvnats = $(shell pkg-config --libs libnats 2>/dev/null || echo -lnats) -lpthread
$(BUILD)/lib/nats/js.o: lib/nats/js.c lib/nats/js.h $(LIB_HDR) $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(NATS_CFLAGS) -c -o $@ $<
$(BUILD)/bin/kvnats.o: lib/nats/js.h
$(PROGDIR)/kvnats: $(BUILD)/bin/kvnats.o $(BUILD)/lib/nats/js.o $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LIBA) $(LDLIBS) $(LDLIBS_kvnats)

$(BUILD)/tests/%: tests/unit/%.c tests/unit/unit.h $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itests/unit $(LDFLAGS) -o $@ $< $(LIBA) $(LDLIBS)

$(BUILD)/tests/%: tests/helpers/%.c $(wildcard tests/helpers/*.h) $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIBA) $(LDLIBS)

$(BUILD)/tests/limits: bench/limits.c $(BUILD)/.flags
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LDLIBS)

$(BUILD)/tests/applyonly: bench/applyonly.c $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIBA) $(LDLIBS)

# Each fuzz harness is also built with a plain driver that replays its
# corpus, so that `make check` runs every corpus file.
FUZZ_HDR   = $(wildcard fuzz/*.h)
$(BUILD)/tests/fuzzreplay_%: fuzz/fuzz_%.c fuzz/replay.c $(FUZZ_HDR) $(LIBA)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< fuzz/replay.c $(LIBA) $(LDLIBS)

# make fuzz: the libFuzzer builds (clang), with every lib object instrumented.
FUZZ_CC     = clang
FUZZ_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -g -O1 -Ilib $(PKG_CFLAGS) \
              -DKV_VERSION='"$(VERSION)"' -fsanitize=fuzzer-no-link,address,undefined \
              -fno-sanitize-recover=undefined
FUZZ_LIBOBJ = $(LIB_SRC:lib/%.c=build/fuzz/lib/%.o)

build/fuzz/lib/%.o: lib/%.c $(LIB_HDR)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

build/fuzz/libkvtools.a: $(FUZZ_LIBOBJ)
	rm -f $@
	ar rcs $@ $^

# The fuzz harnesses with the project's warnings (lib/ gets them in the other builds).
build/fuzz/fuzz_%: fuzz/fuzz_%.c $(FUZZ_HDR) build/fuzz/libkvtools.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(WARN) -fsanitize=fuzzer -o $@ $< build/fuzz/libkvtools.a $(LDLIBS)

fuzz: $(FUZZERS)
	@echo "run: build/fuzz/fuzz_NAME -dict=fuzz/NAME.dict -max_total_time=60 NEWDIR fuzz/corpus/NAME"

# make lint: cppcheck and clang-tidy over every C file, configured by
# .cppcheck-suppressions and .clang-tidy; any finding fails.  clang-tidy runs
# once per file into build/lint, so `make -j2 lint` uses both cores and a
# second run only looks at what changed.
LINT_SRC   = $(LIB_SRC) $(wildcard lib/http/*.c) lib/nats/js.c $(wildcard bin/*.c) $(UNIT_SRC) $(HELPER_SRC) $(FUZZ_SRC) fuzz/replay.c bench/limits.c bench/applyonly.c
TIDY_FLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DKV_VERSION='"$(VERSION)"' \
             -Ilib -Itests/unit $(PKG_CFLAGS) $(CURL_CFLAGS) $(NATS_CFLAGS)
CPPCHECK   = cppcheck --std=c11 --enable=warning,style,performance,portability --inline-suppr \
             --suppressions-list=.cppcheck-suppressions --error-exitcode=1 --quiet \
             -D__BYTE_ORDER__=1234 -D__ORDER_LITTLE_ENDIAN__=1234 -DKV_VERSION='"$(VERSION)"' -Ilib -Itests/unit

lint: deps
	tests/layers
	$(CPPCHECK) $(LINT_SRC)
	@$(MAKE) --no-print-directory $(LINT_SRC:%.c=build/lint/%.tidy)
	@echo "lint: $(words $(LINT_SRC)) files clean (cppcheck, clang-tidy)"

build/lint/%.tidy: %.c .clang-tidy $(LIB_HDR) $(wildcard lib/http/*.h lib/nats/*.h)
	@mkdir -p $(@D)
	clang-tidy --quiet $< -- $(TIDY_FLAGS)
	@touch $@

# Rebuild everything when the compiler or its flags change.
$(BUILD)/.flags: FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(ALL_CFLAGS) $(LDFLAGS)' | cmp -s - $@ || echo '$(CC) $(ALL_CFLAGS) $(LDFLAGS)' > $@
.PHONY: FORCE
FORCE:

check-build: $(BINS) $(UNITS) $(HELPERS) $(REPLAYS) $(BENCH_PROBES)

# TESTS="kvsub unit" runs only those suites; VALGRIND=1 runs the unit tests
# under valgrind (not with SAN=1: the two do not mix).
check: deps
	@if [ "$(VALGRIND)" = 1 ] && [ "$(SAN)" = 1 ]; then echo "make check: VALGRIND=1 and SAN=1 do not mix" >&2; exit 2; fi
	@$(MAKE) --no-print-directory check-build
	@KVTOOLS_BIN=$(CURDIR)/$(PROGDIR) KVTOOLS_TESTBIN=$(CURDIR)/$(BUILD)/tests \
	  KVTOOLS_SAN=$(SAN) KVTOOLS_VALGRIND=$(VALGRIND) tests/run $(TESTS)

deps:
	@share/deps.sh

bench: deps
	@$(MAKE) --no-print-directory check-build
	@bench/run $(BENCH)

# Like check: the build runs in a sub-make started after deps has finished,
# so that `make -j2 demo` on a fresh machine does not compile while
# share/deps.sh is still installing the headers.
demo: deps
	@$(MAKE) --no-print-directory all
	@share/demo.sh

# make samples: share/sample.kvcap, its registrations and queries, made again
# from the trace byte for byte (kvgen is deterministic; the capture's header
# names kvgen's version, so a new VERSION changes that header alone): 2 nodes
# x 2 DP ranks of 64-token blocks and 1500-block caches, a memcache pool, kv
# routing (kvgen's default: cache affinity and load), the first 30 requests;
# the queries are the last five of them cut to 2048 tokens.  SAMPLEDIR=DIR
# writes them elsewhere.
SAMPLEDIR  ?= share
SAMPLE_OPTS = --workers 2 --dp 2 --block-size 64 --capacity 1500 --pool memcache --limit 30

samples: $(PROGDIR)/kvgen
	@mkdir -p $(SAMPLEDIR)
	$(PROGDIR)/kvgen -q $(SAMPLE_OPTS) --registrations $(SAMPLEDIR)/registrations.jsonl \
	  --queries $(SAMPLEDIR)/queries.all -o $(SAMPLEDIR)/sample.kvcap share/traces/conversation-300.jsonl
	sed -n 26,30p $(SAMPLEDIR)/queries.all | jq -c '.token_ids |= .[:2048]' > $(SAMPLEDIR)/queries.jsonl
	rm -f $(SAMPLEDIR)/queries.all

# make sample-decoupled: the same cluster behind a decoupled Mooncake pool,
# its master publishing as backend_id mooncake-daemon-0, no engine's host
# (kvmatch holds its blocks by a pool holder; kvquery --shared-pool counts
# them), into SAMPLEDIR as sample-decoupled.kvcap and
# registrations-decoupled.jsonl; not shipped.
DECOUPLED_OPTS = --workers 2 --dp 2 --block-size 64 --capacity 1500 --pool mooncake \
                 --pool-backend mooncake-daemon-0 --load-weight 8 --limit 30

sample-decoupled: $(PROGDIR)/kvgen
	@mkdir -p $(SAMPLEDIR)
	$(PROGDIR)/kvgen -q $(DECOUPLED_OPTS) --registrations $(SAMPLEDIR)/registrations-decoupled.jsonl \
	  -o $(SAMPLEDIR)/sample-decoupled.kvcap share/traces/conversation-300.jsonl

# What `make install` puts in SHAREDIR: the sample, its registrations and
# queries (what `make samples` writes), and every file of traces/ and examples/.
SHARE_FILES = sample.kvcap registrations.jsonl queries.jsonl \
              $(patsubst share/%,%,$(wildcard share/traces/* share/examples/*))
MANPAGES    = $(wildcard man/*.[1-8])

# Everything `make install` puts in place, one MODE:SOURCE:DEST a file (DEST
# under DESTDIR; no colon in the directories, then): install, uninstall and
# make deb all read this one list, derived from bin/*.c, man/, completions/
# and share/, so a new program, page or share file is installed, removed and
# packaged with nothing more written.  The programs are those `make` builds
# with the same variables (PROGDIR: bin, or build/san/bin with SAN=1).
INSTALLED = $(foreach p,$(PROGS),755:$(PROGDIR)/$p:$(BINDIR)/$p) \
  $(foreach m,$(MANPAGES),644:$m:$(MANDIR)/man$(subst .,,$(suffix $m))/$(notdir $m)) \
  $(foreach p,$(PROGS),644:completions/bash/kvtools:$(BASHCOMPDIR)/$p) \
  $(foreach p,$(PROGS),644:completions/zsh/_$p:$(ZSHDIR)/_$p) \
  $(foreach f,$(SHARE_FILES),$(if $(filter %.sh,$f),755,644):share/$f:$(SHAREDIR)/$f)
INSTALLED_DEST = $(foreach e,$(INSTALLED),$(lastword $(subst :, ,$e)))
SHARE_SUBDIRS  = $(sort $(filter-out ./,$(dir $(SHARE_FILES))))

install: all
	@for e in $(INSTALLED); do \
	  mode=$${e%%:*}; rest=$${e#*:}; src=$${rest%%:*}; dst=$(DESTDIR)$${rest#*:}; \
	  echo "install -m $$mode $$src $$dst"; \
	  install -D -m "$$mode" "$$src" "$$dst" || exit 1; \
	done

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED_DEST))
	-rmdir $(SHARE_SUBDIRS:%=$(DESTDIR)$(SHAREDIR)/%) $(DESTDIR)$(SHAREDIR) 2>/dev/null

# make deb: kvtools_VERSION_ARCH.deb in DEBDIR (default: here), for dpkg and
# apt.  No debian/rules: the package is `make install` staged with
# PREFIX=/usr, and debian/ holds what the Debian tools read (control,
# changelog, copyright).  The programs are built again for it with Debian's
# build flags (dpkg-buildflags: hardening, all of it, and --as-needed so that
# a program depends only on the libraries it uses), into DEBBUILD apart from
# bin/ and build/san whatever SAN says, then stripped; man pages gzip -9n;
# zsh completions in vendor-completions, where Debian's zsh looks;
# dpkg-shlibdeps writes Depends from the programs, dpkg-gencontrol the control
# file, dpkg-deb the package, owned by root with no fakeroot.  The version is
# VERSION, which debian/changelog's latest entry must name.
DEBDIR      ?= .
DEBBUILD    ?= build/deb
DEB_ARCH     = $(shell dpkg --print-architecture 2>/dev/null)
DEB          = $(DEBDIR)/kvtools_$(VERSION)_$(DEB_ARCH).deb
DEB_ROOT     = $(DEBBUILD)/root
DEB_DOC      = $(DEB_ROOT)/usr/share/doc/kvtools
DEB_FLAGS    = DEB_BUILD_MAINT_OPTIONS=hardening=+all DEB_LDFLAGS_MAINT_APPEND=-Wl,--as-needed dpkg-buildflags --get
DEB_PROGS    = $(PROGS:%=$(DEB_ROOT)/usr/bin/%)
DEB_INSTALL  = SAN= BUILD=$(DEBBUILD)/build PROGDIR=$(DEBBUILD)/build/bin DESTDIR=$(DEB_ROOT) \
               PREFIX=/usr BASHCOMPDIR=/usr/share/bash-completion/completions \
               ZSHDIR=/usr/share/zsh/vendor-completions \
               CFLAGS="$$($(DEB_FLAGS) CFLAGS) $$($(DEB_FLAGS) CPPFLAGS)" LDFLAGS="$$($(DEB_FLAGS) LDFLAGS)"

deb: deps
	@v=$$(dpkg-parsechangelog -S Version) && [ "$$v" = "$(VERSION)" ] || \
	  { echo "make deb: debian/changelog's latest entry is $$v, the Makefile's VERSION $(VERSION)" >&2; exit 1; }
	rm -rf $(DEB_ROOT) $(DEBBUILD)/substvars
	@$(MAKE) --no-print-directory install $(DEB_INSTALL)
	strip --remove-section=.comment --remove-section=.note $(DEB_PROGS)
	gzip -9n $(DEB_ROOT)/usr/share/man/man*/*
	install -D -m 644 debian/copyright $(DEB_DOC)/copyright
	gzip -9nc debian/changelog > $(DEB_DOC)/changelog.gz
	find $(DEB_ROOT) -type d -exec chmod 755 {} +
	chmod 644 $(DEB_DOC)/changelog.gz
	mkdir $(DEB_ROOT)/DEBIAN
	dpkg-shlibdeps -T$(DEBBUILD)/substvars $(DEB_PROGS)
	dpkg-gencontrol -pkvtools -T$(DEBBUILD)/substvars -f$(DEBBUILD)/files -P$(DEB_ROOT)
	cd $(DEB_ROOT) && find usr -type f | LC_ALL=C sort | xargs md5sum > DEBIAN/md5sums && chmod 644 DEBIAN/*
	@mkdir -p $(DEBDIR)
	SOURCE_DATE_EPOCH=$$(dpkg-parsechangelog -S Timestamp) dpkg-deb --root-owner-group --build $(DEB_ROOT) $(DEB)

clean:
	rm -rf build $(PROGS:%=bin/%) tests/tmp kvtools_*.deb
