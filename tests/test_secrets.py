"""No token, key secret, refresh token or signature in any log line, repr or error."""

from __future__ import annotations

import io
import logging
from typing import Any

import pytest

from svc_async import (
    ApiKeyAuth,
    Client,
    ConnectionLostError,
    HeaderAuth,
    MockTransport,
    Request,
    Response,
    RetryPolicy,
    SvcError,
    json_response,
)
from svc_async.redact import redact_headers, redact_text, redact_url

from .conftest import load

SECRETS = ["KEY-SECRET-123", "ACCESS-TOKEN-456", "REFRESH-TOKEN-789", "SIGNATURE-abc", "JWT-t0ken"]
SIGNED = "https://storage.example/rec.mp3?X-Amz-Credential=AKIA&X-Amz-Signature=SIGNATURE-abc&token=JWT-t0ken"


def _handler() -> Any:
    state = {"calls": 0}

    def handler(request: Request) -> Response:
        state["calls"] += 1
        path = request.url.path
        if path == "/api/auth/api-key/login":
            return json_response(
                {"accessToken": "ACCESS-TOKEN-456", "refreshToken": "REFRESH-TOKEN-789"}
            )
        if path == "/api/auth/access-token/refresh":
            return json_response({"statusCode": 401, "error": f"bad refresh {request.json()}"}, 401)
        if path == "/api/public/v1/season":
            if state["calls"] % 3 == 0:
                raise ConnectionLostError(
                    f"reset while sending Authorization: {request.headers['Authorization']}"
                )
            return Response(status=502, content=f"<html>upstream said {SIGNED}</html>".encode())
        if path.startswith("/rec"):
            return Response(status=403, content=b"expired")
        job = load("get-verification-job.response.json")
        job["recording"]["downloadURL"] = SIGNED
        return json_response(job)

    return handler


async def test_nothing_secret_reaches_logs_reprs_or_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    auth = ApiKeyAuth("key-id", "KEY-SECRET-123")
    transport = MockTransport(_handler())
    policy = RetryPolicy(attempts=3, wait_initial=0, wait_max=0)
    async with Client("https://api.example", auth=auth, transport=transport, retry=policy) as svc:
        job = await svc.jobs.get(4)
        for call in (svc.seasons.list(), svc.download(SIGNED, io.BytesIO())):
            try:
                await call
            except SvcError as exc:
                texts += [str(exc), repr(exc)]
                request = getattr(exc, "request", None)
                if request is not None:
                    texts += [repr(request), str(request.describe())]
        texts += [repr(svc), repr(auth), repr(transport), repr(svc.jobs)]
        texts += [repr(r) for r in transport.requests]
        texts += [str(r.describe()) for r in transport.requests]
    assert job.recording is not None and job.recording.download_url == SIGNED  # data is untouched
    texts += [record.getMessage() for record in caplog.records]
    assert len(texts) > 10
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, f"{secret} leaked in {text!r}"


def test_redaction_helpers() -> None:
    assert "SIGNATURE-abc" not in redact_url(SIGNED)
    assert "X-Amz-Signature=" in redact_url(SIGNED)
    assert redact_url("https://user:pw@h.example/p") == "https://h.example/p"
    assert redact_headers({"Authorization": "Bearer x", "Accept": "a"}) == {
        "Authorization": "[REDACTED]",
        "Accept": "a",
    }
    text = redact_text('Authorization: Bearer abc.def and {"refreshToken": "r-1"} at ' + SIGNED)
    assert "abc.def" not in text
    assert "r-1" not in text
    assert "SIGNATURE-abc" not in text
    assert redact_text("secret KEY-SECRET-123 here", ["KEY-SECRET-123"]) == "secret [REDACTED] here"


async def test_a_credential_under_a_name_of_its_own_is_hidden_when_described() -> None:
    """``HeaderAuth`` and ``extra_headers`` may carry a credential under any name: a
    request described for a log shows only the SDK's own headers in clear."""
    transport = MockTransport(_handler())
    auth = HeaderAuth("X-Tenant", "TENANT-SECRET-9")
    async with Client("https://api.example", auth=auth, transport=transport) as svc:
        await svc.jobs.get(4, extra_headers={"X-Partner": "PARTNER-SECRET-7"})
    (request,) = transport.requests
    shown = request.describe()
    assert "TENANT-SECRET-9" not in str(shown) and "PARTNER-SECRET-7" not in str(shown)
    assert shown["headers"]["X-Tenant"] == "[REDACTED]"
    assert shown["headers"]["User-Agent"].startswith("svc-async")  # the SDK's own stay
    assert request.headers["X-Tenant"] == "TENANT-SECRET-9"  # what is sent is untouched
