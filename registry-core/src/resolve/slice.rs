//! One argument's text, checked by the fast path's scan, deserialized into its parameter the
//! way `serde_json::from_str` does: a plain value (an integer, a string without escapes, a
//! bool, `null`) is handed to the parameter's visitor directly, with the very call that
//! `serde_json`'s deserializer makes for it; anything else is given to `serde_json` itself.
//!
//! Why: for a small integer, `serde_json::from_str` sets up a deserializer, parses and
//! checks the end, about 125 instructions a parameter (issue 22's profile, under
//! callgrind); the scan has already checked the text, and the visitor's call is a few.
//!
//! What keeps the answers identical: for each value handled here, the visitor receives
//! exactly what `serde_json` gives it (`visit_u64` for a non-negative integer and
//! `visit_i64` for a negative one, `visit_borrowed_str` for a string without escapes,
//! `visit_bool`, `visit_unit` or `visit_none` for `null`), so a decode that succeeds gives
//! the same value. A decode that fails is decoded again by the slow path
//! ([`decode`](super::arguments)), whose error the model reads, as before. Every other
//! method, and every other value, is `serde_json`'s own.

use serde::de::{Deserializer, Visitor};
use serde_json::Error;

use crate::resolve::fast::INTEGER_DIGITS;

/// The text of one value, which the scan accepted (but which this reads again, and hands to
/// `serde_json` whenever it is not one of the plain forms).
pub(crate) struct Slice<'a>(pub(crate) &'a str);

/// The plain forms.
enum Plain<'a> {
    Unsigned(u64),
    Negative(i64),
    Str(&'a str),
    Bool(bool),
    Null,
    /// Anything else: for `serde_json`.
    Other,
}

fn plain(text: &str) -> Plain<'_> {
    let bytes = text.as_bytes();
    // On the first byte, as `serde_json` reads a value: most arguments are a short number
    // or string, read here in a few instructions.
    match bytes.first() {
        Some(b'"') => string(text),
        Some(b'-' | b'0'..=b'9') => integer(bytes),
        Some(b't') if bytes == b"true" => Plain::Bool(true),
        Some(b'f') if bytes == b"false" => Plain::Bool(false),
        Some(b'n') if bytes == b"null" => Plain::Null,
        _ => Plain::Other,
    }
}

/// A string: no escape, no quote and no control byte between its two quotes, so that what is
/// between them is its value, as `serde_json` borrows it.
fn string(text: &str) -> Plain<'_> {
    let [b'"', inner @ .., b'"'] = text.as_bytes() else {
        return Plain::Other;
    };
    if !inner
        .iter()
        .all(|byte| !matches!(byte, b'\\' | b'"' | 0..0x20))
    {
        return Plain::Other;
    }
    // Between two ASCII quotes: on character boundaries.
    text.get(1..text.len() - 1).map_or(Plain::Other, Plain::Str)
}

/// An integer of at most [`INTEGER_DIGITS`] digits (the scan's own bound: any such integer
/// fits an `i64`), written as JSON writes it (no leading zero, no `-0`, which `serde_json`
/// reads as a float).
fn integer(bytes: &[u8]) -> Plain<'static> {
    let (negative, digits) = match bytes {
        [b'-', digits @ ..] => (true, digits),
        digits => (false, digits),
    };
    let canonical = match digits {
        [b'0'] => !negative,
        [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    if !canonical || digits.len() > INTEGER_DIGITS {
        return Plain::Other;
    }
    let magnitude = digits
        .iter()
        .fold(0u64, |value, digit| value * 10 + u64::from(digit - b'0'));
    match negative {
        // At most 18 digits: within `i64`.
        true => Plain::Negative(-(magnitude as i64)),
        false => Plain::Unsigned(magnitude),
    }
}

/// `serde_json`'s own reading of the text, by its method `$method`, with its check that
/// nothing follows.
macro_rules! by_serde_json {
    ($text:expr, $method:ident $(, $argument:expr)*) => {{
        let mut deserializer = serde_json::Deserializer::from_str($text);
        let value = (&mut deserializer).$method($($argument,)*)?;
        deserializer.end()?;
        Ok(value)
    }};
}

/// Methods that only `serde_json` answers.
macro_rules! forward {
    ($($method:ident($($argument:ident: $type:ty),*)),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($argument: $type,)* visitor: V) -> Result<V::Value, Error> {
                by_serde_json!(self.0, $method $(, $argument)*, visitor)
            }
        )*
    };
}

/// Integers, which `serde_json` reads as its method `deserialize_number` does.
macro_rules! integers {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                match plain(self.0) {
                    Plain::Unsigned(value) => visitor.visit_u64(value),
                    Plain::Negative(value) => visitor.visit_i64(value),
                    _ => by_serde_json!(self.0, $method, visitor),
                }
            }
        )*
    };
}

