//! The cause chain: what happened before a violating step, in words.
//!
//! Derived from the steps alone, whatever the invariant: faults and cut or broken connections,
//! process restarts, sessions that ended or were created again for the same client, decisions to
//! re-initialize, requests sent again, side effects run again, silent resumes and what the
//! application was told. The one cause chain: `run` and `explore` print it, the HTML page lists it.

use crate::report::timeline;
use mcpsim_model::decision::NextAction;
use mcpsim_model::http::{self, ClientMessage};
use mcpsim_model::ids::{CallKey, ConnId, SessionId};
use mcpsim_model::time::format_micros;
use mcpsim_model::trace::{ResumeOutcome, Step, StepKind};
use std::collections::{BTreeMap, BTreeSet};

/// One link of a cause chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// Index of the step in the trace.
    pub step: usize,
    /// Simulated time, µs.
    pub t: u64,
    /// Who did it (`client`, `lb`, `client1` in a multi-client trace).
    pub actor: String,
    /// What it did, in words.
    pub text: String,
}

impl Cause {
    /// `1m01.026s lb: cut c3 after 1m00.000s idle (step 17)`.
    pub fn line(&self) -> String {
        format!("{} {}: {} (step {})", format_micros(self.t), self.actor, self.text, self.step)
    }
}

/// The most links a chain keeps: the ones nearest the violation.
pub const MAX_CAUSES: usize = 16;

/// The steps up to and including `upto` that explain it, oldest first, with the step at `upto`
/// last, or, when `upto` stores an event that is later lost, followed by the step that made the
/// loss certain (see `settled_at`); at most [`MAX_CAUSES`] (the earlier ones are dropped; [`cause_chain`]'s second value
/// says how many). An `upto` past the end is read as the last step.
pub fn cause_chain(steps: &[Step], upto: usize) -> (Vec<Cause>, usize) {
    let Some(last) = steps.len().checked_sub(1) else {
        return (Vec::new(), 0);
    };
    let upto = upto.min(last);
    let mut walk = Walk::default();
    let mut causes = Vec::new();
    for (i, step) in steps[..=upto].iter().enumerate() {
        let text = walk.cause(step);
        let text = if i == upto { text.or_else(|| Some(timeline::describe(&step.kind))) } else { text };
        if let Some(text) = text {
            causes.push(Cause { step: i, t: step.t, actor: timeline::actor(step), text });
        }
    }
    if let Some(j) = settled_at(steps, upto) {
        let step = &steps[j];
        let text = format!("{}: from here the loss is certain", timeline::describe(&step.kind));
        causes.push(Cause { step: j, t: step.t, actor: timeline::actor(step), text });
    }
    let dropped = causes.len().saturating_sub(MAX_CAUSES);
    (causes.split_off(dropped), dropped)
}

/// When the violating step is an event being stored (an oracle names the first event the
/// application never got), the loss is not yet decided there: the step after it that decides it.
/// That is the first answer to a `Last-Event-ID` on the event's stream that skips events without
/// saying so (a silent resume at the head, a replay from the oldest kept event past a gap, an
/// empty answer: the same id gets the same answer from the same store), the end of the event's
/// session, or the end of the run with the event never delivered.
fn settled_at(steps: &[Step], upto: usize) -> Option<usize> {
    let StepKind::EventStored { session, stream, .. } = &steps.get(upto)?.kind else {
        return None;
    };
    let decides = |kind: &StepKind| match kind {
        StepKind::Resume { session: s, stream: on, outcome, .. } if s == session && on.is_none_or(|n| n == *stream) => {
            matches!(
                outcome,
                ResumeOutcome::SilentHead { .. }
                    | ResumeOutcome::FromOldest { skipped: 1.., .. }
                    | ResumeOutcome::Empty { .. }
            )
        }
        StepKind::SessionEnded { session: s, .. } => s == session,
        StepKind::RunEnd { .. } => true,
        _ => false,
    };
    steps.iter().enumerate().skip(upto + 1).find(|(_, s)| decides(&s.kind)).map(|(j, _)| j)
}

/// What has happened so far, to tell a first time from a repetition.
#[derive(Default)]
struct Walk {
    /// Sessions created per client name, in order.
    sessions: BTreeMap<String, Vec<SessionId>>,
    /// `tools/call` requests sent per (client index, call).
    sends: BTreeMap<(Option<u32>, CallKey), u32>,
    /// Side effects run per call.
    effects: BTreeMap<CallKey, u32>,
    /// Connections the load balancer cut (their reset says nothing new).
    cut: BTreeSet<ConnId>,
    client_starts: BTreeMap<Option<u32>, u32>,
    /// Whether anything but a server start has happened: until then every server start is a
    /// replica's first (several replicas each start their own process at time 0), not a restart.
    begun: bool,
}

