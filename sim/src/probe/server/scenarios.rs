//! The probe scenarios: small scripts against a real server through the fault proxy, each with
//! margins of seconds so that timing noise cannot flip what they decide.
//!
//! Every scenario writes its own trace (client-side observations, the application's view, and
//! the few server-side steps inferred from the probe tool's counters) and decides fingerprint
//! fields. A server without the probe tools gets the scenarios that need no tool; the others
//! are reported as skipped.

use crate::probe::error::ProbeError;
use crate::probe::fingerprint::Fingerprint;
use crate::probe::proxy::{FaultGuard, Proxy};
use crate::probe::recorder::http::{Client, Endpoint, Exchange, Item, Outgoing, TraceAs};
use crate::probe::recorder::rec::Rec;
use crate::probe::recorder::sse::RawEvent;
use crate::scenario::faults::{parse_partition, Fault, FaultPlan, PlannedFault};
use mcpsim_model::config::{
    ConnAfterResponse, EventIdScheme, FreshGet, KeepaliveTimer, ResponseMode, SecondGet, StandalonePriming,
    UnknownSession,
};
use mcpsim_model::http::{ClientMessage, Request, ToolCall};
use mcpsim_model::ids::{CallKey, RequestId, SessionId, StreamNo};
use mcpsim_model::trace::{Actor, StepKind, Trace};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::{sleep_until, Instant};

/// Names of the scenarios, in the order they run.
pub const SCENARIOS: &[&str] = &[
    "basics",
    "unknown-session",
    "cut-and-resume",
    "resume-after-completion",
    "made-up-id",
    "cross-session-id",
    "delete-during-tool",
    "standalone",
    "standalone-cut",
    "overrun",
    "idle-expiry",
];

/// What every scenario shares.
pub struct Ctx {
    /// The server, through the proxy.
    pub via_proxy: Endpoint,
    /// The server, directly (instrumentation: `probe_count`).
    pub direct: Endpoint,
    /// The fault proxy.
    pub proxy: Arc<Proxy>,
    /// Whether `basics` found the probe tools.
    pub has_tools: std::sync::atomic::AtomicBool,
    /// The fingerprint the scenarios decide.
    pub fp: Mutex<Fingerprint>,
    /// The server's event-id scheme, once `basics` saw ids.
    pub scheme: Mutex<Option<EventIdScheme>>,
    /// A session on the direct endpoint for `probe_count`.
    pub admin: Mutex<Option<String>>,
    ids: AtomicU64,
    calls: AtomicU32,
    /// A prefix for tool keys, unique to this probe run (the server's counters outlive it).
    pub run_tag: String,
    /// The stand-ins' replay rule, once known, decides which tick a resumption starts at.
    pub replay_from: Mutex<Option<bool>>,
    /// The user's bound on idleness for `idle-expiry` (skipped when `None`).
    pub idle_bound: Option<Duration>,
    /// The user's own tool for the long call (`--tool NAME --args JSON`), for a server without
    /// the probe tools.
    pub user_tool: Option<UserTool>,
    /// What `basics` saw of the user's tool: (the first event with an id, the result), each
    /// since the call was sent.
    pub user_tool_seen: Mutex<(Option<Duration>, Option<Duration>)>,
}

/// One of the server's own tools, named by the user, standing in for `probe_work`.
#[derive(Clone, Debug)]
pub struct UserTool {
    /// The tool's name.
    pub name: String,
    /// Its arguments (a JSON object).
    pub args: Value,
    /// How long one call runs (`--tool-duration`); measured by `basics` when not given.
    pub duration: Option<Duration>,
}

/// Why a scenario cannot run on this server, if it cannot: what it needs of the probe tools,
/// or of the user's own tool (its events' and result's timing, measured by `basics`).
fn cannot_run(ctx: &Ctx, name: &str) -> Option<String> {
    if matches!(name, "basics" | "unknown-session" | "made-up-id") || ctx.has_tools.load(Ordering::Relaxed) {
        return None;
    }
    let fixed = match name {
        "delete-during-tool" => {
            Some("needs probe_work's ignore_abort and probe_count to tell a tool that ran on from one stopped")
        }
        "standalone" | "standalone-cut" => Some("needs probe_notify (notifications tied to no request)"),
        "overrun" => Some("needs probe_work's 40 ms ticks for 8 s (200 events) to overrun a store"),
        "idle-expiry" => Some("needs probe_work (a 300 ms run and one longer than the idle bound)"),
        _ => None,
    };
    let Some(tool) = &ctx.user_tool else {
        let need =
            fixed.unwrap_or("needs a long tool call that sends events: the probe tools, or --tool NAME --args JSON");
        return Some(format!("no probe tools (probe_work, probe_count, probe_notify): {need}"));
    };
    if let Some(need) = fixed {
        return Some(need.to_string());
    }
    let (first_id, result) = *ctx.user_tool_seen.lock().unwrap_or_else(|e| e.into_inner());
    let duration = tool.duration.or(result);
    let name_t = &tool.name;
    // (the first id'd event before, the call running at least, at most) in seconds.
    let (event_by, min, max) = match name {
        "cut-and-resume" => (2.0, Some(4.0), None),
        "resume-after-completion" => (0.6, Some(1.0), Some(4.0)),
        "cross-session-id" => (1.2, Some(1.3), None),
        _ => return Some(format!("no rule for {name} with a user tool")),
    };
    match first_id {
        None => return Some(format!("{name_t} sent no event with an id in basics: nothing to resume with")),
        Some(t) if t.as_secs_f64() > event_by => {
            return Some(format!(
                "{name_t}'s first event with an id came {:.1} s in; this scenario needs one within {event_by} s",
                t.as_secs_f64()
            ))
        }
        Some(_) => {}
    }
    let d = duration.map(|d| d.as_secs_f64());
    match (d, min, max) {
        (None, Some(m), _) => Some(format!(
            "{name_t}'s duration is unknown (no result within basics' 10 s and no --tool-duration); this scenario needs at least {m} s"
        )),
        (Some(d), Some(m), _) if d < m => Some(format!("{name_t} runs {d:.1} s; this scenario needs at least {m} s")),
        (Some(d), _, Some(m)) if d > m => Some(format!("{name_t} runs {d:.1} s; this scenario needs at most {m} s")),
        (None, None, Some(m)) => Some(format!("{name_t}'s duration is unknown; this scenario needs at most {m} s")),
        _ => None,
    }
}

impl Ctx {
    /// The context of one probe run.
    pub fn new(via_proxy: Endpoint, direct: Endpoint, proxy: Arc<Proxy>, run_tag: String) -> Self {
        Ctx {
            via_proxy,
            direct,
            proxy,
            has_tools: std::sync::atomic::AtomicBool::new(false),
            fp: Mutex::new(Fingerprint::default()),
            scheme: Mutex::new(None),
            admin: Mutex::new(None),
            ids: AtomicU64::new(1),
            calls: AtomicU32::new(0),
            run_tag,
            replay_from: Mutex::new(None),
            idle_bound: None,
            user_tool: None,
            user_tool_seen: Mutex::new((None, None)),
        }
    }

    /// The fingerprint, locked.
    pub fn fp(&self) -> MutexGuard<'_, Fingerprint> {
        self.fp.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    fn scheme(&self) -> Option<EventIdScheme> {
        *self.scheme.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `probe_count` for a key, on the direct endpoint: (executions started, completed).
    pub async fn count(&self, key: &str) -> Option<(u64, u64)> {
        let client = Client::new(self.direct.clone(), Rec::new());
        // The admin session may have expired (idle-expiry): then a new one, once.
        for _ in 0..2 {
            let admin = self.admin.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let session = match admin {
                Some(s) => s,
                None => {
                    let s = handshake(&client, self.next_id(), "mcpsim-probe-admin").await.ok()?;
                    *self.admin.lock().unwrap_or_else(|e| e.into_inner()) = Some(s.clone());
                    s
                }
            };
            let body = tool_call(self.next_id(), "probe_count", json!({"key": key}));
            let mut ex = client.send(Outgoing::post(Some(&session), body), None).await.ok()?;
            if ex.status == 404 {
                *self.admin.lock().unwrap_or_else(|e| e.into_inner()) = None;
                continue;
            }
            let v = ex.json(Duration::from_secs(10)).await?;
            let text: Value = serde_json::from_str(v["result"]["content"][0]["text"].as_str()?).ok()?;
            return Some((text["count"].as_u64()?, text["completed"].as_u64().unwrap_or(0)));
        }
        None
    }
}

/// A scenario's result.
#[derive(Debug)]
pub struct Outcome {
    /// The scenario's name.
    pub name: &'static str,
    /// Its trace, when it ran.
    pub trace: Option<Trace>,
    /// Why it did not run.
    pub skipped: Option<String>,
    /// What the script observed.
    pub notes: Vec<String>,
}

fn tool_call(id: u64, name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args, "_meta": {"progressToken": id}}})
}

fn initialize_body(id: u64, name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": mcpsim_model::http::PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": name, "version": "0"}}})
}

/// Whether an `initialize` answer is an MCP server's: a 2xx whose JSON-RPC body has a `result`.
fn is_initialize_result(status: u16, answer: Option<&Value>) -> bool {
    (200..300).contains(&status)
        && answer.is_some_and(|v| v.get("jsonrpc").and_then(Value::as_str) == Some("2.0") && v["result"].is_object())
}

/// Untraced initialize + initialized: the session id.
async fn handshake(client: &Client, id: u64, name: &str) -> Result<String, ProbeError> {
    let mut ex = client.send(Outgoing::post(None, initialize_body(id, name)), None).await?;
    let session =
        ex.session_header.clone().ok_or_else(|| ProbeError::Protocol("initialize minted no Mcp-Session-Id".into()))?;
    let _ = ex.json(Duration::from_secs(5)).await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    if let Ok(mut ex) = client.send(Outgoing::post(Some(&session), note), None).await {
        let _ = ex.drain(Duration::from_secs(5)).await;
    }
    Ok(session)
}

/// A progress tick's number, from an event's data.
pub fn progress_tick(e: &RawEvent) -> Option<u32> {
    let v: Value = serde_json::from_str(e.data.as_deref()?).ok()?;
    (v["method"] == "notifications/progress").then(|| v["params"]["progress"].as_f64().map(|p| p as u32)).flatten()
}

/// The probe tool's result text, from an event's data or a JSON body.
fn result_text(v: &Value) -> Option<Value> {
    serde_json::from_str(v.get("result")?["content"][0]["text"].as_str()?).ok()
}

fn event_json(e: &RawEvent) -> Option<Value> {
    serde_json::from_str(e.data.as_deref()?).ok()
}

