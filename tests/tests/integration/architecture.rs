//! The map `ARCHITECTURE.md` describes holds: `registry-core`'s modules stand in one order
//! (`ORDER`, bottom to top), each importing only modules below it; no two of its folders
//! import each other; no file imports itself in a circle; each public module is a file or
//! folder of its name; and the data path keeps a folder per step.
//!
//! The reading: every `crate::`, `super::` and `self::` path of non-test code (a
//! `#[cfg(test)]` item, a test module or a single function, is cut; the code after it is
//! read), and every child-relative `use` path, is resolved to the module that *defines* its
//! item, through `use` re-exports: `crate::gate::Budget` is an import of `gate/quota.rs`, not
//! of `gate.rs`. A `pub use` is a re-export, followed, not an import of its own.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `registry-core`'s top-level modules (a file `x.rs`, with its folder `x/` if it has one),
/// bottom to top: each may import only the modules before it. `shared` is the leaf of the
/// types every step uses. The data path's steps (declare, register, discover, present, call:
/// resolve, gate, execute) stand in the order their code depends on: the registry holds the
/// pool, the gate's configuration and the projection's snapshot, so `register` stands above
/// `execute`, `gate` and `project`, and below `discover`, whose `Run` is opened from it. The
/// last three only gather items defined below them (`pub use`), and define none.
const ORDER: [&str; 26] = [
    "pointer",
    "shared",
    "content",
    "resolve",
    "host",
    "declare",
    "approval",
    "execute",
    "task",
    "change",
    "audit",
    "gate",
    "access",
    "search",
    "project",
    "present",
    "compat",
    "register",
    "discover",
    "deferred",
    "server",
    "call",
    "__private",
    "definition",
    "lockfile",
    "policy",
];

/// Imports allowed against `ORDER`, as `file:line` (from `registry-core/src`), each with
/// its reason. None today; an entry here is a debt, to be paid by moving what it imports.
const AGAINST_ORDER: [(&str, &str); 0] = [];

/// The data path's steps: each a folder with its module file.
const STEPS: [&str; 8] = [
    "declare", "register", "discover", "present", "call", "resolve", "gate", "execute",
];

/// The public modules of `registry-core`: each a file (`x.rs`, with a folder `x/` if it has
/// submodules) declared `pub mod x;` in `lib.rs`.
const PUBLIC_MODULES: [&str; 16] = [
    "approval",
    "task",
    "definition",
    "access",
    "policy",
    "content",
    "host",
    "deferred",
    "search",
    "change",
    "lockfile",
    "compat",
    "audit",
    "call",
    "gate",
    "server",
];

fn core_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../registry-core/src")
}

