"""SearchQA-v0: multi-turn search-and-answer (Search-R1 style) over a BM25 retriever."""

from agentenvs.searchqa.env import SearchQAEnv

__all__ = ["SearchQAEnv"]
