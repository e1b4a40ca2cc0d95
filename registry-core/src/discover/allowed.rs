//! The allowed set: the tools one run may call, fixed when the run is opened.

use std::sync::Arc;

use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::discover::discovery::Entry;
use crate::discover::fingerprint::Fingerprint;
use crate::discover::subject::Subject;

/// The tools one run may call: exactly those it was shown, frozen when the run was opened.
///
/// It records where it came from (run id, subject) and a stable fingerprint of exactly what
/// was shown (names and definitions), so that the model's context, the check of each call and
/// the audit log refer to one boundary. Refreshing permissions means opening a new run.
#[derive(Debug, Clone)]
pub struct AllowedSet {
    entries: Arc<[Entry]>,
    run_id: Arc<str>,
    subject: Subject,
    fingerprint: Fingerprint,
    /// Computed when first asked for (an audit event, a caller).
    versions: std::sync::OnceLock<Fingerprint>,
}

impl AllowedSet {
    pub(crate) fn new(entries: Vec<Entry>, run_id: Arc<str>, subject: Subject) -> Self {
        let fingerprint = Fingerprint::of_named(
            entries
                .iter()
                .map(|entry| (entry.tool.name(), entry.tool.fingerprint())),
        );
        AllowedSet {
            entries: entries.into(),
            run_id,
            subject,
            fingerprint,
            versions: std::sync::OnceLock::new(),
        }
    }

    /// Whether the run may call `name`, matched exactly (case and every character).
    pub fn permits(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    pub(crate) fn find(&self, name: &str) -> Option<&Entry> {
        self.entries
            .binary_search_by(|entry| entry.tool.name().cmp(name))
            .ok()
            .map(|index| &self.entries[index])
    }

    pub(crate) fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The names, sorted.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.entries.iter().map(|entry| entry.tool.name())
    }

    /// How many tools the run may call.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the run may call no tool at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The fingerprint of what the run was shown: each tool's name and
    /// [`Tool::fingerprint`](crate::Tool::fingerprint).
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// The fingerprint of what the run may execute: each tool's name and
    /// [`Tool::version_fingerprint`](crate::Tool::version_fingerprint), so scopes, tenants
    /// and gate flags too. Two runs shown the same tools whose gate differs differ here, not
    /// in [`fingerprint`](Self::fingerprint).
    pub fn version_fingerprint(&self) -> Fingerprint {
        *self.versions.get_or_init(|| {
            Fingerprint::of_named(
                self.entries
                    .iter()
                    .map(|entry| (entry.tool.name(), entry.tool.version_fingerprint())),
            )
        })
    }

    /// The run it belongs to.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The subject it was projected for.
    pub fn subject(&self) -> &Subject {
        &self.subject
    }
}

impl Serialize for AllowedSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("AllowedSet", 4)?;
        state.serialize_field("run_id", &*self.run_id)?;
        state.serialize_field("subject", &self.subject)?;
        state.serialize_field("fingerprint", &self.fingerprint)?;
        state.serialize_field("tools", &self.names().collect::<Vec<_>>())?;
        state.end()
    }
}
