"""Write docs/decision-rules.md from the decision tables (``k8s_workloads.decisions.tables``).

    .venv/bin/python scripts/decision_rules.py

tests/decisions/test_tables.py fails while the file and the tables differ.
"""

from __future__ import annotations

import pathlib

from k8s_workloads.decisions.results import _rules_document

TARGET = pathlib.Path(__file__).resolve().parent.parent / "docs" / "decision-rules.md"


def main() -> None:
    TARGET.write_text(_rules_document(), encoding="utf-8")
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
