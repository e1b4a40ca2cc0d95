#!/usr/bin/env bash
# Installs each npm MCP server at the pinned version into $WORK/inst/<key> (with
# --ignore-scripts: no browser or binary downloads), starts it over stdio with dummy
# credentials and dumps its tools/list answer to $WORK/dumps/<key>.json.
# Usage: scripts/dump_all.sh [KEY...]   (default: every line of the table below)
# Needs: node (20; NODE can point at node 22), npm, python3. Network: the npm registry only.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/tmp/sq}
NODE=${NODE:-node}
mkdir -p "$WORK/inst" "$WORK/dumps"
# key | package@version | bin (under node_modules/.bin; - = install only) | args | env (K=V,K=V)
TABLE=$(cat <<'T'
filesystem|@modelcontextprotocol/server-filesystem@2026.8.31|mcp-server-filesystem|/tmp|
memory|@modelcontextprotocol/server-memory@2026.8.31|mcp-server-memory||MEMORY_FILE_PATH=/tmp/sq-memory.json
everything|@modelcontextprotocol/server-everything@2026.8.31|mcp-server-everything|stdio|
sequentialthinking|@modelcontextprotocol/server-sequential-thinking@2026.8.31|mcp-server-sequential-thinking||
github|@modelcontextprotocol/server-github@2025.4.8|mcp-server-github||GITHUB_PERSONAL_ACCESS_TOKEN=dummy
gitlab|@modelcontextprotocol/server-gitlab@2025.4.25|mcp-server-gitlab||GITLAB_PERSONAL_ACCESS_TOKEN=dummy
slack|@modelcontextprotocol/server-slack@2025.4.25|mcp-server-slack||SLACK_BOT_TOKEN=dummy,SLACK_TEAM_ID=T0
postgres|@modelcontextprotocol/server-postgres@0.6.2|mcp-server-postgres|postgresql://127.0.0.1:1/none|
puppeteer|@modelcontextprotocol/server-puppeteer@2025.5.12|mcp-server-puppeteer||
brave|@modelcontextprotocol/server-brave-search@0.6.2|mcp-server-brave-search||BRAVE_API_KEY=dummy
gmaps|@modelcontextprotocol/server-google-maps@0.6.2|mcp-server-google-maps||GOOGLE_MAPS_API_KEY=dummy
redis|@modelcontextprotocol/server-redis@2025.4.25|-|-|
gdrive|@modelcontextprotocol/server-gdrive@2025.1.14|-|-|
awskb|@modelcontextprotocol/server-aws-kb-retrieval@0.6.2|mcp-server-aws-kb-retrieval||AWS_ACCESS_KEY_ID=dummy,AWS_SECRET_ACCESS_KEY=dummy,AWS_REGION=us-east-1
everart|@modelcontextprotocol/server-everart@0.6.2|mcp-server-everart||EVERART_API_KEY=dummy
notion|@notionhq/notion-mcp-server@2.5.2|notion-mcp-server||NOTION_TOKEN=dummy
playwright|@playwright/mcp@0.0.83|playwright-mcp||
sentry|@sentry/mcp-server@0.36.0|sentry-mcp|--access-token=dummy|
kubernetes|mcp-server-kubernetes@4.1.7|mcp-server-kubernetes||
linear|linear-mcp-server@0.1.0|linear-mcp-server||LINEAR_API_KEY=dummy
firecrawl|firecrawl-mcp@3.26.0|firecrawl-mcp||FIRECRAWL_API_KEY=dummy
hubspot|@hubspot/mcp-server@0.4.0|mcp-hubspot||PRIVATE_APP_ACCESS_TOKEN=dummy
context7|@upstash/context7-mcp@4.1.1|context7-mcp||
mongodb|mongodb-mcp-server@3.0.4|mongodb-mcp-server||
elasticsearch|@elastic/mcp-server-elasticsearch@0.3.1|mcp-server-elasticsearch||ES_URL=http://127.0.0.1:1,ES_API_KEY=dummy
tavily|tavily-mcp@0.2.22|tavily-mcp||TAVILY_API_KEY=dummy
exa|exa-mcp-server@3.4.1|exa-mcp-server||EXA_API_KEY=dummy
neon|@neondatabase/mcp-server-neon@0.6.5|mcp-server-neon|start dummy|
browserbase|@browserbasehq/mcp-server-browserbase@2.4.3|mcp-server-browserbase||BROWSERBASE_API_KEY=dummy,BROWSERBASE_PROJECT_ID=dummy
T
)
want=" $* "
while IFS='|' read -r key spec bin args envs; do
  [ -z "$key" ] && continue
  if [ $# -gt 0 ] && [[ "$want" != *" $key "* ]]; then continue; fi
  dir="$WORK/inst/$key"
  if [ ! -d "$dir/node_modules" ]; then
    mkdir -p "$dir" && (cd "$dir" && echo '{}' > package.json &&
      npm install --ignore-scripts --no-audit --no-fund "$spec" > install.log 2>&1) ||
      { echo "$key: npm install failed (see $dir/install.log)"; continue; }
  fi
  [ "$bin" = "-" ] && continue   # installed only; extracted below
  entry="$dir/node_modules/.bin/$bin"
  [ -e "$entry" ] || entry="$dir/node_modules/$bin"
  envargs=()
  IFS=',' read -ra kvs <<< "$envs"
  for kv in "${kvs[@]}"; do [ -n "$kv" ] && envargs+=(--env "$kv"); done
  # shellcheck disable=SC2086
  (cd "$dir" && timeout 90 python3 "$HERE/dump_tools.py" "$WORK/dumps/$key.json" "${envargs[@]}" -- \
    "$NODE" "$(readlink -f "$entry")" $args) || echo "$key: dump failed (see $WORK/dumps/$key.json.stderr)"
done <<< "$TABLE"

# Stripe: @stripe/mcp 0.3 and @stripe/agent-toolkit 0.9 only proxy Stripe's hosted server, so the
# definitions come from @stripe/agent-toolkit 0.7.12, the last version that carries them.
if [ $# -eq 0 ] || [[ "$want" == *" stripe "* ]]; then
  dir="$WORK/inst/stripe-toolkit"
  if [ ! -d "$dir/node_modules" ]; then
    mkdir -p "$dir" && (cd "$dir" && echo '{}' > package.json &&
      npm install --ignore-scripts --no-audit --no-fund @stripe/agent-toolkit@0.7.12 stripe openai zod > install.log 2>&1)
  fi
  (cd "$dir" && "$NODE" "$HERE/dump_stripe_toolkit.js" "$WORK/dumps/stripe.json")
fi

# Two servers need a live service before they answer tools/list; their tool arrays are
# plain object literals, cut out of the built file.
for pair in "redis|@modelcontextprotocol/server-redis/dist/index.js" "gdrive|@modelcontextprotocol/server-gdrive/dist/index.js"; do
  key=${pair%%|*}; file=${pair#*|}
  if [ $# -eq 0 ] || [[ "$want" == *" $key "* ]]; then
    (cd "$WORK/inst/$key/node_modules" && "$NODE" "$HERE/extract_literal.js" "$file" "$WORK/dumps/$key.json")
  fi
done
