//! The FPGA flow (issue #8): FPGA OpenCL toolchains compile kernels offline, so
//! `relay-vm compile FILE --emit-opencl DIR` writes every kir kernel's OpenCL C with a
//! `manifest.json`, optionally with the device binaries a runtime built from them
//! (`--binaries`, `clGetProgramInfo(CL_PROGRAM_BINARIES)`); `relay-vm run --device opencl
//! --opencl-binaries DIR` then creates the programs from those binaries
//! (`clCreateProgramWithBinary`) and builds nothing from source.
//!
//! The manifest, per kernel: its index in the executable, kir name, operator, `.cl` file,
//! binary file (or null), kir structural hash, buffers (name, role, dtype, shape; a `?`
//! dimension as its sym's name), syms, and launches (function name and global work size,
//! for kernels without syms). Equal kernels share one file.

use crate::Error;
use relay_devices::opencl::OpenClDevice;
use relay_jit::opencl_c::{opencl_launches, BUILD_OPTIONS};
use relay_jit::{opencl_source, KernelCache, OpenClKernel};
use relay_kir::{BufferRole, Extent, Kernel};
use relay_runtime::Executable;
use serde_json::{json, Value as Json};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

/// The manifest's file name in an emitted directory.
pub const MANIFEST: &str = "manifest.json";

/// What the manifest's `format` field says: bumped when its layout changes.
const FORMAT: &str = "relay-vm-opencl-1";

fn io<'a>(path: &'a Path, what: &str) -> impl Fn(std::io::Error) -> Error + 'a {
    let what = what.to_string();
    move |e| Error::Input(format!("cannot {what} {}: {e}", path.display()))
}

/// Writes the OpenCL C of every kir kernel of `exe` and `manifest.json` into `dir` (created
/// if missing); with `device`, also builds each program there and writes its binary.
/// Returns the number of distinct programs written.
///
/// # Errors
/// [`Error::Kernel`] for kir that does not decode or generate, [`Error::Device`] for a build
/// failure (with the log), [`Error::Input`] for a file that cannot be written.
pub fn emit(exe: &Executable, dir: &Path, device: Option<&Arc<OpenClDevice>>) -> Result<usize, Error> {
    std::fs::create_dir_all(dir).map_err(io(dir, "create"))?;
    let cache = KernelCache::new();
    let mut written: HashMap<u64, (String, Option<String>)> = HashMap::new();
    let mut entries = Vec::new();
    for (index, desc) in exe.kernels.iter().enumerate() {
        let Some(bytes) = &desc.kernel else { continue };
        let fail = |message: String| Error::Kernel { index, message };
        let kernel = Kernel::from_bytes(bytes).map_err(|e| fail(format!("kir payload: {e}")))?;
        let hash = kernel.structural_hash();
        let (file, binary) = match written.entry(hash) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let stem = format!("{}_{hash:016x}", kernel.name);
                let source = opencl_source(&kernel).map_err(|e| fail(e.to_string()))?;
                let cl = dir.join(format!("{stem}.cl"));
                std::fs::write(&cl, &source).map_err(io(&cl, "write"))?;
                let binary = match device {
                    Some(dev) => {
                        let compiled = OpenClKernel::compile_cached(&cache, dev, &kernel)
                            .map_err(|e| fail(format!("`{}`: {e}", kernel.name)))?;
                        let path = dir.join(format!("{stem}.bin"));
                        std::fs::write(&path, compiled.program().binary()?).map_err(io(&path, "write"))?;
                        Some(format!("{stem}.bin"))
                    }
                    None => None,
                };
                e.insert((format!("{stem}.cl"), binary))
            }
        };
        entries.push(manifest_entry(index, &desc.op, &kernel, file, binary.as_deref()).map_err(fail)?);
    }
    let manifest = json!({
        "format": FORMAT,
        "build_options": BUILD_OPTIONS,
        "device": device.map(|d| format!("{} {}", d.info().id(), d.info().name)),
        "kernels": entries,
    });
    let path = dir.join(MANIFEST);
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| Error::Input(e.to_string()))?;
    std::fs::write(&path, text + "\n").map_err(io(&path, "write"))?;
    Ok(written.len())
}

fn manifest_entry(
    index: usize,
    op: &str,
    k: &Kernel,
    file: &str,
    binary: Option<&str>,
) -> Result<Json, String> {
    let extent = |e: &Extent| match e {
        Extent::Const(n) => json!(n),
        Extent::Sym(s) => json!(k.syms.get(s.index()).map_or("?", |d| d.name.as_str())),
    };
    let buffers: Vec<Json> = k
        .buffers
        .iter()
        .map(|b| {
            let role = match b.role {
                BufferRole::Input => "input",
                BufferRole::Output => "output",
                BufferRole::Temp => "temp",
            };
            json!({"name": b.name, "role": role, "dtype": b.dtype.to_string(), "shape": b.shape.iter().map(extent).collect::<Vec<_>>()})
        })
        .collect();
    // Work sizes are fixed only for kernels without run-time sizes.
    let launches = if k.syms.is_empty() {
        let ls = opencl_launches(k, &[]).map_err(|e| e.to_string())?;
        json!(ls.into_iter().map(|(f, g)| json!({"function": f, "global": g})).collect::<Vec<_>>())
    } else {
        Json::Null
    };
    Ok(json!({
        "index": index,
        "name": k.name,
        "op": op,
        "file": file,
        "binary": binary,
        "kir_hash": format!("{:016x}", k.structural_hash()),
        "buffers": buffers,
        "syms": k.syms.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
        "launches": launches,
    }))
}

/// Loads every program binary listed in `dir`'s manifest into `device`'s program cache and
/// makes the device refuse to build any other program, so that binding an executable whose
/// kernels are not exactly those of `dir` fails (with [`Error::Kernel`]) instead of
/// compiling from source. Returns the number of binaries loaded.
///
/// # Errors
/// [`Error::Input`] for a missing or malformed manifest or file, a manifest of another
/// format or build options, or one without binaries; [`Error::Device`] for a binary the
/// device rejects.
pub fn load_binaries(device: &OpenClDevice, dir: &Path) -> Result<usize, Error> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).map_err(io(&path, "read"))?;
    let bad = |m: &str| Error::Input(format!("{}: {m}", path.display()));
    let manifest: Json = serde_json::from_str(&text).map_err(|e| bad(&e.to_string()))?;
    if manifest["format"] != FORMAT {
        return Err(bad(&format!("not a `{FORMAT}` manifest")));
    }
    if manifest["build_options"] != BUILD_OPTIONS {
        return Err(bad("built with other OpenCL build options"));
    }
    let kernels = manifest["kernels"].as_array().ok_or_else(|| bad("no `kernels` list"))?;
    let mut loaded: HashSet<&str> = HashSet::new();
    for k in kernels {
        let (Some(file), Some(binary)) = (k["file"].as_str(), k["binary"].as_str()) else {
            return Err(bad("a kernel without a binary (emit with `--binaries`)"));
        };
        if !loaded.insert(binary) {
            continue;
        }
        let (cl, bin) = (dir.join(file), dir.join(binary));
        let source = std::fs::read_to_string(&cl).map_err(io(&cl, "read"))?;
        let bytes = std::fs::read(&bin).map_err(io(&bin, "read"))?;
        device.load_binary(&source, BUILD_OPTIONS, &bytes)?;
    }
    device.require_prebuilt();
    Ok(loaded.len())
}
