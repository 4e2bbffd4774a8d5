//! One run: a scenario and a seed in, a judged trace out.
//!
//! The run happens on the calling thread (see [`crate::engine::run_thread`] for why that gives the bytes a
//! fresh thread would), on a madsim runtime seeded with the run's seed. Its main task starts the
//! nodes (server, load balancer, one per logical client), carries out the fault plan, opens the
//! liveness phase when the faults heal, and stops the run once every call resolved, every delete
//! was made and no tool runs (plus a settle period), or at the scenario's time limit.

use crate::engine::actors::injector::{self, Link};
use crate::engine::actors::{self, client_node, replica_node, World, LB_NODE, STORE_NODE};
use crate::engine::logging;
use crate::engine::net::Wire;
use crate::engine::recorder::{lock, Recorder, SharedSteps};
use crate::engine::run_thread;
use crate::error::SimError;
use crate::scenario::faults::Fault;
use crate::scenario::Scenario;
use madsim::runtime::{Handle, Runtime};
use mcpsim_model::oracle::conditions::Condition;
use mcpsim_model::oracle::{check_all, Violation};
use mcpsim_model::time::{format_micros, micros, Instant};
use mcpsim_model::trace::{Actor, StepKind, Trace, DEFAULT_MAX_RECONNECTS_PER_HOUR};
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How long the run goes on once it looks finished, so that late effects still show.
pub(crate) const SETTLE: Duration = Duration::from_secs(5);

/// The result of one run.
#[derive(Debug)]
pub struct RunOutcome {
    /// The whole trace, footer included.
    pub trace: Trace,
    /// What the oracles found, as in the footer.
    pub violations: Vec<Violation>,
    /// Beside each violation, the broken conditions that explain it (empty when none does), from
    /// the judgement that wrote the footer (`conditions::judged`). Empty for an outcome built
    /// without it: readers judge the trace then.
    pub explained_by: Vec<Vec<Condition>>,
}

/// Runs one simulation of `scenario` under `seed` and judges its trace.
///
/// A panic inside the simulation (a machine's bug, madsim finding that every task blocks
/// forever) comes back as `SimError::Runtime`, never as a panic of the caller.
///
/// It runs on the calling thread, or on a fresh one when the environment sets
/// [`FRESH_THREAD_VAR`]`=1` (slower, same bytes: a way to check [`crate::engine::run_thread`]'s claim).
///
/// The run has the [`Budget`] the environment sets ([`Budget::from_env`]); a run that goes
/// over it is stopped and comes back as `SimError::OverBudget`.
///
/// ```
/// // The design note's first incident: the load balancer cuts the silent stream of a long tool
/// // call, and the naive client sends the call again in a new session.
/// let s = mcpsim::Scenario::build("long-tool", "naive", "reference")?;
/// let outcome = mcpsim::run(&s, 0)?;
/// assert!(outcome.violations.iter().any(|v| v.invariant == "no-duplicate-execution"));
/// // The verdict is written into the trace's footer too.
/// assert_eq!(outcome.trace.footer.as_ref().map(|f| f.verdict.len()), Some(outcome.violations.len()));
///
/// // Same seed, same bytes.
/// assert_eq!(mcpsim::run(&s, 0)?.trace.to_jsonl(), outcome.trace.to_jsonl());
/// # Ok::<(), mcpsim::SimError>(())
/// ```
pub fn run(scenario: &Scenario, seed: u64) -> Result<RunOutcome, SimError> {
    run_with_budget(scenario, seed, Budget::from_env()?)
}

/// [`run`] with an explicit budget.
pub fn run_with_budget(scenario: &Scenario, seed: u64, budget: Budget) -> Result<RunOutcome, SimError> {
    run_on(Thread::chosen(), scenario, seed, budget)
}

/// How much one run may do before it is stopped: the bound that keeps a scenario asking for too
/// much (an event every microsecond, a keep-alive every microsecond, a tool of thirty years with
/// keep-alives) from taking all the memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The most steps a run may record. Every family's runs and generated cases stay far below
    /// the default (hundreds to a few thousand steps); see `default_budget_covers_every_family`.
    pub max_steps: u64,
}

/// The environment variable that sets the step budget of every run (`MCPSIM_MAX_STEPS=N`).
pub const MAX_STEPS_VAR: &str = "MCPSIM_MAX_STEPS";

