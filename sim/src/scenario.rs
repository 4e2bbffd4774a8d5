//! Scenarios: a named family of workload, tools, load balancer and faults, with the client and
//! server profiles it runs, and every parameter a user may change with `--set key=value`.

use crate::error::SimError;
use crate::faults::{parse_partition, parse_times, Fault, FaultPlan, PlannedFault};
use mcpsim_model::config::{ClientPolicy, LbConfig, Persistence, Retention, ServerPolicy, ToolSpec, Unhonourable};
use mcpsim_model::ids::CallKey;
use mcpsim_model::profiles;
use mcpsim_model::time::{format_duration, parse_duration, serde_duration};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One tool call the application makes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallSpec {
    /// When the application issues it.
    #[serde(with = "serde_duration")]
    pub at: Duration,
    pub call: CallKey,
    pub tool: String,
}

/// Network parameters of the simulated links.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetParams {
    /// One-way latency of each message is drawn from `latency_min..latency_max`.
    #[serde(with = "serde_duration")]
    pub latency_min: Duration,
    #[serde(with = "serde_duration")]
    pub latency_max: Duration,
}

/// Everything one run needs besides its seed. Written whole into the trace header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// The family name (`long-tool`, `chatty-tool`, ...).
    pub name: String,
    pub client: ClientPolicy,
    pub server: ServerPolicy,
    pub lb: LbConfig,
    /// Tools the server offers. Durations are nominal: each run draws the actual one within
    /// `tool_jitter` from the seed.
    pub tools: Vec<ToolSpec>,
    /// Relative jitter of tool durations (0.1 = up to ±10%).
    pub tool_jitter: f64,
    pub calls: Vec<CallSpec>,
    /// Server notifications on every session's standalone stream at this interval.
    #[serde(with = "mcpsim_model::time::serde_opt_duration")]
    pub notify_interval: Option<Duration>,
    pub faults: FaultPlan,
    pub net: NetParams,
    /// After the faults heal and the last tool is due, every call must resolve within this.
    #[serde(with = "serde_duration")]
    pub liveness_grace: Duration,
    /// The `--set` overrides this scenario was built with, in order (for the replay command).
    pub overrides: Vec<(String, String)>,
}

/// Scenario family names, in the order `mcpsim profiles` lists them.
pub const SCENARIO_NAMES: &[&str] = &["long-tool", "chatty-tool"];

/// One line on each scenario family.
pub fn describe(name: &str) -> &'static str {
    match name {
        "long-tool" => "first incident: a 5-minute silent payment tool behind a 60 s load-balancer idle timeout",
        "chatty-tool" => "second incident: a tool emitting 1 event/s while the client is cut off for 4 minutes",
        _ => "",
    }
}

impl Scenario {
    /// The named family with the named profiles, before any `--set`.
    pub fn build(name: &str, client: &str, server: &str) -> Result<Scenario, SimError> {
        let client_policy = profiles::client(client).ok_or_else(|| SimError::UnknownProfile {
            role: "client",
            name: client.to_string(),
            known: profiles::CLIENT_NAMES.join(", "),
        })?;
        let server_policy = profiles::server(server).ok_or_else(|| SimError::UnknownProfile {
            role: "server",
            name: server.to_string(),
            known: profiles::SERVER_NAMES.join(", "),
        })?;
        let base = Scenario {
            name: name.to_string(),
            client: client_policy,
            server: server_policy,
            lb: LbConfig { idle_timeout: Some(Duration::from_secs(60)) },
            tools: vec![],
            tool_jitter: 0.1,
            calls: vec![],
            notify_interval: None,
            faults: FaultPlan::default(),
            net: NetParams { latency_min: Duration::from_millis(1), latency_max: Duration::from_millis(10) },
            liveness_grace: Duration::from_secs(300),
            overrides: vec![],
        };
        match name {
            "long-tool" => Ok(long_tool(base)),
            "chatty-tool" => Ok(chatty_tool(base)),
            _ => Err(SimError::UnknownScenario { name: name.to_string(), known: SCENARIO_NAMES.join(", ") }),
        }
    }

    /// Applies `key=value` overrides in order, recording them.
    pub fn apply_overrides(&mut self, overrides: &[(String, String)]) -> Result<(), SimError> {
        for (key, value) in overrides {
            let setting = setting(key)?;
            (setting.apply)(self, value).map_err(|problem| SimError::BadValue {
                key: key.clone(),
                value: value.clone(),
                problem,
            })?;
            self.overrides.push((key.clone(), value.clone()));
        }
        Ok(())
    }

