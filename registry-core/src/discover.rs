//! Step 3, **discover**: a [`Run`](run::Run) projects the registry onto one
//! [`Subject`](subject::Subject) and freezes the [`AllowedSet`](allowed::AllowedSet); `explain`
//! says why the rest is hidden; `search` finds tools of the allowed set by what they do, in an
//! index (`index`) built once per registry snapshot, and by meaning with an application's
//! embedder (`embed`). The run is also where every call is
//! resolved, gated and executed.

pub(crate) mod allowed;
pub(crate) mod explain;
pub(crate) mod run;
pub(crate) mod search;
