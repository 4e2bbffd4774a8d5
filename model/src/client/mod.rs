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
//!
//! Layout: this file holds the `Client` machine (its inputs, polls and plumbing); `handshake.rs`
//! the session handshake; `connection.rs` sending requests and reading what comes back;
//! `close_rules/` what a stream's premature end leads to, one file per `CloseHandling` strategy;
//! `reconnect.rs` attempts and backoff scheduling (`backoff.rs` the delay formula); `calls.rs`
//! settling calls; `durable.rs` persistence across restarts.

pub(crate) use tasks::ERR_TASK_POLLS;

mod backoff;
mod calls;
mod close_rules;
mod connection;
mod durable;
mod era_choice;
#[cfg(test)]
mod era_pair;
mod handshake;
#[cfg(test)]
mod pair;
mod reconnect;
mod standalone;
mod subscriptions;
mod tasks;
#[cfg(test)]
mod tests;

pub use backoff::reconnect_delay;
use close_rules::Ended;
pub use durable::{DurableCall, DurableState, DurableWaiting};
pub use tasks::DurableTask;

use crate::config::ClientPolicy;
use crate::decision::{NextAction, StreamOutcome};
use crate::http::{ConnEnd, Frame, Request, ResponseHead};
use crate::ids::{CallKey, ConnId, EventId, RequestId, SessionId, NO_SESSION};
use crate::rng::SplitMix64;
use crate::time::Instant;
use crate::trace::StepKind;
use std::collections::{BTreeMap, VecDeque};

/// Something the client asks its actor to do or record.
#[must_use]
#[derive(Clone, Debug, PartialEq)]
pub enum ClientOutput {
    /// Open a connection numbered `conn` to the server (through the load balancer) and send
    /// `request` on it. Frames that arrive on it go to `handle_frame`; its end to `handle_conn_end`.
    Open {
        /// The connection.
        conn: ConnId,
        /// The JSON-RPC request id.
        request: Request,
    },
    /// Close `conn` from this side.
    Abort {
        /// The connection.
        conn: ConnId,
    },
    /// Write this state to durable storage (only under `Persistence::Durable`). It is queued ahead
    /// of the other outputs of the same call (write-ahead): the state is on disk before the
    /// requests that depend on it leave.
    Persist(DurableState),
    /// Record a step.
    Record(StepKind),
}

// Texts the application is handed. Tests and oracles match on some of them.
/// The errors a client tells of a request it sent when it cannot know what became of it: its own
/// time-out, its give-up, a stream that ended without the response, a re-initialize before it.
/// The note's procedure tells each as an unknown outcome (`oracle::conditions` reads an error
/// instead, for a non-idempotent call, as not acting by class).
/// The note of the decision that gives the standalone stream up (`Client::give_up`).
pub(crate) const NOTE_STANDALONE_GIVEN_UP: &str = "standalone stream: reconnect attempts exhausted";
pub(crate) const ERRS_OUTCOME_UNKNOWN: [&str; 6] =
    [ERR_TIMED_OUT, ERR_EXHAUSTED, ERR_CONNECTION_CLOSED, ERR_NO_RESPONSE, ERR_REINITIALIZED, ERR_TRANSPORT_CLOSED];
const ERR_SESSION_CLOSED: &str = "session closed by the server";
pub(crate) const ERR_EXHAUSTED: &str = "reconnect attempts exhausted";
/// What a given-up call's decision note ends with when the policy leaves it pending
/// (`OnGiveUp::LeavePending`): the oracles read a give-up by it, whatever stopped the stream.
pub(crate) const NOTE_LEFT_PENDING: &str = "the call stays pending until its request timeout";
/// Why an SDK cannot resume a call's stream (`SdkRules::resume_post_needs_event_id`): its
/// decision's note holds it, and the conditions judge reads it as the decision procedure's
/// `NeverPersisted` (condition 1 when an event of the stream never reached the client).
pub(crate) const NOTE_NO_POST_EVENT_ID: &str = "no event id arrived on the POST stream";
/// Why an SDK stops reconnecting a call's stream whose resume was answered 405
/// (`SdkRules::resume_405_ends_stream`).
pub(crate) const NOTE_NO_GET_STREAM: &str = "the server offers no GET stream, so reconnecting stops";
pub(crate) const ERR_NO_RESPONSE: &str = "stream ended without a response";
pub(crate) const ERR_CONNECTION_CLOSED: &str = "connection closed";
pub(crate) const ERR_TIMED_OUT: &str = "request timed out";
/// The decision procedure's answer to a timed-out request that was sent: it may have run.
const ERR_TIMED_OUT_SENT: &str = "request timed out after it was sent: outcome unknown";
pub(crate) const ERR_REINITIALIZED: &str = "re-initialized before the response arrived";
const UNKNOWN_SESSION_LOST: &str =
    "the session was lost (HTTP 404) while the call was in flight; it may or may not have run";
