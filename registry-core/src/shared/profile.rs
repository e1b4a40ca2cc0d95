//! Provider profiles: the consumers a tool definition is exported to, each with its rules.
//!
//! A tool has one canonical schema; a profile *lowers* it to what its consumer accepts
//! ([`lower`](crate::present::lower)), exports the tool list in the consumer's exact format
//! ([`export`](crate::present::export)), reads the consumer's tool calls ([`parse`](crate::present::parse)) and
//! renders observations as the consumer's result messages ([`render`](crate::present::render)). The
//! rules are those of `docs/providers.md`; [`compat`](crate::compat) checks them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A consumer of tool definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Profile {
    /// The Model Context Protocol (revision 2026-07-28): `tools/list` and `tools/call`.
    Mcp,
    /// OpenAI Chat Completions (`tools`, `tool_calls`, `role: "tool"` messages).
    OpenAiChat {
        /// Strict mode (structured outputs): every property required, optional ones nullable.
        strict: bool,
    },
    /// The OpenAI Responses API (`function_call` and `function_call_output` items).
    OpenAiResponses {
        /// Strict mode (structured outputs): every property required, optional ones nullable.
        strict: bool,
    },
    /// The Anthropic Messages API (`tool_use` and `tool_result` blocks).
    Anthropic,
    /// Google Gemini (`functionDeclarations`, `functionCall`, `functionResponse`).
    Gemini,
}

impl Profile {
    /// Every profile, in a fixed order. More may come: code that keeps something per
    /// profile sizes it by this list, never by a count of its own.
    pub const ALL: &'static [Profile] = &[
        Profile::Mcp,
        Profile::OpenAiChat { strict: false },
        Profile::OpenAiChat { strict: true },
        Profile::OpenAiResponses { strict: false },
        Profile::OpenAiResponses { strict: true },
        Profile::Anthropic,
        Profile::Gemini,
    ];

    /// A short stable name: `mcp`, `openai-chat`, `openai-chat-strict`, `openai-responses`,
    /// `openai-responses-strict`, `anthropic`, `gemini`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Mcp => "mcp",
            Profile::OpenAiChat { strict: false } => "openai-chat",
            Profile::OpenAiChat { strict: true } => "openai-chat-strict",
            Profile::OpenAiResponses { strict: false } => "openai-responses",
            Profile::OpenAiResponses { strict: true } => "openai-responses-strict",
            Profile::Anthropic => "anthropic",
            Profile::Gemini => "gemini",
        }
    }

    /// Whether the profile is one of OpenAI's strict modes.
    pub fn is_strict(self) -> bool {
        matches!(
            self,
            Profile::OpenAiChat { strict: true } | Profile::OpenAiResponses { strict: true }
        )
    }

    /// How many profiles there are: the length of per-profile caches.
    pub(crate) const COUNT: usize = Profile::ALL.len();

    /// The position in [`Profile::ALL`], for per-profile caches.
    pub(crate) fn index(self) -> usize {
        match self {
            Profile::Mcp => 0,
            Profile::OpenAiChat { strict: false } => 1,
            Profile::OpenAiChat { strict: true } => 2,
            Profile::OpenAiResponses { strict: false } => 3,
            Profile::OpenAiResponses { strict: true } => 4,
            Profile::Anthropic => 5,
            Profile::Gemini => 6,
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Profile {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// A profile from its [`name`](Profile::name), as [`Display`](fmt::Display) writes it.
///
/// ```
/// use registry_core::Profile;
///
/// assert_eq!("openai-chat-strict".parse(), Ok(Profile::OpenAiChat { strict: true }));
/// let error = "openai".parse::<Profile>().unwrap_err();
/// assert_eq!(error.name(), "openai");
/// assert!(error.to_string().contains("openai-chat, openai-chat-strict"));
/// ```
impl FromStr for Profile {
    type Err = ParseProfileError;

    fn from_str(name: &str) -> Result<Profile, ParseProfileError> {
        Profile::ALL
            .iter()
            .copied()
            .find(|profile| profile.name() == name)
            .ok_or_else(|| ParseProfileError {
                name: name.to_owned(),
            })
    }
}

/// A profile from its [`name`](Profile::name), as it is serialized.
impl<'de> Deserialize<'de> for Profile {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;

        impl serde::de::Visitor<'_> for Name {
            type Value = Profile;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the name of a profile")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Profile, E> {
                name.parse().map_err(E::custom)
            }
        }

        deserializer.deserialize_str(Name)
    }
}