/// The events of some items.
/// What a second standalone GET got, from its status, the notifications it received and whether
/// its stream ended within the read (`on_g2`), the notifications the first received, and whether
/// the first ended: the `second_get` value, or why none can be told.
fn second_get_seen(
    st2: u16,
    on_g2: Option<(usize, bool)>,
    notes: usize,
    g1_ended: bool,
) -> Result<(SecondGet, String), String> {
    match (st2, on_g2) {
        (409, _) => Ok((SecondGet::Reject409, "a second GET while the first was open answered 409".to_string())),
        (400, _) => Ok((SecondGet::Reject400, "a second GET while the first was open answered 400".to_string())),
        (200, Some((n2, ended2))) => match (notes > 0, n2 > 0) {
            (true, false) if ended2 => Ok((SecondGet::EmptyClosed, format!("a second GET answered 200 and its stream ended at once with nothing; the {notes} notifications sent then went to the first"))),
            (true, false) => Ok((SecondGet::Shadow, format!("a second GET answered 200 and stayed open; the {notes} notifications sent then went to the first, none to the second"))),
            (false, true) if g1_ended => Ok((SecondGet::Replace, format!("a second GET answered 200; the first ended, the second got {n2} notifications"))),
            (false, true) => Ok((SecondGet::Accept, format!("a second GET answered 200; the first stayed open with nothing, the second got {n2} notifications"))),
            (a, b) => Err(format!("a second GET answered 200; notifications on the first: {a}, on the second: {b}")),
        },
        (other, _) => Err(format!("a second GET answered {other}")),
    }
}

fn events(items: &[Item]) -> Vec<&RawEvent> {
    items.iter().filter_map(|i| if let Item::Event(e) = i { Some(e) } else { None }).collect()
}

/// The result of a tool call among items, if it came.
fn find_result(items: &[Item]) -> Option<Value> {
    items.iter().find_map(|i| match i {
        Item::Event(e) => event_json(e).filter(|v| v.get("result").is_some()),
        Item::Json(v) => v.get("result").is_some().then(|| v.clone()),
        _ => None,
    })
}

/// The event-id scheme the ids look like.
pub fn classify(ids: &[String]) -> Option<EventIdScheme> {
    let is_uuid = |s: &str| {
        s.len() == 36
            && s.char_indices()
                .all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() })
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let is_ts = |s: &str| {
        let parts: Vec<&str> = s.rsplitn(3, '_').collect();
        parts.len() == 3 && digits(parts[1]) && !parts[0].is_empty()
    };
    let is_rmcp = |s: &str| match s.split_once('/') {
        Some((a, b)) => digits(a) && digits(b),
        None => digits(s),
    };
    let is_ref = |s: &str| s.split_once('-').is_some_and(|(a, b)| digits(a) && digits(b));
    if ids.is_empty() {
        return None;
    }
    let all = |f: &dyn Fn(&str) -> bool| ids.iter().all(|i| f(i));
    if all(&is_uuid) {
        Some(EventIdScheme::PySdk)
    } else if all(&is_ts) {
        Some(EventIdScheme::TsSdk)
    } else if all(&is_rmcp) {
        Some(EventIdScheme::Rmcp)
    } else if all(&is_ref) {
        Some(EventIdScheme::Reference)
    } else {
        None
    }
}

fn scheme_name(s: EventIdScheme) -> &'static str {
    match s {
        EventIdScheme::Reference => "reference",
        EventIdScheme::TsSdk => "ts-sdk",
        EventIdScheme::PySdk => "py-sdk",
        EventIdScheme::Rmcp => "rmcp",
    }
}

/// A `Last-Event-ID` the server never issued, shaped like its own ids.
pub fn made_up_id(scheme: Option<EventIdScheme>) -> &'static str {
    match scheme {
        Some(EventIdScheme::TsSdk) => "mcpsimprobe0000_0_madeupid",
        Some(EventIdScheme::PySdk) => "00000000-0000-4000-8000-00000000beef",
        Some(EventIdScheme::Rmcp) => "999/999",
        Some(EventIdScheme::Reference) => "999-999",
        None => "mcpsim-probe-made-up-id",
    }
}

/// One tool call the script issued.
struct CallRec {
    session: SessionId,
    stream: StreamNo,
    request: RequestId,
    call: CallKey,
    key: String,
    ticks: Option<u32>,
}

/// The per-scenario script state.
struct Script<'a> {
    ctx: &'a Ctx,
    name: &'static str,
    rec: Rec,
    client: Client,
    created: Vec<SessionId>,
    deleted: Vec<SessionId>,
    held: Option<SessionId>,
    next_stream: std::collections::BTreeMap<SessionId, u32>,
    calls: Vec<CallRec>,
    notes: Vec<String>,
    plan: FaultPlan,
    notifications: Option<(SessionId, u32)>,
    t0: Instant,
    /// The faults this script started; dropped with it.
    fault_guards: Vec<FaultGuard>,
}

impl<'a> Script<'a> {
    fn new(ctx: &'a Ctx, name: &'static str) -> Self {
        let rec = Rec::new();
        Script {
            ctx,
            name,
            client: Client::new(ctx.via_proxy.clone(), rec.clone()),
            rec,
            created: Vec::new(),
            deleted: Vec::new(),
            held: None,
            next_stream: Default::default(),
            calls: Vec::new(),
            notes: Vec::new(),
            plan: FaultPlan::default(),
            notifications: None,
            t0: Instant::now(),
            fault_guards: Vec::new(),
        }
    }

    fn note(&mut self, s: impl Into<String>) {
        self.notes.push(s.into());
    }

    async fn at(&self, secs: f64) {
        sleep_until(self.t0 + Duration::from_secs_f64(secs)).await;
    }

    /// Schedules faults of the simulator's vocabulary, from the script's start. The script
    /// holds their guard: however it ends (its last line, an early return, an error, a
    /// timeout dropping it), its faults end with it.
    fn faults(&mut self, faults: Vec<PlannedFault>) -> Result<(), ProbeError> {
        let elapsed = self.t0.elapsed();
        let shifted: Vec<PlannedFault> =
            faults.iter().map(|f| PlannedFault { at: f.at.saturating_sub(elapsed), fault: f.fault.clone() }).collect();
        for f in faults {
            self.rec.push(Actor::Fault, StepKind::Fault { fault: f.to_string() });
            self.plan.push(f);
        }
        let guard = self.ctx.proxy.run_plan(&FaultPlan::new(shifted)).map_err(ProbeError::Protocol)?;
        self.fault_guards.push(guard);
        Ok(())
    }

    async fn init(&mut self, client_name: &str) -> Result<SessionId, ProbeError> {
        let id = self.ctx.next_id();
        self.rec.bind_init(id);
        let trace =
            TraceAs { request: Request::initialize(RequestId(id), client_name), session: None, stream: StreamNo(0) };
        let mut ex = self.client.send(Outgoing::post(None, initialize_body(id, client_name)), Some(trace)).await?;
        let (status, content_type) = (ex.status, ex.content_type.clone());
        let header = ex.session_header.clone().map(SessionId::from);
        let answer = ex.json(Duration::from_secs(5)).await;
        if !is_initialize_result(status, answer.as_ref()) {
            return Err(ProbeError::Protocol(format!(
                "initialize answered {status} {:?}{}, not a JSON-RPC result",
                crate::error::escape(&content_type),
                if answer.is_some() { " with a JSON-RPC error or an odd body" } else { "" }
            )));
        }
        let Some(session) = header else {
            return Err(ProbeError::NoSession(format!("initialize answered {status} without an Mcp-Session-Id")));
        };
        self.rec.push(Actor::Server, StepKind::SessionCreated { session: session.clone(), client: client_name.into() });
        let trace = TraceAs {
            request: Request::post(Some(session.clone()), ClientMessage::Initialized),
            session: Some(session.clone()),
            stream: StreamNo(0),
        };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let mut ex = self.client.send(Outgoing::post(Some(&session.0), note), Some(trace)).await?;
        let _ = ex.drain(Duration::from_secs(5)).await;
        self.created.push(session.clone());
        self.held = Some(session.clone());
        Ok(session)
    }

    /// POSTs `probe_work`; the exchange and the index of the call.
    async fn work(
        &mut self,
        session: &SessionId,
        key: &str,
        duration_ms: u64,
        interval_ms: u64,
    ) -> Result<(Exchange, usize), ProbeError> {
        let id = self.ctx.next_id();
        let call = CallKey(self.ctx.calls.fetch_add(1, Ordering::Relaxed));
        let key = format!("{}-{key}", self.ctx.run_tag);
        self.rec.bind_call(id, call);
        let tool = self.ctx.user_tool.as_ref().map_or("probe_work", |t| t.name.as_str()).to_string();
        self.rec.push(Actor::App, StepKind::AppCall { call, tool: tool.clone(), idempotent: false });
        let n = self.next_stream.entry(session.clone()).or_insert(1);
        let stream = StreamNo(*n);
        *n += 1;
        let request = Request::post(
            Some(session.clone()),
            ClientMessage::CallTool {
                id: RequestId(id),
                call: ToolCall { tool, key: call, idempotency_key: None, tasks: false },
            },
        );
        let body = match &self.ctx.user_tool {
            Some(t) => tool_call(id, &t.name, t.args.clone()),
            None => {
                tool_call(id, "probe_work", json!({"duration_ms": duration_ms, "interval_ms": interval_ms, "key": key}))
            }
        };
        let trace = TraceAs { request, session: Some(session.clone()), stream };
        let ex = self.client.send(Outgoing::post(Some(&session.0), body), Some(trace)).await?;
        self.calls.push(CallRec { session: session.clone(), stream, request: RequestId(id), call, key, ticks: None });
        Ok((ex, self.calls.len() - 1))
    }

    /// The application gives up on call `i` (it stopped reading, or deleted the session): it is
    /// told the outcome is unknown, which resolves the call.
    fn abandon(&self, i: usize, reason: &str) {
        let call = self.calls[i].call;
        self.rec.push(Actor::App, StepKind::AppUnknownOutcome { call, reason: reason.into() });
    }

    /// Notes the result's tick count for call `i`, if `items` hold its result.
    fn saw_result(&mut self, i: usize, items: &[Item]) {
        if let Some(t) = find_result(items).as_ref().and_then(result_text).and_then(|t| t["ticks"].as_u64()) {
            self.calls[i].ticks = Some(t as u32);
        }
    }

    async fn get(&self, session: &SessionId, stream: StreamNo, last: Option<&str>) -> Result<Exchange, ProbeError> {
        let request = Request::get(Some(session.clone()), last.map(mcpsim_model::ids::EventId::from));
        let trace = TraceAs { request, session: Some(session.clone()), stream };
        self.client.send(Outgoing::get(&session.0, last), Some(trace)).await
    }

    async fn delete(&mut self, session: &SessionId) -> Result<u16, ProbeError> {
        let trace =
            TraceAs { request: Request::delete(session.clone()), session: Some(session.clone()), stream: StreamNo(0) };
        let mut ex = self.client.send(Outgoing::delete(&session.0), Some(trace)).await?;
        let status = ex.status;
        let _ = ex.drain(Duration::from_secs(5)).await;
        if (200..300).contains(&status) {
            self.deleted.push(session.clone());
            if self.held.as_ref() == Some(session) {
                self.held = None;
            }
        }
        Ok(status)
    }

