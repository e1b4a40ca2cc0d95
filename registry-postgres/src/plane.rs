//! The connection to the control plane: a pool, the replica's name, and its timings.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::tls::MakeTlsConnect;

use crate::tls::Connector;

use crate::error::Error;

/// A connection to the shared control plane: the database, a pool of connections, and this
/// replica's name. Cheap to clone (clones share the pool).
///
/// [`connect`](Self::connect) applies the schema if the database lacks it. From a plane come
/// the stores to build a registry with ([`approval_store`](Self::approval_store),
/// [`quota_store`](Self::quota_store), [`audit_sink`](Self::audit_sink)) and, once it is
/// built, its change feed ([`follow`](Self::follow)). The records are read with
/// [`changes`](Self::changes), [`approvals`](Self::approvals) and
/// [`audit_events`](Self::audit_events), which is what `registry-admin` prints.
#[derive(Clone)]
pub struct ControlPlane {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) pool: Pool,
    pub(crate) config: tokio_postgres::Config,
    /// TLS as the URL's `sslmode` asks (plaintext when it asks for none).
    pub(crate) connector: Connector,
    pub(crate) settings: Settings,
    /// The Tokio runtime the plane was connected on: the task store's lease keeper runs
    /// there, and so does each of its queries (a task's thread calls it from outside any
    /// runtime).
    pub(crate) handle: tokio::runtime::Handle,
    /// The waits on approval requests, woken by the database's notifications.
    pub(crate) approval_wakes: crate::approval_wake::ApprovalWakes,
}

/// The stream of a connection: TLS, or plaintext when the URL asks for none.
pub(crate) type Stream = <Connector as MakeTlsConnect<tokio_postgres::Socket>>::Stream;

/// How a plane behaves; see [`ControlPlaneBuilder`].
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) replica: String,
    pub(crate) heartbeat: Duration,
    pub(crate) lease: Duration,
    /// How long a running task's lease lasts without renewal.
    pub(crate) task_lease: Duration,
    pub(crate) timeout: Duration,
    /// How old a record may grow before the plane's retention task deletes it.
    pub(crate) retention: Option<Duration>,
    /// How often the retention task prunes.
    pub(crate) prune_every: Duration,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlane")
            .field("replica", &self.inner.settings.replica)
            .field("hosts", &self.inner.config.get_hosts())
            .field("dbname", &self.inner.config.get_dbname())
            .finish_non_exhaustive()
    }
}

/// Configures a [`ControlPlane`]: `ControlPlane::builder(url)`, then `.connect()`.
#[derive(Clone)]
#[must_use = "a builder does nothing until `connect` is called"]
pub struct ControlPlaneBuilder {
    url: String,
    settings: Settings,
    pool_size: usize,
}

impl std::fmt::Debug for ControlPlaneBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the URL itself: it may hold a password. What it names, without one.
        let mut debug = f.debug_struct("ControlPlaneBuilder");
        match self.url.parse::<tokio_postgres::Config>() {
            Ok(config) => debug
                .field("hosts", &config.get_hosts())
                .field("ports", &config.get_ports())
                .field("user", &config.get_user())
                .field("dbname", &config.get_dbname())
                .field("password", &config.get_password().map(|_| "<redacted>")),
            Err(_) => debug.field("url", &"<not a valid URL>"),
        };
        debug
            .field("settings", &self.settings)
            .field("pool_size", &self.pool_size)
            .finish()
    }
}

/// The largest file [`ControlPlane::url_from_file`] reads.
pub const MAX_URL_FILE_BYTES: u64 = 64 * 1024;

impl ControlPlane {
    /// Whether `url` gives a password: `postgres://user:PASSWORD@host/db`, `?password=...`,
    /// or `password=...` in the key-value form. Such a URL belongs in an environment variable
    /// (`DATABASE_URL`) or a file ([`url_from_file`](Self::url_from_file)), never on a command
    /// line, which any process of the same user reads (`/proc/PID/cmdline`), a stdio upstream
    /// included. A text that is not a URL at all counts as one that may hold a password.
    ///
    /// ```
    /// use registry_postgres::ControlPlane;
    ///
    /// assert!(ControlPlane::url_has_password("postgres://registry:pw@db/registry"));
    /// assert!(ControlPlane::url_has_password("postgres://registry@db/registry?password=pw"));
    /// assert!(ControlPlane::url_has_password("host=db user=registry password=pw"));
    /// assert!(!ControlPlane::url_has_password("postgres://registry@db/registry"));
    /// // The TLS options this crate reads itself are not a reason to refuse.
    /// assert!(!ControlPlane::url_has_password(
    ///     "postgres://registry@db/registry?sslmode=verify-full&sslrootcert=/etc/ca.pem"
    /// ));
    /// ```
    pub fn url_has_password(url: &str) -> bool {
        // The URL as the driver reads it: without `sslmode` and `sslrootcert`, which this
        // crate takes out first (tokio-postgres knows neither `verify-full` nor `sslrootcert`).
        let (rest, _, _) = crate::tls::take_tls_options(url);
        rest.parse::<tokio_postgres::Config>()
            .map_or(true, |config| config.get_password().is_some())
    }

