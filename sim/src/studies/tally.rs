//! What many runs of one scenario came to: each run classified by what the application saw
//! (`classify`, the one place outcomes are defined), and the counts of a cell ([`Tally`]) that
//! sweeps, the matrix and `advise --verify` all report from.

use crate::studies::stats::wilson;
use mcpsim_model::oracle::{Violation, INVARIANTS};
use mcpsim_model::trace::{ResumeOutcome, StepKind, Trace};
use std::collections::{BTreeMap, BTreeSet};

/// What one run came to, as the application saw it. A run can have several.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// A resumption replayed events, with no gap and no violation.
    CleanResume,
    /// The application was told events may be missing, and no invariant was violated.
    GapReported,
    /// `no-silent-event-loss` was violated.
    SilentLoss,
    /// `no-duplicate-execution` was violated.
    DuplicateExecution,
    /// `every-call-resolves` was violated.
    Unresolved,
    /// A call ended in an error or an unknown outcome: its stream was not recovered.
    CallFailed,
    /// The application was told its session ended.
    SessionLost,
    /// Another invariant was violated.
    OtherViolation,
    /// Nothing the application was reading was lost: none of silent loss, gap, unresolved call,
    /// failed call or lost session. The rate a safe retention must bring to 1.
    LossFree,
}

impl Outcome {
    /// Every outcome, in the order of the CSV columns.
    pub const ALL: [Outcome; 9] = [
        Outcome::CleanResume,
        Outcome::GapReported,
        Outcome::SilentLoss,
        Outcome::DuplicateExecution,
        Outcome::Unresolved,
        Outcome::CallFailed,
        Outcome::SessionLost,
        Outcome::OtherViolation,
        Outcome::LossFree,
    ];

    /// The outcome's name in reports (`silent-loss`, `loss-free`).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::CleanResume => "clean-resume",
            Outcome::GapReported => "gap-reported",
            Outcome::SilentLoss => "silent-loss",
            Outcome::DuplicateExecution => "duplicate-execution",
            Outcome::Unresolved => "unresolved",
            Outcome::CallFailed => "call-failed",
            Outcome::SessionLost => "session-lost",
            Outcome::OtherViolation => "other-violation",
            Outcome::LossFree => "loss-free",
        }
    }

    /// The CSV column name.
    pub fn column(self) -> String {
        self.name().replace('-', "_")
    }

    /// Whether a tally keeps a replay command for its first run with this outcome.
    pub fn notable(self) -> bool {
        !matches!(self, Outcome::CleanResume | Outcome::LossFree)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The invariant behind [`Outcome::SilentLoss`].
pub(crate) const SILENT_LOSS: &str = "no-silent-event-loss";
/// The invariant behind [`Outcome::DuplicateExecution`].
pub(crate) const DUPLICATE_EXECUTION: &str = "no-duplicate-execution";
/// The invariant behind [`Outcome::Unresolved`].
pub(crate) const UNRESOLVED: &str = "every-call-resolves";

/// How one run is counted.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RunClass {
    pub outcomes: BTreeSet<Outcome>,
    /// The names of the violated invariants.
    pub violations: BTreeSet<&'static str>,
}

