//! A BERT encoder's forward pass: embeddings, then each layer's self-attention and
//! feed-forward block, each followed by a residual and a layer normalisation, as Hugging Face
//! `transformers`' `BertModel` computes it in inference (no dropout).

use registry_core::search::EmbedError;
use safetensors::{Dtype, SafeTensors};

use crate::config::{Encoder, Pooling};
use crate::matmul::Linear;

/// A layer normalisation's scale and shift.
struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value as one product (their outputs side by side).
    qkv: Linear,
    output: Linear,
    output_norm: Norm,
    up: Linear,
    down: Linear,
    down_norm: Norm,
}

/// The weights of an encoder, and its forward pass.
pub(crate) struct Bert {
    encoder: Encoder,
    words: Vec<f32>,
    positions: Vec<f32>,
    /// The embedding of token type 0, the only type a single text has.
    token_type: Vec<f32>,
    norm: Norm,
    layers: Vec<Layer>,
}

impl std::fmt::Debug for Bert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bert")
            .field("encoder", &self.encoder)
            .finish_non_exhaustive()
    }
}

/// The tensors of a safetensors file, by name, with or without a `bert.` prefix.
struct Tensors<'a> {
    file: SafeTensors<'a>,
    prefix: &'static str,
}

impl Tensors<'_> {
    /// The tensor `name`, as `f32`s, checked to have `shape`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let full = format!("{}{name}", self.prefix);
        let tensor = self.file.tensor(&full).map_err(|_| {
            EmbedError::new(format!(
                "model.safetensors has no tensor `{full}`, which a BERT encoder of this \
                 config.json needs: is the file from another model than config.json?"
            ))
        })?;
        if tensor.shape() != shape {
            return Err(EmbedError::new(format!(
                "model.safetensors: tensor `{full}` has shape {:?}, config.json says {shape:?}: \
                 the weights and config.json are of different models",
                tensor.shape()
            )));
        }
        let data = tensor.data();
        let values: Vec<f32> = match tensor.dtype() {
            Dtype::F32 => data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::F16 => data
                .chunks_exact(2)
                .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
            Dtype::BF16 => data
                .chunks_exact(2)
                .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
                .collect(),
            other => {
                return Err(EmbedError::new(format!(
                    "model.safetensors: tensor `{full}` holds {other:?} values: F32, F16 and BF16 \
                     are taken"
                )));
            }
        };
        if values.iter().any(|value| !value.is_finite()) {
            return Err(EmbedError::new(format!(
                "model.safetensors: tensor `{full}` holds a value that is not a finite number"
            )));
        }
        Ok(values)
    }

    fn norm(&self, name: &str, hidden: usize) -> Result<Norm, EmbedError> {
        Ok(Norm {
            weight: self.get(&format!("{name}.weight"), &[hidden])?,
            bias: self.get(&format!("{name}.bias"), &[hidden])?,
        })
    }

    fn linear(&self, name: &str, outputs: usize, inputs: usize) -> Result<Linear, EmbedError> {
        let weight = self.get(&format!("{name}.weight"), &[outputs, inputs])?;
        let bias = self.get(&format!("{name}.bias"), &[outputs])?;
        Ok(Linear::new(&weight, bias, outputs, inputs))
    }
}

/// An IEEE half-precision value as `f32`.
fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let fraction = u32::from(bits & 0x3ff);
    let value = match (exponent, fraction) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: fraction · 2^-24.
            let magnitude = fraction as f32 * f32::from_bits(0x3380_0000);
            return if sign == 0 { magnitude } else { -magnitude };
        }
        (0x1f, _) => sign | 0x7f80_0000 | (fraction << 13),
        _ => sign | ((exponent + 112) << 23) | (fraction << 13),
    };
    f32::from_bits(value)
}

