/**
 * The tests' matchmaker: the workspace's daemon binary (`../../target/release/matchmaker`
 * from this package, or $MATCHMAKER_BIN) with test/matchmaker.toml. Without DATABASE_URL
 * the daemon starts a private PostgreSQL in a temporary directory under /tmp
 * (--local-pg-dir) and logs its URL; with it (a superuser URL of a scratch database) the
 * daemon runs there. Every API call of the tests runs as a login made here, in
 * matchmaker_client or matchmaker_server, never as the superuser.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { Client, Pool } from 'pg';

export const PACKAGE_DIR = path.resolve(__dirname, '..', '..');
const REPO_DIR = path.resolve(PACKAGE_DIR, '..', '..');
export const QUEUES = ['ts_bf', 'ts_duo', 'ts_hold', 'ts_quick', 'ts_rc', 'ts_short', 'ts_srv', 'ts_stream'];

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  timeoutMs = 30_000,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as T;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

function pgBinDir(): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && fs.existsSync(path.join(dir, 'pg_ctl')) && fs.existsSync(path.join(dir, 'initdb'))) return dir;
  }
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root)
    ? fs.readdirSync(root).filter((v) => /^\d+$/.test(v) && fs.existsSync(path.join(root, v, 'bin', 'pg_ctl')))
    : [];
  if (!versions.length) throw new Error('pg_ctl not found on PATH or in /usr/lib/postgresql/*/bin');
  versions.sort((a, b) => Number(a) - Number(b));
  return path.join(root, versions[versions.length - 1]!, 'bin');
}

export class Matchmaker {
  superuserUrl = '';
  readonly logins: string[] = [];
  private counter = 0;

  private constructor(
    readonly baseDir: string,
    readonly privatePg: boolean,
    readonly process: ChildProcess,
    readonly logPath: string,
  ) {}

  /** Start the daemon (and its private PostgreSQL); resolves once it published the test queues. */
  static async start(): Promise<Matchmaker> {
    const binary = process.env.MATCHMAKER_BIN || path.join(REPO_DIR, 'target', 'release', 'matchmaker');
    if (!fs.existsSync(binary)) {
      throw new Error(
        `the daemon binary ${binary} is missing: build it (cargo build --release) or point MATCHMAKER_BIN at one`,
      );
    }
    // Under /tmp and open to others: as root the private server runs as `postgres`,
    // which must reach its data directory.
    const base = fs.mkdtempSync('/tmp/mm-typescript-');
    fs.chmodSync(base, 0o755);
    const config = path.join(base, 'matchmaker.toml');
    fs.copyFileSync(path.join(PACKAGE_DIR, 'test', 'matchmaker.toml'), config);
    const logPath = path.join(base, 'daemon.log');
    const log = fs.openSync(logPath, 'a');
    const url = process.env.DATABASE_URL;
    const args = ['run', '--config', config, '--metrics-addr', '127.0.0.1:0'];
    const env = { ...process.env };
    if (url) {
      args.push('--database-url', url);
    } else {
      delete env.DATABASE_URL;
      args.push('--local-pg-dir', path.join(base, 'pg'));
    }
    const child = spawn(binary, args, { cwd: base, env, stdio: ['ignore', log, log] });
    fs.closeSync(log);
    const mm = new Matchmaker(base, !url, child, logPath);
    try {
      if (url) {
        mm.superuserUrl = url;
      } else {
        mm.superuserUrl = await waitFor(
          'the private PostgreSQL',
          () => {
            if (child.exitCode !== null) throw new Error(`the daemon exited (${child.exitCode}):\n${mm.logTail()}`);
            return /using the private PostgreSQL.*? url=(\S+)/.exec(mm.logTail(200))?.[1];
          },
          120_000,
        );
      }
      await waitFor(
        'the daemon to publish the test queues',
        async () => {
          if (child.exitCode !== null) throw new Error(`the daemon exited (${child.exitCode}):\n${mm.logTail()}`);
          const names = await mm.superuser((c) => c.query('SELECT queue FROM queue_catalog')).then(
            (r) => new Set(r.rows.map((row) => row.queue as string)),
            () => new Set<string>(),
          );
          return QUEUES.every((q) => names.has(q));
        },
        120_000,
      );
      return mm;
    } catch (err) {
      await mm.stop();
      throw err;
    }
  }

