//! Field failures: public reports reproduced by the model, and the reference client's gaps that
//! the same invariants found, each closed. The recorded reproductions live in `traces/field/`
//! (replayed byte for byte by `tests/corpus.rs`); the tests here fail if the model stops
//! reproducing a report, or if a closed gap opens again.

mod common;
use common::{run_ok, violated};

use mcpsim::engine::runner::RunOutcome;
use mcpsim::Scenario;
use mcpsim_model::http::{ClientMessage, Method};
use mcpsim_model::oracle::conditions::{Condition, Conditions};
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
/// outlasted any; modelled as `client.request_timeout = none`, and Bun's fetch, without Node's
/// 300 s body timeout), so it never resumes, and the
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
            // opencode Desktop runs on Bun, whose fetch has no body or head timeout (Node's
            // undici would give the silent stream up after 300 s: `client.http.body_timeout`).
            ("client.http.body_timeout", "none"),
            ("client.http.headers_timeout", "none"),
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

/// anthropics/claude-code#69593 (and zoedsoupe/anubis-mcp#10, Cursor behind a server's 60 s idle
/// close): a tool call's POST stream breaks before any id-bearing event; TypeScript 1.32.2
/// neither resumes it nor fails the call (`close_handling.on_unresumable_post =
/// "leave-pending"`), so with a host's long request timeout the call hangs for good. Trace:
/// `traces/field/claude-code-69593/`.
fn claude_code_69593(request_timeout: &str) -> Scenario {
    scenario(
        "ts-sdk",
        "ts-sdk-1.29",
        "long-tool",
        &[
            ("lb.idle_timeout", "5m"),
            ("tool.duration", "8m"),
            ("client.request_timeout", request_timeout),
            ("server.event_store", "none"),
            ("run.reproduces", "https://github.com/anthropics/claude-code/issues/69593"),
        ],
    )
}

#[test]
fn claude_code_69593_a_post_stream_broken_before_an_event_id_leaves_the_call_pending_for_good() {
    let hung = claude_code_69593("none");
    for seed in SEEDS {
        let outcome = run_ok(&hung, seed);
        let replay = common::replay(&hung, seed);
        assert!(violated(&outcome).contains("every-call-resolves"), "{}{replay}", verdict(&outcome));
        let left = outcome.trace.steps.iter().any(|s| {
            matches!(&s.kind, StepKind::Decision { error: Some(e), .. }
                if e.starts_with("no event id arrived on the POST stream") && e.ends_with("until its request timeout"))
        });
        assert!(left, "the call is left pending when its stream breaks; {replay}");
        assert!(
            !outcome.trace.steps.iter().any(|s| matches!(&s.kind, StepKind::AppError { .. })),
            "nothing is told; {replay}"
        );
    }
    // With the SDK's 60 s default the same call is told "request timed out" a minute after it
    // was sent: it resolves, as an error (its payment ran).
    let timed = claude_code_69593("60s");
    for seed in SEEDS {
        let outcome = run_ok(&timed, seed);
        assert!(
            !violated(&outcome).contains("every-call-resolves"),
            "{}{}",
            verdict(&outcome),
            common::replay(&timed, seed)
        );
    }
}

/// modelcontextprotocol/typescript-sdk#1211 ("SSE stream disconnected: TypeError: terminated"
/// every 5 minutes, #949 alike): Node's `fetch` gives up a response whose body is silent for 300 s
/// (undici's `bodyTimeout`, `client.http.body_timeout` in the ts-sdk profile), so against a server
/// that sends no keep-alives (1.29, or the family's silent tool) the client drops its own
/// standalone stream every 5 minutes and opens
/// it again; no balancer is needed. A call's stream is cut the same way, and resumed; when the
/// resumed stream is cut again before an id-bearing event, the client forgets its cursor
/// (typescript-sdk#2499) and a 20-minute call never resolves. With keep-alives the stream is
/// never silent that long. Trace: `traces/field/typescript-sdk-1211/`.
fn typescript_sdk_1211(keepalive: &str) -> Scenario {
    scenario(
        "ts-sdk",
        "ts-sdk-1.29",
        "long-tool",
        &[
            ("server.keepalive", keepalive),
            ("lb.idle_timeout", "none"),
            ("tool.duration", "20m"),
            ("tool.idempotent", "true"),
            // A host's long request timeout (the SDK's 60 s would end the call first).
            ("client.request_timeout", "30m"),
            ("run.reproduces", "https://github.com/modelcontextprotocol/typescript-sdk/issues/1211"),
        ],
    )
}

