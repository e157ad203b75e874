"""Atomic training checkpoints: weights, optimizer, scheduler, RNG states, step, config.

A checkpoint is a folder ``step_<n>`` written under a temporary name and renamed
into place, then ``latest`` (a one-line file naming it) is replaced atomically;
a run killed at any moment leaves either the old or the new checkpoint, never a
half-written one.

Loading never runs code: ``state.pt`` is read with ``torch.load(weights_only=True)``, so it
holds only tensors and plain values (RNG states are stored as lists and ints; numpy arrays,
which older checkpoints held, are read too). A checkpoint that needs anything else (a crafted
pickle) is refused with a :class:`CheckpointError` naming the file and what it asked for. Loading takes ``latest`` when it names an intact
``step_<n>`` folder inside ``checkpoints/``, else the newest intact one, and says what it
passed over (:attr:`Checkpoint.skipped`).

Example:
    >>> import tempfile, torch
    >>> folder = tempfile.mkdtemp()
    >>> _ = save_checkpoint(folder, 3, {"w": torch.ones(2)}, {"note": "x"})
    >>> step, weights, state = load_checkpoint(folder)
    >>> step, weights["w"].tolist(), state["note"]
    (3, [1.0, 1.0], 'x')
"""

from __future__ import annotations

import json
import os
import pickle
import random
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

try:
    from numpy._core.multiarray import _reconstruct  # type: ignore[attr-defined,unused-ignore]
except ImportError:  # numpy < 2
    from numpy.core.multiarray import _reconstruct  # type: ignore[attr-defined,no-redef,unused-ignore]

LATEST = "latest"
STATE_FILE = "state.pt"
WEIGHTS_FILE = "weights.safetensors"
STEP_FOLDER = re.compile(r"step_([0-9]{1,12})")
"""The only folder names that are checkpoints (``step_2.bak`` or ``../x`` are not)."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded (safely): the message names the file and why."""


def rng_state(numpy_generator: np.random.Generator, torch_generator: torch.Generator | None) -> dict[str, Any]:
    """Every random state a training step draws from, as tensors and plain values (``weights_only`` loads it)."""
    kind, keys, position, has_gauss, cached_gaussian = np.random.get_state(legacy=True)
    return {
        "python": random.getstate(),
        "numpy_global": [kind, [int(k) for k in keys], int(position), int(has_gauss), float(cached_gaussian)],
        "numpy_generator": numpy_generator.bit_generator.state,
        "torch": torch.get_rng_state(),
        "torch_generator": None if torch_generator is None else torch_generator.get_state(),
    }


def restore_rng_state(
    state: dict[str, Any], numpy_generator: np.random.Generator, torch_generator: torch.Generator | None
) -> None:
    """Puts back what :func:`rng_state` captured."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, position, has_gauss, cached_gaussian = state["numpy_global"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), position, has_gauss, cached_gaussian))
    numpy_generator.bit_generator.state = state["numpy_generator"]
    torch.set_rng_state(state["torch"])
    if torch_generator is not None and state["torch_generator"] is not None:
        torch_generator.set_state(state["torch_generator"])


def step_folders(root: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """``(step, folder)`` of every ``step_<n>`` folder in ``root``, oldest first (other names ignored)."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [
        (int(match.group(1)), p) for p in root.iterdir() if (match := STEP_FOLDER.fullmatch(p.name)) and p.is_dir()
    ]
    return sorted(found)


