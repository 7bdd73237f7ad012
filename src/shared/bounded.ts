/**
 * Runs `work` on every item, at most `limit` at a time, in the items' order of starting. After a
 * failure no further item is started; the ones under way are awaited, then the first failure is
 * thrown. Many small writes in flight together are what lets the store commit them in groups.
 */
export async function forEachConcurrently<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`concurrency limit ${limit} is not a positive whole number`);
  let next = 0;
  let failure: { readonly error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const item = items[next] as T;
      next += 1;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, () => worker()));
  if (failure !== undefined) throw failure.error;
}