    /// The database URL held by the file at `path` (its first line, without surrounding
    /// white space), a file of at most [`MAX_URL_FILE_BYTES`]: how a URL with a password is
    /// given to a program without putting it on its command line.
    ///
    /// ```
    /// use registry_postgres::ControlPlane;
    ///
    /// let path = std::env::temp_dir().join(format!("url-doc-{}", std::process::id()));
    /// std::fs::write(&path, "postgres://registry:pw@db/registry\n").unwrap();
    /// assert_eq!(
    ///     ControlPlane::url_from_file(&path).unwrap(),
    ///     "postgres://registry:pw@db/registry"
    /// );
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn url_from_file(path: impl AsRef<std::path::Path>) -> Result<String, String> {
        use std::io::Read as _;
        let path = path.as_ref();
        let shown = path.display();
        let file =
            std::fs::File::open(path).map_err(|error| format!("cannot read {shown}: {error}"))?;
        let mut text = String::new();
        file.take(MAX_URL_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|error| format!("cannot read {shown}: {error}"))?;
        if text.len() as u64 > MAX_URL_FILE_BYTES {
            return Err(format!(
                "{shown} is larger than {MAX_URL_FILE_BYTES} bytes: give a file that holds only the database URL"
            ));
        }
        let url = text.lines().next().unwrap_or_default().trim();
        if url.is_empty() {
            return Err(format!(
                "{shown} is empty: write the database URL on its first line"
            ));
        }
        Ok(url.to_owned())
    }

    /// Connects with the default settings; see [`builder`](Self::builder).
    pub async fn connect(url: &str) -> Result<ControlPlane, Error> {
        ControlPlane::builder(url).connect().await
    }

    /// A builder for a plane at `url` (`postgres://user:password@host:port/database`, or
    /// the key-value form `host=... user=...`).
    ///
    /// TLS is what the URL's `sslmode` asks for, through rustls: `require` encrypts without
    /// checking the certificate (as libpq); `verify-ca` checks the chain, `verify-full` the
    /// chain and the host name, against the CA of `sslrootcert=/path/to/ca.pem` (or
    /// `sslrootcert=system`); `prefer` is taken as `require` (never a silent downgrade);
    /// `allow` is refused. With `sslmode=disable` the connection is plaintext: anyone on the
    /// path could read and forge revocations, verdicts and quota answers. **Without
    /// `sslmode`** it is plaintext to this machine (a Unix socket, `localhost`, a loopback
    /// address) and refused to any other host ([`Error::Url`](crate::Error::Url), naming
    /// `sslmode=verify-full`). Use `sslmode=verify-full` across any network you do not control.
    ///
    /// ```
    /// use std::time::Duration;
    /// use registry_postgres::ControlPlane;
    ///
    /// let builder = ControlPlane::builder("postgres://registry@127.0.0.1/registry")
    ///     .replica("api-3")
    ///     .pool_size(32)
    ///     .heartbeat(Duration::from_millis(250))
    ///     .lease(Duration::from_secs(2))
    ///     .timeout(Duration::from_secs(2));
    /// # drop(builder);
    /// ```
    pub fn builder(url: &str) -> ControlPlaneBuilder {
        ControlPlaneBuilder {
            url: url.to_owned(),
            settings: Settings {
                replica: default_replica_name(),
                heartbeat: Duration::from_millis(250),
                lease: Duration::from_secs(2),
                task_lease: Duration::from_secs(10),
                timeout: Duration::from_secs(2),
                retention: Some(crate::prune::DEFAULT_RETENTION),
                prune_every: Duration::from_secs(3_600),
            },
            pool_size: 16,
        }
    }

    /// This replica's name, as written in the records it makes.
    pub fn replica(&self) -> &str {
        &self.inner.settings.replica
    }

