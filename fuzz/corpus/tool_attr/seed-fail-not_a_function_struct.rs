#[tool(public)]
/// Read the build status.
struct GetStatus {
    project: String,
}