def save_checkpoint(
    output_dir: str | os.PathLike[str],
    step: int,
    weights: dict[str, torch.Tensor],
    state: dict[str, Any],
    *,
    keep: int = 2,
) -> Path:
    """Writes ``step_<step>`` atomically and points ``latest`` at it; keeps the newest ``keep``.

    Args:
        output_dir: The run folder (checkpoints go to ``output_dir/checkpoints``).
        step: Training steps completed.
        weights: Trainable tensors (saved as safetensors).
        state: Tensors and plain values only (optimizer and scheduler state dicts, :func:`rng_state`,
            a config as JSON values): what ``torch.load(weights_only=True)`` reads back.
        keep: Checkpoints kept.
    """
    root = Path(output_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"step_{step}"
    staging = Path(tempfile.mkdtemp(prefix=f".step_{step}-", dir=root))
    try:
        save_file({k: v.detach().contiguous().cpu() for k, v in weights.items()}, str(staging / WEIGHTS_FILE))
        torch.save({"step": step, **state}, staging / STATE_FILE)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    pointer = root / f".{LATEST}.tmp"
    pointer.write_text(target.name + "\n")
    os.replace(pointer, root / LATEST)
    for _, old in step_folders(root)[:-keep]:
        if old != target:
            shutil.rmtree(old, ignore_errors=True)
    return target


def _pointed_folder(root: Path) -> tuple[Path | None, str | None]:
    """The folder ``latest`` names if it is a ``step_<n>`` folder of ``root``; else why not."""
    pointer = root / LATEST
    if not pointer.is_file():
        return None, None
    try:
        name = pointer.read_text(encoding="utf-8", errors="replace").strip()
    except OSError as error:
        return None, f"{pointer} is unreadable ({error})"
    shown = name[:80] + ("..." if len(name) > 80 else "")
    if not STEP_FOLDER.fullmatch(name):
        return None, f"{pointer} names {shown!r}, not a step_<n> folder"
    folder = root / name
    if not folder.is_dir() or folder.resolve().parent != root.resolve():
        return None, f"{pointer} names {shown!r}, which is missing"
    return folder, None


def _candidates(output_dir: str | os.PathLike[str]) -> tuple[list[Path], list[str]]:
    """Checkpoint folders to try, best first (``latest``'s, then the others newest first), and notes."""
    root = Path(output_dir) / "checkpoints"
    pointed, note = _pointed_folder(root)
    others = [folder for _, folder in reversed(step_folders(root)) if folder != pointed]
    return ([pointed] if pointed is not None else []) + others, [note] if note else []


def latest_checkpoint(output_dir: str | os.PathLike[str]) -> Path | None:
    """The folder a resume would try first (``latest``'s, else the newest ``step_<n>``), or None."""
    candidates, _ = _candidates(output_dir)
    usable = [folder for folder in candidates if (folder / STATE_FILE).is_file()]
    return usable[0] if usable else None


NUMPY_ARRAY_GLOBALS = (np.ndarray, np.dtype, np.dtype(np.uint32).__class__, _reconstruct)
"""What an older checkpoint's numpy RNG state array needs to unpickle: array construction from
raw bytes, which calls nothing else (an object array's items still go through the allowlist)."""


def _unsafe_global(error: Exception) -> str:
    """What a ``weights_only`` load refused, as torch names it (``GLOBAL posix.system``)."""
    text = str(error)
    found = re.search(r"GLOBAL [\w.]+|Unsupported operand [^\s.]+", text)
    return found.group(0) if found else text.strip().splitlines()[-1][:200]


def read_state(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A ``state.pt`` loaded without running code (``weights_only=True``).

    A checkpoint written before this format (RNG states as numpy arrays) is read too: numpy
    array construction is the only global allowed beyond ``weights_only``'s own.

    Raises:
        CheckpointError: naming the file, when it is truncated, not a checkpoint, or holds
            objects other than tensors, numpy arrays and plain values (e.g. a crafted pickle).
    """
    try:
        with torch.serialization.safe_globals(list(NUMPY_ARRAY_GLOBALS)):
            state = torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as error:
        raise CheckpointError(
            f"{path} cannot be loaded safely: it holds objects other than tensors, numpy arrays and plain "
            f"values ({_unsafe_global(error)}); it was not loaded, and nothing in it ran"
        ) from None
    except (RuntimeError, OSError, EOFError, ValueError) as error:
        raise CheckpointError(f"{path} is truncated or not a checkpoint ({str(error)[:200]})") from error
    if not isinstance(state, dict) or not isinstance(state.get("step"), int):
        raise CheckpointError(f"{path} is not a checkpoint state (no integer 'step')")
    return state


def read_weights(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """A ``weights.safetensors`` file; a truncated one is a :class:`CheckpointError` naming it."""
    try:
        return load_file(str(path))
    except Exception as error:  # safetensors raises its own error type for a torn header or body
        raise CheckpointError(f"{path} is truncated or not a safetensors file ({str(error)[:200]})") from error


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint and the newer candidates passed over to reach it."""

    folder: Path
    step: int
    weights: dict[str, torch.Tensor]
    state: dict[str, Any]
    skipped: tuple[str, ...] = ()
    """Why each better candidate was not used (``latest`` naming a missing folder, a truncated file)."""

    def describe(self) -> str:
        """One line: the folder, the step, and what was skipped and why."""
        line = f"{self.folder} (step {self.step})"
        return line + (f"; skipped: {'; '.join(self.skipped)}" if self.skipped else "")


def read_checkpoint(
    output_dir: str | os.PathLike[str],
    *,
    weights_like: Mapping[str, torch.Tensor] | None = None,
    state_keys: Sequence[str] = (),
) -> Checkpoint:
    """The best intact checkpoint of a run: ``latest``'s if it loads, else the newest that does.

    A checkpoint that loads but does not fit is passed over too, for the next newest: one whose
    state lacks a ``state_keys`` entry, or whose weights' names and shapes are not
    ``weights_like``'s (the model that is to load them).

    Raises:
        FileNotFoundError: when ``output_dir`` holds no checkpoint.
        CheckpointError: when none loads and fits (the message names each file and why).
    """
    candidates, skipped = _candidates(output_dir)
    if not candidates:
        raise FileNotFoundError(f"no checkpoint in {Path(output_dir) / 'checkpoints'}")
    for folder in candidates:
        try:
            state = read_state(folder / STATE_FILE)
            weights = read_weights(folder / WEIGHTS_FILE)
            _check_fits(folder, weights, state, weights_like, state_keys)
        except CheckpointError as error:
            skipped.append(str(error))
            continue
        return Checkpoint(folder, int(state.pop("step")), weights, state, tuple(skipped))
    raise CheckpointError(f"no checkpoint in {Path(output_dir) / 'checkpoints'} can be loaded: " + "; ".join(skipped))


def _check_fits(
    folder: Path,
    weights: Mapping[str, torch.Tensor],
    state: Mapping[str, Any],
    weights_like: Mapping[str, torch.Tensor] | None,
    state_keys: Sequence[str],
) -> None:
    missing = [key for key in state_keys if key not in state]
    if missing:
        raise CheckpointError(f"{folder / STATE_FILE} lacks {missing} (not a checkpoint of this kind of run)")
    if weights_like is None:
        return
    if set(weights) != set(weights_like):
        extra, absent = sorted(set(weights) - set(weights_like)), sorted(set(weights_like) - set(weights))
        raise CheckpointError(
            f"{folder / WEIGHTS_FILE} does not hold this model's trainable weights "
            f"(unexpected: {extra[:3]}{' …' if len(extra) > 3 else ''}, missing: {absent[:3]}{' …' if len(absent) > 3 else ''})"
        )
    for name, tensor in weights.items():
        if tuple(tensor.shape) != tuple(weights_like[name].shape):
            raise CheckpointError(
                f"{folder / WEIGHTS_FILE}: {name} has shape {tuple(tensor.shape)}, this model's "
                f"{tuple(weights_like[name].shape)}"
            )


def load_checkpoint(output_dir: str | os.PathLike[str]) -> tuple[int, dict[str, torch.Tensor], dict[str, Any]]:
    """``(step, weights, state)`` of the best intact checkpoint (:func:`read_checkpoint`).

    Prints one line when it passed over a newer candidate, naming it and why.

    Raises:
        FileNotFoundError: when ``output_dir`` holds no checkpoint.
        CheckpointError: when none can be loaded safely.
    """
    checkpoint = read_checkpoint(output_dir)
    if checkpoint.skipped:
        print(f"loading checkpoint {checkpoint.describe()}", flush=True)
    return checkpoint.step, checkpoint.weights, checkpoint.state


def _record_step(line: str) -> int | None:
    """The ``step`` of a JSON-lines record, or None when the line is not such a record."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nesting too deep to be a record
        return None
    step = record.get("step") if isinstance(record, dict) else None
    return step if isinstance(step, int) else None


def truncate_jsonl(path: str | os.PathLike[str], max_step: int) -> None:
    """Drops metric records logged after ``max_step`` (a resumed run writes them again).

    A last line a killed run left half-written is dropped too; any other line that is not a
    record with an integer ``step`` is kept as it is (it was not written by this resume's steps).

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "metrics.jsonl"
        >>> _ = path.write_text('{"step": 1}\\n{"step": 2}\\n{"step": 3, "lo')
        >>> truncate_jsonl(path, 1)
        >>> path.read_text()
        '{"step": 1}\\n'
    """
    path = Path(path)
    if not path.is_file():
        return
    lines = [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    if lines and _record_step(lines[-1]) is None:
        lines.pop()  # torn by a kill mid-write
    kept = [line for line in lines if (step := _record_step(line)) is None or step <= max_step]
    staging = path.with_name(path.name + ".tmp")
    staging.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    os.replace(staging, path)
