//! `match` compiled to a decision tree (Maranget, "Compiling pattern matching to good decision
//! trees", ML 2008): each node switches on the constructor tag at one position of the
//! scrutinee; leaves jump to the arm. Arm bodies are emitted once each, so nothing is
//! duplicated; an arm binds its variables from their fixed positions when it is entered.
//! A position is loaded once per path through the tree (a switch deeper in the scrutinee
//! reuses the fields its ancestors loaded), and an arm reached from one leaf only binds its
//! variables from what that path loaded: each `GetField` clones a value. A position of a
//! type with one constructor is not switched on at all: there is nothing to test.

use super::emit::{Dest, FnEmitter};
use crate::diagnostics::Diagnostic;
use crate::ir::{MatchArm, Module, PatId, PatternKind, Symbol, VarId};
use relay_runtime::{Imm, Instr, Reg, Target};

/// A position in the scrutinee: field indices from the root.
type Path = Vec<u32>;

/// A pattern with variables dropped (they are bound per arm, by path).
#[derive(Clone, Debug)]
enum Pat {
    Wild,
    Ctor(Symbol, Vec<Pat>),
    Tuple(Vec<Pat>),
}

/// The tests a row still has to pass, and its arm.
#[derive(Clone, Debug)]
struct Row {
    cols: Vec<(Path, Pat)>,
    arm: usize,
}

enum Tree {
    Leaf(usize),
    Fail,
    Switch { path: Path, cases: Vec<Tree> },
}

/// Emits `match (scrutinee) { arms }` into `dest`.
pub(crate) fn compile_match(
    em: &mut FnEmitter<'_, '_>,
    scrut: Reg,
    arms: &[MatchArm],
    dest: Dest,
) -> Result<(), Diagnostic> {
    let m = em.cx.m;
    let rows: Vec<Row> = arms
        .iter()
        .enumerate()
        .map(|(i, a)| normalize(Row { cols: vec![(vec![], lower(m, a.pattern))], arm: i }))
        .collect();
    let tree = build(m, rows);
    let mut walk = Walk { arm_jumps: vec![], leaves: vec![Leaves::None; arms.len()], loaded: vec![] };
    walk.emit_tree(em, scrut, &tree);
    let Walk { arm_jumps, leaves, .. } = walk;

    let mut arm_label = vec![Target(0); arms.len()];
    let mut ends = vec![];
    for (i, arm) in arms.iter().enumerate() {
        let mut loaded = match &leaves[i] {
            Leaves::None => continue,
            Leaves::One(loaded) => loaded.clone(),
            Leaves::Many => vec![],
        };
        arm_label[i] = em.here();
        let mut bindings = vec![];
        bind_vars(m, arm.pattern, &mut vec![], &mut bindings);
        for (var, path) in bindings {
            let r = load(em, scrut, &path, &mut loaded);
            em.bind_var(var, r);
        }
        em.expr(arm.body, dest)?;
        if let Dest::Reg(_) = dest {
            ends.push(em.emit(Instr::Goto { target: Target(0) }));
        }
    }
    let end = em.here();
    for at in ends {
        em.patch(at, end);
    }
    for (at, slot, arm) in arm_jumps {
        let target = arm_label[arm];
        match &mut em.code[at] {
            Instr::SwitchTag { targets, .. } => targets[slot] = target,
            Instr::Goto { target: t } => *t = target,
            _ => {}
        }
    }
    Ok(())
}

fn lower(m: &Module, p: PatId) -> Pat {
    crate::stack::grow(|| match &m.pattern(p).kind {
        PatternKind::Wildcard | PatternKind::Var(_) => Pat::Wild,
        PatternKind::Constructor { name, args } => {
            Pat::Ctor(*name, args.iter().map(|&a| lower(m, a)).collect())
        }
        PatternKind::Tuple(ps) => Pat::Tuple(ps.iter().map(|&a| lower(m, a)).collect()),
    })
}

fn bind_vars(m: &Module, p: PatId, path: &mut Path, out: &mut Vec<(VarId, Path)>) {
    crate::stack::grow(|| match &m.pattern(p).kind {
        PatternKind::Wildcard => {}
        PatternKind::Var(v) => out.push((*v, path.clone())),
        PatternKind::Constructor { args: ps, .. } | PatternKind::Tuple(ps) => {
            for (i, &q) in ps.iter().enumerate() {
                path.push(i as u32);
                bind_vars(m, q, path, out);
                path.pop();
            }
        }
    })
}

/// Drops wildcard columns and splits tuple columns into their fields (tuples always match).
fn normalize(row: Row) -> Row {
    let mut cols = vec![];
    let mut work: Vec<(Path, Pat)> = row.cols.into_iter().rev().collect();
    while let Some((path, pat)) = work.pop() {
        match pat {
            Pat::Wild => {}
            Pat::Tuple(ps) => {
                for (i, q) in ps.into_iter().enumerate().rev() {
                    let mut p = path.clone();
                    p.push(i as u32);
                    work.push((p, q));
                }
            }
            ctor @ Pat::Ctor(..) => cols.push((path, ctor)),
        }
    }
    Row { cols, arm: row.arm }
}

