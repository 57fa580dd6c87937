//! The header directives of `tests/relay/run/*.relay` files, read the same way by every
//! harness that runs them (the VM's in `golden_run.rs`, the interpreter's in
//! `interp_run.rs`); see `golden_run.rs` for what each directive means.

use relay::vm::{Executable, Value, VmFunction};

/// A call and its printed result.
pub const RUN: &str = "// run: ";
/// A call that traps, and text of the trap.
pub const TRAP: &str = "// trap: ";
/// The recursion limit of the file's runs.
pub const DEPTH: &str = "// max-call-depth: ";

/// One call of a header.
pub struct Call {
    /// The header line's index in the file.
    pub line: usize,
    /// The function called, without `@`.
    pub func: String,
    /// The JSON array of arguments, brackets included.
    pub args: String,
    /// What it must give.
    pub expect: Expect,
}

/// What a call must give.
pub enum Expect {
    /// The printed result.
    Value(String),
    /// Text the trap message contains.
    Trap(String),
}

/// A file's calls and limits.
pub struct Directives {
    /// The calls, in file order.
    pub calls: Vec<Call>,
    /// `// max-call-depth: N`.
    pub max_call_depth: Option<usize>,
}

/// Splits `@f(ARGS)REST` into `f`, `ARGS` and `REST`, matching brackets outside JSON strings.
fn split_call(s: &str) -> Option<(&str, &str, &str)> {
    let s = s.strip_prefix('@')?;
    let open = s.find('(')?;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(open) {
        match (in_string, c) {
            (true, _) if escaped => escaped = false,
            (true, '\\') => escaped = true,
            (true, '"') => in_string = false,
            (true, _) => {}
            (false, '"') => in_string = true,
            (false, '(' | '[' | '{') => depth += 1,
            (false, ')' | ']' | '}') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some((&s[..open], &s[open + 1..i], &s[i + 1..]));
                }
            }
            _ => {}
        }
    }
    None
}

/// Reads the header of a run golden file.
pub fn parse_directives(text: &str) -> Result<Directives, String> {
    let mut d = Directives { calls: vec![], max_call_depth: None };
    let mut described = false;
    for (line, l) in text.lines().enumerate().take_while(|(_, l)| l.starts_with("//")) {
        let malformed = || format!("malformed directive `{l}`");
        if let Some(rest) = l.strip_prefix(RUN) {
            let (func, args, tail) = split_call(rest).ok_or_else(malformed)?;
            let result = tail.strip_prefix(" == ").ok_or_else(malformed)?;
            let expect = Expect::Value(result.trim().to_string());
            d.calls.push(Call { line, func: func.to_string(), args: format!("[{args}]"), expect });
        } else if let Some(rest) = l.strip_prefix(TRAP) {
            let (func, args, tail) = split_call(rest).ok_or_else(malformed)?;
            let text = tail.strip_prefix(": ").ok_or_else(malformed)?;
            let expect = Expect::Trap(text.trim().to_string());
            d.calls.push(Call { line, func: func.to_string(), args: format!("[{args}]"), expect });
        } else if let Some(rest) = l.strip_prefix(DEPTH) {
            d.max_call_depth = Some(rest.trim().parse().map_err(|_| malformed())?);
        } else {
            described = true;
        }
    }
    if !described {
        return Err("the header needs a `//` line saying what the file covers".to_string());
    }
    if d.calls.is_empty() {
        return Err("no `// run:` or `// trap:` directive".to_string());
    }
    Ok(d)
}

impl Call {
    /// The call's arguments as values of `f`'s parameter types.
    pub fn arguments(&self, exe: &Executable, f: &VmFunction) -> Result<Vec<Value>, String> {
        let items: Vec<serde_json::Value> = serde_json::from_str(&self.args)
            .map_err(|e| format!("line {}: bad JSON arguments: {e}", self.line + 1))?;
        if items.len() != f.param_types.len() {
            return Err(format!(
                "line {}: `@{}` takes {} argument(s)",
                self.line + 1,
                f.name,
                f.param_types.len()
            ));
        }
        f.param_types
            .iter()
            .zip(&items)
            .map(|(t, j)| relay::json::from_json(exe, t, j))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("line {}: {e}", self.line + 1))
    }
}