    /// A connection from the pool, within the plane's timeout.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, Error> {
        self.inner
            .pool
            .get()
            .await
            .map_err(|error| Error::Pool(error.to_string()))
    }

    /// Runs `work` under the plane's timeout.
    pub(crate) async fn timed<T>(
        &self,
        what: &'static str,
        work: impl std::future::Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let timeout = self.inner.settings.timeout;
        tokio::time::timeout(timeout, work)
            .await
            .unwrap_or(Err(Error::Timeout(timeout, what)))
            .map_err(|error| self.name_the_role(error))
    }

    /// A refusal for want of a privilege, with the role this plane connects as.
    pub(crate) fn name_the_role(&self, error: Error) -> Error {
        match error {
            Error::PermissionDenied {
                context,
                user,
                detail,
            } if user.is_empty() => Error::PermissionDenied {
                context,
                user: self.inner.config.get_user().unwrap_or_default().to_owned(),
                detail,
            },
            other => other,
        }
    }

    /// A new connection of its own (not from the pool), for long-lived listeners and writers.
    pub(crate) async fn dedicated(
        &self,
    ) -> Result<
        (
            tokio_postgres::Client,
            tokio_postgres::Connection<tokio_postgres::Socket, Stream>,
        ),
        Error,
    > {
        let timeout = self.connect_timeout();
        tokio::time::timeout(
            timeout,
            self.inner.config.connect(self.inner.connector.clone()),
        )
        .await
        .map_err(|_| Error::Timeout(timeout, "connecting"))?
        .map_err(|error| {
            let error = Error::db("connecting")(error);
            let text = error.to_string();
            if text.contains("invalid peer certificate") {
                Error::Tls(format!(
                    "{text}; the server's certificate was not accepted: check that sslrootcert \
                     names the CA that signed it and that the URL's host is a name on it"
                ))
            } else {
                error
            }
        })
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// How long opening one connection may take: the URL's `connect_timeout`, or else the
    /// plane's [timeout](ControlPlaneBuilder::timeout).
    fn connect_timeout(&self) -> Duration {
        self.inner
            .config
            .get_connect_timeout()
            .copied()
            .unwrap_or(self.inner.settings.timeout)
    }
}

impl ControlPlaneBuilder {
    /// This replica's name in the records it makes (default: the host name and the process
    /// id, `host-1234`).
    ///
    /// Stored as every text is: a NUL character is written as the visible `\u{0}`.
    pub fn replica(mut self, name: impl Into<String>) -> Self {
        self.settings.replica = crate::text::owned(name.into());
        self
    }

