"""Pod watch streams to watch events, and on to resolutions.

:func:`parse_watch_stream` reads what a pod watch prints, as it arrives, and yields one
:class:`ParsedEvent` per JSON value (or a :class:`MalformedInput` for text that is not
one). It takes both shapes a watch comes in, mixed freely:

* JSON lines, one event per line, as the API server's watch stream sends them
  (``GET /api/v1/pods?watch=true``);
* ``kubectl get pods --watch --output-watch-events -o json``: pretty-printed JSON objects
  over many lines each, one after the other with no separator.

Memory stays constant however long the stream runs, and time linear in its length: only
the value being read is held, never a copy of what follows it on its line, and a value
longer than ``max_object_size`` characters (16 MiB by default) is reported as malformed
and skipped. :func:`resolve_stream` then gives each event its
:class:`~k8s_workloads.watch.resolution.Resolution`.

The module is pure: text in, values out; it reads no file and imports no ``kubernetes``.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, TypeAlias

import attrs

from k8s_workloads.watch.decoding import decode_spec_pod_event
from k8s_workloads.watch.events import resolve_event, resolve_typed_event

if TYPE_CHECKING:
    import datetime
    from collections.abc import Generator, Iterable, Iterator

    from k8s_workloads.watch.resolution import Resolution, ResolverConfig

__all__ = [
    "MAX_OBJECT_SIZE",
    "MalformedInput",
    "ParsedEvent",
    "WatchInput",
    "parse_watch_stream",
    "resolve_stream",
    "resolve_watch_stream",
]

MAX_OBJECT_SIZE = 16 * 1024 * 1024
"""The longest JSON value read, in characters (16 MiB of ASCII); longer ones are skipped.

