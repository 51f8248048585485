"""A small linear-regression training script with the mistakes people make when they start with JAX.

`jaxlint check examples/training.py` reports:

- `import jax.numpy as np`, which every reader takes for NumPy (JAX601);
- one key drawn from twice, so the bias starts from the same number as the first weight (JAX101);
- `jax.jit` inside a function that is already jitted: it adds nothing (JAX503);
- a learning rate read from a global inside `jax.jit`: its value is baked in at the first trace,
  so the decay in `fit` never reaches the compiled step (JAX302);
- `print` and a list append inside `jax.jit`: both run once, while JAX traces the function, and
  see tracers instead of losses (JAX301, JAX303);
- `jax.jit` of a lambda made on every call of `predict`, which runs once per batch: every call
  compiles again (JAX502);
- `jax.host_id`, deprecated, and `jax.tree_map`, removed from JAX (JAX602);
- a benchmark that reads the clock before the step has finished: JAX dispatches work
  asynchronously, so it measures the dispatch, not the step (JAX504);
- weights donated to a jitted call (`donate_argnums=0`) and printed after it: the call deleted
  them (JAX506).

`clean.py` has the same script written the JAX way.
"""
import time

import jax
import jax.numpy as np

learning_rate = 0.1
eval_losses = []


def init_params(key: jax.Array, n_features: int) -> tuple[jax.Array, jax.Array]:
    w = jax.random.normal(key, (n_features,))
    b = jax.random.normal(key, ())
    return w, b


def loss(w: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    pred = np.dot(x, w) + b
    return np.mean((pred - y) ** 2)


@jax.jit
def train_step(w: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array):
    dw, db = jax.jit(jax.grad(loss, argnums=(0, 1)))(w, b, x, y)
    return w - learning_rate * dw, b - learning_rate * db


@jax.jit
def eval_step(w: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    value = loss(w, b, x, y)
    print("eval loss:", value)
    eval_losses.append(value)
    return value


def predict(w: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    return jax.jit(lambda inputs: np.dot(inputs, w) + b)(x)


def fit(w, b, batches, epochs=5):
    global learning_rate
    for epoch in range(epochs):
        for x, y in batches:
            w, b = train_step(w, b, x, y)
        learning_rate = learning_rate * 0.5
        if jax.host_id() == 0:
            norms = jax.tree_map(np.linalg.norm, (w, b))
            print(f"epoch {epoch}: |w| = {norms[0]:.3f}, |b| = {norms[1]:.3f}")
    return w, b


if __name__ == "__main__":
    data_key, init_key = jax.random.split(jax.random.key(0))
    x = jax.random.normal(data_key, (256, 3))
    y = np.dot(x, np.array([1.0, -2.0, 0.5])) + 0.3
    batches = [(x[i:i + 32], y[i:i + 32]) for i in range(0, 256, 32)]
    w, b = fit(*init_params(init_key, 3), batches)
    print("final loss:", eval_step(w, b, x, y))
    print("first prediction of each batch:", [predict(w, b, inputs[:1]) for inputs, _ in batches])

    t0 = time.perf_counter()
    w, b = train_step(w, b, x[:32], y[:32])
    print(f"one training step: {time.perf_counter() - t0:.6f}s")

    shrink = jax.jit(lambda weights: weights * 0.5, donate_argnums=0)
    halved = shrink(w)
    print("weights before and after halving:", w, halved)
