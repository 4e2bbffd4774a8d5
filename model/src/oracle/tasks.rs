//! The invariants of the second era: `no-orphaned-task`, `task-result-delivered` (the Tasks
//! extension, `crate::tasks`) and `era-consistent` (`crate::era`). They read only the era and task
//! steps (`EraServed`, `TaskCreated`, …), so a trace without them (every legacy trace) is silent.

use super::{Invariant, InvariantId, TraceIndex, Violation};
use crate::era::Era;
use crate::ids::{ConnId, RequestId};
use crate::tasks::TaskId;
use crate::trace::StepKind;
use std::collections::{BTreeMap, BTreeSet};

pub(super) const NO_ORPHANED_TASK: Invariant = Invariant {
    id: InvariantId::NoOrphanedTask,
    name: InvariantId::NoOrphanedTask.name(),
    description: "No task works, or holds a result, that no client holds the id of (its CreateTaskResult never \
                  arrived, or the client forgot the id), and no task's work runs on after its record is gone.",
    check: orphaned_tasks_in,
};

pub(super) const TASK_RESULT_DELIVERED: Invariant = Invariant {
    id: InvariantId::TaskResultDelivered,
    name: InvariantId::TaskResultDelivered.name(),
    description: "Every task whose id a client received has its outcome reach the application (before its record \
                  is gone, or from an answer already on its way when it went), or the application is told the task \
                  is lost.",
    check: undelivered_tasks_in,
};

pub(super) const ERA_CONSISTENT: Invariant = Invariant {
    id: InvariantId::EraConsistent,
    name: InvariantId::EraConsistent.name(),
    description: "Each request is served under one era, and a modern (2026-07-28) request is served in no \
                  legacy session.",
    check: era_inconsistencies_in,
};

/// What the trace says of one task.
#[derive(Default)]
struct TaskLife {
    created: Option<usize>,
    received: Option<usize>,
    forgotten: Option<usize>,
    ended: Option<usize>,
    removed: Option<(usize, bool)>,
    outcome: Option<usize>,
    lost_told: Option<usize>,
}

fn lives(ix: &TraceIndex<'_>) -> (BTreeMap<TaskId, TaskLife>, usize) {
    let mut lives: BTreeMap<TaskId, TaskLife> = BTreeMap::new();
    let mut last = 0;
    for (order, step) in ix.others() {
        last = order;
        let (task, set): (&TaskId, fn(&mut TaskLife, usize, &StepKind)) = match &step.kind {
            StepKind::TaskCreated { task, .. } => (task, |l, o, _| l.created = l.created.or(Some(o))),
            StepKind::TaskIdReceived { task, .. } => (task, |l, o, _| l.received = l.received.or(Some(o))),
            StepKind::TaskIdForgotten { task } => (task, |l, o, _| l.forgotten = l.forgotten.or(Some(o))),
            StepKind::TaskEnded { task, .. } => (task, |l, o, _| l.ended = l.ended.or(Some(o))),
            StepKind::TaskRecordRemoved { task, .. } => (task, |l, o, k| {
                if let StepKind::TaskRecordRemoved { work_running, .. } = k {
                    l.removed = l.removed.or(Some((o, *work_running)));
                }
            }),
            StepKind::AppTaskOutcome { task, .. } => (task, |l, o, _| l.outcome = l.outcome.or(Some(o))),
            StepKind::AppTaskLost { task, .. } => (task, |l, o, _| l.lost_told = l.lost_told.or(Some(o))),
            _ => continue,
        };
        set(lives.entry(task.clone()).or_default(), order, &step.kind);
    }
    (lives, last)
}

fn violation(ix: &TraceIndex<'_>, invariant: InvariantId, order: usize, subject: String, detail: String) -> Violation {
    let at = ix.trace.steps.get(order).map(|s| s.at()).unwrap_or_default();
    Violation { invariant, step: order, at, subject, detail }
}

