//! The server profile a probe run could determine, as a TOML file with the field names of
//! `mcpsim_model::config::ServerPolicy`'s serde form: every determined field with a comment
//! naming the observation that decided it, and every field it could not determine listed with
//! the reason. `extends = "reference"` lets the undetermined ones default.

use mcpsim_model::config::ServerPolicy;
use std::collections::BTreeMap;

/// A probed profile field (server fingerprint or client probe) that differs from its built-in
/// profile, explained: the entries of `reality::KNOWN_FIELD_DIFFERENCES` (servers) and
/// `client_probe::KNOWN_CLIENT_FIELD_DIFFERENCES` (clients).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownFieldDifference {
    /// The built-in profile.
    pub profile: &'static str,
    /// The field, dotted for nested tables.
    pub field: &'static str,
    /// The probed TOML literal.
    pub probed: &'static str,
    /// The built-in profile's TOML literal when this entry was written.
    pub builtin: &'static str,
    /// What the real server or client did.
    pub observation: &'static str,
    /// Why the profile is not (yet) changed.
    pub why_not_changed: &'static str,
}

/// Every field of `ServerPolicy` (dotted for nested tables) except `name`, in file order.
pub const FIELDS: &[&str] = &[
    "event_ids",
    "store",
    "replay",
    "unknown_id",
    "evicted_id",
    "retry_ms",
    "keepalive",
    "idle_ttl",
    "idle_rule",
    "delete_running_tool",
    "delete_unknown_status",
    "delete_status",
    "second_get",
    "honour_idempotency_keys",
    "sessions",
    "disconnect_cancels",
    "retention.max_events",
    "retention.window",
    "retention.drop_on_response",
    "priming.post",
    "priming.standalone",
    "priming.resume",
    "keepalive_timer",
    "standalone_priming",
    "fresh_get",
    "finished_resume",
    "resumed_on_response",
    "resume_while_attached",
    "detached_request_events",
    "close_request_streams",
    "close_idle_standalone",
    "dead_stream",
    "unknown_session",
    "sessionless_get_status",
    "sessionless_get",
    "idle_reset",
    "expire_running_tool",
    "id_stamp",
    "keep_alive_timeout",
    "event_store",
    "resume_without_store",
    "eras",
    "modern_session",
    "eras_after_restart",
    "tasks.create_for_tools_over",
    "tasks.ttl",
    "tasks.poll_interval",
    "tasks.store",
    "tasks.routing",
    "tasks.expiry.working_at_ttl",
    "tasks.expiry.terminal_kept_ttls",
    "tasks.expiry.sweep",
    "tasks.on_cancel",
    "unknown_session_code",
    "max_sessions",
    "subscriptions.changes",
    "subscriptions.bus",
    "response_mode",
    "after_replay",
    "replay_scope",
    "disconnect_cancel_ignored",
    "on_failed_write",
    "on_protocol_error",
    "sessionless_cancel",
];

