"""The exporter's HTTP server (the standard library's, one thread per request): JSON at the exporter's own paths
(`/stacks`, `/regimes`), the metrics at every other path, as dcgm-exporter serves them."""

from __future__ import annotations

import socket
import threading
from socketserver import ThreadingMixIn
from typing import Any, Callable, Iterable, Mapping
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from gputriage.exporter.exposition import Application

Route = Callable[[], bytes]  # a JSON body, made when asked


class _Threading(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a scrape in flight never holds the process at exit


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Nothing: a scrape every few seconds would fill the terminal."""


def routed(metrics: Application, routes: Mapping[str, Route]) -> Application:
    """`routes` by path (GET only), the metrics at every other path."""

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        route = routes.get(environ.get("PATH_INFO", ""))
        if route is None:
            return metrics(environ, start_response)
        if environ.get("REQUEST_METHOD") != "GET":
            start_response("405 Method Not Allowed", [("Allow", "GET")])
            return [b""]
        body = route()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    return application


def serve(listen: str, port: int, application: Application) -> WSGIServer:
    """`application` served at `listen`:`port` (an IPv6 address too) on a thread of its own, from now; OSError
    when the address cannot be had."""
    family, _, _, _, address = socket.getaddrinfo(listen, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    bound = type("_Bound", (_Threading,), {"address_family": family})
    server: WSGIServer = make_server(str(address[0]), port, application, bound, handler_class=_Quiet)
    threading.Thread(target=server.serve_forever, name="gputriage-exporter-http", daemon=True).start()
    return server
