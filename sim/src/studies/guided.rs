//! Coverage-guided exploration: a corpus of cases grown, as AFL grows one, by keeping every case
//! whose run reached a *feature* no earlier case reached, and mutating the kept ones.
//!
//! A run's features are an abstraction of its trace ([`features`]): which decision-procedure
//! outcomes and actions, resume answers, connection ends, statuses, session ends, tool ends and
//! application verdicts it reached (each with a bucketed count, as AFL buckets hit counts), which
//! of those followed which (the "edges"), which faults struck while a call was in flight or a
//! stream was detached, and the coverage events with their bucketed counts.
//!
//! Cases are the same [`Case`]s `explore --search` generates — `--set` overrides and a madsim seed
//! — so every case replays with one command. The corpus starts with the family's own case, then
//! takes fresh cases from `search::cases` until it has a few; after that most cases are
//! mutations of a corpus entry (`Mutation`: move a fault, stretch an interval, add or remove a
//! fault, change one override, change the madsim seed), stacked one to three at a time, and every
//! other case is fresh again (measured: fewer fresh cases found the second incident later). Every draw comes from one [`SplitMix64`] (mutations) and one
//! proptest runner (fresh cases), both seeded by the caller: the same seed explores the same cases.
//! A violation is shrunk by `search::shrink_fixed`, the pass `explore` uses on fixed scenarios.

use crate::engine::runner::run;
use crate::error::SimError;
use crate::scenario::faults::{Fault, FaultPlan, PlannedFault};
use crate::scenario::{fault_setting, setting, Scenario};
use crate::studies::search::{
    self, cases, partitions_value, times_value, Case, Counterexample, Found, Override, Space, Swarm, WINDOW_KINDS,
};
use mcpsim_model::decision::StreamOutcome;
use mcpsim_model::oracle::{coverage, Coverage, INVARIANTS};
use mcpsim_model::rng::SplitMix64;
use mcpsim_model::time::{format_duration, parse_duration};
use mcpsim_model::trace::{ResumeOutcome, StepKind, Trace};
use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant as WallClock};

/// A feature of a run: a hash of one abstract fact about its trace (FNV-1a, so stable across
/// platforms and builds).
pub type Feature = u64;

/// A map keyed by features, hashed by the feature itself: a feature is an FNV hash already. No
/// random state, so its order is the same on every run, and it is only looked up, never walked
/// (what the project's ban on `HashMap` guards against).
#[allow(clippy::disallowed_types)]
type FeatureMap<V> = std::collections::HashMap<Feature, V, std::hash::BuildHasherDefault<FeatureHasher>>;

/// The hasher of [`FeatureMap`]: a feature's own bits.
#[derive(Default)]
struct FeatureHasher(u64);

impl std::hash::Hasher for FeatureHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed here; any other input folds in FNV-style.
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Fresh (generated) cases the corpus starts with before mutating.
const WARM_UP: u64 = 16;

/// One case in this many is fresh from the generator, not a mutation.
const FRESH_EVERY: u64 = 2;

/// The longest partition a mutation plans or stretches to.
const MAX_PARTITION: u64 = 300;

/// How a guided exploration is bounded and seeded.
#[derive(Clone, Debug)]
pub struct Guided {
    /// The most cases to run.
    pub budget: u64,
    /// Seeds the mutation generator and the fresh cases.
    pub rng_seed: u64,
    /// Shrink the first violation.
    pub shrink: bool,
    /// Only this invariant counts (any when `None`).
    pub target: Option<String>,
}

/// Where an exploration stands, handed to the progress callback after every case.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// Cases run so far.
    pub cases: u64,
    /// Distinct features reached so far.
    pub features: usize,
    /// Cases kept in the corpus.
    pub corpus: usize,
}

/// What a guided exploration did.
#[derive(Debug)]
pub struct GuidedReport {
    /// The first violation, shrunk (unless shrinking was off).
    pub found: Option<Found>,
    /// Cases run until the first violation (or the whole budget).
    pub cases: u64,
    /// Coverage events over those cases.
    pub coverage: Coverage,
    /// Distinct features reached.
    pub features: usize,
    /// Cases kept because they reached a new feature.
    pub corpus: usize,
    /// `(case, features reached by then)` at every case that grew the feature set.
    pub growth: Vec<(u64, usize)>,
    /// Cases that broke an invariant the hunt does not count (explained by a broken condition),
    /// and by which conditions.
    pub explained: search::Passed,
    /// Steps the cases simulated (shrinking runs not counted).
    pub steps: u64,
}

