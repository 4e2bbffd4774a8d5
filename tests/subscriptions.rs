//! `subscriptions/listen` through the actors (docs/eras.md, "Subscriptions"): the
//! `sim/scenarios/listen-notify.toml` family — change notifications every 2 s while a modern
//! client is cut off for 15 s — loses the changes emitted while no listen stream is open. Told to
//! the application (the SDKs' `SubscriptionLost` / `SubscriptionEnd::Abrupt`), the loss is covered
//! by its refetch; hidden by a client that re-listens on its own, it is silent
//! (`no-silent-notification-loss`). On two replicas whose processes fan out only to their own
//! listen streams, the other replica's changes are lost silently whatever the client does; a bus
//! shared by the replicas (`server.subscriptions.bus = shared`) delivers them.

mod common;
use common::{replay, run_ok, violated};

use mcpsim::Scenario;
use mcpsim_model::oracle::conditions::Condition;
use mcpsim_model::trace::StepKind;
use std::path::Path;

fn family() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sim/scenarios/listen-notify.toml").to_string_lossy().into_owned()
}

fn scenario(client: &str, server: &str, overrides: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::build(&family(), client, server).expect("the family file and profiles load");
    let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.apply_overrides(&overrides).expect("valid overrides");
    s
}

const PARTITION_US: (u64, u64) = (60_000_000, 75_000_000);

#[test]
fn a_client_that_relistens_silently_loses_what_was_emitted_while_it_was_cut_off() {
    let s = scenario("stateless-2026", "py-sdk", &[("client.subscriptions.on_abrupt_end", "relisten")]);
    let out = run_ok(&s, 0);
    let v = violated(&out);
    assert_eq!(v.into_iter().collect::<Vec<_>>(), vec!["no-silent-notification-loss"], "replay: {}", replay(&s, 0));
    let steps = &out.trace.steps;
    // Changes emitted to no listen stream during the outage, none of them handed over.
    let nobody: Vec<&str> = steps
        .iter()
        .filter_map(|st| match &st.kind {
            StepKind::ChangeEmitted { change, listeners: 0 } => Some(change.as_str()),
            _ => None,
        })
        .collect();
    assert!(nobody.len() >= 5, "{nobody:?}");
    let handed: Vec<&str> = steps
        .iter()
        .filter_map(|st| match &st.kind {
            StepKind::AppChange { change } => Some(change.as_str()),
            _ => None,
        })
        .collect();
    assert!(nobody.iter().all(|c| !handed.contains(c)));
    // The client re-listened after the outage and the application was never told.
    let reopened = steps.iter().filter(|st| matches!(st.kind, StepKind::ListenOpen { .. })).map(|st| st.t);
    assert!(reopened.clone().any(|t| t > PARTITION_US.1), "no re-listen after the heal");
    assert!(!steps.iter().any(|st| matches!(st.kind, StepKind::AppSubscriptionLost { .. })));
    // Changes after the re-listen reach it again.
    assert!(steps.iter().any(|st| st.t > PARTITION_US.1 && matches!(st.kind, StepKind::AppChange { .. })));
}

#[test]
fn telling_the_application_as_the_sdks_do_covers_the_loss() {
    for seed in [0, 1, 2] {
        let s = scenario("stateless-2026", "py-sdk", &[]);
        let out = run_ok(&s, seed);
        assert!(violated(&out).is_empty(), "{:?}\nreplay: {}", violated(&out), replay(&s, seed));
        let told: Vec<u64> = out
            .trace
            .steps
            .iter()
            .filter(|st| matches!(st.kind, StepKind::AppSubscriptionLost { .. }))
            .map(|st| st.t)
            .collect();
        assert_eq!(told, vec![PARTITION_US.0], "told once, at the cut; replay: {}", replay(&s, seed));
    }
}

#[test]
fn a_legacy_client_keeps_its_get_stream_and_never_listens() {
    let s = scenario("py-sdk", "py-sdk", &[]);
    let out = run_ok(&s, 0);
    let listens = out.trace.steps.iter().filter(|st| match &st.kind {
        StepKind::Send { request, .. } => {
            matches!(request.body, Some(mcpsim_model::http::ClientMessage::Listen { .. }))
        }
        _ => false,
    });
    assert_eq!(listens.count(), 0);
    assert!(!out.trace.steps.iter().any(|st| matches!(st.kind, StepKind::ListenOpen { .. })));
}

#[test]
fn on_two_replicas_the_other_replicas_changes_are_lost_even_when_the_application_is_told() {
    // Each process fans out only to its own listen streams (python's InMemorySubscriptionBus):
    // the replica without the client's stream emits to nobody, and no abrupt end tells of it.
    let s = scenario("stateless-2026", "py-sdk", &[("lb.replicas", "2")]);
    let out = run_ok(&s, 0);
    let v = violated(&out);
    assert!(v.contains("no-silent-notification-loss"), "{v:?}\nreplay: {}", replay(&s, 0));
}

#[test]
fn a_bus_shared_by_the_replicas_delivers_every_replicas_changes() {
    for seed in [0, 1, 2] {
        let s = scenario("stateless-2026", "py-sdk", &[("lb.replicas", "2"), ("server.subscriptions.bus", "shared")]);
        let out = run_ok(&s, seed);
        assert!(violated(&out).is_empty(), "{:?}\nreplay: {}", violated(&out), replay(&s, seed));
        let relayed =
            out.trace.steps.iter().filter(|st| matches!(st.kind, StepKind::ChangeRelayed { listeners: 1.., .. }));
        assert!(relayed.count() > 10, "replay: {}", replay(&s, seed));
    }
}

/// modelcontextprotocol/go-sdk#1229: a quiet listen stream cut by a proxy's idle timeout ends
/// without an error, and the Go client keeps its subscription flag (`mcp/client.go:1388-1397`):
/// it neither tells the application nor listens again, and "never hears anything again".
/// `client.subscriptions.on_abrupt_end = "keep-flag"`; read as condition 4 (the application was
/// never told), not as `conditions 1-4 held`. Trace: `traces/field/go-sdk-1229/`.
#[test]
fn go_sdk_1229_a_kept_subscription_flag_hears_nothing_after_an_idle_cut() {
    let s = scenario(
        "stateless-2026",
        "py-sdk",
        &[
            ("client.subscriptions.on_abrupt_end", "keep-flag"),
            ("fault.partition", "none"),
            ("server.keepalive", "none"),
            ("app.notifications", "90s,count=3"),
            ("lb.idle_timeout", "60s"),
            ("run.reproduces", "https://github.com/modelcontextprotocol/go-sdk/issues/1229"),
        ],
    );
    for seed in [0, 1, 2] {
        let out = run_ok(&s, seed);
        let replay = replay(&s, seed);
        assert!(violated(&out).contains("no-silent-notification-loss"), "{replay}");
        let steps = &out.trace.steps;
        assert_eq!(steps.iter().filter(|st| matches!(st.kind, StepKind::ListenOpen { .. })).count(), 1, "{replay}");
        assert!(!steps.iter().any(|st| matches!(st.kind, StepKind::AppChange { .. })), "{replay}");
        let i = out.violations.iter().position(|v| v.invariant.name() == "no-silent-notification-loss");
        let why = i.and_then(|i| out.explained_by.get(i));
        assert_eq!(why, Some(&vec![Condition::ByClass]), "{replay}");
    }
}
