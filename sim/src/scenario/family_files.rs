//! Scenario families as TOML files: the eight built-in ones (`sim/scenarios/NAME.toml`, embedded
//! at build time) and a user's own (`--scenario ./my.toml`: an argument that contains `/` or ends
//! in `.toml` is a file, as for profiles). `extends = "NAME"` — a built-in family, or a path
//! relative to the file — layers a file over another, so a file says only what differs.
//!
//! A file is read into a list of settings and applied, in a fixed order, over the scenario the
//! command's profiles give (`Scenario::build`): every value goes through the `--set` keys of
//! [`settings`] (`[server] keepalive` is `server.keepalive`, `[faults] partition` is
//! `fault.partition`, `lb` is `lb`, …) and the whole through the one validation, so a file can
//! ask for nothing `--set` refuses. Every problem is one line, `FILE:LINE:COL: message`, at the
//! value that causes it (the error type is the profiles', [`ProfileError`]).
//!
//! The keys (see `sim/scenarios/long-tool.toml` for the commented format): `name`,
//! `description`, `extends`, `lb`, `clients`, `client_profiles`, `tool_jitter`, `latency`, `liveness_grace`,
//! `notify_interval`, `notifications` (as `app.notifications`), `[[tools]]`, `[[calls]]`, `[[deletes]]`, `[[bogus_resumes]]`, `[[empty_resumes]]`,
//! `[client]`, `[server]`,
//! `[fallback.client]` / `[fallback.server]` (set only where the profile has none) and
//! `[faults]`. [`dump`] writes a scenario back as such a file.

use super::settings::{self, problems};
use super::{
    families, files, profile_files, BogusResume, CallSpec, DeleteBy, DeleteSpec, EmptyResumes, OnError, ResumeId,
    Scenario,
};
use crate::error::SimError;
use mcpsim_model::config::{OnAbort, SideEffectAt, ToolSpec};
use mcpsim_model::ids::CallKey;
use mcpsim_model::profiles::ProfileError;
use mcpsim_model::profiles::{quote, toml_value};
use mcpsim_model::time::{format_duration, parse_duration};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;
use toml::de::{DeTable, DeValue};

/// The most files an `extends` chain may have (it also stops cycles).
const MAX_EXTENDS: usize = 8;

/// The top-level keys a family file may have.
const KEYS: &[&str] = &[
    "name",
    "description",
    "extends",
    "lb",
    "clients",
    "client_profiles",
    "tool_jitter",
    "latency",
    "liveness_grace",
    "notify_interval",
    "notifications",
    "tools",
    "calls",
    "deletes",
    "bogus_resumes",
    "empty_resumes",
    "client",
    "server",
    "fallback",
    "faults",
];

/// The fault keys of `[faults]`, each a `fault.KEY` setting.
const FAULT_KEYS: &[&str] = &[
    "partition",
    "blackhole",
    "reset",
    "server_restart",
    "client_restart",
    "restart",
    "cut",
    "deploy",
    "answer",
    "malformed",
    "task_reply_lost",
];

/// A position in a file, 1-based.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Pos {
    line: usize,
    col: usize,
}

impl Pos {
    const START: Pos = Pos { line: 1, col: 1 };

    fn of(text: &str, offset: usize) -> Pos {
        let before = text.get(..offset.min(text.len())).unwrap_or(text);
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
        Pos { line, col }
    }
}

/// One thing a file sets, in the order it is applied.
#[derive(Clone, Debug)]
enum Entry {
    /// A `--set` key and its value as text.
    Set {
        key: String,
        value: String,
    },
    /// A `--set` key applied only where the scenario's field (a dotted serde path) is absent.
    Fallback {
        key: String,
        path: String,
        value: String,
    },
    Clients(u32),
    NotifyInterval(Option<Duration>),
    Tools(Vec<ToolSpec>),
    Calls(Vec<CallSpec>),
    Deletes(Vec<DeleteSpec>),
    BogusResumes(Vec<BogusResume>),
    EmptyResumes(Vec<EmptyResumes>),
}

/// One family file, read but not applied.
#[derive(Clone, Debug)]
struct FamilyFile {
    origin: String,
    name: Option<String>,
    description: Option<String>,
    extends: Option<(String, Pos)>,
    /// What it sets, each with where, and the field paths it sets (for validation messages).
    entries: Vec<(Entry, Pos, Vec<String>)>,
    /// Where fields inside a list are written (`tools.0.duration`), for validation messages.
    locations: Vec<(String, Pos)>,
}

impl FamilyFile {
    fn error(&self, pos: Pos, message: impl Into<String>) -> ProfileError {
        ProfileError { origin: self.origin.clone(), line: pos.line, col: pos.col, message: message.into() }
    }
}

/// A family's description, read from its file's `description`.
pub fn description_of(text: &str) -> Option<String> {
    let table = DeTable::parse(text).ok()?;
    table.get_ref().get("description").and_then(|v| v.get_ref().as_str().map(str::to_string))
}

/// One line on each scenario family: its file's `description` (empty for an unknown name).
pub fn describe(name: &str) -> String {
    families::builtin_text(name).and_then(description_of).unwrap_or_default()
}

/// The built-in family of that name applied to `base`; `None` for an unknown name.
pub(super) fn builtin(name: &str, base: Scenario) -> Option<Result<Scenario, SimError>> {
    let text = families::builtin_text(name)?;
    Some(apply_text(text, &families::builtin_origin(name), name, base))
}

/// Applies the built-in family file `text` (its origin `origin`) to `base`.
pub fn apply_text(text: &str, origin: &str, name: &str, base: Scenario) -> Result<Scenario, SimError> {
    let top = parse(text, origin)?;
    let layers = chain(top)?;
    finish(layers, name, base)
}

/// Applies the family file at `path` to `base`; its name is its `name`, else the file's stem.
pub fn load(path: &Path, base: Scenario) -> Result<Scenario, SimError> {
    let top = read(path)?;
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let layers = chain(top)?;
    finish(layers, &stem, base)
}

