//! Search: proptest strategies that generate scenario parameters and fault plans (with swarm
//! testing), and the shrinking that reduces a counterexample to its smallest form.
//!
//! Strategies live here only; the property tests in `tests/` and `mcpsim explore --search` both
//! call them. A generated case is a list of `--set` overrides applied to a scenario family, plus
//! a madsim seed that is drawn but never shrunk. Because a case *is* its overrides, every case —
//! shrunk or not — replays with one `mcpsim run … --set … --seed N` command.
//!
//! Shrinking has two stages. proptest shrinks the generated values: fault lists element by
//! element (dropping faults, then moving each earlier), ranges towards their low end, optional
//! values towards `none`. Then `shrink_fixed` — the same pass `explore` uses on a fixed
//! scenario — removes each fault that is left (the family's planned ones included) and drops
//! each override, so that a parameter that does not matter ends at its simplest value: the
//! family's own, with no override at all. Both stages keep a change only while the same seed
//! still breaks the *same* invariant.

use crate::engine::runner::{run, RunOutcome};
use crate::error::SimError;
use crate::scenario::faults::{Fault, FaultPlan};
use crate::scenario::{fault_setting, setting, Scenario};
use mcpsim_model::oracle::conditions::Condition;
use mcpsim_model::oracle::{coverage, Coverage, InvariantId, Violation, INVARIANTS};
use mcpsim_model::time::format_duration;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A `--set key=value` override.
pub type Override = (String, String);

/// Fault kinds a swarm-tested case enabled, each with its intensity (the most faults of that kind
/// the case may plan); under [`Space::swarm`] also the workload parts it switched on (intensity 1,
/// names of [`WORKLOAD_PARTS`]).
pub type Swarm = BTreeMap<String, u32>;

/// The workload parts swarm testing ([`Space::swarm`]) switches on or off as a whole, with the
/// override keys each one draws. A part that is off keeps the family's own value (no override);
/// one that is on is always drawn. `clients` draws its own call script (the calls spread over
/// the clients), so with it on `calls` adds nothing.
pub const WORKLOAD_PARTS: &[(&str, &[&str])] = &[
    ("clients", &["app.clients", "app.calls"]),
    ("calls", &["app.calls"]),
    ("notifications", &["app.notifications"]),
    ("deletes", &["app.operator_deletes"]),
    ("deploy", &["fault.deploy"]),
    (
        "keep-alive",
        &[
            "client.http.keep_alive",
            "client.http.idle_expiry",
            "client.http.retry",
            "lb.upstream_keep_alive",
            "lb.retry_upstream",
            "server.keep_alive_timeout",
        ],
    ),
    ("chain", &["lb.hops"]),
];

/// The most clients the `clients` workload part runs.
const MAX_SWARM_CLIENTS: u32 = 3;

/// proptest's shrinking stops after this many runs (each run is one simulation).
pub const MAX_SHRINK_RUNS: u32 = 1_000;

/// The most simulated steps one counterexample's shrinking may spend, proptest's pass and
/// `shrink_fixed` together: a deterministic bound (the same case shrinks to the same bytes on
/// any machine) that keeps a shrink within seconds when its candidates run long. chatty-tool's
/// every-call-resolves counterexamples loop resumes until the liveness deadline (≈ 4 300 steps a
/// run) once an override that stopped the loop is dropped; without a bound their shrink took 10 s.
/// When the budget runs out the smallest case found so far is the answer. proptest's pass may
/// spend three quarters of it, so `shrink_fixed` always has some left.
pub const SHRINK_STEP_BUDGET: u64 = 400_000;

/// A shrinking candidate of proptest's pass whose run takes more steps than this for a case of
/// `steps` is refused: proptest simplifies values towards one end of their range (a shorter
/// event interval, for one), which can turn a 235-step case into a 46 000-step one that is no
/// smaller by [`Size`] and makes every later candidate as slow.
fn longest_candidate(steps: u64) -> u64 {
    steps.saturating_mul(4).max(steps + 2_000)
}

/// The longest partition a case plans (and the longest black hole: how long new connections get
/// no answer; what one catches stays dead whatever its length).
const MAX_PARTITION: u64 = 300;

/// The fault kinds planned as windows (`START..END`), not instants.
pub(crate) const WINDOW_KINDS: [&str; 2] = ["partition", "blackhole"];

/// One generated test case.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// `key=value` overrides applied to the family, in order.
    pub overrides: Vec<Override>,
    /// Fault kinds enabled by swarm testing, with their intensity.
    pub swarm: Swarm,
    /// The madsim seed (never shrunk).
    pub seed: u64,
}

impl Case {
    /// The scenario this case runs: the base with the case's overrides on top.
    pub fn scenario(&self, base: &Scenario) -> Result<Scenario, SimError> {
        let mut s = base.derive(&self.overrides)?;
        s.swarm = Some(self.swarm.clone());
        Ok(s)
    }
}

/// How a counterexample's size is measured: faults planned, overrides set, steps run. Ordered in
/// that priority: fewer faults first, then fewer overrides, then a shorter run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Size {
    /// Faults planned.
    pub faults: usize,
    /// `--set` overrides applied.
    pub overrides: usize,
    /// Steps the run recorded.
    pub steps: usize,
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} fault(s), {} override(s), {} step(s)", self.faults, self.overrides, self.steps)
    }
}

/// The size of a scenario run and its trace.
pub(crate) fn size(scenario: &Scenario, outcome: &RunOutcome) -> Size {
    Size { faults: scenario.faults.len(), overrides: scenario.overrides.len(), steps: outcome.trace.steps.len() }
}

/// A run that broke an invariant: what ran, under which seed, and what came of it.
#[derive(Debug)]
pub struct Counterexample {
    /// The scenario that ran, overrides and swarm included.
    pub scenario: Scenario,
    /// The run's seed.
    pub seed: u64,
    /// Its trace and violations.
    pub outcome: RunOutcome,
}

impl Clone for Counterexample {
    fn clone(&self) -> Self {
        let outcome = RunOutcome {
            trace: self.outcome.trace.clone(),
            violations: self.outcome.violations.clone(),
            explained_by: self.outcome.explained_by.clone(),
        };
        Counterexample { scenario: self.scenario.clone(), seed: self.seed, outcome }
    }
}

impl Counterexample {
    /// How big the case is, the order shrinking minimises.
    pub fn size(&self) -> Size {
        size(&self.scenario, &self.outcome)
    }

    /// Whether the run broke `invariant`.
    pub fn breaks(&self, invariant: &str) -> bool {
        self.outcome.violations.iter().any(|v| v.invariant == invariant)
    }

    /// Whether the run broke `invariant` in a way `hunt` counts.
    pub fn breaks_in(&self, invariant: &str, hunt: Hunt) -> bool {
        hunt.counted(&self.outcome).iter().any(|v| v.invariant == invariant)
    }
}

/// Which violations a search stops at: any (`explore --all`, and the library's default), or only
/// those no broken condition of validity explains (`oracle::conditions`: a bug of the client or
/// the server, not the price of a broken condition; `explore`'s default). Either way a violation
/// of an invariant set aside (`explore --ignore`: a known bug of the pair, to look past it)
/// counts for nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hunt {
    /// Only violations no broken condition explains count.
    pub unexplained_only: bool,
    /// The invariants set aside, as bits of their positions in `InvariantId::ALL`.
    ignored: u32,
}

impl Hunt {
    /// Any violation counts.
    pub const ALL: Hunt = Hunt { unexplained_only: false, ignored: 0 };
    /// Only a violation no broken condition of validity explains counts.
    pub const UNEXPLAINED: Hunt = Hunt { unexplained_only: true, ignored: 0 };

    /// This hunt with `invariant`'s violations set aside.
    pub fn ignoring(self, invariant: InvariantId) -> Hunt {
        Hunt { ignored: self.ignored | Self::bit(invariant), ..self }
    }

    /// Whether `invariant`'s violations are set aside.
    pub fn ignores(self, invariant: InvariantId) -> bool {
        self.ignored & Self::bit(invariant) != 0
    }

    fn bit(invariant: InvariantId) -> u32 {
        let at = InvariantId::ALL.iter().position(|i| *i == invariant);
        1 << at.expect("InvariantId::ALL lists every invariant")
    }

    /// The violations of a run this hunt counts, in order.
    pub fn counted(self, outcome: &RunOutcome) -> Vec<Violation> {
        let kept = |v: &&Violation| !self.ignores(v.invariant);
        let records = outcome.trace.footer.as_ref().map(|f| f.verdict.as_slice()).unwrap_or(&[]);
        if !self.unexplained_only {
            outcome.violations.iter().filter(kept).cloned().collect()
        } else if records.len() != outcome.violations.len() {
            let conditions = mcpsim_model::oracle::conditions::Conditions::judge(&outcome.trace);
            outcome.violations.iter().filter(kept).filter(|v| !conditions.explain(v).is_explained()).cloned().collect()
        } else {
            outcome
                .violations
                .iter()
                .zip(records)
                .filter(|(v, r)| kept(v) && !mcpsim_model::oracle::conditions::record_is_explained(r))
                .map(|(v, _)| v.clone())
                .collect()
        }
    }

    /// Whether the run broke some invariant that this hunt does not count (explained ones, or
    /// ones set aside).
    pub fn skipped(self, outcome: &RunOutcome) -> bool {
        !outcome.violations.is_empty() && self.counted(outcome).is_empty()
    }

    /// The broken conditions that explain the violations of a run this hunt passed over (the
    /// first breach of each condition in each explanation), without those set aside. Read from
    /// the run's own judgement ([`RunOutcome::explained_by`]); an outcome without one is judged.
    pub fn explaining(self, outcome: &RunOutcome) -> BTreeSet<Condition> {
        let judged;
        let explained_by = match outcome.explained_by.len() == outcome.violations.len() {
            true => &outcome.explained_by,
            false => {
                judged = mcpsim_model::oracle::conditions::judged(&outcome.trace, &outcome.violations).1;
                &judged
            }
        };
        let kept = outcome.violations.iter().zip(explained_by).filter(|(v, _)| !self.ignores(v.invariant));
        kept.flat_map(|(_, by)| by.iter().copied()).collect()
    }

    /// The invariant a run is pinned to under this hunt (see `pinned_invariant`).
    pub fn pinned(self, outcome: &RunOutcome, target: Option<&str>) -> Option<&'static str> {
        pinned_invariant(&self.counted(outcome), target)
    }
}

/// The runs a hunt passed over (every violation explained by a broken condition, or set aside),
/// and how many of them each broken condition explains (a run may count under several).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Passed {
    /// Runs passed over.
    pub runs: u64,
    /// Per broken condition, the passed-over runs it explains.
    #[serde(default)]
    pub by: BTreeMap<Condition, u64>,
    /// Generated cases stopped at the step budget (`MCPSIM_MAX_STEPS`) and so not judged: a case
    /// the generator drew too long to run is the search's, not the user's, and ends nothing.
    #[serde(default)]
    pub over_budget: u64,
    /// Generated cases the scenario refused to be built with (a family file's own settings
    /// bound what may be drawn: a deploy of three replicas refuses two): the search's draw, not
    /// the user's input, so they end nothing either.
    #[serde(default)]
    pub refused: u64,
    /// Why the first of them was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_first: Option<String>,
}

