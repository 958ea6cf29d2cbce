"""Which proxy a request goes through, and how a proxy's failure reads: for both transports.

``Proxies.configure(proxy, trust_env)`` gives each request's ``Route`` (None: direct):

* ``proxy="http://user:password@host:port"`` sends every request through that proxy;
* otherwise, with ``trust_env`` (the default, as in requests and httpx), ``HTTPS_PROXY``
  for ``https://`` URLs and ``HTTP_PROXY`` for ``http://`` ones (either case; a value
  without a scheme is ``http://``), unless ``NO_PROXY`` names the host (suffix match,
  ``host:port``, or ``*`` for every host: the standard library's rule, which aiohttp
  and requests follow too). ``ALL_PROXY`` is not read. The environment is read once, when the
  transport is made.

Proxies are ``http://`` (an ``https://`` URL is tunnelled with ``CONNECT``) or
``https://`` ones; credentials in the proxy URL go in a ``Proxy-Authorization`` header
and never show in a message. Both transports route with this module and raise the same
``ProxyError``: ``proxy_refused`` when the proxy answered no, ``proxy_unreachable`` when
it could not be reached.

The routing is ours because aiohttp's ``ClientSession(trust_env=True)`` breaks its
promise to take the proxy from the environment: it ignores https proxies
(``helpers.proxies_from_env`` drops an ``https://`` proxy URL with the warning "HTTPS
proxies ... are not supported, ignoring", though ``proxy=`` speaks to one), and it
reads ``.netrc`` for the service's credentials as well as the proxy's. So the session
keeps ``trust_env=False``, and both transports read the environment through this module
(httpx's connection pools, which ``HttpxTransport`` drives directly, read no proxy).
"""

from __future__ import annotations

import base64
import functools
import logging
import urllib.request
from http import HTTPStatus

import yarl

from ..errors import ProxyError
from ..redact import redact_text, redact_url
from .base import Request, secrets_of, where

__all__ = ["Proxies", "Route", "bypassed", "proxy_refused", "proxy_unreachable"]

_log = logging.getLogger(__name__)

SCHEMES = frozenset({"http", "https"})
"""The proxies both transports speak."""


class Route:
    """One proxy: its URL without credentials, the header carrying them, how it shows,
    and the ``secrets`` no message of its may hold (a proxy may echo them back)."""

    __slots__ = ("headers", "secrets", "shown", "url")

    def __init__(self, url: yarl.URL) -> None:
        self.url = url.with_user(None).with_query(None).with_fragment(None)
        self.headers: dict[str, str] | None = None
        self.secrets: tuple[str, ...] = ()
        if url.user is not None:
            token = base64.b64encode(f"{url.user}:{url.password or ''}".encode()).decode()
            self.headers = {"Proxy-Authorization": "Basic " + token}
            self.secrets = (token, url.password or "", url.raw_password or "")
        self.shown = redact_url(self.url)

    def __repr__(self) -> str:
        return f"<Route {self.shown}>"


def proxy_url(value: str | yarl.URL, where: str = "proxy") -> yarl.URL:
    """``value`` as a proxy URL (``http`` when it names no scheme); else ``ValueError``
    (``TypeError`` for neither a str nor a ``yarl.URL``)."""
    if not isinstance(value, str | yarl.URL):
        raise TypeError(f"{where} must be a str or a yarl.URL, got {type(value).__name__}")
    text = str(value).strip()
    if text and "://" not in text:
        text = "http://" + text
    try:
        url = yarl.URL(text)
    except (ValueError, TypeError):
        url = None
    if url is None or url.scheme not in SCHEMES or not url.host:
        raise ValueError(
            f"{where} must be an http:// or https:// proxy URL with a host, got"
            f" {redact_url(text)!r}"
        )
    return url


class Proxies:
    """The proxy of each request: ``proxy=`` for all, else the environment's per scheme."""

    __slots__ = ("_cache", "_env", "_explicit", "_no_proxy")

    def __init__(self, explicit: Route | None, env: dict[str, Route], no_proxy: str | None) -> None:
        self._explicit = explicit
        self._env = env
        self._no_proxy = no_proxy
        self._cache = functools.lru_cache(maxsize=256)(self._decide)

    @classmethod
    def configure(cls, proxy: str | yarl.URL | None, trust_env: bool) -> Proxies | None:
        """The routing for these settings; None when every request goes direct."""
        if proxy is not None:
            return cls(Route(proxy_url(proxy)), {}, None)
        if not trust_env:
            return None
        found = urllib.request.getproxies_environment()
        env = {}
        for scheme in sorted(SCHEMES):
            value = found.get(scheme)
            if not value:
                continue
            try:
                env[scheme] = Route(proxy_url(value, f"{scheme.upper()}_PROXY"))
            except ValueError as exc:
                _log.warning("%s; it is ignored", exc)
        return cls(None, env, found.get("no")) if env else None

    def __repr__(self) -> str:
        if self._explicit is not None:
            return f"<Proxies all via {self._explicit.shown}>"
        shown = ", ".join(f"{k}: {v.shown}" for k, v in sorted(self._env.items()))
        return f"<Proxies {shown}; no_proxy={self._no_proxy!r}>"

    def route(self, url: yarl.URL) -> Route | None:
        """The proxy ``url`` goes through, or None to go direct (cached per origin)."""
        return self._cache(url.scheme, url.host, url.port)

    def _decide(self, scheme: str, host: str | None, port: int | None) -> Route | None:
        if self._explicit is not None:
            return self._explicit
        route = self._env.get(scheme)
        if route is None or not host:
            return None
        if self._no_proxy and bypassed(host, port, self._no_proxy):
            return None
        return route


def bypassed(host: str, port: int | None, no_proxy: str) -> bool:
    """Whether ``NO_PROXY`` names ``host``: the standard library's rule (urllib's).

    Each comma-separated entry, lowercased and without a leading dot, matches the host
    itself or any host below it (``example.com`` and ``.example.com`` both match
    ``api.example.com``), with or without the port (``localhost:8080``); ``*`` matches
    every host.
    """
    host = host.lower()
    names = (host, f"{host}:{port}") if port is not None else (host,)
    for entry in no_proxy.split(","):
        name = entry.strip().lstrip(".").lower()
        if name == "*":
            return True
        if name and any(h == name or h.endswith("." + name) for h in names):
            return True
    return False


def proxy_unreachable(route: Route, request: Request, reason: str) -> ProxyError:
    """The error of a request whose proxy could not be reached (retried like a connect)."""
    return ProxyError(
        f"cannot connect to proxy {route.shown}: {reason} ({where(request)})",
        request=request,
        proxy=route.shown,
    )


_HINTS = {
    407: " (the proxy wants credentials: give them in its URL, http://user:password@host:port)",
    403: " (the proxy does not allow this destination)",
}


def proxy_refused(
    route: Route | None, request: Request, status: int, reason: str = ""
) -> ProxyError:
    """The error of a request the proxy answered with ``status`` instead of passing it on.

    A 4xx is a refusal (never retried); a 5xx says the proxy could not reach the service.
    """
    try:
        phrase = reason or HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    secrets = [*(route.secrets if route is not None else ()), *secrets_of(request)]
    phrase = " ".join(redact_text(phrase, secrets).split())[:80]
    shown = route.shown if route is not None else "the proxy"
    verb = "refused" if status < 500 else "could not pass on"
    return ProxyError(
        f"proxy {shown} {verb} {where(request)}: HTTP {status} {phrase}".rstrip()
        + _HINTS.get(status, ""),
        request=request,
        proxy=shown,
        status=status,
    )
