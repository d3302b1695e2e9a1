# The two commands of the README: `make site` runs the main job, `make test` the tests.
# Both set up what they need first (Python venv, and for tests the control plane binaries).
# `make help` lists every target with its `##` comment.

SHELL := /bin/bash
VENV := .venv
PYTHON ?= python3
BIN := $(CURDIR)/$(VENV)/bin
# The tools folder: INTERFERENCE_TOOLS_BIN when set (CI), else the per-user cache
# the roles also default to (cluster_provider's interference_tools_bin).
export INTERFERENCE_TOOLS_BIN ?= $(HOME)/.cache/interference-orchestrator/bin
TOOLS_BIN := $(INTERFERENCE_TOOLS_BIN)
export PATH := $(TOOLS_BIN):$(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
# The checkout as the collection interference.orchestrator (ansible.cfg's collections_path).
COLLECTION_LINK := collections/ansible_collections/interference/orchestrator
# Where the example inventory's runs write profiles and experiments.
OUTPUT_DIR := $(CURDIR)/interference-output
# Profiles measured by `ansible-playbook interference.orchestrator.profile` are used by later runs.
MEASURED := $(wildcard $(OUTPUT_DIR)/measured_profiles.yml)
SITE_ARGS := -i examples/testbed/hosts.yml -e interference_output_dir=$(OUTPUT_DIR) $(if $(MEASURED),-e @$(MEASURED))

# Every step of `make test` is timed (scripts/phase.sh): a line when it starts and ends,
# a row in $(PHASE_LOG); `make phases` (and .ci/run at its end) prints the table.
PHASE := $(CURDIR)/scripts/phase.sh
export PHASE_LOG ?= $(CURDIR)/.cache/phases.tsv

.PHONY: help setup tools node-components build images site test checks beside-build molecule-beside images-debian unit integration integration-random go-test lint sanity scan molecule docker-engine node-image kind-test bench teardown phases clean

help:  ## List the targets
	@awk -F ':.*## ' '/^[a-z][a-z-]*:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: $(VENV)/.installed $(COLLECTION_LINK)  ## Create .venv with the pinned Python dependencies, link the checkout as the collection

$(COLLECTION_LINK):
	mkdir -p $(dir $@)
	ln -sfn ../../.. $@

# Scripts (benchmarks/*.py) import the engine by its collection path and
# tests.support as the tests do (pyproject's pythonpath), with these import
# roots on PYTHONPATH for the one command that runs them (make bench; by hand:
# PYTHONPATH=collections:. .venv/bin/python benchmarks/NAME.py). Not a .pth
# in the venv, nor exported to every target: on the Python path the checkout
# is a collection Ansible finds on its own, and would hide whether an
# installed tarball works without it.
SCRIPT_PATH := PYTHONPATH=$(CURDIR)/collections:$(CURDIR)

$(VENV)/.installed: requirements.txt constraints.txt
	$(PHASE) setup bash -c '$(PYTHON) -m venv $(VENV) && $(BIN)/pip install --quiet --upgrade pip && \
	  $(BIN)/pip install --quiet -r requirements.txt -c constraints.txt'
	touch $@

tools:  ## Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kwok, kwokctl, helm, kind, gpu-scheduler, registry into $INTERFERENCE_TOOLS_BIN
	$(PHASE) tools scripts/build-tools.sh

site: setup  ## The main job: provision the cluster and place the apps
	scripts/build-tools.sh --for-site
	$(BIN)/ansible-playbook $(SITE_ARGS) site.yml

teardown: setup  ## Delete the cluster site.yml created
	$(BIN)/ansible-playbook $(SITE_ARGS) playbooks/teardown.yml

lint: setup scan  ## ruff, mypy, ansible-lint (production profile), syntax-check, and the manifest scan
	$(PHASE) lint-ruff $(BIN)/ruff check .
	$(PHASE) lint-mypy $(BIN)/mypy plugins tests benchmarks interference_extender scan hack
	$(PHASE) lint-syntax $(BIN)/ansible-playbook --syntax-check site.yml playbooks/*.yml
	$(PHASE) lint-ansible $(BIN)/ansible-lint --profile production

# About 4 minutes the first time (ansible-test's venvs, from PyPI), then less.
sanity: setup  ## Release gates on the built tarball: ansible-test sanity, antsibull-changelog lint, antsibull-docs lint, version_added
	$(PHASE) sanity scripts/sanity.sh

# checkov in its own venv under .cache (its pins clash with ansible's): about
# 50 s to install the first time, then about 8 s per scan.
scan: setup  ## checkov over every manifest the roles render; fails on findings scan/skip-list.yml does not explain
	$(PHASE) scan scripts/scan-manifests.sh

unit: setup  ## pytest tests/unit: engine, filters, extender; no process, no cluster (seconds)
	$(PHASE) unit $(BIN)/pytest -q -rs --durations=10 tests/unit

# The integration tier runs on PYTEST_WORKERS xdist workers, a test module per
# worker at a time, the kind modules that share one cluster on one worker
# (tests/integration/conftest.py). Four on two cores: with three, vmstat showed
# the cores idle 30% of the tier (waits on API servers and kind nodes).
PYTEST_WORKERS ?= 4
INTEGRATION_ARGS := -rfEs -v -n $(PYTEST_WORKERS) --dist loadgroup --durations=30 tests/integration

# Then the `quiet` modules, alone: they measure interference (the probe), and a
# measurement taken beside three busy workers measures the workers. With -s, so the
# figures they measured are in the log whether their assertions pass or not.
integration: setup tools  ## pytest tests/integration (run `make images` first, as `make test` does): roles, scripts, kwok and kind
	$(PHASE) integration $(BIN)/pytest $(INTEGRATION_ARGS) -m "not quiet"
	$(PHASE) integration-quiet $(BIN)/pytest -rfEs -v -s --durations=10 -m quiet tests/integration

# pytest-randomly shuffles the modules (conftest keeps the order in each; seed in the first lines of
# the output; rerun one order with -p randomly -p no:cacheprovider --randomly-seed=N).
integration-random: setup tools  ## The integration tier, its modules in a random order (shows that no module depends on another; the tests in each keep their order)
	$(PHASE) integration-random $(BIN)/pytest -o addopts=-rs $(INTEGRATION_ARGS) -m "not quiet"

# Everything the tests run, built up front: the control plane's Go builds and the
# node image's run side by side (a Go link keeps one core busy, and a cold build
# links some thirty binaries), then the images.
build: setup  ## make tools and the node image's components (in parallel), then make images
	$(PHASE) build-go $(MAKE) --no-print-directory -j2 tools node-components
	$(MAKE) --no-print-directory images

node-components:  ## Build the offline kind node image's components (containerd, runc, kubelet, ...) into ~/.cache/interference-orchestrator/node-image/bin
	$(PHASE) node-components scripts/build-tools.sh --node-image

# Where a Docker engine answers: the kind node image, the workload images and the
# two schedulers' images, each cached by a hash of its inputs (playbooks/images.yml).
# Without an engine the kind tests are skipped, and so is this.
images: setup tools  ## Build every offline image the kind tier runs, once, before the tests (a line per image)
	$(call images_playbook,images)

# The images that need no Go build (the tag needs-go-builds marks the others), for
# `make test` to build beside the Go builds; `make images` after it finds them built.
images-debian: setup
	$(call images_playbook,images-debian,--skip-tags needs-go-builds)

# $(call images_playbook,PHASE[,ARGS]): playbooks/images.yml as phase PHASE, under the
# one images lock, or the line saying why nothing is built where no engine answers.
images_playbook = @mkdir -p .cache; if docker info >/dev/null 2>&1; then \
	  $(PHASE) $(1) flock .cache/images.lock env ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks \
	    $(BIN)/ansible-playbook playbooks/images.yml $(2); \
	else echo "[images] no Docker engine answers: no image to build (the kind tests will say they are skipped)"; fi

molecule: setup tools  ## molecule test on the real control plane (kwok)
	$(PHASE) molecule-kwok $(BIN)/molecule test

# The same CGO_ENABLED and -trimpath as build-tools.sh's gpu-scheduler build: the
# packages both compile (most of Kubernetes) are then found in the Go build cache.
# First: the wrapper modules still select one version of each module they share
# (hack/align_go_modules.py), which is what lets a cold build compile each shared
# package once.
go-test:  ## The Go wrappers' shared versions agree (hack/align_go_modules.py --check), then go vet and go test of the kube-scheduler plugins (scheduler-plugins/)
	$(PHASE) go-modules $(PYTHON) hack/align_go_modules.py --check
	cd scheduler-plugins && $(PHASE) go-test env CGO_ENABLED=0 GOFLAGS="-mod=mod -trimpath" bash -c 'go vet ./... && go test ./...'


docker-engine:  ## Start a Docker engine where none answers (installs docker.io; root)
	scripts/docker-engine.sh start

node-image: setup  ## Build the offline kind node image (Kubernetes v1.34.4, kind v0.30.0); the kind_cluster role's recipe
	roles/kind_cluster/files/kind-node-image/build.sh

# The kind tier: real containers. Where no engine can run, it says so and why
# and is reported as skipped, never as passed.
kind-test: setup  ## molecule test -s kind: a real kind cluster, real containers (starts Docker if needed)
	$(PHASE) molecule-kind scripts/test-kind.sh

# Everything CI runs. First two jobs side by side: the builds (the Go tools and
# node components, then the images), and beside them the images that need no Go
# build (the Debian workload, extender and Prometheus images) followed by the
# checks, which need no build at all (scan, lint, sanity, unit). Measured cold
# (2026-12-03): the cores were already busy through the Go builds (vmstat: 0%
# idle), so this saves only what the builds waited, about 1 min 20 s before the
# first test; docs/ci.md. Its output is held in .cache/beside-build.log and
# printed whole when it ends, pass or fail, so the two do not interleave. The
# two image runs take one lock (.cache/images.lock): the second to come finds
# the first's images built. Then the tests that need the builds, in order.
test: setup  ## Everything CI runs
	$(MAKE) --no-print-directory -j2 build beside-build
	$(MAKE) --no-print-directory go-test integration
	$(MAKE) --no-print-directory -j2 molecule-beside kind-test

checks: setup lint sanity unit  ## What needs no Go build and no image: the manifest scan, lint, sanity, unit

beside-build: setup
	@mkdir -p .cache
	@$(MAKE) --no-print-directory -j1 images-debian checks > .cache/beside-build.log 2>&1; rc=$$?; \
	  echo "[beside-build] the Debian images and the checks, held while the Go builds ran (exit $$rc):"; \
	  cat .cache/beside-build.log; exit $$rc

# molecule on kwok beside molecule on kind (a kwok and a kind cluster of their own,
# nothing shared): the kind scenario spends much of its time waiting on its
# nodes. Held in .cache/molecule-kwok.log and printed whole when it ends, pass or
# fail, as beside-build is.
molecule-beside: setup tools
	@mkdir -p .cache
	@$(MAKE) --no-print-directory molecule > .cache/molecule-kwok.log 2>&1; rc=$$?; \
	  echo "[molecule-beside] molecule on kwok, held while molecule on kind ran (exit $$rc):"; \
	  cat .cache/molecule-kwok.log; exit $$rc

bench: setup  ## Placement benchmark (figures for the README)
	$(SCRIPT_PATH) $(BIN)/python benchmarks/placement.py

phases:  ## The table of the timed phases recorded in $(PHASE_LOG) (start, end, duration, exit code)
	@$(PHASE) --summary

clean:  ## Delete .venv and the pytest, mypy, ruff and hypothesis caches (keeps the tools folder)
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
