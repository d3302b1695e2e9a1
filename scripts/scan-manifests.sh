#!/usr/bin/env bash
# scripts/scan-manifests.sh: scan every Kubernetes object the roles render with
# checkov, and fail on any finding scan/skip-list.yml does not explain (and on
# any skip entry that explains nothing any more). `make scan`; part of `make lint`.
#
# checkov pins many libraries that clash with ansible's, so it lives in its own
# venv, .cache/checkov/venv, installed from PyPI at the version
# scan/requirements.txt pins (reinstalled when the pin changes). The manifests
# are rendered by scan/render.yml through the roles' own entry points, without
# a cluster; checkov runs offline (--skip-download).
# SCAN_KEEP=DIR keeps the rendered manifests and checkov's report in DIR.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

venv=.cache/checkov/venv
pin=scan/requirements.txt
stamp="$venv/.installed-$(sha256sum "$pin" | cut -c1-12)"
if [[ ! -e $stamp ]]; then
  echo "scan: installing $(cat "$pin") into $venv" >&2
  python3 -m venv --clear "$venv"
  "$venv/bin/pip" install --quiet --upgrade pip
  "$venv/bin/pip" install --quiet -r "$pin"
  touch "$stamp"
fi

if [[ -n ${SCAN_KEEP:-} ]]; then
  work=$SCAN_KEEP
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

ANSIBLE_CONFIG="$root/ansible.cfg" .venv/bin/ansible-playbook -i tests/support/localhost.yml scan/render.yml \
  -e "scan_dir=$work/rendered" >"$work/render.log" || { cat "$work/render.log" >&2; exit 1; }

# checkov exits 1 when any check fails; scan/findings.py decides what fails the scan.
status=0
"$venv/bin/checkov" --directory "$work/rendered" --framework kubernetes --skip-download --output json \
  >"$work/checkov.json" 2>"$work/checkov.log" || status=$?
if ((status > 1)); then
  cat "$work/checkov.log" >&2
  exit "$status"
fi
.venv/bin/python scan/findings.py "$work/checkov.json" scan/skip-list.yml
