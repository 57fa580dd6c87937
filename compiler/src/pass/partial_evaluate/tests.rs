//! Unit tests of the partial evaluator (the goldens in `tests/relay/pass/PartialEvaluate`
//! show whole programs).

use super::*;
use crate::pass::util::test_util::{checked, ops, print};

fn pe(text: &str) -> String {
    let (mut m, types) = checked(text);
    partial_evaluate(&mut m, &types, &ops()).unwrap();
    crate::ty::infer_types(&mut m, &ops()).unwrap();
    print(&mut m)
}

#[test]
fn a_known_closure_is_inlined() {
    let out = pe("def @main(%x: float32) -> float32 {
                    let %f = fn (%y: float32) -> float32 { add(%y, 1f) };
                    %f(%x)
                  }");
    assert!(out.contains("add(%x, 1f)"), "{out}");
    assert!(!out.contains("fn ("), "{out}");
}

#[test]
fn polymorphic_prelude_functions_stay_well_typed() {
    // `@rev` unfolds `@foldl` and `@flip(Cons)`: the `Cons` of the closure and of the
    // unfolded call are separate nodes, each with its own instance of the type.
    let text = "type List[A] { Cons(A, List[A]), Nil }
        def @foldl[A, B](%f: fn (A, B) -> A, %acc: A, %xs: List[B]) -> A {
          match (%xs) { Cons(%x, %rest) => @foldl(%f, %f(%acc, %x), %rest), Nil => %acc }
        }
        def @flip[A, B, C](%f: fn (A, B) -> C) -> fn (B, A) -> C { fn (%b: B, %a: A) -> C { %f(%a, %b) } }
        def @rev[A](%xs: List[A]) -> List[A] { @foldl(@flip(Cons), Nil, %xs) }";
    let out = pe(text);
    assert!(out.contains("@foldl(%f, %v, %rest)"), "the recursion on a dynamic list stays a call: {out}");
}

#[test]
fn a_loop_past_the_unfold_bound_stays_a_call() {
    // A counter of 300 steps known at compile time, more than MAX_UNFOLD_DEPTH allows: after
    // the unrolled steps the rest of the loop is a call of the unspecialised function.
    let n = format!("{}Z{}", "S(".repeat(300), ")".repeat(300));
    let out = pe(&format!(
        "type Nat {{ Z, S(Nat) }}
         def @count(%n: Nat, %acc: float32) -> float32 {{
           match (%n) {{ S(%m) => @count(%m, negative(%acc)), Z => %acc }}
         }}
         def @main(%x: float32) -> float32 {{ @count({n}, %x) }}"
    ));
    let main = &out[out.find("def @main").unwrap_or(0)..];
    assert_eq!(main.matches("@count(").count(), 1, "{main}");
    let unrolled = main.matches("negative(").count();
    assert!((MAX_UNFOLD_DEPTH - 2..MAX_UNFOLD_DEPTH).contains(&unrolled), "{unrolled} steps: {main}");
}

#[test]
fn known_cell_contents_are_read_without_a_read_and_writes_stay() {
    let out = pe("def @main(%x: float32) -> float32 {
                    let %r = ref(%x);
                    let %w = ref_write(%r, negative(%x));
                    ref_read(%r)
                  }");
    assert!(out.contains("ref(%x)") && out.contains("ref_write(%r, %v)"), "{out}");
    assert!(!out.contains("ref_read"), "{out}");
}
