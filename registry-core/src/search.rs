pub(crate) mod embed;
