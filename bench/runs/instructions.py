#!/usr/bin/env python3
"""Instructions per call of each path of `bench-runs call`, counted by valgrind's callgrind.

Why: on this machine a timed run of the direct call varies from 35 to 69 ns between runs, so
a change of 10% is invisible to `bench-runs call`; an instruction count does not vary. It is
not a time (a cache miss counts as one instruction, an allocator's lock as a few), so the
timed table stays the goal's measure; this is for seeing what a change removed.

Each path is run twice under callgrind, with N and 2N calls: the difference, divided by N, is
what one call costs, without the registry's build and the process's start.

Run (after `cargo build --release --manifest-path bench/runs/Cargo.toml`):

    python3 bench/runs/instructions.py [--calls N] [--binary PATH] [PATH ...]

PATH is one of `direct`, `text`, `value`, `gated`, `gated-one`, `async` (the default: all).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

PATHS = ["direct", "text", "value", "gated", "gated-one", "async"]


def count(binary, path, calls):
    """Instructions of the whole process making `calls` calls of `path`."""
    with tempfile.TemporaryDirectory() as directory:
        out = os.path.join(directory, "callgrind.out")
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                binary,
                "call-loop",
                path,
                str(calls),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        found = re.search(r"Collected : (\d+)", done.stderr)
        if done.returncode != 0 or not found:
            sys.exit(f"callgrind failed on {path}:\n{done.stderr[-2000:]}")
        return int(found.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument(
        "--binary",
        default=os.path.join(
            os.environ.get("CARGO_TARGET_DIR")
            or os.path.join(os.path.dirname(os.path.abspath(__file__)), "target"),
            "release",
            "bench-runs",
        ),
    )
    parser.add_argument("paths", nargs="*", default=PATHS)
    arguments = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed: it counts the instructions (Debian: apt-get install valgrind)")
    if not os.path.exists(arguments.binary):
        sys.exit(f"no {arguments.binary}: build bench/runs in release first, or give --binary")
    per_call = {}
    for path in arguments.paths:
        if path not in PATHS:
            sys.exit(f"unknown path {path!r}: one of {', '.join(PATHS)}")
        one = count(arguments.binary, path, arguments.calls)
        two = count(arguments.binary, path, 2 * arguments.calls)
        per_call[path] = (two - one) / arguments.calls
    direct = per_call.get("direct")
    print(f"{'path':<10} {'instructions/call':>18} {'x direct':>9}")
    for path, instructions in per_call.items():
        ratio = f"{instructions / direct:8.2f}x" if direct else ""
        print(f"{path:<10} {instructions:>18,.0f} {ratio:>9}")


if __name__ == "__main__":
    main()
