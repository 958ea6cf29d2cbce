"""Say failures in the command line's own words: the flags typed, not the SDK's fields.

The SDK names its arguments (``request.start_date``) and the service names JSON paths
(``startDate``); a person at the shell typed ``--start``. These helpers translate both,
list a 400's validation issues one per line and tell a rate-limited user when to retry.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

from ..errors import APIError, RateLimitError, ValidationIssue
from ..retry import server_wait

FLAGS: dict[str, str] = {
    # jobs create: JobRequest attributes and their JSON names
    "name": "--name",
    "email": "--email",
    "organisation_id": "--org",
    "organisationId": "--org",
    "audio_file_url": "--audio-url",
    "audioFileUrl": "--audio-url",
    "audioFileURL": "--audio-url",
    "start_date": "--start",
    "startDate": "--start",
    "end_date": "--end",
    "endDate": "--end",
    "required_territories": "--territory",
    "requiredTerritories": "--territory",
    "external_id": "--external-id",
    "externalId": "--external-id",
    "license_source": "--license-source",
    "licenseSource": "--license-source",
    "license_source_name": "--license-source-name",
    "licenseSourceName": "--license-source-name",
    "license_file_urls": "--license-file",
    "licenseFileUrls": "--license-file",
    "licenseFileURLs": "--license-file",
    # search and paging
    "tags": "--tag",
    "statuses": "--status",
    "org_id": "--org",
    "orgId": "--org",
    "limit": "--limit",
    "offset": "--offset",
    "page_size": "--limit",
    # entries
    "updated_after": "--since",
    "updatedAfter": "--since",
    "event_id": "--event",
    "season_id": "--season",
    "job_id": "ID",
}
"""SDK argument names and service JSON keys, each to the flag that sets it."""

_QUALIFIED = re.compile(r"\brequest\.([a-z_]+)(?:\[\d+\])?(?:\.([a-z_]+))?")
_LEADING = re.compile(r"^(?:(each of) )?([a-z_]+)\b")


def flag_for(name: str) -> str | None:
    """The flag that sets the SDK argument or JSON key ``name``, or None."""
    return FLAGS.get(name)


def in_flags(message: str) -> str:
    """``message`` with the SDK's argument names replaced by the flags that set them."""

    def qualified(match: re.Match[str]) -> str:
        inner = match.group(2) or match.group(1)
        return FLAGS.get(inner, match.group(0))

    text = _QUALIFIED.sub(qualified, message)
    leading = _LEADING.match(text)
    if leading is not None and leading.group(2) in FLAGS:
        prefix = f"{leading.group(1)} " if leading.group(1) else ""
        text = prefix + FLAGS[leading.group(2)] + text[leading.end() :]
    return text


def issue_field(issue: ValidationIssue) -> str:
    """The flag an issue is about, else its dotted JSON path (``body`` when it has none)."""
    for part in reversed(issue.path):
        if isinstance(part, str) and part in FLAGS:
            return FLAGS[part]
    return ".".join(str(p) for p in issue.path) or "body"


def issue_lines(issues: Sequence[ValidationIssue]) -> list[str]:
    """One ``field: message`` line per validation issue."""
    lines = []
    for issue in issues:
        message = " ".join((issue.message or issue.code or "invalid").split())
        lines.append(f"{issue_field(issue)}: {message}")
    return lines


def retry_hint(exc: RateLimitError, now: dt.datetime | None = None) -> str:
    """When a rate-limited command may be run again, as precisely as the answer says."""
    wait = exc.retry_after
    if wait is None:
        wait = server_wait(exc.status, exc.headers)
    if wait is None:
        return "wait a minute and retry"
    at = (now or dt.datetime.now(dt.UTC)) + dt.timedelta(seconds=wait)
    seconds = max(1, round(wait))
    return f"retry in {seconds}s (after {at:%H:%M:%S} UTC)"


def api_failure(exc: APIError) -> str:
    """A 400 with its issues listed under it, a 429 with when to retry, else ``str(exc)``."""
    text = " ".join(str(exc).split())
    if isinstance(exc, RateLimitError):
        return f"rate limited by the service (HTTP {exc.status}): {retry_hint(exc)}"
    if exc.issues:
        where = f" for {exc.method} {exc.url}" if exc.method else ""
        head = f"the service refused the request (HTTP {exc.status}{where}):"
        return "\n".join([head, *(f"  {line}" for line in issue_lines(exc.issues))])
    return text
