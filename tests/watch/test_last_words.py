"""What a failed container said (:mod:`k8s_workloads.watch.last_words`): the last few
meaningful lines of its termination message, on one bounded line, masked before cut."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from k8s_workloads.display import REDACTED, has_unprintable
from k8s_workloads.watch.last_words import LAST_WORDS_CHARS, LAST_WORDS_LINES, last_words

TRACEBACK = """\
{"event": "Executing workload", "level": "info"}
Traceback (most recent call last):
  File "/opt/airflow/dags/alerts.py", line 4, in notify
    alerts.notfy(context)
    ^^^^^^^^^^^^
AttributeError: module 'alerts' has no attribute 'notfy'

"""


def _jwt(claims: dict[str, object]) -> str:
    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS512', 'typ': 'JWT'})}.{part(claims)}.c2lnbmF0dXJl"


def test_a_traceback_ends_in_its_cause_on_one_line() -> None:
    assert last_words(TRACEBACK) == (
        "Executing workload | "
        "Traceback (most recent call last): | "
        'File "/opt/airflow/dags/alerts.py", line 4, in notify | '
        "alerts.notfy(context) | "
        "AttributeError: module 'alerts' has no attribute 'notfy'"
    )


def test_json_log_lines_are_their_message_error_and_exceptions() -> None:
    # What Airflow's Task SDK writes in a callback pod (structlog's JSON), trimmed.
    frames = [{"filename": "/opt/airflow/dags/alerts.py", "lineno": 14, "name": "fail"}]
    lines = [
        {
            "level": "error",
            "event": "Callback execution failed",
            "callback_kwargs": {"context": {"dag_run": {"dag_id": "etl"}}},
            "error_msg": "Callback execution failed: RuntimeError: this alert fails",
            "exception": [{"exc_type": "RuntimeError", "exc_value": "this alert fails"}],
        },
        {"level": "info", "event": "Workload finished", "exit_code": 1},
        {
            "level": "critical",
            "event": "Unhandled exception",
            "exception": [
                {"exc_type": "RuntimeError", "exc_value": "exited with code 1", "frames": frames}
            ],
        },
        {"timestamp": "2026-12-07T23:14:51Z"},
        ["not", "an", "object"],
    ]
    message = "".join(json.dumps(line) + "\n" for line in lines) + '{"cut": "sh\n'
    assert last_words(message) == (
        "Workload finished | "
        "Unhandled exception: RuntimeError: exited with code 1 | "
        '{"timestamp": "2026-12-07T23:14:51Z"} | '  # no message: the line as it is
        '["not", "an", "object"] | '
        '{"cut": "sh'
    )
    # The first line's message, its error and its exception, each once.
    assert last_words(json.dumps(lines[0])) == (
        "Callback execution failed: RuntimeError: this alert fails"
    )
    text_traceback = {"event": "boom", "exception": "Traceback ...\n  ...\nValueError: x\n"}
    assert last_words(json.dumps(text_traceback)) == "boom: ValueError: x"


def test_a_secret_spelt_with_json_escapes_is_masked_once_decoded() -> None:
    escaped = "".join(f"\\u{ord(char):04x}" for char in "hunter2-secret")
    words = last_words(
        '{"event": "connecting", "error": "' + escaped + '"}', secrets=["hunter2-secret"]
    )
    assert words == "connecting: ***REDACTED***"


def test_only_the_last_lines_are_kept() -> None:
    message = "".join(f"line {n}\n" for n in range(20))
    words = last_words(message)
    assert words == " | ".join(f"line {n}" for n in range(15, 20))
    assert words.count(" | ") == LAST_WORDS_LINES - 1


def test_nothing_meaningful_is_none() -> None:
    for message in (None, "", "\n  \n", "^^^^\n ~~~ \n", 3, b"bytes"):
        assert last_words(message) is None


def test_colour_codes_go_and_controls_are_escaped() -> None:
    words = last_words("\x1b[31mERROR\x1b[0m boom\x07\r\nnext\u202e\n")
    assert words == "ERROR boom\\x07 | next\\u202e"


def test_a_long_message_keeps_its_end() -> None:
    words = last_words("x" * 5000 + " the cause")
    assert words is not None
    assert len(words) == LAST_WORDS_CHARS
    assert words.startswith("...")
    assert words.endswith("x the cause")


def test_the_kubelets_cut_first_line_is_dropped() -> None:
    # The log's tail is its last 2048 bytes: the first line may be the end of a line
    # (here of a secret printed whole, which the cut left unrecognisable).
    message = "-----END PRIVATE KEY-----\n" + "y" * 2010 + "\nValueError: bad\n"
    assert len(message.encode()) >= 2048
    words = last_words(message)
    assert words is not None
    assert "PRIVATE" not in words
    assert words.endswith("| ValueError: bad")


def test_tokens_are_masked_by_their_shape_and_known_secrets_line_by_line() -> None:
    token = _jwt({"sub": "019e9fc6", "exp": 1})
    secret = "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEF\n-----END KEY-----"  # noqa: S105
    message = f"token: {token}\nworkload {token}\n{secret}\nMIIEvQIBADANBgkq...\ndone\n"
    words = last_words(message, secrets=[secret])
    assert words is not None
    assert token not in words
    assert "MIIEvQIBADANBgkq" not in words
    assert "BEGIN KEY" not in words
    assert words.count(REDACTED) >= 4
    assert words.endswith("| done")


_SECRET_LINE = st.text(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", min_size=8, max_size=64
)
_NOISE_LINE = st.text(st.characters(exclude_characters="\n\r"), max_size=200)


@given(
    noise=st.lists(_NOISE_LINE, max_size=100),
    secret_lines=st.lists(_SECRET_LINE, min_size=1, max_size=6),
    after=st.integers(min_value=0, max_value=4),
)
def test_no_line_of_a_secret_appears_and_the_words_are_bounded(
    noise: list[str], secret_lines: list[str], after: int
) -> None:
    # The secret printed whole, among the last lines (where the words are taken from).
    secret = "\n".join(secret_lines)
    where = max(0, len(noise) - after)
    message = "\n".join([*noise[:where], secret, *noise[where:]]) + "\n"
    words = last_words(message, secrets=[secret])
    assert words is not None  # the secret's lines are words too (masked)
    assert len(words) <= LAST_WORDS_CHARS
    assert not has_unprintable(words)  # one line, nothing a terminal would act on
    for line in secret_lines:
        assert line not in words


@given(st.text(max_size=3000))
def test_any_text_gives_one_bounded_line_or_none(message: str) -> None:
    words = last_words(message)
    assert words is None or (0 < len(words) <= LAST_WORDS_CHARS and not has_unprintable(words))


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("cannot connect to postgresql://etl:S3cretPw@db:5432/prod", "S3cretPw"),
        ("API_KEY=abcd1234secret", "abcd1234secret"),
        ("password: hunter2", "hunter2"),
        ('{"event": "boom", "client_secret": "zzz-top"}', "zzz-top"),
        ("aws_secret_access_key = AKIAxyz/abc", "AKIAxyz/abc"),
    ],
)
def test_a_credential_a_log_line_shows_in_the_clear_is_masked(line: str, secret: str) -> None:
    # Review finding: the log's tail (FallbackToLogsOnError) is the reported failure text,
    # stored in the callback's output and logged by the scheduler; only token shapes and
    # secrets the caller knew were masked.
    words = last_words(f"{line}\nRuntimeError: the alert failed")
    assert words is not None
    assert secret not in words
    assert REDACTED in words or line.startswith("{")  # a JSON line shows its event only
    assert words.endswith("RuntimeError: the alert failed")
