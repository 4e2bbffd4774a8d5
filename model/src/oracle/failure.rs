//! `no-false-failure`: the application is never told a call failed — an error, not an unknown
//! outcome — while the call's side effect ran or its result exists on the server.
//!
//! An error tells the application the call did not happen, so it may run it again or report it as
//! not done (opencode#28186: a 60 s request timeout fired while progress kept arriving, and a
//! payment that had run was reported as a plain error). Only a non-idempotent call is judged:
//! running an idempotent one again is harmless, so an error about it misleads nobody. What the
//! server does after the application issued the call again (its own re-issue after the error)
//! belongs to the new attempt, not to the error.

use super::{sorted, Invariant, InvariantId, TraceIndex, Violation};
use crate::http::ServerMessage;
use crate::ids::{CallKey, SessionId};
use crate::time::{format_micros, Instant};
use crate::trace::StepKind;
use std::collections::BTreeMap;

pub(super) const NO_FALSE_FAILURE: Invariant = Invariant {
    id: InvariantId::NoFalseFailure,
    name: InvariantId::NoFalseFailure.name(),
    description: "The application is never told a non-idempotent call failed (an error, not an unknown outcome) \
                  while its side effect ran or its result exists on the server.",
    check: false_failures_in,
};

/// What the server did for a call: the first execution of its side effect, else its first stored
/// result.
struct Done<'a> {
    at: Instant,
    session: &'a SessionId,
    what: &'static str,
}

