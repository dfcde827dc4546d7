"""Write the pod watch-stream fixtures of ``tests/data`` and what each event resolves to.

    .venv/bin/python tests/data/make_streams.py            # rewrite tests/data
    .venv/bin/python tests/data/make_streams.py --out DIR  # write elsewhere (the test does)

Every executor pod is built by ``k8s_workloads.pods`` (``construct_task_pod`` /
``construct_callback_pod``) over a pod template, with its workload in a Secret
(``k8s_workloads.pods.payload``), then given what the API server adds (uid, resourceVersion,
creationTimestamp, spec defaults, the service-account token volume) and, event by event,
the status the scheduler and the kubelet write. Events of several pods interleave in time
order, and resource versions grow along the stream, as in a real watch. A seeded
``random.Random`` per stream makes every run write the same bytes.

Streams are JSON lines (one event per line, in the API server's field order), except
``kubectl_watch.json``: ``kubectl get pods --watch --output-watch-events -o json``
output, pretty-printed objects one after the other. Next to each stream,
``<name>.expected.jsonl`` holds one line per event: the outcome, state, key, pod and a
substring of the reason (and, for failures, the classification) that
``resolve_event`` must give with ``ResolverConfig(airflow_version="3.3.2")``.

The expectations are written by hand below, next to the event they belong to, from the
provider's decision table (``k8s_workloads.watch.pod_rules.DECISION_TABLE``; reference §4.2) and
the failure-classification rules (``k8s_workloads.watch.failures.classify_failure``); this
script never calls ``resolve_event``.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import hashlib
import json
import random
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from k8s_workloads.pods import construct_callback_pod, construct_task_pod
from k8s_workloads.pods.labels import create_unique_id
from k8s_workloads.pods.payload import attach_secure_payload, secure_workload_payload

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent.parent / "src" / "k8s_workloads" / "examples" / "watch_events.jsonl"
SAMPLE_STREAM = "sample"
"""The stream also bundled as the package's ``examples/watch_events.jsonl``."""

VERSION = "3.3.2"
NAMESPACE = "airflow"
SCHEDULER_JOB_ID = 42
START = datetime.datetime(2026, 6, 7, 1, 50, 0, tzinfo=datetime.timezone.utc)
IMAGE = "apache/airflow:3.3.2"
MANUAL_RUN = "manual__2026-06-07T01:50:23+00:00"
SCHEDULED_RUN = "scheduled__2026-06-07T00:00:00+00:00"

TEMPLATE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "placeholder-name", "labels": {"app.kubernetes.io/part-of": "airflow"}},
    "spec": {
        "serviceAccountName": "airflow-worker",
        "restartPolicy": "Never",
        "securityContext": {"runAsUser": 50000, "runAsGroup": 0, "fsGroup": 0},
        "containers": [
            {
                "name": "base",
                "image": IMAGE,
                "imagePullPolicy": "IfNotPresent",
                "env": [
                    {"name": "AIRFLOW__CORE__EXECUTOR", "value": "LocalExecutor"},
                    {
                        "name": "AIRFLOW__CORE__EXECUTION_API_SERVER_URL",
                        "value": "http://airflow-api-server:8080/execution/",
                    },
                ],
                "resources": {
                    "requests": {"cpu": "500m", "memory": "1Gi"},
                    "limits": {"memory": "2Gi"},
                },
                "volumeMounts": [{"name": "logs", "mountPath": "/opt/airflow/logs"}],
            }
        ],
        "volumes": [{"name": "logs", "emptyDir": {}}],
    },
}

Json = dict[str, Any]


# --- expectations ------------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """What ``resolve_event`` must say about one event (hand-written from the rules)."""

    outcome: str
    state: str | None
    reason: str
    """A substring of the resolution's reason."""
    classification: tuple[str, bool, str | None] | None = None
    """(kind, retryable, reason) of a failure's classification, when checked."""


def pending(reason: str = "pending") -> Expect:
    """Table row 4c: a Pending pod with no fatal waiting reason reports nothing."""
    return Expect("pending", None, reason)


TASK_RUNNING = Expect("running", None, "running")
"""Row 7b: the provider reports nothing for a running task pod."""
CALLBACK_RUNNING = Expect("running", "running", "running")
"""Row 7b for callbacks: CallbackState.RUNNING (report_callback_running, the default)."""
TASK_SUCCEEDED = Expect("succeeded", "lookup", "succeeded")
"""Row 6: a task's state is read from Airflow (upstream ``None``: LOOKUP)."""
CALLBACK_SUCCEEDED = Expect("succeeded", "success", "succeeded")
"""Row 6 for callbacks: the pod exiting 0 is the callback's success."""
DELETED_BEFORE_START = Expect("deleted_before_start", None, "deleted before it started")
"""Row 4a: a Pending pod deleted gracefully: nothing reported."""
ADOPTED = Expect("adopted", "adopted", "adopted by another scheduler")
"""Row 2: DELETED without a deletion timestamp: the pod left this scheduler's selector."""
REVOKED = Expect("revoked", None, "revoked")
"""Row 1: the executor revoked the pod; every event of it is ignored."""
FOREIGN = Expect("foreign", None, "not a KubernetesExecutor pod")


def failed(state: str, reason: str, kind: str, retryable: bool, cause: str | None) -> Expect:
    """Rows 3, 4b, 5 and 7a: a failure, with its classification."""
    return Expect("failed", state, reason, (kind, retryable, cause))


def app_failure(state: str, reason: str, cause: str) -> Expect:
    return failed(state, reason, "application", False, cause)


def infra_failure(state: str, reason: str, cause: str) -> Expect:
    return failed(state, reason, "infrastructure", True, cause)


# --- the stream --------------------------------------------------------------------------


def ts(at: float) -> str:
    moment = START + datetime.timedelta(seconds=at)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Step:
    at: float
    order: int
    event: Json
    expect: Expect
    key: Json | None
    pod: str | None


@dataclass
class Stream:
    """The events of one fixture file, collected out of order and sorted by time."""

    name: str
    rng: random.Random = field(init=False)
    steps: list[Step] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(f"k8s-workloads fixture stream {self.name}")

    def add(
        self, at: float, event: Json, expect: Expect, key: Json | None, pod: str | None
    ) -> None:
        self.steps.append(Step(at, len(self.steps), event, expect, key, pod))

    def hex(self, digits: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(digits))

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def callback_id(self, at: float) -> str:
        """A UUIDv7, as Airflow gives callbacks: milliseconds since the epoch first."""
        millis = int((START + datetime.timedelta(seconds=at)).timestamp() * 1000)
        value = (millis << 80) | (0x7 << 76) | (self.rng.getrandbits(12) << 64)
        value |= (0b10 << 62) | self.rng.getrandbits(62)
        return str(uuid.UUID(int=value))

    def resolved(self) -> list[Step]:
        """The steps in time order, each object given the resource version of its write."""
        first = version = 480_000 + self.rng.randrange(10_000)
        steps = sorted(self.steps, key=lambda step: (step.at, step.order))
        for step in steps:
            obj = step.event["object"]
            if step.event["type"] == "ERROR":
                if obj.get("code") == 410:
                    obj["message"] = f"too old resource version: {first} ({version + 3})"
                continue
            if step.event["type"] != "BOOKMARK":
                version += self.rng.randint(1, 37)
            obj["metadata"]["resourceVersion"] = str(version)
        return steps


