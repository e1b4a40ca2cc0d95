//! `registry-admin policy push DIR`: reading a directory of Cedar files as a policy set.

use std::path::Path;

use registry_postgres::{MAX_POLICY_FILE_BYTES, MAX_POLICY_FILES, check_policy_files};

use crate::show::clean;

/// Every `*.cedar` file of `dir`, `(name, text)`, in name order, checked against the bounds
/// of a policy set; or why not, naming the file and the fix.
pub(crate) fn read_dir(dir: &Path) -> Result<Vec<(String, String)>, String> {
    let shown = clean(&dir.display().to_string());
    let entries = std::fs::read_dir(dir)
        .map_err(|error| format!("cannot read the directory {shown}: {error}"))?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|error| format!("cannot read the directory {shown}: {error}"))?;
        let raw = entry.file_name();
        let lossy = raw.to_string_lossy();
        if !lossy.ends_with(".cedar") {
            continue;
        }
        let Some(name) = raw.to_str() else {
            return Err(format!(
                "the file name {} in {shown} is not UTF-8; rename it with letters, digits, `.`, \
                 `_` or `-`, ending `.cedar`",
                clean(&lossy)
            ));
        };
        paths.push((name.to_owned(), entry.path()));
    }
    if paths.is_empty() {
        return Err(format!(
            "{shown} holds no `.cedar` file; nothing was pushed. Put the policy set's files \
             there (base.cedar, ...)"
        ));
    }
    if paths.len() > MAX_POLICY_FILES {
        return Err(format!(
            "{shown} holds {} `.cedar` files, more than {MAX_POLICY_FILES}; nothing was pushed. \
             Merge some of them",
            paths.len()
        ));
    }
    paths.sort();
    let mut files = Vec::with_capacity(paths.len());
    for (name, path) in paths {
        let shown_name = clean(&name);
        let metadata = std::fs::metadata(&path)
            .map_err(|error| format!("cannot read {shown_name} in {shown}: {error}"))?;
        if !metadata.is_file() {
            return Err(format!(
                "{shown_name} in {shown} is not a file; nothing was pushed. Move it out of the \
                 directory or rename it"
            ));
        }
        // Checked before reading: a file of gigabytes is not read whole to be refused.
        if metadata.len() > MAX_POLICY_FILE_BYTES as u64 {
            return Err(format!(
                "policy file {shown_name}: its text is {} bytes, more than \
                 {MAX_POLICY_FILE_BYTES} (1 MiB); split it into several files; nothing was pushed",
                metadata.len()
            ));
        }
        let bytes = std::fs::read(&path)
            .map_err(|error| format!("cannot read {shown_name} in {shown}: {error}"))?;
        let text = String::from_utf8(bytes).map_err(|error| {
            format!(
                "policy file {shown_name}: its text is not UTF-8 (byte {} is not valid); save it \
                 as UTF-8; nothing was pushed",
                error.utf8_error().valid_up_to()
            )
        })?;
        files.push((name, text));
    }
    check_policy_files(&files).map_err(|error| error.to_string())?;
    Ok(files)
}
