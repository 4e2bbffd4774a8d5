//! The MCP server: sessions, per-stream event logs, tools, idle expiry.
//!
//! One connection carries one HTTP exchange. A request is answered at once with `Frame::Head`
//! and either a JSON body or SSE frames; JSON answers end at once (`End`, `Close`), SSE answers
//! leave the connection open, attached to a stream, until the stream's response is sent, the
//! session ends or the peer goes away. Events are stored in the stream's log whether or not a
//! connection is attached (disconnection is not cancellation), and a `GET` with `Last-Event-ID`
//! replays them under the policy's rules.
//!
//! Call order: `handle_request`/`handle_disconnect` as things arrive, then drain `poll_output`;
//! sleep until `poll_timeout`, call `handle_timeout(now)` and drain again. `now` never goes back.
//!
//! Without sessions (`ServerPolicy::sessions == false`, the 2026-07-28 revision) every request is
//! served in one implicit context named by the empty session id, the name the client gives the
//! session when it holds none: it is never created, expired or reported as a session, every
//! `DELETE` is answered 405 (`sessionless_get_status`), and so is every `GET` unless the server
//! holds it open (`sessionless_get = hold-open`, Python's stateless mode: an event stream nothing
//! is ever written on but keep-alives). A session-ful client still works against such a server: its
//! `initialize` is answered without a session id, so it sends its later requests without one.
//!
//! Layout: this file holds the `Server` machine (inputs, polls, request routing, timers, output
//! plumbing); `sessions.rs` the session table, 400/404 answers and `DELETE`; `streams.rs` event
//! logs, attached connections, priming and keep-alive; `replay.rs` `Last-Event-ID` resumption and
//! the answers to ids it cannot honour; `tools.rs` tool runs and the side-effect ledger;
//! `expiry.rs` the idle rules.

mod era_serve;
pub use era_serve::incarnation_policy;
mod expiry;
mod replay;
mod sessions;
mod streams;
mod subscriptions;
mod tasks;
#[cfg(test)]
mod tests;
mod timers;
mod tools;

pub use tasks::task_prefix;

use crate::config::{
    DeadStream, EventStoreMode, NoStoreResume, ProtocolErrorReaction, Retention, ServerPolicy, SessionlessCancel,
    SessionlessGet, ToolSpec,
};
use crate::http::SseEvent;
use crate::http::{
    Body, ClientMessage, ErrorBody, ErrorCode, Frame, Method, Request, ResponseHead, ServerMessage, Status,
};
use crate::ids::{ConnId, SessionId, StreamNo, NO_SESSION};
use crate::rng::SplitMix64;
use crate::sse::{EventStore, StoredEvent};
use crate::time::{micros, Instant};
use crate::trace::{ExitCause, SessionEndReason, StepKind, ToolEnd};
use sessions::Session;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;
use streams::OpenConn;
use timers::Timers;
use tools::RunningTool;

/// Something the server asks its actor to do or record.
#[must_use]
#[derive(Clone, Debug, PartialEq)]
pub enum ServerOutput {
    /// Write a frame on a connection.
    Send {
        /// The connection.
        conn: ConnId,
        /// The frame.
        frame: Frame,
    },
    /// Close a connection: after `Frame::End` for a clean end, or `abrupt` for a reset.
    Close {
        /// The connection.
        conn: ConnId,
        /// A reset rather than a clean end.
        abrupt: bool,
    },
    /// Record a step.
    Record(StepKind),
    /// The process exited (`on_protocol_error = restart-process`): everything it held is already
    /// recorded lost and its connections closed; its supervisor starts the next process now.
    Exit,
}

