# Two commands for a newcomer: `make demo` and `make test`. Both set up first;
# set-up is stamped, so a second run is a quick no-op.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
APT_PACKAGES := iverilog yosys pocl-opencl-icd ocl-icd-libopencl1 ccache
STAMP_SYS := $(VENV)/.stamp-system
STAMP_PY := $(VENV)/.stamp-python
# Use every core the machine has for the test suite (2 on the reference machine).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: setup demo test test-py312 test-core test-long test-slow lint docs docs-check bench-replay peers peers-quick clean

setup: $(STAMP_SYS) $(STAMP_PY)

$(STAMP_SYS): Makefile
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    echo "setup: installing system packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  elif command -v apt-get >/dev/null && command -v sudo >/dev/null; then \
	    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "setup: missing system packages:$$missing"; \
	    echo "       install them (Debian/Ubuntu: apt-get install$$missing; conda: see environment.yml)"; \
	    echo "       hardware tests fail under CI=true and skip otherwise until they are present"; \
	  fi; \
	fi
	@mkdir -p $(VENV) && touch $@

$(STAMP_PY): pyproject.toml requirements.lock
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@test -x $(BIN)/uv || $(BIN)/pip install -q uv
	$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -r requirements.lock
	$(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python --no-deps -e .
	@$(BIN)/python -m hrl.replay.native >/dev/null || echo "setup: native kernels not built; the jnp tree is used"
	@touch $@

# Regenerate the locks after changing dependencies in pyproject.toml.
lock:
	$(BIN)/uv pip compile -q pyproject.toml --extra hw --extra bench --extra dev --extra docs \
	  --extra wandb --extra distributed --python-version 3.11 -o requirements.lock
	$(BIN)/uv pip compile -q pyproject.toml --extra hw --extra bench --extra dev --extra docs \
	  --extra wandb --extra distributed --python-version 3.12 -o requirements-py312.lock

# The same code on Python 3.12, where the dependencies resolve to jax 0.11 (gymnax caps jax below
# 0.12; Python 3.11 stops at 0.10), the jax of the lent GPU machines: the tests of the programs
# XLA compiles differently between the two (Threefry lowering, sum tree, sharded replay,
# data-parallel loop, buffer, Pallas kernels, runtime). Skips, saying so, where no Python 3.12
# can be found or installed by uv.
VENV312 := .venv-py312
PY312_TESTS := tests/test_threefry_cpu.py tests/replay/test_sumtree.py tests/replay/test_sharded_replay.py \
  tests/runtime/executors/test_data_parallel.py tests/replay/test_buffer.py \
  tests/replay/test_pallas_sumtree.py tests/replay/test_nstep.py tests/runtime/test_pending.py \
  tests/runtime/test_iteration.py tests/runtime/executors/test_fused.py \
  tests/runtime/executors/test_pipelined.py tests/runtime/test_run.py tests/runtime/test_resume.py \
  tests/runtime/test_metrics.py tests/runtime/test_run_summary.py \
  tests/runtime/test_runtime_package.py tests/runtime/test_placement.py \
  tests/runtime/test_build_run.py tests/config/test_executor_settings.py
test-py312: setup
	@set -e; py=""; \
	for c in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12; do \
	  if "$$c" -c "" >/dev/null 2>&1; then py=$$c; break; fi; done; \
	if [ -z "$$py" ]; then \
	  $(BIN)/uv python install -q 3.12 >/dev/null 2>&1 || true; py=$$($(BIN)/uv python find 3.12 2>/dev/null || true); fi; \
	if [ -z "$$py" ]; then echo "test-py312: skipped: no Python 3.12 here and uv could not install one"; exit 0; fi; \
	test -x $(VENV312)/bin/python || $(BIN)/uv venv -q --python "$$py" $(VENV312); \
	$(BIN)/uv pip install -q --compile-bytecode --python $(VENV312)/bin/python -r requirements-py312.lock; \
	$(BIN)/uv pip install -q --python $(VENV312)/bin/python --no-deps -e .; \
	$(VENV312)/bin/python -c 'import jax, sys; print("test-py312: Python", sys.version.split()[0], "jax", jax.__version__)'; \
	CI=$${CI:-} $(VENV312)/bin/python -m pytest -n $(JOBS) -m "not slow" $(PY312_TESTS)

# hrl with its core dependencies alone (no hw, distributed, docs, bench or dev extras), pinned
# by the lock: the quick start of docs/guides/python.md. Refuses a venv holding an extra, then
# runs examples/jax_loop.py and a short gymnax `hrl train` (a couple of minutes on 2 cores).
VENVCORE := .venv-core
CORE_RUN := $(shell mktemp -u /tmp/hrl-core-XXXXXX)
test-core: setup
	test -x $(VENVCORE)/bin/python || $(BIN)/uv venv -q --python $(BIN)/python $(VENVCORE)
	$(BIN)/uv pip install -q --compile-bytecode --python $(VENVCORE)/bin/python -c requirements.lock -e .
	$(VENVCORE)/bin/python -c 'import importlib.util as u, sys; x = [m for m in ("ray", "cocotb", "pyopencl", "mkdocs", "pytest", "flashbax") if u.find_spec(m)]; sys.exit(f"test-core: extras installed: {x}" if x else 0)'
	$(VENVCORE)/bin/python examples/jax_loop.py --steps 300 --seeds 2
	$(VENVCORE)/bin/hrl train experiments/configs/dqn_cartpole.yaml --set train.total_env_steps=2048 \
	  --set train.chunk_env_steps=1024 --set train.learning_starts=256 --run-dir $(CORE_RUN) --no-progress
	$(VENVCORE)/bin/python -c 'import hrl; p = hrl.load("$(CORE_RUN)"); print("test-core: eval", hrl.evaluate(p)["eval_return"])'
	rm -rf $(CORE_RUN)

demo: setup
	$(BIN)/python -m hrl.demo

# worksteal: a worker that runs out of tests takes queued ones from the other, so the suite
# does not end on one worker finishing a backlog of long tests alone.
test: setup
	CI=$${CI:-} $(BIN)/python -m pytest -n $(JOBS) --dist worksteal -m "not slow and not long" tests

# The long tier: end-to-end runs whose contract a quicker test in `make test` also checks
# (see the `long` marker in pyproject.toml). CI runs it after `make test`.
test-long: setup
	CI=$${CI:-} $(BIN)/python -m pytest -n $(JOBS) -m "long and not slow" tests

test-slow: setup
	$(BIN)/python -m pytest -n $(JOBS) -m slow tests

# The documentation site (mkdocs.yml, docs/) into site/, warnings as errors. The CLI and config
# references and the results pages are generated at build time (docs/hooks.py).
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --quiet

# The built site and a mapping report opened in headless Chromium (Debian's package, installed
# here when missing): fails on console errors and broken links; screenshots into
# experiments/results/docs/. Not part of `make test`.
docs-check: docs
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get install -y -qq chromium >/dev/null; \
	  else sudo apt-get install -y -qq chromium >/dev/null; fi; }
	$(BIN)/python experiments/docs/check_site.py --site site --out experiments/results/docs

