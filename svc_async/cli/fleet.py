"""``svc-async fleet status``: what a fleet's Redis holds now, for an operator.

Reads one namespace (``--account``, ``--webhook-secret``, or the client of ``--base-url``
and its credential) or every namespace found, with ``svc_async.fleet.status``; prints
JSON, or tables with a line of advice under anything that needs a look (``--table``).
The fleet URL is shown without its password and no secret is ever printed.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
from collections.abc import Sequence
from typing import Any

from ..auth import ApiKeyAuth
from ..fleet.status import (
    DEFAULT_TIMEOUT,
    BudgetStatus,
    FleetStatus,
    StreamStatus,
    client_namespace,
    fleet_status,
    namespace_for,
)
from ..redact import redact_url
from .commands import Outcome, Ui
from .exit_codes import CommandTimeout, UsageError
from .render import Cell, Column, Renderer, Styled, Table


async def fleet_command(args: argparse.Namespace, ui: Ui) -> Outcome:
    """``fleet status``: read the fleet under ``--timeout`` and build its outcome."""
    url = fleet_url(args)
    namespace, label = selected_namespace(args)
    timeout = DEFAULT_TIMEOUT if args.timeout is None else min(DEFAULT_TIMEOUT, args.timeout)
    deadline = asyncio.timeout(args.timeout)
    try:
        async with deadline:
            with ui.progress.status("Reading the fleet's Redis..."):
                found = await fleet_status(
                    url, namespace=namespace, claim_after=args.claim_after, timeout=timeout
                )
    except TimeoutError as exc:
        if not deadline.expired():
            raise
        text = f"--timeout: the command did not finish within {args.timeout:g}s"
        raise CommandTimeout(text) from exc
    return status_outcome(url, found, label, args.claim_after)


def fleet_url(args: argparse.Namespace) -> str:
    """``--fleet``, else ``SVC_FLEET_URL``, checked (a usage error never quotes it)."""
    from ..fleet.connect import check_url

    url = args.fleet or os.environ.get("SVC_FLEET_URL")
    where = "--fleet" if args.fleet else "SVC_FLEET_URL"
    if not url:
        raise UsageError("no fleet: pass --fleet URL or set SVC_FLEET_URL")
    try:
        return check_url(url)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None


def selected_namespace(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The namespace the options name, with a label fit to show (None, None: every one)."""
    if args.account is not None:
        if not args.account.strip():
            raise UsageError("--account must name the account")
        return namespace_for(account=args.account), f"account {args.account}"
    if args.webhook_secret is not None:
        if not args.webhook_secret:
            raise UsageError("--webhook-secret must not be empty")
        return namespace_for(webhook_secret=args.webhook_secret), "webhook secret"
    if args.base_url is None:
        return None, None
    try:
        namespace = client_namespace(args.base_url, **_credential(args))
    except ValueError as exc:
        raise UsageError(f"--base-url: {exc}") from None
    return namespace, f"client of {redact_url(args.base_url)}"


def _credential(args: argparse.Namespace) -> dict[str, Any]:
    """The client's credential from the global options or the SVC_API_* variables."""
    env = os.environ
    if args.token:
        return {"token": args.token}
    key_id = args.api_key_id or env.get("SVC_API_KEY_ID")
    secret = args.api_key_secret or env.get("SVC_API_KEY_SECRET")
    if args.api_key_id or args.api_key_secret:
        if not (key_id and secret):
            raise UsageError("an API key needs --api-key-id and --api-key-secret")
        return {"auth": ApiKeyAuth(key_id, secret)}
    if env.get("SVC_API_TOKEN"):
        return {"token": env["SVC_API_TOKEN"]}
    if key_id and secret:
        return {"auth": ApiKeyAuth(key_id, secret)}
    raise UsageError(
        "--base-url names a client's namespace with its credential: pass --token or"
        " --api-key-id/--api-key-secret, or set SVC_API_TOKEN (or an --account)"
    )


def status_outcome(
    url: str, found: Sequence[FleetStatus], label: str | None, claim_after: float
) -> Outcome:
    """The JSON document and the tables of ``found``."""
    from ..fleet.connect import describe

    shown = describe(url)
    data = {
        "fleet": shown,
        "claimAfter": claim_after,
        "namespaces": [status_data(status, label) for status in found],
    }

    def draw(out: Renderer) -> None:
        if not found:
            out.line(f"No fleet keys in {shown}: no client or receiver has used it yet")
            out.line("(or their keys expired); check --fleet / SVC_FLEET_URL.")
        for status in found:
            draw_status(out, shown, status, label)

    return Outcome(data, draw)


