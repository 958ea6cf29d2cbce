"""The one cattrs converter: JSON documents <-> the attrs models.

Configured here and nowhere else. Two converter instances share this configuration:
a fast one (no detailed validation) used for every response, and a precise one that is
only run when the fast pass fails, to name the JSON path of the problem.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import types
import typing
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from . import models as m
from ._core.codegen import (
    EXTRA,
    NO_EXTRA,
    NO_KEYS,
    Extra,
    Layout,
    describe,
    is_leaf,
    layout,
    leaf_hook,
    make_structure_fn,
)
from .errors import LeafError, ResponseDecodeError

if TYPE_CHECKING:
    import cattrs

T = TypeVar("T")

_IRREGULAR: dict[str, str] = {
    "download_url": "downloadURL",
    "invite_url": "inviteURL",
    "edit_url": "editURL",
    "callback_url": "callbackURL",
    "audio_file_url": "audioFileURL",
    "license_file_urls": "licenseFileURLs",
}
"""Attribute names whose JSON casing is not plain camelCase."""

_MODELS: tuple[type, ...] = tuple(
    value
    for value in vars(m).values()
    if isinstance(value, type) and value.__module__ == m.__name__ and attrs.has(value)
)
"""Every attrs class of the models module: found, not listed, so none is forgotten."""

_MODEL_SET = frozenset(_MODELS)

_EXTRA_KEY = "(extra)"
"""The key under which the precise pass hands a model's ``extra`` to cattrs' function.

It goes into a copy of the document, after the document's own keys: a document that has
this key itself keeps that value in ``extra``, as an unknown key."""


def json_name(attribute: str) -> str:
    """The service's JSON key for a model attribute (``svc_mix_id`` -> ``svcMixId``)."""
    if attribute in _IRREGULAR:
        return _IRREGULAR[attribute]
    head, *rest = attribute.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _json_key(field: attrs.Attribute[Any]) -> str:
    """A field's JSON key: declared on the field (licence checks), else from its name."""
    key = field.metadata.get("json")
    return key if isinstance(key, str) else json_name(field.name)


@functools.cache
def _layout(cls: type) -> Layout:
    return layout(cls, _json_key)


class _Nested(ValueError):
    """An error below ``where`` (a JSON path suffix such as ``[3]`` or ``.jobs``)."""

    def __init__(self, where: str, error: BaseException) -> None:
        super().__init__(str(error))
        self.where = where
        self.error = error


def parse_timestamp(value: Any) -> dt.datetime:
    """Parse an ISO 8601 timestamp (``Z`` or any offset) into an aware datetime.

    A timestamp without an offset is taken as UTC, which is what the service means.
    """
    return _TIMESTAMP(value, dt.datetime)  # type: ignore[no-any-return]


_TIMESTAMP = leaf_hook(dt.datetime)
_INTEGER = leaf_hook(int)


def format_timestamp(value: dt.datetime) -> str:
    """Format an aware datetime as the service does: UTC, milliseconds, ``Z``.

    Sub-millisecond precision, when there is any, is kept (microseconds). A moment whose
    UTC date would be before year 1 or after 9999 keeps its own offset (the same instant).
    """
    if value.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    spec = "milliseconds" if value.microsecond % 1000 == 0 else "microseconds"
    try:
        utc = value.astimezone(dt.UTC)
    except OverflowError:  # e.g. 0001-01-01T00:30+01:00: no datetime holds it in UTC
        return value.isoformat(timespec=spec)
    return utc.isoformat(timespec=spec).replace("+00:00", "Z")


def _is_model_or_str(tp: Any) -> bool:
    """``Model | str`` or ``Model | str | None`` (a field older answers sent as a string)."""
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return False
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return len(args) == 2 and str in args and any(a in _MODEL_SET for a in args)


def _model_or_str_factory(conv: cattrs.Converter) -> Callable[[Any], Any]:
    def factory(tp: Any) -> Callable[[Any, Any], Any]:
        args = typing.get_args(tp)
        model = next(a for a in args if a in _MODEL_SET)
        inner = conv.get_structure_hook(model)
        none_ok = type(None) in args

        def structure(value: Any, _: Any) -> Any:
            if type(value) is dict:
                return inner(value, model)
            if type(value) is str or (none_ok and value is None):
                return value
            raise LeafError(f"expected an object or a string, got {describe(value)}")

        return structure

    return factory


