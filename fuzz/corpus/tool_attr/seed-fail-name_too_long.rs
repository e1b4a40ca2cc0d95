#[tool(public, name = "get_the_current_status_of_the_build_pipeline_for_this_project_now")]
/// Read the build status.
fn get_status(project: String) -> String {
    project
}
