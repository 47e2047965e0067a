"""How calls are retried while the server is unavailable."""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["RetryPolicy", "NO_RETRY"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with full jitter.

    ``attempts`` counts the first try: 1 means never retry. The n-th retry waits a
    random time up to ``min(max_delay, initial_delay * multiplier ** (n - 1))`` seconds.
    Only errors of class 08, 40, 53 and 57 (and lost connections) are retried, and only
    where a second attempt cannot write twice; a refusal (class 22) never is.
    """

    attempts: int = 5
    initial_delay: float = 0.1
    max_delay: float = 2.0
    multiplier: float = 2.0
    jitter: bool = True

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.initial_delay < 0 or self.max_delay < 0 or self.multiplier < 1:
            raise ValueError("delays must be >= 0 and the multiplier >= 1")

    def delay(self, retry: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        ceiling = min(self.max_delay, self.initial_delay * self.multiplier ** max(0, retry - 1))
        if not self.jitter:
            return ceiling
        return (rng or random).uniform(0, ceiling)


NO_RETRY = RetryPolicy(attempts=1)
