#[tool]
/// Read the build status.
struct GetStatus {
    project: String,
}
