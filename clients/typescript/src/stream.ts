/**
 * EventStream: the notifications of a login's queue channels as an async iterable that
 * survives a lost connection. On every connect it asks queue_channel again (the
 * operators may change the key), LISTENs, and after a loss reads player_status and
 * match_details for the matches made meanwhile, so that no match of the login's players
 * is missed and none is delivered twice.
 */
import { isUnavailable, Refusal, translate } from './errors';
import { MatchEvent, MatchmakerEvent, parseNotification, Slot } from './events';
import { countdown, COUNTDOWN_COLUMNS, date, num } from './models';
import { backoffDelay, RetryPolicy } from './retry';

/** A LISTEN connection: node-postgres's `Client` or `PoolClient`. */
export interface ListenConnection {
  query(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
  on(event: 'notification', listener: (msg: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  /** A pool's connection: released (destroyed) when the stream is done with it. */
  release?: (destroy?: boolean | Error) => void;
  /** A connection of its own: ended when the stream is done with it. */
  end?: () => Promise<void> | void;
}

export interface EventStreamOptions {
  /** The queues whose channels to follow. */
  queues: string[];
  /**
   * Where the LISTEN connection comes from, as the login whose players you follow: a
   * node-postgres `Pool` (the stream keeps one of its connections checked out), or a
   * function that returns a new connected `Client` (ended when lost or closed).
   */
  connect: { connect(): Promise<ListenConnection> } | (() => Promise<ListenConnection>);
  /** Also deliver the matches made since then (a backend that restarted), on the first connect. */
  since?: Date;
  /** After a reconnect, read the matches made since this long before the connection was last known alive. Default 2 minutes. */
  recoverWindowMs?: number;
  /** Check an idle connection this often. Default 5 s. */
  pingEveryMs?: number;
  /** A check not answered within this counts as a lost connection. Default 10 s. */
  pingTimeoutMs?: number;
  /** Backoff between reconnects (attempts are unbounded). Default 200 ms doubling to 5 s. */
  reconnect?: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>;
  /** Closes the stream on abort. */
  signal?: AbortSignal;
  /** Each lost connection or failed reconnect, for logging. */
  onError?: (err: unknown) => void;
}

type Waiter = { resolve: (r: IteratorResult<MatchmakerEvent>) => void; reject: (e: unknown) => void };

export class EventStream implements AsyncIterable<MatchmakerEvent> {
  private readonly opts: EventStreamOptions;
  private readonly buffer: MatchmakerEvent[] = [];
  private readonly waiters: Waiter[] = [];
  /** kind:match_id:player_id -> when it was delivered (local ms). */
  private readonly delivered = new Map<string, number>();
  private readonly readyCheckQueues = new Set<string>();
  private conn: ListenConnection | null = null;
  private closed = false;
  private failure: unknown = undefined;
  private wake: () => void = () => {};
  private lastAliveServer: Date | null = null;
  private lastAliveLocal = 0;
  private readonly loopDone: Promise<void>;
  private readyResolve!: () => void;
  private readyReject!: (e: unknown) => void;
  /** Resolves once the first LISTEN is in place: enqueue after it. */
  readonly ready: Promise<void>;

  private constructor(opts: EventStreamOptions) {
    if (!opts.queues.length) throw new TypeError('EventStream: name at least one queue');
    this.opts = opts;
    this.ready = new Promise((resolve, reject) => {
      this.readyResolve = resolve;
      this.readyReject = reject;
    });
    this.ready.catch(() => {});
    opts.signal?.addEventListener('abort', () => void this.close(), { once: true });
    this.loopDone = this.loop();
  }

  /**
   * Open a stream; resolves once it LISTENs on every queue's channel. Rejects when the
   * first connect fails for a reason other than an unavailable server (a login without
   * the role, an unknown queue); while the server is unavailable it keeps trying.
   */
  static async open(opts: EventStreamOptions): Promise<EventStream> {
    const stream = new EventStream(opts);
    try {
      await stream.ready;
    } catch (err) {
      await stream.close();
      throw err;
    }
    return stream;
  }

  [Symbol.asyncIterator](): AsyncIterator<MatchmakerEvent> {
    return {
      next: () => this.nextResult(),
      return: async () => {
        await this.close();
        return { done: true, value: undefined };
      },
    };
  }

  /**
   * The next event; null once the stream is closed, or when `timeoutMs` passes first.
   */
  async next(timeoutMs?: number): Promise<MatchmakerEvent | null> {
    if (timeoutMs === undefined) {
      const r = await this.nextResult();
      return r.done ? null : r.value;
    }
    let timer: NodeJS.Timeout | undefined;
    let waiter: Waiter | undefined;
    const result = await new Promise<IteratorResult<MatchmakerEvent>>((resolve, reject) => {
      if (this.buffer.length || this.closed || this.failure !== undefined) {
        this.nextResult().then(resolve, reject);
        return;
      }
      waiter = { resolve, reject };
      this.waiters.push(waiter);
      timer = setTimeout(() => {
        const i = this.waiters.indexOf(waiter!);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve({ done: true, value: undefined });
      }, timeoutMs);
    });
    if (timer) clearTimeout(timer);
    return result.done ? null : result.value;
  }

  /** Stop: the LISTEN connection is released; iterators end after the buffered events. */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.wake();
      this.drop();
      this.flushWaiters();
    }
    await this.loopDone;
  }

  // ---- Delivery --------------------------------------------------------------------------

  private nextResult(): Promise<IteratorResult<MatchmakerEvent>> {
    const event = this.buffer.shift();
    if (event) return Promise.resolve({ done: false, value: event });
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.closed) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  private push(event: MatchmakerEvent): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve({ done: false, value: event });
    else this.buffer.push(event);
  }

