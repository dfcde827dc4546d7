"""``render task`` and ``render callback``: the pod (and, with ``--secure``, the Secret)
an executor would create for a workload, its Execution API token redacted unless
``--no-redact``."""

from __future__ import annotations

import json
import math
import warnings
from importlib import resources
from typing import TYPE_CHECKING, Any, TextIO

from k8s_workloads import compat
from k8s_workloads.cli._args import Command, option
from k8s_workloads.cli._io import UsageError, parse_json, positive_int, read_text
from k8s_workloads.display import path_part, printable, shown
from k8s_workloads.json_values import children
from k8s_workloads.keys import CallbackKey
from k8s_workloads.limits import MAX_YAML_NODES

if TYPE_CHECKING:
    import argparse

    from k8s_workloads.keys import TaskInstanceKey
    from k8s_workloads.pods.manifest import Manifest

WORKLOADS_MIN_VERSION = (3, 0, 0)
"""``render`` writes Airflow 3 workload pods (``execute_workload``); Airflow 2 ran commands."""
_WORKLOAD_TYPES = {"task": "ExecuteTask", "callback": "ExecuteCallback"}


def _load_pod_file(path: str, stdin: TextIO, what: str, max_nodes: int) -> Manifest:
    # Deferred: PyYAML costs ~15 ms to import and only render needs it.
    import yaml  # noqa: PLC0415

    from k8s_workloads.yaml_input import YAMLLimitExceeded, load_bounded  # noqa: PLC0415

    text = read_text(path, stdin, what)
    try:
        loaded = load_bounded(text, max_nodes=max_nodes)
    except YAMLLimitExceeded as error:
        raise_it = " (raise it with --max-yaml-nodes)" if error.limit == "max_nodes" else ""
        raise UsageError(f"{what} {path}: refused: {error}{raise_it}") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = ", ".join(part for part in (error.context, error.problem) if part) or "unreadable"
        raise UsageError(f"{what} {path}: not YAML or JSON: {problem}{where}") from None
    except yaml.YAMLError as error:
        raise UsageError(f"{what} {path}: not YAML or JSON: {error}") from None
    if not isinstance(loaded, dict):
        found = "nothing" if loaded is None else type(loaded).__name__
        raise UsageError(f"{what} {path}: expected a pod manifest (a mapping), got {found}")
    return loaded


def _pod_file(args: argparse.Namespace, option: str, stdin: TextIO) -> Manifest | None:
    """The ``--template`` or ``--override`` file's manifest, if the option is given."""
    path = getattr(args, option)
    if not path:
        return None
    return _load_pod_file(path, stdin, f"--{option}", args.max_yaml_nodes)


def _load_workload(path: str | None, kind: str, stdin: TextIO) -> dict[str, Any]:
    if path is None:
        name = f"{kind}_workload.json"
        where = f"the bundled example {name}"
        text = resources.files("k8s_workloads").joinpath(f"examples/{name}").read_text("utf-8")
    else:
        where = f"--workload {path}"
        text = read_text(path, stdin, "--workload")
    workload = parse_json(text, where)
    if not isinstance(workload, dict):
        raise UsageError(f"{where}: expected a JSON object, got {type(workload).__name__}")
    expected = _WORKLOAD_TYPES[kind]
    found = workload.get("type", expected)
    if found != expected:
        raise UsageError(f"{where}: a {shown(found)} workload; render {kind} needs {expected!r}")
    return workload


def _render_version(given: str | None) -> compat.AirflowVersion:
    text = given or compat.installed_airflow_version()
    if text is None:
        raise UsageError(
            "Airflow is not installed here, so its version is unknown: pass --airflow-version"
        )
    version = compat.AirflowVersion.parse(text)
    if version.release_tuple < WORKLOADS_MIN_VERSION:
        raise UsageError(
            f"--airflow-version {version}: workload pods (execute_workload) need Airflow 3.0+"
        )
    return version