def _job_search_results(conv: cattrs.Converter) -> Callable[[Any, Any], m.JobSearchResults]:
    jobs_type = list[m.VerificationJob]
    keys = ("results", "jobs")

    def structure(value: Any, _: Any) -> m.JobSearchResults:
        if type(value) is not dict:
            raise LeafError(f"expected an object with results and count, got {describe(value)}")
        # Today's answers call the list "results"; before 2025-01 (and in the examples), "jobs".
        key = next((k for k in keys if k in value), None)
        if key is None:
            raise LeafError("expected a job list under 'results' (or the older 'jobs')")
        try:
            jobs = conv.structure(value[key], jobs_type)
        except Exception as exc:
            raise _Nested(f".{key}", exc) from None
        try:
            count = _INTEGER(value["count"], int) if "count" in value else len(jobs)
        except LeafError as exc:
            raise LeafError(str(exc), ".count") from None
        rest = {k: x for k, x in value.items() if k != key and k != "count"}
        absent = NO_KEYS if "count" in value else frozenset({"count"})
        extra = Extra(rest, absent) if rest or absent else NO_EXTRA
        return m.JobSearchResults(jobs=jobs, count=count, list_key=key, extra=extra)

    return structure


def _unstructure_job_search_results(conv: cattrs.Converter) -> Callable[[Any], Any]:
    def unstructure(value: m.JobSearchResults) -> dict[str, Any]:
        out: dict[str, Any] = {value.list_key: conv.unstructure(value.jobs)}
        if "count" not in getattr(value.extra, "absent", ()):
            out["count"] = value.count
        out.update(value.extra)
        return out

    return unstructure


def _is_model_list(tp: Any) -> bool:
    args = typing.get_args(tp)
    return typing.get_origin(tp) is list and len(args) == 1 and attrs.has(args[0])


def _list_hook_factory(conv: cattrs.Converter) -> Callable[[Any], Any]:
    def factory(tp: Any) -> Callable[[Any, Any], list[Any]]:
        item_type = typing.get_args(tp)[0]
        item = conv.get_structure_hook(item_type)

        # One hook for both passes: the index of a failing item costs nothing until one
        # fails (lists inside a model are inlined by the fast pass, not structured here).
        def structure(value: Any, _: Any) -> list[Any]:
            if type(value) is not list:
                raise LeafError(f"expected an array, got {describe(value)}")
            out = []
            for index, x in enumerate(value):
                try:
                    out.append(item(x, item_type))
                except Exception as exc:
                    raise _Nested(f"[{index}]", exc) from None
            return out

        return structure

    return factory


def _precise_model(hook: Callable[[Any, Any], T], spec: Layout) -> Callable[[Any, Any], T]:
    """cattrs' structure function, plus what it does not do: the object check, and the
    model's ``extra`` (unknown and absent keys), handed to it under ``_EXTRA_KEY``."""

    def structure(value: Any, tp: Any) -> T:
        if type(value) is not dict:
            raise LeafError(f"expected an object, got {describe(value)}")
        if spec.keeps_extra:
            value = {**value, _EXTRA_KEY: spec.extra(value, spec.absent(value))}
        return hook(value, tp)

    return structure


def _as_is(value: Any, _: Any) -> Any:
    return value


def _overrides(cls: type, unstructure: bool) -> dict[str, Any]:
    """cattrs overrides: JSON names; ``extra`` is read from ``_EXTRA_KEY``, never written."""
    from cattrs.gen import override

    out: dict[str, Any] = {}
    for field in attrs.fields(cls):
        if field.name == EXTRA and unstructure:
            out[field.name] = override(omit=True)
        elif field.name == EXTRA:
            out[field.name] = override(rename=_EXTRA_KEY, struct_hook=_as_is)
        else:
            omit_none = unstructure and field.metadata.get("omit_if_none") is True
            out[field.name] = override(rename=_json_key(field), omit_if_default=omit_none)
    return out


