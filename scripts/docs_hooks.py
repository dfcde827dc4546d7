"""MkDocs hooks that write the documentation site's nav and its generated pages (``mkdocs.yml``).

The pages are written as pages, in ``docs/``, and listed by task in
:data:`HAND_WRITTEN_NAV`. Nothing generated is a second copy: each generated page is made,
at every build, from the file that holds the text.

* ``reference/``: a page per public module of ``k8s_workloads``, found by walking the
  package (a module or package whose name starts with ``_`` is private and left out), so
  a new module appears without editing the nav; its index lists the top-level names from
  ``__init__.py``'s ``_LAZY`` table.
* ``differences.md``: the Unreleased "Differences from the provider" section of
  ``CHANGELOG.md``.
* ``scenario-schema.md``: the docstring of ``k8s_workloads.sim.scenario`` and the bundled
  scenario file.

A section that cannot be found is an error, so the build fails rather than publish an
empty page. The docstrings are written for Python readers (and ``help()``): their Sphinx
roles (``:func:`decide```) are shown as code, and a paragraph ending in ``::`` (before an
indented literal block) ends in ``:``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TYPE_CHECKING

from markdown.extensions import Extension
from markdown.preprocessors import Preprocessor
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

if TYPE_CHECKING:
    from markdown import Markdown
    from mkdocs.config.defaults import MkDocsConfig

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "k8s_workloads"
NavEntry = dict[str, "str | list[NavEntry]"]
HAND_WRITTEN_NAV: list[NavEntry] = [
    {"Home": "index.md"},
    {
        "Airflow users": [
            {"Install and configure": "install.md"},
            {"Run it locally": "run-locally.md"},
            {"Deadline callbacks as pods": "deadline-callbacks.md"},
            {"Guarantees and HA": "guarantees.md"},
            {"Options reference": "options.md"},
            {"Scale and tuning": "scale-and-tuning.md"},
            {"Metrics": "metrics.md"},
            {"Troubleshooting": "troubleshooting.md"},
        ]
    },
    {
        "Executor authors": [
            {"Write an executor on the core": "write-an-executor.md"},
            {"Write an asyncio executor": "async-executor.md"},
            {"The test kit": "test-kit.md"},
            {"The building blocks": "building-blocks.md"},
        ]
    },
    {
        "Reference": [
            {"Decision rules": "decision-rules.md"},
            {"Command line": "cli.md"},
            {"The simulator": "simulator.md"},
            {"Simulator scenarios": "scenario-schema.md"},
            {"Differences from the provider": "differences.md"},
            {"Development": "development.md"},
        ]
    },
]
"""The site's nav by task: each page of ``docs/`` once, and the generated
``scenario-schema.md`` and ``differences.md``; the API reference is added after it."""

GENERATED_PAGES = ("differences.md", "scenario-schema.md")
"""The pages these hooks write (besides the API reference); every other nav page is a
file in ``docs/``."""


_SPHINX_ROLE = re.compile(r":(?:attr|class|data|exc|func|meth|mod|obj):`(~?)([^`]+)`")
# A literal block's "::", not a mkdocstrings ":::" line.
_LITERAL_MARK = re.compile(r"(?<=[^:\s])::[ \t]*$", re.MULTILINE)


def _as_code(role: re.Match[str]) -> str:
    # As Sphinx shows it: ``~a.b.c`` is ``c``.
    shown = role[2].rsplit(".", 1)[-1] if role[1] else role[2]
    return f"`{shown}`"


class _DocstringText(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        text = _LITERAL_MARK.sub(":", _SPHINX_ROLE.sub(_as_code, "\n".join(lines)))
        return text.split("\n")


class DocstringText(Extension):
    """Sphinx roles as code, ``::`` as ``:``: for the pages and the docstrings alike."""

    def extendMarkdown(self, md: Markdown) -> None:  # noqa: N802 - Python-Markdown's name
        md.preprocessors.register(_DocstringText(md), "k8s_workloads_docstrings", 25)


def public_modules(package: Path = PACKAGE) -> list[str]:
    """The dotted names of the package's public modules and packages, sorted."""
    found = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(part.startswith("_") for part in parts):
            continue  # private, or __main__
        found.append(".".join(parts))
    return sorted(found)


