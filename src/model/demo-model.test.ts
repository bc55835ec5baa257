import { describe, expect, it } from 'vitest';
import { demoTurn } from '../../test/helpers/demo-turn.ts';
import {
  bookstoreToolSpecs as bookstore,
  kitchenToolSpecs as kitchen,
} from '../../test/helpers/example-tool-specs.ts';
import type { Message, ToolCall } from '../core/messages.ts';
import { createDemoModel } from './demo-model.ts';

const user = (text: string): Message => ({ role: 'user', text });
const asked = (...calls: ToolCall[]): Message => ({ role: 'assistant', text: '', calls });
const call = (id: string, tool: string, args: ToolCall['args']): ToolCall => ({ id, tool, args });
const results = (...list: Array<[string, string, ToolCall['args'], boolean?]>): Message => ({
  role: 'tool',
  results: list.map(([callId, tool, output, isError]) => ({
    callId,
    tool,
    output,
    ...(isError ? { isError } : {}),
  })),
});
const calls = async (messages: Message[], tools = bookstore) =>
  (await demoTurn(messages, tools)).calls.map(({ tool, args }) => ({ tool, args }));

describe('demo model: bookstore requests', () => {
  it('cancels an order', async () => {
    const turn = await demoTurn([user('Please cancel my order 1044.')], bookstore);
    expect(turn).toEqual({
      text: '',
      calls: [{ id: 'call_1', tool: 'cancel_order', args: { orderId: 1044 } }],
      invalid: [],
    });
  });

  it.each([["What's the status of order 1043?"], ['where is order 1043'], ["Where's my order #1043?"]])(
    'checks a status: %s',
    async (text) => {
      expect(await calls([user(text)])).toEqual([{ tool: 'get_order_status', args: { orderId: 1043 } }]);
    },
  );

  it('makes a read and a write in one response, the read first', async () => {
    expect(await calls([user('Cancel 1044 please, and where is order 1043?')])).toEqual([
      { tool: 'get_order_status', args: { orderId: 1043 } },
      { tool: 'cancel_order', args: { orderId: 1044 } },
    ]);
    const turn = await demoTurn([user("What's the status of 1043? And cancel 1044.")], bookstore);
    expect(turn.calls).toEqual([
      { id: 'call_1', tool: 'get_order_status', args: { orderId: 1043 } },
      { id: 'call_2', tool: 'cancel_order', args: { orderId: 1044 } },
    ]);
  });

  it.each([
    ['Search for books about birds', 'birds'],
    ['find books about the history of Rome, please', 'the history of Rome'],
    ['Can you look for books on Sourdough Baking?', 'Sourdough Baking'],
  ])('searches: %s', async (text, query) => {
    expect(await calls([user(text)])).toEqual([{ tool: 'search_books', args: { query } }]);
  });

  it('adds a book to the cart', async () => {
    expect(await calls([user('add b-1 to my cart')])).toEqual([
      { tool: 'add_to_cart', args: { bookId: 'b-1', quantity: 1 } },
    ]);
    expect(await calls([user('Add 2 copies of b-7 to the cart.')])).toEqual([
      { tool: 'add_to_cart', args: { bookId: 'b-7', quantity: 2 } },
    ]);
  });

  it('numbers call ids on from the calls already in the conversation', async () => {
    const history = [
      user('where is order 1043'),
      asked(call('call_1', 'get_order_status', { orderId: 1043 })),
    ];
    const turn = await demoTurn(
      [...history, results(['call_1', 'get_order_status', 'Shipped.']), user('cancel order 1043')],
      bookstore,
    );
    expect(turn.calls).toEqual([{ id: 'call_2', tool: 'cancel_order', args: { orderId: 1043 } }]);
  });
});

