use super::*;
use mcpsim_model::http::{ClientMessage, Request, ToolCall};
use mcpsim_model::ids::{CallKey, ConnId, RequestId, SessionId};
use mcpsim_model::trace::{Actor, StepKind, ViolationRecord};

fn step(i: u64, t_ms: u64, actor: Actor, kind: StepKind) -> Step {
    Step { seq: i, t: t_ms * 1_000, actor, client: None, replica: None, conn_client: None, kind }
}

fn call_tool(request: u64, session: &str) -> StepKind {
    let call = ToolCall { tool: "pay".into(), key: CallKey(0), idempotency_key: None, tasks: false };
    let body = ClientMessage::CallTool { id: RequestId(request), call };
    StepKind::Send { conn: ConnId(request), request: Request::post(Some(SessionId::from(session)), body) }
}

fn effect(request: u64, session: &str) -> StepKind {
    StepKind::SideEffect {
        session: SessionId::from(session),
        request: RequestId(request),
        call: CallKey(0),
        tool: "pay".into(),
        idempotent: false,
    }
}

/// A naive client re-initializes after an idle cut and pays twice; a hostile string rides along.
fn incident() -> Trace {
    let mut trace = Trace::new(7, serde_json::json!({"scenario": {"name": "long-tool"}}));
    let created = |s: &str| StepKind::SessionCreated { session: SessionId::from(s), client: "app".into() };
    trace.steps = vec![
        step(0, 0, Actor::Server, created("s1")),
        step(1, 1, Actor::App, StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: false }),
        step(2, 1, Actor::Client, call_tool(2, "s1")),
        step(3, 2, Actor::Server, effect(2, "s1")),
        step(4, 60_000, Actor::Lb, StepKind::LbIdleCut { conn: ConnId(2), idle_us: 60_000_000, hop: None }),
        step(5, 60_000, Actor::Client, StepKind::ConnEnd { conn: ConnId(2), end: mcpsim_model::http::ConnEnd::Reset }),
        step(6, 60_001, Actor::Fault, StepKind::Fault { fault: "</script><!-- & \"x\"".into() }),
        step(7, 60_002, Actor::Server, created("s2")),
        step(8, 60_003, Actor::Client, call_tool(3, "s2")),
        step(9, 60_004, Actor::Server, effect(3, "s2")),
    ];
    let v = ViolationRecord {
        invariant: "no-duplicate-execution".into(),
        step: 9,
        t: 60_004_000,
        subject: "call0".into(),
        detail: "pay ran twice <b>".into(),
        conditions: String::new(),
    };
    trace.finish(vec![v]);
    trace
}

#[test]
fn the_cause_chain_names_the_cut_the_new_session_the_resend_and_the_second_run() {
    let trace = incident();
    let (causes, dropped) = cause_chain(&trace.steps, 9);
    assert_eq!(dropped, 0);
    let lines: Vec<String> = causes.iter().map(Cause::line).collect();
    let text = lines.join("\n");
    assert_eq!(causes.iter().map(|c| c.step).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 6, 7, 8, 9], "{text}");
    assert!(lines[4].contains("lb: cut c2 after 1m00.000s"), "{text}");
    assert!(lines[6].contains("a re-initialization (its session s1 came before)"), "{text}");
    assert!(lines[7].contains("pay call0 AGAIN"), "{text}");
    assert!(lines[8].contains("AGAIN in session s2: execution 2"), "{text}");
    assert!(!text.contains("c2 broke"), "a cut connection's reset is not a second cause: {text}");
}

#[test]
fn a_chain_keeps_its_last_links_and_survives_odd_input() {
    let trace = incident();
    let mut long = trace.steps.clone();
    for i in 0..40 {
        long.push(step(10 + i, 70_000 + i, Actor::Fault, StepKind::Fault { fault: format!("f{i}") }));
    }
    let (causes, dropped) = cause_chain(&long, long.len() - 1);
    assert_eq!(causes.len(), MAX_CAUSES);
    assert_eq!(dropped, 9 + 40 - MAX_CAUSES);
    assert_eq!(causes.last().map(|c| c.step), Some(long.len() - 1));
    assert_eq!(cause_chain(&[], 3), (Vec::new(), 0));
    assert_eq!(cause_chain(&trace.steps, 999).0.last().map(|c| c.step), Some(9), "past the end: the last step");
}

#[test]
fn script_json_cannot_close_its_element() {
    let json = script_json(&serde_json::json!({"a": "</script><!-- & \u{2028}"}));
    assert!(!json.contains('<') && !json.contains('>') && !json.contains('&'), "{json}");
    let back: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(back["a"], "</script><!-- & \u{2028}");
}

#[test]
fn the_page_is_self_contained_escaped_and_marks_the_violating_step() {
    let trace = incident();
    let html = trace_page(&trace, &DiagramOptions::default());
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("</script>").count(), 3, "the error counter, the data, the page script: no other");
    assert!(!html.contains("<!-- "), "{html}");
    for fetch in ["src=", "href=\"http", "url(http", "@import", "<link"] {
        assert!(!html.contains(fetch), "{fetch} in the page");
    }
    assert!(html.contains("Content-Security-Policy"));
    assert!(html.contains("pay ran twice &lt;b&gt;"), "violation text escaped");
    assert!(html.contains(r##"<a class="m-step" href="#t7-"##), "{html}");
    assert!(html.contains(r#"data-step="9">step 9</a> VIOLATION no-duplicate-execution"#), "{html}");
    assert!(html.contains("<h3>Why no-duplicate-execution broke</h3>"));
    assert!(html.contains("<svg "), "the diagram is inline");
    assert!(html.contains(r#"<g class="row" data-step="9">"#), "diagram rows name their step");
}

#[test]
fn the_same_trace_gives_the_same_bytes_and_sections_compose() {
    let trace = incident();
    assert_eq!(trace_section(&trace), trace_section(&trace.clone()));
    let mut clean = Trace::new(8, serde_json::json!({}));
    clean.finish(vec![]);
    let both = page("two traces", &[trace_section(&trace), trace_section(&clean)]);
    assert_eq!(both.matches("<section class=\"m-trace\"").count(), 2);
    assert!(both.contains("verdict: no invariant violated"));
    assert!(both.contains("class=\"m-jump\" disabled"), "nothing to jump to in a clean trace");
}
