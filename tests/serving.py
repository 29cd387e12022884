"""A real OpenAI-compatible server for the load tests: `transformers serve` (continuous batching, on the CPU)
with a tiny Llama made and saved here (random weights, a word-level tokenizer: nothing is downloaded)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def make_model(folder: Path) -> Path:
    """The benchmarks' model builder at its smallest: 2 layers of 64, a word-level tokenizer."""
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "serving_model.py"
    subprocess.run(
        [
            sys.executable,
            str(script),
            str(folder),
            "--hidden",
            "64",
            "--layers",
            "2",
            "--heads",
            "4",
            "--kv-heads",
            "4",
            "--vocab",
            "256",
            "--context",
            "2048",
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`transformers serve MODEL` on 127.0.0.1, until `stop()`."""

    # a KV cache of fixed size (4,096 tokens): sized by default from the memory free at start, one server
    # takes half the machine's RAM and two test workers' servers end in the OOM killer
    CACHE = ("--cb-num-blocks", "256", "--cb-block-size", "16")

    def __init__(self, model: Path, *extra: str, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        script = Path(sys.executable).parent / "transformers"
        self.log = log.open("w")
        self.proc = subprocess.Popen(
            [
                str(script),
                "serve",
                str(model),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--device",
                "cpu",
                "--continuous-batching",
                *(extra or self.CACHE),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"transformers serve did not answer in 180 s: {log.read_text()[-2000:]}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


class StreamServer:
    """benchmarks/stream_server.py on 127.0.0.1 (a paced server that keeps what it sent), as a context."""

    def __init__(self, *flags: str) -> None:
        script = Path(__file__).resolve().parent.parent / "benchmarks" / "stream_server.py"
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        # its log (a traceback each time a client hangs up mid-stream) is not the test's
        self.proc = subprocess.Popen(
            [sys.executable, str(script), "--port", str(port), *flags],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def __enter__(self) -> StreamServer:
        for _ in range(100):
            try:
                with urllib.request.urlopen(self.url + "/v1/models", timeout=2):
                    return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("benchmarks/stream_server.py did not answer in 10 s")

    def sent(self) -> dict:
        with urllib.request.urlopen(self.url + "/sent", timeout=5) as r:
            return dict(__import__("json").loads(r.read()))

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


class HostileServer:
    """A local TCP server that answers every connection with the same bytes, whatever was asked (not HTTP,
    HTTP with a broken stream...), then closes it — or, with `stall`, holds it open and says nothing. A context."""

    def __init__(self, answer: bytes = b"", stall: bool = False) -> None:
        import socketserver
        import threading

        answer_bytes, stall_conn = answer, stall
        self.stop = threading.Event()
        stop = self.stop

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                self.request.settimeout(5)
                try:
                    self.request.recv(65536)  # the request (its head and a small body), not parsed
                    if stall_conn:
                        stop.wait(30)
                        return
                    self.request.sendall(answer_bytes)
                except OSError:
                    pass

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HostileServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def http_answer(
    body: bytes, status: str = "200 OK", content_type: str = "text/event-stream", length: bool = False
) -> bytes:
    """An HTTP/1.1 answer with this body, closed after (with `length`, a Content-Length header)."""
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nConnection: close\r\n"
    if length:
        head += f"Content-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body
