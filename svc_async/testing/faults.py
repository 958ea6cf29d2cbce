"""Seeded, deterministic fault injection.

``FaultConfig`` says how often each fault happens (a share between 0 and 1 of the
requests it applies to); ``FaultInjector`` draws from ``random.Random(seed)`` a fixed
number of times per request, so the same seed and the same request sequence give the
same faults. The decision is pure data (``FaultDecision``); the HTTP adapters carry it
out (sleep, drop the connection, cut a body).
"""

from __future__ import annotations

import random
import re

import attrs

__all__ = ["CREATE_ROUTE", "FaultConfig", "FaultDecision", "FaultInjector", "same_route"]

CREATE_ROUTE = ("POST", "/api/public/v1/verification-job")
"""The create-job route, the only one the ``create_*`` knobs apply to."""


def _share(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be between 0 and 1, got {value}")


@attrs.frozen(kw_only=True)
class FaultConfig:
    """How often each fault is injected; every share is a probability in [0, 1].

    * ``latency``: seconds added to every request; ``latency_spike`` share of requests
      get ``spike_seconds`` more.
    * ``error_5xx``: answer one of ``error_statuses`` with an nginx-style HTML page
      (with ``Retry-After: retry_after`` when that is set), without handling the request.
    * ``reset``: drop the connection without handling the request.
    * ``malformed_json``: handle the request but answer 200 with truncated JSON.
    * ``burst_429``: answer 429 with ``Retry-After``/``x-ratelimit-reset`` of
      ``burst_retry_after`` seconds, without handling the request.
    * ``create_503_before``: create-job answered 503 before anything is created.
    * ``create_cut_off``: the job IS created, then the connection is dropped instead of
      the response.
    * ``create_stall``: the job IS created, the response waits ``stall_seconds``.
    * ``cut_body``: a file download sends half its body, then the connection drops.

    ``paths`` (route templates such as ``/api/public/v1/verification-job/{id}``, or path
    prefixes) and ``methods`` restrict where faults apply; ``max_faults`` stops injecting
    after that many faults (e.g. "the first two calls fail"). ``seed`` None uses the
    FakeService's seed.
    """

    latency: float = 0.0
    latency_spike: float = attrs.field(default=0.0, validator=_share)
    spike_seconds: float = 1.0
    error_5xx: float = attrs.field(default=0.0, validator=_share)
    error_statuses: tuple[int, ...] = (500, 502, 503, 504)
    retry_after: float | None = None
    reset: float = attrs.field(default=0.0, validator=_share)
    malformed_json: float = attrs.field(default=0.0, validator=_share)
    burst_429: float = attrs.field(default=0.0, validator=_share)
    burst_retry_after: float = 1.0
    create_503_before: float = attrs.field(default=0.0, validator=_share)
    create_cut_off: float = attrs.field(default=0.0, validator=_share)
    create_stall: float = attrs.field(default=0.0, validator=_share)
    stall_seconds: float = 5.0
    cut_body: float = attrs.field(default=0.0, validator=_share)
    paths: tuple[str, ...] | None = None
    methods: tuple[str, ...] | None = None
    max_faults: int | None = None
    seed: int | None = None


@attrs.frozen(kw_only=True)
class FaultDecision:
    """What to do to one request. ``kind`` names the fault that replaces the answer.

    ``kind`` is one of None (answer normally), ``"error_5xx"``, ``"reset"``,
    ``"burst_429"``, ``"create_503_before"``; ``after`` is one of None,
    ``"create_cut_off"``, ``"create_stall"``, ``"malformed_json"``, ``"cut_body"`` (the
    request is handled, then its answer is spoiled). ``delay`` is waited before handling,
    ``stall`` after it.
    """

    delay: float = 0.0
    stall: float = 0.0
    kind: str | None = None
    after: str | None = None
    status: int = 0

    @property
    def faulty(self) -> bool:
        """True when anything other than plain latency was injected."""
        return self.kind is not None or self.after is not None


_NO_FAULT = FaultDecision()


@attrs.frozen
class _Rule:
    """One fault, named after its ``FaultConfig`` share, and where it can strike."""

    name: str
    replaces: bool
    """True: the fault replaces the answer (``kind``); False: it spoils it (``after``)."""
    scope: str
    """``any`` request, only the ``create`` route, only ``file`` downloads, or ``other``."""
    status: int = 0
    """The status it answers with; 0 keeps the drawn error status."""


_RULES = (
    _Rule("create_503_before", True, "create", 503),
    _Rule("reset", True, "any"),
    _Rule("error_5xx", True, "any"),
    _Rule("burst_429", True, "any", 429),
    _Rule("create_cut_off", False, "create"),
    _Rule("create_stall", False, "create"),
    _Rule("cut_body", False, "file"),
    _Rule("malformed_json", False, "other"),
)
"""The faults in the order they are tried; each is tested against its own draw."""


def _scopes(method: str, path: str, route: str | None) -> set[str]:
    """The ``_Rule.scope`` values that cover one request."""
    scopes = {"any", "file" if path.startswith("/files/") else "other"}
    if (method.upper(), route) == CREATE_ROUTE:
        scopes.add("create")
    return scopes


def _first_fault(cfg: FaultConfig, draws: list[float], scopes: set[str]) -> _Rule | None:
    """The first rule covering the request whose draw falls under its share, if any."""
    for rule, draw in zip(_RULES, draws, strict=True):
        if rule.scope in scopes and draw < getattr(cfg, rule.name):
            return rule
    return None


class FaultInjector:
    """Draws fault decisions from a seeded generator; swap ``config`` at any time."""

    def __init__(self, config: FaultConfig | None, default_seed: int) -> None:
        self._default_seed = default_seed
        self.injected = 0
        self.config = config

    @property
    def config(self) -> FaultConfig | None:
        """The active configuration (None: no faults)."""
        return self._config

    @config.setter
    def config(self, value: FaultConfig | None) -> None:
        self._config = value
        seed = self._default_seed if value is None or value.seed is None else value.seed
        self._rng = random.Random(seed)
        self.injected = 0

    def _applies(self, cfg: FaultConfig, method: str, path: str, route: str | None) -> bool:
        if cfg.methods is not None and method.upper() not in {m.upper() for m in cfg.methods}:
            return False
        if cfg.paths is None:
            return True
        return any(same_route(p, route) or path.startswith(p) for p in cfg.paths)

    def decide(self, method: str, path: str, route: str | None) -> FaultDecision:
        """The faults for one request to ``path`` (matched ``route`` template or None)."""
        cfg = self._config
        if cfg is None or not self._applies(cfg, method, path, route):
            return _NO_FAULT
        rng = self._rng
        # Always draw the same number of values so outcomes depend only on the sequence.
        draws = [rng.random() for _ in range(1 + len(_RULES))]
        status = rng.choice(cfg.error_statuses) if cfg.error_statuses else 500
        delay = cfg.latency + (cfg.spike_seconds if draws[0] < cfg.latency_spike else 0.0)
        if cfg.max_faults is not None and self.injected >= cfg.max_faults:
            return FaultDecision(delay=delay)
        rule = _first_fault(cfg, draws[1:], _scopes(method, path, route))
        if rule is None:
            return FaultDecision(delay=delay)
        self.injected += 1
        return FaultDecision(
            delay=delay,
            stall=cfg.stall_seconds if rule.name == "create_stall" else 0.0,
            kind=rule.name if rule.replaces else None,
            after=None if rule.replaces else rule.name,
            status=rule.status or status,
        )


_PLACEHOLDER = re.compile(r"\{[^}/]*\}")


def same_route(a: str | None, b: str | None) -> bool:
    """True when two route templates are equal up to their placeholder names."""
    return (
        a is not None and b is not None and _PLACEHOLDER.sub("{}", a) == _PLACEHOLDER.sub("{}", b)
    )
