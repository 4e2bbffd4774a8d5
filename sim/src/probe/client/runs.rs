//! `mcpsim probe client -- COMMAND...`: a real MCP client observed from the server side.
//!
//! Per probe run, mcpsim starts a stand-in server ([`crate::probe::standin`], no `retry:` field so the
//! client's own delays show), an HTTP-aware tap in front of it that logs every request and
//! injects the run's fault, and the fault proxy ([`crate::probe::proxy`]) in front of the tap. The tap
//! keeps a client connection open after an answer it can frame (`Content-Length`) and numbers
//! the TCP connections, so the runs also show whether the client reuses one (`http.keep_alive`). The
//! client command gets the proxy's URL in `MCPSIM_PROBE_URL` (and `MCPSIM_PROBE_DURATION_MS`,
//! `MCPSIM_PROBE_INTERVAL_MS`, `MCPSIM_PROBE_KEY`, as the fixture clients expect), runs until it
//! exits or the run's wall-clock limit, and is then killed (its own pid).
//!
//! Runs: `cut-resume` (the tool's POST stream is reset after its second event id; is it resumed
//! with `Last-Event-ID`?), `cut-refuse` (same cut, every resume of that stream is reset at once:
//! attempts and delays), `not-found` (the tool call gets 404: re-initialize? re-send? same session
//! id?), `empty-resume` (the first resume gets an empty 200 that ends: what comes next?),
//! `cut-before-id`, and `retry-short` / `retry-long` (the `cut-refuse` cut and refusals under a
//! stand-in whose priming event carries `retry:` 300 ms / 3 s: do its delays follow the field?),
//! and, opt-in ([`ClientProbeOptions::request_timeout_bound`]), `request-timeout` (the tool's
//! event stream opens and stays silent: when does the client give up on the call?).
//! What the server saw becomes a trace in the simulator's schema (`send` steps as received,
//! `session-created`, `side-effect` per `probe_work` POST, `fault`), judged by the oracles; the
//! decided fields become a `ClientPolicy` TOML profile.

use crate::probe::error::ProbeError;
use crate::probe::fingerprint::KnownFieldDifference;
use crate::probe::proxy::{Proxy, Toxic};
use crate::probe::recorder::rec::Rec;
use crate::probe::standin::{read_request, Standin, StandinConfig};
use mcpsim_model::http::{ClientMessage, Request, ToolCall};
use mcpsim_model::ids::{CallKey, ConnId, EventId, RequestId, SessionId};
use mcpsim_model::oracle::{check_all, Violation};
use mcpsim_model::trace::{Actor, SessionEndReason, StepKind, Trace};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Refused resumes, still growing apart and still coming, after which `max_attempts` is taken as
/// unlimited.
const UNLIMITED_AFTER: usize = 5;

/// `empty-resume` answers this many resumes empty: the gaps between them tell a graceful close
/// (a steady delay) from a failed attempt (the backoff's).
pub const EMPTY_RESUMES: u32 = 2;

/// The `retry:` of `retry-short`: below every fixture's own first backoff delay (1 s), so a client
/// whose delay is the field's shows 300 ms, one whose delay is at least its own backoff does not.
pub const RETRY_SHORT_MS: u64 = 300;
/// The `retry:` of `retry-long`: above a doubling backoff's second delay (rmcp: 2 s) and below
/// its third (4 s), so "at least the field" (3 s, then 4 s) differs from both "the field" (3 s,
/// 3 s) and "ignored" (2 s, 4 s).
pub const RETRY_LONG_MS: u64 = 3000;

/// Refused resumes after which a `retry-*` run ends (a second after the last): enough to see two
/// backoff delays past an immediate first attempt.
const RETRY_RESUMES: usize = 3;

/// The probe runs, in order (`retry-*` read `cut-refuse`'s delays, so they come after it).
pub const RUNS: &[&str] =
    &["cut-resume", "cut-refuse", "not-found", "empty-resume", "cut-before-id", "retry-short", "retry-long"];

/// Runs that run only when asked for, after [`RUNS`]: `request-timeout` waits up to its bound
/// ([`ClientProbeOptions::request_timeout_bound`]) after the tool call, over a minute to show
/// TypeScript's 60 s.
pub const OPT_IN_RUNS: &[&str] = &["request-timeout"];

/// The shortest `request-timeout` bound accepted.
pub const MIN_REQUEST_TIMEOUT_BOUND: Duration = Duration::from_secs(2);

/// The longest `request-timeout` bound accepted: below the stand-in's and the tap's 300 s cap
/// on a connection, and below the 300 s read timeouts of the Python SDK's httpx client
/// (mcp 2.3.0 `mcp/shared/_httpx_utils.py:14`) and of Node's fetch (undici's `bodyTimeout`),
/// which would end the silent stream themselves.
pub const MAX_REQUEST_TIMEOUT_BOUND: Duration = Duration::from_secs(240);

/// After the bound (or after the client's first sign of giving up), how long `request-timeout`
/// still watches: long enough for a DELETE or an exit that follows a cancel.
const REQUEST_TIMEOUT_GRACE: Duration = Duration::from_secs(1);

/// A `request-timeout` bound from the command line (`75s`), checked against
/// [`MIN_REQUEST_TIMEOUT_BOUND`]..=[`MAX_REQUEST_TIMEOUT_BOUND`]; the error is one line.
pub fn parse_request_timeout_bound(text: &str) -> Result<Duration, String> {
    let d = mcpsim_model::time::parse_duration(text).map_err(|e| format!("{text:?}: {e}"))?;
    check_request_timeout_bound(d).map(|()| d)
}

fn check_request_timeout_bound(d: Duration) -> Result<(), String> {
    if (MIN_REQUEST_TIMEOUT_BOUND..=MAX_REQUEST_TIMEOUT_BOUND).contains(&d) {
        Ok(())
    } else {
        Err(format!(
            "{} is outside {}..={}",
            mcpsim_model::time::format_duration(d),
            mcpsim_model::time::format_duration(MIN_REQUEST_TIMEOUT_BOUND),
            mcpsim_model::time::format_duration(MAX_REQUEST_TIMEOUT_BOUND)
        ))
    }
}

/// The inputs of `probe client`.
#[derive(Clone, Debug)]
pub struct ClientProbeOptions {
    /// The client command and its arguments.
    pub command: Vec<String>,
    /// Its working directory (inherited when `None`).
    pub cwd: Option<PathBuf>,
    /// Wall-clock limit of one run; the client is killed after it.
    pub run_limit: Duration,
    /// Wall-clock limit of the `cut-refuse` run (at least `run_limit`): long enough for a
    /// doubling backoff (rmcp: 0, 2, 4, 8, 16 s) to show five attempts. The run ends sooner once
    /// the client has been silent for twice its last delay and 3 s more (it gave up).
    pub refuse_limit: Duration,
    /// `MCPSIM_PROBE_DURATION_MS` / `MCPSIM_PROBE_INTERVAL_MS`.
    pub work: (u64, u64),
    /// Only these runs (all when empty).
    pub only: Vec<String>,
    /// Where traces and client-profile.toml go; nothing is written when `None`.
    pub out_dir: Option<PathBuf>,
    /// The profile's name.
    pub name: String,
    /// Adds the `request-timeout` run (opt-in, `None` by default): the tool's event stream
    /// opens and stays silent, and the run waits up to this long after the call for the client
    /// to give up on it. It costs about this much wall-clock time (less when the client gives up
    /// sooner).
    pub request_timeout_bound: Option<Duration>,
}

impl ClientProbeOptions {
    /// Every run of `command`, 20 s each, a 3 s tool ticking every 200 ms.
    pub fn new(command: Vec<String>) -> Self {
        ClientProbeOptions {
            command,
            cwd: None,
            run_limit: Duration::from_secs(20),
            refuse_limit: Duration::from_secs(36),
            work: (3000, 200),
            only: Vec::new(),
            out_dir: None,
            name: "probed-client".into(),
            request_timeout_bound: None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    CutResume,
    CutRefuse,
    NotFound,
    EmptyResume,
    CutBeforeId,
    /// `cut-refuse` under a stand-in that sends `retry:` this many ms.
    Retry(u64),
    /// The tool's event stream opens and stays silent (no fault).
    RequestTimeout,
}

impl Mode {
    /// Every resume of the cut stream is refused.
    fn refuses(self) -> bool {
        matches!(self, Mode::CutRefuse | Mode::Retry(_))
    }

    /// The `retry:` field the stand-in's events carry (`retry-*` only), in ms.
    fn retry_ms(self) -> Option<u64> {
        match self {
            Mode::Retry(ms) => Some(ms),
            _ => None,
        }
    }

    fn parse(name: &str) -> Option<Mode> {
        Some(match name {
            "cut-resume" => Mode::CutResume,
            "cut-refuse" => Mode::CutRefuse,
            "not-found" => Mode::NotFound,
            "empty-resume" => Mode::EmptyResume,
            "cut-before-id" => Mode::CutBeforeId,
            "retry-short" => Mode::Retry(RETRY_SHORT_MS),
            "retry-long" => Mode::Retry(RETRY_LONG_MS),
            "request-timeout" => Mode::RequestTimeout,
            _ => return None,
        })
    }
}

/// One request as the server side received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// Since the run started.
    pub at: Duration,
    /// `POST`, `GET`, `DELETE`.
    pub method: String,
    /// `Mcp-Session-Id`.
    pub session: Option<String>,
    /// `Last-Event-ID`.
    pub last_event_id: Option<String>,
    /// The JSON-RPC method of a POST.
    pub rpc: Option<String>,
    /// The tool of a `tools/call`.
    pub tool: Option<String>,
    /// The JSON-RPC id of a POSTed request.
    pub id: Option<u64>,
    /// The request id a `notifications/cancelled` names (`params.requestId`).
    pub cancels: Option<u64>,
    /// What the tap did: `forwarded`, `cut`, `refused`, `404`, `empty-200`.
    pub answer: String,
    /// The TCP connection it came on, numbered as the tap accepted them (from 1).
    pub tcp: u64,
    /// The complete answer the connection it came on had already carried (kept alive), e.g.
    /// `initialize: 200 application/json`; `None` on a new connection.
    pub reused_after: Option<String>,
}

struct TapState {
    mode: Mode,
    start: Instant,
    seen: Vec<Seen>,
    /// When the tool's POST stream was cut.
    cut_at: Option<Duration>,
    /// The last event id forwarded on the cut stream.
    cut_after: Option<String>,
    /// When the client closed the event stream answering its `probe_work` call (the first time).
    call_closed_at: Option<Duration>,
    work_posts: u32,
    resumes_answered: u32,
    /// Requests received (each request's `ConnId` in the trace: one per exchange).
    conns: u64,
    /// TCP connections the tap accepted.
    tcp_conns: u64,
    /// Complete framed answers after which the tap kept the connection for another request.
    kept_alive: u64,
    /// Those answers, each as `method: status content-type`.
    offered: Vec<String>,
    /// Requests for another path than the MCP endpoint (OAuth discovery's `/.well-known/...`):
    /// answered 404 and not counted as MCP requests; the first [`MAX_OTHER_LISTED`] listed.
    other: Vec<String>,
    other_count: u64,
}

/// The MCP endpoint's path on the tap (`MCPSIM_PROBE_URL`).
pub const MCP_PATH: &str = "/mcp";

const MAX_OTHER_LISTED: usize = 20;

type Tap = Arc<Mutex<TapState>>;

fn lock(t: &Tap) -> MutexGuard<'_, TapState> {
    t.lock().unwrap_or_else(|e| e.into_inner())
}

/// A decided field: its TOML literal and the observation that decided it.
pub type Decided = (String, String);

/// The decided fields by dotted name.
pub type Fields = BTreeMap<String, Decided>;