    /// Reads the server's execution ledger, infers what was never seen, and seals the trace.
    async fn finish(self) -> Outcome {
        let Script { ctx, name, rec, created, deleted, held, calls, mut notes, plan, notifications, .. } = self;
        // Without an event store nothing the client missed was ever stored: what never arrived
        // is not inferred as stored (the oracles judge stored events), only counted in a note.
        let no_store = ctx.fp().value("event_store") == Some("\"none\"");
        for c in &calls {
            match ctx.count(&c.key).await {
                Some((started, _)) => {
                    for _ in 0..started.min(100) {
                        rec.push(
                            Actor::Server,
                            StepKind::SideEffect {
                                session: c.session.clone(),
                                request: c.request,
                                call: c.call,
                                tool: "probe_work".into(),
                                idempotent: false,
                            },
                        );
                    }
                }
                None if ctx.user_tool.is_some() && !ctx.has_tools.load(Ordering::Relaxed) => {
                    notes.push(format!("{}: no probe_count, executions not counted", c.call))
                }
                None => notes.push(format!("probe_count {} failed: executions unknown", c.key)),
            }
            match c.ticks {
                Some(total) if no_store => {
                    let missed = rec.unseen_ticks(c.call, total);
                    if missed > 0 {
                        notes.push(format!("{}: {missed} of {total} progress ticks never arrived (no event store: never stored, so not judged lost)", c.call));
                    }
                }
                Some(total) => rec.infer_unseen(&c.session, c.stream, c.request, c.call, total),
                None => notes.push(format!("{}: no result seen, so unseen progress is not inferred", c.call)),
            }
        }
        match notifications {
            Some((session, total)) if no_store => {
                let missed = rec.unseen_notifications(&session, total);
                if missed > 0 {
                    notes.push(format!("{missed} of {total} notifications never arrived (no event store: never stored, so not judged lost)"));
                }
            }
            Some((session, total)) => rec.infer_unseen_notifications(&session, total),
            None => {}
        }
        notes.extend(rec.caps());
        let reused = rec.reused_ids();
        if !reused.is_empty() {
            let text = format!("{name}: the server gave one event id to two different events: {}", reused.join(", "));
            ctx.fp().notes.push(text.clone());
            notes.push(text);
        }
        let live: Vec<SessionId> = created.iter().filter(|s| !deleted.contains(s)).cloned().collect();
        rec.push(
            Actor::Run,
            StepKind::RunEnd { client_session: held, server_sessions: live, other_client_sessions: Vec::new() },
        );
        let header = json!({
            "recorded": "real-run",
            "clock": "wall",
            "probe": name,
            "server": ctx.direct.host,
            "faults": plan,
            "inferred": ["session-created", "event-stored", "side-effect"],
            "started_unix_ms": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
        });
        Outcome { name, trace: Some(rec.into_trace(header)), skipped: None, notes }
    }
}

/// Runs one named scenario; `Err` when it failed (the caller reports it as skipped, or, for
/// `basics`, as nothing reached).
pub async fn run(ctx: &Ctx, name: &'static str) -> Result<Outcome, ProbeError> {
    if let Some(why) = cannot_run(ctx, name) {
        return Ok(Outcome { name, trace: None, skipped: Some(why), notes: vec![] });
    }
    match name {
        "basics" => basics(ctx).await,
        "unknown-session" => unknown_session(ctx).await,
        "cut-and-resume" => cut_and_resume(ctx).await,
        "resume-after-completion" => after_completion(ctx).await,
        "made-up-id" => made_up(ctx).await,
        "cross-session-id" => cross_session(ctx).await,
        "delete-during-tool" => delete_during_tool(ctx).await,
        "standalone" => standalone(ctx).await,
        "standalone-cut" => standalone_cut(ctx).await,
        "overrun" => overrun(ctx).await,
        "idle-expiry" => idle_expiry(ctx).await,
        _ => Err(ProbeError::Protocol(format!("no scenario {name}"))),
    }
}

async fn basics(ctx: &Ctx) -> Result<Outcome, ProbeError> {
    let mut s = Script::new(ctx, "basics");
    let session = match s.init("probe-basics").await {
        Ok(session) => session,
        // Only a JSON-RPC result without a session id says `sessions = false`; a failed
        // exchange decides nothing (the caller reports nothing reached).
        Err(ProbeError::NoSession(e)) => {
            ctx.fp().decide(
                "sessions",
                "false",
                format!("initialize answered a JSON-RPC result and no session id ({e})"),
            );
            s.note("no Mcp-Session-Id: the scenarios that need a session cannot run");
            return Ok(s.finish().await);
        }
        Err(e) => return Err(e),
    };
    ctx.fp().decide("sessions", "true", "initialize answered with an Mcp-Session-Id header");
    // tools/list, untraced: which probe tools exist.
    let id = ctx.next_id();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    let mut ex = s.client.send(Outgoing::post(Some(&session.0), body), None).await?;
    let tools: Vec<String> = ex
        .json(Duration::from_secs(5))
        .await
        .and_then(|v| {
            v["result"]["tools"]
                .as_array()
                .map(|a| a.iter().filter_map(|t| t["name"].as_str().map(String::from)).collect())
        })
        .unwrap_or_default();
    let has = ["probe_work", "probe_count", "probe_notify"].iter().all(|t| tools.iter().any(|x| x == t));
    s.note(format!("tools/list: {}", tools.join(", ")));
    ctx.has_tools.store(has, Ordering::Relaxed);
    if !has {
        match &ctx.user_tool {
            None => {
                s.note("the probe tools are missing and no --tool was given: only basics, unknown-session and made-up-id run");
                return Ok(s.finish().await);
            }
            Some(t) if !tools.contains(&t.name) => {
                return Err(ProbeError::Protocol(format!("--tool {}: tools/list does not list it", t.name)));
            }
            Some(t) => s.note(format!("the probe tools are missing: the long call is the server's own {}", t.name)),
        }
    }
    let sent = Instant::now();
    let (mut ex, i) = s.work(&session, "basic", 1500, 500).await?;
    if ex.status == 200 {
        let mode = match (ex.is_sse(), ex.is_json()) {
            (true, _) => Some(ResponseMode::Sse),
            (_, true) => Some(ResponseMode::Json),
            _ => None,
        };
        let why = format!("a tools/call answered 200 {}", ex.content_type);
        match mode.and_then(literal) {
            Some(v) => ctx.fp().decide("response_mode", v, why),
            None => ctx.fp().leave_open("response_mode", format!("{why}: neither an event stream nor JSON")),
        }
    }
    if !ex.is_sse() {
        let mut fp = ctx.fp();
        fp.leave_open("priming.post", format!("tools/call answered {} (no event stream)", ex.content_type));
    }
    let mut items = Vec::new();
    let (mut first_id, mut result_at) = (None, None);
    let deadline = sent + Duration::from_secs(10);
    for _ in 0..100_000 {
        let item = ex.next(deadline.saturating_duration_since(Instant::now())).await;
        if let Item::Event(e) = &item {
            if e.id.is_some() && first_id.is_none() {
                first_id = Some(sent.elapsed());
            }
        }
        if result_at.is_none() && find_result(std::slice::from_ref(&item)).is_some() {
            result_at = Some(sent.elapsed());
        }
        let last = matches!(item, Item::End | Item::Reset(_) | Item::TimedOut);
        items.push(item);
        if last {
            break;
        }
    }
    if let Some(t) = &ctx.user_tool {
        *ctx.user_tool_seen.lock().unwrap_or_else(|e| e.into_inner()) = (first_id, result_at);
        let progress = events(&items).iter().filter(|e| progress_tick(e).is_some()).count();
        s.note(format!(
            "{}: {} events ({progress} progress), the first with an id at {}, the result at {}",
            t.name,
            events(&items).len(),
            first_id.map_or("never".into(), secs1),
            result_at.map_or("not within 10 s".into(), secs1)
        ));
    }
    s.saw_result(i, &items);
    let evs = events(&items);
    let ids: Vec<String> = evs.iter().filter_map(|e| e.id.clone()).collect();
    let data_events = evs.iter().filter(|e| e.data.as_deref().is_some_and(|d| !d.is_empty())).count();
    {
        let mut fp = ctx.fp();
        match (data_events, ids.len()) {
            (0, _) => fp.leave_open("event_store", "the tools/call answer carried no event with data"),
            (n, 0) => fp.decide(
                "event_store",
                "\"none\"",
                format!("none of the {n} events of a tools/call stream carried an id: nothing can be resumed"),
            ),
            (n, k) => fp.decide(
                "event_store",
                "\"kept\"",
                format!("{k} of the {n} events of a tools/call stream carried ids"),
            ),
        }
        if data_events > 0 && ids.is_empty() {
            fp.leave_open("priming.post", "no event store: no priming event, whatever priming.post says");
        } else if let Some(first) = evs.first() {
            fp.decide(
                "priming.post",
                if first.is_priming() { "true" } else { "false" },
                format!(
                    "first event of a tools/call stream: id {:?}, data {:?}",
                    first.id,
                    first.data.as_deref().map(|d| &d[..d.len().min(40)])
                ),
            );
            let retry = evs.iter().find_map(|e| e.retry_ms);
            match retry {
                Some(r) => fp.decide("retry_ms", r.to_string(), format!("retry: {r} on the tools/call stream")),
                None => fp.leave_open(
                    "retry_ms",
                    "no retry: field on a tools/call stream (none; TOML cannot write none: the reference default is none)",
                ),
            }
        }
        match classify(&ids) {
            None if ids.is_empty() => fp.leave_open("event_ids", "no event carried an id"),
            Some(scheme) => {
                *ctx.scheme.lock().unwrap_or_else(|e| e.into_inner()) = Some(scheme);
                fp.decide(
                    "event_ids",
                    format!("\"{}\"", scheme_name(scheme)),
                    format!("event ids seen: {}", sample(&ids)),
                );
            }
            None => fp.leave_open("event_ids", format!("ids match no known scheme: {}", sample(&ids))),
        }
    }
    Ok(s.finish().await)
}

fn sample(ids: &[String]) -> String {
    let mut v: Vec<&str> = ids.iter().take(3).map(String::as_str).collect();
    if ids.len() > 3 {
        v.push("…");
    }
    v.join(", ")
}

async fn unknown_session(ctx: &Ctx) -> Result<Outcome, ProbeError> {
    let mut s = Script::new(ctx, "unknown-session");
    let bogus = "mcpsim-probe-no-such-session";
    let sid = SessionId::from(bogus);
    let id = ctx.next_id();
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
    let mut post = s.client.send(Outgoing::post(Some(bogus), body), None).await?;
    let post_status = post.status;
    let post_body = post.drain(Duration::from_secs(3)).await;
    let get = s.get(&sid, StreamNo(0), None).await?;
    let get_status = get.status;
    get.abort();
    let delete_status = s.delete(&sid).await?;
    s.deleted.clear();
    let nohdr = s.client.send(Outgoing { method: "GET", protocol: true, ..Default::default() }, None).await?;
    let nohdr_status = nohdr.status;
    nohdr.abort();
    let text = format!(
        "unknown Mcp-Session-Id: POST {post_status}, GET {get_status}, DELETE {delete_status}; no session header: GET {nohdr_status}"
    );
    {
        let mut fp = ctx.fp();
        fp.decide(
            "delete_unknown_status",
            delete_status.to_string(),
            format!("DELETE with a made-up session id answered {delete_status}"),
        );
        let answer = match (post_status, post_body_error(&post_body)) {
            (404, _) => Some(UnknownSession::NotFound404),
            (400, _) => Some(UnknownSession::BadRequest400),
            (200, true) => Some(UnknownSession::RpcError200),
            (503, _) => Some(UnknownSession::Unavailable503),
            _ => None,
        };
        match answer.and_then(literal) {
            Some(v) => {
                fp.decide("unknown_session", v, format!("a POST with a made-up Mcp-Session-Id answered {post_status}"))
            }
            None => fp.leave_open(
                "unknown_session",
                format!("a POST with a made-up Mcp-Session-Id answered {post_status}: no UnknownSession value says so"),
            ),
        }
        match post_body_error_code(&post_body) {
            Some(code) => fp.decide(
                "unknown_session_code",
                code.to_string(),
                format!(
                    "the answer {post_status} to a POST with a made-up Mcp-Session-Id carried JSON-RPC error {code}"
                ),
            ),
            None => fp.leave_open(
                "unknown_session_code",
                format!(
                    "the answer {post_status} to a POST with a made-up Mcp-Session-Id carried no JSON-RPC error code"
                ),
            ),
        }
        fp.notes.push(text.clone());
    }
    s.note(text);
    Ok(s.finish().await)
}

