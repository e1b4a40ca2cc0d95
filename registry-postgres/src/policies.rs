//! Cedar policy sets across replicas: a set pushed once (`registry-admin policy push DIR`,
//! [`ControlPlane::push_policies`]) is carried by the change feed to every replica, which
//! validates it before it switches ([`ChangeFeed::on_policies`]) and reports what it did.
//!
//! This crate knows no Cedar: a set travels as named texts, `(file name, Cedar text)`, and
//! the validation is the application's (`registry_cedar::CedarPolicies::reload_files`).
//!
//! [`ChangeFeed::on_policies`]: crate::ChangeFeed::on_policies

use std::fmt::Write as _;
use std::time::SystemTime;

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use tokio_postgres::Row;

use crate::changes::{NewChange, insert_change, lock_order};
use crate::error::Error;
use crate::plane::ControlPlane;
use crate::records::RecordedKind;
use crate::text;

/// The most files one policy set holds.
pub const MAX_POLICY_FILES: usize = 256;

/// The longest file name of a policy set, in bytes (`[A-Za-z0-9._-]`, ending `.cedar`).
pub const MAX_POLICY_NAME_LEN: usize = 100;

/// The largest text of one policy file, in bytes (1 MiB).
pub const MAX_POLICY_FILE_BYTES: usize = 1 << 20;

/// The largest policy set, all its texts together, in bytes (4 MiB).
pub const MAX_POLICY_SET_BYTES: usize = 4 << 20;

/// The longest refusal a replica records, in characters; the rest is cut with `…`.
const MAX_REFUSAL_CHARS: usize = 16 * 1024;

/// One Cedar policy set pushed to the replicas: a row of `registry_policy_sets`.
///
/// ```no_run
/// # async fn show(plane: registry_postgres::ControlPlane) -> Result<(), registry_postgres::Error> {
/// if let Some(set) = plane.policies().await? {
///     println!("generation {} ({}), pushed by {}", set.generation, set.digest, set.origin);
///     for (name, text) in &set.files {
///         println!("  {name}: {} bytes", text.len());
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct PolicySetRecord {
    /// Its place in the order the sets were pushed in, from 1; the newest is the one every
    /// replica should run.
    pub generation: i64,
    /// When it was pushed.
    pub at: SystemTime,
    /// The SHA-256 of its files, in lowercase hexadecimal ([`policy_digest`]).
    pub digest: String,
    /// Who pushed it: a replica's name, or `registry-admin` and the operator's user.
    pub origin: String,
    /// Its files, `(name, Cedar text)`, in name order.
    pub files: Vec<(String, String)>,
}

/// What one replica did with the newest policy set it was given: a row of
/// `registry_policy_status`.
///
/// ```no_run
/// # async fn show(plane: registry_postgres::ControlPlane) -> Result<(), registry_postgres::Error> {
/// for status in plane.policy_status().await? {
///     match &status.error {
///         None => println!("{} runs generation {}", status.replica, status.generation),
///         Some(why) => println!(
///             "{} refused generation {} ({why}) and runs {:?}",
///             status.replica, status.generation, status.running
///         ),
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ReplicaPolicyStatus {
    /// The replica.
    pub replica: String,
    /// The generation it was given.
    pub generation: i64,
    /// Whether it validated that generation and switches to it.
    pub applied: bool,
    /// Why it refused it (its validation's words, NUL written as `\u{0}`, at most 16 Ki
    /// characters); `None` when it applied it.
    pub error: Option<String>,
    /// The generation it runs: the last one it applied since it started following, if any
    /// (a replica that refused its first keeps the policies it started with).
    pub running: Option<i64>,
    /// When it reported.
    pub at: SystemTime,
    /// When the replica was last seen running: its feed refreshes this while it runs.
    pub seen_at: SystemTime,
    /// Whether it was seen within [`POLICY_STATUS_TTL`]: `false` for a replica that has
    /// stopped (or lost the database), whose row the retention deletes in time.
    pub live: bool,
}

