"""Token-bucket rate limits per API key (docs/sandbox.md, Keys, limits): O(1) per request."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field


class Bucket:
    __slots__ = ("capacity", "stamp", "tokens")

    def __init__(self, capacity: float, now: float) -> None:
        self.capacity = capacity
        self.tokens = capacity
        self.stamp = now

    def refill(self, now: float) -> None:
        self.tokens = self.level(now)
        self.stamp = now

    def level(self, now: float) -> float:
        """The tokens the bucket holds at ``now`` (it is not changed)."""
        return min(self.capacity, self.tokens + (now - self.stamp) * self.capacity)


@dataclass(slots=True)
class Verdict:
    allowed: bool
    limit: int
    remaining: int
    reset: int  # Unix seconds (wall clock) at which the bucket is full again
    retry_after: int
    bucket: Bucket | None = None  # the bucket the figures describe (None: limits are off)


@dataclass
class RateLimiter:
    """Buckets ``all`` (every /v1 call), ``create`` (POST /v1/payments), ``refunds`` (/v1/refunds).

    Each refills at its limit per second (burst = one second's worth). Rates run on the wall
    clock, not the sandbox clock: they limit real traffic. ``clock`` (monotonic seconds, for the
    buckets) and ``wall`` (Unix seconds, for ``X-RateLimit-Reset``) can be replaced, e.g. by a
    test that moves time itself.
    """

    enabled: bool = True
    all: int = 100
    create: int = 50
    refunds: int = 30
    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    _buckets: dict[tuple[str, str], Bucket] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._start = (self.enabled, self.all, self.create, self.refunds)

    def reset(self) -> None:
        """Back to the start-up settings, buckets full."""
        self.enabled, self.all, self.create, self.refunds = self._start
        self._buckets.clear()

    def configure(
        self,
        *,
        enabled: bool | None = None,
        all: int | None = None,
        create: int | None = None,
        refunds: int | None = None,
    ) -> None:
        if enabled is not None:
            self.enabled = enabled
        for name, value in (("all", all), ("create", create), ("refunds", refunds)):
            if value is not None:
                setattr(self, name, value)
        self._buckets.clear()

    def settings(self) -> dict[str, object]:
        return {
            "enabled": self.enabled,
            "all": self.all,
            "create": self.create,
            "refunds": self.refunds,
        }

    def check(self, key: str, method: str, path: str) -> Verdict:
        """Take one token from each bucket the request counts against (all or none)."""
        now = self.clock()
        kinds = ["all"]
        if path.startswith("/v1/refunds"):
            kinds.append("refunds")
        elif method == "POST" and path.rstrip("/") == "/v1/payments":
            kinds.append("create")
        if not self.enabled:
            limit = getattr(self, kinds[-1])
            return Verdict(True, limit, limit, int(self.wall()), 0)
        buckets = []
        for kind in kinds:
            bucket = self._buckets.get((key, kind))
            if bucket is None:
                bucket = self._buckets[(key, kind)] = Bucket(getattr(self, kind), now)
            else:
                bucket.refill(now)
            buckets.append(bucket)
        allowed = all(b.tokens >= 1 for b in buckets)
        if allowed:
            for b in buckets:
                b.tokens -= 1
        # report the bucket with the fewest requests left (the specific one on a tie)
        tight = min(reversed(buckets), key=lambda b: b.tokens)
        retry = (
            0 if allowed else max(1, math.ceil(max((1 - b.tokens) / b.capacity for b in buckets)))
        )
        return self.current(Verdict(allowed, int(tight.capacity), 0, 0, retry, tight))

    def current(self, verdict: Verdict) -> Verdict:
        """``verdict`` with ``remaining`` and ``reset`` as of now: the headers are computed when
        the response starts, so time spent handling the request (a slow store, an injected
        latency, an idempotent duplicate waiting for the first) does not leave them stale."""
        bucket = verdict.bucket
        if bucket is None:
            verdict.reset = int(self.wall())
            return verdict
        level = bucket.level(self.clock())
        verdict.remaining = max(0, int(level))
        verdict.reset = math.ceil(self.wall() + (bucket.capacity - level) / bucket.capacity)
        return verdict
