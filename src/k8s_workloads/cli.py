"""The ``k8s-workloads`` console script.

The face of the library: it reads files and standard input, prints, and sets exit
codes; every decision it shows is made by the pure core.

``decode`` and ``demo`` read pods; ``render task`` and ``render callback`` write the pod
(and, with ``--secure``, the Secret) an executor would create, with the Execution API
token redacted unless ``--no-redact``; ``resolve`` reads a pod watch stream and prints
what each event means for its workload. Everything beyond ``decode``'s needs (YAML, the
pod builders, the resolver) is imported only by the command that needs it.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import sys
import warnings
from importlib import resources
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, cast

from k8s_workloads import __version__
from k8s_workloads._display import one_line, path_part, printable, shown
from k8s_workloads._limits import MAX_INPUT_BYTES, MAX_SCENARIO_ENTRIES, MAX_YAML_NODES
from k8s_workloads.codec import InvalidAnnotations, annotations_to_key
from k8s_workloads.compat import AirflowVersion, InvalidVersion, installed_airflow_version
from k8s_workloads.keys import CallbackKey, WorkloadKey

if TYPE_CHECKING:
    import datetime
    from collections.abc import Iterator, Sequence

    from k8s_workloads.events import Resolution, ResolverConfig
    from k8s_workloads.payload import _Masker
    from k8s_workloads.reconcile import Manifest
    from k8s_workloads.streams import WatchInput

__all__ = ["MAX_INPUT_BYTES", "MAX_YAML_NODES", "key_to_json", "key_to_text", "main"]

DEMO_AIRFLOW_VERSION = "3.3.2"
"""The Airflow version the bundled demo pretends to run (callbacks on)."""
WORKLOADS_MIN_VERSION = (3, 0, 0)
"""``render`` writes Airflow 3 workload pods (``execute_workload``); Airflow 2 ran commands."""
_WORKLOAD_TYPES = {"task": "ExecuteTask", "callback": "ExecuteCallback"}
WATCH_EXAMPLE = "examples/watch_events.jsonl"
"""The bundled watch stream ``resolve --example`` reads."""
_READ_SIZE = 1 << 16
"""``resolve`` reads at most this many characters at a time (a line, if shorter)."""


class UsageError(Exception):
    """Bad command-line input: reported on stderr with exit status 2."""


def key_to_json(key: WorkloadKey) -> dict[str, Any]:
    """A key as a JSON object with a ``kind`` discriminator."""
    if isinstance(key, CallbackKey):
        return {"kind": "callback", "id": key.id}
    return {
        "kind": "task",
        "dag_id": key.dag_id,
        "task_id": key.task_id,
        "run_id": key.run_id,
        "try_number": key.try_number,
        "map_index": key.map_index,
    }


def key_to_text(key: WorkloadKey | None) -> str:
    """A key on one line: ``task etl.load run=r1 try=2 map=3``, ``callback <id>`` or ``-``."""
    if key is None:
        return "-"
    if isinstance(key, CallbackKey):
        return f"callback {key.id}"
    parts = [f"task {key.dag_id}.{key.task_id}"]
    if key.run_id is not None:
        parts.append(f"run={key.run_id}")
    parts.append(f"try={key.try_number}")
    if key.map_index >= 0:
        parts.append(f"map={key.map_index}")
    return " ".join(parts)


def _read_text(path: str, stdin: TextIO, what: str | None = None) -> str:
    """The file's text (``-``: standard input); errors name ``what`` (the option) if given.

    At most :data:`MAX_INPUT_BYTES` are read (characters, from a text-only stream); more
    is a usage error.
    """
    prefix = f"{what}: " if what else ""
    limit = MAX_INPUT_BYTES
    data: bytes | str
    try:
        if path == "-":
            buffer = getattr(stdin, "buffer", None)
            data = buffer.read(limit + 1) if buffer is not None else stdin.read(limit + 1)
        else:
            with open(path, "rb") as handle:  # noqa: PTH123
                data = handle.read(limit + 1)
    except OSError as error:
        raise UsageError(f"{prefix}cannot read {path}: {error.strerror or error}") from None
    if len(data) > limit:
        raise UsageError(f"{prefix}{path} is over {limit:,} bytes, the input limit")
    if isinstance(data, str):
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{prefix}{path} is not UTF-8 text") from None
    # As a file opened in text mode reads it: \r\n and \r are line ends.
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _not_json_constant(name: str) -> object:
    # Python's json reads NaN and Infinity; JSON, and so Kubernetes, has neither.
    raise ValueError(f"{name} (JSON has no NaN or Infinity)")


def _parse_json(text: str, what: str) -> object:
    try:
        return json.loads(text, parse_constant=_not_json_constant)
    except (ValueError, RecursionError) as error:  # also an integer past 4,300 digits
        raise UsageError(f"{what}: not JSON: {error}") from None


def _decode(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    annotations = _parse_json(_read_text(args.file, stdin), args.file)
    if not isinstance(annotations, dict):
        raise UsageError(f"{args.file}: expected a JSON object of annotations")
    labels = _parse_json(args.labels, "--labels") if args.labels is not None else None
    if labels is not None and not isinstance(labels, dict):
        raise UsageError("--labels: expected a JSON object")
    text = args.airflow_version or installed_airflow_version()
    # Parsed here, once: a bad --airflow-version is a usage error, whatever the pod.
    version = None if text is None else AirflowVersion.parse(text)
    try:
        key = annotations_to_key(annotations, labels, airflow_version=version)
    except InvalidAnnotations as error:
        print(one_line(f"k8s-workloads decode: {type(error).__name__}: {error}"), file=err)
        return 1
    print(json.dumps(key_to_json(key), sort_keys=True), file=out)
    return 0


def _demo(out: TextIO) -> int:
    examples = json.loads(
        resources.files("k8s_workloads").joinpath("examples/pods.json").read_text("utf-8")
    )
    print(
        f"Decoding the bundled example pods (Airflow {DEMO_AIRFLOW_VERSION} unless noted):",
        file=out,
    )
    for example in examples:
        version = example.get("airflow_version", DEMO_AIRFLOW_VERSION)
        try:
            key = annotations_to_key(
                example["annotations"], example.get("labels"), airflow_version=version
            )
            shown = json.dumps(key_to_json(key), sort_keys=True)
        except InvalidAnnotations as error:
            shown = f"{type(error).__name__}: {error}"
        print(f"\n  {example['name']} (Airflow {version})\n    -> {shown}", file=out)
    return 0


def _load_pod_file(path: str, stdin: TextIO, what: str, max_nodes: int) -> Manifest:
    # Deferred: PyYAML costs ~15 ms to import and only render needs it.
    import yaml  # noqa: PLC0415

    from k8s_workloads._yaml_input import YAMLLimitExceeded, load_bounded  # noqa: PLC0415

    text = _read_text(path, stdin, what)
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
        text = _read_text(path, stdin, "--workload")
    workload = _parse_json(text, where)
    if not isinstance(workload, dict):
        raise UsageError(f"{where}: expected a JSON object, got {type(workload).__name__}")
    expected = _WORKLOAD_TYPES[kind]
    found = workload.get("type", expected)
    if found != expected:
        raise UsageError(f"{where}: a {shown(found)} workload; render {kind} needs {expected!r}")
    return workload


def _render_version(given: str | None) -> AirflowVersion:
    text = given or installed_airflow_version()
    if text is None:
        raise UsageError(
            "Airflow is not installed here, so its version is unknown: pass --airflow-version"
        )
    version = AirflowVersion.parse(text)
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


def _task_pod(
    args: argparse.Namespace,
    workload: dict[str, Any],
    version: AirflowVersion,
    stdin: TextIO,
    notes: list[str],
) -> Manifest:
    from k8s_workloads.keys import TaskInstanceKey  # noqa: PLC0415
    from k8s_workloads.labels import create_unique_id  # noqa: PLC0415
    from k8s_workloads.payload import json_path_command_args  # noqa: PLC0415
    from k8s_workloads.pods import construct_task_pod, workload_command_args  # noqa: PLC0415

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
    template = _pod_file(args, "template", stdin)
    override = _pod_file(args, "override", stdin)
    return construct_task_pod(
        namespace=args.namespace,
        scheduler_job_id=args.scheduler_job_id,
        pod_id=args.pod_id or create_unique_id(key.dag_id, key.task_id),
        dag_id=key.dag_id,
        task_id=key.task_id,
        run_id=key.run_id,
        try_number=key.try_number,
        map_index=key.map_index,
        kube_image=args.image,
        args=json_path_command_args() if args.secure else workload_command_args(workload),
        airflow_version=version,
        pod_override=override,
        base_worker_pod=template,
    )


def _callback_pod(
    args: argparse.Namespace,
    workload: dict[str, Any],
    version: AirflowVersion,
    stdin: TextIO,
    notes: list[str],
) -> Manifest:
    from k8s_workloads.compat import require_callback_support  # noqa: PLC0415
    from k8s_workloads.payload import json_path_command_args  # noqa: PLC0415
    from k8s_workloads.pods import (  # noqa: PLC0415
        construct_callback_pod,
        parse_callback_log_path,
        workload_command_args,
    )

    require_callback_support(version)
    key = CallbackKey(args.callback_id)
    callback = workload.get("callback")
    callback = callback if isinstance(callback, dict) else {}
    _from_workload(
        key.id, callback, field="callback.id", kind=str, flag="--callback-id", notes=notes
    )
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
    template = _pod_file(args, "template", stdin)
    return construct_callback_pod(
        callback_id=key.id,
        namespace=args.namespace,
        scheduler_job_id=args.scheduler_job_id,
        kube_image=args.image,
        args=json_path_command_args() if args.secure else workload_command_args(workload),
        airflow_version=version,
        base_worker_pod=template,
        dag_id=dag_id,
        run_id=run_id,
    )


def _as_pod(manifest: Manifest) -> Manifest:
    """The manifest as a complete ``v1`` Pod object, ``apiVersion`` and ``kind`` first."""
    from k8s_workloads.validation import validate_manifest  # noqa: PLC0415

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
    from k8s_workloads.payload import (  # noqa: PLC0415
        PayloadError,
        _tokens_in_json,
        attach_secure_payload,
        secure_workload_payload,
    )
    from k8s_workloads.pods import PodMutationHookError  # noqa: PLC0415
    from k8s_workloads.reconcile import PodReconciliationError  # noqa: PLC0415

    version = _render_version(args.airflow_version)
    workload = _load_workload(args.workload, args.kind, stdin)
    _tokens_in_json(workload, tokens)
    build = _task_pod if args.kind == "task" else _callback_pod
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                built = build(args, workload, version, stdin, notes)
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
        if isinstance(value, dict):
            items: list[tuple[object, object]] = list(value.items())
        elif isinstance(value, list):
            items = list(enumerate(value))
        else:
            continue
        if id(value) in seen:
            continue
        seen.add(id(value))
        pending.extend((where + path_part(key), item) for key, item in reversed(items))
    return None


def _render(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    import yaml  # noqa: PLC0415

    from k8s_workloads.payload import _message_masker, redact_manifests  # noqa: PLC0415

    notes: list[str] = []
    tokens: set[str] = set()
    try:
        documents = _render_documents(args, stdin, notes, tokens)
    except UsageError as error:
        # Errors may echo a template or override value: never the workload's token.
        raise UsageError(_message_masker(frozenset(tokens)).text(str(error))) from None
    finally:
        masker = _message_masker(frozenset(tokens))
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


# --- resolve ------------------------------------------------------------------------------


def _parse_now(text: str) -> datetime.datetime:
    import datetime  # noqa: PLC0415

    try:
        parsed = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--now {shown(text)}: not an ISO 8601 date and time (e.g. 2026-06-07T10:15:00Z)"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=datetime.timezone.utc)


def _resolve_config(args: argparse.Namespace) -> ResolverConfig:
    from k8s_workloads.events import ResolverConfig  # noqa: PLC0415
    from k8s_workloads.failures import PendingPolicy  # noqa: PLC0415

    if args.now is not None and not args.pending_policy:
        raise UsageError("--now only applies to grace periods: add --pending-policy")
    if args.fatal_reasons is not None and args.pending_policy:
        raise UsageError(
            "--fatal-reasons and --pending-policy exclude each other: "
            "the pending policy replaces the fatal reasons"
        )
    if args.airflow_version is not None:
        text: str | None = args.airflow_version
    elif args.example:
        text = DEMO_AIRFLOW_VERSION
    else:
        text = installed_airflow_version()
    # Parsed here, once: a bad --airflow-version is a usage error, whatever the pods.
    version = None if text is None else AirflowVersion.parse(text)
    if args.pending_policy:
        return ResolverConfig(airflow_version=version, pending=PendingPolicy())
    if args.fatal_reasons is not None:
        return ResolverConfig(airflow_version=version, fatal_pending_reasons=args.fatal_reasons)
    return ResolverConfig(airflow_version=version)


def _chunks(handle: TextIO, where: str) -> Iterator[str]:
    """The stream's text as it arrives: a line at a time, never more than _READ_SIZE."""
    while True:
        try:
            chunk = handle.readline(_READ_SIZE)
        except OSError as error:
            raise UsageError(f"cannot read {where}: {error.strerror or error}") from None
        if not chunk:
            return
        yield chunk


