//! The lowering pipeline (`relay_compiler::pass::lower_for_vm`) on whole programs with the
//! prelude and the operator library: every golden program that type-checks goes through it,
//! the result has the shape the bytecode emitter expects (checked by [`check_lowered`]), and
//! deep programs go through on a 2 MiB stack.
//!
//! That passes preserve what programs compute is checked once the VM runs them (running each
//! program before and after the pipeline); here the re-inference after every pass is the
//! verifier.

use relay_compiler::ir::{ExprId, ExprKind, Function, Module};
use relay_compiler::pass::{lower_for_vm, LowerOptions, CLOSURE, PRIMITIVE};
use relay_compiler::syntax::printer::print_module;
use relay_compiler::ty::TypeMap;

mod common;

/// Parses and type-checks `text` with the prelude, then lowers it; panics with the rendered
/// diagnostics on failure.
fn lower(name: &str, text: &str) -> (Module, TypeMap) {
    let checked = relay::check(name, text).unwrap_or_else(|e| panic!("{name} does not check:\n{e}"));
    let mut module = checked.module;
    match lower_for_vm(&mut module, &relay_stdlib::op_registry(), &LowerOptions::at_level(0)) {
        Ok(types) => (module, types),
        Err(e) => panic!(
            "{name}: lowering failed:\n{}\n{}",
            e.render(&module.sources, false),
            print_module(&module, None)
        ),
    }
}

fn flag(m: &Module, f: &Function, key: &str) -> bool {
    matches!(m.attr(&f.attrs, key), Some(relay_compiler::ir::AttrValue::Int(1)))
}

/// Checks what the emitter relies on, for every global function:
/// - a `Closure=1` global's body is a non-primitive `fn` literal, whose body is in ANF; any
///   other global's body is in ANF;
/// - ANF: a `let` chain of values ending in an atom; a value is an atom, a call of atoms, a
///   tuple/projection/ref operation on atoms, an `if`/`match` on an atom with ANF branches, or
///   a `Primitive=1` `fn` literal;
/// - primitive functions have typed parameters and a body that calls one operator on them;
/// - operators are only called inside primitive functions, and a global or a constructor
///   with fields is never a value (eta expansion), only a callee;
/// - every variable bound by a `let` that the passes made (named `v<N>`) is annotated.
fn check_lowered(m: &Module) -> Result<(), String> {
    for g in &m.functions {
        let name = m.name(g.name);
        let at = |e: String| format!("@{name}: {e}");
        if flag(m, &g.func, PRIMITIVE) {
            continue;
        }
        let body = if flag(m, &g.func, CLOSURE) {
            match &m.expr(g.func.body).kind {
                ExprKind::Function(f) if !flag(m, f, PRIMITIVE) => f.body,
                _ => return Err(at("a Closure=1 global's body is not a closure literal".into())),
            }
        } else {
            g.func.body
        };
        check_chain(m, body).map_err(at)?;
    }
    Ok(())
}

/// `let %v = <value>; ...; <atom>`.
fn check_chain(m: &Module, mut e: ExprId) -> Result<(), String> {
    while let ExprKind::Let { var, value, body } = &m.expr(e).kind {
        let v = m.var(*var);
        if m.name(v.name).starts_with('v') && m.name(v.name)[1..].parse::<u32>().is_ok() && v.ty.is_none() {
            return Err(format!("`%{}` is not annotated", m.name(v.name)));
        }
        check_value(m, *value)?;
        e = *body;
    }
    check_operand(m, e)
}

/// An atom in a value position.
fn check_operand(m: &Module, e: ExprId) -> Result<(), String> {
    match &m.expr(e).kind {
        ExprKind::Global(g) => Err(format!("global @{} used as a value", m.name(*g))),
        ExprKind::Constructor(c) if m.constructor(*c).is_some_and(|c| !c.fields.is_empty()) => {
            Err(format!("constructor {} used as a value", m.name(*c)))
        }
        ExprKind::Op(o) => Err(format!("operator {} used as a value", m.name(*o))),
        k if k.is_atom() => Ok(()),
        k => Err(format!("not an atom: {k:?}")),
    }
}

