"""``CreditGRPOTrainer``: TRL's ``GRPOTrainer`` whose advantages come from one of our credit rules.

TRL generates (transformers or vLLM), steps the tools and envs, and computes the rewards,
gathered across processes; then, where TRL would normalise the rewards per group, this trainer
builds our rule's input from the whole batch and hands the rule's ``[B, T]`` output to TRL's
loss (``_compute_loss`` takes advantages of shape ``(B, T)`` from subclasses):

1. per completion of this process, its trajectory and turn rows
   (:func:`~agents.integrations.trl.episodes.completion_episode`: turns between tool results,
   the ``act`` argument's token span, outcomes and ``info["privileged"]`` from the env instance);
2. ``gather_object`` of those across processes, so rubrics, guidance and anchor groups see every
   sibling of a group wherever TRL put it;
3. the rule (:func:`~agents.algorithms.base.make_credit_rule`, the object our trainer runs) on that
   :class:`~agents.rollout.RolloutBatch`, with a context whose ``score`` is the PI pass on the model
   TRL trains (:class:`~agents.integrations.trl.scoring.TRLScorer`; each process scores its own rows);
4. this process's rows put back at their completion tokens (0 on tool results and padding).

Two option values are fixed here, as the PI pass in TRL needs them: ``rescore_without_pi=True``
(TRL keeps no log-probs of the training model from generation, and vLLM's differ from it) and
``reuse_prompt_cache=True`` (it only names each row's original prompt to the scorer; no KV is kept).

Example::

    from trl import GRPOConfig
    from agents.integrations.trl import CreditGRPOTrainer
    from agentenvs.integrations.trl import environment_factory, task_dataset
    trainer = CreditGRPOTrainer(
        model="Qwen/Qwen3-1.7B", args=GRPOConfig(num_generations=8, max_tool_calling_iterations=15),
        train_dataset=task_dataset("ALFWorld-v0"), environment_factory=environment_factory("ALFWorld-v0"),
        credit="taspo", credit_options={"epsilon_w": 0.5})
    trainer.train()
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import torch
from accelerate.utils import gather_object
from trl import GRPOTrainer

from agentenvs.core.trajectory import TrajectoryGroup
from agents.algorithms.base import CreditChoice, CreditContext, CreditResult, credit_rule_class
from agents.integrations.trl.episodes import Episode, Renderers, RowContext, completion_episode
from agents.integrations.trl.scoring import RowKey, TRLScorer
from agents.policy.protocol import Policy
from agents.rollout import RolloutBatch, RolloutRow

FIXED_OPTIONS: dict[str, Any] = {"rescore_without_pi": True, "reuse_prompt_cache": True}
"""Options the PI pass in TRL fixes, where a rule has them (see the module docstring)."""


@dataclass(frozen=True)
class TRLCreditConfig:
    """What our rules read of a config (:class:`~agents.algorithms.base.CreditConfig`), from TRL's.

    Attributes:
        credit: The rule's name.
        credit_options: Its options (our trainer's ``GRPOConfig.credit_options``).
        scale_rewards: TRL's ``scale_rewards`` (``group``, ``batch`` or ``none``).
        advantage_eps: Added to the std (TRL's constant, 1e-4).
    """

    credit: str
    credit_options: Mapping[str, Any] = field(default_factory=dict)
    scale_rewards: str = "group"
    advantage_eps: float = 1e-4


def rule_options(credit: str, options: Mapping[str, Any] | None) -> tuple[dict[str, Any], CreditChoice]:
    """``options`` with :data:`FIXED_OPTIONS` set where the rule has them, and the rule with them parsed.

    Raises:
        ValueError: naming an unknown rule, option or bad value, or a rule that plays the policy on
            from saved env states (``credit="vine"``: TRL's rollouts keep no env states).
    """
    rule = credit_rule_class(credit)
    if rule.needs_continuations:
        raise ValueError(
            f"CreditGRPOTrainer: credit={credit!r} plays the current policy on from saved env states, which "
            "TRL's rollouts do not keep; train it with agents' own trainer (GRPOAgent(config=GRPOConfig(credit=...)))"
        )
    names = {f.name for f in dataclasses.fields(rule.options_type)}
    merged = {**dict(options or {}), **{key: value for key, value in FIXED_OPTIONS.items() if key in names}}
    return merged, CreditChoice.parse(credit, merged)


@dataclass
class CreditStep:
    """One batch's credit: the rule's input and result, and this process's advantages.

    Attributes:
        batch: Every row (turn) of every completion of every process.
        result: The rule's :class:`~agents.algorithms.base.CreditResult` on it.
        advantages: ``[B, C]`` this process's advantages at the completion tokens.
        places: Per batch row, ``(completion, start, end)``: the global completion index and the
            row's tokens in it.
        context: The :class:`~agents.algorithms.base.CreditContext` the rule ran with (its policy
            the :class:`~agents.integrations.trl.scoring.TRLScorer` of this batch).
    """

    batch: RolloutBatch
    result: CreditResult
    advantages: torch.Tensor
    places: list[tuple[int, int, int]]
    context: CreditContext


class CreditGRPOTrainer(GRPOTrainer):
    """``trl.GRPOTrainer`` with advantages from our credit rule ``credit`` (see the module docstring).

    Args:
        *args: ``GRPOTrainer``'s.
        credit: A registered rule: ``grpo``, ``rloo``, ``gigpo``, ``orsd``, ``taspo``.
        credit_options: Its options, as in our ``GRPOConfig(credit_options=...)``; checked first.
        score_batch_size: Sequences per forward pass of the PI pass.
        **kwargs: ``GRPOTrainer``'s.

    Raises:
        ValueError: for an unknown rule or option, or ``multi_objective_aggregation`` other
            than ``sum_then_normalize`` (the rules normalise one reward per completion).

    The last batch's :class:`CreditStep` is :attr:`last_credit` (TRL's hook returns its own dict).
    """

    def __init__(
        self,
        *args: Any,
        credit: str = "grpo",
        credit_options: Mapping[str, Any] | None = None,
        score_batch_size: int = 8,
        **kwargs: Any,
    ) -> None:
        options, choice = rule_options(credit, credit_options)  # before the model loads
        if score_batch_size < 1:
            raise ValueError(f"CreditGRPOTrainer.score_batch_size must be an integer >= 1, got {score_batch_size}")
        super().__init__(*args, **kwargs)
        if self.multi_objective_aggregation != "sum_then_normalize":
            raise ValueError(
                "CreditGRPOTrainer needs multi_objective_aggregation='sum_then_normalize', got "
                f"{self.multi_objective_aggregation!r}"
            )
        scale: Any = cast(Any, self.args).scale_rewards
        scale = {True: "group", False: "none"}.get(scale, scale) if isinstance(scale, bool) else str(scale)
        self.credit_config = TRLCreditConfig(credit, options, scale)
        self.credit_rule = choice.build(self.credit_config)
        self.score_batch_size = int(score_batch_size)
        self.last_credit: CreditStep | None = None
        self._credit_rollout: tuple[list[Any], tuple[Any, ...]] | None = None
        self._credit_rewards: torch.Tensor | None = None

    # -- TRL's hooks ------------------------------------------------------------------------
    def _generate(self, prompts: list[Any]) -> Any:
        result = super()._generate(prompts)
        self._credit_rollout = (prompts, result)
        return result

    def _calculate_rewards(self, inputs: Any, prompts: Any, completions: Any, completion_ids_list: Any) -> torch.Tensor:
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._credit_rewards = rewards  # every process's rows (TRL gathers them)
        return rewards

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        if self._credit_rollout is None or self._credit_rewards is None:
            raise RuntimeError("CreditGRPOTrainer: TRL's generation hooks did not run (custom rollout_func?)")
        mode = "train" if cast(Any, self.model).training else "eval"
        step = self.compute_credit(width=int(output["completion_ids"].shape[1]), mode=mode)
        output["advantages"] = step.advantages.to(output["completion_ids"].device)
        self.last_credit = step
        for name, value in step.result.stats.items():
            self._metrics[mode][f"credit/{name}"].append(float(value))
        return output

    # -- the credit -------------------------------------------------------------------------
    def compute_credit(self, *, width: int, mode: str = "train") -> CreditStep:
        """The rule's advantages for the batch TRL just generated and rewarded (see the module docstring)."""
        assert self._credit_rollout is not None and self._credit_rewards is not None
        prompts, (prompt_ids, completion_ids, tool_mask, completions, *_) = self._credit_rollout
        generations: Any = self.num_generations if mode == "train" else self.num_generations_eval
        group_size: int = generations or cast(int, self.num_generations)
        weights = self.reward_weights.to(self._credit_rewards.device)
        rewards = torch.nan_to_num((self._credit_rewards * weights.unsqueeze(0)).nansum(dim=1), nan=0.0).cpu()
        local = len(prompts)
        offset = self.accelerator.process_index * local
        episodes: list[Episode] = []
        contexts: dict[RowKey, RowContext] = {}
        for index in range(local):
            completion = offset + index
            episode, row_contexts = completion_episode(
                prompt=prompts[index],
                prompt_ids=prompt_ids[index],
                completion_ids=completion_ids[index],
                tool_mask=None if tool_mask is None else tool_mask[index],
                messages=completions[index],
                environment=self.environments[index] if self.environments else None,
                reward=float(rewards[completion]),
                group_id=completion // group_size,
                task_id=f"prompt-{completion // group_size}",
                tokenizer=self._tokenizer,
                renderers=self._renderers(index),
            )
            episodes.append(episode)
            for turn_row, row_context in zip(episode.rows, row_contexts, strict=True):
                contexts[(turn_row.prompt, tuple(turn_row.response_ids))] = row_context
        if self.accelerator.num_processes > 1:
            episodes = gather_object(episodes)
        batch, places = credit_batch(episodes, group_size, pad_token_id=int(self._tokenizer.pad_token_id))
        remote = {(row.prompt, tuple(row.response_ids)) for e in episodes for row in e.rows} - set(contexts)
        step = int(self.state.global_step)
        scorer = TRLScorer(
            self.accelerator.unwrap_model(self.model),
            self._tokenizer,
            rows=contexts,
            remote=remote,
            render_user=self._render_user,
            temperature=self.temperature,
            batch_size=self.score_batch_size,
            reference=self._reference(),
            seed=int(self.args.seed) + step,
        )
        context = CreditContext(
            self.credit_config,
            step=step,
            policy=cast(Policy, scorer),  # the members rules call: score, generate, tokenizer, has_reference
            generator=torch.Generator().manual_seed(int(self.args.seed) + step),
        )
        result = self.credit_rule.compute(batch, context)
        advantages = torch.zeros(local, width, dtype=torch.float32)
        for row, (completion, start, end) in enumerate(places):
            if offset <= completion < offset + local:
                advantages[completion - offset, start:end] = result.advantages[row, : end - start].float()
        return CreditStep(batch, result, advantages, places, context)

    def _renderers(self, index: int) -> Renderers:
        tools = self._env_tools[self._batch_environments[index]] if self.environment_factories else self.tools

        def prompt(messages: list[dict[str, Any]]) -> list[int]:
            return self._template(messages, tools=tools or None)

        return Renderers(prompt=prompt, tool_results=lambda results: list(self._get_tool_suffix_ids(results)))

    def _render_user(self, text: str) -> list[int]:
        return self._template([{"role": "user", "content": text}], tools=None)

    def _template(self, messages: list[dict[str, Any]], *, tools: Any) -> list[int]:
        processor: Any = self.processing_class
        template_kwargs: Any = self.chat_template_kwargs
        ids: Any = processor.apply_chat_template(
            messages,
            tools=tools,
            chat_template=self.chat_template,
            add_generation_prompt=True,
            tokenize=True,
            return_dict=False,
            **template_kwargs,
        )
        if isinstance(ids, Mapping) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        if ids and isinstance(ids[0], list):
            ids = ids[0]
        return [int(token) for token in ids]

    def _reference(self) -> Callable[[], contextlib.AbstractContextManager[torch.nn.Module]] | None:
        model = self.accelerator.unwrap_model(self.model)
        if hasattr(model, "disable_adapter") and hasattr(model, "peft_config"):

            @contextlib.contextmanager
            def adapter_off() -> Iterator[torch.nn.Module]:
                with model.disable_adapter():
                    yield model

            return adapter_off
        if self.ref_model is not None:
            reference = self.accelerator.unwrap_model(self.ref_model)
            return lambda: contextlib.nullcontext(reference)
        return None


def credit_batch(
    episodes: list[Episode], group_size: int, *, pad_token_id: int
) -> tuple[RolloutBatch, list[tuple[int, int, int]]]:
    """The rule's batch from every completion's episode (completion ``i`` in group ``i // group_size``),
    and per row its ``(completion, start, end)``.

    Raises:
        ValueError: when the completions do not fill whole groups.
    """
    if group_size < 1 or len(episodes) % group_size:
        raise ValueError(f"{len(episodes)} completions do not make groups of {group_size}")
    rows: list[RolloutRow] = []
    places: list[tuple[int, int, int]] = []
    for completion, episode in enumerate(episodes):
        for turn_index, (row, turn) in enumerate(zip(episode.rows, episode.trajectory.turns, strict=True)):
            rows.append(
                RolloutRow(
                    row.prompt,
                    [],
                    list(row.response_ids),
                    [0.0] * len(row.response_ids),
                    row.action_span,
                    completion,
                    turn_index,
                    completion // group_size,
                    float(turn.reward),
                    bool(turn.valid),
                )
            )
            places.append((completion, row.start, row.end))
    trajectories = [episode.trajectory for episode in episodes]
    groups = [
        TrajectoryGroup(trajectories[start].task_id, start // group_size, trajectories[start : start + group_size])
        for start in range(0, len(trajectories), group_size)
    ]
    return RolloutBatch.from_groups(rows, groups, pad_token_id=pad_token_id), places
