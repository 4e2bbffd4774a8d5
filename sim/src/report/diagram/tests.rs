use super::*;
use mcpsim_model::decision::{NextAction, StreamOutcome};
use mcpsim_model::http::{ClientMessage, Request, Status, ToolCall};
use mcpsim_model::ids::{CallKey, RequestId, StreamNo};
use mcpsim_model::trace::Actor;

/// Builds traces step by step; times are given in milliseconds.
struct TraceBuilder {
    trace: Trace,
}

fn ms(t: u64) -> u64 {
    t * 1_000
}

fn sid(s: &str) -> SessionId {
    SessionId::from(s)
}

fn eid(s: &str) -> EventId {
    EventId::from(s)
}

impl TraceBuilder {
    fn new(client: &str, server: &str, scenario: &str) -> Self {
        let header = serde_json::json!({
            "scenario": {"name": scenario, "client": {"name": client}, "server": {"name": server}}
        });
        TraceBuilder { trace: Trace::new(42, header) }
    }

    fn push(&mut self, t_ms: u64, actor: Actor, kind: StepKind) -> &mut Self {
        let seq = self.trace.steps.len() as u64;
        self.trace.steps.push(Step { seq, t: ms(t_ms), actor, client: None, replica: None, conn_client: None, kind });
        self
    }

    fn client(&mut self, t: u64, kind: StepKind) -> &mut Self {
        self.push(t, Actor::Client, kind)
    }

    fn server(&mut self, t: u64, kind: StepKind) -> &mut Self {
        self.push(t, Actor::Server, kind)
    }

    fn app(&mut self, t: u64, kind: StepKind) -> &mut Self {
        self.push(t, Actor::App, kind)
    }

    fn send(&mut self, t: u64, conn: u64, request: Request) -> &mut Self {
        self.client(t, StepKind::Send { conn: ConnId(conn), request })
    }

    fn respond(&mut self, t: u64, conn: u64, head: ResponseHead) -> &mut Self {
        self.client(t, StepKind::Response { conn: ConnId(conn), head })
    }

    fn event(&mut self, t: u64, conn: u64, id: &str, data: Option<ServerMessage>) -> &mut Self {
        let event = SseEvent { id: Some(eid(id)), retry_ms: None, kind: EventKind::Message, data };
        self.client(t, StepKind::Event { conn: ConnId(conn), event })
    }

    fn end(&mut self, t: u64, conn: u64, end: ConnEnd) -> &mut Self {
        self.client(t, StepKind::ConnEnd { conn: ConnId(conn), end })
    }

    fn stored(&mut self, t: u64, session: &str, seq: u32, message: Option<ServerMessage>) -> &mut Self {
        let id = eid(&format!("1-{seq}"));
        let call = Some(CallKey(0));
        let kind = StepKind::EventStored { session: sid(session), stream: StreamNo(1), seq, id, call, message };
        self.server(t, kind)
    }

    fn side_effect(&mut self, t: u64, session: &str, request: u64) -> &mut Self {
        let kind = StepKind::SideEffect {
            session: sid(session),
            request: RequestId(request),
            call: CallKey(0),
            tool: "pay".into(),
            idempotent: false,
        };
        self.server(t, kind)
    }

    fn initialize(&mut self, t: u64, conn: u64, request: u64, session: &str, client: &str) -> &mut Self {
        self.send(t, conn, Request::initialize(RequestId(request), client));
        self.server(t + 1, StepKind::SessionCreated { session: sid(session), client: client.into() });
        let head = ResponseHead { session: Some(sid(session)), body: Body::Json, ..ResponseHead::status(Status::OK) };
        self.respond(t + 2, conn, head);
        let message = ServerMessage::InitializeResult { request: RequestId(request) };
        self.client(t + 3, StepKind::Json { conn: ConnId(conn), message })
    }

