//! `subscriptions/listen` on the client (`crate::subscriptions`): in the modern era the
//! application opens a listen stream when the client connects; an acknowledgment opens the
//! subscription (`listen-open`), each change on it reaches the application (`app-change`). An end
//! without the server's graceful result is abrupt: under `on_abrupt_end = tell-app` the
//! application is told at once (`app-subscription-lost`; python 2.3.0 `SubscriptionLost`, rmcp
//! 3.11.0 `SubscriptionEnd::Abrupt`) and refetches once it is acknowledged again; under
//! `relisten` the client re-listens and tells nothing. Either way the re-listen waits the
//! reconnect backoff (`client.reconnect`) and the attempts in a row are bounded by its
//! `max_attempts`; when they are spent, or the server refuses the request outright, the
//! subscription ends and the application is told.

use super::{Client, Purpose};
use crate::http::{ClientMessage, ConnEnd, ResponseHead};
use crate::ids::{ConnId, RequestId};
use crate::subscriptions::{AbruptEnd, LOST_ABRUPT};
use crate::time::Instant;
use crate::trace::StepKind;

/// The application's subscription.
#[derive(Debug, Default)]
pub(super) struct Listen {
    /// The listen POST in flight or open.
    conn: Option<ConnId>,
    /// Failed attempts in a row: the backoff exponent.
    failures: u32,
    /// When the next re-listen goes out.
    reconnect_at: Option<Instant>,
    /// The application believes it is subscribed: from an acknowledgment until it is told
    /// otherwise.
    pub(super) believed_open: bool,
}

impl Client {
    /// Opens the listen stream if the application wants one, the client speaks the modern era
    /// and none is open or scheduled.
    pub(super) fn open_listen(&mut self) {
        let idle = self.listen.as_ref().is_some_and(|l| l.conn.is_none() && l.reconnect_at.is_none());
        if !idle || !self.speaks_modern() {
            return;
        }
        let id = self.take_request_id();
        let conn = self.open(Purpose::Listen, self.post_request(ClientMessage::Listen { id }), false);
        if let Some(listen) = self.listen.as_mut() {
            listen.conn = Some(conn);
        }
    }

    /// A re-listen is due.
    pub(super) fn relisten_due(&mut self, now: Instant) {
        let due = self.listen.as_ref().and_then(|l| l.reconnect_at).is_some_and(|t| t <= now);
        if due {
            if let Some(listen) = self.listen.as_mut() {
                listen.reconnect_at = None;
            }
            self.open_listen();
        }
    }

    /// When the next re-listen is due.
    pub(super) fn next_relisten(&self) -> Option<Instant> {
        self.listen.as_ref().and_then(|l| l.reconnect_at)
    }

    /// The acknowledgment arrived on `conn`: the subscription is open.
    pub(super) fn listen_acked(&mut self, conn: ConnId, subscription: RequestId) {
        let Some(listen) = self.listen.as_mut().filter(|l| l.conn == Some(conn)) else { return };
        listen.failures = 0;
        listen.believed_open = true;
        self.record(StepKind::ListenOpen { conn, subscription });
    }

    /// The listen stream's connection ended: `head` is what it was answered, if anything.
    pub(super) fn listen_ended(&mut self, now: Instant, conn: ConnId, head: Option<&ResponseHead>, end: ConnEnd) {
        let Some(listen) = self.listen.as_mut().filter(|l| l.conn == Some(conn)) else { return };
        listen.conn = None;
        if let Some(head) = head.filter(|h| !h.status.is_success()) {
            // Refused outright (a legacy-only server's 400, a server that does not serve it):
            // python raises the error at `listen()`'s entry; nothing is retried.
            return self.end_subscription(format!("subscriptions/listen was answered HTTP {}", head.status));
        }
        if self.policy.subscriptions.on_abrupt_end == AbruptEnd::KeepFlag {
            // Nothing told, nothing re-listened: the subscription is believed open for good.
            return;
        }
        let tell = self.policy.subscriptions.on_abrupt_end.tells_app();
        if tell && self.listen.as_ref().is_some_and(|l| l.believed_open) {
            self.record(StepKind::AppSubscriptionLost { reason: format!("{LOST_ABRUPT} (connection {end})") });
            if let Some(listen) = self.listen.as_mut() {
                listen.believed_open = false;
            }
        }
        let failures = self.listen.as_ref().map_or(0, |l| l.failures) + 1;
        if self.policy.reconnect.max_attempts.is_some_and(|max| failures > max) {
            return self.end_subscription("re-listen attempts exhausted".to_string());
        }
        let delay = self.next_delay(failures - 1, true);
        if let Some(listen) = self.listen.as_mut() {
            listen.failures = failures;
            listen.reconnect_at = Some(now + delay);
        }
    }

    /// The client closed the listen stream itself, forgetting its session (`drop_session`
    /// aborts every connection): an end without the server's graceful result, so under
    /// `tell-app` the application is told; the stream is opened again when the client connects.
    pub(super) fn listen_dropped(&mut self) {
        let tell = self.policy.subscriptions.on_abrupt_end.tells_app();
        let Some(listen) = self.listen.as_mut() else { return };
        if listen.conn.take().is_none() {
            return;
        }
        if tell && std::mem::take(&mut listen.believed_open) {
            let reason = format!("{LOST_ABRUPT} (connection {})", ConnEnd::Aborted);
            self.record(StepKind::AppSubscriptionLost { reason });
        }
    }

    /// The subscription ends for good: the application is told if it still believed it open.
    fn end_subscription(&mut self, why: String) {
        let Some(listen) = self.listen.take() else { return };
        if listen.believed_open {
            self.record(StepKind::AppSubscriptionLost { reason: why });
        }
    }
}
