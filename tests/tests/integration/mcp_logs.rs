//! Log lines nobody can forge: the example server, started as a child process, gets JSON-RPC
//! requests whose ids carry a line break and a forged event, NUL, and U+202E; rmcp logs each
//! failed request's id (`WARN rmcp::service: response error id=...`) as the client sent it.
//! Every line the server writes must still be one event of its own, in text and in JSON.
//!
//! The requests are raw HTTP: rmcp's client numbers its requests itself and cannot send an id
//! chosen by an attacker.

use crate::mcp_support;

use std::time::{Duration, Instant};

use mcp_support::*;
use reqwest::StatusCode;
use serde_json::{Value, json};

const INITIALIZE: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#;

/// The ids sent: each makes rmcp log one warning naming it.
const HOSTILE_IDS: [&str; 3] = [
    "x\nFORGEDLINE outcome=ok tool=deploy",
    "nul\u{0}FORGEDLINE outcome=ok",
    "bidi\u{202E}FORGEDLINE\u{2066}ok\r\nFORGEDLINE",
];

async fn post(url: &str, session: Option<&str>, body: &str) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {RELEASE_TOKEN}"))
        .header("mcp-protocol-version", "2025-11-25")
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    within("a raw request", request.send())
        .await
        .expect("the server answers")
}

