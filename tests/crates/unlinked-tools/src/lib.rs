//! Tools of a crate that the linking test lists as a dependency but never names, so the
//! compiler leaves it out of the test program, and these tools with it.

use registry_core::tool;

/// Send an invoice to a customer.
#[tool(public, destructive)]
pub fn send_invoice(
    /// The customer's identifier.
    customer: String,
) -> String {
    format!("invoice sent to {customer}")
}

/// Cancel an invoice.
#[tool(public, destructive, idempotent)]
pub fn cancel_invoice(invoice: u64) -> u64 {
    invoice
}
