"""``python -m agents train|eval|quickstart``: train or evaluate an LLM agent from the command line.

- ``train``: GRPO (or ``--config.credit``) training of ``--model`` on ``--env``.
- ``eval``: held-out success of a model, or of a run's latest checkpoint (``--run``).
- ``quickstart``: ``train`` with the README's settings (SmolLM2-135M on 1-hop SearchQA, ~10 min on 2 CPU cores).

Every flag is listed by ``python -m agents <command> --help``.
"""

from __future__ import annotations

import sys

from agents.cli import main

if __name__ == "__main__":
    sys.exit(main())
