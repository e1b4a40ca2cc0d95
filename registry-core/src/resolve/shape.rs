//! The proof behind the typed fast path: a tool's arguments schema compiled, once, into a
//! [`Shape`] when every keyword it uses is one whose every constraint the fast check
//! ([`fast`](super::fast)) enforces exactly, and `None` otherwise.
//!
//! The keywords a shape covers: `type` (one or several), `properties`, `required`,
//! `additionalProperties: false` (or `unevaluatedProperties: false`), `items`, `enum` and
//! `const` of strings (and `null`), integer `minimum`/`maximum` (and their exclusive forms) on
//! integers, same-document `$ref`s into the root's `$defs` (not recursive), `anyOf`/`oneOf`
//! whose alternatives accept disjoint kinds of value (an `Option` of a struct, an enum whose
//! variants are documented), the numeric `format`s that schemars writes for Rust's number
//! types (annotations to JSON Schema 2020-12), and words (`description`, `title`, `default`,
//! `examples`...). Any other keyword (`pattern`, `minLength`, `format: "email"`,
//! `uniqueItems`, `minItems`, an open object, a map...) keeps the tool on jsonschema.
//!
//! What the fast check accepts is a subset of what jsonschema accepts for such a schema (it is
//! stricter in one place: an integer written `1.0` is refused, and then checked the slow way),
//! so a call it accepts gets exactly the answer the slow path gives.

use serde_json::{Map, Value};

pub(crate) const NULL: u8 = 1;
pub(crate) const BOOLEAN: u8 = 2;
pub(crate) const INTEGER: u8 = 4;
/// Any number, integers included.
pub(crate) const NUMBER: u8 = 8;
pub(crate) const STRING: u8 = 16;
pub(crate) const ARRAY: u8 = 32;
pub(crate) const OBJECT: u8 = 64;

/// The most properties an object of a shape may declare (a bit each in a `u64`).
const MAX_PROPERTIES: usize = 64;

/// The numeric formats schemars writes for Rust's number types: annotations that
/// jsonschema does not check (and would not know), implied by the type.
const NUMERIC_FORMATS: &[&str] = &[
    "int8", "int16", "int32", "int64", "int", "uint8", "uint16", "uint32", "uint64", "uint",
    "float", "double",
];

/// Keywords that say something about a value without constraining it.
const WORDS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// A tool's arguments schema, as the fast check reads it: the root object and how deep a
/// value it accepts can be nested.
#[derive(Debug)]
pub(crate) struct Shape {
    pub(crate) root: ObjectShape,
    /// The deepest nesting of arrays and objects a value of this shape has (the arguments
    /// object is level 1).
    pub(crate) depth: usize,
}

/// The schema of one value: alternatives that accept disjoint kinds of value, so that the
/// kind of a value picks the only one that may accept it.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) alternatives: Box<[Leaf]>,
}

/// One alternative: the kinds of value it accepts and what it asks of each.
#[derive(Debug, Default)]
pub(crate) struct Leaf {
    /// `NULL | BOOLEAN | ...`; `NUMBER` includes integers.
    pub(crate) kinds: u8,
    /// The only strings accepted (`enum`, `const`), when it restricts them.
    pub(crate) strings: Option<Box<[Box<str>]>>,
    /// Bounds of integers, inclusive.
    pub(crate) minimum: Option<i128>,
    pub(crate) maximum: Option<i128>,
    pub(crate) items: Option<Box<Node>>,
    pub(crate) object: Option<Box<ObjectShape>>,
}

/// A closed object: its properties, in the schema's order, and which are required.
#[derive(Debug, Default)]
pub(crate) struct ObjectShape {
    pub(crate) names: Box<[Box<str>]>,
    pub(crate) nodes: Box<[Node]>,
    /// Bit `i` set: `names[i]` is required.
    pub(crate) required: u64,
}

impl ObjectShape {
    /// The index of the property `name`.
    pub(crate) fn index(&self, name: &str) -> Option<usize> {
        // Compared here rather than by `memcmp`: names are short, and a call of `memcmp`
        // per name was most of a lookup's cost (issue 22's profile, under callgrind).
        let name = name.as_bytes();
        self.names.iter().position(|known| {
            let known = known.as_bytes();
            known.len() == name.len() && known.iter().zip(name).all(|(a, b)| a == b)
        })
    }
}

impl Node {
    /// The alternative that may accept a value of kind `kind` (one bit), if one does.
    pub(crate) fn leaf(&self, kind: u8) -> Option<&Leaf> {
        self.alternatives.iter().find(|leaf| leaf.accepts(kind))
    }
}

