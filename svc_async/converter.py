"""The one cattrs converter: JSON documents <-> the attrs models.

Configured here and nowhere else. Two converter instances share this configuration:
a fast one (no detailed validation) used for every response, and a precise one that is
only run when the fast pass fails, to name the JSON path of the problem.
"""

from __future__ import annotations

import datetime as dt
import functools
import gc
import types
import typing
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from . import models as m
from ._codegen import make_checks_fn, make_structure_fn
from .errors import ResponseDecodeError

if TYPE_CHECKING:
    import cattrs

T = TypeVar("T")

_IRREGULAR: dict[str, str] = {
    "download_url": "downloadURL",
    "invite_url": "inviteURL",
    "audio_file_url": "audioFileURL",
    "license_file_urls": "licenseFileURLs",
}
"""Attribute names whose JSON casing is not plain camelCase."""

_MODELS: tuple[type, ...] = (
    m.Logo,
    m.Organisation,
    m.SignupField,
    m.Season,
    m.Event,
    m.LicenseRight,
    m.SvcLicense,
    m.ExternalLicenseFile,
    m.ExternalLicense,
    m.LicenseData,
    m.Song,
    m.SoundRecording,
    m.EntryField,
    m.Entry,
    m.VerificationJob,
    m.LicenseDetails,
    m.JobRequest,
)


def json_name(attribute: str) -> str:
    """The service's JSON key for a model attribute (``svc_mix_id`` -> ``svcMixId``)."""
    if attribute in _IRREGULAR:
        return _IRREGULAR[attribute]
    head, *rest = attribute.split("_")
    return head + "".join(part.capitalize() for part in rest)


class _Nested(ValueError):
    """An error below ``where`` (a JSON path suffix such as ``[3]`` or ``.jobs``)."""

    def __init__(self, where: str, error: BaseException) -> None:
        super().__init__(str(error))
        self.where = where
        self.error = error


