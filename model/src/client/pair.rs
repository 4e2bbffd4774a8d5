//! A client and a server wired together through a load balancer, with no latency: enough to see
//! what a pair of policies leads to, judged by the oracles, without the simulator.

use super::*;
use crate::config::{LbConfig, ToolSpec};
use crate::http::Method;
use crate::lb::{LbOutput, LoadBalancer};
use crate::oracle::{self, Violation};
use crate::profiles;
use crate::server::{Server, ServerOutput};
use crate::trace::{Actor, Step, ToolEnd, Trace};
use std::collections::BTreeSet;
use std::time::Duration;

/// The one tool of these runs.
const TOOL: &str = "pay";

struct Pair {
    client: Client,
    server: Server,
    lb: LoadBalancer,
    now: Instant,
    /// Connections neither side has seen end yet.
    open: BTreeSet<ConnId>,
    trace: Trace,
}

impl Pair {
    fn new(client: &str, server: &str, tool: ToolSpec, lb_idle: Option<Duration>) -> Self {
        let client_policy = profiles::client(client).expect("a listed client profile");
        let server_policy = profiles::server(server).expect("a listed server profile");
        let mut pair = Pair {
            client: Client::new(client_policy, "app", None, 1),
            server: Server::new(server_policy, vec![tool], 0, 2),
            lb: LoadBalancer::new(LbConfig { idle_timeout: lb_idle }),
            now: Instant::ZERO,
            open: BTreeSet::new(),
            trace: Trace::new(0, serde_json::Value::Null),
        };
        pair.client.start(Instant::ZERO);
        pair.pump();
        pair
    }

    fn call(&mut self, key: u32, idempotent: bool) {
        self.client.call_tool(self.now, CallKey(key), TOOL, idempotent);
        self.pump();
    }

    /// Runs every timer up to `end`, then records the final state and judges the trace.
    fn run_until(&mut self, end: Instant) -> Vec<Violation> {
        for _ in 0..100_000 {
            let next = [self.client.poll_timeout(), self.server.poll_timeout(), self.lb.poll_timeout()];
            let Some(next) = next.into_iter().flatten().min().filter(|t| *t <= end) else { break };
            self.now = next;
            self.client.handle_timeout(next);
            self.server.handle_timeout(next);
            self.lb.handle_timeout(next);
            self.pump();
        }
        self.now = end;
        let client_session = self.client.session().cloned();
        let server_sessions = self.server.live_sessions();
        self.record(Actor::Run, StepKind::RunEnd { client_session, server_sessions, other_client_sessions: vec![] });
        oracle::check_all(&self.trace)
    }

    /// Carries every queued output to its destination until all three machines are idle.
    fn pump(&mut self) {
        for _ in 0..100_000 {
            if let Some(out) = self.client.poll_output() {
                self.carry_client(out);
            } else if let Some(out) = self.server.poll_output() {
                self.carry_server(out);
            } else if let Some(out) = self.lb.poll_output() {
                self.carry_lb(out);
            } else {
                return;
            }
        }
        panic!("the machines did not settle at {}", self.now);
    }

    fn carry_client(&mut self, out: ClientOutput) {
        match out {
            ClientOutput::Open { conn, request } => {
                self.open.insert(conn);
                self.lb.handle_open(self.now, conn);
                self.server.handle_request(self.now, conn, request);
            }
            ClientOutput::Abort { conn } => {
                if self.open.remove(&conn) {
                    self.lb.handle_close(self.now, conn);
                    self.server.handle_disconnect(self.now, conn);
                }
            }
            ClientOutput::Persist(_) => {}
            ClientOutput::Record(kind) => {
                let actor = if kind.is_app() { Actor::App } else { Actor::Client };
                self.record(actor, kind);
            }
        }
    }

    fn carry_server(&mut self, out: ServerOutput) {
        match out {
            ServerOutput::Send { conn, frame } if self.open.contains(&conn) => {
                self.lb.handle_bytes(self.now, conn);
                self.client.handle_frame(self.now, conn, frame);
            }
            ServerOutput::Send { .. } => {}
            ServerOutput::Close { conn, abrupt } => {
                if self.open.remove(&conn) {
                    self.lb.handle_close(self.now, conn);
                    let end = if abrupt { ConnEnd::Reset } else { ConnEnd::Clean };
                    self.client.handle_conn_end(self.now, conn, end);
                }
            }
            ServerOutput::Record(kind) => self.record(Actor::Server, kind),
        }
    }

    fn carry_lb(&mut self, out: LbOutput) {
        match out {
            LbOutput::Cut { conn } => {
                if self.open.remove(&conn) {
                    self.client.handle_conn_end(self.now, conn, ConnEnd::Reset);
                    self.server.handle_disconnect(self.now, conn);
                }
            }
            LbOutput::Record(kind) => self.record(Actor::Lb, kind),
        }
    }

    fn record(&mut self, actor: Actor, kind: StepKind) {
        let seq = self.trace.steps.len() as u64;
        self.trace.steps.push(Step { seq, t: self.now.0, actor, client: None, kind });
    }

    fn count(&self, which: impl Fn(&StepKind) -> bool) -> usize {
        self.trace.steps.iter().filter(|s| which(&s.kind)).count()
    }

    fn side_effects(&self) -> usize {
        self.count(|k| matches!(k, StepKind::SideEffect { .. }))
    }