impl Passed {
    /// Counts `outcome` if `hunt` passes it over.
    pub fn count(&mut self, hunt: Hunt, outcome: &RunOutcome) {
        if !hunt.skipped(outcome) {
            return;
        }
        self.runs += 1;
        for c in hunt.explaining(outcome) {
            *self.by.entry(c).or_default() += 1;
        }
    }

    /// Counts a generated case `scenario` refused to be built with.
    pub fn refuse(&mut self, error: &SimError) {
        self.refused += 1;
        self.refused_first.get_or_insert_with(|| error.to_string());
    }

    /// Adds another tally (a shard's, a thread's).
    pub fn add(&mut self, other: &Passed) {
        self.runs += other.runs;
        self.over_budget += other.over_budget;
        self.refused += other.refused;
        if self.refused_first.is_none() {
            self.refused_first.clone_from(&other.refused_first);
        }
        for (c, n) in &other.by {
            *self.by.entry(*c).or_default() += n;
        }
    }
}

/// The error of a search none of whose generated cases the scenario would be built with.
pub(crate) fn every_case_refused(passed: &Passed) -> SimError {
    SimError::Usage(format!(
        "the scenario refused every generated case ({}): its own settings leave the search nothing to draw",
        passed.refused_first.as_deref().unwrap_or("no reason given")
    ))
}

/// The invariant a counterexample is pinned to: `target` if given and broken, otherwise the first
/// broken one in the registry's order (most serious first: a duplicate payment before a lost
/// event before an orphaned session), whatever the order in time.
pub(crate) fn pinned_invariant(violations: &[Violation], target: Option<&str>) -> Option<&'static str> {
    let broken = |name: &str| violations.iter().any(|v| v.invariant == name);
    INVARIANTS.iter().map(|i| i.name).find(|name| target.is_none_or(|t| t == *name) && broken(name))
}

/// Which parameters the search may vary, and within which bounds.
#[derive(Clone, Debug)]
pub struct Space {
    /// Latest time a fault may be planned, from the start of the run.
    pub horizon: Duration,
    /// Vary environment parameters (timeouts, retention, backoff, tool timing).
    pub vary_parameters: bool,
    /// Keep parameters inside the design note's conditions of validity (ample retention, no
    /// idle expiry, no server restart, a client that keeps retrying): used to check pairs that
    /// should be safe. The conditions are pinned as overrides of the base
    /// (`Space::constraints`) that shrinking never drops, so a shrunk counterexample is still
    /// inside them.
    pub within_conditions: bool,
    /// Fault kinds the swarm may enable (names of [`Fault::KINDS`]; by default
    /// [`Fault::SEARCHED_BY_DEFAULT`], see [`Space::with_fault_kinds`]).
    pub fault_kinds: Vec<&'static str>,
    /// The most faults of one kind a case may plan.
    pub max_intensity: u32,
    /// Vary the chain of hops in front of the balancer (`lb.hops`: how many, their lifetimes,
    /// idle timeouts, buffering). On by default for a scenario that has a chain; off otherwise,
    /// so that the cases drawn for a chainless scenario (and the budgets of the searches that
    /// find the known unsafe pairs) stay what they were.
    pub vary_chain: bool,
    /// Which violations end the search (and shrinking keeps): all by default; `explore` hunts
    /// unexplained ones unless `--all`.
    pub hunt: Hunt,
    /// Swarm testing over faults *and* workload parts (`explore --swarm`; Groce et al., "Swarm
    /// Testing", ISSTA 2012): each case first draws which features are on at all — each fault
    /// kind and each workload part of [`Space::workload_parts`], each with probability ½ — and
    /// generates only from those. A fault kind that is off plans no fault of that kind, the
    /// family's own included; a workload part that is off keeps the family's value. Off by
    /// default: the default generator's draws (and the budgets measured on them) stay as they are.
    pub swarm: bool,
    /// The fault kinds the family plans itself (a swarm case with that kind off removes them).
    pub family_kinds: Vec<&'static str>,
    /// The shortest period at which a server may end its own streams in a case
    /// (`server_closes`): the steadiest re-attachment the family's `bounded-reconnects` bound
    /// allows (an hour over `run.max_reconnects_per_hour`).
    pub close_every: Duration,
}

impl Space {
    /// The default search space for a scenario family.
    pub fn for_scenario(base: &Scenario) -> Space {
        let horizon = base.last_tool_due() + Duration::from_secs(60);
        Space {
            horizon,
            vary_parameters: true,
            within_conditions: false,
            fault_kinds: Fault::SEARCHED_BY_DEFAULT.to_vec(),
            max_intensity: 3,
            vary_chain: !base.lb.hops.is_empty(),
            hunt: Hunt::ALL,
            swarm: false,
            family_kinds: Fault::KINDS
                .iter()
                .copied()
                .filter(|k| base.faults.faults().iter().any(|f| f.fault.kind() == *k))
                .collect(),
            close_every: Duration::from_secs(3_600 / u64::from(base.max_reconnects_per_hour.max(1))),
        }
    }

    /// This space with swarm testing over faults and workload parts on or off.
    pub fn swarming(self, swarm: bool) -> Space {
        Space { swarm, ..self }
    }

    /// This space drawing these fault kinds (names of [`Fault::KINDS`], in that order whatever
    /// the order given; an unknown name is refused), instead of its default: how a search is
    /// asked for a kind it does not draw by default (`blackhole`), or told to leave one out.
    /// Inside the conditions of validity no `server-restart` is drawn, asked for or not.
    pub fn with_fault_kinds(self, kinds: &[String]) -> Result<Space, SimError> {
        if let Some(k) = kinds.iter().find(|k| !Fault::KINDS.contains(&k.as_str())) {
            return Err(SimError::Usage(format!("unknown fault kind {k:?} (known: {})", Fault::KINDS.join(", "))));
        }
        let within = self.within_conditions;
        let fault_kinds = Fault::KINDS
            .iter()
            .copied()
            .filter(|k| kinds.iter().any(|asked| asked == k))
            .filter(|k| !within || *k != "server-restart")
            .collect();
        Ok(Space { fault_kinds, ..self })
    }

    /// The workload parts a swarm case may switch on here: calls, several clients and
    /// notifications everywhere; outside the conditions of validity also operator deletes, a
    /// rolling deploy, HTTP keep-alive and (for a family with one) the chain of hops — the parts
    /// the default generator varies outside the conditions only, for the same reasons
    /// (`family_dimensions`). Inside the conditions a call script never re-issues after an
    /// error (a re-issued non-idempotent call is a duplicate no pair can prevent).
    pub fn workload_parts(&self) -> Vec<&'static str> {
        let inside = ["clients", "calls", "notifications"];
        WORKLOAD_PARTS
            .iter()
            .map(|(p, _)| *p)
            .filter(|p| !self.within_conditions || inside.contains(p))
            .filter(|p| *p != "chain" || self.vary_chain)
            .collect()
    }

    /// Whether a case with swarm `swarm` may set `key`: a key of a workload part only while that
    /// part is on (every key when this space does no swarm testing).
    pub fn allows(&self, swarm: &Swarm, key: &str) -> bool {
        let mut parts = WORKLOAD_PARTS.iter().filter(|(_, keys)| keys.contains(&key)).peekable();
        !self.swarm || parts.peek().is_none() || parts.any(|(p, _)| swarm.contains_key(*p))
    }

    /// This space, stopping only at the violations `hunt` counts.
    pub fn hunting(self, hunt: Hunt) -> Space {
        Space { hunt, ..self }
    }

    /// The search space inside the design note's conditions of validity. It plans no server
    /// restart: the modelled server keeps sessions and event logs in memory, so a restart
    /// throws the buffer away and condition 2 (the server retains the buffer longer than the
    /// client's worst reconnect) cannot hold across one.
    pub fn within_conditions(base: &Scenario) -> Space {
        let fault_kinds = Fault::SEARCHED_BY_DEFAULT.iter().copied().filter(|k| *k != "server-restart").collect();
        Space { within_conditions: true, fault_kinds, ..Space::for_scenario(base) }
    }

    /// Overrides every case of this space keeps, shrunk or not: condition 2 by construction
    /// (unbounded retention with no time window, no idle expiry, and no server restart of the family's own plan) and
    /// a client that never gives up reconnecting. Conditions 1, 3 and 4 come from the profiles
    /// under test.
    pub(crate) fn constraints(&self, base: &Scenario) -> Vec<Override> {
        if !self.within_conditions {
            return vec![];
        }
        let mut pinned =
            vec![("server.retention", "unbounded"), ("server.retention_window", "none"), ("server.idle_ttl", "none")];
        if base.faults.faults().iter().any(|f| f.fault == Fault::ServerRestart) {
            pinned.push(("fault.server_restart", "none"));
        }
        pinned.push(("client.max_attempts", "unlimited"));
        // A session's requests reach the replica that holds it: round robin over replica-local
        // sessions answers 404 to half of them (found by --guided once a shrink dropped the
        // routing its case was drawn with).
        pinned.push(("lb.routing", "sticky-session"));
        pinned.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// The base a search of this space runs its cases on.
    pub(crate) fn constrained(&self, base: &Scenario) -> Result<Scenario, SimError> {
        let mut s = base.clone();
        s.apply_overrides(&self.constraints(base))?;
        Ok(s)
    }

    pub(crate) fn check(&self) -> Result<(), SimError> {
        match self.fault_kinds.iter().find(|k| fault_setting(k).is_none()) {
            Some(k) => Err(SimError::Usage(format!("unknown fault kind {k:?} (known: {})", Fault::KINDS.join(", ")))),
            None => Ok(()),
        }
    }
}

fn secs(s: u64) -> String {
    format_duration(Duration::from_secs(s))
}

fn millis(ms: u64) -> String {
    format_duration(Duration::from_millis(ms))
}

/// An optional value: shrinks towards `none` (the simpler model) once its value is as small as
/// it goes.
fn optional(inner: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop_oneof![1 => Just("none".to_string()), 3 => inner].boxed()
}

fn keyed(key: &'static str, value: impl Strategy<Value = String> + 'static) -> BoxedStrategy<Override> {
    value.prop_map(move |v| (key.to_string(), v)).boxed()
}

/// A dimension the family fixes: most cases keep the family's value (no override at all), the
/// others override it with a value of `value`. Shrinks to the family's value first, then, while
/// the override matters, along `value`.
fn family_or(key: &'static str, value: BoxedStrategy<String>) -> BoxedStrategy<Option<Override>> {
    prop_oneof![2 => Just(None), 1 => keyed(key, value).prop_map(Some)].boxed()
}

/// A one-way latency range `MIN..MAX`, in milliseconds: shrinks towards 0ms..1ms.
fn latency() -> BoxedStrategy<String> {
    (0u64..=50, 1u64..=200).prop_map(|(min, spread)| format!("{}..{}", millis(min), millis(min + spread))).boxed()
}

