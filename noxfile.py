"""Sessions: tests, lint, typecheck, docs, bench (benchmarks write benchmarks/results/*.json)."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint", "typecheck", "docs"]
nox.options.reuse_existing_virtualenvs = True

BENCH_PEERS = ["msgspec", "pydantic>=2", "httpx"]
LINTED = ["svc_async", "tests", "benchmarks", "docs/_hooks", "noxfile.py"]


@nox.session
def tests(session: nox.Session) -> None:
    """Run the test suite."""
    session.install("-e", ".[test]")
    session.run("pytest", "-q", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("ruff")
    session.run("ruff", "check", *LINTED)
    session.run("ruff", "format", "--check", *LINTED)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the package, and the static type tests."""
    session.install("-e", ".[test]", "mypy")
    session.run("mypy", "--strict", "svc_async")
    if Path("tests/typing").is_dir():
        session.run("mypy", "--strict", "tests/typing")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site with ``mkdocs build --strict`` (any warning fails).

    The site goes to ``.nox/docs/tmp/site`` unless given: ``nox -s docs -- --site-dir site``.
    Benchmark charts use ``benchmarks/results/*.json`` when ``nox -s bench`` wrote them.
    """
    session.install("-e", ".[docs]", "ruff")  # mkdocstrings formats signatures with ruff
    session.env["NO_MKDOCS_2_WARNING"] = "1"
    args = session.posargs or ["--site-dir", str(Path(session.create_tmp()) / "site")]
    session.run("mkdocs", "build", "--strict", *args)


@nox.session
def bench(session: nox.Session) -> None:
    """All benchmarks, peers installed here only; JSON in benchmarks/results/."""
    session.install("-e", ".", *BENCH_PEERS)
    session.run("python", "benchmarks/run_all.py", *session.posargs)