/// The server's state.
#[derive(Debug)]
pub struct Server {
    policy: ServerPolicy,
    tools: BTreeMap<String, ToolSpec>,
    epoch: u32,
    /// Draws session uuids, TypeScript stream ids and opaque event ids.
    rng: SplitMix64,
    sessions_minted: u64,
    sessions: BTreeMap<SessionId, Session>,
    store: EventStore,
    /// Open SSE connections. JSON answers end at once and never appear here.
    conns: BTreeMap<ConnId, OpenConn>,
    running: BTreeMap<u64, RunningTool>,
    tools_started: u64,
    /// Idempotency keys whose side effect this process executed.
    executed_keys: BTreeSet<String>,
    outputs: VecDeque<ServerOutput>,
    /// The process died: it does nothing any more.
    crashed: bool,
    /// Every pending timer by due instant (`timers.rs`).
    timers: Timers,
    /// The Tasks extension's store and the tools that work for tasks (`tasks.rs`).
    tasks: tasks::ServerTaskState,
    /// The sessionless context a session-ful dual-era server serves modern requests in
    /// (`era_serve.rs`); `None` for every other server.
    modern: Option<Box<Server>>,
    /// The connections whose (modern) requests the `modern` context serves.
    modern_conns: BTreeSet<ConnId>,
    /// This is the `modern` context of a process, not a process: its exit is its process's.
    is_context: bool,
    /// The open `subscriptions/listen` streams, by connection, with their subscription ids
    /// (`subscriptions.rs`).
    listeners: BTreeMap<ConnId, crate::ids::RequestId>,
    /// Change notifications this process published.
    changes: u32,
    /// The replica this process serves (names its change notifications).
    replica: u32,
    /// The change published last, until the fleet's shared bus takes it (`subscriptions.rs`).
    published: Option<String>,
}

/// The timers the server runs, ordered so that ties at one instant run deterministically.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    Tool(u64),
    Keepalive(ConnId),
    Idle(SessionId),
    Close(ConnId),
    TaskSweep,
}

/// The event store of a fresh process: without one (`event_store = none`) events are still
/// numbered and named, so that the trace can follow them, but none is held for a replay.
fn new_store(policy: &ServerPolicy) -> EventStore {
    match policy.event_store {
        EventStoreMode::Kept => EventStore::new(policy.retention.clone()),
        EventStoreMode::NoStore => EventStore::new(Retention::last(0)),
    }
}

/// A duration a timer can repeat at: zero (or sub-microsecond) intervals would never advance.
fn repeating(d: Option<Duration>) -> Option<Duration> {
    d.filter(|d| micros(*d) > 0)
}