  private flushWaiters(): void {
    for (const w of this.waiters.splice(0)) {
      if (this.failure !== undefined) w.reject(this.failure);
      else w.resolve({ done: true, value: undefined });
    }
  }

  /** A match event, less the players it was delivered for already; false: nothing new. */
  private deliverMatch(event: MatchEvent): boolean {
    const now = Date.now();
    if (event.playersOmitted) {
      const key = `${event.type}:${event.matchId}:*`;
      if (this.delivered.has(key)) return false;
      this.delivered.set(key, now);
      this.push(event);
      return true;
    }
    const fresh = event.players.filter((s) => !this.delivered.has(`${event.type}:${event.matchId}:${s.playerId}`));
    if (!fresh.length) return false;
    for (const s of fresh) this.delivered.set(`${event.type}:${event.matchId}:${s.playerId}`, now);
    this.push(fresh.length === event.players.length ? event : { ...event, players: fresh });
    return true;
  }

  private onNotification(channels: Map<string, string>, msg: { channel: string; payload?: string }): void {
    const queue = channels.get(msg.channel);
    if (queue === undefined || this.closed) return;
    const event = parseNotification(queue, msg.payload ?? '');
    if (event.type === 'match' || event.type === 'ready_check' || event.type === 'ready' || event.type === 'backfill') {
      this.deliverMatch(event);
    } else {
      this.push(event);
    }
  }

  // ---- The connection --------------------------------------------------------------------

  /** A new connection; one that arrives after close() is let go at once. */
  private async acquire(): Promise<ListenConnection> {
    const source = this.opts.connect;
    const pending = typeof source === 'function' ? source() : source.connect();
    const closing = new Promise<null>((resolve) => (this.wake = () => resolve(null)));
    const conn = await Promise.race([pending, closing]);
    if (conn === null) {
      pending.then((c) => {
        this.conn = c;
        this.drop();
      }, () => {});
      throw new Error('closed');
    }
    return conn;
  }