    fn call_tool(&mut self, t: u64, conn: u64, request: u64, session: &str, tool: &str) -> &mut Self {
        let call = ToolCall { tool: tool.into(), key: CallKey(0), idempotency_key: None, tasks: false };
        let body = ClientMessage::CallTool { id: RequestId(request), call };
        self.send(t, conn, Request::post(Some(sid(session)), body))
    }

    /// Ends the trace with `verdict`; a record built by [`violation`] names the last step at its
    /// time (as an oracle would name the step that broke it).
    fn finish(&mut self, verdict: Vec<ViolationRecord>) -> Trace {
        let mut trace = self.trace.clone();
        let steps = &trace.steps;
        let verdict = verdict
            .into_iter()
            .map(|mut v| {
                if v.step == UNSET {
                    v.step = steps.iter().rposition(|s| s.t <= v.t).unwrap_or(0) as u64;
                }
                v
            })
            .collect();
        trace.finish(verdict);
        trace
    }
}

/// A violation's step before [`TraceBuilder::finish`] fills it in.
const UNSET: u64 = u64::MAX;

fn violation(invariant: &str, t_ms: u64, subject: &str, detail: &str) -> ViolationRecord {
    ViolationRecord {
        invariant: invariant.into(),
        step: UNSET,
        t: ms(t_ms),
        subject: subject.into(),
        detail: detail.into(),
        conditions: String::new(),
    }
}

fn progress(step: u32) -> Option<ServerMessage> {
    Some(ServerMessage::Progress { request: RequestId(2), call: CallKey(0), step })
}

/// The design note's first incident: a naive client re-initializes after a 60 s idle cut and
/// runs the payment twice.
fn first_incident() -> Trace {
    let mut b = TraceBuilder::new("naive", "reference", "long-tool");
    b.app(0, StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: false });
    b.initialize(1, 1, 1, "s1", "naive");
    b.call_tool(10, 2, 2, "s1", "pay");
    b.side_effect(11, "s1", 2);
    b.stored(12, "s1", 0, None);
    b.respond(13, 2, ResponseHead::event_stream());
    b.event(14, 2, "1-0", None);
    b.push(60_014, Actor::Lb, StepKind::LbIdleCut { conn: ConnId(7), idle_us: 60_000_000, hop: None });
    b.end(60_015, 2, ConnEnd::Reset);
    b.client(
        60_016,
        StepKind::Decision {
            call: Some(CallKey(0)),
            outcome: Some(StreamOutcome::SessionTerminated),
            action: Some(NextAction::Reinitialize),
            error: None,
        },
    );
    b.initialize(60_020, 3, 3, "s2", "naive");
    b.call_tool(60_030, 4, 4, "s2", "pay");
    b.side_effect(60_031, "s2", 4);
    b.respond(60_032, 4, ResponseHead::event_stream());
    let result = Some(ServerMessage::ToolResult { request: RequestId(2), call: CallKey(0) });
    b.server(
        90_000,
        StepKind::ToolEnded {
            session: sid("s1"),
            request: RequestId(2),
            call: CallKey(0),
            end: mcpsim_model::trace::ToolEnd::Completed,
        },
    );
    b.stored(90_000, "s1", 1, result);
    // s2 numbers its events like s1 did: the same id, another session.
    let result = Some(ServerMessage::ToolResult { request: RequestId(4), call: CallKey(0) });
    b.stored(90_031, "s2", 1, result.clone());
    b.event(90_032, 4, "1-1", result);
    b.app(90_033, StepKind::AppResult { call: CallKey(0), session: sid("s2"), id: Some(eid("1-1")) });
    b.finish(vec![violation("no-duplicate-execution", 60_031, "call0", "pay ran in s1 (#2) and again in s2 (#4)")])
}

