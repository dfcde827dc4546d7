"""Adoption of pods after a scheduler restart, and revoking a task's pod, as plans.

A restarted scheduler lists the pods of schedulers that are gone
(:func:`adoption_selectors` says which lists) and takes them over by relabelling them
``airflow-worker=<me>`` (a label-only patch: spec patches are refused, #23885). The
relabel is guarded by the owner, not the version: a JSON patch whose ``test`` op checks
that ``airflow-worker`` still names the dead scheduler, so a status update between the
list and the patch cannot fail it, and of two rival adopters exactly one wins (the
other's test fails: 422, not tracked). Live pods are tracked as running again; pods that
had already Succeeded only need cleaning up. The provider decodes every such pod as a
task, so a running callback pod of a dead scheduler crashes the new scheduler on every
start (reference §7.2); here callback pods are adopted as callbacks, and a pod that
decodes to nothing, or whose owner label is missing or malformed, is reported, never
raised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from k8s_workloads.compat import InvalidVersion, VersionLike
from k8s_workloads.config import DecisionConfig
from k8s_workloads.decisions.actions import (
    Action,
    Decision,
    DeletePod,
    FreeSlot,
    Ignore,
    PatchLabels,
    TrackRunning,
)
from k8s_workloads.decisions.attempts import Attempts
from k8s_workloads.decisions.rules import cleanup_actions
from k8s_workloads.json_values import as_map as _map
from k8s_workloads.json_values import as_text as _str
from k8s_workloads.keys import RUN_ONCE_KEYS, CallbackKey, GenericKey, TaskInstanceKey, WorkloadKey
from k8s_workloads.pods.codec import InvalidAnnotations, annotations_to_key
from k8s_workloads.pods.labels import (
    AIRFLOW_WORKER_LABEL,
    DAG_ID_KEY,
    KUBERNETES_EXECUTOR_LABEL,
    MAP_INDEX_KEY,
    POD_EXECUTOR_DONE_LABEL,
    POD_REVOKED_LABEL,
    RUN_ID_KEY,
    TASK_ID_KEY,
    TRUE_LABEL_VALUE,
    PodSelector,
    completed_pods_adoption_selector,
    live_pods_adoption_selector,
    make_safe_label_value,
    orphaned_callback_pods_selector,
    own_completed_pods_selector,
)
from k8s_workloads.pods.validation import is_label_value
from k8s_workloads.states import (
    ExecutorPseudoState,
    WorkloadResult,
    result_for,
    state_class_for_key,
)
from k8s_workloads.watch.failures import DEFAULT_FATAL_PENDING_REASONS

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "AdoptionPlan",
    "SkippedPod",
    "adoption_selectors",
    "plan_adoption",
    "plan_relist",
    "plan_revocation",
]


@attrs.frozen
class SkippedPod:
    """A listed pod the plan leaves alone, and why."""

    pod_name: str
    namespace: str
    reason: str


@attrs.frozen
class AdoptionPlan:
    """What to patch and track, which results to feed the decisions, what was skipped.

    ``actions`` are all things to perform (relabels, :class:`TrackRunning`, clean-ups);
    the rest is what the caller keeps."""

    actions: tuple[Action, ...]
    adopted: frozenset[WorkloadKey]
    """Keys of live pods taken over: now running under this scheduler."""
    completed: tuple[WorkloadResult, ...]
    """Synthetic ``COMPLETED`` results for Succeeded pods taken over: clean them up."""
    skipped: tuple[SkippedPod, ...]
    """Pods no workload is taken over from: not executor pods, pods of live schedulers or
    of this one, done, not among the expected keys, or the Succeeded pods of callbacks
    already settled (which ``actions`` clean up)."""
    undecodable: tuple[SkippedPod, ...]
    """Pods the plan cannot read, each skipped on its own: annotations that name no
    workload, or an ``airflow-worker`` owner label missing or malformed (the relabel's
    guard needs the owner). Reported, never raised; the other pods are planned."""
    owned: frozenset[WorkloadKey] = frozenset()
    """Keys this scheduler holds already: in ``running`` when planned, or with a live pod
    labelled for this scheduler (adopted by an earlier try that Airflow retried)."""
    found: frozenset[WorkloadKey] = frozenset()
    """Keys with a pod in the listing, whatever became of it: adopted, completed, skipped
    (another owner, done, an earlier launch) or cleaned up. Their workload ran or runs:
    never to be run again."""

    def not_adopted(self, expected: Iterable[_Key]) -> list[_Key]:
        """Expected keys to run again: no pod of theirs was listed and this scheduler does
        not hold them — tasks for the scheduler to reset, callbacks for the executor to
        queue again (Airflow resets only task instances).

        A key with any pod listed is never among them: a live one is adopted (running it
        again would run it twice while its pod runs, apache/airflow#39088), a Succeeded
        one reported from the pod, a failed or done one was this workload's end (unlike
        the provider, which resets an expected task whose pod Succeeded). Once the
        relabels are performed,
        :meth:`~k8s_workloads.executor.ExecutorCore.not_adopted` gives the same answer
        with what the core holds then.
        """
        return [key for key in expected if key not in self.found and key not in self.owned]


_Key = TypeVar("_Key", bound=WorkloadKey)


def adoption_selectors(
    me: str | int,
    *,
    dead_scheduler_ids: Iterable[str | int] = (),
    alive_scheduler_ids: Iterable[str | int] = (),
    callbacks: bool = True,
) -> tuple[PodSelector, ...]:
    """The pod lists to make before :func:`plan_adoption`, in every watched namespace.

    * the live (not Succeeded, not done) pods of each scheduler in
      ``dead_scheduler_ids`` (those the orphaned task instances name);
    * with ``callbacks`` (Airflow 3.3+), the live callback pods owned by no live
      scheduler: Airflow never hands callbacks over, so their owners are not known;
    * the Succeeded, not-done pods owned by no live scheduler (apache/airflow#66400);
    * with ``me`` among ``dead_scheduler_ids`` (an executor restarted under the id it had:
      its earlier run died), that run's Succeeded pods too.

    ``alive_scheduler_ids`` are the other live schedulers (``me`` is left out on its
    own). A pod may be in two lists (it Succeeded between them): pass every list's
    pods to :func:`plan_adoption` as they come; it counts each pod once.
    """
    alive = tuple(alive_scheduler_ids)
    dead = sorted({str(job_id) for job_id in dead_scheduler_ids})
    selectors = [live_pods_adoption_selector(job_id) for job_id in dead]
    if callbacks:
        selectors.append(orphaned_callback_pods_selector(me, alive))
    selectors.append(completed_pods_adoption_selector(me, alive))
    if str(me) in dead:  # restarted under the same id: its earlier run's finished pods too
        selectors.append(own_completed_pods_selector(me))
    return tuple(selectors)


_COMPLETED = ExecutorPseudoState.COMPLETED


_OWNED_BY_ME = "owned by this scheduler"


def _not_to_adopt(labels: Mapping[str, Any], *, alive: set[str], me: str) -> str | None:
    """Why a pod is not taken over, judged by its labels alone (None: it may be)."""
    if labels.get(KUBERNETES_EXECUTOR_LABEL) != TRUE_LABEL_VALUE:
        return f"not an executor pod (no {KUBERNETES_EXECUTOR_LABEL}=True label)"
    owner = labels.get(AIRFLOW_WORKER_LABEL)
    if isinstance(owner, str) and owner in alive:
        return _OWNED_BY_ME if owner == me else f"owned by live scheduler {owner}"
    if labels.get(POD_EXECUTOR_DONE_LABEL) == TRUE_LABEL_VALUE:
        return "already marked done"
    return None


def _owner_problem(labels: Mapping[str, Any]) -> str | None:
    """Why the pod's owner label cannot guard its relabel, or None (it can)."""
    owner = labels.get(AIRFLOW_WORKER_LABEL)
    if owner is None or owner == "":
        return (
            f"no {AIRFLOW_WORKER_LABEL} label: the relabel is guarded by the owner, so the "
            "pod is not taken over"
        )
    if not isinstance(owner, str) or not is_label_value(owner):
        return (
            f"malformed {AIRFLOW_WORKER_LABEL} label {owner!r}: the relabel is guarded by "
            "the owner, so the pod is not taken over"
        )
    return None


def _newest_listings(pods: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Each listed pod once: of a pod seen in several lists, the newest listing.

    A pod that Succeeded between the live and the completed list is in both. Newer is the
    larger ``resourceVersion`` where both are integers (as every API server backed by
    etcd gives them); otherwise the later listing (lists are made one after the other).
    A pod without a name is kept as it is (the plan reports it).
    """
    chosen: dict[tuple[str | None, str], Mapping[str, Any]] = {}
    unnamed: list[Mapping[str, Any]] = []
    for pod in pods:
        metadata = _map(_map(pod).get("metadata"))
        name, namespace = metadata.get("name"), metadata.get("namespace")
        if not isinstance(name, str) or not name or not isinstance(namespace, str | None):
            unnamed.append(pod)
            continue
        where = (namespace, name)
        earlier = chosen.get(where)
        if earlier is None or not _older(metadata, _map(_map(earlier).get("metadata"))):
            chosen[where] = pod
    return [*chosen.values(), *unnamed]


def _older(metadata: Mapping[str, Any], than: Mapping[str, Any]) -> bool:
    mine, theirs = metadata.get("resourceVersion"), than.get("resourceVersion")
    if isinstance(mine, str) and isinstance(theirs, str) and mine.isdigit() and theirs.isdigit():
        return int(mine) < int(theirs)
    return False


@attrs.frozen
class _Listed:
    name: str
    namespace: str
    key: WorkloadKey
    phase: object
    resource_version: str
    owner: str
    """The ``airflow-worker`` label as listed: the relabel expects it still."""
    created: str
    """``metadata.creationTimestamp`` (RFC 3339, UTC: compares as text), or ""."""
    stuck: bool = False
    """Pending with a container that can never start (a fatal waiting reason): a failed
    launch, as far as telling launches apart goes."""


def _decode_listed(
    pods: Iterable[Mapping[str, Any]],
    *,
    alive: set[str],
    me: str,
    airflow_version: VersionLike | None,
    skipped: list[SkippedPod],
    undecodable: list[SkippedPod],
    owned: set[WorkloadKey],
    found: set[WorkloadKey],
) -> list[_Listed]:
    """The listed pods that may be taken over, decoded; the others go to the two lists.

    Every executor pod read adds its key to ``found``; live pods this scheduler owns
    already add theirs to ``owned`` too.
    """
    listed: list[_Listed] = []
    for pod in pods:
        metadata = _map(_map(pod).get("metadata"))
        name, namespace = _str(metadata.get("name")), _str(metadata.get("namespace"))
        labels = _map(metadata.get("labels"))
        not_ours = _not_to_adopt(labels, alive=alive, me=me)
        if not_ours is not None:
            skipped.append(SkippedPod(name, namespace, not_ours))
            if labels.get(KUBERNETES_EXECUTOR_LABEL) == TRUE_LABEL_VALUE:
                _note_found(pod, metadata, labels, airflow_version, found, owned, me=me)
            continue
        try:
            key = annotations_to_key(
                _map(metadata.get("annotations")), labels, airflow_version=airflow_version
            )
        except (InvalidAnnotations, InvalidVersion) as error:
            undecodable.append(SkippedPod(name, namespace, str(error)))
            continue
        found.add(key)
        problem = _owner_problem(labels)
        if problem is not None:
            undecodable.append(SkippedPod(name, namespace, problem))
            continue
        status = _map(_map(pod).get("status"))
        phase = status.get("phase")
        resource_version = _str(metadata.get("resourceVersion"))
        created = _str(metadata.get("creationTimestamp"))
        owner = _str(labels.get(AIRFLOW_WORKER_LABEL))
        stuck = phase == "Pending" and _cannot_start(status)
        listed.append(_Listed(name, namespace, key, phase, resource_version, owner, created, stuck))
    return listed


def _note_found(  # noqa: PLR0917 - private, one caller
    pod: Mapping[str, Any],
    metadata: Mapping[str, Any],
    labels: Mapping[str, Any],
    airflow_version: VersionLike | None,
    found: set[WorkloadKey],
    owned: set[WorkloadKey],
    *,
    me: str,
) -> None:
    """A pod not to take over still says its workload has a pod; a live one already
    relabelled for this scheduler (an earlier adoption try took it) is owned."""
    try:
        key = annotations_to_key(
            _map(metadata.get("annotations")), labels, airflow_version=airflow_version
        )
    except (InvalidAnnotations, InvalidVersion):
        return  # skipped for its labels already; an unreadable pod names no workload
    found.add(key)
    if (
        labels.get(AIRFLOW_WORKER_LABEL) == me
        and labels.get(POD_EXECUTOR_DONE_LABEL) != TRUE_LABEL_VALUE
        and _map(_map(pod).get("status")).get("phase") not in {"Succeeded", "Failed"}
    ):
        owned.add(key)


def _cannot_start(status: Mapping[str, Any]) -> bool:
    """Whether a container of a Pending pod waits for a reason it never recovers from
    (:data:`~k8s_workloads.watch.failures.DEFAULT_FATAL_PENDING_REASONS`; a pull held
    back by the kubelet's rate limit is not one)."""
    for field in ("initContainerStatuses", "containerStatuses"):
        statuses = status.get(field)
        for container in statuses if isinstance(statuses, list) else ():
            waiting = _map(_map(_map(container).get("state")).get("waiting"))
            reason, message = waiting.get("reason"), _str(waiting.get("message"))
            if reason in DEFAULT_FATAL_PENDING_REASONS and "pull QPS exceeded" not in message:
                return True
    return False


def _earlier_launches(listed: list[_Listed]) -> dict[tuple[str, str], str]:
    """Pods of earlier launches, by namespace and name, with the reason.

    A workload with several unfinished pods was requeued before the restart (its pod
    failed before the workload ran, and was kept); the record saying so died with the old
    scheduler. Adopting the earlier pod would report the workload failed while its
    current pod runs. The current launch is the newest pod (``creationTimestamp``); a
    Failed pod is also earlier than any pod of the workload that has not failed, and so is
    a Pending one that can never start (a failed pull: its launch failed, and was
    requeued, at the same second as the next one, perhaps).
    """
    unfinished = [pod for pod in listed if pod.phase != "Succeeded"]
    newest: dict[WorkloadKey, str] = {}
    for pod in unfinished:
        if pod.created > newest.get(pod.key, ""):
            newest[pod.key] = pod.created
    # Among the newest pods (a tie, or no timestamps), a live one is the current launch.
    live_newest = {
        pod.key
        for pod in unfinished
        if pod.phase != "Failed" and not pod.stuck and pod.created == newest.get(pod.key, "")
    }
    earlier: dict[tuple[str, str], str] = {}
    for pod in unfinished:
        where = (pod.namespace, pod.name)
        if pod.created < newest.get(pod.key, ""):
            earlier[where] = "an earlier launch: the workload has a newer pod"
        elif (pod.phase == "Failed" or pod.stuck) and pod.key in live_newest:
            earlier[where] = "a failed earlier launch: the workload has a live pod"
    return earlier


def plan_adoption(
    pods: Iterable[Mapping[str, Any]],
    *,
    me: str | int,
    alive_scheduler_ids: Iterable[str | int] = (),
    expected_task_keys: Iterable[TaskInstanceKey] | None = None,
    expected_callback_keys: Iterable[CallbackKey] | None = None,
    airflow_version: VersionLike | None = None,
    config: DecisionConfig = DecisionConfig(),  # frozen: one shared default is safe
    running: Iterable[WorkloadKey] = (),
    expected_generic_keys: Iterable[GenericKey] | None = None,
    reclaim: bool = False,
) -> AdoptionPlan:
    """Plan the takeover of listed pods (manifests) by scheduler ``me``.

    ``reclaim``: ``me``'s own earlier run died (an executor restarted under the id it
    had): its pods are taken over as a dead scheduler's, each relabel guarded by ``me``
    (unchanged, it confirms the pod is still this id's), and only ``running`` is owned.

    Pods owned by ``me`` or by a scheduler in ``alive_scheduler_ids`` are left alone
    (apache/airflow#66396), as are pods already marked done. A live task pod is adopted
    only when its key is in ``expected_task_keys`` (the orphaned task instances the
    scheduler handed over), if given. The scheduler never hands callbacks over: pass
    ``expected_callback_keys`` (the callbacks still active in Airflow) where the executor
    can read them, else every live callback pod is adopted — including a Failed one whose
    failure may already have been reported. Succeeded pods yield ``COMPLETED`` results —
    except a settled callback's (not among ``expected_callback_keys``): reporting it would
    overwrite the callback's end state, so its pod is only cleaned up (as ``config``
    says). ``expected_generic_keys`` are to generic workloads what
    ``expected_callback_keys`` are to callbacks (the executor's unfinished workloads; None:
    every live generic pod is adopted). Pods without the ``kubernetes_executor=True`` label
    are not the executor's.
    Of a workload's unfinished pods only the current launch is adopted: older ones
    (``creationTimestamp``) and Failed ones beside a live one were requeued launches,
    whose failure is not the workload's. They are retired, so that no later adoption
    takes one for the workload's once the current launch is a live scheduler's: a Failed
    one labelled done (guarded by its owner), one that has not ended deleted.

    ``pods`` are the listings of :func:`adoption_selectors`, as they come: a pod in two
    lists counts once (the newer ``resourceVersion``). Each relabel expects the listed
    owner (:attr:`~k8s_workloads.decisions.actions.PatchLabels.expect`): a pod another scheduler
    took over since the list fails its patch and is not tracked here. A pod whose owner
    label is missing or malformed cannot be guarded so: it goes to ``undecodable``, and
    the rest are planned.

    ``running`` are the keys this scheduler tracks already. Airflow retries adoption (a
    database error on the first try): a key in ``running``, or with a live pod already
    labelled for ``me``, is owned, never adopted twice, and never among
    :meth:`AdoptionPlan.not_adopted` (the provider's
    ``test_try_adopt_already_adopted_task_instances``).
    """
    my_label = make_safe_label_value(str(me))
    alive = {make_safe_label_value(str(job_id)) for job_id in alive_scheduler_ids}
    if not reclaim:
        alive.add(my_label)
    else:
        alive.discard(my_label)
    expected = None if expected_task_keys is None else set(expected_task_keys)
    expected_callbacks = None if expected_callback_keys is None else set(expected_callback_keys)
    expected_generic = None if expected_generic_keys is None else set(expected_generic_keys)
    actions: list[Action] = []
    adopted: set[WorkloadKey] = set()
    completed: list[WorkloadResult] = []
    skipped: list[SkippedPod] = []
    undecodable: list[SkippedPod] = []
    owned: set[WorkloadKey] = set(running)
    found: set[WorkloadKey] = set()
    listed = _decode_listed(
        _newest_listings(pods), alive=alive, me=my_label, airflow_version=airflow_version,
        skipped=skipped, undecodable=undecodable, owned=owned, found=found,
    )  # fmt: skip
    earlier = _earlier_launches(listed)
    for pod in listed:
        name, namespace, key = pod.name, pod.namespace, pod.key
        if (namespace, name) in earlier:
            retire, how = _retire(pod)
            actions.append(retire)
            skipped.append(SkippedPod(name, namespace, f"{earlier[namespace, name]}; {how}"))
            continue
        succeeded = pod.phase == "Succeeded"
        if not succeeded and key in owned:
            skipped.append(SkippedPod(name, namespace, "already owned by this scheduler"))
            continue
        unexpected, kind = _unexpected(key, expected, expected_callbacks, expected_generic)
        if not succeeded and unexpected:
            reason = f"not among the {kind} to adopt"
            if pod.phase == "Failed" and not isinstance(key, TaskInstanceKey):
                # Its workload ended (an inactive callback, a generic workload not
                # expected: those lists are whole): cleaned up as its dead owner would
                # have. A task's list is only the batch Airflow handed over (a row
                # locked meanwhile is left out): its pod waits for a later adoption.
                actions.extend(cleanup_actions(_failed(key, name, namespace, pod), config))
                reason += "; a failed pod whose workload ended: cleaned up"
            skipped.append(SkippedPod(name, namespace, reason))
            continue
        # Guarded by the listed owner, not the listed version: a status update meanwhile
        # does not fail it; a pod another scheduler took over fails the test op (422)
        # and is not tracked here as well.
        actions.append(
            PatchLabels(
                name,
                namespace,
                {AIRFLOW_WORKER_LABEL: my_label},
                expect={AIRFLOW_WORKER_LABEL: pod.owner},
            )
        )
        if succeeded:
            result = result_for(key, _COMPLETED, name, namespace, pod.resource_version)
            if unexpected and isinstance(key, RUN_ONCE_KEYS):
                actions.extend(cleanup_actions(result, config))
                what = "callback" if isinstance(key, CallbackKey) else "generic workload"
                reason = f"{what} already settled: its Succeeded pod is cleaned up, not reported"
                skipped.append(SkippedPod(name, namespace, reason))
            else:
                completed.append(result)
        elif key not in adopted:
            actions.append(TrackRunning(key))
            adopted.add(key)
    return AdoptionPlan(
        tuple(actions),
        frozenset(adopted),
        tuple(completed),
        tuple(skipped),
        tuple(undecodable),
        frozenset(owned),
        frozenset(found),
    )


def _retire(pod: _Listed) -> tuple[Action, str]:
    """An earlier launch is taken out of every later adoption, so none takes it for its
    workload's once the current launch has gone elsewhere: labelled done if it failed
    (kept, as its dead owner kept it; guarded by that owner), deleted if it has not ended
    (it waits to start: once its cause passes it would run the workload again)."""
    if pod.phase != "Failed":
        return DeletePod(pod.name, pod.namespace), "deleted"
    done = {POD_EXECUTOR_DONE_LABEL: TRUE_LABEL_VALUE}
    guard = {AIRFLOW_WORKER_LABEL: pod.owner}
    return PatchLabels(pod.name, pod.namespace, done, expect=guard), "labelled done"


def _unexpected(
    key: WorkloadKey,
    tasks: set[TaskInstanceKey] | None,
    callbacks: set[CallbackKey] | None,
    generic: set[GenericKey] | None,
) -> tuple[bool, str]:
    """Whether ``key`` is left out of the expected keys of its kind (None: all expected),
    and what that kind's expected keys are, for the reason."""
    if isinstance(key, TaskInstanceKey):
        return tasks is not None and key not in tasks, "task instances"
    if isinstance(key, CallbackKey):
        return callbacks is not None and key not in callbacks, "active callbacks"
    return generic is not None and key not in generic, "generic workloads"


def _failed(key: WorkloadKey, name: str, namespace: str, pod: _Listed) -> WorkloadResult:
    failed = state_class_for_key(key).FAILED
    return result_for(key, failed, name, namespace, pod.resource_version)


def plan_revocation(
    key: TaskInstanceKey,
    pods: Iterable[Mapping[str, Any]],
    *,
    me: str | int,
    attempts: Attempts = Attempts(),
) -> Decision:
    """Revoke a task instance: mark its pod revoked, then delete it; free its slot.

    Pods are matched on ``dag_id``, ``task_id``, ``run_id`` and ``map_index`` annotations
    among this scheduler's pods (the provider's rule: any try of the task instance). The
    revoked label comes first so the watcher ignores the deletion. The decision drops the
    key's attempt record; where no pod is found, ``ignored`` says so. Never raises.
    """
    my_label = make_safe_label_value(str(me))
    actions: list[Action] = [FreeSlot(key)]
    for pod in pods:
        metadata = _map(_map(pod).get("metadata"))
        if _map(metadata.get("labels")).get(AIRFLOW_WORKER_LABEL) != my_label:
            continue
        annotations = _map(metadata.get("annotations"))
        map_index = annotations.get(MAP_INDEX_KEY, "-1")
        if (
            # The provider's pod map leaves out pods without a run_id annotation.
            isinstance(annotations.get(RUN_ID_KEY), str)
            and annotations.get(DAG_ID_KEY) == key.dag_id
            and annotations.get(TASK_ID_KEY) == key.task_id
            and annotations.get(RUN_ID_KEY) == key.run_id
            and map_index == str(key.map_index)
        ):
            name, namespace = _str(metadata.get("name")), _str(metadata.get("namespace"))
            actions.append(PatchLabels(name, namespace, {POD_REVOKED_LABEL: TRUE_LABEL_VALUE}))
            actions.append(DeletePod(name, namespace))
    ignored = Ignore(f"no pod of this scheduler runs {key!r}") if len(actions) == 1 else None
    return Decision(tuple(actions), attempts.without(key), ignored)


def plan_relist(
    running: Iterable[WorkloadKey],
    listed_pods: Iterable[Mapping[str, Any]],
    *,
    waiting: Iterable[WorkloadKey] = (),
    attempts: Attempts = Attempts(),
    airflow_version: VersionLike | None = None,
) -> tuple[WorkloadResult, ...]:
    """``VANISHED`` results for running workloads whose pods a re-list no longer shows.

    After a 410 the watch restarts from a fresh list, which only shows pods that exist: a
    pod that finished and was deleted in the gap is never reported, and its workload
    would stay running forever (the provider has the same gap). Feed these results to
    :func:`~k8s_workloads.decisions.results.decide`. ``waiting`` are keys whose pods are queued
    for creation (no pod yet, and none missed). ``attempts`` (the executor's records)
    says which listed pods belong to earlier, requeued launches: a kept Failed pod of an
    earlier launch does not stand for the current one, and each result records the
    launch it is about, so that handled late, after a requeue, it is ignored as stale.
    """
    seen: set[WorkloadKey] = set(waiting)
    for pod in listed_pods:
        metadata = _map(_map(pod).get("metadata"))
        try:
            key = annotations_to_key(
                _map(metadata.get("annotations")),
                _map(metadata.get("labels")),
                airflow_version=airflow_version,
            )
        except (InvalidAnnotations, InvalidVersion):
            continue
        attempt = attempts.get(key)
        if attempt is not None and attempt.was_requeued(
            _str(metadata.get("name")), _str(metadata.get("uid"))
        ):
            continue
        seen.add(key)
    vanished: list[WorkloadResult] = []
    for key in running:
        if key in seen:
            continue
        attempt = attempts.get(key)
        launch = None if attempt is None else attempt.attempts
        gone = ExecutorPseudoState.VANISHED
        vanished.append(result_for(key, gone, "", "", "", launch=launch))
    return tuple(vanished)
