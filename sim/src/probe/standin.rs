//! A stand-in MCP server on loopback with *known* behaviour, implementing the probe-tool
//! contract (`probe_work`, `probe_count`, `probe_notify`): what the probe's fingerprint is
//! tested against. Raw HTTP/1.1, one exchange per connection (`Connection: close`), event ids
//! `<stream>-<seq>` (the `reference` scheme; stream 0 is the standalone GET stream).
//!
//! Not a real server: no tool schemas, no validation beyond what the probe exercises.

use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The answer to a `Last-Event-ID` the stand-in cannot honour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StandinUnknown {
    /// 410 Gone.
    Gone410,
    /// 200, no events, closed at once.
    EmptyClosed,
    /// 200, no events, left open.
    EmptyOpen,
}

/// The stand-in's behaviour.
#[derive(Clone, Debug)]
pub struct StandinConfig {
    /// The answer to a made-up `Last-Event-ID`.
    pub unknown_id: StandinUnknown,
    /// Replay from the given id (included) instead of after it.
    pub replay_from: bool,
    /// Events kept per stream; `None` for all.
    pub retention: Option<usize>,
    /// A second concurrent GET gets 409 (else it is accepted).
    pub second_get_409: bool,
    /// DELETE cancels a running tool (else it runs on).
    pub delete_cancels: bool,
    /// Keep-alive comments at this interval.
    pub keepalive: Option<Duration>,
    /// The `retry:` field of the priming event.
    pub retry_ms: Option<u64>,
    /// A priming event opens each POST stream.
    pub priming: bool,
    /// An evicted (issued, no longer kept) id replays from the oldest kept event instead of
    /// getting the `unknown_id` answer (rmcp's rule).
    pub evicted_from_oldest: bool,
    /// Events carry ids and streams are kept (an event store). Without one (the Python SDK's
    /// and FastMCP's default), events carry no `id:`, nothing is primed, and a GET with a
    /// `Last-Event-ID` is taken as a plain standalone GET, as those SDKs do.
    pub event_store: bool,
    /// It offers the probe tools; without them its only tool is `slow_task`, an ordinary tool
    /// (5 s, a progress notification every 250 ms, no arguments needed).
    pub probe_tools: bool,
    /// A resumed stream gets the events it missed and then nothing more, though it stays open:
    /// no live events, no result (a store that replays, then goes quiet).
    pub quiet_after_replay: bool,
    /// A `probe_work` (or `slow_task`) call's event stream opens and then stays silent: no
    /// priming event, no progress, no result, until the client leaves it (or the stand-in's
    /// 300 s cap on a connection). The client probe's `request-timeout` run: what the client does
    /// on its own while it waits.
    pub silent_calls: bool,
}

impl Default for StandinConfig {
    fn default() -> Self {
        StandinConfig {
            unknown_id: StandinUnknown::Gone410,
            replay_from: false,
            retention: None,
            second_get_409: true,
            delete_cancels: true,
            keepalive: None,
            retry_ms: Some(1000),
            priming: true,
            evicted_from_oldest: false,
            event_store: true,
            probe_tools: true,
            quiet_after_replay: false,
            silent_calls: false,
        }
    }
}

enum Msg {
    Chunk(String),
}

#[derive(Default)]
struct StreamLog {
    events: VecDeque<(u32, String)>,
    next_seq: u32,
    attached: Option<mpsc::UnboundedSender<Msg>>,
    done: bool,
}

struct Session {
    streams: BTreeMap<u32, StreamLog>,
    next_stream: u32,
    cancelled: Arc<AtomicBool>,
}

struct State {
    cfg: StandinConfig,
    sessions: BTreeMap<String, Session>,
    next_session: u64,
    started: BTreeMap<String, u64>,
    completed: BTreeMap<String, u64>,
}

type Shared = Arc<Mutex<State>>;

fn lock(s: &Shared) -> MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running stand-in; stops when dropped.
pub struct Standin {
    /// Where it listens.
    pub addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl Drop for Standin {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Standin {
    /// The URL the probe is given.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Listens on `127.0.0.1:0`.
    pub async fn start(cfg: StandinConfig) -> std::io::Result<Standin> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state: Shared = Arc::new(Mutex::new(State {
            cfg,
            sessions: BTreeMap::new(),
            next_session: 0,
            started: BTreeMap::new(),
            completed: BTreeMap::new(),
        }));
        let accept = tokio::spawn(async move {
            for _ in 0..100_000u32 {
                let Ok((sock, _)) = listener.accept().await else { break };
                let st = state.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(Duration::from_secs(300), serve(sock, st)).await;
                });
            }
        });
        Ok(Standin { addr, accept })
    }
}