/// A JSON-RPC error in a drained answer.
fn post_body_error(items: &[Item]) -> bool {
    items.iter().any(|i| match i {
        Item::Json(v) => v.get("error").is_some(),
        Item::Event(e) => event_json(e).is_some_and(|v| v.get("error").is_some()),
        _ => false,
    })
}

/// The code of the first JSON-RPC error in a drained answer.
fn post_body_error_code(items: &[Item]) -> Option<i64> {
    items.iter().find_map(|i| {
        let v = match i {
            Item::Json(v) => Some(v.clone()),
            Item::Event(e) => event_json(e),
            _ => None,
        }?;
        v.get("error")?.get("code")?.as_i64()
    })
}

/// A policy value's TOML literal (its serde form).
fn literal<T: serde::Serialize>(v: T) -> Option<String> {
    match serde_json::to_value(v).ok()? {
        Value::String(s) => Some(crate::probe::fingerprint::quote(&s)),
        other => Some(other.to_string()),
    }
}

/// Cut a tool's stream, resume it: the replay rule, priming on resume, disconnection ≠ cancel.
async fn cut_and_resume(ctx: &Ctx) -> Result<Outcome, ProbeError> {
    let mut s = Script::new(ctx, "cut-and-resume");
    let session = s.init("probe-cut").await?;
    let (mut ex, i) = s.work(&session, "cut", 6000, 500).await?;
    s.faults(vec![PlannedFault { at: Duration::from_millis(2200), fault: Fault::Reset }])?;
    let before = ex.drain(Duration::from_secs(4)).await;
    let last =
        events(&before).into_iter().rev().find_map(|e| e.id.clone().map(|id| (id, progress_tick(e).unwrap_or(0))));
    let last_tick = events(&before).iter().filter_map(|e| progress_tick(e)).max().unwrap_or(0);
    s.at(4.0).await;
    let Some((last_id, _)) = last else {
        s.note("no event id arrived before the cut: nothing to resume with");
        ctx.fp().leave_open("replay", "no event id arrived on the tools/call stream before the cut");
        // The script cannot resume without an id: its application gives up on the call.
        s.abandon(i, "no event id to resume the cut stream with");
        return Ok(s.finish().await);
    };
    let stream = s.calls[i].stream;
    let mut resumed = s.get(&session, stream, Some(&last_id)).await?;
    let status = resumed.status;
    let after = resumed.drain(Duration::from_secs(8)).await;
    s.saw_result(i, &after);
    let evs = events(&after);
    {
        let mut fp = ctx.fp();
        if status != 200 {
            fp.leave_open("replay", format!("GET with Last-Event-ID {last_id} during the tool answered {status}"));
        }
        let seen_before: Vec<&str> = events(&before).iter().filter_map(|e| e.id.as_deref()).collect();
        let fresh_priming =
            evs.iter().find(|e| e.is_priming() && e.id.as_deref().is_some_and(|id| !seen_before.contains(&id)));
        match fresh_priming {
            Some(p) => fp.decide(
                "priming.resume",
                "true",
                format!(
                    "the resumed stream carried a new priming event (id {:?}, empty data)",
                    p.id.as_deref().unwrap_or("")
                ),
            ),
            None if !evs.is_empty() => fp.decide(
                "priming.resume",
                "false",
                format!("the resumed stream's {} events held no new priming event", evs.len()),
            ),
            None => {}
        }
        let first_data = evs.iter().find(|e| !e.is_priming());
        match first_data {
            Some(e)
                if e.id.as_deref() == Some(last_id.as_str())
                    || progress_tick(e) == Some(last_tick) && last_tick > 0 =>
            {
                *ctx.replay_from.lock().unwrap_or_else(|e| e.into_inner()) = Some(true);
                fp.decide(
                    "replay",
                    "\"from\"",
                    format!("resumed after tick {last_tick} (id {last_id}): the replay began with that event again"),
                );
            }
            Some(e) if progress_tick(e) == Some(last_tick + 1) || (last_tick == 0 && progress_tick(e) == Some(1)) => {
                *ctx.replay_from.lock().unwrap_or_else(|e| e.into_inner()) = Some(false);
                fp.decide(
                    "replay",
                    "\"after\"",
                    format!(
                        "resumed after tick {last_tick} (id {last_id}): the replay began with tick {}",
                        last_tick + 1
                    ),
                );
            }
            Some(e) => fp.leave_open("replay", format!("resumed after tick {last_tick}: first event was {:?}", e.data)),
            None if status == 200 => {
                fp.leave_open("replay", format!("resume with {last_id} answered 200 with no events"))
            }
            None => {}
        }
    }
    let got_result = find_result(&after).is_some();
    let counted = ctx.count(&s.calls[i].key).await;
    after_replay(&mut ctx.fp(), status, &events(&before), &evs, got_result, counted);
    if got_result && status == 200 {
        // The result arrives about 2 s into the 8 s read: 6 s to close, or not.
        let ended = after.iter().any(|i| matches!(i, Item::End | Item::Reset(_)));
        let v = if ended { ConnAfterResponse::Close } else { ConnAfterResponse::StayOpen };
        let why = if ended {
            "the resumed connection of the running tool ended after its result"
        } else {
            "the resumed connection of the running tool stayed open for seconds after its result"
        };
        if let Some(v) = literal(v) {
            ctx.fp().decide("resumed_on_response", v, why);
        }
    }
    if let Some((started, completed)) = counted {
        let mut fp = ctx.fp();
        if completed >= 1 {
            fp.decide(
                "disconnect_cancels",
                "false",
                format!("the tool whose stream was cut ran to completion (started {started}, completed {completed})"),
            );
        } else if started >= 1 {
            fp.decide("disconnect_cancels", "true", "the tool whose stream was cut never completed");
        }
    }
    s.note(format!(
        "resume {status}: {} events, result {}",
        evs.len(),
        if got_result { "delivered" } else { "missing" }
    ));
    Ok(s.finish().await)
}

/// `server.after_replay` from a resume of a tool's stream during the tool: what the resumed
/// connection got after the events it missed. Its result, or a progress event stored after the
/// last one the replay could hold, is `live`; missed events replayed and then nothing, while the
/// tool went on to complete (the server's own count), is `quiet`.
fn after_replay(
    fp: &mut Fingerprint,
    status: u16,
    before: &[&RawEvent],
    after: &[&RawEvent],
    got_result: bool,
    counted: Option<(u64, u64)>,
) {
    if status != 200 {
        return fp.leave_open("after_replay", format!("the resume was answered {status}"));
    }
    let last_before = before.iter().filter_map(|e| progress_tick(e)).max().unwrap_or(0);
    let ticks: Vec<u32> = after.iter().filter_map(|e| progress_tick(e)).collect();
    let replayed = ticks.iter().filter(|t| **t > last_before).count();
    if got_result {
        return fp.decide("after_replay", "\"live\"", "the tool's result arrived on the resumed stream");
    }
    match counted {
        Some((_, completed)) if completed >= 1 && replayed > 0 => fp.decide(
            "after_replay",
            "\"quiet\"",
            format!(
                "the resumed stream replayed {replayed} missed progress event(s) (up to tick {}) and then nothing, though the tool completed",
                ticks.iter().max().copied().unwrap_or(0)
            ),
        ),
        Some((_, completed)) if completed >= 1 => fp.leave_open(
            "after_replay",
            "the resumed stream carried no missed event and no result: nothing was replayed to go quiet after",
        ),
        _ => fp.leave_open("after_replay", "no result on the resumed stream and the tool was not seen to complete"),
    }
}

/// Come back after the tool finished: are a finished stream's events still there?
async fn after_completion(ctx: &Ctx) -> Result<Outcome, ProbeError> {
    let mut s = Script::new(ctx, "resume-after-completion");
    let session = s.init("probe-after").await?;
    let (mut ex, i) = s.work(&session, "after", 1500, 300).await?;
    s.faults(vec![PlannedFault { at: Duration::from_millis(700), fault: Fault::Reset }])?;
    let before = ex.drain(Duration::from_secs(3)).await;
    let last = events(&before).into_iter().rev().find_map(|e| e.id.clone());
    s.at(4.5).await;
    let Some(last_id) = last else {
        ctx.fp().leave_open("retention.drop_on_response", "no event id arrived before the cut");
        s.abandon(i, "no event id to resume the cut stream with");
        return Ok(s.finish().await);
    };
    let stream = s.calls[i].stream;
    let mut resumed = s.get(&session, stream, Some(&last_id)).await?;
    let status = resumed.status;
    let after = resumed.drain(Duration::from_secs(3)).await;
    s.saw_result(i, &after);
    let resumes_running = ctx.fp().value("replay").is_some();
    {
        let mut fp = ctx.fp();
        if status == 200 && find_result(&after).is_some() {
            fp.decide(
                "retention.drop_on_response",
                "false",
                format!("2.5 s after the tool finished, a resume with {last_id} replayed its result"),
            );
        } else if status == 200 && events(&after).iter().all(|e| e.is_priming()) && resumes_running {
            fp.decide(
                "retention.drop_on_response",
                "true",
                format!("a resume during the tool replayed, but 2.5 s after it finished the resume with {last_id} got 200 and no events"),
            );
        } else {
            fp.leave_open(
                "retention.drop_on_response",
                format!("resume after completion answered {status} with {} events", events(&after).len()),
            );
        }
    }
    {
        let ended = after.iter().any(|i| matches!(i, Item::End | Item::Reset(_)));
        let mut fp = ctx.fp();
        if status == 200 && find_result(&after).is_some() {
            let v = if ended { ConnAfterResponse::Close } else { ConnAfterResponse::StayOpen };
            let why = if ended {
                "the resume of the finished stream replayed its result, then the connection ended"
            } else {
                "the resume of the finished stream replayed its result and stayed open 3 s"
            };
            if let Some(v) = literal(v) {
                fp.decide("finished_resume", v, why);
            }
        } else {
            fp.leave_open(
                "finished_resume",
                format!("the resume of the finished stream replayed no result ({status}): its events were gone"),
            );
        }
    }
    s.note(format!("resume after completion: {status}, {} events", events(&after).len()));
    Ok(s.finish().await)
}

