"""Event hooks: your callables told of each request, response and retry (httpx's shape).

``Client(event_hooks={"request": [...], "response": [...], "retry": [...]})`` gives each
hook, in order, what the pipeline's observation points see (``pipeline.CallWatch``):

* ``request``: the ``Request`` of each attempt, just before it is sent;
* ``response``: the ``Response`` of each attempt that got one (its body read, or empty
  when streamed to a decoder);
* ``retry``: a ``RetryEvent`` before each wait for another attempt.

What a hook receives is redacted as the logs are: the URL without user info or query
values, credentials' headers (and any header value holding a secret) as
``[REDACTED]``, a request's or response's body with every secret the client holds
replaced, and the credentials of a login or refresh (its key secret, refresh token and
the new tokens, not yet held) hidden by name, as in logs. Hooks
observe: a hook that raises is logged (WARNING on ``svc_async.hooks``, with the
traceback) and the call goes on as if it had not been there. A coroutine function runs
as a task beside the call, which does not wait for it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import yarl
from multidict import CIMultiDict, CIMultiDictProxy

from ._transports.base import Request, Response
from .clock import Clock, wait_tasks
from .errors import SvcError
from .redact import REDACTED, echoed_forms, is_sensitive_header, redact_text, redact_url

__all__ = ["HOOK_NAMES", "EventHooks", "RetryEvent"]

logger = logging.getLogger(__name__)

HOOK_NAMES = ("request", "response", "retry")
"""The events a hook may be registered for."""

Hook = Callable[[Any], Any]


@attrs.frozen(slots=True, kw_only=True)
class RetryEvent:
    """Another attempt of a call follows after ``wait`` seconds, because of ``reason``."""

    operation: str
    """The SDK call (``jobs.get``; ``request`` for ``Client.request``)."""
    method: str
    url: str
    """The URL, redacted."""
    attempt: int
    """The number of the attempt that follows (2 for the first retry)."""
    wait: float
    reason: str
    """Why: ``HTTP 503``, ``ConnectError``..."""
    request_id: str | None
    """The call's request id (the same on each attempt)."""


class EventHooks:
    """The observer that hands a client's calls' events to its hooks (see the module)."""

    __slots__ = ("_hooks", "_tasks")

    def __init__(self, hooks: Mapping[str, Sequence[Hook]]) -> None:
        self._hooks = _checked(hooks)
        self._tasks: set[asyncio.Task[Any]] = set()

    def __repr__(self) -> str:
        counts = {name: len(hooks) for name, hooks in self._hooks.items() if hooks}
        return f"<EventHooks {counts}>"

    def __bool__(self) -> bool:
        return any(self._hooks.values())

    def start(self, call: Any, secrets: tuple[str, ...]) -> _HookWatch:
        """Watch one call (``pipeline.CallObserver``)."""
        return _HookWatch(self, call.operation or "request", secrets)

    def fire(self, name: str, event: Any) -> None:
        """Give ``event`` to each hook of ``name``; a hook's failure is only logged."""
        for hook in self._hooks[name]:
            try:
                result = hook(event)
            except Exception:
                logger.warning("event hook %r failed on %s", hook, name, exc_info=True)
                continue
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._tasks.add(task)
                task.add_done_callback(self._settled(hook, name))

    def _settled(self, hook: Hook, name: str) -> Callable[[asyncio.Task[Any]], None]:
        def settled(task: asyncio.Task[Any]) -> None:
            self._tasks.discard(task)
            if not task.cancelled() and task.exception() is not None:
                logger.warning("event hook %r failed on %s", hook, name, exc_info=task.exception())

        return settled

    async def drain(self, clock: Clock, timeout: float = 5.0) -> None:
        """Wait (up to ``timeout`` on ``clock``) for the async hooks still running."""
        if self._tasks:
            await wait_tasks(clock, set(self._tasks), timeout)


