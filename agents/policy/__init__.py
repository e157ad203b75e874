"""Policy backends: a language model that generates responses and scores given ones.

The contract is the :class:`~agents.policy.protocol.Policy` protocol (what the collector,
the trainer and the credit rules call); :class:`TransformersPolicy` is the built-in
backend, a local causal LM put together from pieces with one job each: its weights, LoRA
and reference model (:mod:`~agents.policy.weights`), chat rendering
(:mod:`~agents.policy.codec`), its own KV-cached sampling loop (:mod:`~agents.policy.sampler`
over :mod:`~agents.policy.decoding`), teacher-forced scoring with optional privileged text
and prompt-KV reuse (:mod:`~agents.policy.scorer`, :mod:`~agents.policy.prompt_cache`) and
what a rollout keeps (:mod:`~agents.policy.caches`);
multi-turn chats over one cache (:mod:`~agents.policy.conversation`, written as prompts by
:mod:`~agents.policy.chat`), one-pass scoring of spans of whole sequences
(:mod:`~agents.policy.spans`) and the frozen-trunk hidden-state cache that lets a LoRA
policy rerun only its adapted layers (:mod:`~agents.policy.trunk`). :class:`OpenAIPolicy`
plays a model behind any OpenAI-compatible server (evaluation, collection without gradients).

``TransformersPolicy`` takes one settings group per piece: :class:`WeightSettings`,
:class:`SamplingSettings`, :class:`ChatSettings`, :class:`DecodeSettings`,
:class:`PrefillSettings` and :class:`ScoreSettings`.
"""

from agents.policy.codec import ChatSettings
from agents.policy.decoding import DecodeSettings
from agents.policy.generation import Generation
from agents.policy.logprobs import selective_logprobs
from agents.policy.models import BUILTIN_MODELS, resolve_model
from agents.policy.openai_policy import OpenAIPolicy, PolicyServerError
from agents.policy.protocol import Policy
from agents.policy.sampler import PrefillSettings, SamplingSettings
from agents.policy.scorer import ScoreSettings
from agents.policy.transformers_policy import TransformersPolicy
from agents.policy.weights import LoraOptions, WeightSettings

__all__ = [
    "BUILTIN_MODELS",
    "ChatSettings",
    "DecodeSettings",
    "Generation",
    "LoraOptions",
    "OpenAIPolicy",
    "Policy",
    "PolicyServerError",
    "PrefillSettings",
    "SamplingSettings",
    "ScoreSettings",
    "TransformersPolicy",
    "WeightSettings",
    "resolve_model",
    "selective_logprobs",
]
