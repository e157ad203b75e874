"""Hiding what an env knows from whoever steps it: ``info["privileged"]`` and its kin.

An agentenvs env made with ``privileged=True`` reports privileged information (gold answers,
the target product, the expert plan; :mod:`agentenvs.core.privileged`) under
``info["privileged"]``, and some name a little of it in other top-level keys (the env class's
``privileged_info_keys``, e.g. ALFWorld's ``expert_action`` and ``game_file``); without it
(the default) infos hold neither. :class:`StripPrivileged` removes both from the infos of
reset and step of an env that has them: for evaluation, or before an env whose privileged
infos the trainer reads goes to code that must not read them.

It hides infos only. Code holding the wrapper object can still reach the env itself
(``env.unwrapped.current_question``, ``env.unwrapped.goal``); untrusted code should get the
wrapped env behind a process boundary (an ``AsyncVectorEnv``, a server), never the object.

Example:
    >>> import gymnasium as gym, agentenvs
    >>> env = StripPrivileged(gym.make("SearchQA-v0", privileged=True))
    >>> _, info = env.reset(seed=0)
    >>> "privileged" in info, "task" in info
    (False, True)
    >>> _, _, _, _, info = env.step("<answer>nobody</answer>")
    >>> "privileged" in info or "gold_answers" in info
    False
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agentenvs.core.privileged import privileged_keys, strip_privileged


class StripPrivileged(gym.Wrapper[str, str, str, str]):
    """Removes ``info["privileged"]`` and the env's ``privileged_info_keys`` from every info.

    Args:
        env: Any env; an agentenvs env also names its other privileged keys.

    Attributes:
        stripped_keys: The info keys this wrapper removes.
    """

    def __init__(self, env: gym.Env[str, str]) -> None:
        super().__init__(env)
        self.stripped_keys: frozenset[str] = privileged_keys(env)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        return observation, strip_privileged(info, self.stripped_keys)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, float(reward), terminated, truncated, strip_privileged(info, self.stripped_keys)
