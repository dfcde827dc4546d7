"""``simulate`` (:mod:`k8s_workloads.cli._simulate`): the simulator behind the console
script (the simulator itself is tested in ``tests/sim``).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import run


def test_simulate_runs_the_bundled_scenario_through_the_console_script() -> None:
    code, out, err = run("simulate")
    assert (code, err) == (0, "")
    assert "13 workloads: 5 failed, 8 success" in out
    assert "0 anomalies" in out
    json_code, json_out, _ = run("simulate", "-o", "json")
    assert json_code == 0
    assert json.loads(json_out)


def test_simulate_bad_scenario_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nworkloads: 5\n")
    code, out, err = run("simulate", str(path))
    assert code == 2
    assert out == ""
    assert "workloads" in err
