"""``python -m agents train|eval|sft|quickstart|view``: train, evaluate or inspect LLM agents.

- ``train``: GRPO (or ``--config.credit``) training of ``--model`` on ``--env``.
- ``eval``: held-out success of a model, of a run's latest checkpoint (``--run``) or of a served
  model (``--endpoint``).
- ``sft``: behaviour cloning on the env's expert (the warm start).
- ``quickstart``: the README's main job, an expert warm start then GRPO (preset ``webshop``:
  SmolLM2-135M on WebShop-v0; also ``alfworld``, ``searchqa`` and ``credit-lab``).
- ``view``: the credit viewer over run folders.

Every flag is listed by ``python -m agents <command> --help``.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":
    if sys.argv[1:] in (["-h"], ["--help"]):  # the command list needs no training stack: at once
        from agents.cli.commands import top_level_help

        print(top_level_help())
        sys.exit(0)
    from agents.cli import main

    sys.exit(main())