# --- pods --------------------------------------------------------------------------------

_METADATA_ORDER = (
    "name", "generateName", "namespace", "uid", "resourceVersion", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
)  # fmt: skip
_SPEC_ORDER = (
    "volumes", "initContainers", "containers", "restartPolicy", "terminationGracePeriodSeconds",
    "dnsPolicy", "serviceAccountName", "serviceAccount", "nodeName", "securityContext",
    "schedulerName", "tolerations", "priority", "enableServiceLinks", "preemptionPolicy",
)  # fmt: skip
_CONTAINER_ORDER = (
    "name", "image", "command", "args", "env", "resources", "volumeMounts",
    "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy",
)  # fmt: skip
_STATUS_ORDER = (
    "phase", "conditions", "message", "reason", "hostIP", "hostIPs", "podIP", "podIPs",
    "startTime", "initContainerStatuses", "containerStatuses", "qosClass",
)  # fmt: skip
_CONDITION_ORDER = (
    "DisruptionTarget", "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
    "PodScheduled",
)  # fmt: skip


def _ordered(mapping: Json, order: tuple[str, ...]) -> Json:
    first = {name: mapping[name] for name in order if name in mapping}
    return {**first, **{name: value for name, value in mapping.items() if name not in first}}


def _api_defaults(pod: Json, stream: Stream) -> Json:
    """What the API server's defaulting and admission add to a created pod."""
    spec = pod["spec"]
    token_volume = f"kube-api-access-{stream.hex(5)}"
    spec.setdefault("volumes", []).append(
        {
            "name": token_volume,
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                    {
                        "downwardAPI": {
                            "items": [
                                {
                                    "path": "namespace",
                                    "fieldRef": {
                                        "apiVersion": "v1",
                                        "fieldPath": "metadata.namespace",
                                    },
                                }
                            ]
                        }
                    },
                ],
                "defaultMode": 420,
            },
        }
    )
    for group in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(group, [])):
            container.setdefault("resources", {})
            container.setdefault("volumeMounts", []).append(
                {
                    "name": token_volume,
                    "readOnly": True,
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                }
            )
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("imagePullPolicy", "IfNotPresent")
            spec[group][index] = _ordered(container, _CONTAINER_ORDER)
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("serviceAccountName", "default")
    spec["serviceAccount"] = spec["serviceAccountName"]
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec["tolerations"] = [
        {
            "key": f"node.kubernetes.io/{taint}",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        }
        for taint in ("not-ready", "unreachable")
    ]
    spec.setdefault("priority", 0)
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    return pod


def _qos_class(pod: Json) -> str:
    resources = [c.get("resources", {}) for c in pod["spec"]["containers"]]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    for entry in resources:
        limits, requests = entry.get("limits", {}), entry.get("requests", {})
        for kind in ("cpu", "memory"):
            if kind not in limits or requests.get(kind, limits[kind]) != limits[kind]:
                return "Burstable"
    return "Guaranteed"


def _qualified(image: str) -> str:
    """An image reference as containerd reports it: registry and repository spelled out."""
    first = image.split("/", 1)[0]
    if "/" in image and ("." in first or ":" in first):
        return image
    return f"docker.io/{image}" if "/" in image else f"docker.io/library/{image}"


def _image_id(image: str) -> str:
    repository = _qualified(image).rsplit(":", 1)[0]
    return f"{repository}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def _condition(kind: str, status: str, at: float, reason: str | None, message: str | None) -> Json:
    condition: Json = {
        "type": kind,
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": ts(at),
    }
    if reason is not None:
        condition["reason"] = reason
    if message is not None:
        condition["message"] = message
    return condition


