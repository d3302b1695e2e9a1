"""Stand-in for ansible-test's get-pip bootstrap script (ci-files.testing.ansible.com, not a package registry).

scripts/sanity.sh copies it to ~/.ansible/test/cache/get_pip_<version>.py, where
ansible-test looks before downloading. It puts the pip bundled with this Python
into the fresh virtual environment ansible-test runs it in; ansible-test then
installs the sanity tests' pinned requirements from PyPI with that pip.
"""

import ensurepip

if __name__ == "__main__":
    ensurepip.bootstrap(upgrade=True, default_pip=True)
