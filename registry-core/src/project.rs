pub(crate) mod discovery;
pub(crate) mod index;
pub(crate) mod bits;
