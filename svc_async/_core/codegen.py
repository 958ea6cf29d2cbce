"""Leaf rules, and the generated structure functions of the converter's fast pass.

Every leaf rule (what a JSON string, number, boolean, timestamp or open-enum value must
look like, and what it becomes) is written once here, as a few lines of Python source.
The fast pass inlines those lines into one generated function per model, so structuring
a song is one call rather than twenty; the precise pass compiles the same lines into a
cattrs hook (``leaf_hook``), so both passes accept exactly the same values. Generated
source is registered in ``linecache``: a traceback through it shows the code.

Why a generator beside cattrs' own: with the fast pass on cattrs' ``make_dict_structure_fn``
instead (the same rules as hooks, every promise kept, every converter test passing),
decode + structure of 1,000 entries (``bench_decode``) took 1.27 to 1.33 times as long:
ours took 0.75 to 0.79 of its time (medians of the per-round ratio, paired runs in one
process, 21 rounds each, 2026-12-02), structuring one small job 0.54.
"""

from __future__ import annotations

import datetime as dt
import itertools
import linecache
import re
import types
import typing
from collections.abc import Callable, Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Any

import attrs

from ..errors import LeafError
from ..redact import redact_text


def describe(value: Any) -> str:
    """A short, safe description of a bad value for an error message."""
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def _fail(what: str, value: Any) -> Any:
    raise LeafError(f"expected {what}, got {describe(value)}")


def _integral(value: Any, what: str = "an integer") -> int:
    """An integral float as the integer it is (JSON ``12.0`` is 12); else ``expected what``."""
    if type(value) is float and value.is_integer():
        return int(value)
    return _fail(what, value)  # type: ignore[no-any-return]


def _lower_case_timestamp(value: str) -> dt.datetime:
    """A timestamp ``fromisoformat`` refused: RFC 3339 (5.6) lets its ``T`` and ``Z`` be
    lower case, as ``fromisoformat`` does not; anything else is invalid."""
    try:
        return dt.datetime.fromisoformat(value.upper())
    except ValueError:
        raise LeafError(f"invalid timestamp {value[:40]!r}") from None


def _date(value: Any) -> dt.date:
    if type(value) is str:
        try:
            return dt.date.fromisoformat(value[:10])
        except ValueError:
            pass
    return _fail("a YYYY-MM-DD date", value)  # type: ignore[no-any-return]


_ONLY_STR = {str}
NO_KEYS_MAP: Mapping[str, Any] = MappingProxyType({})


def _str_list(value: Any) -> list[str]:
    if type(value) is not list:
        return _fail("an array of strings", value)  # type: ignore[no-any-return]
    try:
        "".join(value)  # a C-speed check that every item is a str (JSON has no subclasses)
    except TypeError:
        index = next(i for i, item in enumerate(value) if type(item) is not str)
        raise LeafError(f"expected a string, got {describe(value[index])}", f"[{index}]") from None
    return value


def _str_or_str_list(value: Any) -> str | list[str]:
    if type(value) is list:
        return _str_list(value)
    return _fail("a string or an array of strings", value)  # type: ignore[no-any-return]


