//! The executable: bytecode functions, constants, kernel descriptors and the type
//! information a host needs to pass values in and read them out.

use crate::isa::Instr;
use crate::spans::SpanTable;
use relay_devices::{DType, Tensor};

/// A type as the executable records it, for converting host values (JSON) to and from VM
/// values.
#[derive(Clone, Debug, PartialEq)]
pub enum ValueType {
    /// A tensor; `None` dimensions are `?`.
    Tensor {
        /// Element type.
        dtype: DType,
        /// Dimensions (`None` = known only at run time).
        shape: Vec<Option<i64>>,
    },
    /// A tuple.
    Tuple(Vec<ValueType>),
    /// An ADT applied to type arguments, by name (see [`AdtInfo`]).
    Adt {
        /// The ADT's name.
        name: String,
        /// Its type arguments.
        args: Vec<ValueType>,
    },
    /// A function.
    Func,
    /// A reference cell.
    Ref(Box<ValueType>),
    /// A type parameter, by name.
    Param(String),
}

/// One constructor of an ADT.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstructorInfo {
    /// The constructor's name (`Cons`).
    pub name: String,
    /// Field types, mentioning the ADT's type parameters as [`ValueType::Param`].
    pub fields: Vec<ValueType>,
}

/// An algebraic data type; a constructor's tag is its index here.
#[derive(Clone, Debug, PartialEq)]
pub struct AdtInfo {
    /// The ADT's name (`List`).
    pub name: String,
    /// Type parameter names.
    pub type_params: Vec<String>,
    /// Constructors in tag order.
    pub constructors: Vec<ConstructorInfo>,
}

/// An attribute value of a kernel descriptor.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A string.
    Str(String),
    /// A list.
    List(Vec<Attr>),
    /// Explicitly absent.
    Null,
}

/// What a kernel of the executable computes; the host turns it into a [`crate::PackedFunc`].
#[derive(Clone, Debug, PartialEq)]
pub struct KernelDesc {
    /// The operator name (`add`, `nn.dense`).
    pub op: String,
    /// The call's attributes.
    pub attrs: Vec<(String, Attr)>,
    /// Number of inputs.
    pub num_inputs: u32,
    /// Number of outputs.
    pub num_outputs: u32,
    /// A compiled kernel body for the host to JIT (the encoding of a kir kernel, opaque to
    /// the VM); `None`: the host binds the reference kernel of `op`.
    pub kernel: Option<Vec<u8>>,
}

/// A bytecode function.
#[derive(Clone, Debug, PartialEq)]
pub struct VmFunction {
    /// The global's name (lifted closures get generated names).
    pub name: String,
    /// Where it is defined, as `file:line:col` (a lifted closure: its `fn`); empty when
    /// unknown. Shown in a [`Trap`](crate::Trap)'s call stack.
    pub source: String,
    /// Parameter names, for binding named inputs (e.g. weights from safetensors).
    pub param_names: Vec<String>,
    /// Parameter types.
    pub param_types: Vec<ValueType>,
    /// Result type.
    pub ret_type: ValueType,
    /// Registers the frame needs (parameters are the first `param_names.len()`).
    pub num_regs: u32,
    /// The code.
    pub code: Vec<Instr>,
    /// The source position of each instruction of `code` (empty when unknown). Shown in a
    /// [`Trap`](crate::Trap)'s call stack.
    pub spans: SpanTable,
}

impl VmFunction {
    /// Number of parameters.
    pub fn num_params(&self) -> u32 {
        self.param_names.len() as u32
    }
}

/// A compiled program: what `relay-vm compile` writes and `relay-vm run` loads.
///
/// `Send + Sync`: one executable may serve many threads, each with its own [`crate::Vm`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Executable {
    /// Functions; globals keep their names.
    pub functions: Vec<VmFunction>,
    /// Constant tensors (`LoadConst`).
    pub constants: Vec<Tensor>,
    /// Kernel descriptors (`InvokePacked`).
    pub kernels: Vec<KernelDesc>,
    /// Messages of `Fatal`.
    pub strings: Vec<String>,
    /// ADT definitions, for reading ADT values out by constructor name.
    pub adts: Vec<AdtInfo>,
}

impl Executable {
    /// The index of the function named `name`.
    pub fn function_index(&self, name: &str) -> Option<usize> {
        self.functions.iter().position(|f| f.name == name)
    }

    /// The ADT named `name`.
    pub fn adt(&self, name: &str) -> Option<&AdtInfo> {
        self.adts.iter().find(|a| a.name == name)
    }

    /// A listing of every function's bytecode (functions named as in Relay, `@name`, in the
    /// header and in operands) and of the kernel list (`kernel#N`, as `InvokePacked` names them).
    pub fn disassemble(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let names = self.function_names();
        for f in &self.functions {
            write_function(&mut out, f, &names);
        }
        for (i, k) in self.kernels.iter().enumerate() {
            let fused = if k.kernel.is_some() { " fused" } else { "" };
            let _ =
                writeln!(out, "kernel#{i} {} inputs={} outputs={}{fused}", k.op, k.num_inputs, k.num_outputs);
        }
        out
    }

    /// The bytecode of function number `index` alone, as [`Executable::disassemble`] prints
    /// it; `None` when there is no such function.
    pub fn disassemble_function(&self, index: usize) -> Option<String> {
        let f = self.functions.get(index)?;
        let mut out = String::new();
        write_function(&mut out, f, &self.function_names());
        Some(out)
    }

    /// Every function's name, by index (how operands name their callees).
    fn function_names(&self) -> Vec<String> {
        self.functions.iter().map(|f| f.name.clone()).collect()
    }
}

/// Writes function `f` and its code, one instruction per line, naming callees by `names`.
fn write_function(out: &mut String, f: &VmFunction, names: &[String]) {
    use std::fmt::Write;
    let _ = writeln!(out, "fn @{}({}) regs={}", f.name, f.param_names.join(", "), f.num_regs);
    for (pc, ins) in f.code.iter().enumerate() {
        let _ = writeln!(out, "  {pc:4}: {}", ins.display(names));
    }
}
