"""Per-env agent recipes: the settings that train on 2 CPU cores in minutes (the quick start's).

``GRPOConfig``'s own defaults are generic (4 x 4 rollouts of up to 128 tokens a turn, the
env's own turn limit, a long preamble); on WebShop-v0 with SmolLM2-135M they spent ~5 min
collecting one step. A recipe holds what the quick start measured to work there:

- ``WebShop-v0``: goals with at most one option (the expert needs 4 turns; 5 allowed), 5
  results a page, the compact page rendering, the admissible actions listed, no system
  prompt or preamble, past turns' actions only, 32 new tokens a turn; LoRA on the top 4
  layers at lr 1e-3, micro-batches of 4 turns; RL: 4 goals x 4 rollouts sampled at
  temperature 0.6, two optimizer steps per batch; SFT: 32 expert episodes with broken
  actions injected (10 %) and 128 further expert option turns, 3 epochs, the bare model not
  evaluated before cloning.
- ``ALFWorld-v0``: the same on generated ``pick_and_place_simple`` games, 8 turns, 16 tokens,
  rollouts sampled at temperature 1.0 (0.6 not measured there).
- ``SearchQA-v0``: the one-turn run (the retrieved passage shown with the question,
  ``reward="f1"``, responses start with ``<answer>``); RL only.
- ``Umbrella-v0``: the credit lab's 4-turn Umbrella (benchmarks/credit_lab.py, the ``long``
  study): the admissible items listed, no history, 6 new tokens a turn; LoRA on the top 8 layers
  at lr 1e-3; SFT: 96 episodes of the uniform demonstrator, 2 epochs; RL: 4 tasks x 4 rollouts at
  temperature 1.0, four optimiser passes a batch.

:meth:`agents.GRPOConfig.for_env` and :meth:`agents.sft.SFTConfig.for_env` build a config from
these (keyword overrides win); :mod:`agents.cli.quickstart`'s presets are the same recipes.
The values are plain data, so this module imports no settings class.

Example:
    >>> rl_settings("WebShop-v0")["max_new_tokens"], rl_settings("WebShop-v0")["num_groups"]
    (32, 4)
    >>> rl_settings("CartPole-v1")
    Traceback (most recent call last):
    ...
    ValueError: no agent recipe for env 'CartPole-v1'; recipes: ALFWorld-v0, SearchQA-v0, Umbrella-v0, WebShop-v0 (build the config field by field instead)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = ["RECIPES", "SMOKE", "Recipe", "rl_settings", "sft_settings", "smoke_settings"]


@dataclass(frozen=True)
class Recipe:
    """One env's settings, by stage.

    Attributes:
        both: Prompt, env, optimiser, LoRA and evaluation settings of both stages (SFT and RL
            must prompt alike).
        rl: The RL stage's own settings (collection, update, logging).
        sft: The SFT stage's own settings (None: no warm start for this env).
    """

    both: Mapping[str, Any]
    rl: Mapping[str, Any]
    sft: Mapping[str, Any] | None = None


def _frozen(**settings: Any) -> Mapping[str, Any]:
    return MappingProxyType(settings)


def _warm_start_then_grpo(
    *,
    max_turns: int,
    max_new_tokens: int,
    env_kwargs: dict[str, Any],
    eval_env_kwargs: dict[str, Any] | None = None,
    temperature: float = 1.0,
    extra_expert_turns: dict[str, int] | None = None,
) -> Recipe:
    """The multi-turn recipe: a short prompt, LoRA on the top layers, an expert warm start, then GRPO."""
    return Recipe(
        both=_frozen(
            history_length=3,
            history_observations=False,
            prompt_preamble="",
            system_prompt="",
            max_turns=max_turns,
            env_kwargs=env_kwargs,
            learning_rate=1e-3,  # the recipe's own optimiser and seed, not GRPOConfig's TRL defaults
            lr_scheduler_type="constant",
            seed=0,
            # No prompt-lookup drafts: measured in one sitting they made the warm start's greedy evaluation
            # 0.89x, the base model's 1.25x (its drafts are rejected) and an RL step 1.04x the time
            # (benchmarks/decode_levers.py, benchmarks/multiturn_step.py): no gain end to end.
            prompt_lookup_num_tokens=0,
            lora=True,
            lora_top_layers=4,
            # The 26 frozen layers in bf16 where the CPU multiplies bf16 natively (AMX / AVX-512 BF16),
            # float32 elsewhere (emulated bf16 is slower): agents.policy.trunk_precision.
            trunk_dtype="auto",
            # Micro-batches of 4 (length-sorted) pad less than 8 when turn-1 prompts (~90 tokens) share a batch
            # with results pages (~365): the same gradients (summed), measured in one sitting on an AMD EPYC
            # without bf16 units: an SFT epoch 36-37 s -> 27-30 s, an RL update of one collected batch
            # 10.0-10.2 s -> 7.8-7.9 s (2 was no faster, 1 slower: 35 s an epoch).
            micro_batch_size=4,
            eval_episodes=32,
            eval_env_kwargs=eval_env_kwargs or {},
            max_new_tokens=max_new_tokens,
        ),
        rl=_frozen(
            num_groups=4,
            group_size=4,
            temperature=temperature,
            mini_batches=2,
            invalid_action_penalty=0.1,
            eval_every=0,
            save_every=1,
        ),
        sft=_frozen(
            expert_episodes=32,
            invalid_action_rate=0.1,
            epochs=3,
            batch_size=8,
            extra_expert_turns=extra_expert_turns or {},
        ),
    )


RECIPES: Mapping[str, Recipe] = MappingProxyType(
    {
        "WebShop-v0": _warm_start_then_grpo(
            max_turns=5,
            max_new_tokens=32,
            env_kwargs={
                "results_per_page": 5,
                "observation_mode": "text_compact",
                "max_goal_options": 1,
                "expert_query": "product",
            },
            # The report set: the recipe was tuned on the test split's one-option goals (104), so its
            # figures are measured on the eval split's (239), which no recipe choice has looked at.
            eval_env_kwargs={"split": "eval"},
            # Rollouts sampled at 0.6: at 1.0 the sampled episodes won far less often than the greedy policy
            # they train (no win in 64 recorded ones), so GRPO had no win to reinforce. Tuning set, two RL
            # seeds: success 0.231 / 0.115 at 0.6 against 0.115 / 0.106 at 1.0 (docs/multiturn-training.md).
            temperature=0.6,
            # 128 further expert option turns in the warm start: it learns to choose an option, which RL
            # alone unlearns (it buys without one). Report set, 3 seeds, warm start then 8 GRPO steps: success
            # after RL 0.297 / 0.328 / 0.375 against 0.117 / 0.102 / 0.062 without (paired +0.240 +- 0.167,
            # benchmarks/results/main_job_option_turns); 512 teach the value too but buy less and cost minutes.
            extra_expert_turns={"option": 128},
        ),
        "ALFWorld-v0": _warm_start_then_grpo(
            max_turns=8, max_new_tokens=16, env_kwargs={"task_types": "pick_and_place_simple"}
        ),
        "SearchQA-v0": Recipe(
            both=_frozen(
                history_length=1,
                show_format=False,
                prompt_preamble="",
                response_prefix="<answer>",
                system_prompt="Answer the question with a name from the documents.",
                env_kwargs={
                    "max_turns": 1,
                    "top_k": 1,
                    "max_passage_chars": 160,
                    "question_kinds": "1hop",
                    "initial_search": True,
                    "reward": "f1",
                },
                learning_rate=8e-4,
                lr_scheduler_type="constant",
                seed=0,
                lora=True,
                lora_rank=16,
                lora_alpha=32,
                lora_top_layers=6,
                micro_batch_size=8,
                eval_episodes=32,
                max_new_tokens=24,
            ),
            rl=_frozen(
                num_groups=4,
                group_size=4,
                temperature=0.7,
                invalid_action_penalty=0.2,
                loss_type="dapo",
                eval_every=12,
                save_every=12,
            ),
        ),
        "Umbrella-v0": Recipe(
            both=_frozen(
                history_length=0,  # every diagnostic env is Markov in its observation and task line
                prompt_preamble="",
                system_prompt="",
                show_admissible=True,
                # The uniform demonstrator plays a random admissible item each turn: the warm start learns
                # the action format and the menus, not which item wins (its success is chance, 1/3).
                env_kwargs={"length": 4, "demonstrator": "uniform"},
                eval_env_kwargs={"split": "eval"},
                learning_rate=1e-3,
                lr_scheduler_type="constant",
                seed=0,
                lora=True,
                lora_top_layers=8,
                trunk_dtype="auto",
                micro_batch_size=16,
                eval_episodes=32,
                max_new_tokens=6,
            ),
            # Four optimiser passes over each batch: at one pass GRPO learned not even the one-turn
            # Umbrella in the lab's budget (benchmarks/results/credit_lab/results.md, calibration).
            rl=_frozen(num_groups=4, group_size=4, num_iterations=4, temperature=1.0, eval_every=8, save_every=8),
            sft=_frozen(expert_episodes=96, epochs=2, batch_size=16),
        ),
    }
)
"""The recipes by env id (see the module docstring)."""


def _recipe(env_id: str) -> Recipe:
    if env_id not in RECIPES:
        raise ValueError(
            f"no agent recipe for env {env_id!r}; recipes: {', '.join(sorted(RECIPES))} "
            "(build the config field by field instead)"
        )
    return RECIPES[env_id]


def _copy(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A fresh dict (and fresh inner dicts), so a config never shares a mutable value with the recipe."""
    return {name: dict(value) if isinstance(value, dict) else value for name, value in settings.items()}


