//! The upstreams' lock file: each upstream tool's definition pinned by digest, written on
//! first use (trust on first use) and on acceptance, read at start.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The first lines of every upstreams lock file.
const HEADER: &str = "\
# Upstream MCP tool definitions pinned by registry-mcp (format 1); review every change.
# definition: the `definition` digest of registry_core::Registry::lock (name, title, description, schemas);
# annotations: SHA-256 of the upstream's annotations. Accept a change: mcp_server --accept-upstream NAME.
";

/// The most tools a lock file may pin.
pub const MAX_PINS: usize = 10_000;

/// The largest lock file read.
const MAX_LOCK_BYTES: u64 = 16 << 20;

/// What is pinned of one upstream tool.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pin {
    /// The upstream it comes from.
    pub upstream: String,
    /// Its name on the upstream.
    pub tool: String,
    /// The digest of its definition as the registry has it
    /// ([`DynamicTool::definition_digest`](registry_core::DynamicTool::definition_digest)).
    pub definition: String,
    /// The digest of the upstream's annotations of it.
    pub annotations: String,
}

/// The pins of every upstream tool, by the registry's name of the tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamLock {
    path: Option<PathBuf>,
    pins: BTreeMap<String, Pin>,
}

/// A lock file that cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct LockError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong, and how to fix it.
    pub message: String,
}

impl UpstreamLock {
    /// An empty lock kept in memory only: every upstream is trusted on first use in this
    /// process, and forgotten at its end.
    pub fn in_memory() -> UpstreamLock {
        UpstreamLock::default()
    }

    /// The lock file at `path`; a file that does not exist is an empty lock, created the first
    /// time a pin is written.
    pub fn load(path: impl AsRef<Path>) -> Result<UpstreamLock, LockError> {
        let path = path.as_ref().to_owned();
        let error = |message: String| LockError {
            path: path.clone(),
            message,
        };
        let text = match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(UpstreamLock {
                    path: Some(path),
                    pins: BTreeMap::new(),
                });
            }
            Err(e) => return Err(error(format!("cannot read the lock file: {e}"))),
            Ok(meta) if meta.len() > MAX_LOCK_BYTES => {
                return Err(error(format!(
                    "the lock file is larger than {MAX_LOCK_BYTES} bytes; it is not one this server wrote"
                )));
            }
            Ok(_) => std::fs::read_to_string(&path)
                .map_err(|e| error(format!("cannot read the lock file: {e}")))?,
        };
        let pins = parse(&text).map_err(error)?;
        Ok(UpstreamLock {
            path: Some(path),
            pins,
        })
    }

    /// The pin of the registry's tool `name`.
    pub fn pin(&self, name: &str) -> Option<&Pin> {
        self.pins.get(name)
    }

    /// Every pin, by the registry's name of the tool.
    pub fn pins(&self) -> &BTreeMap<String, Pin> {
        &self.pins
    }

    /// Whether any tool of `upstream` is pinned: if none is, the upstream is met for the first
    /// time, and its tools are trusted as they are.
    pub fn knows(&self, upstream: &str) -> bool {
        self.pins.values().any(|pin| pin.upstream == upstream)
    }

    /// Pins `pin` as the registry's tool `name`.
    pub(crate) fn set(&mut self, name: String, pin: Pin) -> Result<(), String> {
        if self.pins.len() >= MAX_PINS && !self.pins.contains_key(&name) {
            return Err(format!("the lock already pins {MAX_PINS} tools"));
        }
        self.pins.insert(name, pin);
        Ok(())
    }

    /// Forgets the pin of the registry's tool `name`.
    pub(crate) fn remove(&mut self, name: &str) {
        self.pins.remove(name);
    }

    /// The lock text: the header, then one block per tool in name order.
    pub fn text(&self) -> String {
        let mut text = String::from(HEADER);
        for (name, pin) in &self.pins {
            let _ = write!(
                text,
                "\n[{name}]\nupstream = {}\ntool = {}\ndefinition = {}\nannotations = {}\n",
                pin.upstream,
                // The upstream's own name of a tool is text from outside: quoted.
                serde_json::to_string(&pin.tool).unwrap_or_default(),
                pin.definition,
                pin.annotations,
            );
        }
        text
    }

    /// Writes the lock file (through a temporary file and a rename, so that a reader never
    /// sees half of it); nothing for a lock in memory.
    pub(crate) fn save(&self) -> Result<(), LockError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let error = |message: String| LockError {
            path: path.clone(),
            message,
        };
        let text = self.text();
        if std::fs::read_to_string(path).ok().as_deref() == Some(text.as_str()) {
            return Ok(());
        }
        let mut temporary = path.clone().into_os_string();
        temporary.push(".tmp");
        std::fs::write(&temporary, text)
            .map_err(|e| error(format!("cannot write the lock file: {e}")))?;
        std::fs::rename(&temporary, path)
            .map_err(|e| error(format!("cannot write the lock file: {e}")))
    }
}

