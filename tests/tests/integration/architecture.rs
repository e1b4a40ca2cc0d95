//! The layout `ARCHITECTURE.md` describes holds: `registry-core` has one folder per step of
//! the data path, and no two of its modules import each other, directly or in a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const STEPS: [&str; 8] = [
    "declare", "register", "discover", "present", "call", "resolve", "gate", "execute",
];

fn core_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../registry-core/src")
}

/// Every `.rs` file under `dir`, as (module path, text).
fn modules(dir: &Path, prefix: &str, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let name = if prefix.is_empty() {
            stem.clone()
        } else {
            format!("{prefix}::{stem}")
        };
        if path.is_dir() {
            modules(&path, &name, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push((name, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// A module's node in the import graph: a file module of a step (`discover::run`), with its
/// own submodules (`discover::run::approvals`) counted as part of it.
fn node(module: &str) -> String {
    module.split("::").take(2).collect::<Vec<_>>().join("::")
}

/// The `crate::` paths a module's code (not its comments, not its tests) names.
fn imports(text: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let mut found = BTreeSet::new();
    for line in code
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
    {
        for (at, _) in line.match_indices("crate::") {
            let path: String = line[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            // The longest prefix that names a module.
            if let Some(module) = (1..=segments.len())
                .rev()
                .map(|n| segments[..n].join("::"))
                .find(|candidate| known.contains(candidate))
            {
                found.insert(module);
            }
        }
    }
    found
}

#[test]
fn registry_core_has_a_folder_per_step() {
    for step in STEPS {
        let folder = core_src().join(step);
        assert!(folder.is_dir(), "{} is missing", folder.display());
        assert!(
            core_src().join(format!("{step}.rs")).is_file(),
            "{step}.rs, the module of the step, is missing"
        );
    }
    let loose: Vec<String> = std::fs::read_dir(core_src())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".rs"))
        .filter(|name| {
            let stem = name.trim_end_matches(".rs");
            !STEPS.contains(&stem)
                && !["lib", "__private", "audit", "pointer", "server"].contains(&stem)
        })
        .collect();
    assert!(
        loose.is_empty(),
        "files at the root of registry-core/src that belong in a step's folder: {loose:?}"
    );
}

#[test]
fn no_module_of_registry_core_imports_in_a_circle() {
    let mut all = Vec::new();
    modules(&core_src(), "", &mut all);
    let known: BTreeSet<String> = all.iter().map(|(name, _)| name.clone()).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in &all {
        let from = node(module);
        let edges = graph.entry(from.clone()).or_default();
        for import in imports(text, &known) {
            let to = node(&import);
            // A module may use its own parents' items (a step's re-exports).
            if to != from && !from.starts_with(&format!("{to}::")) {
                edges.insert(to);
            }
        }
    }
    assert!(
        graph.len() > 30,
        "the module scan found too little: {graph:?}"
    );
    // Depth-first search for a back edge; report the circle.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut circle = path[start..].to_vec();
            circle.push(node.to_owned());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, graph, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    for start in graph.keys() {
        if let Some(circle) = visit(start, &graph, &mut Vec::new(), &mut done) {
            panic!("import circle: {}", circle.join(" -> "));
        }
    }
}

#[test]
fn discover_only_projects_and_the_call_path_is_its_own_step() {
    let mut all = Vec::new();
    modules(&core_src(), "", &mut all);
    let known: BTreeSet<String> = all.iter().map(|(name, _)| name.clone()).collect();
    // What runs a call: resolution, the gate's approvals and quotas, execution.
    let call_path = [
        "call",
        "resolve",
        "gate::approval",
        "gate::store",
        "gate::quota",
    ];
    let mut reached = BTreeSet::new();
    for (module, text) in &all {
        let imports = imports(text, &known);
        if module == "discover" || module.starts_with("discover::") {
            let wrong: Vec<&String> = imports
                .iter()
                .filter(|import| {
                    call_path
                        .iter()
                        .any(|path| *import == path || import.starts_with(&format!("{path}::")))
                })
                .collect();
            assert!(
                wrong.is_empty(),
                "{module} reaches the call path ({wrong:?}); discover/ only projects, the call path lives in call/"
            );
        }
        if module.starts_with("call::") {
            reached.extend(imports.into_iter().map(|import| node(&import)));
        }
    }
    for step in ["resolve::call", "execute::execution", "gate::approval"] {
        assert!(
            reached.contains(step),
            "call/ does not reach {step}: {reached:?}"
        );
    }
}

/// The items `registry-core` exports at its root (modules not counted), read from `lib.rs`:
/// its `pub use` lines outside the inline modules, and its exported macros.
fn root_items() -> Vec<String> {
    let lib = std::fs::read_to_string(core_src().join("lib.rs")).unwrap();
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut statement = String::new();
    for line in lib.lines() {
        let code = line.split("//").next().unwrap_or_default();
        if depth == 0 && (code.starts_with("pub use ") || !statement.is_empty()) {
            statement.push_str(code);
            if statement.contains(';') {
                let path = statement
                    .trim_start_matches("pub use ")
                    .trim_end_matches(';');
                let names = match path.find('{') {
                    Some(open) => path[open + 1..path.rfind('}').unwrap()].to_owned(),
                    None => path.rsplit("::").next().unwrap().to_owned(),
                };
                items.extend(
                    names
                        .split(',')
                        .map(|name| name.trim().to_owned())
                        .filter(|name| !name.is_empty())
                        // A lowercase name is a module (`compat`), except the attribute macro.
                        .filter(|name| name == "tool" || name.starts_with(char::is_uppercase)),
                );
                statement.clear();
            }
        }
        depth += code.matches('{').count();
        depth -= code.matches('}').count();
    }
    let mut sources = Vec::new();
    modules(&core_src(), "", &mut sources);
    for (_, text) in sources {
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if line.trim() == "#[macro_export]" {
                let name = lines
                    .next()
                    .and_then(|line| line.trim().strip_prefix("macro_rules! "))
                    .map(|rest| rest.trim_end_matches(" {").to_owned());
                items.extend(name.map(|name| format!("{name}!")));
            }
        }
    }
    items.sort();
    items
}

#[test]
fn the_root_of_registry_core_is_small_enough_to_learn() {
    let items = root_items();
    // What a first program uses, and no more: everything else is in a module of its concept.
    for needed in [
        "tool",
        "link!",
        "Registry",
        "RegistryBuilder",
        "Subject",
        "Run",
        "ToolCall",
        "Observation",
        "ErrorKind",
        "Profile",
        "DynamicTool",
        "ToolContext",
        "RegistryError",
    ] {
        assert!(
            items.iter().any(|item| item == needed),
            "{needed} is not at the root: {items:?}"
        );
    }
    assert!(
        items.len() <= 24,
        "{} items at the root of registry-core (at most 24): {items:?}",
        items.len()
    );
}

/// The `mod` items of `text` declared as `mod name;` (a file of their own), in order.
fn file_modules(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_tool_attr_fuzz_target_compiles_in_every_module_of_the_macro() {
    // fuzz/fuzz_targets/tool_attr.rs compiles the macro's modules in with `#[path]` (a
    // proc-macro crate cannot be linked into a fuzz target), so a module added to the macro
    // must be added there too, or the fuzz build breaks only in CI's fuzz phase.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    let macro_modules = file_modules(&read("registry-macros/src/lib.rs"));
    let target = read("fuzz/fuzz_targets/tool_attr.rs");
    assert!(!macro_modules.is_empty());
    let missing: Vec<&String> = macro_modules
        .iter()
        .filter(|module| {
            let path =
                format!("#[path = \"../../registry-macros/src/{module}.rs\"]\nmod {module};");
            !target.contains(&path)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "fuzz/fuzz_targets/tool_attr.rs lacks the macro's modules {missing:?}: add \
         `#[path = \"../../registry-macros/src/NAME.rs\"] mod NAME;` for each"
    );
    assert_eq!(
        file_modules(&target),
        macro_modules,
        "tool_attr.rs compiles in modules the macro does not have, or in another order"
    );
}
