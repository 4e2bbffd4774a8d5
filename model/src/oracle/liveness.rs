//! `every-call-resolves`: the application learns how each call ended, once, by the deadline.

use super::{final_state, liveness_step, sorted, Invariant, Resolution, Violation};
use crate::ids::CallKey;
use crate::time::{format_micros, Instant};
use crate::trace::{StepKind, Trace};
use std::collections::{BTreeMap, VecDeque};

pub(super) const EVERY_CALL_RESOLVES: Invariant = Invariant {
    name: "every-call-resolves",
    description: "Every call the application issues is resolved (result, error or unknown outcome) by the liveness \
                  deadline, and resolved only once.",
    check: unresolved_calls,
};

/// By when calls must be resolved: the `Liveness` deadline, else the end of the run.
fn deadline(trace: &Trace) -> Option<Instant> {
    liveness_step(trace).map(|(_, deadline)| deadline).or_else(|| final_state(trace).map(|end| end.at))
}

/// Each `AppCall` opens one issue of its call (the application may issue a key again after it
/// was resolved); each resolution settles the oldest open issue. A call issued after the
/// deadline is not judged for liveness: the run gave it no time.
fn unresolved_calls(trace: &Trace) -> Vec<Violation> {
    let deadline = deadline(trace).unwrap_or(Instant(u64::MAX));
    let mut open: BTreeMap<CallKey, VecDeque<Instant>> = BTreeMap::new();
    let mut settled: BTreeMap<CallKey, (Instant, Resolution)> = BTreeMap::new();
    let mut violations = Vec::new();
    for step in &trace.steps {
        if let StepKind::AppCall { call, .. } = &step.kind {
            open.entry(*call).or_default().push_back(step.at());
        }
        let Some((call, how)) = Resolution::of(&step.kind) else { continue };
        match open.get_mut(&call).and_then(VecDeque::pop_front) {
            Some(issued) if issued <= deadline && step.at() > deadline => {
                violations.push(late(call, issued, deadline, Some(step.at())));
            }
            Some(_) => {}
            None => violations.push(resolved_again(call, step.at(), how, settled.get(&call))),
        }
        settled.insert(call, (step.at(), how));
    }
    for (call, issues) in open {
        violations
            .extend(issues.into_iter().filter(|issued| *issued <= deadline).map(|i| late(call, i, deadline, None)));
    }
    sorted(violations)
}

fn late(call: CallKey, issued: Instant, deadline: Instant, resolved: Option<Instant>) -> Violation {
    let when = match resolved {
        Some(t) => format!("was resolved only at {}", format_micros(t.0)),
        None => "was never resolved".to_string(),
    };
    Violation {
        invariant: EVERY_CALL_RESOLVES.name,
        at: deadline,
        subject: call.to_string(),
        detail: format!(
            "{call}, issued at {}, {when}: the deadline was {}",
            format_micros(issued.0),
            format_micros(deadline.0)
        ),
    }
}

fn resolved_again(call: CallKey, at: Instant, how: Resolution, before: Option<&(Instant, Resolution)>) -> Violation {
    let detail = match before {
        Some((t, first)) => format!(
            "the application was told the outcome of {call} twice: {} at {}, then {} at {}",
            first.name(),
            format_micros(t.0),
            how.name(),
            format_micros(at.0)
        ),
        None => format!("the application was handed {} for {call}, which it never issued", how.name()),
    };
    Violation { invariant: EVERY_CALL_RESOLVES.name, at, subject: call.to_string(), detail }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    fn call_resolved_at(t: Option<u64>, liveness_deadline: Option<u64>) -> Trace {
        let mut b = TraceBuilder::new().at(1_000).app(app_call(0, true));
        if let Some(deadline) = liveness_deadline {
            b = b.at(2_000).run(StepKind::Liveness { deadline });
        }
        if let Some(t) = t {
            b = b.at(t).app(app_unknown(0));
        }
        b.at(20_000).run(run_end(None, &[])).build()
    }

    #[test]
    fn a_call_resolved_by_the_deadline_is_fine() {
        assert_eq!(unresolved_calls(&call_resolved_at(Some(5_000), Some(10_000))), vec![]);
        assert_eq!(unresolved_calls(&call_resolved_at(Some(15_000), None)), vec![]);
    }

    #[test]
    fn an_unresolved_or_late_call_is_reported_at_the_deadline() {
        let never = unresolved_calls(&call_resolved_at(None, Some(10_000)));
        assert_eq!(never.len(), 1);
        assert_eq!(
            (never[0].invariant, never[0].at, never[0].subject.as_str()),
            ("every-call-resolves", Instant(10_000), "call0")
        );
        assert!(never[0].detail.contains("never resolved"));
        let late = unresolved_calls(&call_resolved_at(Some(15_000), Some(10_000)));
        assert_eq!(late[0].at, Instant(10_000));
        assert!(late[0].detail.contains("resolved only at 0.015s"), "{}", late[0].detail);
        // Without a Liveness step the end of the run is the deadline.
        let at_end = unresolved_calls(&call_resolved_at(None, None));
        assert_eq!(at_end[0].at, Instant(20_000));
    }

    #[test]
    fn a_call_resolved_twice_is_reported_at_the_second_resolution() {
        let a = sid("A");
        let trace = TraceBuilder::new()
            .app(app_call(0, false))
            .at(1_000)
            .app(app_result(0, &a, None))
            .at(2_000)
            .app(app_unknown(0))
            .build();
        let v = unresolved_calls(&trace);
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].at, v[0].subject.as_str()), (Instant(2_000), "call0"));
        assert!(v[0].detail.contains("a result at 0.001s, then an unknown outcome at 0.002s"), "{}", v[0].detail);
    }

    #[test]
    fn a_call_issued_again_may_be_resolved_again() {
        let trace = TraceBuilder::new()
            .app(app_call(0, false))
            .app(app_error(0))
            .app(app_call(0, false))
            .app(app_result(0, &sid("A"), None))
            .build();
        assert_eq!(unresolved_calls(&trace), vec![]);
    }
}
