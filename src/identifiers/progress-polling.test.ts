import { describe, expect, it } from 'vitest';
import { nextPollDelayMs } from './progress-polling.js';

describe('the command line\'s wait between two progress requests', () => {
  it('is ten times the last answer\'s time, at least 500 ms and at most 10 s', () => {
    expect(nextPollDelayMs(3)).toBe(500);
    expect(nextPollDelayMs(50)).toBe(500);
    expect(nextPollDelayMs(50.01)).toBe(501);
    expect(nextPollDelayMs(480)).toBe(4_800);
    expect(nextPollDelayMs(1_000)).toBe(10_000);
    expect(nextPollDelayMs(4_000)).toBe(10_000);
  });

  it('is the shortest for a time that is not one', () => {
    expect(nextPollDelayMs(Number.NaN)).toBe(500);
    expect(nextPollDelayMs(-1)).toBe(500);
  });
});
