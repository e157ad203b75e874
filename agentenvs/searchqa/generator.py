"""A seeded generator of a fictional knowledge base with 1-hop and 2-hop questions.

The embedded default of SearchQA-v0: it needs no data, and since every entity is
invented, a model cannot answer from memory — it has to search. Entities (people,
cities, countries, companies) get unique made-up names and functional facts; each
entity is one passage; each question's answer is unique and stated in the passages
named by its ``supporting_titles`` (one for 1-hop, two for 2-hop questions).

Example:
    >>> kb = generate_knowledge_base(seed=0, num_people=20)
    >>> q = kb.questions[0]
    >>> all(any(t == p.title for p in kb.passages) for t in q.supporting_titles)
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agentenvs.searchqa.data import Passage, QAExample

_ONSETS = ["b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "r", "s", "st", "t", "tr", "v", "z"]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "io", "ou"]
_CODAS = ["", "", "n", "r", "l", "s", "th", "m", "x"]
_PROFESSIONS = [
    "architect",
    "botanist",
    "cartographer",
    "chemist",
    "composer",
    "engineer",
    "historian",
    "linguist",
    "painter",
    "physician",
    "poet",
    "sculptor",
    "surveyor",
    "violinist",
]
_INDUSTRIES = [
    "shipbuilding",
    "textile",
    "software",
    "mining",
    "publishing",
    "aerospace",
    "brewing",
    "pharmaceutical",
    "railway",
    "glassmaking",
]
_COMPANY_SUFFIXES = ["Works", "Holdings", "Industries", "Systems", "Foundry", "Labs"]
_CITY_SUFFIXES = ["ford", "haven", "mere", "stead", "bury", "vale", "port", "mouth"]
_LANGUAGES = ["Velmish", "Orrin", "Tasari", "Quellic", "Dunmaric", "Sarvian", "Ethric", "Maldonese"]


@dataclass(frozen=True)
class KnowledgeBase:
    """Generated passages and questions."""

    passages: list[Passage]
    questions: list[QAExample]


class _NameMaker:
    """Unique pronounceable names from a seeded generator."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._used: set[str] = set()

    def _word(self, syllables: int) -> str:
        parts = []
        for _ in range(syllables):
            parts.append(self._rng.choice(_ONSETS) + self._rng.choice(_VOWELS) + self._rng.choice(_CODAS))
        return "".join(parts).capitalize()

    def make(self, pattern: str) -> str:
        """A fresh name: ``person`` (two words), ``city``, ``country`` or ``company``.

        Every invented word is used once across all names, so no two entities share
        a searchable word (company suffixes such as "Works" are shared vocabulary).
        """
        for _ in range(10_000):
            if pattern == "person":
                name = f"{self._word(2)} {self._word(int(self._rng.integers(2, 4)))}"
            elif pattern == "city":
                name = self._word(2) + str(self._rng.choice(_CITY_SUFFIXES))
            elif pattern == "country":
                name = self._word(3)
            else:
                name = f"{self._word(2)} {self._rng.choice(_COMPANY_SUFFIXES)}"
            words = [w for w in name.split() if w not in _COMPANY_SUFFIXES]
            if not any(w in self._used for w in words):
                self._used.update(words)
                return name
        raise RuntimeError(f"ran out of unique {pattern} names; ask for fewer entities")


def generate_knowledge_base(
    *,
    seed: int = 0,
    num_people: int = 150,
    num_cities: int = 40,
    num_countries: int = 12,
    num_companies: int = 40,
) -> KnowledgeBase:
    """Generates passages and questions, all determined by ``seed``.

    Raises:
        ValueError: if a count is too small for every question type to exist.
    """
    for name, value, minimum in (
        ("num_people", num_people, 2),
        ("num_cities", num_cities, 2),
        ("num_countries", num_countries, 1),
        ("num_companies", num_companies, 1),
    ):
        if value < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {value}")
    rng = np.random.default_rng(seed)
    names = _NameMaker(rng)
    countries = [names.make("country") for _ in range(num_countries)]
    cities = [names.make("city") for _ in range(num_cities)]
    companies = [names.make("company") for _ in range(num_companies)]
    people = [names.make("person") for _ in range(num_people)]

    city_country = {city: countries[i % num_countries] for i, city in enumerate(cities)}
    city_founded = {city: int(rng.integers(900, 1900)) for city in cities}
    capital = {}
    for country in countries:
        own = [city for city in cities if city_country[city] == country]
        capital[country] = own[int(rng.integers(len(own)))] if own else None
    language = {country: str(rng.choice(_LANGUAGES)) for country in countries}
    birth_city = {person: str(rng.choice(cities)) for person in people}
    birth_year = {person: int(rng.integers(1920, 2000)) for person in people}
    profession = {person: str(rng.choice(_PROFESSIONS)) for person in people}
    employer = {person: str(rng.choice(companies)) for person in people}
    headquarters = {company: str(rng.choice(cities)) for company in companies}
    industry = {company: str(rng.choice(_INDUSTRIES)) for company in companies}
    founder = {company: str(rng.choice(people)) for company in companies}

    passages: list[Passage] = []

    def add(title: str, text: str) -> None:
        passages.append(Passage(id=f"kb{seed}-{len(passages)}", title=title, text=text))

    for country in countries:
        capital_text = f" Its capital is {capital[country]}." if capital[country] else ""
        add(
            country, f"{country} is a country.{capital_text} The official language of {country} is {language[country]}."
        )
    for city in cities:
        add(city, f"{city} is a city in {city_country[city]}. {city} was founded in {city_founded[city]}.")
    for company in companies:
        add(
            company,
            f"{company} is a {industry[company]} company headquartered in {headquarters[company]}. "
            f"{company} was founded by {founder[company]}.",
        )
    for person in people:
        add(
            person,
            f"{person} is a {profession[person]} born in {birth_year[person]} in {birth_city[person]}. "
            f"{person} works for {employer[person]}.",
        )

    questions: list[QAExample] = []

    def ask(kind: str, question: str, answer: str, *titles: str) -> None:
        questions.append(
            QAExample(
                id=f"kb{seed}-q{len(questions)}",
                question=question,
                answers=(answer,),
                supporting_titles=tuple(titles),
                kind=kind,
            )
        )

    for person in people:
        city, company = birth_city[person], employer[person]
        ask("1hop", f"In which city was {person} born?", city, person)
        ask("1hop", f"Which company does {person} work for?", company, person)
        ask("2hop", f"In which country was {person} born?", city_country[city], person, city)
        if founder[company] != person:  # else the question would hold its own answer
            ask("2hop", f"Who founded the company that {person} works for?", founder[company], person, company)
        ask(
            "2hop",
            f"In which city is the company that {person} works for headquartered?",
            headquarters[company],
            person,
            company,
        )
    for company in companies:
        ask("1hop", f"Who founded {company}?", founder[company], company)
        ask("1hop", f"In which city is {company} headquartered?", headquarters[company], company)
        ask(
            "2hop",
            f"In which country is {company} headquartered?",
            city_country[headquarters[company]],
            company,
            headquarters[company],
        )
    for city in cities:
        ask("1hop", f"In which country is {city}?", city_country[city], city)
    for country in countries:
        country_capital = capital[country]
        if country_capital:
            ask("1hop", f"What is the capital of {country}?", country_capital, country)
    return KnowledgeBase(passages=passages, questions=questions)