    /// The tool of that name.
    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The one tool most scenarios have, for the `tool.*` keys.
    fn main_tool(&mut self) -> Result<&mut ToolSpec, String> {
        self.tools.first_mut().ok_or_else(|| "this scenario has no tool".to_string())
    }

    /// The latest time a call's tool can finish, with jitter at its worst.
    pub fn last_tool_due(&self) -> Duration {
        self.calls
            .iter()
            .filter_map(|c| self.tool(&c.tool).map(|t| c.at + t.duration.mul_f64(1.0 + self.tool_jitter)))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    /// The liveness deadline: every call must have resolved by then.
    pub fn liveness_deadline(&self) -> Duration {
        self.faults.heal_time().max(self.last_tool_due()) + self.liveness_grace
    }

    /// A run never lasts longer than this in simulated time.
    pub fn time_limit(&self) -> Duration {
        self.liveness_deadline() + Duration::from_secs(60)
    }

    /// The command-line arguments that rebuild this scenario (`--client … --set …`).
    pub fn cli_args(&self) -> String {
        let mut args = format!("--client {} --server {} --scenario {}", self.client.name, self.server.name, self.name);
        for (k, v) in &self.overrides {
            args.push_str(&format!(" --set {k}={v}"));
        }
        args
    }
}

fn long_tool(mut s: Scenario) -> Scenario {
    s.tools = vec![ToolSpec {
        name: "pay".into(),
        duration: Duration::from_secs(300),
        event_interval: None,
        idempotent: false,
    }];
    s.calls = vec![CallSpec { at: Duration::from_secs(1), call: CallKey(0), tool: "pay".into() }];
    s.server.keepalive = None;
    s
}

fn chatty_tool(mut s: Scenario) -> Scenario {
    s.tools = vec![ToolSpec {
        name: "crawl".into(),
        duration: Duration::from_secs(420),
        event_interval: Some(Duration::from_secs(1)),
        idempotent: false,
    }];
    s.calls = vec![CallSpec { at: Duration::from_secs(1), call: CallKey(0), tool: "crawl".into() }];
    s.server.retention = Retention::last(100);
    s.faults = FaultPlan::new(vec![parse_partition("60s..300s").expect("a constant, valid partition")]);
    s
}

// ---------------------------------------------------------------------------------------------
// Settable keys
// ---------------------------------------------------------------------------------------------

/// A parameter `--set` can change.
pub struct Setting {
    pub key: &'static str,
    /// What it means and how values are written.
    pub help: &'static str,
    pub apply: fn(&mut Scenario, &str) -> Result<(), String>,
    /// The current value, written the way `apply` reads it.
    pub show: fn(&Scenario) -> String,
}

/// The setting of that key.
pub fn setting(key: &str) -> Result<&'static Setting, SimError> {
    SETTINGS.iter().find(|s| s.key == key).ok_or_else(|| SimError::UnknownKey {
        key: key.to_string(),
        known: SETTINGS.iter().map(|s| s.key).collect::<Vec<_>>().join(", "),
    })
}

/// Splits `key=value`.
pub fn parse_override(text: &str) -> Result<(String, String), SimError> {
    let (k, v) = text.split_once('=').ok_or_else(|| SimError::BadOverride(text.to_string()))?;
    setting(k.trim())?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

fn opt_duration(v: &str) -> Result<Option<Duration>, String> {
    if v == "none" {
        Ok(None)
    } else {
        parse_duration(v).map(Some)
    }
}

fn show_opt_duration(d: Option<Duration>) -> String {
    d.map(format_duration).unwrap_or_else(|| "none".to_string())
}

fn positive_f64(v: &str) -> Result<f64, String> {
    let x: f64 = v.parse().map_err(|_| format!("{v:?} is not a number"))?;
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(format!("{v:?} must be a positive number"))
    }
}

fn parse_bool(v: &str) -> Result<bool, String> {
    match v {
        "true" | "yes" | "on" => Ok(true),
        "false" | "no" | "off" => Ok(false),
        _ => Err(format!("{v:?} is not true or false")),
    }
}

