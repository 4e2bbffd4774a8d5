//! `mcpsim check deployment.toml`: the user's own system as data. A deployment file names a
//! server, the load balancer in front of it, the clients that matter and a few workload
//! settings; `check` runs every scenario family against each client over a few seeds, and
//! reports per client × family `ok` or the invariants broken (with the command that replays the
//! first failing seed), the mitigations that make each broken cell clean over the same seeds, and
//! `advise`'s retention and idle-TTL answer for the deployment.
//!
//! A deployment becomes command-line arguments and nothing else — `--client`, `--server`,
//! `--scenario` and `--set` overrides — so every cell's replay command rebuilds it exactly:
//!
//! | key | what | becomes |
//! |---|---|---|
//! | `server` | a built-in name, a profile file (relative to the deployment), or a table with `extends` and the fields that differ | `--server`, and `--set server.FIELD=…` for each field of the table |
//! | `lb` | a built-in name, a file, or a table of fields | `--set lb=…`, or `--set lb.FIELD=…` |
//! | `clients` | names or files (default: ts-sdk, py-sdk, rmcp) | one column each |
//! | `families` | names or files (default: every built-in family) | one row each |
//! | `tool_duration` | every family's tool runs this long | `--set tool.duration=…` |
//! | `event_rate` | `2/s`: the rate of the families whose tool emits events | `--set tool.event_interval=…` there |
//! | `max_outage` | the longest network outage `advise` plans for (default: chatty-tool's, 4m) | advise only |
//! | `[set]` | any `--set` key, for every family | `--set KEY=…` |
//!
//! Every problem in the file is one line, `FILE:LINE:COL: message`.

use crate::engine::runner::run;
use crate::error::SimError;
use crate::report::artifacts::{program, shell_quote};
use crate::report::html;
use crate::scenario::settings::{self, problems};
use crate::scenario::{files, profile_files, Scenario, SCENARIO_NAMES};
use crate::studies::advise::{self, AdviseInput};
use crate::studies::matrix::{Mitigation, MITIGATIONS};
use crate::studies::pool::{run_cells, PoolCell, Progress, RunFn, Silent};
use crate::studies::tally::Tally;
use mcpsim_model::config::{ReplicaStore, Routing};
use mcpsim_model::profiles::{self, ProfileError, Role};
use mcpsim_model::schedule::Need;
use mcpsim_model::time::{format_duration, parse_duration};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;
use toml::de::{DeTable, DeValue};

/// The clients a deployment checks when it names none: the three SDKs.
pub const DEFAULT_CLIENTS: &[&str] = &["ts-sdk", "py-sdk", "rmcp"];

/// The family whose workload `advise` reads (a tool emitting events through an outage).
const ADVISE_FAMILY: &str = "chatty-tool";

const KEYS: &[&str] =
    &["description", "server", "lb", "clients", "families", "tool_duration", "event_rate", "max_outage", "set"];

/// A position in the deployment file, 1-based.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    /// The line, from 1.
    pub line: usize,
    /// The column (in characters), from 1.
    pub col: usize,
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

/// One `--set` a deployment makes, and where the file makes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    /// The settable key.
    pub key: String,
    /// Its value, as `--set` takes it.
    pub value: String,
    /// Where the file sets it.
    pub pos: Pos,
    /// Only for the families whose tool emits events (`event_rate`).
    pub chatty_only: bool,
    /// Given on the command line (`check FILE --set KEY=VALUE`), not read from the file.
    pub command_line: bool,
}

/// A deployment file, read.
#[derive(Clone, Debug, PartialEq)]
pub struct Deployment {
    /// The file, for messages.
    pub origin: String,
    /// The file's own `description`, if it has one.
    pub description: Option<String>,
    /// The `--server` argument, and where the file names it.
    pub server: (String, Pos),
    /// The `--client` arguments.
    pub clients: Vec<(String, Pos)>,
    /// The `--scenario` arguments.
    pub families: Vec<(String, Pos)>,
    /// Overrides for every family, in order.
    pub overrides: Vec<Override>,
    /// The outage `advise` plans for (default: the advise family's partition).
    pub max_outage: Option<Duration>,
    /// The event rate `advise` plans for (default: the advise family's).
    pub event_rate: Option<f64>,
}

impl Deployment {
    fn error(&self, pos: Pos, message: impl Into<String>) -> SimError {
        error(&self.origin, pos, message)
    }

    /// Reads the deployment file at `path`.
    pub fn load(path: &Path) -> Result<Deployment, SimError> {
        let origin = path.display().to_string();
        let text = files::read(path).map_err(|problem| SimError::Io { path: origin.clone(), problem })?;
        Deployment::parse(&text, &origin)
    }

