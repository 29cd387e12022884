"""A fast OpenAI-compatible streaming server for measuring load generators, not models: each completion
streams `max_tokens` chunks of `--words-per-chunk` words, the first after `--ttft-ms`, then one every
`--itl-ms`, with its `usage` at the end (unless `--no-usage`). It keeps what it actually sent (the time of
each chunk's write): GET /sent returns the TTFT and inter-chunk gaps as the server emitted them, the truth a
generator's figures are held to.

    python benchmarks/stream_server.py --port 8300 --ttft-ms 20 --itl-ms 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from aiohttp import web


def app(ttft_s: float, itl_s: float, usage: bool = True, words_per_chunk: int = 1) -> web.Application:
    sent_ttft: list[float] = []
    sent_gaps: list[float] = []

    async def models(_req: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "stream", "object": "model"}]})

    async def completions(req: web.Request) -> web.StreamResponse:
        t0 = time.perf_counter()
        body = await req.json()
        n = int(body.get("max_tokens") or 16)
        words = len(str(body.get("prompt", "")).split())
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(req)
        start = t0 + ttft_s
        last = None
        for i in range(n):
            # paced against the request's own clock: a late write does not push the later ones back
            await asyncio.sleep(max(0.0, start + i * itl_s - time.perf_counter()))
            text = " the" * words_per_chunk
            chunk = {"id": "c", "object": "text_completion", "choices": [{"index": 0, "text": text}]}
            await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            now = time.perf_counter()
            if last is None:
                sent_ttft.append(now - t0)
            else:
                sent_gaps.append(now - last)
            last = now
        if usage:
            counts = {
                "prompt_tokens": words,
                "completion_tokens": n * words_per_chunk,
                "total_tokens": words + n * words_per_chunk,
            }
            await resp.write(b"data: " + json.dumps({"choices": [], "usage": counts}).encode() + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def sent(req: web.Request) -> web.Response:
        out = {
            "requests": len(sent_ttft),
            "ttft_p50_ms": 1000 * statistics.median(sent_ttft) if sent_ttft else None,
            "itl_p50_ms": 1000 * statistics.median(sent_gaps) if sent_gaps else None,
            "itl_mean_ms": 1000 * statistics.fmean(sent_gaps) if sent_gaps else None,
        }
        if req.query.get("reset"):
            sent_ttft.clear()
            sent_gaps.clear()
        return web.json_response(out)

    a = web.Application()
    a.router.add_get("/v1/models", models)
    a.router.add_post("/v1/completions", completions)
    a.router.add_get("/sent", sent)
    return a


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=8300)
    ap.add_argument("--ttft-ms", type=float, default=20.0)
    ap.add_argument("--itl-ms", type=float, default=5.0)
    ap.add_argument("--no-usage", action="store_true", help="send no usage (as some servers do)")
    ap.add_argument("--words-per-chunk", type=int, default=1)
    args = ap.parse_args()
    web.run_app(
        app(args.ttft_ms / 1000, args.itl_ms / 1000, not args.no_usage, args.words_per_chunk),
        host="127.0.0.1",
        port=args.port,
        print=None,
        access_log=None,
    )


if __name__ == "__main__":
    main()
