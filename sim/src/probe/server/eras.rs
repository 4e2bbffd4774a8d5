//! The era probe: which protocol eras a server serves and how it answers each modern
//! (2026-07-28) request, beside the scenarios (which speak the legacy era).
//!
//! On connections of its own straight to the server (no fault proxy), it sends one request of
//! each [`EraProbe`] kind and records the status, the JSON-RPC error code, whether a result came
//! and whether an `Mcp-Session-Id` was answered; with the probe tools it also cuts a modern
//! `probe_work` call after its first event and reads `probe_count` to see whether the closed
//! stream cancelled the call (streamable-http.mdx:233-240). [`decide`] turns the answers into
//! the fingerprint's `eras` and `modern_session`; [`expected`] is the model's answer
//! (`mcpsim_model::era::answer`) to the same request, which `probe reality` sets beside it.

use crate::probe::fingerprint::{quote, Fingerprint};
use crate::probe::recorder::http::{Client, Endpoint, Item, Outgoing};
use crate::probe::recorder::rec::Rec;
use mcpsim_model::era::{self, Era, EraAnswer, EraRequest, EraSet, HttpVerb, ModernSession};
use serde_json::{json, Value};
use std::time::Duration;

/// A version no era has, for the unsupported-version request.
pub const UNKNOWN_VERSION: &str = "2099-01-01";

/// One kind of request the era probe sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EraProbe {
    /// `server/discover`, modern header and `_meta` (versioning.mdx: the auto client's probe).
    Discover,
    /// A modern `tools/list` (`tools/call` of `probe_work` when the server has the probe tools).
    Call,
    /// A `GET` with the modern header and no session.
    Get,
    /// A modern `tools/list` carrying a stale `Mcp-Session-Id` (one the server never minted).
    StaleSession,
    /// A modern `_meta` version under a `2025-11-25` header (streamable-http.mdx:256-261).
    Mismatch,
    /// A version no era has, in both header and `_meta` (streamable-http.mdx:263-267).
    UnknownVersion,
}

impl EraProbe {
    /// Every kind, in the order they are sent.
    pub const ALL: [EraProbe; 6] = [
        EraProbe::Discover,
        EraProbe::Call,
        EraProbe::Get,
        EraProbe::StaleSession,
        EraProbe::Mismatch,
        EraProbe::UnknownVersion,
    ];

    /// The row's name in the tables.
    pub fn name(self) -> &'static str {
        match self {
            EraProbe::Discover => "server/discover",
            EraProbe::Call => "modern call",
            EraProbe::Get => "GET, modern header",
            EraProbe::StaleSession => "stale Mcp-Session-Id",
            EraProbe::Mismatch => "header/_meta mismatch",
            EraProbe::UnknownVersion => "unknown version",
        }
    }

    /// The era-deciding parts of the request, as the model reads them.
    pub fn era_request(self) -> EraRequest {
        let mut r = EraRequest::modern_post();
        match self {
            EraProbe::Discover | EraProbe::Call => {}
            EraProbe::Get => {
                r.verb = HttpVerb::Get;
                r.meta_version = None;
            }
            EraProbe::StaleSession => r.session_id = true,
            EraProbe::Mismatch => r.header_version = Some(era::LEGACY_VERSION.into()),
            EraProbe::UnknownVersion => {
                r.header_version = Some(UNKNOWN_VERSION.into());
                r.meta_version = Some(UNKNOWN_VERSION.into());
            }
        }
        r
    }
}

/// What the server answered one era request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EraSeen {
    /// The request.
    pub probe: EraProbe,
    /// The HTTP status (0: no answer).
    pub status: u16,
    /// The JSON-RPC error code of the body, if it was an error.
    pub code: Option<i64>,
    /// A JSON-RPC result arrived.
    pub result: bool,
    /// The answer carried an `Mcp-Session-Id`.
    pub session_header: bool,
    /// The `supportedVersions` of a discover result, or the error's message (cut, escaped later).
    pub detail: String,
}

