"""Fuzzing targets: the total functions and the CLI on generated and mutated input.

Shared by ``fuzz/run.py`` (runs each target for a bounded time, outside CI) and
``tests/test_fuzz_findings.py`` (replays every kept finding, and a few fixed seeds, in CI).

A target has a generator, which makes one input from a ``random.Random``, and a check,
which runs the library on it and raises if a documented promise breaks: an exception that
is not one of the typed errors the function documents, or a CLI run that does not end in
exit 0, or 1/2 with one line on stderr, or that shows a token from its input. Each
iteration's generator gets its own ``Random(f"{target}:{seed}:{iteration}")``, so any one
iteration can be made again from its three numbers alone.

Inputs are stored (:func:`dump_input`, :func:`load_input`) as plain JSON where that
round-trips, else as a table of nodes, which keeps what JSON cannot: integers past 4,300
digits, nesting deeper than the recursion limit, NaN, bytes.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import datetime
import functools
import io
import json
import math
import random
import subprocess
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from k8s_workloads import cli
from k8s_workloads.compat import InvalidVersion
from k8s_workloads.keys import CallbackKey, TaskInstanceKey
from k8s_workloads.pods import codec, labels, redaction, validation, workload_command_args
from k8s_workloads.watch import events, failures, streams
from k8s_workloads.watch.resolution import Resolution, ResolverConfig
from tests.support import event_factory
from tests.support.output_checks import has_lone_surrogate, raw_controls

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
EXAMPLES = ROOT / "src" / "k8s_workloads" / "examples"

JWT = (
    "eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJmdXp6Iiwic2NvcGUiOiJ3b3JrbG9hZCJ9"
    ".ZnV6ei1zaWduYXR1cmUtbm90LXJlYWw"
)
"""Made up, in the shape of an Execution API token: it must never show in CLI output."""

NOW = datetime.datetime(2026, 6, 7, 12, 0, tzinfo=datetime.timezone.utc)
_RESOLVER_CONFIGS = (
    ResolverConfig(),
    ResolverConfig(airflow_version="3.3.2", pending=failures.PendingPolicy()),
)
_MAX_REPR = 600
"""How much of an input's repr a finding shows."""


class BrokenPromise(Exception):
    """A target's documented promise did not hold (the message says which)."""


@dataclass(frozen=True)
class Target:
    """One thing to fuzz: make an input, then check the library's promise on it."""

    name: str
    generate: Callable[[random.Random], Any]
    check: Callable[[Any], None]
    promise: str


@dataclass(frozen=True)
class Finding:
    """An input on which a check failed, and how."""

    target: str
    seed: int | str
    iteration: int | str
    value: Any
    error: str

    def describe(self) -> str:
        return (
            f"FINDING target={self.target} seed={self.seed} iteration={self.iteration}\n"
            f"  input: {short_repr(self.value)}\n  " + self.error.rstrip().replace("\n", "\n  ")
        )


def short_repr(value: object, limit: int = _MAX_REPR) -> str:
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # a 5,000-digit int; deep nesting
        text = f"<{type(value).__name__} whose repr fails>"
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


# --- storing inputs ---------------------------------------------------------------------


def _to_graph(value: object) -> dict[str, Any]:
    nodes: list[list[Any]] = []
    index_of: dict[int, int] = {}
    keep: list[object] = []  # holds every value, so that no id is reused
    todo: list[tuple[int, object]] = []

    def index(item: object) -> int:
        if id(item) in index_of:
            return index_of[id(item)]
        index_of[id(item)] = len(nodes)
        nodes.append([])
        keep.append(item)
        todo.append((len(nodes) - 1, item))
        return len(nodes) - 1

    root = index(value)
    while todo:
        at, item = todo.pop()
        if item is None:
            nodes[at] = ["none"]
        elif isinstance(item, bool):
            nodes[at] = ["bool", item]
        elif isinstance(item, int):
            nodes[at] = ["int", hex(item)]  # hex has no digit limit
        elif isinstance(item, float):
            nodes[at] = ["float", item.hex()]
        elif isinstance(item, str):
            nodes[at] = ["str", item]
        elif isinstance(item, bytes):
            nodes[at] = ["bytes", base64.b64encode(item).decode("ascii")]
        elif isinstance(item, list):
            nodes[at] = ["list", [index(child) for child in item]]
        elif isinstance(item, dict):
            nodes[at] = ["dict", [[index(k), index(v)] for k, v in item.items()]]
        else:
            raise TypeError(f"cannot store a {type(item).__name__}")
    return {"root": root, "nodes": nodes}


