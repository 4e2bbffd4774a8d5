//! The MCP client library and the application's calls through it.
//!
//! The client runs the session handshake, posts tool calls, reads their SSE streams and decides
//! what to do when a stream ends before its response. That decision is the policy under test:
//! `ClientPolicy::close_handling` picks the design note's procedure ([`crate::decision`]), the
//! first incident's naive client, or the real SDKs' rules. Everything the application is handed
//! is recorded as an `App*` step, in the order it was handed over.
//!
//! Call order: `start` once; then `call_tool`, `handle_frame` and `handle_conn_end` as things
//! happen, draining `poll_output` after each; sleep until `poll_timeout`, then call
//! `handle_timeout(now)` and drain again (extra wake-ups do nothing). `now` never goes backwards.
//!
//! Every `Open` is one HTTP exchange on a fresh connection that the client numbers itself. The
//! actor reports each frame of it to `handle_frame` and its end to `handle_conn_end`; a connection
//! the client aborted or no longer cares about is still recorded, and otherwise ignored.
//!
//! Sessions and the two revisions. A client with `ClientPolicy::sessions` runs the handshake and
//! adopts whatever `Mcp-Session-Id` the `initialize` answer carries; when it carries none (a server
//! of the 2026-07-28 revision, which keeps no sessions), the client goes on without one: its
//! requests carry no session header and are served. Its resumptions, if its policy attempts any,
//! get 405 from such a server and are judged by its own close rule. A client without sessions
//! (`stateless-2026`) skips the handshake and never sends a session header: a server that requires
//! sessions answers each request 400, which fails the call with an `AppError`.

mod backoff;
#[cfg(test)]
mod pair;
#[cfg(test)]
mod tests;

pub use backoff::reconnect_delay;

use crate::config::{ClientPolicy, CloseHandling, CounterReset, On404, OnEmptyResume, Persistence, SdkRules};
use crate::decision::{self, DecisionError, NextAction, StreamClose, StreamOutcome};
use crate::http::{
    ClientMessage, ConnEnd, EventKind, Frame, Request, ResponseHead, ServerMessage, SseEvent, Status, ToolCall,
};
use crate::ids::{CallKey, ConnId, EventId, RequestId, SessionId};
use crate::rng::SplitMix64;
use crate::time::{micros, Instant};
use crate::trace::StepKind;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// Something the client asks its actor to do or record.
#[must_use]
#[derive(Clone, Debug, PartialEq)]
pub enum ClientOutput {
    /// Open a connection numbered `conn` to the server (through the load balancer) and send
    /// `request` on it. Frames that arrive on it go to `handle_frame`; its end to `handle_conn_end`.
    Open { conn: ConnId, request: Request },
    /// Close `conn` from this side.
    Abort { conn: ConnId },
    /// Write this state to durable storage (only under `Persistence::Durable`). It is queued ahead
    /// of the other outputs of the same call (write-ahead): the state is on disk before the
    /// requests that depend on it leave.
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
    /// The last event id seen on the standalone GET stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standalone_last_event_id: Option<EventId>,
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

// Texts the application is handed. Tests and oracles match on some of them.
const ERR_SESSION_CLOSED: &str = "session closed by the server";
const ERR_EXHAUSTED: &str = "reconnect attempts exhausted";
const ERR_NO_RESPONSE: &str = "stream ended without a response";
const ERR_CONNECTION_CLOSED: &str = "connection closed";
const ERR_TIMED_OUT: &str = "request timed out";
const ERR_REINITIALIZED: &str = "re-initialized before the response arrived";
const UNKNOWN_SESSION_LOST: &str =
    "the session was lost (HTTP 404) while the call was in flight; it may or may not have run";
const UNKNOWN_RESTARTED: &str =
    "the client restarted without a session while the call was in flight; it may or may not have run";
const SESSION_DELETED: &str = "session deleted by the application";
const NOTE_REISSUE: &str = "the stream ended before the response: re-issue the request with a new id";

/// Whose stream a connection carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Owner {
    /// The stream of a tool call: its POST, then any resumption GETs.
    Call(CallKey),
    /// The standalone GET stream.
    Standalone,
}

impl Owner {
    fn call(self) -> Option<CallKey> {
        match self {
            Owner::Call(k) => Some(k),
            Owner::Standalone => None,
        }
    }
}

/// What a connection is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Purpose {
    Initialize,
    Initialized,
    Stream(Owner),
    /// A notification whose answer does not matter (`notifications/cancelled`).
    Notification,
    /// The `DELETE` of a session the application ended: any answer is only recorded.
    Delete,
}

/// An open connection the client still cares about.
#[derive(Debug)]
struct Conn {
    purpose: Purpose,
    /// The session the request was sent under.
    session: Option<SessionId>,
    /// A GET re-attaching a stream (a reconnect), as opposed to the stream's first request.
    reconnect: bool,
    head: Option<ResponseHead>,
    events: u32,
    close_event: bool,
}

