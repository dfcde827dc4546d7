"""Scenario files within bounds: their size, their nesting, and the entries they expand to."""

from __future__ import annotations

import io
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.cli import main
from k8s_workloads.sim import (
    MAX_SCENARIO_BYTES,
    MAX_SCENARIO_ENTRIES,
    ScenarioError,
    ScenarioTooLarge,
    load_scenario,
    parse_scenario,
)
from k8s_workloads.sim import scenario as scenario_module

BUNDLED = str(resources.files("k8s_workloads").joinpath("examples/scenario.yaml"))


def bomb(workloads: int, pods: int, steps: int) -> str:
    """Distinct workloads whose pods and steps are aliases: workloads x pods x steps steps."""
    step = "&s {after: 1, phase: Running}" + ", *s" * (steps - 1)
    pod = f"&p {{steps: [{step}]}}" + ", *p" * (pods - 1)
    lines = ["workloads:", f"  - {{kind: task, dag_id: d, task_id: t0, pods: &ps [{pod}]}}"]
    lines += [
        f"  - {{kind: task, dag_id: d, task_id: t{n}, pods: *ps}}" for n in range(1, workloads)
    ]
    return "\n".join(lines) + "\n"


def test_a_few_kilobytes_of_aliases_are_refused_before_they_are_written_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 200 x 200 x 200 = 8 million steps from 12 KB: 75 s and 1.5 GB before.
    text = bomb(200, 200, 200)
    assert len(text) < 12_500
    parsed = 0
    parse_step = scenario_module._parse_step

    def counting(*args: object, **kwargs: object) -> object:
        nonlocal parsed
        parsed += 1
        return parse_step(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scenario_module, "_parse_step", counting)
    with pytest.raises(ScenarioTooLarge) as caught:
        parse_scenario(text, "bomb.yaml", max_entries=5_000)
    assert caught.value.limit == "max_entries"
    assert caught.value.field.startswith("workloads[0].pods[")
    assert caught.value.field.endswith("].steps")
    assert caught.value.line == 2
    assert "more than 5,000 entries" in str(caught.value)
    assert parsed <= 5_000  # refused as the count passed the limit, not after


def test_the_default_limit_refuses_the_bomb() -> None:
    with pytest.raises(ScenarioTooLarge, match=f"more than {MAX_SCENARIO_ENTRIES:,} entries"):
        parse_scenario(bomb(200, 200, 200))


@st.composite
def _scripts(draw: st.DrawFn) -> tuple[list[list[int]], list[bool]]:
    """Workloads as lists of pod scripts (their step counts), and which pods are aliases."""
    workloads = draw(st.lists(st.lists(st.integers(1, 4), min_size=1, max_size=3), max_size=4))
    workloads = workloads or [[1]]
    aliased = draw(st.lists(st.booleans(), min_size=len(workloads), max_size=len(workloads)))
    return workloads, aliased


def _scenario(workloads: list[list[int]], aliased: list[bool], *, aliases: bool) -> str:
    lines = ["workloads:"]
    for number, (pods, alias) in enumerate(zip(workloads, aliased, strict=True)):
        scripts: list[str] = []
        for steps in pods:
            step = "{after: 1, phase: Running}"
            listed = ", ".join([step] * steps)
            if aliases and alias:
                listed = f"&s{number}_{len(scripts)} {step}" + f", *s{number}_{len(scripts)}" * (
                    steps - 1
                )
            scripts.append(f"{{steps: [{listed}]}}")
        lines.append(
            f"  - {{kind: task, dag_id: d, task_id: t{number}, pods: [{', '.join(scripts)}]}}"
        )
    return "\n".join(lines) + "\n"


@given(_scripts())
def test_aliases_read_as_written_out_and_count_the_same(
    scripts: tuple[list[list[int]], list[bool]],
) -> None:
    workloads, aliased = scripts
    written = _scenario(workloads, aliased, aliases=False)
    with_aliases = _scenario(workloads, aliased, aliases=True)
    entries = len(workloads) + sum(len(pods) + sum(pods) for pods in workloads)
    assert parse_scenario(with_aliases, max_entries=entries) == parse_scenario(
        written, max_entries=entries
    )
    for text in (written, with_aliases):
        with pytest.raises(ScenarioTooLarge):
            parse_scenario(text, max_entries=entries - 1)


def test_restarts_and_watch_errors_count_too() -> None:
    text = "workloads: [{kind: task, dag_id: d, task_id: t}]\nrestarts: [&r {at: 1}, *r, *r]\n"
    assert len(parse_scenario(text, max_entries=4).restarts) == 3
    with pytest.raises(ScenarioTooLarge) as caught:
        parse_scenario(text, max_entries=3)
    assert caught.value.field == "restarts"
    text = "workloads: [{kind: task, dag_id: d, task_id: t}]\nwatch_errors: [&e {at: 1}, *e]\n"
    with pytest.raises(ScenarioTooLarge, match="watch_errors"):
        parse_scenario(text, max_entries=2)


def test_deep_yaml_is_refused_not_a_recursion_error() -> None:
    with pytest.raises(ScenarioTooLarge, match="nested more than 100 deep") as caught:
        parse_scenario("workloads: " + "[" * 10_000 + "]" * 10_000)
    assert caught.value.limit == "max_depth"


def test_a_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("workloads: [{kind: task, dag_id: d, task_id: t}]\n")
    size = path.stat().st_size
    assert load_scenario(str(path), max_bytes=size).workloads
    with pytest.raises(ScenarioTooLarge, match=f"over {size - 1:,} bytes") as caught:
        load_scenario(str(path), max_bytes=size - 1)
    assert caught.value.limit == "max_bytes"
    assert isinstance(caught.value, ScenarioError)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_endless_file_is_refused_after_the_limit() -> None:
    with pytest.raises(ScenarioTooLarge, match=f"over {MAX_SCENARIO_BYTES:,} bytes"):
        load_scenario("/dev/zero")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err, stdin=io.StringIO())
    return code, out.getvalue(), err.getvalue()


def test_simulate_refuses_in_one_line_and_max_entries_raises_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(bomb(200, 200, 200))
    code, out, err = run("simulate", str(path))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith(f"k8s-workloads simulate: {path}:2: workloads[")
    assert "simulate --max-entries" in err
    code, out, err = run("simulate", BUNDLED, "--max-entries", "5")
    assert (code, out) == (2, "")
    assert "more than 5 entries" in err
    code, _, err = run("simulate", BUNDLED)
    assert (code, err) == (0, "")
