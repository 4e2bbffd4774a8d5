//! `CloseHandling::Sdk`: the real SDKs' rules, including their answers to a 404.

use super::Ended;
use crate::client::{Client, Owner, ERR_NO_RESPONSE, ERR_REINITIALIZED, NOTE_NO_GET_STREAM};
use crate::config::{LostSessionAnswer, On404, OnEmptyResume, OnGiveUp, SdkRules};
use crate::decision::NextAction;
use crate::http::Status;
use crate::ids::CallKey;
use crate::time::Instant;

impl Client {
    /// The real SDKs' rules (see `shared/docs/sdk-profiles.md`, "Clients").
    pub(in crate::client) fn apply_sdk_rules(&mut self, now: Instant, ended: Ended, rules: &SdkRules) {
        let owner = ended.owner;
        if let Some(status) = ended.status {
            // "Session not found", as this SDK recognises it: on a POST, and on a resume only if
            // the SDK reads it there too.
            let lost = rules.lost_session_answers.iter().any(|a| a.status() == Some(status.0));
            let on_this = ended.was_post() || (ended.reconnect && rules.lost_session_on_resume);
            if lost && on_this {
                return match owner {
                    Owner::Call(key) => {
                        let on = if ended.was_post() { "POST" } else { "resume" };
                        self.sdk_on_404(key, rules.on_404, &format!("HTTP {status} to the {on}"))
                    }
                    Owner::Standalone => self.sdk_standalone_lost(now, &ended, rules.on_404),
                };
            }
            match owner {
                Owner::Call(key) if ended.was_post() => {
                    self.record_decision(owner, None, None, Some(format!("HTTP {status} to the POST")));
                    return self.resolve_error(key, format!("HTTP {status}"));
                }
                // The server does not offer a standalone stream.
                Owner::Standalone if status == Status::METHOD_NOT_ALLOWED => {
                    self.record_decision(owner, None, None, Some(format!("HTTP {status}")));
                    self.standalone = None;
                    return;
                }
                // A resume refused 405: the server offers no GET stream, and an SDK that reads it so
                // stops reconnecting (TypeScript returns without an error, rmcp ends the stream).
                Owner::Call(_) if status == Status::METHOD_NOT_ALLOWED && rules.resume_405_ends_stream => {
                    let why = format!("HTTP {status} to the resume: {NOTE_NO_GET_STREAM}");
                    if rules.on_give_up == OnGiveUp::FailCall {
                        // A call left pending says why in its own note.
                        self.record_decision(owner, None, None, Some(why.clone()));
                    }
                    return self.give_up_with(owner, &why);
                }
                // An SDK that fails on any refused resume stops reconnecting the stream.
                Owner::Call(_) if ended.reconnect && rules.refused_resume_ends_stream => {
                    return self.give_up_with(owner, &format!("HTTP {status} to the resume"));
                }
                // Any other refusal of a GET is one failed attempt.
                _ => {}
            }
        }
        // A cursor kept per connection: a resumed connection that ended before an id-bearing
        // event leaves the SDK nothing to resume the call's stream with.
        if let (Owner::Call(key), true) = (owner, ended.reconnect && ended.got_ok && ended.ids == 0) {
            if rules.resumed_needs_event_id {
                return self.unresumable(key, rules, "no event id arrived on the resumed connection");
            }
        }
        // typescript-sdk#2499: the cursor of a resumed connection starts empty, so a break before
        // an id-bearing event arrived on it forgets the `Last-Event-ID` it was opened with. Only a
        // resume the server answered has such a cursor: one refused before any answer is retried
        // with the token it was scheduled with (TS 1.32.2 sent the same id on both refused
        // attempts of `mcpsim probe client`'s cut-refuse run).
        if ended.reconnect && ended.got_ok && ended.ids == 0 && !rules.resume_token_survives_recut {
            if let Some(stream) = self.stream_mut(owner) {
                stream.last_event_id = None;
            }
        }
        if ended.empty_resume() {
            match rules.on_empty_resume {
                OnEmptyResume::SameId => {}
                OnEmptyResume::GracefulClose => {
                    if let Some(stream) = self.stream_mut(owner) {
                        stream.failures = 0;
                    }
                }
                OnEmptyResume::WithoutId => {
                    if let Some(stream) = self.stream_mut(owner) {
                        stream.last_event_id = None;
                    }
                }
                OnEmptyResume::CleanClose => {
                    if let Owner::Call(key) = owner {
                        self.record_decision(owner, None, None, Some("empty resume: a clean close".into()));
                        return self.resolve_error(key, ERR_NO_RESPONSE.to_string());
                    }
                }
            }
        }
        let last = self.stream_mut(owner).and_then(|s| s.last_event_id.clone());
        if let (Owner::Call(key), true, None) = (owner, ended.was_post() && rules.resume_post_needs_event_id, &last) {
            let why = crate::client::NOTE_NO_POST_EVENT_ID;
            // Only a stream the server answered: a POST that broke before its head failed to
            // send, and every SDK fails that call at once.
            if !ended.got_ok {
                self.record_decision(owner, None, None, Some(why.into()));
                return self.resolve_error(key, ERR_NO_RESPONSE.to_string());
            }
            return self.unresumable(key, rules, why);
        }
        let action = last.clone().map(|last_event_id| NextAction::Resume { last_event_id });
        self.record_decision(owner, None, action, None);
        self.schedule_reconnect(now, &ended, last);
    }