def rl_settings(env_id: str) -> dict[str, Any]:
    """The RL stage's settings of ``env_id``'s recipe, as ``GRPOConfig`` keyword arguments.

    Raises:
        ValueError: naming an env without a recipe.
    """
    recipe = _recipe(env_id)
    return _copy({**recipe.both, **recipe.rl})


def sft_settings(env_id: str) -> dict[str, Any]:
    """The SFT stage's settings of ``env_id``'s recipe, as ``SFTConfig`` keyword arguments.

    Raises:
        ValueError: naming an env without a recipe or whose recipe has no warm start.
    """
    recipe = _recipe(env_id)
    if recipe.sft is None:
        with_sft = sorted(name for name, other in RECIPES.items() if other.sft is not None)
        raise ValueError(f"the recipe for {env_id!r} has no warm start (SFT recipes: {', '.join(with_sft)})")
    return _copy({**recipe.both, **recipe.sft})


SMOKE: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {
        "rl": _frozen(
            num_groups=2,
            group_size=2,
            max_turns=2,
            max_new_tokens=8,
            eval_episodes=2,
            eval_every=0,
            save_every=0,
            record_groups=1,
        ),
        "sft": _frozen(
            expert_episodes=2, extra_expert_turns={}, epochs=1, max_turns=2, max_new_tokens=8, eval_episodes=2
        ),
    }
)
"""A smoke run's budget by stage: seconds with the tiny model, through every stage (evaluation,
collection, credit, update, checkpoint; or demonstrations, cloning, evaluation, saving), to check a
set-up before a real run. It learns nothing. Applied over a recipe or the generic defaults (the
CLI's ``--smoke``)."""


def smoke_settings(stage: str) -> dict[str, Any]:
    """A smoke run's settings of ``stage`` (``"rl"`` or ``"sft"``), as config keyword arguments.

    >>> smoke_settings("rl")["num_groups"], smoke_settings("sft")["expert_episodes"]
    (2, 2)

    Raises:
        ValueError: naming another stage.
    """
    if stage not in SMOKE:
        raise ValueError(f"no smoke settings for stage {stage!r}; stages: {', '.join(SMOKE)}")
    return _copy(SMOKE[stage])
