"""Adapters that let other frameworks use the agentenvs envs.

- :mod:`agentenvs.integrations.trl`: an env as a TRL ``GRPOTrainer(environment_factory=...)``
  environment, with one tool that takes the env's action.
- :mod:`agentenvs.integrations.openenv`: an env served over OpenEnv's HTTP/WebSocket protocol,
  and a typed OpenEnv client for it.
- :mod:`agentenvs.integrations.skyrl`: an env as a SkyRL-Gym text env, and its parquet dataset.

The TRL and OpenEnv adapters import their framework (``trl``/``datasets``, ``openenv-core``) only
when used, so ``import agentenvs`` and these modules work without them; the SkyRL adapter's env
subclasses SkyRL-Gym's, so importing it needs ``skyrl-gym`` (and names the extra without it).
"""
