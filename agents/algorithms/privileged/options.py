"""The options ORSD and TASPO share, and how a rule's options come from ``config.credit_options``.

:class:`PrivilegedOptions` holds the fields both rules take (where PI goes, the endpoint,
scoring shortcuts, logging, the env-PI extension) and checks them once; ``ORSDOptions`` and ``TASPOOptions``
extend it with their own fields.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Knobs:
    ...     size: int = 2
    >>> options_from_dict(Knobs, {"size": 3}, "demo").size
    3
    >>> options_from_dict(Knobs, {"sise": 3}, "demo")
    Traceback (most recent call last):
    ...
    ValueError: unknown demo credit option(s) ['sise']; known: ['size']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from agentenvs.core.trajectory import Trajectory, TrajectoryGroup
from agents.algorithms.privileged.endpoints import CompleteFn, OpenAIChatClient
from agents.algorithms.privileged.environment import DEFAULT_ENV_PI_KEYS, ENV_PI_MODES
from agents.algorithms.privileged.shift import PLACEMENTS
from agents.policy.protocol import Policy

T = TypeVar("T")


def options_from_dict(cls: type[T], values: Mapping[str, Any] | None, rule: str) -> T:
    """``cls(**values)`` after checking every key is a field of ``cls``."""
    known = [field.name for field in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = sorted(set(values or {}) - set(known))
    if unknown:
        raise ValueError(f"unknown {rule} credit option(s) {unknown}; known: {sorted(known)}")
    return cls(**dict(values or {}))


def check(owner: str, name: str, ok: bool, requirement: str, value: Any) -> None:
    """Raises ``ValueError('{owner}.{name} must be {requirement}, got {value!r}')`` unless ``ok``."""
    if not ok:
        raise ValueError(f"{owner}.{name} must be {requirement}, got {value!r}")


def is_count(value: Any, minimum: int) -> bool:
    """Whether ``value`` is an int (not a bool) of at least ``minimum``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


@dataclass(frozen=True)
class PrivilegedOptions:
    """Fields ORSD and TASPO share; subclasses add theirs and call ``super().__post_init__()``."""

    endpoint_url: str = ""
    """OpenAI-compatible API root, where a component of the rule is ``endpoint``."""
    endpoint_model: str = ""
    """Model name served at ``endpoint_url``."""
    endpoint_api_key_env: str = "OPENAI_API_KEY"
    """Environment variable with the endpoint's API key (optional)."""
    placement: str = "prompt_end"
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
    lm_max_new_tokens: int = 192
    """Token limit when the policy writes rubric bundles / guidance (its stop strings are off)."""
    log_examples: int = 2
    """Readable examples (selected rubrics, turn PI) kept per step for people to read."""
    env_pi: str = "none"
    """**Extension of the papers** (the on-policy self-distillation setting, OPID/SDAR): PI from the
    env's ``info["privileged"]`` (:mod:`~agents.algorithms.privileged.environment`). ``none`` (the
    papers' behaviour: PI only from the group's trajectories), ``replace`` (the env's PI only) or
    ``add`` (the group's PI, then the env's; the env's alone where the group gives none)."""
    env_pi_keys: tuple[str, ...] = DEFAULT_ENV_PI_KEYS
    """Which ``info["privileged"]`` entries the env PI shows, in order (a comma-separated string
    works too, as the command line passes it)."""
    env_pi_max_chars: int = 1500
    """Longest env PI text per turn, in characters."""
    success_score: float | None = None
    """**Extension of the papers**: which trajectories count as successful (TASPO's PI sources,
    the winning side of ORSD's contrast and of its bundle alignment). None (the papers' rule): the
    env's ``won``. A number: also every trajectory whose score reaches it, for envs with partial
    scores (WebShop's attribute/option/price match) where a small policy rarely wins outright, so
    that with ``won`` alone nearly every group has a uniform outcome and neither rule acts."""

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

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check(owner, "placement", self.placement in PLACEMENTS, f"one of {PLACEMENTS}", self.placement)
        for name in ("rescore_without_pi", "reuse_prompt_cache"):
            check(owner, name, isinstance(getattr(self, name), bool), "True or False", getattr(self, name))
        check(
            owner, "lm_max_new_tokens", is_count(self.lm_max_new_tokens, 1), "an integer >= 1", self.lm_max_new_tokens
        )
        check(owner, "log_examples", is_count(self.log_examples, 0), "an integer >= 0", self.log_examples)
        check(owner, "env_pi", self.env_pi in ENV_PI_MODES, f"one of {ENV_PI_MODES}", self.env_pi)
        keys = self.env_pi_keys
        keys = tuple(key.strip() for key in keys.split(",")) if isinstance(keys, str) else tuple(keys)
        check(
            owner,
            "env_pi_keys",
            bool(keys) and all(isinstance(key, str) and key for key in keys),
            "a non-empty list of info['privileged'] keys",
            self.env_pi_keys,
        )
        object.__setattr__(self, "env_pi_keys", keys)
        check(owner, "env_pi_max_chars", is_count(self.env_pi_max_chars, 1), "an integer >= 1", self.env_pi_max_chars)
        score = self.success_score
        check(
            owner,
            "success_score",
            score is None or (isinstance(score, (int, float)) and not isinstance(score, bool)),
            "None or a number",
            score,
        )
        users = self.endpoint_users
        if users:
            try:
                self.endpoint()  # the client checks its URL and model name
            except ValueError as error:
                raise ValueError(
                    f"{owner}.endpoint_url / endpoint_model are needed when {' and '.join(users)} is 'endpoint': "
                    f"{error}"
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