def _detail_value(value: object) -> str:
    if isinstance(value, str) and value and not any(c in value for c in " ,=\"'"):
        return value
    return json.dumps(value)


def _explain_lines(item: WatchInput, resolution: Resolution) -> list[str]:
    where = [f"line {item.line}"]
    if resolution.event_type is not None:
        where.append(f"{resolution.event_type} event")
    if resolution.resource_version is not None:
        where.append(f"resource version {resolution.resource_version}")
    if resolution.error_code is not None:
        where.append(f"error code {resolution.error_code}")
    lines = [", ".join(where)]
    details = resolution.failure_details
    if details:
        shown = ", ".join(
            f"{name}={_detail_value(value)}" for name, value in details.items() if value is not None
        )
        lines.append(f"failure details: {shown}")
    classification = resolution.classification
    if classification is not None:
        retry = "retryable" if classification.retryable else "not retryable"
        lines.append(
            f"classification: {classification.kind.value}, {retry}, "
            f"reason {classification.reason or '-'} (evidence: {classification.evidence})"
        )
    return [f"    {line}" for line in lines]


def _resolution_json(
    item: WatchInput, resolution: Resolution, *, explain: bool
) -> dict[str, object]:
    record: dict[str, object] = {
        "line": item.line,
        "event": resolution.event_type,
        "outcome": resolution.outcome.value,
        "state": None if resolution.state is None else resolution.state.value,
        "key": None if resolution.key is None else key_to_json(resolution.key),
        "pod": resolution.pod_name,
        "namespace": resolution.namespace,
        "resource_version": resolution.resource_version,
        "reason": resolution.reason,
    }
    if explain:
        classification = resolution.classification
        record["error_code"] = resolution.error_code
        record["failure_details"] = (
            None if resolution.failure_details is None else dict(resolution.failure_details)
        )
        record["classification"] = (
            None
            if classification is None
            else {
                "kind": classification.kind.value,
                "retryable": classification.retryable,
                "reason": classification.reason,
                "evidence": classification.evidence,
            }
        )
    return record