/// One HTTP/1.1 request as read off a socket: the probe's stand-in server and the client probe's
/// tap both read requests with [`read_request`].
pub(crate) struct Req {
    /// The request line and headers as received (without the blank line).
    pub(crate) head: String,
    /// The method (`POST`, `GET`, `DELETE`).
    pub(crate) method: String,
    /// Header names lower-cased.
    pub(crate) headers: BTreeMap<String, String>,
    /// The body, de-chunked when it came chunked.
    pub(crate) body: Vec<u8>,
    /// Whether it came with `Transfer-Encoding: chunked`.
    chunked: bool,
}

impl Req {
    /// The request as bytes to forward upstream: as received, or, when it came chunked, with its
    /// body de-chunked and a `Content-Length` instead.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut head = if self.chunked {
            let kept: Vec<&str> =
                self.head.split("\r\n").filter(|l| !l.to_ascii_lowercase().starts_with("transfer-encoding")).collect();
            format!("{}\r\nContent-Length: {}", kept.join("\r\n"), self.body.len())
        } else {
            self.head.clone()
        };
        head.push_str("\r\n\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

/// Reads one request: a head of at most 64 KiB and a body of at most 1 MiB (Content-Length or
/// chunked), each read bounded by 10 s; `None` when the peer closes or stalls.
pub(crate) async fn read_request(sock: &mut TcpStream) -> Option<Req> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
        let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut chunk)).await.ok()?.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let method = lines.next()?.split(' ').next()?.to_string();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers.get("transfer-encoding").is_some_and(|v| v.contains("chunked"));
    let mut body = buf[head_end + 4..].to_vec();
    if chunked {
        for _ in 0..10_000u32 {
            if body.windows(5).any(|w| w == b"0\r\n\r\n") || body.len() > 1 << 20 {
                break;
            }
            let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut chunk)).await.ok()?.ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
        body = dechunk(&body);
    } else {
        let len: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0).min(1 << 20);
        while body.len() < len {
            let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut chunk)).await.ok()?.ok()?;
            if n == 0 {
                return None;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    Some(Req { head, method, headers, body, chunked })
}

fn dechunk(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = raw;
    for _ in 0..10_000u32 {
        let Some(p) = rest.windows(2).position(|w| w == b"\r\n") else { break };
        let size = usize::from_str_radix(String::from_utf8_lossy(&rest[..p]).trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < p + 2 + size {
            break;
        }
        out.extend_from_slice(&rest[p + 2..p + 2 + size]);
        rest = &rest[(p + 4 + size).min(rest.len())..];
    }
    out
}

async fn respond(sock: &mut TcpStream, status: u16, extra: &str, body: Option<&Value>) {
    let text = body.map(|b| b.to_string()).unwrap_or_default();
    let ct = if body.is_some() { "Content-Type: application/json\r\n" } else { "" };
    let head = format!(
        "HTTP/1.1 {status} {}\r\n{ct}{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        text.len()
    );
    let _ = sock.write_all(head.as_bytes()).await;
    let _ = sock.write_all(text.as_bytes()).await;
    let _ = sock.shutdown().await;
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        404 => "Not Found",
        409 => "Conflict",
        410 => "Gone",
        _ => "Status",
    }
}

fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn text_result(id: &Value, v: Value) -> Value {
    result(id, json!({"content": [{"type": "text", "text": v.to_string()}]}))
}

fn frame(ids: bool, stream: u32, seq: u32, data: &str, retry: Option<u64>) -> String {
    let retry = retry.map(|r| format!("retry: {r}\n")).unwrap_or_default();
    let id = if ids { format!("id: {stream}-{seq}\n") } else { String::new() };
    format!("{id}{retry}data: {data}\n\n")
}

