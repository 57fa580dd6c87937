//! [`KernelBuilder`]: the way compute rules write kernels.

use super::{
    BufferDecl, BufferId, BufferRole, Expr, Extent, Index, Kernel, LocalDecl, LocalId, LoopKind, Stmt,
    SymDecl, SymId, VarDecl, VarId, VerifyError,
};
use relay_devices::DType;

/// Builds a [`Kernel`] statement by statement; loops and conditionals take closures that
/// build their bodies.
///
/// ```
/// use relay_kir::{Expr, Extent, KernelBuilder, LoopKind};
/// use relay_devices::DType;
///
/// // y[i, j] = max(x[i, j] + b[j], 0) over x: float32[n, 8], b: float32[8]
/// let mut k = KernelBuilder::new("bias_relu");
/// let n = k.sym("n");
/// let x = k.input("x", DType::F32, [Extent::Sym(n), Extent::Const(8)]);
/// let b = k.input("b", DType::F32, [8]);
/// let y = k.output("y", DType::F32, [Extent::Sym(n), Extent::Const(8)]);
/// k.for_(n, LoopKind::Serial, |k, i| {
///     k.for_(8, LoopKind::Vectorize, |k, j| {
///         let v = k.load(x, &[i.clone(), j.clone()]) + k.load(b, &[j.clone()]);
///         k.store_at(y, &[i.clone(), j], v.max(Expr::f32(0.0)));
///     });
/// });
/// let kernel = k.finish().unwrap();
/// assert_eq!(kernel.num_inputs(), 2);
/// ```
#[derive(Debug)]
pub struct KernelBuilder {
    kernel: Kernel,
    blocks: Vec<Vec<Stmt>>,
}

