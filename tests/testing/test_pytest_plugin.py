"""The shipped pytest plugin, used from a fresh project in pytest-asyncio's strict mode."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

PLUGIN = "svc_async.testing.pytest_plugin"
# Block the installed entry point (if any) and load the module by name, so the inner run
# tests this worktree's plugin exactly once whether or not the package is installed.
LOAD = ("-p", "no:svc_async", "-p", PLUGIN, "-p", "no:cacheprovider")
# A separate process gets only what a user's fresh project has (pytest, pytest-asyncio,
# this package): the plugins of this suite's other test tools stay off (and unimported).
_OTHERS = "hypothesispytest anyio looptime_plugin looptime_chronometers looptime_timeproxies"
OTHERS_OFF = tuple(arg for name in _OTHERS.split() for arg in ("-p", f"no:{name}"))

STRICT_INI = """
[pytest]
asyncio_mode = strict
asyncio_default_fixture_loop_scope = function
filterwarnings = error
"""


def run(pytester: pytest.Pytester, ini: str, source: str) -> pytest.RunResult:
    pytester.makeini(ini)
    pytester.makepyfile(test_user=source)
    return pytester.runpytest(*LOAD, "-q")


def test_fixtures_work_in_strict_mode(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        STRICT_INI,
        """
        import pytest
        from svc_async import Client
        from svc_async.testing import FakeService

        @pytest.mark.asyncio
        async def test_client_reads_the_fake(svc_client, svc_fake):
            assert isinstance(svc_client, Client)
            assert isinstance(svc_fake, FakeService)
            assert svc_fake.base_url.startswith("http://127.0.0.1:")
            orgs = await svc_client.orgs.list()
            assert [o.id for o in orgs if o.parent_id is None] == [1]
            assert svc_fake.count("GET", "/api/orgs/me") == 1

        @pytest.mark.asyncio
        async def test_each_test_gets_a_fresh_fake(svc_fake):
            assert svc_fake.requests == []
        """,
    )
    result.assert_outcomes(passed=2)


@pytest.mark.slow
def test_fresh_project_without_any_configuration(pytester: pytest.Pytester) -> None:
    """No ini at all (strict is pytest-asyncio's default), in a separate process."""
    pytester.makepyfile(
        test_user="""
        import pytest

        @pytest.mark.asyncio
        async def test_events(svc_client):
            assert len(await svc_client.events.list(limit=5)) == 5
        """
    )
    result = pytester.runpytest_subprocess(*LOAD, *OTHERS_OFF, "-q")
    result.assert_outcomes(passed=1)
    assert "requested an async fixture" not in result.stdout.str()


def _testing_page_config() -> str:
    """The pytest configuration the Testing page tells a new project to write."""
    page = (Path(__file__).parents[2] / "docs" / "testing.md").read_text(encoding="utf-8")
    shown = re.findall(r"^```toml\n(.*?)^```", page, flags=re.MULTILINE | re.DOTALL)
    found = [b for b in shown if "asyncio_default_fixture_loop_scope" in b]
    assert found, "the Testing page shows no pyproject.toml with the loop scope setting"
    return found[0]


@pytest.mark.slow
def test_a_new_project_configured_as_the_testing_page_says_has_no_warning(
    pytester: pytest.Pytester,
) -> None:
    """The page's configuration, nothing else, and ``-W error``: no deprecation warning."""
    config = _testing_page_config()
    assert tomllib.loads(config)["tool"]["pytest"]["ini_options"]
    pytester.makefile(".toml", pyproject=config)
    pytester.makepyfile(
        test_user="""
        import pytest

        @pytest.mark.asyncio
        async def test_events(svc_client, svc_fake):
            assert len(await svc_client.events.list(limit=5)) == 5
            assert svc_fake.count("POST", "/api/public/v1/event") == 1
        """
    )
    result = pytester.runpytest_subprocess(*LOAD, *OTHERS_OFF, "-W", "error", "-q")
    output = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)
    assert "Deprecation" not in output and "warning" not in output.lower(), output


@pytest.mark.slow
def test_marker_sets_knobs_and_jobs_finish_fast(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        STRICT_INI,
        """
        import datetime as dt
        import pytest
        from svc_async import JobRequest, PollPolicy

        @pytest.mark.asyncio
        @pytest.mark.svc_fake(seed=7, rate_limit=None, demo_data=False)
        async def test_marker(svc_fake, svc_client):
            assert svc_fake.seed == 7
            assert svc_fake.rate_limit is None
            assert await svc_client.events.list() == []

        @pytest.mark.asyncio
        async def test_default_processing_delay(svc_fake, svc_client):
            assert svc_fake.processing_delay == 0.1
            job = await svc_client.jobs.create_and_wait(
                JobRequest(
                    name="Tigers",
                    email="coach@club.example",
                    organisation_id=1,
                    audio_file_url="https://media.example/tigers.mp3",
                    start_date=dt.date(2025, 3, 1),
                    end_date=dt.date(2025, 3, 2),
                ),
                timeout=10,
                policy=PollPolicy(wait_initial=0.05),  # the first look after 1 s otherwise
            )
            assert job.is_finished
        """,
    )
    result.assert_outcomes(passed=2)


