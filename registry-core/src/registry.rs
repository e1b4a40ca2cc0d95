//! The registry: every tool the system has, by name.

use std::sync::Arc;

use crate::builder::RegistryBuilder;
use crate::error::RegistryError;
use crate::source::Source;
use crate::tool::Tool;

/// Every tool the system has, immutable once built, in name order.
///
/// Build it once at startup with [`Registry::from_inventory`] (every `#[tool]` linked into
/// the program) or [`Registry::builder`] (a chosen set, plus tools built at run time). It is
/// cheap to clone and `Send + Sync`.
///
/// ```
/// use registry_core::{tool, Registry};
///
/// /// Read the current build status of a project.
/// #[tool(scopes = "build:read", read_only)]
/// fn get_status(
///     /// Project identifier, e.g. `web`.
///     project: String,
/// ) -> String {
///     format!("{project}: green")
/// }
///
/// let registry = Registry::from_inventory()?;
/// let tool = registry.get("get_status")?;
/// assert!(tool.policy().is_read_only());
/// assert_eq!(tool.policy().scopes[0].as_str(), "build:read");
/// assert!(registry.get("get_stat").is_err());
/// # Ok::<(), registry_core::RegistryError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Registry {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Sorted by name, names unique.
    tools: Vec<Tool>,
    replacements: Vec<Replacement>,
}

/// A record of one tool replaced while the registry was built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    /// The tool's name.
    pub name: String,
    /// Where the replaced tool was declared.
    pub replaced: Source,
    /// Where its replacement was built.
    pub by: Source,
    /// Why, as the application said.
    pub reason: String,
}

impl Registry {
    /// Every `#[tool]` linked into this program.
    ///
    /// Fails, listing every problem, if two tools share a name (each with both declaration
    /// sites). See the crate docs on linking: a crate of tools that the program never names
    /// is not linked, and its tools are not here.
    pub fn from_inventory() -> Result<Registry, RegistryError> {
        Registry::builder().declared().build()
    }

    /// Starts a registry assembled explicitly.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    pub(crate) fn from_sorted(tools: Vec<Tool>, replacements: Vec<Replacement>) -> Registry {
        Registry {
            inner: Arc::new(Inner {
                tools,
                replacements,
            }),
        }
    }

    /// The names of all tools, sorted.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.inner.tools.iter().map(Tool::name)
    }

    /// The tool named `name`, matched exactly.
    pub fn get(&self, name: &str) -> Result<&Tool, RegistryError> {
        self.find(name).ok_or_else(|| RegistryError::UnknownTool {
            name: name.to_owned(),
        })
    }

    /// The tool named `name`, matched exactly, if there is one.
    pub fn find(&self, name: &str) -> Option<&Tool> {
        let tools = &self.inner.tools;
        tools
            .binary_search_by(|tool| tool.name().cmp(name))
            .ok()
            .map(|index| &tools[index])
    }

    /// Whether a tool named `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.inner.tools.len()
    }

    /// Whether there is no tool at all.
    pub fn is_empty(&self) -> bool {
        self.inner.tools.is_empty()
    }

    /// The tools in name order.
    pub fn iter(&self) -> std::slice::Iter<'_, Tool> {
        self.inner.tools.iter()
    }

    /// The replacements made while building, in the order they were made.
    pub fn replacements(&self) -> &[Replacement] {
        &self.inner.replacements
    }
}

impl<'a> IntoIterator for &'a Registry {
    type Item = &'a Tool;
    type IntoIter = std::slice::Iter<'a, Tool>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