/// The client's own give-ups of a silent body, and the GETs that followed them.
fn body_timeouts(outcome: &RunOutcome) -> Vec<u64> {
    outcome
        .trace
        .steps
        .iter()
        .filter_map(|s| match &s.kind {
            StepKind::ClientTimedOut { silent_us, head: false, .. } => Some(*silent_us),
            _ => None,
        })
        .collect()
}

#[test]
fn typescript_sdk_1211_node_fetch_drops_a_silent_stream_every_five_minutes() {
    let silent = typescript_sdk_1211("none");
    for seed in SEEDS {
        let outcome = run_ok(&silent, seed);
        let replay = common::replay(&silent, seed);
        let cuts = body_timeouts(&outcome);
        // Twenty minutes of a silent tool: its POST stream and the standalone stream, each cut
        // every 5 minutes by the client itself.
        assert!(cuts.len() >= 4 && cuts.iter().all(|us| *us == 300_000_000), "{cuts:?}; {replay}");
        assert!(violated(&outcome).contains("every-call-resolves"), "{}{replay}", verdict(&outcome));
        assert!(forgot_cursor(&outcome), "the resumed stream re-attached without its id; {replay}");
    }
    // A keep-alive comment every 15 s (TypeScript 1.32.2's server sends them): nothing is ever
    // silent 5 minutes.
    let kept_alive = typescript_sdk_1211("15s");
    for seed in SEEDS {
        let outcome = run_ok(&kept_alive, seed);
        let replay = common::replay(&kept_alive, seed);
        assert!(body_timeouts(&outcome).is_empty(), "{replay}");
        assert!(outcome.violations.is_empty(), "{}{replay}", verdict(&outcome));
    }
}

/// modelcontextprotocol/typescript-sdk#2098: behind a proxy that cuts the notification stream
/// (client side only, so the server still holds the old `GET` and refuses the new one 409), the
/// TypeScript client spends its two retries, gives the standalone stream up and tells nobody
/// (`streamableHttp.js:151-158`); every notification after that is lost in silence, read as
/// condition 4. Before, a quiet run's whole tail passed as still in flight. Trace:
/// `traces/field/typescript-sdk-2098/`.
#[test]
fn typescript_sdk_2098_notifications_after_a_silent_standalone_give_up_are_lost() {
    let s = scenario(
        "ts-sdk",
        "ts-sdk",
        "standalone-notify",
        &[
            ("fault.partition", "none"),
            ("lb", "{ idle_timeout = \"1m\", max_lifetime = \"100s\", cut_mode = \"client-side\" }"),
            ("server.dead_stream", "on-write"),
            ("app.notifications", "10s,from=2m,until=10m"),
            ("run.reproduces", "https://github.com/modelcontextprotocol/typescript-sdk/issues/2098"),
        ],
    );
    for seed in SEEDS {
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        let gave_up = outcome.trace.steps.iter().position(|st| {
            matches!(&st.kind, StepKind::Decision { call: None, error: Some(e), .. } if e.contains("reconnect attempts exhausted"))
        });
        assert!(gave_up.is_some(), "the standalone stream was given up; {replay}");
        let i = outcome.violations.iter().position(|v| v.invariant.name() == "no-silent-event-loss");
        assert!(i.is_some(), "{}{replay}", verdict(&outcome));
        let why = i.and_then(|i| outcome.explained_by.get(i));
        assert_eq!(why, Some(&vec![mcpsim_model::oracle::conditions::Condition::ByClass]), "{replay}");
    }
}