fn build(m: &Module, rows: Vec<Row>) -> Tree {
    crate::stack::grow(|| {
        let Some(first) = rows.first() else { return Tree::Fail };
        let Some((path, Pat::Ctor(name, _))) = first.cols.first().cloned() else {
            return Tree::Leaf(first.arm);
        };
        let siblings: Vec<(Symbol, usize)> = m
            .constructor(name)
            .and_then(|c| m.type_def(c.adt))
            .map(|d| {
                d.constructors.iter().map(|&c| (c, m.constructor(c).map_or(0, |c| c.fields.len()))).collect()
            })
            .unwrap_or_else(|| vec![(name, 0)]);
        let cases =
            siblings.iter().map(|&(ctor, arity)| build(m, specialize(&rows, &path, ctor, arity))).collect();
        Tree::Switch { path, cases }
    })
}

/// The rows that can still match once the value at `path` is known to be `ctor`.
fn specialize(rows: &[Row], path: &Path, ctor: Symbol, arity: usize) -> Vec<Row> {
    rows.iter()
        .filter_map(|row| {
            let Some(i) = row.cols.iter().position(|(p, _)| p == path) else { return Some(row.clone()) };
            match &row.cols[i].1 {
                Pat::Ctor(c, subs) if *c == ctor && subs.len() == arity => {
                    let mut cols = row.cols.clone();
                    let subs: Vec<(Path, Pat)> = subs
                        .iter()
                        .enumerate()
                        .map(|(k, s)| {
                            let mut p = path.clone();
                            p.push(k as u32);
                            (p, s.clone())
                        })
                        .collect();
                    cols.splice(i..=i, subs);
                    Some(normalize(Row { cols, arm: row.arm }))
                }
                _ => None,
            }
        })
        .collect()
}

/// The leaves of the decision tree that lead to an arm.
#[derive(Clone)]
enum Leaves {
    None,
    /// One leaf, with the positions its path loaded: they hold when the arm is entered.
    One(Vec<(Path, Reg)>),
    Many,
}

/// State of the walk that emits the decision tree.
struct Walk {
    /// Jumps to arms, patched once the arms are placed: (instruction, target slot, arm).
    arm_jumps: Vec<(usize, usize, usize)>,
    leaves: Vec<Leaves>,
    /// The positions loaded on the path from the root to the current node.
    loaded: Vec<(Path, Reg)>,
}

impl Walk {
    fn emit_tree(&mut self, em: &mut FnEmitter<'_, '_>, scrut: Reg, tree: &Tree) {
        crate::stack::grow(|| match tree {
            Tree::Leaf(arm) => {
                self.reach(*arm);
                let at = em.emit(Instr::Goto { target: Target(0) });
                self.arm_jumps.push((at, 0, *arm));
            }
            Tree::Fail => {
                let name = em.name.clone();
                em.fatal(format!("no arm of a `match?` in `@{name}` matched the value"));
            }
            // A type of one constructor (a `Rose` tree node, a record-like ADT) always has
            // it: the type checker saw to that, so the switch would test nothing. Its fields
            // are loaded where a deeper switch or an arm needs them.
            Tree::Switch { cases, .. } if cases.len() == 1 => {
                if let Some(case) = cases.first() {
                    self.emit_tree(em, scrut, case);
                }
            }
            Tree::Switch { path, cases } => {
                let obj = load(em, scrut, path, &mut self.loaded);
                let depth = self.loaded.len();
                let at = em.emit(Instr::SwitchTag { obj, targets: vec![Target(0); cases.len()].into() });
                for (slot, case) in cases.iter().enumerate() {
                    if let Tree::Leaf(arm) = case {
                        self.reach(*arm);
                        self.arm_jumps.push((at, slot, *arm));
                        continue;
                    }
                    let here = em.here();
                    if let Instr::SwitchTag { targets, .. } = &mut em.code[at] {
                        targets[slot] = here;
                    }
                    self.emit_tree(em, scrut, case);
                    // A sibling's path does not pass through what this case loaded.
                    self.loaded.truncate(depth);
                }
            }
        })
    }

    /// Records that the current path reaches `arm`.
    fn reach(&mut self, arm: usize) {
        if let Some(leaves) = self.leaves.get_mut(arm) {
            *leaves = match leaves {
                Leaves::None => Leaves::One(self.loaded.clone()),
                _ => Leaves::Many,
            };
        }
    }
}

/// The register holding the value at `path` of the scrutinee: loaded with `GetField`s from
/// the longest prefix already in `loaded`, which gains every position loaded.
fn load(em: &mut FnEmitter<'_, '_>, scrut: Reg, path: &[u32], loaded: &mut Vec<(Path, Reg)>) -> Reg {
    let (mut r, mut done) = (scrut, 0);
    for (p, reg) in loaded.iter() {
        if p.len() > done && path.starts_with(p) {
            (r, done) = (*reg, p.len());
        }
    }
    for end in done + 1..=path.len() {
        let next = em.fresh();
        em.emit(Instr::GetField { dst: next, obj: r, index: Imm(path[end - 1]) });
        loaded.push((path[..end].to_vec(), next));
        r = next;
    }
    r
}
