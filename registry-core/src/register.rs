//! Step 2, **register**: the [`Registry`](registry::Registry) of every tool, built by the
//! [`RegistryBuilder`](builder::RegistryBuilder) with every problem reported at once; its changes
//! (revocation, replacement) and its lockfile.

pub(crate) mod bounds;
pub(crate) mod builder;
pub(crate) mod dynamic;
pub(crate) mod lint;
pub(crate) mod lock;
pub(crate) mod policies;
pub(crate) mod registry;
pub(crate) mod schemas;
