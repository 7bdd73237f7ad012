import { describe, expect, it } from 'vitest';
import { transferStatusOf } from './sdk-client.js';

describe('transferStatusOf: only the switch\'s explicit words are outcomes', () => {
  it.each([
    // As the switch connector answers once the hub answered (hubAnswer in test/support/fake-switch.ts):
    // currentState COMPLETED, the hub's word in the fulfil.
    [{ currentState: 'COMPLETED', fulfil: { body: { transferState: 'COMMITTED', completedTimestamp: '2026-11-27T10:00:00.000Z' } } }, 'COMPLETED'],
    [{ currentState: 'COMPLETED', fulfil: { body: { transferState: 'ABORTED' } } }, 'ABORTED'],
    [{ currentState: 'COMPLETED', fulfil: { body: { transferState: 'RESERVED' } } }, 'UNKNOWN'],
    [{ currentState: 'COMPLETED', fulfil: { body: { transferState: 'RECEIVED' } } }, 'UNKNOWN'],
    [{ currentState: 'COMPLETED', fulfil: { body: {} } }, 'UNKNOWN'],
    // COMPLETED without the hub's word says nothing about the hub.
    [{ currentState: 'COMPLETED' }, 'UNKNOWN'],
    [{ currentState: 'ABORTED', fulfil: { body: { transferState: 'COMMITTED' } } }, 'COMPLETED'],
    [{ currentState: 'ERROR_OCCURRED', fulfil: { body: { transferState: 'COMMITTED' } } }, 'COMPLETED'],
    [{ currentState: 'ABORTED' }, 'ABORTED'],
    [{ currentState: 'ERROR_OCCURRED', fulfil: { body: { transferState: 'ABORTED' } } }, 'ABORTED'],
    [{ currentState: 'ERROR_OCCURRED', lastError: { mojaloopError: { errorInformation: { errorCode: '3208' } } } }, 'NOT_AT_HUB'],
    [{ currentState: 'ERROR_OCCURRED', lastError: { mojaloopError: { errorInformation: { errorCode: '5100' } } } }, 'UNKNOWN'],
    [{ currentState: 'WAITING_FOR_QUOTE_ACCEPTANCE' }, 'WAITING_FOR_QUOTE_ACCEPTANCE'],
    [{ currentState: 'WAITING_FOR_PARTY_ACCEPTANCE' }, 'WAITING_FOR_PARTY_ACCEPTANCE'],
    [{ currentState: 'WAITING_FOR_CONVERSION_ACCEPTANCE' }, 'WAITING_FOR_CONVERSION_ACCEPTANCE'],
    [{ currentState: 'waiting_for_quote_acceptance' }, 'UNKNOWN'],
    [{ currentState: 'SOMETHING_NEW' }, 'UNKNOWN'],
    [{}, 'UNKNOWN'],
    ['COMPLETED', 'UNKNOWN'],
    [null, 'UNKNOWN'],
  ])('%j -> %s', (body, expected) => {
    expect(transferStatusOf(body)).toBe(expected);
  });
});
