//! Row-wise hoisting of `take` from a constant table: `f(take(C, i, axis=0), D…)` becomes
//! `take(f(C, D…), i, axis=0)` when `C` and the other operands `D…` are constants and `f`
//! computes each row of its output from the same row of the taken operand alone; repeated
//! outward, the whole chain becomes one table, computed here, and one row lookup at run time.
//!
//! This is what makes a model's per-token work a lookup once its weights are constants
//! ([`super::bind_params`]): the Tree-LSTM's leaf,
//! `cell(bias_add(dense(expand_dims(take(%embedding, %word)), %w_iou), %b_iou), zeros)`,
//! depends on the word id alone, so each leaf becomes two lookups (its `c` and `h`) into
//! tables of one row per vocabulary word. It runs after `InlineClosures` (the cell is a
//! local function until then) and `ProjectOutputs` (`split(x).0` is a `strided_slice` by
//! then), so it sits at the end of the Relay-level pipeline rather than before
//! `FoldConstant`, and it computes its tables itself: they are far above `FoldConstant`'s
//! [`MAX_FOLDED_ELEMENTS`](super::MAX_FOLDED_ELEMENTS) cap, which keeps executables from
//! growing by what could be computed at run time — here the growth is the point, bounded by
//! [`MAX_TABLE_BYTES`] and [`MAX_TABLE_GROWTH`].
//!
//! Where a row of the output depends on the row alone (the index `i` has rank `r`; an axis
//! `a ≥ r` of the taken value is axis `a - r + 1` of the table):
//! - operators whose pattern is `ElemWise` (element `j` from element `j`), and attribute-free
//!   `Broadcast` operators, when every taken operand has the same index and the output's
//!   rank, and every constant operand broadcasts along the row's own axes only (rank at most
//!   the output's less `r`) — derived from the operator's pattern facet, no list to keep;
//! - `nn.bias_add` (bias constant, `axis ≥ r`), `nn.dense` on the data side (weight
//!   constant), `expand_dims` (`axis ≥ r`) and `strided_slice` (its axes `≥ r`): these name
//!   axes in their attributes, which move with the table's extra leading axis, so each has
//!   its rule here.
//!
//! Only an index that is a variable is hoisted over (the lookup is repeated where the value
//! is used, and a variable costs nothing to repeat). Every table is checked against the
//! shape the call's type gives before it is used.

use super::fold_constant::{let_of_value, tensor};
use super::fold_fused_constants::{constant_data, exact_in_f64};
use super::util::builder::{is_primitive, static_tensor, var_ref};
use super::util::rewrite::{rebuild, rewrite, Rewrite};
use crate::diagnostics::{CompileError, Diagnostic};
use crate::ir::{AttrValue, Attrs, ExprId, ExprKind, IdMap, Module, Symbol, VarId};
use crate::op::{AttrReader, Evaluator, OpPattern, OpRegistry};
use crate::ty::TypeMap;
use relay_devices::Tensor;
use std::borrow::Cow;
use std::cell::{Cell, OnceCell};
use std::rc::Rc;

/// The largest table the pass computes, in bytes of its dtype (each one is also held as
/// `f64` module constants until code generation, twice this).
pub const MAX_TABLE_BYTES: u64 = 64 << 20;

/// A table may hold at most this many times the elements of the constant it was taken from:
/// hoisting trades memory for work, and a chain that widens the rows a lot (an outer product)
/// is better computed per row.
pub const MAX_TABLE_GROWTH: u64 = 4;

/// The most multiply-adds one table may cost (a product counts its inner extent per output
/// element): about a second of the reference kernels.
pub const MAX_TABLE_WORK: u64 = 1 << 31;

/// Hoists row-wise operators over `take` from constant tables in every global function (see
/// the module docs). Does nothing when `ops` has no evaluator.
///
/// # Errors
/// An internal error when a table cannot be held as a module constant.
pub fn hoist_take(m: &mut Module, types: &TypeMap, ops: &OpRegistry) -> Result<(), CompileError> {
    let Some(evaluator) = ops.evaluator() else { return Ok(()) };
    for i in 0..m.functions.len() {
        let body = m.functions[i].func.body;
        let mut hoist = Hoist {
            types,
            ops,
            evaluator,
            let_of_value: let_of_value(m, body),
            rows: IdMap::new(),
            var_rows: IdMap::new(),
            var_constants: IdMap::new(),
        };
        let new = rewrite(m, body, &mut hoist)?;
        m.functions[i].func.body = hoist.materialize(m, new)?;
    }
    Ok(())
}

