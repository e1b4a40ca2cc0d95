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
//!
//! The text is read by a small scanner of JSON's grammar ([`Scan`]) that checks each value
//! against its node as it goes, not by `serde_json`'s deserializer: with visitors and raw
//! values, the check was 29% of a small call's time (issue 22's profile), and the scan is a
//! third of that. What the scan is not sure of, it refuses, for the slow path to answer.
//!
//! A call made with a value already parsed is checked the same way ([`fits`]): a value that
//! fits the shape skips jsonschema, and one that does not is answered by jsonschema.

use std::ops::Range;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::resolve::guard::ArgumentLimits;
use crate::resolve::shape::{
    ARRAY, BOOLEAN, INTEGER, NULL, NUMBER, Node, OBJECT, ObjectShape, STRING, Shape,
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

/// Whether `arguments`, a value already parsed (its `null` optionals dropped), fits `shape`:
/// the same check as the scan's, on the value, so that a call made with a value skips
/// jsonschema too. It accepts only what jsonschema accepts (a float is accepted only where
/// any number is, as on the text), and what it refuses, jsonschema answers.
pub(crate) fn fits(shape: &Shape, arguments: &Value) -> bool {
    let Value::Object(object) = arguments else {
        return false;
    };
    object_fits(&shape.root, object)
}

fn object_fits(shape: &ObjectShape, object: &Map<String, Value>) -> bool {
    let mut seen = 0u64;
    for (name, value) in object {
        let Some(index) = shape.index(name) else {
            return false;
        };
        seen |= 1 << index;
        if !value_fits(&shape.nodes[index], value) {
            return false;
        }
    }
    seen & shape.required == shape.required
}

fn value_fits(node: &Node, value: &Value) -> bool {
    match value {
        Value::Null => node.leaf(NULL).is_some(),
        Value::Bool(_) => node.leaf(BOOLEAN).is_some(),
        Value::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(value), _) => integer_fits(node, i128::from(value)),
            (None, Some(value)) => integer_fits(node, i128::from(value)),
            _ => float_fits(node),
        },
        Value::String(text) => string_fits(node, Some(text)),
        Value::Array(items) => (node.leaf(ARRAY).and_then(|leaf| leaf.items.as_deref()))
            .is_some_and(|node| items.iter().all(|item| value_fits(node, item))),
        Value::Object(object) => (node.leaf(OBJECT).and_then(|leaf| leaf.object.as_deref()))
            .is_some_and(|shape| object_fits(shape, object)),
    }
}

/// The rules of a node's leaves, shared by the scan of a text and the check of a value.
///
/// An integer: where integers are accepted, within the bounds.
fn integer_fits(node: &Node, value: i128) -> bool {
    node.leaf(INTEGER).is_some_and(|leaf| {
        leaf.strings.is_none()
            && leaf.minimum.is_none_or(|minimum| value >= minimum)
            && leaf.maximum.is_none_or(|maximum| value <= maximum)
    })
}

/// A float is accepted only where any number is: an integer written `1.0` is for the slow
/// path, whose jsonschema reads it as an integer.
fn float_fits(node: &Node) -> bool {
    node.leaf(NUMBER)
        .is_some_and(|leaf| leaf.kinds & NUMBER != 0 && leaf.strings.is_none())
}

/// A string, `None` when its value is not known (the text's has escapes): then only where
/// any string is accepted.
fn string_fits(node: &Node, text: Option<&str>) -> bool {
    node.leaf(STRING)
        .is_some_and(|leaf| match (&leaf.strings, text) {
            (None, _) => true,
            (Some(strings), Some(text)) => strings.iter().any(|known| **known == *text),
            (Some(_), None) => false,
        })
}

