"""``simulate``: an executor scenario run against an in-memory cluster (the runner is
:mod:`k8s_workloads.sim`; this module is its argument tree)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from k8s_workloads.cli._args import Command, option
from k8s_workloads.cli._io import positive_int
from k8s_workloads.limits import MAX_SCENARIO_ENTRIES

if TYPE_CHECKING:
    import argparse


def run_simulate(args: argparse.Namespace, out: TextIO, err: TextIO, stdin: TextIO) -> int:  # noqa: ARG001
    # Deferred: the simulator and yaml load only for this command.
    from k8s_workloads.sim import run_simulation_cli  # noqa: PLC0415

    return run_simulation_cli(
        args.scenario, out=out, err=err, fmt=args.output, max_entries=args.max_entries
    )


COMMAND = Command(
    name="simulate",
    help="run an executor scenario against an in-memory cluster (default: the bundled one)",
    description="Run tasks and callbacks through an executor built from this library, "
    "against an in-memory cluster, and print the timeline and every workload's end "
    "state. Exit 0: fine; 1: an invariant broke; 2: a bad scenario file.",
    run=run_simulate,
    options=(
        option("scenario", nargs="?", help="a scenario YAML file"),
        option("-o", "--output", choices=("text", "json"), default="text", help="output format"),
        option(
            "--max-entries",
            type=positive_int,
            default=MAX_SCENARIO_ENTRIES,
            metavar="N",
            help="refuse a scenario of more workloads, pod scripts, steps, creation errors, "
            "restarts and watch errors in all, YAML aliases expanded (default: %(default)s)",
        ),
    ),
)
