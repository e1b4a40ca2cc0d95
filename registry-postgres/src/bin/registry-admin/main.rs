//! `registry-admin`: the operators' command for the control plane that the replicas of a
//! registry share (see the [`registry_postgres`] crate). It needs no running server, only
//! the database: every replica following the change feed sees what it records.
//!
//! The database is given with the `DATABASE_URL` environment variable, `--database-url-file
//! FILE` (its first line), or `--database URL` for a URL without a password: a command line
//! is readable by every process of the same user (`/proc/PID/cmdline`), so a URL with a
//! password there is refused. Connecting applies the control plane's schema if the database
//! lacks it.
//!
//! ```text
//! export DATABASE_URL='postgres://registry@db.internal/registry?sslmode=verify-full&sslrootcert=/etc/registry/db-ca.pem'
//!
//! # An incident: every replica stops calling `deploy` within moments.
//! registry-admin revoke deploy --reason "incident 4711"
//! # ... and brings it back, for runs opened from now on.
//! registry-admin restore deploy --reason "incident 4711 closed"
//! registry-admin changes                      # the newest 50 changes
//! registry-admin changes --since-seq 120      # the changes after #120
//!
//! # Approvals waiting on a person, and a verdict on one of them.
//! registry-admin approvals --pending
//! registry-admin approve apr_0123456789abcdef0123456789abcdef --as alice
//! registry-admin deny apr_0123456789abcdef0123456789abcdef --reason "not on a Friday"
//!
//! # The audit trail of every replica.
//! registry-admin audit --since 2h --tool deploy --kind call
//! registry-admin audit --since 2026-11-30T12:00:00Z --json | jq .outcome
//!
//! # Upstream MCP servers the replicas federate: what they withhold, and accepting it.
//! # (each offer with the definition's digest and its text, escaped).
//! registry-admin upstream list notes
//! # Accept exactly the definition reviewed: refused if the offer changed since.
//! registry-admin upstream accept notes --tool notes_echo --digest sha256:5e1f...
//!
//! # Cedar policy sets: every replica validates the pushed set and switches to it, or keeps
//! # its own and reports why.
//! registry-admin policy push ./policies --wait   # exit 1 if a live replica refused it
//! registry-admin policy show --text
//!
//! # Bound the tables: delete audit events, superseded changes, decided requests, ended
//! # tasks, old policy sets and dead replicas' rows older than 90 days (never younger than 7
//! # days without --force; each prune is recorded in the audit trail first). Replicas whose
//! # role may prune do it by default after 30 days; with roles, schedule this command.
//! registry-admin prune --older-than 90d
//!
//! # Once, as the database's owner: the roles replicas and registry-admin connect with.
//! registry-admin --database 'postgres://owner@db.internal/registry?sslmode=verify-full&sslrootcert=/etc/registry/db-ca.pem' init-roles
//! ```
//!
//! Roles: replicas connect as members of the replica role (`<database>_replica`), which may
//! do a replica's work and nothing more; `registry-admin` connects as a member of the admin
//! role (`<database>_admin`). Pushing a policy set, accepting an upstream tool, a verdict and
//! pruning with a replica's URL are refused by PostgreSQL.
//!
//! Lists print as tables, or with `--json` as one JSON object per line (times in RFC 3339,
//! UTC). Exit codes: 0 done; 1 refused (a tool no replica has, nothing to restore, a request
//! already decided, expired or unknown) or the database failed; 2 a usage error. `revoke`
//! checks the name against the tools the replicas recorded when they started following the
//! change feed, and suggests the closest; `--force` records it anyway.

mod policy;
mod show;
mod time;

use std::io::Write;
use std::process::ExitCode;
use std::time::SystemTime;

use clap::{Parser, Subcommand};
use registry_core::approval::Verdict;
use registry_postgres::{
    ApprovalFilter, AuditFilter, ControlPlane, Error, RecordedKind, VerdictOutcome,
};
use serde_json::json;

