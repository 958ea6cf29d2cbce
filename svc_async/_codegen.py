"""Generated structure functions for the fast pass of the converter.

cattrs' generated functions call one hook per attribute. For the leaf types that make up
most of a large answer (strings, numbers, booleans, timestamps, open enums) this module
inlines the check instead, so structuring a song is one function call rather than
twenty. Anything else still goes through the converter's own hook. Errors here are
terse on purpose: on any failure the converter re-runs its precise pass, which names
the JSON path.
"""

from __future__ import annotations

import datetime as dt
import types
import typing
from collections.abc import Callable
from enum import StrEnum
from typing import Any

import attrs


class FastPathError(ValueError):
    """The fast pass met something it does not accept; the precise pass will say what."""


def _bad(*_: Any) -> Any:
    raise FastPathError


_MISSING = object()
_UTC = dt.UTC
_fromisoformat = dt.datetime.fromisoformat


def _optional_of(tp: Any) -> tuple[Any, bool]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if type(None) in args:
            rest = tuple(a for a in args if a is not type(None))
            inner = rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007
            return inner, True
    return tp, False


def _open_enum(tp: Any) -> type[StrEnum] | None:
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return None
    args = typing.get_args(tp)
    enums = [a for a in args if isinstance(a, type) and issubclass(a, StrEnum)]
    return enums[0] if len(args) == 2 and str in args and enums else None


def _check(
    var: str, tp: Any, optional: bool, names: dict[str, Any], hook: Callable[[Any], Any]
) -> list[str]:
    """Lines that validate (and convert) ``var`` in place."""
    none_ok = f"{var} is not None and " if optional else ""
    if tp is str:
        return [f"if {none_ok}type({var}) is not str: _bad()"]
    if tp is bool:
        return [f"if {none_ok}type({var}) is not bool: _bad()"]
    if tp is int:
        return [f"if {none_ok}type({var}) is not int: {var} = _int({var})"]
    if tp is float:
        return [f"if {none_ok}type({var}) is not float: {var} = _float({var})"]
    if tp is dt.datetime:
        body = [
            f"{var} = _fromisoformat({var}) if type({var}) is str else _bad()",
            f"if {var}.tzinfo is None: {var} = {var}.replace(tzinfo=_UTC)",
        ]
        if optional:
            return [f"if {var} is not None:", *("    " + line for line in body)]
        return body
    enum = _open_enum(tp)
    if enum is not None:
        lookup = f"_members_{enum.__name__}"
        names[lookup] = {m.value: m for m in enum}
        body = [
            f"if type({var}) is not str: _bad()",
            f"if {var} in {lookup}: {var} = {lookup}[{var}]",
        ]
        if optional:
            return [f"if {var} is not None:", *("    " + line for line in body)]
        return body
    full = typing.Optional[tp] if optional else tp  # noqa: UP045
    name = f"_h_{len(names)}"
    type_name = f"_t_{len(names)}"
    names[name] = hook(full)
    names[type_name] = full
    return [f"{var} = {name}({var}, {type_name})"]


def _int(value: Any) -> int:
    if type(value) is float and value.is_integer():
        return int(value)
    raise FastPathError


def _float(value: Any) -> float:
    if type(value) is int:
        return float(value)
    raise FastPathError


def _construct(cls: type, arguments: list[str], names: dict[str, Any]) -> list[str]:
    """Lines that build the instance from ``name=var`` arguments and return it.

    A frozen attrs class sets each attribute through ``object.__setattr__`` in its
    ``__init__``, which costs twice what setting the slots directly does. When the class
    has nothing for ``__init__`` to run (no validators, converters or post-init), the
    slots are filled directly; the instance is the same, and still frozen.
    """
    direct = (
        "__slots__" in cls.__dict__
        and not hasattr(cls, "__attrs_post_init__")
        and all(f.validator is None and f.converter is None for f in attrs.fields(cls))
    )
    if not direct:
        return [f"    return _cls({', '.join(arguments)})"]
    names["_new"] = object.__new__
    lines = ["    obj = _new(_cls)"]
    for argument in arguments:
        name, var = argument.split("=")
        setter = f"_set_{name}"
        names[setter] = getattr(cls, name).__set__
        lines.append(f"    {setter}(obj, {var})")
    return [*lines, "    return obj"]


