//! The upstreams file (TOML): which MCP servers to federate, how to reach them, and the
//! settings of their tools. A file that cannot work is refused whole, with the line and the fix.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use registry_core::gate::RateLimit;
use serde::Deserialize;
use toml::Spanned;

/// How long connecting to an upstream and listing its tools may take, unless its
/// `connect_timeout_ms` says otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a forwarded call may take, unless the tool's or its upstream's `timeout_ms` says
/// otherwise: an upstream that never answers is never waited for forever.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The most upstreams one file may name.
pub const MAX_UPSTREAMS: usize = 256;

/// The most variables one upstream's `env` table, and its `pass_env` list, may name (each).
pub const MAX_ENV_VARIABLES: usize = 256;

/// The server's environment variables every stdio upstream is given, when they are set: the
/// rest of a child's environment is its table's `env` and `pass_env`, nothing else. An
/// upstream's `token_env` may not name one of them.
///
/// ```
/// use registry_mcp::upstream::BASE_ENV;
///
/// assert!(BASE_ENV.contains(&"PATH"));
/// assert!(!BASE_ENV.contains(&"DATABASE_URL"));
/// ```
pub const BASE_ENV: [&str; 9] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
];

/// Every upstream of an upstreams file, in the file's order.
///
/// ```
/// use registry_mcp::upstream::UpstreamsConfig;
///
/// let config = UpstreamsConfig::from_toml(r#"
/// [[upstream]]
/// name = "notes"
/// command = ["python3", "notes_server.py"]
/// scopes = ["notes:read"]
///
/// [upstream.tools.delete_all]
/// scopes = ["notes:admin"]
/// needs_approval = true
/// "#).unwrap();
/// let notes = &config.upstreams[0];
/// assert_eq!(notes.name, "notes");
/// let delete_all = notes.settings_of("delete_all");
/// assert_eq!(delete_all.scopes, ["notes:admin"]);
/// assert!(delete_all.needs_approval);
/// // A tool the file does not name takes the upstream's scopes.
/// assert_eq!(notes.settings_of("search").scopes, ["notes:read"]);
///
/// let error = UpstreamsConfig::from_toml("[[upstream]]\nname = \"notes\"\n").unwrap_err();
/// assert_eq!(error.line, 1);
/// assert!(error.to_string().contains("`command = [...]` or `url = \"...\"`"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UpstreamsConfig {
    /// The upstreams.
    pub upstreams: Vec<UpstreamConfig>,
}

/// One upstream MCP server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UpstreamConfig {
    /// Its name: in its tools' names (unless `prefix` says otherwise), its default scope
    /// (`upstream:{name}`), the lock file, logs and `--accept-upstream`.
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// What its tools' names start with: `{prefix}_{tool}`; an empty prefix keeps the
    /// upstream's names as they are.
    pub prefix: String,
    /// How long connecting and listing may take.
    pub connect_timeout: Duration,
    /// The upstream-wide defaults.
    pub defaults: SettingsOverride,
    /// Per-tool overrides, by the upstream's name of the tool.
    pub tools: BTreeMap<String, SettingsOverride>,
}

/// How an upstream is reached.
///
/// ```
/// use registry_mcp::upstream::{Transport, UpstreamsConfig};
///
/// let config = UpstreamsConfig::from_toml(r#"
/// [[upstream]]
/// name = "notes"
/// command = ["python3", "/opt/notes/server.py"]
/// env = { NOTES_DB = "/var/lib/notes/notes.db" }
/// pass_env = ["NOTES_API_KEY"]
/// cwd = "/var/lib/notes"
/// "#).unwrap();
/// let Transport::Command { command, env, pass_env, cwd, .. } = &config.upstreams[0].transport
/// else { unreachable!() };
/// assert_eq!(command[0], "python3");
/// assert_eq!(env["NOTES_DB"], "/var/lib/notes/notes.db");
/// assert_eq!(pass_env, &["NOTES_API_KEY"]);
/// assert_eq!(cwd.as_deref(), Some(std::path::Path::new("/var/lib/notes")));
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout. It starts from an empty
    /// environment: the server's variables of [`BASE_ENV`] and of `pass_env` that are set,
    /// then `env`'s values; its stderr is read by the server and logged, escaped and bounded.
    #[non_exhaustive]
    Command {
        /// The program and its arguments.
        command: Vec<String>,
        /// Variables given to the child with these values (the file's `env = { ... }`).
        env: BTreeMap<String, String>,
        /// The server's variables given to the child with the server's values, when set (the
        /// file's `pass_env = [...]`); never one an upstream's `token_env` names.
        pass_env: Vec<String>,
        /// The directory it runs in (the file's `cwd`, an absolute path); without one, a new
        /// empty directory of its own under the system's temporary directory, made for each
        /// start of the process and removed when its connection ends.
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint, with the bearer token read from the environment variable
    /// `token_env` when connecting (never from the file).
    #[non_exhaustive]
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:9000/mcp`.
        url: String,
        /// The environment variable holding the bearer token.
        token_env: Option<String>,
        /// The file says the token may go over plain `http://` to a host that is not
        /// loopback (`allow_insecure_http = true`): refused otherwise.
        allow_insecure_http: bool,
    },
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The names of `env`'s variables only, as for `token_env`.
            Transport::Command {
                command,
                env,
                pass_env,
                cwd,
            } => f
                .debug_struct("Command")
                .field("command", command)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("pass_env", pass_env)
                .field("cwd", cwd)
                .finish(),
            // The variable's name only: its value is a secret.
            Transport::Http {
                url,
                token_env,
                allow_insecure_http,
            } => f
                .debug_struct("Http")
                .field("url", url)
                .field("token_env", token_env)
                .field("allow_insecure_http", allow_insecure_http)
                .finish(),
        }
    }
}

