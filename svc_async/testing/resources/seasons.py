"""Seasons: ``GET /api/public/v1/season`` lists the seasons of every organisation the
caller sees. A season's signup fields render as an event's do (``render_signup_field``)."""

from __future__ import annotations

from ..clock import format_timestamp
from ..state import Season, SignupField
from ..wire import JSON
from .base import V1, Answer, Call, Core, Route, visible

__all__ = ["ROUTES", "render_signup_field"]


def render_signup_field(field: SignupField) -> JSON:
    """A SignupField as listed (``key`` is null in season and event listings)."""
    return {
        "id": field.id,
        "isRequired": field.is_required,
        "options": list(field.options),
        "order": field.order,
        "question": field.question,
        "description": field.description,
        "type": field.type,
        "key": None,
    }


def _render_season(season: Season, *, legacy: bool = False) -> JSON:
    """A Season; ``inviteURL`` always present (null without one), omitted in legacy mode."""
    out: JSON = {
        "id": season.id,
        "isLocked": season.is_locked,
        "territories": [],
        "organisationId": season.organisation_id,
        "title": season.title,
        "endDate": format_timestamp(season.end),
        "startDate": format_timestamp(season.start),
    }
    if season.invite_url is not None or not legacy:
        out["inviteURL"] = season.invite_url
    out["signupFields"] = [render_signup_field(f) for f in season.signup_fields]
    return out


def _list_seasons(core: Core, call: Call) -> Answer:
    """``GET /api/public/v1/season``."""
    seen = visible(core, call)
    found = sorted(core.state.seasons.values(), key=lambda s: s.id)
    legacy = core.flavour.legacy
    return 200, [_render_season(s, legacy=legacy) for s in found if s.organisation_id in seen]


ROUTES: tuple[Route, ...] = (Route("GET", f"{V1}/season", _list_seasons),)
