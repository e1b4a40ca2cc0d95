use registry_core::{Registry, gate::RateLimit, tool};

/// Delete a customer's account.
#[tool(public, needs_approval, destructive)]
fn delete_account(customer: String) -> bool {
    customer.is_empty()
}

/// Look a word up.
#[tool(public, rate_limit = "3/s", read_only)]
fn define(word: String) -> String {
    word
}

/// Send a message to a channel.
#[tool(public, rate_limit = "10/min", needs_approval)]
fn send_message(channel: String, text: String) -> bool {
    channel.is_empty() || text.is_empty()
}

/// Rebuild the search index.
#[tool(public, name = "reindex", rate_limit = "1/h")]
fn rebuild_index() {}

/// Read the build status.
#[tool(public)]
fn get_status(project: String) -> String {
    project
}

fn main() {
    let registry = Registry::from_inventory().unwrap();
    let policy = |name: &str| registry.get(name).unwrap().settings().clone();

    let delete = policy("delete_account");
    assert!(delete.needs_approval);
    assert_eq!(delete.rate_limit, None);

    let define = policy("define");
    assert!(!define.needs_approval);
    assert_eq!(define.rate_limit, Some(RateLimit::per_second(3)));

    let send = policy("send_message");
    assert!(send.needs_approval);
    assert_eq!(send.rate_limit, Some(RateLimit::per_minute(10)));
    // The macro reads the text as the run-time parser does.
    assert_eq!(send.rate_limit, Some("10/min".parse().unwrap()));

    let reindex = policy("reindex");
    assert!(!reindex.needs_approval);
    assert_eq!(reindex.rate_limit, Some(RateLimit::per_hour(1)));

    // Neither key: no approval, no limit.
    let status = policy("get_status");
    assert!(!status.needs_approval);
    assert_eq!(status.rate_limit, None);
}