fn replace_times(s: &mut Scenario, kind: &str, v: &str, make: fn() -> Fault) -> Result<(), String> {
    s.faults.remove_kind(kind);
    if v != "none" {
        for at in parse_times(v)? {
            s.faults.push(PlannedFault { at, fault: make() });
        }
    }
    Ok(())
}

fn show_times(s: &Scenario, kind: &str) -> String {
    let times: Vec<String> =
        s.faults.faults().iter().filter(|f| f.fault.kind() == kind).map(|f| format_duration(f.at)).collect();
    if times.is_empty() {
        "none".into()
    } else {
        times.join(",")
    }
}

fn unhonourable(v: &str) -> Result<Unhonourable, String> {
    Ok(match v {
        "410" | "gone" => Unhonourable::Gone410,
        "409" | "conflict" => Unhonourable::Conflict409,
        "silent-head" => Unhonourable::SilentHead,
        "from-oldest" => Unhonourable::FromOldest,
        "empty-closed" => Unhonourable::EmptyClosed,
        "empty-open" => Unhonourable::EmptyOpen,
        _ => return Err(format!("{v:?} is not one of 410, 409, silent-head, from-oldest, empty-closed, empty-open")),
    })
}

fn show_unhonourable(u: Unhonourable) -> String {
    match u {
        Unhonourable::Gone410 => "410",
        Unhonourable::Conflict409 => "409",
        Unhonourable::SilentHead => "silent-head",
        Unhonourable::FromOldest => "from-oldest",
        Unhonourable::EmptyClosed => "empty-closed",
        Unhonourable::EmptyOpen => "empty-open",
    }
    .to_string()
}

