"""The scenario simulator: bundled scenarios, invariants, determinism, bad files, generated mode.

Expected end states are written from the rules (decisions, adoption, the fake Airflow's
own writes), not copied from output. No bundled scenario may report any anomaly.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path
from typing import Any

import pytest

from k8s_workloads.decisions import decide
from k8s_workloads.executor import _adopting, _handling
from k8s_workloads.sim import (
    ScenarioError,
    SimulationResult,
    bundled_scenarios,
    generate_scenario,
    load_bundled_scenario,
    parse_scenario,
    simulate,
)
from k8s_workloads.states import TaskInstanceState
from tests.support.sim_world import simulate_cli as cli

DEFAULT = "scenario.yaml"
DOWNTIME = "scenarios/restart_downtime.yaml"
CHAOS = "scenarios/watch_chaos.yaml"
KEPT = "scenarios/kept_failed_pods.yaml"

# workload id -> (end state, pods launched, final events the executor should emit)
EXPECTED: dict[str, dict[str, tuple[str, int, int]]] = {
    DEFAULT: {
        "extract": ("success", 1, 1),
        "transform": ("success", 1, 1),  # duplicates: the second Succeeded is not running
        "load": ("success", 1, 1),  # the late Running after Succeeded reports nothing
        "train": ("failed", 1, 1),  # OOMKilled while the task ran: no pre-start retry
        # ErrImagePull while pending, task instance still queued: requeued once
        # (pod_launch_failure_retries: 1), then the second pod fails too.
        "report": ("failed", 2, 1),
        "score": ("failed", 1, 1),  # evicted while running
        "publish": ("success", 2, 1),  # rejected before the task ran, requeued, succeeds
        "archive": ("success", 1, 1),  # 429 is transient: one retry, one pod
        "cleanup": ("failed", 1, 1),  # running pod deleted: PodDeleted
        "notify-ok": ("success", 1, 1),
        "notify-fail": ("failed", 1, 1),  # callbacks are never retried (retries: 0)
        "sla-alert": ("success", 1, 1),  # adopted as a callback by scheduler 2
        "aggregate": ("success", 1, 1),  # adopted by scheduler 2
    },
    DOWNTIME: {
        "before": ("success", 1, 1),
        # Succeeded while no scheduler ran: the task wrote success itself; the completed
        # pod is only cleaned up, and no executor event is needed.
        "succeeds-while-down": ("success", 1, 0),
        "oom-while-down": ("failed", 1, 1),  # adopted (running task instance), then failed
        # No pod to adopt: reset and rescheduled as try 2, whose pod succeeds.
        "deleted-while-down": ("success", 2, 1),
        "waiting-for-pod": ("success", 1, 1),  # reset as try 2; one 503 left, retried
        "callback-waits": ("success", 1, 1),  # re-queued (reset_orphaned_callbacks)
        "callback-fails-while-down": ("failed", 1, 1),  # adopted, reported failed
        "callback-runs-through": ("success", 1, 1),
        "callback-succeeds-while-down": ("success", 1, 1),
    },
    CHAOS: {
        "success-in-the-gap": ("success", 1, 1),  # the 410 re-list shows it Succeeded
        "failure-in-the-gap": ("failed", 1, 1),
        "deleted-in-the-gap": ("failed", 1, 1),
        "slow-image": ("success", 2, 1),  # pending policy fails it after 30 s; retried
        "rejected-then-ok": ("success", 2, 1),
        "stale-running": ("success", 1, 1),
        "callback-image-retry": ("success", 2, 1),  # callback_launch_failure_retries: 1
        # The init container failed: terminated, not waiting or pending, so not retried.
        "callback-init-fails": ("failed", 2, 1),
    },
    KEPT: {
        "succeeds": ("success", 1, 1),
        "kept-task-failure": ("failed", 1, 1),  # not adopted after the restart: finished
        "callback-succeeds": ("success", 1, 1),
        "kept-callback-failure": ("failed", 1, 1),
        "across-restart": ("success", 1, 1),
    },
}


@functools.cache
def run(name: str) -> SimulationResult:
    return simulate(load_bundled_scenario(name))


def cases() -> list[object]:
    return [
        pytest.param(scenario, workload, id=f"{scenario}:{workload}")
        for scenario, workloads in EXPECTED.items()
        for workload in workloads
    ]


def test_the_bundled_scenarios_are_the_expected_ones() -> None:
    assert bundled_scenarios()[0] == DEFAULT
    assert set(bundled_scenarios()) == set(EXPECTED)
    for name in bundled_scenarios():
        assert [report.id for report in run(name).workloads] == list(EXPECTED[name])


@pytest.mark.parametrize(("scenario", "workload"), cases())
def test_end_state(scenario: str, workload: str) -> None:
    report = run(scenario).workload(workload)
    end_state, launches, _ = EXPECTED[scenario][workload]
    assert (report.end_state, report.launches, len(report.pods)) == (end_state, launches, launches)


@pytest.mark.parametrize(("scenario", "workload"), cases())
def test_final_events(scenario: str, workload: str) -> None:
    report = run(scenario).workload(workload)
    assert report.terminal_events == EXPECTED[scenario][workload][2], report.events


@pytest.mark.parametrize(("scenario", "workload"), cases())
def test_not_left_running(scenario: str, workload: str) -> None:
    kinds = {a.kind for a in run(scenario).anomalies if a.workload == workload}
    assert not kinds & {"left_running", "slot_leak", "lost_in_resync"}


def test_a_scenario_file_expectation_is_enforced_by_the_run() -> None:
    # The files' expect: fields are checked by the simulator itself (no anomaly in
    # test_no_anomalies); a wrong one is an unexpected_end_state, not a quiet pass.
    scenario = load_bundled_scenario(DEFAULT)
    workloads = tuple(
        dataclasses.replace(spec, expect=TaskInstanceState.FAILED) if spec.id == "extract" else spec
        for spec in scenario.workloads
    )
    result = simulate(dataclasses.replace(scenario, workloads=workloads))
    found = [(anomaly.kind, anomaly.workload) for anomaly in result.anomalies]
    assert found == [("unexpected_end_state", "extract")]


@pytest.mark.parametrize("scenario", list(EXPECTED))
def test_no_anomalies(scenario: str) -> None:
    assert run(scenario).anomalies == ()


def test_restart_adopts_the_callback_and_the_task_without_a_crash() -> None:
    result = run(DEFAULT)
    assert result.restarts == 1
    assert result.schedulers == 2
    assert not [a for a in result.anomalies if a.kind in {"crash", "crash_loop"}]
    for workload in ("sla-alert", "aggregate"):
        report = result.workload(workload)
        assert "adopted by scheduler 2" in report.notes
        assert report.end_state == "success"
    adopted = [e for e in result.timeline if e.kind == "adopt" and e.text.startswith("track")]
    # The running callback and the running task; nothing else was left to adopt.
    assert [e.text.split("(")[1].split()[0] for e in adopted] == ["callback", "task"]


def test_reset_task_instances_get_the_next_try() -> None:
    result = run(DOWNTIME)
    for workload in ("deleted-while-down", "waiting-for-pod"):
        report = result.workload(workload)
        assert report.key.endswith("try=2")
        assert any(note.startswith("reset: no pod to adopt") for note in report.notes)


def test_no_bundled_scenario_crashes_or_times_out() -> None:
    for name in bundled_scenarios():
        kinds = {anomaly.kind for anomaly in run(name).anomalies}
        assert not kinds & {"crash", "crash_loop", "timeout", "event_storm", "lookup_loop"}


def test_failed_pods_are_kept_and_successful_ones_deleted() -> None:
    left = run(DEFAULT).pods_left
    kept = {entry.split(" ")[0].rsplit("-", 1)[0] for entry in left}
    # ml-report's pods never pulled their image: deleted, not kept (they would start once
    # it could be pulled, and run the task again).
    assert kept == {"ml-train", "ml-score", "etl-publish", "callback-019e9fc7"}
    assert all(", done," in entry for entry in left)


def test_the_scheduler_event_log_carries_the_failure_reasons() -> None:
    events = {(e.workload, e.state): e for e in run(DEFAULT).scheduler_events}
    pod = r"Pod [a-z0-9-]+/[a-z0-9.-]+"  # the pod named, then the cause
    assert re.fullmatch(
        f"{pod} failed because of OOMKilled \\(container base, exit code 137\\)",
        events["train", "failed"].info or "",
    )
    assert re.fullmatch(
        f"{pod} failed because of PodDeleted", events["cleanup", "failed"].info or ""
    )
    assert events["notify-ok", "running"].scheduler == 1
    assert events["sla-alert", "success"].scheduler == 2
    assert re.match(f"{pod} failed because of Evicted", events["score", "failed"].info or "")


def test_a_library_function_that_raises_is_a_crash_then_a_crash_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*_args: object, **_kwargs: object) -> object:
        raise KeyError("task_id")  # what the provider's adoption raised on callback pods

    monkeypatch.setattr(_adopting, "plan_adoption", broken)
    result = simulate(load_bundled_scenario())
    kinds = [anomaly.kind for anomaly in result.anomalies]
    assert kinds.count("crash") == 5
    assert "crash_loop" in kinds
    crash = next(anomaly for anomaly in result.anomalies if anomaly.kind == "crash")
    assert "KeyError: 'task_id'" in crash.message
    assert result.schedulers == 6  # the first, then five that crashed while adopting


def test_a_crash_while_performing_an_event_keeps_the_timeline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = 0

    def broken_third_call(*args: Any, **kwargs: Any) -> object:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyError("boom")
        return decide(*args, **kwargs)

    monkeypatch.setattr(_handling, "decide", broken_third_call)
    result = simulate(load_bundled_scenario())
    assert [anomaly.kind for anomaly in result.anomalies] == ["crash"]
    lines = [entry.text for entry in result.timeline if entry.kind == "scheduler"]
    assert lines[1:4] == [
        "scheduler 1 CRASHED: KeyError: 'boom'",
        (
            "scheduler 1 stops (crash): loses running=11, 7 jobs waiting for a pod, "
            "0 undelivered watch events"
        ),
        "scheduler 2 starts; watching airflow-worker=2,airflow_executor_done!=True",
    ]


# --- output -------------------------------------------------------------------------------


def test_runs_are_deterministic() -> None:
    first, second = cli(None), cli(None)
    assert first == second
    # Across processes with other hash seeds too: set and dict order must not leak out.
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    outputs = {
        subprocess.run(
            [sys.executable, "-m", "k8s_workloads", "simulate", "-o", "json"],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("0", "1", "4242")
    }
    assert outputs == {cli(None, "json")[1]}
    assert cli(None, "json") == cli(None, "json")
    for name in bundled_scenarios():
        scenario = load_bundled_scenario(name)
        assert simulate(scenario).format_text() == simulate(scenario).format_text()


def test_the_seed_picks_the_pod_names() -> None:
    scenario = load_bundled_scenario()
    other = simulate(dataclasses.replace(scenario, seed=43))
    assert run(DEFAULT).workload("extract").pods != other.workload("extract").pods
    assert other.workload("extract").end_state == "success"


# --- bad scenario files -------------------------------------------------------------------

GOOD = """\
name: tiny
seed: 1
workloads:
  - kind: task
    dag_id: etl
    task_id: load
    pod:
      steps:
        - {phase: Running}
        - {after: 2, phase: Succeeded}
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_good_file_runs(tmp_path: Path) -> None:
    status, out, err = cli(write(tmp_path, GOOD))
    assert (status, err) == (0, "")
    assert out.splitlines()[-1].startswith("1 workloads: 1 success | ")


