"""Opening a trace file: plain JSON, or gzip read in pieces so that a cut or corrupt compressed file
gives up what came before the damage (and says why)."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import BinaryIO


class Salvaging:
    """A gzip stream read in pieces: where the compressed data is cut or corrupt, what came before is
    kept and the reason noted (the analysis of what was read is partial, and says so)."""

    PIECE = 1 << 20

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.problem: str | None = None
        self.read_bytes = 0

    def read(self, n: int = -1) -> bytes:
        out = bytearray()
        while self.problem is None and (n < 0 or len(out) < n):
            try:
                piece = self.fh.read(self.PIECE if n < 0 else min(self.PIECE, n - len(out)))
            except (EOFError, zlib.error, gzip.BadGzipFile, OSError) as exc:
                self.problem = f"{type(exc).__name__}: {exc}"
                break
            if not piece:
                break
            out += piece
        self.read_bytes += len(out)
        return bytes(out)

    def __enter__(self) -> Salvaging:
        return self

    def __exit__(self, *exc: object) -> None:
        self.fh.close()


def open_trace(path: Path) -> BinaryIO | Salvaging:
    with open(path, "rb") as fh:
        magic = fh.read(2)
    return Salvaging(gzip.open(path, "rb")) if magic == b"\x1f\x8b" else open(path, "rb")  # type: ignore[arg-type]