/// The TOML literal of a field the profiles' serde form leaves out at its default.
pub fn default_literal(field: &str) -> Option<String> {
    use mcpsim_model::config as c;
    fn lit<T: serde::Serialize>(v: T) -> Option<String> {
        match serde_json::to_value(v).ok()? {
            serde_json::Value::String(s) => Some(quote(&s)),
            other => Some(other.to_string()),
        }
    }
    match field {
        "delete_status" => Some("200".into()),
        "sessionless_get_status" => Some("405".into()),
        "sessionless_get" => lit(c::SessionlessGet::default()),
        "close_request_streams" | "close_idle_standalone" => Some("\"none\"".into()),
        "keepalive_timer" => lit(c::KeepaliveTimer::default()),
        "standalone_priming" => lit(c::StandalonePriming::default()),
        "fresh_get" => lit(c::FreshGet::default()),
        "finished_resume" | "resumed_on_response" => lit(c::ConnAfterResponse::default()),
        "resume_while_attached" => lit(c::ResumeWhileAttached::default()),
        "detached_request_events" => lit(c::DetachedEvents::default()),
        "dead_stream" => lit(c::DeadStream::default()),
        "unknown_session" => lit(c::UnknownSession::default()),
        "idle_reset" => lit(c::IdleReset::default()),
        "expire_running_tool" => lit(c::DeleteRule::default()),
        "id_stamp" => lit(c::IdStamp::default()),
        "keep_alive_timeout" => Some("\"none\"".into()),
        // `-32001`, "Session not found" (the serde default of `ServerPolicy::unknown_session_code`).
        "unknown_session_code" => Some("-32001".into()),
        "max_sessions" => Some("\"none\"".into()),
        "response_mode" => lit(c::ResponseMode::default()),
        "after_replay" => lit(c::AfterReplay::default()),
        "replay_scope" => lit(c::ReplayScope::default()),
        "disconnect_cancel_ignored" => Some("false".into()),
        "on_failed_write" => lit(c::FailedWrite::default()),
        "on_protocol_error" => lit(c::ProtocolErrorReaction::default()),
        "sessionless_cancel" => lit(c::SessionlessCancel::default()),
        // The whole `subscriptions` table is left out at its default.
        "subscriptions.changes" => Some("false".into()),
        "subscriptions.bus" => lit(mcpsim_model::subscriptions::Bus::default()),
        "event_store" => Some("\"kept\"".into()),
        "resume_without_store" => lit(c::NoStoreResume::default()),
        "eras" | "eras_after_restart" => Some("\"none\"".into()),
        "modern_session" => lit(mcpsim_model::era::ModernSession::default()),
        // The whole `tasks` table is left out at its default.
        // Left out of the `tasks` table at its default too.
        "tasks.on_cancel" => lit(mcpsim_model::tasks::TaskCancel::default()),
        f if f.starts_with("tasks.") => {
            let mut v = serde_json::to_value(mcpsim_model::tasks::ServerTasks::default()).ok()?;
            for part in f.split('.').skip(1) {
                v = v.get(part)?.clone();
            }
            match v {
                serde_json::Value::Null => Some(quote("none")),
                other => lit(other),
            }
        }
        _ => None,
    }
}

/// Why the probe never decides these, whatever the server does.
fn never_probed(field: &str) -> Option<&'static str> {
    Some(match field {
        "idle_ttl" | "idle_rule" => {
            "session expiry takes minutes to tens of minutes of idleness; the probe stays short"
        }
        "retention.window" => "a time window needs an outage longer than the window; the probe measures counts only",
        "honour_idempotency_keys" => "an extension no SDK implements; the probe sends no idempotency keys",
        "resume_while_attached" => {
            "needs a resume while the POST's own connection is still registered at the server; the probe's cuts reset it first, and a server-side view of which connection holds the stream"
        }
        "detached_request_events" => {
            "needs a server that ends a request's stream itself (closeSSEStream); no fixture does so by default"
        }
        "dead_stream" => {
            "needs a cut of the client side only and a look at when the server notices; the proxy has the toxic but the server's side is not visible from the client"
        }
        "idle_reset" => {
            "needs server-initiated events with no request of the session open, over a TTL; the probe's notifications come from a request"
        }
        "expire_running_tool" => {
            "needs idle expiry while a tool runs (its POST cut): the idle-expiry scenario runs no tool"
        }
        "id_stamp" => {
            "needs two events stamped within one millisecond and their replay order; a run cannot make that happen on purpose"
        }
        "eras_after_restart" => "a property of a deployment (a rolling upgrade's new build), not of one running server",
        "tasks.on_cancel" => {
            "the probe's task scenario polls and lets its task run or expire; it sends no tasks/cancel"
        }
        "max_sessions" => "a cap on sessions needs as many sessions as the cap; the probe opens a few",
        "subscriptions.changes" | "subscriptions.bus" => {
            "the probe does not send subscriptions/listen (a 2026-07-28 request); how changes reach listeners across replicas needs two replicas"
        }
        "disconnect_cancel_ignored" => {
            "a policy that says it cancels and does not: the probe sees what the server does, written as disconnect_cancels"
        }
        "on_failed_write" => {
            "needs a write the server sees fail (a client side cut the server notices mid-write); the probe's cuts are not visible to it from the server's side"
        }
        "on_protocol_error" => {
            "needs a malformed request that may restart the server's process; the probe does not send one to a server it does not own"
        }
        "sessionless_cancel" => {
            "needs two clients' requests with one id in flight on a server without sessions; the probe is one client"
        }
        "sessionless_get_status" | "sessionless_get" => {
            "the probe's fixtures run with sessions; what a server without them answers to GET and DELETE needs a stateless one"
        }
        "tasks.create_for_tools_over" => {
            "the application decides which calls become tasks (rmcp's TaskManager::spawn is called by the handler); the fixture's probe_task is one it made so"
        }
        "tasks.store" => "per replica or shared needs two replicas; the probe talks to one process",
        "tasks.routing" => "how a balancer routes tasks/* (by Mcp-Name or not) is the balancer's; the probe talks to one process",
        _ => return None,
    })
}