@pytest.mark.parametrize(
    ("text", "line", "field", "problem"),
    [
        pytest.param(
            GOOD.replace("{phase: Running}", "{phse: Running}"),
            9,
            "workloads[0].pod.steps[0].phse",
            "unknown key 'phse' (expected one of after, phase, ",
            id="unknown-key",
        ),
        pytest.param(
            GOOD.replace("{phase: Running}", "{phase: Runing}"),
            9,
            "workloads[0].pod.steps[0].phase",
            "unknown phase 'Runing' (expected one of Pending, Running, Succeeded, Failed, "
            "Unknown); did you mean 'Running'?",
            id="bad-phase",
        ),
        pytest.param(
            GOOD.replace("after: 2", "after: soon"),
            10,
            "workloads[0].pod.steps[1].after",
            "expected an integer, got a string",
            id="wrong-type",
        ),
        pytest.param(
            GOOD.replace("seed: 1", "seed: true"),
            2,
            "seed",
            "expected an integer, got a boolean",
            id="bool-is-not-int",
        ),
        pytest.param(
            GOOD + "restarts: {at: 3}\n",
            11,
            "restarts",
            "expected a list, got a mapping",
            id="mapping-for-list",
        ),
        pytest.param(
            GOOD.replace("  - kind: task", "  - kind: job"),
            4,
            "workloads[0].kind",
            "unknown kind 'job' (expected one of task, callback)",
            id="bad-kind",
        ),
        pytest.param(
            GOOD.replace("    task_id: load\n", ""),
            4,
            "workloads[0].task_id",
            "required key is missing",
            id="missing-key",
        ),
        pytest.param(
            GOOD.replace("{phase: Running}", "{container: {waiting: X, running: true}}"),
            9,
            "workloads[0].pod.steps[0].container",
            "give exactly one of waiting, terminated or running",
            id="two-container-states",
        ),
        pytest.param(
            GOOD + "  - {kind: task, dag_id: etl, task_id: load}\n",
            11,
            "workloads[1].id",
            "id 'etl.load' is used by workloads[0]",
            id="duplicate-id",
        ),
        pytest.param(
            GOOD + "  - {id: again, kind: task, dag_id: etl, task_id: load, try_number: 2}\n",
            11,
            "workloads[1]",
            "the same workload as workloads[0]",
            id="duplicate-workload",
        ),
        pytest.param(
            GOOD + "  - {kind: callback, callback_id: not-a-uuid}\n",
            11,
            "workloads[1].callback_id",
            "CallbackKey.id must be a UUID string",
            id="bad-callback-id",
        ),
        pytest.param(
            "config: {airflow_version: '3.2.1'}\n"
            "workloads:\n"
            "  - {kind: callback, callback_id: 019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e}\n",
            3,
            "workloads[0].kind",
            "callback workloads need Airflow 3.3+",
            id="callback-before-3.3",
        ),
        pytest.param(
            "config: {max_tick: 5}\n" + GOOD,
            1,
            "config.max_tick",
            "did you mean 'max_ticks'?",
            id="unknown-config-key",
        ),
        pytest.param(
            GOOD.replace("{phase: Running}", "{phase: Running, task: done}"),
            9,
            "workloads[0].pod.steps[0].task",
            "unknown write 'done'",
            id="unknown-task-write",
        ),
        pytest.param(
            GOOD.replace("    pod:\n", "    pod:\n      create_errors: [{status: 200}]\n"),
            8,
            "workloads[0].pod.create_errors[0].status",
            "must be at least 400, got 200",
            id="create-error-status",
        ),
    ],
)
def test_bad_scenarios_name_the_line_and_field(
    tmp_path: Path, text: str, line: int, field: str, problem: str
) -> None:
    path = write(tmp_path, text)
    status, out, err = cli(path)
    assert (status, out) == (2, "")
    assert err.startswith(f"k8s-workloads simulate: {path}:{line}: {field}: ")
    assert problem in err
    assert err.count("\n") == 1


