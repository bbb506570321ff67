# vbench build. `make` builds bin/vbench (CLI + coordinator) and bin/vbench-agent;
# `make test` installs what is missing, builds, and runs every test through prove (TAP).
# Sources are picked up by folder, so adding a module needs no edit here.

BUILD    ?= build
CC       ?= cc
CXX      ?= g++
OPT      ?= -O2
SAN      ?=
PKGS     := libzmq libczmq libprotobuf-c sqlite3 yaml-0.1 libxxhash libsystemd libmariadb libpq jansson hiredis libmongoc-1.0 libcurl libcrypto libarchive zlib
HDF5_DIR := /usr/lib/x86_64-linux-gnu/hdf5/serial
CPPFLAGS += -D_GNU_SOURCE -I. -I$(BUILD)/gen -I$(HDF5_DIR)/include $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
CFLAGS   += -std=gnu11 $(OPT) -g -Wall -Wextra -pthread $(SAN)
CXXFLAGS += -std=c++17 -O3 -g -Wall -Wextra -pthread $(SAN)
LDLIBS   += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -L$(HDF5_DIR)/lib -lhdf5 -lopenblas -lstdc++ -lm -pthread
LDFLAGS  += $(SAN)

# git's revision (-dirty if changed), else read from .git as files when git is missing, else "unknown".
GIT_REV  := $(shell sh util/git-rev.sh)
CPPFLAGS += -DVB_GIT_REV='"$(GIT_REV)"'

