# The two commands of the README: `make site` runs the main job, `make test` the tests.
# Both set up what they need first (Python venv, and for tests the control plane binaries).

SHELL := /bin/bash
VENV := .venv
PYTHON ?= python3
BIN := $(CURDIR)/$(VENV)/bin
TOOLS_BIN := $(CURDIR)/.cache/bin
export PATH := $(TOOLS_BIN):$(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

.PHONY: setup tools site test unit go-test lint molecule bench teardown clean

setup: $(VENV)/.installed  ## Create .venv with the pinned Python dependencies

$(VENV)/.installed: requirements.txt constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt -c constraints.txt
	touch $@

tools:  ## Build kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kwok, kwokctl, helm, kind into .cache/bin
	scripts/build-tools.sh

site: setup  ## The main job: provision the cluster and place the apps
	scripts/build-tools.sh --for-site
	$(BIN)/ansible-playbook site.yml

teardown: setup  ## Delete the cluster site.yml created
	$(BIN)/ansible-playbook playbooks/teardown.yml

lint: setup  ## ruff, mypy, ansible-lint (production profile), syntax-check
	$(BIN)/ruff check .
	$(BIN)/mypy plugins tests benchmarks interference_extender
	$(BIN)/ansible-playbook --syntax-check site.yml
	$(BIN)/ansible-lint --profile production

unit: setup  ## pytest: engine, filters through ansible-playbook, role templates
	$(BIN)/pytest -q

molecule: setup tools  ## molecule test on the real control plane (kwok)
	$(BIN)/molecule test

go-test:  ## go vet and go test of the kube-scheduler plugins (scheduler-plugins/)
	cd scheduler-plugins && CGO_ENABLED=0 GOFLAGS=-mod=mod go vet ./... && CGO_ENABLED=0 GOFLAGS=-mod=mod go test ./...

test: setup tools lint unit go-test molecule  ## Everything CI runs

bench: setup  ## Placement benchmark (figures for the README)
	$(BIN)/python benchmarks/placement.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
