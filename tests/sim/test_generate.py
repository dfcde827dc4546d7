"""Generated scenarios (:mod:`k8s_workloads.sim.generate`): reproducible from the seed,
each workload with its expectation, restarts that never fall while a scheduler is down."""

from __future__ import annotations

import itertools

import pytest

from k8s_workloads.keys import CallbackKey
from k8s_workloads.sim import generate_scenario


def test_the_same_seed_gives_the_same_scenario() -> None:
    assert generate_scenario(80, 3, 5) == generate_scenario(80, 3, 5)
    assert generate_scenario(80, 3, 5) != generate_scenario(80, 3, 6)


def test_every_workload_is_there_with_a_unique_id_and_key() -> None:
    scenario = generate_scenario(400, 2, 1)
    assert len(scenario.workloads) == 400
    assert len({spec.id for spec in scenario.workloads}) == 400
    assert len({spec.key for spec in scenario.workloads}) == 400
    callbacks = sum(isinstance(spec.key, CallbackKey) for spec in scenario.workloads)
    assert 0 < callbacks < 400 * 0.3  # about 15%


@pytest.mark.parametrize("seed", range(5))
def test_a_restart_never_falls_while_the_scheduler_is_down(seed: int) -> None:
    restarts = generate_scenario(200, 8, seed).restarts
    assert len(restarts) == 8
    for before, after in itertools.pairwise(restarts):
        assert after.at > before.at + before.down


def test_watch_errors_are_410s_at_distinct_ticks() -> None:
    errors = generate_scenario(100, 0, 2, watch_errors=4).watch_errors
    assert [error.code for error in errors] == [410] * 4
    assert len({error.at for error in errors}) == 4


@pytest.mark.parametrize(("workloads", "restarts"), [(0, 0), (5, -1)])
def test_nothing_to_run_is_refused(workloads: int, restarts: int) -> None:
    with pytest.raises(ValueError, match="at least one workload"):
        generate_scenario(workloads, restarts, 0)
