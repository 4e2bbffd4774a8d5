//! `no-duplicate-execution`: a non-idempotent tool call runs its side effect at most once.

use super::{sorted, CallLedger, Invariant, InvariantId, TraceIndex, Violation};
use crate::ids::{CallKey, SessionId};
use crate::time::{format_micros, Instant};
use crate::trace::{StepKind, Trace};
use std::collections::BTreeMap;

pub(super) const NO_DUPLICATE_EXECUTION: Invariant = Invariant {
    id: InvariantId::NoDuplicateExecution,
    name: InvariantId::NoDuplicateExecution.name(),
    description: "A tool call the application declared non-idempotent runs its side effect at most once, across \
                  all sessions and server restarts.",
    check: duplicate_executions_in,
};

/// One run of a side effect.
struct Execution<'a> {
    at: Instant,
    /// Index of its `SideEffect` step.
    order: usize,
    session: &'a SessionId,
    /// What the server's tool table said; used only for a call the application never issued.
    idempotent: bool,
}

/// One violation per non-idempotent call that ran more than once, at its second run.
pub(super) fn duplicate_executions(trace: &Trace) -> Vec<Violation> {
    duplicate_executions_in(&TraceIndex::new(trace))
}

/// [`duplicate_executions`] over a shared index.
pub(super) fn duplicate_executions_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let ledger = ix.ledger();
    let mut runs: BTreeMap<CallKey, Vec<Execution<'_>>> = BTreeMap::new();
    for (order, step) in ix.others() {
        if let StepKind::SideEffect { session, call, idempotent, .. } = &step.kind {
            runs.entry(*call).or_default().push(Execution { at: step.at(), order, session, idempotent: *idempotent });
        }
    }
    let violations = runs
        .into_iter()
        .filter(|(call, execs)| execs.len() > 1 && !declared_idempotent(ledger, *call, execs))
        .map(|(call, execs)| Violation {
            invariant: InvariantId::NoDuplicateExecution,
            step: execs[1].order,
            at: execs[1].at,
            subject: call.to_string(),
            detail: format!("non-idempotent {call} ran {} times: {}", execs.len(), list_runs(&execs)),
        })
        .collect();
    sorted(violations)
}

/// The application's word decides; the server's only when the application never issued the call.
fn declared_idempotent(ledger: &CallLedger, call: CallKey, execs: &[Execution<'_>]) -> bool {
    match ledger.idempotent.get(&call) {
        Some(idempotent) => *idempotent,
        None => execs.iter().all(|e| e.idempotent),
    }
}

/// `in session A at 1.000s, in session B at 5.000s`.
fn list_runs(execs: &[Execution<'_>]) -> String {
    execs.iter().map(|e| format!("{} at {}", e.session.placed(), format_micros(e.at.0))).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    fn twice(idempotent: bool) -> Trace {
        let (a, b) = (sid("A"), sid("B"));
        TraceBuilder::new()
            .at(1_000)
            .app(app_call(0, idempotent))
            .at(2_000)
            .server(side_effect(&a, 1, 0))
            .at(5_000)
            .server(side_effect(&b, 1, 0))
            .build()
    }

    #[test]
    fn a_non_idempotent_call_run_twice_is_reported_at_the_second_run() {
        let v = duplicate_executions(&twice(false));
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].invariant, v[0].step, v[0].at, v[0].subject.as_str()),
            (InvariantId::NoDuplicateExecution, 2, Instant(5_000), "call0")
        );
        assert_eq!(v[0].detail, "non-idempotent call0 ran 2 times: in session A at 0.002s, in session B at 0.005s");
    }

    #[test]
    fn an_idempotent_call_may_run_twice_and_a_single_run_is_fine() {
        assert_eq!(duplicate_executions(&twice(true)), vec![]);
        let once = TraceBuilder::new().app(app_call(0, false)).server(side_effect(&sid("A"), 1, 0)).build();
        assert_eq!(duplicate_executions(&once), vec![]);
    }

    #[test]
    fn without_an_app_call_the_servers_idempotency_decides() {
        let a = sid("A");
        let trace = TraceBuilder::new().server(side_effect(&a, 1, 3)).server(side_effect(&a, 2, 3)).build();
        assert_eq!(duplicate_executions(&trace).len(), 1);
    }
}