impl Server {
    /// A fresh server process. `epoch` counts restarts (it goes into session ids so that ids
    /// never repeat across restarts); `id_seed` seeds the opaque ids some schemes need.
    pub fn new(policy: ServerPolicy, tools: Vec<ToolSpec>, epoch: u32, id_seed: u64) -> Self {
        let mut table = BTreeMap::new();
        for tool in tools {
            table.entry(tool.name.clone()).or_insert(tool);
        }
        // Mixing the epoch in keeps uuids of successive incarnations apart even with one seed.
        let rng = SplitMix64::new(id_seed ^ u64::from(epoch).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let modern = era_serve::wants_modern_context(&policy).then(|| {
            let tools = table.values().cloned().collect();
            let mut context = Server::new(era_serve::modern_policy(&policy), tools, epoch, !id_seed);
            context.is_context = true;
            // Its `ServerStart` is this process's own, recorded below.
            while context.poll_output().is_some() {}
            Box::new(context)
        });
        let mut server = Server {
            store: new_store(&policy),
            policy,
            tools: table,
            epoch,
            rng,
            sessions_minted: 0,
            sessions: BTreeMap::new(),
            conns: BTreeMap::new(),
            running: BTreeMap::new(),
            tools_started: 0,
            executed_keys: BTreeSet::new(),
            outputs: VecDeque::new(),
            crashed: false,
            timers: Timers::default(),
            tasks: tasks::ServerTaskState::default(),
            modern,
            modern_conns: BTreeSet::new(),
            is_context: false,
            listeners: BTreeMap::new(),
            changes: 0,
            replica: 0,
            published: None,
        };
        server.tasks = tasks::ServerTaskState::new(&server.policy, epoch);
        server.record(StepKind::ServerStart {
            epoch,
            sessions_share_store: server.policy.store == crate::config::StoreScope::SharedByRequestId,
            bounds: server.bounds(),
        });
        if !server.policy.sessions {
            let context = server.new_session(&NO_SESSION);
            server.sessions.insert(NO_SESSION.clone(), context);
        }
        server
    }

    /// A request arrived on `conn`.
    pub fn handle_request(&mut self, now: Instant, conn: ConnId, request: Request) {
        if self.crashed {
            return;
        }
        let Some(request) = self.era_gate(now, conn, request) else { return };
        match request.method {
            Method::Post => self.handle_post(now, conn, request),
            Method::Get => self.handle_get(now, conn, request),
            Method::Delete => self.handle_delete(now, conn, request),
        }
    }

    /// The peer closed `conn` (client gone, load balancer cut). Only the connection goes: its
    /// stream's tool keeps running and its events keep being stored; unless the policy says a
    /// disconnect cancels (`disconnect_cancels`), when the tools of the streams it carried are
    /// cancelled.
    pub fn handle_disconnect(&mut self, now: Instant, conn: ConnId) {
        if self.crashed {
            return;
        }
        self.forget_listener(conn);
        if self.is_modern_conn(conn) {
            self.modern_conns.remove(&conn);
            if let Some(context) = self.modern.as_mut() {
                context.handle_disconnect(now, conn);
            }
            return self.drain_modern();
        }
        let cancelled = if self.policy.disconnect_cancels { self.tools_streamed_on(conn) } else { Vec::new() };
        if let Some(session) = self.forget_conn(conn) {
            for id in cancelled {
                if self.policy.disconnect_cancel_ignored {
                    self.ignore_cancel(id);
                } else {
                    self.end_tool(now, id, ToolEnd::Disconnected);
                }
            }
            self.touch_idle(now, &session, false);
        }
    }

    /// The client side of `conn` is gone but the server's own side was not told (a proxy cut
    /// only the client's connection). The server notices under `ServerPolicy::dead_stream`: at
    /// once, or when a later write on it fails; until then the connection stays registered (a
    /// standalone stream still counts as open for `second_get`) and frames are still written to it.
    pub fn handle_client_gone(&mut self, now: Instant, conn: ConnId) {
        if self.crashed {
            return;
        }
        if self.is_modern_conn(conn) {
            if let Some(context) = self.modern.as_mut() {
                context.handle_client_gone(now, conn);
            }
            return self.drain_modern();
        }
        match self.policy.dead_stream {
            DeadStream::Immediate => self.handle_disconnect(now, conn),
            DeadStream::OnWrite | DeadStream::OnKeepalive => {
                if let Some(open) = self.conns.get_mut(&conn) {
                    open.dead = true;
                }
            }
        }
    }

    /// Runs every timer due at `now`, earliest first.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some((at, timer)) = self.next_timer(now) {
            match timer {
                Timer::Tool(id) => self.run_tool(now, id),
                Timer::Keepalive(conn) => self.send_keepalive(at, conn),
                Timer::Idle(session) => self.end_session(now, &session, SessionEndReason::IdleExpired),
                Timer::Close(conn) => self.server_close(now, conn),
                Timer::TaskSweep => self.sweep_tasks(now),
            }
        }
        if let Some(context) = self.modern.as_mut() {
            context.handle_timeout(now);
            self.drain_modern();
        }
    }

    /// When `handle_timeout` must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let modern = self.modern.as_ref().and_then(|context| context.poll_timeout());
        self.next_timer(Instant(u64::MAX)).map(|(at, _)| at).into_iter().chain(modern).min()
    }

    /// The next output, if any; drain it after every input.
    pub fn poll_output(&mut self) -> Option<ServerOutput> {
        self.outputs.pop_front()
    }

    /// The process dies: records the loss of every session and running tool, and resets every
    /// open connection. The server does nothing afterwards; a restart is a new `Server`.
    pub fn crash(&mut self, _now: Instant) {
        self.die(SessionEndReason::ServerRestart);
    }

    /// The process dies; its sessions end for `reason`.
    fn die(&mut self, reason: SessionEndReason) {
        if self.crashed {
            return;
        }
        if let Some(context) = self.modern.as_mut() {
            // The task store is the process's, shared with this context: its end is recorded once,
            // by `crash_tasks` below.
            context.release_task_store();
            context.die(reason);
            self.modern_conns.clear();
            self.drain_modern();
        }
        for tool in std::mem::take(&mut self.running).into_values() {
            self.record(StepKind::ToolEnded {
                session: tool.session,
                request: tool.request,
                call: tool.call,
                end: ToolEnd::Lost,
            });
        }
        for session in self.live_sessions() {
            self.record(StepKind::SessionEnded { session, reason, idle_ttl_us: None });
        }
        self.sessions.clear();
        for conn in std::mem::take(&mut self.conns).into_keys() {
            self.outputs.push_back(ServerOutput::Close { conn, abrupt: true });
        }
        self.store = new_store(&self.policy);
        self.timers = Timers::default();
        self.crash_tasks();
        self.crashed = true;
    }

    /// Sessions the server still knows (none for a server without sessions).
    pub fn live_sessions(&self) -> Vec<SessionId> {
        if !self.policy.sessions {
            return Vec::new();
        }
        self.sessions.keys().cloned().collect()
    }

    /// True while a tool runs (orphaned ones included): the simulator waits for them to end.
    pub fn is_busy(&self) -> bool {
        !self.running.is_empty() || self.modern.as_ref().is_some_and(|context| context.is_busy())
    }

    /// Appends a server notification to every live session's standalone stream, stored even
    /// when no GET is attached. A server without sessions that holds a `GET` open
    /// (`sessionless_get = hold-open`) stores it on its implicit context's standalone stream,
    /// which no connection is ever attached to: recorded, so that a client holding such a `GET`
    /// open, believing it listens, can be judged to have lost it (the other servers without
    /// sessions record nothing: no client of theirs has a stream it believes carries them).
    pub fn notify_all(&mut self, now: Instant) {
        for session in self.live_sessions() {
            self.notify(now, &session);
        }
        if self.holds_gets_open() {
            self.notify(now, &NO_SESSION);
        }
        self.publish_change(now);
    }

    /// One notification on `session`'s standalone stream.
    fn notify(&mut self, now: Instant, session: &SessionId) {
        let Some(state) = self.sessions.get_mut(session) else { return };
        state.notifications += 1;
        let message = ServerMessage::Notification { seq: state.notifications };
        self.append(now, session, StreamNo::STANDALONE, Some(message));
    }

    /// A server without sessions that holds a `GET` open, and lets one reach `handle_get`: one
    /// that states no `eras` (its gate lets a request through unless it asks for the modern
    /// era), or serves the legacy era (a modern `GET` is answered 405 by the gate).
    fn holds_gets_open(&self) -> bool {
        !self.policy.sessions
            && !self.is_context
            && self.policy.sessionless_get == SessionlessGet::HoldOpen
            && self.policy.eras.as_deref().is_none_or(|eras| crate::era::EraSet::of(eras).legacy)
    }

    // -----------------------------------------------------------------------------------------
    // Requests
    // -----------------------------------------------------------------------------------------

    fn handle_post(&mut self, now: Instant, conn: ConnId, request: Request) {
        let Some(body) = request.body else {
            return self.protocol_error(conn, request.session);
        };
        if !self.policy.sessions {
            return self.handle_sessionless_post(now, conn, body);
        }
        if let ClientMessage::Task { id, op, task } = &body {
            // Tasks belong to the server, not to a session; a poll in a live session still
            // counts as its activity.
            self.task_request(now, conn, *id, *op, task);
            if let Some(session) = request.session.filter(|s| self.sessions.contains_key(s)) {
                self.touch_idle(now, &session, true);
            }
            return;
        }
        if let (ClientMessage::Initialize { id, client }, None) = (&body, &request.session) {
            return self.initialize(now, conn, *id, client);
        }
        let Some(session) = self.live_session(conn, request.session, None, body.request_id()) else { return };
        match body {
            // Re-initializing inside a session is refused, as the SDKs do.
            ClientMessage::Initialize { .. } => {
                self.reject(conn, Status::BAD_REQUEST, ErrorCode::Other, Some(session.clone()))
            }
            ClientMessage::Initialized => self.respond_status(conn, ResponseHead::status(Status::ACCEPTED)),
            ClientMessage::CallTool { id, call } => self.call_tool(now, conn, &session, id, call),
            ClientMessage::Cancelled { request } => {
                self.respond_status(conn, ResponseHead::status(Status::ACCEPTED));
                self.cancel_request(now, &session, request);
            }
            ClientMessage::Task { .. } => {}
            // Only a modern request discovers or listens; the era gate answers it before this point.
            ClientMessage::Discover { .. } | ClientMessage::Listen { .. } => {
                self.reject(conn, Status::BAD_REQUEST, ErrorCode::Other, Some(session.clone()))
            }
        }
        self.touch_idle(now, &session, true);
    }

    /// A POST to a server without sessions: served whatever session header it carries, in the
    /// one implicit context. `initialize` is answered like any request, with no session id.
    fn handle_sessionless_post(&mut self, now: Instant, conn: ConnId, body: ClientMessage) {
        match body {
            ClientMessage::Initialize { id, .. } => {
                let head = ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None };
                self.respond_json(conn, head, ServerMessage::InitializeResult { request: id });
            }
            ClientMessage::Initialized => self.respond_status(conn, ResponseHead::status(Status::ACCEPTED)),
            ClientMessage::CallTool { id, call } => self.call_tool(now, conn, &NO_SESSION, id, call),
            // Its id is unique only to its client: served apart, the cancel finds nothing; one
            // in-flight map for every client cancels whichever request has that id.
            ClientMessage::Cancelled { request } => {
                self.respond_status(conn, ResponseHead::status(Status::ACCEPTED));
                if self.policy.sessionless_cancel == SessionlessCancel::ByRequestId {
                    self.cancel_request(now, &NO_SESSION, request);
                }
            }
            ClientMessage::Task { id, op, task } => self.task_request(now, conn, id, op, &task),
            ClientMessage::Discover { id } => {
                let head = ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None };
                self.respond_json(conn, head, ServerMessage::DiscoverResult { request: id });
            }
            ClientMessage::Listen { id } => self.listen(now, conn, id),
        }
    }

    fn handle_get(&mut self, now: Instant, conn: ConnId, request: Request) {
        if !self.policy.sessions {
            return self.sessionless_get(now, conn, request.last_event_id.is_some());
        }
        let Some(session) = self.live_session(conn, request.session, None, None) else { return };
        match (request.last_event_id, self.policy.event_store, self.policy.resume_without_store) {
            (Some(id), EventStoreMode::Kept, _) => self.resume(now, conn, &session, id),
            (Some(_), EventStoreMode::NoStore, NoStoreResume::Error500) => {
                self.reject(conn, Status::INTERNAL, ErrorCode::Other, Some(session.clone()))
            }
            (Some(_), EventStoreMode::NoStore, NoStoreResume::Error400) => {
                self.reject(conn, Status::BAD_REQUEST, ErrorCode::Other, Some(session.clone()))
            }
            (Some(_), EventStoreMode::NoStore, NoStoreResume::Ignored) | (None, ..) => {
                self.open_standalone(now, conn, &session)
            }
        }
        self.touch_idle(now, &session, true);
    }
}

