/** Where a command writes: `data` for --json, `print` for people. */
export interface Output {
  json: boolean;
  print(text: string): void;
  data(value: unknown): void;
}
