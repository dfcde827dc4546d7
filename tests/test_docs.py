"""The documentation site (``scripts/docs_hooks.py``): the nav lists every page of
``docs/`` once, by task; every public module gets a reference page, and the pages taken
from the CHANGELOG and the scenario module hold those texts, whole. ``scripts/dev.py
test`` builds the site itself with ``mkdocs build --strict``; the pages' code and tables
are checked by ``tests/test_doc_pages.py`` and the tests it names."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("mkdocs", reason="mkdocs is installed in the main environment (dev extra)")


def _hooks() -> Any:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts/docs_hooks.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_module_has_a_reference_page_and_no_private_one_does() -> None:
    modules = _hooks().public_modules()
    package = ROOT / "src" / "k8s_workloads"
    for path in package.rglob("*.py"):
        dotted = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        dotted = dotted.removesuffix(".__init__")
        private = any(part.startswith("_") for part in dotted.split("."))
        assert (dotted in modules) is not private, dotted
    assert {"k8s_workloads", "k8s_workloads.keys", "k8s_workloads.sim.scenario"} <= set(modules)


def test_a_new_module_appears_without_editing_the_nav(tmp_path: Path) -> None:
    hooks = _hooks()
    package = tmp_path / "k8s_workloads"
    (package / "sub").mkdir(parents=True)
    for name in ("__init__.py", "one.py", "_private.py", "__main__.py", "sub/__init__.py",
                 "sub/two.py", "sub/_three.py"):  # fmt: skip
        (package / name).write_text('"""x"""\n')
    assert hooks.public_modules(package) == [
        "k8s_workloads", "k8s_workloads.one", "k8s_workloads.sub", "k8s_workloads.sub.two",
    ]  # fmt: skip


def test_the_differences_page_is_the_changelogs_section_whole() -> None:
    page = _hooks().differences_page()
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    unreleased = changelog.split("## [Unreleased]", 1)[1].split("\n## ", 1)[0]
    section = unreleased.split("### Differences from the provider\n", 1)[1].split("\n### ", 1)[0]
    bullets = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(bullets) > 5
    assert section.strip() in page
    assert page.startswith("# Differences from the provider\n")


def _nav_pages(entries: list[Any]) -> list[str]:
    pages: list[str] = []
    for entry in entries:
        for value in entry.values():
            pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_the_nav_lists_every_page_once_by_task() -> None:
    hooks = _hooks()
    nav = hooks.HAND_WRITTEN_NAV
    pages = _nav_pages(nav)
    assert len(pages) == len(set(pages))
    written = {path.name for path in (ROOT / "docs").glob("*.md")}
    assert set(pages) == written | set(hooks.GENERATED_PAGES)
    sections = {name: _nav_pages([entry]) for entry in nav for name in entry}
    assert list(sections) == ["Home", "Airflow users", "Executor authors", "Reference"]
    for name in ("Airflow users", "Executor authors", "Reference"):
        assert sections[name], name
    # Issue 32, item 7: at least 8 pages written as pages, none taken from the README.
    assert len(written - {"index.md"}) >= 8
    assert "README" not in (ROOT / "scripts" / "docs_hooks.py").read_text(encoding="utf-8")


def test_the_generated_pages_are_the_hooks_own() -> None:
    hooks = _hooks()
    assert set(hooks.GENERATED_PAGES) == {"differences.md", "scenario-schema.md"}
    # No page of docs/ is also generated: one would hide the other.
    assert not any((ROOT / "docs" / page).exists() for page in hooks.GENERATED_PAGES)


def test_the_scenario_page_shows_the_schema_and_the_bundled_file() -> None:
    page = _hooks().scenario_page()
    assert "::: k8s_workloads.sim.scenario" in page
    example = ROOT / "src/k8s_workloads/examples/scenario.yaml"
    assert example.read_text(encoding="utf-8").rstrip() in page


def test_a_missing_section_fails_the_build() -> None:
    hooks = _hooks()
    from mkdocs.exceptions import PluginError  # noqa: PLC0415

    with pytest.raises(PluginError, match="no '### Nope' heading"):
        hooks.section("# a\n\n### Other\n\ntext\n", "### Nope", source="X.md")
    with pytest.raises(PluginError, match="is empty"):
        hooks.section("### Empty\n### Next\nbody\n", "### Empty", source="X.md")
    # A section runs to the next heading of its level or above, not to a deeper one.
    text = "## A\none\n### A.1\ntwo\n## B\nthree\n"
    assert hooks.section(text, "## A", source="X.md") == "one\n### A.1\ntwo"


def test_sphinx_roles_and_literal_marks_read_as_markdown() -> None:
    import markdown  # noqa: PLC0415

    html = markdown.markdown(
        "See :func:`decide` and :class:`~k8s_workloads.keys.CallbackKey`, e.g.::\n\n"
        "    code\n\n::: k8s_workloads.keys\n",
        extensions=[_hooks().DocstringText()],
    )
    assert "<code>decide</code>" in html
    assert "<code>CallbackKey</code>," in html
    assert ":func:" not in html
    assert not re.search(r"e\.g\.::", html)
    assert "e.g.:</p>" in html
    assert "::: k8s_workloads.keys" in html  # mkdocstrings' own lines are left alone
