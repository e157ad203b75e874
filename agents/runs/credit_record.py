"""Credit records: a bounded sample of what the credit rule gave every token, for people and tools.

At every training step the trainer writes the trajectories of up to ``GRPOConfig.record_groups``
groups of the step's batch, with each response token's final advantage and whatever else the
rule reported (:class:`~agents.algorithms.base.CreditResult` ``token_values``, ``row_info``,
``trajectory_values``), to ``<run>/credit/step_<N>.jsonl``. Nothing is recomputed: the record is
what the rule already returned plus the batch's own text, ids and sampling log-probs.

Format (version 1), one JSON object per line, one line per trajectory::

    {"version": 1, "step": 3, "rule": "taspo",
     "group": 0, "member": 1, "trajectory": 1,        # group's position in the step's batch,
                                                      # member in the group, flat index
     "group_id": 7, "task_id": "fixed_12", "task": "...",
     "success": false, "score": 0.25, "reward": 0.15, # env outcome; R that GRPO normalised
     "values": {"advantage": -0.71},                  # trajectory_values (A_i), may be empty
     "turns": [{
        "turn": 0, "prompt": "...", "observation": "...", "raw_output": "...", "action": "...",
        "action_span": [12, 30],                      # characters of raw_output, or null
        "action_tokens": [3, 8],                      # [start, end) response tokens, or null
        "reward": 0.0, "valid": true,
        "token_ids": [...],
        "token_offsets": [[0, 4], ...],               # each token's characters in raw_output
        "values": {"advantage": [...],                # the final per-token advantage (always)
                   "logprob": [...],                  # the sampling log-prob (always)
                   "delta": [...], "weight": [...]},  # token_values, when the rule has them
        "info": {"privileged": "..."}}]}              # row_info, when the rule has it

Every per-token list has one entry per response token. Names in ``values`` and ``info`` are
the rule's own (``delta``: PI log-prob shift Δ; ``weight``: a weight on A_i; ``privileged``:
the PI text the turn was scored with; ``anchor``: a step group); readers show what is there.
A step's file is written whole and renamed into place, so a reader never sees half of it;
JSON-lines files a running trainer appends to are read up to their last complete line
(:func:`read_records`). A resumed run drops the files of steps after its checkpoint
(:func:`drop_steps_after`), as it truncates ``metrics.jsonl``.

Example:
    >>> token_offsets(lambda ids: "".join(chr(96 + i) for i in ids), [1, 2, 3], prefix_length=1)
    [(1, 2), (2, 3), (3, 4)]
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentenvs.core.trajectory import to_json_value

if TYPE_CHECKING:
    from agents.algorithms.base import CreditResult
    from agents.rollout import RolloutBatch

VERSION = 1
RECORD_DIR = "credit"
"""Folder of a run that holds the step files."""
STEP_FILE = re.compile(r"step_([0-9]{1,9})\.jsonl")
PROMPT_CHARS = 2_000
"""Longest prompt kept in a record (its end: a conversation's latest turns)."""


def step_path(run_dir: str | os.PathLike[str], step: int) -> Path:
    """``<run>/credit/step_<step>.jsonl``."""
    return Path(run_dir) / RECORD_DIR / f"step_{int(step)}.jsonl"


def token_offsets(
    decode: Callable[[list[int]], str], token_ids: Sequence[int], *, prefix_length: int = 0
) -> list[tuple[int, int]]:
    """Each token's ``(start, end)`` characters in ``prefix + decode(token_ids)``.

    Token ``k`` covers what decoding the first ``k + 1`` tokens adds to decoding the first
    ``k`` (so a character split over several byte tokens belongs to the token that completes
    it, and a special token decoding to nothing gets an empty range).
    """
    full = len(decode(list(token_ids)))
    offsets, previous = [], 0
    for index in range(1, len(token_ids) + 1):
        length = max(previous, min(len(decode(list(token_ids[:index]))), full))
        offsets.append((prefix_length + previous, prefix_length + length))
        previous = length
    return offsets


def recorded_groups(batch: RolloutBatch, count: int) -> list[int]:
    """Positions of the ``count`` groups to record: groups whose outcomes differ first, in batch order.

    Groups with one outcome for all get no outcome advantage under GRPO-style rules; they are
    recorded only when there are too few others.
    """
    if count <= 0:
        return []
    rewards = batch.trajectory_rewards.tolist()
    spans, offset = [], 0
    for group in batch.groups:
        spans.append(rewards[offset : offset + len(group)])
        offset += len(group)
    mixed = [g for g, values in enumerate(spans) if len(set(values)) > 1]
    uniform = [g for g, values in enumerate(spans) if len(set(values)) <= 1]
    return sorted((mixed + uniform)[:count])


def _rounded(values: Sequence[float]) -> list[float]:
    return [round(float(value), 6) for value in values]


def credit_records(
    batch: RolloutBatch,
    credit: CreditResult,
    *,
    step: int,
    rule: str,
    groups: int,
    decode: Callable[[list[int]], str],
    response_prefix: str = "",
) -> list[dict[str, Any]]:
    """The records (see the module docstring) of up to ``groups`` groups of one step.

    Args:
        batch: The step's rollout batch.
        credit: What the credit rule returned for it.
        step: The training step.
        rule: The credit rule's name.
        groups: Groups to record (:func:`recorded_groups` chooses them).
        decode: Token ids to text, as the policy renders a response (special tokens skipped).
        response_prefix: Text every raw output starts with before its tokens.
    """
    rows_by_trajectory = batch.rows_by_trajectory()
    rows_of = {
        (trajectory, int(batch.turn_index[row])): row
        for trajectory, rows in enumerate(rows_by_trajectory)
        for row in rows
    }
    lengths = batch.response_mask.sum(dim=1).tolist()
    token_values = {"advantage": credit.advantages, "logprob": batch.old_logprobs, **credit.token_values}
    starts, offset = [], 0
    for group in batch.groups:
        starts.append(offset)
        offset += len(group)
    records = []
    for position in recorded_groups(batch, groups):
        group = batch.groups[position]
        for member, trajectory in enumerate(group.trajectories):
            index = starts[position] + member
            turns = []
            for number, turn in enumerate(trajectory.turns):
                row = rows_of.get((index, number))
                if row is None:
                    continue
                length = int(lengths[row])
                ids = batch.response_ids[row, :length].tolist()
                start, end = batch.action_token_spans[row].tolist()
                prompt = batch.prompts[row]
                turns.append(
                    {
                        "turn": number,
                        "prompt": prompt if len(prompt) <= PROMPT_CHARS else "…" + prompt[-PROMPT_CHARS:],
                        "observation": turn.observation,
                        "raw_output": turn.raw_output,
                        "action": turn.action,
                        "action_span": None
                        if turn.action_span is None
                        else [turn.action_span.start, turn.action_span.end],
                        "action_tokens": [start, end] if 0 <= start <= end else None,
                        "reward": float(batch.turn_rewards[row]),
                        "valid": bool(turn.valid),
                        "token_ids": ids,
                        "token_offsets": [
                            list(pair) for pair in token_offsets(decode, ids, prefix_length=len(response_prefix))
                        ],
                        "values": {
                            name: _rounded(values[row, :length].tolist()) for name, values in token_values.items()
                        },
                        "info": {name: to_json_value(values[row]) for name, values in credit.row_info.items()},
                    }
                )
            records.append(
                {
                    "version": VERSION,
                    "step": int(step),
                    "rule": rule,
                    "group": position,
                    "member": member,
                    "trajectory": index,
                    "group_id": int(group.group_id),
                    "task_id": str(group.task_id),
                    "task": trajectory.task,
                    "success": bool(trajectory.success),
                    "score": float(trajectory.score),
                    "reward": float(batch.trajectory_rewards[index]),
                    "values": {
                        name: round(float(values[index]), 6) for name, values in credit.trajectory_values.items()
                    },
                    "turns": turns,
                }
            )
    return records


def write_step(run_dir: str | os.PathLike[str], step: int, records: Sequence[dict[str, Any]]) -> Path:
    """Writes one step's records whole (a temporary file renamed into place); returns its path."""
    path = step_path(run_dir, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    os.chmod(staging, 0o644)  # mkstemp's 0600 would hide the records from other readers
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        os.replace(staging, path)
    finally:
        if os.path.exists(staging):
            os.unlink(staging)
    return path


def recorded_steps(run_dir: str | os.PathLike[str]) -> list[int]:
    """The steps with a record file, ascending (from the file names; nothing is read)."""
    folder = Path(run_dir) / RECORD_DIR
    if not folder.is_dir():
        return []
    return sorted(int(match[1]) for name in os.listdir(folder) if (match := STEP_FILE.fullmatch(name)))


def drop_steps_after(run_dir: str | os.PathLike[str], step: int) -> list[int]:
    """Removes the record files of steps after ``step`` (a resumed run records them again); returns them."""
    dropped = [n for n in recorded_steps(run_dir) if n > step]
    for number in dropped:
        step_path(run_dir, number).unlink(missing_ok=True)
    return dropped


def complete_lines(path: str | os.PathLike[str]) -> list[bytes]:
    """The newline-terminated lines of a file (a line still being written is left out)."""
    data = Path(path).read_bytes()
    return data.split(b"\n")[:-1]


def read_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, up to its last complete record.

    A file a running trainer is appending to may end in half a line; reading stops at the
    first line that is not a whole JSON object (blank lines are skipped).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "m.jsonl"
    >>> _ = path.write_text('{"step": 0}\\n{"step": 1}\\n{"st')
    >>> read_records(path)
    [{'step': 0}, {'step': 1}]
    """
    records = []
    for line in complete_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            break
        if not isinstance(record, dict):
            break
        records.append(record)
    return records


def read_step(run_dir: str | os.PathLike[str], step: int) -> list[dict[str, Any]]:
    """A step's records (empty when the step has none)."""
    path = step_path(run_dir, step)
    return read_records(path) if path.is_file() else []
