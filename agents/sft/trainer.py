"""Behaviour cloning: maximise the log-likelihood of the experts' responses, prompts masked.

Each :class:`~agents.sft.demonstrations.Demonstration` becomes the chat-templated prompt
ids (exactly what the policy sees in a rollout) and the response ids: the expert's text,
plus the end-of-turn token where no stop string ends it (so the model learns to stop). The
loss of an optimizer step is the mean negative log-likelihood over the response tokens of
its ``batch_size`` demonstrations (:func:`response_nll`); prompt and padding tokens carry
no loss. Epochs shuffle with a seeded generator; a checkpoint after each epoch holds what
a resumed run needs to continue exactly.

With LoRA on the top layers only, the layers below are frozen: the hidden states entering the
first adapted layer are the same in every epoch. ``trunk_cache=True`` computes them once per
demonstration (:func:`trunk_states`, one no-grad pass) and every optimizer step then runs only
the adapted layers on them (:mod:`agents.policy.trunk`): the same loss and gradients, for
``top / layers`` of the forward cost per epoch (4 of SmolLM2's 30 layers with ``top_layers=4``).

Example:
    >>> logprobs = torch.tensor([[-1.0, -3.0, 0.0], [-2.0, 0.0, 0.0]])
    >>> mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    >>> float(response_nll(logprobs, mask, total_tokens=3))   # (1 + 3 + 2) / 3
    2.0
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence

from agents.policy import TransformersPolicy
from agents.policy.decoding import positions_from_mask
from agents.policy.trunk import TrunkRecorder, decoder_and_head
from agents.runs.checkpoint import latest_checkpoint, read_checkpoint, restore_rng_state, rng_state, save_checkpoint
from agents.settings import OptimSettings
from agents.sft.demonstrations import Demonstration
from agents.training.optimizer import adamw, lr_schedule


@dataclass(frozen=True)
class TokenizedDemonstration:
    """A demonstration as token ids: the templated prompt and the response to learn."""

    prompt_ids: list[int]
    response_ids: list[int]


def response_nll(logprobs: torch.Tensor, response_mask: torch.Tensor, *, total_tokens: int) -> torch.Tensor:
    """``-sum(logprobs over response tokens) / total_tokens`` (a micro-batch's share of the step's mean)."""
    return -(logprobs * response_mask).sum() / max(total_tokens, 1)


def tokenize_demonstrations(
    policy: TransformersPolicy, demonstrations: Sequence[Demonstration], *, stop: Sequence[str] = ()
) -> list[TokenizedDemonstration]:
    """Prompt ids as the policy templates them, response ids with the end-of-turn token where needed.

    A response that starts with the policy's ``response_prefix`` loses it (the prefix is
    part of the prompt ids); one that ends with a stop string gets no end-of-turn token
    (sampling stops there).
    """
    tokenizer = policy.tokenizer
    end_of_turn = tokenizer.eos_token_id
    prompts = policy.prompt_ids([d.prompt for d in demonstrations])
    result = []
    for demonstration, prompt_ids in zip(demonstrations, prompts, strict=True):
        text = demonstration.response
        if policy.response_prefix and text.startswith(policy.response_prefix):
            text = text[len(policy.response_prefix) :]
        response_ids = tokenizer.encode(text, add_special_tokens=False)
        if end_of_turn is not None and not any(s and text.endswith(s) for s in stop):
            response_ids.append(int(end_of_turn))
        result.append(TokenizedDemonstration(prompt_ids, response_ids))
    return result


def pad_demonstrations(
    examples: Sequence[TokenizedDemonstration], pad_token_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(prompt_ids, prompt_mask, response_ids, response_mask)``: prompts left-padded, responses right-padded."""

    def pad(rows: list[list[int]], side: str) -> tuple[torch.Tensor, torch.Tensor]:
        tensors = [torch.tensor(row, dtype=torch.long) for row in rows]
        ids = pad_sequence(tensors, batch_first=True, padding_value=pad_token_id, padding_side=side)
        mask = pad_sequence([torch.ones_like(t) for t in tensors], batch_first=True, padding_side=side)
        return ids, mask

    prompt_ids, prompt_mask = pad([e.prompt_ids for e in examples], "left")
    response_ids, response_mask = pad([e.response_ids for e in examples], "right")
    return prompt_ids, prompt_mask, response_ids, response_mask


