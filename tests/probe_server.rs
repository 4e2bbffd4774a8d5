//! The probe against loopback stand-in servers of known behaviour: its fingerprint must decide
//! those behaviours, and the oracles must judge its traces.

use mcpsim::probe::standin::{probe_standin, StandinConfig, StandinUnknown};
use mcpsim::probe::{verdict_table, ProbeReport};

fn field<'a>(r: &'a ProbeReport, name: &str) -> Option<&'a str> {
    r.fingerprint.value(name)
}

fn show(r: &ProbeReport) -> String {
    format!("{}\n{}", verdict_table(r), r.profile_toml)
}

#[test]
fn a_410_server_and_an_empty_200_server_are_told_apart() {
    let gone = probe_standin(
        StandinConfig { unknown_id: StandinUnknown::Gone410, ..Default::default() },
        &["made-up-id", "unknown-session"],
    )
    .expect("probe runs");
    assert_eq!(field(&gone, "unknown_id"), Some("\"gone410\""), "{}", show(&gone));
    assert_eq!(field(&gone, "event_ids"), Some("\"reference\""), "{}", show(&gone));
    assert_eq!(field(&gone, "delete_unknown_status"), Some("404"), "{}", show(&gone));
    assert_eq!(field(&gone, "priming.post"), Some("true"), "{}", show(&gone));
    assert_eq!(field(&gone, "retry_ms"), Some("1000"), "{}", show(&gone));
    // The stand-in answers every request with `Connection: close`: it keeps no idle connection.
    assert_eq!(field(&gone, "keep_alive_timeout"), Some("\"0s\""), "{}", show(&gone));

    let closed = probe_standin(
        StandinConfig { unknown_id: StandinUnknown::EmptyClosed, priming: false, retry_ms: None, ..Default::default() },
        &["made-up-id"],
    )
    .expect("probe runs");
    assert_eq!(field(&closed, "unknown_id"), Some("\"empty-closed\""), "{}", show(&closed));
    assert_eq!(field(&closed, "priming.post"), Some("false"), "{}", show(&closed));
    assert_eq!(field(&closed, "retry_ms"), None, "{}", show(&closed));

    let open =
        probe_standin(StandinConfig { unknown_id: StandinUnknown::EmptyOpen, ..Default::default() }, &["made-up-id"])
            .expect("probe runs");
    assert_eq!(field(&open, "unknown_id"), Some("\"empty-open\""), "{}", show(&open));
}

#[test]
fn replay_rule_delete_rule_and_second_get_are_decided() {
    let a = probe_standin(
        StandinConfig { replay_from: false, delete_cancels: true, second_get_409: true, ..Default::default() },
        &["cut-and-resume", "resume-after-completion", "delete-during-tool", "cross-session-id"],
    )
    .expect("probe runs");
    assert_eq!(field(&a, "replay"), Some("\"after\""), "{}", show(&a));
    assert_eq!(field(&a, "delete_running_tool"), Some("\"cancel\""), "{}", show(&a));
    assert_eq!(field(&a, "delete_status"), Some("200"), "{}", show(&a));
    assert_eq!(field(&a, "disconnect_cancels"), Some("false"), "{}", show(&a));
    assert_eq!(field(&a, "retention.drop_on_response"), Some("false"), "{}", show(&a));
    assert_eq!(field(&a, "store"), Some("\"per-session\""), "{}", show(&a));
    let cut = a.scenarios.iter().find(|s| s.name == "cut-and-resume").expect("ran");
    assert!(cut.violations.is_empty(), "{}", show(&a));
    assert_eq!(field(&a, "after_replay"), Some("\"live\""), "{}", show(&a));

    let b = probe_standin(
        StandinConfig { replay_from: true, delete_cancels: false, ..Default::default() },
        &["cut-and-resume", "delete-during-tool"],
    )
    .expect("probe runs");
    assert_eq!(field(&b, "replay"), Some("\"from\""), "{}", show(&b));
    assert_eq!(field(&b, "delete_running_tool"), Some("\"run-on\""), "{}", show(&b));
    // Replaying from the id hands the application that event twice: the oracles say so.
    let cut = b.scenarios.iter().find(|s| s.name == "cut-and-resume").expect("ran");
    assert!(cut.violations.iter().any(|v| v.invariant == "no-duplicate-delivery"), "{}", show(&b));
}

