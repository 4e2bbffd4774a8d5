//! The trace schema: the one record of a run that oracles judge and `replay` compares.
//!
//! A trace is JSON Lines: a [`Header`] line, one [`Step`] line per step in the order the steps
//! happened, and a [`Footer`] line with the verdict and a digest of the step lines. The same seed
//! and scenario give the same bytes. The machines of this crate describe what they did as
//! [`StepKind`] values; whoever drives them stamps each with time and actor.

use crate::decision::{NextAction, StreamOutcome};
use crate::http::{ConnEnd, Request, ResponseHead, ServerMessage, SseEvent, Status};
use crate::ids::{CallKey, ConnId, EventId, RequestId, SessionId, StreamNo};
use crate::time::Instant;
use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

/// Bumped whenever a change to these types changes what a trace means, or the engine re-times
/// every run (3: the project's own transport replaced madsim's simulated TCP, so the same seed
/// draws other latencies).
pub const SCHEMA_VERSION: u32 = 3;

/// The first line of a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always `"mcpsim-trace"`: tells a trace from any other JSON Lines file.
    pub format: String,
    /// The schema version ([`SCHEMA_VERSION`]).
    pub schema: u32,
    /// Version of the crate that recorded it.
    pub mcpsim_version: String,
    /// The seed of the run.
    pub seed: u64,
    /// Everything needed to run it again (profiles, parameters, fault plan), as the simulator
    /// wrote it; oracles do not read it. Shared: the runs of one scenario (a study's seeds) all
    /// carry the same one, and copying it was a few per cent of a short run.
    pub scenario: std::sync::Arc<serde_json::Value>,
}

/// The last line of a trace. In the file it also carries `digest`, the FNV-1a 64 of the step
/// lines (each with its newline) in hex: computed when the trace is written and checked when it
/// is read, so a run that is never written never pays for serializing its steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Footer {
    /// Names of the invariants the run violated, with what broke them.
    pub verdict: Vec<ViolationRecord>,
    /// Number of step lines.
    pub steps: u64,
}

/// The footer as written: the footer and the digest of the step lines before it.
#[derive(Serialize, Deserialize)]
struct FooterLine {
    verdict: Vec<ViolationRecord>,
    steps: u64,
    digest: String,
}

/// A violation as written into the footer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViolationRecord {
    /// The invariant's name.
    pub invariant: String,
    /// Index (0-based, among the step lines) of the step that broke it.
    pub step: u64,
    /// Simulated time of the step that broke it, in µs.
    pub t: u64,
    /// The call, stream, event or session concerned.
    pub subject: String,
    /// What went wrong, in words.
    pub detail: String,
    /// The design note's conditions of validity at the violation (`oracle::conditions`):
    /// `unexplained: conditions 1-4 held`, `unexplained: a server bug: what the server did` (it
    /// ended a session or its process on its own), or `explained by condition N: what broke`. Empty in a
    /// trace recorded before the conditions were judged.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub conditions: String,
}

/// Who did a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Actor {
    /// The client library.
    Client,
    /// The application above the client library: what it was handed.
    App,
    /// The load balancer.
    Lb,
    /// The server.
    Server,
    /// The fault injector.
    Fault,
    /// The run itself (phases, end).
    Run,
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Actor::Client => "client",
            Actor::App => "app",
            Actor::Lb => "lb",
            Actor::Server => "server",
            Actor::Fault => "fault",
            Actor::Run => "run",
        };
        f.write_str(s)
    }
}

/// One step of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Position in the trace, from 0. Written as `step` so it cannot clash with a field of a
    /// flattened [`StepKind`] (`EventStored` has a `seq` of its own).
    #[serde(rename = "step")]
    pub seq: u64,
    /// Simulated time in µs.
    pub t: u64,
    /// Who did it.
    pub actor: Actor,
    /// Which logical client (0-based) did a client or application step, set only in runs with
    /// several clients, so that single-client traces read exactly as before. Written as
    /// `client_index`: `SessionCreated` has a `client` field of its own.
    #[serde(rename = "client_index", default, skip_serializing_if = "Option::is_none")]
    pub client: Option<u32>,
    /// Which server replica (0-based) did a server step, set only in runs with several replicas,
    /// so that single-replica traces read exactly as before. Written as `replica_index`:
    /// `LbRouted` and `TaskCreated` have a `replica` field of their own.
    #[serde(rename = "replica_index", default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<u32>,
    /// In a run with several replicas, the balancer and the servers name a connection as the
    /// client does (the kind's `conn` is the client's number for it, see [`StepKind::conn_mut`]);
    /// with several clients as well, this says whose number it is (the client's index). Absent
    /// otherwise.
    #[serde(rename = "conn_client", default, skip_serializing_if = "Option::is_none")]
    pub conn_client: Option<u32>,
    #[serde(flatten)]
    /// What happened.
    pub kind: StepKind,
}

impl Step {
    /// A step with no client, replica or connection stamp (what single-client, single-replica
    /// runs record).
    pub fn new(seq: u64, t: u64, actor: Actor, kind: StepKind) -> Step {
        Step { seq, t, actor, client: None, replica: None, conn_client: None, kind }
    }

    /// Simulated time of the step.
    pub fn at(&self) -> Instant {
        Instant(self.t)
    }
}

/// Why a server session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionEndReason {
    /// The client deleted it.
    Deleted,
    /// It stayed idle past its TTL.
    IdleExpired,
    /// The server process restarted and lost it.
    ServerRestart,
    /// A write on one of its streams failed (its client was gone) and the server forgot the
    /// session with it (`on_failed_write = end-session`).
    WriteFailed,
    /// The server process exited on a request it could not parse (`on_protocol_error =
    /// restart-process`), or on a second standalone `GET` (`second_get = restart-process`), and
    /// lost it.
    ProcessExit,
    /// A second standalone `GET` conflicted with the one the server still had registered, and
    /// the server ended the whole session over it (`second_get = end-session`).
    StreamConflict,
}

/// What made the server process exit ([`StepKind::ProcessExit`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExitCause {
    /// A request it could not parse (`on_protocol_error = restart-process`). Left out of traces.
    #[default]
    ProtocolError,
    /// A second standalone `GET` while one was registered (`second_get = restart-process`).
    SecondGet,
}

