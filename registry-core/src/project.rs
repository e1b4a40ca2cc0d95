pub(crate) mod bits;
pub(crate) mod discovery;
pub(crate) mod index;
