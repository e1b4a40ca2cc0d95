//! What can go wrong when a registry is built or read.

use std::fmt;

use crate::declare::source::Source;

/// An error of the registry: it could not be built, or a tool asked for is not in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The registry could not be built; every problem found is listed, and nothing was
    /// registered.
    #[error("the tool registry could not be built ({} problem{}):{}", .0.len(), plural(.0.len()), Lines(.0))]
    Build(Vec<BuildProblem>),
    /// No tool of that name is registered.
    #[error("no tool named {name:?} is registered")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// [`Registry::restore`](crate::Registry::restore) was asked for a tool that is not
    /// revoked: there is nothing to bring back.
    #[error("the tool {name:?} is not revoked, so there is nothing to restore")]
    NotRevoked {
        /// The tool.
        name: String,
    },
}

/// Whose rate limit: a tool's, or the registry's default (no tool).
fn rate_limit_owner(tool: &str) -> String {
    if tool.is_empty() {
        "the registry's default rate limit: ".to_owned()
    } else {
        format!("tool {tool:?}: ")
    }
}

impl RegistryError {
    /// The problems that kept the registry from being built (empty for other errors).
    pub fn problems(&self) -> &[BuildProblem] {
        match self {
            RegistryError::Build(problems) => problems,
            RegistryError::UnknownTool { .. } | RegistryError::NotRevoked { .. } => &[],
        }
    }
}

