//! The upstreams' lock file: each upstream tool's definition pinned by digest, written on
//! first use (trust on first use) and on acceptance, read at start.
//!
//! Pins are keyed by (upstream, the upstream's name of the tool), never by the registry's
//! name, so two upstreams whose registry names collide never overwrite each other's pins. The
//! file names every upstream it has met in an `[upstream]` block, even one that listed no
//! tool: an upstream with a block is never trusted anew, whatever pins are missing.
//!
//! ```
//! use registry_mcp::upstream::UpstreamLock;
//!
//! let lock = UpstreamLock::from_text("format = 2\n\n[upstream]\nname = notes\n").unwrap();
//! // Met before, with no pin: its tools are withheld as new, not trusted.
//! assert!(lock.knows("notes"));
//! assert!(lock.pin("notes", "echo").is_none());
//! assert!(!lock.knows("other"));
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The first lines of every upstreams lock file.
const HEADER: &str = "\
# Upstream MCP tool definitions pinned by registry-mcp; review every change.
# [upstream]: an upstream met before (never trusted anew); [pin]: one of its tools.
# definition: the `definition` digest of registry_core::Registry::lock (name, title, description, schemas);
# annotations: SHA-256 of the upstream's annotations. Accept a change: mcp_server --accept-upstream NAME.
";

/// The format line written after the header; a file without it is read as format 1 (blocks
/// named after the registry's tool) and written as format 2 the next time it is saved.
const FORMAT: &str = "format = 2";

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

/// The upstreams met and the pins of their tools, by (upstream, the upstream's name of the
/// tool).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamLock {
    path: Option<PathBuf>,
    /// Whether `path` did not exist when it was loaded.
    missing: bool,
    /// Every upstream met: named in an `[upstream]` block.
    upstreams: BTreeSet<String>,
    pins: Pins,
}

