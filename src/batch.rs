//! Running an entry function over many inputs: JSONL input lines (optionally labelled), JSON
//! parsing without a nesting limit, classification accuracy and latency statistics. Shared by
//! `relay-vm run --input`, `relay-vm bench` and the examples.

use crate::vm::Value;
use serde::Deserialize;

mod line;
pub use line::{read_line, Arguments, JsonArguments, Line, TypedArguments};
use serde_json::Value as Json;
use std::time::Duration;

/// The deepest JSON nesting accepted: SST parse trees nest a few hundred levels; anything far
/// deeper is more likely a mistake than a program input.
pub const MAX_JSON_DEPTH: usize = 100_000;

/// Parses JSON of any nesting up to [`MAX_JSON_DEPTH`] without overflowing the stack
/// (serde_json alone stops at 128 levels; ADT values such as trees nest deeper).
///
/// # Errors
/// Malformed JSON, or nesting deeper than [`MAX_JSON_DEPTH`].
pub fn parse_json(text: &str) -> Result<Json, String> {
    let depth = nesting_depth(text);
    if depth > MAX_JSON_DEPTH {
        return Err(format!("JSON nested {depth} levels deep (at most {MAX_JSON_DEPTH})"));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = Json::deserialize(serde_stacker::Deserializer::new(&mut de))
        .map_err(|e| format!("malformed JSON: {e}"))?;
    de.end().map_err(|e| format!("malformed JSON: {e}"))?;
    Ok(value)
}

/// The maximum bracket nesting of JSON text, skipping strings.
fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        match (in_string, b) {
            (true, _) if escaped => escaped = false,
            (true, b'\\') => escaped = true,
            (true, b'"') => in_string = false,
            (true, _) => {}
            (false, b'"') => in_string = true,
            (false, b'[' | b'{') => {
                depth += 1;
                max = max.max(depth);
            }
            (false, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// One input: the arguments, and the gold class when the line carries one.
#[derive(Debug, Clone, PartialEq)]
pub struct InputLine {
    /// One JSON value per (unbound) parameter.
    pub args: Vec<Json>,
    /// The expected class of a classifier's output (`"label"`).
    pub label: Option<i64>,
}

impl Drop for InputLine {
    /// Drops the arguments without recursion: they may nest up to [`MAX_JSON_DEPTH`] levels.
    fn drop(&mut self) {
        self.args.drain(..).for_each(crate::json::dismantle);
    }
}

/// Reads an input line: a JSON array of arguments, or an object
/// `{"args": [...], "label": N}` (other keys are ignored).
///
/// # Errors
/// Malformed JSON or a line of another shape.
pub fn parse_input_line(text: &str) -> Result<InputLine, String> {
    parse_named_input_line(text, &[])
}

/// [`parse_input_line`], also accepting the arguments by name: an object without `"args"`
/// (and with a key besides `"label"`) whose keys name each of `params` (the parameters the
/// line fills, in order), as written or as [`crate::compiler::ir::sanitize_name`] turns them
/// into parameter names (`{"input.1": ...}` fills `%input_1`), and optionally `"label"`.
/// The arguments stay JSON trees; [`read_line`] with [`TypedArguments`] reads them into
/// values of the parameters' types while parsing.
///
/// # Errors
/// As [`parse_input_line`]; for arguments by name, a key that names no parameter or a
/// parameter without a key.
pub fn parse_named_input_line(text: &str, params: &[&str]) -> Result<InputLine, String> {
    let mut line = read_line(text, params, &JsonArguments)?;
    Ok(InputLine { args: std::mem::take(&mut line.args), label: line.label })
}

/// The index of the largest element of a tensor result (a classifier's predicted class; over
/// the flattened tensor, so `(1, C)` logits give the class). `None` for non-tensors or empty
/// tensors.
pub fn argmax(v: &Value) -> Option<usize> {
    let Value::Tensor(t) = v else { return None };
    let mut best: Option<(usize, f64)> = None;
    for i in 0..t.len() {
        let x = match t.get(i)? {
            relay_devices::Scalar::Float(f) => f,
            relay_devices::Scalar::Int(i) => i as f64,
            relay_devices::Scalar::UInt(u) => u as f64,
            relay_devices::Scalar::Bool(b) => f64::from(u8::from(b)),
        };
        if best.is_none_or(|(_, b)| x > b) {
            best = Some((i, x));
        }
    }
    best.map(|(i, _)| i)
}

/// Latency statistics over timed runs.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyStats {
    /// Number of runs.
    pub count: usize,
    /// Mean latency.
    pub mean: Duration,
    /// Median.
    pub p50: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Slowest run.
    pub max: Duration,
    /// Runs per second of summed latency.
    pub throughput: f64,
}

impl LatencyStats {
    /// Statistics of `samples`; `None` when there are none.
    pub fn new(mut samples: Vec<Duration>) -> Option<LatencyStats> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let total: Duration = samples.iter().sum();
        let n = samples.len();
        let at = |q: f64| samples[((n as f64 * q).ceil() as usize).clamp(1, n) - 1];
        Some(LatencyStats {
            count: n,
            mean: total / n as u32,
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            max: samples[n - 1],
            throughput: n as f64 / total.as_secs_f64().max(f64::MIN_POSITIVE),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_json_parses() {
        let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
        assert!(parse_json(&deep).is_ok());
        let too_deep = format!("{}1{}", "[".repeat(MAX_JSON_DEPTH + 1), "]".repeat(MAX_JSON_DEPTH + 1));
        assert!(parse_json(&too_deep).unwrap_err().contains("nested"));
        assert_eq!(nesting_depth(r#"{"a": "[[[[", "b": [1, [2]]}"#), 3);
    }

    #[test]
    fn input_lines() {
        assert_eq!(
            parse_input_line("[1, 2]").unwrap(),
            InputLine { args: vec![1.into(), 2.into()], label: None }
        );
        let l = parse_input_line(r#"{"args": [[1]], "label": 3, "note": "x"}"#).unwrap();
        assert_eq!(l.label, Some(3));
        assert!(parse_input_line(r#"{"label": 3}"#).is_err());
        assert!(parse_input_line("3").is_err());
        let named =
            parse_named_input_line(r#"{"b": 2, "input.1": 1, "label": 0}"#, &["input_1", "b"]).unwrap();
        assert_eq!((named.args.clone(), named.label), (vec![1.into(), 2.into()], Some(0)));
        let e = parse_named_input_line(r#"{"c": 2, "b": 1}"#, &["a", "b"]).unwrap_err();
        assert!(e.contains("`c` names no parameter"), "{e}");
        let e = parse_named_input_line(r#"{"b": 1}"#, &["a", "b"]).unwrap_err();
        assert!(e.contains("no argument for %a"), "{e}");
    }

    #[test]
    fn stats_and_argmax() {
        let s = LatencyStats::new((1..=10).map(Duration::from_millis).collect()).unwrap();
        assert_eq!(
            (s.p50, s.p90, s.max),
            (Duration::from_millis(5), Duration::from_millis(9), Duration::from_millis(10))
        );
        let t = crate::tensor::<f32>(vec![1, 3], vec![0.1, 2.0, -1.0]).unwrap();
        assert_eq!(argmax(&t), Some(1));
    }
}