/// Classifies a run from its trace and violations:
/// - `clean-resume`: a server `Resume` step with `Replayed`, no `AppGap`, no violation;
/// - `gap-reported`: an `AppGap` step and no violation;
/// - `silent-loss`, `duplicate-execution`, `unresolved`: that invariant was violated;
/// - `call-failed`: an `AppError` or `AppUnknownOutcome` step; `session-lost`: `AppSessionLost`;
/// - `other-violation`: any other invariant was violated;
/// - `loss-free`: none of silent-loss, gap-reported's gap, unresolved, call-failed, session-lost.
pub(crate) fn classify(trace: &Trace, violations: &[Violation]) -> RunClass {
    let names: BTreeSet<&'static str> = violations.iter().map(|v| v.invariant.name()).collect();
    let has = |pred: fn(&StepKind) -> bool| trace.steps.iter().any(|s| pred(&s.kind));
    let gap = has(|k| matches!(k, StepKind::AppGap { .. }));
    let replayed = has(|k| matches!(k, StepKind::Resume { outcome: ResumeOutcome::Replayed { .. }, .. }));
    let failed = has(|k| matches!(k, StepKind::AppError { .. } | StepKind::AppUnknownOutcome { .. }));
    let session_lost = has(|k| matches!(k, StepKind::AppSessionLost { .. }));
    let (silent, duplicate, unresolved) =
        (names.contains(SILENT_LOSS), names.contains(DUPLICATE_EXECUTION), names.contains(UNRESOLVED));
    let other = names.iter().any(|n| ![SILENT_LOSS, DUPLICATE_EXECUTION, UNRESOLVED].contains(n));
    let flags = [
        (Outcome::CleanResume, replayed && !gap && names.is_empty()),
        (Outcome::GapReported, gap && names.is_empty()),
        (Outcome::SilentLoss, silent),
        (Outcome::DuplicateExecution, duplicate),
        (Outcome::Unresolved, unresolved),
        (Outcome::CallFailed, failed),
        (Outcome::SessionLost, session_lost),
        (Outcome::OtherViolation, other),
        (Outcome::LossFree, !(silent || gap || unresolved || failed || session_lost)),
    ];
    RunClass { outcomes: flags.iter().filter(|(_, on)| *on).map(|(o, _)| *o).collect(), violations: names }
}

/// The counts of one cell: runs, runs per outcome, runs per violated invariant, and the commands
/// that replay the first run of each notable outcome and the first run that violated anything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// Runs counted.
    pub n: u64,
    counts: [u64; Outcome::ALL.len()],
    /// Runs that violated each invariant.
    pub violations: BTreeMap<String, u64>,
    /// The replay command of the first run with each notable outcome.
    pub replays: BTreeMap<Outcome, String>,
    /// The first seed that violated any invariant, and the command that replays it.
    pub first_violation: Option<(u64, String)>,
}

impl Tally {
    /// An empty tally.
    pub fn new() -> Tally {
        Tally::default()
    }

    /// Counts one run of `seed`; `replay` makes its replay command, called only when kept.
    pub(crate) fn add(&mut self, seed: u64, class: &RunClass, replay: impl Fn() -> String) {
        self.n += 1;
        for o in &class.outcomes {
            self.counts[o.index()] += 1;
            if o.notable() && !self.replays.contains_key(o) {
                self.replays.insert(*o, replay());
            }
        }
        for v in &class.violations {
            *self.violations.entry(v.to_string()).or_default() += 1;
        }
        if !class.violations.is_empty() && self.first_violation.is_none() {
            self.first_violation = Some((seed, replay()));
        }
    }

    /// Runs with outcome `o`.
    pub fn count(&self, o: Outcome) -> u64 {
        self.counts[o.index()]
    }

    /// Sets the count of `o`, for a tally read back from a file.
    pub(crate) fn set_count(&mut self, o: Outcome, count: u64) {
        self.counts[o.index()] = count;
    }