describe('demo model: kitchen requests', () => {
  it.each([
    ["we're out of eggs, put a dozen on the list", { item: 'eggs', quantity: '12' }],
    ['We’re out of milk, add six to the shopping list.', { item: 'milk', quantity: '6' }],
    ['Add 500 g of flour to the shopping list', { item: 'flour', quantity: '500 g' }],
    ['put 2 lemons on my list', { item: 'lemons', quantity: '2' }],
    ['add butter to the list', { item: 'butter', quantity: '1' }],
  ])('adds to the list: %s', async (text, args) => {
    expect(await calls([user(text)], kitchen)).toEqual([{ tool: 'add_to_shopping_list', args }]);
  });

  it('reads the list', async () => {
    expect(await calls([user("What's on my shopping list?")], kitchen)).toEqual([
      { tool: 'get_shopping_list', args: {} },
    ]);
    expect(await calls([user('what is on the list')], kitchen)).toEqual([
      { tool: 'get_shopping_list', args: {} },
    ]);
  });

  it('re-proposes the last item with a new quantity', async () => {
    const history: Message[] = [
      user("we're out of eggs, put a dozen on the list"),
      asked(call('call_1', 'add_to_shopping_list', { item: 'eggs', quantity: '12' })),
      results([
        'call_1',
        'add_to_shopping_list',
        'Not done. Reason: The person sent a new message instead, so this was not done.',
        true,
      ]),
      user('actually, make that six'),
    ];
    const turn = await demoTurn(history, kitchen);
    expect(turn.calls).toEqual([
      { id: 'call_2', tool: 'add_to_shopping_list', args: { item: 'eggs', quantity: '6' } },
    ]);
  });

  it('says when there is nothing to change', async () => {
    const turn = await demoTurn([user('make that six')], kitchen);
    expect(turn).toEqual({
      text: 'There is nothing to change yet: tell me what to add first.',
      calls: [],
      invalid: [],
    });
  });
});

describe('demo model: replies after tool results', () => {
  const cancelAsked: Message[] = [
    user('Please cancel my order 1044.'),
    asked(call('call_1', 'cancel_order', { orderId: 1044 })),
  ];

  it('quotes a string output', async () => {
    const turn = await demoTurn(
      [...cancelAsked, results(['call_1', 'cancel_order', 'Order 1044 is cancelled.'])],
      bookstore,
    );
    expect(turn).toEqual({
      text: 'Cancelled order 1044: "Order 1044 is cancelled."',
      calls: [],
      invalid: [],
    });
  });

  it('uses the message of an object output', async () => {
    const output = { orderId: 1044, message: 'Order 1044 is cancelled; the refund is on its way.' };
    const turn = await demoTurn([...cancelAsked, results(['call_1', 'cancel_order', output])], bookstore);
    expect(turn.text).toBe('Cancelled order 1044: Order 1044 is cancelled; the refund is on its way.');
  });

  it('passes a rejection reason on verbatim and does not call again', async () => {
    const reason = 'Rejected by the reviewer, not done. Reason: That order already shipped.';
    const turn = await demoTurn(
      [...cancelAsked, results(['call_1', 'cancel_order', reason, true])],
      bookstore,
    );
    expect(turn).toEqual({ text: `I did not cancel order 1044: ${reason}`, calls: [], invalid: [] });
  });

  it('reads a failure from an object output', async () => {
    const turn = await demoTurn(
      [
        ...cancelAsked,
        results(['call_1', 'cancel_order', { error: 'not_found', reason: 'No order 1044.' }, true]),
      ],
      bookstore,
    );
    expect(turn.text).toBe('I did not cancel order 1044: No order 1044.');
  });

  it('reports each result of a read-then-write batch', async () => {
    const messages: Message[] = [
      user("What's the status of 1043? And cancel 1044."),
      asked(
        call('call_1', 'get_order_status', { orderId: 1043 }),
        call('call_2', 'cancel_order', { orderId: 1044 }),
      ),
      results(
        ['call_1', 'get_order_status', { orderId: 1043, status: 'shipped' }],
        [
          'call_2',
          'cancel_order',
          'Expired, not done. Reason: This request expired without a decision.',
          true,
        ],
      ),
    ];
    const turn = await demoTurn(messages, bookstore);
    expect(turn).toEqual({
      text:
        'Order 1043: orderId: 1043, status: shipped\n' +
        'I did not cancel order 1044: Expired, not done. Reason: This request expired without a decision.',
      calls: [],
      invalid: [],
    });
  });

  it('summarises list and search results', async () => {
    const list = await demoTurn(
      [
        user("what's on my list"),
        asked(call('call_1', 'get_shopping_list', {})),
        results([
          'call_1',
          'get_shopping_list',
          [
            { item: 'eggs', quantity: '12' },
            { item: 'flour', quantity: '500 g' },
          ],
        ]),
      ],
      kitchen,
    );
    expect(list.text).toBe('Your shopping list: item: eggs, quantity: 12; item: flour, quantity: 500 g');
    const search = await demoTurn(
      [
        user('find books about birds'),
        asked(call('call_1', 'search_books', { query: 'birds' })),
        results(['call_1', 'search_books', []]),
      ],
      bookstore,
    );
    expect(search.text).toBe('Books about "birds": none');
  });

  it('answers a new user message that follows tool results (moved on)', async () => {
    const messages: Message[] = [
      ...cancelAsked,
      results([
        'call_1',
        'cancel_order',
        'Not done. Reason: The person sent a new message instead, so this was not done.',
        true,
      ]),
      user('where is order 1043'),
    ];
    expect(await calls(messages)).toEqual([{ tool: 'get_order_status', args: { orderId: 1043 } }]);
  });
});

