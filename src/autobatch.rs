//! Batching across requests (`relay-vm run --input FILE --batch B`, DyNet's autobatching):
//! up to B inputs run together, each on its own VM (a *lane*), and the calls they make of one
//! fused kernel with the same weights become one call of the kernel's batched form
//! ([`relay_kir::batched`]) over their stacked rows, so the weights are read once for all.
//!
//! The schedule is DyNet's agenda: every lane runs until it pauses before a call of a
//! batchable kernel ([`Vm::start_lane`]) or finishes; a paused call joins the group of
//! paused calls of the same kernel with the very same shared inputs (weight tensors), kept
//! as the lanes pause rather than found again each round; the largest group runs as one
//! batched call: its longest-paused lanes, as many as the largest size of the form 2^k or
//! 3·2^k that fits (each size a kernel compiled on first use), while the rest stay paused
//! and join a later call of the group rather than running as smaller calls now (a group of
//! 13 runs 12 now; splitting it 8 + 4 + 1 made more calls, the last of one row, which reads
//! the weights for one request). Each lane of the call, and only those, resumes with its share of the
//! results ([`Vm::resume_lane`]); a lane that finishes takes the next input. Each lane computes what
//! running its input alone computes (a batched kernel is the original per request, and the
//! JIT's `gemm` computes a row independently of the others), so results equal `--batch 1`'s.

mod group_sizes;

use crate::program::Program;
use crate::typed;
use crate::vm::{CancelHandle, Limits, PackedFunc, Step, Value, Vm};
use crate::Error;
pub use group_sizes::GroupSizes;
use relay_devices::{DType, Element, Tensor};
use relay_jit::{CpuBackend, KernelBackend};
use relay_kir::{batched, per_request_inputs, BufferRole, Extent, Kernel};
use rustc_hash::FxHashMap as HashMap;
use std::cmp::Reverse;
use std::collections::VecDeque;
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
    agenda: Agenda,
    sizes: GroupSizes,
}

/// The paused calls, grouped as they pause; the lanes' state and scratch kept from one run
/// of [`Batcher::run`] to the next.
#[derive(Default)]
struct Agenda {
    lanes: Vec<Lane>,
    /// The groups of paused calls that may run as one, oldest first.
    groups: Vec<Group>,
    /// Member lists of emptied groups, for new groups (no allocation per group).
    spare: Vec<VecDeque<usize>>,
    /// The lanes of the call being run.
    chunk: Vec<usize>,
}

/// One lane's input and paused call.
struct Lane {
    /// The caller's tag of the input the lane runs, and when it started.
    input: (usize, Instant),
    /// The inputs of the call the lane is paused at (empty while it is not paused).
    inputs: Vec<Arc<Tensor>>,
}