    /// The share of runs with outcome `o` (0 with no runs).
    pub fn rate(&self, o: Outcome) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.count(o) as f64 / self.n as f64
        }
    }

    /// The Wilson 95% interval of the rate.
    pub fn interval(&self, o: Outcome) -> (f64, f64) {
        wilson(self.count(o), self.n)
    }

    /// Whether any run violated an invariant.
    pub fn violated(&self) -> bool {
        !self.violations.is_empty()
    }

    /// The invariants broken, in the registry's order (names the registry lacks come last).
    pub fn broken(&self) -> Vec<&str> {
        let known = INVARIANTS.iter().map(|i| i.name).filter(|n| self.violations.contains_key(*n));
        let unknown = self.violations.keys().map(String::as_str).filter(|n| INVARIANTS.iter().all(|i| i.name != *n));
        known.chain(unknown).collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use mcpsim_model::ids::{CallKey, EventId, SessionId};
    use mcpsim_model::time::Instant;
    use mcpsim_model::trace::{Actor, Step};

    pub(crate) fn trace_of(kinds: Vec<StepKind>) -> Trace {
        let mut t = Trace::new(0, serde_json::json!({}));
        for (i, kind) in kinds.into_iter().enumerate() {
            t.steps.push(Step {
                seq: i as u64,
                t: i as u64,
                actor: Actor::App,
                client: None,
                replica: None,
                conn_client: None,
                kind,
            });
        }
        t
    }

    pub(crate) fn replayed() -> StepKind {
        StepKind::Resume {
            session: SessionId::from("s"),
            last_event_id: EventId::from("1-5"),
            stream: None,
            outcome: ResumeOutcome::Replayed { replayed: 3 },
            held: false,
            evicted: None,
            claimed_by: None,
            finished: false,
        }
    }

    pub(crate) fn gap() -> StepKind {
        StepKind::AppGap {
            session: SessionId::from("s"),
            call: Some(CallKey(0)),
            after: None,
            head: EventId::from("1-9"),
        }
    }

    pub(crate) fn violation(invariant: &'static str) -> Violation {
        Violation {
            invariant: invariant.parse().expect("a known invariant"),
            step: 0,
            at: Instant(0),
            subject: "call0".into(),
            detail: String::new(),
        }
    }

    fn outcomes(class: &RunClass) -> Vec<&'static str> {
        class.outcomes.iter().map(|o| o.name()).collect()
    }

    #[test]
    fn runs_are_classified_by_what_the_application_saw() {
        assert_eq!(outcomes(&classify(&trace_of(vec![replayed()]), &[])), ["clean-resume", "loss-free"]);
        assert_eq!(outcomes(&classify(&trace_of(vec![replayed(), gap()]), &[])), ["gap-reported"]);
        assert_eq!(outcomes(&classify(&trace_of(vec![]), &[])), ["loss-free"], "no break at all is loss-free");
        let silent = classify(&trace_of(vec![replayed()]), &[violation(SILENT_LOSS)]);
        assert_eq!(outcomes(&silent), ["silent-loss"]);
        let several = classify(
            &trace_of(vec![gap(), StepKind::AppError { call: CallKey(0), error: "x".into() }]),
            &[violation(DUPLICATE_EXECUTION), violation(UNRESOLVED), violation("no-orphaned-session")],
        );
        assert_eq!(outcomes(&several), ["duplicate-execution", "unresolved", "call-failed", "other-violation"]);
        assert_eq!(
            several.violations.iter().copied().collect::<Vec<_>>(),
            [UNRESOLVED, DUPLICATE_EXECUTION, "no-orphaned-session"]
        );
        let lost = classify(&trace_of(vec![StepKind::AppSessionLost { session: SessionId::from("s") }]), &[]);
        assert_eq!(outcomes(&lost), ["session-lost"]);
    }

    #[test]
    fn a_tally_counts_runs_and_keeps_the_first_replay_of_each_notable_outcome_and_violation() {
        let mut t = Tally::new();
        let clean = classify(&trace_of(vec![replayed()]), &[]);
        let dup = classify(&trace_of(vec![]), &[violation(DUPLICATE_EXECUTION), violation(SILENT_LOSS)]);
        t.add(0, &clean, || "seed 0".into());
        t.add(1, &dup, || "seed 1".into());
        t.add(2, &dup, || "seed 2".into());
        assert_eq!((t.n, t.count(Outcome::LossFree), t.count(Outcome::DuplicateExecution)), (3, 1, 2));
        assert_eq!(t.replays.get(&Outcome::DuplicateExecution).map(String::as_str), Some("seed 1"));
        assert_eq!(t.replays.get(&Outcome::CleanResume), None, "not notable");
        assert_eq!(t.first_violation, Some((1, "seed 1".into())));
        assert_eq!(t.broken(), ["no-duplicate-execution", "no-silent-event-loss"], "registry order");
        assert!(t.violated());
        assert_eq!(t.interval(Outcome::LossFree), wilson(1, 3));
        assert_eq!(Tally::new().rate(Outcome::LossFree), 0.0);
    }
}
