//! Documentation tools: read-only, open to every subject.

use registry_core::tool;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A search hit.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Hit {
    /// The page's path.
    pub path: String,
    /// The matching line.
    pub line: String,
}

/// Filters on a documentation search.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct Filter {
    /// Only pages under this section, e.g. `guides`.
    pub section: Option<String>,
    /// Only pages updated in the last N days.
    pub max_age_days: Option<u32>,
}

/// Search the project documentation.
#[tool(public, read_only, title = "Search the docs")]
pub fn search_docs(
    /// Words to look for.
    query: String,
    /// Narrow the search.
    filter: Option<Filter>,
) -> Vec<Hit> {
    let section = filter
        .and_then(|f| f.section)
        .unwrap_or_else(|| "guides".into());
    vec![Hit {
        path: format!("{section}/deploying.md"),
        line: format!("... {query} ..."),
    }]
}

/// Show the changelog of a release, e.g. `2.4.0`.
#[tool(public, read_only, idempotent)]
pub fn changelog(
    /// The release, as `major.minor.patch`.
    version: String,
) -> String {
    // A bug left in on purpose: a version without three parts panics. The run catches it,
    // the model is told the tool failed, and the panic message goes to the audit log.
    let parts: Vec<u32> = version.split('.').map(|p| p.parse().unwrap()).collect();
    format!(
        "{}.{}.{}: faster deploys, fewer surprises",
        parts[0], parts[1], parts[2]
    )
}
