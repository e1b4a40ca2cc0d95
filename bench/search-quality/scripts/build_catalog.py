#!/usr/bin/env python3
"""Builds catalog.json from the dumps written by dump_all.sh and dump_py.sh.

    build_catalog.py [DUMPS_DIR] [OUT]    (defaults: /tmp/sq/dumps, ../catalog.json)

Every tool is renamed `<server>__<original name>` (the way MCP hosts namespace the tools of
several servers), so that names are unique and the server is part of the name; the original
name, title, description and inputSchema are kept exactly as the server gave them.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DUMPS = sys.argv[1] if len(sys.argv) > 1 else "/tmp/sq/dumps"
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "catalog.json")

# dump key -> (server prefix, registry, package, version, how, file)
# how: "tools/list" = the running server's answer; "literal" = array cut from the built file;
#      "toolkit" = the package's own OpenAI adapter (getTools()).
SOURCES = {
    "filesystem": ("filesystem", "npm", "@modelcontextprotocol/server-filesystem", "2026.8.31", "tools/list", None),
    "memory": ("memory", "npm", "@modelcontextprotocol/server-memory", "2026.8.31", "tools/list", None),
    "everything": ("everything", "npm", "@modelcontextprotocol/server-everything", "2026.8.31", "tools/list", None),
    "sequentialthinking": ("thinking", "npm", "@modelcontextprotocol/server-sequential-thinking", "2026.8.31", "tools/list", None),
    "github": ("github", "npm", "@modelcontextprotocol/server-github", "2025.4.8", "tools/list", None),
    "gitlab": ("gitlab", "npm", "@modelcontextprotocol/server-gitlab", "2025.4.25", "tools/list", None),
    "slack": ("slack", "npm", "@modelcontextprotocol/server-slack", "2025.4.25", "tools/list", None),
    "postgres": ("postgres", "npm", "@modelcontextprotocol/server-postgres", "0.6.2", "tools/list", None),
    "puppeteer": ("puppeteer", "npm", "@modelcontextprotocol/server-puppeteer", "2025.5.12", "tools/list", None),
    "brave": ("brave", "npm", "@modelcontextprotocol/server-brave-search", "0.6.2", "tools/list", None),
    "gmaps": ("google_maps", "npm", "@modelcontextprotocol/server-google-maps", "0.6.2", "tools/list", None),
    "redis": ("redis", "npm", "@modelcontextprotocol/server-redis", "2025.4.25", "literal", "dist/index.js"),
    "gdrive": ("gdrive", "npm", "@modelcontextprotocol/server-gdrive", "2025.1.14", "literal", "dist/index.js"),
    "awskb": ("aws_kb", "npm", "@modelcontextprotocol/server-aws-kb-retrieval", "0.6.2", "tools/list", None),
    "everart": ("everart", "npm", "@modelcontextprotocol/server-everart", "0.6.2", "tools/list", None),
    "notion": ("notion", "npm", "@notionhq/notion-mcp-server", "2.5.2", "tools/list", None),
    "playwright": ("playwright", "npm", "@playwright/mcp", "0.0.83", "tools/list", None),
    "stripe": ("stripe", "npm", "@stripe/agent-toolkit", "0.7.12", "toolkit", "openai/index.js"),
    "sentry": ("sentry", "npm", "@sentry/mcp-server", "0.36.0", "tools/list", None),
    "kubernetes": ("kubernetes", "npm", "mcp-server-kubernetes", "4.1.7", "tools/list", None),
    "linear": ("linear", "npm", "linear-mcp-server", "0.1.0", "tools/list", None),
    "firecrawl": ("firecrawl", "npm", "firecrawl-mcp", "3.26.0", "tools/list", None),
    "hubspot": ("hubspot", "npm", "@hubspot/mcp-server", "0.4.0", "tools/list", None),
    "context7": ("context7", "npm", "@upstash/context7-mcp", "4.1.1", "tools/list", None),
    "mongodb": ("mongodb", "npm", "mongodb-mcp-server", "3.0.4", "tools/list", None),
    "elasticsearch": ("elasticsearch", "npm", "@elastic/mcp-server-elasticsearch", "0.3.1", "tools/list", None),
    "tavily": ("tavily", "npm", "tavily-mcp", "0.2.22", "tools/list", None),
    "exa": ("exa", "npm", "exa-mcp-server", "3.4.1", "tools/list", None),
    "neon": ("neon", "npm", "@neondatabase/mcp-server-neon", "0.6.5", "tools/list", None),
    "browserbase": ("browserbase", "npm", "@browserbasehq/mcp-server-browserbase", "2.4.3", "tools/list", None),
    "git": ("git", "pypi", "mcp-server-git", "2026.10.19", "tools/list", None),
    "fetch": ("fetch", "pypi", "mcp-server-fetch", "2026.10.24", "tools/list", None),
    "time": ("time", "pypi", "mcp-server-time", "2026.10.19", "tools/list", None),
    "sqlite": ("sqlite", "pypi", "mcp-server-sqlite", "2025.4.25", "tools/list", None),
    "atlassian": ("atlassian", "pypi", "mcp-atlassian", "0.23.1", "tools/list", None),
    "awsdocs": ("aws_docs", "pypi", "awslabs.aws-documentation-mcp-server", "1.2.3", "tools/list", None),
}

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


def main():
    catalog, seen = [], set()
    for key, (prefix, registry, package, version, how, file) in SOURCES.items():
        dump = json.load(open(os.path.join(DUMPS, key + ".json")))
        for tool in dump["tools"]:
            name = f"{prefix}__{tool['name']}"
            assert NAME.match(name), name
            assert name not in seen, name
            seen.add(name)
            source = {"registry": registry, "package": package, "version": version, "how": how}
            if file:
                source["file"] = file
            entry = {"name": name, "original_name": tool["name"]}
            title = tool.get("title") or (tool.get("annotations") or {}).get("title")
            if title:
                entry["title"] = title
            entry["description"] = tool.get("description") or ""
            entry["inputSchema"] = tool.get("inputSchema") or {"type": "object", "properties": {}}
            entry["source"] = source
            catalog.append(entry)
    with open(OUT, "w") as out:
        json.dump(catalog, out, indent=1, ensure_ascii=False)
        out.write("\n")
    print(f"{OUT}: {len(catalog)} tools from {len(SOURCES)} packages")


if __name__ == "__main__":
    main()
