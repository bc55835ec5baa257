import type { JsonObject } from '../../core/json.ts';
import { parseQuantity, quantitySource } from './quantity.ts';
import type { PromptCall } from './read-prompt.ts';

export interface DemoCall {
  tool: string;
  args: JsonObject;
}

export interface ParsedRequest {
  calls: DemoCall[];
  /** Things understood but not doable, in words for the person. */
  notes: string[];
}

const readTools = new Set(['get_order_status', 'search_books', 'get_shopping_list']);

const orderNumber = String.raw`(?:my\s+|the\s+|this\s+|that\s+)?(?:order\s*)?(?:number\s*|no\.?\s*)?#?\s*(\d+)`;
const statusPatterns = [
  new RegExp(
    String.raw`\b(?:status\s+(?:of|for|on)|where(?:'s|\s+is)|track|check\s+(?:on\s+)?)\s*${orderNumber}`,
    'gi',
  ),
  /\border\s*#?\s*(\d+)(?:'s)?\s+status\b/gi,
];
const cancelPattern = new RegExp(String.raw`\bcancel(?:l?ing)?\s+${orderNumber}`, 'gi');
const searchPattern = /\bbooks?\s+(?:about|on)\s+([^.?!\n,;]+)/gi;
const cartPattern = new RegExp(
  String.raw`\badd\s+(?:(${quantitySource})\s+(?:(?:copies|copy)\s+)?(?:of\s+)?)?(?:book\s+)?([a-z]{1,4}-\d+)\s+to\s+(?:my\s+|the\s+|our\s+)?(?:cart|basket)\b`,
  'gi',
);
const listReadPattern =
  /\bwhat(?:'s|\s+is)\s+on\s+(?:my|the|our)\s+(?:shopping\s+)?list\b|\b(?:show|read)\s+(?:me\s+)?(?:my|the|our)\s+(?:shopping\s+)?list\b/gi;
const listTail = String.raw`\s+(?:on|to)\s+(?:my\s+|the\s+|our\s+)?(?:shopping\s+)?list\b`;
const item = "([a-z][a-z' -]*?)";
const listAddWithQuantity = new RegExp(
  String.raw`\b(?:add|put)\s+(${quantitySource})\s+(?:of\s+)?${item}${listTail}`,
  'i',
);
const listAddPlain = new RegExp(String.raw`\b(?:add|put)\s+(?:some\s+(?:more\s+)?)?${item}${listTail}`, 'i');
const listAddVerb = new RegExp(String.raw`\b(?:add|put)\b[^.?!]*?${listTail}`, 'i');
const outOf = new RegExp(
  String.raw`\b(?:out\s+of|need(?:\s+more)?|low\s+on)\s+${item}(?=\s*(?:[,.;!?]|$)|\s+(?:and|so|please|put|add)\b)`,
  'i',
);
const makeThat = /\b(?:make|change)\s+(?:that|it)\s+(?:to\s+)?([^.?!]+)/i;

/**
 * A user message as the tool calls a small support agent would make, reads before writes
 * so an answer never depends on a write that may still wait for approval.
 */
export function parseRequest(raw: string, history: PromptCall[]): ParsedRequest {
  const text = raw.replace(/[\u2018\u2019]/g, "'");
  const found: Array<{ at: number; call: DemoCall }> = [];
  const notes: string[] = [];
  const add = (at: number, call: DemoCall) => found.push({ at, call });

  for (const pattern of statusPatterns) {
    for (const match of text.matchAll(pattern)) add(match.index, order('get_order_status', match[1]));
  }
  for (const match of text.matchAll(cancelPattern)) add(match.index, order('cancel_order', match[1]));
  for (const match of text.matchAll(searchPattern)) {
    const query = cleanQuery(match[1] ?? '');
    if (query) add(match.index, { tool: 'search_books', args: { query } });
  }
  for (const match of text.matchAll(cartPattern)) {
    const quantity = Number(match[1] ? parseQuantity(match[1]) : 1);
    add(match.index, { tool: 'add_to_cart', args: { bookId: (match[2] ?? '').toLowerCase(), quantity } });
  }
  for (const match of text.matchAll(listReadPattern))
    add(match.index, { tool: 'get_shopping_list', args: {} });

  const listItem = parseListAddition(text);
  if (listItem) add(listItem.at, { tool: 'add_to_shopping_list', args: listItem.args });

  const change = makeThat.exec(text);
  if (change && found.length === 0) {
    const changed = changeLastProposal(parseQuantity(change[1] ?? ''), history);
    if ('call' in changed) add(change.index, changed.call);
    else notes.push(changed.note);
  }

  const ordered = dedupe(found.sort((a, b) => a.at - b.at).map((entry) => entry.call));
  return {
    calls: [
      ...ordered.filter((call) => readTools.has(call.tool)),
      ...ordered.filter((call) => !readTools.has(call.tool)),
    ],
    notes,
  };
}

function order(tool: string, digits: string | undefined): DemoCall {
  return { tool, args: { orderId: Number(digits) } };
}

function parseListAddition(text: string): { at: number; args: JsonObject } | undefined {
  const explicit = listAddWithQuantity.exec(text);
  if (explicit?.[1] && explicit[2]) {
    return {
      at: explicit.index,
      args: { item: cleanItem(explicit[2]), quantity: parseQuantity(explicit[1]) ?? '1' },
    };
  }
  const needed = outOf.exec(text);
  const verb = listAddVerb.exec(text);
  if (needed?.[1] && (verb || /\blist\b/i.test(text))) {
    return { at: needed.index, args: { item: cleanItem(needed[1]), quantity: parseQuantity(text) ?? '1' } };
  }
  const plain = listAddPlain.exec(text);
  if (plain?.[1] && !parseQuantity(plain[1])) {
    return { at: plain.index, args: { item: cleanItem(plain[1]), quantity: '1' } };
  }
  return undefined;
}

function changeLastProposal(
  quantity: string | undefined,
  history: PromptCall[],
): { call: DemoCall } | { note: string } {
  const last = history.findLast(
    (call) => call.tool === 'add_to_shopping_list' || call.tool === 'add_to_cart',
  );
  if (!last) return { note: 'There is nothing to change yet: tell me what to add first.' };
  if (quantity === undefined) return { note: 'Tell me the new quantity, for example "make that six".' };
  if (last.tool === 'add_to_shopping_list')
    return { call: { tool: last.tool, args: { ...last.args, quantity } } };
  const count = Number(quantity);
  if (!Number.isInteger(count)) return { note: `A cart quantity is a whole number, not "${quantity}".` };
  return { call: { tool: last.tool, args: { ...last.args, quantity: count } } };
}

function cleanQuery(query: string): string {
  return query
    .replace(/\s+please\s*$/i, '')
    .trim()
    .replace(/^["']|["']$/g, '')
    .trim();
}

function cleanItem(item: string): string {
  return item.trim().toLowerCase();
}

/** The same call named twice in one message is one call. */
function dedupe(calls: DemoCall[]): DemoCall[] {
  const seen = new Set<string>();
  return calls.filter((call) => {
    const key = `${call.tool}:${JSON.stringify(call.args)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
