//! Batching across requests (`relay-vm run --input FILE --batch B`, DyNet's autobatching):
//! up to B inputs run together, each on its own VM (a *lane*), and the calls they make of one
//! fused kernel with the same weights become one call of the kernel's batched form
//! ([`relay_kir::batched`]) over their stacked rows, so the weights are read once for all.
//!
//! The schedule is DyNet's agenda: every lane runs until it pauses before a call of a
//! batchable kernel ([`Vm::start_lane`]) or finishes; the paused calls are grouped by kernel
//! and by the identity of their shared inputs (the very same weight tensors); the largest
//! group runs as one batched call: its longest-paused lanes, as many as the largest power of
//! two that fits (each size a kernel compiled on first use), while the rest stay paused and
//! join a later group of the same call rather than running as smaller calls now (a group of
//! 13 runs 8 now; splitting it 8 + 4 + 1 made more calls, the last of one row, which reads
//! the weights for one request). Each lane of the call resumes with its share of the results
//! ([`Vm::resume_lane`]); a lane that finishes takes the next input. Each lane computes what
//! running its input alone computes (a batched kernel is the original per request, and the
//! JIT's `gemm` computes a row independently of the others), so results equal `--batch 1`'s.

use crate::program::Program;
use crate::typed;
use crate::vm::{CancelHandle, Limits, PackedFunc, Step, Value, Vm};
use crate::Error;
use relay_devices::{DType, Tensor};
use relay_jit::{CpuBackend, KernelBackend};
use relay_kir::{batched, per_request_inputs, BufferRole, Extent, Kernel};
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A kernel with batched forms.
struct Form {
    /// The kernel of one request.
    kernel: Kernel,
    /// Per input: whether it is per request (stacked) rather than shared.
    per_request: Vec<bool>,
    /// Per output: dtype and shape for one request.
    outputs: Vec<(DType, Vec<usize>)>,
    /// The compiled batched forms, by number of requests.
    sizes: HashMap<usize, Variant>,
}

/// A batched form for one number of requests, with the buffers of its calls, kept from one
/// call to the next (the kernels' shapes are static, so each call fills the same shapes).
struct Variant {
    kernel: Arc<dyn PackedFunc>,
    /// Per input: the stacked per-request inputs; `None` for a shared one.
    stacked: Vec<Option<Tensor>>,
    /// The stacked outputs, which the kernel overwrites whole.
    outs: Vec<Tensor>,
}

/// The batched forms of a program's kernels and the agenda that uses them.
pub struct Batcher<'p> {
    program: &'p Program,
    /// Per kernel of the table: whether lanes pause at its calls (it has batched forms).
    pause: Vec<bool>,
    forms: Vec<Option<Form>>,
    cpu: CpuBackend,
    /// The lanes of the group to run next (reused from round to round).
    group: Vec<usize>,
    /// Per group of this round: its first lane and how many lanes it has (reused).
    counts: Vec<(usize, usize)>,
    /// Rounds of the agenda run so far (each runs one batched call).
    round: u64,
}

/// A lane paused before a kernel call.
struct Paused {
    /// The caller's tag of the input the lane runs, and when it started.
    input: (usize, Instant),
    kernel: u32,
    inputs: Vec<Arc<Tensor>>,
    /// The round of the agenda in which the lane paused here.
    since: u64,
}

