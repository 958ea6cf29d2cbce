"""Every SDK exception lives in errors.py, and its docstring draws the whole tree."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import warnings

import svc_async
import svc_async.errors as errors
from svc_async.errors import SvcError

_SKIP = ("svc_async.testing", "svc_async.cli")


def _sdk_modules() -> list[object]:
    names = ["svc_async"]
    for info in pkgutil.walk_packages(svc_async.__path__, "svc_async."):
        if not info.name.startswith(_SKIP):
            names.append(info.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [importlib.import_module(name) for name in names]


def _exception_classes() -> set[type[BaseException]]:
    found = set()
    for module in _sdk_modules():
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__.startswith("svc_async"):
                found.add(value)
    return found


def _tree() -> list[tuple[int, str]]:
    """(depth, class name) for each line of the tree drawn in errors.py's docstring."""
    doc = errors.__doc__ or ""
    block = doc.split("::", 1)[1].split("\n\n", 2)[1]
    rows = []
    for line in block.splitlines():
        match = re.match(r"( *)([A-Za-z]\w*)", line)
        assert match, line
        rows.append((len(match.group(1)), match.group(2)))
    return rows


def test_every_public_exception_of_the_sdk_is_defined_in_errors() -> None:
    elsewhere = {
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in _exception_classes()
        if cls.__module__ != "svc_async.errors" and not cls.__name__.startswith("_")
    }
    assert not elsewhere
    # ... and the walk did look: the moved classes are found, through their old homes too.
    found = {cls.__name__ for cls in _exception_classes()}
    assert {"WebhookPayloadError", "PacingExceedsDeadline", "LeafError"} <= found


def test_the_docstring_tree_holds_every_svc_error_under_its_real_parent() -> None:
    rows = _tree()
    drawn = {name for _, name in rows}
    subclasses = {cls.__name__ for cls in _exception_classes() if issubclass(cls, SvcError)}
    assert subclasses - drawn == set()
    assert drawn - subclasses == set()
    # Indentation is parentage: each drawn class sits under one of its direct SDK bases.
    stack: list[tuple[int, str]] = []
    for depth, name in rows:
        while stack and stack[-1][0] >= depth:
            stack.pop()
        cls = getattr(errors, name)
        if stack:
            assert getattr(errors, stack[-1][1]) in cls.__bases__, (name, stack[-1][1])
        else:
            assert cls is SvcError
        stack.append((depth, name))


def test_the_tree_names_each_builtin_base() -> None:
    doc = errors.__doc__ or ""
    for cls in _exception_classes():
        if not issubclass(cls, SvcError) or cls is SvcError:
            continue
        builtin = [b.__name__ for b in cls.__bases__ if b.__module__ == "builtins"]
        for base in builtin:
            assert re.search(rf"\b{cls.__name__} \[{base}\]", doc), (cls.__name__, base)


def test_old_import_paths_still_give_the_same_classes() -> None:
    from svc_async import WebhookPayloadError
    from svc_async._core.codegen import LeafError
    from svc_async._pipeline.ratelimit import PacingExceedsDeadline
    from svc_async.webhooks.receiver import WebhookPayloadError as FromWebhooks

    assert WebhookPayloadError is FromWebhooks is errors.WebhookPayloadError
    assert issubclass(WebhookPayloadError, SvcError) and issubclass(WebhookPayloadError, ValueError)
    assert PacingExceedsDeadline is errors.PacingExceedsDeadline
    assert LeafError is errors.LeafError
