"""parse_watch_stream and resolve_stream: JSON lines, kubectl's format, bad input, limits."""

from __future__ import annotations

import itertools
import json
import sys
import tracemalloc
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.watch import streams
from k8s_workloads.watch.resolution import Outcome, ResolverConfig
from k8s_workloads.watch.streams import (
    MAX_OBJECT_SIZE,
    MalformedInput,
    ParsedEvent,
    WatchInput,
    parse_watch_stream,
    resolve_stream,
)
from tests.support.event_factory import event, task_pod
from tests.support.fresh_python import loaded_after
from tests.support.json_errors import decoder_error, not_json

DATA = Path(__file__).parents[1] / "data"
ON = ResolverConfig(airflow_version="3.3.2")


def parse(text: str, **options: Any) -> list[WatchInput]:
    return list(parse_watch_stream([text], **options))


def events(items: list[WatchInput]) -> list[tuple[int, object]]:
    return [(item.line, item.event) for item in items if isinstance(item, ParsedEvent)]


def malformed(items: list[WatchInput]) -> list[tuple[int, str]]:
    return [(item.line, item.error) for item in items if isinstance(item, MalformedInput)]


def reference(text: str) -> list[object]:
    """Every value of a well-formed stream, by json's own decoder over the whole text."""
    decoder, index = json.JSONDecoder(), 0
    values: list[object] = []
    while True:
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        if index == len(text):
            return values
        value, index = decoder.raw_decode(text, index)
        values.append(value)


A = {"type": "ADDED", "object": {"metadata": {"name": "a"}, "note": 'braces } { ] [ and "quotes"'}}
B = {"type": "MODIFIED", "object": {"metadata": {"name": "b"}, "list": [1, [2, {"x": None}]]}}
C = {"type": "DELETED", "object": {"metadata": {"name": "c", "escaped": "back\\slash\\\\"}}}


def test_the_public_names() -> None:
    # Each public name is defined by this module (the size limit's effect: the
    # skipped-value test).
    defined = [getattr(streams, name) for name in streams.__all__]
    made_here = [value for value in defined if isinstance(value, (type, types.FunctionType))]
    assert {value.__module__ for value in made_here} == {streams.__name__}
    parsed = ParsedEvent(3, {"type": "ADDED"})
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        parsed.line = 4  # type: ignore[misc]
    assert MalformedInput(1, "e", "t") == MalformedInput(1, "e", "t")


# --- JSON lines ---------------------------------------------------------------------------


def test_json_lines_one_event_per_line() -> None:
    text = "".join(json.dumps(e) + "\n" for e in (A, B, C))
    assert events(parse(text)) == [(1, A), (2, B), (3, C)]


def test_blank_lines_crlf_and_a_last_line_without_newline() -> None:
    text = f"\n{json.dumps(A)}\r\n\r\n   \n\t\n{json.dumps(B)}\n\n{json.dumps(C)}"
    assert events(parse(text)) == [(2, A), (6, B), (8, C)]


def test_an_empty_stream_and_whitespace_only() -> None:
    assert parse("") == []
    assert list(parse_watch_stream([])) == []
    assert parse(" \n\n\t\r\n ") == []


def test_values_that_are_not_events_are_still_parsed() -> None:
    # resolve_event, not the parser, says that these are not watch events.
    assert events(parse('[1, 2]\n"text"\n42\nnull\n{}\n')) == [
        (1, [1, 2]), (2, "text"), (3, 42), (4, None), (5, {}),
    ]  # fmt: skip


def test_several_values_on_one_line() -> None:
    text = json.dumps(A) + json.dumps(B) + "  " + json.dumps(C) + "\n"
    assert events(parse(text)) == [(1, A), (1, B), (1, C)]


# --- kubectl's format -----------------------------------------------------------------------


