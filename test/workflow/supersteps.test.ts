import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/workflow/define-workflow.ts';
import { executor } from '../../src/workflow/executor.ts';
import { requestPort } from '../../src/workflow/request-port.ts';
import { createWorkflowRunner } from '../../src/workflow/runner.ts';
import { expectLinearChain, harness, reviewWorkflow, stateOf } from './helpers.ts';

/** a → (b, c) → d: b and c run in the same superstep; what they send arrives one later. */
function diamond(log: Array<[string, number]>) {
  const step = (id: string) =>
    executor({
      id,
      input: z.number(),
      output: z.number(),
      handle: (n, ctx) => {
        log.push([id, ctx.superstep]);
        return n + 1;
      },
    });
  const a = step('a');
  const b = step('b');
  const c = step('c');
  const d = executor({
    id: 'd',
    input: z.array(z.number()),
    output: z.number(),
    handle: (values, ctx) => {
      log.push(['d', ctx.superstep]);
      return values.reduce((sum, v) => sum + v, 0);
    },
  });
  return defineWorkflow({ name: 'diamond', version: 1 })
    .start(a)
    .fanOut(a, [b, c])
    .fanIn([b, c], d)
    .output(d)
    .build();
}

describe('supersteps', () => {
  it('delivers what a superstep sends in the next one and commits a checkpoint at every boundary', async () => {
    const log: Array<[string, number]> = [];
    const { runner, checkpoints } = harness([diamond(log)]);
    const view = await runner.start('diamond', 'd-1', 1);
    expect(view).toMatchObject({ status: 'completed', outputs: [6], requests: [] });
    expect(log).toEqual([
      ['a', 1],
      ['b', 2],
      ['c', 2],
      ['d', 3],
    ]);
    const history = await runner.history('d-1');
    expect(history.map((entry) => entry.superstep)).toEqual([0, 1, 2, 3]);
    expectLinearChain(history);
    expect((await checkpoints.latestCheckpoint('d-1'))?.status).toBe('completed');
  });

  it('follows conditional edges and keeps executor state in the checkpoint', async () => {
    const counter = executor({
      id: 'count',
      input: z.number(),
      output: z.number(),
      state: z.object({ seen: z.number() }),
      handle: (n, ctx) => {
        ctx.setState({ seen: (ctx.getState()?.seen ?? 0) + 1 });
        return n + 1;
      },
    });
    const done = executor({
      id: 'done',
      input: z.number(),
      handle: (n, ctx) => {
        ctx.output(`reached ${n}`);
      },
    });
    const loop = defineWorkflow({ name: 'loop', version: 1 })
      .start(counter)
      .edge(counter, counter, { when: (n) => n < 5 })
      .edge(counter, done, { when: (n) => n >= 5 })
      .build();
    const { runner, checkpoints } = harness([loop]);
    expect(await runner.start('loop', 'l', 0)).toMatchObject({ status: 'completed', outputs: ['reached 5'] });
    expect((await stateOf(checkpoints, 'l')).executors).toEqual({ count: { seen: 5 } });
    expect(await runner.history('l')).toHaveLength(7);
  });

  it('fan-out with select sends only to the chosen targets', async () => {
    const seen: string[] = [];
    const source = executor({ id: 'source', input: z.string(), output: z.string(), handle: (s) => s });
    const sink = (id: string) =>
      executor({
        id,
        input: z.string(),
        handle: (s) => {
          seen.push(`${id}:${s}`);
        },
      });
    const workflow = defineWorkflow({ name: 'route', version: 1 })
      .start(source)
      .fanOut(source, [sink('x'), sink('y'), sink('z')], {
        select: (s) => (s === 'both' ? ['x', 'z'] : ['y']),
      })
      .build();
    const { runner } = harness([workflow]);
    await runner.start('route', 'r1', 'both');
    await runner.start('route', 'r2', 'one');
    expect(seen.sort()).toEqual(['x:both', 'y:one', 'z:both']);
  });

  it('fan-in state survives a checkpoint: one branch waits in the store while the other is answered later', async () => {
    const log: string[] = [];
    const first = harness([reviewWorkflow(log)]);
    const started = await first.runner.start('review', 'rv', 'contract.pdf');
    expect(started.status).toBe('awaiting_input');
    expect(started.requests.map((request) => request.port).sort()).toEqual([
      'finance-review',
      'legal-review',
    ]);
    const legal = started.requests.find((request) => request.port === 'legal-review')!;
    const finance = started.requests.find((request) => request.port === 'finance-review')!;

    const afterLegal = await first.runner.respond('rv', legal.id, { ok: true }, { by: 'lee' });
    expect(afterLegal.status).toBe('awaiting_input');
    expect(afterLegal.requests.map((request) => request.id)).toEqual([finance.id]);
    expect((await stateOf(first.checkpoints, 'rv')).fanIn).toEqual({
      '[legal,finance]->join': { legal: [{ reviewer: 'legal', ok: true }] },
    });

    // A fresh runner (as another process would be) on the same store finishes the join.
    const second = createWorkflowRunner({ workflows: [reviewWorkflow(log)], checkpoints: first.checkpoints });
    const done = await second.respond('rv', finance.id, { ok: true }, { by: 'fin' });
    expect(done).toMatchObject({ status: 'completed', outputs: ['approved by legal and finance'] });
    expect(log.filter((entry) => entry === 'join')).toHaveLength(1);
    expect(log).toContain('finance:contract.pdf');
    expect((await stateOf(first.checkpoints, 'rv')).fanIn).toEqual({});
    expectLinearChain(await second.history('rv'));
  });

  it('a throwing executor fails the run at the superstep it started from; resume runs it again', async () => {
    let failures = 1;
    const flaky = executor({
      id: 'flaky',
      input: z.number(),
      output: z.number(),
      handle: (n) => {
        if (failures-- > 0) throw new Error('the payment service is down');
        return n * 2;
      },
    });
    const workflow = defineWorkflow({ name: 'flaky', version: 1 }).start(flaky).output(flaky).build();
    const { runner, checkpoints } = harness([workflow]);
    const failed = await runner.start('flaky', 'f', 21);
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: 'EXECUTOR_ERROR', executor: 'flaky', message: 'the payment service is down' },
    });
    const failedState = await stateOf(checkpoints, 'f');
    expect(failedState.messages).toEqual([{ from: null, to: 'flaky', payload: 21 }]);
    expect((await runner.history('f')).map((entry) => entry.superstep)).toEqual([0, 0]);
    expect(await runner.resume('f')).toMatchObject({ status: 'completed', outputs: [42] });
    expect((await runner.runs()).map((run) => run.status)).toEqual(['completed']);
  });

  it('stores no history: a checkpoint late in a long run is as big as an early one when the state is', async () => {
    const tick = executor({
      id: 'tick',
      input: z.object({ left: z.number() }),
      output: z.object({ left: z.number() }),
      handle: ({ left }) => (left > 100 ? { left: left - 1 } : undefined),
    });
    const workflow = defineWorkflow({ name: 'tick', version: 1 }).start(tick).edge(tick, tick).build();
    const { runner, checkpoints } = harness([workflow]);
    await runner.start('tick', 't', { left: 400 });
    const history = await runner.history('t');
    expect(history).toHaveLength(302);
    const size = async (i: number) =>
      JSON.stringify((await checkpoints.getCheckpoint('t', history[i]!.checkpointId))?.body).length;
    expect(await size(299)).toBe(await size(1));
  });

  it('stops a run that never waits or ends with STEP_LIMIT', async () => {
    const spin = executor({ id: 'spin', input: z.number(), output: z.number(), handle: (n) => n + 1 });
    const workflow = defineWorkflow({ name: 'spin', version: 1 }).start(spin).edge(spin, spin).build();
    const { runner } = harness([workflow], { maxSupersteps: 20 });
    expect(await runner.start('spin', 's', 0)).toMatchObject({
      status: 'failed',
      error: { code: 'STEP_LIMIT' },
    });
    // The first checkpoint, one per superstep, and the failure recorded against the last.
    expect(await runner.history('s')).toHaveLength(22);
  });

  it('refuses a bad input, a taken run id and an unsafe one before running anything', async () => {
    const log: Array<[string, number]> = [];
    const { runner } = harness([diamond(log)]);
    await expect(runner.start('diamond', 'x', 'one')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(runner.start('nope', 'x', 1)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await runner.start('diamond', 'x', 1);
    await expect(runner.start('diamond', 'x', 1)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(runner.start('diamond', '../x', 1)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(log.filter(([id]) => id === 'a')).toHaveLength(1);
  });

  it('checks messages against the schemas on both ends and blames the sender', async () => {
    const liar = executor({
      id: 'liar',
      input: z.number(),
      output: z.number(),
      handle: () => 'not a number' as never,
    });
    const port = requestPort('ask', { request: z.object({ n: z.number() }), response: z.boolean() });
    // Declares it sends { n } to the port, then sends something else.
    const sender = executor<number, { n: number }>({
      id: 'sender',
      input: z.number(),
      handle: (_n, ctx) => {
        ctx.send({ wrong: true });
        return undefined;
      },
    });
    const sink = executor({ id: 'sink', input: z.boolean(), handle: () => undefined });
    const a = defineWorkflow({ name: 'a', version: 1 }).start(liar).build();
    const b = defineWorkflow({ name: 'b', version: 1 })
      .start(sender)
      .edge(sender, port)
      .edge(port, sink)
      .build();
    const { runner } = harness([a, b]);
    expect(await runner.start('a', 'a1', 1)).toMatchObject({
      status: 'failed',
      error: { code: 'INVALID_INPUT', executor: 'liar' },
    });
    expect(await runner.start('b', 'b1', 1)).toMatchObject({
      status: 'failed',
      error: { code: 'INVALID_INPUT', executor: 'sender' },
    });
  });
});

describe('defineWorkflow', () => {
  const node = (id: string) => executor({ id, input: z.number(), output: z.number(), handle: (n) => n });
  const port = requestPort('p', { request: z.number(), response: z.number() });

  it.each([
    ['no start', () => defineWorkflow({ name: 'w', version: 1 }).build(), /no start/],
    [
      'a port with nowhere to send answers',
      () => {
        const a = node('a');
        return defineWorkflow({ name: 'w', version: 1 }).start(a).edge(a, port).build();
      },
      /no edge for its answers/,
    ],
    [
      'two nodes with one id',
      () => defineWorkflow({ name: 'w', version: 1 }).start(node('a')).edge(node('a'), node('b')).build(),
      /two different nodes/i,
    ],
    [
      'a one-source fan-in',
      () => {
        const a = node('a');
        const b = executor({ id: 'b', input: z.array(z.number()), handle: () => undefined });
        return defineWorkflow({ name: 'w', version: 1 }).start(a).fanIn([a], b).build();
      },
      /two or more/,
    ],
    ['a bad version', () => defineWorkflow({ name: 'w', version: 0 }), /positive integer/],
    ['a bad executor id', () => node('../x'), /must start with a letter/],
    [
      'a migration going down',
      () => defineWorkflow({ name: 'w', version: 2 }).migration({ from: 2, to: 1, upgrade: (s) => s }),
      /must go up/,
    ],
  ])('refuses %s with CONFIG_ERROR', (_name, build, message) => {
    expect(build).toThrow(message);
    try {
      build();
    } catch (error) {
      expect(error).toMatchObject({ code: 'CONFIG_ERROR' });
    }
  });

  it('records each node and a hash of each payload schema in the contract', () => {
    const a = node('a');
    const workflow = defineWorkflow({ name: 'w', version: 3 })
      .start(a)
      .edge(a, port)
      .edge(port, node('b'))
      .build();
    expect(Object.keys(workflow.contract.nodes)).toEqual(['a', 'b', 'p']);
    expect(workflow.contract.nodes.p).toEqual({
      kind: 'port',
      schemas: {
        request: expect.stringMatching(/^[0-9a-f]{16}$/),
        response: expect.stringMatching(/^[0-9a-f]{16}$/),
      },
    });
    expect(workflow.contract.nodes.a?.schemas.input).toBe(workflow.contract.nodes.p?.schemas.request);
  });
});
