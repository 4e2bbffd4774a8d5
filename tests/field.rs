//! Field failures: public reports reproduced by the model, and the reference client's gaps that
//! the same invariants found, each closed. The recorded reproductions live in `traces/field/`
//! (replayed byte for byte by `tests/corpus.rs`); the tests here fail if the model stops
//! reproducing a report, or if a closed gap opens again.

mod common;
use common::{run_ok, violated};

use mcpsim::engine::runner::RunOutcome;
use mcpsim::Scenario;
use mcpsim_model::http::{ClientMessage, Method};
use mcpsim_model::trace::StepKind;
use std::collections::BTreeSet;

fn scenario(client: &str, server: &str, name: &str, overrides: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::build(name, client, server).expect("a known scenario and profiles");
    let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.apply_overrides(&overrides).expect("valid overrides");
    s
}

fn verdict(outcome: &RunOutcome) -> String {
    outcome.violations.iter().take(5).map(|v| format!("  {} at {}: {}\n", v.invariant, v.at, v.detail)).collect()
}

const SEEDS: [u64; 3] = [0, 1, 2];

// ---------------------------------------------------------------------------------------------
// Reproductions of public reports
// ---------------------------------------------------------------------------------------------

/// anomalyco/opencode#28186: the TypeScript SDK's 60 s request timeout fires while progress keeps
/// arriving (resetTimeoutOnProgress is opt-in and needs onprogress); the client cancels a payment
/// whose side effect already ran and reports a plain error. Trace:
/// `traces/field/no-false-failure--ts-sdk--ts-sdk--long-tool--opencode-28186.jsonl`.
fn opencode_28186(resets_on_progress: bool) -> Scenario {
    let resets = if resets_on_progress { "true" } else { "false" };
    scenario(
        "ts-sdk",
        "ts-sdk",
        "long-tool",
        &[
            ("tool.event_interval", "10s"),
            ("client.timeout_resets_on_progress", resets),
            ("run.reproduces", "https://github.com/anomalyco/opencode/issues/28186"),
        ],
    )
}

#[test]
fn opencode_28186_a_timeout_under_progress_reports_a_payment_that_ran_as_failed() {
    let s = opencode_28186(false);
    for seed in SEEDS {
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        assert!(violated(&outcome).contains("no-false-failure"), "{}{replay}", verdict(&outcome));
        let steps = &outcome.trace.steps;
        let progress = steps.iter().filter(|st| matches!(st.kind, StepKind::AppEvent { call: Some(_), .. })).count();
        assert!(progress >= 5, "progress kept arriving before the timeout: {progress}; {replay}");
        let cancelled = steps.iter().position(|st| {
            matches!(&st.kind, StepKind::Send { request, .. }
                if matches!(request.body, Some(ClientMessage::Cancelled { .. })))
        });
        let error = steps
            .iter()
            .position(|st| matches!(&st.kind, StepKind::AppError { error, .. } if error == "request timed out"));
        assert!(cancelled.is_some() && error.is_some(), "the client cancelled and reported an error; {replay}");
    }
    // The opt-in fix: progress restarts the timeout, and the payment's result arrives.
    let fixed = opencode_28186(true);
    for seed in SEEDS {
        let outcome = run_ok(&fixed, seed);
        assert!(outcome.violations.is_empty(), "{}{}", verdict(&outcome), common::replay(&fixed, seed));
    }
}

/// modelcontextprotocol/typescript-sdk#2499: a stream the TypeScript client resumed with a
/// `Last-Event-ID` and that is cut again before any id-bearing event (here a 10 s balancer idle
/// timeout under the server's 15 s keep-alives) is re-attached with no `Last-Event-ID`: the
/// server takes it for a new standalone stream (a 409 beside the open one), and the call hangs
/// until its request timeout. The conditions judge names the client's bug (its forgotten cursor).
/// Trace: `traces/field/typescript-sdk-2499/no-false-failure--ts-sdk--ts-sdk--long-tool--resumed-stream-recut.jsonl`.
fn typescript_sdk_2499(token_survives: bool) -> Scenario {
    scenario(
        "ts-sdk",
        "ts-sdk",
        "long-tool",
        &[
            ("lb.idle_timeout", "10s"),
            ("client.close_handling.resume_token_survives_recut", if token_survives { "true" } else { "false" }),
            ("run.reproduces", "https://github.com/modelcontextprotocol/typescript-sdk/issues/2499"),
        ],
    )
}

