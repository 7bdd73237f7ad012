import { ConnectorError, assert, isConnectorError, storedError } from '../domain/errors.js';
import { backendTransferState, statesLeadingTo } from '../domain/inbound-transfer.js';
import { identifierFormatProblem, isPartyIdType, type PartyId, type PartyIdType } from '../domain/identifiers.js';
import { fitExtensionList, partyExtensionList, type ApiType } from '../domain/iso20022.js';
import { requestHash } from '../domain/request-hash.js';
import type { Clock } from '../ports/clock.js';
import type { CoreBanking, PartyDetails } from '../ports/core-banking.js';
import type { Logger } from '../ports/logger.js';
import type { InboundStore, QuoteRecord, QuoteResponseBody, TransferRecord } from '../ports/store.js';
import type { InboundSettlement } from './inbound-settlement.js';
import type {
  PartyRef,
  PartyResponse,
  QuoteRequestBody,
  TransferDetails,
  TransferNotificationBody,
  TransferRequestBody,
  TransferResponse,
} from './incoming-types.js';
import { checkPayerPolicy, checkSamePayerInformation, payerKeysOf, type PayerPolicy } from './payer-policy.js';
import { quoteExpiration, quoteTerms } from './quote-terms.js';
import { checkPayeeCanReceive, checkTransferMatchesQuote } from './transfer-checks.js';
import { readNotification } from '../domain/transfer-notification.js';

export interface IncomingSettings {
  readonly supportedIdType: PartyIdType;
  readonly currency: string;
  readonly sendingServiceCharge: string;
  readonly expirationMs: number;
  readonly lei: string;
  readonly apiType: ApiType;
  readonly payerPolicy: PayerPolicy;
  /** Personal data shared by party lookups beyond the name (and ISO 20022 address data); none by default. */
  readonly partyShare: readonly ('dateOfBirth' | 'kycInformation')[];
}

export interface IncomingDependencies {
  readonly settings: IncomingSettings;
  readonly coreBanking: CoreBanking;
  readonly store: InboundStore;
  readonly settlement: InboundSettlement;
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * Incoming payments (payee side): the switch connector's backend API use cases. Each one
 * checks input, loads or creates the durable record, calls the institution, records the
 * outcome and answers; a retry of the same request finds the record and answers the same.
 */
export class IncomingPayments {
  constructor(private readonly deps: IncomingDependencies) {}

  async getParty(idType: string, idValue: string, idSubValue?: string): Promise<PartyResponse> {
    const party = await this.lookupPayee({ idType, idValue, ...(idSubValue === undefined ? {} : { idSubValue }) });
    if (party.status === 'closed') throw new ConnectorError('PartyNotFound');
    const { settings } = this.deps;
    let extensionList: PartyResponse['extensionList'];
    if (settings.apiType === 'iso20022') {
      const built = partyExtensionList({
        lei: settings.lei,
        ...(party.postalAddress === undefined ? {} : { postalAddress: party.postalAddress }),
        ...(party.countryOfResidence === undefined ? {} : { countryOfResidence: party.countryOfResidence }),
      });
      if (built.droppedKeys.length > 0) {
        this.deps.logger.warn({ idType, droppedKeys: built.droppedKeys }, 'party extension entries left out (API limits)');
      }
      extensionList = built.items;
    }
    return {
      idType: party.idType,
      idValue: party.idValue,
      ...(party.idSubValue === undefined ? {} : { idSubValue: party.idSubValue }),
      displayName: party.displayName,
      ...optional('firstName', party.firstName),
      ...optional('middleName', party.middleName),
      ...optional('lastName', party.lastName),
      // Personal data beyond the name leaves the institution only when it chose to share it.
      ...(settings.partyShare.includes('dateOfBirth') ? optional('dateOfBirth', party.dateOfBirth) : {}),
      ...(settings.partyShare.includes('kycInformation') ? optional('kycInformation', party.kycInformation) : {}),
      supportedCurrencies: [settings.currency],
      ...(extensionList === undefined ? {} : { extensionList }),
    };
  }

  async quote(body: QuoteRequestBody): Promise<QuoteResponseBody> {
    const hash = requestHash(body);
    // As for transfers, a new quote is checked and inserted without a read of its id first: the
    // insert answers whether it is known. A retry that no longer passes the checks (the payee's
    // account closed since) is answered from its stored record, as it was the first time.
    try {
      return await this.checkAndInsertQuote(body, hash);
    } catch (error) {
      const existing = await this.deps.store.findQuote(body.quoteId);
      if (existing === undefined) throw error;
      return answerRetry(existing, hash);
    }
  }