impl EraSeen {
    /// `400 -32022`, `200 result`, `405`, … for the tables.
    pub fn short(&self) -> String {
        let mut s = if self.status == 0 { "no answer".to_string() } else { self.status.to_string() };
        if let Some(c) = self.code {
            s.push_str(&format!(" {c}"));
        }
        if self.result {
            s.push_str(" result");
        }
        if self.session_header {
            s.push_str(", Mcp-Session-Id");
        }
        s
    }
}

/// A modern `probe_work` call cut after its first event, then counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutSeen {
    /// Events read before the cut.
    pub events: usize,
    /// `probe_count` after the tool's duration: executions started.
    pub started: u64,
    /// … and run to the end.
    pub completed: u64,
}

impl CutSeen {
    /// Whether the cut cancelled the call (it started and never completed).
    pub fn cancelled(&self) -> bool {
        self.started >= 1 && self.completed == 0
    }
}

/// Everything the era probe saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EraReport {
    /// One answer per [`EraProbe`] kind, in order.
    pub seen: Vec<EraSeen>,
    /// The cut of a modern call: `Err(why)` when it could not be made.
    pub cut: Option<Result<CutSeen, String>>,
}

/// The `_meta` of a modern request naming `version` (2026-07-28 basic/index: protocol version,
/// client capabilities and client info on every request; both dual-era SDKs refuse a request
/// without the capabilities, measured: `-32602`).
fn meta(version: &str, capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "mcpsim-probe", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// A modern POST: `method` with `params` (its `_meta` added), the version header, `Mcp-Method`
/// and, for `tools/call`, `Mcp-Name` (streamable-http.mdx "Standard Headers").
fn modern_post(id: u64, method: &str, params: Value, header: &str, meta_version: &str) -> Outgoing {
    modern_post_with(id, method, params, header, meta_version, json!({}))
}

/// [`modern_post`] declaring `capabilities` (the Tasks extension's, for the task probe).
pub(crate) fn modern_post_with(
    id: u64,
    method: &str,
    mut params: Value,
    header: &str,
    meta_version: &str,
    capabilities: Value,
) -> Outgoing {
    let mut m = meta(meta_version, capabilities);
    if let Some(token) = params.get("_meta").and_then(|v| v.get("progressToken")).cloned() {
        m["progressToken"] = token;
    }
    params["_meta"] = m;
    let mut headers = vec![("mcp-method", method.to_string())];
    // Mcp-Name: the tool's name on tools/call, the task id on tasks/* (tasks.md "Routing Headers").
    if let Some(name) = params.get("name").or_else(|| params.get("taskId")).and_then(Value::as_str) {
        headers.push(("mcp-name", name.to_string()));
    }
    Outgoing {
        method: "POST",
        body: Some(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})),
        version: Some(header.to_string()),
        headers,
        ..Default::default()
    }
}

/// Reads an answer to its end (bounded) into what the tables need.
async fn read(client: &Client, probe: EraProbe, out: Outgoing, within: Duration) -> EraSeen {
    let mut seen =
        EraSeen { probe, status: 0, code: None, result: false, session_header: false, detail: String::new() };
    let mut ex = match client.send(out, None).await {
        Ok(ex) => ex,
        Err(e) => {
            seen.detail = e.to_string();
            return seen;
        }
    };
    seen.status = ex.status;
    seen.session_header = ex.session_header.is_some();
    let items = ex.drain(within).await;
    let bodies = items.iter().filter_map(|i| match i {
        Item::Json(v) => Some(v.clone()),
        Item::Event(e) => e.data.as_deref().and_then(|d| serde_json::from_str::<Value>(d).ok()),
        _ => None,
    });
    for v in bodies.filter(|v| v.get("id").is_some()) {
        if let Some(err) = v.get("error") {
            seen.code = err.get("code").and_then(Value::as_i64);
            seen.detail = err.get("message").and_then(Value::as_str).unwrap_or_default().chars().take(80).collect();
        } else if let Some(r) = v.get("result") {
            seen.result = true;
            if let Some(versions) = r.get("supportedVersions").and_then(Value::as_array) {
                let list: Vec<&str> = versions.iter().filter_map(Value::as_str).collect();
                seen.detail = format!("supportedVersions {}", list.join(", "));
            }
        }
    }
    if seen.code.is_none() && !seen.result && seen.detail.is_empty() {
        seen.detail = ex.body_text.as_deref().unwrap_or_default().trim().chars().take(80).collect();
    }
    seen
}

