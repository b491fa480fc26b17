# innet — make demo runs the main experiment, make test runs the tests; both set up first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEBIAN_PACKAGES := iproute2 iputils-ping ethtool cpp gcc libc6-dev mininet shellcheck ruby
SWEEP_ARGS ?= --memory 1MB..8GB --update-size 1GB --bandwidth 10Gbps
SCENARIO ?= scenarios/nine-cities.yaml
DEMO_OUT ?= results/demo
PYTEST_ARGS ?=
TORCHFT := build/torchft
TORCHFT_STAMP := $(TORCHFT)/.installed
TORCHFT_DEPS := opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \
                opentelemetry-exporter-otlp-proto-http==1.45.2

# p4c's BMv2 back end: P4C=... if given, else p4c-bm2-ss on PATH, else in P4_TOOL_DIRS (where
# source builds install; topo/bmv2.py looks in the same places: EXTRA_TOOL_DIRS)
P4_TOOL_DIRS := /usr/local/bin /opt/p4/bin
P4C      ?= $(firstword $(shell command -v p4c-bm2-ss 2>/dev/null) \
              $(foreach d,$(P4_TOOL_DIRS),$(shell test -x $(d)/p4c-bm2-ss && echo $(d)/p4c-bm2-ss)))
P4_BUILD := build/p4
P4_SLOTS ?= 1024
P4_GET   := get it with the VM (vagrant up, README) or the p4lang packages (p4lang-p4c), or name it: make p4 P4C=PATH

.PHONY: setup system-packages torchft demo test test-p4switch p4switch-alone test-bmv2 diff-bmv2 bench fuzz lint p4 clean

setup: system-packages $(STAMP) $(TORCHFT_STAMP)

# Debian packages the emulation needs (namespaces, ping, offload control, the C preprocessor).
# Installed only when missing; without root they are reported, not installed.
system-packages:
	@missing=""; for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" -ne 0 ]; then echo "missing Debian packages:$$missing (run make setup as root)"; exit 0; fi; \
	echo "installing Debian packages:$$missing"; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing

# innet and p4switch (a project of its own in p4switch/, which innet depends on), both editable
$(STAMP): pyproject.toml p4switch/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e './p4switch[test]' -e '.[dev]'
	touch $(STAMP)

# torchft (examples/torchft_diloco.py) apart from innet's environment: its OpenTelemetry needs a
# protobuf innet's P4Runtime cannot share, so it goes to build/torchft, on the example's path only
torchft: $(TORCHFT_STAMP)
$(TORCHFT_STAMP): $(STAMP)
	rm -rf $(TORCHFT)
	$(BIN)/python -m pip install -q --no-deps --target $(TORCHFT) torchft==0.2.0
	$(BIN)/python -m pip install -q --no-warn-conflicts --target $(TORCHFT) $(TORCHFT_DEPS)
	touch $(TORCHFT_STAMP)

# The planner's memory sweep, then (as root) the default scenario through the emulated WAN:
# nine cities on p4switch, every schedule trained at every memory point, a comparison table.
# The scenario is checked first (innet run --check: one line and exit 2 when it is missing or
# broken), so a bad SCENARIO writes nothing; every command makes the folders it writes into.
# The machine check only warns (--calibration warn): on a busy machine the demo says what the
# check found and plays anyway, and each round that does not measure the network is flagged.
demo: setup
	@$(BIN)/innet run $(SCENARIO) --check > /dev/null
	$(BIN)/innet plan sweep $(SWEEP_ARGS) --plot $(DEMO_OUT)/sweep.png
	@if [ "$$(id -u)" -eq 0 ]; then \
	  $(BIN)/innet run $(SCENARIO) --out $(DEMO_OUT)/run-$$(date +%Y%m%d-%H%M%S) --calibration warn; \
	else echo "the emulated run (innet run) needs root: sudo make demo"; exit 1; fi

# innet's tests, then p4switch's own (its project's tests, run from its folder)
test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-p4switch

test-p4switch: setup
	cd p4switch && ../$(BIN)/python -m pytest $(PYTEST_ARGS)

# p4switch with none of innet: a fresh environment (build/p4switch-alone) where only
# ./p4switch is installed, as a user would (pip install ./p4switch); innet must not be importable
# there, a program must compile and forward in process, and p4switch's own tests must pass.
ALONE := build/p4switch-alone
p4switch-alone:
	rm -rf $(ALONE)
	$(PYTHON) -m venv $(ALONE)
	$(ALONE)/bin/python -m pip install -q --upgrade pip
	$(ALONE)/bin/python -m pip install -q './p4switch[test]'
	@if $(ALONE)/bin/python -I -c "import innet" 2>/dev/null; then \
	  echo "p4switch-alone: innet is importable beside p4switch alone"; exit 1; fi
	$(ALONE)/bin/p4switch --p4 p4switch/src/p4switch/examples/l2.p4 --check
	$(ALONE)/bin/python -I -c "import p4switch; s = p4switch.InProcessSwitch(p4switch.compile_file(p4switch.EXAMPLES / 'l2.p4')); print('p4switch alone:', s.backend, 'back end;', s.process(1, bytes(64)))"
	cd p4switch && ../$(ALONE)/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