def _resolution_text(
    item: WatchInput, resolution: Resolution, *, explain: bool, masker: _Masker
) -> str:
    pod = "-"
    if resolution.pod_name is not None:
        pod = f"{resolution.namespace or '-'}/{resolution.pod_name}"
    state = "-" if resolution.state is None else resolution.state.value
    summary = (
        f"{pod} {key_to_text(resolution.key)} {resolution.outcome.value} {state} "
        f"{resolution.reason}"
    )
    lines = [summary]
    if explain:
        lines += _explain_lines(item, resolution)
    # Each line escaped on its own: no value can add a line or move the cursor.
    return "\n".join(printable(masker.text(line)) for line in lines)


def _event_masker(item: WatchInput) -> _Masker:
    """Masks the event's pod's own token (from its args) and anything token-shaped."""
    from k8s_workloads.payload import _message_masker, _pod_args_tokens  # noqa: PLC0415

    event = getattr(item, "event", None)
    pod = event.get("object") if isinstance(event, dict) else None
    return _message_masker(_pod_args_tokens(pod))


def _print_summary(counts: dict[str, int], out: TextIO, *, as_json: bool) -> None:
    from k8s_workloads.events import Outcome  # noqa: PLC0415

    total = sum(counts.values())
    ordered = {o.value: counts[o.value] for o in Outcome if counts.get(o.value)}
    if as_json:
        print(json.dumps({"summary": {"inputs": total, "outcomes": ordered}}), file=out)
    else:
        print(f"summary: {total} input{'' if total == 1 else 's'}", file=out)
        for outcome, count in ordered.items():
            print(f"  {outcome:<22}{count:>7}", file=out)
    out.flush()


