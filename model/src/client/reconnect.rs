//! Reconnecting a broken stream: the attempt budget, backoff scheduling, giving up, and
//! re-sending a call as a new POST.

use super::close_rules::Ended;
use super::{reconnect_delay, Client, Owner, Stream, ERR_CONNECTION_CLOSED, ERR_EXHAUSTED, NOTE_LEFT_PENDING};
use crate::config::{CloseHandling, OnGiveUp};
use crate::ids::{CallKey, EventId};
use crate::time::{micros, Instant};
use crate::trace::StepKind;
use std::time::Duration;

impl Client {
    /// Reconnect `ended.owner` after the backoff for its attempt, with `last` as
    /// `Last-Event-ID`; or give up if its attempts are spent. A restart reconnects at once.
    pub(super) fn schedule_reconnect(&mut self, now: Instant, ended: &Ended, last: Option<EventId>) {
        let owner = ended.owner;
        let Some(n) = self.stream_mut(owner).map(|s| s.failures) else { return };
        if !self.spend_attempt(owner) {
            return self.give_up(owner);
        }
        if ended.restart {
            if let Some(stream) = self.stream_mut(owner) {
                stream.reconnect_with = last;
            }
            return self.reconnect(owner);
        }
        let delay = self.next_delay(n, ended.after_error());
        self.record(StepKind::Backoff { call: owner.call(), attempt: n + 1, delay_us: micros(delay) });
        if let Some(stream) = self.stream_mut(owner) {
            stream.reconnect_at = Some(now + delay);
            stream.reconnect_with = last;
        }
    }

    /// Resumes right away from `head`: the server just answered, so there is no outage to wait
    /// out, and every second spent waiting lets a bounded buffer evict the head it named.
    pub(super) fn resume_at_once(&mut self, owner: Owner, head: EventId) {
        if !self.spend_attempt(owner) {
            return self.give_up(owner);
        }
        if let Some(stream) = self.stream_mut(owner) {
            stream.reconnect_with = Some(head);
        }
        self.reconnect(owner);
    }

    /// Counts one more attempt for `owner`'s stream; false when none is left.
    pub(super) fn spend_attempt(&mut self, owner: Owner) -> bool {
        let max = self.policy.reconnect.max_attempts;
        let Some(stream) = self.stream_mut(owner) else { return false };
        if max.is_some_and(|max| stream.failures >= max) {
            return false;
        }
        stream.failures += 1;
        true
    }

    /// Attempts exhausted.
    pub(super) fn give_up(&mut self, owner: Owner) {
        self.give_up_with(owner, ERR_EXHAUSTED)
    }

    /// The client stops reconnecting `owner`'s stream for `why` (its attempts spent, or a
    /// refusal its SDK reads as final): the call gets what the policy gives a given-up stream.
    pub(super) fn give_up_with(&mut self, owner: Owner, why: &str) {
        let Owner::Call(key) = owner else {
            self.record_decision(owner, None, None, Some(super::NOTE_STANDALONE_GIVEN_UP.to_string()));
            let seen = self.standalone.take().and_then(|s| s.last_event_id);
            if let (true, Some(session)) = (self.policy.report_stream_given_up, self.session.clone()) {
                self.record(StepKind::AppStreamLost { session, after: seen });
            }
            return self.standalone_given_up();
        };
        self.record(StepKind::StreamGivenUp { call: key });
        let idempotent = self.calls.get(&key).is_some_and(|c| c.idempotent);
        match &self.policy.close_handling {
            CloseHandling::Sdk(rules) if rules.on_give_up == OnGiveUp::LeavePending => self.leave_pending(key, why),
            CloseHandling::Sdk(rules) if rules.on_give_up == OnGiveUp::CloseTransport => {
                self.close_transport(owner, why.to_string())
            }
            CloseHandling::DecisionProcedure | CloseHandling::ReissueWithNewId if !idempotent => {
                self.resolve_unknown(key, ERR_EXHAUSTED.to_string())
            }
            CloseHandling::Sdk(_) => self.resolve_error(key, ERR_CONNECTION_CLOSED.to_string()),
            _ => self.resolve_error(key, ERR_EXHAUSTED.to_string()),
        }
    }

    /// The client reconnects `key`'s stream no more, for `why`, and tells the application nothing:
    /// the call waits for its request timeout, if it has one (`OnGiveUp::LeavePending`).
    pub(super) fn leave_pending(&mut self, key: CallKey, why: &str) {
        let note = format!("{why}: {NOTE_LEFT_PENDING}");
        self.record_decision(Owner::Call(key), None, None, Some(note));
        if let Some(call) = self.calls.get_mut(&key) {
            call.stream.reconnect_at = None;
            call.stream.reconnect_with = None;
        }
    }

    /// The stream will not be reconnected: its call fails with `error`.
    pub(super) fn stop_stream(&mut self, owner: Owner, error: &str) {
        match owner {
            Owner::Call(key) => self.resolve_error(key, error.to_string()),
            Owner::Standalone => self.standalone = None,
        }
    }

    /// Puts a sent call back in the waiting queue: its old request and stream are forgotten.
    pub(super) fn mark_for_resend(&mut self, key: CallKey) {
        let Some(call) = self.calls.get_mut(&key) else { return };
        if let Some(old) = call.request.take() {
            self.by_request.remove(&old);
        }
        let failures = call.stream.failures;
        let conn = call.stream.conn.take();
        call.stream = Stream { failures, ..Stream::default() };
        call.resend_at = None;
        if let Some(conn) = conn {
            self.abort(conn);
        }
    }

    /// The delay for attempt `n`, drawing the jitter from the seeded generator.
    pub(super) fn next_delay(&mut self, n: u32, after_error: bool) -> Duration {
        let u = if self.policy.reconnect.jitter > 0.0 { self.rng.next_f64() } else { 0.0 };
        reconnect_delay(&self.policy.reconnect, n, self.server_retry_ms, after_error, u)
    }
}
