#!/usr/bin/env bash
# Every check CI runs, in order (after scripts/setup.sh): lint, format, architecture, types, tests.
# Extra arguments go to pytest (e.g. `bash scripts/check.sh tests/agentenvs/core -x`).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/lint-imports --no-cache
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