impl<'p> Batcher<'p> {
    /// Finds the kernels of `program` that have batched forms: JIT kernels without `?`
    /// dimensions whose every `gemm` multiplies per-request rows by a shared matrix.
    ///
    /// # Errors
    /// [`Error::Input`] when the program's kernels run on an OpenCL device (batching is for
    /// the host), [`Error::Compile`]-like failures of the JIT as [`Error::Input`].
    pub fn new(program: &'p Program) -> Result<Batcher<'p>, Error> {
        if program.device().is_opencl() {
            return Err(Error::Input("--batch runs on the host only, not with --device opencl".into()));
        }
        let forms: Vec<Option<Form>> = program
            .executable()
            .kernels
            .iter()
            .map(|desc| {
                let kernel = Kernel::from_bytes_with(desc.kernel.as_deref()?, &Limits::default()).ok()?;
                batched(&kernel, 2).ok()?;
                let outputs = kernel
                    .buffers_with_role(BufferRole::Output)
                    .map(|b| {
                        let decl = &kernel.buffers[b.index()];
                        let shape = decl.shape.iter().map(|e| match e {
                            Extent::Const(c) => usize::try_from(*c).ok(),
                            Extent::Sym(_) => None,
                        });
                        Some((decl.dtype, shape.collect::<Option<Vec<usize>>>()?))
                    })
                    .collect::<Option<Vec<_>>>()?;
                let per_request = per_request_inputs(&kernel);
                Some(Form { kernel, per_request, outputs, sizes: HashMap::default() })
            })
            .collect();
        let pause = forms.iter().map(Option::is_some).collect();
        let cpu = CpuBackend::new().map_err(|e| Error::Input(e.to_string()))?;
        Ok(Batcher { program, pause, forms, cpu, group: vec![], counts: vec![], round: 0 })
    }

    /// How many of the program's kernels have batched forms.
    pub fn batchable_kernels(&self) -> usize {
        self.pause.iter().filter(|&&p| p).count()
    }

    /// Runs function `name` on each input `next` gives (`(tag, arguments)`) with the inputs
    /// of up to `lanes.len()` at a time batched together, and calls `done` with each tag,
    /// result and latency (from taking the input to its result) as the input finishes (not in
    /// input order). Stops taking inputs once `done` returns `false`.
    ///
    /// # Errors
    /// An unknown function. A failing input (bad arguments or a trap) is its `done` result.
    pub fn run(
        &mut self,
        lanes: &mut [Vm<'p>],
        name: &str,
        mut next: impl FnMut() -> Option<(usize, Vec<Value>)>,
        mut done: impl FnMut(usize, Result<Value, Error>, Duration) -> bool,
    ) -> Result<(), Error> {
        let f = self.program.function(name)?;
        let mut paused: Vec<Option<Paused>> = (0..lanes.len()).map(|_| None).collect();
        let mut idle: Vec<usize> = (0..lanes.len()).rev().collect();
        let mut taking = true;
        loop {
            // Fill the idle lanes; a lane whose input finishes at once takes the next.
            while taking {
                let Some(&l) = idle.last() else { break };
                let Some((tag, args)) = next() else { break };
                let start = Instant::now();
                let step = typed::check_arguments(self.program.executable(), f, &args)
                    .and_then(|()| lanes[l].start_lane(&f.name, args, &self.pause).map_err(Error::from));
                if let Some(p) = self.settle(&mut lanes[l], (tag, start), step, &mut done, &mut taking) {
                    paused[l] = Some(p);
                    idle.pop();
                }
            }
            let mut group = std::mem::take(&mut self.group);
            largest_group(&paused, &self.forms, &mut self.counts, &mut group);
            let Some(&first) = group.first() else { return Ok(()) };
            let kernel = paused[first].as_ref().map_or(0, |p| p.kernel);
            // The longest-paused lanes of the group, as many as the largest batched size that
            // fits; the others stay paused and join a later group of the same call.
            group.sort_by_key(|&l| paused[l].as_ref().map_or(0, |p| p.since));
            let n = 1 << group.len().ilog2();
            self.round += 1;
            let chunk = &group[..n];
            let ran = self.call(kernel, &paused, chunk, lanes[chunk[0]].cancel_handle());
            for (block, &l) in chunk.iter().enumerate() {
                let Some(p) = paused[l].take() else { continue };
                let step = match &ran {
                    Ok(true) => {
                        let outs =
                            self.form(kernel).and_then(|f| f.sizes.get(&n)).map_or(&[][..], |s| &s.outs);
                        let share = Share { outs, block, form: self.form(kernel) };
                        lanes[l].resume_lane(&share, &self.pause).map_err(Error::from)
                    }
                    Ok(false) => match self.program.kernel_table().get(kernel as usize) {
                        Some(k) => lanes[l].resume_lane(k.as_ref(), &self.pause).map_err(Error::from),
                        None => Err(Error::Input(format!("kernel #{kernel} does not exist"))),
                    },
                    Err(e) => Err(Error::Input(e.clone())),
                };
                match self.settle(&mut lanes[l], p.input, step, &mut done, &mut taking) {
                    Some(p) => paused[l] = Some(p),
                    None => idle.push(l),
                }
            }
            self.group = group;
        }
    }

    fn form(&self, kernel: u32) -> Option<&Form> {
        self.forms.get(kernel as usize).and_then(Option::as_ref)
    }

    /// A lane's step: its pause, or its result handed to `done`.
    fn settle(
        &self,
        vm: &mut Vm<'p>,
        input: (usize, Instant),
        step: Result<Step, Error>,
        done: &mut impl FnMut(usize, Result<Value, Error>, Duration) -> bool,
        taking: &mut bool,
    ) -> Option<Paused> {
        let result = match step {
            Ok(Step::Paused { kernel }) => match vm.paused_inputs() {
                Ok(inputs) => return Some(Paused { input, kernel, inputs, since: self.round }),
                Err(e) => Err(Error::Input(e)),
            },
            Ok(Step::Done(v)) => Ok(v),
            Err(e) => Err(e),
        };
        if !done(input.0, result, input.1.elapsed()) {
            *taking = false;
        }
        None
    }

    /// Runs the paused calls of `kernel` of the lanes `chunk` as one batched call, leaving the
    /// outputs of all, stacked, in its form's buffers for `chunk.len()` requests; `false`
    /// (nothing run) for a single call, which runs on the table's kernel.
    fn call(
        &mut self,
        kernel: u32,
        paused: &[Option<Paused>],
        chunk: &[usize],
        cancel: &CancelHandle,
    ) -> Result<bool, String> {
        let n = chunk.len();
        let calls = || chunk.iter().filter_map(|&l| paused[l].as_ref());
        let Some(form) = self.forms.get_mut(kernel as usize).and_then(Option::as_mut) else {
            return Ok(false);
        };
        let Some(first) = calls().next().map(|p| &p.inputs) else { return Ok(false) };
        if n < 2 {
            return Ok(false);
        }
        let sized = match form.sizes.entry(n) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let k = batched(&form.kernel, n as i64).map_err(|e| e.to_string())?;
                let kernel = self.cpu.compile(&k).map_err(|e| format!("`{}`: {e}", k.name))?;
                let mut stacked = Vec::with_capacity(form.per_request.len());
                for (input, &per_request) in first.iter().zip(&form.per_request) {
                    stacked.push(if per_request { Some(stacked_buffer(input, n)?) } else { None });
                }
                let ins: Vec<&Tensor> =
                    stacked.iter().zip(first).map(|(s, shared)| s.as_ref().unwrap_or(shared)).collect();
                let outs = kernel
                    .output_types(&ins)?
                    .into_iter()
                    .map(|(dtype, shape)| Tensor::zeros(dtype, shape).map_err(|e| e.to_string()))
                    .collect::<Result<Vec<_>, _>>()?;
                e.insert(Variant { kernel, stacked, outs })
            }
        };
        for (j, buffer) in sized.stacked.iter_mut().enumerate() {
            if let Some(buffer) = buffer {
                stack(calls().map(|c| &*c.inputs[j]), buffer)?;
            }
        }
        let ins: Vec<&Tensor> =
            sized.stacked.iter().zip(first).map(|(s, shared)| s.as_ref().unwrap_or(shared)).collect();
        let handles: Vec<Option<&Arc<Tensor>>> =
            sized.stacked.iter().zip(first).map(|(s, shared)| s.is_none().then_some(shared)).collect();
        sized.kernel.run_shared(&ins, &handles, &mut sized.outs, cancel)?;
        Ok(true)
    }
}

