//! The allowed set: the tools one run may call, fixed when the run is opened.

use std::sync::Arc;

use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::project::discovery::{Entry, FrozenSet, Snapshot};
use crate::shared::fingerprint::Fingerprint;
use crate::shared::subject::Subject;

/// The tools one run may call: exactly those it was shown, frozen when the run was opened.
///
/// It records where it came from (run id, subject) and a stable fingerprint of exactly what
/// was shown (names and definitions), so that the model's context, the check of each call and
/// the audit log refer to one boundary. Refreshing permissions means opening a new run
/// ([`Registry::reopen`](crate::Registry::reopen) opens one for the same subject, once
/// [`Run::is_current`](crate::Run::is_current) says the registry changed).
#[derive(Clone)]
pub struct AllowedSet {
    /// The registry's versions the run was projected from.
    snapshot: Arc<Snapshot>,
    /// The visible slots of `snapshot` with their fingerprints, shared by the runs of the
    /// snapshot allowed the same set.
    set: Arc<FrozenSet>,
    run_id: Arc<str>,
    subject: Subject,
}

impl AllowedSet {
    /// The set of `slots` (increasing) of `snapshot`.
    pub(crate) fn new(
        snapshot: Arc<Snapshot>,
        slots: Vec<usize>,
        run_id: Arc<str>,
        subject: Subject,
    ) -> Self {
        let set = snapshot.freeze(slots);
        AllowedSet {
            snapshot,
            set,
            run_id,
            subject,
        }
    }

    /// Whether the run may call `name`, matched exactly (case and every character).
    pub fn permits(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    pub(crate) fn find(&self, name: &str) -> Option<&Entry> {
        let entries = self.snapshot.entries();
        let slots = &self.set.slots;
        slots
            .binary_search_by(|&slot| entries[slot].tool.name().cmp(name))
            .ok()
            .map(|index| &entries[slots[index]])
    }

    /// The tools, with their slots and versions, in name order.
    pub(crate) fn entries(&self) -> Entries<'_> {
        Entries {
            entries: self.snapshot.entries(),
            slots: &self.set.slots,
        }
    }

    /// The snapshot the set was projected from.
    pub(crate) fn snapshot(&self) -> &Arc<Snapshot> {
        &self.snapshot
    }

    /// The names, sorted.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.entries().iter().map(|entry| entry.tool.name())
    }

    /// How many tools the run may call.
    pub fn len(&self) -> usize {
        self.set.slots.len()
    }

    /// Whether the run may call no tool at all.
    pub fn is_empty(&self) -> bool {
        self.set.slots.is_empty()
    }

    /// The fingerprint of what the run was shown: each tool's name and
    /// [`Tool::fingerprint`](crate::Tool::fingerprint).
    pub fn fingerprint(&self) -> Fingerprint {
        self.set.fingerprint
    }

    /// The fingerprint of what the run may execute: each tool's name and
    /// [`Tool::version_fingerprint`](crate::Tool::version_fingerprint), so scopes, tenants
    /// and gate flags too. Two runs shown the same tools whose gate differs differ here, not
    /// in [`fingerprint`](Self::fingerprint).
    pub fn version_fingerprint(&self) -> Fingerprint {
        *self.set.versions.get_or_init(|| {
            Fingerprint::of_named(
                self.entries()
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

/// The entries of an allowed set, in name order: its slots of the snapshot's entries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entries<'a> {
    entries: &'a [Entry],
    slots: &'a [usize],
}

impl<'a> Entries<'a> {
    pub(crate) fn iter(self) -> EntryIter<'a> {
        EntryIter {
            entries: self.entries,
            slots: self.slots.iter(),
        }
    }

    /// The entry of `slot`, if the set holds it.
    pub(crate) fn of_slot(self, slot: usize) -> Option<&'a Entry> {
        self.slots
            .binary_search(&slot)
            .ok()
            .map(|_| &self.entries[slot])
    }
}

impl<'a> IntoIterator for Entries<'a> {
    type Item = &'a Entry;
    type IntoIter = EntryIter<'a>;

    fn into_iter(self) -> EntryIter<'a> {
        self.iter()
    }
}

/// The entries of an allowed set, one by one, in name order.
#[derive(Debug, Clone)]
pub(crate) struct EntryIter<'a> {
    entries: &'a [Entry],
    slots: std::slice::Iter<'a, usize>,
}

impl<'a> Iterator for EntryIter<'a> {
    type Item = &'a Entry;

    fn next(&mut self) -> Option<&'a Entry> {
        self.slots.next().map(|&slot| &self.entries[slot])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.slots.size_hint()
    }
}