/// A determined field: its TOML literal and the observation that decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decided {
    /// The TOML literal.
    pub value: String,
    /// The observation that decided it.
    pub why: String,
}

/// What one probe run determined.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fingerprint {
    /// The decided fields, by dotted name.
    pub fields: BTreeMap<String, Decided>,
    /// Why a field stayed open, when a scenario said so.
    pub open: BTreeMap<String, String>,
    /// Observations that are no `ServerPolicy` field (unknown-session answers, ...).
    pub notes: Vec<String>,
}

impl Fingerprint {
    /// Decides a field (the first decision stands; a contradicting later one is noted).
    pub fn decide(&mut self, field: &str, value: impl Into<String>, why: impl Into<String>) {
        let (value, why) = (value.into(), why.into());
        match self.fields.get(field) {
            Some(d) if d.value != value => {
                self.notes.push(format!("{field}: also observed {value} ({why}); kept {}", d.value));
            }
            Some(_) => {}
            None => {
                self.open.remove(field);
                self.fields.insert(field.to_string(), Decided { value, why });
            }
        }
    }

    /// Records why a field could not be decided (unless it was).
    pub fn leave_open(&mut self, field: &str, why: impl Into<String>) {
        if !self.fields.contains_key(field) {
            self.open.entry(field.to_string()).or_insert_with(|| why.into());
        }
    }

    /// A field's decided TOML literal.
    pub fn value(&self, field: &str) -> Option<&str> {
        self.fields.get(field).map(|d| d.value.as_str())
    }

    /// The fields not determined, each with the reason.
    pub fn undetermined(&self) -> Vec<(&'static str, String)> {
        FIELDS
            .iter()
            .filter(|f| !self.fields.contains_key(**f))
            .map(|f| {
                let why = self
                    .open
                    .get(*f)
                    .cloned()
                    .or_else(|| never_probed(f).map(str::to_string))
                    .unwrap_or_else(|| "no scenario observed it".to_string());
                (*f, why)
            })
            .collect()
    }

    /// The profile file.
    pub fn to_toml(&self, name: &str, header: &[String]) -> String {
        let mut out = String::new();
        for line in header {
            out.push_str(&format!("# {}\n", one_line(line)));
        }
        out.push_str("extends = \"reference\"\n");
        out.push_str(&format!("name = {}\n", quote(name)));
        let mut tables: BTreeMap<&str, Vec<(&str, &Decided)>> = BTreeMap::new();
        for field in FIELDS {
            let Some(d) = self.fields.get(*field) else { continue };
            match field.split_once('.') {
                Some((table, key)) => tables.entry(table).or_default().push((key, d)),
                None => out.push_str(&format!("\n# {}\n{field} = {}\n", one_line(&d.why), d.value)),
            }
        }
        for (table, fields) in tables {
            out.push_str(&format!("\n[{table}]\n"));
            for (key, d) in fields {
                out.push_str(&format!("# {}\n{key} = {}\n", one_line(&d.why), d.value));
            }
        }
        out.push_str("\n# Not determined (left to `extends`):\n");
        for (field, why) in self.undetermined() {
            out.push_str(&format!("#   {field}: {}\n", one_line(&why)));
        }
        if !self.notes.is_empty() {
            out.push_str("\n# Other observations:\n");
            for n in &self.notes {
                out.push_str(&format!("#   {}\n", one_line(n)));
            }
        }
        out
    }

    /// Each determined field beside the built-in profile's value, for the report.
    pub fn compare(&self, profile: &ServerPolicy) -> Vec<(String, String, String)> {
        let Ok(builtin) = serde_json::to_value(profile) else { return Vec::new() };
        FIELDS
            .iter()
            .filter_map(|f| {
                let d = self.fields.get(*f)?;
                if *f == "eras" && builtin.get("eras").is_none() {
                    // Left out: what `sessions` implies (mcpsim_model::era::served_eras).
                    let set = mcpsim_model::era::served_eras(None, profile.sessions);
                    let list: Vec<_> = [mcpsim_model::era::Era::Legacy, mcpsim_model::era::Era::Modern]
                        .into_iter()
                        .filter(|e| set.serves(*e))
                        .collect();
                    return Some((f.to_string(), d.value.clone(), serde_json::to_string(&list).ok()?));
                }
                let mut v = &builtin;
                for part in f.split('.') {
                    match v.get(part) {
                        Some(next) => v = next,
                        // Left out of the serde form at its default.
                        None => return default_literal(f).map(|lit| (f.to_string(), d.value.clone(), lit)),
                    }
                }
                let theirs = match v {
                    serde_json::Value::Null => quote("none"),
                    serde_json::Value::String(s) => quote(s),
                    other => other.to_string(),
                };
                Some((f.to_string(), d.value.clone(), theirs))
            })
            .collect()
    }
}

