"""The pages of ``docs/`` against the code: every Python block runs, in order, one page
one module, and passes ``mypy --strict``; every command and option of the CLI is on its
page; the limits the pages state are the ones the code enforces.

Other pages are held to the code by the tests of what they document: the options
(``tests/airflow/test_settings.py``), the messages (``tests/airflow/test_troubleshooting.py``),
the metrics (``tests/airflow/test_metrics.py``), the worked asyncio executor
(``tests/test_worked_example.py``), the example DAG (``tests/cli/test_local_home.py``) and
the decision rules (``tests/decisions/test_tables.py``)."""

from __future__ import annotations

import argparse
import pathlib
import re

import pytest

from k8s_workloads import limits
from k8s_workloads.cli import _main
from k8s_workloads.testing import local as kit_local
from tests.test_readme import assert_mypy_strict, run_document_code

pytest.importorskip("kubernetes_asyncio", reason="the pages' examples run on the asyncio extra")
pytest.importorskip("hypothesis", reason="the test kit page's example is a property test")

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)

RUN_HERE = {"building-blocks.md": 4, "write-an-executor.md": 5, "test-kit.md": 2}
"""The pages whose Python blocks this module runs, with the least number of blocks each
holds (a block lost to a formatting slip fails)."""

RUN_ELSEWHERE = {
    "async-executor.md": "tests/test_worked_example.py: 500 jobs through faults and a crash",
    "deadline-callbacks.md": "tests/cli/test_local_home.py: the example DAG as it is shipped",
}


def page_code(page: str) -> str:
    blocks = _BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))
    assert len(blocks) >= RUN_HERE[page], page
    return "\n\n".join(blocks)


def test_every_page_with_python_is_run() -> None:
    with_python = {path.name for path in DOCS.glob("*.md") if _BLOCK.search(path.read_text())}
    assert with_python == set(RUN_HERE) | set(RUN_ELSEWHERE)


@pytest.mark.parametrize("page", sorted(RUN_HERE))
def test_the_pages_examples_run(page: str) -> None:
    namespace = run_document_code(page_code(page), f"<docs/{page}: the Python blocks>")
    assert namespace  # ran to its end: each page's blocks end in assertions


def test_the_pages_examples_pass_mypy_strict(tmp_path: pathlib.Path) -> None:
    modules = {page.removesuffix(".md").replace("-", "_"): page_code(page) for page in RUN_HERE}
    assert_mypy_strict(modules, tmp_path)


def _section(page: str, heading: str) -> str:
    text = "\n" + (DOCS / page).read_text(encoding="utf-8")
    return text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser's subcommands by name (argparse keeps no public list of them)."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found |= action.choices
    return found


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option of ``parser`` and of its subcommands, but --help."""
    found = {flag for action in parser._actions for flag in action.option_strings}
    for sub in _commands(parser).values():
        found |= _options(sub)
    return found - {"-h", "--help"}


def _undocumented(parser: argparse.ArgumentParser, section: str) -> list[str]:
    return [flag for flag in sorted(_options(parser)) if f"`{flag}" not in section]


def test_the_cli_page_has_every_command_and_option() -> None:
    commands = _commands(_main._parser())
    assert {"local", "airflow-config", "cleanup-pods", "render", "resolve"} <= set(commands)
    table = _section("cli.md", "# Command line")
    for name, parser in commands.items():
        assert f"| [`{name}`](#{name}) |" in table, name
        assert _undocumented(parser, _section("cli.md", f"## {name}")) == [], name
    serve = _commands(kit_local._parser())["serve"]
    assert _undocumented(serve, _section("cli.md", "## The kit's local cluster")) == []


def _mib(value: int) -> str:
    assert value % (1024 * 1024) == 0
    return f"{value // (1024 * 1024)} MiB"


def test_the_pages_state_the_input_limits_the_code_enforces() -> None:
    # The pages promise these bounds to users: a limit changed in the code must change
    # the sentence that states it.
    text = " ".join(
        " ".join((DOCS / page).read_text(encoding="utf-8").split())
        for page in ("cli.md", "simulator.md")
    )
    stated = [
        f"over {_mib(limits.MAX_INPUT_BYTES)} is refused",
        f"more than {limits.MAX_YAML_NODES:,} YAML nodes",
        f"nests more than {limits.MAX_YAML_DEPTH} deep",
        f"at most {limits.MAX_SCENARIO_ENTRIES:,} entries",
        f"may hold at most {_mib(limits.MAX_SCENARIO_BYTES)}",
    ]
    assert [sentence for sentence in stated if sentence not in text] == []
