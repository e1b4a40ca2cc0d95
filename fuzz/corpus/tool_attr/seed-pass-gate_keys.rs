#[tool(public, needs_approval, destructive)]
/// Delete a customer's account.
fn delete_account(customer: String) -> bool {
    customer.is_empty()
}
