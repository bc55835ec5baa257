import type { CommandInput } from './command-input.ts';

/**
 * Every command, option and example of `countersign`, in one place: the parser checks
 * arguments against it, `--help` is printed from it, and the reference part of docs/cli.md
 * is generated from it (`node scripts/cli-reference.ts`). It imports no implementation:
 * each command's code is loaded only when that command runs.
 */

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** The value's placeholder in usage lines (string options). */
  value?: string;
  /** One line, for the option list of a command's help. */
  help: string;
}

export const options = {
  json: { type: 'boolean', help: 'machine-readable output on stdout (errors too)' },
  help: { type: 'boolean', help: 'this help' },
  user: { type: 'string', value: 'ID', help: 'the signed-in customer of a new session' },
  agent: { type: 'string', value: 'NAME', help: "which of the app's agents (default: its first)" },
  as: {
    type: 'string',
    value: 'NAME',
    help: 'who acts (decides, or posts and so raises), recorded in the audit trail (default $COUNTERSIGN_APPROVER, then $USER); self-asserted',
  },
  reason: { type: 'string', value: 'TEXT', help: 'why' },
  always: { type: 'boolean', help: 'also approve later calls of this tool on this session' },
  'always-with-args': {
    type: 'boolean',
    help: 'also approve later calls of this tool with these same arguments',
  },
  edit: {
    type: 'string',
    value: 'JSON',
    help: 'approve with changes: the editable argument fields and their new values, e.g. \'{"quantity":"6"}\'',
  },
  queue: { type: 'boolean', help: 'hand the continuation to a worker (PostgreSQL stores only)' },
  'trust-unsigned': {
    type: 'boolean',
    help: 'import a file without a valid signature: its decisions wait for a person again, its ledger rows are left out',
  },
  session: { type: 'string', value: 'S', help: 'only this session' },
  tool: {
    type: 'string',
    value: 'T',
    help: 'only this tool (a request list: tool name contains T, any case)',
  },
  customer: { type: 'string', value: 'C', help: 'only requests whose customer contains C (any case)' },
  text: {
    type: 'string',
    value: 'TEXT',
    help: 'only requests whose effect or customer contains TEXT (any case)',
  },
  limit: { type: 'string', value: 'N', help: 'at most N per page (default 50; up to 1000)' },
  after: {
    type: 'string',
    value: 'CURSOR',
    help: 'the next page: the cursor the page before printed (audit: the last seq read)',
  },
  status: {
    type: 'string',
    value: 'STATUS',
    help: 'only this status: started, succeeded, failed or unknown',
  },
  workflow: { type: 'string', value: 'W', help: 'only runs of workflow W (its name, exactly)' },
  sort: { type: 'string', value: 'ORDER', help: 'newest (the default: latest started first) or oldest' },
  succeeded: { type: 'boolean', help: 'the call did happen' },
  failed: { type: 'boolean', help: 'the call did not happen' },
  result: { type: 'string', value: 'TEXT', help: 'the tool result the model reads' },
  verify: { type: 'boolean', help: 'check the whole hash chain; exit 3 if it is broken' },
  out: { type: 'string', value: 'FILE', help: 'write to FILE instead of stdout' },
  decrypt: {
    type: 'boolean',
    help: 'write the export in plain JSON, not encrypted (needs COUNTERSIGN_ENCRYPTION_KEYS)',
  },
  run: { type: 'string', value: 'RUN', help: 'the id of the new run' },
  from: { type: 'string', value: 'CHECKPOINT', help: 'continue from this checkpoint, not the latest' },
  port: {
    type: 'string',
    value: 'PORT',
    help: 'port to listen on (default $PORT, then 8787; 0 picks a free one)',
  },
  host: { type: 'string', value: 'HOST', help: 'address to listen on (default 127.0.0.1)' },
  chat: { type: 'boolean', help: 'also serve the customer chat page (a demo door)' },
  demo: {
    type: 'boolean',
    help: 'serve the bookstore demo app (an installed package needs this or COUNTERSIGN_APP)',
  },
  concurrency: { type: 'string', value: 'N', help: 'sessions continued at once (default 1)' },
  for: {
    type: 'string',
    value: 'DURATION',
    help: "how long to hold it: 30m, 1h (default 15m, at most 8h, never past the request's expiry)",
  },
  principal: { type: 'string', value: 'ID', help: 'the customer (principal) whose data is erased' },
  'dry-run': { type: 'boolean', help: 'say what would be removed; change nothing' },
} as const satisfies Record<string, OptionSpec>;

