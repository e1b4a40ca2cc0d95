//! A PostgreSQL cluster of its own, for tests: started with the machine's `initdb` and
//! `pg_ctl` in a temporary directory, on a free loopback port, and removed when dropped.
//!
//! ```no_run
//! use registry_postgres::throwaway::Cluster;
//!
//! let cluster = Cluster::start().expect("PostgreSQL's server programs");
//! let url = cluster.create_database("test_1").unwrap();
//! // ... ControlPlane::connect(&url) ...
//! drop(cluster); // stopped and removed
//! ```
//!
//! The server programs are found on `PATH`, in `REGISTRY_PG_BIN`, or in Debian's
//! `/usr/lib/postgresql/<version>/bin`. When none is there and this runs as root on a Debian
//! machine, Debian's `postgresql` package is installed first (once, under a lock shared by
//! concurrent test processes); otherwise the error says what to install. PostgreSQL refuses
//! to run as root: as root, the cluster runs as the `postgres` user the package creates.
//!
//! Starting a cluster (`initdb`) takes a second or more, so tests that need nothing of a
//! cluster but a database of their own share one per test process: [`Cluster::shared`],
//! with [`Cluster::fresh_database`] for each test. Tests that stop the server, change
//! cluster-wide settings (roles, TLS) or need a port of their own start their own.
//!
//! ```no_run
//! use registry_postgres::throwaway::Cluster;
//!
//! let url = Cluster::shared().unwrap().fresh_database("audit").unwrap(); // audit_1, audit_2...
//! ```
//!
//! Clusters left behind by a test process that was killed are stopped and removed by the
//! next one started; the shared one is stopped and removed as soon as its process ends, however
//! it ends.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// Why a cluster could not be started or stopped; the message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClusterError(String);

/// A throwaway PostgreSQL cluster; see the [module](self).
#[derive(Debug)]
pub struct Cluster {
    root: PathBuf,
    bin: PathBuf,
    port: u16,
    /// The user the server runs as, when this process is root.
    run_as: Option<String>,
    running: bool,
    /// Server options besides the defaults (TLS).
    extra: String,
}

/// A certificate for a cluster that speaks TLS ([`Cluster::start_tls`]).
///
/// A plain record, built with its fields (`ServerTls { cert_pem, key_pem, tls_only }`); its
/// `Debug` never shows the private key.
#[derive(Clone)]
pub struct ServerTls {
    /// The server's certificate chain, PEM.
    pub cert_pem: String,
    /// Its private key, PEM.
    pub key_pem: String,
    /// Accept TLS connections only (`hostssl` in `pg_hba.conf`): a plaintext connection is
    /// refused.
    pub tls_only: bool,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<redacted>")
            .field("tls_only", &self.tls_only)
            .finish()
    }
}

const PREFIX: &str = "registry-pg-";

impl Cluster {
    /// Creates a cluster (superuser `postgres`, trust authentication on loopback only) and
    /// starts it.
    pub fn start() -> Result<Cluster, ClusterError> {
        Cluster::start_with(None, None)
    }

    /// Like [`start`](Self::start), with TLS on (`ssl=on`) and `tls`'s certificate; with
    /// [`ServerTls::tls_only`], only TLS connections are accepted.
    pub fn start_tls(tls: &ServerTls) -> Result<Cluster, ClusterError> {
        Cluster::start_with(Some(tls), None)
    }

    /// With `watchdog`, the cluster's watchdog is started before `initdb`, and its pipe put
    /// there: a process that ends at any point after that leaves nothing behind.
    fn start_with(
        tls: Option<&ServerTls>,
        watchdog: Option<&mut Option<ChildStdin>>,
    ) -> Result<Cluster, ClusterError> {
        let bin = server_binaries()?;
        sweep_abandoned(&bin);
        let run_as = is_root().then(|| "postgres".to_owned());
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let root = std::env::temp_dir().join(format!(
            "{PREFIX}{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&root)
            .map_err(|error| ClusterError(format!("cannot create {}: {error}", root.display())))?;
        if let Some(user) = &run_as {
            let (uid, gid) = user_ids(user)?;
            std::os::unix::fs::chown(&root, Some(uid), Some(gid)).map_err(|error| {
                ClusterError(format!("cannot give {} to {user}: {error}", root.display()))
            })?;
        }
        let mut cluster = Cluster {
            root,
            bin,
            port: 0,
            run_as,
            running: false,
            extra: String::new(),
        };
        if let Some(watchdog) = watchdog {
            *watchdog = Some(cluster.watchdog()?);
        }
        let data = cluster.data();
        let initdb = cluster.run(
            "initdb",
            &[
                "-D",
                path_str(&data)?,
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
                "--no-instructions",
            ],
        )?;
        if !initdb.status.success() {
            return Err(ClusterError(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&initdb.stderr).trim()
            )));
        }
        if let Some(tls) = tls {
            cluster.set_up_tls(tls)?;
        }
        let mut last = None;
        for _ in 0..3 {
            cluster.port = free_port()?;
            match cluster.start_again() {
                Ok(()) => return Ok(cluster),
                Err(error) => last = Some(error),
            }
        }
        Err(last.unwrap_or_else(|| ClusterError("the server did not start".to_owned())))
    }