/// What the file says of a tool's settings (or of every tool of an upstream); unset keys take
/// the upstream's value, then the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SettingsOverride {
    /// The scopes a subject must hold.
    pub scopes: Option<Vec<String>>,
    /// The tenants whose subjects may use it.
    pub tenants: Option<Vec<String>>,
    /// Unrestricted on purpose.
    pub public: Option<bool>,
    /// Every call waits for a person's approval.
    pub needs_approval: Option<bool>,
    /// Calls per subject, e.g. `10/min`.
    pub rate_limit: Option<String>,
    /// A deadline for each call.
    pub timeout: Option<Duration>,
    /// The operator says the tool only reads (an upstream's `readOnlyHint` never does).
    pub read_only: Option<bool>,
    /// Exempts the tool's texts from the description lint, but for its secret rules, for
    /// this reason (per tool only).
    pub allow_description: Option<String>,
}

/// The settings a tool of an upstream gets: the file's override, else the upstream's, else the
/// defaults. Never unrestricted unless the file says `public = true`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolSettings {
    /// The scopes a subject must hold; when the file names none, the upstream's default scope
    /// `upstream:{name}`; empty only when `public`.
    pub scopes: Vec<String>,
    /// The tenants; empty for every tenant.
    pub tenants: Vec<String>,
    /// Unrestricted, as the file says.
    pub public: bool,
    /// Every call waits for a person's approval.
    pub needs_approval: bool,
    /// Calls per subject.
    pub rate_limit: Option<String>,
    /// The deadline of each call ([`DEFAULT_CALL_TIMEOUT`] unless the file says).
    pub timeout: Duration,
    /// Read-only, as the operator says.
    pub read_only: bool,
    /// The lint exemption and its reason.
    pub allow_description: Option<String>,
}

/// The settings a tool of an upstream gets.
#[deprecated(note = "use `ToolSettings`")]
pub type ToolPolicy = ToolSettings;

/// What the file says of a tool's settings.
#[deprecated(note = "use `SettingsOverride`")]
pub type PolicyOverride = SettingsOverride;

/// The prefix of an upstream's default scope, `upstream:{name}`: a scope that names an
/// upstream, and that the OAuth metadata's `scopes_supported` therefore leaves out.
pub(crate) const UPSTREAM_SCOPE_PREFIX: &str = "upstream:";

impl UpstreamConfig {
    /// The upstream's default scope, `upstream:{name}`, which its tools need when the file
    /// names none. The OAuth metadata's `scopes_supported` leaves it out by default.
    pub fn default_scope(&self) -> String {
        format!("{UPSTREAM_SCOPE_PREFIX}{}", self.name)
    }

    /// The name the registry gives the upstream's tool `tool`.
    pub fn tool_name(&self, tool: &str) -> String {
        if self.prefix.is_empty() {
            tool.to_owned()
        } else {
            format!("{}_{tool}", self.prefix)
        }
    }

    /// The settings of the upstream's tool `tool`.
    #[deprecated(note = "use `UpstreamConfig::settings_of`")]
    pub fn policy_of(&self, tool: &str) -> ToolSettings {
        self.settings_of(tool)
    }