# Every test marked bmv2, where simple_switch_grpc and p4c-bm2-ss are installed (python -m
# topo.bmv2 says which is missing, and how to get it, and fails); no test collected is a failure.
test-bmv2: setup
	@$(BIN)/python -m topo.bmv2 || exit 1
	@$(BIN)/python -m pytest -m bmv2 tests/bmv2; status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test-bmv2: no bmv2 test was collected"; fi; \
	exit $$status

# p4switch against BMv2 frame by frame on a family of generated innet.p4 cases (docs/p4diff.md,
# "Generated families"): DIFF_CASES cases of seed DIFF_SEED, a few minutes at the default;
# DIFF_CASES=200 DIFF_SEED=7 for a long one. The case files stay in results/p4diff/seed<S>/,
# each replayable with python -m p4diff. Fails on a difference, without root, or where BMv2 or
# p4c is missing (python -m topo.bmv2 says which, and how to get it).
DIFF_CASES ?= 8
DIFF_SEED ?= 1
diff-bmv2: setup
	@if [ "$$(id -u)" -ne 0 ]; then \
	  echo "make diff-bmv2 needs root (network namespaces, raw sockets): sudo make diff-bmv2"; exit 1; fi
	@$(BIN)/python -m topo.bmv2 || exit 1
	$(BIN)/python -m p4diff --generate $(DIFF_CASES) --seed $(DIFF_SEED) --targets p4switch,bmv2 \
	  --out results/p4diff/seed$(DIFF_SEED)

bench: setup
	$(BIN)/python bench/planner.py
	$(BIN)/python p4switch/bench/pipeline.py
	$(BIN)/python bench/pipeline.py
	mkdir -p results/bench && $(BIN)/python bench/timing.py --json \
	  > results/bench/timing-$$(date +%Y%m%d-%H%M%S).json
	@if [ "$$(id -u)" -eq 0 ]; then \
	  mkdir -p results/bench && $(BIN)/python bench/forwarding.py --json \
	    > results/bench/forwarding-$$(date +%Y%m%d-%H%M%S).json; \
	  $(BIN)/python bench/aggregation.py; \
	  $(BIN)/python bench/busy.py --out results/bench/busy-$$(date +%Y%m%d-%H%M%S); \
	else echo "bench/forwarding.py, aggregation.py and busy.py skipped: they need root"; fi

# The fuzzers (docs/scapy.md) with twenty times the examples the tests run, new ones each run:
# innet.p4's parser and accounting against random and crafted frames and the scapy layer against
# the worker codec; then p4switch's: its P4Runtime write path against random batches, its
# front end against mutated programs (3,000 a run: each compiles or is refused at a line) and
# its compiler and both back ends against generated programs (500 a run, each sent a frame).
FUZZ_TESTS := tests/unit/dataplane/test_fuzz_frames.py tests/unit/test_scapy_layer.py
P4SWITCH_FUZZ_TESTS := tests/p4rt/test_write_fuzz.py tests/test_frontend_fuzz.py tests/test_program_fuzz.py
fuzz: setup
	INNET_FUZZ=long $(BIN)/python -m pytest -q --durations=0 $(FUZZ_TESTS)
	cd p4switch && P4SWITCH_FUZZ=long ../$(BIN)/python -m pytest -q --durations=0 $(P4SWITCH_FUZZ_TESTS)

# Compile p4src/ with p4c for BMv2 (JSON and P4Info in build/p4/) and check that p4c's P4Info
# and p4switch's agree on every table, action, register and counter (names and widths).
# p4c gets its own ../share/p4c/p4include where P4C_16_INCLUDE_PATH is unset (topo/bmv2.py does
# the same): a relocatable build may leave an empty p4include beside the binary, looked at first.
p4: setup
	@if [ -z "$(strip $(P4C))" ]; then \
	  echo "make p4: p4c-bm2-ss (p4c) is not installed here (looked on PATH and in $(P4_TOOL_DIRS)); $(P4_GET)"; exit 1; \
	elif ! command -v "$(P4C)" >/dev/null 2>&1; then \
	  echo "make p4: P4C=$(P4C) is not a command here; $(P4_GET)"; exit 1; fi
	mkdir -p $(P4_BUILD)
	inc="$(dir $(P4C))../share/p4c/p4include"; \
	if [ -z "$${P4C_16_INCLUDE_PATH:-}" ] && [ -f "$$inc/core.p4" ]; then \
	  export P4C_16_INCLUDE_PATH="$$inc"; fi; \
	$(P4C) --arch v1model --std p4-16 -D SLOTS=$(P4_SLOTS) -o $(P4_BUILD)/innet.json \
	  --p4runtime-files $(P4_BUILD)/innet.p4info.txtpb p4src/innet.p4
	$(BIN)/p4switch --p4 p4src/innet.p4 -D SLOTS=$(P4_SLOTS) --check \
	  --p4info-out $(P4_BUILD)/innet.p4switch.p4info.txtpb
	$(BIN)/python -m p4switch.p4info_diff $(P4_BUILD)/innet.p4info.txtpb \
	  $(P4_BUILD)/innet.p4switch.p4info.txtpb

# ruff (style, imports, complexity at most 15) and mypy, strict on innet's packages
# (pyproject.toml) and on p4switch (p4switch/pyproject.toml)
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	cd p4switch && ../$(BIN)/mypy

clean:
	rm -rf $(VENV) results build *.egg-info .pytest_cache .ruff_cache
