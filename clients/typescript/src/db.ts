/**
 * Running one statement: on a pool's connection or the caller's client, with retries
 * while the server is unavailable (where a second attempt cannot write twice) and
 * cancellation by AbortSignal (a CancelRequest to the server, as libpq sends it).
 */
import * as net from 'node:net';

import { isUnavailable, rolledBack, translate, Unavailable } from './errors';
import { backoffDelay, RetryPolicy, sleep } from './retry';

/** What a query answers: node-postgres's `QueryResult`, as far as this library reads it. */
export interface QueryResultLike {
  rows: any[];
}

/**
 * A connection: node-postgres's `Client` or `PoolClient` (or anything with the same
 * `query`). `processID`, `secretKey`, `host` and `port` let a call be cancelled.
 */
export interface ClientLike {
  query(text: string, values?: unknown[]): Promise<QueryResultLike>;
  processID?: number | null;
  secretKey?: number | null;
  host?: string;
  port?: number;
}

/** A connection borrowed from a pool. */
export interface PoolClientLike extends ClientLike {
  release(destroy?: boolean | Error): void;
}

/** node-postgres's `Pool`, as far as this library uses it. */
export interface PoolLike {
  connect(): Promise<PoolClientLike>;
  readonly totalCount: number;
}

/** Where calls run: a pool (the calls borrow a connection each), or one connection. */
export type Source = PoolLike | ClientLike;

export function isPool(source: Source): source is PoolLike {
  return (
    typeof (source as PoolLike).connect === 'function' &&
    typeof (source as PoolLike).totalCount === 'number'
  );
}

export interface RunOptions {
  /** Sending the call twice does no harm (a read, keep_alive, cancel, ...). */
  idempotent: boolean;
  retry: RetryPolicy;
  signal?: AbortSignal | undefined;
  /** What the call is, for messages: `enqueue`, `player_status`, ... */
  what: string;
}

/** How long an aborted statement may take to answer the cancel before the call gives up. */
const ABORT_GRACE_MS = 1000;

/**
 * Run `text` with `values`; the rows. A pool source runs it on a connection of its own
 * (a statement is its own transaction); a client source runs it on that client, inside
 * whatever transaction the caller holds, and is never retried (the connection cannot be
 * replaced, and a retry inside the caller's transaction would not be the caller's).
 */
export async function run(
  source: Source,
  text: string,
  values: unknown[],
  options: RunOptions,
): Promise<any[]> {
  const { signal, retry } = options;
  const pool = isPool(source) ? source : null;
  const attempts = pool ? Math.max(1, retry.attempts) : 1;
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    let conn: ClientLike;
    let release: (destroy?: boolean) => void = () => {};
    if (pool) {
      try {
        const borrowed = await connectAbortably(pool, signal);
        conn = borrowed;
        release = (destroy) => borrowed.release(destroy === true ? true : undefined);
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        // Nothing was sent: any call may try again.
        if (!isUnavailable(err)) throw translate(err);
        if (attempt >= attempts) throw unavailable(options.what, err, attempt, false);
        await sleep(backoffDelay(retry, attempt), signal);
        continue;
      }
    } else {
      conn = source as ClientLike;
    }
    if (signal?.aborted) {
      release(false);
      throw signal.reason;
    }
    try {
      const result = await queryAbortably(conn, text, values, signal);
      release(false);
      return result.rows;
    } catch (err) {
      if (signal?.aborted) {
        // The connection may still carry the cancelled statement: never reuse it.
        release(true);
        throw signal.reason;
      }
      const down = isUnavailable(err);
      release(down);
      if (!down) throw translate(err);
      // An ERROR rolled the statement back: nothing was written. A lost connection or a
      // FATAL may have come after the commit: only a call that may run twice goes again.
      const safe = rolledBack(err) || options.idempotent;
      if (!safe) throw unavailable(options.what, err, attempt, true);
      if (attempt >= attempts) throw unavailable(options.what, err, attempt, false);
      await sleep(backoffDelay(retry, attempt), signal);
    }
  }
}

function unavailable(what: string, err: unknown, attempts: number, mayHaveCommitted: boolean) {
  const state = (err as { code?: string }).code;
  const message =
    `${what}: the server is unavailable (${(err as Error).message})` +
    (attempts > 1 ? ` after ${attempts} attempts` : '') +
    (mayHaveCommitted ? '; the call may have taken effect' : '');
  return new Unavailable(
    message,
    { attempts, mayHaveCommitted },
    { sqlstate: typeof state === 'string' && /^[0-9A-Z]{5}$/.test(state) ? state : undefined, cause: err },
  );
}

/** pool.connect(), given up on abort (a connection that arrives later goes back). */
function connectAbortably(pool: PoolLike, signal: AbortSignal | undefined): Promise<PoolClientLike> {
  const pending = pool.connect();
  if (!signal) return pending;
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      pending.then((c) => c.release(), () => {});
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    pending.then(
      (c) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) c.release();
        else resolve(c);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * conn.query(), with a CancelRequest to the server on abort. The statement's own answer
 * wins if it comes within ABORT_GRACE_MS: a statement that finished is reported as done.
 */
function queryAbortably(
  conn: ClientLike,
  text: string,
  values: unknown[],
  signal: AbortSignal | undefined,
): Promise<QueryResultLike> {
  const pending = conn.query(text, values);
  if (!signal) return pending;
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      sendCancelRequest(conn);
      timer = setTimeout(() => reject(signal.reason), ABORT_GRACE_MS);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    pending.then(
      (r) => {
        signal.removeEventListener('abort', onAbort);
        if (timer) clearTimeout(timer);
        resolve(r);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        if (timer) clearTimeout(timer);
        reject(e);
      },
    );
  });
}

/**
 * PostgreSQL's CancelRequest (protocol 3): a new connection to the server sends the
 * backend's process id and secret key; the server cancels that backend's statement.
 */
export function sendCancelRequest(conn: ClientLike): void {
  const { processID, secretKey, host, port } = conn;
  if (processID == null || secretKey == null || port == null) return;
  const socket =
    host && host.startsWith('/')
      ? net.connect(`${host}/.s.PGSQL.${port}`)
      : net.connect(port, host || 'localhost');
  socket.on('error', () => {});
  socket.setTimeout(5000, () => socket.destroy());
  socket.on('connect', () => {
    const message = Buffer.alloc(16);
    message.writeInt32BE(16, 0);
    message.writeInt32BE(80877102, 4);
    message.writeInt32BE(processID, 8);
    message.writeInt32BE(secretKey | 0, 12);
    socket.end(message);
  });
}
