#!/usr/bin/env python3
"""Benchmarks of registry-core: compile cost per tool, and Registry::from_inventory at scale.

    python3 bench/run.py compile      # 200 tools x {baseline, #[tool], DynamicTool, rmcp}: debug build time
    python3 bench/run.py inventory    # 10,000 #[tool] functions: from_inventory() and definition() in release

Everything generated (crates, target dirs) goes under bench/target-gen/ (or $BENCH_OUT), which
is ignored by git. See bench/README.md for what is measured and how to read the figures.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CORE = ROOT / "registry-core"  # see use_core()
OUT = Path(os.environ.get("BENCH_OUT", BENCH / "target-gen")).resolve()
RMCP_VERSION = "=3.11.0"

# --------------------------------------------------------------------------------------------
# The tools: N tools cycling through a few parameter shapes of mixed types.
# --------------------------------------------------------------------------------------------

# type key -> Rust type
RUST = {
    "string": "String",
    "opt_bool": "Option<bool>",
    "u32": "u32",
    "vec": "Vec<String>",
    "filter": "Filter",
}

# Hand-written JSON Schema of each type (variant b), as a json! literal body.
FILTER_SCHEMA = (
    '"type": "object", "properties": {'
    '"field": {"type": "string", "description": "The field to filter on."}, '
    '"value": {"type": ["string", "null"], "description": "The value to match; any value when absent."}, '
    '"exact": {"type": "boolean", "description": "Match exactly rather than by prefix."}}, '
    '"required": ["field", "exact"], "additionalProperties": false'
)
JSON_SCHEMA = {
    "string": '"type": "string"',
    "opt_bool": '"type": ["boolean", "null"]',
    "u32": '"type": "integer", "minimum": 0',
    "vec": '"type": "array", "items": {"type": "string"}',
    "filter": FILTER_SCHEMA,
}

# (name, type, doc)
SHAPES = [
    [("query", "string", "The text to search for."), ("verbose", "opt_bool", "Include details.")],
    [("project", "string", "Project identifier."), ("limit", "u32", "At most this many results."),
     ("tags", "vec", "Only items with all these tags.")],
    [("filter", "filter", "Which items to take."), ("limit", "u32", "At most this many results.")],
    [("tags", "vec", "Only items with all these tags."), ("verbose", "opt_bool", "Include details."),
     ("filter", "filter", "Which items to take.")],
    [("name", "string", "The name of the item."), ("count", "u32", "How many to make.")],
    [("count", "u32", "How many to make."), ("dry_run", "opt_bool", "Only say what would be done."),
     ("name", "string", "The name of the item.")],
    [("labels", "vec", "Labels to set."), ("filter", "filter", "Which items to label.")],
    [("path", "string", "Where to start."), ("recursive", "opt_bool", "Descend into folders."),
     ("depth", "u32", "How deep to go.")],
]

FILTER_STRUCT = """\
/// A filter on one field, shared by many tools.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
pub struct Filter {
    /// The field to filter on.
    pub field: String,
    /// The value to match; any value when absent.
    pub value: Option<String>,
    /// Match exactly rather than by prefix.
    pub exact: bool,
}
"""


def tool_name(i: int, width: int) -> str:
    return f"tool_{i:0{width}d}"


def shape(i: int):
    return SHAPES[i % len(SHAPES)]


def doc(i: int, params) -> str:
    names = ", ".join(p[0] for p in params)
    return f"/// Tool number {i}: does its work with {names}.\n///\n/// Returns a short report.\n"


def body(name: str, params) -> str:
    fmt = " ".join("{:?}" for _ in params)
    args = ", ".join(p[0] for p in params)
    return f'    Ok(format!("{name}: {fmt}", {args}))\n'


def signature(params, with_docs: bool, indent: str = "    ") -> str:
    if with_docs:
        return "".join(f"{indent}/// {d}\n{indent}{n}: {RUST[t]},\n" for n, t, d in params)
    return ", ".join(f"{n}: {RUST[t]}" for n, t, _ in params)


def plain_fn(i: int, width: int) -> str:
    name, params = tool_name(i, width), shape(i)
    return (f"{doc(i, params)}pub fn {name}({signature(params, False)}) -> Result<String, String> {{\n"
            f"{body(name, params)}}}\n")


def macro_fn(i: int, width: int) -> str:
    name, params = tool_name(i, width), shape(i)
    return (f"{doc(i, params)}#[registry_core::tool(public)]\npub fn {name}(\n{signature(params, True)}"
            f") -> Result<String, String> {{\n{body(name, params)}}}\n")


def dynamic_fn(i: int, width: int) -> str:
    name, params = tool_name(i, width), shape(i)
    props = ", ".join(
        f'"{n}": {{{JSON_SCHEMA[t]}, "description": "{d}"}}' for n, t, d in params)
    required = ", ".join(f'"{n}"' for n, t, _ in params if t != "opt_bool")
    description = f"Tool number {i}: does its work with {', '.join(p[0] for p in params)}.\\n\\nReturns a short report."
    takes = "".join(f"        let {n}: {RUST[t]} = arg(&mut args, \"{n}\")?;\n" for n, t, _ in params)
    call = ", ".join(p[0] for p in params)
    return f"""\
