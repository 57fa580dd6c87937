//! Random elementwise/broadcast expression trees over random shapes: the JIT must match
//! the kir interpreter within a relative tolerance of 1e-4 (the JIT contracts `a * b + c`
//! into FMAs and approximates transcendentals; see `approx.rs` for their error).

mod common;

use common::{args, assert_close, run_both};
use proptest::prelude::*;
use relay_devices::DType;
use relay_kir::{BinOp, BufferId, Expr, Extent, Index, KernelBuilder, LoopKind, UnOp};

const TOL: f64 = 1e-4;

#[derive(Clone, Debug)]
enum Node {
    Input(usize),
    Const(f32),
    Unary(UnOp, Box<Node>),
    Binary(BinOp, Box<Node>, Box<Node>),
    /// `a < b ? c : d`.
    Select(Box<[Node; 4]>),
}

fn node(inputs: usize) -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![(0..inputs).prop_map(Node::Input), (-3.0f32..3.0).prop_map(Node::Const)];
    leaf.prop_recursive(4, 24, 3, |inner| {
        let unary = prop::sample::select(vec![
            UnOp::Neg,
            UnOp::Abs,
            UnOp::Tanh,
            UnOp::Sigmoid,
            UnOp::Exp,
            UnOp::Log,
            UnOp::Sqrt,
            UnOp::Erf,
        ]);
        let binary = prop::sample::select(vec![
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::Div,
            BinOp::Max,
            BinOp::Min,
        ]);
        prop_oneof![
            (unary, inner.clone()).prop_map(|(op, a)| Node::Unary(op, Box::new(a))),
            (binary, inner.clone(), inner.clone()).prop_map(|(op, a, b)| Node::Binary(
                op,
                Box::new(a),
                Box::new(b)
            )),
            [inner.clone(), inner.clone(), inner.clone(), inner].prop_map(|n| Node::Select(Box::new(n))),
        ]
    })
}

/// The expression of `n`, with domains kept where the functions are tame: `exp` of at
/// most 10, `log` and `sqrt` of `|x| + 0.5`, division by `|x| + 0.5`.
fn lower(n: &Node, loads: &[Expr]) -> Expr {
    let half = || Expr::f32(0.5);
    match n {
        Node::Input(i) => loads[*i].clone(),
        Node::Const(c) => Expr::f32(*c),
        Node::Unary(UnOp::Exp, a) => lower(a, loads).min(Expr::f32(10.0)).exp(),
        Node::Unary(op @ (UnOp::Log | UnOp::Sqrt), a) => (lower(a, loads).abs() + half()).unary(*op),
        Node::Unary(op, a) => lower(a, loads).unary(*op),
        Node::Binary(BinOp::Div, a, b) => lower(a, loads) / (lower(b, loads).abs() + half()),
        Node::Binary(op, a, b) => lower(a, loads).binary(*op, lower(b, loads)),
        Node::Select(n) => {
            let [a, b, c, d] = n.as_ref();
            Expr::select(lower(a, loads).lt(lower(b, loads)), lower(c, loads), lower(d, loads))
        }
    }
}

/// An output shape and, per input, which output dimensions it broadcasts (size 1) and how
/// many leading dimensions it lacks.
fn shapes() -> impl Strategy<Value = (Vec<i64>, Vec<(Vec<bool>, usize)>)> {
    prop::collection::vec(0i64..7, 1..=3).prop_flat_map(|out| {
        let rank = out.len();
        let input = (prop::collection::vec(any::<bool>(), rank), 0..rank);
        (Just(out), prop::collection::vec(input, 1..=3))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn jit_matches_interpreter(
        (out_shape, inputs, tree) in shapes().prop_flat_map(|(out, inputs)| {
            let n = inputs.len();
            (Just(out), Just(inputs), node(n))
        }),
        vectorize in any::<bool>(),
        symbolic_last in any::<bool>(),
        data_seed in any::<u64>(),
    ) {
        let mut k = KernelBuilder::new("random");
        let rank = out_shape.len();
        let last = k.sym("last");
        let dim = |d: usize| -> Extent {
            if symbolic_last && d == rank - 1 { Extent::Sym(last) } else { Extent::Const(out_shape[d]) }
        };
        let bufs: Vec<BufferId> = inputs
            .iter()
            .enumerate()
            .map(|(i, (ones, missing))| {
                let shape: Vec<Extent> =
                    (*missing..rank).map(|d| if ones[d] { Extent::Const(1) } else { dim(d) }).collect();
                k.input(format!("x{i}"), DType::F32, shape)
            })
            .collect();
        let out = k.output("y", DType::F32, (0..rank).map(dim).collect::<Vec<_>>());
        fn nest(k: &mut KernelBuilder, d: usize, idx: &mut Vec<Index>, extents: &[Extent], kind: LoopKind,
                body: &dyn Fn(&mut KernelBuilder, &[Index])) {
            if d == extents.len() {
                return body(k, idx);
            }
            let loop_kind = if d + 1 == extents.len() { kind } else { LoopKind::Serial };
            k.for_(extents[d], loop_kind, |k, i| {
                idx.push(i);
                nest(k, d + 1, idx, extents, kind, body);
                idx.pop();
            });
        }
        let extents: Vec<Extent> = (0..rank).map(dim).collect();
        let kind = if vectorize { LoopKind::Vectorize } else { LoopKind::Serial };
        nest(&mut k, 0, &mut Vec::new(), &extents, kind, &|k, idx| {
            let loads: Vec<Expr> = bufs.iter().map(|&b| k.load(b, idx)).collect();
            k.store_at(out, idx, lower(&tree, &loads));
        });
        let kernel = k.finish().unwrap();
        let syms = [out_shape[rank - 1]];
        let (ins, outs) = args(&kernel, &syms, data_seed);
        let (expected, actual, _) = run_both(&kernel, &ins, &outs, &syms);
        assert_close(&expected, &actual, TOL);
    }
}