class Life:
    """One pod over time: its manifest and the status the control plane writes on it."""

    def __init__(
        self, stream: Stream, manifest: Json, key: Json | None, *, at: float, node: str
    ) -> None:
        self.stream = stream
        self.key = key
        self.node = node
        manifest["metadata"]["uid"] = stream.uid()
        manifest["metadata"]["creationTimestamp"] = ts(at)
        self.manifest = _api_defaults(manifest, stream)
        self.phase = "Pending"
        self.reason: str | None = None
        self.message: str | None = None
        self.qos = _qos_class(self.manifest)
        self.conditions: dict[str, Json] = {}
        self.since: dict[str, float] = {}
        self.ips: tuple[str, str] | None = None
        self.host: str | None = None
        self.started: float | None = None
        self.statuses: dict[str, Json] = {}
        self.init_statuses: dict[str, Json] = {}

    @property
    def name(self) -> str:
        name: str = self.manifest["metadata"]["name"]
        return name

    @property
    def metadata(self) -> Json:
        metadata: Json = self.manifest["metadata"]
        return metadata

    def _containers(self, group: str) -> list[Json]:
        containers: list[Json] = self.manifest["spec"].get(group, [])
        return containers

    def status(self) -> Json:
        status: Json = {"phase": self.phase}
        if self.conditions:
            status["conditions"] = [
                self.conditions[kind] for kind in _CONDITION_ORDER if kind in self.conditions
            ]
        if self.message is not None:
            status["message"] = self.message
        if self.reason is not None:
            status["reason"] = self.reason
        if self.host is not None:
            status["hostIP"] = self.host
            status["hostIPs"] = [{"ip": self.host}]
        if self.ips is not None:
            status["podIP"] = self.ips[1]
            status["podIPs"] = [{"ip": self.ips[1]}]
        if self.started is not None:
            status["startTime"] = ts(self.started)
        if self.init_statuses:
            status["initContainerStatuses"] = [
                self.init_statuses[c["name"]] for c in self._containers("initContainers")
            ]
        if self.statuses:
            status["containerStatuses"] = [
                self.statuses[c["name"]] for c in self._containers("containers")
            ]
        status["qosClass"] = self.qos
        return _ordered(status, _STATUS_ORDER)

    def emit(self, kind: str, at: float, expect: Expect) -> None:
        obj: Json = {"kind": "Pod", "apiVersion": "v1"}
        metadata = copy.deepcopy(self.metadata)
        metadata["resourceVersion"] = ""  # set when the stream is put in order
        obj["metadata"] = _ordered(metadata, _METADATA_ORDER)
        obj["spec"] = _ordered(copy.deepcopy(self.manifest["spec"]), _SPEC_ORDER)
        obj["status"] = self.status()
        self.stream.add(at, {"type": kind, "object": obj}, expect, self.key, self.name)

    # What the control plane does; each returns self, to emit the event that follows.

    def condition(
        self,
        kind: str,
        status: str,
        at: float,
        reason: str | None = None,
        message: str | None = None,
    ) -> Life:
        old = self.conditions.get(kind)
        if old is None or old["status"] != status:  # the time of the last change of status
            self.since[kind] = at
        self.conditions[kind] = _condition(kind, status, self.since[kind], reason, message)
        return self

    def unschedulable(self, at: float, message: str) -> Life:
        return self.condition("PodScheduled", "False", at, "Unschedulable", message)

    def scheduled(self, at: float) -> Life:
        self.manifest["spec"]["nodeName"] = self.node
        return self.condition("PodScheduled", "True", at)

    def _container_status(self, container: Json, state: Json, *, image_id: str = "") -> Json:
        return {
            "name": container["name"],
            "state": state,
            "lastState": {},
            "ready": False,
            "restartCount": 0,
            "image": _qualified(container.get("image") or IMAGE),
            "imageID": image_id,
            "started": False,
        }

    def kubelet_admitted(self, at: float) -> Life:
        """The kubelet has the pod: it starts the sandbox; containers wait to be created."""
        digest = hashlib.sha256(self.node.encode()).digest()
        self.host = f"10.0.{16 + digest[0] % 16}.{2 + digest[1] % 248}"
        self.started = at
        inits = [c["name"] for c in self._containers("initContainers")]
        mains = [c["name"] for c in self._containers("containers")]
        self.condition("PodReadyToStartContainers", "False", at)
        if inits:
            self.condition(
                "Initialized",
                "False",
                at,
                "ContainersNotInitialized",
                f"containers with incomplete status: [{' '.join(inits)}]",
            )
        else:
            self.condition("Initialized", "True", at)
        unready = f"containers with unready status: [{' '.join(mains)}]"
        self.condition("Ready", "False", at, "ContainersNotReady", unready)
        self.condition("ContainersReady", "False", at, "ContainersNotReady", unready)
        for container in self._containers("initContainers"):
            self.init_statuses[container["name"]] = self._container_status(
                container, {"waiting": {"reason": "PodInitializing"}}
            )
        waiting = "PodInitializing" if inits else "ContainerCreating"
        for container in self._containers("containers"):
            self.statuses[container["name"]] = self._container_status(
                container, {"waiting": {"reason": waiting}}
            )
        return self

    def sandbox_ready(self, at: float) -> Life:
        rng = self.stream.rng
        self.ips = (self.host or "", f"10.244.{rng.randrange(1, 64)}.{rng.randrange(2, 250)}")
        return self.condition("PodReadyToStartContainers", "True", at)

    def waiting(self, name: str, at: float, reason: str, message: str | None = None) -> Life:
        del at  # the kubelet records no time on a waiting state
        statuses = self.init_statuses if name in self.init_statuses else self.statuses
        state: Json = {"reason": reason}
        if message is not None:
            state["message"] = message
        statuses[name] = {**statuses[name], "state": {"waiting": state}}
        return self

    def run(self, name: str, at: float) -> Life:
        """A container starts (no probes: ready at once); the pod runs once all do."""
        is_init = name in self.init_statuses
        container = next(
            c
            for c in self._containers("initContainers" if is_init else "containers")
            if c["name"] == name
        )
        image_id = _image_id(container.get("image") or IMAGE)
        container_id = f"containerd://{self.stream.hex(64)}"
        statuses = self.init_statuses if is_init else self.statuses
        statuses[name] = {
            **statuses[name],
            "state": {"running": {"startedAt": ts(at)}},
            "ready": not is_init,
            "imageID": image_id,
            "containerID": container_id,
            "started": True,
        }
        statuses[name] = _ordered(
            statuses[name],
            ("name", "state", "lastState", "ready", "restartCount", "image", "imageID",
             "containerID", "started"),
        )  # fmt: skip
        if not is_init and all(s["ready"] for s in self.statuses.values()):
            self.phase = "Running"
            self.condition("Ready", "True", at)
            self.condition("ContainersReady", "True", at)
        return self

    def terminate(
        self, name: str, at: float, exit_code: int, reason: str, message: str | None = None
    ) -> Life:
        """A container exits; with ``restartPolicy: Never`` the pod ends with its last one."""
        is_init = name in self.init_statuses
        statuses = self.init_statuses if is_init else self.statuses
        old = statuses[name]
        running = old["state"].get("running", {})
        terminated: Json = {"exitCode": exit_code, "reason": reason}
        if message is not None:
            terminated["message"] = message
        terminated["startedAt"] = running.get("startedAt", ts(at))
        terminated["finishedAt"] = ts(at)
        if "containerID" in old:
            terminated["containerID"] = old["containerID"]
        statuses[name] = {
            **old,
            "state": {"terminated": terminated},
            "ready": False,
            "started": False,
        }
        if is_init and exit_code == 0:
            if all("terminated" in s["state"] for s in self.init_statuses.values()):
                self.condition("Initialized", "True", at)
                for status in self.statuses.values():
                    status["state"] = {"waiting": {"reason": "ContainerCreating"}}
            return self
        if is_init:  # a failed init container fails the whole pod (restartPolicy Never)
            self.phase = "Failed"
            self.condition("Ready", "False", at, "PodFailed")
            self.condition("ContainersReady", "False", at, "PodFailed")
            self.condition("PodReadyToStartContainers", "False", at)
            return self
        if all("terminated" in s["state"] for s in self.statuses.values()):
            codes = [s["state"]["terminated"]["exitCode"] for s in self.statuses.values()]
            self.phase = "Succeeded" if not any(codes) else "Failed"
            done = "PodCompleted" if self.phase == "Succeeded" else "PodFailed"
            self.condition("Ready", "False", at, done)
            self.condition("ContainersReady", "False", at, done)
            self.condition("PodReadyToStartContainers", "False", at)
        return self

    def fail_pod(self, at: float, reason: str, message: str) -> Life:
        """The kubelet (or a provider) fails the pod itself: eviction, ProviderFailed."""
        del at
        self.phase = "Failed"
        self.reason = reason
        self.message = message
        return self

    def deleting(self, at: float, grace: int = 30) -> Life:
        self.metadata["deletionTimestamp"] = ts(at + grace)
        self.metadata["deletionGracePeriodSeconds"] = grace
        return self

    def gone(self, at: float) -> Life:
        """The last write before DELETED: the kubelet confirms with a zero grace period."""
        self.metadata.setdefault("deletionTimestamp", ts(at))
        self.metadata["deletionGracePeriodSeconds"] = 0
        return self

    def label(self, name: str, value: str) -> Life:
        self.metadata["labels"][name] = value
        return self


def _secure(pod: Json, workload: Json) -> Json:
    metadata = pod["metadata"]
    payload = secure_workload_payload(
        workload, pod_name=metadata["name"], namespace=metadata["namespace"]
    )
    return attach_secure_payload(pod, payload)


