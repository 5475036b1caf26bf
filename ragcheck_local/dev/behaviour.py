"""A CheckList-style behaviour suite for a judge (``dev behaviour``): hand-written cases, each
with the verdict people expect, checked through the engine's own windowed checker.

Every behaviour is written for the three places the engine asks the judge something:

* ``answer``: a response claim against the ground-truth answer (precision, hallucination);
* ``response``: a ground-truth claim against the response (recall: a gt fact is covered only
  when the response entails it, never when it contradicts it);
* ``chunk``: a claim against a retrieved chunk (the context and noise metrics).

``accept`` is the set of verdicts that count as right. Where people would say Contradiction
but RAGChecker's metrics only need "not entailed", Neutral is accepted too (``strict`` says
whether the case also demands the exact expected verdict; the report counts both).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from ..records import CONTRADICTION, ENTAILMENT, NEUTRAL

if TYPE_CHECKING:
    from ..judge.checker import NLIChecker

logger = logging.getLogger(__name__)

NOT_ENTAILED = frozenset({NEUTRAL, CONTRADICTION})


@dataclass(frozen=True)
class Case:
    """One behaviour case: ``claim`` judged against ``premise``."""

    behaviour: str
    place: str
    premise: str
    claim: str
    expect: str
    accept: frozenset[str]

    @property
    def name(self) -> str:
        """``behaviour/place`` (unique within the suite)."""
        return f"{self.behaviour}/{self.place}"


def _three(
    behaviour: str,
    expect: str,
    accept: frozenset[str],
    answer: tuple[str, str],
    response: tuple[str, str],
    chunk: tuple[str, str],
) -> list[Case]:
    return [
        Case(behaviour, place, premise, claim, expect, accept)
        for place, (premise, claim) in (
            ("answer", answer),
            ("response", response),
            ("chunk", chunk),
        )
    ]


_SKY = "The sky is blue."
_REPEATED = " ".join(["The grass in the park was cut on Monday."] * 20)
_LONG_IRRELEVANT = (
    "The museum's east wing houses a collection of medieval tapestries donated in 1952 by a "
    "local textile family. Restoration work began in the spring and is expected to take two "
    "years, during which the galleries will remain closed to visitors. The curator said the "
    "tapestries had suffered water damage during a storm and that specialists from three "
    "countries were helping with the cleaning. Guided tours of the west wing continue every "
    "Saturday, and the café on the ground floor has extended its opening hours. Tickets can be "
    "bought online or at the entrance, and children under twelve enter free of charge."
)

CASES: tuple[Case, ...] = (
    *_three(
        "number swapped",
        CONTRADICTION,
        NOT_ENTAILED,
        ("The Eiffel Tower is 330 metres tall.", "The Eiffel Tower is 300 metres tall."),
        (
            "The company was founded in 1998 and now employs about 4,000 people.",
            "The company was founded in 1989.",
        ),
        (
            "The bridge, opened in 1937, has a main span of 1,280 metres and carries six lanes "
            "of traffic across the strait.",
            "The bridge has a main span of 2,180 metres.",
        ),
    ),
    *_three(
        "entity swapped",
        CONTRADICTION,
        NOT_ENTAILED,
        (
            "Metformin is the usual first treatment for type 2 diabetes.",
            "Metformin is the usual first treatment for type 1 diabetes.",
        ),
        (
            "The treaty was signed in Prague in 1991 by the foreign ministers.",
            "The treaty was signed in Vienna.",
        ),
        (
            "Marie Curie was born in Warsaw in 1867 and later moved to Paris, where she studied "
            "physics and mathematics at the Sorbonne.",
            "Marie Curie was born in Paris.",
        ),
    ),
    *_three(
        "negation added",
        CONTRADICTION,
        NOT_ENTAILED,
        (
            "The vaccine is approved for children over five.",
            "The vaccine is not approved for children over five.",
        ),
        (
            "You can cancel the subscription at any time without a fee.",
            "You cannot cancel the subscription without a fee.",
        ),
        (
            "The library is open on Sundays from 10 am to 4 pm, and entry is free for residents.",
            "The library is not open on Sundays.",
        ),
    ),
    *_three(
        "hedged quantity",
        NEUTRAL,
        NOT_ENTAILED,
        ("Symptoms usually last up to 3 days.", "Symptoms last 2 days."),
        ("Delivery takes up to 5 working days.", "Delivery takes 4 working days."),
        (
            "The battery lasts up to 10 hours on a single charge, depending on screen brightness "
            "and which apps are running.",
            "The battery lasts 8 hours on a single charge.",
        ),
    ),
    *_three(
        "faithful paraphrase",
        ENTAILMENT,
        frozenset({ENTAILMENT}),
        (
            "Paris is the capital of France.",
            "France's capital city is Paris.",
        ),
        (
            "The drug was withdrawn from the market in 2004 because it raised the risk of heart "
            "attacks.",
            "In 2004 the drug was pulled from sale over an increased heart attack risk.",
        ),
        (
            "Water boils at 100 degrees Celsius at sea level, but at lower temperatures at high "
            "altitude because the air pressure is lower.",
            "At high altitude water boils below 100 degrees Celsius.",
        ),
    ),
    *_three(
        "near-verbatim support",
        ENTAILMENT,
        frozenset({ENTAILMENT}),
        (
            "The Amazon is the largest rainforest in the world.",
            "The Amazon is the world's largest rainforest.",
        ),
        (
            "Python was created by Guido van Rossum and first released in 1991.",
            "Python was first released in 1991.",
        ),
        (
            "The Great Barrier Reef, off the coast of Queensland, is the largest coral reef "
            "system in the world. It can be seen from outer space.",
            "The Great Barrier Reef is off the coast of Queensland.",
        ),
    ),
    *_three(
        "partial support",
        NEUTRAL,
        NOT_ENTAILED,
        (
            "The museum opens at 9 am.",
            "The museum opens at 9 am and closes at 5 pm.",
        ),
        (
            "Aspirin can reduce fever.",
            "Aspirin can reduce fever and prevent blood clots.",
        ),
        (
            "The river flows through Germany and Austria before it reaches Hungary.",
            "The river flows through Germany, Austria, Hungary and Serbia into the Black Sea.",
        ),
    ),
    Case(
        "facts from two chunks",
        "chunk",
        "The company was founded in Oslo in 1972 by two engineers.",
        "The company was founded in Oslo in 1972 and went public in 1995.",
        NEUTRAL,
        NOT_ENTAILED,
    ),
    Case(
        "facts from two chunks",
        "chunk (both)",
        "The company was founded in Oslo in 1972 by two engineers. It went public in 1995 and "
        "moved its headquarters to Bergen.",
        "The company was founded in Oslo in 1972 and went public in 1995.",
        ENTAILMENT,
        frozenset({ENTAILMENT}),
    ),
    *_three(
        "paraphrase, other words",
        ENTAILMENT,
        frozenset({ENTAILMENT}),
        (
            "Regular physical activity lowers the risk of cardiovascular disease.",
            "Exercising regularly reduces the chance of heart disease.",
        ),
        (
            "In this randomised trial of 1,200 adults, vitamin D supplementation did not reduce "
            "the incidence of fractures compared with placebo.",
            "Vitamin D supplements did not prevent fractures in the trial.",
        ),
        (
            "Global mean surface temperature has increased by about 1.1 degrees Celsius since "
            "the pre-industrial period, mainly because of greenhouse gas emissions from burning "
            "fossil fuels.",
            "Burning fossil fuels is the main reason the planet has warmed.",
        ),
    ),
    *_three(
        "contradiction, other words",
        CONTRADICTION,
        NOT_ENTAILED,
        (
            "Most patients recover within a week.",
            "Recovery usually takes several months.",
        ),
        (
            "In this randomised trial of 1,200 adults, vitamin D supplementation did not reduce "
            "the incidence of fractures compared with placebo.",
            "Vitamin D supplements reduced fractures.",
        ),
        (
            "Arctic sea ice has declined sharply since satellite records began in 1979, with the "
            "September minimum shrinking by about 13 percent per decade.",
            "Arctic sea ice has grown since 1979.",
        ),
    ),
    Case("repeated sentence", "chunk", _REPEATED, _SKY, NEUTRAL, NOT_ENTAILED),
    Case(
        "repeated sentence",
        "chunk (a fact repeated)",
        " ".join(["Paris is the capital of France."] * 20),
        _SKY,
        NEUTRAL,
        NOT_ENTAILED,
    ),
    Case(
        "repeated sentence",
        "chunk (claim about it)",
        _REPEATED,
        "The grass in the park was cut on Monday.",
        ENTAILMENT,
        frozenset({ENTAILMENT}),
    ),
    Case("long irrelevant chunk", "chunk", _LONG_IRRELEVANT, _SKY, NEUTRAL, frozenset({NEUTRAL})),
    Case(
        "long irrelevant chunk",
        "chunk (near topic)",
        _LONG_IRRELEVANT,
        "The museum's tapestries were donated in 1975.",
        CONTRADICTION,
        NOT_ENTAILED,
    ),
    Case(
        "long irrelevant chunk",
        "chunk (supported inside)",
        _LONG_IRRELEVANT,
        "Children under twelve get into the museum for free.",
        ENTAILMENT,
        frozenset({ENTAILMENT}),
    ),
)
"""The suite (each ``name`` unique)."""


@dataclass(frozen=True)
class Outcome:
    """One case's verdict and P(Entailment) (the checker's ``support``)."""

    name: str
    expect: str
    verdict: str
    support: float
    passed: bool
    exact: bool


def run_cases(checker: NLIChecker, cases: Sequence[Case] = CASES) -> list[Outcome]:
    """Judge every case with ``checker`` (an ``NLIChecker``: its ``check`` on (premise, claim)
    pairs) and say which pass."""
    results = checker.check([(c.premise, c.claim) for c in cases])
    return [
        Outcome(
            c.name,
            c.expect,
            r.verdict,
            round(float(r.support), 4),
            r.verdict in c.accept,
            r.verdict == c.expect,
        )
        for c, r in zip(cases, results, strict=True)
    ]


def summary(outcomes: Sequence[Outcome]) -> dict[str, object]:
    """Passed / exact counts, overall and per behaviour, and the failures by name."""
    by: dict[str, list[int]] = {}
    for o in outcomes:
        counts = by.setdefault(o.name.split("/")[0], [0, 0, 0])
        counts[0] += o.passed
        counts[1] += o.exact
        counts[2] += 1
    return {
        "passed": sum(o.passed for o in outcomes),
        "exact": sum(o.exact for o in outcomes),
        "cases": len(outcomes),
        "by_behaviour": {k: {"passed": v[0], "exact": v[1], "cases": v[2]} for k, v in by.items()},
        "failed": [o.name for o in outcomes if not o.passed],
    }


def format_table(outcomes: Sequence[Outcome], model: str) -> str:
    """Markdown table, one row per case."""
    lines = [
        f"Model: `{model}`",
        "",
        "| case | expected | verdict | P(E) | ok |",
        "|---|---|---|---|---|",
    ]
    for o in outcomes:
        mark = "yes" if o.passed else "**no**"
        lines.append(f"| {o.name} | {o.expect} | {o.verdict} | {o.support:.2f} | {mark} |")
    s = summary(outcomes)
    lines += ["", f"passed {s['passed']}/{s['cases']} (exact verdict {s['exact']})"]
    return "\n".join(lines)


def as_json(outcomes: Sequence[Outcome]) -> dict[str, object]:
    """The outcomes and their summary as one JSON-ready dict."""
    return {"summary": summary(outcomes), "cases": [asdict(o) for o in outcomes]}
