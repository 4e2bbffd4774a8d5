//! Confidence intervals for the rates a sweep measures.

/// The normal quantile for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The Wilson score interval (95%) for `successes` out of `n` trials, as `(lo, hi)` in `[0, 1]`.
///
/// Chosen over the plain normal interval because sweeps often see 0 or n successes out of a few
/// dozen seeds, where the normal interval collapses to a point and Wilson's stays honest: 0/10
/// gives `(0, 0.2775)`, not `(0, 0)`. With no trials nothing is known: `(0, 1)`. `successes`
/// above `n` is clamped to `n`.
pub fn wilson(successes: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let n_f = n as f64;
    let p = successes.min(n) as f64 / n_f;
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / n_f;
    let centre = (p + z2 / (2.0 * n_f)) / denominator;
    let half = Z95 * (p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt() / denominator;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(actual: (f64, f64), expected: (f64, f64)) -> bool {
        (actual.0 - expected.0).abs() < 5e-5 && (actual.1 - expected.1).abs() < 5e-5
    }

    #[test]
    fn wilson_matches_known_values() {
        assert!(close(wilson(0, 10), (0.0, 0.2775)), "{:?}", wilson(0, 10));
        assert!(close(wilson(5, 10), (0.2366, 0.7634)), "{:?}", wilson(5, 10));
        assert!(close(wilson(10, 10), (0.7225, 1.0)), "{:?}", wilson(10, 10));
        // 1/29 and 81/263: the worked examples of Newcombe (1998), method 3.
        assert!(close(wilson(1, 29), (0.0061, 0.1718)), "{:?}", wilson(1, 29));
        assert!(close(wilson(81, 263), (0.2553, 0.3662)), "{:?}", wilson(81, 263));
    }

    #[test]
    fn wilson_handles_the_edges() {
        assert_eq!(wilson(0, 0), (0.0, 1.0));
        assert_eq!(wilson(12, 10), wilson(10, 10));
        let (lo, hi) = wilson(3, 1000);
        assert!(lo > 0.0 && lo < 0.003 && hi > 0.003 && hi < 0.01, "{lo} {hi}");
    }
}