export type OptionName = keyof typeof options;

/** What the parser hands a command: every option it may have been given. */
export type CliValues = {
  -readonly [K in OptionName]?: (typeof options)[K]['type'] extends 'boolean' ? boolean : string;
};

export interface ArgSpec {
  name: string;
  required: boolean;
  /** Takes every remaining word (joined by spaces). */
  rest?: boolean;
}

export interface CommandSpec {
  /** One or two words: `pending`, `rules revoke`. */
  name: string;
  summary: string;
  args: readonly ArgSpec[];
  /** Besides --json and --help, which every command accepts. */
  options: readonly OptionName[];
  /** Options that must be given (shown without brackets). */
  required?: readonly OptionName[];
  /** What an option means for this command, where that differs from its usual help. */
  optionHelp?: Partial<Record<OptionName, string>>;
  /** Groups of options of which exactly one must be given: shown as (--a | --b). */
  oneOf?: readonly (readonly OptionName[])[];
  /** Groups of which at most one may be given: shown as [--a | --b]. */
  atMostOne?: readonly (readonly OptionName[])[];
  /** Why --json is refused, for commands that only print for people. */
  noJson?: string;
  /** Paragraphs after the usage line. */
  details?: readonly string[];
  examples: readonly string[];
  /** Shown in the overview under this heading. */
  group: 'Agents and decisions' | 'Records' | 'Workflows' | 'Running';
  load(): Promise<(input: CommandInput) => Promise<number | undefined>>;
}

const req = (name: string, rest = false): ArgSpec => ({ name, required: true, ...(rest ? { rest } : {}) });
const opt = (name: string, rest = false): ArgSpec => ({ name, required: false, ...(rest ? { rest } : {}) });