  /** Let go of the current connection (destroyed: it may carry LISTENs or be broken). */
  private drop(): void {
    const conn = this.conn;
    this.conn = null;
    if (!conn) return;
    try {
      if (conn.release) conn.release(true);
      else void Promise.resolve(conn.end?.()).catch(() => {});
    } catch {
      // Already gone.
    }
  }

  private async loop(): Promise<void> {
    const backoff = { attempts: 0, baseDelayMs: 200, maxDelayMs: 5000, ...this.opts.reconnect };
    const pingEvery = this.opts.pingEveryMs ?? 5000;
    const pingTimeout = this.opts.pingTimeoutMs ?? Math.max(10000, pingEvery);
    let connectedBefore = false;
    let failures = 0;
    let lostAt = 0;
    let lostError = '';
    while (!this.closed) {
      let broken: unknown = null;
      try {
        const conn = await this.acquire();
        this.conn = conn;
        if (this.closed) break;
        conn.on('error', (err) => {
          broken ??= err;
          this.wake();
        });
        conn.on('end', () => {
          broken ??= new Error('the LISTEN connection ended');
          this.wake();
        });
        const channels = new Map<string, string>();
        conn.on('notification', (msg) => this.onNotification(channels, msg));
        for (const queue of this.opts.queues) {
          const { rows } = await conn.query('SELECT queue_channel(queue => $1) AS channel', [queue]);
          const channel = String(rows[0].channel);
          channels.set(channel, queue);
          await conn.query(`LISTEN "${channel.replace(/"/g, '""')}"`);
        }
        const setup = await conn.query(
          `SELECT now() AS now,
                  ARRAY(SELECT queue FROM queue_catalog
                         WHERE queue = ANY ($1::text[]) AND ready_timeout IS NOT NULL) AS rc,
                  ARRAY(SELECT q FROM unnest($1::text[]) q
                         WHERE q NOT IN (SELECT queue FROM queue_catalog)) AS unknown`,
          [this.opts.queues],
        );
        const unknown = setup.rows[0].unknown as string[];
        if (!connectedBefore && unknown.length) {
          // A typo would otherwise listen in silence; a queue retired later is not an error.
          const value = `'${unknown[0]!.replace(/'/g, "''")}'`;
          const rule = 'unknown queue (not in queue_catalog)';
          throw new Refusal(`queues = ${value}: ${rule}`, { field: 'queues', value, rule });
        }
        this.readyCheckQueues.clear();
        for (const q of setup.rows[0].rc as string[]) this.readyCheckQueues.add(q);
        const since = connectedBefore && this.lastAliveServer
          ? new Date(this.lastAliveServer.getTime() - (this.opts.recoverWindowMs ?? 120_000))
          : !connectedBefore ? this.opts.since ?? null : null;
        if (connectedBefore) {
          this.push({ type: 'reconnected', downMs: Date.now() - lostAt, error: lostError });
        }
        if (since) await this.recover(conn, since);
        if (connectedBefore) await this.resyncCountdowns(conn);
        this.alive(date(setup.rows[0].now));
        connectedBefore = true;
        failures = 0;
        this.readyResolve();
        // Connected: check the connection now and then until it is lost or closed.
        while (!this.closed && broken === null) {
          await this.pause(pingEvery);
          if (this.closed || broken !== null) break;
          const { rows } = await withTimeout(conn.query('SELECT now() AS now'), pingTimeout);
          this.alive(date(rows[0].now));
        }
      } catch (err) {
        broken ??= err;
      }
      this.drop();
      if (this.closed) break;
      if (!connectedBefore && broken !== null && !isUnavailable(broken)) {
        // The first connect failed for a reason a retry will not fix.
        const err = translate(broken);
        this.readyReject(err);
        this.failure = err;
        this.closed = true;
        this.flushWaiters();
        break;
      }
      if (failures === 0) {
        lostAt = Date.now();
        lostError = broken instanceof Error ? broken.message : String(broken);
      }
      this.opts.onError?.(broken);
      failures += 1;
      await this.pause(backoffDelay({ ...backoff, attempts: 0 }, Math.min(failures, 16)));
    }
    this.closed = true;
    this.flushWaiters();
  }