class _HookWatch:
    """One call's events, redacted, handed to the hooks."""

    __slots__ = ("_hooks", "_operation", "_request", "_secrets", "_tokens")

    def __init__(self, hooks: EventHooks, operation: str, secrets: tuple[str, ...]) -> None:
        self._hooks = hooks
        self._operation = operation
        self._secrets = secrets
        self._tokens = operation.startswith("auth.")  # a login or refresh: bodies of tokens
        self._request: Request | None = None

    def request(self, request: Request) -> None:
        self._request = request
        self._hooks.fire("request", redacted_request(request, self._secrets, self._tokens))

    def attempt(self, number: int, response: Response | None, failure: SvcError | None) -> None:
        if response is not None:
            self._hooks.fire("response", redacted_response(response, self._secrets, self._tokens))

    def paced(self, seconds: float) -> None:
        """Not an event of its own (the request event follows)."""

    def retrying(self, attempt: int, wait: float, reason: str) -> None:
        request = self._request
        event = RetryEvent(
            operation=self._operation,
            method="" if request is None else request.method,
            url="" if request is None else redact_url(request.url),
            attempt=attempt,
            wait=wait,
            reason=reason,
            request_id=None if request is None else request.headers.get("X-Request-Id"),
        )
        self._hooks.fire("retry", event)

    def end(self, error: BaseException | None) -> None:
        """Not an event (the last response, or the error raised, says how it ended)."""


def redacted_request(request: Request, secrets: tuple[str, ...], tokens: bool = False) -> Request:
    """``request`` as a hook sees it: URL and headers redacted as the logs are, secrets
    out of its body (with ``tokens``, a login's or refresh's: its credentials too)."""
    url = yarl.URL(redact_url(request.url), encoded=True)
    return Request(
        request.method,
        url,
        _redacted_headers(request.headers, secrets),
        None if request.content is None else _redacted_body(request.content, secrets, tokens),
        request.timeout,
    )


def redacted_response(
    response: Response, secrets: tuple[str, ...], tokens: bool = False
) -> Response:
    """``response`` as a hook sees it: headers redacted, secrets out of its body (with
    ``tokens``, a login's or refresh's answer: the new tokens too)."""
    request = response.request
    return Response(
        response.status,
        _redacted_headers(response.headers, secrets),
        _redacted_body(response.content, secrets, tokens),
        None if request is None else redacted_request(request, secrets, tokens),
    )


def _redacted_body(content: bytes, secrets: tuple[str, ...], tokens: bool) -> bytes:
    """``content`` with every form of each secret replaced; with ``tokens`` (the
    account host's bodies) the values of credential fields by name too, as logs hide
    them: a login's answer holds tokens the client does not hold yet."""
    for form in (form.encode() for secret in secrets if secret for form in echoed_forms(secret)):
        if form in content:
            content = content.replace(form, REDACTED.encode())
    if tokens and content:
        content = redact_text(content.decode("utf-8", "replace")).encode()
    return content


def _redacted_headers(
    headers: Mapping[str, str], secrets: tuple[str, ...]
) -> CIMultiDictProxy[str]:
    shown: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        text = str(value)  # a transport of your own may hand other types
        hidden = is_sensitive_header(name) or any(s and s in text for s in secrets)
        shown.add(name, REDACTED if hidden else text)
    return CIMultiDictProxy(shown)


def _checked(hooks: Mapping[str, Sequence[Hook]]) -> dict[str, tuple[Hook, ...]]:
    """The hooks by event, checked: known event names, sequences of callables."""
    if not isinstance(hooks, Mapping):
        raise TypeError("event_hooks must be a mapping of event name to a list of callables")
    unknown = set(hooks) - set(HOOK_NAMES)
    if unknown:
        raise ValueError(
            f"unknown event hook name(s) {sorted(map(str, unknown))}: use {list(HOOK_NAMES)}"
        )
    checked: dict[str, tuple[Hook, ...]] = {}
    for name in HOOK_NAMES:
        given = hooks.get(name, ())
        if callable(given) or isinstance(given, str | bytes) or not isinstance(given, Sequence):
            raise TypeError(f"event_hooks[{name!r}] must be a list of callables")
        if not all(callable(hook) for hook in given):
            raise TypeError(f"every hook in event_hooks[{name!r}] must be callable")
        checked[name] = tuple(given)
    return checked
