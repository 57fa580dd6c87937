//! Parse and print throughput of the text format on a generated module of about 50,000
//! lines: many definitions with `let` chains, operator calls with attributes, tensor types,
//! graph bindings, `match` and `if`. Throughput is in bytes of text, so criterion reports
//! MB/s.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use relay_compiler::syntax::parse_module;
use relay_compiler::syntax::printer::print_module;
use std::fmt::Write;
use std::hint::black_box;

/// Lines per generated definition, roughly.
const LINES_PER_DEF: usize = 46;

/// One definition `@f{i}`; it calls `@f{i-1}`, so every global is used.
fn def(text: &mut String, i: usize) {
    let t = "Tensor[(1, 64), float32]";
    let _ = writeln!(
        text,
        "def @f{i}(%x: {t}, %w: Tensor[(64, 64), float32], %xs: List[{t}], %c: bool) -> {t} {{"
    );
    let _ = writeln!(text, "  let %a0: {t} = nn.dense(%x, %w, units=64);");
    for k in 1..30 {
        let prev = k - 1;
        let line = match k % 5 {
            0 => format!("  let %a{k} = add(%a{prev}, 1.5f);"),
            1 => format!("  let %a{k}: {t} = nn.relu(%a{prev});"),
            2 => format!("  let %a{k} = nn.bias_add(%a{prev}, %a0, axis=1);"),
            3 => format!(
                "  let %a{k} = nn.conv2d(%a{prev}, %w, padding=[1, 1, 1, 1], data_layout=\"NCHW\", kernel_layout=\"OIHW\");"
            ),
            _ => format!("  let %a{k} = clip(%a{prev}, a_min=-1e-05f, a_max=6f);"),
        };
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str("  %0 = multiply(%a29, %a29);\n");
    text.push_str("  let %r = match (%xs) {\n");
    text.push_str("    Cons(%h, %tail) => {\n      add(%h, %0)\n    },\n");
    text.push_str("    Nil => {\n      %0\n    },\n  };\n");
    let other = if i == 0 { 0 } else { i - 1 };
    text.push_str("  if (%c) {\n    %r\n  } else {\n");
    let _ = writeln!(text, "    @f{other}(%r, %w, Cons(%0, %xs), False)");
    text.push_str("  }\n}\n\n");
}

fn module_text(lines: usize) -> String {
    let mut text = String::from("#[version = \"0.0.5\"]\ntype List[A] {\n  Cons(A, List[A]),\n  Nil,\n}\n\n");
    for i in 0..lines / LINES_PER_DEF {
        def(&mut text, i);
    }
    text
}

fn bench(c: &mut Criterion) {
    let text = module_text(50_000);
    let module = match parse_module("bench.relay", &text) {
        Ok(m) => m,
        Err(e) => panic!("the generated module does not parse: {e}"),
    };
    let printed = print_module(&module, None);
    eprintln!(
        "module: {} lines, {} bytes; printed: {} bytes",
        text.lines().count(),
        text.len(),
        printed.len()
    );

    let mut group = c.benchmark_group("text");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("parse", |b| b.iter(|| parse_module("bench.relay", black_box(&text))));
    group.throughput(Throughput::Bytes(printed.len() as u64));
    group.bench_function("print", |b| b.iter(|| print_module(black_box(&module), None)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
