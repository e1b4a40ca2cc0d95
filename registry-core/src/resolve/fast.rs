//! The typed fast path: a call's argument text checked against its tool's [`Shape`] in one
//! pass over the text, without building a `serde_json::Value` and without jsonschema. The
//! text is kept, with where each top-level argument's value is in it, for the generated
//! executor to deserialize each parameter straight from its slice.
//!
//! The check accepts only what the slow path (strict parse, [`ArgumentLimits`], jsonschema)
//! accepts: one JSON object and nothing after it, no repeated key at any level, no key the
//! schema does not declare, every required property, each value of the kind and within the
//! bounds its schema says, nested no deeper than the limits (the shape's own depth, compared
//! at the call), and a text short enough that the slow path's size estimate stays within the
//! limit. Anything else is answered by the slow path, which says what is wrong, so the text a
//! model reads is the same whichever path ran.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::resolve::guard::ArgumentLimits;
use crate::resolve::shape::{
    ARRAY, BOOLEAN, INTEGER, Leaf, NULL, NUMBER, Node, OBJECT, ObjectShape, STRING, Shape,
};

/// The slow path estimates the size of arguments at most this many times their text's
/// length (a one-byte number counts as 24): texts at most `max_bytes / 24` long are within
/// the limit whatever they hold.
const ESTIMATE_PER_BYTE: usize = 24;

/// Arguments that passed the fast check: the text, and each top-level property's value in it.
#[derive(Debug)]
pub(crate) struct FastArguments {
    pub(crate) text: String,
    pub(crate) shape: Arc<Shape>,
    /// Per property of the shape's root, in its order: where its value is in `text`; `None`
    /// when the call left it out (or gave `null` for an optional one).
    pub(crate) values: Located,
}

impl FastArguments {
    /// The text of a value located at `range`.
    pub(crate) fn slice(&self, range: &Range<u32>) -> &str {
        let (start, end) = (range.start as usize, range.end as usize);
        self.text.get(start..end).unwrap_or_default()
    }
}

/// How many properties are located without allocating.
const FEW: usize = 4;

/// Where each property's value is, in a list kept inline for a tool's usual few parameters.
#[derive(Debug)]
pub(crate) enum Located {
    Few([Option<Range<u32>>; FEW]),
    Many(Vec<Option<Range<u32>>>),
}

impl Located {
    fn new(properties: usize) -> Located {
        if properties <= FEW {
            Located::Few(Default::default())
        } else {
            Located::Many(vec![None; properties])
        }
    }

    /// One entry per property (and, inline, a few unused ones after them).
    pub(crate) fn as_slice(&self) -> &[Option<Range<u32>>] {
        match self {
            Located::Few(few) => few,
            Located::Many(many) => many,
        }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [Option<Range<u32>>] {
        match self {
            Located::Few(few) => few,
            Located::Many(many) => many,
        }
    }
}

/// Checks `text` against `shape`; the arguments on success, the text back otherwise (for the
/// slow path to say what is wrong).
pub(crate) fn check(
    shape: &Arc<Shape>,
    text: String,
    limits: &ArgumentLimits,
) -> Result<FastArguments, String> {
    // Positions are kept as `u32`, so that a call's arguments stay small to move.
    let within = text.len() <= limits.max_bytes / ESTIMATE_PER_BYTE
        && u32::try_from(text.len()).is_ok()
        && shape.depth <= limits.max_depth;
    if !within {
        return Err(text);
    }
    match values(&shape.root, &text) {
        Some(values) => Ok(FastArguments {
            text,
            shape: Arc::clone(shape),
            values,
        }),
        None => Err(text),
    }
}

fn values(root: &ObjectShape, text: &str) -> Option<Located> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let ranges = deserializer
        .deserialize_map(Root { shape: root, text })
        .ok()?;
    deserializer.end().ok()?;
    Some(ranges)
}

/// The message of every refusal: never shown (the slow path says what is wrong).
fn refused<E: de::Error>() -> E {
    E::custom("refused by the fast check")
}

/// The arguments object: its properties' values checked and located.
struct Root<'a> {
    shape: &'a ObjectShape,
    text: &'a str,
}

