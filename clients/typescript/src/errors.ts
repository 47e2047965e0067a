/**
 * Typed errors. The matchmaker's functions refuse bad input in SQLSTATE class 22 with
 * the message `field = value: rule` (22023), or with PostgreSQL's own message when a text
 * is not a value of the parameter's type at all (22P02, 22003, 22007). Classes 08, 40,
 * 53 and 57, and a lost connection, mean the server is unavailable for now.
 */

/** The base class of every error this library raises (aborts excepted: see README). */
export class MatchmakerError extends Error {
  /** The SQLSTATE, when the server sent one. */
  readonly sqlstate: string | undefined;

  constructor(message: string, options: { sqlstate?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'MatchmakerError';
    this.sqlstate = options.sqlstate;
  }
}

/**
 * The request is wrong (class 22); nothing was written. Never retried: fix the request.
 *
 * For the functions' own checks (22023), `field`, `value` and `rule` are the parts of
 * `field = value: rule`: `latencies.eu-west`, `-3`, `must be between 0 and 10000 ms`.
 * `value` is as the message shows it, with the quotes of a text (`'alice'`), and null
 * for `NULL`. For PostgreSQL's own messages (22P02, ...) `field` and `value` are null
 * and `rule` is the whole message.
 */
export class Refusal extends MatchmakerError {
  readonly field: string | null;
  readonly value: string | null;
  readonly rule: string;

  constructor(
    message: string,
    parts: { field: string | null; value: string | null; rule: string },
    options: { sqlstate?: string; cause?: unknown } = {},
  ) {
    super(message, options);
    this.name = 'Refusal';
    this.field = parts.field;
    this.value = parts.value;
    this.rule = parts.rule;
  }
}

/**
 * The server is unavailable for now (classes 08, 40, 53, 57, or a lost connection),
 * after the retries the call was allowed. Retry later.
 */
export class Unavailable extends MatchmakerError {
  /** How many times the call was sent (or tried to connect). */
  readonly attempts: number;
  /**
   * The connection broke after a write was sent, so it may have committed. Only calls
   * that are not safe to send twice raise this: after an `enqueue`, read
   * `playerStatus` before enqueueing again.
   */
  readonly mayHaveCommitted: boolean;

  constructor(
    message: string,
    details: { attempts: number; mayHaveCommitted: boolean },
    options: { sqlstate?: string; cause?: unknown } = {},
  ) {
    super(message, options);
    this.name = 'Unavailable';
    this.attempts = details.attempts;
    this.mayHaveCommitted = details.mayHaveCommitted;
  }
}

/** 42501: the login is not a member of `matchmaker_client` / `matchmaker_server`. */
export class PermissionDenied extends MatchmakerError {
  constructor(message: string, options: { sqlstate?: string; cause?: unknown } = {}) {
    super(message, options);
    this.name = 'PermissionDenied';
  }
}

/**
 * Split `field = value: rule`; null when the message does not have that shape.
 *
 * The value may be a quoted text (`'alice'`, quotes doubled inside, `E'...'` with
 * backslashes) that contains `: ` itself, so a quoted value is read to its closing
 * quote. A value cut at 80 characters (`'aaaa...`) has no closing quote: then the value
 * ends at the first `: `.
 */
export function parseRefusal(
  message: string,
): { field: string; value: string | null; rule: string } | null {
  const head = /^([A-Za-z_][A-Za-z0-9_.\[\]-]*) = /.exec(message);
  if (!head) return null;
  const field = head[1]!;
  const rest = message.slice(head[0].length);
  let value: string | undefined;
  let rule: string | undefined;
  const quoted = /^E?'/.exec(rest);
  if (quoted) {
    let i = quoted[0].length;
    const backslashes = quoted[0].startsWith('E');
    while (i < rest.length) {
      const c = rest[i];
      if (backslashes && c === '\\') {
        i += 2;
      } else if (c === "'" && rest[i + 1] === "'") {
        i += 2;
      } else if (c === "'") {
        break;
      } else {
        i += 1;
      }
    }
    if (i < rest.length && rest.startsWith(': ', i + 1)) {
      value = rest.slice(0, i + 1);
      rule = rest.slice(i + 3);
    }
  }
  if (value === undefined) {
    const at = rest.indexOf(': ');
    if (at < 0) return null;
    value = rest.slice(0, at);
    rule = rest.slice(at + 2);
  }
  return { field, value: value === 'NULL' ? null : value, rule: rule ?? '' };
}

/** The SQLSTATE of a driver error, if any. */
export function sqlstateOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** Classes 08, 40, 53, 57, or a connection the driver lost (no SQLSTATE). */
export function isUnavailable(err: unknown): boolean {
  const state = sqlstateOf(err);
  if (state !== undefined) return /^(08|40|53|57)/.test(state);
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, ...
  return /Connection terminated|connection (?:was )?closed|Client has encountered a connection error|timeout exceeded when trying to connect|Client was closed|not queryable/i.test(
    err.message,
  );
}

/**
 * The statement failed with an ERROR (not FATAL): its transaction rolled back, so it
 * wrote nothing and may be sent again, whatever it was.
 */
export function rolledBack(err: unknown): boolean {
  const e = err as { severity?: unknown } | null;
  return sqlstateOf(err) !== undefined && e?.severity === 'ERROR';
}

/** A driver error as the error this library raises (Unavailable is made by the caller). */
export function translate(err: unknown): unknown {
  const state = sqlstateOf(err);
  if (state === undefined) return err;
  const message = (err as Error).message;
  if (state.startsWith('22')) {
    const parts = parseRefusal(message) ?? { field: null, value: null, rule: message };
    return new Refusal(message, parts, { sqlstate: state, cause: err });
  }
  if (state === '42501') return new PermissionDenied(message, { sqlstate: state, cause: err });
  return new MatchmakerError(message, { sqlstate: state, cause: err });
}
