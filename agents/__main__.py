"""``python -m agents train|eval|sft|quickstart|view``: train, evaluate or inspect LLM agents.

- ``train``: GRPO (or ``--config.credit``) training of ``--model`` on ``--env``.
- ``eval``: held-out success of a model, of a run's latest checkpoint (``--run``) or of a served
  model (``--endpoint``).
- ``sft``: behaviour cloning on the env's expert (the warm start).
- ``quickstart``: the README's main job, an expert warm start then GRPO (preset ``webshop``:
  SmolLM2-135M on WebShop-v0, ~10 min on 2 CPU cores; also ``alfworld`` and ``searchqa``).
- ``view``: the credit viewer over run folders.

Every flag is listed by ``python -m agents <command> --help``.
"""

from __future__ import annotations

import sys

from agents.cli import main

if __name__ == "__main__":
    sys.exit(main())
