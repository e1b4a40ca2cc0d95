//! Step 3, **discover**: a [`Run`](run::Run) projects the registry onto one
//! [`Subject`](crate::Subject) and freezes the [`AllowedSet`](allowed::AllowedSet); `explain`
//! says why the rest is hidden; `search` finds tools of the allowed set by what they do, in the
//! index the registry's snapshot keeps (`project/index.rs`), and by meaning with an
//! application's embedder (`search/embed.rs`). Nothing here runs a call: the call path
//! (step 5) is in `call/`.

pub(crate) mod allowed;
pub(crate) mod currency;
pub(crate) mod explain;
pub(crate) mod reopen;
pub(crate) mod run;
pub(crate) mod search;