impl Server {
    /// A POST whose body does not parse, under `on_protocol_error`: answered 400, or the process
    /// exits on it (recorded, everything lost as in a crash) and asks to be started again.
    fn protocol_error(&mut self, conn: ConnId, session: Option<SessionId>) {
        match self.policy.on_protocol_error {
            ProtocolErrorReaction::AnswerError => self.reject(conn, Status::BAD_REQUEST, ErrorCode::Other, session),
            ProtocolErrorReaction::RestartProcess => {
                self.record(StepKind::ProcessExit { conn, session, cause: ExitCause::ProtocolError });
                self.exit_process();
            }
        }
    }

    /// The process exits: what it held is lost as in a crash, and its actor is asked for the next
    /// process.
    pub(super) fn exit_process(&mut self) {
        if self.crashed {
            return;
        }
        if self.is_context {
            // The process it belongs to dies with it, and records it (`drain_modern`).
            return self.outputs.push_back(ServerOutput::Exit);
        }
        self.die(SessionEndReason::ProcessExit);
        self.outputs.push_back(ServerOutput::Exit);
    }

    // Timers and outputs
    // -----------------------------------------------------------------------------------------

    /// Whether events are kept and named on the wire (`event_store`).
    fn has_store(&self) -> bool {
        self.policy.event_store == EventStoreMode::Kept
    }