/// A TOML basic string.
/// JSON's escapes are TOML's, except that TOML also wants DEL escaped (and the C1 controls are
/// escaped too, so that no terminal acts on them when the file is shown).
pub fn quote(s: &str) -> String {
    let json = serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string());
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_control() {
            out.push_str(&format!("\\u{:04X}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Text for a TOML comment: one line, every control character (which TOML forbids in
/// comments, and a terminal would act on) escaped as `\u{1b}`.
pub fn one_line(s: &str) -> String {
    crate::error::escape(&s.replace(['\n', '\r'], " "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_from_a_server_are_escaped_and_the_profile_reads_back() {
        let mut f = Fingerprint::default();
        let esc = "id \u{1b}[31mred\u{7f}\u{9b}";
        f.decide("event_ids", quote("reference"), format!("event ids seen: {esc}"));
        f.leave_open("replay", format!("resume answered {esc}\nsecond line"));
        f.notes.push(esc.to_string());
        let text = f.to_toml(&format!("probed-{esc}"), &[format!("header {esc}")]);
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
        let dir = tempfile::Builder::new().prefix("mcpsim-fp-escape-").tempdir().expect("a temp dir");
        let path = dir.path().join("profile.toml");
        std::fs::write(&path, &text).expect("temp file");
        let policy = crate::scenario::profile_files::server(&path.display().to_string());
        assert_eq!(policy.expect("mcpsim reads the written profile back").name, format!("probed-{esc}"));
    }

    #[test]
    fn every_field_is_written_once_either_decided_or_listed_as_open() {
        let mut f = Fingerprint::default();
        f.decide("unknown_id", "\"gone410\"", "made-up id answered 410");
        f.decide("unknown_id", "\"empty-closed\"", "second look");
        f.decide("retention.max_events", "16", "16 events replayed");
        f.leave_open("replay", "the resume got 404");
        let text = f.to_toml("probed", &["probe".into()]);
        assert!(text.contains("# made-up id answered 410\nunknown_id = \"gone410\"\n"), "{text}");
        assert!(text.contains("[retention]\n# 16 events replayed\nmax_events = 16\n"), "{text}");
        assert!(text.contains("#   replay: the resume got 404"), "{text}");
        assert!(text.contains("#   idle_ttl: session expiry"), "{text}");
        assert!(text.contains("also observed \"empty-closed\""), "{text}");
        for field in FIELDS {
            let key = field.rsplit('.').next().unwrap_or(field);
            assert!(text.contains(&format!("{key} = ")) || text.contains(&format!("#   {field}: ")), "{field}");
        }
    }

    #[test]
    fn every_server_profile_field_is_listed_decided_or_open() {
        // A field missing from FIELDS would be neither decided nor listed as undetermined: the
        // written profile would pass over it in silence.
        let known = mcpsim_model::profiles::known_paths(mcpsim_model::profiles::Role::Server);
        let missing: Vec<&String> = known
            .iter()
            .filter(|path| *path != "name" && !FIELDS.contains(&path.as_str()))
            // A table whose fields are listed one by one.
            .filter(|path| !FIELDS.iter().any(|f| f.starts_with(&format!("{path}."))))
            .collect();
        assert!(missing.is_empty(), "server profile fields the fingerprint does not list: {missing:?}");
    }

    #[test]
    fn field_names_are_those_of_the_server_policy_serde_form() {
        let policy = mcpsim_model::profiles::server("reference").unwrap();
        let v = serde_json::to_value(&policy).unwrap();
        for field in FIELDS.iter().filter(|f| default_literal(f).is_none()) {
            let mut cur = &v;
            for part in field.split('.') {
                cur = cur.get(part).unwrap_or_else(|| panic!("{field} is not a ServerPolicy field"));
            }
        }
        // The others are left out at their default: still fields of a server profile file.
        let known = mcpsim_model::profiles::known_paths(mcpsim_model::profiles::Role::Server);
        for field in FIELDS {
            assert!(known.contains(*field), "{field} is not a server profile field");
        }
    }
}