/// The bounds and timers of a server's profile that a trace records at its start, so that
/// `profile-conformance` can check, from the steps alone, that the model kept them: what its
/// store may still hold (`retention`), when it closes a stream itself (`close_request_streams`,
/// `close_idle_standalone`) and when it writes a keep-alive (`keepalive`, `keepalive_timer`).
/// Each is absent when the profile sets none (or, for a request stream's close, when the server
/// has no sessions and so never closes one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerBounds {
    /// `retention.max_events`: events kept per stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_max_events: Option<u32>,
    /// `retention.window`, in µs: how long an event is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_window_us: Option<u64>,
    /// `close_request_streams`, in µs: a request's stream is closed this long after it opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_request_streams_us: Option<u64>,
    /// `close_idle_standalone`, in µs: the standalone stream is closed after this long without a
    /// write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_idle_standalone_us: Option<u64>,
    /// `keepalive`, in µs: the interval of the keep-alive comments on an open SSE stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keepalive_us: Option<u64>,
    /// `keepalive_timer = "after-silence"`: a keep-alive goes only after `keepalive_us` with
    /// nothing written on the connection (else every `keepalive_us` from the stream's head,
    /// whatever else was written).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keepalive_after_silence: bool,
    /// `finished_resume = "stay-open"`: a resume of a finished stream keeps its connection open
    /// after the replay (else the connection ends with it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub finished_resume_stays_open: bool,
}

impl ServerBounds {
    /// No bound recorded.
    pub fn is_none(&self) -> bool {
        *self == ServerBounds::default()
    }

    /// Its store evicts by age or by count.
    pub fn retains(&self) -> bool {
        self.retention_window_us.is_some() || self.retention_max_events.is_some()
    }

    /// It closes a stream of its own accord.
    pub fn closes(&self) -> bool {
        self.close_request_streams_us.is_some() || self.close_idle_standalone_us.is_some()
    }

    /// It writes keep-alive comments on its open streams.
    pub fn keeps_alive(&self) -> bool {
        self.keepalive_us.is_some()
    }

    /// It has a timer on its open streams (a close or a keep-alive), which `profile-conformance`
    /// follows stream by stream.
    pub fn times_streams(&self) -> bool {
        self.closes() || self.keeps_alive()
    }
}

fn is_default_cause(cause: &ExitCause) -> bool {
    *cause == ExitCause::ProtocolError
}

impl ExitCause {
    /// The setting that makes the process exit on it.
    pub fn setting(self) -> &'static str {
        match self {
            ExitCause::ProtocolError => "server.on_protocol_error",
            ExitCause::SecondGet => "server.second_get",
        }
    }
}

/// The bounds an event store's retention is configured with (`server.retention`,
/// `server.retention_window`), as a `resume` step names them: an event is evicted only when
/// `max_events` newer ones were stored in its log after it, or it is older than the window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionBound {
    /// At most this many events per log; absent: no count bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_events: Option<u32>,
    /// Events older than this many microseconds are evicted; absent: no time window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_us: Option<u64>,
}

/// Which of the server's own timers ended an SSE connection ([`StepKind::ServerClosedStream`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CloseRule {
    /// `server.close_request_streams`: a request's stream, this long after it opened (SEP-1699
    /// polling with `0s`).
    RequestStream,
    /// `server.close_idle_standalone`: the standalone stream, this long after its last write.
    IdleStandalone,
}

impl CloseRule {
    /// The setting that names the timer.
    pub fn setting(self) -> &'static str {
        match self {
            CloseRule::RequestStream => "server.close_request_streams",
            CloseRule::IdleStandalone => "server.close_idle_standalone",
        }
    }
}

/// What a server did with a `Last-Event-ID`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "resume", rename_all = "kebab-case")]
pub enum ResumeOutcome {
    /// Honoured: `replayed` events sent again (maybe 0), connection attached to the stream.
    Replayed {
        /// Events sent again.
        replayed: u32,
    },
    /// Rejected with a status (410/409 naming `head`, or 404 for an unknown session).
    Rejected {
        /// The HTTP status.
        status: Status,
        /// The head event id named, if any.
        head: Option<EventId>,
    },
    /// Attached at the head without saying so; `skipped` events the client will never see.
    SilentHead {
        /// Events the client will never see.
        skipped: u32,
    },
    /// Replayed from the oldest buffered event without saying events were skipped.
    FromOldest {
        /// Events the client will never see.
        skipped: u32,
        /// Events sent again.
        replayed: u32,
    },
    /// 200 with no events; `open` tells whether the connection was left open.
    Empty {
        /// Whether the connection was left open.
        open: bool,
    },
}

/// How a tool execution ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolEnd {
    /// It ran to its end.
    Completed,
    /// It was cancelled.
    Cancelled,
    /// Its server restarted under it.
    Lost,
    /// Cancelled because the connection carrying its stream ended, as the server's policy says
    /// a disconnect does (`ServerPolicy::disconnect_cancels`, the 2026-07-28 revision): the
    /// revision's way for the client to end the work, not a decision the oracles judge.
    Disconnected,
}

