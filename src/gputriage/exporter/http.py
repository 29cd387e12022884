"""The exporter's HTTP server, prometheus-client's own (one thread per request): JSON at the exporter's own paths
(`/stacks`, `/regimes`), the metrics (prometheus-client's application) at every other path, as it serves them
alone."""

from __future__ import annotations

import socket
import threading
from typing import Any, Callable, Iterable, Mapping
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client.exposition import ThreadingWSGIServer

Application = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Route = Callable[[], bytes]  # a JSON body, made when asked


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
    bound = type("_Bound", (ThreadingWSGIServer,), {"address_family": family})
    server: WSGIServer = make_server(str(address[0]), port, application, bound, handler_class=_Quiet)
    threading.Thread(target=server.serve_forever, name="gputriage-exporter-http", daemon=True).start()
    return server
