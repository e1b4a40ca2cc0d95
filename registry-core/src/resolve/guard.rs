//! Limits on the shape of arguments, checked before anything else looks at them, so that
//! hostile input (deep nesting, huge documents) is refused cheaply and without recursion.

use serde_json::Value;

use crate::shared::tool_error::ArgumentProblem;

/// The deepest nesting of arrays and objects accepted in arguments by default.
pub const MAX_ARGUMENT_DEPTH: usize = 64;

/// Bounds on a call's arguments, checked before validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArgumentLimits {
    /// The deepest nesting of arrays and objects (the arguments object is level 1).
    pub max_depth: usize,
    /// The largest size of the arguments as JSON text, in bytes (estimated while walking).
    pub max_bytes: usize,
}

impl Default for ArgumentLimits {
    /// 64 levels and 4 MiB.
    fn default() -> Self {
        ArgumentLimits {
            max_depth: MAX_ARGUMENT_DEPTH,
            max_bytes: 4 << 20,
        }
    }
}

impl ArgumentLimits {
    /// Sets [`max_depth`](Self::max_depth).
    ///
    /// ```
    /// use registry_core::call::ArgumentLimits;
    ///
    /// let limits = ArgumentLimits::default().with_max_depth(8).with_max_bytes(64 << 10);
    /// assert_eq!((limits.max_depth, limits.max_bytes), (8, 65_536));
    /// ```
    #[must_use]
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// Sets [`max_bytes`](Self::max_bytes).
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Checks `arguments` against the limits; the size estimate (an upper bound of the
    /// compact JSON text, counting strings by their raw bytes) on success.
    pub(crate) fn check<'a>(&self, arguments: &'a Value) -> Result<usize, ArgumentProblem> {
        let mut bytes = 0usize;
        // Containers wait on a stack; scalars are counted at once, so that the flat
        // arguments of most calls are checked without allocating.
        let mut stack: Vec<(&'a Value, usize)> = Vec::new();
        let mut next = Some((arguments, 1usize));
        while let Some((value, depth)) = next.take().or_else(|| stack.pop()) {
            let mut visit = |child: &'a Value| match child {
                Value::Array(_) | Value::Object(_) => stack.push((child, depth + 1)),
                scalar => bytes += scalar_bytes(scalar),
            };
            match value {
                Value::Array(list) => {
                    self.nest(depth)?;
                    list.iter().for_each(&mut visit);
                    bytes += list.len() + 2;
                }
                Value::Object(object) => {
                    self.nest(depth)?;
                    object.values().for_each(&mut visit);
                    bytes += object.keys().map(|key| key.len() + 4).sum::<usize>() + 2;
                }
                scalar => bytes += scalar_bytes(scalar),
            }
            if bytes > self.max_bytes {
                return Err(self.too_large());
            }
        }
        Ok(bytes)
    }

    pub(crate) fn too_large(&self) -> ArgumentProblem {
        ArgumentProblem::new(
            "",
            format!(
                "the arguments are larger than {} bytes; send less data",
                self.max_bytes
            ),
        )
    }

    /// An array or object at level `depth` is within the limit if `depth` is: what it holds
    /// is deeper only if it is itself an array or object, checked when it is reached.
    fn nest(&self, depth: usize) -> Result<(), ArgumentProblem> {
        if depth > self.max_depth {
            return Err(ArgumentProblem::new(
                "",
                format!(
                    "the arguments are nested deeper than {} levels",
                    self.max_depth
                ),
            ));
        }
        Ok(())
    }
}

/// An upper bound of a scalar's size as compact JSON text.
fn scalar_bytes(value: &Value) -> usize {
    match value {
        Value::String(text) => text.len() + 2,
        Value::Number(_) => 24,
        _ => 5,
    }
}