/// The second incident: a reference client cut off for 4 minutes resumes from a silent-head
/// server that skips 140 events without a word.
fn second_incident() -> Trace {
    let mut b = TraceBuilder::new("reference", "silent-head", "chatty-tool");
    b.app(0, StepKind::AppCall { call: CallKey(0), tool: "report".into(), idempotent: true });
    b.initialize(1, 1, 1, "s1", "reference");
    b.call_tool(10, 2, 2, "s1", "report");
    b.respond(12, 2, ResponseHead::event_stream());
    for k in 0..5u32 {
        let t = 1_000 + u64::from(k) * 1_000;
        b.stored(t, "s1", k, progress(k + 1));
        b.event(t + 1, 2, &format!("1-{k}"), progress(k + 1));
        b.app(
            t + 2,
            StepKind::AppEvent {
                session: sid("s1"),
                id: Some(eid(&format!("1-{k}"))),
                call: Some(CallKey(0)),
                message: progress(k + 1).expect("progress is Some"),
            },
        );
    }
    b.push(10_000, Actor::Fault, StepKind::Fault { fault: "partition client-lb for 4m".into() });
    b.end(10_001, 2, ConnEnd::Reset);
    for attempt in 1..=4u32 {
        let t = 10_000 + u64::from(attempt) * 100;
        b.send(t, u64::from(2 + attempt), Request::get(Some(sid("s1")), Some(eid("1-4"))));
        b.end(t + 1, u64::from(2 + attempt), ConnEnd::Refused);
        b.client(t + 2, StepKind::Backoff { call: Some(CallKey(0)), attempt, delay_us: 200_000 });
    }
    for k in 5..145u32 {
        b.stored(11_000 + u64::from(k) * 1_000, "s1", k, progress(k + 1));
    }
    b.push(250_000, Actor::Run, StepKind::Liveness { deadline: ms(400_000) });
    b.send(250_001, 7, Request::get(Some(sid("s1")), Some(eid("1-4"))));
    let outcome = ResumeOutcome::SilentHead { skipped: 140 };
    b.server(
        250_002,
        StepKind::Resume {
            session: sid("s1"),
            last_event_id: eid("1-4"),
            stream: Some(StreamNo(1)),
            outcome,
            held: false,
            evicted: None,
            claimed_by: None,
            finished: false,
        },
    );
    b.respond(250_003, 7, ResponseHead::event_stream());
    b.stored(251_000, "s1", 145, progress(146));
    b.event(251_001, 7, "1-145", progress(146));
    b.finish(vec![violation("no-silent-event-loss", 250_002, "s1 stream1", "events 1-5 … 1-144 never delivered")])
}

fn text(trace: &Trace) -> String {
    render(trace, Format::Text, &DiagramOptions::default())
}

#[test]
fn formats_parse_by_name_and_refuse_others_clearly() {
    assert_eq!("text".parse::<Format>(), Ok(Format::Text));
    assert_eq!(" Mermaid ".parse::<Format>(), Ok(Format::Mermaid));
    assert_eq!("svg".parse::<Format>(), Ok(Format::Svg));
    assert_eq!("html".parse::<Format>(), Ok(Format::Html));
    assert_eq!(Format::Html.to_string(), "html");
    let err = "png".parse::<Format>().expect_err("png is no diagram format");
    assert_eq!(err.to_string(), "unknown diagram format \"png\": use text, mermaid, svg or html");
    assert_eq!(Format::Mermaid.to_string().parse::<Format>(), Ok(Format::Mermaid));
}

