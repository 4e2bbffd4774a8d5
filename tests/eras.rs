//! The 2026-07-28 revision's own price, as the conditions judge reads it (docs/eras.md, "Wired
//! into the model and the actors"): a modern request whose stream breaks is lost, and its client
//! re-issues it; a tool longer than the streams that carry it never ends.

mod common;
use common::{run_ok, violated};

use mcpsim::Scenario;
use mcpsim_model::oracle::conditions::Condition;

fn modern(sets: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::build("long-tool", "stateless-2026", "stateless-2026").unwrap_or_else(|e| panic!("{e}"));
    let sets: Vec<(String, String)> = sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.apply_overrides(&sets).unwrap_or_else(|e| panic!("{e}"));
    s
}

#[test]
fn a_modern_call_cut_at_every_attempt_never_resolves_by_the_revisions_rule_and_keep_alives_end_it() {
    // The 5-minute tool behind the 60 s idle cut, no keep-alives: every attempt is cut, lost
    // and re-issued. Idempotent, so the re-runs are no duplicate; unlimited attempts, so the
    // client never gives up.
    let cut = modern(&[("tool.idempotent", "true"), ("client.max_attempts", "unlimited")]);
    let outcome = run_ok(&cut, 0);
    assert_eq!(violated(&outcome), ["every-call-resolves"].into(), "{:?}", outcome.violations);
    // Explained by the revision's lost requests, which break none of the note's conditions.
    assert_eq!(outcome.explained_by, vec![vec![Condition::RequestLost]], "{:?}", outcome.violations);
    // Keep-alives under the idle cut keep the stream, and the call ends.
    let kept =
        modern(&[("tool.idempotent", "true"), ("client.max_attempts", "unlimited"), ("server.keepalive", "15s")]);
    assert!(violated(&run_ok(&kept, 0)).is_empty());
}
