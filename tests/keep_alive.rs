//! HTTP keep-alive end to end: the client's pool (`client.http`), the balancer's kept-alive
//! client connections and upstream pool (`lb.upstream_keep_alive`, `lb.retry_upstream`) and the
//! server's `keep_alive_timeout` — and the races connection reuse brings: a request written onto a
//! connection the other side has just closed.

mod common;
use common::{replay, run_ok, violated};

use mcpsim::engine::runner::RunOutcome;
use mcpsim::Scenario;
use mcpsim_model::http::{ConnEnd, Status};
use mcpsim_model::ids::CallKey;
use mcpsim_model::trace::StepKind;

fn scenario(overrides: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::build("long-tool", "reference", "reference").expect("a known scenario and profiles");
    let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.apply_overrides(&overrides).expect("valid overrides");
    s
}

fn count(outcome: &RunOutcome, pick: impl Fn(&StepKind) -> bool) -> usize {
    outcome.trace.steps.iter().filter(|s| pick(&s.kind)).count()
}

fn executions(outcome: &RunOutcome, call: u32) -> usize {
    count(outcome, |k| matches!(k, StepKind::SideEffect { call: c, .. } if *c == CallKey(call)))
}

fn got_result(outcome: &RunOutcome, call: u32) -> bool {
    count(outcome, |k| matches!(k, StepKind::AppResult { call: c, .. } if *c == CallKey(call))) > 0
}

/// Two one-second payments, the second `gap` after the first settled.
fn two_calls(gap: &str, more: &[(&str, &str)]) -> Scenario {
    let calls = format!("1s; +{gap}");
    let mut all = vec![("tool.duration", "1s"), ("app.calls", calls.as_str())];
    all.extend_from_slice(more);
    scenario(&all)
}

#[test]
fn without_keep_alive_no_connection_is_ever_reused() {
    let outcome = run_ok(&two_calls("10s", &[]), 0);
    assert_eq!(count(&outcome, |k| matches!(k, StepKind::ConnReused { .. })), 0);
    assert_eq!(count(&outcome, |k| matches!(k, StepKind::LbUpstreamReused { .. })), 0);
}

#[test]
fn a_kept_alive_client_reuses_its_connection_and_the_balancer_cuts_an_idle_one() {
    let s = two_calls("70s", &[("client.http.keep_alive", "true")]);
    let outcome = run_ok(&s, 0);
    let replay = replay(&s, 0);
    assert!(outcome.violations.is_empty(), "{:?}\nreplay: {replay}", violated(&outcome));
    // call0 goes on the connection notifications/initialized left open (that notification itself
    // went out before the initialize response's end, on a connection of its own).
    let reused: Vec<u64> = outcome
        .trace
        .steps
        .iter()
        .filter_map(|s| match s.kind {
            StepKind::ConnReused { idle_us, .. } => Some(idle_us),
            _ => None,
        })
        .collect();
    assert!(reused.len() == 1 && reused[0] < 1_000_000, "{reused:?}\nreplay: {replay}");
    assert!(got_result(&outcome, 0) && got_result(&outcome, 1), "replay: {replay}");
    // Idle in the pool for 70 s, both connections were cut by the balancer's 60 s idle timeout:
    // call1 goes on a fresh one, which nothing cuts before the run ends.
    assert_eq!(count(&outcome, |k| matches!(k, StepKind::LbIdleCut { .. })), 2, "replay: {replay}");
}

#[test]
fn a_request_written_onto_a_connection_the_balancer_has_just_closed_is_lost_and_a_shorter_client_expiry_fixes_it() {
    // The second call goes out on the pooled connection 59.990 s after the first settled: the
    // balancer's 60 s idle cut closes it while the request is on its way.
    let s = two_calls("59.990s", &[("client.http.keep_alive", "true")]);
    let outcome = run_ok(&s, 0);
    let replay = replay(&s, 0);
    assert_eq!(count(&outcome, |k| matches!(k, StepKind::ConnReused { idle_us, .. } if *idle_us > 59_000_000)), 1);
    assert_eq!(executions(&outcome, 1), 0, "the server never saw call1\nreplay: {replay}");
    assert!(!got_result(&outcome, 1), "replay: {replay}");
    assert!(count(&outcome, |k| matches!(k, StepKind::ConnEnd { end: ConnEnd::Reset, .. })) > 0, "replay: {replay}");
    // The HTTP library does not send a written request again (`retry = unsent`).
    assert_eq!(count(&outcome, |k| matches!(k, StepKind::HttpResent { .. })), 0);

    // A client that lets its idle connections go before the balancer does never meets the cut.
    let fixed = two_calls("59.990s", &[("client.http.keep_alive", "true"), ("client.http.idle_expiry", "55s")]);
    let outcome = run_ok(&fixed, 0);
    assert!(got_result(&outcome, 1), "replay: {}", common::replay(&fixed, 0));
    assert_eq!(executions(&outcome, 1), 1);
}

