//! What happened in a run and why, in words, from its trace alone: how many times each tool ran
//! for each call, and the chain of steps that led to a violation — the faults and cuts, the
//! session re-initializations, the re-sent calls and the repeated executions before it.
//!
//! Generic over the trace: nothing here knows a scenario family.

use mcpsim_model::decision::NextAction;
use mcpsim_model::http::{self, ClientMessage};
use mcpsim_model::ids::CallKey;
use mcpsim_model::time::format_micros;
use mcpsim_model::trace::{ResumeOutcome, SessionEndReason, Step, StepKind, Trace};
use std::collections::BTreeMap;

/// How often one call's tool ran (its `SideEffect` steps).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Executions {
    pub tool: String,
    pub call: CallKey,
    pub idempotent: bool,
    /// Executions, over every session.
    pub times: usize,
    /// The sessions it ran in, in order, one entry per execution.
    pub sessions: Vec<String>,
}

impl Executions {
    /// `the pay tool ran 6 times for call0 (non-idempotent: once was expected), in sessions 0-1, …`.
    pub fn sentence(&self) -> String {
        let times = match self.times {
            1 => "once".to_string(),
            2 => "twice".to_string(),
            n => format!("{n} times"),
        };
        let kind = if self.idempotent { "idempotent" } else { "non-idempotent: once was expected" };
        let sessions = if self.sessions.len() > 1 {
            format!(", in sessions {}", self.sessions.join(", "))
        } else {
            self.sessions.first().map(|s| format!(", in session {s}")).unwrap_or_default()
        };
        format!("the {} tool ran {times} for {} ({kind}){sessions}", self.tool, self.call)
    }
}

/// Every call's executions, in call order.
pub fn executions(trace: &Trace) -> Vec<Executions> {
    let mut by_call: BTreeMap<CallKey, Executions> = BTreeMap::new();
    for step in &trace.steps {
        if let StepKind::SideEffect { session, call, tool, idempotent, .. } = &step.kind {
            let e = by_call.entry(*call).or_insert_with(|| Executions {
                tool: tool.clone(),
                call: *call,
                idempotent: *idempotent,
                times: 0,
                sessions: vec![],
            });
            e.times += 1;
            e.sessions.push(session.to_string());
        }
    }
    by_call.into_values().collect()
}

/// One link of a cause chain: when, and what happened, in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    pub t: u64,
    pub what: String,
}

impl Cause {
    /// `  1m01.026s  the load balancer cut c3 after 1m00.000s idle`.
    pub fn line(&self) -> String {
        format!("{:>11}  {}", format_micros(self.t), self.what)
    }
}

/// The steps up to and including simulated time `until` (µs) that explain a violation there:
/// faults and idle cuts, server restarts, sessions ending, the client's decisions to
/// re-initialize, new sessions after the first, calls sent again, tools run again, silent or
/// refused resumptions, gaps, lost sessions and unknown outcomes. Other steps are left out.
pub fn cause_chain(trace: &Trace, until: u64) -> Vec<Cause> {
    let mut chain = Vec::new();
    let mut sessions_created = 0usize;
    let mut sent: BTreeMap<CallKey, usize> = BTreeMap::new();
    let mut ran: BTreeMap<CallKey, usize> = BTreeMap::new();
    for step in trace.steps.iter().take_while(|s| s.t <= until) {
        if let Some(what) = cause(step, &mut sessions_created, &mut sent, &mut ran) {
            chain.push(Cause { t: step.t, what });
        }
    }
    chain
}

fn nth(n: usize) -> String {
    match n {
        1 => "1st".into(),
        2 => "2nd".into(),
        3 => "3rd".into(),
        n => format!("{n}th"),
    }
}

fn who(step: &Step, name: &str) -> String {
    match step.client {
        Some(c) => format!("{name} {c}"),
        None => name.to_string(),
    }
}

