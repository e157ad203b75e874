"""Playing episodes: :mod:`~agents.collection.collector` (groups of envs in lockstep → a
:class:`~agents.rollout.RolloutBatch`), :mod:`~agents.collection.evaluation` (held-out play, shared
with SFT), and their scale-out on Ray: :mod:`~agents.collection.workers` (:class:`RolloutWorkers`,
N actors each holding a copy of the policy and a collector for a shard of the groups) and
:mod:`~agents.collection.merge` (the shards' collections made one, in shard order, as one process
would have collected them).

Env workers (envs in Ray actors, one policy) are :func:`agentenvs.make_group_vec`'s
``vectorization_mode="ray"``.
"""