#[test]
fn text_shows_the_first_incident_and_marks_the_second_side_effect() {
    let out = text(&first_incident());
    assert!(out.starts_with("mcpsim seed 42 · naive × reference × long-tool\n"), "{out}");
    assert!(out.contains("verdict: 1 violation(s): no-duplicate-execution"), "{out}");
    assert!(out.contains("POST initialize#1 (c1)"), "{out}");
    assert!(out.contains("POST tools/call#2 pay call0 [s1] (c2)"), "{out}");
    assert!(out.contains("POST tools/call#4 pay call0 [s2] (c4)"), "{out}");
    assert!(out.contains("event 1-0: priming (c2)"), "{out}");
    assert!(out.contains("✂ idle cut c7 after 1m00.000s"), "{out}");
    let cut = out.lines().find(|l| l.contains("✂ idle cut")).expect("a cut row");
    let lb_column = 1 + 11 + 2 + 2 * 26;
    assert_eq!(cut.chars().nth(lb_column), Some('X'), "the cut sits on the lb lifeline: {out}");
    assert_eq!(cut.matches(" reset ").count(), 2, "{out}");
    assert!(cut.contains("|<--") && cut.contains("-->|"), "{out}");
    assert!(out.contains("X c2 reset"), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    let marker = lines
        .iter()
        .position(|l| l.starts_with(">>> VIOLATION no-duplicate-execution: call0 — pay ran"))
        .expect("a violation marker line");
    let broken = lines[marker - 1];
    assert!(broken.starts_with('!') && broken.contains("SIDE EFFECT pay call0") && broken.contains("#4"), "{out}");
    assert_eq!(lines.iter().filter(|l| l.contains("SIDE EFFECT")).count(), 2, "{out}");
    assert_eq!(lines.iter().filter(|l| l.starts_with('!')).count(), 1, "{out}");
}

#[test]
fn stored_events_hide_only_when_their_own_session_delivered_them() {
    let out = text(&first_incident());
    // s1's result was stored where nobody listened: it stays. s2's reached the client.
    assert!(out.contains("stored stream1#1 id=1-1 in s1: result #2 call0"), "{out}");
    assert!(!out.contains("in s2: result"), "{out}");
    assert!(!out.contains("stored stream1#0 id=1-0 in s1: priming"), "{out}");
    let full = render(&first_incident(), Format::Text, &DiagramOptions { collapse: false, max_rows: None });
    assert!(full.contains("stored stream1#0 id=1-0 in s1: priming"), "{full}");
    assert!(full.contains("in s2: result"), "{full}");
}

#[test]
fn text_shows_the_second_incident_with_the_loss_folded_and_marked() {
    let out = text(&second_incident());
    assert!(out.contains("reference × silent-head × chatty-tool"), "{out}");
    assert!(out.contains("= FAULT partition client-lb for 4m ====="), "{out}");
    assert!(out.contains("GET Last-Event-ID=1-4 [s1] (c7)"), "{out}");
    assert!(out.contains("resume s1 stream1 Last-Event-ID=1-4: SILENT head, skipped 140"), "{out}");
    assert!(out.contains(">>> VIOLATION no-silent-event-loss: s1 stream1"), "{out}");
    assert!(
        out.contains("… 140 × event stored in s1 stream1 (ids 1-5 … 1-144), until 2m35.000s …"),
        "the lost events fold into one row: {out}"
    );
    assert!(
        out.contains("… 4 × [GET Last-Event-ID=1-4 [s1] (conns c3 … c6) + connection refused (conns c3 … c6) + reconnect backoff of call0 (attempts 1 … 4)]"),
        "the refused reconnects fold into one row: {out}"
    );
    assert!(
        out.contains("… 5 × [progress event on c2 (ids 1-0 … 1-4) + app ← progress of call0 (ids 1-0 … 1-4)]"),
        "{out}"
    );
    // The delivered event's store is hidden; the resumed delivery is drawn.
    assert!(out.contains("event 1-145: progress #2 step 146 (c7)"), "{out}");
    assert!(!out.contains("id=1-145"), "{out}");
}

#[test]
fn client_rows_of_a_multi_client_trace_name_their_client_and_fold_apart() {
    let mut b = TraceBuilder::new("py-sdk", "py-sdk", "two-sessions-same-request-id");
    for i in 0..6 {
        for client in [0, 1] {
            b.push(1_000 + i * 15_000, Actor::Client, StepKind::Comment { conn: ConnId(4) });
            b.trace.steps.last_mut().unwrap().client = Some(client);
        }
    }
    b.push(
        100_000,
        Actor::Client,
        StepKind::ClientStart {
            restored: false,
            durable: false,
            by_class: false,
            max_attempts: None,
            on_give_up: None,
        },
    );
    b.trace.steps.last_mut().unwrap().client = Some(1);
    let out = text(&b.finish(vec![]));
    assert!(out.contains("6 × [[client0] keep-alive on c4 + [client1] keep-alive on c4]"), "{out}");
    assert!(out.contains("[client1] client process started"), "{out}");
    let single = text(&first_incident());
    assert!(!single.contains("[client"), "{single}");
}

#[test]
fn fifty_keep_alives_collapse_into_one_row() {
    let mut b = TraceBuilder::new("reference", "reference", "idle-stream");
    b.send(0, 1, Request::get(Some(sid("s1")), None));
    b.respond(1, 1, ResponseHead::event_stream());
    for k in 0..50 {
        b.client(1_000 + k * 15_000, StepKind::Comment { conn: ConnId(1) });
    }
    b.end(800_000, 1, ConnEnd::Clean);
    let trace = b.finish(vec![]);
    let out = text(&trace);
    let keep_alives: Vec<&str> = out.lines().filter(|l| l.contains("keep-alive")).collect();
    assert_eq!(keep_alives.len(), 1, "{out}");
    assert!(keep_alives[0].contains("… 50 × keep-alive on c1, until 12m16.000s …"), "{out}");
    assert!(keep_alives[0].trim_start().starts_with("1.000s"), "a folded row shows its first time: {out}");
    let full = render(&trace, Format::Text, &DiagramOptions { collapse: false, max_rows: None });
    assert_eq!(full.lines().filter(|l| l.contains("keep-alive (c1)")).count(), 50, "{full}");
}

#[test]
fn two_similar_rows_are_not_folded() {
    let mut b = TraceBuilder::new("a", "b", "c");
    b.client(0, StepKind::Comment { conn: ConnId(1) });
    b.client(1, StepKind::Comment { conn: ConnId(1) });
    let out = text(&b.finish(vec![]));
    assert_eq!(out.lines().filter(|l| l.contains("keep-alive (c1)")).count(), 2, "{out}");
}

#[test]
fn max_rows_truncates_and_still_reports_the_violation() {
    let trace = first_incident();
    let all = Diagram::build(&trace, &DiagramOptions::default()).rows.len();
    let opts = DiagramOptions { collapse: true, max_rows: Some(5) };
    let d = Diagram::build(&trace, &opts);
    assert_eq!(d.rows.len(), 5);
    assert_eq!(d.more, all - 5);
    assert_eq!(d.late.len(), 1);
    let out = render(&trace, Format::Text, &opts);
    assert!(out.contains(&format!("\n… {} more rows\n", all - 5)), "{out}");
    assert!(!out.contains("tools/call#4"), "{out}");
    assert!(out.contains(">>> VIOLATION no-duplicate-execution: call0"), "{out}");
    assert!(render(&trace, Format::Mermaid, &opts).contains(&format!("… {} more rows", all - 5)));
    assert!(render(&trace, Format::Svg, &opts).contains(&format!("… {} more rows", all - 5)));
}

/// True if every `;` ends a `#<digits>;` entity and every `#` starts one.
fn entities_only(line: &str) -> bool {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            ';' => return false,
            '#' => {
                let digits = chars[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                if digits == 0 || chars.get(i + 1 + digits) != Some(&';') {
                    return false;
                }
                i += digits + 2;
            }
            _ => i += 1,
        }
    }
    true
}