impl<'de> Visitor<'de> for Root<'_> {
    type Value = Located;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the arguments object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut values = Located::new(self.shape.names.len());
        let mut seen = 0u64;
        while let Some(index) = map.next_key_seed(Key(self.shape))? {
            let bit = 1u64 << index;
            if seen & bit != 0 {
                return Err(refused());
            }
            seen |= bit;
            let raw: &'de RawValue = map.next_value()?;
            let raw = raw.get();
            let required = self.shape.required & bit != 0;
            // `null` for an optional argument means absent, as on the slow path.
            // (It stays seen: a repeated key is refused all the same.)
            if !required && raw == "null" {
                continue;
            }
            let mut value = serde_json::Deserializer::from_str(raw);
            Checked(&self.shape.nodes[index])
                .deserialize(&mut value)
                .map_err(|_| refused::<A::Error>())?;
            // Within the text, whose length fits in a `u32` (checked before).
            let start = raw.as_ptr() as usize - self.text.as_ptr() as usize;
            let (Ok(start), Ok(end)) = (u32::try_from(start), u32::try_from(start + raw.len()))
            else {
                return Err(refused());
            };
            values.as_mut_slice()[index] = Some(start..end);
        }
        if seen & self.shape.required != self.shape.required {
            return Err(refused());
        }
        Ok(values)
    }
}

/// A key of an object of `0`'s shape: the index of the property it names.
struct Key<'a>(&'a ObjectShape);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a declared property")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<usize, E> {
        self.0.index(name).ok_or_else(refused)
    }
}

/// A value checked against the node `0`.
struct Checked<'a>(&'a Node);

impl<'de> DeserializeSeed<'de> for Checked<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Checked<'_> {
    fn leaf<E: de::Error>(&self, kind: u8) -> Result<&Leaf, E> {
        self.0.leaf(kind).ok_or_else(refused)
    }

    fn integer<E: de::Error>(&self, value: i128) -> Result<(), E> {
        let leaf = self.leaf(INTEGER)?;
        let within = leaf.strings.is_none()
            && leaf.minimum.is_none_or(|minimum| value >= minimum)
            && leaf.maximum.is_none_or(|maximum| value <= maximum);
        if within { Ok(()) } else { Err(refused()) }
    }
}