/// Starts the example server with `format`, sends the hostile ids in one session, and gives
/// its log lines once the three warnings are in.
async fn hostile_ids_logged(format: &str) -> Vec<String> {
    let tokens = tokens_file();
    let server = start_example([
        "--tokens".as_ref(),
        tokens.as_os_str(),
        "--log-format".as_ref(),
        format.as_ref(),
    ])
    .await;
    let opened = post(&server.url, None, INITIALIZE).await;
    assert_eq!(opened.status(), StatusCode::OK);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = within("the initialize answer", opened.text()).await;
    let initialized = post(&server.url, Some(&session), INITIALIZED).await;
    assert_eq!(initialized.status(), StatusCode::ACCEPTED);
    for id in HOSTILE_IDS {
        // A cursor the server never gave: rmcp answers (and logs) an error with this id.
        let list = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list",
                          "params": {"cursor": "not-a-cursor"}});
        let answer = post(&server.url, Some(&session), &list.to_string()).await;
        let text = within("the answer", answer.text()).await.unwrap();
        assert!(text.contains("invalid cursor"), "{text}");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let lines = server.lines.lock().unwrap().clone();
        let warned = lines
            .iter()
            .filter(|line| line.contains("response error"))
            .count();
        if warned >= HOSTILE_IDS.len() {
            // A moment more for anything written after the warnings.
            tokio::time::sleep(Duration::from_millis(200)).await;
            return server.lines.lock().unwrap().clone();
        }
        assert!(Instant::now() < deadline, "rmcp did not warn: {lines:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether `c` would hide, reorder or break a line: what the server must never write raw.
fn hostile(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_request_id_rmcp_logs_cannot_forge_a_text_line() {
    let lines = hostile_ids_logged("text").await;
    let levels = [" TRACE ", " DEBUG ", "  INFO ", "  WARN ", " ERROR "];
    for line in &lines {
        assert!(!line.starts_with("FORGEDLINE"), "a forged line: {line:?}");
        // Each line is one event: a timestamp and a level first.
        let head = line.get(..40).unwrap_or(line);
        assert!(
            line.starts_with(|c: char| c.is_ascii_digit())
                && line.as_bytes().get(10) == Some(&b'T')
                && levels.iter().any(|level| head.contains(level)),
            "a line that is not an event's: {line:?}"
        );
        assert!(
            !line.chars().any(hostile),
            "a raw control character: {line:?}"
        );
    }
    let warnings: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains("rmcp::service") && line.contains("response error"))
        .collect();
    assert_eq!(warnings.len(), HOSTILE_IDS.len(), "{lines:?}");
    // As many lines name the forged text as there were events naming it.
    let forged = lines
        .iter()
        .filter(|line| line.contains("FORGEDLINE"))
        .count();
    assert_eq!(forged, HOSTILE_IDS.len(), "{lines:?}");
    let all = lines.join("\n");
    assert!(
        all.contains(r#"id="x\nFORGEDLINE outcome=ok tool=deploy""#),
        "{all}"
    );
    assert!(all.contains(r#"id="nul\0FORGEDLINE outcome=ok""#), "{all}");
    assert!(
        all.contains(r#"id="bidi\u{202e}FORGEDLINE\u{2066}ok\r\nFORGEDLINE""#),
        "{all}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_request_id_rmcp_logs_cannot_forge_a_json_line() {
    let lines = hostile_ids_logged("json").await;
    let mut ids = Vec::new();
    for line in &lines {
        assert!(!line.starts_with("FORGEDLINE"), "a forged line: {line:?}");
        assert!(
            !line.chars().any(hostile),
            "a raw control character: {line:?}"
        );
        let event: Value = serde_json::from_str(line)
            .unwrap_or_else(|error| panic!("a line that is not JSON ({error}): {line:?}"));
        assert!(
            event["timestamp"].is_string() && event["level"].is_string(),
            "{event}"
        );
        if event["target"] == "rmcp::service" && event["fields"]["message"] == "response error" {
            ids.push(event["fields"]["id"].as_str().unwrap().to_owned());
        }
    }
    // One event a line, and each id as the client sent it, byte for byte.
    assert_eq!(ids, HOSTILE_IDS, "{lines:?}");
    let forged = lines
        .iter()
        .filter(|line| line.contains("FORGEDLINE"))
        .count();
    assert_eq!(forged, HOSTILE_IDS.len(), "{lines:?}");
}

/// An upstream over stdio that lists no tool, then says its list changed and answers the next
/// `tools/list` with an error whose message forges fields (the review's N15).
const FORGING_UPSTREAM: &str = r#"
import json, sys
lists = 0
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    def answer(result):
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], **result}), flush=True)
    if method == "initialize":
        answer({"result": {"protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "forger", "version": "1"}}})
    elif method == "tools/list":
        lists += 1
        if lists == 1:
            answer({"result": {"tools": []}})
            print(json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}), flush=True)
        else:
            answer({"error": {"code": -32603, "message": "x outcome=ok principal=token:admin"}})
    elif "id" in message:
        answer({"result": {}})
"#;

/// The names of the `name=value` fields of a text line's tail (after its message): a value is
/// one bare word, or a quoted string with its escapes.
fn field_names(tail: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = tail.trim_start();
    while !rest.is_empty() {
        let (name, value) = rest.split_once('=').unwrap_or((rest, ""));
        if name.contains(' ') {
            // A word that is no field: its own "name".
            let (word, after) = rest.split_once(' ').unwrap_or((rest, ""));
            names.push(word.to_owned());
            rest = after.trim_start();
            continue;
        }
        names.push(name.to_owned());
        rest = match value.strip_prefix('"') {
            Some(quoted) => {
                let mut chars = quoted.char_indices();
                let mut end = quoted.len();
                while let Some((at, c)) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => {
                            end = at + 1;
                            break;
                        }
                        _ => {}
                    }
                }
                &quoted[end..]
            }
            None => value.split_once(' ').map_or("", |(_, after)| after),
        }
        .trim_start();
    }
    names
}

/// N15: an upstream's text in a text log line stays inside its field's quotes: the error
/// message of a real upstream (a child process over stdio), `x outcome=ok
/// principal=token:admin`, cannot add `outcome` and `principal` fields to the warning.
#[tokio::test]
async fn an_upstreams_error_text_cannot_add_a_field_to_a_text_line() {
    let dir = std::env::temp_dir().join(format!("mcp-logs-n15-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("forger.py");
    std::fs::write(&script, FORGING_UPSTREAM).unwrap();
    let upstreams = dir.join("upstreams.toml");
    std::fs::write(
        &upstreams,
        format!(
            "[[upstream]]\nname = \"forger\"\ncommand = [\"python3\", {:?}]\n",
            script.display().to_string()
        ),
    )
    .unwrap();
    let tokens = tokens_file();
    let server = start_example([
        "--tokens".as_ref(),
        tokens.as_os_str(),
        "--upstreams".as_ref(),
        upstreams.as_os_str(),
        "--log-format".as_ref(),
        "text".as_ref(),
    ] as [&std::ffi::OsStr; 6])
    .await;
    let message = "cannot list the upstream's tools again";
    let deadline = Instant::now() + Duration::from_secs(20);
    let line = loop {
        let found = server
            .lines
            .lock()
            .unwrap()
            .iter()
            .find(|line| line.contains(message))
            .cloned();
        if let Some(line) = found {
            break line;
        }
        assert!(Instant::now() < deadline, "no warning: {:#?}", server.lines);
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let tail = line.split_once(message).unwrap().1;
    assert_eq!(field_names(tail), ["upstream", "reason"], "{line}");
    assert!(
        tail.contains("x outcome=ok principal=token:admin"),
        "{line}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