/// One run's result.
#[derive(Debug)]
pub struct ClientRun {
    /// The run's name (one of [`RUNS`]).
    pub name: &'static str,
    /// What the server side received, in order.
    pub seen: Vec<Seen>,
    /// TCP connections the client opened to the tap.
    pub tcp_connections: u64,
    /// Complete framed answers after which the tap kept the connection open for another request
    /// (the client's chances to reuse one).
    pub kept_alive: u64,
    /// Those answers, each as `method: status content-type` (as `Seen::reused_after` names them).
    pub offered: Vec<String>,
    /// Requests for other paths than the MCP endpoint (OAuth discovery), answered 404 and left
    /// out of `seen` and of every count: `METHOD path`, the first 20.
    pub other_requests: Vec<String>,
    /// How many there were.
    pub other_count: u64,
    /// When the tool's stream was cut.
    pub cut_at: Option<Duration>,
    /// The last event id the client had on the cut stream.
    pub cut_after: Option<String>,
    /// When the client closed the event stream answering its `probe_work` call, if it did before
    /// the run ended (a close by the kill at the end is not the client's; the stand-in never ends
    /// the stream first in `request-timeout`).
    pub call_closed_at: Option<Duration>,
    /// `request-timeout`'s bound on the wait after the call; `None` in the other runs.
    pub bound: Option<Duration>,
    /// The client's exit code (`None` when killed at the limit).
    pub exit: Option<i32>,
    /// When it exited, since the run started.
    pub exit_at: Option<Duration>,
    /// When the run ended (exit or the limit), since it started.
    pub ended_at: Duration,
    /// The client's stdout lines (the fixtures print JSON observations).
    pub output: Vec<String>,
    /// The judged trace.
    pub trace: Trace,
    /// What the oracles found.
    pub violations: Vec<Violation>,
    /// Where the trace was written.
    pub trace_file: Option<PathBuf>,
}

/// The whole client probe.
#[derive(Debug)]
pub struct ClientProbeReport {
    /// The runs, in order.
    pub runs: Vec<ClientRun>,
    /// Decided `ClientPolicy` fields: dotted name → (TOML literal, observation).
    pub fields: BTreeMap<String, (String, String)>,
    /// Fields left undetermined, with the reason.
    pub undetermined: Vec<(String, String)>,
    /// The profile file's text.
    pub profile_toml: String,
    /// Where it was written.
    pub profile_file: Option<PathBuf>,
}

fn reset(sock: TcpStream) {
    let _ = sock.set_zero_linger();
    drop(sock);
}

/// What became of the client's connection after one request.
enum Served {
    /// A complete, framed answer went back without `Connection: close`: the tap waits for the
    /// client's next request on the connection. What the answer was (`initialize: 200
    /// application/json`).
    KeptAlive(String),
    /// The answer ended with the connection (close-delimited, or `Connection: close`).
    Close,
    /// The connection is reset.
    Reset,
}

/// How long a kept-alive client connection may stay idle before the tap closes it (the SDK
/// clients' pools close theirs sooner: undici after 4 s).
pub const TAP_KEEP_ALIVE: Duration = Duration::from_secs(10);

/// Serves one client connection: a request at a time, each logged and either answered with the
/// run's fault or forwarded to the stand-in on a connection of its own. An answer the stand-in
/// frames (`Content-Length`, no event stream) goes back without its `Connection: close`, so
/// that a client whose HTTP library keeps connections alive may send its next request on the
/// same connection (`Seen::reused`); event streams stay close-delimited, as before.
async fn tap_conn(mut sock: TcpStream, tap: Tap, upstream: SocketAddr, proxy: Arc<Proxy>, rec: Rec) {
    // A connection is counted (and numbered) once it carries a request to the MCP endpoint.
    let mut tcp: Option<u64> = None;
    let mut carried: Option<String> = None;
    // Bounded: a connection carries at most this many requests.
    for _ in 0..10_000u32 {
        let req = if carried.is_none() {
            read_request(&mut sock).await
        } else {
            tokio::time::timeout(TAP_KEEP_ALIVE, read_request(&mut sock)).await.ok().flatten()
        };
        let Some(req) = req else { return };
        // Only the MCP endpoint is the client's MCP traffic: OAuth discovery (`/.well-known/...`)
        // and anything else is answered 404 and counted apart.
        let target = req.head.split(' ').nth(1).unwrap_or("").to_string();
        if target.split(['?', '#']).next() != Some(MCP_PATH) {
            {
                let mut t = lock(&tap);
                t.other_count += 1;
                if t.other.len() < MAX_OTHER_LISTED {
                    t.other.push(format!("{} {}", req.method, crate::error::escape(&target)));
                }
            }
            let _ = sock.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
            let _ = sock.shutdown().await;
            return;
        }
        let tcp = *tcp.get_or_insert_with(|| {
            let mut t = lock(&tap);
            t.tcp_conns += 1;
            t.tcp_conns
        });
        match tap_request(&mut sock, req, (tcp, carried.take()), &tap, upstream, &proxy, &rec).await {
            Served::KeptAlive(answer) => {
                let mut t = lock(&tap);
                t.kept_alive += 1;
                t.offered.push(answer.clone());
                carried = Some(answer);
            }
            Served::Close => {
                let _ = sock.shutdown().await;
                return;
            }
            Served::Reset => {
                reset(sock);
                return;
            }
        }
    }
}

/// Reads a response head (bounded: 64 KiB, 30 s): the head with its blank line, and the bytes
/// read past it.
async fn read_head(up: &mut TcpStream) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(p + 4);
            return Some((buf, rest));
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
        let n = tokio::time::timeout(Duration::from_secs(30), up.read(&mut chunk)).await.ok()?.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The last event id, when the tool's stream has reached the run's cut point.
fn cut_due(mode: Mode, seen_text: &str) -> Option<Option<String>> {
    let ids: Vec<&str> = seen_text.lines().filter_map(|l| l.strip_prefix("id: ")).collect();
    let enough =
        if mode == Mode::CutBeforeId { seen_text.contains("\r\n\r\n") && ids.is_empty() } else { ids.len() >= 2 };
    enough.then(|| ids.last().map(|s| s.trim().to_string()))
}

/// Serves one request of a client connection: logs it, injects the run's fault or forwards it.
/// `(tcp, reused_after)`: the client connection's number and the complete answer it had already
/// carried, if any.
async fn tap_request(
    sock: &mut TcpStream,
    req: crate::probe::standin::Req,
    (tcp, reused_after): (u64, Option<String>),
    tap: &Tap,
    upstream: SocketAddr,
    proxy: &Arc<Proxy>,
    rec: &Rec,
) -> Served {
    let method = req.method.clone();
    let json: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let session = req.headers.get("mcp-session-id").cloned();
    let last = req.headers.get("last-event-id").cloned();
    let rpc = json.get("method").and_then(Value::as_str).map(str::to_string);
    let tool = json["params"]["name"].as_str().map(str::to_string);
    let number = |v: &Value| v.as_u64().or_else(|| v.as_str()?.parse().ok());
    let rpc_id = json.get("id").and_then(number);
    let cancels = (rpc.as_deref() == Some("notifications/cancelled"))
        .then(|| json["params"].get("requestId").and_then(number))
        .flatten();
    let is_work = tool.as_deref() == Some("probe_work");
    let client_keeps = !req.headers.get("connection").is_some_and(|v| v.to_ascii_lowercase().contains("close"));
    // A resume of a POST stream: the stand-in's ids are `<stream>-<seq>`, stream 0 standalone.
    let post_resume = last.as_deref().is_some_and(|l| !l.starts_with("0-"));
    let (answer, conn) = {
        let mut t = lock(tap);
        t.conns += 1;
        let answer = match (t.mode, method.as_str()) {
            (Mode::NotFound, "POST") if is_work && t.work_posts == 0 => "404",
            (mode, "GET") if mode.refuses() && post_resume && t.cut_at.is_some() => "refused",
            (Mode::EmptyResume, "GET") if post_resume && t.resumes_answered < EMPTY_RESUMES => "empty-200",
            _ => "forwarded",
        };
        if is_work {
            t.work_posts += 1;
        }
        if post_resume {
            t.resumes_answered += 1;
        }
        let at = t.start.elapsed();
        t.seen.push(Seen {
            at,
            method: method.clone(),
            session: session.clone(),
            last_event_id: last.clone(),
            rpc: rpc.clone(),
            tool: tool.clone(),
            id: rpc_id,
            cancels,
            answer: answer.to_string(),
            tcp,
            reused_after,
        });
        (answer, t.conns)
    };
    let model_req = to_model(&method, &session, &last, &rpc, &tool, rpc_id.or(cancels));
    if let Some(r) = model_req {
        rec.push(Actor::Client, StepKind::Send { conn: ConnId(conn), request: r });
    }
    match answer {
        "404" => {
            rec.push(Actor::Fault, StepKind::Fault { fault: "the tool call's POST answered 404".into() });
            // A 404 says the session is gone: the server side treats it so.
            if let Some(sid) = &session {
                rec.push(
                    Actor::Server,
                    StepKind::SessionEnded {
                        session: SessionId::from(sid.clone()),
                        reason: SessionEndReason::ServerRestart,
                        idle_ttl_us: None,
                    },
                );
            }
            let _ = sock.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
            return Served::Close;
        }
        "refused" => {
            rec.push(Actor::Fault, StepKind::Fault { fault: "resume reset before any answer".into() });
            return Served::Reset;
        }
        "empty-200" => {
            rec.push(Actor::Fault, StepKind::Fault { fault: "resume answered 200, no events, closed".into() });
            let _ = sock
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
                .await;
            return Served::Close;
        }
        _ => {}
    }
    if rpc.as_deref() == Some("tools/list") {
        // The stand-in lists bare names; real SDK clients validate `inputSchema`, so the tap
        // answers with the probe-tool contract's full listing.
        let body = json!({"jsonrpc": "2.0", "id": json.get("id").cloned().unwrap_or(Value::Null), "result": {"tools": tool_listing()}}).to_string();
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = sock.write_all(head.as_bytes()).await;
        let _ = sock.write_all(body.as_bytes()).await;
        return Served::Close;
    }
    let Ok(mut up) = TcpStream::connect(upstream).await else {
        return Served::Reset;
    };
    if up.write_all(&req.to_bytes()).await.is_err() {
        return Served::Reset;
    }
    if is_work {
        // The stand-in counts an execution as soon as a probe_work POST reaches it.
        rec.push(
            Actor::Server,
            StepKind::SideEffect {
                session: SessionId::from(session.clone().unwrap_or_default()),
                request: RequestId(rpc_id.unwrap_or(0)),
                call: CallKey(1),
                tool: "probe_work".into(),
                idempotent: false,
            },
        );
    }
    let mode = lock(tap).mode;
    let cut_this = is_work && mode != Mode::NotFound && lock(tap).cut_at.is_none();
    let Some((head, rest)) = read_head(&mut up).await else {
        return Served::Reset;
    };
    let head_text = String::from_utf8_lossy(&head).to_string();
    if rpc.as_deref() == Some("initialize") {
        if let Some(sid) = header_value(&head_text, "mcp-session-id") {
            rec.push(
                Actor::Server,
                StepKind::SessionCreated { session: SessionId::from(sid), client: "probed".into() },
            );
        }
    }
    let length = header_value(&head_text, "content-length").and_then(|v| v.parse::<usize>().ok());
    let stream = header_value(&head_text, "content-type").is_some_and(|v| v.starts_with("text/event-stream"));
    if let (Some(length), false, true) = (length, stream, client_keeps) {
        // A framed answer: passed on without `Connection: close`, the connection kept.
        let kept: Vec<&str> =
            head_text.trim_end().split("\r\n").filter(|l| !l.to_ascii_lowercase().starts_with("connection:")).collect();
        let mut out = format!("{}\r\n\r\n", kept.join("\r\n")).into_bytes();
        let mut body = rest;
        let mut buf = vec![0u8; 16 * 1024];
        // Bounded: each round reads bytes or ends; every read is bounded in time.
        for _ in 0..100_000u32 {
            if body.len() >= length {
                break;
            }
            match tokio::time::timeout(Duration::from_secs(10), up.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => body.extend_from_slice(&buf[..n]),
                _ => return Served::Reset,
            }
        }
        body.truncate(length);
        out.extend_from_slice(&body);
        let status = head_text.split(' ').nth(1).unwrap_or("?");
        let kind = header_value(&head_text, "content-type").map(|c| format!(" {c}")).unwrap_or_default();
        let what = rpc.clone().unwrap_or_else(|| method.clone());
        let answer = format!("{what}: {status}{kind}");
        return if sock.write_all(&out).await.is_ok() { Served::KeptAlive(answer) } else { Served::Reset };
    }
    let mut seen_text = head_text;
    seen_text.push_str(&String::from_utf8_lossy(&rest));
    let mut first = head;
    first.extend_from_slice(&rest);
    if sock.write_all(&first).await.is_err() {
        return Served::Close;
    }
    let mut buf = vec![0u8; 16 * 1024];
    let mut up_buf = vec![0u8; 16 * 1024];
    // Bounded: each round moves bytes or ends; the stand-in's own 300 s cap ends the stream.
    for _ in 0..1_000_000u32 {
        if cut_this {
            if let Some(after) = cut_due(mode, &seen_text) {
                // Let the proxy deliver what was written before the cut.
                tokio::time::sleep(Duration::from_millis(50)).await;
                {
                    let mut t = lock(tap);
                    t.cut_at = Some(t.start.elapsed());
                    t.cut_after = after.clone();
                }
                rec.push(
                    Actor::Fault,
                    StepKind::Fault {
                        fault: format!("reset every connection after event {}", after.unwrap_or_default()),
                    },
                );
                proxy.apply(&Toxic::Reset);
                return Served::Reset;
            }
        }
        tokio::select! {
            r = up.read(&mut buf) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    seen_text.push_str(&String::from_utf8_lossy(&buf[..n]));
                    if sock.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            },
            r = sock.read(&mut up_buf) => match r {
                Ok(0) | Err(_) => {
                    // The client left the stream before the stand-in ended it.
                    if is_work {
                        let mut t = lock(tap);
                        if t.call_closed_at.is_none() {
                            t.call_closed_at = Some(t.start.elapsed());
                        }
                    }
                    break;
                }
                Ok(n) => { let _ = up.write_all(&up_buf[..n]).await; }
            },
        }
    }
    Served::Close
}

