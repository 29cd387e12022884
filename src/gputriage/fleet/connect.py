"""Is there a Ray cluster at host:port? Asked before Ray is: `ray.init` on a port where nothing answers, or
where something that is not Ray's GCS listens, retries for minutes and prints its own log lines meanwhile.

A GCS is a gRPC server: gRPC speaks HTTP/2, and an HTTP/2 server answers a client's connection preface with
a SETTINGS frame (RFC 9113, 3.4). A port that says nothing within the timeout, closes, or answers anything
else (an HTTP/1 server, SSH's banner, Redis) is not one."""

from __future__ import annotations

import socket
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EMPTY_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # length 0, type SETTINGS, no flags, stream 0
FRAME_HEADER_BYTES = 9
SETTINGS_TYPE = 0x04
CONNECT_TIMEOUT_S = 10.0


class FleetError(Exception):
    """No Ray cluster to work with at the address given, or Ray missing."""


def split_address(address: str) -> tuple[str, int] | None:
    """(host, port) of a host:port address; None for what Ray resolves itself ("auto", a ray:// URL)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "://" in address:
        return None
    return host.strip("[]"), int(port)


def probe(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Return when `address` (host:port) answers as a gRPC server does; raise FleetError, in one line, when
    it does not within `timeout_s`."""
    target = split_address(address)
    if target is None:
        return
    deadline = time.monotonic() + timeout_s
    try:
        conn = socket.create_connection(target, timeout=timeout_s)
    except TimeoutError:
        raise FleetError(f"cannot join the Ray cluster at {address}: no answer within {timeout_s:g} s") from None
    except OSError as exc:
        raise FleetError(f"cannot join the Ray cluster at {address}: {exc.strerror or exc}") from None
    try:
        with conn:
            conn.sendall(PREFACE + EMPTY_SETTINGS)
            header = b""
            while len(header) < FRAME_HEADER_BYTES:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                conn.settimeout(left)
                chunk = conn.recv(FRAME_HEADER_BYTES - len(header))
                if not chunk:
                    break
                header += chunk
    except TimeoutError:
        raise FleetError(
            f"cannot join the Ray cluster at {address}: something listens there but did not answer "
            f"as Ray's GCS within {timeout_s:g} s (is it the head's GCS port, 6379 by default?)"
        ) from None
    except OSError as exc:  # reset by the peer: not a gRPC server either
        raise FleetError(
            f"cannot join the Ray cluster at {address}: what listens there is not Ray's GCS ({exc.strerror or exc})"
        ) from None
    if len(header) < FRAME_HEADER_BYTES or header[3] != SETTINGS_TYPE:
        raise FleetError(
            f"cannot join the Ray cluster at {address}: what listens there is not Ray's GCS (it "
            "does not speak gRPC; is it the head's GCS port, 6379 by default?)"
        )
