"""The run's settings: a frozen dataclass whose defaults are the values the program runs with."""
import dataclasses


@dataclasses.dataclass(frozen=True)
class RunSettings:
    rollout_steps: int = 150
    warmup_steps: int = 4


SETTINGS = RunSettings()
