//! Every parameter a user may change — with `--set key=value`, in a profile file, or in a trace
//! header — and the one validation all three go through.
//!
//! Keys: every field of the client, server and load-balancer policies and of the scenario's tools
//! is settable by its serde path (`client.reconnect.jitter=0.2`, `server.retention.max_events=50`,
//! `tool.event_interval=2s` for the first tool, `tools.1.duration=30s` for another). The short
//! keys of [`SETTINGS`] (`server.retention`, `client.backoff_max`, `fault.partition`, …) stay as
//! aliases, so old command lines and the `cli_args()` of old traces keep working. Values are
//! written as traces write them (`gone410`, `none`, `15s`); the older spellings (`410`,
//! `unbounded`, `unlimited`) are accepted too.
//!
//! Validation (`problems`) is one list of rules over a whole scenario; `--set`, profile files
//! (`client_problems` and friends, at the file's line and column) and trace headers
//! (`Scenario::validate`) all use it. The bounds keep a run bounded:
//!
//! | what | bound |
//! |---|---|
//! | `server.keepalive` | none, or at least [`MIN_KEEPALIVE`] (1 s) |
//! | `tool.event_interval`, the scenario's notification interval | none, or at least [`MIN_EVENT_INTERVAL`] (1 ms) |
//! | every duration a scenario asks for (tool durations, timeouts, TTLs, fault times, grace) | at most [`MAX_DURATION`] (24 h) |
//! | `server.idle_ttl`, `lb.idle_timeout`, `client.request_timeout`, `server.retention.window` | none, or above 0 |
//! | `client.reconnect.initial` | at least 1 ms, at most `client.reconnect.max` |
//! | `server.retry_ms` | none, or at least 1 |
//! | `client.reconnect.factor` | finite, at least 1 |
//! | `client.reconnect.jitter`, `tool.jitter` | finite, in [0, 1) |
//! | clients | 1 to [`MAX_CLIENTS`] (64) |
//! | `app.client_profiles` | each client index below `clients`, once; each profile by the client rules above |
//! | planned faults | at most [`MAX_FAULTS`] (256), no time given twice for one kind |
//! | `net.latency` | MIN at most MAX, MAX at most 1 min |
//! | a call's `max_reissues` | at most [`MAX_REISSUES`] (10) |
//! | `server.max_sessions` | none, or at least 1 |
//! | `tool.burst` | 1 to [`MAX_BURST`] (1000) events a tick |
//! | `tool.input_after` | at least 1 ms, or none (asks for nothing) |
//! | `app.notifications` | an interval of at least 1 ms, a count (at least 1) or an end after `from` |
//! | tools, calls, deletes, bogus resumes, empty resumes | at most [`MAX_TOOLS`] (32), [`MAX_CALLS`] (100), [`MAX_DELETES`] (32), [`MAX_RESUMES`] (32) each ([`LIST_CAPS`]), checked before anything else |
//! | a profile, family or deployment file | at most 1 MiB ([`super::files::MAX_INPUT_BYTES`]); a list in a profile file at most `super::layers::MAX_PROFILE_LIST` (64) entries, checked before it is read |

use super::faults::{
    parse_answer, parse_blackhole, parse_deploy, parse_partition, parse_targeted, parse_times, Fault, PlannedFault,
    Target,
};
pub(crate) use super::layers::Problem;
use super::{layers, NetParams, ResumeId, Scenario, MAX_EMPTY_RESUMES, MAX_REISSUES};
use crate::error::SimError;
use mcpsim_model::config::{ClientPolicy, LbConfig, ServerPolicy, ToolSpec, MAX_BURST, MAX_HOPS, MAX_REPLICAS};
use mcpsim_model::oracle::conditions::Condition;
use mcpsim_model::profiles::{self, known_paths_ref, Role};
use mcpsim_model::time::{format_duration, parse_duration};
use mcpsim_model::trace::DEFAULT_MAX_DELIVERY_DELAY_US;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

/// The shortest keep-alive interval: below a second a run spends its steps on comments.
pub const MIN_KEEPALIVE: Duration = Duration::from_secs(1);
/// The shortest interval of tool progress events and server notifications.
pub const MIN_EVENT_INTERVAL: Duration = Duration::from_millis(1);
/// The longest duration a scenario may ask for: tool durations, timeouts, fault times.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);
/// The most logical clients a scenario may have.
pub const MAX_CLIENTS: u32 = 64;
/// The most planned faults.
pub const MAX_FAULTS: usize = 256;
/// The longest one-way network latency.
pub const MAX_LATENCY: Duration = Duration::from_secs(60);
/// The most calls a scenario's script may have.
pub const MAX_CALLS: usize = 100;
/// The most tools a scenario may offer.
pub const MAX_TOOLS: usize = 32;
/// The most scripted deletes.
pub const MAX_DELETES: usize = 32;
/// The most entries of each list of scripted resumes (`bogus_resumes`, `empty_resumes`).
pub const MAX_RESUMES: usize = 32;

/// The lists of a scenario whose length is capped, each with its cap: checked first, before
/// any rule looks at an entry, and by a family file before it reads one.
pub const LIST_CAPS: &[(&str, usize)] = &[
    ("tools", MAX_TOOLS),
    ("calls", MAX_CALLS),
    ("deletes", MAX_DELETES),
    ("bogus_resumes", MAX_RESUMES),
    ("empty_resumes", MAX_RESUMES),
];

/// The problem of a list of `len` entries, if it is longer than its cap.
pub(crate) fn list_problem(list: &str, len: usize) -> Option<Problem> {
    let (_, cap) = LIST_CAPS.iter().find(|(name, _)| *name == list)?;
    (len > *cap).then(|| problem(list, format!("{len} entries: at most {cap}")))
}

/// A parameter `--set` can change.
pub struct Setting {
    /// The short key `--set` takes (`server.keepalive`, `fault.partition`, …).
    pub key: &'static str,
    /// The fields it sets (dotted serde paths of the scenario): two overrides of one field clash.
    pub targets: &'static [&'static str],
    /// What it means and how values are written.
    pub help: &'static str,
    /// Reads a value into the scenario, or says why it cannot.
    pub apply: fn(&mut Scenario, &str) -> Result<(), String>,
    /// The current value, written the way `apply` reads it.
    pub show: fn(&Scenario) -> String,
    /// For a key that is an alias of its `targets` (`alias!`), the older spellings of `none` it
    /// also reads: a list of overrides edits those fields in their part's serde form
    /// (`settings::Drafts`).
    /// `None` for a key with a value syntax of its own.
    pub alias: Option<&'static [&'static str]>,
}

/// The key a printed command line ends in when no command line can rebuild its scenario (a
/// scenario edited in code, see `Scenario::cli_args`): every command refuses it.
pub const UNREPLAYABLE: &str = "unreplayable";

/// The `--set` keys a condition of validity depends on (`oracle::conditions`): where to look when
/// runs break it. Condition 1: whether the client keeps its state across a restart. 2: how long
/// the server keeps events and sessions, how long the client keeps trying, and whether a
/// session's requests reach the replica that holds it. 3: how the server answers an id it cannot
/// honour, and whether its event store is shared across sessions. 4: how the client reads a
/// broken connection, its own time-out or a task the server no longer finds, and what the
/// application does after an error. A termination: an
/// operator's `DELETE`. A server's own bug depends on no setting of the fleet, but three are one
/// field of the server's profile each (its replay rule, its event ids, its dropped events); its
/// pacing, on its close timers.
pub fn keeping(condition: Condition) -> &'static [&'static str] {
    match condition {
        Condition::Persisted => &["client.persistence"],
        Condition::Retention => &[
            "server.retention",
            "server.retention_window",
            "server.idle_ttl",
            "client.max_attempts",
            "client.request_timeout",
            "lb.routing",
            "lb.store",
        ],
        Condition::Refused => &["server.unhonourable", "server.store"],
        Condition::ByClass => {
            &["client.close_handling", "client.request_timeout", "client.tasks.not_found", "app.calls"]
        }
        Condition::Terminated => &["app.operator_deletes"],
        // A server's own bug: where the profile models it by one field, that field (the rule to
        // change in the server, or the release to move to); otherwise none.
        Condition::ServerRepeated => &["server.replay"],
        Condition::ServerCrossStream => &["server.replay_scope"],
        Condition::ServerIdReused => &["server.event_ids"],
        Condition::ServerDropped => &["server.detached_request_events"],
        Condition::ServerHeldOpen => &["server.sessionless_get"],
        Condition::ServerRefusedAfterHead => &["server.second_get"],
        Condition::ServerEnded | Condition::ServerMissed => &[],
        Condition::ServerPaced => &["server.close_idle_standalone", "server.close_request_streams"],
        Condition::ProxyHeld => &["lb.hops", "lb.hold_headers"],
        // Work left running: the server's rule for a deleted session's tools, the tool's answer
        // to its abort signal, the disconnect rule's handler that ignores its cancel, and a
        // sessionless server's answer to a cancel.
        Condition::WorkRunOn => &[
            "server.delete_running_tool",
            "tool.on_abort",
            "server.disconnect_cancel_ignored",
            "server.sessionless_cancel",
        ],
        // A bus per process across replicas: the bus's scope, and the replicas it spans.
        Condition::BusLocal => &["server.subscriptions.bus", "lb.replicas"],
        Condition::RequestLost => {
            &["server.keepalive", "lb.idle_timeout", "lb.max_lifetime", "server.tasks.create_for_tools_over"]
        }
        // A dead connection nobody was told of: the timers that end the wait on one.
        Condition::BlackHole => {
            &["client.request_timeout", "server.keepalive", "server.idle_ttl", "server.idle_rule", "lb.idle_timeout"]
        }
    }
}

/// The short key of that name.
pub fn setting(key: &str) -> Result<&'static Setting, SimError> {
    find_setting(key).ok_or_else(|| unknown_key(key))
}

/// The short key `key`, if it is one: where a field's path is the other answer, without the
/// message that lists every short key (a search applies such keys to every case).
fn find_setting(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}

