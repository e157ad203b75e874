"""Adapters that let other frameworks use the agentenvs envs.

- :mod:`agentenvs.integrations.trl`: an env as a TRL ``GRPOTrainer(environment_factory=...)``
  environment, with one tool that takes the env's action.
- :mod:`agentenvs.integrations.openenv`: an env served over OpenEnv's HTTP/WebSocket protocol,
  and a typed OpenEnv client for it.

Each adapter imports its framework (``trl``/``datasets``, ``openenv-core``) only when used, so
``import agentenvs`` and these modules work without them.
"""
