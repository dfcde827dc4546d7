"""ExecutorCore running generic workloads with no Airflow anywhere (issue 30, item 5): the
:meth:`ExecutorConfig.generic` profile, what ``submit`` refuses, and workloads run to
success and failure against the public test kit (fake cluster, scripted kubelet,
``CoreDriver``)."""

from __future__ import annotations

import datetime
import json
import random
import re
from typing import TYPE_CHECKING, Any

import pytest

from k8s_workloads.config import DecisionConfig
from k8s_workloads.executor import ExecutorConfig, ExecutorCore, ReadStates
from k8s_workloads.keys import CallbackKey, GenericKey, TaskInstanceKey
from k8s_workloads.pods import InvalidJob, InvalidPod
from k8s_workloads.states import CallbackState, GenericState, KubernetesJob
from k8s_workloads.testing import CoreDriver, FakeAirflowDB, FakeCluster, Kubelet, PodOutcome
from tests.support.event_factory import SUCCEEDED

if TYPE_CHECKING:
    from k8s_workloads.decisions.actions import EmitEvent

NS = "jobs"
T0 = datetime.datetime(2026, 6, 7, tzinfo=datetime.timezone.utc)
CALLBACK_ID = "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e"


def _config(**options: Any) -> ExecutorConfig:
    options.setdefault("kube_image", "registry.example.com/jobs:1")
    options.setdefault("creation_batch_size", 50)
    options.setdefault("rng", random.Random(5))
    return ExecutorConfig.generic("runner-1", NS, **options)


def _outcome(pod: dict[str, Any]) -> PodOutcome:
    # The workload's id, as the pod carries it, says how the kit's kubelet ends it.
    workload_id = pod["metadata"]["annotations"]["workload_id"]
    if workload_id.endswith("-fails"):
        return PodOutcome.failure(3)
    if workload_id.endswith("-no-image"):
        return PodOutcome.image_pull_failure()
    return PodOutcome.success()


def _deleting(pod: dict[str, Any]) -> bool:
    return "deletionTimestamp" in pod["metadata"]


class _Run:
    """A generic executor: the core, the kit's cluster and kubelet, and a store of events."""

    def __init__(self, config: ExecutorConfig) -> None:
        self.cluster = FakeCluster(namespaces=[NS], now=T0)
        self.db = FakeAirflowDB()  # the kit's store: here only the events reported
        self.core = ExecutorCore(config)
        self.driver = CoreDriver(self.core, self.cluster, self.db)
        self.kubelet = Kubelet(self.cluster, run_seconds=1, plan=_outcome)
        self.performed: list[object] = []

    def submit(self, *ids: str) -> list[GenericKey]:
        keys = [GenericKey(workload_id) for workload_id in ids]
        for key in keys:
            self.core.submit(KubernetesJob(key, ("python", "-m", "jobs.run", key.id)))
        return keys

    def until_done(self, seconds: int = 30) -> None:
        for second in range(seconds):
            now = T0 + datetime.timedelta(seconds=second)
            self.kubelet.step(float(second))
            self.driver.deliver(now=now)
            self.performed += self.driver.run_pass(now).performed
            if not self.core.running and not self.core.has_work:
                return
        pytest.fail(f"still running after {seconds} s: {self.core.running}")

    def terminal(self, key: GenericKey) -> list[EmitEvent]:
        return self.db.terminal_reports(key)


def test_the_generic_profile_needs_no_airflow_and_reads_no_states() -> None:
    config = _config()
    assert config.airflow_version is None
    assert config.resolver_config().airflow_version is None
    assert config.read_callback_states is False
    assert config.decisions == DecisionConfig(
        callback_launch_failure_retries=1, task_publish_max_retries=-1
    )
    # Any field by name, the profile's own included, as the constructor takes it.
    custom = ExecutorConfig.generic(7, NS, read_callback_states=True, creation_batch_size=3)
    assert (custom.scheduler_id, custom.read_callback_states, custom.creation_batch_size) == (
        "7",
        True,
        3,
    )
    assert ExecutorConfig(scheduler_id=7, namespace=NS).airflow_version is None


