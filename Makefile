# stallscope: `make demo` runs the main job on bundled captures, `make test` runs the tests.
# Both do all set-up first (apt peers, pip install -e with the Rust core in release mode).
PYTEST ?= pytest
STAMP := .setup.stamp

.PHONY: rescore setup native demo test test-slow test-fast bench fixtures fuzz clean

$(STAMP): pyproject.toml scripts/install-deps.sh $(shell find native/src -name '*.rs' 2>/dev/null) native/Cargo.toml
	bash scripts/install-deps.sh
	@touch $(STAMP)

setup: $(STAMP)

# Fast rebuild of the Rust core alone during development (release profile).
native:
	cargo build --release --quiet --manifest-path native/Cargo.toml --features python
	# Copy then rename: overwriting the .so in place crashes every process that has it loaded.
	cp native/target/release/lib_native.so stallscope/.native.so.tmp
	mv -f stallscope/.native.so.tmp stallscope/_native$$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')

DEMO_CAPTURES := $(addprefix fixtures/,nagle_4k_jumbo.pcap nagle_4k_jumbo_nodelay.pcap atm_small_buffer.pcap atm_epd.pcap jumbo_slots.pcap slow_reader.pcap)

# The main job on bundled captures (recorded by `make fixtures` between network namespaces):
# why each connection was slow (stallscope analyze), the connection table, one paper
# reproduction from the reference simulator, then the HTML report of the captures (its path printed).
demo: setup
	stallscope analyze $(DEMO_CAPTURES)
	stallscope flows $(DEMO_CAPTURES)
	stallscope reproduce moldeklev-appendix-a
	@mkdir -p build
	@stallscope report $(DEMO_CAPTURES) -o build/demo-report.html >/dev/null
	@echo "HTML report of the bundled captures: $(CURDIR)/build/demo-report.html"

# Run pytest as an executable (not `python -m pytest`) so the repo root is not on sys.path.
# Two workers (pytest-xdist) for everything but the live captures, which run alone afterwards:
# their user-space link emulator must not share its core with the analyzer's tests. Tests marked
# `slow` run with `make test-slow` (the rest of the simulator's golden traces, the full scoring corpus,
# every byte cut of the large captures, the receiver-side twins' tshark comparisons, every --help and
# README example, Mogul's tables 6 and 7 at full size: ~22 min here), except the papers' tables
# (`paper`), which `make test` keeps: the reproductions' verdicts are checked on every run.
test: setup
	cargo test --quiet --manifest-path native/Cargo.toml
	$(PYTEST) -q -n 2 -m "(not slow or paper) and not root"
	$(PYTEST) -q -m "root and not slow"

test-slow: setup
	$(PYTEST) -q -n 2 -m "slow and not root"
	$(PYTEST) -q -m "slow and root"

test-fast: setup
	$(PYTEST) -q -n 2 -m "not slow and not root"

bench: setup
	python3 bench/run.py

# Regenerate fixtures/ from the capture scenario library (needs root and network namespaces).
# name:seconds, short enough that each capture stays well under 1 MB at snaplen 128.
FIXTURE_RUNS := nagle_4k_jumbo:2 nagle_4k_jumbo_nodelay:0.5 nagle_128k_buffer:0.5 nagle_4k_jumbo_per_request:0.5 \
	atm_clean:1 \
	atm_small_buffer:2 atm_ppd:1.5 atm_epd:1.5 jumbo_slots:1.5 pmtu_blackhole:1 pmtu_blackhole_probing:4 \
	pmtu_icmp:0.2 mss_mismatch:0.25 slow_reader:2 small_sndbuf_long_rtt:2 burst_loss:2 burst_loss_sack:1 \
	idle_app:2 clean_bulk:0.3 ack_loss:3
fixtures: setup
	@for run in $(FIXTURE_RUNS); do \
		echo "fixture $${run%%:*}"; \
		stallscope capture scenario $${run%%:*} --out fixtures --seconds $${run##*:} --format json >/dev/null || exit 1; \
	done

# Every capture scenario run again, at its own duration, into a new directory, and the analyzer
# scored on those captures against their truth: captures it has never seen (root; a few minutes).
rescore: setup
	@d=$$(mktemp -d /tmp/stallscope-rescore-XXXXXX); echo "captures in $$d"; \
	for s in $$(stallscope capture list $(if $(VARIANTS),--variants) -f json | python3 -c 'import json, sys; print(" ".join(r["name"] for r in json.load(sys.stdin)["rows"]))'); do \
		stallscope capture scenario $$s --out $$d -q --format json >/dev/null || exit 1; \
	done; \
	stallscope score --corpus $$d -j 2 && \
	python3 scripts/middle_taps.py $$d $$d/middle --after-loss >/dev/null && stallscope score --corpus $$d/middle -j 2

# Coverage-guided fuzzing of the capture readers (needs nightly and cargo-fuzz); FUZZ_SECONDS to taste.
FUZZ_SECONDS ?= 300
fuzz:
	bash native/fuzz/seed_corpus.sh
	cd native && cargo +nightly fuzz run fuzz_reader -- -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=1024

clean:
	rm -rf native/target build *.egg-info $(STAMP) stallscope/_native*.so
