//! Stable fingerprints of what a model was shown.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use xxhash_rust::xxh3::Xxh3;

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

    /// The fingerprint of a sequence of named fingerprints, in order.
    pub(crate) fn of_named<'a>(items: impl Iterator<Item = (&'a str, Fingerprint)>) -> Self {
        let mut hasher = Xxh3::new();
        for (name, fingerprint) in items {
            hasher.update(&(name.len() as u64).to_le_bytes());
            hasher.update(name.as_bytes());
            hasher.update(&fingerprint.0.to_le_bytes());
        }
        Fingerprint(hasher.digest128())
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
