"""Classic RL on the text envs: sb3-contrib's MaskablePPO and Tianshou 2's DQN vs a random policy.

Each env is wrapped in :class:`wrappers.DiscreteActions` (``Discrete(N)`` over the current
candidate actions, with the mask) and :class:`wrappers.TextFeatures` (hashed words of the
observation, the task and the episode's actions, and per-candidate features). Both
libraries train the same network shape, a DRRN-style candidate scorer (one MLP applied to
every candidate with the state; He et al., 2016): MaskablePPO reads its scores as logits
(``action_masks()`` masks them), Tianshou's DQN as Q-values (the ``"mask"`` observation
key masks them). Rewards are the envs' own.

MaskablePPO's settings are per env (:class:`PPOSettings`). WebShop keeps sb3's usual
recipe. On ALFWorld only a win pays, and about 1 random training episode in 20 wins, so
most minibatches hold no win: there the advantages are not normalized (normalizing blew
the critic's errors up into full-size steps in random directions, KL ~0.01 per update
before any win), the entropy bonus is 0.001 (it is weighed against raw advantages then),
the value has its own scorer (so the value loss does not train the logits) and the
rollouts are 64 steps per env (twice as many updates for the same env steps).

Then each trained policy and a uniformly random masked policy play the same held-out
tasks, one episode each, in two ways for the trained ones: ``greedy`` (the argmax:
``deterministic=True`` / epsilon 0) and ``sampled`` (the policy as it acts in training:
MaskablePPO samples its distribution, DQN is epsilon-greedy at its final epsilon 0.05).

- WebShop-v0: the generated 1,000-product shop, ``max_turns=10``; trained on
  ``split="train"`` (1,075 goals), held out ``split="test"`` (all 500 goals).
- ALFWorld-v0: generated ``pick_and_place_simple`` games, ``max_turns=50`` (ALFWorld's
  own evaluation length); trained on the 48-game pool of generator seed 0, held out the
  100-game pool of generator seed 1 (other scenes, objects and goals), both generated
  before training starts (not timed).

Training stops at its step budget or after ``--max-train-minutes`` of wall time, whichever
comes first (the steps done are reported). Results are printed and saved in ``--output``
(one JSON per finished run, so a rerun resumes where it stopped; ``--force`` trains
again; ``table.md`` has every saved result):

    .venv/bin/python benchmarks/classic_rl.py                       # both envs, both libraries
    .venv/bin/python benchmarks/classic_rl.py --envs webshop --libraries sb3
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from torch import nn

import agentenvs  # noqa: F401  (registers the envs)
from agentenvs.core.checks import check_bool, check_float, check_int
from wrappers import DiscreteActions, TextFeatures

RESULTS = Path(__file__).resolve().parent / "results" / "classic_rl"
INFO_KEYS = ("won", "action_valid", "turn")  # what Tianshou's buffer stores per step: fixed shapes only
FINAL_EPSILON = 0.05

Policy = Callable[[Any, np.ndarray, bool], int]
"""``(observation, mask, greedy) -> action index``."""


# -- the envs -----------------------------------------------------------------------------
@dataclass(frozen=True)
class PPOSettings:
    """MaskablePPO's settings for one env, under sb3's names (the rest are sb3's defaults)."""

    learning_rate: float = 1e-3
    n_steps: int = 128
    """Steps per env between two updates (the rollout is ``n_steps * num_envs`` steps)."""
    batch_size: int = 128
    n_epochs: int = 10
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    normalize_advantage: bool = True
    """Scale each minibatch's advantages to mean 0, std 1. With a sparse reward a minibatch
    with no win in it holds only the critic's errors, and scaling blows them up into a full
    step in a random direction: ALFWorld turns it off."""
    share_features_extractor: bool = True
    """One candidate scorer for the policy and the value (else each has its own). Shared,
    the value loss also trains the scorer whose scores are the logits (and the value head
    reads those scores): ALFWorld gives the value its own."""

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_float(owner, "learning_rate", self.learning_rate, minimum=0.0, min_inclusive=False)
        check_int(owner, "n_steps", self.n_steps, minimum=2)
        check_int(owner, "batch_size", self.batch_size, minimum=2)
        check_int(owner, "n_epochs", self.n_epochs, minimum=1)
        check_float(owner, "gae_lambda", self.gae_lambda, minimum=0.0, maximum=1.0)
        check_float(owner, "ent_coef", self.ent_coef, minimum=0.0)
        check_bool(owner, "normalize_advantage", self.normalize_advantage)
        check_bool(owner, "share_features_extractor", self.share_features_extractor)


@dataclass(frozen=True)
class EnvSetting:
    """One env of the benchmark: how to make its training and held-out envs, and the budgets."""

    env_id: str
    train_kwargs: dict[str, Any]
    test_kwargs: dict[str, Any]
    max_actions: int
    sb3_steps: int
    """Env steps of MaskablePPO training."""
    sb3: PPOSettings
    """MaskablePPO's settings on this env."""
    tianshou_steps: int
    """Env steps of DQN training."""
    num_envs: int
    """Envs stepped in lockstep during training (one process)."""
    gamma: float
    eval_episodes: int
    """Held-out tasks played, one episode each (the first of the held-out pool)."""


ALFWORLD_GAMES = {"task_types": ["pick_and_place_simple"], "max_turns": 50, "translation_cache_size": 64}
SETTINGS = {
    "webshop": EnvSetting(
        env_id="WebShop-v0",
        train_kwargs={"split": "train", "max_turns": 10},
        test_kwargs={"split": "test", "max_turns": 10},
        max_actions=24,
        sb3_steps=60_000,
        sb3=PPOSettings(),
        tianshou_steps=100_000,
        num_envs=8,
        gamma=0.95,
        eval_episodes=500,
    ),
    "alfworld": EnvSetting(
        env_id="ALFWorld-v0",
        train_kwargs={**ALFWORLD_GAMES, "generator_seed": 0, "num_generated_games": 48},
        test_kwargs={**ALFWORLD_GAMES, "generator_seed": 1, "num_generated_games": 100},
        max_actions=48,
        sb3_steps=30_000,
        sb3=PPOSettings(n_steps=64, ent_coef=0.001, normalize_advantage=False, share_features_extractor=False),
        tianshou_steps=30_000,
        num_envs=4,
        gamma=0.98,
        eval_episodes=100,
    ),
}


def make_env(setting: EnvSetting, split: str, mask_key: str = "action_mask") -> gym.Env[Any, Any]:
    """The wrapped env: candidate actions, hashed features, the mask under ``mask_key``."""
    kwargs = setting.train_kwargs if split == "train" else setting.test_kwargs
    env = DiscreteActions(gym.make(setting.env_id, **kwargs), max_actions=setting.max_actions)
    return TextFeatures(
        env,
        num_features=128,
        fields=("observation", "task", "history"),
        candidate_features=True,
        num_candidate_features=64,
        mask_key=mask_key,
        info_keys=INFO_KEYS,
    )


def pregenerate_alfworld(setting: EnvSetting) -> float:
    """Makes both ALFWorld pools before training; returns the seconds it took."""
    from agentenvs.alfworld.generator import GeneratedGames

    start = time.monotonic()
    for kwargs in (setting.train_kwargs, setting.test_kwargs):
        with GeneratedGames(
            seed=kwargs["generator_seed"], count=kwargs["num_generated_games"], task_types=kwargs["task_types"]
        ) as games:
            games.pregenerate(workers=1)
    return time.monotonic() - start


# -- the network both libraries train ------------------------------------------------------
class CandidateScorer(nn.Module):
    """score(s, c_i) = MLP([h_s, h_i, h_s * h_i]) with h_s = relu(W_s s), h_i = relu(W_c c_i).

    One set of weights scores every candidate, so what is learned about "take the object the
    task names" carries over to any slot, any game and any page.
    """

    def __init__(self, observation_dim: int, candidate_dim: int, hidden: int = 64) -> None:
        super().__init__()
        self.state = nn.Sequential(nn.Linear(observation_dim, hidden), nn.ReLU())
        self.candidate = nn.Sequential(nn.Linear(candidate_dim, hidden), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(3 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.hidden = hidden

    def forward(self, observation: torch.Tensor, candidates: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Scores ``[B, N]`` of candidates ``[B, N, C]`` in states ``[B, D]``, and the state code ``[B, H]``."""
        state = self.state(observation)
        each = self.candidate(candidates)
        state_each = state[:, None, :].expand_as(each)
        return self.head(torch.cat([state_each, each, state_each * each], dim=-1)).squeeze(-1), state


def dims(observation_space: spaces.Space[Any]) -> tuple[int, int, int]:
    """(observation dim, N, candidate dim) of a TextFeatures ``Dict`` space."""
    assert isinstance(observation_space, spaces.Dict)
    observation, candidates = observation_space["observation"], observation_space["candidates"]
    assert observation.shape is not None and candidates.shape is not None
    return observation.shape[0], candidates.shape[0], candidates.shape[1]


class TrainingProgress:
    """Success rate of the training episodes that ended, printed ten times per run; the wall-clock guard."""

    def __init__(self, name: str, steps: int, max_seconds: float) -> None:
        self.name, self.every, self.next = name, max(steps // 10, 1), max(steps // 10, 1)
        self.wins: list[bool] = []
        self.start = time.monotonic()
        self.deadline = self.start + max_seconds

    def episode(self, won: bool) -> None:
        self.wins.append(won)

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def report(self, steps_done: int) -> None:
        if steps_done < self.next:
            return
        self.next += self.every
        recent = self.wins[-200:]
        rate = f"{np.mean(recent):.3f}" if recent else "-"
        print(
            f"[{self.name}] {steps_done:,} steps, {(time.monotonic() - self.start) / 60:.1f} min: "
            f"training success {rate} (last {len(recent)} episodes)",
            flush=True,
        )


# -- sb3-contrib: MaskablePPO ---------------------------------------------------------------
def sb3_policy_kwargs() -> dict[str, Any]:
    """``policy_kwargs`` making MaskablePPO's logits the scorer's candidate scores."""
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    class ScorerFeatures(BaseFeaturesExtractor):
        """Features = [candidate scores (N), state code (H)]; the value head reads both."""

        def __init__(self, observation_space: spaces.Dict, hidden: int = 64) -> None:
            observation_dim, num_actions, candidate_dim = dims(observation_space)
            super().__init__(observation_space, features_dim=num_actions + hidden)
            self.scorer = CandidateScorer(observation_dim, candidate_dim, hidden)

        def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
            scores, state = self.scorer(observations["observation"], observations["candidates"])
            return torch.cat([scores, state], dim=-1)

    return {"features_extractor_class": ScorerFeatures, "net_arch": {"pi": [], "vf": [64]}}


class TakeScores(nn.Module):
    """The action head: the first N features are the logits (no extra layer mixing slots)."""

    def __init__(self, num_actions: int) -> None:
        super().__init__()
        self.num_actions = num_actions

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        return latent[:, : self.num_actions]


def sb3_policy_class() -> type:
    from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy

    class CandidateScoringPolicy(MaskableMultiInputActorCriticPolicy):
        def _build(self, lr_schedule: Callable[[float], float]) -> None:
            super()._build(lr_schedule)
            assert isinstance(self.action_space, spaces.Discrete)
            self.action_net = TakeScores(int(self.action_space.n))
            self.optimizer = self.optimizer_class(  # type: ignore[call-arg]
                self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
            )

    return CandidateScoringPolicy


def train_sb3(setting: EnvSetting, steps: int, seed: int, max_seconds: float) -> tuple[Policy, int]:
    """Trains MaskablePPO; returns its policy and the steps it trained."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: make_env(setting, "train") for _ in range(setting.num_envs)])
    venv.seed(seed)
    ppo = setting.sb3
    model = MaskablePPO(
        sb3_policy_class(),
        venv,
        learning_rate=ppo.learning_rate,
        n_steps=ppo.n_steps,
        batch_size=ppo.batch_size,
        n_epochs=ppo.n_epochs,
        gamma=setting.gamma,
        gae_lambda=ppo.gae_lambda,
        ent_coef=ppo.ent_coef,
        normalize_advantage=ppo.normalize_advantage,
        policy_kwargs={**sb3_policy_kwargs(), "share_features_extractor": ppo.share_features_extractor},
        seed=seed,
        device="cpu",
        verbose=0,
    )
    progress = TrainingProgress(f"{setting.env_id}/sb3", steps, max_seconds)

    class LogProgress(BaseCallback):
        def _on_step(self) -> bool:
            for done, info in zip(self.locals["dones"], self.locals["infos"], strict=True):
                if done:
                    progress.episode(bool(info["won"]))
            progress.report(self.num_timesteps)
            return not progress.out_of_time()

    model.learn(total_timesteps=steps, callback=LogProgress())
    venv.close()

    def act(observation: Any, mask: np.ndarray, greedy: bool) -> int:
        action, _ = model.predict(observation, action_masks=mask, deterministic=greedy)
        return int(action)

    return act, int(model.num_timesteps)


# -- Tianshou 2: DQN --------------------------------------------------------------------------
class TianshouScorer(nn.Module):
    """Tianshou's model signature ``(obs, state, info) -> (Q [B, N], state)`` over the scorer."""

    def __init__(self, observation_space: spaces.Space[Any], hidden: int = 64) -> None:
        super().__init__()
        observation_dim, _, candidate_dim = dims(observation_space)
        self.scorer = CandidateScorer(observation_dim, candidate_dim, hidden)

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[torch.Tensor, Any]:
        observation = torch.as_tensor(obs.observation, dtype=torch.float32)
        candidates = torch.as_tensor(obs.candidates, dtype=torch.float32)
        scores, _ = self.scorer(observation, candidates)
        return scores, state


def train_tianshou(setting: EnvSetting, steps: int, seed: int, max_seconds: float) -> tuple[Policy, int]:
    """Trains a double DQN (3-step returns); returns its policy and the steps it trained."""
    from tianshou.algorithm import DQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch, Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    venv = DummyVectorEnv([lambda: make_env(setting, "train", mask_key="mask") for _ in range(setting.num_envs)])
    venv.seed(seed)
    probe = make_env(setting, "train", mask_key="mask")
    policy = DiscreteQLearningPolicy(
        model=TianshouScorer(probe.observation_space),
        action_space=probe.action_space,
        observation_space=probe.observation_space,
        eps_training=1.0,
    )
    probe.close()
    algorithm = DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=5e-4),
        gamma=setting.gamma,
        n_step_return_horizon=3,
        target_update_freq=250,
    )
    buffer = VectorReplayBuffer(50_000, setting.num_envs)
    collector: Collector[CollectStats] = Collector(algorithm, venv, buffer, exploration_noise=True)
    collector.reset()
    per_collect, explore_until = 64, steps // 2
    progress = TrainingProgress(f"{setting.env_id}/tianshou", steps, max_seconds)
    done = 0
    while done < steps and not progress.out_of_time():
        # epsilon falls linearly from 1 to its final value over the first half, then stays
        policy.set_eps_training(max(FINAL_EPSILON, 1.0 - (1.0 - FINAL_EPSILON) * done / explore_until))
        with policy_within_training_step(policy), torch_train_mode(policy, False):
            stats = collector.collect(n_step=per_collect)
        done += stats.n_collected_steps
        for episode_return in stats.returns:
            progress.episode(bool(episode_return >= 1.0))  # both envs pay exactly 1.0 for a win
        progress.report(done)
        if len(buffer) >= 1_000:
            with policy_within_training_step(policy), torch_train_mode(policy):
                for _ in range(per_collect // 8):
                    algorithm.update(buffer=buffer, sample_size=64)
    venv.close()
    explore = np.random.default_rng(seed)

    def act(observation: Any, mask: np.ndarray, greedy: bool) -> int:
        if not greedy and explore.random() < FINAL_EPSILON and mask.any():
            return int(explore.choice(np.flatnonzero(mask)))
        obs = {"observation": observation["observation"], "candidates": observation["candidates"], "mask": mask}
        batch = Batch(obs=Batch({key: np.asarray(value)[None] for key, value in obs.items()}), info={})
        with torch.no_grad():
            return int(policy(batch).act[0])

    return act, done


TRAINERS = {"sb3": train_sb3, "tianshou": train_tianshou}
LIBRARY_NAMES = {"sb3": "sb3-contrib MaskablePPO", "tianshou": "Tianshou DQN"}


# -- evaluation -------------------------------------------------------------------------------
@dataclass
class Evaluation:
    """Held-out results of one policy played one way: success rate (``won``), mean return, length."""

    policy: str
    episodes: int
    success_rate: float
    mean_return: float
    mean_length: float
    invalid_rate: float
    seconds: float


@dataclass
class RunResult:
    """One run: its training (none for the random policy) and its held-out evaluations."""

    env_id: str
    train_steps: int = 0
    train_seconds: float = 0.0
    evaluations: list[Evaluation] = field(default_factory=list)
    task_ids: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, text: str) -> RunResult:
        data = json.loads(text)
        data["evaluations"] = [Evaluation(**e) for e in data["evaluations"]]
        return cls(**data)


def held_out_task_ids(setting: EnvSetting, episodes: int) -> list[str]:
    env = gym.make(setting.env_id, **setting.test_kwargs)
    task_ids = list(env.unwrapped.task_ids)[:episodes]  # type: ignore[attr-defined]
    env.close()
    return task_ids


def evaluate(setting: EnvSetting, act: Policy, task_ids: list[str], name: str, greedy: bool) -> Evaluation:
    """Plays one episode per held-out task with ``act`` (the mask is the env's ``action_masks()``)."""
    env = make_env(setting, "test")
    masks = env.get_wrapper_attr("action_masks")
    start = time.monotonic()
    wins, returns, lengths, invalid = [], [], [], 0
    for task_id in task_ids:
        observation, info = env.reset(seed=0, options={"task_id": task_id})
        total, length, finished = 0.0, 0, False
        while not finished:
            observation, reward, terminated, truncated, info = env.step(act(observation, masks(), greedy))
            total, length, finished = total + float(reward), length + 1, terminated or truncated
            invalid += not info["action_valid"]
        wins.append(bool(info["won"]))
        returns.append(total)
        lengths.append(length)
    env.close()
    return Evaluation(
        policy=name,
        episodes=len(task_ids),
        success_rate=float(np.mean(wins)),
        mean_return=float(np.mean(returns)),
        mean_length=float(np.mean(lengths)),
        invalid_rate=invalid / max(sum(lengths), 1),
        seconds=time.monotonic() - start,
    )


RANDOM_NAME = "uniform random (masked)"


def random_policy(seed: int) -> Policy:
    rng = np.random.default_rng(seed)

    def act(observation: Any, mask: np.ndarray, greedy: bool) -> int:
        return int(rng.choice(np.flatnonzero(mask))) if mask.any() else 0

    return act


# -- the run ----------------------------------------------------------------------------------
def saved(output: Path, key: str) -> RunResult | None:
    path = output / f"{key}.json"
    return RunResult.from_json(path.read_text()) if path.exists() else None


def run_one(output: Path, key: str, force: bool, compute: Callable[[], RunResult]) -> RunResult:
    """``compute()``, or the result a previous run saved under ``key``."""
    previous = None if force else saved(output, key)
    if previous is not None:
        print(f"[{key}] saved result reused ({key}.json; --force to rerun)")
        return previous
    result = compute()
    (output / f"{key}.json").write_text(json.dumps(asdict(result), indent=1))
    return result


def random_run(setting: EnvSetting, task_ids: list[str], seed: int) -> RunResult:
    evaluation = evaluate(setting, random_policy(seed), task_ids, RANDOM_NAME, greedy=False)
    return RunResult(setting.env_id, evaluations=[evaluation], task_ids=task_ids)


def train_and_evaluate(
    setting: EnvSetting, library: str, steps: int, task_ids: list[str], seed: int, max_seconds: float
) -> RunResult:
    torch.manual_seed(seed)
    np.random.seed(seed)  # Tianshou's epsilon-greedy draws from numpy's global generator
    start = time.monotonic()
    act, steps_done = TRAINERS[library](setting, steps, seed, max_seconds)
    seconds = time.monotonic() - start
    print(f"[{setting.env_id}/{library}] trained {steps_done:,} steps in {seconds / 60:.1f} min", flush=True)
    evaluations = [
        evaluate(setting, act, task_ids, f"{LIBRARY_NAMES[library]}, {mode}", greedy=mode == "greedy")
        for mode in ("greedy", "sampled")
    ]
    return RunResult(setting.env_id, steps_done, seconds, evaluations, task_ids)


def run_env(env_name: str, args: argparse.Namespace) -> None:
    """The random baseline and each library's trained policy on one env (saved results reused)."""
    setting = SETTINGS[env_name]
    if env_name == "alfworld":
        print(f"[alfworld] pools pre-generated in {pregenerate_alfworld(setting):.0f} s (not timed below)")
    task_ids = held_out_task_ids(setting, args.eval_episodes or setting.eval_episodes)
    runs = [run_one(args.output, f"{env_name}_random", args.force, partial(random_run, setting, task_ids, args.seed))]
    for library in args.libraries:
        steps = int(getattr(setting, f"{library}_steps") * args.steps_scale)
        train = partial(train_and_evaluate, setting, library, steps, task_ids, args.seed, args.max_train_minutes * 60)
        runs.append(run_one(args.output, f"{env_name}_{library}", args.force, train))
    for run in runs:
        for e in run.evaluations:
            print(
                f"[{env_name}] {e.policy:34s} success {e.success_rate:.3f}  return {e.mean_return:.3f}  "
                f"length {e.mean_length:.1f}  ({e.episodes} held-out episodes)"
            )


def table(output: Path) -> str:
    """Every result saved in ``output``, as a markdown table."""
    lines = [
        "| env | policy | held-out episodes | success | mean return | mean length | invalid actions | "
        "train steps | train wall time |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for env_name, setting in SETTINGS.items():
        for library in ("random", *TRAINERS):
            run = saved(output, f"{env_name}_{library}")
            if run is None:
                continue
            train = f"{run.train_steps:,}" if run.train_steps else "-"
            wall = f"{run.train_seconds / 60:.1f} min" if run.train_seconds else "-"
            for e in run.evaluations:
                lines.append(
                    f"| {setting.env_id} | {e.policy} | {e.episodes} | {e.success_rate:.3f} | "
                    f"{e.mean_return:.3f} | {e.mean_length:.1f} | {e.invalid_rate:.3f} | {train} | {wall} |"
                )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", nargs="+", choices=sorted(SETTINGS), default=["webshop", "alfworld"])
    parser.add_argument("--libraries", nargs="+", choices=sorted(TRAINERS), default=["sb3", "tianshou"])
    parser.add_argument("--eval-episodes", type=int, default=0, help="held-out tasks per env (0: the env's default)")
    parser.add_argument("--steps-scale", type=float, default=1.0, help="multiplies every training budget")
    parser.add_argument("--max-train-minutes", type=float, default=9.5, help="wall-clock cap of one training")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the envs step in this process)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--force", action="store_true", help="rerun runs whose results are saved")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    args.output.mkdir(parents=True, exist_ok=True)
    for env_name in args.envs:
        run_env(env_name, args)
    summary = table(args.output)
    (args.output / "table.md").write_text(summary)
    print(summary)


if __name__ == "__main__":
    main()