/// modelcontextprotocol/typescript-sdk#943, #2560: the TypeScript server's example event store
/// recovers the standalone stream from an event id by `split('_')[0]`, which is empty for
/// `_GET_stream`: a resume after one cut replays nothing and leaves the connection open on no
/// stream (`unknown_id = "empty-open"`), and every later notification is dropped while the client
/// sits on a keep-alived stream. One cut is enough; the verdict names the server's lookup.
/// Trace: `traces/field/typescript-sdk-943/`.
#[test]
fn typescript_sdk_943_one_cut_parks_the_standalone_stream_on_no_stream() {
    let s = scenario(
        "ts-sdk",
        "ts-sdk",
        "standalone-notify",
        &[
            ("fault.partition", "none"),
            ("fault.reset", "100s"),
            ("app.notifications", "10s,until=5m"),
            ("run.reproduces", "https://github.com/modelcontextprotocol/typescript-sdk/issues/943"),
        ],
    );
    for seed in SEEDS {
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        let v = outcome.violations.iter().find(|v| v.invariant.name() == "no-silent-event-loss");
        assert!(v.is_some_and(|v| v.subject.contains("stream0")), "{}{replay}", verdict(&outcome));
        use mcpsim_model::oracle::conditions::Conditions;
        let judged = Conditions::judge(&outcome.trace);
        assert!(
            judged.breaches.iter().any(|b| b.is_bug()
                && b.detail.contains("its lookup found no stream of the session from that id")
                && b.rules == ["server.event_ids"]),
            "the server's lookup named, with its event ids; {replay}"
        );
    }
}

/// The conditions the judge found broken in a run.
fn breaches(outcome: &RunOutcome) -> Vec<Condition> {
    Conditions::judge(&outcome.trace).breaches.iter().map(|b| b.condition).collect()
}

/// modelcontextprotocol/python-sdk#3492 (also #2474, fastmcp#3179, and the Cloud Run loop of
/// python-sdk#2262): mcp 2.3.0 in stateless mode answers the standalone GET 200 and holds it open,
/// pings only (`server.sessionless_get = hold-open`); behind a 120 s request cap the TypeScript
/// client re-opens it at every cut, and the server's notifications, with no session to go by,
/// reach none of them: `no-silent-event-loss`, the server's bug. Refusing the GET with 405 (the
/// fix the issues ask for) tells the client there is no stream: nothing is lost. Trace:
/// `traces/field/python-sdk-3492/`.
fn python_sdk_3492(get: &str) -> Scenario {
    scenario(
        "ts-sdk",
        "py-sdk",
        "standalone-notify",
        &[
            ("server.sessions", "false"),
            ("server.event_store", "none"),
            ("lb", "{ idle_timeout = \"none\", max_lifetime = \"120s\" }"),
            ("fault.partition", "none"),
            ("app.notifications", "10s,count=30"),
            ("server.sessionless_get", get),
            ("run.reproduces", "https://github.com/modelcontextprotocol/python-sdk/issues/3492"),
        ],
    )
}

#[test]
fn python_sdk_3492_a_stateless_server_holds_the_get_open_and_no_notification_reaches_it() {
    for seed in SEEDS {
        let s = python_sdk_3492("hold-open");
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        assert!(violated(&outcome).contains("no-silent-event-loss"), "{}{replay}", verdict(&outcome));
        assert_eq!(breaches(&outcome), vec![Condition::ServerHeldOpen], "the server's rule, alone; {replay}");
        // The client re-opened its GET after each 120 s cut, and each was answered 200.
        let held = outcome
            .trace
            .steps
            .iter()
            .filter(|st| matches!(&st.kind, StepKind::Response { head, .. } if head.status.0 == 200 && head.body == mcpsim_model::http::Body::EventStream))
            .count();
        assert!(held >= 4, "the first GET and one after each cut, beside the call's stream: {held}; {replay}");
        let fixed = python_sdk_3492("refuse");
        let outcome = run_ok(&fixed, seed);
        let replay = common::replay(&fixed, seed);
        assert!(outcome.violations.is_empty(), "{}{replay}", verdict(&outcome));
    }
}