    /// The settings of the upstream's tool `tool`.
    pub fn settings_of(&self, tool: &str) -> ToolSettings {
        let empty = SettingsOverride::default();
        let own = self.tools.get(tool).unwrap_or(&empty);
        let up = &self.defaults;
        // A tool given its own scopes or tenants is restricted by them, whatever the
        // upstream-wide `public` says.
        let restricts = own.scopes.is_some() || own.tenants.is_some();
        let public = own.public.unwrap_or(if restricts {
            false
        } else {
            up.public.unwrap_or(false)
        });
        let (scopes, tenants) = if public {
            (Vec::new(), Vec::new())
        } else {
            let scopes = own
                .scopes
                .clone()
                .or_else(|| up.scopes.clone())
                .filter(|scopes| !scopes.is_empty())
                .unwrap_or_else(|| vec![self.default_scope()]);
            let tenants = own
                .tenants
                .clone()
                .or_else(|| up.tenants.clone())
                .unwrap_or_default();
            (scopes, tenants)
        };
        ToolSettings {
            scopes,
            tenants,
            public,
            needs_approval: own.needs_approval.or(up.needs_approval).unwrap_or(false),
            rate_limit: own.rate_limit.clone().or_else(|| up.rate_limit.clone()),
            timeout: own.timeout.or(up.timeout).unwrap_or(DEFAULT_CALL_TIMEOUT),
            read_only: own.read_only.or(up.read_only).unwrap_or(false),
            allow_description: own.allow_description.clone(),
        }
    }
}

/// Why an upstreams file was refused: where, what, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{line}: {message}; {fix}", .file.as_ref().map(|file| format!("{}:", file.display())).unwrap_or_default())]
#[non_exhaustive]
pub struct ConfigError {
    /// The file, when it was read from one.
    pub file: Option<PathBuf>,
    /// The line (from 1).
    pub line: usize,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl UpstreamsConfig {
    /// Reads and checks the file at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<UpstreamsConfig, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError {
            file: Some(path.to_owned()),
            line: 0,
            message: format!("cannot read the upstreams file: {error}"),
            fix: "give the path of a readable TOML file".to_owned(),
        })?;
        Self::from_toml(&text).map_err(|mut error| {
            error.file = Some(path.to_owned());
            error
        })
    }

    /// Parses and checks an upstreams file's text.
    pub fn from_toml(text: &str) -> Result<UpstreamsConfig, ConfigError> {
        let file: RawFile = toml::from_str(text).map_err(|error| {
            let line = error.span().map_or(0, |span| line_of(text, &span));
            ConfigError {
                file: None,
                line,
                message: error.message().trim().replace('\n', " "),
                fix: parse_fix(error.message()),
            }
        })?;
        let mut upstreams = Vec::new();
        // Every upstream's `token_env`: no stdio upstream is given one of them.
        let tokens: Vec<String> = file
            .upstream
            .iter()
            .filter_map(|raw| raw.get_ref().token_env.as_ref())
            .map(|variable| variable.get_ref().clone())
            .collect();
        if file.upstream.len() > MAX_UPSTREAMS {
            return Err(at(
                text,
                &file.upstream[MAX_UPSTREAMS].span(),
                format!("more than {MAX_UPSTREAMS} upstreams"),
                "serve fewer upstreams from one server",
            ));
        }
        for raw in file.upstream {
            let span = raw.span();
            let raw = raw.into_inner();
            let upstream = check_upstream(text, &span, raw, &tokens)?;
            if let Some(other) = upstreams
                .iter()
                .find(|other: &&UpstreamConfig| other.name == upstream.name)
            {
                return Err(at(
                    text,
                    &span,
                    format!("two upstreams are named {:?}", other.name),
                    "give each upstream a name of its own",
                ));
            }
            upstreams.push(upstream);
        }
        Ok(UpstreamsConfig { upstreams })
    }
}

/// The advice for a file TOML itself refuses.
fn parse_fix(message: &str) -> String {
    if message.contains("unknown field") {
        "remove the key or correct its spelling (see the expected keys above)".to_owned()
    } else if message.contains("missing field") {
        "add the key".to_owned()
    } else if message.contains("invalid type") {
        "give the key a value of the type it takes".to_owned()
    } else {
        "write the file as TOML, with `[[upstream]]` tables".to_owned()
    }
}

