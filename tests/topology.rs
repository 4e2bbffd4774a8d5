//! Your own system as data: server replicas behind the load balancer, routing, local or shared
//! stores, rolling deploys, a CDN's lifetime cap and client-side-only cuts, end to end.

mod common;
use common::{run_ok, violated};

use mcpsim::engine::runner::RunOutcome;
use mcpsim::Scenario;
use mcpsim_model::http::{ConnEnd, Status};
use mcpsim_model::ids::CallKey;
use mcpsim_model::trace::{Actor, SessionEndReason, StepKind};
use std::collections::{BTreeMap, BTreeSet};

fn scenario(name: &str, overrides: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::build(name, "reference", "reference").expect("a known scenario and profiles");
    let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.apply_overrides(&overrides).expect("valid overrides");
    s
}

fn count(outcome: &RunOutcome, pick: impl Fn(&StepKind) -> bool) -> usize {
    outcome.trace.steps.iter().filter(|s| pick(&s.kind)).count()
}

fn got_result(outcome: &RunOutcome, call: u32) -> bool {
    count(outcome, |k| matches!(k, StepKind::AppResult { call: c, .. } if *c == CallKey(call))) > 0
}

const TWO_REPLICAS: (&str, &str) = ("lb.replicas", "2");

#[test]
fn round_robin_over_two_local_replicas_gives_404s_and_orphans_sessions() {
    let s = scenario("long-tool", &[TWO_REPLICAS, ("lb.routing", "round-robin")]);
    for seed in 0..3 {
        let outcome = run_ok(&s, seed);
        assert!(not_found(&outcome) > 0, "seed {seed}: a request reached the replica that does not know the session");
        // The reference client re-initializes on every 404, so each session it opens on one
        // replica is left live there while it holds the next: no-orphaned-session (rule b).
        let broken = violated(&outcome);
        assert!(broken.contains("no-orphaned-session"), "seed {seed}: {broken:?}");
        let routed: BTreeSet<u32> = routes(&outcome).into_iter().collect();
        assert_eq!(routed, BTreeSet::from([0, 1]), "seed {seed}: the trace names both replicas");
    }
}

#[test]
fn sticky_sessions_over_the_same_replicas_keep_every_invariant() {
    let s = scenario("long-tool", &[TWO_REPLICAS, ("lb.routing", "sticky-session")]);
    for seed in 0..3 {
        let outcome = run_ok(&s, seed);
        assert!(outcome.violations.is_empty(), "seed {seed}: {:?}", violated(&outcome));
        assert!(got_result(&outcome, 0), "seed {seed}");
        // Every request naming the session went to one replica.
        let by_session: BTreeMap<String, BTreeSet<u32>> =
            outcome.trace.steps.iter().fold(BTreeMap::new(), |mut m, s| {
                if let StepKind::LbRouted { replica, session: Some(session), .. } = &s.kind {
                    m.entry(session.to_string()).or_default().insert(*replica);
                }
                m
            });
        assert!(!by_session.is_empty() && by_session.values().all(|r| r.len() == 1), "seed {seed}: {by_session:?}");
    }
}

#[test]
fn a_shared_store_survives_a_replica_restart_where_a_local_one_loses_the_session() {
    // The session is created on replica 0 (the first connection of a round); it restarts
    // mid-tool.
    let base = [TWO_REPLICAS, ("lb.routing", "sticky-session"), ("fault.restart", "replica0@2m")];
    for seed in 0..2 {
        let local = run_ok(&scenario("long-tool", &[base[0], base[1], base[2], ("lb.store", "local")]), seed);
        let lost =
            count(&local, |k| matches!(k, StepKind::SessionEnded { reason: SessionEndReason::ServerRestart, .. }));
        assert_eq!(lost, 1, "seed {seed}: the local replica loses the session");
        assert!(!got_result(&local, 0), "seed {seed}: the tool died with the replica");
        assert!(count(&local, |k| matches!(k, StepKind::AppUnknownOutcome { .. })) > 0, "seed {seed}");

        let shared = run_ok(&scenario("long-tool", &[base[0], base[1], base[2], ("lb.store", "shared")]), seed);
        assert_eq!(count(&shared, |k| matches!(k, StepKind::SessionEnded { .. })), 0, "seed {seed}");
        assert!(got_result(&shared, 0), "seed {seed}: the shared store kept the session and the tool");
        assert!(shared.violations.is_empty(), "seed {seed}: {:?}", violated(&shared));
    }
}

#[test]
fn a_rolling_deploy_cuts_streams_without_draining_and_not_with_it() {
    // A 30 s tool; the deploy reaches replica 0 (which holds the session) at 10 s.
    let base = [TWO_REPLICAS, ("lb.routing", "sticky-session"), ("tool.duration", "30s"), ("tool.jitter", "0")];
    let with = |deploy: &str| {
        let mut o = base.to_vec();
        o.push(("fault.deploy", deploy));
        scenario("long-tool", &o)
    };
    for seed in 0..2 {
        let abrupt = run_ok(&with("10s/1m"), seed);
        let resets = count(&abrupt, |k| matches!(k, StepKind::ConnEnd { end: ConnEnd::Reset, .. }));
        assert!(resets > 0, "seed {seed}: the restart cut the call's stream");
        assert!(!got_result(&abrupt, 0), "seed {seed}");

        let drained = run_ok(&with("10s/1m/2m"), seed);
        let first_restart = drained
            .trace
            .steps
            .iter()
            .find(|s| matches!(&s.kind, StepKind::Fault { fault } if fault.ends_with("restarts")))
            .map(|s| s.t)
            .expect("the deploy restarts the replicas");
        let cut_before = drained
            .trace
            .steps
            .iter()
            .any(|s| s.t < first_restart && matches!(s.kind, StepKind::ConnEnd { end: ConnEnd::Reset, .. }));
        assert!(!cut_before, "seed {seed}: draining cut nothing while the tool ran");
        assert!(got_result(&drained, 0), "seed {seed}: the tool finished on the draining replica");
        assert!(drained.violations.is_empty(), "seed {seed}: {:?}", violated(&drained));
    }
}

