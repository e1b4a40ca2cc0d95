//! What the HTTP layers need to know of a JSON-RPC message (its id, its method, the shape of a
//! `tools/call`'s params), read in one pass that checks the JSON's syntax without building it;
//! and how many values it holds ([`within_values`]), counted without building them either.
//! Nothing here allocates per element of an array or object: a hostile body of any shape costs
//! its own bytes, not a `Value` per element (issue 45, L11).

use std::borrow::Cow;
use std::fmt;

use serde::de::{
    Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::Value;
use serde_json::value::RawValue;

/// A message, peeked at. Anything but an object (a batch, a string...) peeks as empty.
#[derive(Default)]
pub(crate) struct Peek<'a> {
    /// The id, if it is a string or a number.
    pub(crate) id: Option<Value>,
    /// What is wrong with the id, if it is neither a string, a number nor null (JSON-RPC
    /// allows only those), or a string longer than [`MAX_ID_BYTES`]. Such a message is refused
    /// by the edge (`protocol_errors`), never handed to rmcp, which would build it as a
    /// `Value` (and echo a long one in its answer and the audit log).
    pub(crate) bad_id: Option<&'static str>,
    /// Whether the message is a JSON object (a batch, a string... is not).
    pub(crate) object: bool,
    /// The method, if it is a string.
    pub(crate) method: Option<Cow<'a, str>>,
    pub(crate) params: Params<'a>,
    /// Whether `jsonrpc` is `"2.0"`.
    version: bool,
    /// Whether it has a key other than `jsonrpc`, `id`, `method` and `params`, or one of those
    /// twice.
    unusual: bool,
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
        /// The text of `arguments`.
        arguments_text: Option<&'a str>,
        /// Whether it has a key other than `name`, `arguments` and `_meta`, or one of those
        /// twice, or a `_meta` with anything but a `progressToken` (see
        /// [`plain_call_arguments`](Peek::plain_call_arguments)).
        unusual: bool,
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
        let Params::Object {
            name, arguments, ..
        } = &self.params
        else {
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

    /// The text of the arguments of a `tools/call` request in its plainest form, `"{}"` when
    /// it has none: `jsonrpc` `"2.0"`, a string id or one that fits an `i64`, and params with
    /// the tool's `name`, at most `arguments` (an object, or null) and a `_meta` that holds
    /// at most a `progressToken` (which rmcp's client sends with every request: an offer to
    /// receive progress, which a tool that takes no context never reports). No other key in
    /// `_meta` (a trace's context, a task's), no `task`, no other key, none given twice. Such
    /// a call needs nothing of the session but its answer, and the HTTP server may answer it
    /// itself (`direct.rs`); any other goes to rmcp.
    pub(crate) fn plain_call_arguments(&self) -> Option<&'a str> {
        let id_fits = match &self.id {
            Some(Value::String(_)) => true,
            Some(Value::Number(number)) => number.is_i64(),
            _ => false,
        };
        if !self.version || self.unusual || !id_fits || self.called_tool().is_none() {
            return None;
        }
        match &self.params {
            Params::Object {
                unusual: false,
                arguments,
                arguments_text,
                ..
            } => match arguments {
                None | Some(Kind::Null) => Some("{}"),
                Some(Kind::Object) => *arguments_text,
                Some(_) => None,
            },
            _ => None,
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
                let mut peek = Peek {
                    object: true,
                    ..Peek::default()
                };
                let mut seen = [false; 4];
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    let known = ["jsonrpc", "id", "method", "params"]
                        .iter()
                        .position(|known| *known == key);
                    match known {
                        Some(index) if !seen[index] => seen[index] = true,
                        _ => peek.unusual = true,
                    }
                    match &*key {
                        "jsonrpc" => {
                            peek.version = matches!(
                                map.next_value::<Kind<'de>>()?,
                                Kind::Str(version) if version == "2.0"
                            );
                        }
                        "id" => match map.next_value::<Id>()? {
                            Id::Scalar(id) => (peek.id, peek.bad_id) = (Some(id), None),
                            Id::Null => (peek.id, peek.bad_id) = (None, None),
                            Id::Bad(what) => (peek.id, peek.bad_id) = (None, Some(what)),
                        },
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
                let (mut name, mut arguments, mut arguments_text) = (None, None, None);
                let (mut unusual, mut meta) = (false, false);
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "name" => {
                            unusual |= name.is_some();
                            name = Some(map.next_value()?);
                        }
                        "arguments" => {
                            unusual |= arguments.is_some();
                            let text = map.next_value::<&'de RawValue>()?.get();
                            arguments = Some(match text.as_bytes().first() {
                                Some(b'{') => Kind::Object,
                                _ if text == "null" => Kind::Null,
                                _ => Kind::Other,
                            });
                            arguments_text = Some(text);
                        }
                        "_meta" => {
                            unusual |= !map.next_value::<OnlyProgressToken>()?.0 || meta;
                            meta = true;
                        }
                        _ => {
                            unusual = true;
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Params::Object {
                    name,
                    arguments,
                    arguments_text,
                    unusual,
                })
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

/// Whether a `_meta` is an object that holds at most a `progressToken`.
struct OnlyProgressToken(bool);

impl<'de> Deserialize<'de> for OnlyProgressToken {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MetaVisitor;
        impl<'de> Visitor<'de> for MetaVisitor {
            type Value = OnlyProgressToken;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut only, mut token) = (true, false);
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    only &= key == "progressToken" && !token;
                    token = true;
                    map.next_value::<IgnoredAny>()?;
                }
                Ok(OnlyProgressToken(only))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                drain_seq(seq)?;
                Ok(OnlyProgressToken(false))
            }
            scalars!(
                OnlyProgressToken,
                OnlyProgressToken(false),
                visit_str,
                visit_unit
            );
        }
        deserializer.deserialize_any(MetaVisitor)
    }
}

