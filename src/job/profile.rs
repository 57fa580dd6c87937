//! `relay-vm profile`: the inputs run on a VM whose kernels are counted
//! ([`relay::profile::KernelProfile`]) and whose instructions are counted and timed by class
//! ([`relay::vm::InstrProfile`]), and two tables of where the time went, most first.

use super::{Engine, Inputs, Job, Passes};
use crate::{write_stdout, Failure, Format};
use relay::profile::KernelProfile;
use relay::vm::{InstrClassRow, Value};
use std::time::{Duration, Instant};

impl Job<'_> {
    /// Runs the inputs over `passes` on a profiled VM, and prints where the time went: each
    /// kernel's calls and time, then the time outside kernels, then each VM instruction
    /// class's count and self time (a kernel call's includes the kernel's).
    pub(crate) fn profile(self, inputs: Inputs, passes: Passes, format: Format) -> Result<(), Failure> {
        let Engine::Vm { program, config, .. } = &self.engine else {
            return Err(Failure::bad_input("error: profile runs the VM, not --executor interp\n"));
        };
        let mut all = Vec::with_capacity(inputs.items.len());
        for (what, text) in &inputs.items {
            all.push(self.entry.arguments(what, text)?.1);
        }
        let profile = KernelProfile::new(program);
        let mut vm =
            profile.vm(program, config.clone()).map_err(|e| Failure::bad_input(format!("error: {e}\n")))?;
        let name = &self.entry.f.name;
        let pass = |vm: &mut relay::vm::Vm<'_>| {
            all.iter().try_for_each(|a: &Vec<Value>| program.invoke(vm, name, a.clone()).map(drop))
        };
        for _ in 0..passes.warmup {
            pass(&mut vm)?;
        }
        profile.reset();
        vm.start_instr_profile();
        let started = Instant::now();
        let mut reps = 0;
        while passes.another(reps, started, 0) {
            pass(&mut vm)?;
            reps += 1;
        }
        let total = started.elapsed();
        let rows = profile.rows();
        let classes: Vec<InstrClassRow> = vm.instr_profile().map(|p| p.rows()).unwrap_or_default();
        let in_kernels: Duration = rows.iter().map(|r| r.time).sum();
        let outside = total.saturating_sub(in_kernels);
        let runs = (all.len() * reps).max(1) as f64;
        let ms = |d: Duration| 1e3 * d.as_secs_f64();
        let share = |d: Duration| 100.0 * d.as_secs_f64() / total.as_secs_f64().max(f64::MIN_POSITIVE);
        if format == Format::Json {
            let kernels: Vec<_> = rows
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "kernel": r.index, "name": r.name, "fused": r.fused, "calls": r.calls,
                        "time_ms": ms(r.time), "percent": share(r.time),
                    })
                })
                .collect();
            let instructions: Vec<_> = classes
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "class": r.class.name(), "count": r.count, "time_ms": ms(r.time),
                        "percent": share(r.time),
                    })
                })
                .collect();
            let out = serde_json::json!({
                "function": name, "inputs": all.len(), "reps": reps,
                "total_ms": ms(total), "per_input_ms": ms(total) / runs,
                "kernels": kernels, "outside_kernels_ms": ms(outside), "outside_kernels_percent": share(outside),
                "instruction_classes": instructions,
            });
            return write_stdout(&format!("{out}\n"));
        }
        let header = |what: &str, count: &str, per: &str| {
            format!("{:>6} {:>10} {:>10} {:>8} {:>9}  {what}\n", "%", "time ms", count, "/input", per)
        };
        let mut text = format!(
            "@{name}: {} input(s) x {reps} rep(s) in {:.3} ms ({:.4} ms per input)\n{}",
            all.len(),
            ms(total),
            ms(total) / runs,
            header("kernel", "calls", "us/call")
        );
        let line = |time: Duration, count: u64, per: f64, what: &str| {
            format!(
                "{:>6.1} {:>10.3} {:>10} {:>8.1} {:>9.3}  {what}\n",
                share(time),
                ms(time),
                count,
                count as f64 / runs,
                per
            )
        };
        for r in &rows {
            let what = format!("kernel#{} {}{}", r.index, r.name, if r.fused { " (fused)" } else { "" });
            text += &line(r.time, r.calls, 1e3 * ms(r.time) / r.calls as f64, &what);
        }
        text += &format!(
            "{:>6.1} {:>10.3} {:>10} {:>8} {:>9}  outside kernels (the VM)\n\n{}",
            share(outside),
            ms(outside),
            "",
            "",
            "",
            header(
                "VM instruction class (self time; kernel call includes the kernel)",
                "executed",
                "ns/instr"
            )
        );
        for r in &classes {
            text += &line(r.time, r.count, 1e6 * ms(r.time) / r.count as f64, r.class.name());
        }
        write_stdout(&text)
    }
}