/// A table: a tensor computed by the pass, or a module constant already there.
struct Table {
    /// The table's elements (for an existing constant, converted when first needed).
    tensor: OnceCell<Tensor>,
    /// The module constant holding the table, once there is one.
    constant: Cell<Option<u32>>,
}

/// A value known to be `take(table, index, attrs)`.
#[derive(Clone)]
struct Row {
    table: Rc<Table>,
    /// The index variable.
    index: VarId,
    /// The index's rank `r`: the value's first `r` axes are the index's.
    index_rank: usize,
    /// The `take` operator and its attributes (`axis=0`, its `mode`).
    take: (Symbol, Attrs),
    /// The elements of the constant the chain started from (for [`MAX_TABLE_GROWTH`]).
    root_elements: u64,
}

struct Hoist<'a> {
    types: &'a TypeMap,
    ops: &'a OpRegistry,
    evaluator: Evaluator,
    /// The variable each `let` value node is bound to.
    let_of_value: IdMap<ExprId, VarId>,
    /// Rewritten nodes whose value is a row lookup; never left in the result: the parent
    /// either absorbs them or [`Hoist::materialize`]s them.
    rows: IdMap<ExprId, Row>,
    /// `let`-bound variables whose value is a row lookup (their `let` is dropped).
    var_rows: IdMap<VarId, Row>,
    /// `let`-bound variables whose value is a literal or constant (the Tree-LSTM leaf's
    /// `zeros` forget term, folded), and that value.
    var_constants: IdMap<VarId, ExprId>,
}

impl Rewrite for Hoist<'_> {
    fn enter(&mut self, m: &Module, e: ExprId) -> bool {
        !matches!(&m.expr(e).kind, ExprKind::Function(f) if is_primitive(m, f))
    }

    fn leave(&mut self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Result<ExprId, CompileError> {
        let row = match &m.expr(old).kind {
            ExprKind::Var(v) => self.var_rows.get(*v).cloned(),
            ExprKind::Call { .. } => self.row_of_call(m, old, kids),
            _ => None,
        };
        if let Some(row) = row {
            let new = rebuild(m, old, kids);
            if let Some(&var) = self.let_of_value.get(old) {
                self.var_rows.insert(var, row.clone());
            }
            self.rows.insert(new, row);
            return Ok(new);
        }
        if let (Some(&var), [], ExprKind::Literal(_) | ExprKind::Constant(_)) =
            (self.let_of_value.get(old), kids, &m.expr(old).kind)
        {
            self.var_constants.insert(var, old);
        }
        if let ExprKind::Let { var, .. } = m.expr(old).kind {
            if self.var_rows.contains_key(var) {
                // Every use of `var` was absorbed or became a lookup of its own.
                return Ok(kids[1]);
            }
        }
        let kids = kids.iter().map(|&k| self.materialize(m, k)).collect::<Result<Vec<_>, _>>()?;
        Ok(rebuild(m, old, &kids))
    }
}