/// A stream's cursor and reconnect bookkeeping.
#[derive(Debug, Default)]
struct Stream {
    conn: Option<ConnId>,
    last_event_id: Option<EventId>,
    /// Consecutive failed attempts: the backoff exponent `n`.
    failures: u32,
    reconnect_at: Option<Instant>,
    /// The `Last-Event-ID` the scheduled reconnect sends.
    reconnect_with: Option<EventId>,
}

/// A call the application issued that has not resolved.
#[derive(Debug)]
struct Call {
    tool: String,
    idempotent: bool,
    /// The request id of the current POST; `None` while the call waits to be (re-)sent.
    request: Option<RequestId>,
    /// Issue order: waiting calls go out in the order the application made them.
    seq: u64,
    deadline: Option<Instant>,
    stream: Stream,
    /// rmcp's rule: the call was already re-sent once after a 404.
    resent_after_404: bool,
    /// When a re-issue (`CloseHandling::ReissueWithNewId`) is due; the call waits until then.
    resend_at: Option<Instant>,
    /// A POST of it ever left: only then may it have run.
    sent: bool,
}

/// Where the session handshake stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handshake {
    /// Not started, waiting to retry `initialize`, or given up (a new call starts over).
    Idle,
    /// `initialize` is in flight.
    Initializing,
    /// `notifications/initialized` is in flight.
    Acknowledging,
    /// Calls can be sent.
    Ready,
}

/// What the client saw of a stream's connection when it ended (or, on a restart, what it must
/// assume: the connection broke while the process was down).
#[derive(Debug)]
struct Ended {
    owner: Owner,
    end: ConnEnd,
    /// The status of a non-2xx answer.
    status: Option<Status>,
    head_event_id: Option<EventId>,
    close_event: bool,
    reconnect: bool,
    got_ok: bool,
    events: u32,
    /// The process restarted: resume at once, without backoff.
    restart: bool,
}

impl Ended {
    fn from_conn(owner: Owner, conn: Conn, end: ConnEnd) -> Self {
        let head = conn.head.as_ref();
        let failed_head = head.filter(|h| !h.status.is_success());
        Ended {
            owner,
            end,
            status: failed_head.map(|h| h.status),
            head_event_id: failed_head.and_then(|h| h.error.as_ref()).and_then(|e| e.head_event_id.clone()),
            close_event: conn.close_event,
            reconnect: conn.reconnect,
            got_ok: head.is_some_and(|h| h.status.is_success()),
            events: conn.events,
            restart: false,
        }
    }

    fn restart(owner: Owner) -> Self {
        Ended {
            owner,
            end: ConnEnd::Reset,
            status: None,
            head_event_id: None,
            close_event: false,
            reconnect: false,
            got_ok: false,
            events: 0,
            restart: true,
        }
    }

    /// A stream error, as opposed to a clean end the server chose.
    fn after_error(&self) -> bool {
        self.end != ConnEnd::Clean || self.status.is_some()
    }

    /// The stream's first request (a POST), not a reconnect GET.
    fn was_post(&self) -> bool {
        !self.reconnect && matches!(self.owner, Owner::Call(_))
    }

    /// A reconnect answered 200 whose stream ended cleanly without a single event.
    fn empty_resume(&self) -> bool {
        self.reconnect && self.got_ok && self.events == 0 && self.end == ConnEnd::Clean
    }
}

/// The client's state.
#[derive(Debug)]
pub struct Client {
    policy: ClientPolicy,
    name: String,
    rng: SplitMix64,
    restored: bool,
    started: bool,
    handshake: Handshake,
    session: Option<SessionId>,
    /// Failed `initialize` handshakes in a row.
    init_failures: u32,
    init_retry_at: Option<Instant>,
    next_request: u64,
    next_conn: u64,
    next_seq: u64,
    calls: BTreeMap<CallKey, Call>,
    /// The current request id of each unresolved, sent call: JSON-RPC routes answers by id.
    by_request: BTreeMap<RequestId, CallKey>,
    /// `Some` while the standalone stream is wanted.
    standalone: Option<Stream>,
    conns: BTreeMap<ConnId, Conn>,
    /// The server's last `retry:` value, in milliseconds.
    server_retry_ms: Option<u64>,
    outputs: VecDeque<ClientOutput>,
    /// The state last written to durable storage.
    persisted: Option<DurableState>,
}