@torch.no_grad()
def trunk_states(
    policy: TransformersPolicy,
    examples: Sequence[TokenizedDemonstration],
    *,
    batch_size: int = 8,
    progress: bool = False,
) -> list[torch.Tensor]:
    """Per demonstration, the ``[P + R, D]`` hidden states entering the policy's first adapted layer.

    Batches hold demonstrations of similar length (little padding is computed), and each pass
    stops at the first adapted layer (:class:`~agents.policy.trunk.TrunkRecorder` ``stop``); the
    states come back in the order of ``examples``.

    Raises:
        ValueError: when the policy has no frozen trunk (LoRA on the top layers only).
    """
    from tqdm.auto import tqdm

    if policy.trunk_layer is None:
        raise ValueError("trunk states need LoRA on the top layers only (lora.top_layers)")
    decoder, _ = decoder_and_head(policy.model)
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].prompt_ids) + len(examples[i].response_ids))
    states: dict[int, torch.Tensor] = {}
    starts = range(0, len(order), batch_size)
    for start in tqdm(starts, desc="sft: trunk states", unit="batch", leave=False, disable=not progress):
        batch = order[start : start + batch_size]
        tensors = [torch.tensor(examples[i].prompt_ids + examples[i].response_ids, dtype=torch.long) for i in batch]
        ids = pad_sequence(tensors, batch_first=True, padding_value=policy.pad_token_id, padding_side="left")
        mask = pad_sequence([torch.ones_like(t) for t in tensors], batch_first=True, padding_side="left")
        ids, mask = ids.to(policy.device), mask.to(policy.device)
        with TrunkRecorder(decoder.layers[policy.trunk_layer], stop=True) as recorder:
            policy.model(input_ids=ids, attention_mask=mask, position_ids=positions_from_mask(mask), use_cache=False)
        states.update(zip(batch, recorder.rows(mask), strict=True))
    return [states[i] for i in range(len(examples))]


