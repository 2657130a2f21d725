# Talus — the two commands of the README, and a few more.
#   make pipeline [SITE=name]   run every stage of pipelines/$(SITE).toml into runs/$(SITE)/
#   make test                   build (release) and run the test suite (what CI runs)
#   make bench                  benchmarks (tables of ratios against baselines measured in the same run)
#   make lint                   cargo fmt --check and clippy -D warnings

SITE ?= piton-marcel
CARGO ?= cargo
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
TALUS := $(TARGET_DIR)/release/talus
export CARGO_INCREMENTAL ?= 0

.PHONY: all pipeline test bench lint fmt check-interop

all: test

pipeline:
	$(CARGO) build --release --locked -p talus-cli
	$(TALUS) pipeline pipelines/$(SITE).toml --out runs/$(SITE)

# Release profile, as `make pipeline`: dependencies compile once for both commands, and the
# end-to-end cases (the shipped default site) run in optimised code.
test:
	$(CARGO) test --release --locked --workspace

bench:
	$(CARGO) bench --locked --workspace

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

# Reads Parquet written by Talus with pyarrow, DuckDB and laspy, and its GeoParquet with
# GeoPandas and GDAL (pyogrio); each skipped with a reason when absent.
check-interop:
	$(CARGO) build --release --locked -p talus-cli
	python3 tests/interop.py $(TARGET_DIR)/release/talus
