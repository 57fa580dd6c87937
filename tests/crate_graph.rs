//! The crate dependency direction of ARCHITECTURE.md §2: `devices` depends on no workspace
//! crate, `vm` only on `devices`, `kir` only on `vm` and `devices` (never on the Relay front
//! end), the JIT on `kir` and `vm` (its backends return the VM's `PackedFunc`) and not on the
//! compiler, only the root depends on `stdlib`, `jit` and the ONNX importer, and the Python
//! package only on the root. Also: the Python package alone resolves the same dependency features
//! as the workspace's test build, so that building it compiles no dependency again.

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

/// Each package's enabled features, per side (`host` for build scripts' dependencies, which
/// resolver 2 resolves apart), as `cargo tree` prints them for `args`.
fn resolved_features(args: &[&str]) -> BTreeMap<(String, bool), BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "--offline", "--locked", "-f", "{p} [{f}]"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("cargo tree prints UTF-8");
    let mut features: BTreeMap<(String, bool), BTreeSet<String>> = BTreeMap::new();
    // The `[build-dependencies]`/`[dev-dependencies]` headers open: (their indent, host?).
    let mut sections: Vec<(usize, bool)> = vec![];
    for line in text.lines() {
        let rest = line.trim_start_matches(['│', '├', '└', '─', ' ']);
        let indent = line.chars().count() - rest.chars().count();
        // A header's entries are indented past it; a line at or left of it closes it.
        while sections.last().is_some_and(|&(at, _)| at >= indent) {
            sections.pop();
        }
        if rest.starts_with("[build-dependencies]") || rest.starts_with("[dev-dependencies]") {
            sections.push((indent, rest.starts_with("[build")));
            continue;
        }
        let host = sections.iter().any(|&(_, host)| host);
        // `name vX.Y.Z [(path)] [features] [(*)]`.
        let (Some(open), Some(close)) = (rest.rfind(" ["), rest.rfind(']')) else { continue };
        let package = rest[..open].split_whitespace().take(2).collect::<Vec<_>>().join(" ");
        let enabled = rest[open + 2..close].split(',').filter(|f| !f.is_empty()).map(str::to_string);
        features.entry((package, host)).or_default().extend(enabled);
    }
    features
}

/// `maturin develop` (CI, `pip install ./python`) builds the Python package alone, and Cargo
/// resolves features for the packages a command builds: where a dependency's features differ
/// from `cargo test --workspace`'s, that dependency and every crate above it compile a second
/// time (a difference in `libc` recompiled Cranelift and the whole workspace, ~10 minutes of CI).
/// `python/Cargo.toml`'s workspace-hack dependencies keep them equal; only the root's own
/// `cli` feature (the command-line tool, which the package leaves out) may differ.
#[test]
fn the_python_package_builds_with_the_workspace_features() {
    let workspace = resolved_features(&["--workspace", "-e", "normal,build,dev"]);
    let python = resolved_features(&["-p", "relay-python", "-e", "normal,build"]);
    let differ: Vec<String> = python
        .iter()
        .filter(|((package, _), _)| !package.starts_with("relay "))
        .filter_map(|(key, enabled)| {
            let all = workspace.get(key)?;
            (all != enabled).then(|| {
                format!(
                    "{} ({}): workspace {all:?}, python {enabled:?}",
                    key.0,
                    if key.1 { "host" } else { "target" }
                )
            })
        })
        .collect();
    assert!(
        differ.is_empty(),
        "add these features to python/Cargo.toml's workspace hack:\n{}",
        differ.join("\n")
    );
}
