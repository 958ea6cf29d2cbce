"""Organisations: ``GET /api/orgs/me`` lists every organisation the caller sees."""

from __future__ import annotations

from ..clock import format_timestamp
from ..state import Org
from ..wire import JSON
from .base import Answer, Call, Core, Route, visible

__all__ = ["ROUTES"]


def _render_org(org: Org) -> JSON:
    """An Organisation; ``logo`` omitted when there is none."""
    out: JSON = {"id": org.id, "name": org.name}
    if org.logo is not None:
        out["logo"] = dict(org.logo)
    out.update(
        {
            "createdAt": format_timestamp(org.created_at),
            "deletedAt": None,
            "parentId": org.parent_id,
            "updatedAt": format_timestamp(org.updated_at),
            "isEventProducer": org.is_event_producer,
        }
    )
    return out


def _list_orgs(core: Core, call: Call) -> Answer:
    """``GET /api/orgs/me``."""
    return 200, [_render_org(core.state.orgs[i]) for i in sorted(visible(core, call))]


ROUTES: tuple[Route, ...] = (Route("GET", "/api/orgs/me", _list_orgs),)
