import type { Workflow } from './define-workflow.ts';

/**
 * The role answering a port needs: the port's own `role`, else one the deployment assigns by
 * port id (`portRoles`), else none. Read by the runner (which enforces it) and the inbox (which
 * shows it).
 */
export function portRole(workflow: Workflow, port: string, portRoles: Record<string, string>): string | null {
  const node = workflow.nodes.get(port);
  if (node?.kind === 'port' && node.role !== undefined) return node.role;
  return portRoles[port] ?? null;
}