def test_kubectl_pretty_printed_concatenated_objects() -> None:
    text = "".join(json.dumps(e, indent=4) + "\n" for e in (A, B, C))
    parsed = events(parse(text))
    assert [value for _, value in parsed] == [A, B, C]
    starts = [index + 1 for index, line in enumerate(text.splitlines()) if line == "{"]
    assert [line for line, _ in parsed] == starts


def test_kubectl_objects_with_no_newline_between() -> None:
    text = json.dumps(A, indent=2) + json.dumps(B, indent=2)
    assert [value for _, value in events(parse(text))] == [A, B]


def test_the_kubectl_fixture_parses_as_json_does() -> None:
    text = (DATA / "kubectl_watch.json").read_text("utf-8")
    items = parse(text)
    assert malformed(items) == []
    assert [value for _, value in events(items)] == reference(text)
    assert len(items) > 10


def test_mixed_json_lines_and_pretty_printed_objects() -> None:
    text = (
        json.dumps(A) + "\n"
        + json.dumps(B, indent=4) + "\n\n"
        + json.dumps(C) + "\n"
        + json.dumps(A, indent=1) + json.dumps(B) + "\n"
    )  # fmt: skip
    assert [value for _, value in events(parse(text))] == [A, B, C, A, B]
    assert [line for line, _ in events(parse(text))][:3] == [
        1,
        2,
        2 + json.dumps(B, indent=4).count("\n") + 2,
    ]


# --- malformed input ------------------------------------------------------------------------


def test_a_garbage_line_in_the_middle() -> None:
    text = f"{json.dumps(A)}\nthis is not json\n{json.dumps(B)}\n"
    items = parse(text)
    assert events(items) == [(1, A), (3, B)]
    (bad,) = [item for item in items if isinstance(item, MalformedInput)]
    assert bad == MalformedInput(
        2, not_json(f"this is not json\n{json.dumps(B)}\n", line=2), "this is not json"
    )


def test_a_truncated_json_line_then_good_lines() -> None:
    cut = json.dumps(A)[:40]
    text = f"{cut}\n{json.dumps(B)}\n{json.dumps(C)}\n"
    items = parse(text)
    # Line 2 fits where the cut line stopped (a value for "metadata"); the error shows
    # only on line 3, and line 2 is read again as a value of its own.
    assert events(items) == [(2, B), (3, C)]
    assert malformed(items) == [(1, not_json(text))]
    assert malformed(items)[0][1].endswith(" at line 3, column 1")


def test_a_truncated_line_that_is_the_last_one() -> None:
    items = parse(json.dumps(A) + "\n" + json.dumps(B)[:30])
    assert events(items) == [(1, A)]
    assert malformed(items) == [(2, "not JSON: the input ended inside this value")]


def test_a_truncated_pretty_object_then_the_next_one() -> None:
    # kubectl killed mid-object, started again: one report, nothing from the inside.
    first = json.dumps(A, indent=4)
    cut = first[: first.index('"name"') + 4]
    text = f"{cut}\n{json.dumps(B, indent=4)}\n{json.dumps(C, indent=4)}\n"
    items = parse(text)
    assert malformed(items)[0][0] == 1
    assert len(malformed(items)) == 1
    assert [value for _, value in events(items)] == [B, C]


def test_a_bad_token_inside_a_pretty_object_is_one_report() -> None:
    bad = json.dumps(B, indent=4).replace('"b"', "b", 1)
    text = f"{json.dumps(A, indent=4)}\n{bad}\n{json.dumps(C, indent=4)}\n"
    items = parse(text)
    start = json.dumps(A, indent=4).count("\n") + 2
    rest = f"{bad}\n{json.dumps(C, indent=4)}\n"
    assert malformed(items) == [(start, not_json(rest, line=start))]
    assert malformed(items)[0][1].endswith(f" at line {start + 4}, column 21")
    assert [value for _, value in events(items)] == [A, C]


def test_trailing_garbage_after_an_object() -> None:
    text = json.dumps(A) + " trailing\n" + json.dumps(B) + "\n"
    items = parse(text)
    assert events(items) == [(1, A), (2, B)]
    column = len(json.dumps(A)) + 2
    rest = text[column - 1 :]
    assert malformed(items) == [(1, not_json(rest, column=column))]
    assert malformed(items)[0][1].endswith(f" at line 1, column {column}")


