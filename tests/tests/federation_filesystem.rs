//! The published `@modelcontextprotocol/server-filesystem` (npm, pinned in
//! `upstreams/package.json` and `package-lock.json`, installed with `npm ci` on the first
//! run) federated over stdio, its root a temporary directory: its tools listed per subject
//! with the file's scopes, a file read through the gate with its content intact (text and
//! image bytes), the upstream's own refusal of a path outside its root as the tool's error,
//! and a write that waits for a person's approval before it is forwarded.

mod upstreams;

use std::path::PathBuf;

use registry_core::access::Access;
use registry_core::approval::Verdict;
use registry_core::content::Content;
use registry_core::{ErrorKind, Profile, Registry, Subject, ToolCall};
use registry_mcp::upstream::{Federation, UpstreamLock, UpstreamsConfig};
use serde_json::json;

use registry_examples as _;

/// A directory of its own, removed at the end.
struct Root(PathBuf);

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn names(registry: &Registry, subject: &Subject) -> Vec<String> {
    registry
        .open_run("list", subject)
        .export(Profile::Mcp)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Text with what breaks naive handling: accents, a check mark, a NUL, CRLF, a quote.
const NOTES: &str = "h\u{e9}llo \u{2713}\r\nline \"two\"\u{0}\n\u{202e}end\n";

/// The first bytes of a PNG, then bytes that are not UTF-8.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x00\x01";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filesystem_server_reads_through_the_gate_and_writes_only_once_approved() {
    let root = Root(std::env::temp_dir().join(format!("federation-fs-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&root.0);
    std::fs::create_dir_all(&root.0).unwrap();
    // The server resolves its root (a temporary directory may be a symbolic link).
    let dir = root.0.canonicalize().unwrap();
    std::fs::write(dir.join("notes.txt"), NOTES).unwrap();
    std::fs::write(dir.join("pixel.png"), PNG).unwrap();
    let entry = upstreams::installed("@modelcontextprotocol/server-filesystem/dist/index.js");
    let text = format!(
        "[[upstream]]\nname = \"files\"\ncommand = [\"node\", {entry:?}, {dir:?}]\n\
         scopes = [\"files:read\"]\nconnect_timeout_ms = 30000\n\
         [upstream.tools.write_file]\nscopes = [\"files:write\"]\nneeds_approval = true\n\
         [upstream.tools.edit_file]\nscopes = [\"files:write\"]\nneeds_approval = true\n\
         [upstream.tools.move_file]\nscopes = [\"files:write\"]\nneeds_approval = true\n\
         [upstream.tools.create_directory]\nscopes = [\"files:write\"]\n",
        entry = entry.display().to_string(),
        dir = dir.display().to_string(),
    );
    let config = UpstreamsConfig::from_toml(&text).unwrap();
    let federation = Federation::connect(config, UpstreamLock::in_memory(), &[])
        .await
        .unwrap();
    let registry = federation.register(Registry::builder()).build().unwrap();
    federation.attach(&registry);
    registry.check_readiness().await;
    assert!(federation.is_healthy());
    let withheld: Vec<_> = federation
        .tools()
        .into_iter()
        .filter(|tool| tool.withheld.is_some())
        .collect();
    assert!(withheld.is_empty(), "{withheld:?}");

    // Per subject: the reader sees the read tools only, the writer the write tools only,
    // nobody nothing; readOnlyHint grants nothing (a read-only run sees nothing).
    let reader = Subject::new("acme").with_scopes(["files:read"]);
    let writer = Subject::new("acme").with_scopes(["files:write"]);
    let read_tools = names(&registry, &reader);
    for name in [
        "files_read_text_file",
        "files_read_media_file",
        "files_list_directory",
        "files_search_files",
    ] {
        assert!(read_tools.contains(&name.to_owned()), "{read_tools:?}");
    }
    assert!(!read_tools.contains(&"files_write_file".to_owned()));
    assert_eq!(
        names(&registry, &writer),
        [
            "files_create_directory",
            "files_edit_file",
            "files_move_file",
            "files_write_file"
        ]
    );
    assert!(names(&registry, &Subject::new("acme")).is_empty());
    assert!(names(&registry, &reader.clone().with_access(Access::ReadOnly)).is_empty());

    // A read, forwarded: the content comes back byte for byte.
    let run = registry.open_run("r1", &reader);
    let path = dir.join("notes.txt").display().to_string();
    let read = run
        .call(ToolCall::new(
            "c1",
            "files_read_text_file",
            json!({ "path": path }),
        ))
        .await;
    assert_eq!(read.error_kind(), None, "{:?}", read.error_text());
    assert_eq!(read.blocks()[0].as_text(), Some(NOTES));
    let media = run
        .call(ToolCall::new(
            "c2",
            "files_read_media_file",
            json!({ "path": dir.join("pixel.png").display().to_string() }),
        ))
        .await;
    assert_eq!(media.error_kind(), None, "{:?}", media.error_text());
    let image = media
        .blocks()
        .iter()
        .find_map(|block| match block {
            Content::Image(image) => Some(image.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("an image block: {:?}", media.blocks()));
    assert_eq!(image.mime_type(), "image/png");
    assert_eq!(image.data(), PNG);
    // Outside its root: the upstream's own refusal, as the tool's error.
    let outside = run
        .call(ToolCall::new(
            "c3",
            "files_read_text_file",
            json!({ "path": "/etc/hostname" }),
        ))
        .await;
    assert_eq!(outside.error_kind(), Some(ErrorKind::ExecutionFailed));
    assert!(
        outside.error_text().unwrap().contains("outside allowed"),
        "{:?}",
        outside.error_text()
    );
    // Hidden from the reader: not forwarded.
    let hidden = run
        .call(ToolCall::new(
            "c4",
            "files_write_file",
            json!({ "path": dir.join("x.txt").display().to_string(), "content": "x" }),
        ))
        .await;
    assert_eq!(hidden.error_kind(), Some(ErrorKind::NotAllowed));

    // A write waits for a person's approval: nothing is written before it.
    let target = dir.join("written.txt");
    let writing = registry.open_run("w1", &writer);
    let pending = writing
        .call(ToolCall::new(
            "c5",
            "files_write_file",
            json!({ "path": target.display().to_string(), "content": NOTES }),
        ))
        .await;
    assert_eq!(pending.error_kind(), Some(ErrorKind::ApprovalRequired));
    assert!(!target.exists());
    assert!(!dir.join("x.txt").exists());
    let id = pending
        .approval()
        .expect("an approval request")
        .id()
        .to_owned();
    let written = writing
        .decide(&id, Verdict::approve())
        .await
        .unwrap()
        .into_answer()
        .unwrap();
    assert_eq!(written.error_kind(), None, "{:?}", written.error_text());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), NOTES);

    // Pinned, as every upstream tool is.
    assert!(
        federation
            .lock_text()
            .contains("[pin]\nupstream = files\ntool = \"write_file\"\n")
    );
}