def test_the_brief_example_message() -> None:
    text = GOOD.replace("{phase: Running}", "{phase: Runing}")
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "scenario.yaml")
    assert str(caught.value).startswith(
        "scenario.yaml:9: workloads[0].pod.steps[0].phase: unknown phase 'Runing' "
        "(expected one of Pending, Running, Succeeded, Failed, Unknown)"
    )
    assert (caught.value.line, caught.value.field) == (9, "workloads[0].pod.steps[0].phase")


def test_the_pending_policy_reads_the_tick_clock() -> None:
    scenario = parse_scenario(
        """
config:
  pending_policy: {pending_timeout: 60}
  tick_seconds: 30
  pod_launch_failure_retries: 0
workloads:
  - id: stuck
    kind: task
    dag_id: etl
    task_id: stuck
    pod:
      steps:
        - {phase: Pending, container: {waiting: ContainerCreating}}
        - {phase: Pending, container: {waiting: ContainerCreating}}
        - {phase: Pending, container: {waiting: ContainerCreating}}
"""
    )
    result = simulate(scenario)
    (event,) = result.scheduler_events
    assert (event.t, event.state) == (2, "failed")  # created at 0 s, 60 s later at tick 2
    assert "PodPendingTimeout" in (event.info or "")
    assert result.workload("stuck").end_state == "failed"