/// Pins by (upstream, the upstream's name of the tool).
type Pins = BTreeMap<(String, String), Pin>;

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

    /// The lock file at `path`. A file that does not exist is an empty lock, created the first
    /// time it is written: every upstream is then met for the first time, which
    /// [`Federation::connect`](super::Federation::connect) logs and audits loudly for each.
    /// A file of format 1 (blocks named after the registry's tool) is read and written back
    /// as format 2.
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
                    missing: true,
                    ..UpstreamLock::default()
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
        let mut lock = UpstreamLock::from_text(&text).map_err(error)?;
        lock.path = Some(path);
        Ok(lock)
    }

    /// The lock of `text` (what [`text`](Self::text) writes, or a file of format 1), kept in
    /// memory only. The error names the line and how to fix it.
    pub fn from_text(text: &str) -> Result<UpstreamLock, String> {
        let (upstreams, pins) = parse(text)?;
        Ok(UpstreamLock {
            upstreams,
            pins,
            ..UpstreamLock::default()
        })
    }

    /// Whether the lock was loaded from a file that did not exist.
    pub fn is_missing(&self) -> bool {
        self.missing
    }

    /// The pin of `upstream`'s tool `tool` (the upstream's name of it).
    pub fn pin(&self, upstream: &str, tool: &str) -> Option<&Pin> {
        self.pins.get(&(upstream.to_owned(), tool.to_owned()))
    }

    /// Every pin, by upstream, then the upstream's name of the tool.
    pub fn pins(&self) -> impl Iterator<Item = &Pin> {
        self.pins.values()
    }

    /// Whether `upstream` was met before (the lock names it, pinned tools or not): if it was
    /// not, it is met for the first time, and its tools are trusted as they are.
    pub fn knows(&self, upstream: &str) -> bool {
        self.upstreams.contains(upstream)
    }

    /// Notes `upstream` as met: from now on it is never trusted anew.
    pub(crate) fn meet(&mut self, upstream: &str) {
        self.upstreams.insert(upstream.to_owned());
    }

    /// Pins `pin` (and notes its upstream as met).
    pub(crate) fn set(&mut self, pin: Pin) -> Result<(), String> {
        let key = (pin.upstream.clone(), pin.tool.clone());
        if self.pins.len() >= MAX_PINS && !self.pins.contains_key(&key) {
            return Err(format!("the lock already pins {MAX_PINS} tools"));
        }
        self.upstreams.insert(pin.upstream.clone());
        self.pins.insert(key, pin);
        Ok(())
    }

    /// Forgets the pin of `upstream`'s tool `tool`; the upstream stays met.
    pub(crate) fn remove(&mut self, upstream: &str, tool: &str) {
        self.pins.remove(&(upstream.to_owned(), tool.to_owned()));
    }

    /// The lock text: the header, then per upstream in name order its `[upstream]` block and
    /// one `[pin]` block per tool, in the upstream's name order.
    pub fn text(&self) -> String {
        let mut text = format!("{HEADER}{FORMAT}\n");
        for upstream in &self.upstreams {
            let _ = write!(text, "\n[upstream]\nname = {upstream}\n");
            let pins = self
                .pins
                .range((upstream.clone(), String::new())..)
                .take_while(|((of, _), _)| of == upstream);
            for (_, pin) in pins {
                let _ = write!(
                    text,
                    "\n[pin]\nupstream = {}\ntool = {}\ndefinition = {}\nannotations = {}\n",
                    pin.upstream,
                    // The upstream's own name of a tool is text from outside: quoted.
                    serde_json::to_string(&pin.tool).unwrap_or_default(),
                    pin.definition,
                    pin.annotations,
                );
            }
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

/// The upstreams met and the pins of a lock text, of format 2 (its first line that is not
/// a comment is `format = 2`) or format 1 (blocks named after the registry's tool, each
/// pinning one tool; its upstreams are taken as met).
fn parse(text: &str) -> Result<(BTreeSet<String>, Pins), String> {
    let mut upstreams = BTreeSet::new();
    let mut pins = BTreeMap::new();
    let mut format_2 = false;
    let mut current: Option<(String, BTreeMap<&str, &str>, usize)> = None;
    let mut finish = |block: Option<(String, BTreeMap<&str, &str>, usize)>,
                      format_2: bool|
     -> Result<(), String> {
        let Some((name, keys, line)) = block else {
            return Ok(());
        };
        let get = |key: &str| {
            keys.get(key).map(|value| (*value).to_owned()).ok_or_else(|| {
                format!("line {line}: [{name}] has no `{key}`; accept the upstream again (--accept-upstream) to rewrite it")
            })
        };
        if format_2 && name == "upstream" {
            upstreams.insert(get("name")?);
            return Ok(());
        }
        if format_2 && name != "pin" {
            return Err(format!(
                "line {line}: [{name}] is not a block of this file (`[upstream]` or `[pin]`); remove it"
            ));
        }
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
        upstreams.insert(pin.upstream.clone());
        let key = (pin.upstream.clone(), pin.tool.clone());
        if pins.insert(key, pin).is_some() {
            return Err(format!(
                "line {line}: this tool of this upstream is pinned twice; keep one block"
            ));
        }
        Ok(())
    };
    let mut first = true;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if std::mem::take(&mut first) && !line.starts_with('[') {
            match line {
                FORMAT => {
                    format_2 = true;
                    continue;
                }
                other if other.starts_with("format = ") => {
                    return Err(format!(
                        "line {number}: `{other}` is not a format this server reads (2, or 1 without a `format` line); use the registry-mcp that wrote it"
                    ));
                }
                _ => {}
            }
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            finish(current.take(), format_2)?;
            current = Some((name.to_owned(), BTreeMap::new(), number));
            continue;
        }
        let Some((_, keys, _)) = current.as_mut() else {
            return Err(format!(
                "line {number}: a line before the first block; remove it"
            ));
        };
        let Some((key, value)) = line.split_once(" = ") else {
            return Err(format!(
                "line {number}: not a `key = value` line; remove it or accept the upstream again"
            ));
        };
        keys.insert(key, value);
    }
    finish(current, format_2)?;
    Ok((upstreams, pins))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(upstream: &str, tool: &str) -> Pin {
        Pin {
            upstream: upstream.into(),
            tool: tool.into(),
            definition: "sha256:aa".into(),
            annotations: "sha256:bb".into(),
        }
    }

    #[test]
    fn a_lock_reads_back_what_it_wrote_hostile_names_included() {
        let mut lock = UpstreamLock::in_memory();
        let hostile = pin("notes", "search\n[evil]");
        lock.set(hostile.clone()).unwrap();
        lock.meet("empty");
        let text = lock.text();
        assert!(!text.contains("\n[evil]"));
        let read = UpstreamLock::from_text(&text).unwrap();
        assert_eq!(read.pin("notes", "search\n[evil]"), Some(&hostile));
        // An upstream met with no tool stays met.
        assert!(read.knows("empty"));
        assert_eq!(read.text(), text);
    }

    #[test]
    fn two_upstreams_whose_registry_names_collide_keep_their_own_pins() {
        // `gh` + `x_search` and `gh_x` + `search` are both the registry's `gh_x_search`.
        let mut lock = UpstreamLock::in_memory();
        lock.set(pin("gh", "x_search")).unwrap();
        let mut other = pin("gh_x", "search");
        other.definition = "sha256:cc".into();
        lock.set(other).unwrap();
        let read = UpstreamLock::from_text(&lock.text()).unwrap();
        assert_eq!(read.pin("gh", "x_search").unwrap().definition, "sha256:aa");
        assert_eq!(read.pin("gh_x", "search").unwrap().definition, "sha256:cc");
    }

    #[test]
    fn a_lock_of_format_1_is_read_and_written_as_format_2() {
        let old = "# Upstream MCP tool definitions pinned by registry-mcp (format 1)\n\n\
            [notes_echo]\nupstream = notes\ntool = \"echo\"\ndefinition = sha256:aa\nannotations = sha256:bb\n";
        let lock = UpstreamLock::from_text(old).unwrap();
        assert!(lock.knows("notes"));
        assert_eq!(lock.pin("notes", "echo"), Some(&pin("notes", "echo")));
        assert!(
            lock.text()
                .contains("format = 2\n\n[upstream]\nname = notes\n\n[pin]\n")
        );
        let error = UpstreamLock::from_text("format = 3\n").unwrap_err();
        assert!(
            error.contains("line 1: `format = 3` is not a format"),
            "{error}"
        );
    }

    #[test]
    fn a_damaged_lock_is_refused_with_its_line() {
        let error = parse("# h\n[a]\nupstream = u\n").unwrap_err();
        assert!(error.contains("line 2: [a] has no `tool`"), "{error}");
        let error = parse("stray\n").unwrap_err();
        assert!(error.starts_with("line 1:"), "{error}");
        let error = parse("format = 2\n[upstreams]\nname = a\n").unwrap_err();
        assert!(
            error.contains("line 2: [upstreams] is not a block"),
            "{error}"
        );
    }
}
