"""Token rows to padded ``[B, W]`` id and mask tensors: prompts pad on the left, responses on the right.

Prompts are left-padded so every row's next token sits in the last column (the sampler's and the
scorer's layout); responses are right-padded so token ``t`` of every row sits in column ``t``.

Example:
    >>> ids, mask = left_pad([[5], [6, 7]], pad=0, device=torch.device("cpu"))
    >>> ids.tolist(), mask.tolist()
    ([[0, 5], [6, 7]], [[0, 1], [1, 1]])
    >>> right_pad([[5], [6, 7]], pad=0, device=torch.device("cpu"))[0].tolist()
    [[5, 0], [6, 7]]
"""

from __future__ import annotations

import torch


def left_pad(rows: list[list[int]], pad: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``[B, W]`` ids (``pad`` before each row) and mask (1 on real tokens), ``W`` the longest row."""
    width = max((len(r) for r in rows), default=0)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row) :] = torch.tensor(row)
            mask[i, width - len(row) :] = 1
    return ids.to(device), mask.to(device)


def right_pad(rows: list[list[int]], pad: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``[B, W]`` ids (``pad`` after each row) and mask (1 on real tokens), ``W`` the longest row."""
    width = max((len(r) for r in rows), default=0)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    return ids.to(device), mask.to(device)
