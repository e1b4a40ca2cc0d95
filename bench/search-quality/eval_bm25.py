#!/usr/bin/env python3
"""Pure-Python BM25 baseline over catalog.json, scored on queries.json (standard library only).

    python3 eval_bm25.py [--k 5] [--name-boost 1] [--failures] [--json]

Each tool is one bag of words: its name, title, description, and the names and descriptions
of its parameters (every property at any depth of inputSchema). Tokens: split on anything
that is not a letter or digit (so `_` and `-` too) and on camelCase humps, lowercased; no
stemming, no stop words, no synonyms. Scoring is BM25 Okapi as in the rank_bm25 package
(k1 = 1.5, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)), negative idfs floored at
0.25 x mean idf). `--name-boost N` repeats the name's tokens N times (1 = plain).
Ties are broken by catalog order (stable sort).
"""
import argparse
import json
import math
import os
import re
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def tokenize(text):
    return [m.lower() for word in re.split(r"[^A-Za-z0-9]+", text) for m in CAMEL.findall(word)]


def schema_text(schema, out):
    """Names and descriptions of every property, at any depth."""
    if isinstance(schema, dict):
        for name, sub in (schema.get("properties") or {}).items():
            out.append(name)
            if isinstance(sub, dict) and isinstance(sub.get("description"), str):
                out.append(sub["description"])
        for key, sub in schema.items():
            if key != "description":
                schema_text(sub, out)
    elif isinstance(schema, list):
        for sub in schema:
            schema_text(sub, out)
    return out


def document(tool, name_boost):
    parts = [tool["name"]] * name_boost + [tool.get("title", ""), tool["description"]]
    return tokenize(" ".join(parts + schema_text(tool["inputSchema"], [])))


class BM25:
    def __init__(self, docs, k1=1.5, b=0.75, epsilon=0.25):
        self.k1, self.b = k1, b
        self.tf = [Counter(d) for d in docs]
        self.len = [len(d) for d in docs]
        self.avgdl = sum(self.len) / len(docs)
        df = Counter(t for d in docs for t in set(d))
        n = len(docs)
        self.idf = {t: math.log((n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        floor = epsilon * sum(self.idf.values()) / len(self.idf)
        self.idf = {t: (v if v >= 0 else floor) for t, v in self.idf.items()}

    def scores(self, query):
        out = []
        for tf, dl in zip(self.tf, self.len):
            s = 0.0
            for t in query:
                f = tf.get(t, 0)
                if f:
                    s += self.idf[t] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * dl / self.avgdl))
            out.append(s)
        return out


# Only for the breakdown below, not for ranking.
STOP = set("a an the of to in on for and or is are be by with from at as it its this that these those "
           "my our your me i we you what which who how do does did can any all into about so up "
           "there then than have has was were will just only not get give show make let".split())


def overlap_class(query, tools):
    """`name`: the query shares a content word with a relevant tool's name or title;
    `text`: only with its description or parameters; `none`: with nothing (synonyms only)."""
    words = {w for w in tokenize(query) if w not in STOP and not w.isdigit()}
    if any(words & set(tokenize(t["name"] + " " + t.get("title", ""))) for t in tools):
        return "name"
    return "text" if any(words & set(document(t, 1)) for t in tools) else "none"


def evaluate(catalog, queries, k=5, name_boost=1):
    names = [t["name"] for t in catalog]
    bm25 = BM25([document(t, name_boost) for t in catalog])
    by_name = {t["name"]: t for t in catalog}
    r1 = rk = full = mrr = 0.0
    failures, classes = [], {}
    for q in queries:
        s = bm25.scores(tokenize(q["query"]))
        top = [names[i] for i in sorted(range(len(names)), key=lambda i: -s[i])[:k] if s[i] > 0]
        rel = set(q["relevant"])
        ranks = [i + 1 for i, n in enumerate(top) if n in rel]
        r1 += bool(ranks and ranks[0] == 1)
        rk += bool(ranks)
        full += len(ranks) / min(len(rel), k)
        mrr += 1 / ranks[0] if ranks else 0
        c = classes.setdefault(overlap_class(q["query"], [by_name[n] for n in rel]), [0, 0])
        c[0] += 1
        c[1] += bool(ranks)
        if not ranks or ranks[0] > 1:
            failures.append({"query": q["query"], "relevant": q["relevant"], "top": top,
                             "first_relevant_rank": ranks[0] if ranks else None})
    n = len(queries)
    return {"queries": n, "tools": len(catalog), "k": k, "recall@1": r1 / n, f"recall@{k}": rk / n,
            f"full_recall@{k}": full / n, f"MRR@{k}": mrr / n,
            **{f"recall@{k} [{c}: {classes[c][0]} queries]": classes[c][1] / classes[c][0]
               for c in ("name", "text", "none") if c in classes}}, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--catalog", default=os.path.join(HERE, "catalog.json"))
    ap.add_argument("--queries", default=os.path.join(HERE, "queries.json"))
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--name-boost", type=int, default=1)
    ap.add_argument("--failures", action="store_true", help="list queries whose first hit is wrong")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    metrics, failures = evaluate(json.load(open(a.catalog)), json.load(open(a.queries)), a.k, a.name_boost)
    if a.json:
        print(json.dumps({"metrics": metrics, "failures": failures}, indent=1))
        return
    for key, value in metrics.items():
        print(f"{key:>28}: {value:.3f}" if isinstance(value, float) else f"{key:>28}: {value}")
    if a.failures:
        for f in failures:
            rank = f["first_relevant_rank"]
            print(f"\n[{'miss' if rank is None else f'rank {rank}'}] {f['query']}\n"
                  f"   want: {', '.join(f['relevant'])}\n   got:  {', '.join(f['top'])}")


if __name__ == "__main__":
    main()