@pytest.mark.parametrize(
    "line", ['{"a": "b\\x"}', '{"a": 1,}', "{'a': 1}", '"unterminated', "]", "}", "\x00"]
)
def test_malformed_values_are_reported_and_reading_goes_on(line: str) -> None:
    # The decoder's words vary with the Python release; what is promised is the prefix,
    # the decoder's own message and the place, counted in the whole input.
    rest = f"{line}\n{json.dumps(B)}\n"
    items = parse(f"{json.dumps(A)}\n{rest}")
    assert events(items) == [(1, A), (3, B)]
    assert malformed(items) == [(2, not_json(rest, line=2))]


def test_an_unterminated_string_is_reported_where_the_line_ends() -> None:
    items = parse(f'{json.dumps(A)}\n"unterminated\n{json.dumps(B)}\n')
    ((_, message),) = malformed(items)
    assert message.endswith(" at line 2, column 14")  # the newline: a raw control char


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("NaN", "not JSON: NaN (JSON has no NaN or Infinity)"),
        ('{"a": -Infinity}', "not JSON: -Infinity (JSON has no NaN or Infinity)"),
        ("[" * 100_000 + "]" * 100_000, "not JSON: nested too deeply"),
    ],
)
def test_values_json_does_not_allow_are_reported_in_our_words(line: str, error: str) -> None:
    items = parse(f"{json.dumps(A)}\n{line}\n{json.dumps(B)}\n")
    assert events(items) == [(1, A), (3, B)]
    assert malformed(items) == [(2, error)]


def test_an_integer_int_refuses_is_reported_with_the_interpreters_reason() -> None:
    line = "1" * 5000  # past int()'s 4,300 digits (from 3.10.7 and 3.11)
    items = parse(f"{json.dumps(A)}\n{line}\n{json.dumps(B)}\n")
    if not hasattr(sys, "get_int_max_str_digits"):
        assert events(items) == [(1, A), (2, int(line)), (3, B)]
        return
    assert events(items) == [(1, A), (3, B)]
    assert malformed(items) == [(2, f"not JSON: {decoder_error(line)}")]


def test_the_text_of_a_malformed_value_is_its_first_line_cut() -> None:
    (bad,) = parse("x" * 500 + "\n")
    assert isinstance(bad, MalformedInput)
    assert bad.text == "x" * 200


def test_lines_inside_a_bad_value_are_skipped_but_the_next_value_is_read() -> None:
    text = '{"a": [\n    1,\n    oops\n]}\n  {"indented": true}\n{"b": 2}\n'
    items = parse(text)
    # The indented line looks like the inside of the bad value, and is skipped with it.
    assert events(items) == [(6, {"b": 2})]
    assert malformed(items) == [(1, not_json(text))]
    assert malformed(items)[0][1].endswith(" at line 3, column 5")


def test_lines_inside_bad_values_are_read_again_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each line opens a value that the last line breaks: reading again from the line
    # after each bad value's start read the 2,000 lines 2,000 times (2 million lines).
    segments = 0
    read_segment = streams._Parser._segment  # counting the work done, a line at a time

    def counting(self: streams._Parser, text: str, index: int, end: int) -> Any:
        nonlocal segments
        segments += 1
        return read_segment(self, text, index, end)

    monkeypatch.setattr(streams._Parser, "_segment", counting)
    lines = 2000
    items = parse("[\n" * lines + "x\n" + json.dumps(A) + "\n")
    assert segments <= (1 + 2) * (lines + 2)  # read once, again at most twice as much
    assert events(items) == [(lines + 2, A)]
    # Nested too deeply, or broken at line 2001: how deep json goes depends on the stack.
    assert malformed(items)[0][0] == 1