#[test]
fn a_store_that_replays_and_then_goes_quiet_is_decided_as_such_and_judged() {
    let r =
        probe_standin(StandinConfig { quiet_after_replay: true, ..Default::default() }, &["basics", "cut-and-resume"])
            .expect("probe runs");
    assert_eq!(field(&r, "after_replay"), Some("\"quiet\""), "{}", show(&r));
    assert_eq!(field(&r, "response_mode"), Some("\"sse\""), "{}", show(&r));
    // The call whose resumed stream went quiet never resolves: the oracles say so.
    let cut = r.scenarios.iter().find(|s| s.name == "cut-and-resume").expect("ran");
    assert!(cut.violations.iter().any(|v| v.invariant == "every-call-resolves"), "{}", show(&r));
}

#[test]
fn a_bounded_buffer_that_resumes_from_its_oldest_event_is_measured_and_judged() {
    let r = probe_standin(
        StandinConfig { retention: Some(40), evicted_from_oldest: true, ..Default::default() },
        &["cut-and-resume", "overrun"],
    )
    .expect("probe runs");
    assert_eq!(field(&r, "retention.max_events"), Some("40"), "{}", show(&r));
    assert_eq!(field(&r, "evicted_id"), Some("\"from-oldest\""), "{}", show(&r));
    let overrun = r.scenarios.iter().find(|s| s.name == "overrun").expect("ran");
    assert!(overrun.violations.iter().any(|v| v.invariant == "no-silent-event-loss"), "{}", show(&r));
}

#[test]
fn an_evicted_id_answered_with_an_empty_stream_is_told_from_a_dropped_finished_stream() {
    let r = probe_standin(
        StandinConfig { retention: Some(40), unknown_id: StandinUnknown::EmptyClosed, ..Default::default() },
        &["cut-and-resume", "resume-after-completion", "overrun"],
    )
    .expect("probe runs");
    assert_eq!(field(&r, "retention.drop_on_response"), Some("false"), "{}", show(&r));
    assert_eq!(field(&r, "evicted_id"), Some("\"empty-closed\""), "{}", show(&r));
    // Measured on a finished stream: the stand-in keeps 40 events but still answers the id just
    // before the oldest of them (nothing after it is missing), which is how a store of 41 that
    // needs the id itself answers: the count under which the simulator behaves alike.
    assert_eq!(field(&r, "retention.max_events"), Some("41"), "{}", show(&r));
}

/// A scenario that returns early must not leave its faults behind: `overrun` against a server
/// whose events carry no ids returns before its 1 s..10 s partition ends; `idle-expiry`, next,
/// must still reach the server (before the fault guard its handshakes were refused).
#[test]
fn an_early_return_ends_the_scenarios_faults() {
    let r = mcpsim::probe::standin::probe_standin_with(
        StandinConfig { event_store: false, ..Default::default() },
        &["overrun", "idle-expiry"],
        |o| o.idle_bound = Some(std::time::Duration::from_secs(2)),
    )
    .expect("probe runs");
    let overrun = r.scenarios.iter().find(|s| s.name == "overrun").expect("ran");
    assert!(overrun.skipped.is_none(), "{}", show(&r));
    let idle = r.scenarios.iter().find(|s| s.name == "idle-expiry").expect("ran");
    assert!(idle.skipped.is_none(), "idle-expiry after overrun's early exit: {}", show(&r));
    assert!(r.proxy_log.iter().any(|e| e.what.starts_with("healed")), "{:?}", r.proxy_log);
}