class SFTTrainer:
    """Fits a policy to tokenized demonstrations (see the module docstring).

    Args:
        policy: The policy to train (``temperature`` 1, so log-probs are the model's own).
        examples: The tokenized demonstrations.
        output_dir: Where metrics and checkpoints go.
        epochs, batch_size, seed, progress, trunk_cache: As in :class:`~agents.sft.config.SFTConfig`
            (``trunk_cache`` applies where the policy has a frozen trunk).
        optim: The optimiser, its schedule, clipping and micro-batches (the config's
            :class:`~agents.settings.OptimSettings`; :mod:`agents.training.optimizer` builds them).
        checkpoint_state: Extra entries for each checkpoint (config, model name, env).
    """

    def __init__(
        self,
        policy: TransformersPolicy,
        examples: Sequence[TokenizedDemonstration],
        *,
        output_dir: str | Path,
        epochs: int,
        batch_size: int,
        optim: OptimSettings,
        seed: int = 0,
        progress: bool = True,
        trunk_cache: bool = True,
        checkpoint_state: dict[str, Any] | None = None,
    ) -> None:
        if not examples:
            raise ValueError("no demonstrations to train on")
        if policy.temperature != 1.0:
            raise ValueError(f"behaviour cloning needs a policy with temperature 1.0, got {policy.temperature}")
        self.policy = policy
        self.examples = list(examples)
        self.trunk: list[torch.Tensor] | None = None
        if trunk_cache and policy.trunk_layer is not None:
            self.trunk = trunk_states(policy, self.examples, batch_size=optim.micro_batch_size, progress=progress)
        self.output_dir = Path(output_dir)
        self.epochs, self.batch_size, self.micro_batch_size = epochs, batch_size, optim.micro_batch_size
        self.max_grad_norm = optim.max_grad_norm
        self.progress = progress
        self.checkpoint_state = dict(checkpoint_state or {})
        self.steps_per_epoch = math.ceil(len(self.examples) / batch_size)
        self.optimizer = adamw(policy.trainable_parameters(), optim)
        self.scheduler = lr_schedule(self.optimizer, optim, self.steps_per_epoch * epochs)
        self.rng = np.random.default_rng(seed)
        self.epoch = 0
        self.optimizer_steps = 0

    def resume(self) -> bool:
        """Loads the newest intact epoch checkpoint if there is one; returns whether it did.

        Raises:
            agents.runs.checkpoint.CheckpointError: when there are checkpoints but none loads safely.
        """
        if latest_checkpoint(self.output_dir) is None:
            return False
        checkpoint = read_checkpoint(  # the newest intact one that fits this run
            self.output_dir,
            weights_like=self.policy.trainable_state_dict(),
            state_keys=tuple(self._resumed_state()),
        )
        if checkpoint.skipped:
            print(f"resuming SFT from {checkpoint.describe()}", flush=True)
        epoch, weights, state = checkpoint.step, checkpoint.weights, checkpoint.state
        self.policy.load_trainable_state_dict(weights)
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        restore_rng_state(state["rng"], self.rng, None)
        self.epoch, self.optimizer_steps = epoch, int(state["optimizer_steps"])
        return True

    def train(self, log: Any = None) -> list[dict[str, float]]:
        """Runs the remaining epochs; returns one record per optimizer step (also passed to ``log``)."""
        from tqdm.auto import tqdm

        records = []
        bar = tqdm(
            total=self.steps_per_epoch * self.epochs,
            initial=self.optimizer_steps,
            desc="sft",
            disable=not self.progress,
        )
        while self.epoch < self.epochs:
            order = self.rng.permutation(len(self.examples))
            for start in range(0, len(order), self.batch_size):
                record = self.step(order[start : start + self.batch_size].tolist())
                record["epoch"] = self.epoch + (start + self.batch_size) / len(order)
                records.append(record)
                if log is not None:
                    log(record)
                bar.update(1)
                bar.set_postfix(loss=f"{record['train/loss']:.3f}")
            self.epoch += 1
            self.save()
        bar.close()
        return records

    def step(self, batch: Sequence[int]) -> dict[str, float]:
        """One optimizer step on the examples at indices ``batch``; returns its loss, tokens and speed."""
        started = time.perf_counter()
        self.policy.model.train(False)  # no dropout: the loss is the model's own likelihood
        self.optimizer.zero_grad(set_to_none=True)
        examples = self.examples
        total_tokens = sum(len(examples[i].response_ids) for i in batch)
        seen_tokens = sum(len(examples[i].prompt_ids) + len(examples[i].response_ids) for i in batch)
        # Similar lengths share a micro-batch, so little compute goes to padding.
        ordered = sorted(batch, key=lambda i: len(examples[i].prompt_ids) + len(examples[i].response_ids))
        loss_sum = 0.0
        for start in range(0, len(ordered), self.micro_batch_size):
            micro = ordered[start : start + self.micro_batch_size]
            padded = pad_demonstrations([examples[i] for i in micro], self.policy.pad_token_id)
            prompt_ids, prompt_mask, response_ids, response_mask = (t.to(self.policy.device) for t in padded)
            logprobs = self.policy.token_logprobs(
                prompt_ids,
                prompt_mask,
                response_ids,
                response_mask,
                trunk_hiddens=None if self.trunk is None else [self.trunk[i] for i in micro],
            )
            loss = response_nll(logprobs, response_mask, total_tokens=total_tokens)
            loss.backward()
            loss_sum += float(loss.detach())
        parameters = self.policy.trainable_parameters()
        norm = torch.nn.utils.clip_grad_norm_(parameters, self.max_grad_norm if self.max_grad_norm > 0 else math.inf)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer_steps += 1
        seconds = time.perf_counter() - started
        return {
            "step": self.optimizer_steps,
            "train/loss": loss_sum,
            "train/response_tokens": float(total_tokens),
            "grad_norm": float(norm),
            "lr": float(self.optimizer.param_groups[0]["lr"]),
            "time/step_s": seconds,
            "time/tokens_per_s": seen_tokens / max(seconds, 1e-9),
        }

    def _resumed_state(self) -> dict[str, Any]:
        """What a resume puts back besides the weights (a checkpoint lacking a key is passed over)."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "rng": rng_state(self.rng, None),
            "optimizer_steps": self.optimizer_steps,
        }

    def save(self) -> Path:
        """Checkpoints the finished epochs (weights, optimizer, scheduler, RNG)."""
        state = {**self._resumed_state(), **self.checkpoint_state}
        return save_checkpoint(self.output_dir, self.epoch, self.policy.trainable_state_dict(), state)


def write_record(path: Path, record: dict[str, float]) -> None:
    """Appends one metrics record to a JSON-lines file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