    /// Reads a deployment from its text; `origin` names the file (paths in it are relative to
    /// the file's directory).
    pub fn parse(text: &str, origin: &str) -> Result<Deployment, SimError> {
        let table = DeTable::parse(text).map_err(|e| {
            let pos = e.span().map(|s| Pos::of(text, s.start)).unwrap_or(Pos::START);
            error(origin, pos, e.message().replace('\n', " ").trim())
        })?;
        let dir = Path::new(origin).parent().unwrap_or(Path::new("")).to_path_buf();
        let relative = |arg: &str| -> String {
            if profile_files::is_path(arg) && !Path::new(arg).is_absolute() {
                dir.join(arg).display().to_string()
            } else {
                arg.to_string()
            }
        };
        let r = Reader { text, origin };
        let mut d = Deployment {
            origin: origin.to_string(),
            description: None,
            server: (String::new(), Pos::START),
            clients: DEFAULT_CLIENTS.iter().map(|c| (c.to_string(), Pos::START)).collect(),
            families: SCENARIO_NAMES.iter().map(|f| (f.to_string(), Pos::START)).collect(),
            overrides: vec![],
            max_outage: None,
            event_rate: None,
        };
        let (mut server, mut lb, mut set, mut workload) = (None, vec![], vec![], vec![]);
        for (k, v) in table.get_ref() {
            let key = k.get_ref().as_ref();
            let pos = r.pos(v);
            match key {
                "description" => d.description = Some(r.string(key, v)?),
                "server" => match v.get_ref() {
                    DeValue::String(s) => server = Some((relative(s), pos, vec![])),
                    DeValue::Table(t) => {
                        let Some(base) = t.get("extends") else {
                            return Err(r.err(
                                pos,
                                "server: a table needs extends = \"NAME\" (a built-in server profile or a file) \
                                 and the fields that differ",
                            ));
                        };
                        let base_pos = r.pos(base);
                        let base = relative(&r.string("server.extends", base)?);
                        let mut fields = vec![];
                        r.fields("server", t, &mut fields)?;
                        server = Some((base, base_pos, fields));
                    }
                    _ => return Err(r.err(pos, "server must be a profile name, a file, or a table")),
                },
                "lb" => match v.get_ref() {
                    DeValue::String(s) => lb.push(Override::at("lb", &relative(s), pos)),
                    DeValue::Table(t) => r.fields("lb", t, &mut lb)?,
                    _ => return Err(r.err(pos, "lb must be a profile name, a file, or a table")),
                },
                "clients" | "families" => {
                    let DeValue::Array(items) = v.get_ref() else {
                        return Err(r.err(pos, format!("{key} must be a list of names or files")));
                    };
                    let list = items.iter().map(|i| Ok((relative(&r.string(key, i)?), r.pos(i)))).collect::<Result<
                        Vec<_>,
                        SimError,
                    >>(
                    )?;
                    if list.is_empty() {
                        return Err(r.err(pos, format!("{key}: the list is empty (leave it out for the default)")));
                    }
                    if key == "clients" {
                        d.clients = list;
                    } else {
                        d.families = list;
                    }
                }
                "tool_duration" => workload.push(Override::at("tool.duration", &r.string(key, v)?, pos)),
                "event_rate" => {
                    let text = r.string(key, v)?;
                    let rate = advise::parse_rate(&text).map_err(|e| r.err(pos, format!("event_rate: {e}")))?;
                    let interval = if rate == 0.0 {
                        "none".to_string()
                    } else {
                        format_duration(Duration::from_micros((1e6 / rate).round().max(1.0) as u64))
                    };
                    workload
                        .push(Override { chatty_only: true, ..Override::at("tool.event_interval", &interval, pos) });
                    d.event_rate = Some(rate);
                }
                "max_outage" => {
                    let text = r.string(key, v)?;
                    d.max_outage = Some(parse_duration(&text).map_err(|m| r.err(pos, format!("max_outage: {m}")))?);
                }
                "set" => {
                    let DeValue::Table(t) = v.get_ref() else {
                        return Err(r.err(pos, "[set] must be a table of KEY = VALUE (any --set key)"));
                    };
                    r.flatten("", t, &mut set)?;
                }
                _ => {
                    return Err(r.err(
                        Pos::of(text, k.span().start),
                        format!("unknown key `{key}` (a deployment has: {})", KEYS.join(", ")),
                    ))
                }
            }
        }
        let Some((server, server_pos, fields)) = server else {
            return Err(
                r.err(Pos::START, "a deployment names its server: server = \"NAME\", a file, or a [server] table")
            );
        };
        d.server = (server, server_pos);
        d.overrides = fields.into_iter().chain(lb).chain(workload).chain(set).collect();
        for o in &d.overrides {
            settings::targets(&o.key).map_err(|e| d.error(o.pos, e.to_string()))?;
        }
        d.check_names()?;
        Ok(d)
    }

    /// Adds `--set KEY=VALUE` what-ifs from the command line, after everything the file sets
    /// (so they win), for every family; each key is checked before anything runs.
    pub fn with_sets(mut self, sets: &[String]) -> Result<Deployment, SimError> {
        for set in sets {
            let Some((key, value)) = set.split_once('=') else {
                return Err(SimError::Usage(format!("--set {set}: expected KEY=VALUE")));
            };
            settings::targets(key).map_err(|e| SimError::Usage(format!("--set {set}: {e}")))?;
            let o = Override { command_line: true, ..Override::at(key, value, Pos::START) };
            self.overrides.push(o);
        }
        // Every cell's scenario builds: a bad value is one line before any run.
        for (client, _) in &self.clients {
            for (family, _) in &self.families {
                self.scenario(client, family)?;
            }
        }
        Ok(self)
    }

    /// A problem with one override: `--set …` for a command-line one, else where the file has it.
    fn override_error(&self, o: &Override, message: String) -> SimError {
        if o.command_line {
            SimError::Usage(format!("--set {}={}: {message}", o.key, o.value))
        } else {
            self.error(o.pos, message)
        }
    }

