"""``local`` (:mod:`k8s_workloads.cli._local`): its refusals, one line and exit 2 before
anything is written or started. The home it prepares is tested in ``test_local_home.py``,
the stack's parts in ``test_local_stack.py``; the stack itself runs end to end in
``tests/airflow/test_local.py``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from k8s_workloads.cli._local import _stop_on_signals, airflow_problem
from tests.support.cli import run

INSTALL = "pip install 'k8s-workloads[airflow]'"


def refused(code: int, out: str, err: str, *parts: str) -> None:
    assert (code, out) == (2, "")
    assert err.count("\n") == 1, err
    assert err.startswith("k8s-workloads local: "), err
    for part in parts:
        assert part in err, err


# --- refusals ---------------------------------------------------------------------------------


def test_a_dags_folder_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    refused(
        *run("local", "--home", str(tmp_path / "h"), "--dags", str(missing)), f"--dags {missing}"
    )
    assert not (tmp_path / "h").exists()  # nothing written


@pytest.mark.parametrize("flag", ["--home", "--dags"])
def test_a_path_with_a_line_break_is_refused(tmp_path: Path, flag: str) -> None:
    # airflow.cfg holds one setting a line.
    path = str(tmp_path / "a\nb")
    refused(*run("local", flag, path), f"{flag} {path!r}: a path with a control character")


def test_a_home_that_is_a_file_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    refused(*run("local", "--home", str(file)), f"--home {file}: not a directory")


@pytest.mark.parametrize("port", ["0", "65536", "http", "-1", "８０"])
def test_a_port_that_is_no_tcp_port_is_refused(tmp_path: Path, port: str) -> None:
    refused(*run("local", "--home", str(tmp_path), "--port", port), "--port must be a TCP port")


def test_a_port_in_use_is_refused_naming_it(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused(*run("local", "--home", str(tmp_path), "--port", str(port)), f"--port {port}: ")


@pytest.mark.parametrize("lifetime", ["0", "-5", "nan", "inf", "soon"])
def test_a_lifetime_that_is_no_positive_number_is_refused(tmp_path: Path, lifetime: str) -> None:
    refused(*run("local", "--home", str(tmp_path), "--lifetime", lifetime), "--lifetime must be")


def test_without_airflow_one_line_names_the_extra_and_nothing_is_written(tmp_path: Path) -> None:
    # Airflow hidden (a None in sys.modules: find_spec answers None), in whatever environment.
    home = tmp_path / "home"
    script = (
        "import sys; sys.modules['airflow'] = None; "
        "from k8s_workloads.cli import main; raise SystemExit(main())"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "local", "--home", str(home), "--trigger"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    refused(done.returncode, done.stdout, done.stderr, INSTALL)
    assert not home.exists()


def test_airflow_problem_names_what_is_missing_or_the_wrong_version() -> None:
    def everything(name: str) -> object:
        return name

    missing = airflow_problem(lambda name: None if "providers" in name else name)
    assert missing is not None
    assert INSTALL in missing
    assert "cncf.kubernetes" in missing
    old = airflow_problem(everything, lambda _: "3.2.2")
    assert old is not None
    assert "this environment has 3.2.2" in old
    assert airflow_problem(everything, lambda _: "3.3.2") is None


# --- the home ---------------------------------------------------------------------------------


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_a_closed_terminal_or_a_stop_sends_stops_the_stack(number: int) -> None:
    stopping = threading.Event()
    before = signal.getsignal(number)
    with _stop_on_signals(stopping):
        os.kill(os.getpid(), number)
        assert stopping.wait(5)  # handled, not the process's end
    assert signal.getsignal(number) == before  # put back
