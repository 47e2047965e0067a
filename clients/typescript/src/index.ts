export { MatchmakerClient } from './client';
export type { Answer, CallOptions, ClientOptions, ResultAnswer } from './client';
export type { ClientLike, PoolClientLike, PoolLike, QueryResultLike, Source } from './db';
export {
  MatchmakerError,
  parseRefusal,
  PermissionDenied,
  Refusal,
  Unavailable,
} from './errors';
export type {
  CancelledEvent,
  CountdownEvent,
  MatchEvent,
  MatchmakerEvent,
  OtherEvent,
  ReconnectedEvent,
  Slot,
} from './events';
export { parseNotification } from './events';
export { KeepAlive } from './keepalive';
export type { KeepAliveOptions } from './keepalive';
export type {
  Attributes,
  Avoid,
  BackfillMember,
  BackfillStatus,
  Countdown,
  EntryStatus,
  Json,
  LeftOver,
  MatchPlayer,
  PartyMember,
  PlayerStatus,
  QueueInfo,
  Rating,
  Server,
  Ticket,
  WaitingFor,
} from './models';
export { DEFAULT_RETRY, NO_RETRY } from './retry';
export type { RetryPolicy } from './retry';
export { EventStream } from './stream';
export type { EventStreamOptions, ListenConnection } from './stream';
export { VERSION } from './version';
