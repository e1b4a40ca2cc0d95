#[tool(tenants = "acme, globex, acme")]
/// Read the invoices of a tenant.
fn list_invoices(month: String) -> String {
    month
}
