#[tool(public, non_blocking)]
/// Fetch the status of a build.
async fn build_status(id: String) -> String {
    id
}
