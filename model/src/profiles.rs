//! Profiles as files: the client, server and load-balancer policies of the design note's
//! reference implementations, its two incidents and the real SDKs live as TOML files in
//! `model/profiles/{client,server,lb}/NAME.toml` (embedded here), each naming the SDK version and
//! where each behaviour was read (`shared/docs/sdk-profiles.md`, protocol 2025-11-25). Adding an
//! SDK version is adding a file and a line in the table below.
//!
//! A profile file is the policy's fields (the serde names of [`ClientPolicy`], [`ServerPolicy`],
//! [`LbConfig`]) plus a few keys about the file itself: `extends` (a built-in name, or a path for
//! the caller to resolve), `description`, `sdk` and a `[sources]` table mapping a field (dotted)
//! to where its value was read. `extends` layers the file over another: tables merge key by key,
//! except a table with a `kind` (a tagged choice such as `close_handling`), which is replaced
//! whole. The string `"none"` stands for an absent value (TOML has no null).
//!
//! Nothing here reads a file: [`parse_layer`] takes text, and [`chain`] asks its caller for the
//! layer an `extends` names.

use crate::config::{ClientPolicy, LbConfig, ServerPolicy};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::OnceLock;
use thiserror::Error;

/// Which machine a profile describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// A client library ([`ClientPolicy`]).
    Client,
    /// A server ([`ServerPolicy`]).
    Server,
    /// The load balancer between them ([`LbConfig`]).
    Lb,
}

impl Role {
    /// Every role, in the order `mcpsim profiles` lists them.
    pub const ALL: [Role; 3] = [Role::Client, Role::Server, Role::Lb];