/// A task is orphaned when its work runs, or its result is held, while no client holds its id:
/// the `CreateTaskResult` never arrived (judged where the work ended, or at the last step), or
/// the id was forgotten before the outcome was seen; or when its work runs on after the record
/// was removed (nobody can ever see its outcome).
fn orphaned_tasks_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let (lives, last) = lives(ix);
    let mut out = Vec::new();
    for (task, l) in &lives {
        let Some(created) = l.created else { continue };
        let subject = format!("task {}", task.0);
        if let Some((removed, true)) = l.removed {
            out.push(violation(
                ix,
                InvariantId::NoOrphanedTask,
                removed,
                subject,
                "its record was removed while its work still ran: the work goes on for nobody".into(),
            ));
            continue;
        }
        match (l.received, l.forgotten) {
            (None, _) => {
                let at = l.ended.unwrap_or(last).max(created);
                out.push(violation(
                    ix,
                    InvariantId::NoOrphanedTask,
                    at,
                    subject,
                    "its CreateTaskResult never reached a client: the work ran for an id nobody holds".into(),
                ));
            }
            (Some(_), Some(forgot)) => {
                let settled = [l.outcome, l.lost_told].into_iter().flatten().min();
                let gone = l.removed.map(|(o, _)| o);
                if settled.is_none_or(|s| s > forgot) && gone.is_none_or(|g| g > forgot) {
                    out.push(violation(
                        ix,
                        InvariantId::NoOrphanedTask,
                        forgot,
                        subject,
                        "the client forgot the id while the task still worked or held its result".into(),
                    ));
                }
            }
            (Some(_), None) => {}
        }
    }
    out
}

/// A task whose id a client received must have its outcome delivered before its record goes, or
/// the application told it is lost. An outcome that lands after the removal was on its way before
/// it (a poll answered just before the TTL ran out, its answer still on the wire): the
/// application got it, so it counts. A task still working at the end of the run is not judged
/// here (`every-call-resolves` is).
fn undelivered_tasks_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let (lives, last) = lives(ix);
    let mut out = Vec::new();
    for (task, l) in &lives {
        if l.received.is_none() || l.lost_told.is_some() {
            continue;
        }
        let subject = format!("task {}", task.0);
        if let (Some((removed, _)), None) = (l.removed, l.outcome) {
            out.push(violation(
                ix,
                InvariantId::TaskResultDelivered,
                last.max(removed),
                subject,
                "its record was removed before the outcome reached the application, and the application was never \
                 told the task is lost"
                    .into(),
            ));
        }
    }
    out
}