/// A `Last-Event-ID` the server never issued.
async fn made_up(ctx: &Ctx) -> Result<Outcome, ProbeError> {
    let mut s = Script::new(ctx, "made-up-id");
    let session = s.init("probe-madeup").await?;
    let fake = made_up_id(ctx.scheme());
    let mut ex = s.get(&session, StreamNo(1), Some(fake)).await?;
    let status = ex.status;
    let items = ex.drain(Duration::from_secs(3)).await;
    let evs = events(&items);
    let ended = items.iter().any(|i| matches!(i, Item::End | Item::Reset(_)));
    let why = format!("GET with the made-up Last-Event-ID {fake} answered {status}");
    if ctx.fp().value("event_store") == Some("\"none\"") {
        // Without a store no id is known: the answer is the server's to any resume.
        no_store_resume(&mut ctx.fp(), status, ex.is_sse() && evs.iter().all(|e| e.id.is_none()), &why);
        ex.abort();
        s.note(format!("no event store; made-up id {fake}: {status}, {} events", evs.len()));
        return Ok(s.finish().await);
    }
    {
        let mut fp = ctx.fp();
        match status {
            410 => fp.decide("unknown_id", "\"gone410\"", why),
            409 => fp.decide("unknown_id", "\"conflict409\"", why),
            200 if evs.iter().any(|e| !e.is_priming()) => {
                fp.leave_open("unknown_id", format!("{why} and replayed {} events (from where?)", evs.len()))
            }
            200 if ended => fp.decide("unknown_id", "\"empty-closed\"", format!("{why}, no events, closed at once")),
            200 => fp.decide("unknown_id", "\"empty-open\"", format!("{why}, no events, still open after 3 s")),
            other => fp.leave_open("unknown_id", format!("{why}: no Unhonourable value answers {other}")),
        }
    }
    ex.abort();
    s.note(format!("made-up id {fake}: {status}, {} events, ended {ended}", evs.len()));
    Ok(s.finish().await)
}

/// Decides `resume_without_store` from a resume's answer, for a server without a store.
fn no_store_resume(fp: &mut Fingerprint, status: u16, fresh_stream: bool, why: &str) {
    fp.leave_open("unknown_id", "no event store: every Last-Event-ID is unknown alike (resume_without_store)");
    match status {
        500 => fp.decide("resume_without_store", "\"error500\"", format!("{why} (no event store)")),
        200 if fresh_stream => fp.decide(
            "resume_without_store",
            "\"ignored\"",
            format!("{why} with an event stream, as a fresh GET (no event store)"),
        ),
        other => fp.leave_open(
            "resume_without_store",
            format!("{why} (no event store): no NoStoreResume value answers {other}"),
        ),
    }
}

/// Resume in session B with an id session A was given: one store for all sessions, or one each?
async fn cross_session(ctx: &Ctx) -> Result<Outcome, ProbeError> {
    let mut s = Script::new(ctx, "cross-session-id");
    let a = s.init("probe-scope-a").await?;
    let (mut ex, i) = s.work(&a, "scope", 3000, 500).await?;
    let first = ex.drain(Duration::from_millis(1300)).await;
    ex.abort();
    s.abandon(i, "the script stopped reading session A's stream");
    // The earliest id: events after it exist, so a shared store has something to replay.
    let Some(a_id) = events(&first).into_iter().find_map(|e| e.id.clone()) else {
        ctx.fp().leave_open("store", "no event id arrived in session A");
        return Ok(s.finish().await);
    };
    let b = s.init("probe-scope-b").await?;
    let mut g = s.get(&b, StreamNo(1), Some(&a_id)).await?;
    let status = g.status;
    let items = g.drain(Duration::from_secs(3)).await;
    g.abort();
    let foreign = events(&items)
        .iter()
        .filter(|e| progress_tick(e).is_some() || event_json(e).is_some_and(|v| v.get("result").is_some()))
        .count();
    {
        let mut fp = ctx.fp();
        if status == 200 && foreign > 0 {
            fp.decide(
                "store",
                "\"shared-by-request-id\"",
                format!("session B resuming with session A's id {a_id} was sent {foreign} of A's events"),
            );
        } else {
            fp.decide(
                "store",
                "\"per-session\"",
                format!("session B resuming with session A's id {a_id} got {status} and none of A's events"),
            );
        }
    }
    s.note(format!("session B resumed with session A's first id: {status}, {foreign} of A's events"));
    s.at(3.5).await;
    Ok(s.finish().await)
}

async fn delete_during_tool(ctx: &Ctx) -> Result<Outcome, ProbeError> {
    let mut s = Script::new(ctx, "delete-during-tool");
    let session = s.init("probe-delete").await?;
    let (mut ex, i) = s.work(&session, "delete", 4000, 500).await?;
    // Beside it, untraced on a session of its own, the same tool told to ignore the SDK's
    // cooperative abort signal (`ignore_abort`), deleted at the same moment.
    let side = Client::new(ctx.direct.clone(), Rec::new());
    let side_sid = handshake(&side, ctx.next_id(), "probe-delete-ignore").await.ok();
    let side_key = format!("{}-delete-ignore", ctx.run_tag);
    let mut side_ex = match &side_sid {
        Some(sid) => {
            let args = json!({"duration_ms": 4000, "interval_ms": 500, "key": side_key, "ignore_abort": true});
            side.send(Outgoing::post(Some(sid), tool_call(ctx.next_id(), "probe_work", args)), None).await.ok()
        }
        None => None,
    };
    let _ = ex.drain(Duration::from_millis(1200)).await;
    if let (Some(sid), Some(_)) = (&side_sid, &side_ex) {
        if let Ok(mut d) = side.send(Outgoing::delete(sid), None).await {
            let _ = d.drain(Duration::from_secs(2)).await;
        }
    }
    if let Some(e) = side_ex.take() {
        e.abort();
    }
    let status = s.delete(&session).await?;
    let end = ex.drain(Duration::from_secs(2)).await;
    s.saw_result(i, &end);
    if find_result(&end).is_none() {
        s.abandon(i, "the session was deleted while the tool ran");
    }
    s.at(6.0).await;
    let key = s.calls[i].key.clone();
    let counted = ctx.count(&key).await;
    let ignored = if side_sid.is_some() { ctx.count(&side_key).await } else { None };
    let mut again = s
        .client
        .send(
            Outgoing::post(Some(&session.0), json!({"jsonrpc":"2.0","id": ctx.next_id(),"method":"tools/list"})),
            None,
        )
        .await?;
    let after_status = again.status;
    let _ = again.drain(Duration::from_secs(2)).await;
    {
        let mut fp = ctx.fp();
        fp.decide(
            "delete_status",
            status.to_string(),
            format!("DELETE of a session with a tool running answered {status}"),
        );
        match counted {
            Some((_, 1)) => fp.decide(
                "delete_running_tool",
                "\"run-on\"",
                "the tool running at DELETE completed anyway (probe_count completed = 1, 4.8 s later)",
            ),
            Some((1, 0)) => match ignored {
                Some((_, 1)) => fp.decide(
                    "delete_running_tool",
                    "\"abort-signal\"",
                    "at DELETE the tool that checks the SDK's abort signal stopped (completed 0) and the same tool told to ignore it (ignore_abort) ran to completion: the SDK signals, the tool decides",
                ),
                Some((1, 0)) => fp.decide(
                    "delete_running_tool",
                    "\"cancel\"",
                    "the tool running at DELETE never completed (probe_count completed = 0, 2 s after it would have), nor did one told to ignore the abort signal (ignore_abort)",
                ),
                other => fp.leave_open(
                    "delete_running_tool",
                    format!("the tool running at DELETE stopped; the one told to ignore the abort signal: probe_count {other:?}"),
                ),
            },
            other => fp.leave_open("delete_running_tool", format!("probe_count after DELETE: {other:?}")),
        }
        fp.notes.push(format!("after DELETE the session's requests get {after_status}"));
    }
    s.note(format!("DELETE {status}; the tool's stream then {:?}; later requests {after_status}", end.last()));
    Ok(s.finish().await)
}

async fn standalone(ctx: &Ctx) -> Result<Outcome, ProbeError> {
    let mut s = Script::new(ctx, "standalone");
    // Untraced, on a session of its own: what a fresh GET gets, and a tool whose events are 8 s
    // apart for the keep-alive timer (read while the traced part runs).
    let side = side_session(ctx).await;
    let session = s.init("probe-standalone").await?;
    let mut g1 = s.get(&session, StreamNo::STANDALONE, None).await?;
    if g1.status != 200 || !g1.is_sse() {
        let st = g1.status;
        {
            let mut fp = ctx.fp();
            fp.leave_open("second_get", format!("the standalone GET answered {st}"));
            fp.leave_open("keepalive", format!("the standalone GET answered {st}"));
        }
        return Ok(s.finish().await);
    }
    let first = g1.next(Duration::from_secs(1)).await;
    let priming_id = match &first {
        Item::Event(e) if e.is_priming() => e.id.clone(),
        _ => None,
    };
    {
        let mut fp = ctx.fp();
        match &first {
            Item::Event(e) if e.is_priming() => {
                fp.decide("priming.standalone", "true", "the standalone GET began with an id and empty data")
            }
            Item::TimedOut | Item::Comment => {
                fp.decide("priming.standalone", "false", "nothing but comments in the standalone GET's first second")
            }
            _ => {}
        }
    }
    // A second GET, untraced and kept open while the notifications are sent: which one gets them?
    let g2 = s.client.send(Outgoing::get(&session.0, None), None).await?;
    let st2 = g2.status;
    let g2_read = (st2 == 200).then(|| {
        let mut g2 = g2;
        tokio::spawn(async move { g2.drain(Duration::from_secs(5)).await })
    });
    // Notifications not tied to a request go onto the standalone stream.
    let id = ctx.next_id();
    let mut n = s
        .client
        .send(
            Outgoing::post(Some(&session.0), tool_call(id, "probe_notify", json!({"count": 3, "interval_ms": 300}))),
            None,
        )
        .await?;
    let _ = n.drain(Duration::from_secs(3)).await;
    s.notifications = Some((session.clone(), 3));
    let mut notes = 0;
    let mut first_note_id: Option<Option<String>> = None;
    let mut g1_ended = false;
    let mut last_byte = Instant::now();
    let mut comments: Vec<Duration> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(34);
    for _ in 0..1000 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || comments.len() >= 2 {
            break;
        }
        match g1.next(left).await {
            Item::Event(e) => {
                if !e.is_priming() {
                    notes += 1;
                    first_note_id.get_or_insert(e.id.clone());
                }
                last_byte = Instant::now();
            }
            Item::Comment => {
                comments.push(last_byte.elapsed());
                last_byte = Instant::now();
            }
            Item::End | Item::Reset(_) => {
                g1_ended = true;
                break;
            }
            _ => break,
        }
    }
    g1.abort();
    let on_g2 = match g2_read {
        Some(h) => h
            .await
            .map(|items| {
                let notes = events(&items).iter().filter(|e| !e.is_priming()).count();
                (notes, items.iter().any(|i| matches!(i, Item::End)))
            })
            .ok(),
        None => None,
    };
    let side = match side {
        Some((fresh, timer)) => Some((fresh, timer.await.ok())),
        None => None,
    };
    {
        let mut fp = ctx.fp();
        match second_get_seen(st2, on_g2, notes, g1_ended) {
            Ok((v, why)) => {
                if let Some(v) = literal(v) {
                    fp.decide("second_get", v, why)
                }
            }
            Err(why) => fp.leave_open("second_get", why),
        }
        match (&priming_id, &first_note_id) {
            (Some(p), Some(n)) => {
                let (v, why) = if n.as_deref() == Some(p.as_str()) {
                    (
                        StandalonePriming::ReusedId,
                        format!("the standalone priming event's id {p} came again on the first notification"),
                    )
                } else {
                    (
                        StandalonePriming::Stored,
                        format!(
                            "the standalone priming id {p}, the first notification's {}",
                            n.as_deref().unwrap_or("none")
                        ),
                    )
                };
                if let Some(v) = literal(v) {
                    fp.decide("standalone_priming", v, why);
                }
            }
            (None, _) => fp.leave_open("standalone_priming", "the standalone GET had no priming event"),
            (Some(_), None) => fp.leave_open("standalone_priming", "no notification arrived on the standalone GET"),
        }
        match comments.first() {
            Some(d) => {
                // Two comments in a row give the interval; one alone, its distance from the last event.
                let (d, how) = match comments.get(1) {
                    Some(between) => (*between, "between two consecutive comments"),
                    None => (*d, "from the last event to the only comment"),
                };
                let secs = d.as_secs_f64().round() as u64;
                fp.decide(
                    "keepalive",
                    format!("\"{}s\"", secs.max(1)),
                    format!("comments on a silent standalone stream: {:.1} s {how}", d.as_secs_f64()),
                );
                fp.decide(
                    "close_idle_standalone",
                    "\"none\"",
                    format!(
                        "the silent standalone stream stayed open {:.0} s",
                        last_byte.elapsed().as_secs_f64().max(d.as_secs_f64())
                    ),
                );
            }
            None if !g1_ended => {
                fp.decide("keepalive", "\"none\"", "no comment on a standalone stream left silent for 30 s");
                fp.decide("close_idle_standalone", "\"none\"", "the silent standalone stream stayed open 30 s");
            }
            None => fp.leave_open("keepalive", "the standalone stream ended before a comment"),
        }
        match side {
            Some((fresh, timer)) => {
                match fresh {
                    Some(n) => {
                        let (v, why) = if n > 0 {
                            (
                                FreshGet::Buffered,
                                format!("a fresh GET received {n} notifications sent before it was opened"),
                            )
                        } else {
                            (
                                FreshGet::NewOnly,
                                "a fresh GET received none of the 2 notifications sent before it was opened"
                                    .to_string(),
                            )
                        };
                        if let Some(v) = literal(v) {
                            fp.decide("fresh_get", v, why);
                        }
                    }
                    None => fp.leave_open("fresh_get", "the side session's fresh GET was not answered 200"),
                }
                match timer {
                    Some(Some((comments, events, gap))) if events >= 2 => {
                        let (v, why) = if comments > 0 {
                            (KeepaliveTimer::Fixed, format!("{comments} comment(s) on a tool stream whose events came {gap} s apart, less than the keep-alive interval"))
                        } else {
                            (
                                KeepaliveTimer::AfterSilence,
                                format!(
                                    "no comment on a 17 s tool stream whose {events} events came at most {gap} s apart"
                                ),
                            )
                        };
                        if fp.value("keepalive").is_some_and(|k| k != "\"none\"") {
                            if let Some(v) = literal(v) {
                                fp.decide("keepalive_timer", v, why);
                            }
                        }
                    }
                    _ => {
                        fp.leave_open("keepalive_timer", "the side session's 17 s tool stream was not read to its end")
                    }
                }
            }
            None => {
                fp.leave_open("fresh_get", "no side session could be opened");
                fp.leave_open("keepalive_timer", "no side session could be opened");
            }
        }
    }
    s.note(format!("{notes} events on the standalone stream after probe_notify(3); second GET {st2}"));
    Ok(s.finish().await)
}