  /** The checks of a new quote, then its insert; answers the stored quote's answer (a retry's, if it was known). */
  private async checkAndInsertQuote(body: QuoteRequestBody, hash: string): Promise<QuoteResponseBody> {
    const { settings } = this.deps;
    this.checkIdType(body.to.idType);
    checkPayerId(body.from);
    this.checkCurrency(body.currency);

    const terms = quoteTerms(body.amountType, body.amount, body.currency, settings.sendingServiceCharge);
    const party = await this.lookupPayee(body.to);
    checkPayeeCanReceive(party.status);
    if (party.currency !== body.currency) throw new ConnectorError('UnsupportedCurrency', `payee account is in ${party.currency}`);
    const payerKeys = settings.apiType === 'iso20022' ? payerKeysOf(body.from, body.extensionList) : [];
    if (settings.apiType === 'iso20022') checkPayerPolicy(settings.payerPolicy, payerKeys);

    const now = this.deps.clock.now();
    const expiration = quoteExpiration(now, settings.expirationMs);
    const response: QuoteResponseBody = {
      quoteId: body.quoteId,
      transactionId: body.transactionId,
      transferAmount: terms.transferAmount,
      transferAmountCurrency: body.currency,
      payeeReceiveAmount: terms.payeeReceiveAmount,
      payeeReceiveAmountCurrency: body.currency,
      payeeFspFeeAmount: terms.fee,
      payeeFspFeeAmountCurrency: body.currency,
      expiration,
      ...(settings.apiType === 'iso20022' && body.extensionList !== undefined
        ? { extensionList: fitExtensionList(body.extensionList).items }
        : {}),
    };
    const record: QuoteRecord = {
      quoteId: body.quoteId,
      transactionId: body.transactionId,
      requestHash: hash,
      amountType: body.amountType,
      amount: body.amount,
      currency: body.currency,
      ...terms,
      payeeIdType: party.idType,
      payeeIdValue: body.to.idValue,
      payeeIdSubValue: body.to.idSubValue ?? null,
      expiration,
      payerKeys,
      response,
      createdAt: now.toISOString(),
    };
    const stored = await this.deps.store.insertQuote(record);
    return stored.created ? response : answerRetry(stored.record, hash);
  }

  async receiveTransfer(body: TransferRequestBody): Promise<TransferResponse> {
    const hash = requestHash(body);
    // A new transfer is checked and inserted without a read of its id first: the insert answers
    // whether it is known. A retry that no longer passes the checks (its quote expired since, the
    // payee's account changed) is answered from its stored record, as it was the first time.
    let inserted: TransferRecord;
    try {
      inserted = await this.checkAndInsertTransfer(body, hash);
    } catch (error) {
      // The insert has just found no transfer under this id: nothing to read.
      if (isConnectorError(error, 'QuoteAlreadyUsed')) throw error;
      const existing = await this.deps.store.findTransfer(body.transferId);
      if (existing === undefined) throw error;
      return this.resumeTransfer(existing, hash);
    }
    return this.resumeTransfer(inserted, hash);
  }

