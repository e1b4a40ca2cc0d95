#!/usr/bin/env python3
"""An OpenAI-compatible embeddings endpoint that joins two others: an ensemble of two models.

Each text is embedded by both endpoints; each vector is normalised, scaled by the square root
of its model's share, and the two are concatenated. The cosine of two joined vectors is then
the weighted mean of the two models' cosines, so a search that ranks by cosine ranks by both
models at once, with no change to the registry (it sees one embedder).

    python3 minilm_server.py MINILM_DIR 8090 &
    python3 mpnet_server.py MPNET_DIR 8089 &
    python3 ensemble_server.py 8091 http://127.0.0.1:8089/v1 http://127.0.0.1:8090/v1 [SHARE]

SHARE is the first endpoint's share of the mean (0.5 unless given). Then
`search-quality --embedder http://127.0.0.1:8091/v1`.
"""

import json
import math
import sys
import urllib.request

import minilm_server


def embeddings(base, texts):
    request = urllib.request.Request(
        base.rstrip("/") + "/embeddings",
        data=json.dumps({"input": texts, "model": "any"}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=3600) as answer:
        data = json.load(answer)["data"]
    return [item["embedding"] for item in sorted(data, key=lambda item: item["index"])]


def normalised(vector, scale):
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x * scale / norm for x in vector]


def main():
    port, first, second = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    share = float(sys.argv[4]) if len(sys.argv) > 4 else 0.5
    if not 0.0 <= share <= 1.0:
        sys.exit(f"SHARE must be between 0 and 1, not {share}")
    scales = (math.sqrt(share), math.sqrt(1.0 - share))

    def joined(texts):
        return [
            normalised(a, scales[0]) + normalised(b, scales[1])
            for a, b in zip(embeddings(first, texts), embeddings(second, texts))
        ]

    minilm_server.serve(port, joined)


if __name__ == "__main__":
    main()
