//! Operator fusion (TVM `src/relay/transforms/fuse_ops.cc`): merges the single-operator
//! primitive calls of each dataflow region into bigger `Primitive=1` functions, which become
//! one kir kernel each (intermediates never touch memory).
//!
//! Runs on the output of [`lower_primitives`](super::lower_primitives) and
//! [`to_anf`](super::to_anf), where the dataflow graph is explicit: a *region* is one `let`
//! chain (a function body, an `if` branch, a `match` arm, a `fn` body), its *nodes* are the
//! bindings `let %v = fn (..., Primitive=1) { op(...) }(atoms)`, and an edge runs from the
//! binding of `%v` to every node of the same region that takes `%v` as an argument. A node
//! whose variable is used anywhere else (the chain's result, a tuple, a call of a global, a
//! nested branch, another region) is an output of the region. So groups never cross `if`,
//! `match` or function boundaries, and non-operator bindings (calls of globals, matches,
//! projections) are never fused.
//!
//! The grouping is TVM's: a post-dominator tree over each region's nodes, whose edges carry
//! the pattern of the consuming operator (`Broadcast` refined to `ElemWise` when shapes
//! match), then three phases — anchors (`OutEWiseFusable`) absorb elementwise consumers,
//! elementwise/broadcast ops fuse into injective, reduction or anchor post-dominators,
//! injective ops fuse along injective paths — under a limit on the size of a group. Two
//! rules are ours: elementwise and injective ops feeding an anchor's *data* operand fuse into
//! it (the product reads them from a temp; edges into its weights are `Opaque`), and, last,
//! an anchor read only by one elementwise/injective group joins it ([`anchor_consumers`]: a
//! dense layer and the gate arithmetic on its slices are one kernel).
//!
//! TVM's third phase fuses injective ops into the tuples that collect them, so a group may
//! be rooted at a tuple and its fused function return several values. Here tuples are not
//! nodes; that phase's place is taken by *multi-output fusion* ([`multi_output`]): a node
//! that is an output of the region (the LSTM cell's `%c`, returned and read by `tanh(%c)`)
//! joins the elementwise group its consumers ended in as an extra output. The fused
//! `Primitive=1` function then returns the tuple of its outputs in binding order, and the
//! call site binds them back: `let %v_outs = fn (..) {..; (%c', %v')}(..); let %c =
//! %v_outs.0; let %v = %v_outs.1;` (codegen resolves the projections to the kernel's output
//! registers, so no tuple is built).
//!
//! A node is fusible only if its operator's compute rule lowers it on its own
//! ([`crate::lower_kir::primitive_kernel`]): operators without a rule, with `?` dimensions or
//! tuple results, and calls whose values are all 0-d (they run as unboxed scalar
//! instructions) are `Opaque` and stay alone.

mod anchor_consumers;
mod multi_output;

use super::util::builder::{flag, fresh_var, function, is_primitive, let_chain, var_ref, Types};
use super::util::walk::{children, preorder};
use super::PRIMITIVE;
use crate::diagnostics::CompileError;
use crate::ir::{Dim, ExprId, ExprKind, Function, IdMap, IdSet, Module, TypeKind, VarId};
use crate::op::{OpPattern, OpRegistry};
use crate::ty::TypeMap;
use anchor_consumers::merge_anchors;
use multi_output::merge_outputs;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Options of [`fuse_ops`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuseOptions {
    /// The most operators one group may hold (TVM's `max_fuse_depth`, default 256).
    pub max_group_size: usize,
}

impl Default for FuseOptions {
    fn default() -> Self {
        FuseOptions { max_group_size: 256 }
    }
}

/// Fuses the primitive calls of every global function except `Primitive=1` ones (see the
/// module docs). The module must be in the form `to_anf` leaves.
///
/// # Errors
/// An internal error if `types` lacks a type (it must be the [`TypeMap`] of `m` as it is).
pub fn fuse_ops(
    m: &mut Module,
    types: &TypeMap,
    ops: &OpRegistry,
    options: &FuseOptions,
) -> Result<(), CompileError> {
    let mut cx =
        Fuse { types: Types::new(types, "fuse_ops"), map: types, ops, options: *options, uses: IdMap::new() };
    for i in 0..m.functions.len() {
        if is_primitive(m, &m.functions[i].func) {
            continue;
        }
        cx.uses = count_uses(m, m.functions[i].func.body);
        let body = m.functions[i].func.body;
        m.functions[i].func.body = cx.value(m, body)?;
    }
    Ok(())
}

struct Fuse<'a> {
    types: Types<'a>,
    map: &'a TypeMap,
    ops: &'a OpRegistry,
    options: FuseOptions,
    /// How many times each variable is referenced in the current global.
    uses: IdMap<VarId, usize>,
}