/// A second tool stream's comments, events and the widest gap between events (whole seconds).
type TimerRead = Option<(usize, usize, u64)>;

/// An untraced session on the direct endpoint: notifications sent with no GET open, then a
/// fresh GET (how many of them it got); then a 17 s tool with an event every 8 s, read in the
/// background (comments, events, widest gap). `None` when the session cannot be opened.
async fn side_session(ctx: &Ctx) -> Option<(Option<usize>, tokio::task::JoinHandle<TimerRead>)> {
    let client = Client::new(ctx.direct.clone(), Rec::new());
    let sid = handshake(&client, ctx.next_id(), "probe-side").await.ok()?;
    let id = ctx.next_id();
    let body = tool_call(id, "probe_notify", json!({"count": 2, "interval_ms": 100}));
    if let Ok(mut ex) = client.send(Outgoing::post(Some(&sid), body), None).await {
        let _ = ex.drain(Duration::from_secs(3)).await;
    }
    // probe_notify may answer before its notifications are out: let them all go first.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let fresh = match client.send(Outgoing::get(&sid, None), None).await {
        Ok(mut g) if g.status == 200 => {
            let items = g.drain(Duration::from_millis(1500)).await;
            g.abort();
            Some(events(&items).iter().filter(|e| !e.is_priming() && progress_tick(e).is_none()).count())
        }
        Ok(g) => {
            g.abort();
            None
        }
        Err(_) => None,
    };
    let key = format!("{}-keepalive-timer", ctx.run_tag);
    let body = tool_call(ctx.next_id(), "probe_work", json!({"duration_ms": 17000, "interval_ms": 8000, "key": key}));
    let ex = client.send(Outgoing::post(Some(&sid), body), None).await;
    let timer = tokio::spawn(async move {
        let mut ex = ex.ok()?;
        let (mut comments, mut evs, mut gap, mut last) = (0, 0, 0u64, Instant::now());
        let deadline = Instant::now() + Duration::from_secs(20);
        for _ in 0..1000 {
            match ex.next(deadline.saturating_duration_since(Instant::now())).await {
                Item::Event(_) => {
                    evs += 1;
                    gap = gap.max(last.elapsed().as_secs_f64().round() as u64);
                    last = Instant::now();
                }
                Item::Comment => comments += 1,
                Item::End | Item::Json(_) => return Some((comments, evs, gap)),
                _ => return None,
            }
        }
        None
    });
    Some((fresh, timer))
}

async fn standalone_cut(ctx: &Ctx) -> Result<Outcome, ProbeError> {
    let mut s = Script::new(ctx, "standalone-cut");
    let session = s.init("probe-standalone-cut").await?;
    let mut g1 = s.get(&session, StreamNo::STANDALONE, None).await?;
    if g1.status != 200 {
        let st = g1.status;
        s.note(format!("standalone GET answered {st}"));
        return Ok(s.finish().await);
    }
    let id = ctx.next_id();
    let mut n = s
        .client
        .send(
            Outgoing::post(Some(&session.0), tool_call(id, "probe_notify", json!({"count": 8, "interval_ms": 1000}))),
            None,
        )
        .await?;
    let _ = n.drain(Duration::from_secs(3)).await;
    s.notifications = Some((session.clone(), 8));
    s.faults(vec![PlannedFault { at: Duration::from_millis(2800), fault: Fault::Reset }])?;
    let before = g1.drain(Duration::from_secs(4)).await;
    let last = events(&before).into_iter().rev().find_map(|e| e.id.clone());
    s.at(5.5).await;
    let mut g2 = s.get(&session, StreamNo::STANDALONE, last.as_deref()).await?;
    let st = g2.status;
    let after = g2.drain(Duration::from_secs(6)).await;
    g2.abort();
    s.note(format!(
        "{} events before the cut (last id {last:?}); resume {st}: {} events",
        events(&before).len(),
        events(&after).len()
    ));
    Ok(s.finish().await)
}

