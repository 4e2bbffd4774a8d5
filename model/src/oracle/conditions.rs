//! The design note's four conditions of validity, judged on a trace from what happened.
//!
//! The note ("Condition of Validity") says "disconnect ≠ termination" holds only if all of:
//! (1) the client persists `Last-Event-ID` durably across a restart, (2) the server retains what
//! a session needs for longer than the client's worst-case reconnect, (3) the server refuses a
//! `Last-Event-ID` it cannot honour explicitly, and (4) the client tells the failure classes apart
//! (reset/5xx → resume, 404 → re-initialize, 409/410 → report a gap). A violation where all four
//! held is a bug of a client or a server; one that follows a broken condition is the expected
//! price of breaking it. This module reads the steps (not the scenario's settings) and finds
//! every [`Breach`]: when a condition broke, and how, in words.
//!
//! What counts as a breach, per condition:
//! 1. A client process restarted (`ClientStart` after the first) without restoring its durable
//!    state, after it had held a session or while the application had calls in flight (which
//!    the restart forgot); or a stream broke before the id of an event the server had stored in
//!    the session reached the client, which then had no `Last-Event-ID` to persist (the decision
//!    procedure's "never persisted": the note, "resumption is impossible and every disconnect is
//!    effectively a new stream").
//! 2. The server could not honour a resume because it no longer held the event (a 409/410, a
//!    silent head or a replay from the oldest event, for an id the session had stored); a request
//!    on a session the client still held was answered 404 (the session expired, was lost in a
//!    restart, or is not held where the request landed); or the client gave up while cut off (its
//!    reconnect attempts spent, or its request timeout reached with no answer since a break), or
//!    started a new session after its `DELETE` of the old one never got through (refused, cut
//!    before any answer or answered 5xx, its attempts spent): the pair's windows were shorter
//!    than the actual outage; or a `DELETE` was answered (404 or 2xx) where its session is not
//!    held, which lives on. For tasks (ext-tasks), whose TTL is their retention and runs from
//!    creation: a task aborted or its record deleted at its TTL
//!    while its work still ran, a result evicted before its client read it, or a `tasks/*`
//!    request answered "not found" (not held where it landed, or gone).
//! 3. The server answered an id it could not honour without refusing it (silent head, replay
//!    from the oldest event, a replay from a store shared across sessions), or handed a session
//!    an event another session stored in a store they share (a stream whose numbering skips, or
//!    a server that said at its start that its store is shared):
//!    the store's scope, not the client, decided what the session saw.
//! 4. The client re-initialized after a transport fault (reset, refused connection, 5xx), kept a
//!    session after a 404, or resumed after a 409/410 as if nothing was lost; or its application
//!    issued a non-idempotent call again after it was told that call's outcome was unknown (the
//!    note: "reconcile any in-flight requests as *unknown outcome* (do not blindly retry
//!    non-idempotent tools)"). The client told the class apart; the application did not act by it.
//!    So does an application that starts a new session on purpose while its client still holds
//!    one no 404 ended (`on_error = reinitialize-reissue`): the note re-initializes on a 404 only,
//!    and the session left behind, never deleted, is orphaned.
//!
//! Besides the four, the note's scope: a session deleted by someone other than its client (an
//! operator's `DELETE`) was terminated, not disconnected ([`Condition::Terminated`]).
//!
//! And what no condition covers: the server itself ending a session its client still held, on
//! no request of anyone's ([`Condition::ServerEnded`]: a write that failed on a connection whose
//! client was gone, a process that exited on one request it could not parse, an idle expiry
//! sooner after a request it answered than the idle TTL its `session-ended` step names, or a task
//! record its expiry rule removed before the TTL the task was created with). A violation
//! after it is a server bug ([`Explanation::Bug`]), whatever else broke. So is a resume the
//! server answered as unhonourable while its store still held every event after the id (the
//! `resume` step's `held`, read from the store beside the server's own lookup): retention kept
//! what the client needed, and neither condition 2 nor 3 broke ([`Condition::ServerMissed`]).
//! And so is one it answered as evicted although its store's own bounds still covered what it
//! evicted (the `resume` step's `evicted` names the bounds: the event was younger than the time
//! window, and fewer than the count bound were stored after it): condition 2 is retention *as
//! configured* outlasting the outage, and a store that drops events inside its own bounds broke
//! it by a bug, not a setting. So is a resume that sends again the event its `Last-Event-ID`
//! named ([`Condition::ServerRepeated`]), and one event id given to two events of a session
//! ([`Condition::ServerIdReused`]); each costs only the event it repeats or hides. So is a resume
//! whose replay carries events another stream of the session stored
//! ([`Condition::ServerCrossStream`]), costing what the session's streams carried.
//!
//! Nor is it a broken condition when a client breaks one its own policy keeps: a client that
//! keeps its state durably and restarts without it (condition 1), or one that runs the decision
//! procedure and does not act by class, or ends a call's stream for good and never settles the
//! call (condition 4). Each `client-start` step says which its policy keeps; such a breach is
//! [`Breach::promised`], and what it causes is a bug of the client ([`Explanation::Bug`]). Only
//! the library's own acts count: a stream broken before its first id, a call re-issued, do not.
//!
//! A violation is *explained* by the breaches at or before its time (a breach after it cannot
//! have caused it) that can cause that invariant's violation ([`can_cause`]: what each broken
//! condition can and cannot cause), of its own client or of none, and of its own session or of
//! none: what a resume of one session was answered, a 404 for it or a `DELETE` of it that did
//! not end it ([`Breach::session`]) costs nothing of another session's — unless a server said
//! its store is one for every session (`server-start`'s `sessions_share_store`), where one session's
//! answer can hand out or skip another's events. (A second session is the other exception: what
//! made the client start it concerns the old one.) [`Conditions::explain`] says which, or that
//! all four held, or that what broke cannot cause it.

use crate::client::ERR_TRANSPORT_CLOSED;
use crate::config::{RequestHeader, ResponseHeader};
use crate::decision::NextAction;
use crate::http::{ClientMessage, ConnEnd, Method, Status};
use crate::ids::{CallKey, ConnId, EventId, RequestId, SessionId, StreamNo, NO_SESSION};
use crate::time::{format_micros, Instant};
use crate::trace::{
    CloseRule, ExitCause, ResumeOutcome, RetentionBound, SessionEndReason, Step, StepKind, Trace, ViolationRecord,
};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::{InvariantId, Violation};

/// One of the design note's four conditions of validity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Condition {
    /// (1) The client persists `Last-Event-ID` durably across a restart.
    Persisted = 1,
    /// (2) Retention (events and the session) outlasts the client's actual outage.
    Retention = 2,
    /// (3) An id the server cannot honour is refused explicitly.
    Refused = 3,
    /// (4) The client acts by failure class.
    ByClass = 4,
    /// Not a condition but the note's scope: a session ended on purpose by someone other than
    /// its client (an operator's `DELETE`). The note's invariant is "disconnect ≠ termination";
    /// an explicit `DELETE` is a termination, and what it ends is not owed.
    Terminated = 5,
    /// Not a condition either: the server itself ended a session a client still held (or, its
    /// process exiting, every session and running tool), on a transport fact or one malformed
    /// request: `on_failed_write = end-session`, `on_protocol_error = restart-process`. The note's
    /// invariant says a disconnect is no termination; here the server broke it. So it did when it
    /// expired a session as idle inside its own idle TTL, or removed a task's record inside the
    /// TTL the task was created with: its configured retention outlasted the outage, it did not.
    ServerEnded = 6,
    /// Not a condition either: the server still held every event after the `Last-Event-ID` a
    /// client resumed from (the `resume` step's `held`), and answered the id as one it could not
    /// honour (a 409/410, a silent head, a replay from the oldest event, an empty answer). Its
    /// retention kept what the client needed and its lookup missed it: conditions 2 and 3 held,
    /// and what follows is the server's bug. Or it had evicted them inside the bounds its
    /// retention is configured with (the `resume` step's `evicted`): retention as configured
    /// outlasted the outage, and the store did not keep to it.
    ServerMissed = 7,
    /// Not a condition either, and no bug: the server closed a stream's connection itself on a
    /// timer of its settings (`server.close_idle_standalone`, `server.close_request_streams`),
    /// which the spec allows (SEP-1699: it names the `retry` its client comes back after). A
    /// `bounded-reconnects` violation that the re-attachments it asked for account for
    /// (`oracle::churn`: without them the client stays within the bound all run) is that
    /// setting's price, as a short retention is condition 2's. It explains nothing else.
    ServerPaced = 8,
    /// Not a condition either, and no bug: the 2026-07-28 revision's own rule. It keeps nothing
    /// of a request whose stream breaks (no `Last-Event-ID`, no resumption): the request is lost
    /// and its client re-issues it with a new id (`changelog.mdx`: "clients MUST re-issue it").
    /// A call whose attempts keep breaking before its tool can end never resolves: the price of
    /// the intermediary's timeouts against the tool's length, as a short retention is condition
    /// 2's. It explains that (`every-call-resolves`) and the events a request stream without a
    /// session lost when it broke ([`Effect::SessionlessEventLoss`]: "a broken response stream
    /// loses the in-flight request"); a non-idempotent tool run again, or a failure told of work
    /// that ran, stays the client's to answer for.
    RequestLost = 9,
    /// Not a condition either: the server answered a resume by sending again the event the
    /// client's `Last-Event-ID` named. The spec replays what came *after* it ("replay messages
    /// that would have been sent after the last event ID"); a server that includes it (rmcp's
    /// `replay = "from"`) hands the client an event it already has. A bug of the server's, and
    /// what it costs is that one event twice.
    ServerRepeated = 10,
    /// Not a condition either: the server gave one event id to two events of a session (rmcp's
    /// standalone stream numbers its priming event `0` and then its first notification `0`
    /// too). A client that resumes after that id, or is told of a gap after it, cannot have the
    /// second event: it reads as received. A bug of the server's, costing that stream's events.
    ServerIdReused = 11,
    /// Not a condition either: the server dropped the answer to a call, neither stored nor sent
    /// (the `event-dropped` step: TypeScript before 1.30 dropped what a request sent while the
    /// stream it had closed itself had no client attached, typescript-sdk#2151). No client can
    /// resume what was never stored: a bug of the server's, costing that call its answer.
    ServerDropped = 12,
    /// Not a condition either, and no bug of the client or the server: an intermediary held the
    /// response stream back (`lb-flushed`: a hop's response buffering, `lb.hops[i].buffer` and
    /// `flush_interval`, or a held head) and released it later in one go. Events that arrive
    /// minutes late are the proxy's setting's price, as a short retention is condition 2's (nginx
    /// documents `proxy_buffering off` / `X-Accel-Buffering: no` for event streams). It explains
    /// only a late delivery (`timely-delivery`) of its client's.
    ProxyHeld = 13,
    /// Not a condition either: the client ended a call's work (its `DELETE` of the session) and
    /// the server left the tool running, so it ran on to its result or its side effect. Under
    /// `server.delete_running_tool = run-on` that is the server's rule; under `abort-signal`
    /// (TypeScript: a `DELETE` aborts every handler's `AbortSignal`) it is the tool's, which
    /// ignores the signal (`tool.on_abort = ignore`, the default: tool code that never checks
    /// it). The same for a handler that ignored the cancel its server's disconnect rule makes
    /// (`cancel-ignored`), and for a cancel a server without sessions cannot match to a request
    /// (`server.sessionless_cancel = ignore`: a request's id is unique only to its client). A bug
    /// of that party, not of the conditions: it explains only that call's work running on
    /// (`no-abandoned-work`).
    WorkRunOn = 14,
    /// Not a condition either, and no bug of the client or the server: a process's change bus
    /// reaches only its own listen streams (`server.subscriptions.bus = per-process`, every
    /// profile's default: python's `InMemorySubscriptionBus`), so a change one replica emitted
    /// while the client listened on another reached nobody, and no stream ended to tell of it.
    /// The fleet's setting's price, as a short retention is condition 2's (python's advice: a
    /// bus over a shared pub/sub backend, `bus = shared`). It explains only a change
    /// notification lost (`no-silent-notification-loss`) of its client's.
    BusLocal = 15,
    /// Not a condition either: the server answered a client's standalone `GET` `200
    /// text/event-stream` and held it open, yet had no way to put a notification on it: a server
    /// without sessions (`server.sessionless_get = hold-open`, Python's stateless mode) stores each
    /// notification on its implicit context's standalone stream, to which no connection is ever
    /// attached. The client believes it listens; nothing ends to tell the application otherwise. A
    /// bug of the server's (a server that offers no stream answers the `GET` 405: python-sdk#2474,
    /// #3492), costing that stream's notifications (`no-silent-event-loss`).
    ServerHeldOpen = 16,
    /// Not a condition either: the server refused a second standalone `GET` of a session while it
    /// still had the first registered, but only after its `200 text/event-stream` head was
    /// committed (`refused-after-head`: Ktor's `sse {}` writes it before the transport's 409
    /// check, `server.second_get = empty-closed`, kotlin-sdk#715). The client sees an event stream
    /// that ends at once with nothing, takes it for a clean end and comes back, to the same
    /// answer for as long as the first registration lasts, which its client no longer reads. A
    /// bug of the server's, costing the churn of those returns (`bounded-reconnects`) and the
    /// notifications written to the stale registration (`no-silent-event-loss`).
    ServerRefusedAfterHead = 17,
    /// Not a condition either, and no bug of the client or the server: the network dropped the
    /// client's connections without telling either end (a silent black hole, `fault.blackhole`:
    /// a NAT or a stateful firewall that forgot the flow, its packets and RSTs dropped). The
    /// note's decision procedure acts on a close it sees; this one shows none, and only a timer of
    /// the pair's own ends the wait: the client's request timeout, the server's keep-alives
    /// (whose writes into the hole TCP gives up only after its retransmissions, ~15 min), an idle
    /// expiry of the session. What is left waiting for that client — a call never resolved,
    /// events and notifications never delivered, a result stored where nobody reads — is the
    /// price of settings without such a timer, as a short retention is condition 2's. What the
    /// client does once a timer fires (a failure told, a call sent again) stays its own to answer
    /// for (condition 4).
    BlackHole = 18,
    /// Not a condition either: the server answered a resume of one stream with events another
    /// stream of the session had stored after the `Last-Event-ID` (`server.replay_scope =
    /// store`: an event store whose replay walks every event it holds and never compares the
    /// stream, servers#4087's `InMemoryEventStore`). The spec replays what "would have been sent
    /// after the last event ID *on the stream that was disconnected*". The client reads them as
    /// the resumed stream's: events it already had, or gets again when it resumes their own
    /// stream, come twice or out of their order, another request's answer arrives on the wrong
    /// stream, and the client's cursor for the connection now names the other stream, so the next
    /// resume re-attaches that one and the resumed stream's own answer is left where nobody reads
    /// it. A bug of the server's, costing what the streams of that session carried.
    ServerCrossStream = 19,
}

impl Condition {
    /// The number the design note gives it.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// Whether it is a party's own act (the server's bug, or work its rule or its tool left
    /// running), which no setting of the client or the fleet keeps.
    pub fn is_own_act(self) -> bool {
        self.is_server_bug() || self == Condition::WorkRunOn
    }

    /// Whether it is the server's own bug, which no setting of the client or the fleet keeps.
    pub fn is_server_bug(self) -> bool {
        self == Condition::ServerEnded || self.is_stream_bug()
    }

    /// Whether it is a server bug in what one stream of one session carried (a replay missed, an
    /// event repeated, an id given twice, an answer dropped): it keeps to that session even over
    /// a store shared across sessions.
    fn is_stream_bug(self) -> bool {
        matches!(
            self,
            Condition::ServerMissed
                | Condition::ServerRepeated
                | Condition::ServerIdReused
                | Condition::ServerDropped
                | Condition::ServerHeldOpen
                | Condition::ServerRefusedAfterHead
                | Condition::ServerCrossStream
        )
    }

    /// What it is, in a few words: `condition 2 (retention outlasts the outage)`, `a termination`.
    pub fn label(self) -> String {
        let what = match self {
            Condition::Persisted => "the client persists its session and Last-Event-ID",
            Condition::Retention => "retention outlasts the outage",
            Condition::Refused => "an id the server cannot honour is refused",
            Condition::ByClass => "the client acts by failure class",
            Condition::Terminated => return "a termination (a session deleted by someone else)".to_string(),
            Condition::ServerEnded => return "a server bug (a session or task it ended on its own)".to_string(),
            Condition::ServerMissed => {
                return "a server bug (an id its retention owed, answered as unhonourable)".to_string()
            }
            Condition::ServerPaced => {
                return "the server's pacing (streams it closes on a timer, re-attached as it asks)".to_string()
            }
            Condition::RequestLost => {
                return "the 2026-07-28 revision (a request lost with its stream, re-issued)".to_string()
            }
            Condition::ServerRepeated => {
                return "a server bug (a resume that sent again the event its Last-Event-ID named)".to_string()
            }
            Condition::ServerIdReused => return "a server bug (one event id given to two events)".to_string(),
            Condition::ServerDropped => return "a server bug (an answer it neither stored nor sent)".to_string(),
            Condition::ServerHeldOpen => {
                return "a server bug (a standalone GET held open that no notification can reach)".to_string()
            }
            Condition::ServerRefusedAfterHead => {
                return "a server bug (a refusal sent after its 200 head: an event stream that ends at once)"
                    .to_string()
            }
            Condition::ProxyHeld => return "an intermediary's buffering (a proxy held the stream back)".to_string(),
            Condition::WorkRunOn => {
                return "work left running (a tool the client ended, run on by the server's rule or the tool)"
                    .to_string()
            }
            Condition::BusLocal => {
                return "the fleet's change bus (a change on a replica the client does not listen on)".to_string()
            }
            Condition::ServerCrossStream => {
                return "a server bug (a resume that replayed another stream's events)".to_string()
            }
            Condition::BlackHole => {
                return "a silent black hole (connections the network dropped, telling neither end, that no timer of \
                        the pair ended)"
                    .to_string()
            }
        };
        format!("condition {} ({what})", self.number())
    }
}

/// A condition that broke, where and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Breach {
    /// Which condition.
    pub condition: Condition,
    /// The index in `trace.steps` of the step that shows it.
    pub step: usize,
    /// When.
    pub at: Instant,
    /// What happened, in words (`the outage lasted 4m10.000s, retention covered 3m00.000s`).
    pub detail: String,
    /// The logical client whose step (or connection) shows it, or whose session a server's step
    /// ended under it ([`Judge::expired_busy`]); `None` for a fact of the server or the fleet,
    /// which may explain any client's violation.
    pub client: Option<u32>,
    /// The one session whose events or lifetime it concerns (what a resume of it was answered, a
    /// 404 for it, a `DELETE` of it that did not end it), which explains only violations of that
    /// session or of no session (a call's, the run's), and any client's second session; `None`:
    /// any session's (a restart, a give-up, a client's reaction). Over a store shared across
    /// sessions ([`Conditions::sessions_share_store`]) only a missed replay keeps to its session.
    pub session: Option<SessionId>,
    /// Within [`Breach::session`], the one stream whose events it concerns; `None`: any stream's.
    pub stream: Option<StreamNo>,
    /// Within that stream, the one event it concerns (an id given twice costs the event that
    /// got it the second time); `None`: any of the stream's.
    pub event: Option<EventId>,
    /// The one call whose answer it concerns (an answer the server dropped), which explains only
    /// a violation that names that call; `None`: any call's.
    pub call: Option<CallKey>,
    /// The server's own word that the work failed came with it (a task it aborted at its TTL):
    /// the one breach of conditions 1-3 that can tell an application a call failed.
    pub server_failed_work: bool,
    /// The client broke a condition its own policy keeps (its `client-start` says so: durable
    /// state for condition 1, the decision procedure for condition 4): not the price of a
    /// setting but a bug of the client, like the server's own act ([`Condition::ServerEnded`]).
    pub promised: bool,
    /// A task's id never reached its client (its `CreateTaskResult` was lost with the
    /// connection): it costs the task (orphaned, its outcome undelivered), not what the client
    /// told the application of the call or whether it issued the call again.
    pub task_id_lost: bool,
    /// An intermediary still held the frames when the run ended ([`Condition::ProxyHeld`] from
    /// an `lb-holding` step): they never arrived, so it costs what they carried, not only time.
    pub never_released: bool,
    /// A silent black hole ([`Condition::BlackHole`]) caught the connection of a stream of its
    /// client's (the standalone `GET`, a call's `POST`), and the server, never told, still
    /// counted it as that stream's when the client came back: it refused the client's new `GET`
    /// (`409`), or answered its resume as still claimed (the `resume` step's `claimed_by`). The
    /// refusals, and the client's returns after each, are the hole's price too.
    pub kept_claim: bool,
    /// The fields of the server's policy that model this act, where the judge can tell which
    /// (a busy session's expiry: its idle rule), beside those its condition names.
    pub rules: &'static [&'static str],
}

impl Breach {
    /// Whether it is a bug of its own (the server's act, or a client breaking what its policy
    /// keeps) rather than a condition the settings or the network broke.
    pub fn is_bug(&self) -> bool {
        self.condition.is_own_act() || self.promised
    }
}

impl fmt::Display for Breach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.condition {
            Condition::Terminated => write!(f, "a termination: {}", self.detail),
            Condition::WorkRunOn => write!(f, "work left running: {}", self.detail),
            Condition::BusLocal => write!(f, "the fleet's change bus: {}", self.detail),
            Condition::BlackHole => write!(f, "a silent black hole: {}", self.detail),
            c if c.is_server_bug() => write!(f, "a server bug: {}", self.detail),
            Condition::ServerPaced => write!(f, "the server's pacing: {}", self.detail),
            Condition::RequestLost => write!(f, "the 2026-07-28 revision: {}", self.detail),
            Condition::ProxyHeld => write!(f, "an intermediary's buffering: {}", self.detail),
            c if self.promised => {
                write!(f, "a client bug (its policy keeps condition {}): {}", c.number(), self.detail)
            }
            c => write!(f, "condition {}: {}", c.number(), self.detail),
        }
    }
}

/// Every breach of a trace, in trace order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conditions {
    /// The breaches, in step order.
    pub breaches: Vec<Breach>,
    /// Each step's logical client (its own, else its connection's), to tell whose violation a
    /// breach may explain.
    step_clients: Vec<Option<u32>>,
    /// The steps that created a session: a `no-orphaned-session` violation dated at one (a client
    /// got a second live session) is decided there, not by how the run ended.
    creations: BTreeSet<usize>,
    /// A server process said its event store is one for every session (its `server-start`): what
    /// one session was answered may then have cost another's events, so breaches of conditions 2
    /// and 3 are not kept to their session.
    pub sessions_share_store: bool,
    /// The steps of the `bounded-reconnects` violations the server's own close timers account
    /// for ([`Effect::PacedChurn`]).
    paced_churn: BTreeSet<usize>,
    /// The logical client whose application issued each call (its first `app-call`).
    call_clients: BTreeMap<crate::ids::CallKey, Option<u32>>,
    /// In a run of several clients, the client each session is (the first whose request named
    /// it or whose answer carried it).
    session_clients: BTreeMap<std::sync::Arc<str>, Option<u32>>,
}

/// Whether a violation is explained by a broken condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Explanation<'a> {
    /// All four conditions held up to the violation: a bug of the client or the server.
    Unexplained,
    /// The first breach of each condition that broke at or before the violation.
    ExplainedBy(Vec<&'a Breach>),
    /// The server ended a session (or its process) on its own before the violation
    /// ([`Condition::ServerEnded`]), or a client broke a condition its own policy keeps
    /// ([`Breach::promised`]): a bug of that party, whatever else broke (listed too, after it).
    Bug(Vec<&'a Breach>),
    /// Conditions broke before the violation, but none of those breaches can cause it
    /// ([`can_cause`]): a bug of the client or the server all the same.
    NotCausedBy(InvariantId, Vec<&'a Breach>),
    /// A party of the model departed from its profile (`profile-conformance`): a bug of mcpsim
    /// itself, which no condition explains.
    ModelDeparture,
}

impl Explanation<'_> {
    /// Whether some condition explains the violation.
    pub fn is_explained(&self) -> bool {
        matches!(self, Explanation::ExplainedBy(_))
    }
}

impl fmt::Display for Explanation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Explanation::Unexplained => f.write_str("unexplained: conditions 1-4 held"),
            Explanation::ModelDeparture => f.write_str(
                "unexplained: the model departed from its profile, a bug of mcpsim itself that no condition excuses",
            ),
            Explanation::ExplainedBy(breaches) => {
                let parts: Vec<String> = breaches.iter().map(|b| b.to_string()).collect();
                write!(f, "explained by {}", parts.join("; "))
            }
            Explanation::Bug(breaches) => {
                let parts: Vec<String> = breaches.iter().map(|b| b.to_string()).collect();
                write!(f, "unexplained: {}", parts.join("; "))
            }
            Explanation::NotCausedBy(invariant, breaches) => {
                let parts: Vec<String> = breaches.iter().map(|b| b.to_string()).collect();
                write!(f, "unexplained: what broke cannot cause {invariant} ({})", parts.join("; "))
            }
        }
    }
}

impl Conditions {
    /// Judges the four conditions on a trace.
    pub fn judge(trace: &Trace) -> Conditions {
        let mut conditions = Judge::default().run(&trace.steps);
        if conditions.breaches.iter().any(|b| b.condition == Condition::ServerPaced) {
            conditions.paced_churn = super::churn::paced_by_server(&super::TraceIndex::new(trace));
        }
        conditions
    }

    /// Whether all four held over the whole run (the server's pacing and the 2026-07-28
    /// revision's lost requests break none of them).
    pub fn all_held(&self) -> bool {
        self.breaches.iter().all(|b| matches!(b.condition, Condition::ServerPaced | Condition::RequestLost))
    }

    /// What explains a violation at `at`: the first breach of each condition broken by then.
    pub fn explain_at(&self, at: Instant) -> Explanation<'_> {
        self.explain_for(at, None)
    }

    /// What explains a violation at `at` of logical client `client` (`None`: of the run): the
    /// first breach of each condition broken by then, by that client or by the server or the
    /// fleet. Another client's restart or reaction explains nothing of this one's.
    pub fn explain_for(&self, at: Instant, client: Option<u32>) -> Explanation<'_> {
        self.explain_as(at, client, None, None, None)
    }

    /// [`Conditions::explain_for`] for a violation of `invariant` (`None`: of any): only the
    /// breaches that [`can_cause`] it explain it.
    /// `place` (`None`: of none, or of any) is the session the violation concerns, and the stream
    /// within it when it names one: a breach of one session's or stream's events
    /// ([`Breach::session`], [`Breach::stream`]) explains nothing of another's. `call` is the
    /// call the violation names, if it names one: a breach of one call's answer
    /// ([`Breach::call`]) explains only a violation of that call.
    fn explain_as(
        &self,
        at: Instant,
        client: Option<u32>,
        place: Option<Place<'_>>,
        effect: Option<Effect>,
        call: Option<CallKey>,
    ) -> Explanation<'_> {
        // Keyed by condition, and a party's bug apart from the same condition broken otherwise.
        let mut first: BTreeMap<(Condition, bool), &Breach> = BTreeMap::new();
        let mut inert: BTreeMap<(Condition, bool), &Breach> = BTreeMap::new();
        let kept_to_session = |b: &Breach| b.condition.is_stream_bug() || !self.sessions_share_store;
        let of_session = |b: &Breach| match (&b.session, place) {
            // A missed replay cost only what its stream carried: not an event the session never
            // stored (one a store shared across sessions handed it), which names no stream of its.
            (Some(_), Some(Place { stream: None, event: Some(_), .. })) if b.condition == Condition::ServerMissed => {
                false
            }
            (Some(theirs), Some(Place { session: ours, stream, event })) if kept_to_session(b) => {
                theirs.as_str() == ours
                    && (b.stream.is_none() || stream.is_none() || b.stream == stream)
                    && b.event.as_ref().is_none_or(|e| event == Some(e.as_str()))
            }
            _ => true,
        };
        let of_call = |b: &Breach| b.call.is_none_or(|c| call == Some(c));
        let concerns =
            |b: &Breach| (client.is_none() || b.client.is_none() || b.client == client) && of_session(b) && of_call(b);
        // The server's pacing is no broken condition: it explains only the churn it accounts for.
        let pacing = |b: &Breach| b.condition != Condition::ServerPaced || effect == Some(Effect::PacedChurn);
        for b in self.breaches.iter().filter(|b| b.at <= at && concerns(b) && pacing(b)) {
            let key = (b.condition, b.promised);
            match (effect.is_none_or(|effect| can_cause(b, effect)), b.condition) {
                // A proxy's holds are recorded each longer than the last of their client's: the
                // latest by then is the longest, the one to name.
                (true, Condition::ProxyHeld) => {
                    first.insert(key, b);
                }
                (true, _) => {
                    first.entry(key).or_insert(b);
                }
                (false, _) => {
                    inert.entry(key).or_insert(b);
                }
            }
        }
        if let (true, false, Some(effect)) = (first.is_empty(), inert.is_empty(), effect) {
            Explanation::NotCausedBy(effect.invariant(), inert.into_values().collect())
        } else if first.is_empty() {
            Explanation::Unexplained
        } else if first.values().any(|b| b.is_bug()) {
            // A party's own bug first: it is what the reader must see.
            let mut breaches: Vec<&Breach> = first.into_values().collect();
            breaches.sort_by_key(|b| !b.is_bug());
            Explanation::Bug(breaches)
        } else {
            Explanation::ExplainedBy(first.into_values().collect())
        }
    }

    /// What explains `violation`: the breaches at or before it; for an invariant judged on how
    /// the run ended ([`END_STATE`]: an event never delivered, a result nobody received, a call
    /// unresolved at its deadline), every breach of the run, since the step it is dated at (the
    /// event stored, the result stored) comes before what made it a violation.
    pub fn explain(&self, violation: &Violation) -> Explanation<'_> {
        self.answer(self.question(violation))
    }

    /// What decides `violation`'s explanation.
    fn question<'v>(&self, violation: &'v Violation) -> Question<'v> {
        let client = match self.owner(&violation.subject) {
            Some(owner) => owner,
            None => self.step_clients.get(violation.step).copied().flatten(),
        };
        let stream = super::subject_stream(&violation.subject);
        let effect = self.effect(violation, stream);
        let judged_on_end = END_STATE.contains(&violation.invariant) && effect != Effect::SecondSession;
        let at = if judged_on_end { Instant(u64::MAX) } else { violation.at };
        // A second session names the new one, and what made the client start it concerns the old.
        let event = violation.subject.split_once(" event ").map(|(_, id)| id);
        let place = super::subject_session(&violation.subject)
            .filter(|_| effect != Effect::SecondSession)
            .map(|session| Place { session, stream, event });
        let call = violation.subject.strip_prefix("call").and_then(|n| n.parse().ok()).map(CallKey);
        Question { at, client, place, effect, call }
    }

    fn answer(&self, q: Question<'_>) -> Explanation<'_> {
        if q.effect == Effect::Of(InvariantId::ProfileConformance) {
            return Explanation::ModelDeparture;
        }
        self.explain_as(q.at, q.client, q.place, Some(q.effect), q.call)
    }

    /// Each violation's verdict in words, and the conditions that explain it (none when it is
    /// unexplained): worked out once per distinct [`Question`], which a run's violations mostly
    /// share (its lost events, one violation each).
    fn verdicts(&self, violations: &[Violation]) -> Vec<(String, Vec<Condition>)> {
        let mut answered: BTreeMap<Question<'_>, (String, Vec<Condition>)> = BTreeMap::new();
        violations
            .iter()
            .map(|v| {
                let q = self.question(v);
                answered
                    .entry(q)
                    .or_insert_with(|| {
                        let explanation = self.answer(q);
                        let causes = match &explanation {
                            Explanation::ExplainedBy(breaches) => breaches.iter().map(|b| b.condition).collect(),
                            _ => Vec::new(),
                        };
                        (explanation.to_string(), causes)
                    })
                    .clone()
            })
            .collect()
    }

    /// The client whose application issued the call a violation's subject names (`call0`), or
    /// whose session it names (`session 0-1 …`), if the trace shows one. A call's or a session's
    /// violation is that client's whatever step it is dated at: an unresolved call is dated at the
    /// first step after the deadline, an event never delivered at the server's step that stored
    /// it, and in a run of several clients either may be another client's, or no client's.
    fn owner(&self, subject: &str) -> Option<Option<u32>> {
        if let Some(session) = super::subject_session(subject) {
            return self.session_clients.get(session).copied();
        }
        let key = subject.strip_prefix("call")?.parse().ok().map(crate::ids::CallKey)?;
        self.call_clients.get(&key).copied()
    }

    /// What `violation` is. A client that got a second session while its first was live
    /// (`no-orphaned-session`, dated at the second's creation) did so then, so unlike the rest of
    /// its invariant it is not decided by how the run ended: a breach after it cannot have made
    /// it start that session.
    /// `stream`: the one its subject names.
    fn effect(&self, violation: &Violation, stream: Option<StreamNo>) -> Effect {
        match violation.invariant {
            InvariantId::NoOrphanedSession if self.creations.contains(&violation.step) => Effect::SecondSession,
            // Rule a names the event that held the result; rule c, the session alone.
            InvariantId::NoOrphanedSession if stream.is_none() => Effect::DeadSessionKept,
            InvariantId::BoundedReconnects if self.paced_churn.contains(&violation.step) => Effect::PacedChurn,
            // The empty session: the events of a request served with none (the 2026-07-28 era).
            // Not its standalone stream, which no request carries (a server without sessions that
            // holds a GET open stores notifications there).
            InvariantId::NoSilentEventLoss
                if super::subject_session(&violation.subject) == Some("") && stream != Some(StreamNo::STANDALONE) =>
            {
                Effect::SessionlessEventLoss
            }
            invariant => Effect::Of(invariant),
        }
    }

    /// The footer records of `violations`, each with its conditions verdict.
    pub fn records(&self, violations: &[Violation]) -> Vec<ViolationRecord> {
        self.judged(violations).0
    }

    /// [`Conditions::records`], and beside each the conditions that explain its violation.
    fn judged(&self, violations: &[Violation]) -> (Vec<ViolationRecord>, Vec<Vec<Condition>>) {
        violations
            .iter()
            .zip(self.verdicts(violations))
            .map(|(v, (conditions, causes))| (ViolationRecord { conditions, ..ViolationRecord::from(v) }, causes))
            .unzip()
    }
}

/// What decides a violation's explanation ([`Conditions::explain`]): when it is judged, whose it
/// is, the session (and stream) it concerns, and what it is. Violations that ask the same
/// question get the same answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Question<'v> {
    at: Instant,
    client: Option<u32>,
    place: Option<Place<'v>>,
    effect: Effect,
    /// The call the violation's subject names (`call2`), if it names one.
    call: Option<CallKey>,
}

/// What a violation's subject names: its session, the stream within it, and whether it names an
/// event (`session 0-1 stream1 event 1-17`; an event the session never stored names no stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Place<'v> {
    session: &'v str,
    stream: Option<StreamNo>,
    /// The event it names (`1-17`), if any.
    event: Option<&'v str>,
}

/// Whether breach `b` can cause a violation of `invariant`: the map from what broke to what it
/// may bring, in one place. A broken condition costs what the note says it costs (lost events,
/// lost sessions, work done twice); it does not excuse every later fault of the client.
///
/// - `no-false-failure`: only the client tells its application that a call failed. When
///   retention or refusal broke, a correct client cannot know what became of a call in flight,
///   and says so: the note reconciles in-flight requests "as *unknown outcome*". So a false
///   failure is explained by a client (or application) that does not act by class (condition
///   4); by a client that lost its memory of the call (condition 1: a restart that forgot the
///   calls in flight, after which the application issues the call anew and hears only of the new
///   attempt); by a termination; or by the server's own word that the work failed (a task it
///   aborted at its TTL) — not by a give-up, a lost session or an unrefused id.
/// - `no-duplicate-execution`: a tool runs twice when its call is sent again. After a give-up,
///   a lost session or an unrefused id, the call's outcome is unknown and the note's client does
///   not send it again ("do not blindly retry non-idempotent tools"). After the server's own
///   word that the work failed (a task it aborted at its TTL, its effect already done), the
///   application that issues the call again acts on what it was told: that word explains the
///   second run, as it explains the false failure. A client or application that sends it
///   again after an unknown outcome (condition 4), or one that forgot it had sent it (condition
///   1), explains the second run, as does a termination. A re-send after a 404 by the client library itself
///   (re-initialize and re-send) is a blind retry, not the price of the lost session.
/// - A server's missed replay ([`Condition::ServerMissed`]) costs what the replayed stream
///   carried, in the session and stream it missed them for ([`Breach::session`],
///   [`Breach::stream`]): events lost, repeated or late, the calls whose answers they were
///   (unresolved, or their results left unread; none for the standalone stream, which carries no
///   call's answer), and the client's re-attaching to a stream that never catches up. Not a
///   second live session: a resume answered as unhonourable does not make the client start
///   another (the note reports a gap on a 409/410, and keeps the session); what makes it — a
///   restart that forgot the session, a re-initialize on a transport fault, a lost `DELETE` — is
///   a breach of its own. Nor a session kept after a 404, what the server did to the work itself
///   (killed it, ran it on after a cancel), or another session's or stream's events.
/// - A task id that never reached its client ([`Breach::task_id_lost`]) causes the task's
///   orphaning and its undelivered outcome, not a false failure or a re-issue: a client that
///   lost the `CreateTaskResult` knows the call's outcome is unknown.
/// - The server's pacing ([`Condition::ServerPaced`]) causes the churn it accounts for
///   ([`Effect::PacedChurn`]) and nothing else; any breach that can cause a `bounded-reconnects`
///   violation can cause that one too.
/// - A request lost with its stream under the 2026-07-28 revision ([`Condition::RequestLost`])
///   causes a call left unresolved and the events lost with a sessionless request's stream
///   ([`Effect::SessionlessEventLoss`]), and nothing else.
/// - Every other invariant: any breach of its client, the server or the fleet.
pub fn can_cause(b: &Breach, effect: Effect) -> bool {
    if effect == Effect::Of(InvariantId::ProfileConformance) {
        // The model's own departure from a profile: nothing in the world it simulates causes it.
        return false;
    }
    if b.condition == Condition::WorkRunOn {
        return effect == Effect::Of(InvariantId::NoAbandonedWork);
    }
    if b.condition == Condition::BusLocal {
        return effect == Effect::Of(InvariantId::NoSilentNotificationLoss);
    }
    if b.condition == Condition::BlackHole {
        return match effect {
            // Returns to a stream the server still counted as held by the connection the hole
            // caught: each new `GET` refused, and tried again.
            Effect::Of(InvariantId::BoundedReconnects) => b.kept_claim,
            Effect::Of(invariant) => BLACK_HOLE_COSTS.contains(&invariant),
            // A request stream of the 2026-07-28 revision: what it carried reached nobody.
            Effect::SessionlessEventLoss => true,
            Effect::SecondSession | Effect::DeadSessionKept | Effect::PacedChurn => false,
        };
    }
    if b.condition == Condition::ServerPaced {
        return effect == Effect::PacedChurn;
    }
    if b.condition == Condition::ProxyHeld {
        if !b.never_released {
            return effect == Effect::Of(InvariantId::TimelyDelivery);
        }
        // Never released: what the frames carried never arrived.
        return matches!(
            effect,
            Effect::Of(
                InvariantId::TimelyDelivery
                    | InvariantId::NoSilentEventLoss
                    | InvariantId::NoSilentNotificationLoss
                    | InvariantId::EveryCallResolves
                    | InvariantId::NoOrphanedSession
                    | InvariantId::TaskResultDelivered
            )
        );
    }
    if b.condition == Condition::RequestLost {
        return matches!(effect, Effect::Of(InvariantId::EveryCallResolves) | Effect::SessionlessEventLoss);
    }
    if b.condition == Condition::ServerRepeated {
        return effect == Effect::Of(InvariantId::NoDuplicateDelivery);
    }
    if b.condition == Condition::ServerCrossStream {
        return matches!(effect, Effect::Of(invariant) if CROSS_STREAM_COSTS.contains(&invariant));
    }
    if b.condition == Condition::ServerIdReused {
        return matches!(
            effect,
            Effect::Of(
                InvariantId::NoSilentEventLoss
                    | InvariantId::NoSilentNotificationLoss
                    | InvariantId::NoDuplicateDelivery
                    | InvariantId::InOrderDelivery
            )
        );
    }
    if b.task_id_lost {
        return matches!(effect, Effect::Of(InvariantId::NoOrphanedTask | InvariantId::TaskResultDelivered));
    }
    let client_memory_or_class = matches!(
        b.condition,
        Condition::ByClass | Condition::Persisted | Condition::Terminated | Condition::ServerEnded
    );
    if b.condition == Condition::ServerDropped {
        return matches!(effect, Effect::Of(InvariantId::EveryCallResolves | InvariantId::TaskResultDelivered));
    }
    if b.condition == Condition::ServerHeldOpen {
        // The standalone stream carries notifications only: no call's answer rides on it.
        return effect == Effect::Of(InvariantId::NoSilentEventLoss);
    }
    if b.condition == Condition::ServerRefusedAfterHead {
        // The returns to the same answer, and what the stale registration swallowed.
        return matches!(effect, Effect::Of(InvariantId::BoundedReconnects | InvariantId::NoSilentEventLoss));
    }
    if b.condition == Condition::ServerMissed {
        // The standalone stream carries no call's answer (a response rides its request's stream).
        let answers = b.stream != Some(StreamNo::STANDALONE);
        return match effect {
            Effect::Of(InvariantId::EveryCallResolves | InvariantId::TaskResultDelivered) => answers,
            Effect::Of(invariant) => MISSED_REPLAY_COSTS.contains(&invariant),
            Effect::PacedChurn => MISSED_REPLAY_COSTS.contains(&InvariantId::BoundedReconnects),
            Effect::SessionlessEventLoss => MISSED_REPLAY_COSTS.contains(&InvariantId::NoSilentEventLoss),
            Effect::SecondSession | Effect::DeadSessionKept => false,
        };
    }
    match effect {
        Effect::Of(InvariantId::NoFalseFailure) => client_memory_or_class || b.server_failed_work,
        Effect::Of(InvariantId::NoDuplicateExecution) => client_memory_or_class || b.server_failed_work,
        Effect::SecondSession
        | Effect::DeadSessionKept
        | Effect::PacedChurn
        | Effect::SessionlessEventLoss
        | Effect::Of(_) => true,
    }
}

/// What a silent black hole can cost ([`can_cause`]): what stayed on its way to a client that
/// was never told its connection was dead — its calls' answers, its events and notifications
/// (never, or late), a result stored where nobody read it, a task's outcome. Not a failure told
/// or a call sent again (the client's reaction to its own timer: condition 4), nor a second
/// session or a dead one kept (what the client starts or keeps is its own act).
const BLACK_HOLE_COSTS: [InvariantId; 7] = [
    InvariantId::EveryCallResolves,
    InvariantId::NoSilentEventLoss,
    InvariantId::NoSilentNotificationLoss,
    InvariantId::TimelyDelivery,
    InvariantId::NoOrphanedSession,
    InvariantId::TaskResultDelivered,
    InvariantId::NoOrphanedTask,
];

/// What a replay of another stream's events can cost ([`can_cause`],
/// [`Condition::ServerCrossStream`]): events twice or out of order, and, once the client's cursor
/// names the other stream, the resumed stream's events and answer never read (its call left
/// unresolved, its result stored where nobody reads it).
const CROSS_STREAM_COSTS: [InvariantId; 6] = [
    InvariantId::NoDuplicateDelivery,
    InvariantId::InOrderDelivery,
    InvariantId::NoSilentEventLoss,
    InvariantId::NoSilentNotificationLoss,
    InvariantId::EveryCallResolves,
    InvariantId::NoOrphanedSession,
];

/// What a missed replay can cost ([`can_cause`]): the replayed stream's events and what rode on
/// them.
const MISSED_REPLAY_COSTS: [InvariantId; 9] = [
    InvariantId::NoSilentEventLoss,
    InvariantId::NoSilentNotificationLoss,
    InvariantId::NoDuplicateDelivery,
    InvariantId::InOrderDelivery,
    InvariantId::TimelyDelivery,
    InvariantId::EveryCallResolves,
    InvariantId::NoOrphanedSession,
    InvariantId::TaskResultDelivered,
    InvariantId::BoundedReconnects,
];

/// What a violation is, as far as what may cause it ([`can_cause`]): its invariant, with the
/// rules whose causes differ from the rest of their invariant's told apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Effect {
    /// A violation of this invariant.
    Of(InvariantId),
    /// `no-orphaned-session`'s second live session of one client (rule b), dated at the step
    /// that created it.
    SecondSession,
    /// `no-orphaned-session`'s session a client kept after it was told the server no longer has
    /// it (rule c). (`Of(NoOrphanedSession)` is then rule a: a result stored where nobody read it.)
    DeadSessionKept,
    /// A `bounded-reconnects` violation the re-attachments the server asked for (streams it
    /// closed itself on a timer) account for: without them its client stays within the bound.
    PacedChurn,
    /// `no-silent-event-loss` on a request stream without a session: a 2026-07-28 request's,
    /// which nothing can resume, so what it carried when it broke is lost with it.
    SessionlessEventLoss,
}

impl Effect {
    /// The invariant the violation is of.
    pub fn invariant(self) -> InvariantId {
        match self {
            Effect::Of(invariant) => invariant,
            Effect::SecondSession | Effect::DeadSessionKept => InvariantId::NoOrphanedSession,
            Effect::PacedChurn => InvariantId::BoundedReconnects,
            Effect::SessionlessEventLoss => InvariantId::NoSilentEventLoss,
        }
    }
}

/// The decision procedure's words when a stream has no id to resume from.
static NEVER_PERSISTED: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| crate::decision::DecisionError::NeverPersisted.to_string());

/// The invariants judged on how the run ended rather than at the step they are dated at.
pub const END_STATE: [InvariantId; 3] =
    [InvariantId::NoSilentEventLoss, InvariantId::NoOrphanedSession, InvariantId::EveryCallResolves];

/// The footer records of a trace's violations, each with its conditions verdict.
pub fn violation_records(trace: &Trace, violations: &[Violation]) -> Vec<ViolationRecord> {
    judged(trace, violations).0
}

/// [`violation_records`], and beside each record the conditions whose breaches explain its
/// violation (empty when none does): what a search tallies of the runs it passes over, from the
/// one judgement the footer needs.
pub fn judged(trace: &Trace, violations: &[Violation]) -> (Vec<ViolationRecord>, Vec<Vec<Condition>>) {
    if violations.is_empty() {
        return (Vec::new(), Vec::new());
    }
    Conditions::judge(trace).judged(violations)
}

/// Whether a footer record's verdict says a broken condition explains it.
pub fn record_is_explained(record: &ViolationRecord) -> bool {
    record.conditions.starts_with("explained by")
}

/// What one logical client did, as far as the conditions need.
#[derive(Default)]
struct ClientState {
    started: bool,
    /// Its policy keeps its state durably (condition 1), as its last `client-start` said.
    durable: bool,
    /// Its policy runs the decision procedure (condition 4), as its last `client-start` said.
    by_class: bool,
    /// The session it last held (from an `initialize` answer or a request).
    held_session: bool,
    /// Sessions it ended itself.
    deleted: BTreeSet<SessionId>,
    /// When it last received anything from the server.
    last_contact: Option<Instant>,
    /// When its last connection broke (reset, refused, 5xx).
    last_break: Option<Instant>,
    /// The last close of a connection no decision has judged yet: its status (if a head came),
    /// how it ended, and when. The client decides on a close as it sees it, so a decision judges
    /// the close just before it at the same instant, once: two streams cut at once are two
    /// closes, each followed by its own decision, and a decision with no close of its own (a
    /// restarted client resuming what it restored, a backoff that ran out) judges none.
    last_close: Option<(Option<Status>, Option<ConnEnd>, Instant)>,
    /// A session whose last `DELETE` never took effect — refused or cut before any answer, or
    /// answered 5xx (by the server or a hop: a transport fault, nothing was deleted) — when, and
    /// how it ended.
    delete_lost: Option<(SessionId, Instant, String)>,
    /// The application's calls issued and not resolved yet, each with whether it is idempotent.
    in_flight: BTreeMap<crate::ids::CallKey, bool>,
    /// The session its last request named.
    session: Option<SessionId>,
    /// The event ids it received, each with the session its request named, the empty id for a
    /// request that named none (ids repeat across sessions: the reference server's are stream
    /// and seq).
    received_in: BTreeSet<(SessionId, EventId)>,
    /// Calls in flight whose stream a decision of its own ended for good (the procedure's `Stop`,
    /// or a close it has no rule for), not resolved since: the step, time and reason of that
    /// decision. What is left at the end of the run was never told to the application.
    stopped: BTreeMap<crate::ids::CallKey, (usize, Instant, String)>,
    /// Non-idempotent calls in flight whose tool call went out (a `POST` was sent) and that poll
    /// no task: what a lost session leaves with an unknown outcome.
    sent_unsafe: BTreeSet<crate::ids::CallKey>,
    /// Calls whose `tools/call` went out since the application last issued them.
    sent: BTreeSet<crate::ids::CallKey>,
    /// It retried a handshake the server refused as malformed or unsupported (named once).
    retried_refused_init: bool,
    /// The connection its latest `initialize` went on, until answered; then the answer's status.
    init_post: Option<ConnId>,
    init_answer: Option<Status>,
    /// Calls it re-issued with a new id since the application last issued them (an attempt lost
    /// with its stream, the 2026-07-28 revision's rule): whatever the next attempt is answered,
    /// the lost one's outcome is unknown.
    reissued: BTreeSet<crate::ids::CallKey>,
    /// Sessions it was answered 404 for (what the note re-initializes on).
    not_found: BTreeSet<SessionId>,
    /// Where in [`Judge::breaches`] the breach of its last giving up of its standalone stream
    /// is, while the application has not been told of it.
    untold_stream: Option<usize>,
    /// The session whose letting go a breach already stands for (a decision to re-initialize):
    /// the `initialize` that follows it is that breach's, not another.
    let_go: Option<SessionId>,
    /// The ids of tasks the client forgot at one instant (`task-id-forgotten`): what a restart
    /// at that instant lost, when its process kept them only in memory.
    forgotten_tasks: Option<(Instant, Vec<String>)>,
    /// When a `tasks/*` request of its was last answered "not found": an error the application
    /// is told at that instant is that answer passed on.
    task_not_found: Option<Instant>,
    /// Its last `GET` of a standalone stream (fresh, or resuming it), for whether a fresh one
    /// follows a refusal or another fresh one.
    standalone_get: Option<StandaloneGet>,
    /// Calls whose stream the procedure decided to resume at the head the server named (after a
    /// 409/410 with a head), at once: the step, the time and the head, until a request goes out
    /// with that `Last-Event-ID` or the call is settled.
    resume_due: BTreeMap<crate::ids::CallKey, (usize, Instant, EventId)>,
    /// The latest event id it received on each call's stream (the call's cursor), and in which
    /// session.
    cursors: BTreeMap<crate::ids::CallKey, (SessionId, EventId)>,
    /// Calls whose stream it will re-attach (a `backoff` step) though it holds a cursor for it:
    /// when, until a `GET` with an id of that call's stream goes out.
    reattach_due: BTreeMap<crate::ids::CallKey, Instant>,
    /// When it will re-attach its standalone stream (a `backoff` step), until a `GET` does.
    standalone_due: Option<Instant>,
    /// A black hole caught the connection of its standalone stream ([`Judge::black_holed`]): the
    /// session, and where the hole's breach is in [`Judge::breaches`], until a `GET` of that
    /// session is answered below 400 ([`Judge::claim_kept`]).
    caught_standalone: Option<(SessionId, usize)>,
    /// The calls whose request stream's connection a black hole caught (their `tools/call`
    /// `POST`), and where the hole's breach is, until a resume of that stream is let in without a
    /// claim ([`Judge::resume_closed_for_claim`]).
    caught_calls: BTreeMap<crate::ids::CallKey, usize>,
}

/// An intermediary as a breach names it: `hop1`, or `the balancer` alone.
fn intermediary(hop: Option<u32>) -> String {
    hop.map_or_else(|| "the balancer".to_string(), |h| format!("hop{h}"))
}

/// A fresh standalone `GET` sent after a stream broken before its first id
/// ([`Judge::standalone_again_without_id`]).
#[derive(Debug)]
struct FreshAfterNoId {
    /// The session it named.
    session: SessionId,
    /// When the broken stream's `GET` went: what was stored since may be lost.
    since: Instant,
    /// The fresh `GET`'s step and instant, where a loss is recorded.
    step: usize,
    at: Instant,
}

/// A change a server process emitted (`change-emitted`), as the conditions judge remembers it.
#[derive(Debug)]
struct Emitted {
    step: usize,
    at: Instant,
    change: String,
    /// The replica that emitted it (none: a single process, no bus to miss).
    replica: Option<u32>,
    /// The listen streams it reached on that replica.
    listeners: u32,
}

/// A client's listen stream that ended untold, as the conditions judge remembers it
/// ([`Judge::change_missed_untold`]).
#[derive(Debug)]
struct ListenEnded {
    /// The step it ended at, and when.
    step: usize,
    at: Instant,
    /// The first change its replica emitted after the last the client heard, before the end:
    /// on its way on the stream, lost with it.
    on_its_way: Option<(Instant, String)>,
}

/// A client's `GET` of a standalone stream, as the conditions judge remembers it.
#[derive(Debug)]
struct StandaloneGet {
    /// The session it named.
    session: SessionId,
    /// Its connection.
    conn: ConnId,
    /// Whether it went without `Last-Event-ID`; if so, the latest event of the session's
    /// standalone stream the client had received when it went (what it started over from).
    fresh: Option<Option<EventId>>,
}

impl ClientState {
    /// The session it holds and has not deleted itself, if any.
    fn held(&self) -> Option<&SessionId> {
        self.session.as_ref().filter(|s| self.held_session && !self.deleted.contains(*s))
    }

    /// The call whose stream re-attach was due at `at` (the earliest, within a millisecond: a zero
    /// backoff's request goes out a tick after its due time), and when; with `session`, only a
    /// call whose cursor is of that session.
    fn reattach_due_at(&self, at: Instant, session: Option<&SessionId>) -> Option<(crate::ids::CallKey, Instant)> {
        let slack = std::time::Duration::from_millis(1);
        let of_session =
            |key: &crate::ids::CallKey| session.is_none_or(|s| self.cursors.get(key).is_some_and(|(c, _)| c == s));
        self.reattach_due
            .iter()
            .filter(|(key, due)| **due <= at && at <= **due + slack && of_session(key))
            .min_by_key(|(_, due)| **due)
            .map(|(key, due)| (*key, *due))
    }

    /// Whether its last break came after anything it last received: it is cut off.
    fn cut_off(&self) -> bool {
        self.last_break.is_some_and(|b| self.last_contact.is_none_or(|l| b >= l))
    }
}

/// A client connection: the logical client (`None` in a run of one) and its number for it.
type ClientConn = (Option<u32>, ConnId);

/// A client connection's request session and method, the status it got, and when it was sent.
type ConnFacts = (Option<SessionId>, Method, Option<Status>, Instant);

#[derive(Default)]
struct Judge {
    clients: BTreeMap<Option<u32>, ClientState>,
    /// Per client connection: the request's session and method, the status it got, and when it
    /// was sent.
    conns: BTreeMap<(Option<u32>, ConnId), ConnFacts>,
    /// Every stored event: where and when.
    stored: BTreeMap<(SessionId, EventId), (StreamNo, u32, Instant)>,
    /// The fresh standalone `GET`s sent after a stream broken before its first id, whose missed
    /// events are judged once the new stream hands over its first event: its client and
    /// connection, the session, when the broken stream's `GET` went, and the new `GET`'s step
    /// and instant ([`Judge::standalone_again_without_id`]).
    fresh_after_no_id: BTreeMap<(Option<u32>, ConnId), FreshAfterNoId>,
    /// Per stream, the store time of each seq.
    streams: BTreeMap<(SessionId, StreamNo), BTreeMap<u32, Instant>>,
    /// The call each stored event was for (`None`: the standalone stream's).
    stored_for: BTreeMap<(SessionId, EventId), Option<crate::ids::CallKey>>,
    /// Streams whose numbering skips: their store is shared with another session's.
    shared: BTreeSet<(SessionId, StreamNo)>,
    /// A server process said its store is shared across sessions (`server-start`).
    sessions_share_store: bool,
    /// Sessions a stream of which the server closed on its own timer, not yet answered by a
    /// client's decision (`decision`).
    closed_by_server: BTreeSet<SessionId>,
    /// The clients a request of which was lost with its stream (`request_lost`).
    lost_requests: BTreeSet<Option<u32>>,
    /// Why and when each session ended.
    ended: BTreeMap<SessionId, (SessionEndReason, Instant)>,
    /// The calls that run as tasks (`task-created`): their work is the task's, judged by its TTL
    /// and the session's retention, not as a request a client waits on.
    task_calls: BTreeSet<crate::ids::CallKey>,
    /// The longest hold of a response stream an intermediary released so far, by client
    /// ([`Condition::ProxyHeld`]).
    proxy_held: BTreeMap<Option<u32>, u64>,
    /// The latest instant `lb-discarded` steps were recorded at, and what each says went (read
    /// by [`Judge::never_persisted`], whose stream may have broken with them).
    last_discard: Option<(Instant, Vec<String>)>,
    /// The intermediaries' connections (by hop) that released frames to their client, and the
    /// clients whose connection an intermediary went with, holding frames: a second such loss of
    /// a connection that released nothing is a hold no return gets past
    /// ([`Judge::discarded`]).
    lb_released: BTreeSet<(Option<u32>, ConnId)>,
    lb_discarded: BTreeSet<Option<u32>>,
    /// Sessions the server expired by its own bug (inside its TTL, or busy): a 404 for one later
    /// is that bug's, not a retention the outage outlasted.
    expired_by_bug: BTreeSet<SessionId>,
    /// The tasks that ended `cancelled` at the latest such instant (step, time, task): a session
    /// expired at that instant stopped them (its `session-ended` step follows theirs).
    cancelled_tasks: Vec<(usize, Instant, crate::tasks::TaskId)>,
    /// The tools that ended `cancelled` at the latest such instant (time, session, call): a
    /// session expired at that instant stopped them, as for [`Judge::cancelled_tasks`].
    cancelled_tools: Vec<(Instant, SessionId, crate::ids::CallKey)>,
    /// The tools at work, by session and call: from their side effect to their end.
    tools_running: BTreeSet<(SessionId, crate::ids::CallKey)>,
    /// The calls whose tool ran on after their client's `DELETE` of the session, each named once
    /// ([`Condition::WorkRunOn`]).
    run_on: BTreeSet<(SessionId, crate::ids::CallKey)>,
    /// Each cancel a client sent of one of its `tools/call` requests (the call, the request's
    /// id): when.
    cancels_sent: BTreeMap<(crate::ids::CallKey, RequestId), Instant>,
    /// The listen stream each client holds open (`listen-open`, until its connection ends): its
    /// connection, since when it has heard every change emitted to it (its opening, then each
    /// change it heard), and when it opened.
    listening: BTreeMap<Option<u32>, (ConnId, Instant, Instant)>,
    /// Every change emitted, in order ([`Condition::BusLocal`] settles each once its instant has
    /// passed; those a shared bus relayed to another replica's streams, `change-relayed`, are
    /// passed over), and how far each listening client has been judged against them.
    changes: Vec<Emitted>,
    relayed: BTreeSet<String>,
    bus_cursor: BTreeMap<Option<u32>, usize>,
    /// The replica each change came from, and the replica whose change each client heard last
    /// (its listen stream's, in a fleet whose processes each fan out to their own).
    change_replica: BTreeMap<String, u32>,
    heard_from: BTreeMap<Option<u32>, u32>,
    /// The clients a change on another replica missed, each named once.
    bus_missed: BTreeSet<Option<u32>>,
    /// Each client whose listen stream ended without its application being told (no
    /// `app-subscription-lost`) and that listens no more: the step the stream ended at, and the
    /// instant from which what it carried was lost (its end, or the first change emitted after
    /// the last it heard). A change emitted then breaks condition 4 for it, named once, dated
    /// at that instant.
    listen_untold: BTreeMap<Option<u32>, ListenEnded>,
    /// Fresh standalone `GET`s sent without a session, not yet answered: by client and connection.
    sessionless_gets: BTreeSet<(Option<u32>, ConnId)>,
    /// The standalone `GET` without a session each client holds open, answered `200` (until its
    /// connection ends): a server without sessions that holds it open ([`Condition::ServerHeldOpen`]).
    held_open: BTreeMap<Option<u32>, ConnId>,
    /// The clients a notification on no stream of theirs missed while they held such a `GET`,
    /// each named once.
    held_open_named: BTreeSet<Option<u32>>,
    /// The sessions whose second standalone `GET` the server refused after its `200` head
    /// ([`Condition::ServerRefusedAfterHead`]), each named once.
    refused_after_head: BTreeSet<SessionId>,
    /// 4xx answers an intermediary gave by itself (a hop answering during a route reload), not
    /// yet matched to the client response that carried them: the status and the hop (`None`:
    /// the balancer alone). Matched first come, first served by status.
    hop_answers: std::collections::VecDeque<(Status, Option<u32>)>,
    /// Each task: when it was created, its TTL in µs, and whether its client got its outcome.
    tasks: BTreeMap<crate::tasks::TaskId, (Instant, Option<u64>, bool)>,
    /// The calls a client connection posted (`tools/call`), by connection.
    posts: BTreeMap<(Option<u32>, ConnId), crate::ids::CallKey>,
    /// The call each client's `tools/call` request carried, for its cancels.
    requests: super::RequestCalls,
    /// The call a client connection's `notifications/cancelled` was for, by connection, and
    /// whether the application was then told the call failed (an error, not an unknown outcome;
    /// `None` until it was told anything): only the cancels whose connection has not ended yet.
    cancel_posts: BTreeMap<(Option<u32>, ConnId), (crate::ids::CallKey, Option<bool>)>,
    /// The `Last-Event-ID` each client connection resumed from, until its connection ends or
    /// the server sends that event again on it.
    resumed_from: BTreeMap<(Option<u32>, ConnId), EventId>,
    /// The stream whose id each client connection resumed from (one the session stored), once
    /// the server's `resume` step shows it replayed that id, until the connection ends or it is
    /// handed another stream's event ([`Condition::ServerCrossStream`]).
    resumed_stream: BTreeMap<(Option<u32>, ConnId), StreamNo>,
    /// Resumes sent and not yet seen by the server, by session and `Last-Event-ID`, oldest first:
    /// the connection and the stream of the id. The server's `resume` step names no connection,
    /// so it takes the oldest of its session and id; a hop that dropped the header leaves its
    /// entry unanswered, and nothing it carries counts as a replay.
    resumes_sent: BTreeMap<(SessionId, EventId), Vec<(ClientConn, StreamNo)>>,
    /// Tasks created whose id has not reached their client yet, by call.
    unreceived: BTreeMap<crate::ids::CallKey, crate::tasks::TaskId>,
    /// Calls whose last `tools/call` connection was cut before any task of theirs was created:
    /// a task the server creates for one now has no connection to answer on.
    cut_posts: BTreeSet<crate::ids::CallKey>,
    /// The calls each client's application was told ended with an unknown outcome, and why.
    unknown: BTreeMap<(Option<u32>, crate::ids::CallKey), String>,
    /// The steps that created a session (`Conditions` keeps them, for `no-orphaned-session`).
    creations: BTreeSet<usize>,
    /// The replica the balancer routed each client connection to (recorded with several).
    routed: BTreeMap<(Option<u32>, ConnId), u32>,
    /// Per session and replica (`None`: a run of one), the latest time the server can have
    /// last seen the session active: its creation, or the sending of a request it answered
    /// below 400 (not a `DELETE`; a hop's own answer is none of the server's). Every idle rule
    /// restarts the countdown at a request it handles, which comes after its sending, so an idle
    /// expiry sooner than the TTL after this is inside the TTL by any rule.
    active: BTreeMap<(SessionId, Option<u32>), Instant>,
    breaches: Vec<Breach>,
}

impl Judge {
    fn run(mut self, steps: &[Step]) -> Conditions {
        let step_clients: Vec<Option<u32>> = steps.iter().map(|s| s.client.or(s.conn_client)).collect();
        let (mut call_clients, mut session_clients) = (BTreeMap::new(), BTreeMap::new());
        for (i, step) in steps.iter().enumerate() {
            match &step.kind {
                StepKind::AppCall { call, .. } => {
                    call_clients.entry(*call).or_insert(step.client);
                }
                // A session is the client's that was answered it, or first named it.
                StepKind::Send { request: crate::http::Request { session: Some(session), .. }, .. }
                | StepKind::Response { head: crate::http::ResponseHead { session: Some(session), .. }, .. }
                    if step.actor == crate::trace::Actor::Client
                        && step.client.is_some()
                        && !session_clients.contains_key(&session.0) =>
                {
                    session_clients.insert(session.0.clone(), step.client);
                }
                _ => {}
            }
            self.step(i, step);
        }
        self.settle_unrelayed(None);
        self.untold_calls();
        let mut breaches = self.breaches;
        // In step order, as each condition's first breach is read first.
        breaches.sort_by_key(|b| b.step);
        for b in &mut breaches {
            b.client = b.client.or_else(|| step_clients.get(b.step).copied().flatten());
        }
        Conditions {
            breaches,
            step_clients,
            creations: self.creations,
            sessions_share_store: self.sessions_share_store,
            paced_churn: BTreeSet::new(),
            call_clients,
            session_clients,
        }
    }

    fn breach(&mut self, condition: Condition, step: usize, at: Instant, detail: String) {
        self.record(condition, step, at, detail);
    }

    /// Records a breach of what the server kept or answered for one session: it explains only
    /// that session's violations ([`Breach::session`]).
    fn breach_in(
        &mut self,
        condition: Condition,
        step: usize,
        at: Instant,
        detail: String,
        session: &SessionId,
    ) -> &mut Breach {
        let breach = self.record(condition, step, at, detail);
        breach.session = Some(session.clone());
        breach
    }

    /// Records a breach and hands it back, for the flags a few of them carry.
    fn record(&mut self, condition: Condition, step: usize, at: Instant, detail: String) -> &mut Breach {
        let breach = Breach {
            condition,
            step,
            at,
            detail,
            client: None,
            session: None,
            stream: None,
            event: None,
            call: None,
            server_failed_work: false,
            promised: false,
            task_id_lost: false,
            never_released: false,
            kept_claim: false,
            rules: &[],
        };
        self.breaches.push(breach);
        self.breaches.last_mut().expect("just pushed")
    }

    fn step(&mut self, i: usize, step: &Step) {
        let at = step.at();
        let who = step.client;
        self.subscriptions(i, at, who, step);
        self.held_open_gets(i, at, who, step);
        if let StepKind::LbFlushed { conn, frames: 1.., hop, .. } = &step.kind {
            self.lb_released.insert((*hop, *conn));
        }
        match &step.kind {
            StepKind::SideEffect { session, call, .. } => _ = self.tools_running.insert((session.clone(), *call)),
            StepKind::ToolEnded { session, call, .. } => _ = self.tools_running.remove(&(session.clone(), *call)),
            _ => {}
        }
        // Any resolution (a result, an error, an unknown outcome, a task's) tells the application.
        if let Some((call, _)) = super::Resolution::of(&step.kind) {
            if let Some(c) = self.clients.get_mut(&who) {
                c.stopped.remove(&call);
                c.sent_unsafe.remove(&call);
                c.resume_due.remove(&call);
            }
        }
        match &step.kind {
            StepKind::ClientStart { restored, durable, by_class, .. } => {
                // The old process's connections went with it: a `tools/call` it posted can no
                // longer carry the `CreateTaskResult` (a reset, as far as the task's id goes).
                if self.clients.get(&who).is_some_and(|c| c.started) {
                    let gone: Vec<ConnId> = self.posts.keys().filter(|(w, _)| *w == who).map(|(_, c)| *c).collect();
                    for conn in gone {
                        self.task_reply_lost(i, at, who, conn, ConnEnd::Reset);
                    }
                    // A cancel still on its way, unanswered, went with the process that sent it
                    // as with a reset (one answered was taken by the server). A guided search of
                    // the TypeScript client read the result its timed-out call left in the
                    // session, the cancel lost to a client restart at that instant, as
                    // `conditions 1-4 held`.
                    let cancels: Vec<(ConnId, bool)> = self
                        .cancel_posts
                        .keys()
                        .filter(|(w, _)| *w == who)
                        .map(|&(_, conn)| (conn, self.conns.get(&(who, conn)).is_some_and(|c| c.2.is_some())))
                        .collect();
                    self.fresh_after_no_id.retain(|(w, _), _| *w != who);
                    for (conn, answered) in cancels {
                        match answered {
                            false => self.cancel_lost(i, at, who, conn, "was lost with the client's process"),
                            true => _ = self.cancel_posts.remove(&(who, conn)),
                        }
                    }
                }
                let c = self.clients.entry(who).or_default();
                let restarted = c.started && (c.held_session || !c.in_flight.is_empty());
                let forgot_tasks = c.forgotten_tasks.take().filter(|(t, _)| c.started && *t == at).map(|(_, ids)| ids);
                c.started = true;
                (c.durable, c.by_class) = (*durable, *by_class);
                // A new process: what the old one decided to do is not this one's to do.
                c.resume_due.clear();
                c.reattach_due.clear();
                c.cursors.clear();
                // A new process: what it decides owes nothing to the old one's closes.
                c.last_close = None;
                if restarted && !restored {
                    let promised = c.durable;
                    c.held_session = false;
                    c.sent_unsafe.clear();
                    let calls: Vec<String> = std::mem::take(&mut c.in_flight).keys().map(|k| k.to_string()).collect();
                    let forgot = match calls.is_empty() {
                        true => String::new(),
                        false => format!(", forgetting the calls in flight ({})", calls.join(", ")),
                    };
                    let detail = format!(
                        "the client restarted at {at} without its session and Last-Event-ID (nothing persisted){forgot}"
                    );
                    self.record(Condition::Persisted, i, at, detail).promised = promised;
                } else if let Some(ids) = forgot_tasks {
                    // Its session came back, its tasks did not: the ids of the tasks answering its
                    // calls are its durable state as much as its Last-Event-ID (ext-tasks: the
                    // client polls by id, and nothing else finds the task again). Kept in memory
                    // by its own setting (`client.tasks.persist_ids`, which a durable session
                    // does not imply): the price of that setting, not a promise broken.
                    let detail = format!(
                        "the client restarted at {at} without the ids of its tasks ({}), which it kept only in memory",
                        ids.join(", ")
                    );
                    self.breach(Condition::Persisted, i, at, detail);
                }
            }
            StepKind::InitializeBackoff { .. } => self.handshake_failed(i, at, who),
            StepKind::BlackHoled { conns, idle, connect } => self.black_holed(i, at, who, conns, *idle, *connect),
            StepKind::TaskIdForgotten { task } => {
                let c = self.clients.entry(who).or_default();
                match &mut c.forgotten_tasks {
                    Some((t, ids)) if *t == at => ids.push(task.0.clone()),
                    _ => c.forgotten_tasks = Some((at, vec![task.0.clone()])),
                }
            }
            StepKind::Send { conn, request } => {
                let c = self.clients.entry(who).or_default();
                if request.session.is_some() {
                    c.held_session = true;
                    c.session = request.session.clone();
                }
                if let (Method::Delete, Some(s)) = (request.method, &request.session) {
                    c.deleted.insert(s.clone());
                    c.delete_lost = None;
                }
                if let Some(id) = &request.last_event_id {
                    c.resume_due.retain(|_, due| &due.2 != id);
                    let of_call = request.session.as_ref().and_then(|s| self.stored_for.get(&(s.clone(), id.clone())));
                    match of_call {
                        Some(Some(call)) => {
                            c.reattach_due.remove(call);
                        }
                        Some(None) => c.standalone_due = None,
                        // An id this session never stored (another stream's, handed over by a
                        // server's replay): the call due now is the one it re-attaches.
                        None => {
                            if let Some((key, _)) = c.reattach_due_at(at, None) {
                                c.reattach_due.remove(&key);
                            }
                        }
                    }
                    self.resumed_from.insert((who, *conn), id.clone());
                    if let Some(session) = &request.session {
                        if let Some(&(stream, _, _)) = self.stored.get(&(session.clone(), id.clone())) {
                            let sent = self.resumes_sent.entry((session.clone(), id.clone())).or_default();
                            sent.push(((who, *conn), stream));
                        }
                    }
                }
                if let Some(crate::http::ClientMessage::CallTool { call, .. }) = &request.body {
                    if c.in_flight.get(&call.key) == Some(&false) {
                        c.sent_unsafe.insert(call.key);
                    }
                    c.sent.insert(call.key);
                    // Sent again (a re-issue after a lost request, a re-send after a new
                    // session): the client did not leave it with no way to its answer.
                    c.stopped.remove(&call.key);
                    self.posts.insert((who, *conn), call.key);
                    self.cut_posts.remove(&call.key);
                }
                if let Some(call) = self.requests.cancel_in(step) {
                    self.cancel_posts.insert((who, *conn), (call, None));
                    if let Some(ClientMessage::Cancelled { request: id }) = &request.body {
                        self.cancels_sent.entry((call, *id)).or_insert(at);
                    }
                }
                if let (Method::Get, None, Some(session)) = (request.method, &request.last_event_id, &request.session) {
                    self.reattached_fresh(i, at, who, session);
                }
                if let (Method::Get, Some(session)) = (request.method, &request.session) {
                    self.standalone_get(i, at, who, *conn, session, request.last_event_id.as_ref());
                }
                if matches!(request.body, Some(crate::http::ClientMessage::Initialize { .. })) {
                    let c = self.clients.entry(who).or_default();
                    (c.init_post, c.init_answer) = (Some(*conn), None);
                    self.initialize_after_lost_delete(i, at, who);
                    if request.session.is_none() {
                        self.initialize_while_held(i, at, who);
                    }
                }
                self.conns.insert((who, *conn), (request.session.clone(), request.method, None, at));
            }
            StepKind::Response { conn, head } => {
                if head.status.0 >= 500 && self.cancel_posts.contains_key(&(who, *conn)) {
                    self.cancel_lost(i, at, who, *conn, &format!("was answered {}", head.status.0));
                }
                let c = self.clients.entry(who).or_default();
                if head.session.is_some() {
                    c.held_session = true;
                }
                let status = head.status;
                if c.init_post == Some(*conn) {
                    (c.init_post, c.init_answer) = (None, Some(status));
                }
                if status.0 < 400 {
                    c.last_contact = Some(at);
                } else {
                    c.last_close = Some((Some(status), None, at));
                    if status.0 >= 500 {
                        c.last_break = Some(at);
                    }
                }
                if let Some((Some(session), Method::Get, ..)) = self.conns.get(&(who, *conn)).cloned() {
                    self.claim_kept(at, who, *conn, &session, status);
                }
                let Some(entry) = self.conns.get_mut(&(who, *conn)) else { return };
                entry.2 = Some(status);
                if let (Some(session), Method::Delete, true) = (&entry.0, entry.1, status.0 >= 500) {
                    let how = format!("was answered {}", status.0);
                    self.clients.entry(who).or_default().delete_lost = Some((session.clone(), at, how));
                }
                let by_hop = self.hop_answers.iter().position(|(s, _)| *s == status);
                if let (None, true, Some(session)) = (by_hop, status.0 < 400 && entry.1 != Method::Delete, &entry.0) {
                    let (sent, replica) = (entry.3, self.routed.get(&(who, *conn)).copied());
                    let last = self.active.entry((session.clone(), replica)).or_insert(sent);
                    *last = (*last).max(sent);
                }
                if let Some((_, hop)) = by_hop.and_then(|k| self.hop_answers.remove(k)) {
                    let session = entry.0.clone();
                    self.hop_answered(i, at, status, hop, session);
                } else if status == Status::NOT_FOUND && entry.1 != Method::Delete {
                    let session = entry.0.clone();
                    if let (Some(s), Some(c)) = (&session, self.clients.get_mut(&who)) {
                        c.not_found.insert(s.clone());
                    }
                    self.session_not_found(i, at, who, session);
                } else if entry.1 == Method::Delete && (status == Status::NOT_FOUND || (200..300).contains(&status.0)) {
                    let session = entry.0.clone();
                    self.delete_not_held(i, at, status, session);
                }
            }
            StepKind::Event { .. } | StepKind::Json { .. } | StepKind::Comment { .. } => {
                self.clients.entry(who).or_default().last_contact = Some(at);
                if let StepKind::Event { conn, event } = &step.kind {
                    if let Some(id) = &event.id {
                        let session = self
                            .conns
                            .get(&(who, *conn))
                            .and_then(|f| f.0.clone())
                            .unwrap_or_else(|| NO_SESSION.clone());
                        let call = self.stored_for.get(&(session.clone(), id.clone())).copied().flatten();
                        let c = self.clients.entry(who).or_default();
                        if let Some(call) = call {
                            c.cursors.insert(call, (session.clone(), id.clone()));
                        }
                        c.received_in.insert((session, id.clone()));
                        self.first_event_after_no_id(who, *conn, id);
                    }
                    self.event_from_a_shared_store(i, at, who, *conn, event.id.as_ref());
                    self.named_event_again(i, at, who, *conn, event.id.as_ref());
                    self.other_streams_event(i, at, who, *conn, event.id.as_ref());
                }
                if let StepKind::Json {
                    message: crate::http::ServerMessage::Error { code: Some(crate::tasks::TASK_NOT_FOUND), message, .. },
                    ..
                } = &step.kind
                {
                    self.clients.entry(who).or_default().task_not_found = Some(at);
                    self.breach(
                        Condition::Retention,
                        i,
                        at,
                        format!(
                            "a tasks/* request was answered \"not found\" at {at} ({message}): the task is not held \
                             where the request landed, or its record is gone"
                        ),
                    );
                }
            }
            StepKind::ConnEnd { conn, end } => {
                self.task_reply_lost(i, at, who, *conn, *end);
                self.fresh_after_no_id.remove(&(who, *conn));
                self.resumed_from.remove(&(who, *conn));
                self.resumed_stream.remove(&(who, *conn));
                self.resumes_sent.retain(|_, sent| {
                    sent.retain(|(c, _)| *c != (who, *conn));
                    !sent.is_empty()
                });
                let facts = self.conns.get(&(who, *conn));
                let status = facts.and_then(|c| c.2);
                let lost_delete = match facts {
                    Some((Some(s), Method::Delete, None, _)) if matches!(end, ConnEnd::Reset | ConnEnd::Refused) => {
                        let how = if *end == ConnEnd::Refused { "was refused" } else { "was cut" };
                        Some((s.clone(), at, how.to_string()))
                    }
                    _ => None,
                };
                let c = self.clients.entry(who).or_default();
                if lost_delete.is_some() {
                    c.delete_lost = lost_delete;
                }
                if matches!(end, ConnEnd::Reset | ConnEnd::Refused) {
                    c.last_break = Some(at);
                }
                if *end != ConnEnd::Aborted {
                    c.last_close = Some((status, Some(*end), at));
                }
                if matches!(end, ConnEnd::Reset | ConnEnd::Refused) && status.is_none_or(|s| s.0 >= 500) {
                    let how = if *end == ConnEnd::Refused { "was refused" } else { "was cut" };
                    self.cancel_lost(i, at, who, *conn, how);
                } else {
                    // Taken by the server (or already judged lost on its 5xx): nothing to wait for.
                    self.cancel_posts.remove(&(who, *conn));
                }
            }
            StepKind::Backoff { call, delay_us, .. } => {
                let due = at + std::time::Duration::from_micros(*delay_us);
                let c = self.clients.entry(who).or_default();
                match call {
                    None => c.standalone_due = Some(due),
                    Some(call) if c.cursors.contains_key(call) && c.in_flight.contains_key(call) => {
                        c.reattach_due.insert(*call, due);
                    }
                    Some(call) => {
                        c.reattach_due.remove(call);
                    }
                }
            }
            StepKind::Decision { call, action, error, .. } => {
                // The decision procedure's words, or an SDK's for a call's stream it cannot resume
                // (a py-sdk 1.29 client whose POST stream a buffering CDN cut before the priming
                // event came through read as `conditions 1-4 held`).
                let no_id = |e: &str| {
                    e == NEVER_PERSISTED.as_str()
                        || (call.is_some() && e.contains(crate::client::NOTE_NO_POST_EVENT_ID))
                };
                if error.as_deref().is_some_and(no_id) {
                    self.never_persisted(i, at, who, *call);
                }
                if let (Some(key), Some(crate::client::NOTE_REISSUE)) = (call, error.as_deref()) {
                    self.request_lost(i, at, who, *key, false);
                    self.clients.entry(who).or_default().reissued.insert(*key);
                }
                if call.is_none() && error.as_deref() == Some(crate::client::NOTE_STANDALONE_GIVEN_UP) {
                    self.standalone_given_up(i, at, who);
                }
                if let Some(key) = call {
                    self.stream_stopped(i, at, who, *key, action.as_ref(), error.as_deref());
                    if let Some(action) = action {
                        self.resume_decided(i, at, who, *key, action);
                    }
                }
                self.decision(i, at, who, action.as_ref(), error.as_deref())
            }
            // The client told the application it gave its standalone stream up: the breach its
            // give-up stood for, at this instant, is not one ([`Judge::standalone_given_up`]).
            StepKind::AppStreamLost { .. } => {
                // Breaches are only ever pushed while the steps are read, so the index still
                // points at it.
                if let Some(at) = self.clients.get_mut(&who).and_then(|c| c.untold_stream.take()) {
                    self.breaches.remove(at);
                }
            }
            StepKind::AppError { call, error } => {
                self.told_of_cancelled(who, *call, true);
                let idempotent = self.clients.entry(who).or_default().in_flight.remove(call);
                self.gave_up(i, at, who, error);
                if idempotent == Some(false) {
                    self.unknown_told_as_failure(i, at, who, *call, error);
                }
            }
            StepKind::AppResult { call, .. } => {
                self.clients.entry(who).or_default().in_flight.remove(call);
            }
            StepKind::AppUnknownOutcome { call, reason } => {
                self.told_of_cancelled(who, *call, false);
                self.clients.entry(who).or_default().in_flight.remove(call);
                self.unknown.insert((who, *call), reason.clone());
                self.gave_up(i, at, who, reason);
            }
            // The task lost is the call's unknown outcome: after a "not found" (condition 2, read
            // from the answer), or after polls that went unanswered while the client was cut off.
            StepKind::AppTaskLost { task, call } => {
                self.clients.entry(who).or_default().in_flight.remove(call);
                self.unknown.insert((who, *call), format!("task {} lost", task.0));
                if self.clients.get(&who).is_some_and(ClientState::cut_off) {
                    let outage = self.outage(who, at);
                    let detail = format!(
                        "the client gave up polling task {} after {outage} without an answer: the outage outlasted its polls",
                        task.0
                    );
                    self.breach(Condition::Retention, i, at, detail);
                }
            }
            StepKind::AppReinitialize { session } if !self.ended.contains_key(session) => {
                // The `initialize` that carries it out is this breach's, not another.
                self.clients.entry(who).or_default().let_go = Some(session.clone());
                self.breach(
                    Condition::ByClass,
                    i,
                    at,
                    format!(
                        "the application started a new session at {at} while its client held session {session}, \
                         which no 404 had ended: the client let it go without a DELETE (the note re-initializes on \
                         a 404 only)"
                    ),
                )
            }
            StepKind::AppCall { call, tool, idempotent } => {
                let c = self.clients.entry(who).or_default();
                c.in_flight.insert(*call, *idempotent);
                c.sent.remove(call);
                c.reissued.remove(call);
                let blind = !idempotent;
                if let Some(reason) = self.unknown.remove(&(who, *call)).filter(|_| blind) {
                    self.breach(
                        Condition::ByClass,
                        i,
                        at,
                        format!(
                            "the application issued non-idempotent {tool} {call} again at {at} after it was told \
                             its outcome was unknown ({reason}): an unknown outcome is reconciled, not retried blindly"
                        ),
                    );
                }
            }
            StepKind::EventStored { session, stream, seq, id, call, .. } => {
                let key = (session.clone(), id.clone());
                self.id_reused(i, at, &key, *stream, *seq);
                self.stored_for.insert(key.clone(), *call);
                self.stored.insert(key, (*stream, *seq, at));
                let log = self.streams.entry((session.clone(), *stream)).or_default();
                // A stream's numbers run on by one; one that skips numbers shares its sequence
                // (and its store) with another session's stream.
                // Every log numbers from 0 (a stream without a priming event too: its first
                // message takes 0), so a stream whose first event is above 0 had its first
                // numbers stored by another session.
                let skips = log.last_key_value().map_or(*seq > 0, |(last, _)| *seq > last + 1);
                log.insert(*seq, at);
                if skips {
                    self.shared.insert((session.clone(), *stream));
                }
            }
            StepKind::SessionCreated { session, .. } => {
                self.creations.insert(i);
                self.active.insert((session.clone(), step.replica), at);
            }
            StepKind::LbRouted { conn, replica, .. } => {
                self.routed.insert((step.conn_client, *conn), *replica);
            }
            StepKind::ServerStart { sessions_share_store, .. } => self.sessions_share_store |= *sessions_share_store,
            StepKind::SessionEnded { session, reason, idle_ttl_us } => {
                self.ended.insert(session.clone(), (*reason, at));
                if *reason == SessionEndReason::IdleExpired {
                    self.tasks_cancelled_by_expiry(at, session);
                }
                if let (SessionEndReason::IdleExpired, Some(ttl)) = (reason, idle_ttl_us) {
                    let early = self.expired_inside(i, at, session, step.replica, *ttl);
                    let away =
                        self.ended_in_outage(i, at, session, &format!("expired (idle TTL {})", format_micros(*ttl)));
                    if !early && !away {
                        self.expired_busy(i, at, session);
                    }
                }
                if *reason == SessionEndReason::ServerRestart {
                    self.lost_by_restart(i, at, session);
                }
                if *reason == SessionEndReason::StreamConflict {
                    let detail = format!(
                        "the server ended session {session} itself at {at} when a second standalone GET came while \
                         it still had the first registered, cancelling its running tools (a second GET is a 409 to \
                         that GET, not the end of the session)"
                    );
                    self.record(Condition::ServerEnded, i, at, detail).rules = &["server.second_get"];
                }
                if *reason == SessionEndReason::WriteFailed {
                    self.breach(
                        Condition::ServerEnded,
                        i,
                        at,
                        format!(
                            "the server ended session {session} itself at {at} when a write to a connection whose \
                             client was gone failed (a disconnect is no termination)"
                        ),
                    );
                }
                let by_client = self.clients.values().any(|c| c.deleted.contains(session));
                if *reason == SessionEndReason::Deleted && !by_client {
                    self.breach(
                        Condition::Terminated,
                        i,
                        at,
                        format!("session {session} was deleted at {at}, not by its client (an operator's DELETE)"),
                    );
                }
            }
            StepKind::Resume { .. } => self.resume(i, at, &step.kind),
            StepKind::RefusedAfterHead { conn, status, session } if self.refused_after_head.insert(session.clone()) => {
                let detail = format!(
                    "the server refused a second standalone GET of session {session} ({conn}) at {at} with {status} \
                     in its own log, after its 200 head was committed: the client got an event stream that ended at \
                     once, while the first GET, which its client no longer reads, stays registered (a refusal \
                     must be the answer's status)"
                );
                let breach = self.record(Condition::ServerRefusedAfterHead, i, at, detail);
                (breach.session, breach.stream) = (Some(session.clone()), Some(StreamNo::STANDALONE));
            }
            StepKind::ProcessExit { conn, cause: ExitCause::ProtocolError, .. } => self.breach(
                Condition::ServerEnded,
                i,
                at,
                format!(
                    "the server process exited at {at} on one request it could not parse ({conn}), ending every \
                     session and running tool it held"
                ),
            ),
            StepKind::ProcessExit { conn, cause: ExitCause::SecondGet, session } => {
                let of = session.as_ref().map(|s| format!(" of session {s}")).unwrap_or_default();
                let detail = format!(
                    "the server process exited at {at} on a second standalone GET{of} ({conn}) while it still had \
                     the first registered, ending every session and running tool it held"
                );
                self.record(Condition::ServerEnded, i, at, detail).rules = &["server.second_get"];
            }
            StepKind::ServerClosedStream { session, stream, rule, after_us, .. } => {
                self.closed_by_server.insert(session.clone());
                let after = format_micros(*after_us);
                let what = match rule {
                    CloseRule::IdleStandalone => {
                        format!("the standalone stream of session {session} {after} after its last write")
                    }
                    CloseRule::RequestStream => {
                        format!("a request's stream of session {session} {after} after it opened")
                    }
                };
                let detail = format!(
                    "the server closed {what} ({} = {after}, first at {at}), and its client came back as asked: how \
                     often it re-attaches is that setting's",
                    rule.setting()
                );
                let breach = self.record(Condition::ServerPaced, i, at, detail);
                breach.session = Some(session.clone());
                breach.stream = *stream;
            }
            StepKind::LbAnswered { status, hop, .. } if status.0 < 500 => self.hop_answers.push_back((*status, *hop)),
            // Tasks (ext-tasks): condition 2 in their terms. The TTL is the task's retention, and
            // it runs from creation: work, waits and the client's polls must fit in it.
            // The decision procedure's answer to a lost session settles every non-idempotent call
            // sent in it as an unknown outcome (the note: in-flight requests are reconciled "as
            // unknown outcome"); one that polls a task goes on polling.
            StepKind::AppSessionLost { session } => {
                let c = self.clients.entry(who).or_default();
                if c.by_class {
                    let why = format!("its session {session} was lost");
                    for key in std::mem::take(&mut c.sent_unsafe) {
                        c.stopped.entry(key).or_insert((i, at, why.clone()));
                    }
                }
            }
            StepKind::TaskIdReceived { call, .. } => {
                self.clients.entry(who).or_default().sent_unsafe.remove(call);
                self.unreceived.remove(call);
            }
            StepKind::TaskCreated { task, call, ttl_us, .. } => {
                self.task_calls.insert(*call);
                self.tasks.insert(task.clone(), (at, *ttl_us, false));
                let answerable = self.posts.values().any(|c| c == call);
                if self.cut_posts.remove(call) && !answerable {
                    self.task_id_lost(i, at, *call, task, "ended before the task was created");
                } else {
                    self.unreceived.insert(*call, task.clone());
                }
            }
            StepKind::AppTaskOutcome { task, .. } => {
                if let Some(t) = self.tasks.get_mut(task) {
                    t.2 = true;
                }
            }
            StepKind::TaskEnded { task, status: crate::tasks::TaskStatus::Failed } => {
                if let Some((ttl, _)) = self.task_ttl_passed(task, at) {
                    let detail = format!(
                        "task {} was still working when its TTL ({ttl}, from its creation) ran out at {at}: the server \
                         aborted it (the TTL is shorter than the work and its waits)",
                        task.0
                    );
                    // The server's own word that the work failed comes with it.
                    self.record(Condition::Retention, i, at, detail).server_failed_work = true;
                }
            }
            // A dropped notification is owed to nobody the oracles can see (it was never stored);
            // a dropped answer leaves its call without one.
            StepKind::EventDropped { session, stream, call: Some(call), answer: true } => {
                let detail = format!(
                    "the server dropped the answer to {call} at {at} ({session} {stream}): it had closed the stream \
                     itself and, with no client attached, neither stored nor sent it, so no resume can bring it back"
                );
                let breach = self.breach_in(Condition::ServerDropped, i, at, detail, session);
                breach.stream = Some(*stream);
                breach.call = Some(*call);
            }
            StepKind::LbFlushed { conn, frames, held_us, hop } if *held_us > 0 => {
                let client = step.client.or(step.conn_client);
                if self.proxy_held.get(&client).is_none_or(|longest| held_us > longest) {
                    self.proxy_held.insert(client, *held_us);
                    let detail = format!(
                        "{} held {frames} frame(s) of {conn} back for {} and released them at {at} (response \
                         buffering: lb.hops[].buffer, flush_interval, or a held head)",
                        intermediary(*hop),
                        format_micros(*held_us)
                    );
                    self.record(Condition::ProxyHeld, i, at, detail);
                }
            }
            StepKind::LbHolding { conn, frames, held_us, hop } => {
                let detail = format!(
                    "{} still held {frames} frame(s) of {conn} when the run ended, the first for {}: they never \
                     reached the client (response buffering: lb.hops[].buffer below its size with no flush_interval, \
                     or a held head or tail)",
                    intermediary(*hop),
                    format_micros(*held_us)
                );
                self.record(Condition::ProxyHeld, i, at, detail).never_released = true;
            }
            StepKind::LbDiscarded { conn, frames, held_us, hop } => {
                let client = step.client.or(step.conn_client);
                // Nothing of this connection's answer got through, and its client had come back
                // after losing held frames before: what it came back for was held and lost the
                // same way, so no return gets it.
                let came_back = !self.lb_discarded.insert(client);
                let swallowed = came_back && !self.lb_released.contains(&(*hop, *conn));
                let again = if swallowed {
                    ": it released nothing of that connection's answer, and its client had come back after held \
                     frames went with an earlier one, so each return meets the same hold"
                } else {
                    ""
                };
                let detail = format!(
                    "{} held {frames} frame(s) of {conn} back, the first for {}, and they went with the connection \
                     at {at}: they never reached the client{again} (response buffering: lb.hops[].buffer, \
                     flush_interval, or a held head or tail)",
                    intermediary(*hop),
                    format_micros(*held_us)
                );
                let dropped = format!(
                    "{} dropped {frames} frame(s) it held back of {conn} with the connection",
                    intermediary(*hop)
                );
                match &mut self.last_discard {
                    Some((when, all)) if *when == at => all.push(dropped),
                    _ => self.last_discard = Some((at, vec![dropped])),
                }
                // A client that had an id of the stream resumes, and a server that keeps its
                // events replays them: late, not lost. One that had none reads its loss by
                // condition 1 (`never_persisted`). (Read as never released, the TypeScript
                // store's burst order, a server bug, read as this hop's price.) Unless the hold
                // swallows the returns too (a flush interval longer than the hop's idle timeout:
                // a swarm sweep of reference × py-sdk behind `cdn-alb` read the call it never
                // let through as "what broke cannot cause every-call-resolves").
                self.record(Condition::ProxyHeld, i, at, detail).never_released = swallowed;
            }
            StepKind::SideEffect { session, request, call, .. }
            | StepKind::ToolEnded { session, request, call, end: crate::trace::ToolEnd::Completed } => {
                self.ran_on_after_delete(i, at, session, *call);
                self.ran_on_after_sessionless_cancel(i, at, session, *request, *call);
            }
            // The server cancelled the work with its stream (its disconnect rule, the 2026-07-28
            // revision's): whatever the client, the request is lost and only a re-issue goes on.
            StepKind::ToolEnded { call, end: crate::trace::ToolEnd::Disconnected, .. } => {
                let owner = self.clients.iter().find(|(_, c)| c.in_flight.contains_key(call)).map(|(w, _)| *w);
                if let Some(owner) = owner {
                    self.request_lost(i, at, owner, *call, true);
                }
            }
            StepKind::CancelIgnored { session, call, .. } => {
                let detail = format!(
                    "the stream of {call} ended at {at} on a server whose rule makes that a cancel \
                     (server.disconnect_cancels), and its handler ignored it and ran on \
                     (server.disconnect_cancel_ignored)"
                );
                let rules = &["server.disconnect_cancels", "server.disconnect_cancel_ignored"];
                self.call_breach(Condition::WorkRunOn, i, at, detail, *call, rules).session = Some(session.clone());
            }
            StepKind::ToolEnded { session, request, call, end: crate::trace::ToolEnd::Cancelled } => {
                self.cancelled_by_another(i, at, session, *request, *call);
                self.cancelled_tools.retain(|(when, _, _)| *when == at);
                self.cancelled_tools.push((at, session.clone(), *call));
            }
            StepKind::TaskEnded { task, status: crate::tasks::TaskStatus::Cancelled } => {
                self.cancelled_tasks.retain(|(_, when, _)| *when == at);
                self.cancelled_tasks.push((i, at, task.clone()));
            }
            StepKind::TaskRecordRemoved { task, work_running, lost } => {
                let outcome_seen = self.tasks.get(task).is_some_and(|t| t.2);
                let (created, ttl_us) = self.tasks.get(task).map_or((None, None), |t| (Some(t.0), t.1));
                let passed = self.task_ttl_passed(task, at);
                if let (false, Some(created), Some(ttl_us), None) = (*lost, created, ttl_us, &passed) {
                    // The expiry rule removed it before the TTL it was created with ran out.
                    let detail = format!(
                        "the server removed task {}'s record at {at}, {} after its creation, inside the {} TTL \
                         it was created with",
                        task.0,
                        format_micros((at - created).as_micros() as u64),
                        format_micros(ttl_us)
                    );
                    self.breach(Condition::ServerEnded, i, at, detail);
                    return;
                }
                let ttl = passed.map_or_else(|| "its TTL".to_string(), |(t, _)| format!("its TTL ({t})"));
                if *lost && !outcome_seen {
                    self.breach(
                        Condition::Retention,
                        i,
                        at,
                        format!(
                            "task {}'s record was lost at {at} with the process that held its store (a restart), \
                             before its client read its outcome",
                            task.0
                        ),
                    );
                } else if *work_running {
                    self.breach(
                        Condition::Retention,
                        i,
                        at,
                        format!(
                            "task {}'s record was deleted at {at}, at {ttl}, while its work still ran: the TTL is \
                             shorter than the work",
                            task.0
                        ),
                    );
                } else if !outcome_seen {
                    self.breach(
                        Condition::Retention,
                        i,
                        at,
                        format!(
                            "task {}'s result was evicted at {at}, before its client's poll read it: the TTL is \
                             shorter than the work and the client's poll after it",
                            task.0
                        ),
                    );
                }
            }
            // A hop rewrote the request: what the client sent never reached the server.
            StepKind::LbHeaderDropped { conn, header, hop } => {
                let (condition, detail) = match header {
                    // The server saw a fresh GET: it could not refuse an id it never got.
                    RequestHeader::LastEventId => (
                        Condition::Refused,
                        format!(
                            "hop{hop} dropped Last-Event-ID from {conn}: the server got a fresh GET and could not \
                             refuse an id it never saw (the resume starts at the head of another stream)"
                        ),
                    ),
                    // The server refused a request without its session: the client's reaction
                    // answers what a hop did, not a lost session.
                    RequestHeader::McpSessionId => (
                        Condition::ByClass,
                        format!(
                            "hop{hop} dropped Mcp-Session-Id from {conn}: the server got the request without its \
                             session, and the client acted on an answer its session did not earn"
                        ),
                    ),
                };
                self.breach(condition, i, at, detail);
            }
            // A hop rewrote the answer: the client never got what the server gave it.
            StepKind::LbResponseHeaderDropped { conn, header: ResponseHeader::McpSessionId, hop } => self.breach(
                Condition::ByClass,
                i,
                at,
                format!(
                    "hop{hop} dropped Mcp-Session-Id from the response on {conn}: the client never got the session \
                     the server created, and went on without one"
                ),
            ),
            _ => {}
        }
    }

    /// A task's TTL, shown, when `at` is at or past its end (`created + ttl`).
    fn task_ttl_passed(&self, task: &crate::tasks::TaskId, at: Instant) -> Option<(String, Instant)> {
        let (created, ttl_us, _) = self.tasks.get(task)?;
        let end = Instant(created.0.saturating_add((*ttl_us)?));
        (at >= end).then(|| (format_micros(ttl_us.unwrap_or_default()), end))
    }

    /// How long the client had been without an answer at `at`.
    fn outage(&self, who: Option<u32>, at: Instant) -> String {
        let since = self.clients.get(&who).and_then(|c| c.last_contact).unwrap_or(Instant(0));
        format_micros((at - since).as_micros() as u64)
    }

    fn session_not_found(&mut self, i: usize, at: Instant, who: Option<u32>, session: Option<SessionId>) {
        let Some(session) = session else { return };
        if self.clients.get(&who).is_some_and(|c| c.deleted.contains(&session)) {
            return;
        }
        let outage = self.outage(who, at);
        let why = match self.ended.get(&session) {
            // An expiry that was the server's bug (inside its TTL, or of a busy session) is judged
            // where it happened: the outage outlasted no retention.
            Some((SessionEndReason::IdleExpired, _)) if self.expired_by_bug.contains(&session) => return,
            Some((SessionEndReason::IdleExpired, t)) => format!("it expired (idle TTL) at {t}"),
            Some((SessionEndReason::ServerRestart, t)) => format!("the server restart at {t} lost it"),
            // A deletion is a termination, judged where it happened.
            Some((SessionEndReason::Deleted, _)) => return,
            // The server itself ended a session its client still held, on a transport fact (a
            // write to a connection whose client was gone, a second standalone GET while it
            // still had one registered) or on one malformed request (its process exited): no
            // condition covers that, so what follows is a server bug.
            Some((
                SessionEndReason::WriteFailed | SessionEndReason::ProcessExit | SessionEndReason::StreamConflict,
                _,
            )) => return,
            None => "the server that answered does not hold it".to_string(),
        };
        self.breach_in(
            Condition::Retention,
            i,
            at,
            format!("session {session} was gone when the client came back after {outage} without an answer: {why}"),
            &session,
        );
    }

    /// The decision procedure found no `Last-Event-ID` to resume the stream of `call` (`None`:
    /// the standalone stream) from: a breach of condition 1 if the server had stored an event on
    /// that stream in the client's session whose id never reached it (the break came while it was
    /// on its way), so that there was something to resume from.
    fn never_persisted(&mut self, i: usize, at: Instant, who: Option<u32>, call: Option<crate::ids::CallKey>) {
        let Some(c) = self.clients.get(&who) else { return };
        let Some(session) = c.session.clone() else { return };
        let on_stream = |s: &SessionId, id: &EventId, stream: StreamNo| {
            *s == session
                && match call {
                    Some(_) => self.stored_for.get(&(s.clone(), id.clone())) == Some(&call),
                    None => stream == StreamNo::STANDALONE,
                }
        };
        let missed = self
            .stored
            .iter()
            .filter(|((s, id), (stream, _, _))| {
                on_stream(s, id, *stream) && !c.received_in.contains(&(s.clone(), id.clone()))
            })
            .min_by_key(|(_, (_, _, stored_at))| *stored_at);
        let Some(((_, id), (stream, _, stored_at))) = missed else {
            // Nothing stored on it yet: a call's stream then loses nothing the decision does not
            // tell (its outcome is unknown); the standalone stream loses what the server stores
            // until a fresh GET opens it again, which replays nothing. A server that sends no
            // priming event on it gives the client no id before its first notification (a
            // sweep of reference × py-sdk read a notification stored in the outage as a bug).
            if call.is_none() && self.last_standalone_received(who, &session).is_none() {
                let detail = format!(
                    "the standalone stream of session {session} broke at {at} before any event id reached the client: \
                     it had no Last-Event-ID to persist, so what the server stores until a fresh GET opens it again \
                     is lost"
                );
                self.breach_in(Condition::Persisted, i, at, detail, &session);
            }
            return;
        };
        let mut detail = format!(
            "a stream of session {session} broke before event {id} (stored at {stored_at}) reached the client: it \
             had no Last-Event-ID to persist, so resumption was impossible and the stream starts again at the head"
        );
        // A buffering hop that held the stream's first events back is what a reader must see.
        if let Some((_, dropped)) = self.last_discard.as_ref().filter(|(when, _)| *when == at) {
            detail.push_str(&format!(" (at that instant {})", dropped.join("; ")));
        }
        // It costs what that stream carried: not another stream's events, nor another session's.
        let stream = *stream;
        self.breach_in(Condition::Persisted, i, at, detail, &session).stream = Some(stream);
    }

    /// An event reached a connection of session `S` that `S` never stored, and another session
    /// stored it on a stream whose store it shares: the store handed one session's event to
    /// another.
    fn event_from_a_shared_store(
        &mut self,
        i: usize,
        at: Instant,
        who: Option<u32>,
        conn: ConnId,
        id: Option<&EventId>,
    ) {
        let (Some(id), Some((Some(session), ..))) = (id, self.conns.get(&(who, conn))) else { return };
        if self.stored.contains_key(&(session.clone(), id.clone())) {
            return;
        }
        // The sharing shows in the numbering of either session's stream of that number, or the
        // server said so when it started.
        let shared = |s: &SessionId, k: &StreamNo| self.sessions_share_store || self.shared.contains(&(s.clone(), *k));
        let other = self
            .stored
            .iter()
            .find(|((s, e), (stream, _, _))| e == id && s != session && (shared(s, stream) || shared(session, stream)));
        let Some(((other, _), _)) = other else { return };
        let detail = format!(
            "session {session} was handed event {id}, which session {other} stored in an event store the two share: \
             the server cannot keep one session's events from another's"
        );
        self.breach(Condition::Refused, i, at, detail);
    }

    /// A request for `call` was lost with its stream: a modern client re-issues it (the
    /// 2026-07-28 revision keeps nothing to resume), or a server whose disconnect cancels ended
    /// its work with the stream (`tool-ended disconnected`), whatever the client (a legacy client
    /// of a server of the new revision can only send it again). The revision's price, recorded at
    /// the first such loss of each client (it explains any of that client's calls left
    /// unresolved).
    fn request_lost(&mut self, i: usize, at: Instant, who: Option<u32>, call: crate::ids::CallKey, by_server: bool) {
        if !self.lost_requests.insert(who) {
            return;
        }
        let detail = if by_server {
            format!(
                "the server ends a request's work with its stream (its disconnect cancels, the revision's rule; \
                 the first, {call}'s, at {at}): the client can only send it again, and a tool that outlasts the \
                 streams carrying it never ends"
            )
        } else {
            format!(
                "the client's requests are lost with their streams and re-issued (the revision keeps nothing to \
                 resume; the first, {call}'s, at {at}): a tool that outlasts the streams carrying it never ends"
            )
        };
        self.breach(Condition::RequestLost, i, at, detail);
    }

    /// A `DELETE` answered 404, or 2xx, while its session had not ended: it landed where the
    /// session is not held (a replica-local session routed elsewhere; a server ends a session it
    /// deletes before it answers), so the session lives on, undeleted. A 2xx is what a server
    /// that takes an unknown id for deleted says (rmcp's 202): the client cannot even tell.
    fn delete_not_held(&mut self, i: usize, at: Instant, status: Status, session: Option<SessionId>) {
        let Some(session) = session.filter(|s| !self.ended.contains_key(s)) else { return };
        self.breach_in(
            Condition::Retention,
            i,
            at,
            format!(
                "the DELETE of session {session} was answered {} at {at} by a server that does not hold it: the \
                 session lives on where it is held, undeleted",
                status.0
            ),
            &session,
        );
    }

    /// A client got a 4xx an intermediary gave by itself, for a request naming `session`: what
    /// it says of the session is not the server's word. The client cannot tell it from the
    /// server's own (condition 4 cannot hold); with the session still held by the server, a
    /// client that takes it for "session gone" orphans a live session.
    fn hop_answered(&mut self, i: usize, at: Instant, status: Status, hop: Option<u32>, session: Option<SessionId>) {
        let Some(session) = session else { return };
        let who = hop.map_or("the balancer".to_string(), |h| format!("hop{h}"));
        let held = match self.ended.get(&session) {
            None => "which the server still held",
            Some(_) => "which had ended on the server anyway",
        };
        self.breach(
            Condition::ByClass,
            i,
            at,
            format!(
                "{who} answered {status} by itself (not the server) to a request in session {session}, {held}: no \
                 client can tell a proxy's own {status} from the server's"
            ),
        );
    }

    /// A client starts a new session: if its last `DELETE` of the old one never got through and
    /// the server still holds that session, the client gave up deleting it while cut off.
    fn initialize_after_lost_delete(&mut self, i: usize, at: Instant, who: Option<u32>) {
        let Some(c) = self.clients.get_mut(&who) else { return };
        let Some((session, lost_at, how)) = c.delete_lost.take() else { return };
        if self.ended.contains_key(&session) {
            return;
        }
        let outage = self.outage(who, lost_at);
        self.breach_in(
            Condition::Retention,
            i,
            at,
            format!(
                "the client's DELETE of session {session} never got through (its last attempt {how} at {lost_at}, \
                 {outage} without an answer) and it started a new session at {at}: the outage outlasted its \
                 attempts, and the server still holds the old one"
            ),
            &session,
        );
    }

    /// A client connection that posted a call ended without the `CreateTaskResult` of the task
    /// the server created for it: the client never held the id, so it had none to poll or
    /// persist. Condition 1 as the note's "never persisted" (a stream broken before its first id
    /// reached the client): no client can find that task again. A connection that ended before
    /// the task was created (its request still on its way) is remembered, and the breach recorded
    /// at the creation (`cut_posts`).
    fn task_reply_lost(&mut self, i: usize, at: Instant, who: Option<u32>, conn: ConnId, end: ConnEnd) {
        let Some(call) = self.posts.remove(&(who, conn)) else { return };
        if matches!(end, ConnEnd::Clean | ConnEnd::Aborted) {
            return;
        }
        match self.unreceived.remove(&call) {
            Some(task) => self.task_id_lost(i, at, call, &task, &format!("ended ({end})")),
            None => {
                self.cut_posts.insert(call);
            }
        }
    }

    /// Records the condition-1 breach of a task whose id never reached its client.
    fn task_id_lost(
        &mut self,
        i: usize,
        at: Instant,
        call: crate::ids::CallKey,
        task: &crate::tasks::TaskId,
        how: &str,
    ) {
        let detail = format!(
            "the connection to carry {call}'s CreateTaskResult {how}, and task {}'s id never reached the client \
             (at {at}): it had no id to poll or persist",
            task.0
        );
        self.record(Condition::Persisted, i, at, detail).task_id_lost = true;
    }

    /// A black hole caught client `who`'s connections at `at` ([`Condition::BlackHole`], the
    /// fault injector's `black-holed` step): from then on what they carry reaches nobody, and
    /// neither end is told. The client is cut off from here (its last break), though it does not
    /// know it, until an answer reaches it again (a connection opened after the hole): what the
    /// server does meanwhile on a timer of its own (an idle expiry of a session whose request the
    /// balancer cut, for one) happened in an outage, as under a partition. (A swarm search of
    /// py-sdk × py-sdk with black holes read such an expiry, the Python rule's, as the server's
    /// bug: a session expired "while its client was still attached".)
    ///
    /// A connect the hole swallowed (`connect`) is the same price for its exchange: it goes
    /// out only with a SYN sent after the hole closes, so what it carries comes late, or not at
    /// all (a swarm search of the reference pair read a notification delayed so as `conditions
    /// 1-4 held`).
    fn black_holed(&mut self, i: usize, at: Instant, who: Option<u32>, conns: &[ConnId], idle: u32, connect: bool) {
        self.clients.entry(who).or_default().last_break = Some(at);
        let mut what: Vec<String> = conns.iter().map(|c| c.to_string()).collect();
        if connect {
            let detail = format!(
                "the network dropped the SYN of the client's connection {} at {at} without an answer (a black hole): \
                 the exchange waits for a SYN sent after the hole closes, and what it carries comes late or not at all",
                what.join(", ")
            );
            self.record(Condition::BlackHole, i, at, detail).client = who;
            return;
        }
        if idle > 0 {
            what.push(format!("{idle} kept-alive connection(s) idle in its pool"));
        }
        let detail = format!(
            "the network dropped the client's connections ({}) at {at} and told neither end (no end, no reset): what \
             they carried from then on reached nobody, and only a timer (the client's request timeout, the server's \
             keep-alives, an idle expiry) could end the wait",
            what.join(", ")
        );
        let index = self.breaches.len();
        self.record(Condition::BlackHole, i, at, detail).client = who;
        let calls: Vec<crate::ids::CallKey> =
            conns.iter().filter_map(|conn| self.posts.get(&(who, *conn))).copied().collect();
        let c = self.clients.entry(who).or_default();
        if let Some(get) = c.standalone_get.as_ref().filter(|get| conns.contains(&get.conn)) {
            c.caught_standalone = Some((get.session.clone(), index));
        }
        c.caught_calls.extend(calls.into_iter().map(|call| (call, index)));
    }

    /// Client `who`'s `GET` of `session` on `conn` answered `status`: after a black hole caught
    /// the connection of that session's standalone stream, a `409` to a `GET` of that stream
    /// says the server still counts the caught connection as the stream's, which it was never
    /// told had died (the one standalone stream a session may have in the TypeScript, Python and
    /// Go servers). What the client does on each such refusal is then the hole's price
    /// (`Breach::kept_claim`). An answer below 400 to one ends it: the server let a new `GET` of
    /// the stream in. A resume of a call's stream says nothing of it. (A swarm sweep with black
    /// holes read the TypeScript and Python clients' returns to a Python or Go server's 409s as
    /// `bounded-reconnects` that "what broke cannot cause".)
    fn claim_kept(&mut self, at: Instant, who: Option<u32>, conn: ConnId, session: &SessionId, status: Status) {
        let Some(c) = self.clients.get_mut(&who) else { return };
        // Only a `GET` of the standalone stream: a resume of a call's stream says nothing of it.
        let standalone = c.standalone_get.as_ref().is_some_and(|get| get.conn == conn);
        if !standalone || c.caught_standalone.as_ref().is_none_or(|(s, _)| s != session) {
            return;
        }
        if status.0 < 400 {
            c.caught_standalone = None;
        } else if let (Status::CONFLICT, Some((_, index))) = (status, c.caught_standalone.clone()) {
            let what = format!("the standalone stream of session {session}");
            self.hole_kept_claim(index, &what, &format!("refused the client's new GET with 409 at {at}"));
        }
    }

    /// The server answered a resume from `id` in `session`: replayed and ended at once, or
    /// refused, since another connection still claimed the stream (`claimed`: the resume step's
    /// `claimed_by`, under `replay-and-close` or `reject409`), or let in (`claimed` false). If a
    /// black hole had caught the client's connection of that stream (its standalone `GET`, or
    /// the `POST` of the call the id was stored for), that is the connection the server keeps,
    /// and the client's return after each answer is the hole's price as a `409` to a `GET` is
    /// ([`Judge::claim_kept`]); let in, the claim is over. (Sweeps with black holes read the
    /// Python server's replay-and-close of the standalone stream every `retry`, and of a call's
    /// stream every second, as "what broke cannot cause bounded-reconnects".)
    fn resume_closed_for_claim(
        &mut self,
        at: Instant,
        session: &SessionId,
        id: &EventId,
        stream: StreamNo,
        how: Option<String>,
    ) {
        let call = self.stored_for.get(&(session.clone(), id.clone())).copied().flatten();
        let call = call.filter(|_| stream != StreamNo::STANDALONE);
        let Some(how) = how else {
            // Let in: a call's claim is over (the standalone stream's ends with a `GET` let in).
            if let Some(call) = call {
                self.clients.values_mut().for_each(|c| _ = c.caught_calls.remove(&call));
            }
            return;
        };
        let kept: Vec<(usize, String)> = self
            .clients
            .values()
            .filter_map(|c| match call {
                None if stream == StreamNo::STANDALONE => c
                    .caught_standalone
                    .as_ref()
                    .filter(|(s, _)| s == session)
                    .map(|(_, index)| (*index, format!("the standalone stream of session {session}"))),
                Some(call) => {
                    c.caught_calls.get(&call).map(|index| (*index, format!("{call}'s stream in session {session}")))
                }
                None => None,
            })
            .collect();
        for (index, what) in kept {
            self.hole_kept_claim(index, &what, &format!("{how} at {at}"));
        }
    }

    /// The black hole's breach at `index`: the server kept its claim on `what` (a stream), and
    /// `how` it answered the client's return ([`Breach::kept_claim`], said once).
    fn hole_kept_claim(&mut self, index: usize, what: &str, how: &str) {
        if let Some(b) = self.breaches.get_mut(index).filter(|b| !b.kept_claim) {
            b.kept_claim = true;
            b.detail.push_str(&format!(
                "; the server, never told, still counted the connection it caught as {what} and {how}, so the client \
                 came back for it again"
            ));
        }
    }

    /// A non-idempotent call whose request the client had sent, told to the application as a
    /// failure when the client could not know what became of it: its own time-out, its give-up,
    /// a stream that ended without the response, a re-initialize before it
    /// ([`crate::client::ERRS_OUTCOME_UNKNOWN`]); its task's polls given up, or its task not
    /// found (the SDKs' `get_task` error passed on, where the note's client reports the task
    /// lost: a sweep of the Python and rmcp clients' task families read both as unexplained). The work may have run, and the note reconciles
    /// in-flight requests as unknown outcome, which is what its decision procedure reports
    /// (`Client::time_out`, `Client::give_up`). Telling it as a failure does not tell the classes
    /// apart (condition 4): the price of the client's rule (the SDKs' `Request timed out`,
    /// `connection closed`), or its bug if its policy keeps condition 4. What brought it on (an
    /// outage that outlasted the reconnects: condition 2, [`Judge::gave_up`]) cannot cause the
    /// false failure; this can. A request never sent failed for certain, and an idempotent call's
    /// error misleads nobody.
    fn unknown_told_as_failure(
        &mut self,
        i: usize,
        at: Instant,
        who: Option<u32>,
        call: crate::ids::CallKey,
        error: &str,
    ) {
        let Some(c) = self.clients.get(&who) else { return };
        // A task given up unanswered, or one the server no longer finds, may have run to its
        // end: neither is the work's failure.
        let task_unknown = error == crate::client::ERR_TASK_POLLS || c.task_not_found == Some(at);
        // An attempt lost with its stream and re-issued may have run, whatever refused the next
        // one (a sweep of the modern client in a mixed fleet: a re-issue answered 400 by a
        // replica that serves only the older era, told as the call's failure).
        let lost_attempt = c.reissued.contains(&call);
        if !(crate::client::ERRS_OUTCOME_UNKNOWN.contains(&error) || task_unknown || lost_attempt)
            || !c.sent.contains(&call)
        {
            return;
        }
        let by_class = c.by_class;
        let detail = format!(
            "the client told the application at {at} that {call} failed ({error}) though it had sent the request \
             and could not know what became of it: the work may have run (the note reconciles in-flight requests \
             as unknown outcome)"
        );
        self.record(Condition::ByClass, i, at, detail).promised = by_class;
    }

    /// An `initialize` sent while the client holds a session that no 404 ended (nor it, nor the
    /// server), cut off from the server since a transport failure: it lets a live session go on a
    /// transport fact, which the note's procedure does only on a 404 (condition 4), as the Python
    /// SDK does when the `notifications/initialized` of its handshake is reset (a guided sweep of
    /// py-sdk × reference read the second session that followed as unexplained). A decision to
    /// re-initialize already stands for it ([`Judge::decision`]).
    fn initialize_while_held(&mut self, i: usize, at: Instant, who: Option<u32>) {
        let Some(c) = self.clients.get_mut(&who) else { return };
        let Some(session) = c.held().filter(|_| c.cut_off()).cloned() else { return };
        let gone = c.not_found.contains(&session) || self.ended.contains_key(&session);
        if gone || c.let_go.replace(session.clone()) == Some(session.clone()) {
            return;
        }
        let by_class = c.by_class;
        let detail = format!(
            "the client initialized again at {at} while it held session {session}, which no 404 had ended, after a \
             transport failure (the note re-initializes on a 404 only)"
        );
        self.record(Condition::ByClass, i, at, detail).promised = by_class;
    }

    /// The client's handshake failed and it will send `initialize` again, leaving the session the
    /// failed handshake was answered with. Failed on an answer (a `401`, a `403`: not a transport
    /// fact), that letting go is the answer's, judged where the answer is (a balancer's own
    /// answer is condition 4); every `initialize` of the retries that follow, one of them
    /// perhaps after a transport failure, carries out that one decision. (A search of the
    /// reference pair read the retries of a handshake the balancer refused with its own `401`,
    /// once a partition had refused one of them, as a session let go on a transport fact.)
    /// Failed on a transport fact, the next `initialize` is judged as such
    /// ([`Judge::initialize_while_held`]); a failure on an answer after one (the retried
    /// `notifications/initialized` of a reset handshake, refused with a `401`) is the answer's.
    ///
    /// Refused as malformed or unsupported (400, 405, 406, 415, 422: a server of another era
    /// refuses every `initialize` alike), trying again takes a standing refusal for a passing
    /// fault (condition 4; the client's bug if its policy keeps it), named once per client: a
    /// sweep of the legacy clients against a modern-only server, attempts unlimited, read the
    /// calls the retries held up `conditions 1-4 held`.
    fn handshake_failed(&mut self, i: usize, at: Instant, who: Option<u32>) {
        let Some(c) = self.clients.get_mut(&who) else { return };
        let answered = c.last_close.as_ref().and_then(|close| close.0).is_some_and(|s| s.is_client_error());
        if !answered {
            return;
        }
        if let Some(session) = c.held().cloned() {
            c.let_go = Some(session);
        }
        // The `initialize` itself refused, not a later step of the handshake (its
        // `notifications/initialized` refused for a session header a hop dropped).
        let Some(status) = c.init_answer.filter(|s| s.refuses_the_request()) else { return };
        if std::mem::replace(&mut c.retried_refused_init, true) {
            return;
        }
        let by_class = c.by_class;
        let detail = format!(
            "the client tried its handshake again at {at} after HTTP {} to its initialize: the server refuses the \
             request itself (another era's server, an unsupported method or format) and will refuse every attempt \
             alike, which a client acting by class reports instead of retrying",
            status.0
        );
        self.record(Condition::ByClass, i, at, detail).promised = by_class;
    }

    /// The client gave up reconnecting its standalone stream. A client that runs the note's
    /// procedure tells the application (a gap it cannot fill: `app-stream-lost`, at the same
    /// instant), so that what the stream would have carried is a loss it knows of; one that does
    /// not (the naive client, the SDKs: a log line at most) leaves it silent, which is condition
    /// 4 (the note surfaces possible event loss to the caller), the client's bug if its policy
    /// keeps condition 4. A report that follows takes the breach back. (The naive client's
    /// `standalone-notify` cell read as `conditions 1-4 held`.)
    /// A `GET` after it opens a new stream: the ids of the one given up are no longer its to
    /// resume from (a sweep of reference × `rmcp-1.3` read a durable restart's fresh `GET`,
    /// after the stream was given up and the loss told, as the client throwing its id away).
    fn standalone_given_up(&mut self, i: usize, at: Instant, who: Option<u32>) {
        let index = self.breaches.len();
        let Some(c) = self.clients.get_mut(&who) else { return };
        c.standalone_get = None;
        c.untold_stream = Some(index);
        let by_class = c.by_class;
        let detail = format!(
            "the client gave up its standalone stream at {at} without telling the application (the note surfaces \
             possible event loss to the caller)"
        );
        self.record(Condition::ByClass, i, at, detail).promised = by_class;
    }

    /// Whether `session` stored event `id` on a call's stream.
    fn on_call_stream(&self, session: &SessionId, id: &EventId) -> bool {
        self.stored.get(&(session.clone(), id.clone())).is_some_and(|(k, _, _)| *k != StreamNo::STANDALONE)
    }

    /// The latest event of `session`'s standalone stream that client `who` received (by seq).
    fn last_standalone_received(&self, who: Option<u32>, session: &SessionId) -> Option<&EventId> {
        let c = self.clients.get(&who)?;
        c.received_in
            .range((session.clone(), EventId::from(""))..)
            .take_while(|(s, _)| s == session)
            .filter_map(|(_, id)| match self.stored.get(&(session.clone(), id.clone())) {
                Some((StreamNo::STANDALONE, seq, _)) => Some((*seq, id)),
                _ => None,
            })
            .max_by_key(|(seq, _)| *seq)
            .map(|(_, id)| id)
    }

    /// A `GET` in `session` sent on `conn`, with `last` as its `Last-Event-ID`. A fresh one (no
    /// id) opens the standalone stream: when the client had received ids on that session's
    /// standalone stream and its last `GET` of that stream (fresh or resuming) was not refused (a
    /// `4xx`, after which starting over is the answer: the id is gone or the stream refused), it
    /// starts the stream again at the head though it had an id to resume from. The note's client
    /// reconnects with the last id it received; one that keeps none breaks condition 1 (the first incident's client: "Last-Event-ID never persisted"), and a
    /// server that hands a fresh stream what it still buffers then repeats what the application
    /// already has. A client whose policy keeps the id (durable) and starts over all the same
    /// treats a transport break as the stream's end: condition 4, its bug if its policy acts by
    /// class. (The naive client's guided sweep of `standalone-notify` read its duplicates as
    /// `conditions 1-4 held`.)
    fn standalone_get(
        &mut self,
        i: usize,
        at: Instant,
        who: Option<u32>,
        conn: ConnId,
        session: &SessionId,
        last: Option<&EventId>,
    ) {
        // A resume of a call's stream is no `GET` of the standalone stream; one from an id the
        // session never stored (another session's, from a store they share) is.
        if last.is_some_and(|id| self.on_call_stream(session, id)) {
            return;
        }
        let seen = if last.is_none() { self.last_standalone_received(who, session).cloned() } else { None };
        let Some(c) = self.clients.get_mut(&who) else { return };
        let fresh = last.is_none().then(|| seen.clone());
        let previous = c.standalone_get.replace(StandaloneGet { session: session.clone(), conn, fresh });
        if last.is_some() {
            return;
        }
        let Some(previous) = previous.filter(|p| &p.session == session) else { return };
        let facts = self.conns.get(&(who, previous.conn));
        if facts.and_then(|f| f.2).is_some_and(|s| s.is_client_error()) {
            return;
        }
        let Some(id) = seen else {
            let since = facts.map_or(Instant(0), |f| f.3);
            return self.standalone_again_without_id(i, at, who, conn, session, since);
        };
        // A fresh `GET` after a fresh one, with no id received between them, starts over from
        // where that one did: the first was judged (a refusal before it excused both).
        if previous.fresh == Some(Some(id.clone())) {
            return;
        }
        let c = &self.clients[&who];
        let (durable, by_class) = (c.durable, c.by_class);
        let opened = format!(
            "the client opened the standalone stream of session {session} again at {at} without Last-Event-ID, though \
             it had received event {id} on it"
        );
        if durable {
            let detail = format!(
                "{opened}: it kept the id and started over at the head all the same, as if the break ended the stream"
            );
            self.breach_in(Condition::ByClass, i, at, detail, session).promised = by_class;
        } else {
            let detail = format!("{opened}: it kept no id to resume from, so the stream starts again at the head");
            self.breach_in(Condition::Persisted, i, at, detail, session);
        }
    }

    /// A fresh `GET` of `session`'s standalone stream after another `GET` of it sent at `since`,
    /// with no event id of that stream ever received: the stream broke (or its client process
    /// restarted) before its first id, and what the server stored on it since `since` that
    /// never reached the client is lost, for a fresh stream replays nothing. Condition 1, as when
    /// the decision procedure finds no id ([`Judge::never_persisted`]), which a restart does
    /// not run. (A sweep of reference × py-sdk, whose standalone stream sends no priming event,
    /// read a notification stored at the instant of a durable client's restart as `conditions
    /// 1-4 held`.)
    ///
    /// What the server stores after the new `GET` went and before it attached it is lost the
    /// same way: when nothing missed is stored yet, the `GET` (on `conn`) is remembered, and
    /// judged again when its stream hands over its first event, counting what was stored
    /// before that event ([`Judge::first_event_after_no_id`]). (A sweep of rmcp × py-sdk read a
    /// notification stored at the instant of the reset, after the client's fresh `GET` went, as
    /// `conditions 1-4 held`.)
    fn standalone_again_without_id(
        &mut self,
        i: usize,
        at: Instant,
        who: Option<u32>,
        conn: ConnId,
        session: &SessionId,
        since: Instant,
    ) {
        if !self.missed_since_no_id(i, at, who, session, since, None) {
            let fresh = FreshAfterNoId { session: session.clone(), since, step: i, at };
            self.fresh_after_no_id.insert((who, conn), fresh);
        }
    }

    /// The first event with an id `who` received on `conn`: if `conn` is a fresh standalone
    /// `GET` sent after a stream broken before its first id, what the server stored on the
    /// standalone stream before this event and never handed over is lost with it.
    fn first_event_after_no_id(&mut self, who: Option<u32>, conn: ConnId, id: &EventId) {
        let Some(fresh) = self.fresh_after_no_id.remove(&(who, conn)) else { return };
        let Some(&(StreamNo::STANDALONE, _, stored_at)) = self.stored.get(&(fresh.session.clone(), id.clone())) else {
            return;
        };
        self.missed_since_no_id(fresh.step, fresh.at, who, &fresh.session, fresh.since, Some(stored_at));
    }

    /// Breaks condition 1 at step `i` (the fresh `GET` at `at`) if an event `session` stored
    /// on its standalone stream from `since` (and before `before`, if given) never reached
    /// `who`; says whether it did.
    fn missed_since_no_id(
        &mut self,
        i: usize,
        at: Instant,
        who: Option<u32>,
        session: &SessionId,
        since: Instant,
        before: Option<Instant>,
    ) -> bool {
        let Some(c) = self.clients.get(&who) else { return false };
        let missed = self
            .stored
            .range((session.clone(), EventId::from(""))..)
            .take_while(|((s, _), _)| s == session)
            .filter(|((_, id), (stream, _, stored_at))| {
                *stream == StreamNo::STANDALONE
                    && *stored_at >= since
                    && before.is_none_or(|b| *stored_at < b)
                    && !c.received_in.contains(&(session.clone(), id.clone()))
            })
            .min_by_key(|(_, (_, _, stored_at))| *stored_at);
        let Some(((_, id), (_, _, stored_at))) = missed else { return false };
        let detail = format!(
            "the client opened the standalone stream of session {session} again at {at} without Last-Event-ID: no \
             event id of it had reached the client, so event {id} (stored at {stored_at}) and what followed it \
             before the new stream are lost"
        );
        self.breach_in(Condition::Persisted, i, at, detail, session);
        true
    }

    /// The connection `conn` of a client's `notifications/cancelled` broke (`how`) before the
    /// server took it: the work the cancel meant to stop runs on, and its result waits in the
    /// session for nobody. A client that then tells the application the call failed (the SDKs'
    /// "request timed out", which sent the cancel once and never again) claims an end the server
    /// never heard of; the note reconciles such a call as an unknown outcome (a client acting by
    /// class), which tells the application the work may have run. Condition 4, the client's bug
    /// if its policy keeps it. (A guided sweep of the TypeScript client read the result its
    /// timed-out call left in the session, when the cancel was lost to a reset, as `conditions
    /// 1-4 held`.)
    fn cancel_lost(&mut self, i: usize, at: Instant, who: Option<u32>, conn: ConnId, how: &str) {
        let Some((call, told)) = self.cancel_posts.remove(&(who, conn)) else { return };
        if told != Some(true) {
            return;
        }
        let Some(c) = self.clients.get(&who) else { return };
        let by_class = c.by_class;
        let detail = format!(
            "the client's cancel of {call} {how} at {at} before the server took it, and the client told the \
             application the call failed: the work it meant to stop may run on (the note reconciles an in-flight \
             request as unknown outcome)"
        );
        self.record(Condition::ByClass, i, at, detail).promised = by_class;
    }

    /// The application was told `call` ended (`failed`: as an error, else as an unknown
    /// outcome): what each of the client's cancels of it still on their way told it, if nothing
    /// had yet. The first word after a cancel is what the cancelled attempt ended as; a later one
    /// is of an attempt the application issued again. (A guided search with black holes, which
    /// hold a cancel's connect for two minutes, read the error of a re-issue never sent, told
    /// after the first attempt's unknown outcome, as that cancel's claim of a failure.)
    fn told_of_cancelled(&mut self, who: Option<u32>, call: crate::ids::CallKey, failed: bool) {
        for ((w, _), (c, told)) in &mut self.cancel_posts {
            if *w == who && *c == call {
                told.get_or_insert(failed);
            }
        }
    }

    fn gave_up(&mut self, i: usize, at: Instant, who: Option<u32>, reason: &str) {
        let Some(c) = self.clients.get(&who) else { return };
        let cut_off = c.cut_off();
        let exhausted = reason.starts_with("reconnect attempts exhausted");
        // Waiting for an answer that did not come: a request's time-out, a task's polls.
        let waited = reason.starts_with("request timed out") || reason == crate::client::ERR_TASK_POLLS;
        if exhausted || (waited && cut_off) {
            let outage = self.outage(who, at);
            self.breach(
                Condition::Retention,
                i,
                at,
                format!("the client gave up ({reason}) after {outage} without an answer: the outage outlasted its reconnects"),
            );
        }
    }

    /// `key`'s session stored event `seq` of `stream` as `key`'s id: an id it had already given another
    /// event of the session (one stored, or one a client received that was never stored: a
    /// priming event) is given twice ([`Condition::ServerIdReused`]). (A search of the reference
    /// client against rmcp read the standalone notification numbered like the priming event
    /// before it, lost behind a gap reported after that number, as `conditions 1-4 held`.)
    fn id_reused(&mut self, i: usize, at: Instant, key: &(SessionId, EventId), stream: StreamNo, seq: u32) {
        let (session, id) = key;
        let first = match self.stored.get(key) {
            Some(&(s, q, stored_at)) if (s, q) != (stream, seq) => format!("stored at {stored_at}"),
            Some(_) => return,
            None if self.clients.values().any(|c| c.received_in.contains(key)) => {
                "a client received it, never stored".to_string()
            }
            None => return,
        };
        let detail = format!(
            "the server stored event {seq} of {stream} in session {session} at {at} as id {id}, an id it had given \
             another event of the session ({first}): a resume or a gap after {id} reads it as received"
        );
        let breach = self.breach_in(Condition::ServerIdReused, i, at, detail, session);
        breach.stream = Some(stream);
        breach.event = Some(id.clone());
    }

    /// An event with `id` on client connection `conn`: the one its `Last-Event-ID` named, sent
    /// again by the server that resumed the stream ([`Condition::ServerRepeated`]; rmcp's replay
    /// "from the given index, that event included"). A guided sweep of the reference client
    /// against rmcp read the duplicate as `conditions 1-4 held`, naming nobody.
    fn named_event_again(&mut self, i: usize, at: Instant, who: Option<u32>, conn: ConnId, id: Option<&EventId>) {
        let Some(id) = id else { return };
        if self.resumed_from.get(&(who, conn)) != Some(id) {
            return;
        }
        self.resumed_from.remove(&(who, conn));
        let Some(session) = self.conns.get(&(who, conn)).and_then(|f| f.0.clone()) else { return };
        let stream = self.stored.get(&(session.clone(), id.clone())).map(|(k, _, _)| *k);
        let detail = format!(
            "the server resumed a stream of session {session} from Last-Event-ID {id} and sent event {id} again at \
             {at}: a resume carries the events after the id, and the client had this one"
        );
        let breach = self.breach_in(Condition::ServerRepeated, i, at, detail, &session);
        breach.stream = stream;
        breach.event = Some(id.clone());
    }

    /// An event with `id` on client connection `conn`, which resumed a stream of its session
    /// from an id of that stream: an event the session stored on another of its streams was
    /// replayed on it ([`Condition::ServerCrossStream`]; `server.replay_scope = store`). Named
    /// once per connection. (An event another session stored is `event_from_a_shared_store`'s.)
    fn other_streams_event(&mut self, i: usize, at: Instant, who: Option<u32>, conn: ConnId, id: Option<&EventId>) {
        let (Some(id), Some(&resumed)) = (id, self.resumed_stream.get(&(who, conn))) else { return };
        let Some(session) = self.conns.get(&(who, conn)).and_then(|f| f.0.clone()) else { return };
        let Some(&(stream, seq, _)) = self.stored.get(&(session.clone(), id.clone())) else { return };
        if stream == resumed {
            return;
        }
        self.resumed_stream.remove(&(who, conn));
        let detail = format!(
            "the server resumed {resumed} of session {session} and replayed on it event {id} (seq {seq} of {stream}) \
             at {at}: a resume carries the events of the stream that was disconnected, and the client takes this one \
             for {resumed}'s"
        );
        self.breach_in(Condition::ServerCrossStream, i, at, detail, &session);
    }

    /// Session `session` expired as idle at `at`, and the tasks that ended `cancelled` at that
    /// instant ([`Judge::cancelled_tasks`]) were its: the expiry stopped their work, and the
    /// server's word that the work ended without a result comes with it, as with a task aborted
    /// at its TTL (an application told the call failed was told what the server said, though the
    /// side effect may have run). (A guided sweep of reference × py-sdk × `task-long-tool` read
    /// the false failure after an expiry in an outage as unexplained: the expiry, condition 2,
    /// cannot tell anyone a call failed.)
    fn tasks_cancelled_by_expiry(&mut self, at: Instant, session: &SessionId) {
        for (i, when, task) in std::mem::take(&mut self.cancelled_tasks) {
            if when != at {
                continue;
            }
            let detail = format!(
                "the server cancelled task {} at {at} when it expired session {session} as idle: its word that the \
                 work ended without a result",
                task.0
            );
            self.record(Condition::Retention, i, at, detail).server_failed_work = true;
        }
    }

    /// A `resume` step: how the server answered a `Last-Event-ID`.
    fn resume(&mut self, i: usize, at: Instant, kind: &StepKind) {
        let StepKind::Resume { session, last_event_id: id, stream, outcome, held, evicted, claimed_by, .. } = kind
        else {
            return;
        };
        let key = (session.clone(), id.clone());
        if let Some(sent) = self.resumes_sent.get_mut(&key) {
            let oldest = (!sent.is_empty()).then(|| sent.remove(0));
            if sent.is_empty() {
                self.resumes_sent.remove(&key);
            }
            if let (Some((conn, resumed)), ResumeOutcome::Replayed { .. }) = (oldest, outcome) {
                self.resumed_stream.insert(conn, resumed);
            }
        }
        let (stream, held) = (*stream, *held);
        if let Some(on) = stream {
            let how = claimed_by.map(|_| match outcome {
                ResumeOutcome::Rejected { status, .. } => format!("refused the client's resume of it with {status}"),
                _ => "ended the client's resume of it after its replay".to_string(),
            });
            self.resume_closed_for_claim(at, session, id, on, how);
        }
        let (unhonoured, silent) = match outcome {
            // Refused: 410/409 (the note's condition 3). A 400 says so only when the server's own
            // log evicted what followed the id (the Go SDK's "failed to replay events" for purged
            // data); otherwise it says the request was wrong, not the id too old.
            ResumeOutcome::Rejected { status, .. } => {
                let refused = *status == Status::GONE || *status == Status::CONFLICT;
                (refused || (*status == Status::BAD_REQUEST && evicted.is_some()), None)
            }
            ResumeOutcome::SilentHead { skipped } => (true, Some(format!("at its head, {skipped} event(s) skipped"))),
            ResumeOutcome::FromOldest { skipped, .. } => {
                (true, Some(format!("from its oldest event, {skipped} event(s) skipped")))
            }
            ResumeOutcome::Empty { open } => {
                let how = if *open { "an empty 200 left open" } else { "an empty 200" };
                (true, Some(how.to_string()))
            }
            ResumeOutcome::Replayed { .. } => {
                if let Some(stream) = stream.filter(|k| self.shared.contains(&(session.clone(), *k))) {
                    let detail = format!(
                        "the server resumed Last-Event-ID {id} in session {session} from an event store it shares \
                         with another session (stream {stream}'s sequence skips numbers stored elsewhere): it \
                         cannot honour an id for this session alone and did not refuse it"
                    );
                    self.breach_in(Condition::Refused, i, at, detail, session);
                }
                (false, None)
            }
        };
        if !unhonoured {
            return;
        }
        // Only an id this session stored: one of another session's (a client resuming with an
        // id it kept from an earlier session) is no event the server owed this session.
        let stored = self.stored.get(&(session.clone(), id.clone())).copied();
        if let (true, Some((missed, _, _))) = (held, stored) {
            let how = silent.unwrap_or_else(|| match outcome {
                ResumeOutcome::Rejected { status, .. } => format!("refused it with HTTP {status}"),
                _ => "answered it".to_string(),
            });
            // A refusal for the stream's sake, not the id's: the server keeps a stream's first
            // reader (the Go SDK's 409), which a client back on a new connection no longer reads.
            let (detail, rules): (String, &'static [&'static str]) = match (claimed_by, stream) {
                (Some(old), _) => (
                    format!(
                        "the server still held every event after Last-Event-ID {id} in session {session} and {how}, \
                         because an earlier connection ({old}) still claimed the stream: it keeps a stream's first \
                         reader, which a client back on a new connection no longer reads, and a client cannot tell \
                         this refusal from one of an id too old"
                    ),
                    &["server.resume_while_attached"],
                ),
                // The lookup led to no stream of the session at all: the server's event ids do not
                // lead back from an id of this form to the stream that wrote it (the TypeScript
                // example store's `_GET_stream_…` ids, whose stream part before the first `_` is
                // empty).
                (None, None) => (
                    format!(
                        "the server still held every event after Last-Event-ID {id} in session {session} and answered \
                         it as an id it could not honour ({how}): its retention kept them, but its lookup found no \
                         stream of the session from that id, since its event ids do not lead back to the stream \
                         that wrote it"
                    ),
                    &["server.event_ids"],
                ),
                (None, Some(_)) => (
                    format!(
                        "the server still held every event after Last-Event-ID {id} in session {session} and answered \
                         it as an id it could not honour ({how}): its retention kept them, its lookup missed them"
                    ),
                    &[],
                ),
            };
            // What its lookup missed are this stream's events: another stream's or another
            // session's loss, or a result left in a session its client forgot, is no part of it.
            let breach = self.breach_in(Condition::ServerMissed, i, at, detail, session);
            breach.stream = Some(missed);
            breach.rules = rules;
            return;
        }
        if let Some(((missed, seq, _), bound)) = stored.zip(*evicted) {
            if let Some(inside) = self.evicted_inside(session, missed, seq, bound, at) {
                let detail = format!(
                    "the server answered Last-Event-ID {id} in session {session} as evicted, but {inside}: its \
                     retention owed the client those events"
                );
                self.breach_in(Condition::ServerMissed, i, at, detail, session).stream = Some(missed);
                return;
            }
        }
        if let Some((_, _, stored_at)) = stored {
            let outage = format_micros((at - stored_at).as_micros() as u64);
            let covered = match outcome {
                ResumeOutcome::Rejected { head: Some(head), .. } => {
                    match self.stored.get(&(session.clone(), head.clone())).and_then(|&(s, q, _)| {
                        self.streams.get(&(session.clone(), s)).and_then(|m| m.range(q + 1..).next()).map(|(_, t)| *t)
                    }) {
                        Some(t) => format!("retention covered {}", format_micros((at - t).as_micros() as u64)),
                        None => "retention held none of the stream".to_string(),
                    }
                }
                _ => "the server no longer held it".to_string(),
            };
            self.breach_in(
                Condition::Retention,
                i,
                at,
                format!("the outage lasted {outage} (event {id} stored at {stored_at}, resumed at {at}), {covered}"),
                session,
            );
        }
        if let Some(how) = silent {
            self.breach_in(
                Condition::Refused,
                i,
                at,
                format!("the server could not honour Last-Event-ID {id} and resumed without refusing it ({how})"),
                session,
            );
        }
    }

    /// An idle expiry of `session` (on `replica`) at `at`, under an idle TTL of `ttl` µs: the
    /// server's bug ([`Condition::ServerEnded`]) when it came sooner than the TTL after the last
    /// activity the server can have seen ([`Judge::active`]), whatever its idle rule.
    fn expired_inside(&mut self, i: usize, at: Instant, session: &SessionId, replica: Option<u32>, ttl: u64) -> bool {
        let Some(&last) = self.active.get(&(session.clone(), replica)) else { return false };
        let idle = (at - last).as_micros() as u64;
        if idle >= ttl {
            return false;
        }
        let detail = format!(
            "the server expired session {session} at {at} as idle, {} after a request it answered ({last}), inside \
             its {} idle TTL",
            format_micros(idle),
            format_micros(ttl)
        );
        self.expired_by_bug.insert(session.clone());
        self.breach_in(Condition::ServerEnded, i, at, detail, session);
        true
    }

    /// `session` expired as idle at `at`, the client that holds it not cut off, and the expiry
    /// cancelled a tool of its ([`Judge::cancelled_tools`]) or left one at work
    /// ([`Judge::tools_running`]: a server whose session close lets its handlers finish, the Go
    /// SDK's): a session with work under way for a client still attached is not idle, whatever
    /// its last request's age. The server's bug, not condition 2
    /// (no outage outlasted anything): an idle rule that counts only the last request
    /// (`server.idle_rule = last-request`: Python before python-sdk#3395, which maintainers
    /// mended as python-sdk#2455; rmcp's worker, whose sleep only messages restart) or only
    /// messages lets a quiet tool run past the TTL. A sweep of reference × rmcp and × py-sdk-1.27
    /// read the tool it killed `conditions 1-4 held`; one of reference × go-sdk (`no-open-post`:
    /// a resumed `GET` does not hold the timer off, `streamable.go:76-78`) the tool it left
    /// working for a session that no longer was.
    fn expired_busy(&mut self, i: usize, at: Instant, session: &SessionId) {
        // A task's tool is the task's work: its cancel by the expiry is read with the task's.
        let mut calls: BTreeSet<crate::ids::CallKey> = std::mem::take(&mut self.cancelled_tools)
            .into_iter()
            .filter(|(when, s, call)| *when == at && s == session && !self.task_calls.contains(call))
            .map(|(_, _, call)| call)
            .collect();
        calls.extend(
            self.tools_running
                .iter()
                .filter(|(s, call)| s == session && !self.task_calls.contains(call))
                .map(|(_, call)| *call),
        );
        let calls: Vec<String> = calls.iter().map(|c| c.to_string()).collect();
        // Its client still holds it (not one it left for a new session, nor a modern client's,
        // whose re-issue went to another) and is in touch with the server.
        let attached = self.clients.iter().find(|(_, c)| c.held() == Some(session) && !c.cut_off()).map(|(w, _)| *w);
        let (Some(who), false) = (attached, calls.is_empty()) else { return };
        let detail = format!(
            "the server expired session {session} at {at} as idle while its tool still ran for {} and its client was \
             still attached: a session with work under way is not idle",
            calls.join(", ")
        );
        self.expired_by_bug.insert(session.clone());
        // Its client's: another client's calls ran in sessions of their own.
        let breach = self.breach_in(Condition::ServerEnded, i, at, detail, session);
        breach.client = who;
        breach.rules = &["server.idle_rule", "server.idle_reset"];
    }

    /// `call`'s tool did something (its side effect, its result) at `at` in `session`, which its
    /// client had deleted: the server left it running when it ended the session
    /// ([`Condition::WorkRunOn`]), by its `DELETE` rule or because the tool ignored the abort
    /// signal that rule fires. Named once per call. An operator's `DELETE` is a termination, and
    /// what it leaves running is owed nobody.
    fn ran_on_after_delete(&mut self, i: usize, at: Instant, session: &SessionId, call: crate::ids::CallKey) {
        let Some(&(SessionEndReason::Deleted, deleted)) = self.ended.get(session) else { return };
        let by_client = self.clients.values().any(|c| c.deleted.contains(session));
        if deleted >= at || !by_client || !self.run_on.insert((session.clone(), call)) {
            return;
        }
        let detail = format!(
            "the server ended session {session} for its client's DELETE at {deleted} and left {call}'s tool \
             running, still at work at {at}: the server's DELETE rule leaves it (server.delete_running_tool = \
             run-on), or fires the handler's abort signal, which this tool ignores (abort-signal with \
             tool.on_abort = ignore: check the signal in the tool)"
        );
        self.call_breach(Condition::WorkRunOn, i, at, detail, call, &["server.delete_running_tool"]).session =
            Some(session.clone());
    }

    /// Records a breach that costs one call alone, with the fields of the server's policy behind
    /// it.
    fn call_breach(
        &mut self,
        condition: Condition,
        i: usize,
        at: Instant,
        detail: String,
        call: crate::ids::CallKey,
        rules: &'static [&'static str],
    ) -> &mut Breach {
        let breach = self.record(condition, i, at, detail);
        breach.call = Some(call);
        breach.rules = rules;
        breach
    }

    /// `call`'s tool (request `request`) ran on at `at` after its client cancelled that request
    /// on a server without sessions ([`Condition::WorkRunOn`]): a request's id is unique only to
    /// its client, and a server that serves each request apart (the SDKs' stateless modes,
    /// `server.sessionless_cancel = ignore`) cannot tell which request a cancel names, so it
    /// cancels nothing. Named once per call.
    fn ran_on_after_sessionless_cancel(
        &mut self,
        i: usize,
        at: Instant,
        session: &SessionId,
        request: RequestId,
        call: crate::ids::CallKey,
    ) {
        // A tool without a session is a sessionless server's, whose client's cancel went without one.
        let Some(&cancelled) = self.cancels_sent.get(&(call, request)) else { return };
        if !session.0.is_empty() || cancelled >= at || !self.run_on.insert((session.clone(), call)) {
            return;
        }
        let detail = format!(
            "the client cancelled {call}'s request {request} at {cancelled} on a server without sessions, and \
             its tool was still at work at {at}: a request's id is unique only to its client, so a server that \
             serves each request apart (the SDKs' stateless modes, server.sessionless_cancel = ignore) cannot \
             tell which request a cancel names and cancels nothing"
        );
        self.call_breach(Condition::WorkRunOn, i, at, detail, call, &["server.sessionless_cancel"]);
    }

    /// `call`'s tool (request `request`) was cancelled at `at` on a server without sessions,
    /// though its client never cancelled that request: another client's cancel of a request
    /// with the same id ended it (ids are unique only to each client; one in-flight map for
    /// every client, `server.sessionless_cancel = by-request-id`). The server's bug, costing
    /// that call. A task's tool is ended by its own `tasks/cancel`, which names the task.
    fn cancelled_by_another(
        &mut self,
        i: usize,
        at: Instant,
        session: &SessionId,
        request: RequestId,
        call: crate::ids::CallKey,
    ) {
        if !session.0.is_empty() || self.task_calls.contains(&call) || self.cancels_sent.contains_key(&(call, request))
        {
            return;
        }
        let detail = format!(
            "the server cancelled {call}'s request {request} at {at}, which its client never cancelled: a server \
             without sessions matched another client's cancel of a request with the same id (ids are unique only \
             to each client) and ended this one too"
        );
        self.call_breach(Condition::ServerEnded, i, at, detail, call, &["server.sessionless_cancel"]);
    }

    /// Listen streams and the changes replicas emit ([`Condition::BusLocal`]). A change a replica
    /// of several emitted to no listen stream of its own is held until its instant has passed: a
    /// shared bus relays it (`change-relayed`) at that instant.
    fn subscriptions(&mut self, i: usize, at: Instant, who: Option<u32>, step: &Step) {
        self.settle_unrelayed(Some(at));
        match &step.kind {
            StepKind::ListenOpen { conn, .. } => {
                self.listening.insert(who, (*conn, at, at));
                // A new stream may be on another replica: its own changes will say which.
                self.heard_from.remove(&who);
                // Listening again on its own, untold: what was on its way on the old stream stays
                // lost, as the application was given no reason to refetch.
                if let Some(ended) = self.listen_untold.remove(&who) {
                    if let Some((_, change)) = &ended.on_its_way {
                        let detail = format!(
                            "the client's listen stream ended at {} and its application was not told (no subscription \
                             lost): change {change}, on its way on it, was lost with it, and the client listened again \
                             at {at} without the refetch that telling brings",
                            ended.at
                        );
                        self.missed_untold(who, &ended, detail);
                    }
                }
            }
            StepKind::AppChange { change } => {
                if let Some((_, heard, _)) = self.listening.get_mut(&who) {
                    *heard = at;
                }
                if let Some(&replica) = self.change_replica.get(change) {
                    self.heard_from.insert(who, replica);
                }
            }
            StepKind::ConnEnd { conn, .. } if self.listening.get(&who).is_some_and(|(c, ..)| c == conn) => {
                // What was on its way on it went with it: the first change its replica emitted
                // after the last it heard, if any came before the end.
                let heard = self.listening.remove(&who).map(|(_, heard, _)| heard);
                let home = self.heard_from.get(&who).copied();
                let after = heard.map_or(0, |h| self.changes.partition_point(|e| e.at <= h));
                let on_its_way = self.changes[after..]
                    .iter()
                    .take_while(|e| e.at <= at)
                    .find(|e| home.is_none() || e.replica.is_none() || e.replica == home)
                    .map(|e| (e.at, e.change.clone()));
                self.listen_untold.insert(who, ListenEnded { step: i, at, on_its_way });
            }
            StepKind::AppSubscriptionLost { .. } => {
                self.listen_untold.remove(&who);
            }
            StepKind::ChangeEmitted { change, listeners } => {
                let replica = step.replica;
                if let Some(replica) = replica {
                    self.change_replica.insert(change.clone(), replica);
                }
                self.changes.push(Emitted { step: i, at, change: change.clone(), replica, listeners: *listeners });
                self.change_missed_untold(at, change);
            }
            StepKind::ChangeRelayed { change, listeners } if *listeners > 0 => {
                self.relayed.insert(change.clone());
            }
            _ => {}
        }
    }

    /// A change emitted at `at` while a client's listen stream had ended without its application
    /// being told, and the client listened no more: whatever the client does next (re-listen
    /// on its own, or keep believing it is subscribed: go-sdk#1229's kept flag), the application
    /// believes a subscription that hears nothing and was not told to refetch (condition 4: the
    /// note tells the application of the failure), named once per ended stream.
    fn change_missed_untold(&mut self, at: Instant, change: &str) {
        for (who, ended) in std::mem::take(&mut self.listen_untold) {
            let detail = format!(
                "the client's listen stream ended at {} and its application was not told (no subscription lost), so \
                 change {change} emitted at {at} reached no stream it had, while the application believed it was \
                 subscribed and had no reason to refetch",
                ended.at
            );
            self.missed_untold(who, &ended, detail);
        }
    }

    /// Condition 4 for client `who`, whose listen stream `ended` untold: dated at its end, or
    /// at the first change on its way on it then (emitted after the last it heard), which was
    /// lost untold as well (a guided sweep of the Go client, which keeps its flag or listens
    /// again on its own, read changes emitted just before a reset as `conditions 1-4 held`).
    fn missed_untold(&mut self, who: Option<u32>, ended: &ListenEnded, detail: String) {
        let by_class = self.clients.get(&who).is_some_and(|c| c.by_class);
        let dated = ended.on_its_way.as_ref().map_or(ended.at, |(t, _)| (*t).min(ended.at));
        let b = self.record(Condition::ByClass, ended.step, dated, detail);
        b.promised = by_class;
        b.client = who;
    }

    /// Standalone `GET`s without a session that a server answered `200` and held open, and the
    /// notifications it stored where none of them can carry them ([`Condition::ServerHeldOpen`]): a
    /// server without sessions has no session to route a notification by, so it stores it on its
    /// implicit context's standalone stream, which no connection is attached to. Named once per
    /// client holding such a `GET` when the first notification is stored.
    fn held_open_gets(&mut self, i: usize, at: Instant, who: Option<u32>, step: &Step) {
        match &step.kind {
            StepKind::Send { conn, request }
                if request.method == Method::Get && request.session.is_none() && request.last_event_id.is_none() =>
            {
                self.sessionless_gets.insert((who, *conn));
            }
            StepKind::Response { conn, head } => {
                let fresh = self.sessionless_gets.remove(&(who, *conn));
                if fresh && head.status == Status::OK {
                    self.held_open.insert(who, *conn);
                }
            }
            StepKind::ConnEnd { conn, .. } => {
                self.sessionless_gets.remove(&(who, *conn));
                if self.held_open.get(&who) == Some(conn) {
                    self.held_open.remove(&who);
                }
            }
            StepKind::EventStored { session, stream: StreamNo::STANDALONE, message: Some(_), .. }
                if session.0.is_empty() =>
            {
                let unnamed: Vec<(Option<u32>, ConnId)> = self
                    .held_open
                    .iter()
                    .filter(|(w, _)| !self.held_open_named.contains(*w))
                    .map(|(w, c)| (*w, *c))
                    .collect();
                for (client, conn) in unnamed {
                    self.held_open_named.insert(client);
                    let detail = format!(
                        "the server answered the client's standalone GET ({conn}) 200 and held it open without a \
                         session, then stored a notification at {at} on a stream no connection is attached to: a \
                         server without sessions has nothing to route it by, and nothing ends to tell the client"
                    );
                    let breach = self.record(Condition::ServerHeldOpen, i, at, detail);
                    (breach.client, breach.session, breach.stream) =
                        (client, Some(session.clone()), Some(StreamNo::STANDALONE));
                }
            }
            _ => {}
        }
    }

    /// The changes emitted before `now` (all, at the end of the run) that no bus relayed: each
    /// missed every client listening then on another replica: every one when the emitting
    /// replica had no listen stream open, else those whose own replica's changes (the last they
    /// heard) came from elsewhere; a client yet to hear one waits. Named once per client, at the
    /// first it missed. (A guided sweep of the Go client, whose kept flag leaves every change
    /// since owed, read another replica's changes, each reaching that replica's own listener, as
    /// `conditions 1-4 held`.)
    fn settle_unrelayed(&mut self, now: Option<Instant>) {
        if self.listening.is_empty() || self.changes.is_empty() {
            return;
        }
        let due = |t: Instant| now.is_none_or(|now| t < now);
        let clients: Vec<(Option<u32>, Instant)> = self
            .listening
            .iter()
            .filter(|(w, _)| !self.bus_missed.contains(*w))
            .map(|(w, (_, _, opened))| (*w, *opened))
            .collect();
        for (who, opened) in clients {
            let home = self.heard_from.get(&who).copied();
            let mut k = self.bus_cursor.get(&who).copied().unwrap_or(0);
            let mut missed = None;
            while let Some(e) = self.changes.get(k).filter(|e| due(e.at)) {
                if let Some(replica) = e.replica.filter(|_| e.at >= opened && !self.relayed.contains(&e.change)) {
                    if e.listeners == 0 || home.is_some_and(|h| h != replica) {
                        missed = Some((e.step, e.at, e.change.clone(), e.listeners));
                        break;
                    }
                    if home.is_none() {
                        break;
                    }
                }
                k += 1;
            }
            self.bus_cursor.insert(who, k);
            let Some((i, at, change, listeners)) = missed else { continue };
            self.bus_missed.insert(who);
            let there = match listeners {
                0 => "with no listen stream of its own open".to_string(),
                n => format!("to its own {n} listen stream(s) only"),
            };
            let detail = format!(
                "a replica emitted change {change} at {at} {there}, while the client listened on another: a bus per \
                 process (server.subscriptions.bus = per-process) reaches no other replica's streams, and no stream \
                 ended to tell of it"
            );
            self.record(Condition::BusLocal, i, at, detail).client = who;
        }
    }

    /// A server restart lost `session` at `at` (its sessions and events were kept in memory):
    /// its retention did not outlast the restart, whatever the client does next (condition 2),
    /// recorded now for a session a client holds. When the client was cut off it is the outage
    /// that outlasted the session ([`Judge::ended_in_outage`]); otherwise the client comes back
    /// to a 404 ([`Judge::session_not_found`] names the restart then), or never does: its
    /// application may start over first on the 503s of a replica still down, and what the
    /// session held undelivered (an event stored at the very instant of the restart) was lost
    /// with it all the same (a guided sweep of ts-sdk × reference read it as `conditions 1-4
    /// held`).
    fn lost_by_restart(&mut self, i: usize, at: Instant, session: &SessionId) {
        let how = "was lost by a server restart";
        if self.ended_in_outage(i, at, session, how) || !self.clients.values().any(|c| c.held() == Some(session)) {
            return;
        }
        let detail =
            format!("session {session} {how} at {at}: the server kept it in memory only, so its retention ended there");
        self.breach_in(Condition::Retention, i, at, detail, session);
    }

    /// The end of `session` at `at` (`how`: an idle expiry, a server restart that lost it) while
    /// a client that holds it is cut off from the server (its last connection broke after the
    /// last answer it got): the outage outlasted the session's lifetime (condition 2), now, not
    /// only when the client comes back to a 404 (it may never: its application may start over
    /// first). What the end does at once (a tool it cancels: `no-work-killed`, dated at the
    /// end) and what the session still held undelivered are explained by it: a swarm sweep of
    /// reference × py-sdk read a tool cancelled by an idle expiry 1m56 into a 4m29 partition as
    /// a bug, and one of py-sdk × reference the events a restart lost 2 minutes into a partition,
    /// whose client's application started over before the client came back. Whether it did.
    fn ended_in_outage(&mut self, i: usize, at: Instant, session: &SessionId, how: &str) -> bool {
        let cut_off = self.clients.values().find(|c| c.session.as_ref() == Some(session) && c.cut_off());
        let Some(last) = cut_off.map(|c| c.last_contact) else { return false };
        let since = last.map_or_else(|| "it started".to_string(), |l| l.to_string());
        let detail = format!(
            "session {session} {how} at {at} while its client was cut off from the server (no answer since \
             {since}): the outage outlasted the session"
        );
        self.breach_in(Condition::Retention, i, at, detail, session);
        true
    }

    /// Whether the event after seq `seq` of `session`'s stream `stream`, which the server's store
    /// evicted, was still inside the bounds its retention is configured with at `at`: younger
    /// than the window, and with fewer than `max_events` events stored after it. Eviction is
    /// first-in first-out, so that event going means everything the resume needed went with it;
    /// and reading its age and its successors at the resume, not at its eviction, only ever
    /// lets more through. Says how, or `None` when the bounds allow the eviction (condition 2),
    /// or when the judge cannot count the log: a store shared across sessions, whose logs hold
    /// other sessions' events too.
    fn evicted_inside(
        &self,
        session: &SessionId,
        stream: StreamNo,
        seq: u32,
        bound: RetentionBound,
        at: Instant,
    ) -> Option<String> {
        if self.sessions_share_store || self.shared.contains(&(session.clone(), stream)) {
            return None;
        }
        let log = self.streams.get(&(session.clone(), stream))?;
        let mut after = log.range(seq.saturating_add(1)..);
        let (&first, &stored_at) = after.next()?;
        let newer = after.count();
        let age = (at - stored_at).as_micros() as u64;
        let by_window = bound.window_us.is_some_and(|window| age > window);
        let by_count = bound.max_events.is_some_and(|max| newer >= max as usize);
        if by_window || by_count {
            return None;
        }
        let window = bound.window_us.map_or("no time window".to_string(), |w| format!("a {} window", format_micros(w)));
        let count = bound.max_events.map_or("no count bound".to_string(), |m| format!("{m} events per stream"));
        Some(format!(
            "its retention ({window}, {count}) still covered event {first} of {stream}: stored at {stored_at}, \
             {} old, {newer} event(s) stored after it",
            format_micros(age)
        ))
    }

    /// A decision on call `key`'s stream that ends it for good: the procedure's `Stop` (the
    /// server closed it), or an error it has no rule for but a stream with nothing persisted
    /// (whose call is sent again). Such a call has no way left to its answer, so the note's
    /// client settles it at once, as failed or as an unknown outcome.
    fn stream_stopped(
        &mut self,
        i: usize,
        at: Instant,
        who: Option<u32>,
        key: crate::ids::CallKey,
        action: Option<&NextAction>,
        error: Option<&str>,
    ) {
        let Some(c) = self.clients.get_mut(&who) else { return };
        let why = match (action, error) {
            (Some(NextAction::Stop), _) => "the server closed its stream".to_string(),
            (None, Some(e)) if e != NEVER_PERSISTED.as_str() => format!("its stream ended: {e}"),
            _ => return,
        };
        if c.in_flight.contains_key(&key) {
            c.stopped.insert(key, (i, at, why));
        }
    }

    /// A decision to resume call `key`'s stream at once from the head the server named: the
    /// request with that `Last-Event-ID` goes out next, or the call is settled (attempts spent).
    fn resume_decided(
        &mut self,
        i: usize,
        at: Instant,
        who: Option<u32>,
        key: crate::ids::CallKey,
        action: &NextAction,
    ) {
        let Some(c) = self.clients.get_mut(&who) else { return };
        if let NextAction::ResumeAtHead { head } = action {
            if c.by_class && c.in_flight.contains_key(&key) {
                c.resume_due.insert(key, (i, at, head.clone()));
            }
        }
    }

    /// `who` sent a `GET` without `Last-Event-ID` (step `i`, at `at`). It re-attaches the
    /// standalone stream if that is due (its `backoff` ran out); otherwise, if the stream of a
    /// call it holds a cursor for was due (within a millisecond: a zero backoff goes out a tick
    /// later) and no `GET` with an id of that stream went out, this one is that call's, re-attached
    /// without its cursor. A `GET` without one opens the standalone stream, never a call's: the
    /// call's answer cannot come on it. Within one process no setting lets a client forget an id
    /// it received (condition 1, kept by every policy): its bug. A sweep of ts-sdk × ts-sdk behind
    /// balancers read the TypeScript client's (a resumed stream cut again before an id-bearing
    /// event, its `resume_token_survives_recut = false`) `conditions 1-4 held`.
    fn reattached_fresh(&mut self, i: usize, at: Instant, who: Option<u32>, session: &SessionId) {
        let Some(c) = self.clients.get_mut(&who) else { return };
        if c.standalone_due.is_some_and(|due| due <= at) {
            c.standalone_due = None;
            return;
        }
        // A cursor of another session is none for this one (the client started a new session).
        let Some((key, due)) = c.reattach_due_at(at, Some(session)) else { return };
        c.reattach_due.remove(&key);
        let Some((_, cursor)) = c.cursors.get(&key).cloned() else { return };
        let detail = format!(
            "the client re-attached {key}'s stream at {due} with a GET without Last-Event-ID, though it had received \
             {cursor} on it: a GET without one opens the standalone stream, never a call's, so {key}'s answer cannot \
             come on it (the client forgot its cursor)"
        );
        self.breach_in(Condition::Persisted, i, at, detail, session).promised = true;
    }

    /// Every call a decision-procedure client stopped and never resolved, and every resume at a
    /// named head it decided and never sent: a bug of the client (its policy keeps condition 4,
    /// and acting by class carries out what it decided, or settles the call), whatever else broke.
    fn untold_calls(&mut self) {
        // Each with whether the client's policy promised better: a decision of the procedure
        // itself (a resume at the head it chose) always did.
        let mut untold: Vec<(usize, Instant, String, bool)> = Vec::new();
        for c in self.clients.values_mut() {
            for (key, (i, at, head)) in std::mem::take(&mut c.resume_due) {
                let detail = format!(
                    "the client decided at {at} to resume {key} at once from the head {head} the server named, and \
                     never sent that resume nor settled the call"
                );
                untold.push((i, at, detail, true));
            }
            for (key, (i, at, why)) in std::mem::take(&mut c.stopped) {
                let detail = format!(
                    "the client left {key} at {at} with no way to its answer ({why}) and never told the application \
                     (a call no stream can answer any more is settled at once, as failed or as an unknown outcome)"
                );
                // A client that does not act by class and leaves such a call pending for good
                // (the TypeScript SDK's give-up, which waits for a request time-out that may be
                // off) breaks condition 4 as its policy allows: the note tells the application
                // what it cannot deliver (a guided sweep of ts-sdk × reference read the call as
                // `conditions 1-4 held`).
                untold.push((i, at, detail, c.by_class));
            }
        }
        for (i, at, detail, promised) in untold {
            self.record(Condition::ByClass, i, at, detail).promised = promised;
        }
    }

    fn decision(&mut self, i: usize, at: Instant, who: Option<u32>, action: Option<&NextAction>, error: Option<&str>) {
        let Some(c) = self.clients.get_mut(&who) else { return };
        let by_class = c.by_class;
        if action == Some(&NextAction::Reinitialize) {
            // Whatever this decision is, the `initialize` that carries it out is its own.
            c.let_go = c.session.clone();
        }
        let Some((status, end, _)) = c.last_close.take().filter(|c| c.2 == at) else {
            // No close to answer: a process that came back with its session restored (a
            // durable restart) and re-initializes lets a live session go for nothing. The note
            // re-initializes on a 404 only (a swarm sweep of the naive client with
            // `client.persistence = durable` read the duplicate that followed as unexplained).
            let held = c.held().cloned();
            if let (Some(NextAction::Reinitialize), Some(session)) = (action, held) {
                let detail = format!(
                    "the client re-initialized at {at} while it held session {session}, which no 404 had ended \
                     (the note re-initializes on a 404 only)"
                );
                self.record(Condition::ByClass, i, at, detail).promised = by_class;
            }
            return;
        };
        // A clean end the server made on its own timer (SEP-1699: the stream lives on, its client
        // is to come back with Last-Event-ID) is a transport fact too: the session lived (a
        // swarm sweep of the naive client read a re-initialize after one as right).
        let paced = matches!(end, Some(ConnEnd::Clean))
            && status.is_none_or(|s| s.0 < 300)
            && c.session.as_ref().is_some_and(|s| self.closed_by_server.remove(s));
        let transport = paced
            || match status {
                Some(s) => s.0 >= 500 || (s.0 < 300 && matches!(end, Some(ConnEnd::Reset | ConnEnd::Refused))),
                None => matches!(end, Some(ConnEnd::Reset | ConnEnd::Refused)),
            };
        let what = match (status, end) {
            (Some(s), _) if s.0 >= 400 => format!("HTTP {}", s.0),
            (_, Some(e)) => e.to_string(),
            _ => return,
        };
        let wrong = match action {
            Some(NextAction::Reinitialize) if transport => {
                Some(format!("the client re-initialized after a {what} (a transport fact: the session lived)"))
            }
            Some(NextAction::Reinitialize | NextAction::Stop) => None,
            // A transport closed for good (the Go SDK's `c.fail`) lets the session go but starts
            // none: the application is told the connection is dead and must connect anew.
            _ if status == Some(Status::NOT_FOUND) && error.is_some_and(|e| e.starts_with(ERR_TRANSPORT_CLOSED)) => {
                Some(format!(
                    "the client closed its transport after HTTP 404 and began no new session: every later call \
                     fails until the application connects anew ({})",
                    error.unwrap_or_default()
                ))
            }
            _ if status == Some(Status::NOT_FOUND) => {
                Some(format!("the client kept its session after HTTP 404 ({})", error.unwrap_or("no re-initialize")))
            }
            Some(NextAction::Resume { .. }) if matches!(status, Some(Status::GONE | Status::CONFLICT)) => {
                Some(format!("the client resumed after {what} as if no event was lost"))
            }
            // A server that serves no GET stream refuses every resume alike: trying again is
            // taking a standing refusal for a passing fault (Python retries it; a sweep of
            // py-sdk × a stateless server read the churn `conditions 1-4 held`).
            Some(NextAction::Resume { .. }) if status == Some(Status::METHOD_NOT_ALLOWED) => Some(format!(
                "the client resumed again after {what} (the server serves no GET stream: no resume can succeed)"
            )),
            _ => None,
        };
        if let Some(detail) = wrong {
            // The client library's own act: a bug when its policy runs the procedure.
            self.record(Condition::ByClass, i, at, detail).promised = by_class;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::client_start;
    use super::*;
    use crate::http::{Request, ResponseHead};
    use crate::ids::{CallKey, RequestId};
    use crate::trace::Actor;

    fn trace(kinds: Vec<(u64, StepKind)>) -> Trace {
        let mut t = Trace::new(0, serde_json::json!({}));
        for (seq, (ms, kind)) in kinds.into_iter().enumerate() {
            let actor = match kind {
                StepKind::EventStored { .. } | StepKind::Resume { .. } | StepKind::SessionEnded { .. } => Actor::Server,
                _ => Actor::Client,
            };
            t.steps.push(Step {
                seq: seq as u64,
                t: ms * 1_000,
                actor,
                client: None,
                replica: None,
                conn_client: None,
                kind,
            });
        }
        t
    }

    /// A client (re)start whose policy keeps none of the conditions.
    fn start(restored: bool) -> StepKind {
        client_start(restored, false, false)
    }

    fn sid() -> SessionId {
        SessionId::from("0-1")
    }

    fn stored(seq: u32) -> StepKind {
        stored_on(&sid(), StreamNo(1), seq, None)
    }

    /// Event `seq` of `stream` in `session`, id `STREAM-SEQ`, for `call`'s stream.
    fn stored_on(session: &SessionId, stream: StreamNo, seq: u32, call: Option<CallKey>) -> StepKind {
        StepKind::EventStored {
            session: session.clone(),
            stream,
            seq,
            id: EventId::from(format!("{}-{seq}", stream.0).as_str()),
            call,
            message: None,
        }
    }

    /// Event `id` arriving on connection `conn`.
    fn event_on(conn: u64, id: &str) -> StepKind {
        StepKind::Event {
            conn: ConnId(conn),
            event: crate::http::SseEvent {
                id: Some(EventId::from(id)),
                retry_ms: None,
                kind: crate::http::EventKind::Message,
                data: None,
            },
        }
    }

    /// A `no-silent-event-loss` violation at `step`, `at_us` µs in, of `subject`.
    fn loss(step: usize, at_us: u64, subject: impl Into<String>) -> Violation {
        Violation {
            invariant: InvariantId::NoSilentEventLoss,
            step,
            at: Instant(at_us),
            subject: subject.into(),
            detail: String::new(),
        }
    }

    fn post(conn: u64) -> StepKind {
        StepKind::Send { conn: ConnId(conn), request: Request::initialize(RequestId(1), "app") }
    }

    /// The `tools/call` of call `call` on connection `conn`, in no session.
    fn post_call(conn: u64, call: u32) -> StepKind {
        let call =
            crate::http::ToolCall { tool: "pay".into(), key: CallKey(call), idempotency_key: None, tasks: false };
        StepKind::Send {
            conn: ConnId(conn),
            request: Request::post(None, crate::http::ClientMessage::CallTool { id: RequestId(9), call }),
        }
    }

    fn delete_request(conn: u64) -> StepKind {
        StepKind::Send { conn: ConnId(conn), request: Request::delete(sid()) }
    }

    /// A `GET` of session `sid()` on connection `conn`, with `last` as its `Last-Event-ID`.
    fn get(conn: u64, last: Option<&str>) -> StepKind {
        StepKind::Send { conn: ConnId(conn), request: Request::get(Some(sid()), last.map(EventId::from)) }
    }

    fn on_session(conn: u64) -> StepKind {
        let mut request = Request::initialize(RequestId(2), "app");
        request.session = Some(sid());
        StepKind::Send { conn: ConnId(conn), request }
    }

    #[test]
    fn a_hops_own_4xx_breaks_condition_four_naming_the_hop_and_its_5xx_does_not() {
        let answered = |status: u16| {
            let lb = StepKind::LbAnswered { conn: ConnId(9), status: Status(status), hop: Some(0) };
            let mut t = trace(vec![
                (0, start(false)),
                (1, post(1)),
                (60_000, on_session(2)),
                (60_001, lb),
                (60_002, StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status(status)) }),
            ]);
            t.steps[3].actor = Actor::Lb;
            Conditions::judge(&t)
        };
        let c = answered(404);
        assert_eq!(c.breaches.len(), 1, "{c:?}");
        assert_eq!(c.breaches[0].condition, Condition::ByClass);
        assert_eq!(
            c.breaches[0].detail,
            "hop0 answered 404 by itself (not the server) to a request in session 0-1, which the server still held: \
             no client can tell a proxy's own 404 from the server's"
        );
        // The server's own 404 is read as before (retention), and a hop's 5xx is a transport fact.
        let t = trace(vec![
            (0, start(false)),
            (1, post(1)),
            (60_000, on_session(2)),
            (60_002, StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status::NOT_FOUND) }),
        ]);
        assert_eq!(Conditions::judge(&t).breaches[0].condition, Condition::Retention);
        assert!(answered(503).all_held(), "{:?}", answered(503));
        assert!(answered(500).all_held(), "{:?}", answered(500));
    }

    #[test]
    fn a_clean_run_breaks_nothing_and_explains_nothing() {
        let t = trace(vec![(0, start(false)), (1, post(1)), (2, stored(1))]);
        let c = Conditions::judge(&t);
        assert!(c.all_held());
        assert_eq!(c.explain_at(Instant(10_000_000)).to_string(), "unexplained: conditions 1-4 held");
    }

    /// The client resumes after event 1-1 and is answered 410, the head being 1-2.
    fn gone_410() -> StepKind {
        StepKind::Resume {
            session: sid(),
            last_event_id: EventId::from("1-1"),
            stream: Some(StreamNo(1)),
            outcome: ResumeOutcome::Rejected { status: Status::GONE, head: Some(EventId::from("1-2")) },
            held: false,
            evicted: None,
            claimed_by: None,
            finished: false,
        }
    }

    #[test]
    fn an_evicted_id_answered_410_breaks_retention_with_the_outage_and_what_retention_covered() {
        let t = trace(vec![(1_000, stored(1)), (2_000, stored(2)), (120_000, stored(3)), (251_000, gone_410())]);
        let c = Conditions::judge(&t);
        assert_eq!(c.breaches.len(), 1, "{c:?}");
        assert_eq!(c.breaches[0].condition, Condition::Retention);
        assert_eq!(
            c.breaches[0].to_string(),
            "condition 2: the outage lasted 4m10.000s (event 1-1 stored at 1.000s, resumed at 4m11.000s), \
             retention covered 2m11.000s"
        );
        // Explained only from the resume on.
        assert!(!c.explain_at(Instant(250_000_000)).is_explained());
        assert!(c.explain_at(Instant(251_000_000)).is_explained());
    }

    /// [`gone_410`]'s resume step, from a store that says it evicted what followed its id under
    /// `bound`.
    fn evicted_410(bound: RetentionBound) -> StepKind {
        let StepKind::Resume { session, last_event_id, stream, outcome, held, claimed_by, finished, .. } = gone_410()
        else {
            unreachable!("gone_410 is a resume")
        };
        let evicted = Some(bound);
        StepKind::Resume { session, last_event_id, stream, outcome, held, evicted, claimed_by, finished }
    }

    /// The 410 of [`gone_410`] (events 1-0 to 1-3 stored at 0.5 s, 1 s, 2 s and 2 min, the resume at
    /// 4m11s), from a store that says it evicted what followed 1-1 under `bound`.
    fn evicted_under(bound: RetentionBound) -> Conditions {
        let resume = evicted_410(bound);
        Conditions::judge(&trace(vec![
            (500, stored(0)),
            (1_000, stored(1)),
            (2_000, stored(2)),
            (120_000, stored(3)),
            (251_000, resume),
        ]))
    }

    #[test]
    fn an_eviction_inside_the_stores_own_bounds_is_the_servers_bug_and_one_they_allow_is_condition_two() {
        let minutes = |m: u64| Some(m * 60_000_000);
        // Event 1-2 was 4m09s old, with one event after it.
        let inside = [
            RetentionBound { max_events: None, window_us: minutes(5) },
            RetentionBound { max_events: Some(2), window_us: minutes(5) },
            RetentionBound { max_events: Some(2), window_us: None },
        ];
        for bound in inside {
            let c = evicted_under(bound);
            assert_eq!(c.breaches.len(), 1, "{bound:?}: {c:?}");
            let b = &c.breaches[0];
            assert_eq!((b.condition, b.stream, b.is_bug()), (Condition::ServerMissed, Some(StreamNo(1)), true));
        }
        assert_eq!(
            evicted_under(inside[1]).breaches[0].to_string(),
            "a server bug: the server answered Last-Event-ID 1-1 in session 0-1 as evicted, but its retention (a \
             5m00.000s window, 2 events per stream) still covered event 2 of stream1: stored at 2.000s, \
             4m09.000s old, 1 event(s) stored after it: its retention owed the client those events"
        );
        // A window the event outlived, or a count its successors reached: condition 2, as before.
        let allowed = [
            RetentionBound { max_events: None, window_us: minutes(4) },
            RetentionBound { max_events: Some(1), window_us: minutes(5) },
            RetentionBound { max_events: Some(1), window_us: None },
        ];
        for bound in allowed {
            assert_eq!(
                evicted_under(bound).breaches,
                Conditions::judge(&trace(vec![
                    (500, stored(0)),
                    (1_000, stored(1)),
                    (2_000, stored(2)),
                    (120_000, stored(3)),
                    (251_000, gone_410()),
                ]))
                .breaches,
                "{bound:?}"
            );
        }
        // An unbounded store that says it evicted: nothing allowed it.
        assert_eq!(evicted_under(RetentionBound::default()).breaches[0].condition, Condition::ServerMissed);
    }

    #[test]
    fn an_eviction_from_a_store_shared_across_sessions_is_not_counted_against_its_bounds() {
        let bound = RetentionBound { max_events: Some(2), window_us: None };
        let resume = evicted_410(bound);
        let shared = StepKind::ServerStart { epoch: 0, sessions_share_store: true, bounds: Default::default() };
        let c = Conditions::judge(&trace(vec![
            (0, shared),
            (1_000, stored(1)),
            (2_000, stored(2)),
            (120_000, stored(3)),
            (251_000, resume),
        ]));
        assert_eq!(c.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::Retention], "{c:?}");
    }

    #[test]
    fn an_evicted_id_answered_409_breaks_retention_as_a_410_does_and_a_400_does_not() {
        let rejected = |status: Status| {
            let resume = StepKind::Resume {
                session: sid(),
                last_event_id: EventId::from("1-1"),
                stream: Some(StreamNo(1)),
                outcome: ResumeOutcome::Rejected { status, head: Some(EventId::from("1-2")) },
                held: false,
                evicted: None,
                claimed_by: None,
                finished: false,
            };
            Conditions::judge(&trace(vec![
                (1_000, stored(1)),
                (2_000, stored(2)),
                (120_000, stored(3)),
                (251_000, resume),
            ]))
        };
        let conflict = rejected(Status::CONFLICT);
        assert_eq!(conflict.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::Retention]);
        assert_eq!(conflict.breaches, rejected(Status::GONE).breaches);
        // A 400 says nothing of retention: the request was wrong, not the id too old.
        assert!(rejected(Status::BAD_REQUEST).all_held(), "{:?}", rejected(Status::BAD_REQUEST));
        // Unless the server's own log evicted what followed the id (the Go SDK's 400 "failed to
        // replay events" for purged data): then it is the 410's condition 2.
        let purged = |status: Status| {
            let resume = StepKind::Resume {
                session: sid(),
                last_event_id: EventId::from("1-1"),
                stream: Some(StreamNo(1)),
                outcome: ResumeOutcome::Rejected { status, head: None },
                held: false,
                evicted: Some(RetentionBound { max_events: Some(1), window_us: None }),
                claimed_by: None,
                finished: false,
            };
            Conditions::judge(&trace(vec![
                (1_000, stored(1)),
                (2_000, stored(2)),
                (120_000, stored(3)),
                (251_000, resume),
            ]))
        };
        let conditions = purged(Status::BAD_REQUEST).breaches.iter().map(|b| b.condition).collect::<Vec<_>>();
        assert_eq!(conditions, vec![Condition::Retention], "{:?}", purged(Status::BAD_REQUEST));
    }

    #[test]
    fn the_outage_runs_from_the_last_answer_below_400() {
        // Answered 200 at 10 s, refused at 40 s (a 503, or a 400), then "session not found" at
        // 70 s: the client was without an answer for a minute, since only an answer below 400 is
        // the server being reached.
        for refused in [Status(503), Status::BAD_REQUEST] {
            let t = trace(vec![
                (0, on_session(1)),
                (10_000, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(Status::OK) }),
                (40_000, on_session(2)),
                (40_001, StepKind::Response { conn: ConnId(2), head: ResponseHead::status(refused) }),
                (70_000, on_session(3)),
                (70_001, StepKind::Response { conn: ConnId(3), head: ResponseHead::status(Status::NOT_FOUND) }),
            ]);
            let c = Conditions::judge(&t);
            let retention: Vec<_> = c.breaches.iter().filter(|b| b.condition == Condition::Retention).collect();
            assert_eq!(retention.len(), 1, "{refused}: {c:?}");
            assert!(retention[0].detail.contains("after 1m00.001s without an answer"), "{}", retention[0].detail);
        }
    }

    #[test]
    fn a_request_timeout_is_an_outage_only_after_a_break_a_5xx_is_one_and_a_4xx_is_not() {
        let timed_out_after = |status: u16| {
            let t = trace(vec![
                (0, start(false)),
                (1, on_session(1)),
                (10_000, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(Status::OK) }),
                (20_000, on_session(2)),
                (20_001, StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status(status)) }),
                (80_000, StepKind::AppError { call: CallKey(1), error: "request timed out after 60s".into() }),
            ]);
            Conditions::judge(&t).breaches.iter().any(|b| b.condition == Condition::Retention)
        };
        assert!(timed_out_after(503), "a 503 cut the client off");
        assert!(!timed_out_after(400), "a 400 is an answer of the server, not a break");
    }

    #[test]
    fn a_client_that_restarts_before_it_held_a_session_had_nothing_to_persist() {
        let t = trace(vec![(0, start(false)), (1, post(1)), (30_000, start(false))]);
        assert!(Conditions::judge(&t).all_held(), "{:?}", Conditions::judge(&t));
    }

    /// Without a session yet, a restart that forgets the application's calls in flight breaks
    /// condition 1 all the same (nothing was persisted of them); calls already resolved do not.
    #[test]
    fn a_client_that_restarts_with_calls_in_flight_and_nothing_persisted_breaks_condition_one() {
        let call = |k: u32| StepKind::AppCall { call: CallKey(k), tool: "pay".into(), idempotent: true };
        let restart = |middle: Vec<(u64, StepKind)>| {
            let mut kinds = vec![(0, start(false)), (1, post(1))];
            kinds.extend(middle);
            kinds.push((30_000, start(false)));
            Conditions::judge(&trace(kinds))
        };
        let lost =
            restart(vec![(2, call(0)), (3, call(1)), (4, StepKind::AppError { call: CallKey(1), error: "x".into() })]);
        assert_eq!(lost.breaches.len(), 1, "{lost:?}");
        assert_eq!(lost.breaches[0].condition, Condition::Persisted);
        assert!(
            lost.breaches[0].detail.ends_with("forgetting the calls in flight (call0)"),
            "{}",
            lost.breaches[0].detail
        );
        assert!(restart(vec![(2, call(0)), (5, StepKind::AppUnknownOutcome { call: CallKey(0), reason: "x".into() })])
            .all_held());
        let result = StepKind::AppResult { call: CallKey(0), session: sid(), id: None };
        assert!(restart(vec![(2, call(0)), (5, result)]).all_held(), "a call answered is not in flight");
        assert!(restart(vec![(2, call(0)), (5, start(true))]).breaches.len() == 1);
    }

    #[test]
    fn a_silent_head_breaks_conditions_two_and_three() {
        let t = trace(vec![
            (1_000, stored(1)),
            (
                5_000,
                StepKind::Resume {
                    session: sid(),
                    last_event_id: EventId::from("1-1"),
                    stream: Some(StreamNo(1)),
                    outcome: ResumeOutcome::SilentHead { skipped: 40 },
                    held: false,
                    evicted: None,
                    claimed_by: None,
                    finished: false,
                },
            ),
        ]);
        let c = Conditions::judge(&t);
        let numbers: Vec<u8> = c.breaches.iter().map(|b| b.condition.number()).collect();
        assert_eq!(numbers, vec![2, 3]);
        assert!(c.explain_at(Instant(6_000_000)).to_string().starts_with("explained by condition 2:"));
    }

    #[test]
    fn an_id_the_server_still_held_answered_as_unhonourable_is_a_server_bug_not_a_broken_condition() {
        let judged = |outcome: ResumeOutcome, held: bool| {
            let resume = StepKind::Resume {
                session: sid(),
                last_event_id: EventId::from("1-1"),
                stream: Some(StreamNo(1)),
                outcome,
                held,
                evicted: None,
                claimed_by: None,
                finished: false,
            };
            Conditions::judge(&trace(vec![(500, stored(0)), (1_000, stored(1)), (2_000, stored(2)), (60_000, resume)]))
        };
        let outcomes = [
            ResumeOutcome::Rejected { status: Status::GONE, head: Some(EventId::from("1-2")) },
            ResumeOutcome::SilentHead { skipped: 1 },
            ResumeOutcome::FromOldest { skipped: 1, replayed: 0 },
            ResumeOutcome::Empty { open: false },
        ];
        for outcome in outcomes {
            let missed = judged(outcome.clone(), true);
            let conditions: Vec<Condition> = missed.breaches.iter().map(|b| b.condition).collect();
            assert_eq!(conditions, vec![Condition::ServerMissed], "{outcome:?}");
            assert!(missed.breaches[0].is_bug());
            assert!(missed.breaches[0].to_string().starts_with("a server bug: the server still held"), "{missed:?}");
            let how = match &outcome {
                ResumeOutcome::Rejected { status, .. } => format!("(refused it with HTTP {status})"),
                _ => "(".to_string(),
            };
            assert!(missed.breaches[0].detail.contains(&how), "{missed:?}");
            assert!(matches!(missed.explain_at(Instant(70_000_000)), Explanation::Bug(_)));
            assert_eq!(missed.explain_at(Instant(59_000_000)), Explanation::Unexplained);
            // Not held: the server no longer had the events, condition 2 broke (and 3 when silent).
            let evicted = judged(outcome.clone(), false);
            assert!(evicted.breaches.iter().any(|b| b.condition == Condition::Retention), "{outcome:?}");
            assert!(evicted.breaches.iter().all(|b| !b.is_bug()));
            assert!(evicted.explain_at(Instant(70_000_000)).is_explained());
        }
        // An id another session stored is no event the server owed this one.
        let foreign = Conditions::judge(&trace(vec![
            (500, stored_on(&SessionId::from("0-2"), StreamNo(1), 0, None)),
            (1_000, stored_on(&SessionId::from("0-2"), StreamNo(1), 1, None)),
            (
                60_000,
                StepKind::Resume {
                    session: sid(),
                    last_event_id: EventId::from("1-0"),
                    stream: None,
                    outcome: ResumeOutcome::Empty { open: true },
                    held: true,
                    evicted: None,
                    claimed_by: None,
                    finished: false,
                },
            ),
        ]));
        assert!(foreign.breaches.iter().all(|b| b.condition != Condition::ServerMissed), "{foreign:?}");
        // A replay is no miss, whatever the flag says.
        let replayed = judged(ResumeOutcome::Replayed { replayed: 1 }, true);
        assert!(replayed.all_held(), "{replayed:?}");
    }

    /// A `409` because an earlier connection still claims the stream (the Go SDK's
    /// `resume_while_attached = reject409`) says nothing of the id: it is read as the server's
    /// refusal of a resume it could have honoured, and said so, not as a lookup that missed (a
    /// sweep of py-sdk × go-sdk with a restarted client read "its lookup missed them").
    #[test]
    fn a_resume_refused_for_a_stream_another_connection_claims_is_named_as_such() {
        let judged = refused_409_while_held;
        let claimed = judged(Some(ConnId(8)));
        let b = &claimed.breaches;
        assert_eq!((b.len(), b[0].condition, b[0].is_bug()), (1, Condition::ServerMissed, true), "{claimed:?}");
        assert!(b[0].detail.contains("because an earlier connection (c8) still claimed the stream"), "{}", b[0].detail);
        assert!(!b[0].detail.contains("lookup missed"), "{}", b[0].detail);
        assert_eq!(b[0].rules, ["server.resume_while_attached"]);
        let missed = judged(None);
        assert!(missed.breaches[0].detail.ends_with("its lookup missed them"), "{missed:?}");
        assert!(missed.breaches[0].rules.is_empty(), "{missed:?}");
    }

    /// A held id whose lookup led to no stream of the session at all (the resume step's `stream`
    /// is none: the TypeScript example store cuts `_GET_stream_…` at its first `_` into an empty
    /// stream and replays nothing) is the server's miss by its event ids, and names that rule
    /// (a swarm sweep of go-sdk × ts-sdk said only "its lookup missed them").
    #[test]
    fn a_held_id_whose_lookup_found_no_stream_names_the_servers_event_ids() {
        let c = refused_while_held(None, None);
        let b = &c.breaches;
        assert_eq!((b.len(), b[0].condition, b[0].is_bug()), (1, Condition::ServerMissed, true), "{c:?}");
        assert!(b[0].detail.contains("its lookup found no stream of the session from that id"), "{}", b[0].detail);
        assert_eq!((b[0].rules, b[0].stream), (&["server.event_ids"][..], Some(StreamNo(1))));
    }

    fn refused_409_while_held(claimed_by: Option<ConnId>) -> Conditions {
        refused_while_held(claimed_by, Some(StreamNo(1)))
    }

    /// Events 1-0 to 1-2 stored, then at 60 s a resume from 1-1 refused 409 while the store still
    /// held what followed it; `claimed_by` the connection that kept the stream, if that was why;
    /// `stream` the one the server's lookup led to.
    fn refused_while_held(claimed_by: Option<ConnId>, stream: Option<StreamNo>) -> Conditions {
        let resume = StepKind::Resume {
            session: sid(),
            last_event_id: EventId::from("1-1"),
            stream,
            outcome: ResumeOutcome::Rejected { status: Status::CONFLICT, head: None },
            held: true,
            evicted: None,
            claimed_by,
            finished: false,
        };
        Conditions::judge(&trace(vec![(500, stored(0)), (1_000, stored(1)), (2_000, stored(2)), (60_000, resume)]))
    }

    /// A missed replay of one stream costs what that stream carried: not an event the session
    /// never stored, which a store shared across sessions handed it twice (a swarm search of
    /// reference × ts-sdk × standalone-notify with `server.store = shared-by-request-id` read
    /// such duplicates as the TypeScript server's standalone-stream miss).
    #[test]
    fn a_missed_replay_does_not_explain_an_event_the_session_never_stored() {
        let c = refused_409_while_held(None);
        let duplicate = |subject: &str| Violation {
            invariant: InvariantId::NoDuplicateDelivery,
            step: 3,
            at: Instant(70_000_000),
            subject: subject.to_string(),
            detail: String::new(),
        };
        assert!(matches!(c.explain(&duplicate("session 0-1 stream1 event 1-2")), Explanation::Bug(_)));
        assert_eq!(c.explain(&duplicate("session 0-1 event 9-4")), Explanation::Unexplained, "a foreign event");
        // A session's own subject without an event (its churn) still counts the miss.
        let churn = Violation { invariant: InvariantId::BoundedReconnects, ..duplicate("session 0-1") };
        assert!(matches!(c.explain(&churn), Explanation::Bug(_)));
    }

    /// A restart that brings the session back but not the ids of the tasks answering its calls
    /// breaks condition 1 for those tasks (a swarm search of reference × reference × task-long-tool
    /// met it: the reference client kept its session durably and its task ids in memory).
    #[test]
    fn a_restart_that_forgets_task_ids_breaks_condition_one_even_when_the_session_came_back() {
        let forgot = || StepKind::TaskIdForgotten { task: crate::tasks::TaskId("r0.0-t0".into()) };
        let restart = |durable: bool| client_start(true, durable, false);
        // Kept in memory by the task-id setting, whatever the session's persistence: that
        // setting's price, not a promise the client broke.
        for durable in [false, true] {
            let c = Conditions::judge(&trace(vec![
                (0, start(false)),
                (1, on_session(1)),
                (30_000, forgot()),
                (30_000, restart(durable)),
            ]));
            let b: Vec<_> = c.breaches.iter().map(|b| (b.condition, b.promised)).collect();
            assert_eq!(b, vec![(Condition::Persisted, false)], "durable {durable}");
            assert!(
                c.breaches[0].detail.contains("without the ids of its tasks (r0.0-t0)"),
                "{}",
                c.breaches[0].detail
            );
        }
        // An id forgotten on a "not found", with no restart at that instant, breaks nothing here.
        let c = Conditions::judge(&trace(vec![
            (0, start(false)),
            (1, on_session(1)),
            (30_000, forgot()),
            (31_000, restart(false)),
        ]));
        assert!(c.all_held(), "{c:?}");
    }

    /// A task lost is its call's unknown outcome: given up while cut off, condition 2; the
    /// application issuing the non-idempotent call again after it, condition 4.
    #[test]
    fn a_task_lost_is_an_unknown_outcome_and_a_give_up_while_cut_off() {
        let lost = StepKind::AppTaskLost { task: crate::tasks::TaskId("r0.0-t0".into()), call: CallKey(0) };
        let pay = StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: false };
        let refused = StepKind::ConnEnd { conn: ConnId(2), end: ConnEnd::Refused };
        let c = Conditions::judge(&trace(vec![
            (0, start(false)),
            (1_000, pay.clone()),
            (1_000, on_session(1)),
            (28_000, on_session(2)),
            (28_000, refused),
            (30_000, lost.clone()),
            (232_000, pay.clone()),
        ]));
        let conditions: Vec<Condition> = c.breaches.iter().map(|b| b.condition).collect();
        assert_eq!(conditions, vec![Condition::Retention, Condition::ByClass], "{c:?}");
        assert!(c.breaches[0].detail.contains("gave up polling task r0.0-t0"), "{}", c.breaches[0].detail);
        // An SDK client's error after its polls went unanswered, cut off: the same give-up.
        let polls = StepKind::AppError { call: CallKey(0), error: crate::client::ERR_TASK_POLLS.into() };
        let refused = StepKind::ConnEnd { conn: ConnId(2), end: ConnEnd::Refused };
        let c = Conditions::judge(&trace(vec![
            (0, start(false)),
            (1_000, pay.clone()),
            (28_000, on_session(2)),
            (28_000, refused),
            (30_000, polls),
        ]));
        assert_eq!(c.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::Retention], "{c:?}");
        // Lost on an answer (a "not found" reads as contact): no give-up of its own.
        let answered = StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status::OK) };
        let c = Conditions::judge(&trace(vec![
            (0, start(false)),
            (1_000, pay),
            (28_000, on_session(2)),
            (28_010, answered),
            (30_000, lost),
        ]));
        assert!(c.all_held(), "{c:?}");
    }

    /// A non-idempotent call whose request the client had sent, told to the application as a
    /// failure when the client could not know what became of it (its own time-out, its give-up):
    /// the note reconciles in-flight requests as unknown outcome (its decision procedure says
    /// so), so telling it as a failure is condition 4 (the TypeScript SDK's 60 s `Request timed
    /// out` on a long tool, anomalyco/opencode#28186, and Python's `connection closed` after its
    /// reconnects, read as unexplained), the client's bug when its policy keeps condition 4, and
    /// nothing for a request never sent, an idempotent call, or an answer of the server's.
    /// A time-out's cancel lost with its connection leaves the work running; a client that
    /// told the application the call failed breaks condition 4 (its bug if its policy keeps
    /// it), one that told an unknown outcome breaks nothing, and a cancel the server took (a 202)
    /// breaks nothing either.
    fn unknown_again() -> StepKind {
        StepKind::AppUnknownOutcome { call: CallKey(0), reason: "request timed out".into() }
    }

    #[test]
    fn a_cancel_lost_with_its_connection_after_a_failure_was_told_breaks_condition_four() {
        let call = crate::http::ToolCall { tool: "pay".into(), key: CallKey(0), idempotency_key: None, tasks: false };
        let sent = StepKind::Send {
            conn: ConnId(2),
            request: Request::post(Some(sid()), crate::http::ClientMessage::CallTool { id: RequestId(2), call }),
        };
        let cancel = StepKind::Send {
            conn: ConnId(3),
            request: Request::post(Some(sid()), crate::http::ClientMessage::Cancelled { request: RequestId(2) }),
        };
        let failed = StepKind::AppError { call: CallKey(0), error: "request timed out".into() };
        let unknown = StepKind::AppUnknownOutcome { call: CallKey(0), reason: "request timed out".into() };
        let judged = |by_class: bool, told: StepKind, end: StepKind| {
            Conditions::judge(&trace(vec![
                (0, client_start(false, false, by_class)),
                (1_000, StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: true }),
                (1_000, sent.clone()),
                (61_000, cancel.clone()),
                (61_000, told),
                (61_000, end),
            ]))
        };
        let reset = StepKind::ConnEnd { conn: ConnId(3), end: ConnEnd::Reset };
        let lost = judged(false, failed.clone(), reset.clone());
        let b: Vec<_> = lost.breaches.iter().map(|b| (b.condition, b.promised, b.step)).collect();
        assert_eq!(b, vec![(Condition::ByClass, false, 5)], "{lost:?}");
        assert!(lost.breaches[0].detail.starts_with("the client's cancel of call0 was cut at 1m01.000s"), "{lost:?}");
        let orphaned = Violation {
            invariant: InvariantId::NoOrphanedSession,
            step: 5,
            at: Instant(543_000_000),
            subject: "session 0-1 stream1 event 1-32".into(),
            detail: String::new(),
        };
        assert!(matches!(lost.explain(&orphaned), Explanation::ExplainedBy(_)), "{lost:?}");
        assert!(judged(true, failed.clone(), reset.clone()).breaches[0].is_bug());
        let answered_503 = StepKind::Response { conn: ConnId(3), head: ResponseHead::status(Status(503)) };
        assert_eq!(judged(false, failed.clone(), answered_503).breaches.len(), 1);
        assert!(judged(true, unknown.clone(), reset.clone()).all_held(), "told an unknown outcome");
        // Lost with the client's process (a restart at that instant, no end of its connection
        // recorded): as a reset. Answered before the restart (a 202): taken, nothing broken.
        let restart = client_start(true, true, false);
        let with_process = judged(false, failed.clone(), restart.clone());
        let b: Vec<_> = with_process.breaches.iter().map(|b| (b.condition, b.promised, b.step)).collect();
        assert_eq!(b, vec![(Condition::ByClass, false, 5)], "{with_process:?}");
        assert!(
            with_process.breaches[0]
                .detail
                .starts_with("the client's cancel of call0 was lost with the client's process at"),
            "{with_process:?}"
        );
        let taken = Conditions::judge(&trace(vec![
            (0, client_start(false, true, false)),
            (1_000, StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: true }),
            (1_000, sent.clone()),
            (61_000, cancel.clone()),
            (61_000, failed.clone()),
            (61_010, StepKind::Response { conn: ConnId(3), head: ResponseHead::status(Status(202)) }),
            (61_010, restart),
        ]));
        assert!(taken.all_held(), "{taken:?}");
        // Told an unknown outcome, then issued again by its application before the cancel broke
        // (`on_error = reissue`): the reference client's time-out, nothing broken.
        let reissued = Conditions::judge(&trace(vec![
            (0, client_start(false, true, true)),
            (1_000, StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: true }),
            (1_000, sent.clone()),
            (61_000, cancel.clone()),
            (61_000, unknown),
            (61_000, StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: true }),
            (61_000, reset.clone()),
        ]));
        assert!(reissued.all_held(), "{reissued:?}");
        // The same, and the re-issue fails (never sent: a new session's handshake held by a
        // black hole) before the first attempt's cancel is refused, its connect held as long:
        // the cancelled attempt was told an unknown outcome, the failure is the re-issue's.
        let refused = StepKind::ConnEnd { conn: ConnId(3), end: ConnEnd::Refused };
        let late = Conditions::judge(&trace(vec![
            (0, client_start(false, true, true)),
            (1_000, StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: true }),
            (1_000, sent.clone()),
            (61_000, cancel.clone()),
            (61_000, unknown_again()),
            (61_000, StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: true }),
            (113_000, failed.clone()),
            (188_000, refused),
        ]));
        assert!(late.all_held(), "{late:?}");
        let taken = StepKind::Response { conn: ConnId(3), head: ResponseHead::status(Status(202)) };
        assert!(judged(true, failed, taken).all_held(), "the server took the cancel");
    }

    #[test]
    fn an_unknown_outcome_told_as_a_failure_breaks_condition_four() {
        use crate::http::{ClientMessage, ToolCall};
        let call = CallKey(0);
        let tool_call = ToolCall { tool: "pay".into(), key: call, idempotency_key: None, tasks: false };
        let post = StepKind::Send {
            conn: ConnId(2),
            request: Request::post(Some(sid()), ClientMessage::CallTool { id: RequestId(2), call: tool_call }),
        };
        let judged = |by_class: bool, sent: bool, idempotent: bool, error: &str| {
            let mut steps = vec![
                (0, client_start(false, false, by_class)),
                (1_000, StepKind::AppCall { call, tool: "pay".into(), idempotent }),
            ];
            if sent {
                steps.push((1_000, post.clone()));
            }
            steps.push((61_000, StepKind::AppError { call, error: error.into() }));
            Conditions::judge(&trace(steps))
        };
        let false_failure = Violation {
            invariant: InvariantId::NoFalseFailure,
            step: 3,
            at: Instant(61_000_000),
            subject: call.to_string(),
            detail: String::new(),
        };
        for error in ["request timed out", "connection closed", "stream ended without a response"] {
            let sdk = judged(false, true, false, error);
            let b: Vec<_> = sdk.breaches.iter().map(|b| (b.condition, b.promised, b.step)).collect();
            assert_eq!(b, vec![(Condition::ByClass, false, 3)], "{error}: {sdk:?}");
            let told = format!("that call0 failed ({error}) though it had sent the request");
            assert!(sdk.breaches[0].detail.contains(&told), "{sdk:?}");
            assert!(matches!(sdk.explain(&false_failure), Explanation::ExplainedBy(_)), "{sdk:?}");
        }
        // A policy that keeps condition 4 and does it anyway: its bug.
        let promised = judged(true, true, false, "request timed out");
        assert!(promised.breaches.iter().any(|b| b.condition == Condition::ByClass && b.is_bug()), "{promised:?}");
        // A request never sent failed for certain; an idempotent call's error misleads nobody; an
        // HTTP answer is not the client's own ignorance.
        assert!(judged(false, false, false, "request timed out").all_held());
        assert!(judged(false, true, true, "request timed out").all_held());
        assert!(judged(false, true, false, "HTTP 500").all_held());
        // A task given up unanswered: its work may have run (a sweep of the Python client's task
        // families read its "task polls exhausted" as unexplained).
        let polls = judged(false, true, false, crate::client::ERR_TASK_POLLS);
        assert_eq!(of_condition(&polls, Condition::ByClass).len(), 1, "{polls:?}");
        assert!(matches!(polls.explain(&false_failure), Explanation::ExplainedBy(_)), "{polls:?}");
        // A task the server no longer finds, its "not found" passed on as the call's error at
        // that instant: the work may have run; the same words at another time are an error.
        let not_found = |at_ms: u64| {
            let answer = StepKind::Json {
                conn: ConnId(4),
                message: crate::http::ServerMessage::Error {
                    request: Some(RequestId(3)),
                    code: Some(crate::tasks::TASK_NOT_FOUND),
                    message: "Task not found: r0.0-t0".into(),
                },
            };
            Conditions::judge(&trace(vec![
                (0, client_start(false, false, false)),
                (1_000, StepKind::AppCall { call, tool: "pay".into(), idempotent: false }),
                (1_000, post.clone()),
                (at_ms, answer),
                (61_000, StepKind::AppError { call, error: "Task not found: r0.0-t0".into() }),
            ]))
        };
        let passed_on = not_found(61_000);
        let by_class: Vec<_> = of_condition(&passed_on, Condition::ByClass).iter().map(|b| b.step).collect();
        assert_eq!(by_class, vec![4], "{passed_on:?}");
        assert!(matches!(passed_on.explain(&false_failure), Explanation::ExplainedBy(_)), "{passed_on:?}");
        assert!(of_condition(&not_found(30_000), Condition::ByClass).is_empty());
        // An attempt lost with its stream and re-issued (the modern client), the re-issue then
        // refused with an HTTP answer: the lost attempt's outcome is unknown all the same (a
        // sweep of the modern client in a mixed fleet read the false failure as unexplained).
        let reissue = StepKind::Decision {
            call: Some(call),
            outcome: None,
            action: None,
            error: Some(crate::client::NOTE_REISSUE.into()),
        };
        let refused = Conditions::judge(&trace(vec![
            (0, client_start(false, false, false)),
            (1_000, StepKind::AppCall { call, tool: "pay".into(), idempotent: false }),
            (1_000, post.clone()),
            (2_000, reissue),
            (2_000, post.clone()),
            (2_100, StepKind::AppError { call, error: "HTTP 400".into() }),
        ]));
        let by_class: Vec<_> = of_condition(&refused, Condition::ByClass).iter().map(|b| b.step).collect();
        assert_eq!(by_class, vec![5], "{refused:?}");
    }

    /// An `initialize` sent while the client holds a session no 404 ended, cut off since a
    /// transport failure (Python's handshake, whose `notifications/initialized` was reset, starts
    /// over: a guided sweep of py-sdk × reference read the second session as unexplained), is
    /// condition 4; after a 404 for the session it is the note's own step, and after a decision to
    /// re-initialize (the client's, or the application's own) it is that decision's.
    #[test]
    fn initializing_again_while_holding_a_session_after_a_reset_breaks_condition_four() {
        let answered = StepKind::Response {
            conn: ConnId(1),
            head: ResponseHead { session: Some(sid()), ..ResponseHead::status(Status(200)) },
        };
        let initialized = StepKind::Send {
            conn: ConnId(2),
            request: Request::post(Some(sid()), crate::http::ClientMessage::Initialized),
        };
        let reset = StepKind::ConnEnd { conn: ConnId(2), end: ConnEnd::Reset };
        let again = StepKind::Send { conn: ConnId(3), request: Request::initialize(RequestId(2), "app") };
        let start = |by_class| (0, client_start(false, false, by_class));
        let judged = |by_class: bool, between: Vec<(u64, StepKind)>| {
            let mut steps =
                vec![start(by_class), (0, answered.clone()), (1, initialized.clone()), (1_000, reset.clone())];
            steps.extend(between);
            steps.push((5_000, again.clone()));
            Conditions::judge(&trace(steps))
        };
        let sdk = judged(false, vec![]);
        let b: Vec<_> = sdk.breaches.iter().map(|b| (b.condition, b.promised)).collect();
        assert_eq!(b, vec![(Condition::ByClass, false)], "{sdk:?}");
        assert!(sdk.breaches[0].detail.contains("initialized again at 5.000s while it held session 0-1"), "{sdk:?}");
        assert!(judged(true, vec![]).breaches[0].is_bug(), "a policy that keeps condition 4");
        // A 404 for the session first: the note re-initializes on it.
        let not_found = vec![
            (
                2_000,
                StepKind::Send {
                    conn: ConnId(4),
                    request: Request::post(Some(sid()), crate::http::ClientMessage::Initialized),
                },
            ),
            (2_010, StepKind::Response { conn: ConnId(4), head: ResponseHead::status(Status(404)) }),
            (2_010, StepKind::ConnEnd { conn: ConnId(4), end: ConnEnd::Reset }),
        ];
        let after_404 = judged(false, not_found);
        assert!(after_404.breaches.iter().all(|b| b.condition != Condition::ByClass), "{after_404:?}");
        // A decision to re-initialize already stands for it: one breach, not two.
        let decided =
            StepKind::Decision { call: None, outcome: None, action: Some(NextAction::Reinitialize), error: None };
        let one = judged(false, vec![(1_000, decided)]);
        assert_eq!(one.breaches.iter().filter(|b| b.condition == Condition::ByClass).count(), 1, "{one:?}");
        // So does the application's own choice to start over (`on_error = reinitialize-reissue`):
        // its breach, which no policy of the client's promised, and not the client's bug.
        let app = judged(true, vec![(4_000, StepKind::AppReinitialize { session: sid() })]);
        let b: Vec<_> = app.breaches.iter().map(|b| (b.condition, b.promised)).collect();
        assert_eq!(b, vec![(Condition::ByClass, false)], "{app:?}");
        assert!(app.breaches[0].detail.contains("the application started a new session"), "{app:?}");
    }

    /// A client that gives its standalone stream up without telling the application leaves what
    /// the stream would have carried silent: condition 4 (the naive client's `standalone-notify`
    /// cell read as `conditions 1-4 held`), its bug if its policy keeps condition 4; one that
    /// tells (`app-stream-lost`, the reference client) breaks nothing.
    #[test]
    fn giving_up_the_standalone_stream_untold_breaks_condition_four() {
        assert_eq!(
            crate::client::NOTE_STANDALONE_GIVEN_UP,
            format!("standalone stream: {}", crate::client::ERR_EXHAUSTED)
        );
        let gave_up = StepKind::Decision {
            call: None,
            outcome: None,
            action: None,
            error: Some(crate::client::NOTE_STANDALONE_GIVEN_UP.into()),
        };
        let told = StepKind::AppStreamLost { session: sid(), after: None };
        let judged = |by_class: bool, tell: bool| {
            let mut steps = vec![(0, client_start(false, false, by_class)), (90_000, gave_up.clone())];
            if tell {
                steps.push((90_000, told.clone()));
            }
            Conditions::judge(&trace(steps))
        };
        let naive = judged(false, false);
        let b: Vec<_> = naive.breaches.iter().map(|b| (b.condition, b.promised, b.step)).collect();
        assert_eq!(b, vec![(Condition::ByClass, false, 1)], "{naive:?}");
        assert!(naive.breaches[0].detail.contains("gave up its standalone stream at 1m30.000s without telling"));
        let lost = loss(1, 60_000_000, "session 0-1 stream0 event 0-30");
        assert!(matches!(naive.explain(&lost), Explanation::ExplainedBy(_)), "{naive:?}");
        assert!(judged(true, false).breaches[0].is_bug());
        assert!(judged(true, true).all_held(), "told: nothing broke");
        assert!(judged(false, true).all_held());
    }

    /// The naive client's standalone stream after a reset: a fresh `GET` though it had received
    /// ids on that stream starts it at the head (condition 1; condition 4 when its policy keeps
    /// the id); a fresh `GET` after a refusal, a resuming `GET`, or one before any id came
    /// breaks nothing.
    #[test]
    fn a_fresh_standalone_get_after_ids_came_breaks_condition_one_unless_the_last_was_refused() {
        let answered = |conn: u64, status: u16| StepKind::Response {
            conn: ConnId(conn),
            head: ResponseHead { session: Some(sid()), ..ResponseHead::status(Status(status)) },
        };
        let judged = |durable: bool, by_class: bool, second: Vec<StepKind>| {
            let mut steps = vec![
                (0, client_start(false, durable, by_class)),
                (1, get(3, None)),
                (2, answered(3, 200)),
                (3, stored_on(&sid(), StreamNo::STANDALONE, 0, None)),
                (4, event_on(3, "0-0")),
            ];
            steps.extend(second.into_iter().map(|k| (10, k)));
            Conditions::judge(&trace(steps))
        };
        let again = judged(false, false, vec![get(5, None)]);
        let b: Vec<_> = again.breaches.iter().map(|b| (b.condition, b.promised, b.step)).collect();
        assert_eq!(b, vec![(Condition::Persisted, false, 5)], "{again:?}");
        assert!(again.breaches[0].detail.contains("though it had received event 0-0 on it"), "{again:?}");
        assert_eq!(again.breaches[0].session, Some(sid()));
        let duplicate = Violation {
            invariant: InvariantId::NoDuplicateDelivery,
            step: 5,
            at: Instant(20_000),
            subject: "session 0-1 stream0 event 0-0".into(),
            detail: String::new(),
        };
        assert!(matches!(again.explain(&duplicate), Explanation::ExplainedBy(_)), "{again:?}");
        // A client that keeps the id and starts over does not act by class: condition 4, its bug
        // only if its policy acts by class.
        let kept = judged(true, false, vec![get(5, None)]);
        let b: Vec<_> = kept.breaches.iter().map(|b| (b.condition, b.promised)).collect();
        assert_eq!(b, vec![(Condition::ByClass, false)], "{kept:?}");
        assert!(judged(true, true, vec![get(5, None)]).breaches[0].is_bug(), "the reference client's bug");
        assert!(judged(false, false, vec![get(5, Some("0-0"))]).all_held(), "resumed");
        assert!(
            judged(false, false, vec![get(5, Some("0-0")), answered(5, 410), get(6, None)]).all_held(),
            "after a 410"
        );
        // A resume from an id this session never stored (a store shared by every session handed
        // the client another session's event) is a resume of the standalone stream all the same:
        // its refusal excuses the fresh `GET` after it (a whole-space guided search of the
        // reference pair read it as the client's bug). One from an id of a call's stream is not.
        assert!(
            judged(true, true, vec![get(5, Some("9-9")), answered(5, 403), get(6, None)]).all_held(),
            "after a 403 to a resume from another session's id"
        );
        let call_stream =
            vec![stored_on(&sid(), StreamNo(1), 0, None), get(5, Some("1-0")), answered(5, 403), get(6, None)];
        assert!(!judged(true, true, call_stream).all_held(), "a call's resume refused excuses no fresh standalone GET");
        assert!(
            !judged(false, false, vec![get(5, Some("0-0")), answered(5, 503), get(6, None)]).all_held(),
            "after a 503"
        );
        // A refusal excuses the fresh `GET`s after it until an id comes again (a restarted client
        // whose first fresh `GET` met a partition tried again, and the judge read the second as
        // its bug: a guided `standalone-notify` search of the reference pair).
        let after_refusal = vec![get(5, Some("0-0")), answered(5, 429), get(6, None), get(7, None)];
        assert!(judged(true, true, after_refusal).all_held(), "after a 429 and a refused connection");
        let came_again = vec![
            get(5, Some("0-0")),
            answered(5, 429),
            get(6, None),
            answered(6, 200),
            stored_on(&sid(), StreamNo::STANDALONE, 1, None),
            event_on(6, "0-1"),
            get(7, None),
        ];
        let came_again = judged(true, true, came_again);
        assert_eq!(came_again.breaches.len(), 1, "{came_again:?}");
        assert!(came_again.breaches[0].detail.contains("received event 0-1"), "{came_again:?}");
        // One start-over is one breach, however many fresh `GET`s carry it.
        let twice = judged(false, false, vec![get(5, None), get(6, None)]);
        assert_eq!(twice.breaches.len(), 1, "{twice:?}");
        // A stream given up (attempts spent) is over: a fresh `GET` later opens a new one.
        let given_up = StepKind::Decision {
            call: None,
            outcome: None,
            action: None,
            error: Some(crate::client::NOTE_STANDALONE_GIVEN_UP.to_string()),
        };
        let after_give_up = judged(true, true, vec![get(5, Some("0-0")), given_up, get(6, None)]);
        assert!(!after_give_up.breaches.iter().any(|b| b.detail.contains("opened the standalone stream")));
        // Before any id came, there was nothing to resume from.
        let early = Conditions::judge(&trace(vec![
            (0, start(false)),
            (1, get(3, None)),
            (2, answered(3, 200)),
            (3, get(4, None)),
        ]));
        assert!(early.all_held(), "{early:?}");
        // An id of the same name received in another session is none of this stream's (the
        // reference server's ids are stream and seq, the same in every session).
        let other = SessionId::from("0-9");
        let elsewhere = Conditions::judge(&trace(vec![
            (0, start(false)),
            (1, StepKind::Send { conn: ConnId(2), request: Request::get(Some(other.clone()), None) }),
            (2, stored_on(&other, StreamNo::STANDALONE, 0, None)),
            (2, event_on(2, "0-0")),
            (3, get(3, None)),
            (4, stored_on(&sid(), StreamNo::STANDALONE, 0, None)),
            (5, get(4, None)),
        ]));
        // Not the id of the other session's: this session's stream gave the client none, and
        // its event 0-0, stored while the first stream was open, is what the second loses.
        let b: Vec<_> = elsewhere.breaches.iter().map(|b| (b.condition, b.step)).collect();
        assert_eq!(b, vec![(Condition::Persisted, 6)], "{elsewhere:?}");
        assert!(elsewhere.breaches[0].detail.contains("no event id of it had reached the client"), "{elsewhere:?}");
        assert!(!elsewhere.breaches[0].detail.contains("  "), "{elsewhere:?}");
        // Stored after the fresh `GET` went and before the server attached it (a reset and a
        // notification at one instant): lost as well, judged when the new stream hands over its
        // first event, at the `GET`; nothing is owed when the new stream carries it.
        let after_get = |carried: bool| {
            let mut steps = vec![
                (0, start(false)),
                (1, get(3, None)),
                (2, answered(3, 200)),
                (17_000, StepKind::ConnEnd { conn: ConnId(3), end: ConnEnd::Reset }),
                (17_000, get(4, None)),
                (17_000, stored_on(&sid(), StreamNo::STANDALONE, 0, None)),
                (17_013, answered(4, 200)),
                (34_000, stored_on(&sid(), StreamNo::STANDALONE, 1, None)),
            ];
            if carried {
                steps.push((34_000, event_on(4, "0-0")));
            }
            steps.push((34_010, event_on(4, "0-1")));
            Conditions::judge(&trace(steps))
        };
        let lost = after_get(false);
        let b: Vec<_> = lost.breaches.iter().map(|b| (b.condition, b.step, b.at)).collect();
        assert_eq!(b, vec![(Condition::Persisted, 4, Instant(17_000_000))], "{lost:?}");
        assert!(lost.breaches[0].detail.contains("so event 0-0 (stored at 17.000s)"), "{lost:?}");
        assert!(after_get(true).all_held(), "the new stream carried it");
    }

    /// A task's `CreateTaskResult` lost with its connection: the client never held the id
    /// (condition 1, the note's "never persisted"); received first, nothing broke.
    #[test]
    fn a_task_reply_lost_with_its_connection_breaks_condition_one() {
        use crate::http::{ClientMessage, ToolCall};
        let (call, task) = (CallKey(0), crate::tasks::TaskId("r0.0-t0".into()));
        let tool_call = ToolCall { tool: "pay".into(), key: call, idempotency_key: None, tasks: true };
        let post = StepKind::Send {
            conn: ConnId(2),
            request: Request::post(Some(sid()), ClientMessage::CallTool { id: RequestId(2), call: tool_call }),
        };
        let created = StepKind::TaskCreated { task: task.clone(), call, replica: 0, ttl_us: None };
        let reset = StepKind::ConnEnd { conn: ConnId(2), end: ConnEnd::Reset };
        let received = StepKind::TaskIdReceived { task, call };
        let lost =
            Conditions::judge(&trace(vec![(1_000, post.clone()), (1_010, created.clone()), (1_020, reset.clone())]));
        assert_eq!(lost.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::Persisted]);
        assert!(lost.breaches[0].detail.contains("ended (reset), and task r0.0-t0's id never reached"), "{lost:?}");
        // It costs the task, not what the client told of the call or a re-issue.
        let b = &lost.breaches[0];
        assert!(can_cause(b, Effect::Of(InvariantId::NoOrphanedTask)));
        assert!(!can_cause(b, Effect::Of(InvariantId::NoFalseFailure)));
        assert!(!can_cause(b, Effect::Of(InvariantId::NoDuplicateExecution)));
        let got = Conditions::judge(&trace(vec![
            (1_000, post.clone()),
            (1_010, created.clone()),
            (1_015, received),
            (1_020, reset.clone()),
        ]));
        assert!(got.all_held(), "{got:?}");
        // Cut before the server created the task (the request was still on its way): recorded at
        // the creation, which had no connection left to answer on.
        let early = Conditions::judge(&trace(vec![(1_000, post.clone()), (1_000, reset), (1_013, created.clone())]));
        assert_eq!(
            early.breaches.iter().map(|b| (b.condition, b.step)).collect::<Vec<_>>(),
            vec![(Condition::Persisted, 2)]
        );
        assert!(early.breaches[0].detail.contains("before the task was created"), "{early:?}");
        // The client's process restarted with the call on its way (a swarm sweep of reference ×
        // reference × task-input read the orphaned task as unexplained): its connections went
        // with it, no `ConnEnd` said so, and the task created after had none to answer on.
        let restart = |restored| client_start(restored, true, true);
        let died = Conditions::judge(&trace(vec![
            (0, restart(false)),
            (1_000, post.clone()),
            (1_000, restart(true)),
            (1_013, created.clone()),
        ]));
        let lost: Vec<_> = died.breaches.iter().filter(|b| b.task_id_lost).map(|b| (b.condition, b.step)).collect();
        assert_eq!(lost, vec![(Condition::Persisted, 3)], "{died:?}");
        // The first start is no restart: nothing was posted before it.
        let first = Conditions::judge(&trace(vec![(0, restart(false)), (1_000, post), (1_013, created)]));
        assert!(first.breaches.iter().all(|b| !b.task_id_lost), "{first:?}");
    }

    /// A cancel sent without a session (to a server that has none): served apart, it finds
    /// nothing and the tool runs on, named as work left running with the server's rule; a tool
    /// the server cancels though its client sent no cancel of that request was ended by another
    /// client's cancel of the same id, the server's bug; its own cancel, nothing. A sweep of
    /// three TypeScript clients against a stateless server read the second `no-work-killed`.
    #[test]
    fn a_cancel_without_a_session_is_work_left_running_or_another_clients_bug() {
        let post = |id: u64| {
            let call =
                crate::http::ToolCall { tool: "lookup".into(), key: CallKey(0), idempotency_key: None, tasks: false };
            (
                0,
                StepKind::Send {
                    conn: ConnId(1),
                    request: Request::post(None, ClientMessage::CallTool { id: RequestId(id), call }),
                },
            )
        };
        let cancel = (
            60_000,
            StepKind::Send {
                conn: ConnId(2),
                request: Request::post(None, ClientMessage::Cancelled { request: RequestId(2) }),
            },
        );
        let ended = |end| {
            (90_000, StepKind::ToolEnded { session: SessionId::from(""), request: RequestId(2), call: CallKey(0), end })
        };
        // Its side effect before the cancel is no run-on; named once, at the first step after it.
        let effect = StepKind::SideEffect {
            session: SessionId::from(""),
            request: RequestId(2),
            call: CallKey(0),
            tool: "lookup".into(),
            idempotent: true,
        };
        let completed = ended(crate::trace::ToolEnd::Completed);
        let ignored =
            Conditions::judge(&trace(vec![post(2), (1, effect), cancel.clone(), completed.clone(), completed]));
        let b: Vec<_> = ignored.breaches.iter().map(|b| (b.condition, b.call, b.rules, b.step)).collect();
        assert_eq!(
            b,
            vec![(Condition::WorkRunOn, Some(CallKey(0)), &["server.sessionless_cancel"][..], 3)],
            "{ignored:?}"
        );
        // Done at the very instant the cancel went out: the server cannot have had it.
        let at_once = (60_000, ended(crate::trace::ToolEnd::Completed).1);
        assert!(Conditions::judge(&trace(vec![post(2), cancel.clone(), at_once])).breaches.is_empty());
        let stranger = Conditions::judge(&trace(vec![post(2), ended(crate::trace::ToolEnd::Cancelled)]));
        let b: Vec<_> = stranger.breaches.iter().map(|b| (b.condition, b.call, b.is_bug())).collect();
        assert_eq!(b, vec![(Condition::ServerEnded, Some(CallKey(0)), true)], "{stranger:?}");
        assert!(stranger.breaches[0].detail.contains("which its client never cancelled"), "{stranger:?}");
        let own = Conditions::judge(&trace(vec![post(2), cancel, ended(crate::trace::ToolEnd::Cancelled)]));
        assert!(own.breaches.is_empty(), "{own:?}");
    }

    /// A change one replica emitted to no listen stream of its own while the client listened on
    /// another, and no shared bus relayed it: the fleet's bus, a setting's price that explains
    /// only a lost change notification. Relayed at that instant, from a single process, or with
    /// nobody listening: nothing. A sweep of the modern client against python behind `haproxy`
    /// with three replicas read the lost changes `conditions 1-4 held`.
    #[test]
    fn a_change_on_a_replica_nobody_listens_on_is_the_fleets_bus() {
        // `ended`: a connection of the client's that ends before the change (its listen
        // stream, 1, or another, 5); `relayed`: the listeners a shared bus reached.
        let with = |listening: bool, replica: Option<u32>, relayed: Option<u32>, ended: Option<u64>| {
            let mut kinds = Vec::new();
            if listening {
                kinds.push((0, StepKind::ListenOpen { conn: ConnId(1), subscription: RequestId(1) }));
            }
            if let Some(conn) = ended {
                kinds.push((1_000, StepKind::ConnEnd { conn: ConnId(conn), end: ConnEnd::Clean }));
            }
            let emitted = kinds.len();
            kinds.push((2_000, StepKind::ChangeEmitted { change: "r1.1-c1".into(), listeners: 0 }));
            if let Some(listeners) = relayed {
                kinds.push((2_000, StepKind::ChangeRelayed { change: "r1.1-c1".into(), listeners }));
            }
            // The listen stream ends after the change: the change was missed while it was open.
            kinds.push((3_000, StepKind::ConnEnd { conn: ConnId(1), end: ConnEnd::Clean }));
            let mut t = trace(kinds);
            t.steps[emitted].replica = replica;
            Conditions::judge(&t)
        };
        let judged =
            |listening: bool, replica: Option<u32>, relayed: bool| with(listening, replica, relayed.then_some(1), None);
        let missed = judged(true, Some(1), false);
        let b: Vec<_> = missed.breaches.iter().map(|b| (b.condition, b.step, b.is_bug())).collect();
        assert_eq!(b, vec![(Condition::BusLocal, 1, false)], "{missed:?}");
        assert!(can_cause(&missed.breaches[0], Effect::Of(InvariantId::NoSilentNotificationLoss)));
        assert!(!can_cause(&missed.breaches[0], Effect::Of(InvariantId::NoSilentEventLoss)));
        for (listening, replica, relayed) in [(true, Some(1), true), (true, None, false), (false, Some(1), false)] {
            let fine = judged(listening, replica, relayed);
            assert!(fine.breaches.is_empty(), "{listening} {replica:?} {relayed}: {fine:?}");
        }
        // A relay that reached no listen stream settles nothing; another connection's end keeps
        // the client listening; its listen stream's end before the change, it listened nowhere.
        let bus = |c: &Conditions| c.breaches.iter().filter(|b| b.condition == Condition::BusLocal).count();
        assert_eq!(bus(&with(true, Some(1), Some(0), None)), 1);
        assert_eq!(bus(&with(true, Some(1), None, Some(5))), 1);
        assert_eq!(bus(&with(true, Some(1), None, Some(1))), 0);
        // Another replica's change that reached only its own listener: missed by a client whose
        // own replica's changes it heard, dated at that change though it heard its own after it;
        // relayed, or from its own replica, nothing.
        let foreign = |replica: u32, relayed: bool| {
            let mut kinds = vec![
                (0, StepKind::ListenOpen { conn: ConnId(1), subscription: RequestId(1) }),
                (2_000, StepKind::ChangeEmitted { change: "r2.0-c1".into(), listeners: 1 }),
                (2_000, StepKind::ChangeEmitted { change: "r1.0-c1".into(), listeners: 1 }),
            ];
            if relayed {
                kinds.push((2_000, StepKind::ChangeRelayed { change: "r2.0-c1".into(), listeners: 1 }));
            }
            kinds.push((2_010, StepKind::AppChange { change: "r1.0-c1".into() }));
            kinds.push((5_000, StepKind::ChangeEmitted { change: "r1.0-c2".into(), listeners: 1 }));
            let mut t = trace(kinds);
            (t.steps[1].replica, t.steps[2].replica) = (Some(replica), Some(1));
            Conditions::judge(&t)
        };
        let elsewhere = foreign(2, false);
        let b: Vec<_> = elsewhere.breaches.iter().map(|b| (b.condition, b.step, b.at)).collect();
        assert_eq!(b, vec![(Condition::BusLocal, 1, Instant(2_000_000))], "{elsewhere:?}");
        assert!(elsewhere.breaches[0].detail.contains("to its own 1 listen stream(s) only"));
        assert_eq!(bus(&foreign(2, true)), 0);
        assert_eq!(bus(&foreign(1, false)), 0);
    }

    /// A change emitted after a client's listen stream ended untold (no `app-subscription-lost`)
    /// and before it listened again: condition 4, the client's, whatever it does next (re-listen
    /// on its own, or keep believing it is subscribed: go-sdk#1229's kept flag, which read
    /// `conditions 1-4 held`). Told, or listening again before the change: nothing. Named once
    /// per ended stream.
    #[test]
    fn a_change_after_a_listen_stream_ended_untold_is_condition_4() {
        let judged = |told: bool, relistened: bool| {
            let mut kinds = vec![
                (0, StepKind::ListenOpen { conn: ConnId(1), subscription: RequestId(1) }),
                (1_000, StepKind::ConnEnd { conn: ConnId(1), end: ConnEnd::Reset }),
            ];
            if told {
                kinds.push((1_000, StepKind::AppSubscriptionLost { reason: "lost".into() }));
            }
            if relistened {
                kinds.push((1_500, StepKind::ListenOpen { conn: ConnId(2), subscription: RequestId(2) }));
            }
            kinds.push((2_000, StepKind::ChangeEmitted { change: "r0.0-c1".into(), listeners: 0 }));
            kinds.push((3_000, StepKind::ChangeEmitted { change: "r0.0-c2".into(), listeners: 0 }));
            Conditions::judge(&trace(kinds))
        };
        let untold = judged(false, false);
        let b: Vec<_> = untold.breaches.iter().map(|b| (b.condition, b.step, b.is_bug())).collect();
        // Dated at the stream's end: a change on its way on it then was lost untold too (a
        // guided sweep of the Go client read one emitted at the reset's instant as `conditions
        // 1-4 held`).
        assert_eq!(b, vec![(Condition::ByClass, 1, false)], "named once: {untold:?}");
        assert_eq!(untold.breaches[0].at, Instant(1_000_000));
        assert!(untold.breaches[0].detail.contains("its application was not told"), "{untold:?}");
        // A change emitted just before the end that the client never heard was on its way on
        // the stream: the breach is dated from it (one heard is not). `after` follows the end:
        // a later change, or the client listening again on its own.
        let ended_with = |heard: bool, after: StepKind| {
            let mut kinds = vec![
                (0, StepKind::ListenOpen { conn: ConnId(1), subscription: RequestId(1) }),
                (900, StepKind::ChangeEmitted { change: "r0.0-c0".into(), listeners: 1 }),
            ];
            if heard {
                kinds.push((905, StepKind::AppChange { change: "r0.0-c0".into() }));
            }
            kinds.push((1_000, StepKind::ConnEnd { conn: ConnId(1), end: ConnEnd::Reset }));
            kinds.push((1_100, after));
            Conditions::judge(&trace(kinds)).breaches
        };
        let later = || StepKind::ChangeEmitted { change: "r0.0-c1".into(), listeners: 0 };
        let in_flight = |heard: bool| ended_with(heard, later()).iter().map(|b| b.at).collect::<Vec<_>>();
        assert_eq!(in_flight(false), vec![Instant(900_000)]);
        assert_eq!(in_flight(true), vec![Instant(1_000_000)]);
        // Listening again on its own before any other change: the one on its way stays lost,
        // untold (the Go client re-listens after a deploy); heard, nothing.
        let relistened =
            |heard: bool| ended_with(heard, StepKind::ListenOpen { conn: ConnId(2), subscription: RequestId(2) });
        let lost = relistened(false);
        assert_eq!(
            lost.iter().map(|b| (b.condition, b.at)).collect::<Vec<_>>(),
            vec![(Condition::ByClass, Instant(900_000))]
        );
        assert!(lost[0]
            .detail
            .contains("change r0.0-c0, on its way on it, was lost with it, and the client listened again"));
        assert!(relistened(true).is_empty());
        assert!(can_cause(&untold.breaches[0], Effect::Of(InvariantId::NoSilentNotificationLoss)));
        for (told, relistened) in [(true, false), (false, true), (true, true)] {
            let fine = judged(told, relistened);
            assert!(fine.breaches.is_empty(), "told {told}, relistened {relistened}: {fine:?}");
        }
    }

    /// A standalone GET without a session that the server answered 200 and held open, then a
    /// notification it stored on the implicit context's standalone stream: the server's bug
    /// (`server.sessionless_get = hold-open`), costing only that stream's events, and read as no
    /// request's lost stream (the 2026-07-28 revision's price). A GET refused 405, one whose
    /// connection ended first, a session's notification and a priming event: nothing.
    #[test]
    fn a_get_held_open_without_a_session_that_no_notification_reaches_is_the_servers_bug() {
        let no_session = SessionId::from("");
        let notification = |session: &SessionId| StepKind::EventStored {
            session: session.clone(),
            stream: StreamNo::STANDALONE,
            seq: 0,
            id: EventId::from("0.n1"),
            call: None,
            message: Some(crate::http::ServerMessage::Notification { seq: 1 }),
        };
        let judged = |status: u16, ended: bool, stored: StepKind| {
            let mut kinds = vec![
                (0, StepKind::Send { conn: ConnId(3), request: crate::http::Request::get(None, None) }),
                (20, StepKind::Response { conn: ConnId(3), head: ResponseHead::status(Status(status)) }),
            ];
            if ended {
                kinds.push((1_000, StepKind::ConnEnd { conn: ConnId(3), end: ConnEnd::Reset }));
            }
            kinds.push((2_000, stored));
            Conditions::judge(&trace(kinds))
        };
        let held = judged(200, false, notification(&no_session));
        let b: Vec<_> = held.breaches.iter().map(|b| (b.condition, b.step, b.is_bug())).collect();
        assert_eq!(b, vec![(Condition::ServerHeldOpen, 2, true)], "{held:?}");
        assert!(can_cause(&held.breaches[0], Effect::Of(InvariantId::NoSilentEventLoss)));
        assert!(!can_cause(&held.breaches[0], Effect::Of(InvariantId::EveryCallResolves)));
        let lost = |subject: &str| loss(2, 2_000_000, subject);
        assert!(matches!(held.explain(&lost("session  stream0 event 0.n1")), Explanation::Bug(_)));
        // It costs only that stream: a request's stream without a session is another's.
        assert_eq!(held.explain(&lost("session  stream1 event 0.r1")), Explanation::Unexplained);
        let stored_priming = StepKind::EventStored {
            session: no_session.clone(),
            stream: StreamNo::STANDALONE,
            seq: 0,
            id: EventId::from("0.p"),
            call: None,
            message: None,
        };
        for (status, ended, stored) in [
            (405, false, notification(&no_session)),
            (200, true, notification(&no_session)),
            (200, false, notification(&sid())),
            (200, false, stored_priming),
        ] {
            let fine = judged(status, ended, stored);
            assert!(fine.breaches.is_empty(), "{status} {ended}: {fine:?}");
        }
    }

    /// A second standalone GET refused only after its 200 head (`refused-after-head`): the
    /// server's bug, named once per session, costing the client's returns and the notifications
    /// the stale registration swallowed; a second GET that ended the session, or the process, is
    /// the server ending what its client held, named with `server.second_get`.
    #[test]
    fn a_second_get_refused_after_its_head_or_ending_the_session_is_the_servers_bug() {
        let refused = || StepKind::RefusedAfterHead { conn: ConnId(5), status: Status::CONFLICT, session: sid() };
        let c = Conditions::judge(&trace(vec![(0, on_session(1)), (60_000, refused()), (61_000, refused())]));
        let b: Vec<_> = c.breaches.iter().map(|b| (b.condition, b.step, b.is_bug())).collect();
        assert_eq!(b, vec![(Condition::ServerRefusedAfterHead, 1, true)], "{c:?}");
        let breach = &c.breaches[0];
        assert!(can_cause(breach, Effect::Of(InvariantId::BoundedReconnects)));
        assert!(can_cause(breach, Effect::Of(InvariantId::NoSilentEventLoss)));
        assert!(!can_cause(breach, Effect::Of(InvariantId::EveryCallResolves)));
        assert_eq!((breach.session.clone(), breach.stream), (Some(sid()), Some(StreamNo::STANDALONE)));

        let ended =
            StepKind::SessionEnded { session: sid(), reason: SessionEndReason::StreamConflict, idle_ttl_us: None };
        let exit =
            StepKind::ProcessExit { conn: ConnId(5), session: Some(sid()), cause: crate::trace::ExitCause::SecondGet };
        for end in [
            vec![ended],
            vec![
                exit,
                StepKind::SessionEnded { session: sid(), reason: SessionEndReason::ProcessExit, idle_ttl_us: None },
            ],
        ] {
            let mut kinds = vec![(0, on_session(1))];
            kinds.extend(end.into_iter().map(|k| (60_000, k)));
            let c = Conditions::judge(&trace(kinds));
            let b: Vec<_> = c.breaches.iter().map(|b| (b.condition, b.rules, b.is_bug())).collect();
            assert_eq!(b, vec![(Condition::ServerEnded, &["server.second_get"][..], true)], "{c:?}");
            assert!(c.breaches[0].detail.contains("second standalone GET"), "{}", c.breaches[0].detail);
        }
    }

    /// A legacy client's request whose work a server of the new revision ended with its stream
    /// (`tool-ended disconnected`: its disconnect cancels) is as lost as a modern one's: the
    /// revision's price, for that call's client, explaining a call left unresolved. A sweep of
    /// reference × stateless-2026 on `rolling-upgrade` (each attempt of a long tool cut by a 16 s
    /// idle timeout, the work cancelled each time) read it `conditions 1-4 held`. A tool that
    /// completes, or one of a call no client has in flight, is none.
    #[test]
    fn work_a_server_ends_with_its_stream_is_a_request_lost_whatever_the_client() {
        let ended = |end| {
            (17_000, StepKind::ToolEnded { session: SessionId::from(""), request: RequestId(2), call: CallKey(0), end })
        };
        let call = (1_000, StepKind::AppCall { call: CallKey(0), tool: "lookup".into(), idempotent: true });
        let c = Conditions::judge(&trace(vec![call.clone(), ended(crate::trace::ToolEnd::Disconnected)]));
        assert_eq!(c.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::RequestLost]);
        assert!(c.breaches[0].detail.starts_with("the server ends a request's work with its stream"), "{c:?}");
        assert!(can_cause(&c.breaches[0], Effect::Of(InvariantId::EveryCallResolves)));
        assert!(c.all_held());
        let done = Conditions::judge(&trace(vec![call, ended(crate::trace::ToolEnd::Completed)]));
        assert!(done.breaches.is_empty(), "{done:?}");
        let nobodys = Conditions::judge(&trace(vec![ended(crate::trace::ToolEnd::Disconnected)]));
        assert!(nobodys.breaches.is_empty(), "{nobodys:?}");
    }

    /// A modern request lost with its stream, re-issued (the 2026-07-28 revision's rule): the
    /// revision's price, which explains a call left unresolved (a swarm sweep of stateless-2026 ×
    /// stateless-2026: a 574 s tool behind a 71 s idle cut, every attempt cut) and what a
    /// sessionless request's stream carried when it broke, and nothing else.
    #[test]
    fn a_modern_request_lost_with_its_stream_explains_an_unresolved_call_and_what_the_stream_carried() {
        let reissue = |at| {
            (
                at,
                StepKind::Decision {
                    call: Some(CallKey(0)),
                    outcome: None,
                    action: None,
                    error: Some(crate::client::NOTE_REISSUE.into()),
                },
            )
        };
        let c = Conditions::judge(&trace(vec![reissue(71_000), reissue(143_000)]));
        assert_eq!(c.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::RequestLost]);
        assert!(c.breaches[0].detail.contains("the first, call0's, at 1m11.000s"), "{c:?}");
        // No condition of the note broke.
        assert!(c.all_held());
        let b = &c.breaches[0];
        assert!(can_cause(b, Effect::Of(InvariantId::EveryCallResolves)));
        // And the events lost with a sessionless request's stream (a swarm sweep of
        // stateless-2026 × py-sdk × expire-during-tool: a progress event in flight when a 10 s
        // idle cut took the stream), but not a session's.
        assert!(can_cause(b, Effect::SessionlessEventLoss));
        for other in [InvariantId::NoDuplicateExecution, InvariantId::NoFalseFailure, InvariantId::NoSilentEventLoss] {
            assert!(!can_cause(b, Effect::Of(other)), "{other:?}");
        }
        let lost = |subject: &str| loss(1, 200_000_000, subject);
        assert!(matches!(c.explain(&lost("session  stream2 event 2.4e32")), Explanation::ExplainedBy(_)));
        assert!(matches!(c.explain(&lost("session 0-1 stream2 event 2-3")), Explanation::NotCausedBy(..)));
    }

    /// The server's own word that a task failed (aborted at its TTL, its effect done) explains an
    /// application issuing the call again on that word, as it explains the false failure (a
    /// swarm sweep of reference × rmcp × task-ttl-expiry, `on_error = reissue`).
    #[test]
    fn the_servers_word_that_the_work_failed_explains_a_re_issue_on_it() {
        let mut b = Breach {
            condition: Condition::Retention,
            step: 0,
            at: Instant(0),
            detail: String::new(),
            client: None,
            session: None,
            stream: None,
            event: None,
            call: None,
            server_failed_work: true,
            promised: false,
            task_id_lost: false,
            never_released: false,
            kept_claim: false,
            rules: &[],
        };
        assert!(can_cause(&b, Effect::Of(InvariantId::NoDuplicateExecution)));
        assert!(can_cause(&b, Effect::Of(InvariantId::NoFalseFailure)));
        // A give-up or a lost session says nothing of the work: no re-issue is owed to it.
        b.server_failed_work = false;
        assert!(!can_cause(&b, Effect::Of(InvariantId::NoDuplicateExecution)));
    }

    #[test]
    fn a_restart_without_restored_state_breaks_condition_one_and_a_restored_one_does_not() {
        for (restored, broken) in [(false, true), (true, false)] {
            let t = trace(vec![(0, start(false)), (1, on_session(1)), (30_000, start(restored))]);
            let c = Conditions::judge(&t);
            assert_eq!(c.breaches.iter().any(|b| b.condition == Condition::Persisted), broken, "{c:?}");
        }
    }

    #[test]
    fn reinitializing_after_a_reset_breaks_condition_four_but_after_a_404_it_does_not() {
        let after = |end_status: Option<Status>| {
            let mut kinds = vec![(0, start(false)), (1, on_session(1))];
            if let Some(s) = end_status {
                kinds.push((2, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(s) }));
                kinds.push((2, StepKind::ConnEnd { conn: ConnId(1), end: ConnEnd::Clean }));
            } else {
                kinds.push((2, StepKind::ConnEnd { conn: ConnId(1), end: ConnEnd::Reset }));
            }
            kinds.push((
                2,
                StepKind::Decision { call: None, outcome: None, action: Some(NextAction::Reinitialize), error: None },
            ));
            Conditions::judge(&trace(kinds))
        };
        let reset = after(None);
        assert_eq!(reset.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::ByClass]);
        let gone = after(Some(Status::NOT_FOUND));
        // The 404 itself breaks retention (the session was gone), re-initializing is right.
        assert!(gone.breaches.iter().all(|b| b.condition == Condition::Retention), "{gone:?}");
    }

    /// A handshake whose `notifications/initialized` is refused by an answer (a `401`) lets its
    /// session go on that answer: the `initialize` retries that follow carry out that one
    /// decision, even after a transport failure refused one of them. Reset instead, the next
    /// `initialize` lets a live session go on a transport fact (condition 4, the client's bug).
    #[test]
    fn handshake_retries_after_an_answer_let_the_session_go_once_and_after_a_reset_break_condition_four() {
        let judged = |failure: Vec<StepKind>| {
            let initialize =
                |conn: u64| StepKind::Send { conn: ConnId(conn), request: Request::initialize(RequestId(conn), "app") };
            let backoff = StepKind::InitializeBackoff { attempt: 1, delay_us: 1_000_000 };
            let mut steps = vec![
                (0, client_start(false, true, true)),
                (1, initialize(1)),
                (
                    2,
                    StepKind::Response {
                        conn: ConnId(1),
                        head: ResponseHead { session: Some(sid()), ..ResponseHead::status(Status(200)) },
                    },
                ),
                (
                    2,
                    StepKind::Send {
                        conn: ConnId(2),
                        request: Request::post(Some(sid()), crate::http::ClientMessage::Initialized),
                    },
                ),
            ];
            steps.extend(failure.into_iter().map(|k| (3, k)));
            steps.extend([
                (3, backoff.clone()),
                (4, initialize(3)),
                (4, StepKind::ConnEnd { conn: ConnId(3), end: ConnEnd::Refused }),
                (4, backoff),
                (5, initialize(4)),
            ]);
            Conditions::judge(&trace(steps))
        };
        let refused = judged(vec![
            StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status(401)) },
            StepKind::ConnEnd { conn: ConnId(2), end: ConnEnd::Clean },
        ]);
        assert!(of_condition(&refused, Condition::ByClass).is_empty(), "{refused:?}");
        // Reset, then the retried notification refused by an answer: the answer let it go.
        let reset_then_refused = judged(vec![
            StepKind::ConnEnd { conn: ConnId(2), end: ConnEnd::Reset },
            StepKind::InitializeBackoff { attempt: 1, delay_us: 1_000_000 },
            StepKind::Send {
                conn: ConnId(5),
                request: Request::post(Some(sid()), crate::http::ClientMessage::Initialized),
            },
            StepKind::Response { conn: ConnId(5), head: ResponseHead::status(Status(401)) },
            StepKind::ConnEnd { conn: ConnId(5), end: ConnEnd::Clean },
        ]);
        assert!(of_condition(&reset_then_refused, Condition::ByClass).is_empty(), "{reset_then_refused:?}");
        let reset = judged(vec![StepKind::ConnEnd { conn: ConnId(2), end: ConnEnd::Reset }]);
        let by_class = of_condition(&reset, Condition::ByClass);
        assert_eq!(by_class.len(), 1, "{reset:?}");
        assert!(by_class[0].detail.contains("after a transport failure") && by_class[0].is_bug(), "{reset:?}");
    }

    /// An `initialize` refused as malformed or unsupported (a modern-only server answers a legacy
    /// handshake 400) and tried again: condition 4, once per client, the price of a policy that
    /// does not act by class; refused with a 401 (credentials a retry may bring), nothing.
    #[test]
    fn a_handshake_retried_after_a_refusal_of_the_request_itself_breaks_condition_four() {
        let judged = |status: u16| {
            let initialize =
                |conn: u64| StepKind::Send { conn: ConnId(conn), request: Request::initialize(RequestId(conn), "app") };
            let mut steps = vec![(0, client_start(false, false, false))];
            for conn in 1..=3 {
                steps.push((conn * 4_000, initialize(conn)));
                steps.push((
                    conn * 4_000,
                    StepKind::Response { conn: ConnId(conn), head: ResponseHead::status(Status(status)) },
                ));
                steps.push((conn * 4_000, StepKind::InitializeBackoff { attempt: conn as u32, delay_us: 4_000_000 }));
                steps.push((conn * 4_000, StepKind::ConnEnd { conn: ConnId(conn), end: ConnEnd::Clean }));
            }
            Conditions::judge(&trace(steps))
        };
        let refused = judged(400);
        let b: Vec<_> = of_condition(&refused, Condition::ByClass).iter().map(|b| (b.step, b.promised)).collect();
        assert_eq!(b, vec![(3, false)], "{refused:?}");
        assert!(refused.breaches[0].detail.contains("after HTTP 400 to its initialize"), "{refused:?}");
        assert!(of_condition(&judged(401), Condition::ByClass).is_empty());
        // The handshake's notifications/initialized refused (a hop dropped its session header),
        // the initialize itself answered 200: not the request refused alike every time.
        let later = Conditions::judge(&trace(vec![
            (0, client_start(false, false, false)),
            (1, StepKind::Send { conn: ConnId(1), request: Request::initialize(RequestId(1), "app") }),
            (2, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(Status(200)) }),
            (2, StepKind::Send { conn: ConnId(2), request: Request::post(None, ClientMessage::Initialized) }),
            (3, StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status(400)) }),
            (3, StepKind::InitializeBackoff { attempt: 1, delay_us: 1_000_000 }),
        ]));
        assert!(of_condition(&later, Condition::ByClass).is_empty(), "{later:?}");
    }

    /// A resume answered by sending again the event its `Last-Event-ID` named (rmcp's inclusive
    /// replay): a server bug, which costs that event's duplicate and nothing else; the events
    /// after it, or the named one on another connection, are no part of it.
    #[test]
    fn a_resume_that_sends_the_named_event_again_is_a_server_bug_costing_its_duplicate() {
        let judged = |after: Vec<StepKind>| {
            let mut steps = vec![
                (0, client_start(false, true, true)),
                (1, get(3, None)),
                (2, stored_on(&sid(), StreamNo::STANDALONE, 0, None)),
                (2, stored_on(&sid(), StreamNo::STANDALONE, 1, None)),
                (3, event_on(3, "0-0")),
                (4, StepKind::ConnEnd { conn: ConnId(3), end: ConnEnd::Reset }),
                (5, get(4, Some("0-0"))),
            ];
            steps.extend(after.into_iter().map(|k| (6, k)));
            Conditions::judge(&trace(steps))
        };
        let again = judged(vec![event_on(4, "0-0"), event_on(4, "0-1")]);
        let repeated = of_condition(&again, Condition::ServerRepeated);
        assert_eq!(repeated.len(), 1, "{again:?}");
        assert!(repeated[0].is_bug() && repeated[0].stream == Some(StreamNo::STANDALONE), "{again:?}");
        assert!(repeated[0].to_string().starts_with("a server bug: the server resumed a stream"), "{again:?}");
        assert!(!repeated[0].detail.contains("  "), "{again:?}");
        let violation = |invariant| Violation {
            invariant,
            step: 8,
            at: Instant(6_000),
            subject: "session 0-1 stream0 event 0-0".into(),
            detail: String::new(),
        };
        assert!(matches!(again.explain(&violation(InvariantId::NoDuplicateDelivery)), Explanation::Bug(_)));
        assert!(!matches!(again.explain(&violation(InvariantId::NoSilentEventLoss)), Explanation::Bug(_)));
        // Another event of the stream handed over twice is none of its doing.
        let other = Violation {
            subject: "session 0-1 stream0 event 0-1".into(),
            ..violation(InvariantId::NoDuplicateDelivery)
        };
        assert!(!matches!(again.explain(&other), Explanation::Bug(_)), "{again:?}");
        assert!(of_condition(&judged(vec![event_on(4, "0-1")]), Condition::ServerRepeated).is_empty());
        assert!(of_condition(&judged(vec![event_on(3, "0-0")]), Condition::ServerRepeated).is_empty());
    }

    /// A resume of stream 1 the server answered with a replay that carried an event stream 0
    /// stored (`replay_scope = store`, servers#4087): a server bug, costing what the session's
    /// streams carried (a duplicate, a call left unresolved), not work done twice. Without the
    /// server's `resume` step (a hop dropped the header and the server opened a fresh stream) the
    /// same event is no replay of the server's; the resumed stream's own event is none either.
    #[test]
    fn a_resume_that_replays_another_streams_event_is_a_server_bug() {
        let resumed = StepKind::Resume {
            session: sid(),
            last_event_id: EventId::from("1-0"),
            stream: Some(StreamNo(1)),
            outcome: ResumeOutcome::Replayed { replayed: 2 },
            held: false,
            evicted: None,
            claimed_by: None,
            finished: false,
        };
        let judged = |answered: bool, got: &str| {
            let mut steps = vec![
                (0, client_start(false, true, true)),
                (1, get(3, None)),
                (2, stored_on(&sid(), StreamNo(1), 0, Some(CallKey(0)))),
                (2, stored_on(&sid(), StreamNo::STANDALONE, 0, None)),
                (2, stored_on(&sid(), StreamNo(1), 1, Some(CallKey(0)))),
                (3, get(4, Some("1-0"))),
            ];
            if answered {
                steps.push((4, resumed.clone()));
            }
            steps.push((5, event_on(4, got)));
            Conditions::judge(&trace(steps))
        };
        let crossed = judged(true, "0-0");
        let breaches = of_condition(&crossed, Condition::ServerCrossStream);
        assert_eq!(breaches.len(), 1, "{crossed:?}");
        assert!(breaches[0].is_bug() && breaches[0].session == Some(sid()), "{crossed:?}");
        assert!(breaches[0].to_string().starts_with("a server bug: the server resumed stream1"), "{crossed:?}");
        let violation = |invariant| Violation {
            invariant,
            step: 8,
            at: Instant(6_000),
            subject: "session 0-1 stream0 event 0-0".into(),
            detail: String::new(),
        };
        assert!(matches!(crossed.explain(&violation(InvariantId::NoDuplicateDelivery)), Explanation::Bug(_)));
        assert!(matches!(crossed.explain(&violation(InvariantId::EveryCallResolves)), Explanation::Bug(_)));
        assert!(!matches!(crossed.explain(&violation(InvariantId::NoDuplicateExecution)), Explanation::Bug(_)));
        assert!(of_condition(&judged(false, "0-0"), Condition::ServerCrossStream).is_empty());
        assert!(of_condition(&judged(true, "1-1"), Condition::ServerCrossStream).is_empty());
    }

    /// An id given to two events of a session (rmcp's standalone priming event `0`, never
    /// stored, and its first notification `0`; or two stored events): a server bug costing that
    /// stream's events. The same id in another session, or distinct ids, are none.
    #[test]
    fn one_event_id_given_to_two_events_of_a_session_is_a_server_bug() {
        let stored_as = |session: &SessionId, seq: u32, id: &str| StepKind::EventStored {
            session: session.clone(),
            stream: StreamNo::STANDALONE,
            seq,
            id: EventId::from(id),
            call: None,
            message: None,
        };
        let get = StepKind::Send { conn: ConnId(3), request: Request::get(Some(sid()), None) };
        let judged = |rest: Vec<StepKind>| {
            let mut steps = vec![(0, start(false)), (1, get.clone()), (2, event_on(3, "0"))];
            steps.extend(rest.into_iter().map(|k| (30, k)));
            Conditions::judge(&trace(steps))
        };
        let after_priming = judged(vec![stored_as(&sid(), 0, "0")]);
        let reused = of_condition(&after_priming, Condition::ServerIdReused);
        assert_eq!(reused.len(), 1, "{after_priming:?}");
        assert!(reused[0].is_bug() && reused[0].stream == Some(StreamNo::STANDALONE), "{after_priming:?}");
        assert!(reused[0].detail.contains("a client received it, never stored"), "{after_priming:?}");
        assert!(!reused[0].detail.contains("  "), "{after_priming:?}");
        let lost = loss(3, 30_000, "session 0-1 stream0 event 0");
        assert!(matches!(after_priming.explain(&lost), Explanation::Bug(_)), "{after_priming:?}");
        // Another event of the stream lost is none of the reused id's doing.
        let other_lost = Violation { subject: "session 0-1 stream0 event 29".into(), ..lost.clone() };
        assert!(!matches!(after_priming.explain(&other_lost), Explanation::Bug(_)), "{after_priming:?}");
        let twice_stored = judged(vec![stored_as(&sid(), 1, "1"), stored_as(&sid(), 2, "1")]);
        let reused = of_condition(&twice_stored, Condition::ServerIdReused);
        assert_eq!(reused.len(), 1, "{twice_stored:?}");
        assert!(reused[0].detail.contains("stored at 0.030s"), "{twice_stored:?}");
        assert!(of_condition(&judged(vec![stored_as(&sid(), 1, "1")]), Condition::ServerIdReused).is_empty());
        let other = SessionId::from("0-9");
        assert!(of_condition(&judged(vec![stored_as(&other, 0, "0")]), Condition::ServerIdReused).is_empty());
    }

    /// An answer the server dropped (TypeScript before 1.30: a request's event while the stream
    /// it had closed itself had no client attached) is a server bug costing that call its
    /// answer, and nothing else; a dropped notification is none.
    #[test]
    fn an_answer_the_server_dropped_is_a_server_bug_costing_its_call() {
        let c = Conditions::judge(&trace(vec![
            (0, start(false)),
            (
                50_000,
                StepKind::EventDropped { session: sid(), stream: StreamNo(1), call: Some(CallKey(2)), answer: false },
            ),
            (
                60_000,
                StepKind::EventDropped { session: sid(), stream: StreamNo(1), call: Some(CallKey(2)), answer: true },
            ),
        ]));
        let dropped = of_condition(&c, Condition::ServerDropped);
        assert_eq!(dropped.len(), 1, "{c:?}");
        assert!(dropped[0].is_bug() && dropped[0].stream == Some(StreamNo(1)), "{c:?}");
        assert!(dropped[0].to_string().starts_with("a server bug: the server dropped the answer to call2"), "{c:?}");
        assert!(!dropped[0].detail.contains("  "), "{c:?}");
        let unresolved = Violation {
            invariant: InvariantId::EveryCallResolves,
            step: 1,
            at: Instant(600_000_000),
            subject: "call2".into(),
            detail: String::new(),
        };
        assert!(matches!(c.explain(&unresolved), Explanation::Bug(_)), "{c:?}");
        // Another call's, or the session's result left unread: none of its doing.
        let other = Violation { subject: "call3".into(), ..unresolved.clone() };
        assert!(!matches!(c.explain(&other), Explanation::Bug(_)), "{c:?}");
        let orphaned = Violation {
            invariant: InvariantId::NoOrphanedSession,
            subject: "session 0-1 stream1 event 1-9".into(),
            ..unresolved.clone()
        };
        assert!(!matches!(c.explain(&orphaned), Explanation::Bug(_)), "{c:?}");
    }

    /// The client's decision to re-initialize, on call0's stream.
    fn reinitialize_call0() -> StepKind {
        StepKind::Decision {
            call: Some(CallKey(0)),
            outcome: None,
            action: Some(NextAction::Reinitialize),
            error: None,
        }
    }

    /// The breaches of one condition.
    fn of_condition(c: &Conditions, condition: Condition) -> Vec<&Breach> {
        c.breaches.iter().filter(|b| b.condition == condition).collect()
    }

    /// A process that came back with its session restored and re-initializes at once (no close
    /// to answer) lets a live session go: condition 4, the client's bug when its policy runs the
    /// decision procedure. One that restored nothing has no session to keep.
    #[test]
    fn re_initializing_after_a_restart_that_restored_the_session_breaks_condition_four() {
        let start = |restored: bool, durable: bool| client_start(restored, durable, false);
        let judged = |restored: bool| {
            Conditions::judge(&trace(vec![
                (0, start(false, true)),
                (1, on_session(1)),
                (48_000, start(restored, true)),
                (48_000, reinitialize_call0()),
            ]))
        };
        let kept = judged(true);
        let by_class = of_condition(&kept, Condition::ByClass);
        assert_eq!(by_class.len(), 1, "{kept:?}");
        assert!(by_class[0].detail.contains("which no 404 had ended"), "{kept:?}");
        assert!(!by_class[0].promised, "the naive policy does not keep condition 4");
        // A restart without its state broke condition 1 instead; re-initializing then is right.
        assert!(judged(false).breaches.iter().all(|b| b.condition != Condition::ByClass));
    }

    /// A clean end the server made on its own timer (SEP-1699) leaves the session alive:
    /// re-initializing on it is condition 4, as after a reset; without the server's close, a
    /// clean end before the answer reads as before.
    #[test]
    fn re_initializing_after_the_servers_own_timer_close_breaks_condition_four() {
        let closed = StepKind::ServerClosedStream {
            conn: ConnId(7),
            session: sid(),
            stream: Some(StreamNo(1)),
            rule: CloseRule::RequestStream,
            after_us: 144_000_000,
        };
        let judged = |server_closed: bool| {
            let mut kinds = vec![(0, start(false)), (1, on_session(1))];
            if server_closed {
                kinds.push((2_000, closed.clone()));
            }
            kinds.push((2_000, StepKind::ConnEnd { conn: ConnId(1), end: ConnEnd::Clean }));
            kinds.push((2_000, reinitialize_call0()));
            Conditions::judge(&trace(kinds))
        };
        let paced = judged(true);
        let by_class = of_condition(&paced, Condition::ByClass);
        assert_eq!(by_class.len(), 1, "{paced:?}");
        assert!(by_class[0].detail.contains("a transport fact: the session lived"), "{paced:?}");
        assert!(judged(false).breaches.iter().all(|b| b.condition != Condition::ByClass));
    }

    /// A client whose policy keeps a condition and breaks it has a bug: what follows is
    /// unexplained, named as the client's bug. The same acts by a client whose policy does not
    /// keep the condition are broken conditions, and explain it.
    #[test]
    fn a_client_breaking_a_condition_its_policy_keeps_is_a_client_bug_not_an_explanation() {
        let keeps = |durable: bool, by_class: bool| client_start(false, durable, by_class);
        let reinit = |by_class: bool| {
            Conditions::judge(&trace(vec![
                (0, keeps(false, by_class)),
                (1, on_session(1)),
                (2, StepKind::ConnEnd { conn: ConnId(1), end: ConnEnd::Reset }),
                (
                    2,
                    StepKind::Decision {
                        call: None,
                        outcome: None,
                        action: Some(NextAction::Reinitialize),
                        error: None,
                    },
                ),
            ]))
        };
        let restart = |durable: bool| {
            Conditions::judge(&trace(vec![
                (0, keeps(durable, false)),
                (1, on_session(1)),
                (30_000, keeps(durable, false)),
            ]))
        };
        let violation = |invariant| Violation {
            invariant,
            step: 3,
            at: Instant(60_000_000),
            subject: String::new(),
            detail: String::new(),
        };
        let loss = violation(InvariantId::NoSilentEventLoss);
        for (promised, kept) in [(reinit(true), reinit(false)), (restart(true), restart(false))] {
            assert_eq!(promised.breaches.len(), 1, "{promised:?}");
            assert!(promised.breaches[0].promised && promised.breaches[0].is_bug());
            let verdict = promised.explain(&loss);
            assert!(matches!(verdict, Explanation::Bug(_)) && !verdict.is_explained(), "{verdict}");
            assert!(!kept.breaches[0].promised);
            assert!(kept.explain(&loss).is_explained());
        }
        assert_eq!(
            reinit(true).explain(&loss).to_string(),
            "unexplained: a client bug (its policy keeps condition 4): the client re-initialized after a \
             reset (a transport fact: the session lived)"
        );
    }

    /// A decision-procedure client that ends a call's stream for good (`Stop`, or a close it has
    /// no rule for) and never resolves the call has a bug; one that resolves it, a client whose
    /// policy promises nothing, and a stream with nothing persisted (sent again) do not.
    #[test]
    fn a_call_whose_stream_the_client_stopped_and_never_resolved_is_a_client_bug() {
        let call = CallKey(0);
        let judge = |by_class: bool, action: Option<NextAction>, error: Option<&str>, resolved: bool| {
            let mut steps = vec![
                (0, client_start(false, false, by_class)),
                (1, StepKind::AppCall { call, tool: "pay".into(), idempotent: false }),
                (2, StepKind::Decision { call: Some(call), outcome: None, action, error: error.map(String::from) }),
            ];
            if resolved {
                steps.push((2, StepKind::AppError { call, error: "closed".into() }));
            }
            Conditions::judge(&trace(steps))
        };
        let stop = || Some(NextAction::Stop);
        let unresolved = Violation {
            invariant: InvariantId::EveryCallResolves,
            step: 1,
            at: Instant(60_000_000),
            subject: call.to_string(),
            detail: String::new(),
        };
        for untold in [judge(true, stop(), None, false), judge(true, None, Some("no head advertised"), false)] {
            assert_eq!(untold.breaches.len(), 1, "{untold:?}");
            assert!(untold.breaches[0].promised && untold.breaches[0].condition == Condition::ByClass);
            let verdict = untold.explain(&unresolved);
            assert!(matches!(verdict, Explanation::Bug(_)), "{verdict}");
            assert!(verdict.to_string().contains("left call0 at 0.002s with no way to its answer"), "{verdict}");
        }
        let never_persisted = NEVER_PERSISTED.as_str();
        for fine in [
            judge(true, stop(), None, true),
            judge(false, stop(), None, false),
            judge(true, None, Some(never_persisted), false),
            judge(true, Some(NextAction::Reinitialize), None, false),
        ] {
            assert!(fine.breaches.iter().all(|b| !b.promised), "{fine:?}");
        }
        // A client that does not act by class and leaves the call pending for good (the
        // TypeScript SDK's give-up with no request time-out) breaks condition 4 as its policy
        // allows: the price, not its bug; resolved later (a time-out), nothing.
        let sdk = judge(false, None, Some("reconnect attempts exhausted: the call stays pending"), false);
        let b: Vec<_> = sdk.breaches.iter().map(|b| (b.condition, b.promised)).collect();
        assert_eq!(b, vec![(Condition::ByClass, false)], "{sdk:?}");
        assert!(matches!(sdk.explain(&unresolved), Explanation::ExplainedBy(_)), "{sdk:?}");
        assert!(judge(false, None, Some("reconnect attempts exhausted"), true).all_held());
        // A stream ended by a decision to send the call again (the 2026-07-28 revision's
        // re-issue) left nothing behind: the re-sent call is its way to the answer.
        let reissued = Conditions::judge(&trace(vec![
            (0, client_start(false, false, false)),
            (1, StepKind::AppCall { call, tool: "pay".into(), idempotent: true }),
            (2, StepKind::Decision { call: Some(call), outcome: None, action: None, error: Some("lost".into()) }),
            (3, post_call(5, 0)),
        ]));
        assert!(reissued.all_held(), "{reissued:?}");
    }

    /// The decision procedure finding no id to resume from breaks condition 1 when an event of
    /// that session's stream never reached the client: one of the same id received in an
    /// earlier session (the reference server's ids repeat across sessions) is no id of this one.
    #[test]
    fn never_persisted_reads_the_ids_received_in_the_session_of_the_stream() {
        let earlier = SessionId::from("0-9");
        let judged = |first_session: &SessionId| {
            Conditions::judge(&trace(vec![
                (0, start(false)),
                (1, StepKind::Send { conn: ConnId(2), request: Request::get(Some(first_session.clone()), None) }),
                (2, event_on(2, "0-0")),
                (3, StepKind::Send { conn: ConnId(3), request: Request::get(Some(sid()), None) }),
                (4, stored_on(&sid(), StreamNo::STANDALONE, 0, None)),
                (5, StepKind::ConnEnd { conn: ConnId(3), end: ConnEnd::Reset }),
                (
                    5,
                    StepKind::Decision {
                        call: None,
                        outcome: None,
                        action: None,
                        error: Some(NEVER_PERSISTED.to_string()),
                    },
                ),
            ]))
        };
        let other = judged(&earlier);
        let b: Vec<_> = other.breaches.iter().map(|b| (b.condition, b.detail.contains("before event 0-0"))).collect();
        assert_eq!(b, vec![(Condition::Persisted, true)], "{other:?}");
    }

    /// An SDK client that cannot resume a call's stream because no event id reached it on the
    /// POST stream (its rule `resume_post_needs_event_id`) reads as the decision procedure's
    /// "never persisted": condition 1 when the server stored an event of that stream the client
    /// never got (a buffering CDN cut the stream before the priming event came through), and
    /// nothing when every stored event had arrived.
    #[test]
    fn an_sdk_client_with_no_event_id_of_a_calls_stream_breaks_condition_one_like_the_decision_procedure() {
        let call = CallKey(0);
        let judged_with = |received: bool, discarded: bool| {
            let tool = crate::http::ToolCall { tool: "pay".into(), key: call, idempotency_key: None, tasks: false };
            let request =
                Request::post(Some(sid()), crate::http::ClientMessage::CallTool { id: RequestId(9), call: tool });
            let note = format!("{}: {}", crate::client::NOTE_NO_POST_EVENT_ID, crate::client::NOTE_LEFT_PENDING);
            let mut steps = vec![
                (0, start(false)),
                (1, on_session(1)),
                (2, StepKind::AppCall { call, tool: "pay".into(), idempotent: true }),
                (3, StepKind::Send { conn: ConnId(2), request }),
                (4, stored_on(&sid(), StreamNo(1), 0, Some(call))),
            ];
            if received {
                steps.push((5, event_on(2, "1-0")));
            }
            if discarded {
                let dropped = StepKind::LbDiscarded { conn: ConnId(7), frames: 2, held_us: 5_000, hop: Some(0) };
                steps.push((6, dropped));
            }
            steps.push((6, StepKind::ConnEnd { conn: ConnId(2), end: ConnEnd::Reset }));
            steps.push((6, StepKind::Decision { call: Some(call), outcome: None, action: None, error: Some(note) }));
            Conditions::judge(&trace(steps))
        };
        let judged = |received: bool| judged_with(received, false);
        // (Leaving the call pending is condition 4 besides, this client's policy's price.)
        let missed = judged(false);
        let b: Vec<_> = missed.breaches.iter().map(|b| (b.condition, b.detail.contains("before event 1-0"))).collect();
        assert_eq!(b, vec![(Condition::Persisted, true), (Condition::ByClass, false)], "{missed:?}");
        // It costs what that stream carried: a loss on the session's standalone stream is no part
        // of it, one on the call's stream is.
        assert_eq!((missed.breaches[0].session.as_ref(), missed.breaches[0].stream), (Some(&sid()), Some(StreamNo(1))));
        let lost_on = |stream: &str| loss(7, 7_000, format!("session 0-1 {stream} event {stream}-0"));
        let persisted = |e: Explanation| e.to_string().contains("condition 1");
        assert!(persisted(missed.explain(&lost_on("stream1"))), "{}", missed.explain(&lost_on("stream1")));
        assert!(!persisted(missed.explain(&lost_on("stream0"))), "{}", missed.explain(&lost_on("stream0")));
        assert!(judged(true).breaches.iter().all(|b| b.condition != Condition::Persisted), "{:?}", judged(true));
        // A hop that dropped what it held back at that instant is named beside it.
        let held = judged_with(false, true);
        assert!(
            held.breaches.iter().any(|b| b.condition == Condition::Persisted
                && b.detail
                    .ends_with("(at that instant hop0 dropped 2 frame(s) it held back of c7 with the connection)")),
            "{held:?}"
        );
        assert!(!missed.breaches[0].detail.contains("at that instant"), "{missed:?}");
    }

    #[test]
    fn a_404_on_a_session_the_client_deleted_breaks_nothing() {
        let mut delete = Request::initialize(RequestId(3), "app");
        delete.method = Method::Delete;
        delete.session = Some(sid());
        // The DELETE answered (the session ended), then a request on it answered 404: the client
        // ended it itself. (A DELETE answered 404 for a session no server ended is condition 2:
        // `a_delete_answered_404_for_a_session_that_lives_on_breaks_retention`.)
        let t = trace(vec![
            (0, StepKind::Send { conn: ConnId(1), request: delete }),
            (1, StepKind::SessionEnded { session: sid(), reason: SessionEndReason::Deleted, idle_ttl_us: None }),
            (1, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(Status::OK) }),
            (2, on_session(2)),
            (3, StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status::NOT_FOUND) }),
        ]);
        assert!(Conditions::judge(&t).all_held());
    }

    /// A session opened, then (if `client_deletes`, by its client's `DELETE`; else by someone
    /// else's) ended as deleted at 2 ms.
    fn deleted_session(client_deletes: bool) -> Vec<(u64, StepKind)> {
        let mut delete = Request::initialize(RequestId(3), "app");
        delete.method = Method::Delete;
        delete.session = Some(sid());
        let mut kinds = vec![(0, on_session(1))];
        if client_deletes {
            kinds.push((1, StepKind::Send { conn: ConnId(2), request: delete }));
        }
        let ended = StepKind::SessionEnded { session: sid(), reason: SessionEndReason::Deleted, idle_ttl_us: None };
        kinds.push((2, ended));
        kinds
    }

    #[test]
    fn a_session_deleted_by_someone_else_is_a_termination_and_by_its_client_is_nothing() {
        let ended = |client_deletes: bool| Conditions::judge(&trace(deleted_session(client_deletes)));
        let by_operator = ended(false);
        assert_eq!(by_operator.breaches.len(), 1);
        assert!(by_operator
            .explain_at(Instant(2_000))
            .to_string()
            .starts_with("explained by a termination: session 0-1"));
        assert!(ended(true).all_held());
    }

    /// A tool that ran on to its result after its client's `DELETE` ended the session was left
    /// running by the server's rule or by the tool (TypeScript aborts the handler's signal; a tool
    /// that ignores it runs on): named as such once for the call, a bug of that party that
    /// explains only `no-abandoned-work`; after an operator's `DELETE`, or done before the
    /// `DELETE`, nothing of the kind. A sweep of ts-sdk × ts-sdk-1.29 on `delete-during-tool`
    /// read it `conditions 1-4 held`.
    #[test]
    fn a_tool_run_on_after_its_clients_delete_is_work_left_running() {
        let completed = |at: u64| {
            (
                at,
                StepKind::ToolEnded {
                    session: sid(),
                    request: RequestId(2),
                    call: crate::ids::CallKey(0),
                    end: crate::trace::ToolEnd::Completed,
                },
            )
        };
        let judged = |client_deletes: bool, done: u64| {
            let mut kinds = deleted_session(client_deletes);
            kinds.push(completed(done));
            kinds.push(completed(done + 1));
            Conditions::judge(&trace(kinds))
        };
        let run_on = judged(true, 300_000);
        let b: Vec<_> =
            run_on.breaches.iter().map(|b| (b.condition, b.call, b.is_bug(), b.session.clone(), b.step)).collect();
        // Named at the first thing the tool did after the DELETE (step 3), once.
        assert_eq!(b, vec![(Condition::WorkRunOn, Some(crate::ids::CallKey(0)), true, Some(sid()), 3)], "{run_on:?}");
        assert_eq!(run_on.breaches[0].rules, &["server.delete_running_tool"]);
        assert!(can_cause(&run_on.breaches[0], Effect::Of(InvariantId::NoAbandonedWork)));
        for other in [InvariantId::NoDuplicateExecution, InvariantId::EveryCallResolves, InvariantId::NoWorkKilled] {
            assert!(!can_cause(&run_on.breaches[0], Effect::Of(other)), "{other:?}");
        }
        assert!(run_on.breaches[0].to_string().starts_with("work left running: the server ended session 0-1"));
        assert!(judged(false, 300_000).breaches.iter().all(|b| b.condition == Condition::Terminated));
        assert!(judged(true, 1).all_held(), "done before the DELETE");
    }

    #[test]
    fn an_end_state_violation_is_explained_by_a_later_breach_an_event_dated_one_is_not() {
        let t = trace(vec![
            (0, on_session(1)),
            (1, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(Status::OK) }),
            (5, StepKind::ConnEnd { conn: ConnId(1), end: ConnEnd::Reset }),
            (60_000, StepKind::AppError { call: crate::ids::CallKey(0), error: "reconnect attempts exhausted".into() }),
        ]);
        let c = Conditions::judge(&t);
        let at = |invariant| Violation {
            invariant,
            step: 0,
            at: Instant(1_000_000),
            subject: String::new(),
            detail: String::new(),
        };
        assert!(c.explain(&at(InvariantId::NoOrphanedSession)).is_explained());
        assert!(!c.explain(&at(InvariantId::NoDuplicateExecution)).is_explained());
    }

    /// A client that got a second live session did so when it was created: a breach after that
    /// (here a restart that forgot the session) cannot explain it, while a result nobody received
    /// (judged on how the run ended) is explained by the same breach.
    #[test]
    fn a_second_live_session_is_explained_only_by_breaches_up_to_its_creation() {
        let mut answered = ResponseHead::status(Status::OK);
        answered.session = Some(sid());
        let t = trace(vec![
            (0, start(false)),
            (1, post(1)),
            (2, StepKind::SessionCreated { session: SessionId::from("0-2"), client: "app".into() }),
            (3, StepKind::Response { conn: ConnId(1), head: answered }),
            (60_000, start(false)),
        ]);
        let c = Conditions::judge(&t);
        assert_eq!(c.breaches.len(), 1, "{c:?}");
        assert_eq!(c.breaches[0].condition, Condition::Persisted);
        let at_step = |step| Violation {
            invariant: InvariantId::NoOrphanedSession,
            step,
            at: t.steps[step].at(),
            subject: String::new(),
            detail: String::new(),
        };
        assert_eq!(c.explain(&at_step(2)), Explanation::Unexplained);
        assert!(c.explain(&at_step(1)).is_explained());
        assert!(c.explain(&at_step(3)).is_explained());
    }

    /// A server's missed replay loses or repeats events of the session the client keeps: it
    /// explains (as a server bug) a result nobody received, not a second session a forgetful
    /// restart made the client start.
    #[test]
    fn a_missed_replay_does_not_cause_the_second_session_a_volatile_restart_starts() {
        let mut answered = ResponseHead::status(Status::OK);
        answered.session = Some(sid());
        let mut again = ResponseHead::status(Status::OK);
        again.session = Some(SessionId::from("0-2"));
        let missed = StepKind::Resume {
            session: sid(),
            last_event_id: EventId::from("1-0"),
            stream: Some(StreamNo(1)),
            outcome: ResumeOutcome::SilentHead { skipped: 1 },
            held: true,
            evicted: None,
            claimed_by: None,
            finished: false,
        };
        let t = trace(vec![
            (0, start(false)),
            (1, post(1)),
            (2, StepKind::SessionCreated { session: sid(), client: "app".into() }),
            (3, StepKind::Response { conn: ConnId(1), head: answered }),
            (500, stored(0)),
            (1_000, stored(1)),
            (60_000, missed),
            (70_000, start(false)),
            (70_001, post(2)),
            (70_002, StepKind::SessionCreated { session: SessionId::from("0-2"), client: "app".into() }),
            (70_003, StepKind::Response { conn: ConnId(2), head: again }),
        ]);
        let c = Conditions::judge(&t);
        let conditions: Vec<Condition> = c.breaches.iter().map(|b| b.condition).collect();
        assert_eq!(conditions, vec![Condition::ServerMissed, Condition::Persisted], "{c:?}");
        let violation = |invariant, step: usize| Violation {
            invariant,
            step,
            at: t.steps[step].at(),
            subject: String::new(),
            detail: String::new(),
        };
        // The second session (rule b, at its creation): the restart's price, not the server's bug.
        let second = c.explain(&violation(InvariantId::NoOrphanedSession, 9));
        assert!(
            matches!(&second, Explanation::ExplainedBy(b) if b.len() == 1 && b[0].condition == Condition::Persisted)
        );
        // The result the silent head skipped (rule a, judged on the end), the lost event and the
        // call it answered: the server's bug, in the session and stream whose replay it missed.
        let on = |invariant, session: &str, stream: u32| Violation {
            subject: format!("session {session} stream{stream} event {stream}-0"),
            ..violation(invariant, 5)
        };
        let restart_only = |e: &Explanation<'_>| matches!(e, Explanation::ExplainedBy(b) if b.len() == 1 && b[0].condition == Condition::Persisted);
        for invariant in [InvariantId::NoOrphanedSession, InvariantId::NoSilentEventLoss] {
            assert!(matches!(c.explain(&on(invariant, "0-1", 1)), Explanation::Bug(_)));
            // Another session's or another stream's loss is the restart's price.
            assert!(restart_only(&c.explain(&on(invariant, "0-2", 1))), "{invariant}");
            assert!(restart_only(&c.explain(&on(invariant, "0-1", 2))), "{invariant}");
        }
        assert!(matches!(c.explain(&violation(InvariantId::EveryCallResolves, 5)), Explanation::Bug(_)));
        // A session kept after a 404 (rule c: the session alone) is no part of a missed replay.
        let kept = Violation { subject: "session 0-1".into(), ..violation(InvariantId::NoOrphanedSession, 10) };
        assert!(restart_only(&c.explain(&kept)), "{}", c.explain(&kept));
        assert_eq!((c.breaches[0].session.clone(), c.breaches[0].stream), (Some(sid()), Some(StreamNo(1))));
        assert_eq!((c.breaches[1].session.clone(), c.breaches[1].stream), (None, None));
        // The standalone stream carries no call's answer: its miss leaves every call as it was.
        let mut standalone = c.breaches[0].clone();
        standalone.stream = Some(StreamNo::STANDALONE);
        assert!(!can_cause(&standalone, Effect::Of(InvariantId::EveryCallResolves)));
        assert!(can_cause(&standalone, Effect::Of(InvariantId::NoSilentEventLoss)));
        assert!(can_cause(&c.breaches[0], Effect::Of(InvariantId::EveryCallResolves)));
        // The footer's verdicts and the search's causes, worked out once per question, are each
        // violation's own, in order, the repeated question and the different ones alike.
        let asked = vec![
            on(InvariantId::NoSilentEventLoss, "0-1", 1),
            on(InvariantId::NoSilentEventLoss, "0-2", 1),
            on(InvariantId::NoSilentEventLoss, "0-1", 1),
            violation(InvariantId::EveryCallResolves, 5),
            on(InvariantId::NoSilentEventLoss, "0-2", 1),
        ];
        let records = c.records(&asked);
        for (v, r) in asked.iter().zip(&records) {
            assert_eq!(r.conditions, c.explain(v).to_string());
            assert_eq!((r.subject.as_str(), r.invariant.as_str()), (v.subject.as_str(), v.invariant.name()));
        }
        let (judged_records, causes) = judged(&t, &asked);
        assert_eq!(judged_records, records);
        let persisted = vec![Condition::Persisted];
        assert_eq!(causes, vec![vec![], persisted.clone(), vec![], vec![], persisted]);
        // A second session with only the missed replay before it: nothing that can cause it broke.
        let alone = Conditions::judge(&Trace { steps: t.steps[..7].to_vec(), ..t.clone() });
        assert_eq!(alone.breaches.len(), 1);
        let verdict = alone.explain(&violation(InvariantId::NoOrphanedSession, 2));
        assert_eq!(verdict, Explanation::Unexplained, "a breach after the creation explains nothing");
        assert!(!can_cause(&alone.breaches[0], Effect::SecondSession));
        assert!(can_cause(&alone.breaches[0], Effect::Of(InvariantId::NoOrphanedSession)));
        // Nor what the server did to the work: with only the missed replay before it, a busy
        // session expired under its tool is no part of it.
        let killed = alone.explain(&violation(InvariantId::NoWorkKilled, 6));
        assert!(matches!(killed, Explanation::NotCausedBy(InvariantId::NoWorkKilled, _)), "{killed}");
        let caused: Vec<InvariantId> =
            InvariantId::ALL.into_iter().filter(|&i| can_cause(&alone.breaches[0], Effect::Of(i))).collect();
        assert_eq!(caused.len(), MISSED_REPLAY_COSTS.len());
        assert!(!can_cause(&alone.breaches[0], Effect::DeadSessionKept));
        assert_eq!(Effect::DeadSessionKept.invariant(), InvariantId::NoOrphanedSession);
        for not_caused in [InvariantId::NoWorkKilled, InvariantId::NoAbandonedWork, InvariantId::NoDuplicateExecution] {
            assert!(!caused.contains(&not_caused), "{not_caused}");
        }
        assert_eq!(Effect::SecondSession.invariant(), InvariantId::NoOrphanedSession);
    }

    /// A give-up while cut off (condition 2) explains a session left behind, not the client
    /// telling its application that a call it could not know about failed; a client that does
    /// not act by class (condition 4) and a task the server aborted at its TTL explain that.
    #[test]
    fn a_false_failure_is_explained_by_condition_four_or_the_servers_own_abort_not_by_a_give_up() {
        use crate::tasks::{TaskId, TaskStatus};
        let gave_up = vec![
            (0, on_session(1)),
            (1, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(Status::OK) }),
            (5, StepKind::ConnEnd { conn: ConnId(1), end: ConnEnd::Reset }),
            (60_000, StepKind::AppError { call: CallKey(0), error: "reconnect attempts exhausted".into() }),
        ];
        let at = |invariant| Violation {
            invariant,
            step: 3,
            at: Instant(60_000_000),
            subject: String::new(),
            detail: String::new(),
        };
        let c = Conditions::judge(&trace(gave_up.clone()));
        assert!(c.explain(&at(InvariantId::NoOrphanedSession)).is_explained());
        let verdict = c.explain(&at(InvariantId::NoFalseFailure));
        assert!(matches!(verdict, Explanation::NotCausedBy(InvariantId::NoFalseFailure, ref b) if b.len() == 1));
        let text = verdict.to_string();
        assert!(
            text.starts_with("unexplained: what broke cannot cause no-false-failure (condition 2: the client gave up")
        );
        assert!(!record_is_explained(&c.records(&[at(InvariantId::NoFalseFailure)])[0]));
        // The same give-up after a re-initialize on a reset (condition 4): explained by that.
        let mut by_class = gave_up.clone();
        by_class.insert(
            3,
            (5, StepKind::Decision { call: None, outcome: None, action: Some(NextAction::Reinitialize), error: None }),
        );
        let c = Conditions::judge(&trace(by_class));
        let verdict = c.explain(&Violation { step: 4, ..at(InvariantId::NoFalseFailure) });
        assert!(verdict.to_string().starts_with("explained by condition 4: the client re-initialized"), "{verdict}");
        // A task the server aborted at its TTL: the server's own word that the work failed.
        let t = || TaskId("r0.0-t0".into());
        let c = Conditions::judge(&trace(vec![
            (1, StepKind::TaskCreated { task: t(), call: CallKey(0), replica: 0, ttl_us: Some(60_000_000) }),
            (61_001, StepKind::TaskEnded { task: t(), status: TaskStatus::Failed }),
        ]));
        assert!(c
            .explain(&Violation { step: 1, at: Instant(61_001_000), ..at(InvariantId::NoFalseFailure) })
            .is_explained());
        // Its record deleted while the work ran is no word of failure: a correct client says lost.
        let c = Conditions::judge(&trace(vec![
            (1, StepKind::TaskCreated { task: t(), call: CallKey(0), replica: 0, ttl_us: Some(60_000_000) }),
            (61_001, StepKind::TaskRecordRemoved { task: t(), work_running: true, lost: false }),
        ]));
        let verdict = c.explain(&Violation { step: 1, at: Instant(61_001_000), ..at(InvariantId::NoFalseFailure) });
        assert!(!verdict.is_explained(), "{verdict}");
    }

    /// A session lost (condition 2) explains the client's re-initialize, not a tool run twice
    /// because the call was sent again; a restart that forgot the call (condition 1) does.
    #[test]
    fn a_duplicate_execution_is_explained_by_a_forgetful_restart_not_by_a_lost_session() {
        let lost = vec![
            (0, on_session(1)),
            (1, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(Status::OK) }),
            (30_000, on_session(2)),
            (30_001, StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status::NOT_FOUND) }),
        ];
        let duplicate = |step| Violation {
            invariant: InvariantId::NoDuplicateExecution,
            step,
            at: Instant(40_000_000),
            subject: String::new(),
            detail: String::new(),
        };
        let c = Conditions::judge(&trace(lost.clone()));
        assert_eq!(c.breaches.len(), 1, "{c:?}");
        let verdict = c.explain(&duplicate(3));
        assert!(
            verdict.to_string().starts_with(
                "unexplained: what broke cannot cause no-duplicate-execution (condition 2: session 0-1 was gone"
            ),
            "{verdict}"
        );
        assert!(c.explain(&Violation { invariant: InvariantId::NoOrphanedSession, ..duplicate(3) }).is_explained());
        let mut restarted = lost;
        restarted.insert(0, (0, start(false)));
        restarted.push((35_000, start(false)));
        let c = Conditions::judge(&trace(restarted));
        let verdict = c.explain(&duplicate(4));
        assert!(verdict.to_string().starts_with("explained by condition 1: the client restarted"), "{verdict}");
    }

    #[test]
    fn an_empty_answer_to_an_evicted_id_and_a_replay_from_a_shared_store_break_condition_three() {
        let resume = |outcome| StepKind::Resume {
            session: sid(),
            last_event_id: EventId::from("1-1"),
            stream: Some(StreamNo(1)),
            outcome,
            held: false,
            evicted: None,
            claimed_by: None,
            finished: false,
        };
        let empty = Conditions::judge(&trace(vec![(1, stored(1)), (2, resume(ResumeOutcome::Empty { open: false }))]));
        assert!(empty.breaches.iter().any(|b| b.condition == Condition::Refused), "{empty:?}");
        let replay = |seqs: &[u32]| {
            let mut kinds: Vec<(u64, StepKind)> = seqs.iter().map(|q| (1, stored(*q))).collect();
            kinds.push((2, resume(ResumeOutcome::Replayed { replayed: 1 })));
            Conditions::judge(&trace(kinds))
        };
        assert!(replay(&[0, 1, 2]).all_held());
        // A stream that starts above 0 had its first numbers stored elsewhere: two sessions
        // whose calls share a request id write one log (py-sdk 2.3.0's store keyed by stream id).
        let second = replay(&[1, 2]);
        assert_eq!(second.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::Refused]);
        let shared = replay(&[0, 2, 4]);
        assert_eq!(shared.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::Refused]);
        let late_start = replay(&[3, 4]);
        assert_eq!(late_start.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::Refused]);
    }

    /// Two clients: client 0 starts and names session 0-1; client 1 starts, sends `second`, and
    /// restarts without its state at 50 s (condition 1, its own); `last` at 60 s is client 1's.
    fn two_clients_one_restart(second: StepKind, last: StepKind) -> Trace {
        let mut t = trace(vec![
            (0, start(false)),
            (1, on_session(1)),
            (0, start(false)),
            (1, second),
            (50_000, start(false)),
            (60_000, last),
        ]);
        for (i, step) in t.steps.iter_mut().enumerate() {
            step.client = Some(if i < 2 { 0 } else { 1 });
        }
        t
    }

    #[test]
    fn one_clients_breach_explains_its_own_violations_not_another_clients() {
        let mut t = two_clients_one_restart(on_session(1), on_session(2));
        // The last step is client 0's, so its violation is dated there.
        t.steps[5].client = Some(0);
        let c = Conditions::judge(&t);
        assert_eq!(
            c.breaches.iter().map(|b| (b.condition, b.client)).collect::<Vec<_>>(),
            vec![(Condition::Persisted, Some(1))]
        );
        let violation = |step| Violation {
            invariant: InvariantId::NoDuplicateExecution,
            step,
            at: Instant(70_000_000),
            subject: String::new(),
            detail: String::new(),
        };
        assert_eq!(c.explain(&violation(5)), Explanation::Unexplained, "client 0's violation");
        assert!(c.explain(&violation(4)).is_explained(), "client 1's violation");
        // Without a client (a single-client run, a fleet-wide fact), every breach counts.
        assert!(c.explain_at(Instant(70_000_000)).is_explained());
    }

    /// An unresolved call is dated at the first step after the deadline, which in a run of
    /// several clients may be another client's: the call's own client decides whose it is (a
    /// swarm search over reference × reference × standalone-notify with two clients found the
    /// footer saying "unexplained" for a call whose client had lost its session to a replica
    /// that does not hold it).
    #[test]
    fn a_calls_violation_is_its_own_clients_whatever_step_it_is_dated_at() {
        // Client 1 restarts without its state (condition 1); client 0 issued call0.
        let mut t = two_clients_one_restart(on_session(1), on_session(2));
        let app_call = StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: true };
        t.steps.insert(2, Step { client: Some(0), ..Step::new(2, 2_000_000, Actor::App, app_call) });
        let c = Conditions::judge(&t);
        let unresolved = |call: u32| Violation {
            invariant: InvariantId::EveryCallResolves,
            step: 6,
            at: Instant(70_000_000),
            subject: CallKey(call).to_string(),
            detail: String::new(),
        };
        // Dated at client 1's last step, but client 0's call: client 1's restart explains nothing of it.
        assert_eq!(c.explain(&unresolved(0)), Explanation::Unexplained);
        // A subject that names no call of the trace keeps the step's client.
        assert!(c.explain(&unresolved(7)).is_explained());
    }

    /// A session's violation dated at a server step (an event stored and never delivered) is the
    /// session's client's: another client's restart explains nothing of it.
    #[test]
    fn a_sessions_violation_is_its_clients_even_when_dated_at_a_server_step() {
        let other_session = |conn: u64| {
            let mut request = Request::initialize(RequestId(2), "app-1");
            request.session = Some(SessionId::from("1-1"));
            StepKind::Send { conn: ConnId(conn), request }
        };
        let mut t = two_clients_one_restart(other_session(1), stored(3));
        t.steps[5].client = None;
        assert_eq!(t.steps[5].client, None, "the server's step names no client");
        let c = Conditions::judge(&t);
        assert_eq!(
            c.breaches.iter().map(|b| (b.condition, b.client)).collect::<Vec<_>>(),
            vec![(Condition::Persisted, Some(1))]
        );
        let lost = |session: &str| loss(5, 60_000_000, format!("session {session} stream1 event 1-3"));
        assert_eq!(c.explain(&lost("0-1")), Explanation::Unexplained, "client 0's session");
        assert!(c.explain(&lost("1-1")).is_explained(), "client 1's session: its own restart");
    }

    #[test]
    fn a_task_ttl_that_runs_out_before_the_work_or_the_poll_breaks_retention() {
        use crate::tasks::{TaskId, TaskStatus};
        let t = || TaskId("r0.0-t0".into());
        let created = (
            1,
            StepKind::TaskCreated { task: t(), call: crate::ids::CallKey(0), replica: 0, ttl_us: Some(60_000_000) },
        );
        let judged = |rest: Vec<(u64, StepKind)>| {
            let mut kinds = vec![created.clone()];
            kinds.extend(rest);
            Conditions::judge(&trace(kinds))
        };
        let retention = |c: &Conditions| c.breaches.iter().filter(|b| b.condition == Condition::Retention).count();
        // Aborted at its TTL while working (rmcp), or its record deleted while working (TypeScript).
        let aborted = judged(vec![(61_001, StepKind::TaskEnded { task: t(), status: TaskStatus::Failed })]);
        assert_eq!(retention(&aborted), 1, "{aborted:?}");
        assert!(aborted.breaches[0].detail.contains("TTL (1m00.000s"), "{aborted:?}");
        let deleted =
            judged(vec![(61_001, StepKind::TaskRecordRemoved { task: t(), work_running: true, lost: false })]);
        assert_eq!(retention(&deleted), 1);
        // A finished task evicted before its client read the outcome breaks it; after, not.
        let ended = (30_000, StepKind::TaskEnded { task: t(), status: TaskStatus::Completed });
        let evicted = (90_001, StepKind::TaskRecordRemoved { task: t(), work_running: false, lost: false });
        assert_eq!(retention(&judged(vec![ended.clone(), evicted.clone()])), 1);
        let read = (
            31_000,
            StepKind::AppTaskOutcome { task: t(), call: crate::ids::CallKey(0), status: TaskStatus::Completed },
        );
        assert!(judged(vec![ended.clone(), read, evicted]).all_held());
        // A task that failed before its TTL (not the TTL's doing) breaks nothing.
        assert!(judged(vec![(30_000, StepKind::TaskEnded { task: t(), status: TaskStatus::Failed })]).all_held());
        // Cancelled at the instant its session expired as idle: the server's word that the work
        // ended without a result; cancelled otherwise (the client's own tasks/cancel), nothing.
        let cancelled = (30_000, StepKind::TaskEnded { task: t(), status: TaskStatus::Cancelled });
        let expired = |ms: u64| {
            (
                ms,
                StepKind::SessionEnded {
                    session: sid(),
                    reason: SessionEndReason::IdleExpired,
                    idle_ttl_us: Some(20_000_000),
                },
            )
        };
        let with_expiry = judged(vec![cancelled.clone(), expired(30_000)]);
        let word: Vec<_> = with_expiry.breaches.iter().filter(|b| b.server_failed_work).map(|b| b.step).collect();
        assert_eq!(word, vec![1], "{with_expiry:?}");
        assert!(with_expiry.breaches[0].detail.contains("when it expired session 0-1 as idle"), "{with_expiry:?}");
        let apart = judged(vec![cancelled.clone(), expired(40_000)]);
        assert!(apart.breaches.iter().all(|b| !b.server_failed_work), "{apart:?}");
        // "Task not found" to a poll: not held where the poll landed.
        let not_found = crate::http::ServerMessage::Error {
            request: Some(RequestId(3)),
            message: "Task not found: r0.0-t0".into(),
            code: Some(crate::tasks::TASK_NOT_FOUND),
        };
        let c = judged(vec![(2_000, StepKind::Json { conn: ConnId(2), message: not_found })]);
        assert_eq!(retention(&c), 1);
        // Removed by the expiry rule before the TTL it was created with (1 min): the server's bug.
        let early = (40_001, StepKind::TaskRecordRemoved { task: t(), work_running: false, lost: false });
        let c = judged(vec![ended.clone(), early]);
        assert_eq!(c.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::ServerEnded]);
        assert!(c.breaches[0].is_bug());
        assert_eq!(
            c.breaches[0].detail,
            "the server removed task r0.0-t0's record at 40.001s, 40.000s after its creation, inside the 1m00.000s \
             TTL it was created with"
        );
        // Lost with its process (a restart) before the TTL: condition 2, as a lost session is.
        let lost = (40_001, StepKind::TaskRecordRemoved { task: t(), work_running: false, lost: true });
        let c = judged(vec![ended, lost]);
        assert_eq!(c.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::Retention]);
        assert!(c.breaches[0].detail.contains("with the process that held its store"), "{c:?}");
    }

    #[test]
    fn giving_up_while_cut_off_breaks_retention_but_a_timeout_without_a_break_does_not() {
        let give_up = |error: &str, broke: bool| {
            let mut kinds = vec![(0, on_session(1))];
            kinds.push((1, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(Status::OK) }));
            if broke {
                kinds.push((5, StepKind::ConnEnd { conn: ConnId(1), end: ConnEnd::Reset }));
            }
            kinds.push((60_000, StepKind::AppError { call: crate::ids::CallKey(0), error: error.into() }));
            Conditions::judge(&trace(kinds)).all_held()
        };
        assert!(!give_up("request timed out", true));
        assert!(give_up("request timed out", false));
        assert!(!give_up("reconnect attempts exhausted", false));
    }

    /// An application that issues a non-idempotent call again after it was told the call's outcome
    /// was unknown breaks condition 4 (the note: reconcile, do not blindly retry); again after a
    /// definite error, or an idempotent call again, or another call, breaks nothing; and one
    /// client's re-issue explains nothing of another's.
    #[test]
    fn re_issuing_a_non_idempotent_call_after_an_unknown_outcome_breaks_condition_four() {
        let call =
            |key: u32, idempotent: bool| StepKind::AppCall { call: CallKey(key), tool: "pay".into(), idempotent };
        let unknown = StepKind::AppUnknownOutcome { call: CallKey(0), reason: "request timed out".into() };
        let failed = StepKind::AppError { call: CallKey(0), error: "HTTP 400".into() };
        let judged = |told: StepKind, again: StepKind| {
            Conditions::judge(&trace(vec![(0, call(0, false)), (5_000, told), (6_000, again)]))
        };
        let reissued = judged(unknown.clone(), call(0, false));
        assert_eq!(reissued.breaches.len(), 1, "{:?}", reissued.breaches);
        let b = &reissued.breaches[0];
        assert_eq!((b.condition, b.step, b.at), (Condition::ByClass, 2, Instant(6_000_000)));
        assert!(
            b.detail.contains("pay call0 again at 6.000s") && b.detail.contains("(request timed out)"),
            "{}",
            b.detail
        );
        assert!(judged(failed, call(0, false)).all_held());
        assert!(judged(unknown.clone(), call(0, true)).all_held());
        assert!(judged(unknown.clone(), call(1, false)).all_held());
        // Told once, re-issued once: a second re-issue without a second unknown outcome is no breach.
        let twice = trace(vec![
            (0, call(0, false)),
            (5_000, unknown.clone()),
            (6_000, call(0, false)),
            (7_000, call(0, false)),
        ]);
        assert_eq!(Conditions::judge(&twice).breaches.len(), 1);
        let mut other = trace(vec![(0, call(0, false)), (5_000, unknown), (6_000, call(0, false))]);
        other.steps[2].client = Some(1);
        assert!(Conditions::judge(&other).all_held());
    }

    /// A client that starts a new session after its DELETE of the old one was refused (or cut
    /// before any answer) gave up while cut off: condition 2, as spent reconnect attempts are. A
    /// DELETE answered, one tried again and answered, or a session the server had ended anyway,
    /// breaks nothing.
    #[test]
    fn starting_a_new_session_after_a_delete_that_never_got_through_breaks_retention() {
        let delete = |conn: u64| StepKind::Send { conn: ConnId(conn), request: Request::delete(sid()) };
        let end = |conn: u64, end| StepKind::ConnEnd { conn: ConnId(conn), end };
        let answered = |conn: u64| StepKind::Response { conn: ConnId(conn), head: ResponseHead::status(Status::OK) };
        let judged = |middle: Vec<(u64, StepKind)>| {
            let mut kinds = vec![(0, on_session(1)), (1, answered(1))];
            kinds.extend(middle);
            kinds.push((90_000, post(9)));
            Conditions::judge(&trace(kinds))
        };
        let refused = judged(vec![(60_000, delete(2)), (60_000, end(2, ConnEnd::Refused))]);
        assert_eq!(refused.breaches.len(), 1, "{:?}", refused.breaches);
        let b = &refused.breaches[0];
        assert_eq!((b.condition, b.at), (Condition::Retention, Instant(90_000_000)));
        assert!(b.detail.contains("DELETE of session 0-1 never got through"), "{}", b.detail);
        assert!(
            b.detail.contains("its last attempt was refused at 1m00.000s, 59.999s without an answer"),
            "{}",
            b.detail
        );
        assert_eq!(judged(vec![(60_000, delete(2)), (60_000, end(2, ConnEnd::Reset))]).breaches.len(), 1);
        // A 5xx answer (the server's, or a hop's own) deleted nothing either.
        let unavailable = StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status::UNAVAILABLE) };
        let answered_503 = judged(vec![(60_000, delete(2)), (60_010, unavailable), (60_010, end(2, ConnEnd::Clean))]);
        let lost: Vec<&Breach> = answered_503.breaches.iter().filter(|b| b.at == Instant(90_000_000)).collect();
        assert_eq!(lost.len(), 1, "{:?}", answered_503.breaches);
        assert!(lost[0].detail.contains("its last attempt was answered 503 at 1m00.010s"), "{}", lost[0].detail);
        // A DELETE the client aborted itself (its process restarting) was not lost to the network.
        assert!(judged(vec![(60_000, delete(2)), (60_000, end(2, ConnEnd::Aborted))]).all_held());
        // A DELETE that got through: the server ended the session, then answered.
        let ended = || StepKind::SessionEnded { session: sid(), reason: SessionEndReason::Deleted, idle_ttl_us: None };
        let through =
            vec![(60_000, delete(2)), (60_005, ended()), (60_010, answered(2)), (60_010, end(2, ConnEnd::Reset))];
        assert!(judged(through).all_held());
        let retried = vec![
            (60_000, delete(2)),
            (60_000, end(2, ConnEnd::Refused)),
            (70_000, delete(3)),
            (70_005, ended()),
            (70_010, answered(3)),
        ];
        assert!(judged(retried).all_held());
        let expired =
            StepKind::SessionEnded { session: sid(), reason: SessionEndReason::IdleExpired, idle_ttl_us: None };
        assert!(judged(vec![(60_000, delete(2)), (60_000, end(2, ConnEnd::Refused)), (80_000, expired)]).all_held());
    }

    /// An idle expiry sooner after a request the server answered than the TTL it names is the
    /// server's bug; one the TTL allows, or after requests the server never answered (refused,
    /// answered 404 or by a hop) or a `DELETE`, is not.
    #[test]
    fn an_idle_expiry_inside_the_ttl_after_an_answered_request_is_the_servers_bug() {
        let expired = |ttl_s: u64| StepKind::SessionEnded {
            session: sid(),
            reason: SessionEndReason::IdleExpired,
            idle_ttl_us: Some(ttl_s * 1_000_000),
        };
        let answered = |conn: u64, status: u16| StepKind::Response {
            conn: ConnId(conn),
            head: ResponseHead::status(Status(status)),
        };
        let judged = |kinds: Vec<(u64, StepKind)>| Conditions::judge(&trace(kinds));
        // A request sent at 40 s and answered 202; the session expires at 70 s.
        let inside = judged(vec![
            (0, on_session(1)),
            (40_000, on_session(2)),
            (40_010, answered(2, 202)),
            (70_000, expired(60)),
        ]);
        assert_eq!(inside.breaches.len(), 1, "{inside:?}");
        let b = &inside.breaches[0];
        assert_eq!((b.condition, b.is_bug(), b.session.clone()), (Condition::ServerEnded, true, Some(sid())));
        assert_eq!(
            b.to_string(),
            "a server bug: the server expired session 0-1 at 1m10.000s as idle, 30.000s after a request it answered \
             (40.000s), inside its 1m00.000s idle TTL"
        );
        // The TTL allows it: 30 s after the request under a 30 s TTL.
        assert!(judged(vec![(40_000, on_session(2)), (40_010, answered(2, 202)), (70_000, expired(30))]).all_held());
        // Requests the server did not answer below 400, or a DELETE: no activity of its.
        for (status, conn_request) in [(404, on_session(2)), (503, on_session(2)), (200, delete_request(2))] {
            let t = judged(vec![(40_000, conn_request), (40_010, answered(2, status)), (70_000, expired(60))]);
            assert!(t.breaches.iter().all(|b| b.condition != Condition::ServerEnded), "{status}: {t:?}");
        }
        let unanswered = judged(vec![(40_000, on_session(2)), (70_000, expired(60))]);
        assert!(unanswered.all_held(), "{unanswered:?}");
        // The session's creation counts: expired 10 s after it under a 60 s TTL.
        let created = StepKind::SessionCreated { session: sid(), client: "app".into() };
        let t = judged(vec![(0, created), (10_000, expired(60))]);
        assert_eq!(t.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::ServerEnded]);
    }

    /// A call's stream re-attached with a `GET` without `Last-Event-ID` though the client had
    /// received an id on it is the client's bug (it forgot its cursor: the TypeScript client's
    /// re-cut resumed stream); re-attached with the id, or with no id ever received on it (the
    /// decision procedure's "never persisted", judged apart), it is not.
    #[test]
    fn a_call_stream_re_attached_without_the_id_the_client_received_on_it_is_its_bug() {
        let get = |conn: u64, id: Option<&str>| {
            let mut request = Request::initialize(RequestId(9), "app");
            (request.method, request.body, request.session) = (Method::Get, None, Some(sid()));
            request.last_event_id = id.map(EventId::from);
            StepKind::Send { conn: ConnId(conn), request }
        };
        let judged = |received: bool, resume_id: Option<&str>| {
            let mut kinds = vec![
                (1_000, StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: true }),
                (1_000, on_session(2)),
                (1_010, stored_on(&sid(), StreamNo(1), 0, Some(CallKey(0)))),
            ];
            if received {
                kinds.push((1_020, event_on(2, "1-0")));
            }
            kinds.extend([
                (30_000, StepKind::ConnEnd { conn: ConnId(2), end: ConnEnd::Reset }),
                (30_000, StepKind::Backoff { call: Some(CallKey(0)), attempt: 1, delay_us: 1_000_000 }),
                (31_000, get(3, resume_id)),
                (31_000, get(4, None)),
                (40_000, StepKind::ConnEnd { conn: ConnId(4), end: ConnEnd::Reset }),
            ]);
            Conditions::judge(&trace(kinds))
        };
        let forgot = judged(true, None);
        let b: Vec<_> = forgot.breaches.iter().filter(|b| b.condition == Condition::Persisted).collect();
        assert_eq!(b.len(), 1, "{forgot:?}");
        assert!(b[0].promised && b[0].is_bug());
        assert_eq!(b[0].session, Some(sid()));
        assert!(
            b[0].detail.starts_with(
                "the client re-attached call0's stream at 31.000s with a GET without Last-Event-ID, though it had \
                 received 1-0 on it"
            ),
            "{}",
            b[0].detail
        );
        for (received, id) in [(true, Some("1-0")), (false, None)] {
            let t = judged(received, id);
            assert!(t.breaches.iter().all(|b| !b.promised), "{received} {id:?}: {t:?}");
        }
        // The standalone stream due at the same instant: its fresh GET first, then the call's
        // with its id a tick later (a zero backoff), is no breach; the call's fresh too is one.
        let both = |call_id: Option<&str>| {
            Conditions::judge(&trace(vec![
                (1_000, StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: true }),
                (1_000, on_session(2)),
                (1_010, stored_on(&sid(), StreamNo(1), 0, Some(CallKey(0)))),
                (1_020, event_on(2, "1-0")),
                (30_000, StepKind::Backoff { call: None, attempt: 1, delay_us: 0 }),
                (30_000, get(4, None)),
                (30_000, StepKind::Backoff { call: Some(CallKey(0)), attempt: 1, delay_us: 0 }),
                (30_001, get(3, call_id)),
            ]))
        };
        assert!(both(Some("1-0")).breaches.iter().all(|b| !b.promised));
        assert_eq!(both(None).breaches.iter().filter(|b| b.promised).count(), 1);
        // A fresh GET of another session (the client started a new one) is none of the call's.
        let mut other = trace(vec![
            (1_000, StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: true }),
            (1_000, on_session(2)),
            (1_010, stored_on(&sid(), StreamNo(1), 0, Some(CallKey(0)))),
            (1_020, event_on(2, "1-0")),
            (30_000, StepKind::Backoff { call: Some(CallKey(0)), attempt: 1, delay_us: 1_000_000 }),
            (31_000, get(5, None)),
        ]);
        if let StepKind::Send { request, .. } = &mut other.steps[5].kind {
            request.session = Some(SessionId::from("0-2"));
        }
        assert!(Conditions::judge(&other).breaches.iter().all(|b| !b.promised));
    }

    /// A stream an intermediary held back (response buffering) explains a late delivery, named
    /// by the longest hold released by then, and nothing else; a release held for no time is no
    /// hold. Without it a buffering proxy's late events read `conditions 1-4 held` (a sweep of
    /// reference × reference behind `cdn-alb` with drawn hops), a bug of the client or server.
    #[test]
    fn a_stream_a_proxy_held_back_explains_a_late_delivery_and_nothing_else() {
        let flushed =
            |held_s: u64| StepKind::LbFlushed { conn: ConnId(3), frames: 4, held_us: held_s * 1_000_000, hop: Some(1) };
        let held = Conditions::judge(&trace(vec![
            (1_000, flushed(0)),
            (20_000, flushed(10)),
            (40_000, flushed(3)),
            (60_000, flushed(46)),
        ]));
        let b: Vec<_> = held.breaches.iter().map(|b| (b.condition, b.step)).collect();
        assert_eq!(b, vec![(Condition::ProxyHeld, 1), (Condition::ProxyHeld, 3)], "{held:?}");
        let late = |at_s: u64, invariant| Violation {
            invariant,
            step: 3,
            at: Instant(at_s * 1_000_000),
            subject: "session 0-1 stream1 event 1-1".into(),
            detail: String::new(),
        };
        match held.explain(&late(60, InvariantId::TimelyDelivery)) {
            Explanation::ExplainedBy(bs) => {
                assert_eq!(
                bs.iter().map(|b| b.to_string()).collect::<Vec<_>>(),
                vec!["an intermediary's buffering: hop1 held 4 frame(s) of c3 back for 46.000s and released them at \
                      1m00.000s (response buffering: lb.hops[].buffer, flush_interval, or a held head)"]
            )
            }
            other => panic!("{other}"),
        }
        // Before the longest hold, the one released by then.
        assert!(held.explain(&late(30, InvariantId::TimelyDelivery)).to_string().contains("back for 10.000s"));
        // A hold delays; it loses or repeats nothing.
        for invariant in [InvariantId::NoSilentEventLoss, InvariantId::NoDuplicateDelivery] {
            assert!(!held.explain(&late(60, invariant)).is_explained(), "{invariant:?}");
        }
        // Frames still held when the run ended never arrived: what they carried is lost to it.
        let holding = StepKind::LbHolding { conn: ConnId(3), frames: 6, held_us: 479_000_000, hop: Some(0) };
        let stuck = Conditions::judge(&trace(vec![(1_000, flushed(10)), (480_000, holding)]));
        match stuck.explain(&late(60, InvariantId::NoSilentEventLoss)) {
            Explanation::ExplainedBy(bs) => {
                assert_eq!(
                bs.iter().map(|b| b.to_string()).collect::<Vec<_>>(),
                vec!["an intermediary's buffering: hop0 still held 6 frame(s) of c3 when the run ended, the first for \
                      7m59.000s: they never reached the client (response buffering: lb.hops[].buffer below its size \
                      with no flush_interval, or a held head or tail)"]
            )
            }
            other => panic!("{other}"),
        }
        assert!(!stuck.explain(&late(60, InvariantId::NoDuplicateDelivery)).is_explained());
        // Frames that went with their connection (a cut, a reset) come again with a resume:
        // late, not lost (a client with no id to resume from breaks condition 1 instead).
        let discarded = StepKind::LbDiscarded { conn: ConnId(3), frames: 5, held_us: 47_000_000, hop: Some(0) };
        let gone = Conditions::judge(&trace(vec![(48_000, discarded.clone())]));
        assert!(!gone.explain(&late(60, InvariantId::NoSilentEventLoss)).is_explained());
        match gone.explain(&late(60, InvariantId::TimelyDelivery)) {
            Explanation::ExplainedBy(bs) => {
                assert_eq!(
                bs.iter().map(|b| b.to_string()).collect::<Vec<_>>(),
                vec!["an intermediary's buffering: hop0 held 5 frame(s) of c3 back, the first for 47.000s, and they \
                      went with the connection at 48.000s: they never reached the client (response buffering: \
                      lb.hops[].buffer, flush_interval, or a held head or tail)"]
            )
            }
            other => panic!("{other}"),
        }
        assert!(!gone.explain(&late(60, InvariantId::NoDuplicateDelivery)).is_explained());
        // The client came back and the hop swallowed the whole answer to its return too (a
        // flush interval past the hop's idle timeout): no return gets past it, so what it held
        // never reached the client. A connection the hop had released frames of stays late.
        let discard =
            |conn: u64| StepKind::LbDiscarded { conn: ConnId(conn), frames: 5, held_us: 29_000_000, hop: Some(0) };
        let flushed = StepKind::LbFlushed { conn: ConnId(4), frames: 2, held_us: 0, hop: Some(0) };
        let unresolved = late(200, InvariantId::EveryCallResolves);
        let again = Conditions::judge(&trace(vec![(48_000, discarded.clone()), (100_000, discard(4))]));
        assert_eq!(again.breaches.iter().map(|b| b.never_released).collect::<Vec<_>>(), vec![false, true]);
        assert!(again.breaches[1].detail.contains("it released nothing of that connection's answer"));
        assert!(again.explain(&unresolved).is_explained(), "{}", again.explain(&unresolved));
        let released = Conditions::judge(&trace(vec![(48_000, discarded), (60_000, flushed), (100_000, discard(4))]));
        assert!(released.breaches.iter().all(|b| !b.never_released), "{released:?}");
        assert!(!released.explain(&unresolved).is_explained());
        let once = Conditions::judge(&trace(vec![(100_000, discard(4))]));
        assert!(!once.breaches[0].never_released, "{once:?}");
        // An earlier loss is one whatever the hop had released of that connection before it.
        let flushed_3 = StepKind::LbFlushed { conn: ConnId(3), frames: 2, held_us: 0, hop: Some(0) };
        let after_released =
            Conditions::judge(&trace(vec![(10_000, flushed_3), (48_000, discard(3)), (100_000, discard(4))]));
        assert_eq!(after_released.breaches.iter().map(|b| b.never_released).collect::<Vec<_>>(), vec![false, true]);
    }

    /// An idle expiry that cancels a tool of the session while its client is still attached (no
    /// break since its last answer) is the server's bug: a session with work under way is not
    /// idle (python-sdk#2455, an idle rule counting only the last request). It explains the tool
    /// killed as a bug, naming the server. Without a cancelled tool, or with the client cut off
    /// (condition 2), or a tool cancelled at another instant or of another session, it is not.
    #[test]
    fn an_idle_expiry_that_cancels_a_tool_its_attached_client_waits_for_is_the_servers_bug() {
        let expired = || StepKind::SessionEnded {
            session: sid(),
            reason: SessionEndReason::IdleExpired,
            idle_ttl_us: Some(60_000_000),
        };
        let cancelled = |session: &str| StepKind::ToolEnded {
            session: SessionId::from(session),
            request: RequestId(2),
            call: CallKey(0),
            end: crate::trace::ToolEnd::Cancelled,
        };
        let streaming = StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status(200)) };
        // Client 1's session: the breach is its, though a server's step shows it.
        let mut t = trace(vec![
            (1_000, on_session(2)),
            (1_010, streaming.clone()),
            (90_000, cancelled("0-1")),
            (90_000, expired()),
        ]);
        t.steps[0].client = Some(1);
        t.steps[1].client = Some(1);
        let busy = Conditions::judge(&t);
        let b: Vec<_> = busy.breaches.iter().map(|b| (b.condition, b.step, b.session.clone(), b.client)).collect();
        assert_eq!(b, vec![(Condition::ServerEnded, 3, Some(sid()), Some(1))], "{busy:?}");
        assert_eq!(
            busy.breaches[0].to_string(),
            "a server bug: the server expired session 0-1 at 1m30.000s as idle while its tool still ran for call0 \
             and its client was still attached: a session with work under way is not idle"
        );
        let killed = Violation {
            invariant: InvariantId::NoWorkKilled,
            step: 2,
            at: Instant(90_000_000),
            subject: "call0".into(),
            detail: String::new(),
        };
        assert!(matches!(busy.explain(&killed), Explanation::Bug(_)), "{}", busy.explain(&killed));
        // Another client's call, in a session of its own, is not explained by it.
        assert!(matches!(busy.explain_for(Instant(90_000_000), Some(2)), Explanation::Unexplained));
        // The client's next request answered 404: the session is gone by that bug, not by a
        // retention its outage outlasted (no condition 2 there).
        let mut t = t.clone();
        t.steps.push(t.steps[0].clone());
        t.steps[4].seq = 4;
        t.steps[4].t = 95_000_000;
        if let StepKind::Send { conn, .. } = &mut t.steps[4].kind {
            *conn = ConnId(3);
        }
        let mut gone = t.steps[1].clone();
        gone.seq = 5;
        gone.t = 95_000_010;
        gone.kind = StepKind::Response { conn: ConnId(3), head: ResponseHead::status(Status::NOT_FOUND) };
        t.steps.push(gone);
        let back = Conditions::judge(&t);
        let b: Vec<_> = back.breaches.iter().map(|b| b.condition).collect();
        assert_eq!(b, vec![Condition::ServerEnded], "{back:?}");
        // No tool cancelled, one of another session, or one cancelled before the expiry's instant.
        for steps in [
            vec![(1_000, on_session(2)), (1_010, streaming.clone()), (90_000, expired())],
            vec![(1_000, on_session(2)), (1_010, streaming.clone()), (90_000, cancelled("0-2")), (90_000, expired())],
            vec![(1_000, on_session(2)), (1_010, streaming.clone()), (80_000, cancelled("0-1")), (90_000, expired())],
        ] {
            let t = Conditions::judge(&trace(steps));
            assert!(t.all_held(), "{t:?}");
        }
        // A tool the expiry left at work (a server whose session close lets handlers finish):
        // as busy; one that ended before the expiry leaves the session idle.
        let ran = StepKind::SideEffect {
            session: sid(),
            request: RequestId(2),
            call: CallKey(0),
            tool: "pay".into(),
            idempotent: false,
        };
        let left = Conditions::judge(&trace(vec![
            (1_000, on_session(2)),
            (1_010, streaming.clone()),
            (1_015, ran.clone()),
            (90_000, expired()),
        ]));
        let b: Vec<_> = left.breaches.iter().map(|b| (b.condition, b.step)).collect();
        assert_eq!(b, vec![(Condition::ServerEnded, 3)], "{left:?}");
        let done = StepKind::ToolEnded {
            session: sid(),
            request: RequestId(2),
            call: CallKey(0),
            end: crate::trace::ToolEnd::Completed,
        };
        let idle = Conditions::judge(&trace(vec![
            (1_000, on_session(2)),
            (1_010, streaming.clone()),
            (1_015, ran),
            (20_000, done),
            (90_000, expired()),
        ]));
        assert!(idle.all_held(), "{idle:?}");
        // A task's tool is the task's work, read with the task (condition 2 at its cancel).
        let task = StepKind::TaskCreated {
            task: crate::tasks::TaskId("r0.0-t0".into()),
            call: CallKey(0),
            replica: 0,
            ttl_us: None,
        };
        let tasked = Conditions::judge(&trace(vec![
            (1_000, on_session(2)),
            (1_010, streaming.clone()),
            (1_020, task),
            (90_000, cancelled("0-1")),
            (90_000, expired()),
        ]));
        assert!(tasked.breaches.iter().all(|b| b.condition != Condition::ServerEnded), "{tasked:?}");
        // The client cut off: the outage outlasted the session (condition 2), not the server's bug.
        let cut = Conditions::judge(&trace(vec![
            (1_000, on_session(2)),
            (1_010, streaming),
            (30_000, StepKind::ConnEnd { conn: ConnId(2), end: ConnEnd::Reset }),
            (90_000, cancelled("0-1")),
            (90_000, expired()),
        ]));
        let b: Vec<_> = cut.breaches.iter().map(|b| b.condition).collect();
        assert_eq!(b, vec![Condition::Retention], "{cut:?}");
    }

    /// An idle expiry while the session's client is cut off (its connection broke after the last
    /// answer it got) is condition 2 at once, and explains a tool the expiry cancels, dated at the
    /// expiry (a swarm sweep of reference × py-sdk: a tool cancelled 1m56 into a 4m29 partition
    /// read as a bug, because condition 2 showed only when the client came back to a 404). An
    /// expiry while the client is in touch, or idle of its own accord, is no such breach.
    #[test]
    fn an_idle_expiry_while_the_client_is_cut_off_breaks_retention_then() {
        let expired = StepKind::SessionEnded {
            session: sid(),
            reason: SessionEndReason::IdleExpired,
            idle_ttl_us: Some(60_000_000),
        };
        let answered = StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status(200)) };
        let broke = StepKind::ConnEnd { conn: ConnId(2), end: ConnEnd::Reset };
        let refused = StepKind::ConnEnd { conn: ConnId(3), end: ConnEnd::Refused };
        let cut = Conditions::judge(&trace(vec![
            (1_000, on_session(2)),
            (1_010, answered.clone()),
            (30_000, broke.clone()),
            (31_000, on_session(3)),
            (31_000, refused),
            (90_000, expired.clone()),
        ]));
        let b: Vec<_> = cut.breaches.iter().map(|b| (b.condition, b.step, b.session.clone())).collect();
        assert_eq!(b, vec![(Condition::Retention, 5, Some(sid()))], "{cut:?}");
        assert!(cut.breaches[0]
            .detail
            .contains("while its client was cut off from the server (no answer since 1.010s)"));
        let killed = Violation {
            invariant: InvariantId::NoWorkKilled,
            step: 5,
            at: Instant(90_000_000),
            subject: "call0".into(),
            detail: String::new(),
        };
        assert!(matches!(cut.explain(&killed), Explanation::ExplainedBy(_)), "{cut:?}");
        // A server restart that lost the session in the outage is the same price, and what the
        // session held undelivered is its cost.
        let restarted =
            StepKind::SessionEnded { session: sid(), reason: SessionEndReason::ServerRestart, idle_ttl_us: None };
        let mut steps = vec![
            (1_000, on_session(2)),
            (1_010, answered.clone()),
            (30_000, broke.clone()),
            (31_000, on_session(3)),
            (31_000, StepKind::ConnEnd { conn: ConnId(3), end: ConnEnd::Refused }),
        ];
        steps.push((90_000, restarted.clone()));
        let lost = Conditions::judge(&trace(steps));
        let b: Vec<_> = lost.breaches.iter().map(|b| (b.condition, b.step)).collect();
        assert_eq!(b, vec![(Condition::Retention, 5)], "{lost:?}");
        assert!(lost.breaches[0]
            .detail
            .contains("was lost by a server restart at 1m30.000s while its client was cut off"));
        let undelivered = loss(5, 40_000_000, "session 0-1 stream0 event 0-2");
        assert!(matches!(lost.explain(&undelivered), Explanation::ExplainedBy(_)), "{lost:?}");
        // In touch again before the expiry (an answer after the break): no breach. A restart that
        // lost the session ended its retention all the same, outage or not: what the session
        // held undelivered went with it, whether or not the client comes back to a 404.
        let back = StepKind::Response { conn: ConnId(4), head: ResponseHead::status(Status(202)) };
        let in_touch = |end: StepKind| {
            Conditions::judge(&trace(vec![
                (1_000, on_session(2)),
                (1_010, answered.clone()),
                (30_000, broke.clone()),
                (40_000, back.clone()),
                (100_000, end),
            ]))
        };
        assert!(in_touch(expired).all_held());
        let restart = in_touch(restarted);
        let b: Vec<_> = restart.breaches.iter().map(|b| (b.condition, b.step, b.session.clone())).collect();
        assert_eq!(b, vec![(Condition::Retention, 4, Some(sid()))], "{restart:?}");
        assert!(restart.breaches[0].detail.contains("the server kept it in memory only"), "{restart:?}");
        assert!(matches!(restart.explain(&undelivered), Explanation::ExplainedBy(_)), "{restart:?}");
        // A session no client holds (deleted by its client) costs nobody anything.
        let deleted = Conditions::judge(&trace(vec![
            (1_000, on_session(2)),
            (1_010, answered),
            (2_000, delete_request(5)),
            (
                100_000,
                StepKind::SessionEnded { session: sid(), reason: SessionEndReason::ServerRestart, idle_ttl_us: None },
            ),
        ]));
        assert!(deleted.all_held(), "{deleted:?}");
    }

    /// In a run of several replicas, only requests routed to the replica that expired the
    /// session count as its activity.
    #[test]
    fn an_idle_expiry_counts_only_the_requests_its_own_replica_answered() {
        let expired = StepKind::SessionEnded {
            session: sid(),
            reason: SessionEndReason::IdleExpired,
            idle_ttl_us: Some(60_000_000),
        };
        let routed = |replica: u32| StepKind::LbRouted { conn: ConnId(2), replica, session: Some(sid()), hop: None };
        let answered = StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status(202)) };
        let judged = |to: u32| {
            let mut t = trace(vec![
                (40_000, on_session(2)),
                (40_001, routed(to)),
                (40_010, answered.clone()),
                (70_000, expired.clone()),
            ]);
            t.steps[1].actor = Actor::Lb;
            t.steps[3].replica = Some(0);
            Conditions::judge(&t)
        };
        assert_eq!(judged(0).breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::ServerEnded]);
        assert!(judged(1).all_held(), "{:?}", judged(1));
    }

    /// A stream that broke before the id of an event stored on it reached the client leaves the
    /// decision procedure nothing to persist: condition 1. With nothing stored on that stream (a
    /// POST that never reached the server), or every stored id received, nothing breaks.
    #[test]
    fn a_stream_that_broke_before_its_first_id_arrived_breaks_condition_one() {
        let priming = |stream: u32, call: Option<u32>| stored_on(&sid(), StreamNo(stream), 0, call.map(CallKey));
        let refused = |call: Option<u32>| StepKind::Decision {
            call: call.map(CallKey),
            outcome: None,
            action: None,
            error: Some(crate::decision::DecisionError::NeverPersisted.to_string()),
        };
        let judged = |mut kinds: Vec<(u64, StepKind)>| {
            kinds.insert(0, (0, on_session(1)));
            Conditions::judge(&trace(kinds))
        };
        let standalone = judged(vec![(800, priming(0, None)), (1_000, refused(None))]);
        assert_eq!(
            standalone.breaches.iter().map(|b| (b.condition, b.step)).collect::<Vec<_>>(),
            vec![(Condition::Persisted, 2)]
        );
        assert!(
            standalone.breaches[0].detail.contains("broke before event 0-0 (stored at 0.800s)"),
            "{:?}",
            standalone
        );
        // The call's own stream: only its own events count.
        assert_eq!(judged(vec![(800, priming(1, Some(0))), (1_000, refused(Some(0)))]).breaches.len(), 1);
        assert!(judged(vec![(800, priming(1, Some(1))), (1_000, refused(Some(0)))]).all_held());
        // A call's stream with nothing stored on it yet loses nothing the decision does not tell.
        assert!(judged(vec![(1_000, refused(Some(0)))]).all_held(), "nothing stored: nothing to resume from");
        // The standalone stream with no id yet (a server that sends it no priming event) loses
        // what is stored until a fresh GET opens it again, which replays nothing: condition 1,
        // for that session's violations.
        for before in [vec![], vec![(800, priming(1, Some(0)))]] {
            let mut kinds = before;
            kinds.push((1_000, refused(None)));
            let none_yet = judged(kinds);
            let b: Vec<_> = none_yet.breaches.iter().map(|b| (b.condition, b.session.clone())).collect();
            assert_eq!(b, vec![(Condition::Persisted, Some(sid()))], "{none_yet:?}");
            assert!(none_yet.breaches[0].detail.contains("before any event id reached the client"), "{none_yet:?}");
        }
        let on_get = StepKind::Send { conn: ConnId(1), request: Request::get(Some(sid()), None) };
        let received =
            judged(vec![(700, on_get), (800, priming(0, None)), (900, event_on(1, "0-0")), (1_000, refused(None))]);
        assert!(received.all_held(), "{received:?}");
    }

    /// An event handed to a session that another session stored, on a stream whose numbering
    /// shows a shared store, breaks condition 3; without a sign of sharing (per-session numbering
    /// on both sides) it is no condition's doing and stays for the oracles to judge.
    #[test]
    fn an_event_of_another_session_from_a_shared_store_breaks_condition_three() {
        let (a, b) = (SessionId::from("0-1"), SessionId::from("0-2"));
        let store = |session: &SessionId, seq: u32| stored_on(session, StreamNo::STANDALONE, seq, None);
        let get = |conn: u64, session: &SessionId| StepKind::Send {
            conn: ConnId(conn),
            request: Request { method: Method::Get, ..Request::delete(session.clone()) },
        };
        // A's events 0 and 1, then B's first at 2: one log, B's numbering starts above 0.
        let judged = |b_seq: u32| {
            Conditions::judge(&trace(vec![
                (0, get(1, &b)),
                (1, store(&a, 0)),
                (2, store(&a, 1)),
                (3, store(&b, b_seq)),
                (4, event_on(1, "0-1")),
            ]))
        };
        let shared = judged(2);
        assert_eq!(
            shared.breaches.iter().map(|x| (x.condition, x.step)).collect::<Vec<_>>(),
            vec![(Condition::Refused, 4)]
        );
        assert!(shared.breaches[0].detail.contains("session 0-2 was handed event 0-1, which session 0-1 stored"));
        assert!(judged(0).all_held(), "per-session numbering: no sign of a shared store");
        // Over a shared store, an id no other session stored is not another session's event.
        let unknown_id = Conditions::judge(&trace(vec![
            (0, get(1, &b)),
            (1, store(&a, 0)),
            (2, store(&a, 1)),
            (3, store(&b, 2)),
            (4, event_on(1, "0-9")),
        ]));
        assert!(unknown_id.all_held(), "{unknown_id:?}");
        // A server that says its store is shared (its `server-start`): A's event on B's fresh GET
        // is the store's doing even where B stored nothing to show it (rmcp's fresh GET replays
        // the common stream; a priming id it does not store).
        let fresh = |sessions_share_store: bool| {
            Conditions::judge(&trace(vec![
                (0, StepKind::ServerStart { epoch: 0, sessions_share_store, bounds: Default::default() }),
                (1, store(&a, 0)),
                (2, store(&a, 1)),
                (3, get(1, &b)),
                (4, event_on(1, "0-1")),
            ]))
        };
        let said = fresh(true);
        assert!(said.sessions_share_store);
        assert_eq!(
            said.breaches.iter().map(|x| (x.condition, x.step)).collect::<Vec<_>>(),
            vec![(Condition::Refused, 4)]
        );
        let unsaid = fresh(false);
        assert!(unsaid.all_held() && !unsaid.sessions_share_store, "{unsaid:?}");
    }

    /// A DELETE answered 404 for a session no server ended landed where the session is not held:
    /// condition 2 (the session is not where the request went); for a session that expired, the
    /// 404 is the truth and breaks nothing.
    #[test]
    fn a_delete_answered_404_for_a_session_that_lives_on_breaks_retention() {
        let delete = StepKind::Send { conn: ConnId(2), request: Request::delete(sid()) };
        let answer = |status: u16| StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status(status)) };
        let answered = |status| {
            Conditions::judge(&trace(vec![(0, on_session(1)), (1_000, delete.clone()), (1_010, answer(status))]))
        };
        // A 404, and a 202 for an id the answering server does not hold (rmcp takes it for
        // deleted): the same breach.
        for status in [404, 202] {
            let lives = answered(status);
            let breaches: Vec<_> = lives.breaches.iter().map(|b| (b.condition, b.step)).collect();
            assert_eq!(breaches, vec![(Condition::Retention, 2)], "{status}");
            let detail = &lives.breaches[0].detail;
            assert!(
                detail.contains(&format!("was answered {status} at")) && detail.contains("does not hold it"),
                "{detail}"
            );
        }
        // A redirect says nothing of the session.
        assert!(answered(300).all_held());
        // The session it ended first: deleted, nothing lives on.
        let deleted = StepKind::SessionEnded { session: sid(), reason: SessionEndReason::Deleted, idle_ttl_us: None };
        assert!(Conditions::judge(&trace(vec![
            (0, on_session(1)),
            (1_000, delete.clone()),
            (1_005, deleted),
            (1_010, answer(202))
        ]))
        .all_held());
        let not_found = answer(404);
        let expired =
            StepKind::SessionEnded { session: sid(), reason: SessionEndReason::IdleExpired, idle_ttl_us: None };
        assert!(Conditions::judge(&trace(vec![
            (0, on_session(1)),
            (500, expired),
            (1_000, delete),
            (1_010, not_found)
        ]))
        .all_held());
    }

    /// An application that starts a new session while its client holds a live one breaks
    /// condition 4 (the session left behind is orphaned); one whose session had already ended on
    /// the server breaks nothing.
    #[test]
    fn an_application_that_re_initializes_over_a_live_session_breaks_condition_four() {
        let again = (9_000, StepKind::AppReinitialize { session: sid() });
        let live = Conditions::judge(&trace(vec![(0, on_session(1)), again.clone()]));
        assert_eq!(live.breaches.len(), 1, "{:?}", live.breaches);
        let b = &live.breaches[0];
        assert_eq!((b.condition, b.step, b.at), (Condition::ByClass, 1, Instant(9_000_000)));
        assert!(b.detail.contains("held session 0-1") && b.detail.contains("without a DELETE"), "{}", b.detail);
        let expired =
            StepKind::SessionEnded { session: sid(), reason: SessionEndReason::IdleExpired, idle_ttl_us: None };
        assert!(Conditions::judge(&trace(vec![(0, on_session(1)), (5_000, expired), again])).all_held());
    }

    /// A session the server ended itself (a failed write, a process exit on a malformed request)
    /// is a server bug: the client's 404 for it breaks no condition (unlike an idle expiry or an
    /// operator's restart, which explain it as condition 2), and what follows is unexplained,
    /// naming the server's act first, and counted as a bug.
    #[test]
    fn a_session_the_server_ended_itself_makes_what_follows_a_server_bug() {
        let judged = |ends: Vec<StepKind>| {
            let mut kinds = vec![(0, start(false)), (1, on_session(1))];
            kinds.extend(ends.into_iter().map(|end| (30_000, end)));
            kinds.push((31_000, on_session(2)));
            kinds.push((31_001, StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status::NOT_FOUND) }));
            Conditions::judge(&trace(kinds))
        };
        let ended = |reason| StepKind::SessionEnded { session: sid(), reason, idle_ttl_us: None };
        let expired = judged(vec![ended(SessionEndReason::IdleExpired)]);
        assert!(expired.explain_at(Instant(40_000_000)).is_explained(), "{expired:?}");

        let exit = StepKind::ProcessExit { conn: ConnId(9), session: Some(sid()), cause: Default::default() };
        for ends in [vec![ended(SessionEndReason::WriteFailed)], vec![exit, ended(SessionEndReason::ProcessExit)]] {
            let c = judged(ends);
            assert_eq!(c.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::ServerEnded]);
            let verdict = c.explain_at(Instant(40_000_000));
            assert!(matches!(verdict, Explanation::Bug(_)) && !verdict.is_explained(), "{verdict}");
            let text = verdict.to_string();
            assert!(text.starts_with("unexplained: a server bug: the server"), "{text}");
            let record = ViolationRecord {
                invariant: "no-orphaned-session".into(),
                step: 4,
                t: 40_000_000,
                subject: sid().to_string(),
                detail: String::new(),
                conditions: text,
            };
            assert!(!record_is_explained(&record));
            // Before the server's act nothing is explained by it.
            assert_eq!(c.explain_at(Instant(29_000_000)), Explanation::Unexplained);
        }
    }

    #[test]
    fn a_server_bug_is_named_before_the_conditions_that_broke_earlier() {
        // Condition 1 breaks first (a restart without state), then the server ends the session
        // itself: the verdict is a server bug, and it names the server's act first.
        let t = trace(vec![
            (0, start(false)),
            (1, on_session(1)),
            (10_000, start(false)),
            (
                30_000,
                StepKind::SessionEnded { session: sid(), reason: SessionEndReason::WriteFailed, idle_ttl_us: None },
            ),
        ]);
        let c = Conditions::judge(&t);
        let verdict = c.explain_at(Instant(40_000_000));
        let Explanation::Bug(breaches) = &verdict else { panic!("not a server bug: {verdict}") };
        assert_eq!(
            breaches.iter().map(|b| b.condition).collect::<Vec<_>>(),
            vec![Condition::ServerEnded, Condition::Persisted]
        );
        let text = verdict.to_string();
        assert!(text.starts_with("unexplained: a server bug: the server ended session 0-1"), "{text}");
        assert!(text.contains("; condition 1: "), "{text}");
    }

    #[test]
    fn re_initializing_after_an_error_answer_names_its_status_whatever_ended_the_connection() {
        // A 503 answer, then (or not) the connection's end, then the client re-initializes.
        let after = |end: Option<ConnEnd>| {
            let mut kinds = vec![(0, start(false)), (1, on_session(1))];
            kinds.push((2, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(Status::UNAVAILABLE) }));
            if let Some(end) = end {
                kinds.push((2, StepKind::ConnEnd { conn: ConnId(1), end }));
            }
            kinds.push((
                2,
                StepKind::Decision { call: None, outcome: None, action: Some(NextAction::Reinitialize), error: None },
            ));
            Conditions::judge(&trace(kinds))
        };
        for end in [None, Some(ConnEnd::Clean)] {
            let c = after(end);
            assert_eq!(c.breaches.len(), 1, "{c:?}");
            assert_eq!(c.breaches[0].condition, Condition::ByClass);
            assert_eq!(
                c.breaches[0].detail,
                "the client re-initialized after a HTTP 503 (a transport fact: the session lived)"
            );
        }
    }

    #[test]
    fn resuming_after_a_410_or_409_breaks_condition_four_as_if_no_event_was_lost() {
        let after = |status: Status| {
            let resume = NextAction::Resume { last_event_id: EventId::from("1-3") };
            Conditions::judge(&trace(vec![
                (0, start(false)),
                (1, on_session(1)),
                (2, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(status) }),
                (2, StepKind::Decision { call: None, outcome: None, action: Some(resume), error: None }),
            ]))
        };
        for status in [Status::GONE, Status::CONFLICT] {
            let c = after(status);
            assert_eq!(c.breaches.len(), 1, "{c:?}");
            assert_eq!((c.breaches[0].condition, c.breaches[0].step), (Condition::ByClass, 3));
            assert_eq!(
                c.breaches[0].detail,
                format!("the client resumed after HTTP {} as if no event was lost", status.0)
            );
        }
        // A 405 (a server that serves no GET stream) refuses every resume alike: resuming again
        // takes a standing refusal for a passing fault (Python's client; a sweep of py-sdk
        // against a stateless server read its churn `conditions 1-4 held`).
        let c = after(Status::METHOD_NOT_ALLOWED);
        let b: Vec<_> = c.breaches.iter().map(|b| (b.condition, b.promised)).collect();
        assert_eq!(b, vec![(Condition::ByClass, false)], "{c:?}");
        assert!(c.breaches[0].detail.contains("the server serves no GET stream"), "{c:?}");
    }

    /// A decision judges the close it answers: one at the same instant, once. The standalone
    /// stream's 410 (answered by a resume at the head) is not what a call's resume at the same
    /// instant, or a restarted client's resume of what it restored, answers.
    #[test]
    fn a_decision_judges_only_its_own_close() {
        let gone = ResponseHead::status(Status::GONE);
        let at_head = NextAction::ResumeAtHead { head: EventId::from("0-9") };
        let resume = || NextAction::Resume { last_event_id: EventId::from("1-3") };
        let decide = |call: Option<u32>, action: NextAction| StepKind::Decision {
            call: call.map(CallKey),
            outcome: None,
            action: Some(action),
            error: None,
        };
        let standalone_410 = vec![
            (0, start(false)),
            (1, on_session(1)),
            (2, StepKind::Response { conn: ConnId(1), head: gone }),
            (2, StepKind::ConnEnd { conn: ConnId(1), end: ConnEnd::Clean }),
            (2, decide(None, at_head)),
        ];
        let then = |more: Vec<(u64, StepKind)>| {
            let mut kinds = standalone_410.clone();
            kinds.extend(more);
            Conditions::judge(&trace(kinds))
        };
        assert!(then(vec![(2, decide(Some(0), resume()))]).all_held());
        assert!(then(vec![(9, decide(Some(0), resume()))]).all_held());
        assert!(then(vec![(9, start(true)), (9, decide(Some(0), resume()))]).all_held());
        // Its own close, at its instant, is judged as before.
        let own = then(vec![
            (9, StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status::GONE) }),
            (9, decide(Some(0), resume())),
        ]);
        assert_eq!(own.breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::ByClass]);
    }

    #[test]
    fn resuming_after_a_5xx_or_a_reset_breaks_nothing() {
        // A transport fact: the session and its events lived, and resuming is the right answer.
        let resumed_after = |status: Status, end: Option<ConnEnd>| {
            let resume = NextAction::Resume { last_event_id: EventId::from("1-3") };
            let mut kinds = vec![
                (0, start(false)),
                (1, on_session(1)),
                (2, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(status) }),
            ];
            if let Some(end) = end {
                kinds.push((3, StepKind::ConnEnd { conn: ConnId(1), end }));
            }
            kinds.push((3, StepKind::Decision { call: None, outcome: None, action: Some(resume), error: None }));
            Conditions::judge(&trace(kinds))
        };
        assert!(resumed_after(Status::UNAVAILABLE, None).all_held(), "{:?}", resumed_after(Status::UNAVAILABLE, None));
        assert!(resumed_after(Status::OK, Some(ConnEnd::Reset)).all_held());
    }

    #[test]
    fn re_initializing_after_a_stream_answered_200_then_reset_breaks_condition_four() {
        // The stream was answered 200, then its connection broke: a transport fact, the session
        // lived. A 3xx answer then a reset is not one (nor is a clean end after the 200).
        let after = |status: Status, end: ConnEnd| {
            Conditions::judge(&trace(vec![
                (0, start(false)),
                (1, on_session(1)),
                (2, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(status) }),
                (3, StepKind::ConnEnd { conn: ConnId(1), end }),
                (
                    3,
                    StepKind::Decision {
                        call: None,
                        outcome: None,
                        action: Some(NextAction::Reinitialize),
                        error: None,
                    },
                ),
            ]))
        };
        let c = after(Status::OK, ConnEnd::Reset);
        assert_eq!(c.breaches.len(), 1, "{c:?}");
        assert_eq!((c.breaches[0].condition, c.breaches[0].step), (Condition::ByClass, 4));
        assert_eq!(
            c.breaches[0].detail,
            "the client re-initialized after a reset (a transport fact: the session lived)"
        );
        assert!(after(Status(302), ConnEnd::Reset).all_held());
        assert!(after(Status::OK, ConnEnd::Clean).all_held());
    }

    #[test]
    fn keeping_the_session_after_a_404_breaks_condition_four() {
        let after = |action: Option<NextAction>, error: Option<&str>| {
            Conditions::judge(&trace(vec![
                (0, start(false)),
                (1, on_session(1)),
                (2, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(Status::NOT_FOUND) }),
                (2, StepKind::Decision { call: None, outcome: None, action, error: error.map(String::from) }),
            ]))
        };
        let by_class = |c: &Conditions| -> Vec<(usize, String)> {
            c.breaches
                .iter()
                .filter(|b| b.condition == Condition::ByClass)
                .map(|b| (b.step, b.detail.clone()))
                .collect()
        };
        let resume = NextAction::Resume { last_event_id: EventId::from("1-3") };
        assert_eq!(
            by_class(&after(Some(resume), None)),
            vec![(3, "the client kept its session after HTTP 404 (no re-initialize)".to_string())]
        );
        assert_eq!(
            by_class(&after(None, Some("session not found"))),
            vec![(3, "the client kept its session after HTTP 404 (session not found)".to_string())]
        );
        // A transport closed for good lets the session go, but begins no new one.
        assert_eq!(
            by_class(&after(None, Some("the transport closed: HTTP 404 to the resume"))),
            vec![(
                3,
                "the client closed its transport after HTTP 404 and began no new session: every later call fails \
                 until the application connects anew (the transport closed: HTTP 404 to the resume)"
                    .to_string()
            )]
        );
        // Re-initializing is the right answer to a 404.
        assert_eq!(by_class(&after(Some(NextAction::Reinitialize), None)), vec![]);
    }

    #[test]
    fn retention_breaches_say_how_long_the_client_went_without_an_answer() {
        // The last answer at 1 ms; the stream broke at 5 ms.
        let answered_then_cut = || {
            vec![
                (0, on_session(1)),
                (1, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(Status::OK) }),
                (5, StepKind::ConnEnd { conn: ConnId(1), end: ConnEnd::Reset }),
            ]
        };
        // It gave up at 60 s.
        let mut kinds = answered_then_cut();
        let gave_up = StepKind::AppError { call: crate::ids::CallKey(0), error: "reconnect attempts exhausted".into() };
        kinds.push((60_001, gave_up));
        let c = Conditions::judge(&trace(kinds));
        assert_eq!(c.breaches.len(), 1, "{c:?}");
        assert_eq!(
            c.breaches[0].detail,
            "the client gave up (reconnect attempts exhausted) after 1m00.000s without an answer: the outage outlasted \
             its reconnects"
        );
        // It came back at 30 s to a 404.
        let mut kinds = answered_then_cut();
        kinds.push((30_001, on_session(2)));
        kinds.push((30_001, StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status::NOT_FOUND) }));
        let c = Conditions::judge(&trace(kinds.clone()));
        assert_eq!(c.breaches.len(), 1, "{c:?}");
        assert_eq!(
            c.breaches[0].detail,
            "session 0-1 was gone when the client came back after 30.000s without an answer: the server that answered \
             does not hold it"
        );
        // That 404 concerns session 0-1: it explains what was lost there, a call, and any second
        // session; not another session's events, which a gone session cannot have cost.
        assert_eq!(c.breaches[0].session, Some(sid()));
        let on = |invariant, subject: &str| Violation {
            invariant,
            step: 3,
            at: Instant(30_001_000),
            subject: subject.to_string(),
            detail: String::new(),
        };
        let explained = |c: &Conditions, v: Violation| c.explain(&v).is_explained();
        assert!(explained(&c, on(InvariantId::NoSilentEventLoss, "session 0-1 stream1 event 1-4")));
        assert!(explained(&c, on(InvariantId::NoOrphanedSession, "session 0-1")));
        assert!(explained(&c, on(InvariantId::EveryCallResolves, "call0")));
        assert!(!explained(&c, on(InvariantId::NoSilentEventLoss, "session 0-2 stream1 event 1-4")));
        assert!(!explained(&c, on(InvariantId::NoOrphanedSession, "session 0-2 stream1 event 1-4")));
        // Over a store one for every session, what one session was answered may cost another's.
        let mut shared = kinds.clone();
        shared
            .insert(0, (0, StepKind::ServerStart { epoch: 0, sessions_share_store: true, bounds: Default::default() }));
        let s = Conditions::judge(&trace(shared));
        assert!(explained(
            &s,
            Violation { step: 4, ..on(InvariantId::NoSilentEventLoss, "session 0-2 stream1 event 1-4") }
        ));
        // A give-up is the client's, and concerns every session it held.
        let mut kinds = answered_then_cut();
        kinds.push((
            60_001,
            StepKind::AppError { call: crate::ids::CallKey(0), error: "reconnect attempts exhausted".into() },
        ));
        let gave_up = Conditions::judge(&trace(kinds));
        assert_eq!(gave_up.breaches[0].session, None);
        let elsewhere = Violation {
            at: Instant(60_001_000),
            ..on(InvariantId::NoSilentEventLoss, "session 0-2 stream1 event 1-4")
        };
        assert!(gave_up.explain(&elsewhere).is_explained());
    }

    #[test]
    fn a_hop_that_drops_a_request_header_breaks_the_condition_the_header_served() {
        let dropped = |header: RequestHeader| {
            let mut t = trace(vec![
                (0, start(false)),
                (1, on_session(1)),
                (2, StepKind::LbHeaderDropped { conn: ConnId(1), header, hop: 0 }),
            ]);
            t.steps[2].actor = Actor::Lb;
            let c = Conditions::judge(&t);
            c.breaches.iter().map(|b| (b.condition, b.step, b.detail.clone())).collect::<Vec<_>>()
        };
        assert_eq!(
            dropped(RequestHeader::LastEventId),
            vec![(
                Condition::Refused,
                2,
                "hop0 dropped Last-Event-ID from c1: the server got a fresh GET and could not refuse an id it never \
                 saw (the resume starts at the head of another stream)"
                    .to_string()
            )]
        );
        assert_eq!(
            dropped(RequestHeader::McpSessionId),
            vec![(
                Condition::ByClass,
                2,
                "hop0 dropped Mcp-Session-Id from c1: the server got the request without its session, and the client \
                 acted on an answer its session did not earn"
                    .to_string()
            )]
        );
    }

    #[test]
    fn a_hop_that_drops_the_session_from_an_answer_breaks_condition_four() {
        let mut t = trace(vec![
            (0, start(false)),
            (1, post(1)),
            (2, StepKind::LbResponseHeaderDropped { conn: ConnId(1), header: ResponseHeader::McpSessionId, hop: 1 }),
        ]);
        t.steps[2].actor = Actor::Lb;
        let c = Conditions::judge(&t);
        assert_eq!(c.breaches.len(), 1, "{c:?}");
        assert_eq!((c.breaches[0].condition, c.breaches[0].step), (Condition::ByClass, 2));
        assert_eq!(
            c.breaches[0].detail,
            "hop1 dropped Mcp-Session-Id from the response on c1: the client never got the session the server \
             created, and went on without one"
        );
    }

    #[test]
    fn a_reset_after_a_3xx_answer_is_no_transport_fact() {
        let c = Conditions::judge(&trace(vec![
            (0, start(false)),
            (1, on_session(1)),
            (2, StepKind::Response { conn: ConnId(1), head: ResponseHead::status(Status(300)) }),
            (3, StepKind::ConnEnd { conn: ConnId(1), end: ConnEnd::Reset }),
            (3, StepKind::Decision { call: None, outcome: None, action: Some(NextAction::Reinitialize), error: None }),
        ]));
        assert!(c.all_held(), "{c:?}");
    }

    #[test]
    fn footer_records_carry_each_violations_conditions_verdict() {
        let t = trace(vec![(1_000, stored(1)), (251_000, gone_410())]);
        let c = Conditions::judge(&t);
        let violation = |at_ms: u64| Violation {
            invariant: InvariantId::NoDuplicateDelivery,
            step: 1,
            at: Instant(at_ms * 1_000),
            subject: "1-1".into(),
            detail: "delivered twice".into(),
        };
        let records = c.records(&[violation(250_000), violation(252_000)]);
        assert_eq!(records[0].conditions, c.explain(&violation(250_000)).to_string());
        assert_eq!(records[0].conditions, "unexplained: conditions 1-4 held");
        assert!(records[1].conditions.starts_with("explained by condition 2"), "{}", records[1].conditions);
        // Read back from the footer: only the later one is explained.
        assert_eq!(records.iter().map(record_is_explained).collect::<Vec<_>>(), vec![false, true]);
        // The same through the trace alone.
        assert_eq!(violation_records(&t, &[violation(250_000), violation(252_000)]), records);
    }

    /// The decision procedure's answer to a lost session settles every non-idempotent call sent
    /// in it as an unknown outcome; a decision-procedure client that leaves one unresolved has a
    /// bug. An idempotent call (sent again), a call never sent, one that polls its task, and one
    /// settled, do not.
    #[test]
    fn a_non_idempotent_call_sent_in_a_lost_session_and_never_settled_is_a_client_bug() {
        use crate::http::{ClientMessage, ToolCall};
        let call = CallKey(0);
        let judge = |idempotent: bool, sent: bool, tasked: bool, settled: bool| {
            let tool_call = ToolCall { tool: "pay".into(), key: call, idempotency_key: None, tasks: false };
            let body = ClientMessage::CallTool { id: RequestId(2), call: tool_call };
            let mut steps = vec![
                (0, client_start(false, false, true)),
                (1, StepKind::AppCall { call, tool: "pay".into(), idempotent }),
            ];
            if sent {
                steps.push((1, StepKind::Send { conn: ConnId(2), request: Request::post(Some(sid()), body) }));
            }
            if tasked {
                steps.push((2, StepKind::TaskIdReceived { task: crate::tasks::TaskId("t".into()), call }));
            }
            steps.push((5, StepKind::AppSessionLost { session: sid() }));
            if settled {
                steps.push((5, StepKind::AppUnknownOutcome { call, reason: "session lost".into() }));
            }
            Conditions::judge(&trace(steps))
        };
        let untold = judge(false, true, false, false);
        let bugs: Vec<&Breach> = untold.breaches.iter().filter(|b| b.is_bug()).collect();
        assert_eq!(bugs.len(), 1, "{:?}", untold.breaches);
        assert!(bugs[0].detail.contains("left call0 at 0.005s with no way to its answer (its session 0-1 was lost)"));
        for fine in [
            judge(false, true, false, true),
            judge(true, true, false, false),
            judge(false, false, false, false),
            judge(false, true, true, false),
        ] {
            assert!(fine.breaches.iter().all(|b| !b.is_bug()), "{:?}", fine.breaches);
        }
    }

    /// After a 409/410 naming the head, the decision procedure resumes from that head at once; a
    /// decision-procedure client that decides so and sends no request with that `Last-Event-ID`,
    /// nor settles the call, has a bug.
    #[test]
    fn a_resume_at_the_head_decided_and_never_sent_is_a_client_bug() {
        let call = CallKey(0);
        let head = EventId::from("1-9");
        let judge = |by_class: bool, then: Option<StepKind>| {
            let mut steps = vec![
                (0, client_start(false, false, by_class)),
                (1, StepKind::AppCall { call, tool: "pay".into(), idempotent: false }),
                (
                    3,
                    StepKind::Decision {
                        call: Some(call),
                        outcome: None,
                        action: Some(NextAction::ResumeAtHead { head: head.clone() }),
                        error: None,
                    },
                ),
            ];
            steps.extend(then.map(|k| (3, k)));
            Conditions::judge(&trace(steps))
        };
        let never = judge(true, None);
        assert_eq!(never.breaches.len(), 1, "{:?}", never.breaches);
        assert!(never.breaches[0].is_bug());
        assert!(
            never.breaches[0].detail.contains("resume call0 at once from the head 1-9"),
            "{}",
            never.breaches[0].detail
        );
        let mut resume = Request::post(Some(sid()), crate::http::ClientMessage::Initialized);
        (resume.method, resume.body, resume.last_event_id) = (Method::Get, None, Some(head.clone()));
        let settled = StepKind::AppUnknownOutcome { call, reason: "attempts spent".into() };
        for fine in [
            judge(true, Some(StepKind::Send { conn: ConnId(4), request: resume })),
            judge(true, Some(settled)),
            judge(false, None),
        ] {
            assert!(fine.breaches.iter().all(|b| !b.is_bug()), "{:?}", fine.breaches);
        }
    }

    /// Each condition's label names it as a reader of `explore`'s tally sees it.
    #[test]
    fn each_condition_has_its_own_label() {
        assert_eq!(Condition::Retention.label(), "condition 2 (retention outlasts the outage)");
        assert_eq!(Condition::Terminated.label(), "a termination (a session deleted by someone else)");
        let all = [
            Condition::Persisted,
            Condition::Retention,
            Condition::Refused,
            Condition::ByClass,
            Condition::Terminated,
            Condition::ServerEnded,
            Condition::ServerMissed,
            Condition::ServerRepeated,
            Condition::ServerIdReused,
            Condition::ServerDropped,
            Condition::ProxyHeld,
            Condition::WorkRunOn,
            Condition::BusLocal,
            Condition::ServerHeldOpen,
            Condition::ServerRefusedAfterHead,
            Condition::BlackHole,
            Condition::ServerCrossStream,
        ];
        let labels: BTreeSet<String> = all.iter().map(|c| c.label()).collect();
        assert_eq!(labels.len(), all.len(), "{labels:?}");
        for c in &all[..4] {
            assert!(c.label().starts_with(&format!("condition {} (", c.number())), "{}", c.label());
        }
    }

    /// A black hole that caught a client's connections (the injector's `black-holed` step) is a
    /// network fault's price, no bug and no broken condition of 1-4: it explains what stayed on
    /// its way to that client (a call never resolved, events never delivered, a result left in
    /// the session), not the failure the client told after its own timer (condition 4), nor a
    /// call sent again or a second session; another client's violations are not its; and a
    /// violation before it is not explained by it. Without the step the same trace reads
    /// "conditions 1-4 held".
    #[test]
    fn a_black_hole_explains_what_never_reached_its_client_and_nothing_the_client_did() {
        let caught = StepKind::BlackHoled { conns: vec![ConnId(3), ConnId(4)], idle: 1, connect: false };
        let mut t = trace(vec![(0, start(false)), (1_000, post(1)), (60_000, caught)]);
        t.steps[2].actor = Actor::Fault;
        let judged = Conditions::judge(&t);
        let b: Vec<_> = judged.breaches.iter().map(|b| (b.condition, b.step, b.is_bug())).collect();
        assert_eq!(b, vec![(Condition::BlackHole, 2, false)], "{judged:?}");
        assert!(!judged.all_held());
        assert_eq!(
            judged.breaches[0].to_string(),
            "a silent black hole: the network dropped the client's connections (c3, c4, 1 kept-alive connection(s) \
             idle in its pool) at 1m00.000s and told neither end (no end, no reset): what they carried from then on \
             reached nobody, and only a timer (the client's request timeout, the server's keep-alives, an idle \
             expiry) could end the wait"
        );
        let violation = |invariant, ms: u64, subject: &str| Violation {
            invariant,
            step: 2,
            at: Instant(ms * 1_000),
            subject: subject.into(),
            detail: String::new(),
        };
        for invariant in [
            InvariantId::EveryCallResolves,
            InvariantId::NoSilentEventLoss,
            InvariantId::NoSilentNotificationLoss,
            InvariantId::TimelyDelivery,
            InvariantId::TaskResultDelivered,
        ] {
            let e = judged.explain(&violation(invariant, 90_000, "call0"));
            assert!(e.to_string().starts_with("explained by a silent black hole: "), "{invariant:?}: {e}");
        }
        // A result stored where nobody read it (rule a names its event).
        let orphaned = violation(InvariantId::NoOrphanedSession, 90_000, "session 0-1 stream1 event 1-2");
        assert!(judged.explain(&orphaned).is_explained());
        // What the client did once a timer fired is its own: told a failure, sent the call again.
        for invariant in [InvariantId::NoFalseFailure, InvariantId::NoDuplicateExecution] {
            let e = judged.explain(&violation(invariant, 90_000, "call0"));
            assert!(matches!(e, Explanation::NotCausedBy(..)), "{invariant:?}: {e}");
        }
        // Before the hole, nothing of it.
        assert!(matches!(judged.explain_at(Instant(59_000_000)), Explanation::Unexplained));
        // Another client's: not its.
        let mut theirs = t.clone();
        theirs.steps[2].client = Some(1);
        let theirs = Conditions::judge(&theirs);
        assert!(matches!(theirs.explain_for(Instant(90_000_000), Some(2)), Explanation::Unexplained));
        assert!(theirs.explain_for(Instant(90_000_000), Some(1)).is_explained());
        // The same run without the step: nothing broke.
        let mut quiet = t.clone();
        quiet.steps.truncate(2);
        assert!(Conditions::judge(&quiet).all_held());
        assert!(can_cause(&judged.breaches[0], Effect::SessionlessEventLoss));
        for effect in [Effect::SecondSession, Effect::DeadSessionKept, Effect::PacedChurn] {
            assert!(!can_cause(&judged.breaches[0], effect), "{effect:?}");
        }
        // A connect it swallowed: the exchange's SYNs went unanswered while the hole lasted, so
        // what it carried came late; the same price.
        let mut t = trace(vec![(0, start(false)), (1_000, post(1))]);
        t.steps.push(Step {
            seq: 2,
            t: 41_000_000,
            actor: Actor::Fault,
            client: None,
            replica: None,
            conn_client: None,
            kind: StepKind::BlackHoled { conns: vec![ConnId(5)], idle: 0, connect: true },
        });
        let swallowed = Conditions::judge(&t);
        assert_eq!(
            swallowed.breaches.iter().map(|b| b.to_string()).collect::<Vec<_>>(),
            vec![
                "a silent black hole: the network dropped the SYN of the client's connection c5 at 41.000s without \
                  an answer (a black hole): the exchange waits for a SYN sent after the hole closes, and what it \
                  carries comes late or not at all"
            ]
        );
        let late = Violation { at: Instant(56_000_000), ..violation(InvariantId::TimelyDelivery, 56_000, "call0") };
        assert!(swallowed.explain(&late).is_explained());
    }

    /// A black hole that caught the connection of a client's standalone stream leaves the server
    /// counting it as the session's one standalone stream: a new `GET` answered `409` is refused
    /// for it, and the client's returns after such refusals are the hole's price
    /// (`bounded-reconnects`, which a black hole otherwise cannot cause). A new `GET` let in (`200`)
    /// before any refusal leaves the churn unexplained by it. (A swarm sweep with black holes read
    /// the TypeScript and Python clients' 409 loops against the Python and Go servers as
    /// "what broke cannot cause bounded-reconnects".)
    #[test]
    fn a_standalone_get_refused_for_the_connection_a_black_hole_caught_is_the_holes_churn() {
        let answered = |conn: u64, status: u16| StepKind::Response {
            conn: ConnId(conn),
            head: ResponseHead::status(Status(status)),
        };
        let judged = |second: u16| {
            let hole = StepKind::BlackHoled { conns: vec![ConnId(2)], idle: 0, connect: false };
            let mut t = trace(vec![
                (0, start(false)),
                (1_000, get(2, None)),
                (1_010, answered(2, 200)),
                (60_000, hole),
                (360_000, get(3, None)),
                (360_010, answered(3, second)),
                (361_000, get(4, None)),
                (361_010, answered(4, 409)),
            ]);
            t.steps[3].actor = Actor::Fault;
            Conditions::judge(&t)
        };
        let churn = Violation {
            invariant: InvariantId::BoundedReconnects,
            step: 7,
            at: Instant(400_000_000),
            subject: "session 0-1".into(),
            detail: String::new(),
        };
        let refused = judged(409);
        let hole = &refused.breaches[0];
        assert_eq!((hole.condition, hole.kept_claim), (Condition::BlackHole, true), "{refused:?}");
        assert!(
            hole.detail
                .ends_with("refused the client's new GET with 409 at 6m00.010s, so the client came back for it again"),
            "{}",
            hole.detail
        );
        assert!(refused.explain(&churn).is_explained(), "{}", refused.explain(&churn));
        // Let in first: the server knew the caught connection was gone, and the 409 after it is
        // another matter (the hole's claim ended with the 200).
        let let_in = judged(200);
        assert!(!let_in.breaches[0].kept_claim, "{let_in:?}");
        assert!(matches!(let_in.explain(&churn), Explanation::NotCausedBy(..)), "{}", let_in.explain(&churn));
        // A resume of a call's stream let in between says nothing of the standalone stream (a
        // search of py-sdk × py-sdk read the 409s after one as churn the hole cannot cause).
        let hole = StepKind::BlackHoled { conns: vec![ConnId(2)], idle: 0, connect: false };
        let mut t = trace(vec![
            (0, start(false)),
            (500, stored_on(&sid(), StreamNo(1), 0, Some(CallKey(0)))),
            (1_000, get(2, None)),
            (1_010, answered(2, 200)),
            (60_000, hole),
            (300_000, get(5, Some("1-0"))),
            (300_010, answered(5, 200)),
            (360_000, get(3, None)),
            (360_010, answered(3, 409)),
        ]);
        t.steps[4].actor = Actor::Fault;
        let call_resumed = Conditions::judge(&t);
        assert!(call_resumed.breaches.iter().any(|b| b.kept_claim), "{call_resumed:?}");
        // Python's `replay-and-close`: the resume replayed and ended for the connection that
        // still claims the stream is the same claim; a resume of a call's stream is not.
        let closed_for = |stream: StreamNo| {
            let hole = StepKind::BlackHoled { conns: vec![ConnId(2)], idle: 0, connect: false };
            let resume = StepKind::Resume {
                session: sid(),
                last_event_id: EventId::from("0-3"),
                stream: Some(stream),
                outcome: ResumeOutcome::Replayed { replayed: 0 },
                held: false,
                evicted: None,
                claimed_by: Some(ConnId(7)),
                finished: false,
            };
            let mut t = trace(vec![
                (0, start(false)),
                (1_000, get(2, None)),
                (1_010, answered(2, 200)),
                (60_000, hole),
                (360_000, get(3, Some("0-3"))),
                (360_010, resume),
            ]);
            t.steps[3].actor = Actor::Fault;
            t.steps[5].actor = Actor::Server;
            Conditions::judge(&t)
        };
        let closed = closed_for(StreamNo::STANDALONE);
        assert!(closed.breaches[0].kept_claim, "{closed:?}");
        assert!(closed.breaches[0].detail.contains("ended the client's resume of it after its replay at 6m00.010s"));
        assert!(closed.explain(&churn).is_explained(), "{}", closed.explain(&churn));
        assert!(!closed_for(StreamNo(1)).breaches[0].kept_claim);
        // The POST of a call the hole caught: each resume of the call's stream replayed and
        // ended for the connection the server still keeps is the same claim; once a resume is
        // let in without a claim, it is over.
        let call_resumed = |claims: &[bool]| {
            let hole = StepKind::BlackHoled { conns: vec![ConnId(2)], idle: 0, connect: false };
            let mut steps = vec![
                (0, start(false)),
                (1_000, post_call(2, 0)),
                (1_500, stored_on(&sid(), StreamNo(1), 0, Some(CallKey(0)))),
                (60_000, hole),
            ];
            for (k, claimed) in claims.iter().enumerate() {
                let resume = StepKind::Resume {
                    session: sid(),
                    last_event_id: EventId::from("1-0"),
                    stream: Some(StreamNo(1)),
                    outcome: ResumeOutcome::Replayed { replayed: 0 },
                    held: false,
                    evicted: None,
                    claimed_by: claimed.then_some(ConnId(2)),
                    finished: false,
                };
                steps.push((200_000 + k as u64 * 1_000, resume));
            }
            let mut t = trace(steps);
            t.steps[3].actor = Actor::Fault;
            for step in &mut t.steps[4..] {
                step.actor = Actor::Server;
            }
            Conditions::judge(&t)
        };
        let kept = call_resumed(&[true]);
        assert!(kept.breaches[0].kept_claim, "{kept:?}");
        assert!(kept.breaches[0].detail.contains("as call0's stream in session 0-1 and ended the client's resume"));
        assert!(!call_resumed(&[false, true]).breaches[0].kept_claim, "let in first: the claim was over");
    }

    /// A black hole cuts its client off though the client does not know it: an idle expiry that
    /// cancels the session's tool while the hole holds the client's stream is the outage's (the
    /// server could not tell its client from a gone one; condition 2, as under a partition), not
    /// the server's bug of expiring a session whose client is attached. Without the hole the
    /// same expiry is that bug.
    #[test]
    fn an_idle_expiry_inside_a_black_hole_is_the_outages_not_the_servers_bug() {
        let expired = StepKind::SessionEnded {
            session: sid(),
            reason: SessionEndReason::IdleExpired,
            idle_ttl_us: Some(60_000_000),
        };
        let cancelled = StepKind::ToolEnded {
            session: sid(),
            request: RequestId(2),
            call: CallKey(0),
            end: crate::trace::ToolEnd::Cancelled,
        };
        let streaming = StepKind::Response { conn: ConnId(2), head: ResponseHead::status(Status(200)) };
        let hole = StepKind::BlackHoled { conns: vec![ConnId(2)], idle: 0, connect: false };
        let steps = |with_hole: bool| {
            let mut steps = vec![(1_000, on_session(2)), (1_010, streaming.clone())];
            if with_hole {
                steps.push((2_000, hole.clone()));
            }
            steps.extend([(90_000, cancelled.clone()), (90_000, expired.clone())]);
            steps
        };
        let judged = Conditions::judge(&trace(steps(true)));
        let b: Vec<_> = judged.breaches.iter().map(|b| b.condition).collect();
        assert_eq!(b, vec![Condition::BlackHole, Condition::Retention], "{judged:?}");
        assert!(judged.breaches[1].detail.contains("while its client was cut off from the server"), "{judged:?}");
        let without = Conditions::judge(&trace(steps(false)));
        let b: Vec<_> = without.breaches.iter().map(|b| b.condition).collect();
        assert_eq!(b, vec![Condition::ServerEnded], "{without:?}");
    }

    /// `judged` gives, beside each footer record, the conditions that explain its violation: those
    /// of the breaches it names for an explained one, none for one nothing explains.
    #[test]
    fn judged_names_the_conditions_that_explain_each_violation_and_none_for_the_rest() {
        let t = trace(vec![(0, start(false)), (1, on_session(1)), (30_000, start(false))]);
        let violation = |invariant, step, ms: u64| Violation {
            invariant,
            step,
            at: Instant(ms * 1_000),
            subject: String::new(),
            detail: String::new(),
        };
        let early = violation(InvariantId::NoDuplicateExecution, 1, 1);
        let late = violation(InvariantId::EveryCallResolves, 2, 60_000);
        let (records, causes) = judged(&t, &[early, late]);
        assert_eq!(causes, vec![vec![], vec![Condition::Persisted]]);
        assert!(records[0].conditions.starts_with("unexplained"), "{}", records[0].conditions);
        assert!(records[1].conditions.starts_with("explained by condition 1"), "{}", records[1].conditions);
        assert_eq!(judged(&t, &[]), (Vec::new(), Vec::new()));
    }
}
