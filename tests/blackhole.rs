//! The silent black hole (`fault.blackhole`): connections the network drops without telling
//! either end. Each test shows one thing the existing clients and servers do with it, and the
//! verdict the conditions judge gives: a black hole is a network fault, so what it leaves waiting
//! reads as its price (`a silent black hole: …`), what a client does after its own timer as that
//! client's (condition 4), and never `conditions 1-4 held`.

mod common;
use common::{run_ok, violated};

use mcpsim::engine::runner::RunOutcome;
use mcpsim::Scenario;
use mcpsim_model::http::{ConnEnd, Method, ServerMessage};
use mcpsim_model::ids::ConnId;
use mcpsim_model::trace::{Actor, SessionEndReason, StepKind};
use std::time::Duration;

const SEEDS: [u64; 3] = [0, 1, 2];

/// Linux's `tcp_retries2` timeout, as `sim/src/engine/wire.rs` has it.
const TCP_GIVES_UP_US: u64 = 924_600_000;

fn scenario(client: &str, server: &str, name: &str, overrides: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::build(name, client, server).expect("a known scenario and profiles");
    let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.apply_overrides(&overrides).expect("valid overrides");
    s
}

/// Each violation with its footer verdict.
fn verdicts(outcome: &RunOutcome) -> Vec<(String, String)> {
    let footer = outcome.trace.footer.as_ref().expect("a finished run has a footer");
    footer.verdict.iter().map(|v| (v.invariant.clone(), v.conditions.clone())).collect()
}