/// Variable references under `root`, counted with multiplicity, outside primitive functions.
fn count_uses(m: &Module, root: ExprId) -> IdMap<VarId, usize> {
    let mut uses = IdMap::new();
    let mut seen = IdSet::new();
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        if !seen.insert(e) {
            continue;
        }
        for (c, _) in children(&m.expr(e).kind) {
            match &m.expr(c).kind {
                ExprKind::Var(v) => *uses.get_or_insert_with(*v, || 0) += 1,
                ExprKind::Function(f) if is_primitive(m, f) => {}
                _ => stack.push(c),
            }
        }
    }
    uses
}

/// One node of a region's dataflow graph.
struct Node {
    /// Position of the binding in the chain.
    binding: usize,
    pattern: OpPattern,
    /// Used outside the region's dataflow edges.
    extern_ref: bool,
    /// Consumers in the region, with the pattern of each edge.
    outputs: Vec<(usize, OpPattern)>,
    /// The shape of its value.
    shape: Vec<Dim>,
    /// Computed from constants only, so [`super::fold_fused_constants`] folds its group's call.
    folds: bool,
}

impl Fuse<'_> {
    /// `e` with every nested chain fused (an `if`, `match` or non-primitive `fn` value holds
    /// chains of its own).
    fn value(&mut self, m: &mut Module, e: ExprId) -> Result<ExprId, CompileError> {
        let kind = m.expr(e).kind.clone();
        let span = m.expr(e).span;
        let new = match kind {
            ExprKind::Let { .. } => return self.chain(m, e),
            ExprKind::If { cond, then_branch, else_branch } => {
                let then_branch = self.value(m, then_branch)?;
                let else_branch = self.value(m, else_branch)?;
                ExprKind::If { cond, then_branch, else_branch }
            }
            ExprKind::Match { scrutinee, arms, complete } => {
                let mut new_arms = arms.clone();
                for arm in &mut new_arms {
                    arm.body = self.value(m, arm.body)?;
                }
                ExprKind::Match { scrutinee, arms: new_arms, complete }
            }
            ExprKind::Function(f) if !is_primitive(m, &f) => {
                let mut f = (*f).clone();
                f.body = self.value(m, f.body)?;
                ExprKind::Function(Box::new(f))
            }
            _ => return Ok(e),
        };
        Ok(m.add_expr(new, span))
    }

    /// A `let` chain, fused.
    fn chain(&mut self, m: &mut Module, e: ExprId) -> Result<ExprId, CompileError> {
        let mut bindings = vec![];
        let mut cur = e;
        while let ExprKind::Let { var, value, body } = m.expr(cur).kind {
            bindings.push((var, value));
            cur = body;
        }
        for b in &mut bindings {
            b.1 = crate::stack::grow(|| self.value(m, b.1))?;
        }
        let tail = self.value(m, cur)?;
        let prims: PrimFns = bindings
            .iter()
            .enumerate()
            .filter(
                |(_, &(_, value))| matches!(&m.expr(value).kind, ExprKind::Function(f) if is_primitive(m, f)),
            )
            .map(|(i, &(var, value))| (var, (i, value)))
            .collect();
        let nodes = self.graph(m, &prims, &bindings)?;
        let mut groups = partition(&nodes, self.options.max_group_size);
        let node_bindings: HashSet<usize> = nodes.iter().map(|n| n.binding).collect();
        // A node bound at `from` may be computed at `to` if nothing bound in between, other
        // than dataflow nodes, reads it.
        let movable = |from: usize, to: usize| {
            let var = bindings[from].0;
            (from + 1..to).filter(|b| !node_bindings.contains(b)).all(|b| {
                !preorder(m, bindings[b].1, |_| true)
                    .into_iter()
                    .any(|e| matches!(m.expr(e).kind, ExprKind::Var(v) if v == var))
            })
        };
        merge_outputs(&nodes, &mut groups, self.options.max_group_size, |n, root| {
            movable(nodes[n].binding, nodes[root].binding)
        });
        merge_anchors(&nodes, &mut groups, self.options.max_group_size);
        let mut members: HashMap<usize, Vec<usize>> = HashMap::default();
        for i in 0..nodes.len() {
            members.entry(groups.find(i)).or_default().push(i);
        }
        // What each binding becomes: absent, kept; otherwise these bindings (none: removed).
        let mut replace: HashMap<usize, Vec<(VarId, ExprId)>> = HashMap::default();
        for group in members.values().filter(|g| g.len() > 1) {
            let ids: Vec<usize> = group.iter().map(|&n| nodes[n].binding).collect();
            let Some(&root) = ids.last() else { continue };
            // Members are in binding order, so the outputs are too, the root last.
            let outputs: Vec<usize> = group
                .iter()
                .filter(|&&n| nodes[n].extern_ref || nodes[n].binding == root)
                .map(|&n| nodes[n].binding)
                .collect();
            let fused = self.fused_call(m, &prims, &bindings, &ids, &outputs)?;
            ids.iter().for_each(|&b| {
                replace.insert(b, vec![]);
            });
            replace.insert(root, self.bind_outputs(m, &bindings, &outputs, fused)?);
            // The members' function literals are dead once their only call is gone.
            for &b in &ids {
                let ExprKind::Call { callee, .. } = &m.expr(bindings[b].1).kind else { continue };
                let ExprKind::Var(f) = m.expr(*callee).kind else { continue };
                if let (Some(&(pos, _)), Some(1)) = (prims.get(&f), self.uses.get(f)) {
                    replace.insert(pos, vec![]);
                }
            }
        }
        let new: Vec<(VarId, ExprId)> = bindings
            .iter()
            .enumerate()
            .flat_map(|(i, &(v, value))| replace.remove(&i).unwrap_or_else(|| vec![(v, value)]))
            .collect();
        Ok(let_chain(m, new, tail))
    }

    /// The dataflow graph of a chain's bindings (nodes in binding order: topological).
    fn graph(
        &self,
        m: &Module,
        prims: &PrimFns,
        bindings: &[(VarId, ExprId)],
    ) -> Result<Vec<Node>, CompileError> {
        let mut nodes: Vec<Node> = vec![];
        let mut node_of: HashMap<VarId, usize> = HashMap::default();
        for (i, &(var, value)) in bindings.iter().enumerate() {
            let Some((f, args)) = primitive_call(m, prims, value) else { continue };
            let pattern = self.pattern(m, f, args, value)?;
            let out = self.types.expr(m, value)?;
            let shape = match m.types.kind(out) {
                TypeKind::Tensor { shape, .. } => shape.clone(),
                _ => vec![],
            };
            let folds = args.iter().all(|&a| match m.expr(a).kind {
                ExprKind::Constant(_) => true,
                ExprKind::Var(v) => node_of.get(&v).is_some_and(|&p| nodes[p].folds),
                _ => false,
            });
            let index = nodes.len();
            for (position, &a) in args.iter().enumerate() {
                let ExprKind::Var(v) = m.expr(a).kind else { continue };
                let Some(&p) = node_of.get(&v) else { continue };
                let edge = match pattern {
                    OpPattern::Broadcast if self.types.expr(m, a)? == out => OpPattern::ElemWise,
                    // An anchor's operands after its data (weights, kernels) must reach it
                    // as whole buffers, which its native products need: nothing fuses in
                    // through them.
                    OpPattern::OutEWiseFusable if position > 0 => OpPattern::Opaque,
                    p => p,
                };
                nodes[p].outputs.push((index, edge));
            }
            node_of.insert(var, index);
            nodes.push(Node { binding: i, pattern, extern_ref: false, outputs: vec![], shape, folds });
        }
        for (&v, &n) in &node_of {
            let dataflow: usize = nodes[n].outputs.len();
            nodes[n].extern_ref = self.uses.get(v).copied().unwrap_or(0) > dataflow;
        }
        Ok(nodes)
    }

    /// The fusion pattern of a primitive call: its operator's, or `Opaque` when it cannot be
    /// lowered to kir on its own or is all scalars.
    fn pattern(
        &self,
        m: &Module,
        f: &Function,
        args: &[ExprId],
        value: ExprId,
    ) -> Result<OpPattern, CompileError> {
        let ExprKind::Call { callee, .. } = &m.expr(f.body).kind else { return Ok(OpPattern::Opaque) };
        let ExprKind::Op(op) = m.expr(*callee).kind else { return Ok(OpPattern::Opaque) };
        let Some(def) = self.ops.lookup(m.name(op)).map(|id| self.ops.get(id)) else {
            return Ok(OpPattern::Opaque);
        };
        let scalar = |t| matches!(m.types.kind(t), TypeKind::Tensor { shape, .. } if shape.is_empty());
        let mut all_scalar = scalar(self.types.expr(m, value)?);
        for &a in args {
            all_scalar &= scalar(self.types.expr(m, a)?);
        }
        if all_scalar || crate::lower_kir::primitive_kernel(m, self.map, self.ops, f).is_err() {
            return Ok(OpPattern::Opaque);
        }
        Ok(def.pattern)
    }

    /// The call of one primitive function computing the group of bindings `ids` (in order)
    /// and returning the values of `outputs` (a subset of `ids`, the last of them included):
    /// the last one's value alone, or a tuple of them in order.
    fn fused_call(
        &self,
        m: &mut Module,
        prims: &PrimFns,
        bindings: &[(VarId, ExprId)],
        ids: &[usize],
        outputs: &[usize],
    ) -> Result<ExprId, CompileError> {
        let member_of: HashMap<VarId, usize> = ids.iter().map(|&b| (bindings[b].0, b)).collect();
        let mut new_calls: HashMap<usize, ExprId> = HashMap::default();
        let mut params: Vec<VarId> = vec![];
        let mut outer: Vec<ExprId> = vec![];
        let mut param_of: HashMap<ExprKey, VarId> = HashMap::default();
        let root_value = bindings[ids[ids.len() - 1]].1;
        let span = m.expr(root_value).span;
        for &b in ids {
            let value = bindings[b].1;
            let Some((f, args)) = primitive_call(m, prims, value) else { continue };
            let (f, args) = (f.clone(), args.to_vec());
            let ExprKind::Call { callee, args: inner, attrs } = m.expr(f.body).kind.clone() else { continue };
            let mut new_args = Vec::with_capacity(inner.len());
            for a in inner {
                let source = match m.expr(a).kind {
                    ExprKind::Var(v) => match f.params.iter().position(|&p| p == v) {
                        Some(i) => args[i],
                        None => a,
                    },
                    _ => a,
                };
                let new = match m.expr(source).kind.clone() {
                    ExprKind::Var(v) if member_of.contains_key(&v) => new_calls[&member_of[&v]],
                    ExprKind::Literal(l) => m.add_expr(ExprKind::Literal(l), span),
                    kind => {
                        let key = match kind {
                            ExprKind::Var(v) => ExprKey::Var(v),
                            _ => ExprKey::Node(source),
                        };
                        let p = match param_of.get(&key) {
                            Some(&p) => p,
                            None => {
                                let ty = self.types.expr(m, source)?;
                                let p = fresh_var(m, &format!("p{}", params.len()), ty, span);
                                params.push(p);
                                outer.push(match key {
                                    ExprKey::Var(v) => var_ref(m, v, span),
                                    ExprKey::Node(n) => n,
                                });
                                param_of.insert(key, p);
                                p
                            }
                        };
                        var_ref(m, p, span)
                    }
                };
                new_args.push(new);
            }
            let op = m.add_expr(m.expr(callee).kind.clone(), span);
            let call = m.add_expr(ExprKind::Call { callee: op, args: new_args, attrs }, span);
            new_calls.insert(b, call);
        }
        let body = match outputs {
            [one] => new_calls[one],
            _ => m.add_expr(ExprKind::Tuple(outputs.iter().map(|o| new_calls[o]).collect()), span),
        };
        let prim = Function {
            type_params: vec![],
            params,
            ret_type: Some(self.outputs_type(m, bindings, outputs)?),
            body,
            attrs: flag(m, PRIMITIVE),
        };
        let prim = function(m, prim, span);
        Ok(m.add_expr(ExprKind::Call { callee: prim, args: outer, attrs: Default::default() }, span))
    }

    /// The type of a group's results: the output's, or the tuple of the outputs'.
    fn outputs_type(
        &self,
        m: &mut Module,
        bindings: &[(VarId, ExprId)],
        outputs: &[usize],
    ) -> Result<crate::ir::TypeId, CompileError> {
        let types =
            outputs.iter().map(|&o| self.types.expr(m, bindings[o].1)).collect::<Result<Vec<_>, _>>()?;
        Ok(match types[..] {
            [one] => one,
            _ => m.types.intern(TypeKind::Tuple(types)),
        })
    }

    /// The bindings that give a group's outputs their values from its call `fused`: `let %v =
    /// fused` for one output; for several, the tuple and one projection per output, `let
    /// %v_outs = fused; let %c = %v_outs.0; let %v = %v_outs.1`.
    fn bind_outputs(
        &self,
        m: &mut Module,
        bindings: &[(VarId, ExprId)],
        outputs: &[usize],
        fused: ExprId,
    ) -> Result<Vec<(VarId, ExprId)>, CompileError> {
        let Some(&root) = outputs.last() else { return Ok(vec![]) };
        let root_var = bindings[root].0;
        if outputs.len() == 1 {
            return Ok(vec![(root_var, fused)]);
        }
        let span = m.expr(fused).span;
        let ty = self.outputs_type(m, bindings, outputs)?;
        let name = format!("{}_outs", m.name(m.var(root_var).name));
        let tuple = fresh_var(m, &name, ty, span);
        let mut new = vec![(tuple, fused)];
        for (index, &o) in outputs.iter().enumerate() {
            let whole = var_ref(m, tuple, span);
            let field = m.add_expr(ExprKind::Proj { tuple: whole, index: index as u32 }, span);
            new.push((bindings[o].0, field));
        }
        Ok(new)
    }
}

