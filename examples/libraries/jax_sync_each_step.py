"""A jitted JAX step (an fp32 4096x4096 matrix product and a reduction, a few milliseconds of GPU work) whose
loss is read back with `float()` every step, after which the host spends about as long updating NumPy
statistics of it before dispatching the next step. The GPU drains its queue at each read and idles while the
host works after it: sync_bound."""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from gputriage import step

N = 4096


@jax.jit
def train_step(w: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    y = jnp.tanh(x @ w)
    loss = jnp.mean(y * y)
    return w - 1e-4 * (x.T @ y) / N, loss


def main(seconds: float = 10.0) -> None:
    key = jax.random.PRNGKey(0)
    w = jax.random.normal(key, (N, N), dtype=jnp.float32) / 64
    x = jax.random.normal(jax.random.PRNGKey(1), (N, N), dtype=jnp.float32)
    w, loss = train_step(w, x)
    history = np.zeros(4096)
    t0, steps = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        w, loss = train_step(w, x)
        value = float(loss)  # waits for the GPU
        history = np.roll(history, 1)
        history[0] = value
        for _ in range(20):  # statistics of the loss curve on the host
            np.percentile(history, [5, 50, 95])
        steps += 1
        step()
    dt = time.perf_counter() - t0
    print(f"throughput: {steps / dt:.1f} steps/s (loss {value:.4f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)
