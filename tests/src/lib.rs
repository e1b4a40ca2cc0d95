//! Integration tests of the workspace; see `tests/`.
