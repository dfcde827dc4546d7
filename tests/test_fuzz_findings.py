"""The fuzz harness in CI: every kept finding replayed, and a few fixed seeds per target.

``fuzz/run.py`` runs the targets of ``tests/support/fuzzing.py`` for as long as asked; here each
runs a bounded number of fixed iterations (seconds in all), so the checks themselves are
exercised, and every input in ``fuzz/findings/`` is a regression test. Inputs on which a
bug is still open live in ``fuzz/open-findings/`` and are not replayed (see
fuzz/README.md); the errors they show are allowed below, by target and message, until fixed.
"""

from __future__ import annotations

import json
import math

import pytest

from k8s_workloads.pods import labels
from tests.support import fuzzing

FINDINGS = fuzzing.ROOT / "fuzz" / "findings"
OPEN_FINDINGS = fuzzing.ROOT / "fuzz" / "open-findings"

ITERATIONS = {
    "annotations_to_key": 200,
    "make_safe_label_value": 300,
    "failures": 150,
    "resolve_event": 150,
    "validate_manifest": 50,
    "stream": 5,
    "cli_decode": 25,
    "cli_resolve": 6,
    "cli_render": 10,
    "cli_subprocess": 1,
}
SEEDS = (1, 2, 3)

KNOWN_OPEN: tuple[tuple[str, str], ...] = ()
"""Open bugs the fixed seeds may meet: (target, a piece of the error). Remove when fixed."""


def _is_known_open(finding: fuzzing.Finding) -> bool:
    last = finding.error.rstrip().splitlines()[-1]
    return any(target == finding.target and piece in last for target, piece in KNOWN_OPEN)


def test_every_target_has_a_ci_budget() -> None:
    assert set(ITERATIONS) == set(fuzzing.TARGETS)


@pytest.mark.parametrize("name", sorted(fuzzing.TARGETS))
def test_fixed_seeds_find_nothing_new(name: str) -> None:
    target = fuzzing.TARGETS[name]
    new = []
    for seed in SEEDS[:1] if name == "cli_subprocess" else SEEDS:  # a process each
        for iteration in range(ITERATIONS[name]):
            finding = fuzzing.run_iteration(target, seed, iteration)
            if finding is not None and not _is_known_open(finding):
                new.append(finding.describe())
    assert new == []


def test_every_kept_finding_now_passes() -> None:
    paths = sorted(FINDINGS.glob("*.json"))
    failing = []
    for path in paths:
        finding = fuzzing.replay(path.read_text(encoding="utf-8"))
        if finding is not None:
            failing.append(f"{path.name}: {finding.describe()}")
    assert failing == []


def test_open_findings_are_stored_readably() -> None:
    # Not replayed (their bugs are open), but each must load, so it can be moved to
    # fuzz/findings/ as a regression test once fixed.
    for path in sorted(OPEN_FINDINGS.glob("*.json")):
        name, _value = fuzzing.load_input(path.read_text(encoding="utf-8"))
        assert name in fuzzing.TARGETS, path.name


def test_inputs_json_cannot_write_are_stored_and_read_back() -> None:
    shared = ["x"]
    cyclic: dict[str, object] = {"a": 1}
    cyclic["self"] = cyclic
    value = {
        "huge": 10**5000,
        "negative": -(10**4400),
        "deep": fuzzing.deep(5000),
        "surrogate\ud800": "a\udc00",
        "floats": [math.nan, math.inf, -0.0, 1e-320],
        "bytes": b"\xff\x00",
        "shared": [shared, shared],
        "cyclic": cyclic,
    }
    text = fuzzing.dump_input(fuzzing.Finding("stream", 1, 2, value, "E: boom"))
    json.loads(text)  # a plain JSON file
    name, loaded = fuzzing.load_input(text)
    assert name == "stream"
    assert loaded["huge"] == 10**5000
    assert loaded["negative"] == -(10**4400)
    assert loaded["surrogate\ud800"] == "a\udc00"
    assert loaded["bytes"] == b"\xff\x00"
    nan, inf, zero, tiny = loaded["floats"]
    assert math.isnan(nan)
    assert (inf, zero, tiny) == (math.inf, 0.0, 1e-320)
    assert math.copysign(1, zero) == -1
    depth, inner = 0, loaded["deep"]
    while isinstance(inner, list):
        depth, inner = depth + 1, inner[0]
    assert (depth, inner) == (5000, "x")
    assert loaded["shared"][0] is loaded["shared"][1]
    assert loaded["cyclic"]["self"] is loaded["cyclic"]


def test_plain_inputs_are_stored_as_plain_json() -> None:
    text = fuzzing.dump_input(fuzzing.Finding("stream", 1, 2, {"chunks": ["{}"]}, "E"))
    assert json.loads(text)["input"] == {"chunks": ["{}"]}


def test_a_broken_promise_is_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    # The checks can fail: with make_safe_label_value returning its input as it is, the
    # first generated value that is not a label value is reported.
    monkeypatch.setattr(labels, "make_safe_label_value", lambda value: value)
    target = fuzzing.TARGETS["make_safe_label_value"]
    findings = [fuzzing.run_iteration(target, 1, iteration) for iteration in range(50)]
    found = [finding for finding in findings if finding is not None]
    assert found
    assert found[0].error.startswith("BrokenPromise: not a valid label value")
    assert fuzzing.replay(fuzzing.dump_input(found[0])) is not None


def test_an_exception_is_a_finding_with_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def raises(_value: str) -> str:
        raise KeyError("boom")

    monkeypatch.setattr(labels, "make_safe_label_value", raises)
    finding = fuzzing.run_iteration(fuzzing.TARGETS["make_safe_label_value"], 1, 0)
    assert finding is not None
    assert "Traceback" in finding.error
    assert finding.error.rstrip().endswith("KeyError: 'boom'")


def test_iterations_are_reproducible_one_by_one() -> None:
    target = fuzzing.TARGETS["stream"]
    first = target.generate(fuzzing.rng_for("stream", 5, 17))
    again = target.generate(fuzzing.rng_for("stream", 5, 17))
    other = target.generate(fuzzing.rng_for("stream", 5, 18))
    assert first == again
    assert first != other