/// Every settable key. One table: `--set`, `mcpsim profiles` and the sweeps all read it.
pub const SETTINGS: &[Setting] = &[
    Setting {
        key: "lb.idle_timeout",
        help: "load balancer closes a connection silent this long (duration or none)",
        apply: |s, v| {
            s.lb.idle_timeout = opt_duration(v)?;
            Ok(())
        },
        show: |s| show_opt_duration(s.lb.idle_timeout),
    },
    Setting {
        key: "server.retention",
        help: "events kept per stream (a count or unbounded)",
        apply: |s, v| {
            s.server.retention.max_events = match v {
                "unbounded" | "none" => None,
                n => Some(n.parse().map_err(|_| format!("{n:?} is not a count or unbounded"))?),
            };
            Ok(())
        },
        show: |s| s.server.retention.max_events.map(|n| n.to_string()).unwrap_or_else(|| "unbounded".into()),
    },
    Setting {
        key: "server.retention_window",
        help: "events older than this are evicted (duration or none)",
        apply: |s, v| {
            s.server.retention.window = opt_duration(v)?;
            Ok(())
        },
        show: |s| show_opt_duration(s.server.retention.window),
    },
    Setting {
        key: "server.unhonourable",
        help: "answer to an evicted or unknown Last-Event-ID: 410, 409, silent-head, from-oldest, empty-closed, empty-open",
        apply: |s, v| {
            let u = unhonourable(v)?;
            s.server.evicted_id = u;
            s.server.unknown_id = u;
            Ok(())
        },
        show: |s| show_unhonourable(s.server.evicted_id),
    },
    Setting {
        key: "server.idle_ttl",
        help: "server expires an idle session after this (duration or none)",
        apply: |s, v| {
            s.server.idle_ttl = opt_duration(v)?;
            Ok(())
        },
        show: |s| show_opt_duration(s.server.idle_ttl),
    },
    Setting {
        key: "server.keepalive",
        help: "interval of SSE keep-alive comments (duration or none)",
        apply: |s, v| {
            s.server.keepalive = opt_duration(v)?;
            Ok(())
        },
        show: |s| show_opt_duration(s.server.keepalive),
    },
    Setting {
        key: "server.retry",
        help: "retry: field sent with priming events (duration or none)",
        apply: |s, v| {
            s.server.retry_ms = opt_duration(v)?.map(|d| d.as_millis() as u64);
            Ok(())
        },
        show: |s| show_opt_duration(s.server.retry_ms.map(Duration::from_millis)),
    },
    Setting {
        key: "server.idempotency_keys",
        help: "server honours idempotency keys across sessions (true/false; a mitigation)",
        apply: |s, v| {
            s.server.honour_idempotency_keys = parse_bool(v)?;
            Ok(())
        },
        show: |s| s.server.honour_idempotency_keys.to_string(),
    },
    Setting {
        key: "tool.duration",
        help: "how long the scenario's tool runs (duration)",
        apply: |s, v| {
            s.main_tool()?.duration = parse_duration(v)?;
            Ok(())
        },
        show: |s| s.tools.first().map(|t| format_duration(t.duration)).unwrap_or_default(),
    },
    Setting {
        key: "tool.event_interval",
        help: "interval of the tool's progress events (duration or none)",
        apply: |s, v| {
            s.main_tool()?.event_interval = opt_duration(v)?;
            Ok(())
        },
        show: |s| show_opt_duration(s.tools.first().and_then(|t| t.event_interval)),
    },
    Setting {
        key: "tool.idempotent",
        help: "whether running the tool twice is harmless (true/false)",
        apply: |s, v| {
            s.main_tool()?.idempotent = parse_bool(v)?;
            Ok(())
        },
        show: |s| s.tools.first().map(|t| t.idempotent.to_string()).unwrap_or_default(),
    },
    Setting {
        key: "tool.jitter",
        help: "relative jitter of tool durations drawn from the seed (0.1 = ±10%)",
        apply: |s, v| {
            let j: f64 = v.parse().map_err(|_| format!("{v:?} is not a number"))?;
            if !(0.0..1.0).contains(&j) {
                return Err("jitter must be in [0, 1)".into());
            }
            s.tool_jitter = j;
            Ok(())
        },
        show: |s| s.tool_jitter.to_string(),
    },
    Setting {
        key: "fault.partition",
        help: "client cut off from the load balancer over START..END (e.g. 60s..5m, or none)",
        apply: |s, v| {
            s.faults.remove_kind("partition");
            if v != "none" {
                s.faults.push(parse_partition(v)?);
            }
            Ok(())
        },
        show: |s| {
            let parts: Vec<String> = s
                .faults
                .faults()
                .iter()
                .filter(|f| f.fault.kind() == "partition")
                .map(|f| format!("{}..{}", format_duration(f.at), format_duration(f.at + f.fault.duration())))
                .collect();
            if parts.is_empty() {
                "none".into()
            } else {
                parts.join(",")
            }
        },
    },
    Setting {
        key: "fault.reset",
        help: "reset every client connection at these times (e.g. 30s,2m, or none)",
        apply: |s, v| replace_times(s, "reset", v, || Fault::Reset),
        show: |s| show_times(s, "reset"),
    },
    Setting {
        key: "fault.server_restart",
        help: "restart the server process at these times (or none)",
        apply: |s, v| replace_times(s, "server-restart", v, || Fault::ServerRestart),
        show: |s| show_times(s, "server-restart"),
    },
    Setting {
        key: "fault.client_restart",
        help: "restart the client process at these times (or none)",
        apply: |s, v| replace_times(s, "client-restart", v, || Fault::ClientRestart),
        show: |s| show_times(s, "client-restart"),
    },
    Setting {
        key: "client.backoff_initial",
        help: "first reconnect delay (duration)",
        apply: |s, v| {
            s.client.reconnect.initial = parse_duration(v)?;
            Ok(())
        },
        show: |s| format_duration(s.client.reconnect.initial),
    },
    Setting {
        key: "client.backoff_factor",
        help: "growth factor of the reconnect delay",
        apply: |s, v| {
            s.client.reconnect.factor = positive_f64(v)?;
            Ok(())
        },
        show: |s| s.client.reconnect.factor.to_string(),
    },
    Setting {
        key: "client.backoff_max",
        help: "cap of the reconnect delay (duration)",
        apply: |s, v| {
            s.client.reconnect.max = parse_duration(v)?;
            Ok(())
        },
        show: |s| format_duration(s.client.reconnect.max),
    },
    Setting {
        key: "client.max_attempts",
        help: "consecutive failed reconnects before giving up (a count or unlimited)",
        apply: |s, v| {
            s.client.reconnect.max_attempts = match v {
                "unlimited" | "none" => None,
                n => Some(n.parse().map_err(|_| format!("{n:?} is not a count or unlimited"))?),
            };
            Ok(())
        },
        show: |s| s.client.reconnect.max_attempts.map(|n| n.to_string()).unwrap_or_else(|| "unlimited".into()),
    },
    Setting {
        key: "client.persistence",
        help: "where the client keeps session id and last event ids: durable or volatile",
        apply: |s, v| {
            s.client.persistence = match v {
                "durable" => Persistence::Durable,
                "volatile" => Persistence::Volatile,
                _ => return Err(format!("{v:?} is not durable or volatile")),
            };
            Ok(())
        },
        show: |s| match s.client.persistence {
            Persistence::Durable => "durable".into(),
            Persistence::Volatile => "volatile".into(),
        },
    },
    Setting {
        key: "client.request_timeout",
        help: "client gives up on a call after this and cancels it (duration or none)",
        apply: |s, v| {
            s.client.request_timeout = opt_duration(v)?;
            Ok(())
        },
        show: |s| show_opt_duration(s.client.request_timeout),
    },
    Setting {
        key: "client.idempotency_keys",
        help: "client sends an idempotency key with every tool call (true/false; a mitigation)",
        apply: |s, v| {
            s.client.send_idempotency_keys = parse_bool(v)?;
            Ok(())
        },
        show: |s| s.client.send_idempotency_keys.to_string(),
    },
    Setting {
        key: "net.latency",
        help: "one-way message latency range MIN..MAX (e.g. 1ms..10ms)",
        apply: |s, v| {
            let (a, b) = v.split_once("..").ok_or_else(|| format!("{v:?} is not MIN..MAX"))?;
            let (a, b) = (parse_duration(a)?, parse_duration(b)?);
            if b < a {
                return Err(format!("{v:?}: MAX is below MIN"));
            }
            s.net = NetParams { latency_min: a, latency_max: b };
            Ok(())
        },
        show: |s| format!("{}..{}", format_duration(s.net.latency_min), format_duration(s.net.latency_max)),
    },
    Setting {
        key: "run.liveness_grace",
        help: "after the faults heal and the last tool is due, calls must resolve within this (duration)",
        apply: |s, v| {
            s.liveness_grace = parse_duration(v)?;
            Ok(())
        },
        show: |s| format_duration(s.liveness_grace),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_builds_with_every_profile() {
        for name in SCENARIO_NAMES {
            assert!(!describe(name).is_empty());
            for c in profiles::CLIENT_NAMES {
                for s in profiles::SERVER_NAMES {
                    let sc = Scenario::build(name, c, s).unwrap();
                    assert!(!sc.calls.is_empty() && !sc.tools.is_empty());
                    assert!(sc.liveness_deadline() > sc.last_tool_due());
                }
            }
        }
    }

    #[test]
    fn unknown_names_are_errors_that_list_the_known_ones() {
        let e = Scenario::build("nope", "reference", "reference").unwrap_err().to_string();
        assert!(e.contains("long-tool"), "{e}");
        let e = Scenario::build("long-tool", "nope", "reference").unwrap_err().to_string();
        assert!(e.contains("naive"), "{e}");
    }

    #[test]
    fn every_setting_reads_back_what_it_shows() {
        let mut s = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        for setting in SETTINGS {
            let shown = (setting.show)(&s);
            (setting.apply)(&mut s, &shown).unwrap_or_else(|e| panic!("{}={shown}: {e}", setting.key));
            assert_eq!((setting.show)(&s), shown, "{}", setting.key);
        }
    }

    #[test]
    fn overrides_change_the_scenario_and_are_recorded() {
        let mut s = Scenario::build("long-tool", "reference", "reference").unwrap();
        let o =
            vec![parse_override("lb.idle_timeout=125s").unwrap(), parse_override("fault.partition=1m..2m").unwrap()];
        s.apply_overrides(&o).unwrap();
        assert_eq!(s.lb.idle_timeout, Some(Duration::from_secs(125)));
        assert_eq!(s.faults.heal_time(), Duration::from_secs(120));
        assert!(s.cli_args().ends_with("--set lb.idle_timeout=125s --set fault.partition=1m..2m"));
    }

    #[test]
    fn bad_overrides_name_the_problem() {
        assert!(matches!(parse_override("nope=1"), Err(SimError::UnknownKey { .. })));
        assert!(matches!(parse_override("lb.idle_timeout"), Err(SimError::BadOverride(_))));
        let mut s = Scenario::build("long-tool", "reference", "reference").unwrap();
        let err = s.apply_overrides(&[("lb.idle_timeout".into(), "soon".into())]).unwrap_err();
        assert!(err.to_string().contains("lb.idle_timeout"), "{err}");
        assert!(s.apply_overrides(&[("client.backoff_factor".into(), "0".into())]).is_err());
    }
}