/// Connection refused, or an HTTP server that is no MCP server: an error, no fingerprint.
#[test]
fn a_probe_that_reached_nothing_fails_and_decides_nothing() {
    use mcpsim::probe::{probe_server, ProbeError, ProbeOptions};
    // A port with nobody listening (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut opts = ProbeOptions::new(&format!("http://127.0.0.1:{port}/mcp"));
    opts.keep_alive_bound = None;
    // Removed when dropped (at the end of the test, also when it panics); `out` is the probe's to make.
    let tmp = tempfile::Builder::new().prefix("mcpsim-probe-nothing-").tempdir().expect("a writable temp dir");
    let dir = tmp.path().join("out");
    opts.out_dir = Some(dir.clone());
    match probe_server(&opts) {
        Err(e @ ProbeError::Unreachable { .. }) => assert_eq!(e.to_string().lines().count(), 1, "{e}"),
        other => panic!("a refused connection: {other:?}"),
    }
    assert!(!dir.join("server-profile.toml").exists(), "no profile from a failed exchange");
    // An HTTP server answering every request 200 with a text body.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut c in l.incoming().flatten().take(20) {
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let _ = c.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    let mut opts = ProbeOptions::new(&format!("http://{addr}/mcp"));
    opts.keep_alive_bound = None;
    match probe_server(&opts) {
        Err(ProbeError::Unreachable { why, .. }) => assert!(why.contains("not a JSON-RPC result"), "{why}"),
        other => panic!("garbage answers: {other:?}"),
    }
}

/// A hostile server: every `probe_work` answer is an endless event stream that opens with one
/// 2 MiB event, and every event id starts with an ESC sequence.
fn hostile_server() -> std::net::SocketAddr {
    use std::io::{BufRead, BufReader, Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in l.incoming().flatten().take(200) {
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn);
                let mut len = 0usize;
                let mut line = String::new();
                while r.read_line(&mut line).map(|n| n > 2).unwrap_or(false) {
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    line.clear();
                }
                let mut body = vec![0u8; len.min(1 << 20)];
                let _ = r.read_exact(&mut body);
                let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let mut c = r.into_inner();
                let json = |c: &mut std::net::TcpStream, extra: &str, v: serde_json::Value| {
                    let t = v.to_string();
                    let _ = write!(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{t}", t.len());
                };
                let id = v["id"].clone();
                match (v["method"].as_str(), v["params"]["name"].as_str()) {
                    (Some("initialize"), _) => json(
                        &mut c,
                        "Mcp-Session-Id: s1\r\n",
                        serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "\u{1b}[2Jhostile", "version": "0"}}}),
                    ),
                    (Some("tools/list"), _) => json(
                        &mut c,
                        "",
                        serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": "probe_work"}, {"name": "probe_count"}, {"name": "probe_notify"}]}}),
                    ),
                    (Some("tools/call"), Some("probe_count")) => json(
                        &mut c,
                        "",
                        serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "{\"count\":1,\"completed\":0}"}]}}),
                    ),
                    (Some("tools/call"), Some("probe_work")) => {
                        let _ = c.write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
                        );
                        let _ = write!(c, "id: \u{1b}[31m0\ndata: {}\n\n", "x".repeat(2 << 20));
                        for n in 1..10_000_000u64 {
                            let ev = format!("id: \u{1b}[31m{n}\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":{id},\"progress\":{n}}}}}\n\n");
                            if c.write_all(ev.as_bytes()).is_err() {
                                break;
                            }
                        }
                    }
                    (None, _) if len > 0 => {
                        let _ = c.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    }
                    _ => {
                        let _ = c.write_all(
                            b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        );
                    }
                }
            });
        }
    });
    addr
}

/// An endless stream, a 2 MiB event and ESC in every event id: the probe stops at its bounds,
/// says which with one line each, and escapes the server's control characters in its table and
/// its profile, which mcpsim reads back.
#[test]
fn a_hostile_server_is_bounded_and_its_control_characters_escaped() {
    use mcpsim::probe::{probe_server, ProbeOptions};
    let addr = hostile_server();
    // Removed when dropped (at the end of the test, also when it panics); `out` is the probe's to make.
    let tmp = tempfile::Builder::new().prefix("mcpsim-probe-hostile-").tempdir().expect("a writable temp dir");
    let dir = tmp.path().join("out");
    let mut opts = ProbeOptions::new(&format!("http://{addr}/mcp"));
    opts.only = vec!["basics".into()];
    opts.keep_alive_bound = None;
    opts.out_dir = Some(dir.clone());
    let r = probe_server(&opts).expect("probe runs");
    let table = verdict_table(&r);
    let basics = r.scenarios.iter().find(|s| s.name == "basics").expect("ran");
    let caps: Vec<&String> = basics.notes.iter().filter(|n| n.starts_with("cap: ")).collect();
    assert!(caps.iter().any(|n| n.contains("events in one scenario")), "{table}");
    assert!(caps.iter().any(|n| n.contains("an event over")), "{table}");
    assert!(!table.chars().any(|c| c.is_control() && c != '\n'), "{table:?}");
    assert!(!r.profile_toml.chars().any(|c| c.is_control() && c != '\n'), "{}", r.profile_toml);
    let profile = r.profile_file.as_ref().expect("written");
    mcpsim::probe::read_profile(profile).expect("mcpsim reads the profile back");
    let trace = basics.trace_file.as_ref().expect("written");
    let bytes = std::fs::metadata(trace).expect("trace").len();
    assert!(bytes < 32 << 20, "trace of {bytes} bytes");
}