impl Budget {
    /// 200 000 steps: about 50 MB of trace at most, a second or two of a debug build.
    pub const DEFAULT: Budget = Budget { max_steps: 200_000 };

    /// [`Budget::DEFAULT`], or the step count [`MAX_STEPS_VAR`] names (read once per process).
    pub fn from_env() -> Result<Budget, SimError> {
        static FROM_ENV: std::sync::OnceLock<Result<Budget, String>> = std::sync::OnceLock::new();
        let parsed = FROM_ENV.get_or_init(|| match std::env::var(MAX_STEPS_VAR) {
            Err(_) => Ok(Budget::DEFAULT),
            Ok(v) => match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => Ok(Budget { max_steps: n }),
                _ => Err(v),
            },
        });
        parsed.clone().map_err(|value| SimError::BadValue {
            key: MAX_STEPS_VAR.to_string(),
            value,
            problem: "not a positive number of steps".to_string(),
        })
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget::DEFAULT
    }
}

/// The most logical clients a run starts (each is a madsim node with its own address).
pub(crate) const MAX_CLIENTS: u32 = 256;

/// The longest simulated time a run may be planned for (its time limit): a century.
pub(crate) const MAX_SIMULATED: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// What makes `scenario` impossible to run, checked before anything is started: its own
/// validation, then the engine's bounds (clients, simulated time, latency).
pub(crate) fn runnable(scenario: &Scenario) -> Result<(), String> {
    scenario.validate().map_err(|e| e.to_string())?;
    if let Some(problem) = scenario.clients_problem() {
        return Err(problem);
    }
    if scenario.clients > MAX_CLIENTS {
        return Err(format!("{} clients is more than the {MAX_CLIENTS} a run can start", scenario.clients));
    }
    let limit = scenario.time_limit();
    if limit > MAX_SIMULATED {
        return Err(format!(
            "the run would be planned for {} simulated, more than the {} a run may last",
            mcpsim_model::time::format_duration(limit),
            mcpsim_model::time::format_duration(MAX_SIMULATED)
        ));
    }
    if scenario.net.latency_min > scenario.net.latency_max || scenario.net.latency_max > MAX_SIMULATED {
        return Err(format!(
            "network latency {:?}..{:?} is not a range a run can draw from",
            scenario.net.latency_min, scenario.net.latency_max
        ));
    }
    Ok(())
}

/// The environment variable that puts every run on a fresh OS thread.
pub const FRESH_THREAD_VAR: &str = "MCPSIM_FRESH_THREAD";

/// [`run`] on a brand-new OS thread: slower, and byte for byte the same (`tests/determinism.rs`).
pub fn run_on_fresh_thread(scenario: &Scenario, seed: u64) -> Result<RunOutcome, SimError> {
    run_on(Thread::Fresh, scenario, seed, Budget::from_env()?)
}

/// Which thread a run happens on.
#[derive(Clone, Copy, Debug)]
enum Thread {
    /// The calling thread.
    Calling,
    /// A new thread for this run only.
    Fresh,
}

impl Thread {
    /// The calling thread unless [`FRESH_THREAD_VAR`] is `1` (read once per process).
    fn chosen() -> Thread {
        static FRESH: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let fresh = *FRESH.get_or_init(|| std::env::var(FRESH_THREAD_VAR).is_ok_and(|v| v.trim() == "1"));
        if fresh {
            Thread::Fresh
        } else {
            Thread::Calling
        }
    }
}

fn run_on(thread: Thread, scenario: &Scenario, seed: u64, budget: Budget) -> Result<RunOutcome, SimError> {
    let (for_thread, header) = checked(scenario)?;
    // Room for as many steps as this thread's last run recorded (studies run one scenario over
    // many seeds): the trace is not copied as it grows.
    thread_local! {
        static LAST_STEPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }
    let room = LAST_STEPS.get().min(Budget::DEFAULT.max_steps as usize);
    let steps: SharedSteps = Arc::new(std::sync::Mutex::new(Vec::with_capacity(room)));
    let steps_for_thread = steps.clone();
    let max_steps = usize::try_from(budget.max_steps).unwrap_or(usize::MAX);
    let over_budget =
        simulate_on(thread, seed, &steps, move || simulate(for_thread, seed, steps_for_thread, max_steps))?;
    if over_budget {
        let at = lock(&steps).last().map(|s| format_micros(s.t)).unwrap_or_else(|| "the start".to_string());
        return Err(SimError::OverBudget { seed, max_steps: budget.max_steps, at, var: MAX_STEPS_VAR });
    }
    let mut trace = Trace::new(seed, header);
    trace.steps = std::mem::take(&mut *lock(&steps));
    LAST_STEPS.set(trace.steps.len());
    let violations = check_all(&trace);
    let (records, explained_by) = mcpsim_model::oracle::conditions::judged(&trace, &violations);
    trace.finish(records);
    Ok(RunOutcome { trace, violations, explained_by })
}

