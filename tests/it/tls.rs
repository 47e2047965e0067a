//! TLS to PostgreSQL: a private server given certificates from a test CA, and every
//! `sslmode` checked as libpq defines it. `require` encrypts and never falls back to
//! plaintext; `verify-ca` checks the chain; `verify-full` also the host name; a client
//! certificate logs in where the server asks for one. The daemon's commands connect the
//! same way.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use matchmaker::db::local_pg::LocalPostgres;
use matchmaker_testkit::command_line::{piped_within, text};
use matchmaker_testkit::fleet::{Replica, ReplicaSpec};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use sqlx::{Connection, PgConnection};

/// A test certificate authority.
struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Ca {
            issuer: Issuer::new(params, key),
            pem,
        }
    }

    /// A certificate for `names` (its SANs) and common name `cn`: (cert PEM, key PEM).
    fn issue(&self, cn: &str, names: &[&str]) -> (String, String) {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// A private server with TLS files in `tls/`, owned by the server's user.
struct TlsServer {
    server: LocalPostgres,
    tls: PathBuf,
}

impl TlsServer {
    async fn start() -> TlsServer {
        let server = LocalPostgres::start_temporary()
            .await
            .expect("private server");
        let tls = server.base_dir().join("tls");
        std::fs::create_dir_all(&tls).unwrap();
        let owner = std::fs::metadata(server.base_dir().join("data")).unwrap();
        std::os::unix::fs::chown(&tls, Some(owner.uid()), Some(owner.gid())).unwrap();
        TlsServer { server, tls }
    }

    fn write(&self, name: &str, content: &str, mode: u32) -> PathBuf {
        let path = self.tls.join(name);
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let owner = std::fs::metadata(&self.tls).unwrap();
        std::os::unix::fs::chown(&path, Some(owner.uid()), Some(owner.gid())).unwrap();
        path
    }

    /// Serve TLS with a certificate from `ca` for `names`; client certificates are checked
    /// against `ca`.
    async fn serve_tls(&self, ca: &Ca, names: &[&str]) {
        let (cert, key) = ca.issue("postgres server", names);
        let cert = self.write("server.crt", &cert, 0o644);
        let key = self.write("server.key", &key, 0o600);
        let root = self.write("root.crt", &ca.pem, 0o644);
        let mut admin = self.admin().await;
        for (setting, value) in [
            ("ssl_cert_file", cert.display().to_string()),
            ("ssl_key_file", key.display().to_string()),
            ("ssl_ca_file", root.display().to_string()),
            ("ssl", "on".to_string()),
        ] {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "ALTER SYSTEM SET {setting} = '{value}'"
            )))
            .execute(&mut admin)
            .await
            .unwrap();
        }
        self.reload(&mut admin).await;
    }

    /// Put `line` first in pg_hba.conf.
    async fn hba_first(&self, line: &str) {
        let hba = self.server.base_dir().join("data/pg_hba.conf");
        let old = std::fs::read_to_string(&hba).unwrap();
        std::fs::write(&hba, format!("{line}\n{old}")).unwrap();
        let mut admin = self.admin().await;
        self.reload(&mut admin).await;
    }

    async fn reload(&self, admin: &mut PgConnection) {
        let reloaded: bool = sqlx::query_scalar("SELECT pg_reload_conf()")
            .fetch_one(&mut *admin)
            .await
            .unwrap();
        assert!(reloaded);
        // The postmaster applies the reload asynchronously.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    async fn admin(&self) -> PgConnection {
        PgConnection::connect(&format!("{}?sslmode=disable", self.server.url()))
            .await
            .unwrap()
    }

    fn url(&self, host: &str, params: &str) -> String {
        format!(
            "postgres://postgres@{host}:{}/postgres?{params}",
            self.server.port()
        )
    }

    fn root_file(&self, ca: &Ca, name: &str) -> PathBuf {
        self.write(name, &ca.pem, 0o644)
    }
}

/// Whether the session runs over TLS, as the server sees it.
async fn encrypted(url: &str) -> Result<bool, sqlx::Error> {
    let mut conn = PgConnection::connect(url).await?;
    let ssl = sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .fetch_one(&mut conn)
        .await?;
    conn.close().await.ok();
    Ok(ssl)
}

