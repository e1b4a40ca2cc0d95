#[tool(public, destructive)]
/// Delete a file.
fn delete_file(path: String) -> bool {
    path.is_empty()
}