def _open_stream(args: argparse.Namespace, stdin: TextIO, err: TextIO) -> tuple[TextIO, str]:
    if args.example:
        if args.file is not None:
            raise UsageError("give a FILE or --example, not both")
        handle = (
            resources.files("k8s_workloads").joinpath(WATCH_EXAMPLE).open("r", encoding="utf-8")
        )
        return cast("TextIO", handle), f"the bundled {WATCH_EXAMPLE}"
    if args.file is None or args.file == "-":
        reconfigure = getattr(stdin, "reconfigure", None)
        if reconfigure is not None:
            # JSON is UTF-8 (RFC 8259), whatever the locale; bad bytes become U+FFFD and
            # then a malformed line, never a traceback.
            with contextlib.suppress(OSError, ValueError):  # already read from, or not a file
                reconfigure(encoding="utf-8", errors="replace")
        if stdin.isatty():
            print("k8s-workloads resolve: reading watch events from standard input", file=err)
        return stdin, "standard input"
    try:
        handle = open(args.file, encoding="utf-8", errors="replace")  # noqa: PTH123, SIM115
    except OSError as error:
        raise UsageError(f"cannot read {args.file}: {error.strerror or error}") from None
    return handle, args.file


def _silence(out: TextIO) -> None:
    """Point ``out``'s descriptor at /dev/null, so that flushing at exit cannot fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())


def _resolve(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:
    from k8s_workloads.events import Outcome  # noqa: PLC0415
    from k8s_workloads.streams import MalformedInput, parse_watch_stream, resolve_stream  # noqa: PLC0415

    config = _resolve_config(args)
    now = _parse_now(args.now) if args.now is not None else None
    handle, where = _open_stream(args, stdin, err)
    counts: dict[str, int] = {}
    malformed = Outcome.MALFORMED.value
    try:
        inputs = parse_watch_stream(_chunks(handle, where))
        for item, resolution in resolve_stream(inputs, config=config, now=now):
            if isinstance(item, MalformedInput) or resolution is None:
                error = item.error if isinstance(item, MalformedInput) else "unreadable"
                counts[malformed] = counts.get(malformed, 0) + 1
                print(f"k8s-workloads resolve: line {item.line}: {one_line(error)}", file=err)
                err.flush()
                continue
            counts[resolution.outcome.value] = counts.get(resolution.outcome.value, 0) + 1
            masker = _event_masker(item)
            if resolution.outcome is Outcome.MALFORMED:
                reason = printable(masker.text(resolution.reason))
                print(f"k8s-workloads resolve: line {item.line}: {reason}", file=err)
                err.flush()
                continue
            if args.json:
                record = _resolution_json(item, resolution, explain=args.explain)
                text = json.dumps(masker.json_value(record))
            else:
                text = _resolution_text(item, resolution, explain=args.explain, masker=masker)
            print(text, file=out)
            out.flush()
    except KeyboardInterrupt:  # the usual end of watching a live stream
        if args.summary:
            _print_summary(counts, out, as_json=args.json)
        return 130
    finally:
        if handle is not stdin:
            handle.close()
    if args.summary:
        _print_summary(counts, out, as_json=args.json)
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="k8s-workloads",
        description="Build, read and reason about the pods of Kubernetes executors.",
    )
    parser.add_argument("--version", action="version", version=f"k8s-workloads {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    decode = sub.add_parser(
        "decode", help="pod annotations (JSON) to the workload key they describe (JSON)"
    )
    decode.add_argument("file", nargs="?", default="-", help="annotations JSON file, or - (stdin)")
    decode.add_argument("--labels", help="the pod's labels as a JSON object")
    decode.add_argument(
        "--airflow-version",
        help="the Airflow version to decode for (callbacks need 3.3+); "
        "default: the installed Airflow's, else none",
    )
    sub.add_parser("demo", help="decode the bundled example pods")
    simulate = sub.add_parser(
        "simulate",
        help="run an executor scenario against an in-memory cluster (default: the bundled one)",
        description="Run tasks and callbacks through an executor built from this library, "
        "against an in-memory cluster, and print the timeline and every workload's end "
        "state. Exit 0: fine; 1: an invariant broke; 2: a bad scenario file.",
    )
    simulate.add_argument("scenario", nargs="?", help="a scenario YAML file")
    simulate.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="output format"
    )
    simulate.add_argument(
        "--max-entries",
        type=_positive_int,
        default=MAX_SCENARIO_ENTRIES,
        metavar="N",
        help="refuse a scenario of more workloads, pod scripts, steps, creation errors, "
        "restarts and watch errors in all, YAML aliases expanded (default: %(default)s)",
    )
    airflow_config = sub.add_parser(
        "airflow-config",
        help="print the Airflow settings that run this library's executor",
        description="Print a ready airflow.cfg fragment (or, with --env, the environment "
        "lines) that runs k8s_workloads.airflow.KubernetesExecutor with callbacks, with the "
        "library's own [kubernetes_executor] options at their defaults.",
    )
    airflow_config.add_argument(
        "--env", action="store_true", help="AIRFLOW__SECTION__KEY=value lines instead"
    )
    _add_render(sub)
    _add_resolve(sub)
    return parser


# The executor and the library's own [kubernetes_executor] options, at their defaults.
AIRFLOW_SETTINGS: tuple[tuple[str, str, str, str], ...] = (
    ("core", "executor", "k8s_workloads.airflow.KubernetesExecutor", "the one line that matters"),
    ("kubernetes_executor", "callback_launch_failure_retries", "0",
     "requeue a callback whose pod failed before it ran (-1: always)"),
    ("kubernetes_executor", "mark_kept_failed_pods_done", "True",
     "label kept failed pods done, so restarts stop re-reading them"),
    ("kubernetes_executor", "max_handling_retries", "3",
     "retries of a result whose handling failed, on later syncs"),
    ("kubernetes_executor", "pending_policy", "False",
     "read Pending pods with grace periods (image pulls, scheduling) instead of failing at once"),
    ("kubernetes_executor", "secure_workload_payload", "False",
     "the workload JSON (and its token) in a Secret, not in the pod's args"),
)  # fmt: skip


def _airflow_config(args: argparse.Namespace, out: TextIO) -> int:
    if args.env:
        out.writelines(
            f"AIRFLOW__{section.upper()}__{key.upper()}={value}\n"
            for section, key, value, _ in AIRFLOW_SETTINGS
        )
        return 0
    section_now = None
    for section, key, value, why in AIRFLOW_SETTINGS:
        if section != section_now:
            out.write(("\n" if section_now else "") + f"[{section}]\n")
            section_now = section
        out.write(f"# {why}\n{key} = {value}\n")
    return 0


def _add_resolve(sub: Any) -> None:  # noqa: ANN401 - argparse's private subparsers action
    resolve = sub.add_parser(
        "resolve",
        help="what each event of a pod watch stream means for its workload",
        description="Read a pod watch stream (JSON lines as the API server sends them, or "
        "kubectl get pods --watch --output-watch-events -o json) and print, for each event "
        "as it arrives, the pod, its workload, the outcome, the state to report and why. "
        "Input that is not a watch event is reported on stderr and skipped.",
    )
    resolve.add_argument(
        "file", nargs="?", metavar="FILE", help="the watch stream, or - (default: stdin)"
    )
    resolve.add_argument(
        "--example", action="store_true", help="read the bundled example stream instead"
    )
    resolve.add_argument("--json", action="store_true", help="print one JSON object per event")
    resolve.add_argument(
        "--explain",
        action="store_true",
        help="add the event type, resource version, failure details and classification",
    )
    resolve.add_argument(
        "--airflow-version",
        help="the Airflow version to resolve for (callback pods need 3.3+); default: the "
        f"installed Airflow's, else none ({DEMO_AIRFLOW_VERSION} with --example)",
    )
    resolve.add_argument(
        "--fatal-reasons",
        metavar="A,B,C",
        help="container waiting reasons that fail a Pending pod at once (the provider's "
        "worker_pod_pending_fatal_container_state_reasons; empty disables); default: the "
        "provider's",
    )
    resolve.add_argument(
        "--pending-policy",
        action="store_true",
        help="read Pending pods with grace periods per waiting reason (PendingPolicy "
        "defaults) instead of the fatal reasons",
    )
    resolve.add_argument(
        "--now",
        metavar="ISO8601",
        help="the time grace periods are measured to (with --pending-policy); without it "
        "none expire",
    )
    resolve.add_argument(
        "--summary", action="store_true", help="print the count of each outcome at the end"
    )


def _add_render(sub: Any) -> None:  # noqa: ANN401 - argparse's private subparsers action
    render = sub.add_parser(
        "render",
        help="the pod (YAML or JSON) an executor creates for a task or callback workload",
        description="Print the worker pod an executor would create for an Airflow 3 "
        "workload, built by the library as the executor builds it. The Execution API "
        "token is redacted unless --no-redact.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--namespace", default="default", help="default: %(default)s")
    common.add_argument(
        "--scheduler-job-id", default="1", help="the owning scheduler's job id (default: 1)"
    )
    common.add_argument("--image", help="the worker image (kube_image); default: the template's")
    common.add_argument(
        "--airflow-version",
        help="the Airflow version the pod is for (labels; callbacks need 3.3+); "
        "default: the installed Airflow's",
    )
    common.add_argument(
        "--workload",
        metavar="FILE",
        help="the workload JSON (workload.model_dump_json()), or - for stdin; "
        "default: a bundled example",
    )
    common.add_argument(
        "--template", metavar="FILE", help="pod template (YAML or JSON) to merge the pod over"
    )
    common.add_argument(
        "--secure",
        action="store_true",
        help="deliver the workload in a Secret mounted into the pod, not in its args; "
        "prints the Secret, then the Pod",
    )
    common.add_argument(
        "-o", "--output", choices=("yaml", "json"), default="yaml", help="default: yaml"
    )
    common.add_argument(
        "--no-redact",
        action="store_true",
        help="print the Execution API token instead of ***REDACTED***",
    )
    common.add_argument(
        "--max-yaml-nodes",
        type=_positive_int,
        default=MAX_YAML_NODES,
        metavar="N",
        help="refuse a template or override that stands for more nodes, its YAML aliases "
        "expanded (default: %(default)s)",
    )
    kinds = render.add_subparsers(dest="kind", required=True)
    task = kinds.add_parser(
        "task",
        parents=[common],
        help="a task instance's pod",
        description="Ids default to the workload's ti.* fields.",
    )
    task.add_argument("--dag-id", help="default: the workload's ti.dag_id")
    task.add_argument("--task-id", help="default: the workload's ti.task_id")
    task.add_argument("--run-id", help="default: the workload's ti.run_id")
    task.add_argument(
        "--try-number", type=int, help="default: the workload's ti.try_number, else 1"
    )
    task.add_argument("--map-index", type=int, help="default: the workload's ti.map_index, else -1")
    task.add_argument("--pod-id", help="the pod name; default: made from the dag and task ids")
    task.add_argument(
        "--override", metavar="FILE", help="pod_override (YAML or JSON) merged over the pod"
    )
    callback = kinds.add_parser(
        "callback",
        parents=[common],
        help="a callback workload's pod (Airflow 3.3+)",
        description="The dag and run ids default to those in the log path.",
    )
    callback.add_argument("--callback-id", required=True, help="the callback's UUID")
    callback.add_argument("--dag-id", help="default: from the log path")
    callback.add_argument("--run-id", help="default: from the log path")
    callback.add_argument(
        "--log-path",
        help="executor_callbacks/<dag_id>/<run_id>/<callback_id>; default: the workload's log_path",
    )


class _ClosedStream:
    """What stands for a standard stream that was closed when we started (``<&-``).

    Python sets ``sys.stdin`` (or ``stdout``, ``stderr``) to None then; reading or
    writing this fails as a closed descriptor does, and is reported as any I/O error.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def _fail(self, *_: object) -> NoReturn:
        raise OSError(errno.EBADF, f"{self.name} is closed")

    read = readline = write = fileno = _fail

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _stream(given: TextIO | None, standard: TextIO | None, name: str) -> TextIO:
    if given is not None:
        return given
    return standard if standard is not None else cast("TextIO", _ClosedStream(name))


