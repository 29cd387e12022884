"""One streamed request to an OpenAI-compatible endpoint (aiohttp): when it was sent, when each chunk
of text came, what the server's `usage` counted, or what went wrong."""

from __future__ import annotations

import asyncio
import errno
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import msgspec

try:  # the `load` extra
    import aiohttp
except ImportError:  # pragma: no cover - said by the command
    aiohttp = None  # type: ignore[assignment]

_decode = msgspec.json.Decoder().decode
# connections this machine could not open (its own file or port limits), not ones the server refused
_CLIENT_SIDE = {errno.EMFILE, errno.ENFILE, errno.EADDRNOTAVAIL, errno.ENOBUFS}


@dataclass
class RequestRecord:
    """Times are `time.perf_counter()` seconds."""

    sent_s: float
    end_s: float = 0.0
    first_s: Optional[float] = None
    chunk_s: list[float] = field(default_factory=list)  # each chunk that carried text
    input_tokens: Optional[int] = None  # the server's usage
    output_tokens: Optional[int] = None
    error: Optional[str] = None  # http_<status>, timeout, connect, client_sockets, stream, empty
    long_prompt: bool = False
    text: list[str] = field(default_factory=list)  # the streamed text, kept only to count its tokens
    prompt: str = ""  # likewise
    tokens_from: str = "usage"  # of output_tokens: or "tokenizer" when the server's usage lacked them


def body(endpoint: str, model: str, prompt: str, max_tokens: int, ignore_eos: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "stream": True,
                           "stream_options": {"include_usage": True}}
    if endpoint.endswith("/chat/completions"):
        out["messages"] = [{"role": "user", "content": prompt}]
    else:
        out["prompt"] = prompt
    if ignore_eos:
        out["ignore_eos"] = True  # vLLM, SGLang: exactly max_tokens out
    return out


def _text(event: dict[str, Any]) -> str:
    for choice in event.get("choices") or ():
        text = choice.get("text") or (choice.get("delta") or {}).get("content")
        if text:
            return str(text)
    return ""


async def stream(session: aiohttp.ClientSession, url: str, payload: dict[str, Any], timeout_s: float,
                 long_prompt: bool = False, keep_text: bool = False) -> RequestRecord:
    rec = RequestRecord(sent_s=time.perf_counter(), long_prompt=long_prompt)
    rest = b""
    try:
        async with session.post(url, json=payload, timeout=aiohttp.ClientTimeout(total=timeout_s),
                                allow_redirects=False) as resp:
            if resp.status != 200:
                await resp.read()
                rec.error = f"http_{resp.status}"
                return rec
            async for chunk in resp.content.iter_any():
                now = time.perf_counter()
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        break
                    try:
                        event = _decode(data)
                    except msgspec.DecodeError:
                        rec.error = "stream"
                        continue
                    text = _text(event)
                    if text:
                        rec.chunk_s.append(now)
                        if rec.first_s is None:
                            rec.first_s = now
                        if keep_text:
                            rec.text.append(text)
                    usage = event.get("usage")
                    if usage:
                        rec.input_tokens = usage.get("prompt_tokens")
                        rec.output_tokens = usage.get("completion_tokens")
    except asyncio.TimeoutError:
        rec.error = "timeout"
    except aiohttp.ClientConnectorError as exc:
        os_error = getattr(exc, "os_error", None)
        rec.error = "client_sockets" if getattr(os_error, "errno", None) in _CLIENT_SIDE else "connect"
    except aiohttp.ClientError:
        rec.error = "stream"
    rec.end_s = time.perf_counter()
    if rec.error is None and rec.first_s is None:
        rec.error = "empty"
    return rec


def session(connections: int) -> aiohttp.ClientSession:
    """A session with as many connections as requests in flight (aiohttp's default caps them at 100). It goes
    to the URL it is given only: no proxy from the environment (trust_env off), no redirect followed."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=max(1, connections), force_close=False),
                                 timeout=aiohttp.ClientTimeout(total=None))


def get_json(url: str, timeout_s: float = 10.0) -> Any:
    """A small GET (the model list), with the standard library: it runs before the event loop."""
    import json

    with _opener().open(url, timeout=timeout_s) as r:
        return json.loads(r.read())


def get_text(url: str, timeout_s: float = 2.0) -> str:
    with _opener().open(url, timeout=timeout_s) as r:
        return str(r.read().decode("utf-8", "replace"))


def _opener() -> Any:
    """urllib going to the URL it is given only: no proxy from the environment, no redirect followed (a 3xx
    is an HTTPError)."""
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect())
