"""Text from outside gputriage (a snapshot or trace file, a server's answer, a node's name, a command kept in
the store) made safe to print: no control characters, and a bounded length.

A bug-report attachment can hold escape codes that would drive the reader's terminal (colours, a new window
title, a cleared screen, text written over) or one 60 MB field that would swell every page and table. Every
such string goes through `safe_text` where it is decoded or rendered; `safe_tree` does it for every string in
a decoded JSON value, keys included."""

from __future__ import annotations

import re
from typing import Any

#: What no printed string may hold: C0 controls and DEL, C1 controls (\x9b is a one-byte CSI), the Unicode
#: line and paragraph separators, the bidirectional overrides and isolates that reorder what is shown, and
#: lone surrogates (bytes that were not UTF-8, as Python keeps them from argv or a file name: written out,
#: \udc9b is the byte 0x9b again).
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
WHITESPACE = frozenset("\t\n\r\x0b\x0c\x85\u2028\u2029")
REPLACEMENT = "\ufffd"  # shown where a control character was, so that a reader sees the text was altered
ELLIPSIS = "…"

FIELD_CHARS = 1024  # a value read from a file: a GPU name, a path, a process's command line
NAME_CHARS = 256  # a host or node name, a fact's name, a model's name
KERNEL_CHARS = 4096  # a kernel's demangled C++ name with its templates can be long and still legitimate


def has_control(text: str) -> bool:
    """Whether `text` holds a character `safe_text` would replace."""
    return CONTROL.search(text) is not None


def safe_text(text: Any, limit: int = FIELD_CHARS, newline: str = " ") -> str:
    """`text` with each control character replaced (whitespace ones by a space, a newline by `newline`, others
    by U+FFFD) and cut to `limit` characters, an ellipsis marking the cut. `newline="\\n"` keeps line breaks."""
    if not isinstance(text, str):
        text = str(text)
    if len(text) > limit:
        text = text[: max(0, limit - 1)] + ELLIPSIS
    if CONTROL.search(text) is None:
        return text
    return CONTROL.sub(lambda m: _replacement(m.group(), newline), text.replace("\r\n", "\n"))


def _replacement(char: str, newline: str) -> str:
    if char == "\n":
        return newline
    return " " if char in WHITESPACE else REPLACEMENT


def utf8(text: str) -> str:
    """`text` as UTF-8 can hold it: bytes that were not UTF-8 (kept by Python as lone surrogates, in argv or a
    file name) become U+FFFD, so that the text can be written to JSON or a store."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace") if has_control(text) else text


def safe_tree(value: Any, limit: int = FIELD_CHARS, newline: str = " ") -> Any:
    """A decoded JSON value (dicts, lists, strings, numbers) with `safe_text` applied to every string in it,
    keys included; numbers, booleans and None as they are."""
    if isinstance(value, str):
        return safe_text(value, limit, newline)
    if isinstance(value, dict):
        return {
            safe_text(k, limit) if isinstance(k, str) else k: safe_tree(v, limit, newline) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [safe_tree(v, limit, newline) for v in value]
    return value
