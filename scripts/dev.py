"""Set up the project's environments and run its jobs (two set-up jobs, and the docs).

    python3 scripts/dev.py demo   # the CLI on the bundled example scenario (simulate)
    python3 scripts/dev.py test   # ruff, mypy, docs (strict), the wheel, pytest (all envs)

The test job runs two lanes side by side (the CI machines have two cores): the lint, docs
and core suites in one, the Airflow environments' suites in the other.
    python3 scripts/dev.py docs   # the documentation site, into site/ (not a set-up step)

Needs only ``python3`` (3.10+) and access to PyPI. Virtual environments are made
beside the checkout and re-made whenever their requirements change:

* ``.venv``: this package with kubernetes 37.x and the test and lint tools (ruff, mypy);
* ``.venv-py310``, ``.venv-py313``, ...: the package, kubernetes 37.x and the test tools
  (not the lint and docs tools) on the oldest and the newest Python the machine has
  (``python3.10`` ... ``python3.14`` on ``PATH``, else pyenv's versions), where the core
  suite runs instead of in ``.venv``; the ``python3`` of ``.venv`` is still covered by the
  Airflow environment, which runs the whole suite. A version not found is skipped with a
  printed note; with neither found, the core suite runs in ``.venv``;
* ``.venv-airflow``: kubernetes 36.x with the released ``apache-airflow`` and
  ``apache-airflow-providers-cncf-kubernetes`` next to this package, which proves that it
  installs beside today's provider and lets ``tests/compat`` compare outputs; with the
  PostgreSQL drivers for the HA test (two schedulers on one database,
  ``tests/airflow/test_ha.py``), for which the test job installs Debian's ``postgresql``
  when it is missing, running as root where ``apt-get`` exists (else the test skips, saying so);
* ``.venv-airflow32``: the same with Airflow 3.2, for ``tests/airflow/test_versions.py``:
  the executor runs tasks there and refuses callbacks, saying they need 3.3;
* ``.venv-airflow-oldest``: the oldest admitted Airflow and provider (3.3.0, 10.21.0),
  for the Airflow executor's suite and the provider registration.

``--thorough`` runs the hypothesis profile meant for local runs (many more examples).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MAIN_ENV = ROOT / ".venv"
AIRFLOW_ENV = ROOT / ".venv-airflow"
AIRFLOW32_ENV = ROOT / ".venv-airflow32"
AIRFLOW_OLDEST_ENV = ROOT / ".venv-airflow-oldest"

MAIN_REQUIREMENTS = ["-e", ".[test,dev,asyncio]", "kubernetes>=37,<38"]
# The other Pythons run only pytest: the lint and docs tools stay in .venv (mkdocstrings
# needs 3.11+).
CORE_REQUIREMENTS = ["-e", ".[test,asyncio]", "kubernetes>=37,<38"]
AIRFLOW_REQUIREMENTS = [
    "-e",
    ".[test]",
    "kubernetes>=36.0.1,<37",
    # The statsd extra: the executor's metrics are read from a StatsD socket
    # (tests/airflow/test_metrics.py), sent by Airflow's StatsD client.
    "apache-airflow[statsd]==3.3.2",
    "apache-airflow-providers-cncf-kubernetes==10.25.0",
    # The HA test's schedulers share a PostgreSQL database: Airflow opens it with both
    # drivers (psycopg2 for its sessions, asyncpg for the async engine it makes beside).
    "psycopg2-binary>=2.9.9,<3",
    "asyncpg>=0.29,<1",
]
AIRFLOW32_REQUIREMENTS = [
    "-e",
    ".[test]",
    "kubernetes>=36.0.1,<37",
    "apache-airflow==3.2.2",
    "apache-airflow-providers-cncf-kubernetes==10.25.0",
]

# The oldest admitted provider (the `airflow` extra: 10.21.0 to 10.25.x) on the oldest
# admitted Airflow 3.3; the provider pins kubernetes <37 and excludes 36.0.0.
AIRFLOW_OLDEST_REQUIREMENTS = [
    "-e",
    ".[test]",
    "kubernetes>=36.0.1,<37",
    "apache-airflow==3.3.0",
    "apache-airflow-providers-cncf-kubernetes==10.21.0",
]
# What runs there: the Airflow executor's suite and the provider-version boundary.
AIRFLOW_OLDEST_TESTS = [
    "tests/airflow/test_executor.py",  # and its parts' modules:
    "tests/airflow/test_lifecycle.py",
    "tests/airflow/test_reads.py",
    "tests/airflow/test_adoption.py",
    "tests/airflow/test_runtime.py",
    "tests/airflow/test_watcher.py",
    "tests/airflow/test_provider.py",
    "tests/airflow/test_config_check.py",  # the check as this provider reads its options
]

# Tests skipped where mkdocs or mypy is missing (the extra Pythons' environments): the
# site's nav, and the README's and the pages' examples under mypy --strict.
DEV_TOOL_TESTS = [
    "tests/test_docs.py",
    "tests/test_readme.py",
    "tests/test_doc_pages.py",
    "tests/test_worked_example.py",
]


def _has_postgres() -> bool:
    """Whether PostgreSQL's server programs are here (Debian's, or ``initdb`` on PATH)."""
    return any(Path("/usr/lib/postgresql").glob("*/bin/initdb")) or bool(shutil.which("initdb"))


def ensure_postgres() -> None:
    """Install Debian's PostgreSQL for the HA test where it is missing, when this runs as
    root with apt-get; else say why the HA test will skip (the test starts its own server
    as an unprivileged user, see ``tests/support/postgres.py``)."""
    if _has_postgres():
        return
    apt_get = shutil.which("apt-get")
    if apt_get is None or not hasattr(os, "geteuid") or os.geteuid() != 0:
        print("note: PostgreSQL not installed (needs root and apt-get); the HA test skips")
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install: list[str | Path] = [apt_get, "install", "-y", "--no-install-recommends"]
    install += ["--quiet", "postgresql"]
    # A fresh machine's package lists may be empty: update once, then try again.
    if _run(install, env=env) != 0 and (
        _run([Path(apt_get), "update", "--quiet"], env=env) != 0 or _run(install, env=env) != 0
    ):
        print("note: could not install PostgreSQL with apt-get; the HA test skips")


def _bin(env: Path, name: str) -> Path:
    folder = "Scripts" if os.name == "nt" else "bin"
    return env / folder / name


def _run(cmd: list[str | Path], *, env: dict[str, str] | None = None) -> int:
    printable = " ".join(str(part) for part in cmd)
    print(f"$ {printable}", flush=True)
    return subprocess.run([str(part) for part in cmd], cwd=ROOT, env=env, check=False).returncode


def _stamp(requirements: list[str], version: str) -> str:
    digest = hashlib.sha256()
    digest.update(version.encode())
    digest.update("\0".join(requirements).encode())
    digest.update((ROOT / "pyproject.toml").read_bytes())
    return digest.hexdigest()


def ensure_env(env: Path, requirements: list[str], *, base: Path | None = None) -> None:
    """Create or refresh ``env`` so that it holds exactly ``requirements``.

    ``base`` is the interpreter to build it from (default: the one running this script).
    """
    stamp_file = env / ".k8s-workloads-stamp"
    version = sys.version if base is None else _version_text(base)
    stamp = _stamp(requirements, version)
    if stamp_file.is_file() and stamp_file.read_text() == stamp:
        return
    print(f"Setting up {env.name} ...", flush=True)
    if base is None:
        venv.EnvBuilder(with_pip=True, clear=True).create(env)
    elif _run([base, "-m", "venv", "--clear", env]) != 0:
        sys.exit(f"could not create {env} with {base}")
    python = _bin(env, "python")
    # uv resolves and installs the Airflow environment in seconds instead of minutes.
    if _run([python, "-m", "pip", "install", "--quiet", "uv"]) != 0:
        sys.exit("could not install uv into " + str(env))
    if _run([python, "-m", "uv", "pip", "install", "--quiet", "--python", python, *requirements]):
        sys.exit("could not install the requirements of " + str(env))
    stamp_file.write_text(stamp)


# The Pythons the core suite is run on besides ``python3``: oldest and newest of these.
MINORS = range(10, 15)
_PYENV_VERSION = re.compile(r"3\.(\d+)\.(\d+)")


def _version_text(python: Path) -> str:
    return subprocess.run(
        [str(python), "-c", "import sys; print(sys.version)"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def _runs(python: str | Path, minor: int) -> bool:
    """Whether ``python`` starts and is 3.<minor> (a pyenv shim may exist and refuse)."""
    try:
        done = subprocess.run(
            [str(python), "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True, text=True, check=False, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == f"(3, {minor})"


def find_python(minor: int) -> Path | None:
    """A working ``python3.<minor>``: on ``PATH``, else the newest pyenv build of it."""
    on_path = shutil.which(f"python3.{minor}")
    if on_path is not None and _runs(on_path, minor):
        return Path(on_path)
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    builds = []
    for folder in (pyenv_root / "versions").glob(f"3.{minor}.*"):
        match = _PYENV_VERSION.fullmatch(folder.name)
        if match is not None and int(match.group(1)) == minor:
            builds.append((int(match.group(2)), folder / "bin" / f"python3.{minor}"))
    for _, python in sorted(builds, reverse=True):
        if _runs(python, minor):
            return python
    return None


def extra_pythons() -> list[tuple[str, Path]]:
    """(name, interpreter) for the oldest and newest Python found, other than ``python3``.

    Prints a note for each end of the range not found (and so not tested).
    """
    found = {minor: python for minor in MINORS if (python := find_python(minor))}
    if not found:
        print(f"note: no python3.{MINORS[0]}..3.{MINORS[-1]} found; core suite in .venv only")
        return []
    if MINORS[0] not in found:
        print(f"note: python3.{MINORS[0]} (the oldest supported) not found; not tested on it")
    ends = sorted({min(found), max(found)} - {sys.version_info.minor})
    return [(f"3.{minor}", found[minor]) for minor in ends]


def demo() -> int:
    ensure_env(MAIN_ENV, MAIN_REQUIREMENTS)
    return _run([_bin(MAIN_ENV, "k8s-workloads"), "simulate"])


def docs(*, strict: bool = False) -> int:
    """Build the documentation site (``mkdocs.yml``) into ``site/``."""
    ensure_env(MAIN_ENV, MAIN_REQUIREMENTS)
    return _run([_bin(MAIN_ENV, "mkdocs"), "build", "--quiet", *(["--strict"] if strict else [])])


@dataclasses.dataclass
class Step:
    """One check of the test job: a name and the command that runs it."""

    name: str
    cmd: list[str | Path]
    env: dict[str, str] | None = None


def _lane(
    setup: list[tuple[Path, list[str], Path | None]],
    steps: list[Step],
    results: dict[str, int],
    lock: threading.Lock,
) -> list[Step]:
    """Make a lane's environments, then return its steps (run in order by :func:`_run_lane`).

    An environment that cannot be made fails the lane's steps at once, saying why, while
    the other lane goes on (the summary lists them as failed)."""
    try:
        for env, requirements, base in setup:
            ensure_env(env, requirements, base=base)
    except SystemExit as failed:
        with lock:
            print(f"\n=== set-up failed, its lane's steps not run: {failed}", flush=True)
            for step in steps:
                results[step.name] = 1
        return []
    return steps


def _run_lane(steps: list[Step], results: dict[str, int], lock: threading.Lock) -> None:
    """Run ``steps`` one after another, each step's output printed whole when it ends."""
    for step in steps:
        started = time.monotonic()
        done = subprocess.run(
            [str(part) for part in step.cmd], cwd=ROOT, env=step.env, check=False,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
        )  # fmt: skip
        took = time.monotonic() - started
        with lock:
            printable = " ".join(str(part) for part in step.cmd)
            print(f"\n=== {step.name} ({took:.0f} s)\n$ {printable}", flush=True)
            print(done.stdout, end="", flush=True)
            results[step.name] = done.returncode