/// One way to change a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mutation {
    /// Move one planned fault earlier or later.
    MoveFault,
    /// Scale one duration: a partition's length or a duration-valued override.
    Stretch,
    /// Plan one more fault of a kind the space allows.
    AddFault,
    /// Remove one planned fault.
    RemoveFault,
    /// Replace (or add) one override with a value the generator drew.
    ChangeOverride,
    /// Draw another madsim seed.
    Reseed,
}

const MUTATIONS: [Mutation; 6] = [
    Mutation::MoveFault,
    Mutation::Stretch,
    Mutation::AddFault,
    Mutation::RemoveFault,
    Mutation::ChangeOverride,
    Mutation::Reseed,
];

/// Coverage-guided exploration of `space` around `base`: up to `guided.budget` cases, stopping at
/// the first that breaks the target invariant (any invariant when none is given), which is then
/// shrunk. `progress` is called after every case.
pub fn explore_guided(
    base: &Scenario,
    space: &Space,
    guided: &Guided,
    progress: &mut dyn FnMut(&Progress),
) -> Result<GuidedReport, SimError> {
    space.check()?;
    let target = guided.target.as_deref();
    if let Some(t) = target.filter(|t| !INVARIANTS.iter().any(|i| i.name == *t)) {
        return Err(SimError::Usage(format!("unknown invariant {t:?} (see `mcpsim profiles`)")));
    }
    let base = space.constrained(base)?;
    let mut explorer = Explorer::new(&base, space, guided.rng_seed);
    // Each entry with the scenario it ran: a mutation starts from it instead of building it again.
    let mut corpus: Vec<Entry> = Vec::new();
    // How many runs reached each feature (its keys: the features seen), and the features each
    // corpus entry was the first to reach: an entry whose features few runs reach is picked more
    // often (a power schedule). Looked up, never walked: hashed by the feature itself.
    let mut hits: FeatureMap<u64> = FeatureMap::default();
    let mut opened: Vec<Vec<Feature>> = Vec::new();
    // `rarity[i]`: the fewest runs that reached one of the features entry `i` opened, kept up to
    // date from `openers` (the entries that opened each feature) as `hits` grow, rather than
    // recomputed over the whole corpus before every case.
    let mut rarity: Vec<u64> = Vec::new();
    let mut openers: FeatureMap<Vec<usize>> = FeatureMap::default();
    let mut growth = Vec::new();
    let mut total = Coverage::new();
    let mut cases_run = 0;
    let mut explained = search::Passed::default();
    let mut steps = 0u64;
    // Draws that came out invalid or unchanged are drawn again, a bounded number of times.
    let mut draws_left = guided.budget.saturating_mul(20);
    while cases_run < guided.budget && draws_left > 0 {
        draws_left -= 1;
        let Some((case, built)) = explorer.next_case(cases_run, &corpus, &rarity) else { continue };
        cases_run += 1;
        let scenario = match built.map_or_else(|| case.scenario(&base), Ok) {
            Ok(scenario) => scenario,
            // A draw the scenario refuses (a family file's own bounds) is the search's.
            Err(e) => {
                explained.refuse(&e);
                continue;
            }
        };
        let outcome = match run(&scenario, case.seed) {
            Ok(outcome) => outcome,
            // A case the mutations made too long to run is the search's, and ends nothing.
            Err(SimError::OverBudget { .. }) => {
                explained.over_budget += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        steps += outcome.trace.steps.len() as u64;
        let reached = coverage(&outcome.trace);
        total.merge(&reached);
        if let Some(invariant) = space.hunt.pinned(&outcome, target) {
            let original = Counterexample { scenario, seed: case.seed, outcome };
            let (minimal, shrink_runs) = if guided.shrink {
                search::shrink_fixed(&base, &original, invariant, space.hunt)?
            } else {
                (original.clone(), 0)
            };
            let found = Found { invariant, original, minimal, shrink_runs, shrink_error: None };
            progress(&Progress { cases: cases_run, features: hits.len(), corpus: corpus.len() });
            return Ok(GuidedReport {
                found: Some(found),
                cases: cases_run,
                coverage: total,
                features: hits.len(),
                corpus: corpus.len(),
                growth,
                explained,
                steps,
            });
        }
        explained.count(space.hunt, &outcome);
        let reached_features = features(&outcome.trace, &reached);
        let new: Vec<Feature> = reached_features.iter().copied().filter(|f| !hits.contains_key(f)).collect();
        let mut touched: BTreeSet<usize> = BTreeSet::new();
        for f in &reached_features {
            *hits.entry(*f).or_insert(0) += 1;
            touched.extend(openers.get(f).into_iter().flatten());
        }
        let rarest_of = |fs: &[Feature]| fs.iter().map(|f| hits.get(f).copied().unwrap_or(0)).min().unwrap_or(0);
        for i in touched {
            rarity[i] = rarest_of(&opened[i]);
        }
        if !new.is_empty() {
            for f in &new {
                openers.entry(*f).or_default().push(corpus.len());
            }
            rarity.push(rarest_of(&new));
            corpus.push((case, scenario));
            opened.push(new);
            growth.push((cases_run, hits.len()));
        }
        progress(&Progress { cases: cases_run, features: hits.len(), corpus: corpus.len() });
    }
    if cases_run > 0 && explained.refused == cases_run {
        return Err(search::every_case_refused(&explained));
    }
    Ok(GuidedReport {
        found: None,
        cases: cases_run,
        coverage: total,
        features: hits.len(),
        corpus: corpus.len(),
        growth,
        explained,
        steps,
    })
}

/// `explore --guided`: [`explore_guided`] on `scenario` over `space`, printing coverage growth on stderr every two seconds and a summary at the
/// end. Returns what was found, the cases run, their steps and their coverage.
pub fn explore_guided_reporting(
    scenario: &Scenario,
    space: &Space,
    budget: u64,
    rng_seed: u64,
    shrink: bool,
    target: Option<&str>,
) -> Result<search::Explored, SimError> {
    let guided = Guided { budget, rng_seed, shrink, target: target.map(str::to_string) };
    let started = WallClock::now();
    let mut last_line = started;
    let mut elapsed = None;
    let mut on_progress = |p: &Progress| {
        if last_line.elapsed() >= Duration::from_secs(2) {
            last_line = WallClock::now();
            let secs = started.elapsed().as_secs_f64();
            eprintln!(
                "  guided: {}/{budget} cases, {} features ({:.1} features/s, {:.2} per case), corpus {}, {:.0} runs/s",
                p.cases,
                p.features,
                p.features as f64 / secs,
                p.features as f64 / p.cases.max(1) as f64,
                p.corpus,
                p.cases as f64 / secs
            );
        }
        elapsed = Some(started.elapsed());
    };
    let report = explore_guided(scenario, space, &guided, &mut on_progress)?;
    let secs = elapsed.unwrap_or_default().as_secs_f64();
    let growth: Vec<String> = report.growth.iter().rev().take(6).rev().map(|(c, f)| format!("{c}:{f}")).collect();
    eprintln!(
        "guided: {} features from {} case(s) in {secs:.2}s ({:.1} features/s, {:.2} per case); corpus {}; last growth \
         (case:features) {}",
        report.features,
        report.cases,
        report.features as f64 / secs.max(1e-9),
        report.features as f64 / report.cases.max(1) as f64,
        report.corpus,
        growth.join(" ")
    );
    Ok(search::Explored {
        found: report.found,
        runs: report.cases,
        steps: report.steps,
        coverage: report.coverage,
        explained: report.explained,
    })
}

/// A corpus entry: a case kept for the features it reached, and the scenario it ran.
type Entry = (Case, Scenario);

/// Draws the cases: the family's own, fresh ones, and mutations of the corpus.
struct Explorer<'a> {
    base: &'a Scenario,
    space: &'a Space,
    rng: SplitMix64,
    fresh: TestRunner,
    strategy: BoxedStrategy<Case>,
    horizon: u64,
}

impl<'a> Explorer<'a> {
    fn new(base: &'a Scenario, space: &'a Space, rng_seed: u64) -> Self {
        let mut seed_bytes = [0u8; 32];
        seed_bytes[..8].copy_from_slice(&rng_seed.to_le_bytes());
        seed_bytes[8..16].copy_from_slice(b"guided\0\0");
        let fresh = TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes));
        Explorer {
            base,
            space,
            rng: SplitMix64::new(rng_seed ^ 0x6775_6964_6564),
            fresh,
            strategy: cases(space),
            horizon: space.horizon.as_secs().max(1),
        }
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.rng.next_u64() % n
        }
    }

    fn fresh_case(&mut self) -> Option<Case> {
        self.strategy.new_tree(&mut self.fresh).ok().map(|t| t.current())
    }

    /// The case to run as number `n` (from 0), with its scenario when drawing it built one (a
    /// mutation's, checked valid); `None` when a draw came out invalid (drawn again).
    /// `rarity[i]`: how many runs reached the rarest feature corpus entry `i` opened.
    fn next_case(&mut self, n: u64, corpus: &[Entry], rarity: &[u64]) -> Option<(Case, Option<Scenario>)> {
        if n == 0 {
            // The family as it is, on the madsim seed `explore` without `--search` starts from.
            let case = Case { overrides: vec![], swarm: Swarm::new(), seed: self.rng.next_u64() % 1_000 };
            return Some((case, None));
        }
        if n < WARM_UP || corpus.is_empty() || self.below(FRESH_EVERY) == 0 {
            return self.fresh_case().map(|case| (case, None));
        }
        // Half the time one of the 8 entries whose features the fewest runs reach (the newest
        // first among equals): they border the least explored ground.
        let pick = if self.below(2) == 0 {
            let mut rarest: Vec<usize> = (0..corpus.len()).collect();
            let key = |i: &usize| (rarity.get(*i).copied().unwrap_or(0), std::cmp::Reverse(*i));
            // Only the first 8 in that order matter (the key is a total order: indices differ).
            let top = rarest.len().min(8);
            if rarest.len() > top {
                rarest.select_nth_unstable_by_key(top - 1, key);
                rarest.truncate(top);
            }
            rarest.sort_by_key(key);
            rarest[self.below(top as u64) as usize]
        } else {
            self.below(corpus.len() as u64) as usize
        };
        let (parent, parent_scenario) = &corpus[pick];
        let mut case = parent.clone();
        for k in 0..=self.below(3) {
            let mutation = MUTATIONS[self.below(MUTATIONS.len() as u64) as usize];
            // The first mutation reads the parent's scenario; a later one, its input's, which the
            // validation may refuse (then the draw gives up).
            let built;
            let scenario = if k == 0 {
                parent_scenario
            } else {
                built = case.scenario(self.base).ok()?;
                &built
            };
            case = self.mutate(case, scenario, mutation)?;
        }
        // A mutation that changed nothing is not worth a run, nor is one the validation refuses
        // (a stretched first delay past the backoff cap): draw again. The scenario checked is
        // the one that runs.
        if case == *parent {
            return None;
        }
        let scenario = case.scenario(self.base).ok()?;
        Some((case, Some(scenario)))
    }

    /// Mutates `case`, whose scenario is `scenario`.
    fn mutate(&mut self, mut case: Case, scenario: &Scenario, mutation: Mutation) -> Option<Case> {
        let mut faults: Vec<PlannedFault> = scenario.faults.faults().to_vec();
        match mutation {
            Mutation::Reseed => {
                case.seed = self.rng.next_u64();
                return Some(case);
            }
            Mutation::ChangeOverride => {
                let drawn = self.fresh_case()?;
                // Under swarm testing only a key of a part this case switched on.
                let params: Vec<&Override> = drawn
                    .overrides
                    .iter()
                    .filter(|(k, _)| !k.starts_with("fault.") && self.space.allows(&case.swarm, k))
                    .collect();
                if params.is_empty() {
                    return Some(case);
                }
                let (key, value) = params[self.below(params.len() as u64) as usize].clone();
                case.overrides.retain(|(k, _)| *k != key);
                case.overrides.push((key, value));
                return Some(case);
            }
            Mutation::Stretch => {
                let durations: Vec<usize> = (0..case.overrides.len())
                    .filter(|i| !case.overrides[*i].0.starts_with("fault."))
                    .filter(|i| parse_duration(&case.overrides[*i].1).is_ok())
                    .collect();
                let partitions: Vec<usize> =
                    (0..faults.len()).filter(|i| WINDOW_KINDS.contains(&faults[*i].fault.kind())).collect();
                let choices = durations.len() + partitions.len();
                if choices == 0 {
                    return Some(case);
                }
                let factor = [0.5, 0.8, 1.25, 2.0][self.below(4) as usize];
                let which = self.below(choices as u64) as usize;
                if which < durations.len() {
                    let i = durations[which];
                    let d = parse_duration(&case.overrides[i].1).ok()?;
                    let stretched = Duration::from_millis(((d.as_millis() as f64) * factor).round().max(1.0) as u64);
                    case.overrides[i].1 = format_duration(stretched);
                    return Some(case);
                }
                let f = &mut faults[partitions[which - durations.len()]];
                let secs = ((f.fault.duration().as_secs() as f64) * factor).round() as u64;
                let duration = Duration::from_secs(secs.clamp(1, MAX_PARTITION));
                f.fault = match f.fault {
                    Fault::Blackhole { target, .. } => Fault::Blackhole { target, duration },
                    _ => Fault::Partition { duration },
                };
            }
            Mutation::MoveFault => {
                if faults.is_empty() {
                    return Some(case);
                }
                let i = self.below(faults.len() as u64) as usize;
                let shift = 1 + self.below(60);
                let at = faults[i].at.as_secs();
                let moved = if self.below(2) == 0 { at.saturating_sub(shift) } else { (at + shift).min(self.horizon) };
                faults[i].at = Duration::from_secs(moved);
            }
            Mutation::AddFault => {
                // Under swarm testing only a kind this case switched on.
                let kinds: Vec<&'static str> = self
                    .space
                    .fault_kinds
                    .iter()
                    .copied()
                    .filter(|k| !self.space.swarm || case.swarm.contains_key(*k))
                    .collect();
                if kinds.is_empty() {
                    return Some(case);
                }
                let kind = kinds[self.below(kinds.len() as u64) as usize];
                let at = Duration::from_secs(self.below(self.horizon + 1));
                let fault = match kind {
                    "partition" => Fault::Partition { duration: Duration::from_secs(1 + self.below(MAX_PARTITION)) },
                    "blackhole" => {
                        Fault::Blackhole { target: None, duration: Duration::from_secs(1 + self.below(MAX_PARTITION)) }
                    }
                    "reset" => Fault::Reset,
                    "server-restart" => Fault::ServerRestart,
                    _ => Fault::ClientRestart,
                };
                let planned = faults.iter().filter(|f| f.fault.kind() == kind).count() as u32;
                if planned >= self.space.max_intensity.max(1) {
                    return Some(case);
                }
                faults.push(PlannedFault { at, fault });
            }
            Mutation::RemoveFault => {
                if faults.is_empty() {
                    return Some(case);
                }
                faults.remove(self.below(faults.len() as u64) as usize);
            }
        }
        let configuration = case.swarm.clone();
        set_faults(&mut case, scenario, faults);
        if self.space.swarm {
            // A mutation moves within the case's configuration: what it switched on stays on.
            case.swarm = configuration;
        }
        Some(case)
    }
}

