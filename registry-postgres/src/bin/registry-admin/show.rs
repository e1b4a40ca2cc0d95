//! Printing records: a table for people, or JSON lines for scripts.

use std::time::SystemTime;

use comfy_table::{Table, presets};
use registry_postgres::{
    ApprovalRecord, AuditRecord, ChangeRecord, PolicySetRecord, ReplicaPolicyStatus,
    UpstreamAcceptance, UpstreamOffer,
};
use serde::Serialize;
use serde_json::Value;

use crate::time::format_utc;

/// How long a question may be in the approvals table before it is cut.
const QUESTION_WIDTH: usize = 60;

/// The changes, oldest first.
pub(crate) fn changes(records: &[ChangeRecord], json: bool) -> String {
    if json {
        return json_lines(records);
    }
    if records.is_empty() {
        return "no changes recorded\n".to_owned();
    }
    let mut table = table(["seq", "at", "tool", "kind", "old runs", "reason", "origin"]);
    for record in records {
        table.add_row([
            record.seq.to_string(),
            format_utc(record.at, false),
            clean(&record.tool),
            record.kind.as_str().to_owned(),
            optional(record.old_runs.as_deref()),
            clean(&record.reason),
            clean(&record.origin),
        ]);
    }
    format!("{table}\n")
}

/// The approval requests, newest first.
pub(crate) fn approvals(records: &[ApprovalRecord], json: bool) -> String {
    if json {
        return json_lines(records);
    }
    if records.is_empty() {
        return "no approval requests\n".to_owned();
    }
    let mut table = table([
        "id",
        "tool",
        "tenant",
        "agent",
        "principal",
        "state",
        "requested",
        "expires",
        "question",
        "origin",
        "verdict",
    ]);
    for record in records {
        let state = match &record.decided_by {
            Some(by) => format!("{} by {}", record.state, clean(by)),
            None => record.state.clone(),
        };
        table.add_row([
            clean(&record.id),
            clean(&record.tool),
            clean(&record.tenant),
            optional(record.agent.as_deref()),
            optional(record.principal.as_deref()),
            state,
            format_utc(record.requested_at, false),
            format_utc(record.expires_at, false),
            cut(&clean(&record.question), QUESTION_WIDTH),
            clean(&record.origin),
            optional(record.verdict.as_deref()),
        ]);
    }
    format!("{table}\n")
}

/// The audit events, newest first.
pub(crate) fn audit(records: &[AuditRecord], json: bool) -> String {
    if json {
        return json_lines(records);
    }
    if records.is_empty() {
        return "no audit events\n".to_owned();
    }
    let mut table = table([
        "id",
        "at",
        "replica",
        "kind",
        "tool",
        "call id",
        "outcome",
        "run",
        "principal",
    ]);
    for record in records {
        table.add_row([
            record.id.to_string(),
            format_utc(record.at, false),
            clean(&record.replica),
            clean(&record.kind),
            optional(record.tool.as_deref()),
            optional(record.call_id.as_deref()),
            optional(record.outcome.as_deref()),
            optional(record.run_id.as_deref()),
            optional(record.principal.as_deref()),
        ]);
    }
    format!("{table}\n")
}

/// The upstream tools the replicas withhold, by upstream, tool and replica.
pub(crate) fn upstream_offers(records: &[UpstreamOffer], json: bool) -> String {
    if json {
        return json_lines(records);
    }
    if records.is_empty() {
        return "no replica withholds an upstream tool for a change or as new\n".to_owned();
    }
    let mut table = table([
        "upstream",
        "tool",
        "replica",
        "digest (--digest)",
        "annotations",
        "why",
    ]);
    for record in records {
        table.add_row([
            clean(&record.upstream),
            clean(&record.tool),
            clean(&record.replica),
            clean(&record.definition),
            clean(&record.annotations),
            cut(&clean(&record.withheld), QUESTION_WIDTH),
        ]);
    }
    let mut text = format!("{table}\n");
    // Each distinct definition once, whole: what is accepted is exactly this text.
    let mut shown = std::collections::BTreeSet::new();
    for record in records {
        if !shown.insert((&record.upstream, &record.tool, &record.definition)) {
            continue;
        }
        text.push_str(&format!(
            "\n{} of upstream {}, definition {}:\n{}\n",
            clean(&record.tool),
            clean(&record.upstream),
            clean(&record.definition),
            match &record.offered {
                Some(offered) => clean_lines(&pretty(offered)),
                None => "(the replica did not report the definition's text)".to_owned(),
            }
        ));
    }
    text.push_str(
        "\nAccept one after reviewing it: registry-admin upstream accept UPSTREAM --digest DIGEST \
         [--tool TOOL]; a digest no live replica offers any more is refused.\n",
    );
    text
}

