# innet — make demo runs the main experiment, make test runs the tests; both set up first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEBIAN_PACKAGES := iproute2 iputils-ping ethtool cpp mininet
SWEEP_ARGS ?= --memory 1MB..8GB --update-size 1GB --bandwidth 10Gbps
SCENARIO ?= scenarios/nine-cities.yaml

.PHONY: setup system-packages demo test bench lint clean

setup: system-packages $(STAMP)

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

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The planner's memory sweep, then (as root) the default scenario through the emulated WAN:
# nine cities on p4switch, every schedule trained at every memory point, a comparison table.
demo: setup
	$(BIN)/innet plan sweep $(SWEEP_ARGS) --plot results/demo/sweep.png
	@if [ "$$(id -u)" -eq 0 ]; then \
	  $(BIN)/innet run $(SCENARIO) --out results/demo/run-$$(date +%Y%m%d-%H%M%S); \
	else echo "the emulated run (innet run) needs root: sudo make demo"; exit 1; fi

test: setup
	$(BIN)/python -m pytest

bench: setup
	$(BIN)/python bench/planner.py
	$(BIN)/python bench/pipeline.py
	@if [ "$$(id -u)" -eq 0 ]; then \
	  $(BIN)/python bench/forwarding.py --size 132 \
	    --processor bench.p4_processors:l2 --processor bench.p4_processors:agg32; \
	  $(BIN)/python bench/aggregation.py; \
	else echo "bench/forwarding.py and bench/aggregation.py skipped: they need root"; fi

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) results build *.egg-info .pytest_cache .ruff_cache
