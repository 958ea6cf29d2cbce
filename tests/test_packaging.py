"""The package as it ships: metadata, long description, licence, changelog, policy."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import svc_async

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from hatch_build import public_readme  # noqa: E402

sys.path.remove(str(ROOT))


@pytest.fixture(scope="module")
def metadata() -> dict[str, object]:
    """The core metadata hatchling builds (metadata hooks applied), read as JSON."""
    pytest.importorskip("hatchling")
    out = subprocess.run(
        [sys.executable, "-m", "hatchling", "metadata"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return json.loads(out)  # type: ignore[no-any-return]


def test_classifiers_name_the_pythons_typing_and_asyncio(metadata: dict[str, object]) -> None:
    classifiers = metadata["classifiers"]
    assert isinstance(classifiers, list)
    for version in ("3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {version}" in classifiers
    assert "Typing :: Typed" in classifiers
    assert "Framework :: AsyncIO" in classifiers
    assert metadata["requires-python"] == ">=3.11"
    assert (ROOT / "svc_async" / "py.typed").exists()


def test_the_licence_is_mit_and_shipped(metadata: dict[str, object]) -> None:
    assert metadata["license"] == "MIT"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "WITHOUT WARRANTY OF ANY KIND" in text


def test_the_otel_extra_brings_only_the_api(metadata: dict[str, object]) -> None:
    extras = metadata["optional-dependencies"]
    assert isinstance(extras, dict)
    assert [re.split(r"[<>=!~ ]", d)[0] for d in extras["otel"]] == ["opentelemetry-api"]
    assert any(d.startswith("opentelemetry-sdk") for d in extras["test"])


def test_the_long_description_has_no_link_that_breaks_outside_the_repo(
    metadata: dict[str, object],
) -> None:
    readme = metadata["readme"]
    assert isinstance(readme, dict)
    assert readme["content-type"] == "text/markdown"
    targets = re.findall(r"\]\(([^)\s]+)\)", readme["text"])
    relative = [t for t in targets if not re.match(r"^(?:[a-z][a-z0-9+.-]*:|#)", t, re.I)]
    assert relative == []


def test_public_readme_keeps_absolute_links_and_anchors() -> None:
    text = "[site](https://example.org/x) and [up](#quick-start) and [mail](mailto:a@b.c)"
    assert public_readme(text) == text


def test_public_readme_turns_relative_links_into_text_with_their_path() -> None:
    text = "See [the map](ARCHITECTURE.md), [`docs/x.md`](docs/x.md) and ![chart](docs/c.png)."
    assert public_readme(text) == (
        "See the map (`ARCHITECTURE.md` in the source tree),"
        " `docs/x.md` (in the source tree) and chart."
    )
    assert public_readme("[ref]: docs/a.md\n") == "[ref]: #\n"


def test_public_readme_points_relative_links_at_a_base_url_when_there_is_one() -> None:
    text = "[the map](ARCHITECTURE.md) ![c](docs/c.png)\n[ref]: docs/a.md\n"
    assert public_readme(text, "https://forge.example/svc/blob/main/") == (
        "[the map](https://forge.example/svc/blob/main/ARCHITECTURE.md)"
        " ![c](https://forge.example/svc/blob/main/docs/c.png)\n"
        "[ref]: https://forge.example/svc/blob/main/docs/a.md\n"
    )


def test_the_changelog_keeps_a_changelog_and_lists_what_was_removed() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "Keep a Changelog" in text
    unreleased = text.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
    assert svc_async.__version__ in unreleased  # the release being prepared
    for heading in ("### Added", "### Changed", "### Removed", "### Fixed"):
        assert heading in unreleased
    assert "### Deprecated" not in unreleased  # 0.1.0 ships with no deprecated name
    removed = unreleased.split("### Removed", 1)[1].split("\n### ", 1)[0]
    # Each spelling removed before 0.1.0 is listed with what to write instead.
    for old, new in [
        ("RetryPolicy(jitter=True/False)", "wait_jitter="),
        ("RetryPolicy(max_attempts=...)", "attempts="),
        ("RetryPolicy(timeout=...)", "timeout="),
        ("PollPolicy(initial=, multiplier=, max_interval=, jitter=)", "wait_exp_base="),
        ('with_options(timeout="keep")', '"default"'),
        ("org_id=", "organisation_id="),
    ]:
        assert old in removed and new in removed


def test_the_code_has_no_deprecation_warning() -> None:
    """0.1.0 carries no compatibility debt: no name warns that it is deprecated."""
    sites = sorted(
        path.relative_to(ROOT / "svc_async").as_posix()
        for path in (ROOT / "svc_async").rglob("*.py")
        if "DeprecationWarning" in path.read_text()
    )
    assert sites == []


def test_the_policy_page_states_versions_and_deprecations() -> None:
    text = (ROOT / "docs" / "policy.md").read_text()
    assert "DeprecationWarning" in text
    assert "at least one minor release" in text
    assert "3.11" in text and "3.13" in text
