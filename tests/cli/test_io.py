"""What every subcommand shares (:mod:`k8s_workloads.cli._io`): bounded reads of a file or
standard input as UTF-8 text, JSON as Kubernetes reads it, closed standard streams, and a
report that never fails. The console script's own faults: ``test_cli_input.py``."""

from __future__ import annotations

import argparse
import errno
import io
from pathlib import Path

import pytest

from k8s_workloads import limits
from k8s_workloads.cli._io import (
    UsageError,
    parse_json,
    positive_int,
    read_text,
    report,
    standard_stream,
)


def test_a_file_and_standard_input_read_as_text_with_line_ends_made_plain(
    tmp_path: Path,
) -> None:
    path = tmp_path / "in.json"
    path.write_bytes(b'{"a":\r\n1}\r')
    assert read_text(str(path), io.StringIO()) == '{"a":\n1}\n'
    stdin = io.TextIOWrapper(io.BytesIO("héllo".encode()))
    assert read_text("-", stdin) == "héllo"
    assert read_text("-", io.StringIO("plain")) == "plain"  # a text-only stream


def test_what_cannot_be_read_is_a_usage_error_naming_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(UsageError, match=r"^--template: cannot read /nonexistent/x: "):
        read_text("/nonexistent/x", io.StringIO(), "--template")
    latin = tmp_path / "latin"
    latin.write_bytes("é".encode("latin-1"))
    with pytest.raises(UsageError, match=r"is not UTF-8 text$"):
        read_text(str(latin), io.StringIO())
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", 4)
    with pytest.raises(UsageError, match=r"^-w: - is over 4 bytes, the input limit$"):
        read_text("-", io.StringIO("12345"), "-w")
    assert read_text("-", io.StringIO("1234")) == "1234"


@pytest.mark.parametrize("text", ["NaN", '{"a": Infinity}', "[-Infinity]", "{", "1" * 5000])
def test_json_kubernetes_would_refuse_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match=r"^workload: not JSON: "):
        parse_json(text, "workload")


def test_json_is_parsed_as_is() -> None:
    assert parse_json('{"a": [1, 2.5, null]}', "x") == {"a": [1, 2.5, None]}


def test_a_count_option_is_a_whole_number_from_one() -> None:
    assert positive_int("3") == 3
    for text, message in [("0", "must be at least 1, got 0"), ("x", "not an integer: 'x'")]:
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            positive_int(text)


def test_a_closed_standard_stream_fails_as_a_closed_descriptor() -> None:
    given = io.StringIO()
    assert standard_stream(given, None, "stdin") is given
    closed = standard_stream(None, None, "stdin")
    with pytest.raises(OSError, match="stdin is closed") as raised:
        closed.read()
    assert raised.value.errno == errno.EBADF
    closed.flush()  # flushing a closed stream at exit is no error


def test_a_report_is_one_line_and_a_closed_stderr_is_not_an_error() -> None:
    err = io.StringIO()
    report(err, "bad\nvalue")
    assert err.getvalue().count("\n") == 1
    report(standard_stream(None, None, "stderr"), "lost")  # nothing raised
