import { describe, expect, it } from 'vitest';
import { readNotification } from './transfer-notification.js';

describe('readNotification: money moves only on an unambiguous word', () => {
  it.each([
    ['COMPLETED', undefined, { kind: 'commit', notifiedState: 'COMPLETED' }],
    ['COMPLETED', 'COMMITTED', { kind: 'commit', notifiedState: 'COMPLETED' }],
    [undefined, 'COMMITTED', { kind: 'commit', notifiedState: 'COMMITTED' }],
    ['ABORTED', undefined, { kind: 'release', notifiedState: 'ABORTED' }],
    ['ERROR_OCCURRED', undefined, { kind: 'release', notifiedState: 'ERROR_OCCURRED' }],
    ['ABORTED', 'ABORTED', { kind: 'release', notifiedState: 'ABORTED' }],
    ['ERROR_OCCURRED', 'ABORTED', { kind: 'release', notifiedState: 'ERROR_OCCURRED' }],
    [undefined, 'ABORTED', { kind: 'release', notifiedState: 'ABORTED' }],
    [undefined, undefined, { kind: 'silent' }],
  ] as const)('currentState %s, hub %s: %o', (currentState, hubState, verdict) => {
    expect(readNotification(currentState, hubState)).toEqual(verdict);
  });

  it.each([
    ['COMPLETED', 'ABORTED', "currentState COMPLETED contradicts the hub's ABORTED"],
    ['ABORTED', 'COMMITTED', "currentState ABORTED contradicts the hub's COMMITTED"],
    ['ERROR_OCCURRED', 'COMMITTED', "currentState ERROR_OCCURRED contradicts the hub's COMMITTED"],
    ['RESERVED', undefined, 'currentState "RESERVED" is not COMPLETED, ABORTED or ERROR_OCCURRED'],
    ['completed', undefined, 'currentState "completed" is not COMPLETED, ABORTED or ERROR_OCCURRED'],
    ['COMPLETED ', undefined, 'currentState "COMPLETED " is not COMPLETED, ABORTED or ERROR_OCCURRED'],
    ['', undefined, 'currentState "" is not COMPLETED, ABORTED or ERROR_OCCURRED'],
    ['toString', undefined, 'currentState "toString" is not COMPLETED, ABORTED or ERROR_OCCURRED'],
    ['COMPLETED', 'RESERVED', 'finalNotification.transferState "RESERVED" is not COMMITTED or ABORTED'],
    [undefined, 'committed', 'finalNotification.transferState "committed" is not COMMITTED or ABORTED'],
    ['ABORTED', 'COMPLETED', 'finalNotification.transferState "COMPLETED" is not COMMITTED or ABORTED'],
  ] as const)('currentState %j, hub %j is doubtful: %s', (currentState, hubState, reason) => {
    expect(readNotification(currentState, hubState)).toEqual({ kind: 'doubtful', reason });
  });
});
