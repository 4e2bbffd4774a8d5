//! `profile-conformance`: each simulated party kept the bounds and timers its profile sets.
//!
//! The other invariants judge the system a profile stands for; this one judges the model. A
//! profile's promise a party breaks only to behave *better* than its profile (a store that keeps
//! more than its window, a stream its server never closes, a client that gives itself more
//! attempts than it has) breaks no invariant of the system, yet gives a wrong answer: the run
//! says no event was lost where the real server, which evicts, loses them. So the bounds a trace
//! records with each party's start (`ServerStart::bounds`, `ClientStart::max_attempts`) are read
//! back against what the party then did, each rule named by the profile field it checks:
//!
//! - `server.retention.window` and `server.retention.max_events`: a resume the server answered
//!   with a replay found the event after the id still held: stored no longer ago than the window,
//!   and no more events after it than the store keeps per stream. (The store evicts lazily, on
//!   each append and before each resume, so at the resume it holds exactly what its bounds let
//!   it.)
//! - `server.close_request_streams`: no event stored later than that long after a request's
//!   stream opened reaches the client on that stream. The server opened it before its head
//!   reached the client, so its close was due by then; an event stored after that could no longer
//!   be written on it. (A request served in the 2026-07-28 era has no such close.)
//! - `server.close_idle_standalone`: no event stored later than that long after the previous
//!   write the client received on the standalone stream (an event or a keep-alive, each of which
//!   restarts the timer) reaches it on that stream. A connection whose frames a hop discarded is
//!   passed over: a write the client never saw may have restarted the timer.
//! - The same two fields, from the server's side: a close by the standalone stream's idle timer
//!   ended the standalone stream, and one by a request stream's timer ended a request's stream
//!   (the `server-closed-stream` step names the timer and the stream the connection carried).
//! - `server.keepalive` and `server.keepalive_timer`: no keep-alive comment reaches the client
//!   sooner than the interval after it sent the stream's request (the server's timer starts with
//!   the head, which it writes no earlier). Under `fixed`, a comment goes every interval from the
//!   head whatever else is written, so an event stored later than some whole number of intervals
//!   after the head arrived comes after at least that many comments on its stream (the pipe keeps
//!   the order of writes, and the server wrote the event no earlier than it stored it). Under
//!   `after-silence`, a comment goes only after the interval with nothing written, so none
//!   reaches the client sooner than the interval after an event it received before on that stream
//!   was stored.
//! - `server.finished_resume = "close"`: a resume of a stream that had finished (the `resume`
//!   step's `finished`) carries nothing after its replay, neither a keep-alive nor an event stored
//!   after the resume; and whatever the profile, no more events stored before a resume reach the
//!   client on its connection than the `resume` step says it replayed. A resume that took over the
//!   standalone stream is judged by `server.close_idle_standalone` from then on, as a fresh `GET`
//!   is. (A `resume` step is matched to the one connection that asked it: see
//!   [`Rules::match_resume`].)
//! - `client.reconnect.max_attempts`: a stream's backoffs number its attempts from 1, and never
//!   past the budget.
//! - `client.close_handling.on_give_up`, read at each `stream-given-up` step (which the client
//!   records before its profile's rule acts): under `fail-call` the client's next step fails that
//!   call; under `leave-pending` it does not resolve it (the call waits for its request
//!   timeout); under `close-transport` its transport is closed and its session forgotten, so it
//!   sends no more requests in the session it was in (until it starts again; a new session, its
//!   application's own, is another matter).
//!
//! Each rule reads the server's own steps for when an event was stored (the time the server
//! wrote it is no earlier) and the client's for when a stream's head and frames arrived (no
//! earlier than the server sent them), so network delays, holding hops and restarts only make a
//! rule more lenient, never wrong. A violation is mcpsim's own bug: no condition of the design
//! note explains it ([`super::conditions`] says so).

use super::{sorted, Invariant, InvariantId, TraceIndex, Violation};
use crate::config::OnGiveUp;
use crate::era::Era;
use crate::http::{Body, ConnEnd, Method, SseEvent, Status};
use crate::ids::{CallKey, ConnId, EventId, SessionId, StreamNo};
use crate::time::{format_micros, Instant};
use crate::trace::{Actor, CloseRule, ResumeOutcome, ServerBounds, Step, StepKind};
use std::collections::{BTreeMap, BTreeSet};

pub(super) const PROFILE_CONFORMANCE: Invariant = Invariant {
    id: InvariantId::ProfileConformance,
    name: InvariantId::ProfileConformance.name(),
    description: "Every simulated party keeps the bounds and timers its profile sets (the store's retention, the \
                  server's stream closes and keep-alives, what a resumed connection carries after its replay, the \
                  client's attempt budget and what it does on a give-up): a self-check of mcpsim's model, whose violation is a bug of mcpsim, not of the \
                  system the profiles stand for.",
    check: departures_in,
};

/// What a stream's timer is measured from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A request's stream: from when it opened.
    Request,
    /// The standalone stream: from the last write.
    Standalone,
    /// Any other request's stream (a resume, a request without a session): judged by the
    /// keep-alive rules only.
    Other,
}

/// A millisecond's grace: a timer due at the instant an event is stored may fire after it.
const GRACE_US: u64 = 1_000;

/// A stream the client opened, as far as the close rules need.
struct Open<'a> {
    kind: Kind,
    /// The session it was sent in, if any.
    session: Option<&'a SessionId>,
    /// When its request was sent.
    sent: Instant,
    /// When its head arrived (an SSE 200), else `None`.
    opened: Option<Instant>,
    /// When its last frame (or its head) arrived.
    last: Instant,
    /// The keep-alive comments received on it since its head.
    comments: u64,
    /// The latest time an event it received was stored at.
    stored_last: Option<Instant>,
    /// The replica that served it.
    replica: u32,
    /// Served in the 2026-07-28 era, or a hop discarded some of its frames: not judged.
    skip: bool,
}

/// An event of a stream's log: its number and when it was stored.
struct Logged<'a> {
    seq: u32,
    at: Instant,
    id: &'a EventId,
}

/// A resume the server answered with a replay (or a silent head), matched to the client's
/// connection that asked it, as far as the replay rules need.
struct Resumed<'a> {
    session: &'a SessionId,
    /// The server's `resume` step.
    order: usize,
    /// The events its step says it replayed.
    count: u32,
    /// How many events stored before the resume have reached the client on the connection.
    old: u32,
    /// The stream had finished, and the server's profile ends the connection after the replay.
    closes: bool,
}

