#[tool(public, task)]
/// Export the archive.
fn export_archive() -> String {
    "exported".into()
}
