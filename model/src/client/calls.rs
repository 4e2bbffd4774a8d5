//! Settling the application's calls: errors, unknown outcomes, time-outs.

use super::{Client, Purpose, ERR_TIMED_OUT};
use crate::http::{ClientMessage, Request};
use crate::ids::{CallKey, ConnId};
use crate::trace::StepKind;

impl Client {
    /// Every call already sent: an idempotent one is marked to be sent again, a non-idempotent
    /// one is reported as unknown outcome with `reason` (it may have run; it must not run twice).
    pub(super) fn settle_sent_calls(&mut self, reason: &str) {
        for key in self.keys_in_issue_order() {
            let Some(call) = self.calls.get(&key) else { continue };
            if call.request.is_none() {
                continue;
            }
            if call.idempotent {
                self.mark_for_resend(key);
            } else {
                self.resolve_unknown(key, reason.to_string());
            }
        }
    }

    pub(super) fn time_out(&mut self, key: CallKey) {
        if let Some(request) = self.calls.get(&key).and_then(|c| c.request) {
            let cancel = Request::post(self.session.clone(), ClientMessage::Cancelled { request });
            self.open(Purpose::Notification, cancel, false);
        }
        self.resolve_error(key, ERR_TIMED_OUT.to_string());
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
