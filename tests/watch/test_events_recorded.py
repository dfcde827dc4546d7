"""``events.resolve_event`` on recorded-style watch streams, event by event, against
hand-written expectations (the stream reader itself is tested in ``test_streams.py``).

Each stream in ``tests/data`` (``<name>.jsonl``, or ``<name>.json`` in kubectl's
pretty-printed format) has ``<name>.expected.jsonl``: per event the outcome, state, key,
pod and a substring of the reason (and, for failures, the classification), written from
the provider's decision table by ``tests/data/make_streams.py``. Every event goes through
``resolve_event`` with Airflow 3.3.2 and must match.
"""

from __future__ import annotations

import filecmp
import itertools
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from k8s_workloads.cli import key_to_json
from k8s_workloads.pods.validation import validate_manifest
from k8s_workloads.watch.events import resolve_event
from k8s_workloads.watch.resolution import Outcome, Resolution, ResolverConfig
from k8s_workloads.watch.streams import MalformedInput, ParsedEvent, parse_watch_stream

DATA = Path(__file__).parents[1] / "data"
CONFIG = ResolverConfig(airflow_version="3.3.2")


def _stream_path(name: str) -> Path:
    for suffix in (".jsonl", ".json"):
        path = DATA / f"{name}{suffix}"
        if path.exists():
            return path
    raise FileNotFoundError(f"no stream for {name}")


STREAMS = sorted(
    path.name.removesuffix(".expected.jsonl") for path in DATA.glob("*.expected.jsonl")
)


def _events(path: Path) -> list[ParsedEvent]:
    with path.open(encoding="utf-8") as handle:
        items = list(parse_watch_stream(handle))
    bad = [item for item in items if isinstance(item, MalformedInput)]
    assert not bad, bad
    return [item for item in items if isinstance(item, ParsedEvent)]


def _expectations(name: str) -> list[dict[str, Any]]:
    text = (DATA / f"{name}.expected.jsonl").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


def _mismatches(item: ParsedEvent, resolution: Resolution, expected: dict[str, Any]) -> list[str]:
    found: dict[str, Any] = {
        "line": item.line,
        "event": resolution.event_type,
        "pod": resolution.pod_name,
        "outcome": resolution.outcome.value,
        "state": None if resolution.state is None else resolution.state.value,
        "key": None if resolution.key is None else key_to_json(resolution.key),
    }
    problems = [
        f"{field}: expected {expected[field]!r}, got {value!r}"
        for field, value in found.items()
        if expected[field] != value
    ]
    if expected["reason"] not in resolution.reason:
        problems.append(
            f"reason: expected to contain {expected['reason']!r}: {resolution.reason!r}"
        )
    if "classification" in expected:
        classification = resolution.classification
        shown = (
            None
            if classification is None
            else {
                "kind": classification.kind.value,
                "retryable": classification.retryable,
                "reason": classification.reason,
            }
        )
        if shown != expected["classification"]:
            problems.append(
                f"classification: expected {expected['classification']!r}, got {shown!r}"
            )
    return problems


def test_there_are_streams_of_a_few_hundred_events() -> None:
    assert len(STREAMS) >= 6
    assert "kubectl_watch" in STREAMS
    assert _stream_path("kubectl_watch").suffix == ".json"
    total = sum(len(_expectations(name)) for name in STREAMS)
    assert 200 <= total <= 600


@pytest.mark.parametrize("name", STREAMS)
def test_every_event_resolves_as_expected(name: str) -> None:
    events = _events(_stream_path(name))
    expectations = _expectations(name)
    assert len(events) == len(expectations)
    failures: list[str] = []
    for item, expected in zip(events, expectations, strict=True):
        resolution = resolve_event(item.event, config=CONFIG)
        failures.extend(
            f"{name} line {item.line} ({expected['pod']}): {problem}"
            for problem in _mismatches(item, resolution, expected)
        )
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", STREAMS)
def test_failures_carry_details_and_a_classification(name: str) -> None:
    for item in _events(_stream_path(name)):
        resolution = resolve_event(item.event, config=CONFIG)
        if resolution.outcome is Outcome.FAILED:
            assert resolution.failure_details, item.line
            assert resolution.classification is not None
            assert "None" not in resolution.reason
            assert resolution.to_result() is not None


def test_resolve_event_reaches_every_outcome_but_malformed_on_the_streams() -> None:
    # What the code gives, not what the table or the fixtures say: each outcome (every
    # row of the provider's decision table, and every check before it) happens.
    seen = {
        resolve_event(item.event, config=CONFIG).outcome
        for name in STREAMS
        for item in _events(_stream_path(name))
    }
    assert seen == set(Outcome) - {Outcome.MALFORMED}


def test_pods_in_the_streams_are_valid_manifests() -> None:
    for name in STREAMS:
        for item in _events(_stream_path(name)):
            event = item.event
            assert isinstance(event, dict)
            obj = event["object"]
            if event["type"] in {"ADDED", "MODIFIED", "DELETED"}:
                assert (obj["apiVersion"], obj["kind"]) == ("v1", "Pod")
                assert validate_manifest(obj) == [], (name, item.line)
                metadata = obj["metadata"]
                assert metadata["uid"]
                assert metadata["resourceVersion"].isdigit()
                assert metadata["creationTimestamp"].endswith("Z")
                assert obj["status"]["qosClass"] in {"Burstable", "BestEffort", "Guaranteed"}


def test_resource_versions_grow_along_each_stream() -> None:
    for name in STREAMS:
        versions = [
            int(item.event["object"]["metadata"]["resourceVersion"])
            for item in _events(_stream_path(name))
            if isinstance(item.event, dict) and item.event["type"] != "ERROR"
        ]
        assert versions == sorted(versions), name


def test_the_kubectl_stream_is_pretty_printed_and_concatenated() -> None:
    text = _stream_path("kubectl_watch").read_text("utf-8")
    assert text.startswith('{\n    "type": "ADDED",\n    "object": {\n')
    assert "}\n{\n" in text
    lines = [item.line for item in _events(_stream_path("kubectl_watch"))]
    assert lines[0] == 1
    assert all(b - a > 100 for a, b in itertools.pairwise(lines))


def test_the_bundled_example_is_the_sample_stream() -> None:
    bundled = resources.files("k8s_workloads").joinpath("examples/watch_events.jsonl")
    assert bundled.read_text("utf-8") == (DATA / "sample.jsonl").read_text("utf-8")


def test_the_generator_is_deterministic_and_the_fixtures_are_current(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, str(DATA / "make_streams.py"), "--out", str(tmp_path), "--no-example"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    written = sorted(path.name for path in tmp_path.iterdir())
    expected = sorted(path.name for path in DATA.iterdir() if path.suffix in {".json", ".jsonl"})
    assert written == expected
    _, mismatch, errors = filecmp.cmpfiles(tmp_path, DATA, written, shallow=False)
    assert (mismatch, errors) == ([], [])
