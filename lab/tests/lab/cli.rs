//! The `matchmaker-lab` binary as a user runs it: no password in `--help`, a refusal
//! at once for a measurement too short, and the demo from a directory only its owner
//! may enter, in plain lines within 80 columns.

use matchmaker_testkit::command_line::{assert_fits, piped_within, subcommands, text};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ESC: u8 = 0x1b;

fn lab() -> Command {
    Command::new(env!("CARGO_BIN_EXE_matchmaker-lab"))
}

#[test]
fn lab_help_never_shows_the_database_password() {
    let url = "postgres://u:SECRETPW@127.0.0.1:1/x";
    let mut runs = Vec::new();
    for bin in [lab as fn() -> Command] {
        runs.push((bin, vec!["--help".to_string()]));
        for name in subcommands(bin) {
            runs.push((bin, vec![name, "--help".into()]));
        }
    }
    for (bin, args) in runs {
        let out = bin()
            .args(&args)
            .env("DATABASE_URL", url)
            .output()
            .expect("run --help");
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let all = text(&out.stdout) + &text(&out.stderr);
        assert!(
            !all.contains("SECRETPW"),
            "{args:?} shows the password:\n{all}"
        );
    }
}

/// An enqueue measurement too short for both paths is refused at once, before a scratch
/// database is made and the rounds run, not at the end with "no enqueue through raw
/// INSERT". The URL points nowhere: the refusal must not need a server.
#[test]
fn bench_db_refuses_an_enqueue_measurement_too_short_for_both_paths() {
    let bench_db = |extra: &[&str]| {
        let mut cmd = lab();
        cmd.args([
            "bench-db",
            "--database-url",
            "postgres://nobody@127.0.0.1:1/none",
        ])
        .args(["--enqueue-for", "300ms"])
        .args(extra);
        let out = piped_within(&mut cmd, Duration::from_secs(30));
        assert!(!out.status.success());
        text(&out.stderr)
    };
    let stderr = bench_db(&[]);
    assert!(
        stderr.contains("--enqueue-for 300ms: at least 1s"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    // --rounds-only measures no enqueue: no floor then (it fails later, on the server).
    assert!(!bench_db(&["--rounds-only"]).contains("at least 1s"));
}

#[test]
fn demo_from_a_root_only_directory_prints_plain_lines_within_80_columns() {
    let _load = crate::support::TIMING.blocking_read();
    // Like a fresh clone in `mktemp -d` (or under /root): mode 0700, owned by us.
    let dir = tempfile::Builder::new()
        .prefix("mm-closed-")
        .tempdir()
        .expect("a private directory");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let as_root = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap();
    if as_root {
        // The situation is real: PostgreSQL's user cannot enter where we run from.
        let enters = Command::new("runuser")
            .args(["-u", "postgres", "--", "test", "-x"])
            .arg(dir.path())
            .current_dir("/")
            .status()
            .expect("runuser");
        assert!(!enters.success(), "postgres can enter {:?}", dir.path());
    }
    let exe = dir.path().join("matchmaker-lab");
    std::fs::copy(env!("CARGO_BIN_EXE_matchmaker-lab"), &exe).expect("copy the binary");
    let out = piped_within(
        Command::new(&exe)
            .args([
                "demo",
                "--duration",
                "12s",
                "--round-every",
                "4s",
                "--rate",
                "20",
            ])
            .current_dir(dir.path())
            .env_remove("DATABASE_URL")
            .env_remove("MATCHMAKER_CONFIG")
            .env_remove("COLUMNS")
            .env_remove("NO_COLOR"),
        Duration::from_secs(180),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "demo failed:\n{stderr}\n{stdout}");
    assert!(
        stderr.contains("starting a private PostgreSQL") && stderr.contains("done in"),
        "{stderr}"
    );
    assert!(!out.stdout.contains(&ESC), "ESC in piped demo:\n{stdout:?}");
    assert!(
        !out.stderr.contains(&ESC),
        "ESC in demo stderr:\n{stderr:?}"
    );
    assert_fits(&stdout, 80, "demo, piped");
    assert_fits(&stderr, 80, "demo stderr, piped");
    assert!(
        stdout.contains("FACTOR AVERAGES"),
        "a round was shown:\n{stdout}"
    );
    assert!(stdout.contains("Where to look next"), "{stdout}");
    // The closing note comes once the private server is gone, and says so in the past.
    let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.ends_with(
            "The private server is removed. To keep the rounds, run the demo against a server \
             of yours (DATABASE_URL=postgres://... matchmaker-lab demo), or the daemon with its \
             persistent local server (matchmaker run)."
        ),
        "{stdout}"
    );
    // Its log file was the demo's own: removed with it.
    let log = stderr
        .lines()
        .find_map(|l| l.strip_prefix("daemon log: "))
        .unwrap_or_else(|| panic!("the log is named:\n{stderr}"));
    assert!(
        !std::path::Path::new(log.trim()).exists(),
        "{log} is left behind"
    );
    // Piped, a frame per round rather than a page a second: in 12 s at most 4 rounds
    // of each of 2 queues, the first frame and the final view make 10, with room for an
    // early-start round; a page a second would make 14.
    let frames = stdout.matches("matchmaker status").count();
    assert!(
        (2..=12).contains(&frames),
        "{frames} frames, not one a second:\n{stdout}"
    );
}

/// Every `postmaster.pid` under `dir`: the private servers running there.
fn postmaster_pids(dir: &std::path::Path) -> Vec<u32> {
    let mut pids = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().is_some_and(|n| n == "postmaster.pid") {
                let first = std::fs::read_to_string(&path).unwrap_or_default();
                pids.extend(
                    first
                        .lines()
                        .next()
                        .and_then(|l| l.trim().parse::<u32>().ok()),
                );
            }
        }
    }
    pids
}

