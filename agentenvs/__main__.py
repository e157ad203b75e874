"""``python -m agentenvs list | info | play | serve | pregenerate``: the envs from the terminal.

The commands live in :mod:`agentenvs.cli`; ``python -m agentenvs <command> --help`` lists
every flag. ``main``, ``parse`` and ``declaration`` stay importable from here.
"""

from __future__ import annotations

import sys

from agentenvs.cli import declaration, main, parse

__all__ = ["declaration", "main", "parse"]

if __name__ == "__main__":
    sys.exit(main())