_opening_lines = st.lists(
    st.sampled_from(
        ["[", "[1,", '{"a":', '{"a": [', "x", "{}", "1", "]", "}", " [", json.dumps(A)]
    ),
    max_size=40,
)


@given(_opening_lines, st.data())
def test_bounded_reading_again_reads_the_same_however_the_text_is_cut(
    lines: list[str], data: st.DataObject
) -> None:
    text = "\n".join(lines)
    whole = parse(text)
    assert list(parse_watch_stream(iter(text))) == whole
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    pieces = [text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])]
    assert list(parse_watch_stream(pieces)) == whole
    assert [item.line for item in whole] == sorted(item.line for item in whole)


# --- the size limit -------------------------------------------------------------------------


def test_an_object_over_the_limit_is_reported_and_skipped() -> None:
    big = {"type": "ADDED", "object": {"data": "x" * 300, "nested": [{"y": "}" * 50}]}}
    text = "\n".join([json.dumps(A), json.dumps(big), json.dumps(B), ""])
    items = parse(text, max_object_size=200)
    assert events(items) == [(1, A), (3, B)]
    assert malformed(items) == [(2, "a JSON value longer than 200 characters: skipped")]


def test_a_pretty_object_over_the_limit_is_skipped_to_its_end() -> None:
    big = {"type": "ADDED", "object": {"items": [{"n": n, "s": "]}" * n} for n in range(30)]}}
    text = (
        json.dumps(A, indent=4) + "\n" + json.dumps(big, indent=4) + "\n" + json.dumps(B, indent=4)
    )
    items = parse(text, max_object_size=300)
    assert [value for _, value in events(items)] == [A, B]
    ((line, error),) = malformed(items)
    assert line == json.dumps(A, indent=4).count("\n") + 2
    assert "longer than 300 characters" in error


def test_garbage_and_strings_over_the_limit_end_with_their_line() -> None:
    text = "g" * 500 + "\n" + '"' + "s" * 500 + '"\n' + json.dumps(A) + "\n"
    items = parse(text, max_object_size=100)
    assert events(items) == [(3, A)]
    assert [line for line, _ in malformed(items)] == [1, 2]


def test_a_value_that_ends_exactly_at_the_limit_is_read() -> None:
    text = json.dumps(A)
    assert events(parse(text + "\n" + text, max_object_size=len(text))) == [(1, A), (2, A)]
    assert malformed(parse(text + "\n", max_object_size=len(text) - 1))


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_object_size"):
        list(parse_watch_stream(["{}"], max_object_size=0))


def test_the_default_limit_skips_an_object_over_16_mib() -> None:
    def chunks() -> Iterator[str]:
        yield json.dumps(A) + '\n{"type": "ADDED", "object": {"data": "'
        for _ in range(17 * 16):  # 17 MiB, 64 KiB at a time
            yield "x" * 65536
        yield '"}}\n' + json.dumps(B) + "\n"

    items = list(parse_watch_stream(chunks()))
    assert events(items) == [(1, A), (3, B)]
    assert malformed(items) == [
        (2, f"a JSON value longer than {MAX_OBJECT_SIZE} characters: skipped")
    ]


def test_memory_stays_bounded_by_the_limit() -> None:
    limit = 1 << 20

    def chunks() -> Iterator[str]:
        for _ in range(20):
            yield '{"type": "ADDED", "object": {"data": "'
            for _ in range(4 * 16):  # 4 MiB per object
                yield "y" * 65536
            yield '"}}\n' + json.dumps(A) + "\n"

    tracemalloc.start()
    try:
        count = sum(1 for item in parse_watch_stream(chunks(), max_object_size=limit)
                    if isinstance(item, ParsedEvent))  # fmt: skip
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 20
    assert peak < 6 * limit  # the 80 MiB read never piles up