fn read(path: &Path) -> Result<FamilyFile, SimError> {
    let origin = path.display().to_string();
    let text = files::read(path).map_err(|problem| SimError::Io { path: origin.clone(), problem })?;
    Ok(parse(&text, &origin)?)
}

/// The files of a family, bases first.
fn chain(top: FamilyFile) -> Result<Vec<FamilyFile>, SimError> {
    let mut layers = vec![top];
    loop {
        let last = layers.last().expect("the chain starts with the top file");
        let Some((name, pos)) = last.extends.clone() else { break };
        if layers.len() > MAX_EXTENDS {
            return Err(last
                .error(pos, format!("extends {name:?}: more than {MAX_EXTENDS} files deep (a cycle?)"))
                .into());
        }
        let next = if files::is_path(&name) {
            let dir = Path::new(&last.origin).parent().unwrap_or(Path::new(""));
            let path = dir.join(&name);
            let text = files::read(&path)
                .map_err(|e| last.error(pos, format!("extends {name:?}: {}: {e}", path.display())))?;
            parse(&text, &path.display().to_string())?
        } else {
            let text = families::builtin_text(&name).ok_or_else(|| {
                last.error(
                    pos,
                    format!(
                        "extends {name:?}: no built-in scenario family of that name (known: {})",
                        families::SCENARIO_NAMES.join(", ")
                    ),
                )
            })?;
            parse(text, &families::builtin_origin(&name))?
        };
        if layers.iter().any(|l| l.origin == next.origin) {
            return Err(last.error(pos, format!("extends {name:?}: a cycle through {}", next.origin)).into());
        }
        layers.push(next);
    }
    layers.reverse();
    Ok(layers)
}

/// Applies the layers over `base` and validates the result, locating a problem in the file that
/// set the field last.
fn finish(layers: Vec<FamilyFile>, default_name: &str, mut s: Scenario) -> Result<Scenario, SimError> {
    let mut setters: Vec<(String, usize, Pos)> = Vec::new();
    for (i, layer) in layers.iter().enumerate() {
        for (entry, pos, paths) in &layer.entries {
            apply(&mut s, entry).map_err(|m| layer.error(*pos, m))?;
            setters.extend(paths.iter().map(|p| (p.clone(), i, *pos)));
        }
        setters.extend(layer.locations.iter().map(|(p, pos)| (p.clone(), i, *pos)));
    }
    s.name = layers.iter().rev().find_map(|l| l.name.clone()).unwrap_or_else(|| default_name.to_string());
    if let Some(p) = problems(&s).into_iter().next() {
        let top = layers.len() - 1;
        let hit = |set: &String| {
            *set == p.path || p.path.starts_with(&format!("{set}.")) || set.starts_with(&format!("{}.", p.path))
        };
        let (layer, pos) =
            setters.iter().rev().find(|(set, _, _)| hit(set)).map_or((top, Pos::START), |(_, l, p)| (*l, *p));
        let key = settings::key_for(&p.path);
        return Err(layers[layer].error(pos, format!("{key}: {}", p.message)).into());
    }
    Ok(s)
}

