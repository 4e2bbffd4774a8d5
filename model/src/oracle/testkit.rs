//! Hand-made traces for the oracle tests: a builder and short constructors for the steps.

use crate::http::{ConnEnd, Request, ResponseHead, ServerMessage, SseEvent, Status};
use crate::ids::{CallKey, ConnId, EventId, RequestId, SessionId, StreamNo};
use crate::trace::{Actor, ResumeOutcome, Step, StepKind, Trace};

/// Builds a trace step by step: `TraceBuilder::new().at(t).server(..).app(..).build()`.
#[derive(Default)]
pub struct TraceBuilder {
    t: u64,
    /// The logical client the client and application steps that follow belong to.
    client: Option<u32>,
    steps: Vec<Step>,
}

impl TraceBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The time (µs) of the steps that follow.
    pub fn at(mut self, t: u64) -> Self {
        self.t = t;
        self
    }

    /// The client and application steps that follow are client `client`'s, as in a run with
    /// several clients.
    pub fn by(mut self, client: u32) -> Self {
        self.client = Some(client);
        self
    }

    pub fn step(mut self, actor: Actor, kind: StepKind) -> Self {
        let seq = self.steps.len() as u64;
        let client = if matches!(actor, Actor::Client | Actor::App) { self.client } else { None };
        self.steps.push(Step { seq, t: self.t, actor, client, replica: None, conn_client: None, kind });
        self
    }

    pub fn client(self, kind: StepKind) -> Self {
        self.step(Actor::Client, kind)
    }

    pub fn app(self, kind: StepKind) -> Self {
        self.step(Actor::App, kind)
    }

    pub fn server(self, kind: StepKind) -> Self {
        self.step(Actor::Server, kind)
    }

    pub fn lb(self, kind: StepKind) -> Self {
        self.step(Actor::Lb, kind)
    }

    /// A server step of replica `replica`'s own process (replicas with local stores).
    pub fn replica(self, replica: u32, kind: StepKind) -> Self {
        let mut built = self.step(Actor::Server, kind);
        if let Some(step) = built.steps.last_mut() {
            step.replica = Some(replica);
        }
        built
    }

    pub fn run(self, kind: StepKind) -> Self {
        self.step(Actor::Run, kind)
    }

    /// Events `seqs` of a stream, stored by the server (progress of `call`, or notifications
    /// when `call` is `None`), ids `<stream>-<seq>`, one every µs from the current time.
    pub fn stored_range(
        mut self,
        session: &SessionId,
        stream: u32,
        call: Option<u32>,
        seqs: impl IntoIterator<Item = u32>,
    ) -> Self {
        let start = self.t;
        for (i, seq) in seqs.into_iter().enumerate() {
            let message = match call {
                Some(c) => progress(c, seq),
                None => ServerMessage::Notification { seq },
            };
            self = self.at(start + i as u64).server(stored(session, stream, seq, call, Some(message)));
        }
        self
    }

    /// The application is handed events `seqs` of a stream, one every µs from the current time.
    pub fn delivered_range(
        mut self,
        session: &SessionId,
        stream: u32,
        call: Option<u32>,
        seqs: impl IntoIterator<Item = u32>,
    ) -> Self {
        let start = self.t;
        for (i, seq) in seqs.into_iter().enumerate() {
            self = self.at(start + i as u64).app(app_event(session, ev(stream, seq), call));
        }
        self
    }

    pub fn build(self) -> Trace {
        let mut trace = Trace::new(0, serde_json::json!({}));
        trace.steps = self.steps;
        trace
    }
}

/// A client's start: what it restored, and the conditions its policy keeps (no attempt budget,
/// no SDK give-up rule).
pub fn client_start(restored: bool, durable: bool, by_class: bool) -> StepKind {
    StepKind::ClientStart { restored, durable, by_class, max_attempts: None, on_give_up: None }
}

pub fn sid(s: &str) -> SessionId {
    SessionId::from(s)
}

/// The reference scheme's id `<stream>-<seq>`.
pub fn ev(stream: u32, seq: u32) -> EventId {
    EventId::from(format!("{stream}-{seq}"))
}

pub fn progress(call: u32, step: u32) -> ServerMessage {
    ServerMessage::Progress { request: RequestId(u64::from(call) + 1), call: CallKey(call), step }
}

pub fn tool_result(stream: u32, call: u32) -> ServerMessage {
    ServerMessage::ToolResult { request: RequestId(u64::from(stream)), call: CallKey(call) }
}

pub fn session_created(session: &SessionId, client: &str) -> StepKind {
    StepKind::SessionCreated { session: session.clone(), client: client.to_string() }
}

pub fn session_ended(session: &SessionId) -> StepKind {
    StepKind::SessionEnded {
        session: session.clone(),
        reason: crate::trace::SessionEndReason::IdleExpired,
        idle_ttl_us: None,
    }
}