def test_factory_serves_independent_fakes(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        STRICT_INI,
        """
        import pytest
        from svc_async import Client

        @pytest.mark.asyncio
        async def test_two(svc_fake_factory):
            one = await svc_fake_factory(demo_data=False)
            two = await svc_fake_factory(seed=1)
            assert one.base_url != two.base_url
            one.add_org("Solo Club", parent_id=1)
            async with Client(one.base_url, token=one.DEFAULT_TOKEN) as svc:
                assert "Solo Club" in [o.name for o in await svc.orgs.list()]
            assert two.count("GET", "/api/orgs/me") == 0
        """,
    )
    result.assert_outcomes(passed=1)


def test_teardown_stops_the_server(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        STRICT_INI,
        """
        import pytest
        from svc_async import Client, ConnectError, RetryPolicy

        seen = {}

        @pytest.mark.asyncio
        async def test_first(svc_fake):
            seen["url"] = svc_fake.base_url

        @pytest.mark.asyncio
        async def test_second():
            async with Client(seen["url"], token="t", retry=RetryPolicy(attempts=1)) as svc:
                with pytest.raises(ConnectError):
                    await svc.seasons.list()
        """,
    )
    result.assert_outcomes(passed=2)


def test_bad_marker_is_reported(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        STRICT_INI,
        """
        import pytest

        @pytest.mark.asyncio
        @pytest.mark.svc_fake(3)
        async def test_positional(svc_fake):
            pass
        """,
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*svc_fake takes keyword arguments only*"])


def test_marker_is_registered_for_strict_markers(pytester: pytest.Pytester) -> None:
    pytester.makeini(STRICT_INI)
    result = pytester.runpytest(*LOAD, "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.svc_fake(**knobs)*"])


def _declared_entry_point() -> str:
    pyproject = Path(__file__).parents[2] / "pyproject.toml"
    data = tomllib.loads(pyproject.read_text())
    return str(data["project"]["entry-points"]["pytest11"]["svc_async"])


def test_entry_point_names_the_plugin() -> None:
    assert _declared_entry_point() == PLUGIN
    installed = _installed_entry_points()
    if installed:  # an install made before the entry point existed has none
        assert installed == {"svc_async": PLUGIN}


def _installed_entry_points() -> dict[str, str]:
    try:
        dist = metadata.distribution("svc-async")
    except metadata.PackageNotFoundError:
        return {}
    return {ep.name: ep.value for ep in dist.entry_points if ep.group == "pytest11"}


@pytest.mark.skipif(
    "svc_async" not in _installed_entry_points(), reason="svc-async installed without it"
)
@pytest.mark.slow
def test_installed_entry_point_provides_the_fixtures(pytester: pytest.Pytester) -> None:
    """As a user gets it: no ``-p``, the fixtures come from the installed distribution."""
    pytester.makeini(STRICT_INI)
    pytester.makepyfile(
        test_user="""
        import pytest

        @pytest.mark.asyncio
        async def test_seasons(svc_client):
            assert len(await svc_client.seasons.list()) == 3
        """
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", *OTHERS_OFF)
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_without_pytest_asyncio_the_fixtures_say_what_is_missing(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
        import sys

        sys.modules["pytest_asyncio"] = None  # as if it were not installed
        pytest_plugins = ["svc_async.testing.pytest_plugin"]
        """
    )
    pytester.makepyfile(
        test_user="""
        def test_needs_it(svc_client):
            pass

        def test_unrelated():
            pass
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:asyncio", "-p", "no:svc_async", *OTHERS_OFF, "-q"
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*svc_async fixtures need pytest-asyncio*"])


def test_fixtures_follow_the_configured_loop_scope(pytester: pytest.Pytester) -> None:
    """With module-scoped loops for tests and fixtures, both share the module's loop."""
    result = run(
        pytester,
        STRICT_INI.replace("= function", "= module") + "asyncio_default_test_loop_scope = module\n",
        """
        import asyncio
        import pytest

        loops = set()

        @pytest.mark.asyncio
        async def test_one(svc_client):
            loops.add(asyncio.get_running_loop())
            assert await svc_client.seasons.list()

        @pytest.mark.asyncio
        async def test_two(svc_client):
            loops.add(asyncio.get_running_loop())
            assert await svc_client.seasons.list()
            assert len(loops) == 1
        """,
    )
    result.assert_outcomes(passed=2)