def task_key(
    dag_id: str, task_id: str, run_id: str | None, try_number: int, map_index: int
) -> Json:
    return {
        "kind": "task",
        "dag_id": dag_id,
        "task_id": task_id,
        "run_id": run_id,
        "try_number": try_number,
        "map_index": map_index,
    }


def task(
    stream: Stream,
    dag_id: str,
    task_id: str,
    *,
    at: float,
    run_id: str = MANUAL_RUN,
    try_number: int = 1,
    map_index: int = -1,
    node: str = "ip-10-0-17-84.eu-west-1.compute.internal",
    override: Json | None = None,
    template: Json | None = None,
) -> Life:
    """A task instance's pod, as the executor creates it."""
    pod = construct_task_pod(
        namespace=NAMESPACE,
        scheduler_job_id=SCHEDULER_JOB_ID,
        pod_id=create_unique_id(dag_id, task_id, rng=stream.rng),
        dag_id=dag_id,
        task_id=task_id,
        run_id=run_id,
        try_number=try_number,
        map_index=map_index,
        kube_image=None,
        args=["placeholder"],
        airflow_version=VERSION,
        base_worker_pod=TEMPLATE if template is None else template,
        pod_override=override,
    )
    workload = {
        "type": "ExecuteTask",
        "token": "not-a-real-token",
        "ti": {"dag_id": dag_id, "task_id": task_id, "run_id": run_id},
    }
    key = task_key(dag_id, task_id, run_id, try_number, map_index)
    return Life(stream, _secure(pod, workload), key, at=at, node=node)


def callback(
    stream: Stream,
    *,
    at: float,
    dag_id: str = "etl",
    run_id: str = SCHEDULED_RUN,
    node: str = "ip-10-0-17-84.eu-west-1.compute.internal",
) -> Life:
    """A callback workload's pod (Airflow 3.3+), as the executor creates it."""
    callback_id = stream.callback_id(at)
    pod = construct_callback_pod(
        callback_id=callback_id,
        namespace=NAMESPACE,
        scheduler_job_id=SCHEDULER_JOB_ID,
        kube_image=None,
        args=["placeholder"],
        airflow_version=VERSION,
        base_worker_pod=TEMPLATE,
        dag_id=dag_id,
        run_id=run_id,
        rng=stream.rng,
    )
    workload = {
        "type": "ExecuteCallback",
        "token": "not-a-real-token",
        "callback": {"id": callback_id},
    }
    key = {"kind": "callback", "id": callback_id}
    return Life(stream, _secure(pod, workload), key, at=at, node=node)


# --- lifecycles --------------------------------------------------------------------------


def start(
    life: Life,
    at: float,
    *,
    running: Expect,
    scheduled_step: bool = True,
    wait: Expect | None = None,
) -> float:
    """ADDED, (scheduled), ContainerCreating, Running; returns the time it runs from."""
    wait = wait or pending()
    life.emit("ADDED", at, wait)
    if scheduled_step:
        life.scheduled(at + 0.2).emit("MODIFIED", at + 0.2, wait)
    else:
        life.scheduled(at)
    life.kubelet_admitted(at + 1).emit("MODIFIED", at + 1, wait)
    life.sandbox_ready(at + 3).run("base", at + 4).emit("MODIFIED", at + 4, running)
    return at + 4


def finish_deleted(life: Life, at: float, expect: Expect, *, modified_step: bool = True) -> None:
    """The executor deletes a finished pod: MODIFIED with deletionTimestamp, then DELETED."""
    if modified_step:
        life.deleting(at).emit("MODIFIED", at, expect)
    else:
        life.deleting(at)
    life.gone(at + 1).emit("DELETED", at + 1, expect)


def succeed(
    life: Life, at: float, duration: float, *, callback_pod: bool = False, short: bool = False
) -> None:
    running = CALLBACK_RUNNING if callback_pod else TASK_RUNNING
    done = CALLBACK_SUCCEEDED if callback_pod else TASK_SUCCEEDED
    ran = start(life, at, running=running, scheduled_step=not short)
    end = ran + duration
    life.terminate("base", end, 0, "Completed").emit("MODIFIED", end, done)
    finish_deleted(life, end + 2, done, modified_step=not short)


OOM = app_failure(
    "failed", "Pod failed because of OOMKilled (container base, exit code 137)", "OOMKilled"
)
EXIT_1 = app_failure("failed", "Pod failed because of Error (container base, exit code 1)", "Error")


def sample(stream: Stream) -> None:
    """A DAG run in brief: a task succeeds, one is OOM-killed, two callbacks."""
    extract = task(stream, "etl", "extract", at=0)
    succeed(extract, 0, 41, short=True)
    load = task(stream, "etl", "load", at=50, try_number=2)
    ran = start(load, 50, running=TASK_RUNNING, scheduled_step=False)
    load.terminate("base", ran + 95, 137, "OOMKilled").emit("MODIFIED", ran + 95, OOM)
    finish_deleted(load, ran + 97, OOM, modified_step=False)
    alert = callback(stream, at=60)
    succeed(alert, 60, 6, callback_pod=True, short=True)
    broken = callback(stream, at=70, dag_id="reporting", run_id=MANUAL_RUN)
    ran = start(broken, 70, running=CALLBACK_RUNNING, scheduled_step=False)
    failure = app_failure(
        "failed", "Pod failed because of Error (container base, exit code 1)", "Error"
    )
    broken.terminate("base", ran + 3, 1, "Error").emit("MODIFIED", ran + 3, failure)
    finish_deleted(broken, ran + 5, failure, modified_step=False)


def task_success(stream: Stream) -> None:
    """Two DAG runs succeed: plain, mapped and retried tasks, on two nodes."""
    other = "ip-10-0-29-7.eu-west-1.compute.internal"
    succeed(task(stream, "etl", "extract", at=0), 0, 38)
    for index in range(4):
        node = other if index % 2 else "ip-10-0-17-84.eu-west-1.compute.internal"
        life = task(stream, "etl", "transform", at=50 + index * 0.4, map_index=index, node=node)
        succeed(life, 50 + index * 0.4, 20 + 7 * index)
    succeed(task(stream, "etl", "load", at=120, try_number=2), 120, 64)
    for offset, task_id in enumerate(("refresh_dashboards", "send_digest", "archive")):
        life = task(stream, "reporting", task_id, at=30 + 45 * offset, run_id=SCHEDULED_RUN)
        succeed(life, 30 + 45 * offset, 12 + offset)
    # A registry throttling the kubelet is not a bad image (apache/airflow#37670): the
    # provider skips ErrImagePull with exactly "pull QPS exceeded", ours also the back-off
    # whose message carries that cause, and the pull succeeds.
    life = task(stream, "etl", "validate", at=200)
    life.emit("ADDED", 200, pending())
    life.scheduled(200.3).emit("MODIFIED", 200.3, pending())
    life.kubelet_admitted(201).emit("MODIFIED", 201, pending())
    life.sandbox_ready(203).waiting("base", 204, "ErrImagePull", "pull QPS exceeded")
    life.emit("MODIFIED", 204, pending())
    throttled = f'Back-off pulling image "{IMAGE}": ErrImagePull: pull QPS exceeded'
    life.waiting("base", 214, "ImagePullBackOff", throttled)
    life.emit("MODIFIED", 214, pending())
    life.run("base", 231).emit("MODIFIED", 231, TASK_RUNNING)
    life.terminate("base", 260, 0, "Completed").emit("MODIFIED", 260, TASK_SUCCEEDED)
    finish_deleted(life, 262, TASK_SUCCEEDED)


