//! The crate dependency direction of ARCHITECTURE.md §2: `devices` depends on no workspace
//! crate, `vm` only on `devices`, `kir` only on `vm` and `devices` (never on the Relay front
//! end), the JIT on `kir` and `vm` (its backends return the VM's `PackedFunc`) and not on the
//! compiler, only the root depends on `stdlib`, `jit` and the ONNX importer, and the Python
//! package only on the root.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

const ALLOWED: &[(&str, &[&str])] = &[
    ("relay-devices", &[]),
    ("relay-runtime", &["relay-devices"]),
    ("relay-kir", &["relay-runtime", "relay-devices"]),
    ("relay-compiler", &["relay-kir", "relay-runtime", "relay-devices"]),
    ("relay-stdlib", &["relay-compiler", "relay-devices"]),
    ("relay-jit", &["relay-kir", "relay-runtime", "relay-devices"]),
    ("relay-onnx", &["relay-compiler", "relay-devices"]),
    (
        "relay",
        &[
            "relay-devices",
            "relay-runtime",
            "relay-kir",
            "relay-compiler",
            "relay-stdlib",
            "relay-jit",
            "relay-onnx",
        ],
    ),
    ("relay-python", &["relay"]),
];

#[test]
fn workspace_dependencies_follow_the_architecture() {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let members: BTreeSet<String> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    assert_eq!(members, allowed.keys().map(|s| s.to_string()).collect(), "workspace members changed");

    let mut violations = vec![];
    for p in meta["packages"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        for d in p["dependencies"].as_array().unwrap() {
            let dep = d["name"].as_str().unwrap();
            let is_dev = d["kind"].as_str() == Some("dev");
            if members.contains(dep) && !is_dev && !allowed[name].contains(&dep) {
                violations.push(format!("{name} -> {dep}"));
            }
        }
    }
    assert!(violations.is_empty(), "forbidden crate dependencies: {violations:?}");
}