/// `scenario`, checked [`runnable`], shared, and its trace header (`{"scenario": ...}`). Studies
/// run one scenario over many seeds, so the last one checked on this thread is kept while the
/// scenario stays the same: comparing two scenarios is much cheaper than checking one (every
/// setting's rules; a sixth of a `long-tool` run) or writing it as JSON.
fn checked(scenario: &Scenario) -> Result<(Arc<Scenario>, Arc<serde_json::Value>), SimError> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(Arc<Scenario>, Arc<serde_json::Value>)>> = const { std::cell::RefCell::new(None) };
    }
    let last = LAST.with_borrow(|last| {
        last.as_ref().filter(|(s, _)| **s == *scenario).map(|(s, header)| (s.clone(), header.clone()))
    });
    if let Some(last) = last {
        return Ok(last);
    }
    runnable(scenario).map_err(SimError::Usage)?;
    let json = serde_json::to_value(scenario)
        .map_err(|e| SimError::Runtime(format!("the scenario cannot be written as JSON: {e}")))?;
    let header = Arc::new(serde_json::Value::Object(serde_json::Map::from_iter([("scenario".to_string(), json)])));
    let shared = Arc::new(scenario.clone());
    LAST.set(Some((shared.clone(), header.clone())));
    Ok((shared, header))
}

/// Runs `simulation` on `thread`; its panic becomes an error naming the seed and how far the run
/// got (the steps recorded so far).
fn simulate_on<T: Send + 'static>(
    thread: Thread,
    seed: u64,
    steps: &SharedSteps,
    simulation: impl FnOnce() -> T + Send + 'static,
) -> Result<T, SimError> {
    let finished = match thread {
        Thread::Calling => run_thread::on_calling_thread(simulation),
        Thread::Fresh => run_thread::on_fresh_thread(simulation),
    };
    finished
        .map_err(|e| SimError::Runtime(format!("cannot start the simulation: {e}")))?
        .map_err(|panic| SimError::Runtime(describe_panic(seed, panic.as_ref(), steps)))
}

/// The simulation itself, on the current thread. Returns whether it was stopped at its step
/// budget.
fn simulate(scenario: Arc<Scenario>, seed: u64, steps: SharedSteps, max_steps: usize) -> bool {
    Wire::clear();
    let runtime = Runtime::with_seed_and_config(seed, madsim::Config::default());
    let over_budget = runtime.block_on(async move {
        logging::mark_run_start();
        let world = Arc::new(World::new(scenario, seed, Recorder::new(steps, max_steps)));
        drive(&world).await;
        world.rec.over_budget()
    });
    logging::mark_run_end();
    Wire::clear();
    over_budget
}

/// What the runner does at a planned time, in the order it does things due at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Agenda {
    /// A partition (the plan's n-th fault) ends.
    Heal(usize),
    /// The plan's n-th fault, a hop answering by itself, ends.
    AnswerEnd(usize),
    /// The plan's n-th fault, a black hole, stops swallowing new connections.
    BlackholeEnd(usize),
    /// The plan's n-th fault starts.
    Fault(usize),
    /// The plan's n-th fault, a rolling deploy, reaches a replica (draining it, or restarting it
    /// without draining).
    DeployStep(usize, u32),
    /// The plan's n-th fault, a rolling deploy, restarts a replica it drained.
    DeployRestart(usize, u32),
    /// Faults are over: the liveness phase begins.
    Liveness,
}

