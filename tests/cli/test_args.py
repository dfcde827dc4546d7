"""Subcommands as data (:mod:`k8s_workloads.cli._args`): a :class:`Command` and its
options become the argparse tree the console script parses."""

from __future__ import annotations

import argparse
import io

import pytest

from k8s_workloads.cli import _main
from k8s_workloads.cli._args import Command, option


def _parser(*commands: Command) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tool")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in commands:
        command.add_to(sub)
    return parser


def test_a_commands_options_are_parsed() -> None:
    greet = Command(
        name="greet",
        help="say hello",
        options=(option("who"), option("-n", "--times", type=int, default=1)),
    )
    args = _parser(greet).parse_args(["greet", "world", "-n", "3"])
    assert (args.command, args.who, args.times) == ("greet", "world", 3)


def test_kinds_are_subcommands_that_must_be_given(capsys: pytest.CaptureFixture[str]) -> None:
    shape = Command(
        name="shape",
        help="draw",
        kinds=(
            Command(name="square", help="a square", options=(option("--side", type=int),)),
            Command(name="circle", help="a circle"),
        ),
    )
    parser = _parser(shape)
    args = parser.parse_args(["shape", "square", "--side", "2"])
    assert (args.kind, args.side) == ("square", 2)
    with pytest.raises(SystemExit):
        parser.parse_args(["shape"])
    assert "required: kind" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["shape", "circle", "--side", "2"])  # only the square has a side


def test_every_subcommand_of_the_console_script_runs() -> None:
    # Each name --help lists is one the dispatcher can run.
    actions = _main._parser()._subparsers._group_actions  # type: ignore[union-attr]
    listed = set(actions[0].choices or ())
    assert listed == set(_main._COMMANDS)
    for name in listed - {"render"}:  # render needs a kind
        with pytest.raises(SystemExit) as exited:
            _main.main([name, "--help"], stdout=io.StringIO(), stderr=io.StringIO())
        assert exited.value.code == 0
