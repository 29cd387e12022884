"""A loop fed by a slow queue that builds lists in Python on its main thread, no GPU: a producer thread puts an
item every 150 ms (a paced source), the main thread takes each and builds 400 lists of 500 floats from it (about
12 ms on a free CPU core, several times that on a loaded one). The stack sampler should name both lines of this
file: the queue wait (input_wait, most of the time) and the list building (host_compute), and the producer's sleep
on its own thread."""

import argparse
import queue
import random
import threading
import time

PERIOD_S = 0.15


def producer(q: "queue.Queue[float]", stop: threading.Event) -> None:
    while not stop.is_set():
        time.sleep(PERIOD_S)  # the paced source
        q.put(random.random())


def main(seconds: float) -> None:
    q: queue.Queue[float] = queue.Queue()
    stop = threading.Event()
    threading.Thread(target=producer, args=(q, stop), daemon=True).start()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        item = q.get()  # waits for the next item
        rows = [[item * i for i in range(500)] for _ in range(400)]  # builds lists on the main thread
        n += len(rows)
    stop.set()
    print(f"rows: {n}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=6.0)
    main(parser.parse_args().seconds)
