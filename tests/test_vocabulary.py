"""One word for one idea: the shared aliases are defined once and reachable by old names."""

from __future__ import annotations

import ast
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import svc_async
import svc_async.client
import svc_async.resources.bulk
import svc_async.resources.downloads
import svc_async.types
from svc_async import Client, MockTransport, Request, Response, json_response

PACKAGE = Path(svc_async.__file__).resolve().parent


def _aliases_defined(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_progress_and_timeout_aliases_are_defined_in_one_module_only() -> None:
    owners: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for name in _aliases_defined(path) & {"Progress", "TimeoutArg", "TimeoutOpt"}:
            owners.setdefault(name, []).append(str(path.relative_to(PACKAGE)))
    assert owners == {"Progress": ["types.py"], "TimeoutArg": ["types.py"]}


def test_the_old_homes_of_the_names_give_the_same_alias() -> None:
    assert svc_async.Progress is svc_async.types.Progress
    assert svc_async.resources.downloads.Progress is svc_async.types.Progress
    assert svc_async.resources.bulk.Progress is svc_async.types.Progress
    assert svc_async.TimeoutArg is svc_async.client.TimeoutArg is svc_async.types.TimeoutArg


async def _search_bodies(call: Callable[[Client], Awaitable[object]]) -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = []

    def handler(request: Request) -> Response:
        bodies.append(request.json())
        return json_response({"results": [], "count": 0})

    async with Client("http://svc.test", token="t", transport=MockTransport(handler)) as svc:
        await call(svc)
    return bodies


async def _all(svc: Client, **kwargs: Any) -> list[object]:
    return [job async for job in svc.jobs.iter_search(**kwargs)]


@pytest.mark.parametrize(
    "call",
    [
        lambda svc, **kw: svc.jobs.search(**kw),
        _all,
    ],
    ids=["search", "iter_search"],
)
async def test_jobs_searches_take_organisation_id_and_refuse_the_removed_org_id(
    call: Callable[..., Awaitable[object]],
) -> None:
    new = await _search_bodies(lambda svc: call(svc, organisation_id=7))
    assert [b["orgId"] for b in new] == [7]
    with pytest.raises(TypeError, match="unexpected keyword argument 'org_id'"):
        await _search_bodies(lambda svc: call(svc, org_id=7))  # nothing is sent


async def test_a_bad_organisation_id_is_refused_before_sending() -> None:
    with pytest.raises(ValueError, match="organisation_id"):
        await _search_bodies(lambda svc: svc.jobs.search(organisation_id=0))


def test_every_sdk_logger_is_named_after_its_module() -> None:
    named = []
    for path in PACKAGE.rglob("*.py"):
        if {"cli", "testing"} & set(path.relative_to(PACKAGE).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "getLogger"
            ):
                arg = ast.unparse(node.args[0]) if node.args else ""
                if arg != "__name__":
                    named.append((str(path.relative_to(PACKAGE)), arg))
    # The documented pacing channel is the one logger whose name is part of the API.
    assert named == [("_pipeline/ratelimit.py", "'svc_async.pacing'")]
