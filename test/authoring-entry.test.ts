import { describe, expect, it } from 'vitest';
import * as authoring from '../src/authoring.ts';
import * as everything from '../src/index.ts';

describe('countersign/authoring', () => {
  it('exports the same bindings as countersign, a subset of them', () => {
    const names = Object.keys(authoring);
    expect(names).toContain('createAgent');
    expect(names).toContain('defineTool');
    expect(names).toContain('defineWorkflow');
    for (const name of names)
      expect((everything as Record<string, unknown>)[name], name).toBe(
        (authoring as Record<string, unknown>)[name],
      );
  });
});
