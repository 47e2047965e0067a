/** Retries while the server is unavailable: exponential backoff with full jitter. */

export interface RetryPolicy {
  /** Attempts in all, the first included (1: no retry). */
  readonly attempts: number;
  /** The ceiling of the first backoff, in ms; it doubles with each attempt. */
  readonly baseDelayMs: number;
  /** The largest ceiling of a backoff, in ms. */
  readonly maxDelayMs: number;
}

/** 5 attempts, backoff from 100 ms up to 2 s. */
export const DEFAULT_RETRY: RetryPolicy = Object.freeze({
  attempts: 5,
  baseDelayMs: 100,
  maxDelayMs: 2000,
});

/** One attempt: errors come back at once. */
export const NO_RETRY: RetryPolicy = Object.freeze({ attempts: 1, baseDelayMs: 0, maxDelayMs: 0 });

/** The wait after the `attempt`-th failure: uniform in [0, min(max, base * 2^(attempt-1))]. */
export function backoffDelay(policy: RetryPolicy, attempt: number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.random() * Math.max(0, ceiling);
}

/** Wait `ms`; rejects with the signal's reason on abort. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