describe('demo model: [[bad-args]] test hook', () => {
  const first: Message[] = [user('[[bad-args]] Please cancel my order 1044.')];
  const invalid =
    'Invalid arguments for cancel_order: orderId: Invalid input: expected number, received string. Nothing was run. Fix the arguments and call cancel_order again.';

  it('sends arguments that fail validation, then retries with the number from the message', async () => {
    expect(await calls(first)).toEqual([{ tool: 'cancel_order', args: { orderId: 'not-a-number' } }]);
    const retry = await demoTurn(
      [
        ...first,
        asked(call('call_1', 'cancel_order', { orderId: 'not-a-number' })),
        results(['call_1', 'cancel_order', invalid, true]),
      ],
      bookstore,
    );
    expect(retry).toEqual({
      text: '',
      calls: [{ id: 'call_2', tool: 'cancel_order', args: { orderId: 1044 } }],
      invalid: [],
    });
  });

  it('replies instead when the message has no number', async () => {
    const messages: Message[] = [
      user('[[bad-args]] cancel it'),
      asked(call('call_1', 'cancel_order', { orderId: 'not-a-number' })),
      results(['call_1', 'cancel_order', invalid, true]),
    ];
    expect(await demoTurn(messages, bookstore)).toEqual({
      text: `I did not cancel the order: ${invalid}\nTell me the order number to try again.`,
      calls: [],
      invalid: [],
    });
  });

  it('does not retry a call that was rejected', async () => {
    const rejected = 'Rejected by the reviewer, not done. Reason: no.';
    const turn = await demoTurn(
      [
        ...first,
        asked(call('call_1', 'cancel_order', { orderId: 'not-a-number' })),
        results(['call_1', 'cancel_order', rejected, true]),
      ],
      bookstore,
    );
    expect(turn.calls).toEqual([]);
    expect(turn.text).toBe(`I did not cancel order not-a-number: ${rejected}`);
  });
});

