"""Training on collected batches: :mod:`~agents.training.trainer` (collect → credit → update →
evaluate → log → checkpoint)."""
