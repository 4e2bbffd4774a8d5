//! "Sometimes" properties: events a sweep of seeds should reach at least once, counted per trace.
//!
//! A zero count across a whole sweep means the sweep never exercised that path, so its clean
//! verdicts say nothing about it.

use super::execution::duplicate_executions;
use crate::ids::{RequestId, SessionId};
use crate::trace::{ResumeOutcome, SessionEndReason, StepKind, Trace};
use serde::Serialize;
use std::collections::BTreeMap;

/// A "sometimes" event: something a sweep of seeds should reach at least once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CoverageEvent {
    /// A resumption replayed at least one event.
    ResumeReplayed,
    /// A resumption was honoured (maybe with nothing to replay).
    ResumeAttached,
    /// The application was told of a gap.
    GapReported,
    /// The load balancer cut an idle connection.
    LbIdleCut,
    /// A logical client got a second (third, ...) session: counts the sessions after the first.
    SessionReinitialized,
    /// A reconnection waited at least the `retry:` the server last sent.
    RetryHonoured,
    /// A server restart was followed by a result reaching the application.
    ServerRestartSurvived,
    /// A resumption the server answered without saying events were skipped or missing.
    SilentResume,
    /// The application was told a call may or may not have run.
    UnknownOutcome,
    /// A non-idempotent call ran twice (what `no-duplicate-execution` reports).
    DuplicateExecution,
    /// The server expired a session that sat idle past its TTL.
    SessionExpired,
    /// A session ended on the application's `DELETE`.
    SessionDeleted,
    /// A tool ran for a JSON-RPC request id another session had already run a tool for: the case a
    /// store keyed by request id alone gets wrong.
    RequestIdShared,
}

/// Every coverage event, in the order reports list them.
pub const COVERAGE_EVENTS: &[CoverageEvent] = &[
    CoverageEvent::ResumeReplayed,
    CoverageEvent::ResumeAttached,
    CoverageEvent::GapReported,
    CoverageEvent::LbIdleCut,
    CoverageEvent::SessionReinitialized,
    CoverageEvent::RetryHonoured,
    CoverageEvent::ServerRestartSurvived,
    CoverageEvent::SilentResume,
    CoverageEvent::UnknownOutcome,
    CoverageEvent::DuplicateExecution,
    CoverageEvent::SessionExpired,
    CoverageEvent::SessionDeleted,
    CoverageEvent::RequestIdShared,
];

impl CoverageEvent {
    /// The stable name, as reports print it.
    pub const fn name(self) -> &'static str {
        match self {
            CoverageEvent::ResumeReplayed => "resume-replayed",
            CoverageEvent::ResumeAttached => "resume-attached",
            CoverageEvent::GapReported => "gap-reported",
            CoverageEvent::LbIdleCut => "lb-idle-cut",
            CoverageEvent::SessionReinitialized => "session-reinitialized",
            CoverageEvent::RetryHonoured => "retry-honoured",
            CoverageEvent::ServerRestartSurvived => "server-restart-survived",
            CoverageEvent::SilentResume => "silent-resume",
            CoverageEvent::UnknownOutcome => "unknown-outcome",
            CoverageEvent::DuplicateExecution => "duplicate-execution",
            CoverageEvent::SessionExpired => "session-expired",
            CoverageEvent::SessionDeleted => "session-deleted",
            CoverageEvent::RequestIdShared => "request-id-shared",
        }
    }
}

impl std::fmt::Display for CoverageEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for CoverageEvent {
    type Err = String;
    /// Parses a stable name; the error names the unknown event.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        COVERAGE_EVENTS.iter().copied().find(|e| e.name() == s).ok_or_else(|| format!("unknown coverage event {s:?}"))
    }
}

impl Serialize for CoverageEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// How often each coverage event happened. Always holds every event of [`COVERAGE_EVENTS`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Coverage(pub BTreeMap<CoverageEvent, u32>);

impl Default for Coverage {
    fn default() -> Self {
        Coverage(COVERAGE_EVENTS.iter().map(|e| (*e, 0)).collect())
    }
}

impl Coverage {
    /// Every event at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The count of an event.
    pub fn get(&self, event: CoverageEvent) -> u32 {
        self.0.get(&event).copied().unwrap_or(0)
    }

    /// Adds another trace's (or sweep's) counts to these.
    pub fn merge(&mut self, other: &Coverage) {
        for (event, n) in &other.0 {
            self.add(*event, *n);
        }
    }