fn refused(result: Result<bool, sqlx::Error>, why: &str) -> String {
    match result {
        Ok(ssl) => panic!("{why}: connected (ssl = {ssl})"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn verify_full_checks_the_chain_and_the_host_name() {
    let server = TlsServer::start().await;
    let ca = Ca::new("matchmaker test CA");
    server.serve_tls(&ca, &["localhost"]).await;
    let root = server.root_file(&ca, "client-root.crt");
    let root = root.display();

    let full = server.url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={root}"),
    );
    assert!(encrypted(&full).await.unwrap(), "verify-full to localhost");

    // The certificate names localhost, not the address.
    let by_address = server.url(
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={root}"),
    );
    let e = refused(
        encrypted(&by_address).await,
        "verify-full to a name the certificate lacks",
    );
    assert!(e.to_lowercase().contains("certificate"), "{e}");
    // verify-ca checks the chain only.
    let chain_only = server.url(
        "127.0.0.1",
        &format!("sslmode=verify-ca&sslrootcert={root}"),
    );
    assert!(
        encrypted(&chain_only).await.unwrap(),
        "verify-ca to the address"
    );

    // A CA the client does not trust.
    let stranger = Ca::new("another CA");
    let other_root = server.root_file(&stranger, "other-root.crt");
    let untrusted = server.url(
        "localhost",
        &format!("sslmode=verify-ca&sslrootcert={}", other_root.display()),
    );
    refused(
        encrypted(&untrusted).await,
        "verify-ca with an untrusted CA",
    );
    // require encrypts without checking: the same server is accepted.
    let require = server.url("localhost", "sslmode=require");
    assert!(encrypted(&require).await.unwrap(), "require");

    // The server now shows a certificate for another host name.
    server.serve_tls(&ca, &["db.elsewhere.test"]).await;
    let e = refused(
        encrypted(&full).await,
        "verify-full to a server certified for another name",
    );
    assert!(e.to_lowercase().contains("certificate"), "{e}");
    server.server.stop().await.unwrap();
}

#[tokio::test]
async fn require_never_falls_back_to_plaintext() {
    let server = TlsServer::start().await;
    // ssl is off on a fresh private server.
    let e = refused(
        encrypted(&server.url("127.0.0.1", "sslmode=require")).await,
        "require against a server without TLS",
    );
    assert!(e.contains("TLS") || e.contains("SSL"), "{e}");
    // prefer may fall back, and says so by being unencrypted.
    assert!(
        !encrypted(&server.url("127.0.0.1", "sslmode=prefer"))
            .await
            .unwrap()
    );
    server.server.stop().await.unwrap();
}

#[tokio::test]
async fn a_client_certificate_logs_in_where_the_server_asks_for_one() {
    let server = TlsServer::start().await;
    let ca = Ca::new("matchmaker test CA");
    server.serve_tls(&ca, &["localhost"]).await;
    let mut admin = server.admin().await;
    sqlx::query("CREATE ROLE tls_client LOGIN")
        .execute(&mut admin)
        .await
        .unwrap();
    server
        .hba_first("hostssl all tls_client 127.0.0.1/32 cert")
        .await;
    let (cert, key) = ca.issue("tls_client", &[]);
    let cert = server.write("client.crt", &cert, 0o644);
    let key = server.write("client.key", &key, 0o600);
    let root = server.root_file(&ca, "client-root.crt");
    let url = |extra: &str| {
        format!(
            "postgres://tls_client@localhost:{}/postgres?sslmode=verify-full&sslrootcert={}{extra}",
            server.server.port(),
            root.display()
        )
    };
    let with_cert = url(&format!(
        "&sslcert={}&sslkey={}",
        cert.display(),
        key.display()
    ));
    assert!(encrypted(&with_cert).await.unwrap());
    let e = refused(
        encrypted(&url("")).await,
        "tls_client without its certificate",
    );
    assert!(e.contains("certificate") || e.contains("28000"), "{e}");
    server.server.stop().await.unwrap();
}

#[tokio::test]
async fn migrate_run_and_status_connect_with_verify_full() {
    let server = TlsServer::start().await;
    let ca = Ca::new("matchmaker test CA");
    server.serve_tls(&ca, &["localhost"]).await;
    let root = server.root_file(&ca, "client-root.crt");
    let url = server.url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", root.display()),
    );
    let matchmaker = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_matchmaker"));
        cmd.args(args).env("DATABASE_URL", &url);
        let out = piped_within(&mut cmd, Duration::from_secs(60));
        assert!(
            out.status.success(),
            "matchmaker {args:?}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    matchmaker(&["migrate"]);

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("matchmaker.toml");
    std::fs::write(&config, "[queues.tls_1v1]\nteams = 2\nteam_size = 1\n").unwrap();
    let mut replica = Replica::start(ReplicaSpec {
        exe: env!("CARGO_BIN_EXE_matchmaker").into(),
        database_url: url.clone(),
        config: config.clone(),
        name: "tls-replica".into(),
        clock_skew: None,
        log_dir: dir.path().to_path_buf(),
    })
    .unwrap();
    // The replica heartbeats over TLS: its row appears, and its sessions are encrypted.
    let mut admin = server.admin().await;
    let started = Instant::now();
    loop {
        let live: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM replicas WHERE replica = $1 AND expires_at > now()",
        )
        .bind(replica.holder())
        .fetch_one(&mut admin)
        .await
        .unwrap_or(0);
        if live == 1 {
            break;
        }
        assert!(
            replica.check_alive(),
            "the replica exited: {}",
            replica.log_tail(20)
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no heartbeat over TLS within 30 s: {}",
            replica.log_tail(20)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let plaintext: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
          WHERE a.client_port IS NOT NULL AND NOT s.ssl AND a.pid <> pg_backend_pid()
            AND a.backend_type = 'client backend'",
    )
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert_eq!(plaintext, 0, "a daemon session is not encrypted");
    let status = matchmaker(&["status", "--once"]);
    assert!(status.contains("tls_1v1"), "{status}");
    drop(replica);
    drop(admin);
    server.server.stop().await.unwrap();
}