/// Writes `faults` into `case` as the overrides of each kind that changed, and records the kinds
/// the case now plans as its swarm (intensity: how many of that kind).
fn set_faults(case: &mut Case, scenario: &Scenario, faults: Vec<PlannedFault>) {
    for kind in Fault::KINDS {
        let Some(key) = fault_setting(kind) else { continue };
        let of_kind: Vec<&PlannedFault> = faults.iter().filter(|f| f.fault.kind() == *kind).collect();
        let value = if *kind == "blackhole" && !of_kind.is_empty() {
            // As its key writes them, with the client each may name.
            let mut planned = scenario.clone();
            planned.faults.remove_kind(kind);
            of_kind.iter().for_each(|f| planned.faults.push((*f).clone()));
            setting(key).map(|s| (s.show)(&planned)).unwrap_or_default()
        } else if WINDOW_KINDS.contains(kind) {
            partitions_value(of_kind.iter().map(|f| (f.at.as_secs(), f.fault.duration().as_secs())).collect())
        } else {
            times_value(of_kind.iter().map(|f| f.at.as_secs()).collect())
        };
        let current = setting(key).map(|s| (s.show)(scenario)).unwrap_or_default();
        if value == current {
            continue;
        }
        case.overrides.retain(|(k, _)| k != key);
        case.overrides.push((key.to_string(), value));
    }
    let plan = FaultPlan::new(faults);
    case.swarm = Fault::KINDS
        .iter()
        .filter_map(|kind| {
            let n = plan.faults().iter().filter(|f| f.fault.kind() == *kind).count() as u32;
            let key = fault_setting(kind)?;
            case.overrides.iter().any(|(k, _)| k == key).then(|| (kind.to_string(), n.max(1)))
        })
        .collect();
}