/// A chatty tool during an outage: how much is kept, and what an evicted id gets.
async fn overrun(ctx: &Ctx) -> Result<Outcome, ProbeError> {
    let mut s = Script::new(ctx, "overrun");
    let session = s.init("probe-overrun").await?;
    // 200 ticks in 8 s; cut off from 1 s to 10 s; back at 10.5 s, after the tool finished.
    let (mut ex, i) = s.work(&session, "overrun", 8000, 40).await?;
    s.faults(vec![parse_partition("1s..10s").map_err(ProbeError::Protocol)?])?;
    let before = ex.drain(Duration::from_secs(3)).await;
    let (last_id, last_tick) = match events(&before)
        .into_iter()
        .rev()
        .find_map(|e| e.id.clone().map(|id| (id, progress_tick(e).unwrap_or(0))))
    {
        Some(x) => x,
        None => {
            ctx.fp().leave_open("retention.max_events", "no event id before the outage");
            s.abandon(i, "no event id to resume the cut stream with");
            return Ok(s.finish().await);
        }
    };
    s.at(10.5).await;
    let stream = s.calls[i].stream;
    let mut r = s.get(&session, stream, Some(&last_id)).await?;
    let status = r.status;
    let head_at = Instant::now();
    let mut items = Vec::new();
    let mut burst = 0u32;
    for _ in 0..10_000 {
        let it = r.next(Duration::from_secs(3)).await;
        let stop = matches!(it, Item::End | Item::Reset(_) | Item::TimedOut);
        if let Item::Event(e) = &it {
            if head_at.elapsed() < Duration::from_millis(400) && !e.is_priming() {
                burst += 1;
            }
        }
        items.push(it);
        if stop {
            break;
        }
    }
    r.abort();
    s.saw_result(i, &items);
    let data: Vec<&RawEvent> = events(&items).into_iter().filter(|e| !e.is_priming()).collect();
    let ended = items.iter().any(|i| matches!(i, Item::End | Item::Reset(_)));
    let keeps_finished = ctx.fp().value("retention.drop_on_response") == Some("false");
    let first_tick = data.iter().find_map(|e| progress_tick(e));
    let from = *ctx.replay_from.lock().unwrap_or_else(|e| e.into_inner()) == Some(true);
    let expected_first = if from { last_tick } else { last_tick + 1 };
    let total = s.calls[i].ticks;
    // Without the result, the contract's count (duration / interval) stands in for the total.
    let missed = Some(total.unwrap_or(8000 / 40).saturating_sub(last_tick));
    {
        let mut fp = ctx.fp();
        match (status, first_tick) {
            (200, Some(f)) if f <= expected_first => {
                fp.leave_open(
                    "retention.max_events",
                    format!(
                        "all {} events missed in a 9 s outage were replayed: at least that many are kept",
                        missed.map_or("?".into(), |m| m.to_string())
                    ),
                );
                fp.leave_open("evicted_id", "nothing was evicted in the overrun scenario");
            }
            (200, Some(f)) => {
                let kept = data.len();
                fp.decide(
                    "retention.max_events",
                    kept.to_string(),
                    format!("resumed after tick {last_tick} of a finished {}-tick stream: replay began at tick {f} and held {kept} events (the result included)", total.unwrap_or(0)),
                );
                fp.decide("evicted_id", "\"from-oldest\"", format!("an evicted id (tick {last_tick}) got 200 and a replay from the oldest kept event (tick {f}), no gap said"));
            }
            // The server keeps finished streams (it replayed one 2.5 s after its end): an empty
            // answer now means the id itself was evicted.
            (200, None) if data.is_empty() && keeps_finished => {
                let missed = missed.map_or("?".into(), |m| m.to_string());
                fp.leave_open(
                    "retention.max_events",
                    format!("fewer than {missed}: the id {missed} events back from the head was gone"),
                );
                let (rule, how) =
                    if ended { ("\"empty-closed\"", "closed at once") } else { ("\"empty-open\"", "left open") };
                fp.decide(
                    "evicted_id",
                    rule,
                    format!("a resume with an id {missed} events back from the head of a kept stream got 200, no events, {how}"),
                );
            }
            (200, None) if data.is_empty() => {
                fp.leave_open(
                    "retention.max_events",
                    format!("a finished stream resumed after tick {last_tick}: 200 with no events"),
                );
            }
            (410, _) => {
                fp.decide("evicted_id", "\"gone410\"", format!("a resume with the evicted id {last_id} answered 410"))
            }
            (409, _) => fp.decide(
                "evicted_id",
                "\"conflict409\"",
                format!("a resume with the evicted id {last_id} answered 409"),
            ),
            (other, _) => fp.leave_open("evicted_id", format!("the resume after the outage answered {other}")),
        }
    }
    s.note(format!("overrun: last tick {last_tick} before the outage, resume {status}, {} data events, first tick {first_tick:?}, burst {burst}", data.len()));
    if ctx.fp().value("retention.max_events").is_none() && keeps_finished {
        if let Some(note) = measure_retention(ctx).await {
            s.note(note);
        }
    }
    // A stream still running when the client returns (for servers that drop finished streams).
    if ctx.fp().value("retention.max_events").is_none() && ctx.fp().value("retention.drop_on_response") == Some("true")
    {
        // 500 ms ticks, cut off for 12 s (24 ticks): the replay arrives at once.
        let (mut ex, j) = s.work(&session, "overrun-running", 20_000, 500).await?;
        let t = s.t0.elapsed();
        s.faults(vec![PlannedFault {
            at: t + Duration::from_secs(1),
            fault: Fault::Partition { duration: Duration::from_secs(12) },
        }])?;
        // Read until the cut, noting when the last tick arrived: ticks come every 500 ms, so
        // resuming 250 ms after a tick's slot puts the replay burst mid-way between live ticks.
        let mut last = None;
        let mut last_at = Instant::now();
        let cut_by = Instant::now() + Duration::from_secs(3);
        for _ in 0..1000 {
            match ex.next(cut_by.saturating_duration_since(Instant::now())).await {
                Item::Event(e) => {
                    if let (Some(id), Some(tick)) = (e.id.clone(), progress_tick(&e)) {
                        last = Some((id, tick));
                        last_at = Instant::now();
                    }
                }
                Item::Comment => {}
                _ => break,
            }
        }
        let earliest = s.t0 + t + Duration::from_millis(13_500);
        let slots = earliest.saturating_duration_since(last_at).as_millis().div_ceil(500) as u32;
        sleep_until(last_at + Duration::from_millis(500) * slots + Duration::from_millis(250)).await;
        if let Some((last_id, last_tick)) = last {
            let stream = s.calls[j].stream;
            let mut r = s.get(&session, stream, Some(&last_id)).await?;
            let status = r.status;
            let mut burst: Vec<u32> = Vec::new();
            for _ in 0..10_000 {
                match r.next(Duration::from_millis(125)).await {
                    Item::Event(e) => {
                        if let Some(t) = progress_tick(&e) {
                            burst.push(t);
                        }
                    }
                    Item::Comment => {}
                    _ => break,
                }
            }
            let rest = r.drain(Duration::from_secs(10)).await;
            r.abort();
            s.saw_result(j, &rest);
            let mut fp = ctx.fp();
            match burst.first() {
                Some(f) if status == 200 && *f > last_tick + 1 => {
                    fp.decide(
                        "retention.max_events",
                        burst.len().to_string(),
                        format!("a running 500 ms-tick stream resumed after tick {last_tick} replayed ticks {f}..{} at once ({} events, the burst before the first 250 ms pause)", burst.last().unwrap_or(f), burst.len()),
                    );
                    fp.decide("evicted_id", "\"from-oldest\"", format!("an evicted id (tick {last_tick}) of a running stream got 200 and a replay from tick {f}, no gap said"));
                }
                _ => fp.leave_open(
                    "retention.max_events",
                    format!("running-stream overrun: resume {status}, burst {burst:?}"),
                ),
            }
        }
    }
    Ok(s.finish().await)
}

/// Checkpoint sessions of `idle-expiry`: session k is looked at once, `(2k - 1) / (2 K)` of the
/// bound after its last request.
const IDLE_CHECKPOINTS: u32 = 8;

/// Whether a session still answers: a `tools/list` POST, 200 yes, 404 no (untraced).
async fn answers(client: &Client, ctx: &Ctx, sid: &str) -> Option<bool> {
    let body = json!({"jsonrpc": "2.0", "id": ctx.next_id(), "method": "tools/list"});
    let mut ex = client.send(Outgoing::post(Some(sid), body), None).await.ok()?;
    let status = ex.status;
    let _ = ex.drain(Duration::from_secs(3)).await;
    match status {
        200..=299 => Some(true),
        404 => Some(false),
        _ => None,
    }
}

