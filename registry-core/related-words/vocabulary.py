#!/usr/bin/env python3
"""The software vocabulary the related-words table is restricted to (vocabulary.txt).

A word is in it when it occurs in the documentation comments (`///`, `//!`) of at least
MIN_CRATES crates of a Cargo registry source folder (the Rust ecosystem's own words for what
software does), or in the texts of the tools of the *tuning* part of bench/search-quality
(names, titles, descriptions, parameters): the vocabulary of published MCP tools, never the
held-out part's, never any query.

    python3 vocabulary.py ~/.cargo/registry/src/index.crates.io-*/ > vocabulary.txt

Lowercase ASCII words of 3 to 20 letters; one per line, sorted.
"""

import json
import os
import re
import sys

MIN_CRATES = 3
HERE = os.path.dirname(os.path.abspath(__file__))
CATALOG = os.path.join(HERE, "..", "..", "bench", "search-quality", "catalog.json")
# The tuning part's servers (bench/search-quality/README.md, "Tuning part and held-out part").
TUNING = set(
    "aws_docs aws_kb brave browserbase context7 elasticsearch everart everything exa fetch "
    "filesystem firecrawl gdrive git google_maps kubernetes memory neon playwright postgres "
    "puppeteer redis sentry sqlite stripe tavily thinking".split()
)
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")


def words(text):
    for word in re.split(r"[^A-Za-z]+", text):
        for part in CAMEL.findall(word):
            part = part.lower()
            if 3 <= len(part) <= 20:
                yield part


def crate_words(folder):
    seen = set()
    for root, _, files in os.walk(folder):
        for name in files:
            if not name.endswith(".rs"):
                continue
            try:
                with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                    for line in f:
                        line = line.strip()
                        if line.startswith("///") or line.startswith("//!"):
                            seen.update(words(line[3:]))
            except OSError:
                pass
    return seen


def schema_words(schema, out):
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("description", "title") and isinstance(value, str):
                out.update(words(value))
            elif key == "properties" and isinstance(value, dict):
                for name, prop in value.items():
                    out.update(words(name))
                    schema_words(prop, out)
            elif key not in ("enum", "const", "default", "examples"):
                schema_words(value, out)
    elif isinstance(schema, list):
        for item in schema:
            schema_words(item, out)


def main():
    counts = {}
    for registry in sys.argv[1:]:
        for crate in sorted(os.listdir(registry)):
            for word in crate_words(os.path.join(registry, crate)):
                counts[word] = counts.get(word, 0) + 1
    vocabulary = {w for w, n in counts.items() if n >= MIN_CRATES}
    with open(CATALOG, encoding="utf-8") as f:
        for tool in json.load(f):
            if tool["name"].split("__")[0] not in TUNING:
                continue
            found = set(words(tool["name"] + " " + tool.get("title", "") + " " + tool["description"]))
            schema_words(tool.get("inputSchema", {}), found)
            vocabulary |= found
    for word in sorted(vocabulary):
        print(word)


if __name__ == "__main__":
    main()