impl Leaf {
    fn accepts(&self, kind: u8) -> bool {
        let kinds = if self.kinds & NUMBER != 0 {
            self.kinds | INTEGER
        } else {
            self.kinds
        };
        kinds & kind != 0
    }
}

impl Shape {
    /// The shape of `schema`, when every keyword in it is one the fast check enforces
    /// exactly; `None` keeps the tool on jsonschema.
    pub(crate) fn compile(schema: &Value) -> Option<Shape> {
        let definitions = match schema.get("$defs") {
            None => None,
            Some(Value::Object(definitions)) => Some(definitions),
            Some(_) => return None,
        };
        let mut compiler = Compiler {
            definitions,
            following: Vec::new(),
        };
        let (node, depth) = compiler.node(schema, true)?;
        let mut alternatives = node.alternatives.into_vec();
        if alternatives.len() != 1 || alternatives[0].kinds != OBJECT {
            return None;
        }
        let root = *alternatives.pop()?.object?;
        Some(Shape { root, depth })
    }
}

struct Compiler<'a> {
    definitions: Option<&'a Map<String, Value>>,
    /// The definitions being compiled, to refuse recursion.
    following: Vec<&'a str>,
}

impl<'a> Compiler<'a> {
    /// The node of `schema` and the depth of the values it accepts.
    fn node(&mut self, schema: &'a Value, root: bool) -> Option<(Node, usize)> {
        let Value::Object(schema) = schema else {
            return None;
        };
        let only_words = |but: &[&str]| {
            schema.keys().all(|key| {
                but.contains(&key.as_str())
                    || WORDS.contains(&key.as_str())
                    || (root && key == "$defs")
            })
        };
        if let Some(reference) = schema.get("$ref") {
            if !only_words(&["$ref"]) {
                return None;
            }
            let name = reference.as_str()?.strip_prefix("#/$defs/")?;
            if name.contains(['/', '~', '%']) || self.following.contains(&name) {
                return None;
            }
            let (name, target) = self.definitions?.get_key_value(name)?;
            self.following.push(name);
            let node = self.node(target, false);
            self.following.pop();
            return node;
        }
        let branches = match (schema.get("anyOf"), schema.get("oneOf")) {
            (Some(branches), None) if only_words(&["anyOf"]) => Some(branches),
            (None, Some(branches)) if only_words(&["oneOf"]) => Some(branches),
            (None, None) => None,
            _ => return None,
        };
        if let Some(branches) = branches {
            let mut leaves = Vec::new();
            let mut depth = 0;
            for branch in branches.as_array()? {
                let (node, deep) = self.node(branch, false)?;
                depth = depth.max(deep);
                leaves.extend(node.alternatives.into_vec());
            }
            return Some((disjoint(leaves)?, depth));
        }
        let (leaf, depth) = self.leaf(schema, root)?;
        Some((
            Node {
                alternatives: Box::new([leaf]),
            },
            depth,
        ))
    }

