#[tool(public, task = true)]
/// Export a day of logs to the archive.
fn export_logs(day: String) -> String {
    day
}