fn agenda(scenario: &Scenario) -> VecDeque<(Instant, Agenda)> {
    let at = |d: Duration| Instant(micros(d));
    let mut items = vec![(at(scenario.faults.heal_time()), Agenda::Liveness)];
    for (i, planned) in scenario.faults.faults().iter().enumerate() {
        items.push((at(planned.at), Agenda::Fault(i)));
        match planned.fault {
            Fault::Partition { duration } => items.push((at(planned.at + duration), Agenda::Heal(i))),
            Fault::Answer { duration, .. } => items.push((at(planned.at + duration), Agenda::AnswerEnd(i))),
            Fault::Blackhole { duration, .. } => items.push((at(planned.at + duration), Agenda::BlackholeEnd(i))),
            Fault::Deploy { interval, drain, replicas } => {
                for r in 0..replicas.min(scenario.lb.replicas) {
                    let step = planned.at + interval * r;
                    items.push((at(step), Agenda::DeployStep(i, r)));
                    if let Some(drain) = drain {
                        items.push((at(step + drain), Agenda::DeployRestart(i, r)));
                    }
                }
            }
            _ => {}
        }
    }
    items.sort();
    items.into()
}

/// The runner's task: nodes up, agenda, stop condition, final record.
async fn drive(world: &Arc<World>) {
    let scenario = &world.scenario;
    if scenario.max_reconnects_per_hour != DEFAULT_MAX_RECONNECTS_PER_HOUR || scenario.max_delivery_delay.is_some() {
        let max_reconnects_per_hour = scenario.max_reconnects_per_hour;
        let max_delivery_delay_us = scenario.max_delivery_delay.map(micros);
        world.rec.record(Actor::Run, StepKind::Bounds { max_reconnects_per_hour, max_delivery_delay_us });
    }
    let mut link = start_nodes(world).await;
    // The run may stop once the faults healed and the script made its last delete or resume.
    let last_delete = scenario.last_scripted_act();
    let heal = Instant(micros(scenario.faults.heal_time()));
    let quiet_from = Instant(micros(scenario.faults.heal_time().max(last_delete)));
    let limit = Instant(micros(scenario.time_limit()));
    let mut agenda = agenda(scenario);
    let mut settle_until: Option<Instant> = None;
    loop {
        if world.rec.over_budget() {
            kill_nodes(world);
            return;
        }
        let now = world.rec.now();
        while let Some((_, item)) = agenda.front().copied().filter(|(at, _)| *at <= now) {
            agenda.pop_front();
            carry_out(world, &mut link, item);
        }
        settle_until =
            if now >= quiet_from && is_quiet(world) { Some(settle_until.unwrap_or(now + SETTLE)) } else { None };
        if now >= limit || settle_until.is_some_and(|end| now >= end) {
            break;
        }
        // Past the heal the agenda is empty, so a later last delete needs a wake-up of its own.
        let after_heal = (quiet_from > heal && now < quiet_from).then_some(quiet_from);
        let wake =
            [agenda.front().map(|(at, _)| *at), settle_until, after_heal, Some(limit)].into_iter().flatten().min();
        let wake = world.rec.deadline(wake.expect("the time limit is always there"));
        tokio::select! {
            biased;
            _ = world.rec.progressed() => {}
            _ = madsim::time::sleep_until(wake) => {}
        }
    }
    finish(world);
}

fn carry_out(world: &Arc<World>, link: &mut Link, item: Agenda) {
    let faults = world.scenario.faults.faults();
    match item {
        Agenda::Heal(_) => link.heal(),
        Agenda::Fault(i) => injector::apply(world, link, i, &faults[i]),
        Agenda::DeployStep(i, replica) => {
            let drain = matches!(faults[i].fault, Fault::Deploy { drain: Some(_), .. });
            injector::deploy_step(world, replica, drain)
        }
        Agenda::DeployRestart(_, replica) => injector::deploy_restart(world, replica),
        Agenda::AnswerEnd(i) => injector::answer_end(world, &faults[i]),
        Agenda::BlackholeEnd(i) => injector::blackhole_end(world, i, &faults[i]),
        Agenda::Liveness => {
            let deadline = micros(world.scenario.liveness_deadline());
            world.rec.record(Actor::Run, StepKind::Liveness { deadline });
        }
    }
}

