//! Argument text through resolution: `ToolCall::from_json_text` then `Run::call_blocking`
//! (strict parse, limits, schema validation, the gate, execution), and the observation
//! rendered for every profile.
//!
//! Input (bytes, read as UTF-8 with invalid sequences replaced):
//!
//! ```text
//! TOOL_NAME '\n' ARGUMENT_TEXT [ '\0' EDITED_ARGUMENTS ]
//! ```
//!
//! A call that needs a person's approval is then decided: approved as it is when there is no
//! `'\0'` part, approved with the edited arguments when that part is JSON, denied otherwise;
//! and decided a second time, which must be refused. A call to the rate-limited `ping` is
//! made three times, so that the limit runs out.

#![no_main]

#[path = "common/tools.rs"]
mod tools;

use std::sync::atomic::Ordering;

use libfuzzer_sys::fuzz_target;
use registry_core::approval::Verdict;
use registry_core::{Observation, Profile, ToolCall};
use tools::fixture;

fn look_at(observation: &Observation) {
    std::hint::black_box((
        observation.json(),
        observation.error_kind(),
        observation.error_text(),
        observation.problems(),
        observation.retry_after(),
    ));
    for &profile in Profile::ALL {
        std::hint::black_box(profile.render(observation));
    }
}

fuzz_target!(|data: &[u8]| {
    let fixture = fixture();
    let n = fixture.inputs.fetch_add(1, Ordering::Relaxed);
    fixture.approvals.reset();

    let text = String::from_utf8_lossy(data);
    let (call_text, edited) = match text.split_once('\0') {
        Some((call, edited)) => (call, Some(edited)),
        None => (&*text, None),
    };
    let (name, arguments) = call_text.split_once('\n').unwrap_or((call_text, ""));

    let run = fixture
        .registry
        .open_run(format!("fuzz-{n}"), &tools::subject(n));
    let repeats = if name == "ping" { 3 } else { 1 };
    for i in 0..repeats {
        let call = ToolCall::from_json_text(format!("call_{i}"), name, arguments);
        let observation = run.call_blocking(call);
        look_at(&observation);
        let Some(request) = observation.approval() else {
            continue;
        };
        let id = request.id().to_owned();
        std::hint::black_box(request.question());
        let decided = match edited {
            None => run.decide_blocking(&id, Verdict::approve()),
            Some(edited) => match serde_json::from_str(edited) {
                Ok(arguments) => run.decide_blocking(&id, Verdict::approve().with_arguments(arguments)),
                Err(_) => run.decide_blocking(&id, Verdict::deny("denied by the fuzzer")),
            },
        };
        let first_decided = match decided {
            Ok(settled) => {
                if let Some(observation) = settled.answer() {
                    look_at(observation);
                }
                true
            }
            Err(error) => {
                std::hint::black_box(error.to_string());
                false
            }
        };
        // A decided request cannot be decided again (after edited arguments that were
        // invalid, the request is still pending, and this approves it as it is).
        match run.decide_blocking(&id, Verdict::approve()) {
            Ok(settled) => {
                assert!(!first_decided, "request {id} was decided twice");
                if let Some(observation) = settled.answer() {
                    look_at(observation);
                }
            }
            Err(error) => {
                std::hint::black_box(error.to_string());
            }
        }
    }
});
