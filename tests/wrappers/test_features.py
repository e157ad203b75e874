import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import agentenvs  # noqa: F401
from wrappers.discrete import DiscreteActions
from wrappers.features import CROSS_FEATURES, TextFeatures, candidate_contexts

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*different from the unwrapped version"),
    pytest.mark.filterwarnings("ignore:.*unconventional shape"),  # SB3 on the (N, d) candidates: we mean it
]
HASHED = 8  # num_candidate_features: the hashed columns come first
CROSS = {name: HASHED + i for i, name in enumerate(CROSS_FEATURES)}


def _shop():
    return DiscreteActions(gym.make("WebShop-v0", num_products=100, split="all", max_turns=6), max_actions=16)


def _featured(**kwargs):
    return TextFeatures(_shop(), num_features=32, num_candidate_features=HASHED, **kwargs)


def test_box_observation_hashes_observation_and_task():
    env = _featured()
    assert env.observation_space == gym.spaces.Box(0.0, 1.0, (64,), np.float32)
    observation, info = env.reset(seed=0)
    assert observation.dtype == np.float32 and observation in env.observation_space
    assert np.allclose(np.linalg.norm(observation[:32]), 1) and np.allclose(np.linalg.norm(observation[32:]), 1)
    again, _ = env.reset(seed=0)
    assert np.array_equal(observation, again)
    assert info["candidate_features"].shape == (16, 8 + len(CROSS_FEATURES))  # there for scoring agents either way


def test_dict_observation_has_candidates_and_the_mask():
    env = _featured(candidate_features=True)
    observation, info = env.reset(seed=0)
    assert set(observation) == {"observation", "candidates", "action_mask"} and observation in env.observation_space
    rows = observation["candidates"]
    assert np.array_equal(observation["action_mask"], info["action_mask"])
    assert rows[:6, CROSS["present"]].tolist() == [1] * 6 and not rows[6:].any()  # empty rows are zeros
    assert rows[0, CROSS["task_coverage"]] == 1.0  # search[<the instruction>] covers the whole task
    assert rows[0, CROSS["task_overlap"]] == 1.0 and rows[1, CROSS["task_overlap"]] == 1.0  # "green tea"
    assert rows[1, CROSS["position"]] == pytest.approx(1 / 16)
    observation, _, _, _, info = env.step(0)
    rows = observation["candidates"]
    assert info["candidate_actions"][2] == "click[B0M5YHDCJT]"
    assert rows[2, CROSS["context_task_overlap"]] > 0.3  # its title names green tea
    assert rows[0, CROSS["context_task_overlap"]] == 0.0  # Back to Search: no title after it
    observation, _, _, _, info = env.step(0)  # back to the search page
    search_again = observation["candidates"][0]
    assert search_again[CROSS["times_taken"]] == pytest.approx(1 / 3) and search_again[CROSS["is_last_action"]] == 0


def test_candidate_context_is_the_page_text_after_the_argument_up_to_the_next():
    page = "Instruction: [SEP] red cap [SEP] Back to Search [SEP] B1 [SEP] Red Cap [SEP] $3 [SEP] B2 [SEP] Hat [SEP] $4"
    contexts = candidate_contexts(["click[Back to Search]", "click[B1]", "click[B2]", "click[B3]"], page, "red cap", 40)
    assert contexts == ["[SEP]", "[SEP] Red Cap [SEP] $3 [SEP]", "[SEP] Hat [SEP] $4", ""]
    assert candidate_contexts(["click[B2]"], page, "red cap", 8) == ["[SEP] H"]  # at most max_chars


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="candidate_features=True needs a Discrete"):
        TextFeatures(gym.make("SearchQA-v0"), candidate_features=True)
    with pytest.raises(ValueError, match="fields"):
        TextFeatures(gym.make("SearchQA-v0"), fields=("observation", "page"))
    with pytest.raises(TypeError, match="num_features"):
        TextFeatures(gym.make("SearchQA-v0"), num_features="8")
    with pytest.raises(ValueError, match="mask_key"):
        TextFeatures(_shop(), mask_key="candidates")
    with pytest.raises(TypeError, match="info_keys"):
        TextFeatures(_shop(), info_keys="won")


def test_history_field_remembers_the_episodes_actions():
    env = TextFeatures(_shop(), num_features=32, fields=("history", "action"))
    observation, _ = env.reset(seed=0)
    assert not observation.any()  # nothing done yet
    first, _, _, _, _ = env.step(1)  # search[green tea]
    second, _, _, _, _ = env.step(0)  # click[Back to Search]
    assert np.array_equal(first[:32], first[32:])  # one action so far: history == last action
    assert not np.array_equal(second[:32], second[32:]) and np.array_equal(second[:32] > 0, (first + second)[:32] > 0)
    observation, _ = env.reset(seed=0)
    assert not observation.any()  # forgotten on reset


