//! Random input sequences through the madsim-free harness (`mcpsim_model::testing::Pair`).
//!
//! Properties, for every pair of listed profiles and every sequence of calls, timer steps at
//! random times, connection resets, session deletes, notifications and process restarts:
//!
//! - no machine panics and the harness stays bounded (every pump settles);
//! - a timer that fires is consumed: right after `handle_timeout(now)` (with `now` at or past
//!   `poll_timeout()`), the machine's `poll_timeout()` is later than `now`, or `None`
//!   (`HarnessError::StuckTimer` otherwise);
//! - connections come in pairs: each is opened once and ended once (after a final shutdown),
//!   and no machine asks twice to end the same connection.
//!
//! 64 cases by default; `PROPTEST_CASES=n` runs `n`.

use mcpsim_model::config::ToolSpec;
use mcpsim_model::ids::ConnId;
use mcpsim_model::profiles::{CLIENT_NAMES, SERVER_NAMES};
use mcpsim_model::testing::{HarnessError, Pair};
use proptest::prelude::*;
use std::time::Duration;

const TOOL: &str = "pay";

/// One thing that happens to the pair.
#[derive(Clone, Debug)]
enum Action {
    /// The application calls the tool under a small key (keys repeat on purpose).
    Call { key: u32, idempotent: bool },
    /// Time passes: every timer due within this many milliseconds fires.
    Advance { ms: u64 },
    /// The network resets the n-th open connection (modulo how many are open).
    Reset { nth: usize },
    /// The server process crashes and restarts.
    RestartServer,
    /// The client process crashes and restarts from what it persisted.
    RestartClient,
    /// The application deletes its session.
    Delete,
    /// The server notifies every session.
    Notify,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        3 => (1u32..4, any::<bool>()).prop_map(|(key, idempotent)| Action::Call { key, idempotent }),
        4 => (0u64..200_000).prop_map(|ms| Action::Advance { ms }),
        2 => (0usize..8).prop_map(|nth| Action::Reset { nth }),
        1 => Just(Action::RestartServer),
        1 => Just(Action::RestartClient),
        1 => Just(Action::Delete),
        1 => Just(Action::Notify),
    ]
}

/// A pair of profiles, a tool and a load balancer.
#[derive(Clone, Debug)]
struct Setup {
    client: &'static str,
    server: &'static str,
    tool: ToolSpec,
    lb_idle: Option<Duration>,
}

fn setup() -> impl Strategy<Value = Setup> {
    let tool =
        (0u64..400, prop::option::of(0u64..30_000), any::<bool>()).prop_map(|(secs, interval, idempotent)| ToolSpec {
            name: TOOL.into(),
            duration: Duration::from_secs(secs),
            event_interval: interval.map(Duration::from_millis),
            idempotent,
            ..ToolSpec::default()
        });
    (
        prop::sample::select(CLIENT_NAMES),
        prop::sample::select(SERVER_NAMES),
        tool,
        prop::option::of((1u64..120).prop_map(Duration::from_secs)),
    )
        .prop_map(|(client, server, tool, lb_idle)| Setup { client, server, tool, lb_idle })
}

fn apply(pair: &mut Pair, action: &Action) -> Result<(), HarnessError> {
    match *action {
        Action::Call { key, idempotent } => pair.call(key, TOOL, idempotent),
        Action::Advance { ms } => pair.advance_to(pair.now() + Duration::from_millis(ms)),
        Action::Reset { nth } => {
            let open = pair.open_connections();
            match open.len() {
                0 => Ok(()),
                n => pair.reset(open[nth % n]).map(|_| ()),
            }
        }
        Action::RestartServer => pair.restart_server(),
        Action::RestartClient => pair.restart_client(),
        Action::Delete => pair.delete_session(),
        Action::Notify => pair.notify_all(),
    }
}

/// Runs the sequence, lets an hour pass, then resets whatever is still open.
fn run(setup: &Setup, actions: &[Action]) -> Result<Pair, HarnessError> {
    let mut pair = Pair::new(setup.client, setup.server, setup.tool.clone(), setup.lb_idle)?;
    for action in actions {
        apply(&mut pair, action)?;
    }
    pair.advance_to(pair.now() + Duration::from_secs(3600))?;
    pair.shutdown()?;
    Ok(pair)
}

/// Connections that were not opened exactly once, ended exactly once, and asked to end at most
/// once by each machine.
fn unpaired(pair: &Pair) -> Vec<(ConnId, String)> {
    pair.connections()
        .iter()
        .filter(|(_, r)| r.opened != 1 || r.ended != 1 || r.client_aborts > 1 || r.server_closes > 1 || r.lb_cuts > 1)
        .map(|(conn, r)| (*conn, format!("{r:?}")))
        .collect()
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn random_inputs_never_panic_consume_their_timers_and_pair_their_connections(
        setup in setup(),
        actions in prop::collection::vec(action(), 0..40),
    ) {
        let pair = run(&setup, &actions);
        let pair = match pair {
            Ok(pair) => pair,
            Err(error) => return Err(TestCaseError::fail(format!("{error}"))),
        };
        let unpaired = unpaired(&pair);
        prop_assert!(unpaired.is_empty(), "connections not opened and closed in pairs: {unpaired:?}");
        prop_assert!(pair.open_connections().is_empty());
    }
}