#[test]
fn an_http_library_that_resends_written_requests_runs_a_payment_twice() {
    // The balancer (hop0, the only one) is cut 1 ms after the server ran call0 and before its
    // answer came back through: the kept-alive connection ends without a response byte.
    let base = [("client.http.keep_alive", "true"), ("tool.duration", "10s"), ("fault.cut", "hop0@1.013s")];
    let resends = scenario(&[base[0], base[1], base[2], ("client.http.retry", "reused-before-response")]);
    let outcome = run_ok(&resends, 0);
    let replay = replay(&resends, 0);
    assert_eq!(count(&outcome, |k| matches!(k, StepKind::HttpResent { written: true, .. })), 1, "replay: {replay}");
    assert_eq!(executions(&outcome, 0), 2, "replay: {replay}");
    assert!(violated(&outcome).contains("no-duplicate-execution"), "{:?}\nreplay: {replay}", violated(&outcome));

    // The SDKs' libraries re-send only what could not be written: one execution.
    let safe = scenario(&[base[0], base[1], base[2], ("client.http.retry", "unsent")]);
    let outcome = run_ok(&safe, 0);
    assert_eq!(count(&outcome, |k| matches!(k, StepKind::HttpResent { .. })), 0);
    assert_eq!(executions(&outcome, 0), 1, "replay: {}", common::replay(&safe, 0));
}

#[test]
fn a_server_keep_alive_shorter_than_the_balancers_pool_answers_502_and_a_longer_one_fixes_it() {
    // The balancer pools upstream connections; the server closes one idle 5 s (Node's default)
    // just as the balancer sends the second call on it: the classic ALB 502.
    let base = [("lb.upstream_keep_alive", "true"), ("server.keep_alive_timeout", "5s")];
    let s = two_calls("4.975s", &base);
    let outcome = run_ok(&s, 0);
    let replay = replay(&s, 0);
    assert!(count(&outcome, |k| matches!(k, StepKind::KeepAliveClosed { .. })) > 0, "replay: {replay}");
    let bad_gateway = |k: &StepKind| matches!(k, StepKind::LbAnswered { status, .. } if *status == Status::BAD_GATEWAY);
    assert_eq!(count(&outcome, bad_gateway), 1, "replay: {replay}");
    assert_eq!(executions(&outcome, 1), 0, "replay: {replay}");

    // Re-sending idempotent requests does not help a POST; re-sending any request does (the lost
    // request never reached the server).
    let idempotent = two_calls("4.975s", &[base[0], base[1], ("lb.retry_upstream", "idempotent")]);
    assert_eq!(count(&run_ok(&idempotent, 0), bad_gateway), 1);
    let any = two_calls("4.975s", &[base[0], base[1], ("lb.retry_upstream", "any")]);
    let outcome = run_ok(&any, 0);
    assert_eq!(count(&outcome, |k| matches!(k, StepKind::LbResent { reused: true, .. })), 1);
    assert!(got_result(&outcome, 1) && executions(&outcome, 1) == 1, "replay: {}", common::replay(&any, 0));

    // A server that keeps idle connections longer than the balancer's 60 s: the balancer always
    // lets them go first.
    let fixed = two_calls("4.975s", &[base[0], ("server.keep_alive_timeout", "65s")]);
    let outcome = run_ok(&fixed, 0);
    assert_eq!(count(&outcome, bad_gateway), 0, "replay: {}", common::replay(&fixed, 0));
    assert!(got_result(&outcome, 1));
}

#[test]
fn kept_alive_runs_are_deterministic() {
    // Every pool, re-send and keep-alive timer on, with faults that close connections under them.
    let s = scenario(&[
        ("client.http.keep_alive", "true"),
        ("client.http.idle_expiry", "30s"),
        ("client.http.retry", "reused-before-response"),
        ("lb.upstream_keep_alive", "true"),
        ("lb.retry_upstream", "any"),
        ("server.keep_alive_timeout", "5s"),
        ("app.calls", "1s; +4.97s; +59.99s"),
        ("tool.duration", "20s"),
        ("fault.reset", "30s"),
    ]);
    for seed in 0..4 {
        let first = run_ok(&s, seed).trace.to_jsonl();
        let second = run_ok(&s, seed).trace.to_jsonl();
        assert!(first == second, "seed {seed}: two runs differ\nreplay: {}", replay(&s, seed));
        assert!(first.contains("conn-reused") && first.contains("lb-upstream-reused"), "seed {seed}");
    }
}