/// Appends an event to a stream (evicting beyond retention) and sends it to the attached
/// connection, if any.
fn append(st: &mut State, session: &str, stream: u32, data: &str) {
    let (retention, ids) = (st.cfg.retention, st.cfg.event_store);
    let Some(s) = st.sessions.get_mut(session).and_then(|s| s.streams.get_mut(&stream)) else { return };
    let seq = s.next_seq;
    s.next_seq += 1;
    let f = frame(ids, stream, seq, data, None);
    if ids {
        s.events.push_back((seq, f.clone()));
    }
    if let Some(n) = retention {
        while s.events.len() > n {
            s.events.pop_front();
        }
    }
    if let Some(tx) = &s.attached {
        let _ = tx.send(Msg::Chunk(f));
    }
}

async fn serve(mut sock: TcpStream, st: Shared) {
    let Some(req) = read_request(&mut sock).await else { return };
    let session = req.headers.get("mcp-session-id").cloned();
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let is_init = body.get("method").and_then(Value::as_str) == Some("initialize");
    if req.method == "POST" && is_init {
        let sid = {
            let mut s = lock(&st);
            s.next_session += 1;
            let sid = format!("standin-{}", s.next_session);
            s.sessions.insert(
                sid.clone(),
                Session { streams: BTreeMap::new(), next_stream: 1, cancelled: Arc::new(AtomicBool::new(false)) },
            );
            sid
        };
        let r = result(
            &body["id"],
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "standin", "version": "0"}}),
        );
        respond(&mut sock, 200, &format!("Mcp-Session-Id: {sid}\r\n"), Some(&r)).await;
        return;
    }
    let Some(sid) = session else {
        respond(&mut sock, 400, "", None).await;
        return;
    };
    if !lock(&st).sessions.contains_key(&sid) {
        respond(&mut sock, 404, "", None).await;
        return;
    }
    match req.method.as_str() {
        "DELETE" => {
            {
                let mut s = lock(&st);
                let cancels = s.cfg.delete_cancels;
                if let Some(sess) = s.sessions.remove(&sid) {
                    if cancels {
                        sess.cancelled.store(true, Ordering::SeqCst);
                    }
                }
            }
            respond(&mut sock, 200, "", None).await;
        }
        "GET" => {
            // Without a store there is nothing to resume: the header is not looked at.
            let last = req.headers.get("last-event-id").cloned().filter(|_| lock(&st).cfg.event_store);
            get(sock, st, &sid, last).await
        }
        "POST" => post(sock, st, &sid, body).await,
        _ => respond(&mut sock, 405, "", None).await,
    }
}