def test_a_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("{after: 2, phase: Succeeded}", "{after: 2, phase: [}"))
    status, _, err = cli(path)
    assert status == 2
    assert err.startswith(f"k8s-workloads simulate: {path}:10: not valid YAML: ")


def test_an_empty_file(tmp_path: Path) -> None:
    status, _, err = cli(write(tmp_path, "# nothing\n"))
    assert status == 2
    assert "the file is empty" in err


def test_a_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.yaml")
    status, out, err = cli(path)
    assert (status, out) == (2, "")
    assert (
        err == f"k8s-workloads simulate: {path}: cannot read the file: No such file or directory\n"
    )


# --- generated mode -----------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    "change",
    [
        {},
        {"delete_worker_pods_on_failure": True},
        {"mark_kept_failed_pods_done": False},
        {"delete_worker_pods": False},
        {"callback_launch_failure_retries": 2, "pod_launch_failure_retries": 3},
    ],
    ids=["defaults", "delete-failed", "provider-kept-pods", "keep-all", "retries"],
)
def test_generated_mode_finds_no_anomaly(seed: int, change: dict[str, Any]) -> None:
    # Every configuration an executor may run with, over random workloads with restarts
    # (spaced so none falls while the scheduler is down) and 410 watch errors.
    scenario = generate_scenario(200, 2, seed, watch_errors=1)
    config = dataclasses.replace(scenario.config, **change)
    result = simulate(dataclasses.replace(scenario, config=config), record_timeline=False)
    assert result.anomalies == ()
    assert result.restarts == 2
    assert sum(result.end_states.values()) == 200
    assert all(report.terminal_events == 1 for report in result.workloads if report.id)