/// What happened. Variants are grouped by the actor that records them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum StepKind {
    // --- client library: the network as it sees it ---
    /// It opened a connection and sent a request.
    Send {
        /// The connection.
        conn: ConnId,
        /// The JSON-RPC request id.
        request: Request,
    },
    /// A response head arrived.
    Response {
        /// The connection.
        conn: ConnId,
        /// The response head.
        head: ResponseHead,
    },
    /// An SSE event arrived.
    Event {
        /// The connection.
        conn: ConnId,
        /// The event.
        event: SseEvent,
    },
    /// A keep-alive comment arrived.
    Comment {
        /// The connection.
        conn: ConnId,
    },
    /// A JSON body arrived.
    Json {
        /// The connection.
        conn: ConnId,
        /// The message.
        message: ServerMessage,
    },
    /// A connection ended.
    ConnEnd {
        /// The connection.
        conn: ConnId,
        /// How it ended.
        end: ConnEnd,
    },
    /// The client stopped reconnecting a call's stream: its attempts were spent, or its profile
    /// reads the server's refusal as final. What the call and the transport get next is the
    /// profile's `close_handling.on_give_up`.
    StreamGivenUp {
        /// The call whose stream it was.
        call: CallKey,
    },
    /// The decision procedure (or the profile's rule) judged a closed stream.
    Decision {
        /// The call whose stream it is (`None` for the standalone stream).
        call: Option<CallKey>,
        /// What the stream's end meant.
        outcome: Option<StreamOutcome>,
        /// What the client does next.
        action: Option<NextAction>,
        /// Set when the procedure refused to guess.
        error: Option<String>,
    },
    /// A reconnection of a stream was scheduled.
    Backoff {
        /// The call (`None` for the standalone stream).
        call: Option<CallKey>,
        /// The attempt number, 1 for the first.
        attempt: u32,
        /// The wait before it, in µs.
        delay_us: u64,
    },
    /// A failed `initialize` will be sent again.
    InitializeBackoff {
        /// The attempt number, 1 for the first.
        attempt: u32,
        /// The wait before it, in µs.
        delay_us: u64,
    },
    /// The client library (re)started: `restored` tells whether durable state was loaded; the
    /// other two say which of the design note's conditions of validity its policy keeps, so a
    /// breach of one of them is read as the client's own bug rather than as a broken condition.
    ClientStart {
        /// Whether durable state was loaded.
        restored: bool,
        /// The policy keeps the session, the `Last-Event-ID`s and the calls in flight durably
        /// (`persistence = "durable"`): condition 1.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        durable: bool,
        /// The policy acts by failure class: the design note's decision procedure
        /// (`close_handling = decision-procedure`): condition 4.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        by_class: bool,
        /// The most reconnection attempts its policy allows a stream (`reconnect.max_attempts`),
        /// which `profile-conformance` checks its backoffs against. Absent: unlimited.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_attempts: Option<u32>,
        /// What its profile does with a call whose stream it gave up (`close_handling.on_give_up`),
        /// which `profile-conformance` checks after each [`StepKind::StreamGivenUp`]. Absent: a
        /// client that runs the decision procedure, or one recorded before the field.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        on_give_up: Option<crate::config::OnGiveUp>,
    },
    /// The HTTP library sent `conn`'s request on a kept-alive connection (`client.http`), one
    /// that had been idle in its pool for `idle_us`.
    ConnReused {
        /// The exchange.
        conn: ConnId,
        /// How long the connection had been idle, in µs.
        idle_us: u64,
    },
    /// The HTTP library sent `conn`'s request again, by itself, on a fresh connection: the
    /// kept-alive one ended before any byte of the response (`written`: after the request had
    /// gone out on it).
    HttpResent {
        /// The exchange.
        conn: ConnId,
        /// Whether the request had been written on the failed connection.
        written: bool,
    },

    /// The client's HTTP library gave up `conn` by its own timer: no response head within
    /// `http.headers_timeout` (`head`), or no byte of the body within `http.body_timeout`. It
    /// closes its side; the SDK sees a broken stream.
    ClientTimedOut {
        /// The connection.
        conn: ConnId,
        /// How long it had waited without a byte, in µs.
        silent_us: u64,
        /// Whether it was waiting for the response head (else for the body's next byte).
        head: bool,
    },

    // --- load balancer ---
    /// It closed a connection that carried no bytes for `idle_us`.
    LbIdleCut {
        /// The connection.
        conn: ConnId,
        /// How long it had been silent, in µs.
        idle_us: u64,
        /// Which intermediary acted, when the chain has more than one (`hops[i]`, or the
        /// balancer itself as the last); absent with the balancer alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hop: Option<u32>,
    },
    /// It closed a connection that reached its maximum lifetime (`lb.max_lifetime`).
    LbLifetimeCut {
        /// The connection.
        conn: ConnId,
        /// How long it had been open, in µs.
        age_us: u64,
        /// Which intermediary acted, when the chain has more than one (`hops[i]`, or the
        /// balancer itself as the last); absent with the balancer alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hop: Option<u32>,
    },
    /// A cut closed only the client side of `conn` (`lb.cut_mode = "client-side"`): the upstream
    /// connection stays open, so the server still holds the stream.
    LbUpstreamKept {
        /// The connection.
        conn: ConnId,
        /// Which intermediary acted, when the chain has more than one (`hops[i]`, or the
        /// balancer itself as the last); absent with the balancer alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hop: Option<u32>,
    },
    /// It sent a new connection to a replica (recorded only with several replicas).
    LbRouted {
        /// The connection (the balancer's numbering).
        conn: ConnId,
        /// The replica, from 0.
        replica: u32,
        /// The request's `Mcp-Session-Id`, when routing read it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<SessionId>,
        /// Which intermediary acted, when the chain has more than one (`hops[i]`, or the
        /// balancer itself as the last); absent with the balancer alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hop: Option<u32>,
    },
    /// It answered a connection itself: no replica could take it (502 unreachable, 503 none
    /// available; recorded only with several replicas or hops), or a hop answers every request
    /// itself for a while (a fault `answer`: a route reload, a 404).
    LbAnswered {
        /// The connection.
        conn: ConnId,
        /// The status it answered.
        status: Status,
        /// Which intermediary acted, when the chain has more than one (`hops[i]`, or the
        /// balancer itself as the last); absent with the balancer alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hop: Option<u32>,
    },

    /// A hop's first-byte timeout fired: no response head came through it for `waited_us`
    /// after the request (it answers the client itself, see the `LbAnswered` that follows).
    LbTimedOut {
        /// The connection.
        conn: ConnId,
        /// How long it waited, in µs.
        waited_us: u64,
        /// Which intermediary.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hop: Option<u32>,
    },
    /// The balancer's socket to the client gave `conn` up: what it wrote there went
    /// unacknowledged for TCP's retransmission timeout (a black hole took it, `fault.blackhole`),
    /// so its reads end and its writes fail; it closes the connection, its upstream with it, and
    /// the server learns of that as of any close. The client is told nothing.
    LbGaveUp {
        /// The connection.
        conn: ConnId,
    },
    /// A buffering hop released what it held back of `conn`'s response, all at once.
    LbFlushed {
        /// The connection.
        conn: ConnId,
        /// How many frames went out together.
        frames: u32,
        /// How long the first of them was held, in µs.
        held_us: u64,
        /// Which intermediary.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hop: Option<u32>,
    },
    /// When the run ended, an intermediary still held back frames of `conn`'s response (a
    /// buffer below its size threshold with no flush interval, a held head or tail): they never
    /// reached the client.
    LbHolding {
        /// The connection.
        conn: ConnId,
        /// How many frames it held.
        frames: u32,
        /// How long the first of them had been held, in µs.
        held_us: u64,
        /// Which intermediary.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hop: Option<u32>,
    },
    /// A connection went (an intermediary cut it, a network reset took it, a hop failed) while
    /// an intermediary still held back frames of its response: they went with it and never
    /// reached the client.
    LbDiscarded {
        /// The connection.
        conn: ConnId,
        /// How many frames it held.
        frames: u32,
        /// How long the first of them had been held, in µs.
        held_us: u64,
        /// Which intermediary.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hop: Option<u32>,
    },
    /// A hop dropped a header of `conn`'s request (`HopConfig::drop_request_headers`): the
    /// server got the request without it.
    LbHeaderDropped {
        /// The connection.
        conn: ConnId,
        /// The header.
        header: crate::config::RequestHeader,
        /// Which intermediary.
        hop: u32,
    },
    /// A hop dropped a header of the response on `conn` (`HopConfig::drop_response_headers`):
    /// the client got the answer without it.
    LbResponseHeaderDropped {
        /// The connection.
        conn: ConnId,
        /// The header.
        header: crate::config::ResponseHeader,
        /// Which intermediary.
        hop: u32,
    },
    /// It sent `conn`'s request upstream on a kept-alive connection to `replica`, idle in its
    /// pool for `idle_us` (`lb.upstream_keep_alive`).
    LbUpstreamReused {
        /// The client's connection (the balancer's numbering).
        conn: ConnId,
        /// The replica.
        replica: u32,
        /// How long the upstream connection had been idle, in µs.
        idle_us: u64,
    },
    /// The upstream connection of `conn`'s request ended before any byte of the response, and
    /// the balancer sent the request again on a fresh one (`lb.retry_upstream`).
    LbResent {
        /// The client's connection (the balancer's numbering).
        conn: ConnId,
        /// Whether the lost upstream connection was a reused (kept-alive) one.
        reused: bool,
    },

    // --- server ---
    /// The HTTP server closed a kept-alive connection that carried no request for `idle_us`
    /// (`server.keep_alive_timeout`).
    KeepAliveClosed {
        /// How long the connection had been idle, in µs.
        idle_us: u64,
    },
    /// The server ended an SSE connection cleanly when a timer of its own ran out (the stream
    /// lives on: its client is to come back with `Last-Event-ID` after the `retry` it was given).
    /// How often it re-attaches is then this setting's doing (`oracle::churn`).
    ServerClosedStream {
        /// The connection.
        conn: ConnId,
        /// The session whose stream it carried.
        session: SessionId,
        /// The stream it carried (none when it carried none any more).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stream: Option<StreamNo>,
        /// The timer that ran out.
        rule: CloseRule,
        /// The timer's setting, in µs.
        after_us: u64,
    },
    /// The server dropped an event of a request's stream: it had closed the stream itself, no
    /// client was attached, and its policy neither stores nor sends such an event
    /// (`server.detached_request_events = "drop"`, typescript-sdk#2151 before 1.30.0). What the
    /// event carried (a progress notification, the call's result) reaches nobody.
    EventDropped {
        /// The session.
        session: SessionId,
        /// The stream.
        stream: StreamNo,
        /// The call whose stream it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<CallKey>,
        /// It was the request's answer (its result or error), not a notification on the way.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        answer: bool,
    },
    /// A session was created.
    SessionCreated {
        /// The session.
        session: SessionId,
        /// The client's name.
        client: String,
    },
    /// A session ended.
    SessionEnded {
        /// The session.
        session: SessionId,
        /// Why.
        reason: SessionEndReason,
        /// For an idle expiry: the idle TTL the server is configured with, in microseconds, so
        /// that the conditions judge can tell an expiry its TTL allows (condition 2) from one
        /// sooner after the session's last answered request than the TTL (the server's bug).
        /// Absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idle_ttl_us: Option<u64>,
    },
    /// A tool's side effect ran: the ledger the duplicate oracle reads.
    SideEffect {
        /// The session.
        session: SessionId,
        /// The JSON-RPC request id.
        request: RequestId,
        /// The application's logical call.
        call: CallKey,
        /// The tool's name.
        tool: String,
        /// Whether running it twice is harmless.
        idempotent: bool,
    },
    /// An event was appended to a stream's log (`message` is `None` for a priming event).
    EventStored {
        /// The session.
        session: SessionId,
        /// The stream.
        stream: StreamNo,
        /// Its sequence number in the stream, from 1.
        seq: u32,
        /// The event id.
        id: EventId,
        /// The application's logical call.
        call: Option<CallKey>,
        /// The message.
        message: Option<ServerMessage>,
    },
    /// A `Last-Event-ID` was answered.
    Resume {
        /// The session.
        session: SessionId,
        /// The `Last-Event-ID` sent.
        last_event_id: EventId,
        /// The stream.
        stream: Option<StreamNo>,
        /// What the stream's end meant.
        outcome: ResumeOutcome,
        /// The answer was not a replay, yet the server's store held every event after the id
        /// in a log of this session's own streams (`Server::holds`): what retention kept, the
        /// lookup missed. Set only then, so other traces keep their bytes. The conditions judge
        /// reads it to tell an event the server no longer held (condition 2) from one it did.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        held: bool,
        /// The answer was not a replay, and a log of this session's own streams issued the id
        /// but no longer holds every event after it: it evicted them. Here are the bounds its
        /// retention is configured with, so that the conditions judge can tell an eviction its
        /// bounds allow (condition 2: the outage outlasted them) from one inside them (the
        /// server's bug). Set only then, so other traces keep their bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        evicted: Option<RetentionBound>,
        /// Another connection still claimed the stream, and the server kept it there: it refused
        /// the resume before any replay (`resume_while_attached = reject409`, the Go SDK; its
        /// answer says nothing of the id: `held` then tells what the store kept), or sent the
        /// replay and ended the resuming connection (`replay-and-close`, Python). Set only then,
        /// so other traces keep their bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        claimed_by: Option<ConnId>,
        /// The stream the resume named had ended (its response written, or its work stopped):
        /// `server.finished_resume` says whether the connection ends after the replay. Set only
        /// then, so other traces keep their bytes.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        finished: bool,
    },
    /// A request was refused (404 unknown session, 400 missing header, 409 second GET, ...).
    Rejected {
        /// The connection.
        conn: ConnId,
        /// The HTTP status.
        status: Status,
        /// The session.
        session: Option<SessionId>,
    },
    /// A request was refused after its `200 text/event-stream` head had been committed (a
    /// framework that writes the head before the handler runs: Ktor's `sse {}`), so the refusal
    /// reached the client as an event stream that ended at once with no event; `status` is the
    /// refusal the server itself logged. A second standalone `GET` while the first is still
    /// registered (`second_get = empty-closed`, kotlin-sdk#715): the first stays registered.
    RefusedAfterHead {
        /// The connection.
        conn: ConnId,
        /// The status the server meant (and logged).
        status: Status,
        /// The session.
        session: SessionId,
    },
    /// The connection carrying a request's stream ended on a server whose policy says a
    /// disconnect cancels (`ServerPolicy::disconnect_cancels`): the client ended the work, but
    /// the handler ignored the cancellation and runs on (`disconnect_cancel_ignored`). An
    /// honest server records `ToolEnded { end: Disconnected }` instead.
    CancelIgnored {
        /// The session.
        session: SessionId,
        /// The JSON-RPC request id.
        request: RequestId,
        /// The application's logical call.
        call: CallKey,
    },
    /// A tool execution ended.
    ToolEnded {
        /// The session.
        session: SessionId,
        /// The JSON-RPC request id.
        request: RequestId,
        /// The application's logical call.
        call: CallKey,
        /// How it ended.
        end: ToolEnd,
    },
    /// The server process exited on the request on `conn`, which it could not parse
    /// (`on_protocol_error = restart-process`), or which was a second standalone `GET` (`cause:
    /// second-get`, `second_get = restart-process`): `ToolEnded { lost }` and `SessionEnded {
    /// process-exit }` follow for what it held, then the next process's `ServerStart`.
    ProcessExit {
        /// The connection of the request.
        conn: ConnId,
        /// The session the request named, if any.
        session: Option<SessionId>,
        /// What it exited on; left out of traces for a request it could not parse.
        #[serde(default, skip_serializing_if = "is_default_cause")]
        cause: ExitCause,
    },
    /// The server process started; `epoch` counts its incarnations from 0.
    ServerStart {
        /// Restarts before this one.
        epoch: u32,
        /// Its event store is one for every session, keyed by the request's JSON-RPC id
        /// (`store = "shared-by-request-id"`): one session's resume or fresh `GET` can be handed
        /// another's events. What a session was handed is then the store's scope (condition 3),
        /// not the server's slip.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        sessions_share_store: bool,
        /// The bounds and timers of its profile that `profile-conformance` checks it kept.
        #[serde(default, skip_serializing_if = "ServerBounds::is_none")]
        bounds: ServerBounds,
    },

    // --- application: everything it was handed, in order ---
    /// The application issued a tool call.
    AppCall {
        /// The application's logical call.
        call: CallKey,
        /// The tool's name.
        tool: String,
        /// Whether running it twice is harmless.
        idempotent: bool,
    },
    /// A progress event or notification was handed to the application.
    AppEvent {
        /// The session.
        session: SessionId,
        /// The id of the event it came in, if any.
        id: Option<EventId>,
        /// The application's logical call.
        call: Option<CallKey>,
        /// The message.
        message: ServerMessage,
    },
    /// The application was told events may be missing: those after `after` up to and including
    /// `head` on the stream `head` belongs to (all of the stream before `head` if `after` is None).
    AppGap {
        /// The session.
        session: SessionId,
        /// The application's logical call.
        call: Option<CallKey>,
        /// The last event id the client saw, if any.
        after: Option<EventId>,
        /// The newest event that may be missing.
        head: EventId,
    },
    /// A call's result was handed over.
    AppResult {
        /// The application's logical call.
        call: CallKey,
        /// The session.
        session: SessionId,
        /// The id of the event it came in, if any.
        id: Option<EventId>,
    },
    /// A call failed with an error the application can act on.
    AppError {
        /// The application's logical call.
        call: CallKey,
        /// The error text.
        error: String,
    },
    /// The application was told the call may or may not have run.
    AppUnknownOutcome {
        /// The application's logical call.
        call: CallKey,
        /// Why.
        reason: String,
    },
    /// The application was told the session ended (and events of it may be lost).
    AppSessionLost {
        /// The session.
        session: SessionId,
    },
    /// The application started a new session on purpose (its reaction to a failed call,
    /// `on_error = reinitialize-reissue`) while its client held `session`, which the client
    /// forgets without a `DELETE`: the server keeps it until it expires.
    AppReinitialize {
        /// The session the client held and let go.
        session: SessionId,
    },
    /// The application was told the client gave up the standalone stream of `session`: events
    /// stored on it after `after` (all of them if `None`) may never reach it.
    AppStreamLost {
        /// The session.
        session: SessionId,
        /// The last event id the client saw on the stream, if any.
        after: Option<EventId>,
    },

    // --- protocol eras and the Tasks extension (`crate::era`, `crate::tasks`) ---
    /// The server served a request under an era: `session` is the legacy session it was served
    /// in (a modern request has none, `era-consistent`), `ignored` the legacy headers a modern
    /// request carried and the server ignored.
    EraServed {
        /// The exchange.
        conn: ConnId,
        /// The JSON-RPC request id.
        request: RequestId,
        /// The era.
        era: crate::era::Era,
        /// The session it was served in, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<SessionId>,
        /// Legacy headers ignored by a modern request.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        ignored: Vec<crate::era::IgnoredHeader>,
    },
    /// The server refused a request before any method ran (a 400 or 405 of the era rules).
    EraRefused {
        /// The exchange.
        conn: ConnId,
        /// Why.
        refusal: crate::era::Refusal,
    },
    /// The client settled on an era for its server (`probed`: after a probe).
    EraChosen {
        /// The era.
        era: crate::era::Era,
        /// Whether a probe decided it.
        probed: bool,
    },
    /// The server answered a call with a `CreateTaskResult`: the task exists from here on.
    TaskCreated {
        /// The task.
        task: crate::tasks::TaskId,
        /// The call it runs.
        call: CallKey,
        /// The replica whose store holds it.
        replica: u32,
        /// Its TTL in µs (`None`: unlimited).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ttl_us: Option<u64>,
    },
    /// The client received a task's id (the `CreateTaskResult` arrived).
    TaskIdReceived {
        /// The task.
        task: crate::tasks::TaskId,
        /// The call.
        call: CallKey,
    },
    /// The client no longer holds a task's id (a restart without durable ids, or it gave up).
    TaskIdForgotten {
        /// The task.
        task: crate::tasks::TaskId,
    },
    /// A task's work asked its client for input: the task is `input_required` and its work
    /// waits for a `tasks/update`.
    TaskInputRequired {
        /// The task.
        task: crate::tasks::TaskId,
    },
    /// A `tasks/update` brought the input: the task is `working` again and its work goes on.
    TaskInputReceived {
        /// The task.
        task: crate::tasks::TaskId,
    },
    /// A task's work ended with a terminal status (`failed` for an SDK's abort at its TTL).
    TaskEnded {
        /// The task.
        task: crate::tasks::TaskId,
        /// The terminal status.
        status: crate::tasks::TaskStatus,
    },
    /// A store removed a task's record (expiry); `work_running`: its work runs on with no record.
    TaskRecordRemoved {
        /// The task.
        task: crate::tasks::TaskId,
        /// Whether its work still runs.
        work_running: bool,
        /// The record went with the store itself: the process that held a store of its own
        /// ended (a restart), not the expiry rule. Absent otherwise.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        lost: bool,
    },
    /// The application got a task's outcome (its terminal status, the result inline).
    AppTaskOutcome {
        /// The task.
        task: crate::tasks::TaskId,
        /// The call.
        call: CallKey,
        /// The terminal status seen.
        status: crate::tasks::TaskStatus,
    },
    /// The application was told a task is lost (its poll got `-32602`, or its TTL passed).
    AppTaskLost {
        /// The task.
        task: crate::tasks::TaskId,
        /// The call.
        call: CallKey,
    },

    // --- `subscriptions/listen` (`subscriptions.rs`) ---
    /// A server process published a change notification to the listen streams open on it
    /// (`listeners` of them; none: it reached nobody).
    ChangeEmitted {
        /// The change's id.
        change: String,
        /// How many listen streams it was written to.
        listeners: u32,
    },
    /// A change another replica emitted reached this process's listen streams through a shared
    /// bus (`server.subscriptions.bus = shared`), `listeners` of them.
    ChangeRelayed {
        /// The change's id.
        change: String,
        /// How many listen streams it was written to here.
        listeners: u32,
    },
    /// The client's listen stream was acknowledged on `conn`: the subscription is open.
    ListenOpen {
        /// The exchange.
        conn: ConnId,
        /// The subscription (the request's id).
        subscription: RequestId,
    },
    /// The application was handed a change notification.
    AppChange {
        /// The change's id.
        change: String,
    },
    /// The application was told its subscription ended without the server's graceful result
    /// (python `SubscriptionLost`, rmcp `SubscriptionEnd::Abrupt`): it re-listens and refetches.
    AppSubscriptionLost {
        /// Why, in words.
        reason: String,
    },

    // --- faults and the run ---
    /// A planned fault was applied.
    Fault {
        /// The fault, in words.
        fault: String,
    },
    /// A black hole (`fault.blackhole`) caught a client's connections to the load balancer: from
    /// here on each is dead for good, its bytes lost both ways, and neither end is told (no end,
    /// no reset). Recorded by the fault injector, stamped with the client, after the fault's own
    /// step, when it caught something; or (`connect`) when the client's connect for an exchange
    /// gets no answer while the hole is open: its SYNs go unanswered until one is sent after the
    /// hole closes (the exchange is late) or the connect times out.
    BlackHoled {
        /// The client's connections in flight that it caught (with `connect`: the one exchange
        /// whose connect it swallowed).
        conns: Vec<ConnId>,
        /// Kept-alive connections it caught idle in the client's pool (`client.http.keep_alive`),
        /// which a later request may be sent on.
        #[serde(default, skip_serializing_if = "is_zero_u32")]
        idle: u32,
        /// It swallowed the connect of the exchange in `conns`, rather than catching an open
        /// connection.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        connect: bool,
    },
    /// Faults stop here and the network is healed: every call must resolve by `deadline`.
    Liveness {
        /// When every call must have resolved, in µs.
        deadline: u64,
    },
    /// The run's bounds an oracle needs besides the steps, recorded at the start of a run whose
    /// scenario departs from their defaults (a trace without one has the defaults).
    Bounds {
        /// The most stream reconnects a logical client may make in any hour of the run
        /// (`bounded-reconnects`; default [`DEFAULT_MAX_RECONNECTS_PER_HOUR`]).
        #[serde(default = "default_max_reconnects_per_hour")]
        max_reconnects_per_hour: u32,
        /// The longest an event stored while a connection to its reader was open may take to
        /// reach the application, in µs (`timely-delivery`); `None`: the default
        /// [`DEFAULT_MAX_DELIVERY_DELAY_US`]. Written only when set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_delivery_delay_us: Option<u64>,
    },
    /// Final state, recorded when the run stops.
    RunEnd {
        /// The session the (first) client holds.
        client_session: Option<SessionId>,
        /// The sessions the server still knows.
        server_sessions: Vec<SessionId>,
        /// The sessions held by the clients after the first (clients 1..N), in client order;
        /// empty in a single-client run.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        other_client_sessions: Vec<Option<SessionId>>,
    },
}

