"""The options ORSD and TASPO share.

:class:`PrivilegedOptions` holds the fields both rules take (where PI goes, the endpoint,
scoring shortcuts, logging, the env-PI extension); ``ORSDOptions`` and ``TASPOOptions``
extend it with their own fields. Every field is checked once, from its annotation
(:class:`~agentenvs.core.checks.Checked`), when ``GRPOConfig`` is built.

Example:
    >>> PrivilegedOptions(env_pi_keys="goal, expert_plan").env_pi_keys
    ('goal', 'expert_plan')
    >>> PrivilegedOptions(placement="middle")
    Traceback (most recent call last):
    ...
    ValueError: PrivilegedOptions.placement must be one of 'after_task', 'prompt_start', 'prompt_end', got 'middle'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from agentenvs.core.checks import Bounds, Checked
from agentenvs.core.trajectory import Trajectory, TrajectoryGroup
from agents.algorithms.base import options_from_dict
from agents.algorithms.privileged.endpoints import CompleteFn, OpenAIChatClient
from agents.algorithms.privileged.environment import DEFAULT_ENV_PI_KEYS, EnvPIMode
from agents.algorithms.privileged.shift import Placement
from agents.policy.protocol import Policy

__all__ = ["PrivilegedOptions", "answer_ids", "options_from_dict", "policy_complete"]


@dataclass(frozen=True)
class PrivilegedOptions(Checked):
    """Fields ORSD and TASPO share; subclasses add theirs (and extend ``check_relations``)."""

    endpoint_url: str = ""
    """OpenAI-compatible API root, where a component of the rule is ``endpoint``."""
    endpoint_model: str = ""
    """Model name served at ``endpoint_url``."""
    endpoint_api_key_env: str = "OPENAI_API_KEY"
    """Environment variable with the endpoint's API key (optional)."""
    placement: Placement = "prompt_end"
    """Where the PI goes in the prompt: prompt_end (after the observation and the admissible actions,
    right before the response), after_task (after the task line) or prompt_start."""
    rescore_without_pi: bool = False
    """Score the no-PI term again instead of reusing the rollout log-probs (equal while unchanged)."""
    reuse_prompt_cache: bool = True
    """Keep the rollout's prompt KV and score the PI pass on top of it, recomputing only the tokens
    from the PI on (with ``placement="prompt_end"``: the PI, the chat turn's end and the response).
    Exact (credit runs before the update, with the rollout's weights); it costs the prompts' KV in
    memory until credit is done (~46 KB a prompt token for SmolLM2-135M in float32). Where no KV was
    kept (rollout workers in other processes, a policy without the store) the pass computes everything.
    These two defaults are the fast path: with the quick start's top-layer LoRA the update itself runs
    only the top layers on cached trunk states, so a full-depth PI pass over the whole prompt would
    cost more than the update (WebShop quick start, one batch: ORSD's credit 36.6 s -> 7.2 s)."""
    lm_max_new_tokens: Annotated[int, Bounds(1)] = 192
    """Token limit when the policy writes rubric bundles / guidance (its stop strings are off)."""
    log_examples: Annotated[int, Bounds(0)] = 2
    """Readable examples (selected rubrics, turn PI) kept per step for people to read."""
    env_pi: EnvPIMode = "none"
    """**Extension of the papers** (the on-policy self-distillation setting, OPID/SDAR): PI from the
    env's ``info["privileged"]`` (:mod:`~agents.algorithms.privileged.environment`). ``none`` (the
    papers' behaviour: PI only from the group's trajectories), ``replace`` (the env's PI only) or
    ``add`` (the group's PI, then the env's; the env's alone where the group gives none)."""
    env_pi_keys: tuple[str, ...] = DEFAULT_ENV_PI_KEYS
    """Which ``info["privileged"]`` entries the env PI shows, in order (a comma-separated string
    works too, as the command line passes it)."""
    env_pi_max_chars: Annotated[int, Bounds(1)] = 1500
    """Longest env PI text per turn, in characters."""
    success_score: float | None = None
    """**Extension of the papers**: which trajectories count as successful (TASPO's PI sources,
    the winning side of ORSD's contrast and of its bundle alignment). None (the papers' rule): the
    env's ``won``. A number: also every trajectory whose score reaches it, for envs with partial
    scores (WebShop's attribute/option/price match) where a small policy rarely wins outright, so
    that with ``won`` alone nearly every group has a uniform outcome and neither rule acts."""

    def __post_init__(self) -> None:
        if isinstance(self.env_pi_keys, str):  # the command line's "goal,expert_plan"
            object.__setattr__(self, "env_pi_keys", tuple(key.strip() for key in self.env_pi_keys.split(",")))
        super().__post_init__()

    @property
    def endpoint_users(self) -> tuple[str, ...]:
        """The option fields set to ``"endpoint"`` (overridden by each rule's options)."""
        return ()

    def succeeded(self, trajectory: Trajectory) -> bool:
        """Whether ``trajectory`` counts as successful (see ``success_score``)."""
        return bool(trajectory.success) or (self.success_score is not None and trajectory.score >= self.success_score)

    def labelled(self, group: TrajectoryGroup) -> TrajectoryGroup:
        """``group`` with each trajectory's ``success`` set by :meth:`succeeded` (itself when unchanged)."""
        if self.success_score is None:
            return group
        relabelled = [dataclasses.replace(t, success=self.succeeded(t)) for t in group.trajectories]
        return dataclasses.replace(group, trajectories=relabelled)

    def endpoint(self) -> OpenAIChatClient:
        """The chat client of ``endpoint_url`` / ``endpoint_model``."""
        return OpenAIChatClient(self.endpoint_url, self.endpoint_model, api_key_env=self.endpoint_api_key_env)

    def check_relations(self) -> None:
        super().check_relations()
        users = self.endpoint_users
        if users:
            try:
                self.endpoint()  # the client checks its URL and model name
            except ValueError as error:
                raise ValueError(
                    f"{type(self).__name__}.endpoint_url / endpoint_model are needed when {' and '.join(users)} "
                    f"is 'endpoint': {error}"
                ) from None


def policy_complete(policy: Policy, *, greedy: bool = False, max_new_tokens: int | None = None) -> CompleteFn:
    """A ``complete`` function from a policy's ``generate`` (sampling unless ``greedy``).

    The policy's action stop strings are switched off (a rubric or guidance list must not end
    at the first ``</action>``) and ``max_new_tokens`` overrides its per-turn limit.
    """

    def complete(prompts: Sequence[str]) -> list[str]:
        generations = policy.generate(list(prompts), greedy=greedy, max_new_tokens=max_new_tokens, stop=())
        return [generation.text for generation in generations]

    return complete


def answer_ids(policy: Policy, word: str) -> list[int]:
    """Token ids of ``word`` as the start of a response (no special tokens)."""
    return list(policy.tokenizer.encode(word, add_special_tokens=False))
