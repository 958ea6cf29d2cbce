"""Sessions: tests, lint, typecheck, bench (benchmarks write benchmarks/results/*.json)."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True

BENCH_PEERS = ["msgspec", "pydantic>=2", "httpx"]


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite."""
    session.install("-e", ".[test]")
    session.run("pytest", "-q", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("ruff")
    session.run("ruff", "check", "svc_async", "tests", "benchmarks", "noxfile.py")
    session.run("ruff", "format", "--check", "svc_async", "tests", "benchmarks", "noxfile.py")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package, and the static type tests."""
    session.install("-e", ".[test]", "mypy")
    session.run("mypy", "--strict", "svc_async")
    session.run("mypy", "--strict", "tests/typing")


@nox.session
def bench(session: nox.Session) -> None:
    """All benchmarks, peers installed here only; JSON in benchmarks/results/."""
    session.install("-e", ".", *BENCH_PEERS)
    session.run("python", "benchmarks/run_all.py", *session.posargs)
