"""The on-policy loop: :mod:`~agents.loop.collector` (groups of envs in lockstep → a
:class:`~agents.rollout.RolloutBatch`), :mod:`~agents.loop.trainer` (collect → credit → update →
evaluate → log → checkpoint) and :mod:`~agents.loop.evaluation` (held-out play, shared with SFT)."""
