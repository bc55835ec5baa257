import { codePointName, revealInvisible } from '../../core/visible-text.ts';
import { escapeHtml, SafeHtml } from './html.ts';

/**
 * Free text (a tool's effect, a message, a reason) as markup, every invisible character shown
 * as a marked [U+202E]: a bidi override cannot reorder what a person reads and a zero-width
 * space cannot hide in it. Line breaks stay when `multiline` (messages are pre-wrapped).
 */
export function visibleHtml(text: string, options: { multiline?: boolean } = {}): SafeHtml {
  return new SafeHtml(
    revealInvisible(
      escapeHtml(text),
      (char) => {
        const name = codePointName(char);
        return `<span class="invisible-char" title="An invisible character, ${name}">[${name}]</span>`;
      },
      options,
    ),
  );
}
