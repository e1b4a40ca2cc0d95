//! Stable fingerprints of what a model was shown.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A stable 128-bit fingerprint (XXH3) of tool definitions: the same definitions give the
/// same fingerprint in every process and on every machine. It identifies, it does not
/// authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(u128);

impl Fingerprint {
    /// The fingerprint of one JSON document's bytes.
    pub(crate) fn of_bytes(bytes: &[u8]) -> Self {
        Fingerprint(xxhash_rust::xxh3::xxh3_128(bytes))
    }

    /// The fingerprint of a sequence of named fingerprints, in order: XXH3 of each name's
    /// length (8 bytes, little-endian), the name and the fingerprint (16 bytes,
    /// little-endian), one after the other. The bytes are laid out first and hashed in one
    /// pass, which gives what hashing them piece by piece gives, several times faster for a
    /// run's hundreds of short names.
    pub(crate) fn of_named<N: AsRef<[u8]>>(items: impl Iterator<Item = (N, Fingerprint)>) -> Self {
        let mut bytes = Vec::with_capacity(items.size_hint().0 * 48);
        for (name, fingerprint) in items {
            let name = name.as_ref();
            bytes.extend_from_slice(&(name.len() as u64).to_le_bytes());
            bytes.extend_from_slice(name);
            bytes.extend_from_slice(&fingerprint.0.to_le_bytes());
        }
        Fingerprint(xxhash_rust::xxh3::xxh3_128(&bytes))
    }

    /// [`of_named`](Self::of_named) of items whose names already have their length before
    /// them (8 bytes, little-endian): one copy per item instead of two.
    pub(crate) fn of_prefixed<'a>(items: impl Iterator<Item = (&'a [u8], Fingerprint)>) -> Self {
        let mut bytes = Vec::with_capacity(items.size_hint().0 * 48);
        for (prefixed, fingerprint) in items {
            bytes.extend_from_slice(prefixed);
            bytes.extend_from_slice(&fingerprint.0.to_le_bytes());
        }
        Fingerprint(xxhash_rust::xxh3::xxh3_128(&bytes))
    }

    /// A fingerprint of these bits, as [`as_u128`](Self::as_u128) gave them.
    pub(crate) fn from_u128(bits: u128) -> Self {
        Fingerprint(bits)
    }

    /// The 128 bits.
    pub fn as_u128(self) -> u128 {
        self.0
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl Serialize for Fingerprint {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Fingerprint {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        if text.len() != 32 {
            return Err(serde::de::Error::custom(format!(
                "a fingerprint is 32 hexadecimal digits, not {text:?}"
            )));
        }
        u128::from_str_radix(&text, 16)
            .map(Fingerprint)
            .map_err(|_| {
                serde::de::Error::custom(format!(
                    "a fingerprint is 32 hexadecimal digits, not {text:?}"
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use xxhash_rust::xxh3::Xxh3;

    use super::Fingerprint;

    /// What `of_named` hashed before: the same bytes, piece by piece.
    fn streamed(items: &[(String, Fingerprint)]) -> Fingerprint {
        let mut hasher = Xxh3::new();
        for (name, fingerprint) in items {
            hasher.update(&(name.len() as u64).to_le_bytes());
            hasher.update(name.as_bytes());
            hasher.update(&fingerprint.0.to_le_bytes());
        }
        Fingerprint(hasher.digest128())
    }

    #[test]
    fn a_set_fingerprint_is_the_one_hashed_piece_by_piece() {
        // Empty, short (under one stripe), and long inputs that cross XXH3's blocks, with
        // names of every length up to a few hundred bytes.
        for count in [0, 1, 2, 5, 40, 1_000] {
            let items: Vec<(String, Fingerprint)> = (0..count)
                .map(|i| {
                    let name = "n".repeat(i * 7 % 300) + &i.to_string();
                    (
                        name,
                        Fingerprint(u128::from(i as u64) * 0x9e37_79b9_7f4a_7c15),
                    )
                })
                .collect();
            let laid_out =
                Fingerprint::of_named(items.iter().map(|(name, fp)| (name.as_str(), *fp)));
            assert_eq!(laid_out, streamed(&items), "{count} items");
            let prefixed: Vec<(Vec<u8>, Fingerprint)> = items
                .iter()
                .map(|(name, fp)| {
                    let mut bytes = (name.len() as u64).to_le_bytes().to_vec();
                    bytes.extend_from_slice(name.as_bytes());
                    (bytes, *fp)
                })
                .collect();
            let prefixed =
                Fingerprint::of_prefixed(prefixed.iter().map(|(bytes, fp)| (&bytes[..], *fp)));
            assert_eq!(prefixed, laid_out, "{count} items, prefixed");
        }
    }
}