def test_info_keys_keep_a_fixed_set():
    env = _featured(info_keys=("won", "turn", "score"))
    _, info = env.reset(seed=0)
    assert info == {"won": False, "turn": 0, "score": 0}


def test_gymnasium_and_sb3_env_checkers_pass():
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    for candidate_features in (False, True):
        check_env(_featured(candidate_features=candidate_features), skip_render_check=True)
        sb3_check_env(_featured(candidate_features=candidate_features), warn=True)
    searchqa = TextFeatures(DiscreteActions(gym.make("SearchQA-v0"), max_actions=8), num_features=16)
    check_env(searchqa, skip_render_check=True)
    sb3_check_env(searchqa, warn=True)


def test_sync_vector_env_of_wrapped_envs():
    vector = gym.vector.SyncVectorEnv([lambda: _featured(candidate_features=True) for _ in range(3)])
    observations, infos = vector.reset(seed=0)
    assert observations["candidates"].shape == (3, 16, 8 + len(CROSS_FEATURES))
    assert observations["action_mask"].shape == (3, 16)
    for _ in range(8):
        actions = [int(np.flatnonzero(mask)[-1]) if mask.any() else 0 for mask in observations["action_mask"]]
        observations, rewards, _, _, infos = vector.step(np.array(actions))
        assert observations["observation"].shape == (3, 64) and rewards.shape == (3,)
        assert infos["candidate_features"].shape == (3, 16, 8 + len(CROSS_FEATURES))
    vector.close()


def test_maskable_ppo_trains_a_few_steps():
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: _featured(candidate_features=True) for _ in range(2)])
    model = MaskablePPO("MultiInputPolicy", venv, n_steps=16, batch_size=16, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=32)
    observation = venv.reset()
    masks = get_action_masks(venv)
    assert masks.shape == (2, 16) and masks[0, :6].all() and not masks[0, 6:].any()
    actions, _ = model.predict(observation, action_masks=masks)
    assert all(masks[i, action] for i, action in enumerate(actions))  # masked actions are never chosen


def test_tianshou_collector_and_dqn_update_a_few_steps():
    from tianshou.algorithm import DQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, ReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    def make():
        return _featured(candidate_features=True, mask_key="mask", info_keys=("won", "action_valid"))

    class Scorer(torch.nn.Module):  # a linear score per candidate row, masked by DQN through obs.mask
        def __init__(self, candidate_dim):
            super().__init__()
            self.linear = torch.nn.Linear(candidate_dim, 1)

        def forward(self, obs, state=None, info=None):
            return self.linear(torch.as_tensor(obs.candidates)).squeeze(-1), state

    env = make()
    policy = DiscreteQLearningPolicy(
        model=Scorer(env.observation_space["candidates"].shape[1]),
        action_space=env.action_space,
        observation_space=env.observation_space,
        eps_training=0.5,
    )
    algorithm = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), gamma=0.9, target_update_freq=10)
    venv = DummyVectorEnv([make])  # one env: a VectorReplayBuffer's numba compilation would take ~10 s
    buffer = ReplayBuffer(200)
    collector = Collector(algorithm, venv, buffer, exploration_noise=True)
    collector.reset()
    with policy_within_training_step(policy), torch_train_mode(policy, False):
        stats = collector.collect(n_step=40)
    assert stats.n_collected_steps == 40
    assert buffer[buffer.sample_indices(0)].info.action_valid.all()  # the mask kept every action valid
    with policy_within_training_step(policy), torch_train_mode(policy):
        update = algorithm.update(buffer=buffer, sample_size=16)
    assert np.isfinite(update.loss)
    venv.close()


def test_action_masks_reach_through_text_features_and_outer_wrappers():
    from sb3_contrib.common.wrappers import ActionMasker

    env = _featured()
    env.reset(seed=0)
    inner = env.env
    assert isinstance(inner, DiscreteActions)
    assert env.action_masks().dtype == bool and np.array_equal(env.action_masks(), inner.action_masks())
    outer = gym.wrappers.TimeLimit(env, max_episode_steps=5)  # Gymnasium wrappers do not forward methods
    assert np.array_equal(outer.get_wrapper_attr("action_masks")(), inner.action_masks())
    masked = ActionMasker(env, lambda env: env.action_masks())  # sb3-contrib's way
    assert masked.action_masks()[:6].all() and not masked.action_masks()[6:].any()


def test_action_masks_without_discrete_actions_says_what_to_wrap():
    env = TextFeatures(gym.make("SearchQA-v0"), num_features=8)
    with pytest.raises(AttributeError, match="wrap the env in wrappers.DiscreteActions first"):
        env.action_masks()