impl KernelBuilder {
    /// An empty kernel called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        let kernel = Kernel {
            name: name.into(),
            buffers: Vec::new(),
            syms: Vec::new(),
            locals: Vec::new(),
            vars: Vec::new(),
            body: Vec::new(),
        };
        KernelBuilder { kernel, blocks: vec![Vec::new()] }
    }

    /// Declares a runtime size parameter (callers pass syms in declaration order).
    pub fn sym(&mut self, name: impl Into<String>) -> SymId {
        self.kernel.syms.push(SymDecl { name: name.into() });
        SymId(self.kernel.syms.len() as u32 - 1)
    }

    fn buffer<E: Into<Extent>>(
        &mut self,
        name: impl Into<String>,
        role: BufferRole,
        dtype: DType,
        shape: impl IntoIterator<Item = E>,
    ) -> BufferId {
        let shape = shape.into_iter().map(Into::into).collect();
        self.kernel.buffers.push(BufferDecl { name: name.into(), role, dtype, shape });
        BufferId(self.kernel.buffers.len() as u32 - 1)
    }

    /// Declares an input parameter (parameters are passed inputs first, each group in
    /// declaration order).
    pub fn input<E: Into<Extent>>(
        &mut self,
        name: impl Into<String>,
        dtype: DType,
        shape: impl IntoIterator<Item = E>,
    ) -> BufferId {
        self.buffer(name, BufferRole::Input, dtype, shape)
    }

    /// Declares an output parameter.
    pub fn output<E: Into<Extent>>(
        &mut self,
        name: impl Into<String>,
        dtype: DType,
        shape: impl IntoIterator<Item = E>,
    ) -> BufferId {
        self.buffer(name, BufferRole::Output, dtype, shape)
    }

    /// Declares a scratch buffer, allocated zero-filled for each call.
    pub fn temp<E: Into<Extent>>(
        &mut self,
        name: impl Into<String>,
        dtype: DType,
        shape: impl IntoIterator<Item = E>,
    ) -> BufferId {
        self.buffer(name, BufferRole::Temp, dtype, shape)
    }

    /// Declares a scalar local (zero at kernel entry).
    pub fn local(&mut self, name: impl Into<String>, dtype: DType) -> LocalId {
        self.kernel.locals.push(LocalDecl { name: name.into(), dtype });
        LocalId(self.kernel.locals.len() as u32 - 1)
    }

    /// The declared shape of `buf` (empty for an undeclared id).
    pub fn shape(&self, buf: BufferId) -> &[Extent] {
        self.kernel.buffer(buf).map_or(&[], |b| &b.shape)
    }

    /// The flat row-major index of element `indices` of `buf`.
    ///
    /// `indices` address the *trailing* dimensions, aligned right as in NumPy broadcasting:
    /// extra leading indices are ignored, missing leading ones are 0, and a dimension of
    /// constant extent 1 is always indexed by 0. So the output indices of a broadcasting op
    /// address each of its operands directly: for `b: float32[1, 8]`,
    /// `at(b, &[n, i, j]) == j`.
    pub fn at(&self, buf: BufferId, indices: &[Index]) -> Index {
        let shape = self.shape(buf);
        let skip = indices.len().saturating_sub(shape.len());
        let offset = shape.len().saturating_sub(indices.len());
        let mut flat = Index::Const(0);
        for (d, &extent) in shape.iter().enumerate() {
            let i = match (extent, d.checked_sub(offset)) {
                (Extent::Const(1), _) | (_, None) => Index::Const(0),
                (_, Some(k)) => indices[skip + k].clone(),
            };
            flat = flat * Index::from(extent) + i;
        }
        flat
    }

    /// `buf[at(buf, indices)]`.
    pub fn load(&self, buf: BufferId, indices: &[Index]) -> Expr {
        Expr::load(buf, self.at(buf, indices))
    }

    /// The dtype of `e` (checking its types and ids).
    pub fn dtype_of(&self, e: &Expr) -> Result<DType, VerifyError> {
        self.kernel.dtype_of(e)
    }

    /// The dtype of `buf`, if declared.
    pub fn buffer_dtype(&self, buf: BufferId) -> Option<DType> {
        self.kernel.buffer(buf).map(|b| b.dtype)
    }

    /// Appends a statement to the current block.
    pub fn push(&mut self, stmt: Stmt) {
        if let Some(block) = self.blocks.last_mut() {
            block.push(stmt);
        }
    }

    fn block(&mut self, build: impl FnOnce(&mut Self)) -> Vec<Stmt> {
        self.blocks.push(Vec::new());
        build(self);
        self.blocks.pop().unwrap_or_default()
    }

    /// `for iN in 0..extent { body }`; `body` gets the loop variable as an index.
    pub fn for_(&mut self, extent: impl Into<Index>, kind: LoopKind, body: impl FnOnce(&mut Self, Index)) {
        let name = format!("i{}", self.kernel.vars.len());
        self.for_named(name, extent, kind, body);
    }

    /// [`KernelBuilder::for_`] with a chosen variable name (for printing).
    pub fn for_named(
        &mut self,
        name: impl Into<String>,
        extent: impl Into<Index>,
        kind: LoopKind,
        body: impl FnOnce(&mut Self, Index),
    ) {
        self.kernel.vars.push(VarDecl { name: name.into() });
        let var = VarId(self.kernel.vars.len() as u32 - 1);
        let body = self.block(|k| body(k, Index::Var(var)));
        self.push(Stmt::For { var, extent: extent.into(), kind, body });
    }

    /// `buf[index] = value`.
    pub fn store(&mut self, buf: BufferId, index: impl Into<Index>, value: Expr) {
        self.push(Stmt::Store { buf, index: index.into(), value });
    }

    /// `buf[at(buf, indices)] = value`.
    pub fn store_at(&mut self, buf: BufferId, indices: &[Index], value: Expr) {
        let index = self.at(buf, indices);
        self.store(buf, index, value);
    }

    /// `out[i·n + j] = Σ_p a[i·k + p] · b(j, p)`, the whole of `b` stored `[n, k]` when
    /// `trans_b` and `[k, n]` otherwise ([`Stmt::Gemm`], `float32`).
    #[allow(clippy::too_many_arguments)]
    pub fn gemm(&mut self, out: BufferId, a: BufferId, b: BufferId, m: i64, n: i64, k: i64, trans_b: bool) {
        let b_rows =
            super::RowOffsets::uniform(if trans_b { n } else { k }, super::gemm_b_row(n, k, trans_b));
        self.push(Stmt::Gemm { out, a, b, b_offset: Index::Const(0), b_rows, m, n, k, trans_b });
    }

    /// `out[i·n + j] = Σ_p a[i·k + p] · b[b_offset + row(p) + j]`: the product with the `[k, n]`
    /// matrix whose rows start at `b_rows`' offsets from element `b_offset` of `b`
    /// ([`Stmt::Gemm`], `float32`; for example one tile of a convolution's output positions:
    /// a block of a row-major matrix, `[(k, ldb)]`, or windows of a padded image).
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_block(
        &mut self,
        out: BufferId,
        a: BufferId,
        (b, b_offset, b_rows): (BufferId, Index, super::RowOffsets),
        m: i64,
        n: i64,
        k: i64,
    ) {
        self.push(Stmt::Gemm { out, a, b, b_offset, b_rows, m, n, k, trans_b: false });
    }

    /// `local = value`.
    pub fn assign(&mut self, local: LocalId, value: Expr) {
        self.push(Stmt::Assign { local, value });
    }

    /// `if cond { then }`.
    pub fn if_then(&mut self, cond: Expr, then: impl FnOnce(&mut Self)) {
        self.if_else(cond, then, |_| {});
    }

    /// `if cond { then } else { otherwise }`.
    pub fn if_else(&mut self, cond: Expr, then: impl FnOnce(&mut Self), otherwise: impl FnOnce(&mut Self)) {
        let then = self.block(then);
        let otherwise = self.block(otherwise);
        self.push(Stmt::If { cond, then, otherwise });
    }

    /// The kernel, verified, with its indices simplified ([`super::simplify_indices`]) and
    /// its whole-buffer copies removed ([`super::eliminate_copies`], which needs the simple
    /// indices), so the printer, the structural hash, serialization and every backend see
    /// one form.
    pub fn finish(mut self) -> Result<Kernel, VerifyError> {
        self.kernel.body = self.blocks.swap_remove(0);
        // Verify first: it bounds the nesting the simplifier recurses over, and the rewrites
        // keep every id, scope and dtype.
        self.kernel.verify()?;
        super::simplify_indices(&mut self.kernel);
        super::eliminate_copies(&mut self.kernel);
        Ok(self.kernel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_flattens_row_major_and_broadcasts() {
        let mut k = KernelBuilder::new("t");
        let n = k.sym("n");
        let a = k.input("a", DType::F32, [Extent::Sym(n), 3.into(), 4.into()]);
        let b = k.input("b", DType::F32, [1, 4]);
        let [i, j, l] = [0, 1, 2].map(|v| Index::Var(VarId(v)));
        let flat = k.at(a, &[i.clone(), j.clone(), l.clone()]);
        assert_eq!(flat, (i.clone() * 3 + j.clone()) * 4 + l.clone());
        assert_eq!(k.at(b, &[i, j, l.clone()]), l);
        assert_eq!(k.at(b, &[]), Index::Const(0));
    }

    #[test]
    fn finish_verifies() {
        let mut k = KernelBuilder::new("t");
        let x = k.input("x", DType::F32, [4]);
        k.for_(4, LoopKind::Serial, |k, i| k.store(x, i, Expr::f32(1.0)));
        assert_eq!(k.finish(), Err(VerifyError::StoreToInput("x".into())));
    }
}