EVICTION_MESSAGE = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 91280Ki. "
    "Container base was using 1894208Ki, request is 1Gi, has larger consumption of memory. "
)


def task_failures(stream: Stream) -> None:
    """Pods that fail: the application's fault and the infrastructure's."""
    node = "ip-10-0-17-84.eu-west-1.compute.internal"
    # OOMKilled: the kernel kills the container at its memory limit.
    life = task(stream, "etl", "load", at=0, try_number=1)
    ran = start(life, 0, running=TASK_RUNNING)
    life.terminate("base", ran + 95, 137, "OOMKilled").emit("MODIFIED", ran + 95, OOM)
    finish_deleted(life, ran + 97, OOM)

    # An exception in the task: exit code 1.
    life = task(stream, "etl", "extract", at=10, try_number=3)
    ran = start(life, 10, running=TASK_RUNNING)
    life.terminate("base", ran + 12, 1, "Error").emit("MODIFIED", ran + 12, EXIT_1)
    finish_deleted(life, ran + 14, EXIT_1)

    # A bad image: ErrImagePull is fatal at once (provider default list), then the kubelet
    # backs off: ImagePullBackOff is fatal too (ours, unlike the provider's list), so each
    # event of the pod until the executor deletes it says FAILED again.
    image = "registry.example.com/data/etl-worker:2026.06.1"
    override: Json = {"spec": {"containers": [{"name": "base", "image": image}]}}
    life = task(stream, "etl", "publish", at=20, override=override)
    life.emit("ADDED", 20, pending())
    life.scheduled(20.2).emit("MODIFIED", 20.2, pending())
    life.kubelet_admitted(21).emit("MODIFIED", 21, pending())
    pull_error = (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{image}": '
        f'failed to resolve reference "{image}": {image}: not found'
    )
    bad_image = app_failure(
        "failed", "Pod failed because of ErrImagePull (container base, while pending)",
        "ErrImagePull",
    )  # fmt: skip
    life.sandbox_ready(23).waiting("base", 24, "ErrImagePull", pull_error)
    life.emit("MODIFIED", 24, bad_image)
    back_off = f'Back-off pulling image "{image}"'
    backing_off = app_failure(
        "failed", "Pod failed because of ImagePullBackOff (container base, while pending)",
        "ImagePullBackOff",
    )  # fmt: skip
    life.waiting("base", 36, "ImagePullBackOff", back_off).emit("MODIFIED", 36, backing_off)
    life.deleting(38).emit("MODIFIED", 38, backing_off)
    life.gone(39).emit("DELETED", 39, DELETED_BEFORE_START)

    # A Secret the pod needs is missing: CreateContainerConfigError is fatal at once.
    override = {
        "spec": {
            "containers": [
                {
                    "name": "base",
                    "envFrom": [{"secretRef": {"name": "warehouse-credentials"}}],
                }
            ]
        }
    }
    life = task(stream, "warehouse", "sync", at=30, override=override, run_id=SCHEDULED_RUN)
    life.emit("ADDED", 30, pending())
    life.scheduled(30.2).emit("MODIFIED", 30.2, pending())
    life.kubelet_admitted(31).emit("MODIFIED", 31, pending())
    missing = app_failure(
        "failed",
        "Pod failed because of CreateContainerConfigError (container base, while pending)",
        "CreateContainerConfigError",
    )
    life.sandbox_ready(33).waiting(
        "base", 33, "CreateContainerConfigError", 'secret "warehouse-credentials" not found'
    ).emit("MODIFIED", 33, missing)
    life.deleting(35).emit("MODIFIED", 35, missing)
    life.gone(36).emit("DELETED", 36, DELETED_BEFORE_START)

    # An init container fails: with restartPolicy Never the pod fails; the init
    # container's details are collected first (reference §4.3).
    override = {
        "spec": {
            "initContainers": [
                {
                    "name": "git-sync-init",
                    "image": "registry.k8s.io/git-sync/git-sync:v4.4.0",
                    "args": ["--one-time", "--repo=https://git.example.com/data/dags.git",
                             "--root=/git", "--ref=main"],
                }
            ]
        }
    }  # fmt: skip
    life = task(stream, "etl", "transform", at=40, override=override, map_index=0)
    life.emit("ADDED", 40, pending())
    life.scheduled(40.2).emit("MODIFIED", 40.2, pending())
    life.kubelet_admitted(41).emit("MODIFIED", 41, pending())
    life.sandbox_ready(43).run("git-sync-init", 44).emit("MODIFIED", 44, pending())
    init_failed = app_failure(
        "failed", "Pod failed because of Error (container git-sync-init, exit code 1)", "Error"
    )
    life.terminate(
        "git-sync-init", 50, 1, "Error",
        "fatal: could not read Username for 'https://git.example.com': No such device or address",
    ).emit("MODIFIED", 50, init_failed)  # fmt: skip
    finish_deleted(life, 52, init_failed)

    # Node-pressure eviction (Kubernetes 1.31+): DisruptionTarget TerminationByKubelet,
    # then Failed with reason Evicted. The condition is the evidence, and infrastructure
    # wins over the container's exit code.
    life = task(stream, "etl", "aggregate", at=60)
    ran = start(life, 60, running=TASK_RUNNING)
    life.condition("DisruptionTarget", "True", ran + 200, "TerminationByKubelet", EVICTION_MESSAGE)
    life.emit("MODIFIED", ran + 200, TASK_RUNNING)
    evicted = infra_failure(
        "failed", "Pod failed because of Evicted (container base, exit code 137)",
        "TerminationByKubelet",
    )  # fmt: skip
    life.terminate("base", ran + 201, 137, "Error").fail_pod(ran + 201, "Evicted", EVICTION_MESSAGE)
    life.emit("MODIFIED", ran + 201, evicted)
    finish_deleted(life, ran + 210, evicted)

    # The same eviction reported by an older kubelet: no DisruptionTarget condition; the
    # pod reason Evicted alone is the evidence.
    life = task(stream, "etl", "aggregate", at=65, run_id=SCHEDULED_RUN, try_number=2)
    ran = start(life, 65, running=TASK_RUNNING)
    old_eviction = infra_failure(
        "failed", "Pod failed because of Evicted (container base, exit code 137)", "Evicted"
    )
    life.terminate("base", ran + 180, 137, "Error").fail_pod(ran + 180, "Evicted", EVICTION_MESSAGE)
    life.emit("MODIFIED", ran + 180, old_eviction)
    finish_deleted(life, ran + 186, old_eviction)

    # Preemption: the scheduler marks the pod (DisruptionTarget PreemptionByScheduler) and
    # deletes it gracefully; still Running, then Failed (SIGTERM, 143), then gone.
    life = task(stream, "etl", "backfill_partitions", at=80, map_index=7)
    ran = start(life, 80, running=TASK_RUNNING)
    life.condition(
        "DisruptionTarget", "True", ran + 90, "PreemptionByScheduler",
        "default-scheduler: preempting to accommodate a higher priority pod",
    ).deleting(ran + 90).emit("MODIFIED", ran + 90, TASK_RUNNING)  # fmt: skip
    preempted = infra_failure(
        "failed", "Pod failed because of PreemptionByScheduler (container base, exit code 143)",
        "PreemptionByScheduler",
    )  # fmt: skip
    life.terminate("base", ran + 93, 143, "Error").emit("MODIFIED", ran + 93, preempted)
    life.gone(ran + 94).emit("DELETED", ran + 94, preempted)

    # A virtual kubelet could not run the pod (row 3, before any phase row).
    life = task(stream, "ml", "train", at=90, node="virtual-kubelet-aci-linux")
    life.emit("ADDED", 90, pending())
    life.scheduled(90.4).emit("MODIFIED", 90.4, pending())
    life.fail_pod(
        93, "ProviderFailed",
        "api call to https://management.azure.com/subscriptions/0000/resourceGroups/ml/"
        "providers/Microsoft.ContainerInstance/containerGroups/airflow-ml-train: got HTTP "
        'response status code 400 error code "InaccessibleImage"',
    )  # fmt: skip
    life.phase = "Pending"  # the virtual kubelet leaves the phase; only the reason is set
    provider = infra_failure("failed", "ProviderFailed", "ProviderFailed")
    life.emit("MODIFIED", 93, provider)
    finish_deleted(life, 95, provider)

    # A sidecar whose image cannot be pulled: the provider reads only the FIRST main
    # container's waiting reason (row 4b), so the pod stays Pending while base runs and
    # even after it exits; the executor reports nothing until it deletes the pod.
    shipper = "registry.example.com/platform/log-shipper:9.9.9"
    override = {
        "spec": {
            "containers": [
                {"name": "base"},
                {"name": "log-shipper", "image": shipper, "args": ["--input=/opt/airflow/logs"]},
            ]
        }
    }
    life = task(stream, "etl", "enrich", at=110, override=override)
    life.emit("ADDED", 110, pending())
    life.scheduled(110.2).emit("MODIFIED", 110.2, pending())
    life.kubelet_admitted(111).emit("MODIFIED", 111, pending())
    shipper_error = (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{shipper}": '
        f'failed to resolve reference "{shipper}": {shipper}: not found'
    )
    life.sandbox_ready(113).run("base", 114).waiting(
        "log-shipper", 114, "ErrImagePull", shipper_error
    )
    life.emit("MODIFIED", 114, pending())
    life.waiting("log-shipper", 126, "ImagePullBackOff", f'Back-off pulling image "{shipper}"')
    life.emit("MODIFIED", 126, pending())
    life.terminate("base", 170, 0, "Completed").emit("MODIFIED", 170, pending())
    life.deleting(400).emit("MODIFIED", 400, pending())
    life.gone(401).emit("DELETED", 401, DELETED_BEFORE_START)

    # A virtual kubelet that lost its provider reports phase Unknown (row 8).
    life = task(stream, "ml", "score", at=100, node="virtual-kubelet-aci-linux")
    ran = start(life, 100, running=TASK_RUNNING)
    life.phase = "Unknown"
    life.emit("MODIFIED", ran + 60, Expect("unknown_phase", None, "Unknown"))
    life.phase = "Running"
    life.emit("MODIFIED", ran + 75, TASK_RUNNING)
    life.terminate("base", ran + 120, 0, "Completed").emit("MODIFIED", ran + 120, TASK_SUCCEEDED)
    finish_deleted(life, ran + 122, TASK_SUCCEEDED)
    del node