    /// A call's stream the SDK has no cursor to resume with (`why`): the call as
    /// `on_unresumable_post` says.
    fn unresumable(&mut self, key: CallKey, rules: &SdkRules, why: &str) {
        match rules.on_unresumable_post {
            OnGiveUp::LeavePending => self.leave_pending(key, why),
            OnGiveUp::CloseTransport => self.close_transport(Owner::Call(key), why.to_string()),
            OnGiveUp::FailCall => {
                self.record_decision(Owner::Call(key), None, None, Some(why.into()));
                self.resolve_error(key, ERR_NO_RESPONSE.to_string());
            }
        }
    }

    /// A JSON-RPC error answering a call's request: whether the SDK reads it as "session not
    /// found" (`rpc-error` among `lost_session_answers`, code -32001) on this connection.
    pub(in crate::client) fn sdk_reads_as_lost(&self, reconnect: bool, code: Option<i64>) -> Option<On404> {
        let crate::config::CloseHandling::Sdk(rules) = &self.policy.close_handling else { return None };
        let recognised = rules.lost_session_answers.contains(&LostSessionAnswer::RpcError)
            && code == Some(crate::config::SESSION_NOT_FOUND_CODE);
        (recognised && self.session.is_some() && (!reconnect || rules.lost_session_on_resume)).then_some(rules.on_404)
    }

    /// The standalone stream's resume was answered "session not found": a rule that
    /// re-initializes does so (the calls in flight settle as that rule says); one that keeps the
    /// session counts it as a failed attempt.
    fn sdk_standalone_lost(&mut self, now: Instant, ended: &Ended, rule: On404) {
        let note = format!("session not found on the standalone stream's resume: on_404 = {}", rule.name());
        match rule {
            On404::FailKeepSession => {
                self.record_decision(Owner::Standalone, None, None, Some(note));
                let last = self.standalone.as_ref().and_then(|s| s.last_event_id.clone());
                self.schedule_reconnect(now, ended, last);
            }
            On404::ReinitializeResendOnce => {
                self.record_decision(Owner::Standalone, None, Some(NextAction::Reinitialize), Some(note));
                for other in self.keys_in_issue_order() {
                    if self.calls.get(&other).is_some_and(|c| c.request.is_some()) {
                        self.resolve_error(other, ERR_REINITIALIZED.to_string());
                    }
                }
                self.drop_session();
                self.begin_initialize();
            }
            On404::ReinitializeUnknownOutcome => {
                self.record_decision(Owner::Standalone, None, Some(NextAction::Reinitialize), Some(note));
                self.session_lost();
            }
            On404::CloseTransport => self.close_transport(Owner::Standalone, note),
        }
    }

    /// A call's request was answered "session not found" (`what`, e.g. `HTTP 404 to the POST`).
    pub(in crate::client) fn sdk_on_404(&mut self, key: CallKey, rule: On404, what: &str) {
        let note = format!("{what}: on_404 = {}", rule.name());
        let already_resent = self.calls.get(&key).is_some_and(|c| c.resent_after_404);
        match rule {
            On404::ReinitializeResendOnce if !already_resent => {
                self.record_decision(Owner::Call(key), None, Some(NextAction::Reinitialize), Some(note));
                for other in self.keys_in_issue_order() {
                    let sent = self.calls.get(&other).is_some_and(|c| c.request.is_some());
                    if other != key && sent {
                        self.resolve_error(other, ERR_REINITIALIZED.to_string());
                    }
                }
                self.drop_session();
                self.mark_for_resend(key);
                if let Some(call) = self.calls.get_mut(&key) {
                    call.resent_after_404 = true;
                }
                self.begin_initialize();
            }
            On404::ReinitializeUnknownOutcome => {
                self.record_decision(Owner::Call(key), None, Some(NextAction::Reinitialize), Some(note));
                self.session_lost();
            }
            On404::CloseTransport => self.close_transport(Owner::Call(key), note),
            // The dead session id is kept: every later request gets 404 too.
            _ => {
                self.record_decision(Owner::Call(key), None, None, Some(note));
                self.resolve_error(
                    key,
                    format!("session not found ({})", what.split(" to the").next().unwrap_or(what)),
                );
            }
        }
    }
}