fn unknown_key(key: &str) -> SimError {
    SimError::UnknownKey {
        key: key.to_string(),
        known: format!(
            "{}; or any field by its path: client.*, server.*, lb.*, tool.* (see `mcpsim profiles --dump NAME`)",
            SETTINGS.iter().map(|s| s.key).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The fields a key sets (dotted serde paths of the scenario): a short key's targets, or the path
/// a field key stands for (`tool.duration` → `tools.0.duration`).
pub(crate) fn targets(key: &str) -> Result<Vec<String>, SimError> {
    if key == UNREPLAYABLE {
        return Err(SimError::Usage(
            "this command line was printed for a scenario edited in code whose value no --set can write (unreplayable=FIELD names it): it would run another scenario; replay its trace instead (mcpsim replay FILE)".into(),
        ));
    }
    if let Some(s) = find_setting(key) {
        return Ok(s.targets.iter().map(|t| t.to_string()).collect());
    }
    let path = field_path(key).map_err(|m| match m.strip_prefix(UNKNOWN_FIELD) {
        Some(fields) => SimError::UnknownKey { key: key.to_string(), known: fields.to_string() },
        None if m.starts_with("unknown key") => unknown_key(key),
        None => SimError::Usage(m),
    })?;
    Ok(vec![path.join(".")])
}

/// What [`field_path`]'s message for an unknown field of a known table starts with; the fields of
/// that table follow it.
const UNKNOWN_FIELD: &str = "unknown field; the table has: ";

/// The fields of the table `key` is in (`lb.typo`: the balancer's; `client.reconnect.typo`: the
/// reconnect table's), as keys `--set` takes, one line: the deepest table of the key's path that
/// has fields. `known` holds the table's role's field paths (`reconnect.jitter`).
fn table_fields(role: &str, rest: &[&str], known: &std::collections::BTreeSet<String>) -> String {
    let mut depth = rest.len().saturating_sub(1);
    loop {
        let table = rest[..depth].join(".");
        let prefix = if table.is_empty() { String::new() } else { format!("{table}.") };
        let names: std::collections::BTreeSet<&str> = known
            .iter()
            .filter_map(|p| p.strip_prefix(prefix.as_str()))
            .map(|p| p.split('.').next().unwrap_or(p))
            // The name comes from the profile, never from a key.
            .filter(|n| !(table.is_empty() && *n == "name"))
            .collect();
        if !names.is_empty() || depth == 0 {
            let keys: Vec<String> = names.iter().map(|n| format!("{role}.{prefix}{n}")).collect();
            let dump = match role {
                "client" | "server" | "lb" => format!("`mcpsim profiles --dump {role}:NAME`"),
                _ => "the [[tools]] of sim/scenarios/*.toml".to_string(),
            };
            return format!("{}; see {dump}", keys.join(", "));
        }
        depth -= 1;
    }
}

/// The serde path of a field key, checked against the fields that exist.
fn field_path(key: &str) -> Result<Vec<String>, String> {
    let parts: Vec<&str> = key.split('.').collect();
    let (path, rest): (Vec<String>, &[&str]) = match parts.as_slice() {
        ["tool", rest @ ..] => (vec!["tools".into(), "0".into()], rest),
        ["tools", index, rest @ ..] if index.parse::<usize>().is_ok() => {
            (vec!["tools".into(), index.to_string()], rest)
        }
        [role @ ("client" | "server" | "lb"), rest @ ..] => (vec![role.to_string()], rest),
        _ => return Err(format!("unknown key {key:?}")),
    };
    let field = rest.join(".");
    let tool_fields: std::collections::BTreeSet<String>;
    let known = match path[0].as_str() {
        "client" => known_paths_ref(Role::Client),
        "server" => known_paths_ref(Role::Server),
        "lb" => known_paths_ref(Role::Lb),
        _ => {
            tool_fields =
                ["duration", "event_interval", "idempotent", "side_effect", "on_abort", "burst", "input_after"]
                    .into_iter()
                    .map(String::from)
                    .collect();
            &tool_fields
        }
    };
    if field == "name" {
        return Err(format!("{key}: the name comes from --client / --server (or the profile file's name)"));
    }
    if !known.contains(&field) {
        let role = if path[0] == "tools" && parts[0] == "tool" { "tool".to_string() } else { path.join(".") };
        return Err(format!("{UNKNOWN_FIELD}{}", table_fields(&role, rest, known)));
    }
    Ok(path.into_iter().chain(rest.iter().map(|r| r.to_string())).collect())
}

/// The parts of a scenario (a profile, the tools) held in their serde form while a list of
/// overrides edits them: each part is written out at its first edit and read back at
/// [`Drafts::flush`], instead of a round trip per override (`Case::scenario` applies a dozen per
/// generated case). An edit that adds a table (a tagged one, or one a default had left out) reads
/// its part back at once, so the next edit finds every field of the table at its value, as one
/// round trip per edit would. A part read back keeps its serde form for the next edit while the
/// part is what that form says: a key with a value syntax of its own forgets the forms of the
/// parts it sets ([`Drafts::forget`]).
#[derive(Debug, Default)]
pub(crate) struct Drafts {
    client: Draft,
    server: Draft,
    lb: Draft,
    tools: Draft,
}

/// One part's serde form in a list of overrides, and whether it was edited since the part was
/// last read back from it.
#[derive(Debug, Default)]
struct Draft {
    json: Option<Value>,
    edited: bool,
}

impl Drafts {
    /// Reads every part that was edited back into `s`.
    pub(crate) fn flush(&mut self, s: &mut Scenario) -> Result<(), String> {
        self.client.read_into(&mut s.client)?;
        self.server.read_into(&mut s.server)?;
        self.lb.read_into(&mut s.lb)?;
        self.tools.read_into(&mut s.tools)
    }

    /// The serde forms of the parts `targets` (dotted serde paths of the scenario) set are no
    /// longer what the parts hold: forgotten, to be written out again at their next edit.
    fn forget<P: AsRef<str>>(&mut self, targets: &[P]) {
        for target in targets {
            match target.as_ref().split('.').next() {
                Some("client") => self.client = Draft::default(),
                Some("server") => self.server = Draft::default(),
                Some("lb") => self.lb = Draft::default(),
                Some("tools") => self.tools = Draft::default(),
                _ => {}
            }
        }
    }
}

impl Draft {
    /// Reads `part` back from its serde form if it was edited since; the form stays.
    fn read_into<T: serde::de::DeserializeOwned>(&mut self, part: &mut T) -> Result<(), String> {
        if let (true, Some(json)) = (self.edited, &self.json) {
            *part = T::deserialize(json).map_err(|e| e.to_string())?;
        }
        self.edited = false;
        Ok(())
    }
}

/// A part of a scenario that [`Drafts`] edits, with the last two written out on this thread: a
/// search builds every case from one base, so the base's parts are written out once, and each
/// case's first edit of a part starts from a copy (compared whole, so a part that differs is
/// written out again). Two, so that a part a case changed in between (`server.retry` before a
/// server field) does not push the base's out.
trait DraftPart: Serialize + serde::de::DeserializeOwned + PartialEq + Clone + 'static {
    fn last_written() -> &'static std::thread::LocalKey<LastWritten<Self>>;

    /// The serde form of `self`.
    fn written(&self) -> Result<Value, String> {
        Self::last_written().with(|cell| {
            let mut last = cell.borrow_mut();
            if let Some(i) = last.iter().position(|(part, _)| part == self) {
                // The one found first, so the other is the one to go.
                last.swap(0, i);
                return Ok(last[0].1.clone());
            }
            let json = serde_json::to_value(self).map_err(|e| e.to_string())?;
            if last.len() == 2 {
                last.pop();
            }
            last.insert(0, (self.clone(), json.clone()));
            Ok(json)
        })
    }
}

/// The parts last written out, the latest first: at most two.
type LastWritten<T> = std::cell::RefCell<Vec<(T, Value)>>;

thread_local! {
    static WRITTEN_CLIENT: LastWritten<ClientPolicy> = const { std::cell::RefCell::new(Vec::new()) };
    static WRITTEN_SERVER: LastWritten<ServerPolicy> = const { std::cell::RefCell::new(Vec::new()) };
    static WRITTEN_LB: LastWritten<LbConfig> = const { std::cell::RefCell::new(Vec::new()) };
    static WRITTEN_TOOLS: LastWritten<Vec<ToolSpec>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl DraftPart for ClientPolicy {
    fn last_written() -> &'static std::thread::LocalKey<LastWritten<Self>> {
        &WRITTEN_CLIENT
    }
}

impl DraftPart for ServerPolicy {
    fn last_written() -> &'static std::thread::LocalKey<LastWritten<Self>> {
        &WRITTEN_SERVER
    }
}

impl DraftPart for LbConfig {
    fn last_written() -> &'static std::thread::LocalKey<LastWritten<Self>> {
        &WRITTEN_LB
    }
}

impl DraftPart for Vec<ToolSpec> {
    fn last_written() -> &'static std::thread::LocalKey<LastWritten<Self>> {
        &WRITTEN_TOOLS
    }
}

/// Sets the field at a dotted serde path of the scenario (`tools.0.duration`, `tool_jitter`),
/// reading the value by the type of the one it replaces. A path into a profile or the tools
/// edits that part's draft alone (its serde form has no attributes of the scenario's); any other
/// reads the drafts back first and edits the whole scenario.
fn apply_path<P: AsRef<str>>(s: &mut Scenario, drafts: &mut Drafts, path: &[P], value: &str) -> Result<(), String> {
    let parts: Vec<&str> = path.iter().map(AsRef::as_ref).collect();
    match parts.as_slice() {
        ["client", rest @ ..] if !rest.is_empty() => edit_draft(&mut s.client, &mut drafts.client, &parts, value, true),
        ["server", rest @ ..] if !rest.is_empty() => {
            edit_draft(&mut s.server, &mut drafts.server, &parts, value, false)
        }
        ["lb", rest @ ..] if !rest.is_empty() => edit_draft(&mut s.lb, &mut drafts.lb, &parts, value, false),
        ["tools", _, _, ..] => edit_draft(&mut s.tools, &mut drafts.tools, &parts, value, false),
        // A number at the scenario's root, whose serde form is its own (the short keys
        // `tool.jitter`, `app.clients`): read by the type of the one it replaces, as any field.
        ["tool_jitter"] => edit_root(&mut s.tool_jitter, "tool_jitter", value),
        ["clients"] => edit_root(&mut s.clients, "clients", value),
        _ => {
            drafts.flush(s)?;
            edit_whole(s, &parts, value)?;
            drafts.forget(&parts[..1]);
            Ok(())
        }
    }
}

/// Sets `field`, a field at the scenario's root, to `value` read by the type of its current
/// value, through the field's serde form alone.
fn edit_root<T: Serialize + serde::de::DeserializeOwned>(field: &mut T, name: &str, value: &str) -> Result<(), String> {
    let current = serde_json::to_value(&*field).map_err(|e| e.to_string())?;
    let new = profiles::value_from_text(name, value, &current)?;
    *field = serde_json::from_value(new).map_err(|e| e.to_string())?;
    Ok(())
}

/// Sets the field at `path` by a round trip of the whole scenario through its serde form.
fn edit_whole(s: &mut Scenario, path: &[&str], value: &str) -> Result<(), String> {
    // The fields serde skips come back at their defaults: keep the arguments.
    let args = (s.client_arg.take(), s.server_arg.take(), s.scenario_arg.take());
    let profile_args = std::mem::take(&mut s.client_profile_args);
    let edited = edit_part(s, path, 0, value, true);
    (s.client_arg, s.server_arg, s.scenario_arg) = args;
    s.client_profile_args = profile_args;
    edited
}

/// Sets the field at `path[1..]` in the draft of `part` (written out from `part` at its first
/// edit); an edit that added a table reads the draft back into `part` at once.
fn edit_draft<T: DraftPart>(
    part: &mut T,
    draft: &mut Draft,
    path: &[&str],
    value: &str,
    client: bool,
) -> Result<(), String> {
    let json = match &mut draft.json {
        Some(json) => json,
        None => draft.json.insert(part.written()?),
    };
    draft.edited = true;
    if edit_value(json, path, 1, value, client)? == Added::Table {
        // Read back at once, and written out again at the next edit with the table filled in.
        draft.read_into(part)?;
        draft.json = None;
    }
    Ok(())
}

/// Sets the field at `path[from..]` of `part`, the part of the scenario at `path[..from]`
/// (`path` whole names it in messages), by one round trip through its serde form.
fn edit_part<T: Serialize + serde::de::DeserializeOwned>(
    part: &mut T,
    path: &[&str],
    from: usize,
    value: &str,
    client: bool,
) -> Result<(), String> {
    let mut json = serde_json::to_value(&*part).map_err(|e| e.to_string())?;
    edit_value(&mut json, path, from, value, client)?;
    *part = serde_json::from_value(json).map_err(|e| e.to_string())?;
    Ok(())
}

/// What an edit put in its part's serde form: a value, or a table whose fields serde fills in
/// only when the form is read back.
#[derive(Debug, PartialEq, Eq)]
enum Added {
    Value,
    Table,
}

/// Sets the field at `path[from..]` of `json`, the serde form of the part at `path[..from]`.
/// `client`: whether `json` holds the client's `close_handling` (at `close_handling`, or at
/// `client.close_handling` for the whole scenario).
fn edit_value(json: &mut Value, path: &[&str], from: usize, value: &str, client: bool) -> Result<Added, String> {
    let (last, parents) = path.split_last().expect("a field path has a field");
    let mut added = Added::Value;
    let mut node = &mut *json;
    for part in &parents[from..] {
        node = match node {
            // A table left out at its default (`client.http`) is written in empty: serde fills
            // in the fields not set.
            Value::Object(m) => Some(m.entry(*part).or_insert_with(|| {
                added = Added::Table;
                Value::Object(Default::default())
            })),
            Value::Array(a) => part.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
            _ => None,
        }
        .ok_or_else(|| format!("this scenario has no {}", parents.join(".")))?;
    }
    let fields = node.as_object_mut().ok_or_else(|| format!("{} is not a table", parents.join(".")))?;
    let current = fields.get(*last).cloned().unwrap_or(Value::Null);
    let new = profiles::value_from_text(last, value, &current)?;
    if new.is_object() {
        added = Added::Table;
    }
    match (fields.get_mut(*last), new) {
        (Some(Value::Object(old)), Value::Object(new)) if !new.contains_key("kind") => old.extend(new),
        (_, new) => {
            fields.insert(last.to_string(), new);
        }
    }
    if client {
        let client = if from == 0 { json.get("client") } else { Some(&*json) };
        profiles::check_close_handling(client.and_then(|c| c.get("close_handling")))?;
    }
    Ok(added)
}

/// The value of the field at a dotted serde path, written the way `apply_path` reads it
/// (`none` for an absent value, durations as traces write them).
fn show_path(s: &Scenario, path: &str) -> String {
    let json = serde_json::to_value(s).unwrap_or(Value::Null);
    let node = path.split('.').try_fold(&json, |node, part| match node {
        Value::Array(a) => part.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => node.get(part),
    });
    match node {
        None | Some(Value::Null) => "none".into(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(n)) if n.is_f64() => n.as_f64().map(|x| x.to_string()).unwrap_or_default(),
        Some(other) => profiles::toml_value(other),
    }
}

/// Replaces the scenario's faults of `kind` with the comma list `v` of windows (`none`: none of
/// that kind), each read by `parse`; a window given twice is refused.
fn set_windows(
    s: &mut Scenario,
    kind: &str,
    v: &str,
    parse: fn(&str) -> Result<PlannedFault, String>,
) -> Result<(), String> {
    s.faults.remove_kind(kind);
    if v != "none" {
        let parts: Vec<&str> = v.split(',').map(str::trim).collect();
        for (i, part) in parts.iter().enumerate() {
            let fault = parse(part)?;
            if parts[..i].iter().any(|p| parse(p).ok() == Some(fault.clone())) {
                return Err(format!("{part} is given twice"));
            }
            s.faults.push(fault);
        }
    }
    Ok(())
}

/// A short key that is an alias of fields: sets each of `paths` to `value` (any of `none_words`
/// meaning `none`).
fn apply_alias(
    s: &mut Scenario,
    drafts: &mut Drafts,
    paths: &[&str],
    none_words: &[&str],
    value: &str,
) -> Result<(), String> {
    let value = if none_words.contains(&value) { "none" } else { value };
    for path in paths {
        let parts: Vec<&str> = path.split('.').collect();
        apply_path(s, drafts, &parts, value)?;
    }
    Ok(())
}