/// The operators' command for a registry's shared control plane: revoke and restore tools
/// on every replica, decide approval requests, push Cedar policy sets, read the change log
/// and the audit trail.
#[derive(Debug, Parser)]
#[command(name = "registry-admin", version)]
struct Cli {
    /// The control plane's database URL, without a password (else `DATABASE_URL` or
    /// `--database-url-file`).
    #[arg(
        long,
        help = "The control plane's database, if its URL has no password: postgres://USER@HOST[:PORT]/DATABASE, with ?sslmode=verify-full&sslrootcert=CA.pem for TLS (without sslmode: plaintext). A URL with a password goes in the DATABASE_URL environment variable or in --database-url-file (a command line is readable by every process of this user); without either flag, DATABASE_URL is used",
        global = true,
        value_name = "URL",
        conflicts_with = "database_url_file"
    )]
    database: Option<String>,
    /// A file whose first line is the control plane's database URL.
    #[arg(long, global = true, value_name = "FILE")]
    database_url_file: Option<std::path::PathBuf>,
    /// Print records as JSON lines instead of tables.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Revoke a tool on every replica: they stop calling it within moments, and runs that
    /// were shown it get a Revoked error.
    Revoke {
        /// The tool.
        #[arg(value_parser = not_empty)]
        name: String,
        /// Why (kept in the change log).
        #[arg(long, value_parser = not_empty)]
        reason: String,
        /// Record it even if no replica has a tool of that name (one started later might).
        #[arg(long)]
        force: bool,
    },
    /// Bring a revoked tool back on every replica, for runs opened from now on.
    Restore {
        /// The tool.
        #[arg(value_parser = not_empty)]
        name: String,
        /// Why (kept in the change log).
        #[arg(long, value_parser = not_empty)]
        reason: Option<String>,
    },
    /// The change log: revocations, restorations and replacements, in order.
    Changes {
        /// Only the changes after this sequence number (default: the newest ones).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(i64).range(0..))]
        since_seq: Option<i64>,
        /// At most this many.
        #[arg(long, value_name = "N", default_value_t = 50, value_parser = limit())]
        limit: i64,
    },
    /// Approval requests, newest first.
    Approvals {
        /// Only those still waiting for a decision.
        #[arg(long)]
        pending: bool,
        /// At most this many.
        #[arg(long, value_name = "N", default_value_t = 50, value_parser = limit())]
        limit: i64,
    },
    /// Approve a pending request: the replica whose client waits on it runs the call once.
    Approve {
        /// The request's id (apr_...).
        #[arg(value_parser = not_empty)]
        id: String,
        /// Who approves (kept with the decision).
        #[arg(long = "as", value_name = "WHO", value_parser = not_empty)]
        by: String,
    },
    /// Deny a pending request: nothing runs.
    Deny {
        /// The request's id (apr_...).
        #[arg(value_parser = not_empty)]
        id: String,
        /// Why (the agent is told).
        #[arg(long, value_parser = not_empty)]
        reason: String,
        /// Who denies (default: the OS user).
        #[arg(long = "as", value_name = "WHO", value_parser = not_empty)]
        by: Option<String>,
    },
    /// The audit trail of every replica, newest first.
    Audit {
        /// Only events from this time on: 2026-11-30T12:00:00Z, or back from now: 15m, 2h, 1d.
        #[arg(long, value_name = "TIME", value_parser = time::parse_since)]
        since: Option<SystemTime>,
        /// Only events about this tool.
        #[arg(long, value_name = "NAME")]
        tool: Option<String>,
        /// Only events of this kind.
        #[arg(long, value_parser = ["call", "approval", "change", "projection", "readiness", "dropped", "unwritable", "prune", "other"])]
        kind: Option<String>,
        /// At most this many.
        #[arg(long, value_name = "N", default_value_t = 50, value_parser = limit())]
        limit: i64,
    },
    /// Upstream MCP servers the replicas federate: the tools they withhold for a change or
    /// as new, and accepting them.
    Upstream {
        #[command(subcommand)]
        command: UpstreamCommand,
    },
    /// Cedar policy sets: push one to every replica (each validates it before it switches,
    /// and keeps its own if it cannot), and show the newest with what each replica did.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Delete what is older than a duration: audit events, approval requests decided or
    /// expired, revocations and restorations a later one of the same tool supersedes and
    /// policy pushes a later push supersedes (replacements and every tool's newest change are
    /// kept, for replicas catching up), dead replicas' upstream offers and policy status,
    /// ended tasks, policy sets but the newest and those a replica runs, and quota buckets
    /// full again.
    /// Records younger than 7 days are kept unless --force. The prune is recorded in the
    /// audit trail (kind `prune`: who, the cutoff, what it deleted) before it deletes.
    Prune {
        /// How old a record must be to go: 90s, 15m, 2h, 30d (at least 7d without --force).
        #[arg(long, value_name = "DURATION", value_parser = time::parse_duration)]
        older_than: std::time::Duration,
        /// Prune below the floor of 7 days.
        #[arg(long)]
        force: bool,
    },
    /// Create the control plane's two roles (NOLOGIN) if they do not exist, and grant each
    /// exactly its privileges: the replica role (default `<database>_replica`) a replica's
    /// work; the admin role (default `<database>_admin`) every table. Run it as the
    /// database's owner (a user with CREATEROLE); then make the login roles members:
    /// `GRANT <database>_replica TO api_1;` for each replica's user,
    /// `GRANT <database>_admin TO ops;` for registry-admin's.
    InitRoles {
        /// The replica role's name (default: the one recorded, or `<database>_replica`).
        #[arg(long, value_name = "ROLE", requires = "admin_role")]
        replica_role: Option<String>,
        /// The admin role's name (default: the one recorded, or `<database>_admin`).
        #[arg(long, value_name = "ROLE", requires = "replica_role")]
        admin_role: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Push every `*.cedar` file of DIR, in name order, as the next policy set; prints its
    /// generation and digest. At most 256 files, each named with letters, digits, `.`, `_`
    /// or `-` (at most 100, ending `.cedar`), UTF-8 without NUL, at most 1 MiB, 4 MiB in all.
    Push {
        /// The directory of `.cedar` files.
        #[arg(value_name = "DIR")]
        dir: std::path::PathBuf,
        /// Prune the policy sets older than the newest N after pushing (default: keep all).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        keep: Option<u32>,
        /// Then wait (30s, or DURATION: 90s, 2m) for every live replica to report the set,
        /// print each one's outcome, and exit 1 when one refused it or did not report it in
        /// time (the fleet is then mixed: that replica keeps the policies it runs).
        #[arg(
            long,
            value_name = "DURATION",
            num_args = 0..=1,
            default_missing_value = "30s",
            value_parser = time::parse_duration
        )]
        wait: Option<std::time::Duration>,
    },
    /// The newest policy set (generation, digest, who pushed it and when, its files), then
    /// what each replica did with the sets it was given: applied, or refused and why.
    Show {
        /// Print the files' texts too.
        #[arg(long)]
        text: bool,
    },
}

