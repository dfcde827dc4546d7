"""Set up the project's environments and run its jobs (two set-up jobs, and the docs).

    python3 scripts/dev.py demo   # the CLI on the bundled example scenario (simulate)
    python3 scripts/dev.py test   # ruff, mypy --strict, the docs (strict), pytest (all envs)
    python3 scripts/dev.py docs   # the documentation site, into site/ (not a set-up step)

Needs only ``python3`` (3.10+) and access to PyPI. Two virtual environments are made
beside the checkout and re-made whenever their requirements change:

* ``.venv``: this package with kubernetes 37.x and the test and lint tools;
* ``.venv-airflow``: kubernetes 36.x with the released ``apache-airflow`` and
  ``apache-airflow-providers-cncf-kubernetes`` next to this package, which proves that it
  installs beside today's provider and lets ``tests/compat`` compare outputs;
* ``.venv-airflow32``: the same with Airflow 3.2, for ``tests/test_airflow_versions.py``:
  the executor runs tasks there and refuses callbacks, saying they need 3.3.

``--thorough`` runs the hypothesis profile meant for local runs (many more examples).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MAIN_ENV = ROOT / ".venv"
AIRFLOW_ENV = ROOT / ".venv-airflow"
AIRFLOW32_ENV = ROOT / ".venv-airflow32"

MAIN_REQUIREMENTS = ["-e", ".[test,dev]", "kubernetes>=37,<38"]
AIRFLOW_REQUIREMENTS = [
    "-e",
    ".[test]",
    "kubernetes>=36.0.1,<37",
    "apache-airflow==3.3.2",
    "apache-airflow-providers-cncf-kubernetes==10.25.0",
]
AIRFLOW32_REQUIREMENTS = [
    "-e",
    ".[test]",
    "kubernetes>=36.0.1,<37",
    "apache-airflow==3.2.2",
    "apache-airflow-providers-cncf-kubernetes==10.25.0",
]


def _bin(env: Path, name: str) -> Path:
    folder = "Scripts" if os.name == "nt" else "bin"
    return env / folder / name


def _run(cmd: list[str | Path], *, env: dict[str, str] | None = None) -> int:
    printable = " ".join(str(part) for part in cmd)
    print(f"$ {printable}", flush=True)
    return subprocess.run([str(part) for part in cmd], cwd=ROOT, env=env, check=False).returncode


def _stamp(requirements: list[str]) -> str:
    digest = hashlib.sha256()
    digest.update(sys.version.encode())
    digest.update("\0".join(requirements).encode())
    digest.update((ROOT / "pyproject.toml").read_bytes())
    return digest.hexdigest()


def ensure_env(env: Path, requirements: list[str]) -> None:
    """Create or refresh ``env`` so that it holds exactly ``requirements``."""
    stamp_file = env / ".k8s-workloads-stamp"
    stamp = _stamp(requirements)
    if stamp_file.is_file() and stamp_file.read_text() == stamp:
        return
    print(f"Setting up {env.name} ...", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(env)
    python = _bin(env, "python")
    # uv resolves and installs the Airflow environment in seconds instead of minutes.
    if _run([python, "-m", "pip", "install", "--quiet", "uv"]) != 0:
        sys.exit("could not install uv into " + str(env))
    if _run([python, "-m", "uv", "pip", "install", "--quiet", "--python", python, *requirements]):
        sys.exit("could not install the requirements of " + str(env))
    stamp_file.write_text(stamp)


def demo() -> int:
    ensure_env(MAIN_ENV, MAIN_REQUIREMENTS)
    return _run([_bin(MAIN_ENV, "k8s-workloads"), "simulate"])


def docs(*, strict: bool = False) -> int:
    """Build the documentation site (``mkdocs.yml``) into ``site/``."""
    ensure_env(MAIN_ENV, MAIN_REQUIREMENTS)
    return _run([_bin(MAIN_ENV, "mkdocs"), "build", "--quiet", *(["--strict"] if strict else [])])


def test(*, thorough: bool) -> int:
    ensure_env(MAIN_ENV, MAIN_REQUIREMENTS)
    ensure_env(AIRFLOW_ENV, AIRFLOW_REQUIREMENTS)
    ensure_env(AIRFLOW32_ENV, AIRFLOW32_REQUIREMENTS)
    env = dict(os.environ)
    env["HYPOTHESIS_PROFILE"] = "thorough" if thorough else "ci"
    results: dict[str, int] = {}
    results["ruff"] = _run(
        [_bin(MAIN_ENV, "ruff"), "check", "src", "tests", "benchmarks", "scripts", "fuzz"]
    )
    results["mypy --strict"] = _run([_bin(MAIN_ENV, "mypy"), "--strict"])
    # A broken reference or docstring fails here; the build takes a few seconds.
    results["mkdocs build --strict"] = docs(strict=True)
    results["pytest (kubernetes 37)"] = _run([_bin(MAIN_ENV, "pytest"), "-q"], env=env)
    results["pytest (Airflow env, kubernetes 36)"] = _run(
        [_bin(AIRFLOW_ENV, "pytest"), "-q"], env=env
    )
    results["pytest (Airflow 3.2: tasks only)"] = _run(
        [_bin(AIRFLOW32_ENV, "pytest"), "-q", "tests/test_airflow_versions.py"], env=env
    )
    print("\nSummary:")
    for name, code in results.items():
        print(f"  {'ok  ' if code == 0 else 'FAIL'} {name}")
    return 0 if all(code == 0 for code in results.values()) else 1


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
