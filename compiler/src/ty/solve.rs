//! Deferred constraints: operator type relations and tuple projections, solved by a worklist
//! until nothing changes (paper §3.2; TVM `type_solver.cc`).

use super::infer::Checker;
use super::term::Term;
use super::term::Tv;
use crate::diagnostics::Diagnostic;
use crate::ir::{ExprId, ExprKind};
use crate::op::{AttrReader, OpId};

/// A constraint that waits until enough of its types are known.
pub(crate) enum Deferred {
    /// `out = relation(args)` for the operator call `call`.
    Rel { op: OpId, args: Vec<Tv>, out: Tv, call: ExprId },
    /// `out = tuple.index` for the projection `expr`.
    Proj { tuple: Tv, index: u32, out: Tv, expr: ExprId },
}

/// What trying a constraint did.
enum Step {
    Done,
    Wait,
}

impl Checker<'_> {
    /// Queues a constraint, solving it at once if its inputs are already known.
    pub(crate) fn defer(&mut self, c: Deferred) {
        if let Step::Wait = self.try_solve(&c) {
            self.deferred.push(c);
        }
    }

    /// Retries waiting constraints until a full pass makes no progress.
    pub(crate) fn solve(&mut self) {
        loop {
            let pending = std::mem::take(&mut self.deferred);
            let before = pending.len();
            for c in pending {
                if let Step::Wait = self.try_solve(&c) {
                    self.deferred.push(c);
                }
            }
            if self.deferred.len() == before {
                return;
            }
        }
    }

    /// Reports the constraints that never got enough information.
    pub(crate) fn report_unsolved(&mut self) {
        let m = self.m;
        for c in std::mem::take(&mut self.deferred) {
            let d = match c {
                Deferred::Rel { op, args, call, .. } => {
                    let shown: Vec<String> = args.iter().map(|&a| self.terms.display(m, a)).collect();
                    Diagnostic::error(
                        m.expr(call).span,
                        format!(
                            "cannot infer the result type of `{}`: its argument types are not known (`{}`)",
                            self.ops.get(op).name,
                            shown.join("`, `")
                        ),
                    )
                    .with_note("help: annotate the arguments' types")
                }
                Deferred::Proj { tuple, expr, .. } => Diagnostic::error(
                    m.expr(expr).span,
                    format!(
                        "cannot infer the type of the tuple being projected (`{}`)",
                        self.terms.display(m, tuple)
                    ),
                )
                .with_note("help: annotate the tuple's type"),
            };
            self.diags.push(d);
        }
    }

    fn try_solve(&mut self, c: &Deferred) -> Step {
        match c {
            Deferred::Rel { op, args, out, call } => self.try_relation(*op, args, *out, *call),
            Deferred::Proj { tuple, index, out, expr } => self.try_projection(*tuple, *index, *out, *expr),
        }
    }

    fn try_relation(&mut self, op: OpId, args: &[Tv], out: Tv, call: ExprId) -> Step {
        let m = self.m;
        if args.iter().any(|&a| self.terms.has_error(a)) {
            return self.fail(out);
        }
        let ExprKind::Call { attrs, .. } = &m.expr(call).kind else { return Step::Done };
        let rel_args: Vec<_> = args.iter().map(|&a| self.terms.rel_view(m, a)).collect();
        let def = self.ops.get(op);
        match (def.relation)(&rel_args, &AttrReader::new(&m.symbols, attrs)) {
            Ok(None) => Step::Wait,
            Ok(Some(t)) => {
                let t = self.terms.term_of_rel(&t);
                self.expect(t, out, m.expr(call).span, &format!("the result of `{}`", def.name));
                Step::Done
            }
            Err(msg) => {
                self.diags.push(Diagnostic::error(m.expr(call).span, format!("{}: {msg}", def.name)));
                self.fail(out)
            }
        }
    }

    fn try_projection(&mut self, tuple: Tv, index: u32, out: Tv, expr: ExprId) -> Step {
        let m = self.m;
        match self.terms.get(tuple) {
            (_, Term::Var) => Step::Wait,
            (_, Term::Error) => self.fail(out),
            (_, Term::Tuple(fields)) => match fields.get(index as usize) {
                Some(&f) => {
                    self.expect(f, out, m.expr(expr).span, "a tuple projection");
                    Step::Done
                }
                None => {
                    let shown = self.terms.display(m, tuple);
                    self.diags.push(Diagnostic::error(
                        m.expr(expr).span,
                        format!(
                            "tuple index {index} is out of range for `{shown}` ({} fields)",
                            fields.len()
                        ),
                    ));
                    self.fail(out)
                }
            },
            (t, _) => {
                let shown = self.terms.display(m, t);
                self.diags.push(Diagnostic::error(
                    m.expr(expr).span,
                    format!("projection `.{index}` needs a tuple, found `{shown}`"),
                ));
                self.fail(out)
            }
        }
    }

    /// Marks a constraint's output as already-reported so it causes no further errors.
    fn fail(&mut self, out: Tv) -> Step {
        let e = self.terms.error();
        let _ = self.terms.unify(out, e);
        Step::Done
    }
}
