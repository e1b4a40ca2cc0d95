//! The description lint: what a tool's description, title and parameter docs must not hold.
//!
//! A tool's description is shown to every model and every client that lists the tool. It is
//! not secret storage, it should not map the internal network, it should read the same to a
//! model as to a reviewer, and it should describe the tool rather than instruct the model.
//! [`check`] finds, in one text:
//!
//! - **secrets** ([`Family::Secret`]): private keys, API and bearer tokens of the common
//!   shapes, JWTs, passwords in URLs;
//! - **internal addresses** ([`Family::Address`]): private, loopback and link-local IP
//!   addresses, host names under `.internal`, `.local`, `.corp`, `.lan` and `.localhost`,
//!   `localhost` URLs;
//! - **invisible characters** ([`Family::Invisible`]): zero-width characters, bidirectional
//!   controls, Unicode tag characters, every other format (`Cf`) and default-ignorable
//!   character (soft hyphens, variation selectors, invisible operators), and control
//!   characters other than the tab and the line feed;
//! - **instructions aimed at the model** ([`Family::Injection`]): "ignore previous
//!   instructions", "you are now ...", "system prompt", `<important>`-style tags, text that
//!   hides things from the user, and instructions about other tools.
//!
//! Invisible characters also split words: `ig\u{AD}nore previous instructions` shows as
//! "ignore previous instructions". So the other rules read the text with them taken out (and,
//! once more, with each replaced by a space), and a finding's range and excerpt are those of
//! the text as given.
//!
//! The same rules run at compile time in `#[tool]` and at `build()` for tools built at run
//! time, so a text passes or fails alike in both.
//!
//! ```
//! let findings = registry_lint::check("Read the build status. Key: sk-proj-4fG7hJ2kL9mN3pQ8rS1tU6vW");
//! assert_eq!(findings.len(), 1);
//! assert_eq!(findings[0].rule.id(), "secret/api-token");
//! assert_eq!(findings[0].excerpt, "sk-proj-…");
//!
//! assert!(registry_lint::check("Read the current build status of a project.").is_empty());
//! ```

// docs.rs only (it sets `--cfg docsrs`): show beside each feature-gated item the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
// Library code reports failures; it does not unwrap them (tests may). Set here, not in
// [workspace.lints]: see the root Cargo.toml.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

use std::fmt;
use std::ops::Range;

mod address;
mod attribute;
mod injection;
mod invisible;
mod secret;
mod text;
mod words;

pub use text::escape;

/// Whether a URL's host (as `url::Url::host_str` gives it: an IPv6 address in brackets) is
/// this machine: `localhost`, or a loopback address (127.0.0.0/8, `[::1]`). The one rule for
/// every URL a key or a token may reach over plain `http://` (a model endpoint, an embedder,
/// JWKS and introspection, an upstream's `token_env`); `0.0.0.0` and `[::ffff:127.0.0.1]` are
/// not loopback here.
///
/// ```
/// assert!(registry_lint::is_loopback_host("127.0.0.2"));
/// assert!(registry_lint::is_loopback_host("LocalHost"));
/// assert!(registry_lint::is_loopback_host("[::1]"));
/// assert!(!registry_lint::is_loopback_host("localhost.evil.example"));
/// assert!(!registry_lint::is_loopback_host("0.0.0.0"));
/// ```
pub fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(host)
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

pub use attribute::{
    MAX_ATTRIBUTE_KEY, MAX_ATTRIBUTE_VALUE, MAX_ATTRIBUTE_VALUES, MAX_TOOL_ATTRIBUTES,
    check_attribute_key, check_attribute_text,
};

/// Whether the lint refuses `c` wherever it is ([`Family::Invisible`]): a zero-width, bidi,
/// tag, format or default-ignorable character, or a control character other than the tab
/// and the line feed. [`escape`] writes each as `\u{...}`. (A single presentation selector
/// right after an emoji is the one such character a text may hold; it is still escaped.)
///
/// ```
/// assert!(registry_lint::is_invisible('\u{AD}'));
/// assert!(registry_lint::is_invisible('\0'));
/// assert!(!registry_lint::is_invisible('\n'));
/// assert!(!registry_lint::is_invisible('é'));
/// ```
pub fn is_invisible(c: char) -> bool {
    invisible::rule_of(c).is_some()
}

