/**
 * "Always approve" for one session, bound to the tool's identity (name + hash of its schema
 * and description), so a different tool later registered under the same name never matches.
 */
export interface StandingRule {
  id: string;
  session: string;
  tool: string;
  toolIdentity: string;
  /** Set for "this tool with exactly these arguments"; null for "this tool". */
  argsHash: string | null;
  /** The request whose approval created the rule. */
  sourceRequest: string;
  createdAt: string;
  createdBy: string;
  revokedAt: string | null;
  revokedBy: string | null;
}
