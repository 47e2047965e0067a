/**
 * KeepAlive: calls keep_alive on a timer for the players a backend has waiting, so their
 * tickets do not expire. One call per tick for all of them.
 */
import type { MatchmakerClient } from './client';

export interface KeepAliveOptions {
  /** The queue (null: every queue; then `everyMs` is required). */
  queue: string | null;
  /** The players to keep alive; more with add(), fewer with delete(). */
  players?: Iterable<string>;
  /** The period; default the queue's keep_alive_every. */
  everyMs?: number;
  /** A failed tick (the next tries again). */
  onError?: (err: unknown) => void;
  /** Each tick's count of refreshed entries (fewer than the players: some left the queue). */
  onTick?: (refreshed: number, sent: number) => void;
}

/** keep_alive takes at most this many ids per call. */
const MAX_IDS = 10_000;

export class KeepAlive {
  readonly players: Set<string>;
  /** The last tick's count of refreshed entries (null before the first). */
  lastRefreshed: number | null = null;
  lastError: unknown = null;
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private abort = new AbortController();

  private constructor(
    private readonly client: MatchmakerClient,
    private readonly opts: KeepAliveOptions,
    readonly everyMs: number,
  ) {
    this.players = new Set(opts.players ?? []);
  }

  /** Start ticking (the first tick after one period). */
  static async start(client: MatchmakerClient, opts: KeepAliveOptions): Promise<KeepAlive> {
    let every = opts.everyMs;
    if (every === undefined) {
      if (opts.queue === null) throw new TypeError('KeepAlive: everyMs is required with queue null');
      const info = await client.queue(opts.queue);
      if (!info) throw new TypeError(`KeepAlive: unknown queue ${opts.queue}`);
      every = info.keepAliveEveryS * 1000;
    }
    const keeper = new KeepAlive(client, opts, every);
    keeper.timer = setInterval(() => void keeper.tick(), every);
    return keeper;
  }

  add(playerId: string): this {
    this.players.add(playerId);
    return this;
  }

  /** Stop refreshing a player (matched, cancelled). */
  delete(playerId: string): boolean {
    return this.players.delete(playerId);
  }

  /** One tick now; resolves when done (a tick already running is awaited instead). */
  tick(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    this.inFlight = this.refresh().finally(() => (this.inFlight = null));
    return this.inFlight;
  }

  private async refresh(): Promise<void> {
    const ids = [...this.players];
    if (!ids.length) return;
    try {
      let refreshed = 0;
      for (let i = 0; i < ids.length; i += MAX_IDS) {
        refreshed += await this.client.keepAlive(ids.slice(i, i + MAX_IDS), this.opts.queue, {
          signal: this.abort.signal,
        });
      }
      this.lastRefreshed = refreshed;
      this.lastError = null;
      this.opts.onTick?.(refreshed, ids.length);
    } catch (err) {
      if (this.abort.signal.aborted) return;
      this.lastError = err;
      this.opts.onError?.(err);
    }
  }

  /** Stop the timer; a tick in flight is abandoned. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.abort.abort();
    await this.inFlight?.catch(() => {});
  }
}