#[derive(Debug, Subcommand)]
enum UpstreamCommand {
    /// The upstream tools the live replicas withhold for a change or as new: for each, the
    /// digest to pass to `upstream accept --digest`, and the definition offered (escaped).
    List {
        /// Only this upstream.
        name: Option<String>,
    },
    /// Accept exactly the definition reviewed: the offer of upstream NAME whose definition
    /// digest is --digest (as `upstream list` shows it). Refused, accepting nothing, when no
    /// live replica offers that digest now (the offer changed since it was reviewed).
    /// Every replica with that upstream pins and serves the tool whose offer has exactly
    /// that digest.
    Accept {
        /// The upstream, as its `name` in the upstreams file.
        #[arg(value_parser = not_empty)]
        name: String,
        /// The definition's digest, as `upstream list` shows it (sha256:...).
        #[arg(long, value_name = "DIGEST", value_parser = not_empty)]
        digest: String,
        /// The tool, by the registry's name (notes_echo); needed only when the digest is
        /// offered for several.
        #[arg(long, value_parser = not_empty)]
        tool: Option<String>,
        /// The annotations' digest reviewed; needed only when the definition is offered with
        /// several.
        #[arg(long, value_name = "DIGEST", value_parser = not_empty)]
        annotations: Option<String>,
    },
}

