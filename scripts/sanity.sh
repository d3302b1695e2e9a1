#!/usr/bin/env bash
# The release gates of the collection, on what users install, not on the checkout:
#   1. ansible-galaxy collection build (the tarball, build_ignore applied);
#   2. ansible-galaxy collection install of it into an empty folder, so the
#      collection sits at a real ansible_collections/interference/orchestrator/
#      path (the checkout's collections/ link is what ansible-test refuses);
#   3. ansible-test sanity there, for the Python the venv runs (ansible-core
#      of requirements.txt; meta/runtime.yml claims no older one), with the
#      ignore files of tests/sanity/ (each line says why);
#   4. antsibull-changelog lint (changelogs/) and antsibull-docs
#      lint-collection-docs (the plugins' and roles' docs, argument_specs);
#   5. version_added of every plugin <= galaxy.yml's version.
#
# Usage: scripts/sanity.sh [ANSIBLE-TEST SANITY ARGS...]   (e.g. --test symlinks)
# Offline but for PyPI: ansible-test's get-pip download (not a package
# registry) is replaced by tests/sanity/get_pip_stand_in.py (ensurepip); the
# sanity tests' own requirements come from PyPI, into ansible-test's venvs.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$repo_root/.venv/bin
# antsibull-docs calls ansible-galaxy and ansible-doc by name.
export PATH=$bin:$PATH
log() { printf '[sanity] %s\n' "$*" >&2; }
[[ -x $bin/ansible-test ]] || { log "$bin/ansible-test not found: run 'make setup' first"; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/interference-sanity.XXXXXX")
trap 'rm -rf "$work"' EXIT

step_started=$SECONDS
step() { log "$* ($((SECONDS - step_started))s so far)"; }

step "build the tarball"
"$bin/ansible-galaxy" collection build --output-path "$work/dist" "$repo_root" >/dev/null
tarball=$(ls "$work"/dist/interference-orchestrator-*.tar.gz)

step "install it into an empty folder"
# From the empty folder, without the checkout's ansible.cfg: its collections_path
# holds the checkout itself, which ansible-galaxy would call "already installed".
(cd "$work" && env -u ANSIBLE_CONFIG ANSIBLE_COLLECTIONS_PATH="$work/collections" \
  "$bin/ansible-galaxy" collection install --no-deps --offline -p "$work/collections" "$tarball" >/dev/null)
installed=$work/collections/ansible_collections/interference/orchestrator

# ansible-test bootstraps pip in each venv from a cached get-pip script, which it
# would otherwise download from ci-files.testing.ansible.com.
# The pip version ansible-core 2.19's ansible-test bootstraps (get_venv_packages).
pip_version=24.2
cache=$HOME/.ansible/test/cache
mkdir -p "$cache"
install -m 0644 "$repo_root/tests/sanity/get_pip_stand_in.py" "$cache/get_pip_${pip_version//./_}.py"

python_version=$("$bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
step "ansible-test sanity (Python $python_version, $("$bin/ansible" --version | sed -n 1p))"
(cd "$installed" && PATH=$bin:$PATH "$bin/ansible-test" sanity --venv --python "$python_version" --color no "$@")

step "antsibull-changelog lint"
(cd "$repo_root" && "$bin/antsibull-changelog" lint)

step "antsibull-docs lint-collection-docs"
# It reads the collection where Ansible finds it: the installed copy.
(cd "$installed" && ANSIBLE_COLLECTIONS_PATH=$work/collections "$bin/antsibull-docs" lint-collection-docs --plugin-docs .)

step "version_added against galaxy.yml"
"$bin/python" "$repo_root/tests/sanity/version_added.py" "$installed"

step "all gates passed"