@pytest.mark.parametrize("value", ["{}", '[1,{"a":"b"}]', "1 ", '"s"', "null "])
@pytest.mark.parametrize("chunk_size", [None, 1000])
def test_many_values_on_one_line_are_read_in_place(value: str, chunk_size: int | None) -> None:
    # Each value used to copy the rest of its line, and each copy was kept until the line
    # ended: 4,000 values on an 8 KB line peaked at 16 MB (the line's size times 2,000).
    line = value * 4000 + "\n"
    size = chunk_size or len(line)
    chunks = [line[index : index + size] for index in range(0, len(line), size)]
    tracemalloc.start()
    try:
        count = sum(1 for item in parse_watch_stream(iter(chunks))
                    if isinstance(item, ParsedEvent))  # fmt: skip
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 4000
    assert peak < 3 * len(line) + 16 * 1024


def test_values_on_one_line_after_a_pretty_object_end_it() -> None:
    text = json.dumps(A, indent=2) + json.dumps(B) + " 1 2" + json.dumps(C) + "\n" + "[]" * 3
    items = parse(text)
    last = json.dumps(A, indent=2).count("\n") + 1
    assert events(items) == [
        (1, A), (last, B), (last, 1), (last, 2), (last, C), (last + 1, []), (last + 1, []),
        (last + 1, []),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("first", "second", "value"),
    [
        ("1", "2 3\n", 12),
        ("1.", "5\n", 1.5),
        ("1e", "5\n", 1e5),
        ("1e+", "5\n", 1e5),
        ("-", "7\n", -7),
    ],
)
def test_a_number_cut_by_a_chunk_boundary_is_read_whole(
    first: str, second: str, value: float
) -> None:
    # A number is the one value the decoder reads past: the next chunk may continue it.
    items = list(parse_watch_stream(["[]" + first, second]))
    assert items == parse("[]" + first + second)
    assert events(items)[:2] == [(1, []), (1, value)]


# --- chunk boundaries -----------------------------------------------------------------------


def test_the_fixtures_read_the_same_however_they_are_cut() -> None:
    for name in ("sample.jsonl", "kubectl_watch.json"):
        text = (DATA / name).read_text("utf-8")
        whole = parse(text)
        sizes = itertools.cycle([1, 7, 2, 4093, 3, 64, 1, 1, 513])
        pieces, index = [], 0
        while index < len(text):
            size = next(sizes)
            pieces.append(text[index : index + size])
            index += size
        assert list(parse_watch_stream(pieces)) == whole
    sample = (DATA / "sample.jsonl").read_text("utf-8")
    assert list(parse_watch_stream(iter(sample))) == parse(sample)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6)
    | st.text(alphabet=st.sampled_from('ab{}[]"\\,:\n\t é'), max_size=8),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(alphabet='ab}{"', max_size=3), children, max_size=3),
    max_leaves=8,
)  # fmt: skip
_objects = st.dictionaries(st.sampled_from(["type", "object", "x"]), _json_values, max_size=3)
_garbage = st.sampled_from(
    ["garbage", '{"a": ', "}", "]", '"open', "{'a': 1}", "  indented", ",", "[1,", "1 2", "{}x"]
)


@st.composite
def _streams(draw: st.DrawFn) -> tuple[str, bool]:
    """A stream of JSON lines, pretty objects and (maybe) garbage; whether it is all JSON."""
    parts: list[str] = []
    clean = True
    for value in draw(st.lists(_objects | _json_values, max_size=6)):
        if draw(st.booleans()) and draw(st.booleans()):
            parts.append(draw(_garbage))
            clean = False
        indent = draw(st.sampled_from([None, None, 0, 2, 4]))
        parts.append(json.dumps(value, indent=indent))
    text = ""
    for part in parts:
        separator = draw(st.sampled_from(["\n", "\n\n", " \n", "\r\n", "\n \t\n", ""]))
        text += part + separator
    if draw(st.booleans()) and parts:
        text = text.rstrip("\r\n \t")  # a last line without newline
    return text, clean


