//! `--args @FILE`: arguments from a file instead of the command line. A NumPy `.npy` file is
//! one tensor, the argument of a one-parameter function; an `.npz` archive (`np.savez`, or
//! `np.savez_compressed`) holds one tensor per parameter, keyed by parameter name; any other
//! file is read as the JSON `--args` text itself. NumPy arrays become the JSON tensor form
//! (`{"dtype", "shape", "data"}`), so they are checked against the parameter types like every
//! other argument.

use crate::{read_file, Failure};
use npyz::{NpyFile, Order};
use serde_json::{json, Value as Json};
use std::io::{Cursor, Read};
use std::path::Path;

/// The most bytes one array of an argument file may hold: its header's shape is checked
/// against this before anything is allocated, so a lying header cannot exhaust memory.
const MAX_ARRAY_BYTES: u64 = 1 << 30;

/// The `--args` text that `@path` stands for.
///
/// # Errors
/// An unreadable file, a malformed `.npy`/`.npz`, a Fortran-ordered array, a dtype relay-vm
/// has no counterpart for, or an array over [`MAX_ARRAY_BYTES`].
pub(crate) fn args_file(path: &Path) -> Result<String, Failure> {
    let bad = |m: String| Failure::bad_input(format!("error: --args @{}: {m}\n", path.display()));
    let bytes = read_file(path)?;
    match path.extension().and_then(|e| e.to_str()) {
        Some("npy") => {
            let array = tensor(&bytes).map_err(bad)?;
            Ok(Json::Array(vec![array]).to_string())
        }
        Some("npz") => {
            let mut archive = zip::ZipArchive::new(Cursor::new(&bytes[..]))
                .map_err(|e| bad(format!("not an .npz (zip) archive: {e}")))?;
            let mut args = serde_json::Map::new();
            for i in 0..archive.len() {
                let mut entry = archive.by_index(i).map_err(|e| bad(format!("entry {i}: {e}")))?;
                let Some(name) = entry.name().strip_suffix(".npy").map(str::to_string) else { continue };
                if entry.size() > MAX_ARRAY_BYTES + 4096 {
                    return Err(bad(format!(
                        "`{name}` holds {} bytes, over the limit of {MAX_ARRAY_BYTES}",
                        entry.size()
                    )));
                }
                let mut data = Vec::new();
                // `take` bounds what a lying size field can make us inflate.
                (&mut entry)
                    .take(MAX_ARRAY_BYTES + 4096)
                    .read_to_end(&mut data)
                    .map_err(|e| bad(format!("`{name}`: {e}")))?;
                let array = tensor(&data).map_err(|m| bad(format!("`{name}`: {m}")))?;
                args.insert(name, array);
            }
            Ok(Json::Object(args).to_string())
        }
        _ => String::from_utf8(bytes).map_err(|_| bad("neither .npy, .npz nor UTF-8 JSON".to_string())),
    }
}

/// One `.npy` file's array as a JSON tensor.
fn tensor(bytes: &[u8]) -> Result<Json, String> {
    let npy = NpyFile::new(bytes).map_err(|e| format!("not a .npy array: {e}"))?;
    if npy.order() == Order::Fortran {
        return Err("a Fortran-ordered array; save it C-ordered (np.ascontiguousarray)".to_string());
    }
    let shape = npy.shape().to_vec();
    let descr = npy.dtype().descr();
    let (dtype, size) =
        dtype_of(&descr).ok_or_else(|| format!("dtype {descr}, which relay-vm has no counterpart for"))?;
    let count = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
    let fits =
        count.and_then(|n| n.checked_mul(size)).filter(|&b| b <= MAX_ARRAY_BYTES && b <= bytes.len() as u64);
    if fits.is_none() {
        return Err(format!(
            "shape {shape:?} of {dtype} does not fit the file (or the limit of {MAX_ARRAY_BYTES} bytes)"
        ));
    }
    let read = |e: std::io::Error| format!("reading the data: {e}");
    let data: Vec<Json> = match dtype {
        "float32" => npy.into_vec::<f32>().map_err(read)?.into_iter().map(|x| float(f64::from(x))).collect(),
        "float64" => npy.into_vec::<f64>().map_err(read)?.into_iter().map(float).collect(),
        "int8" => ints(npy.into_vec::<i8>().map_err(read)?),
        "int16" => ints(npy.into_vec::<i16>().map_err(read)?),
        "int32" => ints(npy.into_vec::<i32>().map_err(read)?),
        "int64" => ints(npy.into_vec::<i64>().map_err(read)?),
        "uint8" => ints(npy.into_vec::<u8>().map_err(read)?),
        "uint16" => ints(npy.into_vec::<u16>().map_err(read)?),
        "uint32" => ints(npy.into_vec::<u32>().map_err(read)?),
        "uint64" => ints(npy.into_vec::<u64>().map_err(read)?),
        _ => npy.into_vec::<bool>().map_err(read)?.into_iter().map(Json::from).collect(),
    };
    Ok(json!({"dtype": dtype, "shape": shape, "data": data}))
}

/// The relay-vm dtype and element size of a little-endian (or byte-sized) NumPy type string.
fn dtype_of(descr: &str) -> Option<(&'static str, u64)> {
    let descr = descr.trim_matches('\'');
    Some(match descr {
        "<f4" => ("float32", 4),
        "<f8" => ("float64", 8),
        "|i1" => ("int8", 1),
        "<i2" => ("int16", 2),
        "<i4" => ("int32", 4),
        "<i8" => ("int64", 8),
        "|u1" => ("uint8", 1),
        "<u2" => ("uint16", 2),
        "<u4" => ("uint32", 4),
        "<u8" => ("uint64", 8),
        "|b1" => ("bool", 1),
        _ => return None,
    })
}

/// A float in the JSON tensor form: non-finite values as strings.
fn float(x: f64) -> Json {
    if x.is_finite() {
        Json::from(x)
    } else if x.is_nan() {
        Json::from("nan")
    } else {
        Json::from(if x < 0.0 { "-inf" } else { "inf" })
    }
}

/// Integers in the JSON tensor form.
fn ints<T: Into<Json>>(xs: Vec<T>) -> Vec<Json> {
    xs.into_iter().map(Into::into).collect()
}
