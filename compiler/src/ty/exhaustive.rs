//! Exhaustiveness of `match` (a non-exhaustive `match` is an error listing the missing
//! patterns; `match?` allows it). Maranget's usefulness algorithm over the pattern matrix,
//! producing witnesses: "Warnings for pattern matching", JFP 2007, §3.

use crate::ir::{Module, PatId, PatternKind, Symbol};

/// A pattern with variables erased: all that matters for coverage.
#[derive(Clone, Debug)]
enum Pat {
    Wild,
    Ctor(Symbol, Vec<Pat>),
    Tuple(Vec<Pat>),
}

/// Most missing patterns listed in one diagnostic.
const MAX_WITNESSES: usize = 5;

/// The patterns (as Relay text) that no arm covers, at most [`MAX_WITNESSES`]; empty when the
/// arms are exhaustive.
pub(crate) fn missing_patterns(m: &Module, arms: &[PatId]) -> Vec<String> {
    let rows: Vec<Vec<Pat>> = arms.iter().map(|&p| vec![lower(m, p)]).collect();
    let mut out = vec![];
    uncovered(m, &rows, 1, &mut out);
    out.into_iter().map(|w| show(m, &w[0])).collect()
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

/// Appends to `out` value vectors of width `n` that no row of `rows` matches.
fn uncovered(m: &Module, rows: &[Vec<Pat>], n: usize, out: &mut Vec<Vec<Pat>>) {
    if out.len() >= MAX_WITNESSES {
        return;
    }
    if n == 0 {
        if rows.is_empty() {
            out.push(vec![]);
        }
        return;
    }
    crate::stack::grow(|| {
        let head = rows.iter().find_map(|r| match &r[0] {
            Pat::Wild => None,
            p => Some(p.clone()),
        });
        match head {
            Some(Pat::Tuple(fields)) => {
                let k = fields.len();
                let spec = specialize(rows, k, |p| match p {
                    Pat::Tuple(ps) => Some(ps.clone()),
                    _ => None,
                });
                for mut w in sub_witnesses(m, &spec, n - 1 + k, out.len()) {
                    let rest = w.split_off(k);
                    out.push(std::iter::once(Pat::Tuple(w)).chain(rest).collect());
                }
            }
            Some(Pat::Ctor(name, _)) => {
                let all = sibling_constructors(m, name);
                for (ctor, arity) in all {
                    let spec = specialize(rows, arity, |p| match p {
                        Pat::Ctor(c, ps) if *c == ctor => Some(ps.clone()),
                        _ => None,
                    });
                    for mut w in sub_witnesses(m, &spec, n - 1 + arity, out.len()) {
                        let rest = w.split_off(arity);
                        out.push(std::iter::once(Pat::Ctor(ctor, w)).chain(rest).collect());
                    }
                }
            }
            _ => {
                let default: Vec<Vec<Pat>> =
                    rows.iter().filter(|r| matches!(r[0], Pat::Wild)).map(|r| r[1..].to_vec()).collect();
                for w in sub_witnesses(m, &default, n - 1, out.len()) {
                    out.push(std::iter::once(Pat::Wild).chain(w).collect());
                }
            }
        }
    });
    out.truncate(MAX_WITNESSES);
}

fn sub_witnesses(m: &Module, rows: &[Vec<Pat>], n: usize, found: usize) -> Vec<Vec<Pat>> {
    let mut sub = Vec::new();
    if found < MAX_WITNESSES {
        uncovered(m, rows, n, &mut sub);
        sub.truncate(MAX_WITNESSES - found);
    }
    sub
}

/// Rows whose first column matches the constructor, with its fields spliced in; wildcard rows
/// contribute `arity` wildcards.
fn specialize(rows: &[Vec<Pat>], arity: usize, fields: impl Fn(&Pat) -> Option<Vec<Pat>>) -> Vec<Vec<Pat>> {
    rows.iter()
        .filter_map(|r| {
            let head = match &r[0] {
                Pat::Wild => vec![Pat::Wild; arity],
                p => fields(p)?,
            };
            // A constructor pattern with the wrong field count was reported by inference;
            // treat it as matching nothing rather than misaligning the columns.
            (head.len() == arity).then(|| head.into_iter().chain(r[1..].iter().cloned()).collect())
        })
        .collect()
}

/// Every constructor of the ADT that `ctor` belongs to, with field counts.
fn sibling_constructors(m: &Module, ctor: Symbol) -> Vec<(Symbol, usize)> {
    let adt = m.constructor(ctor).and_then(|c| m.type_def(c.adt));
    match adt {
        Some(def) => {
            def.constructors.iter().map(|&c| (c, m.constructor(c).map_or(0, |d| d.fields.len()))).collect()
        }
        None => vec![(ctor, 0)],
    }
}

fn show(m: &Module, p: &Pat) -> String {
    match p {
        Pat::Wild => "_".to_string(),
        Pat::Ctor(c, ps) if ps.is_empty() => m.name(*c).to_string(),
        Pat::Ctor(c, ps) => {
            format!("{}({})", m.name(*c), ps.iter().map(|q| show(m, q)).collect::<Vec<_>>().join(", "))
        }
        Pat::Tuple(ps) if ps.len() == 1 => format!("({},)", show(m, &ps[0])),
        Pat::Tuple(ps) => format!("({})", ps.iter().map(|q| show(m, q)).collect::<Vec<_>>().join(", ")),
    }
}