impl StepKind {
    /// The connection (or exchange) a step names, for the kinds that name one; `None` for the
    /// others. The recorder renames a balancer's or server's connection through it, so that a
    /// multi-replica trace names each connection as the client does.
    pub fn conn_mut(&mut self) -> Option<&mut ConnId> {
        use StepKind::*;
        match self {
            Send { conn, .. }
            | Response { conn, .. }
            | Event { conn, .. }
            | Comment { conn }
            | Json { conn, .. }
            | ConnEnd { conn, .. }
            | ConnReused { conn, .. }
            | HttpResent { conn, .. }
            | ClientTimedOut { conn, .. }
            | LbIdleCut { conn, .. }
            | LbLifetimeCut { conn, .. }
            | LbUpstreamKept { conn, .. }
            | LbRouted { conn, .. }
            | LbAnswered { conn, .. }
            | LbTimedOut { conn, .. }
            | LbGaveUp { conn }
            | LbFlushed { conn, .. }
            | LbHolding { conn, .. }
            | LbDiscarded { conn, .. }
            | LbHeaderDropped { conn, .. }
            | LbResponseHeaderDropped { conn, .. }
            | LbUpstreamReused { conn, .. }
            | LbResent { conn, .. }
            | Rejected { conn, .. }
            | ProcessExit { conn, .. }
            | ServerClosedStream { conn, .. }
            | EraServed { conn, .. }
            | EraRefused { conn, .. } => Some(conn),
            _ => None,
        }
    }