/// What a [`Rule`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Family {
    /// Credentials: keys, tokens, passwords.
    Secret,
    /// Addresses of the internal network.
    Address,
    /// Characters that are invisible or reorder text.
    Invisible,
    /// Text addressed to the model rather than describing the tool.
    Injection,
}

impl Family {
    /// The family's name, the first half of a rule id: `secret`, `address`, `invisible`,
    /// `injection`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Secret => "secret",
            Family::Address => "address",
            Family::Invisible => "invisible",
            Family::Injection => "injection",
        }
    }

    /// How to fix a finding of this family.
    pub fn fix(self) -> &'static str {
        match self {
            Family::Secret => {
                "a description is shown to every model and client that lists the tool and is \
                 not secret storage: remove the secret (and rotate it), and give the tool its \
                 credentials through configuration or application state"
            }
            Family::Address => {
                "a description is shown to every model and client that lists the tool, and \
                 internal addresses map your network for them: remove it, and keep addresses \
                 in configuration or application state"
            }
            Family::Invisible => {
                "invisible and reordering characters make a model read something other than \
                 what a reviewer sees: remove them"
            }
            Family::Injection => {
                "a description says what the tool does and what its arguments mean; it does \
                 not instruct the model, hide things from the user or speak for other tools: \
                 rewrite it as a plain description"
            }
        }
    }
}

/// One rule of the lint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// `-----BEGIN ... PRIVATE KEY-----`.
    PrivateKey,
    /// `Bearer <long token>`.
    BearerToken,
    /// An API token of a known shape: `sk-...`, `sk-proj-...`, `ghp_...`, `github_pat_...`,
    /// `glpat-...`, `xoxb-...`, `AKIA...`, `AIza...`, `sk_live_...`.
    ApiToken,
    /// A JSON Web Token: `eyJ...` `.` `eyJ...` `.` `...`.
    Jwt,
    /// `scheme://user:password@host`.
    UrlPassword,
    /// An IPv4 or IPv6 address in a private, shared (100.64/10), loopback, link-local or
    /// unspecified range; IPv4 as a URL's host in any form a URL parser reads
    /// (`http://2130706433/`, `http://0x7f000001/`, `http://0177.0.0.1/`).
    PrivateIp,
    /// A host name under `.internal`, `.local`, `.corp`, `.lan` or `.localhost`.
    InternalHost,
    /// `http://localhost...` or `localhost:<port>`.
    LocalhostUrl,
    /// U+200B–U+200D, U+2060, U+FEFF.
    ZeroWidth,
    /// U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C.
    BidiControl,
    /// U+E0000–U+E007F, which can spell hidden ASCII text.
    TagCharacter,
    /// Every other character of general category `Cf` or with the property
    /// `Default_Ignorable_Code_Point`: the soft hyphen U+00AD, variation selectors
    /// U+FE00–U+FE0F and U+E0100–U+E01EF, the invisible operators U+2061–U+2064, U+180E,
    /// U+034F, Hangul fillers, and the like. A single U+FE0E or U+FE0F right after an emoji
    /// (`⚠️`) is how emoji are written, and passes.
    FormatCharacter,
    /// A control character (general category `Cc`: U+0000–U+001F, U+007F–U+009F) other than
    /// the tab and the line feed. The carriage return is refused too: on a terminal it moves
    /// back over the line, so that later text hides earlier text.
    ControlCharacter,
    /// "ignore (all) previous instructions", "disregard the above", ...
    IgnoreInstructions,
    /// "you are now ...", "pretend to be ...".
    RoleChange,
    /// "system prompt".
    SystemPrompt,
    /// `<important>`, `<system>`, `<|im_start|>`, `[INST]` and the like.
    PromptMarkup,
    /// "do not tell the user", "hide this from the user".
    HiddenFromUser,
    /// Instructions about other tools: "before using this tool, read ...", "when you call
    /// `send_email`, always ...", "instead of calling `search`", "never call `deploy`".
    CrossTool,
}

