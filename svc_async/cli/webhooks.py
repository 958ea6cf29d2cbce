"""``svc-async webhooks send``: one delivery POSTed to a receiver, as the service sends it.

The service signs nothing: a delivery is a JSON body POSTed with the receiver's secret in
the URL's query (``?key=...``, the parameter ``WebhookReceiver(secret_param=...)``
checks). Each body is built as the service (and ``FakeService``) shapes it, checked with
the SDK's own parsers before anything is sent, and POSTed once, without retries. What
was sent and the receiver's answer are printed; the secret never is (URLs are shown
through ``redact_url``). An answer other than 2xx is ``ReceiverRefused``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yarl

from .._version import __version__
from ..errors import WebhookPayloadError
from ..redact import redact_text, redact_url
from ..webhooks import Delivery, parse_entry_update, parse_output_file, parse_status_update
from ..webhooks.payloads import describe
from .commands import Outcome, Ui, Unfinished
from .exit_codes import CommandTimeout, DeliveryNotAnswered, ReceiverRefused, UsageError
from .render import Cell, Column, Renderer, Styled, Table

SECRET_VARIABLE = "SVC_WEBHOOK_SECRET"
"""The environment variable a delivery's secret comes from when no flag gives it."""

SEND_TIMEOUT = 30.0
"""How long one delivery waits for the receiver's answer (the SDK's attempt timeout)."""

_ANSWER_SHOWN = 1000
"""Characters of the receiver's answer body kept in the output."""

_JSON = dict[str, Any]


def delivery_url(url: str, secret: str | None, param: str, flag: str) -> str:
    """``url`` with ``secret`` as its ``param`` query value; ``flag`` names the URL's flag.

    ``secret`` None: the URL as given, or with ``SVC_WEBHOOK_SECRET`` added when it
    carries no ``param`` of its own. A secret given both ways is a usage error, and so
    is a URL that is not http(s) with a host. Messages never quote the URL's query.
    """
    try:
        parsed = yarl.URL(url)
    except (ValueError, TypeError):
        raise UsageError(f"{flag}: not a URL") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise UsageError(f"{flag}: expected an http:// or https:// URL, got {redact_url(url)}")
    if not param:
        raise UsageError("--secret-param must not be empty")
    has_own = param in parsed.query
    if secret is not None and has_own:
        raise UsageError(f"{flag} already carries ?{param}=...: drop it or the secret flag")
    if secret is None and not has_own:
        secret = os.environ.get(SECRET_VARIABLE) or None
    if secret is None:
        return str(parsed)
    if not secret:
        raise UsageError("the webhook secret must not be empty")
    return str(parsed.update_query({param: secret}))


def _status_body(args: argparse.Namespace) -> _JSON:
    """``{"id", "status"}``; a test delivery is about job 0 and Processed by default, as
    the fake's ``send_test_webhook`` sends it."""
    if not args.test and (args.job is None or args.status is None):
        raise UsageError("a status update needs --job and --status (or --test)")
    body: _JSON = {
        "id": 0 if args.job is None else args.job,
        "status": "Processed" if args.status is None else args.status,
    }
    return body


def _read_entry(path: str) -> Any:
    """The entry JSON in ``path`` (``-``: stdin); a file that cannot be read is a usage error."""
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"--file: cannot read {path}: {exc.strerror}") from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"--file: {path} is not JSON ({exc.msg})") from None


def _generated_entry(event: int | None, season: int | None) -> _JSON:
    """An entry rendered by a seeded ``FakeService``: its first one in that event or
    season, else its first one (the id given is the delivery's either way)."""
    from ..testing import FakeService

    fake = FakeService(seed=0)
    entries = sorted(fake.state.entries.values(), key=lambda e: e.id)
    chosen = next(
        (
            e
            for e in entries
            if (event and e.event_id == event) or (season and e.season_id == season)
        ),
        entries[0],
    )
    return fake.entry(chosen.id)


def _entry_body(args: argparse.Namespace) -> _JSON:
    """``{"entry", "eventId"}`` or ``{"entry", "seasonId"}`` with the full entry."""
    if args.file is not None:
        entry = _read_entry(args.file)
    else:
        entry = _generated_entry(args.event, args.season)
    if not isinstance(entry, dict):
        raise UsageError(f"--file: expected one entry (a JSON object), got {type(entry).__name__}")
    if args.event is not None:
        return {"entry": entry, "eventId": args.event}
    return {"entry": entry, "seasonId": args.season}