impl Hoist<'_> {
    /// `e` itself, or for a row lookup `take(table, index)` with the table as a constant.
    fn materialize(&self, m: &mut Module, e: ExprId) -> Result<ExprId, CompileError> {
        let Some(row) = self.rows.get(e) else { return Ok(e) };
        let span = m.expr(e).span;
        let constant = match row.table.constant.get() {
            Some(c) => c,
            None => {
                let data = row.table.tensor.get().and_then(constant_data).ok_or_else(|| {
                    CompileError::new(vec![Diagnostic::error(
                        span,
                        "internal compiler error in pass `HoistTake`: a table is not a constant",
                    )])
                })?;
                m.constants.push(data);
                let c = (m.constants.len() - 1) as u32;
                row.table.constant.set(Some(c));
                c
            }
        };
        let table = m.add_expr(ExprKind::Constant(constant), span);
        let index = var_ref(m, row.index, span);
        let callee = m.add_expr(ExprKind::Op(row.take.0), span);
        Ok(m.add_expr(ExprKind::Call { callee, args: vec![table, index], attrs: row.take.1.clone() }, span))
    }

    /// The row lookup operator call `old` (its children rewritten to `kids`) computes, if any:
    /// a `take` from a constant, or a row-wise operator absorbing the lookups among its
    /// operands.
    fn row_of_call(&self, m: &mut Module, old: ExprId, kids: &[ExprId]) -> Option<Row> {
        let (&callee, args) = kids.split_first()?;
        let ExprKind::Op(op) = m.expr(callee).kind else { return None };
        let name = m.name(op).to_string();
        let ExprKind::Call { attrs, .. } = &m.expr(old).kind else { return None };
        let attrs = attrs.clone();
        if name == "take" {
            return self.take_row(m, op, &attrs, args);
        }
        let rows: Vec<Option<&Row>> = args.iter().map(|&a| self.rows.get(a)).collect();
        let first = rows.iter().flatten().next()?;
        let r = first.index_rank;
        let (out_shape, dtype) = static_tensor(m, self.types.expr(old)?)?;
        if !exact_in_f64(dtype) || out_shape.len() < r {
            return None;
        }
        // Every operand: a lookup by the same index, or a constant.
        let mut inputs: Vec<Cow<Tensor>> = Vec::with_capacity(args.len());
        for (&a, row) in args.iter().zip(&rows) {
            match row {
                Some(row) => {
                    if row.index != first.index || row.take != first.take {
                        return None;
                    }
                    inputs.push(Cow::Borrowed(row.table.tensor_in(m)?));
                }
                None => {
                    let a = match m.expr(a).kind {
                        ExprKind::Var(v) => self.var_constants.get(v).copied().unwrap_or(a),
                        _ => a,
                    };
                    inputs.push(Cow::Owned(tensor(m, a)?));
                }
            }
        }
        let rank = out_shape.len() - r;
        let row_positions: Vec<usize> =
            rows.iter().enumerate().filter(|(_, r)| r.is_some()).map(|(i, _)| i).collect();
        let def = self.ops.get(self.ops.lookup(&name)?);
        let shift = |axis: i64, of_rank: usize| -> Option<i64> {
            let a = if axis < 0 { axis + of_rank as i64 } else { axis };
            (a >= r as i64 && a < of_rank as i64).then(|| a - r as i64 + 1)
        };
        let row_rank = |i: usize| inputs[i].shape().len() - 1;
        let mut table_attrs = attrs.clone();
        let mut inner = 1u64;
        match name.as_str() {
            // Attribute-free: an attribute of a broadcast operator may name an axis.
            _ if def.pattern == OpPattern::ElemWise
                || (def.pattern == OpPattern::Broadcast && def.attrs.is_empty()) =>
            {
                // Taken operands span the output's axes; constants broadcast along a row's.
                let fits = inputs.iter().enumerate().all(|(i, t)| match rows[i] {
                    Some(_) => row_rank(i) == rank,
                    None => t.shape().len() <= rank,
                });
                if !fits {
                    return None;
                }
            }
            "nn.bias_add" if row_positions == [0] => {
                let axis = int_attr(m, &attrs, "axis").unwrap_or(1);
                set_int(m, &mut table_attrs, "axis", shift(axis, out_shape.len())?);
            }
            "nn.dense" if row_positions == [0] && rank >= 1 => {
                inner = *inputs[0].shape().last()? as u64;
            }
            "expand_dims" if row_positions == [0] => {
                let axis = int_attr(m, &attrs, "axis")?;
                let in_rank = out_shape.len()
                    - usize::try_from(int_attr(m, &attrs, "num_newaxis").unwrap_or(1)).ok()?;
                set_int(m, &mut table_attrs, "axis", shift(axis, in_rank + 1)?);
            }
            "strided_slice" if row_positions == [0] && args.len() == 1 => {
                let in_rank = out_shape.len();
                let axes: Vec<i64> = match m.attr(&attrs, "axes") {
                    Some(AttrValue::List(items)) => items
                        .iter()
                        .map(|v| if let AttrValue::Int(a) = v { Some(*a) } else { None })
                        .collect::<Option<_>>()?,
                    // Without `axes`, `begin` names the leading axes: the index's among them.
                    _ => return None,
                };
                let axes =
                    axes.into_iter().map(|a| shift(a, in_rank).map(AttrValue::Int)).collect::<Option<_>>()?;
                set(m, &mut table_attrs, "axes", AttrValue::List(axes));
            }
            _ => return None,
        }
        // The budget, from the call's type: the table is [rows] + the output's row shape.
        let rows_count = inputs[row_positions[0]].shape().first().copied()? as u64;
        let row_shape = &out_shape[r..];
        let elements =
            row_shape.iter().try_fold(rows_count, |n, &d| n.checked_mul(u64::try_from(d).ok()?))?;
        let bytes = elements.checked_mul(u64::from(dtype.bits).div_ceil(8))?;
        let root = rows.iter().flatten().map(|r| r.root_elements).min()?;
        if bytes > MAX_TABLE_BYTES
            || elements > root.saturating_mul(MAX_TABLE_GROWTH)
            || elements.saturating_mul(inner) > MAX_TABLE_WORK
        {
            return None;
        }
        let refs: Vec<&Tensor> = inputs.iter().map(|t| &**t).collect();
        let mut out = (self.evaluator)(&name, &AttrReader::new(&m.symbols, &table_attrs), &refs).ok()?;
        let table = out.pop().filter(|_| out.is_empty())?;
        let expected = std::iter::once(rows_count).chain(row_shape.iter().map(|&d| d as u64));
        if table.dtype() != dtype || !table.shape().iter().map(|&d| d as u64).eq(expected) {
            return None;
        }
        Some(Row {
            table: Rc::new(Table { tensor: OnceCell::from(table), constant: Cell::new(None) }),
            index: first.index,
            index_rank: r,
            take: first.take.clone(),
            root_elements: root,
        })
    }

    /// `take(C, %i, axis=0)` of a constant `C` by a variable: the start of a chain.
    fn take_row(&self, m: &Module, op: Symbol, attrs: &Attrs, args: &[ExprId]) -> Option<Row> {
        let &[table, index] = args else { return None };
        let (ExprKind::Constant(c), ExprKind::Var(v)) = (&m.expr(table).kind, &m.expr(index).kind) else {
            return None;
        };
        let batch_dims = int_attr(m, attrs, "batch_dims").unwrap_or(0);
        if int_attr(m, attrs, "axis") != Some(0) || batch_dims != 0 {
            return None;
        }
        let (index_shape, _) = static_tensor(m, self.types.var(*v)?)?;
        let data = m.constants.get(*c as usize)?;
        if data.shape.is_empty() {
            return None;
        }
        Some(Row {
            table: Rc::new(Table { tensor: OnceCell::new(), constant: Cell::new(Some(*c)) }),
            index: *v,
            index_rank: index_shape.len(),
            take: (op, attrs.clone()),
            root_elements: data.data.len() as u64,
        })
    }
}