impl Client {
    /// A client process starting, with its durable state if it has any. `seed` seeds backoff jitter.
    pub fn new(policy: ClientPolicy, name: &str, restored: Option<DurableState>, seed: u64) -> Self {
        let wants_standalone = policy.open_standalone_stream;
        let mut client = Client {
            policy,
            name: name.to_string(),
            rng: SplitMix64::new(seed),
            restored: restored.is_some(),
            started: false,
            handshake: Handshake::Idle,
            session: None,
            init_failures: 0,
            init_retry_at: None,
            next_request: 1,
            next_conn: 1,
            next_seq: 0,
            calls: BTreeMap::new(),
            by_request: BTreeMap::new(),
            standalone: wants_standalone.then(Stream::default),
            conns: BTreeMap::new(),
            server_retry_ms: None,
            outputs: VecDeque::new(),
            persisted: None,
        };
        if let Some(state) = restored {
            client.load(state);
        }
        client
    }

    /// Takes over durable state: the session and every call that was in flight.
    fn load(&mut self, state: DurableState) {
        self.session = state.session.clone();
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
        self.persisted = Some(state);
    }

    /// Starts the client: initialize, or resume restored calls.
    pub fn start(&mut self, now: Instant) {
        let mark = self.outputs.len();
        self.record(StepKind::ClientStart { restored: self.restored });
        if self.started {
            return self.persist_if_changed(mark);
        }
        self.started = true;
        if let Some(timeout) = self.policy.request_timeout {
            for call in self.calls.values_mut() {
                call.deadline = Some(now + timeout);
            }
        }
        if self.session.is_some() {
            self.resume_restored(now);
        } else {
            self.restart_without_session();
        }
        self.persist_if_changed(mark);
    }

