"""Redaction: the Execution API tokens in manifests and messages, found and masked.

A workload's token travels in its pod's ``--json-string`` argument or in the Secret that
carries it (:mod:`k8s_workloads.pods.payload`); anything shown to a person (the CLI's output, an
error message naming a manifest) goes through here first.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from k8s_workloads.display import REDACTED, mask_token_shaped
from k8s_workloads.json_values import as_list, as_map

__all__ = [
    "Masker",
    "mask_cut",
    "message_masker",
    "pod_args_tokens",
    "redact_manifest",
    "redact_manifests",
    "token_masker",
    "tokens_in_json",
]

_WORKLOAD_ARG = "--json-string"
_SHORTEST_FLAG = len("--json-s")
_FLAG_START = _WORKLOAD_ARG[:_SHORTEST_FLAG]
_TOKEN_KEY = "token"  # noqa: S105 - the key that holds a token, not one


def tokens_in_json(value: object, found: set[str]) -> None:
    """Add to ``found`` every non-empty string held under a ``token`` key, at any depth of
    the parsed JSON ``value`` (a workload's payload)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == _TOKEN_KEY and isinstance(item, str) and item:
                found.add(item)
            tokens_in_json(item, found)
    elif isinstance(value, list):
        for item in value:
            tokens_in_json(item, found)


def _parse_json(text: str) -> tuple[bool, object]:
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def _decode_data(value: object) -> str | None:
    """A Secret ``data`` value as text, or None when it is not base64 of UTF-8."""
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _collect_json_text(text: str, found: set[str]) -> None:
    ok, parsed = _parse_json(text)
    if ok:
        tokens_in_json(parsed, found)


def _collect_secret_value(key: object, text: str, found: set[str]) -> None:
    if key == _TOKEN_KEY and text:
        found.add(text)
    _collect_json_text(text, found)


def _collect_secret(secret: Mapping[Any, Any], found: set[str]) -> None:
    string_data = secret.get("stringData")
    if isinstance(string_data, Mapping):
        for key, item in string_data.items():
            if isinstance(item, str):
                _collect_secret_value(key, item, found)
    data = secret.get("data")
    if isinstance(data, Mapping):
        for key, item in data.items():
            text = _decode_data(item)
            if text is not None:
                _collect_secret_value(key, text, found)


def _collect(value: object, found: set[str]) -> None:
    if isinstance(value, Mapping):
        if value.get("kind") == "Secret":
            _collect_secret(value, found)
        for item in value.values():
            _collect(item, found)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            payload = _json_string_payload(value, index)
            if payload is not None:
                _collect_json_text(payload, found)
            _collect(item, found)


def _is_workload_flag(flag: str) -> bool:
    # argparse takes any unambiguous prefix: --json-s ... --json-string (not --json-p…).
    return len(flag) >= _SHORTEST_FLAG and _WORKLOAD_ARG.startswith(flag)


def _json_string_payload(items: list[Any] | tuple[Any, ...], index: int) -> str | None:
    """The workload JSON that ``items[index]`` carries as a ``--json-string`` value."""
    item = items[index]
    if not isinstance(item, str):
        return None
    flag, equals, value = item.partition("=")
    if equals and _is_workload_flag(flag):
        return value
    previous = items[index - 1] if index > 0 else None
    if isinstance(previous, str) and _is_workload_flag(previous):
        return item
    return None


def _spellings(token: str) -> set[str]:
    # The token as it is, and as it appears inside JSON text, once or twice escaped (a pod
    # manifest serialised into an annotation holds its args' JSON escaped twice).
    found = {token}
    for ensure_ascii in (True, False):
        once = json.dumps(token, ensure_ascii=ensure_ascii)[1:-1]
        found.add(once)
        found.add(json.dumps(once, ensure_ascii=ensure_ascii)[1:-1])
    return found


class Masker:
    """Masks ``tokens`` wherever they appear, as written and as JSON-escaped; with
    ``token_shaped``, also what looks like a token (a JWT, a ``token`` field's value, a
    ``Bearer`` credential)."""

    def __init__(self, tokens: Iterable[str], *, token_shaped: bool = False) -> None:
        spellings = {spelling for token in tokens if token for spelling in _spellings(token)}
        # Longest first, so that an escaped spelling wins over a raw one it contains.
        ordered = sorted(spellings, key=lambda s: (-len(s), s))
        self.pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self.token_shaped = token_shaped
        """Also mask what looks like a token (messages; never data, such as manifests)."""

    def text(self, value: str) -> str:
        """``value`` with every token replaced by :data:`REDACTED`."""
        masked = self._known(value)
        return mask_token_shaped(masked) if self.token_shaped else masked

    def _known(self, value: str) -> str:
        if self.pattern is None:
            return value
        masked = self.pattern.sub(REDACTED, value)
        # A token whose ends look like the mask's could re-form across a replacement;
        # then nothing of the string is worth keeping.
        if masked != value and self.pattern.search(masked):
            return REDACTED
        return masked

    def json_value(self, value: object) -> Any:  # noqa: ANN401 - a JSON value
        """A parsed JSON value with the tokens masked in its strings and keys."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(key): self.json_value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.json_value(item) for item in value]
        return value

    def json_text(self, text: str, *, unparseable: str | None) -> str:
        """JSON text with its tokens masked, keeping its layout where that is exact.

        Text that is not JSON becomes ``unparseable``, or is masked as plain text when
        that is None.
        """
        ok, parsed = _parse_json(text)
        if not ok:
            return self.text(text) if unparseable is None else unparseable
        if self.pattern is None:
            return text
        wanted = self.json_value(parsed)
        masked = self.text(text)
        ok, reparsed = _parse_json(masked)
        if ok and reparsed == wanted:
            return masked
        # A token that is also JSON syntax (or spelt with other escapes): rewrite.
        rewritten = json.dumps(wanted, separators=(",", ":"), ensure_ascii=False)
        try:
            rewritten.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate ("\ud800" in the text): keep it escaped
            return json.dumps(wanted, separators=(",", ":"))
        return rewritten

    def secret_data(self, value: object) -> object:
        text = _decode_data(value)
        if text is None:
            return self.value(value)
        masked = self.json_text(text, unparseable=None)
        if masked == text:
            return value
        return base64.b64encode(masked.encode("utf-8")).decode("ascii")

    def value(self, value: object) -> Any:  # noqa: ANN401 - a JSON value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return self.mapping(value)
        if isinstance(value, (list, tuple)):
            return [self.item(value, index) for index in range(len(value))]
        if value is None or isinstance(value, (bool, int, float)):
            return value
        return copy.deepcopy(value)

    def item(self, items: list[Any] | tuple[Any, ...], index: int) -> Any:  # noqa: ANN401
        item = items[index]
        payload = _json_string_payload(items, index)
        if payload is None:
            return self.value(item)
        masked = self.json_text(payload, unparseable=REDACTED)
        if item == payload:
            return masked
        return self.text(item[: len(item) - len(payload)]) + masked

    def mapping(self, value: Mapping[Any, Any]) -> dict[Any, Any]:
        is_secret = value.get("kind") == "Secret"
        result: dict[Any, Any] = {}
        for key, item in value.items():
            new_key = self.text(key) if isinstance(key, str) else key
            if is_secret and key == "stringData" and isinstance(item, Mapping):
                result[new_key] = {
                    self.text(k) if isinstance(k, str) else k: (
                        self.json_text(v, unparseable=None) if isinstance(v, str) else self.value(v)
                    )
                    for k, v in item.items()
                }
            elif is_secret and key == "data" and isinstance(item, Mapping):
                result[new_key] = {
                    self.text(k) if isinstance(k, str) else k: self.secret_data(v)
                    for k, v in item.items()
                }
            else:
                result[new_key] = self.value(item)
        return result


def pod_args_tokens(pod: object) -> frozenset[str]:
    """The tokens in a pod's ``--json-string`` container and init container args."""
    spec = as_map(as_map(pod).get("spec"))
    found: frozenset[str] = frozenset()
    for kind in ("containers", "initContainers"):
        for container in as_list(spec.get(kind)):
            for field in ("args", "command"):
                items = as_list(as_map(container).get(field))
                for index, item in enumerate(items):
                    # Cheap first: only a workload flag starts a payload, there or next.
                    if not (isinstance(item, str) and item.startswith(_FLAG_START)):
                        continue
                    for at in (index, index + 1):
                        payload = _json_string_payload(items, at) if at < len(items) else None
                        if payload is not None:
                            found |= _workload_tokens(payload)
    return found


@functools.lru_cache(maxsize=256)  # every event of a pod repeats its args: parse them once
def _workload_tokens(text: str) -> frozenset[str]:
    found: set[str] = set()
    _collect_json_text(text, found)
    return frozenset(found)


@functools.lru_cache(maxsize=64)  # a watch stream shows each pod (and its token) many times
def message_masker(tokens: frozenset[str] = frozenset()) -> Masker:
    """A masker for messages and text output: ``tokens``, and anything token-shaped."""
    return Masker(tokens, token_shaped=True)


_SHORTEST_CUT = 8


def mask_cut(text: str, token: str) -> str:
    """``text`` with ``token`` masked, also where only its beginning shows: a message that
    shows a value cut short may hold a token's first characters only."""
    start = token[: min(_SHORTEST_CUT, len(token))]
    pieces: list[str] = []
    position = 0
    while (found := text.find(start, position)) >= 0:
        end = found + len(start)
        while end < len(text) and end - found < len(token) and text[end] == token[end - found]:
            end += 1
        pieces += [text[position:found], REDACTED]
        position = end
    return "".join(pieces) + text[position:]


def token_masker(values: Iterable[object]) -> Callable[[str], str]:
    """A function masking, in any text, every token :func:`redact_manifests` would find
    in ``values`` (manifests, args lists), whole or cut short after its first eight
    characters (as an error message cuts a long value); for the builders' messages."""
    tokens: set[str] = set()
    for value in values:
        _collect(value, tokens)
    masker = Masker(tokens)

    def mask(text: str) -> str:
        text = masker.text(text)
        for token in tokens:
            text = mask_cut(text, token)
        return text

    return mask


def redact_manifests(manifests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Deep copies of manifests with every Execution API token masked in all of them.

    Tokens are found in:

    * every ``--json-string <json>`` (or ``--json-string=<json>``, or an abbreviation
      argparse accepts, such as ``--json-str``) in any list of strings — container and
      init container ``args`` and ``command`` of Pods, but also of pod templates inside
      other objects and of ``kind: List`` items: the value of every ``"token"`` key of
      that JSON, at any depth;
    * Secrets (``kind: Secret``): the same in each ``stringData`` value and each
      base64-decoded ``data`` value that is JSON, and the whole value of a key named
      ``token``.

    Then every string anywhere in every manifest (env values, annotations, keys …) has
    each token masked as :data:`REDACTED`, as written and as escaped inside JSON text;
    ``data`` values are decoded, masked and encoded again. A ``--json-string`` value that
    is not JSON is masked whole. JSON text keeps its layout unless masking would change
    more than the tokens; then it is written again, compactly. Tokens found in one
    manifest are masked in all of them, so pass a Secret and its Pod together.

    Not found: a token only inside a shell string (``sh -c "... --json-string ..."``)
    and not elsewhere; and a token that is part of the mask text itself cannot be
    hidden by it (Airflow's tokens are JWTs, which never are). An empty token is
    nothing to hide.
    """
    items = list(manifests)
    for manifest in items:
        if not isinstance(manifest, Mapping):
            raise TypeError(f"a manifest must be a mapping, got {type(manifest).__name__}")
    tokens: set[str] = set()
    for manifest in items:
        _collect(manifest, tokens)
    masker = Masker(tokens)
    return [masker.mapping(manifest) for manifest in items]


def redact_manifest(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of one manifest (a Pod, a Secret, a ``List`` …) with its tokens masked.

    See :func:`redact_manifests`, which masks the tokens of several manifests in all of
    them.
    """
    return redact_manifests([manifest])[0]
