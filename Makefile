# The two commands of the README: `make site` runs the main job, `make test` the tests.
# Both set up what they need first (Python venv, and for tests the control plane binaries).
# `make help` lists every target with its `##` comment.

SHELL := /bin/bash
VENV := .venv
PYTHON ?= python3
BIN := $(CURDIR)/$(VENV)/bin
TOOLS_BIN := $(CURDIR)/.cache/bin
export PATH := $(TOOLS_BIN):$(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

.PHONY: help setup tools site test unit integration go-test lint scan molecule docker-engine node-image kind-test bench teardown clean

help:  ## List the targets
	@awk -F ':.*## ' '/^[a-z][a-z-]*:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: $(VENV)/.installed $(VENV)/.import-paths  ## Create .venv with the pinned Python dependencies

# The checkout's import roots in the venv, as an installed collection would give them: collections/ (the
# engine and plugins by their collection path, ansible_collections.interference.orchestrator...) and the
# root (interference_extender, benchmarks, tests.support). Scripts (benchmarks/*.py) then import them as
# the tests do (pyproject's pythonpath), without editing sys.path.
$(VENV)/.import-paths: $(VENV)/.installed
	$(BIN)/python -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "interference_orchestrator.pth").write_text("$(CURDIR)/collections\n$(CURDIR)\n")'
	touch $@

$(VENV)/.installed: requirements.txt constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt -c constraints.txt
	touch $@

tools:  ## Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kwok, kwokctl, helm, kind, gpu-scheduler, registry into .cache/bin
	scripts/build-tools.sh

site: setup  ## The main job: provision the cluster and place the apps
	scripts/build-tools.sh --for-site
	$(BIN)/ansible-playbook site.yml

teardown: setup  ## Delete the cluster site.yml created
	$(BIN)/ansible-playbook playbooks/teardown.yml

lint: setup scan  ## ruff, mypy, ansible-lint (production profile), syntax-check, and the manifest scan
	$(BIN)/ruff check .
	$(BIN)/mypy plugins tests benchmarks interference_extender scan
	$(BIN)/ansible-playbook --syntax-check site.yml
	$(BIN)/ansible-lint --profile production

# checkov in its own venv under .cache (its pins clash with ansible's): about
# 50 s to install the first time, then about 8 s per scan.
scan: setup  ## checkov over every manifest the roles render; fails on findings scan/skip-list.yml does not explain
	scripts/scan-manifests.sh

unit: setup  ## pytest tests/unit: engine, filters, extender; no process, no cluster (seconds)
	$(BIN)/pytest -q -rs tests/unit

integration: setup tools  ## pytest tests/integration: roles through ansible-playbook, scripts, kwok and kind
	$(BIN)/pytest -q -rs tests/integration

molecule: setup tools  ## molecule test on the real control plane (kwok)
	$(BIN)/molecule test

go-test:  ## go vet and go test of the kube-scheduler plugins (scheduler-plugins/)
	cd scheduler-plugins && CGO_ENABLED=0 GOFLAGS=-mod=mod go vet ./... && CGO_ENABLED=0 GOFLAGS=-mod=mod go test ./...


docker-engine:  ## Start a Docker engine where none answers (installs docker.io; root)
	scripts/docker-engine.sh start

node-image: setup  ## Build the offline kind node image (Kubernetes v1.34.4, kind v0.30.0)
	hack/kind-node-image/build.sh

# The kind tier: real containers. Where no engine can run, it says so and why
# and is reported as skipped, never as passed.
kind-test: setup  ## molecule test -s kind: a real kind cluster, real containers (starts Docker if needed)
	scripts/test-kind.sh

test: setup tools lint unit go-test integration molecule kind-test  ## Everything CI runs

bench: setup  ## Placement benchmark (figures for the README)
	$(BIN)/python benchmarks/placement.py

clean:  ## Delete .venv and the pytest, mypy, ruff and hypothesis caches (keeps .cache/bin)
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
