"""Steps that take the dataclass pytrees of another module: a field is traced unless the class,
wherever it is declared, marks it static."""
import jax

from . import Schedule, state


@jax.jit
def warm_step(x, schedule: Schedule):
    for _ in range(schedule.warmup):  # declared static in the class's module: a Python int
        x = x * 2.0
    if schedule.rate > 0.5:  # expect: JAX201
        return x * schedule.rate
    return x


@jax.jit
def windowed_step(x, window: state.Window):
    if window.warmup > 1:  # inherited, static
        x = x + 1.0
    if window.width > 0:  # expect: JAX201
        return x * window.width
    return x