const UNKNOWN_RESTARTED: &str =
    "the client restarted without a session while the call was in flight; it may or may not have run";
const SESSION_DELETED: &str = "session deleted by the application";
const UNKNOWN_UNHONOURED: &str =
    "the server could not honour the resumption of the call's stream; it may or may not have run";
/// What every call in flight gets when the whole transport closes (`StandaloneLoss::CloseTransport`,
/// `On404::CloseTransport`, `OnGiveUp::CloseTransport`); why is in the decision's note.
pub(crate) const ERR_TRANSPORT_CLOSED: &str = "the transport closed";
/// The modern client's decision on a stream that broke before its response (read by the
/// conditions judge, `oracle::conditions`).
pub(crate) const NOTE_REISSUE: &str = "the stream ended before the response: re-issue the request with a new id";

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
    /// A `tasks/get` for the task answering a call (`tasks.rs`).
    TaskPoll(CallKey),
    /// An auto client's `server/discover` probe (`era_choice.rs`).
    Probe,
    /// The `subscriptions/listen` stream (`subscriptions.rs`).
    Listen,
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
    /// Events that carried a message (not priming or close events).
    messages: u32,
    /// Events that carried an id.
    ids: u32,
    close_event: bool,
    /// When the library gives the connection up by its own timer (`http.headers_timeout` until
    /// the head, then `http.body_timeout` from its last byte); `None`: never.
    gives_up_at: Option<Instant>,
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
    /// Resumes in a row the server could not honour (409/410, or a 200 without a message).
    unhonoured: u32,
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
    /// `notifications/initialized` failed; it is sent again on the same session when
    /// `init_retry_at` comes, or, once the attempts ran out, at the application's next call (the
    /// design note's client: see `Client::acknowledge_failed`).
    AwaitingAckRetry,
    /// Initialized; calls wait for the standalone `GET`'s response head
    /// (`ClientPolicy::await_standalone_head`).
    AwaitingStandalone,
    /// Calls can be sent.
    Ready,
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
    /// The instant of the input being handled: what a connection opened while handling it counts
    /// its timers from.
    clock: Instant,
    /// The server's last `retry:` value, in milliseconds.
    server_retry_ms: Option<u64>,
    outputs: VecDeque<ClientOutput>,
    /// The state last written to durable storage.
    persisted: Option<DurableState>,
    /// A session the application deleted whose `DELETE` has not been answered yet (kept durably
    /// by a durable client, and finished after a restart).
    pending_delete: Option<SessionId>,
    /// Failed `DELETE`s of `pending_delete` in a row.
    delete_failures: u32,
    delete_retry_at: Option<Instant>,
    /// Initialize once the pending `DELETE` is done (a restarted client must not hold two live
    /// sessions).
    initialize_after_delete: bool,
    /// Why the transport closed for good (`StandaloneLoss::CloseTransport`): every later call
    /// fails at once with it.
    closed: Option<String>,
    /// The tasks polled for calls answered with a `CreateTaskResult` (`tasks.rs`).
    tasks: BTreeMap<CallKey, tasks::Polled>,
    /// The protocol era and an auto client's cache (`era_choice.rs`).
    era: era_choice::EraState,
    /// `Some` while the application wants its `subscriptions/listen` stream (`subscriptions.rs`).
    listen: Option<subscriptions::Listen>,
}

