import type { Agent } from '../agent/create-agent.ts';
import { NotFoundError } from '../core/errors/not-found-error.ts';
import type { Tool } from '../tools/define-tool.ts';

/** The app's agents by name, bound to the server's store, model and event bus. */
export interface AgentRegistry {
  readonly all: readonly Agent[];
  readonly default: Agent;
  get(name: string): Agent;
  /** The tool a request names, if its agent still has it. */
  tool(agentName: string, toolName: string): Tool | undefined;
}

export function createAgentRegistry(agents: readonly Agent[]): AgentRegistry {
  const first = agents[0];
  if (!first) throw new NotFoundError('The app has no agents.');
  const byName = new Map(agents.map((agent) => [agent.name, agent]));
  return {
    all: agents,
    default: first,
    get(name) {
      const agent = byName.get(name);
      if (!agent)
        throw new NotFoundError(`This server runs no agent named ${name}.`, {
          hint: `Its agents: ${[...byName.keys()].join(', ')}.`,
        });
      return agent;
    },
    tool(agentName, toolName) {
      return byName.get(agentName)?.tools.find((tool) => tool.name === toolName);
    },
  };
}
