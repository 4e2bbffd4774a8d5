//! Multi-replica traces (issue 23, item 4): every replica has its own lifeline in `show` (text,
//! Mermaid, SVG and the HTML page), server steps say which replica did them, and a connection has
//! one name from the client through the balancer to the server.

mod common;
use common::run_ok;

use mcpsim::report::diagram::{render, DiagramOptions, Format};
use mcpsim::Scenario;
use mcpsim_model::ids::ConnId;
use mcpsim_model::trace::{step_line, Actor, Step, StepKind};
use std::collections::{BTreeMap, BTreeSet};

fn scenario(overrides: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::build("long-tool", "reference", "reference").expect("a known scenario and profiles");
    let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.apply_overrides(&overrides).expect("valid overrides");
    s
}

const THREE: (&str, &str) = ("lb.replicas", "3");

#[test]
fn a_three_replica_run_shows_three_server_lifelines() {
    let outcome = run_ok(&scenario(&[THREE]), 1);
    let stamped: BTreeSet<u32> = outcome.trace.steps.iter().filter_map(|s| s.replica).collect();
    assert_eq!(stamped, BTreeSet::from([0, 1, 2]), "every replica's server steps say which replica did them");
    assert!(outcome.trace.steps.iter().all(|s| s.replica.is_none() || s.actor == Actor::Server));

    let opts = DiagramOptions::default();
    let text = render(&outcome.trace, Format::Text, &opts);
    let header = text.lines().find(|l| l.trim_start().starts_with("time")).expect("a lifeline header");
    let names: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(names, ["time", "app", "client", "lb", "server#0", "server#1", "server#2"], "{header}");
    // A step of replica 2 sits on the third server lifeline, the rightmost one.
    let created = text.lines().find(|l| l.contains("session 2-1 created")).expect("replica 2 creates session 2-1");
    let lane = header.find("server#2").expect("its lifeline");
    assert_eq!(created.char_indices().nth(lane).map(|(_, c)| c), Some('*'), "{created}\n{header}");

    let mermaid = render(&outcome.trace, Format::Mermaid, &opts);
    for r in 0..3 {
        assert!(mermaid.contains(&format!("participant Server{r} as server#35;{r}")), "{mermaid}");
    }
    let svg = render(&outcome.trace, Format::Svg, &opts);
    for r in 0..3 {
        assert!(svg.contains(&format!(">server#{r}</text>")), "the SVG (and the HTML page built on it) has lane {r}");
    }
    assert_eq!(svg.matches(r#"<g class="lane">"#).count(), 6, "app, client, lb and three servers");
    // The HTML page: the same drawing, and the timeline's actor filter tells the replicas apart.
    let page = mcpsim::report::html::trace_page(&outcome.trace, &opts);
    assert_eq!(page.matches(r#"<g class="lane">"#).count(), 6);
    for r in 0..3 {
        assert!(page.contains(&format!(r#""actor":"server#{r}""#)), "the timeline names replica {r}");
    }
}

#[test]
fn a_single_replica_diagram_keeps_one_server_lifeline_and_unstamped_steps() {
    let outcome = run_ok(&scenario(&[]), 1);
    assert!(outcome.trace.steps.iter().all(|s| s.replica.is_none() && s.conn_client.is_none()));
    assert!(outcome.trace.steps.iter().all(|s| !step_line(s).contains("replica_index")));
    let text = render(&outcome.trace, Format::Text, &DiagramOptions::default());
    let header = text.lines().find(|l| l.trim_start().starts_with("time")).expect("a lifeline header");
    assert_eq!(header.split_whitespace().collect::<Vec<_>>(), ["time", "app", "client", "lb", "server"]);
}

/// The connection a balancer or server step names, as (whose client, number).
fn named(step: &Step) -> Option<(Option<u32>, ConnId)> {
    let mut kind = step.kind.clone();
    let conn = *kind.conn_mut()?;
    Some((step.client.or(step.conn_client), conn))
}

/// Every connection the balancer routes or the server refuses is one the client opened, under
/// the same name, and a refusal comes from the replica the balancer routed that connection to.
fn check_one_name(steps: &[Step]) -> usize {
    let mut sent = BTreeSet::new();
    let mut routed = BTreeMap::new();
    let mut checked = 0;
    for step in steps {
        match (&step.actor, &step.kind) {
            (Actor::Client, StepKind::Send { .. }) => {
                sent.insert(named(step).expect("a send names its connection"));
            }
            (Actor::Lb, StepKind::LbRouted { replica, .. }) => {
                let name = named(step).expect("a route names its connection");
                assert!(sent.contains(&name), "the balancer routes {name:?}, which the client never opened: {step:?}");
                routed.insert(name, *replica);
            }
            (Actor::Server, StepKind::Rejected { .. }) => {
                let name = named(step).expect("a refusal names its connection");
                assert_eq!(routed.get(&name), step.replica.as_ref(), "{name:?} refused by another replica: {step:?}");
                checked += 1;
            }
            _ => {}
        }
    }
    checked
}

#[test]
fn a_connection_has_one_name_from_the_client_through_the_balancer_to_the_server() {
    let outcome = run_ok(&scenario(&[THREE, ("lb.routing", "round-robin")]), 1);
    assert!(check_one_name(&outcome.trace.steps) > 0, "round robin over local stores refuses some request with 404");
}

#[test]
fn with_several_clients_the_name_says_whose_connection_it_is() {
    let mut s = Scenario::build("two-sessions-same-request-id", "reference", "reference").expect("a shipped family");
    s.apply_overrides(&[("lb.replicas".into(), "2".into())]).expect("valid overrides");
    let outcome = run_ok(&s, 1);
    let routes: Vec<&Step> =
        outcome.trace.steps.iter().filter(|s| matches!(s.kind, StepKind::LbRouted { .. })).collect();
    let whose: BTreeSet<Option<u32>> = routes.iter().map(|s| s.conn_client).collect();
    assert_eq!(whose, BTreeSet::from([Some(0), Some(1)]), "both clients' connections are routed");
    check_one_name(&outcome.trace.steps);
}
