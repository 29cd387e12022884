"""The prompts a load sends: synthetic ones of about a number of tokens (the server's own count of the warm-up's
sets tokens per word), a share of long ones, unique prefixes; or a JSONL file's, in turn."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Optional

from gputriage.model.load import RequestRecord
from gputriage.serving.errors import LoadInputError

# common English words: about one token each for most tokenizers; the warm-up measures it on the server
WORDS = tuple(
    (  # noqa: SIM905 - a paragraph reads better than 200 quoted words
        "the of and to in is was for on are with as his they be at one have this from or had by word but what "
        "some we can out other were all there when up use your how said an each she which do their time if "
        "will way about many then them write would like so these her long make thing see him two has look "
        "more day could go come did number sound no most people my over know water than call first who may "
        "down side been now find any new work part take get place made live where after back little only "
        "round man year came show every good me give our under name very through just form sentence great "
        "think say help low line differ turn cause much mean before move right boy old too same tell does set "
        "three want air well also play small end put home read hand port large spell add even land here must "
        "big high such follow act why ask men change went light kind off need house picture try us again "
        "animal point mother world near build self earth"
    ).split()
)
MAX_PROMPT_TOKENS = 1 << 20  # a synthetic prompt longer than any model's context is a typo
MAX_PROMPTS_FILE_BYTES = 1 << 30

Prompt = tuple[str, int, bool]  # text, max tokens, a long prompt of a mix


class Prompts:
    """Synthetic prompts of about `input_tokens` (normal spread), unique prefixes (no prefix-cache hits), a
    share of long ones; or the prompts of a JSONL file (`{"prompt": ..., "max_tokens": ...}`), in turn."""

    def __init__(
        self,
        input_tokens: int,
        output_tokens: int,
        spread: float = 0.0,
        long_share: float = 0.0,
        long_factor: float = 8.0,
        file: Optional[Path] = None,
        seed: int = 0,
    ) -> None:
        self.input_tokens, self.output_tokens, self.spread = input_tokens, output_tokens, spread
        self.long_share, self.long_factor = long_share, long_factor
        self.tokens_per_word = 1.0
        self.words_sent = 0  # words in the prompts made before `calibrate` (the warm-up's)
        self.calibrated = False
        self.rng = random.Random(seed)
        self.rows: list[tuple[str, int]] = []
        self.next_row = 0
        if file is not None:
            self.rows = read_prompts(file, output_tokens)

    def __call__(self, long_factor: Optional[float] = None) -> Prompt:
        if self.rows:
            text, out = self.rows[self.next_row % len(self.rows)]
            self.next_row += 1
            return text, out, False
        long = self.rng.random() < self.long_share
        tokens = max(1.0, self.rng.gauss(self.input_tokens, self.spread * self.input_tokens))
        if long:
            tokens *= self.long_factor if long_factor is None else long_factor
        words = max(1, min(MAX_PROMPT_TOKENS, round(tokens / self.tokens_per_word)))
        if not self.calibrated:
            self.words_sent += words
        return " ".join(self.rng.choice(WORDS) for _ in range(words)), self.output_tokens, long

    def control(self) -> Prompt:
        """A prompt of the same mix with the long ones at the normal length (still flagged long)."""
        return self(long_factor=1.0)

    def calibrate(self, records: list[RequestRecord]) -> None:
        """The server's count of the prompts made so far (every one of them answered with its usage) sets
        tokens per word for the ones after."""
        counted = [r.input_tokens for r in records]
        if not self.rows and self.words_sent and counted and all(counted):
            self.tokens_per_word = sum(c for c in counted if c) / self.words_sent
        self.calibrated = True


def read_prompts(file: Path, output_tokens: int) -> list[tuple[str, int]]:
    """A JSONL file's prompts and their max_tokens (`output_tokens` where a line gives none); anything else is a
    LoadInputError naming the file and line."""
    try:
        if file.stat().st_size > MAX_PROMPTS_FILE_BYTES:
            raise LoadInputError(f"{file}: over {MAX_PROMPTS_FILE_BYTES >> 30} GiB, not a prompts file")
        lines = file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise LoadInputError(f"{file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise LoadInputError(f'{file}: not UTF-8 text (a JSONL file of {{"prompt": ...}} lines)') from None
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            row = None
        prompt = row.get("prompt") if isinstance(row, dict) else None
        if not isinstance(prompt, str):
            raise LoadInputError(f'{file}:{n}: not a JSON object with a "prompt" string')
        out = row.get("max_tokens", output_tokens) if isinstance(row, dict) else output_tokens
        if isinstance(out, bool) or not isinstance(out, int) or out < 1:
            raise LoadInputError(f'{file}:{n}: "max_tokens" is a positive integer, not {str(out)[:40]!r}')
        rows.append((prompt, out))
    if not rows:
        raise LoadInputError(f"{file}: no prompts")
    return rows