def _configure(conv: cattrs.Converter, detailed: bool) -> None:
    # Leaf rules (str, numbers, timestamps, open enums...) come from _codegen, stated once.
    conv.register_structure_hook_factory(is_leaf, leaf_hook)
    for plain in (str, int, float, bool, dt.datetime, dt.date):  # cattrs' own come first
        conv.register_structure_hook(plain, leaf_hook(plain))
    conv.register_structure_hook_factory(_is_model_or_str, _model_or_str_factory(conv))
    conv.register_structure_hook_factory(_is_model_list, _list_hook_factory(conv))
    conv.register_unstructure_hook(dt.datetime, format_timestamp)
    conv.register_unstructure_hook(dt.date, lambda d: d.isoformat())
    # Hooks for the models are generated on first use, not at import: most programs
    # touch a few models, and generating all of them would double the import time.
    conv.register_structure_hook_factory(
        _MODEL_SET.__contains__, _structure_factory(conv, detailed)
    )
    conv.register_unstructure_hook_factory(_MODEL_SET.__contains__, _unstructure_factory(conv))
    conv.register_structure_hook(m.JobSearchResults, _job_search_results(conv))
    conv.register_unstructure_hook(m.JobSearchResults, _unstructure_job_search_results(conv))


def _structure_factory(conv: cattrs.Converter, detailed: bool) -> Callable[[Any], Any]:
    def factory(cls: Any) -> Callable[[Any, Any], Any]:
        spec = _layout(cls)
        if not detailed:
            return make_structure_fn(spec, conv.get_structure_hook)
        from cattrs.gen import make_dict_structure_fn

        return _precise_model(make_dict_structure_fn(cls, conv, **_overrides(cls, False)), spec)

    return factory


def _unstructure_factory(conv: cattrs.Converter) -> Callable[[Any], Any]:
    def factory(cls: Any) -> Callable[[Any], Any]:
        from cattrs.gen import make_dict_unstructure_fn

        plain = make_dict_unstructure_fn(cls, conv, **_overrides(cls, True))
        spec = _layout(cls)
        if not spec.keeps_extra:
            return plain
        defaults = spec.defaults

        def unstructure(value: Any) -> dict[str, Any]:
            out: dict[str, Any] = plain(value)
            # A key the document lacked stays out, unless the field has since been given
            # a value (``attrs.evolve``): then it is data, and goes out.
            for key in getattr(value.extra, "absent", ()):
                name, default = defaults[key]
                if getattr(value, name) == default:
                    out.pop(key, None)  # (a None check is already left out)
            out.update(value.extra)
            return out

        return unstructure

    return factory


def _make(detailed: bool) -> cattrs.Converter:
    import cattrs

    conv = cattrs.Converter(detailed_validation=detailed, forbid_extra_keys=False)
    _configure(conv, detailed)
    return conv


@functools.cache
def get_converter() -> cattrs.Converter:
    """The converter used for every response (fast pass), built on first use.

    Building it, and importing cattrs, waits for the first call so that
    ``import svc_async`` stays light.
    """
    return _make(detailed=False)


_fast_hooks: dict[Any, Callable[[Any, Any], Any]] = {}
"""The fast converter's hook per target type, looked up once (skips cattrs' dispatch)."""


@functools.cache
def _precise() -> cattrs.Converter:
    """The precise converter, built the first time an answer does not fit."""
    return _make(detailed=True)


StepWrapper = Callable[[], AbstractContextManager[object]]
"""Makes the context each synchronous structuring step runs in (see ``wrap_structuring``)."""

_wrapper: StepWrapper | None = None


def wrap_structuring(wrapper: StepWrapper | None) -> StepWrapper | None:
    """Run each synchronous step that turns an answer into models inside ``wrapper()``
    (None, the default: run them plainly); returns the wrapper set before.

    It is there for one choice the SDK leaves to you: pausing the garbage collector
    while a large answer becomes models. Such an answer allocates hundreds of thousands
    of objects, none of them garbage, and the collections they trigger cost about a
    third of the structuring time of 1,000 entries or more. The collector is the whole
    process's (every thread's, every library's), so the SDK never switches it itself::

        import contextlib
        import gc

        import svc_async.converter


        @contextlib.contextmanager
        def gc_paused():
            was_on = gc.isenabled()
            gc.disable()
            try:
                yield
            finally:
                if was_on:
                    gc.enable()


        svc_async.converter.wrap_structuring(gc_paused)

    A step is one ``structure`` call, or one slice of a big streamed answer decoded and
    structured; it never spans an ``await``. Steps may nest (a slice's ``structure``
    runs inside its step), so the wrapper must too: the one above restores only what it
    found. The setting is the process's, like the collector.
    """
    global _wrapper
    if wrapper is not None and not callable(wrapper):
        raise TypeError("wrapper must be callable (returning a context manager) or None")
    previous, _wrapper = _wrapper, wrapper
    return previous