  /** Wait `ms`, or less when the connection breaks or the stream closes. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }

  /** The connection answered at server time `now`: forget deliveries no recovery can repeat. */
  private alive(now: Date): void {
    this.lastAliveServer = now;
    this.lastAliveLocal = Date.now();
    const horizon = this.lastAliveLocal - (this.opts.recoverWindowMs ?? 120_000) - 60_000;
    for (const [key, at] of this.delivered) {
      if (at < horizon) this.delivered.delete(key);
    }
  }

  /**
   * The matches of this login's players in the stream's queues made since `since`, from
   * player_status (whose players are this login's) and match_details (the roster).
   */
  private async recover(conn: ListenConnection, since: Date): Promise<void> {
    const { rows } = await conn.query(
      `WITH mine AS (
           SELECT s.match_id, bool_or(s.status = 'pending') AS pending,
                  bool_or(s.session_id IS NOT NULL) AS backfill, max(s.answer_by) AS answer_by
             FROM player_status s
            WHERE s.queue = ANY ($1::text[]) AND s.status IN ('matched', 'pending')
              AND s.match_id IS NOT NULL
            GROUP BY s.match_id)
       SELECT d.match_id, d.round_id, d.queue, d.player_id, d.team, d.party_id, d.role,
              d.relay, d.server_id, d.server_address,
              mine.pending, mine.backfill, mine.answer_by
         FROM mine JOIN match_details d ON d.match_id = mine.match_id
        WHERE d.created_at >= $2
        ORDER BY d.match_id, d.team, d.player_id`,
      [this.opts.queues, since],
    );
    const byMatch = new Map<number, any[]>();
    for (const r of rows) {
      const id = num(r.match_id);
      const list = byMatch.get(id) ?? [];
      list.push(r);
      byMatch.set(id, list);
    }
    for (const [matchId, roster] of byMatch) {
      const first = roster[0];
      const type: MatchEvent['type'] = first.pending
        ? 'ready_check'
        : first.backfill
          ? 'backfill'
          : this.readyCheckQueues.has(first.queue)
            ? 'ready'
            : 'match';
      const seen = new Set<string>();
      const players: Slot[] = [];
      for (const r of roster) {
        if (seen.has(r.player_id)) continue;
        seen.add(r.player_id);
        players.push({ playerId: r.player_id, team: num(r.team), partyId: r.party_id ?? null, role: r.role ?? null });
      }
      this.deliverMatch({
        type,
        queue: first.queue,
        roundId: num(first.round_id),
        matchId,
        part: 1,
        parts: 1,
        players,
        playersOmitted: false,
        relay: first.relay === true,
        serverId: first.server_id ?? null,
        serverAddress: first.server_address ?? null,
        answerBy: first.pending && first.answer_by ? date(first.answer_by) : null,
        recovered: true,
      });
    }
  }

  /** One countdown per queue after a reconnect, standing for the ones missed. */
  private async resyncCountdowns(conn: ListenConnection): Promise<void> {
    const { rows } = await conn.query(
      `SELECT ${COUNTDOWN_COLUMNS} FROM queue_countdown WHERE queue = ANY ($1::text[]) ORDER BY queue`,
      [this.opts.queues],
    );
    for (const r of rows) {
      const c = countdown(r);
      this.push({
        type: 'countdown',
        queue: c.queue,
        nextRoundAt: c.nextRoundAt,
        secondsToNextRound: c.secondsToNextRound,
        waitingFor: c.waitingFor,
        playersMissing: c.playersMissing,
        latestRoundAt: c.latestRoundAt,
        secondsToLatestRound: c.secondsToLatestRound,
        roundStartedAt: c.roundStartedAt,
        cause: 'resync',
        roundId: c.lastRoundId,
        trigger: null,
      });
    }
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the LISTEN connection did not answer within ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}
