//! Related words of the software-tool vocabulary, for expanding a query.
//!
//! Users do not speak in tool names: they say "remove" where the tool says `delete`, "folder"
//! where it says `directory`. A query's word `w` listed below also looks for the words listed
//! with it, at a lower weight ([`super::EXPANSION`]), so a tool that uses the query's own word
//! still ranks first. The relation is one way: `("remove", &["delete"])` finds `delete` for
//! "remove", not `remove` for "delete".
//!
//! **Where it comes from.** Generated, not written: `derive-related` in `bench/search-quality`
//! keeps a pair `w -> r` of the candidate groups (`bench/search-quality/related-candidates.txt`,
//! ~110 groups of the software vocabulary written by hand) only when a query of the *tuning*
//! part of the labelled set has the word `w` and one of its relevant tools has `r` but not `w`:
//! a tuning query that needed that bridge. The held-out part is never read, so no pair exists
//! because of a held-out query, and the held-out figures measure how the table generalises.
//! Words are written plainly and stemmed like every other term when the index is built.
//!
//! Beside it, a table derived from WordNet 3.1 ([`super::wordnet`]) relates a query word that
//! none of the run's tools has, at a lower weight; this table is asked for every query word.
//!
//! To regenerate: `cd bench/search-quality && cargo run --release --bin derive-related`, and
//! replace the array below with its output (then `cargo fmt`).

// Derived by bench/search-quality's `derive-related` from 108 candidate groups
// (1404 ordered pairs): 86 pairs kept, evidenced by the tuning part's 179 queries over 241 tools.
pub(crate) const RELATED: &[(&str, &[&str])] = &[
    ("account", &["user"]),                     // tuning queries: 1
    ("add", &["create", "sum"]),                // tuning queries: 2, 1
    ("all", &["list"]),                         // tuning queries: 1
    ("attach", &["upload"]),                    // tuning queries: 1
    ("bill", &["invoice"]),                     // tuning queries: 1
    ("billing", &["invoice"]),                  // tuning queries: 1
    ("button", &["element", "selector"]),       // tuning queries: 1, 1
    ("capture", &["screenshot", "snapshot"]),   // tuning queries: 1, 1
    ("change", &["modify", "patch", "update"]), // tuning queries: 1, 2, 2
    ("chargeback", &["dispute", "refund"]),     // tuning queries: 2, 1
    ("cluster", &["server"]),                   // tuning queries: 2
    ("compare", &["diff", "difference"]),       // tuning queries: 1, 1
    ("crash", &["error"]),                      // tuning queries: 1
    ("date", &["time"]),                        // tuning queries: 1
    ("db", &["database", "sql", "table"]),      // tuning queries: 2, 2, 1
    ("doc", &["document"]),                     // tuning queries: 3
    ("docs", &["documentation"]),               // tuning queries: 3
    ("document", &["file"]),                    // tuning queries: 1
    ("documentation", &["reference"]),          // tuning queries: 1
    ("draw", &["image"]),                       // tuning queries: 1
    ("drawing", &["image"]),                    // tuning queries: 1
    ("enter", &["fill", "input", "type"]),      // tuning queries: 1, 1, 1
    ("erase", &["delete"]),                     // tuning queries: 1
    ("find", &["locate", "query", "search"]),   // tuning queries: 1, 2, 2
    ("folder", &["dir", "directory"]),          // tuning queries: 2, 5
    ("get", &["retrieve"]),                     // tuning queries: 2
    ("history", &["log"]),                      // tuning queries: 1
    ("install", &["setup"]),                    // tuning queries: 1
    ("internet", &["online", "web"]),           // tuning queries: 1, 1
    ("link", &["relation"]),                    // tuning queries: 1
    ("list", &["all"]),                         // tuning queries: 2
    ("make", &["create", "new"]),               // tuning queries: 3, 3
    ("modify", &["change"]),                    // tuning queries: 1
    ("new", &["create", "insert"]),             // tuning queries: 1, 1
    ("open", &["navigate"]),                    // tuning queries: 2
    ("org", &["organization"]),                 // tuning queries: 1
    ("pay", &["payment"]),                      // tuning queries: 1
    ("picture", &["image"]),                    // tuning queries: 1
    ("plan", &["subscription"]),                // tuning queries: 1
    ("press", &["click"]),                      // tuning queries: 1
    ("production", &["environment"]),           // tuning queries: 1
    ("recurring", &["subscription"]),           // tuning queries: 1
    ("remember", &["knowledge", "memory"]),     // tuning queries: 1, 1
    ("remove", &["delete"]),                    // tuning queries: 4
    ("repeat", &["echo"]),                      // tuning queries: 1
    ("repository", &["repo"]),                  // tuning queries: 1
    ("route", &["address", "coordinates", "directions", "map"]), // tuning queries: 1, 1, 1, 1
    ("run", &["execute"]),                      // tuning queries: 4
    ("save", &["write"]),                       // tuning queries: 1
    ("sdk", &["library"]),                      // tuning queries: 1
    ("ship", &["deploy", "release"]),           // tuning queries: 1, 1
    ("show", &["get", "read"]),                 // tuning queries: 1, 2
    ("state", &["progress", "status"]),         // tuning queries: 1, 2
    ("stop", &["cancel"]),                      // tuning queries: 1
    ("table", &["database", "sql"]),            // tuning queries: 2, 2
    ("text", &["body", "content"]),             // tuning queries: 1, 2
    ("type", &["fill", "input"]),               // tuning queries: 1, 2
    ("watcher", &["monitor"]),                  // tuning queries: 2
    ("website", &["page"]),                     // tuning queries: 1
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_lowercase_sorted_and_distinct() {
        for pair in RELATED.windows(2) {
            assert!(
                pair[0].0 < pair[1].0,
                "{:?} before {:?}",
                pair[0].0,
                pair[1].0
            );
        }
        for (word, related) in RELATED {
            assert!(word.bytes().all(|b| b.is_ascii_lowercase()), "{word}");
            assert!((1..=12).contains(&related.len()), "{word}");
            for pair in related.windows(2) {
                assert!(pair[0] < pair[1], "{word}: {related:?}");
            }
            for other in *related {
                assert!(other.bytes().all(|b| b.is_ascii_lowercase()), "{other}");
                assert_ne!(other, word);
            }
        }
    }
}
