"""The command line's grammar: every command, option and argument type (argparse)."""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from typing import NoReturn

from .._core.validate import MAX_PAGE_SIZE
from .._version import __version__
from ..models import CURRENT_JOB_STATUSES, JobStatus, OutputFileStatus

PROG = "svc-async"

EXIT_CODES_HELP = """\
exit codes:
  0    success
  1    unexpected error (a bug: please report it)
  2    usage: bad arguments or options, missing URL or credentials, or a
       request refused before sending (a header value with a newline)
  3    authentication or permission refused (HTTP 401/403, also from a
       webhook receiver: webhooks send)
  4    not found (HTTP 404)
  5    other error answer (4xx/5xx, rate limit), or a create not confirmed
  6    network failure, request timeout, --timeout passed, the fleet's
       Redis unreachable (fleet status), or no answer from a webhook receiver
  7    the service's answer could not be decoded
  8    jobs wait / --wait ran out of time (the job is still printed)
  130  interrupted (Ctrl-C)
"""

_DESCRIPTION = """\
Command line for the Licence Verification Service (svc_async SDK).

Prints one JSON document on stdout (models in the service's own camelCase
form, dates as ISO 8601 strings); --table prints tables for people instead.
Progress goes to stderr when it is a terminal; errors are one line on stderr.

Connection options fall back to the environment: SVC_BASE_URL, SVC_ACCOUNT_URL,
SVC_API_TOKEN, SVC_API_KEY_ID and SVC_API_KEY_SECRET (and SVC_FLEET_URL for
fleet status, SVC_WEBHOOK_SECRET for webhooks send and fake --webhook-url).
"""

_EPILOG = (
    EXIT_CODES_HELP
    + """
examples:
  svc-async orgs --table
  svc-async events --all --org 2
  svc-async entries --event 7 --since 2024-10-01T00:00:00Z
  svc-async jobs search --tag Seniors --status Processed --all
  svc-async fake --job-delay 5
  svc-async webhooks send status --to http://127.0.0.1:8000/webhooks/svc \\
      --job 7 --status Processed
  svc-async fleet status --account acme --table
  svc-async demo
"""
)

DEFAULT_DEMO_DELAY = 2.0
"""The demo fake's job processing time: long enough to see each status pass, short
enough to keep the tour near 4 seconds (a VOD job's output file takes half as long
again)."""

_COUNTRY = re.compile(r"[A-Za-z]{2}")


def positive_int(text: str) -> int:
    """An id or count above zero."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def page_size(text: str) -> int:
    """A page size, 1 to 100 (worded as the SDK words its ``limit`` check)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= value <= MAX_PAGE_SIZE:
        raise argparse.ArgumentTypeError(
            f"must be at least 1 and at most {MAX_PAGE_SIZE}, got {value}"
        )
    return value


def non_negative_int(text: str) -> int:
    """A count of zero or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def seconds(text: str) -> float:
    """A positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def non_negative_seconds(text: str) -> float:
    """Zero or more seconds."""
    if text.strip() in ("0", "0.0"):
        return 0.0
    return seconds(text)


def share(text: str) -> float:
    """A probability from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share from 0 to 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


def rate_limit(text: str) -> tuple[int, float] | None:
    """``N/SECONDS`` (N requests per window), or ``off``."""
    if text.strip().lower() == "off":
        return None
    count, _, window = text.partition("/")
    try:
        value = (int(count), float(window))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected REQUESTS/SECONDS such as 100/60, or off; got {text!r}"
        ) from None
    if value[0] <= 0 or not 0 < value[1] < float("inf"):
        raise argparse.ArgumentTypeError(f"both numbers must be positive, got {text!r}")
    return value


def port(text: str) -> int:
    """A TCP port, 0 for any free one."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be from 0 to 65535, got {value}")
    return value


def job_status(text: str) -> str:
    """A status the service accepts today (any case), in the service's spelling."""
    for status in CURRENT_JOB_STATUSES:
        if text.strip().lower() == status.lower():
            return str(status)
    valid = ", ".join(CURRENT_JOB_STATUSES)
    raise argparse.ArgumentTypeError(f"unknown job status {text!r}; choose from {valid}")