/// Paused calls of one kernel with the same shared inputs.
struct Group {
    kernel: u32,
    /// The paused lanes, in the order they paused (longest-paused first); never empty.
    members: VecDeque<usize>,
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
        Ok(Batcher { program, pause, forms, cpu, agenda: Agenda::default(), sizes: GroupSizes::default() })
    }

    /// How many of the program's kernels have batched forms.
    pub fn batchable_kernels(&self) -> usize {
        self.pause.iter().filter(|&&p| p).count()
    }

    /// The calls of batchable kernels made since the last take, by how many lanes ran
    /// together; counting starts again from zero.
    pub fn take_group_sizes(&mut self) -> GroupSizes {
        std::mem::take(&mut self.sizes)
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
        let agenda = &mut self.agenda;
        agenda.groups.clear();
        agenda.lanes.resize_with(lanes.len(), || Lane { input: (0, Instant::now()), inputs: vec![] });
        let mut idle: Vec<usize> = (0..lanes.len()).rev().collect();
        let mut taking = true;
        loop {
            // Fill the idle lanes; a lane whose input finishes at once takes the next.
            while taking {
                let Some(&l) = idle.last() else { break };
                let Some((tag, args)) = next() else { break };
                self.agenda.lanes[l].input = (tag, Instant::now());
                let step = typed::check_arguments(self.program.executable(), f, &args)
                    .and_then(|()| lanes[l].start_lane(&f.name, args, &self.pause).map_err(Error::from));
                if self.settle(&mut lanes[l], l, step, &mut done, &mut taking) {
                    idle.pop();
                }
            }
            let Some((kernel, n)) = self.agenda.next_call() else { return Ok(()) };
            self.sizes.record(n);
            let chunk = std::mem::take(&mut self.agenda.chunk);
            let ran = self.call(kernel, &chunk, lanes[chunk[0]].cancel_handle());
            for (block, &l) in chunk.iter().enumerate() {
                // The call has read the inputs: let the resumed run recycle their buffers.
                self.agenda.lanes[l].inputs.clear();
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
                if !self.settle(&mut lanes[l], l, step, &mut done, &mut taking) {
                    idle.push(l);
                }
            }
            self.agenda.chunk = chunk;
        }
    }

    fn form(&self, kernel: u32) -> Option<&Form> {
        self.forms.get(kernel as usize).and_then(Option::as_ref)
    }

    /// Lane `l`'s step: its pause, entered in the agenda (`true`), or its result handed to
    /// `done` (`false`).
    fn settle(
        &mut self,
        vm: &mut Vm<'p>,
        l: usize,
        step: Result<Step, Error>,
        done: &mut impl FnMut(usize, Result<Value, Error>, Duration) -> bool,
        taking: &mut bool,
    ) -> bool {
        let lane = &mut self.agenda.lanes[l];
        let result = match step {
            Ok(Step::Paused { kernel }) => match vm.paused_inputs(&mut lane.inputs) {
                Ok(()) => {
                    self.agenda.join(l, kernel, &self.forms);
                    return true;
                }
                Err(e) => Err(Error::Input(e)),
            },
            Ok(Step::Done(v)) => Ok(v),
            Err(e) => Err(e),
        };
        lane.inputs.clear();
        if !done(lane.input.0, result, lane.input.1.elapsed()) {
            *taking = false;
        }
        false
    }

    /// Runs the paused calls of `kernel` of the lanes `chunk` as one batched call, leaving the
    /// outputs of all, stacked, in its form's buffers for `chunk.len()` requests; `false`
    /// (nothing run) for a single call, which runs on the table's kernel.
    fn call(&mut self, kernel: u32, chunk: &[usize], cancel: &CancelHandle) -> Result<bool, String> {
        let n = chunk.len();
        let lanes = &self.agenda.lanes;
        let calls = || chunk.iter().filter_map(|&l| lanes.get(l)).map(|lane| &lane.inputs);
        let Some(form) = self.forms.get_mut(kernel as usize).and_then(Option::as_mut) else {
            return Ok(false);
        };
        let Some(first) = calls().next() else { return Ok(false) };
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
                stack(calls().filter_map(|inputs| inputs.get(j)).map(|t| &**t), buffer)?;
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

impl Agenda {
    /// Enters lane `l`'s paused call of `kernel` (its inputs read into the lane) in the group
    /// it may run with, or a new group.
    fn join(&mut self, l: usize, kernel: u32, forms: &[Option<Form>]) {
        let lanes = &self.lanes;
        let joins = self.groups.iter_mut().find(|g| {
            g.kernel == kernel
                && g.members
                    .front()
                    .is_some_and(|&m| together(kernel, &lanes[l].inputs, &lanes[m].inputs, forms))
        });
        match joins {
            Some(g) => g.members.push_back(l),
            None => {
                let mut members = self.spare.pop().unwrap_or_default();
                members.push_back(l);
                self.groups.push(Group { kernel, members });
            }
        }
    }

    /// Takes the call to run next into `chunk`: of the largest group (of equals, the one with
    /// the lowest lane), its longest-paused lanes, [`call_size`] of them; its kernel and
    /// number of lanes, or `None` when nothing is paused. With the lowest lane first, a lane
    /// whose calls all run alone runs on to its end before the next lane starts, as inputs
    /// run one by one; the oldest group first interleaved CharRNN's names (each with its own
    /// weight slices, so its calls never group): 16 names' slices at once crowded the caches,
    /// for ~30% more CPU and every name's latency 16 names long.
    fn next_call(&mut self) -> Option<(u32, usize)> {
        // Lanes are in one group each, so the lowest lanes of groups differ: no ties.
        let (g, _) = self
            .groups
            .iter()
            .enumerate()
            .max_by_key(|(_, group)| (group.members.len(), Reverse(group.members.iter().min())))?;
        let group = &mut self.groups[g];
        let n = call_size(group.members.len());
        let kernel = group.kernel;
        self.chunk.clear();
        self.chunk.extend(group.members.drain(..n));
        if group.members.is_empty() {
            let emptied = self.groups.remove(g);
            self.spare.push(emptied.members);
        }
        Some((kernel, n))
    }
}

/// How many of `paused` (≥ 1) lanes paused at one call run now: the most that is a power of
/// two or three times one (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, ...), as each number
/// is a batched kernel compiled on first use. Such sizes run more than two thirds of the
/// group (powers of two alone, half); the products' blocks of up to six rows
/// (`relay_jit`'s packed panels) cover 6, 12, 24 and 48 rows with whole blocks.
fn call_size(paused: usize) -> usize {
    let power = 1usize << paused.max(1).ilog2();
    if power >= 2 && paused >= power / 2 * 3 {
        power / 2 * 3
    } else {
        power
    }
}

/// Whether two paused calls of `kernel` with inputs `a` and `b` may run as one: a batchable
/// kernel, and the very same tensors for its shared inputs.
fn together(kernel: u32, a: &[Arc<Tensor>], b: &[Arc<Tensor>], forms: &[Option<Form>]) -> bool {
    let Some(form) = forms.get(kernel as usize).and_then(Option::as_ref) else { return false };
    a.len() == b.len()
        && a.iter()
            .zip(b)
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

/// Copies `len` elements of `src` from `from` into `dst` at `to` (same dtype): a slice copy
/// for the dtypes batched kernels take (float32 states, int32 word ids), else by element.
fn copy_block(src: &Tensor, from: usize, dst: &mut Tensor, to: usize, len: usize) {
    fn typed<T: Element>(src: &Tensor, from: usize, dst: &mut Tensor, to: usize, len: usize) -> bool {
        match (src.as_slice::<T>(), dst.as_mut_slice::<T>()) {
            (Ok(s), Ok(d)) => match (s.get(from..from + len), d.get_mut(to..to + len)) {
                (Some(s), Some(d)) => {
                    d.copy_from_slice(s);
                    true
                }
                _ => false,
            },
            _ => false,
        }
    }
    let copied = match src.dtype() {
        DType::F32 => typed::<f32>(src, from, dst, to, len),
        DType::I32 => typed::<i32>(src, from, dst, to, len),
        _ => false,
    };
    if !copied {
        for i in 0..len {
            if let Some(v) = src.get(from + i) {
                dst.set(to + i, v);
            }
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

#[cfg(test)]
mod tests {
    use super::call_size;

    #[test]
    fn calls_take_the_largest_compiled_size_that_fits() {
        let sizes: Vec<usize> = (1..=17).map(call_size).collect();
        assert_eq!(sizes, [1, 2, 3, 4, 4, 6, 6, 8, 8, 8, 8, 12, 12, 12, 12, 16, 16]);
        assert_eq!((call_size(0), call_size(47), call_size(48), call_size(64)), (1, 32, 48, 64));
        for paused in 1..200 {
            assert!(3 * call_size(paused) > 2 * paused, "{paused}");
        }
    }
}
