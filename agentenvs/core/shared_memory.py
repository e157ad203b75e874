"""TextSpace observations in the shared memory of Gymnasium's ``AsyncVectorEnv``.

``gym.make_vec(env_id, vectorization_mode="async")`` builds an ``AsyncVectorEnv`` with
``shared_memory=True``: each worker writes its observation into a buffer the parent reads, and
Gymnasium asks every space how (``create_shared_memory``, ``write_to_shared_memory``,
``read_from_shared_memory``, one ``functools.singledispatch`` each). This module registers
:class:`~agentenvs.core.spaces.TextSpace` with the three, so the text envs vectorize as
Gymnasium's own envs do. The parent reads the buffer once, when the vector env is built, and
afterwards returns what that read gave (a copy by default): numeric spaces give array views
that see every later write, so the read here gives :class:`SharedTexts`, a live view whose copy
is a plain ``tuple`` of ``str`` (what a step returns with ``copy=True``, the default). Each env gets ``max_length + 1`` int32 slots: the string's length,
then its code points (lone surrogates kept), so the buffer is ``4 * (max_length + 1)`` bytes
per env (4 MiB with the envs' default ``max_observation_length`` of 2**20; pass a smaller one,
or ``vector_kwargs={"shared_memory": False}``, to use less). Imported by :mod:`agentenvs.core`.

Example:
    >>> import gymnasium as gym, agentenvs
    >>> envs = gym.make_vec("SearchQA-v0", num_envs=2, vectorization_mode="async")
    >>> observations, infos = envs.reset(seed=0)
    >>> type(observations).__name__, [text.startswith("Question:") for text in observations]
    ('tuple', [True, True])
    >>> envs.close()
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Sequence
from types import ModuleType
from typing import Any, overload

import numpy as np
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

from agentenvs.core.spaces import TextSpace

CODEC = "utf-32-le"
"""Code points as little-endian 32-bit integers (``surrogatepass`` keeps lone surrogates)."""


class SharedTexts(Sequence[str]):
    """The strings in a shared buffer, decoded on access (a live view, like a numpy view of shared memory).

    ``copy.deepcopy`` gives a ``tuple`` of the current strings, which is what ``AsyncVectorEnv``
    returns from ``reset`` and ``step`` (it deep-copies its observations unless ``copy=False``).
    """

    def __init__(self, space: TextSpace, shared_memory: Any, n: int) -> None:
        self._rows = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape(n, space.max_length + 1)

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(len(self))[index])
        row = self._rows[index]
        return row[1 : 1 + int(row[0])].tobytes().decode(CODEC, "surrogatepass")

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and not isinstance(other, str) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # live contents: not hashable

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@create_shared_memory.register(TextSpace)
def _create_text_shared_memory(space: TextSpace, n: int = 1, ctx: ModuleType = mp) -> Any:
    return ctx.Array(np.dtype(np.int32).char, n * (space.max_length + 1))


@write_to_shared_memory.register(TextSpace)
def _write_text_to_shared_memory(space: TextSpace, index: int, value: str, shared_memory: Any) -> None:
    if not isinstance(value, str) or len(value) > space.max_length:
        shown = f"a str of {len(value)} characters" if isinstance(value, str) else repr(type(value).__name__)
        raise ValueError(
            f"TextSpace shared memory: an observation must be a str of at most {space.max_length} characters, got {shown}"
        )
    codes = np.frombuffer(value.encode(CODEC, "surrogatepass"), dtype=np.int32)
    size = space.max_length + 1
    destination = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)[index * size : (index + 1) * size]
    destination[0] = len(codes)
    destination[1 : 1 + len(codes)] = codes


@read_from_shared_memory.register(TextSpace)
def _read_text_from_shared_memory(space: TextSpace, shared_memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(space, shared_memory, n)
