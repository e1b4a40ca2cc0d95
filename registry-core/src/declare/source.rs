//! Where a tool was declared.

use std::fmt;

/// Where a tool was declared: a `#[tool]` function, or the place a [`DynamicTool`] was
/// created.
///
/// Every registry error about a tool names its source, so that a duplicate shows both places.
///
/// [`DynamicTool`]: crate::DynamicTool
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Source {
    module_path: Option<&'static str>,
    file: &'static str,
    line: u32,
    column: u32,
}

impl Source {
    /// The source of a `#[tool]` function; used by the generated code.
    #[doc(hidden)]
    pub const fn declared(
        module_path: &'static str,
        file: &'static str,
        line: u32,
        column: u32,
    ) -> Self {
        Source {
            module_path: Some(module_path),
            file,
            line,
            column,
        }
    }

    /// The caller's location, for tools built at run time.
    #[track_caller]
    pub(crate) fn caller() -> Self {
        let location = std::panic::Location::caller();
        Source {
            module_path: None,
            file: location.file(),
            line: location.line(),
            column: location.column(),
        }
    }

    /// Whether the tool was declared with `#[tool]` (rather than built at run time).
    pub fn is_declared(&self) -> bool {
        self.module_path.is_some()
    }

    /// The crate that declared the tool (for `#[tool]` functions).
    pub fn crate_name(&self) -> Option<&'static str> {
        self.module_path
            .map(|path| path.split("::").next().unwrap_or(path))
    }

    /// The module path of a `#[tool]` function, e.g. `my_app::tools::build`.
    pub fn module_path(&self) -> Option<&'static str> {
        self.module_path
    }

    /// The source file, as the compiler saw it.
    pub fn file(&self) -> &'static str {
        self.file
    }

    /// The line of the function's name (or of the `DynamicTool::new` call), from 1.
    pub fn line(&self) -> u32 {
        self.line
    }

    /// The column of the function's name (or of the `DynamicTool::new` call), from 1.
    pub fn column(&self) -> u32 {
        self.column
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.module_path {
            Some(module) => write!(
                f,
                "`#[tool]` in {module} at {}:{}:{}",
                self.file, self.line, self.column
            ),
            None => write!(
                f,
                "built at run time at {}:{}:{}",
                self.file, self.line, self.column
            ),
        }
    }
}