class _LeafError(ValueError):
    """A leaf value of the wrong type; ``where`` is a path suffix below the current key."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


# Leaf hooks: strict (no coercion of 1 to "1" or "1" to 1) and cheap (one type check).


def _str(value: Any, _: Any) -> str:
    if type(value) is str:
        return value
    raise _LeafError(f"expected a string, got {_describe(value)}")


def _int(value: Any, _: Any) -> int:
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise _LeafError(f"expected an integer, got {_describe(value)}")


def _float(value: Any, _: Any) -> float:
    t = type(value)
    if t is float:
        return value  # type: ignore[no-any-return]
    if t is int:
        return float(value)
    raise _LeafError(f"expected a number, got {_describe(value)}")


def _bool(value: Any, _: Any) -> bool:
    if type(value) is bool:
        return value
    raise _LeafError(f"expected a boolean, got {_describe(value)}")


def parse_timestamp(value: Any) -> dt.datetime:
    """Parse an ISO 8601 timestamp (``Z`` or any offset) into an aware datetime.

    A timestamp without an offset is taken as UTC, which is what the service means.
    """
    if type(value) is not str:
        raise _LeafError(f"expected an ISO 8601 timestamp string, got {_describe(value)}")
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise _LeafError(f"invalid timestamp {value[:40]!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def format_timestamp(value: dt.datetime) -> str:
    """Format an aware datetime as the service does: UTC, milliseconds, ``Z``."""
    if value.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return value.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _datetime(value: Any, _: Any) -> dt.datetime:
    return parse_timestamp(value)


def _date(value: Any, _: Any) -> dt.date:
    if type(value) is str:
        try:
            return dt.date.fromisoformat(value[:10])
        except ValueError:
            pass
    raise _LeafError(f"expected a YYYY-MM-DD date, got {_describe(value)}")


def _any_dict(value: Any, _: Any) -> dict[str, Any]:
    if type(value) is dict:
        return value
    raise _LeafError(f"expected an object, got {_describe(value)}")


def _any_list(value: Any, _: Any) -> list[Any]:
    if type(value) is list:
        return value
    raise _LeafError(f"expected an array, got {_describe(value)}")


_ONLY_STR = {str}


def _str_list(value: Any, _: Any) -> list[str]:
    if type(value) is not list:
        raise _LeafError(f"expected an array of strings, got {_describe(value)}")
    if value and set(map(type, value)) != _ONLY_STR:
        index = next(i for i, item in enumerate(value) if type(item) is not str)
        raise _LeafError(f"expected a string, got {_describe(value[index])}", f"[{index}]")
    return value


def _open_enum(enum: type[StrEnum], optional: bool = False) -> Callable[[Any, Any], Any]:
    members: dict[str, StrEnum] = {member.value: member for member in enum}
    lookup = members.get

    def structure(value: Any, _: Any) -> StrEnum | str | None:
        if type(value) is str:
            return lookup(value, value)
        if optional and value is None:
            return None
        raise _LeafError(f"expected a string ({enum.__name__}), got {_describe(value)}")

    return structure


def _entry_value(value: Any, _: Any) -> str | list[str] | None:
    if value is None or type(value) is str:
        return value
    return _str_list(value, None)


def _license_checks(value: Any, _: Any) -> m.LicenseChecks:
    if type(value) is not dict:
        raise _LeafError(f"expected an object of licence checks, got {_describe(value)}")
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] | None = None
    for key, result in value.items():
        name = _CHECK_ATTRS.get(key)
        if name is not None:
            if type(result) is str:
                kwargs[name] = _CHECK_VALUES(result, result)
            elif result is not None:
                raise _LeafError(f"expected a string, got {_describe(result)}", f"[{key!r}]")
        elif key == m.TERRITORY_MATCH_KEY:
            if result is not None:
                kwargs["territory_match"] = _territories(result, key)
        else:
            if extra is None:
                extra = {}
            extra[key] = result
    if extra is not None:
        kwargs["extra"] = extra
    return m.LicenseChecks(**kwargs)


def _territories(result: Any, key: str) -> dict[str, m.CheckResult | str]:
    if type(result) is not dict:
        raise _LeafError(f"expected an object, got {_describe(result)}", f"[{key!r}]")
    territory = {}
    for country, outcome in result.items():
        if type(outcome) is not str:
            raise _LeafError(f"expected a string, got {_describe(outcome)}", f"[{key!r}].{country}")
        territory[country] = _CHECK_VALUES(outcome, outcome)
    return territory


_CHECK_ATTRS = m.LICENSE_CHECK_NAMES
_CHECK_VALUES = {member.value: member for member in m.CheckResult}.get


def _unstructure_license_checks(checks: m.LicenseChecks) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, name in m.LICENSE_CHECK_NAMES.items():
        value = getattr(checks, name)
        if value is not None:
            out[key] = str(value)
    if checks.territory_match is not None:
        out[m.TERRITORY_MATCH_KEY] = {k: str(v) for k, v in checks.territory_match.items()}
    out.update(checks.extra)
    return out


def _job_search_results(conv: cattrs.Converter) -> Callable[[Any, Any], m.JobSearchResults]:
    jobs_type = list[m.VerificationJob]

    def structure(value: Any, _: Any) -> m.JobSearchResults:
        if type(value) is not dict:
            raise _LeafError(f"expected an object with jobs and count, got {_describe(value)}")
        # The examples call the list "jobs"; the published type definitions call it "results".
        key = "jobs" if "jobs" in value or "results" not in value else "results"
        try:
            jobs = conv.structure(value.get(key, []), jobs_type)
        except Exception as exc:
            raise _Nested(f".{key}", exc) from None
        count = value.get("count", len(jobs))
        if type(count) is not int:
            raise _LeafError(f"expected an integer, got {_describe(count)}", ".count")
        return m.JobSearchResults(jobs=jobs, count=count)

    return structure


def _is_open_enum_union(tp: Any) -> bool:
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return False
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return (
        len(args) == 2
        and str in args
        and any(isinstance(a, type) and issubclass(a, StrEnum) for a in args)
    )


def _open_enum_union_hook(tp: Any) -> Callable[[Any, Any], Any]:
    args = typing.get_args(tp)
    enum = next(a for a in args if isinstance(a, type) and issubclass(a, StrEnum))
    return _open_enum(enum, optional=type(None) in args)


def _optional(hook: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def structure(value: Any, tp: Any) -> Any:
        return None if value is None else hook(value, tp)

    return structure


def _opt_str(value: Any, _: Any) -> str | None:
    if value is None or type(value) is str:
        return value
    raise _LeafError(f"expected a string or null, got {_describe(value)}")


def _opt_int(value: Any, _: Any) -> int | None:
    return None if value is None else _int(value, None)


def _opt_datetime(value: Any, _: Any) -> dt.datetime | None:
    return None if value is None else parse_timestamp(value)


def _is_optional_model(tp: Any) -> bool:
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return False
    args = typing.get_args(tp)
    return len(args) == 2 and type(None) in args and any(attrs.has(a) for a in args)


def _optional_model_factory(conv: cattrs.Converter) -> Callable[[Any], Any]:
    def factory(tp: Any) -> Callable[[Any, Any], Any]:
        model = next(a for a in typing.get_args(tp) if a is not type(None))
        inner = conv.get_structure_hook(model)

        def structure(value: Any, _: Any) -> Any:
            return None if value is None else inner(value, model)

        return structure

    return factory


def _is_model_list(tp: Any) -> bool:
    args = typing.get_args(tp)
    return typing.get_origin(tp) is list and len(args) == 1 and attrs.has(args[0])


def _list_hook_factory(detailed: bool, conv: cattrs.Converter) -> Callable[[Any], Any]:
    def factory(tp: Any) -> Callable[[Any, Any], list[Any]]:
        item_type = typing.get_args(tp)[0]
        item = conv.get_structure_hook(item_type)

        def fast(value: Any, _: Any) -> list[Any]:
            if type(value) is not list:
                raise _LeafError(f"expected an array, got {_describe(value)}")
            return [item(x, item_type) for x in value]

        def precise(value: Any, _: Any) -> list[Any]:
            if type(value) is not list:
                raise _LeafError(f"expected an array, got {_describe(value)}")
            out = []
            for index, x in enumerate(value):
                try:
                    out.append(item(x, item_type))
                except Exception as exc:
                    raise _Nested(f"[{index}]", exc) from None
            return out

        return precise if detailed else fast

    return factory


def _object_checked(hook: Callable[[Any, Any], T]) -> Callable[[Any, Any], T]:
    """In the precise pass, say "expected an object" rather than a key error on a non-dict."""

    def structure(value: Any, tp: Any) -> T:
        if type(value) is not dict:
            raise _LeafError(f"expected an object, got {_describe(value)}")
        return hook(value, tp)

    return structure


def _exactly(expected: Any) -> Callable[[Any], bool]:
    return lambda tp: bool(tp == expected)


def _configure(conv: cattrs.Converter, detailed: bool) -> None:
    conv.register_structure_hook(str, _str)
    conv.register_structure_hook(int, _int)
    conv.register_structure_hook(float, _float)
    conv.register_structure_hook(bool, _bool)
    conv.register_structure_hook(dt.datetime, _datetime)
    conv.register_structure_hook(dt.date, _date)
    for tp, hook in (
        (str | None, _opt_str),
        (int | None, _opt_int),
        (dt.datetime | None, _opt_datetime),
        (dict[str, Any], _any_dict),
        (dict[str, Any] | None, _optional(_any_dict)),
        (list[Any], _any_list),
        (list[str], _str_list),
        (str | list[str] | None, _entry_value),
    ):
        conv.register_structure_hook_func(_exactly(tp), hook)
    conv.register_structure_hook(
        m.LicenseChecks,
        _license_checks
        if detailed
        else make_checks_fn(
            m.LicenseChecks, m.LICENSE_CHECK_NAMES, m.TERRITORY_MATCH_KEY, m.CheckResult
        ),
    )
    conv.register_structure_hook_factory(_is_open_enum_union, _open_enum_union_hook)
    conv.register_structure_hook_factory(_is_model_list, _list_hook_factory(detailed, conv))
    conv.register_structure_hook_factory(_is_optional_model, _optional_model_factory(conv))
    conv.register_unstructure_hook(dt.datetime, format_timestamp)
    conv.register_unstructure_hook(dt.date, lambda d: d.isoformat())
    conv.register_unstructure_hook(m.LicenseChecks, _unstructure_license_checks)
    # Hooks for the models are generated on first use, not at import: most programs
    # touch a few models, and generating all of them would double the import time.
    conv.register_structure_hook_factory(
        _MODEL_SET.__contains__, _structure_factory(conv, detailed)
    )
    conv.register_unstructure_hook_factory(_MODEL_SET.__contains__, _unstructure_factory(conv))
    conv.register_structure_hook(m.JobSearchResults, _job_search_results(conv))


_MODEL_SET = frozenset(_MODELS)


def _renames(cls: type) -> dict[str, Any]:
    from cattrs.gen import override

    return {a.name: override(rename=json_name(a.name)) for a in attrs.fields(cls)}


def _structure_factory(conv: cattrs.Converter, detailed: bool) -> Callable[[Any], Any]:
    def factory(cls: Any) -> Callable[[Any, Any], Any]:
        if not detailed:
            return make_structure_fn(cls, json_name, conv.get_structure_hook)
        from cattrs.gen import make_dict_structure_fn

        return _object_checked(make_dict_structure_fn(cls, conv, **_renames(cls)))

    return factory


def _unstructure_factory(conv: cattrs.Converter) -> Callable[[Any], Any]:
    def factory(cls: Any) -> Callable[[Any], Any]:
        from cattrs.gen import make_dict_unstructure_fn

        return make_dict_unstructure_fn(cls, conv, **_renames(cls))

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


@functools.cache
def _precise() -> cattrs.Converter:
    """The precise converter, built the first time an answer does not fit."""
    return _make(detailed=True)


def structure(data: Any, tp: type[T] | Any, *, status: int | None = None) -> T:
    """Structure decoded JSON into ``tp``, raising ResponseDecodeError with the JSON path.

    The garbage collector is paused while the fast pass builds the models: a large
    answer allocates hundreds of thousands of objects, none of them garbage, and the
    collections that would trigger cost about a third of the time.
    """
    gc_was_on = gc.isenabled()
    if gc_was_on:
        gc.disable()
    try:
        return get_converter().structure(data, tp)  # type: ignore[no-any-return]
    except Exception:
        pass
    finally:
        if gc_was_on:
            gc.enable()
    try:
        result = _precise().structure(data, tp)
    except Exception as exc:
        path, message = _locate(exc)
        name = str(tp).replace("svc_async.models.", "") if typing.get_args(tp) else tp.__name__
        raise ResponseDecodeError(
            f"response does not fit {name} at {path}: {message}", path=path, status=status
        ) from None
    return result  # type: ignore[no-any-return]


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
                return _locate(child, f"{path}.{json_name(note.name)}")
            if isinstance(note, IterableValidationNote):
                return _locate(child, f"{path}[{note.index}]")
        return _locate(child, path)
    if isinstance(exc, _Nested):
        return _locate(exc.error, path + exc.where)
    if isinstance(exc, _LeafError):
        return path + exc.where, str(exc)
    if isinstance(exc, KeyError):
        return path, f"required field {exc.args[0]!r} is missing"
    if isinstance(exc, AttributeError | TypeError) and "Mapping" not in str(exc):
        return path, "expected an object"
    return path, f"{type(exc).__name__}: {exc}"


def unstructure(value: Any) -> Any:
    """Turn a model into its JSON-ready form (camelCase keys, service formats)."""
    return get_converter().unstructure(value)
