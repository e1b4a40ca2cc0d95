#[tool(public)]
/// Read the build status.
extern "C" fn get_status(project: u32) -> u32 {
    project
}