@given(_streams(), st.integers(1, 400), st.data())
def test_one_character_at_a_time_reads_as_the_whole_text(
    stream: tuple[str, bool], limit: int, data: st.DataObject
) -> None:
    text, clean = stream
    whole = parse(text, max_object_size=limit)
    assert list(parse_watch_stream(iter(text), max_object_size=limit)) == whole
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    pieces = [text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])]
    assert list(parse_watch_stream(pieces, max_object_size=limit)) == whole
    if clean:
        unlimited = parse(text)
        assert malformed(unlimited) == []
        assert [value for _, value in events(unlimited)] == reference(text)


@given(
    st.lists(_objects | _json_values, max_size=12),
    st.lists(st.sampled_from(["", " ", "\t", "  \r"]), min_size=12, max_size=12),
    st.data(),
)
def test_many_values_per_line_read_as_one_value_per_line(
    values: list[object], separators: list[str], data: st.DataObject
) -> None:
    texts = [json.dumps(value, separators=(",", ":")) for value in values]
    one_line = ""
    for text, separator in zip(texts, separators, strict=False):
        # 1 then 2 would read as 12, true then null as a bad word: keep them apart.
        glued = one_line and not separator and (one_line[-1] + text[0]).isalnum()
        one_line += (" " if glued else separator) + text
    one_per_line = "".join(f"{text}\n" for text in texts)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(one_line)), max_size=8)))
    pieces = [one_line[a:b] for a, b in itertools.pairwise([0, *cuts, len(one_line)])]
    read = list(parse_watch_stream(pieces))
    assert read == parse(one_line)
    assert read == [ParsedEvent(1, value) for _, value in events(parse(one_per_line))]
    assert events(parse(one_per_line)) == [(n, value) for n, value in enumerate(values, 1)]


@given(_streams())
def test_nothing_is_lost_around_garbage(stream: tuple[str, bool]) -> None:
    text, _ = stream
    items = parse(text)
    lines = [item.line for item in items]
    assert lines == sorted(lines)
    assert all(1 <= line <= text.count("\n") + 1 for line in lines)


# --- resolve_stream -------------------------------------------------------------------------


def test_resolve_stream_pairs_each_input_with_its_resolution() -> None:
    running = event("MODIFIED", task_pod({"phase": "Running"}))
    text = f"{json.dumps(running)}\nnope\n[1]\n"
    results = list(resolve_stream(parse_watch_stream([text]), config=ON))
    assert [type(item) for item, _ in results] == [ParsedEvent, MalformedInput, ParsedEvent]
    (_, first), (_, second), (_, third) = results
    assert first is not None
    assert first.outcome is Outcome.RUNNING
    assert second is None
    assert third is not None
    assert third.outcome is Outcome.MALFORMED


def test_resolve_stream_is_lazy() -> None:
    line = json.dumps(event("ADDED", task_pod({"phase": "Pending"}))) + "\n"
    endless = itertools.repeat(line)
    taken = list(itertools.islice(resolve_stream(parse_watch_stream(endless), config=ON), 5))
    assert [item.line for item, _ in taken] == [1, 2, 3, 4, 5]
    assert all(r is not None and r.outcome is Outcome.PENDING for _, r in taken)