def test_generic_workloads_run_to_success_and_failure_reported_once_each() -> None:
    run = _Run(_config())
    ok, fails, no_image = run.submit("report/2026-06-07", "job-2-fails", "job 3-no-image")
    run.until_done()
    assert [event.state for event in run.terminal(ok)] == [GenericState.SUCCESS]
    (failed,) = run.terminal(fails)
    assert failed.state is GenericState.FAILED
    assert failed.info is not None  # the pod named, then the cause
    assert re.fullmatch(
        r"Pod jobs/job-2-fails-[a-z0-9]+ failed because of Error \(container base, exit code 3\)",
        failed.info,
    )
    # Its image never pulled: launched once more (the profile), then failed.
    (never,) = run.terminal(no_image)
    assert never.state is GenericState.FAILED
    creations = [r for r in run.performed if type(r).__name__ == "CreatePod"]
    assert [r.key.id for r in creations].count("job 3-no-image") == 2  # type: ignore[attr-defined]
    # RUNNING first for the pods that ran, as for callbacks.
    assert run.db.reported(ok) == [GenericState.RUNNING, GenericState.SUCCESS]
    assert not any(isinstance(request, ReadStates) for request in run.performed)
    # Pods that succeeded are deleted; failed ones kept for a look, labelled done; those
    # that never started (the image) deleted, lest they start once it can be pulled.
    pods = run.cluster.pods()
    kept = {p["metadata"]["annotations"]["workload_id"]: p for p in pods if not _deleting(p)}
    assert set(kept) == {"job-2-fails"}
    deleting = [p["metadata"]["annotations"]["workload_id"] for p in pods if _deleting(p)]
    assert deleting == ["job 3-no-image"]  # its kubelet has yet to confirm it
    assert all(
        pod["metadata"]["labels"]["airflow_executor_done"] == "True" for pod in kept.values()
    )
    assert run.core.running == ()


def test_a_generic_pod_carries_no_airflow() -> None:
    run = _Run(_config())
    (key,) = run.submit("job-1")
    run.driver.run_pass(T0)
    (pod,) = run.cluster.pods()
    labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
    assert labels["airflow-workload-type"] == "generic"
    assert labels["workload_id"] == "job-1"
    assert labels["airflow-worker"] == "runner-1"
    assert "airflow_version" not in labels
    assert annotations == {"workload_id": "job-1"}
    (base,) = pod["spec"]["containers"]
    assert base["args"] == ["python", "-m", "jobs.run", "job-1"]
    assert base["image"] == "registry.example.com/jobs:1"
    assert "--json-string" not in json.dumps(pod)
    assert run.core.is_running(key)


def test_with_state_reads_on_a_terminal_state_is_never_overwritten() -> None:
    # An executor keeping its own rows asks for the reads: answered with GenericState.
    run = _Run(_config(read_callback_states=True))
    done, fresh = run.submit("done-fails", "fresh-fails")
    run.db.add_generic(done, GenericState.SUCCESS)  # settled elsewhere meanwhile
    run.db.add_generic(fresh, GenericState.QUEUED)
    run.until_done()
    assert any(isinstance(request, ReadStates) for request in run.performed)
    assert run.terminal(done) == []
    assert run.db.state(done) is GenericState.SUCCESS
    assert [event.state for event in run.terminal(fresh)] == [GenericState.FAILED]


@pytest.mark.parametrize(
    ("key", "field"),
    [
        (TaskInstanceKey("etl", "load", "r1"), "airflow_version"),
        (CallbackKey(CALLBACK_ID), "airflow_version"),
    ],
)
def test_an_airflow_job_is_refused_by_a_core_without_the_airflow_version(
    key: TaskInstanceKey | CallbackKey, field: str
) -> None:
    core = ExecutorCore(_config())
    with pytest.raises(InvalidJob, match="airflow_version is not set") as refused:
        core.submit(KubernetesJob(key, ("run",)))
    assert refused.value.field == field
    assert core.running == ()
    assert core.queued == ()


