//! Strict parsing of argument text: duplicate keys are errors, not "last one wins", and
//! nesting is bounded so that hostile input cannot exhaust the stack.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::resolve::guard::ArgumentLimits;
use crate::shared::tool_error::ArgumentProblem;

/// Parses `text` as one JSON value, refusing duplicate keys, nesting deeper than `max_depth`
/// levels (the root is level 1) and text longer than `max_bytes`.
pub(crate) fn parse(text: &str, limits: &ArgumentLimits) -> Result<Value, ArgumentProblem> {
    if text.len() > limits.max_bytes {
        return Err(limits.too_large());
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    // serde_json's own recursion limit (128) stops text nested deeper than that first, with
    // its own message; the limits are checked again on the value.
    let value = Strict {
        depth: 0,
        max_depth: limits.max_depth,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value))
    .map_err(|error| {
        ArgumentProblem::new("", format!("the arguments are not valid JSON: {error}"))
    })?;
    Ok(value)
}

struct Strict {
    depth: usize,
    max_depth: usize,
}

impl Strict {
    fn nested<E: de::Error>(&self) -> Result<Strict, E> {
        if self.depth >= self.max_depth {
            return Err(E::custom(format_args!(
                "nested deeper than {} levels",
                self.max_depth
            )));
        }
        Ok(Strict {
            depth: self.depth + 1,
            max_depth: self.max_depth,
        })
    }
}

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut list = Vec::new();
        while let Some(value) = seq.next_element_seed(self.nested()?)? {
            list.push(value);
        }
        Ok(Value::Array(list))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "the key {key:?} is repeated"
                )));
            }
            let value = map.next_value_seed(self.nested()?)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}