def _enum_map(members: dict[str, StrEnum]) -> Callable[[Any], dict[str, Any]]:
    lookup = members.get

    def convert(value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            return _fail("an object", value)  # type: ignore[no-any-return]
        if value and set(map(type, value.values())) != _ONLY_STR:
            key = next(k for k, item in value.items() if type(item) is not str)
            raise LeafError(f"expected a string, got {describe(value[key])}", f".{key}")
        return {key: lookup(item, item) for key, item in value.items()}

    return convert


_SCOPE: dict[str, Any] = {
    "_fail": _fail,
    "_integral": _integral,
    "_lower_case_timestamp": _lower_case_timestamp,
    "_date": _date,
    "_str_list": _str_list,
    "_str_or_str_list": _str_or_str_list,
    "_fromisoformat": dt.datetime.fromisoformat,
    "_UTC": dt.UTC,
}
"""Names the leaf rules' source may use."""

_RULES: dict[Any, str] = {
    str: "if type(v) is not str: _fail('a string', v)",
    bool: "if type(v) is not bool: _fail('a boolean', v)",
    int: "if type(v) is not int: v = _integral(v)",
    # A float field keeps an integer as it came (12 stays 12): equal, and round-trips.
    float: "if type(v) is not float and type(v) is not int: _fail('a number', v)",
    int | str: (
        "if type(v) is not int and type(v) is not str: v = _integral(v, 'a number or a string')"
    ),
    dt.datetime: (
        "if type(v) is not str: _fail('an ISO 8601 timestamp string', v)\n"
        "try:\n"
        "    v = _fromisoformat(v)\n"
        "except ValueError:\n"
        "    v = _lower_case_timestamp(v)\n"
        "if v.tzinfo is None: v = v.replace(tzinfo=_UTC)"  # the service means UTC
    ),
    dt.date: "v = _date(v)",
    list[str]: "v = _str_list(v)",
    list[Any]: "if type(v) is not list: _fail('an array', v)",
    dict[str, Any]: "if type(v) is not dict: _fail('an object', v)",
    str | list[str]: "if type(v) is not str: v = _str_or_str_list(v)",
}
"""One statement of each leaf rule: source that checks ``v`` and may replace it."""


def optional_of(tp: Any) -> tuple[Any, bool]:
    """``(inner, True)`` for ``X | None``, else ``(tp, False)``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if type(None) in args:
            rest = tuple(a for a in args if a is not type(None))
            inner = rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007
            return inner, True
    return tp, False


def open_enum_of(tp: Any) -> type[StrEnum] | None:
    """The enum of an open-enum type ``SomeEnum | str``, else None."""
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return None
    args = typing.get_args(tp)
    enums = [a for a in args if isinstance(a, type) and issubclass(a, StrEnum)]
    return enums[0] if len(args) == 2 and str in args and enums else None


def _enum_map_of(tp: Any) -> type[StrEnum] | None:
    if typing.get_origin(tp) is dict:
        key, value = typing.get_args(tp)
        return open_enum_of(value) if key is str else None
    return None


def leaf_source(tp: Any, scope: dict[str, Any]) -> list[str] | None:
    """The lines checking ``v`` against the leaf rule of ``tp`` (None if not a leaf).

    ``X | None`` lets None through; names the lines need are added to ``scope``.
    """
    inner, optional = optional_of(tp)
    source = _RULES.get(inner)
    if source is None:
        enum = open_enum_of(inner)
        mapped = _enum_map_of(inner)
        if enum is not None:
            name = f"_members_{enum.__name__}"
            scope[name] = {member.value: member for member in enum}
            source = (
                f"if type(v) is not str: _fail('a string ({enum.__name__})', v)\n"
                f"if v in {name}: v = {name}[v]"
            )
        elif mapped is not None:
            name = f"_map_{mapped.__name__}"
            scope[name] = _enum_map({member.value: member for member in mapped})
            source = f"v = {name}(v)"
        else:
            return None
    lines = source.split("\n")
    if optional and len(lines) == 1 and lines[0].startswith("if "):
        return [f"if v is not None and {lines[0][3:]}"]
    if optional:
        return ["if v is not None:", *("    " + line for line in lines)]
    return lines


def is_leaf(tp: Any) -> bool:
    """True when ``tp`` has a leaf rule."""
    return leaf_source(tp, {}) is not None


_serial = itertools.count()


def _compile(source: str, label: str, scope: dict[str, Any]) -> Any:
    """Compile and run generated ``source``; register it so tracebacks show it."""
    filename = f"<svc_async {label} #{next(_serial)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), scope)
    return scope["structure"]


def leaf_hook(tp: Any) -> Callable[[Any, Any], Any]:
    """A cattrs structure hook applying the leaf rule of ``tp`` (for the precise pass)."""
    scope = dict(_SCOPE)
    lines = leaf_source(tp, scope)
    if lines is None:
        raise TypeError(f"no leaf rule for {tp!r}")
    source = "\n".join(
        ["def structure(v, _=None):", *("    " + line for line in lines), "    return v"]
    )
    return _compile(source, f"leaf {tp}", scope)  # type: ignore[no-any-return]


def _inline(var: str, lines: list[str], indent: str) -> list[str]:
    """The rule's lines applied to ``var`` (the rules name their value ``v``)."""
    return [indent + _V.sub(var, line) for line in lines]


_V = re.compile(r"\bv\b")


NO_KEYS: frozenset[str] = frozenset()


class Extra(dict[str, Any]):
    """A model's unknown JSON keys (read-only), and the optional keys its document lacked.

    ``absent`` lets ``to_dict`` give back a document without the keys it did not have
    (a missing key and a null one stay different). Equality is the mapping's alone.
    """

    __slots__ = ("absent",)

    def __init__(self, items: Mapping[str, Any] = NO_KEYS_MAP, absent: frozenset[str] = NO_KEYS):
        super().__init__(items)
        self.absent = absent

    def _read_only(self, *_: Any, **__: Any) -> Any:
        raise TypeError("a model's extra is read-only")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only
    __ior__ = _read_only

    def __reduce__(self) -> Any:
        return (Extra, (dict(self), self.absent))

    def __repr__(self) -> str:
        """The keys and values, with the query values of links and secret-looking fields
        hidden (``redact_text``), as in every repr of the SDK."""
        return f"Extra({redact_text(dict.__repr__(self))})"


NO_EXTRA = Extra()
"""The one shared ``extra`` of every object with no unknown and no absent keys."""


@attrs.frozen
class Layout:
    """How a model maps to JSON: each field's key, and which keys may be absent."""

    cls: type
    keys: dict[str, str]
    """Attribute name -> JSON key, for the fields read from JSON."""
    known: frozenset[str]
    keeps_extra: bool
    """The model has ``extra`` (and a record of absent keys): response models do."""
    defaults: dict[str, tuple[str, Any]]
    """JSON key of each field with a default (a key a document may leave out), in field
    order -> (attribute name, default value)."""

    def extra(self, o: dict[str, Any], absent: frozenset[str]) -> Extra:
        """The keys of ``o`` this model does not know, with the ``absent`` record."""
        known = self.known
        unknown = {k: x for k, x in o.items() if k not in known}
        return Extra(unknown, absent) if unknown or absent else NO_EXTRA

    def absent(self, o: dict[str, Any]) -> frozenset[str]:
        """The optional keys ``o`` lacks."""
        return frozenset(k for k in self.defaults if k not in o) or NO_KEYS


EXTRA = "extra"


def layout(cls: type, json_key: Callable[[attrs.Attribute[Any]], str]) -> Layout:
    """The JSON layout of the attrs class ``cls``."""
    fields = [f for f in attrs.fields(cls) if f.name != EXTRA]
    keys = {f.name: json_key(f) for f in fields}
    names = {f.name for f in attrs.fields(cls)}
    defaults = {
        keys[f.name]: (
            f.name,
            f.default.factory() if isinstance(f.default, attrs.Factory) else f.default,  # type: ignore[arg-type]
        )
        for f in fields
        if f.default is not attrs.NOTHING
    }
    return Layout(cls, keys, frozenset(keys.values()), EXTRA in names, defaults)


def _construct(cls: type, arguments: list[str], names: dict[str, Any]) -> list[str]:
    """Lines that build the instance from ``name=var`` arguments and return it.

    A frozen attrs class sets each attribute through ``object.__setattr__`` in its
    ``__init__``, which costs twice what setting the slots directly does. When the class
    has nothing for ``__init__`` to run (no validators, converters or post-init), the
    slots are filled directly; the instance is the same, and still frozen. Measured
    against calling ``__init__`` (2026-12-02): 0.86 to 0.94 of the time of ``bench_decode``
    at 1,000 entries; 17% fewer instructions per 461-entry ``entries.for_event`` call and
    3% per small ``jobs.get`` (``bench_instructions``).
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


def _hook_source(
    tp: Any, index: int, names: dict[str, Any], hook: Callable[[Any], Any]
) -> list[str]:
    """Lines structuring ``v`` of a non-leaf type through the converter's hooks.

    Models, optional models, lists of models and ``Model | str`` call the model's own
    structure function directly (one call per object, not two).
    """
    inner, optional = optional_of(tp)
    h, t = f"_h{index}", f"_t{index}"
    args = typing.get_args(inner)
    if attrs.has(inner):
        names[h], names[t] = hook(inner), inner
        call = [f"v = {h}(v, {t})"]
        return [f"if v is not None: v = {h}(v, {t})"] if optional else call
    if typing.get_origin(inner) is list and len(args) == 1 and attrs.has(args[0]):
        names[h], names[t] = hook(args[0]), args[0]
        line = f"v = [{h}(x, {t}) for x in v] if type(v) is list else _fail('an array', v)"
        return [f"if v is not None: {line}"] if optional else [line]
    models = [a for a in args if attrs.has(a)]
    if len(args) == 2 and str in args and len(models) == 1:
        names[h], names[t] = hook(models[0]), models[0]
        none = "v is not None and " if optional else ""
        return [
            f"if type(v) is dict: v = {h}(v, {t})",
            f"elif {none}type(v) is not str: _fail('an object or a string', v)",
        ]
    names[h], names[t] = hook(tp), tp
    return [f"v = {h}(v, {t})"]


def make_structure_fn(spec: Layout, hook: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    """The fast structure function for ``spec.cls``: leaf rules inlined.

    ``hook(type)`` gives the converter's structure hook for every type without a leaf
    rule (models, lists of models). Unknown keys go to ``extra`` and the optional keys a
    document lacks are recorded, both only computed when a key count says they exist.
    """
    cls = spec.cls
    hints = typing.get_type_hints(cls)
    by_mask: dict[int, Extra] = {}

    def empty_for(mask: int) -> Extra:
        # Few combinations of absent keys occur: one shared, empty Extra for each (bounded).
        keys = frozenset(k for i, k in enumerate(spec.defaults) if mask >> i & 1)
        extra = Extra(NO_KEYS_MAP, keys)
        if len(by_mask) < 256:
            by_mask[mask] = extra
        return extra

    names: dict[str, Any] = {
        **_SCOPE,
        "_cls": cls,
        "_extra": spec.extra,
        "_by_mask": by_mask,
        "_empty_for": empty_for,
        "_NO_EXTRA": NO_EXTRA,
        "_NO_KEYS": NO_KEYS,
    }
    lines = ["def structure(o, _=None):", "    if type(o) is not dict: _fail('an object', o)"]
    if spec.keeps_extra:
        lines.append("    missing = 0")
    arguments = []
    fields = {f.name: f for f in attrs.fields(cls)}
    bit = 1
    for index, (name, key) in enumerate(spec.keys.items()):
        var = f"v{index}"
        field = fields[name]
        tp = hints[name]
        check = leaf_source(tp, names) or _hook_source(tp, index, names, hook)
        default = field.default
        if default is attrs.NOTHING:
            lines.append(f"    {var} = o[{key!r}]")
            lines += _inline(var, check, "    ")
        else:
            lines.append(f"    if {key!r} in o:")
            lines.append(f"        {var} = o[{key!r}]")
            lines += _inline(var, check, "        ")
            lines.append("    else:")
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                names[f"_d{index}"] = default.factory
                lines.append(f"        {var} = _d{index}()")
            else:
                names[f"_d{index}"] = default
                lines.append(f"        {var} = _d{index}")
            if spec.keeps_extra:
                lines.append(f"        missing |= {bit}")
            bit <<= 1
        arguments.append(f"{name}={var}")
    if spec.keeps_extra:
        size = len(spec.keys)
        lines += [
            "    if missing:",
            "        extra = _by_mask[missing] if missing in _by_mask else _empty_for(missing)",
            f"        if len(o) + len(extra.absent) != {size}: extra = _extra(o, extra.absent)",
            f"    elif len(o) == {size}:",
            "        extra = _NO_EXTRA",
            "    else:",
            "        extra = _extra(o, _NO_KEYS)",
        ]
        arguments.append(f"{EXTRA}=extra")
    lines += _construct(cls, arguments, names)
    return _compile("\n".join(lines), f"fast structure {cls.__name__}", names)  # type: ignore[no-any-return]
