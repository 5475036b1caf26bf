"""Judge specs: what kind of model judges a (premise, claim) pair and how it is called.

A judge spec is a small versioned file (JSON or YAML) naming the kind of model, its input
template or chat prompt, which output means "supported" (a label index, or label tokens given as
words or token ids) and how long a premise chunk may be. The built-in presets
(:data:`PRESETS`) cover the field's strongest local checkers; ``--judge NAME|FILE`` picks one
and ``--nli-model`` still names the weights. Specs are data: templates are filled with
``str.replace`` on the three placeholders below, never formatted or evaluated.

Kinds (:data:`JUDGE_KINDS`):

- ``nli``: a 3-way (or entailment / not-entailment) sequence classifier, labels read from
  ``config.id2label`` (today's judge; the default).
- ``classifier``: a 2-label "supported" classifier with its own input string (MiniCheck
  RoBERTa / DeBERTa: ``document + eos + claim``).
- ``seq2seq``: an encoder-decoder; one decoder step from the start token, softmax over the
  label tokens (MiniCheck-Flan-T5, TRUE).
- ``causal-lm``: an instruct LLM; chat template, the first answer token's probabilities over
  the label words, no generation (Bespoke-MiniCheck, any local instruct model; GGUF files too).
- ``t5-token``: a T5 token classifier read at the first position (HHEM-2.1-Open), built from
  its base model's config without remote code.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import InputError, show_value

SPEC_VERSION = 1
JUDGE_KINDS = ("nli", "classifier", "seq2seq", "causal-lm", "t5-token")
LABEL_ROLES = ("supported", "unsupported", "contradicted")
"""What a label token means: Entailment, Neutral (not supported), Contradiction."""
PLACEHOLDERS = ("{premise}", "{claim}", "{eos}")
"""Template placeholders: the premise chunk, the claim, the tokenizer's eos token text."""
DEFAULT_JUDGE = "nli"


