"""The core install's smoke test (run by scripts/check_wheel.sh and scripts/check_extras.sh in a
fresh venv, outside the source tree): the installed package registers its envs, WebShop-v0 and
SearchQA-v0 reset and step, and the package ships no conftest.py and marks itself typed."""

from importlib import metadata

import gymnasium as gym

import agentenvs

assert "site-packages" in agentenvs.__file__, f"not the installed package: {agentenvs.__file__}"
for env_id, action in (("WebShop-v0", "search[red shirt]"), ("SearchQA-v0", "<search>capital</search>")):
    env = gym.make(env_id)
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(action)
    assert isinstance(observation, str) and info["action_valid"], (env_id, info)
    env.close()
files = [str(path) for path in metadata.files("agentenvs") or ()]
assert not [path for path in files if path.endswith("conftest.py")], "a conftest.py ships in the wheel"
for package in ("agentenvs", "agents", "wrappers"):  # files, not imports: the agents need torch
    assert f"{package}/py.typed" in files, f"{package} has no py.typed"
print(f"core: agentenvs {agentenvs.__version__} installed; WebShop-v0 and SearchQA-v0 reset and step")