def task_deletions(stream: Stream) -> None:
    """Pods deleted, adopted and revoked."""
    # A running pod force-deleted (grace 0): DELETED while Running, with a timestamp (7a).
    deleted = infra_failure(
        "failed", "Pod failed because of PodDeleted (deleted while running)", "PodDeleted"
    )
    life = task(stream, "etl", "load", at=0)
    ran = start(life, 0, running=TASK_RUNNING)
    life.deleting(ran + 30, grace=0).emit("DELETED", ran + 30, deleted)

    # The node is lost: the taint manager marks and deletes the pod; no kubelet confirms,
    # so the pod garbage collector removes it while its last status is still Running.
    life = task(stream, "etl", "extract", at=5, node="ip-10-0-23-191.eu-west-1.compute.internal")
    ran = start(life, 5, running=TASK_RUNNING)
    life.condition("Ready", "False", ran + 40)
    life.emit("MODIFIED", ran + 40, TASK_RUNNING)
    life.condition(
        "DisruptionTarget", "True", ran + 340, "DeletionByTaintManager",
        "Taint manager: deleting due to NoExecute taint",
    ).deleting(ran + 340).emit("MODIFIED", ran + 340, TASK_RUNNING)  # fmt: skip
    life.gone(ran + 400).emit("DELETED", ran + 400, deleted)

    # A running pod deleted gracefully (kubectl delete): still Running with a timestamp,
    # then the kubelet stops it (SIGTERM, 143) and the pod ends Failed before it goes. By
    # the rules the exit code, not the deletion, is the evidence: an application failure.
    life = task(stream, "etl", "transform", at=10, map_index=2)
    ran = start(life, 10, running=TASK_RUNNING)
    life.deleting(ran + 20).emit("MODIFIED", ran + 20, TASK_RUNNING)
    stopped = app_failure(
        "failed", "Pod failed because of Error (container base, exit code 143)", "Error"
    )
    life.terminate("base", ran + 22, 143, "Error").emit("MODIFIED", ran + 22, stopped)
    life.gone(ran + 23).emit("DELETED", ran + 23, stopped)

    # A pod that never scheduled, deleted (the API server deletes unbound pods at once).
    life = task(stream, "ml", "train_large", at=20, run_id=SCHEDULED_RUN)
    life.emit("ADDED", 20, pending())
    unschedulable = (
        "0/6 nodes are available: 3 Insufficient memory, 3 node(s) had untolerated taint "
        "{dedicated: gpu}. preemption: 0/6 nodes are available: 3 No preemption victims "
        "found for incoming pod, 3 Preemption is not helpful for scheduling."
    )
    life.unschedulable(20.1, unschedulable).emit("MODIFIED", 20.1, pending())
    life.deleting(320, grace=0).emit("DELETED", 320, DELETED_BEFORE_START)

    # A pod deleted while its image was still being pulled.
    life = task(stream, "etl", "publish", at=25)
    life.emit("ADDED", 25, pending())
    life.scheduled(25.2).emit("MODIFIED", 25.2, pending())
    life.kubelet_admitted(26).emit("MODIFIED", 26, pending())
    life.deleting(27).emit("MODIFIED", 27, pending())
    life.gone(28).emit("DELETED", 28, DELETED_BEFORE_START)

    # Adoption: another scheduler (job 57) relabels the pods; they leave this scheduler's
    # selector, which the watch reports as DELETED without a deletion timestamp (row 2).
    life = task(stream, "etl", "report", at=30)
    ran = start(life, 30, running=TASK_RUNNING)
    life.label("airflow-worker", "57").emit("DELETED", ran + 50, ADOPTED)
    life = task(stream, "etl", "notify", at=32)
    life.emit("ADDED", 32, pending())
    life.label("airflow-worker", "57").emit("DELETED", 34, ADOPTED)
    # A finished pod is adopted too: the adopting scheduler cleans it up.
    life = task(stream, "etl", "cleanup", at=36)
    ran = start(life, 36, running=TASK_RUNNING)
    life.terminate("base", ran + 5, 0, "Completed").emit("MODIFIED", ran + 5, TASK_SUCCEEDED)
    life.label("airflow-worker", "57").emit("DELETED", ran + 40, ADOPTED)

    # Revocation: the executor labels the pod airflow_pod_revoked and deletes it; every
    # event from then on is ignored (row 1, before all others).
    life = task(stream, "etl", "stuck_in_queue", at=40)
    life.emit("ADDED", 40, pending())
    life.scheduled(40.2).emit("MODIFIED", 40.2, pending())
    life.label("airflow_pod_revoked", "True").emit("MODIFIED", 200, REVOKED)
    life.deleting(200.5, grace=0).emit("DELETED", 200.5, REVOKED)
    life = task(stream, "etl", "slow_export", at=45)
    ran = start(life, 45, running=TASK_RUNNING)
    life.label("airflow_pod_revoked", "True").emit("MODIFIED", ran + 100, REVOKED)
    life.deleting(ran + 101).emit("MODIFIED", ran + 101, REVOKED)
    life.terminate("base", ran + 103, 143, "Error").emit("MODIFIED", ran + 103, REVOKED)
    life.gone(ran + 104).emit("DELETED", ran + 104, REVOKED)