/// Sends every era request to `endpoint`; with the probe tools (`tools`), the modern call is a
/// `probe_work` that is then cut, and `count` reads its counters.
pub async fn probe<F, Fut>(endpoint: &Endpoint, tools: bool, key: &str, count: F) -> EraReport
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Option<(u64, u64)>>,
{
    let client = Client::new(endpoint.clone(), Rec::new());
    let modern = era::MODERN_VERSION;
    let list = |id: u64| modern_post(id, "tools/list", json!({}), modern, modern);
    let mut report = EraReport::default();
    for (n, probe) in EraProbe::ALL.into_iter().enumerate() {
        let id = 9_000 + n as u64;
        let out = match probe {
            EraProbe::Discover => modern_post(id, "server/discover", json!({}), modern, modern),
            EraProbe::Call if tools => modern_post(
                id,
                "tools/call",
                json!({"name": "probe_work", "arguments": {"duration_ms": 600, "interval_ms": 200, "key": format!("{key}-call")}, "_meta": {"progressToken": id}}),
                modern,
                modern,
            ),
            EraProbe::Call => list(id),
            EraProbe::Get => Outgoing { method: "GET", version: Some(modern.into()), ..Default::default() },
            EraProbe::StaleSession => Outgoing { session: Some("mcpsim-probe-stale-session".into()), ..list(id) },
            EraProbe::Mismatch => modern_post(id, "tools/list", json!({}), era::LEGACY_VERSION, modern),
            EraProbe::UnknownVersion => modern_post(id, "tools/list", json!({}), UNKNOWN_VERSION, UNKNOWN_VERSION),
        };
        report.seen.push(read(&client, probe, out, Duration::from_secs(5)).await);
    }
    report.cut = match (tools, serves_modern(&report)) {
        (false, _) => Some(Err("no probe tools: nothing to count".into())),
        (true, false) => None,
        (true, true) => Some(cut(&client, &format!("{key}-cut"), count).await),
    };
    report
}

/// Whether `server/discover` got a result: the server serves the modern era.
pub fn serves_modern(report: &EraReport) -> bool {
    report.seen.iter().any(|s| s.probe == EraProbe::Discover && s.result)
}

/// A modern `probe_work(3000, 200)` read to its first event and closed; `probe_count` 3.5 s later.
/// The server has nearly 3 s to see the close before the tool would end on its own, so a loaded
/// machine (a slow poll loop) does not make a cancelled call look as if it ran on.
async fn cut<F, Fut>(client: &Client, key: &str, count: F) -> Result<CutSeen, String>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Option<(u64, u64)>>,
{
    let modern = era::MODERN_VERSION;
    let args = json!({"name": "probe_work", "arguments": {"duration_ms": 3000, "interval_ms": 200, "key": key}, "_meta": {"progressToken": 1}});
    let mut ex =
        client.send(modern_post(9_100, "tools/call", args, modern, modern), None).await.map_err(|e| e.to_string())?;
    if !ex.is_sse() {
        return Err(format!("the modern call answered {} {} (no event stream to cut)", ex.status, ex.content_type));
    }
    let mut events = 0;
    while events == 0 {
        match ex.next(Duration::from_secs(3)).await {
            Item::Event(_) => events += 1,
            Item::Comment => {}
            other => return Err(format!("no event before the cut: {other:?}")),
        }
    }
    ex.abort();
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let (started, completed) = count(key.to_string()).await.ok_or("probe_count did not answer")?;
    Ok(CutSeen { events, started, completed })
}