impl Bert {
    /// Reads the encoder's weights from the bytes of `model.safetensors`, checking every
    /// tensor's presence, shape and values against `encoder`.
    pub(crate) fn load(bytes: &[u8], encoder: &Encoder) -> Result<Bert, EmbedError> {
        let file = SafeTensors::deserialize(bytes).map_err(|error| {
            EmbedError::new(format!(
                "model.safetensors is not a safetensors file: {error}"
            ))
        })?;
        let prefix = if file.tensor("embeddings.word_embeddings.weight").is_ok() {
            ""
        } else {
            "bert."
        };
        let tensors = Tensors { file, prefix };
        let h = encoder.hidden;
        let words = tensors.get(
            "embeddings.word_embeddings.weight",
            &[encoder.vocabulary, h],
        )?;
        let positions = tensors.get(
            "embeddings.position_embeddings.weight",
            &[encoder.positions, h],
        )?;
        let mut token_type = tensors.get(
            "embeddings.token_type_embeddings.weight",
            &[encoder.token_types, h],
        )?;
        token_type.truncate(h);
        let norm = tensors.norm("embeddings.LayerNorm", h)?;
        let mut layers = Vec::with_capacity(encoder.layers);
        for layer in 0..encoder.layers {
            let name = |part: &str| format!("encoder.layer.{layer}.{part}");
            let part = |what: &str| -> Result<(Vec<f32>, Vec<f32>), EmbedError> {
                let at = name(&format!("attention.self.{what}"));
                Ok((
                    tensors.get(&format!("{at}.weight"), &[h, h])?,
                    tensors.get(&format!("{at}.bias"), &[h])?,
                ))
            };
            let (q, k, v) = (part("query")?, part("key")?, part("value")?);
            layers.push(Layer {
                qkv: Linear::stacked(&[(&q.0, &q.1), (&k.0, &k.1), (&v.0, &v.1)], h, h),
                output: tensors.linear(&name("attention.output.dense"), h, h)?,
                output_norm: tensors.norm(&name("attention.output.LayerNorm"), h)?,
                up: tensors.linear(&name("intermediate.dense"), encoder.intermediate, h)?,
                down: tensors.linear(&name("output.dense"), h, encoder.intermediate)?,
                down_norm: tensors.norm(&name("output.LayerNorm"), h)?,
            });
        }
        Ok(Bert {
            encoder: encoder.clone(),
            words,
            positions,
            token_type,
            norm,
            layers,
        })
    }

    /// Bytes of memory the weights hold.
    pub(crate) fn bytes(&self) -> usize {
        let floats = self.words.len() + self.positions.len() + self.token_type.len();
        let norms = 2 * self.encoder.hidden * (1 + 2 * self.layers.len());
        (floats + norms) * 4
            + self
                .layers
                .iter()
                .map(|l| l.qkv.bytes() + l.output.bytes() + l.up.bytes() + l.down.bytes())
                .sum::<usize>()
    }

    /// The encoder's width: the length of a token's vector.
    pub(crate) fn hidden(&self) -> usize {
        self.encoder.hidden
    }

    /// The vocabulary's size: every token id is below it.
    pub(crate) fn vocabulary(&self) -> usize {
        self.encoder.vocabulary
    }

    /// The pooled vector of the tokens `ids` (at most the encoder's positions, each below its
    /// vocabulary: the caller checked), its products shared among `threads` threads of the
    /// current rayon pool.
    pub(crate) fn embed(&self, ids: &[u32], pooling: &Pooling, threads: usize) -> Vec<f32> {
        let ids = &ids[..ids.len().min(self.encoder.positions)];
        let states = self.forward(ids, threads);
        pool(&states, self.encoder.hidden, pooling)
    }