def structuring_step() -> AbstractContextManager[object]:
    """The context of one synchronous structuring step: ``wrapper()``, or nothing."""
    wrapper = _wrapper
    return _PLAIN if wrapper is None else wrapper()


_PLAIN = contextlib.nullcontext()
"""The step's context when no wrapper is set (stateless: one serves every step)."""


@typing.overload
def structure(data: Any, tp: type[T], *, status: int | None = None) -> T: ...
@typing.overload
def structure(data: Any, tp: Any, *, status: int | None = None) -> Any: ...


def structure(data: Any, tp: Any, *, status: int | None = None) -> Any:
    """Structure decoded JSON into ``tp``, raising ResponseDecodeError with the JSON path.

    The fast pass builds the models (inside the ``wrap_structuring`` wrapper, if one is
    set); only when it fails does the precise pass run, to name the path.
    """
    hook = _fast_hooks.get(tp)
    if hook is None:
        hook = _fast_hooks[tp] = get_converter().get_structure_hook(tp)
    with structuring_step():
        try:
            return hook(data, tp)
        except Exception:
            pass
    return _precisely(data, tp, status)


def _precisely(data: Any, tp: Any, status: int | None) -> Any:
    """Structure with the precise converter: the result, or the error with its JSON path."""
    try:
        result = _precise().structure(data, tp)
    except Exception as exc:
        path, message = _locate(exc)
        name = str(tp).replace("svc_async.models.", "") if typing.get_args(tp) else tp.__name__
        raise ResponseDecodeError(
            f"response does not fit {name} at {path}: {message}", path=path, status=status
        ) from None
    return result


def _step(exc: Any, name: str) -> str:
    """The path step to attribute ``name`` of the class ``exc`` is about."""
    cls = getattr(exc, "cl", None)
    key = _layout(cls).keys.get(name, json_name(name)) if cls in _MODEL_SET else json_name(name)
    return f".{key}" if key.isidentifier() else f"[{key!r}]"


def _locate(exc: BaseException, path: str = "$") -> tuple[str, str]:
    """Follow the first leaf of a cattrs error tree, building the JSON path on the way."""
    from cattrs.errors import (
        AttributeValidationNote,
        ClassValidationError,
        IterableValidationError,
        IterableValidationNote,
    )

    if isinstance(exc, ClassValidationError | IterableValidationError) and exc.exceptions:
        child = exc.exceptions[0]
        for note in getattr(child, "__notes__", ()):
            if isinstance(note, AttributeValidationNote):
                return _locate(child, path + _step(exc, note.name))
            if isinstance(note, IterableValidationNote):
                return _locate(child, f"{path}[{note.index}]")
        return _locate(child, path)
    if isinstance(exc, _Nested):
        return _locate(exc.error, path + exc.where)
    if isinstance(exc, LeafError):
        return path + exc.where, str(exc)
    if isinstance(exc, KeyError):
        return path, f"required field {exc.args[0]!r} is missing"
    if isinstance(exc, AttributeError | TypeError) and "Mapping" not in str(exc):
        return path, "expected an object"
    return path, f"{type(exc).__name__}: {exc}"


def to_dict(model: Any) -> Any:
    """The service's JSON form of a model (or a list of models), ``extra`` included.

    For a parsed document, ``to_dict(parsed) == document``: keys the document left out
    stay out, nulls stay null, unknown keys come back from ``extra``; timestamps come
    back as UTC ``...Z`` strings (equal as instants); keys come in the model's field
    order, then the unknown ones. A model built by hand gives every key.
    """
    return get_converter().unstructure(model)


unstructure = to_dict
"""Turn a model into its JSON-ready form (camelCase keys, service formats): ``to_dict``."""
