use registry_core::tool;

/// Read the invoices of a tenant.
#[tool(tenants = "acme, globex, acme")]
fn list_invoices(month: String) -> String {
    month
}

fn main() {}