@dataclass(frozen=True)
class JudgeSpec:
    """One judge: kind, input template, labels, chunking (see the module docstring)."""

    name: str
    kind: str
    version: int = SPEC_VERSION
    template: str | None = None
    """Input string with ``{premise}`` and ``{claim}`` (``{eos}``: the eos token); for
    ``causal-lm`` the user message. None for ``nli`` (the tokenizer's pair template)."""
    system: str | None = None
    """``causal-lm``: the system message (None: no system turn)."""
    label_tokens: tuple[tuple[str, str | int], ...] = ()
    """``seq2seq`` / ``causal-lm``: (role, word or token id) per label; roles from
    :data:`LABEL_ROLES`, ``supported`` and ``unsupported`` required."""
    supported_index: int | None = None
    """``classifier`` / ``t5-token``: the output index meaning supported (of 2)."""
    chunk_tokens: int | None = None
    """Premise tokens per chunk at most (None: as many as fit the model's input)."""
    max_length: int | None = None
    """Model input tokens (None: the model's own limit, at most 512 for encoders)."""
    aggregate: str = "max"
    """How chunk scores combine: ``max`` (a claim is supported if some chunk supports it)."""
    base_model: str | None = None
    """``t5-token``: the base model folder (config and tokenizer), relative to the weights
    or absolute (None: the weights' own folder holds a T5 config and tokenizer)."""
    source: str = ""
    """Where the weights come from (docs, ``ragcheck-local judges``)."""
    reported: str = ""
    """Reported quality and its source (docs only)."""
    origin: str = field(default="built-in", compare=False)
    """Where the spec came from (a file path, or ``built-in``): named in errors."""

    @property
    def roles(self) -> tuple[str, ...]:
        """The label roles in output order (label-token kinds), else ``()``."""
        return tuple(role for role, _ in self.label_tokens)

    def to_dict(self) -> dict[str, Any]:
        """The spec as written to a file and to the manifest."""
        data = asdict(self)
        data.pop("origin")
        data["label_tokens"] = {role: token for role, token in self.label_tokens}
        return data

    @property
    def sha256(self) -> str:
        """Hash of what decides scores (docs fields left out): cache keys and the manifest."""
        data = self.to_dict()
        for key in ("name", "source", "reported"):
            data.pop(key)
        text = json.dumps(data, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def render(self, premise: str, claim: str, eos: str = "") -> str:
        """The template filled in (placeholders replaced once, left to right, so a premise
        that itself contains ``{claim}`` stays text)."""
        if self.template is None:
            raise ValueError(f"judge {self.name!r} ({self.kind}) has no template")
        values = {"{premise}": premise, "{claim}": claim, "{eos}": eos}
        out: list[str] = []
        rest = self.template
        while rest:
            hits = [(rest.find(p), p) for p in PLACEHOLDERS if rest.find(p) >= 0]
            if not hits:
                out.append(rest)
                break
            at, placeholder = min(hits)
            out.append(rest[:at])
            out.append(values[placeholder])
            rest = rest[at + len(placeholder) :]
        return "".join(out)


_MINICHECK_SYSTEM = (
    "Determine whether the provided claim is consistent with the corresponding document. "
    "Consistency in this context implies that all information presented in the claim is "
    "substantiated by the document. If not, it should be considered inconsistent. Please "
    'assess the claim\'s consistency with the document by responding with either "Yes" or "No".'
)
_THREE_WAY_SYSTEM = (
    "You check a claim against a document. Answer with one word: Yes if the document "
    "supports every part of the claim, No if the document contradicts the claim, Maybe if "
    "the document neither supports nor contradicts it."
)
_HHEM_TEMPLATE = (
    "<pad> Determine if the hypothesis is true given the premise?\n\n"
    "Premise: {premise}\n\nHypothesis: {claim}"
)

PRESETS: dict[str, JudgeSpec] = {
    s.name: s
    for s in (
        JudgeSpec(
            name="nli",
            kind="nli",
            source="a local NLI cross-encoder (default: the bundled ragcheck-nli-minilm-l6)",
            reported="see models/ragcheck-nli-minilm-l6/MODEL_CARD.md",
        ),
        JudgeSpec(
            name="minicheck-roberta",
            kind="classifier",
            template="{premise}{eos}{claim}",
            supported_index=1,
            chunk_tokens=400,
            source="lytang/MiniCheck-RoBERTa-Large",
            reported="LLM-AggreFact balanced accuracy ~72.6 (Tang et al. 2024, MiniCheck)",
        ),
        JudgeSpec(
            name="minicheck-deberta",
            kind="classifier",
            template="{premise}{eos}{claim}",
            supported_index=1,
            chunk_tokens=400,
            source="lytang/MiniCheck-DeBERTa-v3-Large",
            reported="LLM-AggreFact balanced accuracy ~72.6 (Tang et al. 2024, MiniCheck)",
        ),
        JudgeSpec(
            name="minicheck-flan-t5",
            kind="seq2seq",
            template="predict: {premise}{eos}{claim}",
            # The authors' ids: 3 = not supported, 209 = supported (T5 vocabulary).
            label_tokens=(("supported", 209), ("unsupported", 3)),
            chunk_tokens=650,  # the authors' ~500 words, in T5 tokens
            max_length=2048,
            source="lytang/MiniCheck-Flan-T5-Large",
            reported="LLM-AggreFact balanced accuracy 74.7 (Tang et al. 2024, MiniCheck)",
        ),
        JudgeSpec(
            name="bespoke-minicheck",
            kind="causal-lm",
            system=_MINICHECK_SYSTEM,
            template="Document: {premise}\nClaim: {claim}",
            label_tokens=(("supported", "Yes"), ("unsupported", "No")),
            chunk_tokens=32_000,
            max_length=32_768,
            source="bespokelabs/Bespoke-MiniCheck-7B (or any local instruct LLM)",
            reported="LLM-AggreFact balanced accuracy 77.2 (LLM-AggreFact leaderboard, 2024)",
        ),
        JudgeSpec(
            name="llm-3way",
            kind="causal-lm",
            system=_THREE_WAY_SYSTEM,
            template="Document: {premise}\nClaim: {claim}",
            label_tokens=(
                ("supported", "Yes"),
                ("unsupported", "Maybe"),
                ("contradicted", "No"),
            ),
            source="any local instruct LLM (a chat template in its tokenizer)",
            reported="not measured by its authors; a 3-way prompt that also yields Contradiction",
        ),
        JudgeSpec(
            name="hhem",
            kind="t5-token",
            template=_HHEM_TEMPLATE,
            supported_index=1,
            base_model="foundation",
            source="vectara/hallucination_evaluation_model (HHEM-2.1-Open) + google/flan-t5-base "
            "config and tokenizer in its foundation/ folder",
            reported="LLM-AggreFact balanced accuracy ~72 (Vectara, HHEM-2.1-Open model card)",
        ),
        JudgeSpec(
            name="true-t5",
            kind="seq2seq",
            template="premise: {premise} hypothesis: {claim}",
            label_tokens=(("supported", "1"), ("unsupported", "0")),
            source="google/t5_xxl_true_nli_mixture (TRUE, Honovich et al. 2022)",
            reported="TRUE benchmark ROC AUC ~83 (Honovich et al. 2022)",
        ),
    )
}
"""The built-in judges (``ragcheck-local judges`` lists them)."""


def _fail(where: str, field_name: str, reason: str) -> InputError:
    return InputError(reason, record=where, field=field_name)


def spec_from_dict(data: Mapping[str, Any], where: str) -> JudgeSpec:
    """A validated :class:`JudgeSpec` from a mapping (``where`` names the file in errors)."""
    if not isinstance(data, Mapping):
        raise _fail(where, "(top)", f"expected a mapping, found {show_value(data)}")
    known = {f.name for f in fields(JudgeSpec)} - {"origin"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise _fail(where, unknown[0], f"unknown field; expected one of {', '.join(sorted(known))}")
    for required in ("name", "kind"):
        if not isinstance(data.get(required), str) or not data[required].strip():
            raise _fail(
                where,
                required,
                f"expected a non-empty string, found {show_value(data.get(required))}",
            )
    kind = data["kind"]
    if kind not in JUDGE_KINDS:
        raise _fail(
            where,
            "kind",
            f"unknown kind {show_value(kind)}; expected one of {', '.join(JUDGE_KINDS)}",
        )
    version = data.get("version", SPEC_VERSION)
    if version != SPEC_VERSION:
        raise _fail(where, "version", f"expected {SPEC_VERSION}, found {show_value(version)}")
    for name in ("template", "system", "base_model", "source", "reported"):
        value = data.get(name)
        if value is not None and not isinstance(value, str):
            raise _fail(where, name, f"expected a string, found {show_value(value)}")
    for name in ("chunk_tokens", "max_length", "supported_index"):
        value = data.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise _fail(where, name, f"expected a non-negative integer, found {show_value(value)}")
    if data.get("chunk_tokens") is not None and data["chunk_tokens"] < 16:
        raise _fail(where, "chunk_tokens", f"must be >= 16, found {data['chunk_tokens']}")
    if data.get("aggregate", "max") != "max":
        raise _fail(
            where, "aggregate", f"expected 'max', found {show_value(data.get('aggregate'))}"
        )
    labels = _label_tokens(data.get("label_tokens"), where)
    spec = JudgeSpec(**{**dict(data), "label_tokens": labels, "version": version, "origin": where})
    _check_kind_fields(spec, where)
    return spec


def _label_tokens(value: Any, where: str) -> tuple[tuple[str, str | int], ...]:
    if value is None:
        return ()
    pairs = list(value.items()) if isinstance(value, Mapping) else value
    if not isinstance(pairs, list | tuple):
        raise _fail(
            where, "label_tokens", f"expected a mapping role: word-or-id, found {show_value(value)}"
        )
    out: list[tuple[str, str | int]] = []
    for pair in pairs:
        if not (isinstance(pair, list | tuple) and len(pair) == 2):
            raise _fail(
                where, "label_tokens", f"expected (role, token) pairs, found {show_value(pair)}"
            )
        role, token = pair
        if role not in LABEL_ROLES:
            raise _fail(
                where,
                f"label_tokens.{role}",
                f"unknown role; expected one of {', '.join(LABEL_ROLES)}",
            )
        if isinstance(token, bool) or not isinstance(token, str | int) or token == "":
            raise _fail(
                where,
                f"label_tokens.{role}",
                f"expected a word or a token id, found {show_value(token)}",
            )
        if isinstance(token, int) and token < 0:
            raise _fail(where, f"label_tokens.{role}", f"a token id must be >= 0, found {token}")
        out.append((role, token))
    roles = [r for r, _ in out]
    if len(set(roles)) != len(roles):
        raise _fail(where, "label_tokens", f"a role is given twice: {roles}")
    # One order (the roles'), so a spec means the same whatever order its file lists them in.
    return tuple(sorted(out, key=lambda pair: LABEL_ROLES.index(pair[0])))


def _check_kind_fields(spec: JudgeSpec, where: str) -> None:
    """Fields each kind needs, and fields it must not have."""
    if spec.kind == "nli":
        for name in ("template", "system", "supported_index", "base_model"):
            if getattr(spec, name) is not None:
                raise _fail(
                    where,
                    name,
                    "an 'nli' judge reads the tokenizer's pair template and config.id2label; "
                    "remove this field",
                )
        if spec.label_tokens:
            raise _fail(
                where, "label_tokens", "an 'nli' judge reads config.id2label; remove this field"
            )
        return
    if not spec.template:
        raise _fail(
            where,
            "template",
            f"a {spec.kind!r} judge needs an input template with {{premise}} and {{claim}}",
        )
    for placeholder in ("{premise}", "{claim}"):
        if spec.template.count(placeholder) != 1:
            raise _fail(
                where,
                "template",
                f"must hold {placeholder} exactly once, found {spec.template.count(placeholder)}",
            )
    if spec.kind in ("classifier", "t5-token"):
        if spec.supported_index not in (0, 1):
            raise _fail(
                where,
                "supported_index",
                f"a {spec.kind!r} judge needs supported_index 0 or 1 (of 2 outputs), found "
                f"{show_value(spec.supported_index)}",
            )
        if spec.label_tokens:
            raise _fail(
                where,
                "label_tokens",
                f"a {spec.kind!r} judge reads output {spec.supported_index}; remove this field",
            )
    else:
        roles = set(spec.roles)
        missing = [r for r in ("supported", "unsupported") if r not in roles]
        if missing:
            raise _fail(
                where,
                f"label_tokens.{missing[0]}",
                f"a {spec.kind!r} judge needs label tokens for supported and unsupported",
            )
        if spec.supported_index is not None:
            raise _fail(
                where,
                "supported_index",
                f"a {spec.kind!r} judge reads label tokens; remove this field",
            )
    if spec.system is not None and spec.kind != "causal-lm":
        raise _fail(where, "system", "only a 'causal-lm' judge has a system message")
    if spec.base_model is not None and spec.kind != "t5-token":
        raise _fail(where, "base_model", "only a 't5-token' judge reads a base model")


def load_spec(name_or_file: str | None) -> JudgeSpec:
    """A preset by name (:data:`PRESETS`), or a spec file (``.json``, ``.yaml``, ``.yml``);
    None → the ``nli`` preset. Errors name the file and the field (exit code 2)."""
    if name_or_file is None or name_or_file == DEFAULT_JUDGE:
        return PRESETS[DEFAULT_JUDGE]
    if name_or_file in PRESETS:
        return PRESETS[name_or_file]
    path = Path(name_or_file).expanduser()
    if not path.is_file():
        raise InputError(
            f"no judge preset or spec file {name_or_file!r}; presets: {', '.join(PRESETS)}",
            field="--judge",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", record=str(path), field="--judge") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InputError(f"not valid YAML: {exc}", record=str(path), field="(top)") from None
    else:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise InputError(f"not valid JSON: {exc}", record=str(path), field="(top)") from None
    return spec_from_dict(data, str(path))


def spec_table() -> list[dict[str, str]]:
    """One row per preset: name, kind, where the weights come from, reported quality."""
    return [
        {"name": s.name, "kind": s.kind, "source": s.source, "reported": s.reported}
        for s in PRESETS.values()
    ]


__all__ = [
    "DEFAULT_JUDGE",
    "JUDGE_KINDS",
    "LABEL_ROLES",
    "PRESETS",
    "JudgeSpec",
    "load_spec",
    "spec_from_dict",
    "spec_table",
]