fn dyn_{name}() -> DynamicTool {{
    DynamicTool::new("{name}", "{description}")
        .public()
        .parameters(json!({{
            "type": "object",
            "properties": {{{props}}},
            "required": [{required}],
            "additionalProperties": false
        }}))
        .handler(|_ctx, mut args| -> Result<Value, String> {{
{takes}        {name}({call}).map(Value::from)
        }})
}}
"""


def rmcp_fn(i: int, width: int) -> tuple[str, str]:
    """(the Parameters struct, the method)"""
    name, params = tool_name(i, width), shape(i)
    struct_name = "".join(part.capitalize() for part in name.split("_")) + "Args"
    fields = "".join(f"    /// {d}\n    pub {n}: {RUST[t]},\n" for n, t, d in params)
    struct = (f"#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]\n"
              f"pub struct {struct_name} {{\n{fields}}}\n")
    names = ", ".join(p[0] for p in params)
    method = (
        "".join("    " + line + "\n" for line in doc(i, params).splitlines())
        + f"    #[tool]\n    pub fn {name}(&self, Parameters({struct_name} {{ {names} }}): "
          f"Parameters<{struct_name}>) -> Result<String, String> {{\n"
        + "    " + body(name, params)
        + "    }\n")
    return struct, method


# --------------------------------------------------------------------------------------------
# Crates
# --------------------------------------------------------------------------------------------

def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def manifest(name: str, deps: str, extra: str = "") -> str:
    return f"""\