/// Every `.rs` file under `dir`, as (module path, text); `lib.rs` is the root, `""`.
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
            let name = if name == "lib" { String::new() } else { name };
            out.push((name, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

/// `text` with its comments, the contents of its string and character literals, and its
/// `#[cfg(test)]` items blanked (line breaks kept, so lines keep their numbers).
fn code_of(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in &mut out[from..to.min(chars.len())] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let rest = |k: usize| chars.get(i + k).copied().unwrap_or(' ');
        if chars[i] == '/' && rest(1) == '/' {
            let end = (i..chars.len())
                .find(|&k| chars[k] == '\n')
                .unwrap_or(chars.len());
            blank(&mut out, i, end);
            i = end;
        } else if chars[i] == '/' && rest(1) == '*' {
            let mut k = i + 2;
            let mut depth = 1;
            while k < chars.len() && depth > 0 {
                if chars[k] == '/' && chars.get(k + 1) == Some(&'*') {
                    depth += 1;
                    k += 1;
                } else if chars[k] == '*' && chars.get(k + 1) == Some(&'/') {
                    depth -= 1;
                    k += 1;
                }
                k += 1;
            }
            blank(&mut out, i, k);
            i = k;
        } else if chars[i] == 'r'
            && (rest(1) == '"' || (rest(1) == '#' && (rest(2) == '"' || rest(2) == '#')))
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'))
        {
            // a raw string: r"...", r#"..."#
            let hashes = (i + 1..chars.len())
                .take_while(|&k| chars[k] == '#')
                .count();
            let open = i + 1 + hashes;
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body: String = chars[open + 1..].iter().collect();
            let end = body
                .find(&close)
                .map(|at| open + 1 + body[..at].chars().count() + close.chars().count())
                .unwrap_or(chars.len());
            blank(&mut out, open + 1, end - close.chars().count());
            i = end;
        } else if chars[i] == '"' {
            let mut k = i + 1;
            while k < chars.len() && chars[k] != '"' {
                if chars[k] == '\\' {
                    k += 1;
                }
                k += 1;
            }
            blank(&mut out, i + 1, k);
            i = k + 1;
        } else if chars[i] == '\'' {
            // a character literal ('x', '\n', '\u{1F600}'), or a lifetime ('a)
            if rest(1) == '\\' {
                let end = (i + 2..chars.len())
                    .find(|&k| chars[k] == '\'')
                    .unwrap_or(chars.len());
                blank(&mut out, i + 1, end);
                i = end + 1;
            } else if rest(2) == '\'' {
                blank(&mut out, i + 1, i + 2);
                i += 3;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    // `#[cfg(test)]` items: up to their `;` or the end of their block.
    let code: String = out.iter().collect();
    let mut cut = code.clone();
    for (at, _) in code.match_indices("#[cfg(test)]") {
        let bytes = code.as_bytes();
        let mut k = at + "#[cfg(test)]".len();
        let mut depth = 0usize;
        while k < bytes.len() {
            match bytes[k] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        k += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    k += 1;
                    break;
                }
                _ => {}
            }
            k += 1;
        }
        // as many bytes as it had, so that the offsets of what follows hold
        let blanked: String = code[at..k]
            .chars()
            .map(|c| {
                if c == '\n' {
                    "\n".to_owned()
                } else {
                    " ".repeat(c.len_utf8())
                }
            })
            .collect();
        cut.replace_range(at..k, &blanked);
    }
    cut
}

/// A `use` tree (`a::{b, c::{d as e}, f::*}`) as its leaves: (path, name it binds).
fn use_leaves(tree: &str, prefix: &str, out: &mut Vec<(String, String)>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    let join = |head: &str| match (prefix.is_empty(), head.is_empty()) {
        (true, _) => head.to_owned(),
        (false, true) => prefix.to_owned(),
        (false, false) => format!("{prefix}::{head}"),
    };
    if let Some(open) = tree.find('{') {
        let base = join(tree[..open].trim().trim_end_matches("::"));
        let body = &tree[open + 1..tree.rfind('}').unwrap()];
        let mut depth = 0;
        let mut start = 0;
        for (at, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    use_leaves(&body[start..at], &base, out);
                    start = at + 1;
                }
                _ => {}
            }
        }
        use_leaves(&body[start..], &base, out);
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path.trim(), Some(alias.trim())),
        None => (tree, None),
    };
    if path == "self" {
        let name = alias.unwrap_or_else(|| prefix.rsplit("::").next().unwrap_or_default());
        out.push((prefix.to_owned(), name.to_owned()));
        return;
    }
    let full = join(path);
    let name = alias.unwrap_or_else(|| path.rsplit("::").next().unwrap_or_default());
    out.push((full, name.to_owned()));
}

/// One path a module's code names: where it is, the module it is in, whether it is a
/// re-export (`pub use`), and the path made absolute (from the crate root, no `crate::`).
#[derive(Debug, Clone)]
struct Site {
    file: String,
    line: usize,
    module: String,
    reexport: bool,
    path: String,
}

/// The crate as the reading sees it: its modules, what each `use` binds, and every path.
struct Crate {
    files: BTreeMap<String, String>,
    modules: BTreeSet<String>,
    /// module -> name -> absolute path it binds (`use`s, public or not, and globs as `*`).
    bindings: BTreeMap<String, BTreeMap<String, String>>,
    globs: BTreeMap<String, Vec<String>>,
    sites: Vec<Site>,
}

fn file_of(module: &str) -> String {
    if module.is_empty() {
        "lib.rs".to_owned()
    } else {
        format!("{}.rs", module.replace("::", "/"))
    }
}

impl Crate {
    fn read() -> Crate {
        let mut all = Vec::new();
        modules(&core_src(), "", &mut all);
        let mut files = BTreeMap::new();
        for (module, text) in all {
            files.insert(module, code_of(&text));
        }
        Crate::of(files)
    }

