#!/usr/bin/env python3
"""Start an MCP server over stdio and dump its `tools/list` answer (all pages) as JSON.

    dump_tools.py OUT.json -- COMMAND [ARGS...]

Environment variables for the server (dummy credentials) are passed with --env K=V.
Only the standard library is used. The server gets 60 s to answer.
"""
import json
import os
import subprocess
import sys
import threading
import time


def main():
    args = sys.argv[1:]
    env = dict(os.environ)
    out = args.pop(0)
    while args and args[0] == "--env":
        key, _, value = args[1].partition("=")
        env[key] = value
        args = args[2:]
    if args and args[0] == "--":
        args = args[1:]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=open(out + ".stderr", "w"), env=env, text=True, bufsize=1)
    lines = []
    cond = threading.Condition()

    def reader():
        for line in proc.stdout:
            with cond:
                lines.append(line)
                cond.notify_all()
        with cond:
            lines.append(None)
            cond.notify_all()

    threading.Thread(target=reader, daemon=True).start()

    def send(msg):
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()

    def wait_for(msg_id, deadline):
        while True:
            with cond:
                while not lines:
                    left = deadline - time.time()
                    if left <= 0:
                        raise TimeoutError(f"no answer to request {msg_id}")
                    cond.wait(left)
                line = lines.pop(0)
            if line is None:
                raise RuntimeError("server exited")
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("id") == msg_id and ("result" in msg or "error" in msg):
                if "error" in msg:
                    raise RuntimeError(f"error: {msg['error']}")
                return msg["result"]

    deadline = time.time() + 60
    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "search-quality-dump", "version": "0.1"}}})
        init = wait_for(1, deadline)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools, cursor, next_id = [], None, 2
        while True:
            params = {"cursor": cursor} if cursor else {}
            send({"jsonrpc": "2.0", "id": next_id, "method": "tools/list", "params": params})
            page = wait_for(next_id, deadline)
            tools.extend(page.get("tools", []))
            cursor = page.get("nextCursor")
            next_id += 1
            if not cursor:
                break
        json.dump({"serverInfo": init.get("serverInfo"), "tools": tools},
                  open(out, "w"), indent=1, ensure_ascii=False)
        print(f"{out}: {len(tools)} tools ({init.get('serverInfo')})")
    finally:
        proc.kill()


if __name__ == "__main__":
    main()
