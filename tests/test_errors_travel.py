"""Errors that travel: every exception of ``svc_async.errors``, produced by a real failure,
pickles and unpickles whole (class, message, every field) and without its secrets.

The classes are found by introspection: a new exception class without a producer here
fails ``test_every_exception_class_has_a_real_failure``. Each producer drives the SDK
against ``FakeService`` (in process), a loopback server, a closed loopback port or a
virtual clock, and hands back what the SDK raised.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime as dt
import inspect
import io
import multiprocessing
import pickle
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any

import pytest
import yarl
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

import svc_async.errors as errors
from svc_async import (
    Client,
    HeaderAuth,
    JobRequest,
    LicenseDetails,
    LicenseSource,
    Pacer,
    PollPolicy,
    RetryPolicy,
    Timeout,
)
from svc_async.auth import AuthFlow
from svc_async.converter import get_converter
from svc_async.fleet.status import fleet_status
from svc_async.models import JobSearchResults
from svc_async.redact import REDACTED, is_sensitive_header, redact_url
from svc_async.testing import Account, FakeClock, FakeService, FaultConfig, VirtualClock
from svc_async.webhooks import WebhookReceiver, parse_delivery

from .conftest import serve_app

TOKEN = "sk_live_SECRET123"
"""The client's credential in every producer: never in the pickled bytes."""
ONCE = RetryPolicy(attempts=1)
QUIET = RetryPolicy(attempts=4, wait_initial=0.0, wait_max=0.0)

Produced = tuple[BaseException, tuple[str, ...]]
"""What a producer gives: the exception raised, and secrets of its own (besides TOKEN)."""


# ------------------------------------------------------------------ the classes


def _exception_classes() -> list[type[BaseException]]:
    """Every public exception class of ``svc_async.errors`` (the module that holds them
    all: ``test_errors_tree`` checks no other module defines one)."""
    return sorted(
        (
            value
            for name, value in vars(errors).items()
            if inspect.isclass(value)
            and issubclass(value, BaseException)
            and value.__module__ == errors.__name__
            and not name.startswith("_")
        ),
        key=lambda cls: cls.__name__,
    )


PRODUCERS: dict[type[BaseException], Callable[[], Awaitable[Produced]]] = {}
ON_VIRTUAL_TIME: set[type[BaseException]] = set()


def produces(
    cls: type[BaseException], *, virtual_time: bool = False
) -> Callable[[Callable[[], Awaitable[Produced]]], Callable[[], Awaitable[Produced]]]:
    def register(producer: Callable[[], Awaitable[Produced]]) -> Callable[[], Awaitable[Produced]]:
        assert cls not in PRODUCERS, cls
        PRODUCERS[cls] = producer
        if virtual_time:
            ON_VIRTUAL_TIME.add(cls)
        return producer

    return register


# ------------------------------------------------------------------ shared helpers


def _fake(*, orgs: tuple[int, ...] = (1,), **options: Any) -> FakeService:
    """A demo fake whose one account authenticates with ``TOKEN``."""
    account = Account(name="ci", org_ids=orgs, tokens=(TOKEN,))
    return FakeService(accounts=[account], **options)


def _virtual_fake(**options: Any) -> FakeService:
    """A fake on the virtual time of the looptime plugin (the client shares it)."""
    return _fake(clock=FakeClock(source=VirtualClock()), **options)


@contextlib.asynccontextmanager
async def _client(fake: FakeService, **options: Any) -> AsyncIterator[Client]:
    options.setdefault("retry", ONCE)
    if fake.clock.source is not None and isinstance(fake.clock.source, VirtualClock):
        options.setdefault("clock", fake.clock.source)
    async with Client(
        "http://fake.invalid", token=TOKEN, transport=fake.transport(), **options
    ) as svc:
        yield svc