/// JSON text indented for reading, or as it is when it is not JSON.
fn pretty(text: &str) -> String {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|value| serde_json::to_string_pretty(&value).ok())
        .unwrap_or_else(|| text.to_owned())
}

/// The roles `init-roles` granted.
pub(crate) fn roles(roles: &registry_postgres::Roles, created: &[String], json: bool) -> String {
    if json {
        return json_line(&serde_json::json!({
            "replica": roles.replica,
            "admin": roles.admin,
            "created": created,
        }));
    }
    let made = |name: &String| {
        if created.contains(name) {
            " (created)"
        } else {
            ""
        }
    };
    format!(
        "replica role: {}{}\nadmin role:   {}{}\nGrants applied. Make each replica's login a \
         member of the replica role (GRANT \"{}\" TO api_1;) and registry-admin's of the admin \
         role (GRANT \"{}\" TO ops;); give replicas their URL, and registry-admin its own.\n",
        clean(&roles.replica),
        made(&roles.replica),
        clean(&roles.admin),
        made(&roles.admin),
        clean(&roles.replica),
        clean(&roles.admin),
    )
}

/// Acceptances just recorded.
pub(crate) fn upstream_acceptances(records: &[UpstreamAcceptance], json: bool) -> String {
    if json {
        return json_lines(records);
    }
    let mut text = String::new();
    for record in records {
        text.push_str(&format!(
            "recorded acceptance #{}: {} of upstream {} (definition {}, annotations {})\n",
            record.seq,
            clean(&record.tool),
            clean(&record.upstream),
            clean(&record.definition),
            clean(&record.annotations),
        ));
    }
    text.push_str(
        "Every replica with that upstream pins what it offers with exactly these digests and \
         serves it within moments, without a restart.\n",
    );
    text
}