def _output_file_body(args: argparse.Namespace) -> _JSON:
    """An output file as the service POSTs it to the job's ``callbackURL``."""
    link = args.download_url
    if link is None and args.status == "Completed":
        link = f"https://files.invalid/outputs/{args.job}-{args.file_id}-muted.mp3"
    return {
        "id": args.file_id,
        "verificationJobId": args.job,
        "status": args.status,
        "downloadURL": link,
        "operation": args.operation,
        "fileType": args.file_type,
    }


_Builder = tuple[Callable[[argparse.Namespace], _JSON], Callable[[_JSON], Delivery]]

_BUILDERS: dict[str, _Builder] = {
    "status": (_status_body, parse_status_update),
    "entry": (_entry_body, parse_entry_update),
    "output-file": (_output_file_body, parse_output_file),
}


def delivery_body(args: argparse.Namespace) -> tuple[_JSON, Delivery]:
    """The body ``send <kind>`` POSTs and the delivery the receiver will read from it.

    A body the SDK's own parser refuses (an entry file that is not an entry) is a usage
    error: nothing is sent.
    """
    build, parse = _BUILDERS[args.kind]
    body = build(args)
    if args.test:
        body["isTest"] = True
    try:
        parsed = parse(body)
    except WebhookPayloadError as exc:
        flag = "--file" if args.kind == "entry" and args.file is not None else args.kind
        raise UsageError(f"{flag}: {exc}") from None
    return body, parsed


async def send_command(args: argparse.Namespace, ui: Ui) -> Outcome:
    """``webhooks send KIND``: build, check and POST one delivery, under ``--timeout``."""
    url = delivery_url(args.to, args.webhook_secret, args.secret_param, "--to")
    body, parsed = delivery_body(args)
    shown = redact_url(url)
    deadline = asyncio.timeout(args.timeout)
    try:
        async with deadline:
            with ui.progress.status(f"Sending to {shown}..."):
                status, text = await post_delivery(url, body)
    except TimeoutError as exc:
        if not deadline.expired():
            raise
        raise CommandTimeout(
            f"--timeout: the command did not finish within {args.timeout:g}s"
        ) from exc
    secret = yarl.URL(url).query.get(args.secret_param, "")
    answer = redact_text(text[:_ANSWER_SHOWN], (secret,))
    outcome = _outcome(args.kind, shown, body, parsed, status, answer)
    if not 200 <= status < 300:
        raise Unfinished(outcome, ReceiverRefused(status, answer, args.secret_param))
    return outcome


async def post_delivery(url: str, body: _JSON) -> tuple[int, str]:
    """POST ``body`` to ``url`` once; the answer's status and text.

    No answer at all (refused connection, reset, ``SEND_TIMEOUT`` passed) is
    ``DeliveryNotAnswered``, whose message shows the URL without its query.
    """
    where = redact_url(yarl.URL(url).with_query(None))
    headers = {"Content-Type": "application/json", "User-Agent": f"svc-async/{__version__}"}
    timeout = aiohttp.ClientTimeout(total=SEND_TIMEOUT)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(url, data=orjson.dumps(body), headers=headers) as resp,
        ):
            return resp.status, await resp.text(errors="replace")
    except TimeoutError:
        raise DeliveryNotAnswered(f"no answer from {where} within {SEND_TIMEOUT:g}s") from None
    except (aiohttp.ClientError, OSError) as exc:
        what = redact_text(str(exc)) or type(exc).__name__
        raise DeliveryNotAnswered(f"{where}: {what}") from None


def _outcome(
    kind: str, url: str, body: _JSON, parsed: Delivery, status: int, answer: str
) -> Outcome:
    """What was sent (kind, URL without the secret, body) and the receiver's answer."""
    data = {
        "sent": {"kind": kind, "to": url, "test": parsed.is_test, "body": body},
        "answer": {"status": status, "body": answer},
    }

    def draw(out: Renderer) -> None:
        good = 200 <= status < 300
        rows: list[list[Cell]] = [
            ["Delivery", describe(parsed) + (" (test)" if parsed.is_test else "")],
            ["To", url],
            ["Answer", Styled(f"HTTP {status}", "green" if good else "bold red")],
        ]
        if answer:
            rows.append(["Answer body", answer])
        out.table(Table(f"Webhook {kind} sent", [Column("Field"), Column("Value")], rows))

    return Outcome(data, draw)
