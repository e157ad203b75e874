"""What a run folder holds and how it is read back: :mod:`~agents.runs.checkpoint` (atomic
checkpoints, RNG states, resume) and :mod:`~agents.runs.credit_record` (the per-token credit
records the viewer reads)."""
