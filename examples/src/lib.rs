//! Tools shared by the example programs, declared in three modules of this crate; more live
//! in the separate crate `build-tools`. `embed` holds the programs' `--model-dir` flag.

pub mod chat;
pub mod conformance;
pub mod deploy;
pub mod docs;
pub mod embed;

use registry_core::{Registry, RegistryBuilder};

registry_core::link!(build_tools);

/// The registry every example program builds: every tool linked in, the readiness check of
/// `notify_chat`, and the call policy that sends production deploys to a person.
pub fn registry() -> RegistryBuilder {
    Registry::builder()
        .declared()
        .readiness("notify_chat", chat::ready)
        .call_policy(deploy::policy)
}
