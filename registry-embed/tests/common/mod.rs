//! The model's directory for the tests: `REGISTRY_EMBED_MODEL_DIR` if set, else the one the
//! repository's own script fetches (`bash .ci/fetch-model`, which does nothing once the model
//! is there and checked, and which two test binaries may run at once).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub(crate) fn model_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("REGISTRY_EMBED_MODEL_DIR") {
            return PathBuf::from(dir);
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let output = Command::new("bash")
            .arg(root.join(".ci/fetch-model"))
            .output()
            .expect("bash runs .ci/fetch-model");
        assert!(
            output.status.success(),
            "`bash .ci/fetch-model` failed: the model all-MiniLM-L6-v2 could not be fetched \
             (set REGISTRY_EMBED_MODEL_DIR to an unpacked copy instead):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8(output.stdout).unwrap();
        PathBuf::from(
            stdout
                .lines()
                .last()
                .expect("the script prints the directory")
                .trim(),
        )
    })
}

/// A directory of links to the model's files but for `except`, and with `files` written in.
pub(crate) fn altered(name: &str, except: &[&str], files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix(name).tempdir().unwrap();
    let model = model_dir();
    for file in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling",
    ] {
        if !except.contains(&file) && !files.iter().any(|(f, _)| *f == file) {
            std::os::unix::fs::symlink(model.join(file), dir.path().join(file)).unwrap();
        }
    }
    for (file, text) in files {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}