async def _raised(call: Awaitable[Any]) -> BaseException:
    try:
        await call
    except BaseException as exc:  # what the SDK raised, whatever it is
        return exc
    raise AssertionError("no error")


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _job_request() -> JobRequest:
    return JobRequest(
        name="Routine",
        email="coach@team.example",
        organisation_id=1,
        audio_file_url="https://files.example/routine.mp3",
        start_date=dt.date(2025, 1, 1),
        end_date=dt.date(2025, 6, 1),
        required_territories=["GB"],
        license_details=[
            LicenseDetails(
                license_source=LicenseSource.OTHER,
                license_source_name="Other Platform",
                license_file_urls=["https://files.example/licence.pdf"],
            )
        ],
    )


async def _fault(status: int) -> Produced:
    """The fake answering ``status`` (its nginx-style fault page) to ``jobs.get``."""
    fake = _fake(faults=FaultConfig(error_5xx=1.0, error_statuses=(status,), retry_after=7))
    async with _client(fake) as svc:
        return await _raised(svc.jobs.get(1)), ()


# ------------------------------------------------------------------ the producers


@produces(errors.APIError)
async def _api_error() -> Produced:
    return await _fault(418)  # a status without a class of its own


@produces(errors.BadRequestError)
async def _bad_request() -> Produced:
    async with _client(_fake()) as svc:
        body = {"name": "x", "email": "not-an-email", "organisationId": 1}
        return await _raised(svc.request("POST", "/api/public/v1/verification-job", json=body)), ()


@produces(errors.AuthenticationError)
async def _authentication() -> Produced:
    wrong = "sk_live_WRONG456"
    async with Client(
        "http://fake.invalid", token=wrong, transport=_fake().transport(), retry=ONCE
    ) as svc:
        return await _raised(svc.seasons.list()), (wrong,)


@produces(errors.PermissionDeniedError)
async def _permission_denied() -> Produced:
    async with _client(_fake(orgs=(2,))) as svc:  # org 1 is above the account's org
        return await _raised(svc.events.list(organisation_id=1)), ()


@produces(errors.NotFoundError)
async def _not_found() -> Produced:
    async with _client(_fake()) as svc:
        return await _raised(svc.jobs.get(999_999)), ()


@produces(errors.ConflictError)
async def _conflict() -> Produced:
    return await _fault(409)


@produces(errors.UnprocessableEntityError)
async def _unprocessable() -> Produced:
    return await _fault(422)


@produces(errors.ServerError)
async def _server_error() -> Produced:
    return await _fault(502)


@produces(errors.RateLimitError)
async def _rate_limited() -> Produced:
    fake = _fake(faults=FaultConfig(burst_429=1.0, burst_retry_after=30))
    async with _client(fake) as svc:
        return await _raised(svc.jobs.get(1)), ()


async def _licence_link(svc: Client) -> str:
    """An API-origin licence link of the demo data (``?t=``: a token of its own)."""
    entries = await svc.request("POST", "/api/public/v1/event/1/entries", json={})
    return next(
        file["downloadURL"]
        for entry in entries
        if entry["soundRecording"]
        for song in entry["soundRecording"]["songs"]
        if song["licenseData"] and song["licenseData"]["externalLicense"]
        for file in song["licenseData"]["externalLicense"]["files"]
        if file["downloadURL"]
    )


@produces(errors.RedirectError)
async def _redirect() -> Produced:
    """A plain API call to a licence link: the API answers 302 to a signed link on the
    files origin, and API calls never follow redirects. The error's ``Location`` header
    holds the signature."""
    async with _client(_fake()) as svc:
        link = yarl.URL(await _licence_link(svc))
        exc = await _raised(svc.request("GET", link.raw_path_qs))
    assert isinstance(exc, errors.RedirectError)
    signed = yarl.URL(exc.headers["Location"])
    return exc, (link.query["t"], signed.query["X-Amz-Signature"])