# Shared code used by both programs, one folder per concern (docs/design.md has the map).
LIB_C    := $(wildcard util/*.c metrics/*.c datasets/*.c engines/*.c config/*.c proto/*.c orchestrator/*.c)
LIB_CXX  := $(wildcard engines/*.cc)
PROTO_C  := $(BUILD)/gen/proto/vbench.pb-c.c
EMBED_C  := $(BUILD)/gen/embedded.c
LIB_OBJ  := $(LIB_C:%.c=$(BUILD)/%.o) $(LIB_CXX:%.cc=$(BUILD)/%.o) $(PROTO_C:%.c=%.o) $(EMBED_C:%.c=%.o)
# Each program is its own folders and the shared library: bin/vbench is the command line (cli/), the campaign
# run (coordinator/), the results store (store/) and the read side (report/); bin/vbench-agent is agent/ (the
# client role, and main.c hosting the orchestrator role of orchestrator/).
obj_of    = $(patsubst %.c,$(BUILD)/%.o,$(wildcard $(1:%=%/*.c)))
CLI_OBJ   := $(call obj_of,cli coordinator store report)
AGENT_OBJ := $(call obj_of,agent)
STORE_OBJ := $(call obj_of,store)
# The unit tests drive any module of either program, so they link every folder but the two main.c files.
TEST_OBJ  := $(filter-out $(BUILD)/cli/main.o $(BUILD)/agent/main.o,$(CLI_OBJ) $(AGENT_OBJ))
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
EMBEDDED := $(sort $(wildcard profiles/*.yml)) store/schema.sql store/views.sql datasets/parquet2fbin.mjs

.PHONY: all binaries deps test test-deps unit asan-test valgrind-test bench-gt bench-client bench-client-pg bench-scale clean
# The builds run as many compilers as the machine has cores (a clean build of everything with the unit tests and
# the fuzz replayers is some 200 compilations: on 2 cores serial it was most of make test's first minutes).
BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# `make` first installs what is missing (Debian packages), then builds in a fresh make so that the
# pkg-config flags are read after the install.
all: deps
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) binaries

binaries: bin/vbench bin/vbench-agent

deps:
	@bash deploy/install-deps

# Inside make test (VB_DEPS_CHECKED, set for the suite after its own check) a test that runs `make TARGET` (07's
# bench targets) does not check the packages again: 36-dataset-fetch removes dataset-fashion-mnist on purpose while
# other files run, and at four lanes 07's check found it missing and called apt-get into 36's dpkg lock.
test-deps:
	@[ -n "$${VB_DEPS_CHECKED:-}" ] || bash deploy/install-deps --with-tests

# One run of protoc-c makes both files (a grouped target: a parallel make must not run it twice at once).
$(BUILD)/gen/proto/vbench.pb-c.c $(BUILD)/gen/proto/vbench.pb-c.h &: proto/vbench.proto
	@mkdir -p $(BUILD)/gen/proto
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen/proto proto/vbench.proto

# Profiles and the results schema are compiled in, so the binary works from any directory.
$(EMBED_C): $(EMBEDDED) util/embed.sh
	@mkdir -p $(dir $@)
	sh util/embed.sh $(EMBEDDED) > $@

$(BUILD)/%.o: %.c $(BUILD)/gen/proto/vbench.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libvbench.a: $(LIB_OBJ)
	ar rcs $@ $^

bin/vbench: $(CLI_OBJ) $(BUILD)/libvbench.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

bin/vbench-agent: $(AGENT_OBJ) $(BUILD)/libvbench.a
	@mkdir -p bin
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(TEST_OBJ) $(BUILD)/libvbench.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

unit: $(UNIT_BIN)

# The whole suite: unit programs and end-to-end scripts, all speaking TAP, summarised by prove, TEST_JOBS at a
# time. They can run side by side: none uses a fixed path, port or namespace name (scratch directories come from
# mktemp; network namespaces, cgroups, veth names and TCP ports are named after the test's PID; servers listen on
# sockets in the scratch directory, bound into their own mount namespace). Twice as many lanes as this machine has
# cores, four at most: the files wait on windows, timeouts and servers (each uses under half a core), so extra lanes
# fill the cores they leave idle. Measured on this 2-core machine, warm (docs/testing.md, 2026-12-06): prove 1,056 s
# at two lanes, 772 at three, 625 at four, for 1,348 / 1,248 / 1,009 CPU-seconds (the last after the fault tests'
# windows became open loops). Four lanes once failed CI twice, on scripts that kill a server two seconds into what
# was then a closed-loop window; `make test TEST_JOBS=2` for the calmer machine. The longest go
# first (the files of tests/budget.txt, by their measured seconds, longest first: a long file started last would
# run alone at the end), then the other end-to-end scripts, and the short unit programs fill the lanes at the end.
# tests/run-suite is prove with the gate: as root with systemd and debootstrap (tests/required-here) every skip is a
# failure naming its cause, and the line before prove's summary counts the skips by reason.
# Only as many lanes as cores while an engine image (deploy/images/*.list) is not in the cache yet: the suite's first
# run builds them (debootstrap and apt beside the tests), and at four lanes beside those builds the streaming
# writer of 46 fell behind its schedule in two fresh checks (2026-12-06 18:37 and 18:58, cold cache, load 11-17).
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); m=$$((n * 2)); \
                     for i in deploy/images/*.list; do \
                         bash deploy/image-build --path-only "$$(basename "$$i" .list)" >/dev/null 2>&1 || m=$$n; done; \
                     [ "$$m" -gt 4 ] && m=4; echo $$m)
E2E_ALL   := $(sort $(wildcard tests/e2e/*.t))
E2E_FIRST := $(wildcard $(addprefix tests/e2e/,$(shell awk '$$1 ~ /\.t$$/ { print $$2, $$1 }' tests/budget.txt | \
                                                         sort -rn | awk '{ print $$2 }')))
test: test-deps
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) binaries unit
	@VB_DEPS_CHECKED=1 VB_BIN=$(CURDIR)/bin bash tests/run-suite --exec 'bash tests/lib/cpu-exec' --timer -j$(TEST_JOBS) $(E2E_FIRST) \
	  $(filter-out $(E2E_FIRST),$(E2E_ALL)) $(UNIT_BIN)

# Unit tests under AddressSanitizer + UndefinedBehaviorSanitizer, in a build tree of their own.
SAN_ENV := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$(CURDIR)/tests/ubsan.supp
asan-test: test-deps
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer" unit
	@$(SAN_ENV) \
	  prove --exec '' -j$(TEST_JOBS) $(UNIT_SRC:tests/unit/%.c=build-asan/tests/%)
	@for t in $(FUZZ_NAMES); do $(SAN_ENV) \
	  build-asan/fuzz-replay/$$t -timeout=60 tests/fuzz/corpus/$$t/* >build-asan/fuzz-replay/$$t.log 2>&1 || \
	  { echo "fuzz corpus replay of $$t under ASan/UBSan failed: build-asan/fuzz-replay/$$t.log"; exit 1; }; \
	  done; echo "fuzz corpus replayed under ASan/UBSan: $(FUZZ_NAMES)"

# Unit tests, then a whole campaign (coordinator and agent) under valgrind memcheck.
valgrind-test: test-deps
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) binaries unit
	@for t in $(UNIT_BIN); do valgrind -q --error-exitcode=99 --leak-check=full $$t >/dev/null || exit 1; done; echo "valgrind: unit tests clean"
	@bash tests/valgrind-campaign.sh bin

bench-gt: test-deps
	@$(MAKE) --no-print-directory binaries
	@$(MAKE) --no-print-directory $(BUILD)/bench/bench_gt
	@sh bench/bench_gt.sh $(BUILD)/bench/bench_gt

# The stand's own costs at 1M to 10M rows (issue 29; docs/benchmarks.md): BENCH_SCALE_ROWS, _DIM, _QUERIES,
# _DIR, _CGROUP_MIB tune it (bench/bench_scale.sh).
bench-scale: test-deps
	@$(MAKE) --no-print-directory binaries
	@bash bench/bench_scale.sh bin

$(BUILD)/bench/%: bench/%.c $(BUILD)/libvbench.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The client benchmark: the C client (the agent's workload loop) and a Python-threads client calling the same
# test engines through ctypes, side by side in one table.
bench-client:
	@$(MAKE) --no-print-directory $(BUILD)/bench/bench_client $(BUILD)/bench/libvbpyengine.so
	@sh bench/bench_client.sh $(BUILD)/bench/bench_client $(BUILD)/bench/libvbpyengine.so

$(BUILD)/bench/bench_client: bench/bench_client.c $(BUILD)/agent/workload.o $(BUILD)/libvbench.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The client against a real PostgreSQL 17 + pgvector (a throwaway server from the engine image, needs root):
# vbench's client beside pgbench -M prepared and a Python-threads psycopg client, same kNN query, one table.
bench-client-pg:
	@bash deploy/install-deps --with-bench
	@$(MAKE) --no-print-directory $(BUILD)/bench/bench_client_pg
	@bash bench/bench_client_pg.sh $(BUILD)/bench/bench_client_pg

$(BUILD)/bench/bench_client_pg: bench/bench_client_pg.c $(BUILD)/agent/workload.o $(BUILD)/libvbench.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/bench/libvbpyengine.so: bench/pyengine.c engines/testing.c util/kv.c util/error.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -shared -o $@ $^

# The report's timing on 10,000 results (a benchmark, not a test).
.PHONY: bench-report
bench-report: binaries
	@sh bench/bench_report.sh bin

# A report a newcomer can open: the dev profile on the embedded engines, then `vbench report` on it.
.PHONY: report-demo
report-demo: binaries
	@mkdir -p results.db
	rm -f results.db/demo.sqlite results.db/demo.sqlite.bak
	bin/vbench run --profile dev --engines hnswlib,exact --out results.db/demo.sqlite --quiet || test $$? -eq 1
	bin/vbench report results.db/demo.sqlite -o results.db/demo-report
	@echo "open results.db/demo-report/report.html in a browser"

clean:
	rm -rf $(BUILD) build-asan build-fuzz bin

# The soak (not part of `make test`; root): a pgvector campaign of SOAK_MINUTES on three network-namespace hosts
# with a fault every FAULT_EVERY_S (coordinator, agent and server SIGKILL, a 10 s link cut, a 30 s SIGSTOP),
# RSS and open descriptors of the coordinator and agents sampled every minute; docs/reliability.md has a run.
SOAK_MINUTES  ?= 30
FAULT_EVERY_S ?= 180
.PHONY: soak
soak: test-deps
	@$(MAKE) --no-print-directory binaries
	@SOAK_MINUTES=$(SOAK_MINUTES) FAULT_EVERY_S=$(FAULT_EVERY_S) VB_BIN=$(CURDIR)/bin bash tests/soak/soak.sh

# The README's two commands, exactly as written there, on a fresh minimal Debian 12 root made by debootstrap
# from a clone of HEAD (root; about 25 minutes, the engine image is built cold). Prints PASS/FAIL and times.
.PHONY: fresh-check
fresh-check:
	@bash tests/fresh-check.sh

# `vbench run --profile smoke --engines pgvector,mariadb` inside the test systemd namespace (root): prints the
# estimate, the truth and their ratio, and PASS/FAIL on the 1.5x bound (issue 16). Tens of minutes: not in `make test`.
.PHONY: smoke-check
smoke-check: binaries
	@bash tests/smoke-check.sh

-include $(shell find $(BUILD) -name '*.d' -type f 2>/dev/null)

# ---- orchestrator foundations (issue 4): engine images and test tools ------------------------------------
# `make image` builds (or finds in /var/cache/vbench/images) the engine image db-trixie; IMAGE=NAME for another
# recipe in deploy/images/. Test tools in tests/tools/ are small programs the end-to-end tests drive; they are
# built with the unit tests.
IMAGE      ?= db-trixie
TOOLS_SRC  := $(wildcard tests/tools/*.c)
TOOLS_BIN  := $(TOOLS_SRC:tests/tools/%.c=$(BUILD)/tools/%)

.PHONY: image tools
image:
	@bash deploy/image-build $(IMAGE)

tools: $(TOOLS_BIN)
unit: $(TOOLS_BIN)

$(BUILD)/tools/%: tests/tools/%.c $(BUILD)/libvbench.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# ---- fuzzing (issue 6): libFuzzer over every decoder of untrusted bytes ---------------------------------------
# One target per decoder in tests/fuzz/fuzz_NAME.c, seeds in tests/fuzz/corpus/NAME/ (kept in the repository).
# The targets and every object they link are built by clang with libFuzzer's coverage, AddressSanitizer and
# UndefinedBehaviorSanitizer (any UB aborts), in a build tree of their own. `make fuzz` runs each target for
# FUZZ_SECONDS and prints a table; new inputs go to $(FUZZ_BUILD)/corpus/NAME/, crashes to
# $(FUZZ_BUILD)/artifacts/NAME/. `make fuzz-corpus` replays the committed corpus only (what `make test` runs),
# `make fuzz-merge` adds what a run found that the committed corpus does not reach.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_NAMES   := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=%)
FUZZ_SAN     := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# What the targets link: the decoding modules (not the engines: clang 14 has no _Float16 for pgvector's halfvec)
# and the results store (store/), which fuzz_wire drives.
FUZZ_LIB_OBJ := $(filter $(addprefix $(BUILD)/,util/% metrics/% datasets/% config/% proto/% gen/% orchestrator/perf.o),$(LIB_OBJ))
FUZZ_EXTRA   := $(STORE_OBJ)

.PHONY: fuzz fuzz-deps fuzz-targets fuzz-bins fuzz-corpus fuzz-merge fuzz-seeds
fuzz: fuzz-deps
	@$(MAKE) --no-print-directory fuzz-targets
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_NAMES)

fuzz-deps:
	@bash deploy/install-deps --with-fuzz

fuzz-targets:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=clang CXX=clang++ OPT=-O1 SAN="$(FUZZ_SAN)" fuzz-bins

fuzz-bins: $(FUZZ_NAMES:%=$(BUILD)/fuzz/%)
	@:

fuzz-corpus: fuzz-targets
	@bash tests/fuzz/run.sh --replay $(FUZZ_BUILD) $(FUZZ_NAMES)

# After `make fuzz`: keeps in tests/fuzz/corpus/ the new inputs that reach code the corpus did not (-merge=1).
fuzz-merge: fuzz-targets
	@bash tests/fuzz/run.sh --merge $(FUZZ_BUILD) $(FUZZ_NAMES)

# Regenerates the binary seeds (encoded messages, vector files, HDF5 descriptions) in tests/fuzz/corpus/.
fuzz-seeds:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=clang CXX=clang++ OPT=-O1 SAN="$(FUZZ_SAN)" \
	  $(FUZZ_BUILD)/fuzz-tools/gen_corpus
	$(FUZZ_BUILD)/fuzz-tools/gen_corpus tests/fuzz/corpus

$(BUILD)/fuzz-tools/gen_corpus: tests/fuzz/gen_corpus.c $(BUILD)/libvbench-fuzz.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libvbench-fuzz.a: $(FUZZ_LIB_OBJ)
	ar rcs $@ $^

# The corpus replay of `make test` (tests/e2e/79-fuzz-corpus.t): each target linked with tests/fuzz/replay.c by the
# ordinary compiler, built with the unit tests, so the replay needs no clang build (make fuzz keeps that one).
FUZZ_REPLAY_BIN := $(FUZZ_NAMES:%=$(BUILD)/fuzz-replay/%)
unit: $(FUZZ_REPLAY_BIN)

$(BUILD)/fuzz-replay/%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(wildcard tests/fuzz/*.h) $(FUZZ_EXTRA) $(BUILD)/libvbench.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< tests/fuzz/replay.c $(FUZZ_EXTRA) $(BUILD)/libvbench.a $(LDLIBS)

$(BUILD)/fuzz/%: tests/fuzz/fuzz_%.c $(wildcard tests/fuzz/*.h) $(FUZZ_EXTRA) $(BUILD)/libvbench-fuzz.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fsanitize=fuzzer $(LDFLAGS) -o $@ $< $(FUZZ_EXTRA) $(BUILD)/libvbench-fuzz.a $(LDLIBS)
