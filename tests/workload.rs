//! Workloads as scripts: calls after an idle gap, the application's behaviour after an error,
//! an operator's DELETE, a client resuming with a Last-Event-ID it was never given, and the
//! server's session cap, end to end.

use mcpsim::engine::runner::{run, RunOutcome};
use mcpsim::scenario::{BogusResume, CallSpec, DeleteBy, DeleteSpec, OnError};
use mcpsim::Scenario;
use mcpsim_model::http::Status;
use mcpsim_model::ids::CallKey;
use mcpsim_model::trace::StepKind;
use std::collections::BTreeSet;
use std::time::Duration;

fn scenario(name: &str, client: &str, server: &str, overrides: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::build(name, client, server).expect("a known scenario and profiles");
    let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.apply_overrides(&overrides).expect("valid overrides");
    s
}

fn run_ok(s: &Scenario, seed: u64) -> RunOutcome {
    s.validate().expect("a valid scenario");
    run(s, seed).unwrap_or_else(|e| panic!("{e}\nreplay: cargo run -p mcpsim -- run {} --seed {seed}", s.cli_args()))
}

fn violated(outcome: &RunOutcome) -> BTreeSet<&'static str> {
    outcome.violations.iter().map(|v| v.invariant.name()).collect()
}

fn count(outcome: &RunOutcome, pick: impl Fn(&StepKind) -> bool) -> usize {
    outcome.trace.steps.iter().filter(|s| pick(&s.kind)).count()
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// How call `call` ended for the application, in words.
fn ending(outcome: &RunOutcome, call: u32) -> String {
    let endings: Vec<String> = outcome
        .trace
        .steps
        .iter()
        .filter_map(|s| match &s.kind {
            StepKind::AppResult { call: c, .. } if *c == CallKey(call) => Some("result".to_string()),
            StepKind::AppError { call: c, error } if *c == CallKey(call) => Some(format!("error: {error}")),
            StepKind::AppUnknownOutcome { call: c, .. } if *c == CallKey(call) => Some("unknown".to_string()),
            _ => None,
        })
        .collect();
    endings.join(" / ")
}

#[test]
fn explore() {
    for c in mcpsim_model::profiles::CLIENT_NAMES {
        let mut s = scenario("long-tool", c, "reference", &[("server.idle_ttl", "60s"), ("server.idle_rule", "last-request"), ("tool.duration", "5s"), ("tool.idempotent", "false")]);
        s.calls = vec![CallSpec::new(secs(1), 0, "pay"), CallSpec { after_idle: Some(secs(90)), ..CallSpec::new(Duration::ZERO, 1, "pay") }];
        let o = run_ok(&s, 0);
        let nf = count(&o, |k| matches!(k, StepKind::Rejected { status, .. } if *status == Status::NOT_FOUND));
        let t1 = o.trace.steps.iter().find(|s| matches!(&s.kind, StepKind::AppCall { call, .. } if *call == CallKey(1))).map(|s| s.t);
        println!("t1 {t1:?} end {:?}", o.trace.steps.last().map(|s| s.t));
        println!("idle {c}: 404s {nf} call0 {} call1 {} {:?}", ending(&o, 0), ending(&o, 1), violated(&o));
    }
    for c in mcpsim_model::profiles::CLIENT_NAMES {
        for on_error in [OnError::GiveUp, OnError::Reissue] {
            let mut s = scenario("long-tool", c, "reference", &[("client.request_timeout", "60s"), ("server.keepalive", "15s")]);
            s.calls[0].on_error = on_error;
            let o = run_ok(&s, 0);
            println!("timeout {c} {on_error:?}: {} {:?}", ending(&o, 0), violated(&o));
        }
    }
    for c in mcpsim_model::profiles::CLIENT_NAMES {
        let mut s = scenario("delete-during-tool", c, "reference", &[]);
        s.deletes[0].by = DeleteBy::Operator;
        let o = run_ok(&s, 0);
        let nf = count(&o, |k| matches!(k, StepKind::Rejected { status, .. } if *status == Status::NOT_FOUND));
        println!("operator {c}: 404s {nf} {} {:?}", ending(&o, 0), violated(&o));
    }
    for sv in mcpsim_model::profiles::SERVER_NAMES {
        let mut s = scenario("chatty-tool", "reference", sv, &[]);
        s.bogus_resumes = vec![BogusResume { at: secs(30), client: 0, id: "made-up".into() }];
        let o = run_ok(&s, 0);
        println!("bogus {sv}: {} {:?}", ending(&o, 0), violated(&o));
    }
    let mut s = scenario("two-sessions-same-request-id", "reference", "reference", &[("server.max_sessions", "1")]);
    s.deletes = vec![DeleteSpec { at: secs(200), client: 0, by: DeleteBy::App }];
    let o = run_ok(&s, 0);
    let busy = count(&o, |k| matches!(k, StepKind::Rejected { status, .. } if *status == Status::UNAVAILABLE));
    println!("cap: 503s {busy} {} | {} {:?}", ending(&o, 0), ending(&o, 1), violated(&o));
}
