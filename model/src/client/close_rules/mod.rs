//! A stream ended before its response: `ClientPolicy::close_handling` decides what happens.
//!
//! [`Ended`] is what the client saw of the stream's end; `Client::stream_ended` hands it to one of
//! four strategies, each in its own file:
//!
//! - `decision_procedure.rs`: the design note's procedure ([`crate::decision`]), the `reference` client;
//! - `reinitialize.rs`: the first incident's naive client (a new session, every call re-sent);
//! - `sdk.rs`: the real SDKs' rules (`SdkRules`);
//! - `reissue.rs`: the 2026-07-28 revision's client (nothing resumed, calls re-issued with new ids).

mod decision_procedure;
mod reinitialize;
mod reissue;
mod sdk;

use super::{Client, Conn, Owner, UNKNOWN_UNHONOURED};
use crate::config::{CloseHandling, CounterReset};
use crate::http::{ConnEnd, Status};
use crate::ids::EventId;
use crate::time::Instant;

/// What the client saw of a stream's connection when it ended (or, on a restart, what it must
/// assume: the connection broke while the process was down).
#[derive(Debug)]
pub(super) struct Ended {
    pub(super) owner: Owner,
    pub(super) end: ConnEnd,
    /// The status of a non-2xx answer.
    pub(super) status: Option<Status>,
    pub(super) head_event_id: Option<EventId>,
    pub(super) close_event: bool,
    pub(super) reconnect: bool,
    pub(super) got_ok: bool,
    pub(super) events: u32,
    /// Events that carried a message.
    pub(super) messages: u32,
    /// Events that carried an id.
    pub(super) ids: u32,
    /// The process restarted: resume at once, without backoff.
    pub(super) restart: bool,
}

impl Ended {
    pub(super) fn from_conn(owner: Owner, conn: Conn, end: ConnEnd) -> Self {
        let head = conn.head.as_ref();
        let failed_head = head.filter(|h| !h.status.is_success());
        Ended {
            owner,
            end,
            status: failed_head.map(|h| h.status),
            head_event_id: failed_head.and_then(|h| h.error.as_ref()).and_then(|e| e.head_event_id.clone()),
            close_event: conn.close_event,
            reconnect: conn.reconnect,
            got_ok: head.is_some_and(|h| h.status.is_success()),
            events: conn.events,
            messages: conn.messages,
            ids: conn.ids,
            restart: false,
        }
    }

    pub(super) fn restart(owner: Owner) -> Self {
        Ended {
            owner,
            end: ConnEnd::Reset,
            status: None,
            head_event_id: None,
            close_event: false,
            reconnect: false,
            got_ok: false,
            events: 0,
            messages: 0,
            ids: 0,
            restart: true,
        }
    }

    /// A stream error, as opposed to a clean end the server chose.
    pub(super) fn after_error(&self) -> bool {
        self.end != ConnEnd::Clean || self.status.is_some()
    }

    /// The stream's first request (a POST), not a reconnect GET.
    pub(super) fn was_post(&self) -> bool {
        !self.reconnect && matches!(self.owner, Owner::Call(_))
    }

    /// A reconnect answered 200 whose stream ended cleanly without a single event.
    pub(super) fn empty_resume(&self) -> bool {
        self.reconnect && self.got_ok && self.events == 0 && self.end == ConnEnd::Clean
    }

    /// A resume the server could not honour: a 409/410, or a 200 that ended cleanly without a
    /// single message.
    pub(super) fn unhonoured_resume(&self) -> bool {
        let refused = self.status.is_some_and(|s| s == Status::CONFLICT || s == Status::GONE);
        let empty = self.got_ok && self.messages == 0 && self.end == ConnEnd::Clean;
        self.reconnect && (refused || empty)
    }
}

impl Client {
    pub(super) fn stream_ended(&mut self, now: Instant, ended: Ended) {
        let still_owed = match ended.owner {
            Owner::Call(key) => self.calls.get(&key).is_some_and(|c| c.request.is_some()),
            Owner::Standalone => self.standalone.is_some(),
        };
        if !still_owed || self.standalone_ended(now, &ended) {
            return;
        }
        let reset_on_end = self.policy.reconnect.counter_reset == CounterReset::WhenSuccessfulReconnectEnds;
        if reset_on_end && ended.reconnect && ended.got_ok {
            if let Some(stream) = self.stream_mut(ended.owner) {
                stream.failures = 0;
            }
        }
        if let (Owner::Call(key), Some(max)) = (ended.owner, self.policy.max_unhonoured_resumes) {
            if ended.unhonoured_resume() {
                let count = self.stream_mut(ended.owner).map(|s| {
                    s.unhonoured += 1;
                    s.unhonoured
                });
                if count.is_some_and(|n| n > max) {
                    let note = format!("{max} resumes in a row could not be honoured: stop resuming");
                    self.record_decision(ended.owner, None, None, Some(note));
                    return self.resolve_unknown(key, UNKNOWN_UNHONOURED.to_string());
                }
            }
        }
        // The modern era resumes nothing: a broken stream is re-issued with a new id
        // (2026-07-28 changelog.mdx:28), whatever the profile's legacy close rule.
        let sdk_rules_in_modern = matches!(&self.policy.close_handling, CloseHandling::Sdk(r) if !r.modern_reissue);
        if self.speaks_modern() && !sdk_rules_in_modern {
            return self.apply_reissue(now, ended);
        }
        match self.policy.close_handling.clone() {
            CloseHandling::DecisionProcedure => self.apply_decision_procedure(now, ended),
            CloseHandling::ReinitializeAndResend => self.apply_reinitialize_and_resend(now, ended),
            CloseHandling::Sdk(rules) => self.apply_sdk_rules(now, ended, &rules),
            CloseHandling::ReissueWithNewId => self.apply_reissue(now, ended),
        }
    }
}
