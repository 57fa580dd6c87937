//! The golden harnesses' test runner: each `.relay` file of a `tests/relay` folder is a test of
//! its own (libtest-mimic trials, `harness = false`), named `<folder>/<file stem>`, so
//! `cargo test --test golden_run -- run/closures` runs one file and a failure names its file.

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::Path;
use std::sync::Arc;

/// One trial per `.relay` file of `tests/relay/<dir>`, running `check(path, name)` where
/// `name` is `tests/relay/<dir>/FILE.relay`, and one trial, `<dir>: at least N files`, that
/// fails when the folder holds fewer than `at_least` (a moved folder must not pass silently).
pub fn file_trials(
    dir: &str,
    at_least: usize,
    check: impl Fn(&Path, &str) -> Result<(), String> + Send + Sync + 'static,
) -> Vec<Trial> {
    let files = super::relay_files(dir);
    let found = files.len();
    let folder = dir.to_string();
    let mut trials = vec![Trial::test(format!("{dir}: at least {at_least} files"), move || {
        if found >= at_least {
            Ok(())
        } else {
            Err(format!("expected at least {at_least} files in tests/relay/{folder}, found {found}").into())
        }
    })];
    let check = Arc::new(check);
    for path in files {
        let stem = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let name = format!("tests/relay/{dir}/{stem}.relay");
        let check = Arc::clone(&check);
        trials.push(Trial::test(format!("{dir}/{stem}"), move || check(&path, &name).map_err(Failed::from)));
    }
    trials
}

/// A trial running a test function that panics on failure (the harness catches the panic).
pub fn unit(name: &str, test: fn()) -> Trial {
    Trial::test(name, move || {
        test();
        Ok(())
    })
}

/// Runs `trials` under the command line's filters and options (as `cargo test` passes them)
/// and exits with libtest's status.
pub fn run(trials: Vec<Trial>) -> ! {
    libtest_mimic::run(&Arguments::from_args(), trials).exit()
}