describe('demo model: tools and help', () => {
  it('says when the app does not offer the tool a request needs', async () => {
    const turn = await demoTurn([user('Please cancel my order 1044.')], kitchen);
    expect(turn).toEqual({
      text: "I can't cancel orders here: this app does not offer the cancel_order tool.",
      calls: [],
      invalid: [],
    });
  });

  it('answers greetings with what it is and what to try', async () => {
    const turn = await demoTurn([user('hello')], kitchen);
    expect(turn.calls).toEqual([]);
    expect(turn.text).toBe(
      "I am countersign's offline demo model, not a real language model: I only understand a few fixed kinds of request. Try one of these:\n" +
        "- What's on my shopping list?\n" +
        "- We're out of eggs, put a dozen on the list.\n" +
        '- Actually, make that six.',
    );
  });

  it('is deterministic and reports itself', async () => {
    const model = createDemoModel();
    expect([model.specificationVersion, model.provider, model.modelId]).toEqual([
      'v4',
      'countersign',
      'demo',
    ]);
    const prompt = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'cancel order 7' }] }];
    const tools = [
      { type: 'function' as const, name: 'cancel_order', inputSchema: { type: 'object' as const } },
    ];
    const a = await model.doGenerate({ prompt, tools });
    const b = await model.doGenerate({ prompt, tools });
    expect(a).toEqual(b);
    expect(a.finishReason).toEqual({ unified: 'tool-calls', raw: 'tool_calls' });
    expect(a.content).toEqual([
      { type: 'tool-call', toolCallId: 'call_1', toolName: 'cancel_order', input: '{"orderId":7}' },
    ]);
  });

  it('streams the same content', async () => {
    const model = createDemoModel();
    const prompt = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi' }] }];
    const { stream } = await model.doStream({ prompt });
    const parts = [];
    for await (const part of stream) parts.push(part);
    const text = parts.flatMap((part) => (part.type === 'text-delta' ? [part.delta] : [])).join('');
    expect(text).toBe(
      (await model.doGenerate({ prompt })).content
        .map((part) => (part.type === 'text' ? part.text : ''))
        .join(''),
    );
    expect(parts.at(-1)?.type).toBe('finish');
  });
});

describe('demo model: any offered tool, named in the message', () => {
  const note: typeof bookstore = [
    {
      name: 'add_note',
      description: 'Add a note.',
      inputSchema: {
        type: 'object',
        properties: { text: { type: 'string' }, pinned: { type: 'boolean' }, priority: { type: 'integer' } },
        required: ['text'],
      },
    },
    ...bookstore,
  ];

  it('reads "use TOOL with NAME VALUE …" by the schema property names, typed by the schema', async () => {
    expect(await calls([user('use add_note with text hello world and priority 2')], note)).toEqual([
      { tool: 'add_note', args: { text: 'hello world', priority: 2 } },
    ]);
  });

  it('reads "call TOOL key=value" and a JSON object', async () => {
    expect(await calls([user('call add_note text="buy milk" pinned=true')], note)).toEqual([
      { tool: 'add_note', args: { text: 'buy milk', pinned: true } },
    ]);
    expect(await calls([user('run add_note {"text": "hi", "priority": 1}')], note)).toEqual([
      { tool: 'add_note', args: { text: 'hi', priority: 1 } },
    ]);
  });

  it('takes the whole rest as the value of a one-property tool', async () => {
    const one: typeof bookstore = [
      {
        name: 'shout',
        description: 'Shout.',
        inputSchema: { type: 'object', properties: { words: { type: 'string' } } },
      },
    ];
    expect(await calls([user('use shout good morning')], one)).toEqual([
      { tool: 'shout', args: { words: 'good morning' } },
    ]);
  });

  it('leaves names that are not offered tools, and the built-in phrases, as they were', async () => {
    expect(await calls([user('Please call the shop and cancel my order 1044.')], note)).toEqual([
      { tool: 'cancel_order', args: { orderId: 1044 } },
    ]);
    expect(await calls([user('use add_note with text hi')], bookstore)).toEqual([]);
  });

  it('names the way to call a tool of its own in the help text', async () => {
    const turn = await demoTurn([user('hello')], note);
    expect(turn.text).toContain('- Use add_note with text hello.');
  });
});
