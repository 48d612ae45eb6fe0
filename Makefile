# cloudtpu.pod: `make help` lists every target.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV ?= .venv
PYTHON ?= python3
BIN := $(CURDIR)/$(VENV)/bin
export PATH := $(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_FORCE_COLOR ?= false
export PY_COLORS ?= 0
export ANSIBLE_NOCOLOR ?= true

# The newest toolchain (make test-next): the newest ansible from requirements-next.txt in .venv-next,
# on Python 3.12 or newer (ansible-core 2.20+ does not run on 3.11). NEXT_PYTHON defaults to the
# newest such Python pyenv has; set it to use another.
NEXT_VENV ?= .venv-next
NEXT_BIN := $(CURDIR)/$(NEXT_VENV)/bin
NEXT_PYTHON ?= $(shell v=$$(pyenv versions --bare 2>/dev/null | grep -E '^3\.(1[2-9]|[2-9][0-9])\.[0-9]+$$' | sort -V | tail -n 1); \
  [ -n "$$v" ] && echo "$$(pyenv root)/versions/$$v/bin/python$${v%.*}")
# What test-next runs against the emulator: the inventory settings and the gcp inventory, a
# provision and teardown, and the collection installed and reused (the inventory plugin, status,
# module_defaults, every playbook by name).
NEXT_INTEGRATION ?= tests/integration/test_inventory_config.py \
  "tests/integration/test_teardown_inputs.py::test_confirmation_words_of_the_bool_filter_delete[ON]" \
  tests/integration/test_collection_reuse.py

# The unit tests test-next runs: all but those of the development tools (tests/unit/tools: the
# stage runner, the CPU report, the benchmarks' reports), which import no part of Ansible.
NEXT_UNIT ?= tests/unit --ignore=tests/unit/tools

# Molecule scenarios run by `make molecule`, in this order.
SCENARIOS ?= default remote_shell nfs framework pod

.PHONY: help check setup setup-next pull-lock docker host-tools image lint docs unit integration journey sanity molecule test test-next next-venv test-next-lint test-next-sanity test-next-pytest clean bench bench-inventory bench-scale bench-payload-cache bench-rulebook bench-pull bench-client bench-forked-cli emulator-clean demo demo-ssh demo-down test-torch-xla

help: ## List every target with one line each
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | \
	  awk 'BEGIN {FS = ":.*## "}; {printf "  %-18s %s\n", $$1, $$2}'

# Installs tools/payload_cache.py into a venv's site-packages with the .pth line that loads it:
# localhost tasks (the TPU API modules) reuse the compiled code of Ansible's module payloads, and
# every Ansible command the parsed routing table of ansible-core's runtime.yml.
install-payload-cache = site=$$($(1) -c 'import sysconfig; print(sysconfig.get_path("purelib"))') && \
  install -m 0644 tools/payload_cache.py "$$site/cloudtpu_payload_cache.py" && \
  echo "import cloudtpu_payload_cache" > "$$site/cloudtpu-payload-cache.pth"

# Byte-compiles a venv's packages once, at install (pip runs with --no-compile). Python never writes
# them later where PYTHONDONTWRITEBYTECODE is set (as on CI machines): without this every process
# compiled Ansible again, about 3 CPU-seconds each. The collections of the ansible package are left
# out: Ansible's collection loader compiles a collection's code from source every time, whatever
# is on disk, so their 13,000 files would be compiled for nothing.
compile-venv = site=$$($(1) -c 'import sysconfig; print(sysconfig.get_path("purelib"))') && \
  $(1) -m compileall -q -j 0 -x '/ansible_collections/' "$$site" >/dev/null

$(VENV)/.stamp: requirements.txt tools/payload_cache.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-compile -r requirements.txt
	$(call compile-venv,$(BIN)/python)
	$(call install-payload-cache,$(BIN)/python)
	touch $@

setup: $(VENV)/.stamp ## Create .venv with the pinned toolchain (ansible, molecule, linters)

$(NEXT_VENV)/.stamp: requirements-next.txt tools/payload_cache.py
	@if [ -z "$(NEXT_PYTHON)" ]; then \
	  echo "setup-next: no Python 3.12 or newer found with pyenv; set NEXT_PYTHON=/path/to/python3.12" >&2; \
	  exit 1; \
	fi
	$(NEXT_PYTHON) -m venv $(NEXT_VENV)
	$(NEXT_BIN)/pip install --quiet --upgrade pip
	$(NEXT_BIN)/pip install --quiet --no-compile -r requirements-next.txt
	$(call compile-venv,$(NEXT_BIN)/python)
	$(call install-payload-cache,$(NEXT_BIN)/python)
	touch $@

setup-next: $(NEXT_VENV)/.stamp ## Create .venv-next: the newest ansible on Python 3.12+ (NEXT_PYTHON, found with pyenv)

docker: ## Make sure a Docker daemon answers (installs docker.io and starts dockerd if needed)
	tools/ensure-docker.sh

host-tools: ## Install what the playbooks use on the controller when it is there (rsync), as root on Debian/Ubuntu
	tools/ensure-host-tools.sh

image: docker ## Build the Debian bookworm worker image (skipped when its recipe hash exists)
	tools/image/build.sh

lint: setup ## yamllint, ansible-lint (production profile) and ruff
	yamllint --strict .
	ansible-lint
	ruff check .
	ruff format --check .
	antsibull-changelog lint
	antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml

# The collection's docs site (antsibull-docs): plugin, module and role pages from the installed
# collection, plus docs/docsite/. Built into .cache/docs; any warning fails the build.
docs: setup ## The collection docs site in .cache/docs/build/html (antsibull-docs, Sphinx; warnings fail)
	docs/build.sh

unit: setup ## Unit tests (pytest, no Docker)
	pytest -q --durations=15 tests/unit

# Test files run side by side (pytest-xdist), each file whole in one worker (its module fixtures,
# a pod say, are made once); every worker has a fact cache of its own (tests/integration/conftest.py).
# A short base folder for the tests' temporary files: an SSH control socket under it must fit
# in the 107 bytes a Unix socket path may have (xdist adds popen-gwN/ to every path).
INTEGRATION_JOBS ?= 2
INTEGRATION_TMP ?= /tmp/cloudtpu-integration

# The files in order of priority, the rest after them: within make test's time budget the
# first ones always run (day two, the inventory, the API against Google's client), the bad-input
# tables last (their checks have unit tests of their own too). --no-loadscope-reorder keeps this
# order: pytest-xdist would otherwise start the files with the most tests first.
INTEGRATION_FIRST := new_workers_user recover_journal recover_queued lifecycle_day_two \
  run_playbook inventory_cli inventory_config inventory_formats official_client_service \
  official_client_nodes status_api expire teardown_inputs worker_match lifecycle_playbooks \
  login_user_day_two login_contract_playbook ssh_config ssh_config_refresh progress_lines \
  fault_table fault_midrun babysit_resume
INTEGRATION_FILES = $(patsubst %,tests/integration/test_%.py,$(INTEGRATION_FIRST)) \
  $(filter-out $(patsubst %,tests/integration/test_%.py,$(INTEGRATION_FIRST)) \
    tests/integration/test_bad_input_%.py,$(sort $(wildcard tests/integration/test_*.py))) \
  $(sort $(wildcard tests/integration/test_bad_input_*.py))

integration: setup image host-tools ## Integration tests (emulator, ansible-inventory and ansible-playbook runs)
	pytest -q -n $(INTEGRATION_JOBS) --dist loadfile --no-loadscope-reorder --basetemp=$(INTEGRATION_TMP) --durations=15 $(INTEGRATION_FILES)

# The README's journeys (Day two, then queued resources, multislice, babysit), verbatim and in
# order, each on a demo pod of its own (its own folder, port, container labels, fact cache and
# state folder, so a demo of yours keeps running); each step's output is in .cache/journey/. One
# journey at a time: as a user would, they type their commands in the repository folder and share
# what is made there (./myproject). The block extractor's tests first.
journey: setup image host-tools ## The README's journeys run as written on demo pods (Day two, queued resources, multislice, babysit)
	pytest -q -s --durations=15 tests/journey/test_readme_blocks.py tests/journey/test_journey*.py

# Pull mode's hashed lock (what every worker installs, tpu_provision_bootstrap=pull): compiled
# from the pins of playbooks/templates/pull_requirements.in for every platform and Python 3.11+,
# with the sha256 of every file the package index serves for each pinned version. uv's own
# configuration and the machine's pip mirrors are not read (--no-config): the hashes are those of
# the index's own files, which the workers download. Unchanged pins keep their dependencies' pins;
# PULL_LOCK_ARGS=--upgrade moves those to the newest too.
PULL_LOCK := playbooks/templates/pull_requirements
PULL_LOCK_ARGS ?=
pull-lock: setup ## Regenerate pull mode's hashed lock (playbooks/templates/pull_requirements.txt) from its .in
	uv pip compile --quiet --no-config --universal --generate-hashes --python-version 3.11 \
	  --custom-compile-command "make pull-lock" $(PULL_LOCK_ARGS) $(PULL_LOCK).in -o $(PULL_LOCK).txt

sanity: setup ## ansible-test sanity on the collection as built (plugins, roles and their scripts), shellcheck
	tools/sanity.sh

# What every scenario shares (driver, provisioner settings, verifier) is in .config/molecule/config.yml,
# named here so that a copy without Git's folder (where molecule looks for it) finds it too.
MOLECULE := molecule --base-config $(CURDIR)/.config/molecule/config.yml

molecule: setup image ## Molecule scenarios in Docker: $(SCENARIOS)
	@set -e; for s in $(SCENARIOS); do \
	  echo "=== molecule test -s $$s"; \
	  $(MOLECULE) test -s $$s; \
	done

# One scenario: `make molecule-nfs` (make test runs each as a stage of its own).
molecule-%: setup image
	@echo "=== molecule test -s $*"
	$(MOLECULE) test -s $*

# The full suite as stages (tools/stages.py): each stage is one of the targets above, up to
# STAGE_JOBS (2) run side by side, each stage's output printed whole when it ends, and a table
# of every stage's wall time and the slowest tests at the end (.cache/stages/summary.txt).
# In STAGE_BUDGET minutes from the suite's start (tools/time_budget.py): the checks always run
# whole, the rest as far as the budget goes, and the table says what was left out; 0 runs all.
STAGE_JOBS ?= 2
STAGE_BUDGET ?= 85
test: ## The test suite (what CI runs): every stage below, side by side, in STAGE_BUDGET minutes
	$(PYTHON) -m tools.stages --jobs $(STAGE_JOBS) --budget $(STAGE_BUDGET)

check: lint unit ## The quick loop: lint and unit tests (a few minutes, no Docker)

# The same collection on the newest ansible-core: lint, sanity, unit tests and the emulator runs
# of NEXT_INTEGRATION, in three parts that make test runs side by side (after next-venv). Each
# part is skipped, saying why, when no Python 3.12 or newer is there.
NEXT_MISSING = [ ! -x "$(NEXT_BIN)/python" ] && [ -z "$(NEXT_PYTHON)" ]
NEXT_SKIPPED = echo "$@: SKIPPED: no Python 3.12 or newer (pyenv has none; set NEXT_PYTHON), which ansible-core 2.20+ needs"

test-next: test-next-lint test-next-sanity test-next-pytest ## lint, sanity, unit and emulator tests on the newest ansible (.venv-next)

next-venv: ## .venv-next when a Python 3.12 or newer is there (else says it is skipped)
	@if $(NEXT_MISSING); then $(NEXT_SKIPPED); else \
	  $(MAKE) --no-print-directory setup-next && $(NEXT_BIN)/ansible --version | sed -n 1p; fi

test-next-lint: next-venv ## ansible-lint on the newest ansible
	@if $(NEXT_MISSING); then $(NEXT_SKIPPED); else PATH=$(NEXT_BIN):$$PATH ansible-lint; fi

test-next-sanity: next-venv ## ansible-test sanity on the newest ansible
	@if $(NEXT_MISSING); then $(NEXT_SKIPPED); else VENV_BIN=$(NEXT_BIN) tools/sanity.sh; fi

test-next-pytest: next-venv ## unit tests and NEXT_INTEGRATION on the newest ansible
	@if $(NEXT_MISSING); then $(NEXT_SKIPPED); else \
	  PATH=$(NEXT_BIN):$$PATH pytest -q $(NEXT_UNIT) && PATH=$(NEXT_BIN):$$PATH pytest -q $(NEXT_INTEGRATION); fi

test-torch-xla: setup image ## torch_xla really installed and imported (downloads about 4.4 GB; not in `test`)
	$(MOLECULE) test -s torch-xla

# Bootstrap benchmark (make bench): worker counts, fresh pods per side and count, re-runs after each.
BENCH_WORKERS ?= 1 2 4 8
BENCH_COLD ?= 1
BENCH_RERUNS ?= 3

bench: setup image ## Bootstrap: the guide's shell script against site.yml on BENCH_WORKERS workers; updates its RESULTS.md
	python bench/bootstrap/run.py --workers $(BENCH_WORKERS) --cold $(BENCH_COLD) \
	  --reruns $(BENCH_RERUNS) --markdown bench/bootstrap/RESULTS.md

bench-inventory: setup ## Benchmark the tpu_vm inventory (1000 nodes, emulator); updates its RESULTS.md
	python bench/inventory/run.py --markdown bench/inventory/RESULTS.md

# Push against pull (make bench-pull): fresh pods of BENCH_PULL_WORKERS workers, python and libtpu roles.
BENCH_PULL_WORKERS ?= 1 2 4

bench-pull: setup image ## Push against pull: site.yml from here against each worker's ansible-pull, wall and controller CPU; updates its RESULTS.md
	python bench/pull/run.py --workers $(BENCH_PULL_WORKERS) --markdown bench/pull/RESULTS.md

bench-scale: setup image ## Controller scale: 8, 64 and 256 hosts on 3 worker containers (forks, ControlPersist, pipelining, mitogen); updates its RESULTS.md
	python bench/scale/run.py --hosts 8 --budget 30
	python bench/scale/run.py --hosts 64 256 --project-only --append --budget 60 --markdown bench/scale/RESULTS.md

bench-payload-cache: setup image ## A task's CPU time on a test worker with the image's payload cache off and on; updates its RESULTS.md
	python bench/payload_cache/run.py --markdown bench/payload_cache/RESULTS.md

bench-rulebook: setup ## An ansible-rulebook watcher of node states against babysit.yml's check (Java 17 needed); updates its RESULTS.md
	python bench/rulebook/run.py --markdown bench/rulebook/RESULTS.md

bench-client: setup ## The collection's TPU API client against google-cloud-tpu: listing 1000 nodes, a module's round trip, dependencies; updates its RESULTS.md
	python bench/client/run.py --markdown bench/client/RESULTS.md

bench-forked-cli: setup ## The tests' ansible-playbook runs as new processes against forked from a started server (tests/forked_cli.py); updates its RESULTS.md
	python bench/forked_cli/run.py --markdown bench/forked_cli/RESULTS.md

demo: ## A local pod (DEMO_TYPE, default v4-32): emulator, provision, site.yml, verify, status
	tools/demo.sh up

demo-ssh: ## Log in to worker 0 of the demo pod
	tools/demo.sh ssh

demo-down: ## Delete the demo pod and stop the emulator
	tools/demo.sh down

emulator-clean: setup ## Remove containers and networks left by the emulator's Docker backend
	PYTHONPATH=. python -m tools.tpu_emulator.docker_backend cleanup

clean: ## Remove caches (keeps .venv and images)
	rm -rf .cache .pytest_cache .ruff_cache