    /// The reading of `files` (module path -> code, as `code_of` leaves it).
    fn of(files: BTreeMap<String, String>) -> Crate {
        let mut modules: BTreeSet<String> = files.keys().cloned().collect();
        // inline modules (`mod micros { ... }`), by the module each line of code is in
        let mut module_at: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (module, code) in &files {
            let mut stack: Vec<(String, usize)> = Vec::new();
            let mut depth = 0usize;
            let mut per_line = Vec::new();
            for line in code.lines() {
                let current = stack
                    .iter()
                    .map(|(name, _)| name.as_str())
                    .fold(module.clone(), |at, name| join(&at, name));
                per_line.push(current.clone());
                let trimmed = line.trim_start();
                let declared = trimmed
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub(super) ")
                    .trim_start_matches("pub ")
                    .strip_prefix("mod ")
                    .and_then(|rest| rest.strip_suffix('{'))
                    .map(|name| name.trim().to_owned());
                for c in line.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth = depth.saturating_sub(1);
                            if stack.last().is_some_and(|(_, at)| *at == depth) {
                                stack.pop();
                            }
                        }
                        _ => {}
                    }
                }
                if let Some(name) = declared {
                    modules.insert(join(&current, &name));
                    stack.push((name, depth - 1));
                }
            }
            module_at.insert(module.clone(), per_line);
        }
        let mut reading = Crate {
            files: files.clone(),
            modules,
            bindings: BTreeMap::new(),
            globs: BTreeMap::new(),
            sites: Vec::new(),
        };
        for (module, code) in &files {
            let lines = &module_at[module];
            let mut in_use = Vec::new();
            // `use` statements
            let mut search = 0;
            while let Some(found) = code[search..].find("use ") {
                let at = search + found;
                search = at + 4;
                let line_start = code[..at].rfind('\n').map_or(0, |n| n + 1);
                let head = code[line_start..at].trim();
                let starts = head.is_empty()
                    || head == "pub"
                    || (head.starts_with("pub(") && head.ends_with(')'));
                if !starts || (at > 0 && code.as_bytes()[at - 1].is_ascii_alphanumeric()) {
                    continue;
                }
                let reexport = head.starts_with("pub");
                let Some(end) = code[at..].find(';') else {
                    continue;
                };
                let line = code[..at].matches('\n').count();
                let owner = lines[line].clone();
                let mut leaves = Vec::new();
                use_leaves(
                    &code[at + 4..at + end]
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                    "",
                    &mut leaves,
                );
                for (path, name) in leaves {
                    let Some(absolute) = reading.absolute(&owner, &path, true) else {
                        continue;
                    };
                    if let Some(glob) = absolute.strip_suffix("::*") {
                        reading
                            .globs
                            .entry(owner.clone())
                            .or_default()
                            .push(glob.to_owned());
                    } else {
                        reading
                            .bindings
                            .entry(owner.clone())
                            .or_default()
                            .insert(name, absolute.clone());
                    }
                    reading.sites.push(Site {
                        file: file_of(module),
                        line: line + 1,
                        module: owner.clone(),
                        reexport,
                        path: absolute.trim_end_matches("::*").to_owned(),
                    });
                }
                in_use.push((at, at + end));
                search = at + end;
            }
            // paths in code
            for (number, line) in code.lines().enumerate() {
                let line_start: usize = code.lines().take(number).map(|l| l.len() + 1).sum();
                for head in ["crate::", "super::", "self::"] {
                    for (at, _) in line.match_indices(head) {
                        let absolute_at = line_start + at;
                        let before = line[..at].chars().last();
                        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                            || in_use.iter().any(|(a, b)| (*a..*b).contains(&absolute_at))
                        {
                            continue;
                        }
                        let path: String = line[at..]
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                            .collect();
                        let owner = module_at[module][number].clone();
                        if let Some(absolute) =
                            reading.absolute(&owner, path.trim_end_matches(':'), false)
                        {
                            reading.sites.push(Site {
                                file: file_of(module),
                                line: number + 1,
                                module: owner,
                                reexport: false,
                                path: absolute,
                            });
                        }
                    }
                }
            }
        }
        reading
    }

    /// A path as written in `module` -> from the crate root, or `None` when it is not the
    /// crate's (a `use` of another crate).
    fn absolute(&self, module: &str, path: &str, in_use: bool) -> Option<String> {
        let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let first = *segments.first()?;
        let mut base: Vec<&str> = if module.is_empty() {
            Vec::new()
        } else {
            module.split("::").collect()
        };
        match first {
            "crate" | "$crate" => {
                segments.remove(0);
                base.clear();
            }
            "super" | "self" => {
                while let Some(&s) = segments.first() {
                    match s {
                        "super" => {
                            base.pop();
                        }
                        "self" => {}
                        _ => break,
                    }
                    segments.remove(0);
                }
            }
            // `use child::Item` in the child's parent
            _ if in_use && self.modules.contains(&join(module, first)) => {}
            _ => return None,
        }
        let mut all = base;
        all.extend(segments);
        Some(all.join("::"))
    }

    /// The module that defines what `path` (absolute) names, through `use`s.
    fn defining(&self, path: &str) -> String {
        self.defining_within(path, 0)
    }

    fn defining_within(&self, path: &str, depth: usize) -> String {
        let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let mut module = String::new();
        for (at, segment) in segments.iter().enumerate() {
            let next = join(&module, segment);
            if self.modules.contains(&next) {
                module = next;
                continue;
            }
            if depth > 16 {
                return module;
            }
            if let Some(target) = self.bindings.get(&module).and_then(|b| b.get(*segment)) {
                let rest = segments[at + 1..].join("::");
                let further = if rest.is_empty() {
                    target.clone()
                } else {
                    format!("{target}::{rest}")
                };
                return self.defining_within(&further, depth + 1);
            }
            for glob in self.globs.get(&module).into_iter().flatten() {
                let through = self.defining_within(&format!("{glob}::{segment}"), depth + 1);
                if through != *glob && self.defines(&through, segment) {
                    return through;
                }
            }
            return module;
        }
        module
    }

    fn defines(&self, module: &str, name: &str) -> bool {
        self.bindings
            .get(module)
            .is_some_and(|b| b.contains_key(name))
            || self.files.get(module).is_some_and(|code| {
                code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|word| word == name)
            })
    }

    /// Every import: (site, the module that defines what it names). Re-exports are left
    /// out: they are followed.
    fn imports(&self) -> Vec<(Site, String)> {
        self.sites
            .iter()
            .filter(|site| !site.reexport)
            .map(|site| (site.clone(), self.defining(&site.path)))
            .collect()
    }
}