/// What a group parameter stands for: a variable, or another atom node (a constant).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum ExprKey {
    Var(VarId),
    Node(ExprId),
}

/// The `Primitive=1` functions bound in a chain (ANF binds each literal before its call):
/// variable → binding position and literal.
type PrimFns = HashMap<VarId, (usize, ExprId)>;

/// A call of a `Primitive=1` function, written in place or through its variable: the
/// function and the arguments.
fn primitive_call<'m>(m: &'m Module, prims: &PrimFns, value: ExprId) -> Option<(&'m Function, &'m [ExprId])> {
    let ExprKind::Call { callee, args, .. } = &m.expr(value).kind else { return None };
    let callee = match m.expr(*callee).kind {
        ExprKind::Var(v) => prims.get(&v)?.1,
        _ => *callee,
    };
    match &m.expr(callee).kind {
        ExprKind::Function(f) if is_primitive(m, f) => Some((f, args)),
        _ => None,
    }
}

/// TVM's grouping (its first two phases): groups of nodes as a union-find.
fn partition(nodes: &[Node], max_group_size: usize) -> Groups {
    let dom = post_dominators(nodes);
    let mut g = Groups::new(nodes);
    for phase in 0..2 {
        for (i, d) in dom.iter().enumerate() {
            let root = g.find(i);
            let group_pattern = g.pattern[root];
            if group_pattern == OpPattern::Opaque {
                continue;
            }
            let Some(parent) = d.parent else { continue };
            if g.count_with_new_child(nodes, i, parent) > max_group_size {
                continue;
            }
            if g.find(parent) == root {
                continue;
            }
            let dom_pattern = d.pattern;
            if group_pattern == OpPattern::OutEWiseFusable {
                if phase == 0
                    && dom_pattern == OpPattern::ElemWise
                    && g.check_path(nodes, i, parent, |k, _| k <= OpPattern::Broadcast)
                {
                    g.commit(nodes, i, parent);
                }
            } else if group_pattern <= OpPattern::Broadcast {
                let fuses = (dom_pattern <= OpPattern::Injective || dom_pattern == OpPattern::CommReduce)
                    && g.check_path(nodes, i, parent, |k, sink| {
                        if sink {
                            k <= OpPattern::OutEWiseFusable
                        } else {
                            k <= OpPattern::Injective
                        }
                    });
                if fuses || phase == 1 && feeds_anchor_data(&mut g, nodes, i, parent, dom_pattern) {
                    g.commit(nodes, i, parent);
                }
            } else if group_pattern == OpPattern::Injective
                && phase == 1
                && (g.check_path(nodes, i, parent, |k, _| k <= OpPattern::Injective)
                    || feeds_anchor_data(&mut g, nodes, i, parent, dom_pattern))
            {
                g.commit(nodes, i, parent);
            }
        }
    }
    g
}