/// A server without an event store (the Python SDK's and FastMCP's default): its events carry no
/// ids. They reached the application, so no event is judged lost; the fingerprint says
/// `event_store = "none"`, and how the server answers a resume it cannot honour.
#[test]
fn a_server_without_an_event_store_is_fingerprinted_and_judged_as_one() {
    let r =
        probe_standin(StandinConfig { event_store: false, ..Default::default() }, &["made-up-id"]).expect("probe runs");
    assert_eq!(field(&r, "event_store"), Some("\"none\""), "{}", show(&r));
    assert_eq!(field(&r, "resume_without_store"), Some("\"ignored\""), "{}", show(&r));
    assert_eq!(field(&r, "unknown_id"), None, "{}", show(&r));
    let basics = r.scenarios.iter().find(|s| s.name == "basics").expect("ran");
    assert!(basics.violations.is_empty(), "{}", show(&r));
    let steps = &basics.trace.as_ref().expect("traced").steps;
    let delivered =
        steps.iter().filter(|s| matches!(&s.kind, mcpsim_model::trace::StepKind::AppEvent { id: None, .. })).count();
    assert!(delivered >= 2, "{}", show(&r));
    // The same probe of a server with a store says `kept`.
    let kept = probe_standin(StandinConfig::default(), &["made-up-id"]).expect("probe runs");
    assert_eq!(field(&kept, "event_store"), Some("\"kept\""), "{}", show(&kept));
}

/// A server with only an ordinary tool (`slow_task`: 5 s, progress every 250 ms): named with
/// `--tool`, it runs every scenario its timing allows, and each other scenario says why not.
#[test]
fn a_server_without_the_probe_tools_gets_every_scenario_its_own_tool_allows() {
    use mcpsim::probe::server::scenarios::UserTool;
    let cfg = || StandinConfig { probe_tools: false, ..Default::default() };
    let r = mcpsim::probe::standin::probe_standin_with(cfg(), &[], |o| {
        o.tool = Some(UserTool { name: "slow_task".into(), args: serde_json::json!({}), duration: None });
        o.keep_alive_bound = None;
    })
    .expect("probe runs");
    let skipped = |name: &str| r.scenarios.iter().find(|s| s.name == name).and_then(|s| s.skipped.clone());
    for ran in ["basics", "unknown-session", "cut-and-resume", "made-up-id", "cross-session-id"] {
        assert_eq!(skipped(ran), None, "{ran}: {}", show(&r));
    }
    assert_eq!(field(&r, "replay"), Some("\"after\""), "{}", show(&r));
    assert_eq!(field(&r, "store"), Some("\"per-session\""), "{}", show(&r));
    let why = |name: &str| skipped(name).unwrap_or_else(|| panic!("{name} ran: {}", show(&r)));
    assert!(why("resume-after-completion").contains("at most 4 s"), "{}", show(&r));
    assert!(why("standalone").contains("probe_notify"), "{}", show(&r));
    assert!(why("overrun").contains("probe_work"), "{}", show(&r));
    assert!(why("delete-during-tool").contains("probe_count"), "{}", show(&r));
    // Without --tool the same server gets the three scenarios that need no tool, each other one
    // skipped with what it needs.
    let bare = probe_standin(cfg(), &["cut-and-resume", "standalone"]).expect("probe runs");
    let s = bare.scenarios.iter().find(|s| s.name == "cut-and-resume").expect("listed");
    assert!(s.skipped.as_deref().is_some_and(|w| w.contains("--tool")), "{}", show(&bare));
}
