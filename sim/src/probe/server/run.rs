//! `mcpsim probe server`: every scenario in order through the fault proxy, the keep-alive
//! measurement beside them, the verdicts, the fingerprint and the files.

use crate::probe::error::ProbeError;
use crate::probe::fingerprint::Fingerprint;
use crate::probe::proxy;
use crate::probe::recorder::http as client;
use crate::probe::server::{eras, keepalive, scenarios, tasks};
use crate::probe::target::{parse_target, Target};
use mcpsim_model::oracle::{check_all, Violation};
use mcpsim_model::trace::Trace;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The probe's inputs.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    /// The MCP endpoint, `http://host:port/path`.
    pub url: String,
    /// Probe a non-loopback host.
    pub allow_remote: bool,
    /// Where traces and the fingerprint go; nothing is written when `None`.
    pub out_dir: Option<PathBuf>,
    /// Run only these scenarios (`basics` always runs first).
    pub only: Vec<String>,
    /// Wall-clock bound on one scenario.
    pub scenario_timeout: Duration,
    /// How long the `idle-expiry` scenario leaves sessions idle (`--idle-bound`); it is skipped
    /// without one.
    pub idle_bound: Option<Duration>,
    /// How long to wait for the server to close an idle kept-alive connection
    /// (`keep_alive_timeout`, measured beside the scenarios); not measured when `None`.
    pub keep_alive_bound: Option<Duration>,
    /// The server's own tool for the long call, when it lacks the probe tools (`--tool`).
    pub tool: Option<scenarios::UserTool>,
    /// Ask which protocol eras the server serves (`eras`), after the scenarios.
    pub eras: bool,
}

impl ProbeOptions {
    /// Every scenario against `url`, nothing written, 90 s per scenario, the keep-alive timeout
    /// measured up to [`keepalive::KEEP_ALIVE_BOUND`].
    pub fn new(url: &str) -> Self {
        ProbeOptions {
            url: url.to_string(),
            allow_remote: false,
            out_dir: None,
            only: Vec::new(),
            scenario_timeout: Duration::from_secs(90),
            idle_bound: None,
            keep_alive_bound: Some(keepalive::KEEP_ALIVE_BOUND),
            tool: None,
            eras: true,
        }
    }
}

/// One scenario's verdict.
#[derive(Debug)]
pub struct ScenarioReport {
    /// The scenario's name (one of `scenarios::SCENARIOS`).
    pub name: &'static str,
    /// Its recorded trace, judged (none when it was skipped).
    pub trace: Option<Trace>,
    /// What the oracles found in the trace.
    pub violations: Vec<Violation>,
    /// Why it did not run, if it did not.
    pub skipped: Option<String>,
    /// What the script observed, for the verdict table.
    pub notes: Vec<String>,
    /// Where its trace was written.
    pub trace_file: Option<PathBuf>,
}

/// The whole probe's result.
#[derive(Debug)]
pub struct ProbeReport {
    /// The server probed.
    pub target: Target,
    /// Each scenario's verdict, in run order.
    pub scenarios: Vec<ScenarioReport>,
    /// The fields the run decided.
    pub fingerprint: Fingerprint,
    /// The fingerprint as a server profile TOML.
    pub profile_toml: String,
    /// Where the profile was written.
    pub profile_file: Option<PathBuf>,
    /// What the fault proxy did, in order.
    pub proxy_log: Vec<proxy::ProxyEvent>,
    /// Which eras the server serves and how it answered each modern request (none when not
    /// asked).
    pub eras: Option<eras::EraReport>,
    /// What the task probe saw (none when the server lists no `probe_task` or serves no modern
    /// request).
    pub tasks: Option<Result<tasks::TaskReport, String>>,
}