    /// The last layer's vector of every token.
    fn forward(&self, ids: &[u32], threads: usize) -> Vec<f32> {
        let h = self.encoder.hidden;
        let n = ids.len();
        let mut x = Vec::with_capacity(n * h);
        for (position, id) in ids.iter().enumerate() {
            let word = &self.words[*id as usize * h..][..h];
            let place = &self.positions[position * h..][..h];
            x.extend(
                word.iter()
                    .zip(place)
                    .zip(&self.token_type)
                    .map(|((w, p), t)| w + p + t),
            );
        }
        normalize(&mut x, &self.norm, self.encoder.epsilon);
        let heads = self.encoder.heads;
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        let (mut qkv, mut context, mut scores, mut head) =
            (Vec::new(), vec![0.0; n * h], Vec::new(), Vec::new());
        let (mut projected, mut up, mut down) = (Vec::new(), Vec::new(), Vec::new());
        for layer in &self.layers {
            layer.qkv.forward_on(&x, &mut qkv, threads);
            for head_index in 0..heads {
                let offset = head_index * d;
                // scores = Q_h · K_hᵀ / √d, each row a softmax.
                let queries: Vec<f32> = qkv
                    .chunks_exact(3 * h)
                    .flat_map(|row| row[offset..offset + d].iter().map(|q| q * scale))
                    .collect();
                Linear::rows_of(&qkv, 3 * h, h + offset, n, d).forward(&queries, &mut scores);
                for row in scores.chunks_exact_mut(n) {
                    softmax(row);
                }
                // context_h = P · V_h.
                Linear::transposed(&qkv, 3 * h, 2 * h + offset, n, d).forward(&scores, &mut head);
                for (row, values) in head.chunks_exact(d).enumerate() {
                    context[row * h + offset..row * h + offset + d].copy_from_slice(values);
                }
            }
            layer.output.forward_on(&context, &mut projected, threads);
            add(&mut projected, &x);
            normalize(&mut projected, &layer.output_norm, self.encoder.epsilon);
            std::mem::swap(&mut x, &mut projected);
            layer.up.forward_on(&x, &mut up, threads);
            gelu(&mut up);
            layer.down.forward_on(&up, &mut down, threads);
            add(&mut down, &x);
            normalize(&mut down, &layer.down_norm, self.encoder.epsilon);
            std::mem::swap(&mut x, &mut down);
        }
        x
    }
}

fn add(values: &mut [f32], residual: &[f32]) {
    values.iter_mut().zip(residual).for_each(|(v, r)| *v += r);
}

/// Layer normalisation of each row, its statistics in `f64`.
#[allow(
    clippy::cast_possible_truncation,
    reason = "f64 statistics rounded back to f32 values"
)]
fn normalize(x: &mut [f32], norm: &Norm, epsilon: f32) {
    let h = norm.weight.len();
    for row in x.chunks_exact_mut(h) {
        let mean = row.iter().map(|v| f64::from(*v)).sum::<f64>() / h as f64;
        let variance = row
            .iter()
            .map(|v| (f64::from(*v) - mean).powi(2))
            .sum::<f64>()
            / h as f64;
        let inverse = 1.0 / (variance + f64::from(epsilon)).sqrt();
        for ((value, weight), bias) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *value = ((f64::from(*value) - mean) * inverse) as f32 * weight + bias;
        }
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for value in row.iter_mut() {
        *value = (*value - max).exp();
        sum += *value;
    }
    row.iter_mut().for_each(|value| *value /= sum);
}

/// BERT's exact GELU, `x · Φ(x) = x/2 · (1 + erf(x/√2))`, on every value: the error function
/// as the rational function Eigen and XLA use for `f32` (within 4.2e-7 of `erf` everywhere,
/// `gelu_is_the_exact_one` checks it against `libm::erff`). A plain loop of products and one
/// division, which the compiler turns into vector instructions: `libm::erff` a value at a
/// time cost a tenth of a query's time.
fn gelu(values: &mut [f32]) {
    const P: [f32; 7] = [
        -2.726_142_3e-10,
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_6e-3,
        -1.609_603_3e-2,
    ];
    const Q: [f32; 5] = [
        -1.456_607_2e-5,
        -2.133_740_6e-4,
        -1.682_827e-3,
        -7.373_329_2e-3,
        -1.426_474e-2,
    ];
    for value in values {
        let x = *value;
        let t = (x * std::f32::consts::FRAC_1_SQRT_2).clamp(-4.0, 4.0);
        let t2 = t * t;
        let p = P.iter().skip(1).fold(P[0], |p, c| p * t2 + c) * t;
        let q = Q.iter().skip(1).fold(Q[0], |q, c| q * t2 + c);
        *value = 0.5 * x * (1.0 + p / q);
    }
}

