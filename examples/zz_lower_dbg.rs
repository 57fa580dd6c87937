fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let (mut m, file) = relay::parse(&path, &text).unwrap();
    let ops = relay::stdlib::op_registry();
    relay::compiler::pass::lower_for_vm(&mut m, &ops).unwrap();
    println!("{}", relay::compiler::syntax::printer::print_module(&m, Some(file)));
}