/// One problem found while building a registry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildProblem {
    /// Two tools have the same name. Nothing is overwritten: rename one (`name = "..."`), or
    /// leave one out with `RegistryBuilder::declared_in`, or make the second an explicit
    /// `RegistryBuilder::replace`.
    #[error(
        "two tools are named {name:?}: {first} and {second}; rename one with `#[tool(name = \"...\")]`, \
         select one with `RegistryBuilder::declared_in`, or replace it explicitly with `RegistryBuilder::replace`"
    )]
    DuplicateName {
        /// The name both use.
        name: String,
        /// The first declaration (in source order).
        first: Source,
        /// The second one.
        second: Source,
    },
    /// The name is not valid for every consumer.
    #[error("{reason} ({site})")]
    InvalidName {
        /// The name given.
        name: String,
        /// Where the tool was declared.
        site: Source,
        /// What is wrong with it.
        reason: crate::declare::name::NameError,
    },
    /// A namespace (`namespace = "..."`, [`DynamicTool::namespace`](crate::DynamicTool::namespace))
    /// that is not a valid name.
    #[error("tool {tool:?}: {reason} ({site})")]
    InvalidNamespace {
        /// The tool.
        tool: String,
        /// Where the tool was declared.
        site: Source,
        /// What is wrong with it.
        reason: String,
    },
    /// A parameter mirrored into an HTTP header ([`DynamicTool::header`](crate::DynamicTool::header))
    /// cannot be: its header name is not an HTTP token, two parameters share a header, or the
    /// parameter is missing or not of a primitive type.
    #[error("tool {tool:?}: {reason} ({site})")]
    InvalidHeader {
        /// The tool.
        tool: String,
        /// Where the tool was declared.
        site: Source,
        /// What is wrong with it.
        reason: String,
    },
    /// A scope is not well formed.
    #[error("tool {tool:?}: {reason} ({site})")]
    InvalidScope {
        /// The tool.
        tool: String,
        /// Where the tool was declared.
        site: Source,
        /// What is wrong with the scope.
        reason: String,
    },
    /// A readiness check names a tool that is not registered.
    #[error(
        "a readiness check is given for {name:?}, which is not registered; check the name ({site})"
    )]
    UnknownReadinessTool {
        /// The name given.
        name: String,
        /// Where `RegistryBuilder::readiness` was called.
        site: Source,
    },
    /// Two readiness checks for one tool.
    #[error("a second readiness check is given for {name:?}; combine them into one ({site})")]
    RepeatedReadiness {
        /// The tool.
        name: String,
        /// Where the second `RegistryBuilder::readiness` was called.
        site: Source,
    },
    /// A rate limit is not well formed.
    #[error("{}{reason} ({site})", rate_limit_owner(tool))]
    InvalidRateLimit {
        /// The tool (empty for the registry's default limit).
        tool: String,
        /// Where the tool was declared (the builder call for the default).
        site: Source,
        /// What is wrong with it.
        reason: String,
    },
    /// The arguments schema is not an object schema, or does not compile.
    #[error("tool {tool:?}: invalid schema: {reason} ({site})")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// Where the tool was declared.
        site: Source,
        /// What is wrong with the schema.
        reason: String,
    },
    /// A schema goes beyond the resource bounds MCP 2026-07-28 asks of tool schemas
    /// (SEP-2106): a `$ref` that is not same-document or names nothing, another dialect than
    /// JSON Schema 2020-12, or subschemas nested too deep or too many. Nothing is served or
    /// validated against it.
    ///
    /// ```
    /// use registry_core::{BuildProblem, DynamicTool, Registry};
    /// use serde_json::json;
    ///
    /// let tool = DynamicTool::new("fetch_profile", "Fetch a profile.")
    ///     .public()
    ///     .parameters(json!({
    ///         "type": "object",
    ///         "properties": {"profile": {"$ref": "https://example.com/profile.json"}}
    ///     }))
    ///     .handler(|_ctx, _args| Ok::<_, String>(json!("done")));
    /// let error = Registry::builder().tool(tool).build().unwrap_err();
    /// let [BuildProblem::SchemaBeyondBounds { tool, keyword, pointer, .. }] = error.problems()
    /// else {
    ///     panic!("{error}");
    /// };
    /// assert_eq!((tool.as_str(), keyword.as_str()), ("fetch_profile", "$ref"));
    /// assert_eq!(pointer, "/properties/profile/$ref");
    /// ```
    #[error(
        "tool {tool:?}: the {schema} schema {reason}, at {pointer:?} (`{keyword}`); {fix} ({site})"
    )]
    SchemaBeyondBounds {
        /// The tool.
        tool: String,
        /// Where the tool was declared.
        site: Source,
        /// Which schema: `arguments` (`inputSchema`) or `result` (`outputSchema`).
        schema: &'static str,
        /// A JSON pointer to the place in that schema.
        pointer: String,
        /// The keyword at fault (`$ref`, `$schema`, `allOf`, `items`, ...).
        keyword: String,
        /// The bound it goes beyond.
        reason: String,
        /// What to do about it.
        fix: String,
    },
    /// The description is empty.
    #[error(
        "tool {tool:?} has no description, and a model cannot use an undescribed tool ({site})"
    )]
    MissingDescription {
        /// The tool.
        tool: String,
        /// Where the tool was declared.
        site: Source,
    },
    /// A text the model reads is refused by the description lint: it holds a secret, an
    /// internal address, an invisible, reordering or control character, or an instruction
    /// aimed at the model. The texts are the description, the title, and in the parameters
    /// and output schemas (where the doc comments of parameter and result types, their
    /// fields and variants, arrive) every `description`, `title` and `$comment`, every string
    /// of an `enum`, `const`, `default` or `examples`, and every property name. The message
    /// names the rule, the text and the fix.
    #[error(
        "tool {tool:?}: the {field}{} contains {finding}; {} ({site})",
        at_pointer(pointer),
        lint_fix(rule, site)
    )]
    UnsafeDescription {
        /// The tool.
        tool: String,
        /// Where the tool was built.
        site: Source,
        /// Which text: `description`, `title`, `parameters schema` or `output schema`.
        field: String,
        /// In a schema, the JSON pointer of the text in it: of the string, e.g.
        /// `/properties/mode/enum/2`, or of the property a name is the key of.
        pointer: Option<String>,
        /// The rule broken, e.g. `secret/api-token` (see `registry_lint::Rule::id`).
        rule: &'static str,
        /// The text found, invisible characters escaped (`\u{200b}`) and secrets cut short.
        excerpt: String,
        /// What was found, the rule and how to fix it.
        finding: String,
    },
    /// A text the model reads names a tenant (one that some tool names in its `tenants`), in
    /// a tool that subjects of other tenants may see: the tool is not restricted to that
    /// tenant alone. The texts are the name and those of [`UnsafeDescription`](Self::UnsafeDescription);
    /// a tenant is found as a word, case-insensitively. A tool with `allow_description` is
    /// not checked.
    ///
    /// ```
    /// use registry_core::{BuildProblem, DynamicTool, Registry};
    /// use serde_json::json;
    ///
    /// let report = |name: &str, description: &str| {
    ///     DynamicTool::new(name, description).scopes(["report:read"])
    ///         .handler(|_ctx, _args| Ok::<_, String>(json!("done")))
    /// };
    /// let error = Registry::builder()
    ///     .tool(report("acme_report", "Build the monthly report.").tenants(["acme"]))
    ///     .tool(report("report", "Build the monthly report, as ACME asked."))
    ///     .build()
    ///     .unwrap_err();
    /// let [BuildProblem::TenantInText { tool, field, tenant, .. }] = error.problems() else {
    ///     panic!("{error}");
    /// };
    /// assert_eq!((tool.as_str(), field.as_str(), tenant.as_str()), ("report", "description", "acme"));
    /// ```
    #[error(
        "tool {tool:?}: the {field}{} names the tenant {tenant:?}, and subjects of other tenants \
         may see this tool; keep tenant data out of shared texts: reword it, restrict the tool \
         to that tenant alone ({}), or, if the word is not tenant data, say why with {} ({site})",
        at_pointer(pointer),
        tenants_fix(tenant, site),
        allow_fix(site)
    )]
    TenantInText {
        /// The tool.
        tool: String,
        /// Where the tool was built.
        site: Source,
        /// Which text: `name`, `description`, `title`, `parameters schema` or `output schema`.
        field: String,
        /// In a schema, the JSON pointer of the text in it.
        pointer: Option<String>,
        /// The tenant named, as a tool's `tenants` spells it.
        tenant: String,
    },
    /// With [`RegistryBuilder::require_documented_parameters`](crate::RegistryBuilder::require_documented_parameters):
    /// parameters of a tool, or fields of its parameters schema (nested objects, array items
    /// and `$ref`s followed), have no description, and a model can only guess what they
    /// mean. Each is named by its path: `project`, `filter.status`, `rows[].id`, `labels.*`.
    #[error(
        "tool {tool:?}: {} with no description: {}; describe each, {} ({site})",
        if paths.len() == 1 { "a parameter" } else { "parameters" },
        paths.join(", "),
        describe_fix(site)
    )]
    UndocumentedParameters {
        /// The tool.
        tool: String,
        /// Where the tool was built.
        site: Source,
        /// The path of each parameter or field with no description, sorted.
        paths: Vec<String>,
    },
    /// `DynamicTool::allow_description` was given an empty reason.
    #[error(
        "tool {tool:?}: `allow_description` needs a reason, which is kept with the tool for \
         reviewers (`ToolSettings::allow_description`): say why its texts are safe to show to \
         every model ({site})"
    )]
    EmptyAllowReason {
        /// The tool.
        tool: String,
        /// Where the tool was built.
        site: Source,
    },
    /// A run-time tool was given no handler.
    #[error(
        "tool {tool:?} has no handler; give it one with `.handler(...)` or `.async_handler(...)` ({site})"
    )]
    MissingHandler {
        /// The tool.
        tool: String,
        /// Where the tool was declared.
        site: Source,
    },
    /// A tenant name is empty.
    #[error(
        "tool {tool:?} names an empty tenant; name each tenant, or give none to admit all ({site})"
    )]
    InvalidTenant {
        /// The tool.
        tool: String,
        /// Where the tool was declared.
        site: Source,
    },
    /// A tool restricts nothing (no scopes, no tenants) and does not say `public`: every
    /// subject of every tenant would see and call it without anyone having meant that.
    #[error(
        "tool {tool:?} restricts nothing, so every subject of every tenant would see and call it; \
         name the scopes it needs (`.scopes([\"build:read\"])`, `scopes = \"build:read\"`) or the \
         tenants that may use it (`.tenants([\"acme\"])`, `tenants = \"acme\"`), or, if anyone \
         may call it, say so with `.public()` (`#[tool(public)]`) ({site})"
    )]
    Unrestricted {
        /// The tool.
        tool: String,
        /// Where the tool was declared.
        site: Source,
    },
    /// A tool says `public` but requires scopes or names tenants, so it is not public.
    #[error(
        "tool {tool:?} is marked public but requires scopes or names tenants, so it is not \
         visible to everyone; remove `public`, or the scopes and tenants ({site})"
    )]
    PublicButRestricted {
        /// The tool.
        tool: String,
        /// Where the tool was declared.
        site: Source,
    },
    /// A tool's attributes break a rule: a key that is not lowercase letters, digits and
    /// `_`, a value with a control, bidi or format character, too many keys or values.
    #[error("tool {tool:?}: {reason} ({site})")]
    InvalidAttribute {
        /// The tool.
        tool: String,
        /// Where the tool was declared.
        site: Source,
        /// What is wrong.
        reason: String,
    },
    /// A policy set given with [`RegistryBuilder::policies`](crate::RegistryBuilder::policies)
    /// does not hold for this registry: it names a tool, an attribute, an argument or an
    /// action the registry does not have, or breaks the set's own rules. The message names
    /// the policy (its id, or its file and line) and what it named.
    #[error("policy: {message}")]
    Policy {
        /// What the policy set's validator said.
        message: String,
    },
    /// [`RegistryBuilder::audit_hash_key`](crate::RegistryBuilder::audit_hash_key) was given
    /// a key too short to keep guesses from being hashed.
    #[error(
        "the audit hash key is {bytes} bytes long; give at least 16 (32 random bytes from the deployment's secrets), or no key for one drawn at random per process"
    )]
    ShortAuditKey {
        /// How long the key given was.
        bytes: usize,
    },
    /// `read_only` and `destructive` together.
    #[error(
        "tool {tool:?} is marked both read-only and destructive; keep the one that is true ({site})"
    )]
    ContradictoryHints {
        /// The tool.
        tool: String,
        /// Where the tool was declared.
        site: Source,
    },
    /// `replace` named a tool that is not registered, so there is nothing to replace.
    #[error(
        "cannot replace {name:?}: no tool of that name is registered; use `RegistryBuilder::tool` to add it ({site})"
    )]
    NothingToReplace {
        /// The name.
        name: String,
        /// Where the replacement was built.
        site: Source,
    },
    /// `RegistryBuilder::declared_in` named a module under which no linked `#[tool]` is.
    #[error(
        "no `#[tool]` linked into this program is declared under `{path}`; check the module path, \
         and if it is another crate, make sure it is linked: `registry_core::link!(that_crate);`"
    )]
    EmptySelection {
        /// The module path given.
        path: String,
    },
    /// A tool cannot be exported to a profile the builder was told to require.
    #[error("{0}")]
    Incompatible(crate::shared::profile::Incompatibility),
    /// The registry would have no tools, and the builder did not say
    /// [`allow_empty`](crate::RegistryBuilder::allow_empty).
    #[error("{}", no_tools(*.declared))]
    NoTools {
        /// Whether the builder took the `#[tool]` declarations
        /// ([`declared`](crate::RegistryBuilder::declared)): then none is linked into the
        /// program.
        declared: bool,
    },
    /// A tool the application requires is not registered.
    #[error(
        "the required tool {name:?} is not registered; if it is declared in another crate, \
         make sure that crate is linked: name it in your code, e.g. `registry_core::link!(that_crate);`"
    )]
    MissingTool {
        /// The name required.
        name: String,
    },
}