fn join(module: &str, name: &str) -> String {
    if module.is_empty() {
        name.to_owned()
    } else {
        format!("{module}::{name}")
    }
}

/// A module's top-level module (`task::record` -> `task`); `""` for `lib.rs`.
fn top(module: &str) -> &str {
    module.split("::").next().unwrap_or_default()
}

/// A module's node in the graph of files: a file module of a folder (`task::record`), with
/// its own submodules (`project::index::terms`) counted as part of it.
fn node(module: &str) -> String {
    module.split("::").take(2).collect::<Vec<_>>().join("::")
}

#[test]
fn registry_core_has_its_modules_in_one_order() {
    let mut tops: BTreeSet<String> = BTreeSet::new();
    for entry in std::fs::read_dir(core_src()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            assert!(
                core_src().join(format!("{name}.rs")).is_file(),
                "the folder {name}/ has no module file {name}.rs"
            );
        } else if path.extension().is_some_and(|ext| ext == "rs") && name != "lib" {
            tops.insert(name);
        }
    }
    let order: BTreeSet<String> = ORDER.iter().map(|name| name.to_string()).collect();
    let unplaced: Vec<&String> = tops.difference(&order).collect();
    let missing: Vec<&String> = order.difference(&tops).collect();
    assert!(
        unplaced.is_empty() && missing.is_empty(),
        "registry-core/src's modules and ORDER differ: not in ORDER {unplaced:?}, in ORDER \
         but not in src {missing:?} (place a new module in ORDER, below what uses it)"
    );
    let rank = |module: &str| ORDER.iter().position(|name| *name == top(module));
    let reading = Crate::read();
    let mut against = Vec::new();
    for (site, to) in reading.imports() {
        let (Some(from_rank), Some(to_rank)) = (rank(&site.module), rank(&to)) else {
            continue; // lib.rs, the root, gathers from everywhere
        };
        if site.module.is_empty() || top(&site.module) == top(&to) || to_rank < from_rank {
            continue;
        }
        let at = format!("{}:{}", site.file, site.line);
        if !AGAINST_ORDER.iter().any(|(allowed, _)| *allowed == at) {
            against.push(format!("{at} imports {} (from {to})", site.path));
        }
    }
    assert!(
        against.is_empty(),
        "{} imports against ORDER (a module imports only those before it in ORDER; move \
         what is imported below, or the importer above):\n{}",
        against.len(),
        against.join("\n")
    );
}

#[test]
fn no_two_folders_of_registry_core_import_each_other() {
    let reading = Crate::read();
    let mut pairs: BTreeSet<(String, String)> = BTreeSet::new();
    for (site, to) in reading.imports() {
        let (from, to) = (top(&site.module), top(&to));
        if !from.is_empty() && !to.is_empty() && from != to {
            pairs.insert((from.to_owned(), to.to_owned()));
        }
    }
    let both: Vec<String> = pairs
        .iter()
        .filter(|(a, b)| a < b && pairs.contains(&(b.clone(), a.clone())))
        .map(|(a, b)| format!("{a} <-> {b}"))
        .collect();
    assert!(pairs.len() > 40, "the reading found too little: {pairs:?}");
    assert!(both.is_empty(), "folders that import each other: {both:?}");
}

