"""The Redis client a fleet URL names, with the fleet's short timeouts.

The URL forms (``[...]`` optional; a user or password with ``@ : / ? # % ,`` in it is
percent-encoded, as in any URL):

``redis://[[user]:password@]host[:port][/db]``
    One server (port 6379, database 0 by default). ``rediss://`` is the same over TLS.
``unix://[[user]:password@]/path/to/redis.sock[?db=N]``
    One server on a Unix socket.
``redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/<master>[/db]``
    The master that the Sentinels (port 26379 by default) name ``<master>``, asked
    again after a failover. The user and password are the master's (and its
    replicas'); a Sentinel with a password of its own takes ``?sentinel_password=...``
    (and ``&sentinel_username=...``). ``rediss+sentinel://`` speaks TLS to the
    Sentinels and the master alike.
``redis+cluster://[[user]:password@]host[:port][,host[:port]...]``
    A Redis Cluster, found from any of the nodes given (port 6379 by default; database
    0 only). ``rediss+cluster://`` over TLS.

Query options: ``ssl_ca_certs``, ``ssl_certfile``, ``ssl_keyfile``, ``ssl_password``
(file paths and the key's passphrase; not for a Cluster), ``ssl_cert_reqs``
(``required``, the default; ``optional``; ``none``) and ``ssl_check_hostname``
(``true``/``false``) with a TLS scheme only; ``sentinel_username`` and
``sentinel_password`` with a Sentinel scheme only; ``client_name`` with any, and ``db``
with ``redis``, ``rediss`` and ``unix``. Anything else is a ``ValueError``: the fleet
sets its own timeouts and retries.

No error message, repr or log line shows a password or a query value: ``describe``
gives a URL fit to show.

The parser is ours because no library parses ``redis+sentinel://`` or
``redis+cluster://`` (redis-py's ``parse_url`` knows ``redis``, ``rediss`` and ``unix``
only). The same parser reads those three too: redis-py's passes any unknown query
option on to the connection as a keyword (``?socket_timeout=60`` would undo the fleet's
short timeouts) and takes a database path that is not a number as database 0, where a
fleet URL must be refused, saying why.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Literal
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit

import attrs

SCHEMES = (
    "redis://",
    "rediss://",
    "unix://",
    "redis+sentinel://",
    "rediss+sentinel://",
    "redis+cluster://",
    "rediss+cluster://",
)
"""The URL schemes a fleet accepts."""

_TLS_OPTIONS = frozenset(
    {"ssl_ca_certs", "ssl_certfile", "ssl_keyfile", "ssl_password", "ssl_cert_reqs"}
)
_TLS_OPTIONS |= {"ssl_check_hostname"}
_SENTINEL_OPTIONS = frozenset({"sentinel_username", "sentinel_password"})
_CERT_REQS = ("required", "optional", "none")
_BOOLS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}

Kind = Literal["server", "sentinel", "cluster"]


@attrs.frozen(repr=False)
class Target:
    """What a fleet URL names (``parse_url``); its repr shows no secret."""

    kind: Kind
    tls: bool
    nodes: tuple[tuple[str, int], ...]
    """Host and port of each server, Sentinel or cluster node (none for a socket)."""
    socket: str | None
    master: str | None
    db: int
    username: str | None
    password: str | None
    options: Mapping[str, Any]
    """``ssl_*`` (TLS schemes), ``sentinel_*`` (Sentinel schemes), ``client_name``."""

    def __repr__(self) -> str:
        nodes = ",".join(f"{host}:{port}" for host, port in self.nodes) or self.socket
        return f"<Target {self.kind}{' tls' if self.tls else ''} {nodes}>"


def check_url(url: object) -> str:
    """``url`` if it is a fleet URL; ``TypeError``/``ValueError`` saying what is wrong."""
    parse_url(url)
    assert isinstance(url, str)
    return url


def describe(url: str) -> str:
    """``url`` fit for a log line: no user or password, every query value hidden."""
    scheme, sep, _ = url.partition("://")
    if not sep or "@" in _after_authority(url):
        return "[REDACTED]"
    parts = urlsplit(url)
    hosts = parts.netloc.rpartition("@")[2]
    shown = f"{scheme}://{hosts}{parts.path}"
    if parts.query:
        names = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True)]
        shown += "?" + "&".join(f"{name}=[REDACTED]" for name in names)
    return shown


def _after_authority(url: str) -> str:
    """The part of ``url`` after its host(s): the path, query and fragment."""
    rest = url.partition("://")[2]
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    return rest[cut:]


def parse_url(url: object) -> Target:
    """What ``url`` names; ``TypeError``/``ValueError`` (never quoting it) if it is not
    a fleet URL of one of the forms in the module docstring."""
    parts = _split(url)
    base, _, variant = parts.scheme.lower().partition("+")
    kind = _KINDS[variant]
    tls = base == "rediss"
    userinfo, _, hosts = parts.netloc.rpartition("@")
    username, password = _userinfo(userinfo)
    options = _options(parts.query, kind=kind, tls=tls)
    db = options.pop("db", 0)
    path = unquote(parts.path)
    if base == "unix":
        socket = _socket_path(hosts, path)
        return Target(kind, tls, (), socket, None, db, username, password, options)
    nodes = _nodes(hosts, base, kind)
    master, db = _master_and_db(path, kind, parts.scheme, db)
    return Target(kind, tls, nodes, None, master, db, username, password, options)


_KINDS: dict[str, Kind] = {"": "server", "sentinel": "sentinel", "cluster": "cluster"}
"""The kind of target a scheme's ``+variant`` names (none: one server)."""


