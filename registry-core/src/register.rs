//! Step 2, **register**: the [`Registry`](registry::Registry) of every tool, built by the
//! [`RegistryBuilder`](builder::RegistryBuilder) with every problem reported at once, from
//! `#[tool]` declarations and [`DynamicTool`](dynamic::DynamicTool)s, their schemas checked
//! against the bounds (`bounds.rs`); its lockfile, and the policy sets checked against it. Its
//! changes (revocation, replacement) are recorded as [`change`](crate::change)s.

pub(crate) mod bounds;
pub(crate) mod builder;
pub(crate) mod dynamic;
pub(crate) mod lint;
pub(crate) mod lock;
pub(crate) mod policies;
pub(crate) mod registry;
pub(crate) mod schemas;
