//! `matchmaker-lab bench`: the strategies side by side on seeded pools.

use std::process::Command;

/// Run the command and fail the test with its stderr unless it exits 0.
fn succeeded(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `bench` breaks the 1 s against long-run gap down by pool, and the per-pool scores
/// are the ones the mean line averages; with `--seeds`, the same over solver seeds.
#[test]
fn bench_prints_the_gap_per_pool() {
    let out = succeeded(
        Command::new(env!("CARGO_BIN_EXE_matchmaker-lab"))
            .args(["bench", "--players", "60", "--pools", "2"])
            .args([
                "--budgets",
                "10ms,20ms",
                "--baseline",
                "10ms",
                "--long-factor",
                "2",
                "--seeds",
                "2",
            ]),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let pair = |line: &str, after: &str| -> (f64, f64) {
        let rest = &line[line.find(after).unwrap_or_else(|| panic!("{line}")) + after.len()..];
        let mut it = rest.split([' ', ',', ';']).filter(|s| !s.is_empty());
        let a = it.next().unwrap().parse().unwrap();
        assert_eq!(it.next(), Some("vs"), "{line}");
        (a, it.next().unwrap().parse().unwrap())
    };
    let mean = text
        .lines()
        .find(|l| l.contains("default@20ms vs default@40ms:"))
        .unwrap_or_else(|| panic!("no gap line in:\n{text}"));
    let (short, long) = pair(mean, "default@40ms: ");
    let pools: Vec<&str> = text.lines().filter(|l| l.contains("pool seed ")).collect();
    assert_eq!(pools.len(), 2, "{text}");
    let (mut s, mut l) = (0.0, 0.0);
    for (k, line) in pools.iter().enumerate() {
        assert!(line.contains(&format!("pool seed {}:", k + 1)), "{line}");
        let (a, b) = pair(line, ": ");
        s += a / 2.0;
        l += b / 2.0;
        let (h_short, h_long) = pair(line, "matches without a host ");
        assert!(
            h_short >= 0.0 && h_long >= 0.0 && h_short.fract() == 0.0,
            "{line}"
        );
    }
    assert!(
        (s - short).abs() < 2e-5 && (l - long).abs() < 2e-5,
        "{text}"
    );

    // --seeds 2: per pool the mean of two seeds' runs inside their range, and the
    // means line their average
    let means = text
        .lines()
        .find(|l| l.trim_start().starts_with("means "))
        .unwrap_or_else(|| panic!("no means line in:\n{text}"));
    let (short, long) = pair(means, "means ");
    let pools: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("pool ") && !l.contains("pool seed"))
        .collect();
    assert_eq!(pools.len(), 2, "{text}");
    let (mut s, mut l) = (0.0, 0.0);
    for line in &pools {
        let nums: Vec<f64> = line
            .split([' ', '(', ')', '-', ','])
            .filter_map(|w| w.parse().ok())
            .filter(|&x: &f64| x > 0.0 && x < 1.0)
            .collect();
        // mean (lo-hi) vs mean (lo-hi)
        let [a, a_lo, a_hi, b, b_lo, b_hi, ..] = nums[..] else {
            panic!("{line}")
        };
        assert!(a_lo <= a + 1e-5 && a <= a_hi + 1e-5, "{line}");
        assert!(b_lo <= b + 1e-5 && b <= b_hi + 1e-5, "{line}");
        s += a / 2.0;
        l += b / 2.0;
    }
    assert!(
        (s - short).abs() < 2e-5 && (l - long).abs() < 2e-5,
        "{text}"
    );
}