fn values(root: &ObjectShape, text: &str) -> Option<Located> {
    let mut scan = Scan { text, at: 0 };
    let mut values = Located::new(root.names.len());
    scan.whitespace();
    scan.object(root, |scan, index, required| {
        let start = scan.at;
        // `null` for an optional argument means absent, as on the slow path. (It stays
        // seen: a repeated key is refused all the same.)
        if !required && scan.literal(b"null") {
            return Some(());
        }
        scan.value(&root.nodes[index])?;
        // Within the text, whose length fits in a `u32` (checked before).
        let range = u32::try_from(start).ok()?..u32::try_from(scan.at).ok()?;
        values.as_mut_slice()[index] = Some(range);
        Some(())
    })?;
    scan.whitespace();
    (scan.at == text.len()).then_some(values)
}

/// A reader of JSON text that checks each value against its node as it goes, in one pass and
/// without allocating.
///
/// Every text it accepts, `serde_json`'s strict parse accepts too, with the same meaning: it
/// follows RFC 8259's grammar as `serde_json` does (the same four whitespace bytes, no
/// leading zero, no trailing comma, no control byte in a string, surrogate pairs whole). Where
/// being exact would cost more than it saves, it refuses instead, and the slow path answers:
/// a key with an escape, an escaped string that an `enum` must compare, a number with an
/// exponent or longer than [`NUMBER_BYTES`], an integer of more than 18 digits, and `-0`
/// (which `serde_json` reads as a float).
struct Scan<'a> {
    text: &'a str,
    at: usize,
}

/// The longest number the scan reads: longer ones (which `serde_json` may read as an
/// infinity, an error) are for the slow path.
const NUMBER_BYTES: usize = 64;

