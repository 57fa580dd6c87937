//! Canonical forms (TVM's `FTVMQnnCanonicalize`): an operator that is not itself a kernel
//! worth fusing rewrites one call into ordinary Relay operators, which then fuse. The
//! `QnnCanonicalize` pass ([`crate::pass::qnn_canonicalize`]) calls the rule of every operator
//! that has one, through a [`Builder`] over the module that makes the new nodes.

use super::{AttrReader, RelType};
use crate::ir::{AttrValue, Attrs, ConstantData, ExprId, ExprKind, Literal, LiteralValue, Module, Span};
use relay_devices::DType;

/// A canonical form: `(builder, the call's arguments, their types) -> the new expression`, or
/// why this call stays as it is (it then runs its operator's reference kernel). The call's
/// attributes are read through [`Builder::attrs`].
pub type CanonicalizeFn = fn(&mut Builder<'_>, &[ExprId], &[RelType]) -> Result<ExprId, String>;

/// Makes the nodes of one call's canonical form, at the call's span.
pub struct Builder<'m> {
    m: &'m mut Module,
    attrs: Attrs,
    span: Span,
}

impl<'m> Builder<'m> {
    /// A builder for the canonical form of a call with attributes `attrs` at `span`.
    pub fn new(m: &'m mut Module, attrs: Attrs, span: Span) -> Builder<'m> {
        Builder { m, attrs, span }
    }

    /// The attributes of the call being rewritten.
    pub fn attrs(&self) -> AttrReader<'_> {
        AttrReader::new(&self.m.symbols, &self.attrs)
    }

    /// A call of operator `op` with attributes `attrs`.
    pub fn call(&mut self, op: &str, args: Vec<ExprId>, attrs: Vec<(&str, AttrValue)>) -> ExprId {
        let attrs = attrs.into_iter().map(|(k, v)| (self.m.symbols.intern(k), v)).collect();
        self.call_with(op, args, Attrs(attrs))
    }

    /// A call of operator `op` with the rewritten call's attributes, those named in
    /// `replaced` set to the given values (a `qnn.conv2d`'s attributes on its `nn.conv2d`).
    pub fn call_forwarding(
        &mut self,
        op: &str,
        args: Vec<ExprId>,
        replaced: Vec<(&str, AttrValue)>,
    ) -> ExprId {
        let mut attrs = self.attrs.clone();
        for (k, v) in replaced {
            let key = self.m.symbols.intern(k);
            attrs.0.retain(|(old, _)| *old != key);
            attrs.0.push((key, v));
        }
        self.call_with(op, args, attrs)
    }

    fn call_with(&mut self, op: &str, args: Vec<ExprId>, attrs: Attrs) -> ExprId {
        let name = self.m.symbols.intern(op);
        let callee = self.m.add_expr(ExprKind::Op(name), self.span);
        self.m.add_expr(ExprKind::Call { callee, args, attrs }, self.span)
    }

    /// `cast(x, dtype)`.
    pub fn cast(&mut self, x: ExprId, dtype: DType) -> ExprId {
        self.call("cast", vec![x], vec![("dtype", AttrValue::Str(dtype.to_string()))])
    }

    /// The integer scalar `v` of `dtype`.
    pub fn int(&mut self, v: i64, dtype: DType) -> ExprId {
        self.m.add_expr(ExprKind::Literal(Literal { value: LiteralValue::Int(v), dtype }), self.span)
    }

    /// A tensor constant of `dtype` and `shape` holding `data` row-major (a literal when
    /// `shape` is empty). The values are stored as `f64`: integers beyond 2^53 are not exact.
    pub fn constant(&mut self, dtype: DType, shape: Vec<i64>, data: Vec<f64>) -> ExprId {
        if let ([], [v]) = (shape.as_slice(), data.as_slice()) {
            let value = if dtype.is_float() { LiteralValue::Float(*v) } else { LiteralValue::Int(*v as i64) };
            return self.m.add_expr(ExprKind::Literal(Literal { value, dtype }), self.span);
        }
        self.m.constants.push(ConstantData { dtype, shape, data });
        self.m.add_expr(ExprKind::Constant((self.m.constants.len() - 1) as u32), self.span)
    }

    /// Whether `e` is a literal or a metadata constant (a weight an `AlterOpLayout` rule
    /// transforms once, by `FoldConstant`), without copying its data.
    pub fn is_constant(&self, e: ExprId) -> bool {
        matches!(self.m.expr(e).kind, ExprKind::Literal(_) | ExprKind::Constant(_))
    }

    /// Field `i` of tuple `e`: the field itself when `e` is a tuple expression (so a constant
    /// field stays visible to [`Builder::value`]), else a projection.
    pub fn field(&mut self, e: ExprId, i: usize) -> ExprId {
        if let ExprKind::Tuple(fields) = &self.m.expr(e).kind {
            if let Some(&f) = fields.get(i) {
                return f;
            }
        }
        self.m.add_expr(ExprKind::Proj { tuple: e, index: i as u32 }, self.span)
    }

    /// The tuple of `fields`.
    pub fn tuple(&mut self, fields: Vec<ExprId>) -> ExprId {
        self.m.add_expr(ExprKind::Tuple(fields), self.span)
    }

    /// The value of `e` if it is a literal or a metadata constant (a quantization parameter
    /// the rule must know at compile time, such as a requantize's scales); `None` otherwise.
    pub fn value(&self, e: ExprId) -> Option<ConstantData> {
        match &self.m.expr(e).kind {
            ExprKind::Literal(Literal { value, dtype }) => {
                let v = match *value {
                    LiteralValue::Int(i) => i as f64,
                    LiteralValue::Float(f) => f,
                    LiteralValue::Bool(b) => f64::from(u8::from(b)),
                };
                Some(ConstantData { dtype: *dtype, shape: vec![], data: vec![v] })
            }
            ExprKind::Constant(i) => self.m.constants.get(*i as usize).cloned(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_round_trip_and_attributes_forward() {
        let mut m = Module::default();
        let key = m.symbols.intern("axis");
        let attrs = Attrs(vec![(key, AttrValue::Int(3))]);
        let mut b = Builder::new(&mut m, attrs, Span::default());
        let scalar = b.constant(DType::I64, vec![], vec![7.0]);
        let vector = b.constant(DType::F32, vec![2], vec![0.5, 2.0]);
        assert_eq!(b.value(scalar).map(|c| c.data), Some(vec![7.0]));
        assert_eq!(b.value(vector).map(|c| c.shape), Some(vec![2]));
        let call = b.call_forwarding("sum", vec![vector], vec![("keepdims", AttrValue::Bool(true))]);
        assert_eq!(b.value(call), None);
        let pair = b.tuple(vec![scalar, call]);
        let first = b.field(pair, 0);
        assert_eq!(b.value(first).map(|c| c.data), Some(vec![7.0]));
        let projected = b.field(call, 1);
        assert_ne!(projected, call);
        assert_eq!(b.attrs().int("axis", 0), Ok(3));
        let ExprKind::Call { attrs, .. } = &m.expr(call).kind else { panic!("not a call") };
        assert_eq!(attrs.0.len(), 2);
    }
}
