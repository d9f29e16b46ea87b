"""Tiny NLI cross-encoders built and saved by the tests (no NLI weights ship offline): plumbing, not language.

A one-layer BERT over the packaged MiniLM's tokenizer, labels as real NLI models name them.
`leaning` zeroes the classifier's weights and sets its bias, so every pair gets the same
probabilities, dominated by that label: a model whose verdict a test can predict.
"""

from __future__ import annotations

from pathlib import Path

LABELS = {0: "contradiction", 1: "entailment", 2: "neutral"}


def build(
    folder: Path, *, leaning: str | None = None, labels: dict[int, str] | None = None, seed: int = 0
) -> Path:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from ragtrack.clients.embeddings import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model(None))
    labels = labels or LABELS
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        id2label=labels,  # num_labels follows from it
        label2id={v: k for k, v in labels.items()},
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config)
    if leaning is not None:
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.copy_(
                torch.tensor([8.0 if labels[i] == leaning else 0.0 for i in range(len(labels))])
            )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