def make_structure_fn(
    cls: type, json_name: Callable[[str], str], hook: Callable[[Any], Any]
) -> Callable[[Any, Any], Any]:
    """A structure function for the attrs class ``cls`` with leaf checks inlined.

    ``json_name`` maps attribute names to JSON keys; ``hook(type)`` gives the converter's
    structure hook for every type this module does not inline.
    """
    hints = typing.get_type_hints(cls)
    names: dict[str, Any] = {
        "_bad": _bad,
        "_MISSING": _MISSING,
        "_UTC": _UTC,
        "_fromisoformat": _fromisoformat,
        "_int": _int,
        "_float": _float,
        "_cls": cls,
    }
    lines = ["def structure(o, _=None):", "    if type(o) is not dict: _bad()"]
    arguments = []
    for index, field in enumerate(attrs.fields(cls)):
        var = f"v{index}"
        key = json_name(field.name)
        tp, optional = _optional_of(hints[field.name])
        check = _check(var, tp, optional, names, hook)
        default = field.default
        if default is attrs.NOTHING:
            lines.append(f"    {var} = o[{key!r}]")
            lines += ["    " + line for line in check]
        elif default is None and optional:
            lines.append(f"    {var} = o[{key!r}] if {key!r} in o else None")
            lines += ["    " + line for line in check]
        else:
            lines.append(f"    if {key!r} not in o:")
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                names[f"_d{index}"] = default.factory
                lines.append(f"        {var} = _d{index}()")
            else:
                names[f"_d{index}"] = default
                lines.append(f"        {var} = _d{index}")
            lines.append("    else:")
            lines.append(f"        {var} = o[{key!r}]")
            lines += ["        " + line for line in check]
        arguments.append(f"{field.name}={var}")
    lines += _construct(cls, arguments, names)
    source = "\n".join(lines)
    code = compile(source, f"<svc_async fast structure {cls.__name__}>", "exec")
    exec(code, names)
    function: Callable[[Any, Any], Any] = names["structure"]
    return function


def make_checks_fn(
    cls: type,
    names: dict[str, str],
    territory_key: str,
    results: type[StrEnum],
) -> Callable[[Any, Any], Any]:
    """A structure function for LicenseChecks: one lookup per known check, no loop.

    ``names`` maps JSON keys (with spaces) to attribute names; a key outside them and
    ``territory_key`` goes to ``extra``.
    """
    scope: dict[str, Any] = {
        "_bad": _bad,
        "_cls": cls,
        "_members": {m.value: m for m in results},
        "_lookup": {m.value: m for m in results}.get,
        "_known": frozenset([*names, territory_key]),
    }
    lines = ["def structure(o, _=None):", "    if type(o) is not dict: _bad()"]
    arguments = []
    for index, (key, attribute) in enumerate(names.items()):
        var = f"v{index}"
        lines.append(f"    {var} = o[{key!r}] if {key!r} in o else None")
        lines.append(f"    if {var} is not None:")
        lines.append(f"        if type({var}) is not str: _bad()")
        lines.append(f"        if {var} in _members: {var} = _members[{var}]")
        arguments.append(f"{attribute}={var}")
    lines += [
        f"    t = o[{territory_key!r}] if {territory_key!r} in o else None",
        "    if t is not None:",
        "        if type(t) is not dict: _bad()",
        "        t = {c: (_lookup(r, r) if type(r) is str else _bad()) for c, r in t.items()}",
        "    extra = {} if o.keys() <= _known else {k: x for k, x in o.items() if k not in _known}",
    ]
    arguments += ["territory_match=t", "extra=extra"]
    lines += _construct(cls, arguments, scope)
    code = compile("\n".join(lines), f"<svc_async fast structure {cls.__name__}>", "exec")
    exec(code, scope)
    function: Callable[[Any, Any], Any] = scope["structure"]
    return function
