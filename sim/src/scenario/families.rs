//! Scenario families: the workload, tools and faults of each named scenario, applied over the
//! profiles a command names. Each is a TOML file, `sim/scenarios/NAME.toml`, embedded here and
//! read by `family_files.rs` (which also reads a user's own, `--scenario ./my.toml`).

/// Scenario family names, in the order `mcpsim profiles` lists them.
pub const SCENARIO_NAMES: &[&str] = &[
    "long-tool",
    "chatty-tool",
    "standalone-notify",
    "expire-during-tool",
    "server-restart",
    "delete-during-tool",
    "two-sessions-same-request-id",
    "resume-after-completion",
];

/// The Tasks extension's families (issue 21), built in but kept out of [`SCENARIO_NAMES`], which
/// the compatibility matrix runs in full: the SDK profiles make no task until a family opts the
/// tools in, so these would add columns of legacy verdicts.
pub const TASK_SCENARIO_NAMES: &[&str] = &["task-long-tool", "task-ttl-expiry", "lost-task-reply", "tasks-no-routing"];

macro_rules! builtin {
    ($name:literal) => {
        ($name, include_str!(concat!("../../scenarios/", $name, ".toml")))
    };
}

/// The built-in family files (`sim/scenarios/NAME.toml`), embedded at build time, in
/// [`SCENARIO_NAMES`] order, then [`TASK_SCENARIO_NAMES`].
const FILES: &[(&str, &str)] = &[
    builtin!("long-tool"),
    builtin!("chatty-tool"),
    builtin!("standalone-notify"),
    builtin!("expire-during-tool"),
    builtin!("server-restart"),
    builtin!("delete-during-tool"),
    builtin!("two-sessions-same-request-id"),
    builtin!("resume-after-completion"),
    builtin!("task-long-tool"),
    builtin!("task-ttl-expiry"),
    builtin!("lost-task-reply"),
    builtin!("tasks-no-routing"),
];

/// The text of a built-in family file.
pub fn builtin_text(name: &str) -> Option<&'static str> {
    FILES.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

/// Where a built-in family file lives in the repository (for messages).
pub fn builtin_origin(name: &str) -> String {
    format!("sim/scenarios/{name}.toml")
}

// The families as they were written in Rust before they became files: the test below checks each
// file builds exactly the scenario its function did, so no trace changes a byte.
#[cfg(test)]
pub(super) mod rust_built {
    use crate::scenario::faults::{parse_partition, Fault, FaultPlan, PlannedFault};
    use crate::scenario::Scenario;
    use crate::scenario::{CallSpec, DeleteSpec};
    use mcpsim_model::config::ToolSpec;
    use std::time::Duration;

    pub fn apply(name: &str, base: Scenario) -> Option<Scenario> {
        Some(match name {
            "long-tool" => long_tool(base),
            "chatty-tool" => chatty_tool(base),
            "standalone-notify" => standalone_notify(base),
            "expire-during-tool" => expire_during_tool(base),
            "server-restart" => server_restart(base),
            "delete-during-tool" => delete_during_tool(base),
            "two-sessions-same-request-id" => two_sessions_same_request_id(base),
            "resume-after-completion" => resume_after_completion(base),
            _ => return None,
        })
    }