[package]
name = "{name}"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
{deps}
{extra}
# A workspace of its own: not part of the registry workspace above.
[workspace]
"""


SERDE = 'serde = { version = "1", features = ["derive"] }\nschemars = "1"\n'


def core_dep() -> str:
    return f'registry-core = {{ path = "{CORE}" }}\n'


def use_core(rev: str | None) -> str:
    """Points the generated crates at registry-core: the work tree, or a snapshot of commit `rev`
    (extracted with `git archive`, read-only), so that edits in progress do not disturb a run."""
    global CORE
    if not rev:
        CORE = ROOT / "registry-core"
        return "work tree"
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", rev + "^{commit}"],
                         capture_output=True, text=True, check=True).stdout.strip()
    dest = OUT / "snapshots" / sha[:12]
    if not (dest / "registry-core").exists():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", sha],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    CORE = dest / "registry-core"
    return f"commit {sha[:12]}"


def seed_lock(crate: Path) -> None:
    """Start from the workspace's lock file, so registry-core's dependencies resolve as there."""
    lock = crate / "Cargo.lock"
    seed = CORE.parent / "Cargo.lock"
    if not lock.exists() and seed.exists():
        shutil.copy(seed, lock)


def gen_compile(n: int) -> dict[str, Path]:
    width = max(3, len(str(n - 1)))
    crates = {}
    head = "#![allow(dead_code, clippy::all)]\n//! Generated by bench/run.py; do not edit.\n\n"

    c = OUT / "compile" / "baseline"
    write(c / "Cargo.toml", manifest("bench_baseline", SERDE))
    write(c / "src/lib.rs", head + FILTER_STRUCT + "\n" + "\n".join(plain_fn(i, width) for i in range(n)))
    crates["baseline"] = c

    c = OUT / "compile" / "macro"
    write(c / "Cargo.toml", manifest("bench_macro", SERDE + core_dep()))
    write(c / "src/lib.rs", head + FILTER_STRUCT + "\n" + "\n".join(macro_fn(i, width) for i in range(n)))
    crates["macro"] = c

    c = OUT / "compile" / "dynamic"
    write(c / "Cargo.toml", manifest("bench_dynamic", SERDE + 'serde_json = "1"\n' + core_dep()))
    chain = "".join(f"        .tool(dyn_{tool_name(i, width)}())\n" for i in range(n))
    text = (head + "use registry_core::{DynamicTool, Registry};\nuse serde_json::{Value, json};\n\n"
            + FILTER_STRUCT + "\n"
            + "/// Takes one argument out of the arguments object; absent is `null`.\n"
            + "fn arg<T: serde::de::DeserializeOwned>(args: &mut Value, name: &str) -> Result<T, String> {\n"
            + "    let value = args.get_mut(name).map(Value::take).unwrap_or(Value::Null);\n"
            + "    serde_json::from_value(value).map_err(|error| format!(\"/{name}: {error}\"))\n}\n\n"
            + "/// Every tool, registered by hand.\npub fn registry() -> Registry {\n    Registry::builder()\n"
            + chain + "        .build()\n        .expect(\"valid tools\")\n}\n\n"
            + "\n".join(plain_fn(i, width) + "\n" + dynamic_fn(i, width) for i in range(n)))
    write(c / "src/lib.rs", text)
    crates["dynamic"] = c

    c = OUT / "compile" / "rmcp"
    rmcp_dep = (f'rmcp = {{ version = "{RMCP_VERSION}", default-features = false, '
                f'features = ["macros", "server"] }}\n')
    write(c / "Cargo.toml", manifest("bench_rmcp", SERDE + rmcp_dep))
    structs, methods = zip(*(rmcp_fn(i, width) for i in range(n)))
    text = (head
            + "use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};\n"
            + "use rmcp::{ServerHandler, tool, tool_handler, tool_router};\n\n"
            + FILTER_STRUCT + "\n" + "\n".join(structs) + "\n"
            + "/// The server: every tool as a method.\n#[derive(Clone)]\npub struct Server {\n"
            + "    tool_router: ToolRouter<Self>,\n}\n\n"
            + "impl Server {\n    /// A server with every tool.\n    pub fn new() -> Self {\n"
            + "        Server { tool_router: Self::tool_router() }\n    }\n}\n\n"
            + "#[tool_router]\nimpl Server {\n" + "\n".join(methods) + "}\n\n"
            + "#[tool_handler(router = self.tool_router)]\nimpl ServerHandler for Server {}\n")
    write(c / "src/lib.rs", text)
    crates["rmcp"] = c

    for crate in crates.values():
        seed_lock(crate)
    return crates


def gen_inventory(n: int, per_module: int) -> Path:
    """A package with the tools in a library (src/lib.rs + module files) and the timing binary
    (bench/inventory_main.rs) as src/main.rs, so that editing the binary does not recompile
    the tools."""
    width = max(3, len(str(n - 1)))
    c = OUT / "inventory" / f"tools_{n}"
    modules = (n + per_module - 1) // per_module
    write(c / "Cargo.toml", manifest(
        "bench_inventory", SERDE + 'serde_json = "1"\n' + core_dep(),
        "\n[profile.release]\ndebug = false\n"))
    src = c / "src"
    if src.exists():
        for old in src.glob("m*.rs"):
            if old.stem[1:].isdigit() and int(old.stem[1:]) >= modules:
                old.unlink()
    mods = ""
    for m in range(modules):
        lo, hi = m * per_module, min(n, (m + 1) * per_module)
        text = ("//! Generated by bench/run.py; do not edit.\nuse crate::Filter;\n\n"
                + "\n".join(macro_fn(i, width) for i in range(lo, hi)))
        write(src / f"m{m:03d}.rs", text)
        mods += f"pub mod m{m:03d};\n"
    write(src / "lib.rs", f"//! Generated by bench/run.py; do not edit: {n} `#[tool]` functions.\n"
          f"#![allow(dead_code)]\n\n/// How many tools this crate declares.\npub const TOOLS: usize = {n};\n\n"
          f"{mods}\n{FILTER_STRUCT}")
    write(src / "main.rs", (BENCH / "inventory_main.rs").read_text())
    seed_lock(c)
    return c


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------

def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


class Timing:
    """Wall time and CPU time (user + sys of cargo and every rustc it ran) of one command.

    CPU time is the figure to compare on a shared machine: other jobs on the 2 cores stretch
    the wall time of a build, much less the CPU time it needs."""

    def __init__(self, wall: float, cpu: float):
        self.wall, self.cpu = wall, cpu


def cargo(args: list[str], crate: Path, target: Path, json_messages: bool = False,
          check: bool = True, profile_env: dict | None = None) -> tuple[Timing, subprocess.CompletedProcess]:
    env = dict(os.environ, CARGO_TARGET_DIR=str(target), CARGO_TERM_COLOR="never",
               CARGO_INCREMENTAL="0")  # a touch must recompile the crate, not replay the cache
    env.update(profile_env or {})
    cmd = ["cargo", *args]
    if json_messages:
        cmd.append("--message-format=json")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=crate, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if check and proc.returncode != 0:
        out = proc.stdout
        if json_messages:  # only the rendered diagnostics
            out = "".join(json.loads(line)["message"].get("rendered") or ""
                          for line in proc.stdout.splitlines()
                          if line.startswith('{"reason":"compiler-message"'))
        sys.stderr.write(out[-20000:] + proc.stderr[-20000:])
        hint = ""
        if CORE == ROOT / "registry-core":
            hint = ("\n(registry-core is taken from the work tree; if edits are in progress there, "
                    "measure a commit instead: --rev HEAD)")
        raise SystemExit(f"`{' '.join(cmd)}` failed in {crate}{hint}")
    return Timing(wall, cpu), proc


def rebuilt_others(proc: subprocess.CompletedProcess, own: str) -> list[str]:
    """Packages other than the measured crate that this build compiled (should be none)."""
    others = []
    for line in proc.stdout.splitlines():
        if not line.startswith("{"):
            continue
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and not msg.get("fresh", True):
            name = msg["target"]["name"]
            if name != own:
                others.append(name)
    return others


def timed_rebuilds(crate: Path, target: Path, runs: int, cargo_args: list[str], own: str,
                   touch: str) -> list[Timing]:
    """`runs` rebuilds of the crate alone: touch its root file, rebuild, time it. A run in which
    cargo also rebuilt a dependency (a file of registry-core edited meanwhile) is discarded."""
    times = []
    attempts = 0
    while len(times) < runs:
        attempts += 1
        if attempts > runs * 3:
            raise SystemExit(f"{crate}: dependencies kept being rebuilt (someone editing them?)")
        cargo(cargo_args, crate, target)  # make sure everything is fresh
        os.utime(crate / touch)
        timing, proc = cargo(cargo_args, crate, target, json_messages=True)
        others = rebuilt_others(proc, own)
        if others:
            print(f"    (run discarded: also rebuilt {', '.join(sorted(set(others)))})", flush=True)
            continue
        times.append(timing)
        print(f"    {cargo_args[0]} run {len(times)}: wall {timing.wall:6.2f} s   cpu {timing.cpu:6.2f} s"
              f"   (load {load()})", flush=True)
    return times


def machine() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    return f"{os.cpu_count()} cores ({cpu}), {platform.system()} {platform.release()}, {rustc}"


def cmd_compile(a) -> None:
    crates = gen_compile(a.tools)
    variants = [v for v in a.variants.split(",") if v]
    modes = ["build", "check"] if a.check else ["build"]
    print(f"date: {datetime.date.today()}  machine: {machine()}  registry-core: {a.core}")
    print(f"{a.tools} tools per crate, {a.runs} timed rebuilds per variant and mode "
          f"(debug, CARGO_INCREMENTAL=0, dependencies prebuilt)\n", flush=True)
    med = {}  # (variant, mode, "wall"|"cpu") -> median seconds
    for variant in variants:
        crate = crates[variant]
        target = OUT / "compile" / f"target-{variant}"
        own = f"bench_{variant}"
        print(f"[{variant}] building dependencies ...", flush=True)
        first, _ = cargo(["build", "--lib"], crate, target)
        print(f"    first build (deps if not cached + crate): {first.wall:.1f} s", flush=True)
        for mode in modes:
            times = timed_rebuilds(crate, target, a.runs, [mode, "--lib"], own, "src/lib.rs")
            med[variant, mode, "wall"] = statistics.median(t.wall for t in times)
            med[variant, mode, "cpu"] = statistics.median(t.cpu for t in times)

    def per_tool(variant, mode, kind):
        if variant == "baseline" or ("baseline", mode, kind) not in med or (variant, mode, kind) not in med:
            return None
        return (med[variant, mode, kind] - med["baseline", mode, kind]) / a.tools * 1e3

    summary = {}
    for mode in modes:
        print(f"\n`cargo {mode}` (debug) of the generated crate alone, median of {a.runs}:\n")
        print("| variant | wall (s) | wall per tool (ms) | CPU (s) | CPU per tool (ms) |")
        print("|---|---:|---:|---:|---:|")
        for variant in variants:
            cells = [f"{variant}"]
            for kind in ("wall", "cpu"):
                pt = per_tool(variant, mode, kind)
                cells += [f"{med[variant, mode, kind]:.2f}", "-" if pt is None else f"{pt:.1f}"]
                summary[f"{mode}.{variant}.{kind}_s"] = round(med[variant, mode, kind], 3)
                if pt is not None:
                    summary[f"{mode}.{variant}.{kind}_per_tool_ms"] = round(pt, 2)
            print("| " + " | ".join(cells) + " |")
        for kind in ("wall", "cpu"):
            ours, theirs = per_tool("macro", mode, kind), per_tool("rmcp", mode, kind)
            if ours is not None and theirs:
                ratio = ours / theirs
                summary[f"{mode}.ratio_macro_rmcp.{kind}"] = round(ratio, 3)
                verdict = "MET" if ratio <= 0.5 else "MISSED"
                print(f"\n{mode}, {kind}: #[tool] per tool / rmcp per tool = {ours:.1f} / {theirs:.1f} ms"
                      f" = {ratio:.2f}  (goal <= 0.50: {verdict})", end="")
        print()
    print("\nJSON " + json.dumps(summary))


def run_binary(binary: Path, *args: str) -> dict[str, dict]:
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit("benchmark binary failed")
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            results[r["what"]] = r
        else:
            print("    " + line)
    return results


def cmd_inventory(a) -> None:
    crate = gen_inventory(a.tools, a.per_module)
    target = OUT / "inventory" / "target"
    print(f"date: {datetime.date.today()}  machine: {machine()}  registry-core: {a.core}")
    print(f"{a.tools} #[tool] functions in {(a.tools + a.per_module - 1) // a.per_module} modules; "
          f"release build", flush=True)
    # Dependencies first, so that the crate's own compile time is reported apart.
    cargo(["build", "--release", "-p", "registry-core", "-p", "serde_json", "-p", "schemars"], crate, target)
    print(f"[build] dependencies ready; compiling the {a.tools}-tool crate (load {load()}) ...", flush=True)
    timing, proc = cargo(["build", "--release", "--lib"], crate, target, json_messages=True)
    if any(m == "bench_inventory" for m in rebuilt_others(proc, "")):
        print(f"    release build of the {a.tools}-tool library: wall {timing.wall:.1f} s, "
              f"cpu {timing.cpu:.1f} s (load {load()})", flush=True)
    else:
        print("    (tool library already built; `python3 bench/run.py clean` to time it again)")
    timing, proc = cargo(["build", "--release", "--bin", "bench_inventory"], crate, target, json_messages=True)
    print(f"    timing binary (compile + link): wall {timing.wall:.1f} s", flush=True)
    again = [m for m in rebuilt_others(proc, "bench_inventory") if m != "bench_inventory"]
    if again or sum(m == "bench_inventory" for m in rebuilt_others(proc, "")) > 1:
        print(f"    (note: registry-core changed meanwhile, so the library was rebuilt with the binary "
              f"({', '.join(sorted(set(again)))}); the build time above is of the previous version)")
    binary = target / "release" / "bench_inventory"
    print(f"    binary: {binary.stat().st_size / 1e6:.1f} MB\n", flush=True)

    results = run_binary(binary, str(a.iters), str(a.heavy_iters))
    firsts = [results["first_from_inventory"]["median_ms"]]
    for _ in range(a.processes - 1):  # more fresh processes, for the first call only
        firsts.append(run_binary(binary, "0", "0")["first_from_inventory"]["median_ms"])
    firsts.sort()
    results["first_from_inventory"] = {"what": "first_from_inventory", "runs": len(firsts),
                                       "min_ms": firsts[0], "median_ms": statistics.median(firsts),
                                       "max_ms": firsts[-1]}
    labels = {
        "first_from_inventory": "from_inventory(), first call of a fresh process",
        "from_inventory": "from_inventory(), later calls",
        "inventory_walk_only": "  part: walking the inventory list only",
        "inventory_walk_and_sort": "  part: walking + sorting the declarations (as from_inventory does)",
        "inventory_walk_and_sort_unstable": "  (diagnostic: the same with sort_unstable_by)",
        "builder_declared_in": "builder().declared_in([crate]).build()",
        "all_definitions": "definition() of every tool, once (schemas)",
        "all_validators_after_definitions": "first validate() of every tool (compile schemas)",
    }
    print(f"\n| {a.tools} tools, release | runs | min (ms) | median (ms) | max (ms) | per tool (µs, median) |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, label in labels.items():
        r = results.get(key)
        if r:
            print(f"| {label} | {r['runs']} | {r['min_ms']:.3f} | {r['median_ms']:.3f} | {r['max_ms']:.3f} "
                  f"| {r['median_ms'] * 1e3 / a.tools:.2f} |")
    median = results["from_inventory"]["median_ms"]
    worst_first = results["first_from_inventory"]["max_ms"]
    print(f"\nfrom_inventory() median {median:.3f} ms, first call at most {worst_first:.3f} ms, "
          f"for {a.tools} tools (goal < 10 ms: {'MET' if max(median, worst_first) < 10 else 'MISSED'})")
    print("JSON " + json.dumps(results))


def cmd_clean(_a) -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    print(f"removed {OUT}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compile", help="debug compile time per tool: baseline, #[tool], DynamicTool, rmcp")
    c.add_argument("--tools", type=int, default=200)
    c.add_argument("--runs", type=int, default=5, help="timed rebuilds per variant (median taken)")
    c.add_argument("--variants", default="baseline,macro,dynamic,rmcp")
    c.add_argument("--check", action=argparse.BooleanOptionalAction, default=True,
                   help="also time `cargo check` (default: yes)")
    c.add_argument("--gen-only", action="store_true")
    i = sub.add_parser("inventory", help="Registry::from_inventory() over many #[tool] functions, release")
    i.add_argument("--tools", type=int, default=10_000)
    i.add_argument("--per-module", type=int, default=250, help="tools per generated module file")
    i.add_argument("--iters", type=int, default=30, help="from_inventory() runs")
    i.add_argument("--heavy-iters", type=int, default=5, help="runs of forcing every definition/validator")
    i.add_argument("--processes", type=int, default=5, help="fresh processes timed for the first call")
    i.add_argument("--gen-only", action="store_true")
    sub.add_parser("clean", help="remove bench/target-gen")
    for sp in (c, i):
        sp.add_argument("--rev", help="measure registry-core as of this git commit (e.g. HEAD) "
                        "instead of the work tree")
    a = p.parse_args()
    if a.cmd != "clean":
        a.core = use_core(a.rev)
    if a.cmd == "clean":
        return cmd_clean(a)
    if getattr(a, "gen_only", False):
        where = gen_compile(a.tools) if a.cmd == "compile" else gen_inventory(a.tools, a.per_module)
        print(where)
        return
    {"compile": cmd_compile, "inventory": cmd_inventory}[a.cmd](a)


if __name__ == "__main__":
    main()
