"""A jitted JAX training step of a wide bf16 MLP (8 layers of 8192, batch 8192), its gradients and an SGD
update in one XLA program, the loss read back every 20 steps: the tensor cores stay busy, compute_bound."""

import argparse
import time

import jax
import jax.numpy as jnp

from gputriage import step

WIDTH, LAYERS, BATCH = 8192, 8, 8192


def loss_fn(params: list[jax.Array], x: jax.Array) -> jax.Array:
    for w in params:
        x = jax.nn.gelu(x @ w)
    return jnp.mean(x.astype(jnp.float32) ** 2)


@jax.jit
def train_step(params: list[jax.Array], x: jax.Array) -> tuple[list[jax.Array], jax.Array]:
    loss, grads = jax.value_and_grad(loss_fn)(params, x)
    return [w - 1e-3 * g for w, g in zip(params, grads)], loss


def main(seconds: float = 10.0) -> None:
    keys = jax.random.split(jax.random.PRNGKey(0), LAYERS + 1)
    params = [(jax.random.normal(k, (WIDTH, WIDTH)) / 90).astype(jnp.bfloat16) for k in keys[:-1]]
    x = jax.random.normal(keys[-1], (BATCH, WIDTH)).astype(jnp.bfloat16)
    params, loss = train_step(params, x)
    loss.block_until_ready()
    t0, steps = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        params, loss = train_step(params, x)
        steps += 1
        if steps % 20 == 0:
            float(loss)
        step(samples=BATCH)
    loss.block_until_ready()
    dt = time.perf_counter() - t0
    print(f"throughput: {6 * BATCH * WIDTH * WIDTH * LAYERS * steps / dt / 1e12:.0f} TFLOP/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    main(parser.parse_args().seconds)
