//! Shared by the tests that read `tracing` events: a global subscriber that records every
//! event of the test binary, with the thread that emitted it.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};

/// One `tracing` event: the thread that emitted it, its target, its level and its fields, as
/// text.
#[derive(Debug, Clone)]
pub struct Captured {
    pub thread: ThreadId,
    pub target: String,
    pub level: tracing::Level,
    pub fields: BTreeMap<String, String>,
}

struct Recorder(&'static Mutex<Vec<Captured>>);

/// Every `tracing` event of this test binary.
///
/// A global subscriber, installed before any test makes an event: a subscriber set with
/// `tracing::subscriber::with_default` on one test's thread can miss events, since the other
/// tests, on other threads without it, register the same call sites at the same time.
/// Each test filters the events of its own thread.
pub fn traced() -> &'static Mutex<Vec<Captured>> {
    static CAPTURED: OnceLock<&'static Mutex<Vec<Captured>>> = OnceLock::new();
    CAPTURED.get_or_init(|| {
        let captured: &'static Mutex<Vec<Captured>> = Box::leak(Box::default());
        let subscriber = tracing_subscriber::registry().with(Recorder(captured));
        tracing::subscriber::set_global_default(subscriber)
            .expect("no other global subscriber in this test binary");
        captured
    })
}

/// The events of target `target` emitted by this thread so far.
pub fn traced_here(target: &str) -> Vec<Captured> {
    let here = std::thread::current().id();
    traced()
        .lock()
        .unwrap()
        .iter()
        .filter(|event| event.thread == here && event.target == target)
        .cloned()
        .collect()
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Recorder {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(Captured {
            thread: std::thread::current().id(),
            target: event.metadata().target().to_owned(),
            level: *event.metadata().level(),
            fields,
        });
    }
}