    /// The cluster shared by every caller in this process: started on the first call, never
    /// stopped by a caller (there is no `&mut` to one), and stopped and removed when the
    /// process ends, however it ends (a watchdog process waits for the end of a pipe that only
    /// this process holds open). Give each test a database of its own with
    /// [`fresh_database`](Self::fresh_database).
    pub fn shared() -> Result<&'static Cluster, ClusterError> {
        struct Shared {
            cluster: Cluster,
            /// Closed by the kernel when this process ends, which wakes the watchdog.
            _watchdog: ChildStdin,
        }
        static SHARED: OnceLock<Result<Shared, ClusterError>> = OnceLock::new();
        let shared = SHARED.get_or_init(|| {
            let mut watchdog = None;
            let cluster = Cluster::start_with(None, Some(&mut watchdog))?;
            Ok(Shared {
                cluster,
                _watchdog: watchdog
                    .ok_or_else(|| ClusterError("the shared cluster has no watchdog".to_owned()))?,
            })
        });
        match shared {
            Ok(shared) => Ok(&shared.cluster),
            Err(error) => Err(error.clone()),
        }
    }

    /// Creates a database named `prefix` and a number unique in this process (`audit_3`), and
    /// returns its URL.
    pub fn fresh_database(&self, prefix: &str) -> Result<String, ClusterError> {
        static NEXT: AtomicU32 = AtomicU32::new(1);
        let number = NEXT.fetch_add(1, Ordering::Relaxed);
        self.create_database(&format!("{prefix}_{number}"))
    }

    /// Starts a process that stops the server and removes the cluster's directory once the
    /// returned pipe is closed, that is when this process ends (or drops it). It runs in a
    /// process group of its own, so that a Ctrl-C meant for the tests does not end it first.
    /// (Should this process be killed while its `initdb` or `pg_ctl start` still runs, what
    /// they leave is stopped and removed by the next cluster started, as any abandoned one.)
    fn watchdog(&self) -> Result<ChildStdin, ClusterError> {
        use std::os::unix::process::CommandExt;
        let data = self.data();
        let pg_ctl = self.bin.join("pg_ctl");
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(r#"cat >/dev/null; "$@" -D "$DATA" -m immediate -w -t 60 stop; rm -rf "$ROOT""#)
            .arg("watchdog");
        if let Some(user) = &self.run_as {
            command.args(["runuser", "-u", user, "--"]);
        }
        let mut child = command
            .arg(&pg_ctl)
            .env("DATA", &data)
            .env("ROOT", &self.root)
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|error| {
                ClusterError(format!(
                    "the cluster's watchdog (sh) could not run: {error}"
                ))
            })?;
        child
            .stdin
            .take()
            .ok_or_else(|| ClusterError("the cluster's watchdog has no stdin".to_owned()))
    }

    /// The cluster's URL for database `postgres`.
    pub fn url(&self) -> String {
        self.url_of("postgres")
    }

    /// The URL of database `name` in this cluster.
    pub fn url_of(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Creates database `name`, and returns its URL.
    pub fn create_database(&self, name: &str) -> Result<String, ClusterError> {
        let port = self.port.to_string();
        let output = Command::new(self.bin.join("createdb"))
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "postgres", name])
            .stdin(Stdio::null())
            .output()
            .map_err(|error| ClusterError(format!("createdb could not run: {error}")))?;
        if !output.status.success() {
            return Err(ClusterError(format!(
                "createdb {name} failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(self.url_of(name))
    }

    /// Stops the server (fast shutdown: open connections are closed). Its data stays:
    /// [`start_again`](Self::start_again) brings it back on the same port.
    pub fn stop(&mut self) -> Result<(), ClusterError> {
        self.pg_ctl_stop("fast")?;
        self.running = false;
        Ok(())
    }

    /// Starts the stopped server again, on the same port, and waits until it accepts
    /// connections.
    pub fn start_again(&mut self) -> Result<(), ClusterError> {
        let data = self.data();
        let log = self.root.join("server.log");
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c max_connections=300{}",
            self.port,
            path_str(&self.root)?,
            self.extra,
        );
        let output = self.run(
            "pg_ctl",
            &[
                "-D",
                path_str(&data)?,
                "-l",
                path_str(&log)?,
                "-o",
                &options,
                "-w",
                "-t",
                "60",
                "start",
            ],
        )?;
        if !output.status.success() {
            let log = fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(10).collect();
            return Err(ClusterError(format!(
                "pg_ctl start failed: {}\n{}",
                String::from_utf8_lossy(&output.stderr).trim(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )));
        }
        self.running = true;
        Ok(())
    }

    fn pg_ctl_stop(&self, mode: &str) -> Result<(), ClusterError> {
        let data = self.data();
        let output = self.run(
            "pg_ctl",
            &["-D", path_str(&data)?, "-m", mode, "-w", "-t", "60", "stop"],
        )?;
        if output.status.success() {
            Ok(())
        } else {
            Err(ClusterError(format!(
                "pg_ctl stop failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            )))
        }
    }

    /// Writes the certificate and key (mode 0600, owned by the server's user), turns TLS
    /// on, and with `tls_only` accepts TLS connections only.
    fn set_up_tls(&mut self, tls: &ServerTls) -> Result<(), ClusterError> {
        use std::os::unix::fs::PermissionsExt;
        let data = self.data();
        let write = |name: &str, text: &str| -> Result<PathBuf, ClusterError> {
            let path = data.join(name);
            fs::write(&path, text).map_err(|error| {
                ClusterError(format!("cannot write {}: {error}", path.display()))
            })?;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).map_err(|error| {
                ClusterError(format!("cannot restrict {}: {error}", path.display()))
            })?;
            if let Some(user) = &self.run_as {
                let (uid, gid) = user_ids(user)?;
                std::os::unix::fs::chown(&path, Some(uid), Some(gid)).map_err(|error| {
                    ClusterError(format!("cannot give {} to {user}: {error}", path.display()))
                })?;
            }
            Ok(path)
        };
        let cert = write("server.crt", &tls.cert_pem)?;
        let key = write("server.key", &tls.key_pem)?;
        if tls.tls_only {
            write(
                "pg_hba.conf",
                "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n",
            )?;
        }
        self.extra = format!(
            " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
            path_str(&cert)?,
            path_str(&key)?
        );
        Ok(())
    }

    fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    /// Runs one of the server programs, as the cluster's user.
    fn run(&self, program: &str, args: &[&str]) -> Result<Output, ClusterError> {
        run_program(&self.bin, self.run_as.as_deref(), program, args)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.running {
            let _ = self.pg_ctl_stop("immediate");
        }
        let _ = fs::remove_dir_all(&self.root);
    }
}

fn run_program(
    bin: &Path,
    run_as: Option<&str>,
    program: &str,
    args: &[&str],
) -> Result<Output, ClusterError> {
    let path = bin.join(program);
    let mut command = match run_as {
        Some(user) => {
            let mut command = Command::new("runuser");
            command.args(["-u", user, "--"]).arg(&path);
            command
        }
        None => Command::new(&path),
    };
    command
        .args(args)
        .stdin(Stdio::null())
        .current_dir(std::env::temp_dir())
        .output()
        .map_err(|error| ClusterError(format!("{} could not run: {error}", path.display())))
}

/// The directory of `initdb`, `pg_ctl` and `postgres`, installing them if it can.
fn server_binaries() -> Result<PathBuf, ClusterError> {
    if let Some(found) = find_binaries() {
        return Ok(found);
    }
    install()?;
    find_binaries().ok_or_else(|| {
        ClusterError(
            "PostgreSQL's server programs (initdb, pg_ctl) are still not found after installing \
             Debian's postgresql package; set REGISTRY_PG_BIN to their directory"
                .to_owned(),
        )
    })
}

fn find_binaries() -> Option<PathBuf> {
    let has = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("REGISTRY_PG_BIN").map(PathBuf::from) {
        return has(&dir).then_some(dir);
    }
    let mut debian: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, dir)| has(dir))
        .collect();
    debian.sort();
    if let Some((_, dir)) = debian.pop() {
        return Some(dir);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).find(|dir| has(dir) && dir.join("postgres").is_file())
    })
}