fn apply(s: &mut Scenario, entry: &Entry) -> Result<(), String> {
    match entry {
        Entry::Set { key, value } => settings::apply(s, key, value).map_err(|e| e.to_string()),
        Entry::Fallback { key, path, value } => {
            let json = serde_json::to_value(&*s).map_err(|e| e.to_string())?;
            let current = path.split('.').try_fold(&json, |node, part| node.get(part));
            if current.is_none_or(Value::is_null) {
                settings::apply(s, key, value).map_err(|e| e.to_string())?;
            }
            Ok(())
        }
        Entry::Clients(n) => {
            s.clients = *n;
            Ok(())
        }
        Entry::NotifyInterval(d) => {
            s.notify_interval = *d;
            Ok(())
        }
        Entry::Tools(t) => {
            s.tools = t.clone();
            Ok(())
        }
        Entry::Calls(c) => {
            s.calls = c.clone();
            Ok(())
        }
        Entry::Deletes(d) => {
            s.deletes = d.clone();
            Ok(())
        }
        Entry::BogusResumes(b) => {
            s.bogus_resumes = b.clone();
            Ok(())
        }
        Entry::EmptyResumes(e) => {
            s.empty_resumes = e.clone();
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading a file
// ---------------------------------------------------------------------------------------------

type Spanned<'a> = toml::Spanned<DeValue<'a>>;

struct Reader<'t> {
    text: &'t str,
    file: FamilyFile,
}

impl Reader<'_> {
    fn pos(&self, v: &Spanned<'_>) -> Pos {
        Pos::of(self.text, v.span().start)
    }

    fn err(&self, v: &Spanned<'_>, message: impl Into<String>) -> ProfileError {
        self.file.error(self.pos(v), message)
    }

    fn string(&self, key: &str, v: &Spanned<'_>) -> Result<String, ProfileError> {
        v.get_ref().as_str().map(str::to_string).ok_or_else(|| self.err(v, format!("{key} must be a string")))
    }

    fn duration(&self, key: &str, v: &Spanned<'_>) -> Result<Duration, ProfileError> {
        parse_duration(&self.string(key, v)?).map_err(|m| self.err(v, format!("{key}: {m}")))
    }

    fn opt_duration(&self, key: &str, v: &Spanned<'_>) -> Result<Option<Duration>, ProfileError> {
        if v.get_ref().as_str() == Some("none") {
            return Ok(None);
        }
        self.duration(key, v).map(Some)
    }

    fn integer(&self, key: &str, v: &Spanned<'_>) -> Result<u32, ProfileError> {
        match v.get_ref() {
            DeValue::Integer(i) => u32::from_str_radix(i.as_str(), i.radix())
                .map_err(|_| self.err(v, format!("{key}: {i} is not a count (0 to {})", u32::MAX))),
            _ => Err(self.err(v, format!("{key} must be a whole number"))),
        }
    }

    fn table<'a, 'b>(&self, key: &str, v: &'a Spanned<'b>) -> Result<&'a DeTable<'b>, ProfileError> {
        v.get_ref().as_table().ok_or_else(|| self.err(v, format!("{key} must be a table")))
    }

    /// The tables of a list, refused before any is read when there are more than its cap.
    fn tables<'a, 'b>(&self, key: &str, v: &'a Spanned<'b>) -> Result<Vec<&'a Spanned<'b>>, ProfileError> {
        match v.get_ref() {
            DeValue::Array(items) => match settings::list_problem(key, items.len()) {
                Some(p) => Err(self.err(v, format!("{}: {}", p.path, p.message))),
                None => Ok(items.iter().collect()),
            },
            _ => Err(self.err(v, format!("{key} must be a list of tables ([[{key}]])"))),
        }
    }

    fn push(&mut self, entry: Entry, pos: Pos, paths: Vec<String>) {
        self.file.entries.push((entry, pos, paths));
    }

    /// A `--set key=value` from a TOML value, at the value's position.
    fn set(&mut self, key: &str, v: &Spanned<'_>) -> Result<(), ProfileError> {
        let value = setting_text(&to_json(v.get_ref()));
        let paths = settings::targets(key).map_err(|e| self.err(v, e.to_string()))?;
        let pos = self.pos(v);
        self.push(Entry::Set { key: key.to_string(), value }, pos, paths);
        Ok(())
    }

    /// The fields of a `[client]` / `[server]` table, each a `role.PATH` setting: leaves, and
    /// tagged tables (with a `kind`) whole.
    fn fields(&mut self, prefix: &str, table: &DeTable<'_>, fallback: bool) -> Result<(), ProfileError> {
        for (k, v) in table {
            let key = format!("{prefix}.{}", k.get_ref());
            if let DeValue::Table(t) = v.get_ref() {
                if !t.contains_key("kind") {
                    self.fields(&key, t, fallback)?;
                    continue;
                }
            }
            if !fallback {
                self.set(&key, v)?;
                continue;
            }
            let paths = settings::targets(&key).map_err(|e| self.err(v, e.to_string()))?;
            let value = setting_text(&to_json(v.get_ref()));
            let pos = self.pos(v);
            self.push(Entry::Fallback { key: key.clone(), path: key, value }, pos, paths);
        }
        Ok(())
    }

    /// `[client_profiles]`: a profile per client index (`1 = "stateless-2026"`), a file's path
    /// relative to this file (as `extends` is), each checked where it is written; applied as one
    /// `app.client_profiles` setting (a file that sets it replaces its base's whole table).
    fn client_profiles(&mut self, v: &Spanned<'_>) -> Result<(), ProfileError> {
        let table = self.table("client_profiles", v)?;
        let dir = Path::new(&self.file.origin).parent().unwrap_or(Path::new("")).to_path_buf();
        let mut parts = Vec::new();
        for (k, p) in table {
            let text = k.get_ref().as_ref();
            let index: u32 = text.parse().map_err(|_| {
                self.file.error(
                    Pos::of(self.text, k.span().start),
                    format!("client_profiles: `{text}` is not a client index (0, 1, ...)"),
                )
            })?;
            let arg = self.string(&format!("client_profiles.{index}"), p)?;
            let arg = if files::is_path(&arg) { dir.join(&arg).display().to_string() } else { arg };
            if arg.contains(',') {
                return Err(self.err(p, format!("client_profiles.{index}: a profile path with a comma is not read")));
            }
            profile_files::client(&arg).map_err(|e| self.err(p, format!("client_profiles.{index}: {e}")))?;
            parts.push(format!("{index}={arg}"));
        }
        let key = "app.client_profiles";
        let paths = settings::targets(key).map_err(|e| self.err(v, e.to_string()))?;
        let pos = self.pos(v);
        self.push(Entry::Set { key: key.to_string(), value: parts.join(",") }, pos, paths);
        Ok(())
    }

    fn tool(&self, i: usize, v: &Spanned<'_>) -> Result<(ToolSpec, Vec<(String, Pos)>), ProfileError> {
        let t = self.table("tools", v)?;
        let mut tool = ToolSpec {
            name: String::new(),
            duration: Duration::ZERO,
            event_interval: None,
            idempotent: false,
            ..ToolSpec::default()
        };
        let (mut named, mut timed) = (false, false);
        let mut where_ = Vec::new();
        for (k, f) in t {
            let key = k.get_ref().as_ref();
            match key {
                "name" => {
                    tool.name = self.string("tools.name", f)?;
                    named = true;
                }
                "duration" => {
                    tool.duration = self.duration("tools.duration", f)?;
                    timed = true;
                }
                "event_interval" => tool.event_interval = self.opt_duration("tools.event_interval", f)?,
                "idempotent" => {
                    tool.idempotent =
                        f.get_ref().as_bool().ok_or_else(|| self.err(f, "tools.idempotent must be true or false"))?
                }
                "side_effect" => {
                    tool.side_effect = match self.string("tools.side_effect", f)?.as_str() {
                        "start" => SideEffectAt::Start,
                        "completion" => SideEffectAt::Completion,
                        other => return Err(self.err(f, format!("tools.side_effect {other:?}: start or completion"))),
                    }
                }
                "on_abort" => {
                    tool.on_abort = match self.string("tools.on_abort", f)?.as_str() {
                        "ignore" => OnAbort::Ignore,
                        "stop" => OnAbort::Stop,
                        other => return Err(self.err(f, format!("tools.on_abort {other:?}: ignore or stop"))),
                    }
                }
                "burst" => {
                    let n = self.integer("tools.burst", f)?;
                    tool.burst = n;
                }
                "input_after" => tool.input_after = self.opt_duration("tools.input_after", f)?,
                _ => {
                    return Err(self.file.error(
                        Pos::of(self.text, k.span().start),
                        format!(
                            "unknown key `{key}` in a tool (a tool has: name, duration, event_interval, idempotent, side_effect, on_abort, burst, input_after)"
                        ),
                    ))
                }
            }
            where_.push((format!("tools.{i}.{key}"), self.pos(f)));
        }
        if !named || !timed {
            return Err(self.err(v, "a tool needs a name and a duration"));
        }
        Ok((tool, where_))
    }

    fn call(&self, i: usize, v: &Spanned<'_>) -> Result<CallSpec, ProfileError> {
        let t = self.table("calls", v)?;
        let mut call = CallSpec::new(Duration::ZERO, i as u32, "");
        let (mut at, mut tool) = (false, false);
        for (k, f) in t {
            match k.get_ref().as_ref() {
                "at" => {
                    call.at = self.duration("calls.at", f)?;
                    at = true;
                }
                "tool" => {
                    call.tool = self.string("calls.tool", f)?;
                    tool = true;
                }
                "call" => call.call = CallKey(self.integer("calls.call", f)?),
                "client" => call.client = self.integer("calls.client", f)?,
                "after_idle" => call.after_idle = Some(self.duration("calls.after_idle", f)?),
                "on_error" => call.on_error = OnError::parse(&self.string("calls.on_error", f)?).map_err(|m| self.err(f, m))?,
                "max_reissues" => call.max_reissues = self.integer("calls.max_reissues", f)?,
                other => {
                    return Err(self.file.error(
                        Pos::of(self.text, k.span().start),
                        format!(
                            "unknown key `{other}` in a call (a call has: at, after_idle, tool, call, client, on_error, max_reissues)"
                        ),
                    ))
                }
            }
        }
        if !(at || call.after_idle.is_some()) || !tool {
            return Err(self.err(v, "a call needs at (a time) or after_idle (a gap), and tool (a tool's name)"));
        }
        Ok(call)
    }

    fn delete(&self, v: &Spanned<'_>) -> Result<DeleteSpec, ProfileError> {
        let t = self.table("deletes", v)?;
        let mut delete = DeleteSpec { at: Duration::ZERO, client: 0, by: DeleteBy::App };
        let mut at = false;
        for (k, f) in t {
            match k.get_ref().as_ref() {
                "at" => {
                    delete.at = self.duration("deletes.at", f)?;
                    at = true;
                }
                "client" => delete.client = self.integer("deletes.client", f)?,
                "by" => {
                    delete.by = match self.string("deletes.by", f)?.as_str() {
                        "app" => DeleteBy::App,
                        "operator" => DeleteBy::Operator,
                        other => return Err(self.err(f, format!("deletes.by {other:?}: app or operator"))),
                    }
                }
                other => {
                    return Err(self.file.error(
                        Pos::of(self.text, k.span().start),
                        format!("unknown key `{other}` in a delete (a delete has: at, client, by)"),
                    ))
                }
            }
        }
        if !at {
            return Err(self.err(v, "a delete needs at (a time)"));
        }
        Ok(delete)
    }

    fn bogus_resume(&self, v: &Spanned<'_>) -> Result<BogusResume, ProfileError> {
        let t = self.table("bogus_resumes", v)?;
        let mut resume = BogusResume { at: Duration::ZERO, client: 0, id: ResumeId::Given(String::new()) };
        let (mut at, mut id) = (false, false);
        for (k, f) in t {
            match k.get_ref().as_ref() {
                "at" => {
                    resume.at = self.duration("bogus_resumes.at", f)?;
                    at = true;
                }
                "client" => resume.client = self.integer("bogus_resumes.client", f)?,
                "id" => {
                    resume.id = self.resume_id(f)?;
                    id = true;
                }
                other => {
                    return Err(self.file.error(
                        Pos::of(self.text, k.span().start),
                        format!("unknown key `{other}` in a bogus resume (it has: at, client, id)"),
                    ))
                }
            }
        }
        if !at || !id {
            return Err(self.err(v, "a bogus resume needs at (a time) and id (the Last-Event-ID it sends)"));
        }
        Ok(resume)
    }

    /// A bogus resume's id: a string, or `{ client = N, nth = K }` (the id of client N's K-th
    /// event).
    fn resume_id(&self, v: &Spanned<'_>) -> Result<ResumeId, ProfileError> {
        let Some(t) = v.get_ref().as_table() else {
            return self.string("bogus_resumes.id", v).map(ResumeId::Given);
        };
        let (mut client, mut nth) = (None, None);
        for (k, f) in t {
            match k.get_ref().as_ref() {
                "client" => client = Some(self.integer("bogus_resumes.id.client", f)?),
                "nth" => nth = Some(self.integer("bogus_resumes.id.nth", f)?),
                other => {
                    return Err(self.file.error(
                        Pos::of(self.text, k.span().start),
                        format!("unknown key `{other}` in a bogus resume's id (it has: client, nth)"),
                    ))
                }
            }
        }
        match (client, nth) {
            (Some(client), Some(nth)) => Ok(ResumeId::ReceivedBy { client, nth }),
            _ => Err(self.err(v, "id = { client = N, nth = K } names client N's K-th event with an id")),
        }
    }

    fn empty_resumes(&self, v: &Spanned<'_>) -> Result<EmptyResumes, ProfileError> {
        let t = self.table("empty_resumes", v)?;
        let mut empty = EmptyResumes { at: Duration::ZERO, client: 0, count: 1 };
        for (k, f) in t {
            match k.get_ref().as_ref() {
                "at" => empty.at = self.duration("empty_resumes.at", f)?,
                "client" => empty.client = self.integer("empty_resumes.client", f)?,
                "count" => empty.count = self.integer("empty_resumes.count", f)?,
                other => {
                    return Err(self.file.error(
                        Pos::of(self.text, k.span().start),
                        format!("unknown key `{other}` in empty resumes (they have: at, client, count)"),
                    ))
                }
            }
        }
        Ok(empty)
    }
}

/// The order entries apply in, whatever order the file writes them: the load balancer replaces a
/// whole profile, so it comes before anything else.
fn rank(key: &str) -> usize {
    KEYS.iter().position(|k| *k == key).unwrap_or(KEYS.len())
}

/// Reads one family file's text. `origin` names it in messages.
fn parse(text: &str, origin: &str) -> Result<FamilyFile, ProfileError> {
    let file = FamilyFile {
        origin: origin.to_string(),
        name: None,
        description: None,
        extends: None,
        entries: vec![],
        locations: vec![],
    };
    let table = DeTable::parse(text).map_err(|e| {
        let pos = e.span().map(|s| Pos::of(text, s.start)).unwrap_or(Pos::START);
        file.error(pos, e.message().replace('\n', " ").trim().to_string())
    })?;
    let mut r = Reader { text, file };
    let mut items: Vec<(&toml::Spanned<std::borrow::Cow<'_, str>>, &Spanned<'_>)> = table.get_ref().iter().collect();
    for (k, _) in &items {
        let key = k.get_ref().as_ref();
        if !KEYS.contains(&key) {
            return Err(r.file.error(
                Pos::of(text, k.span().start),
                format!("unknown key `{key}` (a scenario file has: {})", KEYS.join(", ")),
            ));
        }
    }
    items.sort_by_key(|(k, _)| rank(k.get_ref()));
    for (k, v) in items {
        let key = k.get_ref().as_ref();
        let pos = r.pos(v);
        match key {
            "name" => r.file.name = Some(r.string(key, v)?),
            "description" => r.file.description = Some(r.string(key, v)?),
            "extends" => r.file.extends = Some((r.string(key, v)?, pos)),
            "lb" => r.set("lb", v)?,
            "clients" => {
                let n = r.integer(key, v)?;
                r.push(Entry::Clients(n), pos, vec!["clients".into(), "calls".into()]);
            }
            "client_profiles" => r.client_profiles(v)?,
            "tool_jitter" => r.set("tool.jitter", v)?,
            "latency" => r.set("net.latency", v)?,
            "liveness_grace" => r.set("run.liveness_grace", v)?,
            "notifications" => r.set("app.notifications", v)?,
            "notify_interval" => {
                let d = r.opt_duration(key, v)?;
                r.push(Entry::NotifyInterval(d), pos, vec!["notify_interval".into()]);
            }
            "tools" => {
                let mut tools = Vec::new();
                for (i, t) in r.tables(key, v)?.into_iter().enumerate() {
                    let (tool, fields) = r.tool(i, t)?;
                    tools.push(tool);
                    r.file.locations.extend(fields);
                }
                let paths = vec!["tools".to_string()];
                r.push(Entry::Tools(tools), pos, paths);
            }
            "calls" => {
                let calls =
                    r.tables(key, v)?.into_iter().enumerate().map(|(i, c)| r.call(i, c)).collect::<Result<_, _>>()?;
                r.push(Entry::Calls(calls), pos, vec!["calls".into()]);
            }
            "deletes" => {
                let deletes = r.tables(key, v)?.into_iter().map(|d| r.delete(d)).collect::<Result<_, _>>()?;
                r.push(Entry::Deletes(deletes), pos, vec!["deletes".into()]);
            }
            "bogus_resumes" => {
                let list = r.tables(key, v)?.into_iter().map(|b| r.bogus_resume(b)).collect::<Result<_, _>>()?;
                r.push(Entry::BogusResumes(list), pos, vec!["bogus_resumes".into()]);
            }
            "empty_resumes" => {
                let list = r.tables(key, v)?.into_iter().map(|e| r.empty_resumes(e)).collect::<Result<_, _>>()?;
                r.push(Entry::EmptyResumes(list), pos, vec!["empty_resumes".into()]);
            }
            "client" | "server" => {
                let t = r.table(key, v)?;
                r.fields(key, t, false)?;
            }
            "fallback" => {
                let t = r.table(key, v)?;
                for (role, sub) in t {
                    let role_name = role.get_ref().as_ref();
                    if !["client", "server"].contains(&role_name) {
                        return Err(r.file.error(
                            Pos::of(text, role.span().start),
                            format!("unknown key `fallback.{role_name}` (fallback has: client, server)"),
                        ));
                    }
                    let sub = r.table(&format!("fallback.{role_name}"), sub)?;
                    r.fields(role_name, sub, true)?;
                }
            }
            "faults" => {
                let t = r.table(key, v)?;
                for (fk, fv) in t {
                    let name = fk.get_ref().as_ref();
                    if !FAULT_KEYS.contains(&name) {
                        return Err(r.file.error(
                            Pos::of(text, fk.span().start),
                            format!("unknown fault `{name}` (faults has: {})", FAULT_KEYS.join(", ")),
                        ));
                    }
                    let joined = match fv.get_ref() {
                        DeValue::Array(items) => {
                            let parts: Result<Vec<String>, _> = items.iter().map(|i| r.string(name, i)).collect();
                            Some(parts?.join(", "))
                        }
                        _ => None,
                    };
                    match joined {
                        Some(list) => {
                            let key = format!("fault.{name}");
                            let paths = settings::targets(&key).map_err(|e| r.err(fv, e.to_string()))?;
                            let at = r.pos(fv);
                            r.push(Entry::Set { key, value: list }, at, paths);
                        }
                        None => r.set(&format!("fault.{name}"), fv)?,
                    }
                }
            }
            _ => unreachable!("every key of KEYS is handled"),
        }
    }
    Ok(r.file)
}

/// A TOML value as serde's data model (`"none"` stays a string: the settings read it).
fn to_json(v: &DeValue<'_>) -> Value {
    match v {
        DeValue::String(s) => Value::String(s.to_string()),
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).map(Value::from).unwrap_or(Value::Null),
        DeValue::Float(f) => {
            f.as_str().parse::<f64>().ok().and_then(serde_json::Number::from_f64).map_or(Value::Null, Value::Number)
        }
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(d) => Value::String(d.to_string()),
        DeValue::Array(items) => Value::Array(items.iter().map(|i| to_json(i.get_ref())).collect()),
        DeValue::Table(t) => {
            Value::Object(t.iter().map(|(k, v)| (k.get_ref().to_string(), to_json(v.get_ref()))).collect::<Map<_, _>>())
        }
    }
}