/// modelcontextprotocol/kotlin-sdk#715: a client-side cut leaves the server's standalone stream
/// registered (it learns of a dead stream only when a write fails); Ktor's `sse {}` has committed
/// 200 before the transport's 409 check, so every reconnect gets an event stream that ends at
/// once (`server.second_get = empty-closed`), and the client loops about once a second until the
/// notification at 120 s fails on the stale stream, and is lost: `bounded-reconnects` and
/// `no-silent-event-loss`, the server's bug. Evicting the stale stream on a new GET (the fix,
/// kotlin-sdk#716: `replace`) is clean. Trace: `traces/field/kotlin-sdk-715/`.
fn kotlin_sdk_715(second_get: &str) -> Scenario {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/field/kotlin-sdk-715/stale-get.toml");
    let sets = [
        ("lb", "{ idle_timeout = \"60s\", cut_mode = \"client-side\" }"),
        ("server.second_get", second_get),
        ("run.reproduces", "https://github.com/modelcontextprotocol/kotlin-sdk/issues/715"),
    ];
    scenario("ts-sdk", "ts-sdk", file.to_str().expect("a UTF-8 path"), &sets)
}

#[test]
fn kotlin_sdk_715_a_refusal_after_the_200_head_makes_the_client_loop_on_an_empty_stream() {
    for seed in SEEDS {
        let s = kotlin_sdk_715("empty-closed");
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        let broken = violated(&outcome);
        assert!(broken.contains("bounded-reconnects"), "{}{replay}", verdict(&outcome));
        assert!(broken.contains("no-silent-event-loss"), "{}{replay}", verdict(&outcome));
        assert!(breaches(&outcome).contains(&Condition::ServerRefusedAfterHead), "{replay}");
        let refused =
            outcome.trace.steps.iter().filter(|st| matches!(st.kind, StepKind::RefusedAfterHead { .. })).count();
        assert!(refused >= 30, "a minute of returns, each refused after its head: {refused}; {replay}");
        let fixed = kotlin_sdk_715("replace");
        let outcome = run_ok(&fixed, seed);
        let replay = common::replay(&fixed, seed);
        assert!(outcome.violations.is_empty(), "{}{replay}", verdict(&outcome));
    }
}

/// kaeawc/auto-mobile#1942 (and supercorp-ai/supergateway#126): the TypeScript transport answers
/// a second standalone GET 409 and reports it to `onerror`, and the application behind it tears
/// the whole session down (`server.second_get = end-session`), or kills its process
/// (`restart-process`): after a client-side idle cut of the silent GET, the reconnect ends the
/// session and cancels the 5-minute tool mid-run (`no-work-killed`), or loses it with the process
/// (`every-call-resolves`); either is the server's own act. A plain 409 (the fix: the conflict is
/// recoverable) leaves the tool running. Traces: `traces/field/auto-mobile-1942/`,
/// `traces/field/supergateway-126/`.
fn second_get_teardown(second_get: &str, report: &str) -> Scenario {
    scenario(
        "ts-sdk",
        "ts-sdk",
        "long-tool",
        &[
            ("server.dead_stream", "on-write"),
            ("lb", "{ idle_timeout = \"60s\", cut_mode = \"client-side\" }"),
            ("client.request_timeout", "none"),
            ("server.second_get", second_get),
            ("run.reproduces", report),
        ],
    )
}