    /// `client`, `server` or `lb`: the folder of its built-in files and the first word of its keys.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Server => "server",
            Role::Lb => "lb",
        }
    }

    /// The built-in profile names, in listing order.
    pub fn names(self) -> &'static [&'static str] {
        match self {
            Role::Client => CLIENT_NAMES,
            Role::Server => SERVER_NAMES,
            Role::Lb => LB_NAMES,
        }
    }

    fn files(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Role::Client => CLIENT_FILES,
            Role::Server => SERVER_FILES,
            Role::Lb => LB_FILES,
        }
    }

    /// The built-in profiles of earlier SDK releases ([`CLIENT_VERSIONED_NAMES`],
    /// [`SERVER_VERSIONED_NAMES`]): usable by name, listed after [`Role::names`].
    pub fn versioned_names(self) -> &'static [&'static str] {
        match self {
            Role::Client => CLIENT_VERSIONED_NAMES,
            Role::Server => SERVER_VERSIONED_NAMES,
            Role::Lb => &[],
        }
    }

    /// Whether the policy type has a `name` field (the load balancer's has none).
    fn named(self) -> bool {
        self != Role::Lb
    }

    fn index(self) -> usize {
        match self {
            Role::Client => 0,
            Role::Server => 1,
            Role::Lb => 2,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parse once: the built-in files are constant, so each is parsed (and each built-in policy
// resolved) at most once per process. A search asks for setting names and profiles on every case
// (issue 22: re-parsing them was about 40 % of its CPU).
// ---------------------------------------------------------------------------------------------

/// A built-in file's name and what parsing it gave.
type ParsedFile = (&'static str, Result<Layer, ProfileError>);

/// Every built-in file of `role`, parsed, in the order of its table.
fn parsed_files(role: Role) -> &'static [ParsedFile] {
    static PARSED: [OnceLock<Vec<ParsedFile>>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    PARSED[role.index()].get_or_init(|| {
        role.files().iter().map(|(name, text)| (*name, parse_layer(role, text, &builtin_origin(role, name)))).collect()
    })
}

/// A built-in file of `role`, parsed once; `None` for an unknown name.
fn parsed_file(role: Role, name: &str) -> Option<&'static Result<Layer, ProfileError>> {
    parsed_files(role).iter().find(|(n, _)| *n == name).map(|(_, layer)| layer)
}

/// The setting names of `role` (see [`known_paths`]), computed once.
pub fn known_paths_ref(role: Role) -> &'static BTreeSet<String> {
    static KNOWN: [OnceLock<BTreeSet<String>>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    KNOWN[role.index()].get_or_init(|| {
        parsed_files(role).iter().filter_map(|(_, l)| l.as_ref().ok()).flat_map(|l| l.keys.keys().cloned()).collect()
    })
}

/// Every built-in profile of a role resolved once, by name (`None` for one that does not resolve).
fn resolved_all<T: DeserializeOwned>(role: Role) -> Vec<(&'static str, Option<T>)> {
    role.names()
        .iter()
        .chain(role.versioned_names())
        .map(|name| {
            let policy = builtin_layers(role, name).and_then(Result::ok).and_then(|l| resolve(role, &l).ok());
            (*name, policy.map(|p: Resolved<T>| p.policy))
        })
        .collect()
}

macro_rules! builtin {
    ($role:literal, $name:literal) => {
        ($name, include_str!(concat!("../profiles/", $role, "/", $name, ".toml")))
    };
}

const CLIENT_FILES: &[(&str, &str)] = &[
    builtin!("client", "reference"),
    builtin!("client", "naive"),
    builtin!("client", "ts-sdk"),
    builtin!("client", "py-sdk"),
    builtin!("client", "rmcp"),
    builtin!("client", "go-sdk"),
    builtin!("client", "stateless-2026"),
    builtin!("client", "py-sdk-1.29"),
];

const SERVER_FILES: &[(&str, &str)] = &[
    builtin!("server", "reference"),
    builtin!("server", "silent-head"),
    builtin!("server", "ts-sdk"),
    builtin!("server", "py-sdk"),
    builtin!("server", "rmcp"),
    builtin!("server", "go-sdk"),
    builtin!("server", "stateless-2026"),
    builtin!("server", "ts-sdk-1.29"),
    builtin!("server", "py-sdk-1.27"),
    builtin!("server", "rmcp-1.3"),
    builtin!("server", "rmcp-0.16"),
];

const LB_FILES: &[(&str, &str)] = &[
    builtin!("lb", "default"),
    builtin!("lb", "cdn-alb"),
    builtin!("lb", "alb"),
    builtin!("lb", "nginx"),
    builtin!("lb", "haproxy"),
];

/// Client profile names, in the order `mcpsim profiles` lists them.
pub const CLIENT_NAMES: &[&str] = &["reference", "naive", "ts-sdk", "py-sdk", "rmcp", "go-sdk", "stateless-2026"];

/// Server profile names, in the order `mcpsim profiles` lists them.
pub const SERVER_NAMES: &[&str] = &["reference", "silent-head", "ts-sdk", "py-sdk", "rmcp", "go-sdk", "stateless-2026"];

/// Server profiles of earlier SDK releases, each `extends` the current one and names the change.
/// Built in and usable by name (`--server rmcp-1.3`), but not columns of the compatibility matrix.
pub const SERVER_VERSIONED_NAMES: &[&str] = &["ts-sdk-1.29", "py-sdk-1.27", "rmcp-1.3", "rmcp-0.16"];

/// Client profiles of earlier SDK releases, each `extends` the current one and names the change.
/// Built in and usable by name (`--client py-sdk-1.29`), but not rows of the compatibility matrix.
pub const CLIENT_VERSIONED_NAMES: &[&str] = &["py-sdk-1.29"];

/// Load-balancer profile names.
pub const LB_NAMES: &[&str] = &["default", "cdn-alb", "alb", "nginx", "haproxy"];

/// The text of a built-in profile file.
pub fn builtin_text(role: Role, name: &str) -> Option<&'static str> {
    role.files().iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

/// Where a built-in file lives in the repository (for messages and `[sources]`).
pub fn builtin_origin(role: Role, name: &str) -> String {
    format!("model/profiles/{}/{name}.toml", role.as_str())
}

/// The client profile of that name.
pub fn client(name: &str) -> Option<ClientPolicy> {
    static ALL: OnceLock<Vec<(&'static str, Option<ClientPolicy>)>> = OnceLock::new();
    cached(ALL.get_or_init(|| resolved_all(Role::Client)), name)
        .or_else(|| builtin(Role::Client, name).map(|p| p.policy))
}

/// The server profile of that name.
pub fn server(name: &str) -> Option<ServerPolicy> {
    static ALL: OnceLock<Vec<(&'static str, Option<ServerPolicy>)>> = OnceLock::new();
    cached(ALL.get_or_init(|| resolved_all(Role::Server)), name)
        .or_else(|| builtin(Role::Server, name).map(|p| p.policy))
}

/// The load-balancer profile of that name.
pub fn lb(name: &str) -> Option<LbConfig> {
    static ALL: OnceLock<Vec<(&'static str, Option<LbConfig>)>> = OnceLock::new();
    cached(ALL.get_or_init(|| resolved_all(Role::Lb)), name).or_else(|| builtin(Role::Lb, name).map(|p| p.policy))
}

/// A policy resolved once, if `name` is among them.
fn cached<T: Clone>(all: &[(&'static str, Option<T>)], name: &str) -> Option<T> {
    all.iter().find(|(n, _)| *n == name).and_then(|(_, p)| p.clone())
}

/// One line on a client or server profile, for `mcpsim profiles` (the file's `description`).
pub fn describe(name: &str) -> String {
    [Role::Client, Role::Server, Role::Lb]
        .into_iter()
        .find_map(|role| {
            builtin_layers(role, name).and_then(|l| l.ok()).and_then(|l| l.last()?.meta.description.clone())
        })
        .unwrap_or_default()
}

/// The release a built-in profile models (the file's `sdk`, e.g. `rmcp 0.16.x (crates.io)`), for
/// `mcpsim profiles`; empty for an unknown name.
pub fn release(role: Role, name: &str) -> String {
    builtin_layers(role, name).and_then(|l| l.ok()).and_then(|l| l.last()?.meta.sdk.clone()).unwrap_or_default()
}

/// A built-in profile, resolved. The built-in files are part of the program, and a test loads
/// every one of them, so a failure here is a bug in this crate, not bad input.
fn builtin<T: DeserializeOwned>(role: Role, name: &str) -> Option<Resolved<T>> {
    let layers = builtin_layers(role, name)?.expect("the built-in profile files are valid (tested)");
    Some(resolve(role, &layers).expect("the built-in profile files are valid (tested)"))
}

/// The layers of a built-in profile, its bases first; `None` for an unknown name.
pub fn builtin_layers(role: Role, name: &str) -> Option<Result<Vec<Layer>, ProfileError>> {
    let top = parsed_file(role, name)?.clone();
    Some(top.and_then(|top| chain(role, top, &mut builtin_base)))
}

/// Resolves an `extends` that names a built-in profile.
pub fn builtin_base(role: Role, name: &str, from: &Layer) -> Result<Layer, ProfileError> {
    let (_, pos) = from.extends.clone().unwrap_or_default();
    let parsed = parsed_file(role, name).ok_or_else(|| {
        from.error_at(
            pos,
            format!(
                "extends {name:?}: no built-in {} profile of that name (known: {})",
                role.as_str(),
                role.names().join(", ")
            ),
        )
    })?;
    parsed.clone()
}

// ---------------------------------------------------------------------------------------------
// Errors and positions
// ---------------------------------------------------------------------------------------------

/// A position in a file, 1-based.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    /// The line, from 1.
    pub line: usize,
    /// The column in characters, from 1.
    pub col: usize,
}

impl Pos {
    /// The start of a file.
    pub const START: Pos = Pos { line: 1, col: 1 };

    fn of(text: &str, offset: usize) -> Pos {
        let before = &text[..offset.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
        Pos { line, col }
    }
}

/// What is wrong with a profile file, and where: printed `FILE:LINE:COL: message` on one line.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{origin}:{line}:{col}: {message}")]
pub struct ProfileError {
    /// The file (or `--set`).
    pub origin: String,
    /// The line, from 1.
    pub line: usize,
    /// The column, from 1.
    pub col: usize,
    /// What is wrong, and what was expected.
    pub message: String,
}

// ---------------------------------------------------------------------------------------------
// Layers
// ---------------------------------------------------------------------------------------------

/// What a file says about itself besides the policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// One line on what the profile models.
    pub description: Option<String>,
    /// The SDK and version it was read from.
    pub sdk: Option<String>,
    /// Field (dotted) → where its value was read.
    pub sources: BTreeMap<String, String>,
}

/// One profile file, parsed but not yet resolved against its bases.
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    /// The file, for messages.
    pub origin: String,
    /// What it extends, and where that is written.
    pub extends: Option<(String, Pos)>,
    /// What the file says about itself.
    pub meta: Meta,
    /// The policy fields the file sets, as serde's data model (`"none"` already `null`).
    pub fields: Map<String, Value>,
    /// Where each key (dotted path) is written.
    pub keys: BTreeMap<String, Pos>,
    /// Where each value (dotted path) is written.
    pub values: BTreeMap<String, Pos>,
}

impl Layer {
    /// An error at a position of this file.
    pub fn error_at(&self, pos: Pos, message: impl Into<String>) -> ProfileError {
        ProfileError { origin: self.origin.clone(), line: pos.line, col: pos.col, message: one_line(&message.into()) }
    }

    /// An error about a field (dotted), at its value if the file sets it, else at the start.
    pub fn error_on(&self, path: &str, message: impl Into<String>) -> ProfileError {
        let pos = self.values.get(path).or_else(|| self.keys.get(path)).copied().unwrap_or(Pos::START);
        self.error_at(pos, message)
    }

    /// Sets the policy's `name` if the file does not (a user's file is named after itself).
    pub fn name_if_missing(&mut self, name: &str) {
        self.fields.entry("name").or_insert_with(|| Value::String(name.to_string()));
    }
}

fn one_line(text: &str) -> String {
    text.split('\n').map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

/// Parses one profile file's text. `origin` names it in messages.
pub fn parse_layer(role: Role, text: &str, origin: &str) -> Result<Layer, ProfileError> {
    #[cfg(test)]
    if origin.starts_with("model/profiles/") {
        tests::BUILTIN_PARSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let mut layer = Layer {
        origin: origin.to_string(),
        extends: None,
        meta: Meta::default(),
        fields: Map::new(),
        keys: BTreeMap::new(),
        values: BTreeMap::new(),
    };
    let table = toml::de::DeTable::parse(text).map_err(|e| {
        let pos = e.span().map(|s| Pos::of(text, s.start)).unwrap_or(Pos::START);
        layer.error_at(pos, e.message().to_string())
    })?;
    for (key, value) in table.get_ref() {
        let name = key.get_ref().as_ref();
        let key_pos = Pos::of(text, key.span().start);
        let value_pos = Pos::of(text, value.span().start);
        let string = |what: &str| {
            value
                .get_ref()
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| layer.error_at(value_pos, format!("{what} must be a string")))
        };
        match name {
            "extends" => layer.extends = Some((string("extends")?, value_pos)),
            "description" => layer.meta.description = Some(string("description")?),
            "sdk" => layer.meta.sdk = Some(string("sdk")?),
            "name" if !role.named() => {}
            "sources" => {
                let Some(sources) = value.get_ref().as_table() else {
                    return Err(layer.error_at(value_pos, "[sources] must be a table of field = \"where it was read\""));
                };
                flatten_sources(&layer, text, "", sources, &mut BTreeMap::new())
                    .map(|s| layer.meta.sources.extend(s))?;
            }
            _ => {
                let converted = convert(&layer, text, name, name, value)?;
                layer.keys.insert(name.to_string(), key_pos);
                record_positions(text, name, value, &mut layer);
                layer.fields.insert(name.to_string(), converted);
            }
        }
    }
    Ok(layer)
}

fn flatten_sources(
    layer: &Layer,
    text: &str,
    prefix: &str,
    table: &toml::de::DeTable<'_>,
    out: &mut BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, ProfileError> {
    for (k, v) in table {
        let path = join(prefix, k.get_ref());
        match v.get_ref() {
            toml::de::DeValue::String(s) => {
                out.insert(path, s.to_string());
            }
            toml::de::DeValue::Table(t) => {
                flatten_sources(layer, text, &path, t, out)?;
            }
            _ => return Err(layer.error_at(Pos::of(text, v.span().start), "a source must be a string")),
        }
    }
    Ok(out.clone())
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn record_positions(text: &str, path: &str, value: &toml::Spanned<toml::de::DeValue<'_>>, layer: &mut Layer) {
    layer.values.insert(path.to_string(), Pos::of(text, value.span().start));
    if let Some(table) = value.get_ref().as_table() {
        for (k, v) in table {
            let sub = join(path, k.get_ref());
            layer.keys.insert(sub.clone(), Pos::of(text, k.span().start));
            record_positions(text, &sub, v, layer);
        }
    }
}

/// A TOML value as serde's data model: `"none"` is `null`, spellings are made canonical.
fn convert(
    layer: &Layer,
    text: &str,
    path: &str,
    field: &str,
    value: &toml::Spanned<toml::de::DeValue<'_>>,
) -> Result<Value, ProfileError> {
    use toml::de::DeValue;
    let at = Pos::of(text, value.span().start);
    Ok(match value.get_ref() {
        DeValue::String(s) => string_value(field, s),
        DeValue::Integer(i) => {
            let n = i64::from_str_radix(i.as_str(), i.radix())
                .map_err(|_| layer.error_at(at, format!("{path}: the integer {i} is out of range")))?;
            Value::from(n)
        }
        DeValue::Float(f) => {
            let x: f64 = f.as_str().parse().map_err(|_| layer.error_at(at, format!("{path}: {f} is not a number")))?;
            finite(x).map_err(|m| layer.error_at(at, format!("{path}: {m}")))?
        }
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(_) => return Err(layer.error_at(at, format!("{path}: a date-time is no value here"))),
        DeValue::Array(items) => {
            Value::Array(items.iter().map(|v| convert(layer, text, path, field, v)).collect::<Result<Vec<_>, _>>()?)
        }
        DeValue::Table(table) => {
            let mut out = Map::new();
            for (k, v) in table {
                let key = k.get_ref().as_ref();
                out.insert(key.to_string(), convert(layer, text, &join(path, key), key, v)?);
            }
            Value::Object(out)
        }
    })
}

fn finite(x: f64) -> Result<Value, String> {
    serde_json::Number::from_f64(x).map(Value::Number).ok_or_else(|| format!("{x} is not a finite number"))
}

/// Other spellings of enum values, accepted on input: (field, alias, canonical). The canonical
/// spelling is serde's, the one traces are written in.
const VALUE_ALIASES: &[(&str, &str, &str)] = &[
    ("unknown_id", "410", "gone410"),
    ("unknown_id", "gone", "gone410"),
    ("unknown_id", "409", "conflict409"),
    ("unknown_id", "conflict", "conflict409"),
    ("evicted_id", "410", "gone410"),
    ("evicted_id", "gone", "gone410"),
    ("evicted_id", "409", "conflict409"),
    ("evicted_id", "conflict", "conflict409"),
    ("second_get", "409", "reject409"),
    ("second_get", "reject", "reject409"),
];

/// A string value of `field` as serde's data model: `none` is null, aliases canonical.
pub fn string_value(field: &str, text: &str) -> Value {
    if text == "none" {
        return Value::Null;
    }
    let canonical = VALUE_ALIASES.iter().find(|(f, alias, _)| *f == field && *alias == text).map(|(_, _, c)| *c);
    Value::String(canonical.unwrap_or(text).to_string())
}

/// A value written on the command line (`--set client.reconnect.jitter=0.2`), read by the type of
/// the value it replaces: `none` is null; a number, a bool or a string where one stands; an
/// inline TOML table or array (`{ kind = "sdk", … }`) as is.
pub fn value_from_text(field: &str, text: &str, current: &Value) -> Result<Value, String> {
    let text = text.trim();
    if text == "none" {
        return Ok(Value::Null);
    }
    if text.starts_with('{') || text.starts_with('[') {
        let doc = format!("v = {text}");
        let layer = parse_layer(Role::Client, &doc, "--set").map_err(|e| e.message)?;
        return layer.fields.get("v").cloned().ok_or_else(|| format!("{text:?} is not a TOML value"));
    }
    match current {
        Value::Bool(_) => match text {
            "true" | "yes" | "on" => Ok(Value::Bool(true)),
            "false" | "no" | "off" => Ok(Value::Bool(false)),
            _ => Err(format!("{text:?} is not true or false")),
        },
        Value::Number(_) => number(text),
        Value::Null if VALUE_ALIASES.iter().any(|(f, a, _)| *f == field && *a == text) => Ok(string_value(field, text)),
        // A field skipped while at its default (an optional flag) has no current value to go by.
        Value::Null if text == "true" || text == "false" => Ok(Value::Bool(text == "true")),
        Value::Null => Ok(number(text).unwrap_or_else(|_| string_value(field, text))),
        _ => Ok(string_value(field, text)),
    }
}

fn number(text: &str) -> Result<Value, String> {
    if let Ok(n) = text.parse::<u64>() {
        return Ok(Value::from(n));
    }
    if let Ok(n) = text.parse::<i64>() {
        return Ok(Value::from(n));
    }
    let x: f64 = text.parse().map_err(|_| format!("{text:?} is not a number"))?;
    finite(x)
}

// ---------------------------------------------------------------------------------------------
// Resolving
// ---------------------------------------------------------------------------------------------

/// The most bases a chain of `extends` may add under the top file (it also stops cycles).
pub const MAX_EXTENDS: usize = 8;

/// The layers of a profile, bases first: follows `extends`, asking `base` for each one.
pub fn chain(
    role: Role,
    top: Layer,
    base: &mut dyn FnMut(Role, &str, &Layer) -> Result<Layer, ProfileError>,
) -> Result<Vec<Layer>, ProfileError> {
    let mut layers = vec![top];
    loop {
        let last = layers.last().expect("the chain starts with the top layer");
        let Some((name, pos)) = last.extends.clone() else { break };
        if layers.len() > MAX_EXTENDS {
            return Err(last.error_at(pos, format!("extends {name:?}: more than {MAX_EXTENDS} files deep (a cycle?)")));
        }
        let next = base(role, &name, last)?;
        if layers.iter().any(|l| l.origin == next.origin) {
            return Err(last.error_at(pos, format!("extends {name:?}: a cycle through {}", next.origin)));
        }
        layers.push(next);
    }
    layers.reverse();
    Ok(layers)
}

/// Overlays `top` on `base`: tables merge key by key, except tagged ones (with a `kind`).
fn merge(base: &mut Map<String, Value>, top: &Map<String, Value>) {
    for (k, v) in top {
        match (base.get_mut(k), v) {
            (Some(Value::Object(b)), Value::Object(t)) if !t.contains_key("kind") => merge(b, t),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The fields of the layers merged, bases first.
pub fn merged(layers: &[Layer]) -> Map<String, Value> {
    let mut out = Map::new();
    for layer in layers {
        merge(&mut out, &layer.fields);
    }
    out
}

/// A resolved profile: the policy, what its top file says about itself, and where its fields were
/// read (the sources of every layer, a field set again without a source dropping its base's).
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved<T> {
    /// The policy.
    pub policy: T,
    /// The top file's description and SDK, and the sources of every layer.
    pub meta: Meta,
}

/// Every field path (dotted) a profile of `role` may set: those the built-in files set.
pub fn known_paths(role: Role) -> BTreeSet<String> {
    known_paths_ref(role).clone()
}

/// Resolves layers (bases first) into a policy: unknown keys and wrong values are reported at
/// their position in the file that wrote them.
pub fn resolve<T: DeserializeOwned>(role: Role, layers: &[Layer]) -> Result<Resolved<T>, ProfileError> {
    let top = layers.last().ok_or_else(|| ProfileError {
        origin: "(none)".into(),
        line: 1,
        col: 1,
        message: "no profile".into(),
    })?;
    let known = known_paths_ref(role);
    for layer in layers {
        if let Some((path, pos)) = layer.keys.iter().find(|(p, _)| !known.contains(*p)) {
            let top_level: BTreeSet<&str> = known.iter().filter(|p| !p.contains('.')).map(String::as_str).collect();
            let names: Vec<&str> = top_level.into_iter().collect();
            return Err(layer.error_at(
                *pos,
                format!(
                    "unknown key `{path}` (a {} profile has: {}; and extends, description, sdk, [sources])",
                    role.as_str(),
                    names.join(", ")
                ),
            ));
        }
    }
    let all = merged(layers);
    if role == Role::Client {
        if let Err(message) = check_close_handling(all.get("close_handling")) {
            let at = layers.iter().rev().find_map(|l| {
                l.values
                    .iter()
                    .find(|(p, _)| p.starts_with("close_handling.") && *p != "close_handling.kind")
                    .map(|(_, pos)| (l, *pos))
            });
            return Err(match at {
                Some((layer, pos)) => layer.error_at(pos, message),
                None => top.error_at(Pos::START, message),
            });
        }
    }
    let policy = match serde_json::from_value::<T>(Value::Object(all)) {
        Ok(p) => p,
        Err(e) => return Err(locate::<T>(role, layers, e)),
    };
    let mut sources = BTreeMap::new();
    for layer in layers {
        for path in layer.values.keys() {
            sources.retain(|k: &String, _| {
                !(k == path || k.starts_with(&format!("{path}.")) || path.starts_with(&format!("{k}.")))
            });
        }
        sources.extend(layer.meta.sources.clone());
    }
    let meta = Meta { sources, ..top.meta.clone() };
    Ok(Resolved { policy, meta })
}

/// The fields a client's `close_handling` table may carry besides `kind`, by kind: only the real
/// SDKs' rule set (`kind = "sdk"`) has any. Serde would ignore them under the other kinds, so a
/// value set there (`--set client.close_handling.on_404=…` on the reference client) must be
/// refused here instead of being read and silently dropped.
pub fn check_close_handling(table: Option<&Value>) -> Result<(), String> {
    let Some(Value::Object(t)) = table else { return Ok(()) };
    let kind = t.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind == "sdk" {
        return Ok(());
    }
    match t.keys().find(|k| k.as_str() != "kind") {
        Some(key) => Err(format!(
            "close_handling.{key} applies only with close_handling.kind = \"sdk\"; this client's kind is {kind:?}, \
             which has no {key} (set close_handling.kind = \"sdk\" and all its rules to use it)"
        )),
        None => Ok(()),
    }
}

/// Finds which value of which file a deserialization error comes from: each setting of each
/// file (a whole tagged table counts as one) is tried alone over a base known to be valid.
fn locate<T: DeserializeOwned>(role: Role, layers: &[Layer], error: serde_json::Error) -> ProfileError {
    let fallback = role.names().first().and_then(|n| builtin_layers(role, n)).and_then(Result::ok).map(|l| merged(&l));
    for i in (0..layers.len()).rev() {
        let below = merged(&layers[..i]);
        let base = if i > 0 && serde_json::from_value::<T>(Value::Object(below.clone())).is_ok() {
            below
        } else if let Some(f) = &fallback {
            f.clone()
        } else {
            continue;
        };
        let mut units = Vec::new();
        units_of(&layers[i].fields, &base, "", &mut units);
        units.sort_by_key(|(path, _)| layers[i].values.get(path).map(|p| (p.line, p.col)));
        for (path, value) in units {
            let mut candidate = base.clone();
            set_path(&mut candidate, &path, value);
            if let Err(e) = serde_json::from_value::<T>(Value::Object(candidate)) {
                return layers[i].error_on(&path, format!("{path}: {e}"));
            }
        }
    }
    let top = layers.last().expect("resolve checked there is a layer");
    let hint =
        if top.extends.is_none() { " (or start the file with extends = \"NAME\" to inherit the rest)" } else { "" };
    top.error_at(Pos::START, format!("{error}{hint}"))
}

/// The settings of a layer: leaves, and tagged (or new) tables whole.
fn units_of(fields: &Map<String, Value>, base: &Map<String, Value>, prefix: &str, out: &mut Vec<(String, Value)>) {
    for (k, v) in fields {
        let path = join(prefix, k);
        match (v, base.get(k)) {
            (Value::Object(t), Some(Value::Object(b))) if !t.contains_key("kind") => units_of(t, b, &path, out),
            _ => out.push((path, v.clone())),
        }
    }
}

/// Sets a dotted path in a JSON object, creating tables on the way.
pub fn set_path(root: &mut Map<String, Value>, path: &str, value: Value) {
    let mut parts = path.split('.').peekable();
    let mut node = root;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            match (node.get_mut(part), value) {
                (Some(Value::Object(b)), Value::Object(t)) if !t.contains_key("kind") => merge(b, &t),
                (_, value) => {
                    node.insert(part.to_string(), value);
                }
            }
            return;
        }
        let entry = node.entry(part.to_string()).or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        node = entry.as_object_mut().expect("made an object just above");
    }
}

// ---------------------------------------------------------------------------------------------
// Dumping
// ---------------------------------------------------------------------------------------------

/// What each field means and which spec rule or SDK behaviour it models, for `--dump`.
pub fn field_doc(role: Role, path: &str) -> &'static str {
    let docs: &[(&str, &str)] = match role {
        Role::Client => CLIENT_DOCS,
        Role::Server => SERVER_DOCS,
        Role::Lb => LB_DOCS,
    };
    docs.iter().find(|(p, _)| *p == path).map(|(_, d)| *d).unwrap_or("")
}

/// The documented fields of a role, in the order a dump writes them.
pub fn documented_paths(role: Role) -> Vec<&'static str> {
    let docs: &[(&str, &str)] = match role {
        Role::Client => CLIENT_DOCS,
        Role::Server => SERVER_DOCS,
        Role::Lb => LB_DOCS,
    };
    docs.iter().map(|(p, _)| *p).collect()
}

const CLIENT_DOCS: &[(&str, &str)] = &[
    ("name", "The profile's name, written into traces."),
    ("persistence", "Where session id, last event ids and in-flight calls live: durable (kept across a client restart; the design note's condition 1) or volatile."),
    ("request_timeout", "Give up on a call after this and send notifications/cancelled (a duration such as 60s, or none)."),
    ("open_standalone_stream", "Open the standalone GET stream (server-initiated messages) after initializing."),
    ("send_idempotency_keys", "Send an idempotency key with every tool call (an extension; a mitigation against duplicate execution)."),
    ("sessions", "Run the session handshake (every revision up to 2025-11-25); false is the 2026-07-28 revision: no initialize, no Mcp-Session-Id."),
    ("close_handling", "How a stream that ends before its response is handled."),
    ("close_handling.kind", "decision-procedure (the design note: resume on transport faults, re-initialize on 404, report a gap on 409/410), reinitialize-and-resend (the first incident), sdk (the rules below), reissue-with-new-id (2026-07-28)."),
    ("close_handling.on_404", "With kind = sdk: a 404 on the session: fail-keep-session (keep the dead id, never re-initialize), reinitialize-resend-once, reinitialize-unknown-outcome, or close-transport (every call in flight and every later one fails, the id is forgotten, nothing re-initializes: the Go SDK v1.7.0)."),
    ("close_handling.on_empty_resume", "With kind = sdk: a resume answered 200 with no events that ends: same-id (reconnect with the same Last-Event-ID), without-id, clean-close (the call fails), or graceful-close (same id, attempt counter reset: rust-sdk#958)."),
    ("close_handling.on_give_up", "With kind = sdk: what a call whose reconnect attempts are spent gets: fail-call (an error at once), leave-pending (only its request timeout resolves it), or close-transport (every call in flight and every later one fails: the Go SDK v1.7.0)."),
    ("close_handling.on_unresumable_post", "With kind = sdk and resume_post_needs_event_id: what a call gets whose POST stream ended before its response and before any event id arrived: fail-call (an error at once), leave-pending (only its request timeout resolves it), or close-transport."),
    ("close_handling.resume_token_survives_recut", "With kind = sdk: whether a resumed stream cut again before any id-bearing event still resumes with its Last-Event-ID (false: typescript-sdk#2499)."),
    ("close_handling.lost_session_answers", "With kind = sdk: the answers the SDK reads as \"session not found\" and handles by on_404, a list of \"404\", \"400\", \"503\", \"rpc-error\" (a JSON-RPC error -32001); any other failed answer fails the call."),
    ("close_handling.lost_session_on_resume", "With kind = sdk: whether such an answer to a resume GET is handled by on_404 too (false: it is one failed reconnect attempt, as in all three SDKs)."),
    ("close_handling.resume_405_ends_stream", "With kind = sdk: whether a 405 to a call's resume GET stops reconnecting that stream, the call then as on_give_up says (TypeScript, rmcp); false: one failed attempt (Python)."),
    ("close_handling.refused_resume_ends_stream", "With kind = sdk: whether any answer that is not 2xx to a call's resume GET (400, 409, 410, 5xx; a 404 unless lost_session_on_resume) stops reconnecting that stream, the call then as on_give_up says (the Go SDK v1.7.0); false: one failed attempt (TypeScript, Python, rmcp)."),
    ("close_handling.resumed_needs_event_id", "With kind = sdk: whether a call's resumed connection that ends before an event id arrived on it is given up as on_unresumable_post says (the cursor lives per connection: the Go SDK v1.7.0, 'request terminated without response'); false: it is resumed again as resume_token_survives_recut says."),
    ("close_handling.modern_reissue", "With kind = sdk, in the modern era: re-issue a call whose stream broke with a new id (true: the 2026-07-28 rule) or apply these rules to it (false: the Go SDK v1.7.0, whose modern streams carry no id, so the call fails as on_unresumable_post says)."),
    ("timeout_resets_on_progress", "A progress notification restarts the call's request timeout (TypeScript's opt-in resetTimeoutOnProgress)."),
    ("max_unhonoured_resumes", "After this many resumes in a row the server could not honour (409/410, or a 200 without a message) the call becomes unknown outcome (a count, or none)."),
    ("standalone_loss", "What losing the standalone GET does: survive (only the stream is lost), or close-transport (a first GET whose connection broke, a reconnect refused with any status, or a stream given up fails every call in flight and every later one, \"not connected\"; any status to the first GET counts as 405; the Go SDK v1.7.0)."),
    ("standalone_405", "What a 405 to the standalone GET means: accept (the server offers no stream), or retry (one failed attempt, retried within the reconnect attempts)."),
    ("await_standalone_head", "Hold calls until the standalone GET has its response head (or failed): the client's connect returns only then (the Go SDK v1.7.0)."),
    ("report_stream_given_up", "Tell the application when the standalone stream is given up (attempts spent) instead of dropping it silently."),
    ("close_handling.resume_post_needs_event_id", "With kind = sdk: resume a POST stream only if an event id arrived on it; otherwise the call fails locally."),
    ("reconnect", "Backoff and attempts for reconnections (spec: the client SHOULD respect retry:, MAY resume with Last-Event-ID)."),
    ("reconnect.initial", "The first reconnect delay (a duration)."),
    ("reconnect.factor", "Growth of the delay per failed attempt (at least 1; 1 is a fixed delay)."),
    ("reconnect.max", "Cap of the delay (a duration, at least initial)."),
    ("reconnect.max_attempts", "Consecutive failed attempts before giving up (a count, or none for unlimited)."),
    ("reconnect.counter_reset", "When the attempt counter goes back to 0: on-successful-reconnect (a 200), when-successful-reconnect-ends, or on-event."),
    ("reconnect.retry_field", "How the server's retry: field enters the delay: ignore, replaces (used for good once seen), at-least."),
    ("reconnect.first_immediate", "The first reconnection after a stream error is immediate."),
    ("reconnect.jitter", "Each delay is multiplied by a factor drawn from [1 - jitter, 1] (0 for none, below 1)."),
    ("http", "The HTTP library under the client: connection reuse (keep-alive) and what it re-sends by itself."),
    ("http.keep_alive", "Keep a connection open after a complete response and send later requests on it (HTTP/1.1 keep-alive); false: one connection per exchange."),
    ("http.idle_expiry", "Close a pooled connection idle this long (a duration, or none for never)."),
    ("http.headers_timeout", "Give up a request whose response head has not come this long after it was sent (a duration, or none for never): the call's request fails as a broken connection."),
    ("http.body_timeout", "Give up a response whose body carried no byte (an SSE comment counts) this long (a duration, or none for never): the client closes its side and the SDK sees a broken stream."),
    ("http.retry", "What the library re-sends on a fresh connection when a kept-alive one fails before any response byte: unsent (only a request that could not be written), or reused-before-response (also one already written, a POST included)."),
    ("http.reuse_after", "Which complete responses leave their connection reusable: any, or json-body (only a JSON body read to its end; a client that stops reading an event stream early or leaves a 202 unread closes the connection)."),
    ("era", "How the client chooses its protocol era (unset: legacy with sessions, modern without)."),
    ("era.mode", "legacy (initialize, always), modern (per-request version, no fallback) or auto (probe with a modern request, fall back to initialize on an answer that is not a modern error)."),
    ("era.cache", "With auto: what the determination is cached for: connection (every connect probes) or origin (the spec's SHOULD)."),
    ("era.reprobe_on_failure", "With auto: forget the cached era when it fails, so the next connect probes again."),
    ("era.fallback_on_no_answer", "With auto: a probe with no answer (transport error, timeout) falls back to legacy (true) or fails the connect (false)."),
    ("tasks", "The Tasks extension (SEP-2663) on the client side."),
    ("tasks.declares", "Declare io.modelcontextprotocol/tasks on each request (a server answers with a task only then)."),
    ("tasks.honour_poll_interval", "Poll tasks/get at the server's pollIntervalMs (true) or at poll_every."),
    ("tasks.poll_every", "The client's own poll interval when it does not honour the server's."),
    ("tasks.persist_ids", "Task ids survive a client restart (durable), so polling resumes after it."),
    ("tasks.sends_mcp_name", "Send Mcp-Name: <taskId> on tasks/* (the spec's MUST), so a balancer can route polls to the replica holding the task."),
    ("tasks.not_found", "What a -32602 (task not found) to a poll does: error (the application gets the JSON-RPC error as the call's failure, as rmcp's get_task returns it) or lost (the application is told the task is lost: the outcome is unknown)."),
    ("tasks.answer_input_after", "The application answers a task a poll shows input_required this long after (a user's time to answer), with tasks/update; none: never (it polls on until the task ends or expires)."),
    ("tasks.cancel_after", "The application cancels a call answered with a task not ended this long after its CreateTaskResult (tasks/cancel, then it polls on for the outcome), or none for never."),
    ("subscriptions", "subscriptions/listen (2026-07-28): the modern era's stream of change notifications, which replaces the GET stream."),
    ("subscriptions.listen", "In the modern era the application opens a subscriptions/listen stream when the client connects."),
    ("subscriptions.on_abrupt_end", "What an end of the listen stream without the server's graceful result does: tell-app (the application is told, re-listens and refetches: python SubscriptionLost, rmcp SubscriptionEnd::Abrupt) or relisten (the client re-listens by itself and tells nothing: what was emitted in between is lost silently) or keep-flag (neither: the client keeps believing it is subscribed and never hears another change, go-sdk#1229)."),
];

const SERVER_DOCS: &[(&str, &str)] = &[
    ("name", "The profile's name, written into traces."),
    ("event_ids", "How event ids are written, and so how a stream is found from a Last-Event-ID: reference (<stream>-<seq>), ts-sdk, py-sdk, rmcp."),
    ("store", "Event store scope: per-session, or shared-by-request-id (one store for all sessions keyed by JSON-RPC id)."),
    ("replay", "Which events a resumption with Last-Event-ID: x replays: after (the spec's reading) or from (x included)."),
    ("unknown_id", "The answer to a Last-Event-ID never issued or whose stream is gone (open spec issue #1939): gone410, conflict409, silent-head, from-oldest, empty-closed, empty-open, bad-request400 (no head named: the Go SDK)."),
    ("evicted_id", "The answer to a Last-Event-ID evicted from a bounded buffer (same choices; gone410 is the design note's condition 3)."),
    ("retry_ms", "The retry: field (milliseconds) sent with priming events, or none."),
    ("keepalive", "Interval of `: keepalive` SSE comments on open streams (bytes for a load balancer's idle timer), or none; at least 1s."),
    ("idle_ttl", "Idle time after which a session is expired and answered 404, or none."),
    ("idle_rule", "Which activity holds a session alive against idle_ttl: last-request, no-open-request, no-open-post (an open GET does not hold it: the Go SDK), never-while-busy."),
    ("delete_running_tool", "What DELETE does to a running tool: cancel, run-on (its result goes nowhere), or abort-signal (tools with on_abort = stop are cancelled, the others run on)."),
    ("delete_unknown_status", "The status DELETE answers for a session the server does not know."),
    ("delete_status", "The status DELETE answers when it ends a session."),
    ("second_get", "What a second concurrent standalone GET gets: reject409, reject400, accept (the newest receives), replace (the old one is ended), shadow (the new one receives nothing), empty-closed (200 and an event stream that ends at once, the old one stays registered: kotlin-sdk#715), end-session (409, and the whole session is ended, its tools cancelled: an application tearing down on the transport's onerror), restart-process (409, and the process exits and is started again, losing every session: supergateway#126)."),
    ("honour_idempotency_keys", "Honour idempotency keys across sessions (an extension; a mitigation)."),
    ("sessions", "Keep protocol sessions (up to 2025-11-25); false is the 2026-07-28 revision: no sessions, DELETE answered 405, GET as sessionless_get says."),
    ("disconnect_cancels", "The end of a request's connection cancels its tool (the 2026-07-28 rule; the earlier revisions say the opposite)."),
    ("retention", "How much of each stream is kept for replay (the design note's condition 2: more than the worst-case reconnect latency)."),
    ("retention.max_events", "Keep at most this many events per stream, oldest evicted first (a count, or none for unbounded)."),
    ("retention.window", "Evict events older than this (a duration, or none)."),
    ("retention.drop_on_response", "Drop a request stream's whole log as soon as its response is sent."),
    ("priming", "Where a priming event (an id and empty data; spec 2025-11-25) is sent."),
    ("priming.post", "At the start of each POST SSE stream."),
    ("priming.standalone", "At the start of the standalone GET stream."),
    ("priming.resume", "At the start of every successful resumption."),
    ("keepalive_timer", "When keep-alive comments are written: fixed (every keepalive) or after-silence (after keepalive with nothing written; rmcp)."),
    ("standalone_priming", "The standalone stream's priming event: stored (an id of its own) or reused-id (the next event's id, not stored; rmcp)."),
    ("fresh_get", "What a fresh standalone GET receives: new-only, or buffered (the notifications stored while no GET was open first; rmcp)."),
    ("finished_resume", "A resume of a stream whose response was sent: close after the replay, or stay-open."),
    ("resumed_on_response", "A resumed connection once its stream's response is sent: close, or stay-open (Python)."),
    ("resume_while_attached", "A resume while the stream's own connection is still registered: take-over, replay-and-close (Python), or reject409 (409 before any replay, the old connection keeps the stream: the Go SDK)."),
    ("detached_request_events", "Events of a request stream whose connection the server closed itself: store, or drop (typescript-sdk#2151)."),
    ("close_request_streams", "The server ends each request's SSE connection this long after opening it (SEP-1699 polling: 0s), or none. Only a session's streams (2025-11-25): a sessionless or modern request's closed stream would cancel it, so none is closed."),
    ("close_idle_standalone", "The server ends the standalone GET after this long with no event on it (a graceful idle close), or none."),
    ("dead_stream", "How a connection cut on the client side only is noticed: immediate, on-write, on-keepalive."),
    ("unknown_session", "The answer to a POST or GET naming an unknown session: not-found404, bad-request400, rpc-error200, unavailable503."),
    ("unknown_session_code", "The JSON-RPC error code in the body of rpc-error200's answer: -32001 (\"Session not found\") or -32600 (Invalid Request)."),
    ("sessionless_get_status", "The status DELETE gets from a server without sessions, and GET when sessionless_get = refuse: 405, 400 or 404."),
    ("sessionless_get", "What a GET gets from a server without sessions: refuse (answered sessionless_get_status) or hold-open (200 text/event-stream held open with keep-alives and never a message: no session, so no notification reaches it; Python's stateless mode, python-sdk#3492)."),
    ("sessionless_cancel", "What a notifications/cancelled does on a server without sessions: ignore (each request served apart, as the SDKs' stateless modes: the named request runs on) or by-request-id (every request in flight with that id is cancelled, whichever client's: ids are unique per client)."),
    ("idle_reset", "What restarts the idle countdown besides requests: requests, or requests-and-events (rmcp)."),
    ("expire_running_tool", "What idle expiry does to a running tool: cancel, run-on, abort-signal."),
    ("id_stamp", "The time in a clocked event id (ts-sdk): handled (when the timer ran) or due (when the event was due)."),
    ("max_sessions", "The most live sessions one replica holds; past it initialize is answered 503 (a count, or none for no cap)."),
    ("keep_alive_timeout", "Close a kept-alive connection that carried no request this long (a duration, or none for never); it matters behind a balancer with upstream_keep_alive."),
    ("event_store", "kept (events stored under store/retention, with ids) or none (the Python SDK's and FastMCP's default: no ids, no priming, no replay; resumption is impossible)."),
    ("resume_without_store", "With event_store = none, a GET with Last-Event-ID: ignored (served as a fresh standalone GET; TypeScript), error500 (Python) or error400 (the Go SDK)."),
    ("eras", "The protocol eras served, per request: [\"2025-11-25\"] (legacy: initialize, sessions, GET, resumption), [\"2026-07-28\"] (modern: stateless, GET/DELETE 405, a closed stream cancels), or both (dual-era). Unset: legacy with sessions, modern without."),
    ("modern_session", "How a session-ful dual-era server serves a modern request: sessionless (no session, Mcp-Session-Id ignored; the spec) or minted (a misconfiguration: a legacy session is minted for it, which era-consistent catches)."),
    ("eras_after_restart", "The eras a restarted process serves (a rolling upgrade: replicas come back from the deploy with the new build's eras), or unset (the same as eras)."),
    ("tasks", "The Tasks extension (SEP-2663): which calls get a CreateTaskResult, its TTL and poll interval, the SDK's expiry rule, the store and the routing of tasks/*."),
    ("tasks.create_for_tools_over", "Answer a call with a task when its tool runs at least this long (0s: every call; none: never, the SDKs' default until the application opts a tool in)."),
    ("tasks.ttl", "The ttlMs of a new task, counted from its creation (a duration, or none for unlimited)."),
    ("tasks.poll_interval", "The pollIntervalMs suggested to the client."),
    ("tasks.store", "Where tasks live: per-replica (in memory, each replica its own) or shared."),
    ("tasks.routing", "How tasks/* reach a replica: any (as other requests; a per-replica store then answers -32602) or mcp-name (to the replica holding the task, by the Mcp-Name header)."),
    ("tasks.expiry", "What the store does at and after the TTL."),
    ("tasks.expiry.working_at_ttl", "A task still working at createdAt + ttl: abort-and-fail (rmcp), delete-record (the work runs on; TypeScript's store), keep."),
    ("tasks.expiry.terminal_kept_ttls", "A finished task's record is kept this many TTLs after its end (0: only until createdAt + ttl)."),
    ("tasks.expiry.sweep", "When the rule runs: timer (at the deadline) or on-call (at the next call into the store; rmcp)."),
    ("tasks.on_cancel", "What tasks/cancel does to a working task: run-on (only the intent is recorded; the work ends by itself: rmcp), mark-cancelled (the record turns cancelled at once, the work runs on for nothing: TypeScript), stop (the work observes the cancel and the task ends cancelled)."),
    ("subscriptions", "Change notifications on subscriptions/listen streams (2026-07-28)."),
    ("subscriptions.changes", "At each notify_interval tick the process publishes one change notification to the listen streams open on it at that instant (none kept for a stream opened later: no replay)."),
    ("subscriptions.bus", "Which listen streams a change reaches: per-process (those of the process that emitted it: python's default in-memory bus) or shared (every replica's: a bus over a pub/sub backend)."),
    ("response_mode", "sse (a tools/call POST answered as an event stream) or json (enableJsonResponse / json_response=True: one JSON body when the result is ready; progress dropped, no ids, a cut before the result loses it)."),
    ("after_replay", "What a resumed connection gets after its replay: live (the stream's live events and result) or quiet (nothing more: a store that replays, then goes quiet)."),
    ("replay_scope", "Which events an honourable resume replays: stream (the events of the stream the Last-Event-ID belongs to, as the spec says) or store (every event the store holds after the id, of any stream: the session's other streams, or every session's in a shared store; servers#4087)."),
    ("disconnect_cancel_ignored", "With disconnect_cancels (the claim): true when the claim is not kept, the handler ignores the cancellation and runs on to its result (no-abandoned-work judges it); false: the claim is kept."),
    ("on_failed_write", "A write that fails on a connection whose client is gone: drop-stream (only the connection goes) or end-session (the session is forgotten too, its tools run on: java-sdk#952)."),
    ("on_protocol_error", "A POST whose body does not parse (fault.malformed): answer-error (400) or restart-process (the process exits, losing every session and running tool, and is started again at once)."),
];

const LB_DOCS: &[(&str, &str)] = &[
    ("idle_timeout", "Close a connection that carried no bytes either way for this long (SSE comments count), or none."),
    ("max_lifetime", "Close a connection this long after it opened, however busy (a CDN's cap, e.g. 100s), or none."),
    ("cut_mode", "Which sides a cut closes: both, or client-side (the upstream stays open and the server keeps the stream)."),
    ("hold_headers", "Hold a response's head until its first body frame; a cut before one answers 502 (a CDN)."),
    ("replicas", "Server replicas behind the balancer (1 to 16)."),
    ("routing", "How a new connection picks its replica: round-robin, sticky-session (by Mcp-Session-Id), sticky-client (by address), random (seeded)."),
    ("store", "Where replicas keep sessions and event logs: local (each its own, lost on restart) or shared (survives a replica restart)."),
    ("hops", "Intermediaries in front of the balancer, the client's side first (hop0, hop1, …; the balancer is the last hop): each with idle_timeout, max_lifetime, comments_count, cut_mode, hold_headers, first_byte_timeout, timeout_status (504, or 524 for Cloudflare), buffer (e.g. 4KiB), flush_interval (e.g. 10s), hold_tail (true: the last frame is held until the next one or the end pushes it out) drop_request_headers (e.g. [\"last-event-id\"]: request headers the hop does not pass on) and drop_response_headers ([\"mcp-session-id\"])."),
    ("upstream_keep_alive", "Keep upstream connections to the replicas alive and reuse them (a pool per replica, idle ones closed after idle_timeout); false: one upstream connection per request."),
    ("retry_upstream", "What the balancer sends again, once, on a fresh upstream connection when one ends before any response byte: never (a reused one is answered 502), idempotent (GET and DELETE), any (a POST too)."),
    ("keep_alive_timeout", "The idle rule between two exchanges on a kept-alive client connection: idle (idle_timeout applies there too), a duration (nginx keepalive_timeout, 75s) or none; with a duration or none, idle_timeout applies to open responses only (nginx proxy_read_timeout, HAProxy timeout server). Hops have it too, and buffer_head (the head waits in the buffer with the body, as nginx's proxy_buffering)."),
];

/// A built-in profile as a complete TOML file to start from: every field, each with what it means
/// and where its value was read.
pub fn dump(role: Role, name: &str) -> Option<Result<String, ProfileError>> {
    let layers = match builtin_layers(role, name)? {
        Ok(l) => l,
        Err(e) => return Some(Err(e)),
    };
    let written = merged(&layers);
    Some(match role {
        Role::Client => resolve::<ClientPolicy>(role, &layers).map(|r| write_dump(role, name, &r, &written)),
        Role::Server => resolve::<ServerPolicy>(role, &layers).map(|r| write_dump(role, name, &r, &written)),
        Role::Lb => resolve::<LbConfig>(role, &layers).map(|r| write_dump(role, name, &r, &written)),
    })
}

/// A dump is a working template: every field is written, and at the top level (a nested field as
/// a dotted key, `retention.max_events = 100`; the sources as `sources."FIELD" = …`), with no
/// `[table]` header, so a line added anywhere, the end included, is a field of the profile.
fn write_dump<T: Serialize>(role: Role, name: &str, resolved: &Resolved<T>, written: &Map<String, Value>) -> String {
    let mut fields = match serde_json::to_value(&resolved.policy) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    // Written only when it is not 200 (so old traces keep their bytes); a dump shows every field.
    if role == Role::Server && !fields.contains_key("delete_status") {
        fields.insert("delete_status".into(), Value::from(200));
    }
    // A field serde leaves out at its default (most of a balancer's, so traces keep their bytes):
    // the value the profile's files wrote for it, else its default.
    for path in documented_paths(role).into_iter().filter(|p| !p.contains('.') && *p != "name") {
        if !fields.contains_key(path) {
            match written.get(path) {
                Some(v) => fields.insert(path.to_string(), v.clone()),
                None if role == Role::Lb && path == "hops" => fields.insert(path.to_string(), Value::Array(vec![])),
                None => None,
            };
        }
    }
    let meta = &resolved.meta;
    let mut out = String::new();
    let _ = writeln!(out, "# The built-in {} profile {name:?}, every field written out.", role.as_str());
    let _ = writeln!(out, "# Edit what differs, or keep only that under `extends = {name:?}`. Durations are written");
    let _ = writeln!(out, "# 250ms, 15s, 4m, 1h; \"none\" stands for no value. Use it with --{} FILE.", role.as_str());
    if role == Role::Lb {
        let _ = writeln!(out, "name = {}", quote(name));
    }
    if let Some(d) = &meta.description {
        let _ = writeln!(out, "description = {}", quote(d));
    }
    if let Some(s) = &meta.sdk {
        let _ = writeln!(out, "sdk = {}", quote(s));
    }
    let order = documented_paths(role);
    let mut keys: Vec<String> = order.iter().filter(|p| !p.contains('.')).map(|p| p.to_string()).collect();
    let mut rest: Vec<String> = fields.keys().filter(|k| !keys.contains(k)).cloned().collect();
    rest.sort();
    keys.extend(rest);
    let (tables, scalars): (Vec<_>, Vec<_>) =
        keys.into_iter().filter(|k| fields.contains_key(k)).partition(|k| fields[k].is_object());
    for key in scalars {
        out.push('\n');
        comment(&mut out, role, meta, &key);
        let _ = writeln!(out, "{key} = {}", toml_value(&fields[&key]));
    }
    for key in tables {
        out.push('\n');
        comment(&mut out, role, meta, &key);
        let table = fields[&key].as_object().cloned().unwrap_or_default();
        let mut sub: Vec<String> =
            order.iter().filter_map(|p| p.strip_prefix(&format!("{key}.")).map(str::to_string)).collect();
        let mut rest: Vec<String> = table.keys().filter(|k| !sub.contains(k)).cloned().collect();
        rest.sort();
        sub.extend(rest);
        for k in sub.into_iter().filter(|k| table.contains_key(k)) {
            comment(&mut out, role, meta, &format!("{key}.{k}"));
            let _ = writeln!(out, "{key}.{k} = {}", toml_value(&table[&k]));
        }
    }
    if !meta.sources.is_empty() {
        out.push_str("\n# Where each value was read (sources.FIELD = source); not part of the policy.\n");
        for (k, v) in &meta.sources {
            let _ = writeln!(out, "sources.{} = {}", quote(k), quote(v));
        }
    }
    out.push_str(
        "\n# No table encloses these lines: a field moved here, or set here after deleting its line above, is read.\n",
    );
    out
}

fn comment(out: &mut String, role: Role, meta: &Meta, path: &str) {
    let doc = field_doc(role, path);
    if !doc.is_empty() {
        let _ = writeln!(out, "# {doc}");
    }
    if let Some(source) = meta.sources.get(path) {
        let _ = writeln!(out, "# source: {source}");
    }
}

/// A string as a TOML basic string (quoted and escaped).
pub fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// A JSON value written as TOML on one line (inline tables and arrays; null as `"none"`): how
/// dumps of profiles and scenario families print a value.
pub fn toml_value(v: &Value) -> String {
    match v {
        Value::Null => "\"none\"".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_f64() => format!("{:?}", n.as_f64().unwrap_or(0.0)),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quote(s),
        Value::Array(items) => format!("[{}]", items.iter().map(toml_value).collect::<Vec<_>>().join(", ")),
        Value::Object(m) => {
            format!(
                "{{ {} }}",
                m.iter().map(|(k, v)| format!("{k} = {}", toml_value(v))).collect::<Vec<_>>().join(", ")
            )
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------------------------

/// One field of a resolved profile: its value as a dump writes it, and where it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceRow {
    /// The field (dotted).
    pub path: String,
    /// The value, written as TOML (`"none"` for no value).
    pub value: String,
    /// Where it was read: the field's own source, else its table's; `None` if no file says.
    pub source: Option<String>,
}

/// Every field of a built-in profile (but `name`), in dump order, with its value and source.
pub fn source_rows(role: Role, name: &str) -> Option<Result<Vec<SourceRow>, ProfileError>> {
    let layers = match builtin_layers(role, name)? {
        Ok(l) => l,
        Err(e) => return Some(Err(e)),
    };
    let resolved = match role {
        Role::Client => resolve::<ClientPolicy>(role, &layers).map(|r| (to_fields(&r.policy), r.meta)),
        Role::Server => resolve::<ServerPolicy>(role, &layers).map(|r| (to_fields(&r.policy), r.meta)),
        Role::Lb => resolve::<LbConfig>(role, &layers).map(|r| (to_fields(&r.policy), r.meta)),
    };
    let (fields, meta) = match resolved {
        Ok(r) => r,
        Err(e) => return Some(Err(e)),
    };
    // A field serde leaves out at its default: the value the files wrote for it (a test checks
    // every SDK profile's files write each such field, and reads each table back as the policy).
    let written = merged(&layers);
    let leaves = documented_paths(role)
        .into_iter()
        .filter(|p| *p != "name")
        .filter(|p| !documented_paths(role).iter().any(|q| q.starts_with(&format!("{p}."))))
        .map(str::to_string);
    let rows = leaves
        .filter_map(|path| {
            let value = [&fields, &written].into_iter().find_map(|m| get_path(m, &path))?;
            let source = meta
                .sources
                .get(&path)
                .or_else(|| path.rsplit_once('.').and_then(|(table, _)| meta.sources.get(table)));
            Some(SourceRow { path, value: toml_value(value), source: source.cloned() })
        })
        .collect();
    Some(Ok(rows))
}

fn to_fields<T: Serialize>(policy: &T) -> Map<String, Value> {
    match serde_json::to_value(policy) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

fn get_path<'a>(root: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let (first, rest) = match path.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (path, None),
    };
    match (root.get(first)?, rest) {
        (v, None) => Some(v),
        (Value::Object(m), Some(rest)) => get_path(m, rest),
        _ => None,
    }
}

/// The built-in profiles that model an SDK release (their file names an `sdk` that is a
/// package): clients first, then servers, current releases before earlier ones.
pub fn sdk_profiles() -> Vec<(Role, &'static str)> {
    let clients = CLIENT_NAMES.iter().chain(CLIENT_VERSIONED_NAMES);
    let servers = SERVER_NAMES.iter().chain(SERVER_VERSIONED_NAMES);
    let candidates = clients.map(|n| (Role::Client, *n)).chain(servers.map(|n| (Role::Server, *n)));
    candidates
        .filter(|(role, n)| {
            builtin_layers(*role, n)
                .and_then(Result::ok)
                .and_then(|l| l.last()?.meta.sdk.clone())
                .is_some_and(|sdk| SDK_PACKAGES.iter().any(|p| sdk.contains(p)))
        })
        .collect()
}

/// The packages whose releases the SDK profiles model.
const SDK_PACKAGES: &[&str] = &["(npm)", "(PyPI)", "(crates.io)", "(Go module)"];

/// Markers around the generated sources section of `docs/model.md`.
pub const SOURCES_BEGIN: &str = "<!-- profile-sources:begin -->";
/// The end marker of the generated sources section.
pub const SOURCES_END: &str = "<!-- profile-sources:end -->";

/// Every field of every SDK profile with its value and source, as Markdown: a table per profile
/// (`mcpsim profiles --sources`; between the markers of `docs/model.md`).
pub fn sources_markdown() -> Result<String, ProfileError> {
    let cell = |text: &str| text.replace('|', "\\|").replace('\n', " ");
    let mut out = String::new();
    for (role, name) in sdk_profiles() {
        let Some(rows) = source_rows(role, name) else { continue };
        let sdk = builtin_layers(role, name).and_then(Result::ok).and_then(|l| l.last()?.meta.sdk.clone());
        let _ = writeln!(out, "#### {} `{name}` ({})\n", role.as_str(), sdk.unwrap_or_default());
        out.push_str("| field | value | source |\n|---|---|---|\n");
        for row in rows? {
            let source = row.source.as_deref().map(cell).unwrap_or_else(|| "(no source)".into());
            let _ = writeln!(out, "| `{}` | `{}` | {source} |", row.path, cell(&row.value));
        }
        out.push('\n');
    }
    Ok(out.trim_end().to_string())
}

/// The text between the sources markers of a document, trimmed.
pub fn sources_section(doc: &str) -> Option<&str> {
    let start = doc.find(SOURCES_BEGIN)? + SOURCES_BEGIN.len();
    let end = doc.find(SOURCES_END)?;
    doc.get(start..end).map(str::trim)
}

/// The document with the text between its sources markers replaced by `section`; `None` if the
/// markers are missing.
pub fn with_sources_section(doc: &str, section: &str) -> Option<String> {
    let start = doc.find(SOURCES_BEGIN)? + SOURCES_BEGIN.len();
    let end = doc.find(SOURCES_END).filter(|e| *e >= start)?;
    Some(format!("{}\n{}\n{}", &doc[..start], section.trim(), &doc[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    /// Parses of built-in files (origin `model/profiles/...`) in this test process.
    pub(super) static BUILTIN_PARSES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    use crate::config::*;

    #[test]
    fn the_builtin_files_are_parsed_once_per_process_however_often_profiles_and_names_are_asked_for() {
        for _ in 0..20 {
            for role in Role::ALL {
                assert!(!known_paths(role).is_empty());
                assert!(known_paths_ref(role).contains("reconnect.max_attempts") || role != Role::Client);
            }
            assert!(client("reference").is_some() && server("silent-head").is_some() && lb("default").is_some());
            assert!(builtin_layers(Role::Server, "rmcp-1.3").is_some_and(|l| l.is_ok()));
        }
        let files: usize = Role::ALL.iter().map(|r| r.files().len()).sum();
        let parses = BUILTIN_PARSES.load(std::sync::atomic::Ordering::Relaxed);
        assert!(parses <= files, "{parses} parses of {files} built-in files");
    }

    #[test]
    fn a_builtin_file_and_its_release_are_found_by_name_and_only_by_name() {
        let text = builtin_text(Role::Client, "ts-sdk").expect("listed");
        assert!(text.contains("name = \"ts-sdk\""), "{text}");
        assert_eq!(builtin_text(Role::Client, "nope"), None);
        assert_eq!(builtin_text(Role::Lb, "ts-sdk"), None, "a client's name is no balancer's");
        assert!(release(Role::Client, "ts-sdk").contains("1.32"), "{}", release(Role::Client, "ts-sdk"));
        assert!(release(Role::Server, "rmcp").contains("rmcp"), "{}", release(Role::Server, "rmcp"));
        assert_eq!(release(Role::Client, "nope"), "");
    }

    #[test]
    fn every_listed_profile_exists_and_carries_its_name() {
        for n in CLIENT_NAMES {
            assert_eq!(client(n).map(|p| p.name), Some(n.to_string()));
            assert!(!describe(n).is_empty());
        }
        for n in SERVER_NAMES {
            assert_eq!(server(n).map(|p| p.name), Some(n.to_string()));
            assert!(!describe(n).is_empty());
        }
        assert!(client("nope").is_none() && server("nope").is_none());
        assert_eq!(lb("default").map(|l| l.idle_timeout), Some(Some(std::time::Duration::from_secs(60))));
    }

    #[test]
    fn a_profile_is_described_by_its_files_description_whatever_its_role() {
        assert_eq!(describe("reference"), "the design note's decision procedure / conditions of validity");
        assert_eq!(
            describe("silent-head"),
            "second incident: 100 events per stream; an evicted id resumes silently at the head"
        );
        assert_eq!(describe("default"), "cuts a connection silent for 60 s (the first incident's load balancer)");
        assert_eq!(describe("nope"), "");
    }

    #[test]
    fn every_builtin_file_names_its_sdk_and_sources_and_every_field_is_documented() {
        for role in Role::ALL {
            for n in role.names() {
                let layers = builtin_layers(role, n).unwrap().unwrap();
                let top = layers.last().unwrap();
                assert!(top.meta.description.is_some(), "{role:?} {n}: description");
                assert!(role == Role::Lb || top.meta.sdk.is_some(), "{role:?} {n}: sdk");
                assert!(!top.meta.sources.is_empty(), "{role:?} {n}: [sources]");
            }
            for path in known_paths(role) {
                assert!(!field_doc(role, &path).is_empty(), "{role:?} {path} has no doc");
            }
        }
    }

    #[test]
    fn incident_profiles_differ_from_reference_where_the_note_says() {
        let (r, s) = (server("reference").unwrap(), server("silent-head").unwrap());
        assert_eq!(r.evicted_id, Unhonourable::Gone410);
        assert_eq!(s.evicted_id, Unhonourable::SilentHead);
        assert_eq!(s.retention.max_events, Some(100));
        assert_eq!(client("naive").unwrap().close_handling, CloseHandling::ReinitializeAndResend);
        assert_eq!(client("reference").unwrap().persistence, Persistence::Durable);
    }

    #[test]
    fn the_stateless_profiles_drop_sessions_resumption_and_keepalives() {
        let (c, s) = (client("stateless-2026").unwrap(), server("stateless-2026").unwrap());
        assert!(!c.sessions && !c.open_standalone_stream);
        assert_eq!(c.close_handling, CloseHandling::ReissueWithNewId);
        assert!(!s.sessions && s.disconnect_cancels);
        assert_eq!((s.priming.post, s.keepalive, s.idle_ttl), (false, None, None));
        for n in CLIENT_NAMES.iter().filter(|n| **n != "stateless-2026") {
            assert!(client(n).unwrap().sessions, "{n}");
        }
        for n in SERVER_NAMES.iter().filter(|n| **n != "stateless-2026") {
            let p = server(n).unwrap();
            assert!(p.sessions && !p.disconnect_cancels, "{n}");
        }
    }

    #[test]
    fn policies_written_before_the_stateless_fields_still_read_as_session_ful() {
        let mut old = serde_json::to_value(server("reference").unwrap()).unwrap();
        let fields = old.as_object_mut().unwrap();
        assert!(fields.remove("sessions").is_some() && fields.remove("disconnect_cancels").is_some());
        assert_eq!(serde_json::from_value::<ServerPolicy>(old).unwrap(), server("reference").unwrap());
        let mut old = serde_json::to_value(client("ts-sdk").unwrap()).unwrap();
        assert!(old.as_object_mut().unwrap().remove("sessions").is_some());
        assert_eq!(serde_json::from_value::<ClientPolicy>(old).unwrap(), client("ts-sdk").unwrap());
    }

    fn layer(role: Role, text: &str) -> Result<Vec<Layer>, ProfileError> {
        chain(role, parse_layer(role, text, "my.toml")?, &mut builtin_base)
    }

    #[test]
    fn close_handling_rules_are_refused_under_every_kind_that_has_none() {
        for name in CLIENT_NAMES {
            let kind_is_sdk = matches!(client(name).unwrap().close_handling, crate::config::CloseHandling::Sdk(_));
            for (key, value) in
                [("on_404", "\"fail-keep-session\""), ("on_404", "\"anything\""), ("on_empty_resume", "\"same-id\"")]
            {
                let text = format!("extends = \"{name}\"\n[close_handling]\n{key} = {value}\n");
                let resolved = resolve::<ClientPolicy>(Role::Client, &layer(Role::Client, &text).unwrap());
                match (kind_is_sdk, key, value) {
                    (true, _, "\"anything\"") => assert!(resolved.is_err(), "{name} {key} = {value}"),
                    (true, ..) => assert!(resolved.is_ok(), "{name}: {resolved:?}"),
                    (false, ..) => {
                        let e = resolved.expect_err("refused").to_string();
                        assert!(e.contains(&format!("close_handling.{key} applies only with")), "{name}: {e}");
                        assert!(e.contains("my.toml:3"), "{name}: the error points at the line: {e}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_file_extends_a_builtin_and_changes_only_what_differs() {
        let layers = layer(Role::Client, "extends = \"ts-sdk\"\nname = \"mine\"\n[reconnect]\njitter = 0.3\n").unwrap();
        let mine: ClientPolicy = resolve(Role::Client, &layers).unwrap().policy;
        let ts = client("ts-sdk").unwrap();
        assert_eq!(mine.reconnect.jitter, 0.3);
        assert_eq!(
            ClientPolicy {
                name: "ts-sdk".into(),
                reconnect: ReconnectPolicy { jitter: 0.0, ..mine.reconnect.clone() },
                ..mine
            },
            ts
        );
    }

    #[test]
    fn bad_files_say_where_and_what_was_expected() {
        let err = |role, text| match layer(role, text) {
            Ok(l) => resolve::<ServerPolicy>(role, &l).map(|_| ()).unwrap_err().to_string(),
            Err(e) => e.to_string(),
        };
        let e = err(Role::Server, "extends = \"rmcp\"\nkeepalive = = 3\n");
        assert!(e.starts_with("my.toml:2:"), "{e}");
        let e = err(Role::Server, "extends = \"rmcp\"\n\nkeepalive = \"soon\"\n");
        assert!(e.starts_with("my.toml:3:13: keepalive: duration \"soon\""), "{e}");
        let e = err(Role::Server, "extends = \"rmcp\"\n[retention]\nmax_event = 3\n");
        assert!(e.starts_with("my.toml:3:1: unknown key `retention.max_event`"), "{e}");
        let e = err(Role::Server, "extends = \"rmcp\"\nunknown_id = \"gone\"\nevicted_id = \"teapot\"\n");
        assert!(e.starts_with("my.toml:3:14: evicted_id: unknown variant `teapot`, expected one of"), "{e}");
        let e = err(Role::Server, "extends = \"nope\"\n");
        assert!(e.starts_with("my.toml:1:11: extends \"nope\"") && e.contains("rmcp"), "{e}");
        let e = err(Role::Server, "name = \"x\"\n");
        assert!(e.starts_with("my.toml:1:1: missing field") && e.contains("extends"), "{e}");
        assert!(!e.contains('\n'));
        // Judged over the file's own base: a setting valid only there (an SDK close rule) is not
        // taken for the mistake.
        let e = match layer(Role::Client, "extends = \"ts-sdk\"\n[close_handling]\nlost_session_answers = [\"404\", \"400\"]\n[http]\nkeep_alive = \"many\"\n") {
            Ok(l) => resolve::<ClientPolicy>(Role::Client, &l).map(|_| ()).unwrap_err().to_string(),
            Err(e) => e.to_string(),
        };
        assert!(e.starts_with("my.toml:5:"), "{e}");
        // A leaf inside a table is named by its dotted path and its own line.
        let e = err(Role::Server, "extends = \"rmcp\"\n[retention]\nmax_events = \"lots\"\n");
        assert!(e.starts_with("my.toml:3:14: retention.max_events: "), "{e}");
        // A whole profile written out (a dump, no extends) is judged field by field too.
        let dumped = dump(Role::Server, "reference").unwrap().unwrap();
        let bad = dumped.replace("second_get = \"reject409\"", "second_get = \"teapot\"");
        assert_ne!(bad, dumped);
        let line = bad.lines().position(|l| l.starts_with("second_get = ")).unwrap() + 1;
        let e = err(Role::Server, &bad);
        assert!(e.starts_with(&format!("my.toml:{line}:14: second_get: unknown variant `teapot`")), "{e}");
    }

    #[test]
    fn an_unknown_key_is_answered_with_the_top_level_fields_of_the_role() {
        let layers = layer(Role::Server, "extends = \"rmcp\"\n[retention]\nmax_event = 3\n").unwrap();
        let e = resolve::<ServerPolicy>(Role::Server, &layers).map(|_| ()).unwrap_err().to_string();
        let listed = e.split_once("(a server profile has: ").map(|(_, rest)| rest).unwrap_or_default();
        let listed =
            listed.split_once("; and extends, description, sdk, [sources])").map(|(l, _)| l).unwrap_or_default();
        let names: Vec<&str> = listed.split(", ").collect();
        assert!(names.contains(&"keepalive") && names.contains(&"retention"), "{e}");
        assert!(names.iter().all(|n| !n.contains('.')), "only top-level fields: {e}");
        assert!(names.windows(2).all(|w| w[0] < w[1]), "in order: {e}");
    }

    #[test]
    fn a_file_may_extend_through_eight_files_and_not_nine() {
        let chain_of = |extends: usize| {
            let mut base = |role: Role, name: &str, _: &Layer| {
                let k: usize = name.trim_start_matches('b').parse().expect("b1, b2, ...");
                let text = if k < extends { format!("extends = \"b{}\"\n", k + 1) } else { String::new() };
                parse_layer(role, &text, &format!("{name}.toml"))
            };
            let top = parse_layer(Role::Server, "extends = \"b1\"\n", "my.toml").unwrap();
            chain(Role::Server, top, &mut base).map(|layers| layers.len()).map_err(|e| e.to_string())
        };
        assert_eq!(chain_of(8), Ok(9));
        let e = chain_of(9).unwrap_err();
        assert!(e.starts_with("b8.toml:1:11: extends \"b9\": more than 8 files deep"), "{e}");
    }

    #[test]
    fn a_bad_value_in_a_file_below_is_blamed_on_that_file_not_the_one_on_top() {
        let mut base = |role: Role, name: &str, below: &Layer| match name {
            "middle" => parse_layer(role, "extends = \"rmcp\"\nkeepalive = \"soon\"\n", "middle.toml"),
            _ => builtin_base(role, name, below),
        };
        let top = parse_layer(Role::Server, "extends = \"middle\"\nunknown_id = \"gone410\"\n", "my.toml").unwrap();
        let layers = chain(Role::Server, top, &mut base).unwrap();
        let e = resolve::<ServerPolicy>(Role::Server, &layers).map(|_| ()).unwrap_err().to_string();
        assert!(e.starts_with("middle.toml:2:13: keepalive: duration \"soon\""), "{e}");
    }

    #[test]
    fn sources_read_as_dotted_keys_or_nested_tables_and_only_as_strings() {
        let text =
            "extends = \"reference\"\n[sources]\n\"persistence\" = \"a\"\n[sources.reconnect]\ninitial = \"b\"\n";
        let layer = parse_layer(Role::Client, text, "my.toml").unwrap();
        let sources: Vec<(&str, &str)> = layer.meta.sources.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(sources, vec![("persistence", "a"), ("reconnect.initial", "b")]);
        let e =
            parse_layer(Role::Client, "extends = \"reference\"\n[sources]\npersistence = 3\n", "my.toml").unwrap_err();
        assert!(e.to_string().contains("a source must be a string"), "{e}");
    }

    #[test]
    fn a_field_set_again_drops_its_bases_source_whole_tables_included() {
        let sources = |text: &str| {
            let layers = layer(Role::Client, text).unwrap();
            resolve::<ClientPolicy>(Role::Client, &layers).unwrap().meta.sources
        };
        let base = sources("extends = \"reference\"\n");
        assert!(base.contains_key("reconnect") && base.contains_key("persistence"), "{base:?}");
        // One field of the table set again: the source of the whole table no longer vouches for it.
        let changed = sources("extends = \"reference\"\n[reconnect]\ninitial = \"2s\"\n");
        assert!(!changed.contains_key("reconnect") && changed.contains_key("persistence"), "{changed:?}");
        // The same with a dotted key, which names no table.
        let changed = sources("extends = \"reference\"\nreconnect.initial = \"2s\"\n");
        assert!(!changed.contains_key("reconnect") && changed.contains_key("persistence"), "{changed:?}");
        // A field set again by name: its base's source goes.
        let changed = sources("extends = \"reference\"\npersistence = \"volatile\"\n");
        assert!(!changed.contains_key("persistence") && changed.contains_key("reconnect"), "{changed:?}");
    }

    #[test]
    fn a_table_set_again_drops_the_sources_of_the_bases_fields_inside_it() {
        let sources = |text: &str| {
            let layers = layer(Role::Client, text).unwrap();
            resolve::<ClientPolicy>(Role::Client, &layers).unwrap().meta.sources
        };
        let inside = |s: &BTreeMap<String, String>| s.keys().filter(|k| k.starts_with("close_handling.")).count();
        assert!(inside(&sources("extends = \"ts-sdk\"\n")) > 0, "ts-sdk sources its close rules one by one");
        let replaced = sources("extends = \"ts-sdk\"\n[close_handling]\nkind = \"decision-procedure\"\n");
        assert_eq!(inside(&replaced), 0, "{replaced:?}");
        assert!(replaced.contains_key("persistence"), "{replaced:?}");
    }

    #[test]
    fn a_tagged_table_written_again_replaces_the_bases_whole() {
        // ts-sdk's close_handling is an SDK rule set; a file that names another kind gets that
        // kind alone, none of the SDK rules' fields carried over.
        let layers =
            layer(Role::Client, "extends = \"ts-sdk\"\n[close_handling]\nkind = \"decision-procedure\"\n").unwrap();
        let merged = merged(&layers);
        assert_eq!(merged["close_handling"], serde_json::json!({ "kind": "decision-procedure" }));
        // An untagged table merges key by key.
        let layers = layer(Role::Client, "extends = \"ts-sdk\"\n[reconnect]\ninitial = \"2s\"\n").unwrap();
        assert_eq!(merged_of(&layers, "reconnect", "initial"), Some("2s".into()));
        assert!(merged_of(&layers, "reconnect", "max").is_some(), "the base's other reconnect fields stay");
    }

    fn merged_of(layers: &[Layer], table: &str, key: &str) -> Option<String> {
        merged(layers).get(table)?.get(key).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
    }

    #[test]
    fn a_users_file_without_a_name_is_named_after_itself() {
        let mut l = parse_layer(Role::Client, "extends = \"reference\"\n", "mine.toml").unwrap();
        l.name_if_missing("mine");
        assert_eq!(l.fields.get("name"), Some(&Value::String("mine".into())));
        let mut l = parse_layer(Role::Client, "extends = \"reference\"\nname = \"ours\"\n", "mine.toml").unwrap();
        l.name_if_missing("mine");
        assert_eq!(l.fields.get("name"), Some(&Value::String("ours".into())));
    }

    #[test]
    fn each_field_has_its_own_doc_and_an_unknown_one_none() {
        assert!(field_doc(Role::Client, "reconnect.max_attempts").contains("attempt"));
        assert!(field_doc(Role::Server, "retention.max_events").contains("event"));
        assert_ne!(field_doc(Role::Client, "persistence"), field_doc(Role::Client, "request_timeout"));
        assert_eq!(field_doc(Role::Lb, "no_such_field"), "");
    }

    #[test]
    fn aliases_read_as_the_trace_spelling() {
        let layers =
            layer(Role::Server, "extends = \"reference\"\nevicted_id = \"410\"\nsecond_get = \"409\"\n").unwrap();
        let s: ServerPolicy = resolve(Role::Server, &layers).unwrap().policy;
        assert_eq!((s.evicted_id, s.second_get), (Unhonourable::Gone410, SecondGet::Reject409));
        assert_eq!(value_from_text("evicted_id", "410", &Value::Null), Ok(Value::String("gone410".into())));
        assert_eq!(value_from_text("jitter", "0.2", &Value::from(0.0)), Ok(Value::from(0.2)));
        assert!(value_from_text("jitter", "NaN", &Value::from(0.0)).is_err());
        assert_eq!(value_from_text("max_attempts", "none", &Value::from(3)), Ok(Value::Null));
        // Inline tables and arrays are read as TOML.
        assert_eq!(value_from_text("x", "[\"404\", \"400\"]", &Value::Null), Ok(serde_json::json!(["404", "400"])));
        assert_eq!(value_from_text("x", "{ kind = \"sdk\" }", &Value::Null), Ok(serde_json::json!({ "kind": "sdk" })));
        // A dotted path through a value that is not a table replaces it with one.
        let mut root = Map::new();
        root.insert("a".into(), Value::from(3));
        set_path(&mut root, "a.b", Value::from(4));
        assert_eq!(Value::Object(root), serde_json::json!({ "a": { "b": 4 } }));
        // A field left out at its default has no current value: a flag, a number or a word.
        assert_eq!(value_from_text("hold_tail", "true", &Value::Null), Ok(Value::Bool(true)));
        assert_eq!(value_from_text("replicas", "3", &Value::Null), Ok(Value::from(3)));
        assert_eq!(value_from_text("routing", "sticky-session", &Value::Null), Ok(Value::from("sticky-session")));
        // An alias is read as such only for its own field and its own spelling.
        assert_eq!(value_from_text("evicted_id", "410", &Value::Null), Ok(Value::from("gone410")));
        assert_eq!(value_from_text("evicted_id", "7", &Value::Null), Ok(Value::from(7)));
        assert_eq!(value_from_text("replicas", "410", &Value::Null), Ok(Value::from(410)));
    }

    #[test]
    fn a_flag_set_on_the_command_line_reads_true_yes_on_as_true_and_false_no_off_as_false() {
        for text in ["true", "yes", "on"] {
            assert_eq!(value_from_text("hold_tail", text, &Value::Bool(false)), Ok(Value::Bool(true)), "{text}");
        }
        for text in ["false", "no", "off"] {
            assert_eq!(value_from_text("hold_tail", text, &Value::Bool(true)), Ok(Value::Bool(false)), "{text}");
        }
        assert_eq!(
            value_from_text("hold_tail", "maybe", &Value::Bool(false)),
            Err("\"maybe\" is not true or false".into())
        );
    }

    #[test]
    fn a_partial_table_valid_over_the_files_own_base_is_not_taken_for_the_mistake() {
        // ts-sdk's era is a table with its mode, the reference's (the fallback base) none: one
        // field of it set over ts-sdk is valid, so the bad value further down is the one blamed.
        let text = "extends = \"ts-sdk\"\n[era]\nreprobe_on_failure = true\n[http]\nkeep_alive = \"many\"\n";
        let layers = layer(Role::Client, text).unwrap();
        let e = resolve::<ClientPolicy>(Role::Client, &layers).map(|_| ()).unwrap_err().to_string();
        assert!(e.starts_with("my.toml:5:"), "{e}");
    }

    #[test]
    fn a_tagged_table_is_judged_whole_so_its_kind_alone_is_not_taken_for_the_mistake() {
        // The reference's close_handling is another kind: the SDK rules are valid only together.
        let text = "extends = \"reference\"\n[close_handling]\nkind = \"sdk\"\non_404 = \"fail-keep-session\"\n\
                    on_empty_resume = \"without-id\"\nresume_post_needs_event_id = true\n[http]\nkeep_alive = \"many\"\n";
        let layers = layer(Role::Client, text).unwrap();
        let e = resolve::<ClientPolicy>(Role::Client, &layers).map(|_| ()).unwrap_err().to_string();
        assert!(e.starts_with("my.toml:8:"), "{e}");
    }

    #[test]
    fn a_value_is_written_as_one_line_of_toml_with_floats_spelled_as_rust_writes_them() {
        let v = serde_json::json!({ "a": null, "b": [1, 0.25, 0.00005, 1e20], "c": "x\"y", "d": true });
        assert_eq!(toml_value(&v), r#"{ a = "none", b = [1, 0.25, 5e-5, 1e20], c = 'x"y', d = true }"#);
    }

    #[test]
    fn a_dump_writes_each_fields_doc_then_its_source_above_it_and_no_empty_comment() {
        let text = dump(Role::Server, "rmcp").unwrap().unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().position(|l| l.starts_with("keepalive = ")).expect("keepalive is written");
        let layers = builtin_layers(Role::Server, "rmcp").unwrap().unwrap();
        let sources = resolve::<ServerPolicy>(Role::Server, &layers).unwrap().meta.sources;
        let above =
            [format!("# {}", field_doc(Role::Server, "keepalive")), format!("# source: {}", sources["keepalive"])];
        assert_eq!(lines[at - 2..at], above);
        assert!(!lines.iter().any(|l| l.trim_end() == "#"), "{text}");
    }

    #[test]
    fn a_table_set_at_a_path_merges_into_the_one_there_unless_it_names_a_kind() {
        let mut root = Map::new();
        set_path(&mut root, "reconnect", serde_json::json!({ "initial": "1s", "max": "30s" }));
        set_path(&mut root, "reconnect", serde_json::json!({ "initial": "2s" }));
        assert_eq!(root["reconnect"], serde_json::json!({ "initial": "2s", "max": "30s" }));
        set_path(&mut root, "close_handling", serde_json::json!({ "kind": "sdk", "on_404": "fail-call" }));
        set_path(&mut root, "close_handling", serde_json::json!({ "kind": "naive" }));
        assert_eq!(root["close_handling"], serde_json::json!({ "kind": "naive" }));
    }

    #[test]
    fn a_dump_writes_the_fields_in_the_documented_order() {
        for role in Role::ALL {
            let text = dump(role, role.names()[0]).unwrap().unwrap();
            let order = documented_paths(role);
            let written: Vec<&str> = text
                .lines()
                .filter_map(|l| l.split_once(" = ").map(|(k, _)| k))
                .filter(|k| order.contains(k))
                .filter(|k| !k.contains('.'))
                .collect();
            let at: Vec<usize> = written.iter().map(|k| order.iter().position(|p| p == k).unwrap_or(0)).collect();
            assert!(at.windows(2).all(|w| w[0] < w[1]), "{role:?}: {written:?}");
            let mut sorted = written.clone();
            sorted.sort();
            assert_ne!(written, sorted, "{role:?}: the documented order is not the alphabetical one");
        }
    }

    #[test]
    fn a_dump_carries_the_sources_of_its_fields_and_they_read_back() {
        let layers = builtin_layers(Role::Server, "rmcp").unwrap().unwrap();
        let sources = resolve::<ServerPolicy>(Role::Server, &layers).unwrap().meta.sources;
        assert!(!sources.is_empty());
        let text = dump(Role::Server, "rmcp").unwrap().unwrap();
        let line = format!("sources.\"keepalive\" = {}", quote(&sources["keepalive"]));
        assert!(text.lines().any(|l| l == line), "{text}");
        let read = parse_layer(Role::Server, &text, "dump.toml").unwrap();
        assert_eq!(read.meta.sources, sources);
    }

    #[test]
    fn every_dump_reads_back_as_the_same_policy() {
        for role in Role::ALL {
            for n in role.names() {
                let text = dump(role, n).unwrap().unwrap();
                let layers = layer(role, &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
                match role {
                    Role::Client => {
                        assert_eq!(resolve::<ClientPolicy>(role, &layers).unwrap().policy, client(n).unwrap())
                    }
                    Role::Server => {
                        assert_eq!(resolve::<ServerPolicy>(role, &layers).unwrap().policy, server(n).unwrap())
                    }
                    Role::Lb => assert_eq!(resolve::<LbConfig>(role, &layers).unwrap().policy, lb(n).unwrap()),
                }
                assert!(text.contains("# source: "), "{n}");
                // Every field is written, those serde leaves out at their default included.
                if role == Role::Lb {
                    assert!(text.lines().any(|l| l.starts_with("hops = ")), "{n}: {text}");
                }
            }
        }
    }

    #[test]
    fn every_sdk_field_has_a_source_and_its_value_reads_back_as_the_policy() {
        let profiles = sdk_profiles();
        assert!(profiles.contains(&(Role::Client, "ts-sdk")) && profiles.contains(&(Role::Server, "rmcp-0.16")));
        assert!(!profiles.iter().any(|(_, n)| *n == "reference" || *n == "naive"));
        let mut failures = Vec::new();
        for (role, name) in profiles {
            let rows = source_rows(role, name).unwrap().unwrap();
            let leaves = documented_paths(role)
                .into_iter()
                .filter(|p| *p != "name" && !documented_paths(role).iter().any(|q| q.starts_with(&format!("{p}."))))
                .count();
            if rows.len() != leaves {
                let have: Vec<&str> = rows.iter().map(|r| r.path.as_str()).collect();
                let missing: Vec<&str> = documented_paths(role)
                    .into_iter()
                    .filter(|p| *p != "name" && !documented_paths(role).iter().any(|q| q.starts_with(&format!("{p}."))))
                    .filter(|p| !have.contains(p))
                    .collect();
                failures.push(format!("{role:?} {name}: no file writes {}", missing.join(" ")));
                continue;
            }
            let unsourced: Vec<&str> = rows.iter().filter(|r| r.source.is_none()).map(|r| r.path.as_str()).collect();
            if !unsourced.is_empty() {
                failures.push(format!("{role:?} {name}: no source for {}", unsourced.join(" ")));
            }
            // Every field, written from the table alone over the profile itself, and over the
            // reference, gives the same policy: the values are the resolved ones.
            let top = rows.iter().map(|r| format!("{} = {}", r.path, r.value)).collect::<Vec<_>>().join("\n");
            let over_reference = format!("extends = \"reference\"\nname = {}\n{top}\n", quote(name));
            match role {
                Role::Client => {
                    let p: ClientPolicy = resolve(role, &layer(role, &over_reference).unwrap()).unwrap().policy;
                    assert_eq!(p, client(name).unwrap(), "{name}");
                }
                _ => {
                    let p: ServerPolicy = resolve(role, &layer(role, &over_reference).unwrap()).unwrap().policy;
                    assert_eq!(p, server(name).unwrap(), "{name}");
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn a_source_row_holds_the_resolved_value_even_of_a_field_the_file_leaves_to_its_default() {
        let row = |role, name, path: &str| {
            let rows = source_rows(role, name).unwrap().unwrap();
            rows.into_iter().find(|r| r.path == path).map(|r| r.value)
        };
        // stateless-2026 writes only era.mode; the era's cache is the policy's default.
        assert_eq!(row(Role::Client, "stateless-2026", "era.cache"), Some("\"connection\"".into()));
        assert_eq!(row(Role::Client, "stateless-2026", "era.mode"), Some("\"modern\"".into()));
        // The value as a dump writes it, not as the file spells it (nginx's file says "60s").
        assert_eq!(row(Role::Lb, "nginx", "idle_timeout"), Some("\"1m\"".into()));
    }

    #[test]
    fn the_sources_section_is_replaced_between_its_markers_only() {
        let doc = format!("intro\n{SOURCES_BEGIN}\nold\n{SOURCES_END}\nafter\n");
        let new = with_sources_section(&doc, "new table").unwrap();
        assert_eq!(new, format!("intro\n{SOURCES_BEGIN}\nnew table\n{SOURCES_END}\nafter\n"));
        assert_eq!(sources_section(&new), Some("new table"));
        assert_eq!(with_sources_section("no markers", "x"), None);
        let markdown = sources_markdown().unwrap();
        assert!(
            markdown.contains("#### server `rmcp`") && markdown.contains("| `keepalive` | `\"15s\"` |"),
            "{markdown}"
        );
    }
}