async fn post(mut sock: TcpStream, st: Shared, sid: &str, body: Value) {
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    let method = body.get("method").and_then(Value::as_str).unwrap_or("");
    if id.is_null() {
        respond(&mut sock, 202, "", None).await;
        return;
    }
    let probe_tools = lock(&st).cfg.probe_tools;
    if method == "tools/list" {
        let names: &[&str] = if probe_tools { &["probe_work", "probe_count", "probe_notify"] } else { &["slow_task"] };
        let tools: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
        respond(&mut sock, 200, "", Some(&result(&id, json!({"tools": tools})))).await;
        return;
    }
    let name = match body["params"]["name"].as_str().unwrap_or("") {
        "slow_task" if !probe_tools => "slow_task",
        _ if !probe_tools => "",
        other => other,
    };
    let mut args = body["params"]["arguments"].clone();
    if name == "slow_task" {
        args = json!({"duration_ms": 5000, "interval_ms": 250, "key": "slow_task"});
    }
    let key = args["key"].as_str().unwrap_or("default").to_string();
    match name {
        "probe_count" => {
            let v = {
                let s = lock(&st);
                json!({"key": key, "count": s.started.get(&key).copied().unwrap_or(0), "completed": s.completed.get(&key).copied().unwrap_or(0)})
            };
            respond(&mut sock, 200, "", Some(&text_result(&id, v))).await;
        }
        "probe_notify" => {
            let count = args["count"].as_u64().unwrap_or(3).min(10_000);
            let interval = Duration::from_millis(args["interval_ms"].as_u64().unwrap_or(100).clamp(1, 60_000));
            let st2 = st.clone();
            let sid2 = sid.to_string();
            tokio::spawn(async move {
                for i in 1..=count {
                    tokio::time::sleep(interval).await;
                    let mut s = lock(&st2);
                    if let Some(sess) = s.sessions.get_mut(&sid2) {
                        sess.streams.entry(0).or_default();
                    }
                    let data = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": format!("probe_notify {i}/{count}")}});
                    append(&mut s, &sid2, 0, &data.to_string());
                }
            });
            respond(&mut sock, 200, "", Some(&text_result(&id, json!({"scheduled": count})))).await;
        }
        "probe_work" | "slow_task" => {
            let duration = args["duration_ms"].as_u64().unwrap_or(2000).min(600_000);
            let interval = args["interval_ms"].as_u64().unwrap_or(200).clamp(1, 60_000);
            let token = body["params"]["_meta"]["progressToken"].clone();
            let (tx, rx) = mpsc::unbounded_channel();
            if lock(&st).cfg.silent_calls {
                // Counted as started, then nothing: the sender is held (so the stream stays open)
                // until the client closes it.
                *lock(&st).started.entry(key).or_default() += 1;
                write_stream(sock, Vec::new(), rx, None).await;
                drop(tx);
                return;
            }
            let (stream, cancelled, priming, retry) = {
                let mut s = lock(&st);
                *s.started.entry(key.clone()).or_default() += 1;
                let (priming, retry) = (s.cfg.priming && s.cfg.event_store, s.cfg.retry_ms);
                let Some(sess) = s.sessions.get_mut(sid) else { return };
                let stream = sess.next_stream;
                sess.next_stream += 1;
                let mut log = StreamLog { attached: Some(tx), next_seq: 1, ..Default::default() };
                if priming {
                    log.next_seq = 1;
                    log.events.push_back((0, frame(true, stream, 0, "", retry)));
                }
                sess.streams.insert(stream, log);
                (stream, sess.cancelled.clone(), priming, retry)
            };
            let _ = (priming, retry);
            let st2 = st.clone();
            let sid2 = sid.to_string();
            tokio::spawn(async move {
                let ticks = duration / interval;
                let mut done = 0;
                for tick in 1..=ticks {
                    tokio::time::sleep(Duration::from_millis(interval)).await;
                    if cancelled.load(Ordering::SeqCst) {
                        return;
                    }
                    let n = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": tick, "message": format!("probe_work {key} tick {tick}")}});
                    append(&mut lock(&st2), &sid2, stream, &n.to_string());
                    done = tick;
                }
                let mut s = lock(&st2);
                *s.completed.entry(key.clone()).or_default() += 1;
                let r = text_result(&id, json!({"key": key, "ticks": done, "done": true}));
                append(&mut s, &sid2, stream, &r.to_string());
                if let Some(log) = s.sessions.get_mut(&sid2).and_then(|x| x.streams.get_mut(&stream)) {
                    log.done = true;
                    log.attached = None;
                }
            });
            let first: Vec<String> = {
                let s = lock(&st);
                s.sessions
                    .get(sid)
                    .and_then(|x| x.streams.get(&stream))
                    .map(|l| l.events.iter().map(|(_, f)| f.clone()).collect())
                    .unwrap_or_default()
            };
            let keepalive = lock(&st).cfg.keepalive;
            write_stream(sock, first, rx, keepalive).await;
        }
        _ => {
            respond(
                &mut sock,
                200,
                "",
                Some(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "unknown tool"}})),
            )
            .await
        }
    }
}

