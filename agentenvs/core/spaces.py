"""A text space for free-form strings (observations and actions of text envs).

Gymnasium's :class:`gymnasium.spaces.Text` only admits a fixed character set
(alphanumerics by default) and pre-allocates shared memory for vector envs, which
breaks on arbitrary text (Gymnasium#1164). :class:`TextSpace` admits any ``str`` up
to ``max_length`` characters and stays sample-able for ``check_env``.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Space

_DEFAULT_SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " \n"


class TextSpace(Space[str]):
    """Any Python ``str`` of at most ``max_length`` characters.

    Args:
        max_length: Longest string the space contains.
        sample_max_length: Longest string :meth:`sample` produces (sampling the
            full ``max_length`` would make random actions needlessly huge).
        sample_charset: Characters :meth:`sample` draws from.
        seed: Seed of the space's own random generator.

    Example:
        >>> space = TextSpace(max_length=32)
        >>> "search[red shoes, size 9!]" in space
        True
        >>> len(space.sample()) <= 32
        True
    """

    def __init__(
        self,
        max_length: int = 1 << 20,
        *,
        sample_max_length: int = 64,
        sample_charset: Sequence[str] | str = _DEFAULT_SAMPLE_CHARSET,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        if max_length < 0:
            raise ValueError(f"max_length must be >= 0, got {max_length}")
        if sample_max_length < 0:
            raise ValueError(f"sample_max_length must be >= 0, got {sample_max_length}")
        if len(sample_charset) == 0:
            raise ValueError("sample_charset must not be empty")
        self.max_length = int(max_length)
        self.sample_max_length = min(int(sample_max_length), self.max_length)
        self.sample_charset = tuple(sample_charset)
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Text has no fixed-size numeric encoding."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random string over ``sample_charset`` of random length."""
        if mask is not None or probability is not None:
            raise ValueError("TextSpace.sample does not support mask or probability")
        length = int(self.np_random.integers(0, self.sample_max_length + 1))
        picks = self.np_random.integers(0, len(self.sample_charset), size=length)
        return "".join(self.sample_charset[i] for i in picks)

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a ``str`` no longer than ``max_length``."""
        return isinstance(x, str) and len(x) <= self.max_length

    def to_jsonable(self, sample_n: Iterable[str]) -> list[str]:
        """Strings are already JSON values."""
        return list(sample_n)

    def from_jsonable(self, sample_n: Sequence[str]) -> list[str]:
        """Strings are already JSON values."""
        return list(sample_n)

    def __repr__(self) -> str:
        return f"TextSpace(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextSpace) and other.max_length == self.max_length
