/** Where a command writes: `data` for --json, `print` for people. */
export interface Output {
  json: boolean;
  print(text: string): void;
  data(value: unknown): void;
}

/**
 * A list, as every listing command prints it: the array for --json; otherwise one entry per
 * line (or block, with `separator`), or `empty` when there is none.
 */
export function printList<T>(
  out: Output,
  list: readonly T[],
  line: (item: T) => string,
  empty: string,
  separator = '\n',
): number {
  if (out.json) out.data(list);
  else out.print(list.length ? list.map(line).join(separator) : empty);
  return 0;
}
