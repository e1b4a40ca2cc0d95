pub(crate) mod call_host;
pub(crate) mod form;
pub(crate) mod context;
pub(crate) mod state;
