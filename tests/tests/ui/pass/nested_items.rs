use registry_core::{Registry, ToolContext, tool};
use serde_json::json;

mod tools {
    pub mod build {
        use registry_core::tool;

        /// Read the build status, from a nested module.
        #[tool]
        pub fn build_status(project: String) -> String {
            format!("{project}: green")
        }
    }
}

fn main() {
    /// A tool declared inside a function body.
    #[tool]
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
    let ctx = ToolContext::new("c1", "local_tool");
    let local = registry.get("local_tool").unwrap();
    assert_eq!(
        local.call_blocking(&ctx, json!({"x": 1})).unwrap(),
        json!(2)
    );
    assert_eq!(tools::build::build_status("web".into()), "web: green");
}