/// A value as `--set` reads it: a string as it is, anything else as TOML.
fn setting_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => toml_value(other),
    }
}

// ---------------------------------------------------------------------------------------------
// Dumping
// ---------------------------------------------------------------------------------------------

/// A scenario as a complete family file: every scenario key, and under `[client]` / `[server]`
/// each field where the scenario differs from the profile it names. Loaded back over the same
/// profiles it gives the same scenario, and so runs byte for byte as it does.
pub fn dump(s: &Scenario, description: &str) -> Result<String, SimError> {
    let mut out = String::new();
    let _ =
        writeln!(out, "# The scenario family {:?}, every key written out (see sim/scenarios/long-tool.toml).", s.name);
    let _ = writeln!(out, "name = {}", quote(&s.name));
    if !description.is_empty() {
        let _ = writeln!(out, "description = {}", quote(description));
    }
    let show = |key: &str| settings::setting(key).map(|set| (set.show)(s));
    let lb = show("lb")?;
    let lb = if lb.starts_with('{') { lb } else { quote(&lb) };
    let _ = writeln!(out, "lb = {lb}");
    let _ = writeln!(out, "clients = {}", s.clients);
    let _ = writeln!(out, "tool_jitter = {:?}", s.tool_jitter);
    let _ = writeln!(out, "latency = {}", quote(&show("net.latency")?));
    let _ = writeln!(out, "liveness_grace = {}", quote(&format_duration(s.liveness_grace)));
    let _ = writeln!(out, "notify_interval = {}", quote(&s.notify_interval.map_or("none".into(), format_duration)));
    if let Some(n) = &s.notifications {
        let _ = writeln!(out, "notifications = {}", quote(&n.show()));
    }
    if !s.client_profiles.is_empty() {
        out.push_str("\n[client_profiles]\n");
        for (i, policy) in &s.client_profiles {
            let arg = s.client_profile_args.get(i).cloned().unwrap_or_else(|| policy.name.clone());
            if profile_files::client(&arg).ok().as_ref() != Some(policy) {
                return Err(SimError::Usage(format!(
                    "client {i}'s profile differs from {arg:?} (edited in code): a family file cannot say it"
                )));
            }
            // A path as the command gave it is relative to where it ran, not to the dumped file.
            let arg = match profile_files::is_path(&arg) {
                true => std::path::absolute(&arg).map(|p| p.display().to_string()).unwrap_or(arg),
                false => arg,
            };
            let _ = writeln!(out, "{i} = {}", quote(&arg));
        }
    }
    for t in &s.tools {
        let _ =
            writeln!(out, "\n[[tools]]\nname = {}\nduration = {}", quote(&t.name), quote(&format_duration(t.duration)));
        let _ = writeln!(out, "event_interval = {}", quote(&t.event_interval.map_or("none".into(), format_duration)));
        let _ = writeln!(out, "idempotent = {}", t.idempotent);
        if t.burst != 1 {
            let _ = writeln!(out, "burst = {}", t.burst);
        }
        if let Some(after) = t.input_after {
            let _ = writeln!(out, "input_after = {}", quote(&format_duration(after)));
        }
        if t.side_effect != SideEffectAt::default() {
            let _ = writeln!(out, "side_effect = \"completion\"");
        }
        if t.on_abort != OnAbort::default() {
            let _ = writeln!(out, "on_abort = \"stop\"");
        }
    }
    for c in &s.calls {
        let _ = writeln!(out, "\n[[calls]]\nat = {}\ncall = {}", quote(&format_duration(c.at)), c.call.0);
        let _ = writeln!(out, "tool = {}\nclient = {}", quote(&c.tool), c.client);
        if let Some(gap) = c.after_idle {
            let _ = writeln!(out, "after_idle = {}", quote(&format_duration(gap)));
        }
        if c.on_error != OnError::GiveUp || c.max_reissues != 1 {
            let _ = writeln!(out, "on_error = {}\nmax_reissues = {}", quote(c.on_error.as_str()), c.max_reissues);
        }
    }
    for d in &s.deletes {
        let _ = writeln!(out, "\n[[deletes]]\nat = {}\nclient = {}", quote(&format_duration(d.at)), d.client);
        if d.by == DeleteBy::Operator {
            let _ = writeln!(out, "by = \"operator\"");
        }
    }
    for b in &s.bogus_resumes {
        let _ = writeln!(out, "\n[[bogus_resumes]]\nat = {}\nclient = {}", quote(&format_duration(b.at)), b.client);
        match &b.id {
            ResumeId::Given(id) => writeln!(out, "id = {}", quote(id)),
            ResumeId::ReceivedBy { client, nth } => writeln!(out, "id = {{ client = {client}, nth = {nth} }}"),
        }
        .ok();
    }
    for e in &s.empty_resumes {
        let _ = writeln!(out, "\n[[empty_resumes]]\nat = {}", quote(&format_duration(e.at)));
        let _ = writeln!(out, "client = {}\ncount = {}", e.client, e.count);
    }
    let client = profile_files::client(s.client_arg.as_deref().unwrap_or(&s.client.name))?;
    let server = profile_files::server(s.server_arg.as_deref().unwrap_or(&s.server.name))?;
    for (role, mine, profile) in [
        ("client", serde_json::to_value(&s.client), serde_json::to_value(&client)),
        ("server", serde_json::to_value(&s.server), serde_json::to_value(&server)),
    ] {
        let (Ok(mine), Ok(profile)) = (mine, profile) else { continue };
        let mut lines = Vec::new();
        differences(&mine, &profile, "", &mut lines);
        if !lines.is_empty() {
            let _ = writeln!(out, "\n[{role}]");
            for line in lines {
                let _ = writeln!(out, "{line}");
            }
        }
    }
    out.push_str("\n[faults]\n");
    for key in FAULT_KEYS {
        let _ = writeln!(out, "{key} = {}", quote(&show(&format!("fault.{key}"))?));
    }
    Ok(out)
}