    /// The events that never happened, in [`COVERAGE_EVENTS`] order.
    pub fn unreached(&self) -> Vec<CoverageEvent> {
        COVERAGE_EVENTS.iter().copied().filter(|e| self.get(*e) == 0).collect()
    }

    fn add(&mut self, event: CoverageEvent, n: u32) {
        let count = self.0.entry(event).or_insert(0);
        *count = count.saturating_add(n);
    }
}

/// Counts the coverage events of one trace.
pub fn coverage(trace: &Trace) -> Coverage {
    let mut cov = Coverage::new();
    let mut sessions_per_client: BTreeMap<&str, u32> = BTreeMap::new();
    let mut last_retry_ms: Option<u64> = None;
    let mut restarts_awaiting_result = 0;
    let mut first_session_of_request: BTreeMap<RequestId, &SessionId> = BTreeMap::new();
    for step in &trace.steps {
        match &step.kind {
            StepKind::Resume { outcome, .. } => count_resume(&mut cov, outcome),
            StepKind::AppGap { .. } => cov.add(CoverageEvent::GapReported, 1),
            StepKind::LbIdleCut { .. } => cov.add(CoverageEvent::LbIdleCut, 1),
            StepKind::AppUnknownOutcome { .. } => cov.add(CoverageEvent::UnknownOutcome, 1),
            StepKind::SessionCreated { client, .. } => *sessions_per_client.entry(client).or_insert(0) += 1,
            StepKind::Event { event, .. } => last_retry_ms = event.retry_ms.or(last_retry_ms),
            StepKind::Backoff { delay_us, .. }
                if last_retry_ms.is_some_and(|ms| *delay_us >= ms.saturating_mul(1_000)) =>
            {
                cov.add(CoverageEvent::RetryHonoured, 1)
            }
            StepKind::ServerStart { epoch, .. } if *epoch >= 1 => restarts_awaiting_result += 1,
            StepKind::AppResult { .. } => {
                cov.add(CoverageEvent::ServerRestartSurvived, restarts_awaiting_result);
                restarts_awaiting_result = 0;
            }
            StepKind::SessionEnded { reason: SessionEndReason::IdleExpired, .. } => {
                cov.add(CoverageEvent::SessionExpired, 1)
            }
            StepKind::SessionEnded { reason: SessionEndReason::Deleted, .. } => {
                cov.add(CoverageEvent::SessionDeleted, 1)
            }
            StepKind::SideEffect { session, request, .. }
                if *first_session_of_request.entry(*request).or_insert(session) != session =>
            {
                cov.add(CoverageEvent::RequestIdShared, 1)
            }
            _ => {}
        }
    }
    cov.add(CoverageEvent::SessionReinitialized, sessions_per_client.values().map(|n| n.saturating_sub(1)).sum());
    cov.add(CoverageEvent::DuplicateExecution, u32::try_from(duplicate_executions(trace).len()).unwrap_or(u32::MAX));
    cov
}