#[test]
fn auto_mobile_1942_a_conflicting_get_that_ends_the_session_kills_the_running_tool() {
    let auto_mobile = "https://github.com/kaeawc/auto-mobile/issues/1942";
    let supergateway = "https://github.com/supercorp-ai/supergateway/issues/126";
    for seed in SEEDS {
        let ended_by = |outcome: &RunOutcome| -> Vec<String> {
            let steps = &outcome.trace.steps;
            steps
                .iter()
                .filter_map(|st| match &st.kind {
                    StepKind::SessionEnded { reason, .. } => Some(format!("{reason:?}")),
                    StepKind::ToolEnded { end, .. } => Some(format!("{end:?}")),
                    _ => None,
                })
                .collect()
        };
        let s = second_get_teardown("end-session", auto_mobile);
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        assert!(violated(&outcome).contains("no-work-killed"), "{}{replay}", verdict(&outcome));
        assert_eq!(ended_by(&outcome), vec!["Cancelled", "StreamConflict"], "{replay}");
        assert!(breaches(&outcome).contains(&Condition::ServerEnded), "{replay}");

        let s = second_get_teardown("restart-process", supergateway);
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        assert!(violated(&outcome).contains("every-call-resolves"), "{}{replay}", verdict(&outcome));
        assert_eq!(ended_by(&outcome), vec!["Lost", "ProcessExit"], "{replay}");
        assert!(breaches(&outcome).contains(&Condition::ServerEnded), "{replay}");

        let fixed = second_get_teardown("reject409", auto_mobile);
        let outcome = run_ok(&fixed, seed);
        let replay = common::replay(&fixed, seed);
        assert_eq!(ended_by(&outcome), vec!["Completed"], "the 409 alone leaves the tool running; {replay}");
        assert!(!violated(&outcome).contains("no-work-killed"), "{}{replay}", verdict(&outcome));
    }
}

/// modelcontextprotocol/python-sdk#1577 ("Client tool call hangs forever if server crashes") and
/// #3441 (1.x leaves a request unresolved when its SSE response stream ends without a response):
/// the 1.x client (`py-sdk-1.29`, mcp 1.29.0 `src/mcp/client/streamable_http.py:429-448`) returns
/// without a word to the waiting request when a call's stream ends unresumable (no event id) or
/// its reconnect attempts are spent, and `ClientSession` has no request timeout by default. A
/// server restart under a running tool (the resume meets 404 twice), and a reset of a POST stream
/// from a server without an event store (no id to resume from): the call is never resolved. The
/// 2.x client (`py-sdk`, mcp 2.3.0, #3047's `_resolve_abandoned_request`) resolves it at once.
/// Traces: `traces/field/python-sdk-1577/`.
fn python_sdk_1577(client: &str, crash: bool) -> Scenario {
    if crash {
        let url = "https://github.com/modelcontextprotocol/python-sdk/issues/1577";
        scenario(client, "py-sdk", "server-restart", &[("run.reproduces", url)])
    } else {
        let url = "https://github.com/modelcontextprotocol/python-sdk/issues/3441";
        let sets = [("server.event_store", "none"), ("fault.reset", "30s"), ("run.reproduces", url)];
        scenario(client, "py-sdk", "long-tool", &sets)
    }
}

/// Whether the application heard anything at all of call 0 (a result, an error, an unknown outcome).
fn call0_settled(outcome: &RunOutcome) -> bool {
    outcome.trace.steps.iter().any(|st| match &st.kind {
        StepKind::AppResult { call, .. }
        | StepKind::AppError { call, .. }
        | StepKind::AppUnknownOutcome { call, .. } => call.0 == 0,
        _ => false,
    })
}

#[test]
fn python_sdk_1577_the_1x_client_leaves_a_call_whose_stream_ended_unresolved_for_good() {
    for crash in [true, false] {
        let s = python_sdk_1577("py-sdk-1.29", crash);
        for seed in SEEDS {
            let outcome = run_ok(&s, seed);
            let replay = common::replay(&s, seed);
            assert!(violated(&outcome).contains("every-call-resolves"), "{}{replay}", verdict(&outcome));
            assert!(!call0_settled(&outcome), "the application heard of call0; {replay}");
            let judged = Conditions::judge(&outcome.trace);
            let untold =
                judged.breaches.iter().any(|b| b.condition == Condition::ByClass && b.detail.contains("left call0"));
            assert!(untold, "the judge names the client that left call0 pending: {judged:?}; {replay}");
        }
        // The 2.x client resolves the call at once (an error its application can act on).
        let fixed = python_sdk_1577("py-sdk", crash);
        for seed in SEEDS {
            let outcome = run_ok(&fixed, seed);
            let replay = common::replay(&fixed, seed);
            assert!(!violated(&outcome).contains("every-call-resolves"), "{}{replay}", verdict(&outcome));
            assert!(call0_settled(&outcome), "{replay}");
        }
    }
}