/// Environment parameters, as overrides. Those every case sets shrink towards their smallest
/// value; the dimensions of [`family_dimensions`] towards the family's own value.
fn parameters(space: &Space) -> BoxedStrategy<Vec<Override>> {
    let mut params = vec![
        keyed("tool.duration", (1u64..=600).prop_map(secs)),
        keyed("lb.idle_timeout", optional((10u64..=300).prop_map(secs).boxed())),
        keyed("server.keepalive", optional((5u64..=90).prop_map(secs).boxed())),
        keyed("server.retry", optional((1u64..=30).prop_map(secs).boxed())),
        keyed("client.backoff_initial", (100u64..=5_000).prop_map(millis)),
        // From 5 s: never below the largest first delay above (a cap below it is refused).
        keyed("client.backoff_max", (5u64..=60).prop_map(secs)),
        keyed("client.backoff_factor", (10u32..=30).prop_map(|f| format!("{:.1}", f64::from(f) / 10.0))),
    ];
    if !space.within_conditions {
        let count_or = |none: &'static str, max: u32| prop_oneof![1 => Just(none.to_string()), 3 => (1..=max).prop_map(|n| n.to_string())];
        params.push(keyed("server.retention", count_or("unbounded", 300)));
        params.push(keyed("server.idle_ttl", optional((30u64..=3_600).prop_map(secs).boxed())));
        params.push(keyed("client.max_attempts", count_or("unlimited", 30)));
    }
    (params, family_dimensions(space))
        .prop_map(|(mut set, rest)| {
            set.extend(rest.into_iter().flatten());
            set
        })
        .boxed()
}

/// The settings a family fixes and a case may change: each stays at the family's value in two
/// cases out of three. Inside the conditions of validity some must stay fixed (see each).
fn family_dimensions(space: &Space) -> BoxedStrategy<Vec<Option<Override>>> {
    let choice = |values: &'static [&'static str]| prop::sample::select(values).prop_map(str::to_string).boxed();
    let mut dims = vec![
        // Environment: how often the tool speaks, whether it may run twice, how slow the wire is.
        family_or("tool.event_interval", optional((1u64..=30).prop_map(secs).boxed())),
        family_or("tool.idempotent", choice(&["true", "false"])),
        family_or("net.latency", latency()),
        family_or("tool.jitter", choice(&["0", "0.1", "0.25", "0.5"])),
        // Mitigations: idempotency keys sent by the client, honoured by the server. Safe pairs
        // must stay safe with them, so they are varied inside the conditions too.
        family_or("client.idempotency_keys", choice(&["true", "false"])),
        family_or("server.idempotency_keys", choice(&["true", "false"])),
        // Topology: replicas behind the load balancer, and a CDN-like maximum connection age.
        family_or("lb.replicas", choice(&["1", "2", "3"])),
        family_or("lb.max_lifetime", optional((60u64..=600).prop_map(secs).boxed())),
        family_or("lb.store", choice(&["local", "shared"])),
    ];
    // Inside the conditions a session must reach the replica that holds it: always sticky by
    // session id, pinned by `Space::constraints`. Outside them any routing rule (round robin over
    // local stores gives 404s).
    if !space.within_conditions {
        dims.push(family_or("lb.routing", choice(&["round-robin", "sticky-session", "sticky-client", "random"])));
    }
    // The workload, outside the conditions: a script of 1 to MAX_SCRIPT_CALLS calls of the
    // family's main tool by client 0, each after an idle gap, with what the application does
    // after an error (a re-issue of a non-idempotent call is a duplicate the pair cannot
    // prevent), and operator DELETEs (no condition covers a session ended behind the client's
    // back). Inside the conditions the family's own script stays: a new dimension there would
    // change every later draw of the safe pairs' fixed-seed searches (see the branch's report).
    if !space.within_conditions && !space.swarm {
        dims.push(family_or("app.calls", call_script()));
        let horizon = space.horizon.as_secs().max(1);
        dims.push(family_or(
            "app.operator_deletes",
            prop::collection::vec(0..=horizon, 1..=2).prop_map(times_value).boxed(),
        ));
    }
    if !space.within_conditions {
        // Condition 2 (retention outlasts the worst reconnect): within the conditions retention
        // is unbounded, so no time window either ([`Space::constraints`] pins it to none).
        dims.push(family_or("server.retention_window", optional((5u64..=600).prop_map(secs).boxed())));
        // Condition 3 (an unhonourable Last-Event-ID is rejected explicitly) and the store's
        // scope belong to the server profile under test: within the conditions they stay its own.
        dims.push(family_or(
            "server.unhonourable",
            choice(&["410", "409", "silent-head", "from-oldest", "empty-closed", "empty-open"]),
        ));
        dims.push(family_or("server.store", choice(&["per-session", "shared-by-request-id"])));
        // Condition 1 (the client persists Last-Event-ID durably) belongs to the client profile
        // under test: within the conditions it stays its own.
        dims.push(family_or("client.persistence", choice(&["durable", "volatile"])));
        // A request timeout is a client that gives up on a call: within the conditions the
        // client never gives up, so it stays the client profile's own.
        dims.push(family_or("client.request_timeout", optional((5u64..=900).prop_map(secs).boxed())));
        // A chain of hops in front of the balancer (a CDN): lifetimes, idle timeouts that may
        // ignore comments, response buffering. Outside the conditions only: buffered progress
        // can outlast a request timeout. Shrinks to the family's chain, then to fewer hops.
        if space.vary_chain && !space.swarm {
            dims.push(family_or("lb.hops", hops()));
        }
        // A rolling deploy: the replicas restarted one by one from a time within the horizon,
        // 10 s to 2 min apart, with or without draining. Outside the conditions only: a restart
        // without draining cuts streams (and with local stores ends sessions), which the
        // conditions leave to the profiles' own persistence. Shrinks to no deploy, then earlier.
        if space.swarm {
            // Swarm testing draws the workload parts below as a whole ([`workload`]).
            return dims.boxed();
        }
        let horizon = space.horizon.as_secs().max(1);
        dims.push(family_or("fault.deploy", deploy(horizon)));
        // HTTP keep-alive on every side: the client library's pool (its idle expiry, and what it
        // re-sends by itself), the balancer's upstream pool and re-sends, the server's keep-alive
        // timeout. Outside the conditions only: a library or balancer that re-sends a written POST
        // duplicates it, and a kept-alive connection closed under a request fails a call the
        // pair would have answered; within them every exchange keeps its own connection.
        dims.push(family_or("client.http.keep_alive", choice(&["true", "false"])));
        dims.push(family_or("client.http.idle_expiry", optional((1u64..=120).prop_map(secs).boxed())));
        dims.push(family_or("client.http.retry", choice(&["unsent", "reused-before-response"])));
        dims.push(family_or("lb.upstream_keep_alive", choice(&["true", "false"])));
        dims.push(family_or("lb.retry_upstream", choice(&["never", "idempotent", "any"])));
        dims.push(family_or("server.keep_alive_timeout", optional((1u64..=120).prop_map(secs).boxed())));
        // Notifications as a workload (`app.notifications`): every 1 to 30 s, up to the horizon,
        // whatever the faults. Outside the conditions only, last so earlier draws keep their order.
        let horizon = space.horizon.as_secs().max(2);
        dims.push(family_or(
            "app.notifications",
            (1u64..=30).prop_map(move |i| format!("{i}s,until={horizon}s")).boxed(),
        ));
        // An intermediary answering every new request itself for a while (a gateway's rate
        // limit or access rule, a route reload): the nearest hop, the balancer when there is no
        // chain. Its 4xx is a close the decision procedure has no rule for, which ends a call's
        // stream for good; its 5xx a transport fault. Outside the conditions only (a hop's own
        // 4xx breaks condition 4); last, so earlier draws keep their order.
        dims.push(family_or("fault.answer", hop_answer(horizon)));
    }
    dims.boxed()
}

/// A window in which the nearest hop answers every new request with one status itself
/// (`fault.answer`): from a time within the horizon, 1 s to 2 min long.
fn hop_answer(horizon: u64) -> BoxedStrategy<String> {
    let status = prop::sample::select(&[429u16, 403, 401, 400, 503, 502][..]);
    (status, 0..=horizon, 1u64..=120)
        .prop_map(|(status, start, len)| format!("hop0={status}@{}..{}", secs(start), secs(start + len)))
        .boxed()
}

/// The most calls a generated script has.
const MAX_SCRIPT_CALLS: usize = 4;

/// A call script (`app.calls`): a first call at 1 s, then each after an idle gap of 0 to 10
/// minutes (so the session may expire between calls), each with what the application does after
/// an error. Shrinks towards one call, then shorter gaps and give-up.
fn call_script() -> BoxedStrategy<String> {
    script(1, true)
}

/// A call script over `clients` clients: each call by one of them (client 0 shrinks first), and
/// re-issues after an error only when `reissue`. With one client and re-issues it draws exactly
/// what the default generator always drew (no client dimension), so its fixed-seed searches keep
/// their cases.
fn script(clients: u32, reissue: bool) -> BoxedStrategy<String> {
    let reaction = if reissue {
        prop_oneof![3 => Just("give-up"), 1 => Just("reissue"), 1 => Just("reinitialize-reissue")].boxed()
    } else {
        Just("give-up").boxed()
    };
    let calls = if clients > 1 {
        prop::collection::vec((0u64..=600, reaction, 0..clients), 1..=MAX_SCRIPT_CALLS).boxed()
    } else {
        prop::collection::vec(
            (0u64..=600, reaction).prop_map(|(gap, on_error)| (gap, on_error, 0)),
            1..=MAX_SCRIPT_CALLS,
        )
        .boxed()
    };
    calls
        .prop_map(|calls| {
            let entries: Vec<String> = calls
                .iter()
                .enumerate()
                .map(|(i, (gap, on_error, client))| {
                    let mut call = if i == 0 { "1s".to_string() } else { format!("+{}", secs(*gap)) };
                    if *client > 0 {
                        call.push_str(&format!(" client={client}"));
                    }
                    if *on_error != "give-up" {
                        call.push_str(&format!(" on_error={on_error}"));
                    }
                    call
                })
                .collect();
            entries.join("; ")
        })
        .boxed()
}

/// The overrides of one workload part switched on (see [`WORKLOAD_PARTS`]).
fn part_overrides(part: &str, space: &Space, on: &[&str]) -> BoxedStrategy<Vec<Override>> {
    let one =
        |key: &'static str, value: BoxedStrategy<String>| value.prop_map(move |v| vec![(key.to_string(), v)]).boxed();
    let reissue = !space.within_conditions;
    let horizon = space.horizon.as_secs().max(2);
    let choice = |values: &'static [&'static str]| prop::sample::select(values).prop_map(str::to_string).boxed();
    match part {
        "clients" => (2..=MAX_SWARM_CLIENTS)
            .prop_flat_map(move |n| {
                // Every client calls once at least; the script spreads the rest.
                script(n, reissue).prop_map(move |s| {
                    let mut script = s;
                    for c in 1..n {
                        if !script.contains(&format!("client={c}")) {
                            script.push_str(&format!("; 1s client={c}"));
                        }
                    }
                    vec![("app.clients".to_string(), n.to_string()), ("app.calls".to_string(), script)]
                })
            })
            .boxed(),
        "calls" if on.contains(&"clients") => Just(vec![]).boxed(),
        "calls" => one("app.calls", script(1, reissue)),
        "notifications" => {
            one("app.notifications", (1u64..=30).prop_map(move |i| format!("{i}s,until={horizon}s")).boxed())
        }
        "deletes" => {
            one("app.operator_deletes", prop::collection::vec(0..=horizon, 1..=2).prop_map(times_value).boxed())
        }
        "deploy" => one("fault.deploy", deploy(horizon)),
        "keep-alive" => (
            choice(&["true", "false"]),
            optional((1u64..=120).prop_map(secs).boxed()),
            choice(&["unsent", "reused-before-response"]),
            choice(&["true", "false"]),
            choice(&["never", "idempotent", "any"]),
            optional((1u64..=120).prop_map(secs).boxed()),
        )
            .prop_map(|(a, b, c, d, e, f)| {
                [
                    ("client.http.keep_alive", a),
                    ("client.http.idle_expiry", b),
                    ("client.http.retry", c),
                    ("lb.upstream_keep_alive", d),
                    ("lb.retry_upstream", e),
                    ("server.keep_alive_timeout", f),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
            })
            .boxed(),
        "chain" => one("lb.hops", hops()),
        other => unreachable!("{other} is not a workload part"),
    }
}