impl Rule {
    /// Every rule.
    pub const ALL: [Rule; 19] = [
        Rule::PrivateKey,
        Rule::BearerToken,
        Rule::ApiToken,
        Rule::Jwt,
        Rule::UrlPassword,
        Rule::PrivateIp,
        Rule::InternalHost,
        Rule::LocalhostUrl,
        Rule::ZeroWidth,
        Rule::BidiControl,
        Rule::TagCharacter,
        Rule::FormatCharacter,
        Rule::ControlCharacter,
        Rule::IgnoreInstructions,
        Rule::RoleChange,
        Rule::SystemPrompt,
        Rule::PromptMarkup,
        Rule::HiddenFromUser,
        Rule::CrossTool,
    ];

    /// The rule's family.
    pub fn family(self) -> Family {
        match self {
            Rule::PrivateKey
            | Rule::BearerToken
            | Rule::ApiToken
            | Rule::Jwt
            | Rule::UrlPassword => Family::Secret,
            Rule::PrivateIp | Rule::InternalHost | Rule::LocalhostUrl => Family::Address,
            Rule::ZeroWidth
            | Rule::BidiControl
            | Rule::TagCharacter
            | Rule::FormatCharacter
            | Rule::ControlCharacter => Family::Invisible,
            Rule::IgnoreInstructions
            | Rule::RoleChange
            | Rule::SystemPrompt
            | Rule::PromptMarkup
            | Rule::HiddenFromUser
            | Rule::CrossTool => Family::Injection,
        }
    }

    /// A stable id, `family/rule`, e.g. `secret/api-token`.
    pub fn id(self) -> &'static str {
        match self {
            Rule::PrivateKey => "secret/private-key",
            Rule::BearerToken => "secret/bearer-token",
            Rule::ApiToken => "secret/api-token",
            Rule::Jwt => "secret/jwt",
            Rule::UrlPassword => "secret/url-password",
            Rule::PrivateIp => "address/private-ip",
            Rule::InternalHost => "address/internal-host",
            Rule::LocalhostUrl => "address/localhost-url",
            Rule::ZeroWidth => "invisible/zero-width",
            Rule::BidiControl => "invisible/bidi-control",
            Rule::TagCharacter => "invisible/tag-character",
            Rule::FormatCharacter => "invisible/format-character",
            Rule::ControlCharacter => "invisible/control-character",
            Rule::IgnoreInstructions => "injection/ignore-instructions",
            Rule::RoleChange => "injection/role-change",
            Rule::SystemPrompt => "injection/system-prompt",
            Rule::PromptMarkup => "injection/prompt-markup",
            Rule::HiddenFromUser => "injection/hidden-from-user",
            Rule::CrossTool => "injection/cross-tool",
        }
    }

    /// How to fix a finding of this rule (its family's advice).
    pub fn fix(self) -> &'static str {
        self.family().fix()
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// One thing the lint refuses in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Finding {
    /// The rule it breaks.
    pub rule: Rule,
    /// Where it is: a byte range of the text, on character boundaries.
    pub range: Range<usize>,
    /// The text found, as it may be shown: invisible characters escaped (`\u{200b}`),
    /// secrets cut after their first characters, long matches shortened.
    pub excerpt: String,
    /// What was found and where, e.g. `an API token "sk-proj-…"`.
    pub message: String,
}

impl Finding {
    fn new(rule: Rule, range: Range<usize>, what: &str, excerpt: String) -> Self {
        let message = format!("{what} \"{excerpt}\"");
        Finding {
            rule,
            range,
            excerpt,
            message,
        }
    }
}

