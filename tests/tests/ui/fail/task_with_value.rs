use registry_core::tool;

/// Export a day of logs to the archive.
#[tool(public, task = true)]
fn export_logs(day: String) -> String {
    day
}

fn main() {}