/// modelcontextprotocol/python-sdk#3257: a server that accepts the standalone `GET` and ends its
/// stream at once (here: `server.close_idle_standalone = 1ms`). The Python client sets its attempt
/// count back to 0 whenever a connected stream ends (mcp 1.29.0 `streamable_http.py:285-286`, the
/// same in 2.3.0), so `MAX_RECONNECTION_ATTEMPTS` never bounds the loop: the `GET` is reopened
/// every second for good, both releases (`bounded-reconnects`, read as the server's pacing: the
/// spec lets a server close a stream). Counting back only when an event arrived (`counter_reset
/// = on-event`, the report's fix) gives up after two empty streams. Trace:
/// `traces/field/python-sdk-3257/`.
fn python_sdk_3257(client: &str, counter_reset: Option<&str>) -> Scenario {
    let mut sets = vec![
        ("fault.partition", "none"),
        ("server.close_idle_standalone", "1ms"),
        ("app.notifications", "none"),
        ("run.reproduces", "https://github.com/modelcontextprotocol/python-sdk/issues/3257"),
    ];
    sets.extend(counter_reset.map(|c| ("client.reconnect.counter_reset", c)));
    scenario(client, "py-sdk", "standalone-notify", &sets)
}

#[test]
fn python_sdk_3257_a_get_stream_the_server_ends_at_once_is_reopened_every_second_for_good() {
    for client in ["py-sdk-1.29", "py-sdk"] {
        let s = python_sdk_3257(client, None);
        for seed in SEEDS {
            let outcome = run_ok(&s, seed);
            let replay = common::replay(&s, seed);
            let churn: Vec<_> =
                outcome.violations.iter().filter(|v| v.invariant.name() == "bounded-reconnects").collect();
            assert!(!churn.is_empty(), "{client}: {}{replay}", verdict(&outcome));
            assert!(churn[0].detail.contains("every 1.0"), "{client}: a one-second period: {}", churn[0].detail);
        }
        let fixed = python_sdk_3257(client, Some("on-event"));
        for seed in SEEDS {
            let outcome = run_ok(&fixed, seed);
            let replay = common::replay(&fixed, seed);
            assert!(!violated(&outcome).contains("bounded-reconnects"), "{client}: {}{replay}", verdict(&outcome));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The Go SDK (go-sdk v1.7.0): public reports reproduced with the go-sdk profile itself
// ---------------------------------------------------------------------------------------------

/// modelcontextprotocol/go-sdk#1175 (variant 1): a server that closes its standalone `GET`
/// stream whenever it has been idle a while, and never puts an id on it (the spec lets it do
/// both), makes the Go client reconnect without progress; after `MaxRetries` (5) such reconnects
/// `handleSSE` calls `fail()` on the whole connection ("exceeded 5 retries without progress"),
/// tearing down the healthy POST stream of a payment in flight: the application is told the call
/// failed though it ran. Here a TypeScript server closes the idle standalone stream after 30 s
/// while the payment reports progress every 10 s. Trace: `traces/field/go-sdk-1175/`.
fn go_sdk_1175(standalone_loss: &str) -> Scenario {
    scenario(
        "go-sdk",
        "ts-sdk",
        "long-tool",
        &[
            ("server.close_idle_standalone", "30s"),
            ("tool.event_interval", "10s"),
            ("client.standalone_loss", standalone_loss),
            ("run.reproduces", "https://github.com/modelcontextprotocol/go-sdk/issues/1175"),
        ],
    )
}

#[test]
fn go_sdk_1175_a_standalone_stream_without_progress_tears_down_the_healthy_post_stream() {
    let s = go_sdk_1175("close-transport");
    for seed in SEEDS {
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        assert!(violated(&outcome).contains("no-false-failure"), "{}{replay}", verdict(&outcome));
        let steps = &outcome.trace.steps;
        let closes = steps
            .iter()
            .filter(|st| matches!(&st.kind, StepKind::Decision { error: Some(e), .. } if e.starts_with("the transport closed")))
            .count();
        assert_eq!(closes, 1, "the transport closed once; {replay}");
        let failed = steps
            .iter()
            .any(|st| matches!(&st.kind, StepKind::AppError { error, .. } if error == "the transport closed"));
        assert!(failed, "the payment in flight failed with it; {replay}");
        let gets = steps
            .iter()
            .filter(|st| matches!(&st.kind, StepKind::Send { request, .. } if request.method == Method::Get))
            .count();
        assert_eq!(gets, 6, "the first GET and 5 reconnects without progress; {replay}");
    }
    // Losing only the stream, as the other SDKs do: the payment's result arrives.
    let survive = go_sdk_1175("survive");
    for seed in SEEDS {
        let outcome = run_ok(&survive, seed);
        assert!(outcome.violations.is_empty(), "{}{}", verdict(&outcome), common::replay(&survive, seed));
    }
}

/// modelcontextprotocol/go-sdk#1229 with the go-sdk profile itself (the application set a
/// list-changed handler, so `Connect` listens): the client probes its way to 2026-07-28 against
/// a dual-era Python server, a balancer cuts the quiet listen stream after 60 s, and the client
/// keeps its subscription flag: three changes are never heard and the application is never told.
/// (`tests/subscriptions.rs` shows the same rule over the stateless-2026 client.) Trace:
/// `traces/field/go-sdk-1229/no-silent-notification-loss--go-sdk--*`.
fn go_sdk_1229(on_abrupt_end: &str) -> Scenario {
    let family = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sim/scenarios/listen-notify.toml");
    scenario(
        "go-sdk",
        "py-sdk",
        &family.to_string_lossy(),
        &[
            ("client.subscriptions.listen", "true"),
            ("client.subscriptions.on_abrupt_end", on_abrupt_end),
            ("fault.partition", "none"),
            ("server.keepalive", "none"),
            ("app.notifications", "90s,count=3"),
            ("lb.idle_timeout", "60s"),
            ("run.reproduces", "https://github.com/modelcontextprotocol/go-sdk/issues/1229"),
        ],
    )
}

#[test]
fn go_sdk_1229_the_go_client_keeps_its_subscription_flag_after_an_idle_cut() {
    let s = go_sdk_1229("keep-flag");
    for seed in SEEDS {
        let outcome = run_ok(&s, seed);
        let replay = common::replay(&s, seed);
        assert!(violated(&outcome).contains("no-silent-notification-loss"), "{}{replay}", verdict(&outcome));
        let steps = &outcome.trace.steps;
        let modern = steps
            .iter()
            .any(|st| matches!(st.kind, StepKind::EraChosen { era: mcpsim_model::era::Era::Modern, probed: true }));
        assert!(modern, "the go client probed its way to 2026-07-28; {replay}");
        assert_eq!(steps.iter().filter(|st| matches!(st.kind, StepKind::ListenOpen { .. })).count(), 1, "{replay}");
        assert!(!steps.iter().any(|st| matches!(st.kind, StepKind::AppChange { .. })), "{replay}");
    }
    // Telling the application (python, rmcp): it listens again and hears the changes.
    let told = go_sdk_1229("tell-app");
    for seed in SEEDS {
        let outcome = run_ok(&told, seed);
        let replay = common::replay(&told, seed);
        assert!(!violated(&outcome).contains("no-silent-notification-loss"), "{}{replay}", verdict(&outcome));
    }
}
