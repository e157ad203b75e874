"""The shared mechanism of ORSD and TASPO: the privileged log-prob shift.

The same sampled response tokens are scored twice by the policy as it was at rollout,
once with privileged text (PI) in the prompt and once without; the per-token gap

    Δ_t = log π(y_t | x ⊕ PI, y_<t) − log π(y_t | x, y_<t)

says which tokens the privileged text makes more (Δ_t > 0) or less (Δ_t < 0) likely.
Nothing is re-generated: only the policy's teacher-forced ``score`` path runs, without
gradient, batched over every turn that has PI. Turns without PI get Δ = 0 and cost nothing,
and rows that repeat another's prompt, PI and response (siblings' identical opening turns, a
target scored against the same PI twice) are scored once and share its Δ.

Example:
    >>> insert_privileged_text("Task: find the pen.\\nYou see a desk.", "Hint: look on the desk.",
    ...                        task="find the pen.")
    'Task: find the pen.\\nHint: look on the desk.\\nYou see a desk.'
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Literal, Protocol

import torch

Placement = Literal["after_task", "prompt_start", "prompt_end"]
PLACEMENTS: tuple[str, ...] = typing.get_args(Placement)


class ScoreFn(Protocol):
    """What the shift needs from a policy: its teacher-forced, no-gradient ``score`` path.

    ``score(prompts, responses, contexts=None, *, response_mask=None)`` returns the ``[B, T]``
    log-probs of the right-padded ``responses`` tokens after ``prompts`` (0 at padding), as
    ``TransformersPolicy.score`` and ``CreditContext.score`` do. This module places the PI in
    the prompt text itself and passes no ``contexts``; with ``reuse_prompt_cache`` it also
    passes ``reuse_from`` (the rollout prompts, whose kept KV the scorer reuses).
    """

    def __call__(
        self,
        prompts: Sequence[str],
        responses: torch.Tensor,
        contexts: Sequence[str | None] | None = None,
        *,
        response_mask: torch.Tensor | None = None,
    ) -> torch.Tensor: ...


def insert_privileged_text(prompt: str, privileged: str, *, task: str = "", placement: Placement = "after_task") -> str:
    """``prompt`` with ``privileged`` inserted as its own line(s).

    Placements:
        ``after_task``: right after the line that ends the task text (the first line when the
        task is empty or not found verbatim); ``prompt_start``: before everything;
        ``prompt_end``: after everything.

    Raises:
        ValueError: for an unknown placement.
    """
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    if not privileged:
        return prompt
    if placement == "prompt_start":
        return f"{privileged}\n{prompt}"
    if placement == "prompt_end":
        return f"{prompt}\n{privileged}"
    found = prompt.find(task) if task else -1
    anchor = found + len(task) if found >= 0 else 0
    line_end = prompt.find("\n", anchor)
    if line_end < 0:
        return f"{prompt}\n{privileged}"
    return f"{prompt[:line_end]}\n{privileged}{prompt[line_end:]}"


@torch.no_grad()
def privileged_logprob_shift(
    score: ScoreFn,
    prompts: Sequence[str],
    response_ids: torch.Tensor,
    response_mask: torch.Tensor,
    privileged: Sequence[str | None],
    *,
    tasks: Sequence[str] | None = None,
    placement: Placement = "after_task",
    base_logprobs: torch.Tensor | None = None,
    reuse_prompt_cache: bool = False,
) -> torch.Tensor:
    """Δ ``[B, T]``: log-probs with PI minus without, 0 on padding and on rows without PI.

    Args:
        score: The policy's scoring path, with the policy as at rollout.
        prompts: ``B`` prompt texts (what the policy saw).
        response_ids: ``[B, T]`` right-padded sampled response ids.
        response_mask: ``[B, T]`` 1 on real response tokens.
        privileged: PI text per row, or None/"" for rows that get none (not scored at all).
        tasks: Task text per row, to find the ``after_task`` insertion point.
        placement: Where the PI goes (see :func:`insert_privileged_text`).
        base_logprobs: ``[B, T]`` log π(y_t | x, y_<t) if already known — the rollout's
            sampling log-probs equal the teacher-forced score while the policy is unchanged —
            so only the with-PI pass runs; None scores both.
        reuse_prompt_cache: Let the scorer reuse the rollout's kept prompt KV for the tokens
            the with-PI prompt shares with the original (all of it with ``prompt_end``).

    Raises:
        ValueError: if the argument sizes disagree.
    """
    rows = len(prompts)
    if response_ids.shape[0] != rows or response_mask.shape != response_ids.shape:
        raise ValueError(
            f"{rows} prompts, response_ids {tuple(response_ids.shape)}, response_mask {tuple(response_mask.shape)}"
        )
    for name, values in (("privileged", privileged), ("tasks", tasks)):
        if values is not None and len(values) != rows:
            raise ValueError(f"{name} has {len(values)} entries, prompts has {rows}")
    if base_logprobs is not None and base_logprobs.shape != response_ids.shape:
        raise ValueError(f"base_logprobs {tuple(base_logprobs.shape)} != response_ids {tuple(response_ids.shape)}")
    shift = torch.zeros(response_ids.shape, dtype=torch.float32)
    active = [row for row in range(rows) if privileged[row]]
    if not active:
        return shift
    with_pi = {
        row: insert_privileged_text(
            prompts[row], privileged[row] or "", task=tasks[row] if tasks is not None else "", placement=placement
        )
        for row in active
    }
    # Identical (prompt, PI prompt, response) rows get identical log-probs: score each once.
    positions: dict[tuple[str, str, tuple[int, ...]], int] = {}
    distinct: list[int] = []  # the first row of each distinct key
    inverse: list[int] = []  # per active row, its key's position in ``distinct``
    for row in active:
        key = (prompts[row], with_pi[row], tuple(response_ids[row][response_mask[row].bool()].tolist()))
        if key not in positions:
            positions[key] = len(distinct)
            distinct.append(row)
        inverse.append(positions[key])
    expand = torch.tensor(inverse, dtype=torch.long)
    index = torch.tensor(active, dtype=torch.long)
    ids, mask = response_ids[distinct], response_mask[distinct]
    originals = [prompts[row] for row in distinct]
    reuse = {"reuse_from": originals} if reuse_prompt_cache else {}
    scored = score([with_pi[row] for row in distinct], ids, None, response_mask=mask, **reuse).float().cpu()[expand]
    if base_logprobs is None:
        base = score(originals, ids, None, response_mask=mask, **reuse).float().cpu()[expand]
    else:
        base = base_logprobs[index].float().cpu()
    mask = response_mask[index]
    width = min(scored.shape[1], base.shape[1])
    gap = (scored[:, :width] - base[:, :width]) * mask[:, :width].float().cpu()
    shift[index, :width] = gap
    return shift
