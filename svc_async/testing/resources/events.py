"""Events: ``POST /api/public/v1/event`` pages through the events the caller sees.

Rules: ``limit`` 0-100 (default 25), ``offset`` >= 0, ``organisationId`` (one
organisation the caller sees, else 403): numbers or numeric strings.
"""

from __future__ import annotations

from typing import Any

from ..clock import format_timestamp
from ..state import Event
from ..validation import Validator
from ..wire import JSON
from .base import V1, Answer, Call, Core, Route, page, read_body, visible
from .seasons import render_signup_field

__all__ = ["ROUTES"]


def _read_events(body: Any) -> JSON:
    """A get-events request (numbers or numeric strings), or a 400."""
    v = Validator(body)
    request = {
        "limit": v.integer("limit", minimum=0, maximum=100, coerce=True),
        "offset": v.integer("offset", minimum=0, coerce=True),
        "organisationId": v.integer("organisationId", coerce=True),
    }
    return v.accepted(request)


def _render_event(event: Event, base: str) -> JSON:
    """An Event, with its invite link on the fake's own address."""
    return {
        "id": event.id,
        "isLocked": event.is_locked,
        "organisationId": event.organisation_id,
        "title": event.title,
        "territory": event.territory,
        "endDate": format_timestamp(event.end),
        "startDate": format_timestamp(event.start),
        "inviteURL": f"{base}/my-events/event/{event.id}/invite?token={event.invite_token}",
        "signupFields": [render_signup_field(f) for f in event.signup_fields],
    }


def _list_events(core: Core, call: Call) -> Answer:
    """``POST /api/public/v1/event`` (paged)."""
    req = _read_events(read_body(call))
    seen = visible(core, call, req["organisationId"])
    found = sorted(
        (e for e in core.state.events.values() if e.organisation_id in seen),
        key=lambda e: e.id,
    )
    return 200, [_render_event(e, call.raw.base) for e in page(found, req)]


ROUTES: tuple[Route, ...] = (Route("POST", f"{V1}/event", _list_events),)
