//! Budgets: how much one loop may spend before it stops with
//! [`AgentEnd::BudgetSpent`](crate::AgentEnd::BudgetSpent).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The limits of one loop (across pauses: a resumed loop keeps counting).
///
/// ```
/// use std::time::Duration;
/// use registry_agent::Budget;
///
/// let budget = Budget::default().max_turns(8).max_calls(20).wall_time(Duration::from_secs(120));
/// assert_eq!(budget.turns, 8);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Budget {
    /// Model requests (default 16).
    pub turns: u32,
    /// Tool calls, refused ones included (default 64).
    pub calls: u32,
    /// Wall time from the loop's start, pauses excluded (default 10 minutes).
    pub wall_time: Duration,
    /// Tokens, input and output, as the API reports them (default: no limit).
    pub tokens: Option<u64>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            turns: 16,
            calls: 64,
            wall_time: Duration::from_secs(600),
            tokens: None,
        }
    }
}

impl Budget {
    /// At most `turns` model requests.
    #[must_use]
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.turns = turns;
        self
    }

    /// At most `calls` tool calls.
    #[must_use]
    pub fn max_calls(mut self, calls: u32) -> Self {
        self.calls = calls;
        self
    }

    /// At most `wall_time` of wall time.
    #[must_use]
    pub fn wall_time(mut self, wall_time: Duration) -> Self {
        self.wall_time = wall_time;
        self
    }

    /// At most `tokens` tokens.
    #[must_use]
    pub fn max_tokens(mut self, tokens: u64) -> Self {
        self.tokens = Some(tokens);
        self
    }
}

/// Which budget was spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Spent {
    /// [`Budget::turns`].
    Turns,
    /// [`Budget::calls`].
    Calls,
    /// [`Budget::wall_time`].
    WallTime,
    /// [`Budget::tokens`].
    Tokens,
}

impl fmt::Display for Spent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Spent::Turns => "turns",
            Spent::Calls => "calls",
            Spent::WallTime => "wall_time",
            Spent::Tokens => "tokens",
        })
    }
}
