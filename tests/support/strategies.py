"""Text strategies for the tests of what this project prints (the CLI, the display helpers).

The strategies an executor's tests need (keys, pods, templates) are public, in
:mod:`k8s_workloads.testing.strategies`."""

from __future__ import annotations

import string

from hypothesis import strategies as st

# Anything at all, for hostile input.
hostile_text = st.text(max_size=300)
# What forges or rewrites lines of text output (newlines, ANSI and OSC escapes, C0 and C1
# controls, Unicode line separators, a bidi override) and lone surrogates, which JSON and
# YAML spell as "\ud800" and UTF-8 cannot write: what a text output must never print raw.
OUTPUT_FORGERS = (
    "\n", "\r", "\r\n", "\x00", "\x07", "\x08", "\t", "\x0b", "\x0c", "\x1b[2J",
    "\x1b[31m", "\x1b]0;title\x07", "\x7f", "\x85", "\x9b", "\u2028", "\u2029", "\u202e",
    "\ud800", "\udbff", "\udc00", "\udfff",
)  # fmt: skip
# Any code point, surrogates included (st.text leaves them out), with those mixed in often.
wild_text = st.lists(
    st.characters(exclude_categories=())
    | st.sampled_from(OUTPUT_FORGERS)
    | st.sampled_from(string.ascii_letters + string.digits + "-_."),
    max_size=40,
).map("".join)
label_alphabet_text = st.text(alphabet=string.ascii_letters + string.digits + "-_.", max_size=80)
