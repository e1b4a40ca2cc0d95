//! The integration tests of registry-postgres, in one test binary: one throwaway cluster
//! (`common::cluster`, a database per test) for all of them rather than one per binary, and
//! one link instead of thirteen. Each module is one concern; its own doc says which.

mod common;

mod admin;
mod approvals;
mod audit;
mod feed;
mod migrations;
mod policies;
mod principals;
mod prune;
mod quotas;
mod record;
mod roles;
mod smoke;
mod tasks;
mod tls;
mod upstreams;
