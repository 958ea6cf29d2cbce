"""``Client.with_raw_response``: the same calls, each returning its own ``Reply``.

``await svc.with_raw_response.jobs.get(7)`` returns ``Reply[VerificationJob]``: ``data``
(the model the plain call returns), and what the call's own response said: ``status``,
``headers``, ``rate_limit``, ``attempts``, ``elapsed`` and ``request_id``. Unlike
``svc.rate_limit`` (whichever answer came last, in any task), a reply is this call's,
so concurrent calls can each tell their budget.

Calls made of several requests say which one the reply describes: a ``wait`` (and
``create_and_wait``) the last ``jobs.get`` it made; ``find_created`` its search;
``children`` the ``orgs.list`` it filters; ``sync`` the last event it fetched. A create
settled by a search after an ambiguous failure has no response of its own: its reply's
``status`` and ``headers`` are None. Iterators (``events.iter``, ``jobs.iter_search``,
``entries.for_events``, ``jobs.wait_many``...) have no single response and are not on
this view.

The calls themselves are the plain sub-clients' (one code path), as in openai-python's
``to_raw_response_wrapper``: a wrapper (``with_reply``) notes the replies the pipeline
hands it for this task, and returns the one its call names. The options a call takes
are the plain call's, so nothing about them is repeated here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import with_reply

if TYPE_CHECKING:
    from .entries import Entries
    from .events import Events
    from .jobs import Jobs
    from .orgs import Orgs
    from .seasons import Seasons

__all__ = ["RawResponses", "with_reply"]


class _View:
    """A sub-client's calls with their replies; names it lacks say why."""

    _plain = ""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"{self._plain}.{name} is not on with_raw_response: an iterator has no single"
            f" response (use svc.{self._plain}.{name}), and private names are not offered"
        )


class RawOrgs(_View):
    """``svc.orgs`` with replies."""

    _plain = "orgs"

    def __init__(self, orgs: Orgs) -> None:
        self.list = with_reply(orgs.list, "orgs.list")
        self.children = with_reply(orgs.children, "orgs.list")


class RawSeasons(_View):
    """``svc.seasons`` with replies."""

    _plain = "seasons"

    def __init__(self, seasons: Seasons) -> None:
        self.list = with_reply(seasons.list, "seasons.list")


class RawEvents(_View):
    """``svc.events`` with replies."""

    _plain = "events"

    def __init__(self, events: Events) -> None:
        self.list = with_reply(events.list, "events.list")


class RawEntries(_View):
    """``svc.entries`` with replies."""

    _plain = "entries"

    def __init__(self, entries: Entries) -> None:
        self.for_event = with_reply(entries.for_event, "entries.for_event")
        self.for_season = with_reply(entries.for_season, "entries.for_season")
        self.sync = with_reply(entries.sync, "entries.for_event")


class RawJobs(_View):
    """``svc.jobs`` with replies."""

    _plain = "jobs"

    def __init__(self, jobs: Jobs) -> None:
        self.create = with_reply(jobs.create, "jobs.create")
        self.get = with_reply(jobs.get, "jobs.get")
        self.search = with_reply(jobs.search, "jobs.search")
        self.find_created = with_reply(jobs.find_created, "jobs.search")
        self.wait = with_reply(jobs.wait, "jobs.get")
        self.create_and_wait = with_reply(jobs.create_and_wait, "jobs.get")


class RawResponses:
    """``svc.with_raw_response``: every sub-client whose calls return a ``Reply``."""

    def __init__(
        self, orgs: Orgs, seasons: Seasons, events: Events, entries: Entries, jobs: Jobs
    ) -> None:
        self.orgs = RawOrgs(orgs)
        self.seasons = RawSeasons(seasons)
        self.events = RawEvents(events)
        self.entries = RawEntries(entries)
        self.jobs = RawJobs(jobs)