@produces(errors.SignedURLExpired)
async def _signed_url_expired() -> Produced:
    fake = _fake(url_ttl=60)
    async with _client(fake) as svc:
        entries = await svc.request("POST", "/api/public/v1/event/1/entries", json={})
        url = next(e for e in entries if e["soundRecording"])["soundRecording"]["downloadURL"]
        fake.advance(61)
        exc = await _raised(svc.download(url, io.BytesIO()))
    return exc, (yarl.URL(url).query["X-Amz-Signature"],)


@produces(errors.ResponseDecodeError)
async def _decode() -> Produced:
    async with _client(_fake(faults=FaultConfig(malformed_json=1.0))) as svc:
        return await _raised(svc.jobs.get(1)), ()


@produces(errors.ConnectionLostError)
async def _connection_lost() -> Produced:
    async with _client(_fake(faults=FaultConfig(reset=1.0))) as svc:
        return await _raised(svc.jobs.get(1)), ()


@produces(errors.ResponseTooLargeError)
async def _too_large() -> Produced:
    fake = _fake()
    async with Client(
        "http://fake.invalid",
        token=TOKEN,
        transport=fake.transport(max_body_size=256),
        retry=ONCE,
    ) as svc:
        return await _raised(svc.jobs.search(limit=50)), ()


@produces(errors.ConnectError)
async def _connect_error() -> Produced:
    async with Client(f"http://127.0.0.1:{_closed_port()}", token=TOKEN, retry=ONCE) as svc:
        return await _raised(svc.jobs.get(5)), ()


@produces(errors.ProxyError)
async def _proxy_error() -> Produced:
    password = "proxy-pass-SECRET789"
    proxy = f"http://ops:{password}@127.0.0.1:{_closed_port()}"
    async with Client(
        "http://svc.invalid", token=TOKEN, proxy=proxy, trust_env=False, retry=ONCE
    ) as svc:
        return await _raised(svc.jobs.get(5)), (password,)


@contextlib.asynccontextmanager
async def _silent_server() -> AsyncIterator[int]:
    """A TCP server that accepts and never says a word (a TLS handshake never ends)."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


@produces(errors.ConnectTimeout)
async def _connect_timeout() -> Produced:
    """https to a server that never answers the TLS handshake, with a 0.1 s connect limit
    (opening the connection includes the handshake): real time, but a tenth of a second."""
    async with _silent_server() as port:
        async with Client(f"https://127.0.0.1:{port}", token=TOKEN, retry=ONCE) as svc:
            limit = Timeout(total=5, connect=0.1)
            return await _raised(svc.jobs.get(5, attempt_timeout=limit)), ()


@produces(errors.RequestTimeout, virtual_time=True)
async def _request_timeout() -> Produced:
    fake = _virtual_fake(faults=FaultConfig(latency=3.0))
    async with _client(fake) as svc:
        return await _raised(svc.jobs.get(1, timeout=0.5)), ()


@produces(errors.TransportError)
async def _transport_error() -> Produced:
    """A download whose storage redirects to itself forever: no complete answer, and the
    signed query of the link must not travel."""
    signature = "sig-SECRET-abc123"

    async def loop(request: web.Request) -> web.Response:
        raise web.HTTPFound(str(request.rel_url))

    app = web.Application()
    app.router.add_get("/{tail:.*}", loop)
    async with serve_app(app) as storage:
        async with Client("http://127.0.0.1:9", token=TOKEN, retry=ONCE) as svc:
            url = f"{storage}/rec/a.mp3?X-Amz-Signature={signature}&X-Amz-Expires=60"
            return await _raised(svc.download(url, io.BytesIO())), (signature,)


class _SmugglingAuth:
    """A custom ``Auth`` whose header no transport can send (CR LF in the value)."""

    def secrets(self) -> tuple[str, ...]:
        return (TOKEN,)

    def headers(self) -> Mapping[str, str]:
        return {"Authorization": f"Bearer {TOKEN}\r\nX-Evil: 1"}

    async def flow(self, rejected: Mapping[str, str] | None = None) -> AuthFlow:
        return
        yield


@produces(errors.LocalProtocolError)
async def _local_protocol() -> Produced:
    """Over a loopback socket: aiohttp's refusal (the in-process transport does not check
    header values as aiohttp does; the fake would answer 401)."""
    async with _fake().serve() as url:
        async with Client(url, auth=_SmugglingAuth(), retry=ONCE) as svc:
            return await _raised(svc.jobs.get(1)), ()


@produces(errors.ClientClosedError)
async def _client_closed() -> Produced:
    async with _client(_fake()) as svc:
        pass
    return await _raised(svc.seasons.list()), ()


@produces(errors.WrongEventLoopError)
async def _wrong_loop() -> Produced:
    async with _client(_fake()) as svc:
        await svc.seasons.list()  # binds this loop
        caught: list[BaseException] = []

        def elsewhere() -> None:
            try:
                asyncio.run(svc.seasons.list())
            except BaseException as exc:
                caught.append(exc)

        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
    return caught[0], ()


@produces(errors.JobWaitTimeout, virtual_time=True)
async def _job_wait_timeout() -> Produced:
    fake = _virtual_fake(processing_delay=60.0, rate_limit=None)
    async with _client(fake) as svc:
        job = await svc.jobs.create(_job_request())
        quick = PollPolicy(wait_initial=0.05, wait_max=0.1)
        return await _raised(svc.jobs.wait(job.id, timeout=0.3, policy=quick)), ()


@produces(errors.AmbiguousCreateError, virtual_time=True)
async def _ambiguous_create() -> Produced:
    """The job is created, the answer is lost, and the search index lags past the
    create's deadline: the SDK cannot tell, and raises with the tag."""
    fake = _virtual_fake(faults=FaultConfig(create_cut_off=1.0), search_lag=1000.0)
    async with _client(fake, retry=QUIET) as svc:
        return await _raised(svc.jobs.create(_job_request(), timeout=1.0)), ()


