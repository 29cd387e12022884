"""One streamed request to an OpenAI-compatible endpoint (aiohttp): when it was sent, when each chunk
of text came, what the server's `usage` counted, or what went wrong. Whatever the server answers — not
HTTP, events that are not JSON objects, a stream cut or stalled — is a request's error, never an exception."""

from __future__ import annotations

import asyncio
import errno
import http.client
import json
import time
import urllib.request
from typing import TYPE_CHECKING, Any, Optional

import msgspec

from gputriage.model.load import RequestRecord

if TYPE_CHECKING:
    import aiohttp

_decode = msgspec.json.Decoder().decode
# connections this machine could not open (its own file or port limits), not ones the server refused
_CLIENT_SIDE = {errno.EMFILE, errno.ENFILE, errno.EADDRNOTAVAIL, errno.ENOBUFS}
MAX_LINE_BYTES = 1 << 20  # an event line longer than this is a broken stream, not one to keep buffering
MAX_GET_BYTES = 16 << 20  # the model list, /metrics


class BadAnswer(ValueError):
    """The server answered something that is not what was asked for (not HTTP, not JSON, too long)."""


def body(endpoint: str, model: str, prompt: str, max_tokens: int, ignore_eos: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if endpoint.endswith("/chat/completions"):
        out["messages"] = [{"role": "user", "content": prompt}]
    else:
        out["prompt"] = prompt
    if ignore_eos:
        out["ignore_eos"] = True  # vLLM, SGLang: exactly max_tokens out
    return out


def _count(value: Any) -> Optional[int]:
    """A token count as the server gave it: a non-negative integer, else nothing."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def event_fields(event: Any) -> Optional[tuple[str, Optional[int], Optional[int], bool]]:
    """An SSE event's text, prompt and completion tokens, and whether it carried usage; None when the event is
    not an object (a JSON array, a number: a broken stream)."""
    if not isinstance(event, dict):
        return None
    text = ""
    choices = event.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        piece = choice.get("text") or (delta.get("content") if isinstance(delta, dict) else None)
        if isinstance(piece, str) and piece:
            text = piece
            break
    usage = event.get("usage")
    if isinstance(usage, dict) and usage:
        return text, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")), True
    return text, None, None, False


def _line(rec: RequestRecord, data: bytes, now: float, keep_text: bool) -> bool:
    """One `data:` payload into the record; True at `[DONE]`."""
    if data == b"[DONE]":
        return True
    try:
        event = _decode(data)
    except (msgspec.DecodeError, RecursionError):
        event = None
    fields = event_fields(event)
    if fields is None:
        rec.error = "stream"
        return False
    if isinstance(event, dict) and event.get("error"):  # the server's own error, said inside the stream
        rec.error = "server_error"
    text, prompt_tokens, completion_tokens, has_usage = fields
    if text:
        rec.chunk_s.append(now)
        if rec.first_s is None:
            rec.first_s = now
        if keep_text:
            rec.text.append(text)
    if has_usage:
        rec.input_tokens, rec.output_tokens = prompt_tokens, completion_tokens
    return False


async def stream(
    session: aiohttp.ClientSession,
    url: str,
    payload: dict[str, Any],
    timeout_s: float,
    long_prompt: bool = False,
    keep_text: bool = False,
) -> RequestRecord:
    import aiohttp  # the `load` extra, imported by the load only

    rec = RequestRecord(sent_s=time.perf_counter(), long_prompt=long_prompt)
    rest = b""
    try:
        async with session.post(
            url, json=payload, timeout=aiohttp.ClientTimeout(total=timeout_s), allow_redirects=False
        ) as resp:
            if resp.status != 200:
                await resp.content.read(MAX_LINE_BYTES)
                rec.error = f"http_{resp.status}"
                return _ended(rec)
            done = False
            async for chunk in resp.content.iter_any():
                now = time.perf_counter()
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                if len(rest) > MAX_LINE_BYTES:
                    rec.error = "stream"
                    break
                for line in lines:
                    if line.startswith(b"data:") and _line(rec, line[5:].strip(), now, keep_text):
                        done = True
                        break
                if done:
                    break
            if not done and rest.strip():  # the stream ended inside an event: it was cut (or its last line unended)
                if rest.startswith(b"data:"):
                    _line(rec, rest[5:].strip(), time.perf_counter(), keep_text)
                else:
                    rec.error = "stream"
    except asyncio.TimeoutError:
        rec.error = "timeout"
    except aiohttp.ClientConnectorError as exc:
        os_error = getattr(exc, "os_error", None)
        rec.error = "client_sockets" if getattr(os_error, "errno", None) in _CLIENT_SIDE else "connect"
    except (aiohttp.ClientError, ValueError, OSError):  # not HTTP, a broken chunked body, a reset
        rec.error = "stream"
    return _ended(rec)


def _ended(rec: RequestRecord) -> RequestRecord:
    rec.end_s = time.perf_counter()
    if rec.error is None and rec.first_s is None:
        rec.error = "empty"
    return rec


def session(connections: int) -> aiohttp.ClientSession:
    """A session with as many connections as requests in flight (aiohttp's default caps them at 100). It goes
    to the URL it is given only: no proxy from the environment (trust_env off), no redirect followed."""
    import aiohttp

    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=max(1, connections), force_close=False),
        timeout=aiohttp.ClientTimeout(total=None),
    )


def _get(url: str, timeout_s: float) -> bytes:
    """A small GET with the standard library (it runs before the event loop or on a thread of its own): the
    body, at most MAX_GET_BYTES; an answer that is not HTTP is a BadAnswer, a refused connection an OSError."""
    try:
        with _opener().open(url, timeout=timeout_s) as r:
            data = bytes(r.read(MAX_GET_BYTES + 1))
    except http.client.HTTPException as exc:  # not HTTP, or a body cut short
        raise BadAnswer(f"not an HTTP answer ({type(exc).__name__})") from None
    if len(data) > MAX_GET_BYTES:
        raise BadAnswer(f"an answer over {MAX_GET_BYTES >> 20} MiB")
    return data


def get_json(url: str, timeout_s: float = 10.0) -> Any:
    """The model list: JSON, else a BadAnswer."""
    try:
        return json.loads(_get(url, timeout_s))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise BadAnswer("not JSON") from None


def get_text(url: str, timeout_s: float = 2.0) -> str:
    return _get(url, timeout_s).decode("utf-8", "replace")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _opener() -> urllib.request.OpenerDirector:
    """urllib going to the URL it is given only: no proxy from the environment, no redirect followed (a 3xx
    is an HTTPError)."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
