"""A local tokenizer (`tokenizer.json`, the `tokenizers` package) to count tokens a server's `usage` does not
give. Read from disk only: nothing is downloaded."""

from __future__ import annotations

from pathlib import Path
from typing import Callable


class TokenizerError(Exception):
    """One line: why the tokenizer cannot be used."""


def token_counter(path: str | Path) -> Callable[[str], int]:
    """Tokens in a text, by the tokenizer in `path` (a tokenizer.json, or a folder holding one); special
    tokens (a BOS the server adds) are not counted."""
    p = Path(path)
    file = p / "tokenizer.json" if p.is_dir() else p
    if not file.is_file():
        raise TokenizerError(f"{path}: no tokenizer.json there (give a local file or the model's folder)")
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise TokenizerError("counting tokens needs the tokenizers package: pip install tokenizers") from None
    try:
        tok = Tokenizer.from_file(str(file))
    except Exception as exc:  # the Rust side raises its own exception type
        raise TokenizerError(f"{file}: not a tokenizer ({str(exc).splitlines()[0][:120]})") from None
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)