def _from_graph(graph: Mapping[str, Any]) -> object:
    nodes: list[list[Any]] = graph["nodes"]
    made: list[object] = []
    for kind, *rest in nodes:
        scalars: dict[str, Callable[[Any], object]] = {
            "none": lambda _: None,
            "bool": bool,
            "int": lambda text: int(text, 16),
            "float": float.fromhex,
            "str": str,
            "bytes": base64.b64decode,
        }
        if kind == "list":
            made.append([])
        elif kind == "dict":
            made.append({})
        else:
            made.append(scalars[kind](rest[0] if rest else None))
    for (kind, *rest), item in zip(nodes, made, strict=True):
        if kind == "list" and isinstance(item, list):
            item.extend(made[child] for child in rest[0])
        elif kind == "dict" and isinstance(item, dict):
            for key, child in rest[0]:
                item[made[key]] = made[child]
    return made[graph["root"]]


def _plain_json(value: object) -> bool:
    try:
        text = json.dumps(value, allow_nan=False)
        return bool(json.loads(text) == value and "\\u" not in text)
    except (TypeError, ValueError, RecursionError):
        return False


def dump_input(finding: Finding) -> str:
    """A finding as the JSON text of its file in ``fuzz/findings``."""
    record: dict[str, Any] = {
        "target": finding.target,
        "seed": finding.seed,
        "iteration": finding.iteration,
        "error": finding.error.rstrip().splitlines()[-1][:500] if finding.error else "",
        "input_repr": short_repr(finding.value, 2000),
    }
    if _plain_json(finding.value):
        record["input"] = finding.value
    else:
        record["input_graph"] = _to_graph(finding.value)
    return json.dumps(record, indent=1, ensure_ascii=True) + "\n"


def load_input(text: str) -> tuple[str, Any]:
    """A finding file's target name and input."""
    record = json.loads(text)
    value = record["input"] if "input" in record else _from_graph(record["input_graph"])
    return record["target"], value


# --- mutating JSON values ---------------------------------------------------------------


def deep(depth: int, leaf: object = "x", *, as_dict: bool = False) -> object:
    value = leaf
    for _ in range(depth):
        value = {"a": value} if as_dict else [value]
    return value


_ODD_TEXT = (
    "",
    " ",
    "\ud800",
    "a\udc00b",
    "etl\ud800\nforged",
    "\x00",
    "\x1b[2J\x1b[31mred",
    "line\nMODIFIED forged succeeded",
    "\r\n",
    "\u2028\u2029\u202e\u2066",
    "True",
    "False",
    "Failed",
    "Pending",
    "Running",
    "Succeeded",
    "-1",
    "00",
    "1e3",
    " 2 ",
    "0x10",
    "٣",  # an Arabic-Indic digit: int() reads it
    "ß-ç-İ",
    "executor_callbacks/" * 40,
    "callback",
    "DELETED",
    "ERROR",
    "BOOKMARK",
    "OOMKilled",
    "DisruptionTarget",
    "ErrImagePull",
    "2026-06-07T01:50:23Z",
    "2026-13-45T99:99:99",
    "019e9fc6-6f3c-7b9a-9d1e-3f2a1b0c4d5e",
    "Bad_Name!",
    JWT,
    f"Bearer {JWT}",
    f'{{"token": "{JWT}"}}',
    f'--json-string={{"token": "{JWT}"}}',
)


def odd_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(_ODD_TEXT)
    if roll < 0.6:
        return rng.choice("ab-_.") * rng.choice([62, 63, 64, 253, 254, 1000, 70_000])
    alphabet = "aZ09-_./: \"'\\{}[],\n\t\x00\x7f\x85\u00e9\u200b\u2028\ud800\udfff\U0001f600"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))


def odd_value(rng: random.Random) -> object:
    """A JSON value of some type, often one a reader does not expect."""
    makers: list[Callable[[], object]] = [
        lambda: None,
        lambda: rng.choice([True, False]),
        lambda: rng.choice([0, -1, 1, 2, 7, 137, 2**31, 2**63, -(2**64), 10**70]),
        lambda: 10 ** rng.randint(300, 6000),
        lambda: rng.choice([1.5, -0.0, 1e308, 1e-320, math.inf, -math.inf, math.nan]),
        lambda: odd_text(rng),
        lambda: odd_text(rng),
        list,
        dict,
        lambda: [odd_text(rng)] * rng.randint(1, 5),
        lambda: {odd_text(rng): odd_text(rng)},
        lambda: deep(rng.choice([50, 999, 1200, 3000]), as_dict=rng.random() < 0.5),
        lambda: list(range(rng.randint(0, 2000))),
    ]
    return rng.choice(makers)()


