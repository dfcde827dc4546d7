"""What every subcommand shares: the usage error, bounded reads of its input, JSON
parsing, and the standard streams (closed ones, flushing, a reader gone away)."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
from typing import NoReturn, TextIO, cast

from k8s_workloads import limits
from k8s_workloads.display import one_line


class UsageError(Exception):
    """Bad command-line input: reported on stderr with exit status 2."""


def read_text(path: str, stdin: TextIO, what: str | None = None) -> str:
    """The file's text (``-``: standard input); errors name ``what`` (the option) if given.

    At most ``MAX_INPUT_BYTES`` are read (characters, from a text-only stream); more
    is a usage error.
    """
    prefix = f"{what}: " if what else ""
    limit = limits.MAX_INPUT_BYTES  # read at each call: tests lower it
    data: bytes | str
    try:
        if path == "-":
            buffer = getattr(stdin, "buffer", None)
            data = buffer.read(limit + 1) if buffer is not None else stdin.read(limit + 1)
        else:
            with open(path, "rb") as handle:  # noqa: PTH123
                data = handle.read(limit + 1)
    except OSError as error:
        raise UsageError(f"{prefix}cannot read {path}: {error.strerror or error}") from None
    if len(data) > limit:
        raise UsageError(f"{prefix}{path} is over {limit:,} bytes, the input limit")
    if isinstance(data, str):
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{prefix}{path} is not UTF-8 text") from None
    # As a file opened in text mode reads it: \r\n and \r are line ends.
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _not_json_constant(name: str) -> object:
    # Python's json reads NaN and Infinity; JSON, and so Kubernetes, has neither.
    raise ValueError(f"{name} (JSON has no NaN or Infinity)")


def parse_json(text: str, what: str) -> object:
    try:
        return json.loads(text, parse_constant=_not_json_constant)
    except (ValueError, RecursionError) as error:  # also an integer past 4,300 digits
        raise UsageError(f"{what}: not JSON: {error}") from None


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


class _ClosedStream:
    """What stands for a standard stream that was closed when we started (``<&-``).

    Python sets ``sys.stdin`` (or ``stdout``, ``stderr``) to None then; reading or
    writing this fails as a closed descriptor does, and is reported as any I/O error.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def _fail(self, *_: object) -> NoReturn:
        raise OSError(errno.EBADF, f"{self.name} is closed")

    read = readline = write = fileno = _fail

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def standard_stream(given: TextIO | None, standard: TextIO | None, name: str) -> TextIO:
    if given is not None:
        return given
    return standard if standard is not None else cast("TextIO", _ClosedStream(name))


def report(err: TextIO, line: str) -> None:
    """Write one line to stderr (escaped, token-shaped content masked), if stderr can still
    be written to."""
    with contextlib.suppress(OSError, ValueError):
        print(one_line(line), file=err)
        err.flush()


def flush(out: TextIO) -> None:
    """Flush ``out``; if that fails, point it at /dev/null so that exit cannot fail again."""
    try:
        out.flush()
    except (OSError, ValueError):
        silence(out)
        raise


EXIT_CLOSED_PIPE = 141
"""The exit status when the reader of our output went away (``| head``): 128 + SIGPIPE,
what a shell reports for a tool that a closed pipe ended."""


def silence(out: TextIO) -> None:
    """Point ``out``'s descriptor at /dev/null, so that flushing at exit cannot fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