fn count_resume(cov: &mut Coverage, outcome: &ResumeOutcome) {
    match outcome {
        ResumeOutcome::Replayed { replayed } => {
            cov.add(CoverageEvent::ResumeAttached, 1);
            if *replayed >= 1 {
                cov.add(CoverageEvent::ResumeReplayed, 1);
            }
        }
        ResumeOutcome::SilentHead { .. } | ResumeOutcome::FromOldest { .. } | ResumeOutcome::Empty { .. } => {
            cov.add(CoverageEvent::SilentResume, 1)
        }
        ResumeOutcome::Rejected { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::http::{SseEvent, Status};
    use crate::ids::CallKey;

    fn backoff(delay_us: u64) -> StepKind {
        StepKind::Backoff { call: Some(CallKey(0)), attempt: 1, delay_us }
    }

    fn retry_event(retry_ms: u64) -> StepKind {
        sse_event(1, SseEvent { id: Some(ev(1, 0)), retry_ms: Some(retry_ms), kind: Default::default(), data: None })
    }

    #[test]
    fn every_event_is_listed_once_and_starts_at_zero() {
        let cov = coverage(&TraceBuilder::new().build());
        assert_eq!(cov.0.len(), COVERAGE_EVENTS.len());
        assert_eq!(cov.unreached(), COVERAGE_EVENTS.to_vec());
        assert!("not-an-event".parse::<CoverageEvent>().is_err());
    }

    #[test]
    fn each_event_is_counted_from_its_steps() {
        let (a, b) = (sid("A"), sid("B"));
        let trace = TraceBuilder::new()
            .server(StepKind::ServerStart { epoch: 0, sessions_share_store: false, bounds: Default::default() })
            .server(session_created(&a, "app"))
            .app(app_call(0, false))
            .server(side_effect(&a, 1, 0))
            .client(retry_event(3_000))
            .client(backoff(1_000_000))
            .client(backoff(3_000_000))
            .lb(lb_idle_cut(1))
            .server(resume(&a, ev(1, 0), ResumeOutcome::Replayed { replayed: 0 }))
            .server(resume(&a, ev(1, 0), ResumeOutcome::Replayed { replayed: 2 }))
            .server(resume(&a, ev(1, 0), ResumeOutcome::SilentHead { skipped: 9 }))
            .server(resume(&a, ev(1, 0), ResumeOutcome::Empty { open: true }))
            .server(resume(&a, ev(1, 0), ResumeOutcome::Rejected { status: Status::GONE, head: None }))
            .app(app_gap(&a, None, ev(1, 3)))
            .server(StepKind::ServerStart { epoch: 1, sessions_share_store: false, bounds: Default::default() })
            .server(session_created(&b, "app"))
            .server(side_effect(&b, 1, 0))
            .server(side_effect(&b, 1, 0))
            .app(app_unknown(0))
            .app(app_result(0, &b, None))
            .server(StepKind::SessionEnded {
                session: a.clone(),
                reason: SessionEndReason::IdleExpired,
                idle_ttl_us: None,
            })
            .server(StepKind::SessionEnded { session: b.clone(), reason: SessionEndReason::Deleted, idle_ttl_us: None })
            .server(StepKind::SessionEnded {
                session: b.clone(),
                reason: SessionEndReason::ServerRestart,
                idle_ttl_us: None,
            })
            .build();
        let cov = coverage(&trace);
        // Request #1 ran in A, then twice in B: B's runs share A's id (counted once per run).
        let expected: Vec<(&str, u32)> = vec![
            ("duplicate-execution", 1),
            ("gap-reported", 1),
            ("lb-idle-cut", 1),
            ("request-id-shared", 2),
            ("resume-attached", 2),
            ("resume-replayed", 1),
            ("retry-honoured", 1),
            ("server-restart-survived", 1),
            ("session-deleted", 1),
            ("session-expired", 1),
            ("session-reinitialized", 1),
            ("silent-resume", 2),
            ("unknown-outcome", 1),
        ];
        let mut got: Vec<(&str, u32)> = cov.0.into_iter().map(|(e, n)| (e.name(), n)).collect();
        got.sort();
        assert_eq!(got, expected);
    }

    #[test]
    fn a_restart_with_no_result_after_it_is_not_survived() {
        let trace = TraceBuilder::new()
            .app(app_result(0, &sid("A"), None))
            .server(StepKind::ServerStart { epoch: 1, sessions_share_store: false, bounds: Default::default() })
            .build();
        assert_eq!(coverage(&trace).get(CoverageEvent::ServerRestartSurvived), 0);
        // The first process's start is no restart; a result after a restart survives it.
        let a = sid("A");
        let first = TraceBuilder::new()
            .server(StepKind::ServerStart { epoch: 0, sessions_share_store: false, bounds: Default::default() })
            .app(app_result(0, &a, None))
            .build();
        assert_eq!(coverage(&first).get(CoverageEvent::ServerRestartSurvived), 0);
        let again = TraceBuilder::new()
            .server(StepKind::ServerStart { epoch: 1, sessions_share_store: false, bounds: Default::default() })
            .app(app_result(0, &a, None))
            .build();
        assert_eq!(coverage(&again).get(CoverageEvent::ServerRestartSurvived), 1);
    }

    #[test]
    fn each_coverage_event_prints_as_the_stable_name_it_parses_from() {
        assert_eq!(CoverageEvent::LbIdleCut.to_string(), "lb-idle-cut");
        assert_eq!(format!("unreached: {}", CoverageEvent::SilentResume), "unreached: silent-resume");
        for e in COVERAGE_EVENTS {
            assert_eq!(e.to_string().parse::<CoverageEvent>(), Ok(*e));
        }
    }

    #[test]
    fn merging_adds_counts_and_serializes_as_a_map() {
        let trace = TraceBuilder::new().lb(lb_idle_cut(1)).lb(lb_idle_cut(2)).build();
        let mut total = Coverage::new();
        total.merge(&coverage(&trace));
        total.merge(&coverage(&trace));
        assert_eq!(total.get(CoverageEvent::LbIdleCut), 4);
        let json = serde_json::to_value(&total).expect("plain map");
        assert_eq!(json["lb-idle-cut"], 4);
        assert_eq!(json["gap-reported"], 0);
    }
}