/// Whether group `i` reaches its post-dominator `parent`, an anchor, only through injective
/// ops and into the anchor's data operand (edges into its other operands are `Opaque`, so
/// weights reach the product whole). Our rule, not TVM's: the product reads computed data
/// from a temp, so an embedding lookup or a sum of child states feeding a dense layer costs
/// no kernel call of its own.
fn feeds_anchor_data(
    g: &mut Groups,
    nodes: &[Node],
    i: usize,
    parent: usize,
    dom_pattern: OpPattern,
) -> bool {
    dom_pattern == OpPattern::OutEWiseFusable
        && g.check_path(nodes, i, parent, |k, sink| {
            if sink {
                k == OpPattern::OutEWiseFusable
            } else {
                k <= OpPattern::Injective
            }
        })
}

/// A node of the post-dominator tree.
#[derive(Clone, Copy)]
struct DomNode {
    parent: Option<usize>,
    depth: usize,
    /// The combined pattern of the edges from the node to its parent.
    pattern: OpPattern,
}

/// The immediate post-dominator of each node (nodes are in topological order).
fn post_dominators(nodes: &[Node]) -> Vec<DomNode> {
    let mut dom = vec![DomNode { parent: None, depth: 1, pattern: OpPattern::Opaque }; nodes.len()];
    for i in (0..nodes.len()).rev() {
        let n = &nodes[i];
        if n.extern_ref || n.outputs.is_empty() {
            continue;
        }
        let mut pattern = OpPattern::ElemWise;
        let mut parent = Some(n.outputs[0].0);
        pattern = pattern.max(n.outputs[0].1);
        for &(o, edge) in &n.outputs[1..] {
            parent = lca(&dom, parent, Some(o), &mut pattern);
            pattern = pattern.max(edge);
        }
        let depth = parent.map_or(1, |p| dom[p].depth + 1);
        dom[i] = DomNode { parent, depth, pattern };
    }
    dom
}