/// Into `group`, the lanes (in lane order) of the largest group of paused calls that may run
/// together: same kernel, same shared inputs (by identity); ties go to the group whose first
/// lane comes first; empty when nothing is paused. `counts` is scratch.
fn largest_group(
    paused: &[Option<Paused>],
    forms: &[Option<Form>],
    counts: &mut Vec<(usize, usize)>,
    group: &mut Vec<usize>,
) {
    counts.clear();
    group.clear();
    for (l, p) in paused.iter().enumerate() {
        let Some(p) = p else { continue };
        let joins = counts
            .iter_mut()
            .find(|(first, _)| paused[*first].as_ref().is_some_and(|q| together(p, q, forms)));
        match joins {
            Some((_, count)) => *count += 1,
            None => counts.push((l, 1)),
        }
    }
    let Some(&(first, _)) = counts.iter().rev().max_by_key(|(_, count)| *count) else { return };
    group.extend((first..paused.len()).filter(|&l| {
        l == first
            || paused[l].as_ref().zip(paused[first].as_ref()).is_some_and(|(p, q)| together(p, q, forms))
    }));
}

/// Whether two paused calls may run as one: the same batchable kernel, and the very same
/// tensors for its shared inputs.
fn together(p: &Paused, q: &Paused, forms: &[Option<Form>]) -> bool {
    let Some(form) = forms.get(p.kernel as usize).and_then(Option::as_ref) else { return false };
    p.kernel == q.kernel
        && p.inputs.len() == q.inputs.len()
        && p.inputs
            .iter()
            .zip(&q.inputs)
            .zip(&form.per_request)
            .all(|((a, b), &per_request)| per_request || Arc::ptr_eq(a, b))
}

