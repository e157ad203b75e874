"""Atomic training checkpoints: weights, optimizer, scheduler, RNG states, step, config.

A checkpoint is a folder ``step_<n>`` written under a temporary name and renamed
into place, then ``latest`` (a one-line file naming it) is replaced atomically;
a run killed at any moment leaves either the old or the new checkpoint, never a
half-written one.

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
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

LATEST = "latest"


def rng_state(numpy_generator: np.random.Generator, torch_generator: torch.Generator | None) -> dict[str, Any]:
    """Every random state a training step draws from."""
    return {
        "python": random.getstate(),
        "numpy_global": np.random.get_state(),
        "numpy_generator": numpy_generator.bit_generator.state,
        "torch": torch.get_rng_state(),
        "torch_generator": None if torch_generator is None else torch_generator.get_state(),
    }


def restore_rng_state(
    state: dict[str, Any], numpy_generator: np.random.Generator, torch_generator: torch.Generator | None
) -> None:
    """Puts back what :func:`rng_state` captured."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy_global"])
    numpy_generator.bit_generator.state = state["numpy_generator"]
    torch.set_rng_state(state["torch"])
    if torch_generator is not None and state["torch_generator"] is not None:
        torch_generator.set_state(state["torch_generator"])


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
        state: Anything else ``torch.save`` can store (optimizer, scheduler, RNG, config).
        keep: Checkpoints kept.
    """
    root = Path(output_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"step_{step}"
    staging = Path(tempfile.mkdtemp(prefix=f".step_{step}-", dir=root))
    try:
        save_file({k: v.detach().contiguous().cpu() for k, v in weights.items()}, str(staging / "weights.safetensors"))
        torch.save({"step": step, **state}, staging / "state.pt")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    pointer = root / f".{LATEST}.tmp"
    pointer.write_text(target.name + "\n")
    os.replace(pointer, root / LATEST)
    for old in sorted((p for p in root.glob("step_*") if p.is_dir()), key=lambda p: int(p.name[5:]))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return target


def latest_checkpoint(output_dir: str | os.PathLike[str]) -> Path | None:
    """The folder ``latest`` names, or None when there is no checkpoint."""
    pointer = Path(output_dir) / "checkpoints" / LATEST
    if not pointer.is_file():
        return None
    folder = pointer.parent / pointer.read_text().strip()
    return folder if (folder / "state.pt").is_file() else None


def load_checkpoint(output_dir: str | os.PathLike[str]) -> tuple[int, dict[str, torch.Tensor], dict[str, Any]]:
    """``(step, weights, state)`` of the latest checkpoint.

    Raises:
        FileNotFoundError: when ``output_dir`` holds no checkpoint.
    """
    folder = latest_checkpoint(output_dir)
    if folder is None:
        raise FileNotFoundError(f"no checkpoint in {Path(output_dir) / 'checkpoints'}")
    state = torch.load(folder / "state.pt", weights_only=False)
    return int(state.pop("step")), load_file(str(folder / "weights.safetensors")), state


def truncate_jsonl(path: str | os.PathLike[str], max_step: int) -> None:
    """Drops metric records logged after ``max_step`` (a resumed run writes them again)."""
    path = Path(path)
    if not path.is_file():
        return
    kept = [line for line in path.read_text().splitlines() if line.strip() and json.loads(line)["step"] <= max_step]
    staging = path.with_suffix(".tmp")
    staging.write_text("".join(line + "\n" for line in kept))
    os.replace(staging, path)