async fn get(mut sock: TcpStream, st: Shared, sid: &str, last: Option<String>) {
    let keepalive = lock(&st).cfg.keepalive;
    let Some(last) = last else {
        let (tx, rx) = mpsc::unbounded_channel();
        let rejected = {
            let mut s = lock(&st);
            let reject = s.cfg.second_get_409;
            let Some(sess) = s.sessions.get_mut(sid) else { return };
            let log = sess.streams.entry(0).or_default();
            if reject && log.attached.as_ref().is_some_and(|t| !t.is_closed()) {
                true
            } else {
                log.attached = Some(tx);
                false
            }
        };
        if rejected {
            respond(&mut sock, 409, "", None).await;
            return;
        }
        write_stream(sock, Vec::new(), rx, keepalive).await;
        return;
    };
    let parsed = last.split_once('-').and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
    let (tx, rx) = mpsc::unbounded_channel();
    let quiet = lock(&st).cfg.quiet_after_replay;
    let (replay, unknown) = {
        let mut s = lock(&st);
        let (from, unknown_rule, oldest_rule) = (s.cfg.replay_from, s.cfg.unknown_id, s.cfg.evicted_from_oldest);
        let log = parsed.and_then(|(stream, seq)| {
            s.sessions.get_mut(sid).and_then(|x| x.streams.get_mut(&stream)).map(|l| (l, seq))
        });
        match log {
            Some((l, seq))
                if seq < l.next_seq
                    && (oldest_rule || l.events.front().is_some_and(|(oldest, _)| *oldest <= seq + 1)) =>
            {
                let replay: Vec<String> = l
                    .events
                    .iter()
                    .filter(|(s, _)| if from { *s >= seq } else { *s > seq })
                    .map(|(_, f)| f.clone())
                    .collect();
                if !l.done && !quiet {
                    l.attached = Some(tx);
                }
                (replay, None)
            }
            _ => (Vec::new(), Some(unknown_rule)),
        }
    };
    match unknown {
        Some(StandinUnknown::Gone410) => {
            respond(&mut sock, 410, "", Some(&json!({"code": "unknown-event-id"}))).await;
        }
        Some(StandinUnknown::EmptyClosed) => {
            let _ = sock
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
                .await;
            let _ = sock.shutdown().await;
        }
        Some(StandinUnknown::EmptyOpen) => {
            // Attached to nothing: open until the client leaves (bounded by the caller's timeout).
            let (_keep, rx) = mpsc::unbounded_channel();
            write_stream(sock, Vec::new(), rx, keepalive).await;
        }
        None if quiet => {
            // Attached to nothing after the replay: open until the client leaves.
            let (_keep, rx) = mpsc::unbounded_channel();
            write_stream(sock, replay, rx, keepalive).await;
        }
        None => write_stream(sock, replay, rx, keepalive).await,
    }
}

/// Writes an SSE response: the head, `first`, then whatever arrives until the sender is dropped.
async fn write_stream(
    mut sock: TcpStream,
    first: Vec<String>,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    keepalive: Option<Duration>,
) {
    let head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    if sock.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    for f in first {
        if sock.write_all(f.as_bytes()).await.is_err() {
            return;
        }
    }
    let tick = keepalive.unwrap_or(Duration::from_secs(3600));
    let mut probe = [0u8; 64];
    for _ in 0..1_000_000u32 {
        tokio::select! {
            m = rx.recv() => match m {
                Some(Msg::Chunk(f)) => {
                    if sock.write_all(f.as_bytes()).await.is_err() {
                        return;
                    }
                }
                None => break,
            },
            _ = tokio::time::sleep(tick), if keepalive.is_some() => {
                if sock.write_all(b": keepalive\n\n").await.is_err() {
                    return;
                }
            }
            r = sock.read(&mut probe) => {
                if matches!(r, Ok(0) | Err(_)) {
                    return;
                }
            }
        }
    }
    let _ = sock.shutdown().await;
}

/// Starts a stand-in with `cfg` and probes it (scenarios `only`, all when empty) on a fresh
/// real tokio runtime: what the integration tests call, so they need no tokio of their own.
pub fn probe_standin(
    cfg: StandinConfig,
    only: &[&str],
) -> Result<crate::probe::server::run::ProbeReport, crate::probe::error::ProbeError> {
    probe_standin_with(cfg, only, |_| {})
}

/// [`probe_standin`] with the probe's options adjusted by `adjust` (an `--idle-bound`, ...).
pub fn probe_standin_with(
    cfg: StandinConfig,
    only: &[&str],
    adjust: impl FnOnce(&mut crate::probe::server::run::ProbeOptions),
) -> Result<crate::probe::server::run::ProbeReport, crate::probe::error::ProbeError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| crate::probe::error::ProbeError::Io { path: "tokio runtime".into(), problem: e.to_string() })?;
    rt.block_on(async {
        let standin = Standin::start(cfg)
            .await
            .map_err(|e| crate::probe::error::ProbeError::Io { path: "stand-in".into(), problem: e.to_string() })?;
        let mut opts = crate::probe::server::run::ProbeOptions::new(&standin.url());
        opts.only = only.iter().map(|s| s.to_string()).collect();
        adjust(&mut opts);
        let target = crate::probe::target::parse_target(&opts.url, false)?;
        crate::probe::server::run::probe_async(&opts, target).await
    })
}