  /** The checks of a new transfer, then its insert; answers the stored record (a retry's, if it was known). */
  private async checkAndInsertTransfer(body: TransferRequestBody, hash: string): Promise<TransferRecord> {
    const { settings } = this.deps;
    this.checkIdType(body.to.idType);
    checkPayerId(body.from);
    this.checkCurrency(body.currency);
    const quote = await this.deps.store.findQuote(body.quote.quoteId);
    if (quote === undefined) throw new ConnectorError('QuoteNotFound', `quote ${body.quote.quoteId} is unknown`);
    checkTransferMatchesQuote(body, quote, this.deps.clock.now());
    // The payee quoted, sub-identifier included, is the one looked up and credited: a body whose
    // `to` left the sub-identifier out had found the customer's other account under the same number.
    const party = await this.lookupPayee({
      idType: quote.payeeIdType,
      idValue: quote.payeeIdValue,
      ...(quote.payeeIdSubValue === null ? {} : { idSubValue: quote.payeeIdSubValue }),
    });
    checkPayeeCanReceive(party.status);
    if (settings.apiType === 'iso20022') {
      checkSamePayerInformation(quote.payerKeys, payerKeysOf(body.from, body.extensionList, body.quoteRequestExtensions));
    }
    const inserted = await this.deps.store.insertTransfer({
      transferId: body.transferId,
      quoteId: quote.quoteId,
      requestHash: hash,
      state: 'RECEIVED',
      amountType: quote.amountType,
      transactionType: body.transactionType,
      amount: quote.amount,
      currency: quote.currency,
      transferAmount: quote.transferAmount,
      payeeReceiveAmount: quote.payeeReceiveAmount,
      payerIdType: body.from.idType,
      payerIdValue: body.from.idValue,
      payeeIdType: quote.payeeIdType,
      payeeIdValue: quote.payeeIdValue,
      payeeIdSubValue: quote.payeeIdSubValue,
      payeeAccountId: party.accountId,
      createdAt: this.deps.clock.now().toISOString(),
    });
    // One quote pays one transfer: another transferId for it is refused while the transfer that
    // took it holds or moved money, and accepted once that one ended with nothing moved (ABORTED,
    // REJECTED). The database decides (one unique index), so two replicas cannot both take it.
    if ('quoteTaken' in inserted) throw new ConnectorError('QuoteAlreadyUsed', `quote ${quote.quoteId}`);
    return inserted.record;
  }

  /** Answers a transfer request from its stored record, finishing the reservation if needed. */
  private async resumeTransfer(transfer: TransferRecord, hash: string): Promise<TransferResponse> {
    if (transfer.requestHash !== hash) {
      throw new ConnectorError('ModifiedRequest', `transfer ${transfer.transferId} was received with another body`);
    }
    const current = transfer.state === 'RECEIVED' ? await this.deps.settlement.reserve(transfer) : transfer;
    switch (current.state) {
      case 'RESERVED':
      case 'COMMITTING':
      case 'COMMITTED':
        assert(current.completedTimestamp !== null, `reserved transfer ${current.transferId} without timestamp`);
        return { homeTransactionId: current.transferId, transferState: 'RESERVED', completedTimestamp: current.completedTimestamp };
      case 'REJECTED':
        throw storedError(current, `rejected transfer ${current.transferId}`);
      case 'RECEIVED':
      case 'RELEASING':
      case 'ABORTED':
        throw new ConnectorError('TransferStateConflict', `transfer ${current.transferId} is ${current.state}`);
    }
  }

  /** The switch connector's final notification (PUT or PATCH /transfers/{id}). */
  async notify(transferId: string, body: TransferNotificationBody): Promise<void> {
    const verdict = readNotification(body.currentState, body.finalNotification?.transferState);
    // Naming no state at all is not "not completed": nothing moves, the worker will ask the switch.
    if (verdict.kind === 'silent') throw new ConnectorError('MissingElement', 'currentState');
    if (verdict.kind === 'commit') {
      // The usual case, a reserved transfer the hub committed: the compare-and-set to COMMITTING
      // answers what a read would, so it is tried first; anything else is read and handled below.
      const committing = await this.deps.settlement.tryIntend(transferId, 'RESERVED', 'COMMITTING', verdict.notifiedState);
      if (committing !== undefined) {
        this.deps.logger.info({ transferId, state: 'RESERVED', notifiedState: verdict.notifiedState }, 'transfer notification');
        await this.finishCommit(committing, verdict.notifiedState);
        return;
      }
    }
    const transfer = await this.deps.store.findTransfer(transferId);
    if (transfer === undefined) throw new ConnectorError('TransferNotFound', `transfer ${transferId} is unknown`);
    if (verdict.kind === 'doubtful') {
      await this.deps.settlement.flagDoubtfulNotification(transfer, verdict.reason);
      throw new ConnectorError('DoubtfulNotification', `${verdict.reason}; nothing moved`);
    }
    this.deps.logger.info({ transferId, state: transfer.state, notifiedState: verdict.notifiedState }, 'transfer notification');
    if (verdict.kind === 'commit') {
      await this.finishCommit(transfer, verdict.notifiedState);
      return;
    }
    await this.finishRelease(transfer, verdict.notifiedState);
    throw new ConnectorError('TransferNotCompleted', `switch reported ${verdict.notifiedState}`);
  }