@pytest.mark.parametrize(
    ("job", "error", "field"),
    [
        (
            KubernetesJob(CallbackKey(CALLBACK_ID), ("run",), pod_override={"spec": {}}),
            InvalidJob,
            "pod_override",
        ),
        (
            KubernetesJob(GenericKey("j"), ("run",), pod_override={"spec": {"hostNetwork": "1,"}}),
            InvalidPod,
            "spec.hostNetwork",
        ),
        (
            KubernetesJob(GenericKey("j"), ("run",), pod_override={"metadata": {"name": "A_B"}}),
            InvalidPod,
            "metadata.name",
        ),
        (KubernetesJob(GenericKey("j"), ("run",), kube_image=""), InvalidJob, "kube_image"),
        (
            KubernetesJob(GenericKey("j"), ("run",), pod_template_file="/t.yaml"),
            InvalidJob,
            "pod_template_file",
        ),
    ],
)
def test_a_job_no_pod_can_be_built_from_is_refused_at_submit(
    job: KubernetesJob[Any], error: type[ValueError], field: str
) -> None:
    core = ExecutorCore(_config() if isinstance(job.key, GenericKey) else _airflow_config())
    with pytest.raises(error) as refused:
        core.submit(job)
    assert getattr(refused.value, "field", None) == field
    assert core.running == ()
    assert core.queued == ()
    core.submit(KubernetesJob(job.key, ("run",)))  # the same key, a good job: taken
    assert core.is_running(job.key)


def _airflow_config() -> ExecutorConfig:
    return ExecutorConfig(scheduler_id=1, namespace=NS, airflow_version="3.3.2", kube_image="a:1")


def test_a_restarted_generic_executor_adopts_the_dead_ones_pods_and_reports_them() -> None:
    first = _Run(_config())
    running, done = first.submit("long-job", "quick-job")
    first.driver.run_pass(T0)
    first.kubelet.step(0.0)
    first.kubelet.step(1.0)  # both Running
    # The first executor dies; a second (another id, the same cluster) takes over.
    cluster, lost = first.cluster, GenericKey("never-started")
    second = ExecutorCore(ExecutorConfig.generic("runner-2", NS, kube_image="x:1"))
    driver = CoreDriver(second, cluster, FakeAirflowDB())
    adoption = driver.adopt(["runner-1"], now=T0, expected_generic_keys=[running, done, lost])
    assert adoption.plan.adopted == {running, done}
    assert adoption.rerun == (lost,)  # no pod anywhere: the only one to run again
    assert set(second.running) == {running, done}
    for tick in range(2, 10):
        first.kubelet.step(float(tick))
        now = T0 + datetime.timedelta(seconds=tick)
        driver.deliver(now=now)
        driver.run_pass(now)
    for key in (running, done):
        assert [e.state for e in driver.db.terminal_reports(key)] == [CallbackState.SUCCESS]
    assert cluster.pods() == []


def test_an_executor_restarted_under_the_same_id_takes_over_its_earlier_runs_pods() -> None:
    # Generic executors often keep one id: naming it among the dead says the earlier run
    # died, and its pods are taken over (they used to be skipped as "owned by this
    # scheduler", then cleaned up as leftovers unreported: the workloads were lost).
    first = _Run(_config())
    running, finished = first.submit("long-job", "quick-job")
    first.driver.run_pass(T0)
    first.kubelet.step(0.0)
    first.kubelet.step(1.0)  # both Running
    cluster, lost = first.cluster, GenericKey("never-started")
    (ended,) = [
        pod["metadata"]["name"]
        for pod in cluster.pods()
        if pod["metadata"]["annotations"]["workload_id"] == finished.id
    ]
    cluster.set_status(NS, ended, SUCCEEDED)  # unseen by the first run, which dies
    again = ExecutorCore(_config())  # the same id, "runner-1"
    driver = CoreDriver(again, cluster, FakeAirflowDB())
    adoption = driver.adopt(["runner-1"], now=T0, expected_generic_keys=[running, finished, lost])
    assert adoption.rerun == (lost,)
    assert not adoption.failed_relabels
    assert again.running == (running,)
    assert [e.state for e in driver.db.terminal_reports(finished)] == [GenericState.SUCCESS]
    for tick in range(2, 10):
        first.kubelet.step(float(tick))
        now = T0 + datetime.timedelta(seconds=tick)
        driver.deliver(now=now)
        driver.run_pass(now)
    for key in (running, finished):
        assert [e.state for e in driver.db.terminal_reports(key)] == [GenericState.SUCCESS]
    assert cluster.pods() == []