impl<'de> Deserializer<'de> for Slice<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match plain(self.0) {
            Plain::Unsigned(value) => visitor.visit_u64(value),
            Plain::Negative(value) => visitor.visit_i64(value),
            Plain::Str(text) => visitor.visit_borrowed_str(text),
            Plain::Bool(value) => visitor.visit_bool(value),
            Plain::Null => visitor.visit_unit(),
            Plain::Other => by_serde_json!(self.0, deserialize_any, visitor),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match plain(self.0) {
            Plain::Bool(value) => visitor.visit_bool(value),
            _ => by_serde_json!(self.0, deserialize_bool, visitor),
        }
    }

    // `f32` is not here: with `float_roundtrip`, `serde_json` reads it its own way.
    integers!(
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_f64,
    );

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match plain(self.0) {
            Plain::Str(text) => visitor.visit_borrowed_str(text),
            _ => by_serde_json!(self.0, deserialize_str, visitor),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // As `serde_json`'s: its `deserialize_str`.
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match plain(self.0) {
            Plain::Null => visitor.visit_none(),
            // `serde_json` gives the visitor itself, past no byte.
            _ => visitor.visit_some(self),
        }
    }

    forward!(
        deserialize_f32(),
        deserialize_i128(),
        deserialize_u128(),
        deserialize_char(),
        deserialize_bytes(),
        deserialize_byte_buf(),
        deserialize_unit(),
        deserialize_unit_struct(name: &'static str),
        deserialize_newtype_struct(name: &'static str),
        deserialize_seq(),
        deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_map(),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
        deserialize_identifier(),
        deserialize_ignored_any(),
    );
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fmt::Debug;

    use serde::Deserialize;
    use serde::de::DeserializeOwned;
    use serde_json::Value;

    use super::Slice;

    /// Whatever `serde_json::from_str` makes of `text`, the slice makes the same: the same
    /// value, or an error both ways.
    fn same<T: DeserializeOwned + PartialEq + Debug>(text: &str) {
        let expected = serde_json::from_str::<T>(text).ok();
        let found = T::deserialize(Slice(text)).ok();
        assert_eq!(
            found,
            expected,
            "{text:?} as {}",
            std::any::type_name::<T>()
        );
    }

    #[derive(Debug, PartialEq, Deserialize)]
    enum Stage {
        Staging,
        #[serde(rename = "prod")]
        Production,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Id(u64);

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(i64),
        Text(String),
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Point {
        x: i32,
        y: Option<i32>,
    }

    const TEXTS: &[&str] = &[
        "0",
        "-0",
        "7",
        "-7",
        "255",
        "256",
        "-129",
        "4294967296",
        "999999999999999999",
        "-999999999999999999",
        "1000000000000000000",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "01",
        "1.0",
        "1.5",
        "-1.5",
        "1e3",
        "true",
        "false",
        "null",
        "\"\"",
        "\"web\"",
        "\"Staging\"",
        "\"prod\"",
        "\"Production\"",
        "\"a\\\"b\"",
        "\"\\u00e9t\\u00e9\"",
        "\"été\"",
        "\"x\"",
        "\"\u{202e}bidi\"",
        "[1, 2]",
        "[]",
        "{\"x\": 1, \"y\": null}",
        "{\"x\": 1}",
        "{}",
        " 1",
        "1 ",
        "",
        "\"",
        "-",
        "tru",
        "\"\"\"",
        "\"a\" \"",
        "\"\u{1}\"",
    ];

    #[test]
    fn every_form_decodes_as_serde_json_decodes_it() {
        for text in TEXTS {
            same::<i8>(text);
            same::<i16>(text);
            same::<i32>(text);
            same::<i64>(text);
            same::<i128>(text);
            same::<u8>(text);
            same::<u16>(text);
            same::<u32>(text);
            same::<u64>(text);
            same::<u128>(text);
            same::<f32>(text);
            same::<f64>(text);
            same::<bool>(text);
            same::<char>(text);
            same::<String>(text);
            same::<()>(text);
            same::<Option<i64>>(text);
            same::<Option<u8>>(text);
            same::<Option<String>>(text);
            same::<Option<Option<bool>>>(text);
            same::<Stage>(text);
            same::<Option<Stage>>(text);
            same::<Id>(text);
            same::<Either>(text);
            same::<Point>(text);
            same::<Vec<i64>>(text);
            same::<BTreeMap<String, Value>>(text);
            same::<Value>(text);
            same::<serde_bytes_like::Bytes>(text);
            for hint in 0..seen::HINTS {
                seen::same(text, hint);
            }
        }
    }

    /// A type that writes down which of its visitor's methods was called, with what: the
    /// slice must make the very call `serde_json` makes (`visit_u64`, not `visit_i64`, for
    /// a non-negative integer; a borrowed string, not a copied one), for each of the
    /// deserializer's methods a type may ask with.
    mod seen {
        use std::fmt;

        use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

        use super::Slice;

        pub(super) const HINTS: u8 = 6;

        #[derive(Clone, Copy)]
        struct Seen(u8);

        impl<'de> DeserializeSeed<'de> for Seen {
            type Value = String;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
                match self.0 {
                    0 => d.deserialize_any(self),
                    1 => d.deserialize_i64(self),
                    2 => d.deserialize_u8(self),
                    3 => d.deserialize_f64(self),
                    4 => d.deserialize_str(self),
                    _ => d.deserialize_option(self),
                }
            }
        }

        impl<'de> Visitor<'de> for Seen {
            type Value = String;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("anything")
            }
            fn visit_bool<E>(self, v: bool) -> Result<String, E> {
                Ok(format!("bool {v}"))
            }
            fn visit_i64<E>(self, v: i64) -> Result<String, E> {
                Ok(format!("i64 {v}"))
            }
            fn visit_u64<E>(self, v: u64) -> Result<String, E> {
                Ok(format!("u64 {v}"))
            }
            fn visit_f64<E>(self, v: f64) -> Result<String, E> {
                Ok(format!("f64 {v:?}"))
            }
            fn visit_str<E>(self, v: &str) -> Result<String, E> {
                Ok(format!("str {v}"))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<String, E> {
                Ok(format!("borrowed {v}"))
            }
            fn visit_string<E>(self, v: String) -> Result<String, E> {
                Ok(format!("string {v}"))
            }
            fn visit_unit<E>(self) -> Result<String, E> {
                Ok("unit".to_owned())
            }
            fn visit_none<E>(self) -> Result<String, E> {
                Ok("none".to_owned())
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
                Ok(format!("some {}", Seen(0).deserialize(d)?))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<String, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element_seed(Seen(0))? {
                    items.push(item);
                }
                Ok(format!("seq [{}]", items.join(", ")))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<String, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    entries.push(format!("{key}: {}", map.next_value_seed(Seen(0))?));
                }
                Ok(format!("map {{{}}}", entries.join(", ")))
            }
        }

        pub(super) fn same(text: &str, hint: u8) {
            let mut deserializer = serde_json::Deserializer::from_str(text);
            let expected = Seen(hint)
                .deserialize(&mut deserializer)
                .and_then(|seen| deserializer.end().map(|()| seen))
                .map_err(|error| error.to_string());
            let found = Seen(hint)
                .deserialize(Slice(text))
                .map_err(|error: serde_json::Error| error.to_string());
            // The same call, or an error both ways (an error's text is the slow path's).
            match (&expected, &found) {
                (Ok(expected), Ok(found)) => assert_eq!(found, expected, "{text:?}, hint {hint}"),
                (Err(_), Err(_)) => {}
                _ => panic!("{text:?}, hint {hint}: {found:?}, expected {expected:?}"),
            }
        }
    }

    /// A type that asks for bytes (`deserialize_bytes`), as `serde_bytes` does.
    mod serde_bytes_like {
        use std::fmt;

        use serde::de::{Deserialize, Deserializer, Visitor};

        #[derive(Debug, PartialEq)]
        pub(super) struct Bytes(Vec<u8>);

        impl<'de> Deserialize<'de> for Bytes {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Read;
                impl Visitor<'_> for Read {
                    type Value = Bytes;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("bytes")
                    }
                    fn visit_bytes<E>(self, v: &[u8]) -> Result<Bytes, E> {
                        Ok(Bytes(v.to_vec()))
                    }
                    fn visit_str<E>(self, v: &str) -> Result<Bytes, E> {
                        Ok(Bytes(v.as_bytes().to_vec()))
                    }
                }
                deserializer.deserialize_bytes(Read)
            }
        }
    }

    /// A visitor sees the very call `serde_json` makes: a string borrowed from the text.
    #[test]
    fn a_plain_string_is_borrowed_as_serde_json_borrows_it() {
        #[derive(Deserialize)]
        struct Borrowed<'a>(&'a str);
        let Borrowed(text) = Borrowed::deserialize(Slice("\"web\"")).expect("borrowed");
        assert_eq!(text, "web");
        assert!(Borrowed::deserialize(Slice("\"w\\u0065b\"")).is_err());
        assert!(serde_json::from_str::<Borrowed<'_>>("\"w\\u0065b\"").is_err());
    }
}
