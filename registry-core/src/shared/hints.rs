//! What a tool promises about its behaviour.

use serde::Serialize;

/// How a tool behaves, as the MCP behaviour hints describe it.
///
/// These are promises of the declaration, set by the `read_only`, `destructive`, `idempotent`
/// and `open_world` flags of `#[tool]`; each is `false` unless declared. More hints may come:
/// build one with [`Hints::new`] and its `with_*` methods.
///
/// ```
/// use registry_core::definition::Hints;
///
/// let hints = Hints::new().with_read_only(true).with_idempotent(true);
/// assert!(hints.read_only && hints.idempotent && !hints.destructive);
/// assert_eq!(Hints::new(), Hints::default());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[non_exhaustive]
pub struct Hints {
    /// The tool does not modify its environment.
    pub read_only: bool,
    /// The tool may destroy or overwrite data.
    pub destructive: bool,
    /// Calling it again with the same arguments has no further effect.
    pub idempotent: bool,
    /// The tool reaches outside the system: the web, other services.
    pub open_world: bool,
}

impl Hints {
    /// No hint: every one `false`.
    pub const fn new() -> Self {
        Hints {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: false,
        }
    }

    /// Sets [`read_only`](Self::read_only).
    #[must_use]
    pub const fn with_read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Sets [`destructive`](Self::destructive).
    #[must_use]
    pub const fn with_destructive(mut self, destructive: bool) -> Self {
        self.destructive = destructive;
        self
    }

    /// Sets [`idempotent`](Self::idempotent).
    #[must_use]
    pub const fn with_idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// Sets [`open_world`](Self::open_world).
    #[must_use]
    pub const fn with_open_world(mut self, open_world: bool) -> Self {
        self.open_world = open_world;
        self
    }
}