/// A name that is not one of a [`Profile`]'s ([`Profile::from_str`](FromStr::from_str)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseProfileError {
    name: String,
}

impl ParseProfileError {
    /// The name that matched no profile.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for ParseProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no profile is named {:?}; the profiles are ", self.name)?;
        for (i, profile) in Profile::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(profile.name())?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseProfileError {}

/// One thing in a tool's definition that a profile cannot take, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Incompatibility {
    /// The profile.
    pub profile: Profile,
    /// The tool.
    pub tool: String,
    /// A JSON pointer: into the tool's canonical parameters schema for what lowering cannot
    /// express, into the exported tool object for what the checker (`compat`) finds.
    pub pointer: String,
    /// The rule broken, as `providers.md` states it.
    pub rule: String,
    /// How to fix it.
    pub fix: String,
}

impl Incompatibility {
    /// An incompatibility of `tool` with `profile` at `pointer`: the `rule` broken and the
    /// `fix`. The checker and the lowering make them; an application that checks rules of its
    /// own reports them alike.
    pub fn new(
        profile: Profile,
        tool: impl Into<String>,
        pointer: impl Into<String>,
        rule: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Incompatibility {
            profile,
            tool: tool.into(),
            pointer: pointer.into(),
            rule: rule.into(),
            fix: fix.into(),
        }
    }
}

impl fmt::Display for Incompatibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: tool {:?} at {:?}: {}; {}",
            self.profile, self.tool, self.pointer, self.rule, self.fix
        )
    }
}

/// Tools that cannot be expressed in a profile: every incompatibility found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} incompatibilit{} with provider profiles:{}", .0.len(), if .0.len() == 1 { "y" } else { "ies" }, Lines(.0))]
pub struct CompatibilityError(pub(crate) Vec<Incompatibility>);

impl CompatibilityError {
    /// An error listing `incompatibilities`.
    pub fn new(incompatibilities: Vec<Incompatibility>) -> Self {
        CompatibilityError(incompatibilities)
    }

    /// Every incompatibility found, in order.
    pub fn incompatibilities(&self) -> &[Incompatibility] {
        &self.0
    }

    /// Every incompatibility found, owned.
    pub fn into_incompatibilities(self) -> Vec<Incompatibility> {
        self.0
    }
}

struct Lines<'a>(&'a [Incompatibility]);

impl fmt::Display for Lines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|item| write!(f, "\n  - {item}"))
    }
}

#[cfg(test)]
mod tests {
    use super::{ParseProfileError, Profile};

    #[test]
    fn every_profile_round_trips_through_its_name() {
        assert_eq!(Profile::ALL.len(), Profile::COUNT);
        for (i, &profile) in Profile::ALL.iter().enumerate() {
            assert_eq!(profile.index(), i);
            assert_eq!(profile.to_string().parse::<Profile>(), Ok(profile));
            let json = serde_json::to_value(profile).unwrap();
            assert_eq!(json, serde_json::json!(profile.name()));
            assert_eq!(serde_json::from_value::<Profile>(json).unwrap(), profile);
        }
        let names: std::collections::BTreeSet<_> = Profile::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(names.len(), Profile::ALL.len(), "names are unique");
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_valid_ones() {
        let error: ParseProfileError = "OpenAI-Chat".parse::<Profile>().unwrap_err();
        assert_eq!(error.name(), "OpenAI-Chat");
        assert_eq!(
            error.to_string(),
            "no profile is named \"OpenAI-Chat\"; the profiles are mcp, openai-chat, \
             openai-chat-strict, openai-responses, openai-responses-strict, anthropic, gemini"
        );
        let from_json = serde_json::from_str::<Profile>("\"claude\"").unwrap_err();
        assert!(
            from_json
                .to_string()
                .contains("no profile is named \"claude\""),
            "{from_json}"
        );
        assert!(serde_json::from_str::<Profile>("7").is_err());
        assert!("".parse::<Profile>().is_err());
    }
}