    /// True for the steps that make up the application's view.
    pub fn is_app(&self) -> bool {
        matches!(
            self,
            StepKind::AppCall { .. }
                | StepKind::AppEvent { .. }
                | StepKind::AppGap { .. }
                | StepKind::AppResult { .. }
                | StepKind::AppError { .. }
                | StepKind::AppUnknownOutcome { .. }
                | StepKind::AppSessionLost { .. }
                | StepKind::AppReinitialize { .. }
                | StepKind::AppStreamLost { .. }
                | StepKind::AppChange { .. }
                | StepKind::AppSubscriptionLost { .. }
        )
    }

    /// The call a step resolves, if it resolves one.
    pub fn resolves(&self) -> Option<CallKey> {
        match self {
            StepKind::AppResult { call, .. }
            | StepKind::AppError { call, .. }
            | StepKind::AppUnknownOutcome { call, .. }
            // A call answered with a task ends when the task's outcome, or its loss, reaches the
            // application.
            | StepKind::AppTaskOutcome { call, .. }
            | StepKind::AppTaskLost { call, .. } => Some(*call),
            _ => None,
        }
    }

    /// Whether the call this step resolves ([`StepKind::resolves`]) ended with its result: a
    /// result, or a task that completed. Anything else is a failure or an unknown outcome, which
    /// an application may issue again (`on_error`).
    pub fn resolves_with_result(&self) -> bool {
        matches!(
            self,
            StepKind::AppResult { .. } | StepKind::AppTaskOutcome { status: crate::tasks::TaskStatus::Completed, .. }
        )
    }
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// The delivery bound of `timely-delivery` when a trace sets none: 5 s.
pub const DEFAULT_MAX_DELIVERY_DELAY_US: u64 = 5_000_000;

/// The reconnect bound of a trace with no `Bounds` step: 30 an hour, one every two minutes on
/// average. Healthy runs of the SDK pairs re-attach nothing in an hour (each server's keep-alive
/// holds its streams open through a 60 s idle balancer: docs/model.md, "Reconnect churn"), so
/// the bound leaves room for the few re-attachments a healed fault causes, and a stream cut at
/// every idle timeout for want of keep-alives (60 an hour) goes over it.
pub const DEFAULT_MAX_RECONNECTS_PER_HOUR: u32 = 30;

fn default_max_reconnects_per_hour() -> u32 {
    DEFAULT_MAX_RECONNECTS_PER_HOUR
}

/// A whole trace in memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The first line.
    pub header: Header,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Absent while recording, or in a truncated file.
    pub footer: Option<Footer>,
}