impl<'de> Visitor<'de> for Checked<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value of the schema")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.leaf(NULL).map(drop)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.leaf(BOOLEAN).map(drop)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        self.integer(i128::from(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        self.integer(i128::from(value))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        // A float is accepted only where any number is: an integer written `1.0` is for the
        // slow path, whose jsonschema reads it as an integer.
        let leaf = self.leaf(NUMBER)?;
        if leaf.kinds & NUMBER != 0 && leaf.strings.is_none() {
            Ok(())
        } else {
            Err(refused())
        }
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<(), E> {
        let leaf = self.leaf(STRING)?;
        match &leaf.strings {
            Some(strings) if !strings.iter().any(|known| &**known == text) => Err(refused()),
            _ => Ok(()),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let items = self.leaf(ARRAY)?.items.as_deref().ok_or_else(refused)?;
        while seq.next_element_seed(Checked(items))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let shape = self.leaf(OBJECT)?.object.as_deref().ok_or_else(refused)?;
        let mut seen = 0u64;
        while let Some(index) = map.next_key_seed(Key(shape))? {
            let bit = 1u64 << index;
            if seen & bit != 0 {
                return Err(refused());
            }
            seen |= bit;
            map.next_value_seed(Checked(&shape.nodes[index]))?;
        }
        if seen & shape.required != shape.required {
            return Err(refused());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::Arc;

    use schemars::JsonSchema;
    use serde_json::{Value, json};

    use super::check;
    use crate::__private::schema;
    use crate::declare::declaration::Param;
    use crate::declare::schema::parameters_schema;
    use crate::resolve::guard::ArgumentLimits;
    use crate::resolve::shape::Shape;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    enum Plain {
        Staging,
        Production,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    enum Documented {
        /// One.
        One,
        /// Two.
        Two,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Owner {
        name: String,
        team: Option<String>,
        plain: Option<Plain>,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Patterned {
        #[schemars(regex(pattern = r"^[a-z]+$"))]
        slug: String,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Short {
        #[schemars(length(min = 1))]
        name: String,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Tree {
        children: Vec<Tree>,
    }

    /// The schema `#[tool]` writes for one required parameter `x` of type `T` and an optional
    /// `y: u8`.
    fn of<T: JsonSchema>() -> Value {
        let params: &'static [Param] = Box::leak(Box::new([
            Param {
                name: "x",
                description: Some("The x."),
                required: true,
                schema: schema::<T>,
                header: None,
            },
            Param {
                name: "y",
                description: None,
                required: false,
                schema: schema::<u8>,
                header: None,
            },
        ]));
        parameters_schema(params)
    }

    fn shape(schema: &Value) -> Arc<Shape> {
        Arc::new(Shape::compile(schema).unwrap_or_else(|| panic!("a shape: {schema}")))
    }

    fn accepts(shape: &Arc<Shape>, text: &str) -> bool {
        check(shape, text.to_owned(), &ArgumentLimits::default()).is_ok()
    }

    #[test]
    fn schemas_of_plain_types_take_the_fast_path() {
        for schema in [
            of::<i64>(),
            of::<u16>(),
            of::<f64>(),
            of::<bool>(),
            of::<String>(),
            of::<Vec<Vec<i8>>>(),
            of::<Option<Vec<String>>>(),
            of::<Owner>(),
            of::<Vec<Owner>>(),
            of::<Option<Owner>>(),
            of::<Plain>(),
            of::<Documented>(),
            of::<Option<Documented>>(),
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ] {
            shape(&schema);
        }
    }

    #[test]
    fn other_keywords_keep_jsonschema() {
        let hand = |property: Value| json!({"type": "object", "properties": {"x": property}, "additionalProperties": false});
        for schema in [
            of::<Patterned>(),
            of::<Short>(),
            of::<char>(),
            of::<Tree>(),
            of::<Value>(),
            of::<BTreeMap<String, u8>>(),
            of::<BTreeSet<u8>>(),
            hand(json!({"type": "string", "format": "email"})),
            hand(json!({"type": "string", "format": "date-time"})),
            hand(json!({"type": "string", "minLength": 1})),
            hand(json!({"type": "string", "pattern": "^a"})),
            hand(json!({"type": "array", "items": {"type": "integer"}, "maxItems": 2})),
            hand(json!({"type": "number", "minimum": 0.5})),
            hand(json!({"type": "integer", "multipleOf": 2})),
            hand(json!({"anyOf": [{"type": "integer"}, {"type": "number"}]})),
            hand(json!({"oneOf": [{"type": "string"}, {"const": "a"}]})),
            json!({"type": "object", "properties": {"x": {"type": "string"}}}),
        ] {
            assert!(Shape::compile(&schema).is_none(), "{schema}");
        }
    }

    #[test]
    fn the_check_accepts_only_what_the_schema_accepts() {
        let numbers = shape(&of::<u16>());
        assert!(accepts(&numbers, r#"{"x": 65535, "y": 255}"#));
        assert!(accepts(&numbers, r#" {"x": 0, "y": null} "#));
        for refused in [
            r#"{"x": 65536}"#,
            r#"{"x": -1}"#,
            r#"{"x": 1.0}"#,
            r#"{"x": "1"}"#,
            r#"{"y": 1}"#,
            r#"{"x": 1, "x": 2}"#,
            r#"{"x": 1, "y": null, "y": 2}"#,
            r#"{"x": 1, "z": 2}"#,
            r#"{"x": 1} {}"#,
            r#"{"x": null}"#,
            r#"[1]"#,
            r#"{"x": 1"#,
        ] {
            assert!(!accepts(&numbers, refused), "{refused}");
        }
        let owners = shape(&of::<Vec<Owner>>());
        assert!(accepts(
            &owners,
            r#"{"x": [{"name": "a", "team": null, "plain": "Staging"}, {"name": "b"}]}"#
        ));
        for refused in [
            r#"{"x": [{"name": "a", "plain": "staging"}]}"#,
            r#"{"x": [{"team": "a"}]}"#,
            r#"{"x": [{"name": "a", "name": "b"}]}"#,
            r#"{"x": [{"name": "a", "other": 1}]}"#,
            r#"{"x": {"name": "a"}}"#,
        ] {
            assert!(!accepts(&owners, refused), "{refused}");
        }
        let documented = shape(&of::<Documented>());
        assert!(accepts(&documented, r#"{"x": "Two"}"#));
        assert!(!accepts(&documented, r#"{"x": "Three"}"#));
    }

    #[test]
    fn the_limits_send_the_text_to_the_slow_path() {
        let lists = shape(&of::<Vec<Vec<i8>>>());
        let text = r#"{"x": [[1, 2], []]}"#;
        assert!(accepts(&lists, text));
        let shallow = ArgumentLimits::default().with_max_depth(2);
        assert!(check(&lists, text.to_owned(), &shallow).is_err());
        // Under the slow path's estimate (24 bytes a number) a short text may be too large.
        let small = ArgumentLimits::default().with_max_bytes(24 * text.len() - 1);
        assert!(check(&lists, text.to_owned(), &small).is_err());
        let enough = ArgumentLimits::default().with_max_bytes(24 * text.len());
        assert!(check(&lists, text.to_owned(), &enough).is_ok());
    }
}
