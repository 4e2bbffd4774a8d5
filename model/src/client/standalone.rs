//! What the standalone `GET` stream's fate does to the rest of the client, by policy: a `405`
//! retried (`ClientPolicy::standalone_405`), the whole transport closed when the stream is lost
//! (`ClientPolicy::standalone_loss`), and calls held until its response head
//! (`ClientPolicy::await_standalone_head`).

use super::close_rules::Ended;
use super::{Client, Owner, ERR_TRANSPORT_CLOSED};
use crate::config::{Standalone405, StandaloneLoss};
use crate::http::Status;
use crate::time::Instant;
use crate::trace::StepKind;

impl Client {
    /// A standalone stream's connection ended: handles what the policies above decide and
    /// returns true, or false to leave it to the close rules.
    pub(super) fn standalone_ended(&mut self, now: Instant, ended: &Ended) -> bool {
        if ended.owner != Owner::Standalone || self.standalone.is_none() {
            return false;
        }
        let status = ended.status;
        if self.policy.standalone_loss == StandaloneLoss::CloseTransport {
            // The first GET fails the transport only when its connection broke before an answer:
            // a refusal carries no event-stream body, which reads as "no stream" (a 5xx too:
            // go-sdk v1.7.0 mcp/streamable.go:2142-2159 returns before checkResponse).
            let refused_first = !ended.reconnect && status.is_none() && !ended.got_ok;
            let refused_again = ended.reconnect && status.is_some();
            if refused_first || refused_again {
                let why = match status {
                    Some(s) => format!("the standalone GET was answered {s}"),
                    None => format!("the standalone GET's connection {}", ended.end),
                };
                self.close_transport(Owner::Standalone, format!("the standalone stream was lost: {why}"));
                return true;
            }
            // Otherwise the connect that waited for the stream goes on.
            self.standalone_settled();
            // Any other refusal of the first GET means what a 405 does: no standalone stream.
            if let Some(s) = status.filter(|s| *s != Status::METHOD_NOT_ALLOWED) {
                self.record_decision(Owner::Standalone, None, None, Some(format!("HTTP {s}: taken as 405")));
                self.standalone = None;
                return true;
            }
        }
        self.standalone_settled();
        if status == Some(Status::METHOD_NOT_ALLOWED) && self.policy.standalone_405 == Standalone405::Retry {
            self.record_decision(Owner::Standalone, None, None, Some("HTTP 405: one failed attempt".into()));
            let last = self.standalone.as_ref().and_then(|s| s.last_event_id.clone());
            self.schedule_reconnect(now, ended, last);
            return true;
        }
        false
    }

    /// The standalone stream was given up (its attempts spent): under `close-transport` the
    /// transport goes with it.
    pub(super) fn standalone_given_up(&mut self) {
        self.standalone_settled();
        if self.policy.standalone_loss == StandaloneLoss::CloseTransport && self.closed.is_none() {
            self.close_transport(Owner::Standalone, "the standalone stream's reconnects were spent".to_string());
        }
    }

    /// The transport closes for good, for `why`, seen on `owner`'s stream: every call in flight
    /// fails, every connection is closed, and every later call fails at once ("not connected").
    pub(super) fn close_transport(&mut self, owner: Owner, why: String) {
        self.record_decision(owner, None, None, Some(format!("{ERR_TRANSPORT_CLOSED}: {why}")));
        self.closed = Some(why.clone());
        if self.handshake == super::Handshake::AwaitingStandalone {
            self.handshake = super::Handshake::Idle;
        }
        for key in self.keys_in_issue_order() {
            self.resolve_error(key, ERR_TRANSPORT_CLOSED.to_string());
        }
        // The application learns that the connection is gone (the Go SDK: every later call and
        // `ClientSession.Wait` return the failure), so the standalone stream goes with a report,
        // as when it is given up by itself.
        if self.policy.report_stream_given_up {
            if let (Some(stream), Some(session)) = (self.standalone.as_ref(), self.session.clone()) {
                let after = stream.last_event_id.clone();
                self.record(StepKind::AppStreamLost { session, after });
            }
        }
        self.drop_session();
        self.standalone = None;
        self.init_retry_at = None;
    }
}