    /// Every profile and family the file names exists and reads, each reported where it is
    /// named.
    fn check_names(&self) -> Result<(), SimError> {
        let at = |pos: Pos, e: SimError| match e {
            located @ SimError::Profile(_) => located,
            other => self.error(pos, other.to_string()),
        };
        profile_files::server(&self.server.0).map_err(|e| at(self.server.1, e))?;
        for (c, pos) in &self.clients {
            profile_files::client(c).map_err(|e| at(*pos, e))?;
        }
        for (f, pos) in &self.families {
            let s = Scenario::build(f, "reference", "reference").map_err(|e| at(*pos, e))?;
            // Each column is one client profile: a family with a fleet of its own would judge
            // other clients under that column's name.
            s.require_one_client_profile("check").map_err(|e| at(*pos, e))?;
        }
        Ok(())
    }

    /// The scenario of one cell: the family with the client and the deployment's server and
    /// overrides, validated; a problem is reported at the value of the file that causes it.
    pub fn scenario(&self, client: &str, family: &str) -> Result<Scenario, SimError> {
        let mut s = Scenario::build(family, client, &self.server.0)?;
        let chatty = s.tools.first().is_some_and(|t| t.event_interval.is_some());
        let mut applied: Vec<(&Override, Vec<String>)> = Vec::new();
        for o in self.overrides.iter().filter(|o| chatty || !o.chatty_only) {
            settings::apply(&mut s, &o.key, &o.value).map_err(|e| self.override_error(o, e.to_string()))?;
            s.overrides.push((o.key.clone(), o.value.clone()));
            applied.push((o, settings::targets(&o.key).unwrap_or_default()));
        }
        if let Some(p) = problems(&s).into_iter().next() {
            let hit = |t: &String| {
                *t == p.path || p.path.starts_with(&format!("{t}.")) || t.starts_with(&format!("{}.", p.path))
            };
            let culprit = applied.iter().rev().find(|(_, targets)| targets.iter().any(hit)).map(|(o, _)| *o);
            let message =
                format!("{}: {} (with client {client}, family {family})", settings::key_for(&p.path), p.message);
            return Err(match culprit {
                Some(o) => self.override_error(o, message),
                None => self.error(self.server.1, message),
            });
        }
        if let Some(p) = s.clients_problem() {
            return Err(self.error(Pos::START, p));
        }
        s.require_one_client_profile("check").map_err(|e| self.error(Pos::START, e.to_string()))?;
        Ok(s)
    }
}

impl Override {
    fn at(key: &str, value: &str, pos: Pos) -> Override {
        Override { key: key.to_string(), value: value.to_string(), pos, chatty_only: false, command_line: false }
    }
}

fn error(origin: &str, pos: Pos, message: impl Into<String>) -> SimError {
    SimError::Profile(ProfileError {
        origin: origin.to_string(),
        line: pos.line,
        col: pos.col,
        message: message.into(),
    })
}

type Spanned<'a> = toml::Spanned<DeValue<'a>>;

struct Reader<'t> {
    text: &'t str,
    origin: &'t str,
}

impl Reader<'_> {
    fn pos(&self, v: &Spanned<'_>) -> Pos {
        Pos::of(self.text, v.span().start)
    }

    fn err(&self, pos: Pos, message: impl Into<String>) -> SimError {
        error(self.origin, pos, message)
    }

    fn string(&self, key: &str, v: &Spanned<'_>) -> Result<String, SimError> {
        v.get_ref().as_str().map(str::to_string).ok_or_else(|| self.err(self.pos(v), format!("{key} must be a string")))
    }

    /// The fields of a `[server]` / `[lb]` table as `ROLE.PATH` overrides: leaves, and tagged
    /// tables (with a `kind`) whole; `extends` is not a field.
    fn fields(&self, prefix: &str, table: &DeTable<'_>, out: &mut Vec<Override>) -> Result<(), SimError> {
        for (k, v) in table {
            let name = k.get_ref().as_ref();
            if name == "extends" && !prefix.contains('.') {
                continue;
            }
            let key = format!("{prefix}.{name}");
            match v.get_ref() {
                DeValue::Table(t) if !t.contains_key("kind") => self.fields(&key, t, out)?,
                other => {
                    if settings::targets(&key).is_err() {
                        return Err(self.err(Pos::of(self.text, k.span().start), unknown_field(prefix, name)));
                    }
                    out.push(Override::at(&key, &value_text(other), self.pos(v)))
                }
            }
        }
        Ok(())
    }

    /// `[set]`: dotted keys (`tool.duration = "5m"` or `"tool.duration" = "5m"`), each a `--set`.
    fn flatten(&self, prefix: &str, table: &DeTable<'_>, out: &mut Vec<Override>) -> Result<(), SimError> {
        for (k, v) in table {
            let key = if prefix.is_empty() { k.get_ref().to_string() } else { format!("{prefix}.{}", k.get_ref()) };
            match v.get_ref() {
                DeValue::Table(t) if !t.contains_key("kind") && settings::targets(&key).is_err() => {
                    self.flatten(&key, t, out)?
                }
                other => out.push(Override::at(&key, &value_text(other), self.pos(v))),
            }
        }
        Ok(())
    }
}

