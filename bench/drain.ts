/**
 * `workers` loops take items from one shared queue, one at a time, until it is empty: how
 * the benches model concurrent keep-alive clients.
 */
export async function drain<T>(
  queue: readonly T[],
  workers: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (;;) {
        const item = queue[next++];
        if (item === undefined) return;
        await work(item);
      }
    }),
  );
}
