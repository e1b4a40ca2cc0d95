//! The key of the audit log's hashes of arguments and queries.

use std::sync::OnceLock;
use std::time::SystemTime;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The key of the audit log's hashes of arguments and queries: HMAC-SHA-256, so that a
/// reader of the log cannot find low-entropy arguments (a yes or no, a small number, a name
/// from a short list) by hashing guesses, as an unkeyed hash would let them. The registry's
/// ([`RegistryBuilder::audit_hash_key`](crate::RegistryBuilder::audit_hash_key)), or one
/// drawn at random once per process.
#[derive(Clone)]
pub(crate) struct AuditKey(Hmac<Sha256>);

impl AuditKey {
    /// HMAC under `key`.
    pub(crate) fn new(key: &[u8]) -> AuditKey {
        match <Hmac<Sha256> as KeyInit>::new_from_slice(key) {
            Ok(keyed) => AuditKey(keyed),
            Err(_) => unreachable!("HMAC takes a key of any length"),
        }
    }

    /// The key of this process, drawn at random the first time it is asked for. Without an
    /// operating-system random source, a digest of the time and an address: hashes are then
    /// still keyed by a value no reader of the log is given.
    pub(crate) fn of_process() -> AuditKey {
        static KEY: OnceLock<AuditKey> = OnceLock::new();
        KEY.get_or_init(|| {
            let mut key = [0u8; 32];
            if getrandom::fill(&mut key).is_err() {
                let fallback = Sha256::digest(format!("{:p}{:?}", &key, SystemTime::now()));
                key.copy_from_slice(&fallback);
                tracing::error!("no random source for the audit hash key; using a fallback");
            }
            AuditKey::new(&key)
        })
        .clone()
    }

    /// The first 8 bytes of `bytes`' HMAC, in hex (16 digits).
    fn hash(&self, bytes: &[u8]) -> String {
        let mut keyed = self.0.clone();
        keyed.update(bytes);
        let tag = keyed.finalize().into_bytes();
        tag[..8].iter().map(|byte| format!("{byte:02x}")).collect()
    }
}

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditKey(..)")
    }
}

/// The size and keyed hash of the arguments as compact JSON, for the audit log.
pub(crate) fn argument_fingerprint(key: &AuditKey, arguments: &Value) -> (usize, String) {
    let json = serde_json::to_vec(arguments).unwrap_or_default();
    (json.len(), key.hash(&json))
}
