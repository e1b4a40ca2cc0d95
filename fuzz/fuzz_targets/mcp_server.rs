//! The MCP server's message handling: the input is what a client writes to the server,
//! newline-delimited JSON-RPC (stdio's framing), read through rmcp's transport into the
//! `registry-mcp` handler (`initialize`, `tools/list`, `tools/call`, approvals, pings,
//! notifications, garbage), exactly as `McpServer::serve_io` serves a stdio client.
//!
//! Each input gets a fresh server (hence a fresh client and run) on a fresh single-threaded
//! Tokio runtime with paused time, over one shared registry (the one `call_text` uses). The
//! client writes the input line by line, each when the server has done all it could with
//! the previous one (so a line can answer the server's `elicitation/create`, whose ids count
//! from 0), waits a (virtual) minute and closes its end; the server then answers what is in
//! flight and returns. `$STATE` in a line stands for the last `requestState` the server sent
//! (a random id), so that a retried call can answer an approval question (2026-07-28).
//!
//! Beyond "no panic, no hang": every line the server writes must be JSON.

#![no_main]

#[path = "common/tools.rs"]
mod tools;

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use registry_mcp::{McpServer, ServerOptions};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tools::fixture;

/// The server's output, kept to be checked.
#[derive(Clone, Default)]
struct Output(Arc<Mutex<Vec<u8>>>);

impl AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut out = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Bounded: a server that talks without end is caught by the timeout, not by memory.
        if out.len() < 64 << 20 {
            out.extend_from_slice(buf);
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// `line` with each `$STATE` replaced by the last `requestState` the server wrote (the
/// random id of an approval question, on protocol 2026-07-28), so that an input can answer
/// it in a retried `tools/call`.
fn with_request_state(line: &[u8], output: &Output) -> Vec<u8> {
    const PLACEHOLDER: &[u8] = b"$STATE";
    const KEY: &[u8] = b"\"requestState\":\"";
    if !line.windows(PLACEHOLDER.len()).any(|w| w == PLACEHOLDER) {
        return line.to_vec();
    }
    let out = output.0.lock().unwrap_or_else(PoisonError::into_inner);
    let state: &[u8] = out
        .windows(KEY.len())
        .rposition(|w| w == KEY)
        .map(|at| {
            let rest = &out[at + KEY.len()..];
            &rest[..rest.iter().position(|b| *b == b'"').unwrap_or(rest.len())]
        })
        .unwrap_or(b"");
    let mut replaced = Vec::with_capacity(line.len() + state.len());
    let mut rest = line;
    while let Some(at) = rest
        .windows(PLACEHOLDER.len())
        .position(|w| w == PLACEHOLDER)
    {
        replaced.extend_from_slice(&rest[..at]);
        replaced.extend_from_slice(state);
        rest = &rest[at + PLACEHOLDER.len()..];
    }
    replaced.extend_from_slice(rest);
    replaced
}

fuzz_target!(|data: &[u8]| {
    let fixture = fixture();
    let n = fixture.inputs.fetch_add(1, Ordering::Relaxed);
    fixture.approvals.reset();

    // The defaults, but for a change poll that would only wake the runtime in vain (the
    // registry does not change here).
    let options = ServerOptions::default().with_poll_interval(Duration::from_secs(10));
    let server =
        McpServer::new(fixture.registry.clone(), options).expect("the registry is MCP-compatible");
    // Paused time: the clock jumps to the next timer whenever every task waits, so the
    // client's pauses below cost no real time, and neither do the server's timeouts.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a Tokio runtime");
    let output = Output::default();
    let input = data.to_vec();
    let served = runtime.block_on(async {
        let (mut client, server_end) = tokio::io::duplex(1 << 16);
        // The client writes one line at a time and waits until the server is idle before the
        // next, so that a line can answer what the server asked (an `elicitation/create`),
        // then waits a minute and hangs up.
        let seen = output.clone();
        tokio::spawn(async move {
            for line in input.split_inclusive(|b| *b == b'\n') {
                let line = with_request_state(line, &seen);
                if client.write_all(&line).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            tokio::time::sleep(Duration::from_secs(60)).await;
            drop(client);
        });
        let (read, _write) = tokio::io::split(server_end);
        server
            .serve_io(
                &format!("fuzz-{n}"),
                tools::subject(n),
                read,
                output.clone(),
            )
            .await
    });
    drop(runtime);
    std::hint::black_box(served.map_err(|error| error.to_string()).err());

    let out = output.0.lock().unwrap_or_else(PoisonError::into_inner);
    if std::env::var_os("FUZZ_MCP_ECHO").is_some() {
        eprintln!("{}", String::from_utf8_lossy(&out));
    }
    for line in out.split(|b| *b == b'\n').filter(|line| !line.is_empty()) {
        if let Err(error) = serde_json::from_slice::<serde_json::Value>(line) {
            panic!(
                "the server wrote a line that is not JSON ({error}): {}",
                String::from_utf8_lossy(line)
            );
        }
    }
});
