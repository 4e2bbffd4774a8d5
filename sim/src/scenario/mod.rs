//! Scenarios: a named family of workload, tools, load balancer and faults, with the client and
//! server profiles it runs, and every parameter a user may change with `--set key=value`.
//!
//! The folder reads top-down, each file using only those above it:
//!
//! - [`files`]: the bytes of a file a command names (a profile, a family, a deployment), capped.
//! - `layers`: a profile as its `extends` chain of layers, resolved and validated, a problem
//!   located in the file that set it.
//! - [`faults`]: the fault plan; `script`: a call script and operator deletes as one `--set`
//!   value (`app.calls`, `app.operator_deletes`).
//! - [`settings`]: the settable keys (one table: each a field's path, an alias of paths, or a
//!   value syntax of its own) and the one validation of a scenario (`problems`).
//! - `profile_files`: profiles named on the command line, built-in or TOML files, by the
//!   settings' rules; [`families`]: the built-in family files' names and texts;
//!   [`family_files`]: a family file read and applied through the settings.
//! - this file: [`Scenario`], built from a family and profiles, then `--set` overrides.

pub mod families;
pub mod family_files;
pub mod faults;
pub mod files;
pub(crate) mod layers;
pub mod notifications;
pub(crate) mod profile_files;
pub(crate) mod script;
pub mod settings;

pub use families::{SCENARIO_NAMES, TASK_SCENARIO_NAMES};
pub use family_files::describe;
pub use settings::{fault_setting, keeping, parse_override, setting, Setting, SETTINGS};

use crate::error::SimError;
use crate::scenario::faults::FaultPlan;
use mcpsim_model::config::{ClientPolicy, LbConfig, ServerPolicy, ToolSpec};
use mcpsim_model::ids::CallKey;
use mcpsim_model::time::serde_duration;
use mcpsim_model::trace::DEFAULT_MAX_RECONNECTS_PER_HOUR;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// One tool call the application makes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallSpec {
    /// When the application issues it (with `after_idle`: not before this).
    #[serde(with = "serde_duration")]
    pub at: Duration,
    /// The call's key: the same on every re-send, so the server's ledger can tell a duplicate from
    /// a second call.
    pub call: CallKey,
    /// The tool it calls (one of `Scenario::tools`).
    pub tool: String,
    /// Which logical client issues it (0-based; see `Scenario::clients`).
    #[serde(default)]
    pub client: u32,
    /// Issue it only this long after the same client's previous call (in the scenario's order)
    /// resolved for good: an idle gap in which the session may expire between calls.
    #[serde(default, with = "mcpsim_model::time::serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub after_idle: Option<Duration>,
    /// What the application does when the call ends in an error or an unknown outcome.
    #[serde(default, skip_serializing_if = "is_default")]
    pub on_error: OnError,
    /// The most re-issues `on_error` may make of this call.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub max_reissues: u32,
}

impl CallSpec {
    /// A call at `at` of `tool` by client 0, keyed `call`, with the default application
    /// behaviour (give up on an error).
    pub fn new(at: Duration, call: u32, tool: &str) -> CallSpec {
        CallSpec {
            at,
            call: CallKey(call),
            tool: tool.to_string(),
            client: 0,
            after_idle: None,
            on_error: OnError::GiveUp,
            max_reissues: 1,
        }
    }
}

/// The application's behaviour after a call ends in an error or an unknown outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnError {
    /// Report it and move on.
    #[default]
    GiveUp,
    /// Send the same call (the same call key) again, through the session the client holds.
    Reissue,
    /// Start a new session (`initialize`), then send the same call again.
    ReinitializeReissue,
}

impl OnError {
    /// The spellings, in files and `--set`.
    pub const NAMES: [&'static str; 3] = ["give-up", "reissue", "reinitialize-reissue"];

    /// The value of a spelling.
    pub fn parse(text: &str) -> Result<OnError, String> {
        match text {
            "give-up" => Ok(OnError::GiveUp),
            "reissue" => Ok(OnError::Reissue),
            "reinitialize-reissue" => Ok(OnError::ReinitializeReissue),
            other => Err(format!("on_error {other:?}: one of {}", OnError::NAMES.join(", "))),
        }
    }

    /// Its spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OnError::GiveUp => "give-up",
            OnError::Reissue => "reissue",
            OnError::ReinitializeReissue => "reinitialize-reissue",
        }
    }
}

/// Who sends a scripted `DELETE`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeleteBy {
    /// The application, through its client: the client settles its calls and forgets the session.
    #[default]
    App,
    /// An operator, from outside the client (it knows the session id): the server ends the
    /// session, and the client learns of it only when its next request gets 404.
    Operator,
}

/// A session ends with `DELETE` at a time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeleteSpec {
    /// When the `DELETE` is sent.
    #[serde(with = "serde_duration")]
    pub at: Duration,
    /// Which logical client's session ends (0-based).
    #[serde(default)]
    pub client: u32,
    /// Who sends it.
    #[serde(default, skip_serializing_if = "is_default")]
    pub by: DeleteBy,
}

/// At a time, a client resumes a stream with a `Last-Event-ID` it was never given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BogusResume {
    /// When.
    #[serde(with = "serde_duration")]
    pub at: Duration,
    /// Which logical client (0-based).
    #[serde(default)]
    pub client: u32,
    /// The `Last-Event-ID` it sends.
    pub id: ResumeId,
}