    /// Connections in the pool shared by approvals, quotas and reads (default 16). The change
    /// feed, the audit writer and the lease keeper of each task store
    /// ([`ControlPlane::task_store`]) have one connection each besides.
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// How often the change feed asks the database for changes even without a notification
    /// (default 250 ms): it bounds the propagation delay if a notification is lost, and it
    /// proves the connection alive.
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.settings.heartbeat = every.max(Duration::from_millis(10));
        self
    }

    /// How long the change feed may go without an answer from the database before this
    /// replica holds every call (default 2 s). A dropped connection holds them at once. The
    /// heartbeat is shortened to half the lease if it is longer.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.settings.lease = lease;
        self
    }

    /// How long a running task's lease lasts (default 10 s): the replica that runs it renews
    /// it every [heartbeat](Self::heartbeat) (or a third of the lease, if shorter); once it
    /// has run out (the replica died, or lost the database), any replica marks the task
    /// failed. See [`PgTaskStore`](crate::PgTaskStore). At least 30 ms.
    pub fn task_lease(mut self, lease: Duration) -> Self {
        self.settings.task_lease = lease.max(Duration::from_millis(30));
        self
    }

    /// How long one operation (a quota, an approval, a connection) may take before it fails
    /// and the call it serves is refused (default 2 s). A `connect_timeout` in the URL
    /// (seconds, `?connect_timeout=10`) bounds opening a connection instead.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.settings.timeout = timeout;
        self
    }

    /// Deletes what is older than `retention` from the control plane's tables, once at
    /// connect and then every [`prune_every`](Self::prune_every), by what
    /// [`ControlPlane::prune`] deletes (the change log keeps what replicas need; the newest
    /// policy set and a live replica's policy status are never deleted). **On by default**,
    /// with [`DEFAULT_RETENTION`](crate::DEFAULT_RETENTION) (30 days); turn it off with
    /// [`no_retention`](Self::no_retention). Every replica with a retention runs the task;
    /// an advisory lock makes them prune one at a time. A turn that finds nothing older than
    /// the retention records nothing; one that deletes is recorded in the audit trail (kind
    /// `prune`) before it deletes.
    ///
    /// A retention below [`PRUNE_FLOOR`](crate::PRUNE_FLOOR) (7 days) is refused at connect.
    /// Pruning is the admin role's: a plane connected with a replica's role prunes nothing
    /// (it logs that once, with the fix, and stops). With roles, give the retention to a
    /// plane connected as a member of the admin role, or run `registry-admin prune` from a
    /// scheduler.
    ///
    /// ```
    /// use std::time::Duration;
    /// use registry_postgres::ControlPlane;
    ///
    /// let ninety_days = ControlPlane::builder("postgres://registry@127.0.0.1/registry")
    ///     .retention(Duration::from_secs(90 * 86_400));
    /// # drop(ninety_days);
    /// ```
    pub fn retention(mut self, retention: Duration) -> Self {
        self.settings.retention = Some(retention);
        self
    }

    /// No retention: this plane deletes nothing on its own (the default is
    /// [`DEFAULT_RETENTION`](crate::DEFAULT_RETENTION)). For a replica whose records an
    /// operator prunes (`registry-admin prune` from a scheduler), or a tool that only reads;
    /// `registry-admin` itself connects this way.
    ///
    /// ```
    /// use registry_postgres::ControlPlane;
    ///
    /// let builder = ControlPlane::builder("postgres://registry@127.0.0.1/registry").no_retention();
    /// # drop(builder);
    /// ```
    pub fn no_retention(mut self) -> Self {
        self.settings.retention = None;
        self
    }

    /// How often a plane with a [`retention`](Self::retention) prunes (default 1 hour).
    pub fn prune_every(mut self, every: Duration) -> Self {
        self.settings.prune_every = every.max(Duration::from_millis(10));
        self
    }

    /// Connects, and applies the schema if the database lacks it.
    pub async fn connect(mut self) -> Result<ControlPlane, Error> {
        // The feed proves the connection alive once a heartbeat: a heartbeat as long as the
        // lease would let the lease run out between two, and hold a healthy replica's calls.
        let half_lease = (self.settings.lease / 2).max(Duration::from_millis(10));
        if self.settings.heartbeat > half_lease {
            self.settings.heartbeat = half_lease;
        }
        if let Some(retention) = self.settings.retention
            && retention < crate::prune::PRUNE_FLOOR
        {
            return Err(Error::BelowPruneFloor {
                asked: format!("a retention of {retention:?}"),
                floor: crate::prune::PRUNE_FLOOR,
            });
        }
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::Pool(
                "the control plane must be connected inside a Tokio runtime (#[tokio::main])"
                    .to_owned(),
            )
        })?;
        let (mut config, connector) = crate::tls::configure(&self.url)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(self.settings.timeout);
        }
        let connect_timeout = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(self.settings.timeout);
        if config.get_application_name().is_none() {
            config.application_name(format!("registry {}", self.settings.replica));
        }
        let manager = Manager::from_config(
            config.clone(),
            connector.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(self.pool_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(self.settings.timeout))
            .create_timeout(Some(connect_timeout))
            .recycle_timeout(Some(self.settings.timeout))
            .build()
            .map_err(|error| Error::Pool(error.to_string()))?;
        let plane = ControlPlane {
            inner: Arc::new(Inner {
                pool,
                config,
                connector,
                settings: self.settings,
                handle,
                approval_wakes: Default::default(),
            }),
        };
        let (mut client, connection) = plane.dedicated().await?;
        let driver = tokio::spawn(connection);
        let migrated = crate::migrate::migrate(&mut client).await;
        drop(client);
        let _ = driver.await;
        migrated.map_err(|error| plane.name_the_role(error))?;
        if let Some(retention) = plane.inner.settings.retention {
            crate::prune::spawn_retention(
                Arc::downgrade(&plane.inner),
                retention,
                plane.inner.settings.prune_every,
            );
        }
        Ok(plane)
    }
}

fn default_replica_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "replica".to_owned());
    format!("{host}-{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::ControlPlane;

    #[test]
    fn a_builder_never_prints_the_password() {
        for url in [
            "postgres://registry:hunter2-secret@db.internal:5433/registry?sslmode=require",
            "host=db.internal user=registry password=hunter2-secret dbname=registry",
            "postgres://db.internal/registry?password=hunter2-secret",
        ] {
            let printed = format!("{:?}", ControlPlane::builder(url).replica("api-1"));
            assert!(!printed.contains("hunter2"), "{printed}");
            assert!(printed.contains("db.internal"), "{printed}");
            assert!(printed.contains("<redacted>"), "{printed}");
            assert!(printed.contains("api-1"), "{printed}");
        }
        let invalid = format!("{:?}", ControlPlane::builder("postgres://a:hunter2@[::1"));
        assert!(!invalid.contains("hunter2"), "{invalid}");
    }
}
