"""The server a load is sent to: its base URL, whether anything listens there, the model it serves, its
/metrics, and its process when it runs on this machine."""

from __future__ import annotations

import re
import socket
from typing import Optional
from urllib.parse import urlparse

from gputriage.backends import openai_stream as http
from gputriage.backends.server_process import listening_pid
from gputriage.serving.errors import LoadInputError, LoadOptionError

CONNECT_TIMEOUT_S = 10.0


def base_url(url: str) -> str:
    """`http://host:port` (a trailing /v1 dropped); anything but an http(s) URL with a host is a LoadOptionError."""
    u = url.strip().rstrip("/")
    parsed = urlparse(u)
    try:
        port_ok = parsed.port is None or 0 < parsed.port < 65536
    except ValueError:
        port_ok = False
    if parsed.scheme not in ("http", "https") or not parsed.hostname or not port_ok:
        raise LoadOptionError(f"{url!r}: give the server's URL, e.g. http://localhost:8000")
    return re.sub(r"/v1$", "", u)


def _host_port(base: str) -> tuple[str, int]:
    u = urlparse(base)
    return u.hostname or "", u.port or (443 if u.scheme == "https" else 80)


def reachable(base: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """A TCP connection to the server opens, else a LoadInputError that says why (nothing listens, no such
    host, no answer)."""
    host, port = _host_port(base)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return
    except ConnectionRefusedError:
        raise LoadInputError(
            f"{base}: nothing listens there (connection refused): is the server started, and is this its port?"
        ) from None
    except socket.gaierror as exc:
        raise LoadInputError(f"{base}: no such host ({exc.strerror or exc})") from None
    except TimeoutError:
        raise LoadInputError(f"{base}: no answer to a connection within {timeout_s:g} s") from None
    except OSError as exc:
        raise LoadInputError(f"{base}: cannot connect ({exc.strerror or exc})") from None


def served_model(base: str, timeout_s: float = CONNECT_TIMEOUT_S) -> str:
    """The first model /v1/models lists; a server that answers something else is a LoadInputError."""
    try:
        data = http.get_json(base + "/v1/models", timeout_s)
    except http.BadAnswer as exc:
        raise LoadInputError(
            f"{base}/v1/models: {exc}: is it an OpenAI-compatible server? (or give the model with --model)"
        ) from None
    except OSError as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise LoadInputError(
            f"{base}/v1/models: cannot read the served model ({reason}); give it with --model"
        ) from None
    listed = data.get("data") if isinstance(data, dict) else None
    first = listed[0] if isinstance(listed, list) and listed else None
    model = first.get("id") if isinstance(first, dict) else None
    if not isinstance(model, str) or not model:
        raise LoadInputError(f"{base}/v1/models: lists no model; give it with --model")
    return model


def local_pid(base: str) -> Optional[int]:
    """The process listening on the endpoint's port, when the server runs on this machine."""
    host, port = _host_port(base)
    if host not in ("localhost", "127.0.0.1", "::1", "0.0.0.0", socket.gethostname()):
        return None
    return listening_pid(port)


def metrics_url(base: str) -> tuple[Optional[str], Optional[str]]:
    """The server's Prometheus endpoint when it has one (vLLM, SGLang, TGI serve /metrics), or a note why not."""
    try:
        text = http.get_text(base + "/metrics")
    except (OSError, ValueError):
        return None, f"{base}/metrics: none (the server's KV cache and queue are not read)"
    if "# TYPE" in text or "# HELP" in text:
        return base + "/metrics", None
    return None, f"{base}/metrics: not Prometheus metrics (the server's KV cache and queue are not read)"
