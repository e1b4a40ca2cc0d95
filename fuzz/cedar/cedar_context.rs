//! Cedar's view of a call built from hostile input: the subject's `data_domain` and the call's
//! arguments come from the fuzzer (deep nesting, integers outside 64 bits, floats, NUL and
//! format characters in keys and values, keys the schema does not know, wrong types).
//!
//! Input (bytes): `DATA_DOMAIN \n ARGUMENT_TEXT`, each part UTF-8 with invalid sequences
//! replaced; the first byte of the domain part also picks the caller (its lowest bit: code).
//!
//! The registry's one tool takes an integer `cents`, a nested object `meta` (`depth`, an
//! integer, and `inner.tag`, a string), and `tags`, an array of strings; its schema lets
//! unknown keys through, so hostile shapes reach the gate. The policies permit only the
//! `finance` data domain and forbid, each by reading the arguments, large refunds, a `blocked`
//! tag, a deep `meta.depth` and an `inner.tag` of `stop`. Whatever the input:
//!
//! - nothing panics, and every decision is made (allowed, or refused with an error observation);
//! - a call that runs was made by a subject whose data domain is exactly `finance`, and its
//!   arguments, read independently here from the JSON, meet none of the forbids: `cents` an
//!   integer within 64 bits and at most 100,000 (or absent), no `blocked` tag, `meta.depth`
//!   at most 8, `meta.inner.tag` not `stop`. A value Cedar cannot be shown (a float, an
//!   integer beyond 64 bits, nesting deeper than 16) can never slip a call past a forbid.

#![no_main]

#[path = "oracle.rs"]
mod oracle;

libfuzzer_sys::fuzz_target!(|data: &[u8]| oracle::check(data));
