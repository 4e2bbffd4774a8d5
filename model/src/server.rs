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
//! session when it holds none: it is never created, expired or reported as a session, and every
//! `GET` and `DELETE` is answered 405. A session-ful client still works against such a server: its
//! `initialize` is answered without a session id, so it sends its later requests without one.

use crate::config::{DeleteRule, EventIdScheme, IdleRule, SecondGet, ServerPolicy, StoreScope, ToolSpec, Unhonourable};
use crate::http::{
    Body, ClientMessage, ErrorBody, ErrorCode, Frame, Method, Request, ResponseHead, ServerMessage, Status, ToolCall,
};
use crate::ids::{CallKey, ConnId, EventId, RequestId, SessionId, StreamNo};
use crate::rng::SplitMix64;
use crate::sse::{
    mint_event_id, stream_hint, EventStore, LogKey, NewEvent, Position, StoredEvent, StreamHint, StreamLog,
    GET_STREAM_KEY,
};
use crate::time::{micros, Instant};
use crate::trace::{ResumeOutcome, SessionEndReason, StepKind, ToolEnd};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

/// Something the server asks its actor to do or record.
#[must_use]
#[derive(Clone, Debug, PartialEq)]
pub enum ServerOutput {
    /// Write a frame on a connection.
    Send { conn: ConnId, frame: Frame },
    /// Close a connection: after `Frame::End` for a clean end, or `abrupt` for a reset.
    Close { conn: ConnId, abrupt: bool },
    /// Record a step.
    Record(StepKind),
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
}

#[derive(Debug)]
struct Session {
    streams: BTreeMap<StreamNo, SessionStream>,
    /// Number of POST streams opened (the next one gets this plus one).
    post_streams: u32,
    /// Notifications sent on the standalone stream.
    notifications: u32,
    /// When the idle countdown started; `None` while something holds the session.
    idle_since: Option<Instant>,
}

#[derive(Debug)]
struct SessionStream {
    /// The log its events go into.
    key: LogKey,
    /// The TypeScript stream id (a uuid, or `_GET_stream`); empty for other schemes.
    label: String,
    /// The tool call a POST stream carries.
    call: Option<CallKey>,
    /// The connection that receives its new events.
    attached: Option<ConnId>,
    /// Its response was appended, or its call cancelled: nothing more will be appended.
    finished: bool,
}

#[derive(Debug)]
struct OpenConn {
    session: SessionId,
    next_keepalive: Option<Instant>,
}

#[derive(Debug)]
struct RunningTool {
    session: SessionId,
    request: RequestId,
    call: CallKey,
    stream: StreamNo,
    done_at: Instant,
    interval: Option<Duration>,
    next_progress: Option<Instant>,
    steps: u32,
    /// Its session was deleted and the policy lets it run on: it stores nothing.
    orphaned: bool,
}

impl RunningTool {
    /// Progress due strictly before the end; a progress tick that coincides with the end is
    /// swallowed by the result.
    fn due_progress(&self) -> Option<Instant> {
        self.next_progress.filter(|at| *at < self.done_at)
    }

    fn next_due(&self) -> Instant {
        self.due_progress().unwrap_or(self.done_at)
    }
}

/// The timers the server runs, ordered so that ties at one instant run deterministically.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    Tool(u64),
    Keepalive(ConnId),
    Idle(SessionId),
}

/// Where a `Last-Event-ID` led.
#[derive(Debug)]
struct Located {
    key: Option<LogKey>,
    /// The resuming session's stream writing into that log.
    target: Option<StreamNo>,
    position: Position,
}

/// A `GET` with `Last-Event-ID` being answered.
#[derive(Debug)]
struct Resumption {
    conn: ConnId,
    session: SessionId,
    last_event_id: EventId,
    located: Located,
}

impl Located {
    const NOWHERE: Located = Located { key: None, target: None, position: Position::Unknown };
}

