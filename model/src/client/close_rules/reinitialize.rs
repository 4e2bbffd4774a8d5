//! `CloseHandling::ReinitializeAndResend`: the first incident's naive client.

use super::Ended;
use crate::client::{Client, Owner};
use crate::decision::NextAction;
use crate::time::Instant;

impl Client {
    /// The `naive` client: any break of a call's stream is fatal to the session. It starts a new
    /// one and re-sends every call in flight under the same key, never using `Last-Event-ID`.
    pub(in crate::client) fn apply_reinitialize_and_resend(&mut self, now: Instant, ended: Ended) {
        let Owner::Call(key) = ended.owner else {
            return self.schedule_reconnect(now, &ended, None);
        };
        self.record_decision(ended.owner, None, Some(NextAction::Reinitialize), None);
        // Each re-send is an attempt; a 200 to the re-sent POST is no success, only a response
        // is, so the count never resets and a call that keeps breaking is eventually failed.
        if !self.spend_attempt(Owner::Call(key)) {
            return self.give_up(Owner::Call(key));
        }
        self.drop_session();
        for k in self.keys_in_issue_order() {
            if self.calls.get(&k).is_some_and(|c| c.request.is_some()) {
                self.mark_for_resend(k);
            }
        }
        self.begin_initialize();
    }
}
