//! The database is not the authority: a replica connected with the replica role does a
//! replica's work (feed, its own changes, approvals, quotas, tasks, audit, offers, policy
//! status) and PostgreSQL itself refuses it a policy push, an upstream acceptance, a verdict
//! and a prune; the admin role does them. Every table of the schema has grants.

use std::time::Duration;

use registry_core::{DynamicTool, ErrorKind, ToolCall, ToolContext, approval::Verdict};
use registry_postgres::{AuditConfig, ControlPlane, Error, UpstreamOffer};
use serde_json::{Value, json};

use crate::common::{Counter, bounded, builder, call, cluster, plane, sql, subject};

const LIMIT: Duration = Duration::from_secs(90);

/// The database's name: the last segment of its URL.
fn database(url: &str) -> String {
    url.rsplit('/').next().unwrap().to_owned()
}

/// A login role `login`, member of `group`; the URL of the database as it.
async fn login(url: &str, login: &str, group: &str) -> String {
    sql(url)
        .await
        .batch_execute(&format!(
            "CREATE ROLE \"{login}\" LOGIN IN ROLE \"{group}\""
        ))
        .await
        .unwrap();
    url.replacen("postgres@", &format!("{login}@"), 1)
}

/// `result` is PostgreSQL's refusal for want of a privilege, said clearly.
fn assert_refused<T: std::fmt::Debug>(result: Result<T, Error>, user: &str, what: &str) {
    match result {
        Err(Error::PermissionDenied {
            user: refused,
            detail,
            ..
        }) => {
            assert_eq!(refused, user, "{what}");
            assert!(detail.contains("permission denied"), "{what}: {detail}");
        }
        other => panic!("{what}: not refused for want of a privilege: {other:?}"),
    }
}

