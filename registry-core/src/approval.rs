pub(crate) mod request;
pub(crate) mod store;