def _when(seconds: float) -> str:
    """A server timestamp as ISO 8601 in UTC."""
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="milliseconds")


def status_data(status: FleetStatus, label: str | None = None) -> dict[str, Any]:
    """One namespace as JSON (camelCase keys; seconds as numbers; ``notes`` the advice)."""
    budget = status.budget
    return {
        "namespace": status.namespace,
        "label": label,
        "readAt": _when(status.server_time),
        "budget": None if budget is None else _budget_data(budget),
        "streams": [_stream_data(stream) for stream in status.streams],
        "wakeListeners": status.wake_listeners,
        "memory": {
            "keys": status.memory.keys,
            "bytes": status.memory.bytes,
            "groups": [
                {"name": g.name, "keys": g.keys, "bytes": g.bytes} for g in status.memory.groups
            ],
        },
        "notes": advice(status),
    }


def _budget_data(budget: BudgetStatus) -> dict[str, Any]:
    return {
        "limit": budget.limit,
        "granted": budget.granted,
        "remaining": budget.remaining,
        "answered": budget.answered,
        "inFlight": budget.in_flight,
        "lapsedLeases": budget.lapsed,
        "window": budget.window,
        "windowEndsIn": budget.window_ends_in,
        "probeEndsIn": budget.probe_ends_in,
    }


def _stream_data(stream: StreamStatus) -> dict[str, Any]:
    return {
        "kind": stream.kind,
        "length": stream.length,
        "unread": stream.unread,
        "pending": stream.pending,
        "heldByDead": stream.held_by_dead,
        "oldestPendingAge": stream.oldest_pending_age,
        "oldestPendingIdle": stream.oldest_pending_idle,
        "oldestUnreadAge": stream.oldest_unread_age,
        "group": stream.group,
        "consumers": [
            {
                "name": c.name,
                "host": c.host,
                "pid": c.pid,
                "pending": c.pending,
                "idle": c.idle,
                "dead": c.dead,
            }
            for c in stream.consumers
        ],
    }