/// The probe tools with their input schemas (docs/probe-tool.md).
fn tool_listing() -> Value {
    let obj = |props: Value| json!({"type": "object", "properties": props});
    json!([
        {"name": "probe_work", "description": "runs for duration_ms, notifying every interval_ms", "inputSchema": obj(json!({"duration_ms": {"type": "integer"}, "interval_ms": {"type": "integer"}, "key": {"type": "string"}}))},
        {"name": "probe_count", "description": "execution counters of key", "inputSchema": obj(json!({"key": {"type": "string"}}))},
        {"name": "probe_notify", "description": "notifications on the standalone stream", "inputSchema": obj(json!({"count": {"type": "integer"}, "interval_ms": {"type": "integer"}}))},
    ])
}

fn header_value(text: &str, name: &str) -> Option<String> {
    let head = text.split("\r\n\r\n").next()?;
    head.split("\r\n")
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_string())
}

fn to_model(
    method: &str,
    session: &Option<String>,
    last: &Option<String>,
    rpc: &Option<String>,
    tool: &Option<String>,
    id: Option<u64>,
) -> Option<Request> {
    let sid = session.clone().map(SessionId::from);
    Some(match method {
        "GET" => Request::get(sid, last.clone().map(EventId::from)),
        "DELETE" => Request::delete(sid?),
        "POST" => {
            let body = match rpc.as_deref() {
                Some("initialize") => return Some(Request::initialize(RequestId(id.unwrap_or(0)), "probed")),
                Some("notifications/initialized") => ClientMessage::Initialized,
                // `id` is the request it names (`params.requestId`).
                Some("notifications/cancelled") => ClientMessage::Cancelled { request: RequestId(id?) },
                Some("tools/call") => ClientMessage::CallTool {
                    id: RequestId(id.unwrap_or(0)),
                    call: ToolCall {
                        tool: tool.clone().unwrap_or_default(),
                        key: CallKey(if tool.as_deref() == Some("probe_work") { 1 } else { 0 }),
                        idempotency_key: None,
                        tasks: false,
                    },
                },
                _ => return None,
            };
            Request::post(sid, body)
        }
        _ => return None,
    })
}

struct Killer(Child);