WEBHOOK_SECRET = "whsec_SECRET456"


@produces(errors.WebhookVerificationError)
async def _webhook_verification() -> Produced:
    """A verifier (the receiver's hook for a signature scheme) refusing a delivery: the
    SDK never raises this itself, a verifier does, and the receiver answers 401."""
    refused: list[BaseException] = []

    def verifier(request: Any, body: bytes) -> None:
        try:
            raise errors.WebhookVerificationError("bad signature")
        except errors.WebhookVerificationError as exc:
            refused.append(exc)
            raise

    receiver = WebhookReceiver(WEBHOOK_SECRET, verifier=verifier)
    answer = await receiver.receive(
        b'{"id": 1, "status": "Completed"}', {"key": WEBHOOK_SECRET}, {}
    )
    assert answer.status == 401
    await receiver.aclose()
    return refused[0], (WEBHOOK_SECRET,)


@produces(errors.WebhookPayloadError)
async def _webhook_payload() -> Produced:
    try:
        parse_delivery(b'{"id": 1, "status": 3}')
    except errors.WebhookPayloadError as exc:
        return exc, ()
    raise AssertionError("no error")


@produces(errors.FleetStoreError)
async def _fleet_store() -> Produced:
    password = "hunter2-SECRET"
    url = f"redis://ops:{password}@127.0.0.1:{_closed_port()}/0"
    return await _raised(fleet_status(url, timeout=2)), (password,)


@produces(errors.PacingExceedsDeadline)
async def _pacing() -> Produced:
    """Package-internal (the pipeline turns it into RequestTimeout or RateLimitError), but
    an exception class of the module all the same: the pacer's, when the budget is spent
    for 30 s and the caller's deadline is 1 s away (raised at once, no wait)."""
    pacer = Pacer()
    assert pacer.admit()
    pacer.release(
        CIMultiDictProxy(
            CIMultiDict(
                {"x-ratelimit-limit": "1", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "30"}
            )
        ),
        200,
    )
    return await _raised(pacer.acquire(pacer.clock.now() + 1.0)), ()