/// Why the command did not do what was asked.
enum Failure {
    /// Refused, or not found (exit code 1).
    Refused(String),
    /// The control plane failed (exit code 1).
    Plane(Error),
    /// Done, but not as asked (exit code 1): what to print, then why it failed.
    Partial(String, String),
    /// The command was not complete (exit code 2).
    Usage(String),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure::Plane(error)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let (message, code) = match run(cli).await {
        Ok(output) => match std::io::stdout().lock().write_all(output.as_bytes()) {
            Ok(()) => return ExitCode::SUCCESS,
            // Piped into `head`: what was asked for was done.
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                return ExitCode::SUCCESS;
            }
            Err(error) => (format!("cannot write the output: {error}"), 1),
        },
        Err(Failure::Refused(message)) => (message, 1),
        Err(Failure::Plane(error)) => (error.to_string(), 1),
        Err(Failure::Usage(message)) => (message, 2),
        Err(Failure::Partial(output, message)) => {
            let _ = std::io::stdout().lock().write_all(output.as_bytes());
            (message, 1)
        }
    };
    let _ = writeln!(std::io::stderr(), "error: {message}");
    ExitCode::from(code)
}

/// Does what `cli` asks; returns what to print.
async fn run(cli: Cli) -> Result<String, Failure> {
    let url = match (cli.database, cli.database_url_file) {
        (Some(url), _) if ControlPlane::url_has_password(&url) => {
            return Err(Failure::Usage(
                "--database: the URL holds a password (or cannot be read), and a command line \
                 is readable by every process of this user: give the URL in the DATABASE_URL \
                 environment variable or in a file with --database-url-file FILE"
                    .to_owned(),
            ));
        }
        (Some(url), _) => Some(url),
        (None, Some(path)) => Some(
            ControlPlane::url_from_file(&path)
                .map_err(|error| Failure::Usage(format!("--database-url-file: {error}")))?,
        ),
        (None, None) => std::env::var("DATABASE_URL").ok(),
    };
    let Some(url) = url.filter(|url| !url.trim().is_empty()) else {
        return Err(Failure::Usage(
            "no database: set DATABASE_URL (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE), \
             or pass --database-url-file FILE, or --database URL for a URL without a password"
                .to_owned(),
        ));
    };
    // An operator's command is not on a call's path: it waits longer for a busy database than
    // a replica's calls do (the plane's default, 2 s), before it gives up saying so.
    let plane = ControlPlane::builder(&url)
        .replica("registry-admin")
        .pool_size(2)
        .timeout(std::time::Duration::from_secs(15))
        // An operator's command prunes when asked (`prune`), never on its own.
        .no_retention()
        .connect()
        .await?;
    let json = cli.json;
    match cli.command {
        Command::Revoke {
            name,
            reason,
            force,
        } => {
            if !force {
                check_known(&plane, &name).await?;
            }
            revoke(&plane, &name, &reason, json).await
        }
        Command::Restore { name, reason } => restore(&plane, &name, reason, json).await,
        Command::Changes { since_seq, limit } => {
            let records = match since_seq {
                Some(after) => plane.changes(after, limit).await?,
                None => plane.newest_changes(limit).await?,
            };
            Ok(show::changes(&records, json))
        }
        Command::Approvals { pending, limit } => {
            let mut filter = ApprovalFilter::default();
            filter.pending = pending;
            filter.limit = Some(limit);
            Ok(show::approvals(&plane.approvals(&filter).await?, json))
        }
        Command::Approve { id, by } => verdict(&plane, &id, Verdict::approve().by(by), json).await,
        Command::Deny { id, reason, by } => {
            let by = match by.or_else(os_user) {
                Some(by) => by,
                None => {
                    return Err(Failure::Usage(
                        "who denies? pass --as WHO (neither USER nor LOGNAME is set)".to_owned(),
                    ));
                }
            };
            verdict(&plane, &id, Verdict::deny(reason).by(by), json).await
        }
        Command::Audit {
            since,
            tool,
            kind,
            limit,
        } => {
            let mut filter = AuditFilter::default();
            filter.since = since;
            filter.tool = tool;
            filter.kind = kind;
            filter.limit = Some(limit);
            Ok(show::audit(&plane.audit_events(&filter).await?, json))
        }
        Command::Prune { older_than, force } => prune(&plane, older_than, force, json).await,
        Command::InitRoles {
            replica_role,
            admin_role,
        } => {
            let names = match (replica_role, admin_role) {
                (Some(replica), Some(admin)) => {
                    Some(registry_postgres::Roles::named(replica, admin)?)
                }
                _ => None,
            };
            let (roles, created) = plane.init_roles(names.as_ref()).await?;
            Ok(show::roles(&roles, &created, json))
        }
        Command::Policy {
            command: PolicyCommand::Push { dir, keep, wait },
        } => push_policies(&plane, &dir, keep, wait, json).await,
        Command::Policy {
            command: PolicyCommand::Show { text },
        } => Ok(show::policies(
            plane.policies().await?.as_ref(),
            &plane.policy_status().await?,
            text,
            json,
        )),
        Command::Upstream {
            command: UpstreamCommand::List { name },
        } => Ok(show::upstream_offers(
            &plane.upstream_offers(name.as_deref()).await?,
            json,
        )),
        Command::Upstream {
            command:
                UpstreamCommand::Accept {
                    name,
                    digest,
                    tool,
                    annotations,
                },
        } => {
            let accepted = plane
                .accept_upstream(
                    &name,
                    tool.as_deref(),
                    &digest,
                    annotations.as_deref(),
                    &origin(),
                )
                .await
                .map_err(|error| match error {
                    Error::NotAccepted(why) => {
                        Failure::Refused(format!("{}; nothing was accepted", show::clean(&why)))
                    }
                    other => Failure::Plane(other),
                })?;
            Ok(show::upstream_acceptances(&[accepted], json))
        }
    }
}