/// The longest string id accepted, in bytes: ids are echoed in every answer and recorded with
/// every call; a client numbers its requests or names them with a UUID.
const MAX_ID_BYTES: usize = 1024;

const BAD_ID_BOOLEAN: &str = "`id` is a boolean; a JSON-RPC id must be a string, a number or null";
const BAD_ID_ARRAY: &str = "`id` is an array; a JSON-RPC id must be a string, a number or null";
const BAD_ID_OBJECT: &str = "`id` is an object; a JSON-RPC id must be a string, a number or null";
const BAD_ID_NUMBER: &str = "`id` is a number JSON cannot hold";

/// A message's `id`: a string or a number kept, null, or what is wrong with it (skipped,
/// never built).
enum Id {
    Scalar(Value),
    Null,
    Bad(&'static str),
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl<'de> Visitor<'de> for IdVisitor {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_str<E>(self, text: &str) -> Result<Id, E> {
                if text.len() > MAX_ID_BYTES {
                    return Ok(Id::Bad(
                        "`id` is a string longer than 1024 bytes: number requests, or name \
                         them with something shorter, such as a UUID",
                    ));
                }
                Ok(Id::Scalar(Value::String(text.to_owned())))
            }
            fn visit_i64<E>(self, number: i64) -> Result<Id, E> {
                Ok(Id::Scalar(Value::from(number)))
            }
            fn visit_u64<E>(self, number: u64) -> Result<Id, E> {
                Ok(Id::Scalar(Value::from(number)))
            }
            fn visit_f64<E>(self, number: f64) -> Result<Id, E> {
                // JSON has no NaN nor infinity: every number it reads is finite.
                Ok(
                    serde_json::Number::from_f64(number).map_or(Id::Bad(BAD_ID_NUMBER), |number| {
                        Id::Scalar(Value::Number(number))
                    }),
                )
            }
            fn visit_unit<E>(self) -> Result<Id, E> {
                Ok(Id::Null)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Id, E> {
                Ok(Id::Bad(BAD_ID_BOOLEAN))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Id, A::Error> {
                drain_seq(seq)?;
                Ok(Id::Bad(BAD_ID_ARRAY))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Id, A::Error> {
                drain_map(map)?;
                Ok(Id::Bad(BAD_ID_OBJECT))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

/// Whether the JSON text `bytes` holds at most `max` values, counting every array, object,
/// string, number, boolean and null, and every key of an object: what a parser that builds the
/// message (rmcp's, into `Value`s and its own buffer; the registry's, for arguments) allocates
/// per element. Counted without building anything, and stopped at the first value over `max`.
/// Text that is not JSON counts as over.
pub(crate) fn within_values(bytes: &[u8], max: usize) -> bool {
    let mut left = max;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    Budget(&mut left).deserialize(&mut deserializer).is_ok() && deserializer.end().is_ok()
}

/// What is left of a count of values; taking one from none is an error.
struct Budget<'a>(&'a mut usize);

impl Budget<'_> {
    fn take<E: serde::de::Error>(&mut self) -> Result<(), E> {
        match self.0.checked_sub(1) {
            Some(left) => {
                *self.0 = left;
                Ok(())
            }
            None => Err(E::custom("too many values")),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Budget<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Budget<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E: serde::de::Error>(mut self, _: bool) -> Result<(), E> {
        self.take()
    }
    fn visit_i64<E: serde::de::Error>(mut self, _: i64) -> Result<(), E> {
        self.take()
    }
    fn visit_u64<E: serde::de::Error>(mut self, _: u64) -> Result<(), E> {
        self.take()
    }
    fn visit_f64<E: serde::de::Error>(mut self, _: f64) -> Result<(), E> {
        self.take()
    }
    fn visit_str<E: serde::de::Error>(mut self, _: &str) -> Result<(), E> {
        self.take()
    }
    fn visit_unit<E: serde::de::Error>(mut self) -> Result<(), E> {
        self.take()
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.take()?;
        while seq.next_element_seed(Budget(&mut *self.0))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.take()?;
        while map.next_key_seed(Budget(&mut *self.0))?.is_some() {
            map.next_value_seed(Budget(&mut *self.0))?;
        }
        Ok(())
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
        assert!(odd.bad_id.unwrap().contains("an object"));
        let batch = peek(r#"[{"id":1}]"#);
        assert!(batch.id.is_none() && !batch.object);
        // An id is a string, a number or null; anything else, or a long string, is named.
        for (id, problem) in [
            ("[0,[0,{}]]", "an array"),
            ("true", "a boolean"),
            (&format!("{:?}", "x".repeat(1025)), "longer than 1024 bytes"),
        ] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#);
            let peeked = peek(&text);
            assert!(peeked.id.is_none(), "{id}");
            assert!(peeked.bad_id.unwrap().contains(problem), "{id}");
        }
        for (id, kept) in [
            ("null", None),
            ("-1.5", Some(Value::from(-1.5))),
            (
                &format!("{:?}", "x".repeat(1024)),
                Some(Value::from("x".repeat(1024))),
            ),
        ] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#);
            let peeked = peek(&text);
            assert_eq!((peeked.id, peeked.bad_id), (kept, None), "{id}");
        }
        assert_eq!(
            peek(r#"{"method":"tools\/call","id":"a","params":{"name":"t\u0041"}}"#).called_tool(),
            Some("tA")
        );
        // The plainest calls, which the edge may answer itself, and what makes one not.
        let plain = |text: &str| peek(text).plain_call_arguments().map(str::to_owned);
        assert_eq!(
            plain(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{ "a" : [1] }}}"#).as_deref(),
            Some(r#"{ "a" : [1] }"#)
        );
        for none in [
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"t","_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":4},"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{"name":"t","arguments":null}}"#,
        ] {
            assert_eq!(plain(none).as_deref(), Some("{}"), "{none}");
        }
        for not_plain in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"traceparent":"x"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":1,"progressToken":2}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":1,"x":2}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{},"_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","task":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","name":"u"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"extra":1}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"id":1,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"t"}}"#,
        ] {
            assert_eq!(plain(not_plain), None, "{not_plain}");
        }
        for bad in [
            "{",
            r#"{"id":1,}"#,
            r#"{"id":1} x"#,
            r#"{"params":{"name":"x""#,
        ] {
            assert!(serde_json::from_str::<Peek<'_>>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_are_counted_with_every_key_and_stopped_over_the_limit() {
        let text = r#"{"a":[1,"x",null,true],"b":{"c":{}}}"#;
        // The object, a, its array and its four values, b, its object, c and its object.
        assert!(within_values(text.as_bytes(), 11));
        assert!(!within_values(text.as_bytes(), 10));
        assert!(within_values(b"7", 1) && !within_values(b"7", 0));
        // Not JSON, or JSON with something after it, counts as over.
        assert!(!within_values(b"[1,", 100) && !within_values(b"1 2", 100));
        // A long array is stopped at the limit, and nesting at serde_json's depth (128).
        let zeros = format!("[{}0]", "0,".repeat(1_000_000));
        assert!(!within_values(zeros.as_bytes(), 1000));
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(!within_values(deep.as_bytes(), usize::MAX));
    }

    /// Every one-byte change (deleted, or one of a few bytes inserted or put in its place) of
    /// a few plain calls: whatever `plain_call_arguments` accepts, serde_json reads as the same
    /// call (version, id, method, only the keys allowed, the same arguments), so the edge never
    /// answers a call other than the one rmcp would have read.
    #[test]
    fn whatever_a_plain_call_is_taken_for_serde_json_reads_the_same() {
        let bases = [
            r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":[2,"x"]}}}"#,
            r#"{"params":{"_meta":{"progressToken":"p"},"arguments":null,"name":"t\u0041"},"method":"tools/call","id":"s","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":-7,"method":"tools/call","params":{"name":"n"}}"#,
        ];
        let alphabet = b"{}[]\",:\\ 0a-_.";
        let (mut accepted, mut tried) = (0, 0);
        for base in bases {
            let base = base.as_bytes();
            let mut variants: Vec<Vec<u8>> = vec![base.to_vec()];
            for at in 0..base.len() {
                let mut deleted = base.to_vec();
                deleted.remove(at);
                variants.push(deleted);
                for &byte in alphabet {
                    let mut inserted = base.to_vec();
                    inserted.insert(at, byte);
                    variants.push(inserted);
                    let mut replaced = base.to_vec();
                    replaced[at] = byte;
                    variants.push(replaced);
                }
            }
            for variant in variants {
                tried += 1;
                let Ok(peek) = serde_json::from_slice::<Peek<'_>>(&variant) else {
                    continue;
                };
                let Some(arguments) = peek.plain_call_arguments() else {
                    continue;
                };
                accepted += 1;
                let text = String::from_utf8_lossy(&variant);
                let value: Value = serde_json::from_slice(&variant).expect("valid JSON");
                assert_eq!(value["jsonrpc"], "2.0", "{text}");
                assert_eq!(value["method"], "tools/call", "{text}");
                assert!(value["id"].is_string() || value["id"].is_i64(), "{text}");
                assert_eq!(peek.id.as_ref(), Some(&value["id"]), "{text}");
                let top: Vec<&String> = value.as_object().unwrap().keys().collect();
                assert!(
                    top.iter()
                        .all(|key| ["jsonrpc", "id", "method", "params"].contains(&key.as_str())),
                    "{text}"
                );
                let params = value["params"].as_object().expect("params");
                assert!(
                    params
                        .keys()
                        .all(|key| ["name", "arguments", "_meta"].contains(&key.as_str())),
                    "{text}"
                );
                assert_eq!(
                    Some(&params["name"]),
                    peek.called_tool().map(Value::from).as_ref()
                );
                if let Some(meta) = params.get("_meta") {
                    let meta = meta.as_object().expect("_meta an object");
                    assert!(meta.keys().all(|key| key == "progressToken"), "{text}");
                }
                let expected = match params.get("arguments") {
                    None | Some(Value::Null) => Value::Object(Default::default()),
                    Some(arguments) => arguments.clone(),
                };
                let read: Value = serde_json::from_str(arguments).expect("arguments parse");
                assert_eq!(read, expected, "{text}");
            }
        }
        // The mutations reach both sides.
        assert!(
            accepted > 30 && accepted < tried / 2,
            "{accepted} of {tried}"
        );
    }
}
