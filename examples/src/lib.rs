//! Tools shared by the example programs, declared in two modules of this crate; more live in
//! the separate crate `build-tools`.

pub mod deploy;
pub mod docs;

registry_core::link!(build_tools);
