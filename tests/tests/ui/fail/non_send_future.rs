use registry_core::tool;

use std::rc::Rc;

/// Read the build status.
#[tool(public)]
async fn get_status(project: String) -> String {
    let cache = Rc::new(project);
    std::future::ready(()).await;
    cache.to_string()
}

fn main() {}
