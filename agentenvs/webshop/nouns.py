"""Noun extraction for the type reward's title overlap.

The original tags product titles with spaCy (``en_core_web_sm``/``_lg``) and keeps the
tokens tagged ``NOUN`` or ``PROPN``. spaCy's English models are not installable from a
package index, so the default here is a documented replacement: a rule-based tagger
that needs no model data. A token is kept as a noun unless it is

- a function word (determiners, prepositions, conjunctions, pronouns, auxiliaries),
- a number or a number with a unit glued on (``12``, ``3.4oz``, ``2-pack``),
- punctuation, or
- an adjective or adverb by form: a common product-title adjective (``new``, ``soft``,
  ``large``...) or an adjectival/adverbial suffix (``-able``, ``-ible``, ``-ful``,
  ``-less``, ``-ous``, ``-ive``, ``-ic``, ``-ish``, ``-ly``, ``-ed``, ``-proof``,
  ``-free``).

Its agreement with a noun-tagged reference is measured in ``tests/agentenvs/webshop`` and
``benchmarks/webshop_env.py``. Where spaCy and a model are installed,
``make_noun_extractor("spacy")`` uses them as the original does.

Example:
    >>> title_nouns("Organic Lavender Shampoo for Women, 12 oz, Sulfate-Free")
    ['lavender', 'shampoo', 'women', 'oz']
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

NounExtractor = Callable[[str], list[str]]

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['\-.][A-Za-z0-9]+)*|[^\sA-Za-z0-9]")
_NUMBERISH = re.compile(r"^\d[\d.,/]*[a-z\-]*$|^\d+(?:-\w+)?$")

FUNCTION_WORDS = frozenset(
    """a an the and or nor but for with without of in on at to by from into onto over under
    up down out off about as per via than then so if this that these those it its it's
    you your yours we our us they their them he she his her i me my mine is are was were be
    been being am do does did has have had will would can could should may might must not no
    yes all any each every some more most less least many much few other such only own same
    very too just also both either neither which who whom whose what when where why how x
    ft""".split()
)

COMMON_ADJECTIVES = frozenset(
    """new old big small large little long short tall high low light dark soft hard heavy
    thin thick slim wide narrow deep fresh clean dry wet hot cold warm cool best better good
    great premium perfect pure natural organic real true full half extra super ultra mini
    max plus easy simple quick fast slow strong safe quiet smooth rich sweet bright modern
    classic vintage cute pretty beautiful elegant casual formal sexy fancy fashion stylish
    comfortable portable durable washable adjustable waterproof lightweight heavy-duty
    multi multi-purpose all-in-one original official authentic professional universal
    compatible double single triple round square flat open closed non-slip non-toxic
    non-gmo gluten-free sugar-free vegan unisex assorted various""".split()
)

_ADJECTIVE_SUFFIXES = ("able", "ible", "ful", "less", "ous", "ive", "ic", "ish", "ly", "ed", "proof", "-free", "-like")
_NOUN_EXCEPTIONS = frozenset(
    """table cable bible needle candle handle bottle shed bed sled seed feed sled sneaker
    massive music plastic fabric tunic magic logic mechanic ceramic acrylic elastic
    graphic lyric clinic tonic picnic garlic panic traffic relic family jelly belly lily
    supply assembly butterfly umbrella dragonfly tile active""".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-case word and punctuation tokens (hyphenated and dotted words stay whole)."""
    return [token.lower() for token in _TOKEN.findall(text)]


def is_noun(token: str) -> bool:
    """Whether the rule-based tagger keeps ``token`` (lower-case) as a noun."""
    if not token or not token[0].isalnum():
        return False
    if token in FUNCTION_WORDS or token in COMMON_ADJECTIVES:
        return False
    if _NUMBERISH.match(token):
        return False
    if token in _NOUN_EXCEPTIONS:
        return True
    return not (len(token) > 4 and token.endswith(_ADJECTIVE_SUFFIXES))


def title_nouns(title: str) -> list[str]:
    """The nouns of ``title``, lower-case, in order (rule-based; see the module docstring)."""
    return [token for token in tokenize(title) if is_noun(token)]


@lru_cache(maxsize=2)
def _spacy_pipeline(model: str):  # pragma: no cover - only where spaCy and a model are installed
    import spacy

    return spacy.load(model)


def make_noun_extractor(kind: str = "rules", spacy_model: str = "en_core_web_sm") -> NounExtractor:
    """A noun extractor: ``"rules"`` (default, no model) or ``"spacy"`` (needs the model).

    Raises:
        ValueError: for an unknown ``kind``.
        ImportError/OSError: for ``"spacy"`` where spaCy or the model is missing.
    """
    if kind == "rules":
        return title_nouns
    if kind == "spacy":  # pragma: no cover - only where spaCy and a model are installed
        pipeline = _spacy_pipeline(spacy_model)
        return lambda text: [t.text.lower() for t in pipeline(text) if t.pos_ in ("NOUN", "PROPN")]
    raise ValueError(f"noun tagger must be 'rules' or 'spacy', got {kind!r}")