impl Walk {
    /// The step in words if it belongs in a cause chain, updating what has happened.
    fn cause(&mut self, step: &Step) -> Option<String> {
        use StepKind::*;
        let described = || timeline::describe(&step.kind);
        let begun = self.begun;
        self.begun |= !matches!(step.kind, ServerStart { .. });
        match &step.kind {
            Fault { fault } => Some(format!("fault injected: {fault}")),
            LbIdleCut { conn, idle_us, hop } => {
                self.cut.insert(*conn);
                let who = timeline::at_hop(*hop);
                Some(format!("{who}cut {conn} after {} without a byte (its idle timeout)", format_micros(*idle_us)))
            }
            LbLifetimeCut { conn, hop, .. } | LbTimedOut { conn, hop, .. } if hop.is_some() => {
                self.cut.insert(*conn);
                Some(described())
            }
            StepKind::ConnEnd { conn, end } => match end {
                http::ConnEnd::Reset if self.cut.contains(conn) => None,
                http::ConnEnd::Reset | http::ConnEnd::Refused => Some(format!("{conn} broke: {end}")),
                http::ConnEnd::Clean | http::ConnEnd::Aborted => None,
            },
            ClientStart { restored, .. } => {
                let n = self.client_starts.entry(step.client).or_insert(0);
                *n += 1;
                (*n > 1).then(|| {
                    let state = if *restored { "its durable state restored" } else { "its state lost" };
                    format!("client process restarted, {state}")
                })
            }
            ServerStart { epoch, .. } => (*epoch > 0 && begun)
                .then(|| format!("server process restarted (epoch {epoch}): sessions in memory are gone")),
            Decision { action: Some(NextAction::Reinitialize), .. } | Decision { error: Some(_), .. } => {
                Some(described())
            }
            SessionCreated { session, client } => {
                let earlier = self.sessions.entry(client.clone()).or_default();
                let text = match earlier.last() {
                    Some(before) => format!(
                        "session {session} created for {client}: a re-initialization (its session {before} came before)"
                    ),
                    None => format!("session {session} created for {client}"),
                };
                earlier.push(session.clone());
                Some(text)
            }
            SessionEnded { .. } | Rejected { .. } | RefusedAfterHead { .. } => Some(described()),
            // A proxy's own 4xx: what the client is about to take for the server's word.
            LbAnswered { status, .. } if status.0 < 500 => Some(described()),
            // A request sent again below the client model (its HTTP library, the balancer), and
            // what sets it up: a kept-alive connection closed under a request.
            HttpResent { .. } | LbResent { .. } | KeepAliveClosed { .. } | ClientTimedOut { .. } => Some(described()),
            // The server ending a stream's connection on a timer of its own: what a re-attachment
            // after it answers.
            ServerClosedStream { .. } => Some(described()),
            // What the server dropped: the answer a call never got.
            EventDropped { .. } => Some(described()),
            Send { request, .. } => {
                let Some(ClientMessage::CallTool { id, call }) = &request.body else {
                    return None;
                };
                let n = self.sends.entry((step.client, call.key)).or_insert(0);
                *n += 1;
                let session = request.session.as_ref().map(|s| format!(" in session {s}")).unwrap_or_default();
                Some(match *n {
                    1 => format!("sent {} {} ({id}){session}", call.tool, call.key),
                    n => format!("sent {} {} AGAIN ({id}){session}: send {n} of the same call", call.tool, call.key),
                })
            }
            SideEffect { session, call, tool, idempotent, .. } => {
                let n = self.effects.entry(*call).or_insert(0);
                *n += 1;
                let kind = if *idempotent { "idempotent" } else { "non-idempotent" };
                Some(match *n {
                    1 => format!("ran {tool} {call} ({kind}) {}", session.placed()),
                    n => format!("ran {tool} {call} ({kind}) AGAIN {}: execution {n}", session.placed()),
                })
            }
            Resume { outcome, .. } => match outcome {
                ResumeOutcome::Replayed { .. }
                | ResumeOutcome::Empty { .. }
                | ResumeOutcome::FromOldest { skipped: 0, .. } => None,
                ResumeOutcome::Rejected { .. }
                | ResumeOutcome::SilentHead { .. }
                | ResumeOutcome::FromOldest { .. } => Some(described()),
            },
            AppCall { .. }
            | AppGap { .. }
            | AppUnknownOutcome { .. }
            | AppError { .. }
            | AppSessionLost { .. }
            | AppReinitialize { .. }
            | AppStreamLost { .. } => Some(described()),
            _ => None,
        }
    }
}