/// Why a file is not a readable trace.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TraceError {
    #[error("the file is empty")]
    /// The text is empty.
    Empty,
    #[error("line 1 is not an mcpsim trace header: {0}")]
    /// The first line is not a trace header.
    NotATrace(String),
    #[error(
        "trace schema {found} is not the schema {expected} this mcpsim reads (recorded by another version: \
         `mcpsim replay --rerecord FILE` records it again from its header)"
    )]
    /// A schema this version cannot read.
    Schema {
        /// What it holds.
        found: u32,
        /// What the trace should hold.
        expected: u32,
    },
    #[error("line {line}: {problem}")]
    /// A line that does not parse.
    BadLine {
        /// The line number, from 1.
        line: usize,
        /// What is wrong.
        problem: String,
    },
    #[error("the trace has no footer line (truncated?)")]
    /// The footer is missing.
    NoFooter,
    #[error("the footer says {expected} steps but the file has {found}")]
    /// The footer counts another number of steps.
    StepCount {
        /// What the trace should hold.
        expected: u64,
        /// What it holds.
        found: u64,
    },
    #[error("the footer digest {expected} does not match the steps ({found}): the file was edited or damaged")]
    /// The footer's digest does not match.
    Digest {
        /// What the trace should hold.
        expected: String,
        /// What it holds.
        found: String,
    },
}