async fn count(url: &str, query: &str) -> i64 {
    sql(url).await.query_one(query, &[]).await.unwrap().get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_role_does_a_replicas_work_and_is_refused_the_operators() {
    let (_cluster, url) = cluster("roles");
    bounded(LIMIT, async {
        // The owner (superuser here) migrates: both roles are created and granted.
        let owner = plane(&url, "owner").await;
        let db = database(&url);
        let roles = owner.roles().await.unwrap().expect("roles recorded");
        assert_eq!(
            (roles.replica.as_str(), roles.admin.as_str()),
            (
                format!("{db}_replica").as_str(),
                format!("{db}_admin").as_str()
            )
        );
        let replica_user = format!("{db}_api");
        let admin_user = format!("{db}_ops");
        let replica_url = login(&url, &replica_user, &roles.replica).await;
        let admin_url = login(&url, &admin_user, &roles.admin).await;

        // A replica connects with its role (the schema is current: it changes nothing) and
        // does its work through the same stores an application builds with.
        let replica = plane(&replica_url, "r1").await;
        let counter = Counter::default();
        let (audit, writer) = replica.audit_sink(AuditConfig::default());
        let spin = DynamicTool::new("later", "Answer later.")
            .public()
            .task()
            .handler(|_: &ToolContext, _: Value| Ok::<_, String>(json!("done")));
        let registry = builder(&counter)
            .tool(spin)
            .rate_limit("100/min")
            .approval_store(replica.approval_store())
            .quota_store(replica.quota_store())
            .task_store(replica.task_store())
            .audit_sink(audit)
            .build()
            .unwrap();
        let feed = replica.follow(&registry).await.unwrap();
        feed.on_policies(|_| Ok(())).await.unwrap();
        let run = registry.open_run("run-1", &subject());
        // A quota taken, a call audited.
        assert!(!run.call(call("c1", "status")).await.is_error());
        // An approval requested (stored), then a task started and read back.
        let asked = run.call(call("c2", "deploy")).await;
        assert_eq!(
            asked.error_kind(),
            Some(ErrorKind::ApprovalRequired),
            "{asked:?}"
        );
        let task = run
            .start_task(ToolCall::new("t1", "later", json!({})))
            .await
            .expect("a task starts");
        assert!(run.task(task.id()).await.is_ok());
        // Its own changes, and its offers.
        feed.revoke("echo", "incident").await.unwrap();
        feed.restore("echo", "over").await.unwrap();
        replica
            .report_upstream_offers(&[UpstreamOffer::new(
                "notes",
                "notes_echo",
                "echo",
                "sha256:11",
                "sha256:aa",
                "new",
            )])
            .await
            .unwrap();
        replica.refresh_upstream_offers().await.unwrap();
        writer.shutdown(Duration::from_secs(10)).await.unwrap();
        assert!(
            count(
                &url,
                "SELECT count(*) FROM audit_events WHERE replica = 'r1'"
            )
            .await
                >= 1,
            "the replica's audit was written"
        );
        assert_eq!(
            count(&url, "SELECT count(*) FROM registry_approvals").await,
            1
        );
        assert_eq!(count(&url, "SELECT count(*) FROM registry_tasks").await, 1);

        // Refused by PostgreSQL: a policy push, an acceptance, a prune, a verdict; nothing
        // of them recorded.
        let files = vec![(
            "all.cedar".to_owned(),
            "permit(principal, action, resource);".to_owned(),
        )];
        assert_refused(
            replica.push_policies(files.clone(), "r1").await,
            &replica_user,
            "push_policies",
        );
        assert_refused(
            replica
                .accept_upstream("notes", Some("notes_echo"), "sha256:11", None, "r1")
                .await,
            &replica_user,
            "accept_upstream",
        );
        assert_refused(
            replica.prune_forced(Duration::ZERO).await,
            &replica_user,
            "prune",
        );
        let id = asked.approval().unwrap().id().to_owned();
        assert_refused(
            replica
                .give_verdict(&id, &Verdict::approve().by("r1"))
                .await,
            &replica_user,
            "give_verdict",
        );
        let message = replica
            .push_policies(files.clone(), "r1")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("permission denied for table registry_policy_sets")
                && message.contains("admin role"),
            "{message}"
        );
        assert_eq!(
            count(&url, "SELECT count(*) FROM registry_policy_sets").await,
            0
        );
        assert_eq!(
            count(&url, "SELECT count(*) FROM upstream_acceptances").await,
            0
        );
        assert_eq!(
            count(
                &url,
                "SELECT count(*) FROM audit_events WHERE kind = 'prune'"
            )
            .await,
            0
        );
        assert!(count(&url, "SELECT count(*) FROM audit_events").await >= 1);
        assert_eq!(
            count(
                &url,
                "SELECT count(*) FROM registry_approvals WHERE verdict IS NOT NULL"
            )
            .await,
            0
        );

        // The admin role does each.
        let admin = plane(&admin_url, "registry-admin").await;
        admin.push_policies(files, "ops").await.unwrap();
        admin
            .accept_upstream("notes", Some("notes_echo"), "sha256:11", None, "ops")
            .await
            .unwrap();
        admin.prune(Duration::from_secs(30 * 86_400)).await.unwrap();
        admin
            .give_verdict(&id, &Verdict::approve().by("ops"))
            .await
            .unwrap();

        feed.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_table_has_grants_and_init_roles_names_them() {
    let (_cluster, url) = cluster("grants");
    bounded(LIMIT, async {
        let owner = plane(&url, "owner").await;
        let roles = owner.roles().await.unwrap().unwrap();
        // Every table of the schema (a later migration's too) is granted to both roles.
        let missing: Vec<String> = sql(&url)
            .await
            .query(
                "SELECT c.relname::text FROM pg_class c
                   JOIN pg_namespace n ON n.oid = c.relnamespace
                  WHERE n.nspname = current_schema() AND c.relkind = 'r'
                    AND (NOT (has_table_privilege($1, c.oid, 'SELECT')
                              OR has_table_privilege($1, c.oid, 'INSERT'))
                         OR NOT has_table_privilege($2, c.oid, 'SELECT'))",
                &[&roles.replica, &roles.admin],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        assert!(missing.is_empty(), "tables without grants: {missing:?}");

        // Named roles: created, recorded, granted; the derived ones lose their grants.
        let db = database(&url);
        let named = registry_postgres::Roles::named(format!("{db}_r"), format!("{db}_a")).unwrap();
        let (recorded, created) = owner.init_roles(Some(&named)).await.unwrap();
        assert_eq!(recorded, named);
        assert_eq!(created, [named.replica.clone(), named.admin.clone()]);
        let granted = |role: String, privilege: &'static str| {
            let url = url.clone();
            async move {
                sql(&url)
                    .await
                    .query_one(
                        "SELECT has_table_privilege($1, 'registry_policy_sets', $2)",
                        &[&role, &privilege],
                    )
                    .await
                    .unwrap()
                    .get::<_, bool>(0)
            }
        };
        assert!(granted(named.admin.clone(), "INSERT").await);
        assert!(!granted(named.replica.clone(), "INSERT").await);
        assert!(granted(named.replica.clone(), "SELECT").await);
        assert!(!granted(roles.admin.clone(), "INSERT").await);
        assert_eq!(owner.roles().await.unwrap(), Some(named.clone()));
        // Again: nothing to create.
        let (_, created) = owner.init_roles(None).await.unwrap();
        assert!(created.is_empty());
        // A name PostgreSQL reserves is refused before anything is done.
        assert!(matches!(
            registry_postgres::Roles::named("pg_monitor", "x"),
            Err(Error::Roles(_))
        ));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_role_cannot_migrate_and_says_who_must() {
    let (_cluster, url) = cluster("rolesold");
    bounded(LIMIT, async {
        let owner = plane(&url, "owner").await;
        let roles = owner.roles().await.unwrap().unwrap();
        let db = database(&url);
        let replica_url = login(&url, &format!("{db}_api"), &roles.replica).await;
        // The schema one version behind this program: the replica's role may not apply it.
        sql(&url)
            .await
            .batch_execute(
                "DELETE FROM registry_migrations WHERE version = (SELECT max(version) FROM registry_migrations)",
            )
            .await
            .unwrap();
        let refused = ControlPlane::builder(&replica_url)
            .replica("r1")
            .connect()
            .await
            .unwrap_err();
        let said = refused.to_string();
        assert!(matches!(refused, Error::Migration(_)), "{said}");
        assert!(
            said.contains("may not apply it") && said.contains("owner"),
            "{said}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replicas_default_retention_deletes_nothing_and_records_nothing() {
    let (_cluster, url) = cluster("rolesretention");
    bounded(LIMIT, async {
        let owner = plane(&url, "owner").await;
        let roles = owner.roles().await.unwrap().unwrap();
        let db = database(&url);
        let replica_url = login(&url, &format!("{db}_api"), &roles.replica).await;
        sql(&url)
            .await
            .batch_execute(
                "INSERT INTO audit_events (at, replica, kind, event)
                 SELECT now() - interval '40 days', 'old', 'call', '{}'::jsonb
                   FROM generate_series(1, 5)",
            )
            .await
            .unwrap();
        // Built with the defaults: the retention is on, and its role may not prune.
        let replica = ControlPlane::builder(&replica_url)
            .replica("r1")
            .prune_every(Duration::from_millis(20))
            .connect()
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let client = sql(&url).await;
        let count = |query: &'static str| {
            let client = &client;
            async move { client.query_one(query, &[]).await.unwrap().get::<_, i64>(0) }
        };
        assert_eq!(
            count("SELECT count(*) FROM audit_events WHERE kind = 'call'").await,
            5
        );
        assert_eq!(
            count("SELECT count(*) FROM audit_events WHERE kind = 'prune'").await,
            0
        );
        drop(replica);
    })
    .await;
}
