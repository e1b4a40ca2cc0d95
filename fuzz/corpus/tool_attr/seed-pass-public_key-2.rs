#[tool(tenants = "acme")]
/// Run the nightly report.
fn nightly_report() -> String {
    "sent".into()
}
