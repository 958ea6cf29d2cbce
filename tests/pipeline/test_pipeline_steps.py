"""The pipeline's steps, each alone: an auth flow driven by the loop, an attempt's outcome,
an ambiguous outcome handed back, observers that hear every step and never run the call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import yarl

from svc_async import (
    AuthenticationError,
    Client,
    ConnectionLostError,
    MockTransport,
    Request,
    Response,
    RetryPolicy,
    ServerError,
    Timeout,
    json_response,
)
from svc_async._pipeline.run import _NO_DATA, Ambiguous, Call, CallWatch, _outcome, run
from svc_async.auth import AccountRequest, AuthFlow
from svc_async.errors import ResponseDecodeError, SvcError

API = "https://verify.example"
ACCOUNT = "https://account.example"


class _TwoStepAuth:
    """A hand-written auth whose login takes two account requests, the first refused once
    (the failure is thrown into the flow, which retries it with another body)."""

    def __init__(self) -> None:
        self.token: str | None = None
        self.seen: list[Any] = []

    def secrets(self) -> tuple[str, ...]:
        return (self.token,) if self.token else ()

    def headers(self) -> Mapping[str, str] | None:
        return None if self.token is None else {"Authorization": f"Bearer {self.token}"}

    async def flow(self, rejected: Mapping[str, str] | None = None) -> AuthFlow:
        if rejected is None and self.token is not None:
            return
        try:
            challenge = yield AccountRequest("/api/auth/challenge", {"n": 1})
        except AuthenticationError:
            challenge = yield AccountRequest("/api/auth/challenge", {"n": 2})
        self.seen.append(challenge)
        answer = yield AccountRequest("/api/auth/answer", {"c": challenge["c"]})
        self.seen.append(answer)
        self.token = answer["token"]


def _call(*, redirects: bool = False) -> Call:
    url = yarl.URL(API + "/api/x")
    return Call(
        method="GET",
        url=url,
        content=None,
        idempotent=True,
        timeout=None,
        attempt_timeout=Timeout(),
        policy=RetryPolicy(),
        redirects=redirects,
    )


_LOST = ConnectionLostError("lost")


@pytest.mark.parametrize(
    ("status", "redirects", "data", "failure", "expected"),
    [
        (200, False, _NO_DATA, None, (True, {"id": 7}, None)),  # decoded now
        (200, False, ["streamed"], None, (True, ["streamed"], None)),  # kept
        (302, True, _NO_DATA, None, (True, {"id": 7}, None)),  # a redirect it takes
        (302, False, _NO_DATA, None, (False, None, None)),
        (503, False, _NO_DATA, None, (False, None, None)),
        (None, False, _NO_DATA, _LOST, (False, None, _LOST)),  # no answer at all
    ],
)
def test_an_attempts_outcome_is_a_success_with_its_data_or_not(
    status: int | None, redirects: bool, data: Any, failure: SvcError | None, expected: Any
) -> None:
    response = None if status is None else json_response({"id": 7}, status=status)
    answered, got, failed = _outcome(_call(redirects=redirects), response, data, failure)
    assert (answered is not None, got, failed) == expected
    assert answered is None or answered is response


def test_an_undecodable_success_is_a_decode_failure() -> None:
    response = Response(200, {"Content-Type": "application/json"}, b"<html>oops</html>")
    answered, data, failure = _outcome(_call(), response, _NO_DATA, None)
    assert answered is None and data is None and isinstance(failure, ResponseDecodeError)


def _server(log: list[str]) -> MockTransport:
    def handle(request: Request) -> Response:
        log.append(f"{request.method} {request.url.host}{request.url.path}")
        body = request.json() if request.content else None
        if request.url.path == "/api/auth/challenge":
            if body == {"n": 1}:
                return json_response({"error": "nope"}, status=401)
            return json_response({"c": "xyz"})
        if request.url.path == "/api/auth/answer":
            assert "Authorization" not in request.headers  # the account calls carry none
            return json_response({"token": "t-" + body["c"]})
        assert request.headers["Authorization"] == "Bearer t-xyz"
        return json_response([])

    return MockTransport(handle)


async def test_an_auth_flow_is_driven_by_the_pipeline() -> None:
    log: list[str] = []
    auth = _TwoStepAuth()
    async with Client(API, auth=auth, account_url=ACCOUNT, transport=_server(log)) as svc:
        assert await svc.seasons.list() == []
        assert await svc.seasons.list() == []  # logged in: no flow requests this time
    assert log == [
        "POST account.example/api/auth/challenge",  # refused: thrown into the flow
        "POST account.example/api/auth/challenge",
        "POST account.example/api/auth/answer",
        "GET verify.example/api/public/v1/season",
        "GET verify.example/api/public/v1/season",
    ]
    assert auth.seen == [{"c": "xyz"}, {"token": "t-xyz"}]


async def test_a_flow_that_leaves_no_credentials_is_an_authentication_error() -> None:
    class Hopeless(_TwoStepAuth):
        async def flow(self, rejected: Mapping[str, str] | None = None) -> AuthFlow:
            return
            yield

    transport = MockTransport(lambda request: json_response([]))
    async with Client(API, auth=Hopeless(), transport=transport) as svc:
        with pytest.raises(AuthenticationError, match="no credentials"):
            await svc.seasons.list()
    assert transport.requests == []  # nothing was sent without credentials


def _lost(request: Request) -> Response:
    raise ConnectionLostError("dropped after sending", request=request)


async def test_an_ambiguous_failure_is_handed_back_not_settled_below() -> None:
    async with Client(API, token="t", transport=MockTransport(_lost), timeout=5) as svc:
        call = Call(
            method="POST",
            url=svc._url("api", "/api/verification-jobs"),
            content=b"{}",
            idempotent=False,
            timeout=5.0,
            attempt_timeout=svc._attempt_timeout,
            policy=RetryPolicy(),
            operation="jobs.create",
            ambiguous=True,
        )
        outcome = await run(svc._shared.env, call)
    assert isinstance(outcome, Ambiguous)
    assert isinstance(outcome.failure, ConnectionLostError)
    assert outcome.deadline is not None  # the caller settles it by the call's deadline


class _Recorder:
    """An observer writing down what it hears."""

    def __init__(self) -> None:
        self.heard: list[tuple[Any, ...]] = []

    def start(self, call: Call, secrets: tuple[str, ...]) -> CallWatch:
        self.heard.append(("start", call.operation))
        heard = self.heard

        class Watch:
            def request(self, request: Request) -> None:
                heard.append(("request", request.method, request.url.path))

            def attempt(
                self, number: int, response: Response | None, failure: SvcError | None
            ) -> None:
                heard.append(("attempt", number, None if response is None else response.status))

            def paced(self, seconds: float) -> None:
                heard.append(("paced",))

            def retrying(self, attempt: int, wait: float, reason: str) -> None:
                heard.append(("retrying", attempt, reason))

            def end(self, error: BaseException | None) -> None:
                heard.append(("end", type(error).__name__ if error else None))

        return Watch()


async def test_observers_hear_each_step_in_order(no_backoff: Any) -> None:
    answers = iter([json_response({"e": 1}, status=503), json_response([])])
    transport = MockTransport(lambda request: next(answers))
    recorder = _Recorder()
    async with Client(API, token="t", transport=transport) as svc:
        svc._shared.env.observers = (recorder,)
        assert await svc.seasons.list() == []
    assert recorder.heard == [
        ("start", "seasons.list"),
        ("request", "GET", "/api/public/v1/season"),
        ("attempt", 1, 503),
        ("retrying", 2, "HTTP 503"),
        ("request", "GET", "/api/public/v1/season"),
        ("attempt", 2, 200),
        ("end", None),
    ]


async def test_observers_hear_the_end_of_a_failed_call(no_backoff: Any) -> None:
    transport = MockTransport(lambda request: json_response({"e": 1}, status=500))
    recorders = [_Recorder(), _Recorder()]
    async with Client(API, token="t", transport=transport, retry=RetryPolicy(attempts=1)) as svc:
        svc._shared.env.observers = tuple(recorders)
        with pytest.raises(ServerError):
            await svc.seasons.list()
    for recorder in recorders:  # every observer hears every step
        assert recorder.heard[-1] == ("end", "ServerError")
        assert [h[0] for h in recorder.heard] == ["start", "request", "attempt", "end"]


def test_an_auth_of_the_old_shape_is_refused_with_a_clear_error() -> None:
    class OldAuth:
        async def headers(self, call: Any) -> Mapping[str, str]:
            return {}

        async def renew(self, call: Any, rejected: Mapping[str, str]) -> bool:
            return False

    with pytest.raises(TypeError, match=r"headers\(\) and flow\(\)"):
        Client(API, auth=OldAuth())  # type: ignore[arg-type]