/// The `Last-Event-ID` of a bogus resume: written out, or one the server really minted for
/// another client's session (`id = { client = 0, nth = 1 }` in a family file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResumeId {
    /// This id, as written.
    Given(String),
    /// The id of the `nth` event (from 1) with an id that logical client `client` received on
    /// the stream of one of its `tools/call` POSTs (a call's own stream), by the time of the resume (none
    /// yet: the resume is not made, and the trace says so).
    ReceivedBy {
        /// The client whose event's id is borrowed.
        client: u32,
        /// Which of its events with an id, counting from 1.
        nth: u32,
    },
}

impl From<&str> for ResumeId {
    fn from(id: &str) -> Self {
        ResumeId::Given(id.to_string())
    }
}

impl From<String> for ResumeId {
    fn from(id: String) -> Self {
        ResumeId::Given(id)
    }
}

impl PartialEq<&str> for ResumeId {
    fn eq(&self, other: &&str) -> bool {
        matches!(self, ResumeId::Given(id) if id == other)
    }
}

impl std::fmt::Display for ResumeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResumeId::Given(id) => write!(f, "{id}"),
            ResumeId::ReceivedBy { client, nth } => write!(f, "the id of client {client}'s event {nth}"),
        }
    }
}

/// From a time on, the next `count` resumes (`GET` with `Last-Event-ID`) of a client's call
/// streams are answered in front of the server, which never sees them: 200 `text/event-stream`,
/// no events, closed (as `mcpsim probe client`'s `empty-resume` tap answers them). A resume whose
/// id shows it is of the standalone stream (the server's id scheme says so) is passed on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmptyResumes {
    /// From when.
    #[serde(with = "serde_duration")]
    pub at: Duration,
    /// Which logical client's resumes (0-based).
    #[serde(default)]
    pub client: u32,
    /// How many of them.
    pub count: u32,
}

/// The most resumes one `[[empty_resumes]]` entry answers empty.
pub const MAX_EMPTY_RESUMES: u32 = 100;

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn one() -> u32 {
    1
}

fn default_max_reconnects() -> u32 {
    DEFAULT_MAX_RECONNECTS_PER_HOUR
}

fn is_default_max_reconnects(n: &u32) -> bool {
    *n == DEFAULT_MAX_RECONNECTS_PER_HOUR
}

/// The most re-issues one call's `on_error` may make.
pub const MAX_REISSUES: u32 = 10;

/// Network parameters of the simulated links.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetParams {
    /// One-way latency of each message is drawn from `latency_min..latency_max`.
    #[serde(with = "serde_duration")]
    pub latency_min: Duration,
    /// The upper end of the latency range.
    #[serde(with = "serde_duration")]
    pub latency_max: Duration,
}

/// Everything one run needs besides its seed. Written whole into the trace header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// The family name (`long-tool`, `chatty-tool`, ...).
    pub name: String,
    /// The client profile: reconnect, persistence and close rules.
    pub client: ClientPolicy,
    /// The server profile: sessions, event retention, keep-alives, replay.
    pub server: ServerPolicy,
    /// The load balancer between clients and server: affinity and idle timeout.
    pub lb: LbConfig,
    /// Tools the server offers. Durations are nominal: each run draws the actual one within
    /// `tool_jitter` from the seed.
    pub tools: Vec<ToolSpec>,
    /// Relative jitter of tool durations (0.1 = up to ±10%).
    pub tool_jitter: f64,
    /// The tool calls the application makes, in issue order.
    pub calls: Vec<CallSpec>,
    /// How many logical clients (each its own process and session) share the server.
    #[serde(default = "one")]
    pub clients: u32,
    /// Logical clients with a client profile of their own (`[client_profiles]` in a family file,
    /// `--set app.client_profiles`), by index: a fleet of several kinds of client in one run. A
    /// client not named here runs [`Scenario::client`]; read through [`Scenario::client_policy`].
    /// Left out of traces when empty, so single-profile traces read as before.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub client_profiles: BTreeMap<u32, ClientPolicy>,
    /// When the application (or an operator) deletes a client's session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deletes: Vec<DeleteSpec>,
    /// When a client resumes with a `Last-Event-ID` it was never given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bogus_resumes: Vec<BogusResume>,
    /// When the next resumes of a client are answered empty, in front of the server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub empty_resumes: Vec<EmptyResumes>,
    /// Server notifications on every session's standalone stream at this interval.
    #[serde(with = "mcpsim_model::time::serde_opt_duration")]
    pub notify_interval: Option<Duration>,
    /// Server notifications as a workload of their own (`app.notifications`), independent of
    /// the faults; left out of traces when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notifications: Option<notifications::NotificationSpec>,
    /// The faults of the run, at their times (the safety phase ends when the last heals).
    pub faults: FaultPlan,
    /// Latency of the simulated links.
    pub net: NetParams,
    /// After the faults heal and the last tool is due, every call must resolve within this.
    #[serde(with = "serde_duration")]
    pub liveness_grace: Duration,
    /// `bounded-reconnects`: the most stream reconnects a logical client may make in any hour.
    /// Recorded as a `Bounds` step at the start of a run when it is not the default (so traces of
    /// runs with the default read as before).
    #[serde(default = "default_max_reconnects", skip_serializing_if = "is_default_max_reconnects")]
    pub max_reconnects_per_hour: u32,
    /// `timely-delivery`: the longest an event stored while a connection to its reader was open
    /// may take to reach the application; `None`: the default (5 s). Recorded in the `Bounds`
    /// step when set.
    #[serde(default, with = "mcpsim_model::time::serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub max_delivery_delay: Option<Duration>,
    /// The public report a run of this scenario reproduces (`rust-sdk#958`, an address), if any:
    /// a field-failure reproduction names its source in its own trace header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduces: Option<String>,
    /// The `--set` overrides this scenario was built with, in order (for the replay command).
    pub overrides: Vec<(String, String)>,
    /// Swarm testing: the fault kinds a generated case enabled, each with its intensity (the most
    /// faults of that kind it may plan), and under `explore --swarm` the workload parts it switched
    /// on (intensity 1). `None` for a scenario not generated by a search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swarm: Option<std::collections::BTreeMap<String, u32>>,
    /// The `--client` argument when it named a file (for `cli_args`); not in traces.
    #[serde(skip)]
    pub client_arg: Option<String>,
    /// The argument each of `client_profiles` was read from (a built-in name, or a file's path
    /// as the command or the family file resolved it), for `cli_args` and `dump`; not in traces.
    #[serde(skip)]
    pub client_profile_args: BTreeMap<u32, String>,
    /// The `--server` argument when it named a file (for `cli_args`); not in traces.
    #[serde(skip)]
    pub server_arg: Option<String>,
    /// The `--scenario` argument when it named a file (for `cli_args`); not in traces.
    #[serde(skip)]
    pub scenario_arg: Option<String>,
    /// The digest of the scenario as its family, profiles and recorded overrides built it: while
    /// it still matches, no field was edited in code and `cli_args` needs no rebuild.
    #[serde(skip)]
    built: BuiltMark,
}