/// A request served under two eras, or a modern request served in a legacy session.
fn era_inconsistencies_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    // A request is one client's: with several clients and replicas a connection is named by its
    // client's own number (`conn_client` says whose), so two clients' `c1 r1` are two requests —
    // in a mixed fleet one may be served legacy and the other modern.
    let mut seen: BTreeMap<(Option<u32>, ConnId, RequestId), Era> = BTreeMap::new();
    let mut judged: BTreeSet<(Option<u32>, ConnId, RequestId)> = BTreeSet::new();
    let mut out = Vec::new();
    for (order, step) in ix.others() {
        let StepKind::EraServed { conn, request, era, session, .. } = &step.kind else { continue };
        let key = (step.conn_client, *conn, *request);
        let subject = match step.conn_client {
            Some(client) => format!("client {client} {conn} {request}"),
            None => format!("{conn} {request}"),
        };
        if let (Era::Modern, Some(s)) = (era, session) {
            if judged.insert(key) {
                out.push(violation(
                    ix,
                    InvariantId::EraConsistent,
                    order,
                    subject.clone(),
                    format!("a modern (2026-07-28) request was served in legacy session {s}"),
                ));
            }
        }
        match seen.get(&key) {
            Some(first) if first != era && judged.insert(key) => out.push(violation(
                ix,
                InvariantId::EraConsistent,
                order,
                subject,
                format!("served as {first} then as {era}"),
            )),
            Some(_) => {}
            None => {
                seen.insert(key, *era);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testkit::TraceBuilder;
    use super::super::{check_all, InvariantId};
    use crate::era::Era;
    use crate::ids::{CallKey, ConnId, RequestId, SessionId};
    use crate::tasks::{TaskId, TaskStatus};
    use crate::trace::{StepKind, Trace};

    fn id(s: &str) -> TaskId {
        TaskId(s.into())
    }

    fn created(t: &str) -> StepKind {
        StepKind::TaskCreated { task: id(t), call: CallKey(0), replica: 0, ttl_us: Some(60_000_000) }
    }

    fn received(t: &str) -> StepKind {
        StepKind::TaskIdReceived { task: id(t), call: CallKey(0) }
    }

    fn ended(t: &str) -> StepKind {
        StepKind::TaskEnded { task: id(t), status: TaskStatus::Completed }
    }

    fn removed(t: &str, work_running: bool) -> StepKind {
        StepKind::TaskRecordRemoved { task: id(t), work_running, lost: false }
    }

    fn outcome(t: &str) -> StepKind {
        StepKind::AppTaskOutcome { task: id(t), call: CallKey(0), status: TaskStatus::Completed }
    }

    fn broken(trace: &Trace, which: InvariantId) -> Vec<(usize, String)> {
        check_all(trace).into_iter().filter(|v| v.invariant == which).map(|v| (v.step, v.subject)).collect()
    }

    #[test]
    fn a_task_polled_to_its_end_breaks_nothing() {
        let t = TraceBuilder::new()
            .app(StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: false })
            .server(created("a"))
            .client(received("a"))
            .at(10)
            .server(ended("a"))
            .at(11)
            .app(outcome("a"))
            .at(100)
            .server(removed("a", false))
            .build();
        assert!(check_all(&t).is_empty(), "{:?}", check_all(&t));
    }

    #[test]
    fn a_lost_create_task_result_orphans_the_work() {
        // The reply was lost: the client re-issued, a second task runs for the id it holds.
        let t = TraceBuilder::new()
            .server(created("a"))
            .at(5)
            .server(created("b"))
            .client(received("b"))
            .at(10)
            .server(ended("a"))
            .server(ended("b"))
            .app(outcome("b"))
            .build();
        assert_eq!(broken(&t, InvariantId::NoOrphanedTask), vec![(3, "task a".to_string())]);
    }

    #[test]
    fn a_record_removed_while_its_work_runs_orphans_the_work_and_loses_the_result() {
        // TypeScript's store at createdAt + ttl: the record goes, the tool runs on.
        let t =
            TraceBuilder::new().server(created("a")).client(received("a")).at(60).server(removed("a", true)).build();
        assert_eq!(broken(&t, InvariantId::NoOrphanedTask), vec![(2, "task a".to_string())]);
        assert_eq!(broken(&t, InvariantId::TaskResultDelivered), vec![(2, "task a".to_string())]);
    }

    #[test]
    fn a_client_that_forgets_the_id_orphans_the_task() {
        // Created, its id received, forgotten at 3 s; the work ends at 10 s with nobody to read it.
        let forgotten = || {
            TraceBuilder::new()
                .server(created("a"))
                .client(received("a"))
                .at(3)
                .client(StepKind::TaskIdForgotten { task: id("a") })
                .at(10)
                .server(ended("a"))
        };
        let orphaned = vec![(2, "task a".to_string())];
        assert_eq!(broken(&forgotten().build(), InvariantId::NoOrphanedTask), orphaned);
        // Its record removed (the result unread) only after the id was forgotten: orphaned too.
        let t = forgotten().at(100).server(removed("a", false)).build();
        assert_eq!(broken(&t, InvariantId::NoOrphanedTask), orphaned);
        // Told the task is lost only after forgetting its id: orphaned all the same.
        let t = forgotten().app(StepKind::AppTaskLost { task: id("a"), call: CallKey(0) }).build();
        assert_eq!(broken(&t, InvariantId::NoOrphanedTask), orphaned);
        // Forgetting after the outcome arrived is fine.
        let t = TraceBuilder::new()
            .server(created("a"))
            .client(received("a"))
            .server(ended("a"))
            .app(outcome("a"))
            .client(StepKind::TaskIdForgotten { task: id("a") })
            .build();
        assert!(broken(&t, InvariantId::NoOrphanedTask).is_empty());
    }

    #[test]
    fn a_result_evicted_before_the_poll_is_undelivered_unless_the_app_is_told() {
        let evicted = TraceBuilder::new()
            .server(created("a"))
            .client(received("a"))
            .at(10)
            .server(ended("a"))
            .at(70)
            .server(removed("a", false));
        let t = evicted.build();
        assert_eq!(broken(&t, InvariantId::TaskResultDelivered), vec![(3, "task a".to_string())]);
        let told = TraceBuilder::new()
            .server(created("a"))
            .client(received("a"))
            .at(10)
            .server(ended("a"))
            .at(70)
            .server(removed("a", false))
            .at(71)
            .app(StepKind::AppTaskLost { task: id("a"), call: CallKey(0) })
            .build();
        assert!(broken(&told, InvariantId::TaskResultDelivered).is_empty());
    }

    fn served(conn: u64, request: u64, era: Era, session: Option<&str>) -> StepKind {
        StepKind::EraServed {
            conn: ConnId(conn),
            request: RequestId(request),
            era,
            session: session.map(SessionId::from),
            ignored: vec![],
        }
    }

    #[test]
    fn eras_side_by_side_on_one_replica_are_consistent() {
        let t = TraceBuilder::new()
            .server(served(1, 1, Era::Legacy, Some("s1")))
            .server(served(2, 1, Era::Modern, None))
            .server(served(3, 2, Era::Legacy, Some("s1")))
            .build();
        assert!(broken(&t, InvariantId::EraConsistent).is_empty());
    }

    #[test]
    fn a_modern_request_in_a_legacy_session_breaks_era_consistency() {
        let t = TraceBuilder::new()
            .server(served(1, 1, Era::Legacy, Some("s1")))
            .server(served(2, 7, Era::Modern, Some("s1")))
            .build();
        assert_eq!(broken(&t, InvariantId::EraConsistent), vec![(1, "c2 #7".to_string())]);
    }

    #[test]
    fn two_clients_requests_of_one_name_are_judged_apart() {
        // A mixed fleet behind several replicas: each client numbers its connections and requests
        // itself, so client 0's c1 #1 (legacy) and client 1's c1 #1 (modern) are two requests.
        let mut t = TraceBuilder::new()
            .server(served(1, 1, Era::Legacy, Some("s1")))
            .server(served(1, 1, Era::Modern, None))
            .server(served(1, 1, Era::Legacy, Some("s1")))
            .build();
        for (step, client) in t.steps.iter_mut().zip([0, 1, 1]) {
            step.conn_client = Some(client);
        }
        // Client 1's request served modern, then legacy, is the one violation, named by client.
        assert_eq!(broken(&t, InvariantId::EraConsistent), vec![(2, "client 1 c1 #1".to_string())]);
    }

    #[test]
    fn a_request_served_under_two_eras_breaks_era_consistency() {
        let t = TraceBuilder::new()
            .server(served(1, 1, Era::Modern, None))
            .at(5)
            .server(served(1, 1, Era::Legacy, Some("s")))
            .build();
        assert_eq!(broken(&t, InvariantId::EraConsistent).len(), 1);
    }

    #[test]
    fn an_outcome_on_its_way_when_the_record_went_is_delivered() {
        // The poll was answered just before the TTL ran out; the answer lands after the removal.
        let t = TraceBuilder::new()
            .server(created("a"))
            .client(received("a"))
            .at(10)
            .server(ended("a"))
            .at(60)
            .server(removed("a", false))
            .at(61)
            .app(outcome("a"))
            .build();
        assert!(broken(&t, InvariantId::TaskResultDelivered).is_empty());
    }

    #[test]
    fn a_request_served_twice_in_one_era_is_consistent_and_two_eras_count_once() {
        // The same request served twice under one era (a balancer's upstream retry) is consistent.
        let t = TraceBuilder::new()
            .server(served(1, 1, Era::Legacy, Some("s1")))
            .server(served(1, 1, Era::Legacy, Some("s1")))
            .build();
        assert!(broken(&t, InvariantId::EraConsistent).is_empty());
        // Served modern, then legacy twice: one violation, at the first change of era.
        let t = TraceBuilder::new()
            .server(served(1, 1, Era::Modern, None))
            .server(served(1, 1, Era::Legacy, Some("s")))
            .server(served(1, 1, Era::Legacy, Some("s")))
            .build();
        assert_eq!(broken(&t, InvariantId::EraConsistent), vec![(1, "c1 #1".to_string())]);
    }
}