/// An unknown field of the `[server]` / `[lb]` table (or a table inside it) `table`, with the
/// fields that table has.
fn unknown_field(table: &str, name: &str) -> String {
    let (root, inner) = table.split_once('.').unwrap_or((table, ""));
    let role = if root == "lb" { Role::Lb } else { Role::Server };
    let known: Vec<&str> = profiles::documented_paths(role)
        .into_iter()
        .filter_map(|p| if inner.is_empty() { Some(p) } else { p.strip_prefix(inner)?.strip_prefix('.') })
        .filter(|p| !p.contains('.') && *p != "name")
        .collect();
    let what = if root == "lb" { "a balancer" } else { "a server" };
    format!(
        "unknown field `{name}` in [{table}] ({what} has: {}; see `mcpsim profiles --dump {root}:NAME`)",
        known.join(", ")
    )
}

/// A TOML value as `--set` reads it: a string as it is, anything else written as TOML.
fn value_text(v: &DeValue<'_>) -> String {
    match v {
        DeValue::String(s) => s.to_string(),
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).map(|n| n.to_string()).unwrap_or_default(),
        DeValue::Float(f) => f.as_str().to_string(),
        DeValue::Boolean(b) => b.to_string(),
        DeValue::Datetime(d) => d.to_string(),
        DeValue::Array(items) => {
            format!("[{}]", items.iter().map(|i| inline(i.get_ref())).collect::<Vec<_>>().join(", "))
        }
        DeValue::Table(_) => inline(v),
    }
}

fn inline(v: &DeValue<'_>) -> String {
    match v {
        DeValue::String(s) => toml::Value::String(s.to_string()).to_string(),
        DeValue::Table(t) => format!(
            "{{ {} }}",
            t.iter().map(|(k, v)| format!("{} = {}", k.get_ref(), inline(v.get_ref()))).collect::<Vec<_>>().join(", ")
        ),
        other => value_text(other),
    }
}

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

/// One client × family: its scenario, its tally, and what fixes it.
#[derive(Clone, Debug)]
pub struct CheckCell {
    /// The `--client` argument.
    pub client: String,
    /// The `--scenario` argument.
    pub family: String,
    /// The scenario the cell ran.
    pub scenario: Scenario,
    /// What its seeds did.
    pub tally: Tally,
    /// The names of the changes ([`Fix`]) that make the cell clean over the same seeds, in the
    /// order [`fixes`] lists them (empty for a clean cell).
    pub fixes: Vec<String>,
}

impl CheckCell {
    /// Whether any seed broke an invariant.
    pub fn broken(&self) -> bool {
        self.tally.violated()
    }

    /// The cell's verdict in a word or a few: `ok`, or each invariant broken with its count.
    pub fn verdict(&self) -> String {
        if !self.broken() {
            return "ok".to_string();
        }
        let t = &self.tally;
        t.broken().iter().map(|v| format!("{v} {}/{}", t.violations[*v], t.n)).collect::<Vec<_>>().join(", ")
    }
}

/// What `advise` says for one client against the deployment's server.
#[derive(Clone, Debug)]
pub struct CheckAdvice {
    /// The client profile advised for.
    pub client: String,
    /// The retention and idle-TTL answer.
    pub advice: advise::Advice,
    /// The server as the deployment configures it.
    pub server: mcpsim_model::config::ServerPolicy,
}

/// The whole answer.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// The deployment checked.
    pub deployment: Deployment,
    /// Seeds per cell.
    pub seeds: u64,
    /// Clients outermost, then families, each in the file's order.
    pub cells: Vec<CheckCell>,
    /// `advise`'s answer per client.
    pub advice: Vec<CheckAdvice>,
    /// Every change tried on the broken cells: the deployment's own settings, then the
    /// mitigations.
    pub tried: Vec<Fix>,
}

impl CheckReport {
    /// Whether any cell broke an invariant.
    pub fn broken(&self) -> bool {
        self.cells.iter().any(CheckCell::broken)
    }

    /// The changes that make this cell clean.
    pub fn fixes_of<'a>(&'a self, cell: &'a CheckCell) -> impl Iterator<Item = &'a Fix> + 'a {
        self.tried.iter().filter(|f| cell.fixes.contains(&f.name))
    }

    /// Every change tried with how many broken cells it makes clean, most first (ties in the
    /// order they were tried: the deployment's own settings first).
    pub fn ranked(&self) -> Vec<(&Fix, usize)> {
        let mut ranked: Vec<(&Fix, usize)> =
            self.tried.iter().map(|f| (f, self.cells.iter().filter(|c| c.fixes.contains(&f.name)).count())).collect();
        ranked.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        ranked
    }
}

/// Runs every family against every client over seeds `0..seeds`, then every mitigation on each
/// broken cell over the same seeds, and asks `advise` for each client.
pub fn check(
    deployment: &Deployment,
    seeds: u64,
    jobs: usize,
    runner: &RunFn,
    progress: &dyn Progress,
) -> Result<CheckReport, SimError> {
    let (_, results) = check_part(deployment, seeds, jobs, |_| true, runner, progress)?;
    assemble(deployment, seeds, results.into_iter().map(|(_, r)| r).collect())
}

/// One cell's result: its tally and the names of the changes ([`Fix`]) that fix it.
pub type CellResult = (Tally, Vec<String>);