/// AFL's hit-count buckets: 1, 2, 3, 4–7, 8–15, 16–31, 32–127, 128+.
fn bucket(n: u32) -> u32 {
    match n {
        0..=3 => n,
        4..=7 => 4,
        8..=15 => 8,
        16..=31 => 16,
        32..=127 => 32,
        _ => 128,
    }
}

fn fnv(parts: &[&str]) -> Feature {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.as_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(PRIME);
        }
        h = (h ^ 0xff).wrapping_mul(PRIME);
    }
    h
}

/// The abstract fact a step stands for, if it stands for one worth telling apart; the frequent
/// data steps (events stored and delivered, keep-alives, sends) are left out, their effects show
/// in the decisions and resumes they lead to. Written into `out` (cleared first), which is reused
/// from step to step: a run's features write a label for most of its steps.
fn label(kind: &StepKind, out: &mut String) -> bool {
    use std::fmt::Write as _;
    out.clear();
    // Writing to a `String` cannot fail; a [`FirstWord`] stops on purpose, and is not used here.
    let written = match kind {
        StepKind::Decision { call, outcome, action, error } => {
            let stream = if call.is_some() { "post" } else { "get" };
            let outcome = match outcome {
                Some(StreamOutcome::Reconnectable) => "reconnectable",
                Some(StreamOutcome::SessionTerminated) => "terminated",
                Some(StreamOutcome::EventsLost) => "events-lost",
                Some(StreamOutcome::ServerClosed) => "server-closed",
                None => "none",
            };
            let _ = write!(out, "decision:{stream}:{outcome}:");
            if let Some(a) = action {
                // The action's variant: its `Debug` form up to the first space or brace.
                let _ = write!(FirstWord(out), "{a:?}");
            }
            write!(out, ":{}", error.is_some())
        }
        StepKind::ConnEnd { end, .. } => write!(out, "conn-end:{end}"),
        StepKind::Response { head, .. } => write!(out, "status:{}", head.status),
        StepKind::Backoff { call, attempt, .. } => write!(out, "backoff:{}:{}", call.is_some(), bucket(*attempt)),
        StepKind::InitializeBackoff { attempt, .. } => write!(out, "init-backoff:{}", bucket(*attempt)),
        StepKind::ClientStart { restored, .. } => write!(out, "client-start:{restored}"),
        StepKind::LbIdleCut { .. } => out.write_str("lb-idle-cut"),
        StepKind::HttpResent { written, .. } => write!(out, "http-resent:{written}"),
        StepKind::LbResent { reused, .. } => write!(out, "lb-resent:{reused}"),
        StepKind::KeepAliveClosed { .. } => out.write_str("keep-alive-closed"),
        StepKind::ServerClosedStream { rule, .. } => write!(out, "server-closed-stream:{rule:?}"),
        StepKind::EventDropped { .. } => out.write_str("event-dropped"),
        StepKind::SessionCreated { .. } => out.write_str("session-created"),
        StepKind::SessionEnded { reason, .. } => write!(out, "session-ended:{reason:?}"),
        StepKind::SideEffect { idempotent, .. } => write!(out, "side-effect:{idempotent}"),
        StepKind::Resume { stream, outcome, .. } => {
            let _ = write!(out, "resume:{}:", stream.is_some());
            match outcome {
                ResumeOutcome::Replayed { replayed } => write!(out, "replayed:{}", bucket(*replayed)),
                ResumeOutcome::Rejected { status, head } => write!(out, "rejected:{status}:{}", head.is_some()),
                ResumeOutcome::SilentHead { skipped } => write!(out, "silent-head:{}", bucket(*skipped)),
                ResumeOutcome::FromOldest { skipped, .. } => write!(out, "from-oldest:{}", bucket(*skipped)),
                ResumeOutcome::Empty { open } => write!(out, "empty:{open}"),
            }
        }
        StepKind::Rejected { status, .. } => write!(out, "rejected:{status}"),
        StepKind::RefusedAfterHead { status, .. } => write!(out, "refused-after-head:{status}"),
        StepKind::ToolEnded { end, .. } => write!(out, "tool-ended:{end:?}"),
        StepKind::ServerStart { epoch, .. } => write!(out, "server-start:{}", bucket(*epoch)),
        StepKind::AppGap { .. } => out.write_str("app-gap"),
        StepKind::AppResult { .. } => out.write_str("app-result"),
        StepKind::AppError { .. } => out.write_str("app-error"),
        StepKind::AppUnknownOutcome { .. } => out.write_str("app-unknown-outcome"),
        StepKind::AppSessionLost { .. } => out.write_str("app-session-lost"),
        StepKind::AppReinitialize { .. } => out.write_str("app-reinitialize"),
        StepKind::Fault { fault } => write!(out, "fault:{}", fault.split_whitespace().next().unwrap_or("")),
        StepKind::Liveness { .. } => out.write_str("liveness"),
        _ => return false,
    };
    debug_assert!(written.is_ok(), "writing to a String cannot fail");
    true
}