The API server refuses objects over about 1.5 MB (etcd's request limit), so a real pod
event is far below it.
"""

_SNIPPET_LENGTH = 200
"""How much of a malformed value's first line :attr:`MalformedInput.text` keeps."""

_JSON_WHITESPACE = " \t\r\n"

_NOT_A_START = frozenset(" \t\r\n}],")
"""First characters of lines that cannot start a top-level value (skipped after a bad one)."""

_CUT_SLACK = 16
"""At the size limit, a parse error this close to the cut is the cut, not bad JSON."""


@attrs.frozen
class ParsedEvent:
    """One JSON value read from the stream: a watch event, unless it is not one."""

    line: int
    """The line (from 1) on which the value starts."""
    event: object
    """The decoded value, as :func:`json.loads` gives it; pass it to ``resolve_event``."""


@attrs.frozen
class MalformedInput:
    """Text that is not a JSON value; reading went on at the line after it began."""

    line: int
    """The line (from 1) on which the bad value starts."""
    error: str
    """What is wrong, e.g. ``not JSON: Expecting ',' delimiter at line 3, column 18``."""
    text: str
    """The start of the bad value's first line (at most 200 characters)."""


WatchInput: TypeAlias = ParsedEvent | MalformedInput
"""What :func:`parse_watch_stream` yields."""


# Outside strings only quotes and brackets matter; inside, only quotes and backslashes.
_STRUCTURAL = re.compile(r'["{}\[\]]')
_IN_STRING = re.compile(r'["\\]')


class _Brackets:
    """How deep inside brackets a JSON text is, at the end of what was scanned of it.

    Cheaper than parsing: it tells when a value may have ended (its brackets closed),
    which is when the parser tries to decode, and where a value too long to hold ends.
    """

    __slots__ = ("closed", "depth", "escape", "in_string")

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escape = False
        self.closed = False
        """Whether a closing bracket brought the depth back to 0 since this was last reset."""

    def scan(self, text: str, start: int, end: int, *, stop_at_close: bool = False) -> int:
        """Scan ``text[start:end]``; with ``stop_at_close``, stop after the closing bracket.

        Returns the index just after the bracket that closed the outermost value when
        ``stop_at_close`` is set and there is one, else -1.
        """
        index = start
        while index < end:
            if self.escape:
                self.escape = False
                index += 1
                continue
            if self.in_string:
                match = _IN_STRING.search(text, index, end)
                if match is None:
                    return -1
                index = match.end()
                if match.group() == "\\":
                    self.escape = True
                else:
                    self.in_string = False
                continue
            match = _STRUCTURAL.search(text, index, end)
            if match is None:
                return -1
            index = match.end()
            char = match.group()
            if char == '"':
                self.in_string = True
            elif char in "{[":
                self.depth += 1
            else:
                self.depth -= 1
                if self.depth <= 0:
                    self.closed = True
                    if stop_at_close:
                        return index
        return -1


_Text: TypeAlias = "tuple[str, int]"
"""Text still to read: a string and the index to read it from (never a copy of its rest)."""

_Steps: TypeAlias = "Generator[WatchInput, None, _Text | None]"
"""A parser step: yields what it read, returns text to read again (or None)."""

_REREAD_ALLOWANCE = 2
"""Text read again after malformed values, at most this many times the text read so far.

Reading again from the line after a bad value's start recovers the good lines a
truncated line swallowed; without a bound, lines that each start a value the next bad
line breaks (``[`` on each of a million lines) would be read again once per line.
"""

_NUMBER_LOOKAHEAD = 3
"""How far past a number's end the decoder looks (``1e+5``: ``e``, a sign, a digit)."""


class _Parser:
    """The state of :func:`parse_watch_stream` between chunks.

    Text is read a line at a time (or a chunk, whichever ends first). The value being
    read is buffered from its first character; at the end of each line where it may be
    complete (its first line, a line on which its brackets closed, or once it has
    doubled in size since the last try) it is decoded with ``raw_decode``. A decode
    that fails at the very end of the buffer needs more lines; one that fails before it
    is malformed. Decisions are taken only at line ends, the size limit and the end of
    input, never at chunk boundaries, so any chunking gives the same values.

    A value that starts with nothing buffered is first decoded in place, from its index in
    the text at hand; when that decode ends where more text could not change it, the
    value is taken without being buffered. Text left over after a value is read again
    from its index, never copied: with many values on one line, each is decoded in place
    once, so the work is linear in the line's length.
    """

    def __init__(self, max_object_size: int) -> None:
        self.limit = max_object_size
        self.decoder = json.JSONDecoder(parse_constant=_not_json_constant)
        self.line = 1
        """The line of the next character read."""
        self.column = 1
        """The column of the next character read."""
        self.parts: list[str] = []
        """The value being read, from its first character to the last one read."""
        self.size = 0
        self.start_line = 0
        self.start_column = 0
        self.brackets = _Brackets()
        self.scanning = False
        """Whether appended text is scanned for brackets (after a first failed decode)."""
        self.next_try = 0
        """Decode at a line end once the buffer holds this many characters."""
        self.skip_line = False
        """Discarding the rest of the line a malformed value began on."""
        self.skip_value = False
        """Discarding a value over the size limit, up to where its brackets close."""
        self.resync = False
        """After a malformed value: skipping lines that cannot start one (its inside)."""
        self.stack: list[_Text] = []
        """Text still to read, as (text, index), the top first: chunks and re-reads."""
        self.ended = False
        """Whether the input has ended (no more text can follow what is at hand)."""
        self.offset = 0
        """Where the next character read is in the stream (from 0)."""
        self.start_offset = 0
        self.furthest = 0
        """The furthest offset the text read has reached (text read again goes back)."""
        self.reread = 0
        """How much text was handed back to be read again after malformed values."""

    # --- reading -----------------------------------------------------------------------

    def feed(self, chunk: _Text) -> Iterator[WatchInput]:
        self.stack.append(chunk)
        while self.stack:
            text, index = self.stack.pop()
            length = len(text)
            while index < length:
                newline = text.find("\n", index)
                end = length if newline < 0 else newline + 1
                index, again = yield from self._segment(text, index, end)
                if again:
                    self.stack.append((text, index))
                    self.stack.append(again)
                    break

    def at_line_start(self) -> bool:
        """Whether the next text read starts a line, with nothing held or being skipped."""
        return (
            self.column == 1
            and not self.parts
            and not self.stack
            and not (self.skip_line or self.skip_value or self.resync)
        )

    def take_line(self, line: str) -> None:
        """Count ``line`` (one whole line, read elsewhere) as read."""
        self._advance(line, 0, len(line))

    def finish(self) -> Iterator[WatchInput]:
        self.ended = True
        while self.parts:
            again = yield from self._decide(at_end=True)
            if again:
                yield from self.feed(again)

    def _advance(self, text: str, start: int, end: int) -> None:
        self.offset += end - start
        newlines = text.count("\n", start, end)
        if newlines:
            self.line += newlines
            self.column = end - text.rfind("\n", start, end)
        else:
            self.column += end - start

    def _segment(
        self, text: str, index: int, end: int
    ) -> Generator[WatchInput, None, tuple[int, _Text | None]]:
        """Read ``text[index:end]``: at most one line, ending at its newline if it has one."""
        line_end = text[end - 1] == "\n"
        if self.skip_line:
            self.skip_line = not line_end
            self._advance(text, index, end)
            return end, None
        if self.skip_value:
            return self._skip_value(text, index, end, line_end), None
        if self.resync and self.column == 1:
            if text[index] in _NOT_A_START:  # indented, or closing: the bad value's rest
                self.skip_line = not line_end
                self._advance(text, index, end)
                return end, None
            self.resync = False
        while not self.parts:
            start = index
            while start < end and text[start] in _JSON_WHITESPACE:
                start += 1
            self._advance(text, index, start)
            if start == end:
                return end, None
            self._begin()
            index = start
            decoded = self._decode_in_place(text, start)
            if decoded is None:
                break
            value, stop = decoded
            yield ParsedEvent(self.start_line, value)
            self._advance(text, start, stop)
            if stop >= end:  # it went on over lines: read on from where it ended
                return stop, None
            index = stop
        room = self.limit - self.size
        if end - index > room:
            cut = index + room
            self._append(text, index, cut)
            again = yield from self._decide(at_limit=True)
            return cut, again
        self._append(text, index, end)
        if not line_end:
            return end, None
        again = yield from self._decide()
        return end, again

    def _decode_in_place(self, text: str, start: int) -> tuple[object, int] | None:
        """The value at ``text[start]`` and where it ends, if it can be taken as it stands.

        It can when it decodes, fits the size limit, and what follows it is at hand: a
        number is the only value the decoder reads past, by at most
        ``_NUMBER_LOOKAHEAD`` characters. It is then the value the buffered reading
        would find, since that reading decodes from the same start once the line, the
        size limit or the input ends. Anything else (an error, a value cut by the end
        of the text) is left to the buffered reading, which reports errors with their
        line and column.
        """
        try:
            value, stop = self.decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            return None
        if stop - start > self.limit:
            return None
        if (
            self.ended
            or stop + _NUMBER_LOOKAHEAD <= len(text)
            or type(value) not in (int, float)
            or (stop < len(text) and text[stop] not in ".eE")
        ):
            return value, stop
        return None

    def _skip_value(self, text: str, index: int, end: int, line_end: bool) -> int:
        brackets = self.brackets
        stop = brackets.scan(text, index, end, stop_at_close=True)
        if stop >= 0:
            self.skip_value = False
            end = stop
        elif line_end and brackets.depth <= 0 and not brackets.in_string:
            self.skip_value = False  # not an object or array: it ends with its line
        self._advance(text, index, end)
        return end

    def _begin(self) -> None:
        self.start_offset = self.offset
        self.start_line = self.line
        self.start_column = self.column
        self.brackets = _Brackets()
        self.scanning = False
        self.next_try = 0

    def _append(self, text: str, start: int, end: int) -> None:
        if start == end:
            return
        self.parts.append(text[start:end])
        self.size += end - start
        if self.scanning:
            self.brackets.scan(text, start, end)
        self._advance(text, start, end)

    def _clear(self) -> None:
        self.parts = []
        self.size = 0

    # --- deciding ----------------------------------------------------------------------

    def _position(self, text: str, index: int) -> tuple[int, int]:
        """The line and column of ``text[index]``, where ``text`` is the buffered value."""
        newlines = text.count("\n", 0, index)
        if not newlines:
            return self.start_line, self.start_column + index
        return self.start_line + newlines, index - text.rfind("\n", 0, index)

    def _decide(self, *, at_limit: bool = False, at_end: bool = False) -> _Steps:
        """Try to decode the buffer; what follows it, when it must be read again."""
        brackets = self.brackets
        may_be_complete = brackets.closed or brackets.depth <= 0 or self.size >= self.next_try
        if self.scanning and not (at_limit or at_end or may_be_complete):
            return None
        text = "".join(self.parts)
        self.parts = [text]
        try:
            value, stop = self.decoder.raw_decode(text)
        except json.JSONDecodeError as error:
            cut = at_limit and (
                error.pos >= len(text) - _CUT_SLACK or error.msg.startswith("Unterminated string")
            )
            if cut:
                return (yield from self._too_long(text))
            if error.pos < len(text):
                line, column = self._position(text, error.pos)
                message = error.msg.removesuffix(" at")
                reason = f"not JSON: {message} at line {line}, column {column}"
                return (
                    yield from self._malformed(text, reason, at_limit=at_limit, error=error.pos)
                )
            if at_end:
                reason = "not JSON: the input ended inside this value"
                return (yield from self._malformed(text, reason, at_limit=at_limit))
            # A valid start: wait for more lines, trying again once the buffer doubles.
            if not self.scanning:
                self.scanning = True
                brackets.scan(text, 0, len(text))
            brackets.closed = False
            self.next_try = 2 * self.size
            return None
        except RecursionError:
            reason = "not JSON: nested too deeply"
            return (yield from self._malformed(text, reason, at_limit=at_limit, too_deep=True))
        except ValueError as error:  # e.g. an integer of more digits than int() takes
            reason = f"not JSON: {error}"
            return (yield from self._malformed(text, reason, at_limit=at_limit))
        yield ParsedEvent(self.start_line, value)
        self._clear()
        self.line, self.column = self._position(text, stop)
        self.offset = self.start_offset + stop
        return (text, stop) if stop < len(text) else None

    def _malformed(
        self,
        text: str,
        reason: str,
        *,
        at_limit: bool,
        error: int | None = None,
        too_deep: bool = False,
    ) -> _Steps:
        """Report the buffered value as malformed; read again from the line after its start.

        Unless that would make the text read again, in all, more than
        ``_REREAD_ALLOWANCE`` times the stream read so far: then reading goes on at the
        line after the one with the ``error`` (the value's inside is skipped), or after
        the whole value when where it broke is not known.
        """
        yield MalformedInput(self.start_line, reason, _snippet(text))
        self._clear()
        self.resync = True
        self.furthest = max(self.furthest, self.start_offset + len(text))
        newline = text.find("\n")
        if newline < 0:
            # Its first line is not all read yet (the size limit cut it): skip the rest.
            self.skip_line = at_limit
            return None
        again = newline + 1
        if self.reread + len(text) - again > _REREAD_ALLOWANCE * self.furthest:
            if too_deep:
                error = self._too_deep_at(text)
            again = len(text) if error is None else text.find("\n", error) + 1 or len(text)
            self.skip_line = again == len(text) and at_limit
        self.reread += len(text) - again
        self.line, self.column = self.start_line + text.count("\n", 0, again), 1
        self.offset = self.start_offset + again
        return (text, again) if again < len(text) else None

    def _too_deep_at(self, text: str) -> int:
        """Where ``text``, which the decoder finds nested too deeply, becomes so.

        The shortest prefix that is too deep ends there: the decoder reads from the left,
        so prefixes up to it fail only for ending early.
        """
        low, high = 0, len(text)
        while low < high:
            middle = (low + high) // 2
            try:
                self.decoder.raw_decode(text[:middle])
            except RecursionError:
                high = middle
                continue
            except ValueError:
                pass
            low = middle + 1
        return max(high - 1, 0)

    def _too_long(self, text: str) -> _Steps:
        """Report a value over the size limit and skip it, up to where its brackets close."""
        yield MalformedInput(
            self.start_line,
            f"a JSON value longer than {self.limit} characters: skipped",
            _snippet(text),
        )
        if not self.scanning:
            self.brackets.scan(text, 0, len(text))
        self._clear()
        self.skip_value = True
        return None


def _not_json_constant(name: str) -> object:
    # Python's json reads NaN and Infinity; JSON, and so the API server, has neither.
    raise ValueError(f"{name} (JSON has no NaN or Infinity)")


def _snippet(text: str) -> str:
    newline = text.find("\n")
    first = text if newline < 0 else text[:newline]
    return first[:_SNIPPET_LENGTH].rstrip("\r")


def parse_watch_stream(
    chunks: Iterable[str], *, max_object_size: int = MAX_OBJECT_SIZE
) -> Iterator[WatchInput]:
    """Read a watch stream, as it arrives, into events (and malformed inputs).

    ``chunks`` is the stream's text cut anywhere: lines of a file, reads of a pipe,
    single characters. Each JSON value (JSON lines, or kubectl's pretty-printed objects,
    mixed) gives a :class:`ParsedEvent` as soon as its last line is read; blank lines
    are ignored. Text that is not JSON gives a :class:`MalformedInput` naming the line
    the bad value began on, and reading resumes at the next line after it that can
    start a value: lines that begin with whitespace or a closing bracket are taken for
    the inside of the bad value (a pretty-printed object) and skipped. The text so read
    again is bounded, at twice the stream read so far; past that, reading resumes after
    the line where the bad value broke. A value longer than ``max_object_size``
    characters is reported and skipped up to where its brackets close, without being
    held. Only the current value is ever buffered, and time is linear in the stream's
    length, however many values share a line.

    Any value is a :class:`ParsedEvent`, even one that is not a watch event (a list, a
    number): :func:`~k8s_workloads.watch.events.resolve_event` reports those as malformed.
    """
    if max_object_size < 1:
        raise ValueError(f"max_object_size must be at least 1, got {max_object_size}")
    parser = _Parser(max_object_size)
    for chunk in chunks:
        if chunk:
            yield from parser.feed((chunk, 0))
    yield from parser.finish()


def resolve_stream(
    inputs: Iterable[WatchInput],
    *,
    config: ResolverConfig,
    now: datetime.datetime | None = None,
) -> Iterator[tuple[WatchInput, Resolution | None]]:
    """Each input with its resolution: ``resolve_event`` of an event, None for malformed text.

    Lazy, like the stream it reads: one resolution per input, as the input arrives.
    ``now`` is passed on to the opt-in pending policy (``config.pending``).
    """
    for item in inputs:
        if isinstance(item, ParsedEvent):
            yield item, resolve_event(item.event, config=config, now=now)
        else:
            yield item, None


def resolve_watch_stream(
    chunks: Iterable[str],
    *,
    config: ResolverConfig,
    now: datetime.datetime | None = None,
    max_object_size: int = MAX_OBJECT_SIZE,
) -> Iterator[tuple[WatchInput, Resolution | None]]:
    """``resolve_stream(parse_watch_stream(chunks), ...)``, at a fraction of the cost.

    The same inputs, lines and resolutions, one pair per input, as the two together
    give. A chunk that is one whole line holding one pod event (the API server's JSON
    lines, read a line at a time) is decoded only as far as resolution reads it
    (:func:`~k8s_workloads.watch.events.resolve_event_json`'s typed decoding), and its line
    number is counted, not searched for; its :attr:`ParsedEvent.event` then holds only
    the event's type and its containers' ``args`` and ``command`` (what a caller masks
    tokens with), not the whole event. Any other text (kubectl's pretty-printed objects,
    lines cut across chunks, blank lines, ERROR and BOOKMARK events, text the typed
    decoding does not take) goes through :func:`parse_watch_stream` and
    :func:`~k8s_workloads.watch.events.resolve_event`, with its line and column numbers.
    """
    if max_object_size < 1:
        raise ValueError(f"max_object_size must be at least 1, got {max_object_size}")
    parser = _Parser(max_object_size)
    for chunk in chunks:
        if not chunk:
            continue
        if chunk[-1] == "\n" and len(chunk) <= max_object_size and parser.at_line_start():
            event = decode_spec_pod_event(chunk)
            resolution = None
            if event is not None:
                resolution = resolve_typed_event(event, config=config, now=now)
            if event is not None and resolution is not None:
                yield ParsedEvent(parser.line, event.masking_view()), resolution
                parser.take_line(chunk)
                continue
        for item in parser.feed((chunk, 0)):
            yield _resolved(item, config, now)
    for item in parser.finish():
        yield _resolved(item, config, now)


def _resolved(
    item: WatchInput, config: ResolverConfig, now: datetime.datetime | None
) -> tuple[WatchInput, Resolution | None]:
    if isinstance(item, ParsedEvent):
        return item, resolve_event(item.event, config=config, now=now)
    return item, None
