//! Settling the application's calls: errors, unknown outcomes, time-outs; and what the
//! application does to the client on purpose besides calling (re-initialize, a bogus resume).

use super::{Client, Handshake, Owner, Purpose, ERR_TIMED_OUT, ERR_TIMED_OUT_SENT};
use crate::config::CloseHandling;
use crate::http::ClientMessage;
use crate::ids::{CallKey, ConnId, EventId};
use crate::time::Instant;
use crate::trace::StepKind;

impl Client {
    /// Every call already sent: an idempotent one is marked to be sent again, a non-idempotent
    /// one is reported as unknown outcome with `reason` (it may have run; it must not run twice).
    pub(super) fn settle_sent_calls(&mut self, reason: &str) {
        for key in self.keys_in_issue_order() {
            let Some(call) = self.calls.get(&key) else { continue };
            if call.request.is_none() || self.polls_task(key) {
                continue;
            }
            if call.idempotent {
                self.mark_for_resend(key);
            } else {
                self.resolve_unknown(key, reason.to_string());
            }
        }
    }

    /// The request timeout: a cancellation is sent for a request that went out, and the call is
    /// resolved. The SDKs report it as an error whatever happened to the request; the decision
    /// procedure knows better: a request that was sent may have run (the design note's "reconcile
    /// in-flight requests as unknown outcome"), so it says unknown outcome, and only a request
    /// never sent is a plain failure.
    pub(super) fn time_out(&mut self, key: CallKey) {
        let sent = self.calls.get(&key).and_then(|c| c.request);
        if let Some(request) = sent {
            let cancel = self.post_request(ClientMessage::Cancelled { request });
            self.open(Purpose::Notification, cancel, false);
        }
        if sent.is_some() && self.policy.close_handling == CloseHandling::DecisionProcedure {
            self.resolve_unknown(key, ERR_TIMED_OUT_SENT.to_string());
        } else {
            self.resolve_error(key, ERR_TIMED_OUT.to_string());
        }
    }

    pub(super) fn resolve_error(&mut self, key: CallKey, error: String) {
        if self.calls.contains_key(&key) {
            self.record(StepKind::AppError { call: key, error });
            self.resolve(key, None);
        }
    }

    pub(super) fn resolve_unknown(&mut self, key: CallKey, reason: String) {
        if self.calls.contains_key(&key) {
            self.record(StepKind::AppUnknownOutcome { call: key, reason });
            self.resolve(key, None);
        }
    }

    /// Forgets a resolved call. Its connection is closed unless it is `via`, the one that carried
    /// the answer (the server ends that one itself).
    pub(super) fn resolve(&mut self, key: CallKey, via: Option<ConnId>) {
        self.forget_task(key);
        let Some(call) = self.calls.remove(&key) else { return };
        if let Some(request) = call.request {
            self.by_request.remove(&request);
        }
        if let Some(conn) = call.stream.conn {
            if Some(conn) == via {
                self.conns.remove(&conn);
            } else {
                self.abort(conn);
            }
        }
    }
}

impl Client {
    /// The application starts a new session on purpose (its reaction to a failed call,
    /// `on_error = reinitialize-reissue`): the current session is forgotten — not deleted, the
    /// server keeps it until it expires — its connections are closed and `initialize` is sent.
    /// Calls issued from now on wait for the new session.
    pub fn reinitialize(&mut self, now: Instant) {
        self.clock = now;
        let mark = self.outputs.len();
        if let Some(session) = self.session.clone() {
            self.record(StepKind::AppReinitialize { session });
        }
        self.drop_session();
        self.init_retry_at = None;
        self.init_failures = 0;
        if self.started && self.pending_delete.is_none() {
            self.begin_initialize();
        } else if self.pending_delete.is_some() {
            self.initialize_after_delete = true;
        }
        self.persist_if_changed(mark);
    }

    /// The client resumes a stream with a `Last-Event-ID` it was never given (a bug that mixes
    /// up streams or sessions, a cursor restored from elsewhere): the oldest in-flight call's
    /// stream, else the standalone stream, is reconnected at once with `GET` and `last`. What
    /// the server answers is judged by the client's own rules, as for any resumption. False
    /// when the client has no stream to resume.
    pub fn resume_with_unissued_id(&mut self, now: Instant, last: EventId) -> bool {
        self.clock = now;
        let mark = self.outputs.len();
        let in_flight = self
            .keys_in_issue_order()
            .into_iter()
            .find(|k| self.calls.get(k).is_some_and(|c| c.request.is_some() && c.resend_at.is_none()));
        let owner = match in_flight {
            Some(key) => Owner::Call(key),
            None if self.standalone.is_some() && self.handshake == Handshake::Ready => Owner::Standalone,
            None => return false,
        };
        let Some(stream) = self.stream_mut(owner) else { return false };
        let old = stream.conn.take();
        stream.reconnect_at = None;
        stream.reconnect_with = Some(last);
        if let Some(conn) = old {
            self.abort(conn);
        }
        self.reconnect(owner);
        self.persist_if_changed(mark);
        true
    }
}
