//! Executable files (`relay-vm compile` output) of every run golden: saving and loading
//! round-trips exactly, and a damaged file (a changed byte, a truncation, or a changed body
//! with a recomputed checksum) is an error or a valid executable, never a crash.

use proptest::prelude::*;
use relay::vm::{Executable, FormatError, LoadError};
use relay::Program;
use std::path::Path;
use std::sync::OnceLock;

/// Bytes before the body: magic (8), format version (4), body length (8).
const HEADER: usize = 20;
/// The checksum after the body.
const TRAILER: usize = 4;

/// The saved executable of every run golden, with its name.
fn saved() -> &'static [(String, Vec<u8>)] {
    static SAVED: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    SAVED.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/relay/run");
        let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.retain(|p| p.extension().is_some_and(|x| x == "relay"));
        files.sort();
        files
            .iter()
            .map(|p| {
                let text = std::fs::read_to_string(p).unwrap();
                let name = p.display().to_string();
                let program =
                    Program::builder().source(&name, &text).build().unwrap_or_else(|e| panic!("{name}: {e}"));
                (name, program.save())
            })
            .collect()
    })
}

#[test]
fn save_and_load_round_trip() {
    assert!(saved().len() >= 60);
    for (name, bytes) in saved() {
        let exe = Executable::load(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&exe.save(), bytes, "{name}: saving the loaded executable changed it");
        let program = Program::load(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(program.executable(), &exe);
    }
}

/// Loads possibly damaged bytes; if they load, the program must also bind and disassemble.
fn load_quietly(bytes: &[u8]) -> bool {
    match Program::load(bytes) {
        Ok(p) => {
            let _ = p.executable().disassemble();
            true
        }
        Err(_) => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn a_changed_byte_is_an_error(file in any::<prop::sample::Index>(), at in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let (name, bytes) = &saved()[file.index(saved().len())];
        let mut damaged = bytes.clone();
        let i = at.index(damaged.len());
        damaged[i] ^= flip;
        prop_assert!(!load_quietly(&damaged), "{name}: byte {i} ^ {flip:#x} still loads");
    }

    #[test]
    fn a_truncated_file_is_an_error(file in any::<prop::sample::Index>(), keep in any::<prop::sample::Index>()) {
        let (name, bytes) = &saved()[file.index(saved().len())];
        let n = keep.index(bytes.len());
        prop_assert!(!load_quietly(&bytes[..n]), "{name}: the first {n} bytes load");
    }

    #[test]
    fn a_changed_body_with_a_valid_checksum_never_crashes(
        file in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let (_, bytes) = &saved()[file.index(saved().len())];
        let mut damaged = bytes.clone();
        let body = HEADER..damaged.len() - TRAILER;
        for (at, value) in edits {
            let i = body.start + at.index(body.len());
            damaged[i] = value;
        }
        let crc = crc32fast::hash(&damaged[body.clone()]);
        damaged[body.end..].copy_from_slice(&crc.to_le_bytes());
        // The checksum matches, so the damage reaches the decoder and the verifier.
        let checksum_failed = matches!(
            Executable::load(&damaged),
            Err(LoadError::Format(FormatError::Checksum { .. }))
        );
        prop_assert!(!checksum_failed);
        load_quietly(&damaged);
    }
}
