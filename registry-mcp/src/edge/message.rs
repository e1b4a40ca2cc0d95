//! What the HTTP layers need to know of a JSON-RPC message (its id, its method, the shape of a
//! `tools/call`'s params), read in one pass that checks the JSON's syntax without building it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A message, peeked at. Anything but an object (a batch, a string...) peeks as empty.
#[derive(Default)]
pub(crate) struct Peek<'a> {
    /// The id, if it is a string or a number.
    pub(crate) id: Option<Value>,
    /// The method, if it is a string.
    pub(crate) method: Option<Cow<'a, str>>,
    pub(crate) params: Params<'a>,
}

/// The shape of `params`.
#[derive(Default)]
pub(crate) enum Params<'a> {
    /// No `params` key.
    #[default]
    Absent,
    /// `params` is not an object.
    NotObject,
    /// An object, with what its `name` and `arguments` are.
    Object {
        name: Option<Kind<'a>>,
        arguments: Option<Kind<'a>>,
    },
}

/// What a JSON value is, and a string's text.
pub(crate) enum Kind<'a> {
    Str(Cow<'a, str>),
    Object,
    Null,
    Other,
}

impl<'a> Peek<'a> {
    /// What is wrong with the params of a `tools/call` request, if anything: rmcp would answer
    /// -32601 (method not found) for a call it cannot parse, where JSON-RPC says -32602.
    pub(crate) fn malformed_call(&self) -> Option<&'static str> {
        if self.method.as_deref() != Some("tools/call") {
            return None;
        }
        let Params::Object { name, arguments } = &self.params else {
            return Some("tools/call needs params, an object with the tool's `name`");
        };
        if !matches!(name, Some(Kind::Str(_))) {
            return Some("tools/call needs `name`, the tool's name as a string");
        }
        match arguments {
            None | Some(Kind::Null | Kind::Object) => None,
            Some(_) => Some("`arguments` of tools/call must be an object"),
        }
    }

    /// The tool a well-formed `tools/call` calls.
    pub(crate) fn called_tool(&self) -> Option<&str> {
        match (&self.method, &self.params) {
            (
                Some(method),
                Params::Object {
                    name: Some(Kind::Str(name)),
                    ..
                },
            ) if method == "tools/call" => Some(name),
            _ => None,
        }
    }
}

/// The `visit_*` methods of a visitor for the scalars (booleans, numbers; and with
/// `visit_str, visit_unit`, strings and null), each giving `$value`.
macro_rules! scalars {
    ($type:ty, $value:expr $(, $name:ident)*) => {
        fn visit_bool<E>(self, _: bool) -> Result<$type, E> {
            Ok($value)
        }
        fn visit_i64<E>(self, _: i64) -> Result<$type, E> {
            Ok($value)
        }
        fn visit_u64<E>(self, _: u64) -> Result<$type, E> {
            Ok($value)
        }
        fn visit_f64<E>(self, _: f64) -> Result<$type, E> {
            Ok($value)
        }
        $(scalars!(@ $name, $type, $value);)*
    };
    (@ visit_str, $type:ty, $value:expr) => {
        fn visit_str<E>(self, _: &str) -> Result<$type, E> {
            Ok($value)
        }
    };
    (@ visit_unit, $type:ty, $value:expr) => {
        fn visit_unit<E>(self) -> Result<$type, E> {
            Ok($value)
        }
    };
}

/// Skips what is left of a sequence.
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Skips what is left of a map.
fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

impl<'de> Deserialize<'de> for Peek<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PeekVisitor;
        impl<'de> Visitor<'de> for PeekVisitor {
            type Value = Peek<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Peek<'de>, A::Error> {
                let mut peek = Peek::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "id" => {
                            let id: Value = map.next_value()?;
                            peek.id = (id.is_string() || id.is_number()).then_some(id);
                        }
                        "method" => {
                            peek.method = match map.next_value::<Kind<'de>>()? {
                                Kind::Str(method) => Some(method),
                                _ => None,
                            };
                        }
                        "params" => peek.params = map.next_value()?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(peek)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Peek<'de>, A::Error> {
                drain_seq(seq)?;
                Ok(Peek::default())
            }
            scalars!(Peek<'de>, Peek::default(), visit_str, visit_unit);
        }
        deserializer.deserialize_any(PeekVisitor)
    }
}

impl<'de> Deserialize<'de> for Params<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ParamsVisitor;
        impl<'de> Visitor<'de> for ParamsVisitor {
            type Value = Params<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params<'de>, A::Error> {
                let (mut name, mut arguments) = (None, None);
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "name" => name = Some(map.next_value()?),
                        "arguments" => arguments = Some(map.next_value()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Params::Object { name, arguments })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Params<'de>, A::Error> {
                drain_seq(seq)?;
                Ok(Params::NotObject)
            }
            scalars!(Params<'de>, Params::NotObject, visit_str, visit_unit);
        }
        deserializer.deserialize_any(ParamsVisitor)
    }
}

impl<'de> Deserialize<'de> for Kind<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KindVisitor;
        impl<'de> Visitor<'de> for KindVisitor {
            type Value = Kind<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Kind<'de>, E> {
                Ok(Kind::Str(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Kind<'de>, E> {
                Ok(Kind::Str(Cow::Owned(text.to_owned())))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Kind<'de>, A::Error> {
                drain_map(map)?;
                Ok(Kind::Object)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Kind<'de>, A::Error> {
                drain_seq(seq)?;
                Ok(Kind::Other)
            }
            fn visit_unit<E>(self) -> Result<Kind<'de>, E> {
                Ok(Kind::Null)
            }
            scalars!(Kind<'de>, Kind::Other);
        }
        deserializer.deserialize_any(KindVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peek(text: &str) -> Peek<'_> {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn a_peek_reads_what_the_layers_need_and_checks_the_syntax() {
        let call = peek(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"deploy","arguments":{"a":[1,{"b":null}]},"_meta":{}}}"#,
        );
        assert_eq!(call.id, Some(Value::from(7)));
        assert_eq!(call.called_tool(), Some("deploy"));
        assert_eq!(call.malformed_call(), None);
        for (text, problem) in [
            (r#"{"id":1,"method":"tools/call"}"#, "needs params"),
            (
                r#"{"id":1,"method":"tools/call","params":[1]}"#,
                "needs params",
            ),
            (
                r#"{"id":1,"method":"tools/call","params":{"name":3}}"#,
                "needs `name`",
            ),
            (
                r#"{"id":1,"method":"tools/call","params":{"name":"x","arguments":[]}}"#,
                "must be an object",
            ),
        ] {
            assert!(
                peek(text).malformed_call().unwrap().contains(problem),
                "{text}"
            );
        }
        let odd = peek(r#"{"id":{"a":1},"method":5,"params":"x"}"#);
        assert!(odd.id.is_none() && odd.method.is_none());
        assert!(peek(r#"[{"id":1}]"#).id.is_none());
        assert_eq!(
            peek(r#"{"method":"tools\/call","id":"a","params":{"name":"t\u0041"}}"#).called_tool(),
            Some("tA")
        );
        for bad in [
            "{",
            r#"{"id":1,}"#,
            r#"{"id":1} x"#,
            r#"{"params":{"name":"x""#,
        ] {
            assert!(serde_json::from_str::<Peek<'_>>(bad).is_err(), "{bad}");
        }
    }
}