def delivery_status(text: str) -> str:
    """A status to announce: a known one (any case, the legacy names too) in the
    service's spelling, anything else as typed (the receiver keeps unknown statuses)."""
    word = text.strip()
    if not word:
        raise argparse.ArgumentTypeError("must not be empty")
    for status in JobStatus:
        if word.lower() == status.lower():
            return str(status)
    return word


def output_file_status(text: str) -> str:
    """An output file's status (any case), in the service's spelling."""
    for status in OutputFileStatus:
        if text.strip().lower() == status.lower():
            return str(status)
    valid = ", ".join(OutputFileStatus)
    raise argparse.ArgumentTypeError(f"unknown output file status {text!r}; choose from {valid}")


def date(text: str) -> dt.date:
    """A ``YYYY-MM-DD`` date."""
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {text!r}") from None


def aware_time(text: str) -> dt.datetime:
    """An ISO 8601 date or time; without an offset it is UTC."""
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 time such as 2024-10-01T12:00:00Z, got {text!r}"
        ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def country(text: str) -> str:
    """A two-letter country code, upper-cased."""
    if not _COUNTRY.fullmatch(text):
        raise argparse.ArgumentTypeError(f"expected a two-letter country code, got {text!r}")
    return text.upper()


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's line breaks and shows defaults where set."""


class CliParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors all start ``svc-async: error:``.

    argparse prefixes an error with the (sub)command's own ``prog`` (``svc-async jobs
    search: error: ...``); every other failure of the tool is ``svc-async: error: ...``.
    The usage of the command that failed is still shown above it. Subcommand parsers
    are made of this class too (argparse gives them their parent's class).
    """

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{PROG}: error: {message}\n")


def _output_options() -> argparse.ArgumentParser:
    """``--table``, accepted after the command too (the main parser sets its default)."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--table",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print tables for people instead of JSON",
    )
    return parent


def _add_page_options(parser: argparse.ArgumentParser, default_limit: int | None) -> None:
    shown = "the service's default" if default_limit is None else f"default {default_limit}"
    parser.add_argument(
        "--limit", type=page_size, help=f"page size, 1 to {MAX_PAGE_SIZE} ({shown})"
    )
    parser.add_argument("--offset", type=non_negative_int, help="items to skip (0)")
    parser.add_argument("--all", action="store_true", help="every page (not with --limit/--offset)")


