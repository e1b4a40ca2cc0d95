//! Rules kept apart from the program: a [`PolicySet`] (Cedar's, with `registry-cedar`) is
//! an access rule and a call policy in one, checked against the registry when it is built
//! ([`RegistryBuilder::policies`](crate::RegistryBuilder::policies)).

pub use crate::register::policies::PolicySet;