/// The client's own bug that the judge names in a run: a promised breach of condition 1.
fn forgot_cursor(outcome: &RunOutcome) -> bool {
    use mcpsim_model::oracle::conditions::{Condition, Conditions};
    Conditions::judge(&outcome.trace)
        .breaches
        .iter()
        .any(|b| b.condition == Condition::Persisted && b.promised && b.detail.contains("forgot its cursor"))
}

#[test]
fn typescript_sdk_2499_a_resumed_stream_cut_again_is_re_attached_without_its_id() {
    let s = typescript_sdk_2499(false);
    for seed in SEEDS {
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        // A resume with the id, then a GET of the session without one while the call waits.
        let gets: Vec<bool> = outcome
            .trace
            .steps
            .iter()
            .filter_map(|st| match &st.kind {
                StepKind::Send { request, .. } if request.method == Method::Get => {
                    Some(request.last_event_id.is_some())
                }
                _ => None,
            })
            .collect();
        let resumed = gets.iter().position(|with_id| *with_id);
        assert!(resumed.is_some_and(|r| gets[r..].contains(&false)), "{gets:?}; {replay}");
        assert!(forgot_cursor(&outcome), "{}{replay}", verdict(&outcome));
    }
    // The fix (the tracker seeded from the token the stream was opened with): the same cuts, and
    // no forgotten cursor.
    let fixed = typescript_sdk_2499(true);
    for seed in SEEDS {
        let outcome = run_ok(&fixed, seed);
        assert!(!forgot_cursor(&outcome), "{}{}", verdict(&outcome), common::replay(&fixed, seed));
    }
}

/// modelcontextprotocol/rust-sdk#958: a resume the server cannot honour is answered with an empty
/// 200; rmcp's client takes it for a graceful close, resets its retries and resumes with the same
/// id for good. Trace:
/// `traces/field/bounded-reconnects--rmcp--rmcp--resume-after-completion--rust-sdk-958.jsonl`.
fn rust_sdk_958() -> Scenario {
    scenario(
        "rmcp",
        "rmcp",
        "resume-after-completion",
        &[
            ("run.liveness_grace", "15m"),
            ("run.reproduces", "https://github.com/modelcontextprotocol/rust-sdk/issues/958"),
        ],
    )
}

#[test]
fn rust_sdk_958_an_empty_200_to_a_resume_makes_rmcp_resume_with_the_same_id_for_good() {
    let s = rust_sdk_958();
    for seed in SEEDS {
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        let broken = violated(&outcome);
        assert!(broken.contains("bounded-reconnects"), "{}{replay}", verdict(&outcome));
        assert!(broken.contains("every-call-resolves"), "{}{replay}", verdict(&outcome));
        // After the heal (3 min) every resume of the call's stream carries one and the same
        // Last-Event-ID (rmcp request-stream ids are `<index>/<request>`; the standalone stream's
        // own resumes, with its priming id `0`, are another stream).
        let ids: BTreeSet<_> = outcome
            .trace
            .steps
            .iter()
            .filter(|st| st.t > 200_000_000)
            .filter_map(|st| match &st.kind {
                StepKind::Send { request, .. } if request.method == Method::Get => {
                    request.last_event_id.clone().filter(|id| id.to_string().contains('/'))
                }
                _ => None,
            })
            .collect();
        assert_eq!(ids.len(), 1, "{ids:?}; {replay}");
    }
}

/// modelcontextprotocol/typescript-sdk#1883 (opencode Desktop: `reader.read()` blocks forever
/// when the stream stalls; the call hangs for over 10 minutes): the network drops the payment's
/// stream without a FIN or an RST (a silent black hole, `fault.blackhole`, 1 to 3 min). The
/// TypeScript client's SSE reader is told nothing; no timer of its fires (the report's hang
/// outlasted any; modelled as `client.request_timeout = none`), so it never resumes, and the
/// result the server stored at about 5 min reaches nobody: `every-call-resolves`, explained by
/// the black hole (a network fault's price), not `conditions 1-4 held`. Without the hole the
/// same pair gets the result. Trace:
/// `traces/field/half-open/every-call-resolves--ts-sdk--ts-sdk--long-tool--typescript-sdk-1883.jsonl`.
fn typescript_sdk_1883(fault: &str) -> Scenario {
    scenario(
        "ts-sdk",
        "ts-sdk",
        "long-tool",
        &[
            ("lb.idle_timeout", "none"),
            ("client.request_timeout", "none"),
            ("fault.blackhole", fault),
            ("run.reproduces", "https://github.com/modelcontextprotocol/typescript-sdk/issues/1883"),
        ],
    )
}