/// The workload under swarm testing: which parts are on (each with probability ½, shrinking to
/// off), then the overrides of those only.
fn workload(space: &Space) -> BoxedStrategy<(Vec<&'static str>, Vec<Override>)> {
    let parts = space.workload_parts();
    let space = space.clone();
    prop::collection::vec(any::<bool>(), parts.len())
        .prop_flat_map(move |switches| {
            let on: Vec<&'static str> = parts.iter().zip(&switches).filter(|(_, s)| **s).map(|(p, _)| *p).collect();
            let drawn: Vec<BoxedStrategy<Vec<Override>>> = on.iter().map(|p| part_overrides(p, &space, &on)).collect();
            (Just(on), drawn).prop_map(|(on, drawn)| (on, drawn.concat()))
        })
        .boxed()
}

/// A rolling deploy `AT/INTERVAL[/DRAIN]` (see `scenario::faults::parse_deploy`): at 0 s to
/// `horizon`, replicas 10 s to 2 min apart, draining up to 2 min or not at all.
fn deploy(horizon: u64) -> BoxedStrategy<String> {
    (0..=horizon, 10u64..=120, prop::option::of(1u64..=120))
        .prop_map(|(at, interval, drain)| match drain {
            Some(d) => format!("{}/{}/{}", secs(at), secs(interval), secs(d)),
            None => format!("{}/{}", secs(at), secs(interval)),
        })
        .boxed()
}

/// One to three hops, as the inline TOML array `lb.hops` takes.
fn hops() -> BoxedStrategy<String> {
    let hop = (
        optional((60u64..=600).prop_map(secs).boxed()),
        optional((10u64..=300).prop_map(secs).boxed()),
        any::<bool>(),
        optional((1u64..=60).prop_map(secs).boxed()),
        prop_oneof![Just("none".to_string()), (1u64..=16).prop_map(|k| format!("{k}KiB"))],
    )
        .prop_map(|(lifetime, idle, comments_count, flush, buffer)| {
            format!(
                "{{ max_lifetime = \"{lifetime}\", idle_timeout = \"{idle}\", comments_count = {comments_count}, \
                 flush_interval = \"{flush}\", buffer = \"{buffer}\" }}"
            )
        });
    prop::collection::vec(hop, 1..=3).prop_map(|hops| format!("[{}]", hops.join(", "))).boxed()
}

/// Renders fault times as the value of their kind's key.
pub(crate) fn times_value(mut times: Vec<u64>) -> String {
    times.sort_unstable();
    times.dedup();
    if times.is_empty() {
        return "none".to_string();
    }
    times.iter().map(|t| secs(*t)).collect::<Vec<_>>().join(",")
}

/// Renders `(start, length)` windows as the value of `fault.partition` (or `fault.blackhole`),
/// sorted and moved apart so that they do not overlap (an overlap would merge two faults into one).
pub(crate) fn partitions_value(mut parts: Vec<(u64, u64)>) -> String {
    parts.sort_unstable();
    let mut out: Vec<String> = Vec::new();
    let mut free_from = 0;
    for (start, len) in parts {
        let start = start.max(free_from);
        out.push(format!("{}..{}", secs(start), secs(start + len)));
        free_from = start + len + 1;
    }
    if out.is_empty() {
        "none".to_string()
    } else {
        out.join(",")
    }
}

/// The faults of one kind under swarm testing: disabled (the family's own plan stays), or enabled
/// with an intensity `n` and up to `n` faults that replace the family's (none at all is a case
/// too). Shrinks element-wise — fewer faults, then each earlier or shorter — and then to disabled.
fn kind_faults(kind: &'static str, horizon: u64, max: u32) -> BoxedStrategy<Option<(u32, Override)>> {
    let key = fault_setting(kind).expect("Space::check vetted the kinds");
    let len = 0..=max as usize;
    // The list before the intensity: it shrinks first, to the faults that matter, and the
    // intensity then comes down to their number.
    let enabled: BoxedStrategy<(u32, String)> = if WINDOW_KINDS.contains(&kind) {
        (prop::collection::vec((0..=horizon, 1..=MAX_PARTITION), len), 1..=max)
            .prop_map(|(mut parts, n)| {
                parts.truncate(n as usize);
                (n, partitions_value(parts))
            })
            .boxed()
    } else {
        (prop::collection::vec(0..=horizon, len), 1..=max)
            .prop_map(|(mut times, n)| {
                times.truncate(n as usize);
                (n, times_value(times))
            })
            .boxed()
    };
    prop::option::of(enabled).prop_map(move |e| e.map(|(n, value)| (n, (key.to_string(), value)))).boxed()
}

/// A fault plan under swarm testing: each kind enabled with probability ½ and its own intensity.
fn fault_plan(space: &Space) -> BoxedStrategy<(Swarm, Vec<Override>)> {
    let horizon = space.horizon.as_secs().max(1);
    let max = space.max_intensity.max(1);
    let kinds: Vec<_> = space.fault_kinds.iter().map(|k| kind_faults(k, horizon, max)).collect();
    let names = space.fault_kinds.clone();
    kinds
        .prop_map(move |drawn| {
            let mut swarm = Swarm::new();
            let mut overrides = Vec::new();
            for (kind, d) in names.iter().zip(drawn) {
                if let Some((n, o)) = d {
                    swarm.insert(kind.to_string(), n);
                    overrides.push(o);
                }
            }
            (swarm, overrides)
        })
        .boxed()
}

/// The strategy of cases for a scenario family.
pub(crate) fn cases(space: &Space) -> BoxedStrategy<Case> {
    if space.swarm {
        return swarm_cases(space);
    }
    let params = if space.vary_parameters { parameters(space) } else { Just(vec![]).boxed() };
    (params, fault_plan(space), any::<u64>().no_shrink(), server_closes(space))
        .prop_map(|(mut overrides, (swarm, faults), seed, closes)| {
            overrides.extend(faults);
            overrides.extend(closes.into_iter().flatten());
            Case { overrides, swarm, seed }
        })
        .boxed()
}

/// The server ending its own streams gracefully: each request's stream a while after it opened
/// (TypeScript's `closeSSEStream` from a tool), the standalone GET after a silence (an idle
/// close). A close is no broken condition (the stream resumes from its last id), so inside the
/// conditions too. No closer together than `bounded-reconnects` allows a steady re-attachment
/// ([`Space::close_every`]: every 2 minutes under the default bound): a server that closes its
/// streams more often drives churn by that invariant's own rule (SEP-1699 polling at `0s` among
/// them). The conditions now explain that churn by the server's pacing, so a search would count
/// it and go on; the floor stays so that the cases drawn, and the figures measured on them, stay
/// what they were. Drawn after everything else, so every earlier draw of a seed stays what it
/// was; each stays the server profile's own in two cases out of three.
fn server_closes(space: &Space) -> BoxedStrategy<Vec<Option<Override>>> {
    if !space.vary_parameters {
        return Just(vec![]).boxed();
    }
    let every = space.close_every.as_secs().max(1);
    vec![
        family_or("server.close_request_streams", optional((every..=5 * every).prop_map(secs).boxed())),
        family_or("server.close_idle_standalone", optional((every..=5 * every).prop_map(secs).boxed())),
    ]
    .boxed()
}

/// The strategy of cases under swarm testing ([`Space::swarm`]): the parameters, the workload
/// parts switched on, and the fault kinds switched on; a kind the family plans itself and the
/// case switched off is set to `none`.
fn swarm_cases(space: &Space) -> BoxedStrategy<Case> {
    let params = if space.vary_parameters { parameters(space) } else { Just(vec![]).boxed() };
    let family_kinds: Vec<&'static str> =
        space.family_kinds.iter().copied().filter(|k| space.fault_kinds.contains(k)).collect();
    (params, workload(space), fault_plan(space), any::<u64>().no_shrink(), server_closes(space))
        .prop_map(move |(mut overrides, (parts, workload), (mut swarm, faults), seed, closes)| {
            overrides.extend(workload);
            overrides.extend(faults);
            overrides.extend(closes.into_iter().flatten());
            for kind in &family_kinds {
                let key = fault_setting(kind).expect("a fault kind has a key");
                if !swarm.contains_key(*kind) && !overrides.iter().any(|(k, _)| k == key) {
                    overrides.push((key.to_string(), "none".to_string()));
                }
            }
            swarm.extend(parts.into_iter().map(|p| (p.to_string(), 1)));
            Case { overrides, swarm, seed }
        })
        .boxed()
}

/// What a search found.
#[derive(Debug)]
pub struct Found {
    /// The invariant the counterexample breaks (shrinking keeps it).
    pub invariant: &'static str,
    /// The first failing case, as generated.
    pub original: Counterexample,
    /// The shrunk case (the original when shrinking was off).
    pub minimal: Counterexample,
    /// Runs spent shrinking.
    pub shrink_runs: u64,
    /// A simulation error met while shrinking (the candidate was skipped): a bug of mcpsim.
    pub shrink_error: Option<String>,
}

/// What a search did.
#[derive(Debug)]
pub struct SearchReport {
    /// The first violation and its shrunk form; `None` when the budget ran out first.
    pub found: Option<Found>,
    /// Cases run until the first violation (or the whole budget).
    pub cases: u64,
    /// Coverage events over those cases (shrinking runs not counted).
    pub coverage: Coverage,
    /// Cases that broke an invariant the hunt does not count (explained by a broken condition),
    /// and by which conditions.
    pub explained: Passed,
    /// Steps those cases simulated (shrinking runs not counted).
    pub steps: u64,
}

/// What an exploration (seeds, generated cases, guided) ran, for its summary.
pub struct Explored {
    /// The first violation hunted, shrunk unless shrinking was off.
    pub found: Option<Found>,
    /// Runs until it (or the whole budget).
    pub runs: u64,
    /// Steps those runs simulated: with the seconds, how heavy the runs were.
    pub steps: u64,
    /// Coverage events over those runs.
    pub coverage: Coverage,
    /// Runs passed over (every violation explained), and by which conditions.
    pub explained: Passed,
}

