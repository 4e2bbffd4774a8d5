//! The oracles' cost grows with the steps alone: each invariant reads every step a fixed number
//! of times, however long the trace. Counted, not timed ([`TraceIndex::steps_read`]): a scan of
//! the steps per step — per error, per session, per client — makes the count per step grow with
//! the trace, and the test below fails.

use super::testkit::*;
use super::{InvariantId, TraceIndex, INVARIANTS};
use crate::http::Status;
use crate::ids::{CallKey, RequestId};
use crate::trace::{SessionEndReason, StepKind, ToolEnd, Trace};
use std::collections::BTreeSet;

/// `blocks` calls one after the other, each in its own session and of one of two clients, each
/// doing what makes the invariants work: a call that runs, events stored and some lost, a gap, a
/// resume answered 404, reconnects, an event handed over through the wrong session, a second run
/// of the side effect, a tool cancelled under an idle expiry, then an error (never re-issued, so
/// a scan for the re-issue would run to the end of the trace). Every client keeps a dead session
/// at the end.
fn long_trace(blocks: u32) -> Trace {
    let mut b = TraceBuilder::new().run(StepKind::Bounds { max_reconnects_per_hour: 3, max_delivery_delay_us: None });
    for call in 0..blocks {
        let s = sid(&format!("S{call}"));
        let conn = u64::from(call) * 10;
        b = b
            .at(u64::from(call) * 60_000_000)
            .by(call % 2)
            .server(session_created(&s, &format!("app-{}", call % 2)))
            .app(app_call(call, false))
            .client(get_standalone(conn, &s))
            .client(response(conn, Status::OK))
            .server(side_effect(&s, 1, call))
            .stored_range(&s, 1, Some(call), 1..=12)
            .delivered_range(&s, 1, Some(call), [1, 2, 3, 5, 6, 9])
            .app(app_gap(&s, Some(ev(1, 3)), ev(1, 4)))
            .server(stored(&s, 1, 13, Some(call), Some(tool_result(1, call))))
            .client(get_resume(conn + 1, &s, ev(1, 6)))
            .client(response(conn + 1, Status::NOT_FOUND))
            .client(get_resume(conn + 2, &s, ev(1, 6)))
            .client(response(conn + 2, Status::OK))
            .app(app_event(&s, ev(7, 7), Some(call)))
            .server(side_effect(&s, 2, call))
            .server(StepKind::SessionEnded {
                session: s.clone(),
                reason: SessionEndReason::IdleExpired,
                idle_ttl_us: None,
            })
            .server(StepKind::ToolEnded {
                session: s.clone(),
                request: RequestId(1),
                call: CallKey(call),
                end: ToolEnd::Cancelled,
            })
            .app(app_error(call));
    }
    let last = |client: u32| sid(&format!("S{}", blocks.saturating_sub(2) + client));
    b.run(StepKind::Liveness { deadline: u64::from(blocks) * 60_000_000 })
        .at(u64::from(blocks) * 60_000_000 + 1)
        .run(run_end_of_clients(&[Some(&last(0)), Some(&last(1))], &[]))
        .build()
}

/// Steps read per step by every invariant over one index, and the invariants broken.
fn reads_per_step(blocks: u32) -> (f64, BTreeSet<InvariantId>, usize) {
    let trace = long_trace(blocks);
    let ix = TraceIndex::new(&trace);
    let violations: Vec<_> = INVARIANTS.iter().flat_map(|i| (i.check)(&ix)).collect();
    let broken = violations.iter().map(|v| v.invariant).collect();
    (ix.steps_read() as f64 / ix.len() as f64, broken, violations.len())
}

#[test]
fn every_step_is_read_a_fixed_number_of_times_whatever_the_length_of_the_trace() {
    let (short, broken_short, found_short) = reads_per_step(8);
    let (long, broken_long, found_long) = reads_per_step(400);
    // The trace does what each invariant judges, and more of it the longer it is.
    assert_eq!(broken_short, broken_long);
    assert!(broken_long.len() >= 6, "{broken_long:?}");
    assert!(found_long > found_short * 10, "{found_short} → {found_long}");
    // 50 times the steps, the same passes: a scan per block would multiply them by ~50.
    assert!(long <= short * 1.05, "steps read per step: {short:.2} at 8 blocks, {long:.2} at 400");
    // One pass over every step, then the few steps other than events (9.2 here, where most
    // steps are not events): passes over the whole trace per invariant would make it ~20.
    assert!(long < 15.0, "steps read per step: {long:.2}");
    // And every step is read at least once: the count counts.
    assert!(short >= 1.0, "steps read per step: {short:.2}");
}
