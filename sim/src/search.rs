//! Search: proptest strategies that generate scenario parameters and fault plans (with swarm
//! testing), and the shrinking that reduces a counterexample to its smallest form.
//!
//! Strategies live here only; the property tests in `tests/` and `mcpsim explore --search` both
//! call them. A generated case is a list of `--set` overrides applied to a scenario family, plus
//! a madsim seed that is drawn but never shrunk. Because a case *is* its overrides, every case —
//! shrunk or not — replays with one `mcpsim run … --set … --seed N` command.

use crate::error::SimError;
use crate::faults::Fault;
use crate::runner::{run, RunOutcome};
use crate::scenario::Scenario;
use mcpsim_model::time::format_duration;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Duration;

/// A `--set key=value` override.
pub type Override = (String, String);

/// Fault kinds a swarm-tested case enabled, each with its intensity.
pub type Swarm = BTreeMap<String, u32>;

/// One generated test case.
#[derive(Clone, Debug)]
pub struct Case {
    /// `key=value` overrides applied to the family, in order.
    pub overrides: Vec<(String, String)>,
    /// Fault kinds enabled by swarm testing, with their intensity.
    pub swarm: BTreeMap<String, u32>,
    /// The madsim seed (never shrunk).
    pub seed: u64,
}

impl Case {
    /// The scenario this case runs: the base with the case's overrides on top.
    pub fn scenario(&self, base: &Scenario) -> Result<Scenario, SimError> {
        let mut s = base.clone();
        s.apply_overrides(&self.overrides)?;
        s.swarm = Some(self.swarm.clone());
        Ok(s)
    }
}

/// How a counterexample's size is measured: faults planned, overrides set, steps run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub faults: usize,
    pub overrides: usize,
    pub steps: usize,
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} fault(s), {} override(s), {} step(s)", self.faults, self.overrides, self.steps)
    }
}

/// The size of a scenario run and its trace.
pub fn size(scenario: &Scenario, outcome: &RunOutcome) -> Size {
    Size { faults: scenario.faults.len(), overrides: scenario.overrides.len(), steps: outcome.trace.steps.len() }
}

/// Which parameters the search may vary, and within which bounds.
#[derive(Clone, Debug)]
pub struct Space {
    /// Latest time a fault may be planned, from the start of the run.
    pub horizon: Duration,
    /// Vary environment parameters (timeouts, retention, backoff, tool timing).
    pub vary_parameters: bool,
    /// Keep parameters inside the design note's conditions of validity (ample retention, no
    /// idle expiry, a client that keeps retrying): used to check pairs that should be safe.
    pub within_conditions: bool,
    /// Fault kinds the swarm may enable.
    pub fault_kinds: Vec<&'static str>,
    /// The most faults of one kind a case may plan.
    pub max_intensity: u32,
}

impl Space {
    /// The default search space for a scenario family.
    pub fn for_scenario(base: &Scenario) -> Space {
        let horizon = base.last_tool_due() + Duration::from_secs(60);
        Space {
            horizon,
            vary_parameters: true,
            within_conditions: false,
            fault_kinds: Fault::KINDS.to_vec(),
            max_intensity: 3,
        }
    }
}

fn secs(s: u64) -> String {
    format_duration(Duration::from_secs(s))
}

fn millis(ms: u64) -> String {
    format_duration(Duration::from_millis(ms))
}

/// An optional value: shrinks towards `none` (the simpler model) first.
fn optional(inner: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop_oneof![1 => Just("none".to_string()), 3 => inner].boxed()
}