fn check_value(m: &Module, e: ExprId) -> Result<(), String> {
    let atoms = |es: &[ExprId]| es.iter().try_for_each(|&a| check_operand(m, a));
    match &m.expr(e).kind {
        k if k.is_atom() => check_operand(m, e),
        ExprKind::Call { callee, args, .. } => {
            match &m.expr(*callee).kind {
                ExprKind::Op(o) => {
                    return Err(format!("operator {} called outside a primitive function", m.name(*o)))
                }
                k if !k.is_atom() => return Err(format!("callee is not an atom: {k:?}")),
                _ => {}
            }
            atoms(args)
        }
        ExprKind::Tuple(fields) => atoms(fields),
        ExprKind::Proj { tuple: a, .. } | ExprKind::RefNew(a) | ExprKind::RefRead(a) => check_operand(m, *a),
        ExprKind::RefWrite { cell, value } => atoms(&[*cell, *value]),
        ExprKind::If { cond, then_branch, else_branch } => {
            check_operand(m, *cond)?;
            check_chain(m, *then_branch)?;
            check_chain(m, *else_branch)
        }
        ExprKind::Match { scrutinee, arms, .. } => {
            check_operand(m, *scrutinee)?;
            arms.iter().try_for_each(|arm| check_chain(m, arm.body))
        }
        ExprKind::Function(f) if flag(m, f, PRIMITIVE) => check_kernel(m, f),
        ExprKind::Function(_) => Err("a closure literal was not lifted".into()),
        ExprKind::Let { .. } => Err("a `let` as a bound value".into()),
        k => Err(format!("unexpected value {k:?}")),
    }
}

/// `fn (%p0: T0, ..., Primitive=1) -> R { ... }` whose body only calls operators (one call
/// on the parameters when `lower_primitives` made it; several when written fused).
fn check_kernel(m: &Module, f: &Function) -> Result<(), String> {
    if f.params.iter().any(|&p| m.var(p).ty.is_none()) || f.ret_type.is_none() {
        return Err("a primitive function is not fully annotated".into());
    }
    let mut stack = vec![f.body];
    while let Some(e) = stack.pop() {
        match &m.expr(e).kind {
            ExprKind::Call { callee, args, .. } if matches!(m.expr(*callee).kind, ExprKind::Op(_)) => {
                stack.extend(args)
            }
            ExprKind::Let { value, body, .. } => stack.extend([*value, *body]),
            ExprKind::Tuple(fields) => stack.extend(fields),
            ExprKind::Proj { tuple, .. } => stack.push(*tuple),
            k if k.is_atom() => {}
            k => {
                return Err(format!(
                    "a primitive function's body computes something other than operators: {k:?}"
                ))
            }
        }
    }
    Ok(())
}

/// Lowering a lowered module again changes nothing: each pass leaves the others' output
/// alone (closure literals, primitive functions, ANF).
fn check_fixpoint(lowered: &Module) -> Result<(), String> {
    let mut again = lowered.clone();
    lower_for_vm(&mut again, &relay_stdlib::op_registry(), &LowerOptions::at_level(0))
        .map_err(|e| e.render(&again.sources, false))?;
    let (first, second) = (print_module(lowered, None), print_module(&again, None));
    if first != second {
        return Err(format!("lowering twice changed the module:\n{second}"));
    }
    Ok(())
}