    fn leaf(&mut self, schema: &'a Map<String, Value>, root: bool) -> Option<(Leaf, usize)> {
        let mut leaf = Leaf::default();
        let mut typed = None;
        let mut values: Option<Vec<&Value>> = None;
        let mut properties = None;
        let mut required: &[Value] = &[];
        let mut closed = false;
        let mut depth = 0;
        for (keyword, value) in schema {
            match keyword.as_str() {
                "type" => typed = Some(kinds(value)?),
                "enum" => values = Some(value.as_array()?.iter().collect()),
                "const" => values = Some(vec![value]),
                "minimum" => leaf.minimum = Some(integer(value)?),
                "maximum" => leaf.maximum = Some(integer(value)?),
                "exclusiveMinimum" => leaf.minimum = Some(integer(value)? + 1),
                "exclusiveMaximum" => leaf.maximum = Some(integer(value)? - 1),
                "items" => {
                    let (items, deep) = self.node(value, false)?;
                    leaf.items = Some(Box::new(items));
                    depth = depth.max(deep);
                }
                "properties" => properties = Some(value.as_object()?),
                "required" => required = value.as_array()?,
                "additionalProperties" | "unevaluatedProperties" => {
                    closed = value == &Value::Bool(false);
                    if !closed {
                        return None;
                    }
                }
                "format" => {
                    if !NUMERIC_FORMATS.contains(&value.as_str()?) {
                        return None;
                    }
                }
                "$defs" if root => {}
                word if WORDS.contains(&word) => {}
                _ => return None,
            }
        }
        // Both `minimum` and `exclusiveMinimum` would need both checked: not written by
        // schemars, so not covered.
        let bounds = |a: &str, b: &str| schema.contains_key(a) && schema.contains_key(b);
        if bounds("minimum", "exclusiveMinimum") || bounds("maximum", "exclusiveMaximum") {
            return None;
        }
        leaf.kinds = match (typed, values) {
            (None, None) => return None,
            (typed, None) => typed?,
            (typed, Some(values)) => {
                let typed = typed.unwrap_or(NULL | STRING);
                let mut strings = Vec::new();
                let mut kinds = 0;
                for value in values {
                    match value {
                        Value::String(text) if typed & STRING != 0 => {
                            strings.push(text.as_str().into());
                            kinds |= STRING;
                        }
                        Value::Null if typed & NULL != 0 => kinds |= NULL,
                        // A value the type refuses is never accepted: leaving it out is exact.
                        Value::String(_) | Value::Null => {}
                        _ => return None,
                    }
                }
                leaf.strings = Some(strings.into_boxed_slice());
                kinds
            }
        };
        let numbers = leaf.kinds & (INTEGER | NUMBER);
        if (leaf.minimum.is_some() || leaf.maximum.is_some()) && numbers != INTEGER {
            // Bounds on floats would need JSON Schema's exact comparison of numbers.
            return None;
        }
        if leaf.kinds & ARRAY != 0 && leaf.items.is_none() {
            return None;
        }
        if leaf.kinds & OBJECT != 0 || properties.is_some() {
            if !closed {
                return None;
            }
            let mut object = ObjectShape::default();
            let mut names = Vec::new();
            let mut nodes = Vec::new();
            for (name, property) in properties.into_iter().flatten() {
                let (node, deep) = self.node(property, false)?;
                depth = depth.max(deep);
                names.push(Box::<str>::from(name.as_str()));
                nodes.push(node);
            }
            if names.len() > MAX_PROPERTIES {
                return None;
            }
            for name in required {
                let name = name.as_str()?;
                let index = names.iter().position(|known| &**known == name)?;
                object.required |= 1 << index;
            }
            object.names = names.into_boxed_slice();
            object.nodes = nodes.into_boxed_slice();
            leaf.object = Some(Box::new(object));
        } else if !required.is_empty() {
            return None;
        }
        let container = leaf.kinds & (ARRAY | OBJECT) != 0;
        Some((leaf, if container { depth + 1 } else { 0 }))
    }
}

/// The kinds `type` names.
fn kinds(value: &Value) -> Option<u8> {
    let one = |name: &str| {
        Some(match name {
            "null" => NULL,
            "boolean" => BOOLEAN,
            "integer" => INTEGER,
            "number" => NUMBER,
            "string" => STRING,
            "array" => ARRAY,
            "object" => OBJECT,
            _ => return None,
        })
    };
    match value {
        Value::String(name) => one(name),
        Value::Array(names) => names
            .iter()
            .try_fold(0, |kinds, name| Some(kinds | one(name.as_str()?)?)),
        _ => None,
    }
}

/// An integer bound (schemars writes Rust's integer limits as integers).
fn integer(value: &Value) -> Option<i128> {
    value
        .as_i64()
        .map(i128::from)
        .or_else(|| value.as_u64().map(i128::from))
}

/// `leaves` as one node, if no two accept the same kind of value; alternatives that are all
/// lists of strings (an enum's documented variants) are merged when no string is in two.
fn disjoint(leaves: Vec<Leaf>) -> Option<Node> {
    let widen = |kinds: u8| {
        if kinds & NUMBER != 0 {
            kinds | INTEGER
        } else {
            kinds
        }
    };
    let strings_only = leaves.len() > 1
        && leaves
            .iter()
            .all(|leaf| leaf.kinds == STRING && leaf.strings.is_some());
    if strings_only {
        let mut all: Vec<Box<str>> = Vec::new();
        for leaf in leaves {
            for text in leaf.strings.into_iter().flatten() {
                if all.contains(&text) {
                    return None;
                }
                all.push(text);
            }
        }
        let merged = Leaf {
            kinds: STRING,
            strings: Some(all.into_boxed_slice()),
            ..Leaf::default()
        };
        return Some(Node {
            alternatives: Box::new([merged]),
        });
    }
    let mut seen = 0u8;
    for leaf in &leaves {
        let kinds = widen(leaf.kinds);
        if kinds == 0 || seen & kinds != 0 {
            return None;
        }
        seen |= kinds;
    }
    Some(Node {
        alternatives: leaves.into_boxed_slice(),
    })
}
