use registry_core::{Registry, tool};

/// Ping the gateway at 10.0.0.1.
#[tool(
    public,
    allow_description = "only operators' runs see this tool, and they know the gateway"
)]
fn ping_gateway(
    /// How many pings, e.g. 3; the gateway's other address is fd00::1.
    count: Option<u32>,
) -> String {
    format!("pong x{}", count.unwrap_or(1))
}

/// Read the build status of a project.
#[tool(public)]
fn get_status(project: String) -> String {
    project
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let ping = registry.get("ping_gateway").unwrap();
    assert_eq!(
        ping.definition().description,
        "Ping the gateway at 10.0.0.1."
    );
    // The reason is kept in the tool's policy, where reviewers (and the `catalog` example)
    // see it.
    assert_eq!(
        ping.settings().allow_description.as_deref(),
        Some("only operators' runs see this tool, and they know the gateway")
    );
    let status = registry.get("get_status").unwrap();
    assert_eq!(status.settings().allow_description, None);
}
