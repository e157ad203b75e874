"""The on-policy loop: collect → credit → update → evaluate → log → checkpoint.

One training step collects ``num_groups × group_size`` episodes, turns them into
token advantages with the configured credit rule (which the trainer does not
inspect), and takes ``num_iterations × mini_batches`` optimizer steps on the
clipped policy loss, accumulating gradients over micro-batches. Evaluation plays
held-out tasks greedily. Metrics go to ``metrics.jsonl``, TensorBoard and the
console; checkpoints are atomic and hold everything a resumed run needs to
reproduce an uninterrupted one exactly (on CPU).

The update scores rows a prefix chain at a time (:meth:`RolloutBatch.prefix_chains`: a single
turn, or in conversation mode a whole trajectory in one forward pass, its per-token log-probs
scattered back into per-turn rows), and on the frozen trunk's kept hidden states when the
rollout kept them (``trunk_cache``: only the LoRA layers run), so no token the rollout already
pushed through the frozen layers goes through them again.

Example:
    >>> from agents.policy import TransformersPolicy                                   # doctest: +SKIP
    >>> trainer = Trainer(TransformersPolicy("tiny-random-qwen3"), "SearchQA-v0", GRPOConfig())  # doctest: +SKIP
    >>> trainer.learn(total_steps=2)                                                   # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from agents.algorithms.base import CreditContext, CreditResult
from agents.algorithms.loss import policy_loss
from agents.collection.collector import Collector, TrainingCollector
from agents.collection.evaluation import evaluate_policy
from agents.collection.workers import RolloutWorkers
from agents.config import GRPOConfig
from agents.policy.protocol import Policy
from agents.reference.continuations import ContinuationRunner
from agents.reference.starts import env_has_snapshots
from agents.rollout import RolloutBatch
from agents.runs.checkpoint import (
    Checkpoint,
    latest_checkpoint,
    read_checkpoint,
    restore_rng_state,
    rng_state,
    save_checkpoint,
    truncate_jsonl,
)
from agents.runs.credit_record import RECORD_DIR, credit_records, drop_steps_after, write_step
from agents.runs.folders import with_run_folder
from agents.runs.lock import RunLock
from agents.runs.resume import check_resume, refuse_fresh_start
from agents.settings import OptimSettings
from agents.training.optimizer import adamw, lr_schedule

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter

METRICS_FILE = "metrics.jsonl"
CREDIT_EXAMPLES_FILE = "credit_examples.jsonl"
"""Readable records of what a credit rule based its credit on (rubric bundles, PI)."""
RUN_RECORDS = (METRICS_FILE, CREDIT_EXAMPLES_FILE, RECORD_DIR, "checkpoints")
"""What a run writes that a fresh start into the same folder would destroy."""


def split_evenly(items: list[int], sizes: list[int], parts: int) -> list[list[int]]:
    """``items`` cut, in order, into ``parts`` runs whose ``sizes`` add up as evenly as whole items allow.

    >>> split_evenly([7, 8, 9, 10], [1, 3, 1, 1], 2)
    [[7, 8], [9, 10]]
    >>> split_evenly([1, 2], [1, 1], 3)
    [[1], [2], []]
    """
    total, filled = sum(sizes), 0
    runs: list[list[int]] = []
    run: list[int] = []
    for item, size in zip(items, sizes, strict=True):
        target = total * (len(runs) + 1) / parts
        if run and len(runs) < parts - 1 and filled + size / 2 > target:
            runs.append(run)
            run = []
        run.append(item)
        filled += size
    runs.append(run)
    return runs + [[] for _ in range(parts - len(runs))]


class Trainer:
    """Trains a policy on an env with a credit rule (see the module docstring).

    Args:
        policy: The policy to train (:class:`~agents.policy.protocol.Policy`, e.g. ``TransformersPolicy``).
        env_id: A registered env id.
        config: The run's settings.
        model_name: Recorded in the checkpoint config.
        policy_factory: Builds a copy of the policy (same model and settings), picklable: what each
            Ray rollout worker holds when ``config.rollout_workers > 0``.
    """

    def __init__(
        self,
        policy: Policy,
        env_id: str,
        config: GRPOConfig,
        *,
        model_name: str = "",
        policy_factory: Callable[[], Policy] | None = None,
    ) -> None:
        config = with_run_folder(config, config.credit, env_id)  # output_dir=None: a new runs/<rule>-<env>-<n>
        self.policy = policy
        self.env_id = env_id
        self.config = config
        self.model_name = model_name
        self.output_dir = Path(str(config.output_dir))
        self.credit_rule = config.credit_choice.build(config)
        config.check_env(env_id)  # a misspelt env keyword fails here, naming the field
        self.prompt_builder = config.prompt_builder()
        env_kwargs = config.env_kwargs_with_limit()
        self.env_kwargs = env_kwargs
        self.eval_env_kwargs = config.evaluation_env_kwargs(env_id)
        collector_options: dict[str, Any] = {
            "prompt_builder": self.prompt_builder,
            "invalid_action_penalty": config.invalid_action_penalty,
            "success_bonus": config.success_bonus,
            "env_kwargs": env_kwargs,
            "progress": config.progress,
            "rollout_mode": config.rollout_mode,
        }
        self.continuations: ContinuationRunner | None = None
        if self.credit_rule.needs_continuations:
            if config.rollout_mode != "per_turn":
                raise ValueError(
                    f"credit={config.credit!r} plays the policy on from turn states with per-turn prompts; "
                    f"GRPOConfig.rollout_mode must be 'per_turn', got {config.rollout_mode!r}"
                )
            collector_options["record_snapshots"] = self.credit_rule.wants_snapshots(env_has_snapshots(env_id))
            self.continuations = ContinuationRunner(
                policy,
                env_id,
                env_kwargs=env_kwargs,
                prompt_builder=self.prompt_builder,
                invalid_action_penalty=config.invalid_action_penalty,
                success_bonus=config.success_bonus,
                width=config.num_groups * config.group_size,
            )
        self.collector: TrainingCollector
        if config.rollout_workers:
            if policy_factory is None:
                raise ValueError("GRPOConfig.rollout_workers > 0 needs Trainer(policy_factory=...) to build the copies")
            self.collector = RolloutWorkers(
                policy_factory,
                env_id,
                num_workers=config.rollout_workers,
                num_groups=config.num_groups,
                group_size=config.group_size,
                pad_token_id=policy.pad_token_id,
                vectorization_mode=config.vectorization_mode,  # each shard's envs, in its worker
                **{**collector_options, "progress": False},
            )
        else:
            self.collector = Collector(
                policy,
                env_id,
                num_groups=config.num_groups,
                group_size=config.group_size,
                vectorization_mode=config.vectorization_mode,
                num_workers=config.env_workers,
                **collector_options,
            )
        self._eval_collector: Collector | None = None
        self.trunk_cache = config.use_trunk_cache and getattr(policy, "trunk_layer", None) is not None
        if config.trunk_cache and not self.trunk_cache:
            raise ValueError("GRPOConfig.trunk_cache=True, but the policy has no frozen trunk (LoRA on all its layers)")
        self.optimizer = adamw(policy.trainable_parameters(), OptimSettings.of(config))
        self.scheduler: torch.optim.lr_scheduler.LambdaLR | None = None
        self.rng = np.random.default_rng(config.seed)
        self.shuffle_generator = torch.Generator().manual_seed(config.seed)
        self.step = 0
        self._writer: SummaryWriter | None = None
        self._lock = RunLock(self.output_dir)  # taken by learn(), released by close()

    # -- the loop ---------------------------------------------------------------------
    def learn(self, total_steps: int, *, start_evaluation: dict[str, float] | None = None) -> dict[str, float]:
        """Trains until ``total_steps`` steps are done; returns the last metrics record.

        The run folder is locked (:class:`~agents.runs.lock.RunLock`) until :meth:`close`. A
        fresh start into a folder holding another run's records is refused; a resume continues
        from the newest intact checkpoint, with the settings it was trained with unless
        ``resume_changed_config`` (:mod:`agents.runs.resume`).

        Args:
            total_steps: Training steps in all (a resumed run does the rest).
            start_evaluation: ``eval/*`` metrics of the starting model measured elsewhere with
                this run's evaluation settings (e.g. a warm start's final evaluation): logged
                as step 0 instead of evaluating again.
        """
        if total_steps < 0:
            raise ValueError(f"total_steps must be >= 0, got {total_steps}")
        config = self.config
        self._lock.acquire()  # before anything in the folder is read or written
        print(f"{type(config).__name__}: this run writes to {self.output_dir}", flush=True)
        updates_per_step = config.num_iterations * config.mini_batches
        self.scheduler = lr_schedule(self.optimizer, OptimSettings.of(config), total_steps * updates_per_step)
        metrics_path = self.output_dir / METRICS_FILE
        run = {"model": self.model_name, "env": self.env_id, "config": config.to_dict()}
        if not config.resume:
            refuse_fresh_start(self.output_dir, RUN_RECORDS, type(config).__name__)
        elif latest_checkpoint(self.output_dir) is not None:
            checkpoint = read_checkpoint(  # the newest intact one that fits this run; none: an error
                self.output_dir,
                weights_like=self.policy.trainable_state_dict(),
                state_keys=tuple(self._resumed_state()),
            )
            check_resume(self.output_dir, run, config, checkpoint_config=checkpoint.state.get("config"))
            self._restore(checkpoint)
            for path in (metrics_path, self.output_dir / CREDIT_EXAMPLES_FILE):
                truncate_jsonl(path, self.step)
            drop_steps_after(self.output_dir, self.step)
        else:  # resuming a run killed before its first checkpoint (same settings): its records start again
            check_resume(self.output_dir, run, config)
            metrics_path.unlink(missing_ok=True)
            (self.output_dir / CREDIT_EXAMPLES_FILE).unlink(missing_ok=True)
            drop_steps_after(self.output_dir, -1)
        (self.output_dir / "config.json").write_text(json.dumps(run, indent=2))
        self._open_writer()
        record: dict[str, float] = {}
        if self.step == 0:
            record = {
                "step": 0,
                **(start_evaluation if start_evaluation is not None else self.evaluate(prefix="eval/")),
            }
            self._log(record)
        while self.step < total_steps:
            self.step += 1
            record = {"step": self.step, **self.train_step()}
            last = self.step == total_steps
            if last or (config.eval_every and self.step % config.eval_every == 0):
                record.update(self.evaluate(prefix="eval/"))
            self._log(record)
            if last or (config.save_every and self.step % config.save_every == 0):
                self.save()
        if self._writer is not None:
            self._writer.flush()
        return record

    def train_step(self) -> dict[str, float]:
        """One collect → credit → update step; returns its metrics."""
        config = self.config
        started = time.perf_counter()
        task_pool = self.collector.task_ids
        replace = len(task_pool) < config.num_groups
        chosen = self.rng.choice(len(task_pool), size=config.num_groups, replace=replace)
        collect_seed = int(self.rng.integers(0, 2**31 - 1))
        # The rule rescores on top of the rollout's prompt KV (not with rollout workers: their
        # prefills ran in other processes, so the PI pass computes everything).
        reuse = self.credit_rule.reuses_prompt_caches and self.collector.shares_policy_caches
        with contextlib.ExitStack() as keeping:
            if reuse:
                keeping.enter_context(self.policy.keeping_prompt_caches())
            batch, stats = self.collector.collect_on_policy(
                [task_pool[i] for i in chosen],
                seed=collect_seed,
                policy=self.policy,
                keep_trunk_hiddens=self.trunk_cache,
            )
        collected = time.perf_counter()
        if config.beta > 0:
            batch.ref_logprobs = self._reference_logprobs(batch)
        context = CreditContext(config=config, step=self.step, policy=self.policy, continuations=self.continuations)
        try:
            credit = self.credit_rule.compute(batch, context)
        finally:
            if reuse:
                self.policy.clear_prompt_caches()
        advantages = credit.advantages
        if advantages.shape != batch.response_mask.shape:
            raise ValueError(
                f"credit rule {config.credit!r} returned {tuple(advantages.shape)}, "
                f"expected {tuple(batch.response_mask.shape)}"
            )
        credited = time.perf_counter()
        update = self.update(batch, advantages)
        updated = time.perf_counter()
        mask = batch.response_mask.bool()
        metrics = {
            **stats.to_dict("train/"),
            **update,
            "advantage_abs_mean": float(advantages[mask].abs().mean()) if mask.any() else 0.0,
            "lr": float(self.optimizer.param_groups[0]["lr"]),
            "time/collect_s": collected - started,
            "time/credit_s": credited - collected,
            "time/update_s": updated - credited,
            "time/update_tokens_per_s": batch.num_tokens * config.num_iterations / max(updated - credited, 1e-9),
        }
        metrics.pop("train/seconds", None)
        metrics.update(credit.stats)
        self._write_credit_examples(credit.examples)
        self._record_credit(batch, credit)
        return metrics

    def _record_credit(self, batch: RolloutBatch, credit: CreditResult) -> None:
        """Writes ``record_groups`` groups' per-token credit to ``credit/step_<N>.jsonl`` (for the viewer)."""
        if not self.config.record_groups:
            return
        tokenizer = self.policy.tokenizer
        records = credit_records(
            batch,
            credit,
            step=self.step,
            rule=self.config.credit,
            groups=self.config.record_groups,
            decode=lambda ids: str(tokenizer.decode(ids, skip_special_tokens=True)),
            response_prefix=self.config.response_prefix,
        )
        write_step(self.output_dir, self.step, records)

    def _write_credit_examples(self, examples: list[dict[str, Any]]) -> None:
        """Appends a rule's readable examples to ``credit_examples.jsonl``: at step 1, at evaluation
        steps, and at the first step that has any (a rule that rarely acts, such as ORSD where most
        groups have a uniform outcome, still shows what it did)."""
        path = self.output_dir / CREDIT_EXAMPLES_FILE
        every = self.config.eval_every
        first = not path.is_file() or path.stat().st_size == 0
        if not examples or not (first or self.step == 1 or (every and self.step % every == 0)):
            return
        self.output_dir.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            for example in examples:
                handle.write(json.dumps({"step": self.step, **example}, ensure_ascii=False) + "\n")

    def update(self, batch: RolloutBatch, advantages: torch.Tensor) -> dict[str, float]:
        """``num_iterations`` passes of ``mini_batches`` optimizer steps over the batch.

        The shuffled units are the chains sampled from one prompt (:meth:`RolloutBatch.prompt_units`,
        where the policy shares prompts), so a micro-batch feeds each such prompt once. Without a
        KL term (``beta = 0``) a chain whose advantages are all 0 adds exactly nothing to the loss
        or its gradient, and is not scored (the mini-batch's row and token counts, which normalise
        the loss, still count it).
        """
        config = self.config
        device = self.policy.device
        sums = {"loss": 0.0, "grad_norm": 0.0}
        diagnostics = {"clip_fraction": 0.0, "kl": 0.0, "ratio_mean": 0.0}
        updates = scored_updates = 0
        if len(batch) == 0:
            return {**sums, **diagnostics}
        chains = batch.prefix_chains()  # one row each, or a conversation's turns together
        units = self._prompt_units(batch, chains)

        def rows_of(chosen: list[int]) -> list[int]:
            return [row for chain in chosen for row in chains[chain]]

        # A unit's forward covers its prompt and its chains' own tokens: micro-batches of units of
        # similar length compute little padding, and the mini-batch's gradient (their sum) is the same.
        row_lengths = (batch.prompt_mask.sum(dim=1) + batch.response_mask.sum(dim=1)).tolist()
        unit_lengths = [max(row_lengths[chains[chain][-1]] for chain in unit) for unit in units]
        unit_rows = [len(rows_of(unit)) for unit in units]
        moves = advantages.ne(0).any(dim=1).tolist() if config.beta == 0 else [True] * len(batch)

        for _ in range(config.num_iterations):
            order = torch.randperm(len(units), generator=self.shuffle_generator).tolist()
            for chosen in split_evenly(order, [unit_rows[unit] for unit in order], config.mini_batches):
                if not chosen:
                    continue
                chosen = sorted(chosen, key=lambda unit: unit_lengths[unit])
                part = rows_of([chain for unit in chosen for chain in units[unit]])
                tokens = int(batch.response_mask[part].sum())
                scored = [
                    [chain for chain in units[unit] if any(moves[row] for row in chains[chain])] for unit in chosen
                ]
                scored = [unit for unit in scored if unit]
                scored_tokens = sum(int(batch.response_mask[rows_of(unit)].sum()) for unit in scored)
                self.optimizer.zero_grad(set_to_none=True)
                for start in range(0, len(scored), config.micro_batch_size):
                    micro = torch.tensor(
                        rows_of([c for unit in scored[start : start + config.micro_batch_size] for c in unit])
                    )
                    sub = batch.select(micro)
                    logprobs = self.batch_logprobs(sub)
                    loss, stats = policy_loss(
                        logprobs,
                        sub.old_logprobs.to(device),
                        advantages[micro].to(device),
                        sub.response_mask.to(device),
                        epsilon=config.epsilon,
                        epsilon_high=config.epsilon_high,
                        beta=config.beta,
                        ref_logprobs=None if sub.ref_logprobs is None else sub.ref_logprobs.to(device),
                        loss_type=config.loss_type,
                        total_rows=len(part),
                        total_tokens=tokens,
                        max_length=config.max_new_tokens,
                    )
                    loss.backward()
                    share = int(sub.response_mask.sum()) / max(scored_tokens, 1)
                    sums["loss"] += loss.item()
                    for key in diagnostics:
                        diagnostics[key] += stats[key] * share
                parameters = self.policy.trainable_parameters()
                for parameter in parameters:  # nothing scored: the step sees the zero gradient it would have computed
                    if parameter.grad is None:
                        parameter.grad = torch.zeros_like(parameter)
                if config.max_grad_norm > 0:
                    norm = torch.nn.utils.clip_grad_norm_(parameters, config.max_grad_norm)
                else:
                    norm = torch.linalg.vector_norm(
                        torch.stack([p.grad.norm() for p in parameters if p.grad is not None])
                    )
                sums["grad_norm"] += float(norm)
                self.optimizer.step()
                if self.scheduler is not None:
                    self.scheduler.step()
                updates += 1
                scored_updates += bool(scored)
        return {
            **{key: value / max(updates, 1) for key, value in sums.items()},
            **{key: value / max(scored_updates, 1) for key, value in diagnostics.items()},
        }

    def batch_logprobs(self, batch: RolloutBatch, *, model: torch.nn.Module | None = None) -> torch.Tensor:
        """``[B, T]`` teacher-forced log-probs of a batch's responses, one forward per prompt unit.

        Rows without chains, shared prompts or kept trunk states take the policy's
        ``token_logprobs`` path as is; otherwise each chain's last row is scored once (on its kept
        trunk states when it has them), chains sampled from one prompt share an input row
        (:meth:`RolloutBatch.prompt_units`, where the policy shares prompts), and every row of a
        chain reads its response's span out of that pass.
        """
        chains = batch.prefix_chains()
        units = self._prompt_units(batch, chains)
        if batch.trunk_hiddens is None and len(units) == len(chains) and all(len(chain) == 1 for chain in chains):
            return self.policy.token_logprobs(
                batch.prompt_ids, batch.prompt_mask, batch.response_ids, batch.response_mask, model=model
            )
        tokens = [batch.row_tokens(row) for row in range(len(batch))]
        sequences = [tokens[chain[-1]][0] + tokens[chain[-1]][1] for chain in chains]
        spans = [
            [(len(tokens[row][0]), len(tokens[row][0]) + len(tokens[row][1])) for row in chain] for chain in chains
        ]
        kept = None if batch.trunk_hiddens is None else [batch.trunk_hiddens[chain[-1]] for chain in chains]
        scored = self.policy.sequence_logprobs(
            sequences, spans, trunk_hiddens=kept, model=model, packs=units if len(units) < len(chains) else None
        )
        width = batch.response_ids.shape[1]
        by_row = {
            row: piece
            for chain, pieces in zip(chains, scored, strict=True)
            for row, piece in zip(chain, pieces, strict=True)
        }
        return torch.stack(
            [torch.nn.functional.pad(by_row[row], (0, width - len(by_row[row]))) for row in range(len(batch))]
        )

    def _prompt_units(self, batch: RolloutBatch, chains: list[list[int]]) -> list[list[int]]:
        """Chains sampled from one prompt, together where the policy shares prompts (``share_prompts``)."""
        if getattr(self.policy, "share_prompts", False):
            return batch.prompt_units(chains)
        return [[chain] for chain in range(len(chains))]

    @torch.no_grad()
    def _reference_logprobs(self, batch: RolloutBatch) -> torch.Tensor:
        result = torch.zeros_like(batch.old_logprobs)
        chains = batch.prefix_chains()
        with self.policy.reference_model() as reference:
            for start in range(0, len(chains), self.config.micro_batch_size):
                rows = torch.tensor(
                    [row for chain in chains[start : start + self.config.micro_batch_size] for row in chain]
                )
                result[rows] = self.batch_logprobs(batch.select(rows), model=reference).cpu()
        return result

    # -- evaluation -------------------------------------------------------------------
    def evaluate(self, episodes: int | None = None, *, prefix: str = "") -> dict[str, float]:
        """Plays the first ``episodes`` held-out tasks once each; returns success, score, length, invalid rate.

        Sampling (``eval_greedy=False``) draws from a generator seeded by the step, so
        evaluating never changes what training samples afterwards.
        """
        episodes = self.config.eval_episodes if episodes is None else episodes
        trajectories = self.output_dir / "trajectories" / f"eval_step_{self.step}.jsonl"
        return evaluate_policy(
            self.policy,
            self._evaluation_collector(episodes),
            episodes=episodes,
            seed=self.config.seed,
            greedy=self.config.eval_greedy,
            sample_seed=self.config.seed * 1_000_003 + self.step,
            prefix=prefix,
            trajectories_path=trajectories if self.output_dir.is_dir() else None,  # what the agent did, for reading
        )

    def _evaluation_collector(self, episodes: int) -> Collector:
        if self._eval_collector is None or self._eval_collector.num_groups != episodes:
            if self._eval_collector is not None:
                self._eval_collector.close()
            self._eval_collector = Collector(
                self.policy,
                self.env_id,
                num_groups=episodes,
                group_size=1,
                prompt_builder=self.prompt_builder,
                invalid_action_penalty=self.config.invalid_action_penalty,
                env_kwargs=self.eval_env_kwargs,
                progress=self.config.progress,
                rollout_mode=self.config.rollout_mode,
                description=f"evaluate ({episodes} held-out goals)",
            )
        return self._eval_collector

    # -- logs and checkpoints ---------------------------------------------------------
    def _open_writer(self) -> None:
        if not self.config.tensorboard or self._writer is not None:
            return
        from torch.utils.tensorboard import SummaryWriter

        self._writer = SummaryWriter(log_dir=str(self.output_dir / "tensorboard"), purge_step=self.step + 1)

    def _log(self, record: dict[str, float]) -> None:
        with open(self.output_dir / METRICS_FILE, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
        if self._writer is not None:
            for key, value in record.items():
                if key != "step" and isinstance(value, (int, float)) and math.isfinite(value):
                    self._writer.add_scalar(key, value, record["step"])
        shown = [f"step {record['step']}"]
        for key in (
            "train/success_rate",
            "train/mean_reward",
            "train/invalid_rate",
            "loss",
            "eval/success_rate",
            "eval/invalid_rate",
            "time/collect_s",
            "time/update_s",
        ):
            if key in record:
                shown.append(f"{key.split('/')[-1] if key.startswith('time/') else key}={record[key]:.3g}")
        print(" | ".join(shown), flush=True)

    def _resumed_state(self) -> dict[str, Any]:
        """What a resume puts back besides the weights (a checkpoint lacking a key is passed over)."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
            "rng": rng_state(self.rng, self.policy.generator),
            "shuffle_generator": self.shuffle_generator.get_state(),
        }

    def save(self) -> Path:
        """Writes a checkpoint of the current step (atomic)."""
        state = {
            **self._resumed_state(),
            "config": self.config.to_dict(),
            "model": self.model_name,
            "env": self.env_id,
        }
        return save_checkpoint(self.output_dir, self.step, self.policy.trainable_state_dict(), state)

    def _restore(self, checkpoint: Checkpoint) -> None:
        step, weights, state = checkpoint.step, checkpoint.weights, checkpoint.state
        self.policy.load_trainable_state_dict(weights)
        self.optimizer.load_state_dict(state["optimizer"])
        if self.scheduler is not None and state["scheduler"] is not None:
            self.scheduler.load_state_dict(state["scheduler"])
            # The saved schedule's base rate, unless resume_changed_config allowed a new learning_rate.
            self.scheduler.base_lrs = [self.config.learning_rate for _ in self.scheduler.base_lrs]
        for group in self.optimizer.param_groups:
            group["weight_decay"] = self.config.weight_decay
        restore_rng_state(state["rng"], self.rng, self.policy.generator)
        self.shuffle_generator.set_state(state["shuffle_generator"])
        self.step = step
        print(f"resumed from {checkpoint.describe()}", flush=True)

    def close(self) -> None:
        """Closes envs and the TensorBoard writer; releases the run folder's lock."""
        self._lock.release()
        self.collector.close()
        if self.continuations is not None:
            self.continuations.close()
        if self._eval_collector is not None:
            self._eval_collector.close()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
