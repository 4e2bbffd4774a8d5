//! Profiles as a command names them: a built-in name (`ts-sdk`) or a TOML file
//! (`./my-server.toml`; an argument that contains `/` or ends in `.toml` is a file). A file may
//! start `extends = "NAME"` — a built-in name, or a path relative to the file — and change only
//! what differs. Every problem is one line, `FILE:LINE:COL: message`.

use super::settings::{client_problems, lb_problems, server_problems, Problem};
use crate::error::SimError;
use mcpsim_model::config::{ClientPolicy, LbConfig, ServerPolicy};
use mcpsim_model::profiles::{self, builtin_base, chain, parse_layer, resolve, Layer, Pos, ProfileError, Role};
use serde::de::DeserializeOwned;
use std::path::Path;

/// Whether a profile argument names a file rather than a built-in profile.
pub fn is_path(arg: &str) -> bool {
    arg.contains('/') || arg.ends_with(".toml")
}

/// The client profile a command names.
pub fn client(arg: &str) -> Result<ClientPolicy, SimError> {
    load(Role::Client, arg, profiles::client, client_problems)
}

/// The server profile a command names.
pub fn server(arg: &str) -> Result<ServerPolicy, SimError> {
    load(Role::Server, arg, profiles::server, server_problems)
}

/// The load-balancer profile a command names.
pub fn lb(arg: &str) -> Result<LbConfig, SimError> {
    load(Role::Lb, arg, profiles::lb, lb_problems)
}

fn load<T: DeserializeOwned>(
    role: Role,
    arg: &str,
    builtin: fn(&str) -> Option<T>,
    problems: fn(&T) -> Vec<Problem>,
) -> Result<T, SimError> {
    if !is_path(arg) {
        return builtin(arg).ok_or_else(|| SimError::UnknownProfile {
            role: role.as_str(),
            name: arg.to_string(),
            known: format!("{}; or a path to a .toml file", role.names().join(", ")),
        });
    }
    let mut top = read_layer(role, Path::new(arg))?;
    if role != Role::Lb {
        let stem = Path::new(arg).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        top.name_if_missing(&stem);
    }
    let layers = chain(role, top, &mut base)?;
    let policy = resolve::<T>(role, &layers)?.policy;
    if let Some(p) = problems(&policy).into_iter().next() {
        return Err(SimError::Profile(located(&layers, &p)));
    }
    Ok(policy)
}

fn read_layer(role: Role, path: &Path) -> Result<Layer, SimError> {
    let origin = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| SimError::Io { path: origin.clone(), problem: e.to_string() })?;
    Ok(parse_layer(role, &text, &origin)?)
}

/// Resolves an `extends`: a path relative to the file that names it, or a built-in name.
fn base(role: Role, name: &str, from: &Layer) -> Result<Layer, ProfileError> {
    if !is_path(name) {
        return builtin_base(role, name, from);
    }
    let dir = Path::new(&from.origin).parent().unwrap_or(Path::new(""));
    let path = dir.join(name);
    let pos = from.extends.as_ref().map(|(_, p)| *p).unwrap_or(Pos::START);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| from.error_at(pos, format!("extends {name:?}: {}: {e}", path.display())))?;
    parse_layer(role, &text, &path.display().to_string())
}

/// A problem of the resolved policy, at the value that causes it in the file that set it last.
fn located(layers: &[Layer], problem: &Problem) -> ProfileError {
    let top = layers.last().expect("a chain has its top layer");
    let setter = layers.iter().rev().find(|l| l.values.contains_key(&problem.path)).unwrap_or(top);
    setter.error_on(&problem.path, format!("{}: {}", problem.path, problem.message))
}