#[test]
fn typescript_sdk_1883_a_stream_stalled_by_a_black_hole_leaves_the_call_waiting_for_good() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("traces/field/half-open/every-call-resolves--ts-sdk--ts-sdk--long-tool--typescript-sdk-1883.jsonl");
    let recorded = mcpsim::report::artifacts::read_trace(&path).expect("the trace parses");
    let s = typescript_sdk_1883("1m..3m");
    let from_file = mcpsim::report::artifacts::recorded_scenario(&path, &recorded).expect("its scenario");
    assert_eq!(from_file.cli_args(), s.cli_args(), "the trace is this scenario's");
    for seed in SEEDS {
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        assert_eq!(violated(&outcome), BTreeSet::from(["every-call-resolves"]), "{}{replay}", verdict(&outcome));
        let footer = outcome.trace.footer.as_ref().expect("a footer");
        for v in &footer.verdict {
            assert!(v.conditions.starts_with("explained by a silent black hole: "), "{}; {replay}", v.conditions);
        }
        let steps = &outcome.trace.steps;
        // The client's streams were caught, and it never heard of it: no end, no resume, nothing
        // sent after the hole opened.
        let caught: Vec<_> = steps
            .iter()
            .filter_map(|st| match &st.kind {
                StepKind::BlackHoled { conns, connect: false, .. } => Some(conns.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(caught.len(), 1, "{replay}");
        let told =
            steps.iter().any(|st| matches!(&st.kind, StepKind::ConnEnd { conn, .. } if caught[0].contains(conn)));
        assert!(!told, "the client was told nothing; {replay}");
        let after = steps.iter().filter(|st| st.t > 60_000_000 && matches!(st.kind, StepKind::Send { .. })).count();
        assert_eq!(after, 0, "{replay}");
        // The answer existed: the server stored the result.
        let stored = steps.iter().any(|st| {
            matches!(
                &st.kind,
                StepKind::EventStored { message: Some(mcpsim_model::http::ServerMessage::ToolResult { .. }), .. }
            )
        });
        assert!(stored, "{replay}");
    }
    // Without the hole the stream carries the result.
    let calm = typescript_sdk_1883("none");
    for seed in SEEDS {
        let outcome = run_ok(&calm, seed);
        assert!(outcome.violations.is_empty(), "{}{}", verdict(&outcome), common::replay(&calm, seed));
    }
}

// ---------------------------------------------------------------------------------------------
// The reference client's gaps, closed
// ---------------------------------------------------------------------------------------------

/// A client restart cut off the fire-and-forget DELETE, and the restarted client initialized a new
/// session beside the old one (`no-orphaned-session`; found by `explore --client reference
/// --server reference --scenario delete-during-tool --search --within-conditions`). The pending
/// DELETE is now persisted and finished before the restarted client initializes.
#[test]
fn a_delete_cut_off_by_a_client_restart_is_finished_after_it() {
    let s = scenario("reference", "reference", "delete-during-tool", &[("fault.client_restart", "2m")]);
    for seed in [0, 1, 2, 3] {
        let outcome = run_ok(&s, seed);
        assert!(outcome.violations.is_empty(), "{}{}", verdict(&outcome), common::replay(&s, seed));
        let deletes = outcome
            .trace
            .steps
            .iter()
            .filter(|st| matches!(&st.kind, StepKind::Send { request, .. } if request.method == Method::Delete))
            .count();
        assert!(deletes >= 1, "{}", common::replay(&s, seed));
    }
}

/// With a single attempt the reference client gave its standalone stream up without a word
/// (`no-silent-event-loss`); it now tells the application the stream was lost.
#[test]
fn giving_up_the_standalone_stream_is_reported() {
    let s = scenario("reference", "reference", "standalone-notify", &[("client.max_attempts", "1")]);
    for seed in SEEDS {
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        assert!(outcome.violations.is_empty(), "{}{replay}", verdict(&outcome));
        let told = outcome.trace.steps.iter().any(|st| matches!(st.kind, StepKind::AppStreamLost { .. }));
        assert!(told, "{replay}");
    }
}

/// With a 2-minute retention window the result of a finished call is evicted before the client
/// comes back: the reference client resumed an empty stream for good (`every-call-resolves`); after
/// three unhonourable resumes in a row it now resolves the call as unknown outcome.
#[test]
fn a_call_whose_resumes_cannot_be_honoured_ends_as_unknown_outcome() {
    let s = scenario("reference", "reference", "resume-after-completion", &[("server.retention_window", "120s")]);
    for seed in SEEDS {
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        assert!(outcome.violations.is_empty(), "{}{replay}", verdict(&outcome));
        let unknown = outcome.trace.steps.iter().any(|st| matches!(st.kind, StepKind::AppUnknownOutcome { .. }));
        assert!(unknown, "{replay}");
    }
}

// ---------------------------------------------------------------------------------------------
// no-work-killed on the default expire-during-tool run
// ---------------------------------------------------------------------------------------------

#[test]
fn expiring_a_session_mid_tool_kills_work_for_the_servers_that_do_it() {
    // rmcp is not among them: its session worker restarts the idle countdown on the session's own
    // outgoing events too (`idle_reset = requests-and-events`), so the tool's progress keeps it.
    let s = scenario("reference", "rmcp", "expire-during-tool", &[]);
    assert!(!violated(&run_ok(&s, 0)).contains("no-work-killed"), "{}", common::replay(&s, 0));
    for server in ["py-sdk", "ts-sdk"] {
        let s = scenario("reference", server, "expire-during-tool", &[]);
        let outcome = run_ok(&s, 0);
        assert!(
            violated(&outcome).contains("no-work-killed"),
            "{server}: {}{}",
            verdict(&outcome),
            common::replay(&s, 0)
        );
    }
    // The reference server never expires a session that still owes its client something.
    let s = scenario("reference", "reference", "expire-during-tool", &[]);
    let outcome = run_ok(&s, 0);
    assert!(outcome.violations.is_empty(), "{}{}", verdict(&outcome), common::replay(&s, 0));
}

/// modelcontextprotocol/python-sdk#880: several replicas behind a load balancer without session
/// affinity; a request that lands on a replica that did not create its session gets 404
/// ("Session not found"), intermittently. Round robin over two replicas with local sessions
/// reproduces it; routing by `Mcp-Session-Id` does not.
fn python_sdk_880(routing: &str) -> Scenario {
    scenario(
        "py-sdk",
        "py-sdk",
        "long-tool",
        &[
            ("lb.replicas", "2"),
            ("lb.routing", routing),
            ("run.reproduces", "https://github.com/modelcontextprotocol/python-sdk/issues/880"),
        ],
    )
}

fn not_found_answers(outcome: &RunOutcome) -> usize {
    outcome
        .trace
        .steps
        .iter()
        .filter(|st| matches!(&st.kind, StepKind::Response { head, .. } if head.status.0 == 404))
        .count()
}

#[test]
fn python_sdk_880_replicas_without_affinity_answer_session_not_found() {
    for seed in SEEDS {
        let s = python_sdk_880("round-robin");
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        assert!(not_found_answers(&outcome) > 0, "no 404 over two round-robin replicas; {replay}");
        assert!(!outcome.violations.is_empty(), "the lost session went unnoticed; {replay}");
        let sticky = python_sdk_880("sticky-session");
        let outcome = run_ok(&sticky, seed);
        let replay = common::replay(&sticky, seed);
        assert_eq!(not_found_answers(&outcome), 0, "{replay}");
        assert!(outcome.violations.is_empty(), "{}{replay}", verdict(&outcome));
    }
}

/// marianfoo/abap-mcp-server#3 (also LibreChat#14816, claude-code#31752): an intermediary aborts
/// the silent standalone GET at 300 s, closing only the client's side; the server, which learns
/// of a dead stream only at a keep-alive and sends none, keeps the stream registered. Both
/// reconnects get 409 and the TypeScript client gives up after its two attempts; the notification
/// at 400 s reaches nobody (`no-silent-event-loss`). Trace: `traces/field/abap-mcp-server-3/`.
fn abap_mcp_server_3(overrides: &[(&str, &str)]) -> Scenario {
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/field/abap-mcp-server-3/silent-standalone.toml");
    let mut sets = vec![
        ("server.keepalive", "none"),
        ("server.dead_stream", "on-keepalive"),
        ("lb.idle_timeout", "300s"),
        ("lb.cut_mode", "client-side"),
        ("run.reproduces", "https://github.com/marianfoo/abap-mcp-server/issues/3"),
    ];
    sets.extend_from_slice(overrides);
    scenario("ts-sdk", "ts-sdk", file.to_str().expect("a UTF-8 path"), &sets)
}

fn conflicts(outcome: &RunOutcome) -> usize {
    let steps = &outcome.trace.steps;
    steps.iter().filter(|st| matches!(&st.kind, StepKind::Response { head, .. } if head.status.0 == 409)).count()
}

#[test]
fn abap_mcp_server_3_a_client_side_cut_leaves_a_stale_stream_that_409s_every_reconnect() {
    for seed in SEEDS {
        let s = abap_mcp_server_3(&[]);
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        assert!(violated(&outcome).contains("no-silent-event-loss"), "{}{replay}", verdict(&outcome));
        let kept = outcome.trace.steps.iter().any(|st| matches!(st.kind, StepKind::LbUpstreamKept { .. }));
        assert!(kept, "the balancer cut the client side only; {replay}");
        assert_eq!(conflicts(&outcome), 2, "both reconnects collide with the stale stream; {replay}");
        // A server told of the cut at once (or a balancer closing both sides) frees the stream:
        // the reconnect is accepted and the notification arrives.
        for fixed in
            [abap_mcp_server_3(&[("server.dead_stream", "immediate")]), abap_mcp_server_3(&[("lb.cut_mode", "both")])]
        {
            let outcome = run_ok(&fixed, seed);
            let replay = common::replay(&fixed, seed);
            assert_eq!(conflicts(&outcome), 0, "{replay}");
            assert!(outcome.violations.is_empty(), "{}{replay}", verdict(&outcome));
        }
    }
}

/// TryGhost/ghst#118, agentdeals#1098: a CDN holds the head of a silent standalone GET until its
/// first body byte and cuts it at 125 s, answering 502: the client never sees the server's 200,
/// each reconnect is cut the same way, the TypeScript client gives up after its two attempts and
/// the notification at 400 s reaches nobody (`no-silent-event-loss`). Passing the head on at once
/// turns each cut into a reset after a 200, which resets the attempt counter: the client stays.
/// Trace: `traces/field/cdn-held-headers/`.
fn cdn_held_headers(hold: &str) -> Scenario {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/field/cdn-held-headers/silent-get.toml");
    let sets = [
        ("server.keepalive", "none"),
        ("lb.idle_timeout", "none"),
        ("lb.max_lifetime", "125s"),
        ("lb.hold_headers", hold),
        ("run.reproduces", "https://github.com/TryGhost/ghst/issues/118"),
    ];
    scenario("ts-sdk", "ts-sdk", file.to_str().expect("a UTF-8 path"), &sets)
}

fn bad_gateways(outcome: &RunOutcome) -> usize {
    let steps = &outcome.trace.steps;
    steps.iter().filter(|st| matches!(&st.kind, StepKind::Response { head, .. } if head.status.0 == 502)).count()
}

#[test]
fn a_cdn_holding_headers_turns_a_silent_get_into_502s_and_the_client_gives_up() {
    for seed in SEEDS {
        let s = cdn_held_headers("true");
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        assert!(violated(&outcome).contains("no-silent-event-loss"), "{}{replay}", verdict(&outcome));
        assert!(bad_gateways(&outcome) >= 2, "the held GETs were answered 502; {replay}");
        let fixed = cdn_held_headers("false");
        let outcome = run_ok(&fixed, seed);
        let replay = common::replay(&fixed, seed);
        assert_eq!(bad_gateways(&outcome), 0, "{replay}");
        assert!(outcome.violations.is_empty(), "{}{replay}", verdict(&outcome));
    }
}