/// `path = value` lines where `mine` differs from `base`: leaves by their dotted path, tagged
/// tables (with a `kind`) whole.
fn differences(mine: &Value, base: &Value, prefix: &str, out: &mut Vec<String>) {
    let (Value::Object(m), Value::Object(b)) = (mine, base) else { return };
    let keys: BTreeMap<&String, &Value> = m.iter().collect();
    for (k, v) in keys {
        let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        match (v, b.get(k)) {
            (_, Some(old)) if old == v => {}
            (Value::Object(t), Some(old @ Value::Object(_))) if !t.contains_key("kind") => {
                differences(v, old, &path, out)
            }
            _ if k == "name" => {}
            _ => out.push(format!("{path} = {}", toml_value(v))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{families, SCENARIO_NAMES};
    use mcpsim_model::profiles;

    /// The scenario `Scenario::build` starts from, before the family.
    fn base(name: &str, client: &str, server: &str) -> Scenario {
        let mut s = Scenario::build("long-tool", client, server).unwrap();
        let fresh = Scenario::build(name, client, server).unwrap();
        // Everything a family leaves alone, as `Scenario::build` sets it.
        s.client = profile_files::client(client).unwrap();
        s.server = profile_files::server(server).unwrap();
        s.lb = profile_files::lb("default").unwrap();
        s.tools = vec![];
        s.calls = vec![];
        s.name = fresh.name;
        s
    }

    #[test]
    fn every_builtin_family_file_builds_what_its_rust_function_built() {
        for name in SCENARIO_NAMES {
            for c in profiles::CLIENT_NAMES {
                for sv in profiles::SERVER_NAMES {
                    let from_file = Scenario::build(name, c, sv).unwrap();
                    let by_rust = families::rust_built::apply(name, base(name, c, sv)).unwrap();
                    assert_eq!(from_file, by_rust, "{name} × {c} × {sv}");
                    assert_eq!(
                        serde_json::to_string(&from_file).unwrap(),
                        serde_json::to_string(&by_rust).unwrap(),
                        "{name}: the trace header's bytes"
                    );
                }
            }
        }
    }

    fn write(dir: &tempfile::TempDir, file: &str, text: &str) -> String {
        let path = dir.path().join(file);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    /// A fresh directory, removed when dropped (at the end of the test, also when it panics).
    fn tmp(test: &str) -> tempfile::TempDir {
        tempfile::Builder::new().prefix(&format!("mcpsim-family-{test}-")).tempdir().unwrap()
    }

    #[test]
    fn a_dumped_family_loads_back_as_the_same_scenario() {
        let dir = tmp("dump");
        for name in SCENARIO_NAMES {
            for (c, sv) in [("reference", "reference"), ("naive", "rmcp"), ("py-sdk", "ts-sdk")] {
                let s = Scenario::build(name, c, sv).unwrap();
                let text = dump(&s, &describe(name)).unwrap();
                let path = write(&dir, &format!("dumped-{name}.toml"), &text);
                let mut back = Scenario::build(&path, c, sv).unwrap_or_else(|e| panic!("{e}\n{text}"));
                assert_eq!(back.scenario_arg.as_deref(), Some(path.as_str()));
                assert!(back.cli_args().contains(&format!("--scenario {path}")), "{}", back.cli_args());
                if c == "naive" {
                    // The header holds the family's name, written by the dump: the same bytes.
                    let (a, b) = (crate::run(&s, 3).unwrap(), crate::run(&back, 3).unwrap());
                    assert_eq!(a.trace.to_jsonl(), b.trace.to_jsonl(), "{name}");
                }
                back.scenario_arg = None;
                assert_eq!(back, s, "{name} × {c} × {sv}\n{text}");
            }
        }
    }

    #[test]
    fn a_file_extends_a_family_and_says_only_what_differs() {
        let dir = tmp("extends");
        let path = write(&dir, "slow-pay.toml", "extends = \"long-tool\"\n\n[server]\nkeepalive = \"20s\"\n");
        let s = Scenario::build(&path, "naive", "reference").unwrap();
        let mut expected = Scenario::build("long-tool", "naive", "reference").unwrap();
        expected.server.keepalive = Some(Duration::from_secs(20));
        expected.name = "slow-pay".into();
        expected.scenario_arg = Some(path.clone());
        assert_eq!(s, expected);
        // A file extending that file, by its path; tools replace the whole list.
        let two = write(
            &dir,
            "two.toml",
            "extends = \"slow-pay.toml\"\nname = \"faster\"\n[[tools]]\nname = \"pay\"\nduration = \"2m\"\n[faults]\nreset = [\"30s\", \"1m\"]\n",
        );
        let s = Scenario::build(&two, "naive", "reference").unwrap();
        assert_eq!((s.name.as_str(), s.tools[0].duration, s.faults.len()), ("faster", Duration::from_secs(120), 2));
        assert_eq!(s.server.keepalive, Some(Duration::from_secs(20)));
    }

    #[test]
    fn the_targeted_faults_are_data_too() {
        // Every `fault.KEY` of a targeted fault can be said in a file, and a dump writes it back.
        let dir = tmp("targeted");
        let text = "extends = \"long-tool\"\n[lb]\nhops = [{}]\n[faults]\nrestart = \"hop0@90s\"\ncut = [\"client0@30s\", \"replica0@1m\"]\nanswer = \"hop0=404@60s..90s\"\nmalformed = \"client0@20s\"\n";
        let path = write(&dir, "targeted.toml", text);
        let s = Scenario::build(&path, "reference", "reference").unwrap_or_else(|e| panic!("{e}"));
        let kinds: Vec<&str> = s.faults.faults().iter().map(|f| f.fault.kind()).collect();
        for kind in ["restart", "cut", "answer", "malformed"] {
            assert!(kinds.contains(&kind), "{kind}: {kinds:?}");
        }
        assert_eq!(kinds.iter().filter(|k| **k == "cut").count(), 2);
        let dumped = dump(&s, "targeted").unwrap();
        let again = write(&dir, "again.toml", &dumped);
        let mut back = Scenario::build(&again, "reference", "reference").unwrap_or_else(|e| panic!("{e}\n{dumped}"));
        back.scenario_arg = s.scenario_arg.clone();
        back.name = s.name.clone();
        assert_eq!(back.faults, s.faults, "{dumped}");
    }

    #[test]
    fn the_fallback_sets_only_what_the_profile_leaves_out() {
        // rmcp keeps alive every 15 s itself; reference has none, so server-restart gives it 15 s.
        let dir = tmp("fallback");
        let path = write(&dir, "f.toml", "extends = \"server-restart\"\n[fallback.server]\nkeepalive = \"40s\"\n");
        assert_eq!(
            Scenario::build(&path, "reference", "rmcp").unwrap().server.keepalive,
            Some(Duration::from_secs(15))
        );
        assert_eq!(
            Scenario::build(&path, "reference", "reference").unwrap().server.keepalive,
            Some(Duration::from_secs(15)),
            "the base's fallback came first"
        );
    }

    #[test]
    fn a_borrowed_resume_id_and_empty_resumes_read_dump_and_read_back() {
        let dir = tmp("acts");
        let text = "extends = \"long-tool\"\nclients = 2\n\n[[bogus_resumes]]\nat = \"2s\"\nclient = 1\nid = { client = 0, nth = 3 }\n\n[[empty_resumes]]\nat = \"1s\"\ncount = 2\n";
        let path = write(&dir, "acts.toml", text);
        let s = Scenario::build(&path, "reference", "reference").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.bogus_resumes[0].id, ResumeId::ReceivedBy { client: 0, nth: 3 });
        assert_eq!(s.empty_resumes, vec![EmptyResumes { at: Duration::from_secs(1), client: 0, count: 2 }]);
        let dumped = write(&dir, "dumped.toml", &dump(&s, "").unwrap());
        let mut back = Scenario::build(&dumped, "reference", "reference").unwrap();
        back.scenario_arg = s.scenario_arg.clone();
        back.name = s.name.clone();
        assert_eq!(back, s);
        // In a trace header a written id stays a plain string.
        let header = serde_json::to_string(&BogusResume { at: Duration::ZERO, client: 0, id: "x".into() }).unwrap();
        assert!(header.contains(r#""id":"x""#), "{header}");
        let err = |body: &str| {
            let path = write(&dir, "bad-acts.toml", &format!("extends = \"long-tool\"\nclients = 2\n{body}"));
            Scenario::build(&path, "reference", "reference").unwrap_err().to_string()
        };
        let e = err("[[bogus_resumes]]\nat = \"1s\"\nclient = 1\nid = { client = 1, nth = 1 }\n");
        assert!(e.contains("an id of its own"), "{e}");
        let e = err("[[bogus_resumes]]\nat = \"1s\"\nclient = 1\nid = { client = 0, nth = 0 }\n");
        assert!(e.contains("from 1"), "{e}");
        let e = err("[[bogus_resumes]]\nat = \"1s\"\nclient = 1\nid = { client = 3, nth = 1 }\n");
        assert!(e.contains("names client 3"), "{e}");
        let e = err("[[bogus_resumes]]\nat = \"1s\"\nid = { client = 1 }\n");
        assert!(e.contains("client = N, nth = K"), "{e}");
        let e = err("[[empty_resumes]]\nat = \"1s\"\ncount = 0\n");
        assert!(e.contains("empty_resumes.count"), "{e}");
        let e = err("[[empty_resumes]]\nat = \"1s\"\nclient = 2\n");
        assert!(e.contains("names client 2"), "{e}");
    }

    #[test]
    fn bad_files_say_where_and_what() {
        let dir = tmp("bad");
        let err = |text: &str| {
            let path = write(&dir, "bad.toml", text);
            Scenario::build(&path, "reference", "reference").unwrap_err().to_string()
        };
        let at = |e: &str, prefix: &str| assert!(e.contains(&format!("bad.toml:{prefix}")) && !e.contains('\n'), "{e}");
        at(&err("extends = \"long-tool\"\nclients = = 2\n"), "2:");
        at(&err("extends = \"long-tool\"\n\n[server]\nkeepalive = \"soon\"\n"), "4:13: server.keepalive=soon");
        at(&err("extends = \"long-tool\"\nspeed = 3\n"), "2:1: unknown key `speed`");
        at(&err("extends = \"nope\"\n"), "1:11: extends \"nope\"");
        at(&err("extends = \"long-tool\"\n[faults]\nmeteor = \"1m\"\n"), "3:1: unknown fault `meteor`");
        at(
            &err("extends = \"long-tool\"\n[server]\nkeepalive = \"500ms\"\n"),
            "3:13: server.keepalive: 500ms is below",
        );
        at(&err("extends = \"long-tool\"\n[[tools]]\nname = \"pay\"\nduration = \"48h\"\n"), "4:12: tool.duration");
        at(&err("extends = \"long-tool\"\nclients = 0\n"), "2:11: app.clients");
        at(&err("extends = \"long-tool\"\n[[calls]]\nat = \"1s\"\ntool = \"nope\"\n"), "2:1: calls.tool");
        let e = err("extends = \"bad.toml\"\n");
        assert!(e.contains("a cycle"), "{e}");
        let e = Scenario::build("nope", "reference", "reference").unwrap_err().to_string();
        assert!(e.contains("long-tool") && e.contains(".toml"), "{e}");
    }
}
