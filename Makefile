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

.PHONY: help setup tools site test unit integration go-test lint sanity scan molecule docker-engine node-image kind-test bench teardown clean

help:  ## List the targets
	@awk -F ':.*## ' '/^[a-z][a-z-]*:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: $(VENV)/.installed $(COLLECTION_LINK)  ## Create .venv with the pinned Python dependencies, link the checkout as the collection

$(COLLECTION_LINK):
	mkdir -p $(dir $@)
	ln -sfn ../../.. $@

$(VENV)/.installed: requirements.txt constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt -c constraints.txt
	touch $@

tools:  ## Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kwok, kwokctl, helm, kind, gpu-scheduler, registry into $INTERFERENCE_TOOLS_BIN
	scripts/build-tools.sh

site: setup  ## The main job: provision the cluster and place the apps
	scripts/build-tools.sh --for-site
	$(BIN)/ansible-playbook $(SITE_ARGS) site.yml

teardown: setup  ## Delete the cluster site.yml created
	$(BIN)/ansible-playbook $(SITE_ARGS) playbooks/teardown.yml

lint: setup scan  ## ruff, mypy, ansible-lint (production profile), syntax-check, and the manifest scan
	$(BIN)/ruff check .
	$(BIN)/mypy plugins tests benchmarks interference_extender scan
	$(BIN)/ansible-playbook --syntax-check site.yml playbooks/*.yml
	$(BIN)/ansible-lint --profile production

# About 4 minutes the first time (ansible-test's venvs, from PyPI), then less.
sanity: setup  ## Release gates on the built tarball: ansible-test sanity, antsibull-changelog lint, antsibull-docs lint, version_added
	scripts/sanity.sh

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

node-image: setup  ## Build the offline kind node image (Kubernetes v1.34.4, kind v0.30.0); the kind_cluster role's recipe
	roles/kind_cluster/files/kind-node-image/build.sh

# The kind tier: real containers. Where no engine can run, it says so and why
# and is reported as skipped, never as passed.
kind-test: setup  ## molecule test -s kind: a real kind cluster, real containers (starts Docker if needed)
	scripts/test-kind.sh

test: setup tools lint sanity unit go-test integration molecule kind-test  ## Everything CI runs

bench: setup  ## Placement benchmark (figures for the README)
	$(BIN)/python benchmarks/placement.py

clean:  ## Delete .venv and the pytest, mypy, ruff and hypothesis caches (keeps the tools folder)
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