def _from_workload(
    given: Any,  # noqa: ANN401 - a str or int option
    source: dict[str, Any],
    *,
    field: str,
    kind: type,
    flag: str,
    notes: list[str],
) -> Any:  # noqa: ANN401
    """An option's value, else the workload's (when it has the right type); notes clashes.

    ``field`` is the workload field's path (``ti.dag_id``); ``source`` the object holding it.
    """
    found = source.get(field.rsplit(".", 1)[-1])
    if isinstance(found, bool) or not isinstance(found, kind):
        found = None
    if given is None:
        return found
    if found is not None and found != given:
        notes.append(
            f"{flag} {shown(given)} differs from the workload's {field} {shown(found)}; "
            "the pod will not describe the workload it runs"
        )
    return given


def _task_key(
    args: argparse.Namespace, workload: dict[str, Any], notes: list[str]
) -> tuple[TaskInstanceKey, dict[str, Any]]:
    """The task's key from the options and the workload's ``ti``, and its pod's name."""
    from k8s_workloads.keys import TaskInstanceKey  # noqa: PLC0415
    from k8s_workloads.pods.labels import create_unique_id  # noqa: PLC0415

    ti = workload.get("ti")
    ti = ti if isinstance(ti, dict) else {}
    values = {
        field: _from_workload(
            getattr(args, field), ti, field=f"ti.{field}", kind=kind, flag=flag, notes=notes
        )
        for field, kind, flag in (
            ("dag_id", str, "--dag-id"),
            ("task_id", str, "--task-id"),
            ("run_id", str, "--run-id"),
            ("try_number", int, "--try-number"),
            ("map_index", int, "--map-index"),
        )
    }
    for field, flag in (("dag_id", "--dag-id"), ("task_id", "--task-id")):
        if values[field] is None:
            raise UsageError(f"{flag} is required: the workload has no ti.{field}")
    key = TaskInstanceKey(
        values["dag_id"],
        values["task_id"],
        values["run_id"],
        1 if values["try_number"] is None else values["try_number"],
        -1 if values["map_index"] is None else values["map_index"],
    )
    return key, {"pod_id": args.pod_id or create_unique_id(key.dag_id, key.task_id)}


def _callback_key(
    args: argparse.Namespace,
    workload: dict[str, Any],
    version: compat.AirflowVersion,
    notes: list[str],
) -> tuple[CallbackKey, dict[str, Any]]:
    """The callback's key from the options and the workload, and the dag and run ids from
    its log path."""
    from k8s_workloads.compat import require_callback_support  # noqa: PLC0415
    from k8s_workloads.pods.workload import parse_callback_log_path  # noqa: PLC0415

    require_callback_support(version)
    callback = workload.get("callback")
    callback = callback if isinstance(callback, dict) else {}
    callback_id = _from_workload(
        args.callback_id, callback, field="callback.id", kind=str, flag="--callback-id", notes=notes
    )
    if callback_id is None:
        raise UsageError("--callback-id is required: the workload has no callback.id")
    key = CallbackKey(callback_id)
    if args.log_path is not None:
        parsed = parse_callback_log_path(args.log_path)
        if parsed is None:
            raise UsageError(
                f"--log-path {shown(args.log_path)}: not a callback log path "
                "(executor_callbacks/<dag_id>/<run_id>/<callback_id>)"
            )
    else:
        log_path = workload.get("log_path")
        parsed = parse_callback_log_path(log_path if isinstance(log_path, str) else None)
    dag_id, run_id = args.dag_id, args.run_id
    if parsed is not None:
        dag_id = dag_id or parsed[0]
        run_id = run_id or parsed[1]
        if parsed[2] != key.id:
            notes.append(f"the log path names callback {shown(parsed[2])}, not {key.id!r}")
    return key, {"dag_id": dag_id or None, "run_id": run_id or None}


