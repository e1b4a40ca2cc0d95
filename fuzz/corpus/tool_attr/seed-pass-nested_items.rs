#[tool(public)]
/// Read the build status, from a nested module.
        pub fn build_status(project: String) -> String {
            format!("{project}: green")
        }
