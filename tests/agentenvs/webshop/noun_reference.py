"""A hand-tagged noun reference for the generated shop's title vocabulary.

Every word the generator can put in a title was tagged by hand, as a careful human
annotator (or spaCy) would in context; these are the words that are *not* nouns (or
proper nouns). Brands and all other title words are nouns. The rule-based tagger in
``agentenvs.webshop.nouns`` does not see this list, so agreement with it is a real measurement.
"""

from __future__ import annotations

from agentenvs.webshop.nouns import tokenize

NON_NOUNS = frozenset(
    """for and to green dark raw sparkling wireless smart free natural long lasting sensitive dry easy
    use high hyaluronic slim relaxed short elastic wicking quick drying daily wide non low friendly
    organic based kosher certified individually wrapped ready eat fair resealable solid adjustable mid
    lumbar engineered heavy clean required fast cancelling resistant install absorbing play plated
    5.0""".split()
)


def reference_nouns(title: str) -> list[str]:
    """Title tokens that the hand-tagged reference calls nouns."""
    return [token for token in tokenize(title) if token[0].isalnum() and token not in NON_NOUNS]