lint: setup
	$(BIN)/ruff check hrl tests experiments sim

bench-replay: setup
	$(BIN)/python experiments/bench/bench_replay.py

# hrl beside its peers (SB3, Tianshou, RLlib, a jitted JAX DQN with flashbax), interleaved in
# one session: experiments/results/peers/peers.{csv,md,png} and the README's peers rows. Each
# Python peer gets its own venv under .peers/ from its pinned requirements file (stamped, so a
# second run only measures); `make test` never builds them. torch==2.13.0 must resolve to a CPU
# build (a local wheel here; elsewhere PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu).
PEER_NAMES := sb3 tianshou rllib
PEER_STAMPS := $(foreach p,$(PEER_NAMES),.peers/$(p)/.stamp)
PEERS_ARGS ?=

.peers/%/.stamp: experiments/peers/requirements-%.txt
	@test -x .peers/$*/bin/python || $(PY) -m venv .peers/$*
	.peers/$*/bin/python -m pip install -q -r $<
	@touch $@

peers: setup $(PEER_STAMPS)
	$(BIN)/python experiments/peers/run_peers.py --readme $(PEERS_ARGS)

peers-quick: setup $(PEER_STAMPS)
	$(BIN)/python experiments/peers/run_peers.py --quick

clean:
	rm -rf $(VENV) build sim_build .pytest_cache site
