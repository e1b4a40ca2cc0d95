//! The representative tools of the lowering and golden tests: every parameter shape `#[tool]`
//! supports (primitives, `Option`, `Vec`, tuples, sets, maps, any JSON value, unit enums with
//! and without docs, internally and externally tagged enums, nested structs, bounded integers
//! and strings, formats, a recursive type) and a tool without parameters.
//!
//! Two of them cannot be offered everywhere, and carry a scope so that a run can leave them
//! out: `annotate` (a map and any JSON value: not in OpenAI strict mode) and `grow_tree` (a
//! recursive type: not for Anthropic nor Gemini).

#![allow(dead_code)] // The argument types are only deserialized, never read.

use std::collections::{BTreeSet, HashMap};

use registry_core::tool;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// The scope of `annotate`, whose map and any-value parameters OpenAI strict mode cannot take.
pub const OPEN_SCOPE: &str = "notes:write";

/// The scope of `grow_tree`, whose recursive type Anthropic and Gemini cannot take.
pub const TREE_SCOPE: &str = "tree:write";

/// Take one of each primitive.
#[tool(public, read_only)]
fn primitives(
    /// The name to greet.
    name: String,
    flag: bool,
    offset: i64,
    /// How many times.
    count: u32,
    ratio: f64,
    level: u8,
) -> String {
    format!("{name} {flag} {offset} {count} {ratio} {level}")
}

/// Take optional values, lists, a tuple and a set.
#[tool(public)]
fn collections(
    tags: Vec<String>,
    /// At most this many.
    limit: Option<u32>,
    ids: Option<Vec<i64>>,
    pair: (u8, String),
    labels: BTreeSet<String>,
) -> usize {
    tags.len()
        + limit.unwrap_or(0) as usize
        + ids.map_or(0, |ids| ids.len())
        + pair.1.len()
        + labels.len()
}

/// Attach counts and a payload of any shape.
#[tool(scopes = "notes:write")]
fn annotate(
    /// Counts by label.
    counts: HashMap<String, u32>,
    /// The payload, of any shape.
    payload: Value,
    meta: Option<Value>,
) -> usize {
    counts.len() + usize::from(payload.is_null()) + usize::from(meta.is_some())
}

/// How urgent a ticket is.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// It can wait.
    Low,
    /// It needs attention today.
    High,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    Email,
    Chat,
}

/// Set a ticket's priority and where to notify.
#[tool(public, idempotent)]
fn set_priority(
    /// The new priority.
    priority: Priority,
    fallback: Option<Priority>,
    channel: Channel,
    cc: Option<Channel>,
) {
    let _ = (priority, fallback, channel, cc);
}

/// A shape, tagged by `kind`.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shape {
    Circle { radius: f64 },
    Rectangle { width: f64, height: f64 },
}

/// Where to deploy.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// The head of a branch.
    Branch(String),
    /// One commit.
    Commit { sha: String },
    /// Whatever was built last.
    Latest,
}

/// Draw a shape somewhere.
#[tool(public)]
fn draw(shape: Shape, target: Target) {
    let _ = (shape, target);
}

/// Which runs to list.
#[derive(Deserialize, JsonSchema)]
pub struct Filter {
    /// Only runs in this state.
    status: String,
    window: Window,
}

#[derive(Deserialize, JsonSchema)]
pub struct Window {
    from: String,
    to: Option<String>,
}

/// List pipeline runs.
#[tool(public, read_only)]
fn list_runs(
    /// Which runs.
    filter: Filter,
    extra_windows: Vec<Window>,
    window: Option<Window>,
) {
    let _ = (filter, extra_windows, window);
}

/// A page to publish.
#[derive(Deserialize, JsonSchema)]
pub struct Page {
    /// The title.
    #[schemars(length(min = 1, max = 100))]
    title: String,
    /// Where the page lives.
    #[schemars(pattern(r"^[a-z0-9-]+$"))]
    slug: String,
    #[schemars(email)]
    author: Option<String>,
    /// Stars, from 1 to 5.
    #[schemars(range(min = 1, max = 5))]
    rating: u8,
}

/// Publish a page.
#[tool(public, destructive)]
fn publish(
    page: Page,
    /// How many copies to print.
    copies: u32,
) {
    let _ = (page, copies);
}

/// A node of a tree of labels.
#[derive(Deserialize, JsonSchema)]
pub struct TreeNode {
    /// The node's label.
    label: String,
    /// The node's children, in order.
    children: Vec<TreeNode>,
}

/// Grow a tree of labels.
#[tool(scopes = "tree:write")]
fn grow_tree(
    /// The root of the tree.
    root: TreeNode,
) {
    let _ = root;
}

/// Answer pong.
#[tool(public, read_only, idempotent)]
fn ping() -> &'static str {
    "pong"
}