#[test]
fn no_file_of_registry_core_imports_in_a_circle() {
    let reading = Crate::read();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (site, to) in reading.imports() {
        let (from, to) = (node(&site.module), node(&to));
        // A module may use its own parents' items (a folder's module file).
        if to != from && !from.starts_with(&format!("{to}::")) && !to.is_empty() && !from.is_empty()
        {
            graph.entry(from).or_default().insert(to);
        }
    }
    assert!(graph.len() > 60, "the reading found too little: {graph:?}");
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
fn the_reading_follows_re_exports_and_reads_past_a_test_item() {
    let reading = Crate::read();
    // `gate.rs` re-exports `Budget` from its file `gate/quota.rs`.
    assert_eq!(reading.defining("gate::Budget"), "gate::quota");
    // `definition.rs` only gathers: `BoxFuture` is the leaf's.
    assert_eq!(reading.defining("definition::BoxFuture"), "shared::future");
    assert_eq!(reading.defining("Subject"), "shared::subject");

    let text = "use crate::a::{self, b::B};\n\
                #[cfg(test)]\n\
                fn only_in_tests() -> crate::hidden::H { todo!() }\n\
                /// `crate::in_a_comment::C`\n\
                fn f() -> &'static str { let _ = '{'; \"crate::in_a_string\" }\n\
                pub use crate::b::B as Again;\n\
                #[cfg(test)]\n\
                mod tests {\n    use crate::tested::T;\n}\n\
                fn g() -> crate::after::Tests { super::up::U }\n";
    let files = BTreeMap::from([
        ("m".to_owned(), code_of(text)),
        ("a".to_owned(), String::new()),
        ("a::b".to_owned(), "pub struct B;".to_owned()),
    ]);
    let reading = Crate::of(files);
    let imports: Vec<(String, bool, usize)> = reading
        .sites
        .iter()
        .map(|site| (site.path.clone(), site.reexport, site.line))
        .collect();
    assert_eq!(
        imports,
        [
            ("a".to_owned(), false, 1),
            ("a::b::B".to_owned(), false, 1),
            ("b::B".to_owned(), true, 6),
            ("after::Tests".to_owned(), false, 11),
            ("up::U".to_owned(), false, 11),
        ],
        "{imports:?}"
    );
    assert_eq!(reading.defining("m::B"), "a::b");
}

#[test]
fn each_public_module_of_registry_core_is_a_file_of_its_name() {
    let lib = std::fs::read_to_string(core_src().join("lib.rs")).unwrap();
    for module in PUBLIC_MODULES {
        assert!(
            lib.lines().any(|line| line == format!("pub mod {module};")),
            "lib.rs does not declare `pub mod {module};`"
        );
        assert!(
            core_src().join(format!("{module}.rs")).is_file(),
            "registry-core/src/{module}.rs, the public module {module}, is missing"
        );
    }
    let inline: Vec<&str> = lib
        .lines()
        .filter(|line| line.starts_with("pub mod ") && line.trim_end().ends_with('{'))
        .collect();
    assert!(
        inline.is_empty(),
        "public modules written inside lib.rs (make each a file of its name): {inline:?}"
    );
    let public: BTreeSet<&str> = lib
        .lines()
        .filter_map(|line| line.strip_prefix("pub mod ")?.strip_suffix(';'))
        .filter(|name| !name.starts_with("__"))
        .collect();
    let listed: BTreeSet<&str> = PUBLIC_MODULES.into_iter().collect();
    assert_eq!(
        public, listed,
        "lib.rs's public modules and PUBLIC_MODULES differ"
    );
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
}

#[test]
fn discover_only_projects_and_the_call_path_is_its_own_step() {
    let reading = Crate::read();
    // What runs a call: resolution, approvals, execution. (A run holds its budget,
    // `gate::quota::Budget`: the run's state, not a step of the call.)
    let call_path = [
        "call",
        "resolve",
        "approval",
        "execute::execution",
        "execute::pool",
    ];
    let mut reached = BTreeSet::new();
    for (site, to) in reading.imports() {
        if top(&site.module) == "discover" {
            let wrong = call_path
                .iter()
                .any(|path| to == *path || to.starts_with(&format!("{path}::")));
            assert!(
                !wrong,
                "{}:{} reaches the call path ({to}); discover/ only projects, the call path \
                 lives in call/",
                site.file, site.line
            );
        }
        if top(&site.module) == "call" {
            reached.insert(node(&to));
        }
    }
    for step in ["resolve::call", "execute::execution", "approval::request"] {
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
