"""Opening a trace file: plain JSON, or gzip inflated here piece by piece so that a cut or corrupt compressed
file gives up everything that came before the damage (and says why)."""

from __future__ import annotations

import zlib
from typing import BinaryIO

from gputriage.model.files import FileName

GZIP_MAGIC = b"\x1f\x8b"


class Salvaging:
    """A gzip file inflated in small pieces: where the compressed data is cut or corrupt, every byte inflated
    before the damage is kept and the reason noted (the analysis of what was read is partial, and says so).
    Members written one after another (`cat a.gz b.gz`) read as one stream, as gzip reads them."""

    PIECE = 1 << 16  # compressed bytes fed at a time
    SALVAGE_PART = 256  # where a piece is corrupt, fed again this many bytes at a time: what is lost is small

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.problem: str | None = None
        self.read_bytes = 0
        self._inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        self._pending = bytearray()  # inflated, not yet read
        self._next = b""  # compressed bytes of the next member, read while looking past the last one's end
        self._done = False

    def read(self, n: int = -1) -> bytes:
        while not self._done and (n < 0 or len(self._pending) < n):
            self._step()
        take = len(self._pending) if n < 0 else min(n, len(self._pending))
        out = bytes(self._pending[:take])
        del self._pending[:take]
        self.read_bytes += len(out)
        return out

    def _step(self) -> None:
        """Inflate one more piece, or note why no more can be."""
        data, self._next = self._next or self.fh.read(self.PIECE), b""
        if not data:
            self._stop("EOFError: Compressed file ended before the end-of-stream marker was reached")
            return
        before = self._inflate.copy()
        try:
            self._pending += self._inflate.decompress(data)
        except zlib.error:
            self._inflate = before
            self._salvage(data)
            return
        if self._inflate.eof:
            self._next_member(self._inflate.unused_data)

    def _salvage(self, data: bytes) -> None:
        """The piece where the damage is, fed again in small parts to keep what came before the damage."""
        for at in range(0, len(data), self.SALVAGE_PART):
            try:
                self._pending += self._inflate.decompress(data[at : at + self.SALVAGE_PART])
            except zlib.error as exc:
                self._stop(f"zlib.error: {exc}")
                return
            if self._inflate.eof:
                self._next_member(self._inflate.unused_data + data[at + self.SALVAGE_PART :])
                return

    def _next_member(self, rest: bytes) -> None:
        """After a member's end: the next member, zero padding (skipped, as gzip does), or the end."""
        while True:
            rest = rest.lstrip(b"\0")
            if len(rest) >= 2:
                break
            more = self.fh.read(self.PIECE)
            if not more:
                break
            rest += more
        if not rest:
            self._done = True
        elif rest[:2] != GZIP_MAGIC:
            self._stop("BadGzipFile: what follows the compressed data is not gzip")
        else:
            self._inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            self._next = rest

    def _stop(self, problem: str) -> None:
        self.problem = problem
        self._done = True

    def close(self) -> None:
        self.fh.close()

    def __enter__(self) -> Salvaging:
        return self

    def __exit__(self, *exc: object) -> None:
        self.fh.close()


def is_gzip(path: FileName) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def open_trace(path: FileName) -> BinaryIO | Salvaging:
    """The file to read a trace from: inflated as it is read when gzip, else as it is."""
    fh = open(path, "rb")
    if fh.read(2) == GZIP_MAGIC:
        fh.seek(0)
        return Salvaging(fh)
    fh.seek(0)
    return fh


def read_salvaged(path: FileName, limit: int = -1) -> tuple[bytes, str | None]:
    """The file's bytes (inflated when gzip; `limit` of them at most, -1: all) and the problem that stopped
    the reading early, if any."""
    with open_trace(path) as fh:
        data = fh.read(limit)
        return data, fh.problem if isinstance(fh, Salvaging) else None
