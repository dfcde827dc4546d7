"""Build the sdist and the wheel, check what they hold, and install the wheel where nothing
else is (a step of ``scripts/dev.py test``).

    python scripts/check_dist.py        # with uv installed (the ``dev`` extra)

Checks: both archives are named for the one version (``k8s_workloads.__version__``, which
pyproject.toml reads); the wheel holds ``py.typed``, the licence, the provider entry point,
the example DAG of ``k8s-workloads local``, no tests, and the README as its long
description (Markdown); the sdist holds the README, the licence and ``py.typed`` and no
tests either. Then the wheel goes into a fresh
virtual environment (uv, from PyPI or uv's cache), where ``k8s-workloads --version`` and
an import of the package and its provider information must work. Prints one line per
problem and exits 1 if there is any.
"""

from __future__ import annotations

import ast
import email.parser
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "k8s_workloads"


def _version() -> str:
    """``__version__`` as written in the package (read, not imported: one place)."""
    tree = ast.parse((ROOT / "src" / PACKAGE / "__init__.py").read_text())
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    sys.exit("no __version__ in src/k8s_workloads/__init__.py")


def _run(*cmd: str | Path, cwd: Path = ROOT) -> str:
    done = subprocess.run(
        [str(part) for part in cmd], cwd=cwd, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(map(str, cmd))}\n{done.stderr[-3000:]}")
    return done.stdout


def _wheel_problems(wheel: Path, version: str) -> list[str]:
    problems = []
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = f"{PACKAGE}-{version}.dist-info"
        metadata = email.parser.Parser().parsestr(archive.read(f"{info}/METADATA").decode())
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    if f"{PACKAGE}/py.typed" not in names:
        problems.append("the wheel has no py.typed")
    # `k8s-workloads local` copies its example DAG from the package into the home.
    problems.extend(
        f"the wheel has no examples/_local_dags/{example}"
        for example in ("deadline_example.py", "deadline_example_alerts.py")
        if f"{PACKAGE}/examples/_local_dags/{example}" not in names
    )
    if not any(name.startswith(f"{info}/licenses/LICENSE") for name in names):
        problems.append("the wheel has no licence")
    if any(name.startswith("tests/") or "/tests/" in name for name in names):
        problems.append("the wheel holds tests")
    if "[apache_airflow_provider]" not in entry_points:
        problems.append("the wheel has no apache_airflow_provider entry point")
    if metadata["Version"] != version:
        problems.append(f"the wheel's metadata says version {metadata['Version']}")
    if metadata["Description-Content-Type"] != "text/markdown":
        problems.append("the long description is not Markdown")
    readme = (ROOT / "README.md").read_text()
    description = metadata.get_payload()
    if not isinstance(description, str) or description.strip() != readme.strip():
        problems.append("the long description is not the README")
    return problems


def _sdist_problems(sdist: Path, version: str) -> list[str]:
    top = f"k8s_workloads-{version}"
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    wanted = ["README.md", "LICENSE", "pyproject.toml", f"src/{PACKAGE}/py.typed"]
    problems = [f"the sdist has no {name}" for name in wanted if f"{top}/{name}" not in names]
    if any(name.startswith(f"{top}/tests/") for name in names):
        problems.append("the sdist holds tests")
    return problems


def _installed_problems(wheel: Path, version: str, scratch: Path) -> list[str]:
    env = scratch / "venv"
    _run(sys.executable, "-m", "uv", "venv", "--quiet", "--python", sys.executable, env)
    python = env / "bin" / "python"
    _run(sys.executable, "-m", "uv", "pip", "install", "--quiet", "--python", python, wheel)
    problems = []
    shown = _run(env / "bin" / "k8s-workloads", "--version", cwd=scratch).strip()
    if shown != f"k8s-workloads {version}":
        problems.append(f"k8s-workloads --version in a fresh venv says {shown!r}")
    probe = (
        "import k8s_workloads, k8s_workloads.airflow.provider as p; "
        "print(k8s_workloads.__file__); print(p.get_provider_info()['versions'][0])"
    )
    where, provided = _run(python, "-c", probe, cwd=scratch).split()
    if not where.startswith(str(env)):
        problems.append(f"the fresh venv imported the package from {where}")
    if provided != version:
        problems.append(f"the provider info says version {provided}")
    return problems


def main() -> int:
    version = _version()
    with tempfile.TemporaryDirectory(prefix="k8s-workloads-dist-") as folder:
        scratch = Path(folder)
        out = scratch / "dist"
        _run(sys.executable, "-m", "uv", "build", "--quiet", "--out-dir", out)
        wheels = sorted(out.glob("*.whl"))
        sdists = sorted(out.glob("*.tar.gz"))
        expected_wheel = f"{PACKAGE}-{version}-py3-none-any.whl"
        if [path.name for path in wheels] != [expected_wheel] or len(sdists) != 1:
            names = [path.name for path in (*wheels, *sdists)]
            print(f"expected {expected_wheel} and one sdist, got {names}")
            return 1
        problems = [
            *_wheel_problems(wheels[0], version),
            *_sdist_problems(sdists[0], version),
            *_installed_problems(wheels[0], version, scratch),
        ]
    for problem in problems:
        print(problem)
    if not problems:
        print(f"{expected_wheel} and its sdist: contents checked, installed and run")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