  logTail(lines = 40): string {
    try {
      return fs.readFileSync(this.logPath, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }

  /** Run `f` on a superuser connection of its own. */
  async superuser<T>(f: (c: Client) => Promise<T>): Promise<T> {
    const c = new Client({ connectionString: this.superuserUrl });
    c.on('error', () => {});
    await c.connect();
    try {
      return await f(c);
    } finally {
      await c.end().catch(() => {});
    }
  }

  /** A new login in `role`; its connection URL. */
  async login(role: 'matchmaker_client' | 'matchmaker_server' = 'matchmaker_client'): Promise<string> {
    const name = `ts_${role.split('_').pop()}_${++this.counter}_${randomBytes(3).toString('hex')}`;
    const password = randomBytes(12).toString('hex');
    await this.superuser((c) => c.query(`CREATE ROLE "${name}" LOGIN PASSWORD '${password}' CONNECTION LIMIT 10 IN ROLE ${role}`));
    this.logins.push(name);
    const url = new URL(this.superuserUrl);
    url.username = name;
    url.password = password;
    return url.toString();
  }

  /** A pool of a login, with its errors (a restarted server) absorbed. */
  pool(url: string, max = 4): Pool {
    const pool = new Pool({ connectionString: url, max });
    pool.on('error', () => {});
    return pool;
  }

  /**
   * Restart the private PostgreSQL (`pg_ctl restart -m fast`): every connection is cut
   * and the server comes back on the same port. On a database given by DATABASE_URL,
   * which the tests cannot restart, the test logins' connections are terminated instead.
   */
  async restartDatabase(): Promise<void> {
    if (!this.privatePg) {
      await this.superuser((c) =>
        c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = ANY ($1)', [this.logins]),
      );
      return;
    }
    await this.pgCtl(['-m', 'fast', '-w', '-t', '60', 'restart'], true);
  }

  /** pg_ctl on the private server (asynchronously: the tests' connections must see their errors meanwhile). */
  private async pgCtl(args: string[], mustSucceed: boolean): Promise<void> {
    const pg = path.join(this.baseDir, 'pg');
    let cmd = [path.join(pgBinDir(), 'pg_ctl'), '-D', path.join(pg, 'data'), '-l', path.join(pg, 'server.log'), ...args];
    if (process.getuid?.() === 0) cmd = ['runuser', '-u', 'postgres', '--', ...cmd];
    const child = spawn(cmd[0]!, cmd.slice(1), { cwd: '/', stdio: ['ignore', 'pipe', 'pipe'], timeout: 90_000 });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    if (mustSucceed && status !== 0) throw new Error(`${cmd.join(' ')} failed (${status}): ${output}`);
  }

  async stop(): Promise<void> {
    const child = this.process;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      await exited;
      clearTimeout(timer);
    }
    if (this.privatePg) {
      // The daemon stops the server it started; make sure, so no server outlives the tests.
      if (fs.existsSync(path.join(this.baseDir, 'pg', 'data', 'postmaster.pid'))) {
        await this.pgCtl(['-m', 'immediate', '-w', 'stop'], false);
      }
    } else {
      await this.superuser(async (c) => {
        for (const name of this.logins) {
          await c.query(`DROP ROLE IF EXISTS "${name}"`).catch(() => {});
        }
      }).catch(() => {});
    }
    fs.rmSync(this.baseDir, { recursive: true, force: true });
  }
}

/** A fresh id for a player, so that tests never share one. */
export function pid(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}
