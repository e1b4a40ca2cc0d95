//! The one product the model needs: `x · Wᵀ + b` for a few rows `x` and a matrix `W`,
//! streaming each weight from memory once.
//!
//! A sentence is short (a query is about ten tokens), so the product has few rows and the
//! weights dominate: 42 MB of them per forward pass of all-MiniLM-L6-v2. A general matrix
//! product (`gemm`, `matrixmultiply`) packs the weights on every call, and took 8 to 9 ms per
//! query on the 2-core machine this was measured on; this one keeps them packed from load, in
//! panels of [`PANEL`] output columns, and reads each panel once per call while up to
//! [`TILE`] rows of `x` accumulate in registers. A 12-token text's whole forward pass takes
//! 6.1 ms on one thread and 3.9 ms on two (`bench/embed`). The vector instructions are chosen
//! at run time (`pulp`: AVX2 and FMA on x86-64, NEON on aarch64), with a plain loop where
//! none is found.

use std::ops::Range;

use pulp::{Arch, Simd, WithSimd};

/// Output columns per panel of a packed matrix.
pub(crate) const PANEL: usize = 16;
/// Rows of `x` computed together: with [`PANEL`] columns, 6 rows of 2 AVX2 vectors are 12
/// accumulators, which with 2 weights and 1 broadcast value fill the 16 registers.
const TILE: usize = 6;

/// A matrix `W` (`outputs × inputs`) with its bias, packed: panel `p` holds, for each input
/// `k`, the [`PANEL`] values `W[p·PANEL + c][k]` (zero past the last output).
pub(crate) struct Linear {
    inputs: usize,
    outputs: usize,
    packed: Vec<f32>,
    bias: Vec<f32>,
}

impl Linear {
    /// Packs `weight` (`outputs × inputs`, row-major: a PyTorch `Linear`'s layout) and
    /// `bias` (`outputs` values). The caller has checked the lengths.
    pub(crate) fn new(weight: &[f32], bias: Vec<f32>, outputs: usize, inputs: usize) -> Linear {
        Linear {
            bias,
            ..Linear::rows_of(weight, inputs, 0, outputs, inputs)
        }
    }

    /// Packs the transpose of a block of `m`: `W[o][k] = m[k·stride + offset + o]` for
    /// `inputs` rows `k` and `outputs` columns `o`, with no bias (`P · V` in attention).
    pub(crate) fn transposed(
        m: &[f32],
        stride: usize,
        offset: usize,
        inputs: usize,
        outputs: usize,
    ) -> Linear {
        let panels = outputs.div_ceil(PANEL);
        let mut packed = vec![0.0; panels * inputs * PANEL];
        for k in 0..inputs {
            let row = &m[k * stride + offset..k * stride + offset + outputs];
            for (o, value) in row.iter().enumerate() {
                packed[(o / PANEL) * inputs * PANEL + k * PANEL + o % PANEL] = *value;
            }
        }
        Linear {
            inputs,
            outputs,
            packed,
            bias: vec![0.0; outputs],
        }
    }

    /// Packs a block of `m` as `W` itself: `W[o][k] = m[o·stride + offset + k]` for `outputs`
    /// rows `o` and `inputs` columns `k`, with no bias (`Q · Kᵀ` in attention).
    pub(crate) fn rows_of(
        m: &[f32],
        stride: usize,
        offset: usize,
        outputs: usize,
        inputs: usize,
    ) -> Linear {
        let panels = outputs.div_ceil(PANEL);
        let mut packed = vec![0.0; panels * inputs * PANEL];
        for o in 0..outputs {
            let row = &m[o * stride + offset..o * stride + offset + inputs];
            let base = (o / PANEL) * inputs * PANEL + o % PANEL;
            for (k, value) in row.iter().enumerate() {
                packed[base + k * PANEL] = *value;
            }
        }
        Linear {
            inputs,
            outputs,
            packed,
            bias: vec![0.0; outputs],
        }
    }

    /// Several matrices with the same inputs as one, their outputs side by side (query, key
    /// and value as one product).
    pub(crate) fn stacked(parts: &[(&[f32], &[f32])], outputs: usize, inputs: usize) -> Linear {
        let mut weight = Vec::with_capacity(parts.len() * outputs * inputs);
        let mut bias = Vec::with_capacity(parts.len() * outputs);
        for (w, b) in parts {
            weight.extend_from_slice(w);
            bias.extend_from_slice(b);
        }
        Linear::new(&weight, bias, parts.len() * outputs, inputs)
    }

    /// `y = x · Wᵀ + b` for the rows of `x` (each `inputs` long), on this thread: `y` gets a
    /// row of `outputs` values per row of `x`.
    pub(crate) fn forward(&self, x: &[f32], y: &mut Vec<f32>) {
        let rows = x.len() / self.inputs;
        y.clear();
        y.resize(rows * self.outputs, 0.0);
        let panels = 0..self.outputs.div_ceil(PANEL);
        self.panels(x, rows, panels, y, self.outputs);
    }