fn line_of(text: &str, span: &Range<usize>) -> usize {
    let end = span.start.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

fn at(text: &str, span: &Range<usize>, message: String, fix: &str) -> ConfigError {
    ConfigError {
        file: None,
        line: line_of(text, span),
        message,
        fix: fix.to_owned(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    upstream: Vec<Spanned<RawUpstream>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUpstream {
    name: Spanned<String>,
    command: Option<Spanned<Vec<String>>>,
    url: Option<Spanned<String>>,
    token_env: Option<Spanned<String>>,
    allow_insecure_http: Option<Spanned<bool>>,
    env: Option<Spanned<BTreeMap<String, String>>>,
    pass_env: Option<Spanned<Vec<String>>>,
    cwd: Option<Spanned<String>>,
    prefix: Option<Spanned<String>>,
    connect_timeout_ms: Option<Spanned<u64>>,
    scopes: Option<Spanned<Vec<String>>>,
    tenants: Option<Spanned<Vec<String>>>,
    public: Option<Spanned<bool>>,
    needs_approval: Option<bool>,
    rate_limit: Option<Spanned<String>>,
    timeout_ms: Option<Spanned<u64>>,
    read_only: Option<bool>,
    #[serde(default)]
    tools: BTreeMap<String, Spanned<RawTool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    scopes: Option<Spanned<Vec<String>>>,
    tenants: Option<Spanned<Vec<String>>>,
    public: Option<Spanned<bool>>,
    needs_approval: Option<bool>,
    rate_limit: Option<Spanned<String>>,
    timeout_ms: Option<Spanned<u64>>,
    read_only: Option<bool>,
    allow_description: Option<Spanned<String>>,
}

/// The rule of upstream names and prefixes: a letter, then letters, digits, `_` or `-`.
fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !first_ok || !rest_ok || name.len() > 32 {
        return Err(format!(
            "{:?} is not a name: one to 32 ASCII letters, digits, `_` or `-`, starting with a letter",
            crate::logging::escape(name)
        ));
    }
    Ok(())
}

fn check_upstream(
    text: &str,
    span: &Range<usize>,
    raw: RawUpstream,
    tokens: &[String],
) -> Result<UpstreamConfig, ConfigError> {
    let name_span = raw.name.span();
    let name = raw.name.into_inner();
    check_name(&name).map_err(|message| {
        at(
            text,
            &name_span,
            format!("upstream name: {message}"),
            "rename it, e.g. `name = \"notes\"`",
        )
    })?;
    let transport = match (raw.command, raw.url) {
        (Some(command), None) => {
            let command_span = command.span();
            let command = command.into_inner();
            if command
                .first()
                .is_none_or(|program| program.trim().is_empty())
            {
                return Err(at(
                    text,
                    &command_span,
                    format!("upstream {name:?}: `command` is empty"),
                    "name the program and its arguments, e.g. `command = [\"python3\", \"server.py\"]`",
                ));
            }
            if let Some(nul) = command.iter().find(|arg| arg.contains('\0')) {
                return Err(at(
                    text,
                    &command_span,
                    format!(
                        "upstream {name:?}: the argument {:?} of `command` holds a NUL",
                        crate::logging::escape(nul)
                    ),
                    "remove the NUL (`\\u0000`) from it",
                ));
            }
            if let Some(token) = &raw.token_env {
                return Err(at(
                    text,
                    &token.span(),
                    format!("upstream {name:?}: `token_env` is for an HTTP upstream"),
                    "remove it; give the child process what it needs with `env = { ... }` or `pass_env = [...]`",
                ));
            }
            if let Some(allow) = &raw.allow_insecure_http {
                return Err(at(
                    text,
                    &allow.span(),
                    format!("upstream {name:?}: `allow_insecure_http` is for an HTTP upstream"),
                    "remove it",
                ));
            }
            let env = match raw.env {
                None => BTreeMap::new(),
                Some(env) => check_env(text, &name, env)?,
            };
            let pass_env = match raw.pass_env {
                None => Vec::new(),
                Some(pass_env) => check_pass_env(text, &name, pass_env, tokens)?,
            };
            let cwd = match raw.cwd {
                None => None,
                Some(cwd) => {
                    let cwd_span = cwd.span();
                    let cwd = PathBuf::from(cwd.into_inner());
                    if !cwd.is_absolute() || cwd.as_os_str().to_string_lossy().contains('\0') {
                        return Err(at(
                            text,
                            &cwd_span,
                            format!(
                                "upstream {name:?}: `cwd` {:?} is not an absolute path",
                                crate::logging::escape(&cwd.to_string_lossy())
                            ),
                            "give the directory it runs in from the root, e.g. `cwd = \"/var/lib/notes\"`",
                        ));
                    }
                    Some(cwd)
                }
            };
            Transport::Command {
                command,
                env,
                pass_env,
                cwd,
            }
        }
        (None, Some(url)) => {
            let url_span = url.span();
            let url = url.into_inner();
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(at(
                    text,
                    &url_span,
                    format!("upstream {name:?}: {url:?} is not an http:// or https:// URL"),
                    "give the server's streamable-HTTP endpoint, e.g. `url = \"http://127.0.0.1:9000/mcp\"`",
                ));
            }
            let parsed = reqwest::Url::parse(&url).map_err(|error| {
                at(
                    text,
                    &url_span,
                    format!(
                        "upstream {name:?}: {:?} is not a URL ({error})",
                        crate::logging::escape(&url)
                    ),
                    "give the server's streamable-HTTP endpoint, e.g. `url = \"http://127.0.0.1:9000/mcp\"`",
                )
            })?;
            for (key, given) in [
                ("env", raw.env.as_ref().map(Spanned::span)),
                ("pass_env", raw.pass_env.as_ref().map(Spanned::span)),
                ("cwd", raw.cwd.as_ref().map(Spanned::span)),
            ] {
                if let Some(key_span) = given {
                    return Err(at(
                        text,
                        &key_span,
                        format!(
                            "upstream {name:?}: `{key}` is for a `command` upstream (a child process)"
                        ),
                        "remove it: an HTTP upstream runs elsewhere",
                    ));
                }
            }
            let allow_insecure_http = raw
                .allow_insecure_http
                .map(Spanned::into_inner)
                .unwrap_or(false);
            let token_env = match raw.token_env {
                Some(variable) => {
                    let variable_span = variable.span();
                    let variable = variable.into_inner();
                    if !is_variable_name(&variable) {
                        return Err(at(
                            text,
                            &variable_span,
                            format!(
                                "upstream {name:?}: `token_env` must name an environment variable"
                            ),
                            "write the variable's name (e.g. `token_env = \"NOTES_TOKEN\"`), never the token itself",
                        ));
                    }
                    if BASE_ENV.contains(&variable.as_str()) {
                        return Err(at(
                            text,
                            &variable_span,
                            format!(
                                "upstream {name:?}: `token_env` names {variable}, which every stdio upstream is given"
                            ),
                            "keep the token in a variable of its own, e.g. `token_env = \"NOTES_TOKEN\"`",
                        ));
                    }
                    // N12: a bearer token in the clear is anyone's on the path.
                    if parsed.scheme() == "http"
                        && !crate::oauth::is_loopback(&parsed)
                        && !allow_insecure_http
                    {
                        return Err(at(
                            text,
                            &url_span,
                            format!(
                                "upstream {name:?}: its token ({variable}) would go over plain http:// to {:?}, a host that is not loopback, where anyone on the path can read it",
                                crate::logging::escape(parsed.host_str().unwrap_or_default())
                            ),
                            "use https:// (with registry-mcp's `tls` feature), or, if the network path is trusted, say so with `allow_insecure_http = true` in this table",
                        ));
                    }
                    Some(variable)
                }
                None => None,
            };
            Transport::Http {
                url,
                token_env,
                allow_insecure_http,
            }
        }
        (Some(_), Some(url)) => {
            return Err(at(
                text,
                &url.span(),
                format!("upstream {name:?} has both `command` and `url`"),
                "keep one: `command` starts a child process, `url` reaches an HTTP server",
            ));
        }
        (None, None) => {
            return Err(at(
                text,
                span,
                format!("upstream {name:?} says neither how to start nor where to reach it"),
                "add `command = [...]` or `url = \"...\"`",
            ));
        }
    };
    let prefix = match raw.prefix {
        None => name.clone(),
        Some(prefix) => {
            let prefix_span = prefix.span();
            let prefix = prefix.into_inner();
            if !prefix.is_empty() {
                check_name(&prefix).map_err(|message| {
                    at(
                        text,
                        &prefix_span,
                        format!("upstream {name:?}: prefix: {message}"),
                        "change it, or write `prefix = \"\"` to keep the upstream's names",
                    )
                })?;
            }
            prefix
        }
    };
    let connect_timeout = match raw.connect_timeout_ms {
        None => DEFAULT_CONNECT_TIMEOUT,
        Some(ms) => positive_ms(text, &name, "connect_timeout_ms", ms)?,
    };
    let defaults = check_settings(
        text,
        &name,
        "upstream",
        // The upstream's own keys are a tool's, but for `allow_description`, which names
        // one tool's text.
        RawTool {
            scopes: raw.scopes,
            tenants: raw.tenants,
            public: raw.public,
            needs_approval: raw.needs_approval,
            rate_limit: raw.rate_limit,
            timeout_ms: raw.timeout_ms,
            read_only: raw.read_only,
            allow_description: None,
        },
    )?;
    let mut tools = BTreeMap::new();
    for (tool, raw) in raw.tools {
        let what = format!("tool {tool:?}");
        let settings = check_settings(text, &name, &what, raw.into_inner())?;
        tools.insert(tool, settings);
    }
    Ok(UpstreamConfig {
        name,
        transport,
        prefix,
        connect_timeout,
        defaults,
        tools,
    })
}

/// An environment variable's name as the file may write it: letters, digits and `_`, not
/// starting with a digit.
fn is_variable_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A stdio upstream's `env = { NAME = "value" }`.
fn check_env(
    text: &str,
    upstream: &str,
    env: Spanned<BTreeMap<String, String>>,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let span = env.span();
    let env = env.into_inner();
    if env.len() > MAX_ENV_VARIABLES {
        return Err(at(
            text,
            &span,
            format!("upstream {upstream:?}: `env` has more than {MAX_ENV_VARIABLES} variables"),
            "give the child process fewer variables",
        ));
    }
    for (variable, value) in &env {
        if !is_variable_name(variable) {
            return Err(at(
                text,
                &span,
                format!(
                    "upstream {upstream:?}: `env` key {:?} is not a variable name",
                    crate::logging::escape(variable)
                ),
                "use letters, digits and `_`, not starting with a digit, e.g. `env = { NOTES_DIR = \"/srv/notes\" }`",
            ));
        }
        if value.contains('\0') {
            return Err(at(
                text,
                &span,
                format!("upstream {upstream:?}: `env` value of {variable} holds a NUL"),
                "remove the NUL (`\\u0000`): an environment variable cannot hold one",
            ));
        }
    }
    Ok(env)
}

/// A stdio upstream's `pass_env = ["NAME", ...]`: never a variable an upstream's `token_env`
/// names.
fn check_pass_env(
    text: &str,
    upstream: &str,
    pass_env: Spanned<Vec<String>>,
    tokens: &[String],
) -> Result<Vec<String>, ConfigError> {
    let span = pass_env.span();
    let pass_env = pass_env.into_inner();
    if pass_env.len() > MAX_ENV_VARIABLES {
        return Err(at(
            text,
            &span,
            format!(
                "upstream {upstream:?}: `pass_env` names more than {MAX_ENV_VARIABLES} variables"
            ),
            "pass the child process fewer variables",
        ));
    }
    for variable in &pass_env {
        if !is_variable_name(variable) {
            return Err(at(
                text,
                &span,
                format!(
                    "upstream {upstream:?}: `pass_env` entry {:?} is not a variable name",
                    crate::logging::escape(variable)
                ),
                "name the server's variable, e.g. `pass_env = [\"NOTES_API_KEY\"]`",
            ));
        }
        if tokens.contains(variable) {
            return Err(at(
                text,
                &span,
                format!(
                    "upstream {upstream:?}: `pass_env` names {variable}, an HTTP upstream's `token_env`: that upstream's token would reach this child process"
                ),
                "remove it from `pass_env`; give each upstream a credential of its own",
            ));
        }
    }
    Ok(pass_env)
}

fn positive_ms(
    text: &str,
    upstream: &str,
    key: &str,
    ms: Spanned<u64>,
) -> Result<Duration, ConfigError> {
    if *ms.get_ref() == 0 {
        return Err(at(
            text,
            &ms.span(),
            format!("upstream {upstream:?}: `{key}` is 0"),
            "give a number of milliseconds above 0",
        ));
    }
    Ok(Duration::from_millis(*ms.get_ref()))
}

fn check_settings(
    text: &str,
    upstream: &str,
    what: &str,
    fields: RawTool,
) -> Result<SettingsOverride, ConfigError> {
    let scopes = match fields.scopes {
        Some(scopes) => {
            let span = scopes.span();
            let scopes = scopes.into_inner();
            for scope in &scopes {
                if let Err(error) = registry_core::definition::Scope::new(scope.clone()) {
                    return Err(at(
                        text,
                        &span,
                        format!("upstream {upstream:?}, {what}: {error}"),
                        "correct the scope",
                    ));
                }
            }
            Some(scopes)
        }
        None => None,
    };
    let tenants = match fields.tenants {
        Some(tenants) => {
            let span = tenants.span();
            let tenants = tenants.into_inner();
            if tenants.iter().any(|tenant| tenant.trim().is_empty()) {
                return Err(at(
                    text,
                    &span,
                    format!("upstream {upstream:?}, {what}: an empty tenant"),
                    "name each tenant, or leave `tenants` out for every tenant",
                ));
            }
            Some(tenants)
        }
        None => None,
    };
    let public = match fields.public {
        Some(public) if *public.get_ref() && (scopes.is_some() || tenants.is_some()) => {
            return Err(at(
                text,
                &public.span(),
                format!("upstream {upstream:?}, {what}: `public = true` beside scopes or tenants"),
                "keep `public = true` (anyone may call it) or the scopes and tenants, not both",
            ));
        }
        Some(public) => Some(public.into_inner()),
        None => None,
    };
    let rate_limit = match fields.rate_limit {
        Some(limit) => {
            let span = limit.span();
            let limit = limit.into_inner();
            if let Err(error) = RateLimit::try_from(limit.as_str()) {
                return Err(at(
                    text,
                    &span,
                    format!("upstream {upstream:?}, {what}: {error}"),
                    "write it as calls per period, e.g. `rate_limit = \"10/min\"`",
                ));
            }
            Some(limit)
        }
        None => None,
    };
    let timeout = match fields.timeout_ms {
        Some(ms) => Some(positive_ms(text, upstream, "timeout_ms", ms)?),
        None => None,
    };
    let allow_description = match fields.allow_description {
        Some(reason) if reason.get_ref().trim().is_empty() => {
            return Err(at(
                text,
                &reason.span(),
                format!("upstream {upstream:?}, {what}: `allow_description` has no reason"),
                "say why this tool's texts may break the lint (a reviewer reads it)",
            ));
        }
        Some(reason) => Some(reason.into_inner()),
        None => None,
    };
    Ok(SettingsOverride {
        scopes,
        tenants,
        public,
        needs_approval: fields.needs_approval,
        rate_limit,
        timeout,
        read_only: fields.read_only,
        allow_description,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> ConfigError {
        UpstreamsConfig::from_toml(text).unwrap_err()
    }

    #[test]
    fn each_mistake_names_its_line_and_the_fix() {
        let error = refused("[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\nscope = [\"a:b\"]\n");
        assert_eq!(error.line, 4, "{error}");
        assert!(
            error.to_string().contains("unknown field `scope`"),
            "{error}"
        );
        assert!(error.fix.contains("spelling"), "{error}");

        let error =
            refused("[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\nurl = \"http://h/mcp\"\n");
        assert_eq!(error.line, 4);
        assert!(error.fix.contains("keep one"));

        let error = refused(
            "[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\n\n[upstream.tools.t]\npublic = true\nscopes = [\"a:b\"]\n",
        );
        assert_eq!(error.line, 6, "{error}");
        assert!(error.message.contains("tool \"t\""), "{error}");

        let error = refused("[[upstream]]\nname = \"a\"\nurl = \"ftp://h\"\n");
        assert_eq!(error.line, 3);

        let error =
            refused("[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\nrate_limit = \"lots\"\n");
        assert_eq!(error.line, 4);
        assert!(error.fix.contains("10/min"));

        let error = refused("[[upstream]]\nname = \"a b\"\ncommand = [\"x\"]\n");
        assert_eq!(error.line, 2);

        let error = refused(
            "[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\n[[upstream]]\nname = \"a\"\ncommand = [\"y\"]\n",
        );
        assert_eq!(error.line, 4);
        assert!(error.message.contains("two upstreams"));

        let error = refused(
            "[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\n[upstream.tools.t]\nallow_description = \" \"\n",
        );
        assert_eq!(error.line, 5);
    }

    #[test]
    fn a_token_never_goes_over_plain_http_to_a_host_that_is_not_loopback() {
        let error = refused(
            "[[upstream]]\nname = \"remote\"\nurl = \"http://10.0.0.5:9000/mcp\"\ntoken_env = \"REMOTE_TOKEN\"\n",
        );
        assert_eq!(error.line, 3, "{error}");
        assert!(error.message.contains("\"remote\""), "{error}");
        assert!(error.message.contains("REMOTE_TOKEN"), "{error}");
        assert!(error.fix.contains("allow_insecure_http = true"), "{error}");
        assert!(error.fix.contains("https://"), "{error}");

        for url in [
            "http://127.0.0.1:9000/mcp",
            "http://127.8.0.1/mcp",
            "http://localhost:9000/mcp",
            "http://[::1]:9000/mcp",
            "https://mcp.example.com/mcp",
        ] {
            let text = format!(
                "[[upstream]]\nname = \"remote\"\nurl = \"{url}\"\ntoken_env = \"REMOTE_TOKEN\"\n"
            );
            UpstreamsConfig::from_toml(&text).unwrap_or_else(|error| panic!("{url}: {error}"));
        }
        // Without a token nothing secret goes; with the table's word, the operator's choice.
        UpstreamsConfig::from_toml(
            "[[upstream]]\nname = \"remote\"\nurl = \"http://10.0.0.5:9000/mcp\"\n",
        )
        .unwrap();
        let allowed = UpstreamsConfig::from_toml(
            "[[upstream]]\nname = \"remote\"\nurl = \"http://10.0.0.5:9000/mcp\"\ntoken_env = \"REMOTE_TOKEN\"\nallow_insecure_http = true\n",
        )
        .unwrap();
        assert!(matches!(
            allowed.upstreams[0].transport,
            Transport::Http {
                allow_insecure_http: true,
                ..
            }
        ));
    }

    #[test]
    fn a_stdio_upstream_is_never_given_another_upstreams_token() {
        let error = refused(
            "[[upstream]]\nname = \"remote\"\nurl = \"https://h/mcp\"\ntoken_env = \"REMOTE_TOKEN\"\n\
             [[upstream]]\nname = \"notes\"\ncommand = [\"x\"]\npass_env = [\"HOME2\", \"REMOTE_TOKEN\"]\n",
        );
        assert_eq!(error.line, 8, "{error}");
        assert!(error.message.contains("REMOTE_TOKEN"), "{error}");
        // Whichever comes first in the file.
        let error = refused(
            "[[upstream]]\nname = \"notes\"\ncommand = [\"x\"]\npass_env = [\"REMOTE_TOKEN\"]\n\
             [[upstream]]\nname = \"remote\"\nurl = \"https://h/mcp\"\ntoken_env = \"REMOTE_TOKEN\"\n",
        );
        assert_eq!(error.line, 4, "{error}");

        let error = refused(
            "[[upstream]]\nname = \"remote\"\nurl = \"https://h/mcp\"\ntoken_env = \"PATH\"\n",
        );
        assert_eq!(error.line, 4, "{error}");
        assert!(error.message.contains("every stdio upstream"), "{error}");

        for (text, line) in [
            ("command = [\"x\"]\nenv = { \"A B\" = \"1\" }\n", 4),
            ("command = [\"x\"]\nenv = { A = \"a\\u0000b\" }\n", 4),
            ("command = [\"x\"]\npass_env = [\"1A\"]\n", 4),
            ("command = [\"x\"]\ncwd = \"relative/dir\"\n", 4),
            ("command = [\"x\"]\nallow_insecure_http = true\n", 4),
            ("url = \"https://h/mcp\"\ncwd = \"/srv\"\n", 4),
            ("url = \"https://h/mcp\"\nenv = { A = \"1\" }\n", 4),
            ("url = \"https://h/mcp\"\npass_env = [\"A\"]\n", 4),
        ] {
            let error = refused(&format!("[[upstream]]\nname = \"notes\"\n{text}"));
            assert_eq!(error.line, line, "{text}: {error}");
        }

        let config = UpstreamsConfig::from_toml(
            "[[upstream]]\nname = \"notes\"\ncommand = [\"x\"]\nenv = { NOTES_DIR = \"/srv/notes\" }\n\
             pass_env = [\"NOTES_KEY\"]\ncwd = \"/srv\"\n",
        )
        .unwrap();
        let Transport::Command {
            env, pass_env, cwd, ..
        } = &config.upstreams[0].transport
        else {
            panic!("a command upstream")
        };
        assert_eq!(env["NOTES_DIR"], "/srv/notes");
        assert_eq!(pass_env, &["NOTES_KEY"]);
        assert_eq!(cwd.as_deref(), Some(Path::new("/srv")));
        // The values of `env` are not printed.
        let debug = format!("{:?}", config.upstreams[0].transport);
        assert!(
            debug.contains("NOTES_DIR") && !debug.contains("/srv/notes"),
            "{debug}"
        );
    }

    #[test]
    fn nothing_is_unrestricted_unless_the_file_says_public() {
        let config = UpstreamsConfig::from_toml(
            "[[upstream]]\nname = \"fs\"\nurl = \"http://127.0.0.1:1/mcp\"\ntoken_env = \"FS_TOKEN\"\n\
             [upstream.tools.stat]\npublic = true\n[upstream.tools.write]\ntenants = [\"acme\"]\n",
        )
        .unwrap();
        let fs = &config.upstreams[0];
        let read = fs.settings_of("read");
        assert_eq!(read.scopes, ["upstream:fs"]);
        assert!(!read.public);
        assert_eq!(read.timeout, DEFAULT_CALL_TIMEOUT);
        assert!(fs.settings_of("stat").public);
        assert!(fs.settings_of("stat").scopes.is_empty());
        let write = fs.settings_of("write");
        assert_eq!(write.scopes, ["upstream:fs"]);
        assert_eq!(write.tenants, ["acme"]);
        assert_eq!(fs.tool_name("read"), "fs_read");

        let public = UpstreamsConfig::from_toml(
            "[[upstream]]\nname = \"time\"\ncommand = [\"t\"]\npublic = true\nprefix = \"\"\n\
             [upstream.tools.set]\nscopes = [\"time:admin\"]\n",
        )
        .unwrap();
        let time = &public.upstreams[0];
        assert!(time.settings_of("now").public);
        assert_eq!(time.tool_name("now"), "now");
        // A tool given its own scopes is not public because its upstream is.
        assert!(!time.settings_of("set").public);
        assert_eq!(time.settings_of("set").scopes, ["time:admin"]);
    }
}