/// Probes a server: every scenario in order, each bounded by `scenario_timeout`. Builds its own
/// (real, current-thread) tokio runtime; call it from outside any runtime.
pub fn probe_server(opts: &ProbeOptions) -> Result<ProbeReport, ProbeError> {
    let target = parse_target(&opts.url, opts.allow_remote)?;
    for name in &opts.only {
        if !scenarios::SCENARIOS.contains(&name.as_str()) {
            return Err(ProbeError::UnknownScenario { name: name.clone(), known: scenarios::SCENARIOS.join(", ") });
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ProbeError::Io { path: "tokio runtime".into(), problem: e.to_string() })?;
    rt.block_on(probe_async(opts, target))
}

/// The async body of [`probe_server`], for callers already inside a real tokio runtime.
pub async fn probe_async(opts: &ProbeOptions, target: Target) -> Result<ProbeReport, ProbeError> {
    let proxy = Arc::new(
        proxy::Proxy::start(target.addr)
            .await
            .map_err(|e| ProbeError::Io { path: "proxy".into(), problem: e.to_string() })?,
    );
    let via = client::Endpoint { addr: proxy.addr, host: target.host.clone(), path: target.path.clone() };
    let direct = client::Endpoint { addr: target.addr, host: target.host.clone(), path: target.path.clone() };
    let tag = format!(
        "mcpsim{}",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    );
    // The keep-alive timeout is timed on its own direct connection while the scenarios run.
    let keep_alive = opts.keep_alive_bound.map(|bound| {
        let direct = direct.clone();
        tokio::spawn(async move { keepalive::measure(&direct, bound).await })
    });
    let mut ctx = scenarios::Ctx::new(via, direct, proxy.clone(), tag);
    ctx.idle_bound = opts.idle_bound;
    ctx.user_tool = opts.tool.clone();
    let mut reports = Vec::new();
    // A server whose legacy `initialize` fails but that serves the modern era: the era probe's
    // answers and why every scenario (2025-11-25) is skipped.
    let mut modern_only: Option<(String, eras::EraReport)> = None;
    for name in scenarios::SCENARIOS {
        if *name != "basics" && !opts.only.is_empty() && !opts.only.iter().any(|o| o == name) {
            continue;
        }
        if let Some((why, _)) = &modern_only {
            reports.push(skipped_report(name, why.clone()));
            continue;
        }
        let outcome = match tokio::time::timeout(opts.scenario_timeout, scenarios::run(&ctx, name)).await {
            Ok(Ok(o)) => o,
            // Without a completed `initialize` nothing was reached (no field, no file), unless
            // the server answers the modern era.
            Ok(Err(e)) if *name == "basics" => {
                let report = match opts.eras {
                    true => eras::probe(&ctx.direct, false, "", |_k: String| async { None }).await,
                    false => eras::EraReport::default(),
                };
                if !eras::serves_modern(&report) {
                    return Err(ProbeError::Unreachable { url: opts.url.clone(), why: e.to_string() });
                }
                let why = format!(
                    "the legacy initialize failed ({e}) and server/discover answered a result: the server serves only the 2026-07-28 era; the scenarios speak 2025-11-25"
                );
                reports.push(skipped_report(name, why.clone()));
                modern_only = Some((why, report));
                continue;
            }
            Ok(Err(e)) => {
                scenarios::Outcome { name, trace: None, skipped: Some(format!("failed: {e}")), notes: vec![] }
            }
            Err(_) if *name == "basics" => {
                return Err(ProbeError::Unreachable {
                    url: opts.url.clone(),
                    why: format!("basics timed out after {:?}", opts.scenario_timeout),
                })
            }
            Err(_) => scenarios::Outcome {
                name,
                trace: None,
                skipped: Some(format!("timed out after {:?}", opts.scenario_timeout)),
                notes: vec![],
            },
        };
        // Let whatever the scenario cut settle before the next one starts.
        proxy.apply(&proxy::Toxic::Reset);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut trace = outcome.trace;
        let violations = trace.as_ref().map(check_all).unwrap_or_default();
        if let Some(t) = &mut trace {
            let records = mcpsim_model::oracle::conditions::violation_records(t, &violations);
            t.finish(records);
        }
        reports.push(ScenarioReport {
            name: outcome.name,
            trace,
            violations,
            skipped: outcome.skipped,
            notes: outcome.notes,
            trace_file: None,
        });
    }
    // The eras, on connections of their own straight to the server (no fault in between).
    let eras = if let Some((why, report)) = modern_only {
        let mut fp = ctx.fp();
        fp.decide("sessions", "false", format!("a modern-only server has no sessions: {why}"));
        eras::decide(&mut fp, false, &report);
        Some(report)
    } else if opts.eras {
        let ctx_ref = &ctx;
        let tools = ctx.has_tools.load(std::sync::atomic::Ordering::Relaxed);
        let key = format!("{}-era", ctx.run_tag);
        let report =
            eras::probe(&ctx.direct, tools, &key, move |k: String| async move { ctx_ref.count(&k).await }).await;
        let legacy = ctx.fp().value("sessions").is_some();
        eras::decide(&mut ctx.fp(), legacy, &report);
        Some(report)
    } else {
        None
    };
    // The task store, through the server's probe_task (modern era, Tasks extension declared).
    let task_report = match &eras {
        Some(e) if eras::serves_modern(e) => {
            let ctx_ref = &ctx;
            let key = format!("{}-task", ctx.run_tag);
            tasks::probe(&ctx.direct, &key, move |k: String| async move { ctx_ref.count(&k).await }).await
        }
        _ => None,
    };
    if opts.eras {
        tasks::decide(&mut ctx.fp(), task_report.as_ref());
    }
    if let Some(task) = keep_alive {
        let measured = task.await.unwrap_or_else(|e| Err(ProbeError::Protocol(format!("keep-alive measurement: {e}"))));
        keepalive::decide(&mut ctx.fp(), measured);
    }
    let fingerprint = ctx.fp().clone();
    let name = format!("probed-{}", target.host.replace([':', '[', ']'], "-"));
    let header = vec![
        format!("mcpsim server profile fingerprinted by `mcpsim probe server --url {}`", opts.url),
        format!("recorded from a real run (wall clock), mcpsim {}", env!("CARGO_PKG_VERSION")),
        "Each field's comment is the observation that decided it; undetermined fields default to `extends`.".into(),
    ];
    let profile_toml = fingerprint.to_toml(&name, &header);
    let mut report = ProbeReport {
        target,
        scenarios: reports,
        fingerprint,
        profile_toml,
        profile_file: None,
        proxy_log: proxy.log(),
        eras,
        tasks: task_report,
    };
    if let Some(dir) = &opts.out_dir {
        write_files(dir, &mut report)?;
    }
    Ok(report)
}

/// A scenario that did not run, and why.
fn skipped_report(name: &'static str, why: String) -> ScenarioReport {
    ScenarioReport { name, trace: None, violations: vec![], skipped: Some(why), notes: vec![], trace_file: None }
}

fn write_files(dir: &std::path::Path, report: &mut ProbeReport) -> Result<(), ProbeError> {
    let io = |path: &std::path::Path, e: std::io::Error| ProbeError::Io {
        path: path.display().to_string(),
        problem: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    for s in &mut report.scenarios {
        if let Some(t) = &s.trace {
            let path = dir.join(format!("probe-{}.jsonl", s.name));
            std::fs::write(&path, t.to_jsonl()).map_err(|e| io(&path, e))?;
            s.trace_file = Some(path);
        }
    }
    let path = dir.join("server-profile.toml");
    std::fs::write(&path, &report.profile_toml).map_err(|e| io(&path, e))?;
    report.profile_file = Some(path);
    Ok(())
}

/// Reads a written fingerprint back as mcpsim reads any server profile file (`extends` resolved,
/// every field checked).
pub fn read_profile(path: &std::path::Path) -> Result<mcpsim_model::config::ServerPolicy, String> {
    crate::scenario::profile_files::server(&path.display().to_string()).map_err(|e| e.to_string())
}

/// The table of verdicts, one line per scenario.
pub fn verdict_table(report: &ProbeReport) -> String {
    // Notes and violations quote the server (event ids, names): control characters escaped.
    let esc = |s: &str| crate::error::escape(s);
    let mut out = format!("probe of {} ({})\n", report.target.host, esc(&report.target.path));
    out.push_str(&format!("{:<24} {:<10} {}\n", "scenario", "verdict", "invariants broken / notes"));
    for s in &report.scenarios {
        let (verdict, detail) = match (&s.skipped, s.violations.is_empty()) {
            (Some(why), _) => ("skipped", why.clone()),
            (None, true) => ("ok", s.notes.join("; ")),
            (None, false) => {
                let mut names: Vec<&str> = s.violations.iter().map(|v| v.invariant.name()).collect();
                names.dedup();
                ("VIOLATED", format!("{} — {}", names.join(", "), s.notes.join("; ")))
            }
        };
        out.push_str(&format!("{:<24} {:<10} {}\n", s.name, verdict, esc(&detail)));
        for v in &s.violations {
            out.push_str(&format!(
                "{:<24} {:<10}   {} at {}: {} — {}\n",
                "",
                "",
                v.invariant,
                v.at,
                esc(&v.subject.to_string()),
                esc(&v.detail.to_string())
            ));
        }
    }
    if let Some(eras) = &report.eras {
        out.push_str(&format!("{:<24} {}\n", "era request", "answer (2026-07-28 unless named)"));
        for s in &eras.seen {
            let detail = if s.detail.is_empty() { String::new() } else { format!(" ({})", s.detail) };
            out.push_str(&format!("{:<24} {}{}\n", s.probe.name(), s.short(), esc(&detail)));
        }
        match &eras.cut {
            Some(Ok(c)) => out.push_str(&format!(
                "{:<24} {} (started {}, completed {})\n",
                "modern call cut",
                if c.cancelled() { "cancelled" } else { "ran on" },
                c.started,
                c.completed
            )),
            Some(Err(why)) => out.push_str(&format!("{:<24} not made: {}\n", "modern call cut", esc(why))),
            None => {}
        }
    }
    match &report.tasks {
        Some(Ok(t)) => out.push_str(&format!(
            "{:<24} default ttlMs {:?}, pollIntervalMs {:?}; ttl 1.5 s, 3 s of work: {}, then {}; counted {:?}\n",
            "task probe",
            t.default_ttl_ms,
            t.default_poll_ms,
            esc(&t.before_ttl.short()),
            esc(&t.after_ttl.short()),
            t.count
        )),
        Some(Err(why)) => out.push_str(&format!("{:<24} failed: {}\n", "task probe", esc(why))),
        None => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A modern-only server (the 2026-07-28 spec's answers, `stateless-2026`): `server/discover`
    /// and other modern POSTs served, the legacy `initialize` (no version header) 400 `-32020`,
    /// GET 405. Answers every connection once, with `Connection: close`.
    fn modern_only_server() -> std::net::SocketAddr {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for mut c in l.incoming().flatten().take(60) {
                let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break Some(p);
                    }
                    match c.read(&mut chunk) {
                        Ok(0) | Err(_) => break None,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                };
                let Some(head_end) = head_end else { continue };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                let header = |name: &str| {
                    head.lines().find_map(|l| l.strip_prefix(&format!("{name}:")).map(|v| v.trim().to_string()))
                };
                let len: usize = header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
                while buf.len() < head_end + 4 + len {
                    match c.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let body: serde_json::Value =
                    serde_json::from_slice(&buf[(head_end + 4).min(buf.len())..]).unwrap_or_default();
                let id = body.get("id").cloned().unwrap_or(serde_json::Value::Null);
                let meta =
                    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str().map(str::to_string);
                let version = header("mcp-protocol-version");
                let error = |code: i64| serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "refused"}});
                let (status, answer) = if head.starts_with("get") || head.starts_with("delete") {
                    (405, None)
                } else {
                    match (version.as_deref(), meta.as_deref()) {
                        (Some(h), Some(m)) if h != m => (400, Some(error(-32020))),
                        (Some("2026-07-28"), _) => {
                            let result = match body["method"].as_str() {
                                Some("server/discover") => {
                                    serde_json::json!({"supportedVersions": ["2026-07-28"], "capabilities": {}})
                                }
                                _ => serde_json::json!({"tools": []}),
                            };
                            (200, Some(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result})))
                        }
                        (Some(_), _) => (400, Some(error(-32022))),
                        (None, _) => (400, Some(error(-32020))),
                    }
                };
                let body = answer.map(|v| v.to_string()).unwrap_or_default();
                let reason = match status {
                    200 => "OK",
                    405 => "Method Not Allowed",
                    _ => "Bad Request",
                };
                let _ = write!(
                    c,
                    "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        addr
    }

    /// A server that refuses the legacy handshake but serves the modern era is no unreachable
    /// one: its eras are decided (modern only, no sessions) and every scenario says why it is
    /// skipped; its answers are the model's for the `stateless-2026` profile.
    #[test]
    fn a_modern_only_server_is_probed_for_its_era_and_the_scenarios_are_skipped() {
        let addr = modern_only_server();
        let mut opts = ProbeOptions::new(&format!("http://{addr}/mcp"));
        opts.keep_alive_bound = None;
        let report = probe_server(&opts).expect("a modern-only server is reached");
        let fp = &report.fingerprint;
        assert_eq!(fp.value("eras"), Some(r#"["2026-07-28"]"#), "{}", verdict_table(&report));
        assert_eq!(fp.value("sessions"), Some("false"));
        assert_eq!(fp.value("modern_session"), Some("\"sessionless\""));
        assert!(report
            .scenarios
            .iter()
            .all(|s| s.skipped.as_deref().is_some_and(|w| w.contains("only the 2026-07-28 era"))));
        let policy = mcpsim_model::profiles::server("stateless-2026").expect("built-in");
        let set = mcpsim_model::era::served_eras(policy.eras.as_deref(), policy.sessions);
        for seen in &report.eras.as_ref().expect("asked").seen {
            let want = eras::expected(set, policy.modern_session, policy.sessions, seen.probe).expect("an era rule");
            assert!(want.matches(seen), "{}: {} vs the model's {}", seen.probe.name(), seen.short(), want.short());
        }
        let compared = fp.compare(&policy);
        for field in ["eras", "sessions", "modern_session"] {
            let row = compared.iter().find(|(f, _, _)| f == field).expect("compared");
            assert_eq!(row.1, row.2, "{field}");
        }
    }

    /// Real tokio sockets and the wall clock work in this crate's `--cfg madsim` build.
    #[test]
    fn real_tokio_works_outside_a_simulation() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let a = l.local_addr().unwrap();
            let t0 = std::time::Instant::now();
            let srv = tokio::spawn(async move {
                let (mut s, _) = l.accept().await.unwrap();
                s.write_all(b"hi").await.unwrap();
            });
            let mut c = tokio::net::TcpStream::connect(a).await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            let mut b = Vec::new();
            c.read_to_end(&mut b).await.unwrap();
            srv.await.unwrap();
            assert_eq!(b, b"hi");
            assert!(t0.elapsed() >= Duration::from_millis(50));
            let now =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
            assert!(now > 1_700_000_000, "the wall clock, not madsim's 2022 simulated date: {now}");
        });
    }
}