def test_resolve_stream_passes_now_to_the_pending_policy() -> None:
    import datetime  # noqa: PLC0415

    from k8s_workloads.watch.failures import PendingPolicy  # noqa: PLC0415

    pod = task_pod(
        {
            "phase": "Pending",
            "startTime": "2026-06-07T00:00:00Z",
            "containerStatuses": [
                {"name": "base", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
            ],
        }
    )
    text = json.dumps(event("MODIFIED", pod))
    config = ResolverConfig(airflow_version="3.3.2", pending=PendingPolicy())
    soon = datetime.datetime(2026, 6, 7, 0, 1, tzinfo=datetime.timezone.utc)
    late = datetime.datetime(2026, 6, 7, 1, 0, tzinfo=datetime.timezone.utc)
    ((_, early),) = resolve_stream(parse_watch_stream([text]), config=config, now=soon)
    ((_, after),) = resolve_stream(parse_watch_stream([text]), config=config, now=late)
    assert early is not None
    assert early.outcome is Outcome.PENDING
    assert after is not None
    assert after.outcome is Outcome.FAILED


def test_the_module_does_not_import_kubernetes() -> None:
    heavy = ("kubernetes", "yaml", "k8s_workloads.adapters")
    assert loaded_after("import k8s_workloads.watch.streams", *heavy) == []


# --- resolve_watch_stream: the same as resolve_stream(parse_watch_stream(...)) ---------


def _read_both(
    chunks: list[str], config: ResolverConfig, **options: Any
) -> tuple[list[tuple[int, object, object]], list[tuple[int, object, object]]]:
    """(line, input or its tokens, resolution) per input, both ways."""
    from k8s_workloads.pods.redaction import pod_args_tokens  # noqa: PLC0415

    def seen(pairs: Iterator[tuple[WatchInput, object]]) -> list[tuple[int, object, object]]:
        out: list[tuple[int, object, object]] = []
        for item, resolution in pairs:
            if isinstance(item, MalformedInput):
                out.append((item.line, item, resolution))
                continue
            # A line the typed decoding took holds only what masking reads of its event.
            pod = item.event.get("object") if isinstance(item.event, dict) else None
            out.append((item.line, pod_args_tokens(pod), resolution))
        return out

    fast = seen(streams.resolve_watch_stream(chunks, config=config, **options))
    slow = seen(resolve_stream(parse_watch_stream(chunks, **options), config=config))
    return fast, slow


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def test_the_fixture_streams_resolve_as_parse_then_resolve() -> None:
    names = sorted(DATA.glob("*.jsonl")) + sorted(DATA.glob("*.json"))
    assert len(names) >= 8
    for path in names:
        text = path.read_text("utf-8")
        for config in (ON, ResolverConfig(), ResolverConfig(airflow_version="3.3.2", pending=None)):
            fast, slow = _read_both(_lines(text), config)
            assert fast == slow, path.name
            assert len(fast) >= 1


_pod_statuses: st.SearchStrategy[dict[str, Any]] = st.sampled_from(
    [
        {"phase": "Running"},
        {"phase": "Succeeded"},
        {"phase": "Pending", "containerStatuses": [{"name": "base", "state": {"waiting": {
            "reason": "ErrImagePull"}}}]},
        {"phase": "Failed", "containerStatuses": [{"name": "base", "state": {"terminated": {
            "exitCode": 137, "reason": "OOMKilled"}}}]},
        {"phase": 7},
    ]
)  # fmt: skip


@st.composite
def _pod_event_lines(draw: st.DrawFn) -> str:
    pod = task_pod(draw(_pod_statuses))
    kind = draw(st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]))
    return json.dumps(event(kind, pod), indent=draw(st.sampled_from([None, None, 2])))


@given(
    st.lists(_pod_event_lines() | _garbage | _objects.map(json.dumps), max_size=8),
    st.sampled_from(["\n", "\r\n", "\n\n"]),
    st.booleans(),
    st.integers(200, MAX_OBJECT_SIZE),
)
def test_pod_events_among_anything_resolve_as_parse_then_resolve(
    parts: list[str], separator: str, by_line: bool, limit: int
) -> None:
    text = "".join(part + separator for part in parts)
    chunks = _lines(text) if by_line else [text[i : i + 1000] for i in range(0, len(text), 1000)]
    fast, slow = _read_both(chunks, ON, max_object_size=limit)
    assert fast == slow


def test_a_pod_line_is_numbered_by_counting() -> None:
    running = json.dumps(event("MODIFIED", task_pod({"phase": "Running"})))
    text = f"\n{running}\nnope\n{running}\n"
    results = list(streams.resolve_watch_stream(_lines(text), config=ON))
    assert [item.line for item, _ in results] == [2, 3, 4]
    assert [None if r is None else r.outcome for _, r in results] == [
        Outcome.RUNNING,
        None,
        Outcome.RUNNING,
    ]