/// The newest policy set (its files' names and sizes, and with `texts` the texts), then
/// what each replica did with the sets it was given.
pub(crate) fn policies(
    set: Option<&PolicySetRecord>,
    status: &[ReplicaPolicyStatus],
    texts: bool,
    json: bool,
) -> String {
    if json {
        let mut out = String::new();
        if let Some(set) = set {
            let files: Vec<Value> = set
                .files
                .iter()
                .map(|(name, text)| {
                    let mut file = serde_json::json!({"name": name, "bytes": text.len()});
                    if texts {
                        file["text"] = Value::String(text.clone());
                    }
                    file
                })
                .collect();
            out.push_str(&json_line(&serde_json::json!({
                "generation": set.generation,
                "at": set.at,
                "digest": set.digest,
                "origin": set.origin,
                "files": files,
            })));
        }
        out.push_str(&json_lines(status));
        return out;
    }
    let Some(set) = set else {
        return "no policy set was pushed
"
        .to_owned();
    };
    let mut out = format!(
        "policy set generation {}
digest: sha256 {}
pushed: {} by {}
",
        set.generation,
        clean(&set.digest),
        format_utc(set.at, false),
        clean(&set.origin),
    );
    let mut files = table(["file", "bytes"]);
    for (name, text) in &set.files {
        files.add_row([clean(name), text.len().to_string()]);
    }
    out.push_str(&format!(
        "{files}
"
    ));
    if status.is_empty() {
        out.push_str(
            "no replica has reported (a replica reports once its feed has a validation)
",
        );
    } else {
        let mut replicas = table(["replica", "generation", "outcome", "runs", "at", "seen"]);
        for report in status {
            replicas.add_row([
                clean(&report.replica),
                report.generation.to_string(),
                if report.applied { "applied" } else { "refused" }.to_owned(),
                report
                    .running
                    .map_or_else(|| "-".to_owned(), |at| at.to_string()),
                format_utc(report.at, false),
                seen(report),
            ]);
        }
        out.push_str(&format!(
            "{replicas}
"
        ));
        for report in status {
            if let Some(error) = &report.error {
                out.push_str(&format!(
                    "{} refused generation {}: {}\n",
                    clean(&report.replica),
                    report.generation,
                    clean(error)
                ));
            }
        }
    }
    if texts {
        for (name, text) in &set.files {
            out.push_str(&format!("\n--- {} ---\n{}", clean(name), clean_lines(text)));
            if !text.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    out
}

/// Whether a replica is alive: `live`, or `dead since` when it was last seen.
fn seen(report: &ReplicaPolicyStatus) -> String {
    if report.live {
        "live".to_owned()
    } else {
        format!("dead since {}", format_utc(report.seen_at, false))
    }
}

/// `policy push --wait`: `pushed`, then each live replica's outcome for `generation`; and how
/// many refused it and how many did not report it.
pub(crate) fn push_outcomes(
    live: &[ReplicaPolicyStatus],
    generation: i64,
    pushed: String,
    json: bool,
) -> (String, usize, usize) {
    let mut out = pushed;
    let (mut refused, mut silent) = (0, 0);
    let mut outcomes = table(["replica", "outcome", "runs"]);
    let mut refusals = String::new();
    for report in live {
        let runs = report
            .running
            .map_or_else(|| "-".to_owned(), |at| at.to_string());
        let outcome = if report.generation < generation {
            silent += 1;
            "not reported"
        } else if report.generation > generation {
            // A later push reached it first: this one is superseded there.
            "given a later set"
        } else if report.applied {
            "applied"
        } else {
            refused += 1;
            if let Some(error) = &report.error {
                refusals.push_str(&format!(
                    "{} refused generation {generation}: {}\n",
                    clean(&report.replica),
                    clean(error)
                ));
            }
            "refused"
        };
        if json {
            out.push_str(&json_line(&serde_json::json!({
                "replica": report.replica,
                "outcome": outcome,
                "generation": report.generation,
                "running": report.running,
                "error": report.error,
            })));
        } else {
            outcomes.add_row([clean(&report.replica), outcome.to_owned(), runs]);
        }
    }
    if !json && !live.is_empty() {
        out.push_str(&format!("{outcomes}\n{refusals}"));
    }
    (out, refused, silent)
}

/// One JSON object, on one line, with its times in RFC 3339 UTC.
pub(crate) fn json_line(record: &impl Serialize) -> String {
    let mut value = serde_json::to_value(record).unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut value {
        for field in fields.values_mut() {
            if let Some(at) = time_of(field) {
                *field = Value::String(format_utc(at, true));
            }
        }
    }
    format!("{value}\n")
}

fn json_lines<T: Serialize>(records: &[T]) -> String {
    records.iter().map(json_line).collect()
}

/// A `SystemTime` as serde writes it: `{"secs_since_epoch": .., "nanos_since_epoch": ..}`.
fn time_of(value: &Value) -> Option<SystemTime> {
    let fields = value.as_object()?;
    if fields.len() != 2 {
        return None;
    }
    let secs = fields.get("secs_since_epoch")?.as_u64()?;
    let nanos = u32::try_from(fields.get("nanos_since_epoch")?.as_u64()?).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
}

fn table<const N: usize>(header: [&str; N]) -> Table {
    let mut table = Table::new();
    table.load_style(presets::ASCII_FULL_CONDENSED);
    table.set_header(header);
    table
}

fn optional(text: Option<&str>) -> String {
    text.map_or_else(|| "-".to_owned(), clean)
}

/// Text from the database as a cell: control characters (a terminal's escape sequences,
/// which an agent's arguments could carry into a question, NUL, line breaks) and characters
/// that print as nothing or reorder what follows (bidi controls, zero-width and other format
/// characters) are written escaped (`\u{202e}`), so that a cell reads as what it holds.
pub(crate) fn clean(text: &str) -> String {
    escape(text, false)
}

/// A whole text (a policy file) for the terminal: as [`clean`], but its line breaks and tabs
/// are kept (a carriage return is escaped: it would let a line overwrite itself).
pub(crate) fn clean_lines(text: &str) -> String {
    escape(text, true)
}

fn escape(text: &str, keep_lines: bool) -> String {
    let hostile = |c: char| {
        !(keep_lines && matches!(c, '\n' | '\t'))
            && (c.is_control()
                // What Rust's `escape_debug` escapes beyond quotes and backslashes: characters
                // that are not printable (format characters such as bidi controls and
                // zero-width ones, unassigned ones) and combining marks.
                || (!matches!(c, '"' | '\'' | '\\') && c.escape_debug().len() > 1))
    };
    if !text.chars().any(hostile) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if hostile(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `text` cut to `width` characters at most, the last one `…` when it was cut.
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(width.saturating_sub(1)).collect();
    short.push('…');
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_and_control_characters_escaped() {
        assert_eq!(cut("short", 60), "short");
        let long = "x".repeat(100);
        let short = cut(&long, 60);
        assert_eq!(short.chars().count(), 60);
        assert!(short.ends_with('…'));
        assert_eq!(clean("a\u{1b}[31mb\nc"), "a\\u{1b}[31mb\\nc");
        assert_eq!(
            clean("x\u{202e}y\u{200b}z\0é \"'\\"),
            "x\\u{202e}y\\u{200b}z\\u{0}é \"'\\"
        );
        assert_eq!(clean_lines("a\n\tb\r\u{2066}"), "a\n\tb\\r\\u{2066}");
    }

    #[test]
    fn times_in_json_are_rfc3339() {
        #[derive(Serialize)]
        struct Record {
            at: SystemTime,
            name: &'static str,
        }
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(86_400);
        let line = json_line(&Record { at, name: "x" });
        assert_eq!(
            line,
            "{\"at\":\"1970-01-02T00:00:00.000000Z\",\"name\":\"x\"}\n"
        );
    }
}