impl From<SearchReport> for Explored {
    fn from(r: SearchReport) -> Explored {
        Explored { found: r.found, runs: r.cases, steps: r.steps, coverage: r.coverage, explained: r.explained }
    }
}

/// Runs up to `budget` generated cases from a deterministic generator seeded by `rng_seed`; on the
/// first violation, shrinks it (unless `shrink` is false) keeping the same invariant broken.
pub fn search(
    base: &Scenario,
    space: &Space,
    budget: u32,
    rng_seed: u64,
    shrink: bool,
) -> Result<SearchReport, SimError> {
    search_for(base, space, budget, rng_seed, shrink, None)
}

/// What the property closure learns, carried out of proptest's `Fn` closure.
#[derive(Default)]
struct Learned {
    /// The invariant pinned by the first failing case.
    target: Option<&'static str>,
    original: Option<Counterexample>,
    cases: u64,
    shrink_runs: u64,
    /// Simulated steps spent shrinking (see [`SHRINK_STEP_BUDGET`]).
    shrink_steps: u64,
    coverage: Coverage,
    /// Steps the generated cases simulated.
    steps: u64,
    /// Cases whose violations were all explained (see [`Hunt::skipped`]).
    explained: Passed,
    /// A simulation error before anything was found: ends the search.
    error: Option<SimError>,
    shrink_error: Option<String>,
}

/// [`search`], counting only violations of `target` (any invariant when `None`).
pub fn search_for(
    base: &Scenario,
    space: &Space,
    budget: u32,
    rng_seed: u64,
    shrink: bool,
    target: Option<&str>,
) -> Result<SearchReport, SimError> {
    space.check()?;
    if let Some(t) = target.filter(|t| !INVARIANTS.iter().any(|i| i.name == *t)) {
        return Err(SimError::Usage(format!("unknown invariant {t:?} (see `mcpsim profiles`)")));
    }
    let base = space.constrained(base)?;
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&rng_seed.to_le_bytes());
    let config = Config {
        cases: budget,
        max_shrink_iters: if shrink { MAX_SHRINK_RUNS } else { 0 },
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes));
    let learned = RefCell::new(Learned::default());
    let hunt = space.hunt;
    let result = runner.run(&cases(space), |case| try_case(&base, &case, target, hunt, &mut learned.borrow_mut()));
    let mut learned = learned.into_inner();
    if let Some(e) = learned.error.take() {
        return Err(e);
    }
    if learned.cases > 0 && learned.explained.refused == learned.cases {
        return Err(every_case_refused(&learned.explained));
    }
    let report = |found| SearchReport {
        found,
        cases: learned.cases,
        coverage: learned.coverage.clone(),
        explained: learned.explained.clone(),
        steps: learned.steps,
    };
    let minimal = match result {
        Ok(()) => return Ok(report(None)),
        Err(TestError::Abort(reason)) => return Err(SimError::Runtime(format!("search aborted: {reason}"))),
        Err(TestError::Fail(_, minimal)) => minimal,
    };
    let invariant = learned.target.expect("a failure pins its invariant");
    let original = learned.original.take().expect("a failure keeps its case");
    let scenario = minimal.scenario(&base)?;
    let outcome = run(&scenario, minimal.seed)?;
    let mut minimal = Counterexample { scenario, seed: minimal.seed, outcome };
    if minimal.size() > original.size() || !minimal.breaks_in(invariant, hunt) {
        // proptest's pass made nothing smaller by our measure: start again from the case found.
        minimal = original.clone();
    }
    let mut shrink_runs = learned.shrink_runs + 1;
    if shrink {
        let left = SHRINK_STEP_BUDGET.saturating_sub(learned.shrink_steps);
        let (smaller, runs) = shrink_fixed_within(&base, &minimal, invariant, hunt, left)?;
        minimal = smaller;
        shrink_runs += runs;
    }
    let shrink_error = learned.shrink_error.take();
    Ok(report(Some(Found { invariant, original, minimal, shrink_runs, shrink_error })))
}

/// The property: one case runs; it fails when it breaks the pinned invariant (or, before one is
/// pinned, any invariant — which pins it).
fn try_case(
    base: &Scenario,
    case: &Case,
    target: Option<&str>,
    hunt: Hunt,
    learned: &mut Learned,
) -> Result<(), TestCaseError> {
    let searching = learned.target.is_none();
    if searching {
        learned.cases += 1;
    } else if learned.shrink_steps >= SHRINK_STEP_BUDGET / 4 * 3 {
        // Out of shrinking budget: proptest takes a rejection as a pass and walks back to the
        // smallest failing case, without running anything more.
        return Err(TestCaseError::reject("shrink budget spent"));
    } else {
        learned.shrink_runs += 1;
    }
    let ran = match case.scenario(base) {
        Ok(s) => run(&s, case.seed).map(|o| (s, o)),
        Err(e) if searching => {
            learned.explained.refuse(&e);
            return Ok(());
        }
        Err(e) => Err(e),
    };
    if let (false, Ok((_, outcome))) = (searching, &ran) {
        let steps = outcome.trace.steps.len() as u64;
        learned.shrink_steps += steps;
        let original = learned.original.as_ref().map_or(0, |o| o.outcome.trace.steps.len() as u64);
        if steps > longest_candidate(original) {
            return Err(TestCaseError::reject("runs far longer than the case it shrinks"));
        }
    }
    let (scenario, outcome) = match ran {
        Ok(ran) => ran,
        Err(SimError::OverBudget { .. }) if searching => {
            learned.explained.over_budget += 1;
            return Ok(());
        }
        Err(e) if searching => {
            learned.error = Some(e);
            return Err(TestCaseError::fail("simulation error"));
        }
        Err(e) => {
            // A shrinking candidate that cannot run is not the failure we are shrinking.
            learned.shrink_error.get_or_insert_with(|| format!("{e} ({case:?})"));
            return Err(TestCaseError::reject("simulation error"));
        }
    };
    if searching {
        learned.coverage.merge(&coverage(&outcome.trace));
        learned.steps += outcome.trace.steps.len() as u64;
        learned.explained.count(hunt, &outcome);
    }
    let wanted = learned.target.or(target);
    match hunt.pinned(&outcome, wanted) {
        Some(invariant) if searching => {
            learned.target = Some(invariant);
            learned.original = Some(Counterexample { scenario, seed: case.seed, outcome });
            Err(TestCaseError::fail(invariant))
        }
        Some(invariant) => Err(TestCaseError::fail(invariant)),
        None => Ok(()),
    }
}

/// Shrinks a counterexample without a generator: removes each planned fault (the family's own
/// too, with an override such as `fault.partition=none`) and drops each override `found` added
/// to `base`, keeping a change while the same seed still breaks `invariant` and the [`Size`]
/// (faults, then overrides, then steps) gets smaller. `base`'s own overrides are kept: they are
/// what the search was asked to explore. Returns the smallest counterexample and the runs spent.
pub(crate) fn shrink_fixed(
    base: &Scenario,
    found: &Counterexample,
    invariant: &str,
    hunt: Hunt,
) -> Result<(Counterexample, u64), SimError> {
    shrink_fixed_within(base, found, invariant, hunt, SHRINK_STEP_BUDGET)
}

/// [`shrink_fixed`] spending at most `budget` simulated steps: it stops with the smallest case
/// found so far once its runs have taken that many.
pub(crate) fn shrink_fixed_within(
    base: &Scenario,
    found: &Counterexample,
    invariant: &str,
    hunt: Hunt,
    budget: u64,
) -> Result<(Counterexample, u64), SimError> {
    if !found.breaks_in(invariant, hunt) {
        return Err(SimError::Runtime(format!("the counterexample to shrink does not break {invariant}")));
    }
    let kept = base.overrides.len();
    if found.scenario.overrides.get(..kept) != Some(&base.overrides[..]) {
        return Err(SimError::Runtime("the counterexample was not built on this base".into()));
    }
    let mut best = found.clone();
    let (mut runs, mut steps) = (0, 0u64);
    'improve: loop {
        let added = best.scenario.overrides[kept..].to_vec();
        for candidate in smaller_candidates(&best.scenario, &added)? {
            let mut scenario = base.clone();
            if scenario.apply_overrides(&candidate).is_err() {
                // One of two settings that go together dropped (`app.clients` without the
                // script's `client=N` calls): no scenario, so not a smaller counterexample.
                continue;
            }
            scenario.swarm = best.scenario.swarm.clone();
            let best_size = best.size();
            if (scenario.faults.len(), scenario.overrides.len()) > (best_size.faults, best_size.overrides) {
                continue;
            }
            if steps >= budget {
                return Ok((best, runs));
            }
            runs += 1;
            let outcome = run(&scenario, best.seed)?;
            steps += outcome.trace.steps.len() as u64;
            let tried = Counterexample { scenario, seed: best.seed, outcome };
            if tried.breaks_in(invariant, hunt) && tried.size() < best_size {
                best = tried;
                continue 'improve;
            }
        }
        return Ok((best, runs));
    }
}