fn cause(
    step: &Step,
    sessions_created: &mut usize,
    sent: &mut BTreeMap<CallKey, usize>,
    ran: &mut BTreeMap<CallKey, usize>,
) -> Option<String> {
    use StepKind::*;
    match &step.kind {
        Fault { fault } => Some(format!("fault injected: {fault}")),
        LbIdleCut { conn, idle_us } => Some(format!(
            "the load balancer cut {conn} after {} without traffic (its idle timeout)",
            format_micros(*idle_us)
        )),
        ServerStart { epoch } if *epoch > 0 => Some("the server process restarted, its memory lost".to_string()),
        SessionEnded { session, reason } => {
            let why = match reason {
                SessionEndReason::IdleExpired => "expired (idle TTL)",
                SessionEndReason::Deleted => "was deleted",
                SessionEndReason::ServerRestart => "was lost in the server restart",
            };
            Some(format!("session {session} {why}"))
        }
        Decision { call, action: Some(NextAction::Reinitialize), .. } => {
            let about = call.map(|c| format!(" for {c}")).unwrap_or_default();
            Some(format!("the {} decided to re-initialize{about} (a new session)", who(step, "client")))
        }
        SessionCreated { session, client } => {
            *sessions_created += 1;
            (*sessions_created > 1)
                .then(|| format!("session {session} created for {client}: the client re-initialized"))
        }
        Send { request, .. } => {
            let Some(ClientMessage::CallTool { call, .. }) = &request.body else { return None };
            let n = sent.entry(call.key).or_default();
            *n += 1;
            let session = request.session.as_ref().map(|s| format!(" in session {s}")).unwrap_or_default();
            (*n > 1).then(|| format!("{} re-sent ({} time){session}", call.key, nth(*n)))
        }
        SideEffect { call, tool, session, idempotent, .. } => {
            let n = ran.entry(*call).or_default();
            *n += 1;
            let kind = if *idempotent { "" } else { ", NON-IDEMPOTENT" };
            Some(format!("the server ran {tool} for {call} ({} time{kind}) in session {session}", nth(*n)))
        }
        Resume { session, last_event_id, outcome, .. } => match outcome {
            ResumeOutcome::SilentHead { skipped } => Some(format!(
                "a resume of {session} after {last_event_id} SILENTLY skipped {skipped} event(s) (resumed at the head)"
            )),
            ResumeOutcome::FromOldest { skipped, .. } => Some(format!(
                "a resume of {session} after {last_event_id} SILENTLY skipped {skipped} event(s) (from the oldest kept)"
            )),
            ResumeOutcome::Rejected { status, .. } => {
                Some(format!("a resume of {session} after {last_event_id} was rejected ({status})"))
            }
            _ => None,
        },
        ConnEnd { conn, end: http::ConnEnd::Refused } => Some(format!("{conn} could not connect")),
        AppGap { .. } | AppUnknownOutcome { .. } | AppSessionLost { .. } | AppStreamLost { .. } => {
            Some(crate::report::timeline::describe(&step.kind))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::artifacts::parse_trace;
    use std::path::Path;

    const FIRST_INCIDENT: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../traces/no-duplicate-execution--naive--reference--long-tool--88eec5a2.jsonl"
    );

    fn first_incident() -> Trace {
        let text = std::fs::read_to_string(FIRST_INCIDENT).expect("the corpus holds the first incident");
        parse_trace(Path::new(FIRST_INCIDENT), &text).expect("a valid trace")
    }

    #[test]
    fn the_first_incident_counts_six_payments() {
        let runs = executions(&first_incident());
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].tool.as_str(), runs[0].times, runs[0].idempotent), ("pay", 6, false));
        assert!(runs[0].sentence().starts_with("the pay tool ran 6 times for call0 (non-idempotent"), "{runs:?}");
    }

    #[test]
    fn the_first_incidents_chain_is_cut_reinitialize_resend_run_again() {
        let trace = first_incident();
        let violation = trace.footer.as_ref().unwrap().verdict.iter().find(|v| v.invariant == "no-duplicate-execution");
        let chain = cause_chain(&trace, violation.expect("the footer names it").t);
        let words: Vec<&str> = chain.iter().map(|c| c.what.as_str()).collect();
        let order =
            ["ran pay for call0 (1st", "load balancer cut", "re-initialize", "re-initialized", "re-sent", "(2nd"];
        let mut at = 0;
        for needle in order {
            let found = words[at..].iter().position(|w| w.contains(needle));
            at += found.unwrap_or_else(|| panic!("{needle:?} not in order in {words:#?}")) + 1;
        }
        assert_eq!(at, words.len(), "the chain stops at the violating step: {words:#?}");
    }
}
