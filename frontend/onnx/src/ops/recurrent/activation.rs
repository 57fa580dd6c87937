//! The activation functions of the recurrent operators (`activations`, with their
//! `activation_alpha`/`activation_beta`), as Relay expressions.

use crate::dtype;
use crate::error::ImportError;
use crate::node::Node;
use relay_devices::DType;

/// One activation function of a recurrent cell, with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    Sigmoid,
    Tanh,
    Relu,
    /// `x` if `x >= 0` else `alpha * x`.
    LeakyRelu(f64),
    /// `x` if `x > alpha` else 0.
    ThresholdedRelu(f64),
    /// `alpha * tanh(beta * x)`.
    ScaledTanh(f64, f64),
    /// `max(0, min(1, alpha * x + beta))`.
    HardSigmoid(f64, f64),
    /// `x` if `x >= 0` else `alpha * (e^x - 1)`.
    Elu(f64),
    /// `x / (1 + |x|)`.
    Softsign,
    /// `log(1 + e^x)`.
    Softplus,
    /// `alpha * x + beta`.
    Affine(f64, f64),
}

impl Activation {
    /// The activations `names` of all directions, in order, taking their parameters from
    /// `alphas` and `betas` one after another as each function needs them (onnxruntime's
    /// reading: the lists hold only the parameters used). A parameter the lists have run out
    /// of takes the ONNX operator's default where it has one (LeakyRelu 0.01, HardSigmoid 0.2
    /// and 0.5, Elu 1.0).
    ///
    /// # Errors
    /// An unknown function, or one whose parameter is missing and has no default.
    pub fn parse(
        node: &Node,
        names: &[&str],
        alphas: &[f32],
        betas: &[f32],
    ) -> Result<Vec<Activation>, ImportError> {
        let (mut alphas, mut betas) =
            (alphas.iter().map(|&a| f64::from(a)), betas.iter().map(|&b| f64::from(b)));
        let missing = |name: &str, what: &str| {
            node.error(format!("activation `{name}` needs a value in attribute `activation_{what}`"))
        };
        names
            .iter()
            .map(|&name| {
                let mut alpha =
                    |default: Option<f64>| alphas.next().or(default).ok_or_else(|| missing(name, "alpha"));
                Ok(match name {
                    "Sigmoid" => Activation::Sigmoid,
                    "Tanh" => Activation::Tanh,
                    "Relu" => Activation::Relu,
                    "LeakyRelu" => Activation::LeakyRelu(alpha(Some(0.01))?),
                    "ThresholdedRelu" => Activation::ThresholdedRelu(alpha(None)?),
                    "Elu" => Activation::Elu(alpha(Some(1.0))?),
                    "Softsign" => Activation::Softsign,
                    "Softplus" => Activation::Softplus,
                    "ScaledTanh" | "HardSigmoid" | "Affine" => {
                        let default = (name == "HardSigmoid").then_some((0.2, 0.5));
                        let a = alpha(default.map(|d| d.0))?;
                        let b = betas.next().or(default.map(|d| d.1)).ok_or_else(|| missing(name, "beta"))?;
                        match name {
                            "ScaledTanh" => Activation::ScaledTanh(a, b),
                            "HardSigmoid" => Activation::HardSigmoid(a, b),
                            _ => Activation::Affine(a, b),
                        }
                    }
                    other => {
                        return Err(node.error(format!("attribute `activations`: `{other}` is not supported")))
                    }
                })
            })
            .collect()
    }

    /// Whether the expression reads its operand more than once (the caller binds it first).
    pub fn reads_twice(self) -> bool {
        matches!(
            self,
            Activation::LeakyRelu(_)
                | Activation::ThresholdedRelu(_)
                | Activation::Elu(_)
                | Activation::Softsign
        )
    }

    /// The function applied to `x`, a `dtype` tensor.
    pub fn apply(self, x: &str, dtype: DType) -> String {
        let l = |v: f64| dtype::literal(dtype, v);
        match self {
            Activation::Sigmoid => format!("sigmoid({x})"),
            Activation::Tanh => format!("tanh({x})"),
            Activation::Relu => format!("nn.relu({x})"),
            Activation::LeakyRelu(a) => format!("where(less({x}, {}), multiply({}, {x}), {x})", l(0.0), l(a)),
            Activation::ThresholdedRelu(a) => format!("where(greater({x}, {}), {x}, zeros_like({x}))", l(a)),
            Activation::ScaledTanh(a, b) => format!("multiply({}, tanh(multiply({}, {x})))", l(a), l(b)),
            Activation::HardSigmoid(a, b) => {
                format!("clip(add(multiply({}, {x}), {}), a_min=0.0, a_max=1.0)", l(a), l(b))
            }
            Activation::Elu(a) => {
                format!(
                    "where(less({x}, {}), multiply({}, subtract(exp({x}), {})), {x})",
                    l(0.0),
                    l(a),
                    l(1.0)
                )
            }
            Activation::Softsign => format!("divide({x}, add({}, abs({x})))", l(1.0)),
            Activation::Softplus => format!("log(add({}, exp({x})))", l(1.0)),
            Activation::Affine(a, b) => format!("add(multiply({}, {x}), {})", l(a), l(b)),
        }
    }
}