fn lca(
    dom: &[DomNode],
    mut a: Option<usize>,
    mut b: Option<usize>,
    pattern: &mut OpPattern,
) -> Option<usize> {
    while a != b {
        let (x, y) = (a?, b?);
        if dom[x].depth < dom[y].depth {
            *pattern = (*pattern).max(dom[y].pattern);
            b = dom[y].parent;
        } else if dom[y].depth < dom[x].depth {
            *pattern = (*pattern).max(dom[x].pattern);
            a = dom[x].parent;
        } else {
            *pattern = (*pattern).max(dom[x].pattern).max(dom[y].pattern);
            a = dom[x].parent;
            b = dom[y].parent;
        }
    }
    a
}

/// Union-find over nodes, with each group's pattern and size. The per-group fields are
/// valid at a group's representative.
struct Groups {
    parent: Vec<usize>,
    pattern: Vec<OpPattern>,
    size: Vec<usize>,
    /// The least fusible pattern of a member.
    worst: Vec<OpPattern>,
    /// The last member (in binding order): the group's root.
    last: Vec<usize>,
}

impl Groups {
    fn new(nodes: &[Node]) -> Groups {
        Groups {
            parent: (0..nodes.len()).collect(),
            pattern: nodes.iter().map(|n| n.pattern).collect(),
            size: vec![1; nodes.len()],
            worst: nodes.iter().map(|n| n.pattern).collect(),
            last: (0..nodes.len()).collect(),
        }
    }