#[test]
fn a_cdn_lifetime_of_100_s_cuts_a_silent_stream_and_the_client_resumes() {
    let s = scenario("long-tool", &[("lb.idle_timeout", "none"), ("lb.max_lifetime", "100s")]);
    for seed in 0..2 {
        let outcome = run_ok(&s, seed);
        let cuts: Vec<u64> = outcome
            .trace
            .steps
            .iter()
            .filter_map(|s| match s.kind {
                StepKind::LbLifetimeCut { age_us, .. } => Some(age_us),
                _ => None,
            })
            .collect();
        assert!(!cuts.is_empty() && cuts.iter().all(|a| *a == 100_000_000), "seed {seed}: {cuts:?}");
        let resumes = count(&outcome, |k| matches!(k, StepKind::Resume { .. }));
        assert!(resumes >= cuts.len().min(2), "seed {seed}: {resumes} resumptions after {} cuts", cuts.len());
        assert!(got_result(&outcome, 0) && outcome.violations.is_empty(), "seed {seed}: {:?}", violated(&outcome));
    }
}

#[test]
fn a_client_side_cut_leaves_the_upstream_and_the_servers_stream_open() {
    let both = run_ok(&scenario("long-tool", &[]), 1);
    let kept = run_ok(&scenario("long-tool", &[("lb.cut_mode", "client-side")]), 1);
    let idle_cuts = |o: &RunOutcome| count(o, |k| matches!(k, StepKind::LbIdleCut { .. }));
    let upstream_kept = |o: &RunOutcome| count(o, |k| matches!(k, StepKind::LbUpstreamKept { .. }));
    assert!(idle_cuts(&both) > 0 && upstream_kept(&both) == 0);
    assert_eq!(upstream_kept(&kept), idle_cuts(&kept), "every cut leaves its upstream open");
    let kept_steps = kept.trace.steps.iter().filter(|s| s.actor == Actor::Lb).count();
    assert!(kept_steps > idle_cuts(&kept));
}

#[test]
fn a_single_replica_records_no_routing_and_targeted_faults_are_validated() {
    let outcome = run_ok(&scenario("long-tool", &[]), 0);
    assert_eq!(count(&outcome, |k| matches!(k, StepKind::LbRouted { .. })), 0);
    let mut s = Scenario::build("long-tool", "reference", "reference").unwrap();
    for bad in [("fault.restart", "replica1@1m"), ("fault.cut", "client3@1m"), ("lb.replicas", "0")] {
        assert!(s.apply_overrides(&[(bad.0.into(), bad.1.into())]).is_err(), "{bad:?}");
        s = Scenario::build("long-tool", "reference", "reference").unwrap();
    }
    // A deploy walks the replicas set before it.
    let e =
        s.apply_overrides(&[("fault.deploy".into(), "1m/30s".into()), ("lb.replicas".into(), "3".into())]).unwrap_err();
    assert!(e.to_string().contains("set lb.replicas before fault.deploy"), "{e}");
}

fn routes(outcome: &RunOutcome) -> Vec<u32> {
    outcome
        .trace
        .steps
        .iter()
        .filter_map(|s| match s.kind {
            StepKind::LbRouted { replica, .. } => Some(replica),
            _ => None,
        })
        .collect()
}

fn not_found(outcome: &RunOutcome) -> usize {
    count(outcome, |k| matches!(k, StepKind::Rejected { status, .. } if *status == Status::NOT_FOUND))
}

#[test]
fn sticky_by_client_address_keeps_each_clients_session_on_its_replica() {
    // Two clients, each its own session, over two local replicas: by address, every connection
    // of a client reaches the replica that holds its session, so nothing is refused.
    let s = scenario("two-sessions-same-request-id", &[TWO_REPLICAS, ("lb.routing", "sticky-client")]);
    for seed in 0..3 {
        let outcome = run_ok(&s, seed);
        assert_eq!(not_found(&outcome), 0, "seed {seed}");
        assert!(!violated(&outcome).contains("no-orphaned-session"), "seed {seed}: {:?}", violated(&outcome));
        assert!(got_result(&outcome, 0) && got_result(&outcome, 1), "seed {seed}");
    }
    // The same two clients routed round robin do meet the replica that does not know them.
    let rr = scenario("two-sessions-same-request-id", &[TWO_REPLICAS, ("lb.routing", "round-robin")]);
    assert!((0..3).any(|seed| not_found(&run_ok(&rr, seed)) > 0), "round robin never split a session");
}

#[test]
fn random_routing_is_drawn_from_the_seed_and_splits_sessions_over_local_replicas() {
    let s = scenario("long-tool", &[TWO_REPLICAS, ("lb.routing", "random")]);
    let outcomes: Vec<RunOutcome> = (0..6).map(|seed| run_ok(&s, seed)).collect();
    // Some seed sends a request of the session to the replica that does not hold it.
    assert!(outcomes.iter().any(|o| not_found(o) > 0), "no seed in 0..6 split a session");
    // The draws differ between seeds and repeat for one seed.
    let all: BTreeSet<Vec<u32>> = outcomes.iter().map(routes).collect();
    assert!(all.len() > 1, "every seed routed alike: {all:?}");
    assert_eq!(routes(&run_ok(&s, 3)), routes(&outcomes[3]), "seed 3 routed differently twice");
}