impl Drop for Killer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn run_one(opts: &ClientProbeOptions, name: &'static str, mode: Mode) -> Result<ClientRun, ProbeError> {
    let io = |what: &str, e: std::io::Error| ProbeError::Io { path: what.into(), problem: e.to_string() };
    // No `retry:` field (but in `retry-*`): the delays seen are the client's own.
    // No priming event in `cut-before-id`: the stream is cut before any event id arrives.
    // No events at all in `request-timeout`: the call's stream opens and stays silent.
    let priming = !matches!(mode, Mode::CutBeforeId | Mode::RequestTimeout);
    let silent_calls = mode == Mode::RequestTimeout;
    let retry_ms = mode.retry_ms();
    let standin = Standin::start(StandinConfig { retry_ms, priming, silent_calls, ..StandinConfig::default() })
        .await
        .map_err(|e| io("stand-in", e))?;
    let listener = TcpListener::bind("127.0.0.1:0").await.map_err(|e| io("tap", e))?;
    let tap_addr = listener.local_addr().map_err(|e| io("tap", e))?;
    let proxy = Arc::new(Proxy::start(tap_addr).await.map_err(|e| io("proxy", e))?);
    let rec = Rec::new();
    let tap: Tap = Arc::new(Mutex::new(TapState {
        mode,
        start: Instant::now(),
        seen: Vec::new(),
        cut_at: None,
        cut_after: None,
        call_closed_at: None,
        work_posts: 0,
        resumes_answered: 0,
        conns: 0,
        tcp_conns: 0,
        kept_alive: 0,
        offered: Vec::new(),
        other: Vec::new(),
        other_count: 0,
    }));
    let (tap2, proxy2, rec2, upstream) = (tap.clone(), proxy.clone(), rec.clone(), standin.addr);
    let accept = tokio::spawn(async move {
        for _ in 0..100_000u32 {
            let Ok((sock, _)) = listener.accept().await else { break };
            let (t, p, r) = (tap2.clone(), proxy2.clone(), rec2.clone());
            tokio::spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(300), tap_conn(sock, t, upstream, p, r)).await;
            });
        }
    });
    let (program, args) = opts
        .command
        .split_first()
        .ok_or_else(|| ProbeError::Io { path: "client command".into(), problem: "empty".into() })?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("MCPSIM_PROBE_URL", format!("http://{}/mcp", proxy.addr))
        .env("MCPSIM_PROBE_DURATION_MS", opts.work.0.to_string())
        .env("MCPSIM_PROBE_INTERVAL_MS", opts.work.1.to_string())
        .env("MCPSIM_PROBE_KEY", format!("client-{name}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(d) = &opts.cwd {
        cmd.current_dir(d);
    }
    let mut child = Killer(cmd.spawn().map_err(|e| io(program, e))?);
    let output = Arc::new(Mutex::new(Vec::new()));
    if let Some(out) = child.0.stdout.take() {
        let sink = output.clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok).take(10_000) {
                sink.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
    }
    let limit = if mode == Mode::CutRefuse { opts.run_limit.max(opts.refuse_limit) } else { opts.run_limit };
    let bound = if mode == Mode::RequestTimeout { opts.request_timeout_bound } else { None };
    let started = lock(&tap).start;
    let mut deadline = started + limit;
    let mut exit = None;
    let mut exit_at = None;
    let mut gave_up = false;
    // Bounded: every round sleeps 50 ms and the deadline is at most the bound and a grace past
    // the call (or the run limit when no call comes).
    while Instant::now() < deadline {
        if let Some(bound) = bound {
            // `request-timeout`: from the call, the bound and a grace; after the client's first
            // sign of giving up (a cancel, the call's stream closed), the grace only.
            let t = lock(&tap);
            if let Some(call) = t.seen.iter().find(|s| s.tool.as_deref() == Some("probe_work")) {
                let sign = t
                    .seen
                    .iter()
                    .find(|s| s.cancels.is_some() && s.cancels == call.id)
                    .map(|s| s.at)
                    .into_iter()
                    .chain(t.call_closed_at)
                    .min();
                let end = sign.unwrap_or(call.at + bound).min(call.at + bound) + REQUEST_TIMEOUT_GRACE;
                deadline = started + end;
            }
        }
        if let Ok(Some(status)) = child.0.try_wait() {
            exit = Some(status.code().unwrap_or(-1));
            exit_at = Some(lock(&tap).start.elapsed());
            break;
        }
        if mode.refuses() && silent_after_refusals(&lock(&tap)) {
            gave_up = true;
            break;
        }
        if matches!(mode, Mode::Retry(_)) && enough_refusals(&lock(&tap)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // What the client closed on its own (or by exiting), not what the kill below closes.
    let (ended_at, call_closed_at) = {
        let t = lock(&tap);
        (t.start.elapsed(), t.call_closed_at)
    };
    if exit.is_none() {
        let why = if gave_up {
            "silent for twice its last delay and 3 s after its last refused resume"
        } else if matches!(mode, Mode::Retry(_)) && enough_refusals(&lock(&tap)) {
            "a second after its third refused resume"
        } else if bound.is_some() && lock(&tap).seen.iter().any(|s| s.tool.as_deref() == Some("probe_work")) {
            "past the request-timeout bound after the call (or a second after it gave up on the call)"
        } else {
            "at the run limit"
        };
        rec.push(Actor::Run, StepKind::Fault { fault: format!("client killed after {} ms: {why}", ms(ended_at)) });
    }
    drop(child);
    // Let a DELETE sent on exit arrive.
    tokio::time::sleep(Duration::from_millis(200)).await;
    accept.abort();
    let t = lock(&tap);
    let seen = t.seen.clone();
    let (cut_at, cut_after) = (t.cut_at, t.cut_after.clone());
    let (tcp_connections, kept_alive, offered) = (t.tcp_conns, t.kept_alive, t.offered.clone());
    let (other_requests, other_count) = (t.other.clone(), t.other_count);
    drop(t);
    // The stand-in counts an execution when a probe_work POST reaches it: one side effect each.
    let mut trace = rec.into_trace(json!({
        "probe": "client",
        "run": name,
        "command": opts.command,
        "recorded": "wall clock, server side: send steps are requests as received; session-created, side-effect inferred from the stand-in",
    }));
    let violations = check_all(&trace);
    let records = mcpsim_model::oracle::conditions::violation_records(&trace, &violations);
    trace.finish(records);
    let output = output.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(ClientRun {
        name,
        seen,
        tcp_connections,
        kept_alive,
        offered,
        other_requests,
        other_count,
        cut_at,
        cut_after,
        call_closed_at,
        bound,
        exit,
        exit_at,
        ended_at,
        output,
        trace,
        violations,
        trace_file: None,
    })
}

/// The resumes of the cut POST stream (the stand-in's standalone ids are `0-<seq>`).
fn is_post_resume(s: &Seen) -> bool {
    s.method == "GET" && s.last_event_id.as_deref().is_some_and(|l| !l.starts_with("0-"))
}

/// The delays before each resume of the cut stream: the first from the cut, then between resumes.
fn resume_delays(cut: Duration, seen: &[Seen]) -> Vec<(Duration, Duration)> {
    let mut prev = cut;
    seen.iter()
        .filter(|s| is_post_resume(s) && s.at >= cut)
        .map(|s| {
            let d = s.at.saturating_sub(prev);
            prev = s.at;
            (s.at, d)
        })
        .collect()
}

/// `cut-refuse` and `retry-*`: the client resumed at least once and has been silent since for
/// twice its last delay and 3 s more: it gave up (the verdict `decide` draws with a 1 s margin).
fn silent_after_refusals(t: &TapState) -> bool {
    let Some(cut) = t.cut_at else { return false };
    let retry = t.mode.retry_ms().map(Duration::from_millis);
    silent_since(t.start.elapsed(), &resume_delays(cut, &t.seen), retry)
}

/// Whether a client whose resumes came at `delays` (each `(at, delay)`) has been silent at
/// `elapsed` for twice its last delay and 3 s more. Under a `retry:` field the next delay may be
/// the field's even after an immediate attempt, so the field counts as a delay too: without it a
/// client due 3 s after its first refusal raced the 3 s margin, and lost on a loaded machine.
fn silent_since(elapsed: Duration, delays: &[(Duration, Duration)], retry: Option<Duration>) -> bool {
    let Some(&(last_at, last_delay)) = delays.last() else { return false };
    let delay = retry.map_or(last_delay, |r| last_delay.max(r));
    elapsed.saturating_sub(last_at) > delay * 2 + Duration::from_secs(3)
}

/// `retry-*`: the third refused resume was a second ago.
fn enough_refusals(t: &TapState) -> bool {
    let Some(cut) = t.cut_at else { return false };
    let delays = resume_delays(cut, &t.seen);
    delays.get(RETRY_RESUMES - 1).is_some_and(|&(at, _)| t.start.elapsed().saturating_sub(at) > Duration::from_secs(1))
}

/// How the `retry:` field enters the delays, from `cut-refuse` (the client's own delays) and the
/// `retry-*` runs (the same refusals under a `retry:`): each value's prediction for every delay
/// both show (an immediate first attempt left out) — `ignore` the own delay, `replaces` the
/// field, `at-least` the larger — kept if every delay is within 250 ms or 15 % of it.
/// `reconnect.counter_reset` from `empty-resume`, for a client whose empty answer is a counted,
/// failed attempt (`on_empty_resume = "same-id"`) and whose attempts are capped (`max_attempts`
/// m, from `cut-refuse`) at no more than the run's [`EMPTY_RESUMES`]: a further resume after m
/// empty answers means a 200 without events zeroed the count; m resumes and then none, that only
/// an event does (`on-event`). `on-successful-reconnect` (zeroed at the 200) and
/// `when-successful-reconnect-ends` (zeroed when that stream ends) both zero it before the next
/// attempt: no request tells them apart, so the first is written (the simulator's empty-resume
/// mirror makes the same resumes under both: `sim/src/probe/reality/client.rs`'s test).
fn decide_counter_reset(runs: &[ClientRun], f: &Fields) -> Result<Decided, String> {
    use mcpsim_model::config::CounterReset;
    let value = |k: &str| f.get(k).map(|(v, _)| v.as_str());
    let m: usize = match value("reconnect.max_attempts") {
        Some(v) => v.parse().map_err(|_| {
            format!("empty-resume: max_attempts is {v}: with no cap, counting its resumes cannot show when the count was zeroed")
        })?,
        None => return Err("empty-resume: max_attempts undetermined: nothing to count the resumes against".into()),
    };
    match value("close_handling.on_empty_resume") {
        Some("\"same-id\"") => {}
        Some(other) => {
            return Err(format!(
                "empty-resume: on_empty_resume is {other}: an empty answer is no counted attempt of the same stream, so it shows nothing of the count"
            ))
        }
        None => return Err("empty-resume: on_empty_resume undetermined".into()),
    }
    if m > EMPTY_RESUMES as usize {
        return Err(format!("empty-resume answers {EMPTY_RESUMES} resumes empty, fewer than max_attempts {m}"));
    }
    let r = runs.iter().find(|r| r.name == "empty-resume").ok_or("the empty-resume run did not run")?;
    let resumes = r
        .seen
        .iter()
        .filter(|s| s.method == "GET" && s.last_event_id.as_deref().is_some_and(|l| !l.starts_with("0-")))
        .count();
    let empties = r.seen.iter().filter(|s| s.answer == "empty-200").count();
    let lit = |c: CounterReset| match serde_json::to_value(c) {
        Ok(Value::String(s)) => format!("\"{s}\""),
        _ => String::new(),
    };
    let why = format!(
        "empty-resume: {resumes} resumes of the cut stream, the first {empties} answered 200 with no events and ended, under max_attempts {m} (cut-refuse)"
    );
    if empties >= m && resumes > m {
        Ok((
            lit(CounterReset::OnSuccessfulReconnect),
            format!("{why}: a further resume after {m} empty answers, so a 200 without events zeroed the count (on-successful-reconnect; when-successful-reconnect-ends makes the same requests)"),
        ))
    } else if empties >= m && resumes == m {
        Ok((lit(CounterReset::OnEvent), format!("{why}: no resume after them, so only an event zeroes the count")))
    } else {
        Err(format!("{why}: neither more resumes than the cap nor exactly the cap"))
    }
}

/// A request timeout as the profiles write it (`"1m"`, `"30s"`, `"2500ms"`): to the nearest
/// second from 10 s up (timeouts are set in seconds; the client's timer starts a few ms before
/// its POST reaches the tap, and its cancel leaves a few ms after the timer fires), to the
/// nearest 100 ms below.
pub fn timeout_literal(d: Duration) -> String {
    let step: u64 = if d >= Duration::from_secs(10) { 1000 } else { 100 };
    let rounded = (ms(d) + step / 2) / step * step;
    format!("\"{}\"", mcpsim_model::time::format_duration(Duration::from_millis(rounded)))
}

/// `request_timeout` from the `request-timeout` run: the tool's event stream opened and stayed
/// silent, so whatever the client did next it did on its own. Its first sign of giving up on
/// the call, T after the call's POST reached the tap — a `notifications/cancelled` naming the
/// call's id, closing the call's event stream, or exiting (the fixture clients exit once their
/// call settles) — decides `request_timeout = T` ([`timeout_literal`]) when T is within the
/// run's bound. No sign by the bound decides `"none"`: no timeout, or one longer than the bound
/// (as `keep_alive_timeout`'s bounded wait writes it; [`client_field_agrees`] takes any profile
/// value above the bound as agreeing).
///
/// What the SDKs do at their timeout (the fixtures' pinned versions): TypeScript sdk 1.32.2
/// `dist/esm/shared/protocol.js:740-742` arms `DEFAULT_REQUEST_TIMEOUT_MSEC` (60000, `:8`)
/// unless the call sets `timeout`, and its handler (`:698-714`) sends `notifications/cancelled`
/// with the request's id and rejects the call with `RequestTimeout`; Python `mcp` 2.3.0
/// `mcp/client/session.py:408,423,572-578,1097` passes a timeout only when the session or the
/// call sets one (default `None`: `mcp/shared/jsonrpc_dispatcher.py:408` arms a clock whose
/// budget is then infinite, `mcp/shared/_request_clock.py:25`);
/// rmcp 3.11.0 `src/service/client.rs:1497` sends `tools/call` with
/// `PeerRequestOptions::no_options()` (`src/service.rs:829-843`, timeout `None`), and
/// `src/service.rs:634-636` awaits the response without limit.
pub fn decide_request_timeout(r: &ClientRun) -> Result<Decided, String> {
    let bound = r.bound.ok_or("request-timeout: the run had no bound")?;
    let call = r
        .seen
        .iter()
        .find(|s| s.tool.as_deref() == Some("probe_work"))
        .ok_or("request-timeout: the client never called probe_work")?;
    let after = |t: Duration| t.saturating_sub(call.at);
    let mut signs: Vec<(Duration, String)> = Vec::new();
    if let Some(c) = r.seen.iter().find(|s| s.cancels.is_some() && s.cancels == call.id) {
        signs
            .push((after(c.at), format!("sent notifications/cancelled for request {}", c.cancels.unwrap_or_default())));
    }
    if let Some(t) = r.call_closed_at {
        signs.push((after(t), "closed the call's event stream".into()));
    }
    if let Some(t) = r.exit_at {
        let code = r.exit.map(|c| c.to_string()).unwrap_or_else(|| "?".into());
        signs.push((after(t), format!("exited {code}")));
    }
    signs.sort_by_key(|(t, _)| *t);
    let mut shown: Vec<String> = signs.iter().map(|(t, what)| format!("{what} at {} ms", ms(*t))).collect();
    if let (Some(_), Some(last)) = (r.exit_at, r.output.last()) {
        shown.push(format!("its last line {last}"));
    }
    let bound_s = bound.as_secs_f64();
    let silent = "request-timeout: the call's event stream opened and stayed silent (no event, no result)";
    match signs.first() {
        Some(&(t, _)) if t <= bound => Ok((
            timeout_literal(t),
            format!("{silent}; after the call's POST the client {} (the first sign, rounded)", shown.join(", ")),
        )),
        _ => {
            let later =
                if shown.is_empty() { String::new() } else { format!(" (after the bound: {})", shown.join(", ")) };
            Ok((
                toml_quote("none"),
                format!("{silent}; nothing from the client for {bound_s} s after the call's POST (the bound){later}: no timeout, or one longer than {bound_s} s"),
            ))
        }
    }
}

/// Whether a probed client field agrees with a profile's value: the same literal, or, for
/// `request_timeout` decided by a bounded wait, a probed `"none"` beside a profile of none or of
/// anything above the run's bound, and durations within 500 ms
/// ([`crate::probe::server::keepalive::agrees`], the rule `keep_alive_timeout` uses).
pub fn client_field_agrees(report: &ClientProbeReport, field: &str, probed: &str, builtin: &str) -> bool {
    if probed == builtin {
        return true;
    }
    match (field, report.request_timeout_bound()) {
        ("request_timeout", Some(bound)) => crate::probe::server::keepalive::agrees(probed, builtin, bound),
        _ => false,
    }
}

impl ClientProbeReport {
    /// The `request-timeout` run's bound, when it ran.
    pub fn request_timeout_bound(&self) -> Option<Duration> {
        self.runs.iter().find(|r| r.name == "request-timeout").and_then(|r| r.bound)
    }
}

fn decide_retry_field(runs: &[ClientRun]) -> Result<Decided, String> {
    let delays = |r: &ClientRun| -> Vec<Duration> {
        r.cut_at.map(|cut| resume_delays(cut, &r.seen).into_iter().map(|(_, d)| d).collect()).unwrap_or_default()
    };
    let own = runs.iter().find(|r| r.name == "cut-refuse").map(delays).ok_or("cut-refuse did not run")?;
    if own.is_empty() {
        return Err("cut-refuse saw no resume: no own delays to compare with".into());
    }
    // rmcp's first attempt after a broken stream is immediate, whatever the field says.
    let skip = usize::from(own[0] < Duration::from_millis(100));
    let mut candidates = vec!["ignore", "replaces", "at-least"];
    let mut seen = Vec::new();
    for (name, retry_ms) in [("retry-short", RETRY_SHORT_MS), ("retry-long", RETRY_LONG_MS)] {
        let Some(run) = runs.iter().find(|r| r.name == name) else { continue };
        let retry = Duration::from_millis(retry_ms);
        let got = delays(run);
        let pairs: Vec<(Duration, Duration)> = own.iter().copied().zip(got.iter().copied()).skip(skip).collect();
        if pairs.is_empty() {
            seen.push(format!("{name}: no delay past the first to compare"));
            continue;
        }
        let near = |d: Duration, want: Duration| ms(d).abs_diff(ms(want)) <= 250.max(ms(want) * 15 / 100);
        candidates.retain(|c| {
            pairs.iter().all(|&(b, d)| match *c {
                "ignore" => near(d, b),
                "replaces" => near(d, retry),
                _ => near(d, b.max(retry)),
            })
        });
        let shown: Vec<String> = pairs.iter().map(|(b, d)| format!("{} (own {})", ms(*d), ms(*b))).collect();
        seen.push(format!("{name} (retry: {retry_ms}): delays {} ms", shown.join(", ")));
    }
    let seen = seen.join("; ");
    match candidates.as_slice() {
        [one] => Ok((format!("\"{one}\""), format!("{seen}: only `{one}` predicts every delay"))),
        [] => Err(format!("{seen}: no value predicts every delay")),
        many => Err(format!("{seen}: {} all predict them", many.join(", "))),
    }
}

/// `http.keep_alive`: `true` when any request came on a connection that had already carried a
/// complete answer; `false` when the tap left connections open after complete answers (a run
/// with such an answer and more requests after it) and every request still came on a new one.
pub fn decide_keep_alive(runs: &[ClientRun]) -> Result<Decided, String> {
    let requests: usize = runs.iter().map(|r| r.seen.len()).sum();
    let conns: u64 = runs.iter().map(|r| r.tcp_connections).sum();
    let offers: u64 = runs.iter().map(|r| r.kept_alive).sum();
    let reused = runs.iter().flat_map(|r| &r.seen).filter(|s| s.reused_after.is_some()).count();
    let per_run: Vec<String> =
        runs.iter().map(|r| format!("{} {}/{}", r.name, r.seen.len(), r.tcp_connections)).collect();
    let totals = format!(
        "{requests} requests on {conns} TCP connections (requests/connections per run: {})",
        per_run.join(", ")
    );
    let first = runs.iter().find_map(|r| r.seen.iter().find_map(|s| Some((r.name, s, s.reused_after.as_ref()?))));
    if let Some((run, s, after)) = first {
        let what = s.rpc.clone().map(|m| s.tool.clone().unwrap_or(m)).unwrap_or_else(|| s.method.clone());
        let mut kinds: Vec<&str> =
            runs.iter().flat_map(|r| &r.seen).filter_map(|s| s.reused_after.as_deref()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        return Ok((
            "true".into(),
            format!(
                "{totals}: {reused} went on a connection that had already carried a complete answer (the first: {run}, {what} at {} ms after {after}; reused after: {})",
                ms(s.at),
                kinds.join("; ")
            ),
        ));
    }
    if runs.iter().any(|r| r.kept_alive > 0 && r.seen.len() > 1) {
        return Ok((
            "false".into(),
            format!("{totals}: {offers} complete answers left their connection open (no Connection: close), and every request came on a new connection"),
        ));
    }
    Err(format!("{totals}: no complete answer left a connection open, so none could be reused"))
}

/// `http.reuse_after`: `any` when a request came on a connection whose last answer had no JSON
/// body (a 202, an error without one); `json-body` when every reuse followed a JSON answer while
/// answers without one were also left open and none of those connections was reused.
pub fn decide_reuse_after(runs: &[ClientRun]) -> Result<Decided, String> {
    let json = |a: &str| a.contains("application/json");
    let after: Vec<&str> = runs.iter().flat_map(|r| &r.seen).filter_map(|s| s.reused_after.as_deref()).collect();
    let offered: Vec<&str> = runs.iter().flat_map(|r| &r.offered).map(String::as_str).collect();
    let other_offers = offered.iter().filter(|a| !json(a)).count();
    if let Some(a) = after.iter().find(|a| !json(a)) {
        return Ok((
            "\"any\"".into(),
            format!("a request came on a connection whose last answer had no JSON body ({a})"),
        ));
    }
    match (after.len(), other_offers) {
        (0, _) => Err("no connection was reused".into()),
        (_, 0) => Err(format!("{} reuses, each after a JSON answer, and no answer without one was left open", after.len())),
        (n, k) => Ok((
            "\"json-body\"".into(),
            format!("{n} reuses, each after a JSON answer; {k} answers without a JSON body were left open and none of those connections was reused"),
        )),
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// A duration as the profiles write it, rounded to 100 ms.
fn dur_literal(d: Duration) -> String {
    let tenths = (d.as_millis() as u64 + 50) / 100;
    if tenths.is_multiple_of(10) {
        format!("\"{}s\"", tenths / 10)
    } else {
        format!("\"{}ms\"", tenths * 100)
    }
}

/// Decides `ClientPolicy` fields from the runs.
pub fn decide(runs: &[ClientRun]) -> (Fields, Vec<(String, String)>) {
    let mut f: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut open: Vec<(String, String)> = Vec::new();
    let resumes = |r: &ClientRun| -> Vec<Seen> { r.seen.iter().filter(|s| is_post_resume(s)).cloned().collect() };
    for r in runs {
        if r.seen.iter().any(|s| s.rpc.as_deref() == Some("initialize")) {
            f.entry("sessions".into()).or_insert(("true".into(), format!("{}: it sent initialize", r.name)));
        }
        let init_at = r.seen.iter().position(|s| s.rpc.as_deref() == Some("notifications/initialized"));
        if let Some(i) = init_at {
            let get = r.seen[i..].iter().find(|s| s.method == "GET" && s.last_event_id.is_none());
            let v = if get.is_some() { "true" } else { "false" };
            f.entry("open_standalone_stream".into()).or_insert((
                v.into(),
                format!(
                    "{}: {} GET without Last-Event-ID after notifications/initialized",
                    r.name,
                    if get.is_some() { "a" } else { "no" }
                ),
            ));
        }
        match r.name {
            "cut-resume" => {
                let rs = resumes(r);
                match (r.cut_at, rs.first()) {
                    (Some(_), Some(first)) => {
                        let same = first.last_event_id == r.cut_after;
                        f.insert(
                            "close_handling.kind".into(),
                            ("\"sdk\"".into(), format!("cut-resume: resumed the cut POST stream with GET Last-Event-ID={} (last id before the cut {}; {})", first.last_event_id.clone().unwrap_or_default(), r.cut_after.clone().unwrap_or_default(), if same { "the same" } else { "DIFFERENT" })),
                        );
                    }
                    (Some(_), None) => open.push((
                        "close_handling.kind".into(),
                        "cut-resume: the cut POST stream was never resumed with Last-Event-ID".into(),
                    )),
                    (None, _) => open.push((
                        "close_handling.kind".into(),
                        "cut-resume: the stream was never cut (no tool call?)".into(),
                    )),
                }
            }
            "cut-refuse" => {
                let rs = resumes(r);
                let Some(cut) = r.cut_at else {
                    open.push(("reconnect.*".into(), "cut-refuse: the stream was never cut".into()));
                    continue;
                };
                if rs.is_empty() {
                    open.push(("reconnect.*".into(), "cut-refuse: no resume after the cut".into()));
                    continue;
                }
                let mut delays = Vec::new();
                let mut prev = cut;
                for s in &rs {
                    delays.push(s.at.saturating_sub(prev));
                    prev = s.at;
                }
                let shown: Vec<String> = delays.iter().map(|d| format!("{} ms", ms(*d))).collect();
                let shown = shown.join(", ");
                // A first resume within 100 ms of the cut is immediate (rmcp); the backoff proper
                // starts with the next one.
                let immediate = delays[0] < Duration::from_millis(100);
                f.insert(
                    "reconnect.first_immediate".into(),
                    (immediate.to_string(), format!("cut-refuse: first resume {} ms after the cut", ms(delays[0]))),
                );
                let backoff: &[Duration] = if immediate { &delays[1..] } else { &delays[..] };
                // Attempt n waits initial * factor^n; with an immediate first attempt (n = 0) the
                // first delay seen is attempt 1's, initial * factor.
                let factor =
                    (backoff.len() >= 2 && ms(backoff[0]) > 0).then(|| fit_factor(ms(backoff[0]), ms(backoff[1])));
                match factor {
                    Some(k) => {
                        f.insert(
                            "reconnect.factor".into(),
                            (format!("{k:.1}"), format!("cut-refuse: delays between refused resumes {shown}")),
                        );
                    }
                    None => open.push((
                        "reconnect.factor".into(),
                        format!("cut-refuse: fewer than two backoff delays ({shown})"),
                    )),
                }
                let initial = match (immediate, backoff.first(), factor) {
                    (false, Some(d), _) => Some((*d, format!("cut-refuse: delays between refused resumes {shown}"))),
                    (true, Some(d), Some(k)) if k > 0.0 => Some((
                        d.div_f64(k),
                        format!(
                            "cut-refuse: delays between refused resumes {shown}: attempt 1 waited initial * factor"
                        ),
                    )),
                    _ => None,
                };
                match &initial {
                    Some((d, why)) => {
                        f.insert("reconnect.initial".into(), (dur_literal(*d), why.clone()));
                    }
                    None => open.push(("reconnect.initial".into(), format!("cut-refuse: too few delays ({shown})"))),
                }
                // Jitter: with three or more backoff delays (initial and factor fitted from the
                // first two), every later one where initial * factor^n puts it, within 10 %.
                match (initial.as_ref(), factor) {
                    (Some((init, _)), Some(k)) if backoff.len() >= 3 => {
                        let first_n = if immediate { 1 } else { 0 };
                        let worst = backoff
                            .iter()
                            .enumerate()
                            .map(|(i, d)| {
                                let want = init.as_secs_f64() * k.powi(first_n + i as i32);
                                (d.as_secs_f64() - want).abs() / want.max(0.001)
                            })
                            .fold(0.0f64, f64::max);
                        if worst < 0.1 {
                            f.insert(
                                "reconnect.jitter".into(),
                                ("0.0".into(), format!("cut-refuse: {} backoff delays ({shown}) each within {:.0} % of initial * factor^n", backoff.len(), worst * 100.0)),
                            );
                        } else {
                            open.push((
                                "reconnect.jitter".into(),
                                format!("cut-refuse: delays ({shown}) stray up to {:.0} % from initial * factor^n: jittered, or a cap; too few to measure the spread", worst * 100.0),
                            ));
                        }
                    }
                    _ => open.push((
                        "reconnect.jitter".into(),
                        format!("cut-refuse: {} backoff delay(s) ({shown}): the first two fit initial and factor, a third is needed to see a spread", backoff.len()),
                    )),
                }
                let last_at = rs.last().map(|s| s.at).unwrap_or(cut);
                // Given up: the client exited, or stayed silent for more than twice its last delay
                // (and a second) before the run ended. Otherwise it may still be retrying.
                let last_delay = delays.last().copied().unwrap_or_default();
                let quiet_for = r.ended_at.saturating_sub(last_at);
                let gave_up = r.exit.is_some() || quiet_for > last_delay * 2 + Duration::from_secs(1);
                if !gave_up {
                    // Still retrying after five attempts, each delay longer than the last: more
                    // than any bounded built-in profile allows (py, ts: 2). A finite run cannot
                    // tell unlimited from a large cap; five is where the probe calls it unlimited.
                    let growing = delays.windows(2).skip(usize::from(immediate)).all(|w| w[1] > w[0]);
                    if rs.len() >= UNLIMITED_AFTER && growing {
                        f.insert(
                            "reconnect.max_attempts".into(),
                            (
                                "\"none\"".into(),
                                format!("cut-refuse: {} resumes ({shown}), each reset before an answer, and still retrying {} ms after the last when the run ended: taken as unlimited (a finite run cannot tell it from a cap above {})", rs.len(), ms(quiet_for), rs.len()),
                            ),
                        );
                    } else {
                        open.push((
                            "reconnect.max_attempts".into(),
                            format!("cut-refuse: still retrying at the run limit ({} resumes: {shown}); unlimited, or more than the run allows", rs.len()),
                        ));
                    }
                    open.push((
                        "close_handling.on_give_up".into(),
                        "cut-refuse: the client never gave up within the run".into(),
                    ));
                    let capped = delays.len() >= 3
                        && delays[delays.len() - 1] <= delays[delays.len() - 2] + Duration::from_millis(200);
                    if !capped {
                        open.push((
                            "reconnect.max".into(),
                            format!(
                                "cut-refuse: the delays ({shown}) still grew at the run's end: no cap up to {} ms",
                                ms(last_delay)
                            ),
                        ));
                    }
                    continue;
                }
                f.insert(
                    "reconnect.max_attempts".into(),
                    (
                        rs.len().to_string(),
                        format!(
                            "cut-refuse: {} resumes, each reset before an answer, then none ({})",
                            rs.len(),
                            if r.exit.is_some() { "the client exited" } else { "silent until the run limit" }
                        ),
                    ),
                );
                // The fixture clients exit as soon as their call settles: an exit right after the
                // last refused resume is a call failed at once; no exit until the limit, a call
                // left pending (its request timeout, if any, is longer than the run).
                match r.exit_at.map(|e| e.saturating_sub(last_at)) {
                    Some(d) if d < Duration::from_secs(2) => {
                        f.insert(
                            "close_handling.on_give_up".into(),
                            ("\"fail-call\"".into(), format!("cut-refuse: the client exited {} ms after its last refused resume (its call failed at once)", ms(d))),
                        );
                    }
                    None => {
                        f.insert(
                            "close_handling.on_give_up".into(),
                            ("\"leave-pending\"".into(), "cut-refuse: after its last refused resume the client sent nothing and did not exit until killed at the run limit (the call stayed pending)".into()),
                        );
                    }
                    Some(_) => open.push((
                        "close_handling.on_give_up".into(),
                        "cut-refuse: the client exited, but seconds after its last resume".into(),
                    )),
                }
            }
            "not-found" => {
                let Some(i) = r.seen.iter().position(|s| s.answer == "404") else {
                    open.push(("close_handling.on_404".into(), "not-found: no tool call got the 404".into()));
                    continue;
                };
                let dead = r.seen[i].session.clone();
                let after = &r.seen[i + 1..];
                let reinit = after.iter().any(|s| s.rpc.as_deref() == Some("initialize"));
                let resent = after.iter().any(|s| s.tool.as_deref() == Some("probe_work"));
                let kept: Vec<&Seen> = after.iter().filter(|s| s.session == dead && dead.is_some()).collect();
                let (v, why) = match (reinit, resent) {
                    (false, false) => ("fail-keep-session", format!("not-found: after the 404 no initialize, no re-sent call; {} later request(s) still carried the dead session id", kept.len())),
                    (true, true) => ("reinitialize-resend-once", "not-found: after the 404 an initialize and the same call again".to_string()),
                    (true, false) => ("reinitialize-unknown-outcome", "not-found: after the 404 an initialize, the call not re-sent".to_string()),
                    (false, true) => ("fail-keep-session", "not-found: the call re-sent on the dead session without initialize (no profile value says so)".to_string()),
                };
                f.insert("close_handling.on_404".into(), (format!("\"{v}\""), why));
            }
            "cut-before-id" => {
                let Some(cut) = r.cut_at else {
                    open.push((
                        "close_handling.resume_post_needs_event_id".into(),
                        "cut-before-id: the stream was never cut before an event id".into(),
                    ));
                    continue;
                };
                let after: Vec<&Seen> = r.seen.iter().filter(|s| s.at >= cut).collect();
                let resumed = after.iter().any(|s| s.method == "GET" && s.last_event_id.is_some());
                let resent = after.iter().any(|s| s.tool.as_deref() == Some("probe_work"));
                if !resumed && !resent {
                    f.insert(
                        "close_handling.resume_post_needs_event_id".into(),
                        (
                            "true".into(),
                            "cut-before-id: the POST stream cut before any event id was neither resumed nor re-sent"
                                .into(),
                        ),
                    );
                    // The call's fate, as `cut-refuse` reads a given-up one: the fixture clients
                    // exit as soon as their call settles.
                    let field = "close_handling.on_unresumable_post";
                    match r.exit_at.map(|e| e.saturating_sub(cut)) {
                        Some(d) if d < Duration::from_secs(2) => {
                            let why = format!(
                                "cut-before-id: the client exited {} ms after the cut (its call failed at once)",
                                ms(d)
                            );
                            f.insert(field.into(), ("\"fail-call\"".into(), why));
                        }
                        None => {
                            let why = "cut-before-id: after the cut the client sent nothing and did not exit until killed at the run limit (the call stayed pending)";
                            f.insert(field.into(), ("\"leave-pending\"".into(), why.into()));
                        }
                        Some(_) => open
                            .push((field.into(), "cut-before-id: the client exited, but seconds after the cut".into())),
                    }
                } else if !resent {
                    f.insert(
                        "close_handling.resume_post_needs_event_id".into(),
                        (
                            "false".into(),
                            "cut-before-id: the POST stream cut before any event id was resumed with a GET".into(),
                        ),
                    );
                } else {
                    open.push((
                        "close_handling.resume_post_needs_event_id".into(),
                        "cut-before-id: the call was POSTed again after the cut (no profile field says so)".into(),
                    ));
                }
            }
            "empty-resume" => {
                let rs = resumes(r);
                let Some(i) = r.seen.iter().position(|s| s.answer == "empty-200") else {
                    open.push((
                        "close_handling.on_empty_resume".into(),
                        "empty-resume: no resume to answer empty".into(),
                    ));
                    continue;
                };
                let first = r.seen[i].last_event_id.clone();
                let next = r.seen[i + 1..].iter().find(|s| {
                    s.method == "GET"
                        && s.session == r.seen[i].session
                        && s.last_event_id.as_deref().is_none_or(|l| !l.starts_with("0-"))
                });
                // Both empty answers, then the next GET of the stream: a steady gap where the
                // client's own backoff (cut-refuse) grows is a graceful close, no counted attempt.
                let empties: Vec<&Seen> = r.seen.iter().filter(|s| s.answer == "empty-200").collect();
                let third = empties.get(1).and_then(|e2| rs.iter().find(|s| s.at > e2.at));
                let backoff_grows =
                    f.get("reconnect.factor").and_then(|(k, _)| k.parse::<f64>().ok()).is_some_and(|k| k >= 1.5);
                let steady = match (empties.first(), empties.get(1), third) {
                    (Some(a), Some(b), Some(c)) if b.last_event_id == first && c.last_event_id == first => {
                        let (g1, g2) = (b.at.saturating_sub(a.at), c.at.saturating_sub(b.at));
                        (ms(g1).abs_diff(ms(g2)) < 300).then_some((g1, g2))
                    }
                    _ => None,
                };
                let (v, why) = match next {
                    Some(_) if backoff_grows && steady.is_some() => {
                        let (g1, g2) = steady.unwrap_or_default();
                        (
                            "graceful-close",
                            format!(
                                "empty-resume: after each empty 200 the same Last-Event-ID {} again, {} ms then {} ms later: a steady delay where its failed attempts back off by {} (cut-refuse), so an empty answer is no failed attempt",
                                first.clone().unwrap_or_default(),
                                ms(g1),
                                ms(g2),
                                f.get("reconnect.factor").map(|(k, _)| k.as_str()).unwrap_or("?")
                            ),
                        )
                    }
                    Some(s) if s.last_event_id == first => (
                        "same-id",
                        format!(
                            "empty-resume: after the empty 200, GET again with the same Last-Event-ID {} ({} ms later; rmcp's graceful-close looks the same from here, it differs in the attempt counter only)",
                            first.clone().unwrap_or_default(),
                            ms(s.at.saturating_sub(r.seen[i].at))
                        ),
                    ),
                    Some(s) if s.last_event_id.is_none() => (
                        "without-id",
                        format!(
                            "empty-resume: after the empty 200, GET without Last-Event-ID ({} ms later)",
                            ms(s.at.saturating_sub(r.seen[i].at))
                        ),
                    ),
                    Some(_) => {
                        ("same-id", "empty-resume: after the empty 200, GET with another Last-Event-ID".to_string())
                    }
                    None => {
                        ("clean-close", "empty-resume: after the empty 200, no further GET for the stream".to_string())
                    }
                };
                let _ = rs;
                f.insert("close_handling.on_empty_resume".into(), (format!("\"{v}\""), why));
            }
            "request-timeout" => match decide_request_timeout(r) {
                Ok(d) => {
                    f.insert("request_timeout".into(), d);
                }
                Err(why) => open.push(("request_timeout".into(), why)),
            },
            _ => {}
        }
    }
    if runs.iter().any(|r| r.name == "empty-resume") {
        match decide_counter_reset(runs, &f) {
            Ok(d) => {
                f.insert("reconnect.counter_reset".into(), d);
            }
            Err(why) => open.push(("reconnect.counter_reset".into(), why)),
        }
    }
    if runs.iter().any(|r| r.name.starts_with("retry-")) {
        match decide_retry_field(runs) {
            Ok(d) => {
                f.insert("reconnect.retry_field".into(), d);
            }
            Err(why) => open.push(("reconnect.retry_field".into(), why)),
        }
    }
    match decide_reuse_after(runs) {
        Ok(d) => {
            f.insert("http.reuse_after".into(), d);
        }
        Err(why) => open.push(("http.reuse_after".into(), why)),
    }
    match decide_keep_alive(runs) {
        Ok(d) => {
            f.insert("http.keep_alive".into(), d);
        }
        Err(why) => open.push(("http.keep_alive".into(), why)),
    }
    for (field, why) in [
        ("persistence", "needs a client restart; the probe runs one process per run"),
        ("request_timeout", "needs the opt-in request-timeout run (--request-timeout-bound, e.g. 75s: a silent tool call watched that long; ts's timeout is 60 s)"),
        ("send_idempotency_keys", "not looked at: the tap ignores arguments beyond the tool name"),
        ("close_handling.resume_post_needs_event_id", "the cut-before-id run did not run"),
        ("close_handling.on_give_up", "needs the call's fate after the attempts are spent, seen from the client; the server side sees only silence"),
        ("close_handling.on_unresumable_post", "the cut-before-id run did not run, or its POST stream was resumed or re-sent"),
        ("http.headers_timeout", "needs a request left without a head as long as the library waits (5 minutes for Node's fetch and the Python SDK's httpx): longer than a probe run"),
        ("http.body_timeout", "needs a response body silent as long as the library waits (5 minutes for Node's fetch and the Python SDK's httpx): longer than a probe run"),
        ("reconnect.max", "needs more attempts than the client makes before its delay caps"),
        ("reconnect.counter_reset", "the empty-resume run did not run"),
        ("reconnect.retry_field", "the retry-short and retry-long runs did not run"),
        ("reconnect.first_immediate", "no resume after a cut was seen"),
        ("reconnect.jitter", "needs three backoff delays or more (the first two fit initial and factor)"),
    ] {
        if !f.contains_key(field) && !open.iter().any(|(k, _)| k == field) {
            open.push((field.into(), why.into()));
        }
    }
    (f, open)
}

/// Every known difference between a probed client field and its built-in profile.
pub const KNOWN_CLIENT_FIELD_DIFFERENCES: &[KnownFieldDifference] = &[KnownFieldDifference {
    profile: "py-sdk",
    field: "reconnect.counter_reset",
    probed: "\"on-successful-reconnect\"",
    builtin: "\"when-successful-reconnect-ends\"",
    observation: "empty-resume: a third resume after two empty 200s, under max_attempts 2: a 200 without events zeroed the count",
    why_not_changed: "the two values zero the count before the next attempt either way (at the 200, or when its stream ends): no request tells them apart and the probe writes the first; the profile keeps the source's (mcp 2.3.0 mcp/client/streamable_http.py:259-260,594-596)",
}];

/// The known difference that explains a probed client field, if any.
pub fn known_client_difference(
    profile: &str,
    field: &str,
    probed: &str,
    builtin: &str,
) -> Option<&'static KnownFieldDifference> {
    KNOWN_CLIENT_FIELD_DIFFERENCES
        .iter()
        .find(|k| k.profile == profile && k.field == field && k.probed == probed && k.builtin == builtin)
}

/// `(field, probed, built-in)` for every decided field, the built-in value read from `profile`'s
/// serde form (the same literals the profile file uses).
pub fn compare(
    fields: &BTreeMap<String, (String, String)>,
    profile: &mcpsim_model::config::ClientPolicy,
) -> Vec<(String, String, String)> {
    let Ok(builtin) = serde_json::to_value(profile) else { return Vec::new() };
    fields
        .iter()
        .map(|(f, (probed, _))| {
            let mut v = Some(&builtin);
            for part in f.split('.') {
                v = v.and_then(|x| x.get(part));
            }
            let theirs = match v {
                // Written only when it is not the default.
                None if f == "close_handling.on_give_up" || f == "close_handling.on_unresumable_post" => {
                    toml_quote("fail-call")
                }
                // The `[http]` table is left out at its default: no keep-alive.
                None if f == "http.keep_alive" => "false".to_string(),
                None if f == "http.reuse_after" => toml_quote("any"),
                None => "(not written)".to_string(),
                Some(Value::Null) => toml_quote("none"),
                Some(Value::String(s)) => toml_quote(s),
                Some(Value::Number(n)) if n.is_f64() => format!("{:.1}", n.as_f64().unwrap_or(0.0)),
                Some(other) => other.to_string(),
            };
            (f.clone(), probed.clone(), theirs)
        })
        .collect()
}

/// The profile file: every decided field with its observation, the undetermined ones listed.
pub fn profile_toml(
    name: &str,
    header: &[String],
    fields: &BTreeMap<String, (String, String)>,
    open: &[(String, String)],
) -> String {
    let mut out = String::new();
    for line in header {
        out.push_str(&format!("# {line}\n"));
    }
    out.push_str("extends = \"reference\"\n");
    out.push_str(&format!("name = {}\n", toml_quote(name)));
    let mut tables: BTreeMap<&str, Vec<(&str, &Decided)>> = BTreeMap::new();
    for (k, v) in fields {
        match k.split_once('.') {
            Some((t, f)) => tables.entry(t).or_default().push((f, v)),
            None => {
                out.push_str(&format!("# {}\n{k} = {}\n", v.1, v.0));
            }
        }
    }
    for (t, rows) in tables {
        out.push_str(&format!("\n[{t}]\n"));
        for (f, (v, why)) in rows {
            out.push_str(&format!("# {why}\n{f} = {v}\n"));
        }
    }
    if !open.is_empty() {
        out.push_str("\n# Undetermined (default to `extends`):\n");
        for (f, why) in open {
            out.push_str(&format!("#   {f}: {why}\n"));
        }
    }
    out
}

fn toml_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Runs every probe run in order on a fresh real tokio runtime; call from outside any runtime.
pub fn probe_client(opts: &ClientProbeOptions) -> Result<ClientProbeReport, ProbeError> {
    for o in &opts.only {
        if Mode::parse(o).is_none() {
            let known: Vec<&str> = RUNS.iter().chain(OPT_IN_RUNS).copied().collect();
            return Err(ProbeError::UnknownScenario { name: o.clone(), known: known.join(", ") });
        }
    }
    match opts.request_timeout_bound {
        Some(b) => check_request_timeout_bound(b)
            .map_err(|problem| ProbeError::Io { path: "request-timeout bound".into(), problem })?,
        None if opts.only.iter().any(|o| o == "request-timeout") => {
            return Err(ProbeError::Io {
                path: "request-timeout".into(),
                problem: "the run needs a bound (--request-timeout-bound, e.g. 75s)".into(),
            })
        }
        None => {}
    }
    if opts.command.is_empty() {
        return Err(ProbeError::Io { path: "client command".into(), problem: "empty".into() });
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ProbeError::Io { path: "tokio runtime".into(), problem: e.to_string() })?;
    let mut runs = Vec::new();
    for name in RUNS.iter().chain(OPT_IN_RUNS) {
        // The opt-in runs run when their option is set (and only then); the others when no
        // run is named or this one is.
        let wanted = match *name {
            "request-timeout" => opts.request_timeout_bound.is_some(),
            _ => opts.only.is_empty() || opts.only.iter().any(|o| o == name),
        };
        if !wanted {
            continue;
        }
        let mode = Mode::parse(name).expect("RUNS are all parseable");
        runs.push(rt.block_on(run_one(opts, name, mode))?);
    }
    let (fields, undetermined) = decide(&runs);
    let header = vec![
        format!("mcpsim client profile observed by `mcpsim probe client -- {}`", opts.command.join(" ")),
        format!("recorded from a real run (wall clock, server side), mcpsim {}", env!("CARGO_PKG_VERSION")),
        "Each field's comment is the observation that decided it; undetermined fields default to `extends`.".into(),
    ];
    let profile_toml = profile_toml(&opts.name, &header, &fields, &undetermined);
    let mut report = ClientProbeReport { runs, fields, undetermined, profile_toml, profile_file: None };
    if let Some(dir) = &opts.out_dir {
        let io = |p: &std::path::Path, e: std::io::Error| ProbeError::Io {
            path: p.display().to_string(),
            problem: e.to_string(),
        };
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        for r in &mut report.runs {
            let path = dir.join(format!("probe-client-{}.jsonl", r.name));
            std::fs::write(&path, r.trace.to_jsonl()).map_err(|e| io(&path, e))?;
            r.trace_file = Some(path);
        }
        let path = dir.join("client-profile.toml");
        std::fs::write(&path, &report.profile_toml).map_err(|e| io(&path, e))?;
        report.profile_file = Some(path);
    }
    Ok(report)
}

/// The table of runs: what the server side saw and the oracles' verdict.
pub fn run_table(report: &ClientProbeReport) -> String {
    let mut out = format!(
        "{:<14} {:<9} {:<6} {}\n",
        "run", "verdict", "exit", "requests seen (method [Last-Event-ID] → answer, ms, TCP connection)"
    );
    for r in &report.runs {
        let verdict = if r.violations.is_empty() { "ok" } else { "VIOLATED" };
        let exit = r.exit.map(|c| c.to_string()).unwrap_or_else(|| "killed".into());
        let reqs: Vec<String> = r
            .seen
            .iter()
            .map(|s| {
                let what = s.rpc.clone().map(|m| s.tool.clone().unwrap_or(m)).unwrap_or_else(|| s.method.clone());
                let lei = s.last_event_id.as_deref().map(|l| format!(" [{l}]")).unwrap_or_default();
                let ans = if s.answer == "forwarded" { String::new() } else { format!("→{}", s.answer) };
                let kept = if s.reused_after.is_some() { " kept-alive" } else { "" };
                format!("{what}{lei}{ans}@{} (conn {}{kept})", ms(s.at), s.tcp)
            })
            .collect();
        out.push_str(&format!("{:<14} {:<9} {:<6} {}\n", r.name, verdict, exit, reqs.join(" ")));
        let reused = r.seen.iter().filter(|s| s.reused_after.is_some()).count();
        out.push_str(&format!(
            "{:<14} {:<9}   {} requests on {} TCP connections, {reused} on a kept-alive one\n",
            "",
            "",
            r.seen.len(),
            r.tcp_connections
        ));
        if r.other_count > 0 {
            out.push_str(&format!(
                "{:<14} {:<9}   {} requests for other paths than {MCP_PATH} answered 404 and not counted: {}\n",
                "",
                "",
                r.other_count,
                r.other_requests.join(", ")
            ));
        }
        if let Some(last) = r.output.last() {
            out.push_str(&format!("{:<14} {:<9}   client's last line: {last}\n", "", ""));
        }
        for v in &r.violations {
            out.push_str(&format!(
                "{:<14} {:<9}   {} at {}: {} — {}\n",
                "", "", v.invariant, v.at, v.subject, v.detail
            ));
        }
    }
    out
}

/// How much the client's own handling of a refused attempt (the reset read, a new connection)
/// may lengthen one measured delay between two resumes. Seen: up to about 40 ms at 1 s.
const DELAY_SLACK_MS: u64 = 60;

/// The backoff factor of two successive delays `d0`, `d1` (ms): each may be up to
/// [`DELAY_SLACK_MS`] longer than the client's own wait, and not by the same amount, so the
/// ratio is only known to an interval. The simplest factor in it — a multiple of 0.5, else of
/// 0.1, the one nearest the ratio — else the ratio to 0.1. (TypeScript's 1.5 once measured
/// 1040 then 1507 ms: 1.449, which plain rounding read as 1.4.)
fn fit_factor(d0: u64, d1: u64) -> f64 {
    let ratio = d1 as f64 / d0 as f64;
    let lo = d1.saturating_sub(DELAY_SLACK_MS) as f64 / d0 as f64;
    let hi = d1 as f64 / d0.saturating_sub(DELAY_SLACK_MS).max(1) as f64;
    for step in [0.5, 0.1] {
        let first = (lo / step).ceil() as i64;
        let last = (hi / step).floor() as i64;
        let nearest =
            (first..=last).map(|n| n as f64 * step).min_by(|a, b| (a - ratio).abs().total_cmp(&(b - ratio).abs()));
        if let Some(k) = nearest {
            return (k * 10.0).round() / 10.0;
        }
    }
    (ratio * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_backoff_factor_is_the_simplest_one_within_the_measurement_slack() {
        // TypeScript 1.5: 1040 then 1507 ms (the first delay lengthened more than the second).
        assert_eq!(super::fit_factor(1040, 1507), 1.5);
        assert_eq!(super::fit_factor(1010, 1508), 1.5);
        // Python 1.0, rmcp 2.0 (after its immediate first attempt).
        assert_eq!(super::fit_factor(1004, 1008), 1.0);
        assert_eq!(super::fit_factor(2003, 4006), 2.0);
        // No multiple of 0.5 within the slack: a tenth; none of those either: the ratio.
        assert_eq!(super::fit_factor(1000, 1300), 1.3);
        assert_eq!(super::fit_factor(10_000, 13_050), 1.3);
        assert_eq!(super::fit_factor(10_000, 13_460), 1.3);
    }
    use super::*;

    /// rmcp under `retry-long`: an immediate resume at 250 ms, refused, then the next due 3 s
    /// later (the field). The run must not call it silent at 3.3 s, as it did on a loaded machine;
    /// without the field (`cut-refuse`) it is silent after twice its last delay and 3 s.
    #[test]
    fn a_client_waiting_out_the_retry_field_is_not_silent() {
        let ms = Duration::from_millis;
        let first = [(ms(250), ms(0))];
        assert!(!silent_since(ms(3_300), &first, Some(ms(3_000))));
        assert!(!silent_since(ms(9_200), &first, Some(ms(3_000))));
        assert!(silent_since(ms(9_300), &first, Some(ms(3_000))));
        assert!(silent_since(ms(3_300), &first, None));
        assert!(!silent_since(ms(3_200), &first, None));
        // A delay longer than the field counts as it is.
        let later = [(ms(250), ms(0)), (ms(5_250), ms(5_000))];
        assert!(!silent_since(ms(18_200), &later, Some(ms(3_000))));
        assert!(silent_since(ms(18_300), &later, Some(ms(3_000))));
        assert!(!silent_since(ms(1_000), &[], Some(ms(3_000))));
    }

    /// A run whose cut stream was cut at 250 ms and resumed (refused) at these times, in ms.
    fn run(name: &'static str, resumes_at: &[u64]) -> ClientRun {
        let resume = |at: u64| Seen {
            at: Duration::from_millis(at),
            method: "GET".into(),
            session: Some("s".into()),
            last_event_id: Some("1-1".into()),
            rpc: None,
            tool: None,
            id: None,
            cancels: None,
            answer: "refused".into(),
            tcp: 1,
            reused_after: None,
        };
        ClientRun {
            name,
            seen: resumes_at.iter().map(|at| resume(*at)).collect(),
            tcp_connections: resumes_at.len() as u64,
            kept_alive: 0,
            offered: Vec::new(),
            other_requests: Vec::new(),
            other_count: 0,
            cut_at: Some(Duration::from_millis(250)),
            cut_after: Some("1-1".into()),
            call_closed_at: None,
            bound: None,
            exit: None,
            exit_at: None,
            ended_at: Duration::from_secs(20),
            output: Vec::new(),
            trace: Trace::new(0, json!({})),
            violations: Vec::new(),
            trace_file: None,
        }
    }

    /// A run of requests, each `(connection, the answer its connection had carried)`.
    fn conns(name: &'static str, reqs: &[(u64, Option<&str>)], kept_alive: u64) -> ClientRun {
        let mut r = run(name, &[]);
        r.seen = reqs
            .iter()
            .enumerate()
            .map(|(i, (tcp, after))| Seen {
                at: Duration::from_millis(100 * i as u64),
                method: "POST".into(),
                session: None,
                last_event_id: None,
                rpc: Some(format!("m{i}")),
                tool: None,
                id: None,
                cancels: None,
                answer: "forwarded".into(),
                tcp: *tcp,
                reused_after: after.map(str::to_string),
            })
            .collect();
        r.tcp_connections = reqs.iter().map(|(t, _)| *t).max().unwrap_or(0);
        r.kept_alive = kept_alive;
        r
    }

    #[test]
    fn keep_alive_is_true_only_for_a_request_on_a_connection_that_carried_a_complete_answer() {
        let reuses = [conns("cut-resume", &[(1, None), (1, Some("m0: 200 application/json")), (2, None)], 2)];
        let (v, why) = decide_keep_alive(&reuses).expect("decided");
        assert_eq!(v, "true");
        assert!(why.contains("3 requests on 2 TCP connections") && why.contains("m1 at 100 ms after m0: 200"), "{why}");
        // Offered (the connection left open after a complete answer), never taken.
        let never = [conns("cut-resume", &[(1, None), (2, None), (3, None)], 2)];
        let (v, why) = decide_keep_alive(&never).expect("decided");
        assert_eq!(v, "false", "{why}");
        // Never offered: nothing to decide from.
        assert!(decide_keep_alive(&[conns("cut-resume", &[(1, None), (2, None)], 0)]).is_err());
    }

    #[test]
    fn reuse_after_tells_a_client_that_reuses_after_any_answer_from_one_that_reuses_after_json_only() {
        let json = "initialize: 200 application/json";
        let accepted = "notifications/initialized: 202";
        // Reused after a 202: any complete answer will do.
        let mut any = conns("cut-resume", &[(1, None), (1, Some(json)), (1, Some(accepted))], 2);
        any.offered = vec![json.into(), accepted.into()];
        assert_eq!(decide_reuse_after(&[any]).expect("decided").0, "\"any\"");
        // Reused after the JSON answer only, while the 202's connection was left open unused.
        let mut json_only = conns("cut-resume", &[(1, None), (1, Some(json)), (2, None)], 2);
        json_only.offered = vec![json.into(), accepted.into()];
        let (v, why) = decide_reuse_after(&[json_only]).expect("decided");
        assert_eq!(v, "\"json-body\"", "{why}");
        // Only JSON answers were ever left open: nothing tells the two apart.
        let mut undecided = conns("cut-resume", &[(1, None), (1, Some(json))], 1);
        undecided.offered = vec![json.into()];
        assert!(decide_reuse_after(&[undecided]).is_err());
    }

    /// An empty-resume run: resumes at these times, the first `empties` answered empty.
    fn empty_resume(resumes_at: &[u64], empties: usize) -> ClientRun {
        let mut r = run("empty-resume", resumes_at);
        for s in r.seen.iter_mut().take(empties) {
            s.answer = "empty-200".into();
        }
        r
    }

    fn fields(pairs: &[(&str, &str)]) -> Fields {
        pairs.iter().map(|(k, v)| (k.to_string(), (v.to_string(), String::new()))).collect()
    }

    #[test]
    fn counter_reset_is_read_from_the_resumes_after_the_empty_answers_against_the_cap() {
        let capped = fields(&[("reconnect.max_attempts", "2"), ("close_handling.on_empty_resume", "\"same-id\"")]);
        // Python: two empty answers, then a third resume: a 200 zeroed the count.
        let (v, why) = decide_counter_reset(&[empty_resume(&[1250, 2275, 3305], 2)], &capped).expect("decided");
        assert_eq!(v, "\"on-successful-reconnect\"", "{why}");
        // Two empty answers and nothing more: only an event zeroes it.
        let (v, _) = decide_counter_reset(&[empty_resume(&[1250, 2275], 2)], &capped).expect("decided");
        assert_eq!(v, "\"on-event\"");
        // Unlimited attempts, or an empty answer that is no counted attempt: nothing to count.
        let unlimited =
            fields(&[("reconnect.max_attempts", "\"none\""), ("close_handling.on_empty_resume", "\"same-id\"")]);
        assert!(decide_counter_reset(&[empty_resume(&[250, 1280, 2301], 2)], &unlimited).is_err());
        let graceful =
            fields(&[("reconnect.max_attempts", "2"), ("close_handling.on_empty_resume", "\"graceful-close\"")]);
        assert!(decide_counter_reset(&[empty_resume(&[250, 1280, 2301], 2)], &graceful).is_err());
    }

    fn retry_field(runs: &[ClientRun]) -> Result<String, String> {
        decide_retry_field(runs).map(|(v, _)| v)
    }

    #[test]
    fn the_retry_field_is_the_one_value_that_predicts_every_delay() {
        // Python-like: own delays 1 s, 1 s; under retry: the field's, 300 ms and 3 s.
        let py = [run("cut-refuse", &[1250, 2250]), run("retry-short", &[550, 850]), run("retry-long", &[3250, 6250])];
        assert_eq!(retry_field(&py).as_deref(), Ok("\"replaces\""));
        // rmcp-like: immediate, then 2 s, 4 s own; 300 ms changes nothing, 3 s makes 3 s, 4 s.
        let rmcp = [
            run("cut-refuse", &[260, 2260, 6260]),
            run("retry-short", &[260, 2260, 6260]),
            run("retry-long", &[260, 3260, 7260]),
        ];
        assert_eq!(retry_field(&rmcp).as_deref(), Ok("\"at-least\""));
        let ignores =
            [run("cut-refuse", &[1250, 2250]), run("retry-short", &[1250, 2250]), run("retry-long", &[1250, 2250])];
        assert_eq!(retry_field(&ignores).as_deref(), Ok("\"ignore\""));
        // The long run alone cannot tell replaces from at-least when the own delays stay short.
        let e = retry_field(&[run("cut-refuse", &[1250, 2250]), run("retry-long", &[3250, 6250])]).unwrap_err();
        assert!(e.contains("replaces, at-least all predict"), "{e}");
        // Delays no value predicts.
        let e = retry_field(&[run("cut-refuse", &[1250, 2250]), run("retry-short", &[5250, 10250])]).unwrap_err();
        assert!(e.contains("no value"), "{e}");
    }
    /// A request-timeout run under `bound`: initialize, the call (id 2) at 300 ms, then what the
    /// client did: a cancel, a closed stream, an exit, each at ms since the run started.
    fn timeout_run(bound: u64, cancel: Option<u64>, closed: Option<u64>, exit: Option<u64>) -> ClientRun {
        let mut r = conns("request-timeout", &[(1, None), (2, None)], 0);
        r.seen[0].rpc = Some("initialize".into());
        r.seen[1].at = Duration::from_millis(300);
        r.seen[1].rpc = Some("tools/call".into());
        r.seen[1].tool = Some("probe_work".into());
        r.seen[1].id = Some(2);
        if let Some(at) = cancel {
            let mut c = r.seen[0].clone();
            c.at = Duration::from_millis(at);
            c.rpc = Some("notifications/cancelled".into());
            c.cancels = Some(2);
            r.seen.push(c);
        }
        r.call_closed_at = closed.map(Duration::from_millis);
        r.exit_at = exit.map(Duration::from_millis);
        r.exit = exit.map(|_| 1);
        r.bound = Some(Duration::from_secs(bound));
        r.cut_at = None;
        r
    }

    #[test]
    fn request_timeout_is_the_first_sign_of_giving_up_within_the_bound_else_none_or_longer() {
        // TypeScript-like: the cancel 60.004 s after the call, then the stream closed and the exit.
        let ts = timeout_run(75, Some(60_304), Some(60_310), Some(60_400));
        let (v, why) = decide_request_timeout(&ts).expect("decided");
        assert_eq!(v, "\"1m\"", "{why}");
        assert!(why.contains("sent notifications/cancelled for request 2 at 60004 ms"), "{why}");
        // The same client under a 30 s bound: nothing by the bound.
        let short = timeout_run(30, None, None, None);
        let (v, why) = decide_request_timeout(&short).expect("decided");
        assert_eq!(v, "\"none\"", "{why}");
        assert!(why.contains("longer than 30 s"), "{why}");
        // A sign after the bound (seen in the grace) is no timeout within it.
        let late = timeout_run(30, Some(30_900), None, None);
        assert_eq!(decide_request_timeout(&late).expect("decided").0, "\"none\"");
        // No cancel, but the stream closed (and an exit): the earliest counts; 100 ms steps below 10 s.
        let closes = timeout_run(75, None, Some(2_849), Some(2_900));
        let (v, why) = decide_request_timeout(&closes).expect("decided");
        assert_eq!(v, "\"2500ms\"", "{why}");
        // A cancel for another request is not the call's.
        let mut other = timeout_run(75, Some(10_300), None, None);
        other.seen[2].cancels = Some(7);
        assert_eq!(decide_request_timeout(&other).expect("decided").0, "\"none\"");
        // No call: nothing to time.
        let mut no_call = timeout_run(75, None, None, None);
        no_call.seen.truncate(1);
        assert!(decide_request_timeout(&no_call).is_err());
    }

    #[test]
    fn a_bounded_request_timeout_agrees_with_none_and_with_anything_above_the_bound() {
        let report = |bound: u64| ClientProbeReport {
            runs: vec![timeout_run(bound, None, None, None)],
            fields: Fields::new(),
            undetermined: Vec::new(),
            profile_toml: String::new(),
            profile_file: None,
        };
        let (b75, b30) = (report(75), report(30));
        // Decided 60 s: only a 60 s profile agrees.
        assert!(client_field_agrees(&b75, "request_timeout", "\"1m\"", "\"1m\""));
        assert!(!client_field_agrees(&b75, "request_timeout", "\"1m\"", "\"none\""));
        assert!(!client_field_agrees(&b75, "request_timeout", "\"1m\"", "\"2m\""));
        // Nothing by 75 s: a profile of none agrees, ts-sdk's 60 s does not.
        assert!(client_field_agrees(&b75, "request_timeout", "\"none\"", "\"none\""));
        assert!(!client_field_agrees(&b75, "request_timeout", "\"none\"", "\"1m\""));
        // Nothing by 30 s: 60 s is longer than the bound, so it agrees.
        assert!(client_field_agrees(&b30, "request_timeout", "\"none\"", "\"1m\""));
        // Without the bound (the run did not run), only the same literal agrees.
        let none = ClientProbeReport { runs: Vec::new(), ..report(75) };
        assert!(!client_field_agrees(&none, "request_timeout", "\"none\"", "\"1m\""));
        assert!(!client_field_agrees(&b30, "reconnect.max_attempts", "\"none\"", "2"));
    }

    #[test]
    fn the_request_timeout_bound_is_checked_in_one_line() {
        assert_eq!(parse_request_timeout_bound("75s"), Ok(Duration::from_secs(75)));
        for bad in ["1s", "10m", "soon", "", "-5s"] {
            let e = parse_request_timeout_bound(bad).unwrap_err();
            assert!(!e.is_empty() && !e.contains('\n'), "{bad}: {e}");
        }
        // probe_client refuses the run without a bound, and a bound out of range, before running.
        let mut opts = ClientProbeOptions::new(vec!["true".into()]);
        opts.only = vec!["request-timeout".into()];
        let e = probe_client(&opts).unwrap_err().to_string();
        assert!(e.contains("needs a bound"), "{e}");
        opts.request_timeout_bound = Some(Duration::from_secs(3600));
        let e = probe_client(&opts).unwrap_err().to_string();
        assert!(e.contains("outside"), "{e}");
    }
}