/// One violation per call, at its first error.
fn false_failures_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let ledger = ix.ledger();
    // Every execution of each call, with its step's position, in trace order.
    let mut done: BTreeMap<CallKey, Vec<(usize, Done<'_>)>> = BTreeMap::new();
    // The positions of each call's `AppCall` steps, in trace order.
    let mut issued: BTreeMap<CallKey, Vec<usize>> = BTreeMap::new();
    for (order, step) in ix.others() {
        let (call, session, what) = match &step.kind {
            StepKind::AppCall { call, .. } => {
                issued.entry(*call).or_default().push(order);
                continue;
            }
            StepKind::SideEffect { call, session, .. } => (*call, session, "its side effect ran"),
            StepKind::EventStored { message: Some(ServerMessage::ToolResult { call, .. }), session, .. } => {
                (*call, session, "its result was stored")
            }
            _ => continue,
        };
        done.entry(call).or_default().push((order, Done { at: step.at(), session, what }));
    }
    let mut violations: BTreeMap<CallKey, Violation> = BTreeMap::new();
    for (order, step) in ix.others() {
        let (call, error) = match &step.kind {
            StepKind::AppError { call, error } => (call, error.clone()),
            // A task that ended failed or cancelled is the call's failure as the application reads it.
            StepKind::AppTaskOutcome { call, task, status } if *status != crate::tasks::TaskStatus::Completed => {
                (call, format!("task {} {status:?}", task.0))
            }
            _ => continue,
        };
        if ledger.idempotent.get(call) != Some(&false) || violations.contains_key(call) {
            continue;
        }
        // The application's next issue of the call after the error starts a new attempt.
        let reissued = issued
            .get(call)
            .and_then(|at| at.get(at.partition_point(|issue| *issue < order)))
            .copied()
            .unwrap_or(usize::MAX);
        // In trace order: the first execution is before the re-issue, or none is.
        let before = done.get(call).and_then(|all| all.first()).filter(|(at, _)| *at < reissued);
        let Some((_, d)) = before else { continue };
        violations.insert(
            *call,
            Violation {
                invariant: InvariantId::NoFalseFailure,
                step: order,
                at: step.at(),
                subject: call.to_string(),
                detail: format!(
                    "the application was told {call} failed ({error:?}), but {} at {} {}: it must be told \
                     the outcome is unknown, or be handed the result",
                    d.what,
                    format_micros(d.at.0),
                    d.session.placed()
                ),
            },
        );
    }
    sorted(violations.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::trace::Trace;

    fn false_failures(trace: &Trace) -> Vec<Violation> {
        false_failures_in(&TraceIndex::new(trace))
    }

    /// call0 (non-idempotent unless told) issued at 1 ms; its side effect runs at 2 ms.
    fn ran(idempotent: bool) -> TraceBuilder {
        let a = sid("A");
        TraceBuilder::new().at(1_000).app(app_call(0, idempotent)).at(2_000).server(side_effect(&a, 2, 0))
    }

    #[test]
    fn an_error_for_a_payment_that_ran_is_a_false_failure() {
        let v = false_failures(&ran(false).at(60_000).app(app_error(0)).at(61_000).app(app_error(0)).build());
        assert_eq!(v.len(), 1, "one per call: {v:#?}");
        assert_eq!(
            (v[0].invariant, v[0].at, v[0].subject.as_str()),
            (InvariantId::NoFalseFailure, Instant(60_000), "call0")
        );
        assert!(v[0].detail.contains("its side effect ran at 0.002s"), "{}", v[0].detail);
    }

    #[test]
    fn an_unknown_outcome_a_result_or_an_idempotent_call_is_no_false_failure() {
        let a = sid("A");
        assert_eq!(false_failures(&ran(false).app(app_unknown(0)).build()), vec![]);
        assert_eq!(false_failures(&ran(false).app(app_result(0, &a, None)).build()), vec![]);
        assert_eq!(false_failures(&ran(true).app(app_error(0)).build()), vec![]);
    }

    #[test]
    fn an_execution_after_the_application_issued_the_call_again_is_the_new_attempts() {
        let a = sid("A");
        // Failed before it ran, issued again by the application, then run: a true failure.
        let reissued = TraceBuilder::new()
            .app(app_call(0, false))
            .at(5_000)
            .app(app_error(0))
            .at(6_000)
            .app(app_call(0, false))
            .at(7_000)
            .server(side_effect(&a, 3, 0))
            .build();
        assert_eq!(false_failures(&reissued), vec![]);
        // Run after the error but before the re-issue: the failed attempt ran after all.
        let late = TraceBuilder::new()
            .app(app_call(0, false))
            .at(5_000)
            .app(app_error(0))
            .at(5_500)
            .server(side_effect(&a, 2, 0))
            .at(6_000)
            .app(app_call(0, false))
            .build();
        assert_eq!(false_failures(&late).len(), 1);
    }

    #[test]
    fn an_error_for_a_call_that_never_ran_is_a_true_failure() {
        let trace = TraceBuilder::new().app(app_call(0, false)).at(5_000).app(app_error(0)).build();
        assert_eq!(false_failures(&trace), vec![]);
    }

    #[test]
    fn a_result_stored_with_no_side_effect_recorded_counts_too() {
        let a = sid("A");
        let trace = TraceBuilder::new()
            .app(app_call(0, false))
            .at(3_000)
            .server(stored(&a, 1, 4, Some(0), Some(tool_result(1, 0))))
            .at(4_000)
            .app(app_error(0))
            .build();
        let v = false_failures(&trace);
        assert_eq!(v.len(), 1);
        assert!(v[0].detail.contains("its result was stored"), "{}", v[0].detail);
    }

    #[test]
    fn a_task_that_ended_failed_or_cancelled_for_a_payment_that_ran_is_a_false_failure() {
        use crate::tasks::{TaskId, TaskStatus};
        let outcome = |status| StepKind::AppTaskOutcome { task: TaskId("t1".into()), call: CallKey(0), status };
        for (status, named) in [(TaskStatus::Failed, "Failed"), (TaskStatus::Cancelled, "Cancelled")] {
            let v = false_failures(&ran(false).at(60_000).app(outcome(status)).build());
            assert_eq!(v.len(), 1, "{v:#?}");
            assert_eq!((v[0].step, v[0].at, v[0].subject.as_str()), (2, Instant(60_000), "call0"));
            let told = format!("the application was told call0 failed (\"task t1 {named}\"), but its side effect ran");
            assert!(v[0].detail.starts_with(&told), "{}", v[0].detail);
        }
        // A completed task is the call's result.
        assert_eq!(false_failures(&ran(false).at(60_000).app(outcome(TaskStatus::Completed)).build()), vec![]);
    }
}