/// Lowers every file of `dir` that type-checks; returns how many did.
fn lower_all(dir: &str) -> usize {
    let mut lowered = 0;
    let mut failures = vec![];
    for path in common::relay_files(dir) {
        let name = path.display().to_string();
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let Ok(checked) = relay::check(&name, &text) else { continue };
        let mut module = checked.module;
        match lower_for_vm(&mut module, &relay_stdlib::op_registry(), &LowerOptions::at_level(0))
            .map_err(|e| e.render(&module.sources, false))
        {
            Ok(_) => match check_lowered(&module).and_then(|()| check_fixpoint(&module)) {
                Ok(()) => lowered += 1,
                Err(e) => failures.push(format!("--- {name}: {e}\n{}", print_module(&module, None))),
            },
            Err(e) => failures.push(format!("--- {name}:\n{e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    lowered
}

/// The passes registered as preserving both forms (`Form::ANormalForm` and
/// `Form::LambdaLifted`) keep a lowered program lowered: each golden typecheck program is
/// lowered at -O0, then each such pass runs on it alone.
#[test]
fn passes_keep_the_forms_they_preserve() {
    use relay_compiler::pass::{registry, run_passes, Form, PassContext, Silent};
    let ops = relay_stdlib::op_registry();
    let cx = PassContext { ops: &ops, fuse: Default::default(), inline: Default::default(), entries: &[] };
    let keeping: Vec<_> = registry::PASSES
        .iter()
        .filter(|p| [Form::ANormalForm, Form::LambdaLifted].iter().all(|f| p.preserves.contains(f)))
        .collect();
    assert!(keeping.len() >= 5);
    let mut failures = vec![];
    for path in common::relay_files("typecheck") {
        let name = path.display().to_string();
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        if relay::check(&name, &text).is_err() {
            continue;
        }
        let (lowered, _) = lower(&name, &text);
        for pass in &keeping {
            let mut m = lowered.clone();
            let outcome = run_passes(&mut m, &[*pass], &cx, &mut Silent)
                .map_err(|e| e.render(&m.sources, false))
                .and_then(|_| check_lowered(&m));
            if let Err(e) = outcome {
                failures.push(format!("--- {name} after {}: {e}\n{}", pass.name, print_module(&m, None)));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn golden_parse_programs_lower() {
    assert!(lower_all("parse") >= 75);
}

#[test]
fn golden_typecheck_programs_lower() {
    assert!(lower_all("typecheck") >= 40);
}

#[test]
fn the_prelude_lowers() {
    let (m, _) = lower("prelude_only.relay", "#[version = \"0.0.5\"]\n");
    check_lowered(&m).unwrap();
    check_fixpoint(&m).unwrap();
    // Every local function of the prelude became a closure global.
    let closures = m.functions.iter().filter(|g| flag(&m, &g.func, CLOSURE)).count();
    assert!(closures >= 5, "{}", print_module(&m, None));
}

#[test]
fn closures_over_lists_end_to_end() {
    let (m, _) = lower(
        "t.relay",
        "#[version = \"0.0.5\"]
         def @main(%xs: List[Tensor[(3), float32]], %b: Tensor[(3), float32]) {
           (@map(fn (%x: Tensor[(3), float32]) { add(%x, %b) }, %xs), @map(Some, %xs))
         }",
    );
    check_lowered(&m).unwrap();
    let text = print_module(&m, Some(relay_compiler::ir::FileId(1)));
    // The closure over `%b` and the eta-expanded `Some`, both lifted.
    assert!(text.contains("def @main_lifted_0(%b: Tensor[(3), float32], Closure=1)"), "{text}");
    assert!(
        text.contains(
            "def @main_lifted_1(Closure=1) -> fn (Tensor[(3), float32]) -> Option[Tensor[(3), float32]]"
        ),
        "{text}"
    );
    assert!(text.contains("= @main_lifted_0(%b);"), "{text}");
    assert!(text.contains("Primitive=1) -> Tensor[(3), float32] {\n      add(%p0, %p1)"), "{text}");
}

/// Runs `f` on a thread with a 2 MiB stack.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let handle = std::thread::Builder::new().stack_size(2 << 20).spawn(f).unwrap();
    handle.join().unwrap_or_else(|_| panic!("the thread panicked"))
}

#[test]
fn a_100_000_deep_let_chain_lowers_on_a_small_stack() {
    let mut text =
        String::from("#[version = \"0.0.5\"]\ndef @main(%x: float32) -> float32 {\n  let %y0 = %x;\n");
    for i in 1..100_000 {
        text.push_str(&format!("  let %y{i} = add(%y{}, 1f);\n", i - 1));
    }
    text.push_str("  %y99999\n}\n");
    let functions = on_small_stack(move || {
        let (m, _) = lower("deep.relay", &text);
        check_lowered(&m).map(|()| m.functions.len())
    });
    assert!(functions.is_ok(), "{functions:?}");
}

#[test]
fn a_10_000_element_cons_literal_lowers_on_a_small_stack() {
    let mut text = String::from("#[version = \"0.0.5\"]\ndef @main() -> List[int32] {\n");
    for i in 0..10_000 {
        text.push_str(&format!("Cons({i}, "));
    }
    text.push_str("Nil");
    text.push_str(&")".repeat(10_000));
    text.push_str("\n}\n");
    let lets = on_small_stack(move || {
        let (m, _) = lower("long.relay", &text);
        check_lowered(&m)?;
        let main = m.function_by_name("main").ok_or("no @main")?;
        let mut e = main.func.body;
        let mut lets = 0;
        while let ExprKind::Let { body, .. } = &m.expr(e).kind {
            lets += 1;
            e = *body;
        }
        Ok::<_, String>(lets)
    });
    // One binding per `Cons` cell and one for `Nil`.
    assert_eq!(lets, Ok(10_001));
}