async fn push_policies(
    plane: &ControlPlane,
    dir: &std::path::Path,
    keep: Option<u32>,
    wait: Option<std::time::Duration>,
    json: bool,
) -> Result<String, Failure> {
    let files = policy::read_dir(dir).map_err(Failure::Refused)?;
    let digest = registry_postgres::policy_digest(&files);
    let names: Vec<String> = files.iter().map(|(name, _)| name.clone()).collect();
    let origin = origin();
    let generation = plane.push_policies(files, &origin).await?;
    let pruned = match keep {
        Some(keep) => Some(plane.prune_policy_sets(keep as usize).await?),
        None => None,
    };
    let pushed = if json {
        show::json_line(&json!({
            "generation": generation,
            "digest": digest,
            "files": names,
            "origin": origin,
            "pruned": pruned,
        }))
    } else {
        let pruned = match pruned {
            Some(count) => format!("{count} older policy sets deleted.\n"),
            None => String::new(),
        };
        let then = if wait.is_some() {
            "Waiting for every live replica to validate it and switch to it, or to keep the \
             policies it runs and report why."
        } else {
            "Every replica following the change feed validates it within moments and switches \
             to it, or keeps the policies it runs and reports why: `registry-admin policy show`."
        };
        format!(
            "pushed policy set generation {generation}: {} file{}, sha256 {digest}\n{then}\n{pruned}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
        )
    };
    match wait {
        None => Ok(pushed),
        Some(limit) => wait_for_replicas(plane, generation, limit, pushed, json).await,
    }
}