def _global_options(parser: argparse.ArgumentParser) -> None:
    conn = parser.add_argument_group("connection (before the command)")
    conn.add_argument("--base-url", metavar="URL", help="verification host (SVC_BASE_URL)")
    conn.add_argument(
        "--account-url",
        metavar="URL",
        help="account host for orgs and login (SVC_ACCOUNT_URL; default: --base-url)",
    )
    conn.add_argument(
        "--token",
        metavar="TOKEN",
        help="bearer token (SVC_API_TOKEN); prefer the variable, the command line is visible",
    )
    conn.add_argument("--api-key-id", metavar="ID", help="API key id (SVC_API_KEY_ID)")
    conn.add_argument(
        "--api-key-secret", metavar="SECRET", help="API key secret (SVC_API_KEY_SECRET)"
    )
    conn.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help="deadline of the whole command, retries and waits included"
        " (default: none; each call 120, each attempt 30)",
    )
    parser.add_argument(
        "--table", action="store_true", default=False, help="print tables instead of JSON"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log the SDK's retries (-v) and requests (-vv) on stderr",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")


def _jobs_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    output = _output_options()
    jobs = commands.add_parser(
        "jobs",
        help="verification jobs: create, get, search, wait",
        description="Verification jobs: create one, read one, search by tags, wait for one.",
    )
    sub = jobs.add_subparsers(dest="jobs_command", metavar="ACTION", required=True)

    create = sub.add_parser(
        "create",
        parents=[output],
        help="submit a recording for verification",
        description="Create a verification job (exactly once) and print it.",
        formatter_class=_Formatter,
        epilog="example:\n  svc-async jobs create --name 'Tigers Senior' --email coach@club.example"
        " \\\n    --org 1 --audio-url https://media.example/tigers.mp3 \\\n"
        "    --start 2025-03-01 --end 2025-03-02 --territory GB --tag spring --wait",
    )
    create.add_argument("--name", required=True, help="job name")
    create.add_argument(
        "--email", required=True, help="email whose service-held licences are looked up"
    )
    create.add_argument(
        "--org", type=positive_int, required=True, metavar="ID", help="organisation id"
    )
    create.add_argument(
        "--audio-url", required=True, metavar="URL", help="audio or video file to verify"
    )
    create.add_argument(
        "--start", type=date, required=True, metavar="YYYY-MM-DD", help="first day of use"
    )
    create.add_argument(
        "--end", type=date, required=True, metavar="YYYY-MM-DD", help="last day of use"
    )
    create.add_argument(
        "--territory",
        type=country,
        action="append",
        default=[],
        metavar="XX",
        help="required territory (repeatable)",
    )
    create.add_argument(
        "--tag", action="append", default=[], metavar="TAG", help="searchable tag (repeatable)"
    )
    create.add_argument("--external-id", default="", metavar="ID", help="your own reference")
    lic = create.add_argument_group("licence files (optional)")
    lic.add_argument(
        "--license-source",
        metavar="SOURCE",
        help="e.g. Other, Bespoke Music (required with the two below)",
    )
    lic.add_argument("--license-source-name", metavar="NAME", help="who issued the licence")
    lic.add_argument(
        "--license-file",
        action="append",
        default=[],
        metavar="URL",
        help="licence file URL (repeatable)",
    )
    create.add_argument("--wait", action="store_true", help="wait until the job is finished")
    create.add_argument(
        "--wait-timeout",
        type=seconds,
        default=600.0,
        metavar="SECONDS",
        help="give up waiting after this long (600)",
    )

    get = sub.add_parser(
        "get",
        parents=[output],
        help="one job in full",
        description="Print one verification job, with its verdict once processed.",
    )
    get.add_argument("job_id", type=positive_int, metavar="ID", help="job id")

    search = sub.add_parser(
        "search",
        parents=[output],
        help="jobs by tags and statuses",
        description="Jobs carrying ALL the given tags (none: every job). Prints"
        ' {"jobs": [...], "count": N}; count is the total over all pages.',
    )
    search.add_argument(
        "--tag", action="append", default=[], metavar="TAG", help="required tag (repeatable)"
    )
    search.add_argument(
        "--status",
        type=job_status,
        action="append",
        default=[],
        metavar="STATUS",
        help=f"allowed status (repeatable): {', '.join(CURRENT_JOB_STATUSES)}",
    )
    search.add_argument("--org", type=positive_int, metavar="ID", help="one organisation only")
    _add_page_options(search, 25)

    wait = sub.add_parser(
        "wait",
        parents=[output],
        help="wait until a job is finished",
        description="Poll a job until it is finished (Processed, Submitted or Errored),"
        " then print it (exit 0 whatever the verdict; exit 8 on timeout, the last"
        " snapshot still printed).",
    )
    wait.add_argument("job_id", type=positive_int, metavar="ID", help="job id")
    wait.add_argument(
        "--timeout",
        dest="wait_timeout",
        type=seconds,
        default=600.0,
        metavar="SECONDS",
        help="give up after this long (600)",
    )
    for action in (create, get, search, wait):
        action.set_defaults(command_parser=action)


_FLEET_STATUS = """\
Read a fleet's Redis and print, for one namespace or every one found: the
shared rate budget (limit, granted, remaining, calls in flight, lapsed leases,
the window's end), the delivery streams (length, unread, pending, the oldest
pending), their consumers (live or dead), job wake-up listeners and the memory
the namespace's keys use. Ages are on the Redis server's clock. Nothing is
changed. Anything that needs a look comes with advice: "notes" in the JSON,
lines under the tables with --table.

Which namespace: --account NAME (clients and receivers given account=NAME),
--webhook-secret (a receiver without an account), or --base-url with the
connection options' credential (a client without an account); none of them:
every namespace in the Redis. Secrets and the URL's password are never shown.
"""


def _fleet_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fleet = commands.add_parser(
        "fleet",
        help="a fleet's shared state in Redis (status)",
        description="What the processes of a fleet share in Redis.",
    )
    sub = fleet.add_subparsers(dest="fleet_command", metavar="ACTION", required=True)
    status = sub.add_parser(
        "status",
        parents=[_output_options()],
        help="the budget, consumers, pending deliveries, Redis memory",
        description=_FLEET_STATUS,
        formatter_class=_Formatter,
        epilog="examples:\n"
        "  svc-async fleet status --fleet redis://redis.internal:6379/0 --table\n"
        "  svc-async fleet status --account acme --claim-after 60\n"
        "  svc-async fleet status --account acme | jq '.namespaces[].notes'",
    )
    status.add_argument("--fleet", metavar="URL", help="the fleet's Redis URL (SVC_FLEET_URL)")
    which = status.add_mutually_exclusive_group()
    which.add_argument("--account", metavar="NAME", help="the account name the fleet was given")
    which.add_argument(
        "--webhook-secret",
        metavar="SECRET",
        help="a receiver's webhook secret (never shown; the command line is visible)",
    )
    status.add_argument(
        "--claim-after",
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="the receivers' claim_after: a consumer idle longer with deliveries"
        " pending is dead (30)",
    )
    status.add_argument(
        "--json", action="store_true", help="print JSON (the default; not with --table)"
    )
    status.set_defaults(command_parser=status)


_WEBHOOKS_SEND = """\
POST one delivery to your webhook receiver, shaped as the service sends it:
a JSON body, no signature, the secret in the URL's query (?key=...). The
secret is --secret, else SVC_WEBHOOK_SECRET when --to carries none; it is
never printed. Prints what was sent and the receiver's answer; an answer
other than 2xx is a failure (exit 3 for 401/403, 4 for 404, 5 otherwise).
"""


def _send_options() -> argparse.ArgumentParser:
    """Where a delivery goes and what marks it: ``--to``, the secret, ``--test``."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--to", required=True, metavar="URL", help="your receiver's URL")
    parent.add_argument(
        "--secret",
        dest="webhook_secret",
        metavar="SECRET",
        help="the receiver's secret (SVC_WEBHOOK_SECRET); prefer the variable",
    )
    parent.add_argument(
        "--secret-param",
        default="key",
        metavar="NAME",
        help="the query parameter the receiver checks (key, as secret_param)",
    )
    parent.add_argument("--test", action="store_true", help='a test delivery ("isTest": true)')
    return parent


def _webhooks_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    webhooks = commands.add_parser(
        "webhooks",
        help="send deliveries to your receiver, as the service does",
        description="Webhook deliveries for local development.",
    )
    sub = webhooks.add_subparsers(dest="webhooks_command", metavar="ACTION", required=True)
    send = sub.add_parser(
        "send",
        help="POST one delivery (status, entry or output-file)",
        description=_WEBHOOKS_SEND,
        formatter_class=_Formatter,
    )
    kinds = send.add_subparsers(dest="kind", metavar="KIND", required=True)
    parents = [_send_options(), _output_options()]
    status = kinds.add_parser(
        "status",
        parents=parents,
        help="a job status update {id, status}",
        description=_WEBHOOKS_SEND + '\nA job status update: {"id", "status"}.',
        formatter_class=_Formatter,
        epilog="examples:\n"
        "  svc-async webhooks send status --to http://127.0.0.1:8000/webhooks/svc \\\n"
        "      --job 7 --status Processed\n"
        "  svc-async webhooks send status --to http://127.0.0.1:8000/webhooks/svc --test",
    )
    status.add_argument(
        "--job", type=positive_int, metavar="ID", help="the job's id (--test: 0 by default)"
    )
    status.add_argument(
        "--status",
        type=delivery_status,
        metavar="STATUS",
        help="the status announced, e.g. Processed (--test: Processed by default)",
    )
    entry = kinds.add_parser(
        "entry",
        parents=parents,
        help="an entry update {entry, eventId} or {entry, seasonId}",
        description=_WEBHOOKS_SEND + "\nAn entry update: the full entry and its event or"
        " season. The entry comes\nfrom --file (one entry as `svc-async entries` prints"
        " it); without it, from\nthe fake service's data: its first entry of that event or"
        " season, else its\nfirst.",
        formatter_class=_Formatter,
        epilog="example:\n  svc-async entries --event 7 | jq '.[0]' > entry.json\n"
        "  svc-async webhooks send entry --to http://127.0.0.1:8000/webhooks/svc \\\n"
        "      --file entry.json --event 7",
    )
    scope = entry.add_mutually_exclusive_group(required=True)
    scope.add_argument("--event", type=positive_int, metavar="ID", help="the entry's event")
    scope.add_argument("--season", type=positive_int, metavar="ID", help="the entry's season")
    entry.add_argument("--file", metavar="PATH", help="a JSON file holding the entry (- for stdin)")
    output = kinds.add_parser(
        "output-file",
        parents=parents,
        help="an output file {id, verificationJobId, status, downloadURL, ...}",
        description=_WEBHOOKS_SEND + "\nAn output file, as POSTed to a job's callbackURL.",
        formatter_class=_Formatter,
        epilog="example:\n"
        "  svc-async webhooks send output-file --to http://127.0.0.1:8000/outputs \\\n"
        "      --job 7 --status Completed",
    )
    output.add_argument("--job", type=positive_int, required=True, metavar="ID", help="the job")
    output.add_argument(
        "--file-id", type=positive_int, default=1, metavar="ID", help="the file's id (1)"
    )
    output.add_argument(
        "--status",
        type=output_file_status,
        default="Completed",
        metavar="STATUS",
        help="Pending, Processing, Completed or Errored (Completed)",
    )
    output.add_argument(
        "--download-url",
        metavar="URL",
        help="the file's link (default: a made-up one when Completed, else null)",
    )
    output.add_argument("--operation", default="Mute", help="the operation (Mute)")
    output.add_argument("--file-type", default="Audio", metavar="TYPE", help="its type (Audio)")
    for action in (status, entry, output):
        action.set_defaults(command_parser=action)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line."""
    # Typed as its base: the subcommand parsers argparse makes of it are CliParsers too.
    parser: argparse.ArgumentParser = CliParser(
        prog=PROG, description=_DESCRIPTION, epilog=_EPILOG, formatter_class=_Formatter
    )
    _global_options(parser)
    output = _output_options()
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    commands.add_parser(
        "orgs",
        parents=[output],
        help="organisations you can access",
        description="Every organisation the account can access.",
    )
    commands.add_parser(
        "seasons",
        parents=[output],
        help="seasons",
        description="Every season the account can access.",
    )

    events = commands.add_parser(
        "events",
        parents=[output],
        help="events (one page, or --all)",
        description="Events of the account's organisations: one page, or every page with --all.",
    )
    events.add_argument("--org", type=positive_int, metavar="ID", help="one organisation only")
    _add_page_options(events, None)

    entries = commands.add_parser(
        "entries",
        parents=[output],
        help="entries of an event or a season",
        description="Entries of one event or one season, with recordings and licence data.",
    )
    which = entries.add_mutually_exclusive_group(required=True)
    which.add_argument("--event", type=positive_int, metavar="ID", help="event id")
    which.add_argument("--season", type=positive_int, metavar="ID", help="season id")
    entries.add_argument(
        "--since",
        type=aware_time,
        metavar="TIME",
        help="only entries updated after TIME (ISO 8601; no offset means UTC)",
    )

    for command in (events, entries):
        command.set_defaults(command_parser=command)
    _jobs_parser(commands)
    _fleet_parser(commands)
    _webhooks_parser(commands)

    fake = commands.add_parser(
        "fake",
        help="serve a fake service on 127.0.0.1 to try the CLI against",
        description="Serve a seeded FakeService on 127.0.0.1 until Ctrl-C (exit 0).\n"
        "Prints the export lines (SVC_BASE_URL, SVC_API_TOKEN, SVC_ACCOUNT_URL) to\n"
        "paste into another shell; needs no URL or credentials.",
        formatter_class=_Formatter,
        epilog="example:\n  svc-async fake --job-delay 5 --latency 0.2 --error-rate 0.1",
    )
    add_fake_options(fake)

    demo = commands.add_parser(
        "demo",
        help="tour the SDK against a local fake service",
        description="Start a fake service on 127.0.0.1 and tour the SDK against it"
        " (needs no URL or credentials).",
    )
    add_demo_options(demo)
    return parser


def add_fake_options(parser: argparse.ArgumentParser) -> None:
    """The ``fake`` command's options: port, data seed, flavour, job timing, limits, faults."""
    parser.add_argument(
        "--port", type=port, default=0, metavar="N", help="port on 127.0.0.1 (0: any free one)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="N", help="seed of the fake's demo data (0)"
    )
    parser.add_argument(
        "--legacy",
        action="store_true",
        help="speak the published examples' older shapes: jobs end at Completed,"
        " search answers {jobs, count}",
    )
    hooks = parser.add_argument_group("webhooks")
    hooks.add_argument(
        "--webhook-url",
        metavar="URL",
        help="POST the fake's deliveries (status updates) to your receiver here",
    )
    hooks.add_argument(
        "--webhook-secret",
        metavar="SECRET",
        help="added to --webhook-url as ?key=SECRET unless it has a key (SVC_WEBHOOK_SECRET)",
    )
    timing = parser.add_argument_group("jobs and limits")
    timing.add_argument(
        "--job-delay",
        type=non_negative_seconds,
        default=3.0,
        metavar="SECONDS",
        help="how long a job takes to process (3); a VOD job's output file takes"
        " half as long again",
    )
    timing.add_argument(
        "--search-lag",
        type=non_negative_seconds,
        default=0.0,
        metavar="SECONDS",
        help="how long a new job stays out of search results (0)",
    )
    timing.add_argument(
        "--rate-limit",
        type=rate_limit,
        default=(1000, 60.0),
        metavar="N/SECONDS",
        help="requests allowed per window, or off (1000/60)",
    )
    faults = parser.add_argument_group("faults (shares are probabilities from 0 to 1)")
    faults.add_argument(
        "--latency",
        type=non_negative_seconds,
        default=0.0,
        metavar="SECONDS",
        help="added to every request (0)",
    )
    faults.add_argument(
        "--latency-spike", type=share, default=0.0, metavar="SHARE", help="share of slow requests"
    )
    faults.add_argument(
        "--spike-seconds",
        type=non_negative_seconds,
        default=1.0,
        metavar="SECONDS",
        help="extra time of a slow request (1)",
    )
    faults.add_argument(
        "--error-rate", type=share, default=0.0, metavar="SHARE", help="share answered 5xx"
    )
    faults.add_argument(
        "--reset-rate",
        type=share,
        default=0.0,
        metavar="SHARE",
        help="share of dropped connections",
    )
    faults.add_argument(
        "--malformed-rate",
        type=share,
        default=0.0,
        metavar="SHARE",
        help="share answered with broken JSON",
    )
    faults.add_argument(
        "--burst-429-rate", type=share, default=0.0, metavar="SHARE", help="share answered 429"
    )
    faults.add_argument(
        "--burst-retry-after",
        type=non_negative_seconds,
        default=1.0,
        metavar="SECONDS",
        help="Retry-After of those 429 answers (1)",
    )


def add_demo_options(parser: argparse.ArgumentParser) -> None:
    """The demo's own options (shared with ``python -m svc_async.demo``)."""
    parser.add_argument("--no-color", action="store_true", help="no colours")
    parser.add_argument(
        "--plain", action="store_true", help="plain text even when rich is installed"
    )
    parser.add_argument(
        "--delay",
        type=non_negative_seconds,
        default=DEFAULT_DEMO_DELAY,
        metavar="SECONDS",
        help=f"the fake's job processing time ({DEFAULT_DEMO_DELAY:g})",
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="N", help="seed of the fake's demo data (0)"
    )
