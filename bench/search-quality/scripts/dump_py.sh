#!/usr/bin/env bash
# The PyPI servers: each in its own virtualenv (their `mcp` requirements conflict), started
# over stdio with dummy settings, tools/list dumped to $WORK/dumps/<key>.json.
set -u
export PYTHONHASHSEED=0   # mcp-atlassian builds some defaults from a set: fix their order
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/tmp/sq}
PY=${PY:-python3}
mkdir -p "$WORK/dumps" "$WORK/gitrepo"
git -C "$WORK/gitrepo" init -q 2>/dev/null
venv() {  # venv NAME REQUIREMENT...
  local v="$WORK/venv-$1"; shift
  [ -x "$v/bin/python" ] || { "$PY" -m venv "$v" && "$v/bin/pip" install -q "$@" > "$v.log" 2>&1; }
}
dump() {  # dump KEY VENV [--env K=V ...] -- COMMAND...
  local key=$1 v=$2; shift 2
  timeout 120 python3 "$HERE/dump_tools.py" "$WORK/dumps/$key.json" "$@" || echo "$key: dump failed"
}
venv git mcp-server-git==2026.10.19
dump git git -- "$WORK/venv-git/bin/mcp-server-git" --repository "$WORK/gitrepo"
venv fetch mcp-server-fetch==2026.10.24
dump fetch fetch -- "$WORK/venv-fetch/bin/mcp-server-fetch"
venv time mcp-server-time==2026.10.19
dump time time -- "$WORK/venv-time/bin/mcp-server-time" --local-timezone UTC
venv sqlite "mcp<2" mcp-server-sqlite==2025.4.25
dump sqlite sqlite -- "$WORK/venv-sqlite/bin/mcp-server-sqlite" --db-path "$WORK/test.db"
venv atl "mcp<2" mcp-atlassian==0.23.1
dump atlassian atl --env JIRA_URL=https://example.atlassian.net --env JIRA_USERNAME=a@example.com \
  --env JIRA_API_TOKEN=dummy --env CONFLUENCE_URL=https://example.atlassian.net/wiki \
  --env CONFLUENCE_USERNAME=a@example.com --env CONFLUENCE_API_TOKEN=dummy --env TOOLSETS=all \
  -- "$WORK/venv-atl/bin/mcp-atlassian"
venv awsdocs awslabs.aws-documentation-mcp-server==1.2.3
dump awsdocs awsdocs -- "$WORK/venv-awsdocs/bin/awslabs.aws-documentation-mcp-server"