/// Installs Debian's `postgresql` package, once across concurrent processes.
fn install() -> Result<(), ClusterError> {
    let missing = "PostgreSQL's server programs (initdb, pg_ctl) are not installed";
    if !is_root() || !Path::new("/usr/bin/apt-get").exists() {
        return Err(ClusterError(format!(
            "{missing}. Install them (Debian/Ubuntu: `sudo apt-get install postgresql`), or set \
             REGISTRY_PG_BIN to the directory that holds them"
        )));
    }
    let lock_path = std::env::temp_dir().join("registry-pg-install.lock");
    let lock = fs::File::create(&lock_path)
        .map_err(|error| ClusterError(format!("cannot create {}: {error}", lock_path.display())))?;
    lock.lock()
        .map_err(|error| ClusterError(format!("cannot lock {}: {error}", lock_path.display())))?;
    if find_binaries().is_some() {
        return Ok(());
    }
    eprintln!("{missing}: installing Debian's postgresql package (apt-get)");
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .output()
    };
    let mut installed = apt(&[
        "install",
        "-y",
        "-q",
        "--no-install-recommends",
        "postgresql",
    ]);
    if !installed
        .as_ref()
        .is_ok_and(|output| output.status.success())
    {
        let _ = apt(&["update", "-q"]);
        installed = apt(&[
            "install",
            "-y",
            "-q",
            "--no-install-recommends",
            "postgresql",
        ]);
    }
    match installed {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(ClusterError(format!(
            "{missing}, and `apt-get install postgresql` failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))),
        Err(error) => Err(ClusterError(format!(
            "{missing}, and apt-get could not run: {error}"
        ))),
    }
}

/// Stops and removes the clusters of test processes that no longer exist.
fn sweep_abandoned(bin: &Path) {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|name| name.strip_prefix(PREFIX)) else {
            continue;
        };
        let Some(owner) = rest
            .split('-')
            .next()
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{owner}")).exists() {
            continue;
        }
        let data = entry.path().join("data");
        if data.join("postmaster.pid").exists()
            && let Some(data) = data.to_str()
        {
            let run_as = is_root().then_some("postgres");
            let _ = run_program(
                bin,
                run_as,
                "pg_ctl",
                &["-D", data, "-m", "immediate", "stop"],
            );
        }
        let _ = fs::remove_dir_all(entry.path());
    }
}