/// How long a replica's policy status counts as live without being refreshed: 60 s. A
/// replica whose feed validates policy sets refreshes it every 20 heartbeats (5 s by
/// default), at most every 20 s; `registry-admin policy show` marks the others dead, and
/// `policy push --wait` waits for the live ones only.
pub const POLICY_STATUS_TTL: std::time::Duration = std::time::Duration::from_secs(60);

/// The SHA-256, in lowercase hexadecimal, of `files` in name order: for each file, its name,
/// a NUL byte, the length of its text in bytes as 8 bytes big-endian, and the text. Neither a
/// name nor a text of a valid set holds NUL, so two different sets never share these bytes.
///
/// ```
/// use registry_postgres::policy_digest;
///
/// let one = policy_digest(&[("a.cedar".into(), "permit(principal, action, resource);".into())]);
/// assert_eq!(one.len(), 64);
/// // Name order, whatever order they were given in.
/// let files = [("b.cedar".to_owned(), "x".to_owned()), ("a.cedar".to_owned(), "y".to_owned())];
/// let mut sorted = files.clone();
/// sorted.sort();
/// assert_eq!(policy_digest(&files), policy_digest(&sorted));
/// ```
pub fn policy_digest(files: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut hasher = Sha256::new();
    for (name, text) in sorted {
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update((text.len() as u64).to_be_bytes());
        hasher.update(text.as_bytes());
    }
    let mut hex = String::with_capacity(64);
    for byte in hasher.finalize() {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// Checks `files` against the bounds of a policy set: at least one file and at most
/// [`MAX_POLICY_FILES`]; each name `[A-Za-z0-9._-]`, at most [`MAX_POLICY_NAME_LEN`] bytes,
/// ending `.cedar`, and no two alike; each text at most [`MAX_POLICY_FILE_BYTES`], all of
/// them at most [`MAX_POLICY_SET_BYTES`]; no NUL anywhere. What
/// [`ControlPlane::push_policies`] checks before it records anything.
///
/// ```
/// use registry_postgres::check_policy_files;
///
/// let good = [("base.cedar".to_owned(), "permit(principal, action, resource);".to_owned())];
/// assert!(check_policy_files(&good).is_ok());
/// let bad = [("base.txt".to_owned(), String::new())];
/// let error = check_policy_files(&bad).unwrap_err().to_string();
/// assert!(error.contains("base.txt"), "{error}");
/// ```
pub fn check_policy_files(files: &[(String, String)]) -> Result<(), Error> {
    let invalid = |file: Option<&str>, problem: String| Error::InvalidPolicySet {
        file: file.map(str::to_owned),
        problem,
    };
    if files.is_empty() {
        return Err(invalid(
            None,
            "the policy set has no file; give at least one `.cedar` file".to_owned(),
        ));
    }
    if files.len() > MAX_POLICY_FILES {
        return Err(invalid(
            None,
            format!(
                "the policy set has {} files, more than {MAX_POLICY_FILES}; merge some of them",
                files.len()
            ),
        ));
    }
    let mut names: Vec<&str> = Vec::with_capacity(files.len());
    let mut total = 0usize;
    for (name, body) in files {
        let good_chars = name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if name.is_empty()
            || name.len() > MAX_POLICY_NAME_LEN
            || !good_chars
            || !name.ends_with(".cedar")
        {
            return Err(invalid(
                Some(name),
                format!(
                    "a policy file's name is 1 to {MAX_POLICY_NAME_LEN} letters, digits, `.`, `_` \
                     or `-`, ending `.cedar`; rename it (base.cedar, tools-read.cedar)"
                ),
            ));
        }
        if let Some(at) = body.find('\0') {
            return Err(invalid(
                Some(name),
                format!("its text holds a NUL byte (at byte {at}); remove it"),
            ));
        }
        if body.len() > MAX_POLICY_FILE_BYTES {
            return Err(invalid(
                Some(name),
                format!(
                    "its text is {} bytes, more than {MAX_POLICY_FILE_BYTES} (1 MiB); split it \
                     into several files",
                    body.len()
                ),
            ));
        }
        total += body.len();
        names.push(name);
    }
    if total > MAX_POLICY_SET_BYTES {
        return Err(invalid(
            None,
            format!(
                "the policy set's texts are {total} bytes together, more than \
                 {MAX_POLICY_SET_BYTES} (4 MiB); make it smaller"
            ),
        ));
    }
    names.sort_unstable();
    if let Some(twice) = names.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(invalid(
            Some(twice[0]),
            "two files have this name; give each its own".to_owned(),
        ));
    }
    Ok(())
}

const SET_COLUMNS: &str = "SELECT generation, at, digest, origin, files FROM registry_policy_sets";

const STATUS_COLUMNS: &str = "SELECT replica, generation, outcome, error, running, at, seen_at,
            seen_at >= now() - make_interval(secs => $1) FROM registry_policy_status";

fn set_of(row: &Row) -> Result<PolicySetRecord, Error> {
    let generation: i64 = row.get(0);
    let corrupt = || Error::Corrupt {
        table: "registry_policy_sets",
        detail: format!("the files of generation {generation} are not [{{name, text}}, ...]"),
    };
    let files: Value = row.get(4);
    let files = files
        .as_array()
        .ok_or_else(corrupt)?
        .iter()
        .map(|file| {
            let name = file.get("name").and_then(Value::as_str);
            let body = file.get("text").and_then(Value::as_str);
            match (name, body) {
                (Some(name), Some(body)) => Ok((name.to_owned(), body.to_owned())),
                _ => Err(corrupt()),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PolicySetRecord {
        generation,
        at: row.get(1),
        digest: row.get(2),
        origin: row.get(3),
        files,
    })
}

fn status_of(row: &Row) -> ReplicaPolicyStatus {
    let outcome: String = row.get(2);
    ReplicaPolicyStatus {
        replica: row.get(0),
        generation: row.get(1),
        applied: outcome == "applied",
        error: row.get(3),
        running: row.get(4),
        at: row.get(5),
        seen_at: row.get(6),
        live: row.get(7),
    }
}

impl ControlPlane {
    /// Pushes a Cedar policy set to every replica, as `origin` (`registry-admin (alice)`, or
    /// this plane's [`replica`](Self::replica) name): checks its bounds
    /// ([`check_policy_files`]), then, in one transaction, records it as the next generation
    /// with its digest ([`policy_digest`]) and a change of kind
    /// [`Policies`](crate::RecordedKind::Policies) naming it, and announces it. Returns the
    /// generation.
    ///
    /// Each replica whose [`ChangeFeed`](crate::ChangeFeed) has a validation
    /// ([`on_policies`](crate::ChangeFeed::on_policies)) validates the set within moments and
    /// switches to it, or keeps its own and reports why ([`policy_status`](Self::policy_status)).
    /// A set out of bounds is refused ([`Error::InvalidPolicySet`]) and nothing is recorded.
    /// Files are kept in name order, whatever order they come in.
    ///
    /// Every replica must run a version of this crate that knows the `policies` change kind
    /// (schema version 12) before a set is pushed: an older one cannot read the change, and
    /// holds its calls.
    ///
    /// ```no_run
    /// # async fn push(plane: registry_postgres::ControlPlane) -> Result<(), registry_postgres::Error> {
    /// let files = vec![(
    ///     "base.cedar".to_owned(),
    ///     "permit(principal, action, resource);".to_owned(),
    /// )];
    /// let generation = plane.push_policies(files, plane.replica()).await?;
    /// println!("pushed generation {generation}");
    /// # Ok(()) }
    /// ```
    pub async fn push_policies(
        &self,
        files: impl IntoIterator<Item = (String, String)>,
        origin: &str,
    ) -> Result<i64, Error> {
        let mut files: Vec<(String, String)> = files.into_iter().collect();
        check_policy_files(&files)?;
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let digest = policy_digest(&files);
        let stored = Value::Array(
            files
                .iter()
                .map(|(name, body)| json!({"name": name, "text": body}))
                .collect(),
        );
        let reason = format!(
            "policy set of {} file{}, sha256 {digest}",
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        );
        self.timed("pushing a policy set", async {
            let mut client = self.client().await?;
            let transaction = client
                .transaction()
                .await
                .map_err(Error::db("pushing a policy set"))?;
            lock_order(&transaction).await?;
            let row = transaction
                .query_one(
                    "INSERT INTO registry_policy_sets (generation, files, digest, origin)
                     SELECT COALESCE(max(generation), 0) + 1, $1, $2, $3 FROM registry_policy_sets
                     RETURNING generation",
                    &[&stored, &digest, &text::text(origin)],
                )
                .await
                .map_err(Error::db("recording a policy set"))?;
            let generation: i64 = row.get(0);
            let mut change = NewChange::plain("", RecordedKind::Policies, &reason, origin);
            change.policies = Some(generation);
            insert_change(&transaction, &change).await?;
            transaction
                .commit()
                .await
                .map_err(Error::db("committing a policy set"))?;
            Ok(generation)
        })
        .await
    }

    /// The newest policy set pushed, if any: the one every replica should run.
    pub async fn policies(&self) -> Result<Option<PolicySetRecord>, Error> {
        self.timed("reading the policy set", async {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    &format!("{SET_COLUMNS} ORDER BY generation DESC LIMIT 1"),
                    &[],
                )
                .await
                .map_err(Error::db("reading the policy set"))?;
            row.as_ref().map(set_of).transpose()
        })
        .await
    }

    /// What every replica reported of the policy sets it was given, by replica name.
    pub async fn policy_status(&self) -> Result<Vec<ReplicaPolicyStatus>, Error> {
        self.timed("reading the replicas' policy status", async {
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!("{STATUS_COLUMNS} ORDER BY replica"),
                    &[&POLICY_STATUS_TTL.as_secs_f64()],
                )
                .await
                .map_err(Error::db("reading the replicas' policy status"))?;
            Ok(rows.iter().map(status_of).collect())
        })
        .await
    }

    /// Records what this replica did with policy set `generation`: applied it (`refusal`
    /// `None`) or refused it, and the generation it runs.
    pub(crate) async fn report_policy_status(
        &self,
        generation: i64,
        refusal: Option<&str>,
        running: Option<i64>,
    ) -> Result<(), Error> {
        let replica = text::text(self.replica());
        let outcome = if refusal.is_some() {
            "refused"
        } else {
            "applied"
        };
        let error = refusal.map(|why| text::owned(cut(why, MAX_REFUSAL_CHARS)));
        self.timed("reporting the policy status", async {
            let client = self.client().await?;
            client
                .execute(
                    "INSERT INTO registry_policy_status
                        (replica, generation, outcome, error, running, at, seen_at)
                     VALUES ($1, $2, $3, $4, $5, now(), now())
                     ON CONFLICT (replica) DO UPDATE
                        SET generation = EXCLUDED.generation, outcome = EXCLUDED.outcome,
                            error = EXCLUDED.error, running = EXCLUDED.running, at = now(),
                            seen_at = now()",
                    &[&replica, &generation, &outcome, &error, &running],
                )
                .await
                .map_err(Error::db("reporting the policy status"))?;
            Ok(())
        })
        .await
    }

    /// Marks this replica's policy status as seen now (the feed calls it while it runs), so
    /// that it counts as live ([`POLICY_STATUS_TTL`]) and the retention keeps it.
    pub(crate) async fn refresh_policy_status(&self) -> Result<(), Error> {
        let replica = text::text(self.replica());
        self.timed("refreshing the policy status", async {
            let client = self.client().await?;
            client
                .execute(
                    "UPDATE registry_policy_status SET seen_at = now() WHERE replica = $1",
                    &[&replica],
                )
                .await
                .map_err(Error::db("refreshing the policy status"))?;
            Ok(())
        })
        .await
    }

    /// Deletes every policy set but the newest `keep` (at least one is always kept: the one
    /// replicas run); returns how many were deleted. Besides, the retention
    /// ([`prune`](Self::prune)) deletes the sets pushed before its cutoff, but the newest and
    /// those a live replica runs.
    ///
    /// ```no_run
    /// # async fn prune(plane: registry_postgres::ControlPlane) -> Result<(), registry_postgres::Error> {
    /// let deleted = plane.prune_policy_sets(10).await?;
    /// println!("{deleted} old policy sets deleted");
    /// # Ok(()) }
    /// ```
    pub async fn prune_policy_sets(&self, keep: usize) -> Result<u64, Error> {
        let keep = i64::try_from(keep.max(1)).unwrap_or(i64::MAX);
        self.timed("pruning policy sets", async {
            let client = self.client().await?;
            client
                .execute(
                    "DELETE FROM registry_policy_sets WHERE generation <= (
                         SELECT generation FROM registry_policy_sets
                          ORDER BY generation DESC OFFSET $1 LIMIT 1)",
                    &[&keep],
                )
                .await
                .map_err(Error::db("pruning policy sets"))
        })
        .await
    }
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

    fn file(name: &str, body: &str) -> (String, String) {
        (name.to_owned(), body.to_owned())
    }

    #[test]
    fn the_bounds_name_the_file_and_the_fix() {
        assert!(
            check_policy_files(&[file(
                "a-b_c.1.cedar",
                "permit(principal, action, resource);"
            )])
            .is_ok()
        );
        let message =
            |files: &[(String, String)]| check_policy_files(files).unwrap_err().to_string();
        assert!(message(&[]).contains("no file"));
        let nul = message(&[file("a.cedar", "per\0mit")]);
        assert!(
            nul.starts_with("policy file \"a.cedar\": its text holds a NUL byte (at byte 3)"),
            "{nul}"
        );
        assert!(message(&[file("a b.cedar", "")]).contains("rename it"));
        assert!(message(&[file("a.txt", "")]).contains("ending `.cedar`"));
        assert!(message(&[file(&format!("{}.cedar", "a".repeat(95)), "")]).contains("rename it"));
        // A NUL or a bidi control in a name is refused, and written escaped.
        let named = message(&[file("a\0\u{202e}.cedar", "")]);
        assert!(named.contains("\"a\\0\\u{202e}.cedar\""), "{named}");
        let many: Vec<_> = (0..=MAX_POLICY_FILES)
            .map(|i| file(&format!("p{i}.cedar"), ""))
            .collect();
        assert!(message(&many).contains("257 files"));
        let big = "x".repeat(MAX_POLICY_FILE_BYTES + 1);
        assert!(message(&[file("big.cedar", &big)]).contains("split it"));
        let quarter = "x".repeat(MAX_POLICY_FILE_BYTES);
        let five: Vec<_> = (0..5)
            .map(|i| file(&format!("p{i}.cedar"), &quarter))
            .collect();
        assert!(message(&five).contains("4 MiB"));
        assert!(message(&[file("a.cedar", ""), file("a.cedar", "")]).contains("two files"));
    }

    #[test]
    fn the_digest_depends_on_names_and_texts_not_order() {
        let a = policy_digest(&[file("a.cedar", "x"), file("b.cedar", "y")]);
        assert_eq!(
            a,
            policy_digest(&[file("b.cedar", "y"), file("a.cedar", "x")])
        );
        assert_ne!(
            a,
            policy_digest(&[file("a.cedar", "y"), file("b.cedar", "x")])
        );
        assert_ne!(
            policy_digest(&[file("a.cedar", "xb.cedar")]),
            policy_digest(&[file("a.cedar", "x"), file("b.cedar", "")])
        );
        assert!(
            a.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_eq!(a.len(), 64);
    }
}
