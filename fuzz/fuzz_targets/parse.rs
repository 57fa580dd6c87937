//! Feeds arbitrary bytes to the parser: it must return `Ok` or diagnostics whose spans lie
//! in the text, and never panic or overflow the stack.
#![no_main]

use libfuzzer_sys::fuzz_target;
use relay_compiler::syntax::parse_module;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(e) = parse_module("fuzz.relay", &text) {
        assert!(!e.diagnostics.is_empty());
        for d in &e.diagnostics {
            let spans = std::iter::once(&d.span).chain(d.labels.iter().map(|(s, _)| s));
            for s in spans {
                assert!(s.lo <= s.hi && s.hi as usize <= text.len(), "{d:?}");
                assert!(text.is_char_boundary(s.lo as usize) && text.is_char_boundary(s.hi as usize));
            }
        }
    }
});