/// A writer that keeps what it is given up to the first space or `{` and then refuses the rest,
/// so a long `Debug` form stops being formatted once its first word is written.
struct FirstWord<'a>(&'a mut String);

impl std::fmt::Write for FirstWord<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        match s.find([' ', '{']) {
            Some(i) => {
                self.0.push_str(&s[..i]);
                Err(std::fmt::Error)
            }
            None => {
                self.0.push_str(s);
                Ok(())
            }
        }
    }
}

/// The features of a run: labels with bucketed counts, label-to-label edges, the state each fault
/// struck in (calls in flight, a stream detached, a partition already on), and coverage events
/// with bucketed counts.
pub fn features(trace: &Trace, reached: &Coverage) -> Vec<Feature> {
    let mut out = Vec::new();
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    let mut previous = String::from("start");
    let mut current = String::new();
    let mut in_flight: i64 = 0;
    let mut detached = false;
    let mut partitioned_until = 0u64;
    for step in &trace.steps {
        match &step.kind {
            StepKind::AppCall { .. } => in_flight += 1,
            k if k.resolves().is_some() => in_flight -= 1,
            StepKind::ConnEnd { end, .. } => detached = !matches!(end, mcpsim_model::http::ConnEnd::Clean),
            StepKind::Send { .. } => detached = false,
            _ => {}
        }
        if !label(&step.kind, &mut current) {
            continue;
        }
        if let StepKind::Fault { fault } = &step.kind {
            let overlapping = step.t < partitioned_until;
            let state = format!("{}:{}:{overlapping}", in_flight > 0, detached);
            out.push(fnv(&["fault-in", &current, &state]));
            if let Some(end) = partition_end(fault) {
                partitioned_until = partitioned_until.max(end);
            }
        }
        out.push(fnv(&["edge", &previous, &current]));
        match counts.get_mut(current.as_str()) {
            Some(n) => *n += 1,
            None => {
                counts.insert(current.clone(), 1);
            }
        }
        std::mem::swap(&mut previous, &mut current);
    }
    for (label, n) in &counts {
        out.push(fnv(&["count", label, &bucket(*n).to_string()]));
    }
    for (event, n) in &reached.0 {
        if *n > 0 {
            out.push(fnv(&["coverage", event.name(), &bucket(*n).to_string()]));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// When a partition a `Fault` step announces heals, in µs (`partition 60s..4m`).
fn partition_end(fault: &str) -> Option<u64> {
    let range = fault.strip_prefix("partition ")?;
    let (_, end) = range.split_once("..")?;
    parse_duration(end.trim()).ok().map(|d| d.as_micros() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chatty() -> Scenario {
        Scenario::build("chatty-tool", "reference", "silent-head").unwrap()
    }

    #[test]
    fn mutations_keep_cases_valid_and_inside_the_space() {
        let base = Scenario::build("long-tool", "reference", "reference").unwrap();
        let space = Space::within_conditions(&base);
        let constrained = space.constrained(&base).unwrap();
        let mut explorer = Explorer::new(&constrained, &space, 7);
        let first = explorer.fresh_case().unwrap();
        let mut corpus = vec![(first.clone(), first.scenario(&constrained).unwrap())];
        for n in 0..300 {
            let Some((case, built)) = explorer.next_case(WARM_UP + n, &corpus, &[]) else { continue };
            let s = case.scenario(&constrained).unwrap_or_else(|e| panic!("{case:?}: {e}"));
            assert!(built.is_none_or(|b| b == s), "a mutation's scenario is its case's: {case:?}");
            assert!(s.faults.faults().iter().all(|f| f.fault != Fault::ServerRestart), "{case:?}");
            let parts: Vec<_> = s.faults.faults().iter().filter(|f| f.fault.kind() == "partition").collect();
            assert!(parts.windows(2).all(|w| w[0].at + w[0].fault.duration() < w[1].at), "overlap: {case:?}");
            assert_eq!(s.server.retention.max_events, None);
            for kind in case.swarm.keys() {
                assert!(case.overrides.iter().any(|(k, _)| Some(k.as_str()) == fault_setting(kind)), "{case:?}");
            }
            corpus.push((case, s));
        }
    }

    /// Asked for, black holes are added, moved and stretched as windows, and every case they make
    /// builds: the kind's key reads back what the mutation planned.
    #[test]
    fn mutations_plan_black_holes_when_the_space_draws_them() {
        let base = Scenario::build("long-tool", "reference", "reference").unwrap();
        let kinds = ["blackhole".to_string(), "reset".to_string()];
        let space = Space::for_scenario(&base).with_fault_kinds(&kinds).unwrap();
        let constrained = space.constrained(&base).unwrap();
        let mut explorer = Explorer::new(&constrained, &space, 3);
        let first = explorer.fresh_case().unwrap();
        let mut corpus = vec![(first.clone(), first.scenario(&constrained).unwrap())];
        let mut holes = 0;
        for n in 0..300 {
            let Some((case, built)) = explorer.next_case(WARM_UP + n, &corpus, &[]) else { continue };
            let s = case.scenario(&constrained).unwrap_or_else(|e| panic!("{case:?}: {e}"));
            assert!(built.is_none_or(|b| b == s), "a mutation's scenario is its case's: {case:?}");
            let planned = s.faults.faults().iter().filter(|f| f.fault.kind() == "blackhole").count();
            assert!(planned == 0 || case.swarm.contains_key("blackhole"), "{case:?}");
            let mut swarm_kinds = s.faults.faults().iter().map(|f| f.fault.kind()).filter(|k| Fault::KINDS.contains(k));
            assert!(swarm_kinds.all(|k| ["blackhole", "reset"].contains(&k)), "{case:?}");
            holes += planned;
            corpus.push((case, s));
        }
        assert!(holes > 30, "{holes} black holes planned over 300 cases");
    }

    #[test]
    fn swarm_mutations_stay_within_the_cases_configuration() {
        let base = chatty();
        for space in [Space::for_scenario(&base), Space::within_conditions(&base)] {
            let space = space.swarming(true);
            let constrained = space.constrained(&base).unwrap();
            let mut explorer = Explorer::new(&constrained, &space, 5);
            let mut corpus: Vec<Entry> = (0..8)
                .filter_map(|_| explorer.fresh_case())
                .map(|c| (c.clone(), c.scenario(&constrained).unwrap()))
                .collect();
            let mut mutated = 0;
            for n in 0..300 {
                let Some((case, _)) = explorer.next_case(WARM_UP + n, &corpus, &[]) else { continue };
                let s = case.scenario(&constrained).unwrap_or_else(|e| panic!("{case:?}: {e}"));
                if let Some((parent, _)) = corpus.iter().find(|(c, _)| c.seed == case.seed) {
                    assert_eq!(parent.swarm, case.swarm, "a mutation changed the configuration: {case:?}");
                    mutated += 1;
                }
                for kind in s.faults.faults().iter().map(|f| f.fault.kind()).filter(|k| Fault::KINDS.contains(k)) {
                    assert!(case.swarm.contains_key(kind), "{kind} planned but switched off: {case:?}");
                }
                for (key, _) in &case.overrides {
                    assert!(space.allows(&case.swarm, key), "{key} set but its part is off: {case:?}");
                }
                corpus.push((case, s));
            }
            assert!(mutated > 50, "{mutated} mutated cases");
        }
    }

    #[test]
    fn the_same_seed_draws_the_same_cases() {
        let base = chatty();
        let space = Space::for_scenario(&base);
        let draw = |seed| {
            let mut explorer = Explorer::new(&base, &space, seed);
            let mut corpus = Vec::new();
            for n in 0..40 {
                if let Some((case, _)) = explorer.next_case(n, &corpus, &[]) {
                    let scenario = case.scenario(&base).expect("a valid case");
                    corpus.push((case, scenario));
                }
            }
            corpus.into_iter().map(|(case, _)| case).collect::<Vec<Case>>()
        };
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
    }

    #[test]
    fn features_tell_a_cut_run_from_a_calm_one() {
        let base = Scenario::build("long-tool", "reference", "reference").unwrap();
        let calm_scenario = {
            let mut s = base.clone();
            s.apply_overrides(&[("lb.idle_timeout".into(), "none".into())]).unwrap();
            s
        };
        let cut = run(&base, 0).unwrap();
        let calm = run(&calm_scenario, 0).unwrap();
        let f = |o: &crate::engine::runner::RunOutcome| features(&o.trace, &coverage(&o.trace));
        let (cut, calm) = (f(&cut), f(&calm));
        assert!(!cut.is_empty() && !calm.is_empty());
        assert!(cut.iter().any(|f| !calm.contains(f)), "an idle cut reaches something a calm run does not");
        assert!(cut.windows(2).all(|w| w[0] < w[1]), "a run's features are sorted, each once");
    }

    /// A feature is FNV-1a over its parts, each closed by 0xff: the same features from one
    /// build to the next, so a guided run's corpus and cases do not move with the code.
    #[test]
    fn a_feature_is_fnv_1a_over_its_parts_each_closed_by_ff() {
        assert_eq!(fnv(&["edge", "start", "call"]), 0xa5de_2259_71d7_f829);
        assert_ne!(fnv(&["edge", "startcall", ""]), fnv(&["edge", "start", "call"]));
    }

    #[test]
    fn buckets_are_afl_hit_counts() {
        assert_eq!([0, 1, 2, 3, 5, 9, 20, 100, 1000].map(bucket), [0, 1, 2, 3, 4, 8, 16, 32, 128]);
        assert_eq!(partition_end("partition 60s..4m"), Some(240_000_000));
        assert_eq!(partition_end("reset at 30s"), None);
    }
}
