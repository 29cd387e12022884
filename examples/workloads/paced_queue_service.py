"""A model served from a queue fed by a paced source: a producer thread puts one request every 25 ms (as requests
arrive at a service), the main thread takes each from the queue and answers it with a bf16 MLP (4 layers of 4096,
batch 16). Neither the CPU nor the GPU is the limit: the input rate is (run.input_rate_bound), and the GPU has most
of its time free waiting for requests: input_starved."""

import argparse
import queue
import threading
import time

import torch

from gputriage import step

LAYERS, WIDTH, BATCH, PERIOD_S = 4, 4096, 16, 0.025


def producer(q: "queue.Queue[torch.Tensor]", stop: threading.Event) -> None:
    request = torch.randn(BATCH, WIDTH)
    next_t = time.perf_counter()
    while not stop.is_set():
        next_t += PERIOD_S
        time.sleep(max(0.0, next_t - time.perf_counter()))
        q.put(request)


def main(seconds: float = 10.0) -> None:
    model = torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS)]).cuda().bfloat16().eval()
    q: queue.Queue[torch.Tensor] = queue.Queue()
    stop = threading.Event()
    threading.Thread(target=producer, args=(q, stop), daemon=True).start()
    t0, n = time.perf_counter(), 0
    with torch.inference_mode():
        while time.perf_counter() - t0 < seconds:
            request = q.get()
            out = model(request.cuda(non_blocking=True).bfloat16())
            out.float().cpu()
            n += 1
            step(samples=BATCH)
    stop.set()
    print(f"throughput: {n / (time.perf_counter() - t0):.1f} requests/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)
