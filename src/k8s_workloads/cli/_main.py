"""The argument tree and :func:`main`: parse, run the subcommand, map what went wrong to
an exit status and one line on stderr."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from k8s_workloads import __version__
from k8s_workloads.cli import (
    _airflow_config,
    _cleanup,
    _decode,
    _local,
    _render,
    _resolve,
    _simulate,
)
from k8s_workloads.cli._io import (
    EXIT_CLOSED_PIPE,
    UsageError,
    flush,
    report,
    silence,
    standard_stream,
)
from k8s_workloads.compat import InvalidVersion

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

_TREE = (
    *_decode.COMMANDS,
    _simulate.COMMAND,
    _airflow_config.COMMAND,
    _cleanup.COMMAND,
    _local.COMMAND,
    _render.COMMAND,
    _resolve.COMMAND,
)
"""The subcommands, in the order ``--help`` lists them."""

_COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO, TextIO, TextIO], int]] = {
    command.name: command.run for command in _TREE if command.run is not None
}
"""Each subcommand's runner, ``(args, stdout, stderr, stdin)`` to the exit status."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="k8s-workloads",
        description="Build, read and reason about the pods of Kubernetes executors.",
    )
    parser.add_argument("--version", action="version", version=f"k8s-workloads {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in _TREE:
        command.add_to(sub)
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run the console script; returns the exit status.

    0: done; 1: decode's annotations are not a workload's, simulate found an anomaly, or
    the output could not be written (a full disk); 2: bad input, one line on stderr;
    130: interrupted; 141: the reader of the output went away (``| head``), quietly.
    """
    out = standard_stream(stdout, sys.stdout, "standard output")
    err = standard_stream(stderr, sys.stderr, "standard error")
    inp = standard_stream(stdin, sys.stdin, "standard input")
    command = ""
    try:
        try:
            args = _parser().parse_args(argv)
        finally:
            flush(out)  # --help into a closed pipe
        command = f"{args.command} {args.kind}" if args.command == "render" else args.command
        status = _run(args, out, err, inp)
        flush(out)  # a full disk or a closed pipe shows here, not at the interpreter's exit
    except (UsageError, InvalidVersion) as error:
        report(err, f"k8s-workloads {command}: {error}")
        return 2
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        silence(out)
        return EXIT_CLOSED_PIPE
    except OSError as error:  # writing failed: no space left, an I/O error
        silence(out)
        problem = error.strerror or str(error)
        where = f"{error.filename}: {problem}" if error.filename else problem
        report(err, f"k8s-workloads {command or 'error'}: cannot write the output: {where}")
        return 1
    except KeyboardInterrupt:
        return 130
    return status


def _run(args: argparse.Namespace, out: TextIO, err: TextIO, inp: TextIO) -> int:
    return _COMMANDS[args.command](args, out, err, inp)