/// The sentence vector of `states` (one row of `hidden` values per token) as `pooling` says:
/// its modes side by side in sentence-transformers' order (CLS, max, mean, mean·√n), then
/// normalised to length 1 if it says so.
#[allow(
    clippy::cast_possible_truncation,
    reason = "f64 sums rounded back to f32 values"
)]
pub(crate) fn pool(states: &[f32], hidden: usize, pooling: &Pooling) -> Vec<f32> {
    let n = states.len() / hidden;
    let mut out = Vec::with_capacity(hidden * pooling.parts());
    if pooling.cls {
        out.extend_from_slice(&states[..hidden]);
    }
    if pooling.max {
        let mut max = vec![f32::NEG_INFINITY; hidden];
        for row in states.chunks_exact(hidden) {
            max.iter_mut().zip(row).for_each(|(m, v)| *m = m.max(*v));
        }
        out.extend(max);
    }
    if pooling.mean || pooling.mean_sqrt_len {
        let mut sum = vec![0.0f64; hidden];
        for row in states.chunks_exact(hidden) {
            sum.iter_mut()
                .zip(row)
                .for_each(|(s, v)| *s += f64::from(*v));
        }
        if pooling.mean {
            out.extend(sum.iter().map(|s| (s / n as f64) as f32));
        }
        if pooling.mean_sqrt_len {
            out.extend(sum.iter().map(|s| (s / (n as f64).sqrt()) as f32));
        }
    }
    if pooling.normalize {
        let norm = out
            .iter()
            .map(|v| f64::from(*v).powi(2))
            .sum::<f64>()
            .sqrt();
        // sentence-transformers divides by max(norm, 1e-12).
        let norm = norm.max(1e-12) as f32;
        out.iter_mut().for_each(|v| *v /= norm);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_values_are_read_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
        assert_eq!(f16_to_f32(0x8000), -0.0);
        assert!(f16_to_f32(0x7c00).is_infinite());
    }

    #[test]
    fn pooling_follows_its_modes() {
        let states = [1.0, 2.0, 3.0, 6.0];
        let mean = Pooling {
            cls: false,
            max: false,
            mean: true,
            mean_sqrt_len: false,
            normalize: false,
        };
        assert_eq!(pool(&states, 2, &mean), [2.0, 4.0]);
        let all = Pooling {
            cls: true,
            max: true,
            mean: true,
            mean_sqrt_len: true,
            normalize: false,
        };
        let pooled = pool(&states, 2, &all);
        assert_eq!(&pooled[..6], [1.0, 2.0, 3.0, 6.0, 2.0, 4.0]);
        assert!((pooled[6] - 4.0 / 2f32.sqrt()).abs() < 1e-6);
        let unit = Pooling {
            normalize: true,
            ..mean
        };
        let pooled = pool(&states, 2, &unit);
        assert!((pooled[0] - 2.0 / 20f32.sqrt()).abs() < 1e-6);
    }

    #[test]
    fn gelu_is_the_exact_one() {
        let xs: Vec<f32> = (-12_000..=12_000).map(|i| i as f32 / 1000.0).collect();
        let mut values = xs.clone();
        gelu(&mut values);
        for (x, value) in xs.iter().zip(&values) {
            let exact = f64::from(*x)
                * 0.5
                * (1.0 + f64::from(libm::erff(x * std::f32::consts::FRAC_1_SQRT_2)));
            assert!(
                (f64::from(*value) - exact).abs() <= 4e-6 * f64::from(x.abs()).max(1e-3),
                "gelu({x}) = {value}, not {exact}"
            );
        }
        let mut one = [1.0f32, 0.0, -3.0];
        gelu(&mut one);
        // x · Φ(x) at 1: Φ(1) = 0.841344746.
        assert!((one[0] - 0.841_344_7).abs() < 1e-6);
        assert_eq!(one[1], 0.0);
        assert!((one[2] + 0.004_049_5).abs() < 1e-6);
    }
}