/// `policy push --wait`: polls the live replicas' status until each has reported
/// `generation` (or a later one) or `limit` has passed; prints each one's outcome after
/// `pushed`. A refusal, a replica that did not report in time, or no live replica at all is
/// a failure (exit 1): the fleet does not run the pushed set everywhere.
async fn wait_for_replicas(
    plane: &ControlPlane,
    generation: i64,
    limit: std::time::Duration,
    pushed: String,
    json: bool,
) -> Result<String, Failure> {
    let deadline = tokio::time::Instant::now() + limit;
    let live = loop {
        let live: Vec<_> = plane
            .policy_status()
            .await?
            .into_iter()
            .filter(|status| status.live)
            .collect();
        let reported =
            !live.is_empty() && live.iter().all(|status| status.generation >= generation);
        if reported || tokio::time::Instant::now() >= deadline {
            break live;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    let (output, refused, silent) = show::push_outcomes(&live, generation, pushed, json);
    let waited = show_duration(limit);
    let failure = if live.is_empty() {
        Some(format!(
            "no live replica reported generation {generation} within {waited}: nothing is known \
             to run it (a replica reports once its feed has a validation, `ChangeFeed::on_policies`)"
        ))
    } else if refused + silent > 0 {
        Some(format!(
            "of {} live replicas, {refused} refused generation {generation} and {silent} did not \
             report it within {waited}: they keep the policies they run, so the fleet is mixed. \
             Fix the set and push it again, or upgrade those replicas",
            live.len()
        ))
    } else {
        None
    };
    match failure {
        Some(message) => Err(Failure::Partial(output, message)),
        None => Ok(output),
    }
}

async fn prune(
    plane: &ControlPlane,
    older_than: std::time::Duration,
    force: bool,
    json: bool,
) -> Result<String, Failure> {
    let pruned = if force {
        plane.prune_forced(older_than).await
    } else {
        plane.prune(older_than).await
    };
    let report = match pruned {
        Err(Error::BelowPruneFloor { floor, .. }) => {
            return Err(Failure::Refused(format!(
                "--older-than {} is below the floor of {}: records younger than that are kept; \
                 nothing was deleted. Pass --force to prune them anyway",
                show_duration(older_than),
                show_duration(floor)
            )));
        }
        other => other?,
    };
    let Some(report) = report else {
        return Err(Failure::Refused(
            "another replica or operator is pruning at the moment; nothing was deleted, try \
             again once it is done"
                .to_owned(),
        ));
    };
    if json {
        return Ok(show::json_line(&json!({
            "audit_events": report.audit_events,
            "changes": report.changes,
            "approvals": report.approvals,
            "offers": report.offers,
            "tasks": report.tasks,
            "policy_sets": report.policy_sets,
            "policy_status": report.policy_status,
            "quota_buckets": report.quota_buckets,
        })));
    }
    Ok(format!(
        "deleted {} audit events, {} superseded changes, {} decided or expired approval \
         requests, {} upstream offers of dead replicas, {} ended tasks, {} old policy sets, \
         {} policy status rows of dead replicas and {} quota buckets full again older than {}\n",
        report.audit_events,
        report.changes,
        report.approvals,
        report.offers,
        report.tasks,
        report.policy_sets,
        report.policy_status,
        report.quota_buckets,
        show_duration(older_than)
    ))
}

/// A duration as `--older-than` takes it: the largest whole unit.
fn show_duration(duration: std::time::Duration) -> String {
    let secs = duration.as_secs();
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60)] {
        if secs >= size && secs.is_multiple_of(size) {
            return format!("{}{unit}", secs / size);
        }
    }
    format!("{secs}s")
}

/// Refuses a name that no replica has: during an incident, a typo recorded as a revocation
/// would leave the real tool live.
async fn check_known(plane: &ControlPlane, name: &str) -> Result<(), Failure> {
    let known = plane.known_tools().await?;
    if known.iter().any(|(tool, _)| tool == name) {
        return Ok(());
    }
    if known.is_empty() {
        return Err(Failure::Refused(format!(
            "no replica has recorded its tools in this database yet (a replica does when it \
             starts following the change feed), so {name:?} cannot be checked; nothing was \
             recorded. Pass --force to record the revocation anyway"
        )));
    }
    let closest = known
        .iter()
        .map(|(tool, _)| (strsim::jaro_winkler(name, tool), tool))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, tool)| format!("did you mean {tool:?}? "))
        .unwrap_or_default();
    let names: Vec<&str> = known.iter().map(|(tool, _)| tool.as_str()).collect();
    Err(Failure::Refused(format!(
        "no replica has a tool named {name:?}; nothing was recorded. {closest}The replicas \
         have: {}. Pass --force to record it anyway (a replica started later with that tool \
         would apply it)",
        names.join(", ")
    )))
}

