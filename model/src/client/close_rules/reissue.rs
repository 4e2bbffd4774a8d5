//! `CloseHandling::ReissueWithNewId`: the 2026-07-28 revision's client, which resumes nothing.

use super::Ended;
use crate::client::{Client, Handshake, Owner, ERR_SESSION_CLOSED, NOTE_REISSUE};
use crate::ids::CallKey;
use crate::time::{micros, Instant};
use crate::trace::StepKind;

impl Client {
    /// The 2026-07-28 revision's client: nothing is resumed. A call whose stream broke (a reset,
    /// a refused connection, a 5xx, a close without the response) is issued again with a new id
    /// after backoff; any other status fails it, and `event: close` stops it.
    pub(in crate::client) fn apply_reissue(&mut self, now: Instant, ended: Ended) {
        let owner = ended.owner;
        let Owner::Call(key) = owner else {
            // The revision has no standalone stream: one opened anyway is not reopened.
            self.record_decision(owner, None, None, Some("the standalone stream ended: not reopened".into()));
            self.standalone = None;
            return;
        };
        if ended.close_event {
            self.record_decision(owner, None, None, Some("event: close".into()));
            return self.stop_stream(owner, ERR_SESSION_CLOSED);
        }
        if let Some(status) = ended.status.filter(|s| !(500..600).contains(&s.0)) {
            self.record_decision(owner, None, None, Some(format!("HTTP {status} to the POST")));
            return self.resolve_error(key, format!("HTTP {status}"));
        }
        self.record_decision(owner, None, None, Some(NOTE_REISSUE.into()));
        self.schedule_reissue(now, key, ended.after_error());
    }

    /// Forgets the call's broken request and schedules a new POST of it after the backoff for its
    /// attempt; or gives up if its attempts are spent. Only a response ends the count: a 200 to a
    /// re-issued POST is no success, so a call that keeps breaking is eventually given up.
    pub(in crate::client) fn schedule_reissue(&mut self, now: Instant, key: CallKey, after_error: bool) {
        let Some(n) = self.calls.get(&key).map(|c| c.stream.failures) else { return };
        if !self.spend_attempt(Owner::Call(key)) {
            return self.give_up(Owner::Call(key));
        }
        self.mark_for_resend(key);
        let delay = self.next_delay(n, after_error);
        self.record(StepKind::Backoff { call: Some(key), attempt: n + 1, delay_us: micros(delay) });
        if let Some(call) = self.calls.get_mut(&key) {
            call.resend_at = Some(now + delay);
        }
    }

    /// A scheduled re-issue is due: send it now, or after the handshake if one is under way.
    pub(in crate::client) fn reissue_due(&mut self, key: CallKey) {
        if let Some(call) = self.calls.get_mut(&key) {
            call.resend_at = None;
        }
        if self.handshake == Handshake::Ready {
            self.send_call(key);
        }
    }
}