/// The text of one step line (no newline).
pub fn step_line(step: &Step) -> String {
    serde_json::to_string(step).expect("steps hold only strings, numbers and enums: always serializable")
}

/// FNV-1a 64 over bytes, continued from `state` (start with [`FNV_OFFSET`]).
pub fn fnv1a(mut state: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        state ^= u64::from(*b);
        state = state.wrapping_mul(0x0000_0100_0000_01b3);
    }
    state
}

/// The FNV-1a 64 offset basis.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

impl Trace {
    /// A trace with no steps yet.
    pub fn new(seed: u64, scenario: impl Into<std::sync::Arc<serde_json::Value>>) -> Self {
        Trace {
            header: Header {
                format: "mcpsim-trace".to_string(),
                schema: SCHEMA_VERSION,
                mcpsim_version: env!("CARGO_PKG_VERSION").to_string(),
                seed,
                scenario: scenario.into(),
            },
            steps: Vec::new(),
            footer: None,
        }
    }

    /// Digest and count of the step lines.
    pub fn digest(&self) -> (String, u64) {
        let mut h = FNV_OFFSET;
        for s in &self.steps {
            h = fnv1a(h, step_line(s).as_bytes());
            h = fnv1a(h, b"\n");
        }
        (format!("{h:016x}"), self.steps.len() as u64)
    }

    /// Seals the trace with its verdict.
    pub fn finish(&mut self, verdict: Vec<ViolationRecord>) {
        self.footer = Some(Footer { verdict, steps: self.steps.len() as u64 });
    }

    /// The JSON Lines text; the footer line gets the digest of the step lines written before it.
    pub fn to_jsonl(&self) -> String {
        let mut out = serde_json::to_string(&self.header).expect("header is plain data");
        out.push('\n');
        let mut digest = FNV_OFFSET;
        for s in &self.steps {
            let start = out.len();
            out.push_str(&step_line(s));
            out.push('\n');
            digest = fnv1a(digest, &out.as_bytes()[start..]);
        }
        if let Some(f) = &self.footer {
            let line = FooterLine { verdict: f.verdict.clone(), steps: f.steps, digest: format!("{digest:016x}") };
            out.push_str(&serde_json::to_string(&line).expect("footer is plain data"));
            out.push('\n');
        }
        out
    }

    /// Reads only the header line of a trace of any schema: what re-recording an old trace needs
    /// (its seed and scenario).
    pub fn parse_header(text: &str) -> Result<Header, TraceError> {
        let first = text.lines().find(|l| !l.trim().is_empty()).ok_or(TraceError::Empty)?;
        let header: Header = serde_json::from_str(first).map_err(|e| TraceError::NotATrace(e.to_string()))?;
        if header.format != "mcpsim-trace" {
            return Err(TraceError::NotATrace(format!("format is {:?}", header.format)));
        }
        Ok(header)
    }