/// One change `check` tries on every broken cell: a setting of the deployment itself (its
/// balancer's routing, keep-alive, idle timeouts, retention, session TTL), or a mitigation of
/// `matrix --mitigate`.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    /// `lb.routing=sticky-session` for a deployment setting, the mitigation's name otherwise.
    pub name: String,
    /// The `--set` overrides it makes.
    pub sets: Vec<(String, String)>,
    /// What it changes, in a few words.
    pub description: String,
    /// A setting of the deployment (try it with `check FILE --set …`), not a `--mitigate`.
    pub own: bool,
}

impl Fix {
    fn setting(key: &str, value: String, description: String) -> Fix {
        Fix { name: format!("{key}={value}"), sets: vec![(key.to_string(), value)], description, own: true }
    }

    /// Its overrides as `--set` arguments.
    pub fn set_args(&self) -> String {
        self.sets
            .iter()
            .map(|(k, v)| format!("--set {}", shell_quote(&format!("{k}={v}"))))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// How a user applies it: `--set KEY=VALUE`, or `--mitigate NAME (--set …)`.
    pub fn how(&self) -> String {
        if self.own {
            self.set_args()
        } else {
            format!("--mitigate {} ({})", self.name, self.set_args())
        }
    }
}

/// A duration rounded up to whole seconds, at least one, as `--set` reads it.
fn whole_seconds(d: Duration) -> String {
    format_duration(Duration::from_secs(d.as_secs_f64().ceil().max(1.0) as u64))
}

/// Every change `check` tries on a broken cell, derived from the deployment's own settings as
/// its cells have them (`cells`: every cell's scenario), then every mitigation:
///
/// - routing: with more than one replica and sessions kept per replica, `lb.routing =
///   "sticky-session"` (every request of a session reaches the replica that created it) and
///   `lb.store = "shared"` (every replica sees every session);
/// - keep-alive: SSE comments at a quarter of the shortest idle timeout on the path that counts
///   them, when the server sends none that often;
/// - idle timeouts: a balancer idle timeout longer than twice the longest tool runs, and no
///   maximum connection lifetime;
/// - headers: when a hop drops a header (`drop_request_headers`, `drop_response_headers`), the
///   same hops passing every header on;
/// - retention and session TTL: `advise`'s least safe values (every client's, the largest) for
///   the retention per stream, the retention window and the idle TTL, where the server has less.
pub fn fixes(cells: &[&Scenario], advice: &[advise::Advice]) -> Vec<Fix> {
    let mut out = Vec::new();
    let Some(first) = cells.first() else { return MITIGATIONS.iter().map(mitigation_fix).collect() };
    let (lb, server) = (&first.lb, &first.server);
    if lb.replicas > 1 && lb.store == ReplicaStore::Local {
        if lb.routing != Routing::StickySession {
            out.push(Fix::setting(
                "lb.routing",
                "sticky-session".into(),
                format!(
                    "the balancer sends every request of a session to the replica that created it (of {})",
                    lb.replicas
                ),
            ));
        }
        out.push(Fix::setting(
            "lb.store",
            "shared".into(),
            format!("the {} replicas share one store of sessions and events", lb.replicas),
        ));
    }
    let counting_idle = lb
        .idle_timeout
        .into_iter()
        .chain(lb.hops.iter().filter(|h| h.comments_count).filter_map(|h| h.idle_timeout))
        .min();
    if let Some(idle) = counting_idle {
        let interval = idle / 4;
        if server.keepalive.is_none_or(|k| k >= idle) && interval >= Duration::from_secs(1) {
            out.push(Fix::setting(
                "server.keepalive",
                whole_seconds(interval),
                format!("SSE keep-alive comments, a quarter of the shortest idle timeout ({})", format_duration(idle)),
            ));
        }
    }
    let longest_tool = cells.iter().flat_map(|s| s.tools.iter().map(|t| t.duration)).max().unwrap_or_default();
    if let Some(idle) = lb.idle_timeout {
        let longer = longest_tool * 2;
        if longer > idle {
            out.push(Fix::setting(
                "lb.idle_timeout",
                whole_seconds(longer),
                format!(
                    "the balancer's idle timeout twice the longest tool ({}), so a silent call outlives it",
                    format_duration(longest_tool)
                ),
            ));
        }
    }
    if lb.max_lifetime.is_some() {
        out.push(Fix::setting("lb.max_lifetime", "none".into(), "no maximum connection lifetime".into()));
    }
    // A hop that drops a transport header: the same hops, passing every header on.
    if lb.hops.iter().any(|h| !h.drop_request_headers.is_empty() || !h.drop_response_headers.is_empty()) {
        let mut hops = lb.hops.clone();
        hops.iter_mut().for_each(|h| {
            h.drop_request_headers.clear();
            h.drop_response_headers.clear();
        });
        if let Ok(json) = serde_json::to_value(&hops) {
            out.push(Fix::setting(
                "lb.hops",
                profiles::toml_value(&json),
                "every hop passes Last-Event-ID and Mcp-Session-Id on (allow them in its header list)".into(),
            ));
        }
    }
    let most = |need: fn(&advise::Advice) -> &Need| {
        advice.iter().filter_map(|a| need(a).minimal()).fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    };
    let r = &server.retention;
    if let Some(events) = most(|a| &a.retention) {
        if r.max_events.is_some_and(|has| f64::from(has) < events) {
            out.push(Fix::setting(
                "server.retention",
                format!("{events:.0}"),
                "events kept per stream: advise's least safe value".into(),
            ));
        }
    }
    if let Some(secs) = most(|a| &a.window) {
        if r.window.is_some_and(|has| has.as_secs_f64() < secs) {
            out.push(Fix::setting(
                "server.retention_window",
                whole_seconds(Duration::from_secs_f64(secs)),
                "how long events are kept: advise's least safe value".into(),
            ));
        }
    }
    if let Some(secs) = most(|a| &a.idle_ttl) {
        if server.idle_ttl.is_some_and(|has| has.as_secs_f64() < secs) {
            out.push(Fix::setting(
                "server.idle_ttl",
                whole_seconds(Duration::from_secs_f64(secs)),
                "session idle TTL: advise's least safe value".into(),
            ));
        }
    }
    // A setting that is exactly a mitigation is listed once, as the mitigation.
    let mitigations: Vec<Fix> = MITIGATIONS.iter().map(mitigation_fix).collect();
    out.retain(|o| !mitigations.iter().any(|m| m.sets == o.sets));
    out.extend(mitigations);
    out
}

fn mitigation_fix(m: &Mitigation) -> Fix {
    Fix {
        name: m.name.to_string(),
        sets: m.overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        description: m.description.to_string(),
        own: false,
    }
}

/// `advise`'s answer for each client of the deployment (family chatty-tool).
fn advice_for(deployment: &Deployment) -> Result<Vec<CheckAdvice>, SimError> {
    let mut advice = Vec::new();
    for (client, _) in &deployment.clients {
        let s = deployment.scenario(client, ADVISE_FAMILY)?;
        let mut input = AdviseInput::from_scenario(&s);
        if let Some(outage) = deployment.max_outage {
            input.max_outage = Some(outage);
            input.request_age_at_outage = None;
        }
        if let Some(rate) = deployment.event_rate {
            input.event_rate = rate;
        }
        advice.push(CheckAdvice {
            client: client.clone(),
            advice: advise::advise(&s, &input),
            server: s.server.clone(),
        });
    }
    Ok(advice)
}

/// The changes to try on this deployment's broken cells.
fn plan_fixes(deployment: &Deployment, all: &[(String, String, Scenario)]) -> Result<Vec<Fix>, SimError> {
    let advice: Vec<advise::Advice> = advice_for(deployment)?.into_iter().map(|a| a.advice).collect();
    Ok(fixes(&all.iter().map(|c| &c.2).collect::<Vec<_>>(), &advice))
}

/// Every client × family cell's scenario, clients outermost, then families, each in the file's
/// order: the cells' indices for `--shard K/N`.
fn plan(deployment: &Deployment) -> Result<Vec<(String, String, Scenario)>, SimError> {
    let mut cells = Vec::new();
    for (client, _) in &deployment.clients {
        for (family, _) in &deployment.families {
            cells.push((client.clone(), family.clone(), deployment.scenario(client, family)?));
        }
    }
    Ok(cells)
}

/// The cells `owns` picks (by index, see `plan`), each run over seeds `0..seeds` and, when
/// broken, under every mitigation: what one shard of a sharded check runs. Returns how many
/// cells there are in all and the results of those picked.
pub fn check_part(
    deployment: &Deployment,
    seeds: u64,
    jobs: usize,
    owns: impl Fn(usize) -> bool,
    runner: &RunFn,
    progress: &dyn Progress,
) -> Result<(usize, Vec<(usize, CellResult)>), SimError> {
    let all = plan(deployment)?;
    let picked: Vec<(usize, &Scenario)> =
        all.iter().enumerate().filter(|(i, _)| owns(*i)).map(|(i, c)| (i, &c.2)).collect();
    let work: Vec<PoolCell> = picked.iter().map(|(_, s)| PoolCell { scenario: s, seeds: 0..seeds }).collect();
    let tallies = run_cells(&work, jobs, runner, progress, |_, _| Ok(()))?;
    let tried = plan_fixes(deployment, &all)?;
    // Every change on every broken cell, in one batch.
    let mut mitigated: Vec<(usize, &str, Scenario)> = Vec::new();
    for (k, _) in tallies.iter().enumerate().filter(|(_, t)| t.violated()) {
        for f in &tried {
            let mut s = picked[k].1.clone();
            // A change the scenario refuses, or one that changes nothing in it, fixes nothing.
            if s.apply_overrides(&f.sets).is_ok() && !same_run(&s, picked[k].1) {
                mitigated.push((k, &f.name, s));
            }
        }
    }
    let work: Vec<PoolCell> = mitigated.iter().map(|(_, _, s)| PoolCell { scenario: s, seeds: 0..seeds }).collect();
    let fixed = run_cells(&work, jobs, runner, &Silent, |_, _| Ok(()))?;
    let mut results: Vec<(usize, CellResult)> =
        picked.iter().zip(tallies).map(|((i, _), t)| (*i, (t, vec![]))).collect();
    for ((k, name, _), tally) in mitigated.iter().zip(fixed) {
        if !tally.violated() {
            results[*k].1 .1.push(name.to_string());
        }
    }
    Ok((all.len(), results))
}

/// Whether two scenarios run the same (they differ at most in the overrides that led to them).
fn same_run(a: &Scenario, b: &Scenario) -> bool {
    let (mut a, mut b) = (a.clone(), b.clone());
    a.overrides.clear();
    b.overrides.clear();
    a == b
}

/// The report from every cell's result (in `plan`'s order) and `advise`'s answer per client.
pub fn assemble(deployment: &Deployment, seeds: u64, results: Vec<CellResult>) -> Result<CheckReport, SimError> {
    let all = plan(deployment)?;
    if all.len() != results.len() {
        return Err(SimError::Usage(format!(
            "{} cell results for the deployment's {} cells",
            results.len(),
            all.len()
        )));
    }
    let tried = plan_fixes(deployment, &all)?;
    for (_, fixes) in &results {
        if let Some(unknown) = fixes.iter().find(|f| !tried.iter().any(|t| t.name == **f)) {
            return Err(SimError::Usage(format!(
                "a cell result names {unknown:?}, not a change tried on this deployment"
            )));
        }
    }
    let cells = all
        .into_iter()
        .zip(results)
        .map(|((client, family, scenario), (tally, fixes))| CheckCell { client, family, scenario, tally, fixes })
        .collect();
    let advice = advice_for(deployment)?;
    Ok(CheckReport { deployment: deployment.clone(), seeds, cells, advice, tried })
}

/// [`check`] with the real runner.
pub fn check_deployment(
    deployment: &Deployment,
    seeds: u64,
    jobs: usize,
    progress: &dyn Progress,
) -> Result<CheckReport, SimError> {
    check(deployment, seeds, jobs, &run, progress)
}

// ---------------------------------------------------------------------------------------------
// Reporting
// ---------------------------------------------------------------------------------------------

/// A need as one short phrase, beside what the server has.
fn need_line(need: &Need, unit: &str, has: Option<f64>) -> String {
    let show =
        |x: f64| if unit == "events" { format!("{x:.0} events") } else { format_duration(Duration::from_secs_f64(x)) };
    let has_text = has.map_or("unbounded".to_string(), show);
    match need {
        Need::Above(x) => {
            let minimal = need.minimal().unwrap_or(*x);
            let enough = has.is_none_or(|h| h > *x);
            format!("at least {} (has {has_text}: {})", show(minimal), if enough { "enough" } else { "TOO LITTLE" })
        }
        Need::NotNeeded(why) => format!("any ({why}; has {has_text})"),
        Need::Impossible(why) => format!("no value works ({why})"),
    }
}

/// The advice lines for one client.
fn advice_lines(a: &CheckAdvice) -> [String; 3] {
    let r = &a.server.retention;
    [
        format!("retention per stream: {}", need_line(&a.advice.retention, "events", r.max_events.map(f64::from))),
        format!("retention window:     {}", need_line(&a.advice.window, "s", r.window.map(|w| w.as_secs_f64()))),
        format!(
            "session idle TTL:     {}",
            need_line(&a.advice.idle_ttl, "s", a.server.idle_ttl.map(|t| t.as_secs_f64()))
        ),
    ]
}

/// What `advise` was told, in one line.
fn advice_inputs(a: &advise::Advice) -> String {
    let p = &a.input;
    format!(
        "event rate {}/s, outage {}, load-balancer idle {}",
        (p.event_rate * 1000.0).round() / 1000.0,
        p.max_outage.map_or("none".into(), format_duration),
        p.lb_idle.map_or("none".into(), format_duration),
    )
}

/// The families (rows) and clients (columns) in the file's order.
fn axes(report: &CheckReport) -> (Vec<&str>, Vec<&str>) {
    let families = report.deployment.families.iter().map(|(f, _)| f.as_str()).collect();
    let clients = report.deployment.clients.iter().map(|(c, _)| c.as_str()).collect();
    (families, clients)
}

fn cell<'a>(report: &'a CheckReport, client: &str, family: &str) -> Option<&'a CheckCell> {
    report.cells.iter().find(|c| c.client == client && c.family == family)
}

