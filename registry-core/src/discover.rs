//! Step 3, **discover**: a [`Run`](run::Run) projects the registry onto one
//! [`Subject`](subject::Subject) and freezes the [`AllowedSet`](allowed::AllowedSet); `explain`
//! says why the rest is hidden; `search` finds tools of the allowed set by what they do, in an
//! index (`index`) built once per registry snapshot, and by meaning with an application's
//! embedder (`embed`). Nothing here runs a call: the call path (step 5) is in `call/`.

pub(crate) mod access;
pub(crate) mod allowed;
pub(crate) mod attribute;
pub(crate) mod bits;
pub(crate) mod discovery;
pub(crate) mod embed;
pub(crate) mod explain;
pub(crate) mod fingerprint;
pub(crate) mod index;
pub(crate) mod reopen;
pub(crate) mod run;
pub(crate) mod search;
pub(crate) mod subject;
