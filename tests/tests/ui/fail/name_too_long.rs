use registry_core::tool;

/// Read the build status.
#[tool(public, name = "get_the_current_status_of_the_build_pipeline_for_this_project_now")]
fn get_status(project: String) -> String {
    project
}

fn main() {}
