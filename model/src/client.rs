//! The MCP client library and the application's calls through it. (Being written.)

use crate::config::ClientPolicy;
use crate::http::{ConnEnd, Frame, Request};
use crate::ids::{CallKey, ConnId, EventId, RequestId, SessionId};
use crate::time::Instant;
use crate::trace::StepKind;
use serde::{Deserialize, Serialize};

/// Something the client asks its actor to do or record.
#[must_use]
#[derive(Clone, Debug, PartialEq)]
pub enum ClientOutput {
    /// Open a connection numbered `conn` to the server (through the load balancer) and send
    /// `request` on it. Frames that arrive on it go to `handle_frame`; its end to `handle_conn_end`.
    Open { conn: ConnId, request: Request },
    /// Close `conn` from this side.
    Abort { conn: ConnId },
    /// Write this state to durable storage (only under `Persistence::Durable`).
    Persist(DurableState),
    /// Record a step.
    Record(StepKind),
}

/// What a durable client keeps across a process restart.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DurableState {
    pub session: Option<SessionId>,
    pub next_request: u64,
    /// Calls in flight: their request id and the last event id seen on their stream.
    pub calls: Vec<DurableCall>,
}

/// One in-flight call in durable state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DurableCall {
    pub call: CallKey,
    pub tool: String,
    pub idempotent: bool,
    pub request: RequestId,
    pub last_event_id: Option<EventId>,
}

/// The client's state.
#[derive(Debug)]
pub struct Client {
    _policy: ClientPolicy,
}

impl Client {
    /// A client process starting, with its durable state if it has any. `seed` seeds backoff jitter.
    pub fn new(policy: ClientPolicy, _name: &str, _restored: Option<DurableState>, _seed: u64) -> Self {
        Client { _policy: policy }
    }

    /// Starts the client: initialize, or resume restored calls.
    pub fn start(&mut self, _now: Instant) {
        todo!()
    }

    /// The application calls a tool.
    pub fn call_tool(&mut self, _now: Instant, _call: CallKey, _tool: &str, _idempotent: bool) {
        todo!()
    }

    pub fn handle_frame(&mut self, _now: Instant, _conn: ConnId, _frame: Frame) {
        todo!()
    }

    pub fn handle_conn_end(&mut self, _now: Instant, _conn: ConnId, _end: ConnEnd) {
        todo!()
    }

    pub fn handle_timeout(&mut self, _now: Instant) {
        todo!()
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        todo!()
    }

    pub fn poll_output(&mut self) -> Option<ClientOutput> {
        todo!()
    }

    /// The session id the client holds.
    pub fn session(&self) -> Option<&SessionId> {
        todo!()
    }

    /// Calls the application issued that have not resolved.
    pub fn unresolved_calls(&self) -> Vec<CallKey> {
        todo!()
    }
}