fn secs1(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// Sessions left idle up to the user's bound (`--idle-bound`): whether and when the server
/// expires them (checkpoint sessions, each looked at once), which activity holds one alive (a
/// session holding its GET open; one whose tool runs on after its POST was cut), what expiry
/// does to that tool, and whether a finished stream's events are still replayed at the bound.
/// Every request is untraced: the observations are the notes and the fingerprint.
async fn idle_expiry(ctx: &Ctx) -> Result<Outcome, ProbeError> {
    let Some(bound) = ctx.idle_bound else {
        for f in ["idle_ttl", "idle_rule", "expire_running_tool", "retention.window"] {
            ctx.fp().leave_open(f, "no --idle-bound given: idle-expiry did not run");
        }
        return Ok(Outcome {
            name: "idle-expiry",
            trace: None,
            skipped: Some("no --idle-bound given".into()),
            notes: vec![],
        });
    };
    let mut s = Script::new(ctx, "idle-expiry");
    let c = Client::new(ctx.via_proxy.clone(), Rec::new());
    let k = IDLE_CHECKPOINTS;
    let offsets: Vec<Duration> = (1..=k).map(|i| bound.mul_f64((2 * i - 1) as f64 / (2 * k) as f64)).collect();
    // Checkpoint sessions, each idle from the end of its handshake.
    let mut points = Vec::new();
    for off in &offsets {
        let sid = handshake(&c, ctx.next_id(), "probe-idle").await?;
        points.push((sid, Instant::now() + *off, *off));
    }
    // H holds its standalone GET open for the whole bound.
    let h = handshake(&c, ctx.next_id(), "probe-idle-hold").await?;
    let h_get = c.send(Outgoing::get(&h, None), None).await?;
    let h_open = h_get.status == 200;
    let h_from = Instant::now();
    // R runs a short tool to its end, then is kept alive by a request at each checkpoint; at the
    // bound its stream is resumed from the first event id.
    let r = handshake(&c, ctx.next_id(), "probe-idle-retain").await?;
    let r_key = format!("{}-idle-retain", ctx.run_tag);
    let mut r_ex = c
        .send(
            Outgoing::post(
                Some(&r),
                tool_call(ctx.next_id(), "probe_work", json!({"duration_ms": 300, "interval_ms": 100, "key": r_key})),
            ),
            None,
        )
        .await?;
    let r_items = r_ex.drain(Duration::from_secs(5)).await;
    let r_first = events(&r_items).iter().find_map(|e| e.id.clone());
    let r_events = events(&r_items).len();
    let r_from = Instant::now();
    // T's tool runs three quarters of the bound after its POST is cut a second in.
    let t = handshake(&c, ctx.next_id(), "probe-idle-tool").await?;
    let t_key = format!("{}-idle-tool", ctx.run_tag);
    let t_run = bound.mul_f64(0.75);
    let t_body = tool_call(
        ctx.next_id(),
        "probe_work",
        json!({"duration_ms": (t_run + Duration::from_secs(1)).as_millis() as u64, "interval_ms": 1000, "key": t_key}),
    );
    let mut t_ex = c.send(Outgoing::post(Some(&t), t_body), None).await?;
    let _ = t_ex.next(Duration::from_secs(1)).await;
    t_ex.abort();
    let t_cut = Instant::now();
    // T is looked at a second before its tool ends.
    let t_check = t_cut + t_run.saturating_sub(Duration::from_secs(1));
    let mut alive = Vec::new();
    let mut t_alive = None;
    let mut r_kept = true;
    for (sid, due, off) in &points {
        if t_alive.is_none() && t_check <= *due {
            sleep_until(t_check).await;
            t_alive = answers(&c, ctx, &t).await;
        }
        sleep_until(*due).await;
        alive.push((*off, answers(&c, ctx, sid).await));
        r_kept &= answers(&c, ctx, &r).await == Some(true);
    }
    if t_alive.is_none() {
        sleep_until(t_check).await;
        t_alive = answers(&c, ctx, &t).await;
    }
    sleep_until(h_from + bound).await;
    let h_alive = answers(&c, ctx, &h).await;
    h_get.abort();
    let r_age = r_from.elapsed();
    let replay = match (&r_first, r_kept) {
        (Some(id), true) => match c.send(Outgoing::get(&r, Some(id)), None).await {
            Ok(mut g) => {
                let st = g.status;
                let items = g.drain(Duration::from_secs(2)).await;
                g.abort();
                Some((st, events(&items).len(), find_result(&items).is_some()))
            }
            Err(_) => None,
        },
        _ => None,
    };
    sleep_until(t_cut + t_run + Duration::from_secs(1)).await;
    let t_count = ctx.count(&t_key).await;
    let shown: Vec<String> = alive
        .iter()
        .map(|(off, a)| {
            format!(
                "{}: {}",
                secs1(*off),
                match a {
                    Some(true) => "alive",
                    Some(false) => "gone",
                    None => "?",
                }
            )
        })
        .collect();
    let shown = shown.join(", ");
    s.note(format!(
        "idle sessions after {shown}; holding a GET: {h_alive:?} at {}; tool cut: {t_alive:?}",
        secs1(bound)
    ));
    let first_gone = alive.iter().position(|(_, a)| *a == Some(false));
    let monotone = first_gone.is_some_and(|i| {
        alive[..i].iter().all(|(_, a)| *a == Some(true)) && alive[i..].iter().all(|(_, a)| *a == Some(false))
    });
    {
        let mut fp = ctx.fp();
        let ttl_hi = match (first_gone, monotone) {
            (None, _) => {
                let why = format!(
                    "no idle session expired within the {} bound ({shown}): a longer TTL, or none",
                    secs1(bound)
                );
                fp.leave_open("idle_ttl", why.clone());
                fp.leave_open("idle_rule", why);
                None
            }
            (Some(_), false) => {
                fp.leave_open("idle_ttl", format!("idle sessions did not expire in order of idleness ({shown})"));
                None
            }
            (Some(i), true) => {
                let lo = if i == 0 { Duration::ZERO } else { alive[i - 1].0 };
                let hi = alive[i].0;
                let mid = (lo + hi) / 2;
                fp.decide(
                "idle_ttl",
                format!("\"{}s\"", mid.as_secs_f64().round().max(1.0) as u64),
                format!("idle sessions looked at once after {shown}: expired between {} and {} of idleness (the middle, ± {})", secs1(lo), secs1(hi), secs1((hi - lo) / 2)),
            );
                Some(hi)
            }
        };
        if let Some(hi) = ttl_hi {
            let t_idle = t_check.saturating_duration_since(t_cut);
            let tool_decides = t_idle > hi + Duration::from_secs(1);
            match (h_open, h_alive, t_alive) {
            (true, Some(false), t) => {
                fp.decide("idle_rule", "\"last-request\"", format!("a session holding its standalone GET open was gone after {} (sessions idle {} were gone)", secs1(bound), secs1(hi)));
                if tool_decides {
                    match t {
                        Some(true) => fp.decide("idle_reset", "\"requests-and-events\"", format!("a session whose only activity was its cut tool's progress, one event a second, still answered after {} of no request", secs1(t_idle))),
                        Some(false) => fp.decide("idle_reset", "\"requests\"", format!("a session whose cut tool kept sending progress was gone after {} of no request", secs1(t_idle))),
                        None => {}
                    }
                }
            }
            (true, Some(true), Some(t)) if tool_decides => {
                let (v, why) = if t {
                    ("never-while-busy", format!("a session holding its GET open answered after {}, and so did one whose tool still ran {} after its POST was cut", secs1(bound), secs1(t_idle)))
                } else {
                    ("no-open-request", format!("a session holding its GET open answered after {}; one whose POST was cut was gone {} later while its tool still ran", secs1(bound), secs1(t_idle)))
                };
                fp.decide("idle_rule", format!("\"{v}\""), why);
                if !t {
                    match t_count {
                        // probe_work stops on its abort signal, so "cancel" and "abort-signal"
                        // (the SDK signals, the tool stops) look alike here.
                        Some((_, 0)) => fp.leave_open("expire_running_tool", format!("the tool of the expired session never completed (probe_count {t_count:?}, a second after it would have): cancel, or abort-signal with a tool that stops on it (the idle-expiry scenario runs no ignore_abort tool yet)")),
                        Some((_, _)) => fp.decide("expire_running_tool", "\"run-on\"", format!("the tool of the expired session completed (probe_count {t_count:?})")),
                        None => {}
                    }
                }
            }
            (true, Some(true), _) => fp.leave_open("idle_rule", "an open GET held the session; the cut tool's session was looked at too soon to tell no-open-request from never-while-busy"),
            _ => fp.leave_open("idle_rule", format!("the held session's GET answered {}, looked at: {h_alive:?}", if h_open { "200" } else { "no stream" })),
        }
        }
        match replay {
        Some((200, n, true)) => fp.decide(
            "retention.window",
            "\"none\"",
            format!("a finished stream's events {} old were replayed ({n} events, its result included): no window shorter than the {} bound (a longer one cannot be told from none)", secs1(r_age), secs1(bound)),
        ),
        Some((st, n, res)) => fp.leave_open("retention.window", format!("resuming a finished stream {} later: {st}, {n} events, result {res} (first {r_events} events live); dropped on response, or a window", secs1(r_age))),
        None => fp.leave_open("retention.window", "the retained session did not stay alive or gave no event id"),
    }
    }
    s.note(format!("retained stream resumed {} after its end: {replay:?}", secs1(r_age)));
    Ok(s.finish().await)
}

/// Events of a finished stream the server still replays (untraced, on a session of its own): a
/// tool of ~250 ticks read live, then resumes from ids ever deeper in it, bisecting for the
/// deepest one still answered with events. Decides `retention.max_events` (or leaves it open).
async fn measure_retention(ctx: &Ctx) -> Option<String> {
    let client = Client::new(ctx.direct.clone(), Rec::new());
    let sid = handshake(&client, ctx.next_id(), "probe-retention").await.ok()?;
    let key = format!("{}-retention", ctx.run_tag);
    let body = tool_call(ctx.next_id(), "probe_work", json!({"duration_ms": 2500, "interval_ms": 10, "key": key}));
    let mut ex = client.send(Outgoing::post(Some(&sid), body), None).await.ok()?;
    let items = ex.drain(Duration::from_secs(15)).await;
    let ids: Vec<String> = events(&items).iter().filter_map(|e| e.id.clone()).collect();
    let n = ids.len();
    if n < 20 || find_result(&items).is_none() {
        return Some(format!("retention: the 2.5 s tool gave {n} event ids and no result to measure with"));
    }
    // Whether a resume from the id `depth` events before the last replays anything, and whether
    // it carried a priming event (which a store keeps as one more event of the stream). Read
    // until 700 ms pass with nothing (a resumed stream may stay open), at most 4 s.
    let kept = |depth: usize| {
        let id = ids[n - 1 - depth].clone();
        let (client, sid) = (&client, sid.clone());
        async move {
            let Ok(mut g) = client.send(Outgoing::get(&sid, Some(&id)), None).await else { return None };
            if g.status != 200 {
                g.abort();
                return Some((false, false));
            }
            let deadline = Instant::now() + Duration::from_secs(4);
            let (mut got, mut primed) = (false, false);
            for _ in 0..10_000 {
                let left = deadline.saturating_duration_since(Instant::now()).min(Duration::from_millis(700));
                match g.next(left).await {
                    Item::Event(e) if e.is_priming() => primed = true,
                    Item::Event(_) => got = true,
                    Item::Comment => {}
                    _ => break,
                }
            }
            g.abort();
            Some((got, primed))
        }
    };
    let mut fp: Vec<(&str, Option<String>, String)> = Vec::new();
    if kept(n - 1).await?.0 {
        let why = format!("a resume from the first of a finished stream's {n} event ids replayed the rest");
        if n >= 200 {
            fp.push((
                "retention.max_events",
                Some("\"none\"".into()),
                format!("{why}: more than any bounded built-in profile keeps (py 100, rmcp 16), taken as unbounded"),
            ));
        } else {
            fp.push(("retention.max_events", None, format!("{why}: at least {n} kept")));
        }
    } else {
        let (got1, primed1) = kept(1).await?;
        if got1 {
            // A resume that carried a priming event stored one more event in the stream
            // (Python): the id `d` back from the original end is then `d + shift` back from the
            // current one. Bisect on that distance: the greatest one still kept (lo), the least
            // evicted (hi).
            let mut shift = usize::from(primed1);
            let (mut lo, mut hi) = (1, n - 1);
            for _ in 0..16 {
                if hi - lo <= 1 {
                    break;
                }
                let mid = (lo + hi) / 2;
                let Some(d) = mid.checked_sub(shift).filter(|d| (1..n).contains(d)) else { break };
                let (got, primed) = kept(d).await?;
                if got {
                    lo = mid;
                } else {
                    hi = mid;
                }
                shift += usize::from(primed);
            }
            let note = if shift > 0 {
                format!(" ({shift} resumes stored a priming event each, counted)")
            } else {
                String::new()
            };
            if hi - lo <= 1 {
                fp.push((
                    "retention.max_events",
                    Some((lo + 1).to_string()),
                    format!("a finished stream of {n} event ids: a resume from the id {lo} events before the newest replayed events, one from {hi} before it nothing{note}: the last {} are kept (as the simulator's store counts: it answers an id while the id itself is kept; a server that answers while every event after it is kept keeps one fewer)", lo + 1),
                ));
            } else {
                fp.push(("retention.max_events", None, format!("between {} and {hi} events kept{note}", lo + 1)));
            }
        } else {
            fp.push((
                "retention.max_events",
                None,
                "a resume from the next-to-last id of a finished stream replayed nothing".into(),
            ));
        }
    }
    let mut f = ctx.fp();
    for (field, value, why) in fp {
        match value {
            Some(v) => f.decide(field, v, why.clone()),
            None => f.leave_open(field, why.clone()),
        }
    }
    Some(format!("retention measured on a side session: {} event ids", n))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second GET answered 200 whose stream ends at once while the first keeps the
    /// notifications is `empty-closed` (kotlin-sdk 0.11: the 409 after Ktor's committed 200), one
    /// that stays open receiving nothing `shadow`; the other answers as before.
    #[test]
    fn a_second_get_that_ends_at_once_with_nothing_is_empty_closed_not_a_shadow() {
        let seen = |st2, on_g2, notes, g1_ended| second_get_seen(st2, on_g2, notes, g1_ended).map(|(v, _)| v);
        assert_eq!(seen(200, Some((0, true)), 3, false), Ok(SecondGet::EmptyClosed));
        assert_eq!(seen(200, Some((0, false)), 3, false), Ok(SecondGet::Shadow));
        assert_eq!(seen(200, Some((3, false)), 0, true), Ok(SecondGet::Replace));
        assert_eq!(seen(200, Some((3, false)), 0, false), Ok(SecondGet::Accept));
        assert_eq!(seen(409, None, 3, false), Ok(SecondGet::Reject409));
        assert!(seen(200, Some((0, true)), 0, false).is_err(), "no notification anywhere tells nothing");
    }

    fn tick(n: u32) -> RawEvent {
        let data = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 7, "progress": n}});
        RawEvent { id: Some(format!("e{n}")), data: Some(data.to_string()), ..RawEvent::default() }
    }

    fn decided(status: u16, before: &[u32], after: &[u32], result: bool, counted: Option<(u64, u64)>) -> Fingerprint {
        let (before, after): (Vec<RawEvent>, Vec<RawEvent>) =
            (before.iter().map(|n| tick(*n)).collect(), after.iter().map(|n| tick(*n)).collect());
        let mut fp = Fingerprint::default();
        after_replay(
            &mut fp,
            status,
            &before.iter().collect::<Vec<_>>(),
            &after.iter().collect::<Vec<_>>(),
            result,
            counted,
        );
        fp
    }

    #[test]
    fn a_resume_that_replays_and_then_goes_quiet_is_told_from_one_that_goes_on_live() {
        // The result on the resumed stream: live.
        let fp = decided(200, &[1, 2, 3, 4], &[5, 6, 7, 8, 9, 10], true, Some((1, 1)));
        assert_eq!(fp.value("after_replay"), Some("\"live\""));
        // Missed ticks replayed, then nothing, while the tool completed: quiet.
        let fp = decided(200, &[1, 2, 3, 4], &[5, 6, 7], false, Some((1, 1)));
        assert_eq!(fp.value("after_replay"), Some("\"quiet\""));
        assert!(fp.fields["after_replay"].why.contains("replayed 3 missed"), "{:?}", fp.fields);
        // Nothing replayed, or the tool not seen to complete, or a refused resume: not decided.
        for fp in [
            decided(200, &[1, 2, 3, 4], &[], false, Some((1, 1))),
            decided(200, &[1, 2, 3, 4], &[5], false, Some((1, 0))),
            decided(200, &[1, 2, 3, 4], &[5], false, None),
            decided(404, &[1, 2, 3, 4], &[], false, Some((1, 1))),
        ] {
            assert_eq!(fp.value("after_replay"), None);
            assert!(fp.open.contains_key("after_replay"));
        }
    }

    #[test]
    fn the_code_of_a_json_rpc_error_is_read_from_a_body_or_an_event() {
        let body = Item::Json(
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Session not found"}}),
        );
        assert_eq!(post_body_error_code(&[body]), Some(-32600));
        let event = RawEvent {
            data: Some(json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "x"}}).to_string()),
            ..RawEvent::default()
        };
        assert_eq!(post_body_error_code(&[Item::Event(event)]), Some(-32001));
        assert_eq!(post_body_error_code(&[Item::End]), None);
    }
}