/// The pins of a lock text.
fn parse(text: &str) -> Result<BTreeMap<String, Pin>, String> {
    let mut pins = BTreeMap::new();
    let mut current: Option<(String, BTreeMap<&str, &str>, usize)> = None;
    let finish = |block: Option<(String, BTreeMap<&str, &str>, usize)>,
                  pins: &mut BTreeMap<String, Pin>|
     -> Result<(), String> {
        let Some((name, keys, line)) = block else {
            return Ok(());
        };
        let get = |key: &str| {
            keys.get(key).map(|value| (*value).to_owned()).ok_or_else(|| {
                format!("line {line}: [{name}] has no `{key}`; accept the upstream again (--accept-upstream) to rewrite it")
            })
        };
        let tool = serde_json::from_str::<String>(&get("tool")?)
            .map_err(|_| format!("line {line}: [{name}]: `tool` is not a quoted string"))?;
        let pin = Pin {
            upstream: get("upstream")?,
            tool,
            definition: get("definition")?,
            annotations: get("annotations")?,
        };
        if pins.len() >= MAX_PINS {
            return Err(format!("more than {MAX_PINS} pins"));
        }
        if pins.insert(name.clone(), pin).is_some() {
            return Err(format!(
                "line {line}: [{name}] is pinned twice; keep one block"
            ));
        }
        Ok(())
    };
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            finish(current.take(), &mut pins)?;
            current = Some((name.to_owned(), BTreeMap::new(), number));
            continue;
        }
        let Some((_, keys, _)) = current.as_mut() else {
            return Err(format!(
                "line {number}: a line before the first `[tool]` block; remove it"
            ));
        };
        let Some((key, value)) = line.split_once(" = ") else {
            return Err(format!(
                "line {number}: not a `key = value` line; remove it or accept the upstream again"
            ));
        };
        keys.insert(key, value);
    }
    finish(current, &mut pins)?;
    Ok(pins)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_reads_back_what_it_wrote_hostile_names_included() {
        let mut lock = UpstreamLock::in_memory();
        let pin = Pin {
            upstream: "notes".into(),
            tool: "search\n[evil]".into(),
            definition: "sha256:aa".into(),
            annotations: "sha256:bb".into(),
        };
        lock.set("notes_search".into(), pin.clone()).unwrap();
        let text = lock.text();
        assert!(!text.contains("\n[evil]"));
        let read = parse(&text).unwrap();
        assert_eq!(read["notes_search"], pin);
    }

    #[test]
    fn a_damaged_lock_is_refused_with_its_line() {
        let error = parse("# h\n[a]\nupstream = u\n").unwrap_err();
        assert!(error.contains("line 2: [a] has no `tool`"), "{error}");
        let error = parse("stray\n").unwrap_err();
        assert!(error.starts_with("line 1:"), "{error}");
    }
}
