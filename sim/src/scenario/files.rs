//! The files a command names — profiles, scenario families, deployments — read with a size cap,
//! as traces are ([`crate::report::artifacts::MAX_TRACE_BYTES`]): `extends = "/dev/zero"` is a
//! one-line error, not a read until memory runs out.

use std::io::Read;
use std::path::Path;

/// The largest profile, scenario family or deployment file mcpsim reads (1 MiB: the largest
/// built-in file is under 10 KiB).
pub const MAX_INPUT_BYTES: u64 = 1 << 20;

/// Whether a profile or family argument names a file rather than a built-in one: it contains
/// `/` or ends in `.toml`.
pub fn is_path(arg: &str) -> bool {
    arg.contains('/') || arg.ends_with(".toml")
}

/// The text of the file at `path`, at most [`MAX_INPUT_BYTES`]; the error is the reason, one
/// line.
pub fn read(path: &Path) -> Result<String, String> {
    read_capped(path, MAX_INPUT_BYTES)
}

/// The text of the file at `path`, at most `cap` bytes.
pub fn read_capped(path: &Path, cap: u64) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > cap {
        return Err(format!("larger than {} KiB: not a file mcpsim reads", cap >> 10));
    }
    String::from_utf8(bytes).map_err(|_| "stream did not contain valid UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_is_refused_after_the_cap() {
        let e = read(Path::new("/dev/zero")).unwrap_err();
        assert!(e.starts_with("larger than 1024 KiB"), "{e}");
        assert!(read(Path::new("/nonexistent/x.toml")).is_err());
    }
}