/// Environment parameters, as overrides. Each shrinks towards its smallest value.
fn parameters(space: &Space) -> BoxedStrategy<Vec<(String, String)>> {
    let duration = (1u64..=600).prop_map(|s| ("tool.duration".to_string(), secs(s)));
    let lb_idle = optional((10u64..=300).prop_map(secs).boxed()).prop_map(|v| ("lb.idle_timeout".to_string(), v));
    let keepalive = optional((5u64..=90).prop_map(secs).boxed()).prop_map(|v| ("server.keepalive".to_string(), v));
    let backoff_initial = (100u64..=5_000).prop_map(|ms| ("client.backoff_initial".to_string(), millis(ms)));
    let backoff_max = (1u64..=60).prop_map(|s| ("client.backoff_max".to_string(), secs(s)));
    let factor = (10u32..=30).prop_map(|f| ("client.backoff_factor".to_string(), format!("{:.1}", f as f64 / 10.0)));
    if space.within_conditions {
        // Condition 2 holds by construction: unbounded retention, no idle expiry, unlimited
        // attempts. Condition 1 and 3 come from the profiles under test.
        return (duration, lb_idle, keepalive, backoff_initial, backoff_max, factor)
            .prop_map(|(a, b, c, d, e, f)| {
                vec![
                    a,
                    b,
                    c,
                    d,
                    e,
                    f,
                    ("server.retention".into(), "unbounded".into()),
                    ("server.idle_ttl".into(), "none".into()),
                    ("client.max_attempts".into(), "unlimited".into()),
                ]
            })
            .boxed();
    }
    let retention = prop_oneof![1 => Just("unbounded".to_string()), 3 => (1u32..=300).prop_map(|n| n.to_string())]
        .prop_map(|v| ("server.retention".to_string(), v));
    let idle_ttl = optional((30u64..=3_600).prop_map(secs).boxed()).prop_map(|v| ("server.idle_ttl".to_string(), v));
    let attempts = prop_oneof![1 => Just("unlimited".to_string()), 3 => (1u32..=30).prop_map(|n| n.to_string())]
        .prop_map(|v| ("client.max_attempts".to_string(), v));
    ((duration, lb_idle, keepalive, backoff_initial, backoff_max, factor), (retention, idle_ttl, attempts))
        .prop_map(|((a, b, c, d, e, f), (g, h, i))| vec![a, b, c, d, e, f, g, h, i])
        .boxed()
}

/// Times of faults of one kind: between 0 and `intensity` of them.
fn fault_times(horizon: u64, intensity: u32) -> BoxedStrategy<Vec<u64>> {
    prop::collection::vec(0..=horizon, 0..=intensity as usize)
        .prop_map(|mut v| {
            v.sort_unstable();
            v.dedup();
            v
        })
        .boxed()
}

/// Renders fault times as the override of their kind.
fn times_override(key: &str, times: &[u64]) -> (String, String) {
    let v = if times.is_empty() {
        "none".to_string()
    } else {
        times.iter().map(|t| secs(*t)).collect::<Vec<_>>().join(",")
    };
    (key.to_string(), v)
}

/// Partitions: (start, length) pairs that do not overlap, as one override.
fn partitions_override(parts: &[(u64, u64)]) -> (String, String) {
    let mut sorted = parts.to_vec();
    sorted.sort_unstable();
    let mut out: Vec<String> = Vec::new();
    let mut free_from = 0;
    for (start, len) in sorted {
        let start = start.max(free_from);
        out.push(format!("{}..{}", secs(start), secs(start + len)));
        free_from = start + len + 1;
    }
    let v = if out.is_empty() { "none".to_string() } else { out.join(",") };
    ("fault.partition".to_string(), v)
}

fn override_key(kind: &str) -> &'static str {
    match kind {
        "reset" => "fault.reset",
        "server-restart" => "fault.server_restart",
        "client-restart" => "fault.client_restart",
        _ => "fault.partition",
    }
}

/// A fault plan under swarm testing: each kind enabled with probability ½ and its own intensity.
fn fault_plan(space: &Space) -> BoxedStrategy<(Swarm, Vec<Override>)> {
    let horizon = space.horizon.as_secs().max(1);
    let kinds = space.fault_kinds.clone();
    let max = space.max_intensity.max(1);
    let swarm = prop::collection::vec((any::<bool>(), 1..=max), kinds.len()).prop_map(move |draws| {
        kinds.iter().zip(draws).filter(|(_, (on, _))| *on).map(|(k, (_, n))| (k.to_string(), n)).collect()
    });
    swarm
        .prop_flat_map(move |swarm: BTreeMap<String, u32>| {
            let per_kind: Vec<BoxedStrategy<(String, String)>> = swarm
                .iter()
                .map(|(kind, &n)| {
                    if kind == "partition" {
                        prop::collection::vec((0..=horizon, 1u64..=300), 0..=n as usize)
                            .prop_map(|p| partitions_override(&p))
                            .boxed()
                    } else {
                        let key = override_key(kind);
                        fault_times(horizon, n).prop_map(move |t| times_override(key, &t)).boxed()
                    }
                })
                .collect();
            (Just(swarm), per_kind)
        })
        .boxed()
}