/// The fingerprint's `eras` and `modern_session` from the answers; `legacy` is whether the
/// legacy `initialize` of `basics` got a JSON-RPC result.
pub fn decide(fp: &mut Fingerprint, legacy: bool, report: &EraReport) {
    let Some(discover) = report.seen.iter().find(|s| s.probe == EraProbe::Discover) else { return };
    let modern_error = matches!(
        discover.code,
        Some(era::HEADER_MISMATCH | era::MISSING_REQUIRED_CLIENT_CAPABILITY | era::UNSUPPORTED_PROTOCOL_VERSION)
    );
    let modern = match (discover.status, discover.result, modern_error) {
        (0, _, _) => return fp.leave_open("eras", format!("server/discover got no answer: {}", discover.detail)),
        (_, true, _) => true,
        // A recognized modern error: the server knows the era (streamable-http.mdx:650-665).
        (_, false, true) => true,
        _ => false,
    };
    let mut eras = Vec::new();
    if legacy {
        eras.push(Era::Legacy);
    }
    if modern {
        eras.push(Era::Modern);
    }
    let why = format!(
        "legacy initialize: {}; server/discover (MCP-Protocol-Version {}): {}{}",
        if legacy { "a result" } else { "no result" },
        era::MODERN_VERSION,
        discover.short(),
        if discover.detail.is_empty() { String::new() } else { format!(" ({})", discover.detail) }
    );
    match serde_json::to_string(&eras) {
        Ok(list) if !eras.is_empty() => fp.decide("eras", list, why),
        _ => fp.leave_open("eras", why),
    }
    if !modern {
        return fp.leave_open("modern_session", "no modern request is served: the field is unused");
    }
    let served: Vec<&EraSeen> = report.seen.iter().filter(|s| s.result && s.probe != EraProbe::Mismatch).collect();
    if served.is_empty() {
        return fp.leave_open("modern_session", "no modern request got a result");
    }
    let minted = served.iter().filter(|s| s.session_header).map(|s| s.probe.name()).collect::<Vec<_>>();
    let (value, why) = if minted.is_empty() {
        (ModernSession::Sessionless, format!("{} modern answers, none with an Mcp-Session-Id", served.len()))
    } else {
        (ModernSession::Minted, format!("an Mcp-Session-Id answered to: {}", minted.join(", ")))
    };
    if let Ok(Value::String(s)) = serde_json::to_value(value) {
        fp.decide("modern_session", quote(&s), why);
    }
}

/// What the model answers the same request: the status, the modern error code when the answer
/// is one, whether it is served (a result), whether an `Mcp-Session-Id` comes with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// The HTTP status.
    pub status: u16,
    /// The JSON-RPC error code, when the model names one.
    pub code: Option<i64>,
    /// Served (a result).
    pub served: bool,
    /// An `Mcp-Session-Id` answered.
    pub session: bool,
}

impl Expected {
    /// As [`EraSeen::short`] prints.
    pub fn short(&self) -> String {
        let mut s = self.status.to_string();
        if let Some(c) = self.code {
            s.push_str(&format!(" {c}"));
        }
        if self.served {
            s.push_str(" result");
        }
        if self.session {
            s.push_str(", Mcp-Session-Id");
        }
        s
    }

    /// Whether a real answer is this one: the status, the code where the model names one, a
    /// result where it serves, and the session header where it serves.
    pub fn matches(&self, seen: &EraSeen) -> bool {
        seen.status == self.status
            && self.code.is_none_or(|c| seen.code == Some(c))
            && (!self.served || (seen.result && seen.session_header == self.session))
    }
}

