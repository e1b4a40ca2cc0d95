#[tool(public, read_only)]
/// Read the build status of a project.
///
/// Authenticate with sk-proj-4fG7hJ2kL9mN3pQ8rS1tU6vW when the cache is cold.
fn get_status(project: String) -> String {
    project
}
