//! The simulator end to end: the design note's two incidents reproduce under their profiles, the
//! reference profiles survive them, and a seed always gives the same trace.

use mcpsim::engine::runner::{run, RunOutcome};
use mcpsim::Scenario;
use mcpsim_model::trace::StepKind;

fn scenario(client: &str, server: &str, name: &str) -> Scenario {
    Scenario::build(name, client, server).expect("a known scenario and profiles")
}

/// The command that replays one run, for failure messages.
fn replay(scenario: &Scenario, seed: u64) -> String {
    format!("cargo run --release -p mcpsim -- run {} --seed {seed}", scenario.cli_args())
}

fn run_ok(scenario: &Scenario, seed: u64) -> RunOutcome {
    run(scenario, seed).unwrap_or_else(|e| panic!("{e}\nreplay: {}", replay(scenario, seed)))
}

fn violated(outcome: &RunOutcome) -> Vec<&'static str> {
    outcome.violations.iter().map(|v| v.invariant.name()).collect()
}

/// The violations, one per line, for failure messages.
fn verdict(outcome: &RunOutcome) -> String {
    outcome.violations.iter().map(|v| format!("  {} at {}: {}\n", v.invariant, v.at, v.detail)).collect()
}

#[test]
fn the_naive_client_executes_the_long_tool_twice() {
    // The first incident: it shows at seed 0 already; any seed in 0..1000 will do.
    let s = scenario("naive", "reference", "long-tool");
    let found = (0..1000).find(|seed| violated(&run_ok(&s, *seed)).contains(&"no-duplicate-execution"));
    assert!(found.is_some(), "no seed in 0..1000 violated no-duplicate-execution\nfirst seed: {}", replay(&s, 0));
}

#[test]
fn the_reference_profiles_survive_the_long_tool() {
    let s = scenario("reference", "reference", "long-tool");
    for seed in 0..500 {
        let outcome = run_ok(&s, seed);
        assert!(
            outcome.violations.is_empty(),
            "seed {seed} violated:\n{}replay: {}",
            verdict(&outcome),
            replay(&s, seed)
        );
    }
}

#[test]
fn a_silent_head_server_loses_events_of_the_chatty_tool() {
    let s = scenario("reference", "silent-head", "chatty-tool");
    let outcome = run_ok(&s, 0);
    assert!(
        violated(&outcome).contains(&"no-silent-event-loss"),
        "expected no-silent-event-loss, got:\n{}replay: {}",
        verdict(&outcome),
        replay(&s, 0)
    );
}

#[test]
fn the_reference_server_reports_the_gap_in_the_chatty_tool() {
    let s = scenario("reference", "reference", "chatty-tool");
    let outcome = run_ok(&s, 0);
    let gap = outcome.trace.steps.iter().any(|step| matches!(step.kind, StepKind::AppGap { .. }));
    assert!(gap, "no AppGap in the trace\nreplay: {}", replay(&s, 0));
    assert!(outcome.violations.is_empty(), "violated:\n{}replay: {}", verdict(&outcome), replay(&s, 0));
}

#[test]
fn a_seed_gives_the_same_trace_every_time() {
    let every_fault = [
        ("fault.partition", "20s..40s"),
        ("fault.reset", "70s"),
        ("fault.server_restart", "100s"),
        ("fault.client_restart", "130s"),
    ];
    let mut faulty = scenario("reference", "reference", "long-tool");
    faulty.apply_overrides(&every_fault.map(|(k, v)| (k.to_string(), v.to_string()))).unwrap();
    for s in [scenario("naive", "reference", "long-tool"), scenario("reference", "silent-head", "chatty-tool"), faulty]
    {
        let first = run_ok(&s, 7).trace.to_jsonl();
        let again = run_ok(&s, 7).trace.to_jsonl();
        assert!(first == again, "seed 7 gave two different traces\nreplay: {}", replay(&s, 7));
        let other = run_ok(&s, 8).trace.to_jsonl();
        assert_ne!(first, other, "seeds 7 and 8 gave the same trace: the seed does not reach the run");
    }
}