/// Applies one `key=value`: a short key, or a field by its path.
pub(crate) fn apply(s: &mut Scenario, key: &str, value: &str) -> Result<(), SimError> {
    let mut drafts = Drafts::default();
    apply_drafted(s, &mut drafts, key, value)?;
    drafts.flush(s).map_err(|problem| bad_value(key, value, problem))
}

/// Applies one `key=value` of a list, editing profiles and tools in `drafts`: a key with a value
/// syntax of its own reads the drafts back first. `Scenario::apply_overrides` flushes the drafts
/// after the last, and where anything fails applies the list again one `apply` at a time, so an
/// error names the key whose value it was.
pub(crate) fn apply_drafted(s: &mut Scenario, drafts: &mut Drafts, key: &str, value: &str) -> Result<(), SimError> {
    let bad = |problem: String| bad_value(key, value, problem);
    match find_setting(key) {
        Some(Setting { targets, alias: Some(none_words), .. }) => {
            apply_alias(s, drafts, targets, none_words, value).map_err(bad)
        }
        Some(setting) => {
            drafts.flush(s).map_err(bad)?;
            (setting.apply)(s, value).map_err(bad)?;
            drafts.forget(setting.targets);
            Ok(())
        }
        None => {
            // A field by its path: `targets` names the key's one field, or says why it is none.
            let field = targets(key)?;
            let parts: Vec<&str> = field.iter().flat_map(|f| f.split('.')).collect();
            apply_path(s, drafts, &parts, value).map_err(bad)
        }
    }
}

fn bad_value(key: &str, value: &str, problem: String) -> SimError {
    SimError::BadValue { key: key.to_string(), value: value.to_string(), problem }
}

/// `key=value` applied with a round trip of the whole scenario through its serde form for each
/// field it sets, as `--set` was before [`Drafts`]: what drafted overrides are tested against.
#[cfg(test)]
pub(crate) fn apply_by_round_trips(s: &mut Scenario, key: &str, value: &str) -> Result<(), SimError> {
    let bad = |problem: String| bad_value(key, value, problem);
    let whole = |s: &mut Scenario, path: &str, value: &str| edit_whole(s, &path.split('.').collect::<Vec<_>>(), value);
    match setting(key) {
        Ok(Setting { targets, alias: Some(none_words), .. }) => {
            let value = if none_words.contains(&value) { "none" } else { value };
            targets.iter().try_for_each(|path| whole(s, path, value)).map_err(bad)
        }
        Ok(setting) => (setting.apply)(s, value).map_err(bad),
        Err(_) => {
            targets(key)?;
            let path = field_path(key).map_err(bad)?;
            whole(s, &path.join("."), value).map_err(bad)
        }
    }
}

/// Rejects a list of overrides that sets one field twice (the last would silently win, and for a
/// fault key replace the first): `server.retention=5` and `server.retention.max_events=6` clash.
/// A whole profile chosen first and its fields after (`lb=cdn-alb lb.idle_timeout=30s`, as a
/// search's printed command has them) is the profile with those fields changed, no clash; the
/// other way round, the profile would silently undo the field.
pub(crate) fn check_distinct(overrides: &[(String, String)]) -> Result<(), SimError> {
    let mut seen: Vec<(String, &str)> = Vec::new();
    for (key, value) in overrides {
        for target in targets(key)? {
            let refines_profile = |t: &String| !t.contains('.') && target.starts_with(&format!("{t}."));
            let clash = |t: &String| {
                t == &target
                    || t.starts_with(&format!("{target}."))
                    || (target.starts_with(&format!("{t}.")) && !refines_profile(t))
            };
            if let Some((_, first)) = seen.iter().find(|(t, _)| clash(t)) {
                return Err(SimError::BadValue {
                    key: key.clone(),
                    value: value.clone(),
                    problem: format!("{target} is already set by --set {first}: give each key once"),
                });
            }
            seen.push((target, key));
        }
    }
    Ok(())
}

/// The overrides that still matter: an override whose fields a later one sets again is dropped
/// (what `cli_args` prints, so a printed command never sets a key twice).
pub(crate) fn effective(overrides: &[(String, String)]) -> Vec<(String, String)> {
    let fields = |k: &str| targets(k).unwrap_or_else(|_| vec![k.to_string()]);
    let mut out = Vec::new();
    for (i, (key, value)) in overrides.iter().enumerate() {
        let mine = fields(key);
        let later: BTreeSet<String> = overrides[i + 1..].iter().flat_map(|(k, _)| fields(k)).collect();
        let covered = mine.iter().all(|t| later.iter().any(|l| t == l || t.starts_with(&format!("{l}."))));
        if !covered {
            out.push((key.clone(), value.clone()));
        }
    }
    out
}

/// The key that sets every fault of a kind (`partition` → `fault.partition`); `None` for a name
/// that is no fault kind.
pub fn fault_setting(kind: &str) -> Option<&'static str> {
    match kind {
        "reset" => Some("fault.reset"),
        "partition" => Some("fault.partition"),
        "blackhole" => Some("fault.blackhole"),
        "server-restart" => Some("fault.server_restart"),
        "client-restart" => Some("fault.client_restart"),
        "restart" => Some("fault.restart"),
        "cut" => Some("fault.cut"),
        "deploy" => Some("fault.deploy"),
        "answer" => Some("fault.answer"),
        "malformed" => Some("fault.malformed"),
        "task-reply-lost" => Some("fault.task_reply_lost"),
        _ => None,
    }
}

