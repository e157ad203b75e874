"""LLM agents that train on agentenvs environments (GRPO, ORSD, TASPO).

The Collector / Policy / Algorithm / Trainer split lives here; see the README.
"""
