//! A rate limit: how many calls per period, written `"10/min"`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// At most `calls` calls per `period`, per subject (tenant and agent) and tool, enforced as a
/// token bucket: a burst of up to `calls` is allowed, and the bucket refills evenly over the
/// period.
///
/// Written `"10/min"` in `#[tool(rate_limit = "10/min")]` (checked at compile time), in
/// configuration, or with [`RateLimit::new`]. The units are `s`, `min` and `h`.
///
/// ```
/// use std::time::Duration;
/// use registry_core::gate::RateLimit;
///
/// let limit: RateLimit = "10/min".parse().unwrap();
/// assert_eq!(limit, RateLimit::new(10, Duration::from_secs(60)).unwrap());
/// assert_eq!(limit.to_string(), "10/min");
/// assert_eq!(
///     "10/week".parse::<RateLimit>().unwrap_err().to_string(),
///     r#"invalid rate limit "10/week": the unit must be `s`, `min` or `h`, as in "10/min""#
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateLimit {
    calls: u32,
    period: Duration,
}

/// A rate limit that is not well formed; the message says why and how to write one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid rate limit {text:?}: {reason}")]
pub struct RateLimitError {
    text: String,
    reason: &'static str,
}

impl RateLimit {
    /// At most `calls` calls per `period`. Both must be positive.
    pub fn new(calls: u32, period: Duration) -> Result<RateLimit, RateLimitError> {
        if calls == 0 {
            return Err(RateLimitError {
                text: format!("{calls}/{period:?}"),
                reason: "the number of calls must be at least 1; to forbid a tool, revoke it or deny it in a call policy",
            });
        }
        if period.is_zero() {
            return Err(RateLimitError {
                text: format!("{calls}/{period:?}"),
                reason: "the period must be longer than zero",
            });
        }
        Ok(RateLimit { calls, period })
    }

    /// `calls` per second.
    pub const fn per_second(calls: u32) -> RateLimit {
        RateLimit::checked(calls, 1)
    }

    /// `calls` per minute.
    pub const fn per_minute(calls: u32) -> RateLimit {
        RateLimit::checked(calls, 60)
    }

    /// `calls` per hour.
    pub const fn per_hour(calls: u32) -> RateLimit {
        RateLimit::checked(calls, 3600)
    }

    /// Used by the `per_*` constructors and by `#[tool]`, whose numbers are checked at
    /// compile time; a zero count becomes one.
    #[doc(hidden)]
    pub const fn checked(calls: u32, seconds: u64) -> RateLimit {
        RateLimit {
            calls: if calls == 0 { 1 } else { calls },
            period: Duration::from_secs(if seconds == 0 { 1 } else { seconds }),
        }
    }

    /// How many calls a period allows (the bucket's size).
    pub fn calls(&self) -> u32 {
        self.calls
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// The time one call's token takes to come back.
    pub fn refill_interval(&self) -> Duration {
        self.period / self.calls
    }
}

/// Parses `"<calls>/<unit>"`, the unit one of `s`, `min`, `h`; used by `#[tool]` at compile
/// time too, so that both accept exactly the same texts.
pub(crate) fn parse(text: &str) -> Result<(u32, u64), &'static str> {
    let Some((calls, unit)) = text.split_once('/') else {
        return Err("write it as calls per unit, as in \"10/min\"");
    };
    let calls: u32 = calls
        .trim()
        .parse()
        .map_err(|_| "the number of calls must be a whole number, as in \"10/min\"")?;
    if calls == 0 {
        return Err(
            "the number of calls must be at least 1; to forbid a tool, revoke it or deny it in a call policy",
        );
    }
    let seconds = match unit.trim() {
        "s" => 1,
        "min" => 60,
        "h" => 3600,
        _ => return Err("the unit must be `s`, `min` or `h`, as in \"10/min\""),
    };
    Ok((calls, seconds))
}

impl FromStr for RateLimit {
    type Err = RateLimitError;

    fn from_str(text: &str) -> Result<RateLimit, RateLimitError> {
        parse(text)
            .map(|(calls, seconds)| RateLimit::checked(calls, seconds))
            .map_err(|reason| RateLimitError {
                text: text.to_owned(),
                reason,
            })
    }
}

impl TryFrom<&str> for RateLimit {
    type Error = RateLimitError;

    fn try_from(text: &str) -> Result<RateLimit, RateLimitError> {
        text.parse()
    }
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = self.period.as_secs();
        match (self.period.subsec_nanos(), seconds) {
            (0, 1) => write!(f, "{}/s", self.calls),
            (0, 60) => write!(f, "{}/min", self.calls),
            (0, 3600) => write!(f, "{}/h", self.calls),
            _ => write!(f, "{}/{}ms", self.calls, self.period.as_millis()),
        }
    }
}

impl Serialize for RateLimit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RateLimit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