/// No violation reads as a bug nobody is to blame for.
fn none_unexplained(outcome: &RunOutcome, replay: &str) {
    for (invariant, conditions) in verdicts(outcome) {
        assert!(conditions.starts_with("explained by"), "{invariant}: {conditions}\n{replay}");
    }
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

/// The `black-holed` steps of a run: when, whose, and what each caught.
fn caught(outcome: &RunOutcome) -> Vec<(u64, Option<u32>, Vec<ConnId>, u32)> {
    outcome
        .trace
        .steps
        .iter()
        .filter_map(|st| match &st.kind {
            StepKind::BlackHoled { conns, idle, connect: false } => Some((st.t, st.client, conns.clone(), *idle)),
            _ => None,
        })
        .collect()
}

/// The client's requests sent after `t` (µs).
fn sent_after(outcome: &RunOutcome, t: u64) -> usize {
    outcome
        .trace
        .steps
        .iter()
        .filter(|st| st.t > t && st.actor == Actor::Client && matches!(st.kind, StepKind::Send { .. }))
        .count()
}

// ---------------------------------------------------------------------------------------------
// A call whose stream the hole took
// ---------------------------------------------------------------------------------------------

fn long_call(fault: &str, request_timeout: &str) -> Scenario {
    scenario(
        "ts-sdk",
        "ts-sdk",
        "long-tool",
        &[
            ("lb.idle_timeout", "none"),
            ("client.request_timeout", request_timeout),
            ("fault.blackhole", fault),
            // A host whose fetch has no timers of its own (Bun, a browser): Node's undici gives a
            // silent body up after 300 s (`client.http.body_timeout`, the profile's), which
            // `a_node_client_gives_a_black_holed_stream_up_by_its_own_body_timeout` runs.
            ("client.http.body_timeout", "none"),
            ("client.http.headers_timeout", "none"),
        ],
    )
}

/// Under Node's fetch (the ts-sdk profile's 300 s body timeout) the client gives the stream the
/// hole caught up by itself, 5 minutes after its last byte, and resumes it from its id on a
/// fresh connection once the hole has closed: the call gets its result, nothing is violated.
#[test]
fn a_node_client_gives_a_black_holed_stream_up_by_its_own_body_timeout() {
    let s = scenario(
        "ts-sdk",
        "ts-sdk",
        "long-tool",
        &[("lb.idle_timeout", "none"), ("client.request_timeout", "10m"), ("fault.blackhole", "1m..3m")],
    );
    for seed in SEEDS {
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        let own: Vec<u64> = outcome
            .trace
            .steps
            .iter()
            .filter_map(|st| match &st.kind {
                StepKind::ClientTimedOut { head: false, .. } => Some(st.t),
                _ => None,
            })
            .collect();
        assert!(!own.is_empty() && own.iter().all(|t| (300_000_000..302_000_000).contains(t)), "{own:?}\n{replay}");
        assert!(outcome.violations.is_empty(), "{:?}\n{replay}", verdicts(&outcome));
    }
}

/// The payment's stream goes into a black hole at 1 min; the result is stored at about 5 min
/// and written into the hole. The client is told nothing: it waits for its own request timeout
/// (here 10 min) and reports the call failed, the price of its rule (condition 4), not of the
/// hole. Without a timeout the call never resolves: `every-call-resolves`, explained by the
/// black hole. Without the hole the same pair gets the result.
#[test]
fn a_call_whose_stream_went_into_a_black_hole_waits_for_the_clients_own_timer() {
    for seed in SEEDS {
        let calm = long_call("none", "10m");
        let outcome = run_ok(&calm, seed);
        assert!(outcome.violations.is_empty(), "{:?}\n{}", verdicts(&outcome), common::replay(&calm, seed));

        let s = long_call("1m..3m", "10m");
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        let holes = caught(&outcome);
        assert_eq!(holes.len(), 1, "{holes:?}\n{replay}");
        let (at, _, conns, _) = &holes[0];
        assert_eq!(*at, 60_000_000, "{replay}");
        // Neither end was told: no end of the call's connection reached the client before its
        // own timer aborted it.
        let ends: Vec<(u64, ConnEnd)> = outcome
            .trace
            .steps
            .iter()
            .filter_map(|st| match &st.kind {
                StepKind::ConnEnd { conn, end } if conns.contains(conn) => Some((st.t, *end)),
                _ => None,
            })
            .collect();
        assert!(ends.iter().all(|(t, end)| *end == ConnEnd::Aborted && *t >= 600_000_000), "{ends:?}\n{replay}");
        let error = outcome.trace.steps.iter().find_map(|st| match &st.kind {
            StepKind::AppError { error, .. } => Some((st.t, error.clone())),
            _ => None,
        });
        let (t, error) = error.unwrap_or_else(|| panic!("the call failed by its timeout\n{replay}"));
        assert_eq!(error, "request timed out", "{replay}");
        assert!((600_000_000..602_000_000).contains(&t), "at the timeout, 10 min after the call: {t}\n{replay}");
        let v = verdicts(&outcome);
        assert!(v.iter().any(|(i, c)| i == "no-false-failure" && c.starts_with("explained by condition 4")), "{v:?}");
        assert!(!violated(&outcome).contains("every-call-resolves"), "{v:?}\n{replay}");
        none_unexplained(&outcome, &replay);

        let s = long_call("1m..3m", "none");
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        let v = verdicts(&outcome);
        let unresolved = v.iter().find(|(i, _)| i == "every-call-resolves");
        let (_, conditions) = unresolved.unwrap_or_else(|| panic!("the call never resolves: {v:?}\n{replay}"));
        assert!(conditions.starts_with("explained by a silent black hole: "), "{conditions}\n{replay}");
        // The result was there to be had: the server stored it; the client asked for nothing
        // after the hole opened.
        let stored = outcome.trace.steps.iter().any(|st| {
            matches!(&st.kind, StepKind::EventStored { message: Some(ServerMessage::ToolResult { .. }), .. })
        });
        assert!(stored, "{replay}");
        assert_eq!(sent_after(&outcome, 60_000_000), 0, "{replay}");
        none_unexplained(&outcome, &replay);
    }
}

// ---------------------------------------------------------------------------------------------
// A standalone stream the hole took
// ---------------------------------------------------------------------------------------------

/// The client's standalone `GET` goes into the hole at 60 s while the server notifies every 2 s.
/// The client never hears another notification and never knows to resume: it sends no `GET`
/// again and its stream never ends. The events lost are the black hole's price.
#[test]
fn a_standalone_stream_in_a_black_hole_never_hears_the_notifications() {
    let s = scenario(
        "ts-sdk",
        "ts-sdk",
        "standalone-notify",
        &[("fault.partition", "none"), ("fault.blackhole", "60s..180s")],
    );
    for seed in SEEDS {
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        let holes = caught(&outcome);
        assert_eq!(holes.len(), 1, "{holes:?}\n{replay}");
        let get = outcome.trace.steps.iter().find_map(|st| match &st.kind {
            StepKind::Send { conn, request } if request.method == Method::Get => Some(*conn),
            _ => None,
        });
        let get = get.unwrap_or_else(|| panic!("the client opened its standalone stream\n{replay}"));
        assert!(holes[0].2.contains(&get), "the hole caught the GET: {holes:?}\n{replay}");
        let gets = outcome
            .trace
            .steps
            .iter()
            .filter(|st| matches!(&st.kind, StepKind::Send { request, .. } if request.method == Method::Get));
        assert_eq!(gets.count(), 1, "never re-opened\n{replay}");
        let ended =
            outcome.trace.steps.iter().any(|st| matches!(&st.kind, StepKind::ConnEnd { conn, .. } if *conn == get));
        assert!(!ended, "the client never learned its stream was dead\n{replay}");
        let heard_after = outcome
            .trace
            .steps
            .iter()
            .filter(|st| st.t > 60_000_000 && matches!(st.kind, StepKind::AppEvent { call: None, .. }))
            .count();
        assert_eq!(heard_after, 0, "{replay}");
        let v = verdicts(&outcome);
        let lost = v.iter().find(|(i, _)| i == "no-silent-event-loss");
        let (_, conditions) = lost.unwrap_or_else(|| panic!("the notifications are lost: {v:?}\n{replay}"));
        assert!(conditions.starts_with("explained by a silent black hole: "), "{conditions}\n{replay}");
        none_unexplained(&outcome, &replay);
    }
}

// ---------------------------------------------------------------------------------------------
// A session held by a dead GET
// ---------------------------------------------------------------------------------------------

/// The Python SDK's pair: the client opens its standalone `GET`, finishes a short call, and its
/// process restarts at 90 s, inside a black hole that caught the `GET` at 60 s (the client
/// vanished without a FIN or RST reaching anyone, supergateway#160). With no keep-alive the
/// server's `GET` stays open, and its idle rule (`no-open-request`: an open request holds the
/// session) never lets the session expire: it outlives its client, which starts a second one.
fn vanished_client(fault: &str, extra: &[(&str, &str)]) -> Scenario {
    let mut overrides = vec![
        ("lb.idle_timeout", "none"),
        ("client.open_standalone_stream", "true"),
        ("tool.duration", "5s"),
        ("server.idle_ttl", "2m"),
        ("server.keepalive", "none"),
        ("fault.client_restart", "90s"),
        ("fault.blackhole", "none"),
    ];
    let (key, window) = fault.split_once('=').expect("KEY=WINDOW");
    overrides.push((key, window));
    overrides.extend_from_slice(extra);
    scenario("py-sdk", "py-sdk", "long-tool", &overrides)
}

/// The first session (the one the client opened its `GET` in), and when it ended, if it did.
fn first_session_end(outcome: &RunOutcome) -> (String, Option<(u64, SessionEndReason)>) {
    let first = outcome.trace.steps.iter().find_map(|st| match &st.kind {
        StepKind::SessionCreated { session, .. } => Some(session.clone()),
        _ => None,
    });
    let first = first.expect("a session was created");
    let end = outcome.trace.steps.iter().find_map(|st| match &st.kind {
        StepKind::SessionEnded { session, reason, .. } if *session == first => Some((st.t, *reason)),
        _ => None,
    });
    (first.0.to_string(), end)
}

#[test]
fn a_session_held_by_a_black_holed_get_outlives_its_vanished_client() {
    for seed in SEEDS {
        let s = vanished_client("fault.blackhole=60s..180s", &[]);
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        let (first, end) = first_session_end(&outcome);
        assert_eq!(end, None, "the session never ends\n{replay}");
        let last = outcome.trace.steps.last().expect("steps");
        let StepKind::RunEnd { server_sessions, client_session, .. } = &last.kind else { panic!("{replay}") };
        assert!(server_sessions.iter().any(|s| s.as_str() == first), "{server_sessions:?}\n{replay}");
        assert!(client_session.as_ref().is_some_and(|s| s.as_str() != first), "the client holds another\n{replay}");
        // The second session is the restart's (condition 1): a client that forgot its session.
        let v = verdicts(&outcome);
        assert!(v.iter().any(|(i, c)| i == "no-orphaned-session" && c.contains("condition 1")), "{v:?}\n{replay}");
        none_unexplained(&outcome, &replay);

        // A partition resets the GET: the server lets the session go after its idle TTL.
        let s = vanished_client("fault.partition=60s..180s", &[]);
        let outcome = run_ok(&s, seed);
        let (_, end) = first_session_end(&outcome);
        assert!(matches!(end, Some((_, SessionEndReason::IdleExpired))), "{end:?}\n{}", common::replay(&s, seed));

        // An idle rule that counts only requests lets it go despite the open GET.
        let s = vanished_client("fault.blackhole=60s..180s", &[("server.idle_rule", "last-request")]);
        let outcome = run_ok(&s, seed);
        let (_, end) = first_session_end(&outcome);
        assert!(matches!(end, Some((_, SessionEndReason::IdleExpired))), "{end:?}\n{}", common::replay(&s, seed));
    }
}

/// With the Python server's own keep-alives (every 15 s) the balancer forwards each into the
/// hole, accepted and never acknowledged: TCP gives the connection up after its retransmissions
/// (Linux `tcp_retries2`, 924.6 s after the first unacknowledged write), the balancer records it
/// and closes the upstream, and the server's idle countdown starts only then. A keep-alive that
/// is accepted detects a black hole a quarter of an hour late.
#[test]
fn keep_alives_into_a_black_hole_end_the_get_only_when_tcp_gives_up() {
    for seed in SEEDS {
        let s =
            vanished_client("fault.blackhole=60s..180s", &[("server.keepalive", "15s"), ("run.liveness_grace", "30m")]);
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        let gave_up: Vec<u64> = outcome
            .trace
            .steps
            .iter()
            .filter(|st| st.actor == Actor::Lb && matches!(st.kind, StepKind::LbGaveUp { .. }))
            .map(|st| st.t)
            .collect();
        assert_eq!(gave_up.len(), 1, "{gave_up:?}\n{replay}");
        let hole = us(Duration::from_secs(60));
        let window = hole + TCP_GIVES_UP_US..=hole + us(Duration::from_secs(15)) + TCP_GIVES_UP_US;
        assert!(window.contains(&gave_up[0]), "{} not in {window:?}\n{replay}", gave_up[0]);
        let (_, end) = first_session_end(&outcome);
        let Some((ended, SessionEndReason::IdleExpired)) = end else { panic!("{end:?}\n{replay}") };
        let after = ended - gave_up[0];
        assert!((us(Duration::from_secs(120))..us(Duration::from_secs(121))).contains(&after), "{after}\n{replay}");
        none_unexplained(&outcome, &replay);
    }
}

// ---------------------------------------------------------------------------------------------
// A kept-alive socket the hole caught idle
// ---------------------------------------------------------------------------------------------

/// A kept-alive connection idle in the client's pool when the hole opens (copilot-cli#3257: a
/// NAT drops the idle flow) takes the next request minutes later, long after the hole closed:
/// the write is accepted, the request never reaches the server, nothing comes back. The call
/// waits for the client's request timeout; without one, for TCP to give up (924.6 s after the
/// write), which the client hears as a reset. Either way the application is told an error, which
/// is true: the call never ran.
#[test]
fn a_request_on_a_kept_alive_socket_caught_idle_goes_into_the_hole_long_after_it_closed() {
    for (timeout, after_us) in [("60s", 60_000_000), ("none", TCP_GIVES_UP_US)] {
        let s = scenario(
            "ts-sdk",
            "ts-sdk",
            "long-tool",
            &[
                ("tool.duration", "5s"),
                ("app.calls", "1s; 5m"),
                ("client.http.idle_expiry", "none"),
                // No head timeout of the library's own (Bun; Node's undici would fail the
                // request 300 s after it was sent).
                ("client.http.headers_timeout", "none"),
                ("client.request_timeout", timeout),
                ("fault.blackhole", "1m..2m"),
                ("run.liveness_grace", "30m"),
            ],
        );
        for seed in SEEDS {
            let outcome = run_ok(&s, seed);
            let replay = common::replay(&s, seed);
            let holes = caught(&outcome);
            assert!(holes.len() == 1 && holes[0].3 == 1, "one kept-alive socket caught idle: {holes:?}\n{replay}");
            let reused = outcome.trace.steps.iter().find_map(|st| match &st.kind {
                StepKind::ConnReused { conn, .. } if st.t >= 300_000_000 => Some((st.t, *conn)),
                _ => None,
            });
            let (sent, conn) = reused.unwrap_or_else(|| panic!("the second call went on the pooled socket\n{replay}"));
            let effects = outcome.trace.steps.iter().filter(|st| matches!(st.kind, StepKind::SideEffect { .. }));
            assert_eq!(effects.count(), 1, "the second call never reached the server\n{replay}");
            let error = outcome.trace.steps.iter().find_map(|st| match &st.kind {
                StepKind::AppError { .. } => Some(st.t),
                _ => None,
            });
            assert_eq!(error, Some(sent + after_us), "{replay}");
            if timeout == "none" {
                let end = outcome.trace.steps.iter().find_map(|st| match &st.kind {
                    StepKind::ConnEnd { conn: c, end } if *c == conn => Some((st.t, *end)),
                    _ => None,
                });
                assert_eq!(end, Some((sent + TCP_GIVES_UP_US, ConnEnd::Reset)), "{replay}");
            }
            assert!(outcome.violations.is_empty(), "{:?}\n{replay}", verdicts(&outcome));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// One client's hole, determinism, validation
// ---------------------------------------------------------------------------------------------

/// A black hole of one client (`client1@…`) catches that client's connections only: the other
/// client's call is answered; the caught one's is the hole's price, named for that client.
/// The same seed gives the same bytes.
#[test]
fn one_clients_black_hole_catches_only_that_client_and_replays_byte_for_byte() {
    let s = scenario(
        "reference",
        "reference",
        "long-tool",
        &[
            ("app.clients", "2"),
            ("app.calls", "1s client=0; 1s client=1"),
            ("lb.idle_timeout", "none"),
            ("fault.blackhole", "client1@1m..3m"),
        ],
    );
    for seed in SEEDS {
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        let holes = caught(&outcome);
        assert!(holes.len() == 1 && holes[0].1 == Some(1), "{holes:?}\n{replay}");
        let results: Vec<Option<u32>> = outcome
            .trace
            .steps
            .iter()
            .filter(|st| matches!(st.kind, StepKind::AppResult { .. }))
            .map(|st| st.client)
            .collect();
        assert_eq!(results, vec![Some(0)], "{replay}");
        let v = verdicts(&outcome);
        assert!(v.iter().any(|(i, c)| i == "every-call-resolves" && c.contains("a silent black hole")), "{v:?}");
        none_unexplained(&outcome, &replay);
        let again = run_ok(&s, seed);
        assert_eq!(outcome.trace.to_jsonl(), again.trace.to_jsonl(), "{replay}");
        let (_, difference) = mcpsim::studies::determinism::run_twice_at_once(&s, seed).expect("runs");
        assert_eq!(difference, None, "two runs at once: {replay} --check-determinism");
    }
}

#[test]
fn a_black_hole_is_refused_where_it_names_no_client_of_the_scenario() {
    for (value, why) in [
        ("client1@1m..2m", "the scenario has 1 client(s)"),
        ("replica0@1m..2m", "a black hole catches a client's connections"),
        ("2m..1m", "ends before it starts"),
        ("1m..2m,1m..2m", "given twice"),
    ] {
        let mut s = Scenario::build("long-tool", "reference", "reference").unwrap();
        let err = s.apply_overrides(&[("fault.blackhole".into(), value.into())]).unwrap_err();
        assert!(err.to_string().contains(why), "{value}: {err}");
    }
    let mut s = Scenario::build("long-tool", "reference", "reference").unwrap();
    s.apply_overrides(&[("fault.blackhole".into(), "1m..16m".into())]).unwrap();
    assert_eq!(s.faults.heal_time(), Duration::from_secs(960));
}