/// Every call of the scenario resolved at least once, no tool runs, no client has anything
/// pending (a standalone stream waiting to reconnect must get its chance to resume), and no
/// connect waits for a SYN to get through a black hole (it is on its way to what it carries).
fn is_quiet(world: &Arc<World>) -> bool {
    !world.net.dialing()
        && world.scenario.calls.iter().all(|c| world.rec.resolutions(c.call) > 0)
        && !world.stores().any(|store| world.with_store(store, |core| core.is_busy()).unwrap_or(false))
        && world.client_indexes().all(|i| world.with_client(i, |core| core.is_quiet()).unwrap_or(true))
}

/// Records the final state and kills every node, so that madsim drops their tasks (which hold
/// the world) when the runtime goes.
fn finish(world: &Arc<World>) {
    let mut sessions = world.client_indexes().map(|i| world.with_client(i, |core| core.session()).flatten());
    let client_session = sessions.next().flatten();
    let other_client_sessions = sessions.collect();
    let mut server_sessions: Vec<_> = world
        .stores()
        .flat_map(|store| world.with_store(store, |core| core.live_sessions()).unwrap_or_default())
        .collect();
    if world.stores().len() > 1 {
        server_sessions.sort();
    }
    // What the intermediaries still hold back never reached a client.
    world.with_lb(|core| core.record_holding(world));
    world.rec.record(Actor::Run, StepKind::RunEnd { client_session, server_sessions, other_client_sessions });
    kill_nodes(world);
}

/// Kills every node (a shared store's too), so that madsim drops their tasks (which hold the
/// world) when the runtime goes.
fn kill_nodes(world: &Arc<World>) {
    let handle = Handle::current();
    let servers = world.replicas().map(replica_node);
    let store = world.store_node.as_ref().map(|_| STORE_NODE.to_string());
    for node in world.client_indexes().map(client_node).chain([LB_NODE.to_string()]).chain(servers).chain(store) {
        handle.kill(node);
    }
}

/// Server replicas and load balancer first; the clients once all listen, so their first
/// connects find them. A shared store is started here, on its own node, so that it outlives the
/// restart of any replica.
async fn start_nodes(world: &Arc<World>) -> Link {
    if world.shared_store() {
        actors::server::start_store(world, 0);
    }
    for replica in world.replicas() {
        start_node(world, &replica_node(replica), move |world| actors::server::main(world, replica));
    }
    start_node(world, LB_NODE, actors::lb::main);
    let listeners = world.replicas().len() as u32 + 1;
    world.listening.acquire_many(listeners).await.expect("the semaphore is never closed").forget();
    for i in world.client_indexes() {
        start_node(world, &client_node(i), move |world| actors::client::main(world, i));
    }
    Link::new(world)
}

fn start_node<F, Fut>(world: &Arc<World>, name: &str, main: F)
where
    F: Fn(Arc<World>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let world = world.clone();
    // No madsim IP: the machines' addresses are the wire's (`crate::engine::wire`).
    Handle::current().create_node().name(name).init(move || main(world.clone())).build();
}