/// The demo ended by SIGTERM or SIGHUP (a service manager, a closed terminal) stops its
/// private PostgreSQL and removes its directory and log, as Ctrl-C and the end of time do.
#[test]
fn demo_ended_by_a_signal_stops_its_private_server_and_removes_its_directory() {
    let _load = crate::support::TIMING.blocking_read();
    for signal in ["TERM", "HUP"] {
        let status = end_by_signal(&["demo", "--duration", "5m", "--round-every", "4s"], signal);
        assert!(
            status.success(),
            "SIG{signal}: the demo ended with {status}"
        );
    }
}

/// Every lab command runs in the product's shell: a measurement ended by a signal stops
/// its private PostgreSQL and removes its directory too, and exits as the shell does
/// (128 + the signal's number).
#[test]
fn bench_db_ended_by_a_signal_stops_its_private_server() {
    let _load = crate::support::TIMING.blocking_read();
    let args = [
        "bench-db",
        "--sizes",
        "300",
        "--repeat",
        "1000",
        "--rounds-only",
    ];
    let status = end_by_signal(&args, "TERM");
    assert_eq!(
        status.code(),
        Some(128 + 15),
        "SIGTERM: bench-db ended with {status}"
    );
}

/// Runs `matchmaker-lab args` with its temporary files in a directory of its own, sends
/// it SIG`signal` once its private server runs, and checks that the server is stopped and
/// nothing is left in the directory. Returns how the command ended.
fn end_by_signal(args: &[&str], signal: &str) -> std::process::ExitStatus {
    // The server and log go under TMPDIR: this directory, which the server's user
    // (postgres, when the tests run as root) may enter.
    let tmp = tempfile::Builder::new()
        .prefix("mm-lab-signal-")
        .tempdir()
        .expect("a temporary directory");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut child = lab()
        .args(args)
        .env("TMPDIR", tmp.path())
        .env_remove("DATABASE_URL")
        .env_remove("MATCHMAKER_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the lab command");
    let started = Instant::now();
    let postmaster = loop {
        if let Some(&pid) = postmaster_pids(tmp.path()).first() {
            break pid;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{args:?} ended before its server ran: {status}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no private server within 2 minutes"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // Let it get to work, then end it as a service manager would.
    std::thread::sleep(Duration::from_secs(3));
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .expect("run kill");
    assert!(sent.success());
    let ended = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if ended.elapsed() > Duration::from_secs(60) {
            child.kill().ok();
            panic!("SIG{signal}: {args:?} still runs a minute later");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let proc_dir = std::path::PathBuf::from(format!("/proc/{postmaster}"));
    let gone = Instant::now();
    while proc_dir.exists() && gone.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !proc_dir.exists(),
        "SIG{signal}: the postmaster {postmaster} of {args:?} still runs"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(
        left.is_empty(),
        "SIG{signal}: {args:?} left behind: {left:?}"
    );
    status
}
