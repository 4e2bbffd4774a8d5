//! `CloseHandling::DecisionProcedure`: the `reference` client carries out the design note's
//! decision procedure ([`crate::decision::next_action`]).

use super::Ended;
use crate::client::{Client, Owner, ERR_SESSION_CLOSED, UNKNOWN_SESSION_LOST};
use crate::decision::{self, DecisionError, NextAction, StreamClose};
use crate::time::Instant;
use crate::trace::StepKind;

impl Client {
    /// The `reference` client: `decision::next_action` decides; this only carries it out.
    pub(in crate::client) fn apply_decision_procedure(&mut self, now: Instant, ended: Ended) {
        let owner = ended.owner;
        let last_seen = self.stream_mut(owner).and_then(|s| s.last_event_id.clone());
        let close = StreamClose {
            status: ended.status,
            close_event: ended.close_event,
            last_event_id_seen: last_seen.clone(),
            server_head_event_id: ended.head_event_id.clone(),
        };
        match decision::next_action(&close) {
            Ok((outcome, action)) => {
                self.record_decision(owner, Some(outcome), Some(action.clone()), None);
                match action {
                    NextAction::Resume { last_event_id } => self.schedule_reconnect(now, &ended, Some(last_event_id)),
                    NextAction::Reinitialize => self.session_lost(),
                    NextAction::ResumeAtHead { head } => {
                        let session = Client::app_session(self.session.clone());
                        let gap =
                            StepKind::AppGap { session, call: owner.call(), after: last_seen, head: head.clone() };
                        self.record(gap);
                        if let Some(stream) = self.stream_mut(owner) {
                            stream.last_event_id = Some(head.clone());
                        }
                        self.resume_at_once(owner, head);
                    }
                    NextAction::Stop => self.stop_stream(owner, ERR_SESSION_CLOSED),
                }
            }
            Err(error) => {
                self.record_decision(owner, None, None, Some(error.to_string()));
                match (owner, &error) {
                    (Owner::Call(key), DecisionError::NeverPersisted) => {
                        // An idempotent call is sent again: at once after a restart, else after
                        // the backoff of its attempt (a refused connection would otherwise be
                        // retried in a tight loop).
                        if self.calls.get(&key).is_some_and(|c| c.idempotent) {
                            if !ended.restart {
                                return self.schedule_reissue(now, key, ended.after_error());
                            }
                            if !self.spend_attempt(owner) {
                                return self.give_up(owner);
                            }
                            self.mark_for_resend(key);
                            self.reissue_due(key);
                        } else {
                            self.resolve_unknown(key, error.to_string());
                        }
                    }
                    // Nothing was seen on the standalone stream, so nothing can be missed by
                    // opening it afresh.
                    (Owner::Standalone, DecisionError::NeverPersisted) => self.schedule_reconnect(now, &ended, None),
                    // A resume refused (a 409/410 naming no head, a status with no rule) of a
                    // call the server had accepted (its stream carried an event): whether the
                    // tool ran is unknown, and a non-idempotent call is reported so, not as failed.
                    (Owner::Call(key), _)
                        if last_seen.is_some() && self.calls.get(&key).is_some_and(|c| !c.idempotent) =>
                    {
                        self.resolve_unknown(key, error.to_string())
                    }
                    (owner, _) => self.stop_stream(owner, &error.to_string()),
                }
            }
        }
    }

    /// The `reference` client's answer to a 404: the session is gone. Tell the application, and
    /// settle every call in flight without re-running a non-idempotent tool.
    pub(in crate::client) fn session_lost(&mut self) {
        if let Some(session) = self.session.clone() {
            self.record(StepKind::AppSessionLost { session });
        }
        self.drop_session();
        self.settle_sent_calls(UNKNOWN_SESSION_LOST);
        self.begin_initialize();
    }
}
