"""A service that cannot be reached reads as one plain sentence, in the SDK and the CLI."""

from __future__ import annotations

import errno
import socket
import ssl

import aiohttp
import pytest
import yarl
from aiohttp.client_reqrep import ConnectionKey

from svc_async import AiohttpTransport, ConnectError, Request, Timeout
from svc_async._transports.aiohttp import _wrap_error
from svc_async.cli import ExitCode, main
from svc_async.redact import redact_text


def _closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _request(url: str) -> Request:
    return Request("GET", yarl.URL(url), {}, None, Timeout(total=5.0))


def _connector_error(cls: type[aiohttp.ClientConnectorError], os_error: OSError) -> BaseException:
    key = ConnectionKey("svc.example", 443, True, True, None, None, None)
    return cls(key, os_error)


async def test_a_refused_connection_names_the_origin_and_says_refused() -> None:
    port = _closed_port()
    transport = AiohttpTransport()
    try:
        with pytest.raises(ConnectError) as caught:
            await transport.send(_request(f"http://127.0.0.1:{port}/api/orgs/me?token=s3cret"))
    finally:
        await transport.aclose()
    assert str(caught.value) == (
        f"cannot connect to http://127.0.0.1:{port}: connection refused (GET /api/orgs/me)"
    )


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (
            _connector_error(
                aiohttp.ClientConnectorDNSError,
                socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
            ),
            "host not found (Name or service not known)",
        ),
        (
            _connector_error(
                aiohttp.ClientConnectorError, OSError(errno.ENETUNREACH, "Network is unreachable")
            ),
            "network is unreachable",
        ),
        (
            _connector_error(
                aiohttp.ClientConnectorError, OSError(errno.ETIMEDOUT, "Connection timed out")
            ),
            "connection timed out",
        ),
        (
            _connector_error(
                aiohttp.ClientConnectorCertificateError,  # type: ignore[arg-type]
                ssl.SSLCertVerificationError(1, "certificate verify failed: self-signed"),
            ),
            "TLS certificate not trusted",
        ),
    ],
)
def test_each_kind_of_connect_failure_reads_as_one_plain_reason(
    error: BaseException, reason: str
) -> None:
    wrapped = _wrap_error(error, _request("https://user:pw@svc.example/api/x"))
    assert isinstance(wrapped, ConnectError)
    assert str(wrapped) == f"cannot connect to https://svc.example: {reason} (GET /api/x)"
    assert "\n" not in str(wrapped)


def test_the_cli_reports_a_service_that_is_down_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, no_backoff: None
) -> None:
    # no_backoff: the refused connects are retried at once (the line comes after the last)
    for name in ("SVC_ACCOUNT_URL", "SVC_API_KEY_ID", "SVC_API_KEY_SECRET"):
        monkeypatch.delenv(name, raising=False)
    port = _closed_port()
    code = main(["--base-url", f"http://127.0.0.1:{port}", "--token", "t0k3n", "orgs"])
    out, err = capsys.readouterr()
    assert code == ExitCode.NETWORK
    assert out == ""
    assert err == (
        f"svc-async: error: network: cannot connect to http://127.0.0.1:{port}:"
        " connection refused (GET /api/orgs/me)\n"
    )


def test_every_address_refused_reads_as_refused() -> None:
    """``localhost`` tries ::1 and 127.0.0.1; asyncio joins the two refusals in one OSError."""
    os_error = OSError(
        "Multiple exceptions: [Errno 111] Connect call failed ('::1', 9, 0, 0),"
        " [Errno 111] Connect call failed ('127.0.0.1', 9)"
    )
    wrapped = _wrap_error(
        _connector_error(aiohttp.ClientConnectorError, os_error),
        _request("http://localhost:9/api/x"),
    )
    assert str(wrapped) == "cannot connect to http://localhost:9: connection refused (GET /api/x)"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "cannot connect to http://127.0.0.1:9: refused",
            "cannot connect to http://127.0.0.1:9: refused",
        ),
        ("(see https://h.example/a?sig=abc)", "(see https://h.example/a?sig=[REDACTED])"),
        ("got https://h.example/a?sig=abc.", "got https://h.example/a?sig=[REDACTED]."),
        ("x https://h.example/a?sig=abc,def y", "x https://h.example/a?sig=[REDACTED] y"),
    ],
)
def test_redacted_text_keeps_a_url_apart_from_the_punctuation_after_it(
    text: str, shown: str
) -> None:
    assert redact_text(text) == shown