/// The implicit context a server without sessions serves every request in. It is the name a
/// client holding no session gives its streams (`Client::app_session`), so that the events the
/// server records and those the application is handed name the same session.
const NO_SESSION: SessionId = SessionId(String::new());

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
        let mut server = Server {
            store: EventStore::new(policy.retention.clone()),
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
        };
        server.record(StepKind::ServerStart { epoch });
        if !server.policy.sessions {
            let context = server.new_session(&NO_SESSION);
            server.sessions.insert(NO_SESSION, context);
        }
        server
    }

    /// A request arrived on `conn`.
    pub fn handle_request(&mut self, now: Instant, conn: ConnId, request: Request) {
        if self.crashed {
            return;
        }
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
        let cancelled = if self.policy.disconnect_cancels { self.tools_streamed_on(conn) } else { Vec::new() };
        if let Some(session) = self.forget_conn(conn) {
            for id in cancelled {
                self.cancel_tool(now, id);
            }
            self.touch_idle(now, &session, false);
        }
    }

    /// Runs every timer due at `now`, earliest first.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some((at, timer)) = self.timers().filter(|(at, _)| *at <= now).min() {
            match timer {
                Timer::Tool(id) => self.run_tool(now, id),
                Timer::Keepalive(conn) => self.send_keepalive(at, conn),
                Timer::Idle(session) => self.end_session(now, &session, SessionEndReason::IdleExpired),
            }
        }
    }

    /// When `handle_timeout` must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers().map(|(at, _)| at).min()
    }

    pub fn poll_output(&mut self) -> Option<ServerOutput> {
        self.outputs.pop_front()
    }

    /// The process dies: records the loss of every session and running tool, and resets every
    /// open connection. The server does nothing afterwards; a restart is a new `Server`.
    pub fn crash(&mut self, _now: Instant) {
        if self.crashed {
            return;
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
            self.record(StepKind::SessionEnded { session, reason: SessionEndReason::ServerRestart });
        }
        self.sessions.clear();
        for conn in std::mem::take(&mut self.conns).into_keys() {
            self.outputs.push_back(ServerOutput::Close { conn, abrupt: true });
        }
        self.store = EventStore::new(self.policy.retention.clone());
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
        !self.running.is_empty()
    }

    /// Appends a server notification to every live session's standalone stream, stored even
    /// when no GET is attached.
    pub fn notify_all(&mut self, now: Instant) {
        for session in self.live_sessions() {
            let Some(state) = self.sessions.get_mut(&session) else { continue };
            state.notifications += 1;
            let message = ServerMessage::Notification { seq: state.notifications };
            self.append(now, &session, StreamNo::STANDALONE, Some(message));
        }
    }

    // -----------------------------------------------------------------------------------------
    // Requests
    // -----------------------------------------------------------------------------------------

    fn handle_post(&mut self, now: Instant, conn: ConnId, request: Request) {
        let Some(body) = request.body else {
            return self.reject(conn, Status::BAD_REQUEST, ErrorCode::Other, request.session);
        };
        if !self.policy.sessions {
            return self.handle_sessionless_post(now, conn, body);
        }
        if let (ClientMessage::Initialize { id, client }, None) = (&body, &request.session) {
            return self.initialize(now, conn, *id, client);
        }
        let Some(session) = self.live_session(conn, request.session, Status::NOT_FOUND) else { return };
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
            ClientMessage::Cancelled { request } => {
                self.respond_status(conn, ResponseHead::status(Status::ACCEPTED));
                self.cancel_request(now, &NO_SESSION, request);
            }
        }
    }

    fn handle_get(&mut self, now: Instant, conn: ConnId, request: Request) {
        if !self.policy.sessions {
            return self.reject(conn, Status::METHOD_NOT_ALLOWED, ErrorCode::Other, None);
        }
        let Some(session) = self.live_session(conn, request.session, Status::NOT_FOUND) else { return };
        match request.last_event_id {
            Some(id) => self.resume(now, conn, &session, id),
            None => self.open_standalone(now, conn, &session),
        }
        self.touch_idle(now, &session, true);
    }

    fn handle_delete(&mut self, now: Instant, conn: ConnId, request: Request) {
        if !self.policy.sessions {
            return self.reject(conn, Status::METHOD_NOT_ALLOWED, ErrorCode::Other, None);
        }
        let unknown = Status(self.policy.delete_unknown_status);
        let Some(session) = self.live_session(conn, request.session, unknown) else { return };
        self.end_session(now, &session, SessionEndReason::Deleted);
        self.respond_status(conn, ResponseHead::status(Status(self.policy.delete_status)));
    }

    /// The live session a request names; otherwise answers 400 (no header) or `unknown` and
    /// returns `None`.
    fn live_session(&mut self, conn: ConnId, session: Option<SessionId>, unknown: Status) -> Option<SessionId> {
        match session {
            None => {
                self.reject(conn, Status::BAD_REQUEST, ErrorCode::SessionRequired, None);
                None
            }
            Some(s) if self.sessions.contains_key(&s) => Some(s),
            Some(_) if unknown.is_success() => {
                self.respond_status(conn, ResponseHead::status(unknown));
                None
            }
            Some(s) => {
                self.reject(conn, unknown, ErrorCode::SessionNotFound, Some(s));
                None
            }
        }
    }

    fn initialize(&mut self, now: Instant, conn: ConnId, request: RequestId, client: &str) {
        let id = self.mint_session_id();
        let session = self.new_session(&id);
        self.sessions.insert(id.clone(), session);
        self.record(StepKind::SessionCreated { session: id.clone(), client: client.to_string() });
        let head = ResponseHead { status: Status::OK, body: Body::Json, session: Some(id.clone()), error: None };
        self.respond_json(conn, head, ServerMessage::InitializeResult { request });
        self.touch_idle(now, &id, true);
    }

    /// A session's state before its first request: its standalone stream, nothing else.
    fn new_session(&self, id: &SessionId) -> Session {
        let standalone = SessionStream {
            key: self.log_key(id, StreamNo::STANDALONE, None),
            label: match self.policy.event_ids {
                EventIdScheme::TsSdk => GET_STREAM_KEY.to_string(),
                _ => String::new(),
            },
            call: None,
            attached: None,
            finished: false,
        };
        Session {
            streams: BTreeMap::from([(StreamNo::STANDALONE, standalone)]),
            post_streams: 0,
            notifications: 0,
            idle_since: None,
        }
    }

    fn mint_session_id(&mut self) -> SessionId {
        self.sessions_minted += 1;
        match self.policy.event_ids {
            EventIdScheme::Reference | EventIdScheme::Rmcp => {
                SessionId(format!("{}-{}", self.epoch, self.sessions_minted))
            }
            EventIdScheme::TsSdk | EventIdScheme::PySdk => SessionId(self.rng.uuid()),
        }
    }

    /// The log a session's stream writes into, under the policy's store scope.
    fn log_key(&self, session: &SessionId, stream: StreamNo, request: Option<RequestId>) -> LogKey {
        match (self.policy.store, request) {
            (StoreScope::PerSession, _) => LogKey::Session(session.clone(), stream),
            (StoreScope::SharedByRequestId, Some(request)) => LogKey::Shared(request.0.to_string()),
            (StoreScope::SharedByRequestId, None) => LogKey::Shared(GET_STREAM_KEY.to_string()),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Tools
    // -----------------------------------------------------------------------------------------

    fn call_tool(&mut self, now: Instant, conn: ConnId, session: &SessionId, request: RequestId, call: ToolCall) {
        let Some(spec) = self.tools.get(&call.tool).cloned() else {
            let head = ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None };
            let message = format!("unknown tool {}", call.tool);
            return self.respond_json(conn, head, ServerMessage::Error { request, message });
        };
        let Some(stream) = self.open_post_stream(session, request, call.key) else { return };
        self.send(conn, Frame::Head(ResponseHead::event_stream()));
        self.open_sse_conn(now, conn, session);
        self.attach(session, stream, conn);
        if self.policy.priming.post {
            self.append(now, session, stream, None);
        }
        self.start_tool(now, session, request, &call, &spec, stream);
    }

    /// Allocates the session's next POST stream.
    fn open_post_stream(&mut self, session: &SessionId, request: RequestId, call: CallKey) -> Option<StreamNo> {
        let number = StreamNo(self.sessions.get(session)?.post_streams + 1);
        let key = self.log_key(session, number, Some(request));
        let label = match self.policy.event_ids {
            EventIdScheme::TsSdk => self.rng.uuid(),
            _ => String::new(),
        };
        let state = self.sessions.get_mut(session)?;
        state.post_streams = number.0;
        let stream = SessionStream { key, label, call: Some(call), attached: None, finished: false };
        state.streams.insert(number, stream);
        Some(number)
    }

    /// Executes the side effect (unless an honoured idempotency key says it already ran) and
    /// schedules progress and the result.
    fn start_tool(
        &mut self,
        now: Instant,
        session: &SessionId,
        request: RequestId,
        call: &ToolCall,
        spec: &ToolSpec,
        stream: StreamNo,
    ) {
        let key = call.idempotency_key.clone();
        let repeated =
            self.policy.honour_idempotency_keys && key.as_ref().is_some_and(|k| self.executed_keys.contains(k));
        if !repeated {
            self.executed_keys.extend(key);
            self.record(StepKind::SideEffect {
                session: session.clone(),
                request,
                call: call.key,
                tool: spec.name.clone(),
                idempotent: spec.idempotent,
            });
        }
        let interval = repeating(spec.event_interval);
        self.tools_started += 1;
        self.running.insert(
            self.tools_started,
            RunningTool {
                session: session.clone(),
                request,
                call: call.key,
                stream,
                done_at: now + spec.duration,
                interval,
                next_progress: interval.map(|i| now + i),
                steps: 0,
                orphaned: false,
            },
        );
    }

    /// The tool's next timer fired: one progress event, or its completion.
    fn run_tool(&mut self, now: Instant, id: u64) {
        let Some(tool) = self.running.get_mut(&id) else { return };
        let Some(at) = tool.due_progress() else { return self.complete_tool(now, id) };
        tool.steps += 1;
        tool.next_progress = tool.interval.map(|i| at + i);
        let (session, stream) = (tool.session.clone(), tool.stream);
        let message = ServerMessage::Progress { request: tool.request, call: tool.call, step: tool.steps };
        self.append(now, &session, stream, Some(message));
    }

    fn complete_tool(&mut self, now: Instant, id: u64) {
        let Some(tool) = self.running.remove(&id) else { return };
        if !tool.orphaned {
            let result = ServerMessage::ToolResult { request: tool.request, call: tool.call };
            self.append(now, &tool.session, tool.stream, Some(result));
        }
        self.record(StepKind::ToolEnded {
            session: tool.session.clone(),
            request: tool.request,
            call: tool.call,
            end: ToolEnd::Completed,
        });
        if tool.orphaned {
            return;
        }
        self.finish_stream(now, &tool.session, tool.stream);
        if self.policy.retention.drop_on_response {
            if let Some(key) = self.stream(&tool.session, tool.stream).map(|s| s.key.clone()) {
                self.store.drop_log(&key);
            }
        }
        self.touch_idle(now, &tool.session, false);
    }

    /// `notifications/cancelled`: the request's tool stops, its stream ends with no response.
    fn cancel_request(&mut self, now: Instant, session: &SessionId, request: RequestId) {
        let ids: Vec<u64> = self
            .running
            .iter()
            .filter(|(_, t)| &t.session == session && t.request == request && !t.orphaned)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.cancel_tool(now, id);
        }
    }

    /// The running tools whose streams `conn` carries.
    fn tools_streamed_on(&self, conn: ConnId) -> Vec<u64> {
        let Some(open) = self.conns.get(&conn) else { return Vec::new() };
        let Some(session) = self.sessions.get(&open.session) else { return Vec::new() };
        let carried: Vec<StreamNo> =
            session.streams.iter().filter(|(_, s)| s.attached == Some(conn)).map(|(n, _)| *n).collect();
        self.running
            .iter()
            .filter(|(_, t)| t.session == open.session && !t.orphaned && carried.contains(&t.stream))
            .map(|(id, _)| *id)
            .collect()
    }

    fn cancel_tool(&mut self, now: Instant, id: u64) {
        let Some(tool) = self.running.remove(&id) else { return };
        self.record(StepKind::ToolEnded {
            session: tool.session.clone(),
            request: tool.request,
            call: tool.call,
            end: ToolEnd::Cancelled,
        });
        self.finish_stream(now, &tool.session, tool.stream);
    }

    /// Nothing more will be appended to the stream: its attached connection ends cleanly.
    fn finish_stream(&mut self, now: Instant, session: &SessionId, stream: StreamNo) {
        let Some(state) = self.stream_mut(session, stream) else { return };
        state.finished = true;
        if let Some(conn) = state.attached {
            self.end_conn(now, conn);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Sessions ending
    // -----------------------------------------------------------------------------------------

    /// DELETE or idle expiry: running tools are cancelled (or, on DELETE under `RunOn`, left
    /// running with nowhere to store their result), connections end, and the session is gone.
    fn end_session(&mut self, now: Instant, session: &SessionId, reason: SessionEndReason) {
        let run_on = reason == SessionEndReason::Deleted && self.policy.delete_running_tool == DeleteRule::RunOn;
        let tools: Vec<u64> =
            self.running.iter().filter(|(_, t)| &t.session == session && !t.orphaned).map(|(id, _)| *id).collect();
        for id in tools {
            match self.running.get_mut(&id) {
                Some(tool) if run_on => {
                    tool.orphaned = true;
                    tool.next_progress = None;
                }
                _ => self.cancel_tool(now, id),
            }
        }
        let conns: Vec<ConnId> = self.conns.iter().filter(|(_, c)| &c.session == session).map(|(id, _)| *id).collect();
        for conn in conns {
            self.end_conn(now, conn);
        }
        self.sessions.remove(session);
        self.store.drop_session(session);
        self.record(StepKind::SessionEnded { session: session.clone(), reason });
    }

    /// Whether the session's idle countdown is held under the policy's rule.
    fn holds_session(&self, session: &SessionId) -> bool {
        let open_conn = || self.conns.values().any(|c| &c.session == session);
        let tool_runs = || self.running.values().any(|t| &t.session == session && !t.orphaned);
        match self.policy.idle_rule {
            IdleRule::LastRequest => false,
            IdleRule::NoOpenRequest => open_conn(),
            IdleRule::NeverWhileBusy => open_conn() || tool_runs(),
        }
    }

    /// Re-evaluates the idle countdown after something changed; a finished request restarts it.
    fn touch_idle(&mut self, now: Instant, session: &SessionId, request: bool) {
        // Without sessions there is nothing to expire.
        if !self.policy.sessions {
            return;
        }
        let held = self.holds_session(session);
        let Some(state) = self.sessions.get_mut(session) else { return };
        if held {
            state.idle_since = None;
        } else if request || state.idle_since.is_none() {
            state.idle_since = Some(now);
        }
    }

    // -----------------------------------------------------------------------------------------
    // GET: the standalone stream and resumption
    // -----------------------------------------------------------------------------------------

    fn open_standalone(&mut self, now: Instant, conn: ConnId, session: &SessionId) {
        let attached = self.stream(session, StreamNo::STANDALONE).and_then(|s| s.attached);
        if attached.is_some() && self.policy.second_get == SecondGet::Reject409 {
            return self.reject(conn, Status::CONFLICT, ErrorCode::StreamAlreadyOpen, Some(session.clone()));
        }
        // Under `Accept` the earlier connection stays open but no longer receives events.
        self.send(conn, Frame::Head(ResponseHead::event_stream()));
        self.open_sse_conn(now, conn, session);
        self.attach(session, StreamNo::STANDALONE, conn);
        if self.policy.priming.standalone {
            self.append(now, session, StreamNo::STANDALONE, None);
        }
    }

    fn resume(&mut self, now: Instant, conn: ConnId, session: &SessionId, last_event_id: EventId) {
        let located = self.locate(now, session, &last_event_id);
        let resumption = Resumption { conn, session: session.clone(), last_event_id, located };
        match resumption.located.position {
            Position::Honourable(seq) => self.replay(now, &resumption, seq),
            Position::Evicted(seq) => self.unhonourable(now, &resumption, self.policy.evicted_id, Some(seq)),
            Position::Unknown => self.unhonourable(now, &resumption, self.policy.unknown_id, None),
        }
    }

    /// Finds the log and position a `Last-Event-ID` names, the way the policy's scheme does.
    fn locate(&mut self, now: Instant, session: &SessionId, id: &EventId) -> Located {
        let Some(state) = self.sessions.get(session) else { return Located::NOWHERE };
        let key = match stream_hint(self.policy.event_ids, id) {
            None => None,
            Some(StreamHint::Number(n)) => state.streams.get(&n).map(|s| s.key.clone()),
            Some(StreamHint::Label(label)) => state.streams.values().find(|s| s.label == label).map(|s| s.key.clone()),
            Some(StreamHint::Lookup) => self.store.find_issuer(id, |key| match key {
                LogKey::Session(owner, _) => owner == session,
                LogKey::Shared(_) => true,
            }),
        };
        let Some(key) = key else { return Located::NOWHERE };
        self.store.expire(&key, now);
        let position = self.store.log(&key).map_or(Position::Unknown, |log| log.position(id));
        // In a shared store the log may hold another session's stream under the same key: the
        // resuming session's own stream with that key (its newest) is what gets attached.
        let target = state.streams.iter().rev().find(|(_, s)| s.key == key).map(|(n, _)| *n);
        Located { key: Some(key), target, position }
    }

    /// An honourable resume: replay per the rule, then attach.
    fn replay(&mut self, now: Instant, r: &Resumption, seq: u32) {
        let events = match (self.resumed_log(r), self.policy.event_ids) {
            (None, _) => Vec::new(),
            (Some(log), EventIdScheme::TsSdk) => log.replay_by_id_order(&r.last_event_id, self.policy.replay),
            (Some(log), _) => log.replay_by_seq(seq, self.policy.replay),
        };
        self.record_resume(r, ResumeOutcome::Replayed { replayed: count(&events) });
        self.open_resumed(now, r, &events);
        self.attach_resumed(now, r);
    }

    /// A `Last-Event-ID` the server cannot honour: evicted when `given_seq` is known, else unknown.
    fn unhonourable(&mut self, now: Instant, r: &Resumption, rule: Unhonourable, given_seq: Option<u32>) {
        let log = self.resumed_log(r);
        match rule {
            Unhonourable::Gone410 | Unhonourable::Conflict409 => {
                let status = if rule == Unhonourable::Gone410 { Status::GONE } else { Status::CONFLICT };
                let code =
                    if given_seq.is_some() { ErrorCode::ResumeWindowExceeded } else { ErrorCode::UnknownEventId };
                // The head named is the newest event the server no longer holds: resuming after
                // it replays everything still held, so the reported gap is exactly the loss.
                // (Naming the newest event instead would make the client skip held events, and
                // the tool's result with them when the stream has finished.)
                let head = log.and_then(|log| if given_seq.is_some() { log.last_evicted_id() } else { log.head_id() });
                self.record_resume(r, ResumeOutcome::Rejected { status, head: head.clone() });
                let error = ErrorBody { code, head_event_id: head };
                self.respond_status(r.conn, ResponseHead::error(status, error));
            }
            Unhonourable::SilentHead => {
                let skipped = given_seq.zip(log).map_or(0, |(seq, log)| log.issued_after(seq));
                self.record_resume(r, ResumeOutcome::SilentHead { skipped });
                self.open_resumed(now, r, &[]);
                self.attach_resumed(now, r);
            }
            Unhonourable::FromOldest => {
                let events: Vec<StoredEvent> = log.map(|log| log.retained().cloned().collect()).unwrap_or_default();
                let skipped = given_seq.zip(log).map_or(0, |(seq, log)| log.evicted_after(seq));
                self.record_resume(r, ResumeOutcome::FromOldest { skipped, replayed: count(&events) });
                self.open_resumed(now, r, &events);
                self.attach_resumed(now, r);
            }
            Unhonourable::EmptyClosed => {
                self.record_resume(r, ResumeOutcome::Empty { open: false });
                self.respond_status(r.conn, ResponseHead::event_stream());
            }
            Unhonourable::EmptyOpen => {
                self.record_resume(r, ResumeOutcome::Empty { open: true });
                self.open_resumed(now, r, &[]);
            }
        }
    }

    fn resumed_log(&self, r: &Resumption) -> Option<&StreamLog> {
        r.located.key.as_ref().and_then(|key| self.store.log(key))
    }

    /// Answers 200 `text/event-stream` on the resuming connection and replays `events` on it.
    fn open_resumed(&mut self, now: Instant, r: &Resumption, events: &[StoredEvent]) {
        self.send(r.conn, Frame::Head(ResponseHead::event_stream()));
        self.open_sse_conn(now, r.conn, &r.session);
        for event in events {
            self.send(r.conn, Frame::Event(event.to_sse(self.policy.retry_ms)));
        }
    }

    /// After a resume's replay: a finished stream ends the connection; a live one takes it as its
    /// receiver (ending the one it had), with a priming event if the policy sends one. With no
    /// stream of its own to attach to, the connection stays open and receives only keep-alives.
    fn attach_resumed(&mut self, now: Instant, r: &Resumption) {
        let Some(stream) = r.located.target else { return };
        let Some(state) = self.stream(&r.session, stream) else { return };
        if state.finished {
            return self.end_conn(now, r.conn);
        }
        if let Some(old) = state.attached.filter(|old| *old != r.conn) {
            self.end_conn(now, old);
        }
        self.attach(&r.session, stream, r.conn);
        if self.policy.priming.resume {
            self.append(now, &r.session, stream, None);
        }
    }

    fn record_resume(&mut self, r: &Resumption, outcome: ResumeOutcome) {
        self.record(StepKind::Resume {
            session: r.session.clone(),
            last_event_id: r.last_event_id.clone(),
            stream: r.located.target,
            outcome,
        });
    }

    // -----------------------------------------------------------------------------------------
    // Streams and connections
    // -----------------------------------------------------------------------------------------

    fn stream(&self, session: &SessionId, stream: StreamNo) -> Option<&SessionStream> {
        self.sessions.get(session)?.streams.get(&stream)
    }

    fn stream_mut(&mut self, session: &SessionId, stream: StreamNo) -> Option<&mut SessionStream> {
        self.sessions.get_mut(session)?.streams.get_mut(&stream)
    }

    /// Stores an event in the stream's log, records it, and sends it to the attached connection.
    fn append(&mut self, now: Instant, session: &SessionId, stream: StreamNo, message: Option<ServerMessage>) {
        let Some(state) = self.stream(session, stream) else { return };
        let (key, label, call, attached) = (state.key.clone(), state.label.clone(), state.call, state.attached);
        let scheme = self.policy.event_ids;
        let rng = &mut self.rng;
        let new = NewEvent { session: session.clone(), call, message };
        let epoch = (!self.policy.sessions).then_some(self.epoch);
        let event = self.store.append(&key, now, new, |seq| {
            let id = mint_event_id(scheme, stream, &label, seq, now, rng);
            match epoch {
                Some(epoch) => EventId(format!("{epoch}.{id}")),
                None => id,
            }
        });
        self.record(StepKind::EventStored {
            session: session.clone(),
            stream,
            seq: event.seq,
            id: event.id.clone(),
            call: event.call,
            message: event.message.clone(),
        });
        if let Some(conn) = attached {
            self.send(conn, Frame::Event(event.to_sse(self.policy.retry_ms)));
        }
    }

    /// Makes `conn` the receiver of the stream's new events.
    fn attach(&mut self, session: &SessionId, stream: StreamNo, conn: ConnId) {
        if let Some(state) = self.stream_mut(session, stream) {
            state.attached = Some(conn);
        }
    }

    /// Registers an SSE answer that stays open.
    fn open_sse_conn(&mut self, now: Instant, conn: ConnId, session: &SessionId) {
        let next_keepalive = repeating(self.policy.keepalive).map(|k| now + k);
        self.conns.insert(conn, OpenConn { session: session.clone(), next_keepalive });
    }

    /// Ends an open SSE connection cleanly.
    fn end_conn(&mut self, now: Instant, conn: ConnId) {
        let session = self.forget_conn(conn);
        self.send(conn, Frame::End);
        self.outputs.push_back(ServerOutput::Close { conn, abrupt: false });
        if let Some(session) = session {
            self.touch_idle(now, &session, false);
        }
    }

    /// Drops the connection and detaches it from its stream; returns its session.
    fn forget_conn(&mut self, conn: ConnId) -> Option<SessionId> {
        let open = self.conns.remove(&conn)?;
        if let Some(state) = self.sessions.get_mut(&open.session) {
            for stream in state.streams.values_mut().filter(|s| s.attached == Some(conn)) {
                stream.attached = None;
            }
        }
        Some(open.session)
    }

    fn send_keepalive(&mut self, at: Instant, conn: ConnId) {
        let Some(open) = self.conns.get_mut(&conn) else { return };
        open.next_keepalive = repeating(self.policy.keepalive).map(|k| at + k);
        self.send(conn, Frame::Comment);
    }

    // -----------------------------------------------------------------------------------------
    // Timers and outputs
    // -----------------------------------------------------------------------------------------

    fn timers(&self) -> impl Iterator<Item = (Instant, Timer)> + '_ {
        let tools = self.running.iter().map(|(id, tool)| (tool.next_due(), Timer::Tool(*id)));
        let keepalives =
            self.conns.iter().filter_map(|(conn, open)| open.next_keepalive.map(|at| (at, Timer::Keepalive(*conn))));
        let idle = self.sessions.iter().filter_map(|(id, session)| {
            let deadline = session.idle_since? + self.policy.idle_ttl?;
            Some((deadline, Timer::Idle(id.clone())))
        });
        tools.chain(keepalives).chain(idle)
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

fn count(events: &[StoredEvent]) -> u32 {
    u32::try_from(events.len()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ReplayRule, Retention};
    use crate::http::SseEvent;
    use crate::profiles;

    const INIT: ConnId = ConnId(1);
    const POST: ConnId = ConnId(2);
    const GET: ConnId = ConnId(3);
    const OTHER: ConnId = ConnId(4);

    fn at_ms(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    fn at(s: u64) -> Instant {
        Instant::ZERO + Duration::from_secs(s)
    }

    fn policy(name: &str) -> ServerPolicy {
        profiles::server(name).expect("a listed profile")
    }

    fn tool(name: &str, secs: u64, interval: Option<Duration>, idempotent: bool) -> ToolSpec {
        ToolSpec { name: name.into(), duration: Duration::from_secs(secs), event_interval: interval, idempotent }
    }

    /// `pay`: a silent 300 s side effect; `chatty`: 240 s with progress every second;
    /// `marathon`: a silent hour; `burst`: 1 ms with progress every 100 µs; `quick`: 2 s.
    fn tools() -> Vec<ToolSpec> {
        vec![
            tool("pay", 300, None, false),
            tool("chatty", 240, Some(Duration::from_secs(1)), false),
            tool("marathon", 3600, None, false),
            ToolSpec {
                name: "burst".into(),
                duration: Duration::from_millis(1),
                event_interval: Some(Duration::from_micros(100)),
                idempotent: true,
            },
            tool("quick", 2, None, true),
        ]
    }

    fn server(policy: ServerPolicy) -> Server {
        let mut s = Server::new(policy, tools(), 0, 42);
        assert_eq!(drain(&mut s), vec![ServerOutput::Record(StepKind::ServerStart { epoch: 0 })]);
        s
    }

    fn drain(s: &mut Server) -> Vec<ServerOutput> {
        std::iter::from_fn(|| s.poll_output()).collect()
    }

    /// Runs every timer up to and including `t`, at its own time.
    fn drive_until(s: &mut Server, t: Instant) -> Vec<ServerOutput> {
        let mut out = Vec::new();
        for _ in 0..1_000_000 {
            match s.poll_timeout() {
                Some(due) if due <= t => {
                    s.handle_timeout(due);
                    out.extend(drain(s));
                }
                _ => return out,
            }
        }
        panic!("timers did not settle before {t}");
    }

    fn init(s: &mut Server, now: Instant) -> SessionId {
        s.handle_request(now, INIT, Request::initialize(RequestId(1), "app"));
        records(&drain(s))
            .into_iter()
            .find_map(|r| match r {
                StepKind::SessionCreated { session, .. } => Some(session),
                _ => None,
            })
            .expect("initialize creates a session")
    }

    fn call_request(session: &SessionId, request: u64, tool: &str, key: u32) -> Request {
        let call = ToolCall { tool: tool.into(), key: CallKey(key), idempotency_key: None };
        Request::post(Some(session.clone()), ClientMessage::CallTool { id: RequestId(request), call })
    }

    fn call(s: &mut Server, now: Instant, conn: ConnId, session: &SessionId, tool: &str) -> Vec<ServerOutput> {
        s.handle_request(now, conn, call_request(session, 2, tool, 7));
        drain(s)
    }

    fn resume(s: &mut Server, now: Instant, conn: ConnId, session: &SessionId, id: &EventId) -> Vec<ServerOutput> {
        s.handle_request(now, conn, Request::get(Some(session.clone()), Some(id.clone())));
        drain(s)
    }

    fn frames(out: &[ServerOutput], conn: ConnId) -> Vec<Frame> {
        out.iter()
            .filter_map(|o| match o {
                ServerOutput::Send { conn: c, frame } if *c == conn => Some(frame.clone()),
                _ => None,
            })
            .collect()
    }

    fn events(out: &[ServerOutput], conn: ConnId) -> Vec<SseEvent> {
        frames(out, conn)
            .into_iter()
            .filter_map(|f| match f {
                Frame::Event(e) => Some(e),
                _ => None,
            })
            .collect()
    }

    fn ids(events: &[SseEvent]) -> Vec<String> {
        events.iter().map(|e| e.id.as_ref().expect("every event has an id").0.clone()).collect()
    }

    fn records(out: &[ServerOutput]) -> Vec<StepKind> {
        out.iter()
            .filter_map(|o| match o {
                ServerOutput::Record(r) => Some(r.clone()),
                _ => None,
            })
            .collect()
    }

    fn closes(out: &[ServerOutput], conn: ConnId) -> Vec<bool> {
        out.iter()
            .filter_map(|o| match o {
                ServerOutput::Close { conn: c, abrupt } if *c == conn => Some(*abrupt),
                _ => None,
            })
            .collect()
    }

    fn side_effects(out: &[ServerOutput]) -> usize {
        records(out).iter().filter(|r| matches!(r, StepKind::SideEffect { .. })).count()
    }

    fn stored(out: &[ServerOutput]) -> Vec<(SessionId, String, Option<ServerMessage>)> {
        records(out)
            .into_iter()
            .filter_map(|r| match r {
                StepKind::EventStored { session, id, message, .. } => Some((session, id.0, message)),
                _ => None,
            })
            .collect()
    }

    fn resume_outcome(out: &[ServerOutput]) -> (Option<StreamNo>, ResumeOutcome) {
        records(out)
            .into_iter()
            .find_map(|r| match r {
                StepKind::Resume { stream, outcome, .. } => Some((stream, outcome)),
                _ => None,
            })
            .expect("a resume is recorded")
    }

    fn tool_ends(out: &[ServerOutput]) -> Vec<ToolEnd> {
        records(out)
            .into_iter()
            .filter_map(|r| match r {
                StepKind::ToolEnded { end, .. } => Some(end),
                _ => None,
            })
            .collect()
    }

    fn session_ends(out: &[ServerOutput]) -> Vec<SessionEndReason> {
        records(out)
            .into_iter()
            .filter_map(|r| match r {
                StepKind::SessionEnded { reason, .. } => Some(reason),
                _ => None,
            })
            .collect()
    }

    fn head_status(out: &[ServerOutput], conn: ConnId) -> Status {
        match frames(out, conn).first() {
            Some(Frame::Head(head)) => head.status,
            other => panic!("expected a head first on {conn}, got {other:?}"),
        }
    }

    fn progress(step: u32) -> Option<ServerMessage> {
        Some(ServerMessage::Progress { request: RequestId(2), call: CallKey(7), step })
    }

    fn progress_ids(from: u32, to: u32) -> Vec<String> {
        (from..=to).map(|seq| format!("1-{seq}")).collect()
    }

    #[test]
    fn initialize_mints_a_session_and_answers_200_with_its_id() {
        let mut s = server(policy("reference"));
        s.handle_request(at(0), INIT, Request::initialize(RequestId(1), "app"));
        let id = SessionId::from("0-1");
        let head = ResponseHead { status: Status::OK, body: Body::Json, session: Some(id.clone()), error: None };
        assert_eq!(
            drain(&mut s),
            vec![
                ServerOutput::Record(StepKind::SessionCreated { session: id.clone(), client: "app".into() }),
                ServerOutput::Send { conn: INIT, frame: Frame::Head(head) },
                ServerOutput::Send {
                    conn: INIT,
                    frame: Frame::Json(ServerMessage::InitializeResult { request: RequestId(1) })
                },
                ServerOutput::Send { conn: INIT, frame: Frame::End },
                ServerOutput::Close { conn: INIT, abrupt: false },
            ]
        );
        assert_eq!(s.live_sessions(), vec![id.clone()]);
        s.handle_request(at(1), OTHER, Request::post(Some(id), ClientMessage::Initialized));
        let out = drain(&mut s);
        assert_eq!(frames(&out, OTHER), vec![Frame::Head(ResponseHead::status(Status::ACCEPTED)), Frame::End]);
        // Other epochs and the SDK schemes mint other ids.
        let mut restarted = Server::new(policy("reference"), tools(), 3, 42);
        assert_eq!(init(&mut restarted, at(0)), SessionId::from("3-1"));
        let mut ts = server(policy("ts-sdk"));
        assert_eq!(init(&mut ts, at(0)).0.len(), 36);
    }

    #[test]
    fn requests_without_a_live_session_are_refused() {
        let mut s = server(policy("reference"));
        let session = init(&mut s, at(0));
        let unknown = SessionId::from("9-9");
        s.handle_request(at(1), POST, call_request(&unknown, 2, "pay", 7));
        let out = drain(&mut s);
        assert_eq!(
            frames(&out, POST)[0],
            Frame::Head(ResponseHead::error(
                Status::NOT_FOUND,
                ErrorBody { code: ErrorCode::SessionNotFound, head_event_id: None }
            ))
        );
        assert_eq!(
            records(&out),
            vec![StepKind::Rejected { conn: POST, status: Status::NOT_FOUND, session: Some(unknown.clone()) }]
        );
        assert_eq!(side_effects(&out), 0);
        s.handle_request(at(1), GET, Request::get(Some(unknown.clone()), Some(EventId::from("1-0"))));
        assert_eq!(head_status(&drain(&mut s), GET), Status::NOT_FOUND);
        s.handle_request(at(1), GET, Request::get(None, None));
        let out = drain(&mut s);
        assert_eq!(records(&out), vec![StepKind::Rejected { conn: GET, status: Status::BAD_REQUEST, session: None }]);
        // An ended session is as unknown as one never minted.
        s.handle_request(at(2), OTHER, Request::delete(session.clone()));
        drain(&mut s);
        s.handle_request(at(3), OTHER, Request::delete(session));
        assert_eq!(head_status(&drain(&mut s), OTHER), Status::NOT_FOUND);
        // rmcp answers DELETE of an unknown session with 202 and does not call it a rejection.
        let mut rmcp = server(policy("rmcp"));
        rmcp.handle_request(at(0), OTHER, Request::delete(unknown));
        let out = drain(&mut rmcp);
        assert_eq!(head_status(&out, OTHER), Status::ACCEPTED);
        assert!(records(&out).is_empty());
    }

    #[test]
    fn a_long_silent_tool_runs_once_and_its_result_ends_the_attached_stream() {
        let mut s = server(policy("reference"));
        let session = init(&mut s, at(0));
        let out = call(&mut s, at(1), POST, &session, "pay");
        assert_eq!(side_effects(&out), 1);
        let sent = frames(&out, POST);
        assert_eq!(sent[0], Frame::Head(ResponseHead::event_stream()));
        let priming = events(&out, POST);
        assert_eq!(ids(&priming), vec!["1-0"]);
        assert!(priming[0].is_priming());
        let early = drive_until(&mut s, Instant(at(301).0 - 1));
        assert!(frames(&early, POST).is_empty(), "nothing before start + duration: {early:?}");
        let out = drive_until(&mut s, at(301));
        let result = Frame::Event(SseEvent {
            id: Some(EventId::from("1-1")),
            retry_ms: None,
            kind: Default::default(),
            data: Some(ServerMessage::ToolResult { request: RequestId(2), call: CallKey(7) }),
        });
        assert_eq!(frames(&out, POST), vec![result, Frame::End]);
        assert_eq!(closes(&out, POST), vec![false]);
        assert_eq!(tool_ends(&out), vec![ToolEnd::Completed]);
        assert_eq!(side_effects(&out), 0, "the side effect ran once, at the start");
        // Only the idle countdown is left, started when the tool ended.
        assert_eq!(s.poll_timeout(), Some(at(301 + 1800)));
    }

    #[test]
    fn a_resume_after_the_priming_id_replays_exactly_the_missed_events_in_order() {
        let mut s = server(policy("reference"));
        let session = init(&mut s, at(0));
        let out = call(&mut s, at(0), POST, &session, "chatty");
        assert_eq!(ids(&events(&out, POST)), vec!["1-0"]);
        s.handle_disconnect(at_ms(500), POST);
        let missed = drive_until(&mut s, at_ms(30_500));
        assert!(frames(&missed, POST).is_empty(), "a detached stream sends nothing");
        assert_eq!(stored(&missed).len(), 30, "but the tool runs on and its events are stored");
        let out = resume(&mut s, at_ms(30_500), GET, &session, &EventId::from("1-0"));
        assert_eq!(resume_outcome(&out), (Some(StreamNo(1)), ResumeOutcome::Replayed { replayed: 30 }));
        let got = events(&out, GET);
        let mut expected = progress_ids(1, 30);
        expected.push("1-31".into()); // the resume's priming event
        assert_eq!(ids(&got), expected);
        assert_eq!(got[0].data, progress(1));
        assert_eq!(got[29].data, progress(30));
        assert!(got[30].is_priming());
        // The resumed connection is attached: the next progress goes to it.
        let live = drive_until(&mut s, at(31));
        assert_eq!(ids(&events(&live, GET)), vec!["1-32"]);
        assert_eq!(events(&live, GET)[0].data, progress(31));
    }

    /// The second incident: a chatty tool, 100 retained events, a 200 s disconnect.
    fn evicted_resume(policy: ServerPolicy) -> (Server, SessionId, Vec<ServerOutput>) {
        let mut s = server(policy);
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "chatty");
        let _ = drive_until(&mut s, at(5));
        s.handle_disconnect(at_ms(5_500), POST);
        let _ = drive_until(&mut s, at_ms(200_500));
        // Issued: priming 1-0 and progress 1-1 ..= 1-200; held: 1-101 ..= 1-200.
        let out = resume(&mut s, at_ms(200_500), GET, &session, &EventId::from("1-5"));
        (s, session, out)
    }

    #[test]
    fn the_reference_server_answers_an_evicted_id_with_410_naming_the_head() {
        let (mut s, session, out) = evicted_resume(policy("reference"));
        // The head is the newest event no longer held: 1-101 ..= 1-200 are still held.
        let head = Some(EventId::from("1-100"));
        assert_eq!(
            resume_outcome(&out),
            (Some(StreamNo(1)), ResumeOutcome::Rejected { status: Status::GONE, head: head.clone() })
        );
        let error = ErrorBody { code: ErrorCode::ResumeWindowExceeded, head_event_id: head };
        assert_eq!(frames(&out, GET), vec![Frame::Head(ResponseHead::error(Status::GONE, error)), Frame::End]);
        assert_eq!(closes(&out, GET), vec![false]);
        // Resuming at the head it named replays everything still held, then continues live.
        let out = resume(&mut s, at_ms(200_600), OTHER, &session, &EventId::from("1-100"));
        assert_eq!(resume_outcome(&out).1, ResumeOutcome::Replayed { replayed: 100 });
        assert_eq!(ids(&events(&out, OTHER))[..2], ["1-101", "1-102"]);
        let live = drive_until(&mut s, at(201));
        assert_eq!(events(&live, OTHER)[0].data, progress(201));
        // An id never issued is unknown, with its own code.
        let out = resume(&mut s, at(202), GET, &session, &EventId::from("1-999"));
        let Frame::Head(head) = &frames(&out, GET)[0] else { panic!("a head first") };
        assert_eq!(head.error.as_ref().map(|e| e.code), Some(ErrorCode::UnknownEventId));
    }

    #[test]
    fn the_silent_head_server_attaches_an_evicted_id_at_the_head_and_says_nothing() {
        let (mut s, _, out) = evicted_resume(policy("silent-head"));
        assert_eq!(resume_outcome(&out), (Some(StreamNo(1)), ResumeOutcome::SilentHead { skipped: 195 }));
        assert_eq!(head_status(&out, GET), Status::OK);
        let got = events(&out, GET);
        assert_eq!(ids(&got), vec!["1-201"], "no replay, only the resume's priming event");
        assert!(got[0].is_priming());
        assert!(closes(&out, GET).is_empty(), "the connection stays open");
        let live = drive_until(&mut s, at(201));
        assert_eq!(ids(&events(&live, GET)), vec!["1-202"]);
        assert_eq!(events(&live, GET)[0].data, progress(201));
    }

    #[test]
    fn a_resume_right_before_the_oldest_held_event_loses_nothing_even_if_its_id_was_evicted() {
        let mut p = policy("silent-head");
        p.retention = Retention::last(1);
        let mut s = server(p);
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "quick");
        s.handle_disconnect(at(1), POST);
        let _ = drive_until(&mut s, at(3));
        // 1-0 (priming) is evicted, but the result after it is held: nothing is lost.
        let out = resume(&mut s, at(3), GET, &session, &EventId::from("1-0"));
        assert_eq!(resume_outcome(&out).1, ResumeOutcome::Replayed { replayed: 1 });
        assert_eq!(frames(&out, GET).last(), Some(&Frame::End));
        assert!(events(&out, GET).iter().any(|e| e.data.as_ref().is_some_and(|m| m.is_response())));
    }

    #[test]
    fn a_time_window_evicts_by_age_and_409_is_the_same_answer_with_another_status() {
        let mut p = policy("reference");
        p.retention = Retention { max_events: None, window: Some(Duration::from_secs(10)), drop_on_response: false };
        p.evicted_id = Unhonourable::Conflict409;
        p.unknown_id = Unhonourable::Conflict409;
        let mut s = server(p);
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "chatty");
        s.handle_disconnect(at_ms(500), POST);
        let _ = drive_until(&mut s, at_ms(30_500));
        // Stored at 3 s, 27.5 s old: gone. Stored at 25 s: held.
        let out = resume(&mut s, at_ms(30_500), GET, &session, &EventId::from("1-3"));
        let head = Some(EventId::from("1-20"));
        assert_eq!(resume_outcome(&out).1, ResumeOutcome::Rejected { status: Status::CONFLICT, head: head.clone() });
        let error = ErrorBody { code: ErrorCode::ResumeWindowExceeded, head_event_id: head };
        assert_eq!(frames(&out, GET)[0], Frame::Head(ResponseHead::error(Status::CONFLICT, error)));
        let out = resume(&mut s, at_ms(30_500), GET, &session, &EventId::from("1-25"));
        assert_eq!(resume_outcome(&out).1, ResumeOutcome::Replayed { replayed: 5 });
        // An id that names no stream at all: no head to offer.
        let out = resume(&mut s, at_ms(30_600), OTHER, &session, &EventId::from("7-1"));
        assert_eq!(resume_outcome(&out), (None, ResumeOutcome::Rejected { status: Status::CONFLICT, head: None }));
    }

    #[test]
    fn a_resume_takes_over_the_stream_from_a_connection_still_attached() {
        let mut s = server(policy("reference"));
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "chatty");
        let _ = drive_until(&mut s, at(2));
        let out = resume(&mut s, at(2), GET, &session, &EventId::from("1-1"));
        assert_eq!(frames(&out, POST), vec![Frame::End], "the old receiver is ended");
        assert_eq!(closes(&out, POST), vec![false]);
        assert_eq!(ids(&events(&out, GET)), vec!["1-2", "1-3"]);
        let live = drive_until(&mut s, at(3));
        assert!(frames(&live, POST).is_empty());
        assert_eq!(events(&live, GET)[0].data, progress(3));
    }

    #[test]
    fn the_from_rule_replays_the_given_event_too() {
        let mut s = server(policy("rmcp"));
        let session = init(&mut s, at(0));
        let out = call(&mut s, at(0), POST, &session, "chatty");
        let priming = events(&out, POST);
        assert_eq!(ids(&priming), vec!["0/1"]);
        assert_eq!(priming[0].retry_ms, Some(3000));
        let _ = drive_until(&mut s, at(10));
        s.handle_disconnect(at_ms(10_500), POST);
        let out = resume(&mut s, at_ms(10_500), GET, &session, &EventId::from("8/1"));
        assert_eq!(resume_outcome(&out).1, ResumeOutcome::Replayed { replayed: 3 });
        assert_eq!(ids(&events(&out, GET)), vec!["8/1", "9/1", "10/1"], "rmcp sends no priming on resume");
        let mut after = policy("reference");
        after.replay = ReplayRule::From;
        let mut s = server(after);
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "chatty");
        let _ = drive_until(&mut s, at(3));
        let out = resume(&mut s, at(3), GET, &session, &EventId::from("1-2"));
        assert_eq!(ids(&events(&out, GET)), vec!["1-2", "1-3", "1-4"]);
    }

    #[test]
    fn rmcp_drops_a_stream_on_its_response_and_replays_from_the_oldest_while_it_runs() {
        let mut s = server(policy("rmcp"));
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "quick");
        s.handle_disconnect(at(1), POST);
        let done = drive_until(&mut s, at(2));
        assert_eq!(stored(&done).len(), 1, "the result is stored");
        let out = resume(&mut s, at(3), GET, &session, &EventId::from("0/1"));
        assert_eq!(resume_outcome(&out), (Some(StreamNo(1)), ResumeOutcome::Empty { open: false }));
        assert_eq!(frames(&out, GET), vec![Frame::Head(ResponseHead::event_stream()), Frame::End]);
        // Evicted while the request still runs: from the oldest buffered event, gap unsaid.
        s.handle_request(at(3), POST, call_request(&session, 3, "chatty", 8));
        let _ = drain(&mut s);
        s.handle_disconnect(at_ms(3_500), POST);
        let _ = drive_until(&mut s, at_ms(33_500));
        // Issued 0/2 ..= 30/2; the ring holds 16: 15/2 ..= 30/2.
        let out = resume(&mut s, at_ms(33_500), GET, &session, &EventId::from("0/2"));
        assert_eq!(resume_outcome(&out), (Some(StreamNo(2)), ResumeOutcome::FromOldest { skipped: 14, replayed: 16 }));
        let got = ids(&events(&out, GET));
        assert_eq!(got.first().map(String::as_str), Some("15/2"));
        assert_eq!(got.last().map(String::as_str), Some("30/2"));
        assert!(closes(&out, GET).is_empty());
    }

    #[test]
    fn unknown_ids_get_empty_streams_closed_or_left_open() {
        let mut py = server(policy("py-sdk"));
        let session = init(&mut py, at(0));
        let out = resume(&mut py, at(1), GET, &session, &EventId::from("no-such-id"));
        assert_eq!(resume_outcome(&out), (None, ResumeOutcome::Empty { open: false }));
        assert_eq!(frames(&out, GET), vec![Frame::Head(ResponseHead::event_stream()), Frame::End]);
        let mut ts = server(policy("ts-sdk"));
        let session = init(&mut ts, at(0));
        let out = resume(&mut ts, at(1), GET, &session, &EventId::from("nope_1_abc"));
        assert_eq!(resume_outcome(&out), (None, ResumeOutcome::Empty { open: true }));
        assert_eq!(frames(&out, GET), vec![Frame::Head(ResponseHead::event_stream())]);
        assert!(closes(&out, GET).is_empty());
        let later = drive_until(&mut ts, at(16));
        assert_eq!(frames(&later, GET), vec![Frame::Comment], "an open empty stream still gets keep-alives");
    }

    fn idle_policy(name: &str) -> ServerPolicy {
        ServerPolicy { idle_ttl: Some(Duration::from_secs(60)), ..policy(name) }
    }

    #[test]
    fn no_open_request_expires_a_session_whose_tool_runs_on_after_its_post_was_cut() {
        let mut s = server(idle_policy("py-sdk"));
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "marathon");
        assert!(drive_until(&mut s, at(100)).is_empty(), "an open POST holds the session");
        s.handle_disconnect(at(100), POST);
        assert!(session_ends(&drive_until(&mut s, at(159))).is_empty());
        let out = drive_until(&mut s, at(160));
        assert_eq!(session_ends(&out), vec![SessionEndReason::IdleExpired]);
        assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled]);
        assert!(s.live_sessions().is_empty());
        s.handle_request(at(161), OTHER, Request::get(Some(session), None));
        assert_eq!(head_status(&drain(&mut s), OTHER), Status::NOT_FOUND);
    }

    #[test]
    fn never_while_busy_holds_a_session_until_its_tool_is_done() {
        let mut s = server(idle_policy("reference"));
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "marathon");
        s.handle_disconnect(at(100), POST);
        let out = drive_until(&mut s, at(3_600));
        assert!(session_ends(&out).is_empty());
        assert_eq!(tool_ends(&out), vec![ToolEnd::Completed]);
        assert!(session_ends(&drive_until(&mut s, at(3_659))).is_empty());
        assert_eq!(session_ends(&drive_until(&mut s, at(3_660))), vec![SessionEndReason::IdleExpired]);
        // An open GET holds it too.
        let session = init(&mut s, at(4_000));
        s.handle_request(at(4_000), GET, Request::get(Some(session), None));
        let _ = drain(&mut s);
        assert!(session_ends(&drive_until(&mut s, at(9_000))).is_empty());
    }

    #[test]
    fn last_request_expires_a_busy_session_ttl_after_its_last_request() {
        let mut s = server(idle_policy("rmcp"));
        let session = init(&mut s, at(0));
        s.handle_request(at(30), OTHER, Request::post(Some(session.clone()), ClientMessage::Initialized));
        let _ = drain(&mut s);
        let _ = call(&mut s, at(40), POST, &session, "marathon");
        assert!(session_ends(&drive_until(&mut s, at(99))).is_empty());
        let out = drive_until(&mut s, at(100));
        assert_eq!(session_ends(&out), vec![SessionEndReason::IdleExpired]);
        assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled]);
        assert_eq!(frames(&out, POST).last(), Some(&Frame::End), "the open POST stream is ended");
        assert_eq!(closes(&out, POST), vec![false]);
    }

    #[test]
    fn delete_cancels_a_running_tool_or_lets_it_run_on_into_nowhere() {
        let mut s = server(policy("reference"));
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "pay");
        s.handle_request(at(10), OTHER, Request::delete(session.clone()));
        let out = drain(&mut s);
        assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled]);
        assert_eq!(session_ends(&out), vec![SessionEndReason::Deleted]);
        assert_eq!(frames(&out, POST), vec![Frame::End]);
        assert_eq!(frames(&out, OTHER), vec![Frame::Head(ResponseHead::status(Status::OK)), Frame::End]);
        assert!(records(&drive_until(&mut s, at(400))).is_empty());

        let mut s = server(policy("ts-sdk"));
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "pay");
        s.handle_request(at(10), OTHER, Request::delete(session.clone()));
        let out = drain(&mut s);
        assert!(tool_ends(&out).is_empty());
        assert_eq!(session_ends(&out), vec![SessionEndReason::Deleted]);
        assert_eq!(frames(&out, POST), vec![Frame::End]);
        let out = drive_until(&mut s, at(400));
        assert_eq!(tool_ends(&out), vec![ToolEnd::Completed], "it ran to completion");
        assert!(stored(&out).is_empty(), "its result is stored nowhere");
        s.handle_request(at(401), OTHER, call_request(&session, 3, "pay", 8));
        assert_eq!(head_status(&drain(&mut s), OTHER), Status::NOT_FOUND);
    }

    #[test]
    fn a_cancelled_notification_stops_the_tool_and_ends_its_stream_without_a_response() {
        let mut s = server(policy("reference"));
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "pay");
        s.handle_request(
            at(5),
            OTHER,
            Request::post(Some(session.clone()), ClientMessage::Cancelled { request: RequestId(2) }),
        );
        let out = drain(&mut s);
        assert_eq!(frames(&out, OTHER), vec![Frame::Head(ResponseHead::status(Status::ACCEPTED)), Frame::End]);
        assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled]);
        assert_eq!(frames(&out, POST), vec![Frame::End]);
        assert!(stored(&drive_until(&mut s, at(400))).is_empty(), "no result, ever");
        let out = resume(&mut s, at(401), GET, &session, &EventId::from("1-0"));
        assert_eq!(resume_outcome(&out).1, ResumeOutcome::Replayed { replayed: 0 });
        assert_eq!(frames(&out, GET), vec![Frame::Head(ResponseHead::event_stream()), Frame::End]);
    }

    #[test]
    fn a_shared_store_replays_another_sessions_events_under_the_same_request_id() {
        let mut s = server(policy("py-sdk"));
        let (a, b) = (init(&mut s, at(0)), init(&mut s, at(0)));
        s.handle_request(at(0), POST, call_request(&a, 2, "chatty", 100));
        let _ = drain(&mut s);
        s.handle_request(at_ms(500), OTHER, call_request(&b, 2, "chatty", 200));
        let out = drain(&mut s);
        let b_priming = events(&out, OTHER)[0].id.clone().expect("priming has an id");
        s.handle_disconnect(at_ms(600), OTHER);
        let run = drive_until(&mut s, at_ms(5_700));
        let a_ids: Vec<String> = stored(&run).into_iter().filter(|(s, ..)| s == &a).map(|(_, id, _)| id).collect();
        assert_eq!(a_ids.len(), 5);
        let out = resume(&mut s, at_ms(5_700), GET, &b, &b_priming);
        assert_eq!(resume_outcome(&out), (Some(StreamNo(1)), ResumeOutcome::Replayed { replayed: 10 }));
        let replayed = events(&out, GET);
        let foreign: Vec<String> = ids(&replayed).into_iter().filter(|id| a_ids.contains(id)).collect();
        assert_eq!(foreign, a_ids, "session b is handed every progress event of session a");
        assert!(replayed.iter().any(|e| matches!(e.data, Some(ServerMessage::Progress { call: CallKey(100), .. }))));
        // The EventStored ledger still names the session that emitted each event.
        let priming = stored(&out);
        assert_eq!(priming.len(), 1);
        assert_eq!(priming[0].0, b);
    }

    #[test]
    fn typescript_ids_of_the_standalone_stream_can_never_be_resumed() {
        let mut s = server(policy("ts-sdk"));
        let session = init(&mut s, at(0));
        s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
        let out = drain(&mut s);
        assert!(events(&out, GET).is_empty(), "no priming on the TypeScript standalone stream");
        s.notify_all(at(1));
        let out = drain(&mut s);
        let got = events(&out, GET);
        assert_eq!(got[0].data, Some(ServerMessage::Notification { seq: 1 }));
        let id = got[0].id.clone().expect("an id");
        assert!(id.0.starts_with("_GET_stream_1700000001000_"), "{id}");
        s.handle_disconnect(at(2), GET);
        s.notify_all(at(3));
        let out = resume(&mut s, at(4), OTHER, &session, &id);
        assert_eq!(resume_outcome(&out), (None, ResumeOutcome::Empty { open: true }));
        assert!(events(&out, OTHER).is_empty(), "notification 2 is never delivered");
        // A POST stream id of the same scheme resumes fine.
        let out = call(&mut s, at(5), POST, &session, "chatty");
        let priming = events(&out, POST)[0].id.clone().expect("an id");
        s.handle_disconnect(at(5), POST);
        let _ = drive_until(&mut s, at(8));
        let out = resume(&mut s, at(8), GET, &session, &priming);
        assert_eq!(resume_outcome(&out), (Some(StreamNo(1)), ResumeOutcome::Replayed { replayed: 3 }));
    }

    #[test]
    fn typescript_replay_is_in_id_order_even_within_one_millisecond() {
        let mut s = server(policy("ts-sdk"));
        let session = init(&mut s, at(0));
        let out = call(&mut s, at(0), POST, &session, "burst");
        let priming = events(&out, POST)[0].id.clone().expect("an id");
        s.handle_disconnect(at(0), POST);
        let run = drive_until(&mut s, at(1));
        let mut expected: Vec<String> =
            stored(&run).into_iter().map(|(_, id, _)| id).filter(|id| id.as_str() > priming.0.as_str()).collect();
        expected.sort();
        let out = resume(&mut s, at(1), GET, &session, &priming);
        assert_eq!(ids(&events(&out, GET)), expected);
        assert!(stored(&run).len() > expected.len(), "same-millisecond ids sorting before the priming id are lost");
    }

    #[test]
    fn second_standalone_get_is_refused_or_shadows_the_first() {
        let mut s = server(policy("reference"));
        let session = init(&mut s, at(0));
        s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
        let out = drain(&mut s);
        assert_eq!(ids(&events(&out, GET)), vec!["0-0"], "the reference server primes the standalone stream");
        s.handle_request(at(1), OTHER, Request::get(Some(session.clone()), None));
        let out = drain(&mut s);
        assert_eq!(
            records(&out),
            vec![StepKind::Rejected { conn: OTHER, status: Status::CONFLICT, session: Some(session) }]
        );

        let mut s = server(policy("rmcp"));
        let session = init(&mut s, at(0));
        s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
        s.handle_request(at(1), OTHER, Request::get(Some(session), None));
        let out = drain(&mut s);
        assert_eq!(head_status(&out, OTHER), Status::OK);
        s.notify_all(at(2));
        let out = drain(&mut s);
        assert!(frames(&out, GET).is_empty());
        assert_eq!(ids(&events(&out, OTHER)), vec!["0"]);
        let later = drive_until(&mut s, at(15));
        assert_eq!(frames(&later, GET), vec![Frame::Comment], "the shadowed stream stays open");
    }

    #[test]
    fn keepalive_comments_come_at_the_interval_on_each_open_stream() {
        let mut s = server(policy("ts-sdk"));
        let session = init(&mut s, at(0));
        s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
        let _ = drain(&mut s);
        let mut comments = Vec::new();
        while let Some(due) = s.poll_timeout().filter(|due| *due <= at(50)) {
            s.handle_timeout(due);
            s.handle_timeout(due); // an extra call does nothing
            for o in drain(&mut s) {
                if o == (ServerOutput::Send { conn: GET, frame: Frame::Comment }) {
                    comments.push(due);
                }
            }
        }
        assert_eq!(comments, vec![at(15), at(30), at(45)]);
        s.handle_disconnect(at(50), GET);
        assert!(frames(&drive_until(&mut s, at(100)), GET).is_empty());
        let mut quiet = server(policy("reference"));
        let session = init(&mut quiet, at(0));
        quiet.handle_request(at(0), GET, Request::get(Some(session), None));
        let _ = drain(&mut quiet);
        assert!(frames(&drive_until(&mut quiet, at(100)), GET).is_empty());
    }

    #[test]
    fn a_crash_records_lost_tools_and_sessions_and_resets_connections() {
        let mut s = server(policy("reference"));
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "pay");
        s.crash(at(10));
        let out = drain(&mut s);
        assert_eq!(
            records(&out),
            vec![
                StepKind::ToolEnded {
                    session: session.clone(),
                    request: RequestId(2),
                    call: CallKey(7),
                    end: ToolEnd::Lost
                },
                StepKind::SessionEnded { session: session.clone(), reason: SessionEndReason::ServerRestart },
            ]
        );
        assert_eq!(closes(&out, POST), vec![true]);
        assert!(s.live_sessions().is_empty());
        assert_eq!(s.poll_timeout(), None);
        s.handle_request(at(11), OTHER, Request::initialize(RequestId(1), "app"));
        assert!(drain(&mut s).is_empty(), "a dead process answers nothing");
    }

    #[test]
    fn honoured_idempotency_keys_run_a_side_effect_once_across_sessions() {
        let mut p = policy("reference");
        p.honour_idempotency_keys = true;
        let mut s = server(p);
        let (a, b) = (init(&mut s, at(0)), init(&mut s, at(0)));
        let keyed = |session: &SessionId| {
            let call = ToolCall { tool: "quick".into(), key: CallKey(7), idempotency_key: Some("k7".into()) };
            Request::post(Some(session.clone()), ClientMessage::CallTool { id: RequestId(2), call })
        };
        s.handle_request(at(0), POST, keyed(&a));
        s.handle_request(at(1), OTHER, keyed(&b));
        let mut out = drain(&mut s);
        assert_eq!(side_effects(&out), 1);
        out.extend(drive_until(&mut s, at(5)));
        let results: Vec<SessionId> = stored(&out)
            .into_iter()
            .filter(|(_, _, m)| matches!(m, Some(ServerMessage::ToolResult { .. })))
            .map(|(s, ..)| s)
            .collect();
        assert_eq!(results, vec![a, b], "both calls complete");
    }

    #[test]
    fn an_unknown_tool_is_a_json_error() {
        let mut s = server(policy("reference"));
        let session = init(&mut s, at(0));
        let out = call(&mut s, at(0), POST, &session, "nope");
        assert_eq!(
            frames(&out, POST)[1],
            Frame::Json(ServerMessage::Error { request: RequestId(2), message: "unknown tool nope".into() })
        );
        assert_eq!(side_effects(&out), 0);
    }

    #[test]
    fn notifications_are_stored_without_a_get_and_replayed_on_resume() {
        let mut s = server(policy("reference"));
        let session = init(&mut s, at(0));
        s.notify_all(at(1));
        s.notify_all(at(2));
        let out = drain(&mut s);
        assert_eq!(
            stored(&out).into_iter().map(|(_, id, _)| id).collect::<Vec<_>>(),
            vec!["0-0", "0-1"],
            "stored with nobody attached"
        );
        let out = resume(&mut s, at(3), GET, &session, &EventId::from("0-0"));
        assert_eq!(events(&out, GET)[0].data, Some(ServerMessage::Notification { seq: 2 }));
    }

    /// Runs one busy script and returns everything the server emitted.
    fn script(seed: u64) -> Vec<ServerOutput> {
        let mut s = Server::new(policy("ts-sdk"), tools(), 1, seed);
        let mut out = drain(&mut s);
        let session = init(&mut s, at(0));
        out.extend(call(&mut s, at(0), POST, &session, "chatty"));
        s.handle_request(at(0), GET, Request::get(Some(session.clone()), None));
        out.extend(drive_until(&mut s, at(20)));
        s.handle_disconnect(at(20), POST);
        s.notify_all(at(21));
        out.extend(drive_until(&mut s, at(40)));
        let last = stored(&out).into_iter().find(|(_, id, _)| !id.starts_with('_')).expect("a POST event").1;
        out.extend(resume(&mut s, at(40), OTHER, &session, &EventId(last)));
        out.extend(drive_until(&mut s, at(300)));
        s.crash(at(300));
        out.extend(drain(&mut s));
        out
    }

    #[test]
    fn the_same_inputs_and_seed_give_the_same_outputs() {
        let first = script(5);
        assert!(first.len() > 250);
        assert_eq!(first, script(5));
        assert_ne!(first, script(6), "the seed reaches the ids");
    }

    // -----------------------------------------------------------------------------------------
    // The 2026-07-28 revision: no sessions, a disconnect cancels
    // -----------------------------------------------------------------------------------------

    fn sessionless_call(request: u64, tool: &str, key: u32) -> Request {
        let call = ToolCall { tool: tool.into(), key: CallKey(key), idempotency_key: None };
        Request::post(None, ClientMessage::CallTool { id: RequestId(request), call })
    }

    fn side_effect_sessions(out: &[ServerOutput]) -> Vec<(SessionId, RequestId)> {
        records(out)
            .into_iter()
            .filter_map(|r| match r {
                StepKind::SideEffect { session, request, .. } => Some((session, request)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_server_without_sessions_answers_initialize_without_an_id_and_serves_any_header() {
        let mut s = server(policy("stateless-2026"));
        s.handle_request(at(0), INIT, Request::initialize(RequestId(1), "app"));
        let out = drain(&mut s);
        let head = ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None };
        assert_eq!(
            frames(&out, INIT)[..2],
            [Frame::Head(head), Frame::Json(ServerMessage::InitializeResult { request: RequestId(1) })]
        );
        assert!(records(&out).is_empty(), "no session is created");
        // With no header, or with any header at all, a call is served.
        s.handle_request(at(1), POST, sessionless_call(2, "quick", 1));
        let mut stale = sessionless_call(3, "quick", 2);
        stale.session = Some(SessionId::from("0-9"));
        s.handle_request(at(1), OTHER, stale);
        let out = drain(&mut s);
        assert_eq!((head_status(&out, POST), head_status(&out, OTHER)), (Status::OK, Status::OK));
        assert_eq!(side_effect_sessions(&out), vec![(NO_SESSION, RequestId(2)), (NO_SESSION, RequestId(3))]);
        assert!(events(&out, POST).is_empty(), "no priming event: there is nothing to resume");
        let out = drive_until(&mut s, at(3));
        assert_eq!(ids(&events(&out, POST)), vec!["0.1-0"], "ids carry the epoch");
        assert_eq!(tool_ends(&out), vec![ToolEnd::Completed, ToolEnd::Completed]);
        assert!(s.live_sessions().is_empty());
    }

    #[test]
    fn a_server_without_sessions_answers_every_get_and_delete_405_and_never_expires() {
        let mut p = policy("stateless-2026");
        p.idle_ttl = Some(Duration::from_secs(1));
        let mut s = server(p);
        for request in [
            Request::get(None, None),
            Request::get(None, Some(EventId::from("0.1-0"))),
            Request::get(Some(SessionId::from("x")), Some(EventId::from("0.1-0"))),
            Request::delete(SessionId::from("x")),
        ] {
            s.handle_request(at(0), GET, request);
            let out = drain(&mut s);
            assert_eq!(head_status(&out, GET), Status::METHOD_NOT_ALLOWED);
            assert_eq!(records(&out), vec![StepKind::Rejected { conn: GET, status: Status(405), session: None }]);
        }
        s.handle_request(at(0), POST, sessionless_call(2, "quick", 1));
        let _ = drain(&mut s);
        let out = drive_until(&mut s, at(3_600));
        assert!(session_ends(&out).is_empty());
        s.handle_request(at(3_600), OTHER, sessionless_call(3, "quick", 2));
        assert_eq!(side_effects(&drain(&mut s)), 1, "still served an hour later");
        s.notify_all(at(3_600));
        assert!(drain(&mut s).is_empty(), "no standalone stream to notify on");
    }

    #[test]
    fn a_disconnect_cancels_the_tool_when_the_policy_says_so_and_a_reissue_runs_it_again() {
        let mut s = server(policy("stateless-2026"));
        s.handle_request(at(0), POST, sessionless_call(2, "pay", 7));
        let _ = drain(&mut s);
        s.handle_disconnect(at(60), POST);
        let out = drain(&mut s);
        assert_eq!(
            records(&out),
            vec![StepKind::ToolEnded {
                session: NO_SESSION,
                request: RequestId(2),
                call: CallKey(7),
                end: ToolEnd::Cancelled
            }]
        );
        assert!(frames(&out, POST).is_empty(), "nothing is written on the dead connection");
        assert_eq!(s.poll_timeout(), None, "nothing left to run");
        // The client re-issues the call under a new id: the side effect runs a second time.
        s.handle_request(at(61), OTHER, sessionless_call(3, "pay", 7));
        let out = drain(&mut s);
        assert_eq!(side_effect_sessions(&out), vec![(NO_SESSION, RequestId(3))]);
        // A disconnect of a connection that carries no tool cancels nothing.
        s.handle_disconnect(at(62), GET);
        assert!(drain(&mut s).is_empty());
    }

    #[test]
    fn a_disconnect_cancels_only_the_tool_whose_stream_the_connection_carried() {
        let mut p = policy("reference");
        p.disconnect_cancels = true;
        let mut s = server(p);
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "chatty");
        s.handle_request(at(0), OTHER, call_request(&session, 3, "marathon", 8));
        let _ = drain(&mut s);
        s.handle_disconnect(at(5), POST);
        let out = drain(&mut s);
        assert_eq!(tool_ends(&out), vec![ToolEnd::Cancelled]);
        assert!(records(&out).iter().all(|r| !matches!(r, StepKind::ToolEnded { call: CallKey(8), .. })));
        assert!(stored(&drive_until(&mut s, at(240))).is_empty(), "chatty stores nothing more");
        // Under the session-ful revisions' rule the tool keeps running.
        let mut s = server(policy("reference"));
        let session = init(&mut s, at(0));
        let _ = call(&mut s, at(0), POST, &session, "quick");
        s.handle_disconnect(at(1), POST);
        assert!(tool_ends(&drain(&mut s)).is_empty());
        assert_eq!(tool_ends(&drive_until(&mut s, at(2))), vec![ToolEnd::Completed]);
    }

    #[test]
    fn a_restarted_server_without_sessions_never_reuses_an_event_id() {
        let run = |epoch| {
            let mut s = Server::new(policy("stateless-2026"), tools(), epoch, 42);
            s.handle_request(at(0), POST, sessionless_call(2, "quick", 1));
            let mut out = drain(&mut s);
            out.extend(drive_until(&mut s, at(2)));
            stored(&out).into_iter().map(|(_, id, _)| id).collect::<Vec<_>>()
        };
        assert_eq!((run(0), run(1)), (vec!["0.1-0".to_string()], vec!["1.1-0".to_string()]));
        let mut s = Server::new(policy("stateless-2026"), tools(), 0, 42);
        s.crash(at(0));
        let out = drain(&mut s);
        assert!(session_ends(&out).is_empty(), "no session to lose: {out:?}");
    }

    #[test]
    fn delete_with_a_tool_running_follows_each_sdk() {
        for (profile, ends, status) in [
            ("ts-sdk", vec![], Status::OK),
            ("py-sdk", vec![ToolEnd::Cancelled], Status::OK),
            ("rmcp", vec![ToolEnd::Cancelled], Status::ACCEPTED),
        ] {
            let mut s = server(policy(profile));
            let session = init(&mut s, at(0));
            let _ = call(&mut s, at(0), POST, &session, "pay");
            s.handle_request(at(10), OTHER, Request::delete(session.clone()));
            let out = drain(&mut s);
            assert_eq!(tool_ends(&out), ends, "{profile}");
            assert_eq!(head_status(&out, OTHER), status, "{profile}");
            assert_eq!(frames(&out, POST), vec![Frame::End], "{profile}: the stream ends with no response");
            assert!(stored(&drive_until(&mut s, at(400))).is_empty(), "{profile}: no result is stored");
        }
    }
}