/// The report as text: the table, each broken cell, and the advice.
pub fn render_text(report: &CheckReport) -> String {
    let mut out = String::new();
    let d = &report.deployment;
    let _ = writeln!(out, "deployment {}: server {}, {} override(s)", d.origin, d.server.0, d.overrides.len());
    if let Some(desc) = &d.description {
        let _ = writeln!(out, "  {desc}");
    }
    let _ = writeln!(out, "seeds 0..{} per cell\n", report.seeds);
    let (families, clients) = axes(report);
    let broken: Vec<&CheckCell> = report.cells.iter().filter(|c| c.broken()).collect();
    let label = |c: &CheckCell| -> String {
        match broken.iter().position(|b| std::ptr::eq(*b, c)) {
            Some(i) => format!("{} [{}]", c.verdict(), i + 1),
            None => c.verdict(),
        }
    };
    let mut rows: Vec<Vec<String>> =
        vec![std::iter::once("family".to_string()).chain(clients.iter().map(|c| c.to_string())).collect()];
    for f in &families {
        let mut row = vec![f.to_string()];
        row.extend(clients.iter().map(|c| cell(report, c, f).map(label).unwrap_or_default()));
        rows.push(row);
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    for (n, row) in rows.iter().enumerate() {
        let line: Vec<String> = row.iter().zip(&widths).map(|(t, w)| format!("{t:<w$}")).collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
        if n == 0 {
            let _ = writeln!(out, "{}", widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
        }
    }
    if broken.is_empty() {
        let _ = writeln!(out, "\nevery cell ok");
    }
    for (i, c) in broken.iter().enumerate() {
        let _ = writeln!(out, "\n[{}] {} × {}: {}", i + 1, c.client, c.family, c.verdict());
        if let Some((seed, replay)) = &c.tally.first_violation {
            let _ = writeln!(out, "  first failing seed {seed}: {replay}");
        }
        if c.fixes.is_empty() {
            let _ = writeln!(out, "  no single change makes it clean over these seeds");
        } else {
            let fixes: Vec<String> = report.fixes_of(c).map(Fix::how).collect();
            let _ = writeln!(out, "  made clean by: {}", fixes.join("; "));
        }
    }
    if !broken.is_empty() {
        let ranked = report.ranked();
        let _ = writeln!(out, "\nchanges tried on the {} broken cell(s), most cells made clean first:", broken.len());
        if ranked.iter().all(|(_, n)| *n == 0) {
            let _ = writeln!(out, "  none makes a broken cell clean over these seeds");
        }
        for (f, n) in ranked.iter().filter(|(_, n)| *n > 0) {
            let _ = writeln!(out, "  {n}/{}  {}: {}", broken.len(), f.how(), f.description);
        }
        if let Some((best, _)) = ranked.iter().find(|(f, n)| *n > 0 && f.own) {
            let _ = writeln!(out, "  what if: {} check {} {}", program(), d.origin, best.set_args());
        }
    }
    let _ = writeln!(out, "\nadvise (family {ADVISE_FAMILY}: the least retention and idle TTL that lose nothing):");
    for a in &report.advice {
        let _ = writeln!(out, "  {} against {} ({}):", a.client, a.advice.server, advice_inputs(&a.advice));
        for line in advice_lines(a) {
            let _ = writeln!(out, "    {line}");
        }
    }
    out
}

/// The report as one self-contained HTML page: the table, the advice, and for each broken cell
/// its verdict, replay command and mitigations beside the trace of its first failing seed (its
/// sequence diagram, cause chain and timeline).
pub fn render_html(report: &CheckReport, runner: &RunFn) -> Result<String, SimError> {
    let e = html::escape;
    let d = &report.deployment;
    let mut sections = Vec::new();
    let mut top = String::new();
    let _ = writeln!(top, "<section class=\"m-check\">");
    if let Some(desc) = &d.description {
        let _ = writeln!(top, "<p>{}</p>", e(desc));
    }
    let _ = writeln!(top, "<p>Server <code>{}</code>; seeds 0..{} per cell.</p>", e(&d.server.0), report.seeds);
    let (families, clients) = axes(report);
    top.push_str("<table class=\"m-check-table\"><thead><tr><th>family</th>");
    for c in &clients {
        let _ = write!(top, "<th>{}</th>", e(c));
    }
    top.push_str("</tr></thead><tbody>\n");
    for f in &families {
        let _ = write!(top, "<tr><th>{}</th>", e(f));
        for c in &clients {
            match cell(report, c, f) {
                Some(x) if x.broken() => {
                    let _ = write!(top, "<td class=\"m-bad\"><a href=\"#{}\">{}</a></td>", anchor(x), e(&x.verdict()));
                }
                Some(x) => {
                    let _ = write!(top, "<td>{}</td>", e(&x.verdict()));
                }
                None => top.push_str("<td></td>"),
            }
        }
        top.push_str("</tr>\n");
    }
    top.push_str("</tbody></table>\n");
    let _ = writeln!(top, "<h2>Retention and idle TTL (advise, family {ADVISE_FAMILY})</h2>\n<ul>");
    for a in &report.advice {
        let _ = writeln!(top, "<li><b>{}</b> ({})<ul>", e(&a.client), e(&advice_inputs(&a.advice)));
        for line in advice_lines(a) {
            let _ = writeln!(top, "<li>{}</li>", e(&line));
        }
        top.push_str("</ul></li>\n");
    }
    top.push_str("</ul>\n</section>\n");
    sections.push(top);
    for c in report.cells.iter().filter(|c| c.broken()) {
        let Some((seed, replay)) = &c.tally.first_violation else { continue };
        let outcome = runner(&c.scenario, *seed)?;
        let mut s = String::new();
        let _ = writeln!(s, "<section class=\"m-cell\" id=\"{}\">", anchor(c));
        let _ = writeln!(s, "<h2>{} × {}: {}</h2>", e(&c.client), e(&c.family), e(&c.verdict()));
        let _ = writeln!(s, "<p>Replay the first failing seed: <code>{}</code></p>", e(replay));
        if c.fixes.is_empty() {
            s.push_str("<p class=\"m-mitigation\">No single change makes it clean over these seeds.</p>\n");
        } else {
            s.push_str("<p class=\"m-mitigation\">Made clean by:</p>\n<ul>\n");
            for f in report.fixes_of(c) {
                let _ = writeln!(s, "<li><code>{}</code>: {}</li>", e(&f.how()), e(&f.description));
            }
            s.push_str("</ul>\n");
        }
        s.push_str(&html::trace_section(&outcome.trace));
        s.push_str("</section>\n");
        sections.push(s);
    }
    let title = format!("mcpsim check {}", d.origin);
    Ok(html::page(&title, &sections))
}

/// The HTML id of a cell's section.
pub fn anchor(c: &CheckCell) -> String {
    let clean = |t: &str| t.chars().map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '-' }).collect::<String>();
    format!("cell-{}--{}", clean(&c.client), clean(&c.family))
}
