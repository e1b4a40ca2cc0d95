#[tool(tenants = " ")]
/// Read the invoices of a tenant.
fn list_invoices(month: String) -> String {
    month
}
