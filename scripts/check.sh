#!/usr/bin/env bash
# Every check CI runs, in order (first `scripts/setup.sh --all`, which completes the set-up): lint,
# format, architecture, types, the built package (scripts/check_wheel.sh: wheel and sdist, twine, a fresh core venv), tests.
# Extra arguments go to pytest (e.g. `bash scripts/check.sh tests/agentenvs/core -x`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --all  # the extras, dev tools and chromium the tests need (skipped when done)
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/lint-imports --no-cache
.venv/bin/mypy
bash scripts/check_wheel.sh
.venv/bin/python -m pytest "$@"
