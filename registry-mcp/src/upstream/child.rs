//! Starting a stdio upstream: the child process's own environment (an empty one, then
//! [`BASE_ENV`], its `pass_env` and its `env`), its own directory, and its stderr read and
//! logged through `tracing`, escaped and bounded, never inherited.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufRead, AsyncBufReadExt as _};

use super::config::BASE_ENV;

/// The longest line of an upstream's stderr that is logged, in bytes; the rest of a longer
/// line is dropped (the event says `truncated`).
pub(crate) const MAX_STDERR_LINE: usize = 2048;

/// The most lines of one upstream's stderr logged a second; the others are read, dropped
/// and counted in one event.
pub(crate) const MAX_STDERR_LINES_PER_SECOND: u32 = 50;

/// The directory a child runs in: the file's `cwd`, or one made for it and removed when the
/// connection ends.
#[derive(Debug)]
pub(crate) enum Workdir {
    /// The file's `cwd`, left as it is.
    Given(PathBuf),
    /// A new empty directory, only the server's user may enter, removed on drop.
    Own(PathBuf),
}

impl Workdir {
    /// `cwd` if the file gives one (it must be a directory), else a new empty directory of
    /// its own under the system's temporary directory.
    pub(crate) fn for_upstream(upstream: &str, cwd: Option<&Path>) -> Result<Workdir, String> {
        if let Some(cwd) = cwd {
            return if cwd.is_dir() {
                Ok(Workdir::Given(cwd.to_owned()))
            } else {
                Err(format!(
                    "its cwd {:?} is not a directory; create it, or correct `cwd` in the upstreams file",
                    crate::logging::escape(&cwd.display().to_string())
                ))
            };
        }
        let base = std::env::temp_dir();
        let mut last = None;
        // A name nobody can guess before it exists; made only if nothing has that name, so
        // never a directory or link someone else placed there.
        for _ in 0..8 {
            let mut random = [0u8; 8];
            getrandom::fill(&mut random).map_err(|error| format!("no randomness: {error}"))?;
            let path = base.join(format!(
                "registry-upstream-{upstream}-{}",
                u64::from_le_bytes(random)
            ));
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(&path) {
                Ok(()) => return Ok(Workdir::Own(path)),
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    last = Some(error);
                }
                Err(error) => {
                    return Err(format!(
                        "cannot make a directory for it in {:?}: {error}; give it one with `cwd` in the upstreams file",
                        crate::logging::escape(&base.display().to_string())
                    ));
                }
            }
        }
        Err(format!(
            "cannot make a directory for it in {:?}: {}",
            crate::logging::escape(&base.display().to_string()),
            last.map(|error| error.to_string()).unwrap_or_default()
        ))
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        match self {
            Workdir::Given(path) | Workdir::Own(path) => path,
        }
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        if let Workdir::Own(path) = self {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

/// The command that starts a stdio upstream: `command` with an empty environment but for
/// the server's variables of [`BASE_ENV`] and `pass_env` that are set (read through
/// `server_env`), then `env`'s values; run in `dir`.
pub(crate) fn command(
    command: &[String],
    env: &BTreeMap<String, String>,
    pass_env: &[String],
    dir: &Path,
    server_env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> tokio::process::Command {
    let mut child = tokio::process::Command::new(&command[0]);
    child.args(&command[1..]).env_clear().current_dir(dir);
    for variable in BASE_ENV
        .iter()
        .copied()
        .chain(pass_env.iter().map(String::as_str))
    {
        if let Some(value) = server_env(variable) {
            child.env(variable, value);
        }
    }
    child.envs(env);
    child
}

/// Reads `stderr` to its end, logging each line as an event of `upstream`: escaped, at most
/// [`MAX_STDERR_LINE`] bytes of it, at most [`MAX_STDERR_LINES_PER_SECOND`] lines a second
/// (the others are counted, and the count logged).
pub(crate) async fn log_stderr(upstream: String, stderr: impl AsyncBufRead + Unpin) {
    let upstream = crate::logging::escape(&upstream).into_owned();
    let mut stderr = stderr;
    let mut rate = Rate::new(Instant::now());
    let mut line = Vec::with_capacity(256);
    let mut truncated = false;
    loop {
        let (used, ended) = match stderr.fill_buf().await {
            Ok([]) | Err(_) => {
                if !line.is_empty() || truncated {
                    rate.log(&upstream, &line, truncated, Instant::now());
                }
                break;
            }
            Ok(read) => {
                let (part, ended) = match read.iter().position(|byte| *byte == b'\n') {
                    Some(end) => (&read[..end], Some(end + 1)),
                    None => (read, None),
                };
                let room = MAX_STDERR_LINE - line.len();
                if part.len() > room {
                    truncated = true;
                }
                line.extend_from_slice(&part[..part.len().min(room)]);
                (ended.unwrap_or(read.len()), ended.is_some())
            }
        };
        stderr.consume(used);
        if ended {
            rate.log(&upstream, &line, truncated, Instant::now());
            line.clear();
            truncated = false;
        }
    }
    rate.flush(&upstream);
}

/// The lines logged in the current second, and those dropped.
struct Rate {
    window: Instant,
    logged: u32,
    dropped: u64,
}

impl Rate {
    fn new(now: Instant) -> Rate {
        Rate {
            window: now,
            logged: 0,
            dropped: 0,
        }
    }

    fn log(&mut self, upstream: &str, line: &[u8], truncated: bool, now: Instant) {
        if now.duration_since(self.window) >= Duration::from_secs(1) {
            self.flush(upstream);
            self.window = now;
            self.logged = 0;
        }
        if self.logged >= MAX_STDERR_LINES_PER_SECOND {
            self.dropped += 1;
            return;
        }
        self.logged += 1;
        let text = String::from_utf8_lossy(line);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        let text = crate::logging::escape(text);
        if truncated {
            tracing::info!(upstream = %upstream, line = %text, truncated = true, "upstream stderr");
        } else {
            tracing::info!(upstream = %upstream, line = %text, "upstream stderr");
        }
    }

    fn flush(&mut self, upstream: &str) {
        if self.dropped > 0 {
            tracing::warn!(upstream = %upstream, dropped = self.dropped, "upstream stderr lines dropped: more than {MAX_STDERR_LINES_PER_SECOND} a second");
            self.dropped = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_gets_only_the_base_its_pass_env_and_its_env() {
        let server = |name: &str| {
            let value = match name {
                "PATH" => "/usr/bin",
                "HOME" => "/home/registry",
                "NOTES_KEY" => "passed",
                "REMOTE_TOKEN" => "s3cret",
                "DATABASE_URL" => "postgres://u:pw@db/registry",
                _ => return None,
            };
            Some(value.into())
        };
        let env = BTreeMap::from([("NOTES_DIR".to_owned(), "/srv/notes".to_owned())]);
        let command = command(
            &["python3".to_owned(), "server.py".to_owned()],
            &env,
            &["NOTES_KEY".to_owned(), "UNSET".to_owned()],
            Path::new("/srv"),
            server,
        );
        let std = command.as_std();
        let given: BTreeMap<String, Option<String>> = std
            .get_envs()
            .map(|(key, value)| {
                (
                    key.to_string_lossy().into_owned(),
                    value.map(|value| value.to_string_lossy().into_owned()),
                )
            })
            .collect();
        let expected: BTreeMap<String, Option<String>> = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/registry"),
            ("NOTES_KEY", "passed"),
            ("NOTES_DIR", "/srv/notes"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), Some(value.to_owned())))
        .collect();
        assert_eq!(given, expected);
        assert_eq!(std.get_current_dir(), Some(Path::new("/srv")));
    }

    #[derive(Clone, Default)]
    struct Buffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What `log_stderr` writes for `stderr` under a plain formatter, which escapes nothing:
    /// the escaping is `log_stderr`'s own, whatever subscriber an application installs.
    fn logged(stderr: &[u8]) -> String {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(log_stderr("notes".to_owned(), stderr));
        });
        String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn stderr_is_logged_escaped_one_event_a_line_and_bounded() {
        let mut stderr = "hostile\0NUL\nFORGED line\u{202e}eulav\r\n"
            .as_bytes()
            .to_vec();
        stderr.extend(std::iter::repeat_n(b'x', 100_000));
        stderr.extend_from_slice(b"\nlast, without a newline");
        let text = logged(&stderr);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(
            lines
                .iter()
                .all(|line| line.contains("upstream stderr") && line.contains("upstream=notes")),
            "{text}"
        );
        assert!(lines[0].contains(r"hostile\u{0}NUL"), "{text}");
        assert!(
            lines[1].contains(r"FORGED line\u{202e}eulav") && !lines[1].contains(r"\r"),
            "{text}"
        );
        assert!(lines[2].contains("truncated=true"), "{}", &lines[2][..200]);
        assert!(lines[2].len() < MAX_STDERR_LINE + 200, "{}", lines[2].len());
        assert!(lines[3].contains("last, without a newline"), "{text}");
        assert!(
            !text.contains('\0') && !text.contains('\u{202e}'),
            "{text:?}"
        );

        // A flood: MAX_STDERR_LINES_PER_SECOND lines a second, the rest counted.
        let flood = "line\n".repeat(500);
        let text = logged(flood.as_bytes());
        let logged_lines = text
            .lines()
            .filter(|line| line.ends_with("line=line"))
            .count();
        assert_eq!(logged_lines, MAX_STDERR_LINES_PER_SECOND as usize, "{text}");
        assert!(text.contains("dropped=450"), "{text}");
    }

    #[test]
    fn an_own_directory_is_new_empty_private_and_removed() {
        let dir = Workdir::for_upstream("notes", None).unwrap();
        let path = dir.path().to_owned();
        assert!(path.starts_with(std::env::temp_dir()), "{path:?}");
        assert_eq!(std::fs::read_dir(&path).unwrap().count(), 0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        let other = Workdir::for_upstream("notes", None).unwrap();
        assert_ne!(other.path(), path);
        drop(dir);
        assert!(!path.exists());
        let missing = Workdir::for_upstream("notes", Some(Path::new("/nonexistent/notes")));
        assert!(missing.unwrap_err().contains("is not a directory"));
    }
}
