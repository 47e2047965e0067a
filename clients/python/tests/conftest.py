"""The tests run against a real PostgreSQL and a real daemon, started here once per session.

The daemon is the workspace's binary (``target/release/matchmaker`` from the repository
root, or ``$MATCHMAKER_BIN``) with ``tests/matchmaker.toml``. Without ``DATABASE_URL`` it
starts a private PostgreSQL in a temporary directory (``--local-pg-dir``) and logs its
URL; with it (a superuser URL of a database for tests) it runs on that database. Every
call of the API runs as a client or server login created for the test, never as the
superuser.
"""

from __future__ import annotations

import itertools
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import psycopg
from psycopg import sql
import pytest
from psycopg.conninfo import make_conninfo

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
QUEUES = {"duo", "hold", "short", "rc", "srv", "bf"}


def wait_for(what: str, predicate: Callable[[], object], timeout: float = 30.0, every: float = 0.2):
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


def _pg_bin_dir() -> Path:
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if d and (Path(d) / "pg_ctl").is_file() and (Path(d) / "initdb").is_file():
            return Path(d)
    versions = sorted(
        (int(p.name), p / "bin")
        for p in Path("/usr/lib/postgresql").glob("*")
        if p.name.isdigit() and (p / "bin" / "pg_ctl").is_file()
    )
    if not versions:
        pytest.fail("pg_ctl not found on PATH or in /usr/lib/postgresql/*/bin")
    return versions[-1][1]


@dataclass
class Matchmaker:
    """The daemon and its database, as the tests see them."""

    superuser_url: str
    base_dir: Path
    private_pg: bool
    process: subprocess.Popen[bytes]
    log_path: Path
    _counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    logins: list[str] = field(default_factory=list)

    def login(self, role: str = "matchmaker_client") -> str:
        """A new login in ``role``; its conninfo."""
        name = f"py_{role.split('_')[-1]}_{next(self._counter)}_{secrets.token_hex(3)}"
        password = secrets.token_hex(12)
        with psycopg.connect(self.superuser_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} CONNECTION LIMIT 10 IN ROLE {}").format(
                    sql.Identifier(name),
                    sql.Literal(password),
                    sql.Identifier(role),
                )
            )
        self.logins.append(name)
        return make_conninfo(self.superuser_url, user=name, password=password)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def cut_connections(self) -> None:
        """Restart the private PostgreSQL (``pg_ctl restart -m fast``): every connection
        is cut and the server comes back on the same port. On a database given by
        DATABASE_URL, which these tests cannot restart, the test logins' connections are
        terminated instead."""
        if not self.private_pg:
            with psycopg.connect(self.superuser_url, autocommit=True) as conn:
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE usename = ANY (%s)",
                    [self.logins],
                )
            return
        pg = self.base_dir / "pg"
        cmd = [
            str(_pg_bin_dir() / "pg_ctl"),
            "-D", str(pg / "data"),
            "-l", str(pg / "server.log"),
            "-m", "fast", "-w", "-t", "60", "restart",
        ]
        if os.geteuid() == 0:  # PostgreSQL runs as the postgres user
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, cwd="/", capture_output=True, text=True, timeout=90)
        assert done.returncode == 0, f"pg_ctl restart failed: {done.stderr}{done.stdout}"


@pytest.fixture(scope="session")
def matchmaker() -> Iterator[Matchmaker]:
    binary = Path(os.environ.get("MATCHMAKER_BIN") or REPO / "target" / "release" / "matchmaker")
    if not binary.is_file():
        pytest.fail(
            f"the daemon binary {binary} is missing: build it (cargo build --release) "
            "or point MATCHMAKER_BIN at one"
        )
    # Under /tmp and open to others: as root the private server runs as `postgres`,
    # which must reach its data directory.
    base = Path(tempfile.mkdtemp(prefix="mm-python-", dir="/tmp"))
    base.chmod(0o755)
    config = base / "matchmaker.toml"
    shutil.copy(HERE / "matchmaker.toml", config)
    log_path = base / "daemon.log"
    url = os.environ.get("DATABASE_URL")
    args = [str(binary), "run", "--config", str(config), "--metrics-addr", "127.0.0.1:0"]
    env = dict(os.environ)
    if url:
        args += ["--database-url", url]
    else:
        env.pop("DATABASE_URL", None)
        args += ["--local-pg-dir", str(base / "pg")]
    log = open(log_path, "wb")
    process = subprocess.Popen(args, cwd=base, stdout=log, stderr=subprocess.STDOUT, env=env)
    mm = Matchmaker(url or "", base, not url, process, log_path)
    try:
        if not url:
            def private_url() -> str | None:
                if process.poll() is not None:
                    pytest.fail(f"the daemon exited ({process.returncode}):\n{mm.log_tail()}")
                found = re.search(r"using the private PostgreSQL.*? url=(\S+)", mm.log_tail(200))
                return found.group(1) if found else None

            mm.superuser_url = wait_for("the private PostgreSQL", private_url, timeout=120)

        def published() -> bool:
            if process.poll() is not None:
                pytest.fail(f"the daemon exited ({process.returncode}):\n{mm.log_tail()}")
            try:
                with psycopg.connect(mm.superuser_url, autocommit=True) as conn:
                    rows = conn.execute("SELECT queue FROM queue_catalog").fetchall()
            except psycopg.Error:
                return False
            return QUEUES <= {r[0] for r in rows}

        wait_for("the daemon to publish the test queues", published, timeout=120)
        yield mm
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        if url:
            with psycopg.connect(url, autocommit=True) as conn:
                for name in mm.logins:
                    conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        shutil.rmtree(base, ignore_errors=True)


def _cancel_everything(url: str) -> None:
    """Take a login's waiting players out of every queue, so no test's leftovers join
    another test's matches."""
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "SELECT cancel(player_id => player_id, queue => queue) FROM player_status"
                " WHERE status IN ('queued', 'pending')"
            )
    except psycopg.Error:
        pass


@pytest.fixture
def client_url(matchmaker: Matchmaker) -> Iterator[str]:
    """A fresh matchmaker_client login; its waiting players are cancelled afterwards."""
    url = matchmaker.login("matchmaker_client")
    yield url
    _cancel_everything(url)


@pytest.fixture
def server_url(matchmaker: Matchmaker) -> str:
    """A fresh matchmaker_server login."""
    return matchmaker.login("matchmaker_server")


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"
