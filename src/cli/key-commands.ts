import { ConfigError } from '../core/errors/config-error.ts';
import { keyringOf } from '../crypto/encrypted-store.ts';
import { ENCRYPTION_KEYS_VAR } from '../crypto/env-key-provider.ts';
import { rotateDataKeys } from '../crypto/rotate-keys.ts';
import type { Command } from './command-input.ts';
import { decider } from './decider.ts';

/** `keys rotate`: every data key wrapped under the newest key, audited; no payload is rewritten. */
export const rotateKeys: Command = async ({ values, context, out }) => {
  // A file: store of workflow runs keeps its data keys in its own directory (DIR/keys/), and no audit trail.
  const checkpoints = await context.checkpoints();
  const store = checkpoints.kind === 'file' ? null : await context.store();
  const keyring = keyringOf(store ?? checkpoints);
  if (keyring === null) {
    throw new ConfigError(
      `keys rotate needs ${ENCRYPTION_KEYS_VAR}: this store is opened without encryption keys.`,
      {
        hint: `Set ${ENCRYPTION_KEYS_VAR} to the new key first, then the old ones ("new:…,old:…"), and run it again.`,
      },
    );
  }
  const result = await rotateDataKeys(keyring, store, { by: decider(values) });
  if (out.json) out.data(result);
  else
    out.print(
      `Re-wrapped ${result.rewrapped} of ${result.total} data keys under key "${result.kekId}"; no payload was rewritten.${
        result.rewrapped > 0 || result.total === 0 ? '' : ' Every data key was already wrapped under it.'
      }\n${
        result.audited
          ? `Audited as keys.rotated by ${result.by}.`
          : 'A file: store keeps no audit trail: this rotation is recorded nowhere else.'
      }\nOnce every process runs with the new key first, older keys can be removed from ${ENCRYPTION_KEYS_VAR}.`,
    );
  return 0;
};