impl Client {
    /// A client process starting, with its durable state if it has any. `seed` seeds backoff jitter.
    pub fn new(policy: ClientPolicy, name: &str, restored: Option<DurableState>, seed: u64) -> Self {
        let wants_standalone = policy.open_standalone_stream;
        let wants_listen = policy.subscriptions.listen;
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
            clock: Instant::ZERO,
            server_retry_ms: None,
            outputs: VecDeque::new(),
            persisted: None,
            pending_delete: None,
            delete_failures: 0,
            delete_retry_at: None,
            initialize_after_delete: false,
            closed: None,
            tasks: BTreeMap::new(),
            era: era_choice::EraState::default(),
            listen: wants_listen.then(subscriptions::Listen::default),
        };
        if let Some(state) = restored {
            client.load(state);
        }
        client
    }

    /// Starts the client: initialize, or resume restored calls.
    pub fn start(&mut self, now: Instant) {
        self.clock = now;
        let mark = self.outputs.len();
        let durable = self.policy.persistence == crate::config::Persistence::Durable;
        let by_class = self.policy.close_handling == crate::config::CloseHandling::DecisionProcedure;
        let max_attempts = self.policy.reconnect.max_attempts;
        let on_give_up = match &self.policy.close_handling {
            crate::config::CloseHandling::Sdk(rules) => Some(rules.on_give_up),
            _ => None,
        };
        self.record(StepKind::ClientStart { restored: self.restored, durable, by_class, max_attempts, on_give_up });
        if self.started {
            return self.persist_if_changed(mark);
        }
        self.started = true;
        if let Some(timeout) = self.policy.request_timeout {
            // A call whose task is polled had its request answered (`task_created`): polls,
            // not a time-out, decide its fate, after a restart as before it.
            let tasks = &self.tasks;
            for (_, call) in self.calls.iter_mut().filter(|(key, _)| !tasks.contains_key(key)) {
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

    /// The application calls a tool.
    pub fn call_tool(&mut self, now: Instant, call: CallKey, tool: &str, idempotent: bool) {
        self.clock = now;
        let mark = self.outputs.len();
        self.record(StepKind::AppCall { call, tool: tool.to_string(), idempotent });
        if let Some(why) = self.closed.clone() {
            self.record(StepKind::AppError { call, error: format!("not connected: {why}") });
            return self.persist_if_changed(mark);
        }
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
                Handshake::Idle if self.started && self.init_retry_at.is_none() && !self.initialize_after_delete => {
                    self.begin_initialize()
                }
                Handshake::AwaitingAckRetry if self.init_retry_at.is_none() => self.retry_handshake(),
                _ => {}
            }
        }
        self.persist_if_changed(mark);
    }

    /// A frame arrived on `conn`.
    pub fn handle_frame(&mut self, now: Instant, conn: ConnId, frame: Frame) {
        self.clock = now;
        let mark = self.outputs.len();
        let body_timeout = self.policy.http.body_timeout;
        if let Some(c) = self.conns.get_mut(&conn) {
            c.gives_up_at = body_timeout.map(|t| now + t);
        }
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
        self.clock = now;
        let mark = self.outputs.len();
        self.record(StepKind::ConnEnd { conn, end });
        if let Some(c) = self.conns.remove(&conn) {
            self.conn_ended(now, conn, c, end);
        }
        self.persist_if_changed(mark);
    }

    /// The library's own timer gives up `conn` (`http.headers_timeout`, `http.body_timeout`):
    /// it closes its side, and the SDK sees the stream break as a reset.
    fn give_up_conn(&mut self, now: Instant, conn: ConnId) {
        let Some(c) = self.conns.remove(&conn) else { return };
        let (head, timeout) = match c.head {
            None => (true, self.policy.http.headers_timeout),
            Some(_) => (false, self.policy.http.body_timeout),
        };
        let silent_us = timeout.map(crate::time::micros).unwrap_or_default();
        self.record(StepKind::ClientTimedOut { conn, silent_us, head });
        self.outputs.push_back(ClientOutput::Abort { conn });
        self.conn_ended(now, conn, c, ConnEnd::Reset);
    }

    /// What `conn`'s end means for what it carried.
    fn conn_ended(&mut self, now: Instant, conn: ConnId, c: Conn, end: ConnEnd) {
        {
            match c.purpose {
                Purpose::Initialize => self.init_failed(now, format!("connection {end}")),
                Purpose::Initialized => self.acknowledge_failed(now, None, format!("connection {end}")),
                Purpose::Notification => {}
                Purpose::Probe => self.probe_unanswered(now),
                // A 5xx is a transport fact (the note's first class): the DELETE did not land.
                Purpose::Delete => self.delete_ended(now, c.head.as_ref().is_some_and(|h| h.status.0 < 500)),
                Purpose::TaskPoll(call) => self.task_poll_ended(now, call, end),
                Purpose::Listen => self.listen_ended(now, conn, c.head.as_ref(), end),
                Purpose::Stream(owner) => {
                    if let Some(stream) = self.stream_mut(owner) {
                        stream.conn = None;
                    }
                    self.stream_ended(now, Ended::from_conn(owner, c, end));
                }
            }
        }
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.clock = now;
        let mark = self.outputs.len();
        let given_up: Vec<ConnId> =
            self.conns.iter().filter(|(_, c)| c.gives_up_at.is_some_and(|t| t <= now)).map(|(k, _)| *k).collect();
        for conn in given_up {
            self.give_up_conn(now, conn);
        }
        let timed_out: Vec<CallKey> =
            self.calls.iter().filter(|(_, c)| c.deadline.is_some_and(|d| d <= now)).map(|(k, _)| *k).collect();
        for key in timed_out {
            self.time_out(key);
        }
        if self.init_retry_at.is_some_and(|t| t <= now) {
            self.retry_handshake();
        }
        if self.delete_retry_at.is_some_and(|t| t <= now) {
            self.delete_retry_at = None;
            self.send_pending_delete();
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
        self.poll_tasks(now);
        self.relisten_due(now);
        self.persist_if_changed(mark);
    }

    /// When `handle_timeout` must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let calls = self.calls.values().flat_map(|c| [c.deadline, c.stream.reconnect_at, c.resend_at]);
        let standalone = self.standalone.as_ref().and_then(|s| s.reconnect_at);
        let conns = self.conns.values().map(|c| c.gives_up_at);
        calls
            .chain([self.init_retry_at, standalone, self.delete_retry_at, self.next_task_poll(), self.next_relisten()])
            .chain(conns)
            .flatten()
            .min()
    }

    /// The next output, if any; drain it after every input.
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
            && self.pending_delete.is_none()
            && matches!(self.handshake, Handshake::Idle | Handshake::Ready | Handshake::AwaitingAckRetry)
            && self.standalone.as_ref().is_none_or(|s| s.reconnect_at.is_none())
            && self.next_relisten().is_none()
    }

    /// The application ends its session: `DELETE` it (if the client holds one) and forget it.
    ///
    /// Every unresolved call is settled at once, since the application chose to end the session
    /// its answers would come through: one that was sent may have run, so a non-idempotent call
    /// ends as unknown outcome and an idempotent one as an error; one never sent ends as an error.
    /// Streams are closed and nothing is reconnected or re-initialized until the application calls
    /// a tool again. Whatever the server answers to the `DELETE` (2xx, 404, 405, ...) is recorded
    /// and changes nothing.
    pub fn delete_session(&mut self, now: Instant) {
        self.clock = now;
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
            self.pending_delete = Some(session);
            self.delete_failures = 0;
            self.send_pending_delete();
        }
        self.persist_if_changed(mark);
    }

    /// Sends the `DELETE` of the session the application ended, if one is pending.
    fn send_pending_delete(&mut self) {
        if let Some(session) = self.pending_delete.clone() {
            self.open(Purpose::Delete, Request::delete(session), false);
        }
    }

    /// The `DELETE` connection ended: any answer below 500 finishes it; a break without one, or
    /// a 5xx (a balancer with no replica to send it to, a server shutting down), retries it
    /// after the reconnect backoff, within the reconnect attempts.
    fn delete_ended(&mut self, now: Instant, answered: bool) {
        if self.pending_delete.is_none() {
            return;
        }
        self.delete_failures += 1;
        let spent = self.policy.reconnect.max_attempts.is_some_and(|max| self.delete_failures >= max);
        if answered || spent {
            self.pending_delete = None;
            self.delete_failures = 0;
            if std::mem::take(&mut self.initialize_after_delete) {
                self.begin_initialize();
            }
            return;
        }
        let delay = self.next_delay(self.delete_failures - 1, true);
        self.delete_retry_at = Some(now + delay);
    }

    // -----------------------------------------------------------------------------------------
    // Plumbing
    // -----------------------------------------------------------------------------------------

    fn open(&mut self, purpose: Purpose, request: Request, reconnect: bool) -> ConnId {
        let conn = ConnId(self.next_conn);
        self.next_conn += 1;
        let state = Conn {
            purpose,
            session: request.session.clone(),
            reconnect,
            head: None,
            events: 0,
            messages: 0,
            ids: 0,
            close_event: false,
            gives_up_at: self.policy.http.headers_timeout.map(|t| self.clock + t),
        };
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

    /// The session an `App*` step names: the one the stream's request went out under. None (a
    /// 2026-07-28 request, sent with no `Mcp-Session-Id` even while the client still holds a
    /// session of a legacy build; a server that mints no session id) is the empty id, the one
    /// the server files such a stream's events under.
    fn app_session(stream_session: Option<SessionId>) -> SessionId {
        stream_session.unwrap_or_else(|| NO_SESSION.clone())
    }
}
