pub(crate) mod rule;