def reference_page(module: str) -> str:
    """Where ``module``'s reference page lives in the site."""
    return "reference/index.md" if module == "k8s_workloads" else f"reference/{module}.md"


def section(text: str, heading: str, *, source: str) -> str:
    """The body under the Markdown heading line ``heading``, up to the next heading of the
    same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    try:
        start = lines.index(heading) + 1
    except ValueError:
        raise PluginError(f"{source}: no {heading!r} heading") from None
    end = len(lines)
    for index in range(start, len(lines)):
        marks = len(lines[index]) - len(lines[index].lstrip("#"))
        if 0 < marks <= level and lines[index][marks : marks + 1] == " ":
            end = index
            break
    body = "\n".join(lines[start:end]).strip()
    if not body:
        raise PluginError(f"{source}: the {heading!r} section is empty")
    return body


def differences_page() -> str:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    unreleased = section(changelog, "## [Unreleased]", source="CHANGELOG.md")
    body = section(unreleased, "### Differences from the provider", source="CHANGELOG.md")
    meaning = next(
        (part for part in changelog.split("\n\n") if part.startswith('"The provider"')), None
    )
    if meaning is None:
        raise PluginError('CHANGELOG.md: no paragraph saying what "the provider" means')
    return (
        "# Differences from the provider\n\n"
        f"{meaning.strip()}\n\n"
        "This page is the Unreleased section of `CHANGELOG.md`, as the build found it.\n\n"
        f"{body}\n"
    )


def scenario_page() -> str:
    example = (PACKAGE / "examples" / "scenario.yaml").read_text(encoding="utf-8")
    return (
        "# Simulator scenarios\n\n"
        "`k8s-workloads simulate [SCENARIO]` reads a YAML scenario; this is its schema, "
        "from the docstring of `k8s_workloads.sim.scenario`.\n\n"
        "::: k8s_workloads.sim.scenario\n"
        "    options:\n"
        "      members: false\n"
        "      show_root_heading: false\n\n"
        "## The bundled scenario\n\n"
        "What `k8s-workloads simulate` runs without a file "
        "(`k8s_workloads/examples/scenario.yaml`):\n\n"
        f"```yaml\n{example.rstrip()}\n```\n"
    )


def _public_table() -> dict[str, tuple[str, ...]]:
    source = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "_LAZY"
            and node.value is not None
        ):
            lazy: dict[str, str] = ast.literal_eval(node.value)
            table: dict[str, tuple[str, ...]] = {}
            for name, module in lazy.items():
                table[module] = (*table.get(module, ()), name)
            return table
    raise PluginError("k8s_workloads/__init__.py: no _LAZY table")


def root_reference_page(modules: list[str]) -> str:
    lines = [
        "::: k8s_workloads",
        "    options:",
        "      members: false",
        "",
        "## The top-level names",
        "",
        "Each is importable from `k8s_workloads` itself and documented in its module.",
        "",
        "| module | names |",
        "| --- | --- |",
    ]
    for module, names in sorted(_public_table().items()):
        dotted = f"k8s_workloads.{module}"
        if dotted not in modules:  # a private module: no page to link to
            lines.append(f"| `{module}` | {', '.join(f'`{name}`' for name in names)} |")
            continue
        links = ", ".join(f"[`{name}`][{dotted}.{name}]" for name in names)
        lines.append(f"| [`{module}`]({dotted}.md) | {links} |")
    lines += ["", "## Modules", ""]
    lines += [f"- [`{module}`]({module}.md)" for module in modules if module != "k8s_workloads"]
    return "\n".join(lines) + "\n"


@event_priority(100)  # before mkdocstrings reads the Markdown extensions
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    config.markdown_extensions.append(DocstringText())  # type: ignore[arg-type]
    reference: list[NavEntry] = [{module: reference_page(module)} for module in public_modules()]
    config["nav"] = [*HAND_WRITTEN_NAV, {"API reference": reference}]
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    modules = public_modules()
    pages = {
        "differences.md": differences_page(),
        "scenario-schema.md": scenario_page(),
    }
    for module in modules:
        if module == "k8s_workloads":
            pages[reference_page(module)] = root_reference_page(modules)
        else:
            pages[reference_page(module)] = f"::: {module}\n"
    for uri, content in pages.items():
        files.append(File.generated(config, uri, content=content))
    return files
