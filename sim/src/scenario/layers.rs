//! A profile a command names, built-in or a file, as its `extends` chain of layers, resolved
//! into a policy and checked by a validation the caller gives (`settings`' rules): a problem is
//! located at the value that causes it, in the file that set it last (`FILE:LINE:COL: message`).

use super::files;
use crate::error::SimError;
use mcpsim_model::profiles::{builtin_base, chain, parse_layer, resolve, Layer, Pos, ProfileError, Role};
use serde::de::DeserializeOwned;
use std::path::Path;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

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

/// The most entries of any list in a profile file (`hops` has at most 4; the check comes before
/// the file is read into a layer, so a file of 10 000 hops is refused at once).
pub const MAX_PROFILE_LIST: usize = 64;

fn read_layer(role: Role, path: &Path) -> Result<Layer, SimError> {
    let origin = path.display().to_string();
    let text = files::read(path).map_err(|problem| SimError::Io { path: origin.clone(), problem })?;
    check_lists(&text, &origin)?;
    Ok(parse_layer(role, &text, &origin)?)
}

/// Refuses a list longer than [`MAX_PROFILE_LIST`], at its position.
fn check_lists(text: &str, origin: &str) -> Result<(), ProfileError> {
    fn longest<'a>(v: &'a Spanned<DeValue<'a>>, path: &str, out: &mut Option<(String, usize, usize)>) {
        match v.get_ref() {
            DeValue::Array(items) => {
                if items.len() > MAX_PROFILE_LIST && out.is_none() {
                    *out = Some((path.to_string(), items.len(), v.span().start));
                }
                items.iter().for_each(|i| longest(i, path, out));
            }
            DeValue::Table(t) => {
                for (k, v) in t {
                    longest(
                        v,
                        &if path.is_empty() { k.get_ref().to_string() } else { format!("{path}.{}", k.get_ref()) },
                        out,
                    );
                }
            }
            _ => {}
        }
    }
    let Ok(table) = DeTable::parse(text) else { return Ok(()) }; // parse_layer says what is wrong
    let mut found = None;
    for (k, v) in table.get_ref() {
        longest(v, k.get_ref(), &mut found);
    }
    match found {
        None => Ok(()),
        Some((path, len, at)) => {
            let before = &text[..at.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            Err(ProfileError {
                origin: origin.to_string(),
                line,
                col,
                message: format!("{path}: {len} entries: a list in a profile has at most {MAX_PROFILE_LIST}"),
            })
        }
    }
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
    check_lists(&text, &path.display().to_string())?;
    parse_layer(role, &text, &path.display().to_string())
}

/// A problem of the resolved policy, at the value that causes it in the file that set it last.
fn located(layers: &[Layer], problem: &Problem) -> ProfileError {
    let top = layers.last().expect("a chain has its top layer");
    let setter = layers.iter().rev().find(|l| l.values.contains_key(&problem.path)).unwrap_or(top);
    setter.error_on(&problem.path, format!("{}: {}", problem.path, problem.message))
}
