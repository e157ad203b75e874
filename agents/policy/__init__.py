"""Policy backends: a language model that generates responses and scores given ones.

The contract every backend follows (what the collector, the trainer and the credit
rules rely on):

- ``generate(prompts, ...) -> list[Generation]``: sample one response per prompt
  (prompt text = the user message; the backend applies the chat template), with
  the prompt and response token ids and the sampled tokens' log-probs.
- ``score(prompts, responses, contexts=None) -> Tensor[B, T]``: teacher-forced
  log-probs of the given response tokens; ``contexts[i]`` (text or None) is
  inserted into prompt ``i`` first — the same response scored with and without
  privileged text is what ORSD and TASPO compare.
- ``token_logprobs(prompt_ids, response_ids, response_mask)``: the same on token
  tensors, with gradients (the update path).
"""

from agents.policy.logprobs import selective_logprobs
from agents.policy.models import BUILTIN_MODELS, resolve_model
from agents.policy.transformers_policy import Generation, LoraOptions, TransformersPolicy

__all__ = [
    "BUILTIN_MODELS",
    "Generation",
    "LoraOptions",
    "TransformersPolicy",
    "resolve_model",
    "selective_logprobs",
]
