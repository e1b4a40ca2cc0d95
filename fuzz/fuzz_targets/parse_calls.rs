//! Every profile's `parse_calls` on a provider response: any JSON in, calls or a
//! `ParseError` out, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use registry_core::Profile;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(response) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    for &profile in Profile::ALL {
        match profile.parse_calls(&response) {
            Ok(calls) => {
                for call in &calls {
                    std::hint::black_box((call.id(), call.name(), call.arguments()));
                    std::hint::black_box(call.has_generated_id());
                }
            }
            Err(error) => {
                assert_eq!(error.profile, profile);
                std::hint::black_box(error.to_string());
            }
        }
    }
});