  /** Drives a transfer the hub committed to COMMITTED; used by notifications and recovery. */
  async finishCommit(start: TransferRecord, notifiedState: string): Promise<TransferRecord> {
    const { settlement } = this.deps;
    let transfer = start;
    if (transfer.state === 'RECEIVED') transfer = await settlement.reserve(transfer);
    if (transfer.state === 'RESERVED') transfer = await settlement.intend(transfer, statesLeadingTo('COMMITTING'), 'COMMITTING', notifiedState);
    if (transfer.state === 'COMMITTING') transfer = await settlement.commit(transfer);
    if (transfer.state === 'COMMITTED') return transfer;
    if (transfer.state === 'ABORTED' || transfer.state === 'REJECTED' || transfer.state === 'RELEASING') await settlement.flagContradiction(transfer, notifiedState);
    throw new ConnectorError('TransferStateConflict', `transfer ${transfer.transferId} is ${transfer.state}; completion not applied`);
  }

  /** Drives a transfer the hub did not commit to ABORTED; used by notifications and recovery. */
  async finishRelease(start: TransferRecord, notifiedState: string): Promise<TransferRecord> {
    const { settlement } = this.deps;
    let transfer = start;
    if (transfer.state === 'RECEIVED' || transfer.state === 'RESERVED') {
      transfer = await settlement.intend(transfer, statesLeadingTo('RELEASING'), 'RELEASING', notifiedState);
    }
    if (transfer.state === 'RELEASING') transfer = await settlement.release(transfer);
    if (transfer.state === 'ABORTED' || transfer.state === 'REJECTED') return transfer;
    if (transfer.state === 'COMMITTED' || transfer.state === 'COMMITTING') await settlement.flagContradiction(transfer, notifiedState);
    throw new ConnectorError('TransferStateConflict', `transfer ${transfer.transferId} is ${transfer.state}; abort not applied`);
  }

  async getTransfer(transferId: string): Promise<TransferDetails> {
    const transfer = await this.deps.store.findTransfer(transferId);
    if (transfer === undefined) throw new ConnectorError('TransferNotFound', `transfer ${transferId} is unknown`);
    return {
      homeTransactionId: transfer.transferId,
      from: { idType: transfer.payerIdType, idValue: transfer.payerIdValue },
      to: {
        idType: transfer.payeeIdType,
        idValue: transfer.payeeIdValue,
        ...(transfer.payeeIdSubValue === null ? {} : { idSubValue: transfer.payeeIdSubValue }),
      },
      amountType: transfer.amountType,
      currency: transfer.currency,
      amount: transfer.amount,
      transferState: backendTransferState(transfer.state),
      transactionType: transfer.transactionType,
      timestamp: transfer.updatedAt,
    };
  }

  private async lookupPayee(ref: Pick<PartyRef, 'idType' | 'idValue' | 'idSubValue'>): Promise<PartyDetails> {
    const idType = this.checkIdType(ref.idType);
    const problem = identifierFormatProblem(idType, ref.idValue, ref.idSubValue);
    if (problem !== null) throw new ConnectorError('ValidationFailed', `the payee's ${idType} ${problem}`);
    const id: PartyId = { idType, idValue: ref.idValue, ...(ref.idSubValue === undefined ? {} : { idSubValue: ref.idSubValue }) };
    return this.deps.coreBanking.lookupParty(id);
  }

  private checkIdType(idType: string): PartyIdType {
    const supported = this.deps.settings.supportedIdType;
    if (idType !== supported) throw new ConnectorError('UnsupportedIdType', `${idType} (this institution accepts ${supported})`);
    return supported;
  }

  private checkCurrency(currency: string): void {
    const supported = this.deps.settings.currency;
    if (currency !== supported) throw new ConnectorError('UnsupportedCurrency', `${currency} (this institution accepts ${supported})`);
  }
}

function answerRetry(quote: QuoteRecord, hash: string): QuoteResponseBody {
  if (quote.requestHash !== hash) throw new ConnectorError('ModifiedRequest', `quote ${quote.quoteId} was requested with another body`);
  return quote.response;
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

/** The payer's identifier must be of a known type and in that type's format, like the payee's. */
function checkPayerId(from: { readonly idType: string; readonly idValue: string; readonly idSubValue?: string }): void {
  if (!isPartyIdType(from.idType)) throw new ConnectorError('ValidationFailed', `from.idType ${from.idType.slice(0, 32)} is not an identifier type`);
  const problem = identifierFormatProblem(from.idType, from.idValue, from.idSubValue);
  if (problem !== null) throw new ConnectorError('ValidationFailed', `from.idValue (${from.idType}) ${problem}`);
}