/// The strategy of cases for a scenario family.
pub fn cases(space: &Space) -> BoxedStrategy<Case> {
    let params = if space.vary_parameters { parameters(space) } else { Just(vec![]).boxed() };
    (params, fault_plan(space), any::<u64>().no_shrink())
        .prop_map(|(mut overrides, (swarm, faults), seed)| {
            overrides.extend(faults.into_iter().filter(|(_, v)| v != "none"));
            Case { overrides, swarm, seed }
        })
        .boxed()
}

/// What a search found.
#[derive(Debug)]
pub struct Found {
    /// The invariant the counterexample breaks (shrinking keeps it).
    pub invariant: &'static str,
    pub original: (Scenario, u64, Size),
    pub minimal: (Scenario, u64, RunOutcome),
    pub cases_tried: u64,
}

/// Runs up to `cases` generated cases from a deterministic generator seeded by `rng_seed`; on the
/// first violation, shrinks it (unless `shrink` is false) keeping the same invariant broken.
pub fn search(
    base: &Scenario,
    space: &Space,
    cases_budget: u32,
    rng_seed: u64,
    shrink: bool,
) -> Result<Option<Found>, SimError> {
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&rng_seed.to_le_bytes());
    let config = Config {
        cases: cases_budget,
        max_shrink_iters: if shrink { 2_000 } else { 0 },
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes));
    // proptest's test closure is `Fn`: interior mutability carries what we learn out of it.
    let target: RefCell<Option<&'static str>> = RefCell::new(None);
    let first: RefCell<Option<(Scenario, u64, Size)>> = RefCell::new(None);
    let tried = RefCell::new(0u64);
    let error: RefCell<Option<SimError>> = RefCell::new(None);
    let result = runner.run(&cases(space), |case| {
        *tried.borrow_mut() += 1;
        let scenario = case.scenario(base).map_err(|e| TestCaseError::reject(e.to_string()))?;
        let outcome = match run(&scenario, case.seed) {
            Ok(o) => o,
            Err(e) => {
                *error.borrow_mut() = Some(e);
                return Err(TestCaseError::fail("simulation error"));
            }
        };
        let names: Vec<&'static str> = outcome.violations.iter().map(|v| v.invariant).collect();
        let mut target = target.borrow_mut();
        match *target {
            None if !names.is_empty() => {
                *target = Some(names[0]);
                *first.borrow_mut() = Some((scenario.clone(), case.seed, size(&scenario, &outcome)));
                Err(TestCaseError::fail(names[0]))
            }
            Some(t) if names.contains(&t) => Err(TestCaseError::fail(t)),
            _ => Ok(()),
        }
    });
    if let Some(e) = error.into_inner() {
        return Err(e);
    }
    let cases_tried = tried.into_inner();
    match result {
        Ok(()) => Ok(None),
        Err(TestError::Abort(reason)) => Err(SimError::Runtime(format!("search aborted: {reason}"))),
        Err(TestError::Fail(_, minimal)) => {
            let invariant = target.into_inner().expect("a failure was recorded with its invariant");
            let original = first.into_inner().expect("a failure was recorded with its scenario");
            let scenario = minimal.scenario(base)?;
            let outcome = run(&scenario, minimal.seed)?;
            Ok(Some(Found { invariant, original, minimal: (scenario, minimal.seed, outcome), cases_tried }))
        }
    }
}

/// Shrinks a fixed scenario's counterexample without a generator (for `explore` over seeds):
/// drops overrides and faults one at a time, and halves durations, keeping each change only
/// while the same seed still breaks the same invariant. Returns the smallest scenario found.
pub fn shrink_fixed(scenario: &Scenario, seed: u64, invariant: &str) -> Result<(Scenario, RunOutcome), SimError> {
    let breaks = |s: &Scenario| -> Result<Option<RunOutcome>, SimError> {
        let o = run(s, seed)?;
        Ok(o.violations.iter().any(|v| v.invariant == invariant).then_some(o))
    };
    let base = Scenario::build(&scenario.name, &scenario.client.name, &scenario.server.name)?;
    let mut best = scenario.clone();
    let mut best_outcome =
        breaks(&best)?.ok_or_else(|| SimError::Runtime("the counterexample no longer breaks".into()))?;
    let mut improved = true;
    while improved {
        improved = false;
        for i in 0..best.overrides.len() {
            let mut fewer = best.overrides.clone();
            fewer.remove(i);
            let mut candidate = base.clone();
            candidate.apply_overrides(&fewer)?;
            if let Some(o) = breaks(&candidate)? {
                best = candidate;
                best_outcome = o;
                improved = true;
                break;
            }
        }
    }
    Ok((best, best_outcome))
}