impl Table {
    /// The table's elements, converted from its module constant the first time.
    fn tensor_in(&self, m: &Module) -> Option<&Tensor> {
        if self.tensor.get().is_none() {
            let c = m.constants.get(self.constant.get()? as usize)?;
            let t = crate::codegen::constant_tensor(c).ok()?;
            // Set once: `get` was `None` just above and nothing else holds the cell.
            let _ = self.tensor.set(t);
        }
        self.tensor.get()
    }
}

/// The integer attribute `key`, if present.
fn int_attr(m: &Module, attrs: &Attrs, key: &str) -> Option<i64> {
    match m.attr(attrs, key)? {
        AttrValue::Int(i) => Some(*i),
        _ => None,
    }
}

/// Sets attribute `key` of `attrs` to `value` (added when absent).
fn set(m: &mut Module, attrs: &mut Attrs, key: &str, value: AttrValue) {
    let key = m.symbols.intern(key);
    match attrs.0.iter_mut().find(|(k, _)| *k == key) {
        Some((_, v)) => *v = value,
        None => attrs.0.push((key, value)),
    }
}

/// Sets integer attribute `key` of `attrs` to `value`.
fn set_int(m: &mut Module, attrs: &mut Attrs, key: &str, value: i64) {
    set(m, attrs, key, AttrValue::Int(value));
}
