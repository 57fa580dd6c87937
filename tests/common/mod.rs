//! What the golden-file harnesses and the fusion tests share: listing the `.relay` files of a
//! `tests/relay` folder and checking each with every failure in one assertion,
//! `RELAY_TEST_BLESS=1`, `.expected` siblings, the golden harnesses' one test per file (`golden`), `// error: LINE:COL: text` directives, and
//! running a program's `@main` on JSON arguments.
//!
//! Each test crate compiles this module and uses part of it, hence the `dead_code` allowances.

#[allow(dead_code)]
pub mod directives;
#[allow(dead_code)]
pub mod golden;

use relay::Program;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};

/// Whether `RELAY_TEST_BLESS=1` asks the harness to rewrite expectations from actual results.
#[allow(dead_code)]
pub fn bless() -> bool {
    std::env::var_os("RELAY_TEST_BLESS").is_some_and(|v| v == "1")
}

/// The device the end-to-end tests run fused kernels on: `RELAY_TEST_DEVICE` (`cpu` when
/// unset; `opencl` or `opencl:<platform>:<device>` to run the same goldens and model tests
/// on an OpenCL device, as CI does on POCL).
#[allow(dead_code)]
pub fn test_device() -> relay::Device {
    match std::env::var("RELAY_TEST_DEVICE") {
        Ok(s) if !s.is_empty() => s.parse().unwrap_or_else(|e| panic!("RELAY_TEST_DEVICE: {e}")),
        _ => relay::Device::Cpu,
    }
}

/// The `.relay` files of `tests/relay/<dir>`, sorted by name.
#[allow(dead_code)]
pub fn relay_files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/relay").join(dir);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())).path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "relay"))
        .collect();
    files.sort();
    files
}

/// Reads a golden file, which must start with a `//` line saying what it shows.
#[allow(dead_code)]
pub fn read_described(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    if !text.starts_with("//") {
        return Err("the file needs a `//` line saying what it shows".to_string());
    }
    Ok(text)
}

/// Compares `got` with the `.expected` sibling of `path` or, when blessing, writes it there.
/// `what` names the output in the failure (`disassembly`).
#[allow(dead_code)]
pub fn check_expected(path: &Path, got: &str, bless: bool, what: &str) -> Result<(), String> {
    let expected_path = path.with_extension("expected");
    if bless {
        return std::fs::write(&expected_path, got).map_err(|e| format!("cannot bless: {e}"));
    }
    let want = std::fs::read_to_string(&expected_path)
        .map_err(|e| format!("cannot read {} ({e}); run with RELAY_TEST_BLESS=1", expected_path.display()))?;
    if got != want {
        return Err(format!("{what} differs\n--- expected\n{want}--- actual\n{got}"));
    }
    Ok(())
}

/// A diagnostic as an `// error: LINE:COL: text` directive expects it or as the compiler
/// reported it: 1-based line and column (in characters), and the message.
#[allow(dead_code)]
#[derive(Clone, Debug, PartialEq)]
pub struct Located {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

#[allow(dead_code)]
impl Located {
    /// Reads `LINE:COL: text`, what follows a directive's prefix; `None` when malformed.
    pub fn parse(rest: &str) -> Option<Located> {
        let mut parts = rest.splitn(3, ':');
        let (line, col, message) = (parts.next()?, parts.next()?, parts.next()?);
        Some(Located {
            line: line.trim().parse().ok()?,
            col: col.trim().parse().ok()?,
            message: message.trim().to_string(),
        })
    }
}

/// Pairs each expectation with a distinct found diagnostic at its position whose message
/// contains the expected text. Returns the expectations left unpaired and the found
/// diagnostics left over.
#[allow(dead_code)]
pub fn unmatched<'a>(expected: &'a [Located], found: &'a [Located]) -> (Vec<&'a Located>, Vec<&'a Located>) {
    let mut left: Vec<&Located> = found.iter().collect();
    let mut missing = vec![];
    for e in expected {
        match left.iter().position(|f| f.line == e.line && f.col == e.col && f.message.contains(&e.message)) {
            Some(i) => {
                left.remove(i);
            }
            None => missing.push(e),
        }
    }
    (missing, left)
}

/// A small deterministic generator: test inputs need to be varied, not random.
#[allow(dead_code)]
pub struct Lcg(pub u64);

#[allow(dead_code)]
impl Lcg {
    /// The next number in `[0, 1)`.
    pub fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The next number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next() * n as f64) as usize).min(n.saturating_sub(1))
    }
}

/// Calls `@main` of `program` on `args` (one JSON value per parameter, as `relay-vm run`
/// takes them) and returns the result as JSON.
#[allow(dead_code)]
pub fn run_main(program: &Program, args: &[Json]) -> Result<Json, String> {
    let exe = program.executable();
    let f = program.function("main").map_err(|e| e.to_string())?;
    let values = f
        .param_types
        .iter()
        .zip(args)
        .map(|(t, j)| relay::json::from_json(exe, t, j))
        .collect::<Result<Vec<_>, _>>()?;
    let mut vm = program.vm();
    let v = program.invoke(&mut vm, "main", values).map_err(|e| e.to_string())?;
    let text = relay::json::to_json(exe, &f.ret_type, &v)?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}
