//! `registry-admin`: the operators' command (being written).
fn main() {}
