//! Matching a value against a `match` arm's pattern: constructor patterns compare tags,
//! tuple patterns take fields in order, variables bind, `_` matches anything. Patterns
//! nest as deeply as they are written, and are walked with a work list.

use relay_compiler::ir::{Module, PatId, PatternKind, VarId};
use relay_runtime::Value;

/// Whether `v` matches pattern `p`; on a match, `bindings` gets the value of each pattern
/// variable (on a mismatch it may hold some: the caller discards them).
///
/// # Errors
/// When a constructor or tuple pattern meets a value of another kind, or a constructor
/// pattern names no constructor: the program and the value disagree on the type.
pub(super) fn matches(
    m: &Module,
    p: PatId,
    v: &Value,
    bindings: &mut Vec<(VarId, Value)>,
) -> Result<bool, String> {
    let mut work = vec![(p, v.clone())];
    while let Some((p, v)) = work.pop() {
        let fields = match &m.pattern(p).kind {
            PatternKind::Wildcard => continue,
            PatternKind::Var(x) => {
                bindings.push((*x, v));
                continue;
            }
            PatternKind::Constructor { name, args } => {
                let con =
                    m.constructor(*name).ok_or_else(|| format!("no constructor `{}`", m.name(*name)))?;
                let Value::Adt(a) = &v else {
                    return Err(format!("pattern `{}` met a {}", m.name(*name), v.kind()));
                };
                if a.tag != con.tag {
                    return Ok(false);
                }
                args
            }
            PatternKind::Tuple(args) => args,
        };
        let Value::Adt(a) = &v else { return Err(format!("a tuple pattern met a {}", v.kind())) };
        if a.fields.len() != fields.len() {
            return Err(format!("a pattern of {} field(s) met a value of {}", fields.len(), a.fields.len()));
        }
        work.extend(fields.iter().copied().zip(a.fields.iter().cloned()));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use relay_compiler::ir::ExprKind;
    use relay_runtime::ScalarValue;

    #[test]
    fn nested_constructor_patterns_bind_or_fail() {
        let checked = crate::check(
            "t.relay",
            "def @f(%xs: List[Option[int32]]) -> int32 { match (%xs) { Cons(Some(%x), _) => %x, _ => 0 } }",
        )
        .unwrap();
        let m = &checked.module;
        let body = m.function_by_name("f").unwrap().func.body;
        let ExprKind::Match { arms, .. } = &m.expr(body).kind else { panic!("not a match") };
        let tag = |name: &str| m.constructor(m.symbols.get(name).unwrap()).unwrap().tag;
        let seven = Value::Scalar(ScalarValue::int(relay_devices::DType::I32, 7));
        let nil = Value::adt(tag("Nil"), vec![]);
        let some = Value::adt(tag("Some"), vec![seven]);
        let list = Value::adt(tag("Cons"), vec![some, nil.clone()]);
        let mut bound = vec![];
        assert_eq!(matches(m, arms[0].pattern, &list, &mut bound), Ok(true));
        assert_eq!(bound.len(), 1);
        assert!(matches!(bound[0].1, Value::Scalar(s) if s.as_i64() == 7));
        assert_eq!(matches(m, arms[0].pattern, &nil, &mut vec![]), Ok(false));
        assert_eq!(matches(m, arms[1].pattern, &nil, &mut vec![]), Ok(true));
        assert!(matches(m, arms[0].pattern, &Value::tuple(vec![]), &mut vec![]).is_err());
    }
}
