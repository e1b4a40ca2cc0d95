#[tool(
    scopes = "ledger:read",
    attributes(
        Data_Domain = "finance",
        environment = ["staging", "staging", "prod\u{202e}"],
        workspace = [],
        tenant = "acme",
        clearance = 3,
    )
)]
/// Read a ledger's balance.
fn ledger_balance() -> u64 {
    7
}