    /// A restored session: reattach the standalone stream and every call's stream, as if each
    /// had broken while the process was down.
    fn resume_restored(&mut self, now: Instant) {
        self.handshake = Handshake::Ready;
        for key in self.keys_in_issue_order() {
            if self.calls.get(&key).is_some_and(|c| c.request.is_some()) {
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
    fn restart_without_session(&mut self) {
        self.settle_sent_calls(UNKNOWN_RESTARTED);
        self.begin_initialize();
    }

    /// Every call already sent: an idempotent one is marked to be sent again, a non-idempotent
    /// one is reported as unknown outcome with `reason` (it may have run; it must not run twice).
    fn settle_sent_calls(&mut self, reason: &str) {
        for key in self.keys_in_issue_order() {
            let Some(call) = self.calls.get(&key) else { continue };
            if call.request.is_none() {
                continue;
            }
            if call.idempotent {
                self.mark_for_resend(key);
            } else {
                self.resolve_unknown(key, reason.to_string());
            }
        }
    }

    /// The application calls a tool.
    pub fn call_tool(&mut self, now: Instant, call: CallKey, tool: &str, idempotent: bool) {
        let mark = self.outputs.len();
        self.record(StepKind::AppCall { call, tool: tool.to_string(), idempotent });
        // The same logical call while it is still in flight: it already has a stream.
        if !self.calls.contains_key(&call) {
            let seq = self.take_seq();
            let deadline = self.policy.request_timeout.map(|t| now + t);
            let entry = Call {
                tool: tool.to_string(),
                idempotent,
                request: None,
                seq,
                deadline,
                stream: Stream::default(),
                resent_after_404: false,
                resend_at: None,
                sent: false,
            };
            self.calls.insert(call, entry);
            match self.handshake {
                Handshake::Ready => self.send_call(call),
                Handshake::Idle if self.started && self.init_retry_at.is_none() => self.begin_initialize(),
                _ => {}
            }
        }
        self.persist_if_changed(mark);
    }

    /// A frame arrived on `conn`.
    pub fn handle_frame(&mut self, now: Instant, conn: ConnId, frame: Frame) {
        let mark = self.outputs.len();
        match frame {
            Frame::Head(head) => {
                self.record(StepKind::Response { conn, head: head.clone() });
                self.on_head(now, conn, head);
            }
            Frame::Json(message) => {
                self.record(StepKind::Json { conn, message: message.clone() });
                self.on_message(now, conn, None, message);
            }
            Frame::Event(event) => {
                self.record(StepKind::Event { conn, event: event.clone() });
                self.on_event(now, conn, event);
            }
            Frame::Comment => self.record(StepKind::Comment { conn }),
            // The end itself is reported by `handle_conn_end`.
            Frame::End => {}
        }
        self.persist_if_changed(mark);
    }

    /// `conn` ended: `Clean` after `Frame::End`, `Reset` if it broke before, `Refused` if it
    /// could not open.
    pub fn handle_conn_end(&mut self, now: Instant, conn: ConnId, end: ConnEnd) {
        let mark = self.outputs.len();
        self.record(StepKind::ConnEnd { conn, end });
        if let Some(c) = self.conns.remove(&conn) {
            match c.purpose {
                Purpose::Initialize | Purpose::Initialized => self.init_failed(now, format!("connection {end}")),
                Purpose::Notification | Purpose::Delete => {}
                Purpose::Stream(owner) => {
                    if let Some(stream) = self.stream_mut(owner) {
                        stream.conn = None;
                    }
                    self.stream_ended(now, Ended::from_conn(owner, c, end));
                }
            }
        }
        self.persist_if_changed(mark);
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        let mark = self.outputs.len();
        let timed_out: Vec<CallKey> =
            self.calls.iter().filter(|(_, c)| c.deadline.is_some_and(|d| d <= now)).map(|(k, _)| *k).collect();
        for key in timed_out {
            self.time_out(key);
        }
        if self.init_retry_at.is_some_and(|t| t <= now) {
            self.begin_initialize();
        }
        let due: Vec<CallKey> = self
            .calls
            .iter()
            .filter(|(_, c)| c.stream.reconnect_at.is_some_and(|t| t <= now))
            .map(|(k, _)| *k)
            .collect();
        for key in due {
            self.reconnect(Owner::Call(key));
        }
        let reissues: Vec<CallKey> =
            self.calls.iter().filter(|(_, c)| c.resend_at.is_some_and(|t| t <= now)).map(|(k, _)| *k).collect();
        for key in reissues {
            self.reissue_due(key);
        }
        if self.standalone.as_ref().and_then(|s| s.reconnect_at).is_some_and(|t| t <= now) {
            self.reconnect(Owner::Standalone);
        }
        self.persist_if_changed(mark);
    }

    /// When `handle_timeout` must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let calls = self.calls.values().flat_map(|c| [c.deadline, c.stream.reconnect_at, c.resend_at]);
        let standalone = self.standalone.as_ref().and_then(|s| s.reconnect_at);
        calls.chain([self.init_retry_at, standalone]).flatten().min()
    }

    pub fn poll_output(&mut self) -> Option<ClientOutput> {
        self.outputs.pop_front()
    }

    /// Numbers the connections this process opens from `first` on (from 1 unless told). A
    /// restarted process is told, before `start`, one past the last number its predecessor
    /// used, so that a connection number names one exchange across the client's incarnations.
    /// Numbers never go back: a `first` below the next number is ignored.
    pub fn number_connections_from(&mut self, first: u64) {
        self.next_conn = self.next_conn.max(first);
    }

    /// The number the next connection will get.
    pub fn next_connection_number(&self) -> u64 {
        self.next_conn
    }

    /// The session id the client holds.
    pub fn session(&self) -> Option<&SessionId> {
        self.session.as_ref()
    }

    /// Calls the application issued that have not resolved.
    pub fn unresolved_calls(&self) -> Vec<CallKey> {
        self.calls.keys().copied().collect()
    }

    /// No call unresolved, no handshake or reconnect pending, nothing to send.
    pub fn is_quiet(&self) -> bool {
        self.calls.is_empty()
            && self.outputs.is_empty()
            && self.init_retry_at.is_none()
            && matches!(self.handshake, Handshake::Idle | Handshake::Ready)
            && self.standalone.as_ref().is_none_or(|s| s.reconnect_at.is_none())
    }

    /// The application ends its session: `DELETE` it (if the client holds one) and forget it.
    ///
    /// Every unresolved call is settled at once, since the application chose to end the session
    /// its answers would come through: one that was sent may have run, so a non-idempotent call
    /// ends as unknown outcome and an idempotent one as an error; one never sent ends as an error.
    /// Streams are closed and nothing is reconnected or re-initialized until the application calls
    /// a tool again. Whatever the server answers to the `DELETE` (2xx, 404, 405, ...) is recorded
    /// and changes nothing.
    pub fn delete_session(&mut self, _now: Instant) {
        let mark = self.outputs.len();
        for key in self.keys_in_issue_order() {
            let Some(call) = self.calls.get(&key) else { continue };
            if call.sent && !call.idempotent {
                self.resolve_unknown(key, SESSION_DELETED.to_string());
            } else {
                self.resolve_error(key, SESSION_DELETED.to_string());
            }
        }
        let session = self.session.clone();
        self.drop_session();
        self.init_retry_at = None;
        self.init_failures = 0;
        if let Some(session) = session {
            self.open(Purpose::Delete, Request::delete(session), false);
        }
        self.persist_if_changed(mark);
    }

    // -----------------------------------------------------------------------------------------
    // The handshake
    // -----------------------------------------------------------------------------------------

    /// Starts a session; a client without sessions has no handshake and is ready at once.
    fn begin_initialize(&mut self) {
        self.init_retry_at = None;
        if !self.policy.sessions {
            return self.become_ready();
        }
        self.handshake = Handshake::Initializing;
        let id = self.take_request_id();
        self.open(Purpose::Initialize, Request::initialize(id, &self.name), false);
    }

    /// The `initialize` result arrived on `conn`: adopt the session and acknowledge.
    fn init_answered(&mut self, conn: ConnId) {
        let Some(c) = self.conns.remove(&conn) else { return };
        self.session = c.head.and_then(|h| h.session);
        self.handshake = Handshake::Acknowledging;
        self.open(Purpose::Initialized, Request::post(self.session.clone(), ClientMessage::Initialized), false);
    }

    fn become_ready(&mut self) {
        self.handshake = Handshake::Ready;
        self.init_failures = 0;
        self.open_standalone();
        for key in self.keys_in_issue_order() {
            let waiting = self
                .calls
                .get(&key)
                .is_some_and(|c| c.request.is_none() && c.stream.conn.is_none() && c.resend_at.is_none());
            if waiting {
                self.send_call(key);
            }
        }
    }

    /// The handshake failed: retry with backoff, or give up and fail every call.
    fn init_failed(&mut self, now: Instant, reason: String) {
        self.handshake = Handshake::Idle;
        self.init_failures += 1;
        if self.policy.reconnect.max_attempts.is_some_and(|max| self.init_failures >= max) {
            self.init_failures = 0;
            for key in self.keys_in_issue_order() {
                self.resolve_error(key, format!("initialize failed: {reason}"));
            }
            return;
        }
        let delay = self.next_delay(self.init_failures - 1, false);
        self.record(StepKind::Backoff { call: None, attempt: self.init_failures, delay_us: micros(delay) });
        self.init_retry_at = Some(now + delay);
    }

    // -----------------------------------------------------------------------------------------
    // Streams: sending and reading
    // -----------------------------------------------------------------------------------------

    fn send_call(&mut self, key: CallKey) {
        let Some(call) = self.calls.get(&key) else { return };
        let tool = call.tool.clone();
        let id = self.take_request_id();
        let idempotency_key = self.policy.send_idempotency_keys.then(|| format!("{key}"));
        let body = ClientMessage::CallTool { id, call: ToolCall { tool, key, idempotency_key } };
        let conn = self.open(Purpose::Stream(Owner::Call(key)), Request::post(self.session.clone(), body), false);
        self.by_request.insert(id, key);
        if let Some(call) = self.calls.get_mut(&key) {
            call.request = Some(id);
            call.stream.conn = Some(conn);
            call.resend_at = None;
            call.sent = true;
        }
    }

    /// Opens the standalone stream if it is wanted and neither open nor scheduled. After a
    /// restart it resumes with the persisted id.
    fn open_standalone(&mut self) {
        let Some(stream) = self.standalone.as_ref() else { return };
        if stream.conn.is_some() || stream.reconnect_at.is_some() {
            return;
        }
        let last = stream.last_event_id.clone();
        let reconnect = last.is_some();
        let conn = self.open(Purpose::Stream(Owner::Standalone), Request::get(self.session.clone(), last), reconnect);
        if let Some(stream) = self.standalone.as_mut() {
            stream.conn = Some(conn);
        }
    }

    /// A scheduled reconnect is due: `GET` with the chosen `Last-Event-ID`.
    fn reconnect(&mut self, owner: Owner) {
        let Some(stream) = self.stream_mut(owner) else { return };
        stream.reconnect_at = None;
        let last = stream.reconnect_with.take();
        let conn = self.open(Purpose::Stream(owner), Request::get(self.session.clone(), last), true);
        if let Some(stream) = self.stream_mut(owner) {
            stream.conn = Some(conn);
        }
    }

    fn on_head(&mut self, now: Instant, conn: ConnId, head: ResponseHead) {
        let reset_on_ok = self.policy.reconnect.counter_reset == CounterReset::OnSuccessfulReconnect;
        let Some(c) = self.conns.get_mut(&conn) else { return };
        if c.head.is_some() {
            return;
        }
        let ok = head.status.is_success();
        let status = head.status;
        c.head = Some(head);
        let (purpose, reconnect) = (c.purpose, c.reconnect);
        match purpose {
            Purpose::Initialize if !ok => {
                self.conns.remove(&conn);
                self.init_failed(now, format!("HTTP {status}"));
            }
            Purpose::Initialized => {
                self.conns.remove(&conn);
                if ok {
                    self.become_ready();
                } else {
                    self.init_failed(now, format!("HTTP {status}"));
                }
            }
            Purpose::Stream(owner) if ok && reconnect && reset_on_ok => {
                if let Some(stream) = self.stream_mut(owner) {
                    stream.failures = 0;
                }
            }
            _ => {}
        }
    }

    fn on_event(&mut self, now: Instant, conn: ConnId, event: SseEvent) {
        let reset_on_event = self.policy.reconnect.counter_reset == CounterReset::OnEvent;
        let Some(c) = self.conns.get_mut(&conn) else { return };
        c.events += 1;
        c.close_event |= event.kind == EventKind::Close;
        let (purpose, reconnect) = (c.purpose, c.reconnect);
        if let Some(ms) = event.retry_ms {
            self.server_retry_ms = Some(ms);
        }
        if let Purpose::Stream(owner) = purpose {
            if let Some(stream) = self.stream_mut(owner) {
                if let Some(id) = &event.id {
                    stream.last_event_id = Some(id.clone());
                }
                if reconnect && reset_on_event {
                    stream.failures = 0;
                }
            }
        }
        // A priming event only hands over a cursor; a close event carries nothing for the app.
        if let Some(data) = event.data {
            self.on_message(now, conn, event.id, data);
        }
    }

    fn on_message(&mut self, now: Instant, conn: ConnId, id: Option<EventId>, message: ServerMessage) {
        let Some(c) = self.conns.get(&conn) else { return };
        match (c.purpose, message) {
            (Purpose::Initialize, ServerMessage::InitializeResult { .. }) => self.init_answered(conn),
            (Purpose::Initialize, ServerMessage::Error { message, .. }) => {
                self.conns.remove(&conn);
                self.init_failed(now, message);
            }
            (Purpose::Stream(_), message) => {
                let session = self.app_session(c.session.clone());
                self.deliver(conn, session, id, message);
            }
            _ => {}
        }
    }

    /// Hands a message to the application. Answers are routed by JSON-RPC request id, as the
    /// SDKs do; anything for a call that already resolved is dropped.
    fn deliver(&mut self, via: ConnId, session: SessionId, id: Option<EventId>, message: ServerMessage) {
        let call = message.request().and_then(|r| self.by_request.get(&r).copied());
        match (call, &message) {
            (Some(call), ServerMessage::Progress { .. }) => {
                self.record(StepKind::AppEvent { session, id, call: Some(call), message })
            }
            (Some(call), ServerMessage::ToolResult { .. }) => {
                self.record(StepKind::AppResult { call, session, id });
                self.resolve(call, Some(via));
            }
            (Some(call), ServerMessage::Error { message: text, .. }) => {
                self.record(StepKind::AppError { call, error: text.clone() });
                self.resolve(call, Some(via));
            }
            (_, ServerMessage::Notification { .. }) => {
                self.record(StepKind::AppEvent { session, id, call: None, message })
            }
            _ => {}
        }
    }

    // -----------------------------------------------------------------------------------------
    // A stream ended before its response: the policy decides
    // -----------------------------------------------------------------------------------------

    fn stream_ended(&mut self, now: Instant, ended: Ended) {
        let still_owed = match ended.owner {
            Owner::Call(key) => self.calls.get(&key).is_some_and(|c| c.request.is_some()),
            Owner::Standalone => self.standalone.is_some(),
        };
        if !still_owed {
            return;
        }
        let reset_on_end = self.policy.reconnect.counter_reset == CounterReset::WhenSuccessfulReconnectEnds;
        if reset_on_end && ended.reconnect && ended.got_ok {
            if let Some(stream) = self.stream_mut(ended.owner) {
                stream.failures = 0;
            }
        }
        match self.policy.close_handling.clone() {
            CloseHandling::DecisionProcedure => self.apply_decision_procedure(now, ended),
            CloseHandling::ReinitializeAndResend => self.apply_reinitialize_and_resend(now, ended),
            CloseHandling::Sdk(rules) => self.apply_sdk_rules(now, ended, &rules),
            CloseHandling::ReissueWithNewId => self.apply_reissue(now, ended),
        }
    }

    /// The `reference` client: `decision::next_action` decides; this only carries it out.
    fn apply_decision_procedure(&mut self, now: Instant, ended: Ended) {
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
                        let session = self.app_session(None);
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
                        if self.calls.get(&key).is_some_and(|c| c.idempotent) {
                            self.resend(key);
                        } else {
                            self.resolve_unknown(key, error.to_string());
                        }
                    }
                    // Nothing was seen on the standalone stream, so nothing can be missed by
                    // opening it afresh.
                    (Owner::Standalone, DecisionError::NeverPersisted) => self.schedule_reconnect(now, &ended, None),
                    (owner, _) => self.stop_stream(owner, &error.to_string()),
                }
            }
        }
    }

    /// The `naive` client: any break of a call's stream is fatal to the session. It starts a new
    /// one and re-sends every call in flight under the same key, never using `Last-Event-ID`.
    fn apply_reinitialize_and_resend(&mut self, now: Instant, ended: Ended) {
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

    /// The real SDKs' rules (see `shared/docs/sdk-profiles.md`, "Clients").
    fn apply_sdk_rules(&mut self, now: Instant, ended: Ended, rules: &SdkRules) {
        let owner = ended.owner;
        if let Some(status) = ended.status {
            match owner {
                Owner::Call(key) if ended.was_post() && status == Status::NOT_FOUND => {
                    return self.sdk_on_404(key, rules.on_404);
                }
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
                // Any other refusal of a GET is one failed attempt.
                _ => {}
            }
        }
        if ended.empty_resume() {
            match rules.on_empty_resume {
                OnEmptyResume::SameId => {}
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
            self.record_decision(owner, None, None, Some("no event id arrived on the POST stream".into()));
            return self.resolve_error(key, ERR_NO_RESPONSE.to_string());
        }
        let action = last.clone().map(|last_event_id| NextAction::Resume { last_event_id });
        self.record_decision(owner, None, action, None);
        self.schedule_reconnect(now, &ended, last);
    }

    /// The 2026-07-28 revision's client: nothing is resumed. A call whose stream broke (a reset,
    /// a refused connection, a 5xx, a close without the response) is issued again with a new id
    /// after backoff; any other status fails it, and `event: close` stops it.
    fn apply_reissue(&mut self, now: Instant, ended: Ended) {
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
    fn schedule_reissue(&mut self, now: Instant, key: CallKey, after_error: bool) {
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
    fn reissue_due(&mut self, key: CallKey) {
        if let Some(call) = self.calls.get_mut(&key) {
            call.resend_at = None;
        }
        if self.handshake == Handshake::Ready {
            self.send_call(key);
        }
    }

    fn sdk_on_404(&mut self, key: CallKey, rule: On404) {
        let note = format!("HTTP 404 to the POST: {rule:?}");
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
            // The dead session id is kept: every later request gets 404 too.
            _ => {
                self.record_decision(Owner::Call(key), None, None, Some(note));
                self.resolve_error(key, "session not found (HTTP 404)".to_string());
            }
        }
    }

    /// The `reference` client's answer to a 404: the session is gone. Tell the application, and
    /// settle every call in flight without re-running a non-idempotent tool.
    fn session_lost(&mut self) {
        if let Some(session) = self.session.clone() {
            self.record(StepKind::AppSessionLost { session });
        }
        self.drop_session();
        self.settle_sent_calls(UNKNOWN_SESSION_LOST);
        self.begin_initialize();
    }

    /// Reconnect `ended.owner` after the backoff for its attempt, with `last` as
    /// `Last-Event-ID`; or give up if its attempts are spent. A restart reconnects at once.
    fn schedule_reconnect(&mut self, now: Instant, ended: &Ended, last: Option<EventId>) {
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
    fn resume_at_once(&mut self, owner: Owner, head: EventId) {
        if !self.spend_attempt(owner) {
            return self.give_up(owner);
        }
        if let Some(stream) = self.stream_mut(owner) {
            stream.reconnect_with = Some(head);
        }
        self.reconnect(owner);
    }

    /// Counts one more attempt for `owner`'s stream; false when none is left.
    fn spend_attempt(&mut self, owner: Owner) -> bool {
        let max = self.policy.reconnect.max_attempts;
        let Some(stream) = self.stream_mut(owner) else { return false };
        if max.is_some_and(|max| stream.failures >= max) {
            return false;
        }
        stream.failures += 1;
        true
    }

    /// Attempts exhausted.
    fn give_up(&mut self, owner: Owner) {
        let Owner::Call(key) = owner else {
            self.record_decision(owner, None, None, Some(format!("standalone stream: {ERR_EXHAUSTED}")));
            self.standalone = None;
            return;
        };
        let idempotent = self.calls.get(&key).is_some_and(|c| c.idempotent);
        match self.policy.close_handling {
            CloseHandling::DecisionProcedure | CloseHandling::ReissueWithNewId if !idempotent => {
                self.resolve_unknown(key, ERR_EXHAUSTED.to_string())
            }
            CloseHandling::Sdk(_) => self.resolve_error(key, ERR_CONNECTION_CLOSED.to_string()),
            _ => self.resolve_error(key, ERR_EXHAUSTED.to_string()),
        }
    }

    /// The stream will not be reconnected: its call fails with `error`.
    fn stop_stream(&mut self, owner: Owner, error: &str) {
        match owner {
            Owner::Call(key) => self.resolve_error(key, error.to_string()),
            Owner::Standalone => self.standalone = None,
        }
    }

    /// Re-sends an idempotent call as a new POST (a new request id, the same call key).
    fn resend(&mut self, key: CallKey) {
        if !self.spend_attempt(Owner::Call(key)) {
            return self.give_up(Owner::Call(key));
        }
        self.mark_for_resend(key);
        if self.handshake == Handshake::Ready {
            self.send_call(key);
        }
    }

    /// Puts a sent call back in the waiting queue: its old request and stream are forgotten.
    fn mark_for_resend(&mut self, key: CallKey) {
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

    /// Forgets the session: every connection of it is closed, nothing is reconnected.
    fn drop_session(&mut self) {
        self.session = None;
        self.handshake = Handshake::Idle;
        let stream_conns: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| !matches!(c.purpose, Purpose::Notification | Purpose::Delete))
            .map(|(id, _)| *id)
            .collect();
        for conn in stream_conns {
            self.abort(conn);
        }
        for call in self.calls.values_mut() {
            call.stream.conn = None;
            call.stream.reconnect_at = None;
        }
        if self.standalone.is_some() {
            self.standalone = Some(Stream::default());
        }
    }

    fn time_out(&mut self, key: CallKey) {
        if let Some(request) = self.calls.get(&key).and_then(|c| c.request) {
            let cancel = Request::post(self.session.clone(), ClientMessage::Cancelled { request });
            self.open(Purpose::Notification, cancel, false);
        }
        self.resolve_error(key, ERR_TIMED_OUT.to_string());
    }

    // -----------------------------------------------------------------------------------------
    // Resolving calls
    // -----------------------------------------------------------------------------------------

    fn resolve_error(&mut self, key: CallKey, error: String) {
        if self.calls.contains_key(&key) {
            self.record(StepKind::AppError { call: key, error });
            self.resolve(key, None);
        }
    }

    fn resolve_unknown(&mut self, key: CallKey, reason: String) {
        if self.calls.contains_key(&key) {
            self.record(StepKind::AppUnknownOutcome { call: key, reason });
            self.resolve(key, None);
        }
    }

    /// Forgets a resolved call. Its connection is closed unless it is `via`, the one that carried
    /// the answer (the server ends that one itself).
    fn resolve(&mut self, key: CallKey, via: Option<ConnId>) {
        let Some(call) = self.calls.remove(&key) else { return };
        if let Some(request) = call.request {
            self.by_request.remove(&request);
        }
        if let Some(conn) = call.stream.conn {
            if Some(conn) == via {
                self.conns.remove(&conn);
            } else {
                self.abort(conn);
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Plumbing
    // -----------------------------------------------------------------------------------------

    fn open(&mut self, purpose: Purpose, request: Request, reconnect: bool) -> ConnId {
        let conn = ConnId(self.next_conn);
        self.next_conn += 1;
        let state =
            Conn { purpose, session: request.session.clone(), reconnect, head: None, events: 0, close_event: false };
        self.conns.insert(conn, state);
        self.record(StepKind::Send { conn, request: request.clone() });
        self.outputs.push_back(ClientOutput::Open { conn, request });
        conn
    }

    fn abort(&mut self, conn: ConnId) {
        if self.conns.remove(&conn).is_some() {
            self.outputs.push_back(ClientOutput::Abort { conn });
        }
    }

    fn record(&mut self, step: StepKind) {
        self.outputs.push_back(ClientOutput::Record(step));
    }

    fn record_decision(
        &mut self,
        owner: Owner,
        outcome: Option<StreamOutcome>,
        action: Option<NextAction>,
        error: Option<String>,
    ) {
        self.record(StepKind::Decision { call: owner.call(), outcome, action, error });
    }

    fn stream_mut(&mut self, owner: Owner) -> Option<&mut Stream> {
        match owner {
            Owner::Call(key) => self.calls.get_mut(&key).map(|c| &mut c.stream),
            Owner::Standalone => self.standalone.as_mut(),
        }
    }

    /// The delay for attempt `n`, drawing the jitter from the seeded generator.
    fn next_delay(&mut self, n: u32, after_error: bool) -> Duration {
        let u = if self.policy.reconnect.jitter > 0.0 { self.rng.next_f64() } else { 0.0 };
        reconnect_delay(&self.policy.reconnect, n, self.server_retry_ms, after_error, u)
    }

    fn take_request_id(&mut self) -> RequestId {
        let id = RequestId(self.next_request);
        self.next_request += 1;
        id
    }

    fn take_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    fn keys_in_issue_order(&self) -> Vec<CallKey> {
        let mut keys: Vec<(u64, CallKey)> = self.calls.iter().map(|(k, c)| (c.seq, *k)).collect();
        keys.sort_unstable();
        keys.into_iter().map(|(_, k)| k).collect()
    }

    /// The session an `App*` step names: the one the stream was opened under, else the current
    /// one. A server that mints no session id gets the empty id.
    fn app_session(&self, stream_session: Option<SessionId>) -> SessionId {
        stream_session.or_else(|| self.session.clone()).unwrap_or_else(|| SessionId(String::new()))
    }

    fn durable_state(&self) -> DurableState {
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
        DurableState {
            session: self.session.clone(),
            next_request: self.next_request,
            calls,
            standalone_last_event_id: self.standalone.as_ref().and_then(|s| s.last_event_id.clone()),
        }
    }

    /// Under `Persistence::Durable`, writes the state if it changed, ahead of the outputs queued
    /// since `mark` (write-ahead: a crash after a request left never loses its record).
    fn persist_if_changed(&mut self, mark: usize) {
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