def duration(seconds: float | None) -> str:
    """``850ms``, ``42s``, ``3m05s``, ``2h03m``; ``-`` for None."""
    if seconds is None:
        return "-"
    whole = int(abs(seconds))
    if abs(seconds) < 1:
        return f"{abs(seconds) * 1000:.0f}ms"
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def size(count: int) -> str:
    """Bytes as ``812 B``, ``7.1 KiB``, ``3.4 MiB``."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


def advice(status: FleetStatus) -> list[str]:
    """What needs a look in ``status``, each with what it means and what to do."""
    notes = _budget_advice(status.budget)
    for stream in status.streams:
        notes += _stream_advice(stream, status.claim_after)
    if status.budget is None and not status.streams and not status.memory.keys:
        notes.append(
            "nothing stored for this namespace: check that --account, --webhook-secret or"
            " --base-url and the credential match the processes' own settings"
        )
    return notes


def _budget_advice(budget: BudgetStatus | None) -> list[str]:
    if budget is None:
        return []
    notes = []
    if budget.lapsed:
        notes.append(
            f"{_plural(budget.lapsed, 'lapsed lease')}: calls of a process that stopped"
            " renewing them (it crashed or was killed); the next grant sweeps them and"
            " the budget stops holding their share back. Nothing to do unless it recurs:"
            " then look for workers that die during calls."
        )
    ends = budget.window_ends_in
    if budget.remaining == 0 and ends is not None and ends > 0:
        notes.append(
            f"budget spent: calls wait {duration(ends)} for the window to end. Normal under"
            " load; if it lasts, the fleet needs a larger limit or fewer calls."
        )
    return notes


_CALLBACKS = {"status": "on_status_update", "entry": "on_entry_update"}
"""The receiver method that registers a callback for each delivery kind."""


def _stream_advice(stream: StreamStatus, claim_after: float) -> list[str]:
    notes = []
    kind = stream.kind
    if stream.held_by_dead:
        notes.append(
            f"{kind}: {_plural(stream.held_by_dead, 'delivery', 'deliveries')} held by dead"
            f" consumers; a live replica takes them over once idle {claim_after:g}s."
            " If they stay, no live replica reads this kind: start one."
        )
    live = [c for c in stream.consumers if not c.dead]
    stale = (stream.oldest_unread_age or 0) > claim_after
    if stream.unread and (not live or stale):
        who = "no live replica reads this kind" if not live else "the replicas are behind"
        callback = _CALLBACKS.get(kind, "a callback")
        notes.append(
            f"{kind}: {_plural(stream.unread, 'delivery', 'deliveries')} unread, the oldest"
            f" {duration(stream.oldest_unread_age)} old, and {who}: run a replica (or more)"
            f" with {callback}."
        )
    gone = [c.name for c in stream.consumers if c.dead and not c.pending]
    if gone:
        notes.append(
            f"{kind}: {_plural(len(gone), 'stopped consumer')} holding nothing"
            f" ({', '.join(gone)}); harmless, removable with XGROUP DELCONSUMER."
        )
    return notes


def draw_status(out: Renderer, fleet: str, status: FleetStatus, label: str | None) -> None:
    """One namespace as tables, then its advice."""
    named = f" ({label})" if label else ""
    out.rule(f"Namespace {status.namespace}{named}")
    out.line(Styled(f"{fleet}, read at {_when(status.server_time)} (Redis clock)", "dim"))
    if status.budget is not None:
        out.table(budget_table(status.budget))
    if status.streams:
        out.table(streams_table(status.streams))
        consumers = consumers_table(status.streams)
        if consumers is not None:
            out.table(consumers)
    out.table(keys_table(status))
    listeners = _plural(status.wake_listeners, "process", "processes")
    out.line(f"{listeners} listening for job wake-ups")
    for note in advice(status):
        out.line(Styled(f"! {note}", "yellow"))


def budget_table(budget: BudgetStatus) -> Table:
    """The shared budget as a two-column table."""
    limit = "not learnt yet" if budget.limit is None else f"{budget.limit} per window"
    left = "-" if budget.remaining is None else str(budget.remaining)
    granted = "-" if budget.granted is None else str(budget.granted)
    ends = budget.window_ends_in
    if ends is None:
        window = f"#{budget.window}, end not known"
    elif ends >= 0:
        window = f"#{budget.window}, ends in {duration(ends)}"
    else:
        window = f"#{budget.window}, ended {duration(ends)} ago (the next call starts one)"
    lapsed: Cell = str(budget.lapsed)
    if budget.lapsed:
        lapsed = Styled(f"{budget.lapsed} (a crashed holder's)", "yellow")
    rows: list[list[Cell]] = [
        ["Limit", limit],
        ["Granted", f"{granted} ({left} remaining)"],
        ["Answered", str(budget.answered)],
        ["In flight", str(budget.in_flight)],
        ["Lapsed leases", lapsed],
        ["Window", window],
    ]
    if budget.probe_ends_in is not None:
        rows.append(["Learning", f"first call holds the others {duration(budget.probe_ends_in)}"])
    return Table("Rate budget", [Column("Field"), Column("Value")], rows)


def streams_table(streams: Sequence[StreamStatus]) -> Table:
    """The delivery streams side by side, one column per kind."""

    def count(value: int, style: str = "") -> Cell:
        return Styled(str(value), style) if value and style else str(value)

    rows: list[list[Cell]] = [
        ["Length", *(count(s.length) for s in streams)],
        ["Unread", *(count(s.unread) for s in streams)],
        ["Pending", *(count(s.pending) for s in streams)],
        ["Held by dead", *(count(s.held_by_dead, "yellow") for s in streams)],
        ["Oldest pending", *(duration(s.oldest_pending_age) for s in streams)],
        ["  its idle time", *(duration(s.oldest_pending_idle) for s in streams)],
        ["Oldest unread", *(duration(s.oldest_unread_age) for s in streams)],
    ]
    columns = [Column("Stream"), *(Column(s.kind, "right") for s in streams)]
    return Table("Delivery streams", columns, rows)


def consumers_table(streams: Sequence[StreamStatus]) -> Table | None:
    """One row per consumer of each stream (None: there are none)."""
    rows: list[list[Cell]] = []
    for s in streams:
        for c in s.consumers:
            state = Styled("dead", "bold red") if c.dead else Styled("live", "green")
            rows.append([s.kind, c.name, str(c.pending), duration(c.idle), state])
    if not rows:
        return None
    columns = [
        Column("Kind"),
        Column("Consumer"),
        Column("Pending", "right"),
        Column("Idle", "right"),
        Column("State"),
    ]
    return Table("Consumers", columns, rows)


def keys_table(status: FleetStatus) -> Table:
    """The namespace's keys by sort, with their memory."""
    memory = status.memory
    rows: list[list[Cell]] = [[g.name, str(g.keys), size(g.bytes)] for g in memory.groups]
    rows.append([Styled("All", "bold"), str(memory.keys), size(memory.bytes)])
    columns = [Column("Keys"), Column("Count", "right"), Column("Memory", "right")]
    return Table("Redis memory", columns, rows)
