#!/usr/bin/env python3
"""Compares reference.json with bench/search-quality/scripts/minilm_server.py, an older numpy
forward pass of the same model written separately (its own WordPiece, float32, tanh GELU).

    python3 check_against_minilm_server.py MODEL_DIR

For each of the 100 texts: whether the two tokenizations agree, and where they do, the cosine
distance between the vectors, with the old script as it is (tanh GELU) and with its GELU
replaced by the exact one (erf), which isolates the rest of the forward pass. Reports only;
exits 1 if an agreeing text differs by more than 1e-5 with the exact GELU.
"""

import importlib.util
import json
import math
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OLD = os.path.join(HERE, "..", "..", "..", "bench", "search-quality", "scripts", "minilm_server.py")


def main():
    folder = sys.argv[1]
    spec = importlib.util.spec_from_file_location("minilm_server", OLD)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    # The old script reads vocab.txt, which this package does not ship: write it from
    # tokenizer.json's vocabulary, in id order.
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        vocab = json.load(f)["model"]["vocab"]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "vocab.txt"), "w", encoding="utf-8") as f:
            for token, _ in sorted(vocab.items(), key=lambda kv: kv[1]):
                f.write(token + "\n")
        os.symlink(os.path.abspath(os.path.join(folder, "model.safetensors")),
                   os.path.join(tmp, "model.safetensors"))
        weights, vocab = old.load(tmp)
    with open(os.path.join(HERE, "reference.json"), encoding="utf-8") as f:
        reference = json.load(f)

    tanh_gelu = old.gelu
    erf = np.frompyfunc(math.erf, 1, 1)

    def exact_gelu(x):
        return (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)).astype(np.float64))).astype(x.dtype)

    worst = {"tanh": 0.0, "erf": 0.0}
    differ = []
    for row in reference["texts"]:
        text, ids, ref = row["text"], row["ids"], np.array(row["vector"])
        old_ids = old.tokenize(text, vocab)
        if old_ids != ids:
            differ.append((text, ids, old_ids))
            continue
        for name, gelu in (("tanh", tanh_gelu), ("erf", exact_gelu)):
            old.gelu = gelu
            v = np.array(old.embed_one(text, weights, vocab))
            distance = 1 - float(v @ ref) / (np.linalg.norm(v) * np.linalg.norm(ref))
            worst[name] = max(worst[name], distance)
    n = len(reference["texts"])
    print(f"{n - len(differ)} of {n} texts tokenized alike; over those, the largest cosine "
          f"distance to the reference: {worst['tanh']:.2e} (old script as is, tanh GELU), "
          f"{worst['erf']:.2e} (its GELU made exact)")
    inv = {i: t for t, i in vocab.items()}
    for text, ids, old_ids in differ:
        print(f"\n{text!r}\n  tokenizers: {[inv[i] for i in ids][:40]}\n  old:        {[inv[i] for i in old_ids][:40]}")
    sys.exit(1 if worst["erf"] > 1e-5 else 0)


if __name__ == "__main__":
    main()
