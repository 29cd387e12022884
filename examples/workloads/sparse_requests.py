"""An inference service that receives few requests: a request arrives every 40 ms on average (exponential
gaps, waited for with a blocking queue), each answered by a 12-layer bf16 MLP of width 4096 at batch 32."""

import argparse
import queue
import random
import threading
import time

import torch

from gputriage import step

LAYERS, D, BATCH, MEAN_GAP_S = 12, 4096, 32, 0.04
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def main(seconds: float = 10.0) -> None:
    model = torch.nn.Sequential(*[m for _ in range(LAYERS) for m in (torch.nn.Linear(D, D), torch.nn.GELU())])
    model = model.to(DEV, torch.bfloat16).eval()
    requests: queue.Queue = queue.Queue()
    stop = threading.Event()

    def arrivals() -> None:
        while not stop.is_set():
            time.sleep(random.expovariate(1.0 / MEAN_GAP_S))
            requests.put(torch.randn(BATCH, D, dtype=torch.bfloat16))

    threading.Thread(target=arrivals, daemon=True).start()
    t0, n = time.perf_counter(), 0
    with torch.inference_mode():
        while time.perf_counter() - t0 < seconds:
            try:
                x = requests.get(timeout=1.0)
            except queue.Empty:
                continue
            model(x.to(DEV)).float().argmax(-1).cpu()
            n += 1
            step(samples=BATCH)
    stop.set()
    print(f"throughput: {n / (time.perf_counter() - t0):.1f} requests/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)
