//! Pictures of a module's dataflow as Graphviz DOT (what TVM users get from
//! `relay.visualize`): one `digraph`, one `subgraph cluster_*` per global function.
//!
//! Operator calls are boxes; calls of `Primitive=1` functions (fused groups) are nested
//! clusters holding their operators; parameters are ellipses, constants notes, literals plain
//! text; `let` is a `cds` node standing for its variable, `if` a diamond, `match` an
//! `Mdiamond` (branch results enter them by dashed edges), calls of globals `component`
//! nodes, constructors `house`, other calls `Msquare`, `fn` literals (closures) `tab` nodes
//! whose bodies are not drawn; a `match` binds its pattern variables by dotted edges; the
//! function's result is a `doublecircle`. Edges run from a
//! value to its user and are labelled with the value's inferred type.

use crate::ir::{ExprId, ExprKind, FileId, Function, LiteralValue, Module, VarId};
use crate::pass::{is_primitive, pattern_vars, preorder};
use crate::syntax::printer::print_type;
use crate::ty::TypeMap;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// The module's global functions (only those defined in `file` when given, as the printer
/// prints them) as one DOT `digraph` (see the module docs); `types` (the module's inferred
/// types) label the edges, which stay unlabelled where a type is missing.
pub fn to_dot(m: &Module, types: &TypeMap, file: Option<FileId>) -> String {
    let mut out = String::from("digraph relay {\n  compound=true;\n  node [fontname=\"monospace\"];\n");
    for (i, g) in m.functions.iter().enumerate().filter(|(_, g)| file.is_none_or(|f| g.span.file == f)) {
        let kernels = preorder(m, g.func.body, |_| true)
            .into_iter()
            .filter_map(|e| match &m.expr(e).kind {
                ExprKind::Let { var, value, .. } => match &m.expr(*value).kind {
                    ExprKind::Function(f) if is_primitive(m, f) => Some((*var, &**f)),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let clusters = vec![Cluster::default()];
        let mut w = Writer {
            m,
            types,
            prefix: format!("f{i}"),
            kernels,
            drawn: HashSet::new(),
            clusters,
            edges: vec![],
        };
        w.function(&g.func);
        out.push_str(&w.finish(&format!("@{}", m.name(g.name))));
    }
    out.push_str("}\n");
    out
}

/// The nodes of one cluster and the clusters nested in it.
#[derive(Default)]
struct Cluster {
    label: String,
    nodes: Vec<String>,
    children: Vec<usize>,
}

/// Draws one global function.
struct Writer<'a> {
    m: &'a Module,
    types: &'a TypeMap,
    /// Makes node names unique across functions.
    prefix: String,
    /// `Primitive=1` functions bound by `let` (how FuseOps leaves them), by variable.
    kernels: HashMap<VarId, &'a Function>,
    /// The kernels already drawn as clusters (a second call of one is a plain call node).
    drawn: HashSet<VarId>,
    /// Cluster 0 is the function's; the others are fused groups.
    clusters: Vec<Cluster>,
    edges: Vec<String>,
}

/// A node's DOT name and whether it stands for a variable (whose type labels its edges).
#[derive(Clone, Copy)]
enum Source {
    Expr(ExprId),
    Var(VarId),
}

impl<'a> Writer<'a> {
    fn function(&mut self, f: &Function) {
        for &p in &f.params {
            self.node(0, Source::Var(p), &format!("%{}", self.m.name(self.m.var(p).name)), "ellipse");
        }
        let out = format!("{}_out", self.prefix);
        self.clusters[0].nodes.push(format!("{out} [label=\"result\", shape=doublecircle];"));
        self.walk(f.body, 0);
        let result = self.source(f.body);
        self.edge(result, &out, "");
    }

    /// Declares a node in `cluster`.
    fn node(&mut self, cluster: usize, s: Source, label: &str, shape: &str) {
        let line = format!("{} [label=\"{}\", shape={shape}];", self.name(s), escape(label));
        self.clusters[cluster].nodes.push(line);
    }

    fn name(&self, s: Source) -> String {
        match s {
            Source::Expr(e) => format!("{}_e{}", self.prefix, e.0),
            Source::Var(v) => format!("{}_v{}", self.prefix, v.0),
        }
    }

    /// An edge from `from` to node `to`, labelled with `from`'s type, `style` extra DOT
    /// attributes.
    fn edge(&mut self, from: Source, to: &str, style: &str) {
        let ty = match from {
            Source::Expr(e) => self.types.expr(e),
            Source::Var(v) => self.types.var(v),
        };
        let label = ty.map(|t| print_type(self.m, t)).unwrap_or_default();
        let from = self.name(from);
        self.edges.push(format!("{from} -> {to} [label=\"{}\"{style}];", escape(&label)));
    }

    /// The node whose value `e` is: a variable's binder, a `let`'s body's, a fused call's
    /// result, else `e`'s own node.
    fn source(&self, mut e: ExprId) -> Source {
        loop {
            match &self.m.expr(e).kind {
                ExprKind::Var(v) => return Source::Var(*v),
                ExprKind::Let { body, .. } => e = *body,
                ExprKind::Call { callee, .. } => match self.kernel(*callee) {
                    Some((_, f)) => e = f.body,
                    None => return Source::Expr(e),
                },
                _ => return Source::Expr(e),
            }
        }
    }

    /// The kernel `callee` is: a `Primitive=1` literal, or a variable bound to one (with the
    /// variable).
    fn kernel(&self, callee: ExprId) -> Option<(Option<VarId>, &'a Function)> {
        let m: &'a Module = self.m;
        match &m.expr(callee).kind {
            ExprKind::Function(f) if is_primitive(m, f) => Some((None, f)),
            ExprKind::Var(v) => self.kernels.get(v).map(|f| (Some(*v), *f)),
            _ => None,
        }
    }

    /// Draws every node under `root` into `cluster` (each shared node once; iterative, so
    /// long `let` chains are fine).
    fn walk(&mut self, root: ExprId, cluster: usize) {
        let mut seen = HashSet::new();
        let mut stack = vec![(root, cluster)];
        while let Some((e, cluster)) = stack.pop() {
            if !seen.insert(e) {
                continue;
            }
            let to = self.name(Source::Expr(e));
            let m = self.m;
            let operands = |args: &[ExprId], stack: &mut Vec<(ExprId, usize)>| {
                stack.extend(args.iter().map(|&a| (a, cluster)));
            };
            match &m.expr(e).kind {
                ExprKind::Var(_) => {}
                ExprKind::Global(g) => {
                    self.node(cluster, Source::Expr(e), &format!("@{}", m.name(*g)), "component")
                }
                ExprKind::Constructor(c) | ExprKind::Op(c) => {
                    self.node(cluster, Source::Expr(e), m.name(*c), "house")
                }
                ExprKind::Literal(lit) => {
                    let text = match lit.value {
                        LiteralValue::Int(i) => i.to_string(),
                        LiteralValue::Float(f) => format!("{f}f"),
                        LiteralValue::Bool(b) => if b { "True" } else { "False" }.to_string(),
                    };
                    self.node(cluster, Source::Expr(e), &text, "plaintext");
                }
                ExprKind::Constant(i) => {
                    self.node(cluster, Source::Expr(e), &format!("meta[relay.Constant][{i}]"), "note")
                }
                ExprKind::Tuple(fields) => {
                    self.node(cluster, Source::Expr(e), "tuple", "box");
                    self.operand_edges(fields, &to);
                    operands(fields, &mut stack);
                }
                ExprKind::Proj { tuple, index } => {
                    self.node(cluster, Source::Expr(e), &format!(".{index}"), "box");
                    self.operand_edges(&[*tuple], &to);
                    operands(&[*tuple], &mut stack);
                }
                ExprKind::Call { callee, args, .. } => match self.kernel(*callee) {
                    Some((var, f)) if var.is_none_or(|v| !self.drawn.contains(&v)) => {
                        self.drawn.extend(var);
                        let inner = self.clusters.len();
                        self.clusters.push(Cluster { label: "Primitive=1".into(), ..Cluster::default() });
                        self.clusters[cluster].children.push(inner);
                        for (&p, &a) in f.params.iter().zip(args) {
                            self.node(
                                inner,
                                Source::Var(p),
                                &format!("%{}", m.name(m.var(p).name)),
                                "ellipse",
                            );
                            let to = self.name(Source::Var(p));
                            self.edge(self.source(a), &to, "");
                        }
                        operands(args, &mut stack);
                        stack.push((f.body, inner));
                    }
                    _ => {
                        let kind = &m.expr(*callee).kind;
                        let (label, shape) = match kind {
                            ExprKind::Op(op) => (m.name(*op).to_string(), "box"),
                            ExprKind::Global(g) => (format!("@{}", m.name(*g)), "component"),
                            ExprKind::Constructor(c) => (m.name(*c).to_string(), "house"),
                            _ => ("call".to_string(), "Msquare"),
                        };
                        self.node(cluster, Source::Expr(e), &label, shape);
                        if !matches!(kind, ExprKind::Op(_) | ExprKind::Global(_) | ExprKind::Constructor(_)) {
                            self.operand_edges(&[*callee], &to);
                            stack.push((*callee, cluster));
                        }
                        self.operand_edges(args, &to);
                        operands(args, &mut stack);
                    }
                },
                ExprKind::Let { var, body, .. } if self.kernels.contains_key(var) => {
                    stack.push((*body, cluster))
                }
                ExprKind::Let { var, value, body } => {
                    self.node(
                        cluster,
                        Source::Var(*var),
                        &format!("let %{}", m.name(m.var(*var).name)),
                        "cds",
                    );
                    let to = self.name(Source::Var(*var));
                    self.operand_edges(&[*value], &to);
                    stack.push((*body, cluster));
                    stack.push((*value, cluster));
                }
                ExprKind::If { cond, then_branch, else_branch } => {
                    self.node(cluster, Source::Expr(e), "if", "diamond");
                    self.operand_edges(&[*cond], &to);
                    self.branch_edges(&[*then_branch, *else_branch], &to);
                    operands(&[*cond, *then_branch, *else_branch], &mut stack);
                }
                ExprKind::Match { scrutinee, arms, .. } => {
                    self.node(cluster, Source::Expr(e), "match", "Mdiamond");
                    self.operand_edges(&[*scrutinee], &to);
                    for arm in arms {
                        for v in pattern_vars(m, arm.pattern) {
                            let to = self.name(Source::Var(v));
                            self.node(
                                cluster,
                                Source::Var(v),
                                &format!("%{}", m.name(m.var(v).name)),
                                "ellipse",
                            );
                            // Labelled with what the variable binds, not the match's type.
                            let ty = self.types.var(v).map(|t| print_type(m, t)).unwrap_or_default();
                            let from = self.name(Source::Expr(e));
                            self.edges
                                .push(format!("{from} -> {to} [label=\"{}\", style=dotted];", escape(&ty)));
                        }
                    }
                    let bodies: Vec<ExprId> = arms.iter().map(|a| a.body).collect();
                    self.branch_edges(&bodies, &to);
                    operands(&[*scrutinee], &mut stack);
                    operands(&bodies, &mut stack);
                }
                ExprKind::Function(_) => self.node(cluster, Source::Expr(e), "fn", "tab"),
                ExprKind::RefNew(x) | ExprKind::RefRead(x) => {
                    let label =
                        if matches!(m.expr(e).kind, ExprKind::RefNew(_)) { "ref" } else { "ref_read" };
                    self.node(cluster, Source::Expr(e), label, "box");
                    self.operand_edges(&[*x], &to);
                    operands(&[*x], &mut stack);
                }
                ExprKind::RefWrite { cell, value } => {
                    self.node(cluster, Source::Expr(e), "ref_write", "box");
                    self.operand_edges(&[*cell, *value], &to);
                    operands(&[*cell, *value], &mut stack);
                }
            }
        }
    }

    fn operand_edges(&mut self, args: &[ExprId], to: &str) {
        for &a in args {
            self.edge(self.source(a), to, "");
        }
    }

    fn branch_edges(&mut self, bodies: &[ExprId], to: &str) {
        for &b in bodies {
            self.edge(self.source(b), to, ", style=dashed");
        }
    }

    /// The function's cluster (named `label`) with its nested fused clusters, then the edges.
    fn finish(self, label: &str) -> String {
        let mut out = String::new();
        self.write_cluster(&mut out, 0, label, 1);
        for e in &self.edges {
            let _ = writeln!(out, "  {e}");
        }
        out
    }

    fn write_cluster(&self, out: &mut String, i: usize, label: &str, depth: usize) {
        let pad = "  ".repeat(depth);
        let c = &self.clusters[i];
        let _ = writeln!(out, "{pad}subgraph cluster_{}_{i} {{", self.prefix);
        let _ = writeln!(out, "{pad}  label=\"{}\";", escape(label));
        if i > 0 {
            let _ = writeln!(out, "{pad}  style=filled; fillcolor=\"#eef3ff\";");
        }
        for n in &c.nodes {
            let _ = writeln!(out, "{pad}  {n}");
        }
        for &child in &c.children {
            self.write_cluster(out, child, &self.clusters[child].label, depth + 1);
        }
        let _ = writeln!(out, "{pad}}}");
    }
}

/// `s` as the inside of a DOT double-quoted string: quotes and backslashes escaped, line
/// breaks as `\n`.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::test_util::checked;

    fn count(dot: &str, pat: &str) -> usize {
        dot.lines().filter(|l| l.contains(pat)).count()
    }

    #[test]
    fn operators_lets_and_control_flow_are_nodes_with_typed_edges() {
        let (m, types) = checked(
            "def @main(%x: float32, %c: bool) -> float32 {
               let %y = add(%x, 1f);
               if (%c) { negative(%y) } else { %y }
             }",
        );
        let dot = to_dot(&m, &types, None);
        assert!(dot.starts_with("digraph relay {"), "{dot}");
        assert_eq!(count(&dot, "subgraph cluster_"), 1, "{dot}");
        // %x, %c, the result, let %y, add, 1f, if, negative.
        assert_eq!(count(&dot, "shape="), 8, "{dot}");
        assert_eq!(count(&dot, "shape=cds"), 1, "{dot}");
        assert_eq!(count(&dot, "shape=diamond"), 1, "{dot}");
        // x->add, 1f->add, add->let, c->if, negative->if, y->if, y->negative, if->result.
        assert_eq!(count(&dot, " -> "), 8, "{dot}");
        assert_eq!(count(&dot, "style=dashed"), 2, "{dot}");
        assert!(dot.contains("label=\"float32\""), "{dot}");
    }

    #[test]
    fn match_binds_its_pattern_variables() {
        let (m, types) = checked(
            "type Option[A] { Some(A), None }
             def @main(%o: Option[float32]) -> float32 {
               match (%o) { Some(%v) => negative(%v), None => 0f }
             }",
        );
        let dot = to_dot(&m, &types, None);
        // %o, the result, match, %v, negative, 0f.
        assert_eq!(count(&dot, "shape="), 6, "{dot}");
        assert_eq!(count(&dot, "style=dotted"), 1, "{dot}");
        assert!(dot.contains("[label=\"float32\", style=dotted]"), "{dot}");
    }

    #[test]
    fn fused_groups_are_nested_clusters() {
        let (m, types) = checked(
            "def @main(%x: float32) -> float32 {
               (fn (%p: float32, Primitive=1) -> float32 { negative(add(%p, %p)) })(%x)
             }",
        );
        let dot = to_dot(&m, &types, None);
        assert_eq!(count(&dot, "subgraph cluster_"), 2, "{dot}");
        assert_eq!(count(&dot, "label=\"Primitive=1\""), 1, "{dot}");
        // x->p, p->add twice, add->negative, negative->result.
        assert_eq!(count(&dot, " -> "), 5, "{dot}");
    }

    #[test]
    fn labels_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