pub fn side_effect(session: &SessionId, request: u64, call: u32) -> StepKind {
    StepKind::SideEffect {
        session: session.clone(),
        request: RequestId(request),
        call: CallKey(call),
        tool: "pay".to_string(),
        idempotent: false,
    }
}

/// The client's `tools/call` of `call` (pay) as request `request` on connection `conn`, in
/// `session` (none: a modern request).
pub fn call_sent(conn: u64, session: Option<&SessionId>, request: u64, call: u32) -> StepKind {
    let call = crate::http::ToolCall { tool: "pay".into(), key: CallKey(call), idempotency_key: None, tasks: false };
    let body = crate::http::ClientMessage::CallTool { id: RequestId(request), call };
    StepKind::Send { conn: crate::ids::ConnId(conn), request: crate::http::Request::post(session.cloned(), body) }
}

/// `EventStored` with id `<stream>-<seq>`.
pub fn stored(
    session: &SessionId,
    stream: u32,
    seq: u32,
    call: Option<u32>,
    message: Option<ServerMessage>,
) -> StepKind {
    StepKind::EventStored {
        session: session.clone(),
        stream: StreamNo(stream),
        seq,
        id: ev(stream, seq),
        call: call.map(CallKey),
        message,
    }
}

pub fn app_call(call: u32, idempotent: bool) -> StepKind {
    StepKind::AppCall { call: CallKey(call), tool: "pay".to_string(), idempotent }
}

pub fn app_event(session: &SessionId, id: EventId, call: Option<u32>) -> StepKind {
    StepKind::AppEvent {
        session: session.clone(),
        id: Some(id),
        call: call.map(CallKey),
        message: ServerMessage::Notification { seq: 0 },
    }
}

pub fn app_result(call: u32, session: &SessionId, id: Option<EventId>) -> StepKind {
    StepKind::AppResult { call: CallKey(call), session: session.clone(), id }
}

pub fn app_gap(session: &SessionId, after: Option<EventId>, head: EventId) -> StepKind {
    StepKind::AppGap { session: session.clone(), call: None, after, head }
}

pub fn app_unknown(call: u32) -> StepKind {
    StepKind::AppUnknownOutcome { call: CallKey(call), reason: "session lost".to_string() }
}

pub fn app_error(call: u32) -> StepKind {
    StepKind::AppError { call: CallKey(call), error: "failed".to_string() }
}

/// The client opens the standalone stream of `session` (GET without `Last-Event-ID`).
pub fn get_standalone(conn: u64, session: &SessionId) -> StepKind {
    StepKind::Send { conn: ConnId(conn), request: Request::get(Some(session.clone()), None) }
}

/// The client resumes with `Last-Event-ID`.
pub fn get_resume(conn: u64, session: &SessionId, last: EventId) -> StepKind {
    StepKind::Send { conn: ConnId(conn), request: Request::get(Some(session.clone()), Some(last)) }
}

/// The answer to `initialize` on `conn`: it hands `session`'s id to the client.
pub fn session_answer(conn: u64, session: &SessionId) -> StepKind {
    StepKind::Response {
        conn: ConnId(conn),
        head: ResponseHead { session: Some(session.clone()), ..ResponseHead::status(Status::OK) },
    }
}

pub fn response(conn: u64, status: Status) -> StepKind {
    StepKind::Response { conn: ConnId(conn), head: ResponseHead::status(status) }
}

pub fn sse_event(conn: u64, event: SseEvent) -> StepKind {
    StepKind::Event { conn: ConnId(conn), event }
}

pub fn conn_end(conn: u64, end: ConnEnd) -> StepKind {
    StepKind::ConnEnd { conn: ConnId(conn), end }
}

pub fn resume(session: &SessionId, last: EventId, outcome: ResumeOutcome) -> StepKind {
    StepKind::Resume {
        session: session.clone(),
        last_event_id: last,
        stream: Some(StreamNo(1)),
        outcome,
        held: false,
        evicted: None,
        claimed_by: None,
        finished: false,
    }
}

pub fn lb_idle_cut(conn: u64) -> StepKind {
    StepKind::LbIdleCut { conn: ConnId(conn), idle_us: 60_000_000, hop: None }
}

pub fn run_end(client_session: Option<&SessionId>, server_sessions: &[&SessionId]) -> StepKind {
    run_end_of_clients(&[client_session], server_sessions)
}

/// The end of a run with several clients: `held[i]` is what client `i` held.
pub fn run_end_of_clients(held: &[Option<&SessionId>], server_sessions: &[&SessionId]) -> StepKind {
    let mut held = held.iter().map(|s| s.cloned());
    StepKind::RunEnd {
        client_session: held.next().flatten(),
        server_sessions: server_sessions.iter().map(|s| (*s).clone()).collect(),
        other_client_sessions: held.collect(),
    }
}