impl DoubleEndedIterator for EntryIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.slots.next_back().map(|&slot| &self.entries[slot])
    }
}

impl ExactSizeIterator for EntryIter<'_> {}

impl std::fmt::Debug for AllowedSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The tools by name: the registry version they come from is the registry's to show.
        f.debug_struct("AllowedSet")
            .field("run_id", &self.run_id)
            .field("subject", &self.subject)
            .field("fingerprint", &self.set.fingerprint)
            .field("tools", &self.names().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Serialize for AllowedSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut state = serializer.serialize_struct("AllowedSet", 4)?;
        state.serialize_field("run_id", &*self.run_id)?;
        state.serialize_field("subject", &self.subject)?;
        state.serialize_field("fingerprint", &self.set.fingerprint)?;
        state.serialize_field("tools", &self.names().collect::<Vec<_>>())?;
        state.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::change::ReplaceOptions;
    use crate::{DynamicTool, Fingerprint, Registry, Subject, Tool};

    fn tool(name: &str, description: &str, scope: Option<&str>) -> DynamicTool {
        let tool = DynamicTool::new(name, description)
            .parameters(json!({"type": "object", "properties": {}}))
            .handler(|_, _| Ok::<_, String>(Value::Null));
        match scope {
            Some(scope) => tool.scopes([scope]),
            None => tool.public(),
        }
    }

    /// The names and `of` each visible tool, read from the tool itself, fingerprinted.
    fn read_from_the_tools(
        allowed: &super::AllowedSet,
        of: fn(&Tool) -> Fingerprint,
    ) -> Fingerprint {
        Fingerprint::of_named(
            allowed
                .entries()
                .iter()
                .map(|entry| (entry.tool.name(), of(&entry.tool))),
        )
    }

    /// The set fingerprint as the names and fingerprints read from each visible tool itself.
    fn from_the_tools(allowed: &super::AllowedSet) -> Fingerprint {
        read_from_the_tools(allowed, Tool::fingerprint)
    }

    /// The version fingerprint as the names and versions read from each visible tool.
    fn versions_from_the_tools(allowed: &super::AllowedSet) -> Fingerprint {
        read_from_the_tools(allowed, Tool::version_fingerprint)
    }

    #[test]
    fn the_set_fingerprint_reads_the_snapshots_arrays_as_the_tools_themselves() {
        let registry = Registry::builder()
            .tool(tool("a", "Does a.", None))
            .tool(tool("b_long_name_of_a_tool", "Does b.", Some("x:read")))
            .tool(tool("c", "Does c.", Some("y:read")))
            .tool(tool("d", "Does d.", Some("x:read")))
            .tool(tool("e", "Does e.", None))
            .build()
            .unwrap();
        for scopes in [
            vec![],
            vec!["x:read"],
            vec!["y:read"],
            vec!["x:read", "y:read"],
        ] {
            let run = registry.open_run("r", &Subject::new("t").with_scopes(scopes.clone()));
            assert!(!run.allowed().is_empty(), "{scopes:?}");
            assert_eq!(run.allowed().fingerprint(), from_the_tools(run.allowed()));
        }
        // A replacement makes a new snapshot: its arrays hold the new tool's fingerprint.
        let subject = Subject::new("t").with_scopes(["x:read"]);
        let before = registry.open_run("r1", &subject).allowed().fingerprint();
        registry
            .replace(
                tool("d", "Does d, differently.", Some("x:read")),
                ReplaceOptions::keep_old_runs("a new description"),
            )
            .unwrap();
        let run = registry.open_run("r2", &subject);
        assert_eq!(run.allowed().fingerprint(), from_the_tools(run.allowed()));
        assert_ne!(run.allowed().fingerprint(), before);
    }

    #[test]
    fn names_of_every_length_fingerprint_as_read_from_the_tools() {
        // Names of 1 to 40 bytes, the longest last; then with a short name after it: the
        // arrays of the snapshot hold each at its place, up to the last.
        for short_last in [false, true] {
            let mut builder = Registry::builder();
            for len in 1..=40 {
                let scope = if len % 2 == 0 {
                    Some("even:read")
                } else {
                    None
                };
                builder =
                    builder.tool(tool(&format!("t{}", "x".repeat(len - 1)), "Does t.", scope));
            }
            if short_last {
                builder = builder.tool(tool("u", "Does u.", None));
            }
            let registry = builder.build().unwrap();
            for scopes in [vec![], vec!["even:read"]] {
                let run = registry.open_run("r", &Subject::new("t").with_scopes(scopes.clone()));
                assert_eq!(
                    run.allowed().fingerprint(),
                    from_the_tools(run.allowed()),
                    "{scopes:?}, short last: {short_last}"
                );
            }
        }
    }

    /// `count` tools `tool_00`, `tool_01`, ..., each requiring its own scope `area{i}:read`.
    fn one_scope_each(count: usize) -> Registry {
        (0..count)
            .fold(Registry::builder(), |builder, index| {
                builder.tool(tool(
                    &format!("tool_{index:02}"),
                    "Does one thing.",
                    Some(&format!("area{index}:read")),
                ))
            })
            .build()
            .unwrap()
    }

    #[test]
    fn a_remembered_set_fingerprint_is_the_one_hashing_gives_and_the_memory_is_bounded() {
        // 40 tools, each requiring one of 40 scopes: a subject holding scopes 0..k sees the
        // first k tools (names sort as their numbers), 41 distinct sets in all.
        let registry = one_scope_each(40);
        let subject = |k: usize| {
            Subject::new("t").with_scopes((0..k).map(|index| format!("area{index}:read")))
        };
        let first = registry.open_run("r", &subject(3));
        let again = registry.open_run("r", &subject(3));
        assert_eq!(again.allowed().len(), 3);
        assert_eq!(
            again.allowed().fingerprint(),
            from_the_tools(again.allowed())
        );
        assert!(
            std::sync::Arc::ptr_eq(&first.allowed().set, &again.allowed().set),
            "a second run of the same set shares the first's slots and fingerprints"
        );
        // Twice round more sets than a snapshot remembers: each is evicted before it comes
        // back, and every fingerprint, hashed or remembered, is the tools' own.
        for round in 0..2 {
            for k in 0..=40 {
                let run = registry.open_run("r", &subject(k));
                assert_eq!(run.allowed().len(), k);
                assert_eq!(
                    run.allowed().fingerprint(),
                    from_the_tools(run.allowed()),
                    "round {round}, {k} tools"
                );
                let again = registry.open_run("r", &subject(k));
                assert_eq!(again.allowed().fingerprint(), run.allowed().fingerprint());
                // The version fingerprint, computed by one run and shared with the other.
                let versions = versions_from_the_tools(run.allowed());
                assert_eq!(again.allowed().version_fingerprint(), versions);
                assert_eq!(run.allowed().version_fingerprint(), versions);
            }
            // Sets of the same size that differ: each its own fingerprint.
            let mut seen = std::collections::HashSet::new();
            for index in 0..40 {
                let only = Subject::new("t").with_scopes([format!("area{index}:read")]);
                let run = registry.open_run("r", &only);
                assert_eq!(
                    run.allowed().names().collect::<Vec<_>>(),
                    [format!("tool_{index:02}")]
                );
                assert_eq!(run.allowed().fingerprint(), from_the_tools(run.allowed()));
                assert_eq!(
                    run.allowed().version_fingerprint(),
                    versions_from_the_tools(run.allowed())
                );
                assert!(
                    seen.insert(run.allowed().fingerprint()),
                    "round {round}, tool {index}"
                );
            }
        }
        let snapshot = registry
            .open_run("r", &subject(1))
            .allowed()
            .snapshot()
            .clone();
        assert_eq!(
            snapshot.remembered_sets(),
            crate::project::discovery::RECENT_SETS
        );
        // A revocation changes what a subject sees, so its set and fingerprint too.
        let before = registry.open_run("r", &subject(5)).allowed().fingerprint();
        registry.revoke("tool_02", "broken").unwrap();
        let run = registry.open_run("r", &subject(5));
        assert_eq!(run.allowed().len(), 4);
        assert_ne!(run.allowed().fingerprint(), before);
        assert_eq!(run.allowed().fingerprint(), from_the_tools(run.allowed()));
    }

    #[test]
    fn runs_opened_at_once_on_many_threads_get_their_own_sets_fingerprint() {
        // 24 sets (more than a snapshot remembers) opened by four threads at once, each in its
        // own order: every run's fingerprint is the one read from its own tools.
        let registry = one_scope_each(24);
        std::thread::scope(|scope| {
            for thread in 0..4 {
                let registry = &registry;
                scope.spawn(move || {
                    for turn in 0..300 {
                        let k = (turn * (thread + 1) + thread) % 25;
                        let subject = Subject::new("t")
                            .with_scopes((0..k).map(|index| format!("area{index}:read")));
                        let run = registry.open_run("r", &subject);
                        assert_eq!(run.allowed().len(), k);
                        assert_eq!(run.allowed().fingerprint(), from_the_tools(run.allowed()));
                    }
                });
            }
        });
    }
}
