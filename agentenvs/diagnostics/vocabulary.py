"""The generated words of the diagnostic envs: signal words split into train and eval, and item nouns.

A diagnostic task shows a *signal* word and, at the turns that matter, a menu whose right item
carries it (``"red door"`` under the signal ``red``). Which words are signals of which split is
drawn from ``generator_seed``: the eval split's signals never occur in a train task (neither as a
signal nor in a menu), so a policy that does well on eval has learnt the rule, not the pairs.

Example:
    >>> vocabulary = Vocabulary.generate(0)
    >>> set(vocabulary.signals["train"]).isdisjoint(vocabulary.signals["eval"])
    True
    >>> len(vocabulary.signals["train"]), len(vocabulary.signals["eval"])
    (36, 12)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

SIGNAL_WORDS: tuple[str, ...] = (
    "red", "blue", "green", "yellow", "orange", "purple", "pink", "brown", "black", "white", "gray", "gold",
    "silver", "bronze", "copper", "iron", "wooden", "glass", "stone", "paper", "velvet", "amber", "ivory", "olive",
    "teal", "navy", "coral", "jade", "ruby", "pearl", "tan", "plum", "mint", "lemon", "cherry", "maple",
    "oak", "pine", "cedar", "marble", "clay", "steel", "tin", "brass", "denim", "linen", "cotton", "silk",
)  # fmt: skip
"""Adjectives that name an item's look: one or two tokens each for SmolLM2's tokenizer."""
NOUNS: tuple[str, ...] = (
    "door", "box", "cup", "lamp", "bell", "flag", "coin", "card", "ring", "vase", "hat", "kite",
    "drum", "book", "shell", "bowl", "chair", "gate", "bag", "mask",
)  # fmt: skip
"""What a menu's items are (all items of one menu share a noun: ``"red door"``, ``"blue door"``)."""
EVAL_SHARE = 0.25
"""The share of :data:`SIGNAL_WORDS` kept for the eval split."""
SPLITS = ("train", "eval")


@dataclass(frozen=True)
class Vocabulary:
    """The signal words of each split (disjoint) for one generator seed.

    Attributes:
        generator_seed: The seed the split was drawn with.
        signals: Split name -> its signal words, in a seeded order.
    """

    generator_seed: int
    signals: dict[str, tuple[str, ...]]

    @staticmethod
    def generate(generator_seed: int) -> Vocabulary:
        """The split of :data:`SIGNAL_WORDS` drawn with ``generator_seed`` (cached: envs share it)."""
        return _vocabulary(generator_seed)


@lru_cache(maxsize=16)
def _vocabulary(generator_seed: int) -> Vocabulary:
    order = np.random.default_rng([generator_seed, 20611]).permutation(len(SIGNAL_WORDS))
    words = [SIGNAL_WORDS[i] for i in order]
    held_out = round(EVAL_SHARE * len(words))
    return Vocabulary(generator_seed, {"eval": tuple(words[:held_out]), "train": tuple(words[held_out:])})
