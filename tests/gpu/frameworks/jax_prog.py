# JAX: a jitted function (XLA's fused kernels, launched by XLA's runtime),
# run four times.  Exact integer-valued results.
import os
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax
import jax.numpy as jnp


@jax.jit
def step(v):
    return (v * 2 + 1) % 1000


v = jnp.arange(1 << 20, dtype=jnp.float32) % 11
for _ in range(4):
    v = step(v)
print("jax: checksum %.1f" % float(jnp.sum(v)))
