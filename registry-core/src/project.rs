//! What the registry keeps for the projection of runs, below both `register/` (which builds
//! and holds it) and `discover/` (whose runs read it): the snapshot of the registry's slots
//! (`discovery.rs`), the search index built once per snapshot (`index.rs`), and the bit sets of
//! allowed slots (`bits.rs`).

pub(crate) mod bits;
pub(crate) mod discovery;
pub(crate) mod index;
