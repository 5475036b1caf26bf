"""Tiny random models built in-process for tests (no downloads)."""

from __future__ import annotations

from pathlib import Path

WORDS = (
    "the a an is are was were not no yes man woman dog cat river nile amazon longest world "
    "africa egypt flows into sea paris france capital city of in on and or it its this that "
    "blue red flag peace blood star playing guitar music stage nobody famous person people "
    "東京 日本 首都 です 。 人口 多い 富士山 高い 山"
).split()
ID2LABEL_3 = {0: "entailment", 1: "neutral", 2: "contradiction"}
ARCHS = ("bert", "roberta", "deberta-v2", "xlm-roberta", "modernbert")


def build_tokenizer(kind: str, max_length: int = 128):
    """A WordPiece (BERT-style) or BPE (RoBERTa-style) fast tokenizer over a tiny vocabulary."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    chars = sorted(
        {ch for w in WORDS for ch in w} | set("abcdefghijklmnopqrstuvwxyz0123456789.,!?'")
    )
    if kind == "wordpiece":
        specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        vocab = {
            t: i
            for i, t in enumerate(
                specials + list(dict.fromkeys(WORDS + chars + ["##" + c for c in chars]))
            )
        }
        tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
        )
        return PreTrainedTokenizerFast(
            tokenizer_object=tok,
            unk_token="[UNK]",
            pad_token="[PAD]",
            cls_token="[CLS]",
            sep_token="[SEP]",
            mask_token="[MASK]",
            model_max_length=max_length,
        ), len(vocab)
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    vocab = {t: i for i, t in enumerate(specials + list(dict.fromkeys(WORDS + chars)))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    )
    tok.post_processor = processors.RobertaProcessing(
        ("</s>", 2), ("<s>", 0), add_prefix_space=False
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        cls_token="<s>",
        sep_token="</s>",
        mask_token="<mask>",
        model_max_length=max_length,
    )
    fast.model_input_names = ["input_ids", "attention_mask"]
    return fast, len(vocab)


def build_nli_model(
    path: Path,
    arch: str = "bert",
    *,
    id2label: dict[int, str] | None = None,
    max_length: int = 128,
    seed: int = 0,
) -> Path:
    """Save a tiny random sequence-classification model of ``arch`` with a tokenizer."""
    import torch
    from transformers import AutoModelForSequenceClassification

    torch.manual_seed(seed)
    id2label = id2label or ID2LABEL_3
    kind = "wordpiece" if arch in ("bert", "deberta-v2") else "bpe"
    tokenizer, vocab_size = build_tokenizer(kind, max_length)
    common = dict(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
        pad_token_id=tokenizer.pad_token_id,
    )
    if arch == "bert":
        from transformers import BertConfig

        config = BertConfig(max_position_embeddings=max_length, **common)
    elif arch == "roberta":
        from transformers import RobertaConfig

        config = RobertaConfig(
            max_position_embeddings=max_length + 2,
            type_vocab_size=1,
            bos_token_id=0,
            eos_token_id=2,
            **common,
        )
    elif arch == "xlm-roberta":
        from transformers import XLMRobertaConfig

        config = XLMRobertaConfig(
            max_position_embeddings=max_length + 2,
            type_vocab_size=1,
            bos_token_id=0,
            eos_token_id=2,
            **common,
        )
    elif arch == "deberta-v2":
        from transformers import DebertaV2Config

        config = DebertaV2Config(
            max_position_embeddings=max_length,
            type_vocab_size=0,
            relative_attention=True,
            position_buckets=16,
            pos_att_type=["p2c", "c2p"],
            **common,
        )
    elif arch == "modernbert":
        from transformers import ModernBertConfig

        common.pop("pad_token_id")
        config = ModernBertConfig(
            max_position_embeddings=max_length,
            global_attn_every_n_layers=1,
            local_attention=16,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id,
            cls_token_id=tokenizer.cls_token_id,
            sep_token_id=tokenizer.sep_token_id,
            **common,
        )
    else:
        raise ValueError(f"unknown arch {arch!r}")
    model = AutoModelForSequenceClassification.from_config(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build_embedding_model(path: Path, nli_model: Path) -> Path:
    """A tiny sentence-transformers model (the tiny NLI model's encoder, mean pooling)."""
    from sentence_transformers import SentenceTransformer, models

    word = models.Transformer(str(nli_model))
    pooling = models.Pooling(word.get_word_embedding_dimension(), pooling_mode="mean")
    SentenceTransformer(modules=[word, pooling], device="cpu").save(str(path))
    return path


# -- judge kinds beside NLI: the package's stand-ins (ragcheck_local.dev.standins) at width 32 --


def build_t5_judge(path: Path, *, seed: int = 0, max_length: int = 128) -> Path:
    """A tiny random T5 seq2seq model (vocabulary over 209 ids, so MiniCheck's label ids fit)."""
    from ragcheck_local.dev.standins import build_judge_standin

    return build_judge_standin("seq2seq", path, words=WORDS, seed=seed, max_length=max_length)


def build_hhem_judge(path: Path, *, seed: int = 0, max_length: int = 128) -> Path:
    """HHEM's layout: ``t5.``-prefixed token-classifier weights, base config in foundation/."""
    from ragcheck_local.dev.standins import build_judge_standin

    return build_judge_standin("t5-token", path, words=WORDS, seed=seed, max_length=max_length)


def build_chat_lm(path: Path, *, seed: int = 0, max_length: int = 256) -> Path:
    """A tiny random Llama-architecture causal LM with a ChatML template."""
    from ragcheck_local.dev.standins import build_judge_standin

    return build_judge_standin("causal-lm", path, words=WORDS, seed=seed, max_length=max_length)
