/** Time as the aggregate sees it; tests substitute a clock they control. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
