"""Which Ansible strategy the integration tier's runs get (tests/support/strategy.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.strategy import STRATEGY_VARIABLE, strategy_env


def test_a_module_that_drives_a_cluster_gets_mitogen_with_its_plugin_folder() -> None:
    env = strategy_env(drives_a_cluster=True, environ={})
    assert env["ANSIBLE_STRATEGY"] == "mitogen_linear"
    assert (Path(env["ANSIBLE_STRATEGY_PLUGINS"]) / "mitogen_linear.py").is_file()


def test_a_module_that_renders_roles_keeps_ansibles_own_strategy() -> None:
    assert strategy_env(drives_a_cluster=False, environ={}) == {"ANSIBLE_STRATEGY": "linear"}


@pytest.mark.parametrize("drives_a_cluster", [True, False])
def test_the_variable_chooses_one_strategy_for_every_module(drives_a_cluster: bool) -> None:
    linear = strategy_env(drives_a_cluster=drives_a_cluster, environ={STRATEGY_VARIABLE: "linear"})
    assert linear == {"ANSIBLE_STRATEGY": "linear"}
    mitogen = strategy_env(drives_a_cluster=drives_a_cluster, environ={STRATEGY_VARIABLE: "mitogen_linear"})
    assert mitogen["ANSIBLE_STRATEGY"] == "mitogen_linear"


def test_an_unknown_strategy_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"INTERFERENCE_TEST_STRATEGY='free': expected one of mitogen_linear, linear"):
        strategy_env(drives_a_cluster=True, environ={STRATEGY_VARIABLE: "free"})

