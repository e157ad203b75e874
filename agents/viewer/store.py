"""What the viewer reads from run folders, one file at a time and only when a page needs it.

A :class:`RunStore` maps run names to folders fixed at start-up; every other path is built
from a validated integer (a step, an index), never from request text, so no request can
reach outside them. A run's page reads its ``config.json`` and ``metrics.jsonl`` and lists
file names; a step's page reads that step's record file (bounded by ``record_groups``); a
trajectory's page renders one trajectory of it. Files a running trainer is writing are read
up to their last complete record (:func:`agents.runs.credit_record.read_records`).

Example:
    >>> import tempfile
    >>> store = RunStore([tempfile.mkdtemp(prefix="run-")])
    >>> [run.recorded_steps() for run in store.runs()]
    [[]]
    >>> store.get("nope")
    Traceback (most recent call last):
    ...
    agents.viewer.store.UnknownRun: Unknown run 'nope'.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.reports.curves import RunCurves, load_run
from agents.runs.credit_record import read_records, read_step, recorded_steps

EVAL_FILE = re.compile(r"eval_step_([0-9]{1,9})\.jsonl")
NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9._-]+")
CREDIT_EXAMPLES_FILE = "credit_examples.jsonl"


class UnknownRun(LookupError):
    """A run name the store does not serve."""

    def __str__(self) -> str:
        return str(self.args[0])


class NotRecorded(LookupError):
    """A step, evaluation or trajectory a run has no record of."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Run:
    """One run folder under its name."""

    name: str
    folder: Path

    def curves(self) -> RunCurves:
        """Settings, metrics and held-out points (:func:`agents.reports.curves.load_run`)."""
        if not self.folder.is_dir():
            raise NotRecorded(f"The folder of run {self.name!r} is gone.")
        return load_run(self.folder, self.name)

    def settings(self) -> dict[str, Any]:
        """``config.json`` (``{}`` when missing or unreadable)."""
        try:
            loaded = json.loads((self.folder / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def recorded_steps(self) -> list[int]:
        """Steps with a credit record (file names only)."""
        return recorded_steps(self.folder)

    def evaluation_steps(self) -> list[int]:
        """Steps with held-out trajectories (file names only)."""
        folder = self.folder / "trajectories"
        if not folder.is_dir():
            return []
        return sorted(int(match[1]) for name in os.listdir(folder) if (match := EVAL_FILE.fullmatch(name)))

    def step_records(self, step: int) -> list[dict[str, Any]]:
        """The credit records of one step.

        Raises:
            NotRecorded: when the step has none.
        """
        records = read_step(self.folder, step)
        if not records:
            raise NotRecorded(
                f"Run {self.name!r} has no credit record for step {step} (recorded: {_span(self.recorded_steps())})."
            )
        return records

    def trajectory_record(self, step: int, index: int, records: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Record ``index`` (its line in the step's file) of one step (of ``records``, that step's, when given).

        Raises:
            NotRecorded: when the step or the index is not there.
        """
        records = self.step_records(step) if records is None else records
        if not 0 <= index < len(records):
            raise NotRecorded(
                f"Step {step} of run {self.name!r} has trajectories 0 to {len(records) - 1}, not {index}."
            )
        return records[index]

    def evaluation(self, step: int) -> list[dict[str, Any]]:
        """The held-out trajectories of one evaluation, flat (groups of one unpacked).

        Raises:
            NotRecorded: when the step has no evaluation file.
        """
        path = self.folder / "trajectories" / f"eval_step_{int(step)}.jsonl"
        if not path.is_file():
            raise NotRecorded(
                f"Run {self.name!r} has no held-out trajectories for step {step}"
                f" (evaluated: {_span(self.evaluation_steps())})."
            )
        flat: list[dict[str, Any]] = []
        for record in read_records(path):
            flat.extend(t for t in record.get("trajectories", [record]) if isinstance(t, dict))
        return flat

    def credit_examples(self, step: int) -> list[dict[str, Any]]:
        """The rule's readable examples logged at ``step`` (``credit_examples.jsonl``)."""
        path = self.folder / CREDIT_EXAMPLES_FILE
        if not path.is_file():
            return []
        return [record for record in read_records(path) if record.get("step") == step]


def _span(steps: Sequence[int]) -> str:
    if not steps:
        return "none"
    if len(steps) <= 6:
        return ", ".join(map(str, steps))
    return f"{len(steps)} steps, {steps[0]} to {steps[-1]}"


def run_names(folders: Sequence[Path]) -> list[str]:
    """A URL-safe, distinct name per folder: its own name, with its parent's when two agree.

    >>> run_names([Path("a/rl"), Path("b/rl"), Path("c/sft my")])
    ['a-rl', 'b-rl', 'sft_my']
    """
    base = [NAME_CHARACTERS.sub("_", folder.resolve().name) or "run" for folder in folders]
    names = [
        NAME_CHARACTERS.sub("_", f"{folder.resolve().parent.name}-{name}") if base.count(name) > 1 else name
        for folder, name in zip(folders, base, strict=True)
    ]
    seen: dict[str, int] = {}
    distinct = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        distinct.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return distinct


class RunStore:
    """The run folders a viewer serves, by name.

    Args:
        folders: Run folders (each written by a training run, or being written).

    Raises:
        ValueError: when there is no folder, or one is missing (naming it).
    """

    def __init__(self, folders: Sequence[str | os.PathLike[str]]) -> None:
        if not folders:
            raise ValueError("the viewer needs at least one run folder")
        paths = [Path(folder) for folder in folders]
        for path in paths:
            if not path.is_dir():
                raise ValueError(f"run folder {str(path)!r} does not exist")
        self._runs = {name: Run(name, path.resolve()) for name, path in zip(run_names(paths), paths, strict=True)}

    def runs(self) -> list[Run]:
        """Every run, in the order given."""
        return list(self._runs.values())

    def get(self, name: str) -> Run:
        """The run called ``name``.

        Raises:
            UnknownRun: naming it.
        """
        run = self._runs.get(name)
        if run is None:
            raise UnknownRun(f"Unknown run {name[:80]!r}.")
        return run
