//! One control plane for many replicas of a [`registry_core`] registry, on PostgreSQL.
//!
//! One process keeps everything in memory by default: revocations, pending approvals, quota
//! buckets, the audit trail. Behind a load balancer, several replicas serve the same agents,
//! and each must see what the others decided. This crate keeps that in a PostgreSQL database
//! that every replica (and the operators' `registry-admin` command) shares:
//!
//! - **the change feed** ([`ChangeFeed`]): revocations, restorations and replacements are
//!   recorded in `registry_changes` in commit order and announced with `NOTIFY`; every replica
//!   applies them through the same core path as a local [`Registry::revoke`]. A replica that
//!   was disconnected catches up by sequence number when it reconnects, and while it cannot
//!   reach the database it **holds every call** ([`RegistryExt::suspend`]): it cannot know whether
//!   a tool was revoked elsewhere, so it fails closed;
//! - **approvals** ([`PgApprovalStore`]): a request made on one replica can be decided on
//!   another, and it leaves `pending` exactly once (one conditional `UPDATE`);
//! - **quotas** ([`PgQuotaStore`]): one token bucket per subject and tool for all replicas,
//!   taken in one round trip;
//! - **tasks** ([`PgTaskStore`]): a task started on one replica is read, cancelled and
//!   collected on any other, bounded across all of them, leased by the replica that runs it
//!   (a replica that dies leaves its tasks failed, with the reason, once the lease ran out);
//! - **audit** ([`PgAuditSink`]): every event in the `audit_events` table, written in batches
//!   by a writer of its own, with bounded memory and an explicit choice when the database is
//!   slow ([`WhenFull`]);
//! - **Cedar policy sets** ([`ControlPlane::push_policies`]): pushed once as named texts,
//!   carried by the change feed, validated by each replica's own hook before it switches
//!   ([`ChangeFeed::on_policies`]); a replica that cannot validate a set keeps its own and
//!   reports why ([`ControlPlane::policy_status`]).
//!
//! The schema is embedded and applied when the first replica connects, idempotently and under
//! an advisory lock.
//!
//! The database is not the authority: replicas connect as members of a replica role that may
//! do a replica's work and nothing more, and `registry-admin` as a member of an admin role
//! ([`ControlPlane::init_roles`], [`Roles`]). PostgreSQL itself refuses a replica's role a
//! policy push, an upstream acceptance, an operator's verdict and a prune
//! ([`Error::PermissionDenied`]).
//!
//! ```no_run
//! use registry_core::Registry;
//! use registry_postgres::{AuditConfig, ControlPlane};
//!
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! let plane = ControlPlane::connect("postgres://registry@db.internal/registry?sslmode=verify-full&sslrootcert=/etc/registry/db-ca.pem").await?;
//! let (audit, writer) = plane.audit_sink(AuditConfig::default());
//! let registry = Registry::builder()
//!     .declared()
//!     .approval_store(plane.approval_store())
//!     .quota_store(plane.quota_store())
//!     .task_store(plane.task_store())
//!     .audit_sink(audit)
//!     .build()?;
//! // Apply every change recorded so far, then keep following.
//! let feed = plane.follow(&registry).await?;
//!
//! // An incident: every replica stops calling `deploy` within moments.
//! feed.revoke("deploy", "incident 4711").await?;
//!
//! // ... serve ...
//!
//! feed.shutdown().await;
//! writer.shutdown(std::time::Duration::from_secs(10)).await?; // flushes the audit
//! # Ok(())
//! # }
//! ```
//!
//! # Features
//!
//! - `admin` (off by default): the operators' command `registry-admin` (revoke, restore,
//!   approve, deny, list the changes, the approvals and the audit trail, push and show policy
//!   sets, prune), and with it clap and comfy-table; a library user compiles neither.
//!   Install it with `cargo install registry-postgres --features admin`; in the repository, build it with
//!   `cargo build -p registry-postgres --features admin --bin registry-admin` (or run it with
//!   `cargo run -p registry-postgres --features admin --bin registry-admin -- ...`).
//! - `throwaway` (off by default): `throwaway::Cluster`, a PostgreSQL cluster of its own for
//!   tests, started with the machine's `initdb` and `pg_ctl`.
//!
//! [`Registry::revoke`]: registry_core::Registry::revoke
//! [`RegistryExt::suspend`]: registry_core::server::RegistryExt::suspend

// docs.rs only (it sets `--cfg docsrs`): show beside each feature-gated item the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
// Library code reports failures; it does not unwrap them (tests may). Set here, not in
// [workspace.lints]: see the root Cargo.toml.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod approval_wake;
mod approvals;
mod audit;
mod changes;
mod error;
mod feed;
mod migrate;
mod plane;
mod policies;
mod prune;
mod quotas;
mod records;
mod roles;
mod tasks;
mod text;
#[cfg(feature = "throwaway")]
pub mod throwaway;
mod tls;
mod upstreams;

pub use approvals::PgApprovalStore;
pub use audit::{AuditConfig, AuditWriter, PgAuditSink, WhenFull};
pub use error::Error;
pub use feed::ChangeFeed;
pub use plane::{ControlPlane, ControlPlaneBuilder, MAX_URL_FILE_BYTES};
pub use policies::{
    MAX_POLICY_FILE_BYTES, MAX_POLICY_FILES, MAX_POLICY_NAME_LEN, MAX_POLICY_SET_BYTES,
    POLICY_STATUS_TTL, PolicySetRecord, ReplicaPolicyStatus, check_policy_files, policy_digest,
};
pub use prune::{DEFAULT_RETENTION, PRUNE_FLOOR, PruneReport};
pub use quotas::PgQuotaStore;
pub use records::{
    ApprovalFilter, ApprovalRecord, AuditFilter, AuditRecord, ChangeRecord, RecordedKind,
    VerdictOutcome,
};
pub use roles::Roles;
pub use tasks::PgTaskStore;
pub use upstreams::{MAX_UPSTREAM_OFFERS, UPSTREAM_OFFER_TTL, UpstreamAcceptance, UpstreamOffer};

/// The README's examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