def _split(url: object) -> SplitResult:
    """``url`` split into its parts, once its scheme and form are checked."""
    if not isinstance(url, str):
        raise TypeError("fleet must be a Redis URL string")
    scheme = url.partition("://")[0].lower() + "://"
    if "://" not in url or scheme not in SCHEMES:
        raise ValueError("fleet must be a " + ", ".join(s[:-3] for s in SCHEMES) + " URL")
    if "@" in _after_authority(url):
        raise ValueError(
            "fleet URL has an '@' after its host: percent-encode it (%40), and a password's"
            " '/', '?' and '#'"
        )
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ValueError("fleet URL is malformed") from None
    if parts.fragment:
        raise ValueError("fleet URL has a '#fragment': percent-encode a password's '#'")
    return parts


def _socket_path(hosts: str, path: str) -> str:
    """The socket of a ``unix://`` URL: a path, and no host."""
    if hosts or not path.strip("/"):
        raise ValueError("a unix fleet URL is unix://[[user]:password@]/path/to/socket")
    return path


def _nodes(hosts: str, base: str, kind: Kind) -> tuple[tuple[str, int], ...]:
    """Host and port of each node named (one only for a single server)."""
    default = 26379 if kind == "sentinel" else 6379
    nodes = tuple(_node(node, default) for node in hosts.split(","))
    if len(nodes) > 1 and kind == "server":
        raise ValueError(
            f"a {base}:// fleet URL names one host (several: {base}+sentinel:// with"
            f" the master's name, or {base}+cluster://)"
        )
    return nodes


def _master_and_db(path: str, kind: Kind, scheme: str, db: int) -> tuple[str | None, int]:
    """The master's name (Sentinel only) and the database a URL's path names (else ``db``)."""
    segments = [s for s in path.split("/") if s]
    if kind == "sentinel":
        if not segments or len(segments) > 2:
            raise ValueError(
                f"a {scheme} fleet URL names the master: "
                f"{scheme}://host:26379[,host:port...]/<master-name>[/db]"
            )
        return segments[0], _db(segments[1]) if len(segments) == 2 else 0
    if len(segments) > 1:
        raise ValueError("a fleet URL's path is the database number (/0), no more")
    if segments:
        db = _db(segments[0])
    if kind == "cluster" and db != 0:
        raise ValueError("a Redis Cluster has database 0 only")
    return None, db


def _userinfo(userinfo: str) -> tuple[str | None, str | None]:
    if not userinfo:
        return None, None
    user, colon, password = userinfo.partition(":")
    return (unquote(user) or None), (unquote(password) if colon else None)