def _slots(value: object, limit: int = 4000, max_depth: int = 40) -> list[tuple[Any, Any]]:
    """(container, key) pairs inside ``value``, breadth first, bounded."""
    found: list[tuple[Any, Any]] = []
    queue: list[tuple[object, int]] = [(value, 0)]
    seen: set[int] = set()
    while queue and len(found) < limit:
        item, depth = queue.pop(0)
        if depth > max_depth or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            for key in list(item)[:200]:
                found.append((item, key))
                queue.append((item[key], depth + 1))
        elif isinstance(item, list):
            for key in range(min(len(item), 200)):
                found.append((item, key))
                queue.append((item[key], depth + 1))
    return found


def _mutate_once(value: object, rng: random.Random, *, cycles: bool) -> object:
    slots = _slots(value)
    if not slots or rng.random() < 0.03:
        return odd_value(rng)
    container, key = rng.choice(slots)
    current = container[key]
    operation = rng.randrange(8)
    if operation <= 2:
        container[key] = odd_value(rng)
    elif operation == 3:
        del container[key]
    elif operation == 4:  # duplicate: the same value under another key, or twice in a list
        if isinstance(container, dict):
            container[rng.choice([f"{key} ", str(key).upper(), f"{key}\ud800", odd_text(rng)])] = (
                current
            )
        else:
            container.insert(key, copy.copy(current))
    elif operation == 5 and isinstance(container, dict):  # rename the key
        del container[key]
        container[rng.choice([f"{key}\ud800", f"{key}\x00", str(key).upper(), ""])] = current
    elif operation == 6 and isinstance(current, str):  # splice odd text into a string
        cut = rng.randint(0, len(current))
        container[key] = current[:cut] + odd_text(rng) + current[cut:]
    elif operation == 7:  # wrap
        container[key] = rng.choice([[current], {"value": current}])
    else:  # another value from elsewhere; a container only where cycles may be (YAML)
        other_container, other_key = rng.choice(slots)
        with contextlib.suppress(IndexError, KeyError):  # an earlier edit removed it
            other = other_container[other_key]
            if cycles or not isinstance(other, (dict, list)):
                container[key] = other
    return value


def mutate(value: object, rng: random.Random, *, most: int = 4, cycles: bool = False) -> object:
    """A mutated copy of ``value`` (a JSON value), 1 to ``most`` edits.

    With ``cycles``, a value may come to hold itself, as a YAML alias can make it
    (``spec: &a {containers: *a}``); JSON text never can.
    """
    value = copy.deepcopy(value)
    for _ in range(rng.randint(1, most)):
        value = _mutate_once(value, rng, cycles=cycles)
    return value


def safe_dumps(value: object, rng: random.Random | None = None) -> str:
    """``value`` as JSON text, any way it can be written; a marker where it cannot."""
    indent = rng.choice([None, None, 2, 4]) if rng is not None else None
    ascii_only = rng.random() < 0.5 if rng is not None else True
    try:
        return json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    except (TypeError, ValueError, RecursionError):
        return '{"type": "MODIFIED", "object": "unwritable"}'


# --- seeds ------------------------------------------------------------------------------


def _token_pod(status: dict[str, Any]) -> dict[str, Any]:
    """A task pod that runs its workload (token and all) from its args, and says it died."""
    workload = {"token": JWT, "ti": {"dag_id": "etl", "task_id": "load"}}
    pod = event_factory.task_pod(status)
    pod["spec"]["containers"][0]["args"] = workload_command_args(workload)
    return pod