impl Finding {
    /// This finding, made in a view of `original` without its invisible characters, at
    /// `range` of the original. A secret keeps its excerpt, cut short; any other finding
    /// shows the original text, invisible characters escaped.
    fn in_original(self, original: &str, range: Range<usize>) -> Finding {
        if self.rule.family() == Family::Secret {
            return Finding { range, ..self };
        }
        let excerpt = text::excerpt(original, range.clone());
        let what = self
            .message
            .strip_suffix(&format!(" \"{}\"", self.excerpt))
            .unwrap_or(&self.message);
        Finding::new(self.rule, range, what, excerpt)
    }
}

impl fmt::Display for Finding {
    /// The message, the rule and the fix: `an API token "sk-…" (rule `secret/api-token`); a
    /// description is shown ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (rule `{}`); {}",
            self.message,
            self.rule.id(),
            self.rule.fix()
        )
    }
}

/// Everything the lint refuses in `text`, in order of position.
///
/// A finding inside another of the same family (the IPv4 part of `::ffff:10.0.0.1`, the JWT
/// of `Bearer eyJ...`) is left out.
pub fn check(text: &str) -> Vec<Finding> {
    scan(text, true, visible_rules)
}

/// The secrets in `text` (the rules of [`Family::Secret`]: private keys, bearer tokens, API
/// tokens, JWTs, passwords in URLs), in order of position, none inside another: what
/// [`check`] finds of them, each with its byte range of `text` (on character boundaries), so
/// that a caller can cut them out. A secret split by invisible characters is found too, its
/// range covering them. Cheaper than [`check`]: no other rule is run.
///
/// ```
/// use registry_lint::{Rule, secrets};
///
/// let text = "token: ghp_Zq8vN2xR5tL9wK3mB7cJ1fH4dG6sP0aY2eU8, host: 10.0.0.1";
/// let found = secrets(text);
/// assert_eq!(found.len(), 1);
/// assert_eq!(found[0].rule, Rule::ApiToken);
/// assert_eq!(&text[found[0].range.clone()], "ghp_Zq8vN2xR5tL9wK3mB7cJ1fH4dG6sP0aY2eU8");
/// ```
pub fn secrets(text: &str) -> Vec<Finding> {
    scan(text, false, secret_rules)
}

/// The findings of `rules` in `text` (and of the invisible rules, when `invisible`), found in
/// views without the invisible characters too, sorted, none inside another of its family.
fn scan(text: &str, invisible: bool, rules: fn(&str) -> Vec<Finding>) -> Vec<Finding> {
    let mut findings = Vec::new();
    if invisible {
        invisible::check(text, &mut findings);
    }
    if invisible::has_hidden(text) {
        // Read with the invisible characters taken out, then with each a space: a phrase
        // split by one is found either way.
        for joined in [true, false] {
            let view = invisible::View::new(text, joined);
            for finding in rules(&view.text) {
                let range = view.original(finding.range.clone());
                let finding = finding.in_original(text, range);
                if !findings.contains(&finding) {
                    findings.push(finding);
                }
            }
        }
    } else {
        findings.extend(rules(text));
    }
    findings.sort_by(|a, b| {
        (a.range.start, b.range.end, a.rule.id()).cmp(&(b.range.start, a.range.end, b.rule.id()))
    });
    let mut kept: Vec<Finding> = Vec::with_capacity(findings.len());
    for finding in findings {
        let covered = kept.iter().any(|outer| {
            outer.rule.family() == finding.rule.family()
                && outer.range.start <= finding.range.start
                && finding.range.end <= outer.range.end
        });
        if !covered {
            kept.push(finding);
        }
    }
    kept
}

/// The findings of the secret rules in `text`, which has no invisible character.
fn secret_rules(text: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    secret::check(text, &mut findings);
    findings
}

/// The findings of every rule but the invisible ones, in `text`, which has no invisible
/// character.
fn visible_rules(text: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    secret::check(text, &mut findings);
    address::check(text, &mut findings);
    injection::check(text, &mut findings);
    findings
}

#[cfg(test)]
mod tests;

/// The README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