async fn revoke(
    plane: &ControlPlane,
    name: &str,
    reason: &str,
    json: bool,
) -> Result<String, Failure> {
    let origin = origin();
    let seq = plane.revoke(name, reason, &origin).await?;
    if json {
        return Ok(show::json_line(
            &json!({"seq": seq, "tool": name, "kind": "revoke", "reason": reason, "origin": origin}),
        ));
    }
    Ok(format!(
        "recorded change #{seq}: {name} revoked ({reason})\n\
         Every replica following the change feed stops calling {name} within moments; \
         runs that were shown it get a Revoked error.\n"
    ))
}

async fn restore(
    plane: &ControlPlane,
    name: &str,
    reason: Option<String>,
    json: bool,
) -> Result<String, Failure> {
    let latest = plane.latest_change_of(name).await?;
    if latest.as_ref().map(|change| change.kind) != Some(RecordedKind::Revoke) {
        let why = match latest {
            None => "no change was ever recorded for it".to_owned(),
            Some(change) => format!(
                "its latest change is #{} ({})",
                change.seq,
                change.kind.as_str()
            ),
        };
        return Err(Failure::Refused(format!(
            "{name} is not revoked: nothing to restore ({why})"
        )));
    }
    let reason = reason.unwrap_or_else(|| "restored with registry-admin".to_owned());
    let origin = origin();
    let seq = plane.restore(name, &reason, &origin).await?;
    if json {
        return Ok(show::json_line(
            &json!({"seq": seq, "tool": name, "kind": "restore", "reason": reason, "origin": origin}),
        ));
    }
    Ok(format!(
        "recorded change #{seq}: {name} restored ({reason})\n\
         Every replica following the change feed serves {name} again to runs opened from now on.\n"
    ))
}

async fn verdict(
    plane: &ControlPlane,
    id: &str,
    verdict: Verdict,
    json: bool,
) -> Result<String, Failure> {
    let outcome = plane.give_verdict(id, &verdict).await?;
    let by = verdict.decided_by().unwrap_or_default();
    let done = match (&outcome, verdict.reason()) {
        (VerdictOutcome::Given, None) => format!(
            "{id}: approved by {by}; the replica whose client waits on it runs the call once"
        ),
        (VerdictOutcome::Given, Some(reason)) => {
            format!("{id}: denied by {by} ({reason}); nothing runs")
        }
        (VerdictOutcome::AlreadyDecided { state }, _) => {
            return Err(Failure::Refused(format!(
                "{id} was already decided ({state}): nothing changed"
            )));
        }
        (VerdictOutcome::Expired, _) => {
            return Err(Failure::Refused(format!(
                "{id} expired undecided: nothing changed; the agent must ask again"
            )));
        }
        (VerdictOutcome::Unknown, _) => {
            return Err(Failure::Refused(format!(
                "no approval request has the id {id}"
            )));
        }
        // An outcome a newer library adds.
        (other, _) => return Err(Failure::Refused(format!("{id}: {other:?}"))),
    };
    if json {
        let word = if verdict.is_approval() {
            "approve"
        } else {
            "deny"
        };
        return Ok(show::json_line(
            &json!({"id": id, "verdict": word, "by": by, "outcome": "given"}),
        ));
    }
    Ok(format!("{done}\n"))
}

/// Who is at the keyboard: `$USER`, or `$LOGNAME`.
fn os_user() -> Option<String> {
    ["USER", "LOGNAME"]
        .into_iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|user| !user.trim().is_empty())
}

/// The origin of the changes this command records: `registry-admin (alice)`.
fn origin() -> String {
    match os_user() {
        Some(user) => format!("registry-admin ({user})"),
        None => "registry-admin".to_owned(),
    }
}

fn not_empty(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        Err("must not be empty".to_owned())
    } else {
        Ok(text.to_owned())
    }
}

fn limit() -> clap::builder::RangedI64ValueParser<i64> {
    clap::value_parser!(i64).range(1..=10_000)
}