    /// [`forward`](Self::forward), its panels shared among `threads` threads of the current
    /// rayon pool when the product is large enough to gain from it.
    pub(crate) fn forward_on(&self, x: &[f32], y: &mut Vec<f32>, threads: usize) {
        let panels = self.outputs.div_ceil(PANEL);
        let threads = threads.min(panels);
        if threads < 2 || self.inputs * self.outputs < 1 << 16 {
            return self.forward(x, y);
        }
        let rows = x.len() / self.inputs;
        let per = panels.div_ceil(threads);
        let parts: Vec<(usize, Vec<f32>)> = {
            let mut parts: Vec<(usize, Vec<f32>)> = (0..threads)
                .map(|part| (part * per, Vec::new()))
                .filter(|(first, _)| *first < panels)
                .collect();
            rayon::scope(|scope| {
                for (first, out) in &mut parts {
                    let range = *first..(*first + per).min(panels);
                    scope.spawn(move |_| {
                        let width = (range.end * PANEL).min(self.outputs) - range.start * PANEL;
                        out.resize(rows * width, 0.0);
                        self.panels(x, rows, range, out, width);
                    });
                }
            });
            parts
        };
        y.clear();
        y.resize(rows * self.outputs, 0.0);
        for (first, out) in parts {
            let start = first * PANEL;
            let width = out.len() / rows.max(1);
            for (row, values) in out.chunks_exact(width.max(1)).enumerate().take(rows) {
                y[row * self.outputs + start..row * self.outputs + start + width]
                    .copy_from_slice(values);
            }
        }
    }

    /// The columns of `panels`, written to `y` (rows of `stride` values, starting at column 0
    /// for the first panel of the range).
    fn panels(&self, x: &[f32], rows: usize, panels: Range<usize>, y: &mut [f32], stride: usize) {
        Arch::new().dispatch(Product {
            linear: self,
            x,
            rows,
            panels,
            y,
            stride,
        });
    }

    /// Bytes of memory the packed matrix and its bias hold.
    pub(crate) fn bytes(&self) -> usize {
        (self.packed.len() + self.bias.len()) * std::mem::size_of::<f32>()
    }
}

impl std::fmt::Debug for Linear {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Linear({} -> {})", self.inputs, self.outputs)
    }
}

struct Product<'a> {
    linear: &'a Linear,
    x: &'a [f32],
    rows: usize,
    panels: Range<usize>,
    y: &'a mut [f32],
    stride: usize,
}

impl WithSimd for Product<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let lanes = S::F32_LANES;
        if !(4..=PANEL).contains(&lanes) || !PANEL.is_multiple_of(lanes) {
            return plain(self);
        }
        let Product {
            linear,
            x,
            rows,
            panels,
            y,
            stride,
        } = self;
        let (inputs, outputs) = (linear.inputs, linear.outputs);
        let vectors = PANEL / lanes;
        let first_panel = panels.start;
        for panel_index in panels {
            let panel = &linear.packed[panel_index * inputs * PANEL..][..inputs * PANEL];
            let first = panel_index * PANEL;
            let width = PANEL.min(outputs - first);
            let column = first - first_panel * PANEL;
            let bias = &linear.bias[first..first + width];
            let mut row = 0;
            while row < rows {
                let tile = TILE.min(rows - row);
                let mut sums = [[simd.splat_f32s(0.0); 4]; TILE];
                let xs = &x[row * inputs..(row + tile) * inputs];
                macro_rules! tiles {
                    ($(($v:literal, $r:literal)),*) => {
                        match (vectors, tile) {
                            $(($v, $r) => tile_of::<S, $r, $v>(simd, xs, inputs, panel, &mut sums),)*
                            _ => row_by_row(simd, xs, inputs, panel, &mut sums, tile, vectors),
                        }
                    };
                }
                tiles!(
                    (2, 1),
                    (2, 2),
                    (2, 3),
                    (2, 4),
                    (2, 5),
                    (2, 6),
                    (1, 1),
                    (1, 2),
                    (1, 3),
                    (1, 4),
                    (1, 5),
                    (1, 6),
                    (4, 1),
                    (4, 2),
                    (4, 3),
                    (4, 4)
                );
                for (r, sum) in sums.iter().enumerate().take(tile) {
                    let mut values = [0.0f32; PANEL];
                    let (out, _) = S::as_mut_simd_f32s(&mut values);
                    out[..vectors].copy_from_slice(&sum[..vectors]);
                    let at = (row + r) * stride + column;
                    for ((y, value), bias) in y[at..at + width].iter_mut().zip(values).zip(bias) {
                        *y = value + bias;
                    }
                }
                row += tile;
            }
        }
    }
}

/// `R` rows of `x` (`xs`, each `inputs` long) times one panel, `V` vectors wide, summed into
/// `sums`: the accumulators stay in registers.
#[inline(always)]
fn tile_of<S: Simd, const R: usize, const V: usize>(
    simd: S,
    xs: &[f32],
    inputs: usize,
    panel: &[f32],
    sums: &mut [[S::f32s; 4]; TILE],
) {
    let rows: [&[f32]; R] = std::array::from_fn(|r| &xs[r * inputs..(r + 1) * inputs]);
    let mut acc = [[simd.splat_f32s(0.0); V]; R];
    for (k, weights) in panel.chunks_exact(PANEL).enumerate().take(inputs) {
        let (weights, _) = S::as_simd_f32s(weights);
        let weights: [S::f32s; V] = std::array::from_fn(|v| weights[v]);
        for r in 0..R {
            let value = simd.splat_f32s(rows[r][k]);
            for v in 0..V {
                acc[r][v] = simd.mul_add_e_f32s(value, weights[v], acc[r][v]);
            }
        }
    }
    for r in 0..R {
        sums[r][..V].copy_from_slice(&acc[r]);
    }
}

