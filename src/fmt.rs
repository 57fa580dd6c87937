//! `relay-vm fmt`: prints a `.relay` file in canonical form with its comments, checks that it
//! is (`--check`) or rewrites it (`--write`).

use super::{Failure, EXIT_BAD_INPUT, EXIT_COMPILE_ERROR};
use std::io::Write;
use std::path::Path;

/// What `fmt` does with the formatted text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Print it on stdout.
    Print,
    /// Fail (exit 1) with the first differing lines when it differs from the file.
    Check,
    /// Replace the file with it, atomically, when it differs.
    Write,
}

/// Lines shown on each side of `--check`'s message.
const SHOWN_LINES: usize = 3;

/// Does `mode` with `formatted`, the canonical form of `text`, the contents of `path`.
///
/// # Errors
/// `--check` on a file that is not formatted (exit 1, naming the file and showing the first
/// differing lines as `-`/`+`); a file `--write` cannot replace (exit 3).
pub(crate) fn apply(path: &Path, text: &str, formatted: &str, mode: Mode) -> Result<(), Failure> {
    match mode {
        Mode::Print => super::write_stdout(formatted),
        Mode::Check if text == formatted => Ok(()),
        Mode::Check => Err(Failure { code: EXIT_COMPILE_ERROR, message: difference(path, text, formatted) }),
        Mode::Write if text == formatted => Ok(()),
        Mode::Write => replace(path, formatted).map_err(|e| Failure {
            code: EXIT_BAD_INPUT,
            message: format!("error: cannot write {}: {e}\n", path.display()),
        }),
    }
}

/// `PATH: not formatted`, then the first lines that differ, as a unified diff would show them.
fn difference(path: &Path, text: &str, formatted: &str) -> String {
    let (old, new): (Vec<&str>, Vec<&str>) = (text.lines().collect(), formatted.lines().collect());
    let first = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let mut message = format!(
        "{0}: not formatted (`relay-vm fmt --write {0}` rewrites it)\n@@ line {1} @@\n",
        path.display(),
        first + 1
    );
    for line in old.iter().skip(first).take(SHOWN_LINES) {
        message.push_str(&format!("-{line}\n"));
    }
    for line in new.iter().skip(first).take(SHOWN_LINES) {
        message.push_str(&format!("+{line}\n"));
    }
    message
}

/// Writes `contents` to a temporary file beside `path` and renames it over `path`, so that a
/// crash leaves either the old file or the new one, never a part.
fn replace(path: &Path, contents: &str) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(contents.as_bytes())?;
    temp.as_file().sync_all()?;
    // Keep the file's permissions, which a new temporary file does not have.
    temp.as_file().set_permissions(std::fs::metadata(path)?.permissions())?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
