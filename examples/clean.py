"""The other examples written the JAX way: `jaxlint check examples/clean.py` reports nothing.

Each function is the working version of the function with the same name in `training.py`,
`pipeline.py`, `sampler.py` or `tracing.py`; the comment in it names the rule the other one
breaks. `regression.ipynb` is fixed the way `fit` and `init_params` are. Run it
(`python examples/clean.py`) to see it train, preprocess, sample and simulate.
"""
import functools
import logging
import time

import jax
import jax.numpy as jnp  # JAX601: `jnp`, never `np`
from jax import lax

logger = logging.getLogger(__name__)

NUM_CLASSES = 10

# -- training.py ---------------------------------------------------------------------------------


def init_params(key: jax.Array, n_features: int) -> tuple[jax.Array, jax.Array]:
    # JAX101: one subkey per draw.
    w_key, b_key = jax.random.split(key)
    return jax.random.normal(w_key, (n_features,)), jax.random.normal(b_key, ())


def loss(w: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    pred = jnp.dot(x, w) + b
    return jnp.mean((pred - y) ** 2)


@jax.jit
def train_step(w: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array, learning_rate: float):
    # JAX503: `jax.grad` called directly; JAX302: the learning rate is an argument.
    dw, db = jax.grad(loss, argnums=(0, 1))(w, b, x, y)
    return w - learning_rate * dw, b - learning_rate * db


@jax.jit
def eval_step(w: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    # JAX301, JAX303: `jax.debug.print` prints on every call; the caller collects the losses.
    value = loss(w, b, x, y)
    jax.debug.print("eval loss: {}", value)
    return value


@jax.jit
def predict(w: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    # JAX502: jitted once, at module level, with everything it uses as arguments.
    return jnp.dot(x, w) + b


def fit(w, b, batches, epochs=5, learning_rate=0.1):
    # JAX302: the decayed rate is passed to `train_step`.
    # JAX602: `jax.process_index` and `jax.tree.map` replace `jax.host_id` and `jax.tree_map`.
    for epoch in range(epochs):
        for x, y in batches:
            w, b = train_step(w, b, x, y, learning_rate)
        learning_rate = learning_rate * 0.5
        if jax.process_index() == 0:
            norms = jax.tree.map(jnp.linalg.norm, (w, b))
            print(f"epoch {epoch}: |w| = {norms[0]:.3f}, |b| = {norms[1]:.3f}")
    return w, b


# -- pipeline.py ---------------------------------------------------------------------------------


def token_ids(tokens: list[int]) -> jax.Array:
    # JAX402: int32 is what JAX gives unless x64 is enabled, so ask for it.
    return jnp.asarray(tokens, dtype=jnp.int32)


def one_hot(label: int, num_classes: int = NUM_CLASSES) -> jax.Array:
    # JAX401: `.at[...].set(...)` returns an updated copy (`jax.nn.one_hot` does the same).
    return jnp.zeros(num_classes).at[label].set(1.0)


def masked(batch: jax.Array, padding: int) -> jax.Array:
    # JAX404: the updated mask is kept.
    mask = jnp.ones(batch.shape[0]).at[batch.shape[0] - padding:].set(0.0)
    return batch * mask[:, None]


def to_grayscale(images: jax.Array) -> jax.Array:
    # JAX403: the weights are an array.
    return jnp.dot(images, jnp.array([0.299, 0.587, 0.114]))


def shuffled_epochs(key: jax.Array, data: jax.Array, epochs: int) -> list[jax.Array]:
    # JAX103: one key made once, split for every epoch.
    shuffled = []
    for _ in range(epochs):
        key, subkey = jax.random.split(key)
        shuffled.append(data[jax.random.permutation(subkey, data.shape[0])])
    return shuffled


@jax.jit
def augment(key: jax.Array, images: jax.Array) -> jax.Array:
    # JAX102: a key argument and `jax.random`: new noise on every call.
    return images + 0.1 * jax.random.normal(key, images.shape)


@jax.jit
def standardise(batch: jax.Array) -> jax.Array:
    # JAX304: `jax.debug.callback` logs the value on every call.
    mean = batch.mean()
    jax.debug.callback(lambda m: logger.info("batch mean before standardising: %s", m), mean)
    return (batch - mean) / (batch.std() + 1e-6)


@functools.partial(jax.jit, static_argnums=1)
def resized(images: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    return jax.image.resize(images, shape, "linear")


def thumbnails(images: jax.Array) -> jax.Array:
    # JAX505: a static shape is a tuple, which hashes.
    return resized(images, (images.shape[0], 16, 16))


class Normaliser:
    def __init__(self, mean: float, std: float):
        self.mean = mean
        self.std = std
        # JAX507: the bound method is jitted; it closes over `self`, which is not traced.
        self._normalised = jax.jit(self._normalise)

    def _normalise(self, batch: jax.Array) -> jax.Array:
        return (batch - self.mean) / self.std

    def __call__(self, batch: jax.Array) -> jax.Array:
        return self._normalised(batch)


# -- sampler.py ----------------------------------------------------------------------------------


def log_density(x: jax.Array) -> jax.Array:
    return jnp.sum(jnp.logaddexp(-0.5 * (x - 2.0) ** 2, -0.5 * (x + 2.0) ** 2))


@jax.jit
def metropolis_step(key: jax.Array, x: jax.Array) -> jax.Array:
    # JAX101: one subkey for the proposal, another for the acceptance test.
    # JAX201 (`accept` in sampler.py): `jnp.where` chooses under `jit`, a Python `if` cannot.
    proposal_key, accept_key = jax.random.split(key)
    proposal = x + 0.5 * jax.random.normal(proposal_key, x.shape)
    log_u = jnp.log(jax.random.uniform(accept_key))
    return jnp.where(log_u < log_density(proposal) - log_density(x), proposal, x)


def run_chain(key: jax.Array, x: jax.Array, num_steps: int = 100) -> jax.Array:
    # JAX101: a fresh key for every step.
    def step(x, step_key):
        x = metropolis_step(step_key, x)
        return x, x

    _, samples = lax.scan(step, x, jax.random.split(key, num_steps))
    return samples


def langevin_step(key: jax.Array, x: jax.Array, step_size: float = 0.01) -> jax.Array:
    noise = jax.random.normal(key, x.shape)
    return x + step_size * jax.grad(log_density)(x) + jnp.sqrt(2.0 * step_size) * noise


def langevin_chains(key: jax.Array, xs: jax.Array) -> jax.Array:
    # JAX104: one key per chain, mapped like the chains.
    keys = jax.random.split(key, xs.shape[0])
    return jax.vmap(langevin_step)(keys, xs)


@jax.jit
def langevin_chain(key: jax.Array, x: jax.Array) -> jax.Array:
    # JAX205: `lax.fori_loop` compiles the step once, whatever the number of steps.
    return lax.fori_loop(0, 500, lambda i, x: langevin_step(jax.random.fold_in(key, i), x), x)


# -- tracing.py ----------------------------------------------------------------------------------


@jax.jit
def safe_log(x: jax.Array) -> jax.Array:
    # JAX201: `jnp.where` chooses element by element; the inner `where` keeps the unused log finite.
    positive = x > 0
    return jnp.where(positive, jnp.log(jnp.where(positive, x, 1.0)), 0.0)


@functools.partial(jax.jit, static_argnames="n")
def power(x: jax.Array, n: int) -> jax.Array:
    # JAX202: `n` is static, so `range(n)` sees a Python int (one compile per value of `n`).
    result = jnp.ones_like(x)
    for _ in range(n):
        result = result * x
    return result


@jax.jit
def normalise(x: jax.Array) -> jax.Array:
    # JAX203: the scale stays an array.
    return x / jnp.max(jnp.abs(x))


@jax.jit
def positive_mean(x: jax.Array) -> jax.Array:
    # JAX204: a masked mean has a fixed shape.
    return jnp.mean(x, where=x > 0)


@jax.jit
def simulate(x: jax.Array, dt: float = 0.01) -> jax.Array:
    # JAX205: `lax.fori_loop` instead of a 1000-step Python loop.
    return lax.fori_loop(0, 1000, lambda _, x: x + dt * jnp.sin(x), x)



@jax.jit
def clipped(x: jax.Array) -> jax.Array:
    # JAX206: under jit `x` is a tracer, never a NumPy array: clip whatever arrives.
    return jnp.clip(x, -1.0, 1.0) * 2


@jax.jit
def log_step(x: jax.Array) -> jax.Array:
    # JAX305: `jax.debug.print` formats the value when the compiled code runs.
    norm = jnp.linalg.norm(x)
    jax.debug.print("norm {norm}", norm=norm)
    return x / norm


def radial_energy(positions: jax.Array) -> jax.Array:
    # JAX405: the inner `where` keeps the masked `sqrt` away from 0, where its derivative is infinite.
    squared = jnp.sum(positions ** 2, axis=-1)
    safe_squared = jnp.where(squared > 0, squared, 1.0)
    return jnp.sum(jnp.where(squared > 0, jnp.sqrt(safe_squared), 0.0))


radial_forces = jax.grad(radial_energy)


if __name__ == "__main__":
    logging.basicConfig(format="%(name)s: %(message)s")
    logger.setLevel(logging.INFO)
    keys = jax.random.split(jax.random.key(0), 8)

    x = jax.random.normal(keys[0], (256, 3))
    y = jnp.dot(x, jnp.array([1.0, -2.0, 0.5])) + 0.3
    batches = [(x[i:i + 32], y[i:i + 32]) for i in range(0, 256, 32)]
    w, b = fit(*init_params(keys[1], 3), batches)
    eval_losses = [eval_step(w, b, bx, by) for bx, by in batches]
    print("mean eval loss:", jnp.mean(jnp.stack(eval_losses)))
    print("predictions:", predict(w, b, x[:3]), "targets:", y[:3])

    # JAX504: compile first, then wait for the result before reading the clock again.
    jax.block_until_ready(train_step(w, b, x, y, 0.01))
    start = time.perf_counter()
    jax.block_until_ready(train_step(w, b, x, y, 0.01))
    print(f"one training step: {time.perf_counter() - start:.6f}s")

    # JAX506: the donated weights are printed before the call and rebound to its result.
    shrink = jax.jit(lambda weights: weights * 0.5, donate_argnums=0)
    print("weights before halving:", w)
    w = shrink(w)
    print("after:", w)

    images = jax.random.uniform(keys[2], (4, 8, 8, 3))
    gray = standardise(augment(keys[3], to_grayscale(images)))
    print("token ids:", token_ids([3, 1, 4]), "one-hot:", one_hot(3), "grayscale:", gray.shape)
    epochs = shuffled_epochs(keys[4], images, 2)
    print("first pixels, epoch by epoch:", [epoch[:, 0, 0, 0] for epoch in epochs])

    print("metropolis mean:", run_chain(keys[5], jnp.zeros(2)).mean(axis=0))
    print("langevin:", langevin_chains(keys[6], jnp.zeros(4)), langevin_chain(keys[7], jnp.zeros(2)))

    values = jnp.array([-1.0, 2.0, 4.0])
    print("safe_log:", safe_log(values), "power:", power(values, 3), "normalise:", normalise(values))
    print("positive_mean:", positive_mean(values), "simulate:", simulate(values))
    print("clipped:", clipped(values), "log_step:", log_step(values))
