use registry_core::{Registry, ToolCall, tool};
use registry_tests::{open_run, success};
use serde_json::json;

mod tools {
    pub mod build {
        use registry_core::tool;

        /// Read the build status, from a nested module.
        #[tool(public)]
        pub fn build_status(project: String) -> String {
            format!("{project}: green")
        }
    }
}

fn main() {
    /// A tool declared inside a function body.
    #[tool(public)]
    fn local_tool(x: u8) -> u8 {
        x + 1
    }

    let registry = Registry::from_inventory().unwrap();
    let status = registry.get("build_status").unwrap();
    assert!(
        status
            .source()
            .module_path()
            .unwrap()
            .ends_with("tools::build")
    );
    let run = open_run(&registry, &[]);
    assert_eq!(
        success(run.call_blocking(ToolCall::new("c1", "local_tool", json!({"x": 1})))),
        json!(2)
    );
    assert_eq!(tools::build::build_status("web".into()), "web: green");
}
