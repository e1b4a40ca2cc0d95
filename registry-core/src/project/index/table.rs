//! A table of related words kept in the source: one line per key, sorted by key,
//! `key target/code target/code ...`, where `code` is what the table says of the target (a
//! relation and a rank for [`super::wordnet`], a similarity for [`super::neighbours`]).

use std::sync::OnceLock;

/// A table's text, split into lines once per process, the first time it is asked.
pub(crate) struct Table {
    text: &'static str,
    lines: OnceLock<Vec<(&'static str, &'static str)>>,
}

impl Table {
    /// The table whose text is `text` (an `include_str!` of the generated file).
    pub(crate) const fn new(text: &'static str) -> Self {
        Self {
            text,
            lines: OnceLock::new(),
        }
    }

    /// The lines: (key, the rest of the line).
    pub(crate) fn lines(&self) -> &[(&'static str, &'static str)] {
        self.lines.get_or_init(|| {
            self.text
                .lines()
                .map(|line| line.split_once(' ').unwrap_or((line, "")))
                .collect()
        })
    }

    /// The entries of `key`, in the table's order, each split at its `/`: (target, code);
    /// none for a key the table does not have.
    pub(crate) fn entries(&self, key: &str) -> impl Iterator<Item = (&'static str, &'static str)> {
        let lines = self.lines();
        let rest = lines
            .binary_search_by(|(line_key, _)| (*line_key).cmp(key))
            .map_or("", |at| lines[at].1);
        rest.split(' ').filter_map(|entry| entry.split_once('/'))
    }

    /// Panics unless the table has over a thousand keys, sorted, each of lowercase letters,
    /// and every entry of each is `target/code` with a lowercase target other than the key.
    #[cfg(test)]
    pub(crate) fn assert_well_formed(&self) {
        let lines = self.lines();
        assert!(lines.len() > 1_000, "{} lines", lines.len());
        for pair in lines.windows(2) {
            assert!(
                pair[0].0 < pair[1].0,
                "{:?} before {:?}",
                pair[0].0,
                pair[1].0
            );
        }
        for (key, rest) in lines {
            assert!(key.bytes().all(|b| b.is_ascii_lowercase()), "{key}");
            assert_eq!(
                self.entries(key).count(),
                rest.split(' ').count(),
                "{key}: {rest}"
            );
            for (target, _) in self.entries(key) {
                assert_ne!(target, *key);
                assert!(
                    target.bytes().all(|b| b.is_ascii_lowercase()),
                    "{key}: {rest}"
                );
            }
        }
    }
}