/// A tensor for `n` requests' blocks of `one`, shaped as [`relay_kir::batched`] declares a
/// stacked input: `[n, rest...]` for `one` of shape `[1, rest...]`, else `[n, shape...]`.
fn stacked_buffer(one: &Tensor, n: usize) -> Result<Tensor, String> {
    let rest = match one.shape() {
        [1, rest @ ..] => rest,
        shape => shape,
    };
    let shape = std::iter::once(n).chain(rest.iter().copied()).collect();
    Tensor::zeros(one.dtype(), shape).map_err(|e| e.to_string())
}

/// Copies `parts` end to end into `out` (made by [`stacked_buffer`] for as many parts).
fn stack<'t>(parts: impl Iterator<Item = &'t Tensor>, out: &mut Tensor) -> Result<(), String> {
    let block = out.len() / out.shape().first().copied().unwrap_or(1).max(1);
    let mut at = 0;
    for p in parts {
        if p.dtype() != out.dtype() || p.len() != block || at + block > out.len() {
            return Err("stacked requests' inputs differ in shape or dtype".into());
        }
        copy_block(p, 0, out, at, block);
        at += block;
    }
    Ok(())
}

/// Copies `len` elements of `src` from `from` into `dst` at `to` (same dtype).
fn copy_block(src: &Tensor, from: usize, dst: &mut Tensor, to: usize, len: usize) {
    if let (Ok(s), Ok(d)) = (src.as_slice::<f32>(), dst.as_mut_slice::<f32>()) {
        d[to..to + len].copy_from_slice(&s[from..from + len]);
        return;
    }
    for i in 0..len {
        if let Some(v) = src.get(from + i) {
            dst.set(to + i, v);
        }
    }
}

/// One lane's share of a batched call: block `block` of each stacked output, as the kernel
/// the lane's paused call runs.
struct Share<'a> {
    outs: &'a [Tensor],
    block: usize,
    form: Option<&'a Form>,
}

impl PackedFunc for Share<'_> {
    fn output_types(&self, _: &[&Tensor]) -> Result<Vec<(DType, Vec<usize>)>, String> {
        Ok(self.form.map(|f| f.outputs.clone()).unwrap_or_default())
    }

    fn run(&self, _: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), String> {
        for (out, stacked) in outputs.iter_mut().zip(self.outs) {
            let len = out.len();
            if stacked.len() < (self.block + 1) * len || stacked.dtype() != out.dtype() {
                return Err("a batched output does not fit its requests".into());
            }
            copy_block(stacked, self.block * len, out, 0, len);
        }
        Ok(())
    }
}
