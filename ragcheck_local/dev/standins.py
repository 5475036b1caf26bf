"""Random stand-in models of each judge kind, built offline in seconds: a word-level tokenizer
over a given vocabulary and a model of the kind's architecture at a chosen width. The GPU
benchmark (:mod:`.bench_judges`) uses them at realistic width; the tests at width 32."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML, as SmolLM2 and Qwen models write it."""
STANDIN_KINDS = ("nli", "classifier", "seq2seq", "t5-token", "causal-lm")
_JUDGE_WORDS = (
    "yes no maybe document claim premise hypothesis predict determine if true given system "
    "user assistant 0 1 : ?"
).split()


def word_tokenizer(
    style: str, words: Iterable[str], *, vocab_size: int = 300, max_length: int = 512
) -> Any:
    """A lower-casing word-level fast tokenizer: ``bert`` ([CLS] A [SEP] B [SEP]), ``roberta``
    (<s> A </s></s> B </s>), ``t5`` (appends </s>; pad 0, eos 1) or ``chat`` (ChatML
    specials and template; adds nothing to a string). Padded with filler words to
    ``vocab_size``."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    words = [w.lower() for w in words]
    chars = sorted(
        {ch for w in words for ch in w} | set("abcdefghijklmnopqrstuvwxyz0123456789.,!?'")
    )
    specials = {
        "bert": ["[PAD]", "[UNK]", "[CLS]", "[SEP]"],
        "roberta": ["<s>", "<pad>", "</s>", "<unk>"],
        "t5": ["<pad>", "</s>", "<unk>"],
        "chat": ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"],
    }[style]
    unique = list(dict.fromkeys([*words, *_JUDGE_WORDS, *chars]))
    fill = [f"tok{i}" for i in range(max(0, vocab_size - len(specials) - len(unique)))]
    vocab = {t: i for i, t in enumerate(specials + unique + fill)}
    unk = specials[1] if style == "bert" else specials[-1]
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    )
    tok.add_special_tokens(specials)
    names: dict[str, str] = {"unk_token": unk}
    if style == "bert":
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
        )
        names |= {
            "pad_token": "[PAD]",
            "cls_token": "[CLS]",
            "sep_token": "[SEP]",
            "eos_token": "[SEP]",
        }
    elif style == "roberta":
        tok.post_processor = processors.RobertaProcessing(
            ("</s>", 2), ("<s>", 0), add_prefix_space=False
        )
        names |= {
            "bos_token": "<s>",
            "eos_token": "</s>",
            "pad_token": "<pad>",
            "cls_token": "<s>",
            "sep_token": "</s>",
        }
    elif style == "t5":
        tok.post_processor = processors.TemplateProcessing(
            single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 1)]
        )
        names |= {"pad_token": "<pad>", "eos_token": "</s>"}
    else:
        names |= {
            "bos_token": "<|im_start|>",
            "eos_token": "<|im_end|>",
            "pad_token": "<|endoftext|>",
        }
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=max_length, **names)
    if style == "chat":
        fast.chat_template = CHAT_TEMPLATE
    fast.model_input_names = (
        ["input_ids", "attention_mask"]
        if style != "bert"
        else ["input_ids", "token_type_ids", "attention_mask"]
    )
    return fast


def _t5_config(vocab: int, width: int, layers: int, **extra: Any) -> Any:
    from transformers import T5Config

    return T5Config(
        vocab_size=vocab,
        d_model=width,
        d_kv=max(width // 4, 8) if width < 256 else 64,
        d_ff=width * 2,
        num_layers=layers,
        num_decoder_layers=layers,
        num_heads=max(width // 64, 2),
        relative_attention_num_buckets=8 if width < 256 else 32,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
        **extra,
    )


def build_judge_standin(
    kind: str,
    path: str | Path,
    *,
    words: Iterable[str] = (),
    width: int = 32,
    layers: int = 2,
    vocab_size: int = 300,
    max_length: int = 512,
    seed: int = 0,
) -> Path:
    """Save a random model of ``kind`` (:data:`STANDIN_KINDS`) with its tokenizer to ``path``.

    ``nli``: a 3-way BERT; ``classifier``: a 2-label RoBERTa (MiniCheck's layout);
    ``seq2seq``: a T5; ``t5-token``: HHEM's layout (``t5.``-prefixed token-classifier
    weights, the base T5 config and tokenizer in ``foundation/``); ``causal-lm``: a Llama with
    a ChatML template."""
    import json

    import torch

    torch.manual_seed(seed)
    out = Path(path)
    heads = max(width // 64, 2)
    if kind in ("nli", "classifier"):
        from transformers import AutoModelForSequenceClassification, BertConfig, RobertaConfig

        style = "bert" if kind == "nli" else "roberta"
        tokenizer = word_tokenizer(style, words, vocab_size=vocab_size, max_length=max_length)
        labels = (
            {0: "entailment", 1: "neutral", 2: "contradiction"}
            if kind == "nli"
            else {0: "LABEL_0", 1: "LABEL_1"}
        )
        common = dict(
            vocab_size=len(tokenizer), hidden_size=width, num_hidden_layers=layers,
            num_attention_heads=heads, intermediate_size=width * 2, num_labels=len(labels),
            id2label=labels, label2id={v: k for k, v in labels.items()},
            pad_token_id=tokenizer.pad_token_id,
        )  # fmt: skip
        if kind == "nli":
            config = BertConfig(max_position_embeddings=max_length, **common)
        else:
            config = RobertaConfig(
                max_position_embeddings=max_length + 2, type_vocab_size=1, bos_token_id=0,
                eos_token_id=2, **common,
            )  # fmt: skip
        AutoModelForSequenceClassification.from_config(config).save_pretrained(out)
    elif kind == "seq2seq":
        from transformers import T5ForConditionalGeneration

        tokenizer = word_tokenizer("t5", words, vocab_size=vocab_size, max_length=max_length)
        T5ForConditionalGeneration(_t5_config(len(tokenizer), width, layers)).save_pretrained(out)
    elif kind == "t5-token":
        from safetensors.torch import save_file
        from transformers import T5ForTokenClassification

        tokenizer = word_tokenizer("t5", words, vocab_size=vocab_size, max_length=max_length)
        config = _t5_config(len(tokenizer), width, layers, num_labels=2)
        model = T5ForTokenClassification(config)
        out.mkdir(parents=True, exist_ok=True)
        state = {f"t5.{k}": v.contiguous() for k, v in model.state_dict().items()}
        state.pop("t5.transformer.encoder.embed_tokens.weight", None)  # tied to shared
        save_file(state, str(out / "model.safetensors"))
        (out / "config.json").write_text(
            json.dumps(
                {"model_type": "HHEMv2", "architectures": ["HHEMv2ForSequenceClassification"]}
            ),
            encoding="utf-8",
        )
        config.save_pretrained(out / "foundation")
        tokenizer.save_pretrained(out / "foundation")
        return out
    elif kind == "causal-lm":
        from transformers import LlamaConfig, LlamaForCausalLM

        tokenizer = word_tokenizer("chat", words, vocab_size=vocab_size, max_length=max_length)
        config = LlamaConfig(
            vocab_size=len(tokenizer), hidden_size=width, intermediate_size=width * 2,
            num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
            max_position_embeddings=max_length, pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        )  # fmt: skip
        LlamaForCausalLM(config).save_pretrained(out)
    else:
        raise ValueError(f"unknown stand-in kind {kind!r}; expected one of {STANDIN_KINDS}")
    tokenizer.save_pretrained(out)
    return out