    /// Reads a trace, checking header, schema, footer, step count and digest.
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
        let (_, first) = lines.next().ok_or(TraceError::Empty)?;
        let header: Header = serde_json::from_str(first).map_err(|e| TraceError::NotATrace(e.to_string()))?;
        if header.format != "mcpsim-trace" {
            return Err(TraceError::NotATrace(format!("format is {:?}", header.format)));
        }
        if header.schema != SCHEMA_VERSION {
            return Err(TraceError::Schema { found: header.schema, expected: SCHEMA_VERSION });
        }
        let rest: Vec<(usize, &str)> = lines.collect();
        let Some(((last_no, last), body)) = rest.split_last() else {
            return Err(TraceError::NoFooter);
        };
        let footer: FooterLine = match serde_json::from_str(last) {
            Ok(f) => f,
            Err(_) if serde_json::from_str::<Step>(last).is_ok() => return Err(TraceError::NoFooter),
            Err(e) => return Err(TraceError::BadLine { line: last_no + 1, problem: e.to_string() }),
        };
        let mut steps = Vec::with_capacity(body.len());
        for (no, line) in body {
            let step: Step =
                serde_json::from_str(line).map_err(|e| TraceError::BadLine { line: no + 1, problem: e.to_string() })?;
            steps.push(step);
        }
        let trace = Trace { header, steps, footer: None };
        let (digest, count) = trace.digest();
        if count != footer.steps {
            return Err(TraceError::StepCount { expected: footer.steps, found: count });
        }
        if digest != footer.digest {
            return Err(TraceError::Digest { expected: footer.digest, found: digest });
        }
        Ok(Trace { footer: Some(Footer { verdict: footer.verdict, steps: footer.steps }), ..trace })
    }

    /// The steps of the application's view, in order.
    pub fn app_view(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(|s| s.kind.is_app())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Request;

    fn sample() -> Trace {
        let mut t = Trace::new(7, serde_json::json!({"scenario": "long-tool"}));
        t.steps.push(Step {
            seq: 0,
            t: 1_000,
            actor: Actor::Client,
            client: None,
            replica: None,
            conn_client: None,
            kind: StepKind::Send { conn: ConnId(1), request: Request::initialize(RequestId(1), "app") },
        });
        t.steps.push(Step {
            seq: 1,
            t: 2_000,
            actor: Actor::App,
            client: None,
            replica: None,
            conn_client: None,
            kind: StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: false },
        });
        t.steps.push(Step {
            seq: 2,
            t: 3_000,
            actor: Actor::Server,
            client: None,
            replica: None,
            conn_client: None,
            kind: StepKind::EventStored {
                session: SessionId::from("0-1"),
                stream: StreamNo(1),
                seq: 4,
                id: EventId::from("1-4"),
                call: Some(CallKey(0)),
                message: None,
            },
        });
        t.finish(vec![]);
        t
    }

    /// Every step kind must survive the trip through its text: flattening a kind into `Step`
    /// fails at read time if a kind's field clashes with `step`, `t` or `actor`.
    #[test]
    fn no_step_kind_field_clashes_with_the_step_envelope() {
        let text = sample().to_jsonl();
        assert!(Trace::parse(&text).is_ok(), "{:?}", Trace::parse(&text));
    }

    #[test]
    fn a_trace_round_trips_through_its_text() {
        let t = sample();
        let text = t.to_jsonl();
        assert_eq!(Trace::parse(&text), Ok(t.clone()));
        assert_eq!(text.lines().count(), 5);
        assert!(text.lines().nth(1).unwrap().contains(r#""kind":"send""#));
    }

    #[test]
    fn the_client_index_is_written_only_when_set_and_never_clashes_with_a_kind_field() {
        let plain = &sample().steps[0];
        assert!(!step_line(plain).contains("client_index"), "{}", step_line(plain));
        let mut t = Trace::new(7, serde_json::json!({}));
        t.steps.push(Step {
            seq: 0,
            t: 1,
            actor: Actor::Server,
            client: None,
            replica: None,
            conn_client: None,
            kind: StepKind::SessionCreated { session: SessionId::from("s"), client: "app-1".into() },
        });
        t.steps.push(Step { client: Some(1), ..sample().steps[1].clone() });
        t.steps.push(Step {
            seq: 2,
            t: 2,
            actor: Actor::Run,
            client: None,
            replica: None,
            conn_client: None,
            kind: StepKind::RunEnd {
                client_session: None,
                server_sessions: vec![],
                other_client_sessions: vec![Some(SessionId::from("s"))],
            },
        });
        t.finish(vec![]);
        let text = t.to_jsonl();
        assert!(text.contains(r#""actor":"app","client_index":1,"kind":"app-call""#), "{text}");
        assert!(text.contains(r#""other_client_sessions":["s"]"#), "{text}");
        assert_eq!(Trace::parse(&text), Ok(t));
        let run_end = r#"{"step":0,"t":0,"actor":"run","kind":"run-end","client_session":null,"server_sessions":[]}"#;
        let step: Step = serde_json::from_str(run_end).unwrap();
        assert_eq!(step_line(&step), run_end, "a single-client RunEnd reads and writes as before");
    }

    #[test]
    fn the_replica_and_connection_stamps_are_written_only_when_set_and_never_clash_with_a_kind_field() {
        let routed = StepKind::LbRouted { conn: ConnId(4), replica: 2, session: None, hop: None };
        let plain = Step::new(0, 1, Actor::Lb, routed.clone());
        assert_eq!(step_line(&plain), r#"{"step":0,"t":1,"actor":"lb","kind":"lb-routed","conn":4,"replica":2}"#);
        let mut t = Trace::new(7, serde_json::json!({}));
        t.steps.push(Step { conn_client: Some(1), ..plain });
        let created = StepKind::TaskCreated {
            task: crate::tasks::TaskId("t1".into()),
            call: CallKey(0),
            replica: 2,
            ttl_us: None,
        };
        t.steps.push(Step { replica: Some(2), ..Step::new(1, 2, Actor::Server, created) });
        t.finish(vec![]);
        let text = t.to_jsonl();
        assert!(text.contains(r#""actor":"lb","conn_client":1,"kind":"lb-routed","conn":4,"replica":2"#), "{text}");
        assert!(text.contains(r#""actor":"server","replica_index":2,"kind":"task-created""#), "{text}");
        assert_eq!(Trace::parse(&text), Ok(t));
    }

    #[test]
    fn conn_mut_reaches_the_connection_of_the_balancer_and_server_kinds() {
        let mut cut = StepKind::LbIdleCut { conn: ConnId(3), idle_us: 1, hop: None };
        *cut.conn_mut().unwrap() = ConnId(9);
        assert_eq!(cut, StepKind::LbIdleCut { conn: ConnId(9), idle_us: 1, hop: None });
        let mut refused = StepKind::Rejected { conn: ConnId(1), status: Status(404), session: None };
        assert_eq!(refused.conn_mut().copied(), Some(ConnId(1)));
        assert_eq!(
            StepKind::ServerStart { epoch: 0, sessions_share_store: false, bounds: Default::default() }.conn_mut(),
            None
        );
    }

    #[test]
    fn an_actor_reads_as_its_trace_spelling() {
        let actors = [Actor::Client, Actor::App, Actor::Lb, Actor::Server, Actor::Fault, Actor::Run];
        let shown: Vec<String> = actors.iter().map(Actor::to_string).collect();
        assert_eq!(shown, ["client", "app", "lb", "server", "fault", "run"]);
        for actor in actors {
            assert_eq!(serde_json::to_value(actor).unwrap(), serde_json::Value::String(actor.to_string()));
        }
    }

    #[test]
    fn a_bounds_step_without_a_reconnect_bound_has_the_default_one() {
        let line = r#"{"step":0,"t":0,"actor":"run","kind":"bounds","max_delivery_delay_us":7}"#;
        let step: Step = serde_json::from_str(line).unwrap();
        let bounds = StepKind::Bounds {
            max_reconnects_per_hour: DEFAULT_MAX_RECONNECTS_PER_HOUR,
            max_delivery_delay_us: Some(7),
        };
        assert_eq!(step.kind, bounds);
        assert_eq!(DEFAULT_MAX_RECONNECTS_PER_HOUR, 30);
    }

    #[test]
    fn the_digest_is_fnv1a_64_as_published() {
        // The published FNV-1a 64 test vectors: recorded traces carry digests made this way.
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0x8594_4171_f739_67e8);
        // Continued from a state: the bytes of one call then the next, as one run over both.
        assert_eq!(fnv1a(fnv1a(FNV_OFFSET, b"foo"), b"bar"), fnv1a(FNV_OFFSET, b"foobar"));
    }

    #[test]
    fn damaged_traces_are_refused_with_a_reason() {
        let text = sample().to_jsonl();
        assert_eq!(Trace::parse(""), Err(TraceError::Empty));
        assert!(matches!(Trace::parse("{\"a\":1}\n"), Err(TraceError::NotATrace(_))));
        let truncated: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
        assert_eq!(Trace::parse(&truncated), Err(TraceError::NoFooter));
        let edited = text.replace("\"pay\"", "\"refund\"");
        assert!(matches!(Trace::parse(&edited), Err(TraceError::Digest { .. })));
        let garbage = text.replacen("\"step\":1", "\"step\":\"x\"", 1);
        assert!(matches!(Trace::parse(&garbage), Err(TraceError::BadLine { line: 3, .. })));
        let schema = text.replacen(&format!("\"schema\":{SCHEMA_VERSION}"), "\"schema\":99", 1);
        assert!(matches!(Trace::parse(&schema), Err(TraceError::Schema { found: 99, .. })));
        // The header alone reads from any trace, blank lines before it skipped.
        assert_eq!(Trace::parse_header(&text).map(|h| h.seed), Ok(sample().header.seed));
        assert_eq!(Trace::parse_header(&format!("\n  \n{text}")).map(|h| h.seed), Ok(sample().header.seed));
        assert_eq!(Trace::parse_header("\n\n"), Err(TraceError::Empty));
        // A footer that is neither a footer nor a step is named by its line number.
        let lines = text.lines().count();
        let footer = format!(
            "{}{{\"verdict\":7}}\n",
            text.lines().take(lines - 1).map(|l| format!("{l}\n")).collect::<String>()
        );
        assert_eq!(
            Trace::parse(&footer).map_err(|e| matches!(e, TraceError::BadLine { line, .. } if line == lines)),
            Err(true)
        );
    }
}
