//! The Metropolis threshold's draw: ln u for a uniform u in (0, 1), once per annealing
//! step.
//!
//! libm's `ln` was 2-3% of a step. A step only needs u < exp(delta / T) to hold with
//! the right probability, so ln u may be off by a hair: u = 2^-(k+1) (1 + f) from the
//! bits of one 64-bit draw, ln u = -(k+1) ln 2 + ln(1 + f), the second term from a
//! table of 256 midpoints (absolute error below 0.002, i.e. every acceptance
//! probability is exact to within 0.2%).

const BITS: u32 = 8;

pub struct LnUniform {
    /// ln(1 + (k + 0.5) / 256) for the top 8 bits k of f.
    table: [f64; 1 << BITS],
}

impl Default for LnUniform {
    fn default() -> Self {
        let n = (1u32 << BITS) as f64;
        LnUniform {
            table: std::array::from_fn(|k| (1.0 + (k as f64 + 0.5) / n).ln()),
        }
    }
}

impl LnUniform {
    /// ln u for the uniform u = r / 2^64 (r = 0 counts as 1: ln u >= -64 ln 2).
    #[inline(always)]
    pub fn ln(&self, r: u64) -> f64 {
        let r = r | 1;
        let k = r.leading_zeros();
        // the bits after the leading one: f in [0, 1)
        let f = (r << k) << 1;
        let idx = (f >> (64 - BITS)) as usize;
        self.table[idx] - (k + 1) as f64 * std::f64::consts::LN_2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-bit LCG: full-width draws without the search's generator.
    fn next(r: &mut u64) -> u64 {
        *r = r
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *r
    }

    #[test]
    fn matches_ln_within_the_table_step() {
        let t = LnUniform::default();
        let mut worst = 0.0f64;
        let mut r = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            let r = next(&mut r);
            let exact = ((r | 1) as f64 / 2f64.powi(64)).ln();
            worst = worst.max((t.ln(r) - exact).abs());
        }
        assert!(worst < 0.002, "worst error {worst}");
        // the extremes: the smallest draw and one just below 1
        assert!((t.ln(0) + 64.0 * std::f64::consts::LN_2).abs() < 0.002);
        assert!(t.ln(u64::MAX).abs() < 0.002);
    }

    #[test]
    fn its_exponential_has_mean_one() {
        // -ln u of a uniform u is Exp(1): mean 1, P(> 3) = e^-3
        let t = LnUniform::default();
        let (mut sum, mut tail, n) = (0.0, 0u32, 400_000u32);
        let mut r = 12345u64;
        for _ in 0..n {
            let x = -t.ln(next(&mut r));
            sum += x;
            tail += u32::from(x > 3.0);
        }
        let mean = sum / n as f64;
        assert!((mean - 1.0).abs() < 0.01, "mean {mean}");
        let p = tail as f64 / n as f64;
        assert!((p - (-3.0f64).exp()).abs() < 0.003, "tail {p}");
    }
}