/// Any other tile (4 vectors a panel with more than 4 rows: too many accumulators for the
/// registers), row by row.
#[inline(always)]
fn row_by_row<S: Simd>(
    simd: S,
    xs: &[f32],
    inputs: usize,
    panel: &[f32],
    sums: &mut [[S::f32s; 4]; TILE],
    tile: usize,
    vectors: usize,
) {
    for (r, sum) in sums.iter_mut().enumerate().take(tile) {
        let xs = &xs[r * inputs..(r + 1) * inputs];
        for (value, weights) in xs.iter().zip(panel.chunks_exact(PANEL)) {
            let (weights, _) = S::as_simd_f32s(weights);
            let value = simd.splat_f32s(*value);
            for v in 0..vectors {
                sum[v] = simd.mul_add_e_f32s(value, weights[v], sum[v]);
            }
        }
    }
}

/// The same product without vector instructions.
fn plain(product: Product<'_>) {
    let Product {
        linear,
        x,
        rows,
        panels,
        y,
        stride,
    } = product;
    let (inputs, outputs) = (linear.inputs, linear.outputs);
    let first_panel = panels.start;
    for panel_index in panels {
        let panel = &linear.packed[panel_index * inputs * PANEL..][..inputs * PANEL];
        let first = panel_index * PANEL;
        let width = PANEL.min(outputs - first);
        let column = first - first_panel * PANEL;
        for row in 0..rows {
            let xs = &x[row * inputs..(row + 1) * inputs];
            let mut sums = [0.0f32; PANEL];
            for (value, weights) in xs.iter().zip(panel.chunks_exact(PANEL)) {
                for (sum, weight) in sums.iter_mut().zip(weights) {
                    *sum = value.mul_add(*weight, *sum);
                }
            }
            let at = row * stride + column;
            for c in 0..width {
                y[at + c] = sums[c] + linear.bias[first + c];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected(x: &[f32], weight: &[f32], bias: &[f32], rows: usize, outputs: usize) -> Vec<f32> {
        let inputs = weight.len() / outputs;
        let mut y = Vec::new();
        for r in 0..rows {
            for o in 0..outputs {
                y.push(
                    bias[o]
                        + (0..inputs)
                            .map(|k| x[r * inputs + k] * weight[o * inputs + k])
                            .sum::<f32>(),
                );
            }
        }
        y
    }

    fn close(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len());
        for (i, (a, b)) in a.iter().zip(b).enumerate() {
            assert!((a - b).abs() < 1e-4, "value {i}: {a} against {b}");
        }
    }

    #[test]
    fn the_product_is_x_times_w_transposed_plus_b_on_every_path() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        for (rows, outputs, inputs) in [
            (1, 16, 3),
            (5, 40, 7),
            (9, 33, 64),
            (4, 16, 1),
            (7, 300, 300),
        ] {
            let weight: Vec<f32> = (0..outputs * inputs)
                .map(|i| ((i * 37 % 11) as f32 - 5.0) / 7.0)
                .collect();
            let bias: Vec<f32> = (0..outputs).map(|i| i as f32 / 3.0).collect();
            let x: Vec<f32> = (0..rows * inputs)
                .map(|i| ((i * 13 % 7) as f32 - 3.0) / 5.0)
                .collect();
            let want = expected(&x, &weight, &bias, rows, outputs);
            let linear = Linear::new(&weight, bias.clone(), outputs, inputs);
            let mut y = Vec::new();
            linear.forward(&x, &mut y);
            close(&y, &want);
            pool.install(|| linear.forward_on(&x, &mut y, 3));
            close(&y, &want);
            let mut slow = vec![0.0f32; rows * outputs];
            plain(Product {
                linear: &linear,
                x: &x,
                rows,
                panels: 0..outputs.div_ceil(PANEL),
                y: &mut slow,
                stride: outputs,
            });
            close(&slow, &want);
            // The same matrix read from another layout.
            let mut transposed = vec![0.0; inputs * outputs];
            for o in 0..outputs {
                for k in 0..inputs {
                    transposed[k * outputs + o] = weight[o * inputs + k];
                }
            }
            Linear::transposed(&transposed, outputs, 0, inputs, outputs).forward(&x, &mut y);
            close(
                &y,
                &expected(&x, &weight, &vec![0.0; outputs], rows, outputs),
            );
            Linear::rows_of(&weight, inputs, 0, outputs, inputs).forward(&x, &mut y);
            close(
                &y,
                &expected(&x, &weight, &vec![0.0; outputs], rows, outputs),
            );
        }
    }
}
