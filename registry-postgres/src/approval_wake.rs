//! Waking the waits on approval requests ([`ApprovalStore::watch`]) from the database: one
//! listener connection per plane, `LISTEN registry_approvals`, whose notifications (sent by a
//! trigger in the transaction of every decision, migration 15) wake the waits on that id.
//!
//! While the listener is not connected, `watch` answers `None` and the waiting question polls;
//! when its connection drops, every wait is woken (it checks, then polls) and the listener
//! connects again, with backoff.
//!
//! [`ApprovalStore::watch`]: registry_core::approval::ApprovalStore::watch

use std::sync::Weak;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use registry_core::approval::ApprovalWatchers;
use tokio_postgres::AsyncMessage;

use crate::plane::{ControlPlane, Inner};

/// The channel the trigger notifies on.
const CHANNEL: &str = "registry_approvals";

/// The waits of one plane and the state of its listener.
#[derive(Debug, Default)]
pub(crate) struct ApprovalWakes {
    watchers: ApprovalWatchers,
    /// Whether the listener was started (once per plane).
    started: AtomicBool,
    /// Whether it listens now: waits registered now are woken by notifications.
    listening: AtomicBool,
}

impl ControlPlane {
    /// A wait for approval request `id` to change; `None` while the listener is not
    /// listening (started here the first time), or at the watchers' bound.
    pub(crate) fn watch_approval(
        &self,
        id: &str,
    ) -> Option<registry_core::definition::BoxFuture<'static, ()>> {
        let wakes = &self.inner.approval_wakes;
        if !wakes.started.swap(true, Ordering::AcqRel) {
            self.inner
                .handle
                .spawn(listen(std::sync::Arc::downgrade(&self.inner)));
        }
        if !wakes.listening.load(Ordering::Acquire) {
            return None;
        }
        wakes.watchers.watch(&crate::text::text(id))
    }
}

/// The listener: connects, listens, wakes the waits on each id notified; until the plane is
/// dropped.
async fn listen(plane: Weak<Inner>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let Some(inner) = plane.upgrade() else {
            return;
        };
        let control = ControlPlane { inner };
        let timeout = control.settings().timeout;
        let connected = control.dedicated().await;
        // The listener never keeps the plane alive.
        drop(control);
        match connected {
            Ok((client, mut connection)) => {
                let weak = plane.clone();
                // Drives the connection; wakes the waits on each id notified.
                let mut driver = tokio::spawn(async move {
                    let mut messages =
                        futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                    while let Some(message) = messages.next().await {
                        match message {
                            Ok(AsyncMessage::Notification(notice)) => {
                                let Some(inner) = weak.upgrade() else {
                                    return;
                                };
                                inner.approval_wakes.watchers.wake(notice.payload());
                            }
                            Ok(_) => {}
                            Err(error) => {
                                tracing::warn!(%error, "the approvals' listener lost its connection; questions poll until it is back");
                                return;
                            }
                        }
                    }
                });
                let listened = tokio::time::timeout(
                    timeout,
                    client.batch_execute(&format!("LISTEN {CHANNEL}")),
                )
                .await;
                if matches!(listened, Ok(Ok(()))) {
                    if let Some(inner) = plane.upgrade() {
                        inner
                            .approval_wakes
                            .listening
                            .store(true, Ordering::Release);
                    }
                    backoff = Duration::from_millis(100);
                    loop {
                        tokio::select! {
                            _ = &mut driver => break,
                            _ = tokio::time::sleep(Duration::from_secs(1)) => {
                                if plane.strong_count() == 0 {
                                    driver.abort();
                                    return;
                                }
                            }
                        }
                    }
                } else {
                    driver.abort();
                }
                drop(client);
                let Some(inner) = plane.upgrade() else {
                    return;
                };
                inner
                    .approval_wakes
                    .listening
                    .store(false, Ordering::Release);
                // Whatever was notified meanwhile is lost: every wait checks again.
                inner.approval_wakes.watchers.wake_all();
            }
            Err(error) => {
                tracing::debug!(%error, "the approvals' listener cannot connect; trying again");
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}