/// The most digits of an integer the scan reads: any such integer fits an `i64`.
pub(crate) const INTEGER_DIGITS: usize = 18;

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Reads `word` (`null`, `true`, `false`) if it is next.
    fn literal(&mut self, word: &[u8]) -> bool {
        let found = self.text.as_bytes()[self.at..].starts_with(word);
        if found {
            self.at += word.len();
        }
        found
    }

    /// One value, checked against `node`.
    fn value(&mut self, node: &Node) -> Option<()> {
        match self.peek()? {
            b'"' => {
                let text = self.string()?;
                string_fits(node, text).then_some(())
            }
            b'n' if self.literal(b"null") => node.leaf(NULL).map(drop),
            b't' if self.literal(b"true") => node.leaf(BOOLEAN).map(drop),
            b'f' if self.literal(b"false") => node.leaf(BOOLEAN).map(drop),
            b'[' => {
                let items = node.leaf(ARRAY)?.items.as_deref()?;
                self.at += 1;
                self.whitespace();
                if self.eat(b']').is_some() {
                    return Some(());
                }
                loop {
                    self.value(items)?;
                    if self.next_or_close(b']')? {
                        return Some(());
                    }
                }
            }
            b'{' => {
                let shape = node.leaf(OBJECT)?.object.as_deref()?;
                self.object(shape, |scan, index, _| scan.value(&shape.nodes[index]))
            }
            b'-' | b'0'..=b'9' => self.number(node),
            _ => None,
        }
    }

    /// After a member or an element: `,` (`false`: another follows) or `close` (`true`).
    fn next_or_close(&mut self, close: u8) -> Option<bool> {
        self.whitespace();
        let byte = self.peek()?;
        self.at += 1;
        if byte == b',' {
            self.whitespace();
            Some(false)
        } else {
            (byte == close).then_some(true)
        }
    }

    /// An object of `shape`, each member's value read by `member(scan, index, required)`.
    fn object(
        &mut self,
        shape: &ObjectShape,
        mut member: impl FnMut(&mut Self, usize, bool) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.whitespace();
        let mut seen = 0u64;
        if self.eat(b'}').is_none() {
            loop {
                let index = shape.index(self.string()??)?;
                let bit = 1u64 << index;
                if seen & bit != 0 {
                    return None;
                }
                seen |= bit;
                self.whitespace();
                self.eat(b':')?;
                self.whitespace();
                member(self, index, shape.required & bit != 0)?;
                if self.next_or_close(b'}')? {
                    break;
                }
            }
        }
        (seen & shape.required == shape.required).then_some(())
    }

    /// A string: its value when it has no escape, `Some(None)` when it has (what is between
    /// the quotes is then not its value).
    fn string(&mut self) -> Option<Option<&str>> {
        self.eat(b'"')?;
        let start = self.at;
        let mut plain = true;
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    // Between two ASCII quotes: on character boundaries.
                    let text = self.text.get(start..self.at - 1)?;
                    return Some(plain.then_some(text));
                }
                b'\\' => {
                    plain = false;
                    self.at += 1;
                    match self.peek()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
                        b'u' => {
                            self.at += 1;
                            self.unicode_escape()?;
                        }
                        _ => return None,
                    }
                }
                // A control byte must be escaped (any other byte is part of valid UTF-8: the
                // text is a `str`).
                0..0x20 => return None,
                _ => self.at += 1,
            }
        }
    }

    /// The four hex digits after `\u`; a high surrogate must be followed by an escaped low
    /// one, and a low one alone is refused, as `serde_json` refuses both.
    fn unicode_escape(&mut self) -> Option<()> {
        let unit = self.hex4()?;
        match unit {
            0xD800..=0xDBFF => {
                self.eat(b'\\')?;
                self.eat(b'u')?;
                matches!(self.hex4()?, 0xDC00..=0xDFFF).then_some(())
            }
            0xDC00..=0xDFFF => None,
            _ => Some(()),
        }
    }

    fn hex4(&mut self) -> Option<u16> {
        let digits = self.text.as_bytes().get(self.at..self.at + 4)?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        let digits = self.text.get(self.at..self.at + 4)?;
        self.at += 4;
        u16::from_str_radix(digits, 16).ok()
    }

    /// A number, checked against `node`: an integer against its bounds, any other number
    /// only where any number is accepted.
    fn number(&mut self, node: &Node) -> Option<()> {
        let start = self.at;
        let negative = self.eat(b'-').is_some();
        let digits = self.at;
        // The integer's value, read as its digits are (past 18 digits it wraps, and is not
        // used: such an integer is for the slow path).
        let mut magnitude = 0u64;
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => {
                while let Some(digit @ b'0'..=b'9') = self.peek() {
                    magnitude = magnitude
                        .wrapping_mul(10)
                        .wrapping_add(u64::from(digit - b'0'));
                    self.at += 1;
                }
            }
            _ => return None,
        }
        let integer = self.at;
        if self.eat(b'.').is_some() {
            let fraction = self.at;
            self.digits();
            if self.at == fraction {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            return None;
        }
        let end = self.at;
        if end - start > NUMBER_BYTES {
            return None;
        }
        // Within 18 digits, only `0` itself reads as zero (a leading zero stands alone).
        let zero = magnitude == 0;
        if end == integer && integer - digits <= INTEGER_DIGITS && !(negative && zero) {
            let value = match negative {
                true => -i128::from(magnitude),
                false => i128::from(magnitude),
            };
            return integer_fits(node, value).then_some(());
        }
        // A float, or an integer the scan does not read as one.
        float_fits(node).then_some(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
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
    fn a_value_fits_as_its_text_passes() {
        let fits = |shape: &Arc<Shape>, value: Value| super::fits(shape, &value);
        let numbers = shape(&of::<u16>());
        assert!(fits(&numbers, json!({"x": 65535, "y": 255})));
        assert!(fits(&numbers, json!({"x": 0})));
        for refused in [
            json!({"x": 65536}),
            json!({"x": -1}),
            json!({"x": 1.0}),
            json!({"x": "1"}),
            json!({"y": 1}),
            json!({"x": 1, "z": 2}),
            json!({"x": null}),
            json!([1]),
        ] {
            assert!(!fits(&numbers, refused.clone()), "{refused}");
        }
        let owners = shape(&of::<Vec<Owner>>());
        assert!(fits(
            &owners,
            json!({"x": [{"name": "a", "team": null, "plain": "Staging"}, {"name": "b"}]})
        ));
        for refused in [
            json!({"x": [{"name": "a", "plain": "staging"}]}),
            json!({"x": [{"team": "a"}]}),
            json!({"x": [{"name": "a", "other": 1}]}),
            json!({"x": {"name": "a"}}),
        ] {
            assert!(!fits(&owners, refused.clone()), "{refused}");
        }
        let floats = shape(&of::<f64>());
        assert!(fits(&floats, json!({"x": 1.5})));
        assert!(fits(&floats, json!({"x": -3})));
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

    #[test]
    fn the_grammar_is_serde_jsons_or_the_slow_path_answers() {
        let numbers = shape(&of::<i64>());
        let floats = shape(&of::<f64>());
        let strings = shape(&of::<String>());
        let documented = shape(&of::<Documented>());
        for (shape, text) in [
            (&numbers, "\t{\r\n\"x\" :\n-12 , \"y\":0}\n"),
            (&numbers, r#"{"x": 999999999999999999}"#),
            (&floats, r#"{"x": -0.5}"#),
            (&floats, r#"{"x": 12}"#),
            (&floats, r#"{"x": -0}"#),
            (&strings, r#"{"x": "a \" \\ \/ \b \f \n \r \t"}"#),
            (&strings, r#"{"x": "\u00e9 \ud83d\ude00 é 😀"}"#),
            (&strings, r#"{"x": ""}"#),
            // Hostile characters, escaped or not, pass as serde_json passes them.
            (
                &strings,
                "{\"x\": \"\\u0000 \\n \u{202e}\u{2066}\u{200b}\"}",
            ),
        ] {
            assert!(accepts(shape, text), "{text}");
        }
        for (shape, text) in [
            // What serde_json refuses.
            (&numbers, r#"{"x": 01}"#),
            (&numbers, r#"{"x": +1}"#),
            (&numbers, r#"{"x": 1,}"#),
            (&numbers, r#"{,"x": 1}"#),
            (&numbers, r#"{"x" 1}"#),
            (&numbers, "{\"x\": 1}\u{a0}"),
            (&numbers, "{\"x\":\u{c}1}"),
            (&floats, r#"{"x": 1.}"#),
            (&floats, r#"{"x": .5}"#),
            (&floats, r#"{"x": -}"#),
            (&strings, "{\"x\": \"a\tb\"}"),
            (&strings, "{\"x\": \"a\u{0}b\"}"),
            (&strings, "{\"x\": \"a\nb\"}"),
            (&strings, r#"{"x": "\x"}"#),
            (&strings, r#"{"x": "\u00e"}"#),
            (&strings, r#"{"x": "\ud83d"}"#),
            (&strings, r#"{"x": "\ude00"}"#),
            (&strings, r#"{"x": "\ud83d\u0041"}"#),
            (&strings, r#"{"x": "a}"#),
            (&strings, r#"{"x": nul}"#),
            (&strings, r#"{"x": True}"#),
            // What the scan leaves to the slow path, though serde_json reads it.
            (&floats, r#"{"x": 1e3}"#),
            (&numbers, r#"{"x": 1000000000000000000}"#),
            (&numbers, r#"{"x": -0}"#),
            (&numbers, r#"{"\u0078": 1}"#),
            (&documented, r#"{"x": "\u004fne"}"#),
        ] {
            assert!(!accepts(shape, text), "{text}");
        }
        let long = format!(r#"{{"x": 0.{}}}"#, "1".repeat(super::NUMBER_BYTES));
        assert!(!accepts(&floats, &long));
    }

    /// Texts made by changing valid ones a byte at a time: whatever the fast check accepts,
    /// the slow path (strict parse, limits, jsonschema) accepts with the same values.
    #[test]
    fn what_the_fast_check_accepts_the_slow_path_accepts_alike() {
        use crate::resolve::json_text;
        use crate::resolve::validate::ArgumentValidator;

        let cases = [
            (of::<i64>(), r#"{"x": -12, "y": 7}"#),
            (of::<u16>(), r#"{"x": 65535, "y": null}"#),
            (of::<f64>(), r#"{"x": 1.25, "y": 0}"#),
            (of::<bool>(), r#"{"x": true}"#),
            (of::<String>(), r#"{"x": "a\"b\u00e9c", "y": 3}"#),
            (of::<Vec<Vec<i8>>>(), r#"{"x": [[1, -2], [], [3]]}"#),
            (of::<Option<Vec<String>>>(), r#"{"x": ["a", "b"], "y": 1}"#),
            (
                of::<Vec<Owner>>(),
                r#"{"x": [{"name": "a", "team": null, "plain": "Staging"}, {"name": "b"}]}"#,
            ),
            (
                of::<Option<Owner>>(),
                r#"{"x": {"name": "n", "team": "t"}}"#,
            ),
            (of::<Documented>(), r#"{"x": "Two", "y": 255}"#),
        ];
        let bytes = b" \t\n{}[]:,\"\\-+.0123456789eEnulltruefalsexyabu\x01\x7f";
        let limits = ArgumentLimits::default();
        let mut random = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |below: usize| {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            usize::try_from(random % below as u64).expect("below a usize")
        };
        let (mut accepted, mut fitted) = (0, 0);
        for (schema, seed) in &cases {
            let shape = shape(schema);
            let validator = ArgumentValidator::new(schema).expect("a schema");
            for _ in 0..3_000 {
                let mut text = seed.as_bytes().to_vec();
                for _ in 0..1 + next(3) {
                    let at = next(text.len() + 1);
                    match next(3) {
                        0 if at < text.len() => {
                            text.remove(at);
                        }
                        1 if at < text.len() => text[at] = bytes[next(bytes.len())],
                        _ => text.insert(at, bytes[next(bytes.len())]),
                    }
                }
                let Ok(text) = String::from_utf8(text) else {
                    continue;
                };
                // A value made from the text: what `fits` accepts, jsonschema accepts.
                if let Ok(mut value) = json_text::parse(&text, &limits) {
                    drop_null_optionals(&shape, &mut value);
                    if super::fits(&shape, &value) {
                        fitted += 1;
                        assert!(validator.problems(&value).is_empty(), "{text}");
                    }
                }
                let Ok(fast) = check(&shape, text.clone(), &limits) else {
                    continue;
                };
                accepted += 1;
                let mut value = json_text::parse(&text, &limits)
                    .unwrap_or_else(|problem| panic!("{text}: {problem:?}"));
                limits.check(&value).expect("within the limits");
                drop_null_optionals(&shape, &mut value);
                assert!(validator.problems(&value).is_empty(), "{text}");
                for (name, range) in shape.root.names.iter().zip(fast.values.as_slice()) {
                    let sliced: Option<Value> = range
                        .as_ref()
                        .map(|range| serde_json::from_str(fast.slice(range)).expect("json"));
                    assert_eq!(sliced.as_ref(), value.get(&**name), "{text}");
                }
            }
        }
        // The mutations must reach both sides of the checks.
        assert!(accepted > 1_000, "{accepted}");
        assert!(fitted > 1_000, "{fitted}");
    }

    /// What the slow path does before jsonschema: `null` for an optional property is absent.
    fn drop_null_optionals(shape: &Shape, value: &mut Value) {
        if let Some(object) = value.as_object_mut() {
            object.retain(|name, value| {
                let index = shape.root.index(name);
                !(value.is_null()
                    && index.is_some_and(|index| shape.root.required & 1 << index == 0))
            });
        }
    }
}
