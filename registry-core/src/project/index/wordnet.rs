//! Related words derived from WordNet 3.1, restricted to the software vocabulary: the table
//! `wordnet.txt`, generated at development time by `registry-core/related-words` (which says
//! how) and kept in the source, so the build reads a file and needs nothing else. WordNet's
//! licence is `LICENSE-WordNet`, beside it.
//!
//! A target is kept only when the synset it was met in is among its own three most common
//! senses (the generator's `--target-senses 3`: "fix" is not related to "restore", whose
//! fourth sense only is "repair, mend, fix"). The index asks this table only for a query word
//! none of the run's tools has (`SearchIndex::ranked`): a word the tools use is
//! matched as itself and through the software table ([`super::synonyms`]). Both choices were
//! made on the tuning part of `bench/search-quality` (its README has the figures).
//!
//! A line is `key target/kr ...`: the stem of a query word, and the stems of the tool words
//! it relates to, each with its relation `k` ([`Relation`]) and the rank `r` (1 to 3) of the
//! key's sense it was found through, most common first.

use super::table::Table;

/// `wordnet.txt`: sorted by key, one key a line.
static TABLE: Table = Table::new(include_str!("wordnet.txt"));

/// How a target word relates to a key word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relation {
    /// A word of one of the key's synsets: the same meaning.
    Synonym,
    /// WordNet's "derivationally related form" of the key: another part of speech of it.
    Derivation,
    /// A word of a synset one step more general than one of the key's.
    Hypernym,
    /// A word of a synset one step more specific than one of the key's.
    Hyponym,
}

/// One related word: its stem, relation, and the rank of the key's sense (1 is the most
/// common).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Related<'a> {
    pub(crate) stem: &'a str,
    pub(crate) relation: Relation,
    pub(crate) rank: u8,
}

/// The words related to the stem `key`, in the table's order (by stem); none for a word the
/// table does not have.
pub(crate) fn related(key: &str) -> impl Iterator<Item = Related<'static>> {
    TABLE.entries(key).filter_map(|(stem, code)| {
        let mut code = code.chars();
        let relation = match code.next()? {
            's' => Relation::Synonym,
            'd' => Relation::Derivation,
            'h' => Relation::Hypernym,
            'o' => Relation::Hyponym,
            _ => return None,
        };
        let rank = code
            .next()?
            .to_digit(10)
            .and_then(|d| u8::try_from(d).ok())?;
        Some(Related {
            stem,
            relation,
            rank,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_well_formed_and_readable() {
        TABLE.assert_well_formed();
        for (key, rest) in TABLE.lines() {
            // Every entry's code reads as a relation and a rank.
            assert_eq!(
                related(key).count(),
                rest.split(' ').count(),
                "{key}: {rest}"
            );
            for word in related(key) {
                assert!((1..=3).contains(&word.rank), "{key}: {rest}");
            }
        }
    }

    #[test]
    fn finds_the_relations_of_a_word() {
        let of = |key: &str| {
            related(key)
                .map(|r| (r.stem, r.relation))
                .collect::<Vec<_>>()
        };
        assert!(
            of("delet").contains(&("eras", Relation::Synonym)),
            "{:?}",
            of("delet")
        );
        assert!(of("watcher").contains(&("watch", Relation::Derivation)));
        assert!(of("photo").contains(&("represent", Relation::Hypernym)));
        // Not through a rare sense of the target: "fix" is a synonym of "restore" in restore's
        // fourth sense only.
        assert!(!of("fix").iter().any(|(stem, _)| *stem == "restor"));
        assert!(of("zzz").is_empty());
        assert!(of("").is_empty());
    }
}
