//! Pinned definitions: the lockfile of what each provider is shown
//! ([`Registry::lock`](crate::Registry::lock),
//! [`Registry::assert_lockfile`](crate::Registry::assert_lockfile)), whose digests MCP
//! clients also find in each tool's `_meta`.

pub use crate::present::export::DIGEST_META_KEY;
