//! The CLI's `--opt-level` and `dump --kernels`: the same results at every level, fused
//! kernels printed as kir, and executables compiled at either level loading back.

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_relay-vm");

const PROGRAM: &str = "def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]) {
  nn.relu(add(nn.dense(%x, %w), 1f))
}
";
const ARGS: &str = "[[[1, 2, 3], [4, 5, 6]], [[1, 0, 0], [0, 1, 0], [0, 0, 1], [-1, -1, -1]]]";

fn relay_vm(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn source(dir: &std::path::Path) -> String {
    let path = dir.join("dense.relay");
    std::fs::write(&path, PROGRAM).unwrap();
    path.display().to_string()
}

#[test]
fn every_opt_level_gives_the_same_result() {
    let dir = std::env::temp_dir().join(format!("relay-fusion-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = source(&dir);
    let results: Vec<String> = ["0", "1", "2"]
        .iter()
        .map(|o| stdout(&relay_vm(&["run", &file, "--args", ARGS, "--opt-level", o])))
        .collect();
    assert_eq!(
        results[0],
        "{\"dtype\":\"float32\",\"shape\":[2,4],\"data\":[2.0,3.0,4.0,0.0,5.0,6.0,7.0,0.0]}\n"
    );
    assert!(results.iter().all(|r| *r == results[0]), "{results:?}");
    for o in ["0", "2"] {
        let exe = dir.join(format!("dense{o}.rvm")).display().to_string();
        stdout(&relay_vm(&["compile", &file, "-o", &exe, "--opt-level", o]));
        assert_eq!(stdout(&relay_vm(&["run", &exe, "--args", ARGS])), results[0]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dump_prints_fused_kernels() {
    let dir = std::env::temp_dir().join(format!("relay-fusion-dump-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = source(&dir);
    let dump = stdout(&relay_vm(&["dump", "--kernels", &file]));
    assert!(dump.starts_with("// kernel#0\nkernel fused_nn_dense_add_nn_relu("), "{dump}");
    assert_eq!(dump.matches("kernel fused_").count(), 1, "{dump}");
    assert_eq!(stdout(&relay_vm(&["dump", "--kernels", &file, "--opt-level", "0"])), "");
    let _ = std::fs::remove_dir_all(&dir);
}