def callbacks(stream: Stream) -> None:
    """Callback workloads (deadline alerts) next to the task pods of their runs."""
    for index in range(3):
        life = callback(stream, at=10 + 40 * index)
        succeed(life, 10 + 40 * index, 4 + index, callback_pod=True)
    life = callback(stream, at=20, dag_id="reporting")
    ran = start(life, 20, running=CALLBACK_RUNNING)
    failure = app_failure(
        "failed", "Pod failed because of Error (container base, exit code 1)", "Error"
    )
    life.terminate(
        "base", ran + 3, 1, "Error", "ConnectionError: https://hooks.slack.example.com/x"
    ).emit("MODIFIED", ran + 3, failure)  # fmt: skip
    finish_deleted(life, ran + 5, failure)
    # An OOM-killed callback is the callback's failure, as for tasks.
    life = callback(stream, at=60, dag_id="ml", run_id=MANUAL_RUN)
    ran = start(life, 60, running=CALLBACK_RUNNING)
    oom = app_failure(
        "failed", "Pod failed because of OOMKilled (container base, exit code 137)", "OOMKilled"
    )
    life.terminate("base", ran + 8, 137, "OOMKilled").emit("MODIFIED", ran + 8, oom)
    finish_deleted(life, ran + 10, oom)
    # A callback pod deleted while running (force): failed, the infrastructure's fault.
    life = callback(stream, at=100)
    ran = start(life, 100, running=CALLBACK_RUNNING)
    deleted = infra_failure(
        "failed", "Pod failed because of PodDeleted (deleted while running)", "PodDeleted"
    )
    life.deleting(ran + 2, grace=0).emit("DELETED", ran + 2, deleted)
    # A callback pod adopted by another scheduler.
    life = callback(stream, at=110)
    life.emit("ADDED", 110, pending())
    life.label("airflow-worker", "57").emit("DELETED", 111, ADOPTED)
    # The task pods of the same runs.
    succeed(task(stream, "etl", "load", at=0, run_id=SCHEDULED_RUN), 0, 30)
    succeed(task(stream, "reporting", "refresh_dashboards", at=15), 15, 9)


def _kpo_pod(stream: Stream, name: str, at: float) -> Life:
    """A KubernetesPodOperator's pod: Airflow labels, but no kubernetes_executor label."""
    manifest: Json = {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {
                "dag_id": "etl",
                "task_id": "run_dbt",
                "run_id": "manual__2026-06-07T0150230000-2f1d2a9e1",
                "kubernetes_pod_operator": "True",
                "try_number": "1",
                "airflow_kpo_in_cluster": "True",
                "airflow_version": "3.3.2",
            },
        },
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": "airflow-worker",
            "containers": [
                {
                    "name": "base",
                    "image": "ghcr.io/dbt-labs/dbt-postgres:1.9.0",
                    "args": ["run", "--project-dir", "/dbt", "--target", "prod"],
                }
            ],
        },
    }
    return Life(stream, manifest, None, at=at, node="ip-10-0-29-7.eu-west-1.compute.internal")