    fn tool(name: &str, secs: u64, event_interval: Option<Duration>, idempotent: bool) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            duration: Duration::from_secs(secs),
            event_interval,
            idempotent,
            ..ToolSpec::default()
        }
    }

    fn call_at(secs: u64, key: u32, tool: &str, client: u32) -> CallSpec {
        CallSpec { client, ..CallSpec::new(Duration::from_secs(secs), key, tool) }
    }

    fn partition(text: &str) -> FaultPlan {
        FaultPlan::new(vec![parse_partition(text).expect("a constant, valid partition")])
    }

    /// The first incident: a silent non-idempotent payment outlives the load balancer's idle timeout.
    /// No keep-alives: the server's priming event gives a resuming client its first `Last-Event-ID`.
    fn long_tool(mut s: Scenario) -> Scenario {
        s.tools = vec![tool("pay", 300, None, false)];
        s.calls = vec![call_at(1, 0, "pay", 0)];
        s.server.keepalive = None;
        s
    }

    /// The second incident: a chatty tool outlives a 4-minute cut. The buffer is the server
    /// profile's own: 100 events per stream for `reference` and `silent-head` (the incident's), the
    /// real SDKs' retention for theirs (`--set server.retention=100` forces the incident's).
    fn chatty_tool(mut s: Scenario) -> Scenario {
        s.tools = vec![tool("crawl", 420, Some(Duration::from_secs(1)), false)];
        s.calls = vec![call_at(1, 0, "crawl", 0)];
        s.faults = partition("60s..300s");
        s
    }

    /// Notifications on the standalone GET stream while it is cut: the GET stream has no call, so
    /// only its own resumption can deliver what was missed.
    fn standalone_notify(mut s: Scenario) -> Scenario {
        s.client.open_standalone_stream = true;
        s.tools = vec![tool("lookup", 5, None, true)];
        s.calls = vec![call_at(1, 0, "lookup", 0)];
        s.notify_interval = Some(Duration::from_secs(2));
        s.faults = partition("60s..180s");
        s
    }

    /// The session's idle TTL is shorter than a tool whose POST stream was cut: which activity holds
    /// a session alive decides whether the result survives.
    fn expire_during_tool(mut s: Scenario) -> Scenario {
        s.tools = vec![tool("report", 300, Some(Duration::from_secs(10)), false)];
        s.calls = vec![call_at(1, 0, "report", 0)];
        s.server.idle_ttl = Some(Duration::from_secs(120));
        s.faults = partition("30s..200s");
        s
    }

    /// The server process restarts in the middle of a tool: sessions, logs and the tool are lost.
    fn server_restart(mut s: Scenario) -> Scenario {
        s.tools = vec![tool("pay", 300, Some(Duration::from_secs(20)), false)];
        s.calls = vec![call_at(1, 0, "pay", 0)];
        s.server.keepalive = s.server.keepalive.or(Some(Duration::from_secs(15)));
        s.faults = FaultPlan::new(vec![PlannedFault { at: Duration::from_secs(120), fault: Fault::ServerRestart }]);
        s
    }

    /// The application deletes its session while a payment runs: the servers disagree on whether the
    /// tool runs on.
    fn delete_during_tool(mut s: Scenario) -> Scenario {
        s.tools = vec![tool("pay", 300, Some(Duration::from_secs(20)), false)];
        s.calls = vec![call_at(1, 0, "pay", 0)];
        s.server.keepalive = s.server.keepalive.or(Some(Duration::from_secs(15)));
        s.deletes = vec![DeleteSpec { at: Duration::from_secs(120), client: 0, by: Default::default() }];
        s
    }

    /// Two clients, each in its own session, call a tool at the same moment: each numbers its
    /// requests from 1, so both calls carry JSON-RPC id 2. A store keyed by request id alone mixes
    /// their streams.
    fn two_sessions_same_request_id(mut s: Scenario) -> Scenario {
        s.clients = 2;
        s.tools = vec![tool("crawl", 60, Some(Duration::from_secs(1)), true)];
        s.calls = vec![call_at(1, 0, "crawl", 0), call_at(1, 1, "crawl", 1)];
        s.faults = partition("20s..40s");
        s
    }

    /// The client comes back after its tool finished: only a server that keeps the finished
    /// stream's events can hand over the result.
    fn resume_after_completion(mut s: Scenario) -> Scenario {
        s.tools = vec![tool("build", 60, Some(Duration::from_secs(1)), false)];
        s.calls = vec![call_at(1, 0, "build", 0)];
        s.faults = partition("30s..180s");
        s
    }
}