/// Splits `key=value`, checking the key exists.
pub fn parse_override(text: &str) -> Result<(String, String), SimError> {
    let (k, v) = text.split_once('=').ok_or_else(|| SimError::BadOverride(text.to_string()))?;
    targets(k.trim())?;
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

fn replace_times(s: &mut Scenario, kind: &str, v: &str, make: fn() -> Fault) -> Result<(), String> {
    s.faults.remove_kind(kind);
    if v != "none" {
        let times = parse_times(v)?;
        if let Some(twice) = times.iter().enumerate().find(|(i, t)| times[..*i].contains(t)).map(|(_, t)| *t) {
            return Err(format!("{} is given twice", format_duration(twice)));
        }
        for at in times {
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

/// Replaces every fault of `kind` by the `TARGET@TIME` list in `v` (or none).
fn replace_targeted(s: &mut Scenario, kind: &str, v: &str, make: fn(Target) -> Fault) -> Result<(), String> {
    s.faults.remove_kind(kind);
    if v != "none" {
        let mut seen = Vec::new();
        for part in v.split(',') {
            let (target, at) = parse_targeted(part.trim())?;
            if seen.contains(&(target, at)) {
                return Err(format!("{} is given twice", part.trim()));
            }
            seen.push((target, at));
            s.faults.push(PlannedFault { at, fault: make(target) });
        }
    }
    Ok(())
}

/// A fault key's value as it reads it: the parts, comma-separated, or `none`.
fn show_faults(parts: impl Iterator<Item = String>) -> String {
    let parts: Vec<String> = parts.collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(",")
    }
}

fn show_targeted(s: &Scenario, kind: &str) -> String {
    show_faults(s.faults.faults().iter().filter_map(|f| match &f.fault {
        Fault::Restart { target } | Fault::Cut { target } | Fault::Malformed { target } if f.fault.kind() == kind => {
            Some(format!("{target}@{}", format_duration(f.at)))
        }
        _ => None,
    }))
}

/// Reads `app.client_profiles`: `none`, or `CLIENT=PROFILE` pairs, comma-separated, each profile
/// read as `--client` reads it. Replaces every client's own profile.
fn apply_client_profiles(s: &mut Scenario, v: &str) -> Result<(), String> {
    let mut policies = std::collections::BTreeMap::new();
    let mut args = std::collections::BTreeMap::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty() && *p != "none") {
        let (index, arg) =
            part.split_once('=').ok_or_else(|| format!("{part:?} is not CLIENT=PROFILE (e.g. 1=stateless-2026)"))?;
        let (index, arg) = (index.trim(), arg.trim());
        let index: u32 = index.parse().map_err(|_| format!("{part:?}: {index:?} is not a client index (0, 1, ...)"))?;
        if args.contains_key(&index) {
            return Err(format!("client {index} is given twice"));
        }
        let policy = layers::load(Role::Client, arg, profiles::client, client_problems)
            .map_err(|e| format!("client {index}: {e}"))?;
        policies.insert(index, policy);
        args.insert(index, arg.to_string());
    }
    s.client_profiles = policies;
    s.client_profile_args = args;
    Ok(())
}

/// `app.client_profiles` as it reads it: each client's profile argument (its profile's name when
/// the scenario came from a trace header, which keeps no arguments).
fn show_client_profiles(s: &Scenario) -> String {
    if s.client_profiles.is_empty() {
        return "none".into();
    }
    let parts: Vec<String> = s
        .client_profiles
        .iter()
        .map(|(i, p)| format!("{i}={}", s.client_profile_args.get(i).unwrap_or(&p.name)))
        .collect();
    parts.join(",")
}

/// Reads the `lb` key: a profile name, a file, or an inline table (`{ idle_timeout = "2m" }`).
fn lb_profile(v: &str) -> Result<LbConfig, String> {
    if v.starts_with('{') {
        let mut base = serde_json::to_value(profiles::lb("default").unwrap_or_default()).map_err(|e| e.to_string())?;
        if let (Value::Object(b), Value::Object(t)) = (&mut base, profiles::value_from_text("lb", v, &Value::Null)?) {
            // serde would drop a field it does not know: a typo must not pass for the default.
            let known = known_paths_ref(Role::Lb);
            if let Some(typo) = t.keys().find(|k| !known.iter().any(|p| p == *k || p.starts_with(&format!("{k}.")))) {
                return Err(format!("unknown field {typo:?} in [lb] (known: {})", table_fields("lb", &[typo], known)));
            }
            b.extend(t);
        }
        return serde_json::from_value(base).map_err(|e| e.to_string());
    }
    layers::load(Role::Lb, v, profiles::lb, lb_problems).map_err(|e| e.to_string())
}

/// The balancer `profile` put in front of the scenario's fleet (`current`): a profile picks the
/// balancer (its timeouts, buffering, retries), while how many replicas stand behind it, how it
/// routes sessions among them and whether they share a store are the fleet's. Each of those three
/// the profile leaves at the default profile's value keeps the scenario's own: `--lb alb` on
/// `rolling-upgrade` is its three sticky replicas behind an ALB, not one replica that its deploy
/// fault then refuses. A value the profile sets otherwise (`lb={ replicas = 2 }`, a file's
/// `routing = "sticky-session"`) is the profile's.
fn keep_fleet(current: &LbConfig, mut profile: LbConfig) -> LbConfig {
    let default = profiles::lb("default").unwrap_or_default();
    if profile.replicas == default.replicas {
        profile.replicas = current.replicas;
    }
    if profile.routing == default.routing {
        profile.routing = current.routing;
    }
    if profile.store == default.store {
        profile.store = current.store;
    }
    profile
}

fn show_lb(lb: &LbConfig) -> String {
    if profiles::lb("default").as_ref() == Some(lb) {
        return "default".into();
    }
    let default = profiles::lb("default").unwrap_or_default();
    if (LbConfig { idle_timeout: lb.idle_timeout, ..default.clone() }) == *lb {
        return format!("{{ idle_timeout = \"{}\" }}", show_opt_duration(lb.idle_timeout));
    }
    // Every field that differs from the default profile (a chain of hops included).
    let (Ok(Value::Object(mine)), Ok(Value::Object(base))) = (serde_json::to_value(lb), serde_json::to_value(&default))
    else {
        return format!("{{ idle_timeout = \"{}\" }}", show_opt_duration(lb.idle_timeout));
    };
    let mut fields: Vec<String> = Vec::new();
    for key in base.keys().chain(mine.keys().filter(|k| !base.contains_key(*k))) {
        let value = mine.get(key).unwrap_or(&Value::Null);
        if base.get(key) != Some(value) {
            fields.push(format!("{key} = {}", profiles::toml_value(value)));
        }
    }
    format!("{{ {} }}", fields.join(", "))
}

/// A short key that is an alias of fields: it sets each of its paths to its value, read by the
/// field's type, and shows the first (`none = WORD`: an older spelling of `none` it also reads).
macro_rules! alias {
    ($key:literal => [$($path:literal),+], $help:literal $(, none = $none:literal)?) => {
        Setting {
            key: $key,
            targets: &[$($path),+],
            help: $help,
            apply: |s, v| {
                let mut drafts = Drafts::default();
                apply_alias(s, &mut drafts, &[$($path),+], &[$($none)?], v)?;
                drafts.flush(s)
            },
            show: |s| show_path(s, [$($path),+][0]),
            alias: Some(&[$($none)?]),
        }
    };
}

/// Every short key, in one table that `--set`, `mcpsim profiles` and the sweeps all read: most
/// are aliases of fields (`alias!`: the value is read and shown as the field's own), the rest a
/// value syntax of their own over several fields (a profile, a fault list, a call script).
pub const SETTINGS: &[Setting] = &[
    Setting {
        key: "lb",
        targets: &["lb"],
        help: "load-balancer profile: a name (default), a .toml file, or an inline table { idle_timeout = \"2m\" }",
        apply: |s, v| {
            let lb = lb_profile(v)?;
            s.lb = keep_fleet(&s.lb, lb);
            Ok(())
        },
        show: |s| show_lb(&s.lb),
        alias: None,
    },
    alias!("lb.idle_timeout" => ["lb.idle_timeout"], "load balancer closes a connection silent this long (duration or none)"),
    alias!("server.retention" => ["server.retention.max_events"], "events kept per stream (a count, or none for unbounded)", none = "unbounded"),
    alias!("server.retention_window" => ["server.retention.window"], "events older than this are evicted (duration or none)"),
    alias!("server.unhonourable" => ["server.evicted_id", "server.unknown_id"], "answer to an evicted or unknown Last-Event-ID: gone410, conflict409, silent-head, from-oldest, empty-closed, empty-open"),
    alias!("server.store" => ["server.store"], "event store scope: per-session, or shared-by-request-id (one store for all sessions)"),
    alias!("server.idle_ttl" => ["server.idle_ttl"], "server expires an idle session after this (duration or none)"),
    alias!("server.keepalive" => ["server.keepalive"], "interval of SSE keep-alive comments (duration or none)"),
    Setting {
        key: "server.retry",
        targets: &["server.retry_ms"],
        help: "retry: field sent with priming events (duration or none)",
        apply: |s, v| {
            s.server.retry_ms = opt_duration(v)?.map(|d| d.as_millis() as u64);
            Ok(())
        },
        show: |s| show_opt_duration(s.server.retry_ms.map(Duration::from_millis)),
        alias: None,
    },
    alias!("server.idempotency_keys" => ["server.honour_idempotency_keys"], "server honours idempotency keys across sessions (true/false; a mitigation)"),
    alias!("tool.duration" => ["tools.0.duration"], "how long the scenario's tool runs (duration)"),
    alias!("tool.event_interval" => ["tools.0.event_interval"], "interval of the tool's progress events (duration or none)"),
    alias!("tool.idempotent" => ["tools.0.idempotent"], "whether running the tool twice is harmless (true/false)"),
    alias!("tool.jitter" => ["tool_jitter"], "relative jitter of tool durations drawn from the seed (0.1 = ±10%)"),
    Setting {
        key: "fault.partition",
        targets: &["faults.partition"],
        help: "client cut off from the load balancer over START..END (e.g. 60s..5m; a comma list; or none)",
        apply: |s, v| set_windows(s, "partition", v, parse_partition),
        show: |s| {
            show_faults(s.faults.faults().iter()
                .filter(|f| f.fault.kind() == "partition")
                .map(|f| format!("{}..{}", format_duration(f.at), format_duration(f.at + f.fault.duration()))))
        },
        alias: None,
    },
    Setting {
        key: "fault.blackhole",
        targets: &["faults.blackhole"],
        help: "a silent black hole between the clients and the load balancer over START..END, or one client's as CLIENT@START..END: the connections open at START are dead for good, their bytes lost and neither end told (no end, no reset), and new connections get no answer until END (e.g. 1m..16m, client1@1m..16m; a comma list; or none)",
        apply: |s, v| set_windows(s, "blackhole", v, parse_blackhole),
        show: |s| {
            show_faults(s.faults.faults().iter()
                .filter_map(|f| match &f.fault {
                    Fault::Blackhole { target, duration } => Some(format!(
                        "{}{}..{}",
                        target.map(|t| format!("{t}@")).unwrap_or_default(),
                        format_duration(f.at),
                        format_duration(f.at + *duration)
                    )),
                    _ => None,
                }))
        },
        alias: None,
    },
    Setting {
        key: "fault.reset",
        targets: &["faults.reset"],
        help: "reset every client connection at these times (e.g. 30s,2m, or none)",
        apply: |s, v| replace_times(s, "reset", v, || Fault::Reset),
        show: |s| show_times(s, "reset"),
        alias: None,
    },
    Setting {
        key: "fault.task_reply_lost",
        targets: &["faults.task-reply-lost"],
        help: "from each of these times, drop the next CreateTaskResult a server writes and reset its connection (needs tasks: server.tasks.create_for_tools_over and client.tasks.declares; or none)",
        apply: |s, v| replace_times(s, "task-reply-lost", v, || Fault::TaskReplyLost),
        show: |s| show_times(s, "task-reply-lost"),
        alias: None,
    },
    Setting {
        key: "fault.server_restart",
        targets: &["faults.server-restart"],
        help: "restart the server process at these times (or none)",
        apply: |s, v| replace_times(s, "server-restart", v, || Fault::ServerRestart),
        show: |s| show_times(s, "server-restart"),
        alias: None,
    },
    Setting {
        key: "fault.client_restart",
        targets: &["faults.client-restart"],
        help: "restart the client process (client 0 when there are several) at these times (or none)",
        apply: |s, v| replace_times(s, "client-restart", v, || Fault::ClientRestart),
        show: |s| show_times(s, "client-restart"),
        alias: None,
    },
    Setting {
        key: "fault.restart",
        targets: &["faults.restart"],
        help: "restart one node at a time: TARGET@TIME, TARGET clientN, replicaN or hopN (a hop of lb.hops; the balancer is the last) (e.g. replica1@2m, hop0@90s; a comma list; or none)",
        apply: |s, v| replace_targeted(s, "restart", v, |target| Fault::Restart { target }),
        show: |s| show_targeted(s, "restart"),
        alias: None,
    },
    Setting {
        key: "fault.cut",
        targets: &["faults.cut"],
        help: "reset every connection of one client, every balancer connection to one replica, or every connection through one hop: TARGET@TIME (e.g. client1@30s, replica0@1m, hop0@30s; a comma list; or none)",
        apply: |s, v| replace_targeted(s, "cut", v, |target| Fault::Cut { target }),
        show: |s| show_targeted(s, "cut"),
        alias: None,
    },
    Setting {
        key: "fault.malformed",
        targets: &["faults.malformed"],
        help: "a client's next tools/call POST reaches the server with a body that does not parse (a proxy cut it short, a client bug): CLIENT@TIME, CLIENT clientN (e.g. client0@30s; a comma list; or none); the server reacts as server.on_protocol_error says",
        apply: |s, v| replace_targeted(s, "malformed", v, |target| Fault::Malformed { target }),
        show: |s| show_targeted(s, "malformed"),
        alias: None,
    },
    Setting {
        key: "fault.deploy",
        targets: &["faults.deploy"],
        help: "rolling deploy over lb.replicas (set that first): AT/INTERVAL without draining, AT/INTERVAL/DRAIN with (e.g. 2m/30s/1m; a comma list; or none)",
        apply: |s, v| {
            s.faults.remove_kind("deploy");
            if v != "none" {
                for part in v.split(',') {
                    s.faults.push(parse_deploy(part, s.lb.replicas)?);
                }
            }
            Ok(())
        },
        show: |s| {
            show_faults(s.faults.faults().iter()
                .filter_map(|f| match &f.fault {
                    Fault::Deploy { interval, drain, .. } => Some(format!(
                        "{}/{}{}",
                        format_duration(f.at),
                        format_duration(*interval),
                        drain.map(|d| format!("/{}", format_duration(d))).unwrap_or_default()
                    )),
                    _ => None,
                }))
        },
        alias: None,
    },
    Setting {
        key: "fault.answer",
        targets: &["faults.answer"],
        help: "a hop answers every new request itself (a route reload, a deploy of the proxy): HOP=STATUS@START..END, HOP hopN (a hop of lb.hops; the balancer is the last), STATUS 400 to 599 (e.g. hop0=404@60s..90s; a comma list; or none)",
        apply: |s, v| {
            s.faults.remove_kind("answer");
            if v != "none" {
                for part in v.split(',') {
                    let fault = parse_answer(part.trim())?;
                    if s.faults.faults().contains(&fault) {
                        return Err(format!("{} is given twice", part.trim()));
                    }
                    s.faults.push(fault);
                }
            }
            Ok(())
        },
        show: |s| {
            show_faults(s.faults.faults().iter()
                .filter_map(|f| match &f.fault {
                    Fault::Answer { target, status, duration } => Some(format!(
                        "{target}={status}@{}..{}",
                        format_duration(f.at),
                        format_duration(f.at + *duration)
                    )),
                    _ => None,
                }))
        },
        alias: None,
    },
    alias!("client.backoff_initial" => ["client.reconnect.initial"], "first reconnect delay (duration)"),
    alias!("client.backoff_factor" => ["client.reconnect.factor"], "growth factor of the reconnect delay"),
    alias!("client.backoff_max" => ["client.reconnect.max"], "cap of the reconnect delay (duration)"),
    alias!("client.max_attempts" => ["client.reconnect.max_attempts"], "consecutive failed reconnects before giving up (a count, or none for unlimited)", none = "unlimited"),
    alias!("client.persistence" => ["client.persistence"], "where the client keeps session id and last event ids: durable or volatile"),
    alias!("client.request_timeout" => ["client.request_timeout"], "client gives up on a call after this and cancels it (duration or none)"),
    alias!("client.idempotency_keys" => ["client.send_idempotency_keys"], "client sends an idempotency key with every tool call (true/false; a mitigation)"),
    Setting {
        key: "net.latency",
        targets: &["net"],
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
        alias: None,
    },
    alias!("run.liveness_grace" => ["liveness_grace"], "after the faults heal and the last tool is due, calls must resolve within this (duration)"),
    Setting {
        // Not an alias: the field is left out of traces at its default, so it has no value to show by path.
        key: "run.max_reconnects_per_hour",
        targets: &["max_reconnects_per_hour"],
        help: "bounded-reconnects: the most stream reconnects a client may make in any hour (a count)",
        apply: |s, v| {
            s.max_reconnects_per_hour = v.parse().map_err(|_| format!("{v:?} is not a count"))?;
            Ok(())
        },
        show: |s| s.max_reconnects_per_hour.to_string(),
        alias: None,
    },
    Setting {
        key: "run.max_delivery_delay",
        targets: &["max_delivery_delay"],
        help: "timely-delivery: the longest an event stored while its reader's connection was open may take to reach the application (duration; default 5s)",
        apply: |s, v| {
            s.max_delivery_delay = Some(parse_duration(v)?);
            Ok(())
        },
        show: |s| format_duration(s.max_delivery_delay.unwrap_or(Duration::from_micros(DEFAULT_MAX_DELIVERY_DELAY_US))),
        alias: None,
    },
    Setting {
        key: "app.calls",
        targets: &["calls"],
        help: "the call script: `;`-separated calls, each a time (1s; +90s after the previous call settled; 1s+90s) and optional tool=, client=, call=, on_error=give-up|reissue|reinitialize-reissue, max_reissues= (none: no call)",
        apply: |s, v| {
            s.calls = super::script::parse_calls(s, v)?;
            Ok(())
        },
        show: super::script::show_calls,
        alias: None,
    },
    Setting {
        key: "app.notifications",
        targets: &["notifications", "notify_interval"],
        help: "server notifications on every session's standalone stream, independent of faults: INTERVAL[,count=N][,from=T][,until=T] (a count or an end is needed), or none; replaces the family's notify_interval (notifications only until the faults heal)",
        apply: |s, v| {
            s.notify_interval = None;
            s.notifications = match v {
                "none" | "" => None,
                v => Some(super::notifications::NotificationSpec::parse(v)?),
            };
            Ok(())
        },
        show: |s| s.notifications.as_ref().map_or("none".into(), |n| n.show()),
        alias: None,
    },
    Setting {
        key: "app.operator_deletes",
        targets: &["deletes"],
        help: "times an operator DELETEs a client's session from outside it: 2m (client 0) or 2m@1, comma-separated, or none",
        apply: super::script::apply_operator_deletes,
        show: super::script::show_operator_deletes,
        alias: None,
    },
    alias!("app.clients" => ["clients"], "how many logical clients the application runs, each with its own session (1 to 64); calls name theirs with client="),
    Setting {
        key: "app.client_profiles",
        targets: &["client_profiles"],
        help: "logical clients with a client profile of their own, a fleet of several kinds: CLIENT=PROFILE, comma-separated (e.g. 1=stateless-2026,2=docs/examples/py-sdk-auto.toml; a built-in name or a file, as --client takes it), or none; the others run --client",
        apply: apply_client_profiles,
        show: show_client_profiles,
        alias: None,
    },
    Setting {
        key: "run.reproduces",
        targets: &["reproduces"],
        help: "the public report a field-failure reproduction reproduces (text, e.g. rust-sdk#958; none to clear)",
        apply: |s, v| {
            s.reproduces = (v != "none" && !v.is_empty()).then(|| v.to_string());
            Ok(())
        },
        show: |s| s.reproduces.clone().unwrap_or_else(|| "none".into()),
        alias: None,
    },
];

// ---------------------------------------------------------------------------------------------
// Validation: the one place
// ---------------------------------------------------------------------------------------------

fn problem(path: &str, message: impl Into<String>) -> Problem {
    Problem { path: path.to_string(), message: message.into() }
}

/// A duration that must be absent (`none`) or within `min..=MAX_DURATION`; zero never means none.
fn opt_span(out: &mut Vec<Problem>, path: &str, d: Option<Duration>, min: Duration, none_means: &str) {
    let Some(d) = d else { return };
    if d.is_zero() {
        out.push(problem(
            path,
            format!(
                "0 does not mean {none_means}: write none for that, or a duration of at least {}",
                format_duration(min.max(Duration::from_millis(1)))
            ),
        ));
    } else if d < min {
        out.push(problem(path, format!("{} is below the least allowed, {}", format_duration(d), format_duration(min))));
    } else {
        span(out, path, d);
    }
}

fn span(out: &mut Vec<Problem>, path: &str, d: Duration) {
    if d > MAX_DURATION {
        out.push(problem(
            path,
            format!("{} is above the most a run may ask for, {}", format_duration(d), format_duration(MAX_DURATION)),
        ));
    }
}

fn fraction(out: &mut Vec<Problem>, path: &str, x: f64) {
    if !(x.is_finite() && (0.0..1.0).contains(&x)) {
        out.push(problem(path, format!("{x} is not in [0, 1)")));
    }
}

/// How one field of a policy is checked. Every field is in [`FIELD_RULES`] (a test fails for
/// one that is not), so a new field cannot go unchecked by oversight: it gets a rule here, or
/// `Free` (serde's reading is the whole check: an enum, a bool, a name) or `Hand` (a rule of
/// its own in `client_problems` / `server_problems` / `lb_problems` / `problems`, where rules
/// that span fields live).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Rule {
    /// Any value serde reads.
    Free,
    /// A table: its fields have rules of their own.
    Table,
    /// Checked by a rule written by hand below.
    Hand,
    /// `none`, or a duration of at least `min` and at most [`MAX_DURATION`]; zero never means
    /// none (`none_means` says what none does).
    OptSpan { min: Duration, none_means: &'static str },
    /// `none`, or a duration up to [`MAX_DURATION`], zero included (it means something: SEP-1699
    /// polling closes a stream at once).
    ZeroOrSpan,
    /// An HTTP status, 100 to 599.
    Status,
}

const MS: Duration = Duration::from_millis(1);

/// Every field of the client, server and load-balancer policies (by its path under `client.`,
/// `server.`, `lb.`; a list's entries as `*`) and how it is checked.
pub(crate) const FIELD_RULES: &[(&str, Rule)] = &[
    ("client.name", Rule::Free),
    ("client.persistence", Rule::Free),
    ("client.request_timeout", Rule::Hand),
    ("client.open_standalone_stream", Rule::Free),
    ("client.send_idempotency_keys", Rule::Free),
    ("client.sessions", Rule::Free),
    ("client.close_handling", Rule::Free),
    ("client.close_handling.kind", Rule::Free),
    ("client.close_handling.on_404", Rule::Free),
    ("client.close_handling.on_empty_resume", Rule::Free),
    ("client.close_handling.on_give_up", Rule::Free),
    ("client.close_handling.on_unresumable_post", Rule::Free),
    ("client.close_handling.resume_token_survives_recut", Rule::Free),
    ("client.close_handling.resume_post_needs_event_id", Rule::Free),
    ("client.timeout_resets_on_progress", Rule::Free),
    ("client.max_unhonoured_resumes", Rule::Free),
    ("client.report_stream_given_up", Rule::Free),
    ("client.reconnect", Rule::Table),
    ("client.reconnect.initial", Rule::Hand),
    ("client.reconnect.factor", Rule::Hand),
    ("client.reconnect.max", Rule::Hand),
    ("client.reconnect.max_attempts", Rule::Free),
    ("client.reconnect.counter_reset", Rule::Free),
    ("client.reconnect.retry_field", Rule::Free),
    ("client.reconnect.first_immediate", Rule::Free),
    ("client.reconnect.jitter", Rule::Hand),
    ("client.http", Rule::Table),
    ("client.http.keep_alive", Rule::Free),
    ("client.http.idle_expiry", Rule::OptSpan { min: MS, none_means: "no idle expiry" }),
    ("client.http.headers_timeout", Rule::OptSpan { min: MS, none_means: "no headers timeout" }),
    ("client.http.body_timeout", Rule::OptSpan { min: MS, none_means: "no body timeout" }),
    ("client.http.retry", Rule::Free),
    ("client.http.reuse_after", Rule::Free),
    ("client.close_handling.lost_session_answers", Rule::Free),
    ("client.close_handling.lost_session_on_resume", Rule::Free),
    ("client.close_handling.resume_405_ends_stream", Rule::Free),
    ("client.close_handling.refused_resume_ends_stream", Rule::Free),
    ("client.close_handling.resumed_needs_event_id", Rule::Free),
    ("client.close_handling.modern_reissue", Rule::Free),
    ("client.standalone_loss", Rule::Free),
    ("client.standalone_405", Rule::Free),
    ("client.await_standalone_head", Rule::Free),
    ("client.era", Rule::Table),
    ("client.era.mode", Rule::Free),
    ("client.era.cache", Rule::Free),
    ("client.era.reprobe_on_failure", Rule::Free),
    ("client.era.fallback_on_no_answer", Rule::Free),
    ("client.tasks", Rule::Table),
    ("client.tasks.declares", Rule::Free),
    ("client.tasks.honour_poll_interval", Rule::Free),
    ("client.tasks.poll_every", Rule::OptSpan { min: MS, none_means: "(always set)" }),
    ("client.tasks.persist_ids", Rule::Free),
    ("client.tasks.sends_mcp_name", Rule::Free),
    ("client.tasks.not_found", Rule::Free),
    ("client.tasks.cancel_after", Rule::OptSpan { min: MS, none_means: "never" }),
    ("client.tasks.answer_input_after", Rule::OptSpan { min: Duration::ZERO, none_means: "never" }),
    ("client.subscriptions", Rule::Table),
    ("client.subscriptions.listen", Rule::Free),
    ("client.subscriptions.on_abrupt_end", Rule::Free),
    ("server.name", Rule::Free),
    ("server.event_ids", Rule::Free),
    ("server.store", Rule::Free),
    ("server.replay", Rule::Free),
    ("server.unknown_id", Rule::Free),
    ("server.evicted_id", Rule::Free),
    ("server.retry_ms", Rule::Hand),
    ("server.keepalive", Rule::Hand),
    ("server.idle_ttl", Rule::Hand),
    ("server.idle_rule", Rule::Free),
    ("server.delete_running_tool", Rule::Free),
    ("server.delete_unknown_status", Rule::Status),
    ("server.delete_status", Rule::Status),
    ("server.second_get", Rule::Free),
    ("server.honour_idempotency_keys", Rule::Free),
    ("server.sessions", Rule::Free),
    ("server.disconnect_cancels", Rule::Free),
    ("server.retention", Rule::Table),
    ("server.retention.max_events", Rule::Free),
    ("server.retention.window", Rule::Hand),
    ("server.retention.drop_on_response", Rule::Free),
    ("server.priming", Rule::Table),
    ("server.priming.post", Rule::Free),
    ("server.priming.standalone", Rule::Free),
    ("server.priming.resume", Rule::Free),
    ("server.keepalive_timer", Rule::Free),
    ("server.standalone_priming", Rule::Free),
    ("server.fresh_get", Rule::Free),
    ("server.finished_resume", Rule::Free),
    ("server.resumed_on_response", Rule::Free),
    ("server.resume_while_attached", Rule::Free),
    ("server.detached_request_events", Rule::Free),
    ("server.close_request_streams", Rule::ZeroOrSpan),
    ("server.close_idle_standalone", Rule::OptSpan { min: MS, none_means: "no idle close" }),
    ("server.dead_stream", Rule::Free),
    ("server.unknown_session", Rule::Free),
    ("server.unknown_session_code", Rule::Free),
    ("server.sessionless_get_status", Rule::Status),
    ("server.sessionless_get", Rule::Free),
    ("server.sessionless_cancel", Rule::Free),
    ("server.idle_reset", Rule::Free),
    ("server.expire_running_tool", Rule::Free),
    ("server.id_stamp", Rule::Free),
    ("server.max_sessions", Rule::Hand),
    ("server.keep_alive_timeout", Rule::OptSpan { min: MS, none_means: "no keep-alive timeout" }),
    ("server.event_store", Rule::Free),
    ("server.resume_without_store", Rule::Free),
    ("server.response_mode", Rule::Free),
    ("server.after_replay", Rule::Free),
    ("server.replay_scope", Rule::Free),
    ("server.disconnect_cancel_ignored", Rule::Free),
    ("server.on_failed_write", Rule::Free),
    ("server.on_protocol_error", Rule::Free),
    ("server.eras", Rule::Free),
    ("server.modern_session", Rule::Free),
    ("server.eras_after_restart", Rule::Free),
    ("server.tasks", Rule::Table),
    ("server.tasks.create_for_tools_over", Rule::ZeroOrSpan),
    ("server.tasks.ttl", Rule::OptSpan { min: MS, none_means: "an unlimited TTL" }),
    ("server.tasks.poll_interval", Rule::OptSpan { min: MS, none_means: "(always set)" }),
    ("server.tasks.expiry", Rule::Table),
    ("server.tasks.expiry.working_at_ttl", Rule::Free),
    ("server.tasks.expiry.terminal_kept_ttls", Rule::Free),
    ("server.tasks.expiry.sweep", Rule::Free),
    ("server.tasks.store", Rule::Free),
    ("server.tasks.routing", Rule::Free),
    ("server.tasks.on_cancel", Rule::Free),
    ("server.subscriptions", Rule::Table),
    ("server.subscriptions.changes", Rule::Free),
    ("server.subscriptions.bus", Rule::Free),
    ("lb.idle_timeout", Rule::Hand),
    ("lb.max_lifetime", Rule::Hand),
    ("lb.cut_mode", Rule::Free),
    ("lb.hold_headers", Rule::Free),
    ("lb.replicas", Rule::Hand),
    ("lb.routing", Rule::Free),
    ("lb.store", Rule::Free),
    ("lb.hops", Rule::Hand),
    ("lb.hops.*.idle_timeout", Rule::Hand),
    ("lb.hops.*.max_lifetime", Rule::Hand),
    ("lb.hops.*.comments_count", Rule::Free),
    ("lb.hops.*.cut_mode", Rule::Free),
    ("lb.hops.*.hold_headers", Rule::Free),
    ("lb.hops.*.first_byte_timeout", Rule::Hand),
    ("lb.hops.*.timeout_status", Rule::Hand),
    ("lb.hops.*.buffer", Rule::Hand),
    ("lb.hops.*.flush_interval", Rule::Hand),
    ("lb.hops.*.hold_tail", Rule::Free),
    ("lb.upstream_keep_alive", Rule::Free),
    ("lb.retry_upstream", Rule::Free),
    ("lb.keep_alive_timeout", Rule::Free),
    ("lb.hops.*.buffer_head", Rule::Free),
    ("lb.hops.*.keep_alive_timeout", Rule::Free),
    ("lb.hops.*.drop_request_headers", Rule::Free),
    ("lb.hops.*.drop_response_headers", Rule::Free),
];

/// The last policy of one kind whose [`FIELD_RULES`] were walked, with what the walk found.
type Walked<T> = std::cell::RefCell<Option<(T, Vec<Problem>)>>;

thread_local! {
    static WALKED_CLIENT: Walked<ClientPolicy> = const { std::cell::RefCell::new(None) };
    static WALKED_SERVER: Walked<ServerPolicy> = const { std::cell::RefCell::new(None) };
    static WALKED_LB: Walked<LbConfig> = const { std::cell::RefCell::new(None) };
}

/// [`rule_problems`] of `policy`, walked again only when it differs from the last policy of its
/// kind walked on this thread. A run validates its scenario, and a search validates each case
/// once when it builds it and once more when it runs it: the walk writes the whole policy out in
/// its serde form (about 27 000 instructions for a client), a comparison of two policies a few
/// hundred. The policies are compared whole, so what is returned is what a walk would find.
fn remembered<T: PartialEq + Clone + Serialize + 'static>(
    walked: &'static std::thread::LocalKey<Walked<T>>,
    role: &str,
    policy: &T,
) -> Vec<Problem> {
    walked.with(|cell| {
        if let Some((last, found)) = &*cell.borrow() {
            if last == policy {
                return found.clone();
            }
        }
        let found = rule_problems(role, policy);
        *cell.borrow_mut() = Some((policy.clone(), found.clone()));
        found
    })
}

/// The problems [`FIELD_RULES`] finds in one policy (`role`: `client`, `server` or `lb`),
/// each by its path relative to the policy.
fn rule_problems(role: &str, policy: &impl Serialize) -> Vec<Problem> {
    fn at<'a>(v: &'a Value, parts: &[&str], path: String, out: &mut Vec<(String, &'a Value)>) {
        let join = |p: &str| if path.is_empty() { p.to_string() } else { format!("{path}.{p}") };
        match parts.split_first() {
            None => out.push((path, v)),
            Some((&"*", rest)) => {
                for (i, item) in v.as_array().into_iter().flatten().enumerate() {
                    at(item, rest, join(&i.to_string()), out);
                }
            }
            Some((part, rest)) => {
                if let Some(next) = v.get(part) {
                    at(next, rest, join(part), out);
                }
            }
        }
    }
    let json = serde_json::to_value(policy).unwrap_or(Value::Null);
    let prefix = format!("{role}.");
    let mut out = Vec::new();
    for (path, rule) in FIELD_RULES {
        // Most fields have no rule of this list: walk only to those that do.
        if matches!(rule, Rule::Free | Rule::Table | Rule::Hand) {
            continue;
        }
        let Some(rel) = path.strip_prefix(&prefix) else { continue };
        let mut values = Vec::new();
        at(&json, &rel.split('.').collect::<Vec<_>>(), String::new(), &mut values);
        for (path, v) in values {
            let duration = || v.as_str().and_then(|t| parse_duration(t).ok());
            match rule {
                Rule::Free | Rule::Table | Rule::Hand => {}
                Rule::OptSpan { min, none_means } => opt_span(&mut out, &path, duration(), *min, none_means),
                Rule::ZeroOrSpan => {
                    if let Some(d) = duration() {
                        span(&mut out, &path, d);
                    }
                }
                Rule::Status => {
                    if let Some(status) = v.as_u64().filter(|s| !(100..=599).contains(s)) {
                        out.push(problem(&path, format!("{status} is no HTTP status")));
                    }
                }
            }
        }
    }
    out
}

/// What is wrong with a client policy.
pub(crate) fn client_problems(c: &ClientPolicy) -> Vec<Problem> {
    let mut out = remembered(&WALKED_CLIENT, "client", c);
    let r = &c.reconnect;
    if r.initial < Duration::from_millis(1) {
        out.push(problem(
            "reconnect.initial",
            "the first reconnect delay must be at least 1ms (first_immediate = true makes the first one immediate)",
        ));
    }
    span(&mut out, "reconnect.initial", r.initial);
    span(&mut out, "reconnect.max", r.max);
    if !(r.factor.is_finite() && r.factor >= 1.0) {
        out.push(problem(
            "reconnect.factor",
            format!("{} is below 1: the delay would shrink (1 is a fixed delay)", r.factor),
        ));
    }
    if r.max < r.initial {
        out.push(problem(
            "reconnect.max",
            format!(
                "the cap {} is below the first delay {} (reconnect.initial)",
                format_duration(r.max),
                format_duration(r.initial)
            ),
        ));
    }
    fraction(&mut out, "reconnect.jitter", r.jitter);
    opt_span(&mut out, "request_timeout", c.request_timeout, Duration::from_millis(1), "no timeout");
    out
}

/// What is wrong with a server policy.
pub(crate) fn server_problems(s: &ServerPolicy) -> Vec<Problem> {
    let mut out = remembered(&WALKED_SERVER, "server", s);
    opt_span(&mut out, "keepalive", s.keepalive, MIN_KEEPALIVE, "no keep-alives");
    opt_span(&mut out, "idle_ttl", s.idle_ttl, Duration::from_millis(1), "no expiry");
    opt_span(&mut out, "retention.window", s.retention.window, Duration::from_millis(1), "no time limit");
    if s.retry_ms == Some(0) {
        out.push(problem("retry_ms", "0 does not mean no retry: field: write none for that, or at least 1 (ms)"));
    }
    if let Some(ms) = s.retry_ms {
        span(&mut out, "retry_ms", Duration::from_millis(ms));
    }
    if s.max_sessions == Some(0) {
        out.push(problem("max_sessions", "0 refuses every session: at least 1, or none for no cap"));
    }
    out
}

/// What is wrong with a load balancer.
pub(crate) fn lb_problems(lb: &LbConfig) -> Vec<Problem> {
    let mut out = remembered(&WALKED_LB, "lb", lb);
    opt_span(&mut out, "idle_timeout", lb.idle_timeout, Duration::from_millis(1), "no idle timeout");
    opt_span(&mut out, "max_lifetime", lb.max_lifetime, Duration::from_millis(1), "no lifetime");
    if !(1..=MAX_REPLICAS).contains(&lb.replicas) {
        out.push(problem("replicas", format!("{} replicas: a balancer has 1 to {MAX_REPLICAS}", lb.replicas)));
    }
    if lb.hops.len() > MAX_HOPS {
        out.push(problem(
            "hops",
            format!("{} hops: a chain has at most {MAX_HOPS} in front of the balancer", lb.hops.len()),
        ));
    }
    for (i, hop) in lb.hops.iter().enumerate() {
        let at = |field: &str| format!("hops.{i}.{field}");
        opt_span(&mut out, &at("idle_timeout"), hop.idle_timeout, Duration::from_millis(1), "no idle timeout");
        opt_span(&mut out, &at("max_lifetime"), hop.max_lifetime, Duration::from_millis(1), "no lifetime");
        opt_span(&mut out, &at("first_byte_timeout"), hop.first_byte_timeout, Duration::from_millis(1), "no timeout");
        opt_span(&mut out, &at("flush_interval"), hop.flush_interval, Duration::from_millis(1), "no interval");
        if hop.buffer == Some(0) {
            out.push(problem(&at("buffer"), "0 does not mean no buffering: write none for that".to_string()));
        }
        if !(500..=599).contains(&hop.timeout_status) {
            out.push(problem(&at("timeout_status"), format!("{} is no 5xx status", hop.timeout_status)));
        }
    }
    out
}

/// What is wrong with a tool.
pub(crate) fn tool_problems(t: &ToolSpec) -> Vec<Problem> {
    let mut out = Vec::new();
    span(&mut out, "duration", t.duration);
    opt_span(&mut out, "event_interval", t.event_interval, MIN_EVENT_INTERVAL, "a silent tool");
    if !(1..=MAX_BURST).contains(&t.burst) {
        out.push(problem("burst", format!("{} events a tick: 1 to {MAX_BURST}", t.burst)));
    }
    opt_span(&mut out, "input_after", t.input_after, Duration::from_millis(1), "a tool that asks for nothing");
    out
}

/// Everything wrong with a scenario, each field by its serde path. A list longer than its cap
/// ([`LIST_CAPS`]) is the only problem reported: nothing looks at its entries.
pub(crate) fn problems(s: &Scenario) -> Vec<Problem> {
    let lens = [s.tools.len(), s.calls.len(), s.deletes.len(), s.bogus_resumes.len(), s.empty_resumes.len()];
    let too_long: Vec<Problem> =
        LIST_CAPS.iter().zip(lens).filter_map(|((list, _), len)| list_problem(list, len)).collect();
    if !too_long.is_empty() {
        return too_long;
    }
    let prefixed = |prefix: &str, list: Vec<Problem>| {
        list.into_iter()
            .map(|p| Problem { path: format!("{prefix}.{}", p.path), message: p.message })
            .collect::<Vec<_>>()
    };
    let mut out = prefixed("client", client_problems(&s.client));
    for (i, policy) in &s.client_profiles {
        out.extend(prefixed(&format!("client_profiles.{i}"), client_problems(policy)));
    }
    out.extend(prefixed("server", server_problems(&s.server)));
    out.extend(prefixed("lb", lb_problems(&s.lb)));
    for (i, t) in s.tools.iter().enumerate() {
        out.extend(prefixed(&format!("tools.{i}"), tool_problems(t)));
    }
    fraction(&mut out, "tool_jitter", s.tool_jitter);
    opt_span(&mut out, "notify_interval", s.notify_interval, MIN_EVENT_INTERVAL, "no notifications");
    span(&mut out, "liveness_grace", s.liveness_grace);
    if let Some(n) = &s.notifications {
        span(&mut out, "notifications.interval", n.interval);
        if n.interval < MIN_EVENT_INTERVAL {
            out.push(problem("notifications.interval", "notifications need an interval of at least 1ms".to_string()));
        }
        span(&mut out, "notifications.from", n.from);
        if let Some(u) = n.until {
            span(&mut out, "notifications.until", u);
            if u <= n.from {
                out.push(problem("notifications.until", "the end must come after from".to_string()));
            }
        }
        match n.count {
            Some(0) => out.push(problem("notifications.count", "0 notifications: write none for no notifications")),
            Some(c) if n.interval.saturating_mul(c) > MAX_DURATION => out.push(problem(
                "notifications.count",
                format!("{c} notifications every {:?} outlast a run (at most 24h)", n.interval),
            )),
            None if n.until.is_none() => out.push(problem(
                "notifications",
                "notifications need a count or an end (count=N or until=T): a run must end".to_string(),
            )),
            _ => {}
        }
        if s.notify_interval.is_some() {
            out.push(problem("notifications", "set notify_interval or app.notifications, not both".to_string()));
        }
    }
    if !(1..=MAX_CLIENTS).contains(&s.clients) {
        out.push(problem("clients", format!("{} clients: a scenario has 1 to {MAX_CLIENTS}", s.clients)));
    }
    if let Some(p) = s.clients_problem() {
        out.push(problem("calls", p));
    }
    if let Some(i) = s.client_profiles.keys().find(|i| **i >= s.clients) {
        out.push(problem(
            "client_profiles",
            format!(
                "client {i} is given a profile, but the scenario has only {} client(s) (0 to {})",
                s.clients,
                s.clients.saturating_sub(1)
            ),
        ));
    }
    for c in &s.calls {
        span(&mut out, "calls.at", c.at);
        if let Some(gap) = c.after_idle {
            span(&mut out, "calls.after_idle", gap);
        }
        if c.max_reissues > MAX_REISSUES {
            out.push(problem("calls.max_reissues", format!("{} re-issues: at most {MAX_REISSUES}", c.max_reissues)));
        }
        if s.tool(&c.tool).is_none() {
            out.push(problem(
                "calls.tool",
                format!("call {} names tool {:?}, which the scenario does not offer", c.call.0, c.tool),
            ));
        }
    }
    for (i, d) in s.deletes.iter().enumerate() {
        span(&mut out, "deletes.at", d.at);
        if s.deletes[..i].contains(d) {
            let by = if d.by == super::DeleteBy::Operator { "an operator's" } else { "the application's" };
            out.push(problem(
                "deletes",
                format!("{by} delete of client {}'s session at {} is given twice", d.client, format_duration(d.at)),
            ));
        }
    }
    for (i, c) in s.calls.iter().enumerate() {
        if let Some(first) = s.calls[..i].iter().position(|o| o.call == c.call) {
            out.push(problem(
                "calls.call",
                format!(
                    "calls {first} and {i} have the same key {}: a key names one call (its re-sends share it)",
                    c.call.0
                ),
            ));
        }
    }
    for r in &s.bogus_resumes {
        span(&mut out, "bogus_resumes.at", r.at);
        match &r.id {
            ResumeId::Given(id) if id.is_empty() => {
                out.push(problem("bogus_resumes.id", "a bogus resume needs a Last-Event-ID to send".to_string()))
            }
            ResumeId::Given(_) => {}
            ResumeId::ReceivedBy { nth: 0, .. } => {
                out.push(problem("bogus_resumes.id", "id.nth counts a client's events from 1".to_string()))
            }
            ResumeId::ReceivedBy { client, .. } if *client == r.client => out.push(problem(
                "bogus_resumes.id",
                format!("client {client} would resume with an id of its own: id.client must name another client"),
            )),
            ResumeId::ReceivedBy { .. } => {}
        }
    }
    for e in &s.empty_resumes {
        span(&mut out, "empty_resumes.at", e.at);
        if !(1..=MAX_EMPTY_RESUMES).contains(&e.count) {
            out.push(problem(
                "empty_resumes.count",
                format!("{} resumes answered empty: 1 to {MAX_EMPTY_RESUMES}", e.count),
            ));
        }
    }
    if s.faults.len() > MAX_FAULTS {
        out.push(problem("faults", format!("{} faults planned: at most {MAX_FAULTS}", s.faults.len())));
    }
    let faults = s.faults.faults();
    for (i, f) in faults.iter().enumerate() {
        span(&mut out, "faults", f.at + f.fault.duration());
        if faults[..i].contains(f) {
            out.push(problem("faults", format!("{f} is planned twice")));
        }
    }
    for f in faults {
        match &f.fault {
            Fault::Restart { target } | Fault::Cut { target } => match target {
                Target::Client(i) if *i >= s.clients => {
                    out.push(problem("faults", format!("{f}: the scenario has {} client(s)", s.clients)))
                }
                Target::Replica(i) if *i >= s.lb.replicas => out.push(problem(
                    "faults",
                    format!("{f}: the balancer has {} replica(s) (lb.replicas)", s.lb.replicas),
                )),
                Target::Hop(i) if *i as usize > s.lb.hops.len() => out.push(problem(
                    "faults",
                    format!("{f}: the chain has hop0..hop{n} ({n} in lb.hops, then the balancer)", n = s.lb.hops.len()),
                )),
                _ => {}
            },
            Fault::Answer { target, status, .. } => {
                match target {
                    Target::Hop(i) if *i as usize > s.lb.hops.len() => out.push(problem(
                        "faults",
                        format!(
                            "{f}: the chain has hop0..hop{n} ({n} in lb.hops, then the balancer)",
                            n = s.lb.hops.len()
                        ),
                    )),
                    Target::Hop(_) => {}
                    _ => out.push(problem("faults", format!("{f}: only a hop (hopN) answers by itself"))),
                }
                if !(400..=599).contains(status) {
                    out.push(problem("faults", format!("{f}: {status} is no 4xx or 5xx status")));
                }
            }
            Fault::Blackhole { target: Some(target), .. } => match target {
                Target::Client(i) if *i >= s.clients => {
                    out.push(problem("faults", format!("{f}: the scenario has {} client(s)", s.clients)))
                }
                Target::Client(_) => {}
                _ => out.push(problem("faults", format!("{f}: a black hole catches a client's connections (clientN)"))),
            },
            Fault::Malformed { target } => match target {
                Target::Client(i) if *i >= s.clients => {
                    out.push(problem("faults", format!("{f}: the scenario has {} client(s)", s.clients)))
                }
                Target::Client(_) => {}
                _ => out.push(problem("faults", format!("{f}: only a client (clientN) sends a tools/call"))),
            },
            Fault::TaskReplyLost
                if s.server.tasks.create_for_tools_over.is_none() || !s.client_policies().any(|c| c.tasks.declares) =>
            {
                out.push(problem(
                    "faults",
                    format!(
                        "{f}, but no call is answered with a task: set server.tasks.create_for_tools_over and client.tasks.declares"
                    ),
                ))
            }
            Fault::Deploy { replicas, .. } if *replicas != s.lb.replicas => out.push(problem(
                "faults",
                format!("{f}, but lb.replicas is {}: set lb.replicas before fault.deploy", s.lb.replicas),
            )),
            _ => {}
        }
    }
    let NetParams { latency_min, latency_max } = s.net;
    if latency_max < latency_min || latency_max > MAX_LATENCY {
        out.push(problem(
            "net",
            format!(
                "latency {}..{}: MIN at most MAX, MAX at most {}",
                format_duration(latency_min),
                format_duration(latency_max),
                format_duration(MAX_LATENCY)
            ),
        ));
    }
    out
}

/// Every leaf of a policy's JSON by its path (`reconnect.initial`; a list's entries as `*`,
/// `hops.*.idle_timeout`), a tagged table (with a `kind`) as one leaf.
#[cfg(test)]
pub(crate) fn leaves<'a>(v: &'a Value, path: &str, out: &mut Vec<(String, &'a Value)>) {
    let at = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match v {
        Value::Object(m) if !m.contains_key("kind") => m.iter().for_each(|(k, v)| leaves(v, &at(k), out)),
        Value::Array(items) if items.iter().any(Value::is_object) => {
            items.iter().for_each(|v| leaves(v, &at("*"), out))
        }
        _ => out.push((path.to_string(), v)),
    }
}

/// The key a user would write for a field path (for messages): the short key if one sets exactly
/// it, else the path (`tools.0.event_interval` → `tool.event_interval`).
pub(crate) fn key_for(path: &str) -> String {
    if let Some(s) = SETTINGS.iter().find(|s| s.targets.contains(&path)) {
        return s.key.to_string();
    }
    path.strip_prefix("tools.0.").map(|rest| format!("tool.{rest}")).unwrap_or_else(|| path.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ScenarioArgs;
    use mcpsim_model::config::{CloseHandling, On404, SecondGet, Unhonourable};

    fn scenario() -> Scenario {
        Scenario::build("chatty-tool", "reference", "reference").expect("a built-in scenario")
    }

    /// `apply_path` edits a profile or the tools alone (`edit_part`); for every field and a spread
    /// of values (every type's spelling, and `none`), that gives the scenario, or the error, that
    /// editing the whole scenario gives.
    #[test]
    fn a_field_edited_in_its_part_is_the_field_edited_in_the_whole_scenario() {
        let base = Scenario::build("chatty-tool", "reference", "reference").expect("a built-in scenario");
        let mut paths: Vec<String> = Vec::new();
        for (role, name) in [(Role::Client, "client"), (Role::Server, "server"), (Role::Lb, "lb")] {
            paths.extend(known_paths_ref(role).iter().filter(|p| *p != "name").map(|p| format!("{name}.{p}")));
        }
        paths.extend(
            ["duration", "event_interval", "idempotent", "burst", "input_after"].map(|f| format!("tools.0.{f}")),
        );
        // The numbers at the root edited alone, and one field that goes through the whole.
        paths.extend(["tool_jitter", "clients", "liveness_grace"].map(String::from));
        let values = ["none", "true", "false", "3", "0.5", "-1", "7s", "2m", "gone410", "sdk", "{ kind = \"sdk\" }"];
        let mut compared = 0;
        for path in &paths {
            let parts: Vec<&str> = path.split('.').collect();
            for value in values {
                let mut part = base.clone();
                let mut drafts = Drafts::default();
                let by_part = apply_path(&mut part, &mut drafts, &parts, value).and_then(|()| drafts.flush(&mut part));
                let mut whole = base.clone();
                let by_whole = edit_part(&mut whole, &parts, 0, value, true);
                assert_eq!(by_part, by_whole, "{path}={value}");
                if by_part.is_ok() {
                    assert_eq!(part, whole, "{path}={value}");
                    compared += 1;
                }
            }
        }
        assert!(compared > 100, "only {compared} edits were accepted: the spread of values reaches too few fields");
    }

    /// A key with a value syntax of its own that sets a part (`server.retry`, `lb`) between two
    /// edits of that part in one list: the later edit starts from what the key set, not from the
    /// serde form the part had before it (`Drafts::forget`), and the list gives what one round
    /// trip per override gives.
    #[test]
    fn a_key_of_its_own_between_two_edits_of_a_part_is_kept() {
        let lists: [&[(&str, &str)]; 3] = [
            &[("server.keepalive", "7s"), ("server.retry", "3s"), ("server.idle_ttl", "9m")],
            &[("lb.idle_timeout", "40s"), ("lb", "cdn-alb"), ("lb.replicas", "2")],
            &[
                ("client.backoff_max", "9s"),
                ("fault.reset", "10s"),
                ("client.backoff_initial", "2s"),
                ("app.clients", "2"),
            ],
        ];
        for list in lists {
            let list: Vec<(String, String)> = list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            let mut drafted = scenario();
            drafted.apply_overrides(&list).unwrap_or_else(|e| panic!("{list:?}: {e}"));
            let mut trips = scenario();
            for (k, v) in &list {
                apply_by_round_trips(&mut trips, k, v).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
            }
            trips.overrides.clone_from(&drafted.overrides);
            assert_eq!(drafted, trips, "{list:?}");
        }
        let mut s = scenario();
        let list = [("server.keepalive", "7s"), ("server.retry", "3s"), ("server.idle_ttl", "9m")];
        s.apply_overrides(&list.map(|(k, v)| (k.to_string(), v.to_string()))).expect("valid");
        assert_eq!(s.server.retry_ms, Some(3000));
        assert_eq!(s.server.idle_ttl, Some(Duration::from_secs(540)));
    }

    /// Two edits of one table in a list (`Drafts`) give what a round trip of the whole scenario
    /// per edit gives, where the first adds a table (a tagged one, or one its default had left
    /// out) that the second then edits: the second must find the table's fields at their values.
    #[test]
    fn an_edit_after_one_that_added_a_table_sees_the_table_filled_in() {
        let base = scenario();
        let mut paths: Vec<String> = Vec::new();
        for (role, name) in [(Role::Client, "client"), (Role::Server, "server"), (Role::Lb, "lb")] {
            paths.extend(known_paths_ref(role).iter().filter(|p| *p != "name").map(|p| format!("{name}.{p}")));
        }
        let firsts = ["none", "3", "7s", "gone410", "sdk", "{ kind = \"sdk\" }", "{ kind = \"reinitialize\" }"];
        let seconds = ["none", "true", "3", "7s", "gone410", "reinitialize"];
        let (mut tables, mut compared) = (0, 0);
        for a in &paths {
            let a_parts: Vec<&str> = a.split('.').collect();
            for va in firsts {
                let mut probe = base.clone();
                let mut json = serde_json::to_value(&probe.client).expect("a client serializes");
                let added = match a_parts[0] {
                    "client" => edit_value(&mut json, &a_parts, 1, va, true),
                    _ => {
                        let mut drafts = Drafts::default();
                        apply_path(&mut probe, &mut drafts, &a_parts, va).map(|()| Added::Value)
                    }
                };
                if added != Ok(Added::Table) {
                    continue;
                }
                tables += 1;
                let table = a_parts[..a_parts.len() - 1].join(".");
                for b in paths.iter().filter(|b| b.starts_with(&format!("{a}.")) || b.starts_with(&format!("{table}.")))
                {
                    for vb in seconds {
                        let list = [(a.clone(), va.to_string()), (b.clone(), vb.to_string())];
                        let mut drafted = base.clone();
                        let drafted = drafted.apply_overrides(&list).map(|()| drafted);
                        let mut trips = base.clone();
                        let by_trips = list
                            .iter()
                            .try_for_each(|(k, v)| {
                                trips.overrides.push((k.clone(), v.clone()));
                                apply_by_round_trips(&mut trips, k, v)
                            })
                            .and_then(|()| trips.validate())
                            .map(|()| trips);
                        match (drafted, by_trips) {
                            (Ok(x), Ok(y)) => {
                                assert_eq!(x, y, "{list:?}");
                                compared += 1;
                            }
                            (x, y) => {
                                assert_eq!(x.err().map(|e| e.to_string()), y.err().map(|e| e.to_string()), "{list:?}")
                            }
                        }
                    }
                }
            }
        }
        assert!(tables >= 3 && compared >= 6, "{tables} edits added a table, {compared} pairs compared");
    }

    /// A balancer profile keeps the fleet behind it: `--lb alb` on a family of three sticky
    /// replicas is those replicas behind the ALB's 60 s idle cut (it was one replica, which the
    /// family's deploy fault refused, and `tasks-no-routing` lost its second replica in
    /// silence); a profile that sets the fleet otherwise than the default profile wins, and on a
    /// family of one replica a profile's replicas are taken as before.
    #[test]
    fn a_balancer_profile_keeps_the_fleet_the_scenario_set() {
        use mcpsim_model::config::Routing;
        let mut rolling = Scenario::build(
            concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/rolling-upgrade.toml"),
            "reference",
            "reference",
        )
        .expect("a family file");
        rolling.apply_overrides(&[("lb".into(), "alb".into())]).expect("alb fronts the rolling upgrade");
        let fleet = (rolling.lb.replicas, rolling.lb.routing, rolling.lb.idle_timeout);
        assert_eq!(fleet, (3, Routing::StickySession, Some(Duration::from_secs(60))));
        let mut two = Scenario::build("tasks-no-routing", "reference", "reference").expect("a built-in family");
        two.apply_overrides(&[("lb".into(), "nginx".into())]).expect("nginx");
        assert_eq!((two.lb.replicas, two.lb.routing), (2, Routing::RoundRobin));
        two.apply_overrides(&[("lb".into(), "{ replicas = 3, routing = \"sticky-session\" }".into())]).expect("inline");
        assert_eq!((two.lb.replicas, two.lb.routing), (3, Routing::StickySession));
        let mut one = Scenario::build("long-tool", "reference", "reference").expect("a built-in family");
        one.apply_overrides(&[("lb".into(), "{ replicas = 2 }".into())]).expect("inline");
        assert_eq!(one.lb.replicas, 2);
        one.apply_overrides(&[("lb".into(), "alb".into())]).expect("alb");
        assert_eq!(one.lb.replicas, 2, "set before the profile, as any fleet setting");
    }

    /// Every key a condition names is one `--set` takes, and each of the four conditions and a
    /// termination names some; a server's own bug names the one profile field that models it, if any.
    #[test]
    fn the_settings_each_condition_depends_on_are_keys_set_accepts() {
        use mcpsim_model::oracle::conditions::Condition::*;
        for c in [
            Persisted,
            Retention,
            Refused,
            ByClass,
            Terminated,
            ServerEnded,
            ServerMissed,
            ServerPaced,
            RequestLost,
            ServerRepeated,
            ServerIdReused,
            ServerDropped,
            ProxyHeld,
            WorkRunOn,
            BusLocal,
            BlackHole,
            ServerCrossStream,
        ] {
            let keys = keeping(c);
            let one_field = matches!(c, ServerRepeated | ServerIdReused | ServerDropped | ServerCrossStream);
            assert_eq!(keys.is_empty(), c.is_server_bug() && !one_field, "{c:?}");
            for key in keys {
                assert!(targets(key).is_ok_and(|t| !t.is_empty()), "{c:?}: {key} is no --set key");
            }
        }
    }

    /// The error `--set KEY=VALUE` (alone) gets, as printed.
    fn rejected(set: &str) -> String {
        let args = ScenarioArgs {
            client: "reference".into(),
            server: "reference".into(),
            scenario: "chatty-tool".into(),
            sets: set.split(' ').map(str::to_string).collect(),
        };
        match args.build() {
            Ok(_) => panic!("--set {set} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    fn accepted(sets: &[(&str, &str)]) -> Scenario {
        let mut s = scenario();
        let o: Vec<(String, String)> = sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        s.apply_overrides(&o).unwrap_or_else(|e| panic!("{sets:?}: {e}"));
        s
    }

    /// The walk of a policy's field rules is remembered for the last policy of each kind: a
    /// policy judged again is judged by what it is now, whichever was judged in between.
    #[test]
    fn a_policy_judged_before_is_judged_by_what_it_is_now() {
        let good = scenario();
        let mut bad = good.clone();
        bad.server.delete_status = 42;
        bad.client.http.headers_timeout = Some(Duration::ZERO);
        let says = |s: &Scenario| s.validate().map_err(|e| e.to_string());
        for _ in 0..2 {
            assert_eq!(says(&good), Ok(()));
            let err = says(&bad).expect_err("a status of 42 and a zero timeout are refused");
            assert!(err.starts_with("client.http.headers_timeout"), "{err}");
            let problems = problems(&bad);
            assert_eq!(problems.len(), 2, "{problems:?}");
            assert!(problems[1].message.contains("42 is no HTTP status"), "{problems:?}");
        }
        // The same policy, mended in place: judged again.
        bad.server.delete_status = 404;
        bad.client.http.headers_timeout = None;
        assert_eq!(says(&bad), Ok(()));
    }

    #[test]
    fn a_lost_task_reply_needs_calls_answered_with_tasks() {
        let e = rejected("fault.task_reply_lost=1s");
        assert!(e.contains("no call is answered with a task"), "{e}");
        let s = accepted(&[
            ("server.tasks.create_for_tools_over", "0s"),
            ("client.tasks.declares", "true"),
            ("fault.task_reply_lost", "1s,2m"),
        ]);
        let lost: Vec<_> =
            s.faults.faults().iter().filter(|f| f.fault == Fault::TaskReplyLost).map(|f| f.at.as_secs()).collect();
        assert_eq!(lost, [1, 120]);
        assert_eq!(setting("fault.task_reply_lost").map(|k| (k.show)(&s)).expect("a short key"), "1s,2m");
    }

    #[test]
    fn zero_never_silently_means_none() {
        for set in ["server.keepalive=0s", "tool.event_interval=0s", "lb.idle_timeout=0s", "server.idle_ttl=0s"] {
            let e = rejected(set);
            assert!(e.contains("write none"), "{set}: {e}");
        }
        assert_eq!(accepted(&[("server.keepalive", "none")]).server.keepalive, None);
        assert_eq!(accepted(&[("tool.event_interval", "none")]).tools[0].event_interval, None);
        assert!(rejected("server.retry=0s").contains("none"));
    }

    #[test]
    fn bounds_keep_a_run_bounded() {
        assert!(rejected("server.keepalive=500ms").contains("least allowed, 1s"));
        assert!(rejected("tool.event_interval=500us").contains("least allowed, 1ms"));
        assert!(rejected("tool.duration=25h").contains("24h") || rejected("tool.duration=25h").contains("1440m"));
        assert!(rejected("fault.reset=30h").contains("faults"));
        let mut s = scenario();
        s.clients = MAX_CLIENTS + 1;
        // Named by the short key that sets it (`app.clients`).
        assert!(s.validate().unwrap_err().to_string().starts_with("app.clients: 65 clients"));
        s.clients = MAX_CLIENTS;
        s.validate().expect("64 clients are allowed");
        accepted(&[("server.keepalive", "1s"), ("tool.event_interval", "1ms"), ("tool.duration", "24h")]);
    }

    #[test]
    fn backoff_must_grow_and_its_cap_must_be_above_its_start() {
        assert!(rejected("client.backoff_factor=0.5").contains("below 1"), "{}", rejected("client.backoff_factor=0.5"));
        accepted(&[("client.backoff_factor", "1")]);
        let e = rejected("client.backoff_max=500ms");
        assert!(e.starts_with("client.backoff_max: the cap 500ms is below the first delay 1s"), "{e}");
        // The order of the two keys does not matter: the whole list is validated.
        accepted(&[("client.backoff_max", "40s"), ("client.backoff_initial", "35s")]);
    }

    #[test]
    fn negative_and_nan_numbers_are_rejected() {
        assert!(rejected("tool.jitter=-2.0").contains("[0, 1)"));
        assert!(rejected("client.reconnect.jitter=NaN").contains("finite"));
        assert!(rejected("client.reconnect.jitter=-0.1").contains("[0, 1)"));
        assert!(rejected("client.reconnect.factor=inf").contains("finite"));
        assert_eq!(accepted(&[("client.reconnect.jitter", "0.5")]).client.reconnect.jitter, 0.5);
    }

    #[test]
    fn list_entries_and_keys_are_given_once() {
        assert!(rejected("fault.reset=10s,10s").contains("10s is given twice"));
        assert!(rejected("fault.partition=1m..2m,1m..2m").contains("given twice"));
        let e = rejected("lb.idle_timeout=1m lb.idle_timeout=2m");
        assert!(e.contains("already set by --set lb.idle_timeout"), "{e}");
        let e = rejected("fault.partition=1m..2m fault.partition=3m..4m");
        assert!(e.contains("give each key once"), "{e}");
        // A profile chosen whole, then refined: the profile with that field changed; the other
        // way round the profile would undo the field.
        let args = ScenarioArgs {
            client: "reference".into(),
            server: "reference".into(),
            scenario: "chatty-tool".into(),
            sets: vec!["lb=cdn-alb".into(), "lb.idle_timeout=30s".into()],
        };
        let refined = args.build().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(refined.lb.idle_timeout, Some(Duration::from_secs(30)));
        assert!(!refined.lb.hops.is_empty(), "the cdn-alb profile's hops stay");
        let e = rejected("lb.idle_timeout=30s lb=cdn-alb");
        assert!(e.contains("lb is already set by --set lb.idle_timeout"), "{e}");
        // An alias and the field it sets are one key.
        let e = rejected("server.retention=5 server.retention.max_events=6");
        assert!(e.contains("server.retention.max_events is already set"), "{e}");
        assert!(rejected("client.backoff_max=40s client.reconnect.max=50s").contains("already set"));
    }

    #[test]
    fn every_field_is_settable_by_its_path() {
        let s = accepted(&[
            ("client.reconnect.jitter", "0.3"),
            ("client.reconnect.first_immediate", "true"),
            ("client.reconnect.counter_reset", "on-event"),
            ("client.open_standalone_stream", "yes"),
            ("server.retention.max_events", "none"),
            ("server.retention.drop_on_response", "true"),
            ("server.priming.resume", "false"),
            ("server.delete_status", "202"),
            ("server.second_get", "409"),
            ("server.retry_ms", "3000"),
            ("lb.idle_timeout", "2m"),
            ("tool.idempotent", "true"),
            ("tools.0.duration", "90s"),
        ]);
        assert_eq!(s.client.reconnect.jitter, 0.3);
        assert!(s.client.reconnect.first_immediate && s.client.open_standalone_stream);
        assert_eq!((s.server.retention.max_events, s.server.retention.drop_on_response), (None, true));
        assert_eq!(
            (s.server.delete_status, s.server.second_get, s.server.retry_ms),
            (202, SecondGet::Reject409, Some(3000))
        );
        assert!(!s.server.priming.resume && s.tools[0].idempotent);
        assert_eq!((s.tools[0].duration, s.lb.idle_timeout), (Duration::from_secs(90), Some(Duration::from_secs(120))));
        let inline = "{ kind = \"sdk\", on_404 = \"reinitialize-resend-once\", on_empty_resume = \"clean-close\", resume_post_needs_event_id = true }";
        let s = accepted(&[("client.close_handling", inline)]);
        assert!(matches!(s.client.close_handling, CloseHandling::Sdk(r) if r.on_404 == On404::ReinitializeResendOnce));
        assert!(rejected("server.name=x").contains("the name comes from"));
        assert!(rejected("client.reconnect.nope=1").contains("unknown key"));
        assert!(rejected("client.reconnect.counter_reset=sometimes").contains("unknown variant"));
        assert!(rejected("tools.3.duration=1s").contains("no tools.3"));
    }

    #[test]
    fn one_spelling_per_value_the_traces_one_and_the_old_ones_accepted() {
        let s = accepted(&[("server.unhonourable", "410")]);
        let show = setting("server.unhonourable").map(|k| (k.show)(&s)).expect("a short key");
        assert_eq!(show, "gone410");
        assert_eq!(serde_json::to_value(s.server.evicted_id).expect("serializes"), "gone410");
        assert_eq!(accepted(&[("server.unhonourable", "gone410")]).server.evicted_id, Unhonourable::Gone410);
        assert_eq!(accepted(&[("server.evicted_id", "409")]).server.evicted_id, Unhonourable::Conflict409);
        let s = accepted(&[("server.retention", "unbounded"), ("client.max_attempts", "unlimited")]);
        let show = |k: &str| setting(k).map(|k| (k.show)(&s)).expect("a short key");
        assert_eq!((show("server.retention"), show("client.max_attempts")), ("none".into(), "none".into()));
    }

    #[test]
    fn printed_commands_set_each_key_once() {
        let o = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        let kept = effective(&o(&[("fault.reset", "4m"), ("tool.duration", "1m"), ("fault.reset", "none")]));
        assert_eq!(kept, o(&[("tool.duration", "1m"), ("fault.reset", "none")]));
        // Setting one of two fields an alias sets does not make the alias redundant.
        let kept = effective(&o(&[("server.unhonourable", "410"), ("server.evicted_id", "silent-head")]));
        assert_eq!(kept.len(), 2);
        check_distinct(&kept).expect_err("they do share a field");
    }

    #[test]
    fn trace_headers_go_through_the_same_validation() {
        let mut header = serde_json::to_value(scenario()).expect("serializes");
        header["server"]["keepalive"] = "0s".into();
        let s: Scenario = serde_json::from_value(header).expect("a well-formed header");
        assert!(s.validate().unwrap_err().to_string().starts_with("server.keepalive: 0 does not mean no keep-alives"));
    }

    #[test]
    fn every_field_has_a_rule() {
        let mut paths: Vec<String> = Vec::new();
        for (role, name) in [(Role::Client, "client"), (Role::Server, "server"), (Role::Lb, "lb")] {
            paths.extend(profiles::documented_paths(role).into_iter().map(|p| format!("{name}.{p}")));
        }
        // Every field a scenario serializes, of every built-in profile (lists' entries as `*`).
        for c in profiles::CLIENT_NAMES {
            for sv in profiles::SERVER_NAMES {
                let s = Scenario::build("long-tool", c, sv).expect("a built-in scenario");
                for lb in profiles::LB_NAMES {
                    let lb = profiles::lb(lb).expect("a built-in balancer");
                    for (role, v) in [
                        ("client", serde_json::to_value(&s.client)),
                        ("server", serde_json::to_value(&s.server)),
                        ("lb", serde_json::to_value(&lb)),
                    ] {
                        let mut out = Vec::new();
                        let v = v.expect("serializes");
                        leaves(&v, "", &mut out);
                        paths.extend(out.into_iter().map(|(p, _)| format!("{role}.{p}")));
                    }
                }
            }
        }
        let hop = serde_json::to_value(mcpsim_model::config::HopConfig::default()).expect("serializes");
        let mut out = Vec::new();
        leaves(&hop, "", &mut out);
        paths.extend(out.into_iter().map(|(p, _)| format!("lb.hops.*.{p}")));
        let missing: BTreeSet<&String> = paths.iter().filter(|p| !FIELD_RULES.iter().any(|(r, _)| r == p)).collect();
        assert!(missing.is_empty(), "fields without a rule in FIELD_RULES: {missing:?}");
    }

    #[test]
    fn statuses_and_durations_of_every_field_are_checked() {
        assert!(rejected("server.sessionless_get_status=0").contains("no HTTP status"));
        assert!(rejected("server.delete_status=0").contains("no HTTP status"));
        for key in ["server.close_idle_standalone", "server.keep_alive_timeout", "client.http.idle_expiry"] {
            let e = rejected(&format!("{key}=0s"));
            assert!(e.starts_with(key) && e.contains("write none"), "{key}: {e}");
        }
        // Zero means something for close_request_streams (SEP-1699 polling).
        accepted(&[("server.close_request_streams", "0s")]);
        assert!(
            rejected("server.close_request_streams=25h").contains("24h")
                || rejected("server.close_request_streams=25h").contains("1440m")
        );
    }

    #[test]
    fn a_delete_or_a_call_key_given_twice_is_refused() {
        let e = rejected("app.operator_deletes=2m,2m");
        assert!(e.contains("given twice"), "{e}");
        let mut s = scenario();
        let e = s.apply_overrides(&[("app.calls".into(), "1s call=0; 2s call=0".into())]).unwrap_err().to_string();
        assert!(e.contains("the same key 0"), "{e}");
        accepted(&[("app.operator_deletes", "2m,3m"), ("app.calls", "1s; 2s")]);
    }

    #[test]
    fn every_family_with_every_profile_is_valid() {
        for name in crate::scenario::SCENARIO_NAMES {
            for c in profiles::CLIENT_NAMES {
                for s in profiles::SERVER_NAMES {
                    let sc = Scenario::build(name, c, s).expect("built-in scenarios are valid");
                    assert_eq!(problems(&sc), vec![], "{name} {c} {s}");
                }
            }
        }
    }
}
