"""The argument tree, written as data: each subcommand is a :class:`Command` (its name,
help, options and runner), each option the arguments of ``add_argument``.

The subcommand modules declare their :class:`Command` values; ``_main`` adds them to the
parser and dispatches to their runners, so no module repeats the argparse calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Mapping
    from typing import TextIO

__all__ = ["Command", "Option", "option"]


@attrs.frozen
class Option:
    """One ``add_argument`` call: the flags (or the positional name) and its settings."""

    flags: tuple[str, ...]
    settings: Mapping[str, Any]


def option(*flags: str, **settings: Any) -> Option:  # noqa: ANN401 - add_argument's settings
    """An option as ``parser.add_argument(*flags, **settings)`` takes it."""
    return Option(flags, settings)


@attrs.frozen(kw_only=True)
class Command:
    """A subcommand: what ``--help`` says, its options, and what runs it.

    ``kinds`` are its own subcommands (``render task``), chosen by ``args.kind``; the
    command's ``run`` still runs them all."""

    name: str
    help: str
    run: Callable[[argparse.Namespace, TextIO, TextIO, TextIO], int] | None = None
    """``(args, stdout, stderr, stdin)`` to the exit status (a kind has none of its own)."""
    description: str | None = None
    options: tuple[Option, ...] = ()
    kinds: tuple[Command, ...] = ()

    def add_to(self, sub: Any) -> argparse.ArgumentParser:  # noqa: ANN401 - argparse's private subparsers action
        """Add this command (and its kinds) to ``sub``, a parser's subparsers."""
        parser: argparse.ArgumentParser = sub.add_parser(
            self.name, help=self.help, description=self.description
        )
        for each in self.options:
            parser.add_argument(*each.flags, **each.settings)
        if self.kinds:
            kinds = parser.add_subparsers(dest="kind", required=True)
            for kind in self.kinds:
                kind.add_to(kinds)
        return parser