fn free_port() -> Result<u16, ClusterError> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|error| ClusterError(format!("no free loopback port: {error}")))
}

fn is_root() -> bool {
    fs::metadata("/proc/self").is_ok_and(|meta| std::os::unix::fs::MetadataExt::uid(&meta) == 0)
}

fn user_ids(user: &str) -> Result<(u32, u32), ClusterError> {
    let passwd = fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .map(|line| line.split(':').collect::<Vec<_>>())
        .find(|fields| fields.first() == Some(&user) && fields.len() > 3)
        .and_then(|fields| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
        .ok_or_else(|| {
            ClusterError(format!(
                "PostgreSQL refuses to run as root, and there is no {user:?} user to run it as \
                 (Debian's postgresql package creates it)"
            ))
        })
}

fn path_str(path: &Path) -> Result<&str, ClusterError> {
    path.to_str()
        .ok_or_else(|| ClusterError(format!("{} is not UTF-8", path.display())))
}

#[cfg(test)]
mod debug_tests {
    use super::ServerTls;

    #[test]
    fn the_private_key_is_never_printed() {
        let tls = ServerTls {
            cert_pem: "-----BEGIN CERTIFICATE-----".into(),
            key_pem: "-----BEGIN PRIVATE KEY-----\nsecret".into(),
            tls_only: true,
        };
        let printed = format!("{tls:?}");
        assert!(!printed.contains("PRIVATE KEY"), "{printed}");
        assert!(printed.contains("CERTIFICATE"), "{printed}");
    }
}