def watch_control(stream: Stream) -> None:
    """Bookmarks, watch errors, pods that are not ours, pods we cannot read."""
    # Bookmarks carry only a resource version (row: not a pod event at all).
    for at in (0.5, 60.5, 120.5, 180.5):
        stream.add(
            at,
            {
                "type": "BOOKMARK",
                "object": {
                    "kind": "Pod",
                    "apiVersion": "v1",
                    "metadata": {"resourceVersion": "", "creationTimestamp": None},
                    "spec": {"containers": None},
                    "status": {},
                },
            },
            Expect("bookmark", None, "bookmark at resource version"),
            None,
            None,
        )
    # A KubernetesPodOperator pod in the same namespace: not ours, whatever it does.
    kpo = _kpo_pod(stream, "run-dbt-3q7h2kx1", 2)
    kpo.emit("ADDED", 2, FOREIGN)
    kpo.scheduled(2.2).emit("MODIFIED", 2.2, FOREIGN)
    kpo.kubelet_admitted(3).emit("MODIFIED", 3, FOREIGN)
    kpo.sandbox_ready(5).run("base", 9).emit("MODIFIED", 9, FOREIGN)
    kpo.terminate("base", 70, 2, "Error").emit("MODIFIED", 70, FOREIGN)
    kpo.deleting(71).emit("MODIFIED", 71, FOREIGN)
    kpo.gone(72).emit("DELETED", 72, FOREIGN)

    # An executor pod whose annotations lost try_number (a mutating webhook rewrote them).
    life = task(stream, "etl", "extract", at=10)
    del life.metadata["annotations"]["try_number"]
    no_try = Expect("undecodable", None, "undecodable pod: try_number: missing")
    life.emit("ADDED", 10, no_try)
    life.scheduled(10.2).emit("MODIFIED", 10.2, no_try)
    life.kubelet_admitted(11).emit("MODIFIED", 11, no_try)

    # An Airflow 2 pod left over from before the upgrade: it names its run only by
    # execution_date, and mapping a date to a run id needs the database.
    life = Life(
        stream,
        construct_task_pod(
            namespace=NAMESPACE, scheduler_job_id=SCHEDULER_JOB_ID,
            pod_id=create_unique_id("legacy_etl", "load", rng=stream.rng), dag_id="legacy_etl",
            task_id="load", kube_image=IMAGE, try_number=1,
            args=["airflow", "tasks", "run", "legacy_etl", "load", "scheduled__2024-03-01"],
            airflow_version="2.10.5", run_id=None, logical_date_key="execution_date",
            date=datetime.datetime(2024, 3, 1, tzinfo=datetime.timezone.utc),
        ),
        None,
        at=15,
        node="ip-10-0-17-84.eu-west-1.compute.internal",
    )  # fmt: skip
    legacy = Expect("undecodable", None, "run_id: missing; the pod names its run only by")
    ran = start(life, 15, running=legacy, wait=legacy)
    life.terminate("base", ran + 20, 0, "Completed").emit("MODIFIED", ran + 20, legacy)

    # A running task across a watch that expires: 410 Gone, then the executor lists the
    # pods again and watches from the new version: the same pods come back as ADDED.
    long_task = task(stream, "etl", "load", at=20, try_number=1)
    ran = start(long_task, 20, running=TASK_RUNNING)
    cb = callback(stream, at=25)
    start(cb, 25, running=CALLBACK_RUNNING)
    stream.add(
        130,
        {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "too old resource version: (set when the stream is written)",
                "reason": "Expired",
                "code": 410,
            },
        },
        Expect("resync", None, "watch expired (410 Expired)"),
        None,
        None,
    )
    long_task.emit("ADDED", 131, TASK_RUNNING)
    cb.emit("ADDED", 131, CALLBACK_RUNNING)
    cb.terminate("base", 140, 0, "Completed").emit("MODIFIED", 140, CALLBACK_SUCCEEDED)
    finish_deleted(cb, 142, CALLBACK_SUCCEEDED)
    # Any other error ends the watch as a failure (the provider raises).
    cause = "unable to decode an event from the watch stream: http2: client connection lost"
    stream.add(
        150,
        {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f'an error on the server ("{cause}") has prevented the request '
                "from succeeding",
                "reason": "InternalError",
                "details": {"causes": [{"reason": "UnexpectedServerResponse", "message": cause}]},
                "code": 500,
            },
        },
        Expect(
            "watch_error", None, "Kubernetes failure for InternalError with code 500 and message"
        ),
        None,
        None,
    )
    long_task.emit("ADDED", 151, TASK_RUNNING)
    long_task.terminate("base", ran + 170, 0, "Completed").emit(
        "MODIFIED", ran + 170, TASK_SUCCEEDED
    )
    finish_deleted(long_task, ran + 172, TASK_SUCCEEDED)


def kubectl_watch(stream: Stream) -> None:
    """What ``kubectl get pods --watch --output-watch-events -o json`` prints."""
    succeed(task(stream, "etl", "extract", at=0), 0, 33)
    life = task(stream, "etl", "load", at=40)
    ran = start(life, 40, running=TASK_RUNNING)
    life.terminate("base", ran + 15, 1, "Error").emit("MODIFIED", ran + 15, EXIT_1)
    finish_deleted(life, ran + 17, EXIT_1)
    succeed(callback(stream, at=45), 45, 5, callback_pod=True)


# --- output ------------------------------------------------------------------------------

STREAMS = {
    "sample": sample,
    "task_success": task_success,
    "task_failures": task_failures,
    "task_deletions": task_deletions,
    "callbacks": callbacks,
    "watch_control": watch_control,
    "kubectl_watch": kubectl_watch,
}
KUBECTL_STREAMS = {"kubectl_watch"}


def _kubectl_object(obj: Json) -> Json:
    """As ``kubectl get -o json`` shows an object: keys sorted (an unstructured map)."""
    shown: Json = json.loads(json.dumps(obj, sort_keys=True))
    return shown


def _expectation(line: int, step: Step) -> Json:
    expect = step.expect
    record: Json = {
        "line": line,
        "event": step.event["type"],
        "pod": step.pod if step.event["type"] not in {"ERROR", "BOOKMARK"} else None,
        "outcome": expect.outcome,
        "state": expect.state,
        "key": step.key if expect.outcome not in {"revoked", "foreign", "undecodable"} else None,
        "reason": expect.reason,
    }
    if expect.classification is not None:
        kind, retryable, cause = expect.classification
        record["classification"] = {"kind": kind, "retryable": retryable, "reason": cause}
    return record


def write(out: Path) -> dict[str, int]:
    """Write every stream and its expectations into ``out``; the event count of each."""
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for name, build in STREAMS.items():
        stream = Stream(name)
        build(stream)
        steps = stream.resolved()
        expected: list[str] = []
        if name in KUBECTL_STREAMS:
            texts: list[str] = []
            line = 1
            for step in steps:
                event = {
                    "type": step.event["type"],
                    "object": _kubectl_object(step.event["object"]),
                }
                text = json.dumps(event, indent=4, ensure_ascii=False)
                texts.append(text + "\n")
                expected.append(json.dumps(_expectation(line, step)))
                line += text.count("\n") + 1
            (out / f"{name}.json").write_text("".join(texts), encoding="utf-8")
        else:
            lines = [json.dumps(s.event, separators=(",", ":"), ensure_ascii=False) for s in steps]
            (out / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
            expected = [json.dumps(_expectation(i + 1, s)) for i, s in enumerate(steps)]
        (out / f"{name}.expected.jsonl").write_text("\n".join(expected) + "\n", encoding="utf-8")
        counts[name] = len(steps)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Write the pod watch-stream fixtures and their expected resolutions."
    )
    parser.add_argument("--out", type=Path, default=HERE, help="default: tests/data")
    parser.add_argument(
        "--no-example", action="store_true", help="do not copy the sample into the package"
    )
    args = parser.parse_args()
    counts = write(args.out)
    if not args.no_example:
        shutil.copyfile(args.out / f"{SAMPLE_STREAM}.jsonl", EXAMPLE)
    for name, count in counts.items():
        print(f"{name}: {count} events")  # noqa: T201
    print(f"total: {sum(counts.values())} events")  # noqa: T201


if __name__ == "__main__":
    main()