#[test]
fn mermaid_draws_both_incidents_with_escaped_messages() {
    for (trace, invariant) in
        [(first_incident(), "no-duplicate-execution"), (second_incident(), "no-silent-event-loss")]
    {
        let out = render(&trace, Format::Mermaid, &DiagramOptions::default());
        assert!(out.starts_with("sequenceDiagram\n"), "{out}");
        for p in ["participant App", "participant Client", "participant LB", "participant Server"] {
            assert!(out.contains(p), "{out}");
        }
        assert!(out.lines().all(entities_only), "an unescaped ; or #: {out}");
        assert!(out.contains("    rect rgb(255,220,220)\n"), "{out}");
        assert!(out.contains(&format!("Note over App,Server: ⚠ VIOLATION {invariant}#58; ")), "{out}");
        let opens = out.lines().filter(|l| l.trim_start().starts_with("rect ")).count();
        let ends = out.lines().filter(|l| l.trim() == "end").count();
        assert_eq!(opens, ends, "{out}");
    }
    let first = render(&first_incident(), Format::Mermaid, &DiagramOptions::default());
    assert!(first.contains("Client->>Server: 0.010s POST tools/call#35;2 pay call0 [s1] (c2)"), "{first}");
    assert!(first.contains("Server-->>Client: 0.014s event 1-0#58; priming (c2)"), "{first}");
    assert!(first.contains("LB-xClient: 1m00.014s ✂ reset (idle cut c7 after 1m00.000s)"), "{first}");
    assert!(first.contains("LB-xServer: reset"), "{first}");
    let second = render(&second_incident(), Format::Mermaid, &DiagramOptions::default());
    assert!(second.contains("GET Last-Event-ID=1-4 [s1] (c7)"), "{second}");
    assert!(second.contains("    title mcpsim seed 42 · reference × silent-head × chatty-tool\n"), "{second}");
}