@produces(errors.LeafError)
async def _leaf() -> Produced:
    """Package-internal (``structure`` turns it into ResponseDecodeError with a path): a
    leaf rule of the converter refusing a count that is not an integer."""
    try:
        get_converter().structure({"results": [], "count": "x"}, JobSearchResults)
    except errors.LeafError as exc:
        return exc, ()
    raise AssertionError("no error")


@produces(errors.SvcError)
async def _svc_error() -> Produced:
    """The root is never raised bare by the SDK; a subclass defined by an application
    (``except SvcError`` catches it) pickles the same way."""
    return _AppError("the application's own failure"), ()


class _AppError(errors.SvcError):
    """An application's subclass: ``type(back) is _AppError`` after the trip."""


# ------------------------------------------------------------------ the checks


FIELDS = (
    "status",
    "body",
    "headers",
    "method",
    "url",
    "error",
    "message",
    "issues",
    "request_id",
    "retry_after",
    "tag",
    "maybe_sent",
    "proxy",
    "refused",
    "path",
    "job",
    "request",
    "wait",
    "where",
)


def _plain(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` as the pickle carries them: a dict of str, repeats joined, credentials
    and the query values of a redirect's target hidden."""
    plain: dict[str, str] = {}
    for key, value in headers.items():
        name = str(key)
        if is_sensitive_header(name):
            value = REDACTED
        elif name.lower() in ("location", "content-location") and "?" in value:
            value = redact_url(value)
        plain[name] = f"{plain[name]}, {value}" if name in plain else value
    return plain


def _check_field(name: str, before: Any, after: Any) -> None:
    if name == "headers":
        assert type(after) is dict and all(type(k) is str for k in after), after
        assert after == _plain(before)
    elif name == "request" and before is not None:
        shown, kept = before.describe(), after.describe()
        assert (kept["method"], kept["url"]) == (shown["method"], shown["url"])
        assert list(kept["headers"]) == list(shown["headers"])
        for header in ("User-Agent", "Accept", "X-Request-Id"):
            assert kept["headers"].get(header) == shown["headers"].get(header)
        assert kept["headers"].get("Authorization", REDACTED) == REDACTED
        assert after.content is None and after.timeout is None
    elif name == "job" and before is not None:
        assert type(after) is type(before) and after.id == before.id
        assert after.status == before.status
    else:
        assert after == before, name


def _cases() -> Iterator[Any]:
    for cls in _exception_classes():
        marks = [pytest.mark.looptime] if cls in ON_VIRTUAL_TIME else []
        yield pytest.param(cls, id=cls.__name__, marks=marks)


def test_every_exception_class_has_a_real_failure() -> None:
    found = set(_exception_classes())
    assert found - set(PRODUCERS) == set(), "an exception class without a producer here"
    assert set(PRODUCERS) - found == set()
    assert len(found) >= 29


@pytest.mark.parametrize("cls", list(_cases()))
async def test_a_real_failure_travels_whole_and_without_secrets(
    cls: type[BaseException],
) -> None:
    exc, secrets = await PRODUCERS[cls]()
    assert isinstance(exc, cls)
    if cls is not errors.SvcError:
        assert type(exc) is cls, f"{cls.__name__} wanted, {type(exc).__name__}: {exc}"
    data = pickle.dumps(exc)
    back = pickle.loads(data)
    assert type(back) is type(exc)
    assert str(back) == str(exc) and back.args == exc.args
    assert "HTTP HTTP" not in str(back)
    for name in FIELDS:
        if hasattr(exc, name):
            _check_field(name, getattr(exc, name), getattr(back, name))
    for name in vars(exc):
        assert hasattr(back, name), name
    if isinstance(exc, errors.APIError):  # every answer came through the pipeline
        assert back.request_id is not None
    cause = exc.__cause__
    if isinstance(cause, errors.SvcError):
        assert type(back.__cause__) is type(cause) and str(back.__cause__) == str(cause)
    for secret in (TOKEN, *secrets):
        assert secret.encode() not in data, f"{secret} travels in the pickle of {cls.__name__}"
        assert secret not in str(exc)
    # ... and once more: what came back pickles to the same bytes.
    assert pickle.loads(pickle.dumps(back)).args == exc.args


async def test_a_redirect_keeps_its_target_without_the_signature() -> None:
    exc, _ = await _redirect()
    back = pickle.loads(pickle.dumps(exc))
    location = yarl.URL(back.headers["Location"])
    assert location.host == "files.fake.invalid" and location.query["X-Amz-Signature"] == REDACTED


@pytest.mark.looptime
async def test_an_ambiguous_create_is_settled_in_another_worker_by_its_tag() -> None:
    """What a task queue does with it: the error pickled in one worker, its tag looked up
    by another client (once the search index has caught up)."""
    fake = _virtual_fake(faults=FaultConfig(create_cut_off=1.0), search_lag=1000.0)
    async with _client(fake, retry=QUIET) as svc:
        exc = await _raised(svc.jobs.create(_job_request(), timeout=1.0))
    assert isinstance(exc, errors.AmbiguousCreateError)
    back = pickle.loads(pickle.dumps(exc))
    assert isinstance(back, errors.AmbiguousCreateError) and back.tag == exc.tag
    assert isinstance(back.__cause__, errors.ConnectionLostError)
    fake.search_lag = 0.0
    async with _client(fake) as worker:
        job = await worker.jobs.find_created(back.tag)
    assert job is not None and back.tag in job.tags


# ------------------------------------------------------------------ across a process


def _rate_limited_in_a_child() -> None:
    """Run in a spawned process: a real 429 from the fake, raised to the parent."""
    exc, _ = asyncio.run(_rate_limited())
    raise exc


@pytest.mark.slow
def test_an_error_raised_in_a_spawned_process_arrives_whole() -> None:
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
        future = pool.submit(_rate_limited_in_a_child)
        with pytest.raises(errors.RateLimitError) as info:
            future.result(timeout=60)
    exc = info.value
    assert exc.status == 429 and exc.retry_after == 30
    assert type(exc.headers) is dict and exc.headers["Retry-After"] == "30"
    assert exc.request_id is not None and str(exc).startswith("HTTP 429 for GET ")


async def test_a_credential_under_a_header_name_of_ones_choice_stays_behind() -> None:
    """``HeaderAuth`` may put the credential under any name: of the failed request's
    headers only the SDK's plain ones travel in clear."""
    async with Client(
        f"http://127.0.0.1:{_closed_port()}", auth=HeaderAuth("X-Tenant", TOKEN), retry=ONCE
    ) as svc:
        exc = await _raised(svc.jobs.get(5))
    assert isinstance(exc, errors.ConnectError)
    data = pickle.dumps(exc)
    assert TOKEN.encode() not in data
    back = pickle.loads(data)
    assert back.request.headers["X-Tenant"] == REDACTED
    assert back.request.headers["X-Request-Id"] == exc.request.headers["X-Request-Id"]


@pytest.mark.parametrize(
    "name",
    [
        "Set-Cookie",
        "Authorization",
        "X-Api-Key",
        "X-Upload-Token",
        "X-Amz-Signature",
        "Date",
        "Retry-After",
        "X-Request-Id",
        "x-ratelimit-remaining",
        "Proxy-Authenticate",
        "Content-Type",
    ],
)
def test_the_pickle_hides_the_response_headers_redact_calls_sensitive(name: str) -> None:
    exc = errors.ServerError(503, headers=CIMultiDictProxy(CIMultiDict({name: "v"})))
    back = pickle.loads(pickle.dumps(exc))
    assert back.headers == {name: REDACTED if is_sensitive_header(name) else "v"}