fn no_tools(declared: bool) -> &'static str {
    if declared {
        "the registry has no tools: no `#[tool]` function is linked into this program; if they \
         are declared in another crate, name it once so it is linked (`registry_core::link!(that_crate);`), \
         or say `.allow_empty()` if a registry with no tools is intended"
    } else {
        "the registry has no tools: the builder took no `#[tool]` functions, since `.declared()` \
         was not called; call `.declared()` (or `.declared_in([\"my_crate::tools\"])`), add tools with \
         `.tool(..)`, or say `.allow_empty()` if a registry with no tools is intended"
    }
}

/// ` at /properties/x` for a text in a schema.
fn at_pointer(pointer: &Option<String>) -> String {
    pointer
        .as_deref()
        .map_or_else(String::new, |pointer| format!(" at {pointer}"))
}

/// What to do about a finding of the description lint besides what its rule says: a secret
/// must go, anything else may be allowed with a reason.
fn lint_fix(rule: &str, site: &Source) -> String {
    if rule.starts_with("secret/") {
        "`allow_description` does not lift the secret rules".to_owned()
    } else {
        format!(
            "if the text is meant to be there, say why with {}",
            allow_fix(site)
        )
    }
}

/// How to restrict a tool to `tenant`, as it was declared.
fn tenants_fix(tenant: &str, site: &Source) -> String {
    if site.is_declared() {
        format!("`#[tool(tenants = {tenant:?})]`")
    } else {
        format!("`.tenants([{tenant:?}])`")
    }
}

/// How to describe a parameter, as the tool was declared.
fn describe_fix(site: &Source) -> &'static str {
    if site.is_declared() {
        "with a doc comment on the parameter (`/// The project's id.`) or on the field of its type"
    } else {
        "with a \"description\" in the parameters schema given to `DynamicTool::parameters`, or a doc comment on the field of the type it was derived from"
    }
}

/// How to say why a tool's texts are safe to show, as it was declared.
fn allow_fix(site: &Source) -> &'static str {
    if site.is_declared() {
        "`#[tool(allow_description = \"...\")]`"
    } else {
        "`DynamicTool::allow_description(\"...\")`"
    }
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// Displays problems one per line, each after a newline and a dash.
struct Lines<'a>(&'a [BuildProblem]);

impl fmt::Display for Lines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0
            .iter()
            .try_for_each(|problem| write!(f, "\n  - {problem}"))
    }
}