    /// Puts group `child` (a representative) into group `target` (another).
    fn merge(&mut self, child: usize, target: usize) {
        self.parent[child] = target;
        self.size[target] += self.size[child];
        self.worst[target] = self.worst[target].max(self.worst[child]);
        self.last[target] = self.last[target].max(self.last[child]);
    }

    fn find(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    /// Whether every node on every path from `src` (exclusive) to `sink` satisfies `ok`
    /// (called with the node's group pattern and whether it is the sink).
    fn check_path(
        &mut self,
        nodes: &[Node],
        src: usize,
        sink: usize,
        ok: impl Fn(OpPattern, bool) -> bool,
    ) -> bool {
        let mut seen = vec![false; nodes.len()];
        let mut stack: Vec<usize> = nodes[src].outputs.iter().map(|&(o, _)| o).collect();
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n], true) {
                continue;
            }
            let root = self.find(n);
            if !ok(self.pattern[root], n == sink) {
                return false;
            }
            if n != sink {
                stack.extend(nodes[n].outputs.iter().map(|&(o, _)| o));
            }
        }
        true
    }

    /// Merges every node on the paths from `src` to `sink` into `sink`'s group.
    fn commit(&mut self, nodes: &[Node], src: usize, sink: usize) {
        let target = self.find(sink);
        let mut seen = vec![false; nodes.len()];
        let mut stack = vec![src];
        while let Some(n) = stack.pop() {
            if n == sink || std::mem::replace(&mut seen[n], true) {
                continue;
            }
            let child = self.find(n);
            if child != target {
                self.merge(child, target);
                if self.pattern[child] == OpPattern::OutEWiseFusable {
                    self.pattern[target] = self.pattern[target].max(self.pattern[child]);
                }
            }
            stack.extend(nodes[n].outputs.iter().map(|&(o, _)| o));
        }
    }

    /// The size `sink`'s group would have with the nodes from `src` up to it.
    fn count_with_new_child(&mut self, nodes: &[Node], src: usize, sink: usize) -> usize {
        let target = self.find(sink);
        let mut total = self.size[target];
        let mut seen = vec![false; nodes.len()];
        let mut stack = vec![src];
        while let Some(n) = stack.pop() {
            if n == sink || std::mem::replace(&mut seen[n], true) {
                continue;
            }
            // As TVM counts: a node heading a group brings the whole group along.
            let root = self.find(n);
            if root == n {
                total += self.size[n];
            } else if root != target {
                total += 1;
            }
            stack.extend(nodes[n].outputs.iter().map(|&(o, _)| o));
        }
        total
    }
}
