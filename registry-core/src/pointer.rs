//! JSON pointers (RFC 6901), as every problem report words its place.

/// `token` escaped as one segment of a JSON pointer: `~` as `~0`, `/` as `~1`.
pub(crate) fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// One segment of a JSON pointer, unescaped.
pub(crate) fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// `pointer` extended by the segment `token`.
pub(crate) fn child(pointer: &str, token: &str) -> String {
    format!("{pointer}/{}", escape(token))
}

#[cfg(test)]
mod tests {
    #[test]
    fn segments_round_trip() {
        for token in ["plain", "a/b", "~tilde", "~1/~0", ""] {
            assert_eq!(super::unescape(&super::escape(token)), token);
        }
        assert_eq!(super::child("/properties", "a/b~c"), "/properties/a~1b~0c");
    }
}