/// A digest that never makes two scenarios differ (it is a cache of how one was made).
#[derive(Clone, Copy, Debug, Default)]
struct BuiltMark(Option<u64>);

impl PartialEq for BuiltMark {
    fn eq(&self, _: &BuiltMark) -> bool {
        true
    }
}

impl Scenario {
    /// The digest of what a replay must rebuild ([`as_built`]): its serde form hashed as it is
    /// written, without building it as a value or a string (a search digests every case twice).
    fn digest(&self) -> u64 {
        /// FNV-1a over the bytes written to it.
        struct Fnv(u64);
        impl std::io::Write for Fnv {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0 = mcpsim_model::trace::fnv1a(self.0, bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut hash = Fnv(mcpsim_model::trace::FNV_OFFSET);
        // Writing to `Fnv` never fails, and every field of a scenario serializes.
        let _ = serde_json::to_writer(&mut hash, &as_built(self));
        hash.0
    }

    /// Marks the scenario as its family, profiles and recorded overrides built it.
    fn mark_built(&mut self) {
        self.built = BuiltMark(Some(self.digest()));
    }
}

/// What an unknown `--scenario NAME` is told: every built-in name (the task families too), and
/// the family file of that name where the repository's `sim/scenarios/` holds one (the rolling
/// upgrades, `task-input`, `listen-notify` are files, not built in).
fn unknown_family_hint(name: &str) -> String {
    let names: Vec<&str> = SCENARIO_NAMES.iter().chain(TASK_SCENARIO_NAMES).copied().collect();
    let file = std::path::Path::new("sim/scenarios").join(format!("{name}.toml"));
    let hint = if file.is_file() {
        format!("; the family file {} exists: --scenario {}", file.display(), file.display())
    } else {
        String::new()
    };
    format!("{}; or a path to a .toml file{hint}", names.join(", "))
}

impl Scenario {
    /// The named family (a built-in name or a family file) with the named profiles (built-in
    /// names or `.toml` files), before any `--set`.
    ///
    /// ```
    /// use mcpsim::{Scenario, SimError};
    ///
    /// let s = Scenario::build("long-tool", "naive", "reference")?;
    /// assert_eq!(s.cli_args(), "--client naive --server reference --scenario long-tool");
    /// assert!(mcpsim::run(&s, 0)?.violations.iter().any(|v| v.invariant == "no-duplicate-execution"));
    ///
    /// // An unknown name is an error that lists the known ones.
    /// let err = Scenario::build("long-tool", "naïve", "reference").unwrap_err();
    /// assert!(matches!(err, SimError::UnknownProfile { role: "client", .. }), "{err}");
    /// # Ok::<(), SimError>(())
    /// ```
    pub fn build(name: &str, client: &str, server: &str) -> Result<Scenario, SimError> {
        let client_policy = profile_files::client(client)?;
        let server_policy = profile_files::server(server)?;
        let base = Scenario {
            name: name.to_string(),
            client: client_policy,
            server: server_policy,
            lb: profile_files::lb("default")?,
            tools: vec![],
            tool_jitter: 0.1,
            calls: vec![],
            clients: 1,
            client_profiles: BTreeMap::new(),
            deletes: vec![],
            bogus_resumes: vec![],
            empty_resumes: vec![],
            notify_interval: None,
            notifications: None,
            faults: FaultPlan::default(),
            net: NetParams { latency_min: Duration::from_millis(1), latency_max: Duration::from_millis(10) },
            liveness_grace: Duration::from_secs(300),
            max_reconnects_per_hour: DEFAULT_MAX_RECONNECTS_PER_HOUR,
            max_delivery_delay: None,
            reproduces: None,
            overrides: vec![],
            swarm: None,
            client_arg: profile_files::is_path(client).then(|| client.to_string()),
            client_profile_args: BTreeMap::new(),
            server_arg: profile_files::is_path(server).then(|| server.to_string()),
            scenario_arg: None,
            built: BuiltMark::default(),
        };
        let mut scenario = if profile_files::is_path(name) {
            family_files::load(std::path::Path::new(name), base)?
        } else {
            family_files::builtin(name, base).ok_or_else(|| SimError::UnknownScenario {
                name: name.to_string(),
                known: unknown_family_hint(name),
            })??
        };
        scenario.scenario_arg = profile_files::is_path(name).then(|| name.to_string());
        scenario.validate()?;
        scenario.mark_built();
        Ok(scenario)
    }

    /// Applies `key=value` overrides in order, recording them, and validates the result.
    ///
    /// ```
    /// use mcpsim::{Scenario, SimError};
    ///
    /// // A keep-alive shorter than the load balancer's 60 s idle timeout saves even the naive client.
    /// let mut s = Scenario::build("long-tool", "naive", "reference")?;
    /// s.apply_overrides(&[("server.keepalive".into(), "15s".into())])?;
    /// assert_eq!(s.cli_args(), "--client naive --server reference --scenario long-tool --set server.keepalive=15s");
    /// assert!(mcpsim::run(&s, 0)?.violations.is_empty());
    ///
    /// // A value out of its bounds is refused, naming the key.
    /// let err = s.clone().apply_overrides(&[("server.keepalive".into(), "10ms".into())]).unwrap_err();
    /// assert!(err.to_string().starts_with("server.keepalive"), "{err}");
    /// # Ok::<(), SimError>(())
    /// ```
    pub fn apply_overrides(&mut self, overrides: &[(String, String)]) -> Result<(), SimError> {
        let untouched = self.built.0.is_some_and(|d| d == self.digest());
        *self = self.listed(overrides)?;
        if untouched {
            self.mark_built();
        }
        Ok(())
    }

    /// This scenario with `overrides` on top, for a run (`Case::scenario`: a search derives one
    /// per case). As [`Scenario::apply_overrides`] on a copy, but the copy does not carry the
    /// mark of how it was built (two digests of the whole scenario per case): a command line
    /// that replays it is derived, when one is asked for, by building it again and comparing.
    pub fn derive(&self, overrides: &[(String, String)]) -> Result<Scenario, SimError> {
        let mut s = self.listed(overrides)?;
        s.built = BuiltMark::default();
        Ok(s)
    }

    /// A copy with `overrides` applied in order, recorded, and validated. A profile's or the
    /// tools' fields are edited in their serde form and read back once (`settings::Drafts`);
    /// where that fails the list is applied again one override at a time, to a fresh copy, so the
    /// error names the override whose value it was.
    fn listed(&self, overrides: &[(String, String)]) -> Result<Scenario, SimError> {
        let mut s = self.clone();
        let mut drafts = settings::Drafts::default();
        let drafted = overrides
            .iter()
            .try_for_each(|(key, value)| settings::apply_drafted(&mut s, &mut drafts, key, value).map_err(drop))
            .and_then(|()| drafts.flush(&mut s).map_err(drop));
        if drafted.is_ok() {
            s.overrides.extend(overrides.iter().cloned());
        } else {
            s = self.clone();
            for (key, value) in overrides {
                settings::apply(&mut s, key, value)?;
                s.overrides.push((key.clone(), value.clone()));
            }
        }
        s.validate()?;
        Ok(s)
    }

    /// Checks the scenario asks for nothing the simulator refuses (see [`settings`] for the
    /// rules and bounds): the one validation of `--set`, profile files and trace headers.
    pub fn validate(&self) -> Result<(), SimError> {
        match settings::problems(self).into_iter().next() {
            None => Ok(()),
            Some(p) => Err(SimError::Invalid { key: settings::key_for(&p.path), problem: p.message }),
        }
    }

    /// Logical client `index`'s profile: its own (`client_profiles`), else the scenario's
    /// (`--client`). The one place a client's policy is read.
    pub fn client_policy(&self, index: u32) -> &ClientPolicy {
        self.client_profiles.get(&index).unwrap_or(&self.client)
    }

    /// Whether some logical client runs a profile of its own (a fleet of several kinds).
    pub fn is_mixed(&self) -> bool {
        !self.client_profiles.is_empty()
    }

    /// Every logical client's profile, in client order.
    pub fn client_policies(&self) -> impl Iterator<Item = &ClientPolicy> {
        (0..self.clients.max(1)).map(|i| self.client_policy(i))
    }

    /// The clients' profile names for labels and file names: the `--client` profile's name, or
    /// for a mixed fleet each distinct name in client order joined by `+`
    /// (`py-sdk+stateless-2026+py-sdk-auto`).
    pub fn client_label(&self) -> String {
        if !self.is_mixed() {
            return self.client.name.clone();
        }
        let mut names: Vec<&str> = Vec::new();
        for p in self.client_policies() {
            if !names.contains(&p.name.as_str()) {
                names.push(&p.name);
            }
        }
        names.join("+")
    }

    /// Refuses a mixed fleet for a study that reasons about one client profile (`advise`,
    /// `check`, `matrix`, `bench`): it would judge every client by one of them.
    pub fn require_one_client_profile(&self, study: &str) -> Result<(), SimError> {
        match self.client_profiles.keys().next() {
            None => Ok(()),
            Some(i) => Err(SimError::Usage(format!(
                "{study} reasons about one client profile, but scenario {} gives client {i} a profile of its own (client_profiles): run it with `mcpsim run` or `mcpsim sweep`",
                self.name
            ))),
        }
    }

    /// The tool of that name.
    pub(crate) fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// A call's tool at its worst (jitter), with the wait for its user's answer when it asks for
    /// input, and the re-issues its `on_error` may add.
    fn worst_run(&self, c: &CallSpec) -> Option<Duration> {
        let t = self.tool(&c.tool)?;
        let longest = t.duration.mul_f64(1.0 + self.tool_jitter);
        let once = longest + self.input_wait(t, longest, c.client);
        let runs = match c.on_error {
            OnError::GiveUp => 1,
            OnError::Reissue | OnError::ReinitializeReissue => 1 + c.max_reissues.min(MAX_REISSUES),
        };
        Some(once * runs)
    }

    /// How long a call's tool, stretched to `longest` by jitter at its worst, waits for its
    /// user's answer at worst, when it runs as a task that asks for input
    /// (`ClientTasks::input_wait`): nothing for a tool that asks for nothing or
    /// runs as no task, or a client that never answers (its task ends at its TTL, a failure the
    /// deadline need not wait for).
    fn input_wait(&self, tool: &ToolSpec, longest: Duration, client: u32) -> Duration {
        let policy = &self.client_policy(client).tasks;
        // Only a task asks for input.
        let task = self.server.tasks.makes_task_for(tool.duration, policy.declares);
        // A tool whose input comes near its end asks for it in a run its jitter stretches.
        if !(task && tool.asks_for_input_within(longest)) {
            return Duration::ZERO;
        }
        policy.input_wait(self.server.tasks.poll_interval).unwrap_or_default()
    }

    /// When each call (in the scenario's order) is planned to be issued, with `start` the time
    /// no call starts before: its `at`, or for a call `after_idle` its idle gap after the same
    /// client's previous call is due (issued, run at its worst, re-issues included).
    fn planned(&self, start: Duration) -> Vec<Duration> {
        let mut due_of_client: std::collections::BTreeMap<u32, Duration> = Default::default();
        let mut out = Vec::with_capacity(self.calls.len());
        for c in &self.calls {
            let earliest = match (c.after_idle, due_of_client.get(&c.client)) {
                (Some(gap), Some(prev)) => c.at.max(*prev + gap),
                (Some(gap), None) => c.at.max(gap),
                (None, _) => c.at,
            };
            let issued = earliest.max(start);
            let due = issued + self.worst_run(c).unwrap_or_default();
            due_of_client.insert(c.client, due);
            out.push(earliest);
        }
        out
    }

    /// The latest time a call's tool can finish, with jitter at its worst.
    pub(crate) fn last_tool_due(&self) -> Duration {
        let planned = self.planned(Duration::ZERO);
        self.calls
            .iter()
            .zip(planned)
            .filter_map(|(c, at)| self.worst_run(c).map(|run| at + run))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    /// The liveness deadline: every call must have resolved by then. A call's tool may only
    /// start once the faults heal — a cut-off client cannot send it, a restarted server runs it
    /// again — so each call gets its whole (worst-case) duration from `max(issued, healed)`
    /// (a call after an idle gap: from its gap after the previous call is due).
    pub fn liveness_deadline(&self) -> Duration {
        let heal = self.faults.heal_time();
        let planned = self.planned(heal);
        let due = self.calls.iter().zip(planned).filter_map(|(c, at)| self.worst_run(c).map(|run| at.max(heal) + run));
        due.max().unwrap_or_default().max(heal) + self.liveness_grace
    }

    /// The last time the script acts on its own besides calls (a delete, a bogus resume, empty
    /// resumes): the run does not stop before it.
    pub fn last_scripted_act(&self) -> Duration {
        let deletes = self.deletes.iter().map(|d| d.at);
        let acts = deletes.chain(self.bogus_resumes.iter().map(|b| b.at));
        let notified = self.notifications.as_ref().and_then(|n| n.last());
        acts.chain(self.empty_resumes.iter().map(|e| e.at)).chain(notified).max().unwrap_or(Duration::ZERO)
    }

    /// A run never lasts longer than this in simulated time.
    pub fn time_limit(&self) -> Duration {
        let notified = self.notifications.as_ref().and_then(|n| n.last()).unwrap_or_default();
        self.liveness_deadline().max(notified) + Duration::from_secs(60)
    }

    /// What is wrong with the scenario's clients, if anything: there must be at least one, and
    /// every call, delete, bogus resume (and the client whose id it borrows) and empty resumes
    /// must name one of them.
    pub(crate) fn clients_problem(&self) -> Option<String> {
        if self.clients == 0 {
            return Some("a scenario needs at least one client".to_string());
        }
        let named = self.calls.iter().map(|c| c.client).chain(self.deletes.iter().map(|d| d.client));
        let named = named.chain(self.bogus_resumes.iter().map(|b| b.client));
        let borrowed = self.bogus_resumes.iter().filter_map(|b| match b.id {
            ResumeId::ReceivedBy { client, .. } => Some(client),
            ResumeId::Given(_) => None,
        });
        let named = named.chain(borrowed).chain(self.empty_resumes.iter().map(|e| e.client));
        named
            .filter(|c| *c >= self.clients)
            .map(|c| format!("the scenario names client {c}, but has only {} client(s)", self.clients))
            .next()
    }

    /// The command-line arguments that rebuild this scenario (`--client … --set …`): a profile
    /// read from a file by its path, and each override that a later one does not set again.
    /// A scenario edited in code after it was built (`s.lb.replicas = 3`) gets the `--set`s that
    /// rebuild its current values ([`Scenario::replay_sets`]); one that no command line can
    /// rebuild (a field without a key, such as `clients`) ends in `--set unreplayable=FIELD`,
    /// which every command refuses rather than run another scenario.
    pub fn cli_args(&self) -> String {
        let client = self.client_arg.as_deref().unwrap_or(&self.client.name);
        let server = self.server_arg.as_deref().unwrap_or(&self.server.name);
        let family = self.scenario_arg.as_deref().unwrap_or(&self.name);
        let mut args = format!("--client {client} --server {server} --scenario {family}");
        let sets = match self.replay_sets() {
            Ok(None) => settings::effective(&self.overrides),
            Ok(Some(derived)) => derived,
            Err(field) => {
                let mut sets = settings::effective(&self.overrides);
                sets.push((settings::UNREPLAYABLE.to_string(), field));
                sets
            }
        };
        for (k, v) in sets {
            args.push_str(&format!(" --set {k}={v}"));
        }
        args
    }

    /// The `--set`s that rebuild this scenario from its family and profiles: `None` when its
    /// recorded overrides do; else overrides derived from its current values (those recorded,
    /// then each short key and each field whose value differs); `Err(FIELD)` when a field that no
    /// key sets differs (`notify_interval`, scripted resumes, a tool's name).
    pub fn replay_sets(&self) -> Result<Option<Vec<(String, String)>>, String> {
        let client = self.client_arg.as_deref().unwrap_or(&self.client.name);
        let server = self.server_arg.as_deref().unwrap_or(&self.server.name);
        let family = self.scenario_arg.as_deref().unwrap_or(&self.name);
        if self.built.0.is_some_and(|d| d == self.digest()) {
            return Ok(None);
        }
        let recorded = settings::effective(&self.overrides);
        let mut rebuilt = Scenario::build(family, client, server).map_err(|_| "the family or a profile".to_string())?;
        for (k, v) in &recorded {
            settings::apply(&mut rebuilt, k, v).map_err(|_| format!("--set {k}"))?;
        }
        let (mine, theirs) = (comparable(self), comparable(&rebuilt));
        if mine == theirs {
            return Ok(None);
        }
        let mut sets = recorded;
        let mut set = |rebuilt: &mut Scenario, key: &str, value: String| -> Result<(), String> {
            settings::apply(rebuilt, key, &value).map_err(|_| key.to_string())?;
            sets.push((key.to_string(), value));
            Ok(())
        };
        for setting in SETTINGS {
            let value = (setting.show)(self);
            if (setting.show)(&rebuilt) != value {
                set(&mut rebuilt, setting.key, value)?;
            }
        }
        let (Value::Object(mine), Value::Object(theirs)) = (comparable(self), comparable(&rebuilt)) else {
            return Err("the scenario".into());
        };
        for role in ["client", "server"] {
            let mut diffs = Vec::new();
            leaf_differences(&mine[role], &theirs[role], role, &mut diffs);
            for (path, value) in diffs {
                set(&mut rebuilt, &path, value)?;
            }
        }
        if self.tools.len() == rebuilt.tools.len() {
            for i in 0..self.tools.len() {
                let mut diffs = Vec::new();
                leaf_differences(&mine["tools"][i], &theirs["tools"][i], &format!("tools.{i}"), &mut diffs);
                for (path, value) in diffs {
                    set(&mut rebuilt, &path, value)?;
                }
            }
        }
        let Value::Object(theirs) = comparable(&rebuilt) else { return Err("the scenario".into()) };
        match mine.iter().find(|(k, v)| theirs.get(*k) != Some(v)) {
            None => Ok(Some(sets)),
            Some((field, _)) => Err(field.clone()),
        }
    }
}

/// A scenario without how it was made (its overrides, a search's swarm): what a replay must
/// rebuild. The one place that says which fields those are.
fn as_built(s: &Scenario) -> Scenario {
    Scenario { overrides: Vec::new(), swarm: None, ..s.clone() }
}

/// [`as_built`] as its trace header holds it, to compare two scenarios field by field.
fn comparable(s: &Scenario) -> Value {
    serde_json::to_value(as_built(s)).unwrap_or(Value::Null)
}

/// `(path, value)` for each leaf where `mine` differs from `base` (a tagged table, with a
/// `kind`, whole), the value written as `--set` reads it.
fn leaf_differences(mine: &Value, base: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match (mine, base) {
        (Value::Object(m), Value::Object(b)) if !m.contains_key("kind") => {
            for (k, v) in m {
                if k != "name" {
                    leaf_differences(v, b.get(k).unwrap_or(&Value::Null), &format!("{path}.{k}"), out);
                }
            }
        }
        _ if mine == base => {}
        (Value::Null, _) => out.push((path.to_string(), "none".into())),
        (Value::String(text), _) => out.push((path.to_string(), text.clone())),
        (Value::Number(n), _) if n.is_f64() => {
            out.push((path.to_string(), n.as_f64().map(|x| x.to_string()).unwrap_or_default()))
        }
        _ => out.push((path.to_string(), mcpsim_model::profiles::toml_value(mine))),
    }
}

/// The scenario a command names: profiles, family and overrides.
#[derive(Clone, Debug)]
pub struct ScenarioArgs {
    /// `--client`: a built-in profile name or a TOML file.
    pub client: String,
    /// `--server`: a built-in profile name or a TOML file.
    pub server: String,
    /// `--scenario`: the family name.
    pub scenario: String,
    /// `key=value` overrides, in order.
    pub sets: Vec<String>,
}

impl ScenarioArgs {
    /// Builds and validates the scenario before anything runs.
    pub fn build(&self) -> Result<Scenario, SimError> {
        let mut s = Scenario::build(&self.scenario, &self.client, &self.server)?;
        let overrides = self.sets.iter().map(|t| parse_override(t)).collect::<Result<Vec<_>, _>>()?;
        settings::check_distinct(&overrides)?;
        s.apply_overrides(&overrides)?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::faults::Fault;
    use super::*;
    use mcpsim_model::profiles;

    /// The scenario folder reads top-down (docs/model.md, "What a scenario may ask for"): each
    /// file uses only the files before it (and `mod.rs`'s types), so no two files import each
    /// other. Unit-test modules are left out, as `import-cycles.py` leaves them out.
    const TOP_DOWN: &[&str] = &[
        "files",
        "layers",
        "faults",
        "script",
        "notifications",
        "settings",
        "profile_files",
        "families",
        "family_files",
    ];

    /// The sibling modules `source` names outside its unit tests.
    fn siblings_used(source: &str) -> std::collections::BTreeSet<&'static str> {
        let code = source.split("#[cfg(test)]").next().unwrap_or(source);
        let mut used = std::collections::BTreeSet::new();
        for prefix in ["super::", "crate::scenario::"] {
            for (at, _) in code.match_indices(prefix) {
                let rest = &code[at + prefix.len()..];
                // `super::{a, b::C}` names several at once.
                let names: Vec<&str> = match rest.strip_prefix('{') {
                    Some(group) => group.split('}').next().unwrap_or("").split(',').collect(),
                    None => vec![rest],
                };
                for name in names {
                    let name = name.trim().split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap_or("");
                    if let Some(m) = TOP_DOWN.iter().find(|m| **m == name) {
                        used.insert(*m);
                    }
                }
            }
        }
        used
    }

    /// An unknown family name is told every built-in name, the task families included (they
    /// build by name too, and the message left them out).
    #[test]
    fn an_unknown_family_is_told_every_built_in_name() {
        let err = Scenario::build("no-such-family", "reference", "reference").unwrap_err().to_string();
        for name in SCENARIO_NAMES.iter().chain(TASK_SCENARIO_NAMES) {
            assert!(err.contains(name), "{name}: {err}");
            assert!(Scenario::build(name, "reference", "reference").is_ok(), "{name} builds by name");
        }
        assert!(err.contains("or a path to a .toml file"), "{err}");
    }

    #[test]
    fn the_scenario_folder_reads_top_down() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/scenario");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .expect("the scenario folder")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|f| f.strip_suffix(".rs").map(str::to_string))
            .filter(|f| f != "mod")
            .collect();
        files.sort();
        let mut listed: Vec<String> = TOP_DOWN.iter().map(|s| s.to_string()).collect();
        listed.sort();
        assert_eq!(files, listed, "a file of the scenario folder is missing from TOP_DOWN (or gone)");
        for (i, file) in TOP_DOWN.iter().enumerate() {
            let source = std::fs::read_to_string(dir.join(format!("{file}.rs"))).expect("readable");
            for used in siblings_used(&source) {
                let at = TOP_DOWN.iter().position(|m| *m == used).expect("listed");
                assert!(at < i, "{file}.rs uses {used}.rs, which comes after it (or is itself)");
            }
        }
        // The reader sees a grouped import and a path.
        let seen = siblings_used("use super::{layers, Scenario};\nfn f() { crate::scenario::faults::x(); }");
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["faults", "layers"]);
    }

    #[test]
    fn every_family_builds_with_every_profile() {
        for name in SCENARIO_NAMES {
            assert!(!describe(name).is_empty());
            for c in profiles::CLIENT_NAMES {
                for s in profiles::SERVER_NAMES {
                    let sc = Scenario::build(name, c, s).unwrap();
                    assert!(!sc.calls.is_empty() && !sc.tools.is_empty());
                    assert!(sc.liveness_deadline() > sc.last_tool_due());
                    assert!(sc.liveness_deadline() >= sc.faults.heal_time() + sc.liveness_grace);
                }
            }
        }
    }

    #[test]
    fn a_call_cut_off_until_the_faults_heal_gets_its_whole_tool_duration_after_them() {
        let mut s = Scenario::build("resume-after-completion", "reference", "reference").unwrap();
        s.apply_overrides(&[("tool.jitter".into(), "0".into()), ("fault.partition".into(), "0s..400s".into())])
            .unwrap();
        // The 60 s tool cannot start before 400 s: the deadline is 400 + 60 + the 5-minute grace.
        assert_eq!(s.liveness_deadline(), Duration::from_secs(400 + 60 + 300));
    }

    #[test]
    fn a_task_that_asks_for_input_gets_its_users_time_to_answer_before_the_deadline() {
        // A swarm sweep of reference × reference × task-input read a second call, issued after a
        // first that waited 4 minutes for its user, as never resolved: the deadline counted the
        // tool's 2 minutes only, while the tool stands still until the answer.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/task-input.toml");
        let mut s = Scenario::build(path, "reference", "reference").unwrap();
        s.apply_overrides(&[("tool.jitter".into(), "0".into())]).unwrap();
        let (grace, poll) = (s.liveness_grace, s.client.tasks.poll_interval(s.server.tasks.poll_interval));
        // Called at 1 s, the 2-minute tool, the poll that shows input_required, the 4-minute user.
        let waits = Duration::from_secs(1 + 120 + 240) + poll + grace;
        assert_eq!(s.liveness_deadline(), waits);
        // A user who never answers, or a call that is no task, adds nothing.
        let mut never = s.clone();
        never.apply_overrides(&[("client.tasks.answer_input_after".into(), "none".into())]).unwrap();
        assert_eq!(never.liveness_deadline(), Duration::from_secs(121) + grace);
        let mut plain = s.clone();
        plain.apply_overrides(&[("client.tasks.declares".into(), "false".into())]).unwrap();
        assert_eq!(plain.liveness_deadline(), Duration::from_secs(121) + grace);
        // A 29 s tool asking at 30 s asks in a run its jitter stretches past 30 s (the sweep's
        // second case): the deadline waits for the answer too.
        let mut near = s.clone();
        near.apply_overrides(&[("tool.duration".into(), "29s".into()), ("tool.input_after".into(), "30s".into())])
            .unwrap();
        assert!(near.liveness_deadline() < Duration::from_secs(1 + 29) + grace + poll, "no jitter, no question");
        near.apply_overrides(&[("tool.jitter".into(), "0.1".into())]).unwrap();
        let stretched = Duration::from_secs(1) + Duration::from_secs(29).mul_f64(1.1);
        assert_eq!(near.liveness_deadline(), stretched + Duration::from_secs(240) + poll + grace);
    }

    #[test]
    fn every_call_and_delete_must_name_a_client_of_the_scenario() {
        for name in SCENARIO_NAMES {
            assert_eq!(Scenario::build(name, "reference", "reference").unwrap().clients_problem(), None, "{name}");
        }
        let mut s = Scenario::build("two-sessions-same-request-id", "reference", "reference").unwrap();
        s.clients = 1;
        assert_eq!(s.clients_problem().as_deref(), Some("the scenario names client 1, but has only 1 client(s)"));
        s.clients = 0;
        assert!(s.clients_problem().is_some());
        let mut d = Scenario::build("delete-during-tool", "reference", "reference").unwrap();
        d.deletes[0].client = 3;
        assert!(d.clients_problem().is_some_and(|p| p.contains("client 3")));
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

    /// The scenario a printed command line builds.
    fn rebuilt(args: &str) -> Result<Scenario, SimError> {
        let words: Vec<&str> = args.split(" --").collect();
        let value = |flag: &str| {
            words.iter().find_map(|w| w.trim_start_matches("--").strip_prefix(flag)).map(str::trim).unwrap_or_default()
        };
        let sets = words.iter().filter_map(|w| w.strip_prefix("set ")).map(str::to_string).collect();
        ScenarioArgs {
            client: value("client ").into(),
            server: value("server ").into(),
            scenario: value("scenario ").into(),
            sets,
        }
        .build()
    }

    #[test]
    fn cli_args_after_typed_edits_rebuild_the_edited_scenario_or_refuse() {
        let mut s = Scenario::build("long-tool", "naive", "reference").unwrap();
        s.apply_overrides(&[("server.keepalive".into(), "20s".into())]).unwrap();
        s.lb.replicas = 3;
        s.tools[0].duration = Duration::from_secs(90);
        s.faults = faults::FaultPlan::new(vec![faults::parse_partition("1m..2m").unwrap()]);
        s.client.reconnect.jitter = 0.25;
        let args = s.cli_args();
        assert!(args.contains("--set server.keepalive=20s"), "{args}");
        let mut back = rebuilt(&args).unwrap_or_else(|e| panic!("{args}: {e}"));
        back.overrides.clone_from(&s.overrides);
        assert_eq!(comparable(&back), comparable(&s), "{args}");
        // The replay line, too.
        let line = crate::report::artifacts::replay_command(&s, 3);
        assert!(line.contains("--set tool.duration=90s") && line.contains("fault.partition=1m..2m"), "{line}");
        // The number of clients has a key (`app.clients`): the line sets it.
        s.clients = 2;
        let args = s.cli_args();
        assert!(args.contains("--set app.clients=2"), "{args}");
        assert_eq!(rebuilt(&args).map(|b| b.clients).ok(), Some(2), "{args}");
        // A field no key sets: the line refuses to run.
        s.notify_interval = Some(Duration::from_secs(7));
        let args = s.cli_args();
        assert!(args.ends_with("--set unreplayable=notify_interval"), "{args}");
        let e = rebuilt(&args).unwrap_err().to_string();
        assert!(e.contains("edited in code"), "{e}");
        // Unedited, the line is the recorded one.
        let s = Scenario::build("long-tool", "naive", "reference").unwrap();
        assert_eq!(s.replay_sets(), Ok(None));
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
    fn every_fault_kind_has_a_setting_that_shows_only_its_kind() {
        let mut s = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        let o = [
            ("fault.reset", "10s"),
            ("fault.server_restart", "20s"),
            ("fault.client_restart", "30s"),
            ("fault.blackhole", "40s..50s"),
        ];
        s.apply_overrides(&o.map(|(k, v)| (k.to_string(), v.to_string()))).unwrap();
        for kind in Fault::KINDS {
            let key = fault_setting(kind).unwrap_or_else(|| panic!("{kind} has no key"));
            let shown = (setting(key).unwrap().show)(&s);
            assert!(shown != "none" && !shown.contains(','), "{key}={shown}");
        }
        assert_eq!(fault_setting("meteor"), None);
        // Every kind a plan can hold has its key (the search's shrinking removes one fault at a
        // time by rewriting its kind's setting), and that key reads back what it set.
        for kind in Fault::KINDS.iter().chain(Fault::TARGETED_KINDS) {
            let key = fault_setting(kind).unwrap_or_else(|| panic!("{kind} has no key"));
            assert!(setting(key).is_ok(), "{key}");
        }
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
