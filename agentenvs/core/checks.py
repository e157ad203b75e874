"""The project's one checks module: every argument and setting is checked here, one message shape.

Each ``check_*`` returns the value normalised (numpy integers become ``int``, numbers
become ``float``) or raises with a message naming the owner and the field::

    SearchQAEnv.max_turns must be an integer >= 1, got 2.7

A value of the wrong type raises :class:`WrongTypeError` (a ``TypeError`` that is also a
``ValueError``, so the usual ``except ValueError`` around bad settings sees it), one out of
range or not among the choices :class:`ValueError`. ``bool`` is never accepted as a number
(``True`` is not a turn count), NaN and infinity never as a finite number, and a ``str``
never reaches a comparison (no ``'<' not supported``).

Settings dataclasses (``agents.GRPOConfig``, ``SFTConfig``, the credit rules' options, the
prompt builder) declare their rules in their annotations and call :func:`check_fields` once,
in ``__post_init__``: the type (``int``, ``float``, ``bool``, ``str``, ``Literal``, ``X | None``,
``dict[str, ...]``, ``tuple[str, ...]``) and :class:`Bounds` / :data:`NON_EMPTY` metadata in
``Annotated[...]``. Relations between fields are checked after that with :func:`require`.

Example:
    >>> check_int("Env", "top_k", np.int64(3), minimum=1)
    3
    >>> check_int("Env", "max_turns", 2.7, minimum=1)
    Traceback (most recent call last):
    ...
    agentenvs.core.checks.WrongTypeError: Env.max_turns must be an integer >= 1, got 2.7
    >>> check_choice("Env", "reward", "f1", ("em", "f1"))
    'f1'
    >>> @dataclasses.dataclass
    ... class Knobs:
    ...     rate: Annotated[float, Bounds(0, 1)] = 0.5
    ...     mode: Literal["fast", "exact"] = "fast"
    ...     def __post_init__(self):
    ...         check_fields(self)
    >>> Knobs(rate=1)
    Knobs(rate=1.0, mode='fast')
    >>> Knobs(mode="slow")
    Traceback (most recent call last):
    ...
    ValueError: Knobs.mode must be one of 'fast', 'exact', got 'slow'
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
import os
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, TypeVar, Union, overload

import numpy as np

T = TypeVar("T")


class WrongTypeError(TypeError, ValueError):
    """A value of the wrong type: a ``TypeError`` that ``except ValueError`` catches too."""


def shown(value: Any) -> str:
    """The offending value as a message shows it: repr for text, capped, always utf-8 encodable."""
    text = repr(value) if isinstance(value, str | bytes) else str(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def did_you_mean(name: str, known: Sequence[str]) -> str:
    """``" (did you mean 'x'?)"`` naming the closest of ``known`` to a misspelt ``name`` ("" when none is close).

    >>> did_you_mean("max_turn", ["max_turns", "split"]), did_you_mean("colour", ["split"])
    (" (did you mean 'max_turns'?)", '')
    """
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _range_text(minimum: float | None, maximum: float | None, min_inclusive: bool, max_inclusive: bool) -> str:
    """`` >= 1``, `` in (0, 1)``, `` <= 5`` or "" (bounds written alike whether given as 1 or 1.0;
    whole numbers in full, so 1200000 is not 1.2e+06)."""
    low, high = (None if bound is None else _bound_text(bound) for bound in (minimum, maximum))
    if low is not None and high is not None:
        return f" in {'[' if min_inclusive else '('}{low}, {high}{']' if max_inclusive else ')'}"
    if low is not None:
        return f" {'>=' if min_inclusive else '>'} {low}"
    if high is not None:
        return f" {'<=' if max_inclusive else '<'} {high}"
    return ""


def _bound_text(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() and abs(bound) < 1e15 else f"{bound:g}"


def _in_range(
    value: float, minimum: float | None, maximum: float | None, min_inclusive: bool, max_inclusive: bool
) -> bool:
    if minimum is not None and (value < minimum if min_inclusive else value <= minimum):
        return False
    return not (maximum is not None and (value > maximum if max_inclusive else value >= maximum))


def is_integer(value: Any) -> bool:
    """Whether ``value`` is an integer other than a bool (numpy integers count)."""
    return isinstance(value, numbers.Integral | np.integer) and not isinstance(value, bool | np.bool_)


def is_number(value: Any) -> bool:
    """Whether ``value`` is a real number other than a bool (numpy numbers count; NaN too)."""
    return isinstance(value, numbers.Real | np.integer | np.floating) and not isinstance(value, bool | np.bool_)


@overload
def check_int(
    owner: str,
    name: str,
    value: Any,
    *,
    minimum: int | None = ...,
    maximum: int | None = ...,
    optional: Literal[False] = ...,
) -> int: ...
@overload
def check_int(
    owner: str, name: str, value: Any, *, minimum: int | None = ..., maximum: int | None = ..., optional: bool
) -> int | None: ...
def check_int(
    owner: str,
    name: str,
    value: Any,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    optional: bool = False,
) -> int | None:
    """``value`` as an ``int`` within ``[minimum, maximum]`` (None too where ``optional``).

    Raises:
        TypeError: for a non-integer (floats, bools and strings included).
        ValueError: for an integer out of range.
    """
    if optional and value is None:
        return None
    expected = f"an integer{_range_text(minimum, maximum, True, True)}{' or None' if optional else ''}"
    if not is_integer(value):
        raise WrongTypeError(f"{owner}.{name} must be {expected}, got {shown(value)}")
    number = int(value)
    if not _in_range(number, minimum, maximum, True, True):
        raise ValueError(f"{owner}.{name} must be {expected}, got {number}")
    return number


@overload
def check_float(
    owner: str,
    name: str,
    value: Any,
    *,
    minimum: float | None = ...,
    maximum: float | None = ...,
    min_inclusive: bool = ...,
    max_inclusive: bool = ...,
    optional: Literal[False] = ...,
) -> float: ...
@overload
def check_float(
    owner: str,
    name: str,
    value: Any,
    *,
    minimum: float | None = ...,
    maximum: float | None = ...,
    min_inclusive: bool = ...,
    max_inclusive: bool = ...,
    optional: bool,
) -> float | None: ...
def check_float(
    owner: str,
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    min_inclusive: bool = True,
    max_inclusive: bool = True,
    optional: bool = False,
) -> float | None:
    """``value`` as a finite ``float`` in range (ints and numpy numbers count; bools do not).

    Raises:
        TypeError: for a non-number.
        ValueError: for NaN, infinity or a number out of range.
    """
    if optional and value is None:
        return None
    bounds = _range_text(minimum, maximum, min_inclusive, max_inclusive)
    expected = f"a finite number{bounds}{' or None' if optional else ''}"
    if not is_number(value):
        raise WrongTypeError(f"{owner}.{name} must be {expected}, got {shown(value)}")
    number = float(value)
    if not math.isfinite(number) or not _in_range(number, minimum, maximum, min_inclusive, max_inclusive):
        raise ValueError(f"{owner}.{name} must be {expected}, got {shown(value)}")
    return number


def check_bool(owner: str, name: str, value: Any) -> bool:
    """``value`` as a ``bool`` (numpy bools count; 0/1 and strings such as ``"false"`` do not).

    Raises:
        TypeError: for anything but a bool.
    """
    if not isinstance(value, bool | np.bool_):
        raise WrongTypeError(f"{owner}.{name} must be True or False, got {shown(value)}")
    return bool(value)


@overload
def check_str(owner: str, name: str, value: Any, *, non_empty: bool = ..., optional: Literal[False] = ...) -> str: ...
@overload
def check_str(owner: str, name: str, value: Any, *, non_empty: bool = ..., optional: bool) -> str | None: ...
def check_str(owner: str, name: str, value: Any, *, non_empty: bool = True, optional: bool = False) -> str | None:
    """``value`` as a ``str`` (non-empty unless ``non_empty=False``; None too where ``optional``).

    Raises:
        TypeError: for a non-string.
        ValueError: for an empty (or blank) string where one is not allowed.
    """
    if optional and value is None:
        return None
    expected = f"a{' non-empty' if non_empty else ''} string{' or None' if optional else ''}"
    if not isinstance(value, str):
        raise WrongTypeError(f"{owner}.{name} must be {expected}, got {shown(value)}")
    if non_empty and not value.strip():
        raise ValueError(f"{owner}.{name} must be {expected}, got {shown(value)}")
    return value


def check_choice(owner: str, name: str, value: Any, choices: Sequence[T]) -> T:
    """``value`` if it is one of ``choices`` (strings or None), compared without hashing.

    Raises:
        ValueError: naming the choices.
    """
    for choice in choices:
        # Same type first: 1 == True and np.str_ subclasses str; a list must not hash.
        if value is choice or (isinstance(value, str) and isinstance(choice, str) and value == choice):
            return choice
    listed = ", ".join(repr(choice) for choice in choices)
    raise ValueError(f"{owner}.{name} must be one of {listed}, got {shown(value)}")


def check_path(owner: str, name: str, value: Any) -> str | os.PathLike[str] | None:
    """``value`` if it is a path (``str`` or ``os.PathLike``), None when not given (None or "").

    Raises:
        TypeError: for anything else (numbers, bytes, lists).
    """
    if value is None or (isinstance(value, str) and value == ""):
        return None
    if not isinstance(value, str | os.PathLike):
        raise WrongTypeError(f"{owner}.{name} must be a path (str or os.PathLike) or None, got {shown(value)}")
    return value


def check_str_sequence(owner: str, name: str, value: Any) -> tuple[str, ...]:
    """``value`` as a tuple of non-empty strings (one string counts as one item).

    Raises:
        TypeError: for a non-sequence or a non-string item.
        ValueError: for an empty sequence or an empty item.
    """
    if isinstance(value, str):
        value = (value,)
    expected = "a string or a non-empty sequence of non-empty strings"
    if not isinstance(value, Sequence | set | frozenset):
        raise WrongTypeError(f"{owner}.{name} must be {expected}, got {shown(value)}")
    items = tuple(value)
    if not items:
        raise ValueError(f"{owner}.{name} must be {expected}, got {shown(value)}")
    for item in items:
        if not isinstance(item, str):
            raise WrongTypeError(f"{owner}.{name} must be {expected}, got item {shown(item)}")
        if not item.strip():
            raise ValueError(f"{owner}.{name} must be {expected}, got item {shown(item)}")
    return items


def require(ok: bool, owner: str, name: str, requirement: str, value: Any) -> None:
    """Raises ``ValueError('{owner}.{name} must be {requirement}, got {value}')`` unless ``ok``.

    For rules :func:`check_fields` cannot read from one annotation (relations between fields).
    """
    if not ok:
        raise ValueError(f"{owner}.{name} must be {requirement}, got {shown(value)}")


@dataclasses.dataclass(frozen=True)
class Bounds:
    """``Annotated`` metadata: the range of an ``int`` or ``float`` field (None: open on that side)."""

    minimum: float | None = None
    maximum: float | None = None
    min_inclusive: bool = True
    max_inclusive: bool = True


NON_EMPTY = "non-empty"
"""``Annotated[str, NON_EMPTY]``: a string that must not be empty or blank."""

_SCALARS: dict[type, str] = {bool: "True or False", int: "an integer", float: "a number", str: "a string"}


def _is_scalar(value: Any, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, bool | np.bool_)
    if kind is int:
        return is_integer(value)
    if kind is float:
        return is_number(value) and math.isfinite(float(value))
    return isinstance(value, kind)


def _union_members(annotation: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return typing.get_args(annotation)
    return None


def check_value(owner: str, name: str, value: Any, annotation: Any) -> Any:
    """``value`` checked against a field's annotation (see the module docstring); returns it normalised.

    Raises:
        WrongTypeError: for a value of the wrong type.
        ValueError: for a value out of its :class:`Bounds` or not among a ``Literal``'s choices.
        NotImplementedError: for an annotation this module cannot check (a settings class must
            use the supported forms, so no field goes unchecked).
    """
    bounds, non_empty = Bounds(), False
    if typing.get_origin(annotation) is Annotated:
        annotation, *metadata = typing.get_args(annotation)
        for item in metadata:
            if isinstance(item, Bounds):
                bounds = item
            elif item == NON_EMPTY:
                non_empty = True
    optional = False
    members = _union_members(annotation)
    if members is not None and type(None) in members:
        optional = True
        rest = tuple(member for member in members if member is not type(None))
        annotation = rest[0] if len(rest) == 1 else Union[rest]  # noqa: UP007  (a runtime union of the rest)
        members = _union_members(annotation)
    if optional and value is None:
        return None
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return check_choice(owner, name, value, (*typing.get_args(annotation), *((None,) if optional else ())))
    if annotation is bool:
        return check_bool(owner, name, value)
    if annotation is int:
        return check_int(
            owner,
            name,
            value,
            minimum=_int_or_none(bounds.minimum),
            maximum=_int_or_none(bounds.maximum),
            optional=optional,
        )
    if annotation is float:
        return check_float(
            owner,
            name,
            value,
            minimum=bounds.minimum,
            maximum=bounds.maximum,
            min_inclusive=bounds.min_inclusive,
            max_inclusive=bounds.max_inclusive,
            optional=optional,
        )
    if annotation is str:
        return check_str(owner, name, value, non_empty=non_empty, optional=optional)
    if members is not None and all(member in _SCALARS for member in members):
        if not any(_is_scalar(value, member) for member in members):
            kinds = " or ".join(_SCALARS[member] for member in members)
            raise WrongTypeError(f"{owner}.{name} must be {kinds}{' or None' if optional else ''}, got {shown(value)}")
        return value
    if origin is tuple and typing.get_args(annotation)[1:] == (Ellipsis,) and typing.get_args(annotation)[0] is str:
        return check_str_sequence(owner, name, value)
    if origin in (dict, Mapping) or annotation in (dict, Mapping):
        args = typing.get_args(annotation) or (str, Any)
        if not isinstance(value, Mapping):
            raise WrongTypeError(
                f"{owner}.{name} must be a mapping{' or None' if optional else ''}, got {shown(value)}"
            )
        checked = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise WrongTypeError(f"{owner}.{name} keys must be strings, got {shown(key)}")
            checked[key] = item if args[1] is Any else check_value(owner, f"{name}[{key!r}]", item, args[1])
        return checked
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        if not isinstance(value, annotation):
            raise WrongTypeError(f"{owner}.{name} must be a {annotation.__name__}, got {shown(value)}")
        return value
    raise NotImplementedError(f"{owner}.{name}: cannot check a field annotated {annotation!r}")


def _int_or_none(bound: float | None) -> int | None:
    return None if bound is None else int(bound)


_ANNOTATIONS: dict[type, dict[str, Any]] = {}


def _field_annotations(cls: type) -> dict[str, Any]:
    """The resolved annotations of a dataclass (resolved once per class: ``get_type_hints`` is slow)."""
    if cls not in _ANNOTATIONS:
        _ANNOTATIONS[cls] = typing.get_type_hints(cls, include_extras=True)
    return _ANNOTATIONS[cls]


def check_fields(instance: Any) -> None:
    """Checks every field of a dataclass instance against its annotation, normalising values in place.

    Call it first in ``__post_init__`` (frozen dataclasses too); the first bad field raises,
    named ``ClassName.field``.
    """
    owner = type(instance).__name__
    annotations = _field_annotations(type(instance))
    for field in dataclasses.fields(instance):
        value = getattr(instance, field.name)
        checked = check_value(owner, field.name, value, annotations[field.name])
        if checked is not value:
            object.__setattr__(instance, field.name, checked)


class Checked:
    """Base of a settings dataclass: its fields are checked from their annotations at construction,
    then :meth:`check_relations` checks the rules that span fields.

    A subclass that must normalise a value before the check (a comma-separated string into a
    tuple, say) does so in its own ``__post_init__`` and then calls ``super().__post_init__()``.
    """

    def __post_init__(self) -> None:
        check_fields(self)
        self.check_relations()

    def check_relations(self) -> None:
        """Rules that span fields (a subclass extends it and calls ``super().check_relations()``)."""
