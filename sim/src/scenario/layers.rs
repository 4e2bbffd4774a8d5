//! A profile a command names, built-in or a file, as its `extends` chain of layers, resolved
//! into a policy and checked by a validation the caller gives (`settings`' rules): a problem is
//! located at the value that causes it, in the file that set it last (`FILE:LINE:COL: message`).

use super::files;
use crate::error::SimError;
use mcpsim_model::profiles::{builtin_base, chain, parse_layer, resolve, Layer, Pos, ProfileError, Role};
use serde::de::DeserializeOwned;
use std::path::Path;

/// Something a scenario may not ask for: the field (dotted serde path, relative to the policy for
/// the `*_problems` of one policy) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Problem {
    pub path: String,
    pub message: String,
}

/// The policy `arg` names — a built-in name, or a file with its `extends` chain — validated by
/// `problems`.
pub(crate) fn load<T: DeserializeOwned>(
    role: Role,
    arg: &str,
    builtin: fn(&str) -> Option<T>,
    problems: fn(&T) -> Vec<Problem>,
) -> Result<T, SimError> {
    if !files::is_path(arg) {
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
    let text = files::read(path).map_err(|problem| SimError::Io { path: origin.clone(), problem })?;
    Ok(parse_layer(role, &text, &origin)?)
}

/// Resolves an `extends`: a path relative to the file that names it, or a built-in name.
fn base(role: Role, name: &str, from: &Layer) -> Result<Layer, ProfileError> {
    if !files::is_path(name) {
        return builtin_base(role, name, from);
    }
    let dir = Path::new(&from.origin).parent().unwrap_or(Path::new(""));
    let path = dir.join(name);
    let pos = from.extends.as_ref().map(|(_, p)| *p).unwrap_or(Pos::START);
    let text =
        files::read(&path).map_err(|e| from.error_at(pos, format!("extends {name:?}: {}: {e}", path.display())))?;
    parse_layer(role, &text, &path.display().to_string())
}

/// A problem of the resolved policy, at the value that causes it in the file that set it last.
fn located(layers: &[Layer], problem: &Problem) -> ProfileError {
    let top = layers.last().expect("a chain has its top layer");
    let setter = layers.iter().rev().find(|l| l.values.contains_key(&problem.path)).unwrap_or(top);
    setter.error_on(&problem.path, format!("{}: {}", problem.path, problem.message))
}
