//! Running the binaries as a user does: their output as text, a time limit on a run,
//! the width of what they print, the subcommands their help lists.

use std::io::Read as _;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Bytes a command printed, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs the command to its end with stdout and stderr piped, killing it (and failing
/// the test) after `limit`.
pub fn piped_within(cmd: &mut Command, limit: Duration) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A binary this test process just wrote can be "busy" for a moment: another test's
    // thread forking meanwhile holds the written file open until its child execs.
    let mut attempts = 0;
    let mut child = loop {
        match cmd.spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && attempts < 100 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            spawned => break spawned.expect("start the command"),
        }
    };
    // Drain both pipes while it runs (a full pipe would block it).
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let read_all = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).map(|_| bytes)
        })
    };
    let (out, err) = (read_all(Box::new(stdout)), read_all(Box::new(stderr)));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the command") {
            break status;
        }
        if started.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            let err = err.join().unwrap().unwrap_or_default();
            panic!("still running after {limit:?}; stderr:\n{}", text(&err));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: out.join().unwrap().expect("read stdout"),
        stderr: err.join().unwrap().expect("read stderr"),
    }
}

/// Every line of `text` fits `width` columns.
pub fn assert_fits(text: &str, width: usize, what: &str) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= width,
            "{what}: a line of {} columns (> {width}):\n{line}\n---\n{text}",
            line.chars().count()
        );
    }
}

/// The subcommands the binary's `--help` lists (so a new one is covered too).
pub fn subcommands(bin: fn() -> Command) -> Vec<String> {
    let out = bin().arg("--help").output().expect("run --help");
    let help = text(&out.stdout);
    let names: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|name| name != "help")
        .collect();
    assert!(names.len() >= 6, "commands parsed from:\n{help}");
    names
}
