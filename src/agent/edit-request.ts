import type { ApprovalRequest, ApprovalRequirement, RequestEdit } from '../core/approval.ts';
import { bindArgs, canonicalJson } from '../core/canonical-json.ts';
import { effectHashOf } from '../core/check-binding.ts';
import { applyEdit, diffArgs } from '../core/edit-call.ts';
import { ForbiddenError } from '../core/errors/forbidden-error.ts';
import { InvalidInputError } from '../core/errors/invalid-input-error.ts';
import { NotEditableError } from '../core/errors/not-editable-error.ts';
import type { JsonValue } from '../core/json.ts';
import type { Tool, ToolContext } from '../tools/define-tool.ts';
import { validateArgs } from '../tools/validate-args.ts';

/** An edited call, ready to be approved or re-routed: bound, authorized, and routed again. */
export interface EditedCall {
  /** Null when the edit brings the call back to exactly what the model proposed. */
  edit: RequestEdit | null;
  /** Who must approve the edited call (the policy asked again). */
  requirement: ApprovalRequirement;
}

/**
 * Applies a person's edit to a waiting call and runs the tool's own checks on the result,
 * as a new call gets them: the editable fields (and the `editable` schema), the input
 * schema, canonical JSON and its hash, `authorize`, the approval policy, and a new effect
 * preview. Returns null when the edit changes nothing (a plain approval). Throws, having
 * written nothing: NOT_EDITABLE, INVALID_INPUT (the schema refuses the values), FORBIDDEN
 * (authorize refuses the edited call).
 */
export async function editCall(
  tool: Tool,
  request: ApprovalRequest,
  patch: Record<string, JsonValue>,
  context: ToolContext,
  editor: { by: string; at: string },
): Promise<EditedCall | null> {
  const current = request.edit?.args ?? request.args;
  // What may be edited is the tool's declaration (code), never the row's copy of it.
  const merged = applyEdit({ ...request, args: current, editable: tool.editable }, patch);
  const schemaProblem = tool.checkEdit(patch);
  if (schemaProblem !== null) {
    throw new NotEditableError(
      `Request ${request.id}: the edit does not fit ${tool.name}'s editable fields: ${schemaProblem}.`,
      {
        hint: 'Change the values and approve again; nothing was decided.',
      },
    );
  }
  const checked = await validateArgs(tool, merged);
  if (!checked.ok) {
    throw new InvalidInputError(
      `Request ${request.id}: the edited call does not fit ${tool.name}'s input. ${checked.error}`,
      {
        hint: 'Change the values and approve again; nothing was decided.',
      },
    );
  }
  const args = JSON.parse(canonicalJson(checked.args)) as JsonValue;
  if (canonicalJson(args) === canonicalJson(current)) return null;
  const allowed = await tool.authorize(checked.args, context);
  if (allowed !== true) {
    throw new ForbiddenError(`Request ${request.id}: the edited call is not allowed: ${allowed}`, {
      hint: 'Nothing was decided; approve it as proposed, change it otherwise, or reject it.',
    });
  }
  // An edited call that needs no approval by its policy still had a person look at it: one.
  const requirement = (await tool.requirement(checked.args, context)) ?? {
    role: request.requiredRole,
    approvals: 1,
  };
  const diff = diffArgs(request.args, args);
  if (diff.length === 0) return { edit: null, requirement };
  const effect = await tool.effect(checked.args, context);
  return {
    edit: {
      args,
      ...bindArgs(args),
      effect,
      effectHash: effectHashOf(effect),
      diff,
      by: editor.by,
      at: editor.at,
    },
    requirement,
  };
}
