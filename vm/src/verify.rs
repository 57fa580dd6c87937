//! The bytecode verifier: run on every loaded executable so that a corrupt or hostile file
//! is rejected up front instead of misbehaving in the interpreter.

use crate::executable::Executable;
use crate::isa::Instr;
use crate::operand::VerifyCtx;

/// Why an executable was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid bytecode in `{function}` at {pc}: {message}")]
pub struct VerifyError {
    /// The function's name.
    pub function: String,
    /// The instruction's index.
    pub pc: usize,
    /// What is wrong.
    pub message: String,
}

/// Checks register bounds, jump targets, function/kernel/constant/string indices, call
/// arities, and that control cannot fall off the end of a function.
///
/// # Errors
/// The first problem found.
pub fn verify(exe: &Executable) -> Result<(), VerifyError> {
    for f in &exe.functions {
        let err = |pc: usize, message: String| VerifyError { function: f.name.clone(), pc, message };
        if f.num_params() > f.num_regs {
            return Err(err(0, format!("{} parameters but only {} registers", f.num_params(), f.num_regs)));
        }
        if f.param_types.len() != f.param_names.len() {
            return Err(err(0, "parameter names and types differ in number".into()));
        }
        let ctx = VerifyCtx {
            num_regs: f.num_regs,
            code_len: f.code.len() as u32,
            num_funcs: exe.functions.len() as u32,
            num_kernels: exe.kernels.len() as u32,
            num_consts: exe.constants.len() as u32,
            num_strings: exe.strings.len() as u32,
        };
        match f.code.last() {
            None => return Err(err(0, "empty function".into())),
            Some(last) if last.falls_through() => {
                return Err(err(f.code.len() - 1, "control falls off the end of the function".into()))
            }
            Some(_) => {}
        }
        for (pc, ins) in f.code.iter().enumerate() {
            ins.verify_operands(&ctx).map_err(|m| err(pc, m))?;
            check_arity(exe, ins).map_err(|m| err(pc, m))?;
        }
    }
    Ok(())
}

fn check_arity(exe: &Executable, ins: &Instr) -> Result<(), String> {
    // Operands were verified first, so the indices are in range.
    let params = |f: u32| exe.functions.get(f as usize).map_or(0, |f| f.num_params() as usize);
    match ins {
        Instr::Invoke { func, args, .. } | Instr::TailCall { func, args } if args.len() != params(func.0) => {
            Err(format!("passes {} argument(s) to a function of {}", args.len(), params(func.0)))
        }
        Instr::AllocClosure { func, captured, .. } if captured.len() > params(func.0) => Err(format!(
            "captures {} value(s) for a function of {} parameter(s)",
            captured.len(),
            params(func.0)
        )),
        Instr::InvokePacked { kernel, inputs, outputs } => {
            let k = exe.kernels.get(kernel.0 as usize).ok_or("kernel index")?;
            if inputs.len() != k.num_inputs as usize || outputs.len() != k.num_outputs as usize {
                return Err(format!(
                    "calls kernel `{}` with {} input(s) and {} output(s); it has {} and {}",
                    k.op,
                    inputs.len(),
                    outputs.len(),
                    k.num_inputs,
                    k.num_outputs
                ));
            }
            Ok(())
        }
        Instr::SwitchTag { targets, .. } if targets.is_empty() => Err("a tag switch with no targets".into()),
        _ => Ok(()),
    }
}
