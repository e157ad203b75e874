"""The credit viewer: a local web app over training run folders (``python -m agents view RUN ...``).

It shows a run's settings and learning curves (several runs overlaid), its recorded steps'
groups side by side, and every turn of a trajectory with each response token coloured by the
advantage the credit rule gave it (:mod:`agents.runs.credit_record` is what it reads). Flask is in
the ``web`` extra; the trainer never imports this package.
"""

from agents.viewer.app import create_app, serve
from agents.viewer.store import NotRecorded, RunStore, UnknownRun

__all__ = ["NotRecorded", "RunStore", "UnknownRun", "create_app", "serve"]