/// The panic's message, with how far the run got.
fn describe_panic(seed: u64, panic: &(dyn std::any::Any + Send), steps: &SharedSteps) -> String {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    let steps = lock(steps);
    let at = steps.last().map(|s| format_micros(s.t)).unwrap_or_else(|| "the start".to_string());
    format!("seed {seed}: {message} (after {} steps, at {at})", steps.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpsim_model::oracle::InvariantId::EveryCallResolves;

    #[test]
    fn a_shared_store_restarted_by_a_replica_keeps_its_timers_through_that_replicas_restart() {
        // The process exits on a malformed POST that replica 0 forwarded; the deploy then
        // restarts replica 0. The new process's timers (the tool's completion among them) must
        // not die with it: the re-issued call completes.
        let mut s = Scenario::build("long-tool", "reference", "reference").expect("a built-in family");
        let o = [
            ("lb.replicas", "2"),
            ("lb.store", "shared"),
            ("server.on_protocol_error", "restart-process"),
            ("fault.malformed", "client0@0s"),
            ("fault.deploy", "1m/30s"),
            ("app.calls", "1s;2m on_error=reinitialize-reissue"),
        ];
        s.apply_overrides(&o.map(|(k, v)| (k.to_string(), v.to_string()))).expect("valid settings");
        let outcome = run(&s, 1).expect("the run completes");
        let unresolved: Vec<_> = outcome.violations.iter().filter(|v| v.invariant == EveryCallResolves).collect();
        assert!(unresolved.is_empty(), "{unresolved:?}");
        let completed = |step: &&mcpsim_model::trace::Step| {
            matches!(step.kind, StepKind::ToolEnded { end: mcpsim_model::trace::ToolEnd::Completed, .. })
        };
        assert_eq!(outcome.trace.steps.iter().filter(completed).count(), 1, "the re-issued call's tool completes");
    }

    #[test]
    fn a_run_frees_its_world_when_it_ends_a_shared_store_included() {
        let cases: [(&str, &[(&str, &str)]); 5] = [
            ("long-tool", &[]),
            ("long-tool", &[("lb.store", "shared")]),
            ("standalone-notify", &[("lb.store", "shared"), ("lb.replicas", "3")]),
            ("server-restart", &[("lb.store", "shared")]),
            ("chatty-tool", &[("lb.store", "shared"), ("fault.server_restart", "100s,200s")]),
        ];
        for (family, overrides) in cases {
            let mut s = Scenario::build(family, "reference", "reference").expect("a built-in family");
            let overrides: Vec<_> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            s.apply_overrides(&overrides).expect("valid settings");
            let before = actors::live_worlds();
            run(&s, 1).expect("the run completes");
            assert_eq!(actors::live_worlds(), before, "{family} {overrides:?}: the run's world outlived it");
        }
    }

    #[test]
    fn the_agenda_heals_before_new_faults_and_ends_with_liveness() {
        let mut s = Scenario::build("long-tool", "reference", "reference").unwrap();
        let o = [("fault.partition", "10s..20s"), ("fault.reset", "20s")];
        s.apply_overrides(&o.map(|(k, v)| (k.to_string(), v.to_string()))).unwrap();
        let items: Vec<Agenda> = agenda(&s).into_iter().map(|(_, item)| item).collect();
        assert_eq!(items, [Agenda::Fault(0), Agenda::Heal(0), Agenda::Fault(1), Agenda::Liveness]);
    }

    #[test]
    fn a_simulation_that_panics_is_an_error_not_a_crash() {
        let steps = SharedSteps::default();
        for thread in [Thread::Calling, Thread::Fresh] {
            let err = simulate_on(thread, 42, &steps, || {
                Runtime::with_seed_and_config(42, madsim::Config::default()).block_on(std::future::pending::<()>())
            })
            .unwrap_err();
            let SimError::Runtime(message) = err else { panic!("not a runtime error: {err}") };
            assert!(message.contains("seed 42") && message.contains("block forever"), "{thread:?}: {message}");
            assert!(message.contains("after 0 steps"), "{thread:?}: {message}");
        }
    }

    #[test]
    fn default_budget_covers_every_family() {
        for name in crate::scenario::SCENARIO_NAMES {
            for client in ["reference", "naive"] {
                let s = Scenario::build(name, client, "reference").unwrap();
                let outcome = run_with_budget(&s, 1, Budget::DEFAULT).expect("within budget");
                let steps = outcome.trace.steps.len() as u64;
                assert!(steps * 20 < Budget::DEFAULT.max_steps, "{name} × {client}: {steps} steps");
            }
        }
    }

    #[test]
    fn a_run_over_its_budget_is_a_typed_error_that_says_how_to_raise_it() {
        let s = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        let err = run_with_budget(&s, 0, Budget { max_steps: 50 }).unwrap_err();
        let SimError::OverBudget { max_steps: 50, .. } = err else { panic!("not over budget: {err}") };
        assert!(err.to_string().contains(MAX_STEPS_VAR), "{err}");
    }

    #[test]
    fn too_many_clients_or_a_bad_jitter_is_refused_before_anything_starts() {
        let mut s = Scenario::build("long-tool", "reference", "reference").unwrap();
        s.clients = u32::MAX;
        assert!(runnable(&s).unwrap_err().contains("clients"), "{:?}", runnable(&s));
        let mut s = Scenario::build("long-tool", "reference", "reference").unwrap();
        for jitter in [-2.0, f64::NAN, f64::INFINITY, 1.5] {
            s.tool_jitter = jitter;
            assert!(runnable(&s).unwrap_err().contains("jitter"), "{jitter}");
            assert!(matches!(run(&s, 0), Err(SimError::Usage(_))), "{jitter}");
        }
    }
}
