"""How messages and text outputs show values (issue 11, items 2, 8 and 10)."""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.display import (
    REDACTED,
    SHOWN_LENGTH,
    mask_token_shaped,
    one_line,
    path_part,
    printable,
    shown,
)
from tests.support.output_checks import clean_lines
from tests.support.strategies import OUTPUT_FORGERS, wild_text

JWT = (
    "eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiJ0aS0xIiwiZXhwIjoxNzY0NjMwMDAwfQ"
    ".c2lnbmF0dXJlLW5vdC1yZWFs_-"
)  # made up: the shape of an Execution API token
base64url = st.text(string.ascii_letters + string.digits + "-_", min_size=4, max_size=40)
jwts = st.builds(lambda h, p, s: f"eyJ{h}.{p}.{s}", base64url, base64url, base64url)
# Opaque tokens (RFC 6750's b64token characters) long enough never to occur by chance.
opaque_tokens = st.text(string.ascii_letters + string.digits + "-._~+/=", min_size=12)


@pytest.mark.parametrize("forger", OUTPUT_FORGERS)
def test_printable_escapes_what_forges_lines_as_a_string_literal_does(forger: str) -> None:
    text = f"ok {forger} ok"
    escaped = printable(text)
    assert clean_lines(escaped) == [escaped]
    assert repr(forger)[1:-1] in escaped


def test_printable_keeps_ordinary_unicode() -> None:
    assert printable("tâche été 任务 🚀 a'b\"c\\d") == "tâche été 任务 🚀 a'b\"c\\d"


@given(wild_text)
def test_printable_is_one_clean_line_and_idempotent(text: str) -> None:
    escaped = printable(text)
    assert clean_lines(escaped + "\n") == [escaped]
    assert printable(escaped) == escaped


@given(st.text(st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp", "Cf"))))
def test_printable_leaves_printable_text_alone(text: str) -> None:
    assert printable(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"Bearer {JWT}", f"Bearer {REDACTED}"),
        (f"jwt {JWT}, then", f"jwt {REDACTED}, then"),
        # Glued to another, or cut short: nothing of either is left.
        (f"{JWT}-{JWT}", REDACTED),
        (f"'{JWT[:50]}'", f"'{REDACTED}'"),
        (f"pod.{JWT}.x", REDACTED),
        ('{"token": "opaque-1234", "x": 1}', f'{{"token": "{REDACTED}", "x": 1}}'),
        ('{\\"token\\":\\"opaque-1234\\"}', f'{{\\"token\\":\\"{REDACTED}\\"}}'),
        ("{'token': 'opaque-1234'}", f"{{'token': '{REDACTED}'}}"),
        ("TOKEN=opaque-1234 next", f"TOKEN={REDACTED} next"),
        ("metadata.labels['token']: 'opaque-1234'", f"metadata.labels['token']: '{REDACTED}'"),
        ("authorization: bearer opaque-1234", f"authorization: bearer {REDACTED}"),
    ],
)
def test_token_shaped_content_is_masked(text: str, expected: str) -> None:
    assert mask_token_shaped(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "tokens=5",
        "a.b.c",
        "eyJ alone",
        "the token is gone",
        "metadata.labels['dag_id']: 'x'",
        "monkeyJumper.task",  # "eyJ" inside a word, one dot: no JWT
    ],
)
def test_text_that_is_no_token_is_kept(text: str) -> None:
    assert mask_token_shaped(text) == text


@given(wild_text, jwts, wild_text)
def test_a_jwt_never_survives_masking_wherever_it_sits(before: str, jwt: str, after: str) -> None:
    assert jwt not in mask_token_shaped(before + jwt + after)
    assert jwt not in shown(before + jwt + after)


@given(
    opaque_tokens,
    st.dictionaries(st.sampled_from(["ti", "dag_rel_path", "log_path"]), st.integers()),
    st.integers(0, 2),
)
def test_a_workload_token_field_never_survives_masking(
    token: str, others: dict[str, int], escapes: int
) -> None:
    text = json.dumps({"token": token, **others})
    for _ in range(escapes):  # the workload JSON inside a manifest's JSON, inside a message
        text = json.dumps(text)
    assert token not in mask_token_shaped(text)
    assert token not in shown({"args": ["--json-string", text]}, limit=1000)


def test_shown_quotes_masks_and_cuts() -> None:
    assert shown("abc") == "'abc'"
    assert shown("a\nb\ud800") == "'a\\nb\\ud800'"
    assert shown(f"x {JWT}") == f"'x {REDACTED}'"
    assert shown(f"x{JWT}") == f"'{REDACTED}'"
    long = "v" * 300_000
    assert shown(long) == f"{'v' * SHOWN_LENGTH!r}... (300000 characters)"
    assert shown(long, limit=10) == "'vvvvvvvvvv'... (300000 characters)"
    assert shown(12) == "12"
    assert shown(None) == "None"
    assert shown(["x" * 200]) == repr(["x" * 200])[:SHOWN_LENGTH] + "..."


def test_shown_never_raises_on_values_whose_repr_does() -> None:
    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    nested: list[object] = []
    for _ in range(100_000):
        nested = [nested]
    assert shown(Hostile()) == "<Hostile>"
    assert shown(10**5000) == "an integer of about 5001 digits"  # past str()'s digit limit
    assert shown(nested) == "<list>"  # RecursionError


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | wild_text,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(wild_text, inner, max_size=3),
        max_leaves=10,
    ),
    st.integers(1, 200),
)
def test_shown_is_one_clean_bounded_line_for_any_value(value: object, limit: int) -> None:
    text = shown(value, limit=limit)
    assert clean_lines(text + "\n") == [text]
    # A string shows at most limit characters, each escaped to at most 6 (\ud800),
    # plus its quotes and the count; anything else is cut to limit plus "...".
    assert len(text) <= 6 * limit + 40


@given(wild_text)
def test_one_line_is_clean(text: str) -> None:
    line = one_line(text)
    assert clean_lines(line + "\n") == [line]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("containers", ".containers"),
        ("x-y_z", ".x-y_z"),
        (3, "[3]"),
        ("a b", "['a b']"),
        ("a\nb", "['a\\nb']"),
        ("app.kubernetes.io/name", "['app.kubernetes.io/name']"),
        (True, "[True]"),
        ("k" * 100, f"[{shown('k' * 100)}]"),
    ],
)
def test_path_part(key: object, expected: str) -> None:
    assert path_part(key) == expected


@given(value=st.integers(-(10**20), 10**20), limit=st.integers(1, 100))
def test_shown_ints_as_repr_then_cut(value: int, limit: int) -> None:
    # shown's short-int path against the rule it shortcuts: repr, masked, escaped, cut.
    text = repr(value)
    expected = text if len(text) <= limit else f"{text[:limit]}..."
    assert shown(value, limit=limit) == expected