/// The model's answer (`era::answer`) of a server serving `eras` to a request of kind `probe`;
/// `None` when it goes on to the legacy paths (no era rule decides it).
pub fn expected(eras: EraSet, modern_session: ModernSession, sessions: bool, probe: EraProbe) -> Option<Expected> {
    match era::answer(eras, &probe.era_request()) {
        EraAnswer::Legacy => None,
        EraAnswer::Modern { .. } => Some(Expected {
            status: 200,
            code: None,
            served: true,
            session: sessions && modern_session == ModernSession::Minted,
        }),
        EraAnswer::Refused(r) => {
            Some(Expected { status: r.status(), code: r.modern_code(), served: false, session: false })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(probe: EraProbe, status: u16, code: Option<i64>, result: bool, session_header: bool) -> EraSeen {
        EraSeen { probe, status, code, result, session_header, detail: String::new() }
    }

    #[test]
    fn a_dual_era_answer_decides_both_eras_and_no_session() {
        let report = EraReport {
            seen: vec![
                seen(EraProbe::Discover, 200, None, true, false),
                seen(EraProbe::Call, 200, None, true, false),
                seen(EraProbe::StaleSession, 200, None, true, false),
            ],
            cut: None,
        };
        let mut fp = Fingerprint::default();
        decide(&mut fp, true, &report);
        assert_eq!(fp.value("eras"), Some(r#"["2025-11-25","2026-07-28"]"#));
        assert_eq!(fp.value("modern_session"), Some("\"sessionless\""));
        let mut minted = report.clone();
        minted.seen[2].session_header = true;
        let mut fp = Fingerprint::default();
        decide(&mut fp, true, &minted);
        assert_eq!(fp.value("modern_session"), Some("\"minted\""));
    }

    #[test]
    fn a_legacy_server_refusing_discover_with_its_own_400_is_legacy_only() {
        let report = EraReport { seen: vec![seen(EraProbe::Discover, 400, Some(-32000), false, false)], cut: None };
        let mut fp = Fingerprint::default();
        decide(&mut fp, true, &report);
        assert_eq!(fp.value("eras"), Some(r#"["2025-11-25"]"#));
        assert_eq!(fp.value("modern_session"), None);
        // A recognized modern error is a modern server that refused the probe's request.
        let report = EraReport { seen: vec![seen(EraProbe::Discover, 400, Some(-32022), false, false)], cut: None };
        let mut fp = Fingerprint::default();
        decide(&mut fp, false, &report);
        assert_eq!(fp.value("eras"), Some(r#"["2026-07-28"]"#));
    }

    #[test]
    fn the_model_answers_each_request_as_the_era_rules_say() {
        let dual = EraSet { legacy: true, modern: true };
        let legacy = EraSet { legacy: true, modern: false };
        let sl = ModernSession::Sessionless;
        let e = |eras, p| expected(eras, sl, true, p).expect("an era rule decides it");
        assert_eq!(e(dual, EraProbe::Discover).short(), "200 result");
        assert_eq!(e(dual, EraProbe::Get).short(), "405");
        assert_eq!(e(dual, EraProbe::StaleSession).short(), "200 result");
        assert_eq!(e(dual, EraProbe::Mismatch).short(), "400 -32020");
        assert_eq!(e(dual, EraProbe::UnknownVersion).short(), "400 -32022");
        assert_eq!(e(legacy, EraProbe::Discover).short(), "400");
        assert!(expected(dual, ModernSession::Minted, true, EraProbe::Call).is_some_and(|x| x.session));
        // 400 with any body matches a refusal that names no modern code; a served answer needs
        // its result and the session header the model says.
        assert!(e(legacy, EraProbe::Discover).matches(&seen(EraProbe::Discover, 400, Some(-32000), false, false)));
        assert!(!e(dual, EraProbe::Mismatch).matches(&seen(EraProbe::Mismatch, 400, Some(-32600), false, true)));
        assert!(!e(dual, EraProbe::Call).matches(&seen(EraProbe::Call, 200, None, true, true)));
        assert!(e(dual, EraProbe::Call).matches(&seen(EraProbe::Call, 200, None, true, false)));
    }
}