def _workload_pod(
    args: argparse.Namespace,
    workload: dict[str, Any],
    version: compat.AirflowVersion,
    stdin: TextIO,
    notes: list[str],
) -> Manifest:
    """The pod for ``render task`` or ``render callback``: the key first (a missing id is
    the first error), then the template (and a task's override), then the command."""
    from k8s_workloads.pods.build import construct_pod  # noqa: PLC0415
    from k8s_workloads.pods.payload import json_path_command_args  # noqa: PLC0415
    from k8s_workloads.pods.workload import workload_command_args  # noqa: PLC0415
    from k8s_workloads.states import KubernetesJob  # noqa: PLC0415

    job: KubernetesJob[Any]
    if args.kind == "task":
        task_key, specific = _task_key(args, workload, notes)
        template = _pod_file(args, "template", stdin)
        override = _pod_file(args, "override", stdin)
        command = json_path_command_args() if args.secure else workload_command_args(workload)
        job = KubernetesJob(task_key, command, pod_override=override)
    else:
        callback_key, specific = _callback_key(args, workload, version, notes)
        template = _pod_file(args, "template", stdin)
        command = json_path_command_args() if args.secure else workload_command_args(workload)
        job = KubernetesJob(callback_key, command)
    return construct_pod(
        job,
        namespace=args.namespace,
        scheduler_job_id=args.scheduler_job_id,
        kube_image=args.image,
        airflow_version=version,
        base_worker_pod=template,
        **specific,
    )


def _as_pod(manifest: Manifest) -> Manifest:
    """The manifest as a complete ``v1`` Pod object, ``apiVersion`` and ``kind`` first."""
    from k8s_workloads.pods.validation import validate_manifest  # noqa: PLC0415

    api_version = manifest.get("apiVersion", "v1")
    kind = manifest.get("kind", "Pod")
    if (api_version, kind) != ("v1", "Pod"):
        raise UsageError(f"the template or override makes a {api_version}/{kind}, not a v1/Pod")
    non_finite = _non_finite_at(manifest)
    if non_finite is not None:
        raise UsageError(
            f"the pod would be rejected by the API server: {non_finite} is NaN or infinite "
            "(JSON and Kubernetes have no NaN or Infinity)"
        )
    violations = validate_manifest(manifest)
    if violations:
        raise UsageError(
            "the pod would be rejected by the API server: "
            + "; ".join(str(violation) for violation in violations)
        )
    rest = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    return {"apiVersion": "v1", "kind": "Pod", **rest}


def _render_documents(
    args: argparse.Namespace, stdin: TextIO, notes: list[str], tokens: set[str]
) -> list[Manifest]:
    """The documents to print; ``tokens`` gets the workload's, to mask in every message."""
    from k8s_workloads.compat import CallbackWorkloadsUnsupported  # noqa: PLC0415
    from k8s_workloads.keys import InvalidKey  # noqa: PLC0415
    from k8s_workloads.pods.errors import PodMutationHookError  # noqa: PLC0415
    from k8s_workloads.pods.payload import (  # noqa: PLC0415
        PayloadError,
        attach_secure_payload,
        secure_workload_payload,
    )
    from k8s_workloads.pods.reconcile import PodReconciliationError  # noqa: PLC0415
    from k8s_workloads.pods.redaction import tokens_in_json  # noqa: PLC0415

    version = _render_version(args.airflow_version)
    workload = _load_workload(args.workload, args.kind, stdin)
    tokens_in_json(workload, tokens)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                built = _workload_pod(args, workload, version, stdin, notes)
            finally:
                notes.extend(str(warning.message) for warning in caught)
        pod = _as_pod(built)
        if not args.secure:
            return [pod]
        metadata = pod["metadata"]
        payload = secure_workload_payload(
            workload,
            pod_name=metadata["name"],
            namespace=metadata.get("namespace", args.namespace),
            labels=metadata.get("labels"),
        )
        return [payload.secret, attach_secure_payload(pod, payload)]
    except (
        InvalidKey,
        CallbackWorkloadsUnsupported,
        PodReconciliationError,
        PodMutationHookError,
        PayloadError,
    ) as error:
        raise UsageError(f"{type(error).__name__}: {error}") from None


def _non_finite_at(document: object) -> str | None:
    """The field path of the first NaN or infinite number in ``document``, if any."""
    pending: list[tuple[str, object]] = [("", document)]
    seen: set[int] = set()
    while pending:
        where, value = pending.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return where.lstrip(".") or "the document"
        items = children(value)
        if items is None or id(value) in seen:
            continue
        seen.add(id(value))
        pending.extend((where + path_part(key), item) for key, item in reversed(items))
    return None


