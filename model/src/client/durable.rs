//! Persistence: the state a durable client writes ahead of its requests, and how a restarted
//! process takes it over (resuming its session, or settling calls it can no longer reattach).

use super::close_rules::Ended;
use super::{Call, Client, ClientOutput, Handshake, Owner, Stream, UNKNOWN_RESTARTED};
use crate::config::Persistence;
use crate::ids::{CallKey, EventId, RequestId, SessionId};
use crate::time::Instant;
use serde::{Deserialize, Serialize};

/// What a durable client keeps across a process restart.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DurableState {
    /// The session id the client holds, if any.
    pub session: Option<SessionId>,
    /// The next JSON-RPC request id to use.
    pub next_request: u64,
    /// Calls in flight: their request id and the last event id seen on their stream.
    pub calls: Vec<DurableCall>,
    /// The last event id seen on the standalone GET stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standalone_last_event_id: Option<EventId>,
    /// A session the application deleted whose `DELETE` was not answered yet: a restarted
    /// client finishes it before it initializes a new session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_delete: Option<SessionId>,
    /// The ids of the tasks answering calls in flight (`client.tasks.persist_ids`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<super::DurableTask>,
    /// Calls the application issued that are not on the wire: not sent yet, or waiting to be
    /// sent again. A restarted client sends them once it is ready, as it would have; without
    /// them the application would wait for good for calls nobody holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<DurableWaiting>,
}

/// A call in durable state that is not on the wire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DurableWaiting {
    /// The application's logical call.
    pub call: CallKey,
    /// The tool it calls.
    pub tool: String,
    /// Whether running it twice is harmless.
    pub idempotent: bool,
    /// Whether it went out once before (and may have run).
    pub sent: bool,
}

/// One in-flight call in durable state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DurableCall {
    /// The application's logical call.
    pub call: CallKey,
    /// The tool it calls.
    pub tool: String,
    /// Whether running it twice is harmless.
    pub idempotent: bool,
    /// The request id of its current POST.
    pub request: RequestId,
    /// The last event id seen on its stream.
    pub last_event_id: Option<EventId>,
}

impl Client {
    /// Takes over durable state: the session and every call that was in flight.
    pub(super) fn load(&mut self, state: DurableState) {
        self.session = state.session.clone();
        self.pending_delete = state.pending_delete.clone();
        self.next_request = state.next_request.max(1);
        if let Some(stream) = self.standalone.as_mut() {
            stream.last_event_id = state.standalone_last_event_id.clone();
        }
        for c in &state.calls {
            let stream = Stream { last_event_id: c.last_event_id.clone(), ..Stream::default() };
            let seq = self.take_seq();
            let call = Call {
                tool: c.tool.clone(),
                idempotent: c.idempotent,
                request: Some(c.request),
                seq,
                deadline: None,
                stream,
                resent_after_404: false,
                resend_at: None,
                sent: true,
            };
            self.calls.insert(c.call, call);
            self.by_request.insert(c.request, c.call);
        }
        for w in &state.waiting {
            let seq = self.take_seq();
            let call = Call {
                tool: w.tool.clone(),
                idempotent: w.idempotent,
                request: None,
                seq,
                deadline: None,
                stream: Stream::default(),
                resent_after_404: false,
                resend_at: None,
                sent: w.sent,
            };
            self.calls.insert(w.call, call);
        }
        self.load_tasks(&state.tasks);
        self.persisted = Some(state);
    }

    /// A restored session: reattach the standalone stream and every call's stream, as if each
    /// had broken while the process was down.
    pub(super) fn resume_restored(&mut self, now: Instant) {
        self.handshake = Handshake::Ready;
        for key in self.keys_in_issue_order() {
            if self.calls.get(&key).is_some_and(|c| c.request.is_some()) && !self.polls_task(key) {
                self.stream_ended(now, Ended::restart(Owner::Call(key)));
            }
        }
        // Calls the application made before `start` go out now, as after a handshake.
        if self.handshake == Handshake::Ready {
            self.become_ready();
        }
    }

    /// No session to resume: restored calls cannot be re-attached. An idempotent one is sent
    /// again after initializing; a non-idempotent one may have run, and must not run twice.
    pub(super) fn restart_without_session(&mut self) {
        self.settle_sent_calls(UNKNOWN_RESTARTED);
        if self.pending_delete.is_some() {
            // The old session goes first: a new one beside it would be a second live session.
            self.initialize_after_delete = true;
            return self.send_pending_delete();
        }
        self.begin_initialize();
    }

    pub(super) fn durable_state(&self) -> DurableState {
        let calls = self
            .calls
            .iter()
            .filter_map(|(key, c)| {
                Some(DurableCall {
                    call: *key,
                    tool: c.tool.clone(),
                    idempotent: c.idempotent,
                    request: c.request?,
                    last_event_id: c.stream.last_event_id.clone(),
                })
            })
            .collect();
        let waiting = self
            .calls
            .iter()
            .filter(|(_, c)| c.request.is_none())
            .map(|(key, c)| DurableWaiting { call: *key, tool: c.tool.clone(), idempotent: c.idempotent, sent: c.sent })
            .collect();
        DurableState {
            waiting,
            session: self.session.clone(),
            next_request: self.next_request,
            calls,
            standalone_last_event_id: self.standalone.as_ref().and_then(|s| s.last_event_id.clone()),
            pending_delete: self.pending_delete.clone(),
            tasks: self.durable_tasks(),
        }
    }

    /// Under `Persistence::Durable`, writes the state if it changed, ahead of the outputs queued
    /// since `mark` (write-ahead: a crash after a request left never loses its record).
    pub(super) fn persist_if_changed(&mut self, mark: usize) {
        if self.policy.persistence != Persistence::Durable {
            return;
        }
        let state = self.durable_state();
        if self.persisted.as_ref() != Some(&state) {
            self.persisted = Some(state.clone());
            self.outputs.insert(mark.min(self.outputs.len()), ClientOutput::Persist(state));
        }
    }
}
