"""Constructor-argument checks shared by every env: one rule, one message shape.

Each ``check_*`` returns the value normalised (numpy integers become ``int``, numbers
become ``float``) or raises with a message naming the owner and the argument::

    SearchQAEnv: max_turns must be an integer >= 1, got 2.7

A value of the wrong type raises :class:`TypeError`, one out of range or not among the
choices :class:`ValueError`. ``bool`` is never accepted as a number (``True`` is not a
turn count), and a ``str`` never reaches a comparison (no ``'<' not supported``).

Example:
    >>> check_int("Env", "top_k", np.int64(3), minimum=1)
    3
    >>> check_int("Env", "max_turns", 2.7, minimum=1)
    Traceback (most recent call last):
    ...
    TypeError: Env: max_turns must be an integer >= 1, got 2.7
    >>> check_choice("Env", "reward", "f1", ("em", "f1"))
    'f1'
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Sequence
from typing import Any, Literal, TypeVar, overload

import numpy as np

T = TypeVar("T")


def _shown(value: Any) -> str:
    """The offending value as a message shows it: repr for text, capped, always utf-8 encodable."""
    text = repr(value) if isinstance(value, str | bytes) else str(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _range_text(minimum: float | None, maximum: float | None, min_inclusive: bool, max_inclusive: bool) -> str:
    """`` >= 1``, `` in (0, 1)``, `` <= 5`` or ""."""
    if minimum is not None and maximum is not None:
        return f" in {'[' if min_inclusive else '('}{minimum}, {maximum}{']' if max_inclusive else ')'}"
    if minimum is not None:
        return f" {'>=' if min_inclusive else '>'} {minimum}"
    if maximum is not None:
        return f" {'<=' if max_inclusive else '<'} {maximum}"
    return ""


def _in_range(
    value: float, minimum: float | None, maximum: float | None, min_inclusive: bool, max_inclusive: bool
) -> bool:
    if minimum is not None and (value < minimum if min_inclusive else value <= minimum):
        return False
    return not (maximum is not None and (value > maximum if max_inclusive else value >= maximum))


def is_integer(value: Any) -> bool:
    """Whether ``value`` is an integer other than a bool (numpy integers count)."""
    return isinstance(value, numbers.Integral | np.integer) and not isinstance(value, bool | np.bool_)


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
        raise TypeError(f"{owner}: {name} must be {expected}, got {_shown(value)}")
    number = int(value)
    if not _in_range(number, minimum, maximum, True, True):
        raise ValueError(f"{owner}: {name} must be {expected}, got {number}")
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
    if not isinstance(value, numbers.Real | np.integer | np.floating) or isinstance(value, bool | np.bool_):
        raise TypeError(f"{owner}: {name} must be {expected}, got {_shown(value)}")
    number = float(value)
    if not math.isfinite(number) or not _in_range(number, minimum, maximum, min_inclusive, max_inclusive):
        raise ValueError(f"{owner}: {name} must be {expected}, got {_shown(value)}")
    return number


def check_bool(owner: str, name: str, value: Any) -> bool:
    """``value`` as a ``bool`` (numpy bools count; 0/1 and strings such as ``"false"`` do not).

    Raises:
        TypeError: for anything but a bool.
    """
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{owner}: {name} must be True or False, got {_shown(value)}")
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
        raise TypeError(f"{owner}: {name} must be {expected}, got {_shown(value)}")
    if non_empty and not value.strip():
        raise ValueError(f"{owner}: {name} must be {expected}, got {_shown(value)}")
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
    shown = ", ".join(repr(choice) for choice in choices)
    raise ValueError(f"{owner}: {name} must be one of {shown}, got {_shown(value)}")


def check_path(owner: str, name: str, value: Any) -> str | os.PathLike[str] | None:
    """``value`` if it is a path (``str`` or ``os.PathLike``), None when not given (None or "").

    Raises:
        TypeError: for anything else (numbers, bytes, lists).
    """
    if value is None or (isinstance(value, str) and value == ""):
        return None
    if not isinstance(value, str | os.PathLike):
        raise TypeError(f"{owner}: {name} must be a path (str or os.PathLike) or None, got {_shown(value)}")
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
        raise TypeError(f"{owner}: {name} must be {expected}, got {_shown(value)}")
    items = tuple(value)
    if not items:
        raise ValueError(f"{owner}: {name} must be {expected}, got {_shown(value)}")
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{owner}: {name} must be {expected}, got item {_shown(item)}")
        if not item.strip():
            raise ValueError(f"{owner}: {name} must be {expected}, got item {_shown(item)}")
    return items