#[derive(Default)]
struct Rules<'a> {
    /// By replica: the bounds its last start recorded. A start with no replica index is the
    /// process that serves every replica of its fleet (`None`), or the one server of a run
    /// without replicas.
    servers: BTreeMap<Option<u32>, ServerBounds>,
    /// Some server's store is shared by every session (its logs are not a session's).
    shared_store: bool,
    /// Some server started with a retention bound, and no store is shared: logs are kept.
    retention: bool,
    /// Some server started with a close timer or a keep-alive: streams are followed.
    follows: bool,
    /// By client: its attempt budget, as its last start recorded.
    budgets: BTreeMap<u32, Option<u32>>,
    /// By client: what a give-up does, as its last start recorded.
    give_up: BTreeMap<u32, OnGiveUp>,
    /// By client that just gave up a call's stream under `fail-call` or `leave-pending`: the
    /// call and the rule; judged at the client's next step.
    awaiting: BTreeMap<u32, (CallKey, OnGiveUp)>,
    /// By client: the session its last request was sent in.
    sessions: BTreeMap<u32, &'a SessionId>,
    /// By client whose transport a give-up closed: the session it was in, the call given up and
    /// when.
    closed: BTreeMap<u32, (&'a SessionId, CallKey, Instant)>,
    /// By session and stream: the events stored, in the order stored (only while some server
    /// has a retention bound). A log numbered again from the start (a new process without its
    /// store) starts over.
    logs: Vec<Vec<Logged<'a>>>,
    /// By session and stream: where its log is in `logs`.
    log_of: BTreeMap<(&'a SessionId, StreamNo), usize>,
    /// The stream the last stored event went to, and its log: a run of events of one stream
    /// (most of a trace's) finds its log without a lookup.
    last_log: Option<(&'a SessionId, StreamNo, usize)>,
    /// By client and connection: the streams it opened (only while some server has a close timer
    /// or a keep-alive).
    open: BTreeMap<(u32, ConnId), Open<'a>>,
    /// The trace holds a server's `resume` step: resumes are matched to the connections that
    /// asked them.
    resumes: bool,
    /// By session and `Last-Event-ID`: the client connections that asked a resume with it and
    /// that no `resume` step has been matched to yet (one refused before its request went out
    /// is taken off: no server saw it).
    asked: BTreeMap<(&'a SessionId, &'a EventId), Vec<(u32, ConnId)>>,
    /// Connections whose request the client's HTTP library sent again: a server may have
    /// answered either copy, so no resume is matched to them.
    resent: BTreeSet<(u32, ConnId)>,
    /// A balancer sent some request upstream again: from then on no resume is matched (the
    /// balancer's step names the connection in its own numbering).
    lb_resent: bool,
    /// By client and connection: the resume the server answered on it.
    resumed: BTreeMap<(u32, ConnId), Resumed<'a>>,
    found: Vec<Violation>,
}

/// One violation per departure. The bulk of a trace (events stored and received) is read only
/// when a rule needs it: a replay to check against a retention bound, a close timer or a
/// keep-alive. Else the few other steps are enough (the attempt budget).
pub(super) fn departures_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let (mut resumes, mut follows) = (false, false);
    for (_, step) in ix.others() {
        match &step.kind {
            StepKind::ServerStart { bounds, .. } => follows |= bounds.times_streams(),
            StepKind::Resume { .. } => resumes = true,
            _ => {}
        }
    }
    let mut rules = Rules { resumes, ..Rules::default() };
    if resumes || follows {
        ix.steps().for_each(|(order, step)| rules.step(ix, order, step));
    } else {
        ix.others().for_each(|(order, step)| rules.step(ix, order, step));
    }
    sorted(rules.found)
}

impl<'a> Rules<'a> {
    fn step(&mut self, ix: &TraceIndex<'a>, order: usize, step: &'a Step) {
        let replica = step.replica.unwrap_or(0);
        if !self.awaiting.is_empty() && matches!(step.actor, Actor::Client | Actor::App) {
            self.check_given_up(order, step);
        }
        match &step.kind {
            StepKind::ServerStart { bounds, sessions_share_store, .. } => {
                self.servers.insert(step.replica, *bounds);
                self.shared_store |= *sessions_share_store;
                self.retention = !self.shared_store && self.servers.values().any(ServerBounds::retains);
                self.follows = self.servers.values().any(ServerBounds::times_streams);
            }
            StepKind::ClientStart { max_attempts, on_give_up, .. } => {
                let client = step.client.unwrap_or(0);
                self.budgets.insert(client, *max_attempts);
                self.closed.remove(&client);
                match on_give_up {
                    Some(rule) => self.give_up.insert(client, *rule),
                    None => self.give_up.remove(&client),
                };
            }
            StepKind::StreamGivenUp { call } => {
                let client = step.client.unwrap_or(0);
                match self.give_up.get(&client).copied() {
                    Some(OnGiveUp::CloseTransport) => {
                        if let Some(session) = self.sessions.get(&client) {
                            self.closed.entry(client).or_insert((session, *call, step.at()));
                        }
                    }
                    Some(rule) => {
                        self.awaiting.insert(client, (*call, rule));
                    }
                    None => {}
                }
            }
            StepKind::ServerClosedStream { session, stream: Some(stream), rule, conn, .. } => {
                let standalone = *stream == StreamNo::STANDALONE;
                let field = match rule {
                    CloseRule::IdleStandalone if !standalone => "server.close_idle_standalone",
                    CloseRule::RequestStream if standalone => "server.close_request_streams",
                    _ => return,
                };
                let detail = format!(
                    "the server closed {conn}, which carried {stream}, by the timer of {} ({field})",
                    if standalone { "a request's stream" } else { "the standalone stream" }
                );
                self.depart(order, step, format!("session {session} {stream}"), detail);
            }
            StepKind::Backoff { call, attempt, .. } => {
                let budget = self.budgets.get(&step.client.unwrap_or(0)).copied().flatten();
                let subject = match call {
                    Some(call) => call.to_string(),
                    None => format!("client{} standalone stream", step.client.unwrap_or(0)),
                };
                let broke = match budget {
                    _ if *attempt == 0 => Some("attempt 0, though attempts are numbered from 1".to_string()),
                    Some(max) if *attempt > max => {
                        Some(format!("attempt {attempt}, past the {max} its profile allows"))
                    }
                    _ => None,
                };
                if let Some(broke) = broke {
                    self.depart(
                        order,
                        step,
                        subject,
                        format!("a backoff scheduled {broke} (client.reconnect.max_attempts)"),
                    );
                }
            }
            StepKind::EventStored { session, stream, seq, id, .. } if self.retention => {
                let at = match self.last_log {
                    Some((s, n, at)) if n == *stream && (std::ptr::eq(s, session) || s == session) => at,
                    _ => {
                        let next = self.logs.len();
                        let at = *self.log_of.entry((session, *stream)).or_insert(next);
                        if at == next {
                            self.logs.push(Vec::new());
                        }
                        self.last_log = Some((session, *stream, at));
                        at
                    }
                };
                let log = &mut self.logs[at];
                if log.last().is_some_and(|last| last.seq >= *seq) {
                    log.clear();
                }
                log.push(Logged { seq: *seq, at: step.at(), id });
            }
            StepKind::Resume { session, last_event_id, stream, outcome, finished, .. } => {
                let bounds = bounds_of(&self.servers, replica);
                if let (Some(stream), ResumeOutcome::Replayed { replayed: 1.. }, true) =
                    (stream, outcome, self.retention)
                {
                    self.check_replay(order, step, bounds, session, *stream, last_event_id);
                }
                self.match_resume(order, bounds, session, last_event_id, *stream, outcome, *finished);
            }
            StepKind::HttpResent { conn, .. } => {
                let key = (step.client.unwrap_or(0), *conn);
                self.resent.insert(key);
                self.resumed.remove(&key);
            }
            StepKind::LbResent { .. } => {
                self.lb_resent = true;
                self.resumed.clear();
            }
            StepKind::Send { conn, request } => {
                let client = step.client.unwrap_or(0);
                if let Some(session) = &request.session {
                    self.check_closed(order, step, client, session);
                    self.sessions.insert(client, session);
                }
                if let (true, Method::Get, Some(session), Some(id)) =
                    (self.resumes, request.method, &request.session, &request.last_event_id)
                {
                    self.asked.entry((session, id)).or_default().push((client, *conn));
                }
                if !self.follows {
                    return;
                }
                let key = (client, *conn);
                let kind = match (request.method, &request.session, &request.last_event_id) {
                    (Method::Post, Some(_), _) => Some(Kind::Request),
                    (Method::Get, Some(_), None) => Some(Kind::Standalone),
                    (Method::Post | Method::Get, ..) => Some(Kind::Other),
                    _ => None,
                };
                match kind {
                    Some(kind) => {
                        let open = Open {
                            kind,
                            session: request.session.as_ref(),
                            sent: step.at(),
                            opened: None,
                            last: step.at(),
                            comments: 0,
                            stored_last: None,
                            replica: 0,
                            skip: false,
                        };
                        self.open.insert(key, open);
                    }
                    None => {
                        self.open.remove(&key);
                    }
                }
            }
            StepKind::LbRouted { conn, replica: to, .. } => {
                if let Some(open) = self.open.get_mut(&(step.conn_client.unwrap_or(0), *conn)) {
                    open.replica = *to;
                }
            }
            StepKind::EraServed { conn, era, .. } => {
                if let Some(open) = self.open.get_mut(&(step.conn_client.unwrap_or(0), *conn)) {
                    open.replica = replica;
                    open.skip |= *era == Era::Modern;
                }
            }
            StepKind::LbDiscarded { conn, .. } => {
                if let Some(open) = self.open.get_mut(&(step.conn_client.unwrap_or(0), *conn)) {
                    open.skip = true;
                }
            }
            StepKind::Response { conn, head } => {
                let key = (step.client.unwrap_or(0), *conn);
                if head.status == Status::OK && head.body == Body::EventStream {
                    if let Some(open) = self.open.get_mut(&key) {
                        open.opened = Some(step.at());
                        open.last = step.at();
                    }
                } else {
                    self.open.remove(&key);
                    self.resumed.remove(&key);
                }
            }
            StepKind::Comment { conn } => {
                let key = (step.client.unwrap_or(0), *conn);
                self.check_resumed(ix, order, step, key, None);
                self.check_comment(order, step, key);
            }
            StepKind::Event { conn, event } => {
                let key = (step.client.unwrap_or(0), *conn);
                self.check_resumed(ix, order, step, key, Some(event));
                if event.id.is_none() {
                    if let Some(open) = self.open.get_mut(&key) {
                        open.last = step.at();
                    }
                    return;
                }
                if self.check_keepalives(ix, order, step, key, event) {
                    self.check_close(ix, order, step, key, event);
                }
            }
            StepKind::ConnEnd { conn, end } => {
                let key = (step.client.unwrap_or(0), *conn);
                self.open.remove(&key);
                self.resumed.remove(&key);
                if *end == ConnEnd::Refused {
                    self.asked.values_mut().for_each(|asked| asked.retain(|k| *k != key));
                }
            }
            _ => {}
        }
    }

    /// Matches a server's `resume` step to the client connection that asked it: the one
    /// connection that sent a resume with this session and id and was not matched yet (with none,
    /// or several a server could be answering, none is judged). A replay, or a silent head, is
    /// then followed on that connection ([`Rules::check_resumed`]); a resume that took over the
    /// standalone stream is judged by its idle close from now on, as a fresh `GET` is.
    #[allow(clippy::too_many_arguments, reason = "the fields of one resume step")]
    fn match_resume(
        &mut self,
        order: usize,
        bounds: ServerBounds,
        session: &'a SessionId,
        id: &'a EventId,
        stream: Option<StreamNo>,
        outcome: &ResumeOutcome,
        finished: bool,
    ) {
        let Some(asked) = self.asked.remove(&(session, id)) else { return };
        let (&[key], false) = (&asked[..], self.lb_resent) else { return };
        if self.resent.contains(&key) {
            return;
        }
        let count = match outcome {
            ResumeOutcome::Replayed { replayed } | ResumeOutcome::FromOldest { replayed, .. } => *replayed,
            ResumeOutcome::SilentHead { .. } => 0,
            _ => return,
        };
        let closes = finished && !bounds.finished_resume_stays_open;
        self.resumed.insert(key, Resumed { session, order, count, old: 0, closes });
        if stream == Some(StreamNo::STANDALONE) && !closes {
            if let Some(open) = self.open.get_mut(&key).filter(|open| open.kind == Kind::Other) {
                open.kind = Kind::Standalone;
            }
        }
    }

    /// What a resumed connection carried (`event`, or a keep-alive comment if `None`):
    /// - no more events stored before the resume than the server's `resume` step says it
    ///   replayed (the replay is all of them it writes; what it writes after was stored after);
    /// - under `server.finished_resume = close`, once the stream had finished, nothing after the
    ///   replay: neither a keep-alive nor an event stored after the resume.
    ///
    /// The connection is followed until the replay is over: its first keep-alive, or its first
    /// event stored after the resume.
    ///
    /// An event is placed before or after the resume by the first store of its id in its session,
    /// if that store holds the message that arrived. A priming event (no message) is not counted
    /// among the replayed ones, since some servers give one the id of another; one stored after
    /// the resume still ends the replay, or departs under `close`.
    fn check_resumed(
        &mut self,
        ix: &TraceIndex<'a>,
        order: usize,
        step: &Step,
        key: (u32, ConnId),
        event: Option<&SseEvent>,
    ) {
        let Some(resumed) = self.resumed.get_mut(&key) else { return };
        let detail = match event {
            None if resumed.closes => "a keep-alive reached the client on the resumed connection of a finished \
                                       stream, which its server ends after the replay (server.finished_resume = close)"
                .to_string(),
            None => {
                // The replay was written before any keep-alive: nothing more to count.
                self.resumed.remove(&key);
                return;
            }
            Some(event) => {
                let Some(id) = &event.id else { return };
                let Some(stored) = ix.log().get(resumed.session, id) else { return };
                if stored.message != event.data.as_ref() {
                    return;
                }
                if stored.order < resumed.order && event.data.is_some() {
                    resumed.old += 1;
                    if resumed.old <= resumed.count {
                        return;
                    }
                    format!(
                        "the server's resume step says it replayed {} event(s), yet {} events stored before the \
                         resume reached the client on its connection, the last {id}",
                        resumed.count, resumed.old
                    )
                } else if stored.order > resumed.order && resumed.closes {
                    format!(
                        "event {id}, stored after the resume, reached the client on the resumed connection of a \
                         finished stream, which its server ends after the replay (server.finished_resume = close)"
                    )
                } else {
                    if stored.order > resumed.order {
                        // The replay is over (it was written first): live events follow.
                        self.resumed.remove(&key);
                    }
                    return;
                }
            }
        };
        let subject = format!("session {} {}", resumed.session, key.1);
        self.resumed.remove(&key);
        self.depart(order, step, subject, detail);
    }

    /// `server.retention`: a replay from `id` found the event after it still held.
    fn check_replay(
        &mut self,
        order: usize,
        step: &Step,
        bounds: ServerBounds,
        session: &SessionId,
        stream: StreamNo,
        id: &EventId,
    ) {
        let Some(log) = self.log_of.get(&(session, stream)).map(|at| &self.logs[*at]) else { return };
        let Some(at) = log.iter().rposition(|e| e.id == id) else { return };
        let Some(next) = log.get(at + 1).filter(|next| next.seq == log[at].seq.saturating_add(1)) else { return };
        let now = step.at();
        let subject = format!("session {session} {stream} event {id}");
        let age = now.0.saturating_sub(next.at.0);
        if let Some(window) = bounds.retention_window_us.filter(|w| age > *w) {
            let detail = format!(
                "the server replayed from {id}, though the event after it, {}, was stored {} before the resume, past \
                 its {} retention window (server.retention.window)",
                next.id,
                format_micros(age),
                format_micros(window)
            );
            return self.depart(order, step, subject, detail);
        }
        let after = log.len() - at - 1;
        if let Some(max) = bounds.retention_max_events.filter(|max| after > *max as usize) {
            let detail = format!(
                "the server replayed from {id}, though {after} events were stored after it, more than the {max} its \
                 store keeps per stream (server.retention.max_events)"
            );
            self.depart(order, step, subject, detail);
        }
    }

    /// `server.close_request_streams` and `server.close_idle_standalone`: the event `id` reached
    /// the client on `key`'s stream no later than the server's close was due.
    fn check_close(&mut self, ix: &TraceIndex<'a>, order: usize, step: &Step, key: (u32, ConnId), event: &SseEvent) {
        let Some(id) = &event.id else { return };
        let Some(open) = self.open.get_mut(&key) else { return };
        let since = match open.kind {
            Kind::Request => open.opened,
            Kind::Standalone => open.opened.map(|_| open.last),
            Kind::Other => None,
        };
        open.last = step.at();
        let (Some(since), false) = (since, open.skip) else { return };
        let bounds = bounds_of(&self.servers, open.replica);
        let (due, field) = match open.kind {
            Kind::Request => (bounds.close_request_streams_us, "server.close_request_streams"),
            Kind::Standalone => (bounds.close_idle_standalone_us, "server.close_idle_standalone"),
            Kind::Other => (None, ""),
        };
        let (Some(due), Some(session)) = (due, open.session) else { return };
        let Some(stored) = stored_before(ix, session, event, step) else { return };
        if stored.0 <= since.0.saturating_add(due).saturating_add(GRACE_US) {
            return;
        }
        let conn = key.1;
        let what = match open.kind {
            Kind::Request => "a request's stream, whose head arrived",
            Kind::Standalone | Kind::Other => "the standalone stream, whose last frame before it arrived",
        };
        let detail = format!(
            "event {id}, stored at {}, reached the client on {what} at {}: the server's {} close was due by {} \
             ({field})",
            format_micros(stored.0),
            format_micros(since.0),
            format_micros(due),
            format_micros(since.0.saturating_add(due))
        );
        self.open.remove(&key);
        self.depart(order, step, format!("session {session} {conn}"), detail);
    }

    /// `server.keepalive` under a `fixed` timer: `event` came on `key`'s stream after as
    /// many comments as were due before it was stored. Records when it was stored, for the
    /// `after-silence` rule. False when it departed (the stream is judged no further).
    fn check_keepalives(
        &mut self,
        ix: &TraceIndex<'a>,
        order: usize,
        step: &Step,
        key: (u32, ConnId),
        event: &SseEvent,
    ) -> bool {
        let Some(open) = self.open.get_mut(&key) else { return true };
        let (Some(session), Some(head), false) = (open.session, open.opened, open.skip) else { return true };
        let Some(id) = &event.id else { return true };
        let Some(stored) = stored_before(ix, session, event, step) else { return true };
        open.stored_last = open.stored_last.max(Some(stored));
        let bounds = bounds_of(&self.servers, open.replica);
        let (Some(every), false) = (bounds.keepalive_us.filter(|k| *k > 0), bounds.keepalive_after_silence) else {
            return true;
        };
        // The comments due by then: the n-th at the head's write (no later than its arrival) plus
        // n intervals, before the event's write (no earlier than its store).
        let gap = stored.0.saturating_sub(head.0.saturating_add(GRACE_US));
        let due = gap.saturating_sub(1) / every;
        if gap == 0 || open.comments >= due {
            return true;
        }
        let detail = format!(
            "event {id}, stored {} after the stream's head arrived, came after {} keep-alive(s): a fixed timer \
             writes one every {} from the head whatever else is written, so {due} had been due before it \
             (server.keepalive_timer = fixed, server.keepalive)",
            format_micros(stored.0.saturating_sub(head.0)),
            open.comments,
            format_micros(every)
        );
        self.open.remove(&key);
        self.depart(order, step, format!("session {session} {}", key.1), detail);
        false
    }

    /// `server.keepalive`, and `server.keepalive_timer = after-silence`: a comment on `key`'s
    /// stream came no sooner than the interval after its request was sent, and (after silence)
    /// after the latest event the client received on it was stored.
    fn check_comment(&mut self, order: usize, step: &Step, key: (u32, ConnId)) {
        let Some(open) = self.open.get_mut(&key) else { return };
        open.last = step.at();
        open.comments += 1;
        if open.opened.is_none() || open.skip {
            return;
        }
        let bounds = bounds_of(&self.servers, open.replica);
        let Some(every) = bounds.keepalive_us.filter(|k| *k > 0) else { return };
        let at = step.at().0.saturating_add(GRACE_US);
        let detail = if at < open.sent.0.saturating_add(every) {
            format!(
                "a keep-alive arrived {} after its stream's request was sent, sooner than the {} the server waits \
                 from the stream's head before its first (server.keepalive)",
                format_micros(step.at().0.saturating_sub(open.sent.0)),
                format_micros(every)
            )
        } else if let Some(stored) = open.stored_last.filter(|s| bounds.keepalive_after_silence && at < s.0 + every) {
            format!(
                "a keep-alive arrived {} after an event it follows on its stream was stored: after silence, the \
                 server writes one only {} after its last write (server.keepalive_timer = after-silence, \
                 server.keepalive)",
                format_micros(step.at().0.saturating_sub(stored.0)),
                format_micros(every)
            )
        } else {
            return;
        };
        let subject = match open.session {
            Some(session) => format!("session {session} {}", key.1),
            None => format!("client{} {}", key.0, key.1),
        };
        self.open.remove(&key);
        self.depart(order, step, subject, detail);
    }

    /// `client.close_handling.on_give_up` = `fail-call` or `leave-pending`: `step`, the client's
    /// first after it gave up a call's stream, fails that call, or leaves it alone.
    fn check_given_up(&mut self, order: usize, step: &Step) {
        let client = step.client.unwrap_or(0);
        let Some((call, rule)) = self.awaiting.remove(&client) else { return };
        let resolved = match &step.kind {
            StepKind::AppError { call: c, .. } | StepKind::AppUnknownOutcome { call: c, .. } => *c == call,
            _ => false,
        };
        let broke = match (rule, resolved) {
            (OnGiveUp::FailCall, false) => "did not fail it at once (client.close_handling.on_give_up = fail-call)",
            (OnGiveUp::LeavePending, true) => {
                "resolved it at once, where its profile leaves it pending for its request timeout \
                 (client.close_handling.on_give_up = leave-pending)"
            }
            _ => return,
        };
        let detail = format!("the client gave up {call}'s stream and {broke}");
        self.depart(order, step, call.to_string(), detail);
    }

    /// `client.close_handling.on_give_up = "close-transport"`: a request sent in `session` by a
    /// client whose give-up closed its transport in that session.
    fn check_closed(&mut self, order: usize, step: &Step, client: u32, session: &SessionId) {
        let Some(&(closed, call, at)) = self.closed.get(&client).filter(|(s, ..)| *s == session) else { return };
        self.closed.remove(&client);
        let detail = format!(
            "the client sent a request in session {closed} {} after it gave up {call}'s stream: its profile \
             closes the whole transport then and forgets the session (client.close_handling.on_give_up = \
             close-transport)",
            format_micros(step.at().0.saturating_sub(at.0))
        );
        self.depart(order, step, format!("client{client} session {closed}"), detail);
    }

    fn depart(&mut self, order: usize, step: &Step, subject: String, detail: String) {
        self.found.push(Violation {
            invariant: InvariantId::ProfileConformance,
            step: order,
            at: step.at(),
            subject,
            detail,
        });
    }
}

/// The bounds replica `replica` keeps: its own start's, else those of the process that serves the
/// whole fleet (a start with no replica index).
fn bounds_of(servers: &BTreeMap<Option<u32>, ServerBounds>, replica: u32) -> ServerBounds {
    servers.get(&Some(replica)).or_else(|| servers.get(&None)).copied().unwrap_or_default()
}

/// When `event`, which arrived at `step`, was stored: the first time its session stored its id,
/// unless what was stored then is not what arrived (another message, or stored only after it
/// arrived). A server that gives two events one id (rmcp's shared priming id among them) may have
/// sent one the log does not hold; such an event is not judged.
fn stored_before(ix: &TraceIndex<'_>, session: &SessionId, event: &SseEvent, step: &Step) -> Option<Instant> {
    let stored = ix.log().get(session, event.id.as_ref()?)?;
    (stored.at <= step.at() && stored.message == event.data.as_ref()).then_some(stored.at)
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::http::{ResponseHead, SseEvent};
    use crate::trace::Trace;

    fn start(bounds: ServerBounds) -> StepKind {
        StepKind::ServerStart { epoch: 0, sessions_share_store: false, bounds }
    }

    fn found(trace: &Trace) -> Vec<Violation> {
        departures_in(&TraceIndex::new(trace))
    }

    fn replayed() -> ResumeOutcome {
        ResumeOutcome::Replayed { replayed: 2 }
    }

    /// Events 1-0..1-2 stored at 1 s, 2 s and 3 s; a resume from 1-0 at `resume_at` µs.
    fn resumed_at(bounds: ServerBounds, resume_at: u64) -> Trace {
        let a = sid("A");
        TraceBuilder::new()
            .server(start(bounds))
            .at(1_000_000)
            .server(stored(&a, 1, 0, None, None))
            .at(2_000_000)
            .server(stored(&a, 1, 1, None, Some(progress(0, 1))))
            .at(3_000_000)
            .server(stored(&a, 1, 2, None, Some(progress(0, 2))))
            .at(resume_at)
            .server(resume(&a, ev(1, 0), replayed()))
            .build()
    }

    #[test]
    fn a_replay_of_an_event_older_than_the_window_departs_from_the_profile() {
        let window = ServerBounds { retention_window_us: Some(10_000_000), ..ServerBounds::default() };
        assert!(found(&resumed_at(window, 11_000_000)).is_empty(), "the event after the id is 9 s old");
        let late = found(&resumed_at(window, 13_000_000));
        assert_eq!(late.len(), 1, "{late:?}");
        assert_eq!(late[0].invariant, InvariantId::ProfileConformance);
        assert!(late[0].detail.contains("server.retention.window"), "{}", late[0].detail);
        assert!(late[0].detail.contains("11.000s before the resume"), "{}", late[0].detail);
    }

    #[test]
    fn a_replay_of_more_events_than_the_store_keeps_departs_from_the_profile() {
        let two = ServerBounds { retention_max_events: Some(2), ..ServerBounds::default() };
        assert!(found(&resumed_at(two, 4_000_000)).is_empty(), "two events after the id, two kept");
        let one = ServerBounds { retention_max_events: Some(1), ..ServerBounds::default() };
        let over = found(&resumed_at(one, 4_000_000));
        assert_eq!(over.len(), 1, "{over:?}");
        assert!(over[0].detail.contains("server.retention.max_events"), "{}", over[0].detail);
        assert!(found(&resumed_at(ServerBounds::default(), 4_000_000)).is_empty(), "no bound, nothing to keep");
    }

    #[test]
    fn a_log_numbered_again_after_a_restart_is_judged_from_its_new_events() {
        let a = sid("A");
        let window = ServerBounds { retention_window_us: Some(10_000_000), ..ServerBounds::default() };
        let trace = TraceBuilder::new()
            .server(start(window))
            .at(1_000_000)
            .server(stored(&a, 1, 0, None, None))
            .server(stored(&a, 1, 1, None, Some(progress(0, 1))))
            .at(30_000_000)
            .server(StepKind::ServerStart { epoch: 1, sessions_share_store: false, bounds: window })
            .server(stored(&a, 1, 0, None, None))
            .server(stored(&a, 1, 1, None, Some(progress(0, 1))))
            .at(31_000_000)
            .server(resume(&a, ev(1, 0), replayed()))
            .build();
        assert!(found(&trace).is_empty(), "{:?}", found(&trace));
    }

    fn sse_ok(conn: u64) -> StepKind {
        StepKind::Response {
            conn: ConnId(conn),
            head: ResponseHead { body: Body::EventStream, ..ResponseHead::status(Status::OK) },
        }
    }

    fn with_id(id: EventId) -> SseEvent {
        SseEvent { id: Some(id), retry_ms: None, kind: crate::http::EventKind::default(), data: Some(progress(0, 1)) }
    }

    /// A call's stream opened at 1 s; its events stored (and received) at `stored_at` µs.
    fn request_stream(bounds: ServerBounds, stored_at: u64) -> Trace {
        let a = sid("A");
        TraceBuilder::new()
            .server(start(bounds))
            .at(1_000_000)
            .client(call_sent(1, Some(&a), 1, 0))
            .client(sse_ok(1))
            .at(stored_at)
            .server(stored(&a, 1, 0, Some(0), Some(progress(0, 1))))
            .client(sse_event(1, with_id(ev(1, 0))))
            .build()
    }

    #[test]
    fn an_event_written_on_a_request_stream_after_its_close_was_due_departs_from_the_profile() {
        let close = ServerBounds { close_request_streams_us: Some(5_000_000), ..ServerBounds::default() };
        assert!(found(&request_stream(close, 5_500_000)).is_empty(), "stored before the close was due");
        let late = found(&request_stream(close, 7_000_000));
        assert_eq!(late.len(), 1, "{late:?}");
        assert!(late[0].detail.contains("server.close_request_streams"), "{}", late[0].detail);
        assert_eq!(late[0].subject, "session A c1");
        assert!(found(&request_stream(ServerBounds::default(), 7_000_000)).is_empty(), "no timer");
    }

    #[test]
    fn a_modern_request_or_one_whose_frames_a_hop_dropped_is_not_judged_by_the_close_timer() {
        let close = ServerBounds { close_request_streams_us: Some(5_000_000), ..ServerBounds::default() };
        for skip in [
            StepKind::EraServed {
                conn: ConnId(1),
                request: crate::ids::RequestId(1),
                era: Era::Modern,
                session: None,
                ignored: Vec::new(),
            },
            StepKind::LbDiscarded { conn: ConnId(1), frames: 1, held_us: 1, hop: None },
        ] {
            let mut trace = request_stream(close, 7_000_000);
            let at = trace.steps[2].t;
            let step = Step {
                seq: 0,
                t: at,
                actor: crate::trace::Actor::Server,
                client: None,
                replica: None,
                conn_client: None,
                kind: skip,
            };
            trace.steps.insert(2, step);
            assert!(found(&trace).is_empty(), "{:?}", found(&trace));
        }
    }

    #[test]
    fn the_standalone_streams_idle_close_restarts_at_each_frame_the_client_received() {
        let a = sid("A");
        let idle = ServerBounds { close_idle_standalone_us: Some(5_000_000), ..ServerBounds::default() };
        let stream = |keepalive_at: Option<u64>| {
            let mut b =
                TraceBuilder::new().server(start(idle)).at(1_000_000).client(get_standalone(1, &a)).client(sse_ok(1));
            if let Some(t) = keepalive_at {
                b = b.at(t).client(StepKind::Comment { conn: ConnId(1) });
            }
            b.at(8_000_000)
                .server(stored(&a, 0, 0, None, Some(progress(0, 1))))
                .client(sse_event(1, with_id(ev(0, 0))))
                .build()
        };
        assert!(found(&stream(Some(4_000_000))).is_empty(), "a keep-alive at 4 s restarted it");
        let idle_past = found(&stream(None));
        assert_eq!(idle_past.len(), 1, "{idle_past:?}");
        assert!(idle_past[0].detail.contains("server.close_idle_standalone"), "{}", idle_past[0].detail);
    }

    /// A call's stream sent at 0.5 s, its head at 1 s; keep-alive comments at `comments` (µs);
    /// events stored (and received at once) at `events` (µs), each of the timer's
    /// kind, every 5 s.
    fn kept_alive(after_silence: bool, comments: &[u64], events: &[u64]) -> Vec<Violation> {
        let a = sid("A");
        let every = ServerBounds {
            keepalive_us: Some(5_000_000),
            keepalive_after_silence: after_silence,
            ..ServerBounds::default()
        };
        let mut frames: Vec<(u64, bool)> =
            comments.iter().map(|t| (*t, true)).chain(events.iter().map(|t| (*t, false))).collect();
        frames.sort();
        let mut b = TraceBuilder::new()
            .server(start(every))
            .at(500_000)
            .client(call_sent(1, Some(&a), 1, 0))
            .at(1_000_000)
            .client(sse_ok(1));
        for (seq, (t, comment)) in (0u32..).zip(frames) {
            b = b.at(t);
            b = if comment {
                b.client(StepKind::Comment { conn: ConnId(1) })
            } else {
                let event = SseEvent { data: Some(progress(0, seq)), ..with_id(ev(1, seq)) };
                b.server(stored(&a, 1, seq, Some(0), Some(progress(0, seq)))).client(sse_event(1, event))
            };
        }
        found(&b.build())
    }

    #[test]
    fn a_fixed_keepalive_timer_writes_its_comments_whatever_else_is_written() {
        // Due at 6 s and 11 s from the head (at 1 s at the latest): an event stored at 12 s comes
        // after both.
        assert!(kept_alive(false, &[6_000_000, 11_000_000], &[2_000_000, 7_000_000, 12_000_000]).is_empty());
        let missed = kept_alive(false, &[6_000_000], &[2_000_000, 7_000_000, 12_000_000]);
        assert_eq!(missed.len(), 1, "{missed:?}");
        assert!(missed[0].detail.contains("came after 1 keep-alive(s)"), "{}", missed[0].detail);
        assert!(missed[0].detail.contains("server.keepalive_timer = fixed"), "{}", missed[0].detail);
        assert_eq!(missed[0].subject, "session A c1");
        // One stored exactly at a comment's due time is not judged (which went first is open).
        assert!(kept_alive(false, &[6_000_000], &[11_000_000]).is_empty());
        // A timer that restarted at each write (after silence) wrote none between events 4 s apart.
        assert_eq!(kept_alive(false, &[], &[4_000_000, 8_000_000, 12_000_000]).len(), 1);
        assert!(kept_alive(true, &[], &[4_000_000, 8_000_000, 12_000_000]).is_empty(), "after silence: none due");
    }

    #[test]
    fn an_after_silence_keepalive_comes_only_after_the_interval_without_a_write() {
        assert!(kept_alive(true, &[8_000_000], &[3_000_000]).is_empty(), "5 s after the event");
        let soon = kept_alive(true, &[6_000_000], &[3_000_000]);
        assert_eq!(soon.len(), 1, "{soon:?}");
        assert!(soon[0].detail.contains("3.000s after an event"), "{}", soon[0].detail);
        assert!(soon[0].detail.contains("server.keepalive_timer = after-silence"), "{}", soon[0].detail);
        assert!(kept_alive(false, &[6_000_000], &[3_000_000]).is_empty(), "fixed: due at 6 s whatever was written");
    }

    #[test]
    fn no_keepalive_comes_sooner_than_the_interval_after_its_request_was_sent() {
        for after_silence in [false, true] {
            let soon = kept_alive(after_silence, &[3_000_000], &[]);
            assert_eq!(soon.len(), 1, "{soon:?}");
            assert!(soon[0].detail.contains("2.500s after its stream's request was sent"), "{}", soon[0].detail);
            assert!(kept_alive(after_silence, &[5_500_000], &[]).is_empty());
        }
    }

    #[test]
    fn an_event_whose_id_was_stored_only_after_it_arrived_is_not_judged_by_the_keepalive_rules() {
        // rmcp's shared priming id: the priming event, sent unstored at 2 s, carries the id a
        // notification is stored under at 12 s; the comment at 6 s follows the priming event.
        let a = sid("A");
        let every =
            ServerBounds { keepalive_us: Some(4_000_000), keepalive_after_silence: true, ..ServerBounds::default() };
        let trace = TraceBuilder::new()
            .server(start(every))
            .at(1_000_000)
            .client(get_standalone(1, &a))
            .client(sse_ok(1))
            .at(2_000_000)
            .client(sse_event(1, with_id(ev(0, 0))))
            .at(6_000_000)
            .client(StepKind::Comment { conn: ConnId(1) })
            .at(12_000_000)
            .server(stored(&a, 0, 0, None, Some(progress(0, 1))))
            .build();
        assert!(found(&trace).is_empty(), "{:?}", found(&trace));
        // Behind a hop that held the priming event until after the notification was stored: the
        // id's stored message is not the one that arrived.
        let held = TraceBuilder::new()
            .server(start(every))
            .at(1_000_000)
            .client(get_standalone(1, &a))
            .client(sse_ok(1))
            .at(12_000_000)
            .server(stored(&a, 0, 0, None, Some(progress(0, 1))))
            .at(13_000_000)
            .client(sse_event(1, SseEvent { data: None, ..with_id(ev(0, 0)) }))
            .client(StepKind::Comment { conn: ConnId(1) })
            .build();
        assert!(found(&held).is_empty(), "{:?}", found(&held));
        let mut same = held.clone();
        if let StepKind::Event { event, .. } = &mut same.steps[4].kind {
            event.data = Some(progress(0, 1));
        }
        assert_eq!(found(&same).len(), 1, "the notification itself, then a comment at once");
    }

    #[test]
    fn a_request_in_the_session_a_closing_give_up_forgot_departs_from_the_profile() {
        let (a, b) = (sid("A"), sid("B"));
        let start = |closes: bool| StepKind::ClientStart {
            restored: false,
            durable: false,
            by_class: false,
            max_attempts: Some(5),
            on_give_up: Some(if closes { OnGiveUp::CloseTransport } else { OnGiveUp::FailCall }),
        };
        let after = |closes: bool, then: Vec<StepKind>| {
            let mut t = TraceBuilder::new()
                .client(start(closes))
                .at(1_000_000)
                .client(call_sent(1, Some(&a), 1, 0))
                .at(10_000_000)
                .client(StepKind::StreamGivenUp { call: crate::ids::CallKey(0) });
            for (i, step) in (1..).zip(then) {
                t = t.at(10_000_000 + i * 1_000_000).client(step);
            }
            found(&t.build())
        };
        let sent = after(true, vec![get_standalone(2, &a)]);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert!(sent[0].detail.contains("on_give_up = close-transport"), "{}", sent[0].detail);
        assert!(sent[0].detail.contains("1.000s after it gave up call0's stream"), "{}", sent[0].detail);
        let failed = StepKind::AppError { call: crate::ids::CallKey(0), error: "connection closed".into() };
        assert!(after(false, vec![failed, get_standalone(2, &a)]).is_empty(), "fail-call keeps the session");
        assert!(after(true, vec![get_standalone(2, &b)]).is_empty(), "another session");
        assert!(after(true, vec![start(true), get_standalone(2, &a)]).is_empty(), "a restarted client");
    }

    #[test]
    fn a_given_up_call_is_failed_at_once_or_left_pending_as_its_profile_says() {
        let call = crate::ids::CallKey(0);
        let judged = |rule: OnGiveUp, next: StepKind| {
            let start = StepKind::ClientStart {
                restored: false,
                durable: false,
                by_class: false,
                max_attempts: Some(5),
                on_give_up: Some(rule),
            };
            let trace = TraceBuilder::new()
                .client(start)
                .at(10_000_000)
                .client(StepKind::StreamGivenUp { call })
                .client(next)
                .build();
            found(&trace)
        };
        let failed = || StepKind::AppError { call, error: "connection closed".into() };
        let noted = || StepKind::Decision { call: Some(call), outcome: None, action: None, error: Some("left".into()) };
        assert!(judged(OnGiveUp::FailCall, failed()).is_empty());
        let kept = judged(OnGiveUp::FailCall, noted());
        assert_eq!(kept.len(), 1, "{kept:?}");
        assert!(kept[0].detail.contains("did not fail it at once"), "{}", kept[0].detail);
        assert!(judged(OnGiveUp::LeavePending, noted()).is_empty());
        let resolved = judged(OnGiveUp::LeavePending, failed());
        assert_eq!(resolved.len(), 1, "{resolved:?}");
        assert!(resolved[0].detail.contains("on_give_up = leave-pending"), "{}", resolved[0].detail);
        // Another call's failure is not this call's.
        let other = StepKind::AppError { call: crate::ids::CallKey(1), error: "x".into() };
        assert!(judged(OnGiveUp::LeavePending, other).is_empty());
    }

    #[test]
    fn each_close_timer_ends_only_the_kind_of_stream_it_is_for() {
        let closed = |stream: u32, rule: CloseRule| {
            let step = StepKind::ServerClosedStream {
                conn: ConnId(3),
                session: sid("A"),
                stream: Some(StreamNo(stream)),
                rule,
                after_us: 60_000_000,
            };
            found(&TraceBuilder::new().server(step).build())
        };
        assert!(closed(0, CloseRule::IdleStandalone).is_empty());
        assert!(closed(2, CloseRule::RequestStream).is_empty());
        let idle = closed(2, CloseRule::IdleStandalone);
        assert_eq!(idle.len(), 1, "{idle:?}");
        assert!(idle[0].detail.contains("server.close_idle_standalone"), "{}", idle[0].detail);
        let request = closed(0, CloseRule::RequestStream);
        assert_eq!(request.len(), 1, "{request:?}");
        assert!(request[0].detail.contains("server.close_request_streams"), "{}", request[0].detail);
    }

    #[test]
    fn a_backoff_past_the_attempt_budget_or_numbered_zero_departs_from_the_profile() {
        let backoffs = |max: Option<u32>, attempts: &[u32]| {
            let mut b = TraceBuilder::new().client(StepKind::ClientStart {
                restored: false,
                durable: true,
                by_class: true,
                max_attempts: max,
                on_give_up: None,
            });
            for attempt in attempts {
                b = b.client(StepKind::Backoff { call: Some(crate::ids::CallKey(0)), attempt: *attempt, delay_us: 1 });
            }
            found(&b.build())
        };
        assert!(backoffs(Some(3), &[1, 2, 3]).is_empty());
        assert!(backoffs(None, &[1, 2, 300]).is_empty(), "no budget");
        let over = backoffs(Some(3), &[1, 2, 3, 4]);
        assert_eq!(over.len(), 1, "{over:?}");
        assert!(over[0].detail.contains("attempt 4, past the 3"), "{}", over[0].detail);
        let zero = backoffs(None, &[0]);
        assert_eq!(zero.len(), 1, "{zero:?}");
        assert_eq!(zero[0].subject, "call0");
    }

    /// Events 1-0..1-2 stored at 1, 2 and 3 s; a resume from 1-0 asked on connection 2 at 4 s
    /// (and on connection 3 too, which then ends as `twice` says, if it is given), answered by
    /// `answer` (its stream 1 finished or not); the two events after 1-0 reach the client, then
    /// `after` on the same connection.
    fn replayed_on(
        bounds: ServerBounds,
        answer: StepKind,
        twice: Option<ConnEnd>,
        after: &[StepKind],
    ) -> Vec<Violation> {
        replayed_by(None, bounds, answer, twice, after)
    }

    /// [`replayed_on`], the resume answered by replica `replica` of a fleet one process serves.
    fn replayed_by(
        replica: Option<u32>,
        bounds: ServerBounds,
        answer: StepKind,
        twice: Option<ConnEnd>,
        after: &[StepKind],
    ) -> Vec<Violation> {
        let a = sid("A");
        let mut b = TraceBuilder::new().server(start(bounds));
        for seq in 0..3 {
            b = b.at(1_000_000 * (1 + u64::from(seq))).server(stored(&a, 1, seq, Some(0), Some(progress(0, seq))));
        }
        b = b.at(4_000_000).client(get_resume(2, &a, ev(1, 0)));
        if let Some(end) = twice {
            b = b.client(get_resume(3, &a, ev(1, 0))).client(conn_end(3, end));
        }
        b = b.at(4_100_000);
        b = match replica {
            Some(replica) => b.replica(replica, answer),
            None => b.server(answer),
        };
        b = b.at(4_200_000).client(sse_ok(2));
        for seq in 1..3 {
            let event = SseEvent { data: Some(progress(0, seq)), ..with_id(ev(1, seq)) };
            b = b.client(sse_event(2, event));
        }
        for step in after {
            b = b.at(5_000_000);
            b = match step {
                StepKind::EventStored { .. } => b.server(step.clone()),
                _ => b.client(step.clone()),
            };
        }
        found(&b.build())
    }

    fn answered(replayed: u32, finished: bool) -> StepKind {
        let StepKind::Resume { session, last_event_id, stream, held, evicted, claimed_by, .. } =
            resume(&sid("A"), ev(1, 0), ResumeOutcome::Replayed { replayed })
        else {
            unreachable!("testkit::resume builds a resume step")
        };
        let outcome = ResumeOutcome::Replayed { replayed };
        StepKind::Resume { session, last_event_id, stream, outcome, held, evicted, claimed_by, finished }
    }

    #[test]
    fn a_connection_that_carried_more_of_the_old_events_than_its_resume_step_counts_departs() {
        let none = ServerBounds::default();
        assert!(replayed_on(none, answered(2, false), None, &[]).is_empty(), "two replayed, two counted");
        let over = replayed_on(none, answered(1, false), None, &[]);
        assert_eq!(over.len(), 1, "{over:?}");
        assert!(
            over[0].detail.contains("says it replayed 1 event(s), yet 2 events stored before"),
            "{}",
            over[0].detail
        );
        assert_eq!(over[0].subject, "session A c2");
        // Two connections asked the same resume: either could be the one answered, unless the
        // other was refused before its request went out.
        assert!(replayed_on(none, answered(1, false), Some(ConnEnd::Reset), &[]).is_empty());
        assert_eq!(replayed_on(none, answered(1, false), Some(ConnEnd::Refused), &[]).len(), 1);
    }

    #[test]
    fn the_resumed_connection_of_a_finished_stream_carries_nothing_after_the_replay_under_close() {
        let a = sid("A");
        let close = ServerBounds::default();
        let stay_open = ServerBounds { finished_resume_stays_open: true, ..ServerBounds::default() };
        let comment = StepKind::Comment { conn: ConnId(2) };
        let primed = SseEvent { data: None, ..with_id(ev(1, 3)) };
        let priming = [stored(&a, 1, 3, None, None), sse_event(2, primed)];
        for after in [&[comment][..], &priming[..]] {
            let late = replayed_on(close, answered(2, true), None, after);
            assert_eq!(late.len(), 1, "{late:?}");
            assert!(late[0].detail.contains("server.finished_resume = close"), "{}", late[0].detail);
            assert!(replayed_on(stay_open, answered(2, true), None, after).is_empty(), "stays open: {after:?}");
            assert!(replayed_on(close, answered(2, false), None, after).is_empty(), "live: {after:?}");
        }
        assert!(replayed_on(close, answered(2, true), None, &[]).is_empty(), "the replay alone");
        // One process serves every replica: its start, recorded with no replica index, holds
        // for the resume replica 2 answered.
        assert!(replayed_by(Some(2), stay_open, answered(2, true), None, &priming).is_empty());
        assert_eq!(replayed_by(Some(2), close, answered(2, true), None, &priming).len(), 1);
    }

    #[test]
    fn a_resume_that_took_over_the_standalone_stream_is_judged_by_its_idle_close() {
        let a = sid("A");
        let idle = ServerBounds { close_idle_standalone_us: Some(5_000_000), ..ServerBounds::default() };
        let departures = |stream: StreamNo| {
            let StepKind::Resume { session, last_event_id, held, evicted, claimed_by, finished, .. } =
                resume(&a, ev(0, 0), ResumeOutcome::Replayed { replayed: 0 })
            else {
                unreachable!("testkit::resume builds a resume step")
            };
            let outcome = ResumeOutcome::Replayed { replayed: 0 };
            let answer = StepKind::Resume {
                session,
                last_event_id,
                stream: Some(stream),
                outcome,
                held,
                evicted,
                claimed_by,
                finished,
            };
            let late = SseEvent { data: Some(progress(0, 1)), ..with_id(ev(0, 1)) };
            let trace = TraceBuilder::new()
                .server(start(idle))
                .at(1_000_000)
                .server(stored(&a, 0, 0, None, Some(progress(0, 0))))
                .at(2_000_000)
                .client(get_resume(2, &a, ev(0, 0)))
                .server(answer)
                .client(sse_ok(2))
                .at(9_000_000)
                .server(stored(&a, 0, 1, None, Some(progress(0, 1))))
                .client(sse_event(2, late))
                .build();
            found(&trace)
        };
        let late = departures(StreamNo::STANDALONE);
        assert_eq!(late.len(), 1, "{late:?}");
        assert!(late[0].detail.contains("server.close_idle_standalone"), "{}", late[0].detail);
        assert!(departures(StreamNo(1)).is_empty(), "a request's stream resumed: no idle close");
    }
}