    fn resolutions(&self) -> Vec<StepKind> {
        self.trace.app_view().filter(|s| s.kind.resolves().is_some()).map(|s| s.kind.clone()).collect()
    }
}

fn silent_tool(secs: u64, idempotent: bool) -> ToolSpec {
    ToolSpec { name: TOOL.into(), duration: Duration::from_secs(secs), event_interval: None, idempotent }
}

fn names(violations: &[Violation]) -> Vec<&'static str> {
    violations.iter().map(|v| v.invariant).collect()
}

const IDLE_CUT: Option<Duration> = Some(Duration::from_secs(60));
const HOUR: Instant = Instant(3_600_000_000);

#[test]
fn stateless_under_an_idle_cut_runs_a_non_idempotent_tool_again_on_every_reissue() {
    let mut p = Pair::new("stateless-2026", "stateless-2026", silent_tool(300, false), IDLE_CUT);
    p.call(1, false);
    let violations = p.run_until(HOUR);
    // Each attempt is cut at 60 s, which cancels it on the server after its side effect ran.
    assert_eq!(p.side_effects(), 6, "the first POST and five re-issues");
    assert_eq!(p.count(|k| matches!(k, StepKind::ToolEnded { end: ToolEnd::Cancelled, .. })), 6);
    assert_eq!(p.count(|k| matches!(k, StepKind::SessionCreated { .. })), 0);
    assert_eq!(p.resolutions(), vec![StepKind::AppUnknownOutcome { call: CallKey(1), reason: ERR_EXHAUSTED.into() }]);
    assert_eq!(names(&violations), vec!["no-duplicate-execution"], "{violations:#?}");
}

#[test]
fn stateless_reissues_of_an_idempotent_tool_break_no_invariant() {
    let mut p = Pair::new("stateless-2026", "stateless-2026", silent_tool(300, true), IDLE_CUT);
    p.call(1, true);
    let violations = p.run_until(HOUR);
    assert_eq!(p.side_effects(), 6);
    assert_eq!(p.resolutions(), vec![StepKind::AppError { call: CallKey(1), error: ERR_EXHAUSTED.into() }]);
    assert_eq!(violations, vec![]);
}

#[test]
fn stateless_without_a_cut_runs_once_and_delivers_under_the_empty_session() {
    let mut p = Pair::new("stateless-2026", "stateless-2026", silent_tool(30, false), IDLE_CUT);
    p.call(1, false);
    assert_eq!(p.run_until(HOUR), vec![]);
    assert_eq!(p.side_effects(), 1);
    assert_eq!(
        p.resolutions(),
        vec![StepKind::AppResult {
            call: CallKey(1),
            session: SessionId(String::new()),
            id: Some(EventId::from("0.1-0"))
        }]
    );
}

#[test]
fn the_reference_pair_resumes_through_the_same_cuts_and_runs_the_tool_once() {
    let mut p = Pair::new("reference", "reference", silent_tool(300, false), IDLE_CUT);
    p.call(1, false);
    assert_eq!(p.run_until(HOUR), vec![]);
    assert_eq!(p.side_effects(), 1);
    assert!(matches!(p.resolutions()[..], [StepKind::AppResult { .. }]));
}

#[test]
fn a_session_client_works_against_a_server_without_sessions() {
    for client in ["reference", "ts-sdk", "py-sdk", "rmcp", "naive"] {
        let mut p = Pair::new(client, "stateless-2026", silent_tool(30, false), None);
        p.call(1, false);
        assert_eq!(p.run_until(HOUR), vec![], "{client}");
        assert_eq!(p.client.session(), None, "{client}");
        assert!(matches!(p.resolutions()[..], [StepKind::AppResult { .. }]), "{client}: {:#?}", p.resolutions());
    }
}

#[test]
fn a_client_without_sessions_is_refused_by_a_server_that_requires_them() {
    for server in ["reference", "ts-sdk", "py-sdk", "rmcp"] {
        let mut p = Pair::new("stateless-2026", server, silent_tool(30, false), None);
        p.call(1, false);
        assert_eq!(p.run_until(HOUR), vec![], "{server}");
        assert_eq!(p.side_effects(), 0, "{server}");
        assert_eq!(p.resolutions(), vec![StepKind::AppError { call: CallKey(1), error: "HTTP 400".into() }]);
    }
}

#[test]
fn deleting_the_session_during_a_tool_cancels_it_or_lets_it_run_on_per_server() {
    for (server, end) in [("ts-sdk", ToolEnd::Completed), ("py-sdk", ToolEnd::Cancelled), ("rmcp", ToolEnd::Cancelled)]
    {
        let mut p = Pair::new("reference", server, silent_tool(300, false), None);
        p.call(1, false);
        p.run_until(Instant(10_000_000));
        p.client.delete_session(p.now);
        p.pump();
        let violations = p.run_until(HOUR);
        assert_eq!(violations, vec![], "{server}");
        assert_eq!(p.server.live_sessions(), vec![], "{server}");
        assert_eq!(p.count(|k| matches!(k, StepKind::ToolEnded { end: e, .. } if *e == end)), 1, "{server}");
        assert_eq!(
            p.resolutions(),
            vec![StepKind::AppUnknownOutcome { call: CallKey(1), reason: SESSION_DELETED.into() }],
            "{server}"
        );
        assert_eq!(p.count(|k| matches!(k, StepKind::Send { request, .. } if request.method == Method::Delete)), 1);
    }
}
