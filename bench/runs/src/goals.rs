//! Issue 22's table of goals, printed from the figures of the same run: each in-process goal
//! with its ratio, its goal and whether this run met it. The two goals measured by other
//! programs (HTTP against bare rmcp, `from_inventory` at 10,000 tools) are named with their
//! commands.

/// One goal: what is measured, this run's ratio, the bound, and what the ratio is against.
pub(crate) struct Goal {
    pub(crate) what: &'static str,
    pub(crate) ratio: f64,
    pub(crate) at_most: f64,
    pub(crate) against: &'static str,
    /// Something else this run measured of the same path, shown beside it.
    pub(crate) beside: Option<String>,
}

impl Goal {
    fn met(&self) -> bool {
        self.ratio <= self.at_most
    }
}

/// Prints the goals as a Markdown table.
pub(crate) fn print(goals: &[Goal]) {
    println!();
    println!("goals (issue 22), from this run:");
    println!();
    println!("| what | this run | goal | |");
    println!("| --- | ---: | ---: | --- |");
    for goal in goals {
        let beside = goal
            .beside
            .as_deref()
            .map_or_else(String::new, |beside| format!(" ({beside})"));
        println!(
            "| {} | {:.2}x {}{beside} | ≤ {}x | {} |",
            goal.what,
            goal.ratio,
            goal.against,
            goal.at_most,
            if goal.met() { "met" } else { "missed" }
        );
    }
    println!(
        "| MCP `tools/call` over HTTP, minimal clients, JWT and audit on | see `cargo run --release --manifest-path bench/mcp/Cargo.toml -- --only-compare --client raw --auth jwt --sessions 0` | ≥ 1.0x bare rmcp | |"
    );
    println!(
        "| `Registry::from_inventory()`, 10,000 tools | see `python3 bench/run.py inventory` | ≤ 1 ms | |"
    );
}

#[cfg(test)]
mod tests {
    use super::Goal;

    #[test]
    fn a_goal_is_met_at_its_bound_and_missed_above_it() {
        let goal = |ratio| Goal {
            what: "x",
            ratio,
            at_most: 2.0,
            against: "direct",
            beside: None,
        };
        assert!(goal(2.0).met());
        assert!(goal(1.5).met());
        assert!(!goal(2.01).met());
    }
}
