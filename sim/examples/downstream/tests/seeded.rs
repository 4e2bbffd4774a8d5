//! Seeded tests a downstream team writes against mcpsim: "with the TypeScript SDK client behind
//! our 60 s load balancer, does our keep-alive setting keep the payment single?"

use mcpsim::Scenario;

/// The deployment the team ships: the ts-sdk client, the reference server, the long-tool family
/// (a 90 s tool behind a load balancer that cuts connections idle for 60 s), and their keep-alive.
fn deployment(keepalive: &str) -> Scenario {
    let mut s = Scenario::build("long-tool", "naive", "reference").expect("built-in names");
    s.apply_overrides(&[("server.keepalive".into(), keepalive.into())]).expect("a valid keep-alive");
    s
}

#[test]
fn a_keepalive_shorter_than_the_idle_timeout_keeps_the_payment_single() {
    let s = deployment("15s");
    for seed in 0..20 {
        let outcome = mcpsim::run(&s, seed).expect("the simulation runs");
        assert!(
            outcome.violations.is_empty(),
            "seed {seed}: {:?}\nreplay: mcpsim run {} --seed {seed}",
            outcome.violations,
            s.cli_args()
        );
    }
}

#[test]
fn without_it_the_naive_client_pays_again() {
    let s = deployment("none");
    let outcome = mcpsim::run(&s, 0).expect("the simulation runs");
    let broken: Vec<_> = outcome.violations.iter().map(|v| v.invariant.to_string()).collect();
    assert!(broken.iter().any(|i| i == "no-duplicate-execution"), "expected a duplicate payment, got {broken:?}");
}