def test(*, thorough: bool) -> int:
    """Every check, in two lanes that run side by side (the CI machines have two cores).

    Each lane makes its own environments, then runs its steps in order; the lanes share
    nothing but the checkout (each step's output is printed whole when the step ends).
    """
    env = dict(os.environ)
    env["HYPOTHESIS_PROFILE"] = "thorough" if thorough else "ci"
    ensure_env(MAIN_ENV, MAIN_REQUIREMENTS)
    ensure_postgres()
    extras = extra_pythons()
    core: list[Step] = [
        Step(
            "ruff",
            [_bin(MAIN_ENV, "ruff"), "check", "src", "tests", "benchmarks", "scripts", "fuzz"],
        ),
        Step("mypy --strict", [_bin(MAIN_ENV, "mypy"), "--strict"]),
        # A broken reference or docstring fails here; the build takes a few seconds.
        Step("mkdocs build --strict", [_bin(MAIN_ENV, "mkdocs"), "build", "--quiet", "--strict"]),
        # The sdist and wheel as published: contents, then a fresh venv runs the CLI (~20 s).
        Step("wheel and sdist", [_bin(MAIN_ENV, "python"), "scripts/check_dist.py"]),
    ]
    core_setup: list[tuple[Path, list[str], Path | None]] = []
    for name, python in extras:
        extra_env = ROOT / f".venv-py{name.replace('.', '')}"
        core_setup.append((extra_env, CORE_REQUIREMENTS, python))
        core.append(
            Step(f"pytest (Python {name}, kubernetes 37)", [_bin(extra_env, "pytest"), "-q"], env)
        )
    if extras:
        # The other Pythons' environments have no dev tools (mkdocs, mypy): the tests of
        # the docs site and of the README's typed examples run where those tools are.
        core.append(
            Step(
                "pytest (dev tools: docs, README)",
                [_bin(MAIN_ENV, "pytest"), "-q", *DEV_TOOL_TESTS],
                env,
            )
        )
    else:
        core.append(Step("pytest (kubernetes 37)", [_bin(MAIN_ENV, "pytest"), "-q"], env))
    airflow_setup: list[tuple[Path, list[str], Path | None]] = [
        (AIRFLOW_ENV, AIRFLOW_REQUIREMENTS, None),
        (AIRFLOW32_ENV, AIRFLOW32_REQUIREMENTS, None),
        (AIRFLOW_OLDEST_ENV, AIRFLOW_OLDEST_REQUIREMENTS, None),
    ]
    airflow: list[Step] = [
        Step("pytest (Airflow env, kubernetes 36)", [_bin(AIRFLOW_ENV, "pytest"), "-q"], env),
        Step(
            "pytest (Airflow 3.2: tasks only)",
            [_bin(AIRFLOW32_ENV, "pytest"), "-q", "tests/airflow/test_versions.py"],
            env,
        ),
        Step(
            "pytest (Airflow 3.3.0, provider 10.21.0: the executor)",
            [_bin(AIRFLOW_OLDEST_ENV, "pytest"), "-q", *AIRFLOW_OLDEST_TESTS],
            env,
        ),
    ]
    results: dict[str, int] = {}
    lock = threading.Lock()
    order = [step.name for step in core + airflow]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        lanes = [
            pool.submit(lambda: _run_lane(_lane(core_setup, core, results, lock), results, lock)),
            pool.submit(
                lambda: _run_lane(_lane(airflow_setup, airflow, results, lock), results, lock)
            ),
        ]
        for lane in lanes:
            lane.result()
    print("\nSummary:")
    for name in order:
        code = results.get(name, 1)
        print(f"  {'ok  ' if code == 0 else 'FAIL'} {name}")
    return 0 if all(results.get(name, 1) == 0 for name in order) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="job", required=True)
    sub.add_parser("demo", help="run the CLI's simulator on the bundled scenario")
    docs_parser = sub.add_parser("docs", help="build the documentation site into site/")
    docs_parser.add_argument(
        "--strict", action="store_true", help="fail on any warning, as the test job does"
    )
    test_parser = sub.add_parser("test", help="run ruff, mypy --strict and pytest in every env")
    test_parser.add_argument(
        "--thorough", action="store_true", help="many more hypothesis examples"
    )
    args = parser.parse_args()
    if args.job == "demo":
        return demo()
    if args.job == "docs":
        return docs(strict=args.strict)
    return test(thorough=args.thorough)


if __name__ == "__main__":
    sys.exit(main())
