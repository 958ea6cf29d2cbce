"""Sessions: tests, lint, typecheck, docs, build, bench (bench writes benchmarks/results/)."""

from __future__ import annotations

import sys
from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint", "typecheck", "docs", "build"]
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
    """ruff check, ruff format --check and the import contracts (lint-imports)."""
    session.install("-e", ".", "ruff", "import-linter")
    session.run("ruff", "check", *LINTED)
    session.run("ruff", "format", "--check", *LINTED)
    session.run("lint-imports", "--no-cache")


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
def build(session: nox.Session) -> None:
    """Build the sdist and wheel, ``twine check`` them, and run the wheel in a clean venv.

    The wheel is installed without the project's other extras into a virtual environment
    of its own, where ``svc-async --help`` must run. Artifacts go to ``.nox/build/tmp/dist``
    unless given: ``nox -s build -- --outdir dist``.
    """
    session.install("build", "twine")
    tmp = Path(session.create_tmp())
    outdir = Path(session.posargs[1]) if session.posargs[:1] == ["--outdir"] else tmp / "dist"
    for old in outdir.glob("svc_async-*"):
        old.unlink()
    session.run("python", "-m", "build", "--outdir", str(outdir))
    built = sorted(str(p) for p in outdir.glob("svc_async-*"))
    wheels = [p for p in built if p.endswith(".whl")]
    if len(built) != 2 or len(wheels) != 1:
        session.error(f"expected one sdist and one wheel in {outdir}, found {built}")
    session.run("twine", "check", "--strict", *built)
    venv = tmp / "clean-venv"
    session.run("python", "-m", "venv", "--clear", str(venv))
    bin_dir = venv / ("Scripts" if sys.platform == "win32" else "bin")
    session.run(
        str(bin_dir / "python"), "-m", "pip", "install", "--quiet", wheels[0], external=True
    )
    session.run(str(bin_dir / "svc-async"), "--help", external=True)
    session.run(
        str(bin_dir / "python"),
        "-c",
        "import svc_async; print(svc_async.__version__)",
        external=True,
    )


@nox.session
def bench(session: nox.Session) -> None:
    """All benchmarks, peers installed here only; JSON in benchmarks/results/.

    Fails when a script fails. The instruction counts print as a trend against
    ``benchmarks/baseline/instructions.json`` (valgrind needed; without it they are skipped
    and say so). ``nox -s bench -- --only instructions`` counts them alone.
    """
    session.install("-e", ".", *BENCH_PEERS)
    session.run("python", "benchmarks/run_all.py", *session.posargs)