#[test]
fn every_fault_of_the_plan_is_recorded_and_the_run_ends_once() {
    let mut s = scenario("reference", "reference", "long-tool");
    let o = [("fault.partition", "20s..40s"), ("fault.server_restart", "100s"), ("fault.client_restart", "130s")];
    s.apply_overrides(&o.map(|(k, v)| (k.to_string(), v.to_string()))).unwrap();
    let outcome = run_ok(&s, 3);
    let steps = &outcome.trace.steps;
    let faults: Vec<&str> = steps
        .iter()
        .filter_map(|st| match &st.kind {
            StepKind::Fault { fault } => Some(fault.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(faults, ["partition 20s..40s", "server-restart at 100s", "client-restart at 130s"]);
    let epochs: Vec<u32> = steps
        .iter()
        .filter_map(|st| match st.kind {
            StepKind::ServerStart { epoch, .. } => Some(epoch),
            _ => None,
        })
        .collect();
    assert_eq!(epochs, [0, 1], "the restarted server is the next epoch");
    let liveness = steps.iter().position(|st| matches!(st.kind, StepKind::Liveness { .. })).expect("a liveness step");
    assert_eq!(steps[liveness].t, 130_000_000, "liveness starts when the last fault is over");
    assert!(matches!(steps.last().map(|st| &st.kind), Some(StepKind::RunEnd { .. })), "the run ends with RunEnd");
    assert!(steps.windows(2).all(|w| w[0].t <= w[1].t && w[0].seq + 1 == w[1].seq), "steps in time order, numbered");
}

#[test]
fn overlapping_partitions_keep_the_link_down_until_the_last_heals() {
    let mut s = scenario("reference", "reference", "long-tool");
    s.apply_overrides(&[("client.backoff_max".into(), "2s".into())]).unwrap();
    for window in ["10s..30s", "20s..40s"] {
        s.faults.push(mcpsim::scenario::faults::parse_partition(window).unwrap());
    }
    let outcome = run_ok(&s, 1);
    let secs = |t: u64| t as f64 / 1e6;
    let refused_while_second_holds = outcome.trace.steps.iter().any(|st| {
        matches!(st.kind, StepKind::ConnEnd { end: mcpsim_model::http::ConnEnd::Refused, .. })
            && (30.5..40.0).contains(&secs(st.t))
    });
    let answered_inside = outcome
        .trace
        .steps
        .iter()
        .any(|st| matches!(st.kind, StepKind::Response { .. }) && (10.0..40.0).contains(&secs(st.t)));
    assert!(refused_while_second_holds && !answered_inside, "the link healed early\nreplay: {}", replay(&s, 1));
    assert!(outcome.violations.is_empty(), "violated:\n{}replay: {}", verdict(&outcome), replay(&s, 1));
}

#[test]
fn server_notifications_flow_until_the_liveness_phase() {
    let mut s = scenario("reference", "reference", "chatty-tool");
    s.notify_interval = Some(std::time::Duration::from_secs(10));
    let outcome = run_ok(&s, 2);
    let at: Vec<u64> = outcome
        .trace
        .steps
        .iter()
        .filter(|st| {
            matches!(
                &st.kind,
                StepKind::EventStored { message: Some(mcpsim_model::http::ServerMessage::Notification { .. }), .. }
            )
        })
        .map(|st| st.t)
        .collect();
    let heal = s.faults.heal_time().as_micros() as u64;
    assert!(!at.is_empty(), "no notification was stored\nreplay: {}", replay(&s, 2));
    assert!(at.iter().all(|t| *t < heal && t % 10_000_000 < 1_000), "notifications at {at:?}");
}

#[test]
fn the_trace_header_alone_replays_the_run() {
    let mut s = scenario("reference", "reference", "long-tool");
    s.apply_overrides(&[("fault.server_restart".into(), "90s".into())]).unwrap();
    let text = run_ok(&s, 11).trace.to_jsonl();
    let parsed = mcpsim_model::trace::Trace::parse(&text).expect("the simulator writes readable traces");
    let rebuilt: Scenario =
        serde_json::from_value(parsed.header.scenario["scenario"].clone()).expect("the header holds the scenario");
    assert_eq!(rebuilt, s);
    assert!(run_ok(&rebuilt, parsed.header.seed).trace.to_jsonl() == text, "replay: {}", replay(&s, 11));
}

/// Found by `explore --search --within-conditions` on standalone-notify: a partition cuts the
/// first standalone GET before its priming event arrives, a notification is stored while no GET
/// is open, and the client opens a fresh GET (it has no id to resume from). A server that sends a
/// fresh GET only new notifications (new-only, as the TS and Python SDKs do) loses it silently;
/// the reference replays what the standalone stream buffered (`fresh_get = buffered`).
#[test]
fn a_notification_stored_before_the_first_standalone_id_arrived_reaches_the_application() {
    let mut s = scenario("reference", "reference", "standalone-notify");
    let overrides: Vec<(String, String)> = [
        ("server.retention", "unbounded"),
        ("server.retention_window", "none"),
        ("server.idle_ttl", "none"),
        ("client.max_attempts", "unlimited"),
        ("net.latency", "23ms..139ms"),
        ("fault.partition", "1s..3s"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    s.apply_overrides(&overrides).expect("valid overrides");
    let seed = 11547915699952729684;
    let outcome = run_ok(&s, seed);
    assert!(outcome.violations.is_empty(), "{}replay: {}", verdict(&outcome), replay(&s, seed));
    // The same run against a new-only server loses the notification: the case is one that tests
    // the fresh GET at all.
    s.apply_overrides(&[("server.fresh_get".into(), "new-only".into())]).expect("valid override");
    let outcome = run_ok(&s, seed);
    assert_eq!(violated(&outcome), ["no-silent-event-loss"], "replay: {}", replay(&s, seed));
}