def _node(node: str, default: int) -> tuple[str, int]:
    if node.startswith("["):  # [IPv6]:port
        host, _, rest = node[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else rest
    else:
        host, _, port = node.partition(":")
    if not host:
        raise ValueError("fleet URL has an empty host")
    if not port:
        return unquote(host), default
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("fleet URL has a port that is not a number from 1 to 65535")
    return unquote(host), int(port)


def _db(text: str) -> int:
    if not text.isdigit():
        raise ValueError("fleet URL's database is not a number (/0, /1, ...)")
    return int(text)


def _options(query: str, *, kind: Kind, tls: bool) -> dict[str, Any]:
    known = _known_options(kind, tls)
    options: dict[str, Any] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name in options:
            raise ValueError(f"fleet URL gives {name!r} twice")
        _check_option(name, kind=kind, tls=tls, known=known)
        options[name] = _OPTION_VALUES.get(name, str)(value)
    return options


def _known_options(kind: Kind, tls: bool) -> frozenset[str]:
    """The query options a URL of ``kind`` (over TLS or not) may give."""
    return frozenset(
        {"client_name"}
        | (_TLS_OPTIONS if tls else set())
        | (_SENTINEL_OPTIONS if kind == "sentinel" else set())
        | ({"db"} if kind == "server" else set())
    )


def _check_option(name: str, *, kind: Kind, tls: bool, known: frozenset[str]) -> None:
    """``ValueError`` saying why when ``name`` is no option of this URL."""
    if name in _TLS_OPTIONS and not tls:
        raise ValueError(f"fleet URL option {name!r} needs a TLS scheme (rediss...)")
    if name in _SENTINEL_OPTIONS and kind != "sentinel":
        raise ValueError(f"fleet URL option {name!r} needs a Sentinel URL")
    if name == "ssl_password" and kind == "cluster":  # redis-py's cluster client has none
        raise ValueError(
            "fleet URL option 'ssl_password' is not for a Cluster: use a key file"
            " without a passphrase"
        )
    if name not in known:
        shown = repr(name) if name.isidentifier() and len(name) <= 40 else "(unreadable)"
        raise ValueError(
            f"fleet URL option {shown} unknown here (known: {', '.join(sorted(known))})"
        )


def _cert_reqs(value: str) -> str:
    if value not in _CERT_REQS:
        raise ValueError("fleet URL option 'ssl_cert_reqs' is required, optional or none")
    return value


def _check_hostname(value: str) -> bool:
    if value.lower() not in _BOOLS:
        raise ValueError("fleet URL option 'ssl_check_hostname' is true or false")
    return _BOOLS[value.lower()]


_OPTION_VALUES: dict[str, Callable[[str], Any]] = {
    "db": _db,
    "ssl_cert_reqs": _cert_reqs,
    "ssl_check_hostname": _check_hostname,
}
"""How the value of an option is read (any other: as given)."""


def redis_client(url: str, *, timeout: float) -> Any:
    """A redis-py asyncio client for ``url`` whose commands give up after ``timeout``.

    One quiet retry on a fresh connection covers a pooled connection that a restarted
    server closed (and, behind Sentinel, a master that failed over: the retry asks the
    Sentinels where the master is now); anything else fails at once (the store then
    carries on locally). A cluster client is ``redis.asyncio.RedisCluster``: keys of
    one ``{hash tag}`` share a slot, so a script over them runs on one node; its
    ``pubsub()`` subscribes on the node of the channel's slot (published messages reach
    every node). Every client's ``aclose()`` closes all it opened.
    """
    target = parse_url(url)
    if target.kind == "sentinel":
        return _sentinel_master(target, timeout)
    if target.kind == "cluster":
        return _cluster(target, timeout)
    import redis.asyncio as aioredis

    where: dict[str, Any] = {"unix_socket_path": target.socket}
    if target.socket is None:
        ((host, port),) = target.nodes
        where = {"host": host, "port": port}
    return aioredis.Redis(**where, db=target.db, **_connection(target, timeout))


def _retry(retries: int) -> Any:
    """``retries`` retries, at once, on a connection error (a fresh object for each client)."""
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError

    return Retry(NoBackoff(), retries, supported_errors=(RedisConnectionError,))


def _tls(target: Target) -> dict[str, Any]:
    if not target.tls:
        return {}
    return {"ssl": True, **{k: v for k, v in target.options.items() if k in _TLS_OPTIONS}}


def _connection(target: Target, timeout: float, *, sentinel: bool = False) -> dict[str, Any]:
    """The keyword arguments of a connection to a data node or (``sentinel``) to a
    Sentinel: timeouts, retry (none to a Sentinel: the next Sentinel is the retry),
    credentials (a Sentinel's own: ``sentinel_*``), the client's name, TLS."""
    options = target.options
    return {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "retry": _retry(0 if sentinel else 1),
        "health_check_interval": 0,
        "username": options.get("sentinel_username") if sentinel else target.username,
        "password": options.get("sentinel_password") if sentinel else target.password,
        "client_name": None if sentinel else options.get("client_name"),
        **_tls(target),
    }


def _sentinel_master(target: Target, timeout: float) -> Any:
    """The client of the master the Sentinels name, closing the Sentinel clients too.

    The Sentinels are asked in turn (one that answered first from then on), each for at
    most a share of ``timeout``, so that with every Sentinel but the last one silent
    the master is still found, and reached, within ``timeout``.
    """
    from redis.asyncio import sentinel as redis_sentinel

    share = timeout / (len(target.nodes) + 1)
    sentinels: Any = redis_sentinel.Sentinel  # untyped in redis-py
    sentinel: Any = sentinels(
        list(target.nodes), sentinel_kwargs=_connection(target, share, sentinel=True)
    )
    return sentinel.master_for(
        target.master, redis_class=_sentinel_class(), db=target.db, **_connection(target, timeout)
    )


@functools.cache
def _sentinel_class() -> Any:
    """``redis.asyncio.Redis`` whose ``aclose`` also closes the Sentinel clients its pool
    asks (made on first use: this module imports redis only when a fleet URL is used)."""
    import redis.asyncio as aioredis

    class SentinelMaster(aioredis.Redis):
        async def aclose(self, close_connection_pool: bool | None = None) -> None:
            pool: Any = self.connection_pool  # master_for's: it keeps its Sentinel
            try:
                await super().aclose(close_connection_pool)
            finally:
                for client in pool.sentinel_manager.sentinels:
                    await client.aclose()

    return SentinelMaster


def _cluster(target: Target, timeout: float) -> Any:
    from redis.asyncio.cluster import ClusterNode

    return _cluster_class()(
        startup_nodes=[ClusterNode(host, port) for host, port in target.nodes],
        **_connection(target, timeout),
    )


@functools.cache
def _cluster_class() -> Any:
    """``redis.asyncio.RedisCluster`` whose ``pubsub()`` works before any other command
    (made on first use): redis-py 8.1's picks the node of the channel's slot from a slot
    table that the first command fills (else ``KeyError``), so it fills it first. A
    message published on any node reaches every node. ``pubsub()`` needs redis-py 8.0
    or newer (older ones: ``ImportError``).
    """
    import redis.asyncio.cluster as redis_cluster

    if not hasattr(redis_cluster, "ClusterPubSub"):
        raise ImportError("a redis+cluster fleet URL needs redis-py 8.0 or newer")
    from redis.asyncio.cluster import ClusterPubSub, RedisCluster

    class FleetClusterPubSub(ClusterPubSub):
        async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
            await self.cluster.initialize()
            return await super().execute_command(*args, **kwargs)

    class FleetCluster(RedisCluster):
        def pubsub(self, *args: Any, **kwargs: Any) -> Any:
            return FleetClusterPubSub(self, *args, **kwargs)

    return FleetCluster


def store_errors() -> tuple[type[BaseException], ...]:
    """What a store command (or a subscription) may raise when Redis is away or failing:
    redis-py's errors, its ``RedisClusterException`` (a cluster client's outage: it is
    no ``RedisError``), OS errors and timeouts."""
    from redis.exceptions import RedisClusterException, RedisError

    return (RedisError, RedisClusterException, OSError, TimeoutError)