def run_render(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    import yaml  # noqa: PLC0415

    from k8s_workloads.pods.redaction import message_masker, redact_manifests  # noqa: PLC0415

    notes: list[str] = []
    tokens: set[str] = set()
    try:
        documents = _render_documents(args, stdin, notes, tokens)
    except UsageError as error:
        # Errors may echo a template or override value: never the workload's token.
        raise UsageError(message_masker(frozenset(tokens)).text(str(error))) from None
    finally:
        masker = message_masker(frozenset(tokens))
        for note in notes:
            line = f"k8s-workloads render {args.kind}: warning: {note}"
            print(printable(masker.text(line)), file=err)
    if not args.no_redact:
        documents = redact_manifests(documents)
    if args.output == "json":
        document: object = documents[0] if len(documents) == 1 else documents
        try:
            text = json.dumps(document, indent=2, allow_nan=False)
        except ValueError as error:  # YAML's .nan and .inf: JSON has neither
            where = _non_finite_at(document)
            if where is None:
                raise UsageError(f"-o json: {error}") from None
            raise UsageError(
                f"-o json: {where} is NaN or infinite, which JSON cannot write "
                "(nor the API server read)"
            ) from None
        print(text, file=out)
    else:
        # Wide lines: the workload JSON in args stays on one line, as kubectl shows it.
        out.write(yaml.safe_dump_all(documents, sort_keys=False, allow_unicode=True, width=1 << 20))
    return 0


_COMMON_OPTIONS = (
    option("--namespace", default="default", help="default: %(default)s"),
    option("--scheduler-job-id", default="1", help="the owning scheduler's job id (default: 1)"),
    option("--image", help="the worker image (kube_image); default: the template's"),
    option(
        "--airflow-version",
        help="the Airflow version the pod is for (labels; callbacks need 3.3+); "
        "default: the installed Airflow's",
    ),
    option(
        "--workload",
        metavar="FILE",
        help="the workload JSON (workload.model_dump_json()), or - for stdin; "
        "default: a bundled example",
    ),
    option("--template", metavar="FILE", help="pod template (YAML or JSON) to merge the pod over"),
    option(
        "--secure",
        action="store_true",
        help="deliver the workload in a Secret mounted into the pod, not in its args; "
        "prints the Secret, then the Pod",
    ),
    option("-o", "--output", choices=("yaml", "json"), default="yaml", help="default: yaml"),
    option(
        "--no-redact",
        action="store_true",
        help="print the Execution API token instead of ***REDACTED***",
    ),
    option(
        "--max-yaml-nodes",
        type=positive_int,
        default=MAX_YAML_NODES,
        metavar="N",
        help="refuse a template or override that stands for more nodes, its YAML aliases "
        "expanded (default: %(default)s)",
    ),
)
"""The options of both kinds."""

COMMAND = Command(
    name="render",
    help="the pod (YAML or JSON) an executor creates for a task or callback workload",
    description="Print the worker pod an executor would create for an Airflow 3 "
    "workload, built by the library as the executor builds it. The Execution API "
    "token is redacted unless --no-redact.",
    run=run_render,
    kinds=(
        Command(
            name="task",
            help="a task instance's pod",
            description="Ids default to the workload's ti.* fields.",
            options=(
                *_COMMON_OPTIONS,
                option("--dag-id", help="default: the workload's ti.dag_id"),
                option("--task-id", help="default: the workload's ti.task_id"),
                option("--run-id", help="default: the workload's ti.run_id"),
                option(
                    "--try-number", type=int, help="default: the workload's ti.try_number, else 1"
                ),
                option(
                    "--map-index", type=int, help="default: the workload's ti.map_index, else -1"
                ),
                option("--pod-id", help="the pod name; default: made from the dag and task ids"),
                option(
                    "--override",
                    metavar="FILE",
                    help="pod_override (YAML or JSON) merged over the pod",
                ),
            ),
        ),
        Command(
            name="callback",
            help="a callback workload's pod (Airflow 3.3+)",
            description="The callback id defaults to the workload's, the dag and run ids to "
            "those in the log path.",
            options=(
                *_COMMON_OPTIONS,
                option("--callback-id", help="the callback's UUID; default: the workload's"),
                option("--dag-id", help="default: from the log path"),
                option("--run-id", help="default: from the log path"),
                option(
                    "--log-path",
                    help="executor_callbacks/<dag_id>/<run_id>/<callback_id>; "
                    "default: the workload's log_path",
                ),
            ),
        ),
    ),
)