def _report(err: TextIO, line: str) -> None:
    """Write one line to stderr (escaped, token-shaped content masked), if stderr can still
    be written to."""
    with contextlib.suppress(OSError, ValueError):
        print(one_line(line), file=err)
        err.flush()


def _flush(out: TextIO) -> None:
    """Flush ``out``; if that fails, point it at /dev/null so that exit cannot fail again."""
    try:
        out.flush()
    except (OSError, ValueError):
        _silence(out)
        raise


EXIT_CLOSED_PIPE = 141
"""The exit status when the reader of our output went away (``| head``): 128 + SIGPIPE,
what a shell reports for a tool that a closed pipe ended."""


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run the console script; returns the exit status.

    0: done; 1: decode's annotations are not a workload's, simulate found an anomaly, or
    the output could not be written (a full disk); 2: bad input, one line on stderr;
    130: interrupted; 141: the reader of the output went away (``| head``), quietly.
    """
    out = _stream(stdout, sys.stdout, "standard output")
    err = _stream(stderr, sys.stderr, "standard error")
    inp = _stream(stdin, sys.stdin, "standard input")
    command = ""
    try:
        try:
            args = _parser().parse_args(argv)
        finally:
            _flush(out)  # --help into a closed pipe
        command = f"{args.command} {args.kind}" if args.command == "render" else args.command
        status = _run(args, out, err, inp)
        _flush(out)  # a full disk or a closed pipe shows here, not at the interpreter's exit
    except (UsageError, InvalidVersion) as error:
        _report(err, f"k8s-workloads {command}: {error}")
        return 2
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        _silence(out)
        return EXIT_CLOSED_PIPE
    except OSError as error:  # writing failed: no space left, an I/O error
        _silence(out)
        problem = error.strerror or str(error)
        where = f"{error.filename}: {problem}" if error.filename else problem
        _report(err, f"k8s-workloads {command or 'error'}: cannot write the output: {where}")
        return 1
    except KeyboardInterrupt:
        return 130
    return status


def _run(args: argparse.Namespace, out: TextIO, err: TextIO, inp: TextIO) -> int:
    if args.command == "decode":
        return _decode(args, out, err, inp)
    if args.command == "render":
        return _render(args, out, err, inp)
    if args.command == "resolve":
        return _resolve(args, out, err, inp)
    if args.command == "airflow-config":
        return _airflow_config(args, out)
    if args.command == "simulate":
        # Deferred: the simulator and yaml load only for this command.
        from k8s_workloads.simulate import run_simulation_cli  # noqa: PLC0415

        return run_simulation_cli(
            args.scenario, out=out, err=err, fmt=args.output, max_entries=args.max_entries
        )
    return _demo(out)