/// The override lists one step smaller than `added` on `scenario`: each fault removed (fewest
/// faults come first), then each override dropped.
fn smaller_candidates(scenario: &Scenario, added: &[Override]) -> Result<Vec<Vec<Override>>, SimError> {
    let mut out = Vec::new();
    let faults = scenario.faults.faults();
    for i in 0..faults.len() {
        let kind = faults[i].fault.kind();
        let key = fault_setting(kind).expect("every fault kind has a key");
        let mut without = scenario.clone();
        without.faults =
            FaultPlan::new(faults.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, f)| f.clone()).collect());
        let value = (setting(key)?.show)(&without);
        let mut candidate: Vec<Override> = added.iter().filter(|(k, _)| k != key).cloned().collect();
        candidate.push((key.to_string(), value));
        out.push(candidate);
    }
    for i in 0..added.len() {
        let mut fewer = added.to_vec();
        fewer.remove(i);
        out.push(fewer);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;

    fn long_tool() -> Scenario {
        Scenario::build("long-tool", "reference", "reference").unwrap()
    }

    #[test]
    fn an_unexplained_hunt_passes_over_violations_a_broken_condition_explains() {
        // The first incident: the naive client re-initializes on a reset (condition 4 broken).
        let naive = Scenario::build("long-tool", "naive", "reference").unwrap();
        let outcome = run(&naive, 0).unwrap();
        assert!(!outcome.violations.is_empty());
        assert_eq!(Hunt::ALL.pinned(&outcome, None), Some("no-duplicate-execution"));
        assert_eq!(Hunt::UNEXPLAINED.pinned(&outcome, None), None);
        assert!(Hunt::UNEXPLAINED.skipped(&outcome) && !Hunt::ALL.skipped(&outcome));
        // An unexplained one still counts: a clean run has none either way.
        let clean = run(&long_tool(), 0).unwrap();
        assert!(Hunt::UNEXPLAINED.counted(&clean).is_empty() && !Hunt::UNEXPLAINED.skipped(&clean));
    }

    /// A passed-over run is counted with the conditions that explain it; a run set aside whole
    /// by `--ignore` is counted under none; a run a hunt stops at is not counted.
    #[test]
    fn passed_over_runs_are_tallied_by_the_conditions_that_explain_them() {
        let naive = Scenario::build("long-tool", "naive", "reference").unwrap();
        let outcome = run(&naive, 0).unwrap();
        let mut passed = Passed::default();
        passed.count(Hunt::UNEXPLAINED, &outcome);
        passed.count(Hunt::UNEXPLAINED, &outcome);
        assert_eq!(passed.runs, 2);
        assert_eq!(passed.by.get(&Condition::ByClass), Some(&2), "{passed:?}");
        assert!(passed.by.keys().all(|c| !c.is_server_bug()));
        // An outcome without the run's own judgement is judged: the same conditions.
        let bare =
            RunOutcome { trace: outcome.trace.clone(), violations: outcome.violations.clone(), explained_by: vec![] };
        assert_eq!(Hunt::UNEXPLAINED.explaining(&bare), Hunt::UNEXPLAINED.explaining(&outcome));
        let mut stopped = Passed::default();
        stopped.count(Hunt::ALL, &outcome);
        assert_eq!(stopped, Passed::default());
        let everything = outcome.violations.iter().fold(Hunt::ALL, |h, v| h.ignoring(v.invariant));
        let mut ignored = Passed::default();
        ignored.count(everything, &outcome);
        assert_eq!((ignored.runs, ignored.by.len()), (1, 0));
        passed.add(&ignored);
        assert_eq!((passed.runs, passed.by.get(&Condition::ByClass)), (3, Some(&2)));
    }

    /// A known bug set aside (`explore --ignore`) counts for nothing in either hunt, and the
    /// next invariant the run broke is what it is pinned to.
    #[test]
    fn a_hunt_ignoring_an_invariant_pins_the_next_one_or_passes_the_run_over() {
        let naive = Scenario::build("long-tool", "naive", "reference").unwrap();
        let outcome = run(&naive, 0).unwrap();
        let broken: Vec<InvariantId> = outcome.violations.iter().map(|v| v.invariant).collect();
        assert!(broken.contains(&InvariantId::NoDuplicateExecution), "{broken:?}");
        let hunt = Hunt::ALL.ignoring(InvariantId::NoDuplicateExecution);
        assert!(hunt.ignores(InvariantId::NoDuplicateExecution) && !hunt.ignores(InvariantId::NoSilentEventLoss));
        assert!(hunt.counted(&outcome).iter().all(|v| v.invariant != InvariantId::NoDuplicateExecution));
        let next = broken.iter().find(|i| **i != InvariantId::NoDuplicateExecution).copied();
        let pinned = hunt.pinned(&outcome, None);
        match next {
            Some(_) => assert!(pinned.is_some_and(|p| p != "no-duplicate-execution"), "{pinned:?}"),
            None => assert_eq!(pinned, None),
        }
        // Every invariant it broke set aside: the run is passed over, as an explained one is.
        let all = broken.iter().fold(Hunt::ALL, |h, i| h.ignoring(*i));
        assert!(all.counted(&outcome).is_empty() && all.skipped(&outcome) && !Hunt::ALL.skipped(&outcome));
        assert_eq!(all.pinned(&outcome, None), None);
        // A clean run is not passed over.
        let clean = run(&long_tool(), 0).unwrap();
        assert!(!all.skipped(&clean));
    }

    /// A case's overrides drafted (`Scenario::derive`: each profile and the tools edited in
    /// their serde form and read back once) give the scenario, or the error, that a round trip of
    /// the whole scenario per field gives, over every built-in family, with and without the
    /// conditions pinned and swarm testing.
    #[test]
    fn a_case_derived_in_drafts_is_the_case_applied_one_round_trip_at_a_time() {
        use crate::scenario::settings::apply_by_round_trips;
        use crate::scenario::{SCENARIO_NAMES, TASK_SCENARIO_NAMES};
        let mut compared = 0;
        let mut refused = 0;
        for family in SCENARIO_NAMES.iter().chain(TASK_SCENARIO_NAMES) {
            let family = Scenario::build(family, "reference", "reference").unwrap();
            for (within, swarm) in [(false, false), (true, false), (false, true), (true, true)] {
                let space = if within { Space::within_conditions(&family) } else { Space::for_scenario(&family) };
                let space = space.swarming(swarm);
                let Ok(base) = space.constrained(&family) else { continue };
                let mut runner =
                    TestRunner::new_with_rng(Config::default(), TestRng::deterministic_rng(RngAlgorithm::ChaCha));
                let strategy = cases(&space);
                for _ in 0..25 {
                    let case = strategy.new_tree(&mut runner).unwrap().current();
                    let drafted = base.derive(&case.overrides);
                    let mut reference = base.clone();
                    let by_trips = case
                        .overrides
                        .iter()
                        .try_for_each(|(k, v)| {
                            reference.overrides.push((k.clone(), v.clone()));
                            apply_by_round_trips(&mut reference, k, v)
                        })
                        .and_then(|()| reference.validate());
                    match (drafted, by_trips) {
                        (Ok(drafted), Ok(())) => {
                            assert_eq!(drafted, reference, "{case:?}");
                            compared += 1;
                        }
                        (Err(a), Err(b)) => {
                            assert_eq!(a.to_string(), b.to_string(), "{case:?}");
                            refused += 1;
                        }
                        (a, b) => panic!("{case:?}: drafted {:?}, one round trip at a time {b:?}", a.err()),
                    }
                }
            }
        }
        assert!(compared > 500, "only {compared} cases compared ({refused} refused both ways)");
    }

    #[test]
    fn generated_cases_are_valid_scenarios_that_record_their_swarm() {
        let base = long_tool();
        let space = Space::for_scenario(&base);
        for case in drawn_cases(&space, 200) {
            let s = case.scenario(&base).unwrap_or_else(|e| panic!("{case:?}: {e}"));
            assert_eq!(s.swarm.as_ref(), Some(&case.swarm));
            // A rolling deploy is a dimension of its own (`fault.deploy`), not a swarm kind.
            for kind in s.faults.faults().iter().map(|f| f.fault.kind()).filter(|k| !Fault::TARGETED_KINDS.contains(k))
            {
                assert!(case.swarm.contains_key(kind), "{kind} planned but not enabled: {case:?}");
            }
            for (kind, n) in &case.swarm {
                let planned = s.faults.faults().iter().filter(|f| f.fault.kind() == kind).count();
                assert!(planned <= *n as usize, "{kind}: {planned} faults above intensity {n}");
            }
        }
    }

    /// What a found case prints to run it again (`rerun (same seed, same steps): mcpsim run …`)
    /// is accepted by `run` and builds the very scenario, behind a balancer profile chosen whole
    /// (`--lb cdn-alb`, printed `--set lb=cdn-alb`) whose hops the case then draws: the printed
    /// command once set the balancer twice and was refused.
    #[test]
    fn every_generated_case_behind_a_balancer_profile_prints_a_command_that_rebuilds_it() {
        let mut base = long_tool();
        base.apply_overrides(&[("lb".into(), "cdn-alb".into())]).expect("cdn-alb is a built-in balancer profile");
        let space = Space::for_scenario(&base);
        let mut hops = 0;
        for case in drawn_cases(&space, 100) {
            let s = case.scenario(&base).unwrap_or_else(|e| panic!("{case:?}: {e}"));
            hops += usize::from(s.overrides.iter().any(|(k, _)| k.starts_with("lb.")));
            let printed = s.cli_args();
            let sets: Vec<String> = printed.split(" --set ").skip(1).map(str::to_string).collect();
            let args = crate::scenario::ScenarioArgs {
                client: s.client.name.clone(),
                server: s.server.name.clone(),
                scenario: s.name.clone(),
                sets,
            };
            let mut back = args.build().unwrap_or_else(|e| panic!("{printed}: {e}"));
            // What the search records of the case (its overrides, its swarm) is no part of the run.
            back.overrides.clone_from(&s.overrides);
            back.swarm.clone_from(&s.swarm);
            let (back, s) =
                (serde_json::to_value(&back).unwrap_or_default(), serde_json::to_value(&s).unwrap_or_default());
            let differ: Vec<_> = s
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, v)| back.get(k.as_str()) != Some(*v))
                .map(|(k, v)| format!("{k}: {v} rebuilt as {:?}", back.get(k.as_str())))
                .collect();
            assert!(differ.is_empty(), "{printed}\n{differ:#?}");
        }
        assert!(hops > 10, "{hops} of 100 cases changed a balancer field");
    }

    #[test]
    fn swarm_cases_generate_only_from_the_kinds_and_parts_they_switched_on() {
        // chatty-tool plans a partition of its own: a swarm case with partitions off plans none.
        let base = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        for within in [false, true] {
            let space =
                if within { Space::within_conditions(&base) } else { Space::for_scenario(&base) }.swarming(true);
            let base = space.constrained(&base).unwrap();
            let parts = space.workload_parts();
            let mut runner =
                TestRunner::new_with_rng(Config::default(), TestRng::deterministic_rng(RngAlgorithm::ChaCha));
            let strategy = cases(&space);
            let mut on: BTreeMap<String, u32> = BTreeMap::new();
            let mut configurations = std::collections::BTreeSet::new();
            let n = 200;
            for _ in 0..n {
                let case = strategy.new_tree(&mut runner).unwrap().current();
                let s = case.scenario(&base).unwrap_or_else(|e| panic!("{case:?}: {e}"));
                for kind in s.faults.faults().iter().map(|f| f.fault.kind()).filter(|k| Fault::KINDS.contains(k)) {
                    assert!(case.swarm.contains_key(kind), "{kind} planned but switched off: {case:?}");
                }
                for (key, _) in &case.overrides {
                    assert!(space.allows(&case.swarm, key), "{key} set but its part is off: {case:?}");
                }
                for (part, keys) in WORKLOAD_PARTS {
                    let set = case.overrides.iter().any(|(k, _)| keys.contains(&k.as_str()));
                    if case.swarm.contains_key(*part) && *part != "calls" {
                        assert!(set, "{part} on but not drawn: {case:?}");
                    }
                    if !parts.contains(part) {
                        assert!(!case.swarm.contains_key(*part), "{part} is not a part here: {case:?}");
                    }
                }
                if case.swarm.contains_key("clients") {
                    assert!(s.clients >= 2 && s.calls.iter().any(|c| c.client > 0), "{case:?}");
                }
                if within {
                    assert!(s.calls.iter().all(|c| c.on_error == Default::default()), "re-issue inside: {case:?}");
                }
                for k in case.swarm.keys() {
                    *on.entry(k.clone()).or_default() += 1;
                }
                configurations.insert(case.swarm.keys().cloned().collect::<Vec<_>>());
            }
            // Each kind and part is on in about half the cases, in many combinations.
            for name in parts.iter().copied().chain(space.fault_kinds.iter().copied()) {
                let k = on.get(name).copied().unwrap_or(0);
                assert!((n / 4..=3 * n / 4).contains(&k), "{name} on in {k} of {n} cases (within {within})");
            }
            assert!(configurations.len() > n as usize / 4, "{} configurations", configurations.len());
        }
    }

    #[test]
    fn the_default_space_does_no_swarm_testing_over_the_workload() {
        // The default generator (and the budgets measured on its draws) stays as it was: no
        // workload part is recorded and the family's own partition stays when the kind is off.
        let base = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        let space = Space::for_scenario(&base);
        assert!(!space.swarm);
        for case in drawn_cases(&space, 50) {
            assert!(case.swarm.keys().all(|k| Fault::KINDS.contains(&k.as_str())), "{case:?}");
            if !case.swarm.contains_key("partition") {
                assert!(!case.overrides.iter().any(|(k, _)| k == "fault.partition"), "{case:?}");
            }
        }
    }

    /// The whole space sometimes has the nearest hop answer every request itself for a while,
    /// with a 4xx (a close the decision procedure has no rule for) or a 5xx; inside the
    /// conditions never (a hop's own 4xx breaks condition 4).
    #[test]
    fn the_whole_space_draws_a_hop_that_answers_by_itself_and_the_conditions_space_never_does() {
        let base = long_tool();
        let answers = |space: &Space| {
            let mut runner =
                TestRunner::new_with_rng(Config::default(), TestRng::deterministic_rng(RngAlgorithm::ChaCha));
            let strategy = cases(space);
            (0..200)
                .filter_map(|_| {
                    let case = strategy.new_tree(&mut runner).unwrap().current();
                    case.overrides.iter().find(|(k, _)| k == "fault.answer").map(|(_, v)| v.clone())
                })
                .collect::<Vec<String>>()
        };
        let wide = answers(&Space::for_scenario(&base));
        assert!(wide.len() > 30, "{} of 200 cases drew a hop answering: {wide:?}", wide.len());
        assert!(wide.iter().any(|v| v.contains("=4")) && wide.iter().any(|v| v.contains("=5")), "{wide:?}");
        for v in &wide {
            let s = Case { overrides: vec![("fault.answer".into(), v.clone())], swarm: Swarm::new(), seed: 0 }
                .scenario(&base);
            assert!(s.is_ok(), "{v}: {s:?}");
        }
        assert!(answers(&Space::within_conditions(&base)).is_empty());
    }

    #[test]
    fn fault_lists_shrink_element_wise_to_nothing_and_parameters_to_their_low_end() {
        let base = long_tool();
        let space = Space::for_scenario(&base);
        let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::deterministic_rng(RngAlgorithm::ChaCha));
        let strategy = cases(&space);
        // Shrink as far as it goes, accepting every simplification (a property that always fails).
        let mut tree = (0..50)
            .map(|_| strategy.new_tree(&mut runner).unwrap())
            .find(|t| t.current().swarm.len() >= 2)
            .expect("some case enables two kinds");
        while tree.simplify() {}
        let minimal = tree.current();
        assert!(minimal.swarm.is_empty(), "every kind ends disabled: {minimal:?}");
        let values: BTreeMap<&str, &str> = minimal.overrides.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(values["tool.duration"], "1s");
        assert_eq!(values["lb.idle_timeout"], "none");
        assert_eq!(values["client.backoff_initial"], "100ms");
        assert_eq!(values["server.retention"], "unbounded");
        assert!(!values.keys().any(|k| k.starts_with("fault.")), "{values:?}");
        // The dimensions a family fixes shrink back to the family's value: no override at all.
        for key in FAMILY_KEYS {
            assert!(!values.contains_key(key), "{key} did not shrink to the family's value: {values:?}");
        }
    }

    /// The keys of [`family_dimensions`] outside the conditions of validity.
    const FAMILY_KEYS: &[&str] = &[
        "tool.event_interval",
        "tool.idempotent",
        "net.latency",
        "tool.jitter",
        "client.idempotency_keys",
        "server.idempotency_keys",
        "server.retention_window",
        "server.unhonourable",
        "server.store",
        "client.persistence",
        "client.request_timeout",
        "app.calls",
        "app.operator_deletes",
        "client.http.keep_alive",
        "client.http.idle_expiry",
        "client.http.retry",
        "lb.upstream_keep_alive",
        "lb.retry_upstream",
        "server.keep_alive_timeout",
        "app.notifications",
    ];

    fn drawn_keys(space: &Space, n: usize) -> std::collections::BTreeSet<String> {
        drawn_cases(space, n).into_iter().flat_map(|case| case.overrides).map(|(k, _)| k).collect()
    }

    /// The first `n` cases of `space`, drawn by a fixed-seed runner (the same every run).
    fn drawn_cases(space: &Space, n: usize) -> Vec<Case> {
        let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::deterministic_rng(RngAlgorithm::ChaCha));
        let strategy = cases(space);
        (0..n).map(|_| strategy.new_tree(&mut runner).unwrap().current()).collect()
    }

    #[test]
    fn every_setting_that_changes_behaviour_is_generated() {
        // Not generated: the fault keys come from the fault plan's swarm (by kind), and the
        // liveness grace judges a run rather than changing it.
        let base = long_tool();
        let mut drawn = drawn_keys(&Space::for_scenario(&base), 300);
        // `app.clients` (several clients) is a workload part of swarm testing only.
        drawn.extend(drawn_keys(&Space::for_scenario(&base).swarming(true), 100));
        // `lb` names a whole load-balancer profile (its fields are generated one by one: idle
        // timeout, replicas, routing, store, lifetime); the reconnect and delivery bounds judge a
        // run and `reproduces` labels one. `app.client_profiles` names whole client profiles per
        // client (the client's fields are generated one by one, for every client): a search does
        // not draw a fleet of several kinds yet.
        let judged_only = [
            "run.liveness_grace",
            "run.max_reconnects_per_hour",
            "run.max_delivery_delay",
            "run.reproduces",
            "lb",
            "app.client_profiles",
        ];
        for setting in crate::scenario::SETTINGS {
            let key = setting.key;
            if key.starts_with("fault.") || judged_only.contains(&key) {
                continue;
            }
            assert!(drawn.contains(key), "{key} changes behaviour but no generated case sets it");
        }
        for kind in Fault::SEARCHED_BY_DEFAULT {
            assert!(drawn.contains(fault_setting(kind).unwrap()), "no case plans a {kind}");
        }
        assert!(drawn.contains("fault.deploy"), "no case plans a rolling deploy");
        // The one kind drawn only when asked for (`blackhole_is_drawn_when_asked_for_and_only_then`).
        let asked = Space::for_scenario(&base).with_fault_kinds(&["blackhole".to_string()]).unwrap();
        assert!(drawn_keys(&asked, 50).contains("fault.blackhole"), "no case plans a blackhole");
    }

    /// A black hole is a kind of its own: the default spaces draw the kinds they drew before it
    /// existed, in the same order (so every existing search draws the same cases from a seed), and
    /// draw no black hole; asked for (`explore --fault-kinds`), cases plan black holes as windows
    /// that build valid scenarios, and swarm testing switches the kind on and off as any other.
    /// An unknown kind is refused; inside the conditions a server restart stays out.
    #[test]
    fn blackhole_is_drawn_when_asked_for_and_only_then() {
        let base = long_tool();
        assert_eq!(Fault::SEARCHED_BY_DEFAULT, ["reset", "partition", "server-restart", "client-restart"]);
        assert!(Fault::KINDS.starts_with(Fault::SEARCHED_BY_DEFAULT) && Fault::KINDS.contains(&"blackhole"));
        assert_eq!(Space::for_scenario(&base).fault_kinds, Fault::SEARCHED_BY_DEFAULT);
        for space in
            [Space::for_scenario(&base), Space::within_conditions(&base), Space::for_scenario(&base).swarming(true)]
        {
            assert!(!drawn_keys(&space, 100).contains("fault.blackhole"), "{space:?}");
        }
        let kinds = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let asked = Space::for_scenario(&base).with_fault_kinds(&kinds(&["blackhole", "reset"])).unwrap();
        assert_eq!(asked.fault_kinds, ["reset", "blackhole"], "in the order of Fault::KINDS");
        let mut planned = 0;
        for case in drawn_cases(&asked, 100) {
            let s = case.scenario(&base).unwrap_or_else(|e| panic!("{case:?}: {e}"));
            let holes: Vec<_> = s.faults.faults().iter().filter(|f| f.fault.kind() == "blackhole").collect();
            assert!(holes.is_empty() || case.swarm.contains_key("blackhole"), "{case:?}");
            for f in &holes {
                assert!(matches!(f.fault, Fault::Blackhole { target: None, duration } if duration.as_secs() >= 1));
                assert!(f.fault.duration().as_secs() <= MAX_PARTITION, "{f}");
            }
            planned += holes.len();
            assert!(!s.faults.faults().iter().any(|f| f.fault.kind() == "partition"), "not asked for: {case:?}");
        }
        assert!(planned > 30, "{planned} black holes over 100 cases");
        let swarm = Space::for_scenario(&base).swarming(true).with_fault_kinds(&kinds(&["blackhole"])).unwrap();
        assert!(drawn_keys(&swarm, 100).contains("fault.blackhole"));
        let within =
            Space::within_conditions(&base).with_fault_kinds(&kinds(&["server-restart", "blackhole"])).unwrap();
        assert_eq!(within.fault_kinds, ["blackhole"]);
        let bad = Space::for_scenario(&base).with_fault_kinds(&kinds(&["meteor"]));
        assert!(matches!(bad, Err(SimError::Usage(m)) if m.contains("unknown fault kind \"meteor\"")));
    }

    #[test]
    fn a_fault_list_shrinks_to_the_one_fault_that_matters_at_its_earliest() {
        // A stand-in property that fails whenever a reset falls in 100s..=200s: shrinking must
        // end with that one reset, at 100 s, with intensity 1 and every other kind disabled.
        let base = long_tool();
        let space = Space { vary_parameters: false, ..Space::for_scenario(&base) };
        let config = Config { failure_persistence: None, ..Config::default() };
        let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
        let result = runner.run(&cases(&space), |case| {
            let s = case.scenario(&base).expect("valid");
            let window = |f: &crate::scenario::faults::PlannedFault| (100..=200).contains(&f.at.as_secs());
            match s.faults.faults().iter().any(|f| f.fault == Fault::Reset && window(f)) {
                true => Err(TestCaseError::fail("a reset in the window")),
                false => Ok(()),
            }
        });
        let Err(TestError::Fail(_, minimal)) = result else { panic!("never failed: {result:?}") };
        assert_eq!(minimal.overrides, [("fault.reset".to_string(), "100s".to_string())]);
        assert_eq!(minimal.swarm, Swarm::from([("reset".to_string(), 1)]));
    }

    #[test]
    fn a_script_shrinks_to_the_fewest_calls_and_shortest_gap_that_still_fail() {
        // A stand-in property that fails whenever a call waits 100 s or more of idle after the
        // one before it: the smallest such script is two calls, the second 100 s after the first.
        let base = long_tool();
        let space = Space { vary_parameters: true, ..Space::for_scenario(&base) };
        let config = Config { failure_persistence: None, ..Config::default() };
        let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
        let result = runner.run(&cases(&space), |case| {
            let s = case.scenario(&base).expect("valid");
            match s.calls.iter().any(|c| c.after_idle.is_some_and(|g| g >= Duration::from_secs(100))) {
                true => Err(TestCaseError::fail("a long idle gap")),
                false => Ok(()),
            }
        });
        let Err(TestError::Fail(_, minimal)) = result else { panic!("never failed: {result:?}") };
        let script: Vec<&Override> = minimal.overrides.iter().filter(|(k, _)| k == "app.calls").collect();
        assert_eq!(script, [&("app.calls".to_string(), "1s; +100s".to_string())], "{:?}", minimal.overrides);
    }

    #[test]
    fn generated_chains_are_valid_and_shrink_towards_fewer_hops() {
        // Without a chain nothing varies it (the cases stay those drawn before chains existed).
        let chainless = Space::for_scenario(&long_tool());
        assert!(!chainless.vary_chain && !drawn_keys(&chainless, 100).contains("lb.hops"));
        let mut base = long_tool();
        base.apply_overrides(&[("lb.hops".into(), r#"[{ max_lifetime = "100s" }]"#.into())]).expect("a chain");
        let space = Space::for_scenario(&base);
        let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::deterministic_rng(RngAlgorithm::ChaCha));
        let mut chains = 0;
        for _ in 0..200 {
            let case = cases(&space).new_tree(&mut runner).unwrap().current();
            if case.overrides.iter().any(|(k, _)| k == "lb.hops") {
                chains += 1;
                let s = case.scenario(&base).expect("a generated chain is valid");
                assert!((1..=3).contains(&s.lb.hops.len()));
            }
        }
        assert!(chains > 10, "{chains} cases of 200 varied the chain");
        // A stand-in property failing whenever there is a chain of two hops or more: shrinking
        // ends at two hops, the smallest chain that still fails (the family's own has one).
        let config = Config { failure_persistence: None, ..Config::default() };
        let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
        let result = runner.run(&cases(&space), |case| match case.scenario(&base).expect("valid").lb.hops.len() {
            2.. => Err(TestCaseError::fail("a chain")),
            _ => Ok(()),
        });
        let Err(TestError::Fail(_, minimal)) = result else { panic!("never failed: {result:?}") };
        let s = minimal.scenario(&base).expect("valid");
        assert_eq!(s.lb.hops.len(), 2, "{:?}", minimal.overrides);
    }

    #[test]
    fn partitions_never_overlap_and_times_are_sorted() {
        assert_eq!(partitions_value(vec![(100, 50), (0, 10), (120, 5)]), "0s..10s,100s..150s,151s..156s");
        assert_eq!(partitions_value(vec![]), "none");
        assert_eq!(times_value(vec![90, 30, 30]), "30s,90s");
    }

    #[test]
    fn the_pinned_invariant_is_the_most_serious_or_the_target() {
        let v = |name: &'static str, at: u64| Violation {
            invariant: name.parse().expect("a known invariant"),
            step: 0,
            at: mcpsim_model::time::Instant(at),
            subject: String::new(),
            detail: String::new(),
        };
        let found = [v("no-orphaned-session", 1), v("no-duplicate-execution", 2)];
        assert_eq!(pinned_invariant(&found, None), Some("no-duplicate-execution"));
        assert_eq!(pinned_invariant(&found, Some("no-orphaned-session")), Some("no-orphaned-session"));
        assert_eq!(pinned_invariant(&found, Some("every-call-resolves")), None);
        assert_eq!(pinned_invariant(&[], None), None);
    }

    #[test]
    fn within_conditions_pins_condition_two_and_never_varies_it() {
        let base = long_tool();
        let space = Space::within_conditions(&base);
        let constrained = space.constrained(&base).unwrap();
        assert_eq!(constrained.server.retention.max_events, None);
        assert_eq!(constrained.server.idle_ttl, None);
        let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::deterministic_rng(RngAlgorithm::ChaCha));
        let case = cases(&space).new_tree(&mut runner).unwrap().current();
        assert!(case.overrides.iter().all(|(k, _)| k != "server.retention" && k != "server.idle_ttl"));
        assert_eq!(constrained.server.retention.window, None);
        // A session always reaches the replica that holds it, whatever a shrink drops.
        assert!(space.constraints(&base).contains(&("lb.routing".to_string(), "sticky-session".to_string())));
        // What the profiles under test decide (conditions 1 and 3, the store), a client that
        // gives up, and condition 2 are never varied inside the conditions.
        let drawn = drawn_keys(&space, 300);
        for key in [
            "server.retention",
            "server.retention_window",
            "server.idle_ttl",
            "client.max_attempts",
            "server.unhonourable",
            "server.store",
            "client.persistence",
            "client.request_timeout",
            "app.operator_deletes",
            "app.calls",
            "lb.routing",
            "client.http.keep_alive",
            "lb.upstream_keep_alive",
            "server.keep_alive_timeout",
            "app.notifications",
        ] {
            assert!(!drawn.contains(key), "{key} varied inside the conditions");
        }
        assert!(drawn.contains("net.latency") && drawn.contains("tool.event_interval"), "{drawn:?}");
    }

    #[test]
    fn an_unknown_fault_kind_or_invariant_is_refused_before_any_run() {
        let base = long_tool();
        let space = Space { fault_kinds: vec!["meteor"], ..Space::for_scenario(&base) };
        assert!(matches!(search(&base, &space, 1, 0, false), Err(SimError::Usage(_))));
        let space = Space::for_scenario(&base);
        assert!(matches!(search_for(&base, &space, 1, 0, false, Some("nope")), Err(SimError::Usage(_))));
    }

    /// Naive × reference × long-tool, and its seed 1 run with `extra` set on top: the naive client
    /// re-runs the payment after the balancer's idle cut, whatever `extra` changes.
    fn naive_long_tool_with(extra: &[(&str, &str)]) -> (Scenario, Counterexample) {
        let base = Scenario::build("long-tool", "naive", "reference").unwrap();
        let mut scenario = base.clone();
        scenario
            .apply_overrides(&extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>())
            .unwrap();
        let outcome = run(&scenario, 1).unwrap();
        (base, Counterexample { scenario, seed: 1, outcome })
    }

    #[test]
    fn shrink_fixed_removes_faults_and_overrides_that_do_not_matter() {
        // The naive client re-runs the payment after the load balancer's idle cut: a partition and
        // a slower backoff change nothing about that.
        let (base, found) =
            naive_long_tool_with(&[("fault.partition", "190s..200s"), ("client.backoff_initial", "2s")]);
        assert!(found.breaks("no-duplicate-execution"));
        let (minimal, runs) = shrink_fixed(&base, &found, "no-duplicate-execution", Hunt::ALL).unwrap();
        assert!(minimal.breaks("no-duplicate-execution"));
        assert_eq!((minimal.size().faults, minimal.size().overrides), (0, 0), "{:?}", minimal.scenario.overrides);
        assert!(runs >= 2);
    }

    /// Two overrides that only go together (a second client, and the script's call by it): the
    /// candidate that drops the first cannot be built, and shrinking passes over it instead of
    /// failing the whole search (found by `explore --search --swarm`, 2 000 cases on
    /// standalone-notify).
    #[test]
    fn shrink_fixed_passes_over_a_candidate_that_drops_half_of_two_linked_settings() {
        let (base, found) = naive_long_tool_with(&[("app.clients", "2"), ("app.calls", "1s; 1s client=1")]);
        assert!(found.breaks("no-duplicate-execution"));
        let mut without_clients = base.clone();
        assert!(without_clients.apply_overrides(&[("app.calls".into(), "1s; 1s client=1".into())]).is_err());
        let (minimal, _) = shrink_fixed(&base, &found, "no-duplicate-execution", Hunt::ALL).unwrap();
        assert!(minimal.breaks("no-duplicate-execution") && minimal.size() <= found.size());
    }

    #[test]
    fn shrinking_stops_once_its_step_budget_is_spent() {
        let (base, found) =
            naive_long_tool_with(&[("fault.partition", "190s..200s"), ("client.backoff_initial", "2s")]);
        let (same, runs) = shrink_fixed_within(&base, &found, "no-duplicate-execution", Hunt::ALL, 0).unwrap();
        assert_eq!((runs, same.size()), (0, found.size()));
        // The budget is checked before each run: one step of budget buys one run.
        let (_, runs) = shrink_fixed_within(&base, &found, "no-duplicate-execution", Hunt::ALL, 1).unwrap();
        assert_eq!(runs, 1);
        assert!(longest_candidate(235) >= 2_235 && longest_candidate(10_000) == 40_000);
    }

    #[test]
    fn shrink_fixed_removes_a_planned_fault_it_cannot_drop_with_an_override() {
        // The base itself plans a reset (as a family plans its faults): it stays in the base's
        // overrides, and the shrunk scenario removes it with `fault.reset=none` instead.
        let mut base = Scenario::build("long-tool", "naive", "reference").unwrap();
        base.apply_overrides(&[("fault.reset".into(), "4m".into())]).unwrap();
        let outcome = run(&base, 2).unwrap();
        let found = Counterexample { scenario: base.clone(), seed: 2, outcome };
        let (minimal, _) = shrink_fixed(&base, &found, "no-duplicate-execution", Hunt::ALL).unwrap();
        assert!(minimal.breaks("no-duplicate-execution"));
        assert!(minimal.scenario.faults.is_empty());
        let tail = &minimal.scenario.overrides[1..];
        assert_eq!(tail, [("fault.reset".to_string(), "none".to_string())]);
    }

    #[test]
    fn shrink_fixed_keeps_the_fault_the_violation_needs() {
        let base = Scenario::build("chatty-tool", "reference", "silent-head").unwrap();
        let outcome = run(&base, 0).unwrap();
        let found = Counterexample { scenario: base.clone(), seed: 0, outcome };
        let (minimal, runs) = shrink_fixed(&base, &found, "no-silent-event-loss", Hunt::ALL).unwrap();
        // The 4-minute partition is the whole incident: removing it was tried and refused.
        assert_eq!(runs, 1);
        assert_eq!(minimal.size(), found.size());
    }

    /// The server's own stream closes are drawn in both spaces, each in about a third of the
    /// cases, never closer together than the family's churn bound allows a steady re-attachment.
    #[test]
    fn server_closes_are_drawn_no_closer_than_the_churn_bound_allows() {
        let base = long_tool();
        let mut bound_60 = base.clone();
        bound_60.max_reconnects_per_hour = 60;
        for (space, bound) in [
            (Space::for_scenario(&base), 30),
            (Space::within_conditions(&base), 30),
            (Space::for_scenario(&base).swarming(true), 30),
            (Space::for_scenario(&bound_60), 60),
        ] {
            assert_eq!(space.close_every, Duration::from_secs(3_600 / bound));
            let mut runner =
                TestRunner::new_with_rng(Config::default(), TestRng::deterministic_rng(RngAlgorithm::ChaCha));
            let strategy = cases(&space);
            for key in ["server.close_request_streams", "server.close_idle_standalone"] {
                let mut drawn = 0;
                for _ in 0..300 {
                    let case = strategy.new_tree(&mut runner).expect("a case").current();
                    let Some((_, value)) = case.overrides.iter().find(|(k, _)| k == key) else { continue };
                    drawn += 1;
                    if value != "none" {
                        let every = mcpsim_model::time::parse_duration(value).expect("a duration");
                        assert!(every >= space.close_every, "{key}={value} under a bound of {bound} an hour");
                    }
                }
                assert!((60..=140).contains(&drawn), "{key} drawn in {drawn} of 300 cases");
            }
        }
    }
}
