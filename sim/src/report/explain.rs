//! What happened in a run, in words, from its trace alone: how many times each tool ran for each
//! call. (Why — the chain of steps that led to a violation — is `crate::report::cause`.)
//!
//! Generic over the trace: nothing here knows a scenario family.

use mcpsim_model::ids::CallKey;
use mcpsim_model::trace::{StepKind, Trace};
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
        let sessions = if !self.sessions.is_empty() && self.sessions.iter().all(|s| s.is_empty()) {
            ", with no session".to_string()
        } else if self.sessions.len() > 1 {
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
        let step = violation.expect("the footer names it").step as usize;
        let (chain, _) = crate::report::cause::cause_chain(&trace.steps, step);
        let words: Vec<&str> = chain.iter().map(|c| c.text.as_str()).collect();
        let order = [
            "ran pay call0 (non-idempotent)",
            "cut c3",
            "re-initialize",
            "a re-initialization",
            "pay call0 AGAIN",
            "execution 2",
        ];
        let mut at = 0;
        for needle in order {
            let found = words[at..].iter().position(|w| w.contains(needle));
            at += found.unwrap_or_else(|| panic!("{needle:?} not in order in {words:#?}")) + 1;
        }
        assert_eq!(at, words.len(), "the chain stops at the violating step: {words:#?}");
    }
}
