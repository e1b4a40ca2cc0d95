//! Vectors already computed, in memory and in a file, keyed by the model's digest and each
//! text's digest (SHA-256): a restart embeds only the texts that changed.
//!
//! The file: a header (`MAGIC`, the format's version, the model's digest, the vectors'
//! length), then one record per text (its digest, its vector as little-endian `f32`s, and a
//! check: the first 8 bytes of the SHA-256 of both), appended as texts are embedded. A file
//! of another model or format is started afresh. At load, the first record cut short (a
//! crash while writing) or failing its check (a file damaged or tampered with) ends the
//! file: it is cut there, and what followed is computed again when asked for. One process
//! writes a cache file at a time.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use registry_core::search::EmbedError;
use sha2::{Digest, Sha256};

const MAGIC: &[u8; 24] = b"registry-embed vectors\n\0";
const VERSION: u32 = 2;
/// Bytes of a record's check.
const CHECK: usize = 8;
const HEADER: usize = 24 + 4 + 32 + 4;

/// The most vectors a cache holds: past it, new vectors are computed but not kept (at 384
/// dimensions, about 100 MB in memory and on disk).
pub const MAX_CACHED: usize = 65_536;

/// A text's key: the SHA-256 of its bytes.
pub(crate) type Key = [u8; 32];

pub(crate) fn key(text: &str) -> Key {
    Sha256::digest(text.as_bytes()).into()
}

#[derive(Debug)]
pub(crate) struct Cache {
    /// The file, if the vectors are kept past the process.
    file: Option<(PathBuf, File)>,
    dimensions: usize,
    vectors: HashMap<Key, Box<[f32]>>,
    full_logged: bool,
}

impl Cache {
    /// A cache in memory only.
    pub(crate) fn memory(dimensions: usize) -> Cache {
        Cache {
            file: None,
            dimensions,
            vectors: HashMap::new(),
            full_logged: false,
        }
    }

    /// Opens (or creates) the cache file at `path` for vectors of `dimensions` values by the
    /// model whose digest is `model`, loading the vectors it holds.
    pub(crate) fn open(
        path: &Path,
        model: &[u8; 32],
        dimensions: usize,
    ) -> Result<Cache, EmbedError> {
        let fail = |what: &str, error: std::io::Error| {
            EmbedError::new(format!(
                "the vector cache {}: {what}: {error}",
                path.display()
            ))
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| fail("its directory cannot be made", e))?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| fail("cannot be opened", e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| fail("cannot be read", e))?;
        let record = 32 + 4 * dimensions + CHECK;
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(model);
        header.extend_from_slice(&u32::try_from(dimensions).unwrap_or(u32::MAX).to_le_bytes());
        let mut vectors = HashMap::new();
        let mut valid = 0;
        if bytes.len() >= HEADER && bytes[..HEADER] == header[..] {
            valid = HEADER;
            for chunk in bytes[HEADER..].chunks_exact(record) {
                if vectors.len() >= MAX_CACHED {
                    break;
                }
                let (body, check) = chunk.split_at(record - CHECK);
                if Sha256::digest(body)[..CHECK] != *check {
                    tracing::warn!(cache = %path.display(), kept = vectors.len(), "a cached vector fails its check: the cache is cut there");
                    break;
                }
                let mut digest = [0u8; 32];
                digest.copy_from_slice(&body[..32]);
                let vector: Box<[f32]> = body[32..]
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                if vector.iter().any(|v| !v.is_finite()) {
                    tracing::warn!(cache = %path.display(), "a cached vector holds a value that is not a finite number: the cache is started afresh");
                    vectors.clear();
                    valid = 0;
                    break;
                }
                vectors.insert(digest, vector);
                valid += record;
            }
        } else if !bytes.is_empty() {
            tracing::info!(cache = %path.display(), "the vector cache is of another model or format: started afresh");
        }
        if valid == 0 {
            file.set_len(0).map_err(|e| fail("cannot be emptied", e))?;
            file.seek(SeekFrom::Start(0))
                .map_err(|e| fail("cannot be written", e))?;
            file.write_all(&header)
                .map_err(|e| fail("cannot be written", e))?;
        } else {
            // Drops a record cut short, so that the next one is appended whole.
            file.set_len(valid as u64)
                .map_err(|e| fail("cannot be cut", e))?;
            file.seek(SeekFrom::Start(valid as u64))
                .map_err(|e| fail("cannot be written", e))?;
        }
        file.flush().map_err(|e| fail("cannot be written", e))?;
        Ok(Cache {
            file: Some((path.to_owned(), file)),
            dimensions,
            vectors,
            full_logged: false,
        })
    }

    pub(crate) fn get(&self, key: &Key) -> Option<&[f32]> {
        self.vectors.get(key).map(|v| &v[..])
    }

    pub(crate) fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Keeps `vectors` (new ones, each of the cache's length), appending them to the file (if
    /// any) in one write. A failure to write is logged: the vectors are right, only not kept.
    pub(crate) fn put(&mut self, vectors: &[(Key, &[f32])]) {
        let mut bytes = Vec::new();
        for (key, vector) in vectors {
            if vector.len() != self.dimensions || self.vectors.contains_key(key) {
                continue;
            }
            if self.vectors.len() >= MAX_CACHED {
                if !self.full_logged {
                    tracing::warn!(
                        kept = MAX_CACHED,
                        "the vector cache is full: new vectors are computed but not kept"
                    );
                    self.full_logged = true;
                }
                break;
            }
            let start = bytes.len();
            bytes.extend_from_slice(key);
            vector
                .iter()
                .for_each(|v| bytes.extend_from_slice(&v.to_le_bytes()));
            let check = Sha256::digest(&bytes[start..]);
            bytes.extend_from_slice(&check[..CHECK]);
            self.vectors
                .insert(*key, vector.to_vec().into_boxed_slice());
        }
        if let Some((path, file)) = &mut self.file
            && !bytes.is_empty()
            && let Err(error) = file.write_all(&bytes).and_then(|()| file.flush())
        {
            tracing::warn!(cache = %path.display(), %error, "the vector cache cannot be written: its vectors are kept in memory only");
        }
    }
}