#[test]
fn mermaid_escapes_what_ends_or_confuses_a_statement() {
    assert_eq!(mermaid::escape("a;b#c:d<e>\"f\"\ng"), "a#59;b#35;c#58;d#60;e#62;#34;f#34; g");
}

/// Checks that every tag is closed in order; returns the element names seen.
fn balanced_tags(svg: &str) -> Result<Vec<String>, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    let mut rest = svg;
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').ok_or("an unclosed <")? + open;
        let tag = &rest[open + 1..close];
        rest = &rest[close + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            match stack.pop() {
                Some(top) if top == name => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
        } else {
            let name: String = tag.chars().take_while(|c| !c.is_whitespace() && *c != '/').collect();
            seen.push(name.clone());
            if !tag.ends_with('/') {
                stack.push(name);
            }
        }
    }
    if stack.is_empty() {
        Ok(seen)
    } else {
        Err(format!("unclosed {stack:?}"))
    }
}

#[test]
fn svg_draws_both_incidents_with_the_violation_in_red() {
    for (trace, invariant) in
        [(first_incident(), "no-duplicate-execution"), (second_incident(), "no-silent-event-loss")]
    {
        let out = render(&trace, Format::Svg, &DiagramOptions::default());
        assert!(out.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{out}");
        assert!(out.ends_with("</svg>\n"), "{out}");
        let tags = balanced_tags(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(out.matches("<g ").count(), out.matches("</g>").count(), "{out}");
        assert_eq!(tags.iter().filter(|t| *t == "svg").count(), 1);
        let red = format!(r##"fill="#c00000" class="strong">⚠ VIOLATION {invariant}: "##);
        assert!(out.contains(&red), "{out}");
        for lane in ["app", "client", "lb", "server"] {
            assert_eq!(out.matches(&format!(r#"class="strong">{lane}</text>"#)).count(), 2, "{out}");
        }
    }
    let first = render(&first_incident(), Format::Svg, &DiagramOptions::default());
    assert!(first.contains(">POST tools/call#2 pay call0 [s1] (c2)</text>"), "{first}");
    assert!(first.contains(">✂ idle cut c7 after 1m00.000s</text>"), "{first}");
    assert!(
        first.contains(r##"<path d="M634 "##) && first.contains(r##"stroke="#c00000""##),
        "a red cut mark on lb: {first}"
    );
    assert!(first.contains(r#"class="money""#), "the side effects stand out: {first}");
}

#[test]
fn svg_escapes_labels_and_keeps_a_fixed_row_height() {
    let mut b = TraceBuilder::new("a&b", "<srv>", "x");
    let message =
        ServerMessage::Error { request: Some(RequestId(2)), message: "bad <input> & \"quotes\"".into(), code: None };
    b.client(0, StepKind::Json { conn: ConnId(1), message });
    let out = render(&b.finish(vec![]), Format::Svg, &DiagramOptions::default());
    balanced_tags(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(out.contains("bad &lt;input&gt; &amp; &quot;quotes&quot;"), "{out}");
    assert!(out.contains("a&amp;b × &lt;srv&gt;"), "{out}");

    let height = |rows: u64| {
        let mut b = TraceBuilder::new("a", "b", "c");
        for k in 0..rows {
            b.app(k, StepKind::AppSessionLost { session: sid("s1") });
        }
        let out = render(&b.finish(vec![]), Format::Svg, &DiagramOptions::default());
        let at = out.find("height=\"").expect("a height") + 8;
        out[at..].split('"').next().and_then(|h| h.parse::<u64>().ok()).expect("a numeric height")
    };
    assert_eq!(height(400) - height(0), 400 * 24);
}

#[test]
fn a_trace_from_elsewhere_still_draws() {
    let mut trace = Trace::new(9, serde_json::json!({"other": true}));
    trace.steps.push(Step {
        seq: 0,
        t: 5,
        actor: Actor::Run,
        client: None,
        replica: None,
        conn_client: None,
        kind: StepKind::Liveness { deadline: 10 },
    });
    for format in [Format::Text, Format::Mermaid, Format::Svg] {
        let out = render(&trace, format, &DiagramOptions::default());
        assert!(out.contains("mcpsim seed 9 · ? × ? × ?"), "{out}");
        assert!(out.contains("verdict: unknown (no footer") || out.contains("verdict#58; unknown (no footer"), "{out}");
    }
    let empty = Trace::new(1, serde_json::Value::Null);
    let mut late = empty.clone();
    late.finish(vec![violation("no-orphaned-session", 5, "s9", "")]);
    let out = text(&late);
    assert!(out.contains(">>> VIOLATION no-orphaned-session: s9 (at 0.005s) [its row is not shown]"), "{out}");
}

#[test]
fn a_violation_lands_on_the_step_its_footer_names() {
    let mut b = TraceBuilder::new("a", "b", "c");
    b.stored(5, "s1", 7, progress(8));
    b.side_effect(5, "s1", 2);
    let trace = b.finish(vec![]);
    let at = |step| ViolationRecord { step, ..violation("no-duplicate-execution", 5, "call0", "") };
    assert_eq!(violation_step(&at(1), &trace.steps), Some(1), "not the first step at its time: the named one");
    assert_eq!(violation_step(&at(0), &trace.steps), Some(0));
    assert_eq!(violation_step(&at(99), &trace.steps), Some(1), "past the end: the last step");
    assert_eq!(violation_step(&at(0), &[]), None);
}

#[test]
fn a_violating_stored_event_is_drawn_even_when_delivered() {
    let mut b = TraceBuilder::new("a", "b", "c");
    b.send(0, 1, Request::get(Some(sid("s1")), None));
    b.stored(1, "s1", 0, progress(1));
    b.event(2, 1, "1-0", progress(1));
    let quiet = text(&b.finish(vec![]));
    assert!(!quiet.contains("id=1-0"), "{quiet}");
    let loud = text(&b.finish(vec![violation("no-silent-event-loss", 1, "1-0", "")]));
    assert!(loud.contains("stored stream1#0 id=1-0 in s1"), "{loud}");
}

#[test]
fn the_same_trace_draws_the_same_bytes() {
    for trace in [first_incident(), second_incident()] {
        for format in [Format::Text, Format::Mermaid, Format::Svg] {
            let opts = DiagramOptions::default();
            assert_eq!(render(&trace, format, &opts), render(&trace.clone(), format, &opts));
        }
    }
}