# --- every DecisionConfig and ResolverConfig option reaches a scenario ----------------------


def test_every_decision_and_resolver_option_is_a_scenario_key() -> None:
    import attrs  # noqa: PLC0415

    from k8s_workloads.config import DecisionConfig  # noqa: PLC0415
    from k8s_workloads.watch.resolution import ResolverConfig  # noqa: PLC0415

    text = GOOD.replace(
        "seed: 1\n",
        """seed: 1
config:
  decisions:
    delete_worker_pods: false
    delete_worker_pods_on_failure: true
    mark_kept_failed_pods_done: false
    pod_launch_failure_retries: 3
    pod_launch_failure_excluded_container_reasons: [Error, ContainerCannotRun]
    callback_launch_failure_retries: 2
    task_publish_max_retries: -1
    max_handling_retries: 5
    max_retry_after_seconds: 60
    callback_queued_timeout: 120
    unreachable_backoff_seconds: [0.5, 10]
  resolver:
    fatal_pending_reasons: [ErrImagePull]
    pending: {image_pull_grace: 30}
    report_callback_running: false
    oom_success_is_failure: true
""",
    )
    config = parse_scenario(text).config
    decisions, resolver = config.decision_config(), config.resolver_config()
    assert decisions == DecisionConfig(
        delete_worker_pods=False,
        delete_worker_pods_on_failure=True,
        mark_kept_failed_pods_done=False,
        pod_launch_failure_retries=3,
        pod_launch_failure_excluded_container_reasons=frozenset({"Error", "ContainerCannotRun"}),
        callback_launch_failure_retries=2,
        task_publish_max_retries=-1,
        max_handling_retries=5,
        max_retry_after_seconds=60,
        callback_queued_timeout=120,
        unreachable_backoff_seconds=(0.5, 10),
    )
    assert set(attrs.fields_dict(DecisionConfig)) == dict(config.decisions).keys()
    assert resolver.fatal_pending_reasons == frozenset({"ErrImagePull"})
    assert resolver.pending is not None
    assert resolver.pending.image_pull_grace == 30
    assert (resolver.report_callback_running, resolver.oom_success_is_failure) == (False, True)
    assert (
        set(attrs.fields_dict(ResolverConfig)) - {"airflow_version"} == dict(config.resolver).keys()
    )


def test_the_oom_rule_set_in_a_scenario_fails_a_succeeded_oom_killed_pod() -> None:
    text = """\
config:
  resolver: {oom_success_is_failure: true}
workloads:
  - kind: callback
    callback_id: 019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e
    pod:
      steps:
        - {phase: Running}
        - {after: 2, phase: Succeeded, container: {terminated: OOMKilled, exit_code: 0}}
"""
    result = simulate(parse_scenario(text))
    assert result.workloads[0].end_state == "failed"
    assert "OOMKilled" in " ".join(result.workloads[0].notes)
    plain = simulate(parse_scenario(text.replace("true}", "false}")))
    assert plain.workloads[0].end_state == "success"


@pytest.mark.parametrize(
    ("config", "field", "problem"),
    [
        (
            "{decisions: {max_handling_retries: -1}}",
            "config.decisions.max_handling_retries",
            "at least 0",
        ),
        (
            "{decisions: {delete_worker_pods: 1}}",
            "config.decisions.delete_worker_pods",
            "true or false",
        ),
        ("{decisions: {nope: 1}}", "config.decisions.nope", "unknown key"),
        (
            "{resolver: {fatal_pending_reasons: ErrImagePull}}",
            "config.resolver.fatal_pending_reasons",
            "a list",
        ),
        (
            "{resolver: {airflow_version: '3.3.2'}}",
            "config.resolver.airflow_version",
            "unknown key",
        ),
    ],
)
def test_bad_embedded_options_name_their_field(
    tmp_path: Path, config: str, field: str, problem: str
) -> None:
    path = write(tmp_path, GOOD.replace("seed: 1\n", f"seed: 1\nconfig: {config}\n"))
    status, out, err = cli(path)
    assert (status, out) == (2, "")
    assert f": {field}: " in err
    assert problem in err
    assert err.count("\n") == 1