export const commands: readonly CommandSpec[] = [
  {
    name: 'chat',
    group: 'Agents and decisions',
    summary: 'send a message to the agent (no MESSAGE: the interactive console)',
    args: [req('SESSION'), opt('MESSAGE', true)],
    options: ['user', 'agent', 'as'],
    details: [
      'A new session belongs to --user; without it, to the demo customer of the app (c-100 for the bookstore), as in the console. A session keeps its customer: a different --user later is FORBIDDEN.',
      'Without MESSAGE it reads lines from stdin: y approves what is waiting (as --as), n rejects it, anything else is your next message. The console prints for people only.',
    ],
    examples: ['countersign chat s1 "Please cancel my order 1044." --user c-100', 'countersign chat demo'],
    load: async () => (await import('./commands.ts')).commands.chat,
  },
  {
    name: 'pending',
    group: 'Agents and decisions',
    summary: "requests waiting for a decision, oldest first: agents' tool calls and workflow requests",
    args: [],
    options: ['session', 'tool', 'customer', 'text', 'limit', 'after'],
    details: [
      'One page at a time (--limit, default 50). When there is more, the last line says how to get it: the same command with --after CURSOR (with --json, the cursor goes to stderr as {"next": CURSOR}, so stdout stays the array).',
    ],
    examples: [
      'countersign pending',
      'countersign pending --tool refund --limit 20',
      'countersign pending --session s1 --json',
    ],
    load: async () => (await import('./record-commands.ts')).pending,
  },
  {
    name: 'history',
    group: 'Agents and decisions',
    summary: 'decided requests, latest decision first (approved, rejected, answered, expired)',
    args: [],
    options: ['session', 'tool', 'customer', 'text', 'limit', 'after'],
    details: ['Paged like pending: --limit, then --after the cursor the page printed.'],
    examples: ['countersign history', 'countersign history --customer c-100 --limit 10'],
    load: async () => (await import('./record-commands.ts')).history,
  },
  {
    name: 'show',
    group: 'Agents and decisions',
    summary: 'one request in any state, with its decision if any',
    args: [req('REQUEST')],
    options: [],
    examples: ['countersign show apr_xszkanu74wpjrtskhj3vlirxmbkva37p'],
    load: async () => (await import('./record-commands.ts')).show,
  },
  {
    name: 'approve',
    group: 'Agents and decisions',
    summary:
      'approve: the stored call runs once and the session continues (or a workflow request is approved)',
    args: [req('REQUEST')],
    options: ['as', 'reason', 'edit', 'always', 'always-with-args', 'queue'],
    atMostOne: [['always', 'always-with-args']],
    details: [
      '--reason is recorded with the approval; it is not sent to the model.',
      '--edit changes only the fields the request lists as editable; the edited call is checked and routed again (it may need another role or approver before it runs), and the model is told what changed.',
      'A request that needs several approvers (a quorum) waits until the last one approves; each approver is a different person.',
    ],
    examples: [
      'countersign approve apr_xszkanu74wpjrtskhj3vlirxmbkva37p --as alice',
      'countersign approve apr_xszkanu74wpjrtskhj3vlirxmbkva37p --as alice --edit \'{"quantity":"6"}\'',
      'countersign approve apr_xszkanu74wpjrtskhj3vlirxmbkva37p --as alice --always --reason "Weekly order."',
    ],
    load: async () => (await import('./commands.ts')).commands.approve,
  },
  {
    name: 'claim',
    group: 'Agents and decisions',
    summary: 'take a waiting request to work on it: others see who holds it and until when',
    args: [req('REQUEST')],
    options: ['as', 'for'],
    details: [
      'Claiming it again renews your claim. A claim lapses by itself, and deciding never needs one: anyone who may decide the request still may. Whoever may decide it may claim it (never its raiser or its customer). Someone else holding it exits with CLAIMED.',
    ],
    examples: ['countersign claim apr_xszkanu74wpjrtskhj3vlirxmbkva37p --as alice --for 30m'],
    load: async () => (await import('./claim-commands.ts')).claim,
  },
  {
    name: 'release',
    group: 'Agents and decisions',
    summary: 'give back your claim on a request',
    args: [req('REQUEST')],
    options: ['as'],
    examples: ['countersign release apr_xszkanu74wpjrtskhj3vlirxmbkva37p --as alice'],
    load: async () => (await import('./claim-commands.ts')).release,
  },
  {
    name: 'reject',
    group: 'Agents and decisions',
    summary: 'reject with a reason the model reads and tells the customer',
    args: [req('REQUEST')],
    options: ['reason', 'as', 'queue'],
    required: ['reason'],
    examples: [
      'countersign reject apr_vhqod3gsmv5mb4agjpaff5wkfz4c4k5r --reason "Support must call the customer first. Do not retry." --as alice',
    ],
    load: async () => (await import('./commands.ts')).commands.reject,
  },
  {
    name: 'reconcile',
    group: 'Agents and decisions',
    summary: 'settle an approved call whose outcome is unknown, after checking the outside world',
    args: [req('REQUEST')],
    options: ['succeeded', 'failed', 'result', 'as'],
    oneOf: [['succeeded', 'failed']],
    examples: [
      'COUNTERSIGN_APP=kitchen countersign reconcile apr_5xb2hqhbtkcr4p33o7jirzds2vozgl5h --succeeded --result "Checked: eggs are on the list." --as alice',
    ],
    load: async () => (await import('./commands.ts')).commands.reconcile,
  },
  {
    name: 'resume',
    group: 'Agents and decisions',
    summary: 'continue a session after a failed or interrupted run, or an expiry',
    args: [req('SESSION')],
    options: [],
    examples: ['countersign resume s1'],
    load: async () => (await import('./commands.ts')).commands.resume,
  },
  {
    name: 'executions',
    group: 'Records',
    summary: 'the execution ledger: one row per approved call',
    args: [],
    options: ['session', 'status', 'limit', 'after'],
    details: ['One page at a time (--limit, default 50), then the command for the next, as for pending.'],
    examples: ['countersign executions --status unknown', 'countersign executions --limit 20'],
    load: async () => (await import('./record-commands.ts')).executions,
  },
  {
    name: 'rules',
    group: 'Records',
    summary: 'the standing approvals of a session',
    args: [req('SESSION')],
    options: [],
    examples: ['countersign rules k'],
    load: async () => (await import('./record-commands.ts')).rules,
  },
  {
    name: 'rules revoke',
    group: 'Records',
    summary: 'revoke a standing approval; the next call asks a person again',
    args: [req('RULE')],
    options: ['as'],
    examples: ['countersign rules revoke rule_cpghygrxfy6hx5bers54o42dgkbb27wf --as alice'],
    load: async () => (await import('./record-commands.ts')).revokeRule,
  },
  {
    name: 'expire',
    group: 'Records',
    summary: 'mark every overdue request expired (tool calls and workflow requests)',
    args: [],
    options: [],
    examples: ['countersign expire'],
    load: async () => (await import('./record-commands.ts')).expire,
  },
  {
    name: 'erase',
    group: 'Records',
    summary: "erase one customer's data everywhere it was written; the audit chain still verifies",
    args: [],
    options: ['principal', 'as'],
    required: ['principal'],
    details: [
      'Their pending requests are expired first (so none can be approved or run later), then their sessions (messages, rules, ledger rows), requests, workflow runs (checkpoints), outbox rows and the data of their audit entries are removed, and last their data key is destroyed when encryption is on; the entries themselves stay, shown as erased, and `audit --verify` still passes. The erasure is audited (who, when, which customer, how much). An erasure that stopped part way is finished by running it again. An id nothing names prints that there is nothing to erase.',
    ],
    examples: ['countersign erase --principal c-100 --as dpo'],
    load: async () => (await import('./erasure-commands.ts')).erase,
  },
  {
    name: 'purge',
    group: 'Records',
    summary: 'remove what is past its COUNTERSIGN_RETENTION period (never what waits)',
    args: [],
    options: ['dry-run', 'as'],
    details: [
      'Finished sessions, ended runs and decided requests past their period are removed; audit entries past theirs have their data erased (the chain stays and verifies). A session with a pending request, a run that waits and a pending request are never removed. `serve` does this every hour when COUNTERSIGN_RETENTION is set.',
    ],
    examples: [
      'COUNTERSIGN_RETENTION=sessions=90d,runs=30d,requests=90d,audit=7y countersign purge --dry-run',
    ],
    load: async () => (await import('./erasure-commands.ts')).purgeCommand,
  },
  {
    name: 'audit',
    group: 'Records',
    summary: 'the hash-chained decision trail',
    args: [],
    options: ['session', 'verify', 'limit', 'after'],
    examples: [
      'countersign audit --session s1',
      'countersign audit --after 120 --limit 50',
      'countersign audit --verify',
    ],
    load: async () => (await import('./record-commands.ts')).audit,
  },
  {
    name: 'session export',
    group: 'Records',
    summary: 'a session as one JSON document (always JSON without --out)',
    args: [req('SESSION')],
    options: ['out', 'decrypt'],
    details: [
      'From a store opened with COUNTERSIGN_ENCRYPTION_KEYS the document is encrypted (a data key of its own, wrapped by the first key): a store holding that key imports it. --decrypt writes it in plain JSON instead.',
    ],
    examples: ['countersign session export s4 --out s4.json'],
    load: async () => (await import('./session-commands.ts')).exportCommand,
  },
  {
    name: 'session import',
    group: 'Records',
    summary: 'import an exported session into the store of COUNTERSIGN_STORE',
    args: [req('FILE')],
    options: ['as', 'trust-unsigned'],
    details: [
      'An encrypted export needs COUNTERSIGN_ENCRYPTION_KEYS holding the key it names. With COUNTERSIGN_EXPORT_KEY set, only a file whose signature verifies is imported as it is. An unsigned file needs --trust-unsigned: every decided but unexecuted request in it waits for a person again, and its ledger rows are left out.',
    ],
    examples: ['COUNTERSIGN_STORE=sqlite:other.sqlite countersign session import s4.json --as bob'],
    load: async () => (await import('./session-commands.ts')).importCommand,
  },
  {
    name: 'run start',
    group: 'Workflows',
    summary: 'start a workflow run',
    args: [req('WORKFLOW'), req('INPUT_JSON', true)],
    options: ['run', 'as', 'user'],
    required: ['run'],
    details: [
      'The run is recorded as started by --as (or COUNTERSIGN_APPROVER, $USER), for the customer --user: neither may answer its requests.',
    ],
    examples: ['countersign run start refund 1040 --run refund-1040'],
    load: async () => (await import('./workflow-commands.ts')).runStart,
  },
  {
    name: 'run resume',
    group: 'Workflows',
    summary: 'continue a run from its latest (or a given) checkpoint',
    args: [req('RUN')],
    options: ['from'],
    examples: ['countersign run resume refund-1040'],
    load: async () => (await import('./workflow-commands.ts')).runResume,
  },
  {
    name: 'run respond',
    group: 'Workflows',
    summary: 'answer a request the run waits on (the same as `answer REQUEST JSON`)',
    args: [req('RUN'), req('REQUEST'), req('JSON', true)],
    options: ['as'],
    examples: [
      `countersign run respond refund-1040 req_sa4ag6tp3fqbo6ibvxwlxmuqk2wwfzv5 '{"approved": true, "note": "Photo checked."}' --as alice`,
    ],
    load: async () => (await import('./workflow-commands.ts')).runRespond,
  },
  {
    name: 'answer',
    group: 'Workflows',
    summary: 'answer a workflow request by its id; the run continues',
    args: [req('REQUEST'), req('JSON', true)],
    options: ['as'],
    details: [
      'A request whose port answers {"approved": …} plus text can also be decided with `approve` and `reject` (the reason goes in its text field).',
    ],
    examples: [
      `countersign answer req_sa4ag6tp3fqbo6ibvxwlxmuqk2wwfzv5 '{"approved": true, "note": "Photo checked."}' --as alice`,
    ],
    load: async () => (await import('./workflow-commands.ts')).answerCommand,
  },
  {
    name: 'run history',
    group: 'Workflows',
    summary: "the run's checkpoints, each with its parent",
    args: [req('RUN')],
    options: [],
    examples: ['countersign run history refund-1040'],
    load: async () => (await import('./workflow-commands.ts')).runHistory,
  },
  {
    name: 'runs',
    group: 'Workflows',
    summary: 'workflow runs with their status, newest first, a page at a time',
    args: [],
    options: ['status', 'workflow', 'customer', 'sort', 'limit', 'after'],
    optionHelp: {
      status: 'only runs with this status: running, awaiting_input, completed, failed or expired',
      customer: 'only runs started for customer C (run start --user C), exactly',
    },
    details: [
      'Paged like pending: --limit (default 50), then --after the cursor the page printed (with --json, on stderr as {"next": CURSOR}). The filters are exact and combine.',
    ],
    examples: [
      'countersign runs',
      'countersign runs --status awaiting_input --workflow refund',
      'countersign runs --customer c-100 --json',
    ],
    load: async () => (await import('./workflow-commands.ts')).runs,
  },
  {
    name: 'keys rotate',
    group: 'Records',
    summary:
      'wrap every data key under the newest COUNTERSIGN_ENCRYPTION_KEYS key (payloads are not rewritten)',
    args: [],
    options: ['as'],
    details: [
      'Put the new key first in COUNTERSIGN_ENCRYPTION_KEYS and keep the old ones after it; new data keys are wrapped under the first key at once, this re-wraps the older ones. Each key is its own compare-and-set: an interrupted rotation is finished by running it again.',
      'Audited as keys.rotated: who (--as), when, how many keys were re-wrapped, the new key id and the old ones; never key material. A file: store keeps no audit trail.',
    ],
    examples: ['COUNTERSIGN_ENCRYPTION_KEYS="k2:…,k1:…" countersign keys rotate --as dana'],
    load: async () => (await import('./key-commands.ts')).rotateKeys,
  },
  {
    name: 'serve',
    group: 'Running',
    summary: 'the HTTP API, the approval inbox and (with --chat) the customer chat',
    args: [],
    options: ['port', 'host', 'chat', 'demo'],
    noJson:
      'serve prints for people. Scripts can poll GET /readyz, or read the port from --port instead of the banner.',
    details: [
      'In a checkout it serves the bookstore demo unless COUNTERSIGN_APP names another app. An installed package needs COUNTERSIGN_APP (or --demo).',
    ],
    examples: ['countersign serve --chat', 'COUNTERSIGN_APP=./my-app.js PORT=9000 countersign serve'],
    load: async () => (await import('./serve-command-line.ts')).serve,
  },
  {
    name: 'worker',
    group: 'Running',
    summary: 'continue decided sessions from the queue until SIGINT/SIGTERM (PostgreSQL)',
    args: [],
    options: ['concurrency'],
    details: ['With --json it logs one JSON object per line.'],
    examples: [
      'COUNTERSIGN_STORE=postgres://postgres@127.0.0.1:5432/countersign countersign worker --concurrency 4',
    ],
    load: async () => (await import('./worker-command.ts')).workerCommand,
  },
];

/** `rules` and `run`, `session`: the first word of two-word commands. */
export const groupWords: ReadonlySet<string> = new Set(
  commands.filter((c) => c.name.includes(' ')).map((c) => c.name.split(' ')[0]!),
);

export function findCommand(name: string): CommandSpec | undefined {
  return commands.find((command) => command.name === name);
}