    /// A stored event as written on the wire: without an event store, with no `id:`.
    fn wire(&self, event: &StoredEvent) -> SseEvent {
        let mut sse = event.to_sse(self.policy.retry_ms);
        if !self.has_store() {
            sse.id = None;
        }
        sse
    }

    /// A `GET` to a server without sessions, under `sessionless_get`: refused with
    /// `sessionless_get_status`, or answered `200 text/event-stream` and held open on an SSE
    /// connection attached to no stream (keep-alives only: with no session, no notification has a
    /// way onto it; `notify_all` stores them where nothing reads them). No priming event: there is
    /// nothing to resume. A `GET` with `Last-Event-ID` is no fresh one: with an event store it is
    /// refused as before (no session, no resumption); without one it is answered as
    /// `resume_without_store` says (Python's stateless `_replay_events` returns without a
    /// response: 500; ignored, it is a fresh `GET`, held open).
    fn sessionless_get(&mut self, now: Instant, conn: ConnId, resume: bool) {
        let refuse = Status(self.policy.sessionless_get_status);
        match (self.policy.sessionless_get, resume, self.has_store(), self.policy.resume_without_store) {
            (SessionlessGet::Refuse, ..) | (SessionlessGet::HoldOpen, true, true, _) => {
                self.reject(conn, refuse, ErrorCode::Other, None)
            }
            (SessionlessGet::HoldOpen, true, false, NoStoreResume::Error500) => {
                self.reject(conn, Status::INTERNAL, ErrorCode::Other, None)
            }
            (SessionlessGet::HoldOpen, true, false, NoStoreResume::Error400) => {
                self.reject(conn, Status::BAD_REQUEST, ErrorCode::Other, None)
            }
            (SessionlessGet::HoldOpen, ..) => {
                self.send(conn, Frame::Head(ResponseHead::event_stream()));
                self.open_sse_conn(now, conn, &NO_SESSION, streams::ConnKind::Held);
            }
        }
    }

    fn record(&mut self, step: StepKind) {
        self.outputs.push_back(ServerOutput::Record(step));
    }

    fn send(&mut self, conn: ConnId, frame: Frame) {
        self.outputs.push_back(ServerOutput::Send { conn, frame });
    }

    /// A complete answer with no body (or only an error body).
    fn respond_status(&mut self, conn: ConnId, head: ResponseHead) {
        self.send(conn, Frame::Head(head));
        self.send(conn, Frame::End);
        self.outputs.push_back(ServerOutput::Close { conn, abrupt: false });
    }

    fn respond_json(&mut self, conn: ConnId, head: ResponseHead, message: ServerMessage) {
        self.send(conn, Frame::Head(head));
        self.send(conn, Frame::Json(message));
        self.send(conn, Frame::End);
        self.outputs.push_back(ServerOutput::Close { conn, abrupt: false });
    }

    fn reject(&mut self, conn: ConnId, status: Status, code: ErrorCode, session: Option<SessionId>) {
        self.record(StepKind::Rejected { conn, status, session });
        self.respond_status(conn, ResponseHead::error(status, ErrorBody { code, head_event_id: None }));
    }
}
