#!/usr/bin/env bash
# Every check CI runs, in order (after scripts/setup.sh): lint, format, architecture, types, the
# built package (scripts/check_wheel.sh: wheel and sdist, twine, a fresh core venv), tests.
# Extra arguments go to pytest (e.g. `bash scripts/check.sh tests/agentenvs/core -x`).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/lint-imports --no-cache
.venv/bin/mypy
bash scripts/check_wheel.sh
.venv/bin/python -m pytest "$@"