def _statuses() -> list[dict[str, Any]]:
    message = f"Traceback ...\nRuntimeError: bad workload {json.dumps({'token': JWT})}"
    return [
        event_factory.RUNNING,
        event_factory.SUCCEEDED,
        event_factory.FAILED,
        event_factory.OOM_KILLED,
        event_factory.PULL_FAILED,
        event_factory.EVICTED,
        {
            "phase": "Failed",
            "reason": "DeadlineExceeded",
            "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "Evict"}],
            "initContainerStatuses": [event_factory.terminated("init", 2, "Error")],
            "containerStatuses": [
                {"name": "base", "state": {"terminated": {"exitCode": 1, "message": message}}}
            ],
        },
        {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            "containerStatuses": [
                {
                    "name": "base",
                    "state": {
                        "waiting": {"reason": "CreateContainerConfigError", "message": "no secret"}
                    },
                    "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                }
            ],
            "startTime": "2026-06-07T10:00:00Z",
        },
    ]


@functools.lru_cache(maxsize=1)
def seed_events() -> tuple[dict[str, Any], ...]:
    """Real watch events: from the test factory, and from the recorded streams."""
    found: list[dict[str, Any]] = []
    for status in _statuses():
        found.append(event_factory.event("MODIFIED", event_factory.task_pod(status)))
        found.append(event_factory.event("MODIFIED", event_factory.callback_pod(status)))
        found.append(event_factory.event("MODIFIED", _token_pod(status)))
    found.append(event_factory.event("DELETED", _token_pod(event_factory.RUNNING)))
    found.append({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Gone"}})
    found.append({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "7"}}})
    for path in sorted(DATA.glob("*.jsonl")):
        if path.name.endswith(".expected.jsonl"):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        found.extend(json.loads(line) for line in lines[:: max(1, len(lines) // 6)] if line)
    return tuple(found)


def _example(name: str) -> str:
    return (EXAMPLES / name).read_text(encoding="utf-8")


def _choose_seed(rng: random.Random) -> dict[str, Any]:
    return copy.deepcopy(rng.choice(seed_events()))


def _pod_of(rng: random.Random) -> dict[str, Any]:
    pod = _choose_seed(rng).get("object")
    return pod if isinstance(pod, dict) else {"status": pod}


# --- checks -----------------------------------------------------------------------------


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _gen_event(rng: random.Random) -> object:
    return mutate(_choose_seed(rng), rng)


def _check_event(value: object) -> None:
    with _quiet():
        for config in _RESOLVER_CONFIGS:
            resolution = events.resolve_event(value, config=config, now=NOW)
            reason: object = resolution.reason  # the types promise it; the check does not trust
            if not isinstance(reason, str):
                raise BrokenPromise(f"resolve_event returned {short_repr(resolution)}")
            resolution.to_result()


def _edit_text(text: str, parts: list[str], rng: random.Random) -> str:
    """Cut, splice, inject, delete, repeat, or break a line, at a random place."""
    at = rng.randint(0, len(text))
    end = rng.randint(at, min(len(text), at + 500))
    other = rng.choice(parts)
    garbage = ["\x00", "}", "]", "{", "[", '"', "\\", "\ud800", "NaN", "-Infinity", "9" * 5000]
    return rng.choice(
        [
            text[:at],
            text[:at] + other[rng.randint(0, len(other)) :],
            text[:at] + rng.choice([*garbage, odd_text(rng)]) + text[at:],
            text[:at] + text[end:],
            text[:end] + text[at:],
            text[:at] + "\n" + text[at:],
        ]
    )


def _gen_stream(rng: random.Random) -> dict[str, Any]:
    parts: list[str] = []
    for _ in range(rng.randint(1, 6)):
        roll = rng.random()
        if roll < 0.1:
            parts.append(rng.choice(["{}", "[]", "1", '""', "{}[]"]) * rng.randint(2, 3000))
            continue
        value: object = _choose_seed(rng)
        if roll < 0.6:
            value = mutate(value, rng)
        parts.append(safe_dumps(value, rng))
    separators = ["\n", "\n", "", " ", "\r\n", "\n\n"]
    text = "".join(part + rng.choice(separators) for part in parts)
    for _ in range(rng.randint(0, 3)):
        text = _edit_text(text, parts, rng)
    how = rng.randrange(4)
    if how == 0 or not text:
        chunks = [text]
    elif how == 1:
        chunks = text.splitlines(keepends=True)
    else:
        size = 1 if how == 3 and len(text) < 5000 else rng.randint(1, 200)
        chunks = [text[at : at + size] for at in range(0, len(text), size)]
    limit = rng.choice([None, None, None, rng.randint(1, 3000)])
    return {"chunks": chunks, "max_object_size": limit}


def _stream_shape(inputs: list[streams.WatchInput]) -> list[tuple[object, ...]]:
    return [
        (item.line, "event", item.event)
        if isinstance(item, streams.ParsedEvent)
        else (item.line, "malformed")
        for item in inputs
    ]


def _check_stream(value: Mapping[str, Any]) -> None:
    chunks: list[str] = value["chunks"]
    limit = value["max_object_size"] or streams.MAX_OBJECT_SIZE
    with _quiet():
        parsed = list(streams.parse_watch_stream(chunks, max_object_size=limit))
        pairs = list(streams.resolve_stream(parsed, config=_RESOLVER_CONFIGS[1], now=NOW))
        whole = list(streams.parse_watch_stream(["".join(chunks)], max_object_size=limit))
    last = 1
    for item, resolution in pairs:
        if item.line < last:
            raise BrokenPromise(f"line numbers go back: {item.line} after {last}")
        last = item.line
        if isinstance(item, streams.MalformedInput):
            if resolution is not None or len(item.text) > 200:
                raise BrokenPromise(f"malformed input {short_repr(item)} with {resolution!r}")
        elif not isinstance(resolution, Resolution):
            raise BrokenPromise(f"event without a resolution: {short_repr(item)}")
    if _stream_shape(parsed) != _stream_shape(whole):
        raise BrokenPromise(
            "the result depends on where the text is cut: "
            f"{short_repr(_stream_shape(parsed))} != {short_repr(_stream_shape(whole))}"
        )


def _gen_annotations(rng: random.Random) -> dict[str, Any]:
    examples = json.loads(_example("pods.json"))
    pod = _pod_of(rng)
    metadata = pod.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    if rng.random() < 0.5:
        example = rng.choice(examples)
        annotations, found_labels = example["annotations"], example.get("labels")
    else:
        annotations, found_labels = metadata.get("annotations"), metadata.get("labels")
    if rng.random() < 0.3:
        found_labels = None
    mutated = mutate({"annotations": annotations, "labels": found_labels}, rng)
    if not isinstance(mutated, dict):
        mutated = {"annotations": mutated}
    return {
        "annotations": mutated.get("annotations"),
        "labels": mutated.get("labels"),
        "airflow_version": rng.choice([None, "3.3.2", "3.2.2", "2.10.5", "x.y", "3." + "9" * 5000]),
    }


def _check_annotations(value: Mapping[str, Any]) -> None:
    annotations = value["annotations"]
    found_labels = value["labels"]
    version = value["airflow_version"]
    try:
        key = codec.annotations_to_key(annotations, found_labels, airflow_version=version)
    except (codec.InvalidAnnotations, InvalidVersion) as error:
        if not isinstance(str(error), str):
            raise BrokenPromise("an error without a message") from error
        return
    if not isinstance(key, (TaskInstanceKey, CallbackKey)):
        raise BrokenPromise(f"not a key: {short_repr(key)}")
    again = codec.annotations_to_key(codec.key_to_annotations(key), airflow_version=version)
    if again != key:
        raise BrokenPromise(f"key_to_annotations is not the inverse: {key!r} -> {again!r}")


def _gen_label_value(rng: random.Random) -> str:
    if rng.random() < 0.3:
        pod = _pod_of(rng)
        metadata = pod.get("metadata")
        names = [str(v) for v in (metadata or {}).values()] if isinstance(metadata, dict) else []
        base = rng.choice(names) if names else "etl"
        cut = rng.randint(0, len(base))
        return base[:cut] + odd_text(rng) + base[cut:]
    return odd_text(rng)


def _check_label_value(value: str) -> None:
    made: object = labels.make_safe_label_value(value)
    if not isinstance(made, str) or not validation.is_label_value(made):
        raise BrokenPromise(f"not a valid label value: {short_repr(made)}")
    if validation.is_label_value(value) and made != value:
        raise BrokenPromise(f"a valid value was changed to {short_repr(made)}")
    if labels.make_safe_label_value(value) != made:
        raise BrokenPromise("not deterministic")


def _gen_manifest(rng: random.Random) -> object:
    roll = rng.random()
    if roll < 0.3:
        base: object = yaml.safe_load(
            _example(rng.choice(["pod_template.yaml", "pod_override.yaml"]))
        )
    else:
        base = _pod_of(rng)
    return mutate(base, rng)


def _strings_in(value: object) -> Iterator[str]:
    pending = [value]
    seen: set[int] = set()
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, (dict, list)) and id(item) not in seen:
            seen.add(id(item))
            if isinstance(item, dict):
                pending.extend(item.keys())
                pending.extend(item.values())
            else:
                pending.extend(item)


def _check_manifest(value: object) -> None:
    found: object = validation.validate_manifest(value)
    if not isinstance(found, list):
        raise BrokenPromise(f"not a list: {short_repr(found)}")
    for violation in found:
        if not isinstance(violation, validation.NamingRuleViolation) or not str(violation):
            raise BrokenPromise(f"not a violation with a message: {violation!r}")
    if not found and any(has_lone_surrogate(text) for text in _strings_in(value)):
        raise BrokenPromise("a lone surrogate passed validate_manifest")


def _gen_failed_pod(rng: random.Random) -> dict[str, Any]:
    pod = mutate(_pod_of(rng), rng)
    return pod if isinstance(pod, dict) else {"status": pod}


def _check_failure(value: Mapping[str, Any]) -> None:
    details = failures.collect_failure_details(value)
    for classification in (
        failures.classify_failure(value),
        failures.classify_failure(value, details),
        failures.classify_failure(value, details, deleted_while_running=True),
    ):
        if not isinstance(failures.describe_failure(details, classification), str):
            raise BrokenPromise("describe_failure did not give a string")
    failures.oom_killed_container(value)
    for now in (NOW, None):
        failures.demystify_pending(value, failures.PendingPolicy(), now)


# --- the CLI ----------------------------------------------------------------------------


def run_cli(argv: list[str], stdin: str, files: Mapping[str, bytes]) -> tuple[int, str, str, bool]:
    """Run the CLI in-process: (exit status, stdout, stderr, whether argparse refused).

    ``@name`` in an argument is replaced by the path of ``files[name]``, written first.
    """
    out, err = io.StringIO(), io.StringIO()
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for name, data in files.items():
            paths[name] = Path(folder) / name
            paths[name].write_bytes(data)
        args = [_with_paths(arg, paths) for arg in argv]
        try:
            with _quiet():
                code = cli.main(args, stdout=out, stderr=err, stdin=io.StringIO(stdin))
        except SystemExit as exit_:  # argparse's own usage errors
            return (exit_.code if isinstance(exit_.code, int) else 2), "", err.getvalue(), True
    return code, out.getvalue(), err.getvalue(), False


def _with_paths(arg: str, paths: Mapping[str, Path]) -> str:
    for name, path in paths.items():
        arg = arg.replace(f"@{name}", str(path))
    return arg


def _text_lines(text: str, where: str) -> list[str]:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise BrokenPromise(f"{where} cannot be written as UTF-8: {error}") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        if raw_controls(line):
            raise BrokenPromise(f"{where} has raw control characters: {short_repr(line)}")
    return lines


def _check_error_lines(code: int, err: str, prefix: str, *, warning: str | None = None) -> None:
    """Exit 1 or 2 with one line on stderr (beside warnings, if ``warning`` is their prefix)."""
    if code not in (1, 2):
        raise BrokenPromise(f"exit status {code}")
    lines = _text_lines(err, "stderr")
    errors = [line for line in lines if warning is None or not line.startswith(warning)]
    if len(errors) != 1 or not errors[0].startswith(prefix) or errors != lines[-1:]:
        raise BrokenPromise(f"not one error line on stderr: {short_repr(lines)}")


def _text_input(value: object, rng: random.Random) -> str:
    text = safe_dumps(value, rng)
    if rng.random() < 0.15:
        at = rng.randint(0, len(text))
        text = rng.choice([text[:at], text[:at] + odd_text(rng) + text[at:]])
    return text


def _gen_decode(rng: random.Random) -> dict[str, Any]:
    generated = _gen_annotations(rng)
    annotations = generated["annotations"]
    if isinstance(annotations, dict) and rng.random() < 0.3:
        annotations[rng.choice(["try_number", "note", "map_index"])] = JWT
    argv = ["decode"]
    files: dict[str, bytes] = {}
    stdin = _text_input(annotations, rng)
    if rng.random() < 0.3:
        files["annotations.json"] = stdin.encode("utf-8", "surrogatepass")
        argv.append("@annotations.json")
        stdin = ""
    else:
        argv.append("-")
    if generated["labels"] is not None:
        argv.append(f"--labels={_text_input(generated['labels'], rng)}")
    version = rng.choice([None, "3.3.2", "3.3.2", "3.2.2", "2.10.5", "x.y", "3.3.2\ud800"])
    if rng.random() < 0.02:
        version = "9" * 5000
    if version is not None:
        argv.append(f"--airflow-version={version}")
    return {"argv": argv, "stdin": stdin, "files": files}


def _check_decode(value: Mapping[str, Any]) -> None:
    code, out, err, _refused = run_cli(value["argv"], value["stdin"], value["files"])
    if JWT in err:
        raise BrokenPromise(f"the token shows on stderr: {short_repr(err)}")
    if code == 0:
        lines = _text_lines(out, "stdout")
        if err or len(lines) != 1 or not isinstance(json.loads(lines[0]), dict):
            raise BrokenPromise(f"exit 0 without one JSON line: {short_repr((out, err))}")
        return
    if out:
        raise BrokenPromise(f"exit {code} with output: {short_repr(out)}")
    _check_error_lines(code, err, "k8s-workloads decode: ")


_RESOLVE_OPTIONS: tuple[list[str], ...] = (
    [],
    ["--json"],
    ["--explain"],
    ["--json", "--explain"],
    ["--summary"],
    ["--json", "--summary"],
    ["--pending-policy", "--now=2026-06-07T12:00:00Z", "--explain"],
    ["--fatal-reasons=ErrImagePull,\ud800,"],
)


def _gen_resolve(rng: random.Random) -> dict[str, Any]:
    text = "".join(_gen_stream(rng)["chunks"])
    argv = ["resolve", *rng.choice(_RESOLVE_OPTIONS)]
    if rng.random() < 0.6:
        argv.append("--airflow-version=3.3.2")
    files: dict[str, bytes] = {}
    if rng.random() < 0.3:
        data = text.encode("utf-8", "surrogatepass")
        if rng.random() < 0.3:
            at = rng.randint(0, len(data))
            data = data[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"]) + data[at:]
        files["watch.jsonl"] = data
        argv.append("@watch.jsonl")
        text = ""
    return {"argv": argv, "stdin": text, "files": files}


def _check_resolve(value: Mapping[str, Any]) -> None:
    code, out, err, _refused = run_cli(value["argv"], value["stdin"], value["files"])
    if JWT in out or JWT in err:
        raise BrokenPromise("the token shows in resolve's output")
    if code != 0:
        raise BrokenPromise(f"exit status {code}: {short_repr(err)}")
    for line in _text_lines(out, "stdout"):
        if "--json" in value["argv"]:
            try:
                json.loads(line)
            except ValueError:
                raise BrokenPromise(f"not a JSON line: {short_repr(line)}") from None
    for line in _text_lines(err, "stderr"):
        if not line.startswith("k8s-workloads resolve: line "):
            raise BrokenPromise(f"a stderr line that names no input line: {short_repr(line)}")


def _yaml_text(value: object, rng: random.Random) -> str:
    if rng.random() < 0.7:
        try:
            return str(yaml.safe_dump(value, allow_unicode=rng.random() < 0.5))
        except (yaml.YAMLError, RecursionError, ValueError):
            pass
    return safe_dumps(value, rng)


def _gen_render(rng: random.Random) -> dict[str, Any]:
    kind = "task" if rng.random() < 0.75 else "callback"
    workload: object = json.loads(_example(f"{kind}_workload.json"))
    if isinstance(workload, dict):
        workload["token"] = JWT
    if rng.random() < 0.6:
        workload = mutate(workload, rng, most=2)
    files = {"workload.json": _text_input(workload, rng).encode("utf-8", "surrogatepass")}
    argv = ["render", kind, "--workload=@workload.json"]
    version = rng.choice(["3.3.2", "3.3.2", "3.2.2", "2.10.5", "bad"])
    argv.append(f"--airflow-version={version}")
    documents = [("template", "pod_template.yaml")]
    if kind == "task":
        documents.append(("override", "pod_override.yaml"))
    for option, name in documents:
        if rng.random() < 0.5:
            document: object = yaml.safe_load(_example(name))
            if rng.random() < 0.7:
                document = mutate(document, rng, most=3, cycles=True)
            if rng.random() < 0.2 and isinstance(document, dict):
                document.setdefault("metadata", {"labels": {}})
                with contextlib.suppress(TypeError, AttributeError, KeyError):
                    document["metadata"]["labels"]["leak"] = JWT
            files[name] = _yaml_text(document, rng).encode("utf-8", "surrogatepass")
            argv.append(f"--{option}=@{name}")
    return {"argv": argv + _render_options(kind, rng), "stdin": "", "files": files}


def _render_options(kind: str, rng: random.Random) -> list[str]:
    options = ["--namespace", "--image", "--scheduler-job-id", "--dag-id", "--run-id"]
    options += ["--task-id", "--pod-id"] if kind == "task" else ["--log-path"]
    argv = [f"{option}={odd_text(rng)}" for option in options if rng.random() < 0.15]
    if kind == "task":
        numbers = [-5, 0, 3, 10**70, 10**4000]
        argv += [
            f"{option}={rng.choice(numbers)}"
            for option in ("--try-number", "--map-index")
            if rng.random() < 0.15
        ]
    else:
        argv.append(f"--callback-id={rng.choice([event_factory.CALLBACK_ID, odd_text(rng)])}")
    if rng.random() < 0.3:
        argv.append("--secure")
    if rng.random() < 0.5:
        argv.append("--output=json")
    return argv


def _workload_tokens(value: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()
    try:
        text = value["files"]["workload.json"].decode("utf-8")
        redaction.tokens_in_json(json.loads(text), found)
    except (ValueError, RecursionError):
        pass
    return found


def _check_render(value: Mapping[str, Any]) -> None:
    argv: list[str] = value["argv"]
    code, out, err, refused = run_cli(argv, value["stdin"], value["files"])
    prefix = f"k8s-workloads render {argv[1]}: "
    if JWT in err or (JWT in out and JWT in _workload_tokens(value)):
        raise BrokenPromise(f"the token shows: {short_repr((out, err))}")
    if refused:  # argparse: an int option past int()'s digit limit
        if code != 2 or "invalid int value" not in err:
            raise BrokenPromise(f"argparse refused the arguments: {short_repr(err)}")
        return
    if code != 0:
        if out:
            raise BrokenPromise(f"exit {code} with output: {short_repr(out)}")
        _check_error_lines(code, err, prefix, warning=f"{prefix}warning: ")
        return
    for line in _text_lines(err, "stderr"):
        if not line.startswith(f"{prefix}warning: "):
            raise BrokenPromise(f"exit 0 with a stderr line that is no warning: {line!r}")
    try:
        out.encode("utf-8")
        if "--output=json" in argv:
            json.loads(out)
        else:
            list(yaml.safe_load_all(out))
    except (UnicodeEncodeError, ValueError, yaml.YAMLError) as error:
        raise BrokenPromise(f"the output does not read back: {error}") from None


def _gen_subprocess(rng: random.Random) -> dict[str, Any]:
    made = _gen_decode(rng) if rng.random() < 0.5 else _gen_resolve(rng)
    data = made["stdin"].encode("utf-8", "surrogatepass")
    if rng.random() < 0.5:
        at = rng.randint(0, len(data))
        data = data[:at] + rng.choice([b"\xff\xfe", b"\xc3", b"\xed\xa0\x80"]) + data[at:]
    argv = [arg for arg in made["argv"] if _can_exec(arg)]
    return {"argv": argv, "stdin_bytes": data, "files": made["files"]}


def _can_exec(arg: str) -> bool:
    """Whether ``arg`` can be a process argument (no NUL, no lone surrogate)."""
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in arg


def _check_subprocess(value: Mapping[str, Any]) -> None:
    argv: list[str] = value["argv"]
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for name, data in value["files"].items():
            paths[name] = Path(folder) / name
            paths[name].write_bytes(data)
        done = subprocess.run(
            [sys.executable, "-m", "k8s_workloads", *(_with_paths(a, paths) for a in argv)],
            input=value["stdin_bytes"],
            capture_output=True,
            timeout=120,
            check=False,
        )
    err = done.stderr.decode("utf-8", "replace")
    command = argv[0]
    # decode's output is the key it read: a token put in a field is data echoed back (as
    # in the in-process target); messages never show one.
    shown_text = done.stderr if command == "decode" else done.stdout + done.stderr
    if "Traceback" in err or JWT.encode() in shown_text:
        raise BrokenPromise(f"exit {done.returncode}: {short_repr(err)}")
    if command == "resolve":
        if done.returncode != 0:
            raise BrokenPromise(f"exit status {done.returncode}: {short_repr(err)}")
    elif done.returncode != 0:
        _check_error_lines(done.returncode, err, f"k8s-workloads {command}: ")


TARGETS: dict[str, Target] = {
    target.name: target
    for target in (
        Target("resolve_event", _gen_event, _check_event, "total: never raises"),
        Target(
            "stream",
            _gen_stream,
            _check_stream,
            "parse_watch_stream/resolve_stream never raise; the result is the same "
            "however the text is cut",
        ),
        Target(
            "annotations_to_key",
            _gen_annotations,
            _check_annotations,
            "a key, or InvalidAnnotations; key_to_annotations is its inverse",
        ),
        Target(
            "make_safe_label_value",
            _gen_label_value,
            _check_label_value,
            "a valid label value for any string; valid ones unchanged",
        ),
        Target(
            "validate_manifest",
            _gen_manifest,
            _check_manifest,
            "never raises; a lone surrogate anywhere is a violation",
        ),
        Target(
            "failures",
            _gen_failed_pod,
            _check_failure,
            "collect_failure_details, classify_failure, describe_failure, demystify_pending: total",
        ),
        Target(
            "cli_decode",
            _gen_decode,
            _check_decode,
            "exit 0 and one JSON line, or 1/2 and one stderr line; no token on stderr",
        ),
        Target(
            "cli_resolve",
            _gen_resolve,
            _check_resolve,
            "exit 0; clean lines; JSON lines stay JSON; no token anywhere",
        ),
        Target(
            "cli_render",
            _gen_render,
            _check_render,
            "exit 0 and output that reads back, or 1/2 and one error line; no token",
        ),
        Target(
            "cli_subprocess",
            _gen_subprocess,
            _check_subprocess,
            "decode/resolve with raw bytes on stdin: no traceback, the exit promises hold",
        ),
    )
}


def rng_for(target: str, seed: int | str, iteration: int | str) -> random.Random:
    """The generator's randomness for one iteration, independent of every other."""
    return random.Random(f"{target}:{seed}:{iteration}")


def check(target: Target, value: object) -> str | None:
    """Run ``target``'s check on ``value``: None, or what went wrong (with the traceback)."""
    try:
        target.check(value)
    except BrokenPromise as error:
        return f"BrokenPromise: {error}"
    except Exception:  # noqa: BLE001 - any other exception is what fuzzing looks for
        return traceback.format_exc(limit=-12)
    return None


def run_iteration(target: Target, seed: int | str, iteration: int) -> Finding | None:
    value = target.generate(rng_for(target.name, seed, iteration))
    error = check(target, value)
    return None if error is None else Finding(target.name, seed, iteration, value, error)


def replay(text: str) -> Finding | None:
    """Check a stored finding again: None when its promise now holds."""
    name, value = load_input(text)
    error = check(TARGETS[name], value)
    return None if error is None else Finding(name, "file", "-", value, error)
