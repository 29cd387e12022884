"""A JAX loop of small operations run eagerly (no `jax.jit`): 40 ops a step on a vector of 4,096 floats, each
dispatched by JAX's Python one at a time to a kernel of a few microseconds; the step ends with
`block_until_ready()`. The host dispatches slower than the GPU runs: launch_bound."""

import argparse
import time

import jax
import jax.numpy as jnp

from gputriage import step

N, OPS = 4096, 40


def main(seconds: float = 10.0) -> None:
    x = jax.random.normal(jax.random.PRNGKey(0), (N,), dtype=jnp.float32)
    x.block_until_ready()
    t0, steps = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(OPS // 4):
            x = jnp.sin(x)
            x = x * 1.0001
            x = x + 0.5
            x = jnp.tanh(x)
        x.block_until_ready()
        steps += 1
        step()
    dt = time.perf_counter() - t0
    print(f"throughput: {steps / dt:.1f} steps/s on {jax.devices()[0].platform}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)
