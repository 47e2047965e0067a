/**
 * The events of a login's notification channels (docs/client-guide.md, "Notifications"),
 * as typed objects, and the events an EventStream adds (reconnected).
 */
import { dateOrNull, num, numOrNull, WaitingFor } from './models';

/** A player's seat in a match notification. */
export interface Slot {
  playerId: string;
  team: number;
  partyId: string | null;
  role: string | null;
}

/**
 * A match holding a player of this login: `match` (final), `ready_check` (pending: accept
 * by `answerBy`), `ready` (every player accepted: final), `backfill` (players added to a
 * running session). A match too large for one payload comes in parts, each naming some
 * players; `playersOmitted`: not even one fitted, read `matchDetails`.
 */
export interface MatchEvent {
  type: 'match' | 'ready_check' | 'ready' | 'backfill';
  queue: string;
  roundId: number;
  matchId: number;
  part: number;
  parts: number;
  players: Slot[];
  playersOmitted: boolean;
  /** Nobody in the match can host it: route it through your relay. */
  relay: boolean;
  serverId: string | null;
  serverAddress: string | null;
  /** ready_check: the time to accept by. */
  answerBy: Date | null;
  /** Read from the views after a reconnect, not notified. */
  recovered: boolean;
}

/** A ready-check match was cancelled: this login's players queued again, or out. */
export interface CancelledEvent {
  type: 'cancelled';
  queue: string;
  matchId: number;
  reason: string | null;
  requeued: string[];
  declined: string[];
  /** The lists did not fit the payload: read playerStatus. */
  playersOmitted: boolean;
  /** A game server's login: the server that was to host it is free again. */
  serverId: string | null;
}

/** The queue's countdown moved (`resync`: read after a reconnect). */
export interface CountdownEvent {
  type: 'countdown';
  queue: string;
  nextRoundAt: Date | null;
  secondsToNextRound: number | null;
  waitingFor: WaitingFor | null;
  playersMissing: number | null;
  latestRoundAt: Date | null;
  secondsToLatestRound: number | null;
  roundStartedAt: Date | null;
  cause: 'round' | 'round_start' | 'config' | 'pool' | 'start' | 'resync' | string;
  roundId: number | null;
  trigger: string | null;
}

/**
 * The stream's connection was lost and is back. The events after it marked
 * `recovered` are the matches made meanwhile.
 */
export interface ReconnectedEvent {
  type: 'reconnected';
  /** How long the stream had no connection. */
  downMs: number;
  /** Why it was lost. */
  error: string;
}

/** A notification this version does not know, as parsed JSON. */
export interface OtherEvent {
  type: 'other';
  queue: string;
  payload: unknown;
}

export type MatchmakerEvent = MatchEvent | CancelledEvent | CountdownEvent | ReconnectedEvent | OtherEvent;

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.map(String) : [];
}

/** A payload of `queue`'s channel as an event. */
export function parseNotification(queue: string, payload: string): MatchmakerEvent {
  let p: any;
  try {
    p = JSON.parse(payload);
  } catch {
    return { type: 'other', queue, payload };
  }
  switch (p?.event) {
    case 'match':
    case 'ready_check':
    case 'ready':
    case 'backfill':
      return {
        type: p.event,
        queue: p.queue ?? queue,
        roundId: num(p.round_id),
        matchId: num(p.match_id),
        part: numOrNull(p.part) ?? 1,
        parts: numOrNull(p.parts) ?? 1,
        players: (Array.isArray(p.players) ? p.players : []).map((s: any) => ({
          playerId: String(s.player_id),
          team: num(s.team),
          partyId: s.party_id ?? null,
          role: s.role ?? null,
        })),
        playersOmitted: p.players_omitted === true,
        relay: p.relay === true,
        serverId: p.server_id ?? null,
        serverAddress: p.server_address ?? null,
        answerBy: dateOrNull(p.answer_by),
        recovered: false,
      };
    case 'cancelled':
      return {
        type: 'cancelled',
        queue: p.queue ?? queue,
        matchId: num(p.match_id),
        reason: p.reason ?? null,
        requeued: strings(p.requeued),
        declined: strings(p.declined),
        playersOmitted: p.players_omitted === true,
        serverId: p.server_id ?? null,
      };
    case 'countdown':
      return {
        type: 'countdown',
        queue: p.queue ?? queue,
        nextRoundAt: dateOrNull(p.next_round_at),
        secondsToNextRound: numOrNull(p.seconds_to_next_round),
        waitingFor: p.waiting_for ?? null,
        playersMissing: numOrNull(p.players_missing),
        latestRoundAt: dateOrNull(p.latest_round_at),
        secondsToLatestRound: numOrNull(p.seconds_to_latest_round),
        roundStartedAt: dateOrNull(p.round_started_at),
        cause: p.cause ?? null,
        roundId: numOrNull(p.round_id),
        trigger: p.trigger ?? null,
      };
    default:
      return { type: 'other', queue, payload: p };
  }
}
